//! Tool arguments, generated: every tool called through a real MCP client with objects of
//! known and unknown keys holding values of every JSON type, against a server over a real
//! index of `fixtures/engine/shop`. Nothing may panic or end the connection; every refusal
//! is a tool error that says what is wrong.

use std::sync::OnceLock;

use proptest::prelude::*;
use quarry_engine::{Config, Engine, EngineOptions};
use quarry_mcp::{Server, ServerOptions};
use quarry_testkit::model;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Map, Value, json};

/// A server over the indexed fixture, with a client connected to it through a pipe.
struct Session {
    /// Some of the index's chunk ids, for `get_related`.
    chunk_ids: Vec<String>,
    runtime: tokio::runtime::Runtime,
    client: RunningService<RoleClient, ()>,
}

fn session() -> &'static Session {
    static SESSION: OnceLock<Session> = OnceLock::new();
    SESSION.get_or_init(|| {
        let repo = quarry_testkit::kept_shop(env!("CARGO_TARGET_TMPDIR"), "bad-arguments-shop");
        let engine = Engine::open(&repo, model(), EngineOptions::default()).unwrap();
        engine.index(&mut |_| {}).unwrap();
        let chunk_ids = engine
            .store()
            .files()
            .unwrap()
            .iter()
            .flat_map(|file| file.chunk_ids.first())
            .map(|id| format!("{id:032x}"))
            .collect();
        let options = ServerOptions {
            index_on_start: false,
            ..ServerOptions::default()
        };
        let config = Config::load(&repo).unwrap();
        let server = Server::new(engine, config, model().clone(), options);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = runtime.block_on(async {
            let (server_end, client_end) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move {
                let running = server.serve(server_end).await.unwrap();
                let _ = running.waiting().await;
            });
            ().serve(client_end).await.unwrap()
        });
        Session {
            chunk_ids,
            runtime,
            client,
        }
    })
}

/// The text a tool's result holds, its blocks joined.
fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect()
}

fn call(name: &str, arguments: JsonObject) -> CallToolResult {
    let session = session();
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments.clone());
    session
        .runtime
        .block_on(session.client.call_tool(params))
        .unwrap_or_else(|error| panic!("{name} {arguments:?}: a protocol error: {error}"))
}

/// The tools and the arguments each takes, besides the result arguments.
const TOOLS: &[(&str, &[&str])] = &[
    ("semantic_search", &["query", "mode"]),
    (
        "get_related",
        &[
            "chunk_id",
            "min_score",
            "include_linked",
            "include_source_file",
        ],
    ),
    (
        "find_similar",
        &[
            "path",
            "line",
            "min_score",
            "include_linked",
            "include_source_file",
        ],
    ),
    ("index", &["action", "force"]),
];

/// What `semantic_search`, `get_related` and `find_similar` take besides their own.
const RESULT_KEYS: &[&str] = &[
    "limit",
    "offset",
    "cursor",
    "max_per_file",
    "include_tests",
    "paths",
    "languages",
    "scope",
    "detail_level",
    "explain",
];

/// Keys no tool takes.
const UNKNOWN_KEYS: &[&str] = &["max_results", "", "Query", "k"];

fn word() -> BoxedStrategy<Value> {
    prop_oneof![
        // JSON, unlike a process's argument, can hold a NUL.
        3 => proptest::sample::select([quarry_testkit::ODD_VALUES, &["\u{0}"]].concat())
            .prop_map(|w| json!(w)),
        1 => ".{0,40}".prop_map(Value::String),
    ]
    .boxed()
}

fn words(pool: &'static [&'static str]) -> BoxedStrategy<Value> {
    proptest::collection::vec(proptest::sample::select(pool), 0..4)
        .prop_map(|w| json!(w))
        .boxed()
}

/// Any JSON value, nested a little.
fn value() -> BoxedStrategy<Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        word(),
    ];
    scalar
        .prop_recursive(2, 8, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(("[a-z]{0,6}", inner), 0..3)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
        .boxed()
}

