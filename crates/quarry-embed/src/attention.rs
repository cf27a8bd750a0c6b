//! Scaled dot-product attention on the host, for the CPU path that runs the linear layers on
//! [`PackedLinear`]: Burn's `flex` attention ran at a tenth of the GEMM's speed and became
//! the larger half of a forward pass once the linear layers were fast.
//!
//! Each (text, head) is one task: `softmax(Q Kᵀ / √d) V` over the text's own tokens only, so a
//! padded key is never weighed (as the padding mask does) and a padded query row is left zero
//! (its state is never read: later layers mask it as a key, and pooling skips it).
//!
//! Its two products run in `f32` ([`Products::F32`], on [`PackedLinear`]) or in bfloat16
//! ([`Products::Bf16`], on [`Bf16Weights`]: keys and values rounded once, the queries and the
//! softmax's weights as each product reads them, sums in `f32`); the softmax is `f32` either
//! way.

use pulp::Simd;
use quarry_kernels::{Bf16Weights, NR};
use rayon::prelude::*;

use crate::gemm::PackedLinear;
use quarry_kernels::{HostSimd, on_host_simd};

thread_local! {
    /// Each thread's attention scores, kept from task to task: a fresh buffer of a long
    /// text's (256 KB at 256 tokens) is mapped and faulted in every time.
    static SCORES: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What attention's two products multiply in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Products {
    /// Single precision.
    F32,
    /// bfloat16 (needs [`quarry_kernels::bf16_supported`]).
    Bf16,
}

/// The attended values `[texts × seq, heads × head_width]` from the fused query-key-value
/// projection `[texts × seq, 3 × heads × head_width]` (queries, then keys, then values), for
/// texts of `lengths[t]` tokens padded to `seq`, with `products`, at the level `simd`.
pub fn attention(
    simd: HostSimd,
    projected: &[f32],
    lengths: &[usize],
    seq: usize,
    heads: usize,
    head_width: usize,
    products: Products,
) -> Vec<f32> {
    let width = heads * head_width;
    let scale = 1.0 / (head_width as f32).sqrt();
    let tasks: Vec<(usize, usize)> = (0..lengths.len())
        .flat_map(|t| (0..heads).map(move |h| (t, h)))
        .collect();
    let attended: Vec<Vec<f32>> = tasks
        .par_iter()
        .map(|&(text, head)| {
            let length = lengths[text].clamp(1, seq);
            let rows = &projected[text * seq * 3 * width..(text * seq + length) * 3 * width];
            let column = |part: usize, token: usize| {
                let start = token * 3 * width + part * width + head * head_width;
                &rows[start..start + head_width]
            };
            let mut queries = Vec::with_capacity(length * head_width);
            for token in 0..length {
                queries.extend(column(0, token).iter().map(|q| q * scale));
            }
            let softmax = |scores: &mut [f32]| {
                for row in scores.chunks_mut(length) {
                    softmax_in_place(simd, row);
                }
            };
            match products {
                Products::F32 => {
                    // Kᵀ as weights: head_width inputs by `length` outputs.
                    let mut keys = vec![0.0; head_width * length];
                    let mut values = Vec::with_capacity(length * head_width);
                    for token in 0..length {
                        for (d, &k) in column(1, token).iter().enumerate() {
                            keys[d * length + token] = k;
                        }
                        values.extend_from_slice(column(2, token));
                    }
                    let keys = PackedLinear::with_simd(simd, &keys, None, head_width, length);
                    let values = PackedLinear::with_simd(simd, &values, None, length, head_width);
                    through_scores(
                        &queries,
                        length,
                        |queries, scores| keys.forward_serial_into(queries, scores),
                        softmax,
                        |weights, attended| values.forward_serial_into(weights, attended),
                    )
                }
                Products::Bf16 => {
                    // Kᵀ's columns are the keys; the values' rows are the values.
                    let keys = Bf16Weights::from_columns(head_width, length, |t| column(1, t));
                    let values = Bf16Weights::from_rows(length, head_width, |t| column(2, t));
                    let zeros = vec![[0.0; NR]; length.div_ceil(NR)];
                    through_scores(
                        &queries,
                        length,
                        |queries, scores| {
                            let all = 0..keys.panel_count();
                            keys.multiply(queries, all, &zeros, scores, length);
                        },
                        softmax,
                        |weights, attended| {
                            let all = 0..values.panel_count();
                            let bias = &zeros[..all.len()];
                            values.multiply(weights, all, bias, attended, head_width);
                        },
                    )
                }
            }
        })
        .collect();
    let mut out = vec![0.0; lengths.len() * seq * width];
    for ((text, head), values) in tasks.into_iter().zip(attended) {
        for (token, row) in values.chunks(head_width).enumerate() {
            let start = (text * seq + token) * width + head * head_width;
            out[start..start + head_width].copy_from_slice(row);
        }
    }
    out
}

