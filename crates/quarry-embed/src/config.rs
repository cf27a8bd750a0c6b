//! The model's description, read from the files of a Hugging Face / sentence-transformers
//! model directory: `config.json` for the encoder (and a classifier's labels), `modules.json`,
//! `1_Pooling/config.json` and `sentence_bert_config.json` for what happens around it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::EmbedError;

/// The encoder's hyper-parameters, as Hugging Face's `BertConfig` names them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BertConfig {
    /// `bert` for the whole family quarry runs (BERT, MiniLM, BGE, E5, GTE).
    pub model_type: String,
    /// Size of the word-piece vocabulary.
    pub vocab_size: usize,
    /// Width of every hidden state.
    pub hidden_size: usize,
    /// Number of encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer; `hidden_size` is a multiple of it.
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Activation of the feed-forward layer.
    pub hidden_act: Activation,
    /// Length of the learned position table: the longest input the model can take.
    pub max_position_embeddings: usize,
    /// Number of token types (segments).
    #[serde(default = "default_type_vocab_size")]
    pub type_vocab_size: usize,
    /// Epsilon of every layer norm (BERT uses 1e-12, far below Burn's default).
    #[serde(default = "default_layer_norm_eps")]
    pub layer_norm_eps: f64,
    /// Only `absolute` positions are part of the BERT family quarry runs.
    #[serde(default = "default_position_embedding_type")]
    pub position_embedding_type: String,
    /// A classifier's label names by index (`{"0": "LABEL_0"}` for a one-logit cross-encoder);
    /// empty in an encoder's configuration.
    #[serde(default)]
    pub id2label: BTreeMap<String, String>,
}

impl BertConfig {
    /// Reads and checks `config.json` in `dir`.
    pub fn read(dir: &Path) -> Result<Self, EmbedError> {
        let path = dir.join(files::CONFIG);
        let bert: Self =
            read_json(&path)?.ok_or_else(|| EmbedError::MissingFile { path: path.clone() })?;
        check_supported(&bert, &path)?;
        Ok(bert)
    }

    /// Number of logits a classifier head on this encoder has: one per `id2label` entry, or
    /// Hugging Face's default of 2 where the configuration names none.
    pub fn num_labels(&self) -> usize {
        if self.id2label.is_empty() {
            2
        } else {
            self.id2label.len()
        }
    }
}

fn default_type_vocab_size() -> usize {
    2
}

fn default_layer_norm_eps() -> f64 {
    1e-12
}

fn default_position_embedding_type() -> String {
    "absolute".into()
}

/// The feed-forward activation named by `hidden_act`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Activation {
    /// The exact GELU, with `erf`.
    #[serde(rename = "gelu")]
    Gelu,
    /// GELU's tanh approximation.
    #[serde(alias = "gelu_new", alias = "gelu_pytorch_tanh", alias = "gelu_fast")]
    GeluTanh,
    /// The rectifier.
    #[serde(rename = "relu")]
    Relu,
}

/// How token states become one vector per text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Average of the states of all real (non-padding) tokens, `[CLS]` and `[SEP]` included.
    Mean,
    /// The state of the first token, `[CLS]`.
    Cls,
}

/// Everything about a model directory that decides its output.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// The encoder.
    pub bert: BertConfig,
    /// The pooling of token states.
    pub pooling: Pooling,
    /// Longest input in tokens (`[CLS]` and `[SEP]` included); longer ones are truncated.
    pub max_seq_length: usize,
    /// Whether vectors are L2-normalised; quarry normalises either way, so that cosine is a
    /// dot product, and this records what the model's authors intended.
    pub normalize: bool,
}

/// The files of a model directory that quarry reads.
pub mod files {
    /// The encoder's hyper-parameters.
    pub const CONFIG: &str = "config.json";
    /// The tokenizer, in the `tokenizers` library's format.
    pub const TOKENIZER: &str = "tokenizer.json";
    /// The weights.
    pub const WEIGHTS: &str = "model.safetensors";
    /// sentence-transformers: the module pipeline (transformer, pooling, normalise).
    pub const MODULES: &str = "modules.json";
    /// sentence-transformers: the pooling module's configuration.
    pub const POOLING: &str = "1_Pooling/config.json";
    /// sentence-transformers: the maximum sequence length.
    pub const SENTENCE_BERT: &str = "sentence_bert_config.json";
}

