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

/// The `language` files under `fixtures/chunk/<language>/`, sorted by path. Files
/// named after another file plus an extension (`guide.md.chunks`) are expected
/// outputs, not inputs, and are left out.
fn fixtures(language: Language) -> corpus::Corpus {
    let dir = Path::new(FIXTURES).join(language.name());
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let names: Vec<String> = entries
        .map(|entry| entry.expect("fixture directory entry"))
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    let is_output = |name: &str| {
        names.iter().any(|input| {
            name.strip_prefix(input.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
        })
    };
    let mut files: corpus::Corpus = names
        .iter()
        .filter(|name| !is_output(name))
        .map(|name| {
            let bytes = fs::read(dir.join(name)).expect("fixture file");
            (format!("{}/{name}", language.name()), bytes)
        })
        .filter(|(path, bytes)| {
            Language::detect(path, std::str::from_utf8(bytes).unwrap_or("")) == language
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
