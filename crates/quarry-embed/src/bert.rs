//! The BERT encoder in Burn, and the sequence classifier built on it.
//!
//! Module and field names mirror Hugging Face's `BertModel` and `BertForSequenceClassification`
//! weight names, so that `encoder.layer.3.attention.self.query.weight` in `model.safetensors` is
//! the field `encoder.layer[3].attention.self_attention.query.weight` here. Two names cannot be
//! Rust fields and are renamed on load: `self` and `LayerNorm`. Checkpoints differ in whether
//! the encoder sits under `bert.`, so each model's renames ([`WEIGHT_KEY_RENAMES`],
//! [`CLASSIFIER_WEIGHT_KEY_RENAMES`]) accept both forms.
//! Linear weights are stored `[out, in]` by PyTorch and `[in, out]` by Burn; Burn's PyTorch
//! adapter transposes them, and maps a layer norm's `weight`/`bias` to `gamma`/`beta`.

use std::sync::Arc;

use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::{gelu, gelu_approximate, relu};
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

use crate::config::{Activation, BertConfig};
use crate::gemm::{Kernel, PackedLinear};
use crate::host::{HostEmbeddings, HostLayer, HostModel, HostNorm, Shape, WordTable};
use crate::kernels;
use crate::prepared::{Array, Slot, Values};
use quarry_kernels::Level;

/// `self` is a keyword: `attention.self` is the field `attention.self_attention`.
const SELF_ATTENTION_RENAME: (&str, &str) = (r"\.attention\.self\.", ".attention.self_attention.");
/// Rust fields are snake case: `LayerNorm` is `layer_norm`.
const LAYER_NORM_RENAME: (&str, &str) = (r"LayerNorm\.", "layer_norm.");

/// Renames from Hugging Face weight names to [`BertModel`]'s field names, as
/// (regular expression, replacement) pairs applied in order.
pub const WEIGHT_KEY_RENAMES: [(&str, &str); 3] = [
    // Checkpoints saved from `BertForMaskedLM`, `BertForSequenceClassification` and friends
    // nest the encoder under `bert.`; sentence-transformers saves a bare `BertModel`.
    (r"^bert\.", ""),
    SELF_ATTENTION_RENAME,
    LAYER_NORM_RENAME,
];

/// Renames from Hugging Face weight names to [`BertForSequenceClassification`]'s field names.
pub const CLASSIFIER_WEIGHT_KEY_RENAMES: [(&str, &str); 3] = [
    // Hugging Face saves the encoder under `bert.`; accept a checkpoint without the prefix too.
    (r"^(embeddings|encoder|pooler)\.", "bert.$1."),
    SELF_ATTENTION_RENAME,
    LAYER_NORM_RENAME,
];

/// `BertModel`: token states for a batch of token ids, and optionally the pooled `[CLS]` state.
#[derive(Module, Debug)]
pub struct BertModel {
    /// Word, position and token-type embeddings.
    pub embeddings: BertEmbeddings,
    /// The stack of transformer layers.
    pub encoder: BertEncoder,
    /// `pooler`: absent for embeddings (sentence-transformers pools the token states itself,
    /// and ignores the checkpoint's pooler), present under a classification head.
    pub pooler: Option<BertPooler>,
    #[module(skip)]
    activation: Activation,
    #[module(skip)]
    num_attention_heads: usize,
    /// The model runs on the `flex` CPU backend: GELU by [`kernels::gelu_in_place`] on the
    /// host (Burn's is scalar there), and the layers on the host once packed.
    #[module(skip)]
    on_flex: bool,
    /// The embeddings and every layer on the host, once loaded ([`BertModel::pack_for_host`]
    /// or [`BertModel::from_prepared`]): on `flex` at a SIMD level, where the host kernels are
    /// several times faster than Burn's.
    #[module(skip)]
    host: Option<Arc<HostModel>>,
    /// The layer norms' epsilon, for the host layers.
    #[module(skip)]
    layer_norm_eps: f64,
}

