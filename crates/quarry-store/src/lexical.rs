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
//! - **Fields with weights.** A chunk is indexed as its symbol name, its containers, its
//!   file's name, its directories, its comments and its whole text; a query term scores
//!   BM25 in each field, weighted by [`LexicalWeights`] (a definition's name outweighs a
//!   mention in a body). The query's English function words are dropped.

use std::collections::{BTreeSet, BinaryHeap};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::indexer::IndexWriterOptions;
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery, TermSetQuery, Weight,
};
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};
use tantivy::{
    DocId, Index, IndexReader, IndexWriter, ReloadPolicy, Score, SegmentOrdinal, SegmentReader,
    TantivyDocument, Term,
};

use crate::StoreError;
use crate::records::StoredChunk;

/// The name [`CodeTokenizer`] is registered under. It is part of the schema, so changing the
/// tokenizer's rules together with this name makes existing indexes another schema, which
/// [`LexicalIndex::open_writer`] wipes and the caller rebuilds.
const TOKENIZER: &str = "quarry_code_v2";
/// Tokens longer than this (in bytes) are skipped: minified code, base64 and hashes, which
/// nobody types as a query.
const MAX_TOKEN_BYTES: usize = 64;

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

/// How much a query term's BM25 score in each field of a chunk counts. A weight of 0 leaves
/// the field out of the query (the benchmark's ablations).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LexicalWeights {
    /// The chunk's symbol name (`parse_config`): a match here is a definition. As much as
    /// the body: the ranking's definition layer raises definitions of the name a query asks
    /// for, and a heavier name field lifts every function named after a common word.
    pub name: f32,
    /// The symbols enclosing it (`Router` for `Router::merge`).
    pub container: f32,
    /// Its file's name without the extension (`router` for `src/router.rs`).
    pub file: f32,
    /// Its file's directories (`src`, `routing`).
    pub dirs: f32,
    /// Its comments and docstrings: what the code says it does, in words.
    pub comments: f32,
    /// Its whole text.
    pub body: f32,
}

impl Default for LexicalWeights {
    fn default() -> Self {
        Self {
            name: 1.0,
            container: 1.0,
            file: 1.5,
            dirs: 0.5,
            comments: 0.5,
            body: 1.0,
        }
    }
}

impl LexicalWeights {
    /// Checks that every weight is finite and at least 0, and one is above 0.
    pub fn validate(&self) -> Result<(), String> {
        let weights = self.fields();
        if let Some((field, weight)) = weights.iter().find(|(_, w)| !w.is_finite() || *w < 0.0) {
            return Err(format!(
                "lexical weight {field} must be finite and at least 0, not {weight}"
            ));
        }
        if weights.iter().all(|(_, w)| *w == 0.0) {
            return Err("every lexical weight is 0: the lexical leg would find nothing".into());
        }
        Ok(())
    }

    fn fields(&self) -> [(&'static str, f32); 6] {
        [
            (NAME, self.name),
            (CONTAINER, self.container),
            (FILE, self.file),
            (DIRS, self.dirs),
            (COMMENTS, self.comments),
            (BODY, self.body),
        ]
    }
}

/// Memory for each indexing thread before it flushes a segment (tantivy's minimum is 15 MB).
const MEMORY_PER_THREAD: usize = 32 << 20;
const MAX_INDEXING_THREADS: usize = 4;

/// The filter in the form tantivy can apply: already resolved by the caller.
#[derive(Debug, Clone, Default)]
pub(crate) struct LexicalFilter {
    /// None: every path; Some(set): only chunks whose file path is in the set (the caller
    /// resolves globs and scopes against the indexed file list).
    pub paths: Option<Vec<String>>,
    /// Empty: every language; else only these (language names like "rust", "python").
    pub languages: Vec<String>,
    /// Chunks of this file are excluded.
    pub excluded_file: Option<String>,
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

impl LexicalIndex {
    /// Opens (creating if needed) for writing. A directory that is not a readable tantivy
    /// index, or has another schema, is wiped and recreated empty (generation None): it is
    /// derived data. The caller must hold the store's writer lock, so that no other process
    /// writes here while it is wiped.
    pub(crate) fn open_writer(dir: &Path) -> Result<Self, StoreError> {
        let (schema, fields) = schema();
        let (index, reader, loaded) = match open_existing(dir, &schema) {
            Ok(opened) => opened,
            Err(_unusable) => {
                wipe(dir)?;
                let index = Index::builder()
                    .schema(schema)
                    .create_in_dir(dir)
                    .map_err(|e| lexical(dir, e))?;
                let (reader, loaded) = open_reader_of(&index).map_err(|e| lexical(dir, e))?;
                (index, reader, loaded)
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
        })
    }

