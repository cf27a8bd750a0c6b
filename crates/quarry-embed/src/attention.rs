//! Scaled dot-product attention on the host, for the CPU path that runs the linear layers on
//! [`crate::gemm::PackedLinear`]: Burn's `flex` attention ran at a tenth of the GEMM's speed and
//! became the larger half of a forward pass once the linear layers were fast.
//!
//! Each (text, head) is one task: `softmax(Q Kᵀ / √d) V` over the text's own tokens only, so a
//! padded key is never weighed (as the padding mask does) and a padded query row is left zero
//! (its state is never read: later layers mask it as a key, and pooling skips it).
//!
//! The task is fused: a tile of queries at a time, its scores (a few kilobytes) are computed,
//! exponentiated and multiplied by the values while they are in L1, and no `L × L` matrix is
//! written. A head's keys and values are packed first, in blocks of a pair of vectors that a
//! product reads from start to end (rows of every key, a power of two apart, would share a few
//! of L1's sets). Everything is `f32`, in one body for every level of [`HostSimd`]; the
//! products' sums run in depth order, so each level computes each product alike.

use pulp::Simd;
use rayon::prelude::*;

use crate::gemm::{Lanes, MR};
use quarry_kernels::{HostSimd, on_host_simd};

/// The attended values `[texts × seq, heads × head_width]` from the fused query-key-value
/// projection `[texts × seq, 3 × heads × head_width]` (queries, then keys, then values), for
/// texts of `lengths[t]` tokens padded to `seq`, at the level `simd`.
pub fn attention(
    simd: HostSimd,
    projected: &[f32],
    lengths: &[usize],
    seq: usize,
    heads: usize,
    head_width: usize,
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
            // The buffers move into the closure, which makes it `FnOnce` alone: its body is
            // then what pulp calls under the level's instructions, and is inlined there. A
            // closure that is also `Fn` is called through a shim, which a body this large
            // did not get inlined through, and ran without them at a tenth of the speed.
            let operands = OPERANDS.take();
            let (attended, operands) = on_host_simd!(
                simd,
                simd => fused(simd, operands, &column, length, head_width, scale)
            );
            OPERANDS.set(operands);
            attended
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

/// A head's operands, laid out for [`fused`], kept by each thread from task to task.
#[derive(Default)]
struct Operands {
    /// The scaled queries, `rows × width`: rows rounded up to a tile, width to a pair of
    /// vectors, the padding zero.
    queries: Vec<f32>,
    /// Kᵀ in blocks of a pair of vectors of keys, each `width × pair` (a depth's keys side by
    /// side), zero past the last key: a block is read from start to end, where rows of all
    /// the keys (a power of two apart) would fall in the same few sets of the L1 cache.
    keys: Vec<f32>,
    /// The values in blocks of a pair of vectors of columns, each `length × pair`, zero past
    /// the head's width.
    values: Vec<f32>,
    /// A tile of queries' scores, then their weights: `S::ROWS × keys`.
    scores: Vec<f32>,
}

thread_local! {
    static OPERANDS: std::cell::RefCell<Operands> = std::cell::RefCell::new(Operands::default());
}

/// `softmax(Q Kᵀ / √d) V` for one text and head, a tile of [`Lanes::ROWS`] queries at a time:
/// the tile's scores (a few kilobytes, in L1) are computed, exponentiated and multiplied by
/// the values before the next tile's, and each row is divided by its sum once, at the end.
/// `column(part, token)` is the token's query (part 0), key (1) or value (2); `operands`
/// are the thread's buffers, handed back.
#[inline(always)]
fn fused<'a, S: Lanes>(
    simd: S,
    mut operands: Operands,
    column: &impl Fn(usize, usize) -> &'a [f32],
    length: usize,
    head_width: usize,
    scale: f32,
) -> (Vec<f32>, Operands) {
    let pair = 2 * S::F32_LANES;
    let width = head_width.next_multiple_of(pair);
    let keys_width = length.next_multiple_of(pair);
    let tiles = length.div_ceil(S::ROWS);
    let mut attended = vec![0.0; length * head_width];
    let Operands {
        queries,
        keys,
        values,
        scores,
    } = &mut operands;
    for (buffer, len) in [
        (&mut *queries, tiles * S::ROWS * width),
        (&mut *keys, width * keys_width),
        (&mut *values, length * width),
        (&mut *scores, S::ROWS * keys_width),
    ] {
        buffer.clear();
        buffer.resize(len, 0.0);
    }
    for token in 0..length {
        let row = token * width;
        for (q, &x) in queries[row..row + head_width]
            .iter_mut()
            .zip(column(0, token))
        {
            *q = x * scale;
        }
        let (block, lane) = (token / pair, token % pair);
        let key_block = &mut keys[block * width * pair..][..head_width * pair];
        for (depth, &k) in key_block.chunks_exact_mut(pair).zip(column(1, token)) {
            depth[lane] = k;
        }
        for (block, part) in column(2, token).chunks(pair).enumerate() {
            let start = (block * length + token) * pair;
            values[start..start + part.len()].copy_from_slice(part);
        }
    }
    for (tile, out) in attended.chunks_mut(S::ROWS * head_width).enumerate() {
        let tile_queries = &queries[tile * S::ROWS * width..(tile + 1) * S::ROWS * width];
        for (block, key_block) in keys.chunks_exact(width * pair).enumerate() {
            let product = Product {
                a: tile_queries,
                a_stride: width,
                b: key_block,
                depth: width,
                scales: None,
            };
            multiply_into(
                simd,
                product,
                (&mut scores[block * pair..], keys_width, pair),
            );
        }
        let mut inverse = [0.0; MR];
        for (row, inverse) in scores.chunks_mut(keys_width).zip(&mut inverse) {
            *inverse = 1.0 / exponentiate(simd, &mut row[..length]);
        }
        for (first, value_block) in (0..head_width)
            .step_by(pair)
            .zip(values.chunks_exact(length * pair))
        {
            let product = Product {
                a: scores,
                a_stride: keys_width,
                b: value_block,
                depth: length,
                scales: Some(&inverse),
            };
            let out = (&mut out[first..], head_width, pair.min(head_width - first));
            multiply_into(simd, product, out);
        }
    }
    (attended, operands)
}

