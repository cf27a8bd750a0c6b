//! A huge file, its size limit raised, is indexed up to the chunk cap and no further, and
//! the run names it, the cap and the chunks left out (issue 68: a 50 MB text file made
//! 110,638 chunks and took 832 MB).

use std::fs;

use quarry_engine::MAX_CHUNKS_PER_FILE;

mod support;

use support::{json, quarry_ok, text};

#[test]
fn a_file_past_the_chunk_cap_is_indexed_to_the_cap_and_named_in_a_warning() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    fs::create_dir(dir.join(".quarry")).unwrap();
    fs::write(
        dir.join(".quarry/config.toml"),
        "[index]\nmax_file_bytes = 67108864\n",
    )
    .unwrap();
    // Lines of 64 characters: ten fill a window of the default budget (652) and the next
    // window starts two lines back, so 8 × n + 2 lines make exactly n windows (6.7 MB).
    let left_out = 500;
    let lines = 8 * (MAX_CHUNKS_PER_FILE + left_out) + 2;
    let mut huge: String = (0..lines)
        .map(|i| format!("{i:>8} {:<54}\n", "an entry of a huge log"))
        .collect();
    // A word on the last line, past the cap.
    huge.push_str("tailword\n");
    fs::write(dir.join("huge.log.txt"), &huge).unwrap();
    fs::write(
        dir.join("notes.md"),
        "# Notes\n\nThe tailword is only here and at the end.\n",
    )
    .unwrap();

    let out = quarry_ok(dir, &["search", "tailword", "--mode", "lexical", "--json"]);
    let stderr = text(&out.stderr);
    let warning = format!(
        "warning: huge.log.txt: indexed to line {} only, its first {MAX_CHUNKS_PER_FILE} chunks",
        8 * MAX_CHUNKS_PER_FILE + 2
    );
    assert!(stderr.contains(&warning), "{stderr}");
    // The last line fits in the last window (640 + 9 characters): no window of its own.
    assert!(
        stderr.contains(&format!("; {left_out} more chunks left out")),
        "{stderr}"
    );
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let paths: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["notes.md"], "the huge file's tail is not indexed");

    let status = json(dir, &["status", "--json"]);
    assert_eq!(status["files"], 2);
    assert_eq!(status["files_skipped"], 0);
    assert_eq!(status["chunks"], MAX_CHUNKS_PER_FILE + 1, "{status}");
}
