//! The acceptance test: token ids and embeddings match sentence-transformers on the reference
//! inputs (`fixtures/embed/minilm_reference.json`, computed with PyTorch from the same weights).

mod support;

use std::sync::OnceLock;

use quarry_embed::{Embedder, EmbedderOptions};
use support::{cosine, lowest_cosine_allowed, references};

/// The default model on the backend `QUARRY_BACKEND` names (the CPU unless built with `wgpu`
/// and a GPU exists), in the precision `QUARRY_PRECISION` names (the fastest this CPU runs
/// unless set: CI runs this file again with `f32`, the fallback path).
fn embedder() -> &'static Embedder {
    static EMBEDDER: OnceLock<Embedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| {
        let options = EmbedderOptions::from_env().unwrap();
        let embedder = Embedder::load(quarry_testkit::model(), options)
            .unwrap_or_else(|error| panic!("{error}"));
        eprintln!(
            "backend: {}; precision {}",
            embedder.backend(),
            embedder.precision()
        );
        embedder
    })
}

#[test]
fn token_ids_match_sentence_transformers() {
    let embedder = embedder();
    let references = references();
    let texts: Vec<&str> = references.iter().map(|r| r.text.as_str()).collect();
    let tokenized = embedder.tokenize(&texts).unwrap();
    for (reference, tokens) in references.iter().zip(&tokenized) {
        assert_eq!(tokens.ids, reference.input_ids, "input {}", reference.id);
        assert_eq!(
            tokens.truncated, reference.truncated,
            "input {}",
            reference.id
        );
    }
}

#[test]
fn embeddings_match_sentence_transformers() {
    let embedder = embedder();
    let references = references();
    let texts: Vec<&str> = references.iter().map(|r| r.text.as_str()).collect();
    // One call: the inputs are sorted by length and batched with padding, as in indexing.
    let embeddings = embedder.embed(&texts).unwrap();
    assert_eq!(embeddings.len(), references.len());
    let mut worst = (1.0, String::new());
    for (reference, embedding) in references.iter().zip(&embeddings) {
        assert_eq!(embedding.vector.len(), 384);
        assert_eq!(
            embedding.tokens,
            reference.input_ids.len(),
            "input {}",
            reference.id
        );
        assert_eq!(
            embedding.truncated, reference.truncated,
            "input {}",
            reference.id
        );
        let similarity = cosine(&embedding.vector, &reference.embedding);
        if similarity < worst.0 {
            worst = (similarity, reference.id.clone());
        }
        let norm: f32 = embedding.vector.iter().map(|v| v * v).sum::<f32>().sqrt();
        assert!(
            (norm - 1.0).abs() < 1e-5,
            "input {} has norm {norm}",
            reference.id
        );
    }
    eprintln!(
        "lowest cosine to the reference: 1 - {:.1e} (input {})",
        1.0 - worst.0,
        worst.1
    );
    let allowed = lowest_cosine_allowed(embedder.precision());
    assert!(
        worst.0 >= allowed,
        "input {} has cosine {} in {}, below {allowed}",
        worst.1,
        worst.0,
        embedder.precision()
    );
}

#[test]
fn a_text_embeds_the_same_alone_and_in_a_padded_batch() {
    let embedder = embedder();
    // Two texts, one padded a lot; then a batch of thousands of tokens, which the host
    // takes after attention in blocks of rows, a block a thread, where a text alone is
    // too few rows for that.
    let many: Vec<String> = (0..40)
        .map(|i| {
            let body = "let total = values.iter().map(|v| v * 2).sum::<u64>(); ".repeat(1 + i % 5);
            format!("fn step_{i}(values: &[u64]) -> u64 {{ {body} total + {i} }}")
        })
        .collect();
    for texts in [
        vec![
            "fn main() {}",
            "a much longer text that forces the short one to be padded a lot",
        ],
        many.iter().map(String::as_str).collect(),
    ] {
        assert_texts_embed_alike_alone_and_in_a_batch(embedder, &texts);
    }
}

fn assert_texts_embed_alike_alone_and_in_a_batch(embedder: &Embedder, texts: &[&str]) {
    let batched = embedder.embed(texts).unwrap();
    for (text, in_batch) in texts.iter().zip(&batched) {
        let alone = embedder.embed_one(text).unwrap();
        assert!(cosine(&alone.vector, &in_batch.vector) > 0.99999, "{text}");
    }
}

#[test]
fn a_query_embeds_within_a_hair_of_full_precision() {
    let embedder = embedder();
    // Short and long queries, prose and code; past 14 tokens the products split by rows.
    let queries = [
        "parse_config",
        "wake the task blocked on a full channel",
        "where is the retry backoff computed when a request to the upstream server times out",
        "fn read_to_string(path: &Path) -> io::Result<String>",
    ];
    for query in queries {
        let full = embedder.embed_one(query).unwrap();
        let half = embedder.embed_query(query).unwrap();
        let largest = full
            .vector
            .iter()
            .zip(&half.vector)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        // Measured: cosines above 0.9999999, no coordinate off by more than 8e-5.
        assert!(cosine(&full.vector, &half.vector) > 0.999_999, "{query}");
        assert!(largest < 2e-4, "{query}: {largest}");
    }
}
