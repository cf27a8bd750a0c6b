//! The server as a client meets it: a process of its own serving `serve_stdio` (what `quarry
//! mcp` runs) on its real stdin and stdout, spoken to in raw JSON-RPC, one line at a time.
//! Every line it writes to stdout must be a JSON-RPC 2.0 message.
//!
//! Without libtest's harness (`harness = false` in Cargo.toml): libtest would print to the
//! server's stdout. The same executable is the server when [`SERVE`] names a repository;
//! otherwise it runs the tests below in turn (a name given on the command line picks those
//! whose names contain it).

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use quarry_engine::{Config, Engine, EngineOptions};
use quarry_mcp::{ServerOptions, WatchMode};
use quarry_testkit::{model, shop};
use serde_json::{Value, json};

mod client;
mod conformance;
mod paging;
mod watch;

use client::Client;
use watch::ignored_directories_are_not_watched_new_ones_and_libraries_added_meanwhile_are;

/// Set in the server's environment: the repository to serve.
const SERVE: &str = "QUARRY_MCP_TEST_SERVE";
/// Set in the server's environment: do not index on start (`quarry mcp --no-index`).
const NO_INDEX: &str = "QUARRY_MCP_TEST_NO_INDEX";
/// Set in the server's environment: do not follow the working tree (`quarry mcp --no-watch`).
const NO_WATCH: &str = "QUARRY_MCP_TEST_NO_WATCH";

/// The longest any one answer may take: generous, for a slow machine loading the model.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

const TESTS: &[(&str, fn())] = &[
    (
        "unparsable_input_gets_a_parse_error_and_the_server_goes_on",
        unparsable_input_gets_a_parse_error_and_the_server_goes_on,
    ),
    (
        "a_tools_call_without_a_name_is_invalid_params",
        a_tools_call_without_a_name_is_invalid_params,
    ),
    (
        "every_error_answer_carries_the_id_json_rpc_prescribes",
        conformance::every_error_answer_carries_the_id_json_rpc_prescribes,
    ),
    (
        "a_search_before_anything_is_indexed_says_why_and_indexing_follows_the_other_writer",
        a_search_before_anything_is_indexed_says_why_and_indexing_follows_the_other_writer,
    ),
    (
        "searches_beside_a_forced_build_answer_from_the_live_index",
        searches_beside_a_forced_build_answer_from_the_live_index,
    ),
    (
        "a_damaged_lexical_index_is_a_tool_error_that_says_the_fix",
        a_damaged_lexical_index_is_a_tool_error_that_says_the_fix,
    ),
    (
        "a_rebuild_by_another_process_is_followed",
        a_rebuild_by_another_process_is_followed,
    ),
    (
        "a_burst_of_calls_is_answered_or_refused_as_busy_with_few_threads",
        a_burst_of_calls_is_answered_or_refused_as_busy_with_few_threads,
    ),
    (
        "a_forced_build_asked_for_during_a_run_is_queued",
        a_forced_build_asked_for_during_a_run_is_queued,
    ),
    (
        "a_removed_repository_stays_an_error",
        a_removed_repository_stays_an_error,
    ),
    (
        "pages_are_slices_of_one_ranking_however_deep",
        pages_are_slices_of_one_ranking_however_deep,
    ),
    (
        "a_cursor_page_after_the_tree_changed_repeats_no_chunk_and_says_so",
        paging::a_cursor_page_after_the_tree_changed_repeats_no_chunk_and_says_so,
    ),
    (
        "ignored_directories_are_not_watched_new_ones_and_libraries_added_meanwhile_are",
        ignored_directories_are_not_watched_new_ones_and_libraries_added_meanwhile_are,
    ),
];

