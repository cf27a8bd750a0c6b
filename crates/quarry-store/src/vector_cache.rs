//! The machine's vector cache: every vector a model made, keyed by the text it embedded, so
//! that no chunk text is embedded twice on one machine for one model and precision, whatever
//! repository, worktree, clone or library it is in.
//!
//! One redb database per model fingerprint (which names the precision) under the cache
//! directory, opened in redb's multi-writer mode so that several processes share it; each
//! vector carries a checksum, and one that fails it is dropped and embedded again. The
//! least recently used vectors leave once the cache passes its bound.
//!
//! ```
//! # fn main() -> Result<(), quarry_store::StoreError> {
//! use quarry_store::VectorCache;
//! let dir = tempfile::tempdir().unwrap();
//! let (cache, _repaired) = VectorCache::open(dir.path(), "model@rev#digest f32", 2, 1 << 20)?;
//! cache.put(&[("fn a() {}", &[0.6, 0.8][..])])?;
//! let found = cache.get(&["fn a() {}", "fn b() {}"])?;
//! assert_eq!(found, vec![Some(vec![0.6, 0.8]), None]);
//! # Ok(()) }
//! ```

use std::fs;
use std::path::{Path, PathBuf};

use redb::{
    Builder, ConcurrencyMode, Database, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    TableDefinition, WriteTransaction,
};
use xxhash_rust::xxh3::{xxh3_64, xxh3_128};

use crate::StoreError;
use crate::panics::{catch_quietly, panic_message};
use crate::records::{decode_vector, encode_vector};

/// A text's key to its vector: the vector and its checksum.
const VECTORS: TableDefinition<u128, &[u8]> = TableDefinition::new("vectors");
/// When each vector was last used, on the cache's own clock.
const USED: TableDefinition<u128, u64> = TableDefinition::new("used");
/// The same, ordered by use: what leaves first.
const BY_USE: TableDefinition<(u64, u128), ()> = TableDefinition::new("by_use");
/// The model the vectors are of, their dimensions, and the clock.
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

/// The default bound of a model's cache: about 600,000 vectors of 384 dimensions, the
/// chunks of a few dozen large repositories.
pub const DEFAULT_VECTOR_CACHE_BYTES: u64 = 1 << 30;

/// Bytes a vector costs besides its numbers: its key, checksum, use records and the trees'
/// share.
const ENTRY_OVERHEAD: u64 = 96;

/// How many bytes a checksum adds to a stored vector.
const CHECKSUM_BYTES: usize = 8;

/// A model's vectors on this machine, shared by every process that embeds with it.
#[derive(Debug)]
pub struct VectorCache {
    db: Database,
    path: PathBuf,
    dimensions: usize,
    max_vectors: u64,
}

/// What a cache holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VectorCacheSize {
    /// Vectors stored.
    pub vectors: u64,
    /// The most it keeps before the least recently used leave.
    pub max_vectors: u64,
}

impl VectorCache {
    /// The cache file of `model` (a model fingerprint as it displays, naming the precision)
    /// in `dir`.
    pub fn file(dir: &Path, model: &str) -> PathBuf {
        dir.join(format!("vectors-{:016x}.redb", xxh3_64(model.as_bytes())))
    }

    /// Opens `model`'s cache in `dir`, creating both if need be, bounded to about
    /// `max_bytes`. A file that cannot be read as a cache of this model (damaged, of another
    /// redb format, or a hash collision of another model's name) is moved aside to
    /// `*.damaged` and started anew: the second value says so, for the caller to warn.
    pub fn open(
        dir: &Path,
        model: &str,
        dimensions: usize,
        max_bytes: u64,
    ) -> Result<(Self, Option<String>), StoreError> {
        fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = Self::file(dir, model);
        let per_vector = (dimensions * 4 + CHECKSUM_BYTES) as u64 + ENTRY_OVERHEAD;
        let max_vectors = (max_bytes / per_vector).max(1);
        let open = |path: &Path| -> Result<Self, StoreError> {
            let db = open_shared(path)?;
            let cache = Self {
                db,
                path: path.to_path_buf(),
                dimensions,
                max_vectors,
            };
            cache.claim(model)?;
            Ok(cache)
        };
        match open(&path) {
            Ok(cache) => Ok((cache, None)),
            Err(StoreError::Corrupt { message, .. }) => {
                let aside = path.with_extension("redb.damaged");
                fs::rename(&path, &aside).map_err(|source| StoreError::Io {
                    path: path.clone(),
                    source,
                })?;
                let note = format!(
                    "{}: the vector cache could not be read ({message}); moved to {} and started \
                     anew",
                    path.display(),
                    aside.display()
                );
                Ok((open(&path)?, Some(note)))
            }
            Err(other) => Err(other),
        }
    }