/// A value of the type `key` takes, in range or out of it.
fn typed(key: &str) -> BoxedStrategy<Value> {
    let count = || {
        prop_oneof![
            -2i64..300,
            Just(50),
            Just(51),
            Just(200),
            Just(201),
            Just(1_000),
            Just(1_001),
            Just(1_000_000_000),
            Just(1 << 32),
            Just(1_000_000_000_000_000_000),
            Just(i64::MAX),
        ]
    };
    match key {
        "query" => word(),
        "chunk_id" => prop_oneof![
            proptest::sample::select(session().chunk_ids.clone()).prop_map(|id| json!(id)),
            word(),
        ]
        .boxed(),
        "path" => {
            proptest::sample::select(&["src/cart.rs", "lib/http_client.py", "nope.rs", ""][..])
                .prop_map(|p| json!(p))
                .boxed()
        }
        "line" => (-1i64..120).prop_map(|n| json!(n)).boxed(),
        "action" => proptest::sample::select(&["status", "build", "explode"][..])
            .prop_map(|a| json!(a))
            .boxed(),
        "limit" | "offset" | "max_per_file" => count().prop_map(|n| json!(n)).boxed(),
        "min_score" => (-1.5f64..2.0).prop_map(|f| json!(f)).boxed(),
        "mode" | "include_tests" | "detail_level" | "cursor" => word(),
        "paths" => words(&["src/**", "**/*.py", "src/[oops", "", "lib/*", "**"]),
        "languages" => words(&["rust", "python", "javascript", "klingon", "", "RUST"]),
        "scope" => words(&["project", "all", "lib:nope", "lib:", "", "elsewhere"]),
        _ => any::<bool>().prop_map(Value::Bool).boxed(),
    }
}

/// A tool and its arguments: mostly its own keys with values of their types, sometimes a
/// value of another type, a key of another tool or one no tool takes.
fn call_case() -> impl Strategy<Value = (&'static str, JsonObject)> {
    proptest::sample::select(TOOLS).prop_flat_map(|(tool, own)| {
        let mut keys: Vec<&'static str> = own.to_vec();
        if tool != "index" {
            keys.extend(RESULT_KEYS);
        }
        let all: Vec<&'static str> = TOOLS
            .iter()
            .flat_map(|(_, keys)| keys.iter().copied())
            .chain(RESULT_KEYS.iter().copied())
            .chain(UNKNOWN_KEYS.iter().copied())
            .collect();
        let key = prop_oneof![
            9 => proptest::sample::select(keys),
            1 => proptest::sample::select(all),
        ];
        let pair = key.prop_flat_map(|key| {
            prop_oneof![4 => typed(key), 1 => value()].prop_map(move |value| (key.to_owned(), value))
        });
        // Required arguments come first, so that most cases get past them (or fail on
        // their values); a missing one is a case too.
        let required: Vec<&'static str> = match tool {
            "semantic_search" => vec!["query"],
            "get_related" => vec!["chunk_id"],
            "find_similar" => vec!["path", "line"],
            _ => vec![],
        };
        let required = required
            .into_iter()
            .map(|key| {
                prop_oneof![12 => typed(key).prop_map(Some), 2 => value().prop_map(Some), 1 => Just(None)]
                    .prop_map(move |value| value.map(|value| (key.to_owned(), value)))
            })
            .collect::<Vec<_>>();
        (required, proptest::collection::vec(pair, 0..5)).prop_map(move |(required, pairs)| {
            let arguments = required.into_iter().flatten().chain(pairs).collect::<Map<String, Value>>();
            (tool, arguments)
        })
    })
}

