//! The precision the model computes in, as a user chooses it (`QUARRY_PRECISION`, `[index]
//! precision`): recorded in the index, a different one a clear error, and the `f32`
//! fallback answering as the fast path does.

use std::path::Path;
use std::process::Output;

use quarry_engine::model::{BackendChoice, Precision, PrecisionChoice};
use quarry_testkit::shop;
use serde_json::Value;

mod support;

use support::{quarry_with, text};

/// `quarry` with `args` in `dir`, with `QUARRY_PRECISION` set to `precision` (or unset).
fn quarry(dir: &Path, precision: Option<&str>, args: &[&str]) -> Output {
    quarry_with(dir, args, &[("QUARRY_PRECISION", precision)])
}

/// The (path, start line) of a hybrid search's results.
fn answers(root: &Path, precision: Option<&str>, query: &str) -> Vec<(String, u64)> {
    let out = quarry(
        root,
        precision,
        &["search", query, "--json", "--limit", "5"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_owned(),
                r["start_line"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn an_index_keeps_its_precision_and_the_f32_fallback_answers_as_the_fast_path() {
    // `auto` reads an index in its own precision; `index --force` builds in the fastest.
    let fast = PrecisionChoice::Auto.resolve(BackendChoice::Cpu).unwrap();
    let repo = shop();
    let root = repo.path();
    let out = quarry(root, Some("f32"), &["index"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let queries = [
        "retry a failed request",
        "compute the order total",
        "parse money",
    ];
    let full: Vec<_> = queries
        .iter()
        .map(|q| answers(root, Some("f32"), q))
        .collect();

    if fast != Precision::F32 {
        // Left to auto, the precision is the index's: the same answers as in f32.
        for (query, full) in queries.iter().zip(&full) {
            assert_eq!(&answers(root, None, query), full, "{query}");
        }
        // Another asked for by name meets an index made in f32: refused, with what to do.
        let out = quarry(
            root,
            Some(fast.name()),
            &["search", "retry", "--mode", "semantic"],
        );
        assert!(!out.status.success());
        let message = text(&out.stderr);
        assert!(
            message.contains(" f32") && message.contains(&format!(" {fast}")),
            "{message}"
        );
        assert!(message.contains("quarry index --force"), "{message}");
    } else {
        let test = "precision::an_index_keeps_its_precision (a reduced precision)";
        quarry_kernels::skipped(test, "a CPU that runs a reduced precision");
    }
    let out = quarry(root, None, &["index", "--force"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for (query, full) in queries.iter().zip(&full) {
        let reduced = answers(root, None, query);
        // The same best answer, and nearly the same five.
        assert_eq!(reduced.first(), full.first(), "{query}");
        let shared = reduced.iter().filter(|a| full.contains(a)).count();
        assert!(shared >= 4, "{query}: {reduced:?} against {full:?}");
    }

    let out = quarry(root, None, &["model", "info", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["precision"], fast.name());
}

#[test]
fn an_unknown_precision_is_refused_with_the_choices() {
    let repo = shop();
    let out = quarry(repo.path(), Some("fp16"), &["search", "retry"]);
    assert!(!out.status.success());
    let message = text(&out.stderr);
    assert!(message.contains("QUARRY_PRECISION"), "{message}");
    assert!(message.contains("auto, f32, bf16 or int8"), "{message}");
}
