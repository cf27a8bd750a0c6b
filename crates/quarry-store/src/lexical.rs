//! The lexical (BM25) index: a tantivy index of every chunk's symbol, path and text, so that
//! exact identifiers and words find their chunks even where the embedding misses them.
//!
//! - **Derived data.** redb is the source of truth; this index is updated after each redb
//!   commit and each of its commits carries, as tantivy's commit payload, the redb
//!   generation it reflects. An index whose generation lags is rebuilt from redb
//!   ([`LexicalIndex::rebuild`]); one that is unreadable or has another schema is wiped.
//! - **One writer, many readers.** The writing process holds tantivy's writer lock; readers
//!   in other processes call [`LexicalIndex::refresh`] to see its newest commit.
//! - **Code-aware tokens.** [`CodeTokenizer`] turns `parseHTTPResponse` into
//!   `parsehttpresponse`, `pars`, `http`, `respons`: the whole identifier, then its parts
//!   lightly stemmed ([`quarry_text::stem`]), so a query in one naming convention or
//!   inflection finds code written in another, and an exact identifier still counts most.
//! - **Live statistics.** BM25 weighs terms by statistics over the live chunks alone (see
//!   `stats`), so an index updated incrementally ranks exactly as one built afresh.
//! - **Damage is an error, never a panic.** tantivy's panics and its errors about damaged
//!   files become [`StoreError::Damaged`]; a search that meets them leaves a mark, and the
//!   next writer to open the index (or one that finds its files' checksums wrong) rebuilds
//!   it from redb (see `health`).
//! - **Fields with weights.** A chunk is indexed as its symbol name, its containers, its
//!   file's name, its directories, its comments and its whole text; a query term scores
//!   BM25 in each field, weighted by [`LexicalWeights`] (a definition's name outweighs a
//!   mention in a body). The query's English function words are dropped.

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use quarry_chunk::Language;
use tantivy::indexer::IndexWriterOptions;
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery, TermSetQuery,
};
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::PreTokenizedString;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::StoreError;
use crate::records::StoredChunk;

mod analysis;
mod collect;
mod files;
mod health;
mod stats;
mod weights;

pub use analysis::CodeTokenizer;
use analysis::{comments, query_tokens};
use collect::{TopChunks, rescore};
use files::{FILE_KEY, Files, file_key};
pub(crate) use health::{Depth, inspect};
use health::{damaged, guarded, reading};
use stats::{LiveStatistics, TokenTotals};
pub use weights::LexicalWeights;

/// The name [`CodeTokenizer`] is registered under. It is part of the schema, so changing the
/// tokenizer's rules together with this name makes existing indexes another schema, which
/// [`LexicalIndex::open_writer`] wipes and the caller rebuilds.
const TOKENIZER: &str = "quarry_code_v2";

const ID: &str = "id";
const ID_HI: &str = "id_hi";
const ID_LO: &str = "id_lo";
const NAME: &str = "name";
const CONTAINER: &str = "container";
const FILE: &str = "file";
const DIRS: &str = "dirs";
const COMMENTS: &str = "comments";
const BODY: &str = "body";
const PATH_EXACT: &str = "path_exact";
const LANGUAGE: &str = "language";

/// The fields BM25 scores, in [`LexicalWeights`]' order.
const SCORED: [&str; 6] = [NAME, CONTAINER, FILE, DIRS, COMMENTS, BODY];
/// For each of [`SCORED`], a fast field holding how many tokens a chunk has there: exact
/// counts, for the live statistics (`stats`), where tantivy keeps lossy ones per document.
const TOKEN_COUNTS: [&str; 6] = [
    "tokens_name",
    "tokens_container",
    "tokens_file",
    "tokens_dirs",
    "tokens_comments",
    "tokens_body",
];

/// Memory for each indexing thread before it flushes a segment (tantivy's minimum is 15 MB).
const MEMORY_PER_THREAD: usize = 32 << 20;
const MAX_INDEXING_THREADS: usize = 4;