    /// Opens for reading only; Ok(None) if there is no index there yet.
    pub(crate) fn open_reader(dir: &Path) -> Result<Option<Self>, StoreError> {
        if !dir.join("meta.json").is_file() {
            return Ok(None);
        }
        let (schema, fields) = schema();
        let (index, reader, loaded) =
            open_existing(dir, &schema).map_err(|message| StoreError::Lexical {
                path: dir.to_path_buf(),
                message,
            })?;
        Ok(Some(Self {
            dir: dir.to_path_buf(),
            index,
            reader,
            writer: None,
            fields,
            loaded,
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
        let meta = self.index.load_metas().map_err(|e| lexical(&self.dir, e))?;
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
        let query = self.query(&tokens, filter, weights);
        let searcher = self.reader.searcher();
        let hits = searcher
            .search(query.as_ref(), &TopChunks { k })
            .map_err(|e| lexical(&self.dir, e))?;
        Ok(hits.into_iter().map(|r| (r.id, r.score)).collect())
    }

    /// Scoring clauses for the tokens, required non-scoring ones for the filter.
    fn query(
        &self,
        tokens: &BTreeSet<String>,
        filter: &LexicalFilter,
        weights: &LexicalWeights,
    ) -> Box<dyn Query> {
        let f = self.fields;
        let fields = [
            (f.name, weights.name),
            (f.container, weights.container),
            (f.file, weights.file),
            (f.dirs, weights.dirs),
            (f.comments, weights.comments),
            (f.body, weights.body),
        ];
        let mut scoring: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(tokens.len() * 6);
        for token in tokens {
            for &(field, weight) in fields.iter().filter(|(_, w)| *w > 0.0) {
                let term = TermQuery::new(
                    Term::from_field_text(field, token),
                    IndexRecordOption::WithFreqs,
                );
                scoring.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(Box::new(term), weight)),
                ));
            }
        }
        let scoring = Box::new(BooleanQuery::new(scoring));
        let no_filter =
            filter.paths.is_none() && filter.languages.is_empty() && filter.excluded_file.is_none();
        if no_filter {
            return scoring;
        }

        let required = |field: Field, values: &[String]| -> Box<dyn Query> {
            let terms = values.iter().map(|v| Term::from_field_text(field, v));
            Box::new(ConstScoreQuery::new(
                Box::new(TermSetQuery::new(terms)),
                0.0,
            ))
        };
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, scoring)];
        if let Some(paths) = &filter.paths {
            clauses.push((Occur::Must, required(f.path_exact, paths)));
        }
        if !filter.languages.is_empty() {
            clauses.push((Occur::Must, required(f.language, &filter.languages)));
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
        let result = ops(writer).and_then(|()| {
            let mut prepared = writer.prepare_commit()?;
            prepared.set_payload(&generation.to_string());
            prepared.commit()
        });
        if let Err(error) = result {
            // The error reported is the first one; a failed rollback changes nothing for it.
            let _ = writer.rollback();
            return Err(lexical(&self.dir, error));
        }
        self.reload()
    }

    /// Loads the newest commit. The metadata is read before the segments, so the generation
    /// recorded is never newer than what searches see.
    fn reload(&mut self) -> Result<(), StoreError> {
        let meta = self.index.load_metas().map_err(|e| lexical(&self.dir, e))?;
        self.reader.reload().map_err(|e| lexical(&self.dir, e))?;
        self.loaded = Loaded::of(&meta);
        Ok(())
    }
}

/// Opens the index in `dir` with its reader, if it is one this build can use; else says why
/// not.
fn open_existing(dir: &Path, schema: &Schema) -> Result<(Index, IndexReader, Loaded), String> {
    if !dir.join("meta.json").is_file() {
        return Err("no index".into());
    }
    let index = Index::open_in_dir(dir).map_err(|e| e.to_string())?;
    if index.schema() != *schema {
        return Err("built by another version of quarry".into());
    }
    let (reader, loaded) = open_reader_of(&index).map_err(|e| e.to_string())?;
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
    fs::create_dir_all(dir).map_err(io_error)
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

fn document(fields: Fields, chunk: &StoredChunk) -> TantivyDocument {
    let mut doc = TantivyDocument::default();
    doc.add_text(fields.id, format!("{:032x}", chunk.id));
    doc.add_u64(fields.id_hi, (chunk.id >> 64) as u64);
    doc.add_u64(fields.id_lo, chunk.id as u64);
    if let Some(name) = &chunk.name {
        doc.add_text(fields.name, name);
    }
    for container in &chunk.container {
        doc.add_text(fields.container, container);
    }
    let (dirs, file) = chunk.path.rsplit_once('/').unwrap_or(("", &chunk.path));
    let stem = file.split_once('.').map_or(file, |(stem, _)| stem);
    doc.add_text(fields.file, stem);
    doc.add_text(fields.dirs, dirs);
    doc.add_text(fields.comments, comments(&chunk.text));
    doc.add_text(fields.body, &chunk.text);
    doc.add_text(fields.path_exact, &chunk.path);
    doc.add_text(fields.language, &chunk.language);
    doc
}

/// A hit; orders best first: higher score, then lower id.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ranked {
    score: Score,
    id: u128,
}

impl Eq for Ranked {}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.id.cmp(&other.id))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Collects the best `k` chunks. tantivy's `TopDocs` breaks ties by document address, which
/// depends on segment layout; this breaks them by chunk id, so results are deterministic.
struct TopChunks {
    k: usize,
}

