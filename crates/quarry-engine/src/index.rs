//! Indexing: bring the store in step with the working tree.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use quarry_chunk::Chunk;
use quarry_graph::{GraphBuilder, PageRankConfig};
use quarry_store::{
    FileState, GitUse, PROJECT_SCOPE, StoredChunk, TreeFile, content_hash, detect_changes, scope_of,
};
use rayon::prelude::*;

use crate::{Engine, EngineError};

/// The per-file data name under which a file's import-graph [`quarry_graph::FileScore`] is stored.
pub const PAGERANK_DATA: &str = "pagerank";

/// The per-file data name under which the files a file imports or is imported by are
/// stored, as a JSON list of paths.
pub const LINKS_DATA: &str = "links";

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
    /// Files were chunked; `chunks` of their chunks need vectors.
    Chunked {
        /// Files chunked so far, of `total`.
        files: usize,
        /// Files to chunk in all.
        total: usize,
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
    /// Chunks embedded in this run.
    pub chunks_embedded: usize,
    /// Chunks of changed files that kept their stored vector.
    pub chunks_reused: usize,
    /// Files and edges of the import graph, if it was rebuilt.
    pub graph: Option<(usize, usize)>,
    /// What git contributed to change detection.
    pub git: Option<GitUse>,
    /// Files that could not be read, one line each; they are retried next run.
    pub warnings: Vec<String>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

/// What an indexing run has to do, over the project and every library, in stored paths.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Files the index lacks, with where to read them.
    pub added: Vec<(PathBuf, TreeFile)>,
    /// Indexed files whose content changed (renamed ones under their new path).
    pub modified: Vec<(PathBuf, TreeFile)>,
    /// Indexed files gone: deleted, renamed away, or of a library no longer registered.
    pub removed: Vec<String>,
    /// Files whose metadata alone changed, with their content hash.
    pub touched: Vec<(TreeFile, u64)>,
    /// Files as the index has them.
    pub unchanged: usize,
    /// What git contributed to the project's change detection.
    pub git: Option<GitUse>,
    /// Files or libraries that could not be read, one line each.
    pub warnings: Vec<String>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.modified.is_empty()
            && self.removed.is_empty()
            && self.touched.is_empty()
    }
}

/// One file read and chunked, waiting for its vectors.
struct ChunkedFile {
    state: FileState,
    chunks: Vec<Chunk>,
}

impl Engine {
    /// Brings the index in step with the working tree: files that changed since the last run
    /// (by `git diff`, then mtime and size, then content hash) are chunked again and only
    /// their new chunks embedded; deleted files are dropped; the import graph and its
    /// PageRank are recomputed when anything changed; the vector index is saved.
    ///
    /// Each batch of files is committed on its own, so an interrupted run keeps what it
    /// committed and the next run resumes from there.
    pub fn index(&self, progress: &mut dyn FnMut(IndexEvent)) -> Result<IndexReport, EngineError> {
        let started = Instant::now();
        let store = &self.store;
        let indexed = store.files()?;
        let plan = self.plan(&indexed)?;
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

        let chunked = self.chunk_files(&to_read, &mut report, progress);
        self.embed_and_store(chunked, &mut report, progress)?;

        let anything_changed = !plan.is_empty();
        let has_scores = match indexed.iter().find(|f| !f.chunk_ids.is_empty()) {
            Some(file) => store
                .snapshot()?
                .file_data(&file.path, PAGERANK_DATA)?
                .is_some(),
            None => false,
        };
        if anything_changed || !has_scores {
            progress(IndexEvent::Graph);
            report.graph = Some(self.rank_files()?);
        }
        if let Some(head) = quarry_store::head_commit(&self.root) {
            let mut batch = store.write()?;
            batch.set_indexed_commit(&head)?;
            batch.commit()?;
        }
        progress(IndexEvent::Checkpoint);
        store.checkpoint()?;
        report.elapsed = started.elapsed();
        Ok(report)
    }