/// The filter in the form tantivy can apply: already resolved by the caller.
#[derive(Debug, Clone, Default)]
pub(crate) struct LexicalFilter {
    /// None: every path; Some(set): only chunks whose file path is in the set (the caller
    /// resolves globs and scopes against the indexed file list).
    pub paths: Option<Vec<String>>,
    /// Empty: every language; else only these.
    pub languages: Vec<Language>,
    /// Chunks of this file are excluded.
    pub excluded_file: Option<String>,
}

impl LexicalFilter {
    /// Whether every chunk passes.
    fn admits_all(&self) -> bool {
        self.paths.is_none() && self.languages.is_empty() && self.excluded_file.is_none()
    }
}

/// The schema's fields.
#[derive(Clone, Copy)]
struct Fields {
    /// The chunk id as 32 hex digits: the term deletes go by.
    id: Field,
    /// The id's high and low 64 bits, as fast fields: how hits are read back.
    id_hi: Field,
    id_lo: Field,
    name: Field,
    container: Field,
    file: Field,
    dirs: Field,
    comments: Field,
    body: Field,
    path_exact: Field,
    language: Field,
    /// [`TOKEN_COUNTS`]' fields.
    token_counts: [Field; 6],
    /// A hash of the chunk's file path, as a fast field: which chunks make one file.
    file_key: Field,
}

impl Fields {
    /// The fields BM25 scores, in [`SCORED`]'s order.
    fn scored(&self) -> [Field; 6] {
        [
            self.name,
            self.container,
            self.file,
            self.dirs,
            self.comments,
            self.body,
        ]
    }
}

fn schema() -> (Schema, Fields) {
    let code = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            // No phrase queries, so no positions.
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    // Matched exactly and never scored: no field norms.
    let raw = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false),
    );
    let mut builder = Schema::builder();
    let fields = Fields {
        id: builder.add_text_field(ID, raw.clone()),
        id_hi: builder.add_u64_field(ID_HI, FAST),
        id_lo: builder.add_u64_field(ID_LO, FAST),
        name: builder.add_text_field(NAME, code.clone()),
        container: builder.add_text_field(CONTAINER, code.clone()),
        file: builder.add_text_field(FILE, code.clone()),
        dirs: builder.add_text_field(DIRS, code.clone()),
        comments: builder.add_text_field(COMMENTS, code.clone()),
        body: builder.add_text_field(BODY, code),
        path_exact: builder.add_text_field(PATH_EXACT, raw.clone()),
        language: builder.add_text_field(LANGUAGE, raw),
        token_counts: TOKEN_COUNTS.map(|name| builder.add_u64_field(name, FAST)),
        file_key: builder.add_u64_field(FILE_KEY, FAST),
    };
    (builder.build(), fields)
}

/// What the reader last loaded, to tell whether a refresh has anything to do.
#[derive(PartialEq)]
struct Loaded {
    opstamp: u64,
    payload: Option<String>,
    segments: Vec<(tantivy::index::SegmentId, u32)>,
}

impl Loaded {
    fn of(meta: &tantivy::IndexMeta) -> Self {
        Self {
            opstamp: meta.opstamp,
            payload: meta.payload.clone(),
            segments: meta
                .segments
                .iter()
                .map(|s| (s.id(), s.num_deleted_docs()))
                .collect(),
        }
    }

    fn generation(&self) -> Option<u64> {
        self.payload.as_deref().and_then(|p| p.parse().ok())
    }
}

/// The lexical index in one directory, opened for writing or for reading.
pub(crate) struct LexicalIndex {
    dir: PathBuf,
    index: Index,
    reader: IndexReader,
    /// Present when opened with [`LexicalIndex::open_writer`].
    writer: Option<IndexWriter>,
    fields: Fields,
    loaded: Loaded,
    /// The live token totals of the segments searched so far.
    token_totals: TokenTotals,
    /// Which file each live chunk of the segments searched last belongs to.
    files: Files,
    /// Why [`LexicalIndex::open_writer`] replaced what the directory held, until taken.
    replaced: Option<String>,
    /// For a reader, the segment files whose checksums it has checked: a reader checks each
    /// file of a commit it loads once, so that damage is an error, never a ranking changed
    /// in silence (a writer checks every file when it opens the index).
    verified: HashSet<PathBuf>,
}

impl std::fmt::Debug for LexicalIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LexicalIndex")
            .field("dir", &self.dir)
            .field("writer", &self.writer.is_some())
            .field("generation", &self.generation())
            .finish()
    }
}

