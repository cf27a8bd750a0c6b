//! [`LazyEmbedder`]: a model known at once, loaded when first asked to embed.

use std::sync::{Mutex, OnceLock};

use crate::EmbedError;
use crate::backend::{self, BackendInfo};
use crate::embedder::{Embedder, EmbedderOptions, ModelDescription};
use crate::loading::ModelFingerprint;
use crate::provision::ModelDir;

/// A model whose description (fingerprint, dimensions, maximum length) is read at once and
/// whose weights are loaded on the first [`LazyEmbedder::get`]: work that needs no vector
/// (a lexical search, a status, the first phase of an index run) never pays for the
/// weights (a quarter of a second and 200 MB for all-MiniLM-L6-v2).
///
/// ```
/// use quarry_embed::{DEFAULT_MODEL, EmbedderOptions, LazyEmbedder, Provisioner};
///
/// let model = Provisioner::from_env().resolve(&DEFAULT_MODEL)?;
/// let lazy = LazyEmbedder::new(&model, EmbedderOptions::default())?;
/// assert_eq!(lazy.dimensions(), 384);
/// assert!(!lazy.is_loaded());
/// let query = lazy.get()?.embed_query("read the configuration file")?;
/// assert_eq!(query.vector.len(), 384);
/// assert!(lazy.is_loaded());
/// # Ok::<(), quarry_embed::EmbedError>(())
/// ```
#[derive(Debug)]
pub struct LazyEmbedder {
    dir: ModelDir,
    options: EmbedderOptions,
    description: ModelDescription,
    loaded: OnceLock<Embedder>,
    /// Held while loading, so that two threads asking at once load the weights once.
    loading: Mutex<()>,
}

impl LazyEmbedder {
    /// Describes the model in `dir` (checking its files against the published digests
    /// where `dir` carries them); its weights wait for [`LazyEmbedder::get`].
    pub fn new(dir: &ModelDir, options: EmbedderOptions) -> Result<Self, EmbedError> {
        Ok(Self {
            dir: dir.clone(),
            options,
            description: ModelDescription::read(dir, options)?,
            loaded: OnceLock::new(),
            loading: Mutex::new(()),
        })
    }

    /// The model, loaded on the first call.
    pub fn get(&self) -> Result<&Embedder, EmbedError> {
        if let Some(embedder) = self.loaded.get() {
            return Ok(embedder);
        }
        let _loading = self
            .loading
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(embedder) = self.loaded.get() {
            return Ok(embedder);
        }
        let embedder = Embedder::load_described(&self.dir, self.description.clone(), self.options)?;
        Ok(self.loaded.get_or_init(|| embedder))
    }

    /// Whether the weights were loaded.
    pub fn is_loaded(&self) -> bool {
        self.loaded.get().is_some()
    }

    /// The backend the model runs on, or, before it was loaded, the one it would run on.
    pub fn backend(&self) -> Result<BackendInfo, EmbedError> {
        match self.loaded.get() {
            Some(embedder) => Ok(embedder.backend().clone()),
            None => Ok(backend::select(self.options.backend)?.1),
        }
    }

    /// The model's fingerprint.
    pub fn fingerprint(&self) -> &ModelFingerprint {
        &self.description.fingerprint
    }

    /// Length of every vector.
    pub fn dimensions(&self) -> usize {
        self.description.dimensions()
    }

    /// Longest input in tokens; longer texts are truncated.
    pub fn max_tokens(&self) -> usize {
        self.description.max_tokens()
    }
}
