//! The `quarry` binary as a user runs it, on a copy of `fixtures/engine/shop`.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use quarry_testkit::shop;
use serde_json::Value;

#[path = "../support/mod.rs"]
mod support;

mod background;
mod concurrency;
mod libraries;
mod vector_cache;

use support::{
    failure, indexed_shop, json, mcp_client, quarry, quarry_command, quarry_ok, text, write_file,
};

#[test]
fn search_indexes_first_then_answers_in_text_and_json() {
    let repo = shop();

    let out = quarry_ok(
        repo.path(),
        &["search", "read the settings file", "-k", "3"],
    );
    assert!(
        text(&out.stderr).contains("indexed in"),
        "{}",
        text(&out.stderr)
    );
    let first = text(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert!(first.starts_with("src/config.rs:"), "{}", text(&out.stdout));
    assert!(repo.path().join(".quarry/index.redb").exists());
    // The fixture's 36 chunks are more than a search embeds before answering: it answers
    // from their words and says so.
    assert!(
        text(&out.stderr).contains("36 waiting for vectors")
            && text(&out.stderr).contains("36 of 36 chunks wait for their vectors"),
        "{}",
        text(&out.stderr)
    );

    let out = quarry_ok(repo.path(), &["search", "retry_with_backoff", "--json"]);
    assert!(
        !text(&out.stderr).contains("indexed in"),
        "nothing changed, nothing re-indexed"
    );
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        found["coverage"],
        serde_json::json!({"chunks": 36, "embedded": 0})
    );
    let best = &found["results"][0];
    assert_eq!(best["path"], "lib/http_client.py");
    assert_eq!(best["chunk_id"].as_str().unwrap().len(), 32);
    let score = best["score"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&score));
    let error = failure(
        repo.path(),
        &["related", best["chunk_id"].as_str().unwrap()],
    );
    assert!(error.contains("has no vector yet"), "{error}");

    // --wait embeds them first: full quality, and no note.
    let out = quarry_ok(
        repo.path(),
        &["search", "retry_with_backoff", "--json", "--wait"],
    );
    assert!(!text(&out.stderr).contains("wait for their vectors"));
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        found["coverage"],
        serde_json::json!({"chunks": 36, "embedded": 36})
    );
    assert_eq!(found["results"][0]["path"], "lib/http_client.py");

    let report = json(repo.path(), &["index", "--json"]);
    assert_eq!(report["files_read"], 0);
    assert_eq!(report["chunks_embedded"], 0);

    // An edit's few new chunks are embedded before the search answers.
    write_file(
        repo.path(),
        "src/config.rs",
        "pub fn load_settings_file() -> String { String::new() }\n",
    );
    let found = json(repo.path(), &["search", "load settings", "--json"]);
    let coverage = &found["coverage"];
    assert_eq!(coverage["embedded"], coverage["chunks"], "{found}");
}