/// A writer waits for its merges to end: tantivy lets go of its directory lock when its
/// writer is dropped, while merges it started may still be writing segment files there,
/// which the next writer would race (a wipe meets files appearing under it) and whose
/// result would be lost.
impl Drop for LexicalIndex {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            let _ = guarded(|| writer.wait_merging_threads());
        }
    }
}

impl LexicalIndex {
    /// Opens (creating if needed) for writing. A directory that is not a readable tantivy
    /// index, has another schema, or whose files are damaged (missing, not matching their
    /// checksums, or marked by a search that failed on them) is wiped and recreated empty
    /// (generation None), and [`LexicalIndex::take_replaced`] says why: it is derived data,
    /// rebuilt from the database by the caller. The caller must hold the store's writer
    /// lock, so that no other process writes here while it is wiped.
    pub(crate) fn open_writer(dir: &Path) -> Result<Self, StoreError> {
        let (schema, fields) = schema();
        let inspection = inspect(dir, Depth::Full);
        let usable = match inspection.problems.first() {
            Some(problem) => Err(Some(problem.clone())),
            None if inspection.absent => Err(None),
            None => open_existing(dir, &schema).map_err(Some),
        };
        let (index, reader, loaded, replaced) = match usable {
            Ok((index, reader, loaded)) => (index, reader, loaded, None),
            Err(replaced) => {
                let (index, reader, loaded) = create(dir, schema)?;
                (index, reader, loaded, replaced)
            }
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_INDEXING_THREADS);
        let options = IndexWriterOptions::builder()
            .num_worker_threads(threads)
            .memory_budget_per_thread(MEMORY_PER_THREAD)
            .build();
        let writer = index.writer_with_options(options).map_err(|e| match e {
            // Another writer holds it: not a damaged index, so not for a rebuild.
            tantivy::TantivyError::LockFailure(..) => StoreError::Locked {
                path: dir.to_path_buf(),
            },
            other => lexical(dir, other),
        })?;
        Ok(Self {
            dir: dir.to_path_buf(),
            index,
            reader,
            writer: Some(writer),
            fields,
            loaded,
            token_totals: TokenTotals::default(),
            files: Files::default(),
            verified: HashSet::new(),
            replaced,
        })
    }

    /// Why [`LexicalIndex::open_writer`] wiped what the directory held (damaged, another
    /// schema); `None` if it opened the index there, or there was none. Taken once.
    pub(crate) fn take_replaced(&mut self) -> Option<String> {
        self.replaced.take()
    }

    /// Wipes the index in `dir` and opens an empty one for writing, whatever the directory
    /// held: for a writer whose own index turned out damaged. `self` (the writer on the old
    /// files) must be dropped first, to let go of tantivy's lock.
    pub(crate) fn recreate(dir: &Path) -> Result<Self, StoreError> {
        let (schema, _) = schema();
        drop(create(dir, schema)?);
        Self::open_writer(dir)
    }

    /// Opens for reading only; Ok(None) if there is no index there yet, and
    /// [`StoreError::Damaged`] if what is there cannot be read (or has another schema).
    pub(crate) fn open_reader(dir: &Path) -> Result<Option<Self>, StoreError> {
        if !dir.join("meta.json").is_file() {
            return Ok(None);
        }
        let (schema, fields) = schema();
        let (index, reader, loaded) = open_existing(dir, &schema).map_err(|detail| {
            // For the next writer: the mark names the segments this reader failed on, so that
            // one replaced since (a writer's merge) does not count.
            let segments = guarded(|| Index::open_in_dir(dir)?.searchable_segment_ids())
                .unwrap_or_default()
                .into_iter()
                .map(|id| id.uuid_string());
            health::mark(dir, &detail, segments);
            damaged(dir, detail)
        })?;
        let mut verified = HashSet::new();
        let meta = reading(dir, || index.load_metas())?;
        verify(dir, &index, &meta, &mut verified)?;
        Ok(Some(Self {
            dir: dir.to_path_buf(),
            index,
            reader,
            writer: None,
            fields,
            loaded,
            token_totals: TokenTotals::default(),
            files: Files::default(),
            verified,
            replaced: None,
        }))
    }

