//! [`CrossEncoder`]: a query and each candidate text read together, one relevance score each.

use burn::tensor::Device;

use crate::EmbedError;
use crate::backend::{self, BackendInfo};
use crate::bert::{BertForSequenceClassification, CLASSIFIER_WEIGHT_KEY_RENAMES};
use crate::config::{BertConfig, files};
use crate::embedder::EmbedderOptions;
use crate::loading::{
    Batch, BatchLimits, ModelFingerprint, fingerprint, in_length_order, load_weights,
};
use crate::provision::ModelDir;
use crate::tokenize::{TextTokenizer, Tokenized};

/// How a [`CrossEncoder`] runs: the backend, the most pairs (and tokens) in one forward pass,
/// and an optional cap on the tokens of a pair below the model's maximum. It computes in
/// `f32` whatever the precision asked for: its scores rerank a few dozen candidates, and
/// reduced precision has not been measured on them.
pub type CrossEncoderOptions = EmbedderOptions;

/// A loaded cross-encoder: Hugging Face's `BertForSequenceClassification` with one label, as
/// sentence-transformers' `CrossEncoder` runs it (for example
/// [`MS_MARCO_MINILM_L6`](crate::provision::MS_MARCO_MINILM_L6)).
///
/// Each (query, text) pair is tokenized as `[CLS] query [SEP] text [SEP]`, with token type 0
/// for `[CLS] query [SEP]` and 1 for the rest, and truncated `longest_first` to
/// [`CrossEncoder::max_tokens`]. The encoder reads the pair, its pooler turns the `[CLS]`
/// state into `tanh(dense(h))`, and the classifier into one logit.
#[derive(Debug)]
pub struct CrossEncoder {
    model: BertForSequenceClassification,
    tokenizer: TextTokenizer,
    device: Device,
    backend: BackendInfo,
    config: BertConfig,
    max_tokens: usize,
    fingerprint: ModelFingerprint,
    batch_limits: BatchLimits,
}

impl CrossEncoder {
    /// Loads the cross-encoder in `dir` onto the backend `options` asks for, checking its
    /// files against the published digests where `dir` carries them.
    ///
    /// The directory holds `config.json` (a BERT whose `id2label` has exactly one label),
    /// `tokenizer.json` and `model.safetensors` (the encoder under `bert.` or without a
    /// prefix, `bert.pooler.dense` and `classifier`). Pairs are truncated to the model's
    /// position table (`max_position_embeddings`, 512 for MiniLM), or to
    /// `options.max_tokens` where that is smaller.
    pub fn load(dir: &ModelDir, options: CrossEncoderOptions) -> Result<Self, EmbedError> {
        let config = BertConfig::read(&dir.path)?;
        if config.num_labels() != 1 {
            return Err(EmbedError::UnsupportedArchitecture {
                path: dir.path.join(files::CONFIG),
                what: format!(
                    "a cross-encoder with {} labels (id2label); quarry's takes one logit",
                    config.num_labels()
                ),
            });
        }
        let max_tokens = options
            .max_tokens
            .map_or(config.max_position_embeddings, |max| {
                // At least [CLS] [SEP] [SEP].
                max.max(3).min(config.max_position_embeddings)
            });
        let fingerprint = fingerprint(dir, max_tokens, crate::Precision::F32)?;
        let tokenizer = TextTokenizer::load(&dir.path.join(files::TOKENIZER), max_tokens)?;
        let (device, backend) = backend::select(options.backend)?;
        let mut model = load_weights(
            BertForSequenceClassification::new(&config, &device),
            &dir.path.join(files::WEIGHTS),
            &CLASSIFIER_WEIGHT_KEY_RENAMES,
        )?;
        model.bert.pack_for_host();
        Ok(Self {
            model,
            tokenizer,
            device,
            backend,
            config,
            max_tokens,
            fingerprint,
            batch_limits: options.batch_limits(),
        })
    }

    /// Relevance of each of `texts` to `query`, in order: the model's raw logit, unbounded,
    /// higher is more relevant. For models trained like the MS MARCO cross-encoders (binary
    /// cross-entropy), `sigmoid(logit)` is a probability of relevance: see
    /// [`CrossEncoder::relevance`].
    pub fn score(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let pairs = self.tokenize(query, texts)?;
        Ok(self.score_tokenized(&pairs))
    }

    /// [`CrossEncoder::score`] through a sigmoid: relevance in `[0, 1]`, the scale quarry's
    /// ranking layers expect (`quarry_rank::Reranker` has this method's shape).
    pub fn relevance(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let logits = self.score(query, texts)?;
        Ok(logits.into_iter().map(sigmoid).collect())
    }

    /// Logits for already tokenized pairs, in order.
    pub fn score_tokenized(&self, pairs: &[Tokenized]) -> Vec<f32> {
        in_length_order(pairs, self.batch_limits, |batch| self.forward(batch))
    }

    /// The token ids (and types) the model sees for `query` paired with each of `texts`.
    pub fn tokenize(&self, query: &str, texts: &[&str]) -> Result<Vec<Tokenized>, EmbedError> {
        self.tokenizer.encode_pairs(query, texts)
    }

    /// Longest pair in tokens, `[CLS]` and both `[SEP]`s included; longer pairs are truncated.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The backend and device running the model.
    pub fn backend(&self) -> &BackendInfo {
        &self.backend
    }

    /// The model's fingerprint.
    pub fn fingerprint(&self) -> &ModelFingerprint {
        &self.fingerprint
    }

    /// The encoder's configuration.
    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    /// One forward pass: a logit per pair.
    fn forward(&self, batch: &[&Tokenized]) -> Vec<f32> {
        let Batch {
            ids,
            token_types,
            padding,
            ..
        } = Batch::new(batch, &self.device);
        self.model
            .forward(ids, token_types, padding)
            .into_data()
            .try_into_vec::<f32>()
            .expect("the model computes in f32")
    }
}

fn sigmoid(logit: f32) -> f32 {
    1.0 / (1.0 + (-logit).exp())
}
