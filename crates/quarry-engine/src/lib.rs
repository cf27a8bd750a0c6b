//! quarry's engine: index a repository and search it. The CLI, the MCP server and the
//! benchmark all go through it.
//!
//! ```no_run
//! use quarry_embed::{DEFAULT_MODEL, Provisioner};
//! use quarry_engine::{Engine, EngineOptions, SearchOptions};
//!
//! let model = Provisioner::from_env().resolve(&DEFAULT_MODEL)?;
//! let engine = Engine::open("path/to/repo".as_ref(), &model, EngineOptions::default())?;
//! let report = engine.index(&mut |event| eprintln!("{event:?}"))?;
//! println!("{} files read, {} chunks embedded", report.files_read, report.chunks_embedded);
//!
//! let response = engine.search("where is the configuration read", &SearchOptions::default())?;
//! for result in &response.results {
//!     let chunk = &result.chunk;
//!     println!("{}:{}-{} {:.3}", chunk.path, chunk.start_line, chunk.end_line, result.score);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - [`Engine::open`] describes the model (its weights load on first use) and opens (or
//!   creates) the index under `.quarry/` at the root to read; an index built with another
//!   model or chunker is refused with the fix. Writes take the writer lock for their
//!   duration only, so searches never wait on a writer, in this process or another.
//! - [`Engine::index`] brings the index in step with the working tree (see
//!   [`quarry_changes::detect_changes`]): changed files are chunked again, only new chunks are
//!   embedded, each batch commits atomically, the import graph's PageRank is stored per file,
//!   and the vector index is saved.
//! - [`Engine::search`] runs the dense and lexical legs, fuses their scores ([`Fusion`],
//!   weights by [`LegWeights`]) and ranks the candidates with one
//!   [`quarry_rank::Pipeline`] built from the options, led by a cross-encoder rerank when
//!   [`Engine::with_reranker`] provided one.
//! - [`Engine::related`] searches from a stored chunk's vector ("more like this").
//! - [`Engine::status`] reports what the index holds, the files it is behind on, and the
//!   files that drifted most when last re-indexed.
//! - [`Engine::add_library`] registers a dependency's sources, indexed beside the project
//!   under the scope `lib:<name>` and searchable alone or with it ([`Engine::scope_filter`]).
//! - [`Config`] reads a repository's defaults from `.quarry/config.toml`.

mod config;
mod error;
mod file_data;
mod index;
mod libraries;
mod related;
mod request;
mod root;
mod search;
mod status;
mod symbols;
pub mod view;

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use quarry_chunk::{Chunker, ChunkerConfig};
use quarry_embed::{
    CrossEncoder, EmbedderOptions, KnownModel, LazyEmbedder, ModelDir, ModelFingerprint, Precision,
    PrecisionChoice,
};
use quarry_store::{IndexSettings, Store, StoreError};

pub use config::{CONFIG_FILE, Config, Detail, IndexDefaults, SearchDefaults};
pub use error::EngineError;
pub use file_data::{DEFINITIONS_DATA, IMPORTS_DATA, LINKS_DATA, PAGERANK_DATA};
pub use index::{Embedded, IndexEvent, IndexReport, VectorCacheOptions};
pub use libraries::{
    ALL_SCOPES, LIBRARIES_FILE, Libraries, MAX_LIBRARY_BYTES, MAX_LIBRARY_FILES, MAX_LIBRARY_NAME,
    library_scope,
};
pub use related::{RelatedOptions, RelatedResponse};
pub use request::{MAX_PATH_GLOBS, ResultRequest};
pub use root::check_root;
pub use search::{
    Fusion, Leg, LegPlace, LegRank, LegShares, LegWeights, MAX_QUERY_BYTES, RRF_K, SearchMode,
    SearchOptions, SearchResponse, SearchResult, TargetRanks,
};
pub use status::{Coverage, Stale};
pub use symbols::{SYMBOL_LEG_DEPTH, SymbolHit, SymbolMatch};

// What front ends name from the crates below the engine, so that they depend on it alone.
pub use quarry_chunk::{ChunkId, ChunkIdPrefix, ChunkKind, Language, MAX_CHUNKS_PER_FILE};
pub use quarry_rank::{IncludeTests, MAX_LIMIT, MAX_PER_FILE, MAX_POOL, RankingConfig};
pub use quarry_store::{INDEX_DIR, MAX_PATH_GLOB_BYTES, VectorSaves};
pub use quarry_text::quoted;