    /// The redb generation the last commit reflects (None: an empty or new index, never
    /// committed with a payload). For a reader, as of its last refresh; what it searches may
    /// be newer, never older.
    pub(crate) fn generation(&self) -> Option<u64> {
        self.loaded.generation()
    }

    /// Deletes `removed` chunk ids, adds `added` chunks, commits with `generation` as
    /// payload, and reloads the reader so searches see it. Writer only.
    ///
    /// An added chunk replaces any indexed chunk with its id, so applying the same change
    /// twice (after a crash between the redb commit and this one) leaves one copy.
    pub(crate) fn apply(
        &mut self,
        removed: &[u128],
        added: &[&StoredChunk],
        generation: u64,
    ) -> Result<(), StoreError> {
        let fields = self.fields;
        self.commit(generation, |writer| {
            for id in removed.iter().chain(added.iter().map(|c| &c.id)) {
                writer.delete_term(id_term(fields, *id));
            }
            for chunk in added {
                writer.add_document(document(fields, chunk))?;
            }
            Ok(())
        })
    }

    /// Deletes everything and adds all chunks (used when stale after a crash); commits with
    /// `generation`.
    pub(crate) fn rebuild(
        &mut self,
        all: impl Iterator<Item = StoredChunk>,
        generation: u64,
    ) -> Result<(), StoreError> {
        let fields = self.fields;
        self.commit(generation, |writer| {
            writer.delete_all_documents()?;
            for chunk in all {
                writer.add_document(document(fields, &chunk))?;
            }
            Ok(())
        })
    }

    /// Reader: reload to see the writer's newest commit (cheap if nothing changed).
    pub(crate) fn refresh(&mut self) -> Result<(), StoreError> {
        let meta = reading(&self.dir, || self.index.load_metas())?;
        if Loaded::of(&meta) == self.loaded {
            return Ok(());
        }
        self.reload()
    }

