//! The cross-encoder against Hugging Face transformers (`fixtures/embed/cross_encoder_reference.json`).
//!
//! No trained cross-encoder can be fetched where quarry is built and tested, so the reference
//! model is a real `BertForSequenceClassification` assembled from the default model's trunk and
//! pooler (provisioned as the other tests provision it) and a seeded one-label head committed in
//! `fixtures/embed/cross_encoder_head.safetensors`; `fixtures/embed/cross_encoder_reference.py`
//! assembles the same model and computes the reference logits. Its scores mean nothing; the
//! test is that quarry computes the same function: pair tokenization, token types, truncation,
//! trunk, pooler and head.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use quarry_embed::{
    CrossEncoder, CrossEncoderOptions, EmbedError, Embedder, EmbedderOptions, MS_MARCO_MINILM_L6,
    ModelDir, Provisioner,
};
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/embed")
        .join(name)
}

/// One tensor of a safetensors file.
struct StoredTensor {
    name: String,
    dtype: Value,
    shape: Value,
    bytes: Vec<u8>,
}

fn read_safetensors(path: &Path) -> Vec<StoredTensor> {
    let file = std::fs::read(path).unwrap();
    let header_len = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, Value> =
        serde_json::from_slice(&file[8..8 + header_len]).unwrap();
    let data = &file[8 + header_len..];
    header
        .into_iter()
        .filter(|(name, _)| name != "__metadata__")
        .map(|(name, info)| {
            let offsets: [usize; 2] = serde_json::from_value(info["data_offsets"].clone()).unwrap();
            StoredTensor {
                name,
                dtype: info["dtype"].clone(),
                shape: info["shape"].clone(),
                bytes: data[offsets[0]..offsets[1]].to_vec(),
            }
        })
        .collect()
}

fn write_safetensors(path: &Path, tensors: &[StoredTensor]) {
    let mut header = serde_json::Map::new();
    let mut offset = 0;
    for tensor in tensors {
        let end = offset + tensor.bytes.len();
        header.insert(
            tensor.name.clone(),
            json!({"dtype": tensor.dtype, "shape": tensor.shape, "data_offsets": [offset, end]}),
        );
        offset = end;
    }
    header.insert("__metadata__".into(), json!({"format": "pt"}));
    let mut header = serde_json::to_vec(&header).unwrap();
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header);
    for tensor in tensors {
        file.extend(&tensor.bytes);
    }
    std::fs::write(path, file).unwrap();
}

/// The reference model's directory: the default model's trunk with every key under `prefix`
/// (`bert.` as Hugging Face saves a classifier, or nothing), the committed head unless
/// `with_head` is false, and the committed configuration as `edit` leaves it.
fn assemble(prefix: &str, with_head: bool, edit: impl FnOnce(&mut Value)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    assemble_in(dir.path(), prefix, with_head, edit);
    dir
}

/// [`assemble`] into `dir`.
fn assemble_in(dir: &Path, prefix: &str, with_head: bool, edit: impl FnOnce(&mut Value)) {
    let trunk_dir = &quarry_testkit::model().path;
    let mut tensors = read_safetensors(&trunk_dir.join("model.safetensors"));
    for tensor in &mut tensors {
        tensor.name = format!("{prefix}{}", tensor.name);
    }
    if with_head {
        tensors.extend(read_safetensors(&fixture("cross_encoder_head.safetensors")));
    }
    write_safetensors(&dir.join("model.safetensors"), &tensors);
    let mut config: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("cross_encoder_config.json")).unwrap(),
    )
    .unwrap();
    edit(&mut config);
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    std::fs::copy(trunk_dir.join("tokenizer.json"), dir.join("tokenizer.json")).unwrap();
}

/// The assembled reference model, Hugging Face style, kept for the whole test binary.
fn reference_dir() -> &'static ModelDir {
    static DIR: OnceLock<ModelDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = quarry_testkit::kept_dir(env!("CARGO_TARGET_TMPDIR"), "cross-encoder-reference");
        assemble_in(&dir, "bert.", true, |_| {});
        ModelDir::local(&dir)
    })
}

fn load(dir: &ModelDir, max_tokens: usize) -> CrossEncoder {
    let options = CrossEncoderOptions {
        max_tokens: Some(max_tokens),
        ..CrossEncoderOptions::from_env().unwrap()
    };
    CrossEncoder::load(dir, options).unwrap_or_else(|error| panic!("{error}"))
}

struct Reference {
    id: String,
    query: String,
    text: String,
    max_length: usize,
    input_ids: Vec<u32>,
    token_type_ids: Vec<u32>,
    truncated: bool,
    logit: f32,
}

