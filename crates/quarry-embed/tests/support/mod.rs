//! Shared by the integration tests: the reference vectors sentence-transformers computed for
//! the default model (which `quarry_testkit::model` provisions).

#![allow(dead_code)] // Each test binary uses its own part.

use std::path::PathBuf;

use quarry_embed::Precision;
use serde_json::Value;

/// An input of `fixtures/embed/minilm_reference.json` and what PyTorch made of it.
pub struct Reference {
    pub id: String,
    pub text: String,
    pub input_ids: Vec<u32>,
    pub truncated: bool,
    pub embedding: Vec<f32>,
}

/// The reference inputs, in the file's order.
pub fn references() -> Vec<Reference> {
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

/// The cosine of the angle between `a` and `b`.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

/// The lowest cosine to the reference vectors a precision may give (the acceptance bounds:
/// `f32` matches PyTorch, bf16 and int8 come close).
pub fn lowest_cosine_allowed(precision: Precision) -> f64 {
    match precision {
        Precision::F32 => 0.9999,
        Precision::Bf16 => 0.999,
        Precision::Int8 => 0.99,
    }
}