fn main() {
    if let Some(root) = std::env::var_os(SERVE) {
        serve(Path::new(&root));
        return;
    }
    let mut args = std::env::args().skip(1);
    let mut filters = Vec::new();
    let mut list = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--list" => list = true,
            // libtest's options that take a value; the rest are flags.
            "--skip" | "--test-threads" | "--format" | "--color" | "--logfile" | "-Z"
            | "--shuffle-seed" => {
                args.next();
            }
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter.to_owned()),
        }
    }
    let chosen = TESTS.iter().filter(|(name, _)| {
        filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
    });
    if list {
        for (name, _) in chosen {
            println!("{name}: test");
        }
        return;
    }
    let chosen: Vec<_> = chosen.collect();
    println!("\nrunning {} tests", chosen.len());
    for (name, test) in &chosen {
        println!("test {name} ...");
        let started = Instant::now();
        test();
        println!(
            "test {name} ... ok ({:.1} s)",
            started.elapsed().as_secs_f64()
        );
    }
    println!("\ntest result: ok. {} passed", chosen.len());
}

/// What `quarry mcp --root ROOT` does (`run_mcp` in quarry-cli), with the test model.
fn serve(root: &Path) {
    let config = Config::load(root).unwrap();
    let engine = Engine::open(root, model(), EngineOptions::default()).unwrap();
    let options = ServerOptions {
        index_on_start: std::env::var_os(NO_INDEX).is_none(),
        watch: match std::env::var_os(NO_WATCH) {
            Some(_) => WatchMode::Off,
            None => WatchMode::Events,
        },
        ..ServerOptions::default()
    };
    quarry_mcp::serve_stdio(engine, config, model().clone(), options).unwrap();
}

/// Checks `answer` is the parse error JSON-RPC prescribes: code -32700, id null.
fn assert_parse_error(answer: &Value, sent: &str) {
    assert_eq!(answer["error"]["code"], -32700, "{sent}: {answer}");
    assert!(
        answer.get("id").is_some_and(Value::is_null),
        "{sent}: the id is null: {answer}"
    );
    assert!(answer.get("result").is_none(), "{sent}: {answer}");
}

fn unparsable_input_gets_a_parse_error_and_the_server_goes_on() {
    let repo = shop();
    let mut client = Client::start(repo.path(), false);
    // Before the handshake too.
    client.send_raw(b"hello\n");
    assert_parse_error(&client.receive(), "hello");
    let mut client = Client::handshake(client);

    let cases: [(&str, &[u8]); 5] = [
        (
            "a request cut short",
            b"{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"tools/list\"\n",
        ),
        (
            "invalid UTF-8",
            b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"semantic_search\",\"arguments\":{\"query\":\"caf\xE9\"}}}\n",
        ),
        (
            "a lone surrogate",
            b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"semantic_search\",\"arguments\":{\"query\":\"\\ud800\"}}}\n",
        ),
        ("trailing garbage", b"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}}\n"),
        ("binary noise", b"\x00\x01\xFF\xFE\n"),
    ];
    for (what, line) in cases {
        client.send_raw(line);
        let answer = client.receive();
        assert_parse_error(&answer, what);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Parse error"), "{what}: {message}");
    }
    // Blank lines are no messages: no answer (the ping's comes next).
    client.send_raw(b"\n  \r\n");

    // Still serving, in order.
    let ping = client.request("ping", json!({}));
    assert_eq!(ping["result"], json!({}), "{ping}");
    // A search of the index that is not built yet says so.
    let found = client.call(
        "semantic_search",
        json!({"query": "retry_with_backoff", "mode": "lexical"}),
    );
    assert_eq!(found["results"], json!([]), "{found}");
    assert_eq!(found["partial"], true, "{found}");
    let note = found["note"].as_str().unwrap();
    assert!(
        note.contains("nothing is indexed yet") && note.contains("index"),
        "{note}"
    );
    client.close();
}

fn a_tools_call_without_a_name_is_invalid_params() {
    let repo = shop();
    let mut client = Client::initialized(repo.path(), false);
    for (what, params) in [
        ("no name", json!({"arguments": {"query": "cart"}})),
        ("an empty object", json!({})),
        (
            "a name that is no string",
            json!({"name": 5, "arguments": {}}),
        ),
        ("no params", Value::Null),
    ] {
        let answer = client.request("tools/call", params.clone());
        let error = &answer["error"];
        assert_eq!(error["code"], -32602, "{what}: {answer}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("tools/call") && message.contains("name"),
            "{what}: {message}"
        );
        // What to send instead: the tools by name.
        assert!(message.contains("semantic_search"), "{what}: {message}");
        if what == "no name" {
            assert!(message.contains("missing field `name`"), "{message}");
        }
    }
    let answer = client.request(
        "tools/call",
        json!({"name": "semantic_search", "arguments": 5}),
    );
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("arguments"),
        "{answer}"
    );
    let answer = client.request("resources/explode", json!({}));
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    // JSON that is no request: invalid request, answered with its id.
    client.send(&json!({"jsonrpc": "2.0", "id": 99}));
    let answer = client.answer();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], 99, "{answer}");
    // An unknown tool stays rmcp's invalid params.
    let answer = client.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // Still serving.
    let tools = client.request("tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 4);
    client.close();
}

