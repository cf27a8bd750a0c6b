//! [`Embedder`]: texts in, normalised vectors out.

use std::collections::HashMap;
use std::sync::mpsc;

use burn::tensor::{Device, Tensor, TensorData};

use crate::backend::{self, BackendChoice, BackendInfo};
use crate::bert::{BertModel, WEIGHT_KEY_RENAMES};
use crate::config::{ModelConfig, Pooling, files};
use crate::gemm::Kernel;
use crate::loading::{
    Batch, BatchLimits, ModelFingerprint, fingerprint, in_length_order, known_fingerprint,
    load_weights,
};
use crate::prepared;
use crate::provision::{KnownModel, ModelDir};
use crate::tokenize::{TextTokenizer, Tokenized};
use crate::{EmbedError, Level, Precision, PrecisionChoice};

/// How an [`Embedder`] (or a [`CrossEncoder`](crate::CrossEncoder)) runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbedderOptions {
    /// Which backend runs the model.
    pub backend: BackendChoice,
    /// Which precision the linear layers compute in.
    pub precision: PrecisionChoice,
    /// Most texts (or pairs) in one forward pass. Texts are sorted by length before batching,
    /// so a batch holds texts of similar length and little padding.
    pub batch_size: usize,
    /// Most tokens in one forward pass, padding included: a batch is cut at whichever of
    /// this and [`EmbedderOptions::batch_size`] it reaches first (a text longer than this
    /// goes alone).
    pub batch_tokens: usize,
    /// Truncate inputs to fewer tokens than the model's maximum sequence length (faster, and
    /// what a benchmark at a fixed length needs); `None` keeps the model's.
    pub max_tokens: Option<usize>,
}

impl Default for EmbedderOptions {
    fn default() -> Self {
        Self {
            backend: BackendChoice::Auto,
            precision: PrecisionChoice::Auto,
            // 256 texts a pass was no faster on tokio's sources than 32
            // (`bench-suite/reports/index-batch*.md`); the token budget binds for a model
            // that reads more than 256 tokens a text.
            batch_size: 32,
            batch_tokens: 8192,
            max_tokens: None,
        }
    }
}

impl EmbedderOptions {
    /// The defaults, with what the environment sets ([`EmbedderOptions::with_env`]).
    pub fn from_env() -> Result<Self, EmbedError> {
        Self::default().with_env()
    }

    /// These options, with the backend from `QUARRY_BACKEND` (`auto`, `cpu` or `gpu`) and
    /// the precision from `QUARRY_PRECISION` (`auto`, `f32`, `bf16` or `int8`) where set.
    pub fn with_env(self) -> Result<Self, EmbedError> {
        let set = |name| std::env::var(name).ok().filter(|value| !value.is_empty());
        let backend = match set("QUARRY_BACKEND") {
            Some(name) => name.parse()?,
            None => self.backend,
        };
        // The cap is read where the kernels start (once a process); refused here first.
        Level::cap_from_env().map_err(|message| EmbedError::InvalidSetting {
            name: "QUARRY_CPU",
            message,
        })?;
        let precision = match set("QUARRY_PRECISION") {
            Some(name) => name.parse().map_err(|message| EmbedError::InvalidSetting {
                name: "QUARRY_PRECISION",
                message,
            })?,
            None => self.precision,
        };
        Ok(Self {
            backend,
            precision,
            ..self
        })
    }

    /// Longest input in tokens of a model that reads `model_max` when run with these options.
    pub fn max_tokens_for(&self, model_max: usize) -> usize {
        match self.max_tokens {
            // At least [CLS] and [SEP].
            Some(max_tokens) => model_max.min(max_tokens.max(2)),
            None => model_max,
        }
    }

    /// The batch limits these options set.
    pub(crate) fn batch_limits(&self) -> BatchLimits {
        BatchLimits {
            texts: self.batch_size.max(1),
            tokens: self.batch_tokens,
        }
    }
}

/// One text's vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    /// L2-normalised, [`Embedder::dimensions`] long.
    pub vector: Vec<f32>,
    /// Tokens the model saw, `[CLS]` and `[SEP]` included.
    pub tokens: usize,
    /// Whether the text was cut to [`Embedder::max_tokens`]; only its start is embedded.
    pub truncated: bool,
}

