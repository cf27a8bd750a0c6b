//! The engine end to end with the real default model, on `fixtures/engine/shop` (Rust,
//! Python, JavaScript, Bash, Markdown) copied into a temporary directory.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use quarry_chunk::{ChunkId, Language};
use quarry_embed::{EmbedderOptions, ModelDir, Precision, PrecisionChoice};
use quarry_engine::{
    Config, Engine, EngineError, EngineOptions, IndexEvent, LINKS_DATA, LegWeights,
    MAX_QUERY_BYTES, PAGERANK_DATA, RelatedOptions, ResultRequest, SearchMode, SearchOptions,
};
use quarry_rank::RankingConfig;
use quarry_store::{Filter, StoreError};
use quarry_testkit::{copy_dir, model};

mod identity;
mod order;

fn shop() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/shop");
    copy_dir(&fixture, dir.path());
    dir
}

fn open(root: &Path) -> Engine {
    Engine::open(root, model(), EngineOptions::default()).unwrap()
}

fn ranking(limit: usize, max_per_file: Option<usize>) -> SearchOptions {
    SearchOptions {
        ranking: RankingConfig {
            limit,
            max_per_file,
            ..RankingConfig::default()
        },
        ..SearchOptions::default()
    }
}

/// The id of the chunk that defines `symbol`.
fn chunk_of(engine: &Engine, symbol: &str) -> ChunkId {
    let response = engine.search(symbol, &ranking(50, Some(0))).unwrap();
    response
        .results
        .iter()
        .find(|r| r.chunk.name.as_deref() == Some(symbol))
        .unwrap_or_else(|| panic!("no chunk defines {symbol}"))
        .chunk
        .chunk_id()
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
    assert_eq!(report.files_read, 9, "{report:?}");
    assert!(report.chunks_embedded >= 10, "{report:?}");
    assert!(report.warnings.is_empty(), "{report:?}");
    assert!(matches!(events[0], IndexEvent::Changes { to_read: 9, .. }));
    assert!(events.contains(&IndexEvent::Graph));
    let (files, edges) = report.graph.unwrap();
    assert!(
        files >= 6 && edges >= 1,
        "cart.rs imports config.rs: {files} files, {edges} edges"
    );
    // The PageRank is stored per file; config.rs, imported, outranks cart.rs.
    let store = engine.store();
    let snapshot = store.snapshot().unwrap();
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
    assert_eq!(
        (response.weights.dense, response.weights.lexical),
        (0.0, 1.0)
    );
    assert_eq!(response.results[0].chunk.path, "src/config.rs");
    assert_eq!(response.weights.file, 0.0, "a name asks for a chunk");
    // A question also runs the file leg, at half the lexical leg's weight.
    let question = engine
        .search("where is the configuration file loaded?", &lexical)
        .unwrap();
    assert_eq!(question.weights.file, 0.5);
    assert_eq!(question.results[0].chunk.path, "src/config.rs");

    // Weights out of range are refused with the setting named, not searched with.
    let bad_leg = SearchOptions {
        legs: LegWeights {
            sentence: 1.5,
            ..LegWeights::default()
        },
        ..SearchOptions::default()
    };
    let error = engine.search("cart", &bad_leg).unwrap_err().to_string();
    assert!(error.contains("sentence"), "{error}");
    let mut bad_field = SearchOptions::default();
    bad_field.lexical.body = -1.0;
    let error = engine.search("cart", &bad_field).unwrap_err().to_string();
    assert!(error.contains("body"), "{error}");
}

#[test]
fn lexical_work_never_loads_the_model() {
    let repo = shop();
    let engine = open(repo.path());
    engine.index_files(&mut |_| {}).unwrap();
    let lexical = SearchOptions {
        mode: SearchMode::Lexical,
        ..SearchOptions::default()
    };
    let response = engine.search("load_config", &lexical).unwrap();
    assert_eq!(response.results[0].chunk.path, "src/config.rs");
    engine.status(0.5).unwrap();
    assert!(!engine.model().unwrap().is_loaded());

    // The first vector loads it.
    engine.embed_pending(&mut |_| {}).unwrap();
    assert!(engine.model().unwrap().is_loaded());
}

