//! The AVX-512 form (AVX-512 F, BW and VNNI): rows quantised on sixteen lanes, and a
//! micro-kernel of up to [`MR`] rows by a whole panel on `vpdpbusd` in 512-bit registers.

use std::arch::x86_64::{
    __m512i, _mm512_add_ps, _mm512_cvtepi32_ps, _mm512_dpbusd_epi32, _mm512_loadu_epi32,
    _mm512_loadu_ps, _mm512_mul_ps, _mm512_mullo_epi32, _mm512_set1_epi32, _mm512_set1_ps,
    _mm512_setzero_si512, _mm512_sub_epi32,
};

use std::arch::x86_64::{
    _CMP_UNORD_Q, _mm_storeu_si128, _mm512_cmp_ps_mask, _mm512_cvtepi32_epi8, _mm512_cvtps_epi32,
    _mm512_max_epi32, _mm512_max_ps, _mm512_min_epi32, _mm512_min_ps, _mm512_reduce_max_ps,
    _mm512_reduce_min_ps, _mm512_setzero_ps,
};

use super::{Block, RowQuantization};
use crate::{MR, NR};

/// `row` quantised into `bytes` (as long or longer; the rest is left as it is): its scale
/// and zero point. The vector form of the scalar reference, to the bit.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn quantize_row(row: &[f32], bytes: &mut [u8]) -> (f32, i32) {
    let (chunks, tail) = row.as_chunks::<16>();
    let load = |chunk: &[f32; 16]| {
        // SAFETY: a chunk holds 16 values to read, unaligned.
        unsafe { _mm512_loadu_ps(chunk.as_ptr()) }
    };
    let (mut low, mut high) = (_mm512_setzero_ps(), _mm512_setzero_ps());
    let mut unordered = 0u16;
    for chunk in chunks {
        let values = load(chunk);
        low = _mm512_min_ps(low, values);
        high = _mm512_max_ps(high, values);
        unordered |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(values, values);
    }
    let (low, high, unordered) = tail.iter().fold(
        (
            _mm512_reduce_min_ps(low),
            _mm512_reduce_max_ps(high),
            unordered != 0,
        ),
        |(low, high, unordered), &v| (low.min(v), high.max(v), unordered || v.is_nan()),
    );
    let quantization = RowQuantization::new(low, high, unordered);
    let (inverse, zero_point) = (
        _mm512_set1_ps(quantization.inverse),
        _mm512_set1_ps(quantization.zero_point),
    );
    let (floor, ceiling) = (_mm512_set1_epi32(0), _mm512_set1_epi32(255));
    let (byte_chunks, byte_tail) = bytes[..row.len()].as_chunks_mut::<16>();
    for (chunk, out) in chunks.iter().zip(byte_chunks) {
        let scaled = _mm512_add_ps(_mm512_mul_ps(load(chunk), inverse), zero_point);
        // Rounds to nearest even (the default rounding mode); a NaN becomes i32::MIN,
        // clamped to 0 as the reference's cast makes it.
        let rounded = _mm512_cvtps_epi32(scaled);
        let clamped = _mm512_min_epi32(_mm512_max_epi32(rounded, floor), ceiling);
        let narrowed = _mm512_cvtepi32_epi8(clamped);
        // SAFETY: `out` holds 16 bytes to write, unaligned.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), narrowed) };
    }
    for (out, &v) in byte_tail.iter_mut().zip(tail) {
        *out = quantization.byte(v);
    }
    (quantization.scale, quantization.zero_point as i32)
}

/// One block of the output: its `rows` (1 to [`MR`], of `b.len()` lanes each, checked) by
/// its panel, for the columns of `out`'s last row (row stride `ldc`).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(super) fn block(block: &Block<'_>, out: &mut [f32], ldc: usize, rows: usize) {
    macro_rules! by_rows {
        ($($r:literal)*) => {
            match rows {
                $($r => kernel::<$r>(block, out, ldc),)*
                _ => unreachable!("1 to {MR} rows, not {rows}"),
            }
        };
    }
    by_rows!(1 2 3 4 5 6 7 8 9 10 11 12 13 14)
}

/// 16 lanes from `values`, which holds at least 16.
#[target_feature(enable = "avx512f")]
fn load(values: &[u32]) -> __m512i {
    debug_assert!(values.len() >= 16);
    // SAFETY: `values` holds at least 16 lanes (64 bytes) to read; the read is unaligned.
    unsafe { _mm512_loadu_epi32(values.as_ptr().cast()) }
}

/// The micro-kernel: `R` rows by 32 columns in 2·R registers, four depths a step, then
/// [`rescale`].
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn kernel<const R: usize>(block: &Block<'_>, out: &mut [f32], ldc: usize) {
    let (a, b) = (block.a, block.b);
    let steps = b.len();
    debug_assert_eq!(a.len(), R * steps);
    let mut acc: [[__m512i; 2]; R] = [[_mm512_setzero_si512(); 2]; R];
    for (s, b_step) in b.iter().enumerate() {
        let b0 = load(&b_step[..16]);
        let b1 = load(&b_step[16..]);
        for (r, lanes) in acc.iter_mut().enumerate() {
            debug_assert!(r * steps + s < a.len());
            // SAFETY: `a` holds R rows of `steps` lanes (checked in `block`), r < R and
            // s < steps.
            let quad = unsafe { *a.get_unchecked(r * steps + s) };
            let quad = _mm512_set1_epi32(quad as i32);
            lanes[0] = _mm512_dpbusd_epi32(lanes[0], quad, b0);
            lanes[1] = _mm512_dpbusd_epi32(lanes[1], quad, b1);
        }
    }
    rescale(block, &acc, out, ldc);
}

/// `row scale · column scale · (sum − zero point · column sum) + bias` for each row of
/// `sums` (the block's rows, each a panel's 32 `i32` in two registers), into `out` (row
/// stride `ldc`) for the columns of its last row.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
pub(super) fn rescale(block: &Block<'_>, sums: &[[__m512i; 2]], out: &mut [f32], ldc: usize) {
    let halves = |values: &[i32; NR]| {
        (
            load(bytemuck::cast_slice(&values[..16])),
            load(bytemuck::cast_slice(&values[16..])),
        )
    };
    let column_sums = halves(block.column_sums);
    let floats = |values: &[f32; NR]| {
        // SAFETY: `values` holds 32 values; this reads the first 16, unaligned.
        let low = unsafe { _mm512_loadu_ps(values.as_ptr()) };
        // SAFETY: as above, the second 16.
        let high = unsafe { _mm512_loadu_ps(values[16..].as_ptr()) };
        (low, high)
    };
    let (scales, bias) = (floats(block.column_scales), floats(block.bias));
    let columns = (out.len() - (sums.len() - 1) * ldc).min(NR);
    for (r, lanes) in sums.iter().enumerate() {
        let zero_point = _mm512_set1_epi32(block.zero_points[r]);
        let row_scale = _mm512_set1_ps(block.row_scales[r]);
        let rescale = |sum: __m512i, column_sums: __m512i, scales, bias| {
            let exact = _mm512_sub_epi32(sum, _mm512_mullo_epi32(zero_point, column_sums));
            let scale = _mm512_mul_ps(row_scale, scales);
            _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(exact), scale), bias)
        };
        let low = rescale(lanes[0], column_sums.0, scales.0, bias.0);
        let high = rescale(lanes[1], column_sums.1, scales.1, bias.1);
        crate::store_row(&mut out[r * ldc..r * ldc + columns], low, high);
    }
}
