//! What the [`Embedder`](crate::Embedder) and the [`CrossEncoder`](crate::CrossEncoder) share:
//! loading weights by Hugging Face names, fingerprinting a model directory, and turning
//! tokenized texts into padded batches.

use std::fmt;
use std::path::Path;

use burn::module::Module;
use burn::store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

use crate::EmbedError;
use crate::Precision;
use crate::config::files;
use crate::digests::DigestCache;
use crate::provision::{KnownModel, ModelDir, check_digest, hex};
use crate::tokenize::Tokenized;

/// Identifies a model's outputs: an index built with one fingerprint is invalid under another.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelFingerprint {
    /// The model's name, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    pub name: String,
    /// Its revision, or `local`.
    pub revision: String,
    /// sha256 over the digests of every file that decides the output (configuration,
    /// tokenizer, weights, pooling) and the maximum sequence length in use, in hex.
    pub digest: String,
    /// The precision the linear layers compute in: vectors of one differ from another's.
    pub precision: Precision,
}

impl fmt::Display for ModelFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            name,
            revision,
            digest,
            precision,
        } = self;
        write!(f, "{name}@{revision}#{} {precision}", &digest[..16])?;
        // int8's vectors also depend on how weights and rows are quantised.
        if *precision == Precision::Int8 {
            write!(f, " (scheme {})", quarry_kernels::INT8_SCHEME)?;
        }
        Ok(())
    }
}

/// Loads `model`'s weights from the safetensors file at `path`, renaming its Hugging Face keys
/// with `renames` ((regular expression, replacement) pairs, in order). Every tensor of `model`
/// must be in the file; tensors of the file that `model` lacks (a pooler, a head) are ignored.
pub(crate) fn load_weights<M: Module>(
    mut model: M,
    path: &Path,
    renames: &[(&str, &str)],
) -> Result<M, EmbedError> {
    let error = |message: String| EmbedError::Weights {
        path: path.to_path_buf(),
        message,
    };
    if !path.is_file() {
        return Err(EmbedError::MissingFile {
            path: path.to_path_buf(),
        });
    }
    let mut store = renames.iter().fold(
        SafetensorsStore::from_file(path)
            .with_from_adapter(PyTorchToBurnAdapter)
            // Checked below, with messages that name the model's files.
            .validate(false)
            .allow_partial(true),
        |store, (pattern, replacement)| store.with_key_remapping(*pattern, *replacement),
    );
    let result = model
        .load_from(&mut store)
        .map_err(|e| error(e.to_string()))?;
    let mut problems: Vec<String> = result.errors.iter().map(ToString::to_string).collect();
    problems.extend(
        result
            .missing
            .iter()
            .map(|(tensor, _)| format!("tensor {tensor} is missing")),
    );
    if problems.is_empty() {
        Ok(model)
    } else {
        Err(error(problems.join("; ")))
    }
}

/// The fingerprint of the model in `dir` run in `precision`, checking each file against its
/// published digest where `dir` has them. `max_seq_length` is part of it: truncating sooner
/// changes the outputs of long texts. Digests come from the directory's [`DigestCache`]
/// where the files did not change since they were hashed.
pub(crate) fn fingerprint(
    dir: &ModelDir,
    max_seq_length: usize,
    precision: Precision,
) -> Result<ModelFingerprint, EmbedError> {
    let mut cache = DigestCache::read(&dir.path);
    let mut digests = Vec::new();
    for file in FINGERPRINTED {
        let path = dir.path.join(file);
        if !path.is_file() {
            continue;
        }
        let digest = cache.digest(&path, file)?;
        let expected = dir
            .expected_digests
            .and_then(|digests| digests.iter().find(|(name, _)| *name == file));
        if let Some((_, expected)) = expected {
            check_digest(&path, expected, &digest)?;
        }
        digests.push((file, digest));
    }
    cache.save();
    Ok(combine(
        &dir.name,
        &dir.revision,
        digests,
        max_seq_length,
        precision,
    ))
}

/// The fingerprint [`fingerprint`] gives for the cached copy of `model`, from its published
/// digests (which [`fingerprint`] checks the files against), without reading a file.
pub(crate) fn known_fingerprint(
    model: &KnownModel,
    max_seq_length: usize,
    precision: Precision,
) -> ModelFingerprint {
    let digests = FINGERPRINTED.into_iter().filter_map(|file| {
        let (_, digest) = model.files.iter().find(|(name, _)| *name == file)?;
        Some((file, (*digest).to_owned()))
    });
    combine(
        model.name,
        model.revision,
        digests,
        max_seq_length,
        precision,
    )
}

/// The files whose digests decide a model's output, in the order they enter its fingerprint.
const FINGERPRINTED: [&str; 6] = [
    files::CONFIG,
    files::TOKENIZER,
    files::WEIGHTS,
    files::MODULES,
    files::POOLING,
    files::SENTENCE_BERT,
];

fn combine(
    name: &str,
    revision: &str,
    digests: impl IntoIterator<Item = (&'static str, String)>,
    max_seq_length: usize,
    precision: Precision,
) -> ModelFingerprint {
    use sha2::{Digest, Sha256};
    let mut combined = Sha256::new();
    for (file, digest) in digests {
        combined.update(file.as_bytes());
        combined.update(digest.as_bytes());
    }
    combined.update(format!("max_seq_length={max_seq_length}").as_bytes());
    ModelFingerprint {
        name: name.to_owned(),
        revision: revision.to_owned(),
        digest: hex(&combined.finalize()),
        precision,
    }
}

/// How large a forward pass may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchLimits {
    /// Most texts a batch.
    pub texts: usize,
    /// Most tokens a batch, padding included (its texts times its longest): long texts
    /// (a model reading 512 tokens) share a pass a few at a time.
    pub tokens: usize,
}