/// One product of a tile: `scales[r] · Σₛ a[r · a_stride + s] · b[s · 2 · LANES + c]` (no
/// scale where `scales` is `None`) for the [`Lanes::ROWS`] rows `r` of `a` and the pair of
/// vectors of columns `c` of `b`, over `depth` steps `s`.
struct Product<'a> {
    a: &'a [f32],
    a_stride: usize,
    b: &'a [f32],
    depth: usize,
    scales: Option<&'a [f32; MR]>,
}

/// `product` into `out[r · stride + c]` for the rows `out` holds and its first `columns`
/// columns; `out` is `(out, stride, columns)`.
#[inline(always)]
fn multiply_into<S: Lanes>(simd: S, product: Product<'_>, out: (&mut [f32], usize, usize)) {
    // The accumulators are an array of the level's rows: an array of the widest level's
    // would be zeroed, returned and read whole on every call.
    match S::ROWS {
        6 => multiply_rows::<S, 6>(simd, product, out),
        14 => multiply_rows::<S, 14>(simd, product, out),
        rows => unreachable!("no attention kernel of {rows} rows"),
    }
}

/// [`multiply_into`] for `R` rows, in `2 · R` registers.
#[inline(always)]
fn multiply_rows<S: Lanes, const R: usize>(
    simd: S,
    product: Product<'_>,
    (out, stride, columns): (&mut [f32], usize, usize),
) {
    let Product {
        a,
        a_stride,
        b,
        depth,
        scales,
    } = product;
    let pair = 2 * S::F32_LANES;
    let zero = simd.splat_f32s(0.0);
    let mut acc = [[zero; 2]; R];
    let rows: [&[f32]; R] = std::array::from_fn(|r| &a[r * a_stride..][..depth]);
    // Each row's length, once: the loop's reads then need no checks of their own.
    for row in &rows {
        assert_eq!(row.len(), depth);
    }
    for (step, b_row) in b.chunks_exact(pair).take(depth).enumerate() {
        let b_lanes = S::as_simd_f32s(b_row).0;
        let (b0, b1) = (b_lanes[0], b_lanes[1]);
        for (lanes, row) in acc.iter_mut().zip(&rows) {
            let value = simd.splat_f32s(row[step]);
            lanes[0] = simd.mul_add_f32s(value, b0, lanes[0]);
            lanes[1] = simd.mul_add_f32s(value, b1, lanes[1]);
        }
    }
    for (r, (row, lanes)) in out.chunks_mut(stride).zip(acc).enumerate() {
        let lanes = match scales {
            Some(scales) => {
                let scale = simd.splat_f32s(scales[r]);
                lanes.map(|lanes| simd.mul_f32s(lanes, scale))
            }
            None => lanes,
        };
        let row = &mut row[..columns];
        if columns == pair {
            // Whole vectors (every block but a narrow head's): plain stores.
            S::as_mut_simd_f32s(row).0.copy_from_slice(&lanes);
            continue;
        }
        let (low, high) = row.split_at_mut(columns.min(S::F32_LANES));
        simd.partial_store_f32s(low, lanes[0]);
        simd.partial_store_f32s(high, lanes[1]);
    }
}

