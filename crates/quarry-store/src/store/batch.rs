//! [`Batch`]: the changes of one write transaction.

use std::collections::HashSet;

use redb::{ReadableTable, WriteTransaction};

use super::{Store, database_error, decode, decode_u64};
use crate::StoreError;
use crate::pending::{Content, DriftTables, read_chunks};
use crate::records::{
    CHUNKS, DRIFT, DRIFT_BASE, FILE_DATA, FILES, FileState, META, PENDING, StoredChunk, VECTORS,
    decode_vector, encode, encode_vector, meta_keys,
};

/// A set of changes to the index, all visible at once when committed, none if dropped.
pub struct Batch<'a> {
    pub(crate) store: &'a Store,
    pub(crate) txn: WriteTransaction,
    /// Chunks removed or replaced, for the lexical index.
    pub(super) removed: Vec<u128>,
    /// Chunks stored, for the lexical index.
    pub(super) added: Vec<StoredChunk>,
    /// Chunks whose vector was stored or dropped, for the vector index.
    pub(crate) vectors_changed: Vec<u128>,
}

/// What a commit did to the chunks with vectors, for a vector index in memory to follow it
/// without reading every vector's key ([`Store::follow_commit`]).
pub(crate) struct VectorChanges {
    /// Chunks with a vector after the commit, among those it touched.
    pub present: Vec<(StoredChunk, Vec<f32>)>,
    /// Chunks without one after it, among those it touched.
    pub absent: Vec<u128>,
}

