//! The int8 forms of aarch64: rows quantised on four lanes, and two micro-kernels of up to six
//! rows by half a panel, with the same sums as `vpdpbusd`'s, so the same results to the bit
//! as the x86 forms:
//! - with the int8 matrix multiply (i8mm: Apple M2 and later, Graviton 3), `usmmla`: a pair
//!   of rows' eight bytes by a pair of columns' eight weights, four sums an instruction, twice
//!   `sdot`'s products;
//! - with the dot product alone (Apple M1, Graviton 2), `sdot`. It multiplies signed bytes by
//!   signed bytes, and the rows' bytes are unsigned: each is taken as `byte − 128` (its top
//!   bit flipped), which takes `128 · column sum` off every sum; the rescale adds it back,
//!   `sum − zero point · column sum = sum' + (128 − zero point) · column sum`, exactly, in
//!   `i32`.
//!
//! Depth padding is a zero weight, so its byte never counts. Rust 1.95 has no stable `sdot` or
//! `usmmla` intrinsic: each is one `asm!` instruction.

use std::arch::aarch64::{
    float32x4_t, int8x16_t, int32x4_t, uint8x16_t, uint32x4_t, vaddq_f32, vaddq_s32, vandq_u32,
    vceqq_f32, vcombine_u8, vcombine_u16, vcreate_u8, vcvtnq_s32_f32, vcvtq_f32_s32, vdupq_n_f32,
    vdupq_n_s32, vdupq_n_u32, vld1q_f32, vld1q_s32, vld1q_u32, vmaxnmq_f32, vmaxnmvq_f32,
    vminnmq_f32, vminnmvq_f32, vminvq_u32, vmulq_f32, vmulq_s32, vqmovn_u16, vqmovun_s32,
    vreinterpretq_s8_u32, vreinterpretq_s32_u64, vreinterpretq_u64_s32, vst1_u8, vst1q_f32,
    vzip1q_u32, vzip1q_u64, vzip2q_u32, vzip2q_u64,
};

use super::{Block, RowQuantization, for_each_half_block};

/// Columns of a block: half a panel, four vectors of four lanes; six rows of them
/// ([`for_each_half_block`]'s) are 24 accumulators, which with four vectors of weights and a
/// broadcast row fit the 32 registers.
const COLUMNS: usize = 16;

/// `row` quantised into `bytes` (as long or longer; the rest is left as it is): its scale
/// and zero point. The x86 forms on four lanes: the scalar reference, to the bit.
#[target_feature(enable = "neon")]
pub(super) fn quantize_row(row: &[f32], bytes: &mut [u8]) -> (f32, i32) {
    assert!(bytes.len() >= row.len(), "a byte a value");
    let load = |values: &[f32]| {
        assert!(values.len() >= 4);
        // SAFETY: `values` holds at least 4 values to read; no alignment is needed.
        unsafe { vld1q_f32(values.as_ptr()) }
    };
    let (chunks, tail) = row.as_chunks::<4>();
    let (mut low, mut high) = (vdupq_n_f32(0.0), vdupq_n_f32(0.0));
    let mut ordered = vdupq_n_u32(u32::MAX);
    for chunk in chunks {
        let values = load(chunk);
        low = vminnmq_f32(low, values);
        high = vmaxnmq_f32(high, values);
        ordered = vandq_u32(ordered, vceqq_f32(values, values));
    }
    let low = tail.iter().copied().fold(vminnmvq_f32(low), f32::min);
    let high = tail.iter().copied().fold(vmaxnmvq_f32(high), f32::max);
    let unordered = vminvq_u32(ordered) == 0 || tail.iter().any(|v| v.is_nan());
    let quantization = RowQuantization::new(low, high, unordered);
    let (inverse, zero_point) = (
        vdupq_n_f32(quantization.inverse),
        vdupq_n_f32(quantization.zero_point),
    );
    let words = |values: float32x4_t| {
        let scaled = vaddq_f32(vmulq_f32(values, inverse), zero_point);
        // Rounds to nearest even; a NaN becomes 0, as the reference's cast makes it; the
        // narrowing saturates to 0 below and (next) to 255 above, as the reference clamps.
        vqmovun_s32(vcvtnq_s32_f32(scaled))
    };
    let (eights, tail) = row.as_chunks::<8>();
    let (byte_chunks, byte_tail) = bytes[..row.len()].as_chunks_mut::<8>();
    for (chunk, out) in eights.iter().zip(byte_chunks) {
        let narrowed = vqmovn_u16(vcombine_u16(words(load(chunk)), words(load(&chunk[4..]))));
        // SAFETY: `out` holds 8 bytes to write; no alignment is needed.
        unsafe { vst1_u8(out.as_mut_ptr(), narrowed) };
    }
    for (out, &v) in byte_tail.iter_mut().zip(tail) {
        *out = quantization.byte(v);
    }
    (quantization.scale, quantization.zero_point as i32)
}

