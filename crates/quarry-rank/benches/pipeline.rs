//! The cost of ranking one query: the full default pipeline (PageRank included) over 1,000
//! candidates, and over the 30 the default configuration fetches,
//! `cargo bench -p quarry-rank --bench pipeline`.
//!
//! The candidates are generated deterministically to look like a real repository's: source,
//! tests, vendored, generated, minified, example and prose files, a few large files with
//! many matching chunks, and scores falling from 0.85 to 0.2 with noise.

use quarry_chunk::{ChunkKind, Language};
use std::collections::HashMap;
use std::hint::black_box;

use criterion::{BatchSize, Criterion};
use quarry_chunk::StoredChunk;
use quarry_rank::{Pipeline, QueryTerms, RankingConfig};

/// xorshift64*: a fixed sequence, so every run ranks the same candidates.
struct Sequence(u64);

impl Sequence {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// About 250 file paths in the shapes real repositories have.
fn paths(sequence: &mut Sequence) -> Vec<String> {
    const SHAPES: &[&str] = &[
        "src/{m}/{f}.rs",
        "src/{m}/{f}.rs",
        "crates/quarry-{m}/src/{f}.rs",
        "crates/quarry-{m}/src/{f}.rs",
        "internal/{m}/{f}.go",
        "pkg/{m}/{f}_test.go",
        "tests/{m}_{f}.rs",
        "web/src/components/{M}{F}.tsx",
        "web/src/components/{M}{F}.test.tsx",
        "vendor/github.com/{m}/{f}/{f}.go",
        "api/{m}/{f}.pb.go",
        "node_modules/{m}/dist/{f}.min.js",
        "examples/{m}_{f}.rs",
        "docs/{m}/{f}.md",
        "scripts/{f}.py",
        "fixtures/{m}/{f}.json",
    ];
    const WORDS: &[&str] = &[
        "parse", "config", "index", "search", "store", "chunk", "embed", "rank", "graph", "query",
        "token", "cache", "server", "client", "watch", "walk",
    ];
    let word = |sequence: &mut Sequence| WORDS[sequence.next() as usize % WORDS.len()];
    let capital = |w: &str| w[..1].to_uppercase() + &w[1..];
    let mut paths: Vec<String> = (0..250)
        .map(|i| {
            let (m, f) = (word(sequence), word(sequence));
            let shape = SHAPES[i % SHAPES.len()];
            shape
                .replace("{m}", m)
                .replace("{f}", f)
                .replace("{M}", &capital(m))
                .replace("{F}", &capital(f))
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// `count` candidates, best first, and every file's PageRank percentile.
fn candidates(count: usize) -> (Vec<(StoredChunk, f32)>, HashMap<String, f32>) {
    let mut sequence = Sequence(0x9e37_79b9_7f4a_7c15);
    let paths = paths(&mut sequence);
    let mut lines: HashMap<usize, usize> = HashMap::new();
    let candidates = (0..count)
        .map(|i| {
            // Squaring skews the draw towards the first files: a few large files own many
            // of the matching chunks, as in a real index.
            let file = (paths.len() as f32 * sequence.unit().powi(2)) as usize;
            let line = lines.entry(file).or_insert(1);
            let start = *line;
            *line += 12;
            let falling = 0.85 - 0.65 * i as f32 / count as f32;
            let score = falling + 0.05 * (sequence.unit() - 0.5);
            let candidate = StoredChunk {
                id: i as u128,
                path: paths[file].clone(),
                start_line: start,
                end_line: start + 10,
                language: Language::Rust,
                kind: ChunkKind::Function,
                name: Some(format!("item_{i}")),
                container: Vec::new(),
                text: format!("fn item_{i}(input: &str) -> Result<Value, Error> {{ todo }}"),
            };
            (candidate, score)
        })
        .collect();
    // Centrality unrelated to the path's name or its matches: order by a hash (FNV-1a).
    let mut by_rank = paths.clone();
    by_rank.sort_by_key(|path| {
        path.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
    });
    let last = (by_rank.len() - 1) as f32;
    let percentiles = by_rank
        .into_iter()
        .enumerate()
        .map(|(i, path)| (path, i as f32 / last))
        .collect();
    (candidates, percentiles)
}

fn bench_pipeline(c: &mut Criterion) {
    let config = RankingConfig::default();
    let query = QueryTerms::of("where is parse_config called when the index is opened");
    let mut group = c.benchmark_group("default pipeline");
    for count in [config.fetch_count(), 1_000] {
        let (candidates, percentiles) = candidates(count);
        let pipeline = Pipeline::from_config(
            &config,
            Some(Box::new(move |path| percentiles.get(path).copied())),
            None,
        )
        .expect("the default configuration is valid");
        group.bench_function(format!("{count} candidates"), |b| {
            b.iter_batched(
                || candidates.clone(),
                |candidates| black_box(pipeline.rank(black_box(&query), candidates)),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

// What `criterion_group!`/`criterion_main!` expand to, minus an undocumented `pub fn`.
fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench_pipeline(&mut criterion);
    criterion.final_summary();
}
