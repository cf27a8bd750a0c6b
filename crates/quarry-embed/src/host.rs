//! The encoder on the host: on `flex` at a SIMD level with host kernels (AVX-512, AVX2 or
//! NEON; see [`quarry_kernels::HostSimd`]), the embeddings and every layer run here,
//! on [`PackedLinear`] and the host kernels, rather than in Burn ([`crate::bert::BertModel`]
//! keeps the Burn modules for other backends and CPUs).
//!
//! The word-piece table is the model's largest array (47 MB of all-MiniLM-L6-v2's 90) and a
//! query reads a dozen of its rows: loaded from prepared weights, it stays in the file and
//! its rows are read as texts first use them ([`WordTable::OnDisk`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Mutex;

use rayon::prelude::*;

use crate::attention::attention as host_attention;
use crate::config::BertConfig;
use crate::gemm::{Kernel, MR, PackedLinear, StoredCopies};
use crate::kernels;
use crate::prepared::{Array, Deferred, Slot, Values};

/// The embeddings and the layers on the host.
#[derive(Debug)]
pub(crate) struct HostModel {
    pub embeddings: HostEmbeddings,
    pub layers: Vec<HostLayer>,
}

/// Word, position and token-type tables and their layer norm, row-major `[rows, width]`.
#[derive(Debug)]
pub(crate) struct HostEmbeddings {
    pub words: WordTable,
    pub positions: Vec<f32>,
    pub token_types: Vec<f32>,
    pub norm: HostNorm,
    pub width: usize,
}

/// The word-piece table: in memory, or in the prepared weights' file, read row by row.
#[derive(Debug)]
pub(crate) enum WordTable {
    Loaded(Vec<f32>),
    OnDisk(Mutex<DiskRows>),
}

/// Rows of a table read from a file as they are first asked for, then kept.
#[derive(Debug)]
pub(crate) struct DiskRows {
    table: Deferred,
    /// Rows in the table.
    count: usize,
    rows: HashMap<u32, Box<[f32]>>,
}

/// A layer's weights on the host: the linear layers packed (query, key and value as one
/// product), the layer norms' scales and shifts.
#[derive(Debug)]
pub(crate) struct HostLayer {
    pub query_key_value: PackedLinear,
    pub attention_output: PackedLinear,
    pub attention_norm: HostNorm,
    pub intermediate: PackedLinear,
    pub output: PackedLinear,
    pub output_norm: HostNorm,
}

/// A layer norm's scale and shift on the host.
#[derive(Debug)]
pub(crate) struct HostNorm {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
    pub epsilon: f32,
}

impl HostNorm {
    /// `norm(values + residual)`, in place.
    pub fn apply(&self, values: &mut [f32], residual: &[f32]) {
        kernels::residual_layer_norm(values, residual, &self.gamma, &self.beta, self.epsilon);
    }
}

impl WordTable {
    /// A table of `count` rows of `width` at `deferred` in the prepared weights' file.
    pub fn on_disk(table: Deferred, width: usize) -> Self {
        WordTable::OnDisk(Mutex::new(DiskRows {
            count: table.length / width,
            table,
            rows: HashMap::new(),
        }))
    }

    /// Adds row `id` of the table to each `width`-wide row of `out`, by `ids`.
    fn add_rows(&self, ids: &[u32], width: usize, out: &mut [f32]) {
        let add = |out: &mut [f32], row: &[f32]| out.iter_mut().zip(row).for_each(|(o, r)| *o += r);
        match self {
            WordTable::Loaded(table) => {
                for (out, &id) in out.chunks_mut(width).zip(ids) {
                    let id = id as usize;
                    add(out, &table[id * width..(id + 1) * width]);
                }
            }
            WordTable::OnDisk(rows) => {
                let mut rows = rows.lock().unwrap_or_else(|p| p.into_inner());
                for (out, &id) in out.chunks_mut(width).zip(ids) {
                    add(out, rows.row(id, width));
                }
            }
        }
    }
}