/// The embedding models, as a front end finds, fetches and describes them.
pub mod model {
    pub use quarry_embed::provision::Progress;
    pub use quarry_embed::{
        BackendChoice, DEFAULT_MODEL, EmbedError, Embedder, EmbedderOptions, KnownModel,
        MS_MARCO_MINILM_L6, ModelDir, Precision, PrecisionChoice, Provisioner,
    };
}

/// How long [`Engine::open`] waits for another process that is creating or repairing the
/// index: it does so as it opens, so this is a bound, not a wait.
const WRITER_OPEN_WAIT: Duration = Duration::from_secs(5);

/// Opens the index at `root` to read once the writer that creates or repairs it has done so.
fn wait_for_writer(root: &Path, settings: IndexSettings) -> Result<Store, StoreError> {
    let deadline = Instant::now() + WRITER_OPEN_WAIT;
    loop {
        match Store::open_read_only(root, settings.clone()) {
            Err(StoreError::NoIndex { .. } | StoreError::NeedsRepair { .. })
                if Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            opened => return opened,
        }
    }
}

/// Refuses a `root` that is no directory, or one quarry does not index ([`check_root`]).
fn usable_root(root: &Path) -> Result<(), EngineError> {
    if !root.is_dir() {
        return Err(EngineError::NotADirectory {
            path: root.to_path_buf(),
        });
    }
    check_root(root)
}

/// Opens the index at `root` to read, after creating it (when `create`; else a missing index
/// is [`StoreError::NoIndex`]) or repairing it under the writer lock, which is then let go.
fn open_reader(root: &Path, settings: IndexSettings, create: bool) -> Result<Store, StoreError> {
    match Store::open_read_only(root, settings.clone()) {
        // A forced rebuild swapping its index in: there is one again in a moment.
        Err(StoreError::NoIndex { .. }) if Store::is_rebuilding(root) => {
            wait_for_writer(root, settings)
        }
        Err(missing @ StoreError::NoIndex { .. }) if !create => Err(missing),
        Err(StoreError::NoIndex { .. } | StoreError::NeedsRepair { .. }) => {
            match Store::open(root, settings.clone()) {
                Ok(written) => {
                    drop(written);
                    Store::open_read_only(root, settings)
                }
                Err(StoreError::Locked { .. }) => wait_for_writer(root, settings),
                Err(error) => Err(error),
            }
        }
        opened => opened,
    }
}

/// How an [`Engine`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineOptions {
    /// The model's backend and batch size.
    pub embedder: EmbedderOptions,
    /// Chunks embedded per commit in an index run's second phase: what an interrupted run
    /// loses at most.
    pub chunks_per_commit: usize,
    /// Files larger than this are recorded as skipped without being read: a data dump or
    /// a vendored amalgamation would cost hours of embedding for no useful results.
    pub max_file_bytes: u64,
    /// Embed each chunk behind its header (path, symbol, signature): on by default; off
    /// only to measure what the header is worth. An index remembers it, like the model.
    pub embed_header: bool,
    /// When an index run writes the vector index to disk: after every change by default;
    /// a long-lived process (`quarry mcp`), which keeps it in memory, after many.
    pub vector_saves: VectorSaves,
}

/// [`EngineOptions::max_file_bytes`]'s default, 2 MiB: larger than nearly every
/// hand-written source file.
pub const MAX_FILE_BYTES: u64 = 2 << 20;

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            embedder: EmbedderOptions::default(),
            chunks_per_commit: 64,
            max_file_bytes: MAX_FILE_BYTES,
            embed_header: true,
            vector_saves: VectorSaves::EveryChange,
        }
    }
}

/// A repository's index with the model that embeds into it.
#[derive(Debug)]
pub struct Engine {
    root: PathBuf,
    /// The index as last opened: swapped for a new handle when a forced rebuild (by any
    /// process) replaces the database ([`Engine::reopen_if_replaced`]). Requests hold their
    /// own `Arc`, so a swap never waits for one.
    store: RwLock<Arc<Store>>,
    /// The model, whose weights load on first use; `None` for an engine opened without its
    /// files ([`Engine::open_without_model`]).
    embedder: Option<LazyEmbedder>,
    /// The chunker made for the model the index records; `None` where the model's files
    /// are not here and it chunks otherwise than the one known without them.
    chunker: Option<Chunker>,
    options: EngineOptions,
    /// A cross-encoder that rescores candidates, when one was provisioned and asked for.
    reranker: Option<Arc<CrossEncoder>>,
    /// A [`Rebuild`]'s writer of the index it builds beside the live one.
    staged: Option<Store>,
    /// The machine's vector cache the second phase reads and fills, where one is used.
    vector_cache: Option<VectorCacheOptions>,
    /// The definitions table as the last search read it.
    symbols: symbols::SymbolCache,
}

