//! Indexing: bring the store in step with the working tree.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use quarry_changes::{GitUse, TreeFile, content_hash};
use quarry_chunk::{Chunk, ChunkId, Chunker, DEFINITIONS_VERSION, MAX_CHUNKS_PER_FILE};
use quarry_graph::{FileImports, FileKey, FileScore, GraphBuilder, PageRankConfig};
use quarry_store::{Check, FileState, IndexPart, PROJECT_SCOPE, Store, scope_of};
use rayon::prelude::*;

use crate::file_data::{
    DEFINITIONS_DATA, IMPORTS_DATA, LINKS_DATA, PAGERANK_DATA, decode_file_data, set_file_data,
};
use crate::symbols::FileDefinitions;
use crate::{Engine, EngineError};
use cached::Vectors;

mod cached;
mod plan;

pub use cached::VectorCacheOptions;
pub(crate) use plan::Plan;

/// What an indexing run is doing, for progress bars.
#[derive(Debug, Clone, PartialEq)]
pub enum IndexEvent {
    /// Change detection finished: this many files are to be read and chunked.
    Changes {
        /// Files to (re-)read.
        to_read: usize,
        /// Files to drop from the index (deleted, or renamed away).
        to_remove: usize,
    },
    /// Files were chunked and committed: searchable by their words.
    Chunked {
        /// Files chunked so far, of `total`.
        files: usize,
        /// Files to chunk in all.
        total: usize,
    },
    /// The first phase is committed: every file is searchable by its words, and
    /// `pending` chunks wait for their vectors.
    Searchable {
        /// Chunks without their vector.
        pending: usize,
    },
    /// Chunks were embedded and committed.
    Embedded {
        /// Chunks embedded so far, of `total`.
        chunks: usize,
        /// Chunks to embed in all.
        total: usize,
    },
    /// The import graph is being rebuilt.
    Graph,
    /// The vector index is being brought up to date and saved.
    Checkpoint,
}

/// What an indexing run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexReport {
    /// Files added, modified and renamed (read and chunked again).
    pub files_read: usize,
    /// Files removed from the index.
    pub files_removed: usize,
    /// Files whose metadata alone changed.
    pub files_touched: usize,
    /// Files the index already had as they are.
    pub files_unchanged: usize,
    /// Files not chunked, with why (binary, generated, ...).
    pub skipped: Vec<(String, String)>,
    /// Chunks given their vectors in this run.
    pub chunks_embedded: usize,
    /// Of those, the chunks whose vectors came from the machine's vector cache (embedded
    /// before, by any index on this machine, for the same model and precision).
    pub chunks_from_cache: usize,
    /// Chunks of changed files the index already held (with their vector, or waiting for it).
    pub chunks_reused: usize,
    /// Chunks still without their vector after the run (only after [`Engine::index_files`]).
    pub chunks_pending: usize,
    /// Wall time until the first phase was committed, when every file was searchable by
    /// its words.
    pub searchable_after: Duration,
    /// Files and edges of the import graph, if it was rebuilt.
    pub graph: Option<(usize, usize)>,
    /// What git contributed to change detection.
    pub git: Option<GitUse>,
    /// Files that could not be read, one line each (they are retried next run), and files
    /// cut at [`MAX_CHUNKS_PER_FILE`] (they are not, until they change).
    pub warnings: Vec<String>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

/// What [`Engine::embed_pending_while`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Embedded {
    /// Chunks given their vectors and committed.
    pub embedded: usize,
    /// Of those, the chunks whose vectors came from the machine's vector cache.
    pub from_cache: usize,
    /// Whether every chunk has its vector and the vector index is saved (else it stopped
    /// when asked to).
    pub finished: bool,
    /// What went wrong with the vector cache, one line each (the run went on without it).
    pub warnings: Vec<String>,
}

impl IndexReport {
    /// Adds what a second phase did.
    pub fn add_embedded(&mut self, embedded: Embedded) {
        self.chunks_embedded += embedded.embedded;
        self.chunks_from_cache += embedded.from_cache;
        self.warnings.extend(embedded.warnings);
    }
}

/// What the first phase of an index run has to do, planned against one handle.
struct FirstPhase {
    /// The files as the index has them.
    indexed: Vec<FileState>,
    plan: Plan,
    /// Whether the import graph has been ranked: it is ranked again only when files come or
    /// go or a file's imports change, or when it never was (by this
    /// [`quarry_graph::RESOLUTION_VERSION`]).
    ranked: bool,
    /// The commit checked out, where the index records another.
    new_head: Option<String>,
}