/// What a model is without its weights: its configuration (with the maximum sequence
/// length `options` asks for) and its fingerprint (with the precision `options` resolves
/// to). Cheap to read: the weights' digest is remembered in the model directory while they
/// do not change.
#[derive(Debug, Clone)]
pub struct ModelDescription {
    /// The model's configuration.
    pub config: ModelConfig,
    /// Its fingerprint.
    pub fingerprint: ModelFingerprint,
}

impl ModelDescription {
    /// Describes the model in `dir` as [`Embedder::load`] with `options` would load it,
    /// checking its files against the published digests where `dir` carries them.
    pub fn read(dir: &ModelDir, options: EmbedderOptions) -> Result<Self, EmbedError> {
        let mut config = ModelConfig::read(&dir.path)?;
        config.max_seq_length = options.max_tokens_for(config.max_seq_length);
        let precision = options.precision.resolve(options.backend)?;
        let fingerprint = fingerprint(dir, config.max_seq_length, precision)?;
        Ok(Self {
            config,
            fingerprint,
        })
    }

    /// Length of every vector.
    pub fn dimensions(&self) -> usize {
        self.config.bert.hidden_size
    }

    /// Longest input in tokens; longer texts are truncated.
    pub fn max_tokens(&self) -> usize {
        self.config.max_seq_length
    }
}

// Beside `ModelDescription`: what a known model is, without its files.
impl KnownModel {
    /// Longest input in tokens when `options` run it.
    pub fn max_tokens_with(&self, options: EmbedderOptions) -> usize {
        options.max_tokens_for(self.max_tokens)
    }

    /// The fingerprint its files give when `options` run it ([`ModelDescription::read`]),
    /// known without them from the published digests they are checked against: what an
    /// index built with it records, before the model is fetched.
    pub fn fingerprint(&self, options: EmbedderOptions) -> Result<ModelFingerprint, EmbedError> {
        let precision = options.precision.resolve(options.backend)?;
        Ok(known_fingerprint(
            self,
            self.max_tokens_with(options),
            precision,
        ))
    }
}

/// Where an [`Embedder`]'s weights were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightsSource {
    /// The model's safetensors file (then saved prepared, where the layers run on the host).
    Safetensors,
    /// The prepared weights a previous load saved in the model directory: read straight into
    /// place, with nothing to decode, transpose or pack.
    Prepared,
}

/// The model in `dir` on `device`: from its prepared weights where the layers run on the
/// host and a previous load saved them, else from safetensors, then saved prepared for the
/// next process (best-effort: a read-only model directory only keeps the slow load).
fn load_model(
    dir: &ModelDir,
    config: &ModelConfig,
    fingerprint: &ModelFingerprint,
    device: &Device,
) -> Result<(BertModel, WeightsSource), EmbedError> {
    let prepared = prepared::path(&dir.path, fingerprint);
    let layout = BertModel::prepared_layout(&config.bert);
    // Only flex runs the host model: another backend would read the file for nothing.
    if *device == Device::flex()
        && let Some(model) = prepared::load(&prepared, fingerprint, &layout)
            .and_then(|arrays| BertModel::from_prepared(&config.bert, device, arrays))
    {
        return Ok((model, WeightsSource::Prepared));
    }
    let mut model = load_weights(
        BertModel::new(&config.bert, device),
        &dir.path.join(files::WEIGHTS),
        &WEIGHT_KEY_RENAMES,
    )?;
    model.pack_for_host();
    if let Some(arrays) = model.prepared_arrays() {
        let _ = prepared::save(&prepared, fingerprint, &arrays);
    }
    Ok((model, WeightsSource::Safetensors))
}

/// A loaded sentence-embedding model.
#[derive(Debug)]
pub struct Embedder {
    model: BertModel,
    weights: WeightsSource,
    tokenizer: TextTokenizer,
    device: Device,
    backend: BackendInfo,
    config: ModelConfig,
    fingerprint: ModelFingerprint,
    batch_limits: BatchLimits,
}

impl Embedder {
    /// Loads the model in `dir` onto the backend `options` asks for, checking its files against
    /// the published digests where `dir` carries them.
    pub fn load(dir: &ModelDir, options: EmbedderOptions) -> Result<Self, EmbedError> {
        Self::load_described(dir, ModelDescription::read(dir, options)?, options)
    }

