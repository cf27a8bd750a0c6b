//! A single-precision GEMM for the model's linear layers on the CPU: `x · Wᵀ + b` with `W`
//! packed once, when the model loads, into panels of [`NR`] output columns.
//!
//! Burn's `flex` multiplies through the `gemm` crate, which reached a third of MKL's speed on
//! MiniLM's shapes (see the crate docs). Here the weights are constant, so they are packed
//! ahead of time; each call packs its input rows in blocks of [`MR`] and runs an AVX-512
//! micro-kernel that keeps an `MR × NR` block of the output in 28 registers, over rayon's
//! threads by blocks of rows. The SIMD is pulp's safe AVX-512 API ([`V4`]); without AVX-512
//! (detected at run time) [`PackedLinear::new`] returns `None` and the model keeps Burn's
//! matmul.

use std::sync::OnceLock;

use pulp::x86::V4;
use pulp::{cast, f32x16};
use rayon::prelude::*;

use crate::prepared::Deferred;

/// Which copy of a layer's weights a product reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// The `f32` weights: what documents are embedded with, and every product by default.
    Full,
    /// Half-precision copies of the weights (IEEE `f16`, about three decimal digits), loaded
    /// with prepared weights or made on first use, and multiplied in `f32`: half the bytes
    /// to stream, and streaming the weights is what a query's few rows wait on. The ablation
    /// in `bench-suite/README.md` shows what it does to relevance.
    Half,
}

/// Rows of the output block a micro-kernel call computes.
pub const MR: usize = 14;
/// Columns of a weight panel: two 16-lane vectors.
pub const NR: usize = 32;
/// Rows of the input packed at a time by one task: the packed block and a weight panel stay
/// in the core's L2 cache while every panel passes over them.
const MC: usize = MR * 8;