#[test]
fn the_import_graph_is_rebuilt_from_stored_imports_without_reading_unchanged_files() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    let write = |name: &str, text: &str| fs::write(root.join(name), text).unwrap();
    write("a.js", "const b = require('./b.js');\nb();\n");
    write("b.js", "module.exports = function b() { return 1; };\n");
    write("c.js", "module.exports = function c() { return 2; };\n");
    let engine = open(root);
    engine.index_files(&mut |_| {}).unwrap();
    let links = |engine: &Engine, path: &str| -> Vec<String> {
        let bytes = engine
            .store()
            .snapshot()
            .unwrap()
            .file_data(path, LINKS_DATA);
        serde_json::from_slice(&bytes.unwrap().unwrap()).unwrap()
    };
    assert_eq!(links(&engine, "a.js"), ["b.js"]);

    // a.js now requires c.js, but keeps its size and time: change detection calls it
    // unchanged, so only a graph that parsed it again would see the new import.
    let before = fs::metadata(root.join("a.js")).unwrap();
    write("a.js", "const c = require('./c.js');\nc();\n");
    fs::File::options()
        .write(true)
        .open(root.join("a.js"))
        .unwrap()
        .set_modified(before.modified().unwrap())
        .unwrap();
    assert_eq!(fs::metadata(root.join("a.js")).unwrap().len(), before.len());
    write(
        "b.js",
        "const c = require('./c.js');\nmodule.exports = function b() { return c(); };\n",
    );
    let report = engine.index_files(&mut |_| {}).unwrap();
    assert_eq!(report.files_read, 1);
    assert!(report.graph.is_some(), "a new import ranks the graph again");
    assert_eq!(links(&engine, "a.js"), ["b.js"]);
    assert_eq!(links(&engine, "b.js"), ["a.js", "c.js"]);

    // An edit that keeps every import leaves the graph as it stands.
    write(
        "b.js",
        "const c = require('./c.js');\nmodule.exports = function b() { return c() + 1; };\n",
    );
    let report = engine.index_files(&mut |_| {}).unwrap();
    assert_eq!((report.files_read, report.graph), (1, None), "{report:?}");
    assert_eq!(links(&engine, "b.js"), ["a.js", "c.js"]);
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
    // A misspelt language is refused with the known ones, not answered with nothing.
    let config = Config::default();
    let misspelt = ResultRequest {
        languages: vec!["rustt".into()],
        ..ResultRequest::default()
    };
    let error = misspelt.filter(&engine, &config).unwrap_err();
    assert!(error.to_string().contains("\"rustt\"") && error.to_string().contains("python"));
    let spelt = ResultRequest {
        languages: vec!["Rust".into()],
        ..ResultRequest::default()
    };
    assert!(!spelt.filter(&engine, &config).unwrap().is_empty());
    // An empty repository indexes to nothing, and searches find nothing.
    let empty = tempfile::tempdir().unwrap();
    let engine = open(empty.path());
    let report = engine.index(&mut |_| {}).unwrap();
    assert_eq!((report.files_read, report.chunks_embedded), (0, 0));
    assert!(
        engine
            .search("anything", &SearchOptions::default())
            .unwrap()
            .results
            .is_empty()
    );
}

#[test]
fn the_diversity_cap_shows_several_files_where_one_would_fill_the_results() {
    let repo = shop();
    let engine = open(repo.path());
    engine.index(&mut |_| {}).unwrap();
    let paths = |options: &SearchOptions| -> Vec<String> {
        let response = engine.search("shipping cost", options).unwrap();
        response.results.into_iter().map(|r| r.chunk.path).collect()
    };
    let shipping = |paths: &[String]| paths.iter().filter(|p| *p == "src/shipping.rs").count();

    let uncapped = paths(&ranking(5, Some(0)));
    assert_eq!(uncapped.len(), 5);
    assert_eq!(
        shipping(&uncapped),
        5,
        "no cap: one file fills the results: {uncapped:?}"
    );

    // The hard cap: at most two chunks of a file, spilling back only into empty slots.
    let mut hard = ranking(5, Some(2));
    hard.ranking.soft_cap = false;
    let capped = paths(&hard);
    assert_eq!(capped.len(), 5, "spillover fills the results: {capped:?}");
    assert_eq!(shipping(&capped), 2, "{capped:?}");
    assert_eq!(
        capped[0], "src/shipping.rs",
        "the best file still leads: {capped:?}"
    );
    let mut files = capped.clone();
    files.sort();
    files.dedup();
    assert!(files.len() >= 3, "{capped:?}");

    // The default, a soft cap of one: the file's further chunks are decayed, not dropped.
    let soft = paths(&ranking(5, None));
    assert_eq!(soft[0], "src/shipping.rs", "{soft:?}");
    let mut files = soft.clone();
    files.sort();
    files.dedup();
    assert!(files.len() >= 3, "other files get their turn: {soft:?}");
}

