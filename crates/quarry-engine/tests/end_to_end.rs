//! The engine end to end with the real default model, on `fixtures/engine/shop` (Rust,
//! Python, JavaScript, Bash, Markdown) copied into a temporary directory.

use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use quarry_embed::{DEFAULT_MODEL, ModelDir, Provisioner};
use quarry_engine::{
    Engine, EngineError, EngineOptions, IndexEvent, PAGERANK_DATA, SearchMode, SearchOptions,
};
use quarry_rank::RankingConfig;

/// The default model, downloaded into the user cache on first use as a user's first run would.
fn model() -> &'static ModelDir {
    static MODEL: OnceLock<ModelDir> = OnceLock::new();
    MODEL.get_or_init(|| {
        Provisioner::from_env()
            .resolve(&DEFAULT_MODEL)
            .unwrap_or_else(|error| panic!("{error}"))
    })
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn shop() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/shop");
    copy_dir(&fixture, dir.path());
    dir
}

fn open(root: &Path) -> Engine {
    Engine::open(root, model(), EngineOptions::default()).unwrap()
}

/// The paths of the first `n` results.
fn top(engine: &Engine, query: &str, n: usize) -> Vec<String> {
    let response = engine.search(query, &SearchOptions::default()).unwrap();
    response
        .results
        .iter()
        .take(n)
        .map(|r| r.chunk.path.clone())
        .collect()
}

#[test]
fn indexes_a_repository_and_finds_code_by_description_and_by_identifier() {
    let repo = shop();
    let engine = open(repo.path());
    let mut events = Vec::new();
    let report = engine.index(&mut |event| events.push(event)).unwrap();
    assert_eq!(report.files_read, 7, "{report:?}");
    assert!(report.chunks_embedded >= 10, "{report:?}");
    assert!(report.warnings.is_empty(), "{report:?}");
    assert!(matches!(events[0], IndexEvent::Changes { to_read: 7, .. }));
    assert!(events.contains(&IndexEvent::Graph));
    let (files, edges) = report.graph.unwrap();
    assert!(
        files >= 6 && edges >= 1,
        "cart.rs imports config.rs: {files} files, {edges} edges"
    );
    // The PageRank is stored per file; config.rs, imported, outranks cart.rs.
    let snapshot = engine.store().snapshot().unwrap();
    let percentile = |path: &str| {
        let bytes = snapshot.file_data(path, PAGERANK_DATA).unwrap().unwrap();
        serde_json::from_slice::<quarry_graph::FileScore>(&bytes)
            .unwrap()
            .percentile
    };
    assert!(percentile("src/config.rs") > percentile("src/cart.rs"));
    drop(snapshot);

    for (query, expected) in [
        ("read the settings file", "src/config.rs"),
        (
            "retry a failing request with exponential backoff",
            "lib/http_client.py",
        ),
        ("retry_with_backoff", "lib/http_client.py"),
        ("formatPrice", "lib/format.js"),
        ("total price including tax", "src/cart.rs"),
        ("copy the release build to the server", "scripts/deploy.sh"),
    ] {
        let found = top(&engine, query, 3);
        assert!(
            found.iter().any(|p| p == expected),
            "{query:?}: expected {expected} in the top 3, got {found:?}"
        );
    }

    let response = engine.search("cart", &SearchOptions::default()).unwrap();
    assert!(
        response
            .results
            .iter()
            .all(|r| (0.0..=1.0).contains(&r.score)),
        "scores lie in [0, 1]"
    );
    assert!(
        response
            .results
            .windows(2)
            .all(|w| w[0].score >= w[1].score)
    );

    // Lexical mode runs no model and still finds identifiers.
    let lexical = SearchOptions {
        mode: SearchMode::Lexical,
        ..SearchOptions::default()
    };
    let response = engine.search("load_config", &lexical).unwrap();
    assert_eq!(response.weights, (0.0, 1.0));
    assert_eq!(response.results[0].chunk.path, "src/config.rs");
}

#[test]
fn re_indexing_reads_only_what_changed_and_forgets_deleted_files() {
    let repo = shop();
    let engine = open(repo.path());
    engine.index(&mut |_| {}).unwrap();

    let again = engine.index(&mut |_| {}).unwrap();
    assert_eq!(
        (again.files_read, again.chunks_embedded),
        (0, 0),
        "{again:?}"
    );
    assert_eq!(again.graph, None, "nothing changed, so the graph stands");

    // One new function in cart.rs: only it is embedded; the others keep their vectors.
    let cart = repo.path().join("src/cart.rs");
    let mut text = fs::read_to_string(&cart).unwrap();
    text.push_str(
        "\n/// Applies a percentage discount code to a price.\npub fn apply_discount(cents: u64, percent: u64) -> u64 {\n    cents - cents * percent / 100\n}\n",
    );
    fs::write(&cart, text).unwrap();
    fs::remove_file(repo.path().join("lib/format.js")).unwrap();
    let changed = engine.index(&mut |_| {}).unwrap();
    assert!(
        changed.graph.is_some(),
        "a change refreshes the import graph"
    );
    assert_eq!(changed.files_read, 1, "{changed:?}");
    assert_eq!(changed.files_removed, 1, "{changed:?}");
    assert!(changed.chunks_reused >= 1, "{changed:?}");
    assert!(changed.chunks_embedded <= 2, "{changed:?}");

    assert!(top(&engine, "apply a discount code", 3).contains(&"src/cart.rs".to_owned()));
    let all = SearchOptions {
        ranking: RankingConfig {
            limit: 50,
            ..RankingConfig::default()
        },
        ..SearchOptions::default()
    };
    let response = engine.search("formatPrice", &all).unwrap();
    assert!(
        response
            .results
            .iter()
            .all(|r| r.chunk.path != "lib/format.js")
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let repo = shop();
    let missing = repo.path().join("no-such-dir");
    let error = Engine::open(&missing, model(), EngineOptions::default()).unwrap_err();
    assert!(matches!(error, EngineError::NotADirectory { .. }));
    assert!(error.to_string().contains("no-such-dir"), "{error}");

    let engine = open(repo.path());
    assert!(matches!(
        engine.search("   ", &SearchOptions::default()),
        Err(EngineError::EmptyQuery)
    ));
}
