//! The machine's vector cache through the binary: no chunk text embedded twice for one
//! model and precision, whatever copy of a repository it is in.

use std::path::Path;

use quarry_testkit::shop;
use serde_json::Value;

use crate::support::{quarry_command, text, write_file};

/// `quarry index --json` in `repo` with the cache in `cache`.
fn index(repo: &Path, cache: &Path) -> Value {
    let out = quarry_command(repo)
        .args(["index", "--json"])
        .env("QUARRY_VECTOR_CACHE_DIR", cache)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn count(report: &Value, field: &str) -> u64 {
    report[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field}: {report}"))
}

#[test]
fn a_second_copy_of_a_repository_takes_every_vector_from_the_machines_cache() {
    let cache = tempfile::tempdir().unwrap();
    let first = shop();
    let report = index(first.path(), cache.path());
    let chunks = count(&report, "chunks_embedded");
    assert!(chunks > 20, "{report}");
    assert_eq!(count(&report, "chunks_from_cache"), 0, "{report}");

    // A clone elsewhere: every chunk text was embedded once already.
    let second = shop();
    let report = index(second.path(), cache.path());
    assert_eq!(count(&report, "chunks_embedded"), chunks, "{report}");
    assert_eq!(count(&report, "chunks_from_cache"), chunks, "{report}");
    assert_eq!(report["warnings"], Value::Array(vec![]), "{report}");
    // And it answers by meaning as the first does.
    let top = |repo: &Path| {
        let out = quarry_command(repo)
            .args(["search", "where are passwords hashed", "--mode", "semantic"])
            .args(["-k", "5", "--json"])
            .output()
            .unwrap();
        let found: Value = serde_json::from_slice(&out.stdout).unwrap();
        found["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["path"].clone(), r["score"].as_f64().unwrap()))
            .collect::<Vec<_>>()
    };
    assert_eq!(top(first.path()), top(second.path()));

    // A new function is the one text the model meets.
    write_file(
        second.path(),
        "src/lib_extra.rs",
        "/// Rounds a price to whole cents.\npub fn round_cents(price: f64) -> f64 {\n    (price * 100.0).round() / 100.0\n}\n",
    );
    let report = index(second.path(), cache.path());
    assert_eq!(count(&report, "chunks_embedded"), 1, "{report}");
    assert_eq!(count(&report, "chunks_from_cache"), 0, "{report}");
}

#[test]
fn two_processes_share_the_cache_and_a_damaged_one_is_started_anew() {
    let cache = tempfile::tempdir().unwrap();
    let (a, b) = (shop(), shop());
    let spawn = |repo: &Path| {
        quarry_command(repo)
            .args(["index", "--json"])
            .env("QUARRY_VECTOR_CACHE_DIR", cache.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (spawn(a.path()), spawn(b.path()));
    for child in [first, second] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["warnings"], Value::Array(vec![]), "{report}");
        assert!(count(&report, "chunks_embedded") > 20, "{report}");
    }

    // Bytes that are not a cache at all: moved aside, said, and the run goes on.
    let files: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "one file per model: {files:?}");
    std::fs::write(&files[0], vec![0x5a; 256 << 10]).unwrap();
    let c = shop();
    let report = index(c.path(), cache.path());
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("started anew"), "{report}");
    assert_eq!(count(&report, "chunks_from_cache"), 0, "{report}");
    // The new cache serves the next copy.
    let d = shop();
    let report = index(d.path(), cache.path());
    assert_eq!(
        count(&report, "chunks_from_cache"),
        count(&report, "chunks_embedded"),
        "{report}"
    );
}
