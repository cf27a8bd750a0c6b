//! What can go wrong building a pipeline or ranking with it.

/// The error a [`Reranker`](crate::Reranker) reports; its own type, boxed.
pub type RerankError = Box<dyn std::error::Error + Send + Sync>;

/// A configuration value a layer cannot work with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A factor, strength or threshold outside the range its layer needs.
    #[error("ranking setting `{setting}` is {value}, but it must be {expected}")]
    OutOfRange {
        /// The setting, as named in [`RankingConfig`](crate::RankingConfig).
        setting: &'static str,
        /// The value given.
        value: f32,
        /// The range it must lie in, in words.
        expected: &'static str,
    },
    /// A count (`limit`, `pool`, `max_per_file`) outside its range: zero results is a
    /// mistake, and a count past the range would size the retriever's work and memory.
    #[error("ranking setting `{setting}` is {value}, but it must be {min} to {max}")]
    CountOutOfRange {
        /// The setting, as named in [`RankingConfig`](crate::RankingConfig).
        setting: &'static str,
        /// The value given.
        value: usize,
        /// The smallest value allowed.
        min: usize,
        /// The largest value allowed.
        max: usize,
    },
    /// A layer name (for example from `--ablate`) that names no layer.
    #[error("no ranking layer is called `{0}`; the layers are {names}", names = crate::LayerKind::names())]
    UnknownLayer(String),
}

/// What can go wrong ranking one query's candidates.
#[derive(Debug, thiserror::Error)]
pub enum RankError {
    /// A candidate arrived with a score that cannot be ordered (NaN or infinite).
    #[error("candidate {id} in {path} has score {score}; retrieval scores must be finite")]
    InvalidScore {
        /// The chunk's id.
        id: u128,
        /// Its file.
        path: String,
        /// The score it came with.
        score: f32,
    },
    /// The reranker failed.
    #[error("the reranker failed")]
    Reranker(#[source] RerankError),
    /// The reranker answered with another number of scores than it was given texts.
    #[error("the reranker returned {got} scores for {expected} candidates")]
    RerankerCount {
        /// How many texts it was given.
        expected: usize,
        /// How many scores it returned.
        got: usize,
    },
    /// The reranker returned a score that cannot be ordered.
    #[error("the reranker scored candidate {id} in {path} as {score}; scores must be finite")]
    RerankerScore {
        /// The chunk's id.
        id: u128,
        /// Its file.
        path: String,
        /// The score it was given.
        score: f32,
    },
}
