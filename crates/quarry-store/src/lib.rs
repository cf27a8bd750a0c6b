//! quarry's on-disk index: files, chunks and their vectors in a [redb] database under
//! `.quarry/` at the repository root, with an HNSW graph ([hnsw_rs]) and a BM25 index
//! ([tantivy]) derived from it.
//!
//! ```
//! use quarry_chunk::{ChunkKind, Language};
//! use quarry_store::{FileState, Filter, IndexSettings, Store, StoredChunk};
//!
//! let repo = tempfile::tempdir()?;
//! let settings = IndexSettings { model: "demo".into(), dimensions: 2, chunker: "v1".into() };
//! let store = Store::open(repo.path(), settings)?;
//!
//! let chunk = StoredChunk {
//!     id: 7, path: "src/lib.rs".into(), language: Language::Rust, kind: ChunkKind::Function,
//!     name: Some("parse".into()), container: vec![], start_line: 1, end_line: 3,
//!     text: "fn parse() {}".into(),
//! };
//! let state = FileState {
//!     path: "src/lib.rs".into(), content_hash: 1, mtime_ns: 0, size: 13, chunk_ids: vec![7],
//! };
//! let mut batch = store.write()?;
//! batch.put_file(&state, &[(chunk, &[0.6, 0.8][..])])?;
//! batch.commit()?;
//!
//! let hits = store.search_dense(&[0.6, 0.8], 10, &Filter::default())?;
//! assert_eq!(hits[0].id.0, 7);
//! let hits = store.search_lexical("parse", 10, &Filter::default().path_glob("*.rs")?)?;
//! assert_eq!(hits[0].id.0, 7);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - **redb is the source of truth.** One write transaction per [`Batch`]: a batch is visible
//!   entirely or not at all, whenever the process dies.
//! - The index records the [`IndexSettings`] it was built with (model fingerprint,
//!   dimensions, chunker); opening it with others is [`StoreError::SettingsMismatch`], and
//!   [`Store::rebuild`] replaces it.
//! - One process writes ([`Store::open`]; a second writer gets [`StoreError::Locked`]), any
//!   number read ([`Store::open_read_only`]) and see its commits; a [`Snapshot`] is one
//!   consistent view.
//! - [`Store::search_dense`] answers from the vector index once the index holds
//!   [`EXACT_SCAN_BELOW`] vectors and [`Store::checkpoint`] has built it; below that, by an
//!   exact scan of the vectors, kept in memory (caught up with later commits): read by the
//!   first search from the rows the last checkpoint saved, or else from the database. The
//!   index is an HNSW graph calibrated when built: searches use the
//!   narrowest beam that reached [`RECALL_TARGET`] on held-out vectors, or an in-memory scan
//!   where that is faster ([`Calibration`], [`Store::vector_index`]).
//!   [`Store::search_lexical`] answers by BM25 over code-aware tokens ([`CodeTokenizer`]).
//!   Both apply the [`Filter`] inside the search. [`Store::search_exact`] scans every vector
//!   in the database: the oracle the graph is tested against.
//! - The graph and the lexical index are derived: tagged with the commit generation they
//!   reflect, brought up to date or rebuilt from redb when they lag or are damaged
//!   ([`Store::notes`] says when). [`Store::checkpoint`] saves the graph at the end of a run.
//! - Damaged files are an error, never a panic: a panic or a damaged-file error inside
//!   tantivy or redb is [`StoreError::Damaged`] or [`StoreError::Corrupt`], whose message
//!   says to rebuild. [`Store::check`] lists what is damaged ([`Damage`]), for a status.
//! - [`Batch::put_file`] records each re-indexed file's [`Drift`]; [`Store::drifts`] lists the
//!   files that moved most.
//!
//! Which files changed since they were recorded is quarry-changes' work: the store keeps
//! each file's [`FileState`] (size, mtime, content hash) for it to compare against.

mod ann;
mod best;
mod damage;
mod dot;
mod drift;
mod error;
mod filter;
mod index_dir;
mod lexical;
mod panics;
mod pending;
mod records;
mod search;
mod store;
mod vector_cache;

pub use ann::{
    BeamTrial, CALIBRATION_QUERIES, Calibration, DenseStrategy, EF_CONSTRUCTION, EF_SEARCH,
    EXACT_SCAN_BELOW, MAX_CONNECTIONS, MAX_EF, MAX_LAYERS, RECALL_TARGET,
    TOMBSTONE_REBUILD_FRACTION, VectorIndexInfo,
};
pub use damage::{Check, Damage, IndexPart};
pub use error::StoreError;
pub use filter::{Filter, MAX_PATH_GLOB_BYTES, PROJECT_SCOPE, scope_of};
pub use index_dir::{INDEX_DIR, index_dir};
pub use lexical::{CodeTokenizer, LexicalWeights};
pub use records::{Drift, FileState, IndexSettings, SCHEMA_VERSION, StoredChunk};
pub use store::{Batch, Counts, Hit, Snapshot, Store, VectorSaves};
pub use vector_cache::{DEFAULT_VECTOR_CACHE_BYTES, VectorCache, VectorCacheSize};
