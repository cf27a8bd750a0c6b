//! A single-precision GEMM for the model's linear layers on the CPU: `x · Wᵀ + b` with `W`
//! packed once, when the model loads, into panels of [`NR`] output columns.
//!
//! Burn's `flex` multiplies through the `gemm` crate, which reached a third of MKL's speed on
//! MiniLM's shapes (see the crate docs). Here the weights are constant, so they are packed
//! ahead of time; each call packs its input rows in blocks of [`MR`] and runs a micro-kernel
//! that keeps a block of the output in registers (on AVX-512, `MR × NR` in 28 of them), over
//! rayon's threads by blocks of rows. The micro-kernel is written once over pulp's safe SIMD
//! API, for every level of [`HostSimd`] (AVX-512, AVX2, NEON); at the scalar level
//! [`PackedLinear::new`] returns `None` and the model keeps Burn's matmul.

use std::ops::Range;
use std::sync::OnceLock;

use quarry_kernels::{Bf16Weights, Int8Weights};
use rayon::prelude::*;

use crate::prepared::Deferred;
use quarry_kernels::{HostSimd, on_host_simd};

/// Which copy of a layer's weights a product reads, and so which kernel multiplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// The `f32` weights, multiplied in `f32`: [`crate::Precision::F32`]'s documents.
    F32,
    /// Half-precision copies of the weights (IEEE `f16`, about three decimal digits), widened
    /// to `f32` as they load: [`crate::Precision::F32`]'s queries. Half the bytes to stream,
    /// and streaming the weights is what a query's few rows wait on; the ablation in
    /// `bench-suite/README.md` shows what it does to relevance.
    F16Weights,
    /// bfloat16 weights and inputs ([`quarry_kernels::Bf16Weights`]).
    Bf16,
    /// int8 weights and uint8 inputs ([`quarry_kernels::Int8Weights`]).
    Int8,
}

/// Rows of the output block a micro-kernel call computes.
pub const MR: usize = quarry_kernels::MR;
/// Columns of a weight panel: two 16-lane vectors.
pub const NR: usize = quarry_kernels::NR;
/// Rows of the input packed at a time by one task: the packed block and a weight panel stay
/// in the core's L2 cache while every panel passes over them.
const MC: usize = MR * 8;