    /// Best `k` chunk ids for `query` by BM25 over the fields, weighted by `weights`, best
    /// first, among chunks `filter` admits; ties broken by chunk id ascending. The filter is
    /// part of the tantivy query, so it applies before the top-k cut. A query without tokens
    /// finds nothing.
    pub(crate) fn search(
        &self,
        query: &str,
        k: usize,
        filter: &LexicalFilter,
        weights: &LexicalWeights,
    ) -> Result<Vec<(u128, f32)>, StoreError> {
        let tokens = query_tokens(query);
        if k == 0 || tokens.is_empty() || filter.paths.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Vec::new());
        }
        let clauses = self.scoring_clauses(&tokens, weights);
        let query = self.query(&clauses, filter);
        let searcher = self.reader.searcher();
        let hits = reading(&self.dir, || {
            let statistics = LiveStatistics {
                searcher: &searcher,
                fields: self.fields.scored(),
                tokens: self.token_totals.of(&searcher)?,
            };
            let kept = searcher.search_with_statistics_provider(
                query.as_ref(),
                &TopChunks { k },
                &statistics,
            )?;
            rescore(&searcher, &statistics, &clauses, kept, k)
        })
        .inspect_err(|error| self.mark_if_damaged(error))?;
        Ok(hits.into_iter().map(|r| (r.id, r.score)).collect())
    }

    /// Leaves the mark of a search that found this index damaged, for the next writer.
    fn mark_if_damaged(&self, error: &StoreError) {
        if let StoreError::Damaged { detail, .. } = error {
            let segments = self.loaded.segments.iter().map(|(id, _)| id.uuid_string());
            health::mark(&self.dir, detail, segments);
        }
    }

    /// Each query token in each field with a weight above 0, with that weight: the clauses
    /// a chunk's score sums, in the order [`rescore`] sums them.
    fn scoring_clauses(
        &self,
        tokens: &BTreeSet<String>,
        weights: &LexicalWeights,
    ) -> Vec<(Term, f32)> {
        let weights = weights.fields().map(|(_, weight)| weight);
        let fields: Vec<(Field, f32)> = self
            .fields
            .scored()
            .into_iter()
            .zip(weights)
            .filter(|(_, weight)| *weight > 0.0)
            .collect();
        tokens
            .iter()
            .flat_map(|token| {
                fields
                    .iter()
                    .map(move |&(field, weight)| (Term::from_field_text(field, token), weight))
            })
            .collect()
    }

    /// The scoring `clauses` (each a `Should`), with required non-scoring ones for the
    /// filter.
    fn query(&self, clauses: &[(Term, f32)], filter: &LexicalFilter) -> Box<dyn Query> {
        let scoring: Vec<(Occur, Box<dyn Query>)> = clauses
            .iter()
            .map(|(term, weight)| {
                let term = TermQuery::new(term.clone(), IndexRecordOption::WithFreqs);
                let clause: Box<dyn Query> = Box::new(BoostQuery::new(Box::new(term), *weight));
                (Occur::Should, clause)
            })
            .collect();
        let scoring: Box<dyn Query> = Box::new(BooleanQuery::new(scoring));
        self.filtered(scoring, filter)
    }

    /// `query` limited to the chunks `filter` admits, by required non-scoring clauses;
    /// `query` itself when the filter admits every chunk.
    fn filtered(&self, query: Box<dyn Query>, filter: &LexicalFilter) -> Box<dyn Query> {
        let f = self.fields;
        if filter.admits_all() {
            return query;
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, query)];
        if let Some(paths) = &filter.paths {
            let paths = paths.iter().map(String::as_str);
            clauses.push((Occur::Must, required(f.path_exact, paths)));
        }
        if !filter.languages.is_empty() {
            let names = filter.languages.iter().map(|l| l.name());
            clauses.push((Occur::Must, required(f.language, names)));
        }
        if let Some(excluded) = &filter.excluded_file {
            let term = Term::from_field_text(f.path_exact, excluded);
            clauses.push((
                Occur::MustNot,
                Box::new(TermQuery::new(term, IndexRecordOption::Basic)),
            ));
        }
        Box::new(BooleanQuery::new(clauses))
    }

    /// Runs `ops` on the writer and commits them with `generation`; on failure, rolls back
    /// to the last commit, so a later commit does not carry half of them.
    fn commit(
        &mut self,
        generation: u64,
        ops: impl FnOnce(&IndexWriter) -> tantivy::Result<()>,
    ) -> Result<(), StoreError> {
        let Some(writer) = self.writer.as_mut() else {
            return Err(StoreError::ReadOnly {
                path: self.dir.clone(),
            });
        };
        let result = reading(&self.dir, || {
            ops(writer)?;
            let mut prepared = writer.prepare_commit()?;
            prepared.set_payload(&generation.to_string());
            prepared.commit()
        });
        if let Err(error) = result {
            // The error reported is the first one; a failed rollback changes nothing for it.
            let _ = guarded(|| writer.rollback());
            return Err(error);
        }
        self.reload()
    }

    /// Loads the newest commit. The metadata is read before the segments, so the generation
    /// recorded is never newer than what searches see.
    fn reload(&mut self) -> Result<(), StoreError> {
        let meta = reading(&self.dir, || self.index.load_metas())?;
        if self.writer.is_none() {
            verify(&self.dir, &self.index, &meta, &mut self.verified)?;
        }
        reading(&self.dir, || self.reader.reload()).inspect_err(|e| self.mark_if_damaged(e))?;
        self.loaded = Loaded::of(&meta);
        Ok(())
    }
}

/// Checks the files of the commit `meta` (of the index in `dir`) lists that `verified` lacks
/// ([`health::verify_new_files`]); a damaged one is marked for the next writer and is
/// [`StoreError::Damaged`].
fn verify(
    dir: &Path,
    index: &Index,
    meta: &tantivy::IndexMeta,
    verified: &mut HashSet<PathBuf>,
) -> Result<(), StoreError> {
    health::verify_new_files(dir, index, meta, verified).map_err(|detail| {
        let segments = meta.segments.iter().map(|s| s.id().uuid_string());
        health::mark(dir, &detail, segments);
        damaged(dir, detail)
    })
}