/// What an engine embeds and chunks with.
#[derive(Debug)]
struct Model {
    /// Loaded on the first query or chunk to embed: lexical work never reads the weights.
    embedder: LazyEmbedder,
    chunker: Chunker,
}

impl Model {
    /// The model in `dir` as `options` run it (its weights not yet read), and its chunker.
    fn new(dir: &ModelDir, options: EngineOptions) -> Result<Self, EngineError> {
        let embedder = LazyEmbedder::new(dir, options.embedder)?;
        let chunker = chunker_for(embedder.max_tokens(), options);
        Ok(Self { embedder, chunker })
    }

    /// What an index built with this model records.
    fn settings(&self) -> IndexSettings {
        index_settings(
            self.embedder.fingerprint(),
            self.embedder.dimensions(),
            &self.chunker,
        )
    }
}

/// The chunker for a model that reads `max_tokens` tokens, as `options` run it.
fn chunker_for(max_tokens: usize, options: EngineOptions) -> Chunker {
    Chunker::new(ChunkerConfig {
        embed_header: options.embed_header,
        ..ChunkerConfig::for_max_tokens(max_tokens)
    })
}

/// What an index built by `chunker` for the model of `fingerprint` records.
fn index_settings(
    fingerprint: &ModelFingerprint,
    dimensions: usize,
    chunker: &Chunker,
) -> IndexSettings {
    IndexSettings {
        model: fingerprint.to_string(),
        dimensions,
        chunker: format!("{:?}", chunker.config()),
    }
}

/// A new index being built beside the live one ([`Engine::rebuild`]).
#[derive(Debug)]
pub struct Rebuild {
    engine: Engine,
}

impl Rebuild {
    /// [`Engine::with_vector_cache`] for the new index.
    pub fn with_vector_cache(self, options: Option<VectorCacheOptions>) -> Self {
        Self {
            engine: self.engine.with_vector_cache(options),
        }
    }

    /// The engine to index into: it reads and writes the new index alone.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Swaps the new index in for the live one, and returns the engine over it. Dropped
    /// without this, the new index is left unpublished (and removed by the next writer):
    /// a rebuild that failed or was killed changes nothing.
    pub fn finish(self) -> Result<Engine, EngineError> {
        let Engine {
            root,
            store,
            embedder,
            chunker,
            options,
            reranker,
            staged,
            symbols: _,
            vector_cache,
        } = self.engine;
        let settings = store
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .settings()
            .clone();
        let writer_lock = staged.expect("a rebuild holds its writer").publish()?;
        // Opened while the lock is still held: no writer comes between.
        let store = Store::open_read_only(&root, settings)?;
        drop(writer_lock);
        Ok(Engine {
            root,
            store: RwLock::new(Arc::new(store)),
            embedder,
            chunker,
            options,
            reranker,
            staged: None,
            symbols: Default::default(),
            vector_cache,
        })
    }
}

impl Engine {
    /// Opens the index of the repository at `root` (creating an empty one if there is none)
    /// for the model in `model`, whose weights are loaded when first needed.
    ///
    /// The engine reads the index's last commit and never waits on a writer: another
    /// process (`quarry mcp`, a `quarry index`) may write it meanwhile. Its own writes
    /// ([`Engine::index`] and the like) take the index's writer lock for their duration
    /// only, and are refused ([`quarry_store::StoreError::Locked`]) while another holds it.
    ///
    /// Where the precision is left to `auto` and the index was built in another one this CPU
    /// runs (an int8 index on a CPU without a dot-product instruction, an `f32` one built on
    /// a GPU), the engine computes in the index's, so that queries and documents agree.
    pub fn open(
        root: &Path,
        model: &ModelDir,
        options: EngineOptions,
    ) -> Result<Self, EngineError> {
        Self::open_adopting(root, model, options, |root, settings| {
            open_reader(root, settings, true)
        })
    }

    /// As [`Engine::open`] for a command that only reads: an index that is not there is
    /// [`EngineError::NoIndex`], and nothing is created.
    pub fn open_existing(
        root: &Path,
        model: &ModelDir,
        options: EngineOptions,
    ) -> Result<Self, EngineError> {
        let opened = Self::open_adopting(root, model, options, |root, settings| {
            open_reader(root, settings, false)
        });
        match opened {
            Err(EngineError::Store(StoreError::NoIndex { .. })) => Err(EngineError::NoIndex {
                path: root.to_path_buf(),
            }),
            opened => opened,
        }
    }

