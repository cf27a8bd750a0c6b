//! Chunks two real-world corpora (tokio's Rust sources and the Python standard
//! library), checks every file's chunks against [`check_chunks`], and prints a
//! report: `cargo test -p quarry-chunk --test corpus -- --nocapture`.

mod support;

use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use quarry_chunk::{ChunkKind, Chunker, Language, Skip, check_chunks};
use support::corpus;

/// What chunking one corpus gave.
#[derive(Default)]
struct Report {
    files: usize,
    /// Files that chunked (an empty or blank file chunks into nothing).
    chunked: usize,
    /// Per language: files, bytes, chunks, time spent in `Chunker::chunk`.
    languages: BTreeMap<Language, (usize, usize, usize, Duration)>,
    kinds: BTreeMap<(Language, ChunkKind), usize>,
    skips: BTreeMap<String, Vec<String>>,
    /// `path: problem` for invariant violations and panics.
    failures: Vec<String>,
    wall: Duration,
}

fn skip_reason(skip: &Skip) -> String {
    match skip {
        Skip::Binary => "binary".into(),
        Skip::NotUtf8 { .. } => "not utf-8".into(),
        Skip::Minified { .. } => "minified".into(),
        Skip::Generated { marker } => format!("generated ({marker:?})"),
    }
}

fn run(files: &[(String, Vec<u8>)]) -> Report {
    let chunker = Chunker::default();
    let budget = chunker.config().budget;
    let mut report = Report {
        files: files.len(),
        ..Report::default()
    };
    let start = Instant::now();
    for (path, bytes) in files {
        let language = Language::detect(path, std::str::from_utf8(bytes).unwrap_or(""));
        let chunk_start = Instant::now();
        let result = panic::catch_unwind(AssertUnwindSafe(|| chunker.chunk(path, bytes)));
        let elapsed = chunk_start.elapsed();
        let stats = report.languages.entry(language).or_default();
        stats.0 += 1;
        stats.1 += bytes.len();
        stats.3 += elapsed;
        match result {
            Err(payload) => {
                let message = payload
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| payload.downcast_ref::<&str>().copied())
                    .unwrap_or("(non-string panic)");
                report.failures.push(format!("{path}: panicked: {message}"));
            }
            Ok(Err(skip)) => report
                .skips
                .entry(skip_reason(&skip))
                .or_default()
                .push(path.clone()),
            Ok(Ok(chunks)) => {
                report.chunked += 1;
                stats.2 += chunks.len();
                for chunk in &chunks {
                    *report
                        .kinds
                        .entry((chunk.stored.language, chunk.stored.kind))
                        .or_default() += 1;
                }
                let text = std::str::from_utf8(bytes).expect("chunked files are UTF-8");
                if let Err(violation) = check_chunks(text, &chunks, budget) {
                    report
                        .failures
                        .push(format!("{path}: {}", violation.problem));
                }
            }
        }
    }
    report.wall = start.elapsed();
    report
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

fn print(name: &str, report: &Report) {
    println!(
        "\n== {name}: {} files, {} chunked, {} skipped, {:.2}s wall",
        report.files,
        report.chunked,
        report.skips.values().map(Vec::len).sum::<usize>(),
        report.wall.as_secs_f64()
    );
    println!(
        "{:<12} {:>6} {:>8} {:>8} {:>8}",
        "language", "files", "MB", "chunks", "MB/s"
    );
    for (language, (files, bytes, chunks, time)) in &report.languages {
        println!(
            "{:<12} {files:>6} {:>8.2} {chunks:>8} {:>8.1}",
            language.name(),
            mb(*bytes),
            mb(*bytes) / time.as_secs_f64().max(1e-9)
        );
    }
    for &language in report.languages.keys() {
        let kinds: Vec<String> = report
            .kinds
            .iter()
            .filter(|((l, _), _)| *l == language)
            .map(|((_, kind), count)| format!("{kind} {count}"))
            .collect();
        println!("{:<12} {}", language.name(), kinds.join(", "));
    }
    for (reason, paths) in &report.skips {
        let shown: Vec<&str> = paths.iter().take(5).map(String::as_str).collect();
        let more = paths.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" (+{more} more)")
        } else {
            String::new()
        };
        println!(
            "skipped {reason}: {} — {}{more}",
            paths.len(),
            shown.join(", ")
        );
    }
}

fn check(name: &str, report: &Report) -> Vec<String> {
    let mut problems: Vec<String> = report
        .failures
        .iter()
        .map(|failure| format!("{name}/{failure}"))
        .collect();
    // Code falls back to line windows only when its parse is abandoned as runaway;
    // real code must never hit that budget.
    for ((language, kind), count) in &report.kinds {
        if *kind == ChunkKind::Window && language.grammar().is_some() {
            problems.push(format!(
                "{name}: {count} {language} windows: a parse was abandoned on real code"
            ));
        }
    }
    let share = report.chunked as f64 / report.files as f64;
    if share < 0.95 {
        problems.push(format!(
            "{name}: only {:.1}% of {} files were chunked (expected at least 95%)",
            share * 100.0,
            report.files
        ));
    }
    problems
}

#[test]
fn real_world_corpora_chunk_cleanly() {
    let tokio = run(&corpus::tokio());
    print("tokio (Rust)", &tokio);
    let stdlib = run(&corpus::python_stdlib());
    print("Python stdlib", &stdlib);

    let mut problems = check("tokio", &tokio);
    problems.extend(check("python-stdlib", &stdlib));
    for kind in [ChunkKind::Function, ChunkKind::Method, ChunkKind::Impl] {
        if !tokio.kinds.contains_key(&(Language::Rust, kind)) {
            problems.push(format!("tokio: no Rust {kind} chunks at all"));
        }
    }
    if !stdlib
        .kinds
        .contains_key(&(Language::Python, ChunkKind::Function))
        || !stdlib
            .kinds
            .contains_key(&(Language::Python, ChunkKind::Class))
    {
        problems.push("python-stdlib: no Python function or class chunks".into());
    }
    assert!(
        problems.is_empty(),
        "{} problems; the first 10:\n{}",
        problems.len(),
        problems
            .iter()
            .take(10)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    );
}