/// Opens the index in `dir` with its reader, if it is one this build can use; else says why
/// not.
fn open_existing(dir: &Path, schema: &Schema) -> Result<(Index, IndexReader, Loaded), String> {
    if !dir.join("meta.json").is_file() {
        return Err("its meta.json is missing".into());
    }
    let index = guarded(|| Index::open_in_dir(dir))?;
    if index.schema() != *schema {
        return Err("it was built by another version of quarry".into());
    }
    let (reader, loaded) = guarded(|| open_reader_of(&index))?;
    Ok((index, reader, loaded))
}

/// Wipes `dir` and creates an empty index there, with its reader.
fn create(dir: &Path, schema: Schema) -> Result<(Index, IndexReader, Loaded), StoreError> {
    wipe(dir)?;
    let index = Index::builder()
        .schema(schema)
        .create_in_dir(dir)
        .map_err(|e| lexical(dir, e))?;
    let (reader, loaded) = open_reader_of(&index).map_err(|e| lexical(dir, e))?;
    Ok((index, reader, loaded))
}

/// Registers the tokenizer (tantivy does not persist it) and opens a manually reloaded
/// reader: readers follow the writer when told to, not from a watcher thread.
fn open_reader_of(index: &Index) -> tantivy::Result<(IndexReader, Loaded)> {
    index
        .tokenizers()
        .register(TOKENIZER, CodeTokenizer::default());
    let meta = index.load_metas()?;
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()?;
    Ok((reader, Loaded::of(&meta)))
}

fn wipe(dir: &Path) -> Result<(), StoreError> {
    let io_error = |source| StoreError::Io {
        path: dir.to_path_buf(),
        source,
    };
    match fs::remove_dir_all(dir) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(io_error(error)),
        _ => {}
    }
    // Not `create_dir_all`: the index directory is there, or the repository went.
    fs::create_dir(dir).map_err(io_error)
}

fn lexical(dir: &Path, error: impl std::fmt::Display) -> StoreError {
    StoreError::Lexical {
        path: dir.to_path_buf(),
        message: error.to_string(),
    }
}

fn id_term(fields: Fields, id: u128) -> Term {
    Term::from_field_text(fields.id, &format!("{id:032x}"))
}

/// The document of `chunk`. Its scored fields are given as tokens (the same as
/// [`CodeTokenizer`] would make of them), so that how many each holds is known exactly and
/// kept beside them ([`TOKEN_COUNTS`]).
fn document(fields: Fields, chunk: &StoredChunk) -> TantivyDocument {
    let mut doc = TantivyDocument::default();
    doc.add_text(fields.id, format!("{:032x}", chunk.id));
    doc.add_u64(fields.id_hi, (chunk.id >> 64) as u64);
    doc.add_u64(fields.id_lo, chunk.id as u64);
    let (dirs, file) = chunk.path.rsplit_once('/').unwrap_or(("", &chunk.path));
    let stem = file.split_once('.').map_or(file, |(stem, _)| stem);
    let comments = comments(&chunk.text);
    // In SCORED's order: name, container, file, dirs, comments, body.
    let values: [Vec<&str>; 6] = [
        chunk.name.as_deref().into_iter().collect(),
        chunk.container.iter().map(String::as_str).collect(),
        vec![stem],
        vec![dirs],
        vec![&comments],
        vec![&chunk.text],
    ];
    for ((field, count_field), texts) in fields
        .scored()
        .into_iter()
        .zip(fields.token_counts)
        .zip(values)
    {
        let mut count = 0;
        for text in texts {
            let tokens = analysis::tokens(text);
            count += tokens.len() as u64;
            let text = text.to_owned();
            doc.add_pre_tokenized_text(field, PreTokenizedString { text, tokens });
        }
        doc.add_u64(count_field, count);
    }
    doc.add_text(fields.path_exact, &chunk.path);
    doc.add_u64(fields.file_key, file_key(&chunk.path));
    doc.add_text(fields.language, chunk.language.name());
    doc
}

/// A non-scoring clause that admits documents whose `field` holds one of `values`.
fn required<'a>(field: Field, values: impl IntoIterator<Item = &'a str>) -> Box<dyn Query> {
    let terms = values
        .into_iter()
        .map(|value| Term::from_field_text(field, value));
    Box::new(ConstScoreQuery::new(
        Box::new(TermSetQuery::new(terms)),
        0.0,
    ))
}

#[cfg(test)]
mod tests;