#[test]
fn related_status_libraries_models_and_config() {
    let repo = shop();
    let dir = repo.path();
    let found = json(
        dir,
        &[
            "search",
            "retry_with_backoff",
            "--json",
            "--detail",
            "full",
            "--wait",
        ],
    );
    let best = &found["results"][0];
    assert_eq!(best["symbol"], "retry_with_backoff");
    assert!(
        best["text"]
            .as_str()
            .unwrap()
            .contains("def retry_with_backoff")
    );
    let id = best["chunk_id"].as_str().unwrap();

    let related = json(dir, &["related", id, "--json"]);
    assert_eq!(related["source"]["chunk_id"], id);
    let paths: Vec<&str> = related["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert!(
        !paths.is_empty() && !paths.contains(&"lib/http_client.py"),
        "{paths:?}"
    );
    assert!(
        related["results"][0].get("text").is_none(),
        "compact by default"
    );
    let out = quarry(dir, &["related", id]);
    assert!(
        text(&out.stdout).starts_with("like lib/http_client.py:"),
        "{}",
        text(&out.stdout)
    );

    // --explain: where each leg placed a result and the score they fused to, then the
    // ranking's steps; a related result has no legs, one vector retrieves it.
    let explained = json(
        dir,
        &["search", "retry_with_backoff", "--json", "--explain"],
    );
    let legs = explained["results"][0]["explanation"]["legs"].clone();
    let legs = legs.as_array().unwrap();
    assert!(
        legs.contains(&serde_json::json!({"leg": "symbol", "rank": 1, "score": null})),
        "{legs:?}"
    );
    let lexical = legs.iter().find(|leg| leg["leg"] == "lexical");
    assert!(
        lexical.is_some_and(|leg| leg["rank"].as_u64() >= Some(1) && leg["score"].as_f64() > Some(0.0)),
        "{legs:?}"
    );
    let explained = json(dir, &["related", id, "--json", "--explain"]);
    let explanation = &explained["results"][0]["explanation"];
    assert!(
        explanation.get("legs").is_none() && explanation["retrieval_score"].is_number(),
        "{explanation}"
    );
    let out = quarry_ok(
        dir,
        &["search", "retry_with_backoff", "--explain", "-k", "1"],
    );
    let shown = text(&out.stdout);
    assert!(
        shown.contains("symbol #1")
            && shown.contains("→ retrieval")
            && shown.contains("definition: defines the symbol asked for, ×"),
        "{shown}"
    );

    let error = failure(dir, &["related", "not-an-id"]);
    assert!(error.contains("not a chunk id"), "{error}");
    let error = failure(dir, &["related", &"0".repeat(32)]);
    assert!(
        error.contains("no chunk") && error.contains("chunk_id"),
        "{error}"
    );

    let status = json(dir, &["status", "--json"]);
    assert_eq!(status["files"], 9);
    assert_eq!(status["stale"]["modified"].as_array().unwrap().len(), 0);
    assert!(
        status["model"]
            .as_str()
            .unwrap()
            .contains("all-MiniLM-L6-v2")
    );
    write_file(dir, "src/config.rs", "pub fn nothing_here() {}\n");
    let status = json(dir, &["status", "--json"]);
    assert_eq!(status["stale"]["modified"][0], "src/config.rs");
    quarry_ok(dir, &["index"]);
    // The deep check reads every page of the database against its checksum.
    let deep = json(dir, &["status", "--deep", "--json"]);
    assert!(deep.get("damage").is_none(), "{deep}");
    assert_eq!(deep["files"], 9, "{deep}");
    let status = quarry(dir, &["status", "--threshold", "0.05"]);
    let status = text(&status.stdout);
    assert!(status.contains("stale       none"), "{status}");
    assert!(
        status.lines().any(|l| l.ends_with(" src/config.rs")),
        "drift listed: {status}"
    );

    // A library: indexed on registration, searched by scope.
    let library = quarry_testkit::library(
        "units.py",
        "def kilometres_to_miles(km):\n    \"\"\"Convert a distance in kilometres to miles.\"\"\"\n    return km * 0.621371\n",
    );
    quarry_ok(
        dir,
        &["lib", "add", "units", library.path().to_str().unwrap()],
    );
    let list = quarry(dir, &["lib", "list"]);
    assert!(
        text(&list.stdout).starts_with("lib:units\t"),
        "{}",
        text(&list.stdout)
    );
    let query = "convert kilometres to miles";
    let scoped = json(dir, &["search", query, "--scope", "lib:units", "--json"]);
    assert_eq!(scoped["results"][0]["path"], "lib:units/units.py");
    assert_eq!(scoped["results"].as_array().unwrap().len(), 1);
    let project = json(dir, &["search", query, "--json"]);
    assert!(
        project["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["path"] != "lib:units/units.py")
    );
    let error = failure(dir, &["search", query, "--scope", "lib:nope"]);
    assert!(
        error.contains("unknown scope") && error.contains("lib:units"),
        "{error}"
    );
    quarry_ok(dir, &["lib", "remove", "units"]);
    let error = failure(dir, &["search", query, "--scope", "lib:units"]);
    assert!(error.contains("unknown scope"), "{error}");
    // Names that read as other scopes, or as no name, and the index's own directory.
    let long = "n".repeat(5_000);
    for name in ["all", "project", "a/b", long.as_str()] {
        let error = failure(dir, &["lib", "add", name, library.path().to_str().unwrap()]);
        assert!(error.contains("a library name is"), "{error}");
        assert!(error.len() < 400, "{error}");
    }
    let index_dir = dir.join(".quarry");
    let error = failure(dir, &["lib", "add", "own", index_dir.to_str().unwrap()]);
    assert!(error.contains("is inside the repository"), "{error}");

    // Defaults from .quarry/config.toml; flags override them; typos are named.
    let config = dir.join(".quarry/config.toml");
    fs::write(
        &config,
        "[ranking]\nlimit = 2\n[search]\nmode = \"lexical\"\n",
    )
    .unwrap();
    let two = json(dir, &["search", "cart", "--json"]);
    assert_eq!(two["results"].as_array().unwrap().len(), 2);
    assert_eq!(two["weights"]["dense"], 0.0);
    let four = json(
        dir,
        &["search", "cart", "-k", "4", "--mode", "hybrid", "--json"],
    );
    assert_eq!(four["results"].as_array().unwrap().len(), 4);
    fs::write(&config, "[ranking]\nlimt = 2\n").unwrap();
    let error = failure(dir, &["search", "cart"]);
    assert!(
        error.contains("config.toml") && error.contains("limt"),
        "{error}"
    );
    fs::remove_file(&config).unwrap();

    let model = json(dir, &["model", "info", "--json"]);
    assert_eq!(model["dimensions"], 384);
    assert!(model["backend"].as_str().unwrap().starts_with("flex"));
}

/// A file whose name holds a newline: each result is still one line of text (the name
/// escaped), and `--json` has the name as it is.
#[cfg(unix)]
#[test]
fn a_file_name_with_a_newline_keeps_a_result_on_one_line() {
    let repo = shop();
    let dir = repo.path();
    write_file(
        dir,
        "src/odd\nname.py",
        "def refund_voucher_total(order):\n    return order.vouchers\n",
    );
    let args = [
        "search",
        "refund_voucher_total",
        "--mode",
        "lexical",
        "-k",
        "1",
    ];
    let out = quarry_ok(dir, &args);
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .lines()
            .next()
            .unwrap()
            .starts_with("src/odd\\nname.py:1-2"),
        "{stdout}"
    );
    let found = json(dir, &[&args[..], &["--json"]].concat());
    assert_eq!(found["results"][0]["path"], "src/odd\nname.py");
}

