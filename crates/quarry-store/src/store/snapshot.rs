//! [`Snapshot`]: reads at one commit.

use std::collections::HashSet;
use std::path::Path;

use quarry_chunk::ChunkId;
use redb::{ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::de::DeserializeOwned;

use super::{Counts, Hit, corrupt, database_error, decode, decode_u64};
use crate::StoreError;
use crate::best::Best;
use crate::dot::dot;
use crate::filter::Filter;
use crate::records::{
    CHUNKS, DRIFT, Drift, FILE_DATA, FILES, FileState, META, StoredChunk, VECTORS, decode_vector,
    decode_vector_into, meta_keys,
};

/// A read-only view of the index at one commit.
pub struct Snapshot<'a> {
    pub(super) txn: redb::ReadTransaction,
    pub(super) path: &'a Path,
    pub(super) dimensions: usize,
}

impl Snapshot<'_> {
    /// What the index knows about the file at `path`.
    pub fn file(&self, path: &str) -> Result<Option<FileState>, StoreError> {
        self.record(FILES, path)
    }

    /// Every file in the index, by path.
    pub fn files(&self) -> Result<Vec<FileState>, StoreError> {
        self.records(FILES)
    }

    /// The chunk with `id`.
    pub fn chunk(&self, id: ChunkId) -> Result<Option<StoredChunk>, StoreError> {
        self.record(CHUNKS, id.0)
    }

    /// The chunks with `ids`, in their order, `None` for those the index lacks: the table is
    /// opened once for all of them.
    pub fn chunks(&self, ids: &[ChunkId]) -> Result<Vec<Option<StoredChunk>>, StoreError> {
        self.read(|txn| {
            let chunks = txn.open_table(CHUNKS)?;
            let mut found = Vec::with_capacity(ids.len());
            for id in ids {
                found.push(chunks.get(id.0)?.map(|v| decode(v.value())).transpose());
            }
            Ok(found.into_iter().collect::<Result<Vec<_>, String>>())
        })?
        .map_err(|message| self.corrupt(message))
    }

    /// The ids of the chunks held in `range`, in order, at most `limit` of them: what a
    /// prefix of an id ([`quarry_chunk::ChunkIdPrefix::range`]) names.
    pub fn chunk_ids_in(
        &self,
        range: std::ops::RangeInclusive<u128>,
        limit: usize,
    ) -> Result<Vec<ChunkId>, StoreError> {
        self.read(|txn| {
            let chunks = txn.open_table(CHUNKS)?;
            let mut ids = Vec::new();
            for entry in chunks.range(range)?.take(limit) {
                ids.push(ChunkId(entry?.0.value()));
            }
            Ok(ids)
        })
    }

    /// Which of `ids` the index holds, in their order: a key lookup each, nothing decoded.
    pub fn contains_chunks(&self, ids: &[ChunkId]) -> Result<Vec<bool>, StoreError> {
        self.read(|txn| {
            let chunks = txn.open_table(CHUNKS)?;
            ids.iter()
                .map(|id| Ok(chunks.get(id.0)?.is_some()))
                .collect()
        })
    }

    /// The vector of the chunk with `id`.
    pub fn vector(&self, id: ChunkId) -> Result<Option<Vec<f32>>, StoreError> {
        self.read(|txn| {
            let vectors = txn.open_table(VECTORS)?;
            Ok(vectors.get(id.0)?.map(|v| decode_vector(v.value())))
        })
    }

    /// The drift of the file at `path`'s last re-index, if it was re-indexed.
    pub fn drift(&self, path: &str) -> Result<Option<Drift>, StoreError> {
        self.record(DRIFT, path)
    }

    /// Files whose last re-index drifted by `threshold` or more on average, most drifted
    /// first (then by path).
    pub fn drifts(&self, threshold: f32) -> Result<Vec<Drift>, StoreError> {
        let mut drifts: Vec<Drift> = self.records(DRIFT)?;
        drifts.retain(|d| d.average >= threshold);
        drifts.sort_by(|a, b| b.average.total_cmp(&a.average).then(a.path.cmp(&b.path)));
        Ok(drifts)
    }

    /// What `name` attached to the file at `path` ([`Batch::set_file_data`]).
    pub fn file_data(&self, path: &str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.read(|txn| {
            let data = txn.open_table(FILE_DATA)?;
            Ok(data.get((path, name))?.map(|v| v.value().to_vec()))
        })
    }

    /// Every file's data under `name` ([`Batch::set_file_data`]), by path.
    pub fn file_data_named(&self, name: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.read(|txn| {
            let data = txn.open_table(FILE_DATA)?;
            let mut found = Vec::new();
            for entry in data.iter()? {
                let (key, value) = entry?;
                let (path, data_name) = key.value();
                if data_name == name {
                    found.push((path.to_owned(), value.value().to_vec()));
                }
            }
            Ok(found)
        })
    }

    /// Every file's data ([`Batch::set_file_data`]) as its path, its name and its bytes, in
    /// key order, given to `each` until it fails: one pass over the table, nothing copied.
    pub fn for_each_file_data<E>(
        &self,
        mut each: impl FnMut(&str, &str, &[u8]) -> Result<(), E>,
    ) -> Result<Result<(), E>, StoreError> {
        self.read(|txn| {
            let data = txn.open_table(FILE_DATA)?;
            for entry in data.iter()? {
                let (key, value) = entry?;
                let (path, name) = key.value();
                if let Err(error) = each(path, name, value.value()) {
                    return Ok(Err(error));
                }
            }
            Ok(Ok(()))
        })
    }

    /// The git commit the project was last indexed at ([`Batch::set_indexed_commit`]).
    pub fn indexed_commit(&self) -> Result<Option<String>, StoreError> {
        self.read(|txn| {
            let meta = txn.open_table(META)?;
            Ok(meta
                .get(meta_keys::INDEXED_COMMIT)?
                .map(|v| String::from_utf8_lossy(v.value()).into_owned()))
        })
    }

    /// The commit counter derived indexes are tagged with: it moves on with every commit,
    /// so what a caller derives from a snapshot stays good while it is unchanged.
    pub fn generation(&self) -> Result<u64, StoreError> {
        self.read(|txn| {
            let meta = txn.open_table(META)?;
            Ok(meta
                .get(meta_keys::GENERATION)?
                .map_or(0, |v| decode_u64(v.value())))
        })
    }

    /// Every indexed path.
    pub(crate) fn paths(&self) -> Result<Vec<String>, StoreError> {
        self.read(|txn| {
            let files = txn.open_table(FILES)?;
            let mut paths = Vec::new();
            for entry in files.iter()? {
                paths.push(entry?.0.value().to_owned());
            }
            Ok(paths)
        })
    }

    /// Every chunk, in id order.
    pub(crate) fn for_each_chunk(
        &self,
        mut each: impl FnMut(StoredChunk),
    ) -> Result<(), StoreError> {
        self.read(|txn| {
            let chunks = txn.open_table(CHUNKS)?;
            for entry in chunks.iter()? {
                match decode(entry?.1.value()) {
                    Ok(chunk) => each(chunk),
                    Err(message) => return Ok(Err(message)),
                }
            }
            Ok(Ok(()))
        })?
        .map_err(|message| self.corrupt(message))
    }

    /// Every chunk that has its vector, with it, in id order.
    pub(crate) fn for_each_embedded(
        &self,
        mut each: impl FnMut(StoredChunk, Vec<f32>),
    ) -> Result<(), StoreError> {
        self.read(|txn| {
            let chunks = txn.open_table(CHUNKS)?;
            let vectors = txn.open_table(VECTORS)?;
            for entry in vectors.iter()? {
                let (id, vector) = entry?;
                let Some(chunk) = chunks.get(id.value())? else {
                    let id = id.value();
                    return Ok(Err(format!("vector {id:032x} has no chunk")));
                };
                match decode(chunk.value()) {
                    Ok(chunk) => each(chunk, decode_vector(vector.value())),
                    Err(message) => return Ok(Err(message)),
                }
            }
            Ok(Ok(()))
        })?
        .map_err(|message| self.corrupt(message))
    }

    /// The id of every chunk that has its vector.
    pub(crate) fn embedded_ids(&self) -> Result<HashSet<u128>, StoreError> {
        self.read(|txn| {
            let vectors = txn.open_table(VECTORS)?;
            let mut ids = HashSet::new();
            for entry in vectors.iter()? {
                ids.insert(entry?.0.value());
            }
            Ok(ids)
        })
    }

    /// How many files and chunks the index holds.
    pub fn counts(&self) -> Result<Counts, StoreError> {
        self.read(|txn| {
            Ok(Counts {
                files: txn.open_table(FILES)?.len()?,
                chunks: txn.open_table(CHUNKS)?.len()?,
                embedded: txn.open_table(VECTORS)?.len()?,
            })
        })
    }

    /// The `k` chunks most similar to `query` among those `filter` admits, best first, by an
    /// exact scan of every vector. Ties are broken by chunk id, so the order is deterministic.
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<Hit>, StoreError> {
        self.read(|txn| {
            let vectors = txn.open_table(VECTORS)?;
            let chunks = txn.open_table(CHUNKS)?;
            let mut best = Best::new(k);
            let mut vector = Vec::with_capacity(self.dimensions);
            for entry in vectors.iter()? {
                let (id, bytes) = entry?;
                let id = id.value();
                if !filter.is_empty() {
                    let Some(chunk) = chunks.get(id)? else {
                        continue;
                    };
                    match decode::<StoredChunk>(chunk.value()) {
                        Ok(chunk) if filter.admits(&chunk) => {}
                        _ => continue,
                    }
                }
                decode_vector_into(bytes.value(), &mut vector);
                best.push(id, dot(query, &vector));
            }
            Ok(best.into_hits())
        })
    }

    /// The vector length of this index.
    pub(crate) fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Runs `body` on this snapshot's transaction. redb may panic on a damaged file rather
    /// than return an error ("a plain open makes no such promise"): such a panic is
    /// [`StoreError::Corrupt`] too.
    /// The record under `key` in `table`, decoded; `None` where there is none.
    fn record<K: redb::Key + 'static, T: DeserializeOwned>(
        &self,
        table: TableDefinition<K, &[u8]>,
        key: K::SelfType<'_>,
    ) -> Result<Option<T>, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(table)?;
            Ok(table.get(key)?.map(|v| decode(v.value())).transpose())
        })?
        .map_err(|message| self.corrupt(message))
    }

    /// Every record of `table`, decoded, in key order.
    fn records<K: redb::Key + 'static, T: DeserializeOwned>(
        &self,
        table: TableDefinition<K, &[u8]>,
    ) -> Result<Vec<T>, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(table)?;
            let mut all = Vec::new();
            for entry in table.iter()? {
                all.push(decode(entry?.1.value()));
            }
            Ok(all.into_iter().collect::<Result<Vec<_>, _>>())
        })?
        .map_err(|message| self.corrupt(message))
    }

    pub(crate) fn read<T>(
        &self,
        body: impl FnOnce(&redb::ReadTransaction) -> Result<T, redb::Error>,
    ) -> Result<T, StoreError> {
        match crate::panics::catch_quietly(|| body(&self.txn)) {
            Ok(read) => read.map_err(|e| database_error(self.path, e)),
            Err(panic) => Err(self.corrupt(format!(
                "redb panicked: {}",
                crate::panics::panic_message(&*panic)
            ))),
        }
    }

    pub(crate) fn corrupt(&self, message: String) -> StoreError {
        corrupt(self.path, message)
    }
}