    /// Opens the index at `root` without `model`'s files (they are not here, and cannot be
    /// fetched), for the work that reads no weights: searching by words, status, and the
    /// first phase of an index run ([`Engine::index_files`]), whose chunks then wait for
    /// their vectors. A search by meaning, or embedding, is [`EngineError::NoModel`].
    ///
    /// A new index (when `create`; else no index is [`EngineError::NoIndex`]) records what
    /// `model` would, known from its published digests ([`KnownModel::fingerprint`]), so
    /// that once its files are here [`Engine::open`] opens it as its own and
    /// [`Engine::index`] embeds what waits. An existing index is read with what it records;
    /// one chunked otherwise than `model` chunks (built with another model) is searched by
    /// words as it is and not written ([`EngineError::ForeignChunker`]).
    pub fn open_without_model(
        root: &Path,
        model: &KnownModel,
        options: EngineOptions,
        create: bool,
    ) -> Result<Self, EngineError> {
        usable_root(root)?;
        let chunker = chunker_for(model.max_tokens_with(options.embedder), options);
        let store = match Store::open_recorded(root) {
            Err(StoreError::NoIndex { .. }) if create => {
                let fingerprint = model.fingerprint(options.embedder)?;
                let settings = index_settings(&fingerprint, model.dimensions, &chunker);
                open_reader(root, settings, true)?
            }
            Err(StoreError::NoIndex { .. }) => {
                return Err(EngineError::NoIndex {
                    path: root.to_path_buf(),
                });
            }
            opened => opened?,
        };
        let chunks_alike = store.settings().chunker == format!("{:?}", chunker.config());
        Ok(Self {
            root: root.to_path_buf(),
            store: RwLock::new(Arc::new(store)),
            embedder: None,
            chunker: chunks_alike.then_some(chunker),
            options,
            reranker: None,
            staged: None,
            symbols: Default::default(),
            vector_cache: None,
        })
    }

    /// Starts a new, empty index beside the one at `root`, whatever state that one is in
    /// (another model, a damaged file): index into [`Rebuild::engine`], then
    /// [`Rebuild::finish`] swaps it in. Until then every reader (in this process or
    /// another) answers from the index as it was, and other writers are refused.
    pub fn rebuild(
        root: &Path,
        model: &ModelDir,
        options: EngineOptions,
    ) -> Result<Rebuild, EngineError> {
        let mut staged = None;
        let engine = Self::open_with(root, model, options, |root, settings| {
            let writer = Store::stage(root, settings)?;
            let reader = writer.reader()?;
            staged = Some(writer);
            Ok(reader)
        })?;
        Ok(Rebuild {
            engine: Self { staged, ..engine },
        })
    }

    /// [`Engine::open_with`], in the precision the index was built in where `options` leave
    /// it to `auto`, the engine's own differs, and this CPU runs the index's.
    fn open_adopting(
        root: &Path,
        model: &ModelDir,
        options: EngineOptions,
        open: impl Fn(&Path, IndexSettings) -> Result<Store, StoreError>,
    ) -> Result<Self, EngineError> {
        let opened = Self::open_with(root, model, options, &open);
        if !matches!(
            opened,
            Err(EngineError::Store(StoreError::SettingsMismatch { .. }))
        ) || options.embedder.precision != PrecisionChoice::Auto
        {
            return opened;
        }
        let recorded = Store::open_recorded(root)?.settings().clone();
        for precision in Precision::ALL.into_iter().filter(|p| p.supported()) {
            let fixed = EngineOptions {
                embedder: EmbedderOptions {
                    precision: PrecisionChoice::Fixed(precision),
                    ..options.embedder
                },
                ..options
            };
            // A precision the backend refuses (a GPU computes in f32 only) is no candidate.
            if Model::new(model, fixed).is_ok_and(|candidate| candidate.settings() == recorded) {
                return Self::open_with(root, model, fixed, &open);
            }
        }
        opened
    }

    fn open_with(
        root: &Path,
        model: &ModelDir,
        options: EngineOptions,
        open: impl FnOnce(&Path, IndexSettings) -> Result<Store, StoreError>,
    ) -> Result<Self, EngineError> {
        usable_root(root)?;
        let model = Model::new(model, options)?;
        let store = open(root, model.settings())?;
        Ok(Self {
            root: root.to_path_buf(),
            store: RwLock::new(Arc::new(store)),
            embedder: Some(model.embedder),
            chunker: Some(model.chunker),
            options,
            reranker: None,
            staged: None,
            symbols: Default::default(),
            vector_cache: None,
        })
    }