#[test]
fn bad_input_fails_with_a_message_and_a_non_zero_exit() {
    let dir = tempfile::tempdir().unwrap();
    let error = failure(dir.path(), &["index", "no/such/dir"]);
    assert!(error.contains("no/such/dir: not a directory"), "{error}");
    let error = failure(dir.path(), &["search", "  ", "--mode", "lexical"]);
    assert!(error.contains("the query is empty"), "{error}");
    let error = failure(dir.path(), &["index"]);
    assert!(error.contains("no files to index"), "{error}");

    let repo = shop();
    let long = "x".repeat(10_000);
    let error = failure(repo.path(), &["search", &long]);
    assert!(error.contains("the query is 10000 bytes"), "{error}");

    // A binary file is skipped with its reason; the rest is indexed.
    fs::write(repo.path().join("image.rs"), b"\0\0\0binary").unwrap();
    let out = quarry_ok(repo.path(), &["index"]);
    assert!(
        text(&out.stderr).contains("skipped image.rs: binary file"),
        "{}",
        text(&out.stderr)
    );

    // A damaged index: refused with its path and the fix, and left for the user.
    let database = repo.path().join(".quarry/index.redb");
    fs::write(&database, b"not a database").unwrap();
    let error = failure(repo.path(), &["search", "cart"]);
    assert!(
        error.contains("index.redb") && error.contains("--force"),
        "{error}"
    );
    assert_eq!(fs::read(&database).unwrap(), b"not a database");
    quarry_ok(repo.path(), &["index", "--force"]);
    json(repo.path(), &["search", "cart", "--json"]);
}

/// The (chunk id, path, lines, score) of each result, to compare two front ends.
fn located(results: &Value) -> Vec<(String, String, u64, u64, f64)> {
    results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let field = |k: &str| r[k].clone();
            (
                field("chunk_id").as_str().unwrap().to_owned(),
                field("path").as_str().unwrap().to_owned(),
                field("start_line").as_u64().unwrap(),
                field("end_line").as_u64().unwrap(),
                (field("score").as_f64().unwrap() * 1e5).round() / 1e5,
            )
        })
        .collect()
}

