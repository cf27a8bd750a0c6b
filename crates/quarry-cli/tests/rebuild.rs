//! `quarry index --force` builds the new index beside the live one: searches while it runs
//! answer from the index as it was, in full, and a killed rebuild changes nothing.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

use support::{indexed_shop, json, quarry, quarry_command, text};

fn start_rebuild(root: &Path) -> Child {
    quarry_command(root)
        .args(["index", "--force"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The paths of a search's results, after checking that it answered.
fn search(root: &Path, query: &str, mode: &str) -> Vec<String> {
    let out = quarry(root, &["search", query, "--mode", mode, "--json"]);
    assert!(
        out.status.success(),
        "a search beside the rebuild failed: {}",
        text(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn searches_beside_a_forced_rebuild_answer_from_the_live_index() {
    let repo = indexed_shop();
    let lexical = search(repo.path(), "retry with backoff", "lexical");
    let hybrid = search(repo.path(), "retry a failed request", "hybrid");
    assert!(!lexical.is_empty() && !hybrid.is_empty());
    let answers_as_before = || {
        assert_eq!(
            search(repo.path(), "retry with backoff", "lexical"),
            lexical
        );
        assert_eq!(
            search(repo.path(), "retry a failed request", "hybrid"),
            hybrid
        );
    };

    let mut rebuild = start_rebuild(repo.path());
    let mut beside = 0;
    let deadline = Instant::now() + Duration::from_secs(300);
    while rebuild.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the rebuild did not finish");
        answers_as_before();
        let status = json(repo.path(), &["status", "--json"]);
        assert_eq!(status["coverage"]["embedded"], status["coverage"]["chunks"]);
        beside += 1;
    }
    let finished = rebuild.wait_with_output().unwrap();
    assert!(finished.status.success(), "{}", text(&finished.stderr));
    assert!(beside > 0, "no search ran beside the rebuild");
    answers_as_before();
    assert!(!repo.path().join(".quarry/rebuild").exists());
}

#[test]
fn a_killed_rebuild_leaves_the_live_index_as_it_was() {
    let repo = indexed_shop();
    let before = search(repo.path(), "retry a failed request", "hybrid");

    let mut rebuild = start_rebuild(repo.path());
    // Killed once it has started building beside the live index.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !repo.path().join(".quarry/rebuild/index.redb").exists() {
        assert!(Instant::now() < deadline, "the rebuild never started");
        if rebuild.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    rebuild.kill().unwrap();
    rebuild.wait().unwrap();

    assert_eq!(
        search(repo.path(), "retry a failed request", "hybrid"),
        before
    );
    let report = json(repo.path(), &["index", "--json"]);
    assert_eq!(report["files_read"], 0, "the live index is whole");
    assert_eq!(report["chunks_embedded"], 0);
    assert!(
        !repo.path().join(".quarry/rebuild").exists(),
        "the next writer removes what the killed rebuild left"
    );
}
