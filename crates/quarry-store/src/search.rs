//! Searching the index: vectors through the HNSW graph (or an exact scan), text through the
//! lexical index, both with filters applied inside the search.

use quarry_chunk::ChunkId;

use crate::ann::{AnnIndex, NewVector, VectorIndexInfo};
use crate::best::sort_hits;
use crate::filter::Filter;
use crate::lexical::{LexicalFilter, LexicalIndex, LexicalWeights};
use crate::store::{Hit, Snapshot, Store, VectorChanges, VectorSaves, Vectors};
use crate::{StoreError, StoredChunk};

impl Store {
    /// The `k` chunks most similar to `query` (a normalised vector) among those `filter`
    /// admits, best first, ties broken by chunk id. A filtered search returns as many
    /// results as exist, up to `k`.
    ///
    /// Indexes under [`crate::EXACT_SCAN_BELOW`] vectors (see [`Store::set_exact_scan_below`])
    /// are scanned exactly, in memory: their vectors are read from the database by the first
    /// search and kept up to date with its commits. Larger ones are answered from the vector
    /// index that [`Store::checkpoint`] built, brought up to date with the database first
    /// (new vectors inserted, removed ones tombstoned), as [`Store::set_dense_strategy`]
    /// says: by default the graph with its calibrated beam, or an in-memory scan where that
    /// is cheaper. Until a checkpoint has built one, the database is scanned: a search never
    /// builds the graph.
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
        let embedded = snapshot.counts()?.embedded;
        // Never more than there are: `k` may come from a user, and sizes the buffers below.
        let k = k.min(usize::try_from(embedded).unwrap_or(usize::MAX));
        if k == 0 {
            return Ok(Vec::new());
        }
        let mut vectors = self.vectors();
        let ann = if embedded < self.exact_scan_below {
            current_rows(self, &mut vectors, &snapshot)?
        } else {
            match current_ann(self, &mut vectors, &snapshot, Build::Never)? {
                Some(ann) => ann,
                None => {
                    drop(vectors);
                    return snapshot.search_exact(query, k, filter);
                }
            }
        };
        let mask: Option<Vec<bool>> = (!filter.is_empty()).then(|| {
            let paths = ann.paths().admitted(|p| filter.admits_path(p));
            let languages = ann
                .languages()
                .admitted(|l| filter.admits_language_named(l));
            ann.slots()
                .iter()
                .map(|s| s.alive && paths[s.path as usize] && languages[s.language as usize])
                .collect()
        });
        let mut hits = ann.search(query, k, mask.as_deref(), self.dense_strategy);
        sort_hits(&mut hits);
        Ok(hits)
    }

    /// The vector index as of the last commit (loaded from disk and brought up to date if
    /// this process has not yet used it), or `None` where the index is small enough to be
    /// scanned or no checkpoint has built one yet.
    pub fn vector_index(&self) -> Result<Option<VectorIndexInfo>, StoreError> {
        let snapshot = self.snapshot()?;
        if snapshot.counts()?.embedded < self.exact_scan_below {
            return Ok(None);
        }
        let mut vectors = self.vectors();
        Ok(current_ann(self, &mut vectors, &snapshot, Build::Never)?.map(AnnIndex::info))
    }

    /// The `k` chunks that best match `query` by BM25 over symbol names, containers, paths,
    /// comments and text with the default [`LexicalWeights`], among those `filter` admits,
    /// best first, ties broken by chunk id.
    ///
    /// A reader sees the writer's lexical index as of its last commit, which follows the
    /// database's by a moment; chunks the database no longer holds are left out.
    pub fn search_lexical(
        &self,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<Hit>, StoreError> {
        self.search_lexical_with(query, k, filter, &LexicalWeights::default())
    }

    /// [`Store::search_lexical`] with each field weighted by `weights`.
    pub fn search_lexical_with(
        &self,
        query: &str,
        k: usize,
        filter: &Filter,
        weights: &LexicalWeights,
    ) -> Result<Vec<Hit>, StoreError> {
        self.lexical_hits(Unit::Chunks, query, k, filter, weights)
    }

    /// The `k` files that best match `query` by BM25 over each whole file (its live chunks
    /// as one document; the fields weighted by `weights`), among the chunks `filter` admits,
    /// best first, each as a hit with the file's score: of the first of `ranked` (a chunk
    /// search's hits, best first) the file holds, else of its chunk that holds the most of
    /// the query. A large file that answers a question across many chunks ranks here where
    /// each of its chunks alone ranks low.
    pub fn search_lexical_files(
        &self,
        query: &str,
        k: usize,
        filter: &Filter,
        weights: &LexicalWeights,
        ranked: &[Hit],
    ) -> Result<Vec<Hit>, StoreError> {
        let ranked: Vec<u128> = ranked.iter().map(|hit| hit.id.0).collect();
        self.lexical_hits(Unit::Files(&ranked), query, k, filter, weights)
    }

    fn lexical_hits(
        &self,
        unit: Unit<'_>,
        query: &str,
        k: usize,
        filter: &Filter,
        weights: &LexicalWeights,
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
        let mut lexical = self.lexical();
        let found =
            match self.lexical_search(&mut lexical, unit, query, k, &lexical_filter, weights) {
                // A writer rebuilds its own index from the database at once, and searches again.
                Err(StoreError::Damaged { detail, .. }) if self.is_writer() => {
                    self.replace_lexical(&mut lexical, &detail)?;
                    self.lexical_search(&mut lexical, unit, query, k, &lexical_filter, weights)?
                }
                // A reader opens it afresh once: it may have read files a writer's merge had just
                // replaced (tantivy deletes them without regard for other processes).
                Err(StoreError::Damaged { .. }) => {
                    *lexical = None;
                    self.lexical_search(&mut lexical, unit, query, k, &lexical_filter, weights)?
                }
                found => found?,
            };
        drop(lexical);
        let Some(found) = found else {
            if snapshot.counts()?.chunks > 0 {
                return Err(StoreError::Damaged {
                    path: self.lexical_dir(),
                    what: "the lexical index".into(),
                    detail: "it is missing (no meta.json), while the database holds chunks".into(),
                });
            }
            return Ok(Vec::new());
        };
        let ids: Vec<ChunkId> = found.iter().map(|&(id, _)| ChunkId(id)).collect();
        let present = snapshot.contains_chunks(&ids)?;
        Ok(found
            .into_iter()
            .zip(present)
            .filter(|(_, present)| *present)
            .map(|((id, score), _)| Hit {
                id: ChunkId(id),
                score,
            })
            .collect())
    }

    /// The lexical index brought up to date (a writer's with the database, a reader's with
    /// the writer's last commit) and searched; `None` where a reader finds none.
    fn lexical_search(
        &self,
        lexical: &mut Option<LexicalIndex>,
        unit: Unit<'_>,
        query: &str,
        k: usize,
        filter: &LexicalFilter,
        weights: &LexicalWeights,
    ) -> Result<Option<Vec<(u128, f32)>>, StoreError> {
        if self.is_writer() {
            self.sync_lexical(lexical)?;
        } else if let Some(lexical) = lexical.as_mut() {
            lexical.refresh()?;
        } else {
            // The writer may have created (or repaired) it since this reader looked.
            *lexical = LexicalIndex::open_reader(&self.lexical_dir())?;
        }
        lexical
            .as_ref()
            .map(|lexical| match unit {
                Unit::Chunks => lexical.search(query, k, filter, weights),
                Unit::Files(ranked) => lexical.search_files(query, k, filter, weights, ranked),
            })
            .transpose()
    }

    /// Brings the vector index up to date with the database and saves it, so that searches
    /// (in this process and in the next to open the index) use it: under
    /// [`Store::set_exact_scan_below`] vectors, the rows that searches scan, in one file;
    /// above, the graph, built and calibrated when the index has grown large enough to need
    /// one, or when tombstones have passed [`crate::TOMBSTONE_REBUILD_FRACTION`] of its
    /// nodes. Call it when an indexing run ends; a writer only. Building takes a while (about
    /// a minute per 100,000 vectors of a real model on two cores); catching up takes time in
    /// proportion to the change.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        if !self.is_writer() {
            return Err(StoreError::ReadOnly {
                path: self.path().to_path_buf(),
            });
        }
        let snapshot = self.snapshot()?;
        let mut vectors = self.vectors();
        let (dir, rows) = if snapshot.counts()?.embedded < self.exact_scan_below {
            let rows = current_rows(self, &mut vectors, &snapshot)?;
            // A shrunk index's graph stays as it is saved; rows are saved as rows.
            if rows.has_graph() {
                return Ok(());
            }
            (self.rows_dir(), true)
        } else {
            current_ann(self, &mut vectors, &snapshot, Build::IfNeeded)?;
            (self.ann_dir(), false)
        };
        let generation = snapshot.generation()?;
        let due = match self.vector_saves {
            VectorSaves::EveryChange => vectors.saved != Some(generation),
            VectorSaves::AfterChanges(limit) => vectors.saved.is_none() || vectors.unsaved >= limit,
        };
        if !due {
            return Ok(());
        }
        let ann = vectors.ann.as_ref().expect("brought up to date above");
        let saved = match rows {
            true => ann.save_rows(&dir),
            false => ann.save(&dir),
        };
        saved.map_err(|message| StoreError::Ann { path: dir, message })?;
        vectors.saved = Some(generation);
        vectors.unsaved = 0;
        Ok(())
    }

    /// Brings the vector index in memory from commit `previous` to `generation` by what that
    /// commit changed, rather than by comparing every stored vector's key with it (as a
    /// search does after another process's commits): a long-lived writer's per-edit cost
    /// then grows with the edit, not with the index. Nothing is done where the index in
    /// memory reflects another commit (a search that came between catches it up).
    pub(crate) fn follow_commit(&self, changes: VectorChanges, previous: u64, generation: u64) {
        let mut vectors = self.vectors();
        let Some(ann) = vectors
            .ann
            .as_mut()
            .filter(|ann| ann.generation == previous)
        else {
            return;
        };
        let mut changed = 0;
        for id in changes.absent {
            if ann.contains(id) {
                ann.remove(id);
                changed += 1;
            }
        }
        let mut added: Vec<(StoredChunk, Vec<f32>)> = changes
            .present
            .into_iter()
            .filter(|(chunk, _)| !ann.contains(chunk.id))
            .collect();
        changed += added.len();
        ann.insert(new_vectors(&mut added));
        ann.generation = generation;
        vectors.unsaved += changed;
    }

    /// Rebuilds the lexical index from the database if it does not reflect the last commit
    /// (the process died between the two, or updating it failed); returns how many chunks it
    /// indexed, if it rebuilt.
    pub(crate) fn sync_lexical(
        &self,
        lexical: &mut Option<LexicalIndex>,
    ) -> Result<Option<usize>, StoreError> {
        let snapshot = self.snapshot()?;
        let generation = snapshot.generation()?;
        let Some(lexical) = lexical.as_mut() else {
            return Ok(None);
        };
        let found = lexical.generation();
        if found == Some(generation) {
            return Ok(None);
        }
        let mut chunks = Vec::new();
        snapshot.for_each_chunk(|chunk| chunks.push(chunk))?;
        let count = chunks.len();
        lexical.rebuild(chunks.into_iter(), generation)?;
        if found.is_some() {
            self.note(format!(
                "the lexical index was behind the database; rebuilt it ({count} chunks)"
            ));
        }
        Ok(Some(count))
    }

    /// Replaces this writer's lexical index, found damaged (`why`), with one rebuilt from the
    /// database, and says so in [`Store::notes`].
    pub(crate) fn replace_lexical(
        &self,
        lexical: &mut Option<LexicalIndex>,
        why: &str,
    ) -> Result<(), StoreError> {
        // The old writer lets go of tantivy's lock before the directory is wiped.
        *lexical = None;
        let dir = self.lexical_dir();
        *lexical = Some(LexicalIndex::recreate(&dir)?);
        let chunks = self.sync_lexical(lexical)?.unwrap_or(0);
        self.note_lexical_rebuilt(why, chunks);
        Ok(())
    }

    /// Says in [`Store::notes`] that the lexical index, damaged (`why`), was rebuilt from the
    /// database with `chunks` chunks.
    pub(crate) fn note_lexical_rebuilt(&self, why: &str, chunks: usize) {
        self.note(format!(
            "{}: the lexical index was damaged ({why}); rebuilt it from the database ({chunks} \
             chunks)",
            self.lexical_dir().display()
        ));
    }
}

