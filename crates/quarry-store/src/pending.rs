//! Chunks stored before their vectors, and given them later: the two phases of an index run.
//!
//! [`Batch::put_file_pending`](crate::Batch::put_file_pending) stores a file's chunks with the
//! text to embed in `pending`; [`Batch::put_vectors`] moves them into `vectors`. A chunk is in
//! exactly one of the two tables, so the work left is `pending`, whatever was killed when.

use quarry_chunk::ChunkId;
use redb::{ReadableTable, Table, WriteTransaction};

use crate::StoreError;
use crate::drift::{DriftChunk, drift};
use crate::records::{
    CHUNKS, DRIFT, DRIFT_BASE, FILES, FileState, PENDING, StoredChunk, VECTORS, decode_vector,
    encode, encode_vector,
};
use crate::store::{Batch, Snapshot, database_error, decode};

/// What a batch stores for a new chunk.
pub(crate) enum Content<'a> {
    /// Its vector.
    Vector(&'a [f32]),
    /// The text to embed later.
    Pending(&'a str),
}

/// The embedded chunks of a file as text and vector: what its drift compares.
type Embedded = Vec<(String, Vec<f32>)>;

impl Batch<'_> {
    /// Gives stored chunks their vectors (the second phase of an index run), each leaving
    /// [`Snapshot::pending`]. A chunk that is not pending (its file changed or went since, or
    /// it has its vector) is skipped. A file whose chunks all have their vectors now gets its
    /// [`crate::Drift`]. Returns how many vectors were stored.
    pub fn put_vectors(&mut self, new: &[(ChunkId, &[f32])]) -> Result<usize, StoreError> {
        let path = &self.store.path().to_path_buf();
        let error = |e: redb::Error| database_error(path, e);
        let dimensions = self.store.settings().dimensions;
        if let Some((id, vector)) = new.iter().find(|(_, v)| v.len() != dimensions) {
            return Err(StoreError::Dimensions {
                chunk: id.0,
                expected: dimensions,
                found: vector.len(),
            });
        }
        let files = self.txn.open_table(FILES).map_err(|e| error(e.into()))?;
        let chunks = self.txn.open_table(CHUNKS).map_err(|e| error(e.into()))?;
        let mut vectors = self.txn.open_table(VECTORS).map_err(|e| error(e.into()))?;
        let mut pending = self.txn.open_table(PENDING).map_err(|e| error(e.into()))?;
        let mut paths = Vec::new();
        // In key order: chunk ids are hashes, and trees touched in order share their pages.
        let mut new: Vec<&(ChunkId, &[f32])> = new.iter().collect();
        new.sort_unstable_by_key(|(id, _)| id.0);
        for (id, vector) in new {
            if pending.remove(id.0).map_err(|e| error(e.into()))?.is_none() {
                continue;
            }
            vectors
                .insert(id.0, &encode_vector(vector)[..])
                .map_err(|e| error(e.into()))?;
            self.vectors_changed.push(id.0);
            let chunk = chunks.get(id.0).map_err(|e| error(e.into()))?;
            let chunk = chunk.map(|c| decode::<StoredChunk>(c.value())).transpose();
            match chunk.map_err(|message| self.store.corrupt(message))? {
                Some(chunk) => paths.push(chunk.path),
                None => {
                    return Err(self
                        .store
                        .corrupt(format!("pending chunk {:032x} is not stored", id.0)));
                }
            }
        }
        let stored = paths.len();
        paths.sort_unstable();
        paths.dedup();
        let mut drifts = DriftTables::open(&self.txn).map_err(error)?;
        for path in paths {
            let state = files.get(path.as_str()).map_err(|e| error(e.into()))?;
            let state = state.map(|v| decode::<FileState>(v.value())).transpose();
            if let Some(state) = state.map_err(|message| self.store.corrupt(message))? {
                drifts
                    .settle(&path, &state.chunk_ids, None, &chunks, &vectors)
                    .map_err(error)?;
            }
        }
        Ok(stored)
    }
}

impl Snapshot<'_> {
    /// The chunks stored without their vectors, with the text to embed, in id order.
    pub fn pending(&self) -> Result<Vec<(ChunkId, String)>, StoreError> {
        self.read(|txn| {
            let pending = match txn.open_table(PENDING) {
                Ok(table) => table,
                // An index written before the two phases, opened read-only: none pending.
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                Err(e) => return Err(e.into()),
            };
            let mut all = Vec::new();
            for entry in pending.iter()? {
                let (id, text) = entry?;
                all.push((ChunkId(id.value()), text.value().to_owned()));
            }
            Ok(all)
        })
    }
}

/// The drift tables of a write transaction.
pub(crate) struct DriftTables<'t> {
    drift: Table<'t, &'static str, &'static [u8]>,
    base: Table<'t, &'static str, &'static [u8]>,
}

impl<'t> DriftTables<'t> {
    pub fn open(txn: &'t WriteTransaction) -> Result<Self, redb::Error> {
        Ok(Self {
            drift: txn.open_table(DRIFT)?,
            base: txn.open_table(DRIFT_BASE)?,
        })
    }

    /// Records the drift of the file at `path`, whose chunks are now `ids`, once each has its
    /// vector; until then keeps what it drifts from. That is the file's embedded chunks
    /// before the first change still waiting for vectors: the stored baseline, or `before`
    /// (the chunks this change replaced; `None` when the file had none embedded yet, a new
    /// file's case, which has no drift).
    pub fn settle(
        &mut self,
        path: &str,
        ids: &[u128],
        before: Option<Embedded>,
        chunks: &impl ReadableTable<u128, &'static [u8]>,
        vectors: &impl ReadableTable<u128, &'static [u8]>,
    ) -> Result<(), redb::Error> {
        // A baseline that does not decode is dropped: drift is a report, not data to guard.
        let stored: Option<Embedded> = self
            .base
            .get(path)?
            .and_then(|v| decode::<Embedded>(v.value()).ok());
        let had_baseline = stored.is_some();
        let Some(base) = stored.or(before) else {
            return Ok(());
        };
        let mut complete = true;
        for &id in ids {
            complete &= vectors.get(id)?.is_some();
        }
        if complete {
            let after = read_chunks(chunks, vectors, ids)?;
            let drift = drift(path, &drift_view(&base), &drift_view(&after));
            self.drift.insert(path, &encode(&drift)[..])?;
            self.base.remove(path)?;
        } else if !had_baseline {
            self.base.insert(path, &encode(&base)[..])?;
        }
        Ok(())
    }
}

/// The text and vector of each chunk in `ids` that has its vector.
pub(crate) fn read_chunks(
    chunks: &impl ReadableTable<u128, &'static [u8]>,
    vectors: &impl ReadableTable<u128, &'static [u8]>,
    ids: &[u128],
) -> Result<Embedded, redb::Error> {
    let mut read = Vec::with_capacity(ids.len());
    for &id in ids {
        let (Some(chunk), Some(vector)) = (chunks.get(id)?, vectors.get(id)?) else {
            continue;
        };
        // A chunk that does not decode is reported elsewhere; here it only has no text.
        let text = decode::<StoredChunk>(chunk.value()).map_or_else(|_| String::new(), |c| c.text);
        read.push((text, decode_vector(vector.value())));
    }
    Ok(read)
}

fn drift_view(chunks: &[(String, Vec<f32>)]) -> Vec<DriftChunk<'_>> {
    chunks
        .iter()
        .map(|(text, vector)| DriftChunk { text, vector })
        .collect()
}