thread_local! {
    /// Each thread's packed input rows, kept between calls: a fresh buffer of this size is
    /// mapped and faulted in by the kernel every time.
    static PACKED: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A linear layer's weights, packed for [`PackedLinear::forward`].
#[derive(Debug, Clone)]
pub struct PackedLinear {
    /// The AVX-512 instructions, detected when packing.
    simd: V4,
    /// Input width.
    k: usize,
    /// Output width.
    n: usize,
    /// `ceil(n / NR)` panels, each `k × NR`, row-major; columns past `n` are zero. Read from
    /// `stored` when first needed, for a layer loaded from prepared weights.
    panels: OnceLock<Vec<f32>>,
    /// Where `panels` waits in the prepared weights' file.
    stored: Option<Deferred>,
    /// `panels` in IEEE half precision (the bits of each `f16`), made the first time a
    /// [`Precision::Half`] product runs, or loaded with prepared weights; `None` inside when
    /// a weight lies past `f16`'s range, and the `f32` panels serve.
    half_panels: OnceLock<Option<Vec<u16>>>,
    /// `n` biases, padded with zeros to whole panels.
    bias: Vec<f32>,
}

impl PackedLinear {
    /// Packs `weight` (`k × n`, row-major: input by output, Burn's layout) and `bias` (`n`),
    /// or `None` where the CPU lacks AVX-512.
    pub fn new(weight: &[f32], bias: Option<&[f32]>, k: usize, n: usize) -> Option<Self> {
        Some(Self::with_simd(V4::try_new()?, weight, bias, k, n))
    }

    /// [`PackedLinear::new`] with AVX-512 detected already.
    pub fn with_simd(simd: V4, weight: &[f32], bias: Option<&[f32]>, k: usize, n: usize) -> Self {
        assert_eq!(weight.len(), k * n, "a k × n weight");
        let panel_count = n.div_ceil(NR);
        let mut panels = vec![0.0; panel_count * k * NR];
        for (p, panel) in panels.chunks_mut(k * NR).enumerate() {
            for (row, out) in panel.chunks_mut(NR).enumerate() {
                let columns = (p * NR)..((p + 1) * NR).min(n);
                out[..columns.len()]
                    .copy_from_slice(&weight[row * n + columns.start..row * n + columns.end]);
            }
        }
        let mut padded_bias = vec![0.0; panel_count * NR];
        if let Some(bias) = bias {
            padded_bias[..n].copy_from_slice(bias);
        }
        Self {
            simd,
            k,
            n,
            panels: OnceLock::from(panels),
            stored: None,
            half_panels: OnceLock::new(),
            bias: padded_bias,
        }
    }

    /// A layer packed before, from its [`PackedLinear::packed`] parts in prepared weights:
    /// the `f32` panels left in the file (read when a full-precision product first needs
    /// them), the `f16` panels and the biases in memory. `None` where the CPU lacks AVX-512
    /// or a part is not [`PackedLinear::packed_lengths`] long.
    pub(crate) fn from_prepared(
        k: usize,
        n: usize,
        panels: Deferred,
        half_panels: Vec<u16>,
        bias: Vec<f32>,
    ) -> Option<Self> {
        let (panels_len, bias_len) = Self::packed_lengths(k, n);
        if panels.length != panels_len || half_panels.len() != panels_len || bias.len() != bias_len
        {
            return None;
        }
        Some(Self {
            simd: V4::try_new()?,
            k,
            n,
            panels: OnceLock::new(),
            stored: Some(panels),
            half_panels: OnceLock::from(Some(half_panels)),
            bias,
        })
    }

    /// The packed weight panels in `f32` and in `f16` (`None` where a weight does not fit
    /// `f16`), and the padded biases, as [`PackedLinear::from_prepared`] takes them back.
    pub(crate) fn packed(&self) -> (&[f32], Option<&[u16]>, &[f32]) {
        (self.full_panels(), self.half_panels(), &self.bias)
    }

    /// How long the panels and the biases of a packed `k × n` layer are.
    pub fn packed_lengths(k: usize, n: usize) -> (usize, usize) {
        let panel_count = n.div_ceil(NR);
        (panel_count * k * NR, panel_count * NR)
    }

    /// Input width.
    pub fn inputs(&self) -> usize {
        self.k
    }

    /// Output width.
    pub fn outputs(&self) -> usize {
        self.n
    }

    /// `x · W + b` for `x` of `m × k` (row-major): `m × n`, row-major; blocks of rows on
    /// rayon's threads.
    pub fn forward(&self, x: &[f32]) -> Vec<f32> {
        let mut out = Vec::new();
        self.forward_into(x, &mut out, Precision::Full);
        out
    }

    /// [`PackedLinear::forward`] into `out`, resized to fit (a buffer reused from call to
    /// call is neither zeroed nor mapped again), with the weights of `precision`.
    pub fn forward_into(&self, x: &[f32], out: &mut Vec<f32>, precision: Precision) {
        assert_eq!(x.len() % self.k, 0, "rows of k inputs");
        out.resize(x.len() / self.k * self.n, 0.0);
        match precision {
            Precision::Half if let Some(half) = self.half_panels() => {
                self.forward_panels(half.as_chunks::<NR>().0, x, out)
            }
            _ => self.forward_panels(self.full_panels().as_chunks::<NR>().0, x, out),
        }
    }

    /// The panels in `f32`, read on the first call where they wait in a file.
    fn full_panels(&self) -> &[f32] {
        self.panels.get_or_init(|| {
            self.stored
                .as_ref()
                .expect("panels in memory or in the prepared weights' file")
                .read()
                .expect("the prepared weights' file, open since the model loaded, reads")
        })
    }

    /// The panels in `f16`, made on the first call; `None` where a weight does not fit.
    fn half_panels(&self) -> Option<&[u16]> {
        self.half_panels
            .get_or_init(|| to_half(self.simd, self.full_panels()))
            .as_deref()
    }

    fn forward_panels<T: PanelElement>(&self, panels: &[[T; NR]], x: &[f32], out: &mut [f32]) {
        let rows = x.len() / self.k;
        let threads = rayon::current_num_threads().max(1);
        if rows <= MR && threads > 1 {
            self.few_rows_into(panels, x, out, threads);
            return;
        }
        // At most MC rows a task, and at least one task a thread while rows last.
        let tasks = rows.div_ceil(MC).max(threads.min(rows.div_ceil(MR)));
        let per_task = rows.div_ceil(tasks.max(1)).div_ceil(MR).max(1) * MR;
        out.par_chunks_mut(per_task * self.n)
            .zip(x.par_chunks(per_task * self.k))
            .for_each(|(out, x)| self.block(panels, x, out));
    }

    /// `x · W + b` for at most [`MR`] rows (a query's): one sliver, so the threads share out
    /// the weight panels instead of the rows. Each streams its share of the weights, which
    /// is what a product this thin waits on; every value is computed as the row-split
    /// product computes it, so the result is the same to the bit.
    fn few_rows_into<T: PanelElement>(
        &self,
        panels: &[[T; NR]],
        x: &[f32],
        out: &mut [f32],
        threads: usize,
    ) {
        let (k, n) = (self.k, self.n);
        let rows = x.len() / k;
        let mut sliver = vec![0.0; k * MR];
        for r in 0..rows {
            for (kk, &value) in x[r * k..(r + 1) * k].iter().enumerate() {
                sliver[kk * MR + r] = value;
            }
        }
        let sliver = sliver.as_chunks::<MR>().0;
        let biases = self.bias.as_chunks::<NR>().0;
        let per_task = n.div_ceil(NR).div_ceil(threads).max(1);
        let parts: Vec<(usize, usize, Vec<f32>)> = (0..n.div_ceil(NR))
            .step_by(per_task)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|first| {
                let last = (first + per_task).min(n.div_ceil(NR));
                let (start, end) = (first * NR, (last * NR).min(n));
                let width = end - start;
                let mut part = vec![0.0; rows * width];
                for p in first..last {
                    kernel_for_rows(
                        self.simd,
                        sliver,
                        &panels[p * k..(p + 1) * k],
                        &biases[p],
                        &mut part[(p - first) * NR..],
                        width,
                        rows,
                        NR.min(n - p * NR),
                    );
                }
                (start, width, part)
            })
            .collect();
        for (start, width, part) in parts {
            for (row, values) in part.chunks(width).enumerate() {
                out[row * n + start..row * n + start + width].copy_from_slice(values);
            }
        }
    }

    /// [`PackedLinear::forward`] on the calling thread: for callers that are parallel already.
    pub fn forward_serial(&self, x: &[f32]) -> Vec<f32> {
        let mut out = self.output_for(x);
        let panels = self.full_panels().as_chunks::<NR>().0;
        out.chunks_mut(MC * self.n)
            .zip(x.chunks(MC * self.k))
            .for_each(|(out, x)| self.block(panels, x, out));
        out
    }

    fn output_for(&self, x: &[f32]) -> Vec<f32> {
        assert_eq!(x.len() % self.k, 0, "rows of k inputs");
        vec![0.0; x.len() / self.k * self.n]
    }

    /// One task's rows: packs them in `MR`-row slivers, then runs every weight panel over
    /// every sliver.
    fn block<T: PanelElement>(&self, panels: &[[T; NR]], x: &[f32], out: &mut [f32]) {
        PACKED.with_borrow_mut(|packed| self.block_with(panels, x, out, packed));
    }

    fn block_with<T: PanelElement>(
        &self,
        panels: &[[T; NR]],
        x: &[f32],
        out: &mut [f32],
        packed: &mut Vec<f32>,
    ) {
        let (k, n) = (self.k, self.n);
        let rows = x.len() / k;
        let slivers = rows.div_ceil(MR);
        // Rows past the last are zero; the rest is overwritten.
        packed.clear();
        packed.resize(slivers * k * MR, 0.0);
        for (s, sliver) in packed.chunks_mut(k * MR).enumerate() {
            for r in 0..MR.min(rows - s * MR) {
                let row = &x[(s * MR + r) * k..(s * MR + r + 1) * k];
                for (kk, &value) in row.iter().enumerate() {
                    sliver[kk * MR + r] = value;
                }
            }
        }
        let slivers = packed.as_chunks::<MR>().0;
        let biases = self.bias.as_chunks::<NR>().0;
        for (p, panel) in panels.chunks(k).enumerate() {
            let columns = NR.min(n - p * NR);
            for (s, sliver) in slivers.chunks(k).enumerate() {
                let valid = MR.min(rows - s * MR);
                kernel_for_rows(
                    self.simd,
                    sliver,
                    panel,
                    &biases[p],
                    &mut out[s * MR * n + p * NR..],
                    n,
                    valid,
                    columns,
                );
            }
        }
    }
}

