//! What can go wrong in the engine.

use std::path::PathBuf;

use quarry_text::quoted;

/// An engine error: what went wrong, where, and (in the message) what to do.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The index could not be opened, read or written.
    #[error(transparent)]
    Store(#[from] quarry_store::StoreError),
    /// The tree could not be walked for changes.
    #[error(transparent)]
    Changes(#[from] quarry_changes::ChangesError),
    /// The model could not be loaded or run.
    #[error(transparent)]
    Embed(#[from] quarry_embed::EmbedError),
    /// The ranking configuration is invalid.
    #[error(transparent)]
    RankConfig(#[from] quarry_rank::ConfigError),
    /// Ranking failed.
    #[error("ranking: {0}")]
    Rank(#[from] quarry_rank::RankError),
    /// A leg weight or a lexical field weight is out of range, or a language unknown.
    #[error("search options: {0}")]
    SearchOptions(String),
    /// The repository root is missing or not a directory.
    #[error("{}: not a directory; give the root of the repository to index", path.display())]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The root is a system directory, a tree of special files, or a shared directory
    /// (home, temporary) without a project marker.
    #[error(
        "{}: {what}, not a project; give the root of a repository (the directory holding \
         its .git), with --root or from inside it",
        path.display()
    )]
    NotAProject {
        /// The path given.
        path: PathBuf,
        /// What it is instead.
        what: &'static str,
    },
    /// The engine was opened without the model's files
    /// ([`crate::Engine::open_without_model`]), and the work needs them.
    #[error(
        "{}: the embedding model's files are not here; `quarry model fetch` downloads them \
         (or point QUARRY_MODEL_DIR at a copy); until then search by words (--mode lexical) \
         and index with --lexical-only",
        path.display()
    )]
    NoModel {
        /// The repository root.
        path: PathBuf,
    },
    /// The engine was opened without the model's files, and the index was built with a
    /// model that chunks otherwise: its files cannot be chunked to match.
    #[error(
        "{}: the index was built with a model whose files are not here and which cuts files \
         otherwise than the default one, so it is searched by words as it is (files changed \
         since are not searched) and cannot be brought up to date; point QUARRY_MODEL_DIR at \
         that model's files, or rebuild with `quarry index --force` once `quarry model fetch` \
         has the default model",
        path.display()
    )]
    ForeignChunker {
        /// The repository root.
        path: PathBuf,
    },
    /// A command that only reads found no index.
    #[error("{}: no index here yet; `quarry index` builds one", path.display())]
    NoIndex {
        /// The repository root.
        path: PathBuf,
    },
    /// The query is empty.
    #[error("the query is empty; describe the code you are looking for, or give an identifier")]
    EmptyQuery,
    /// The query is longer than [`crate::MAX_QUERY_BYTES`].
    #[error(
        "the query is {bytes} bytes, more than the {} the search reads; describe the code in a \
         sentence, or find code like a chunk with `quarry related CHUNK_ID`",
        crate::MAX_QUERY_BYTES
    )]
    QueryTooLong {
        /// The query's length.
        bytes: usize,
    },
    /// Stored per-file data (the import graph's scores and links) could not be read.
    #[error("{path}: unreadable {data} record ({message}); re-index with --force")]
    CorruptFileData {
        /// The file it belongs to.
        path: String,
        /// Which data.
        data: &'static str,
        /// Why it could not be read.
        message: String,
    },
    /// A file of quarry's own could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A configuration file could not be parsed.
    #[error("{}: {message}; fix or delete the file", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line.
        message: String,
    },
    /// A library name that cannot be a scope, or reads as a path (`.`, `..`) or a flag.
    #[error(
        "{}: a library name is 1 to {} letters, digits, '-', '_' and '.', starting with a \
         letter or digit (the crate name, say), other than `all` and `project`",
        quoted(name),
        crate::MAX_LIBRARY_NAME
    )]
    LibraryName {
        /// The name given.
        name: String,
    },
    /// A library's directory is the repository, inside it or above it: the project's files
    /// would be indexed twice (and a directory above, everything beside them too).
    #[error(
        "{}: {relation} the repository {}; a library is a dependency's source directory \
         outside it (the repository's own files are searched with --scope project)",
        path.display(),
        root.display()
    )]
    LibraryOverlapsProject {
        /// The directory given, canonical.
        path: PathBuf,
        /// The repository's root, canonical.
        root: PathBuf,
        /// "is", "is inside" or "holds".
        relation: &'static str,
    },
    /// A library holds more than [`crate::MAX_LIBRARY_FILES`] files or
    /// [`crate::MAX_LIBRARY_BYTES`] bytes to index, and was not forced.
    #[error(
        "{}: holds at least {files} files and {:.1} MiB to index, over a library's limit of \
         {} files or {} MiB (counting stopped there); indexing it would take long and grow \
         the index as much: give the dependency's own directory, or add --force to index \
         all of it",
        path.display(),
        *bytes as f64 / f64::from(1u32 << 20),
        crate::MAX_LIBRARY_FILES,
        crate::MAX_LIBRARY_BYTES >> 20
    )]
    LibraryTooLarge {
        /// The directory given, canonical.
        path: PathBuf,
        /// The files counted before the walk stopped.
        files: u64,
        /// Their bytes.
        bytes: u64,
    },
    /// No library of that name is registered.
    #[error("no library named {} (registered: {}); `quarry lib list` shows them", quoted(name), if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    UnknownLibrary {
        /// The name given.
        name: String,
        /// The names registered.
        known: Vec<String>,
    },
    /// A scope that is neither the project, a registered library, nor all.
    #[error("unknown scope {}; the scopes are {}", quoted(scope), known.join(", "))]
    UnknownScope {
        /// The scope given.
        scope: String,
        /// The scopes there are.
        known: Vec<String>,
    },
    /// No chunk of that id is in the index.
    #[error(
        "no chunk {id} in the index; chunk ids come from search results (`chunk_id` in \
         --json, the last column otherwise) and change when the chunk's file is re-indexed \
         with other text"
    )]
    UnknownChunk {
        /// The id given.
        id: quarry_chunk::ChunkId,
    },
    /// No chunk's id starts with the prefix given.
    #[error(
        "no chunk id starts with {prefix}; chunk ids come from search results (`chunk_id` in \
         --json, the last column otherwise) and change when the chunk's file is re-indexed \
         with other text"
    )]
    UnknownChunkPrefix {
        /// The prefix given.
        prefix: quarry_chunk::ChunkIdPrefix,
    },
    /// Several chunks' ids start with the prefix given.
    #[error(
        "chunk id prefix {prefix} is ambiguous: {}; give more digits",
        matches.join(", ")
    )]
    AmbiguousChunkId {
        /// The prefix given.
        prefix: quarry_chunk::ChunkIdPrefix,
        /// The first few chunks it names: id, file and lines.
        matches: Vec<String>,
    },
    /// The chunk is indexed but waits for its vector (the index run's second phase).
    #[error(
        "chunk {id} has no vector yet: {pending} chunks wait for theirs; `quarry index` \
         embeds them (or `quarry search --wait`), then `related` can start from it"
    )]
    NotEmbedded {
        /// The id given.
        id: quarry_chunk::ChunkId,
        /// Chunks without their vector.
        pending: u64,
    },
}

impl EngineError {
    /// Whether another writer held the index: the write was refused, and what the index
    /// holds is still whole and readable.
    pub fn is_locked(&self) -> bool {
        matches!(
            self,
            EngineError::Store(quarry_store::StoreError::Locked { .. })
        )
    }

    /// Whether the index could not be written where it lies (a read-only directory or file
    /// system, a full disk): the write was refused or rolled back, and what the index holds
    /// is still whole and readable.
    pub fn is_unwritable(&self) -> bool {
        use std::io::ErrorKind::{
            PermissionDenied, QuotaExceeded, ReadOnlyFilesystem, StorageFull,
        };
        let source = match self {
            EngineError::Store(quarry_store::StoreError::Io { source, .. }) => source,
            EngineError::Io { source, .. } => source,
            _ => return false,
        };
        matches!(
            source.kind(),
            PermissionDenied | ReadOnlyFilesystem | StorageFull | QuotaExceeded
        )
    }
}
