//! The acceptance test: token ids and embeddings match sentence-transformers on the reference
//! inputs (`fixtures/embed/minilm_reference.json`, computed with PyTorch from the same weights).

mod support;

use std::path::PathBuf;
use std::sync::OnceLock;

use quarry_embed::{Embedder, EmbedderOptions};
use serde_json::Value;

/// The default model on the backend `QUARRY_BACKEND` names (the CPU unless built with `wgpu`
/// and a GPU exists).
fn embedder() -> &'static Embedder {
    static EMBEDDER: OnceLock<Embedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| {
        let options = EmbedderOptions::from_env().unwrap();
        let embedder = Embedder::load(support::default_model(), options)
            .unwrap_or_else(|error| panic!("{error}"));
        eprintln!("backend: {}", embedder.backend());
        embedder
    })
}

struct Reference {
    id: String,
    text: String,
    input_ids: Vec<u32>,
    truncated: bool,
    embedding: Vec<f32>,
}

fn references() -> Vec<Reference> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/embed/minilm_reference.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| Reference {
            id: item["id"].to_string(),
            text: item["text"].as_str().unwrap().into(),
            input_ids: serde_json::from_value(item["input_ids"].clone()).unwrap(),
            truncated: item["truncated"].as_bool().unwrap(),
            embedding: serde_json::from_value(item["embedding"].clone()).unwrap(),
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
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
    assert!(
        worst.0 >= 0.9999,
        "input {} has cosine {}",
        worst.1,
        worst.0
    );
}

#[test]
fn a_text_embeds_the_same_alone_and_in_a_padded_batch() {
    let embedder = embedder();
    let texts = [
        "fn main() {}",
        "a much longer text that forces the short one to be padded a lot",
    ];
    let batched = embedder.embed(&texts).unwrap();
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
