//! Reduced-precision matrix products for quarry's encoder: `x · W + b` with the weights `W`
//! packed once in bf16 ([`Bf16Weights`], AVX-512 BF16's `vdpbf16ps`) or in int8
//! ([`Int8Weights`]: AMX's `tdpbusd`, the `vpdpbusd` of AVX-512 VNNI or of AVX-VNNI, AVX2's
//! `vpmaddubsw`, NEON's `sdot`), accumulated in `f32` or `i32` and returned in `f32`; and
//! which instruction-set [`Level`] the process runs at.
//!
//! ```
//! use quarry_kernels::{Int8Weights, NR};
//!
//! // A 3 × 2 layer (inputs by outputs, row-major) and two rows of input.
//! let (k, n) = (3, 2);
//! let weight = [0.5, -1.0, 0.25, 2.0, -0.75, 0.0];
//! let bias = [[0.0; NR]];
//! let x = [1.0, 2.0, 3.0, -1.0, 0.0, 1.0];
//! let weights = Int8Weights::pack(&weight, k, n);
//! // The product needs AVX2 or NEON's dot product; without, a caller keeps its f32 product.
//! if quarry_kernels::int8_supported() {
//!     let mut out = [0.0f32; 4];
//!     weights.multiply(&x, 0..weights.panel_count(), &bias, &mut out, n);
//!     // Row 0, column 0: 1·0.5 + 2·0.25 + 3·(-0.75) = -1.25, within int8's rounding.
//!     assert!((out[0] - -1.25).abs() < 0.05, "{out:?}");
//! }
//! ```
//!
//! # Why a crate of its own
//!
//! The rest of the workspace forbids `unsafe`. These kernels need it twice: to call a function
//! compiled for an instruction set extension (after detecting it at run time) and to load
//! vectors from memory. It stays here, behind a safe API:
//! - a product detects its instructions (a cached check) before it calls a `#[target_feature]`
//!   function, and panics without them: the callers check [`bf16_supported`] or
//!   [`int8_supported`] first;
//! - every slice's length is checked before a kernel reads it (with `debug_assertions`, each
//!   kernel also checks its own reads);
//! - every `unsafe` block carries a `// SAFETY:` comment (clippy's
//!   `undocumented_unsafe_blocks` denies one without), one operation a block;
//! - every kernel is tested against a scalar reference over shapes that are not multiples of
//!   the tiles (property tests in each module).
//!
//! # Layout
//!
//! The weights are cut into panels of [`NR`] output columns (columns past `n` are zero), packed
//! once; each product converts its input rows to the same lanes (row-major, nothing
//! transposed), and a micro-kernel keeps an `MR × NR` block of the output in 28 registers,
//! broadcasting one lane of each of its [`MR`] rows a step. A step of the depth is two values
//! for bf16 (one 32-bit lane holds a pair) and four for int8; depths that do not divide are
//! padded with zeros. AMX's form takes blocks of 32 rows by a panel in a 2 × 2 of tiles (64
//! depths a product), block of rows by block of rows.
//!
//! # Precision
//!
//! - bf16: weights and inputs rounded to bfloat16 (8 significant bits, round to nearest even),
//!   products summed in `f32`.
//! - int8: each output column's weights scaled to `[-127, 127]` (symmetric, one scale a column,
//!   kept in `f32`), so that a pair of depths sums to 128 at most (which keeps AVX2's 16-bit
//!   pair sums exact; [`INT8_SCHEME`] names this quantisation); each input row quantised when packed, asymmetrically to `[0, 255]` with
//!   its own scale and zero point (so a row of GELU outputs, mostly positive, uses the whole
//!   range); exact `i32` sums, then `out = row scale · column scale · (sum − zero point ·
//!   column sum) + bias`.

#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

mod bf16;
mod int8;
mod level;
mod packing;
mod simd;

