//! `x · W + b` with `W` quantised to int8 per output column, `x` to uint8 per row, exact `i32`
//! sums, rescaled to `f32`. Every form makes the same sums (AVX-512 VNNI's and AVX-VNNI's
//! `vpdpbusd`, AVX2's `vpmaddubsw` and `vpmaddwd`, NEON's `sdot`, portable integers) and
//! rescales them by the same operations: their results are the same to the bit.

use std::cell::RefCell;
use std::ops::Range;

use crate::{Int8Isa, MICRO_KERNEL_BLOCKS, MR, NR, blocks, check_product, packing};

thread_local! {
    /// Each thread's quantised input rows, kept from call to call.
    static ROWS: RefCell<QuantizedRows> = const { RefCell::new(QuantizedRows::new()) };
}

/// A linear layer's weights in int8, packed for [`Int8Weights::multiply`].
#[derive(Debug, Clone)]
pub struct Int8Weights {
    k: usize,
    n: usize,
    /// `n.div_ceil(NR)` panels of `k.div_ceil(4)` steps; a lane holds four depths' weights.
    panels: Vec<[u32; NR]>,
    /// Each column's scale ([`quantize_column`]), padded with zeros to whole panels.
    scales: Vec<[f32; NR]>,
    /// Each column's sum of quantised weights, padded with zeros to whole panels.
    sums: Vec<[i32; NR]>,
}

/// The scale of a column of `weights`: the largest sum of magnitudes of a pair of depths
/// (`2i`, `2i + 1`) over 127 (1 for a column of zeros). Every weight over it rounds into
/// `[-127, 127]`, and a pair's quantised magnitudes sum to 128 at most (127 before rounding,
/// half a unit each after), so that a uint8 row's products with a pair sum to within ±255 ·
/// 128 and fit 16 bits: AVX2's `vpmaddubsw` cannot saturate. The bound costs resolution
/// against a scale of the largest weight over 127 (a column's scale is about 1.4 times as
/// large on all-MiniLM-L6-v2), and all forms share it, so that they make the same sums.
fn quantize_column(weights: impl Iterator<Item = f32>) -> f32 {
    let magnitudes: Vec<f32> = weights.map(f32::abs).collect();
    let largest = magnitudes
        .chunks(2)
        .map(|pair| pair.iter().sum::<f32>())
        .fold(0.0f32, f32::max);
    if largest > 0.0 { largest / 127.0 } else { 1.0 }
}

impl Int8Weights {
    /// `weight` (`k × n`, row-major: inputs by outputs) quantised and packed.
    pub fn pack(weight: &[f32], k: usize, n: usize) -> Self {
        assert_eq!(weight.len(), k * n, "a {k} × {n} weight");
        let panel_count = n.div_ceil(NR);
        let mut scales = vec![[0.0; NR]; panel_count];
        let mut sums = vec![[0; NR]; panel_count];
        for column in 0..n {
            let weights = (0..k).map(|row| weight[row * n + column]);
            let scale = quantize_column(weights.clone());
            scales.as_flattened_mut()[column] = scale;
            sums.as_flattened_mut()[column] = weights.map(|w| i32::from(quantize(w, scale))).sum();
        }
        let flat_scales = scales.as_flattened();
        let row = |i: usize| &weight[i * n..(i + 1) * n];
        let panels = packing::panels::<4>(row, k, n, |w, column| {
            u32::from(quantize(w, flat_scales[column]) as u8)
        });
        Self {
            k,
            n,
            panels,
            scales,
            sums,
        }
    }

    /// Weights packed before, from [`Int8Weights::packed`]; `None` where a part is not
    /// [`Int8Weights::packed_lens`] long.
    pub fn from_packed(
        k: usize,
        n: usize,
        panels: Vec<u32>,
        scales: Vec<f32>,
        sums: Vec<i32>,
    ) -> Option<Self> {
        let (panels_len, columns) = Self::packed_lens(k, n);
        if panels.len() != panels_len || scales.len() != columns || sums.len() != columns {
            return None;
        }
        Some(Self {
            k,
            n,
            panels: panels.as_chunks::<NR>().0.to_vec(),
            scales: scales.as_chunks::<NR>().0.to_vec(),
            sums: sums.as_chunks::<NR>().0.to_vec(),
        })
    }