/// `exp(x - max)` over `row`, in place, at the level `S`; returns their sum.
#[inline(always)]
fn exponentiate<S: Simd>(simd: S, row: &mut [f32]) -> f32 {
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
    simd.reduce_sum_f32s(wide) + tail.iter().sum::<f32>()
}

/// `e^x` for `x <= 0` (a softmax's shifted scores), to about 2 ulp: `2^n · p(r)` with
/// `x = n ln 2 + r`, `|r| <= ln 2 / 2`, and `p` a degree-6 polynomial; free of branches and
/// calls, so that it vectorises (its `mul_add`s are single instructions at the levels it runs
/// at). Below -87 it is 0.
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 in two parts, so that `n · LN2_HIGH` is exact.
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    // Adding and subtracting 1.5 · 2²³ rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let x = x.max(-87.0);
    let n = x.mul_add(LOG2_E, ROUND) - ROUND;
    let r = (-n).mul_add(LN2_LOW, (-n).mul_add(LN2_HIGH, x));
    let mut p = 1.987_569_1e-4_f32;
    for c in [
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        1.666_666_5e-1,
        5e-1,
    ] {
        p = p.mul_add(r, c);
    }
    let p = (p * r).mul_add(r, r) + 1.0;
    // 2ⁿ from the bits of `n + 127 + ROUND`, whose low mantissa bits hold `n + 127` (1 to
    // 127 here), shifted into the exponent: no float-to-integer conversion, which the
    // compiler would not vectorise.
    let scale = f32::from_bits((n + (127.0 + ROUND)).to_bits() << 23);
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
        // One tile of a head narrower than a vector; several tiles of a head of two 16-lane
        // vectors, one text's keys ending inside a vector; a head whose last pair of vectors
        // is partly past its width.
        for (seq, heads, head_width, lengths) in [
            (5, 2, 3, vec![5, 3]),
            (40, 2, 32, vec![40, 17]),
            (19, 2, 40, vec![19, 11]),
        ] {
            let shape = Shape {
                seq,
                heads,
                head_width,
                lengths: &lengths,
            };
            let width = heads * head_width;
            let projected: Vec<f32> = (0..lengths.len() * seq * 3 * width)
                .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
                .collect();
            let test = "attention::attention_matches_a_plain_computation";
            for simd in crate::gemm::tests::levels(test) {
                let out = attention(simd, &projected, &lengths, seq, heads, head_width);
                shape.check(&projected, &out, 1e-5);
            }
        }
    }

    #[test]
    fn exponentials_and_their_sum_on_every_level() {
        // Rows shorter than a vector, of whole vectors, and with a tail.
        let test = "attention::exponentials_and_their_sum_on_every_level";
        for simd in crate::gemm::tests::levels(test) {
            for length in [1, 3, 8, 16, 37] {
                let mut row: Vec<f32> = (0..length).map(|i| (i * 7 % 5) as f32 - 2.0).collect();
                let max = row.iter().copied().fold(f32::MIN, f32::max);
                let expected: Vec<f64> = row.iter().map(|&x| f64::from(x - max).exp()).collect();
                let sum = on_host_simd!(simd, simd => exponentiate(simd, &mut row));
                let total: f64 = expected.iter().sum();
                assert!(
                    (f64::from(sum) - total).abs() < 1e-6 * total,
                    "{simd:?}, {length}: sum {sum} against {total}"
                );
                for (found, expected) in row.iter().zip(&expected) {
                    assert!(
                        (f64::from(*found) - expected).abs() < 1e-6,
                        "{simd:?}, {length}: {found} against {expected}"
                    );
                }
            }
        }
    }

    /// The shape of a test's batch.
    struct Shape<'a> {
        seq: usize,
        heads: usize,
        head_width: usize,
        lengths: &'a [usize],
    }

    impl Shape<'_> {
        /// Checks `out` against a plain computation in `f64`, to within `tolerance`.
        fn check(&self, projected: &[f32], out: &[f32], tolerance: f64) {
            let Shape {
                seq,
                heads,
                head_width,
                lengths,
            } = *self;
            let width = heads * head_width;
            let at = |text: usize, token: usize, part: usize, head: usize, d: usize| {
                let row = (text * seq + token) * 3 * width;
                f64::from(projected[row + part * width + head * head_width + d])
            };
            for (text, &length) in lengths.iter().enumerate() {
                for head in 0..heads {
                    for i in 0..seq {
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
                        for d in 0..head_width {
                            let found =
                                f64::from(out[(text * seq + i) * width + head * head_width + d]);
                            if i >= length {
                                assert_eq!(found, 0.0, "a padded query row stays zero");
                                continue;
                            }
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
}