    /// The cache's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The vectors of `texts` that the cache holds, in order (`None` for the rest), each
    /// marked as used now. A vector that fails its checksum is removed and counts as absent.
    pub fn get(&self, texts: &[&str]) -> Result<Vec<Option<Vec<f32>>>, StoreError> {
        self.write(|txn, now| {
            let mut vectors = txn.open_table(VECTORS)?;
            let mut used = txn.open_table(USED)?;
            let mut by_use = txn.open_table(BY_USE)?;
            let mut found = vec![None; texts.len()];
            for (i, key) in keys_in_order(texts.iter().copied()) {
                let vector = vectors
                    .get(key)?
                    .map(|value| checked_vector(key, value.value(), self.dimensions));
                match vector {
                    None => {}
                    Some(None) => {
                        vectors.remove(key)?;
                        if let Some(when) = used.remove(key)? {
                            by_use.remove((when.value(), key))?;
                        }
                    }
                    Some(Some(vector)) => {
                        if let Some(when) = used.insert(key, now)? {
                            by_use.remove((when.value(), key))?;
                        }
                        by_use.insert((now, key), ())?;
                        found[i] = Some(vector);
                    }
                }
            }
            Ok(found)
        })
    }

    /// Stores the vector of each text (one of the cache's dimensions), then lets the least
    /// recently used go while the cache is over its bound.
    pub fn put(&self, entries: &[(&str, &[f32])]) -> Result<(), StoreError> {
        if let Some((_, vector)) = entries.iter().find(|(_, v)| v.len() != self.dimensions) {
            return Err(self.broken(format!(
                "a vector of {} dimensions for a cache of {}",
                vector.len(),
                self.dimensions
            )));
        }
        self.write(|txn, now| {
            let mut vectors = txn.open_table(VECTORS)?;
            let mut used = txn.open_table(USED)?;
            let mut by_use = txn.open_table(BY_USE)?;
            for (i, key) in keys_in_order(entries.iter().map(|(text, _)| *text)) {
                let vector = entries[i].1;
                vectors.insert(key, &checksummed(key, vector)[..])?;
                if let Some(when) = used.insert(key, now)? {
                    by_use.remove((when.value(), key))?;
                }
                by_use.insert((now, key), ())?;
            }
            let over = vectors.len()?.saturating_sub(self.max_vectors);
            if over > 0 {
                // A tenth below the bound, so that a full cache does not evict on every put.
                let leave = over + self.max_vectors / 10;
                let oldest: Vec<(u64, u128)> = by_use
                    .iter()?
                    .take(leave as usize)
                    .map(|entry| entry.map(|(k, _)| k.value()))
                    .collect::<Result<_, _>>()?;
                for (when, key) in oldest {
                    by_use.remove((when, key))?;
                    used.remove(key)?;
                    vectors.remove(key)?;
                }
            }
            Ok(())
        })
    }

    /// How many vectors the cache holds, and may.
    pub fn size(&self) -> Result<VectorCacheSize, StoreError> {
        let vectors = self.guard(|| {
            let txn = self.db.begin_read()?;
            match txn.open_table(VECTORS) {
                Ok(table) => Ok(table.len()?),
                Err(redb::TableError::TableDoesNotExist(_)) => Ok(0),
                Err(e) => Err(e.into()),
            }
        })?;
        Ok(VectorCacheSize {
            vectors,
            max_vectors: self.max_vectors,
        })
    }