    /// The packed panels, the columns' scales and their sums of quantised weights (both
    /// padded to whole panels), as [`Int8Weights::from_packed`] takes them back.
    pub fn packed(&self) -> (&[u32], &[f32], &[i32]) {
        (
            self.panels.as_flattened(),
            self.scales.as_flattened(),
            self.sums.as_flattened(),
        )
    }

    /// How many 32-bit lanes the panels of a `k × n` layer take, and how many padded columns
    /// its scales and sums have.
    pub fn packed_lens(k: usize, n: usize) -> (usize, usize) {
        (n.div_ceil(NR) * k.div_ceil(4) * NR, n.div_ceil(NR) * NR)
    }

    /// Panels of [`NR`] output columns.
    pub fn panel_count(&self) -> usize {
        self.n.div_ceil(NR)
    }

    /// `x · W + b` for the output columns of `panels` (a range of panel indices), for `x` of
    /// `m × k` (row-major): row `r`'s values go to `out[r · ldc..]`, the first column of the
    /// range first. `bias` is padded to whole panels. Each row of `x` is quantised once a
    /// call. Runs on the calling thread.
    ///
    /// Where the CPU has no int8 instructions ([`crate::int8_supported`] is false: ARM
    /// without the dot product), the same sums are made in portable integer arithmetic: the
    /// same results to the bit, at a fraction of the speed (an index built in int8 stays
    /// usable on any CPU).
    ///
    /// # Panics
    ///
    /// Where `x` is not whole rows, `panels` lies past the last panel, `bias` is not one per
    /// panel, or `out` is too short.
    pub fn multiply(
        &self,
        x: &[f32],
        panels: Range<usize>,
        bias: &[[f32; NR]],
        out: &mut [f32],
        ldc: usize,
    ) {
        let form = Int8Isa::find().map_or(Int8Form::Portable, Int8Form::Simd);
        self.multiply_with(form, x, panels, bias, out, ldc);
    }

    /// [`Int8Weights::multiply`] in the form `form`.
    fn multiply_with(
        &self,
        form: Int8Form,
        x: &[f32],
        panels: Range<usize>,
        bias: &[[f32; NR]],
        out: &mut [f32],
        ldc: usize,
    ) {
        let Some(rows) = check_product(self.k, self.n, x, &panels, bias, out, ldc) else {
            return;
        };
        let steps = self.k.div_ceil(4);
        ROWS.with_borrow_mut(|quantized| {
            quantized.quantize(form, x, self.k);
            let mut products = match form {
                Int8Form::Simd(isa) => Some(simd::Products::new(isa, steps)),
                Int8Form::Portable => None,
            };
            let blocking = products
                .as_ref()
                .map_or(MICRO_KERNEL_BLOCKS, simd::Products::blocking);
            for at in blocks(rows, self.n, panels, ldc, blocking) {
                let (p, rows) = (at.panel, at.rows);
                let block = Block {
                    a: &quantized.lanes[rows.start * steps..rows.end * steps],
                    row_scales: &quantized.scales[rows.clone()],
                    zero_points: &quantized.zero_points[rows],
                    b: &self.panels[p * steps..(p + 1) * steps],
                    column_scales: &self.scales[p],
                    column_sums: &self.sums[p],
                    bias: &bias[p],
                };
                let out = &mut out[at.out];
                match &mut products {
                    Some(products) => products.block(block, out, ldc),
                    None => portable_block(&block, out, ldc),
                }
            }
        });
    }
}

/// `weight / scale`, rounded to the nearest integer in `[-127, 127]`.
fn quantize(weight: f32, scale: f32) -> i8 {
    (weight / scale).round().clamp(-127.0, 127.0) as i8
}