thread_local! {
    /// Each thread's packed input rows, kept between calls: a fresh buffer of this size is
    /// mapped and faulted in by the kernel every time.
    static PACKED: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A linear layer's weights, packed for [`PackedLinear::forward`], in each number format a
/// [`Kernel`] reads: the `f32` panels, and copies made from them the first time a kernel
/// asks (or read from prepared weights).
#[derive(Debug, Clone)]
pub struct PackedLinear {
    /// The SIMD level its products run at, detected when packing.
    simd: HostSimd,
    /// Input width.
    k: usize,
    /// Output width.
    n: usize,
    /// `ceil(n / NR)` panels, each `k × NR`, row-major; columns past `n` are zero.
    panels: OnceLock<Vec<f32>>,
    /// `panels` in IEEE half precision (the bits of each `f16`); `None` inside when a weight
    /// lies past `f16`'s range, and the `f32` panels serve.
    half_panels: OnceLock<Option<Vec<u16>>>,
    /// The weights in bfloat16.
    bf16: OnceLock<Bf16Weights>,
    /// The weights in int8.
    int8: OnceLock<Int8Weights>,
    /// Where each copy waits in the prepared weights' file, for a layer loaded from them.
    stored: Option<StoredCopies>,
    /// `n` biases, padded with zeros to whole panels.
    bias: Vec<[f32; NR]>,
}

/// A packed layer's copies in the prepared weights' file, read when a product first needs
/// one.
#[derive(Debug, Clone)]
pub(crate) struct StoredCopies {
    /// The `f32` panels.
    pub f32: Deferred,
    /// The `f16` panels.
    pub f16: Deferred,
    /// [`Bf16Weights::packed`].
    pub bf16: Deferred,
    /// [`Int8Weights::packed`]'s panels, scales and sums.
    pub int8: [Deferred; 3],
}

/// A packed layer as prepared weights keep it ([`PackedLinear::prepared`]).
pub(crate) struct PreparedCopies<'a> {
    pub f32: &'a [f32],
    pub f16: &'a [u16],
    pub bf16: &'a [u32],
    pub int8: (&'a [u32], &'a [f32], &'a [i32]),
    pub bias: &'a [f32],
}

impl PackedLinear {
    /// Packs `weight` (`k × n`, row-major: input by output, Burn's layout) and `bias` (`n`),
    /// or `None` at the scalar level ([`HostSimd::detect`]).
    pub fn new(weight: &[f32], bias: Option<&[f32]>, k: usize, n: usize) -> Option<Self> {
        Some(Self::with_simd(HostSimd::detect()?, weight, bias, k, n))
    }

    /// [`PackedLinear::new`] at the level `simd`.
    pub fn with_simd(
        simd: HostSimd,
        weight: &[f32],
        bias: Option<&[f32]>,
        k: usize,
        n: usize,
    ) -> Self {
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
        let mut padded_bias = vec![[0.0; NR]; panel_count];
        if let Some(bias) = bias {
            padded_bias.as_flattened_mut()[..n].copy_from_slice(bias);
        }
        Self {
            simd,
            k,
            n,
            panels: OnceLock::from(panels),
            half_panels: OnceLock::new(),
            bf16: OnceLock::new(),
            int8: OnceLock::new(),
            stored: None,
            bias: padded_bias,
        }
    }

    /// A layer packed before, from its copies in prepared weights (each read when a product
    /// first needs it) and its biases. `None` at the scalar level or where a part is not as
    /// long as [`PackedLinear::prepared`] wrote it.
    pub(crate) fn from_prepared(
        k: usize,
        n: usize,
        stored: StoredCopies,
        bias: Vec<f32>,
    ) -> Option<Self> {
        let [f32_len, f16_len, bf16_len, int8_len, columns] = Self::prepared_lengths(k, n);
        let int8_lens = [int8_len, columns, columns];
        let fits = stored.f32.length == f32_len
            && stored.f16.length == f16_len
            && stored.bf16.length == bf16_len
            && stored
                .int8
                .iter()
                .zip(int8_lens)
                .all(|(d, len)| d.length == len)
            && bias.len() == columns;
        fits.then_some(Self {
            simd: HostSimd::detect()?,
            k,
            n,
            panels: OnceLock::new(),
            half_panels: OnceLock::new(),
            bf16: OnceLock::new(),
            int8: OnceLock::new(),
            stored: Some(stored),
            bias: bias.as_chunks::<NR>().0.to_vec(),
        })
    }

    /// Every copy of the layer and its biases, as [`PackedLinear::from_prepared`] takes them
    /// back; `None` where a weight does not fit `f16`.
    pub(crate) fn prepared(&self) -> Option<PreparedCopies<'_>> {
        Some(PreparedCopies {
            f32: self.full_panels(),
            f16: self.half_panels()?,
            bf16: self.bf16().packed(),
            int8: self.int8().packed(),
            bias: self.bias.as_flattened(),
        })
    }

    /// How long a packed `k × n` layer's parts are, in values: the `f32` panels, the `f16`
    /// panels, the bfloat16 lanes, the int8 lanes, and the padded columns (biases, and the
    /// int8 scales and sums).
    pub(crate) fn prepared_lengths(k: usize, n: usize) -> [usize; 5] {
        let panels = n.div_ceil(NR) * k * NR;
        let (int8, columns) = Int8Weights::packed_lens(k, n);
        [panels, panels, Bf16Weights::packed_len(k, n), int8, columns]
    }

    /// The SIMD level its products run at.
    pub fn simd(&self) -> HostSimd {
        self.simd
    }

    /// Output width.
    pub fn outputs(&self) -> usize {
        self.n
    }

    /// How long the product of the rows `x` is: `n` values a row.
    pub fn output_len(&self, x: &[f32]) -> usize {
        x.len() / self.k * self.n
    }

    /// `x · W + b` for `x` of `m × k` (row-major): `m × n`, row-major; blocks of rows on
    /// rayon's threads.
    pub fn forward(&self, x: &[f32]) -> Vec<f32> {
        let mut out = vec![0.0; self.output_len(x)];
        self.forward_into(x, &mut out, Kernel::F32);
        out
    }

    /// [`PackedLinear::forward`] into `out`, exactly as long as the product (a buffer reused
    /// from call to call is neither zeroed nor mapped again), by `kernel`. A
    /// reduced-precision kernel needs its instructions ([`crate::Precision::supported`]).
    pub fn forward_into(&self, x: &[f32], out: &mut [f32], kernel: Kernel) {
        self.check_shapes(x, out);
        self.in_parallel(x, out, |x, range, out, ldc| {
            self.multiply_by(kernel, x, range, out, ldc)
        });
    }

    /// [`PackedLinear::forward_into`] on the calling thread, for callers that are parallel
    /// already: each output value is computed as there.
    pub fn forward_serial_into(&self, x: &[f32], out: &mut [f32], kernel: Kernel) {
        self.check_shapes(x, out);
        let all = 0..self.n.div_ceil(NR);
        out.chunks_mut(MC * self.n)
            .zip(x.chunks(MC * self.k))
            .for_each(|(out, x)| self.multiply_by(kernel, x, all.clone(), out, self.n));
    }

    fn check_shapes(&self, x: &[f32], out: &[f32]) {
        assert_eq!(x.len() % self.k, 0, "rows of k inputs");
        assert_eq!(out.len(), self.output_len(x), "an output for every row");
    }

    /// `x · W + b` on the calling thread by `kernel`'s copy of the weights, for the columns
    /// of the panels `range`, row `r` at `out[r · ldc..]`.
    fn multiply_by(
        &self,
        kernel: Kernel,
        x: &[f32],
        range: Range<usize>,
        out: &mut [f32],
        ldc: usize,
    ) {
        let bias = &self.bias[..];
        match kernel {
            Kernel::F16Weights if let Some(panels) = self.half_panels_to_widen() => {
                self.multiply(panels, x, range, out, ldc)
            }
            Kernel::F32 | Kernel::F16Weights => {
                let panels = Panels::F32(self.full_panels().as_chunks::<NR>().0);
                self.multiply(panels, x, range, out, ldc)
            }
            Kernel::Bf16 => self.bf16().multiply(x, range, bias, out, ldc),
            Kernel::Int8 => self.int8().multiply(x, range, bias, out, ldc),
        }
    }

    /// The panels in `f32`, read on the first call where they wait in a file.
    fn full_panels(&self) -> &[f32] {
        self.panels
            .get_or_init(|| self.stored().f32.read().expect(STORED_READS))
    }

    /// The panels in `f16`, made or read on the first call; `None` where a weight does not
    /// fit.
    fn half_panels(&self) -> Option<&[u16]> {
        self.half_panels
            .get_or_init(|| match &self.stored {
                Some(stored) => Some(stored.f16.read().expect(STORED_READS)),
                None => to_half(self.full_panels()),
            })
            .as_deref()
    }

    /// The `f16` panels where this level widens them as it loads (AVX-512); `None` where it
    /// does not, or a weight does not fit `f16`, and the `f32` panels serve.
    fn half_panels_to_widen(&self) -> Option<Panels<'_>> {
        match self.simd {
            #[cfg(target_arch = "x86_64")]
            HostSimd::Avx512(simd) => Some(Panels::F16(simd, self.half_panels()?.as_chunks().0)),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The bfloat16 weights, made or read on the first call.
    fn bf16(&self) -> &Bf16Weights {
        self.bf16.get_or_init(|| match &self.stored {
            Some(stored) => {
                let lanes = stored.bf16.read().expect(STORED_READS);
                Bf16Weights::from_packed(self.k, self.n, lanes).expect("lengths checked at load")
            }
            None => Bf16Weights::pack(&self.weight(), self.k, self.n),
        })
    }

    /// The int8 weights, made or read on the first call.
    fn int8(&self) -> &Int8Weights {
        self.int8.get_or_init(|| match &self.stored {
            Some(stored) => {
                let [panels, scales, sums] = &stored.int8;
                Int8Weights::from_packed(
                    self.k,
                    self.n,
                    panels.read().expect(STORED_READS),
                    scales.read().expect(STORED_READS),
                    sums.read().expect(STORED_READS),
                )
                .expect("lengths checked at load")
            }
            None => Int8Weights::pack(&self.weight(), self.k, self.n),
        })
    }

    fn stored(&self) -> &StoredCopies {
        self.stored
            .as_ref()
            .expect("panels in memory or in the prepared weights' file")
    }

    /// The weights back from the `f32` panels: `k × n`, row-major.
    fn weight(&self) -> Vec<f32> {
        let (k, n) = (self.k, self.n);
        let mut weight = vec![0.0; k * n];
        for (p, panel) in self.full_panels().chunks(k * NR).enumerate() {
            let columns = NR.min(n - p * NR);
            for (row, values) in panel.chunks(NR).enumerate() {
                weight[row * n + p * NR..row * n + p * NR + columns]
                    .copy_from_slice(&values[..columns]);
            }
        }
        weight
    }

    /// Runs `multiply(x rows, panel range, out, ldc)` over the whole product on rayon's
    /// threads: by blocks of rows, or, for at most [`MR`] rows (a query's), by ranges of
    /// panels, so that the threads share out the weights instead, which is what a product
    /// this thin waits on. Each output value is computed the same way either way.
    fn in_parallel(
        &self,
        x: &[f32],
        out: &mut [f32],
        multiply: impl Fn(&[f32], Range<usize>, &mut [f32], usize) + Sync,
    ) {
        let (k, n) = (self.k, self.n);
        let rows = x.len() / k;
        let panel_count = n.div_ceil(NR);
        let threads = rayon::current_num_threads().max(1);
        if rows <= MR && threads > 1 {
            let per_task = panel_count.div_ceil(threads).max(1);
            let parts: Vec<(usize, usize, Vec<f32>)> = (0..panel_count)
                .step_by(per_task)
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(|first| {
                    let last = (first + per_task).min(panel_count);
                    let (start, end) = (first * NR, (last * NR).min(n));
                    let width = end - start;
                    let mut part = vec![0.0; rows * width];
                    multiply(x, first..last, &mut part, width);
                    (start, width, part)
                })
                .collect();
            for (start, width, part) in parts {
                for (row, values) in part.chunks(width).enumerate() {
                    out[row * n + start..row * n + start + width].copy_from_slice(values);
                }
            }
            return;
        }
        // At most MC rows a task, and at least one task a thread while rows last.
        let tasks = rows.div_ceil(MC).max(threads.min(rows.div_ceil(MR)));
        let per_task = rows.div_ceil(tasks.max(1)).div_ceil(MR).max(1) * MR;
        out.par_chunks_mut(per_task * n)
            .zip(x.par_chunks(per_task * k))
            .for_each(|(out, x)| multiply(x, 0..panel_count, out, n));
    }

    /// `x · W + b` on the calling thread for the columns of the panels `range`, row `r` at
    /// `out[r · ldc..]`: packs the rows in `MR`-row slivers, then runs each weight panel over
    /// every sliver.
    fn multiply(
        &self,
        panels: Panels<'_>,
        x: &[f32],
        range: Range<usize>,
        out: &mut [f32],
        ldc: usize,
    ) {
        PACKED.with_borrow_mut(|packed| {
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
            let product = Product {
                slivers,
                rows,
                k,
                n,
                bias: &self.bias,
                range,
                ldc,
            };
            match panels {
                Panels::F32(panels) => {
                    on_host_simd!(self.simd, simd => product.run(simd, panels, out))
                }
                #[cfg(target_arch = "x86_64")]
                Panels::F16(simd, panels) => product.run(simd, panels, out),
            }
        });
    }
}

/// The weight panels a product reads.
#[derive(Clone, Copy)]
enum Panels<'a> {
    /// In `f32`.
    F32(&'a [[f32; NR]]),
    /// In `f16`, widened as they load by AVX-512's `vcvtph2ps`.
    #[cfg(target_arch = "x86_64")]
    F16(pulp::x86::V4, &'a [[u16; NR]]),
}

/// A product's input rows, packed, and where its output goes.
struct Product<'a> {
    /// The input rows in slivers of [`MR`] (`k` steps each), the last padded with zeros.
    slivers: &'a [[f32; MR]],
    /// Input rows.
    rows: usize,
    k: usize,
    n: usize,
    /// Every panel's biases.
    bias: &'a [[f32; NR]],
    /// The panels to multiply by.
    range: Range<usize>,
    /// The output's row stride.
    ldc: usize,
}

impl Product<'_> {
    /// Runs each weight panel of the range over every sliver, at the level `simd`, row `r`
    /// of the product at `out[r · ldc..]`.
    #[inline(always)]
    fn run<S: Lanes, T: PanelElement<S>>(&self, simd: S, panels: &[[T; NR]], out: &mut [f32]) {
        let Self { k, n, ldc, .. } = *self;
        for p in self.range.clone() {
            let columns = NR.min(n - p * NR);
            let panel = &panels[p * k..(p + 1) * k];
            for (s, sliver) in self.slivers.chunks(k).enumerate() {
                let rows = MR.min(self.rows - s * MR);
                let out = &mut out[s * MR * ldc + (p - self.range.start) * NR..];
                // Blocks of the level's rows by two vectors of columns.
                let width = 2 * S::F32_LANES;
                for first_row in (0..rows).step_by(S::ROWS) {
                    for first_column in (0..columns).step_by(width) {
                        let block = Block {
                            a: sliver,
                            first_row,
                            b: panel,
                            first_column,
                            bias: &self.bias[p],
                            ldc,
                            columns: width.min(columns - first_column),
                        };
                        let out = &mut out[first_row * ldc + first_column..];
                        block.run(simd, out, S::ROWS.min(rows - first_row));
                    }
                }
            }
        }
    }
}

