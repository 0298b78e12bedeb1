//! `.raw` files as `qnn-net-run` reads and writes them: one tensor's bytes, native
//! little-endian or float32 (see `--use_native_input_files` / `--use_native_output_files`),
//! outputs under `Result_<i>/<raw tensor name>.raw` (a `/` in a name makes subfolders).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use xtask_onnx::tensor::{DType, Tensor};

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

/// An input tensor as the `.raw` file `qnn-net-run` is given: [`raw_bytes`], except that a
/// native int64 input goes as int32 (it was declared int32 at conversion with
/// `--source_model_input_datatype NAME int32`); a value beyond int32 is refused, never wrapped.
pub fn input_bytes(name: &str, t: &Tensor, native: bool) -> Result<Vec<u8>> {
    let Tensor::I64(a) = t else {
        return Ok(raw_bytes(t, native));
    };
    if !native {
        return Ok(raw_bytes(t, false));
    }
    let mut out = Vec::with_capacity(a.len() * 4);
    for v in a.iter() {
        let Ok(v32) = i32::try_from(*v) else {
            bail!(
                "input `{name}` holds {v}, beyond int32: the SDK path declares int64 inputs int32 at \
                 conversion (--source_model_input_datatype {name} int32), as Qualcomm's conversion \
                 flows do; keep its values within int32 or cast the input to int32 in the ONNX"
            );
        };
        out.extend(v32.to_le_bytes());
    }
    Ok(out)
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
/// name plus `.raw` (a `/` makes subfolders; a leading `/` is not an absolute path), or, with
/// `--use_native_output_files` (`native`) for a tensor that is not float32, plus
/// `_native.raw` (Qualcomm's SampleApp `IOTensor.cpp` `writeOutputTensors`; the same strings
/// are in `qnn-net-run`). A name starting with a digit may come back with a leading `_` after
/// conversion, so that spelling is accepted too. When none exists, the error lists every file
/// that was written.
pub fn output_file(result: &Path, name: &str, dtype: DType, native: bool) -> Result<PathBuf> {
    let suffix = if native && dtype != DType::F32 {
        "_native.raw"
    } else {
        ".raw"
    };
    let stem = name.trim_start_matches('/');
    let rel = format!("{stem}{suffix}");
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
    let float_instead = suffix != ".raw" && written.iter().any(|w| *w == format!("{stem}.raw"));
    bail!(
        "qnn-net-run wrote no output `{name}` ({}{}); it wrote {}{}",
        candidates[0].display(),
        if candidates.len() > 1 {
            format!(" or {}", candidates[1].display())
        } else {
            String::new()
        },
        if written.is_empty() {
            format!("nothing in {}", result.display())
        } else {
            written.join(", ")
        },
        if float_instead {
            format!(
                " (`{stem}.raw` is the float32 file: the {dtype} output in its own type is \
                 `{stem}_native.raw`, written with --use_native_output_files)"
            )
        } else {
            String::new()
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
        let f32_file = |name: &str| output_file(r, name, DType::F32, true);
        assert_eq!(
            f32_file("head/logits.0").unwrap(),
            r.join("head/logits.0.raw")
        );
        assert_eq!(
            f32_file("/head/logits.0").unwrap(),
            r.join("head/logits.0.raw")
        );
        assert_eq!(f32_file("ns:scaled").unwrap(), r.join("ns:scaled.raw"));
        assert_eq!(f32_file("0_first").unwrap(), r.join("_0_first.raw"));
        let err = f32_file("head_logits_0").err().unwrap().to_string();
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
    fn native_outputs_that_are_not_float32_are_read_from_native_raw_files() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for rel in ["ids_native.raw", "mask.raw", "_7_native.raw", "x.raw"] {
            std::fs::write(r.join(rel), [0u8; 4]).unwrap();
        }
        assert_eq!(
            output_file(r, "ids", DType::I64, true).unwrap(),
            r.join("ids_native.raw")
        );
        assert_eq!(
            output_file(r, "7", DType::F16, true).unwrap(),
            r.join("_7_native.raw")
        );
        // float32 outputs keep `<name>.raw` even with native output files
        assert_eq!(
            output_file(r, "x", DType::F32, true).unwrap(),
            r.join("x.raw")
        );
        // without native output files every output is a float32 `<name>.raw`
        assert_eq!(
            output_file(r, "mask", DType::Bool, false).unwrap(),
            r.join("mask.raw")
        );
        let err = output_file(r, "mask", DType::Bool, true)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("mask_native.raw")
                && err.contains("ids_native.raw")
                && err.contains("float32 file"),
            "{err}"
        );
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