/// [`kernel`] with as many accumulator rows as `rows` needs: a query of 8 tokens then does 8
/// rows of multiply-adds, not [`MR`]'s 14. Each output value is the same sequence of
/// multiply-adds whichever instance computes it, so the result does not change.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn kernel_for_rows<T: PanelElement>(
    simd: V4,
    a: &[[f32; MR]],
    b: &[[T; NR]],
    bias: &[f32; NR],
    out: &mut [f32],
    ldc: usize,
    rows: usize,
    columns: usize,
) {
    macro_rules! by_rows {
        ($($r:literal)*) => {
            match rows {
                $($r => kernel::<T, $r>(simd, a, b, bias, out, ldc, columns),)*
                _ => unreachable!("1 to {MR} rows, not {rows}"),
            }
        };
    }
    by_rows!(1 2 3 4 5 6 7 8 9 10 11 12 13 14)
}

/// `out[r][c] = bias[c] + Σₖ a[k][r] · b[k][c]` for the `R × columns` block at the start of
/// `out` (row stride `ldc`): `a` holds `k` steps of [`MR`] values, of which the first `R`
/// count, `b` `k` steps of [`NR`].
#[inline(always)]
fn kernel<T: PanelElement, const R: usize>(
    simd: V4,
    a: &[[f32; MR]],
    b: &[[T; NR]],
    bias: &[f32; NR],
    out: &mut [f32],
    ldc: usize,
    columns: usize,
) {
    simd.vectorize(
        #[inline(always)]
        || {
            let zero = simd.splat_f32x16(0.0);
            let mut acc = [[zero; 2]; R];
            for (a_step, b_step) in a.iter().zip(b) {
                let (b0, b1) = T::load(simd, b_step);
                for (lanes, &value) in acc.iter_mut().zip(a_step) {
                    let value = simd.splat_f32x16(value);
                    lanes[0] = simd.mul_add_f32x16(value, b0, lanes[0]);
                    lanes[1] = simd.mul_add_f32x16(value, b1, lanes[1]);
                }
            }
            let (bias0, bias1) = f32::load(simd, bias);
            for (r, lanes) in acc.iter().enumerate() {
                let low: [f32; 16] = cast(simd.add_f32x16(lanes[0], bias0));
                let high: [f32; 16] = cast(simd.add_f32x16(lanes[1], bias1));
                let row = &mut out[r * ldc..r * ldc + columns];
                let (row_low, row_high) = row.split_at_mut(columns.min(16));
                row_low.copy_from_slice(&low[..row_low.len()]);
                row_high.copy_from_slice(&high[..row_high.len()]);
            }
        },
    )
}

