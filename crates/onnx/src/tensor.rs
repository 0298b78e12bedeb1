//! Tensors as the tool sees them: golden npz files in, ORT values out. Element types are the
//! ones the I/O contracts use (f32, f16, i64, bool); comparisons always go through f64.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};
use ndarray::ArrayD;
use ndarray_npy::{NpzReader, ReadDataError, ReadNpyError, ReadableElement};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    F16,
    I64,
    Bool,
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::I64 => "i64",
            DType::Bool => "bool",
        };
        f.write_str(s)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Tensor {
    F32(ArrayD<f32>),
    F16(ArrayD<half::f16>),
    I64(ArrayD<i64>),
    Bool(ArrayD<bool>),
}

impl Tensor {
    /// The same values in row-major (C) order: an npy file in Fortran order reads back
    /// column-major, and sessions take standard-layout views only.
    pub fn into_standard_layout(self) -> Self {
        fn std<T: Clone>(a: ArrayD<T>) -> ArrayD<T> {
            if a.is_standard_layout() {
                a
            } else {
                a.as_standard_layout().into_owned()
            }
        }
        match self {
            Tensor::F32(a) => Tensor::F32(std(a)),
            Tensor::F16(a) => Tensor::F16(std(a)),
            Tensor::I64(a) => Tensor::I64(std(a)),
            Tensor::Bool(a) => Tensor::Bool(std(a)),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Tensor::F32(_) => DType::F32,
            Tensor::F16(_) => DType::F16,
            Tensor::I64(_) => DType::I64,
            Tensor::Bool(_) => DType::Bool,
        }
    }

    pub fn shape(&self) -> Vec<usize> {
        match self {
            Tensor::F32(a) => a.shape().to_vec(),
            Tensor::F16(a) => a.shape().to_vec(),
            Tensor::I64(a) => a.shape().to_vec(),
            Tensor::Bool(a) => a.shape().to_vec(),
        }
    }

    /// Values widened to f64, in logical (row-major) order, for metrics.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match self {
            Tensor::F32(a) => a.iter().map(|&v| f64::from(v)).collect(),
            Tensor::F16(a) => a.iter().map(|&v| f64::from(v)).collect(),
            Tensor::I64(a) => a.iter().map(|&v| v as f64).collect(),
            Tensor::Bool(a) => a.iter().map(|&v| f64::from(u8::from(v))).collect(),
        }
    }

    /// Raw little-endian bytes in logical order, for input hashes.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Tensor::F32(a) => a.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Tensor::F16(a) => a.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Tensor::I64(a) => a.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Tensor::Bool(a) => a.iter().map(|&v| u8::from(v)).collect(),
        }
    }
}

/// `half::f16` read from NumPy's `<f2` descriptor (ndarray-npy has no f16 of its own).
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
struct F16(half::f16);

impl ReadableElement for F16 {
    fn read_to_end_exact_vec<R: std::io::Read>(
        mut reader: R,
        type_desc: &py_literal::Value,
        len: usize,
    ) -> std::result::Result<Vec<Self>, ReadDataError> {
        if !matches!(type_desc, py_literal::Value::String(s) if s == "<f2") {
            return Err(ReadDataError::WrongDescriptor(type_desc.clone()));
        }
        let mut bytes = vec![0u8; len * 2];
        reader.read_exact(&mut bytes)?;
        let mut extra = [0u8; 1];
        if reader.read(&mut extra)? != 0 {
            return Err(ReadDataError::ExtraBytes(1));
        }
        Ok(bytes
            .chunks_exact(2)
            .map(|c| F16(half::f16::from_le_bytes([c[0], c[1]])))
            .collect())
    }
}

/// Written as NumPy's `<f2`, so an f16 tensor round-trips as f16 (never widened to f32).
impl ndarray_npy::WritableElement for F16 {
    fn type_descriptor() -> py_literal::Value {
        py_literal::Value::String("<f2".into())
    }

    fn write<W: std::io::Write>(
        &self,
        mut writer: W,
    ) -> std::result::Result<(), ndarray_npy::WriteDataError> {
        writer.write_all(&self.0.to_le_bytes())?;
        Ok(())
    }

    fn write_slice<W: std::io::Write>(
        slice: &[Self],
        mut writer: W,
    ) -> std::result::Result<(), ndarray_npy::WriteDataError> {
        let bytes: Vec<u8> = slice.iter().flat_map(|v| v.0.to_le_bytes()).collect();
        writer.write_all(&bytes)?;
        Ok(())
    }
}

/// Reads every array of an npz file. Each array is tried as f32, f16, i64, bool in turn;
/// anything else (or a corrupt archive) is an error naming the file and key.
pub fn read_npz(path: &Path) -> Result<BTreeMap<String, Tensor>> {
    check_npy_sizes(path)?;
    let file =
        fs::File::open(path).with_context(|| format!("missing golden file {}", path.display()))?;
    let mut npz = NpzReader::new(file)
        .with_context(|| format!("{} is not a readable npz (zip) archive", path.display()))?;
    let names = npz
        .names()
        .with_context(|| format!("{}: corrupt npz directory", path.display()))?;
    let mut out = BTreeMap::new();
    for name in names {
        let key = name.trim_end_matches(".npy").to_string();
        let tensor = read_npz_array(&mut npz, &name)
            .with_context(|| format!("{}: cannot read array `{key}`", path.display()))?
            .into_standard_layout();
        out.insert(key, tensor);
    }
    Ok(out)
}