pub use bf16::Bf16Weights;
pub use int8::Int8Weights;
pub use level::{Level, level, skipped};
/// pulp, whose types [`HostSimd`] holds, for [`on_host_simd!`]'s callers.
pub use pulp;
pub use simd::HostSimd;

/// The revision of the int8 quantisation (how weights and rows become integers): vectors
/// made under one differ slightly from another's, so an index records it with the model.
/// Revision 2 bounds each pair of depths' magnitudes (revision 1 bounded each weight).
pub const INT8_SCHEME: u32 = 2;

/// Rows of the output block a micro-kernel call computes.
pub const MR: usize = 14;
/// Output columns of a weight panel: two 16-lane vectors.
pub const NR: usize = 32;

/// Proof that this CPU has AVX-512 F and BF16: made only where they were detected.
#[derive(Debug, Clone, Copy)]
struct Bf16Isa(());

impl Bf16Isa {
    /// The proof, or a panic that says what [`Bf16Weights::multiply`]'s callers must check.
    fn detect() -> Self {
        assert!(
            bf16_supported(),
            "bf16 products need AVX-512 BF16 (see bf16_supported)"
        );
        Bf16Isa(())
    }
}

/// Proof that this CPU has the instructions of an int8 product: made only where they were
/// detected, at the [`level`] this process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Int8Isa {
    /// AMX's tiles and int8 products (`tdpbusd`, Intel since Sapphire Rapids) with AVX-512
    /// F, BW and VNNI: the tiles for depths in whole tiles (64), `Avx512Vnni`'s form for the
    /// rest.
    #[cfg(target_arch = "x86_64")]
    Amx,
    /// AVX-512 F, BW and VNNI: `vpdpbusd` on 512-bit registers.
    #[cfg(target_arch = "x86_64")]
    Avx512Vnni,
    /// AVX2, FMA and AVX-VNNI: `vpdpbusd` on 256-bit registers.
    #[cfg(target_arch = "x86_64")]
    AvxVnni,
    /// AVX2 and FMA alone: `vpmaddubsw` then `vpmaddwd` by ones (the same sums, in three
    /// instructions where `vpdpbusd` takes one).
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// NEON with the int8 matrix multiply (i8mm): `usmmla`.
    #[cfg(target_arch = "aarch64")]
    NeonI8mm,
    /// NEON with the dot-product instructions: `sdot`.
    #[cfg(target_arch = "aarch64")]
    NeonDot,
}

impl Int8Isa {
    /// The instructions this process runs int8 products with, if any: found once (every
    /// product asks), then cached, as [`level`] is.
    fn find() -> Option<Self> {
        static FOUND: std::sync::OnceLock<Option<Int8Isa>> = std::sync::OnceLock::new();
        *FOUND.get_or_init(|| Int8Isa::at(level()))
    }

    /// The instructions int8 products run with at `level`, where this CPU has them: the
    /// fastest of [`Int8Isa::all_at`].
    fn at(level: Level) -> Option<Self> {
        Int8Isa::all_at(level).into_iter().next()
    }

    /// Every set of instructions an int8 product can run with at `level` on this CPU, fastest
    /// first: AMX's tiles, the widest dot product the level allows, then AVX2's `vpmaddubsw`;
    /// on ARM the matrix multiply, then the dot product.
    fn all_at(level: Level) -> Vec<Self> {
        #[cfg(target_arch = "x86_64")]
        let found = {
            use std::arch::is_x86_feature_detected;
            let (avx512, avx_vnni) = (level == Level::Avx512, level == Level::AvxVnni);
            let avx512_vnni = avx512 && is_x86_feature_detected!("avx512vnni");
            [
                (Int8Isa::Amx, avx512_vnni && int8::amx::enabled()),
                (Int8Isa::Avx512Vnni, avx512_vnni),
                (
                    Int8Isa::AvxVnni,
                    (avx512 || avx_vnni) && Level::AvxVnni.detected(),
                ),
                (
                    Int8Isa::Avx2,
                    (avx512 || avx_vnni || level == Level::Avx2) && Level::Avx2.detected(),
                ),
            ]
        };
        #[cfg(target_arch = "aarch64")]
        let found = {
            use std::arch::is_aarch64_feature_detected;
            let neon = level == Level::Neon;
            [
                (
                    Int8Isa::NeonI8mm,
                    neon && is_aarch64_feature_detected!("i8mm"),
                ),
                (
                    Int8Isa::NeonDot,
                    neon && is_aarch64_feature_detected!("dotprod"),
                ),
            ]
        };
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let found: [(Int8Isa, bool); 0] = [];
        found
            .into_iter()
            .filter_map(|(isa, present)| present.then_some(isa))
            .collect()
    }

