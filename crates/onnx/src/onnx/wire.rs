//! The protobuf wire format, as far as the ONNX reader and rewriters need it: one message's
//! (field number, value) pairs and packed varints. It sits below `proto` (graphs, nodes) and
//! `attr` (attributes), which both read messages with it.

use anyhow::{Context, Result, bail};

pub(super) enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
    Fixed,
}

/// Iterates the (field number, value) pairs of one protobuf message.
pub(super) struct Fields<'a> {
    buf: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Fields<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Fields { buf, pos: 0 }
    }

    pub(super) fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.buf.get(self.pos).context("truncated varint")?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        bail!("varint too long")
    }

    pub(super) fn next_field(&mut self) -> Result<(u32, Wire<'a>)> {
        let key = self.varint()?;
        let num = (key >> 3) as u32;
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => self.skip(8)?,
            2 => {
                let len = self.varint()? as usize;
                let end = self.pos.checked_add(len).filter(|e| *e <= self.buf.len());
                let end = end.context("length-delimited field runs past the end")?;
                let bytes = &self.buf[self.pos..end];
                self.pos = end;
                Wire::Bytes(bytes)
            }
            5 => {
                let b = self
                    .buf
                    .get(self.pos..self.pos + 4)
                    .context("truncated fixed32 field")?;
                let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                self.pos += 4;
                Wire::Fixed32(v)
            }
            other => bail!("unsupported protobuf wire type {other}"),
        };
        Ok((num, wire))
    }

    fn skip(&mut self, n: usize) -> Result<Wire<'a>> {
        if self.pos + n > self.buf.len() {
            bail!("truncated fixed-width field");
        }
        self.pos += n;
        Ok(Wire::Fixed)
    }
}

/// The values of a packed repeated integer field (its `Wire::Bytes`), as written: varints.
pub(super) fn packed_varints(packed: &[u8]) -> Result<Vec<i64>> {
    let mut f = Fields::new(packed);
    let mut values = Vec::new();
    while f.pos < packed.len() {
        values.push(f.varint()? as i64);
    }
    Ok(values)
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Wire<'a>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let item = self.next_field();
        if item.is_err() {
            self.pos = self.buf.len();
        }
        Some(item)
    }
}
