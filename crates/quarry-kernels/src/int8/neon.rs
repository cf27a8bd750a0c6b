//! The int8 product on aarch64 with the dot-product instructions (`sdot`: every Apple
//! M-series, Graviton 2 and later): the same sums as `vpdpbusd`'s, so the same results to the
//! bit as the x86 forms.
//!
//! `sdot` multiplies signed bytes by signed bytes, and the rows' bytes are unsigned: each is
//! taken as `byte − 128` (its top bit flipped), which takes `128 · column sum` off every sum;
//! the rescale adds it back, `sum − zero point · column sum = sum' + (128 − zero point) ·
//! column sum`, exactly, in `i32`. Depth padding is a zero weight, so its byte never counts.
//! Rust 1.95 has no stable `sdot` intrinsic: it is one `asm!` instruction.

use std::arch::aarch64::{
    int8x16_t, int32x4_t, vaddq_f32, vaddq_s32, vcvtq_f32_s32, vdupq_n_f32, vdupq_n_s32,
    vdupq_n_u32, vld1q_f32, vld1q_s32, vld1q_u32, vmulq_f32, vmulq_s32, vreinterpretq_s8_u32,
    vst1q_f32,
};

use super::{Block, for_each_half_block};

/// Columns of a block: half a panel, four vectors of four lanes; six rows of them
/// ([`for_each_half_block`]'s) are 24 accumulators, which with four vectors of weights and a
/// broadcast row fit the 32 registers.
const COLUMNS: usize = 16;

/// The block (1 to `MR` rows by a panel) in sub-blocks of at most six rows by half a panel,
/// each by [`kernel`] with as many accumulator rows as it needs.
#[target_feature(enable = "neon,dotprod")]
pub(super) fn block(block: &Block<'_>, out: &mut [f32], ldc: usize) {
    for_each_half_block(block, out, ldc, |part, first_column, width, out| {
        by_rows!(kernel, part, first_column, width, out, ldc)
    });
}

/// `acc + Σ a · b` over each lane's four signed bytes.
#[target_feature(enable = "neon,dotprod")]
fn sdot(acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
    let mut acc = acc;
    // SAFETY: one `sdot` on registers the compiler chose for these operands: it reads `a`
    // and `b`, writes `acc`, touches no memory, stack or flags; the dot-product feature is
    // enabled on this function, which runs only where it was detected.
    unsafe {
        std::arch::asm!(
            "sdot {acc:v}.4s, {a:v}.16b, {b:v}.16b",
            acc = inout(vreg) acc,
            a = in(vreg) a,
            b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// Four lanes of `values` (at least four) as sixteen signed bytes.
#[target_feature(enable = "neon")]
fn load_bytes(values: &[u32]) -> int8x16_t {
    assert!(values.len() >= 4);
    // SAFETY: `values` holds at least 4 lanes (16 bytes) to read; no alignment is needed.
    vreinterpretq_s8_u32(unsafe { vld1q_u32(values.as_ptr()) })
}

/// The micro-kernel: `R` rows by the 16 columns of the panel from `first_column`, in 4·R
/// registers, four depths a step; then `row scale · column scale · (sum' + (128 − zero
/// point) · column sum) + bias`, for the first `width` columns of each of `out`'s rows
/// (stride `ldc`).
#[target_feature(enable = "neon,dotprod")]
fn kernel<const R: usize>(
    block: &Block<'_>,
    first_column: usize,
    width: usize,
    out: &mut [f32],
    ldc: usize,
) {
    let (a, b) = (block.a, block.b);
    let steps = b.len();
    assert_eq!(a.len(), R * steps);
    let columns = first_column..first_column + COLUMNS;
    let mut acc: [[int32x4_t; 4]; R] = [[vdupq_n_s32(0); 4]; R];
    for (s, b_step) in b.iter().enumerate() {
        let lanes = &b_step[columns.clone()];
        let weights = [0, 4, 8, 12].map(|start| load_bytes(&lanes[start..]));
        for (r, sums) in acc.iter_mut().enumerate() {
            // Each byte less 128: its top bit flipped.
            let quad = a[r * steps + s] ^ 0x8080_8080;
            let quad = vreinterpretq_s8_u32(vdupq_n_u32(quad));
            for (sum, &weights) in sums.iter_mut().zip(&weights) {
                *sum = sdot(*sum, quad, weights);
            }
        }
    }
    for (r, sums) in acc.iter().enumerate() {
        let offset = vdupq_n_s32(128 - block.zero_points[r]);
        let row_scale = vdupq_n_f32(block.row_scales[r]);
        let mut values = [0.0f32; COLUMNS];
        for (quarter, sum) in sums.iter().enumerate() {
            let column = first_column + 4 * quarter;
            let column_sums = &block.column_sums[column..column + 4];
            let scales = &block.column_scales[column..column + 4];
            let bias = &block.bias[column..column + 4];
            // SAFETY: each slice holds the 4 values read here and below, unaligned.
            let column_sums = unsafe { vld1q_s32(column_sums.as_ptr()) };
            // SAFETY: as above.
            let scales = unsafe { vld1q_f32(scales.as_ptr()) };
            // SAFETY: as above.
            let bias = unsafe { vld1q_f32(bias.as_ptr()) };
            let exact = vaddq_s32(*sum, vmulq_s32(offset, column_sums));
            let scale = vmulq_f32(row_scale, scales);
            let value = vaddq_f32(vmulq_f32(vcvtq_f32_s32(exact), scale), bias);
            // SAFETY: `values` holds 16 values; this writes 4 from `4 · quarter`.
            unsafe { vst1q_f32(values[4 * quarter..].as_mut_ptr(), value) };
        }
        out[r * ldc..r * ldc + width].copy_from_slice(&values[..width]);
    }
}