impl Batch<'_> {
    /// Records `state` for its file, storing `new_chunks` with their vectors and removing the
    /// file's chunks that `state` no longer lists. A chunk `state` lists and `new_chunks` does
    /// not give must already be stored (an unchanged chunk keeps its vector). When the
    /// file's chunks change, its [`Drift`] is recorded.
    pub fn put_file(
        &mut self,
        state: &FileState,
        new_chunks: &[(StoredChunk, &[f32])],
    ) -> Result<(), StoreError> {
        self.store_file(state, new_chunks, Content::Vector)
    }

    /// [`Batch::put_file`] for chunks whose vectors come later: each is stored with the text
    /// to embed, searchable by words at once and by meaning once [`Batch::put_vectors`] gives
    /// its vector ([`Snapshot::pending`] lists what is left). The file's [`Drift`] is
    /// recorded when the last of its chunks has its vector.
    pub fn put_file_pending(
        &mut self,
        state: &FileState,
        new_chunks: &[(StoredChunk, &str)],
    ) -> Result<(), StoreError> {
        self.store_file(state, new_chunks, Content::Pending)
    }

    /// [`Batch::put_file`] and [`Batch::put_file_pending`]: `content` says what each new
    /// chunk is stored with.
    fn store_file<'a, T: Copy>(
        &mut self,
        state: &FileState,
        new_chunks: &[(StoredChunk, T)],
        content: impl Fn(T) -> Content<'a>,
    ) -> Result<(), StoreError> {
        let new_chunks: Vec<(&StoredChunk, Content<'a>)> = new_chunks
            .iter()
            .map(|(chunk, with)| (chunk, content(*with)))
            .collect();
        let path = &self.store.path;
        let error = |e: redb::Error| database_error(path, e);
        let dimensions = self.store.settings.dimensions;
        let mut files = self.txn.open_table(FILES).map_err(|e| error(e.into()))?;
        let mut chunks = self.txn.open_table(CHUNKS).map_err(|e| error(e.into()))?;
        let mut vectors = self.txn.open_table(VECTORS).map_err(|e| error(e.into()))?;
        let mut pending = self.txn.open_table(PENDING).map_err(|e| error(e.into()))?;

        let previous: Option<FileState> = files
            .get(state.path.as_str())
            .map_err(|e| error(e.into()))?
            .map(|v| decode(v.value()))
            .transpose()
            .map_err(|message| self.store.corrupt(message))?;
        for (chunk, content) in &new_chunks {
            if let Content::Vector(vector) = content
                && vector.len() != dimensions
            {
                return Err(StoreError::Dimensions {
                    chunk: chunk.id,
                    expected: dimensions,
                    found: vector.len(),
                });
            }
        }
        // The file's embedded chunks before the change, unless it is still waiting for its
        // first vectors (then, as for a new file, there is nothing to drift from).
        let before = match &previous {
            Some(previous) if previous.chunk_ids != state.chunk_ids || !new_chunks.is_empty() => {
                let before = read_chunks(&chunks, &vectors, &previous.chunk_ids).map_err(error)?;
                (!before.is_empty() || previous.chunk_ids.is_empty()).then_some(before)
            }
            _ => None,
        };
        let kept: HashSet<u128> = state.chunk_ids.iter().copied().collect();
        for old in previous.iter().flat_map(|p| &p.chunk_ids) {
            if !kept.contains(old) {
                chunks.remove(*old).map_err(|e| error(e.into()))?;
                vectors.remove(*old).map_err(|e| error(e.into()))?;
                pending.remove(*old).map_err(|e| error(e.into()))?;
                self.removed.push(*old);
            }
        }
        for (chunk, content) in &new_chunks {
            let replaced = chunks
                .insert(chunk.id, &encode(*chunk)[..])
                .map_err(|e| error(e.into()))?
                .is_some();
            if replaced {
                self.removed.push(chunk.id);
            }
            self.vectors_changed.push(chunk.id);
            match content {
                Content::Vector(vector) => {
                    vectors
                        .insert(chunk.id, &encode_vector(vector)[..])
                        .map_err(|e| error(e.into()))?;
                    pending.remove(chunk.id).map_err(|e| error(e.into()))?;
                }
                Content::Pending(text) => {
                    vectors.remove(chunk.id).map_err(|e| error(e.into()))?;
                    pending
                        .insert(chunk.id, *text)
                        .map_err(|e| error(e.into()))?;
                }
            }
            self.added.push((*chunk).clone());
        }
        for id in &state.chunk_ids {
            if chunks.get(*id).map_err(|e| error(e.into()))?.is_none() {
                return Err(StoreError::MissingChunk {
                    path: state.path.clone(),
                    chunk: *id,
                });
            }
        }
        let mut drifts = DriftTables::open(&self.txn).map_err(error)?;
        drifts
            .settle(&state.path, &state.chunk_ids, before, &chunks, &vectors)
            .map_err(error)?;
        files
            .insert(state.path.as_str(), &encode(state)[..])
            .map_err(|e| error(e.into()))?;
        Ok(())
    }

    /// Attaches `data` under `name` to the file at `path` (for example its PageRank); removed
    /// with the file.
    pub fn set_file_data(&mut self, path: &str, name: &str, data: &[u8]) -> Result<(), StoreError> {
        let index = &self.store.path;
        let mut table = self
            .txn
            .open_table(FILE_DATA)
            .map_err(|e| database_error(index, e.into()))?;
        table
            .insert((path, name), data)
            .map_err(|e| database_error(index, e.into()))?;
        Ok(())
    }

    /// Records the git commit the project's files are indexed at.
    pub fn set_indexed_commit(&mut self, commit: &str) -> Result<(), StoreError> {
        let index = &self.store.path;
        let mut meta = self
            .txn
            .open_table(META)
            .map_err(|e| database_error(index, e.into()))?;
        meta.insert(meta_keys::INDEXED_COMMIT, commit.as_bytes())
            .map_err(|e| database_error(index, e.into()))?;
        Ok(())
    }

    /// Removes the file at `path` and its chunks; nothing happens if it is not indexed.
    pub fn remove_file(&mut self, path: &str) -> Result<(), StoreError> {
        let index = &self.store.path;
        let error = |e: redb::Error| database_error(index, e);
        let mut files = self.txn.open_table(FILES).map_err(|e| error(e.into()))?;
        let Some(previous) = files.remove(path).map_err(|e| error(e.into()))? else {
            return Ok(());
        };
        let previous: FileState =
            decode(previous.value()).map_err(|message| self.store.corrupt(message))?;
        let mut chunks = self.txn.open_table(CHUNKS).map_err(|e| error(e.into()))?;
        let mut vectors = self.txn.open_table(VECTORS).map_err(|e| error(e.into()))?;
        let mut pending = self.txn.open_table(PENDING).map_err(|e| error(e.into()))?;
        for id in previous.chunk_ids {
            chunks.remove(id).map_err(|e| error(e.into()))?;
            vectors.remove(id).map_err(|e| error(e.into()))?;
            pending.remove(id).map_err(|e| error(e.into()))?;
            self.removed.push(id);
        }
        let mut drift = self.txn.open_table(DRIFT).map_err(|e| error(e.into()))?;
        drift.remove(path).map_err(|e| error(e.into()))?;
        let mut base = self
            .txn
            .open_table(DRIFT_BASE)
            .map_err(|e| error(e.into()))?;
        base.remove(path).map_err(|e| error(e.into()))?;
        let mut data = self
            .txn
            .open_table(FILE_DATA)
            .map_err(|e| error(e.into()))?;
        data.retain_in((path, "")..(path, "\u{10FFFF}"), |_, _| false)
            .map_err(|e| error(e.into()))?;
        Ok(())
    }

    /// Makes every change of the batch durable and visible, at once, then brings the lexical
    /// index up to date. If that fails the batch is still committed, and the lexical index is
    /// rebuilt when next used.
    pub fn commit(self) -> Result<(), StoreError> {
        let path = &self.store.path;
        let error = |e: redb::Error| database_error(path, e);
        let generation = {
            let mut meta = self.txn.open_table(META).map_err(|e| error(e.into()))?;
            let generation = meta
                .get(meta_keys::GENERATION)
                .map_err(|e| error(e.into()))?
                .map_or(0, |v| decode_u64(v.value()))
                .wrapping_add(1);
            meta.insert(meta_keys::GENERATION, &generation.to_le_bytes()[..])
                .map_err(|e| error(e.into()))?;
            generation
        };
        let previous = generation.wrapping_sub(1);
        let followed = self.vector_changes(previous)?;
        self.txn.commit().map_err(|e| error(e.into()))?;
        if let Some(changes) = followed {
            self.store.follow_commit(changes, previous, generation);
        }
        let mut lexical = self.store.lexical();
        if let Some(index) = lexical.as_mut() {
            let added: Vec<&StoredChunk> = self.added.iter().collect();
            match index.apply(&self.removed, &added, generation) {
                // Damaged files under it: rebuilt from the database, this batch included.
                Err(StoreError::Damaged { detail, .. }) => {
                    self.store.replace_lexical(&mut lexical, &detail)?;
                }
                applied => applied?,
            }
        }
        Ok(())
    }

    /// The touched chunks' vectors as this batch leaves them, where this store's vector
    /// index in memory reflects the `previous` commit (else it catches up when next used).
    fn vector_changes(&self, previous: u64) -> Result<Option<VectorChanges>, StoreError> {
        let follows = self
            .store
            .vectors()
            .ann
            .as_ref()
            .is_some_and(|ann| ann.generation == previous);
        if !follows {
            return Ok(None);
        }
        let path = &self.store.path;
        let error = |e: redb::Error| database_error(path, e);
        let mut touched: Vec<u128> = self
            .removed
            .iter()
            .chain(&self.vectors_changed)
            .copied()
            .collect();
        touched.sort_unstable();
        touched.dedup();
        let chunks = self.txn.open_table(CHUNKS).map_err(|e| error(e.into()))?;
        let vectors = self.txn.open_table(VECTORS).map_err(|e| error(e.into()))?;
        let mut changes = VectorChanges {
            present: Vec::new(),
            absent: Vec::new(),
        };
        for id in touched {
            let vector = vectors.get(id).map_err(|e| error(e.into()))?;
            let chunk = chunks.get(id).map_err(|e| error(e.into()))?;
            match (vector, chunk) {
                (Some(vector), Some(chunk)) => {
                    let chunk = decode::<StoredChunk>(chunk.value())
                        .map_err(|message| self.store.corrupt(message))?;
                    changes.present.push((chunk, decode_vector(vector.value())));
                }
                _ => changes.absent.push(id),
            }
        }
        Ok(Some(changes))
    }
}