#[derive(Deserialize)]
struct ModuleEntry {
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

impl ModelConfig {
    /// Reads the configuration of the model in `dir`.
    ///
    /// `config.json` is required. The sentence-transformers files are optional: without them a
    /// plain Hugging Face BERT directory gets mean pooling, normalisation and the full position
    /// table as its maximum length.
    pub fn read(dir: &Path) -> Result<Self, EmbedError> {
        let bert = BertConfig::read(dir)?;

        let modules: Option<Vec<ModuleEntry>> = read_json(&dir.join(files::MODULES))?;
        let (pooling, normalize) = match &modules {
            None => (Pooling::Mean, true),
            Some(modules) => {
                let pooling_dir = modules
                    .iter()
                    .find(|m| m.kind.ends_with(".Pooling"))
                    .map(|m| m.path.clone())
                    .unwrap_or_else(|| "1_Pooling".into());
                let pooling_path = dir.join(pooling_dir).join("config.json");
                let pooling = match read_json::<PoolingConfig>(&pooling_path)? {
                    None => Pooling::Mean,
                    Some(config) => pooling_from(&config, &pooling_path)?,
                };
                let normalize = modules.iter().any(|m| m.kind.ends_with(".Normalize"));
                (pooling, normalize)
            }
        };

        let sentence_path = dir.join(files::SENTENCE_BERT);
        let max_seq_length = read_json::<SentenceBertConfig>(&sentence_path)?
            .and_then(|c| c.max_seq_length)
            .unwrap_or(bert.max_position_embeddings);
        if max_seq_length > bert.max_position_embeddings {
            return Err(EmbedError::InvalidConfig {
                path: sentence_path,
                message: format!(
                    "max_seq_length {max_seq_length} exceeds the model's {} positions",
                    bert.max_position_embeddings
                ),
            });
        }

        Ok(Self {
            bert,
            pooling,
            max_seq_length,
            normalize,
        })
    }
}

fn check_supported(bert: &BertConfig, path: &Path) -> Result<(), EmbedError> {
    let unsupported = |what: String| {
        Err(EmbedError::UnsupportedArchitecture {
            path: path.to_path_buf(),
            what,
        })
    };
    if bert.model_type != "bert" {
        return unsupported(format!("model_type \"{}\"", bert.model_type));
    }
    if bert.position_embedding_type != "absolute" {
        return unsupported(format!(
            "position_embedding_type \"{}\"",
            bert.position_embedding_type
        ));
    }
    if bert.num_attention_heads == 0 || !bert.hidden_size.is_multiple_of(bert.num_attention_heads) {
        return Err(EmbedError::InvalidConfig {
            path: path.to_path_buf(),
            message: format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                bert.hidden_size, bert.num_attention_heads
            ),
        });
    }
    Ok(())
}

fn pooling_from(config: &PoolingConfig, path: &Path) -> Result<Pooling, EmbedError> {
    let modes = [
        (config.pooling_mode_mean_tokens, Some(Pooling::Mean)),
        (config.pooling_mode_cls_token, Some(Pooling::Cls)),
        (config.pooling_mode_max_tokens, None),
        (config.pooling_mode_mean_sqrt_len_tokens, None),
    ];
    let chosen: Vec<_> = modes.iter().filter(|(on, _)| *on).collect();
    match chosen.as_slice() {
        [(_, Some(pooling))] => Ok(*pooling),
        _ => Err(EmbedError::UnsupportedArchitecture {
            path: path.to_path_buf(),
            what: "a pooling other than exactly one of mean or CLS".into(),
        }),
    }
}

/// Reads a JSON file; `None` when it does not exist.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, EmbedError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(EmbedError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|error| EmbedError::InvalidConfig {
            path: PathBuf::from(path),
            message: error.to_string(),
        })
}