/// Before any array is allocated: each member's header must declare no more data than the
/// member holds (a forged shape would otherwise make the reader allocate terabytes and abort).
fn check_npy_sizes(path: &Path) -> Result<()> {
    let Ok(file) = fs::File::open(path) else {
        return Ok(()); // the reader says what is missing
    };
    let Ok(mut zip) = zip::ZipArchive::new(file) else {
        return Ok(()); // the reader says it is not a zip
    };
    for i in 0..zip.len() {
        let mut member = zip.by_index(i)?;
        let name = member.name().to_string();
        let size = member.size();
        let mut head = vec![0u8; 10];
        if std::io::Read::read_exact(&mut member, &mut head).is_err() {
            continue;
        }
        if &head[..6] != b"\x93NUMPY" {
            bail!("{}: member `{name}` is not an .npy array", path.display());
        }
        let header_len = if head[6] == 1 {
            u64::from(u16::from_le_bytes([head[8], head[9]]))
        } else {
            let mut more = [0u8; 2];
            std::io::Read::read_exact(&mut member, &mut more)?;
            u64::from(u32::from_le_bytes([head[8], head[9], more[0], more[1]]))
        };
        if header_len > 1 << 20 {
            bail!(
                "{}: member `{name}` has a {header_len}-byte header",
                path.display()
            );
        }
        let mut header = vec![0u8; header_len as usize];
        std::io::Read::read_exact(&mut member, &mut header)
            .with_context(|| format!("{}: member `{name}` is truncated", path.display()))?;
        let header = String::from_utf8_lossy(&header);
        let item = header
            .split("'descr':")
            .nth(1)
            .and_then(|d| d.split('\'').nth(1))
            .and_then(|d| d.get(2..))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(1);
        let shape: Option<Vec<u64>> = header
            .split("'shape':")
            .nth(1)
            .and_then(|s| s.split('(').nth(1))
            .and_then(|s| s.split(')').next())
            .map(|dims| {
                dims.split(',')
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
                    .filter_map(|d| d.parse::<u64>().ok())
                    .collect()
            });
        let Some(shape) = shape else { continue };
        let declared = shape
            .iter()
            .try_fold(item, |acc, d| acc.checked_mul(*d))
            .unwrap_or(u64::MAX);
        let available = size.saturating_sub(10 + header_len);
        if declared > available {
            bail!(
                "{}: array `{}` declares shape {shape:?} ({declared} bytes) but holds {available} bytes",
                path.display(),
                name.trim_end_matches(".npy")
            );
        }
    }
    Ok(())
}

fn read_npz_array(npz: &mut NpzReader<fs::File>, name: &str) -> Result<Tensor> {
    fn is_wrong_type(e: &ndarray_npy::ReadNpzError) -> bool {
        matches!(
            e,
            ndarray_npy::ReadNpzError::Npy(ReadNpyError::WrongDescriptor(_))
        )
    }
    match npz.by_name::<ndarray::OwnedRepr<f32>, ndarray::IxDyn>(name) {
        Ok(a) => return Ok(Tensor::F32(a)),
        Err(e) if !is_wrong_type(&e) => return Err(e.into()),
        Err(_) => {}
    }
    match npz.by_name::<ndarray::OwnedRepr<F16>, ndarray::IxDyn>(name) {
        Ok(a) => return Ok(Tensor::F16(a.mapv(|v| v.0))),
        Err(e) if !is_wrong_type(&e) => return Err(e.into()),
        Err(_) => {}
    }
    match npz.by_name::<ndarray::OwnedRepr<i64>, ndarray::IxDyn>(name) {
        Ok(a) => return Ok(Tensor::I64(a)),
        Err(e) if !is_wrong_type(&e) => return Err(e.into()),
        Err(_) => {}
    }
    match npz.by_name::<ndarray::OwnedRepr<bool>, ndarray::IxDyn>(name) {
        Ok(a) => Ok(Tensor::Bool(a)),
        Err(e) if is_wrong_type(&e) => bail!("unsupported dtype (expected f32, f16, i64 or bool)"),
        Err(e) => Err(e.into()),
    }
}

/// Writes tensors as a compressed npz (benchmark fixtures, tests), each in its own dtype.
pub fn write_npz(path: &Path, tensors: &BTreeMap<String, Tensor>) -> Result<()> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut npz = ndarray_npy::NpzWriter::new_compressed(&mut buf);
        for (name, t) in tensors {
            match t {
                Tensor::F32(a) => npz.add_array(name.as_str(), a)?,
                Tensor::I64(a) => npz.add_array(name.as_str(), a)?,
                Tensor::Bool(a) => npz.add_array(name.as_str(), a)?,
                Tensor::F16(a) => npz.add_array(name.as_str(), &a.mapv(F16))?,
            }
        }
        npz.finish()?;
    }
    xtask_base::atomic::write_atomic(path, &buf.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npz_round_trip_keeps_dtypes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.npz");
        let mut m = BTreeMap::new();
        m.insert("a".into(), Tensor::F32(ArrayD::from_elem(vec![2, 3], 1.5)));
        m.insert("b".into(), Tensor::I64(ArrayD::from_elem(vec![4], 7)));
        m.insert("c".into(), Tensor::Bool(ArrayD::from_elem(vec![1], true)));
        m.insert(
            "d".into(),
            Tensor::F16(ArrayD::from_elem(vec![3], half::f16::from_f32(0.333))),
        );
        write_npz(&p, &m).unwrap();
        assert_eq!(read_npz(&p).unwrap(), m);
    }

    #[test]
    fn corrupt_npz_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.npz");
        fs::write(&p, b"not a zip at all").unwrap();
        let err = format!("{:#}", read_npz(&p).unwrap_err());
        assert!(err.contains("bad.npz"), "{err}");
    }
}
