//! The second phase's vectors, from the machine's vector cache where it has them and from
//! the model otherwise: a chunk text any index on this machine embedded with the same model
//! and precision is never embedded again.

use std::path::PathBuf;

use quarry_embed::LazyEmbedder;
use quarry_store::VectorCache;

use crate::EngineError;

/// Where the machine's vector cache lives and how large it may grow
/// ([`crate::Engine::with_vector_cache`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorCacheOptions {
    /// The directory of the cache's files, one per model and precision (by default
    /// `vectors/` in quarry's user cache directory).
    pub dir: PathBuf,
    /// About how many bytes each model's file may hold before the least recently used
    /// vectors leave ([`quarry_store::DEFAULT_VECTOR_CACHE_BYTES`] by default).
    pub max_bytes: u64,
}

impl VectorCacheOptions {
    /// The user's cache, bounded to `max_bytes`: in `QUARRY_VECTOR_CACHE_DIR`, else in
    /// `vectors/` of quarry's user cache directory ([`quarry_embed::user_cache_dir`]);
    /// `None` where there is neither.
    pub fn for_user(max_bytes: u64) -> Option<Self> {
        let dir = std::env::var_os("QUARRY_VECTOR_CACHE_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| quarry_embed::user_cache_dir().map(|dir| dir.join("vectors")))?;
        Some(Self { dir, max_bytes })
    }
}

/// One run's source of vectors.
pub(crate) struct Vectors<'e> {
    embedder: &'e LazyEmbedder,
    /// `None` without a cache, or once it failed: the run goes on with the model alone.
    cache: Option<VectorCache>,
    /// Chunks whose vectors came from the cache.
    pub from_cache: usize,
    /// What went wrong with the cache, one line each.
    pub warnings: Vec<String>,
}

impl<'e> Vectors<'e> {
    /// The vectors of `embedder`, through the cache that `options` name where they do.
    pub fn new(embedder: &'e LazyEmbedder, options: Option<&VectorCacheOptions>) -> Self {
        let mut vectors = Self {
            embedder,
            cache: None,
            from_cache: 0,
            warnings: Vec::new(),
        };
        if let Some(options) = options {
            let model = embedder.fingerprint().to_string();
            let opened = VectorCache::open(
                &options.dir,
                &model,
                embedder.dimensions(),
                options.max_bytes,
            );
            match opened {
                Ok((cache, repaired)) => {
                    vectors.warnings.extend(repaired);
                    vectors.cache = Some(cache);
                }
                Err(error) => vectors.give_up(error),
            }
        }
        vectors
    }

    /// What the cache holds of `texts`, in order: `None` for a text it lacks (or for every
    /// text without a cache).
    pub fn cached(&mut self, texts: &[&str]) -> Vec<Option<Vec<f32>>> {
        let found = match self.cache.as_ref().map(|cache| cache.get(texts)) {
            Some(Ok(found)) => found,
            Some(Err(error)) => {
                self.give_up(error);
                vec![None; texts.len()]
            }
            None => vec![None; texts.len()],
        };
        self.from_cache += found.iter().filter(|v| v.is_some()).count();
        found
    }

    /// The model's vectors of `texts`, in order, kept in the cache for the next index that
    /// holds them. The model loads on the first call.
    pub fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EngineError> {
        let embedded = self.embedder.get()?.embed(texts)?;
        if let Some(cache) = &self.cache {
            let entries: Vec<(&str, &[f32])> = texts
                .iter()
                .zip(&embedded)
                .map(|(text, embedding)| (*text, embedding.vector.as_slice()))
                .collect();
            if let Err(error) = cache.put(&entries) {
                self.give_up(error);
            }
        }
        Ok(embedded.into_iter().map(|e| e.vector).collect())
    }

    /// Goes on without the cache, saying why once.
    fn give_up(&mut self, error: quarry_store::StoreError) {
        self.cache = None;
        self.warnings.push(format!(
            "the vector cache is not used for the rest of this run: {error}"
        ));
    }
}