/// An empty index, as a first `quarry index` leaves it when it has just begun, with that
/// other writer at work: the index's writer lock held as `quarry_store::Store::open` takes
/// it (`.quarry/writer.lock`, locked exclusively). Held, another process's writes are refused.
fn begun_by_another_writer(root: &Path) -> fs::File {
    drop(Engine::open(root, model(), EngineOptions::default()).unwrap());
    let path: PathBuf = root.join(".quarry/writer.lock");
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap();
    file.try_lock().expect("nothing else holds the writer lock");
    file
}

fn a_search_before_anything_is_indexed_says_why_and_indexing_follows_the_other_writer() {
    let repo = shop();
    let root = repo.path();
    let lock = begun_by_another_writer(root);

    let mut client = Client::initialized(root, true);
    let waiting = client.wait_for("the server waits for the writer", ANSWER_TIMEOUT, |i| {
        i["state"] == "waiting"
    });
    assert!(
        waiting["note"]
            .as_str()
            .unwrap()
            .contains("another quarry process")
    );

    let found = client.call(
        "semantic_search",
        json!({"query": "retry with exponential backoff"}),
    );
    assert_eq!(found["results"], json!([]), "{found}");
    assert_eq!(found["coverage"]["chunks"], 0, "{found}");
    assert_eq!(found["partial"], true, "{found}");
    let note = found["note"].as_str().unwrap();
    assert!(
        note.contains("nothing is indexed yet") && note.contains("another quarry process"),
        "{note}"
    );

    // `index build` waits a while for the writer, then says the server waits its turn.
    let build = client.call("index", json!({"action": "build"}));
    assert_eq!(build["indexing"]["state"], "waiting", "{build}");
    assert!(
        build["note"]
            .as_str()
            .unwrap()
            .contains("poll index status"),
        "{build}"
    );

    // The server waits as long as the writer writes: past the 30 s after which it once
    // gave up, it is still waiting, not failed.
    let waited = client.wait_for("the server keeps waiting", Duration::from_secs(60), |i| {
        assert_eq!(i["state"], "waiting", "{i}");
        i["waited_s"].as_u64().unwrap() > 31
    });
    assert_eq!(waited["state"], "waiting");

    // The writer is done: the server indexes.
    drop(lock);
    let finished = client.wait_for("the server indexes", Duration::from_secs(300), |i| {
        assert!(i["state"] != "failed", "{i}");
        i["state"] == "finished"
    });
    assert!(
        finished["report"]["files_read"].as_u64().unwrap() > 5,
        "{finished}"
    );
    let found = client.call(
        "semantic_search",
        json!({"query": "retry with exponential backoff"}),
    );
    assert!(!found["results"].as_array().unwrap().is_empty(), "{found}");
    assert_eq!(
        found["coverage"]["chunks"], found["coverage"]["embedded"],
        "{found}"
    );
    assert!(found.get("partial").is_none(), "{found}");
    client.close();
}

