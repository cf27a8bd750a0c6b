//! Searching the index: vectors through the HNSW graph (or an exact scan), text through the
//! lexical index, both with filters applied inside the search.

use quarry_chunk::ChunkId;

use crate::ann::{AnnIndex, EF_SEARCH, NewVector};
use crate::filter::Filter;
use crate::lexical::{LexicalFilter, LexicalIndex};
use crate::store::{Derived, Hit, Snapshot, Store};
use crate::{StoreError, StoredChunk};

/// A filter admitting less than this fraction of the chunks is answered by an exact scan of
/// those chunks: the graph would have to be explored too widely to find them.
const SCAN_BELOW_FRACTION: f64 = 0.1;
/// The widest graph search before falling back to a scan.
const MAX_EF: usize = 4096;

impl Store {
    /// The `k` chunks most similar to `query` (a normalised vector) among those `filter`
    /// admits, best first, ties broken by chunk id.
    ///
    /// Indexes under [`crate::EXACT_SCAN_BELOW`] vectors (see [`Store::set_exact_scan_below`]),
    /// and filters admitting under a tenth of
    /// them, are answered by an exact scan; larger ones by the HNSW graph, brought up to date
    /// with the database first. A filtered search returns as many results as exist, up to `k`.
    pub fn search_dense(
        &self,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<Hit>, StoreError> {
        let dimensions = self.settings().dimensions;
        if query.len() != dimensions {
            return Err(StoreError::QueryDimensions {
                expected: dimensions,
                found: query.len(),
            });
        }
        let snapshot = self.snapshot()?;
        if k == 0 || snapshot.counts()?.chunks < self.exact_scan_below {
            return snapshot.search_exact(query, k, filter);
        }
        let mut derived = self.derived();
        let ann = current_ann(self, &mut derived, &snapshot)?;
        let slots = ann.slots();
        let mask: Option<Vec<bool>> = (!filter.is_empty()).then(|| {
            let paths = ann.paths().admitted(|p| filter.admits_path(p));
            let languages = ann.languages().admitted(|l| filter.admits_language(l));
            slots
                .iter()
                .map(|s| s.alive && paths[s.path as usize] && languages[s.language as usize])
                .collect()
        });
        let admitted = mask
            .as_ref()
            .map_or(ann.len(), |m| m.iter().filter(|&&a| a).count());
        let scan = || {
            let ids = slots
                .iter()
                .enumerate()
                .filter_map(|(i, slot)| mask.as_ref().is_none_or(|m| m[i]).then_some(slot.id));
            snapshot.search_exact_among(query, k, ids)
        };
        let fraction = admitted as f64 / ann.len().max(1) as f64;
        if fraction < SCAN_BELOW_FRACTION {
            return scan();
        }
        let ef = ((EF_SEARCH.max(k) as f64 / fraction) as usize).min(MAX_EF);
        let mut hits: Vec<Hit> = ann
            .search(query, k, ef, mask.as_deref())
            .into_iter()
            .map(|(id, score)| Hit {
                id: ChunkId(id),
                score,
            })
            .collect();
        if hits.len() < k.min(admitted) {
            return scan();
        }
        sort_hits(&mut hits);
        hits.truncate(k);
        Ok(hits)
    }

    /// The `k` chunks that best match `query` by BM25 over symbol names, paths and text,
    /// among those `filter` admits, best first, ties broken by chunk id.
    ///
    /// A reader sees the writer's lexical index as of its last commit, which follows the
    /// database's by a moment; chunks the database no longer holds are left out.
    pub fn search_lexical(
        &self,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<Hit>, StoreError> {
        let snapshot = self.snapshot()?;
        let lexical_filter = LexicalFilter {
            paths: filter
                .constrains_paths()
                .then(|| snapshot.paths())
                .transpose()?
                .map(|paths| {
                    paths
                        .into_iter()
                        .filter(|p| filter.admits_path(p))
                        .collect()
                }),
            languages: filter.languages().to_vec(),
            excluded_file: filter.excluded_file().map(str::to_owned),
        };
        let mut derived = self.derived();
        if self.is_writer() {
            self.sync_lexical(&mut derived)?;
        } else if let Some(lexical) = derived.lexical.as_mut() {
            lexical.refresh()?;
        } else {
            // The writer may have created it since this reader opened.
            derived.lexical = LexicalIndex::open_reader(&self.lexical_dir())?;
        }
        let Some(lexical) = derived.lexical.as_ref() else {
            return Ok(Vec::new());
        };
        let mut hits = Vec::with_capacity(k);
        for (id, score) in lexical.search(query, k, &lexical_filter)? {
            if snapshot.chunk(ChunkId(id))?.is_some() {
                hits.push(Hit {
                    id: ChunkId(id),
                    score,
                });
            }
        }
        Ok(hits)
    }

    /// Saves the vector index to disk if it is behind the database, building it first if the
    /// index has grown large enough to need one, so the next process to open the index
    /// starts with it. Call it when an indexing run ends; a writer only.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        if !self.is_writer() {
            return Err(StoreError::ReadOnly {
                path: self.path().to_path_buf(),
            });
        }
        let snapshot = self.snapshot()?;
        if snapshot.counts()?.chunks < self.exact_scan_below {
            return Ok(());
        }
        let mut derived = self.derived();
        let generation = current_ann(self, &mut derived, &snapshot)?.generation;
        if derived.ann_saved == Some(generation) {
            return Ok(());
        }
        let dir = self.ann_dir();
        if let Some(ann) = derived.ann.as_ref() {
            ann.save(&dir)
                .map_err(|message| StoreError::Ann { path: dir, message })?;
        }
        derived.ann_saved = Some(generation);
        Ok(())
    }