    /// What differs between `indexed` and the project's and libraries' trees (see
    /// [`detect_changes`]). A library whose directory is gone is a warning; its files stay.
    pub(crate) fn plan(&self, indexed: &[FileState]) -> Result<Plan, EngineError> {
        let sources = self.sources()?;
        let mut plan = Plan::default();
        let mut by_scope: HashMap<&str, Vec<FileState>> = HashMap::new();
        for file in indexed {
            by_scope
                .entry(scope_of(&file.path))
                .or_default()
                .push(file.clone());
        }
        for source in &sources {
            let files: Vec<FileState> = by_scope
                .remove(source.scope.as_str())
                .unwrap_or_default()
                .into_iter()
                .map(|file| FileState {
                    path: source.relative_path(&file.path).to_owned(),
                    ..file
                })
                .collect();
            if !source.is_project() && !source.root.is_dir() {
                plan.warnings.push(format!(
                    "{}: library {} is gone; its {} files stay indexed until `quarry lib \
                     remove` or the directory is back",
                    source.root.display(),
                    source.scope,
                    files.len()
                ));
                plan.unchanged += files.len();
                continue;
            }
            let commit = match source.is_project() {
                true => self.store.indexed_commit()?,
                false => None,
            };
            let changes = detect_changes(&source.root, &files, commit.as_deref())?;
            let located = |file: &TreeFile| {
                let path = source.root.join(&file.path);
                let stored = TreeFile {
                    path: source.stored_path(&file.path),
                    ..file.clone()
                };
                (path, stored)
            };
            plan.added.extend(changes.added.iter().map(located));
            plan.modified.extend(
                changes
                    .modified
                    .iter()
                    .chain(changes.renamed.iter().map(|r| &r.to))
                    .map(located),
            );
            plan.removed.extend(
                changes
                    .deleted
                    .iter()
                    .chain(changes.renamed.iter().map(|r| &r.from))
                    .map(|path| source.stored_path(path)),
            );
            plan.touched.extend(
                changes
                    .touched
                    .iter()
                    .map(|(file, hash)| (located(file).1, *hash)),
            );
            plan.unchanged += changes.unchanged;
            plan.warnings.extend(changes.warnings);
            if source.is_project() {
                plan.git = Some(changes.git);
            }
        }
        // What is left belongs to libraries no longer registered.
        plan.removed
            .extend(by_scope.into_values().flatten().map(|file| file.path));
        Ok(plan)
    }

    /// Reads and chunks `files` in parallel. A file that cannot be read is a warning (it is
    /// not recorded, so the next run tries again); one the chunker skips is recorded with
    /// no chunks, so it is not read again until it changes.
    fn chunk_files(
        &self,
        files: &[&(PathBuf, TreeFile)],
        report: &mut IndexReport,
        progress: &mut dyn FnMut(IndexEvent),
    ) -> Vec<ChunkedFile> {
        let total = files.len();
        let mut chunked = Vec::with_capacity(total);
        // Parallel within a slice, reported between slices.
        for slice in files.chunks(256) {
            let results: Vec<Result<(ChunkedFile, Option<String>), String>> = slice
                .par_iter()
                .map(|(path, file)| {
                    let mut state = FileState {
                        path: file.path.clone(),
                        content_hash: 0,
                        mtime_ns: file.mtime_ns,
                        size: file.size,
                        chunk_ids: Vec::new(),
                    };
                    if file.size > self.options.max_file_bytes {
                        let skip = format!(
                            "{} bytes, over the {}-byte limit (`max_file_bytes`)",
                            file.size, self.options.max_file_bytes
                        );
                        let chunks = Vec::new();
                        return Ok((ChunkedFile { state, chunks }, Some(skip)));
                    }
                    let bytes = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
                    let (chunks, skip) = match self.chunker.chunk(&file.path, &bytes) {
                        Ok(chunks) => (chunks, None),
                        Err(skip) => (Vec::new(), Some(skip.to_string())),
                    };
                    state.content_hash = content_hash(&bytes);
                    state.chunk_ids = chunks.iter().map(|c| c.id.0).collect();
                    Ok((ChunkedFile { state, chunks }, skip))
                })
                .collect();
            for result in results {
                match result {
                    Ok((file, skip)) => {
                        if let Some(skip) = skip {
                            report.skipped.push((file.state.path.clone(), skip));
                        }
                        chunked.push(file);
                    }
                    Err(warning) => report.warnings.push(warning),
                }
            }
            progress(IndexEvent::Chunked {
                files: chunked.len(),
                total,
            });
        }
        report.files_read = chunked.len();
        chunked
    }

    /// Embeds the chunks the store does not hold yet and commits the files in batches of
    /// about [`crate::EngineOptions::chunks_per_commit`] new chunks.
    fn embed_and_store(
        &self,
        files: Vec<ChunkedFile>,
        report: &mut IndexReport,
        progress: &mut dyn FnMut(IndexEvent),
    ) -> Result<(), EngineError> {
        let snapshot = self.store.snapshot()?;
        let mut stored = HashSet::new();
        for file in &files {
            for chunk in &file.chunks {
                if snapshot.vector(chunk.id)?.is_some() {
                    stored.insert(chunk.id.0);
                }
            }
        }
        drop(snapshot);
        report.chunks_reused = stored.len();
        let total: usize = files.iter().map(|f| f.chunks.len()).sum::<usize>() - stored.len();
        let mut done = 0;
        let mut pending: Vec<ChunkedFile> = Vec::new();
        let mut pending_chunks = 0;
        let mut files = files.into_iter().peekable();
        while let Some(file) = files.next() {
            pending_chunks += file
                .chunks
                .iter()
                .filter(|c| !stored.contains(&c.id.0))
                .count();
            pending.push(file);
            if pending_chunks >= self.options.chunks_per_commit || files.peek().is_none() {
                let group = std::mem::take(&mut pending);
                done += self.commit_group(group, &stored)?;
                pending_chunks = 0;
                progress(IndexEvent::Embedded {
                    chunks: done,
                    total,
                });
            }
        }
        report.chunks_embedded = done;
        Ok(())
    }