    /// Its name in `quarry model info` and reports.
    fn name(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            Int8Isa::Amx => "AMX tiles (tdpbusd)",
            #[cfg(target_arch = "x86_64")]
            Int8Isa::Avx512Vnni => "AVX-512 VNNI (vpdpbusd)",
            #[cfg(target_arch = "x86_64")]
            Int8Isa::AvxVnni => "AVX-VNNI (vpdpbusd)",
            #[cfg(target_arch = "x86_64")]
            Int8Isa::Avx2 => "AVX2 (vpmaddubsw)",
            #[cfg(target_arch = "aarch64")]
            Int8Isa::NeonI8mm => "NEON i8mm (usmmla)",
            #[cfg(target_arch = "aarch64")]
            Int8Isa::NeonDot => "NEON dot product (sdot)",
        }
    }

    /// The int8 instructions of every level this process may run (up to the cap), each
    /// once: what the tests run each product on.
    #[cfg(test)]
    fn available() -> Vec<Self> {
        let mut available = Vec::new();
        for isa in Level::available().into_iter().flat_map(Int8Isa::all_at) {
            if !available.contains(&isa) {
                available.push(isa);
            }
        }
        available
    }
}

/// Whether this process runs [`Bf16Weights`]' products: the [`level`] is AVX-512 and the CPU
/// has its BF16 instructions. Detected once, then cached.
pub fn bf16_supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        level() == Level::Avx512 && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this process runs [`Int8Weights`]' products on SIMD instructions: at every x86
/// [`level`] from AVX2 up (on AVX-512 VNNI's or AVX-VNNI's dot product where the level has
/// it, else on AVX2's `vpmaddubsw`, about twice `f32`'s speed on a Zen 3), or at the NEON
/// level with the dot-product instructions (every Apple M-series, Graviton 2 and later; with
/// the int8 matrix multiply, Apple M2 and later and Graviton 3, on that).
/// All sum the same products exactly, so their results are the same to the bit. Detected
/// once, then cached.
pub fn int8_supported() -> bool {
    Int8Isa::find().is_some()
}

/// The instructions this process runs [`Int8Weights`]' products on, as `quarry model info`
/// names them (`AMX tiles (tdpbusd)`, `AVX2 (vpmaddubsw)`); `None` where
/// [`int8_supported`] is false.
pub fn int8_instructions() -> Option<&'static str> {
    Int8Isa::find().map(Int8Isa::name)
}

/// Checks the arguments every product takes, and returns the input's rows, or `None` where
/// there is nothing to compute (no rows, or no panels).
fn check_product(
    k: usize,
    n: usize,
    x: &[f32],
    panels: &std::ops::Range<usize>,
    bias: &[[f32; NR]],
    out: &[f32],
    ldc: usize,
) -> Option<usize> {
    let panel_count = n.div_ceil(NR);
    assert!(k > 0 && x.len().is_multiple_of(k), "rows of {k} inputs");
    assert!(
        panels.start <= panels.end && panels.end <= panel_count,
        "panels {panels:?} of {panel_count}"
    );
    assert_eq!(bias.len(), panel_count, "a padded bias a panel");
    let rows = x.len() / k;
    let width = (panels.end * NR).min(n) - (panels.start * NR).min(n);
    assert!(
        width <= ldc || rows <= 1,
        "a row of {width} values in a stride of {ldc}"
    );
    if rows > 0 && width > 0 {
        assert!(
            out.len() >= (rows - 1) * ldc + width,
            "{rows} rows of {width} values at a stride of {ldc} in {}",
            out.len()
        );
    }
    (rows > 0 && width > 0).then_some(rows)
}

