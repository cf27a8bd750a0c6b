//! Host kernels for the CPU backend, where one of Burn's `flex` operations is far slower than
//! it needs to be.
//!
//! Burn 0.22's `flex` computes GELU one value at a time with libm's `erff`, which took about a
//! fifth of MiniLM's forward pass. [`gelu_in_place`] uses a rational approximation of `erf`
//! that the compiler vectorises, spread over rayon's threads: `erf` to within 4e-7 (a few ulp),
//! so GELU to within `4e-7 · (|x| + |gelu(x)|)` (see the tests), many times faster.

use rayon::prelude::*;

/// Exact (erf) GELU of every value, in place: `x * (1 + erf(x / sqrt 2)) / 2`.
pub fn gelu_in_place(values: &mut [f32]) {
    values.par_chunks_mut(1 << 14).for_each(|chunk| {
        for x in chunk {
            *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
        }
    });
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
