//! Prepared weights: a model as the host runs it (embedding tables, packed linear layers,
//! layer norms), saved in the model directory after its first load from safetensors, so that
//! later processes read each array straight into its final buffer instead of decoding,
//! transposing, copying and packing the safetensors file again (most of a CLI search's
//! start-up with the model: about 150 ms of 240 for all-MiniLM-L6-v2 on two cores).
//!
//! The file is a cache: keyed by the model's fingerprint, written best-effort (by a temporary
//! file and a rename, so that a reader sees all of it or none), ignored when it is missing,
//! short or of another model or layout, and then written again. Arrays a process may never
//! need (the word-piece table, and the `f32` panels where queries read the `f16` ones) stay
//! in the file, open from the load on, and are read when first needed.

use std::fs;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::loading::ModelFingerprint;
use quarry_kernels::NR;

/// The file's layout version: bump it when the arrays or their packing change.
const FORMAT: u32 = 4;
const MAGIC: &[u8; 8] = b"QRYPREP\0";
/// The file name's prefix; a model directory keeps one such file, of its current model.
const PREFIX: &str = ".quarry-prepared-";

/// Where the prepared weights of the model with `fingerprint` live in the model directory.
pub(crate) fn path(dir: &Path, fingerprint: &ModelFingerprint) -> PathBuf {
    dir.join(format!("{PREFIX}{}.bin", &fingerprint.digest[..16]))
}

/// An array as [`save`] writes it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Values<'a> {
    /// `f32` values.
    F32(&'a [f32]),
    /// The bits of `f16` values.
    F16(&'a [u16]),
    /// 32-bit lanes of packed values (bfloat16 pairs, int8 quads).
    U32(&'a [u32]),
    /// `i32` values.
    I32(&'a [i32]),
}

impl Values<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Values::F32(values) => bytemuck::cast_slice(values),
            Values::F16(values) => bytemuck::cast_slice(values),
            Values::U32(values) => bytemuck::cast_slice(values),
            Values::I32(values) => bytemuck::cast_slice(values),
        }
    }

    /// Bytes a value, and how many values.
    fn shape(&self) -> (usize, usize) {
        match self {
            Values::F32(values) => (size_of::<f32>(), values.len()),
            Values::F16(values) => (size_of::<u16>(), values.len()),
            Values::U32(values) => (size_of::<u32>(), values.len()),
            Values::I32(values) => (size_of::<i32>(), values.len()),
        }
    }
}

/// An array [`load`] expects, with its length in values, and how to read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// `f32` values, read into memory.
    F32(usize),
    /// Values of `width` bytes, left in the file ([`Deferred`]).
    Deferred { width: usize, length: usize },
}

impl Slot {
    /// `length` values of `T`, left in the file.
    pub fn deferred<T>(length: usize) -> Self {
        Slot::Deferred {
            width: size_of::<T>(),
            length,
        }
    }

    /// Bytes a value, and how many values.
    fn shape(self) -> (usize, usize) {
        match self {
            Slot::F32(length) => (size_of::<f32>(), length),
            Slot::Deferred { width, length } => (width, length),
        }
    }
}

/// An array [`load`] read back.
#[derive(Debug)]
pub(crate) enum Array {
    /// A [`Slot::F32`].
    F32(Vec<f32>),
    /// A [`Slot::Deferred`].
    Deferred(Deferred),
}

