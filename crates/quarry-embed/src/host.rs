//! The encoder on the host: on `flex` with AVX-512, the embeddings and every layer run here,
//! on [`PackedLinear`] and the host kernels, rather than in Burn ([`crate::bert::BertModel`]
//! keeps the Burn modules for other backends and CPUs).
//!
//! The word-piece table is the model's largest array (47 MB of all-MiniLM-L6-v2's 90) and a
//! query reads a dozen of its rows: loaded from prepared weights, it stays in the file and
//! its rows are read as texts first use them ([`WordTable::OnDisk`]).

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Mutex;

use crate::attention::attention as host_attention;
use crate::config::BertConfig;
use crate::gemm::{PackedLinear, Precision};
use crate::kernels;
use crate::prepared::Deferred;

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
    file: fs::File,
    /// Where the table starts in the file.
    offset: u64,
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
    pub fn on_disk(deferred: Deferred, width: usize) -> Option<Self> {
        let file = fs::File::open(&deferred.path).ok()?;
        Some(WordTable::OnDisk(Mutex::new(DiskRows {
            file,
            offset: deferred.offset,
            count: deferred.length / width,
            rows: HashMap::new(),
        })))
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
        let Self {
            file, offset, rows, ..
        } = self;
        rows.entry(id).or_insert_with(|| {
            let mut row = vec![0.0f32; width].into_boxed_slice();
            let at = *offset + (id as usize * width * size_of::<f32>()) as u64;
            file.seek(SeekFrom::Start(at))
                .and_then(|_| file.read_exact(bytemuck::cast_slice_mut(&mut row)))
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
        activate: impl Fn(&mut Vec<f32>),
    ) -> Vec<f32> {
        let mut states = self.embeddings.forward(ids, types, shape.seq);
        let mut buffers = HostBuffers::default();
        for layer in &self.layers {
            layer.forward(&mut states, &mut buffers, &shape, &activate);
        }
        states
    }

    /// How long each array of [`HostModel::prepared_arrays`] is for a model of `config`.
    pub fn prepared_lengths(config: &BertConfig) -> Vec<usize> {
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        let mut lengths = vec![
            config.vocab_size * hidden,
            config.max_position_embeddings * hidden,
            config.type_vocab_size * hidden,
            hidden,
            hidden,
        ];
        for _ in 0..config.num_hidden_layers {
            for (k, n) in [(hidden, 3 * hidden), (hidden, hidden)] {
                let (panels, bias) = PackedLinear::packed_lengths(k, n);
                lengths.extend([panels, bias]);
            }
            lengths.extend([hidden, hidden]);
            for (k, n) in [(hidden, inner), (inner, hidden)] {
                let (panels, bias) = PackedLinear::packed_lengths(k, n);
                lengths.extend([panels, bias]);
            }
            lengths.extend([hidden, hidden]);
        }
        lengths
    }

    /// The model as arrays that [`HostModel::from_prepared`] takes back: the word-piece,
    /// position and token-type tables and their norm, then each layer's packed linears and
    /// norms. `None` when the word table was left on disk (the model came from them).
    pub fn prepared_arrays(&self) -> Option<Vec<&[f32]>> {
        let embeddings = &self.embeddings;
        let WordTable::Loaded(words) = &embeddings.words else {
            return None;
        };
        let mut arrays = vec![
            words.as_slice(),
            &embeddings.positions,
            &embeddings.token_types,
            &embeddings.norm.gamma,
            &embeddings.norm.beta,
        ];
        for layer in &self.layers {
            for (linear, norm) in [
                (&layer.query_key_value, None),
                (&layer.attention_output, Some(&layer.attention_norm)),
                (&layer.intermediate, None),
                (&layer.output, Some(&layer.output_norm)),
            ] {
                let (panels, bias) = linear.packed();
                arrays.extend([panels, bias]);
                if let Some(norm) = norm {
                    arrays.extend([norm.gamma.as_slice(), &norm.beta]);
                }
            }
        }
        Some(arrays)
    }

    /// A model of `config` from `words` and the rest of [`HostModel::prepared_arrays`] (all
    /// but the first); `None` where the CPU lacks AVX-512 or an array is not
    /// [`HostModel::prepared_lengths`] long.
    pub fn from_prepared(
        config: &BertConfig,
        words: WordTable,
        rest: Vec<Vec<f32>>,
    ) -> Option<Self> {
        let lengths = Self::prepared_lengths(config);
        if rest.len() + 1 != lengths.len()
            || rest.iter().zip(&lengths[1..]).any(|(a, &l)| a.len() != l)
        {
            return None;
        }
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        let epsilon = config.layer_norm_eps as f32;
        let mut arrays = rest.into_iter();
        let mut next = || arrays.next().expect("as many arrays as prepared_lengths");
        let positions = next();
        let token_types = next();
        let norm = HostNorm {
            gamma: next(),
            beta: next(),
            epsilon,
        };
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for _ in 0..config.num_hidden_layers {
            let query_key_value = PackedLinear::from_packed(hidden, 3 * hidden, next(), next())?;
            let attention_output = PackedLinear::from_packed(hidden, hidden, next(), next())?;
            let attention_norm = HostNorm {
                gamma: next(),
                beta: next(),
                epsilon,
            };
            let intermediate = PackedLinear::from_packed(hidden, inner, next(), next())?;
            let output = PackedLinear::from_packed(inner, hidden, next(), next())?;
            let output_norm = HostNorm {
                gamma: next(),
                beta: next(),
                epsilon,
            };
            layers.push(HostLayer {
                query_key_value,
                attention_output,
                attention_norm,
                intermediate,
                output,
                output_norm,
            });
        }
        Some(Self {
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

impl HostLayer {
    /// A BERT layer on the host, `[texts × seq, width]` in place: the linear layers on
    /// [`PackedLinear`], attention by [`host_attention`] over each text's `lengths` tokens,
    /// the residuals and layer norms by [`kernels::residual_layer_norm`]. `buffers` carry
    /// over from layer to layer.
    fn forward(
        &self,
        hidden: &mut Vec<f32>,
        buffers: &mut HostBuffers,
        shape: &Shape<'_>,
        activate: &impl Fn(&mut Vec<f32>),
    ) {
        let width = self.attention_output.outputs();
        let Shape {
            lengths,
            seq,
            heads,
            precision,
        } = *shape;
        let HostBuffers {
            projected,
            attended,
            expanded,
        } = buffers;
        self.query_key_value
            .forward_into(hidden, projected, precision);
        let context = host_attention(projected, lengths, seq, heads, width / heads)
            .expect("packed layers imply AVX-512");
        self.attention_output
            .forward_into(&context, attended, precision);
        self.attention_norm.apply(attended, hidden);
        self.intermediate
            .forward_into(attended, expanded, precision);
        activate(expanded);
        self.output.forward_into(expanded, hidden, precision);
        self.output_norm.apply(hidden, attended);
    }
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
    pub precision: Precision,
}

/// The intermediate states of a layer on the host, reused by the next.
#[derive(Default)]
struct HostBuffers {
    /// Queries, keys and values side by side.
    projected: Vec<f32>,
    /// The attention block's output, after its residual and norm.
    attended: Vec<f32>,
    /// The feed-forward block's expansion, activated.
    expanded: Vec<f32>,
}