fn references() -> Vec<Reference> {
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("cross_encoder_reference.json")).unwrap(),
    )
    .unwrap();
    json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| Reference {
            id: item["id"].as_str().unwrap().into(),
            query: item["query"].as_str().unwrap().into(),
            text: item["text"].as_str().unwrap().into(),
            max_length: item["max_length"].as_u64().unwrap() as usize,
            input_ids: serde_json::from_value(item["input_ids"].clone()).unwrap(),
            token_type_ids: serde_json::from_value(item["token_type_ids"].clone()).unwrap(),
            truncated: item["truncated"].as_bool().unwrap(),
            logit: item["logit"].as_f64().unwrap() as f32,
        })
        .collect()
}

/// The references grouped by maximum length, each group with an encoder truncating there.
fn by_max_length() -> Vec<(CrossEncoder, Vec<Reference>)> {
    let mut groups: Vec<(usize, Vec<Reference>)> = Vec::new();
    for reference in references() {
        match groups
            .iter_mut()
            .find(|(max, _)| *max == reference.max_length)
        {
            Some((_, group)) => group.push(reference),
            None => groups.push((reference.max_length, vec![reference])),
        }
    }
    assert!(groups.len() >= 2, "the fixture truncates at two lengths");
    groups
        .into_iter()
        .map(|(max, group)| (load(reference_dir(), max), group))
        .collect()
}

#[test]
fn pair_tokens_match_transformers() {
    for (encoder, group) in by_max_length() {
        for reference in &group {
            let tokens = encoder
                .tokenize(&reference.query, &[&reference.text])
                .unwrap()
                .remove(0);
            assert_eq!(tokens.ids, reference.input_ids, "pair {}", reference.id);
            assert_eq!(
                tokens.type_ids, reference.token_type_ids,
                "pair {}",
                reference.id
            );
            assert_eq!(
                tokens.truncated, reference.truncated,
                "pair {}",
                reference.id
            );
        }
    }
}

#[test]
fn logits_match_transformers() {
    let mut worst = (0.0f32, String::new());
    for (encoder, group) in by_max_length() {
        // The pairs of one query are scored in one call, as a query's candidates are: sorted by
        // length, batched and padded. Here every pair has its own query, so score them one
        // query at a time but with padding: each with a long and a short companion text.
        for reference in &group {
            let companions = [
                reference.text.as_str(),
                "x",
                "a much longer companion text that pads the batch for the other pairs in it",
            ];
            let scores = encoder.score(&reference.query, &companions).unwrap();
            let difference = (scores[0] - reference.logit).abs();
            if difference > worst.0 {
                worst = (difference, reference.id.clone());
            }
        }
    }
    eprintln!(
        "largest logit difference: {:.1e} (pair {})",
        worst.0, worst.1
    );
    assert!(worst.0 <= 1e-4, "pair {} differs by {}", worst.1, worst.0);
}

#[test]
fn a_query_scores_its_texts_in_order_whatever_the_batch_size() {
    let references = references();
    let query = "retry a request with exponential backoff";
    let texts: Vec<&str> = references.iter().map(|r| r.text.as_str()).collect();
    let scores = |batch_size| {
        let options = CrossEncoderOptions {
            batch_size,
            ..CrossEncoderOptions::from_env().unwrap()
        };
        CrossEncoder::load(reference_dir(), options)
            .unwrap()
            .score(query, &texts)
            .unwrap()
    };
    let (one_by_one, batched) = (scores(1), scores(4));
    assert_eq!(one_by_one.len(), texts.len());
    for (i, (alone, in_batch)) in one_by_one.iter().zip(&batched).enumerate() {
        assert!(
            (alone - in_batch).abs() < 1e-5,
            "text {i}: {alone} alone, {in_batch} batched"
        );
    }
    // The two texts the reference scores with this query, at their places.
    for reference in references.iter().filter(|r| r.query == query) {
        let i = texts.iter().position(|t| *t == reference.text).unwrap();
        assert!(
            (batched[i] - reference.logit).abs() <= 1e-4,
            "{}",
            reference.id
        );
    }
}

#[test]
fn relevance_is_the_sigmoid_of_the_logit() {
    let encoder = load(reference_dir(), 512);
    let texts = ["fn retry() {}", "SELECT 1"];
    let logits = encoder.score("retry", &texts).unwrap();
    let relevance = encoder.relevance("retry", &texts).unwrap();
    for (logit, probability) in logits.iter().zip(&relevance) {
        assert!((probability - 1.0 / (1.0 + (-logit).exp())).abs() < 1e-6);
        assert!((0.0..=1.0).contains(probability));
    }
    assert!(encoder.score("anything", &[]).unwrap().is_empty());
}