/// A tool error's text: present, short, and words rather than a panic or a Rust value.
fn check_refusal(name: &str, arguments: &JsonObject, result: &CallToolResult) {
    let text = text_of(result);
    let case = format!("{name} {}", Value::Object(arguments.clone()));
    assert!(
        !text.trim().is_empty(),
        "{case}: an error without a message"
    );
    // What the caller gave is named visibly, even when it is empty.
    assert!(!text.starts_with(char::is_whitespace), "{case}: {text}");
    assert!(text.len() < 2000, "{case}: {text}");
    for sign in ["panicked", "RUST_BACKTRACE", "Some(", "Err(", "Ok("] {
        assert!(!text.contains(sign), "{case}: {text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_arguments_get_an_answer_or_a_clear_refusal((tool, arguments) in call_case()) {
        // A forced rebuild is a valid request that re-embeds everything: not what this
        // test is for.
        prop_assume!(!(tool == "index" && arguments.get("force") == Some(&json!(true))));
        let result = call(tool, arguments.clone());
        if result.is_error == Some(true) {
            check_refusal(tool, &arguments, &result);
        } else {
            prop_assert!(result.structured_content.is_some(), "{tool} {arguments:?}");
        }
    }
}

#[test]
fn the_server_answers_after_every_refusal() {
    let mut refused = 0;
    for (tool, arguments) in [
        ("semantic_search", json!({"query": 5})),
        ("semantic_search", json!({"query": "cart", "limit": -1})),
        ("get_related", json!({"chunk_id": ["a"]})),
        (
            "find_similar",
            json!({"path": "src/cart.rs", "line": 1e300}),
        ),
        ("index", json!({"action": {"build": true}})),
        // Sized the search's buffers once: the process aborted.
        (
            "semantic_search",
            json!({"query": "cart", "max_per_file": 1_000_000_000}),
        ),
        (
            "semantic_search",
            json!({"query": "cart", "max_per_file": 1u64 << 32}),
        ),
        (
            "semantic_search",
            json!({"query": "cart", "max_per_file": 1_000_000_000_000_000_000u64}),
        ),
        (
            "get_related",
            json!({"chunk_id": session().chunk_ids[0], "max_per_file": 1u64 << 40}),
        ),
        (
            "get_related",
            json!({"chunk_id": session().chunk_ids[0], "min_score": 2.0}),
        ),
    ] {
        let Value::Object(arguments) = arguments else {
            unreachable!()
        };
        let result = call(tool, arguments.clone());
        assert_eq!(result.is_error, Some(true), "{tool} {arguments:?}");
        check_refusal(tool, &arguments, &result);
        if let Some(key) = ["max_per_file", "min_score"]
            .into_iter()
            .find(|key| arguments.contains_key(*key))
        {
            let text = format!("{:?}", result.content);
            assert!(text.contains(key) && text.contains(" to "), "{text}");
        }
        refused += 1;
    }
    let Value::Object(search) = json!({"query": "cart total with tax", "mode": "lexical"}) else {
        unreachable!()
    };
    let result = call("semantic_search", search);
    assert_ne!(result.is_error, Some(true));
    let results = &result.structured_content.unwrap()["results"];
    assert!(
        !results.as_array().unwrap().is_empty(),
        "after {refused} refusals"
    );
}

#[test]
fn result_tools_declare_the_views_they_return() {
    let session = session();
    let tools = session
        .runtime
        .block_on(session.client.list_all_tools())
        .unwrap();
    for (tool, fields) in [
        (
            "semantic_search",
            &["query", "weights", "coverage", "results"][..],
        ),
        (
            "get_related",
            &["source", "linked_files", "coverage", "results"],
        ),
        (
            "find_similar",
            &["source", "linked_files", "coverage", "results"],
        ),
    ] {
        let tool = tools.iter().find(|t| t.name == tool).unwrap();
        let schema = tool.output_schema.as_ref().expect("an output schema");
        let properties = schema["properties"].as_object().unwrap();
        for field in fields.iter().chain(&[
            "offset",
            "next_offset",
            "next_cursor",
            "ranking_moved",
            "ranking_note",
            "partial",
            "note",
        ]) {
            assert!(
                properties.contains_key(*field),
                "{} lacks {field}",
                tool.name
            );
        }
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(required, fields, "{}", tool.name);
    }
}

/// A megabyte in every argument that takes a string, and as an unknown key: each refusal
/// quotes a few dozen characters of it, never the whole (an error once echoed 10 MB).
#[test]
fn huge_arguments_get_short_refusals() {
    let huge = "x".repeat(1 << 20);
    let id = &session().chunk_ids[0];
    let cases = [
        ("semantic_search", json!({"query": huge})),
        ("semantic_search", json!({"query": "cart", "mode": huge})),
        (
            "semantic_search",
            json!({"query": "cart", "include_tests": huge}),
        ),
        (
            "semantic_search",
            json!({"query": "cart", "detail_level": huge}),
        ),
        (
            "semantic_search",
            json!({"query": "cart", "paths": [format!("[{huge}")]}),
        ),
        (
            "semantic_search",
            json!({"query": "cart", "languages": [huge]}),
        ),
        ("semantic_search", json!({"query": "cart", "scope": [huge]})),
        ("semantic_search", json!({"query": "cart", "limit": huge})),
        ("semantic_search", json!({"query": "cart", huge.clone(): 1})),
        ("get_related", json!({"chunk_id": huge})),
        ("get_related", json!({"chunk_id": id, "min_score": huge})),
        ("find_similar", json!({"path": huge, "line": 1})),
        ("index", json!({"action": huge})),
    ];
    for (tool, arguments) in cases {
        let Value::Object(arguments) = arguments else {
            unreachable!()
        };
        let result = call(tool, arguments.clone());
        assert_eq!(result.is_error, Some(true), "{tool}");
        let text = text_of(&result);
        assert!(
            text.len() < 1000,
            "{tool}: a refusal of {} bytes: {}",
            text.len(),
            &text[..300.min(text.len())]
        );
    }
}

/// Path globs compile into one set per request, and a request holds at most 1,000: the
/// bound's worth answers, past it a refusal says the bound (20,000 globs once took 171 s).
#[test]
fn many_path_globs_are_answered_up_to_the_bound() {
    let globs = |n: usize| -> Vec<String> { (0..n).map(|i| format!("src/dir{i}/**")).collect() };
    let Value::Object(within) = json!({"query": "cart", "paths": globs(1000)}) else {
        unreachable!()
    };
    let result = call("semantic_search", within);
    assert_ne!(result.is_error, Some(true), "{:?}", result.content);
    let Value::Object(past) = json!({"query": "cart", "paths": globs(20_000)}) else {
        unreachable!()
    };
    let result = call("semantic_search", past);
    assert_eq!(result.is_error, Some(true));
    let text = format!("{:?}", result.content);
    assert!(text.contains("at most 1000"), "{text}");
}

/// Path globs compile into one automaton per request: 1,000 globs of 2,000 bytes once gave
/// `invalid path glob "": error building NFA`, naming neither a glob nor a limit. Past the
/// bound (64 KiB together) the tool error names how many globs of how many bytes, the bound,
/// and the longest glob quoted short.
#[test]
fn path_globs_too_large_together_are_refused_naming_the_bound_and_a_glob() {
    let globs: Vec<String> = (0..1000)
        .map(|i| format!("src/{i:04}{}", "a*".repeat(996)))
        .collect();
    assert!(globs.iter().all(|g| g.len() == 2000));
    for tool in ["semantic_search", "get_related", "find_similar"] {
        let mut arguments = match tool {
            "semantic_search" => json!({"query": "cart"}),
            "get_related" => json!({"chunk_id": session().chunk_ids[0]}),
            _ => json!({"path": "src/cart.rs", "line": 1}),
        };
        arguments["paths"] = json!(globs);
        let Value::Object(arguments) = arguments else {
            unreachable!()
        };
        let result = call(tool, arguments);
        assert_eq!(result.is_error, Some(true), "{tool}");
        let text = text_of(&result);
        assert!(text.len() < 500, "{tool}: {} bytes: {text}", text.len());
        for said in [
            "the path globs together are too large to compile",
            "1000 globs of 2000000 bytes",
            &format!(
                "more than the {} a search compiles",
                quarry_engine::MAX_PATH_GLOB_BYTES
            ),
            "the longest is \"src/0000a*a*a*",
            "…\" (2000 bytes)",
        ] {
            assert!(text.contains(said), "{tool}: {said}: {text}");
        }
    }
}