impl FirstPhase {
    fn writes_nothing(&self) -> bool {
        self.plan.is_empty() && self.ranked && self.new_head.is_none()
    }
}

/// Files read and chunked in parallel, then stored in one commit.
const FILES_PER_COMMIT: usize = 256;
/// Batches of the second phase whose texts the vector cache is asked for at once.
const CACHE_WINDOW_BATCHES: usize = 64;

/// One file read and chunked.
struct ReadFile {
    state: FileState,
    chunks: Vec<Chunk>,
    /// What it imports, for a project file the chunker parsed.
    imports: Option<FileImports>,
    /// What it defines.
    definitions: Vec<quarry_chunk::Definition>,
    /// The warning that it gave more chunks than [`MAX_CHUNKS_PER_FILE`], where it did.
    cut: Option<String>,
}

impl Engine {
    /// Brings the index in step with the working tree, in two phases:
    /// [`Engine::index_files`] (files that changed since the last run are chunked again and
    /// stored, deleted ones dropped, the import graph recomputed: searchable by words), then
    /// [`Engine::embed_pending`] (the chunks without vectors are embedded and the vector
    /// index saved).
    ///
    /// Each phase commits as it goes, so an interrupted run keeps what it committed and the
    /// next run resumes from there, embedding nothing twice. The run holds the index's
    /// writer lock throughout: it fails at once with [`quarry_store::StoreError::Locked`]
    /// while another writer works, and searches read beside it.
    pub fn index(&self, progress: &mut dyn FnMut(IndexEvent)) -> Result<IndexReport, EngineError> {
        let started = Instant::now();
        // Chunked with another model's chunker, the files would not match the index; without
        // the model, the second phase could not run (`index_files` is the first alone).
        self.chunker()?;
        self.embedder()?;
        self.writing(|writer| {
            let phase = self.first_phase(writer, None)?;
            let mut report = self.index_files_in(writer, phase, started, progress)?;
            report.add_embedded(self.embed_pending_in(writer, progress, &mut || true)?);
            report.chunks_pending = 0;
            report.elapsed = started.elapsed();
            Ok(report)
        })
    }

    /// The first phase of [`Engine::index`]: files that changed since the last run (by `git
    /// diff`, then mtime and size, then content hash) are read, chunked and stored with
    /// their new chunks waiting for vectors; deleted files are dropped; the import graph and
    /// its PageRank are recomputed when anything changed. No model runs. When it returns,
    /// every file is searchable by its words, and [`Engine::embed_pending`] has
    /// `chunks_pending` chunks to embed.
    ///
    /// With nothing to write it takes no lock; otherwise it holds the writer lock, and fails
    /// with [`quarry_store::StoreError::Locked`] while another writer works.
    pub fn index_files(
        &self,
        progress: &mut dyn FnMut(IndexEvent),
    ) -> Result<IndexReport, EngineError> {
        self.index_files_of(None, progress)
    }

    /// [`Engine::index_files`] over only `paths` (absolute: files or directories of the
    /// project or a library, present or gone), as a file-system watcher reported them: only
    /// they are walked and compared with the index, whatever the size of the tree (see
    /// [`quarry_changes::detect_changes_in`]). A path that is a source's root, or above one,
    /// has that source walked whole.
    pub fn index_paths(
        &self,
        paths: &[PathBuf],
        progress: &mut dyn FnMut(IndexEvent),
    ) -> Result<IndexReport, EngineError> {
        self.index_files_of(Some(paths), progress)
    }

    fn index_files_of(
        &self,
        scope: Option<&[PathBuf]>,
        progress: &mut dyn FnMut(IndexEvent),
    ) -> Result<IndexReport, EngineError> {
        let started = Instant::now();
        self.chunker()?;
        let store = self.current_store()?;
        let phase = self.first_phase(&store, scope)?;
        // A damaged lexical index is repaired (rebuilt from the database) by the writer's
        // open, so it needs the writer even where nothing else is to be written.
        if phase.writes_nothing() && !lexical_needs_repair(&store)? {
            return self.index_files_in(&store, phase, started, progress);
        }
        // Planned again under the lock: another writer may have moved the index on.
        self.writing(|writer| {
            let phase = self.first_phase(writer, scope)?;
            self.index_files_in(writer, phase, started, progress)
        })
    }

