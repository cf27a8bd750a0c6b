//! The AVX2 forms (x86-64-v3: 16 registers of 256 bits): rows quantised on eight lanes, and
//! one micro-kernel of up to six rows by half a panel, in two builds:
//! - with AVX-VNNI, `vpdpbusd`, as AVX-512's form on half the lanes;
//! - without (Intel before Alder Lake, AMD before Zen 5), `vpmaddubsw` (a row's bytes by the
//!   weights, each pair of products summed in 16 bits) then `vpmaddwd` by ones (the pairs
//!   summed in 32 bits): three instructions where `vpdpbusd` is one. The 16-bit pair sums are
//!   exact, not saturated: the weights' scales keep a pair's magnitudes within 128
//!   ([`super::quantize_column`]), so a pair sums to within ±255 · 128. Both builds make the
//!   dot product's sums to the bit: the same int8 precision, not a new one.
//!
//! Both end in the same rescale, `row scale · column scale · (sum − zero point · column sum)
//! + bias`, in AVX-512's order.

use std::arch::x86_64::{
    __m256, __m256i, _CMP_UNORD_Q, _mm_max_ps, _mm_min_ps, _mm_packus_epi16, _mm_packus_epi32,
    _mm_storel_epi64, _mm256_add_epi32, _mm256_add_ps, _mm256_castps256_ps128,
    _mm256_castsi256_si128, _mm256_cmp_ps, _mm256_cvtepi32_ps, _mm256_cvtps_epi32,
    _mm256_dpbusd_avx_epi32, _mm256_extractf128_ps, _mm256_extracti128_si256, _mm256_loadu_ps,
    _mm256_loadu_si256, _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_max_epi32, _mm256_max_ps,
    _mm256_min_epi32, _mm256_min_ps, _mm256_movemask_ps, _mm256_mul_ps, _mm256_mullo_epi32,
    _mm256_set1_epi16, _mm256_set1_epi32, _mm256_set1_ps, _mm256_setzero_ps, _mm256_setzero_si256,
    _mm256_storeu_ps, _mm256_sub_epi32,
};

use super::{Block, RowQuantization, for_each_half_block};

/// `row` quantised into `bytes` (as long or longer; the rest is left as it is): its scale
/// and zero point. The AVX-512 form on eight lanes: the scalar reference, to the bit.
#[target_feature(enable = "avx2,fma")]
pub(super) fn quantize_row(row: &[f32], bytes: &mut [u8]) -> (f32, i32) {
    let (chunks, tail) = row.as_chunks::<8>();
    let load = |chunk: &[f32; 8]| {
        // SAFETY: a chunk holds 8 values to read, unaligned.
        unsafe { _mm256_loadu_ps(chunk.as_ptr()) }
    };
    let (mut low, mut high) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    let mut unordered = 0;
    for chunk in chunks {
        let values = load(chunk);
        low = _mm256_min_ps(low, values);
        high = _mm256_max_ps(high, values);
        unordered |= _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_UNORD_Q>(values, values));
    }
    // The eight lanes' extremes, then the tail's (the order does not change them).
    let halves = |v: __m256| (_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let ((low_a, low_b), (high_a, high_b)) = (halves(low), halves(high));
    let low_lanes: [f32; 4] = bytemuck::cast(_mm_min_ps(low_a, low_b));
    let high_lanes: [f32; 4] = bytemuck::cast(_mm_max_ps(high_a, high_b));
    let low = low_lanes
        .into_iter()
        .chain(tail.iter().copied())
        .fold(0.0, f32::min);
    let high = high_lanes
        .into_iter()
        .chain(tail.iter().copied())
        .fold(0.0, f32::max);
    let unordered = unordered != 0 || tail.iter().any(|v| v.is_nan());
    let quantization = RowQuantization::new(low, high, unordered);
    let (inverse, zero_point) = (
        _mm256_set1_ps(quantization.inverse),
        _mm256_set1_ps(quantization.zero_point),
    );
    let (floor, ceiling) = (_mm256_set1_epi32(0), _mm256_set1_epi32(255));
    let (byte_chunks, byte_tail) = bytes[..row.len()].as_chunks_mut::<8>();
    for (chunk, out) in chunks.iter().zip(byte_chunks) {
        let scaled = _mm256_add_ps(_mm256_mul_ps(load(chunk), inverse), zero_point);
        // Rounds to nearest even; a NaN becomes i32::MIN, clamped to 0 as the
        // reference's cast makes it.
        let rounded = _mm256_cvtps_epi32(scaled);
        let clamped = _mm256_min_epi32(_mm256_max_epi32(rounded, floor), ceiling);
        let (low, high) = (
            _mm256_castsi256_si128(clamped),
            _mm256_extracti128_si256::<1>(clamped),
        );
        // 0 to 255 each: the packs narrow without saturating.
        let words = _mm_packus_epi32(low, high);
        let narrowed = _mm_packus_epi16(words, words);
        // SAFETY: `out` holds 8 bytes to write, unaligned; the store writes the low 8.
        unsafe { _mm_storel_epi64(out.as_mut_ptr().cast(), narrowed) };
    }
    for (out, &v) in byte_tail.iter_mut().zip(tail) {
        *out = quantization.byte(v);
    }
    (quantization.scale, quantization.zero_point as i32)
}

half_block!(vnni_block, "avx2,fma,avxvnni", 6, vnni_kernel);
// Five rows: its ones and a 16-bit product take two of the registers six rows would need.
half_block!(madd_block, "avx2,fma", 5, madd_kernel);