/// What a weight panel holds, as the micro-kernel reads it.
trait PanelElement: Copy + Sync {
    /// One step of a panel, [`NR`] weights, as two vectors of 16 `f32` lanes.
    fn load(simd: V4, step: &[Self; NR]) -> (f32x16, f32x16);
}

impl PanelElement for f32 {
    #[inline(always)]
    fn load(_: V4, step: &[f32; NR]) -> (f32x16, f32x16) {
        let (low, high) = step.as_chunks::<16>().0.split_at(1);
        (cast(low[0]), cast(high[0]))
    }
}

/// The bits of an IEEE `f16`, widened to `f32` by the CPU as they load.
impl PanelElement for u16 {
    #[inline(always)]
    fn load(simd: V4, step: &[u16; NR]) -> (f32x16, f32x16) {
        let (low, high) = step.as_chunks::<16>().0.split_at(1);
        let widen = |lanes: [u16; 16]| cast(simd.avx512f._mm512_cvtph_ps(cast(lanes)));
        (widen(low[0]), widen(high[0]))
    }
}

/// `panels` rounded to the nearest `f16` (the bits of each), or `None` when a weight lies
/// past `f16`'s largest finite value and would become infinite. In one pass, on rayon's
/// threads: a load from safetensors pays this once, before it saves the prepared weights
/// that later processes read the `f16` panels from.
fn to_half(simd: V4, panels: &[f32]) -> Option<Vec<u16>> {
    const F16_MAX: f32 = 65504.0;
    // Panels are whole steps of NR lanes.
    let sixteens = panels.as_chunks::<16>().0;
    let mut half = vec![[0u16; 16]; sixteens.len()];
    let in_range = half
        .par_chunks_mut(4096)
        .zip(sixteens.par_chunks(4096))
        .all(|(half, sixteens)| {
            simd.vectorize(
                #[inline(always)]
                || {
                    let mut largest = simd.splat_f32x16(0.0);
                    for (half, &lanes) in half.iter_mut().zip(sixteens) {
                        let lanes: f32x16 = cast(lanes);
                        largest = simd.max_f32x16(largest, simd.abs_f32x16(lanes));
                        // Round to nearest, ties to even; no exceptions raised.
                        *half = cast(simd.avx512f._mm512_cvtps_ph::<0x08>(cast(lanes)));
                    }
                    pulp::Simd::reduce_max_f32s(simd, largest) <= F16_MAX
                },
            )
        });
    in_range.then(|| half.into_flattened())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic matrix of values in [-1, 1).
    fn matrix(len: usize, seed: u64) -> Vec<f32> {
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

    #[test]
    fn matches_a_plain_product_on_ragged_shapes() {
        if V4::try_new().is_none() {
            assert!(PackedLinear::new(&[0.0; 4], None, 2, 2).is_none());
            return;
        }
        // Rows past a sliver and a task's block, columns past a panel, odd depths.
        for (m, k, n) in [(1, 3, 5), (13, 17, 33), (100, 64, 96), (200, 384, 40)] {
            let x = matrix(m * k, 1);
            let w = matrix(k * n, 2);
            let bias = matrix(n, 3);
            let packed = PackedLinear::new(&w, Some(&bias), k, n).unwrap();
            let out = packed.forward(&x);
            for i in 0..m {
                for j in 0..n {
                    let expected: f64 = f64::from(bias[j])
                        + (0..k)
                            .map(|t| f64::from(x[i * k + t]) * f64::from(w[t * n + j]))
                            .sum::<f64>();
                    let found = f64::from(out[i * n + j]);
                    assert!(
                        (found - expected).abs() < 1e-4 * (k as f64).sqrt(),
                        "{m}×{k}×{n} at ({i}, {j}): {found} against {expected}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_row_comes_out_the_same_whatever_rows_share_its_sliver() {
        if V4::try_new().is_none() {
            return;
        }
        let (k, n) = (64, 40);
        let x = matrix(MR * k, 7);
        let packed = PackedLinear::new(&matrix(k * n, 8), Some(&matrix(n, 9)), k, n).unwrap();
        let full = packed.forward_serial(&x);
        for m in 1..MR {
            let part = packed.forward_serial(&x[..m * k]);
            assert_eq!(part, full[..m * n], "{m} rows");
        }
    }

    #[test]
    fn half_precision_weights_come_close_and_out_of_range_ones_fall_back() {
        if V4::try_new().is_none() {
            return;
        }
        let (k, n) = (384, 100);
        let mut w = matrix(k * n, 11);
        let bias = matrix(n, 12);
        let product = |w: &[f32], x: &[f32], precision| {
            let packed = PackedLinear::new(w, Some(&bias), k, n).unwrap();
            let mut out = Vec::new();
            packed.forward_into(x, &mut out, precision);
            out
        };
        // A query's few rows, and rows past a sliver.
        for m in [3, 20] {
            let x = matrix(m * k, 10);
            let (full, half) = (
                product(&w, &x, Precision::Full),
                product(&w, &x, Precision::Half),
            );
            assert_ne!(full, half, "{m} rows: the f16 copy was not used");
            for (a, b) in full.iter().zip(&half) {
                // f16 keeps 11 significant bits: each of 384 terms off by 2^-12 at most.
                assert!((a - b).abs() < 384.0 / 4096.0, "{m} rows: {a} against {b}");
            }
        }
        w[5] = 1e6;
        let x = matrix(3 * k, 10);
        assert_eq!(
            product(&w, &x, Precision::Full),
            product(&w, &x, Precision::Half),
            "a weight past f16's range keeps the f32 panels"
        );
    }

    #[test]
    fn a_few_rows_split_by_columns_match_the_row_split_product_to_the_bit() {
        if V4::try_new().is_none() {
            return;
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for (m, k, n) in [(1, 3, 5), (5, 384, 1152), (14, 64, 200), (2, 17, 33)] {
            let x = matrix(m * k, 4);
            let packed = PackedLinear::new(&matrix(k * n, 5), Some(&matrix(n, 6)), k, n).unwrap();
            let split = pool.install(|| packed.forward(&x));
            assert_eq!(split, packed.forward_serial(&x), "{m}×{k}×{n}");
        }
    }
}
