use std::path::PathBuf;

use crate::FileKey;

/// What can go wrong when naming files or ranking them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GraphError {
    /// The path is not below the repository root.
    #[error("{path} is not inside the repository at {root}")]
    OutsideRoot {
        /// The path as given.
        path: PathBuf,
        /// The repository root as given.
        root: PathBuf,
    },
    /// The path names the repository root itself, not a file in it.
    #[error("{0} is the repository root, not a file in it")]
    IsRoot(PathBuf),
    /// The path is not valid UTF-8, which keys must be.
    #[error("{0} is not valid UTF-8")]
    NotUtf8(PathBuf),
    /// A stored key that is not in the form [`crate::graph_key`] gives.
    #[error("{0:?} is not a repository-relative path with `/` separators")]
    NotAKey(String),
    /// A focus file of a related lookup is not in the graph.
    #[error("{0} is not in the graph")]
    UnknownFile(FileKey),
    /// A related lookup without focus files.
    #[error("a related lookup needs at least one focus file")]
    NoFocus,
    /// Personalisation weights that cannot be normalised.
    #[error(
        "personalisation weights must be {nodes} finite, non-negative numbers with a positive sum"
    )]
    BadWeights {
        /// How many weights the graph needs (one per node).
        nodes: usize,
    },
}