    /// Loads the weights of the model `description` describes.
    pub(crate) fn load_described(
        dir: &ModelDir,
        description: ModelDescription,
        options: EmbedderOptions,
    ) -> Result<Self, EmbedError> {
        let ModelDescription {
            config,
            fingerprint,
        } = description;
        let (device, backend) = backend::select(options.backend)?;
        // The tokenizer (a 0.7 MB JSON file to parse) loads beside the weights.
        let (tokenizer, model) = std::thread::scope(|scope| {
            let tokenizer = scope.spawn(|| {
                TextTokenizer::load(&dir.path.join(files::TOKENIZER), config.max_seq_length)
            });
            let model = load_model(dir, &config, &fingerprint, &device);
            let tokenizer = tokenizer
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (tokenizer, model)
        });
        let (tokenizer, (model, weights)) = (tokenizer?, model?);
        Ok(Self {
            model,
            weights,
            tokenizer,
            device,
            backend,
            config,
            fingerprint,
            batch_limits: options.batch_limits(),
        })
    }

    /// Length of every vector.
    pub fn dimensions(&self) -> usize {
        self.config.bert.hidden_size
    }

    /// Longest input in tokens; longer texts are truncated.
    pub fn max_tokens(&self) -> usize {
        self.config.max_seq_length
    }

    /// The backend and device running the model.
    pub fn backend(&self) -> &BackendInfo {
        &self.backend
    }

    /// Where the weights were read from.
    pub fn weights_source(&self) -> WeightsSource {
        self.weights
    }

    /// The model's fingerprint.
    pub fn fingerprint(&self) -> &ModelFingerprint {
        &self.fingerprint
    }

    /// The instruction-set level the encoder runs at on the CPU (`None` on a GPU):
    /// [`quarry_kernels::level`]'s, or scalar where the model runs on Burn's generic path.
    pub fn cpu_level(&self) -> Option<Level> {
        self.model.cpu_level()
    }