impl DiskRows {
    fn row(&mut self, id: u32, width: usize) -> &[f32] {
        assert!(
            (id as usize) < self.count,
            "token id {id} is outside the model's vocabulary of {}",
            self.count
        );
        let Self { table, rows, .. } = self;
        rows.entry(id).or_insert_with(|| {
            let mut row = vec![0.0f32; width].into_boxed_slice();
            table
                .read_into(id as usize * width, &mut row)
                .expect("the prepared weights' file, open since the model loaded, reads");
            row
        })
    }
}

impl HostEmbeddings {
    /// `norm(word + position + token type)` of `ids` (`[texts, seq]`, row-major), and of
    /// `types` where given (all 0 otherwise): `[texts × seq, width]`.
    fn forward(&self, ids: &[u32], types: Option<&[u32]>, seq: usize) -> Vec<f32> {
        let width = self.width;
        let mut states = vec![0.0f32; ids.len() * width];
        self.words.add_rows(ids, width, &mut states);
        // Burn's order: (word + position) + token type, then the norm.
        let mut kinds = vec![0.0f32; ids.len() * width];
        for (i, (state, kind)) in states
            .chunks_mut(width)
            .zip(kinds.chunks_mut(width))
            .enumerate()
        {
            let position = (i % seq) * width;
            state
                .iter_mut()
                .zip(&self.positions[position..position + width])
                .for_each(|(s, p)| *s += p);
            let kind_row = types.map_or(0, |types| types[i] as usize) * width;
            kind.copy_from_slice(&self.token_types[kind_row..kind_row + width]);
        }
        self.norm.apply(&mut states, &kinds);
        states
    }
}

impl HostModel {
    /// Token states `[texts × seq, width]` for `ids` and `types` (`[texts, seq]`, padded),
    /// each text attending to its first `shape.lengths` tokens; `activate` is the model's
    /// activation, in place.
    pub fn forward(
        &self,
        ids: &[u32],
        types: Option<&[u32]>,
        shape: Shape<'_>,
        activate: impl Fn(&mut Vec<f32>) + Sync,
    ) -> Vec<f32> {
        let mut states = self.embeddings.forward(ids, types, shape.seq);
        let mut buffers = HostBuffers::default();
        for layer in &self.layers {
            layer.forward(&mut states, &mut buffers, &shape, &activate);
        }
        states
    }

    /// How each array of [`HostModel::prepared_arrays`] is laid out for a model of
    /// `config`, and which stay in the file: the word-piece table (rows read as texts use
    /// them) and every copy of the linear layers' weights (each read when a product first
    /// needs it: a process reads those of its precision).
    pub fn prepared_layout(config: &BertConfig) -> Vec<Slot> {
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        let mut slots = vec![
            Slot::deferred::<f32>(config.vocab_size * hidden),
            Slot::F32(config.max_position_embeddings * hidden),
            Slot::F32(config.type_vocab_size * hidden),
            Slot::F32(hidden),
            Slot::F32(hidden),
        ];
        let linear = |slots: &mut Vec<Slot>, k, n| {
            let [f32, f16, bf16, int8, columns] = PackedLinear::prepared_lengths(k, n);
            slots.extend([
                Slot::deferred::<f32>(f32),
                Slot::deferred::<u16>(f16),
                Slot::deferred::<u32>(bf16),
                Slot::deferred::<u32>(int8),
                Slot::deferred::<f32>(columns),
                Slot::deferred::<i32>(columns),
                Slot::F32(columns),
            ]);
        };
        for _ in 0..config.num_hidden_layers {
            linear(&mut slots, hidden, 3 * hidden);
            linear(&mut slots, hidden, hidden);
            slots.extend([Slot::F32(hidden), Slot::F32(hidden)]);
            linear(&mut slots, hidden, inner);
            linear(&mut slots, inner, hidden);
            slots.extend([Slot::F32(hidden), Slot::F32(hidden)]);
        }
        slots
    }