    /// Embeds one group's new chunks and commits its files; returns how many it embedded.
    fn commit_group(
        &self,
        group: Vec<ChunkedFile>,
        stored: &HashSet<u128>,
    ) -> Result<usize, EngineError> {
        let new: Vec<&Chunk> = group
            .iter()
            .flat_map(|f| &f.chunks)
            .filter(|c| !stored.contains(&c.id.0))
            .collect();
        let texts: Vec<&str> = new.iter().map(|c| c.embed_text.as_str()).collect();
        let vectors = if texts.is_empty() {
            Vec::new()
        } else {
            self.embedder.embed(&texts)?
        };
        let by_id: HashMap<u128, &[f32]> = new
            .iter()
            .zip(&vectors)
            .map(|(c, e)| (c.id.0, e.vector.as_slice()))
            .collect();
        let mut batch = self.store.write()?;
        for file in &group {
            let chunks: Vec<(StoredChunk, &[f32])> = file
                .chunks
                .iter()
                .filter_map(|c| by_id.get(&c.id.0).map(|v| (stored_chunk(c), *v)))
                .collect();
            batch.put_file(&file.state, &chunks)?;
        }
        batch.commit()?;
        Ok(new.len())
    }

    /// Rebuilds the import graph of the project's indexed files and stores each file's
    /// PageRank [`quarry_graph::FileScore`] as its [`PAGERANK_DATA`] and its neighbours as its
    /// [`LINKS_DATA`]. Returns the graph's files and edges.
    fn rank_files(&self) -> Result<(usize, usize), EngineError> {
        let files = self.store.files()?;
        let imports: Vec<_> = files
            .par_iter()
            .filter(|f| !f.chunk_ids.is_empty() && scope_of(&f.path) == PROJECT_SCOPE)
            .filter_map(|f| {
                let bytes = fs::read(self.root.join(&f.path)).ok()?;
                let key = quarry_graph::graph_key(&self.root, &f.path).ok()?;
                let imports = quarry_graph::FileImports::extract(&key, &bytes);
                Some((key, imports))
            })
            .collect();
        let mut builder = GraphBuilder::new(&self.root);
        for (key, imports) in imports {
            builder.add(key, imports);
        }
        let graph = builder.build();
        let ranking = graph.rank(&PageRankConfig::default());
        let mut batch = self.store.write()?;
        for (key, score) in ranking.iter() {
            let bytes = serde_json::to_vec(&score).expect("a FileScore serialises");
            batch.set_file_data(key.as_str(), PAGERANK_DATA, &bytes)?;
            let mut links: Vec<&str> = graph
                .imports_of(key)
                .into_iter()
                .chain(graph.importers_of(key))
                .flatten()
                .map(|k| k.as_str())
                .collect();
            links.sort_unstable();
            links.dedup();
            let bytes = serde_json::to_vec(&links).expect("paths serialise");
            batch.set_file_data(key.as_str(), LINKS_DATA, &bytes)?;
        }
        batch.commit()?;
        Ok((graph.file_count(), graph.edge_count()))
    }
}

/// The file data `data` stored for the file at `path`.
pub(crate) fn decode_file_data<T: serde::de::DeserializeOwned>(
    path: &str,
    data: &'static str,
    bytes: &[u8],
) -> Result<T, EngineError> {
    serde_json::from_slice(bytes).map_err(|e| EngineError::CorruptFileData {
        path: path.to_owned(),
        data,
        message: e.to_string(),
    })
}

fn stored_chunk(chunk: &Chunk) -> StoredChunk {
    StoredChunk {
        id: chunk.id.0,
        path: chunk.path.clone(),
        language: chunk.language.name().to_owned(),
        kind: chunk.kind.name().to_owned(),
        name: chunk.name.clone(),
        container: chunk.container.clone(),
        start_line: chunk.start_line,
        end_line: chunk.end_line,
        text: chunk.text.clone(),
    }
}