/// Input rows quantised to uint8, each with its scale and zero point: row value `v` stands
/// for `scale · (v − zero point)`.
#[derive(Debug)]
struct QuantizedRows {
    /// `k.div_ceil(4)` lanes a row, four values each (the first in the lowest byte).
    lanes: Vec<u32>,
    scales: Vec<f32>,
    zero_points: Vec<i32>,
}

impl QuantizedRows {
    const fn new() -> Self {
        Self {
            lanes: Vec::new(),
            scales: Vec::new(),
            zero_points: Vec::new(),
        }
    }

    /// Quantises each row of `x` (rows of `k` values) over its own range, zero included.
    fn quantize(&mut self, form: Int8Form, x: &[f32], k: usize) {
        let steps = k.div_ceil(4);
        let rows = x.len() / k;
        // Every byte a row's values take is written below, and the padding of a depth that
        // is not a multiple of four is zeroed: the buffer need not be cleared.
        self.lanes.resize(rows * steps, 0);
        self.scales.clear();
        self.zero_points.clear();
        for (row, lanes) in x.chunks(k).zip(self.lanes.chunks_mut(steps)) {
            lanes[steps - 1] = 0;
            let bytes = bytemuck::cast_slice_mut(lanes);
            let (scale, zero_point) = match form {
                Int8Form::Simd(isa) => simd::quantize_row(isa, row, bytes),
                Int8Form::Portable => quantize_row(row, bytes),
            };
            self.scales.push(scale);
            self.zero_points.push(zero_point);
        }
    }
}

/// How a row's values map to bytes: `byte = round(value · inverse + zero point)`, clamped to
/// `[0, 255]`, and back: `value ≈ scale · (byte − zero point)`.
#[derive(Debug, Clone, Copy)]
struct RowQuantization {
    scale: f32,
    inverse: f32,
    zero_point: f32,
}

impl RowQuantization {
    /// For a row whose values lie in `[low, high]` (zero included): 255 steps over the range.
    /// A row holding a NaN (`unordered`) or an infinity gets a NaN scale, so that its outputs
    /// are NaN.
    fn new(low: f32, high: f32, unordered: bool) -> Self {
        let range = high - low;
        if unordered || !range.is_finite() {
            return Self {
                scale: f32::NAN,
                inverse: 0.0,
                zero_point: 0.0,
            };
        }
        if range == 0.0 {
            return Self {
                scale: 1.0,
                inverse: 1.0,
                zero_point: 0.0,
            };
        }
        let inverse = 255.0 / range;
        Self {
            scale: range / 255.0,
            inverse,
            zero_point: ((-low * inverse + ROUND) - ROUND).clamp(0.0, 255.0),
        }
    }

    /// `value`'s byte.
    fn byte(self, value: f32) -> u8 {
        ((value * self.inverse + self.zero_point + ROUND) - ROUND).clamp(0.0, 255.0) as u8
    }
}

/// Adding and taking away 1.5 · 2^23 rounds to the nearest integer (ties to even) without a
/// call, for values within ±2^22, as the vector conversion rounds.
const ROUND: f32 = 12_582_912.0;

/// How an int8 product runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Int8Form {
    /// On the CPU's dot-product instructions.
    Simd(Int8Isa),
    /// In portable integer arithmetic ([`portable_block`]), where the CPU has none.
    Portable,
}