    /// Runs `work` with the index opened for writing: other writers (in this process or
    /// another) are refused until it returns. The writer brings the engine's own vector
    /// index up to date ([`Store::share_vectors`]), and hands its notes over to the engine's
    /// handle ([`Store::hand_over`]). A rebuild's engine writes
    /// through the staged writer it holds.
    pub(crate) fn writing<T>(
        &self,
        work: impl FnOnce(&Store) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        if let Some(staged) = &self.staged {
            return work(staged);
        }
        let reader = self.current_store()?;
        let mut writer = Store::open(&self.root, reader.settings().clone())?;
        writer.set_vector_saves(self.options.vector_saves);
        // Under the writer lock no rebuild swaps another database in: the reader's vector
        // index, caught up by its searches, is the one to bring up to date.
        writer.share_vectors(&reader);
        let outcome = work(&writer);
        writer.hand_over(&reader);
        outcome
    }

    /// Rescores every search's candidates with the cross-encoder in `model` (the ranking's
    /// first layer, [`quarry_rank::CrossEncoderRerank`]). It reads each candidate with the
    /// query, so it costs one model run per candidate: seconds per query on a CPU.
    pub fn with_reranker(mut self, model: &ModelDir) -> Result<Self, EngineError> {
        self.reranker = Some(Arc::new(CrossEncoder::load(model, self.options.embedder)?));
        Ok(self)
    }

    /// Takes vectors from the machine's vector cache in `options`, and keeps those the
    /// model makes there, so that no chunk text is embedded twice on the machine for this
    /// model and precision: a second worktree or clone of an indexed repository has every
    /// vector in about half its first phase's time again. Off unless asked for (the command line and the MCP
    /// server ask, with the user's cache directory); `None` leaves it off.
    pub fn with_vector_cache(mut self, options: Option<VectorCacheOptions>) -> Self {
        self.vector_cache = options;
        self
    }

    /// The machine's vector cache this engine uses, if any.
    pub fn vector_cache(&self) -> Option<&VectorCacheOptions> {
        self.vector_cache.as_ref()
    }

    /// The repository root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The index, as last opened (see [`Engine::reopen_if_replaced`]).
    pub fn store(&self) -> Arc<Store> {
        Arc::clone(&self.store.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Opens the index again if the database this engine reads is no longer the index's
    /// ([`Store::is_replaced`]: a forced rebuild, in this process or another, swapped a new
    /// one in); whether it did. An index removed since is [`EngineError::NoIndex`]: a
    /// long-lived engine never answers from a dead one. Costs one `stat` when nothing
    /// changed; the engine's own requests ask before they read.
    pub fn reopen_if_replaced(&self) -> Result<bool, EngineError> {
        let current = self.store();
        if self.staged.is_some() || !current.is_replaced() {
            return Ok(false);
        }
        let reopened = match open_reader(&self.root, current.settings().clone(), false) {
            Err(StoreError::NoIndex { .. }) => {
                return Err(EngineError::NoIndex {
                    path: self.root.clone(),
                });
            }
            opened => Arc::new(opened?),
        };
        let mut store = self.store.write().unwrap_or_else(|p| p.into_inner());
        // Another request may have reopened it meanwhile: the first one's handle stays.
        if Arc::ptr_eq(&store, &current) {
            *store = reopened;
        }
        Ok(true)
    }

    /// The index to read for one request: opened again first where it was replaced.
    pub(crate) fn current_store(&self) -> Result<Arc<Store>, EngineError> {
        self.reopen_if_replaced()?;
        Ok(self.store())
    }

    /// The model, whose weights are loaded on the first query or chunk to embed; `None` for
    /// an engine opened without its files ([`Engine::open_without_model`]).
    pub fn model(&self) -> Option<&LazyEmbedder> {
        self.embedder.as_ref()
    }

    /// The embedding model, or why there is none.
    pub(crate) fn embedder(&self) -> Result<&LazyEmbedder, EngineError> {
        self.embedder.as_ref().ok_or_else(|| EngineError::NoModel {
            path: self.root.clone(),
        })
    }

    /// The chunker made for the model, or why there is none.
    pub(crate) fn chunker(&self) -> Result<&Chunker, EngineError> {
        self.chunker
            .as_ref()
            .ok_or_else(|| EngineError::ForeignChunker {
                path: self.root.clone(),
            })
    }
}