half_block!(dot_block, "neon,dotprod", 6, dot_kernel);
half_block!(mmla_block, "neon,i8mm", 6, mmla_kernel);

/// A multiply-accumulate instruction of four `i32` sums from two registers of sixteen bytes,
/// as a function: `$instruction acc, a, b`, which needs `$feature`.
macro_rules! accumulate {
    ($(#[$doc:meta])* $name:ident: $instruction:literal, $feature:literal, $a:ty, $b:ty) => {
        $(#[$doc])*
        #[target_feature(enable = $feature)]
        fn $name(acc: int32x4_t, a: $a, b: $b) -> int32x4_t {
            let mut acc = acc;
            // SAFETY: one instruction on registers the compiler chose for these operands: it
            // reads `a` and `b`, writes `acc`, touches no memory, stack or flags; its feature
            // is enabled on this function, which runs only where it was detected.
            unsafe {
                std::arch::asm!(
                    concat!($instruction, " {acc:v}.4s, {a:v}.16b, {b:v}.16b"),
                    acc = inout(vreg) acc,
                    a = in(vreg) a,
                    b = in(vreg) b,
                    options(pure, nomem, nostack, preserves_flags),
                );
            }
            acc
        }
    };
}

accumulate! {
    /// `acc + Σ a · b` over each lane's four signed bytes.
    sdot: "sdot", "neon,dotprod", int8x16_t, int8x16_t
}

accumulate! {
    /// `acc + A · Bᵀ` for `a`, two rows of eight unsigned bytes, and `b`, two columns of
    /// eight signed weights (each the low then the high half of its register): the 2 × 2
    /// sums, first row first.
    usmmla: "usmmla", "neon,i8mm", uint8x16_t, int8x16_t
}

/// Four lanes of `values` (at least four).
#[target_feature(enable = "neon")]
fn load_lanes(values: &[u32]) -> uint32x4_t {
    assert!(values.len() >= 4);
    // SAFETY: `values` holds at least 4 lanes (16 bytes) to read; no alignment is needed.
    unsafe { vld1q_u32(values.as_ptr()) }
}

/// The dot-product micro-kernel: `R` rows by the 16 columns of the panel from
/// `first_column`, in 4·R registers, four depths a step; then [`rescale`]d, each sum less
/// the `128 · column sum` its flipped bytes took off.
#[target_feature(enable = "neon,dotprod")]
fn dot_kernel<const R: usize>(
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
        let weights = [0, 4, 8, 12].map(|start| vreinterpretq_s8_u32(load_lanes(&lanes[start..])));
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
        let offset = 128 - block.zero_points[r];
        rescale(
            block,
            r,
            offset,
            first_column,
            sums,
            &mut out[r * ldc..r * ldc + width],
        );
    }
}

/// The matrix-multiply micro-kernel: `R` rows (in pairs; an odd last row pairs with itself)
/// by the 16 columns of the panel from `first_column`, eight columns at a time in 4·⌈R/2⌉
/// registers (a pair of rows by a pair of columns each), eight depths (two steps) an
/// instruction; then [`rescale`]d.
#[target_feature(enable = "neon,i8mm")]
fn mmla_kernel<const R: usize>(
    block: &Block<'_>,
    first_column: usize,
    width: usize,
    out: &mut [f32],
    ldc: usize,
) {
    let (a, b) = (block.a, block.b);
    let steps = b.len();
    assert_eq!(a.len(), R * steps);
    let pairs = R.div_ceil(2);
    let mut sums = [[vdupq_n_s32(0); 4]; 6];
    for eighth in 0..2 {
        let first = first_column + 8 * eighth;
        let mut acc = [[vdupq_n_s32(0); 4]; 3];
        for s in (0..steps).step_by(2) {
            // A row's eight bytes of steps s and s + 1 (zero past its last step).
            let bytes = |r: usize| {
                let lane = |s: usize| if s < steps { a[r * steps + s] } else { 0 };
                u64::from(lane(s)) | (u64::from(lane(s + 1)) << 32)
            };
            let zeros = [0u32; 8];
            let next = b
                .get(s + 1)
                .map_or(&zeros[..], |step| &step[first..first + 8]);
            let this = &b[s][first..first + 8];
            // Each column's eight weights together, two columns a register.
            let columns = [0, 4].map(|start| {
                let (low, high) = (load_lanes(&this[start..]), load_lanes(&next[start..]));
                [vzip1q_u32(low, high), vzip2q_u32(low, high)]
                    .map(|pair| vreinterpretq_s8_u32(pair))
            });
            let columns = [columns[0][0], columns[0][1], columns[1][0], columns[1][1]];
            for (pair, acc) in acc.iter_mut().enumerate().take(pairs) {
                let (top, bottom) = (2 * pair, (2 * pair + 1).min(R - 1));
                let rows = vcombine_u8(vcreate_u8(bytes(top)), vcreate_u8(bytes(bottom)));
                for (sum, &columns) in acc.iter_mut().zip(&columns) {
                    *sum = usmmla(*sum, rows, columns);
                }
            }
        }
        // A pair's register holds (top, left), (top, right), (bottom, left), (bottom, right):
        // the first halves of two make the top row's four columns, the second halves the
        // bottom's.
        for (pair, acc) in acc.iter().enumerate().take(pairs) {
            let [c01, c23, c45, c67] = acc.map(|sums| vreinterpretq_u64_s32(sums));
            for (r, top) in [(2 * pair, true), (2 * pair + 1, false)] {
                if r < R {
                    let (left, right) = if top {
                        (vzip1q_u64(c01, c23), vzip1q_u64(c45, c67))
                    } else {
                        (vzip2q_u64(c01, c23), vzip2q_u64(c45, c67))
                    };
                    sums[r][2 * eighth] = vreinterpretq_s32_u64(left);
                    sums[r][2 * eighth + 1] = vreinterpretq_s32_u64(right);
                }
            }
        }
    }
    for (r, sums) in sums.iter().enumerate().take(R) {
        let offset = -block.zero_points[r];
        rescale(
            block,
            r,
            offset,
            first_column,
            sums,
            &mut out[r * ldc..r * ldc + width],
        );
    }
}

/// `row scale · column scale · (sum + offset · column sum) + bias` for row `r` of the block
/// and the 16 columns from `first_column` (`sums`, four a vector), into `row`'s first values
/// (16, or fewer at a layer's last columns). `offset` is minus the row's zero point, plus
/// what a kernel's sums lack (`sdot`'s flipped bytes: 128).
#[target_feature(enable = "neon")]
fn rescale(
    block: &Block<'_>,
    r: usize,
    offset: i32,
    first_column: usize,
    sums: &[int32x4_t; 4],
    row: &mut [f32],
) {
    let offset = vdupq_n_s32(offset);
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
    row.copy_from_slice(&values[..row.len()]);
}
