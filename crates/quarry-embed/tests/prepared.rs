//! Prepared weights: a model loaded from what an earlier load saved embeds documents and
//! queries exactly as one loaded from safetensors, and a damaged file is passed over and
//! written again.

use std::fs;
use std::path::{Path, PathBuf};

use quarry_embed::{Embedder, EmbedderOptions, ModelDir, WeightsSource};

/// The prepared file a load left in `dir`, if any.
fn prepared_file(dir: &Path) -> Option<PathBuf> {
    fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(".quarry-prepared-"))
        })
}

/// Documents' vectors, then queries' (which read the layers' `f16` copies).
fn vectors(embedder: &Embedder) -> Vec<Vec<f32>> {
    let long = "fn parse_config(path: &Path) -> Config { read(path) } ".repeat(40);
    let texts = [
        "read the configuration file",
        "def retry(): pass",
        long.as_str(),
    ];
    let queries = texts[..2]
        .iter()
        .map(|query| embedder.embed_query(query).unwrap());
    embedder
        .embed(&texts)
        .unwrap()
        .into_iter()
        .chain(queries)
        .map(|e| e.vector)
        .collect()
}

#[test]
fn prepared_weights_embed_exactly_as_the_safetensors_they_came_from() {
    // A copy of the model, so that this test alone decides what its directory holds.
    let source = quarry_testkit::model();
    let copy = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(&source.path).unwrap().flatten() {
        let name = entry.file_name();
        if entry.file_type().unwrap().is_file()
            && !name.to_string_lossy().starts_with(".quarry-prepared-")
        {
            fs::copy(entry.path(), copy.path().join(&name)).unwrap();
        }
    }
    let dir = ModelDir {
        path: copy.path().to_path_buf(),
        ..source.clone()
    };
    let options = EmbedderOptions::default();

    let first = Embedder::load(&dir, options).unwrap();
    assert_eq!(first.weights_source(), WeightsSource::Safetensors);
    let Some(file) = prepared_file(copy.path()) else {
        // The layers do not run on the host here (the scalar level, or a GPU): nothing to
        // prepare.
        quarry_kernels::skipped(
            "prepared",
            "a SIMD level with host kernels, on the CPU backend",
        );
        let again = Embedder::load(&dir, options).unwrap();
        assert_eq!(again.weights_source(), WeightsSource::Safetensors);
        return;
    };
    let expected = vectors(&first);
    drop(first);

    let second = Embedder::load(&dir, options).unwrap();
    assert_eq!(second.weights_source(), WeightsSource::Prepared);
    assert_eq!(vectors(&second), expected, "bit for bit");
    drop(second);

    // A file cut short (a full disk, say) is passed over, and the next load writes it again.
    let bytes = fs::read(&file).unwrap();
    fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let third = Embedder::load(&dir, options).unwrap();
    assert_eq!(third.weights_source(), WeightsSource::Safetensors);
    assert_eq!(vectors(&third), expected);
    assert_eq!(fs::read(&file).unwrap().len(), bytes.len());
    let fourth = Embedder::load(&dir, options).unwrap();
    assert_eq!(fourth.weights_source(), WeightsSource::Prepared);
}
