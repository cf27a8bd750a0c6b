//! [`BenchError`].

use std::path::PathBuf;

/// What can go wrong in a benchmark run; each says which file or corpus, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A YAML file does not parse.
    #[error("{}: {message}", path.display())]
    Yaml {
        /// The file.
        path: PathBuf,
        /// The parser's message, with the line.
        message: String,
    },
    /// A case file parses but breaks a rule.
    #[error("{}: {message}", path.display())]
    InvalidCases {
        /// The file.
        path: PathBuf,
        /// The rule broken.
        message: String,
    },
    /// A corpus entry of `corpora.yaml` breaks a rule.
    #[error("corpus {name}: {message}")]
    InvalidCorpus {
        /// The corpus.
        name: String,
        /// The rule broken.
        message: String,
    },
    /// A manifest line does not parse.
    #[error("{}:{line}: expected `HASH LINES PATH`", path.display())]
    InvalidManifest {
        /// The manifest.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
    },
    /// A corpus could not be fetched, or is not what its manifest says.
    #[error("fetching corpus {corpus}: {message}")]
    Fetch {
        /// The corpus.
        corpus: String,
        /// What failed.
        message: String,
    },
    /// A peer arm's tool failed.
    #[error("{peer} on {corpus}: {message}")]
    Peer {
        /// The tool (`semble`, `ripgrep`).
        peer: String,
        /// The corpus it searched.
        corpus: String,
        /// What failed.
        message: String,
    },
    /// An arm needs a peer the run was not given.
    #[error("arm {arm} needs {peer}, which this run was not given")]
    MissingPeer {
        /// The arm.
        arm: String,
        /// What it needs.
        peer: String,
    },
    /// An `--ab` setting or `--ablate` part is unknown or has a bad value.
    #[error("{setting}: {message}")]
    Setting {
        /// The setting as given.
        setting: String,
        /// What is wrong.
        message: String,
    },
    /// A report (a baseline) does not parse.
    #[error("{}: not a relevance report ({message})", path.display())]
    InvalidReport {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// No corpus was selected.
    #[error("no corpus to run: name one with --corpus, or check corpora.yaml")]
    NothingToRun,
    /// The engine failed (indexing, searching).
    #[error(transparent)]
    Engine(#[from] quarry_engine::EngineError),
    /// The index could not be read.
    #[error(transparent)]
    Store(#[from] quarry_store::StoreError),
}

impl BenchError {
    /// Wraps an I/O error on `path` (for `map_err`).
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> BenchError {
        let path = path.to_path_buf();
        move |source| BenchError::Io { path, source }
    }
}