/// Writes `low` and `high` (16 values each) to the start of `row`, as many as it holds (at
/// most 32), with masked stores: no copy through a buffer, nothing written past `row`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn store_row(row: &mut [f32], low: std::arch::x86_64::__m512, high: std::arch::x86_64::__m512) {
    use std::arch::x86_64::_mm512_mask_storeu_ps;
    let columns = row.len().min(NR);
    let mask = |count: usize| ((1u32 << count.min(16)) - 1) as u16;
    // SAFETY: the mask enables the first min(columns, 16) lanes, all within `row`; a masked
    // lane is neither written nor faulted on. The store needs no alignment.
    unsafe { _mm512_mask_storeu_ps(row.as_mut_ptr(), mask(columns), low) };
    if columns > 16 {
        // SAFETY: as above, for the lanes from the 17th on, within `row[16..]`.
        unsafe { _mm512_mask_storeu_ps(row[16..].as_mut_ptr(), mask(columns - 16), high) };
    }
}

/// The order [`blocks`] hands out blocks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// Panel by panel, each over every block of rows: a panel stays in cache while the rows
    /// pass over it (the micro-kernels).
    Panels,
    /// Block of rows by block of rows, each over every panel: the blocks' heights change once
    /// a product, at its last rows (AMX's tiles, whose configuration is for one height).
    Rows,
}

/// How the micro-kernels take a product: blocks of [`MR`] rows, panel by panel.
const MICRO_KERNEL_BLOCKS: (usize, Walk) = (MR, Walk::Panels);

/// Where one block of a product lies: a panel, a first row, a count of rows, and the part of
/// the output (row stride `ldc`) it covers, ending with its last row's last column.
struct BlockAt {
    panel: usize,
    rows: std::ops::Range<usize>,
    out: std::ops::Range<usize>,
}

/// Cuts the product of `rows` input rows by the panels `panels` (of a layer of `n` outputs,
/// written at a row stride of `ldc`) into blocks of at most `block_rows` rows by one panel,
/// in the order `walk`.
fn blocks(
    rows: usize,
    n: usize,
    panels: std::ops::Range<usize>,
    ldc: usize,
    (block_rows, walk): (usize, Walk),
) -> impl Iterator<Item = BlockAt> {
    let first = panels.start;
    let row_starts = (0..rows).step_by(block_rows);
    let order: Box<dyn Iterator<Item = (usize, usize)>> = match walk {
        Walk::Panels => Box::new(panels.flat_map(move |p| row_starts.clone().map(move |r| (p, r)))),
        Walk::Rows => Box::new(row_starts.flat_map(move |r| panels.clone().map(move |p| (p, r)))),
    };
    order.map(move |(panel, row)| {
        let columns = NR.min(n - panel * NR);
        let count = block_rows.min(rows - row);
        let offset = row * ldc + (panel - first) * NR;
        BlockAt {
            panel,
            rows: row..row + count,
            out: offset..offset + (count - 1) * ldc + columns,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::NR;

    /// A deterministic matrix of values in [-1, 1).
    pub(crate) fn matrix(len: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

    /// `bias` padded with zeros to whole panels.
    pub(crate) fn padded_bias(bias: &[f32]) -> Vec<[f32; NR]> {
        let mut padded = vec![[0.0; NR]; bias.len().div_ceil(NR)];
        padded.as_flattened_mut()[..bias.len()].copy_from_slice(bias);
        padded
    }
}