    /// The model as arrays that [`HostModel::from_prepared`] takes back: the word-piece,
    /// position and token-type tables and their norm, then each layer's packed linears (in
    /// `f32`, `f16`, bfloat16 and int8) and norms. `None` when the word table was left on disk
    /// (the model came from them), or a layer's weights do not fit `f16`.
    pub fn prepared_arrays(&self) -> Option<Vec<Values<'_>>> {
        let embeddings = &self.embeddings;
        let WordTable::Loaded(words) = &embeddings.words else {
            return None;
        };
        let mut arrays = vec![
            Values::F32(words),
            Values::F32(&embeddings.positions),
            Values::F32(&embeddings.token_types),
            Values::F32(&embeddings.norm.gamma),
            Values::F32(&embeddings.norm.beta),
        ];
        for layer in &self.layers {
            for (linear, norm) in [
                (&layer.query_key_value, None),
                (&layer.attention_output, Some(&layer.attention_norm)),
                (&layer.intermediate, None),
                (&layer.output, Some(&layer.output_norm)),
            ] {
                let copies = linear.prepared()?;
                let (int8, scales, sums) = copies.int8;
                arrays.extend([
                    Values::F32(copies.f32),
                    Values::F16(copies.f16),
                    Values::U32(copies.bf16),
                    Values::U32(int8),
                    Values::F32(scales),
                    Values::I32(sums),
                    Values::F32(copies.bias),
                ]);
                if let Some(norm) = norm {
                    arrays.extend([Values::F32(&norm.gamma), Values::F32(&norm.beta)]);
                }
            }
        }
        Some(arrays)
    }

    /// A model of `config` from the arrays [`HostModel::prepared_layout`] loaded; `None` at
    /// the scalar level or where the arrays are not of that layout.
    pub fn from_prepared(config: &BertConfig, arrays: Vec<Array>) -> Option<Self> {
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        let epsilon = config.layer_norm_eps as f32;
        let mut arrays = PreparedArrays(arrays.into_iter());
        let words = WordTable::on_disk(arrays.deferred()?, hidden);
        let positions = arrays.values()?;
        let token_types = arrays.values()?;
        let norm = arrays.norm(epsilon)?;
        let layers = (0..config.num_hidden_layers)
            .map(|_| {
                Some(HostLayer {
                    query_key_value: arrays.linear(hidden, 3 * hidden)?,
                    attention_output: arrays.linear(hidden, hidden)?,
                    attention_norm: arrays.norm(epsilon)?,
                    intermediate: arrays.linear(hidden, inner)?,
                    output: arrays.linear(inner, hidden)?,
                    output_norm: arrays.norm(epsilon)?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        arrays.0.next().is_none().then_some(Self {
            embeddings: HostEmbeddings {
                words,
                positions,
                token_types,
                norm,
                width: hidden,
            },
            layers,
        })
    }
}

/// Loaded prepared arrays, taken in [`HostModel::prepared_layout`]'s order.
struct PreparedArrays(std::vec::IntoIter<Array>);

impl PreparedArrays {
    fn values(&mut self) -> Option<Vec<f32>> {
        match self.0.next()? {
            Array::F32(values) => Some(values),
            _ => None,
        }
    }

    fn deferred(&mut self) -> Option<Deferred> {
        match self.0.next()? {
            Array::Deferred(deferred) => Some(deferred),
            _ => None,
        }
    }

    fn norm(&mut self, epsilon: f32) -> Option<HostNorm> {
        Some(HostNorm {
            gamma: self.values()?,
            beta: self.values()?,
            epsilon,
        })
    }

    fn linear(&mut self, k: usize, n: usize) -> Option<PackedLinear> {
        let stored = StoredCopies {
            f32: self.deferred()?,
            f16: self.deferred()?,
            bf16: self.deferred()?,
            int8: [self.deferred()?, self.deferred()?, self.deferred()?],
        };
        PackedLinear::from_prepared(k, n, stored, self.values()?)
    }
}

impl HostLayer {
    /// A BERT layer on the host, `[texts × seq, width]` in place: the linear layers on
    /// [`PackedLinear`], attention by [`host_attention`] over each text's `lengths` tokens,
    /// the residuals and layer norms by [`kernels::residual_layer_norm`]. `buffers` carry
    /// over from layer to layer.
    ///
    /// Everything after attention treats each token on its own. A batch of whole rows
    /// takes it in blocks of [`ROW_BLOCK`] rows, a block a task, each through the attention
    /// output, the feed-forward and both norms in turn: the feed-forward's intermediate
    /// (four times the width) then stays in the core's cache, where the whole batch's (50 MB
    /// at 32 texts of 256 tokens) went out to memory and back three times.
    fn forward(
        &self,
        hidden: &mut [f32],
        buffers: &mut HostBuffers,
        shape: &Shape<'_>,
        activate: &(impl Fn(&mut Vec<f32>) + Sync),
    ) {
        let width = self.attention_output.outputs();
        let Shape {
            lengths,
            seq,
            heads,
            kernel,
        } = *shape;
        let projected = &mut buffers.projected;
        projected.resize(self.query_key_value.output_len(hidden), 0.0);
        self.query_key_value.forward_into(hidden, projected, kernel);
        let context = host_attention(
            self.query_key_value.simd(),
            projected,
            lengths,
            seq,
            heads,
            width / heads,
        );
        let rows = hidden.len() / width;
        if rows < ROW_BLOCK * rayon::current_num_threads() {
            // Too few rows for a block a thread (a query's): each product shares its
            // columns out between the threads instead.
            let parallel = |linear: &PackedLinear, x: &[f32], out: &mut [f32]| {
                linear.forward_into(x, out, kernel)
            };
            return self.after_attention(&context, hidden, &mut buffers.rows, activate, parallel);
        }
        hidden
            .par_chunks_mut(ROW_BLOCK * width)
            .zip(context.par_chunks(ROW_BLOCK * width))
            .for_each(|(hidden, context)| {
                // Taken, not borrowed: while a block's norm or activation waits on its own
                // parallel work, rayon may run another block on this thread, which then
                // takes (or makes) buffers of its own.
                let mut rows = BLOCK_BUFFERS.take();
                let serial = |linear: &PackedLinear, x: &[f32], out: &mut [f32]| {
                    linear.forward_serial_into(x, out, kernel)
                };
                self.after_attention(context, hidden, &mut rows, activate, serial);
                BLOCK_BUFFERS.set(rows);
            });
    }

    /// The attention output, its residual and norm, then the feed-forward block, its
    /// residual and norm, for the rows of `context` and `hidden` (the layer's input, in
    /// place), each linear layer's product by `product`.
    fn after_attention(
        &self,
        context: &[f32],
        hidden: &mut [f32],
        buffers: &mut RowBuffers,
        activate: &impl Fn(&mut Vec<f32>),
        product: impl Fn(&PackedLinear, &[f32], &mut [f32]),
    ) {
        let RowBuffers { attended, expanded } = buffers;
        attended.resize(self.attention_output.output_len(context), 0.0);
        product(&self.attention_output, context, attended);
        self.attention_norm.apply(attended, hidden);
        expanded.resize(self.intermediate.output_len(attended), 0.0);
        product(&self.intermediate, attended, expanded);
        activate(expanded);
        product(&self.output, expanded, hidden);
        self.output_norm.apply(hidden, attended);
    }
}

/// Rows a task takes through a layer after attention ([`HostLayer::forward`]): its
/// intermediate (about 340 KB for MiniLM), the bytes it is quantised to and the products'
/// packed rows fit a core's L2 cache beside a weight panel.
const ROW_BLOCK: usize = 4 * MR;

thread_local! {
    /// Each thread's buffers for its blocks of rows, kept between blocks and layers.
    static BLOCK_BUFFERS: RefCell<RowBuffers> = RefCell::default();
}

/// What every layer of one forward pass shares.
#[derive(Debug, Clone, Copy)]
pub struct Shape<'a> {
    /// Each text's token count: the keys its queries may attend to.
    pub lengths: &'a [usize],
    /// Tokens a text, padding included.
    pub seq: usize,
    /// Attention heads.
    pub heads: usize,
    /// Which copy of the weights the linear layers read.
    pub kernel: Kernel,
}

/// The intermediate states of a layer on the host, reused by the next.
#[derive(Default)]
struct HostBuffers {
    /// Queries, keys and values side by side.
    projected: Vec<f32>,
    /// The buffers after attention, where the rows are too few to take in blocks.
    rows: RowBuffers,
}

/// The states of rows after attention.
#[derive(Default)]
struct RowBuffers {
    /// The attention block's output, after its residual and norm.
    attended: Vec<f32>,
    /// The feed-forward block's expansion, activated.
    expanded: Vec<f32>,
}
