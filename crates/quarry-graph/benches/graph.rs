//! Building the import graph and ranking it, on tokio's sources and the Python
//! standard library: `cargo bench -p quarry-graph --bench graph`.
//!
//! Per corpus: `parse` (tree-sitter alone, the floor), `extract` (parse every file
//! and read its imports), `build` (that, plus resolving every import into edges),
//! `resolve` (the resolution alone) and `pagerank` (the default configuration). The sizes and the iteration count are
//! printed first.

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{Criterion, Throughput};
use quarry_chunk::Language;
use quarry_graph::{FileImports, GraphBuilder, PageRankConfig};

/// A corpus: its root and its files (path, bytes), sorted.
struct Corpus {
    name: &'static str,
    root: PathBuf,
    files: Vec<(PathBuf, Vec<u8>)>,
}

/// tokio, a dev-dependency of quarry-chunk, from the cargo registry: its `.rs` files
/// and its `Cargo.toml` (which names the crate its tests import).
fn tokio() -> Corpus {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let manifest = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|package| package["name"] == "tokio")
        .and_then(|package| package["manifest_path"].as_str())
        .expect("tokio is in the workspace's dependencies (run `cargo fetch`)");
    let root = Path::new(manifest).parent().unwrap().to_path_buf();
    load("tokio", root, &|name| {
        name.ends_with(".rs") || name == "Cargo.toml"
    })
}

/// The standard library of the `python3` on `PATH`, without `site-packages`.
fn python_stdlib() -> Corpus {
    let output = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('stdlib'))",
        ])
        .output()
        .expect("python3 runs");
    let root = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    load("python-stdlib", root, &|name| name.ends_with(".py"))
}

fn load(name: &'static str, root: PathBuf, keep: &dyn Fn(&str) -> bool) -> Corpus {
    let mut files = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let entry = entry.unwrap();
            let path = entry.path();
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let file_type = entry.file_type().unwrap();
            if file_type.is_dir()
                && !matches!(file_name.as_str(), "site-packages" | "dist-packages")
            {
                pending.push(path);
            } else if file_type.is_file() && keep(&file_name) {
                files.push((path.clone(), fs::read(&path).unwrap()));
            }
        }
    }
    assert!(!files.is_empty(), "no files below {}", root.display());
    files.sort();
    Corpus { name, root, files }
}

fn builder(corpus: &Corpus) -> GraphBuilder {
    let mut builder = GraphBuilder::new(&corpus.root);
    for (path, bytes) in &corpus.files {
        builder
            .add_file(path, bytes)
            .expect("corpus files lie below its root");
    }
    builder
}

fn bench(c: &mut Criterion) {
    for corpus in [tokio(), python_stdlib()] {
        let graph = builder(&corpus).build();
        let config = PageRankConfig::default();
        let ranking = graph.rank(&config);
        let bytes: usize = corpus.files.iter().map(|(_, b)| b.len()).sum();
        eprintln!(
            "{}: {} files ({:.1} MB), {} imports, {} edges, {} external; PageRank {} iterations (converged: {})",
            corpus.name,
            graph.file_count(),
            bytes as f64 / 1e6,
            graph.import_count(),
            graph.edge_count(),
            graph.external_count(),
            ranking.iterations(),
            ranking.converged(),
        );

        let mut group = c.benchmark_group(corpus.name);
        group.throughput(Throughput::Bytes(bytes as u64));
        let keys: Vec<_> = corpus
            .files
            .iter()
            .map(|(path, _)| graph.key(path).unwrap())
            .collect();
        // The reference: tree-sitter's parse alone, which extraction cannot beat.
        let grammars: Vec<_> = keys
            .iter()
            .map(|key| Language::from_path(key.as_str()).and_then(Language::grammar))
            .collect();
        group.bench_function("parse", |b| {
            let mut parser = tree_sitter::Parser::new();
            b.iter(|| {
                for (grammar, (_, bytes)) in grammars.iter().zip(&corpus.files) {
                    if let Some(grammar) = grammar {
                        parser.set_language(grammar).expect("grammar loads");
                        black_box(parser.parse(bytes, None));
                    }
                }
            });
        });
        group.bench_function("extract", |b| {
            b.iter(|| {
                for (key, (_, bytes)) in keys.iter().zip(&corpus.files) {
                    black_box(FileImports::extract(key, bytes));
                }
            });
        });
        group.bench_function("build", |b| b.iter(|| black_box(builder(&corpus).build())));
        // Resolution alone: the files' imports read beforehand.
        let extracted: Vec<_> = keys
            .iter()
            .zip(&corpus.files)
            .map(|(key, (_, bytes))| (key.clone(), FileImports::extract(key, bytes)))
            .collect();
        group.bench_function("resolve", |b| {
            b.iter(|| {
                let mut builder = GraphBuilder::new(&corpus.root);
                for (key, imports) in &extracted {
                    builder.add(key.clone(), imports.clone());
                }
                black_box(builder.build())
            });
        });
        group.throughput(Throughput::Elements(graph.edge_count() as u64));
        group.bench_function("pagerank", |b| b.iter(|| black_box(graph.rank(&config))));
        group.finish();
    }
}

// What `criterion_group!`/`criterion_main!` expand to, minus an undocumented `pub fn`.
fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
