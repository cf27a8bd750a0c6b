//! `x · W + b` with `W` and `x` in bfloat16 and the sums in `f32` (`vdpbf16ps`).

use std::cell::RefCell;
use std::ops::Range;

use crate::{Bf16Isa, MICRO_KERNEL_BLOCKS, NR, blocks, check_product, packing};

thread_local! {
    /// Each thread's input rows in bfloat16 lanes, kept from call to call.
    static LANES: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// `value` rounded to bfloat16 (its top 16 bits): to nearest, ties to even; a NaN stays a NaN.
pub(crate) fn to_bf16(value: f32) -> u16 {
    let bits = value.to_bits();
    if value.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let rounding = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(rounding) >> 16) as u16
}

/// The `f32` a bfloat16 stands for.
#[cfg(test)]
fn from_bf16(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// A linear layer's weights in bfloat16, packed for [`Bf16Weights::multiply`].
#[derive(Debug, Clone)]
pub struct Bf16Weights {
    k: usize,
    n: usize,
    /// `n.div_ceil(NR)` panels of `k.div_ceil(2)` steps; a lane holds two depths' weights.
    panels: Vec<[u32; NR]>,
}

impl Bf16Weights {
    /// `weight` (`k × n`, row-major: inputs by outputs) rounded to bfloat16 and packed.
    pub fn pack(weight: &[f32], k: usize, n: usize) -> Self {
        assert_eq!(weight.len(), k * n, "a {k} × {n} weight");
        let row = |i: usize| &weight[i * n..(i + 1) * n];
        Self {
            k,
            n,
            panels: packing::panels::<2>(row, k, n, |w, _| u32::from(to_bf16(w))),
        }
    }

    /// Weights packed before, from [`Bf16Weights::packed`]; `None` where `panels` is not
    /// [`Bf16Weights::packed_len`] long.
    pub fn from_packed(k: usize, n: usize, panels: Vec<u32>) -> Option<Self> {
        if panels.len() != Self::packed_len(k, n) {
            return None;
        }
        let panels = panels.as_chunks::<NR>().0.to_vec();
        Some(Self { k, n, panels })
    }

    /// The packed panels, as [`Bf16Weights::from_packed`] takes them back.
    pub fn packed(&self) -> &[u32] {
        self.panels.as_flattened()
    }

    /// How many 32-bit lanes the panels of a `k × n` layer take.
    pub fn packed_len(k: usize, n: usize) -> usize {
        n.div_ceil(NR) * k.div_ceil(2) * NR
    }

    /// Panels of [`NR`] output columns.
    pub fn panel_count(&self) -> usize {
        self.n.div_ceil(NR)
    }

    /// `x · W + b` for the output columns of `panels` (a range of panel indices), for `x` of
    /// `m × k` (row-major): row `r`'s values go to `out[r · ldc..]`, the first column of the
    /// range first. `bias` is padded to whole panels. Runs on the calling thread.
    ///
    /// # Panics
    ///
    /// Where the CPU lacks AVX-512 BF16 ([`crate::bf16_supported`]), `x` is not whole rows,
    /// `panels` lies past the last panel, `bias` is not one per panel, or `out` is too short.
    pub fn multiply(
        &self,
        x: &[f32],
        panels: Range<usize>,
        bias: &[[f32; NR]],
        out: &mut [f32],
        ldc: usize,
    ) {
        let Some(rows) = check_product(self.k, self.n, x, &panels, bias, out, ldc) else {
            return;
        };
        let isa = Bf16Isa::detect();
        let steps = self.k.div_ceil(2);
        LANES.with_borrow_mut(|lanes| {
            rows_to_lanes(isa, x, self.k, lanes);
            for at in blocks(rows, self.n, panels, ldc, MICRO_KERNEL_BLOCKS) {
                simd::block(
                    isa,
                    &lanes[at.rows.start * steps..at.rows.end * steps],
                    &self.panels[at.panel * steps..(at.panel + 1) * steps],
                    &bias[at.panel],
                    &mut out[at.out],
                    ldc,
                );
            }
        });
    }
}

/// Each row of `x` (rows of `k` values) as `k.div_ceil(2)` lanes, a pair of bfloat16 values
/// each (the first in the low half; an odd row's last lane ends in 0).
fn rows_to_lanes(isa: Bf16Isa, x: &[f32], k: usize, lanes: &mut Vec<u32>) {
    let steps = k.div_ceil(2);
    // Every half a row's values take is written below, and an odd depth's padding zeroed:
    // the buffer need not be cleared.
    lanes.resize(x.len() / k * steps, 0);
    for (row, lanes) in x.chunks(k).zip(lanes.chunks_mut(steps)) {
        lanes[steps - 1] = 0;
        simd::to_bf16_halves(isa, row, bytemuck::cast_slice_mut(lanes));
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::{
        __m512, __m512bh, __m512i, _mm512_add_ps, _mm512_cvtne2ps_pbh, _mm512_dpbf16_ps,
        _mm512_loadu_ps, _mm512_set1_epi32, _mm512_setzero_ps, _mm512_storeu_ps,
    };

    use super::to_bf16;

    /// `row` rounded to bfloat16 into `halves` (as long or longer; the rest is left as it
    /// is), 32 values an instruction: the vector form of [`to_bf16`].
    pub(super) fn to_bf16_halves(_isa: Bf16Isa, row: &[f32], halves: &mut [u16]) {
        assert!(halves.len() >= row.len(), "a half a value");
        // SAFETY: a `Bf16Isa` exists only where `bf16_supported` found AVX-512 F and BF16,
        // which is all the target features of `to_bf16_avx512` ask for.
        unsafe { to_bf16_avx512(row, halves) }
    }

    #[target_feature(enable = "avx512f,avx512bf16")]
    fn to_bf16_avx512(row: &[f32], halves: &mut [u16]) {
        let (chunks, tail) = row.as_chunks::<32>();
        let (half_chunks, half_tail) = halves[..row.len()].as_chunks_mut::<32>();
        for (chunk, out) in chunks.iter().zip(half_chunks) {
            // SAFETY: a chunk holds 32 values; this reads the first 16, unaligned.
            let low = unsafe { _mm512_loadu_ps(chunk.as_ptr()) };
            // SAFETY: as above, the second 16.
            let high = unsafe { _mm512_loadu_ps(chunk[16..].as_ptr()) };
            // The second operand fills the low half: the chunk's values in order.
            let rounded = _mm512_cvtne2ps_pbh(high, low);
            // SAFETY: `out` holds 32 halves (64 bytes) to write, unaligned; a `__m512bh` is
            // 64 bytes of plain lanes.
            unsafe { out.as_mut_ptr().cast::<__m512bh>().write_unaligned(rounded) };
        }
        for (out, &value) in half_tail.iter_mut().zip(tail) {
            *out = to_bf16(value);
        }
    }

    use crate::{Bf16Isa, MR, NR};

    /// One block of the output, `a`'s rows (of `b.len()` lanes each, 1 to [`MR`] of them) by
    /// the panel `b`: `out[r · ldc + c] = bias[c] + Σₛ a[r][s] · b[s][c]`, for the columns of
    /// `out`'s last row.
    pub(super) fn block(
        _isa: Bf16Isa,
        a: &[u32],
        b: &[[u32; NR]],
        bias: &[f32; NR],
        out: &mut [f32],
        ldc: usize,
    ) {
        let rows = a.len() / b.len();
        assert!(
            (1..=MR).contains(&rows) && a.len() == rows * b.len(),
            "1 to {MR} rows of {} lanes in {}",
            b.len(),
            a.len()
        );
        assert!(out.len() > (rows - 1) * ldc, "room for {rows} rows");
        // SAFETY: a `Bf16Isa` exists only where `bf16_supported` found AVX-512 F and BF16,
        // which is all the target features of `kernel_for_rows` ask for.
        unsafe { kernel_for_rows(a, b, bias, out, ldc, rows) }
    }

    #[target_feature(enable = "avx512f,avx512bf16")]
    fn kernel_for_rows(
        a: &[u32],
        b: &[[u32; NR]],
        bias: &[f32; NR],
        out: &mut [f32],
        ldc: usize,
        rows: usize,
    ) {
        macro_rules! by_rows {
            ($($r:literal)*) => {
                match rows {
                    $($r => kernel::<$r>(a, b, bias, out, ldc),)*
                    _ => unreachable!("1 to {MR} rows, not {rows}"),
                }
            };
        }
        by_rows!(1 2 3 4 5 6 7 8 9 10 11 12 13 14)
    }

    /// `value`'s bits as 32 bfloat16 lanes.
    #[target_feature(enable = "avx512f")]
    fn as_bf16(value: __m512i) -> __m512bh {
        // SAFETY: both are 64 bytes of plain lanes; every bit pattern is a valid value of each.
        unsafe { std::mem::transmute::<__m512i, __m512bh>(value) }
    }

    /// 16 lanes from `values`, which holds at least 16.
    #[target_feature(enable = "avx512f")]
    fn load_bf16(values: &[u32]) -> __m512bh {
        debug_assert!(values.len() >= 16);
        // SAFETY: `values` holds at least 16 lanes (64 bytes) to read; an unaligned read of
        // plain lanes needs no alignment, and every bit pattern is a valid `__m512bh`.
        unsafe { values.as_ptr().cast::<__m512bh>().read_unaligned() }
    }

    /// The micro-kernel: `R` rows by 32 columns in 2·R registers, a pair of depths a step.
    #[target_feature(enable = "avx512f,avx512bf16")]
    fn kernel<const R: usize>(
        a: &[u32],
        b: &[[u32; NR]],
        bias: &[f32; NR],
        out: &mut [f32],
        ldc: usize,
    ) {
        let steps = b.len();
        debug_assert_eq!(a.len(), R * steps);
        let mut acc: [[__m512; 2]; R] = [[_mm512_setzero_ps(); 2]; R];
        for (s, b_step) in b.iter().enumerate() {
            let b0 = load_bf16(&b_step[..16]);
            let b1 = load_bf16(&b_step[16..]);
            for (r, lanes) in acc.iter_mut().enumerate() {
                debug_assert!(r * steps + s < a.len());
                // SAFETY: `a` holds R rows of `steps` lanes (checked in `block`), r < R and
                // s < steps.
                let pair = unsafe { *a.get_unchecked(r * steps + s) };
                let pair = as_bf16(_mm512_set1_epi32(pair as i32));
                lanes[0] = _mm512_dpbf16_ps(lanes[0], pair, b0);
                lanes[1] = _mm512_dpbf16_ps(lanes[1], pair, b1);
            }
        }
        let columns = (out.len() - (R - 1) * ldc).min(NR);
        // SAFETY: `bias` holds 32 values; the two reads take 16 each, unaligned.
        let bias0 = unsafe { _mm512_loadu_ps(bias.as_ptr()) };
        // SAFETY: as above, the second 16.
        let bias1 = unsafe { _mm512_loadu_ps(bias[16..].as_ptr()) };
        for (r, lanes) in acc.iter().enumerate() {
            let (low, high) = (
                _mm512_add_ps(lanes[0], bias0),
                _mm512_add_ps(lanes[1], bias1),
            );
            let mut values = [0.0f32; NR];
            // SAFETY: `values` has room for 32 values; each write stores 16, unaligned.
            unsafe { _mm512_storeu_ps(values.as_mut_ptr(), low) };
            // SAFETY: as above, the second 16.
            unsafe { _mm512_storeu_ps(values[16..].as_mut_ptr(), high) };
            out[r * ldc..r * ldc + columns].copy_from_slice(&values[..columns]);
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod simd {
    pub(super) fn to_bf16_halves(_isa: crate::Bf16Isa, _: &[f32], _: &mut [u16]) {
        unreachable!("no Bf16Isa without AVX-512 BF16")
    }

    pub(super) fn block(
        _isa: crate::Bf16Isa,
        _: &[u32],
        _: &[[u32; crate::NR]],
        _: &[f32; crate::NR],
        _: &mut [f32],
        _: usize,
    ) {
        unreachable!("no Bf16Isa without AVX-512 BF16")
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::tests::{matrix, padded_bias};

    #[test]
    fn rounding_is_to_nearest_even() {
        assert_eq!(to_bf16(1.0), 0x3f80);
        // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties to the even 1.
        assert_eq!(to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        // 1 + 3·2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: ties to the even 1 + 2^-6.
        assert_eq!(to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(to_bf16(-2.5), 0xc020);
        assert!(from_bf16(to_bf16(f32::NAN)).is_nan());
        assert_eq!(from_bf16(to_bf16(f32::INFINITY)), f32::INFINITY);
        // Past bfloat16's largest finite value, to nearest is infinite.
        assert_eq!(from_bf16(to_bf16(f32::MAX)), f32::INFINITY);
    }

    #[test]
    fn the_vector_rounding_is_the_scalar_one() {
        if !crate::bf16_supported() {
            crate::skipped(
                "quarry_kernels::bf16::tests::the_vector_rounding_is_the_scalar_one",
                "AVX-512 BF16",
            );
            return;
        }
        let mut values = matrix(1000, 9);
        values.extend([
            1.0 + 1.0 / 256.0,
            1.0 + 3.0 / 256.0,
            -0.0,
            65504.0,
            f32::INFINITY,
        ]);
        let mut halves = vec![0u16; values.len()];
        simd::to_bf16_halves(Bf16Isa::detect(), &values, &mut halves);
        for (value, half) in values.iter().zip(&halves) {
            assert_eq!(*half, to_bf16(*value), "{value}");
        }
    }

    /// The product of the bfloat16 values in `f64`: what the kernel computes, up to the
    /// rounding of its `f32` sums.
    fn reference(x: &[f32], w: &[f32], bias: &[f32], k: usize, n: usize) -> Vec<f64> {
        let round = |v: f32| f64::from(from_bf16(to_bf16(v)));
        let m = x.len() / k;
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = f64::from(bias[j])
                    + (0..k)
                        .map(|t| round(x[i * k + t]) * round(w[t * n + j]))
                        .sum::<f64>();
            }
        }
        out
    }

    fn check(m: usize, k: usize, n: usize, seed: u64) {
        let (x, w, bias) = (
            matrix(m * k, seed),
            matrix(k * n, seed + 1),
            matrix(n, seed + 2),
        );
        if !crate::bf16_supported() {
            crate::skipped(
                "quarry_kernels::bf16::tests::check (the property test and the model shapes)",
                "AVX-512 BF16",
            );
            return;
        }
        let weights = Bf16Weights::pack(&w, k, n);
        let expected = reference(&x, &w, &bias, k, n);
        let mut out = vec![f32::NAN; m * n];
        weights.multiply(
            &x,
            0..weights.panel_count(),
            &padded_bias(&bias),
            &mut out,
            n,
        );
        for (i, (found, expected)) in out.iter().zip(&expected).enumerate() {
            // f32 sums of k products of values under 1: a few ulp of k.
            let bound = 1e-6 * k as f64 + 1e-6;
            assert!(
                (f64::from(*found) - expected).abs() <= bound,
                "{m}×{k}×{n} at {i}: {found} against {expected}"
            );
        }
    }

    #[test]
    fn matches_the_reference_on_the_model_shapes() {
        for (m, k, n) in [(1, 384, 1152), (37, 384, 1536), (20, 1536, 384)] {
            check(m, k, n, 5);
        }
    }

    #[test]
    fn a_column_range_lands_at_the_start_of_its_output() {
        let (m, k, n) = (3, 10, 100);
        let (x, w) = (matrix(m * k, 1), matrix(k * n, 2));
        if !crate::bf16_supported() {
            crate::skipped(
                "quarry_kernels::bf16::tests::a_column_range_lands_at_the_start_of_its_output",
                "AVX-512 BF16",
            );
            return;
        }
        let weights = Bf16Weights::pack(&w, k, n);
        let bias = padded_bias(&matrix(n, 3));
        let mut whole = vec![0.0; m * n];
        weights.multiply(&x, 0..4, &bias, &mut whole, n);
        // Panels 1 and 2: columns 32 to 95, in a buffer 64 wide.
        let mut part = vec![0.0; m * 64];
        weights.multiply(&x, 1..3, &bias, &mut part, 64);
        for r in 0..m {
            assert_eq!(part[r * 64..(r + 1) * 64], whole[r * n + 32..r * n + 96]);
        }
        let packed = Bf16Weights::from_packed(k, n, weights.packed().to_vec()).unwrap();
        let mut again = vec![0.0; m * n];
        packed.multiply(&x, 0..4, &bias, &mut again, n);
        assert_eq!(again, whole);
        assert!(Bf16Weights::from_packed(k, n + 40, weights.packed().to_vec()).is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Rows, depths and columns that are not multiples of the tiles.
        #[test]
        fn matches_the_reference_on_odd_shapes(
            m in 1usize..40, k in 1usize..70, n in 1usize..80, seed in 0u64..1000,
        ) {
            check(m, k, n, seed);
        }
    }
}