    /// What the first phase has to do to `store`'s index, over `scope` (else every file).
    fn first_phase(
        &self,
        store: &Store,
        scope: Option<&[PathBuf]>,
    ) -> Result<FirstPhase, EngineError> {
        let indexed = store.files()?;
        let mut plan = self.plan(store, &indexed, scope)?;
        self.plan_definitions(store, &indexed, &mut plan)?;
        // Ranked by this version's resolution of imports, else (or unreadable) ranked again.
        let ranked = match indexed.iter().find(|f| !f.chunk_ids.is_empty()) {
            Some(file) => (store.snapshot()?.file_data(&file.path, PAGERANK_DATA)?)
                .and_then(|bytes| {
                    decode_file_data::<FileScore>(&file.path, PAGERANK_DATA, &bytes).ok()
                })
                .is_some_and(|score| score.resolution == quarry_graph::RESOLUTION_VERSION),
            None => false,
        };
        let new_head = match quarry_changes::head_commit(&self.root) {
            Some(head) if store.indexed_commit()?.as_deref() != Some(head.as_str()) => Some(head),
            _ => None,
        };
        Ok(FirstPhase {
            indexed,
            plan,
            ranked,
            new_head,
        })
    }

    /// Carries out `phase` on `store`, which may be the engine's reader where the phase
    /// writes nothing.
    fn index_files_in(
        &self,
        store: &Store,
        phase: FirstPhase,
        started: Instant,
        progress: &mut dyn FnMut(IndexEvent),
    ) -> Result<IndexReport, EngineError> {
        let FirstPhase {
            indexed,
            plan,
            ranked,
            new_head,
        } = phase;
        let mut report = IndexReport {
            files_unchanged: plan.unchanged,
            files_touched: plan.touched.len(),
            git: plan.git.clone(),
            warnings: plan.warnings.clone(),
            ..IndexReport::default()
        };
        let to_read: Vec<&(PathBuf, TreeFile)> = plan.added.iter().chain(&plan.modified).collect();
        progress(IndexEvent::Changes {
            to_read: to_read.len(),
            to_remove: plan.removed.len(),
        });

        if !plan.removed.is_empty() || !plan.touched.is_empty() {
            // A checkout can touch every file: look records up, do not search for them.
            let by_path: HashMap<&str, &FileState> =
                indexed.iter().map(|s| (s.path.as_str(), s)).collect();
            let mut batch = store.write()?;
            for path in &plan.removed {
                batch.remove_file(path)?;
            }
            for (file, hash) in &plan.touched {
                if let Some(old) = by_path.get(file.path.as_str()) {
                    let state = FileState {
                        content_hash: *hash,
                        mtime_ns: file.mtime_ns,
                        size: file.size,
                        ..(*old).clone()
                    };
                    batch.put_file(&state, &[])?;
                }
            }
            batch.commit()?;
            report.files_removed = plan.removed.len();
        }

        let imports_changed = self.chunk_and_store(store, &to_read, &mut report, progress)?;

        // An edit inside a function leaves the graph as it was: ranking it again (every
        // project file's imports read, every file's score written) is for files that came,
        // went, or import otherwise now.
        if !ranked || !plan.removed.is_empty() || imports_changed {
            progress(IndexEvent::Graph);
            report.graph = Some(self.rank_files(store)?);
        }
        if let Some(head) = new_head {
            let mut batch = store.write()?;
            batch.set_indexed_commit(&head)?;
            batch.commit()?;
        }
        let counts = store.counts()?;
        report.chunks_pending = (counts.chunks - counts.embedded) as usize;
        progress(IndexEvent::Searchable {
            pending: report.chunks_pending,
        });
        report.searchable_after = started.elapsed();
        report.elapsed = report.searchable_after;
        Ok(report)
    }