/// `BertEmbeddings`.
#[derive(Module, Debug)]
pub struct BertEmbeddings {
    /// `word_embeddings`: one row per word piece.
    pub word_embeddings: Embedding,
    /// `position_embeddings`: one row per absolute position.
    pub position_embeddings: Embedding,
    /// `token_type_embeddings`: one row per segment.
    pub token_type_embeddings: Embedding,
    /// `LayerNorm`.
    pub layer_norm: LayerNorm,
}

/// `BertEncoder`.
#[derive(Module, Debug)]
pub struct BertEncoder {
    /// `layer.N`.
    pub layer: Vec<BertLayer>,
}

/// `BertLayer`: attention, then the feed-forward block.
#[derive(Module, Debug)]
pub struct BertLayer {
    /// `attention`.
    pub attention: BertAttention,
    /// `intermediate`: the feed-forward block's expansion.
    pub intermediate: BertIntermediate,
    /// `output`: the feed-forward block's projection back, residual and norm.
    pub output: BertOutput,
}

/// `BertAttention`.
#[derive(Module, Debug)]
pub struct BertAttention {
    /// `self`: the query, key and value projections.
    pub self_attention: BertSelfAttention,
    /// `output`: the projection of the attended values, residual and norm.
    pub output: BertOutput,
}

/// `BertSelfAttention`.
#[derive(Module, Debug)]
pub struct BertSelfAttention {
    /// `query`.
    pub query: Linear,
    /// `key`.
    pub key: Linear,
    /// `value`.
    pub value: Linear,
}

/// `BertIntermediate`.
#[derive(Module, Debug)]
pub struct BertIntermediate {
    /// `dense`.
    pub dense: Linear,
}

/// `BertPooler`: the `[CLS]` token's state through a dense layer and `tanh`.
#[derive(Module, Debug)]
pub struct BertPooler {
    /// `dense`.
    pub dense: Linear,
}

/// `BertForSequenceClassification` (evaluation only: its dropout is the identity): the
/// pooled `[CLS]` state through a linear layer, one logit per label.
#[derive(Module, Debug)]
pub struct BertForSequenceClassification {
    /// `bert`: the encoder, with its pooler.
    pub bert: BertModel,
    /// `classifier`: `hidden_size` to `num_labels`.
    pub classifier: Linear,
}

/// `BertSelfOutput` and `BertOutput`, which have the same shape: dense, residual, norm.
#[derive(Module, Debug)]
pub struct BertOutput {
    /// `dense`.
    pub dense: Linear,
    /// `LayerNorm`.
    pub layer_norm: LayerNorm,
}

impl BertModel {
    /// A model with the shape `config` describes, without a pooler; its weights are
    /// placeholders until loaded.
    pub fn new(config: &BertConfig, device: &Device) -> Self {
        let hidden = config.hidden_size;
        let norm = || {
            LayerNormConfig::new(hidden)
                .with_epsilon(config.layer_norm_eps)
                .init(device)
        };
        let linear = |input, output| LinearConfig::new(input, output).init(device);
        let embedding = |rows| EmbeddingConfig::new(rows, hidden).init(device);
        let layer = || BertLayer {
            attention: BertAttention {
                self_attention: BertSelfAttention {
                    query: linear(hidden, hidden),
                    key: linear(hidden, hidden),
                    value: linear(hidden, hidden),
                },
                output: BertOutput {
                    dense: linear(hidden, hidden),
                    layer_norm: norm(),
                },
            },
            intermediate: BertIntermediate {
                dense: linear(hidden, config.intermediate_size),
            },
            output: BertOutput {
                dense: linear(config.intermediate_size, hidden),
                layer_norm: norm(),
            },
        };
        Self {
            embeddings: BertEmbeddings {
                word_embeddings: embedding(config.vocab_size),
                position_embeddings: embedding(config.max_position_embeddings),
                token_type_embeddings: embedding(config.type_vocab_size),
                layer_norm: norm(),
            },
            encoder: BertEncoder {
                layer: (0..config.num_hidden_layers).map(|_| layer()).collect(),
            },
            pooler: None,
            activation: config.hidden_act,
            num_attention_heads: config.num_attention_heads,
            on_flex: *device == Device::flex(),
            host: None,
            layer_norm_eps: config.layer_norm_eps,
        }
    }

