//! Prepared weights: a model as the host runs it (embedding tables, packed linear layers,
//! layer norms), saved in the model directory after its first load from safetensors, so that
//! later processes read each array straight into its final buffer instead of decoding,
//! transposing, copying and packing the safetensors file again (most of a CLI search's
//! start-up with the model: about 150 ms of 240 for all-MiniLM-L6-v2 on two cores).
//!
//! The file is a cache: keyed by the model's fingerprint, written best-effort (by a temporary
//! file and a rename, so that a reader sees all of it or none), ignored when it is missing,
//! short or of another model or layout, and then written again.

use std::fs;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::gemm::NR;
use crate::loading::ModelFingerprint;

/// The file's layout version: bump it when the arrays or their packing change.
const FORMAT: u32 = 1;
const MAGIC: &[u8; 8] = b"QRYPREP\0";
/// The file name's prefix; a model directory keeps one such file, of its current model.
const PREFIX: &str = ".quarry-prepared-";

/// Where the prepared weights of the model with `fingerprint` live in the model directory.
pub(crate) fn path(dir: &Path, fingerprint: &ModelFingerprint) -> PathBuf {
    dir.join(format!("{PREFIX}{}.bin", &fingerprint.digest[..16]))
}

/// The header: what a reader checks before it trusts the arrays.
fn header(fingerprint: &ModelFingerprint, lengths: &[usize]) -> Vec<u8> {
    let mut header = MAGIC.to_vec();
    for value in [FORMAT, NR as u32, fingerprint.digest.len() as u32] {
        header.extend_from_slice(&value.to_le_bytes());
    }
    header.extend_from_slice(fingerprint.digest.as_bytes());
    header.extend_from_slice(&(lengths.len() as u64).to_le_bytes());
    for &length in lengths {
        header.extend_from_slice(&(length as u64).to_le_bytes());
    }
    header
}

/// Writes `arrays` for the model with `fingerprint` to `path`, then removes the prepared
/// files of other models beside it. Callers ignore a failure: a read-only model directory
/// only costs the next process the slow load.
pub(crate) fn save(
    path: &Path,
    fingerprint: &ModelFingerprint,
    arrays: &[&[f32]],
) -> io::Result<()> {
    let lengths: Vec<usize> = arrays.iter().map(|array| array.len()).collect();
    let staging = path.with_extension(format!("tmp{}", std::process::id()));
    let written = (|| {
        let mut file = io::BufWriter::new(fs::File::create(&staging)?);
        file.write_all(&header(fingerprint, &lengths))?;
        for array in arrays {
            file.write_all(bytemuck::cast_slice::<f32, u8>(array))?;
        }
        file.into_inner()
            .map_err(io::IntoInnerError::into_error)?
            .sync_all()
    })();
    if let Err(error) = written.and_then(|()| fs::rename(&staging, path)) {
        let _ = fs::remove_file(&staging);
        return Err(error);
    }
    if let Some(dir) = path.parent() {
        for entry in fs::read_dir(dir)?.flatten() {
            let name = entry.file_name();
            let stale = name.to_str().is_some_and(|n| n.starts_with(PREFIX));
            if stale && entry.path() != path {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
    Ok(())
}

/// An array left in the prepared weights' file, to be read from there as needed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Deferred {
    pub path: PathBuf,
    /// Where the array starts in the file, in bytes.
    pub offset: u64,
    /// Its length in values.
    pub length: usize,
}

/// The arrays saved at `path` for the model with `fingerprint`: the first left in the file
/// ([`Deferred`]), every other read into a buffer of exactly its length. `None` where the
/// file is missing, of another model, format or packing, or not `lengths` long.
pub(crate) fn load(
    path: &Path,
    fingerprint: &ModelFingerprint,
    lengths: &[usize],
) -> Option<(Deferred, Vec<Vec<f32>>)> {
    let mut file = fs::File::open(path).ok()?;
    let expected = header(fingerprint, lengths);
    let data_bytes: usize = lengths.iter().sum::<usize>() * size_of::<f32>();
    if file.metadata().ok()?.len() != (expected.len() + data_bytes) as u64 {
        return None;
    }
    let mut found = vec![0; expected.len()];
    file.read_exact(&mut found).ok()?;
    if found != expected {
        return None;
    }
    let (&first, rest) = lengths.split_first()?;
    let deferred = Deferred {
        path: path.to_path_buf(),
        offset: expected.len() as u64,
        length: first,
    };
    file.seek(io::SeekFrom::Current((first * size_of::<f32>()) as i64))
        .ok()?;
    // In order, each straight into its final buffer. (Reading them on rayon's threads was
    // slower: the fresh buffers' page faults contend for the process's memory map.)
    let rest = rest
        .iter()
        .map(|&length| {
            let mut array = vec![0.0f32; length];
            file.read_exact(bytemuck::cast_slice_mut(&mut array)).ok()?;
            Some(array)
        })
        .collect::<Option<_>>()?;
    Some((deferred, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint(digest: &str) -> ModelFingerprint {
        ModelFingerprint {
            name: "test".into(),
            revision: "local".into(),
            digest: digest.repeat(64 / digest.len()),
        }
    }

    #[test]
    fn arrays_come_back_for_their_model_only() {
        let dir = tempfile::tempdir().unwrap();
        let model = fingerprint("ab");
        let arrays = [vec![1.0, -2.5, f32::MIN_POSITIVE], vec![], vec![7.0; 1000]];
        let lengths: Vec<usize> = arrays.iter().map(Vec::len).collect();
        let path = path(dir.path(), &model);
        let slices: Vec<&[f32]> = arrays.iter().map(Vec::as_slice).collect();
        save(&path, &model, &slices).unwrap();
        let (first, rest) = load(&path, &model, &lengths).unwrap();
        assert_eq!(rest, arrays[1..]);
        let bytes = fs::read(&path).unwrap();
        let start = first.offset as usize;
        let left: &[f32] = bytemuck::cast_slice(&bytes[start..start + first.length * 4]);
        assert_eq!(left, arrays[0]);

        // Another model, other lengths, a short file: not these arrays.
        assert!(load(&path, &fingerprint("cd"), &lengths).is_none());
        assert!(load(&path, &model, &[3, 0, 999]).is_none());
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 4]).unwrap();
        assert!(load(&path, &model, &lengths).is_none());

        // Saving another model's arrays retires this one's file.
        let other = fingerprint("cd");
        let other_path = super::path(dir.path(), &other);
        save(&other_path, &other, &slices).unwrap();
        assert!(!path.exists());
        assert_eq!(load(&other_path, &other, &lengths).unwrap().1, arrays[1..]);
    }
}
