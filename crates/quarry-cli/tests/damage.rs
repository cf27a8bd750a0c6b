//! A damaged index through the binary: damage that fails a search fails `status` too (exit
//! non-zero, naming what is damaged and the repair), damage to the lexical index is repaired
//! by the next search that indexes (never a crash), and after edits indexed one by one the
//! lexical index ranks exactly as a clean build of the same files. Words only (no model
//! runs) but for one index with its vectors.

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

    let (passed, report) = status(repo.path(), &[]);
    assert!(!passed, "damage fails status: {report}");
    assert!(
        report.contains("is damaged") && report.contains("quarry index"),
        "status says what is damaged and what to do: {report}"
    );
    // A search indexes first, and the index run rebuilds the lexical index from the database.
    assert_eq!(answers(repo.path()), before);
    let (passed, report) = status(repo.path(), &[]);
    assert!(passed && !report.contains("is damaged"), "{report}");
}

/// `quarry status` with `args` in `root`: whether it succeeded, and what it said (both
/// streams).
fn status(root: &Path, args: &[&str]) -> (bool, String) {
    let out = quarry(root, &[&["status"], args].concat());
    let said = text(&out.stdout) + &text(&out.stderr);
    assert!(!said.contains("panicked at"), "a crash: {said}");
    (out.status.success(), said)
}

/// A copy of the shop indexed by its words (a search's first phase).
fn indexed_shop() -> tempfile::TempDir {
    let repo = shop();
    answers(repo.path());
    repo
}

/// Flips `len` bytes of `file` from `offset` on (each inverted), as far as the file goes.
fn flip(file: &Path, offset: usize, len: usize) {
    let mut bytes = fs::read(file).unwrap();
    let end = (offset + len).min(bytes.len());
    for byte in &mut bytes[offset..end] {
        *byte = !*byte;
    }
    fs::write(file, bytes).unwrap();
}

/// A lexical search of the shop in `root`: whether it answered, and its standard error.
fn search(root: &Path) -> (bool, String) {
    let out = quarry(root, &["search", "total with tax", "--mode", "lexical"]);
    (out.status.success(), text(&out.stderr))
}

/// The damage a hostile probe made: 512 bytes flipped 8 KiB into the database made every
/// search fail ("the index is corrupt (redb panicked ...)") while `status` said the index
/// was up to date and exited 0 (it read no table a search reads but the files and chunks).
#[test]
fn a_flipped_database_page_that_fails_searches_fails_status() {
    let repo = indexed_shop();
    flip(&repo.path().join(".quarry/index.redb"), 8 << 10, 512);
    let (answered, said) = search(repo.path());
    assert!(
        !answered && said.contains("the index is corrupt"),
        "the damage fails a search: {said}"
    );
    for args in [&[][..], &["--json"]] {
        let (passed, report) = status(repo.path(), args);
        assert!(!passed, "{args:?}: {report}");
        assert!(
            report.contains("index.redb")
                && report
                    .contains("the index database is damaged: rebuild with `quarry index --force`"),
            "{args:?}: status names the file, the damage and the repair: {report}"
        );
        assert!(!report.contains("up to date"), "{report}");
    }
    let out = quarry(repo.path(), &["status", "--json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = json["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("the index database is damaged")),
        "{json}"
    );
}

/// Every `step` bytes of the database of the index at `pristine` flipped in turn (512 bytes
/// each time, on a fresh copy): wherever a search that reads the index as it is fails
/// (another process holds the writer's lock, so the search answers from the last commit),
/// `status` fails too; wherever a search that indexes first fails and `status` passes,
/// `status --deep` fails, and that is so on a page or two at most (what only a writer's open
/// reads: redb's own records, beyond its record of free pages). Whenever `status` fails it
/// names the repair.
fn flip_each_page(pristine: &Path, step: usize) {
    let database = Path::new(".quarry/index.redb");
    let size = fs::metadata(pristine.join(database)).unwrap().len() as usize;
    let mut missed = Vec::new();
    let mut writer_only = Vec::new();
    let mut found = 0;
    for offset in (0..size).step_by(step) {
        let case = tempfile::tempdir().unwrap();
        quarry_testkit::copy_dir(pristine, case.path());
        flip(&case.path().join(database), offset, 512);
        let (passed, report) = status(case.path(), &[]);
        if !passed {
            found += 1;
            assert!(
                report.contains("quarry index --force"),
                "{offset}: {report}"
            );
        }
        let lock = fs::File::open(case.path().join(".quarry/writer.lock")).unwrap();
        lock.try_lock().unwrap();
        let (read, said) = search(case.path());
        drop(lock);
        if !read && passed {
            missed.push(format!(
                "{offset}: a search reading the index fails ({said})"
            ));
        }
        let (indexed, said) = search(case.path());
        if !indexed && passed {
            match status(case.path(), &["--deep"]).0 {
                true => missed.push(format!(
                    "{offset}: a search that indexes fails ({said}), status --deep passes"
                )),
                false => writer_only.push(format!("{offset}: {said}")),
            }
        }
    }
    assert!(
        missed.is_empty(),
        "status passed where:\n{}",
        missed.join("\n")
    );
    assert!(
        writer_only.len() <= 2,
        "only status --deep found what fails a search that indexes, at:\n{}",
        writer_only.join("\n")
    );
    assert!(
        found > 0,
        "no flip was found damaging: the sweep reads nothing"
    );
}

/// An index of the first phase, every 2 KiB.
#[test]
fn wherever_a_flipped_database_page_fails_a_search_status_fails() {
    flip_each_page(indexed_shop().path(), 2 << 10);
}

/// An index with its vectors (the model runs), every page: every index run reads the
/// vectors' table whole to bring the saved rows up to date.
#[test]
fn wherever_a_flipped_page_of_an_embedded_index_fails_a_search_status_fails() {
    let repo = shop();
    let out = quarry(repo.path(), &["index"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    flip_each_page(repo.path(), 4 << 10);
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