    /// Moves the model onto the host (its tables copied, every layer's linear weights packed
    /// for the host GEMM) when it runs on `flex` at a SIMD level (AVX2, AVX-512, NEON); otherwise changes
    /// nothing. Call it once the weights are loaded.
    pub fn pack_for_host(&mut self) {
        if !self.on_flex {
            return;
        }
        let epsilon = self.layer_norm_eps;
        let layers: Option<Vec<HostLayer>> = self
            .encoder
            .layer
            .iter()
            .map(|layer| {
                let projections = &layer.attention.self_attention;
                Some(HostLayer {
                    query_key_value: pack(&[
                        &projections.query,
                        &projections.key,
                        &projections.value,
                    ])?,
                    attention_output: pack(&[&layer.attention.output.dense])?,
                    attention_norm: host_norm(&layer.attention.output.layer_norm, epsilon),
                    intermediate: pack(&[&layer.intermediate.dense])?,
                    output: pack(&[&layer.output.dense])?,
                    output_norm: host_norm(&layer.output.layer_norm, epsilon),
                })
            })
            .collect();
        let embeddings = &self.embeddings;
        self.host = layers.map(|layers| {
            Arc::new(HostModel {
                embeddings: HostEmbeddings {
                    words: WordTable::Loaded(host_values(embeddings.word_embeddings.weight.val())),
                    positions: host_values(embeddings.position_embeddings.weight.val()),
                    token_types: host_values(embeddings.token_type_embeddings.weight.val()),
                    norm: host_norm(&embeddings.layer_norm, epsilon),
                    width: embeddings.layer_norm.gamma.dims()[0],
                },
                layers,
            })
        });
    }

    /// How each array of [`BertModel::prepared_arrays`] is laid out for a model of
    /// `config`, and which stay in the file when loaded.
    pub(crate) fn prepared_layout(config: &BertConfig) -> Vec<Slot> {
        HostModel::prepared_layout(config)
    }