#[test]
fn related_finds_similar_code_elsewhere_never_in_the_source_file() {
    let repo = shop();
    let engine = open(repo.path());
    engine.index(&mut |_| {}).unwrap();
    let source = chunk_of(&engine, "retry_with_backoff");

    let response = engine.related(source, &RelatedOptions::default()).unwrap();
    assert_eq!(response.source.name.as_deref(), Some("retry_with_backoff"));
    let paths: Vec<&str> = response
        .results
        .iter()
        .map(|r| r.chunk.path.as_str())
        .collect();
    assert!(!paths.contains(&"lib/http_client.py"), "{paths:?}");
    let position = |path: &str| paths.iter().position(|p| *p == path);
    let retry = position("lib/retry.js").expect("the JavaScript retry helper is related");
    assert!(
        position("lib/format.js").is_none_or(|format| retry < format),
        "the overlapping retry helper ranks above the unrelated formatting code: {paths:?}"
    );
    assert!(
        response
            .results
            .iter()
            .all(|r| (0.0..=1.0).contains(&r.score))
    );

    // The source file's other chunks on request; the source chunk itself never.
    let with_own = RelatedOptions {
        include_source_file: true,
        ..RelatedOptions::default()
    };
    let response = engine.related(source, &with_own).unwrap();
    assert!(
        response
            .results
            .iter()
            .all(|r| r.chunk.chunk_id() != source)
    );
    assert!(
        response
            .results
            .iter()
            .any(|r| r.chunk.path == "lib/http_client.py")
    );

    // Filters apply before the cut, and min_score cuts by score.
    let python_only = RelatedOptions {
        filter: Filter::default().language(Language::JavaScript),
        min_score: 0.2,
        ..RelatedOptions::default()
    };
    let response = engine.related(source, &python_only).unwrap();
    assert!(!response.results.is_empty());
    assert!(
        response
            .results
            .iter()
            .all(|r| r.chunk.language == quarry_chunk::Language::JavaScript && r.score >= 0.2)
    );

    // Files linked in the import graph: cart.rs imports config.rs.
    let total = chunk_of(&engine, "total_with_tax");
    let linked = RelatedOptions {
        include_linked: true,
        ranking: RankingConfig {
            limit: 3,
            ..RankingConfig::default()
        },
        ..RelatedOptions::default()
    };
    let response = engine.related(total, &linked).unwrap();
    assert!(
        response.linked_files.contains(&"src/config.rs".to_owned()),
        "{response:?}"
    );

    let unknown = ChunkId(12345);
    let error = engine
        .related(unknown, &RelatedOptions::default())
        .unwrap_err();
    assert!(matches!(error, EngineError::UnknownChunk { .. }));
    assert!(
        error
            .to_string()
            .contains("chunk ids come from search results"),
        "{error}"
    );
}

