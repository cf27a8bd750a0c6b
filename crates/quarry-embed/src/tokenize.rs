//! Texts, and (query, text) pairs, to word-piece ids with the model's own `tokenizer.json`.

use std::path::{Path, PathBuf};

use tokenizers::{
    EncodeInput, Encoding, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy,
};

use crate::EmbedError;

/// One text, or one pair of texts, as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokenized {
    /// Word-piece ids, `[CLS]` first and `[SEP]` last: `[CLS] text [SEP]`, or
    /// `[CLS] query [SEP] text [SEP]` for a pair.
    pub ids: Vec<u32>,
    /// The segment of every id: 0 for `[CLS] query [SEP]` (or all of a single text), 1 for
    /// `text [SEP]`.
    pub type_ids: Vec<u32>,
    /// Whether the text (or either text of a pair) was cut to the maximum sequence length.
    pub truncated: bool,
}

impl From<Encoding> for Tokenized {
    fn from(encoding: Encoding) -> Self {
        Self {
            truncated: !encoding.get_overflowing().is_empty(),
            ids: encoding.get_ids().to_vec(),
            type_ids: encoding.get_type_ids().to_vec(),
        }
    }
}

/// The model's tokenizer, truncating to the model's maximum sequence length and never padding
/// (batches are padded to their own longest text when they are built). A pair is truncated
/// `longest_first`, as sentence-transformers' `CrossEncoder` does: tokens come off the end of
/// the longer text until the pair fits, then off both.
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
        self.encode(texts.iter().map(|&text| text.into()).collect())
    }

    /// Tokenizes `query` paired with each of `texts` (`[CLS] query [SEP] text [SEP]`), in
    /// parallel.
    pub fn encode_pairs(&self, query: &str, texts: &[&str]) -> Result<Vec<Tokenized>, EmbedError> {
        self.encode(texts.iter().map(|&text| (query, text).into()).collect())
    }

    fn encode(&self, inputs: Vec<EncodeInput<'_>>) -> Result<Vec<Tokenized>, EmbedError> {
        let encodings =
            self.inner
                .encode_batch(inputs, true)
                .map_err(|e| EmbedError::Tokenizer {
                    path: self.path.clone(),
                    message: e.to_string(),
                })?;
        Ok(encodings.into_iter().map(Tokenized::from).collect())
    }
}