/// What a failed read of the prepared weights says: the file is open from the load on, so
/// only a failing disk gets here.
const STORED_READS: &str = "the prepared weights' file, open since the model loaded, reads";

/// What the micro-kernels (this GEMM's and attention's) need to know of a level beyond pulp's
/// `Simd`.
pub(crate) trait Lanes: pulp::Simd {
    /// Rows of the output block: `ROWS × 2` accumulators, two vectors of weights and a
    /// broadcast input fit the level's registers.
    const ROWS: usize;
}

#[cfg(target_arch = "x86_64")]
impl Lanes for pulp::x86::V4 {
    const ROWS: usize = 14;
}

#[cfg(target_arch = "x86_64")]
impl Lanes for pulp::x86::V3 {
    const ROWS: usize = 6;
}

#[cfg(target_arch = "aarch64")]
impl Lanes for pulp::aarch64::Neon {
    const ROWS: usize = 14;
}

/// One micro-kernel call: the output block of a sliver's rows from `first_row` by two
/// vectors of a panel's columns from `first_column` (`columns` of them count).
struct Block<'a, T> {
    /// A sliver: `k` steps of [`MR`] rows.
    a: &'a [[f32; MR]],
    first_row: usize,
    /// A panel: `k` steps of [`NR`] columns.
    b: &'a [[T; NR]],
    first_column: usize,
    /// The panel's biases.
    bias: &'a [f32; NR],
    /// The output's row stride.
    ldc: usize,
    /// Columns of the block that exist (the rest of the panel is padding).
    columns: usize,
}

