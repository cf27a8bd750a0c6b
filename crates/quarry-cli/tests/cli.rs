//! The `quarry` binary as a user runs it, on a copy of `fixtures/engine/shop`.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn quarry(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn search_indexes_first_then_answers_in_text_and_json() {
    let repo = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/shop");
    copy_dir(&fixture, repo.path());

    let out = quarry(
        repo.path(),
        &["search", "read the settings file", "-k", "3"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("indexed in"),
        "{}",
        text(&out.stderr)
    );
    let first = text(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert!(first.starts_with("src/config.rs:"), "{}", text(&out.stdout));
    assert!(repo.path().join(".quarry/index.redb").exists());

    let out = quarry(repo.path(), &["search", "retry_with_backoff", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("indexed in"),
        "nothing changed, nothing re-indexed"
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let best = &json["results"][0];
    assert_eq!(best["path"], "lib/http_client.py");
    assert_eq!(best["chunk_id"].as_str().unwrap().len(), 32);
    let score = best["score"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&score));

    let out = quarry(repo.path(), &["index", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["files_read"], 0);
}

#[test]
fn bad_input_fails_with_a_message_and_a_non_zero_exit() {
    let dir = tempfile::tempdir().unwrap();
    let out = quarry(dir.path(), &["index", "no/such/dir"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no/such/dir: not a directory"),
        "{}",
        text(&out.stderr)
    );

    let out = quarry(dir.path(), &["search", "  ", "--mode", "lexical"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("the query is empty"),
        "{}",
        text(&out.stderr)
    );
}
