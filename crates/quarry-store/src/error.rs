use std::path::PathBuf;

/// What can go wrong with an index. Every variant names the index and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The index was built with other settings (model, dimensions, chunker).
    #[error(
        "{path}: the index was built for {stored}, but this run uses {wanted}; rebuild it with \
         `quarry index --force`"
    )]
    SettingsMismatch {
        /// The index file.
        path: PathBuf,
        /// The settings it was built with.
        stored: String,
        /// The settings asked for.
        wanted: String,
    },
    /// The index was written by another version of quarry's schema.
    #[error(
        "{path}: index schema version {found}, this quarry reads version {expected}; rebuild it \
         with `quarry index --force`"
    )]
    SchemaMismatch {
        /// The index file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },
    /// The index file is damaged.
    #[error(
        "{path}: the index is corrupt ({message}); rebuild it with `quarry index --force` (or \
         delete the .quarry directory)"
    )]
    Corrupt {
        /// The index file.
        path: PathBuf,
        /// What the database found.
        message: String,
    },
    /// Another process holds the index for writing.
    #[error("{path}: another quarry process is writing this index; wait for it to finish")]
    Locked {
        /// The index file.
        path: PathBuf,
    },
    /// A writer died mid-write and no writer has opened the index since to repair it; a
    /// reader cannot.
    #[error(
        "{path}: the index was left mid-write (a quarry process was killed); open it for writing (`quarry index`) to repair it"
    )]
    NeedsRepair {
        /// The index file.
        path: PathBuf,
    },
    /// There is no index to read.
    #[error("{path}: no index here; build one with `quarry index`")]
    NoIndex {
        /// Where the index was looked for.
        path: PathBuf,
    },
    /// The index directory, or something in it, is a symbolic link: quarry would write or
    /// remove files wherever it points (a cloned repository can commit one).
    #[error(
        "{path}: is a symbolic link, and quarry never follows links in its index directory \
         (they would make it write and delete files outside the repository); remove the link \
         (`rm {path}`) and run `quarry index` again"
    )]
    Link {
        /// The link.
        path: PathBuf,
    },
    /// The index directory's name is taken by something that is not a directory.
    #[error(
        "{path}: is not a directory, but quarry keeps its index there; move it away and run \
         `quarry index` again"
    )]
    NotADirectory {
        /// What is there.
        path: PathBuf,
    },
    /// A write was attempted through a read-only handle.
    #[error("{path}: opened read-only; open the index with `Store::open` to write it")]
    ReadOnly {
        /// The index file.
        path: PathBuf,
    },
    /// A vector of the wrong length was given.
    #[error("vector for chunk {chunk:032x} has {found} dimensions; the index holds {expected}")]
    Dimensions {
        /// The chunk.
        chunk: u128,
        /// The index's dimensions.
        expected: usize,
        /// The vector's length.
        found: usize,
    },
    /// A query vector of the wrong length was given.
    #[error(
        "the query vector has {found} dimensions; the index holds {expected} (was it embedded \
         with the index's model?)"
    )]
    QueryDimensions {
        /// The index's dimensions.
        expected: usize,
        /// The query's length.
        found: usize,
    },
    /// A file state names a chunk that is neither stored nor given.
    #[error("{path}: chunk {chunk:032x} is neither in the index nor in the batch")]
    MissingChunk {
        /// The file.
        path: String,
        /// The chunk.
        chunk: u128,
    },
    /// An invalid path glob.
    #[error("invalid path glob {glob}: {message}")]
    Glob {
        /// The glob, quoted (and shortened: see [`quarry_text::quoted`]).
        glob: String,
        /// Why it is invalid.
        message: String,
    },
    /// Path globs too large to compile together: each may be valid, and the set too big.
    #[error(
        "the path globs together are too large to compile: {globs} globs of {bytes} bytes, \
         {limit}; the longest is {longest}: name directories (`src/**`) rather than files"
    )]
    GlobsTooLarge {
        /// How many globs.
        globs: usize,
        /// Their bytes together.
        bytes: usize,
        /// The limit they passed: quarry's ([`crate::MAX_PATH_GLOB_BYTES`]) or globset's.
        limit: String,
        /// The longest glob, quoted (and shortened: see [`quarry_text::quoted`]).
        longest: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A part of the index is damaged: its files were changed outside quarry (a disk error,
    /// a tool, a hand), so that reading them failed, or panicked inside the library that
    /// reads them (tantivy, redb). Nothing is read from it until it is rebuilt; a derived
    /// part (the lexical index) is rebuilt from the database by the next writer to open the
    /// index (`quarry index`).
    #[error("{path}: {what} ({detail}) is damaged: rebuild with `quarry index --force`")]
    Damaged {
        /// The damaged file or directory.
        path: PathBuf,
        /// Which part of the index ("the lexical index", "the index database").
        what: String,
        /// What went wrong reading it.
        detail: String,
    },
    /// The lexical (BM25) index failed.
    #[error("{path}: lexical index: {message}; rebuild it with `quarry index --force`")]
    Lexical {
        /// The lexical index directory.
        path: PathBuf,
        /// What tantivy reported.
        message: String,
    },
    /// The approximate nearest-neighbour index failed.
    #[error("{path}: vector index: {message}")]
    Ann {
        /// The vector index file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Any other database failure.
    #[error("{path}: index database: {message}")]
    Database {
        /// The index file.
        path: PathBuf,
        /// The database's error.
        message: String,
    },
}
