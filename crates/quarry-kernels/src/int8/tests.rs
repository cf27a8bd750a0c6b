use proptest::prelude::*;

use super::*;
use crate::tests::{matrix, padded_bias};

/// The scalar reference: the same quantisation, the integer sums in `i64`, the rescale
/// in `f32` in the kernel's order, so it comes out the same to the bit.
fn reference(x: &[f32], w: &[f32], bias: &[f32], k: usize, n: usize) -> Vec<f32> {
    let scales: Vec<f32> = (0..n)
        .map(|c| quantize_column((0..k).map(|r| w[r * n + c])))
        .collect();
    let m = x.len() / k;
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        let mut bytes = vec![0u8; k];
        let (row_scale, zero_point) = quantize_row(&x[i * k..(i + 1) * k], &mut bytes);
        for j in 0..n {
            let sum: i64 = (0..k)
                .map(|t| {
                    let weight = i64::from(quantize(w[t * n + j], scales[j]));
                    (i64::from(bytes[t]) - i64::from(zero_point)) * weight
                })
                .sum();
            out[i * n + j] = (sum as i32 as f32) * (row_scale * scales[j]) + bias[j];
        }
    }
    out
}

/// The forms this machine runs int8 products in (the instructions of every level up to the
/// cap, and the portable form), each test's loop.
fn forms() -> Vec<Int8Form> {
    let mut forms: Vec<Int8Form> = Int8Isa::available()
        .into_iter()
        .map(Int8Form::Simd)
        .collect();
    forms.push(Int8Form::Portable);
    forms
}

fn check(x: &[f32], w: &[f32], bias: &[f32], k: usize, n: usize) {
    let weights = Int8Weights::pack(w, k, n);
    let m = x.len() / k;
    let expected = reference(x, w, bias, k, n);
    for form in forms() {
        let mut out = vec![f32::NAN; m * n];
        let all = 0..weights.panel_count();
        weights.multiply_with(form, x, all, &padded_bias(bias), &mut out, n);
        for (i, (found, expected)) in out.iter().zip(&expected).enumerate() {
            assert!(
                found.to_bits() == expected.to_bits(),
                "{form:?}, {m}×{k}×{n} at {i}: {found} against {expected}"
            );
        }
    }
}

#[test]
fn matches_the_reference_on_the_model_shapes() {
    for (m, k, n) in [(1, 384, 1152), (37, 384, 1536), (20, 1536, 384)] {
        let (x, w, bias) = (matrix(m * k, 5), matrix(k * n, 6), matrix(n, 7));
        check(&x, &w, &bias, k, n);
    }
}