/// `index build` with `force`: the new index is built beside the live one, so searches meanwhile
/// answer in full from the live one, and the new one answers alike once swapped in.
fn searches_beside_a_forced_build_answer_from_the_live_index() {
    let repo = shop();
    let root = repo.path();
    let mut client = Client::initialized(root, true);
    client.wait_for("the first index", Duration::from_secs(300), |i| {
        assert!(i["state"] != "failed", "{i}");
        i["state"] == "finished"
    });
    let query = json!({"query": "retry with exponential backoff"});
    let paths = |found: &Value| -> Vec<Value> {
        let results = found["results"].as_array().unwrap();
        results.iter().map(|r| r["path"].clone()).collect()
    };
    let before = client.call("semantic_search", query.clone());
    assert!(!paths(&before).is_empty(), "{before}");

    let started = client.call("index", json!({"action": "build", "force": true}));
    assert!(started["indexing"]["state"] != "failed", "{started}");
    let mut beside = 0;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let indexing = client.indexing();
        assert!(indexing["state"] != "failed", "{indexing}");
        if indexing["state"] == "finished" {
            break;
        }
        assert!(Instant::now() < deadline, "the forced build did not finish");
        let found = client.call("semantic_search", query.clone());
        assert_eq!(paths(&found), paths(&before), "{found}");
        assert_eq!(found["coverage"], before["coverage"], "{found}");
        beside += 1;
    }
    assert!(beside > 0, "no search ran beside the forced build");
    let after = client.call("semantic_search", query);
    assert_eq!(paths(&after), paths(&before), "{after}");
    assert!(!root.join(".quarry/rebuild").exists());
    client.close();
}

/// A segment of the lexical index overwritten, and a server that does not index on start
/// (so nothing repairs it): a search is a tool error naming the damage and the fix, and the
/// server answers what comes next.
fn a_damaged_lexical_index_is_a_tool_error_that_says_the_fix() {
    let repo = shop();
    let root = repo.path();
    Engine::open(root, model(), EngineOptions::default())
        .unwrap()
        .index_files(&mut |_| {})
        .unwrap();
    for entry in fs::read_dir(root.join(".quarry/lexical"))
        .unwrap()
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "idx") {
            let mut bytes = fs::read(&path).unwrap();
            let end = bytes.len().min(4096);
            bytes[..end]
                .iter_mut()
                .enumerate()
                .for_each(|(i, b)| *b = (i * 131 % 251) as u8);
            fs::write(&path, bytes).unwrap();
        }
    }
    let mut client = Client::initialized(root, false);
    let answer = client.request(
        "tools/call",
        json!({"name": "semantic_search",
            "arguments": {"query": "total with tax", "mode": "lexical"}}),
    );
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("damaged")
            && text.contains("quarry index --force")
            && !text.contains("panicked"),
        "{text}"
    );
    let status = client.call("index", json!({"action": "status"}));
    assert!(status.to_string().contains("is damaged"), "{status}");
    // A server that does not index on start repairs it when asked to build: the writer's
    // open rebuilds the lexical index from the database, and searches answer again.
    let build = client.call("index", json!({"action": "build"}));
    assert_eq!(build["indexing"]["state"], "finished", "{build}");
    let found = client.call(
        "semantic_search",
        json!({"query": "total with tax", "mode": "lexical"}),
    );
    assert!(!result_paths(&found).is_empty(), "{found}");
    client.close();
}

/// Polls `index status` until the server's run has finished (and no rebuild waits).
fn wait_until_indexed(client: &mut Client) {
    client.wait_for("the index run", Duration::from_secs(300), |i| {
        assert!(i["state"] != "failed", "{i}");
        i["state"] == "finished" && i.get("rebuild_queued").is_none()
    });
}

/// The repository paths of a search's results.
fn result_paths(found: &Value) -> Vec<String> {
    let results = found["results"].as_array().unwrap();
    results
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_owned())
        .collect()
}

/// The inode of the index's database: a rebuild publishes a new file.
#[cfg(unix)]
fn database_inode(root: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(root.join(".quarry/index.redb")).unwrap().ino()
}

