//! Bad input, generated: `.quarry/config.toml` files with every setting given odd values,
//! request arguments (globs, languages, limits) and query texts, against a real index of
//! `fixtures/engine/shop`. Nothing may panic; every refusal names what is wrong.

use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

use proptest::prelude::*;
use quarry_engine::{Config, Engine, EngineOptions, ResultRequest, SearchMode, SearchOptions};
use quarry_rank::IncludeTests;
use quarry_testkit::{kept_shop, model};

/// The fixture, indexed once (words only: the lexical leg needs no model) for every case.
fn shop() -> &'static (PathBuf, Engine) {
    static SHOP: OnceLock<(PathBuf, Engine)> = OnceLock::new();
    SHOP.get_or_init(|| {
        let dir = kept_shop(env!("CARGO_TARGET_TMPDIR"), "bad-input-shop");
        let engine = Engine::open(&dir, model(), EngineOptions::default()).unwrap();
        engine.index_files(&mut |_| {}).unwrap();
        (dir, engine)
    })
}

/// Every setting of the configuration file, by table.
const SETTINGS: &[(&str, &str)] = &[
    ("ranking", "limit"),
    ("ranking", "pool"),
    ("ranking", "max_per_file"),
    ("ranking", "soft_cap"),
    ("ranking", "soft_cap_decay"),
    ("ranking", "include_tests"),
    ("ranking", "source_boost"),
    ("ranking", "definition_boost"),
    ("ranking", "path_match"),
    ("ranking", "file_evidence"),
    ("ranking", "file_coverage"),
    ("ranking", "pagerank_strength"),
    ("ranking", "threshold"),
    ("ranking", "disable"),
    ("ranking.penalties", "test"),
    ("ranking.penalties", "docs"),
    ("search", "mode"),
    ("search", "detail"),
    ("search", "scopes"),
    ("search", "drift_threshold"),
    ("index", "max_file_bytes"),
    ("nonsense", "key"),
];

/// Values of every TOML type, in and out of every setting's range.
const VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "3",
    "1000000000",
    "18446744073709551615",
    "0.5",
    "-0.5",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "true",
    "\"lexical\"",
    "\"semantic\"",
    "\"never\"",
    "\"full\"",
    "\"\"",
    "\"lib:\"",
    "[]",
    "[\"all\"]",
    "[\"project\", \"lib:x\"]",
    "[\"pagerank\", \"rerank\"]",
    "[\"no such layer\"]",
    "{ a = 1 }",
];

fn config_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (prop::sample::select(SETTINGS), prop::sample::select(VALUES)),
        0..6,
    )
    .prop_map(|settings| {
        settings
            .iter()
            .map(|((table, key), value)| format!("[{table}]\n{key} = {value}\n"))
            .collect()
    })
}

fn request() -> impl Strategy<Value = ResultRequest> {
    let glob = prop::sample::select(vec!["**", "src/*", "[", "{a,b", "\\", "", "../**", "*.rs"]);
    let language = prop::sample::select(vec!["rust", "python", "cobol", "", "RUST"]);
    let scope = prop::sample::select(vec!["project", "all", "lib:none", "lib:", "x"]);
    (
        prop::option::of(0usize..1_000_000),
        prop::option::of(0usize..5),
        prop::option::of(prop::sample::select(vec![
            IncludeTests::Auto,
            IncludeTests::Always,
            IncludeTests::Never,
        ])),
        prop::collection::vec(glob, 0..3),
        prop::collection::vec(language, 0..2),
        prop::collection::vec(scope, 0..2),
    )
        .prop_map(
            |(limit, max_per_file, include_tests, paths, languages, scopes)| ResultRequest {
                limit,
                max_per_file,
                include_tests,
                paths: paths.into_iter().map(String::from).collect(),
                languages: languages.into_iter().map(String::from).collect(),
                scopes: scopes.into_iter().map(String::from).collect(),
                mode: Some(SearchMode::Lexical),
                detail: None,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn odd_configurations_requests_and_queries_are_answered_or_refused_clearly(
        config in config_text(),
        request in request(),
        query in prop_oneof![
            ".{0,80}",
            "[a-z_:\\\\.()\\[\\]{}\"'*?+-]{0,40}",
            Just("a".repeat(100_000)),
        ],
    ) {
        let (dir, engine) = shop();
        fs::create_dir_all(dir.join(".quarry")).unwrap();
        fs::write(Config::path(dir), &config).unwrap();
        let config = match Config::load(dir) {
            Ok(config) => config,
            Err(error) => {
                let message = error.to_string();
                prop_assert!(message.contains("config.toml"), "{message}");
                return Ok(());
            }
        };
        let filter = match request.filter(engine, &config) {
            Ok(filter) => filter,
            Err(error) => {
                prop_assert!(!error.to_string().is_empty());
                return Ok(());
            }
        };
        let options = SearchOptions {
            ranking: request.ranking(&config),
            filter,
            mode: request.mode(&config),
            ..SearchOptions::default()
        };
        match engine.search(&query, &options) {
            Ok(response) => prop_assert!(response.results.len() <= options.ranking.limit.max(1)),
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }
}
