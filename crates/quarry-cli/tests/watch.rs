//! `quarry mcp` following the working tree, driven by the official MCP Python SDK
//! (`tests/mcp_watch.py`): an agent's edit, deletion and rename are in the next search, and a
//! checkout of 2,000 files ends in the index a clean build makes.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;

use quarry_engine::model::EmbedderOptions;
use quarry_engine::{Engine, EngineOptions};
use serde_json::{Value, json};

mod support;

use support::{indexed_shop, mcp_client, quarry_ok, text};

/// Files the `storm` branch adds.
const STORM_FILES: usize = 2000;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=quarry",
            "-c",
            "user.email=quarry@example.com",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
}

/// The shop committed on branch `main`, checked out there, with a branch `branch` whose one
/// commit adds what `add` writes into the tree.
fn shop_with_a_branch(branch: &str, add: impl FnOnce(&Path)) -> tempfile::TempDir {
    let repo = quarry_testkit::shop();
    let dir = repo.path();
    fs::write(dir.join(".gitignore"), ".quarry/\n").unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "shop"]);
    git(dir, &["checkout", "-q", "-b", branch]);
    add(dir);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", branch]);
    git(dir, &["checkout", "-q", "main"]);
    repo
}

/// The shop on branch `main`, with a branch `storm` that adds [`STORM_FILES`] Python modules.
fn shop_with_a_storm_branch() -> tempfile::TempDir {
    let repo = shop_with_a_branch("storm", |dir| {
        fs::create_dir(dir.join("storm")).unwrap();
        for i in 0..STORM_FILES {
            fs::write(
                dir.join(format!("storm/handler_{i:04}.py")),
                format!(
                    "def storm_handler_{i}(payload):\n    \"\"\"Handles storm event {i}.\"\"\"\n    \
                     return payload + {i}\n"
                ),
            )
            .unwrap();
        }
    });
    assert!(!repo.path().join("storm").exists());
    repo
}

/// Each indexed file's chunk ids, as the index at `root` holds them.
fn chunk_ids(root: &Path) -> BTreeMap<String, Vec<u128>> {
    let options = EngineOptions {
        embedder: EmbedderOptions::default().with_env().unwrap(),
        ..EngineOptions::default()
    };
    let engine = Engine::open_existing(root, quarry_testkit::model(), options).unwrap();
    engine
        .store()
        .files()
        .unwrap()
        .into_iter()
        .map(|file| {
            let mut ids = file.chunk_ids;
            ids.sort_unstable();
            (file.path, ids)
        })
        .collect()
}

/// The (path, symbol) of each result, as the client listed them.
fn pairs(value: &Value) -> Vec<(String, Option<String>)> {
    serde_json::from_value(value.clone()).unwrap()
}

#[test]
fn a_serving_mcp_follows_edits_deletions_renames_and_a_checkout_storm() {
    let repo = shop_with_a_storm_branch();
    let dir = repo.path();
    let seen = mcp_client("mcp_watch.py", &[dir]);
    let watch = &seen["start_status"]["watch"];
    assert_eq!(watch["state"], "watching", "{seen}");
    assert_eq!(watch["files_waiting"], 0, "{seen}");

    // The first search after the edit finds it: no pause, no retry.
    let edit = pairs(&seen["edit_first_search"]);
    assert_eq!(
        edit.first()
            .map(|(path, symbol)| (path.as_str(), symbol.as_deref())),
        Some(("src/cart.rs", Some("frobnicate_widget_registry"))),
        "{seen}"
    );
    assert!(
        pairs(&seen["edit_semantic"])
            .iter()
            .any(|(_, symbol)| symbol.as_deref() == Some("frobnicate_widget_registry")),
        "its vector never came: {seen}"
    );
    let paths = |key: &str| -> Vec<String> { serde_json::from_value(seen[key].clone()).unwrap() };
    let shipping = "src/shipping.rs".to_owned();
    assert!(paths("before_delete_paths").contains(&shipping), "{seen}");
    assert!(!paths("deleted_paths").contains(&shipping), "{seen}");
    let renamed = paths("renamed_paths");
    assert!(renamed.contains(&"lib/money.js".to_owned()), "{seen}");
    assert!(!renamed.contains(&"lib/format.js".to_owned()), "{seen}");

    // The checkout storm: every client answered, the first search after it saw it, and
    // the index settled with every chunk embedded.
    assert_eq!(seen["checkout"], true, "{seen}");
    assert_eq!(seen["errors"], json!([]), "{seen}");
    assert!(seen["calls"].as_u64().unwrap() > 10, "{seen}");
    assert_eq!(
        pairs(&seen["storm_first_search"]),
        [(
            "storm/handler_1234.py".to_owned(),
            Some("storm_handler_1234".to_owned())
        )],
        "{seen}"
    );
    let status = &seen["storm_status"];
    assert_eq!(status["watch"]["files_waiting"], 0, "{seen}");
    assert_eq!(status["coverage"]["chunks"], status["coverage"]["embedded"]);

    // The index the server followed its way to is the one a clean build makes.
    let clean = tempfile::tempdir().unwrap();
    quarry_testkit::copy_dir(dir, clean.path());
    fs::remove_dir_all(clean.path().join(".quarry")).unwrap();
    quarry_ok(clean.path(), &["index"]);
    let followed = chunk_ids(dir);
    assert_eq!(followed.len(), 8 + STORM_FILES, "{:?}", followed.keys());
    assert!(
        followed == chunk_ids(clean.path()),
        "the followed index differs from a clean build"
    );
}

/// `--no-watch`: an edit waits for the index tool's build. `--poll`: an edit is found once
/// the tree has been looked at, a `git checkout` by the next search. And a watched root removed under the server: a clear
/// message, not a crash.
#[test]
fn unwatched_and_polled_trees_and_a_removed_root() {
    let repo = indexed_shop();
    let dir = repo.path();
    let doomed = quarry_testkit::shop();
    // A branch for the polled server to be checked out under it.
    let polled = shop_with_a_branch("extra", |at| {
        fs::write(
            at.join("src/extra.rs"),
            "pub fn polled_checkout_marker() -> u32 {\n    7\n}\n",
        )
        .unwrap();
    });
    let seen = mcp_client("mcp_watch_edges.py", &[dir, doomed.path(), polled.path()]);
    assert_eq!(seen["watch"]["state"], "off", "{seen}");
    assert_eq!(seen["before_build"], json!([]), "{seen}");
    assert_eq!(seen["after_build"], json!(["src/cart.rs"]), "{seen}");
    assert_eq!(seen["polled_watch"]["state"], "polling", "{seen}");
    assert_eq!(seen["polled_found"], json!(["src/cart.rs"]), "{seen}");
    // A checkout is seen by the next search, before the tree is polled: the git state.
    assert_eq!(seen["checkout_found"], json!(["src/extra.rs"]), "{seen}");
    let gone = seen["root_gone"].as_str().unwrap();
    assert!(gone.contains("is gone (removed or moved)"), "{seen}");
    assert_eq!(seen["still_serving"], true, "{seen}");
}
