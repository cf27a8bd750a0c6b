//! Host kernels for the CPU backend, where one of Burn's `flex` operations is far slower than
//! it needs to be.
//!
//! Burn 0.22's `flex` computes GELU one value at a time with libm's `erff`, which took about a
//! fifth of MiniLM's forward pass. [`gelu_in_place`] uses a rational approximation of `erf`
//! that the compiler vectorises, spread over rayon's threads: `erf` to within 4e-7 (a few ulp),
//! so GELU to within `4e-7 · (|x| + |gelu(x)|)` (see the tests), many times faster.

use quarry_kernels::{HostSimd, on_host_simd};
use rayon::prelude::*;

/// Runs `body` compiled for the process's SIMD level (AVX2's or AVX-512's vectors, FMA)
/// where it has one: the compiler vectorises these loops for the widest vectors it is
/// allowed, and without a level that is SSE2's.
#[inline(always)]
fn at_host_level<R>(simd: Option<HostSimd>, body: impl FnOnce() -> R) -> R {
    match simd {
        Some(simd) => on_host_simd!(simd, _simd => body()),
        None => body(),
    }
}

/// Exact (erf) GELU of every value, in place: `x * (1 + erf(x / sqrt 2)) / 2`.
pub fn gelu_in_place(values: &mut [f32]) {
    let simd = HostSimd::detect();
    values.par_chunks_mut(1 << 14).for_each(|chunk| {
        at_host_level(simd, || {
            for x in chunk {
                *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
            }
        })
    });
}

/// `norm(values + residual) · gamma + beta` for each row of `gamma.len()` values, in place:
/// the residual connection and layer norm that close each half of a BERT layer. The mean and
/// variance are reduced over 16 partial sums, which the compiler vectorises.
pub fn residual_layer_norm(
    values: &mut [f32],
    residual: &[f32],
    gamma: &[f32],
    beta: &[f32],
    epsilon: f32,
) {
    let width = gamma.len();
    let simd = HostSimd::detect();
    values
        .par_chunks_mut(width * 64)
        .zip(residual.par_chunks(width * 64))
        .for_each(|(values, residual)| {
            at_host_level(simd, || {
                for (row, residual) in values.chunks_mut(width).zip(residual.chunks(width)) {
                    row.iter_mut().zip(residual).for_each(|(v, r)| *v += r);
                    let mean = sum(row) / width as f32;
                    row.iter_mut().for_each(|v| *v -= mean);
                    let variance = sum_of_squares(row) / width as f32;
                    let scale = 1.0 / (variance + epsilon).sqrt();
                    for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
                        *v = *v * scale * g + b;
                    }
                }
            })
        });
}

/// The sum of `values`, over 16 partial sums.
#[inline(always)]
fn sum(values: &[f32]) -> f32 {
    let (lanes, tail) = values.as_chunks::<16>();
    let mut partial = [0.0f32; 16];
    for chunk in lanes {
        partial.iter_mut().zip(chunk).for_each(|(p, v)| *p += v);
    }
    partial.iter().sum::<f32>() + tail.iter().sum::<f32>()
}

/// The sum of the squares of `values`, over 16 partial sums.
#[inline(always)]
fn sum_of_squares(values: &[f32]) -> f32 {
    let (lanes, tail) = values.as_chunks::<16>();
    let mut partial = [0.0f32; 16];
    for chunk in lanes {
        partial.iter_mut().zip(chunk).for_each(|(p, v)| *p += v * v);
    }
    partial.iter().sum::<f32>() + tail.iter().map(|v| v * v).sum::<f32>()
}

/// `erf` as the ratio of an odd and an even polynomial: the approximation of Eigen and XLA,
/// accurate to a few ulp, and free of branches and calls, so that it vectorises.
#[inline(always)]
fn erf(x: f32) -> f32 {
    // Beyond 3.9193, erf rounds to ±1 in single precision; the ratio would give 1 - 1 ulp,
    // which GELU's `1 + erf` turns into a visible error for very negative inputs.
    if x.abs() > 3.9193 {
        return 1.0_f32.copysign(x);
    }
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    for alpha in [
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_600_1e-3,
        -1.609_603_3e-2,
    ] {
        p = p * x2 + alpha;
    }
    let mut q = -1.456_607_2e-5_f32;
    for beta in [
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329_2e-3,
        -1.426_473_9e-2,
    ] {
        q = q * x2 + beta;
    }
    x * p / q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn residual_layer_norm_matches_a_plain_computation() {
        let width = 40;
        let values: Vec<f32> = (0..3 * width)
            .map(|i| ((i * 7 % 23) as f32) / 5.0 - 2.0)
            .collect();
        let residual: Vec<f32> = (0..3 * width)
            .map(|i| ((i * 11 % 17) as f32) / 9.0)
            .collect();
        let gamma: Vec<f32> = (0..width).map(|i| 0.5 + i as f32 / 40.0).collect();
        let beta: Vec<f32> = (0..width).map(|i| i as f32 / 100.0).collect();
        let mut found = values.clone();
        residual_layer_norm(&mut found, &residual, &gamma, &beta, 1e-12);
        for row in 0..3 {
            let sums: Vec<f64> = (0..width)
                .map(|c| f64::from(values[row * width + c]) + f64::from(residual[row * width + c]))
                .collect();
            let mean = sums.iter().sum::<f64>() / width as f64;
            let variance = sums.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / width as f64;
            for c in 0..width {
                let expected = (sums[c] - mean) / (variance + 1e-12).sqrt() * f64::from(gamma[c])
                    + f64::from(beta[c]);
                let got = f64::from(found[row * width + c]);
                assert!((got - expected).abs() < 1e-5, "{got} against {expected}");
            }
        }
    }

    fn gelu_exact(x: f64) -> f64 {
        0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
    }

    #[test]
    fn gelu_matches_the_exact_function() {
        // Dense over the range activations take, then far out and the special values.
        let mut inputs: Vec<f32> = (-200_000..=200_000).map(|i| i as f32 * 1e-4).collect();
        inputs.extend([
            -1e4,
            -50.0,
            -8.0,
            8.0,
            50.0,
            1e4,
            0.0,
            -0.0,
            f32::MIN_POSITIVE,
        ]);
        let mut values = inputs.clone();
        gelu_in_place(&mut values);
        for (x, y) in inputs.iter().zip(&values) {
            let exact = gelu_exact(f64::from(*x));
            let error = (f64::from(*y) - exact).abs();
            // erf's own error (under 4e-7), scaled by x / 2, plus rounding of the result.
            let bound = 4e-7 * (f64::from(x.abs()) + exact.abs()).max(1.0);
            assert!(error <= bound, "gelu({x}) = {y}, exact {exact}");
        }
    }

    #[test]
    fn gelu_keeps_nan() {
        let mut values = [f32::NAN];
        gelu_in_place(&mut values);
        assert!(values[0].is_nan());
    }
}