/// `softmax(Q Kᵀ) V` for one text and head, its scores in the thread's [`SCORES`]:
/// `scores_of(queries, scores)` the first product (`length` scores a query), `softmax` over
/// them, `attend(weights, out)` the second, into a vector as long as `queries`.
fn through_scores(
    queries: &[f32],
    length: usize,
    scores_of: impl Fn(&[f32], &mut [f32]),
    softmax: impl Fn(&mut [f32]),
    attend: impl Fn(&[f32], &mut [f32]),
) -> Vec<f32> {
    let mut attended = vec![0.0; queries.len()];
    SCORES.with_borrow_mut(|scores| {
        // Every score is written before it is read.
        scores.resize(length * length, 0.0);
        scores_of(queries, scores);
        softmax(scores);
        attend(scores, &mut attended);
    });
    attended
}

/// `exp(x - max) / Σ exp(x - max)` over `row`, in place, at the level `simd`.
fn softmax_in_place(simd: HostSimd, row: &mut [f32]) {
    on_host_simd!(simd, simd => softmax(simd, row))
}

/// [`softmax_in_place`] at the level `S`: the maximum and the sum are reduced a vector of
/// lanes at a time (a compiler does not reorder a float reduction by itself); the
/// exponentials are a plain map, which it vectorises.
#[inline(always)]
fn softmax<S: Simd>(simd: S, row: &mut [f32]) {
    let (lanes, tail) = S::as_simd_f32s(row);
    let mut wide = simd.splat_f32s(f32::NEG_INFINITY);
    for &chunk in lanes {
        wide = simd.max_f32s(wide, chunk);
    }
    let max = tail
        .iter()
        .copied()
        .fold(simd.reduce_max_f32s(wide), f32::max);
    for x in row.iter_mut() {
        *x = exp(*x - max);
    }
    let (lanes, tail) = S::as_simd_f32s(row);
    let mut wide = simd.splat_f32s(0.0);
    for &chunk in lanes {
        wide = simd.add_f32s(wide, chunk);
    }
    let sum = simd.reduce_sum_f32s(wide) + tail.iter().sum::<f32>();
    let inverse = 1.0 / sum;
    row.iter_mut().for_each(|x| *x *= inverse);
}