struct SegmentTopChunks {
    id_hi: Column<u64>,
    id_lo: Column<u64>,
    k: usize,
    /// The worst kept hit on top.
    best: BinaryHeap<Ranked>,
}

impl SegmentTopChunks {
    /// The score a hit must exceed to be worth collecting. A hit equal to the worst kept one
    /// may still win on its id, hence the next float down.
    fn threshold(&self) -> Score {
        match self.best.peek() {
            Some(worst) if self.best.len() >= self.k => worst.score.next_down(),
            _ => Score::MIN,
        }
    }
}

impl SegmentCollector for SegmentTopChunks {
    type Fruit = Vec<Ranked>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let (Some(hi), Some(lo)) = (self.id_hi.first(doc), self.id_lo.first(doc)) else {
            return;
        };
        let hit = Ranked {
            score,
            id: (u128::from(hi) << 64) | u128::from(lo),
        };
        if self.best.len() < self.k {
            self.best.push(hit);
        } else if self.best.peek().is_some_and(|worst| hit < *worst) {
            self.best.pop();
            self.best.push(hit);
        }
    }

    fn harvest(self) -> Vec<Ranked> {
        self.best.into_sorted_vec()
    }
}

impl Collector for TopChunks {
    type Fruit = Vec<Ranked>;
    type Child = SegmentTopChunks;

