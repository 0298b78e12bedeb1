//! The converter's graph edits: external data inlined, float32 initializers rounded to fp16.

use super::*;

/// One protobuf field: (number, wire type, payload, whole span including the key).
pub(crate) type PbField<'a> = (u32, u8, &'a [u8], &'a [u8]);

/// A minimal protobuf field walker.
pub(crate) fn pb_fields(buf: &[u8]) -> Result<Vec<PbField<'_>>> {
    fn varint(buf: &[u8], pos: &mut usize) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *buf.get(*pos).context("truncated varint")?;
            *pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        bail!("varint too long")
    }
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let key = varint(buf, &mut pos)?;
        let wire = (key & 7) as u8;
        let body = pos;
        match wire {
            0 => {
                varint(buf, &mut pos)?;
            }
            1 => pos += 8,
            2 => {
                let len = varint(buf, &mut pos)? as usize;
                let b = pos;
                pos += len;
                if pos > buf.len() {
                    bail!("field runs past the end");
                }
                out.push(((key >> 3) as u32, 2, &buf[b..pos], &buf[start..pos]));
                continue;
            }
            5 => pos += 4,
            w => bail!("unsupported wire type {w}"),
        }
        if pos > buf.len() {
            bail!("field runs past the end");
        }
        out.push(((key >> 3) as u32, wire, &buf[body..pos], &buf[start..pos]));
    }
    Ok(out)
}

pub(crate) fn pb_varint(payload: &[u8]) -> u64 {
    payload
        .iter()
        .enumerate()
        .fold(0, |v, (i, b)| v | (u64::from(b & 0x7f) << (7 * i)))
}

/// The model with every initializer's data inline (external data read from `dir`) and, with
/// `fp16`, every float32 initializer rounded to fp16 and back.
pub(crate) fn converted_model(model: &[u8], dir: &Path, fp16: bool) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for (num, _, payload, span) in pb_fields(model)? {
        if num != 7 {
            out.extend_from_slice(span);
            continue;
        }
        let mut graph = Vec::new();
        for (num, wire, payload, span) in pb_fields(payload)? {
            if num == 5 && wire == 2 {
                put_bytes(&mut graph, 5, &converted_tensor(payload, dir, fp16)?);
            } else {
                graph.extend_from_slice(span);
            }
        }
        put_bytes(&mut out, 7, &graph);
    }
    Ok(out)
}

pub(crate) fn converted_tensor(t: &[u8], dir: &Path, fp16: bool) -> Result<Vec<u8>> {
    let fields = pb_fields(t)?;
    let mut data_type = 0;
    let mut raw: Option<Vec<u8>> = None;
    let mut floats = Vec::new();
    let mut external = BTreeMap::new();
    for (num, wire, payload, _) in &fields {
        match (num, wire) {
            (2, 0) => data_type = pb_varint(payload),
            (9, 2) => raw = Some(payload.to_vec()),
            (4, 2) | (4, 5) => floats.extend_from_slice(payload),
            (13, 2) => {
                let (mut k, mut v) = (String::new(), String::new());
                for (n, _, p, _) in pb_fields(payload)? {
                    match n {
                        1 => k = String::from_utf8_lossy(p).into(),
                        2 => v = String::from_utf8_lossy(p).into(),
                        _ => {}
                    }
                }
                external.insert(k, v);
            }
            _ => {}
        }
    }
    if let Some(loc) = external.get("location") {
        let bytes = std::fs::read(dir.join(loc))
            .with_context(|| format!("external data {loc} (beside the ONNX)"))?;
        let offset: usize = external.get("offset").map_or(Ok(0), |s| s.parse())?;
        let length: usize = external
            .get("length")
            .map_or(Ok(bytes.len() - offset), |s| s.parse())?;
        raw = Some(
            bytes
                .get(offset..offset + length)
                .context("external data shorter than declared")?
                .to_vec(),
        );
    } else if raw.is_none() && !floats.is_empty() {
        raw = Some(floats);
    }
    let Some(mut data) = raw else {
        return Ok(t.to_vec());
    };
    if data_type == 1 && fp16 {
        for c in data.chunks_exact_mut(4) {
            let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            c.copy_from_slice(&half::f16::from_f32(v).to_f32().to_le_bytes());
        }
    }
    let mut out = Vec::new();
    for (num, _, _, span) in &fields {
        if !matches!(num, 4 | 9 | 13 | 14) {
            out.extend_from_slice(span);
        }
    }
    put_bytes(&mut out, 9, &data);
    Ok(out)
}