    /// The instructions the linear layers' int8 products run on
    /// ([`quarry_kernels::int8_instructions`]); `None` in another precision or off the host.
    pub fn int8_instructions(&self) -> Option<&'static str> {
        let on_host = self.cpu_level().is_some_and(|level| level != Level::Scalar);
        (on_host && self.precision() == Precision::Int8)
            .then(quarry_kernels::int8_instructions)
            .flatten()
    }

    /// The precision the linear layers compute in.
    pub fn precision(&self) -> Precision {
        self.fingerprint.precision
    }

    /// The kernel documents are embedded with: the precision's own.
    fn document_kernel(&self) -> Kernel {
        match self.precision() {
            Precision::F32 => Kernel::F32,
            Precision::Bf16 => Kernel::Bf16,
            Precision::Int8 => Kernel::Int8,
        }
    }

    /// The kernel queries are embedded with: in `f32`, from half-precision copies of the
    /// weights (see [`Embedder::embed_query`]); otherwise the documents' own.
    fn query_kernel(&self) -> Kernel {
        match self.document_kernel() {
            Kernel::F32 => Kernel::F16Weights,
            reduced => reduced,
        }
    }

    /// The model's configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The token ids the model sees for `texts`.
    pub fn tokenize(&self, texts: &[&str]) -> Result<Vec<Tokenized>, EmbedError> {
        self.tokenizer.encode_batch(texts)
    }

    /// Embeds one text as [`Embedder::embed`] embeds it in a batch.
    pub fn embed_one(&self, text: &str) -> Result<Embedding, EmbedError> {
        self.embed_single(text, self.document_kernel())
    }

    /// Embeds a search query, in the documents' precision. In [`Precision::F32`] where the
    /// host runs the model at the AVX-512 level, the layers read half-precision copies of
    /// their weights ([`Kernel::F16Weights`]): a query's few tokens wait on streaming the
    /// weights more than on arithmetic, so this halves the bytes. The vector comes within
    /// 2e-4 of [`Embedder::embed_one`]'s in every coordinate (a test holds it to that);
    /// documents stay embedded in full precision. A reduced precision streams fewer bytes
    /// already, and its queries are computed as its documents are.
    pub fn embed_query(&self, query: &str) -> Result<Embedding, EmbedError> {
        self.embed_single(query, self.query_kernel())
    }

    /// One text, tokenized on this thread (starting a second costs more than a short
    /// text's tokens), then run on one of rayon's threads: the two dozen products of a
    /// forward pass then share out their work between rayon's threads without waking this
    /// one at each.
    fn embed_single(&self, text: &str, kernel: Kernel) -> Result<Embedding, EmbedError> {
        let tokenized = self.tokenizer.encode_batch(&[text])?;
        let mut embeddings = rayon::scope(|_| self.embed_tokenized(tokenized, kernel));
        Ok(embeddings.pop().expect("one embedding per text"))
    }

    /// Embeds `texts`, returning one [`Embedding`] per text, in order.
    ///
    /// A text that occurs more than once is embedded once. Texts are tokenized a window at a
    /// time on a second thread while the model runs on the previous window; within a window
    /// they are sorted by token count and batched within [`EmbedderOptions::batch_size`] and
    /// [`EmbedderOptions::batch_tokens`], so that padding stays small.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        let mut unique: Vec<&str> = Vec::with_capacity(texts.len());
        let mut seen: HashMap<&str, usize> = HashMap::with_capacity(texts.len());
        let slots: Vec<usize> = texts
            .iter()
            .map(|&text| {
                *seen.entry(text).or_insert_with(|| {
                    unique.push(text);
                    unique.len() - 1
                })
            })
            .collect();
        let embeddings = self.embed_unique(&unique)?;
        if unique.len() == texts.len() {
            return Ok(embeddings);
        }
        Ok(slots.into_iter().map(|i| embeddings[i].clone()).collect())
    }

    /// [`Embedder::embed`] of distinct texts.
    fn embed_unique(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        let window = self.batch_limits.texts * 8;
        let mut embeddings = Vec::with_capacity(texts.len());
        std::thread::scope(|scope| {
            let (sender, receiver) = mpsc::sync_channel(1);
            scope.spawn(move || {
                for chunk in texts.chunks(window) {
                    let tokenized = self.tokenizer.encode_batch(chunk);
                    let failed = tokenized.is_err();
                    if sender.send(tokenized).is_err() || failed {
                        break;
                    }
                }
            });
            for tokenized in receiver {
                embeddings.extend(self.embed_tokenized(tokenized?, self.document_kernel()));
            }
            Ok::<_, EmbedError>(())
        })?;
        Ok(embeddings)
    }

    /// Embeds already tokenized texts, in order.
    fn embed_tokenized(&self, texts: Vec<Tokenized>, kernel: Kernel) -> Vec<Embedding> {
        let vectors = in_length_order(&texts, self.batch_limits, |batch| {
            self.forward(batch, kernel)
        });
        texts
            .into_iter()
            .zip(vectors)
            .map(|(text, vector)| Embedding {
                vector,
                tokens: text.ids.len(),
                truncated: text.truncated,
            })
            .collect()
    }

    /// One forward pass: a normalised vector per text.
    fn forward(&self, batch: &[&Tokenized], kernel: Kernel) -> Vec<Vec<f32>> {
        let Batch {
            ids,
            token_types,
            padding,
            lengths,
            seq,
        } = Batch::new(batch, &self.device);
        let rows = batch.len();
        let padded = padding.is_some();
        let hidden = self.model.forward(ids, token_types, padding, kernel);
        let width = self.dimensions();
        let pooled = match self.config.pooling {
            Pooling::Cls => hidden
                .slice([0..rows, 0..1, 0..width])
                .reshape([rows, width]),
            Pooling::Mean if !padded => hidden.mean_dim(1).reshape([rows, width]),
            Pooling::Mean => {
                let weights: Vec<f32> = lengths
                    .iter()
                    .flat_map(|&len| {
                        (0..seq).map(move |i| if i < len { 1.0 / len as f32 } else { 0.0 })
                    })
                    .collect();
                let weights =
                    Tensor::<3>::from_data(TensorData::new(weights, [rows, seq, 1]), &self.device);
                (hidden * weights).sum_dim(1).reshape([rows, width])
            }
        };
        let values: Vec<f32> = pooled
            .into_data()
            .try_into_vec::<f32>()
            .expect("the model computes in f32");
        values.chunks(width).map(normalized).collect()
    }
}

/// `vector / |vector|`; a zero vector stays zero.
fn normalized(vector: &[f32]) -> Vec<f32> {
    let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
    let scale = if norm > 0.0 { 1.0 / norm } else { 0.0 };
    vector.iter().map(|v| v * scale).collect()
}
