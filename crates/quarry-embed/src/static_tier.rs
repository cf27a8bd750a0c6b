//! A static embedding table distilled from the transformer: one row per vocabulary token, so
//! that a text's vector is a weighted mean of rows, with no model run.
//!
//! The recipe (after model2vec's published distillation): every vocabulary token is run
//! through the model alone (`[CLS] token [SEP]`, the model's own pooling); the outputs are
//! centred and reduced by PCA; each row is weighted by `SIF / (SIF + p)`, `p` a Zipf
//! estimate of the token's frequency from its rank in the vocabulary (word-piece vocabularies
//! list common pieces first). A text is tokenized as for the model and its vector is the
//! mean of its tokens' rows (special tokens left out), normalised.

use std::path::Path;

use crate::tokenize::Tokenized;
use crate::{EmbedError, Embedder};

/// Dimensions kept by the PCA.
pub const STATIC_DIMENSIONS: usize = 256;
/// The smoothing of the frequency weights.
const SIF: f64 = 1e-4;
/// Names the recipe: a table made otherwise has another fingerprint.
pub const STATIC_RECIPE: &str = "single-token passes, pca 256, sif 1e-4 by rank, v1";

/// The table.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticEmbedder {
    rows: Vec<f32>,
    dimensions: usize,
    /// `[CLS]` and `[SEP]`, left out of a text's mean.
    special: [u32; 2],
}

impl StaticEmbedder {
    /// Distils the table from `embedder`'s model: one model pass per vocabulary token.
    pub fn distill(embedder: &Embedder) -> Result<Self, EmbedError> {
        let vocabulary = embedder.config().bert.vocab_size;
        // An empty text is `[CLS] [SEP]`.
        let empty = embedder.tokenize(&[""])?.pop().expect("one text");
        let (cls, sep) = (empty.ids[0], empty.ids[empty.ids.len() - 1]);
        let sequences: Vec<Tokenized> = (0..vocabulary as u32)
            .map(|id| Tokenized {
                ids: vec![cls, id, sep],
                type_ids: vec![0; 3],
                truncated: false,
            })
            .collect();
        let outputs = embedder.embed_tokenized(sequences);
        let width = embedder.dimensions();
        let mut matrix: Vec<f64> = Vec::with_capacity(vocabulary * width);
        for embedding in &outputs {
            matrix.extend(embedding.vector.iter().map(|&v| f64::from(v)));
        }
        let dimensions = STATIC_DIMENSIONS.min(width);
        let projected = pca(&matrix, vocabulary, width, dimensions);
        // Zipf over ranks from 1, normalised over the vocabulary.
        let harmonic: f64 = (1..=vocabulary).map(|r| 1.0 / r as f64).sum();
        let mut rows = Vec::with_capacity(vocabulary * dimensions);
        for (rank, row) in projected.chunks(dimensions).enumerate() {
            let frequency = 1.0 / ((rank + 1) as f64 * harmonic);
            let weight = SIF / (SIF + frequency);
            rows.extend(row.iter().map(|&v| (v * weight) as f32));
        }
        Ok(Self {
            rows,
            dimensions,
            special: [cls, sep],
        })
    }

    /// Loads a table [`StaticEmbedder::save`] wrote, or distils and saves one.
    pub fn load_or_distill(path: &Path, embedder: &Embedder) -> Result<Self, EmbedError> {
        if let Ok(bytes) = std::fs::read(path)
            && let Some(table) = Self::decode(&bytes)
        {
            return Ok(table);
        }
        let table = Self::distill(embedder)?;
        table.save(path)?;
        Ok(table)
    }

    /// Writes the table to `path` (written beside it, then renamed into place).
    pub fn save(&self, path: &Path) -> Result<(), EmbedError> {
        let io = |source| EmbedError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut bytes = Vec::with_capacity(16 + self.rows.len() * 4);
        bytes.extend((self.dimensions as u64).to_le_bytes());
        bytes.extend(self.special[0].to_le_bytes());
        bytes.extend(self.special[1].to_le_bytes());
        bytes.extend(self.rows.iter().flat_map(|v| v.to_le_bytes()));
        let partial = path.with_extension("partial");
        std::fs::write(&partial, bytes).map_err(io)?;
        std::fs::rename(&partial, path).map_err(io)
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        let dimensions = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) as usize;
        let cls = u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?);
        let sep = u32::from_le_bytes(bytes.get(12..16)?.try_into().ok()?);
        let rows: Vec<f32> = bytes
            .get(16..)?
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        (dimensions > 0 && rows.len() % dimensions == 0).then_some(Self {
            rows,
            dimensions,
            special: [cls, sep],
        })
    }

    /// Length of every vector.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// One normalised vector per text: the mean of its tokens' rows.
    pub fn embed(&self, embedder: &Embedder, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let tokenized = embedder.tokenize(texts)?;
        Ok(tokenized.iter().map(|t| self.embed_ids(&t.ids)).collect())
    }

    fn embed_ids(&self, ids: &[u32]) -> Vec<f32> {
        let mut sum = vec![0.0f32; self.dimensions];
        for &id in ids.iter().filter(|id| !self.special.contains(id)) {
            let start = id as usize * self.dimensions;
            if let Some(row) = self.rows.get(start..start + self.dimensions) {
                sum.iter_mut().zip(row).for_each(|(s, r)| *s += r);
            }
        }
        let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            sum.iter_mut().for_each(|v| *v /= norm);
        }
        sum
    }
}