    /// The second phase of [`Engine::index`]: embeds the chunks stored without vectors,
    /// shortest first in batches of [`crate::EngineOptions::chunks_per_commit`], committing
    /// each batch, then saves the vector index. A chunk text the machine's vector cache
    /// holds ([`Engine::with_vector_cache`]) takes its vector from there, and the cache's
    /// vectors for many batches are committed together.
    ///
    /// A killed run loses at most the batch in flight; the next run embeds what is left. It
    /// holds the writer lock, and fails with [`quarry_store::StoreError::Locked`] while
    /// another writer works.
    pub fn embed_pending(
        &self,
        progress: &mut dyn FnMut(IndexEvent),
    ) -> Result<Embedded, EngineError> {
        self.embed_pending_while(progress, &mut || true)
    }

    /// [`Engine::embed_pending`] that asks `go_on` before each commit (a batch the model
    /// embedded, or what the cache held of many) and stops, with what it committed so far,
    /// when it answers `false`: a long-running writer (`quarry mcp`
    /// following the working tree) lets the writer lock go between batches to index a file
    /// just changed, then calls it again for the rest. The vector index is saved only when
    /// every chunk has its vector.
    pub fn embed_pending_while(
        &self,
        progress: &mut dyn FnMut(IndexEvent),
        go_on: &mut dyn FnMut() -> bool,
    ) -> Result<Embedded, EngineError> {
        self.writing(|writer| self.embed_pending_in(writer, progress, go_on))
    }

    fn embed_pending_in(
        &self,
        store: &Store,
        progress: &mut dyn FnMut(IndexEvent),
        go_on: &mut dyn FnMut() -> bool,
    ) -> Result<Embedded, EngineError> {
        let snapshot = store.snapshot()?;
        let mut pending = snapshot.pending()?;
        // Plain source first, tests, docs and examples after: a search while this runs has
        // vectors for the code that answers most questions. Within each, texts of like
        // length share a batch and pad little; ids break ties, so the batches of a run are
        // the same whatever order the store listed them in.
        let ids: Vec<ChunkId> = pending.iter().map(|(id, _)| *id).collect();
        let later: HashSet<ChunkId> = (ids.iter())
            .zip(snapshot.chunks(&ids)?)
            .filter(|(_, chunk)| !chunk.as_ref().is_some_and(quarry_rank::is_plain_source))
            .map(|(id, _)| *id)
            .collect();
        drop(snapshot);
        pending.sort_by_key(|(id, text)| (later.contains(id), text.len(), *id));
        let total = pending.len();
        let mut done = 0;
        // The cache is opened (a file lock, a read) only when something waits.
        let cache = self.vector_cache.as_ref().filter(|_| total > 0);
        let mut vectors = Vectors::new(self.embedder()?, cache);
        let stopped = |done, vectors: Vectors| Embedded {
            embedded: done,
            from_cache: vectors.from_cache,
            finished: false,
            warnings: vectors.warnings,
        };
        let per_commit = self.options.chunks_per_commit.max(1);
        // The cache is asked for a window of many batches at once, and what it holds is
        // committed together: a commit costs a disk sync, and a second worktree's vectors
        // all come from the cache. The rest go to the model a batch per commit.
        for window in pending.chunks(per_commit * CACHE_WINDOW_BATCHES) {
            let texts: Vec<&str> = window.iter().map(|(_, text)| text.as_str()).collect();
            let cached = vectors.cached(&texts);
            let (hits, missing): (Vec<_>, Vec<_>) = window
                .iter()
                .zip(cached)
                .partition(|(_, vector)| vector.is_some());
            if !hits.is_empty() {
                if !go_on() {
                    return Ok(stopped(done, vectors));
                }
                let new: Vec<(ChunkId, &[f32])> = (hits.iter())
                    .filter_map(|((id, _), vector)| Some((*id, vector.as_deref()?)))
                    .collect();
                commit_vectors(store, &new, (&mut done, total), progress)?;
            }
            let missing: Vec<&(ChunkId, String)> = missing.into_iter().map(|(c, _)| c).collect();
            for group in missing.chunks(per_commit) {
                if !go_on() {
                    return Ok(stopped(done, vectors));
                }
                let texts: Vec<&str> = group.iter().map(|(_, text)| text.as_str()).collect();
                let embedded = vectors.embed(&texts)?;
                let new: Vec<(ChunkId, &[f32])> = group
                    .iter()
                    .zip(&embedded)
                    .map(|((id, _), vector)| (*id, vector.as_slice()))
                    .collect();
                commit_vectors(store, &new, (&mut done, total), progress)?;
            }
        }
        progress(IndexEvent::Checkpoint);
        store.checkpoint()?;
        Ok(Embedded {
            finished: true,
            ..stopped(total, vectors)
        })
    }

