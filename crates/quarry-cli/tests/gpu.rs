//! The GPU path end to end: `quarry index` and `quarry search` on Burn's WGPU backend give
//! the CPU backend's answers. Built only with the `wgpu` feature; where no physical GPU
//! exists, CI runs it on Mesa's lavapipe (a software Vulkan adapter) through
//! `QUARRY_WGPU_ALLOW_SOFTWARE=1`, which these tests set.

use std::path::Path;

use quarry_testkit::shop;
use serde_json::Value;

mod support;

use support::{quarry_with, text, without_vector_cache};

/// Both backends in `f32`: the precision the GPU computes in, so that both indexes carry
/// the same model fingerprint and differ only in the backend.
fn on(backend: &'static str) -> [(&'static str, Option<&'static str>); 3] {
    [
        ("QUARRY_BACKEND", Some(backend)),
        ("QUARRY_PRECISION", Some("f32")),
        ("QUARRY_WGPU_ALLOW_SOFTWARE", Some("1")),
    ]
}

fn json(dir: &Path, args: &[&str], backend: &'static str) -> Value {
    let out = quarry_with(dir, args, &on(backend));
    assert!(
        out.status.success(),
        "{backend}: {args:?}: {}",
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn model_info_names_the_wgpu_adapter() {
    let repo = shop();
    let info = json(repo.path(), &["model", "info", "--json"], "gpu");
    let backend = info["backend"].as_str().unwrap();
    eprintln!("quarry model info: backend {backend}");
    assert!(backend.starts_with("wgpu on "), "{backend}");
    assert_eq!(info["precision"], "f32");
}

/// Semantic search ranks by the vectors alone: the strictest comparison of the two
/// backends' embeddings through the whole product (index, store, ANN, ranking).
const QUERIES: [&str; 4] = [
    "read the settings file",
    "retry a request after a failure with a growing delay",
    "compute the total price of the items in the cart",
    "where are passwords hashed",
];

#[test]
fn index_and_search_on_wgpu_answer_as_on_the_cpu() {
    let (cpu, gpu) = (shop(), shop());
    for (repo, backend) in [(&cpu, "cpu"), (&gpu, "gpu")] {
        // The GPU embeds every chunk itself, not the CPU's vectors from the machine's cache.
        without_vector_cache(repo.path());
        let report = json(repo.path(), &["index", "--json"], backend);
        assert_eq!(report["chunks_pending"], 0, "{backend}: {report}");
    }
    for query in QUERIES {
        let top = |repo: &Path, backend| {
            let found = json(
                repo,
                &["search", query, "--mode", "semantic", "-k", "10", "--json"],
                backend,
            );
            let mut ids: Vec<String> = found["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|result| result["chunk_id"].as_str().unwrap().to_owned())
                .collect();
            ids.sort();
            ids
        };
        let (on_cpu, on_gpu) = (top(cpu.path(), "cpu"), top(gpu.path(), "gpu"));
        assert_eq!(on_cpu.len(), 10, "{query}");
        assert_eq!(on_cpu, on_gpu, "{query}: the top 10 differ");
    }
}
