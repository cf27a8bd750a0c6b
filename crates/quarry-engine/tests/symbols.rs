//! The symbol leg: a query that names a defined symbol finds the file that defines it
//! first, through the definitions table, with no model run (lexical mode).

use std::fs;
use std::path::Path;

use quarry_engine::{
    DEFINITIONS_DATA, Engine, EngineOptions, LegWeights, PAGERANK_DATA, SearchMode, SearchOptions,
    SearchResponse, SymbolMatch,
};
use quarry_testkit::model;

/// A small C library where one type is defined once and named in many files, plus a
/// Python module with two classes that both have a `get`.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write(
        "src/session.h",
        "#ifndef SESSION_H\n#define SESSION_H\n#define SESSION_BUFFER 4096\n\n\
         typedef struct session_state {\n    int fd;\n    unsigned long sent;\n    \
         unsigned long received;\n} session_state_t;\n\n\
         int session_open(session_state_t *state);\n#endif\n",
    );
    for i in 0..12 {
        write(
            &format!("src/handler_{i}.c"),
            &format!(
                "#include \"session.h\"\n\nstruct handler_{i} {{\n    session_state_t *state;\n}};\n\n\
                 int handler_{i}_run(session_state_t *state) {{\n    \
                 return session_open(state) + {i};\n}}\n"
            ),
        );
    }
    write(
        "src/session.c",
        "#include \"session.h\"\n\nint session_open(session_state_t *state)\n{\n    \
         state->sent = 0;\n    state->received = 0;\n    return state->fd;\n}\n",
    );
    write(
        "include/types.h",
        "typedef struct conn_st CONN;\ntypedef struct key_st KEY;\n",
    );
    write(
        "src/conn_local.h",
        "struct conn_st {\n    int fd;\n    KEY *key;\n    unsigned long sent;\n};\n",
    );
    write(
        "cache.py",
        "class Memory:\n    def get(self, key):\n        return self.items.get(key)\n\n\n\
         class Disk:\n    def get(self, key):\n        with open(key) as f:\n            \
         return f.read()\n",
    );
    dir
}

fn lexical(legs: LegWeights) -> SearchOptions {
    SearchOptions {
        mode: SearchMode::Lexical,
        legs,
        ..SearchOptions::default()
    }
}

/// A lexical search with the default legs.
fn search(engine: &Engine, query: &str) -> SearchResponse {
    engine
        .search(query, &lexical(LegWeights::default()))
        .unwrap()
}

fn indexed(root: &Path) -> Engine {
    let engine = Engine::open(root, model(), EngineOptions::default()).unwrap();
    engine.index_files(&mut |_| {}).unwrap();
    engine
}

#[test]
fn a_type_name_finds_its_definition_first_among_the_files_that_use_it() {
    let dir = repository();
    let engine = indexed(dir.path());
    for query in ["session_state_t", "session_state", "SessionState"] {
        let response = search(&engine, query);
        let first = &response.results[0].chunk;
        assert_eq!(first.path, "src/session.h", "{query}: {first:?}");
        assert!(
            first.start_line <= 5 && first.end_line >= 9,
            "{query}: {first:?}"
        );
        let hit = &response.definitions[0];
        assert_eq!((hit.start_line, hit.end_line), (5, 9), "{query}");
        let expected = match query {
            "SessionState" => SymbolMatch::Folded,
            _ => SymbolMatch::Exact,
        };
        assert_eq!(hit.matched, expected, "{query}");
    }
    // A `#define` constant shares a block chunk with its neighbours, and is found there.
    let response = search(&engine, "SESSION_BUFFER");
    assert_eq!(response.definitions[0].symbol, "SESSION_BUFFER");
    assert_eq!(response.results[0].chunk.path, "src/session.h");
}

#[test]
fn a_qualified_name_picks_the_definition_in_its_container() {
    let dir = repository();
    let engine = indexed(dir.path());
    for (query, line) in [("Disk::get", 7), ("Disk.get", 7), ("Memory.get", 2)] {
        let response = search(&engine, query);
        let hit = &response.definitions[0];
        assert_eq!(
            (hit.matched, hit.path.as_str(), hit.start_line),
            (SymbolMatch::Qualified, "cache.py", line),
            "{query}: {:?}",
            response.definitions
        );
        assert_eq!(response.definitions[1].matched, SymbolMatch::OtherQualifier);
    }
}

