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

use burn::module::{Module, Param};
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::{gelu, gelu_approximate, relu};
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

use crate::attention::attention as host_attention;
use crate::config::{Activation, BertConfig};
use crate::gemm::PackedLinear;
use crate::kernels;

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
    /// Each layer's weights on the host, once loaded ([`BertModel::pack_for_host`]): on
    /// `flex` with AVX-512, where the host kernels are several times faster than Burn's.
    #[module(skip)]
    host_layers: Option<Arc<[HostLayer]>>,
    /// The layer norms' epsilon, for the host layers.
    #[module(skip)]
    layer_norm_eps: f64,
}

/// A layer's weights on the host: the linear layers packed (query, key and value as one
/// product), the layer norms' scales and shifts.
#[derive(Debug)]
struct HostLayer {
    query_key_value: PackedLinear,
    attention_output: PackedLinear,
    attention_norm: HostNorm,
    intermediate: PackedLinear,
    output: PackedLinear,
    output_norm: HostNorm,
}

/// A layer norm's scale and shift on the host.
#[derive(Debug)]
struct HostNorm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    epsilon: f32,
}

impl HostNorm {
    fn of(norm: &LayerNorm, epsilon: f64) -> Self {
        let gamma = host_values(norm.gamma.val());
        let beta = match &norm.beta {
            Some(beta) => host_values(beta.val()),
            None => vec![0.0; gamma.len()],
        };
        Self {
            gamma,
            beta,
            epsilon: epsilon as f32,
        }
    }

    fn prepared(gamma: Vec<f32>, beta: Vec<f32>, epsilon: f64) -> Self {
        Self {
            gamma,
            beta,
            epsilon: epsilon as f32,
        }
    }