    /// Reads and chunks `files` in parallel and stores them, their new chunks waiting for
    /// vectors, one commit per slice of files. A file that cannot be read is a warning (it
    /// is not recorded, so the next run tries again); one the chunker skips is recorded with
    /// no chunks, so it is not read again until it changes. Returns whether the import graph
    /// changed: a file of it imports otherwise, or joined or left it (gained or lost its
    /// chunks).
    fn chunk_and_store(
        &self,
        store: &Store,
        files: &[&(PathBuf, TreeFile)],
        report: &mut IndexReport,
        progress: &mut dyn FnMut(IndexEvent),
    ) -> Result<bool, EngineError> {
        let mut graph_changed = false;
        let chunker = self.chunker()?;
        let total = files.len();
        // Parallel within a slice, committed and reported between slices.
        for slice in files.chunks(FILES_PER_COMMIT) {
            let results: Vec<Result<(ReadFile, Option<String>), String>> = slice
                .par_iter()
                .map(|(path, file)| self.chunk_file(chunker, path, file))
                .collect();
            let snapshot = store.snapshot()?;
            let mut batch = store.write()?;
            for result in results {
                let (mut file, skip) = match result {
                    Ok(chunked) => chunked,
                    Err(warning) => {
                        report.warnings.push(warning);
                        continue;
                    }
                };
                if let Some(skip) = skip {
                    report.skipped.push((file.state.path.clone(), skip));
                }
                report.warnings.extend(file.cut.take());
                let mut new = Vec::new();
                for chunk in &file.chunks {
                    match snapshot.chunk(chunk.stored.chunk_id())? {
                        Some(_) => report.chunks_reused += 1,
                        None => new.push((chunk.stored.clone(), chunk.embed_text.as_str())),
                    }
                }
                let path = file.state.path.as_str();
                let before = snapshot.file(path)?;
                let in_graph = |chunk_ids: &[u128]| !chunk_ids.is_empty();
                if before.as_ref().map(|b| in_graph(&b.chunk_ids))
                    != Some(in_graph(&file.state.chunk_ids))
                {
                    graph_changed |= self.graph_key(path).is_some();
                }
                batch.put_file_pending(&file.state, &new)?;
                if let Some(imports) = &file.imports {
                    let bytes = serde_json::to_vec(imports).expect("imports serialise to JSON");
                    graph_changed |=
                        snapshot.file_data(path, IMPORTS_DATA)?.as_deref() != Some(&bytes[..]);
                    batch.set_file_data(path, IMPORTS_DATA, &bytes)?;
                }
                let definitions = FileDefinitions {
                    version: DEFINITIONS_VERSION,
                    definitions: std::mem::take(&mut file.definitions),
                };
                set_file_data(&mut batch, &file.state.path, DEFINITIONS_DATA, &definitions)?;
                report.files_read += 1;
            }
            batch.commit()?;
            progress(IndexEvent::Chunked {
                files: report.files_read,
                total,
            });
        }
        Ok(graph_changed)
    }

    /// Reads and chunks one file, and takes a project file's imports from the same parse;
    /// `Err` is a warning that it could not be read.
    fn chunk_file(
        &self,
        chunker: &Chunker,
        path: &Path,
        file: &TreeFile,
    ) -> Result<(ReadFile, Option<String>), String> {
        let mut read = ReadFile {
            state: FileState {
                path: file.path.clone(),
                content_hash: 0,
                mtime_ns: file.mtime_ns,
                size: file.size,
                chunk_ids: Vec::new(),
            },
            chunks: Vec::new(),
            imports: None,
            definitions: Vec::new(),
            cut: None,
        };
        if file.size > self.options.max_file_bytes {
            let skip = format!(
                "{} bytes, over the {}-byte limit (`max_file_bytes`)",
                file.size, self.options.max_file_bytes
            );
            return Ok((read, Some(skip)));
        }
        let bytes = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        read.state.content_hash = content_hash(&bytes);
        let chunked = match chunker.chunk_file(&file.path, &bytes) {
            Ok(chunked) => chunked,
            Err(skip) => return Ok((read, Some(skip.to_string()))),
        };
        read.imports = self.graph_key(&file.path).map(|key| {
            FileImports::from_parsed(
                &key,
                chunked.text,
                chunked.language,
                chunked.syntax.as_ref(),
            )
        });
        read.state.chunk_ids = chunked.chunks.iter().map(|c| c.stored.id).collect();
        read.cut = (chunked.left_out > 0).then(|| {
            let end = chunked.chunks.last().map_or(0, |c| c.stored.end_line);
            format!(
                "{}: indexed to line {end} only, its first {MAX_CHUNKS_PER_FILE} chunks (the \
                 most a file gives); {} more chunks left out: split the file to search the rest",
                file.path, chunked.left_out
            )
        });
        read.chunks = chunked.chunks;
        read.definitions = chunked.definitions;
        Ok((read, None))
    }