    /// Records `model` and the dimensions in a new cache, and checks them in an old one:
    /// a read, and a write only the first time.
    fn claim(&self, model: &str) -> Result<(), StoreError> {
        let dimensions = (self.dimensions as u64).to_le_bytes();
        let stored = self.guard(|| {
            let txn = self.db.begin_read()?;
            let meta = match txn.open_table(META) {
                Ok(table) => table,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            Ok(claimed_by(&meta, model, &dimensions)?)
        })?;
        let claimed = match stored {
            Some(claimed) => claimed,
            // Another process may claim it between the read and this write: check again.
            None => self.write(|txn, _| {
                let mut meta = txn.open_table(META)?;
                let stored = claimed_by(&meta, model, &dimensions)?;
                if stored.is_none() {
                    meta.insert("model", model.as_bytes())?;
                    meta.insert("dimensions", &dimensions[..])?;
                }
                Ok(stored.unwrap_or(true))
            })?,
        };
        match claimed {
            true => Ok(()),
            false => Err(StoreError::Corrupt {
                path: self.path.clone(),
                message: format!("it holds another model's vectors than {model}'s"),
            }),
        }
    }

    /// Runs `work` in a write transaction stamped with the next tick of the cache's clock,
    /// and commits it. Writers of other processes take turns.
    fn write<T>(
        &self,
        work: impl FnOnce(&WriteTransaction, u64) -> Result<T, redb::Error>,
    ) -> Result<T, StoreError> {
        self.guard(|| {
            let txn = self.db.begin_write()?;
            let now = {
                let mut meta = txn.open_table(META)?;
                let now = meta
                    .get("clock")?
                    .and_then(|v| v.value().try_into().ok())
                    .map_or(0, u64::from_le_bytes)
                    + 1;
                meta.insert("clock", &now.to_le_bytes()[..])?;
                now
            };
            let done = work(&txn, now)?;
            txn.commit()?;
            Ok(done)
        })
    }

    /// `work`'s redb error or panic as the cache's error.
    fn guard<T>(&self, work: impl FnOnce() -> Result<T, redb::Error>) -> Result<T, StoreError> {
        match catch_quietly(work) {
            Ok(done) => done.map_err(|e| self.broken(e.to_string())),
            Err(panic) => Err(StoreError::Corrupt {
                path: self.path.clone(),
                message: format!("redb panicked: {}", panic_message(&*panic)),
            }),
        }
    }

    fn broken(&self, message: String) -> StoreError {
        StoreError::Database {
            path: self.path.clone(),
            message,
        }
    }
}

/// Whether the cache whose `meta` table this is holds `model`'s vectors of `dimensions`
/// (little-endian); `None` for a cache no model has claimed yet.
fn claimed_by(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    model: &str,
    dimensions: &[u8],
) -> Result<Option<bool>, redb::StorageError> {
    let stored_model = meta.get("model")?;
    let stored_dimensions = meta.get("dimensions")?;
    Ok(stored_model.map(|m| {
        m.value() == model.as_bytes() && stored_dimensions.is_some_and(|d| d.value() == dimensions)
    }))
}

/// Opens (creating) the database at `path` for several processes at once.
fn open_shared(path: &Path) -> Result<Database, StoreError> {
    let mut builder = Builder::new();
    builder.set_concurrency_mode(ConcurrencyMode::MultiWriter);
    // Reads are one pass over a batch's keys: a small page cache is enough.
    builder.set_cache_size(16 << 20);
    match catch_quietly(|| builder.create(path)) {
        Ok(opened) => opened.map_err(|e| crate::store::database_error(path, e.into())),
        Err(panic) => Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            message: format!("redb panicked: {}", panic_message(&*panic)),
        }),
    }
}

/// Each text's key with the text's place, in key order: the trees are keyed by hashes, and
/// touched in order they share their pages.
fn keys_in_order<'t>(texts: impl Iterator<Item = &'t str>) -> Vec<(usize, u128)> {
    let mut keys: Vec<(usize, u128)> = texts
        .map(|text| xxh3_128(text.as_bytes()))
        .enumerate()
        .collect();
    keys.sort_unstable_by_key(|&(_, key)| key);
    keys
}

