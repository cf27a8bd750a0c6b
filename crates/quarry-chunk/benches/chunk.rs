//! Chunking throughput per language, next to tree-sitter's parse alone as the
//! reference: `cargo bench -p quarry-chunk --bench chunk`.
//!
//! Rust is measured on tokio's sources, Python on the standard library (each capped
//! to its first ~4 MB of files), every other language on `fixtures/chunk/<lang>/`.

#[path = "../tests/support/corpus.rs"]
mod corpus;

use std::fs;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use quarry_chunk::{ALL_LANGUAGES, Chunker, Language};

/// How much of a large corpus one iteration chunks.
const CORPUS_CAP: usize = 4_000_000;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/chunk");

/// The files of `corpus`, in order, until they add up to at least `CORPUS_CAP` bytes.
fn capped(corpus: corpus::Corpus) -> corpus::Corpus {
    let mut total = 0;
    corpus
        .into_iter()
        .take_while(|(_, bytes)| {
            let keep = total < CORPUS_CAP;
            total += bytes.len();
            keep
        })
        .collect()
}

/// The `language` sources under `fixtures/chunk/<language>/` (not their expected
/// `*.chunks`), sorted by path.
fn fixtures(language: Language) -> corpus::Corpus {
    let dir = Path::new(FIXTURES).join(language.name());
    let mut files: corpus::Corpus = fs::read_dir(&dir)
        .map(|entries| {
            entries
                .map(|entry| entry.expect("fixture directory entry").path())
                .collect()
        })
        .unwrap_or_else(|_| Vec::new())
        .into_iter()
        .filter(|path: &std::path::PathBuf| path.extension().is_none_or(|e| e != "chunks"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            (
                format!("{}/{name}", language.name()),
                fs::read(&path).expect("fixture file"),
            )
        })
        .collect();
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    files
}

fn files(language: Language) -> corpus::Corpus {
    match language {
        Language::Rust => capped(corpus::tokio()),
        Language::Python => capped(corpus::python_stdlib()),
        _ => fixtures(language),
    }
}

fn bench(c: &mut Criterion) {
    let chunker = Chunker::default();
    for &language in ALL_LANGUAGES {
        let files = files(language);
        if files.is_empty() {
            continue;
        }
        let total: usize = files.iter().map(|(_, bytes)| bytes.len()).sum();
        let mut group = c.benchmark_group(language.name());
        group
            .throughput(Throughput::Bytes(total as u64))
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        if let Some(grammar) = language.grammar() {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&grammar).expect("grammar loads");
            group.bench_function("parse", |b| {
                b.iter(|| {
                    for (_, bytes) in &files {
                        black_box(parser.parse(bytes, None));
                    }
                });
            });
        }
        group.bench_function("chunk", |b| {
            b.iter(|| {
                for (path, bytes) in &files {
                    let _ = black_box(chunker.chunk(path, bytes));
                }
            });
        });
        group.finish();
    }
}

// What `criterion_group!`/`criterion_main!` expand to, minus an undocumented `pub fn`.
fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
