//! A search that finds chunks waiting for their vectors starts embedding them in the
//! background, so that a later search has them with no other command.

use std::path::Path;
use std::time::{Duration, Instant};

use quarry_testkit::shop;
use serde_json::Value;

use crate::support::{quarry_command, text};

/// `quarry search QUERY --json` in `repo` as a user runs it: background runs allowed.
fn search(repo: &Path, query: &str, extra: &[&str]) -> (Value, String) {
    let out = quarry_command(repo)
        .args(["search", query, "--json"])
        .args(extra)
        .env_remove("QUARRY_BACKGROUND")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        text(&out.stderr),
    )
}

fn waiting(found: &Value) -> u64 {
    let coverage = &found["coverage"];
    coverage["chunks"].as_u64().unwrap() - coverage["embedded"].as_u64().unwrap()
}

#[test]
fn a_later_search_has_the_vectors_with_no_other_command() {
    let repo = shop();
    // By words: nothing is embedded before it answers, and 36 chunks wait.
    let (first, _) = search(repo.path(), "retry_with_backoff", &["--mode", "lexical"]);
    assert_eq!(waiting(&first), 36, "{first}");
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let (later, stderr) = search(repo.path(), "retry with a growing pause", &[]);
        if waiting(&later) == 0 {
            let top: Vec<&Value> = (0..3).map(|i| &later["results"][i]["path"]).collect();
            assert!(top.contains(&&Value::from("lib/http_client.py")), "{later}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {} chunks waiting after 3 minutes: {stderr}",
            waiting(&later)
        );
    }
    // Gone when done: nothing holds the index for writing.
    let out = quarry_command(repo.path())
        .args(["index", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("waiting"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn no_background_and_the_config_key_leave_the_chunks_waiting() {
    let repo = shop();
    let (first, _) = search(
        repo.path(),
        "retry",
        &["--mode", "lexical", "--no-background"],
    );
    assert_eq!(waiting(&first), 36, "{first}");
    std::fs::create_dir_all(repo.path().join(".quarry")).unwrap();
    std::fs::write(
        repo.path().join(".quarry/config.toml"),
        "[index]\nbackground = false\n",
    )
    .unwrap();
    // The note says what embeds them instead.
    let out = quarry_command(repo.path())
        .args(["search", "retry with a growing pause"])
        .env_remove("QUARRY_BACKGROUND")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(stderr.contains("`quarry index` embeds them"), "{stderr}");
    std::thread::sleep(Duration::from_secs(3));
    let (later, _) = search(repo.path(), "retry", &["--mode", "lexical"]);
    assert_eq!(waiting(&later), 36, "nothing embedded them: {later}");
}