impl<T> Block<'_, T> {
    /// The block of `rows` rows at the start of `out`, by [`Block::kernel`] with as many
    /// accumulator rows as it needs: a query of 8 tokens then does 8 rows of multiply-adds,
    /// not [`MR`]'s 14. Each output value is the same sequence of multiply-adds whichever
    /// instance computes it, so the result does not change.
    #[inline(always)]
    fn run<S: Lanes>(&self, simd: S, out: &mut [f32], rows: usize)
    where
        T: PanelElement<S>,
    {
        macro_rules! by_rows {
            ($($r:literal)*) => {
                match rows {
                    $($r => self.kernel::<S, $r>(simd, out),)*
                    _ => unreachable!("1 to {MR} rows, not {rows}"),
                }
            };
        }
        by_rows!(1 2 3 4 5 6 7 8 9 10 11 12 13 14)
    }

    /// `out[r][c] = bias[c] + Σₖ a[k][r] · b[k][c]` for the `R × columns` block at the start
    /// of `out` (row stride `ldc`), its accumulators in `2 R` registers.
    #[inline(always)]
    fn kernel<S: Lanes, const R: usize>(&self, simd: S, out: &mut [f32])
    where
        T: PanelElement<S>,
    {
        pulp::Simd::vectorize(
            simd,
            #[inline(always)]
            || {
                let rows = self.first_row..self.first_row + R;
                assert!(rows.end <= MR && self.first_column + 2 * S::F32_LANES <= NR);
                let zero = simd.splat_f32s(0.0);
                let mut acc = [[zero; 2]; R];
                for (a_step, b_step) in self.a.iter().zip(self.b) {
                    let (b0, b1) = T::load(simd, b_step, self.first_column);
                    for (lanes, &value) in acc.iter_mut().zip(&a_step[rows.clone()]) {
                        let value = simd.splat_f32s(value);
                        lanes[0] = simd.mul_add_f32s(value, b0, lanes[0]);
                        lanes[1] = simd.mul_add_f32s(value, b1, lanes[1]);
                    }
                }
                let (bias0, bias1) = f32::load(simd, self.bias, self.first_column);
                for (r, lanes) in acc.iter().enumerate() {
                    let row = &mut out[r * self.ldc..r * self.ldc + self.columns];
                    let (low, high) = row.split_at_mut(self.columns.min(S::F32_LANES));
                    simd.partial_store_f32s(low, simd.add_f32s(lanes[0], bias0));
                    simd.partial_store_f32s(high, simd.add_f32s(lanes[1], bias1));
                }
            },
        )
    }
}