#[test]
fn a_checkpoint_without_the_bert_prefix_scores_the_same() {
    let bare = assemble("", true, |_| {});
    let pairs = ["def retry(): ...", "SELECT o.id FROM orders o"];
    let with_prefix = load(reference_dir(), 512).score("retry", &pairs).unwrap();
    let without = load(&ModelDir::local(bare.path()), 512)
        .score("retry", &pairs)
        .unwrap();
    assert_eq!(with_prefix, without);
}

#[test]
fn the_embedder_reads_a_trunk_under_the_bert_prefix() {
    // The classifier checkpoint, read as an encoder: `bert.` is stripped, the pooler and the
    // head are ignored, and the vectors are the default model's.
    let options = EmbedderOptions::default();
    let from_classifier = Embedder::load(reference_dir(), options).unwrap();
    let default = Embedder::load(quarry_testkit::model(), options).unwrap();
    let text = "fn parse_config(path: &Path) -> Config";
    let (a, b) = (
        from_classifier.embed_one(text).unwrap().vector,
        default.embed_one(text).unwrap().vector,
    );
    let dot: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    assert!(dot > 0.99999, "cosine {dot}");
}

#[test]
fn a_checkpoint_without_a_head_names_the_missing_tensors() {
    let headless = assemble("bert.", false, |_| {});
    let error = CrossEncoder::load(
        &ModelDir::local(headless.path()),
        CrossEncoderOptions::default(),
    )
    .unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, EmbedError::Weights { .. }), "{message}");
    assert!(message.contains("classifier.weight"), "{message}");
}

#[test]
fn a_classifier_with_two_labels_is_refused() {
    let two_labels = assemble("bert.", true, |config| {
        config["id2label"] = json!({"0": "irrelevant", "1": "relevant"});
    });
    let error = CrossEncoder::load(
        &ModelDir::local(two_labels.path()),
        CrossEncoderOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(error, EmbedError::UnsupportedArchitecture { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("2 labels"), "{error}");
}

/// The real MS MARCO cross-encoder. Only the Hugging Face hub serves its weights, which
/// cannot be fetched where quarry is developed and tested, so it runs only when asked for
/// where the model is provisioned: `QUARRY_RERANK_MODEL_DIR=DIR cargo test -p quarry-embed
/// --test cross_encoder -- --ignored the_ms_marco` (or after `quarry model fetch --rerank`).
#[test]
#[ignore = "needs the MS MARCO cross-encoder's weights (Hugging Face hub only); run with --ignored where provisioned"]
fn the_ms_marco_cross_encoder_ranks_the_relevant_passage() {
    let dir = Provisioner::from_env()
        .find(&MS_MARCO_MINILM_L6)
        .unwrap()
        .unwrap_or_else(|| {
            panic!(
                "{} is not provisioned: set QUARRY_RERANK_MODEL_DIR or run `quarry model fetch --rerank`",
                MS_MARCO_MINILM_L6.name
            )
        });
    let encoder = CrossEncoder::load(&dir, CrossEncoderOptions::from_env().unwrap()).unwrap();
    // The model card's example, where the model scores about 8.6 and -4.3.
    let scores = encoder
        .score(
            "How many people live in Berlin?",
            &[
                "Berlin had a population of 3,520,031 registered inhabitants in an area of \
                 891.82 square kilometers.",
                "Berlin is well known for its museums.",
            ],
        )
        .unwrap();
    eprintln!("{}: {scores:?}", encoder.fingerprint());
    assert!(scores[0] > 0.0 && scores[1] < 0.0, "{scores:?}");
}

/// Throughput of a typical rerank: one query and 30 candidate chunks of about 200 tokens.
/// `cargo test -p quarry-embed --release --test cross_encoder -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, not a check"]
fn measure_pairs_per_second() {
    let encoder = load(reference_dir(), 512);
    let texts: Vec<String> = (0..30)
        .map(|i| {
            (0..8)
                .map(|line| {
                    format!("    let value_{line} = state.items[{i}].compute({line}, &config)?;\n")
                })
                .collect()
        })
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let query = "where are the items computed from the configuration";
    let tokens: Vec<usize> = encoder
        .tokenize(query, &texts)
        .unwrap()
        .iter()
        .map(|t| t.ids.len())
        .collect();
    encoder.score(query, &texts).unwrap(); // warm-up
    let runs = 5;
    let start = std::time::Instant::now();
    for _ in 0..runs {
        encoder.score(query, &texts).unwrap();
    }
    let seconds = start.elapsed().as_secs_f64() / f64::from(runs);
    eprintln!(
        "{} pairs of {}-{} tokens: {:.3} s per query, {:.1} pairs/s ({})",
        texts.len(),
        tokens.iter().min().unwrap(),
        tokens.iter().max().unwrap(),
        seconds,
        texts.len() as f64 / seconds,
        encoder.backend()
    );
}