/// The largest sums a product makes: rows whose bytes are all 255 (or all 0, their zero
/// point) by columns of equal weights, whose pairs quantise to 64 and 64 (or -64 and -64),
/// the most [`quantize_column`] lets a pair hold, over the model's deepest layer. A form
/// whose 16-bit pair sums (`vpmaddubsw`'s) could saturate would be off here.
#[test]
fn the_largest_sums_are_exact() {
    let (m, k, n) = (3, 1536, 40);
    let mut x = vec![1.0; m * k];
    x[k..2 * k].iter_mut().for_each(|v| *v = -1.0);
    x[2 * k..].iter_mut().step_by(2).for_each(|v| *v = -1.0);
    let w: Vec<f32> = (0..k * n)
        .map(|i| if i % n % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let weights = Int8Weights::pack(&w, k, n);
    let (panels, _, _) = weights.packed();
    assert_eq!(panels[0], u32::from_le_bytes([64; 4]), "pairs at the bound");
    check(&x, &w, &vec![0.0; n], k, n);
}

#[test]
fn comes_close_to_the_f32_product() {
    let (m, k, n) = (20, 384, 100);
    // Rows of one sign, of both, and a row of zeros.
    let mut x = matrix(m * k, 1);
    x[..k].iter_mut().for_each(|v| *v = v.abs());
    x[k..2 * k].iter_mut().for_each(|v| *v = 0.0);
    let (w, bias) = (matrix(k * n, 2), matrix(n, 3));
    let weights = Int8Weights::pack(&w, k, n);
    for form in forms() {
        let mut out = vec![0.0; m * n];
        let all = 0..weights.panel_count();
        weights.multiply_with(form, &x, all, &padded_bias(&bias), &mut out, n);
        close_to_the_f32_product(&x, &w, &bias, &out, k, n);
    }
}

fn close_to_the_f32_product(x: &[f32], w: &[f32], bias: &[f32], out: &[f32], k: usize, n: usize) {
    let m = x.len() / k;
    for i in 0..m {
        for j in 0..n {
            let exact: f64 = f64::from(bias[j])
                + (0..k)
                    .map(|t| f64::from(x[i * k + t]) * f64::from(w[t * n + j]))
                    .sum::<f64>();
            // Each term off by half a step of each factor (1/255 of a range of 2; 1/127 of
            // a pair's magnitudes, 2 at most): independent errors, so their sum grows as
            // √k, well within this.
            let bound = (k as f64).sqrt() * (1.0 / 255.0 + 1.0 / 127.0);
            let found = f64::from(out[i * n + j]);
            assert!(
                (found - exact).abs() < bound,
                "({i}, {j}): {found} against {exact}"
            );
        }
    }
    assert_eq!(out[n..2 * n], *bias, "a row of zeros gives the bias");
}

#[test]
fn a_column_range_lands_at_the_start_of_its_output() {
    let (m, k, n) = (17, 9, 70);
    let (x, w) = (matrix(m * k, 1), matrix(k * n, 2));
    let weights = Int8Weights::pack(&w, k, n);
    let bias = padded_bias(&matrix(n, 3));
    let mut whole = vec![0.0; m * n];
    weights.multiply(&x, 0..3, &bias, &mut whole, n);
    let mut part = vec![0.0; m * 6];
    weights.multiply(&x, 2..3, &bias, &mut part, 6);
    for r in 0..m {
        assert_eq!(part[r * 6..(r + 1) * 6], whole[r * n + 64..(r + 1) * n]);
    }
    let (panels, scales, sums) = weights.packed();
    let again =
        Int8Weights::from_packed(k, n, panels.to_vec(), scales.to_vec(), sums.to_vec()).unwrap();
    let mut twice = vec![0.0; m * n];
    again.multiply(&x, 0..3, &bias, &mut twice, n);
    assert_eq!(twice, whole);
    assert!(Int8Weights::from_packed(k + 4, n, panels.to_vec(), vec![], vec![]).is_none());
}

#[test]
fn a_row_with_a_nan_comes_out_nan_and_leaves_the_others() {
    let (k, n) = (8, 5);
    let mut x = matrix(2 * k, 1);
    x[3] = f32::NAN;
    let w = matrix(k * n, 2);
    let weights = Int8Weights::pack(&w, k, n);
    for form in forms() {
        let mut out = vec![0.0; 2 * n];
        weights.multiply_with(form, &x, 0..1, &padded_bias(&[0.0; 5]), &mut out, n);
        assert!(out[..n].iter().all(|v| v.is_nan()), "{form:?}");
        assert!(out[n..].iter().all(|v| v.is_finite()), "{form:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Rows, depths and columns that are not multiples of the tiles, with values of any
    /// sign and scale.
    #[test]
    fn matches_the_reference_on_odd_shapes(
        m in 1usize..40, k in 1usize..70, n in 1usize..80, seed in 0u64..1000,
        scale in prop_oneof![Just(1.0f32), Just(1e-3), Just(40.0)],
        positive in any::<bool>(),
    ) {
        let mut x = matrix(m * k, seed);
        x.iter_mut().for_each(|v| *v = if positive { v.abs() } else { *v } * scale);
        check(&x, &matrix(k * n, seed + 1), &matrix(n, seed + 2), k, n);
    }

    /// Depths in whole tiles of AMX's form (multiples of 64; the shapes above have one),
    /// with rows and columns that fill no tile.
    #[test]
    fn matches_the_reference_in_whole_tiles(
        m in 1usize..40, tiles in 1usize..5, n in 1usize..80, seed in 0u64..1000,
    ) {
        let k = 64 * tiles;
        check(&matrix(m * k, seed), &matrix(k * n, seed + 1), &matrix(n, seed + 2), k, n);
    }
}