/// 8 lanes from `values`, which holds at least 8.
#[target_feature(enable = "avx2")]
fn load(values: &[u32]) -> __m256i {
    assert!(values.len() >= 8);
    // SAFETY: `values` holds at least 8 lanes (32 bytes) to read; the read is unaligned.
    unsafe { _mm256_loadu_si256(values.as_ptr().cast()) }
}

/// 8 values from `values`, which holds at least 8.
#[target_feature(enable = "avx2")]
fn load_floats(values: &[f32]) -> __m256 {
    assert!(values.len() >= 8);
    // SAFETY: `values` holds at least 8 values to read, unaligned.
    unsafe { _mm256_loadu_ps(values.as_ptr()) }
}

/// A micro-kernel: `R` rows by the 16 columns of the panel from `first_column`, in 2·R
/// accumulators, four depths a step (a row's lane broadcast, by two vectors of eight columns'
/// lanes); then [`rescale`]d into `out`. `$dot(sums, quad, weights)` adds the products of a
/// row's four bytes with each column's four weights to the column's sum.
macro_rules! dot_kernel {
    ($(#[$doc:meta])* $name:ident, $features:literal, $dot:expr) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        fn $name<const R: usize>(
            block: &Block<'_>,
            first_column: usize,
            width: usize,
            out: &mut [f32],
            ldc: usize,
        ) {
            let (a, b) = (block.a, block.b);
            let steps = b.len();
            assert_eq!(a.len(), R * steps);
            let columns = first_column..first_column + 16;
            let mut acc: [[__m256i; 2]; R] = [[_mm256_setzero_si256(); 2]; R];
            for (s, b_step) in b.iter().enumerate() {
                let b_half = &b_step[columns.clone()];
                let (b0, b1) = (load(&b_half[..8]), load(&b_half[8..]));
                for (r, lanes) in acc.iter_mut().enumerate() {
                    debug_assert!(r * steps + s < a.len());
                    // SAFETY: `a` holds R rows of `steps` lanes (asserted above), r < R and
                    // s < steps.
                    let quad = unsafe { *a.get_unchecked(r * steps + s) };
                    let quad = _mm256_set1_epi32(quad as i32);
                    lanes[0] = $dot(lanes[0], quad, b0);
                    lanes[1] = $dot(lanes[1], quad, b1);
                }
            }
            rescale(block, first_column, width, &acc, out, ldc);
        }
    };
}

dot_kernel!(
    /// The AVX-VNNI micro-kernel, on `vpdpbusd` (six rows, two vectors of weights and a
    /// broadcast fit the 16 registers).
    vnni_kernel,
    "avx2,fma,avxvnni",
    _mm256_dpbusd_avx_epi32
);

dot_kernel!(
    /// The AVX2 micro-kernel without a dot product, on `vpmaddubsw` and `vpmaddwd` by ones.
    madd_kernel,
    "avx2,fma",
    |sums, quad, weights| {
        let pairs = _mm256_maddubs_epi16(quad, weights);
        _mm256_add_epi32(sums, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
    }
);

/// `row scale · column scale · (sum − zero point · column sum) + bias` for the `R` rows of
/// `sums` (16 columns from `first_column`, two vectors a row), as the AVX-512 kernel computes
/// it, into the first `width` columns of each of `out`'s rows (stride `ldc`).
#[target_feature(enable = "avx2,fma")]
fn rescale<const R: usize>(
    block: &Block<'_>,
    first_column: usize,
    width: usize,
    sums: &[[__m256i; 2]; R],
    out: &mut [f32],
    ldc: usize,
) {
    let columns = first_column..first_column + 16;
    let column_sums: &[u32] = bytemuck::cast_slice(&block.column_sums[columns.clone()]);
    let column_sums = (load(&column_sums[..8]), load(&column_sums[8..]));
    let scales = &block.column_scales[columns.clone()];
    let scales = (load_floats(&scales[..8]), load_floats(&scales[8..]));
    let bias = &block.bias[columns];
    let bias = (load_floats(&bias[..8]), load_floats(&bias[8..]));
    for (r, lanes) in sums.iter().enumerate() {
        let zero_point = _mm256_set1_epi32(block.zero_points[r]);
        let row_scale = _mm256_set1_ps(block.row_scales[r]);
        let rescale = |sum: __m256i, column_sums: __m256i, scales, bias| {
            let exact = _mm256_sub_epi32(sum, _mm256_mullo_epi32(zero_point, column_sums));
            let scale = _mm256_mul_ps(row_scale, scales);
            _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(exact), scale), bias)
        };
        let low = rescale(lanes[0], column_sums.0, scales.0, bias.0);
        let high = rescale(lanes[1], column_sums.1, scales.1, bias.1);
        let row = &mut out[r * ldc..r * ldc + width];
        if let Ok(row) = <&mut [f32; 16]>::try_from(&mut *row) {
            let (row_low, row_high) = row.split_at_mut(8);
            // SAFETY: the row holds 16 values to write, unaligned: 8 here...
            unsafe { _mm256_storeu_ps(row_low.as_mut_ptr(), low) };
            // SAFETY: ...and 8 here.
            unsafe { _mm256_storeu_ps(row_high.as_mut_ptr(), high) };
        } else {
            // The last columns of a layer: fewer than 16.
            let mut values = [0.0f32; 16];
            let (values_low, values_high) = values.split_at_mut(8);
            // SAFETY: each half holds 8 values to write, unaligned.
            unsafe { _mm256_storeu_ps(values_low.as_mut_ptr(), low) };
            // SAFETY: as above.
            unsafe { _mm256_storeu_ps(values_high.as_mut_ptr(), high) };
            row.copy_from_slice(&values[..width]);
        }
    }
}