/// One block of the output in portable integer arithmetic: each column's products summed
/// in `i32` (wrapping, as `vpdpbusd` and `sdot` add), then `row scale · column scale · (sum
/// − zero point · column sum) + bias` in the kernels' order, so the same results to the bit.
fn portable_block(block: &Block<'_>, out: &mut [f32], ldc: usize) {
    let rows = block.rows_within(out, ldc, MR);
    let steps = block.b.len();
    let columns = (out.len() - (rows - 1) * ldc).min(NR);
    for (r, a) in block.a.chunks(steps).enumerate() {
        for c in 0..columns {
            let sum = a.iter().zip(block.b).fold(0i32, |sum, (&quad, step)| {
                let (bytes, weights) = (quad.to_le_bytes(), step[c].to_le_bytes());
                bytes.iter().zip(weights).fold(sum, |sum, (&byte, weight)| {
                    sum.wrapping_add(i32::from(byte) * i32::from(weight as i8))
                })
            });
            let exact = sum.wrapping_sub(block.zero_points[r].wrapping_mul(block.column_sums[c]));
            let scale = block.row_scales[r] * block.column_scales[c];
            out[r * ldc + c] = exact as f32 * scale + block.bias[c];
        }
    }
}

/// The scalar reference of the kernel's row quantisation: `row` into `bytes` (as long or
/// longer; the rest is left as it is), and its scale and zero point.
fn quantize_row(row: &[f32], bytes: &mut [u8]) -> (f32, i32) {
    let (low, high) = row.iter().fold((0.0f32, 0.0f32), |(low, high), &v| {
        (low.min(v), high.max(v))
    });
    let quantization = RowQuantization::new(low, high, row.iter().any(|v| v.is_nan()));
    for (byte, &v) in bytes.iter_mut().zip(row) {
        *byte = quantization.byte(v);
    }
    (quantization.scale, quantization.zero_point as i32)
}

/// What one micro-kernel call reads: the rows' lanes and their quantisation, the panel's lanes
/// and its columns' scales, sums and biases.
struct Block<'a> {
    a: &'a [u32],
    row_scales: &'a [f32],
    zero_points: &'a [i32],
    b: &'a [[u32; NR]],
    column_scales: &'a [f32; NR],
    column_sums: &'a [i32; NR],
    bias: &'a [f32; NR],
}

impl Block<'_> {
    /// The block's rows, checked: 1 to `most` of `b.len()` lanes each, with their scales and
    /// zero points, and room in `out` (row stride `ldc`) for them. Every form checks this
    /// before it reads the block.
    fn rows_within(&self, out: &[f32], ldc: usize, most: usize) -> usize {
        let rows = self.row_scales.len();
        let steps = self.b.len();
        assert!(
            (1..=most).contains(&rows)
                && self.a.len() == rows * steps
                && self.zero_points.len() == rows,
            "1 to {most} rows of {steps} lanes, with their scales and zero points"
        );
        assert!(out.len() > (rows - 1) * ldc, "room for {rows} rows");
        rows
    }
}

