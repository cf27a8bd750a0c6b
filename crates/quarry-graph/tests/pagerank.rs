//! PageRank against networkx: `fixtures/graph/pagerank_reference.json`, written by
//! `fixtures/graph/pagerank_reference.py` (see there to regenerate it).

use std::fs;
use std::path::{Path, PathBuf};

use petgraph::graph::DiGraph;
use quarry_graph::{
    FileGraph, GraphBuilder, PageRankConfig, PageRanking, pagerank, personalized_pagerank,
};
use serde::Deserialize;

/// The acceptance bound; the default tolerance gets within ~1e-9.
const WITHIN: f64 = 1e-6;

#[derive(Deserialize)]
struct Reference {
    networkx: String,
    alpha: f64,
    rust_fixture: RustFixture,
    synthetic: Synthetic,
}

#[derive(Deserialize)]
struct RustFixture {
    nodes: Vec<String>,
    edges: Vec<(String, String)>,
    pagerank: Vec<f64>,
    related: Vec<Related>,
}

#[derive(Deserialize)]
struct Related {
    focus: Vec<String>,
    scores: Vec<f64>,
}

#[derive(Deserialize)]
struct Synthetic {
    nodes: usize,
    edges: Vec<(u32, u32)>,
    dangling: usize,
    self_loops: usize,
    pagerank: Vec<f64>,
    personalized: Vec<Personalized>,
}

#[derive(Deserialize)]
struct Personalized {
    weights: Vec<f64>,
    scores: Vec<f64>,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/graph")
}

fn reference() -> Reference {
    let path = fixtures().join("pagerank_reference.json");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reference: Reference = serde_json::from_str(&text).unwrap();
    assert_eq!(reference.alpha, PageRankConfig::default().damping);
    reference
}

#[track_caller]
fn assert_close(what: &str, ours: &[f64], networkx: &[f64]) {
    assert_eq!(ours.len(), networkx.len(), "{what}: node count");
    let worst = ours
        .iter()
        .zip(networkx)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    eprintln!("{what}: largest difference from networkx {worst:.2e}");
    assert!(
        worst <= WITHIN,
        "{what}: differs from networkx by {worst:e}"
    );
    assert!((ours.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{what}: sum");
}

fn synthetic_graph(synthetic: &Synthetic) -> DiGraph<(), ()> {
    let mut graph = DiGraph::with_capacity(synthetic.nodes, synthetic.edges.len());
    for _ in 0..synthetic.nodes {
        graph.add_node(());
    }
    for &(from, to) in &synthetic.edges {
        graph.add_edge(from.into(), to.into(), ());
    }
    graph
}

#[test]
fn synthetic_graph_matches_networkx() {
    let reference = reference();
    let synthetic = &reference.synthetic;
    let graph = synthetic_graph(synthetic);
    // What makes the graph a test: dangling nodes, self-loops, cycles.
    assert!(synthetic.dangling > 10 && synthetic.self_loops > 0);
    assert!(
        petgraph::algo::kosaraju_scc(&graph)
            .iter()
            .any(|c| c.len() > 50)
    );

    let rank = pagerank(&graph, &PageRankConfig::default());
    assert!(rank.converged);
    eprintln!(
        "networkx {}: {} iterations",
        reference.networkx, rank.iterations
    );
    assert_close("pagerank", &rank.scores, &synthetic.pagerank);
}

#[test]
fn personalised_pagerank_matches_networkx() {
    let synthetic = reference().synthetic;
    let graph = synthetic_graph(&synthetic);
    for (i, case) in synthetic.personalized.iter().enumerate() {
        let rank =
            personalized_pagerank(&graph, &case.weights, &PageRankConfig::default()).unwrap();
        assert!(rank.converged);
        assert_close(&format!("personalised #{i}"), &rank.scores, &case.scores);
    }
}

fn rust_fixture_graph() -> FileGraph {
    let root = fixtures().join("rust");
    let mut builder = GraphBuilder::new(&root);
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                builder.add_file(&path, &fs::read(&path).unwrap()).unwrap();
            }
        }
    }
    builder.build()
}

fn scores(ranking: &PageRanking) -> Vec<f64> {
    ranking.iter().map(|(_, score)| score.score).collect()
}

#[test]
fn the_rust_fixture_ranks_as_networkx_ranks_it() {
    let fixture = reference().rust_fixture;
    let graph = rust_fixture_graph();
    // The reference was computed on what the extractor finds today.
    let files: Vec<&str> = graph.files().map(|k| k.as_str()).collect();
    assert_eq!(files, fixture.nodes);
    let edges: Vec<(&str, &str)> = graph
        .edges()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let expected: Vec<(&str, &str)> = fixture
        .edges
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(edges, expected);

    let ranking = graph.rank(&PageRankConfig::default());
    assert!(ranking.converged());
    assert_close("rust fixture", &scores(&ranking), &fixture.pagerank);
    // Money, at the bottom of the most-imported module (item.rs), ranks first.
    let top: Vec<(&str, f64)> = ranking
        .top(2)
        .iter()
        .map(|(key, score)| (key.as_str(), score.percentile))
        .collect();
    assert_eq!(top[0], ("src/util/money.rs", 100.0));
    assert_eq!(top[1].0, "src/model/item.rs");
}

#[test]
fn related_files_match_networkx_on_the_undirected_graph() {
    let fixture = reference().rust_fixture;
    let graph = rust_fixture_graph();
    for case in &fixture.related {
        let focus: Vec<_> = case.focus.iter().map(|f| graph.key(f).unwrap()).collect();
        let ranking = graph.related(&focus, &PageRankConfig::default()).unwrap();
        assert_close(
            &format!("related to {:?}", case.focus),
            &scores(&ranking),
            &case.scores,
        );
    }
}