/// `quarry mcp` driven by the official MCP Python SDK (`tests/mcp_client.py`): initialise,
/// list tools, call every tool with valid and invalid arguments; the answers must match the
/// CLI's for the same queries.
#[test]
fn the_mcp_server_answers_a_real_client_as_the_cli_does() {
    let repo = shop();
    let dir = repo.path();
    // The CLI first (the server, a writer too, must not hold the index meanwhile).
    let search = json(
        dir,
        &[
            "search",
            "--json",
            "--wait",
            "retry with exponential backoff",
        ],
    );
    let first = search["results"][0]["chunk_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let related = json(dir, &["related", "--json", &first]);
    let filtered = json(
        dir,
        &[
            "search",
            "--json",
            "--mode",
            "lexical",
            "--path",
            "lib/**",
            "--lang",
            "javascript",
            "--detail",
            "full",
            "format a price",
        ],
    );
    let four = json(dir, &["search", "--json", "-k", "4", "shipping cost"]);

    let fresh = shop();
    let mcp = mcp_client("mcp_client.py", &[dir, fresh.path()]);

    assert_eq!(mcp["server"], "quarry");
    assert!(
        mcp["instructions"]
            .as_str()
            .unwrap()
            .contains("semantic_search")
    );
    assert_eq!(mcp["schemas_stable"], true);
    let tools = mcp["tools"].as_object().unwrap();
    let mut names: Vec<&str> = tools.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(
        names,
        ["find_similar", "get_related", "index", "semantic_search"]
    );
    for (name, tool) in tools {
        assert!(
            tool["description"].as_str().unwrap().len() > 80,
            "{name} needs a description"
        );
        assert_eq!(tool["input_schema"]["type"], "object", "{name}");
    }
    let search_schema = &tools["semantic_search"]["input_schema"];
    for argument in [
        "query",
        "limit",
        "max_per_file",
        "include_tests",
        "paths",
        "languages",
        "scope",
        "mode",
        "detail_level",
        "offset",
    ] {
        assert!(
            search_schema["properties"].get(argument).is_some(),
            "semantic_search lacks {argument}"
        );
    }
    assert_eq!(search_schema["required"], serde_json::json!(["query"]));

    // A fresh repository answers as soon as its files are indexed, while their vectors are
    // embedded in the background, and says how far the vectors reach.
    let (during, after) = (
        &mcp["fresh"]["during"]["result"],
        &mcp["fresh"]["after"]["result"],
    );
    let pending = |result: &Value| {
        let coverage = &result["coverage"];
        coverage["chunks"].as_u64().unwrap() - coverage["embedded"].as_u64().unwrap()
    };
    assert!(
        !during["results"].as_array().unwrap().is_empty(),
        "{during}"
    );
    assert_eq!(during["coverage"]["chunks"], 36, "{during}");
    if pending(during) > 0 {
        assert_eq!(during["partial"], true, "{during}");
        assert!(
            during["note"]
                .as_str()
                .unwrap()
                .contains("wait for their vectors")
        );
    } else {
        assert!(during.get("partial").is_none(), "{during}");
    }
    assert!(after.get("partial").is_none() && !after["results"].as_array().unwrap().is_empty());
    assert_eq!(pending(after), 0, "{after}");

    let status = &mcp["status"]["result"];
    assert_eq!(status["indexing"]["state"], "finished", "{status}");
    assert!(status["chunks"].as_u64().unwrap() > 20);
    assert_eq!(status["coverage"]["embedded"], status["chunks"], "{status}");

    // The same answers as the CLI.
    let result = |key: &str| mcp[key]["result"].clone();
    assert_eq!(
        located(&result("search")["results"]),
        located(&search["results"])
    );
    assert_eq!(mcp["related_id"], first.as_str());
    assert_eq!(
        located(&result("related")["results"]),
        located(&related["results"])
    );
    assert_eq!(
        located(&result("search_filtered")["results"]),
        located(&filtered["results"])
    );
    let filtered_first = &result("search_filtered")["results"][0];
    assert!(
        filtered_first["text"].is_string() && filtered_first["explanation"]["steps"].is_array()
    );
    assert!(
        result("search")["results"][0].get("explanation").is_none(),
        "explanations only when asked"
    );

    // Pages line up with one long page (scores differ: each page ranks a deeper fetch).
    let (page_1, page_2) = (result("page_1"), result("page_2"));
    assert_eq!(page_1["next_offset"], 2);
    let unscored = |results: &Value| {
        located(results)
            .into_iter()
            .map(|r| (r.0, r.1, r.2, r.3))
            .collect::<Vec<_>>()
    };
    let mut paged = unscored(&page_1["results"]);
    paged.extend(unscored(&page_2["results"]));
    assert_eq!(paged, unscored(&result("page_all")["results"]));
    assert_eq!(
        located(&result("page_all")["results"]),
        located(&four["results"])
    );

    let similar = result("similar");
    assert_eq!(similar["source"]["path"], "lib/http_client.py");
    assert!(similar["results"].as_array().is_some_and(|r| !r.is_empty()));
    assert!(
        result("build")["indexing"]["report"]["files_unchanged"]
            .as_u64()
            .unwrap()
            > 0
    );

    // Every malformed call is an error that says what to fix; the server lives on.
    let invalid = mcp["invalid"].as_object().unwrap();
    let expect = [
        ("missing_query", "query"),
        ("empty_query", "empty"),
        ("zero_limit", "limit"),
        ("wrong_type", "limit"),
        ("unknown_argument", "max_results"),
        ("unknown_scope", "lib:nope"),
        ("bad_glob", "src/[oops"),
        ("bad_mode", "psychic"),
        ("bad_chunk_id", "not-an-id"),
        ("unknown_chunk", "chunk"),
        ("unknown_file", "src/nope.rs"),
        ("line_past_end", "9999"),
        ("bad_action", "explode"),
    ];
    for (key, mentions) in expect {
        let error = invalid[key]["tool_error"]
            .as_str()
            .unwrap_or_else(|| panic!("{key}: {}", invalid[key]));
        assert!(error.contains(mentions), "{key}: {error}");
    }
    assert_eq!(invalid["unknown_tool"]["protocol_error"], -32602);
    assert_eq!(
        mcp["alive_after_errors"]["result"]["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_lexical_search_after_an_edit_answers_without_the_model() {
    let repo = indexed_shop();
    let dir = repo.path();
    let path = dir.join("src/shipping.rs");
    let mut source = fs::read_to_string(&path).unwrap();
    source.push_str("\n/// Rounds a parcel weight up to whole kilograms.\npub fn round_parcel_weight(grams: u64) -> u64 {\n    grams.div_ceil(1000)\n}\n");
    fs::write(&path, source).unwrap();

    // The edit is searchable by its words at once; its vectors wait, and no note says so
    // (a lexical search never uses them).
    let out = quarry_ok(
        dir,
        &[
            "search",
            "--mode",
            "lexical",
            "round_parcel_weight",
            "--json",
        ],
    );
    assert!(!text(&out.stderr).contains("wait for their vectors"));
    let lexical: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(lexical["results"][0]["symbol"], "round_parcel_weight");
    let coverage = &lexical["coverage"];
    assert!(
        coverage["embedded"].as_u64() < coverage["chunks"].as_u64(),
        "{coverage}"
    );

    // A hybrid search embeds the few waiting chunks before it answers.
    let hybrid = json(dir, &["search", "round a parcel weight", "--json"]);
    assert_eq!(hybrid["coverage"]["embedded"], hybrid["coverage"]["chunks"]);
}

#[test]
fn a_search_by_words_and_status_read_an_index_without_the_model_files() {
    let repo = indexed_shop();
    let dir = repo.path();
    // Another machine's view: no model in the cache, and nowhere to fetch it from.
    let empty = tempfile::tempdir().unwrap();
    let without_model = [
        ("QUARRY_OFFLINE", Some("1")),
        ("QUARRY_CACHE_DIR", empty.path().to_str()),
        ("QUARRY_MODEL_DIR", None),
    ];
    let run = |args: &[&str]| support::quarry_with(dir, args, &without_model);

    let out = run(&["search", "--mode", "lexical", "load_config", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("the embedding model is not here"));
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["results"][0]["path"], "src/config.rs", "{found}");

    let out = run(&["status", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        status["model"]
            .as_str()
            .unwrap()
            .contains("all-MiniLM-L6-v2"),
        "{status}"
    );
    assert!(
        status["backend"].as_str().unwrap().contains("not here"),
        "{status}"
    );

    // A search by meaning needs the model, and says where it looked.
    let out = run(&["search", "load the configuration"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("offline"),
        "{}",
        text(&out.stderr)
    );
}