/// `e^x` for `x <= 0` (a softmax's shifted scores), to about 2 ulp: `2^n · p(r)` with
/// `x = n ln 2 + r`, `|r| <= ln 2 / 2`, and `p` a degree-6 polynomial; free of branches and
/// calls, so that it vectorises. Below -87 it is 0.
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 in two parts, so that `n · LN2_HIGH` is exact.
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    // Adding and subtracting 1.5 · 2²³ rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let x = x.max(-87.0);
    let n = (x * LOG2_E + ROUND) - ROUND;
    let r = x - n * LN2_HIGH - n * LN2_LOW;
    let mut p = 1.987_569_1e-4_f32;
    for c in [
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        1.666_666_5e-1,
        5e-1,
    ] {
        p = p * r + c;
    }
    let p = p * r * r + r + 1.0;
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    p * scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_close_to_the_exact_function() {
        // Down to -87, where it stops.
        for i in 0..=197_000 {
            let x = -(i as f32) * 4.4e-4;
            let exact = f64::from(x).exp();
            let found = f64::from(exp(x));
            assert!(
                (found - exact).abs() <= 4e-7 * exact,
                "exp({x}) = {found}, not {exact}"
            );
        }
        assert!(exp(-200.0) <= 1.7e-38, "far below, e^-87 at most");
    }

    #[test]
    fn attention_matches_a_plain_computation() {
        let (seq, heads, head_width) = (5, 2, 3);
        let width = heads * head_width;
        let lengths = [5, 3];
        let projected: Vec<f32> = (0..lengths.len() * seq * 3 * width)
            .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
            .collect();
        let test = "attention::attention_matches_a_plain_computation";
        for simd in crate::gemm::tests::levels(test) {
            let out = attention(
                simd,
                &projected,
                &lengths,
                seq,
                heads,
                head_width,
                Products::F32,
            );
            check(&projected, &out, 1e-5);
        }
        if quarry_kernels::bf16_supported() {
            // Each factor keeps 8 significant bits.
            let simd = HostSimd::detect().expect("bf16 runs at the AVX-512 level");
            let out = attention(
                simd,
                &projected,
                &lengths,
                seq,
                heads,
                head_width,
                Products::Bf16,
            );
            check(&projected, &out, 2e-2);
        } else {
            quarry_kernels::skipped(test, "AVX-512 BF16 (the bf16 products)");
        }
    }

    #[test]
    fn softmax_sums_to_one_on_every_level() {
        // Rows shorter than a vector, of whole vectors, and with a tail.
        for simd in crate::gemm::tests::levels("attention::softmax_sums_to_one_on_every_level") {
            for length in [1, 3, 8, 16, 37] {
                let mut row: Vec<f32> = (0..length).map(|i| (i * 7 % 5) as f32 - 2.0).collect();
                let max = row.iter().copied().fold(f32::MIN, f32::max);
                let expected: Vec<f64> = row.iter().map(|&x| f64::from(x - max).exp()).collect();
                let total: f64 = expected.iter().sum();
                softmax_in_place(simd, &mut row);
                for (found, expected) in row.iter().zip(&expected) {
                    let expected = expected / total;
                    assert!(
                        (f64::from(*found) - expected).abs() < 1e-6,
                        "{simd:?}, {length}: {found} against {expected}"
                    );
                }
            }
        }
    }

    /// Checks `out` against a plain computation in `f64`, to within `tolerance`.
    fn check(projected: &[f32], out: &[f32], tolerance: f64) {
        let (seq, heads, head_width) = (5, 2, 3);
        let width = heads * head_width;
        let lengths = [5, 3];
        let at = |text: usize, token: usize, part: usize, head: usize, d: usize| {
            f64::from(
                projected[(text * seq + token) * 3 * width + part * width + head * head_width + d],
            )
        };
        for (text, &length) in lengths.iter().enumerate() {
            for head in 0..heads {
                for i in 0..seq {
                    for d in 0..head_width {
                        let found =
                            f64::from(out[(text * seq + i) * width + head * head_width + d]);
                        if i >= length {
                            assert_eq!(found, 0.0, "a padded query row stays zero");
                            continue;
                        }
                        let scores: Vec<f64> = (0..length)
                            .map(|j| {
                                (0..head_width)
                                    .map(|e| at(text, i, 0, head, e) * at(text, j, 1, head, e))
                                    .sum::<f64>()
                                    / (head_width as f64).sqrt()
                            })
                            .collect();
                        let max = scores.iter().copied().fold(f64::MIN, f64::max);
                        let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                        let total: f64 = weights.iter().sum();
                        let expected: f64 = (0..length)
                            .map(|j| weights[j] / total * at(text, j, 2, head, d))
                            .sum();
                        assert!(
                            (found - expected).abs() < tolerance,
                            "{found} against {expected}"
                        );
                    }
                }
            }
        }
    }
}