#[test]
fn libraries_are_searchable_alone_or_with_the_project() {
    let repo = shop();
    let library = quarry_testkit::library(
        "src/duration.rs",
        "/// Parses a human duration such as `1h30m` into seconds.\npub fn parse_duration(text: &str) -> Option<u64> {\n    let (hours, minutes) = text.split_once('h')?;\n    Some(hours.parse::<u64>().ok()? * 3600 + minutes.trim_end_matches('m').parse::<u64>().ok()? * 60)\n}\n",
    );
    let engine = open(repo.path());
    engine
        .add_library("humantime", library.path(), false)
        .unwrap();
    let report = engine.index(&mut |_| {}).unwrap();
    assert_eq!(report.files_read, 10, "{report:?}");

    let scoped = |scopes: &[&str]| -> Vec<String> {
        let scopes: Vec<String> = scopes.iter().map(|s| s.to_string()).collect();
        let filter = engine.scope_filter(Filter::default(), &scopes).unwrap();
        let options = SearchOptions {
            filter,
            ..SearchOptions::default()
        };
        let response = engine
            .search("parse a duration like 1h30m", &options)
            .unwrap();
        response.results.into_iter().map(|r| r.chunk.path).collect()
    };
    let library_only = scoped(&["lib:humantime"]);
    assert_eq!(library_only, ["lib:humantime/src/duration.rs"]);
    assert!(scoped(&["project"]).iter().all(|p| !p.starts_with("lib:")));
    let both = scoped(&["project", "lib:humantime"]);
    assert_eq!(both[0], "lib:humantime/src/duration.rs", "{both:?}");
    assert!(both.len() > 1);
    assert_eq!(scoped(&["all"]), both);
    // Scopes naming every source constrain nothing, so a search pays no per-chunk check.
    let project = ["project".to_owned()];
    let every = ["project".to_owned(), "lib:humantime".to_owned()];
    assert!(
        engine
            .scope_filter(Filter::default(), &project)
            .unwrap()
            .constrains_paths()
    );
    assert!(
        engine
            .scope_filter(Filter::default(), &every)
            .unwrap()
            .is_empty()
    );
    let error = engine
        .scope_filter(Filter::default(), &["lib:nope".to_owned()])
        .unwrap_err();
    assert!(error.to_string().contains("lib:humantime"), "{error}");

    engine.remove_library("humantime").unwrap();
    assert!(engine.index(&mut |_| {}).unwrap().files_read == 0);
    assert!(scoped(&["all"]).iter().all(|p| !p.starts_with("lib:")));
    assert!(
        engine
            .scope_filter(Filter::default(), &project)
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        engine.remove_library("humantime"),
        Err(EngineError::UnknownLibrary { .. })
    ));
}

#[test]
fn bad_files_are_skipped_with_a_reason_and_the_index_survives() {
    let repo = shop();
    let root = repo.path();
    fs::write(root.join("logo.rs"), b"fn main() {}\0\x01\x02 binary").unwrap();
    fs::write(
        root.join("latin1.py"),
        b"# caf\xe9\ndef greet():\n    return 1\n",
    )
    .unwrap();
    let big = fs::File::create(root.join("dump.sql")).unwrap();
    big.set_len(50 << 20).unwrap();
    // A name that is not UTF-8 cannot be stored or shown: a warning, and the rest goes on.
    let bad_name = std::ffi::OsStr::from_bytes(b"caf\xe9.rs");
    fs::write(root.join(bad_name), "fn cafe() {}\n").unwrap();
    let engine = open(root);
    let report = engine.index(&mut |_| {}).unwrap();
    assert!(
        report.warnings.iter().any(|w| w.contains("not UTF-8")),
        "{:?}",
        report.warnings
    );
    let reason = |path: &str| {
        report
            .skipped
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, why)| why.clone())
            .unwrap_or_else(|| panic!("{path} is skipped: {report:?}"))
    };
    assert!(reason("logo.rs").contains("binary"));
    assert!(reason("latin1.py").contains("UTF-8"));
    assert!(reason("dump.sql").contains("52428800 bytes"));
    assert!(top(&engine, "read the settings file", 3).contains(&"src/config.rs".to_owned()));
    // Skipped files are recorded, so the next run does not read them again.
    assert_eq!(engine.index(&mut |_| {}).unwrap().files_read, 0);

    let long = "parse the configuration ".repeat(MAX_QUERY_BYTES / 10);
    let error = engine.search(&long, &SearchOptions::default()).unwrap_err();
    assert!(matches!(error, EngineError::QueryTooLong { .. }), "{error}");
    drop(engine);

    // A damaged database is refused with its path and the fix, and left as it is.
    let database = quarry_store::Store::database_path(root);
    let mut bytes = fs::read(&database).unwrap();
    let damaged = 4096.min(bytes.len());
    bytes[..damaged].fill(0xAB);
    fs::write(&database, &bytes).unwrap();
    let error = Engine::open(root, model(), EngineOptions::default()).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("index.redb"), "{message}");
    assert!(message.contains("--force"), "{message}");
    assert_eq!(
        fs::read(&database).unwrap(),
        bytes,
        "the damaged file is kept for inspection"
    );
    let rebuild = Engine::rebuild(root, model(), EngineOptions::default()).unwrap();
    assert_eq!(rebuild.engine().index(&mut |_| {}).unwrap().files_read, 12);
    let rebuilt = rebuild.finish().unwrap();
    assert_eq!(rebuilt.status(0.0).unwrap().files, 12);
}