/// The `rows × width` matrix, centred and projected onto its `keep` principal components
/// (largest variance first; each component's sign fixed so that its largest coordinate is
/// positive, for determinism).
fn pca(matrix: &[f64], rows: usize, width: usize, keep: usize) -> Vec<f64> {
    let mut mean = vec![0.0; width];
    for row in matrix.chunks(width) {
        mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
    }
    mean.iter_mut().for_each(|m| *m /= rows as f64);
    let mut covariance = vec![0.0; width * width];
    let mut centred = vec![0.0; width];
    for row in matrix.chunks(width) {
        centred
            .iter_mut()
            .zip(row.iter().zip(&mean))
            .for_each(|(c, (v, m))| *c = v - m);
        for i in 0..width {
            let ci = centred[i];
            let line = &mut covariance[i * width..(i + 1) * width];
            for (cell, cj) in line.iter_mut().zip(&centred).skip(i) {
                *cell += ci * cj;
            }
        }
    }
    for i in 0..width {
        for j in 0..i {
            covariance[i * width + j] = covariance[j * width + i];
        }
    }
    let (values, vectors) = symmetric_eigen(covariance, width);
    let mut order: Vec<usize> = (0..width).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    let components: Vec<Vec<f64>> = order[..keep]
        .iter()
        .map(|&k| {
            let mut column: Vec<f64> = (0..width).map(|i| vectors[i * width + k]).collect();
            let largest = column
                .iter()
                .copied()
                .max_by(|a, b| a.abs().total_cmp(&b.abs()))
                .unwrap_or(1.0);
            if largest < 0.0 {
                column.iter_mut().for_each(|v| *v = -*v);
            }
            column
        })
        .collect();
    let mut projected = Vec::with_capacity(rows * keep);
    for row in matrix.chunks(width) {
        for component in &components {
            let dot: f64 = row
                .iter()
                .zip(&mean)
                .zip(component)
                .map(|((v, m), c)| (v - m) * c)
                .sum();
            projected.push(dot);
        }
    }
    projected
}

/// Eigenvalues and eigenvectors (columns of the row-major `n × n` result) of a symmetric
/// matrix, by cyclic Jacobi rotations until the off-diagonal mass is negligible.
fn symmetric_eigen(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let total: f64 = a.iter().map(|x| x * x).sum();
    for _sweep in 0..50 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j] * a[i * n + j])
            .sum();
        if off <= total * 1e-22 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let values = (0..n).map(|i| a[i * n + i]).collect();
    (values, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_finds_the_eigenpairs_of_a_symmetric_matrix() {
        // [[2, 1], [1, 2]]: eigenvalues 3 and 1, eigenvectors (1, 1) and (1, -1) over √2.
        let (values, vectors) = symmetric_eigen(vec![2.0, 1.0, 1.0, 2.0], 2);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        assert!((sorted[0] - 1.0).abs() < 1e-12 && (sorted[1] - 3.0).abs() < 1e-12);
        let big = if values[0] > values[1] { 0 } else { 1 };
        let (x, y) = (vectors[big], vectors[2 + big]);
        assert!((x.abs() - y.abs()).abs() < 1e-12 && x * y > 0.0);
    }

    #[test]
    fn pca_keeps_the_direction_of_largest_variance() {
        // Points along (1, 1) with a little noise across it.
        let matrix: Vec<f64> = (0..50)
            .flat_map(|i| {
                let t = i as f64 - 25.0;
                let noise = if i % 2 == 0 { 0.1 } else { -0.1 };
                [t + noise, t - noise]
            })
            .collect();
        let projected = pca(&matrix, 50, 2, 1);
        let spread = projected.iter().map(|v| v * v).sum::<f64>() / 50.0;
        // Var along (1, 1)/√2 of t·√2 is 2·Var(t) ≈ 2 × 208.25.
        assert!((spread - 416.5).abs() < 1.0, "{spread}");
    }
}
