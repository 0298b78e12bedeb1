//! Writers of broken inputs, byte by byte: `.npy` members of any dtype, order and shape put
//! into an npz, and a protobuf field of an ONNX graph rewritten in place.

use std::io::Write as _;
use std::path::Path;

use super::GOLDEN;
use crate::common::Scratch;

/// One `.npy` file: magic, version 1.0, the header dict padded to 64 bytes, then the data.
pub(super) fn npy(descr: &str, fortran: bool, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// Replaces (or adds) one member of an npz, copying the others byte for byte.
pub(super) fn replace_npz_member(path: &Path, key: &str, bytes: &[u8]) {
    let original = std::fs::read(path).unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(original)).unwrap();
    let mut writer = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..archive.len() {
        let member = archive.by_index_raw(i).unwrap();
        if member.name().trim_end_matches(".npy") != key {
            writer.raw_copy_file(member).unwrap();
        }
    }
    writer
        .start_file(
            format!("{key}.npy"),
            zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored),
        )
        .unwrap();
    writer.write_all(bytes).unwrap();
    writer.finish().unwrap();
}

/// `n` float32 values (0.0, 0.1, … 0.6, repeating), little- or big-endian.
pub(super) fn f32_bytes(n: usize, big_endian: bool) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            let v = (i % 7) as f32 * 0.1;
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        })
        .collect()
}

/// The shape of the golden `keys` array.
pub(super) const KEYS_SHAPE: [u64; 4] = [8, 1, 130, 32];
/// The number of values of the golden `keys` array.
pub(super) const KEYS_N: usize = 8 * 130 * 32;

/// The golden `keys` array as the generator wrote it.
pub(super) fn golden_keys(p: &Scratch) -> ndarray::ArrayD<f32> {
    let mut r = ndarray_npy::NpzReader::new(std::fs::File::open(p.path(GOLDEN)).unwrap()).unwrap();
    r.by_name("keys.npy").unwrap()
}

/// Protobuf helpers for the one graph edit no byte swap can do: a symbolic dim.
fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn read_varint(b: &[u8], pos: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[*pos];
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// Rewrites the first length-delimited field numbered `path[0]` of `msg` (recursively down
/// `path`); at the end of the path the payload is replaced by `leaf`. Lengths are re-encoded.
pub(crate) fn edit_path(msg: &[u8], path: &[u32], leaf: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut done = false;
    while pos < msg.len() {
        let start = pos;
        let tag = read_varint(msg, &mut pos);
        let (num, wire) = ((tag >> 3) as u32, tag & 7);
        match wire {
            0 => {
                read_varint(msg, &mut pos);
                out.extend_from_slice(&msg[start..pos]);
            }
            1 => {
                pos += 8;
                out.extend_from_slice(&msg[start..pos]);
            }
            5 => {
                pos += 4;
                out.extend_from_slice(&msg[start..pos]);
            }
            2 => {
                let len = read_varint(msg, &mut pos) as usize;
                let payload = &msg[pos..pos + len];
                pos += len;
                if !done && num == path[0] {
                    done = true;
                    let inner = if path.len() == 1 {
                        leaf.to_vec()
                    } else {
                        edit_path(payload, &path[1..], leaf)
                    };
                    varint(tag, &mut out);
                    varint(inner.len() as u64, &mut out);
                    out.extend_from_slice(&inner);
                } else {
                    out.extend_from_slice(&msg[start..pos]);
                }
            }
            other => panic!("wire type {other}"),
        }
    }
    out
}