/// A server that does not follow the tree, and another process's `index --force` (here the
/// test's own, as `quarry index --force` runs it): the server answers from the new index, a
/// function written before the rebuild is found, a file removed is not, and the server
/// holds no file of the replaced index.
fn a_rebuild_by_another_process_is_followed() {
    let repo = shop();
    let root = repo.path();
    let mut client = Client::unwatched(root, true);
    wait_until_indexed(&mut client);
    fs::write(
        root.join("src/refunds.rs"),
        "/// Pays a customer back onto the gift card they paid with.\n\
         pub fn refund_gift_card_balance(order_total: u64, spent: u64) -> u64 {\n\
         \x20   order_total.saturating_sub(spent)\n}\n",
    )
    .unwrap();
    fs::remove_file(root.join("lib/retry.js")).unwrap();
    let rebuild = Engine::rebuild(root, model(), EngineOptions::default()).unwrap();
    rebuild.engine().index(&mut |_| {}).unwrap();
    drop(rebuild.finish().unwrap());

    let found = client.call(
        "semantic_search",
        json!({"query": "refund_gift_card_balance", "mode": "lexical"}),
    );
    assert_eq!(
        result_paths(&found).first().map(String::as_str),
        Some("src/refunds.rs"),
        "{found}"
    );
    let found = client.call(
        "semantic_search",
        json!({"query": "retry with exponential backoff", "limit": 50}),
    );
    assert!(
        !result_paths(&found).contains(&"lib/retry.js".to_owned()),
        "{found}"
    );
    #[cfg(target_os = "linux")]
    for fd in fs::read_dir(format!("/proc/{}/fd", client.child.id())).unwrap() {
        let target = fs::read_link(fd.unwrap().path()).unwrap_or_default();
        let target = target.to_string_lossy();
        assert!(
            !(target.contains("index.redb") && target.contains("(deleted)")),
            "the server still holds the replaced database: {target}"
        );
    }
    client.close();
}

/// How many threads process `pid` runs.
#[cfg(target_os = "linux")]
fn threads(pid: u32) -> usize {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Threads:")).unwrap();
    line["Threads:".len()..].trim().parse().unwrap()
}

/// 1,000 searches sent in one write: every one is answered, with results or as busy, and
/// the server's threads stay a handful (tokio's blocking pool once grew to 517 threads).
#[cfg(target_os = "linux")]
fn a_burst_of_calls_is_answered_or_refused_as_busy_with_few_threads() {
    const BURST: u64 = 1000;
    let repo = shop();
    let root = repo.path();
    let mut client = Client::unwatched(root, true);
    wait_until_indexed(&mut client);
    let pid = client.child.id();
    let at_rest = threads(pid);
    let mut burst = Vec::new();
    for id in 0..BURST {
        let query = format!("shipping cost for an order of {id} items");
        let request = json!({"jsonrpc": "2.0", "id": 10_000 + id, "method": "tools/call",
            "params": {"name": "semantic_search", "arguments": {"query": query}}});
        burst.extend(serde_json::to_vec(&request).unwrap());
        burst.push(b'\n');
    }
    client.send_raw(&burst);
    let (mut found, mut busy, mut most) = (0, 0, at_rest);
    let mut answered = std::collections::HashSet::new();
    while answered.len() < BURST as usize {
        let answer = client.answer();
        let id = answer["id"].as_u64().unwrap();
        assert!((10_000..10_000 + BURST).contains(&id), "{answer}");
        assert!(answered.insert(id), "answered twice: {answer}");
        let result = &answer["result"];
        if result["isError"] == true {
            let text = result["content"][0]["text"].as_str().unwrap();
            assert!(text.contains("busy"), "{text}");
            busy += 1;
        } else {
            assert!(
                !result_paths(&result["structuredContent"]).is_empty(),
                "{answer}"
            );
            found += 1;
        }
        if answered.len() % 25 == 0 {
            most = most.max(threads(pid));
        }
    }
    println!("  {found} answered, {busy} busy; threads {at_rest} at rest, {most} at most");
    assert!(found >= 4, "the workers answered");
    assert!(
        most <= at_rest + 24,
        "threads grew from {at_rest} to {most} in the burst"
    );
    // Still serving, in full.
    let after = client.call("semantic_search", json!({"query": "shipping cost"}));
    assert!(!result_paths(&after).is_empty(), "{after}");
    client.close();
}

#[cfg(not(target_os = "linux"))]
fn a_burst_of_calls_is_answered_or_refused_as_busy_with_few_threads() {
    println!("  skipped: counts threads through /proc");
}