/// Whether [`current_ann`] may build the graph.
#[derive(Clone, Copy, PartialEq)]
enum Build {
    /// Searches: use what exists (a missing graph is `None`, tombstones are tolerated).
    Never,
    /// Checkpoints: build it when missing, unreadable or past the tombstone limit.
    IfNeeded,
}

/// The vector index, brought up to date with `snapshot`: loaded from disk if this process
/// has none yet, then given the vectors added since and told of those removed. `Build`
/// says whether a missing or worn-out graph is (re)built here.
fn current_ann<'d>(
    store: &Store,
    vectors: &'d mut Vectors,
    snapshot: &Snapshot<'_>,
    build_graph: Build,
) -> Result<Option<&'d AnnIndex>, StoreError> {
    let generation = snapshot.generation()?;
    if vectors.ann.is_none() && !vectors.unreadable {
        let dir = store.ann_dir();
        match AnnIndex::load(&dir, snapshot.dimensions()) {
            Ok(Some(ann)) => {
                vectors.saved = Some(ann.generation);
                vectors.unsaved = 0;
                vectors.ann = Some(ann);
            }
            Ok(None) => {}
            Err(message) => {
                vectors.unreadable = true;
                store.note(format!(
                    "{}: {message}; searching by exact scan until the next checkpoint \
                     rebuilds the vector index from the database",
                    dir.display()
                ));
            }
        }
    }
    let mut ann = vectors.ann.take();
    if let Some(ann) = ann.as_mut().filter(|ann| ann.generation != generation) {
        vectors.unsaved += catch_up(ann, snapshot)?;
    }
    if build_graph == Build::IfNeeded
        && ann
            .as_ref()
            .is_none_or(|ann| !ann.has_graph() || ann.needs_rebuild())
    {
        ann = Some(build(snapshot)?);
        vectors.unreadable = false;
        // No copy on disk is of this graph.
        vectors.saved = None;
    }
    let Some(ann) = ann else {
        return Ok(None);
    };
    let ann = vectors.ann.insert(ann);
    ann.generation = generation;
    Ok(Some(ann))
}