    /// Rebuilds the lexical index from the database if it does not reflect the last commit
    /// (the process died between the two, or updating it failed).
    pub(crate) fn sync_lexical(&self, derived: &mut Derived) -> Result<(), StoreError> {
        let snapshot = self.snapshot()?;
        let generation = snapshot.generation()?;
        let Some(lexical) = derived.lexical.as_mut() else {
            return Ok(());
        };
        let found = lexical.generation();
        if found == Some(generation) {
            return Ok(());
        }
        let mut chunks = Vec::new();
        snapshot.for_each_chunk(|chunk, _| chunks.push(chunk))?;
        let count = chunks.len();
        lexical.rebuild(chunks.into_iter(), generation)?;
        if found.is_some() {
            derived.notes.push(format!(
                "the lexical index was behind the database; rebuilt it ({count} chunks)"
            ));
        }
        Ok(())
    }
}

/// The vector index, brought up to date with `snapshot`: loaded from disk if this process
/// has none yet, then given the vectors added since and told of those removed; rebuilt when
/// it is missing, unreadable or full of tombstones.
fn current_ann<'d>(
    store: &Store,
    derived: &'d mut Derived,
    snapshot: &Snapshot<'_>,
) -> Result<&'d AnnIndex, StoreError> {
    let generation = snapshot.generation()?;
    if derived.ann.is_none() {
        let dir = store.ann_dir();
        match AnnIndex::load(&dir, snapshot.dimensions()) {
            Ok(Some(ann)) => {
                derived.ann_saved = Some(ann.generation);
                derived.ann = Some(ann);
            }
            Ok(None) => {}
            Err(message) => derived.notes.push(format!(
                "{}: {message}; rebuilt the vector index from the database",
                dir.display()
            )),
        }
    }
    let ann = match derived.ann.take() {
        Some(ann) if ann.generation == generation => ann,
        Some(mut ann) => {
            catch_up(&mut ann, snapshot)?;
            if ann.needs_rebuild() {
                build(snapshot)?
            } else {
                ann
            }
        }
        None => build(snapshot)?,
    };
    let ann = derived.ann.insert(ann);
    ann.generation = generation;
    Ok(ann)
}

fn build(snapshot: &Snapshot<'_>) -> Result<AnnIndex, StoreError> {
    let mut entries: Vec<(StoredChunk, Vec<f32>)> = Vec::new();
    snapshot.for_each_chunk(|chunk, vector| entries.push((chunk, vector)))?;
    let new = entries
        .iter_mut()
        .map(|(chunk, vector)| NewVector {
            id: chunk.id,
            path: &chunk.path,
            language: &chunk.language,
            vector: std::mem::take(vector),
        })
        .collect();
    Ok(AnnIndex::build(snapshot.dimensions(), new, 0))
}

/// Tombstones what the database no longer holds and inserts what it gained.
fn catch_up(ann: &mut AnnIndex, snapshot: &Snapshot<'_>) -> Result<(), StoreError> {
    let stored = snapshot.chunk_ids()?;
    let gone: Vec<u128> = ann.ids().filter(|id| !stored.contains(id)).collect();
    for id in gone {
        ann.remove(id);
    }
    let present: std::collections::HashSet<u128> = ann.ids().collect();
    let mut added = Vec::new();
    for id in stored.into_iter().filter(|id| !present.contains(id)) {
        let (Some(chunk), Some(vector)) =
            (snapshot.chunk(ChunkId(id))?, snapshot.vector(ChunkId(id))?)
        else {
            continue;
        };
        added.push((chunk, vector));
    }
    added.sort_by_key(|(chunk, _)| chunk.id);
    ann.insert(
        added
            .iter_mut()
            .map(|(chunk, vector)| NewVector {
                id: chunk.id,
                path: &chunk.path,
                language: &chunk.language,
                vector: std::mem::take(vector),
            })
            .collect(),
    );
    Ok(())
}

/// Best first: higher score, then lower id.
fn sort_hits(hits: &mut [Hit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
}
