//! The CLI beside other processes: an index it cannot write, another writer, two index runs
//! racing, and a serving `quarry mcp`.

use super::*;

/// Makes `file` unwritable: read-only for a user, immutable (`chattr +i`) for root, whom
/// permissions do not stop; `false` where neither holds.
fn make_unwritable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(file, fs::Permissions::from_mode(0o444)).unwrap();
    if fs::OpenOptions::new().write(true).open(file).is_err() {
        return true;
    }
    Command::new("chattr")
        .arg("+i")
        .arg(file)
        .status()
        .is_ok_and(|s| s.success())
        && fs::OpenOptions::new().write(true).open(file).is_err()
}

/// Starts `quarry index` in `dir`, its output piped.
fn spawn_index(dir: &Path) -> std::process::Child {
    quarry_command(dir)
        .arg("index")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_search_over_an_index_it_cannot_write_answers_from_the_last_commit() {
    let repo = indexed_shop();
    let dir = repo.path();
    let config = dir.join("src/config.rs");
    fs::write(
        &config,
        fs::read_to_string(&config).unwrap() + "\npub fn reload_settings() {}\n",
    )
    .unwrap();
    let lock = dir.join(".quarry/writer.lock");
    if !make_unwritable(&lock) {
        let test = "cli::a_search_over_an_index_it_cannot_write";
        quarry_kernels::skipped(
            test,
            "a file this user cannot write (chmod, or chattr as root)",
        );
        return;
    }
    let out = quarry(
        dir,
        &["search", "--mode", "lexical", "load_config", "--json"],
    );
    let _ = Command::new("chattr").arg("-i").arg(&lock).status();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("the index cannot be written"), "{stderr}");
    assert!(
        stderr.contains("answering from its last commit"),
        "{stderr}"
    );
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["results"][0]["path"], "src/config.rs", "{found}");
}

/// `quarry index` while another process holds the index for writing (a `quarry mcp`
/// following the tree writes after each edit): it says it waits, then indexes.
#[test]
fn an_index_run_waits_for_another_writer_then_indexes() {
    let repo = indexed_shop();
    let dir = repo.path();
    write_file(
        dir,
        "src/weights.rs",
        "pub fn grams() -> u64 {\n    1000\n}\n",
    );
    // The writer lock as the store takes it.
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".quarry/writer.lock"))
        .unwrap();
    lock.try_lock().expect("nothing else holds the writer lock");
    let mut waiting = spawn_index(dir);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        waiting.try_wait().unwrap().is_none(),
        "it waits while the lock is held"
    );
    drop(lock);
    let out = waiting.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("waiting: another quarry process is writing this index"),
        "{stderr}"
    );
    assert!(stderr.contains("1 files read"), "{stderr}");
}

#[test]
fn two_index_runs_racing_leave_one_whole_index() {
    let repo = shop();
    let dir = repo.path();
    let (first, second) = (spawn_index(dir), spawn_index(dir));
    let outputs = [
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    ];
    // A run that finds the other writing waits its turn (saying so); both succeed.
    for out in &outputs {
        assert!(out.status.success(), "{}", text(&out.stderr));
    }

    let status = json(dir, &["status", "--json"]);
    assert_eq!(status["files"], 9);
    assert_eq!(
        status["coverage"],
        serde_json::json!({"chunks": 36, "embedded": 36})
    );
    let again = quarry_ok(dir, &["index"]);
    assert!(
        text(&again.stderr).contains("0 files read"),
        "{}",
        text(&again.stderr)
    );
}

#[test]
fn the_cli_searches_indexes_and_reads_status_beside_a_serving_mcp() {
    let repo = indexed_shop();
    let dir = repo.path();
    // A change for the server to index on start; a CLI search may take it first.
    write_file(
        dir,
        "src/weights.rs",
        "/// Grams in a kilogram.\npub fn grams_per_kilogram() -> u64 {\n    1000\n}\n",
    );
    let signals = tempfile::tempdir().unwrap();
    // The server indexes the repository on start and is searched without pause meanwhile.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_beside_cli.py");
    let client = Command::new(quarry_testkit::python())
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_quarry"))
        .arg(dir)
        .arg(signals.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();

    // While the server writes, or before it starts: the CLI reads and answers.
    let searched = Instant::now() + Duration::from_secs(120);
    while !signals.path().join("served").exists() && Instant::now() < searched {
        let status = json(dir, &["status", "--json"]);
        assert!(status["files"].as_u64().is_some(), "{status}");
        json(dir, &["search", "--json", "retry with exponential backoff"]);
    }
    assert!(
        signals.path().join("served").exists(),
        "the server never indexed"
    );

    // The server idle, the CLI writes beside it: whichever of the two indexes the edit
    // first (the server follows the tree), the other finds it done, and both answer with it.
    let cart = dir.join("src/cart.rs");
    let mut source = fs::read_to_string(&cart).unwrap();
    source.push_str(
        "\npub fn round_parcel_weight(grams: u64) -> u64 {\n    grams.div_ceil(1000)\n}\n",
    );
    fs::write(&cart, source).unwrap();
    let out = quarry_ok(dir, &["index"]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("1 files read") || stderr.contains("0 files read"),
        "{stderr}"
    );
    let found = json(
        dir,
        &[
            "search",
            "--json",
            "--mode",
            "lexical",
            "round_parcel_weight",
        ],
    );
    assert_eq!(found["results"][0]["symbol"], "round_parcel_weight");
    fs::write(signals.path().join("edited"), "").unwrap();

    let out = client.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the client failed:\n{}",
        text(&out.stderr)
    );
    let served: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(served["errors"], serde_json::json!([]), "{served}");
    assert!(served["calls"].as_u64().unwrap() > 0, "{served}");
    assert_eq!(
        served["served_status"]["indexing"]["state"], "finished",
        "{served}"
    );
    assert_eq!(served["found"], serde_json::json!(["round_parcel_weight"]));
    assert_eq!(served["build"], "finished", "{served}");
}