/// Walks `block` (1 to `MR` rows by a panel) in sub-blocks of at most `ROWS` rows (six at
/// most) by half a panel, for the forms with half AVX-512's registers (AVX2's two, NEON's
/// two): `kernel(part, first column, width, out)` gets the sub-block's rows, the panel's
/// column it starts at, how many of its 16 columns exist, and `out` from its first value (row
/// stride `ldc`).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
fn for_each_half_block<const ROWS: usize>(
    block: &Block<'_>,
    out: &mut [f32],
    ldc: usize,
    mut kernel: impl FnMut(&Block<'_>, usize, usize, &mut [f32]),
) {
    let rows = block.row_scales.len();
    let steps = block.b.len();
    let columns = (out.len() - (rows - 1) * ldc).min(NR);
    for first in (0..rows).step_by(ROWS) {
        let count = ROWS.min(rows - first);
        let part = Block {
            a: &block.a[first * steps..(first + count) * steps],
            row_scales: &block.row_scales[first..first + count],
            zero_points: &block.zero_points[first..first + count],
            ..*block
        };
        for half in (0..columns).step_by(NR / 2) {
            let width = (columns - half).min(NR / 2);
            kernel(&part, half, width, &mut out[first * ldc + half..]);
        }
    }
}

/// A form's block function (`$name`, compiled with `$features`) for the forms with half
/// AVX-512's registers: the block (1 to `MR` rows by a panel) in sub-blocks of at most
/// `$rows` rows (six at most) by half a panel ([`for_each_half_block`]), each by
/// `$kernel::<R>` for its `R` rows.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! half_block {
    ($name:ident, $features:literal, $rows:literal, $kernel:ident) => {
        #[doc = concat!("The block by [`", stringify!($kernel), "`], ", $rows, " rows at a time.")]
        #[target_feature(enable = $features)]
        pub(super) fn $name(block: &Block<'_>, out: &mut [f32], ldc: usize) {
            for_each_half_block::<$rows>(block, out, ldc, |part, first, width, out| {
                match part.row_scales.len() {
                    1 => $kernel::<1>(part, first, width, out, ldc),
                    2 => $kernel::<2>(part, first, width, out, ldc),
                    3 => $kernel::<3>(part, first, width, out, ldc),
                    4 => $kernel::<4>(part, first, width, out, ldc),
                    5 => $kernel::<5>(part, first, width, out, ldc),
                    6 => $kernel::<6>(part, first, width, out, ldc),
                    rows => unreachable!("1 to 6 rows, not {rows}"),
                }
            });
        }
    };
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod amx;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

#[cfg(target_arch = "x86_64")]
mod simd {
    use super::{Block, amx, avx2, avx512};
    use crate::{Int8Isa, Walk};

    /// `row` quantised into `bytes` (as long or longer; the rest is left as it is): its scale
    /// and zero point. The vector forms of the scalar reference, to the bit.
    pub(super) fn quantize_row(isa: Int8Isa, row: &[f32], bytes: &mut [u8]) -> (f32, i32) {
        assert!(bytes.len() >= row.len(), "a byte a value");
        match isa {
            // SAFETY: `Int8Isa::Amx` and `Int8Isa::Avx512Vnni` exist only where AVX-512 F,
            // BW and VNNI were detected, which covers the target features of
            // `avx512::quantize_row`.
            Int8Isa::Amx | Int8Isa::Avx512Vnni => unsafe { avx512::quantize_row(row, bytes) },
            // SAFETY: `Int8Isa::AvxVnni` and `Int8Isa::Avx2` exist only where AVX2 and FMA
            // were detected, the target features of `avx2::quantize_row`.
            Int8Isa::AvxVnni | Int8Isa::Avx2 => unsafe { avx2::quantize_row(row, bytes) },
        }
    }

    /// One product's blocks in one set of instructions, and what they keep from block to
    /// block (AMX's configured tiles).
    pub(super) struct Products {
        isa: Int8Isa,
        /// AMX's tiles, where the depth is in whole tiles; other depths take AVX-512 VNNI's
        /// form.
        tiles: Option<amx::Tiles>,
    }

    impl Products {
        /// The blocks of a product of `steps` steps (four depths each) in `isa`.
        pub(super) fn new(isa: Int8Isa, steps: usize) -> Self {
            let whole_tiles = steps.is_multiple_of(amx::STEPS);
            let tiles = (isa == Int8Isa::Amx && whole_tiles).then(amx::Tiles::new);
            Self { isa, tiles }
        }

        /// The most rows a block takes and the order of the blocks: AMX's tiles' ([`amx::ROWS`],
        /// block of rows by block of rows) or the micro-kernels' ([`crate::MR`], panel by panel).
        pub(super) fn blocking(&self) -> (usize, Walk) {
            if self.tiles.is_some() {
                (amx::ROWS, Walk::Rows)
            } else {
                crate::MICRO_KERNEL_BLOCKS
            }
        }

        /// One block of the output, the block's rows (1 to [`Products::blocking`]'s, of
        /// `b.len()` lanes each) by its panel, for the columns of `out`'s last row (row
        /// stride `ldc`).
        pub(super) fn block(&mut self, block: Block<'_>, out: &mut [f32], ldc: usize) {
            let rows = block.rows_within(out, ldc, self.blocking().0);
            if let Some(tiles) = &mut self.tiles {
                // SAFETY: tiles exist only for `Int8Isa::Amx`, found only where AVX-512 F,
                // BW and VNNI were detected, which covers the target features of
                // `Tiles::block`.
                return unsafe { tiles.block(&block, out, ldc, rows) };
            }
            match self.isa {
                // SAFETY: `Int8Isa::Amx` and `Int8Isa::Avx512Vnni` exist only where AVX-512
                // F, BW and VNNI were detected, which is all the target features of
                // `avx512::block` ask for.
                Int8Isa::Amx | Int8Isa::Avx512Vnni => unsafe {
                    avx512::block(&block, out, ldc, rows)
                },
                // SAFETY: `Int8Isa::AvxVnni` exists only where AVX2, FMA and AVX-VNNI were
                // detected, which is all the target features of `avx2::vnni_block` ask for.
                Int8Isa::AvxVnni => unsafe { avx2::vnni_block(&block, out, ldc) },
                // SAFETY: `Int8Isa::Avx2` exists only where AVX2 and FMA were detected, which
                // is all the target features of `avx2::madd_block` ask for.
                Int8Isa::Avx2 => unsafe { avx2::madd_block(&block, out, ldc) },
            }
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod neon;

#[cfg(target_arch = "aarch64")]
mod simd {
    use super::{Block, neon};
    use crate::{Int8Isa, Walk};

    /// `row` quantised into `bytes` (as long or longer; the rest is left as it is): its scale
    /// and zero point. The vector form of the scalar reference, to the bit.
    pub(super) fn quantize_row(isa: Int8Isa, row: &[f32], bytes: &mut [u8]) -> (f32, i32) {
        match isa {
            // SAFETY: both forms exist only where NEON was detected, the target feature of
            // `neon::quantize_row`.
            Int8Isa::NeonI8mm | Int8Isa::NeonDot => unsafe { neon::quantize_row(row, bytes) },
        }
    }

    /// One product's blocks in one set of instructions.
    pub(super) struct Products {
        isa: Int8Isa,
    }

    impl Products {
        /// The blocks of a product in `isa`.
        pub(super) fn new(isa: Int8Isa, _steps: usize) -> Self {
            Self { isa }
        }

        /// The most rows a block takes and the order of the blocks.
        pub(super) fn blocking(&self) -> (usize, Walk) {
            crate::MICRO_KERNEL_BLOCKS
        }

        /// One block of the output, the block's rows (1 to [`crate::MR`], of `b.len()` lanes
        /// each) by its panel, for the columns of `out`'s last row (row stride `ldc`).
        pub(super) fn block(&mut self, block: Block<'_>, out: &mut [f32], ldc: usize) {
            block.rows_within(out, ldc, crate::MR);
            match self.isa {
                // SAFETY: `Int8Isa::NeonI8mm` exists only where NEON and the int8 matrix
                // multiply were detected, which is all `neon::mmla_block` asks for.
                Int8Isa::NeonI8mm => unsafe { neon::mmla_block(&block, out, ldc) },
                // SAFETY: `Int8Isa::NeonDot` exists only where NEON and the dot-product
                // instructions were detected, which is all `neon::dot_block` asks for.
                Int8Isa::NeonDot => unsafe { neon::dot_block(&block, out, ldc) },
            }
        }
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod simd {
    /// No instructions to run a product in (`Int8Isa` has no value here).
    pub(super) struct Products(crate::Int8Isa);

    impl Products {
        pub(super) fn new(isa: crate::Int8Isa, _steps: usize) -> Self {
            match isa {}
        }

        pub(super) fn blocking(&self) -> (usize, crate::Walk) {
            match self.0 {}
        }

        pub(super) fn block(&mut self, _: super::Block<'_>, _: &mut [f32], _: usize) {
            match self.0 {}
        }
    }

    pub(super) fn quantize_row(isa: crate::Int8Isa, _: &[f32], _: &mut [u8]) -> (f32, i32) {
        match isa {}
    }
}

#[cfg(test)]
mod tests;
