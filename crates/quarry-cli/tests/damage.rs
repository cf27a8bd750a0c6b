//! The lexical index through the binary: damage to it is reported by `status` and repaired by
//! the next search that indexes (never a crash), and after edits indexed one by one it ranks
//! exactly as a clean build of the same files. Words only: no model runs.

use std::fs;
use std::path::{Path, PathBuf};

use quarry_testkit::shop;
use serde_json::Value;

mod support;

use support::{quarry, text};

const QUERIES: &[&str] = &[
    "total with tax",
    "retry backoff",
    "load config",
    "deploy",
    "cart item price",
];

/// Each query's results as the JSON shows them: ids, paths, lines and scores.
fn answers(root: &Path) -> Vec<Value> {
    QUERIES
        .iter()
        .map(|query| {
            let out = quarry(
                root,
                &["search", query, "--mode", "lexical", "--json", "-k", "20"],
            );
            assert!(out.status.success(), "{query}: {}", text(&out.stderr));
            assert!(
                !text(&out.stderr).contains("panicked"),
                "{}",
                text(&out.stderr)
            );
            let json: Value = serde_json::from_slice(&out.stdout).unwrap();
            json["results"].clone()
        })
        .collect()
}

/// The lexical index's files with `extension`.
fn segment_files(root: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(root.join(".quarry/lexical"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files
}

#[test]
fn a_damaged_segment_is_reported_then_repaired_without_a_crash() {
    let repo = shop();
    let before = answers(repo.path());
    // 4 kB of seeded noise over the start of every postings file.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for file in segment_files(repo.path(), "idx") {
        let mut bytes = fs::read(&file).unwrap();
        for byte in bytes.iter_mut().take(4096) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *byte = state as u8;
        }
        fs::write(&file, bytes).unwrap();
    }

    let status = quarry(repo.path(), &["status"]);
    let report = text(&status.stdout) + &text(&status.stderr);
    assert!(status.status.success(), "{report}");
    assert!(
        report.contains("is damaged") && report.contains("quarry index"),
        "status says what is damaged and what to do: {report}"
    );
    // A search indexes first, and the index run rebuilds the lexical index from the database.
    assert_eq!(answers(repo.path()), before);
    let status = quarry(repo.path(), &["status"]);
    let report = text(&status.stdout) + &text(&status.stderr);
    assert!(!report.contains("is damaged"), "{report}");
}

#[test]
fn edits_indexed_one_by_one_rank_as_a_clean_build() {
    let edited = shop();
    answers(edited.path());
    let edits: [(&str, Option<&str>); 5] = [
        (
            "src/cart.rs",
            Some(
                "pub fn total_with_tax(items: &[u32], rate: f64) -> f64 {\n    items.iter().sum::<u32>() as f64 * (1.0 + rate)\n}\n",
            ),
        ),
        ("scripts/deploy.sh", None),
        (
            "lib/retry_policy.py",
            Some(
                "def retry_with_backoff(call, attempts=5):\n    \"\"\"Retry a call, doubling the delay each time.\"\"\"\n    return call()\n",
            ),
        ),
        (
            "src/cart.rs",
            Some(
                "/// The price of an item in the cart.\npub fn item_price(cents: u32) -> u32 {\n    cents\n}\n",
            ),
        ),
        (
            "src/config.rs",
            Some("pub fn load_config_file(path: &str) -> String {\n    path.to_owned()\n}\n"),
        ),
    ];
    for (path, content) in edits {
        let file = edited.path().join(path);
        match content {
            Some(content) => fs::write(&file, content).unwrap(),
            None => fs::remove_file(&file).unwrap(),
        }
        // Each search indexes the edit before it answers.
        answers(edited.path());
    }

    let clean = tempfile::tempdir().unwrap();
    quarry_testkit::copy_dir(edited.path(), clean.path());
    fs::remove_dir_all(clean.path().join(".quarry")).unwrap();
    assert_eq!(answers(edited.path()), answers(clean.path()));
}