/// For an index under [`Store::set_exact_scan_below`] vectors: its vectors in memory (a
/// scan-only [`AnnIndex`], or the graph of an index that has shrunk), read on first use from
/// the rows the last checkpoint saved, or else from the database, and brought up to date
/// with `snapshot`, so that a search scans rows rather than decoding every vector again.
fn current_rows<'d>(
    store: &Store,
    vectors: &'d mut Vectors,
    snapshot: &Snapshot<'_>,
) -> Result<&'d AnnIndex, StoreError> {
    let generation = snapshot.generation()?;
    let saved = match vectors.ann.take() {
        Some(ann) => Some(ann),
        None => {
            let dir = store.rows_dir();
            match AnnIndex::load_rows(&dir, snapshot.dimensions()) {
                Ok(rows) => {
                    vectors.saved = rows.as_ref().map(|rows| rows.generation);
                    vectors.unsaved = 0;
                    rows
                }
                Err(message) => {
                    store.note(format!(
                        "{}: {message}; reading the vectors from the database until the next \
                         checkpoint saves them again",
                        dir.display()
                    ));
                    None
                }
            }
        }
    };
    let ann = match saved {
        Some(mut ann) => {
            if ann.generation != generation {
                vectors.unsaved += catch_up(&mut ann, snapshot)?;
            }
            ann
        }
        None => {
            vectors.saved = None;
            let mut entries = embedded(snapshot)?;
            AnnIndex::scan_only(snapshot.dimensions(), new_vectors(&mut entries), generation)
        }
    };
    let ann = vectors.ann.insert(ann);
    ann.generation = generation;
    Ok(ann)
}