    /// `norm(values + residual)`, in place.
    fn apply(&self, values: &mut [f32], residual: &[f32]) {
        kernels::residual_layer_norm(values, residual, &self.gamma, &self.beta, self.epsilon);
    }
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
            host_layers: None,
            layer_norm_eps: config.layer_norm_eps,
        }
    }

    /// Packs every layer's linear weights for the host GEMM, when the model runs on `flex`
    /// and the CPU has AVX-512; otherwise changes nothing. Call it once the weights are
    /// loaded.
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
                    attention_norm: HostNorm::of(&layer.attention.output.layer_norm, epsilon),
                    intermediate: pack(&[&layer.intermediate.dense])?,
                    output: pack(&[&layer.output.dense])?,
                    output_norm: HostNorm::of(&layer.output.layer_norm, epsilon),
                })
            })
            .collect();
        self.host_layers = layers.map(Arc::from);
    }

    /// How long each array of [`BertModel::prepared_arrays`] is for a model of `config`.
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

    /// What the host runs, as arrays that [`BertModel::from_prepared`] takes back: the
    /// embedding tables and their layer norm, then each layer's packed linears and norms.
    /// `None` unless the layers run on the host ([`BertModel::pack_for_host`]).
    pub fn prepared_arrays(&self) -> Option<Vec<Vec<f32>>> {
        let host = self.host_layers.as_ref()?;
        let embeddings = &self.embeddings;
        let norm = HostNorm::of(&embeddings.layer_norm, self.layer_norm_eps);
        let mut arrays = vec![
            host_values(embeddings.word_embeddings.weight.val()),
            host_values(embeddings.position_embeddings.weight.val()),
            host_values(embeddings.token_type_embeddings.weight.val()),
            norm.gamma,
            norm.beta,
        ];
        for layer in host.iter() {
            for (linear, norm) in [
                (&layer.query_key_value, None),
                (&layer.attention_output, Some(&layer.attention_norm)),
                (&layer.intermediate, None),
                (&layer.output, Some(&layer.output_norm)),
            ] {
                let (panels, bias) = linear.packed();
                arrays.extend([panels.to_vec(), bias.to_vec()]);
                if let Some(norm) = norm {
                    arrays.extend([norm.gamma.clone(), norm.beta.clone()]);
                }
            }
        }
        Some(arrays)
    }

    /// A model of `config` on `device` from [`BertModel::prepared_arrays`], its layers on
    /// the host; `None` unless `device` is `flex` on a CPU with AVX-512 and the arrays are
    /// [`BertModel::prepared_lengths`] long. Its Burn layers are left out: with the host
    /// layers present, [`BertModel::forward`] never runs them.
    pub fn from_prepared(
        config: &BertConfig,
        device: &Device,
        arrays: Vec<Vec<f32>>,
    ) -> Option<Self> {
        if *device != Device::flex() || arrays.len() != Self::prepared_lengths(config).len() {
            return None;
        }
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        let epsilon = config.layer_norm_eps;
        let mut arrays = arrays.into_iter();
        let mut next = || arrays.next().expect("as many arrays as prepared_lengths");
        let table = |values: Vec<f32>| {
            let rows = values.len() / hidden;
            Embedding {
                weight: Param::from_tensor(Tensor::from_data(
                    TensorData::new(values, [rows, hidden]),
                    device,
                )),
            }
        };
        let word_embeddings = table(next());
        let position_embeddings = table(next());
        let token_type_embeddings = table(next());
        let mut layer_norm = LayerNormConfig::new(hidden)
            .with_epsilon(epsilon)
            .init(device);
        let vector = |values: Vec<f32>| {
            Param::from_tensor(Tensor::from_data(TensorData::new(values, [hidden]), device))
        };
        layer_norm.gamma = vector(next());
        layer_norm.beta = Some(vector(next()));
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for _ in 0..config.num_hidden_layers {
            let query_key_value = PackedLinear::from_packed(hidden, 3 * hidden, next(), next())?;
            let attention_output = PackedLinear::from_packed(hidden, hidden, next(), next())?;
            let attention_norm = HostNorm::prepared(next(), next(), epsilon);
            let intermediate = PackedLinear::from_packed(hidden, inner, next(), next())?;
            let output = PackedLinear::from_packed(inner, hidden, next(), next())?;
            let output_norm = HostNorm::prepared(next(), next(), epsilon);
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
            embeddings: BertEmbeddings {
                word_embeddings,
                position_embeddings,
                token_type_embeddings,
                layer_norm,
            },
            encoder: BertEncoder { layer: Vec::new() },
            pooler: None,
            activation: config.hidden_act,
            num_attention_heads: config.num_attention_heads,
            on_flex: true,
            host_layers: Some(Arc::from(layers)),
            layer_norm_eps: epsilon,
        })
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
    /// padding; `None` when no row of the batch is padded.
    pub fn forward(
        &self,
        input_ids: Tensor<2, Int>,
        token_types: Option<Tensor<2, Int>>,
        padding: Option<Tensor<3, Bool>>,
    ) -> Tensor<3> {
        let [batch, seq] = input_ids.dims();
        let device = input_ids.device();
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
        let heads = self.num_attention_heads;
        if let Some(host) = &self.host_layers {
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
            let [_, _, width] = hidden.dims();
            let mut states = host_values(hidden);
            let mut buffers = HostBuffers::default();
            for packed in host.iter() {
                BertLayer::forward_host(
                    packed,
                    &mut states,
                    &mut buffers,
                    &lengths,
                    seq,
                    heads,
                    |x| self.activate_host(x),
                );
            }
            return Tensor::from_data(TensorData::new(states, [batch, seq, width]), &device);
        }
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
        let hidden = self.bert.forward(input_ids, token_types, padding);
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

impl BertLayer {
    /// [`BertLayer::forward`] on the host, `[texts × seq, width]` in place: the linear layers
    /// on [`PackedLinear`], attention by [`host_attention`] over each text's `lengths` tokens,
    /// the residuals and layer norms by [`kernels::residual_layer_norm`]. `buffers` carry
    /// over from layer to layer.
    fn forward_host(
        host: &HostLayer,
        hidden: &mut Vec<f32>,
        buffers: &mut HostBuffers,
        lengths: &[usize],
        seq: usize,
        heads: usize,
        activate: impl Fn(&mut Vec<f32>),
    ) {
        let width = host.attention_output.outputs();
        let HostBuffers {
            projected,
            attended,
            expanded,
        } = buffers;
        host.query_key_value.forward_into(hidden, projected);
        let context = host_attention(projected, lengths, seq, heads, width / heads)
            .expect("packed layers imply AVX-512");
        host.attention_output.forward_into(&context, attended);
        host.attention_norm.apply(attended, hidden);
        host.intermediate.forward_into(attended, expanded);
        activate(expanded);
        host.output.forward_into(expanded, hidden);
        host.output_norm.apply(hidden, attended);
    }
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
