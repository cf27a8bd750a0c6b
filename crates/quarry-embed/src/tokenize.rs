//! Texts to word-piece ids with the model's own `tokenizer.json`.

use std::path::{Path, PathBuf};

use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::EmbedError;

/// One text as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokenized {
    /// Word-piece ids, `[CLS]` first and `[SEP]` last.
    pub ids: Vec<u32>,
    /// Whether the text was cut to the maximum sequence length.
    pub truncated: bool,
}

/// The model's tokenizer, truncating to the model's maximum sequence length and never padding
/// (batches are padded to their own longest text when they are built).
#[derive(Debug)]
pub struct TextTokenizer {
    inner: Tokenizer,
    path: PathBuf,
}

impl TextTokenizer {
    /// Loads `tokenizer.json`, replacing its own truncation and padding: sentence-transformers
    /// models ship one that truncates at 128 and pads every text to 128, while the model's
    /// maximum sequence length is `max_seq_length`.
    pub fn load(path: &Path, max_seq_length: usize) -> Result<Self, EmbedError> {
        let error = |message: String| EmbedError::Tokenizer {
            path: path.to_path_buf(),
            message,
        };
        if !path.exists() {
            return Err(EmbedError::MissingFile {
                path: path.to_path_buf(),
            });
        }
        let mut inner = Tokenizer::from_file(path).map_err(|e| error(e.to_string()))?;
        inner
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: max_seq_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| error(e.to_string()))?;
        inner.with_padding(None);
        Ok(Self {
            inner,
            path: path.to_path_buf(),
        })
    }

    /// Tokenizes `texts`, in parallel.
    pub fn encode_batch(&self, texts: &[&str]) -> Result<Vec<Tokenized>, EmbedError> {
        let encodings =
            self.inner
                .encode_batch(texts.to_vec(), true)
                .map_err(|e| EmbedError::Tokenizer {
                    path: self.path.clone(),
                    message: e.to_string(),
                })?;
        Ok(encodings
            .into_iter()
            .map(|encoding| Tokenized {
                truncated: !encoding.get_overflowing().is_empty(),
                ids: encoding.get_ids().to_vec(),
            })
            .collect())
    }
}
