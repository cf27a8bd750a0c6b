//! The work that reads no model weights (an index run's first phase, a search by words,
//! status) runs where the model's files are not here and cannot be fetched; what needs them
//! says how to get them. Then, with the model, the chunks that waited are embedded into the
//! same index.

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::{indexed_shop, json, quarry_with, text, write_file};

/// A machine without the model: an empty model cache, and nowhere to fetch it from.
struct NoModel {
    cache: tempfile::TempDir,
}

impl NoModel {
    fn new() -> Self {
        Self {
            cache: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, dir: &Path, args: &[&str]) -> Output {
        let env = [
            ("QUARRY_OFFLINE", Some("1")),
            ("QUARRY_CACHE_DIR", self.cache.path().to_str()),
            ("QUARRY_MODEL_DIR", None),
        ];
        quarry_with(dir, args, &env)
    }

    fn ok(&self, dir: &Path, args: &[&str]) -> Output {
        let out = self.run(dir, args);
        assert!(
            out.status.success(),
            "quarry {args:?} without the model: {}",
            text(&out.stderr)
        );
        out
    }

    fn json(&self, dir: &Path, args: &[&str]) -> Value {
        let out = self.ok(dir, args);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    fn failure(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.run(dir, args);
        assert!(
            !out.status.success(),
            "quarry {args:?} should fail without the model: {}",
            text(&out.stdout)
        );
        text(&out.stderr)
    }

    /// The paths of a search by words for `query`, best first.
    fn found(&self, dir: &Path, query: &str) -> Vec<String> {
        let found = self.json(dir, &["search", "--mode", "lexical", query, "--json"]);
        paths(&found)
    }
}

fn paths(search: &Value) -> Vec<String> {
    search["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| result["path"].as_str().unwrap().to_owned())
        .collect()
}

/// A file the shop does not have, with a name found nowhere else.
const NEW_FILE: (&str, &str) = (
    "src/invoice.rs",
    "/// Totals an invoice's lines.\npub fn total_invoice_lines(lines: &[u64]) -> u64 {\n    \
     lines.iter().sum()\n}\n",
);

#[test]
fn a_fresh_repository_is_searched_by_words_without_the_model() {
    let repo = quarry_testkit::shop();
    let dir = repo.path();
    let none = NoModel::new();

    let out = none.ok(
        dir,
        &["search", "--mode", "lexical", "load_config", "--json"],
    );
    assert!(
        text(&out.stderr).contains("the embedding model is not here"),
        "{}",
        text(&out.stderr)
    );
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["results"][0]["path"], "src/config.rs", "{found}");
    // Nothing was embedded, and nothing was downloaded into the cache.
    assert_eq!(found["coverage"]["embedded"], 0, "{found}");
    assert!(found["coverage"]["chunks"].as_u64() > Some(0), "{found}");
    assert_eq!(std::fs::read_dir(none.cache.path()).unwrap().count(), 0);
}

#[test]
fn index_lexical_only_builds_and_updates_the_index_then_the_model_embeds_what_waits() {
    let repo = quarry_testkit::shop();
    let dir = repo.path();
    let none = NoModel::new();

    // The first phase alone: every file chunked, no vector.
    let report = none.json(dir, &["index", "--lexical-only", "--json"]);
    assert!(report["files_read"].as_u64() > Some(0), "{report}");
    assert_eq!(report["chunks_embedded"], 0, "{report}");
    let waiting = report["chunks_pending"].as_u64().unwrap();
    assert!(waiting > 0, "{report}");

    // A file written afterwards is searchable by its words, by a search or another run.
    let (path, source) = NEW_FILE;
    write_file(dir, path, source);
    assert_eq!(none.found(dir, "total_invoice_lines")[0], path);
    write_file(
        dir,
        "lib/tax.py",
        "def vat_for_region(region):\n    return 0.2\n",
    );
    let report = none.json(dir, &["index", "--lexical-only", "--json"]);
    assert_eq!(report["files_read"], 1, "{report}");
    assert_eq!(none.found(dir, "vat_for_region")[0], "lib/tax.py");

    // Status says the vectors are missing, how many wait, and how to get the model.
    let status = none.json(dir, &["status", "--json"]);
    assert_eq!(status["model_missing"], true, "{status}");
    let waiting = status["coverage"]["chunks"].as_u64().unwrap();
    assert!(waiting > 0, "{status}");
    assert_eq!(status["coverage"]["embedded"], 0, "{status}");
    let out = none.ok(dir, &["status"]);
    let shown = text(&out.stdout);
    assert!(
        shown.contains(&format!("{waiting} wait for vectors"))
            && shown.contains("quarry model fetch"),
        "{shown}"
    );

    // With the model here, a plain run embeds the chunks that waited: nothing is read
    // again, nothing rebuilt, and the index recorded the model it now finds.
    quarry_testkit::model();
    let report = json(dir, &["index", "--json"]);
    assert_eq!(report["files_read"], 0, "{report}");
    assert_eq!(report["files_removed"], 0, "{report}");
    assert_eq!(
        report["chunks_embedded"].as_u64(),
        Some(waiting),
        "{report}"
    );
    let embedded = json(dir, &["status", "--json"]);
    assert_eq!(embedded["model_missing"], false, "{embedded}");
    assert_eq!(embedded["model"], status["model"], "{embedded}");
    assert_eq!(embedded["coverage"]["embedded"].as_u64(), Some(waiting));
    let hybrid = json(dir, &["search", "sum the lines of an invoice", "--json"]);
    assert!(paths(&hybrid).contains(&path.to_owned()), "{hybrid}");
}

#[test]
fn an_index_built_with_the_model_takes_new_files_without_it() {
    let repo = indexed_shop();
    let dir = repo.path();
    let none = NoModel::new();
    let (path, source) = NEW_FILE;
    write_file(dir, path, source);

    assert_eq!(none.found(dir, "total_invoice_lines")[0], path);
    let status = none.json(dir, &["status", "--json"]);
    assert_eq!(status["model_missing"], true, "{status}");
    let coverage = &status["coverage"];
    assert!(
        coverage["embedded"].as_u64() < coverage["chunks"].as_u64(),
        "{status}"
    );

    // Back with the model: the new chunks are embedded, the rest kept.
    let report = json(dir, &["index", "--json"]);
    assert_eq!(report["files_read"], 0, "{report}");
    assert!(report["chunks_embedded"].as_u64() > Some(0), "{report}");
    let status = json(dir, &["status", "--json"]);
    assert_eq!(status["coverage"]["embedded"], status["coverage"]["chunks"]);
}

#[test]
fn work_that_needs_the_model_says_how_to_get_it_and_what_works_without_it() {
    let repo = quarry_testkit::shop();
    let dir = repo.path();
    let none = NoModel::new();

    for args in [
        &["index"][..],
        &["search", "load the configuration"],
        &["search", "--mode", "semantic", "load the configuration"],
    ] {
        let error = none.failure(dir, args);
        for needed in [
            "quarry model fetch",
            "--lexical-only",
            "--mode lexical",
            "offline",
        ] {
            assert!(error.contains(needed), "{args:?}: {needed} in {error}");
        }
    }
    // Refused before anything was written.
    assert!(!dir.join(".quarry").exists());

    // A search by words that asks for every vector builds the first phase and answers.
    let found = none.json(
        dir,
        &[
            "search",
            "--mode",
            "lexical",
            "--wait",
            "load_config",
            "--json",
        ],
    );
    assert_eq!(found["results"][0]["path"], "src/config.rs", "{found}");
}