/// A forced build asked for while a run is at work (here, waiting for another process's
/// writer) is queued, not dropped: it runs when that run ends, and publishes a new index.
fn a_forced_build_asked_for_during_a_run_is_queued() {
    let repo = shop();
    let root = repo.path();
    let lock = begun_by_another_writer(root);
    let mut client = Client::unwatched(root, true);
    client.wait_for("the server waits for the writer", ANSWER_TIMEOUT, |i| {
        i["state"] == "waiting"
    });
    let before = database_inode(root);
    let forced = client.call("index", json!({"action": "build", "force": true}));
    let note = forced["note"].as_str().unwrap();
    assert!(note.contains("queued"), "{forced}");
    assert_eq!(client.indexing()["rebuild_queued"], true);
    drop(lock);
    wait_until_indexed(&mut client);
    assert_ne!(database_inode(root), before, "the queued rebuild published");
    let found = client.call("semantic_search", json!({"query": "retry with backoff"}));
    assert!(!result_paths(&found).is_empty(), "{found}");
    client.close();
}

/// The repository removed under a watching server while it embeds: every call from then on
/// says it is gone, and nothing makes it again (the run's checkpoint once created
/// `.quarry/vectors` anew, and with it the root, and later calls answered from the deleted
/// index).
fn a_removed_repository_stays_an_error() {
    let repo = shop();
    let root = repo.path().to_path_buf();
    // Enough chunks that the second phase lasts a few seconds.
    fs::create_dir(root.join("generated")).unwrap();
    for file in 0..150 {
        let mut text = String::new();
        for function in 0..8 {
            text.push_str(&format!(
                "def handler_{file}_{function}(request):\n    \
                 \"\"\"Answers request kind {function} of service {file}.\"\"\"\n    \
                 return request.kind * {function} + {file}\n\n\n"
            ));
        }
        fs::write(root.join(format!("generated/service_{file}.py")), text).unwrap();
    }
    let mut client = Client::initialized(&root, true);
    client.wait_for("the second phase", Duration::from_secs(300), |i| {
        assert!(i["state"] != "failed", "{i}");
        i["phase"] == "vectors" || i["state"] == "finished"
    });
    fs::remove_dir_all(&root).unwrap();
    for _ in 0..15 {
        let answer = client.request(
            "tools/call",
            json!({"name": "semantic_search", "arguments": {"query": "shipping cost"}}),
        );
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("is gone"), "{text}");
        // Time for the run to end, and for the watcher to see the removal.
        std::thread::sleep(Duration::from_secs(1));
    }
    assert!(!root.exists(), "the repository was made again");
    client.close();
}

/// A repository of 60 files of four functions each, all about shipping: a search matches far
/// more chunks than one page holds. Paged to the deepest offset, every chunk comes once, in
/// one ranking's order (pages once ranked again deeper, repeating chunks with score 0).
fn pages_are_slices_of_one_ranking_however_deep() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    fs::create_dir(root.join("shipping")).unwrap();
    for file in 0..60 {
        let mut text = String::new();
        for function in 0..4 {
            text.push_str(&format!(
                "def shipping_rate_{file}_{function}(weight, zone):\n    \
                 \"\"\"The shipping rate for a parcel of this weight to zone {file}.\"\"\"\n    \
                 return weight * {function} + zone * {file}\n\n\n"
            ));
        }
        fs::write(root.join(format!("shipping/zone_{file}.py")), text).unwrap();
    }
    let mut client = Client::unwatched(root, true);
    wait_until_indexed(&mut client);
    let mut seen = std::collections::HashSet::new();
    let mut scores = Vec::new();
    let mut offset = Some(0);
    while let Some(at) = offset.filter(|&at| at <= 200) {
        let page = client.call(
            "semantic_search",
            json!({"query": "shipping rate for a parcel", "limit": 50, "offset": at}),
        );
        assert_eq!(page["offset"], at, "{page}");
        for result in page["results"].as_array().unwrap() {
            let id = result["chunk_id"].as_str().unwrap().to_owned();
            assert!(seen.insert(id.clone()), "chunk {id} again at offset {at}");
            scores.push(result["score"].as_f64().unwrap());
        }
        offset = page["next_offset"].as_u64().map(|n| n as usize);
    }
    assert!(seen.len() >= 150, "only {} results paged", seen.len());
    assert!(
        scores.windows(2).all(|pair| pair[0] >= pair[1]),
        "scores rise between pages: {scores:?}"
    );
    client.close();
}
