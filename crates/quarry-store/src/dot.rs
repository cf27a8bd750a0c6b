//! The dot product of two vectors: a scan's inner loop, hnsw_rs's distance and drift's
//! comparison.

use pulp::WithSimd;
use quarry_kernels::HostSimd;

/// The dot product, at the SIMD level the process runs ([`quarry_kernels::level`]: AVX-512,
/// AVX2 or NEON, detected once): a scan's inner loop, and hnsw_rs's distance.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    static SIMD: std::sync::LazyLock<Option<HostSimd>> = std::sync::LazyLock::new(HostSimd::detect);
    match *SIMD {
        Some(simd) => quarry_kernels::on_host_simd!(simd, simd => Dot(a, b).with_simd(simd)),
        None => Dot(a, b).with_simd(pulp::Scalar::new()),
    }
}

struct Dot<'a>(&'a [f32], &'a [f32]);

impl pulp::WithSimd for Dot<'_> {
    type Output = f32;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> f32 {
        let (a, a_tail) = S::as_simd_f32s(self.0);
        let (b, b_tail) = S::as_simd_f32s(self.1);
        // Four sums, so that successive multiply-adds do not wait on each other.
        let mut sums = [simd.splat_f32s(0.0); 4];
        let (a4, a_rest) = a.as_chunks::<4>();
        let (b4, b_rest) = b.as_chunks::<4>();
        for (x, y) in a4.iter().zip(b4) {
            for lane in 0..4 {
                sums[lane] = simd.mul_add_e_f32s(x[lane], y[lane], sums[lane]);
            }
        }
        for (x, y) in a_rest.iter().zip(b_rest) {
            sums[0] = simd.mul_add_e_f32s(*x, *y, sums[0]);
        }
        let sum = simd.add_f32s(
            simd.add_f32s(sums[0], sums[1]),
            simd.add_f32s(sums[2], sums[3]),
        );
        let tail: f32 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
        simd.reduce_sum_f32s(sum) + tail
    }
}

/// A deterministic unit vector (a small xorshift: no dependency), for tests.
#[cfg(test)]
pub(crate) fn unit(seed: u64, dimensions: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let v: Vec<f32> = (0..dimensions)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let norm = dot(&v, &v).sqrt();
    v.iter().map(|x| x / norm).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_a_plain_sum() {
        // Shorter than one vector, a vector and a tail, past four vectors, the model's width.
        for dimensions in [3, 19, 100, 384] {
            let (a, b) = (unit(1, dimensions), unit(2, dimensions));
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-6, "{dimensions}");
            assert!((dot(&a, &a) - 1.0).abs() < 1e-6, "{dimensions}");
        }
    }
}