    fn for_segment(
        &self,
        _segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentTopChunks> {
        let fast = reader.fast_fields();
        Ok(SegmentTopChunks {
            id_hi: fast.u64(ID_HI)?,
            id_lo: fast.u64(ID_LO)?,
            k: self.k,
            best: BinaryHeap::with_capacity(self.k.saturating_add(1).min(1024)),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Vec<Ranked>>) -> tantivy::Result<Vec<Ranked>> {
        let mut all: Vec<Ranked> = fruits.into_iter().flatten().collect();
        all.sort_unstable();
        all.truncate(self.k);
        Ok(all)
    }

    /// Like the default, but lets the query skip documents that cannot make the top `k`.
    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<Vec<Ranked>> {
        let mut collector = self.for_segment(segment, reader)?;
        let alive = reader.alive_bitset();
        weight.for_each_pruning(Score::MIN, reader, &mut |doc, score| {
            if alive.is_none_or(|alive| alive.is_alive(doc)) {
                collector.collect(doc, score);
            }
            collector.threshold()
        })?;
        Ok(collector.harvest())
    }
}

/// tantivy [`Tokenizer`] for source code, registered as `quarry_code_v2`.
///
/// Text is split into identifiers ([`quarry_text::identifiers`]: runs of alphanumeric
/// characters, any script, and `_`). Each identifier gives its whole self, lowercased, then
/// the light stem ([`quarry_text::stem`]) of each of its parts when it has more than that
/// one part ([`quarry_text::identifier_parts`]: at `_`, at case changes, between letters and
/// digits; kebab-case is split already, as `-` ends an identifier), or of itself when the
/// stem differs. An exact identifier thus matches its whole token and its parts, an
/// inflection (`handlers`, `parsing`) its stems:
///
/// ```
/// use quarry_store::CodeTokenizer;
/// use tantivy::tokenizer::{TokenStream, Tokenizer};
///
/// let mut tokenizer = CodeTokenizer::default();
/// let mut stream = tokenizer.token_stream("parseHTTPResponse(sha256)");
/// let mut tokens = Vec::new();
/// while let Some(token) = stream.next() {
///     tokens.push(token.text.clone());
/// }
/// assert_eq!(tokens, ["parsehttpresponse", "pars", "http", "respons", "sha256", "sha", "256"]);
/// ```
///
/// Single-character parts are kept (`getX` gives `x`, `utf8` gives `8`): BM25 weighs such
/// common tokens little, and dropping them would make `x` unsearchable. Identifiers without
/// a letter or digit (`_`) give nothing, and tokens over 64 bytes are skipped.
#[derive(Debug, Clone, Default)]
pub struct CodeTokenizer {
    /// Reused between texts.
    tokens: Vec<Token>,
}

/// The tokens of one text, from [`CodeTokenizer`].
#[derive(Debug)]
pub struct CodeTokenStream<'a> {
    tokens: &'a mut Vec<Token>,
    /// How many tokens `advance` has passed over.
    advanced: usize,
    /// What `token` returns before the first `advance` or after the last.
    none: Token,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.tokens.clear();
        push_tokens(text, &mut self.tokens);
        CodeTokenStream {
            tokens: &mut self.tokens,
            advanced: 0,
            none: Token::default(),
        }
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.advanced < self.tokens.len() {
            self.advanced += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        match self.advanced.checked_sub(1) {
            Some(i) => &self.tokens[i],
            None => &self.none,
        }
    }

    fn token_mut(&mut self) -> &mut Token {
        match self.advanced.checked_sub(1) {
            Some(i) => &mut self.tokens[i],
            None => &mut self.none,
        }
    }
}

/// The tokens of `text`, as [`CodeTokenizer`] gives them.
#[cfg(test)]
fn tokens(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    push_tokens(text, &mut tokens);
    tokens
}

/// The distinct tokens a query searches for: its tokens without English function words
/// (`where`, `the`, `is`), unless that would leave none.
fn query_tokens(query: &str) -> BTreeSet<String> {
    let mut all = Vec::new();
    let mut topical = Vec::new();
    for (start, end) in quarry_text::identifiers(query) {
        let function_word = quarry_text::is_stopword(&query[start..end].to_lowercase());
        let from = all.len();
        push_identifier(query, start, end, &mut all);
        if !function_word {
            topical.extend(all[from..].iter().map(|t: &Token| t.text.clone()));
        }
    }
    match topical.is_empty() {
        true => all.into_iter().map(|t| t.text).collect(),
        false => topical.into_iter().collect(),
    }
}

fn push_tokens(text: &str, tokens: &mut Vec<Token>) {
    for (start, end) in quarry_text::identifiers(text) {
        push_identifier(text, start, end, tokens);
    }
}

/// Pushes the tokens of the identifier at `text[start..end]`: the whole identifier,
/// lowercased, then each part's stem when it has more than one part, or the whole one's stem
/// when that differs.
fn push_identifier(text: &str, start: usize, end: usize, tokens: &mut Vec<Token>) {
    let identifier = &text[start..end];
    let parts = quarry_text::identifier_parts(identifier);
    let Some(&(first_start, first_end)) = parts.first() else {
        return;
    };
    let only_part = parts.len() == 1 && first_start == 0 && first_end == identifier.len();
    let mut push = |from: usize, to: usize, stemmed: bool| {
        let lowered = text[from..to].to_lowercase();
        let token = match stemmed {
            true => quarry_text::stem(&lowered).into_owned(),
            false => lowered,
        };
        if token.len() <= MAX_TOKEN_BYTES {
            tokens.push(Token {
                offset_from: from,
                offset_to: to,
                position: tokens.len(),
                text: token,
                position_length: 1,
            });
        }
    };
    push(start, end, false);
    if only_part {
        let lowered = identifier.to_lowercase();
        if quarry_text::stem(&lowered) != lowered.as_str() {
            push(start, end, true);
        }
    } else {
        for (from, to) in parts {
            push(start + from, start + to, true);
        }
    }
}

/// Preprocessor lines and attributes that open with `#` but are code, not comments.
const HASH_DIRECTIVES: &[&str] = &[
    "#[",
    "#!",
    "#include",
    "#define",
    "#if",
    "#else",
    "#elif",
    "#endif",
    "#undef",
    "#pragma",
    "#import",
    "#region",
    "#endregion",
];

/// The comment and docstring lines of a chunk's text, joined: lines that open with a
/// comment marker (`//`, `/*`, `*`, `#` but not `#[`, `#include`..., `--`, `;;`), and the
/// lines of a triple-quoted string that opens a line (Python's docstrings).
fn comments(text: &str) -> String {
    const QUOTES: [&str; 2] = ["\"\"\"", "'''"];
    let mut kept = String::new();
    let mut in_docstring: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let comment = if let Some(quote) = in_docstring {
            if trimmed.contains(quote) {
                in_docstring = None;
            }
            true
        } else if let Some(quote) = QUOTES
            .into_iter()
            .find(|q| trimmed.trim_start_matches(['r', 'b', 'u']).starts_with(q))
        {
            let opened = trimmed.find(quote).map_or(0, |i| i + quote.len());
            if !trimmed[opened..].contains(quote) {
                in_docstring = Some(quote);
            }
            true
        } else {
            ["//", "/*", "* ", "--", ";;"]
                .iter()
                .any(|marker| trimmed.starts_with(marker))
                || trimmed == "*"
                || (trimmed.starts_with('#')
                    && !HASH_DIRECTIVES.iter().any(|d| trimmed.starts_with(d)))
        };
        if comment {
            kept.push_str(trimmed);
            kept.push('\n');
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        tokens(text).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn identifiers_split_into_their_parts() {
        assert_eq!(
            texts("parseHTTPResponse"),
            ["parsehttpresponse", "pars", "http", "respons"]
        );
        assert_eq!(
            texts("read_to_string"),
            ["read_to_string", "read", "to", "string"]
        );
        assert_eq!(texts("HttpClient"), ["httpclient", "http", "client"]);
        assert_eq!(texts("utf8Decode"), ["utf8decode", "utf", "8", "decod"]);
        assert_eq!(texts("sha256"), ["sha256", "sha", "256"]);
        assert_eq!(
            texts("MAX_TOKEN_LEN"),
            ["max_token_len", "max", "token", "len"]
        );
        assert_eq!(texts("IOError"), ["ioerror", "io", "error"]);
        assert_eq!(texts("getX"), ["getx", "get", "x"]);
    }

    #[test]
    fn single_part_identifiers_give_one_token_and_their_stem() {
        assert_eq!(texts("parse"), ["parse", "pars"]);
        assert_eq!(texts("Parse"), ["parse", "pars"]);
        assert_eq!(texts("config"), ["config"]);
        assert_eq!(texts("x"), ["x"]);
        assert_eq!(texts("42"), ["42"]);
        // Underscores around one part still make it a part of its own.
        assert_eq!(texts("__init__"), ["__init__", "init"]);
    }

    #[test]
    fn punctuation_separates_identifiers() {
        assert_eq!(
            texts("fn parse(x: &str) -> Config {"),
            ["fn", "parse", "pars", "x", "str", "config"]
        );
        assert_eq!(texts("kebab-case"), ["kebab", "case", "cas"]);
        assert_eq!(
            texts("src/http_client/retry.rs"),
            [
                "src",
                "http_client",
                "http",
                "client",
                "retry",
                "retri",
                "rs"
            ]
        );
        assert_eq!(texts("_ __ -- !!"), Vec::<String>::new());
        assert_eq!(texts(""), Vec::<String>::new());
    }

    #[test]
    fn offsets_and_positions_point_into_the_text() {
        let text = "let readToEnd = 1;";
        let tokens = tokens(text);
        for (position, token) in tokens.iter().enumerate() {
            assert_eq!(token.position, position);
            assert_eq!(
                text[token.offset_from..token.offset_to].to_lowercase(),
                token.text
            );
        }
        assert_eq!(tokens[1].offset_from, 4);
        assert_eq!(tokens[3].text, "to");
    }

    #[test]
    fn unicode_letters_do_not_panic() {
        assert_eq!(texts("größeÄndern"), ["größeändern", "größe", "ändern"]);
        assert_eq!(texts("日本語テキスト"), ["日本語テキスト"]);
        assert_eq!(texts("名前Name"), ["名前name", "名前", "nam"]);
        assert_eq!(texts("ǅemal İstanbul ﬁx"), ["ǆemal", "i̇stanbul", "ﬁx"]);
        assert_eq!(texts("x²"), ["x²", "x", "²"]);
        let _ = texts("🦀crab\u{301}e\u{0}\u{FFFF}ß");
    }

    #[test]
    fn inflections_meet_and_exact_identifiers_keep_a_token_of_their_own() {
        assert_eq!(texts("handlers"), ["handlers", "handler"]);
        assert_eq!(texts("handler"), ["handler"]);
        assert_eq!(texts("parseRequests"), ["parserequests", "pars", "request"]);
        let query = query_tokens("Where are the request handlers registered?");
        assert_eq!(
            query.into_iter().collect::<Vec<_>>(),
            ["handler", "handlers", "register", "registered", "request"]
        );
        // A query of function words alone still searches for them.
        assert_eq!(query_tokens("is it").len(), 2);
    }

    #[test]
    fn comments_and_docstrings_are_gathered() {
        let rust =
            "/// Parses the file.\n#[inline]\nfn parse() {\n    // the header first\n    x\n}\n";
        assert_eq!(
            comments(rust),
            "/// Parses the file.\n// the header first\n"
        );
        let python =
            "def f():\n    \"\"\"Return the\n    answer.\"\"\"\n    # cached\n    return 42\n";
        assert_eq!(
            comments(python),
            "\"\"\"Return the\nanswer.\"\"\"\n# cached\n"
        );
        let c = "#include <stdio.h>\n/* open the stream */\nint x;\n";
        assert_eq!(comments(c), "/* open the stream */\n");
    }

    #[test]
    fn a_definition_outranks_a_mention_and_weights_can_drop_a_field() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = LexicalIndex::open_writer(dir.path()).unwrap();
        let defining = chunk(1, "src/a.rs", "rust", "retry", "fn retry() { loop {} }");
        let mentioning = chunk(
            2,
            "src/b.rs",
            "rust",
            "run",
            "fn run() { retry(); retry(); retry(); }",
        );
        index.apply(&[], &[&defining, &mentioning], 1).unwrap();
        let weights = LexicalWeights::default();
        assert_eq!(
            ids(&index.search("retry", 10, &all(), &weights).unwrap()),
            [1, 2]
        );
        let no_name = LexicalWeights {
            name: 0.0,
            ..weights
        };
        assert_eq!(
            ids(&index.search("retry", 10, &all(), &no_name).unwrap()),
            [2, 1]
        );
        assert!(
            LexicalWeights {
                body: -1.0,
                ..weights
            }
            .validate()
            .is_err()
        );
        let nothing = LexicalWeights {
            name: 0.0,
            container: 0.0,
            file: 0.0,
            dirs: 0.0,
            comments: 0.0,
            body: 0.0,
        };
        assert!(nothing.validate().is_err());
        assert!(weights.validate().is_ok());
    }

    #[test]
    fn long_tokens_are_skipped() {
        let long = "a".repeat(65);
        assert_eq!(texts(&long), Vec::<String>::new());
        let at_limit = "b".repeat(64);
        assert_eq!(texts(&at_limit), [at_limit]);
        // Too long whole, its parts still count.
        let joined = format!("{long}_parse");
        assert_eq!(texts(&joined), ["pars"]);
    }

    #[test]
    fn the_stream_yields_every_token_once() {
        let mut tokenizer = CodeTokenizer::default();
        let mut stream = tokenizer.token_stream("fooBar baz");
        assert_eq!(stream.token().text, "");
        let mut seen = Vec::new();
        while stream.advance() {
            seen.push(stream.token().text.clone());
        }
        assert!(!stream.advance());
        assert_eq!(seen, ["foobar", "foo", "bar", "baz"]);
        // The buffer is reused, not appended to.
        let mut stream = tokenizer.token_stream("one");
        assert_eq!(stream.next().map(|t| t.text.clone()), Some("one".into()));
        assert!(stream.next().is_none());
    }

    fn chunk(id: u128, path: &str, language: &str, name: &str, text: &str) -> StoredChunk {
        StoredChunk {
            id,
            path: path.into(),
            language: language.into(),
            kind: "function".into(),
            name: Some(name.into()),
            container: vec![],
            start_line: 1,
            end_line: 1,
            text: text.into(),
        }
    }

    fn ids(hits: &[(u128, f32)]) -> Vec<u128> {
        hits.iter().map(|(id, _)| *id).collect()
    }

    fn all() -> LexicalFilter {
        LexicalFilter::default()
    }

    /// A writer over a few chunks, committed as generation 1.
    fn sample() -> (tempfile::TempDir, LexicalIndex) {
        let dir = tempfile::tempdir().unwrap();
        let mut index = LexicalIndex::open_writer(dir.path()).unwrap();
        let chunks = [
            chunk(
                1,
                "src/config.rs",
                "rust",
                "parse_config",
                "fn parse_config(text: &str) -> Config { toml::from_str(text) }",
            ),
            chunk(
                2,
                "src/http_client/retry.rs",
                "rust",
                "retry",
                "fn retry(times: u32) { backoff(times) }",
            ),
            chunk(
                3,
                "lib/loader.py",
                "python",
                "load",
                "def load(path):\n    return parseConfig(open(path).read())",
            ),
        ];
        let added: Vec<&StoredChunk> = chunks.iter().collect();
        index.apply(&[], &added, 1).unwrap();
        (dir, index)
    }

    #[test]
    fn an_identifier_finds_the_chunk_defining_it() {
        let (_dir, index) = sample();
        let hits = index
            .search("parse_config", 10, &all(), &LexicalWeights::default())
            .unwrap();
        assert_eq!(hits[0].0, 1);
        let hits = index
            .search("backoff", 10, &all(), &LexicalWeights::default())
            .unwrap();
        assert_eq!(ids(&hits), [2]);
        assert!(
            index
                .search("nowhere", 10, &all(), &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn naming_conventions_match_each_other() {
        let (_dir, index) = sample();
        // camelCase query, snake_case definition (and the camelCase call in chunk 3).
        let hits = index
            .search("parseConfig", 10, &all(), &LexicalWeights::default())
            .unwrap();
        assert_eq!(ids(&hits).len(), 2);
        assert!(ids(&hits).contains(&1));
        // snake_case query, camelCase call.
        let hits = index
            .search("parse_config", 10, &all(), &LexicalWeights::default())
            .unwrap();
        assert!(ids(&hits).contains(&3));
    }

    #[test]
    fn path_tokens_match() {
        let (_dir, index) = sample();
        for query in ["http", "client", "http_client"] {
            assert_eq!(
                ids(&index
                    .search(query, 10, &all(), &LexicalWeights::default())
                    .unwrap()),
                [2],
                "{query}"
            );
        }
        assert_eq!(
            ids(&index
                .search("loader", 10, &all(), &LexicalWeights::default())
                .unwrap()),
            [3]
        );
    }

    #[test]
    fn empty_queries_find_nothing() {
        let (_dir, index) = sample();
        assert!(
            index
                .search("", 10, &all(), &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );
        assert!(
            index
                .search("  -> ::", 10, &all(), &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );
        assert!(
            index
                .search("retry", 0, &all(), &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn filters_apply_before_the_top_k_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = LexicalIndex::open_writer(dir.path()).unwrap();
        // 50 strong matches in a.rs, 3 weak ones in b.py.
        let mut chunks = Vec::new();
        for id in 0..50 {
            chunks.push(chunk(id, "a.rs", "rust", "decode", "decode decode decode"));
        }
        for id in 100..103 {
            chunks.push(chunk(id, "b.py", "python", "other", "calls decode once"));
        }
        let added: Vec<&StoredChunk> = chunks.iter().collect();
        index.apply(&[], &added, 1).unwrap();

        let unfiltered = index
            .search("decode", 10, &all(), &LexicalWeights::default())
            .unwrap();
        assert_eq!(unfiltered.len(), 10);
        assert!(ids(&unfiltered).iter().all(|id| *id < 50));

        let only_b = LexicalFilter {
            paths: Some(vec!["b.py".into()]),
            ..all()
        };
        assert_eq!(
            ids(&index
                .search("decode", 10, &only_b, &LexicalWeights::default())
                .unwrap()),
            [100, 101, 102]
        );

        let python = LexicalFilter {
            languages: vec!["python".into()],
            ..all()
        };
        assert_eq!(
            ids(&index
                .search("decode", 10, &python, &LexicalWeights::default())
                .unwrap()),
            [100, 101, 102]
        );

        let not_a = LexicalFilter {
            excluded_file: Some("a.rs".into()),
            ..all()
        };
        assert_eq!(
            ids(&index
                .search("decode", 10, &not_a, &LexicalWeights::default())
                .unwrap()),
            [100, 101, 102]
        );

        let both = LexicalFilter {
            paths: Some(vec!["a.rs".into(), "b.py".into()]),
            languages: vec!["rust".into(), "python".into()],
            excluded_file: Some("a.rs".into()),
        };
        assert_eq!(
            ids(&index
                .search("decode", 10, &both, &LexicalWeights::default())
                .unwrap()),
            [100, 101, 102]
        );

        let none = LexicalFilter {
            paths: Some(vec![]),
            ..all()
        };
        assert!(
            index
                .search("decode", 10, &none, &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );
        // The filter alone matches nothing: only the query scores.
        assert!(
            index
                .search("absent", 10, &only_b, &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn ties_are_broken_by_chunk_id() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = LexicalIndex::open_writer(dir.path()).unwrap();
        // Identical documents, added in a scrambled order over several commits (segments).
        let order: Vec<u128> = (0..40).map(|i| (i * 17) % 40).collect();
        for (generation, ids) in order.chunks(10).enumerate() {
            let chunks: Vec<StoredChunk> = ids
                .iter()
                .map(|&id| chunk(id, "same.rs", "rust", "same", "tie tie"))
                .collect();
            let added: Vec<&StoredChunk> = chunks.iter().collect();
            index.apply(&[], &added, generation as u64).unwrap();
        }
        for k in [1, 5, 13, 40, 100] {
            let hits = index
                .search("tie", k, &all(), &LexicalWeights::default())
                .unwrap();
            let expected: Vec<u128> = (0..40).take(k).collect();
            assert_eq!(ids(&hits), expected, "k={k}");
            assert!(hits.windows(2).all(|w| w[0].1 == w[1].1));
        }
    }

    #[test]
    fn apply_removes_and_replaces_chunks() {
        let (_dir, mut index) = sample();
        index.apply(&[2], &[], 2).unwrap();
        assert!(
            index
                .search("retry", 10, &all(), &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );

        // Re-adding an indexed id replaces it, even twice over.
        let changed = chunk(
            1,
            "src/config.rs",
            "rust",
            "parse_config",
            "fn renamed() {}",
        );
        index.apply(&[], &[&changed], 3).unwrap();
        index.apply(&[], &[&changed], 3).unwrap();
        assert_eq!(
            ids(&index
                .search("renamed", 10, &all(), &LexicalWeights::default())
                .unwrap()),
            [1]
        );
        assert!(
            index
                .search("toml", 10, &all(), &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );
        assert_eq!(index.generation(), Some(3));
    }

    #[test]
    fn rebuild_replaces_everything() {
        let (_dir, mut index) = sample();
        let fresh = chunk(9, "new.rs", "rust", "fresh", "fn fresh() {}");
        index.rebuild([fresh].into_iter(), 7).unwrap();
        assert!(
            index
                .search("retry", 10, &all(), &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            ids(&index
                .search("fresh", 10, &all(), &LexicalWeights::default())
                .unwrap()),
            [9]
        );
        assert_eq!(index.generation(), Some(7));
    }

    #[test]
    fn the_generation_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let index = LexicalIndex::open_writer(dir.path()).unwrap();
            assert_eq!(index.generation(), None);
        }
        {
            let mut index = LexicalIndex::open_writer(dir.path()).unwrap();
            assert_eq!(index.generation(), None);
            let c = chunk(1, "a.rs", "rust", "f", "fn f() {}");
            index.apply(&[], &[&c], 41).unwrap();
            assert_eq!(index.generation(), Some(41));
        }
        let index = LexicalIndex::open_writer(dir.path()).unwrap();
        assert_eq!(index.generation(), Some(41));
        assert_eq!(
            ids(&index
                .search("f", 10, &all(), &LexicalWeights::default())
                .unwrap()),
            [1]
        );
        drop(index);
        let reader = LexicalIndex::open_reader(dir.path()).unwrap().unwrap();
        assert_eq!(reader.generation(), Some(41));
    }

    #[test]
    fn a_reader_sees_the_writers_commits_after_refresh() {
        let dir = tempfile::tempdir().unwrap();
        assert!(LexicalIndex::open_reader(dir.path()).unwrap().is_none());
        assert!(
            LexicalIndex::open_reader(&dir.path().join("missing"))
                .unwrap()
                .is_none()
        );

        let mut writer = LexicalIndex::open_writer(dir.path()).unwrap();
        let mut reader = LexicalIndex::open_reader(dir.path()).unwrap().unwrap();
        assert_eq!(reader.generation(), None);
        assert!(
            reader
                .search("alpha", 10, &all(), &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );

        let alpha = chunk(1, "a.rs", "rust", "alpha", "fn alpha() {}");
        writer.apply(&[], &[&alpha], 5).unwrap();
        assert!(
            reader
                .search("alpha", 10, &all(), &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );
        reader.refresh().unwrap();
        assert_eq!(reader.generation(), Some(5));
        assert_eq!(
            ids(&reader
                .search("alpha", 10, &all(), &LexicalWeights::default())
                .unwrap()),
            [1]
        );
        // Nothing new: nothing changes.
        reader.refresh().unwrap();
        assert_eq!(reader.generation(), Some(5));

        writer.apply(&[1], &[], 6).unwrap();
        reader.refresh().unwrap();
        assert_eq!(reader.generation(), Some(6));
        assert!(
            reader
                .search("alpha", 10, &all(), &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );

        let error = reader.apply(&[], &[&alpha], 7).unwrap_err();
        assert!(matches!(error, StoreError::ReadOnly { .. }), "{error}");
    }

    #[test]
    fn a_second_writer_is_refused_without_wiping() {
        let (dir, _writer) = sample();
        let error = LexicalIndex::open_writer(dir.path()).unwrap_err();
        assert!(matches!(error, StoreError::Locked { .. }), "{error}");
        let reader = LexicalIndex::open_reader(dir.path()).unwrap().unwrap();
        assert_eq!(reader.generation(), Some(1));
    }

    #[test]
    fn garbage_is_wiped_by_the_writer() {
        let (dir, writer) = sample();
        drop(writer);
        fs::write(dir.path().join("meta.json"), [0x9f, 0x00, 0xff, 0x13, 0x37]).unwrap();
        let error = LexicalIndex::open_reader(dir.path()).unwrap_err();
        assert!(matches!(error, StoreError::Lexical { .. }), "{error}");

        let mut index = LexicalIndex::open_writer(dir.path()).unwrap();
        assert_eq!(index.generation(), None);
        assert!(
            index
                .search("retry", 10, &all(), &LexicalWeights::default())
                .unwrap()
                .is_empty()
        );
        let c = chunk(1, "a.rs", "rust", "again", "fn again() {}");
        index.apply(&[], &[&c], 2).unwrap();
        assert_eq!(
            ids(&index
                .search("again", 10, &all(), &LexicalWeights::default())
                .unwrap()),
            [1]
        );
    }

    #[test]
    fn another_schema_is_wiped_by_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let mut builder = Schema::builder();
        builder.add_text_field("title", tantivy::schema::TEXT);
        Index::create_in_dir(dir.path(), builder.build()).unwrap();
        assert!(LexicalIndex::open_reader(dir.path()).is_err());
        let index = LexicalIndex::open_writer(dir.path()).unwrap();
        assert_eq!(index.generation(), None);
        drop(index);
        assert!(LexicalIndex::open_reader(dir.path()).unwrap().is_some());
    }

    #[test]
    fn symbols_weigh_more_than_bodies() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = LexicalIndex::open_writer(dir.path()).unwrap();
        let caller = chunk(1, "a.rs", "rust", "main", "fn main() { tokenize(input) }");
        let mut definer = chunk(2, "b.rs", "rust", "tokenize", "fn tokenize(input: &str) {}");
        definer.container = vec!["Lexer".into()];
        index.apply(&[], &[&caller, &definer], 1).unwrap();
        assert_eq!(
            ids(&index
                .search("tokenize", 10, &all(), &LexicalWeights::default())
                .unwrap()),
            [2, 1]
        );
        assert_eq!(
            ids(&index
                .search("lexer", 10, &all(), &LexicalWeights::default())
                .unwrap()),
            [2]
        );
    }
}