/// What a weight panel holds, as the micro-kernel of the level `S` reads it.
trait PanelElement<S: Lanes>: Copy + Sync {
    /// Two vectors of `f32` lanes from one step of a panel, from `column` on.
    fn load(simd: S, step: &[Self; NR], column: usize) -> (S::f32s, S::f32s);
}

impl<S: Lanes> PanelElement<S> for f32 {
    #[inline(always)]
    fn load(_: S, step: &[f32; NR], column: usize) -> (S::f32s, S::f32s) {
        let vectors = S::as_simd_f32s(&step[column..column + 2 * S::F32_LANES]).0;
        (vectors[0], vectors[1])
    }
}

/// The bits of an IEEE `f16`, widened to `f32` by the CPU as they load (AVX-512's
/// `vcvtph2ps`).
#[cfg(target_arch = "x86_64")]
impl PanelElement<pulp::x86::V4> for u16 {
    #[inline(always)]
    fn load(simd: pulp::x86::V4, step: &[u16; NR], column: usize) -> (pulp::f32x16, pulp::f32x16) {
        let sixteens = step[column..column + 32].as_chunks::<16>().0;
        let widen = |lanes: [u16; 16]| pulp::cast(simd.avx512f._mm512_cvtph_ps(pulp::cast(lanes)));
        (widen(sixteens[0]), widen(sixteens[1]))
    }
}

/// `panels` rounded to the nearest `f16` (the bits of each; ties to even), or `None` when a
/// weight lies past `f16`'s largest finite value and would become infinite. On rayon's
/// threads: a load from safetensors pays this once, before it saves the prepared weights
/// that later processes read the `f16` panels from.
fn to_half(panels: &[f32]) -> Option<Vec<u16>> {
    const F16_MAX: f32 = 65504.0;
    let mut half = vec![0u16; panels.len()];
    let in_range = half
        .par_chunks_mut(1 << 16)
        .zip(panels.par_chunks(1 << 16))
        .all(|(half, panels)| {
            let mut largest = 0.0f32;
            for (half, &value) in half.iter_mut().zip(panels) {
                largest = largest.max(value.abs());
                *half = half::f16::from_f32(value).to_bits();
            }
            largest <= F16_MAX
        });
    in_range.then_some(half)
}

#[cfg(test)]
pub(crate) mod tests;