/// The header: what a reader checks before it trusts the arrays.
fn header(
    fingerprint: &ModelFingerprint,
    shapes: impl ExactSizeIterator<Item = (usize, usize)>,
) -> Vec<u8> {
    let mut header = MAGIC.to_vec();
    for value in [FORMAT, NR as u32, fingerprint.digest.len() as u32] {
        header.extend_from_slice(&value.to_le_bytes());
    }
    header.extend_from_slice(fingerprint.digest.as_bytes());
    header.extend_from_slice(&(shapes.len() as u64).to_le_bytes());
    for (width, length) in shapes {
        header.extend_from_slice(&(width as u64).to_le_bytes());
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
    arrays: &[Values<'_>],
) -> io::Result<()> {
    let staging = path.with_extension(format!("tmp{}", std::process::id()));
    let written = (|| {
        let mut file = io::BufWriter::new(fs::File::create(&staging)?);
        file.write_all(&header(fingerprint, arrays.iter().map(Values::shape)))?;
        for array in arrays {
            file.write_all(array.bytes())?;
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

/// An array left in the prepared weights' file, to be read from there as needed. The file
/// stays open from the load on, so a file replaced or removed since still reads.
#[derive(Debug, Clone)]
pub(crate) struct Deferred {
    file: Arc<Mutex<fs::File>>,
    /// Where the array starts in the file, in bytes.
    offset: u64,
    /// Bytes a value.
    width: usize,
    /// Its length in values.
    pub length: usize,
}

impl Deferred {
    /// `out.len()` values of the array, from value `start` on.
    pub fn read_into<T: bytemuck::Pod>(&self, start: usize, out: &mut [T]) -> io::Result<()> {
        assert_eq!(size_of::<T>(), self.width, "values of the array's width");
        assert!(start + out.len() <= self.length, "within the array");
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.seek(io::SeekFrom::Start(
            self.offset + (start * self.width) as u64,
        ))?;
        file.read_exact(bytemuck::cast_slice_mut(out))
    }

    /// The whole array.
    pub fn read<T: bytemuck::Pod>(&self) -> io::Result<Vec<T>> {
        let mut values = vec![T::zeroed(); self.length];
        self.read_into(0, &mut values)?;
        Ok(values)
    }
}

/// The arrays saved at `path` for the model with `fingerprint`, as `slots` ask: each read
/// straight into a buffer of its length, or left in the file. `None` where the file is
/// missing, of another model, format or packing, or not laid out as `slots`.
pub(crate) fn load(
    path: &Path,
    fingerprint: &ModelFingerprint,
    slots: &[Slot],
) -> Option<Vec<Array>> {
    let mut file = fs::File::open(path).ok()?;
    let expected = header(fingerprint, slots.iter().map(|slot| slot.shape()));
    let data_bytes: usize = slots
        .iter()
        .map(|slot| {
            let (width, length) = slot.shape();
            width * length
        })
        .sum();
    if file.metadata().ok()?.len() != (expected.len() + data_bytes) as u64 {
        return None;
    }
    let mut found = vec![0; expected.len()];
    file.read_exact(&mut found).ok()?;
    if found != expected {
        return None;
    }
    let mut offset = expected.len() as u64;
    let shared = Arc::new(Mutex::new(file.try_clone().ok()?));
    // In order, each straight into its final buffer. (Reading them on rayon's threads was
    // slower: the fresh buffers' page faults contend for the process's memory map.)
    slots
        .iter()
        .map(|&slot| {
            let (width, length) = slot.shape();
            let array = match slot {
                Slot::F32(_) => {
                    let mut values = vec![0.0f32; length];
                    file.read_exact(bytemuck::cast_slice_mut(&mut values))
                        .ok()?;
                    Array::F32(values)
                }
                Slot::Deferred { .. } => {
                    file.seek(io::SeekFrom::Current((width * length) as i64))
                        .ok()?;
                    Array::Deferred(Deferred {
                        file: Arc::clone(&shared),
                        offset,
                        width,
                        length,
                    })
                }
            };
            offset += (width * length) as u64;
            Some(array)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint(digest: &str) -> ModelFingerprint {
        ModelFingerprint {
            name: "test".into(),
            revision: "local".into(),
            digest: digest.repeat(64 / digest.len()),
            precision: crate::Precision::F32,
        }
    }

    #[test]
    fn arrays_come_back_for_their_model_only() {
        let dir = tempfile::tempdir().unwrap();
        let model = fingerprint("ab");
        let (words, empty, half, large) = (
            vec![1.0, -2.5, f32::MIN_POSITIVE],
            vec![],
            vec![0x3c00u16, 0xc000, 1],
            vec![7.0; 1000],
        );
        let arrays = [
            Values::F32(&words),
            Values::F32(&empty),
            Values::F16(&half),
            Values::F32(&large),
        ];
        let slots = [
            Slot::deferred::<f32>(3),
            Slot::F32(0),
            Slot::deferred::<u16>(3),
            Slot::deferred::<f32>(1000),
        ];
        let path = path(dir.path(), &model);
        save(&path, &model, &arrays).unwrap();
        let loaded = load(&path, &model, &slots).unwrap();
        let [
            Array::Deferred(first),
            Array::F32(second),
            Array::Deferred(third),
            Array::Deferred(last),
        ] = &loaded[..]
        else {
            panic!("not the slots asked for: {loaded:?}");
        };
        assert_eq!(first.read::<f32>().unwrap(), words);
        assert_eq!(second, &empty);
        assert_eq!(third.read::<u16>().unwrap(), half);
        let mut some = [0.0f32; 2];
        last.read_into(998, &mut some).unwrap();
        assert_eq!(some, [7.0; 2]);

        // Deferred arrays read from the file opened at load, though it is gone since.
        let kept = load(&path, &model, &slots).unwrap();
        fs::remove_file(&path).unwrap();
        let Array::Deferred(first) = &kept[0] else {
            panic!("deferred");
        };
        assert_eq!(first.read::<f32>().unwrap(), words);
        save(&path, &model, &arrays).unwrap();

        // Another model, other lengths or kinds, a short file: not these arrays.
        assert!(load(&path, &fingerprint("cd"), &slots).is_none());
        let mut other = slots;
        other[3] = Slot::deferred::<f32>(999);
        assert!(load(&path, &model, &other).is_none());
        other = slots;
        other[2] = Slot::deferred::<u32>(3);
        assert!(load(&path, &model, &other).is_none());
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 4]).unwrap();
        assert!(load(&path, &model, &slots).is_none());

        // Saving another model's arrays retires this one's file.
        let other = fingerprint("cd");
        let other_path = super::path(dir.path(), &other);
        save(&other_path, &other, &arrays).unwrap();
        assert!(!path.exists());
        assert!(load(&other_path, &other, &slots).is_some());
    }
}