    /// The import graph's key of the stored file `path`; `None` for a library's file (the
    /// graph is the project's).
    fn graph_key(&self, path: &str) -> Option<FileKey> {
        (scope_of(path) == PROJECT_SCOPE)
            .then(|| quarry_graph::graph_key(&self.root, path).ok())
            .flatten()
    }

    /// Rebuilds the import graph of the project's indexed files and stores each file's
    /// PageRank [`FileScore`] as its [`PAGERANK_DATA`] and its neighbours as its
    /// [`LINKS_DATA`]. Returns the graph's files and edges.
    /// The imports come from the index ([`IMPORTS_DATA`]); only a file indexed before they
    /// were stored is read and parsed again, and its imports stored with the scores.
    fn rank_files(&self, store: &Store) -> Result<(usize, usize), EngineError> {
        let snapshot = store.snapshot()?;
        let mut stored = Vec::new();
        let mut missing = Vec::new();
        for file in snapshot.files()? {
            let Some(key) = self
                .graph_key(&file.path)
                .filter(|_| !file.chunk_ids.is_empty())
            else {
                continue;
            };
            match snapshot.file_data(&file.path, IMPORTS_DATA)? {
                Some(bytes) => stored.push((
                    key,
                    decode_file_data::<FileImports>(&file.path, IMPORTS_DATA, &bytes)?,
                )),
                None => missing.push(key),
            }
        }
        drop(snapshot);
        let extracted: Vec<(FileKey, FileImports)> = missing
            .into_par_iter()
            .filter_map(|key| {
                let bytes = fs::read(self.root.join(key.as_str())).ok()?;
                let imports = FileImports::extract(&key, &bytes);
                Some((key, imports))
            })
            .collect();
        let mut batch = store.write()?;
        for (key, imports) in &extracted {
            set_file_data(&mut batch, key.as_str(), IMPORTS_DATA, imports)?;
        }
        let mut builder = GraphBuilder::new(&self.root);
        for (key, imports) in stored.into_iter().chain(extracted) {
            builder.add(key, imports);
        }
        let graph = builder.build();
        let ranking = graph.rank(&PageRankConfig::default());
        for (key, score) in ranking.iter() {
            set_file_data(&mut batch, key.as_str(), PAGERANK_DATA, &score)?;
            let mut links: Vec<&str> = graph
                .imports_of(key)
                .into_iter()
                .chain(graph.importers_of(key))
                .flatten()
                .map(|k| k.as_str())
                .collect();
            links.sort_unstable();
            links.dedup();
            set_file_data(&mut batch, key.as_str(), LINKS_DATA, &links)?;
        }
        batch.commit()?;
        Ok((graph.file_count(), graph.edge_count()))
    }
}

/// Whether the lexical index is missing, unreadable, behind the database, or was found
/// damaged by a search: a quick [`quarry_store::Store::check`], which reads metadata only.
fn lexical_needs_repair(store: &Store) -> Result<bool, EngineError> {
    let damage = store.check(Check::Quick)?;
    Ok(damage.iter().any(|d| d.part == IndexPart::Lexical))
}

/// Stores `vectors` in one commit, and reports them `done` of `total`.
fn commit_vectors(
    store: &Store,
    vectors: &[(ChunkId, &[f32])],
    (done, total): (&mut usize, usize),
    progress: &mut dyn FnMut(IndexEvent),
) -> Result<(), EngineError> {
    let mut batch = store.write()?;
    batch.put_vectors(vectors)?;
    batch.commit()?;
    *done += vectors.len();
    progress(IndexEvent::Embedded {
        chunks: *done,
        total,
    });
    Ok(())
}
