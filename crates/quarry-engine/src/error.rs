//! What can go wrong in the engine.

use std::path::PathBuf;

/// An engine error: what went wrong, where, and (in the message) what to do.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The index could not be opened, read or written.
    #[error(transparent)]
    Store(#[from] quarry_store::StoreError),
    /// The model could not be loaded or run.
    #[error(transparent)]
    Embed(#[from] quarry_embed::EmbedError),
    /// The ranking configuration is invalid.
    #[error("ranking configuration: {0}")]
    RankConfig(#[from] quarry_rank::ConfigError),
    /// Ranking failed.
    #[error("ranking: {0}")]
    Rank(#[from] quarry_rank::RankError),
    /// The repository root is missing or not a directory.
    #[error("{}: not a directory; give the root of the repository to index", path.display())]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The query is empty.
    #[error("the query is empty; describe the code you are looking for, or give an identifier")]
    EmptyQuery,
    /// A stored import-graph score could not be read.
    #[error("{path}: unreadable PageRank record ({message}); re-index with --force")]
    CorruptScore {
        /// The file it belongs to.
        path: String,
        /// Why it could not be read.
        message: String,
    },
}