/// What `entries` hold, as vectors to insert (their vectors taken).
fn new_vectors(entries: &mut [(StoredChunk, Vec<f32>)]) -> Vec<NewVector<'_>> {
    entries
        .iter_mut()
        .map(|(chunk, vector)| NewVector {
            id: chunk.id,
            path: &chunk.path,
            language: chunk.language.name(),
            vector: std::mem::take(vector),
        })
        .collect()
}

fn build(snapshot: &Snapshot<'_>) -> Result<AnnIndex, StoreError> {
    let mut entries = embedded(snapshot)?;
    Ok(AnnIndex::build(
        snapshot.dimensions(),
        new_vectors(&mut entries),
        0,
    ))
}

/// Every embedded chunk of `snapshot` with its vector.
fn embedded(snapshot: &Snapshot<'_>) -> Result<Vec<(StoredChunk, Vec<f32>)>, StoreError> {
    let mut entries = Vec::new();
    snapshot.for_each_embedded(|chunk, vector| entries.push((chunk, vector)))?;
    Ok(entries)
}

/// Tombstones what the database no longer holds and inserts what it gained; returns how
/// many vectors it removed and inserted.
fn catch_up(ann: &mut AnnIndex, snapshot: &Snapshot<'_>) -> Result<usize, StoreError> {
    let stored = snapshot.embedded_ids()?;
    let gone: Vec<u128> = ann.ids().filter(|id| !stored.contains(id)).collect();
    let mut changed = gone.len();
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
    changed += added.len();
    ann.insert(new_vectors(&mut added));
    Ok(changed)
}

/// What a lexical search ranks.
#[derive(Debug, Clone, Copy)]
enum Unit<'a> {
    Chunks,
    /// Files, each answered by the first of these chunk ids it holds.
    Files(&'a [u128]),
}