/// `vector`'s bytes followed by a checksum over them and `key`.
fn checksummed(key: u128, vector: &[f32]) -> Vec<u8> {
    let mut bytes = encode_vector(vector);
    let sum = checksum(key, &bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    bytes
}

/// The vector in `value` if it has `dimensions` numbers and its checksum holds.
fn checked_vector(key: u128, value: &[u8], dimensions: usize) -> Option<Vec<f32>> {
    let (vector, sum) = value.split_at_checked(dimensions * 4)?;
    let sum: [u8; CHECKSUM_BYTES] = sum.try_into().ok()?;
    (checksum(key, vector) == u64::from_le_bytes(sum)).then(|| decode_vector(vector))
}

fn checksum(key: u128, vector: &[u8]) -> u64 {
    let mut bytes = key.to_le_bytes().to_vec();
    bytes.extend_from_slice(vector);
    xxh3_64(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = "m@r#0123456789abcdef int8";

    fn open(dir: &Path, max_bytes: u64) -> VectorCache {
        let (cache, repaired) = VectorCache::open(dir, MODEL, 4, max_bytes).unwrap();
        assert_eq!(repaired, None);
        cache
    }

    #[test]
    fn the_least_recently_used_leave_past_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        // Room for 10 vectors of 4 dimensions.
        let cache = open(dir.path(), 10 * (16 + 8 + ENTRY_OVERHEAD));
        let texts: Vec<String> = (0..10).map(|i| format!("text {i}")).collect();
        for (i, text) in texts.iter().enumerate() {
            cache.put(&[(text, &[i as f32; 4][..])]).unwrap();
        }
        // Text 0 is used again, so text 1 is now the oldest.
        assert_eq!(cache.get(&["text 0"]).unwrap(), vec![Some(vec![0.0; 4])]);
        cache.put(&[("text 10", &[10.0; 4][..])]).unwrap();
        let all: Vec<&str> = texts.iter().map(String::as_str).collect();
        let kept = cache.get(&all).unwrap();
        assert!(kept[0].is_some(), "the one used again stays");
        assert!(kept[1].is_none(), "the least recently used left");
        assert_eq!(kept[9], Some(vec![9.0; 4]));
        let size = cache.size().unwrap();
        assert!(size.vectors <= size.max_vectors, "{size:?}");
        assert_eq!(size.max_vectors, 10);
    }

    #[test]
    fn a_vector_that_fails_its_checksum_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let cache = open(dir.path(), DEFAULT_VECTOR_CACHE_BYTES);
        cache.put(&[("a", &[1.0, 2.0, 3.0, 4.0][..])]).unwrap();
        let key = xxh3_128(b"a");
        let mut bytes = checksummed(key, &[1.0, 2.0, 3.0, 4.0]);
        assert!(checked_vector(key, &bytes, 4).is_some());
        bytes[3] ^= 0x40;
        assert_eq!(checked_vector(key, &bytes, 4), None);
        assert_eq!(checked_vector(key, &bytes[..10], 4), None);
        // The same bytes stored under the key: read as absent, and removed.
        cache
            .write(|txn, _| {
                txn.open_table(VECTORS)?.insert(key, &bytes[..])?;
                Ok(())
            })
            .unwrap();
        assert_eq!(cache.get(&["a"]).unwrap(), vec![None]);
        assert_eq!(cache.size().unwrap().vectors, 0);
    }

    #[test]
    fn two_handles_share_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let first = open(dir.path(), DEFAULT_VECTOR_CACHE_BYTES);
        let second = open(dir.path(), DEFAULT_VECTOR_CACHE_BYTES);
        first.put(&[("x", &[0.5; 4][..])]).unwrap();
        assert_eq!(second.get(&["x"]).unwrap(), vec![Some(vec![0.5; 4])]);
    }

    #[test]
    fn a_damaged_file_is_moved_aside_and_started_anew() {
        let dir = tempfile::tempdir().unwrap();
        let path = VectorCache::file(dir.path(), MODEL);
        fs::write(&path, vec![0x5a; 64 << 10]).unwrap();
        let (cache, repaired) = VectorCache::open(dir.path(), MODEL, 4, 1 << 20).unwrap();
        let note = repaired.expect("the damage is reported");
        assert!(note.contains("started anew"), "{note}");
        assert!(path.with_extension("redb.damaged").exists());
        cache.put(&[("y", &[1.0; 4][..])]).unwrap();
        assert_eq!(cache.size().unwrap().vectors, 1);
    }

    #[test]
    fn another_models_vectors_are_never_served() {
        let dir = tempfile::tempdir().unwrap();
        let cache = open(dir.path(), 1 << 20);
        cache.put(&[("z", &[1.0; 4][..])]).unwrap();
        drop(cache);
        // Same file name, other dimensions: not this cache.
        let (other, repaired) = VectorCache::open(dir.path(), MODEL, 8, 1 << 20).unwrap();
        assert!(repaired.is_some());
        assert_eq!(other.get(&["z"]).unwrap(), vec![None]);
    }
}