    /// What the host runs, as arrays that [`BertModel::from_prepared`] takes back: the
    /// embedding tables and their layer norm, then each layer's packed linears and norms.
    /// `None` unless the model runs on the host ([`BertModel::pack_for_host`]) with its word
    /// table in memory and weights that fit `f16`.
    pub(crate) fn prepared_arrays(&self) -> Option<Vec<Values<'_>>> {
        self.host.as_ref()?.prepared_arrays()
    }

    /// A model of `config` on `device` from the arrays of [`BertModel::prepared_layout`],
    /// run on the host: the word-piece table and the `f32` panels stay in the file, read as
    /// they are needed. `None` unless `device` is `flex` at a SIMD level and the
    /// arrays are of that layout. Its Burn modules are left uninitialised (Burn initialises
    /// a parameter when first used): with the host model present, [`BertModel::forward`]
    /// never uses them.
    pub(crate) fn from_prepared(
        config: &BertConfig,
        device: &Device,
        arrays: Vec<Array>,
    ) -> Option<Self> {
        if *device != Device::flex() {
            return None;
        }
        let host = HostModel::from_prepared(config, arrays)?;
        Some(Self {
            host: Some(Arc::new(host)),
            ..Self::new(config, device)
        })
    }

    /// The SIMD level the model runs at on the CPU: its host kernels', or [`Level::Scalar`]
    /// on Burn's generic path; `None` on another backend.
    pub fn cpu_level(&self) -> Option<Level> {
        match &self.host {
            // The host's SIMD was made for the process's level (AVX-VNNI's computes in AVX2's
            // registers, and names its own level).
            Some(_) => Some(quarry_kernels::level()),
            None => self.on_flex.then_some(Level::Scalar),
        }
    }

    /// The same model with a pooler.
    pub fn with_pooler(config: &BertConfig, device: &Device) -> Self {
        let hidden = config.hidden_size;
        Self {
            pooler: Some(BertPooler {
                dense: LinearConfig::new(hidden, hidden).init(device),
            }),
            ..Self::new(config, device)
        }
    }

    /// Token states `[batch, seq, hidden]` for token ids `[batch, seq]`.
    ///
    /// `token_types` is `[batch, seq]`: 0 for the first text of a pair, 1 for the second;
    /// `None` when every token is of type 0 (single texts). `padding` is `[batch, seq, seq]`,
    /// true where a query position must not attend to a key position because the key is
    /// padding; `None` when no row of the batch is padded. `kernel` picks the weights the
    /// host's linear layers read; Burn's layers (a GPU, or the scalar level) always
    /// read `f32`.
    pub fn forward(
        &self,
        input_ids: Tensor<2, Int>,
        token_types: Option<Tensor<2, Int>>,
        padding: Option<Tensor<3, Bool>>,
        kernel: Kernel,
    ) -> Tensor<3> {
        let [batch, seq] = input_ids.dims();
        let device = input_ids.device();
        let heads = self.num_attention_heads;
        if let Some(host) = &self.host {
            // Each text's token count: the keys its first query may attend to.
            let lengths: Vec<usize> = match padding {
                Some(mask) => mask
                    .slice([0..batch, 0..1, 0..seq])
                    .into_data()
                    .try_into_vec::<bool>()
                    .expect("a boolean mask")
                    .chunks(seq)
                    .map(|row| row.iter().filter(|padded| !**padded).count())
                    .collect(),
                None => vec![seq; batch],
            };
            let ids = host_ids(input_ids);
            let types = token_types.map(host_ids);
            let shape = Shape {
                lengths: &lengths,
                seq,
                heads,
                kernel,
            };
            let states = host.forward(&ids, types.as_deref(), shape, |x| self.activate_host(x));
            let width = host.embeddings.width;
            return Tensor::from_data(TensorData::new(states, [batch, seq, width]), &device);
        }
        let positions = Tensor::<1, Int>::arange(0..seq as i64, &device)
            .reshape([1, seq])
            .expand([batch, seq]);
        let token_types =
            token_types.unwrap_or_else(|| Tensor::<2, Int>::zeros([batch, seq], &device));
        let embeddings = &self.embeddings;
        let mut hidden = embeddings.layer_norm.forward(
            embeddings.word_embeddings.forward(input_ids)
                + embeddings.position_embeddings.forward(positions)
                + embeddings.token_type_embeddings.forward(token_types),
        );
        let mask = padding.map(|mask| mask.unsqueeze_dim::<4>(1).expand([batch, heads, seq, seq]));
        for layer in &self.encoder.layer {
            hidden = layer.forward(hidden, mask.clone(), heads, |x| self.activate(x));
        }
        hidden
    }

    /// The activation of host values `[rows, width]`, in place.
    fn activate_host(&self, values: &mut Vec<f32>) {
        match self.activation {
            Activation::Gelu => kernels::gelu_in_place(values),
            _ => {
                let device = Device::flex();
                let count = values.len();
                let states = Tensor::<3>::from_data(
                    TensorData::new(std::mem::take(values), [1, 1, count]),
                    &device,
                );
                *values = host_values(self.activate(states));
            }
        }
    }

    fn activate(&self, states: Tensor<3>) -> Tensor<3> {
        match self.activation {
            Activation::Gelu if self.on_flex => {
                let (shape, device) = (states.shape(), states.device());
                let mut values = host_values(states);
                kernels::gelu_in_place(&mut values);
                Tensor::from_data(TensorData::new(values, shape), &device)
            }
            Activation::Gelu => gelu(states),
            Activation::GeluTanh => gelu_approximate(states),
            Activation::Relu => relu(states),
        }
    }
}

impl BertPooler {
    /// `tanh(dense(h))` of the first token's state `h`: `[batch, hidden]` from
    /// `[batch, seq, hidden]`.
    pub fn forward(&self, hidden: Tensor<3>) -> Tensor<2> {
        let [batch, _, width] = hidden.dims();
        let first = hidden
            .slice([0..batch, 0..1, 0..width])
            .reshape([batch, width]);
        self.dense.forward(first).tanh()
    }
}