/// Runs `forward` over `texts` in batches within `limits` (always at least one text),
/// each holding texts of similar length (sorted by token count, so that padding stays
/// small), and returns its outputs in the order of `texts`. `forward` returns one output
/// per text of its batch.
pub(crate) fn in_length_order<T>(
    texts: &[Tokenized],
    limits: BatchLimits,
    mut forward: impl FnMut(&[&Tokenized]) -> Vec<T>,
) -> Vec<T> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].ids.len());
    let mut outputs: Vec<Option<T>> = std::iter::repeat_with(|| None).take(texts.len()).collect();
    let mut rest = &order[..];
    while !rest.is_empty() {
        // Sorted by length: a text's length is its batch's padded length so far.
        let fits = rest
            .iter()
            .enumerate()
            .take_while(|&(count, &i)| {
                count < limits.texts.max(1)
                    && (count == 0 || (count + 1) * texts[i].ids.len() <= limits.tokens)
            })
            .count();
        let (batch, later) = rest.split_at(fits);
        rest = later;
        let batch_texts: Vec<&Tokenized> = batch.iter().map(|&i| &texts[i]).collect();
        let batch_outputs = forward(&batch_texts);
        assert_eq!(batch_outputs.len(), batch.len(), "one output per text");
        for (&i, output) in batch.iter().zip(batch_outputs) {
            outputs[i] = Some(output);
        }
    }
    outputs
        .into_iter()
        .map(|output| output.expect("every text is in one batch"))
        .collect()
}

/// A batch of tokenized texts as the encoder takes it, padded to its longest text.
pub(crate) struct Batch {
    /// Token ids `[rows, seq]`, padded with 0.
    pub ids: Tensor<2, Int>,
    /// Token types `[rows, seq]`; `None` when all are 0 (single texts).
    pub token_types: Option<Tensor<2, Int>>,
    /// `[rows, seq, seq]`, true where the key position is padding; `None` when no row is
    /// padded.
    pub padding: Option<Tensor<3, Bool>>,
    /// Each text's token count.
    pub lengths: Vec<usize>,
    /// The padded length.
    pub seq: usize,
}

impl Batch {
    /// The batch of `texts` on `device`.
    pub fn new(texts: &[&Tokenized], device: &Device) -> Self {
        let rows = texts.len();
        let lengths: Vec<usize> = texts.iter().map(|t| t.ids.len()).collect();
        let seq = lengths.iter().copied().max().unwrap_or(0);
        let padded_rows = |values: fn(&Tokenized) -> &[u32]| -> Vec<i64> {
            texts
                .iter()
                .flat_map(|text| {
                    let row = values(text);
                    row.iter()
                        .map(|&v| i64::from(v))
                        .chain(std::iter::repeat_n(0, seq - row.len()))
                })
                .collect()
        };
        let int_tensor =
            |values| Tensor::<2, Int>::from_data(TensorData::new(values, [rows, seq]), device);
        let ids = int_tensor(padded_rows(|t| &t.ids));
        let token_types = texts
            .iter()
            .any(|t| t.type_ids.iter().any(|&kind| kind != 0))
            .then(|| int_tensor(padded_rows(|t| &t.type_ids)));
        let padding = lengths.iter().any(|&len| len < seq).then(|| {
            let masked: Vec<bool> = lengths
                .iter()
                .flat_map(|&len| (0..seq * seq).map(move |i| i % seq >= len))
                .collect();
            Tensor::<3, Bool>::from_data(TensorData::new(masked, [rows, seq, seq]), device)
        });
        Self {
            ids,
            token_types,
            padding,
            lengths,
            seq,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(tokens: usize) -> Tokenized {
        Tokenized {
            ids: vec![1; tokens],
            type_ids: vec![0; tokens],
            truncated: false,
        }
    }

    /// The token counts of each batch `in_length_order` forms within `limits`, and checks
    /// that every output lands at its text.
    fn batches(lengths: &[usize], limits: BatchLimits) -> Vec<Vec<usize>> {
        let texts: Vec<Tokenized> = lengths.iter().map(|&n| text(n)).collect();
        let mut seen = Vec::new();
        let outputs = in_length_order(&texts, limits, |batch| {
            seen.push(batch.iter().map(|t| t.ids.len()).collect::<Vec<_>>());
            batch.iter().map(|t| t.ids.len()).collect()
        });
        assert_eq!(outputs, lengths, "one output per text, in order");
        seen
    }

    #[test]
    fn batches_are_cut_by_tokens_or_texts_whichever_comes_first() {
        let limits = BatchLimits {
            texts: 4,
            tokens: 100,
        };
        // Short texts: four a batch (the text limit).
        assert_eq!(
            batches(&[5, 3, 4, 2, 6, 1], limits),
            [vec![1, 2, 3, 4], vec![5, 6]]
        );
        // Long ones: as many as fit 100 padded tokens; one longer than that goes alone.
        assert_eq!(
            batches(&[40, 30, 60, 150, 45], limits),
            [vec![30, 40], vec![45], vec![60], vec![150]]
        );
        assert!(batches(&[], limits).is_empty());
    }
}
