//! `.raw` files as `qnn-net-run` reads and writes them: one tensor's bytes, native
//! little-endian or float32 (see `--use_native_input_files` / `--use_native_output_files`),
//! outputs under `Result_<i>/<raw tensor name>.raw` (a `/` in a name makes subfolders).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::tensor::{DType, Tensor};

/// A tensor as a `.raw` file: its native little-endian bytes, or float32.
pub fn raw_bytes(t: &Tensor, native: bool) -> Vec<u8> {
    if native {
        return t.to_le_bytes();
    }
    t.to_f64_vec()
        .iter()
        .flat_map(|v| (*v as f32).to_le_bytes())
        .collect()
}

/// A `.raw` file back into a tensor of `dtype` (native bytes) or float32.
pub fn from_raw(bytes: &[u8], dtype: DType, shape: &[usize], native: bool) -> Result<Tensor> {
    let dtype = if native { dtype } else { DType::F32 };
    let n: usize = shape.iter().product();
    let size = match dtype {
        DType::F32 => 4,
        DType::F16 => 2,
        DType::I64 => 8,
        DType::Bool => 1,
    };
    if bytes.len() != n * size {
        bail!(
            "{} bytes, expected {n} {dtype} values ({size} bytes each) for {shape:?}",
            bytes.len()
        );
    }
    let shape = shape.to_vec();
    Ok(match dtype {
        DType::F32 => Tensor::F32(ndarray::ArrayD::from_shape_vec(
            shape,
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )?),
        DType::F16 => Tensor::F16(ndarray::ArrayD::from_shape_vec(
            shape,
            bytes
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]))
                .collect(),
        )?),
        DType::I64 => Tensor::I64(ndarray::ArrayD::from_shape_vec(
            shape,
            bytes
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect(),
        )?),
        DType::Bool => Tensor::Bool(ndarray::ArrayD::from_shape_vec(
            shape,
            bytes.iter().map(|b| *b != 0).collect(),
        )?),
    })
}

/// The file `qnn-net-run` wrote for output `name` in `result` (`Result_<i>`): the raw tensor
/// name plus `.raw` (a `/` makes subfolders; a leading `/` is not an absolute path). A name
/// starting with a digit may come back with a leading `_` after conversion, so that spelling
/// is accepted too. When neither exists, the error lists every file that was written.
pub fn output_file(result: &Path, name: &str) -> Result<PathBuf> {
    let rel = format!("{}.raw", name.trim_start_matches('/'));
    let mut candidates = vec![result.join(&rel)];
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        candidates.push(result.join(format!("_{rel}")));
    }
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let written: Vec<String> = walkdir::WalkDir::new(result)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            e.path()
                .strip_prefix(result)
                .ok()
                .map(|p| p.display().to_string())
        })
        .collect();
    bail!(
        "qnn-net-run wrote no output `{name}` ({}); it wrote {}",
        candidates[0].display(),
        if written.is_empty() {
            format!("nothing in {}", result.display())
        } else {
            written.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_found_by_raw_name_in_subfolders() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for rel in [
            "head/logits.0.raw",
            "ns:scaled.raw",
            "_0_first.raw",
            "x.raw",
        ] {
            let p = r.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, [0u8; 4]).unwrap();
        }
        assert_eq!(
            output_file(r, "head/logits.0").unwrap(),
            r.join("head/logits.0.raw")
        );
        assert_eq!(
            output_file(r, "/head/logits.0").unwrap(),
            r.join("head/logits.0.raw")
        );
        assert_eq!(
            output_file(r, "ns:scaled").unwrap(),
            r.join("ns:scaled.raw")
        );
        assert_eq!(output_file(r, "0_first").unwrap(), r.join("_0_first.raw"));
        let err = output_file(r, "head_logits_0").err().unwrap().to_string();
        for listed in [
            "head/logits.0.raw",
            "ns:scaled.raw",
            "_0_first.raw",
            "x.raw",
        ] {
            assert!(err.contains(listed), "{err}");
        }
    }

    #[test]
    fn native_and_float_raw_files_round_trip() {
        let i =
            Tensor::I64(ndarray::ArrayD::from_shape_vec(vec![3], vec![-1, 0, 1 << 40]).unwrap());
        let bytes = raw_bytes(&i, true);
        assert_eq!(bytes.len(), 24);
        assert_eq!(from_raw(&bytes, DType::I64, &[3], true).unwrap(), i);
        let as_f32 = raw_bytes(&i, false);
        assert_eq!(as_f32.len(), 12);
        assert!(
            from_raw(&as_f32, DType::I64, &[3], true).is_err(),
            "wrong byte count"
        );
        let h = Tensor::F16(
            ndarray::ArrayD::from_shape_vec(
                vec![2],
                vec![half::f16::from_f32(1.5), half::f16::from_f32(-2.0)],
            )
            .unwrap(),
        );
        assert_eq!(
            from_raw(&raw_bytes(&h, true), DType::F16, &[2], true).unwrap(),
            h
        );
        assert!(matches!(
            from_raw(&raw_bytes(&h, false), DType::F16, &[2], false).unwrap(),
            Tensor::F32(_)
        ));
    }
}
