//! What the store's integration tests share.
#![allow(dead_code)] // Each test binary uses its own part.

use quarry_store::{IndexSettings, Store};

/// A seeded xorshift source: the same draws on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The settings of a test's index: its own model name, vectors of `dimensions`.
pub fn settings(model: &str, dimensions: usize) -> IndexSettings {
    IndexSettings {
        model: model.into(),
        dimensions,
        chunker: "v1".into(),
    }
}

/// A deterministic unit vector of `dimensions`, drawn from `seed`.
pub fn unit(seed: u64, dimensions: usize) -> Vec<f32> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut v: Vec<f32> = (0..dimensions)
        .map(|_| (rng.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// Removes the file at `path` from the index, in a commit of its own.
pub fn remove_file(store: &Store, path: &str) {
    let mut batch = store.write().unwrap();
    batch.remove_file(path).unwrap();
    batch.commit().unwrap();
}