impl BertForSequenceClassification {
    /// A classifier with the shape `config` describes, `config.num_labels()` logits wide; its
    /// weights are placeholders until loaded.
    pub fn new(config: &BertConfig, device: &Device) -> Self {
        Self {
            bert: BertModel::with_pooler(config, device),
            classifier: LinearConfig::new(config.hidden_size, config.num_labels()).init(device),
        }
    }

    /// Logits `[batch, num_labels]`; the arguments are [`BertModel::forward`]'s.
    pub fn forward(
        &self,
        input_ids: Tensor<2, Int>,
        token_types: Option<Tensor<2, Int>>,
        padding: Option<Tensor<3, Bool>>,
    ) -> Tensor<2> {
        let hidden = self
            .bert
            .forward(input_ids, token_types, padding, Kernel::F32);
        let pooler = self
            .bert
            .pooler
            .as_ref()
            .expect("BertForSequenceClassification::new builds the pooler");
        self.classifier.forward(pooler.forward(hidden))
    }
}

impl BertLayer {
    fn forward(
        &self,
        hidden: Tensor<3>,
        mask: Option<Tensor<4, Bool>>,
        heads: usize,
        activate: impl Fn(Tensor<3>) -> Tensor<3>,
    ) -> Tensor<3> {
        let [batch, seq, width] = hidden.dims();
        let split_heads = |states: Tensor<3>| {
            states
                .reshape([batch, seq, heads, width / heads])
                .swap_dims(1, 2)
        };
        let projections = &self.attention.self_attention;
        let context = attention(
            split_heads(projections.query.forward(hidden.clone())),
            split_heads(projections.key.forward(hidden.clone())),
            split_heads(projections.value.forward(hidden.clone())),
            mask,
            None,
            AttentionModuleOptions::default(),
        )
        .swap_dims(1, 2)
        .reshape([batch, seq, width]);
        let attended = self.attention.output.forward(context, hidden);

        let expanded = self.intermediate.dense.forward(attended.clone());
        self.output.forward(activate(expanded), attended)
    }
}

/// A layer norm's scale, shift and `epsilon` on the host.
fn host_norm(norm: &LayerNorm, epsilon: f64) -> HostNorm {
    let gamma = host_values(norm.gamma.val());
    let beta = match &norm.beta {
        Some(beta) => host_values(beta.val()),
        None => vec![0.0; gamma.len()],
    };
    HostNorm {
        gamma,
        beta,
        epsilon: epsilon as f32,
    }
}

/// Token ids (or types) on the host, row-major.
fn host_ids(ids: Tensor<2, Int>) -> Vec<u32> {
    ids.into_data()
        .convert::<i64>()
        .iter::<i64>()
        .map(|id| u32::try_from(id).expect("token ids fit u32"))
        .collect()
}

/// A tensor's values on the host, row-major.
fn host_values<const D: usize>(states: Tensor<D>) -> Vec<f32> {
    states
        .into_data()
        .try_into_vec()
        .expect("the model computes in f32")
}

/// `linears` (same input width) packed as one product whose outputs are theirs side by side.
fn pack(linears: &[&Linear]) -> Option<PackedLinear> {
    let [inputs, _] = linears[0].weight.dims();
    let weights: Vec<Vec<f32>> = linears
        .iter()
        .map(|l| host_values(l.weight.val()))
        .collect();
    let widths: Vec<usize> = linears.iter().map(|l| l.weight.dims()[1]).collect();
    let outputs: usize = widths.iter().sum();
    let mut weight = Vec::with_capacity(inputs * outputs);
    for row in 0..inputs {
        for (values, &width) in weights.iter().zip(&widths) {
            weight.extend_from_slice(&values[row * width..(row + 1) * width]);
        }
    }
    let mut bias = Vec::with_capacity(outputs);
    for (linear, &width) in linears.iter().zip(&widths) {
        match &linear.bias {
            Some(b) => bias.extend(host_values(b.val())),
            None => bias.extend(std::iter::repeat_n(0.0, width)),
        }
    }
    PackedLinear::new(&weight, Some(&bias), inputs, outputs)
}

impl BertOutput {
    fn forward(&self, states: Tensor<3>, residual: Tensor<3>) -> Tensor<3> {
        self.layer_norm
            .forward(self.dense.forward(states) + residual)
    }
}