#[test]
fn a_capitalised_name_is_not_given_to_a_lowercase_function() {
    // `List` is a class made by a call, with its methods assigned: nothing the chunker
    // reads as a definition. Another file defines the function `list`.
    let dir = quarry_testkit::library(
        "List.lua",
        "local class = require 'class'\nlocal List = class()\n\n\
         List.new = function(items)\n    return setmetatable({items = items or {}}, List)\n\
         end\n\nList.append = function(self, value)\n    table.insert(self.items, value)\n    \
         return self\nend\n\nreturn List\n",
    );
    fs::write(
        dir.path().join("seq.lua"),
        "local seq = {}\n\n-- Collects an iterator's values into a table.\n\
         function seq.list(iter)\n    local values = {}\n    for v in iter do\n        \
         values[#values + 1] = v\n    end\n    return values\nend\n\nreturn seq\n",
    )
    .unwrap();
    let engine = indexed(dir.path());
    let response = search(&engine, "List");
    let found: Vec<(&str, SymbolMatch)> = response
        .definitions
        .iter()
        .map(|hit| (hit.symbol.as_str(), hit.matched))
        .collect();
    assert_eq!(found, [("seq::list", SymbolMatch::Namesake)]);
    assert_eq!(response.results[0].chunk.path, "List.lua");
    let seq_is_raised = |response: &SearchResponse| {
        let seq = response
            .results
            .iter()
            .find(|r| r.chunk.path == "seq.lua")
            .expect("seq.lua is found");
        seq.explanation
            .steps
            .iter()
            .any(|step| matches!(step.effect, quarry_rank::Effect::Defines { .. }))
    };
    assert!(!seq_is_raised(&response));
    // Asked for in lower case, the function is the definition, and is raised as one.
    let lowercase = search(&engine, "list");
    assert_eq!(lowercase.definitions[0].matched, SymbolMatch::Exact);
    assert!(seq_is_raised(&lowercase));
}

#[test]
fn the_leg_can_be_left_out_and_the_table_follows_the_files() {
    let dir = repository();
    let engine = indexed(dir.path());
    let off = LegWeights {
        symbol: 0.0,
        ..LegWeights::default()
    };
    assert!(
        engine
            .search("session_state_t", &lexical(off))
            .unwrap()
            .definitions
            .is_empty()
    );
    // Every file with chunks has its definitions stored (an empty list where it defines
    // nothing), so a later run reads no file again.
    let store = engine.store();
    let snapshot = store.snapshot().unwrap();
    for file in snapshot.files().unwrap() {
        assert!(
            snapshot
                .file_data(&file.path, DEFINITIONS_DATA)
                .unwrap()
                .is_some(),
            "{}",
            file.path
        );
    }
    drop(snapshot);
    assert_eq!(engine.index_files(&mut |_| {}).unwrap().files_read, 0);
    // A renamed definition leaves the table when its file changes.
    let header = dir.path().join("src/session.h");
    let text = fs::read_to_string(&header)
        .unwrap()
        .replace("session_state_t", "conn_state_t");
    fs::write(&header, text).unwrap();
    engine.index_files(&mut |_| {}).unwrap();
    let response = search(&engine, "conn_state_t");
    assert_eq!(response.definitions[0].path, "src/session.h");
    let gone = search(&engine, "session_state_t");
    assert!(
        gone.definitions
            .iter()
            .all(|hit| hit.symbol != "session_state_t")
    );
}

#[test]
fn a_typedef_of_a_type_defined_elsewhere_finds_that_definition() {
    let dir = repository();
    let engine = indexed(dir.path());
    let response = search(&engine, "CONN");
    let first = &response.definitions[0];
    assert_eq!(
        (first.path.as_str(), first.symbol.as_str(), first.start_line),
        ("src/conn_local.h", "conn_st", 1),
        "{:?}",
        response.definitions
    );
    assert_eq!(response.results[0].chunk.path, "src/conn_local.h");
}

#[test]
fn an_implementation_shares_the_centrality_of_the_header_beside_it() {
    let dir = repository();
    let engine = indexed(dir.path());
    // Twelve handlers include session.h; nothing includes session.c, which implements it.
    let response = search(&engine, "state->received");
    let implementation = response
        .results
        .iter()
        .find(|r| r.chunk.path == "src/session.c")
        .expect("session.c is found");
    let percentile = implementation
        .explanation
        .steps
        .iter()
        .find_map(|step| match step.effect {
            quarry_rank::Effect::PageRank { percentile, .. } => Some(percentile),
            _ => None,
        })
        .expect("session.c is boosted as central");
    assert!(percentile > 0.9, "session.h's percentile: {percentile}");
}

#[test]
fn an_index_ranked_by_an_older_resolution_of_imports_is_ranked_again() {
    let dir = repository();
    let engine = indexed(dir.path());
    let settings = engine.store().settings().clone();
    drop(engine);
    // Scores as an index stored them before the resolution version was kept.
    let store = quarry_store::Store::open(dir.path(), settings).unwrap();
    let files = store.files().unwrap();
    let mut batch = store.write().unwrap();
    for file in &files {
        let old = br#"{"score":0.01,"percentile":50.0}"#;
        batch.set_file_data(&file.path, PAGERANK_DATA, old).unwrap();
    }
    batch.commit().unwrap();
    drop(store);

    let engine = Engine::open(dir.path(), model(), EngineOptions::default()).unwrap();
    let report = engine.index_files(&mut |_| {}).unwrap();
    assert_eq!(report.files_read, 0, "{report:?}");
    assert!(
        report.graph.is_some(),
        "the graph is ranked again: {report:?}"
    );
    let store = engine.store();
    let snapshot = store.snapshot().unwrap();
    let bytes = (snapshot.file_data("src/session.h", PAGERANK_DATA).unwrap()).unwrap();
    let score: quarry_graph::FileScore = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(score.resolution, quarry_graph::RESOLUTION_VERSION);
    assert!(score.percentile > 90.0, "{score:?}");
    drop(snapshot);
    // Ranked by this version, it is not ranked again.
    assert!(engine.index_files(&mut |_| {}).unwrap().graph.is_none());
}