#[test]
fn concurrent_searches_all_answer_while_the_index_is_written() {
    let repo = shop();
    let engine = std::sync::Arc::new(open(repo.path()));
    engine.index(&mut |_| {}).unwrap();
    let expected = engine
        .search("shipping cost", &SearchOptions::default())
        .unwrap()
        .results
        .len();
    // Eight searchers and a writer at once, as an MCP server sees them; a search that waited
    // on another forever (a lock held across work on rayon's threads) fails the deadline.
    let (done, finished) = std::sync::mpsc::channel();
    for searcher in 0..8 {
        let (engine, done) = (std::sync::Arc::clone(&engine), done.clone());
        std::thread::spawn(move || {
            for i in 0..25 {
                let query =
                    ["shipping cost", "retry with backoff", "cart total"][(searcher + i) % 3];
                let response = engine.search(query, &SearchOptions::default());
                if let Err(error) = &response {
                    panic!("{query}: {error}");
                }
            }
            done.send(()).unwrap();
        });
    }
    let writer = {
        let engine = std::sync::Arc::clone(&engine);
        let root = repo.path().to_path_buf();
        std::thread::spawn(move || {
            for round in 0..5 {
                let path = root.join("src/cart.rs");
                let mut source = fs::read_to_string(&path).unwrap();
                source.push_str(&format!("\npub fn added_{round}() -> u32 {{ {round} }}\n"));
                fs::write(&path, source).unwrap();
                engine.index(&mut |_| {}).unwrap();
            }
        })
    };
    for _ in 0..8 {
        finished
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("every searcher finishes: none is stuck behind another");
    }
    writer.join().unwrap();
    let after = engine
        .search("shipping cost", &SearchOptions::default())
        .unwrap();
    assert_eq!(after.results.len(), expected);
}

#[test]
fn indexing_the_paths_a_watcher_reported_reads_only_them() {
    let repo = shop();
    let engine = open(repo.path());
    engine.index_files(&mut |_| {}).unwrap();
    let append = |path: &str, line: &str| {
        let path = repo.path().join(path);
        let text = fs::read_to_string(&path).unwrap() + line;
        fs::write(path, text).unwrap();
    };
    append("src/cart.rs", "\npub fn reported_edit() {}\n");
    append("lib/format.js", "\nfunction unreportedEdit() {}\n");
    let report = engine
        .index_paths(&[repo.path().join("src/cart.rs")], &mut |_| {})
        .unwrap();
    assert_eq!(report.files_read, 1, "{report:?}");
    let lexical = SearchOptions {
        mode: SearchMode::Lexical,
        ..SearchOptions::default()
    };
    let found = |query: &str| {
        engine
            .search(query, &lexical)
            .unwrap()
            .results
            .first()
            .map(|r| r.chunk.path.clone())
    };
    assert_eq!(found("reported_edit").as_deref(), Some("src/cart.rs"));
    assert_ne!(found("unreportedEdit").as_deref(), Some("lib/format.js"));

    // The root itself stands for the whole tree.
    let report = engine
        .index_paths(&[repo.path().to_path_buf()], &mut |_| {})
        .unwrap();
    assert_eq!(report.files_read, 1, "{report:?}");
    assert_eq!(found("unreportedEdit").as_deref(), Some("lib/format.js"));
}
