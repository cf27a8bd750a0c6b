//! Change detection in a 10k-file tree: git, mtime and hash passes.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use quarry_changes::{GitUse, content_hash, detect_changes, head_commit, walk};
use quarry_store::FileState;
use serde_json::{Value, json};

use quarry_bench::stats::percentile;

use super::{DETECT_RUNS, TREE_FILES, ms};

fn git_in(root: &Path, args: &[&str]) -> Result<()> {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "-c",
            "user.name=quarry-bench",
            "-c",
            "user.email=bench@quarry.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .context("git is needed for the change-detection benchmark")?;
    ensure!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

fn summary(mut times: Vec<f64>) -> Value {
    times.sort_by(f64::total_cmp);
    json!({
        "min": times[0],
        "p50": percentile(&times, 0.5),
        "max": times[times.len() - 1],
    })
}

pub(super) fn bench_detection() -> Result<Value> {
    let dir = tempfile::tempdir()?;
    let root = dir.path();
    // 20 directories of 10 subdirectories of 50 files.
    for i in 0..TREE_FILES {
        let sub = root.join(format!("d{:02}/s{}", i / 500, i / 50 % 10));
        if i % 50 == 0 {
            std::fs::create_dir_all(&sub)?;
        }
        std::fs::write(
            sub.join(format!("f{i}.rs")),
            format!("// file {i}\npub fn f{i}(x: u64) -> u64 {{\n    x.wrapping_mul({i})\n}}\n"),
        )?;
    }
    git_in(root, &["init", "-q"])?;
    git_in(root, &["add", "-A"])?;
    git_in(root, &["commit", "-q", "-m", "tree"])?;
    // Files written in the second git wrote its index are "racily clean" to git, which
    // compares their content on every diff; a refresh a second later settles them.
    std::thread::sleep(Duration::from_millis(1100));
    git_in(root, &["update-index", "-q", "--refresh"])?;
    let head = head_commit(root).context("no HEAD in the benchmark tree")?;

    let tree = walk(root)?;
    ensure!(
        tree.files.len() == TREE_FILES,
        "walked {}",
        tree.files.len()
    );
    let states: Vec<FileState> = tree
        .files
        .iter()
        .map(|f| {
            Ok(FileState {
                path: f.path.clone(),
                content_hash: content_hash(&std::fs::read(root.join(&f.path))?),
                mtime_ns: f.mtime_ns,
                size: f.size,
                chunk_ids: Vec::new(),
            })
        })
        .collect::<Result<_>>()?;

    let timed = |body: &dyn Fn() -> Result<()>| -> Result<Value> {
        body()?; // warm-up
        let mut times = Vec::with_capacity(DETECT_RUNS);
        for _ in 0..DETECT_RUNS {
            let start = Instant::now();
            body()?;
            times.push(ms(start));
        }
        Ok(summary(times))
    };
    let walk_only = timed(&|| {
        ensure!(walk(root)?.files.len() == TREE_FILES);
        Ok(())
    })?;
    let git_diff = timed(&|| {
        let output = Command::new("git")
            .args(["-C"])
            .arg(root)
            .args([
                "--no-optional-locks",
                "diff",
                "--name-only",
                "-z",
                &head,
                "--",
            ])
            .output()?;
        ensure!(output.status.success() && output.stdout.is_empty());
        Ok(())
    })?;
    let with_git = timed(&detect(root, &states, Some(&head), |g| {
        matches!(g, GitUse::Used { reported: 0, .. })
    }))?;
    let no_commit = timed(&detect(root, &states, None, |g| {
        *g == GitUse::NoIndexedCommit
    }))?;
    std::fs::remove_dir_all(root.join(".git"))?;
    let no_repo = timed(&detect(root, &states, None, |g| {
        *g == GitUse::NotARepository
    }))?;
    let result = json!({
        "files": TREE_FILES,
        "runs": DETECT_RUNS,
        "walk_ms": walk_only,
        "git_diff_ms": git_diff,
        "detect_git_ms": with_git,
        "detect_no_indexed_commit_ms": no_commit,
        "detect_not_a_repository_ms": no_repo,
    });
    eprintln!("{result}");
    Ok(result)
}

/// A check that `detect_changes` finds nothing changed and that git played the part `expect`
/// says.
fn detect<'a>(
    root: &'a Path,
    states: &'a [FileState],
    commit: Option<&'a str>,
    expect: fn(&GitUse) -> bool,
) -> impl Fn() -> Result<()> + 'a {
    move || {
        let changes = detect_changes(root, states, commit)?;
        ensure!(
            changes.is_empty() && changes.hashed == 0 && changes.unchanged == TREE_FILES,
            "nothing changed, yet: {changes:?}"
        );
        ensure!(expect(&changes.git), "git: {}", changes.git);
        Ok(())
    }
}
