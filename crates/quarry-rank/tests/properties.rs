//! Invariants of the layers and the chain, over generated candidate lists.

use quarry_chunk::{ChunkKind, Language, StoredChunk};
use std::collections::HashMap;

use proptest::prelude::*;
use quarry_rank::{
    CapDecay, CapMode, DiversityCap, Effect, IncludeTests, PageRankBoost, PathPenalty,
    PenaltyFactors, Pipeline, QueryTerms, Ranked, RankingConfig, RankingLayer, RerankError,
    Reranker, apply_chain,
};

/// Files of every class, with source files under `src/`, `lib/` and at the root.
const PATHS: &[&str] = &[
    "src/a.rs",
    "src/b.rs",
    "lib/c.py",
    "d.go",
    "tests/a.rs",
    "src/e_test.go",
    "testdata/f.json",
    "vendor/x/g.go",
    "node_modules/p/dist/h.min.js",
    "examples/i.rs",
    "docs/j.md",
];

const QUERIES: &[&str] = &[
    "parse config",
    "parse_config",
    "tests for parse",
    "",
    "mock fs",
];

/// Scores a text by the share of the query's words it contains (0 for an empty query).
struct WordOverlap;

impl Reranker for WordOverlap {
    fn rerank(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, RerankError> {
        let words: Vec<&str> = query.split_whitespace().collect();
        Ok(texts
            .iter()
            .map(|text| {
                let found = words.iter().filter(|w| text.contains(*w)).count();
                found as f32 / words.len().max(1) as f32
            })
            .collect())
    }
}

fn score() -> impl Strategy<Value = f32> {
    prop_oneof![Just(0.0f32), -1.0f32..1.0, 0.0f32..1.0, Just(0.5f32)]
}

/// Up to 60 candidates over `PATHS`: many per file, equal scores and overlaps included.
fn candidates() -> impl Strategy<Value = Vec<(StoredChunk, f32)>> {
    prop::collection::vec((0..PATHS.len(), 1..40usize, score()), 0..60).prop_map(|items| {
        items
            .into_iter()
            .enumerate()
            .map(|(i, (file, line, score))| {
                let candidate = StoredChunk {
                    id: i as u128,
                    path: PATHS[file].into(),
                    start_line: line,
                    end_line: line + 5,
                    language: Language::Rust,
                    kind: ChunkKind::Function,
                    name: None,
                    container: Vec::new(),
                    text: ["fn parse", "config", "mock fs", "x"][i % 4].into(),
                };
                (candidate, score)
            })
            .collect()
    })
}

fn config() -> impl Strategy<Value = RankingConfig> {
    (
        1..15usize,
        prop::option::of(0..5usize),
        any::<bool>(),
        prop_oneof![
            Just(IncludeTests::Auto),
            Just(IncludeTests::Always),
            Just(IncludeTests::Never)
        ],
        prop::option::of(-0.5f32..0.5),
        0.0f32..1.0,
    )
        .prop_map(
            |(limit, max_per_file, soft_cap, include_tests, threshold, pagerank_strength)| {
                RankingConfig {
                    limit,
                    max_per_file,
                    soft_cap,
                    include_tests,
                    threshold,
                    pagerank_strength,
                    ..RankingConfig::default()
                }
            },
        )
}

/// Sorted by descending score, ties by path then start line.
fn in_ranking_order(results: &[Ranked]) -> bool {
    results.windows(2).all(|pair| {
        let (a, b) = (&pair[0], &pair[1]);
        a.score > b.score
            || (a.score == b.score
                && (&a.candidate.path, a.candidate.start_line)
                    <= (&b.candidate.path, b.candidate.start_line))
    })
}

fn ids(results: &[Ranked]) -> Vec<u128> {
    results.iter().map(|r| r.candidate.id).collect()
}

/// The candidates in ranking order, through no layer.
fn sorted(candidates: &[(StoredChunk, f32)]) -> Vec<Ranked> {
    apply_chain(&[], &QueryTerms::of(""), candidates.to_vec())
        .unwrap()
        .results
}

fn spilled(ranked: &Ranked) -> bool {
    ranked
        .explanation
        .steps
        .iter()
        .any(|step| matches!(step.effect, Effect::Spilled { .. }))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_layer_leaves_the_list_in_ranking_order(
        candidates in candidates(),
        config in config(),
        query in prop::sample::select(QUERIES),
        percentiles in prop::collection::vec(0.0f32..=1.0, PATHS.len()),
    ) {
        let percentiles: HashMap<String, f32> =
            PATHS.iter().map(|p| p.to_string()).zip(percentiles).collect();
        let pipeline = Pipeline::from_config(
            &config,
            Some(Box::new(move |path| percentiles.get(path).copied())),
            Some(Box::new(WordOverlap)),
        )
        .unwrap();
        for end in 0..=pipeline.layers().len() {
            let ranking = apply_chain(&pipeline.layers()[..end], &QueryTerms::of(query), candidates.clone()).unwrap();
            prop_assert!(in_ranking_order(&ranking.results), "after {end} layers");
            // The explanation accounts for the score.
            for result in &ranking.results {
                let last = result.explanation.steps.last().map_or(
                    result.explanation.retrieval_score,
                    |step| step.score,
                );
                prop_assert_eq!(last, result.score);
            }
        }
        // Never the input's order: reversing it changes nothing.
        let mut reversed = candidates.clone();
        reversed.reverse();
        prop_assert_eq!(
            pipeline.rank(&QueryTerms::of(query), candidates).unwrap(),
            pipeline.rank(&QueryTerms::of(query), reversed).unwrap()
        );
    }

    #[test]
    fn the_cap_is_exceeded_only_by_spillover_and_never_reorders(
        candidates in candidates(),
        cap in 1..5usize,
        limit in 1..20usize,
    ) {
        let layers: Vec<Box<dyn RankingLayer>> =
            vec![Box::new(DiversityCap::new(cap, limit, CapMode::Hard).unwrap())];
        let results = apply_chain(&layers, &QueryTerms::of(""), candidates.clone()).unwrap().results;
        let input = sorted(&candidates);

        // What it keeps is the input minus some candidates, in the same order.
        let kept = ids(&results);
        let mut rest = ids(&input).into_iter();
        prop_assert!(kept.iter().all(|id| rest.any(|other| other == *id)));

        let mut per_file: HashMap<&str, usize> = HashMap::new();
        let within = input
            .iter()
            .filter(|r| {
                let n = per_file.entry(r.candidate.path.as_str()).or_default();
                *n += 1;
                *n <= cap
            })
            .count();
        let mut kept_per_file: HashMap<&str, usize> = HashMap::new();
        for result in results.iter().filter(|r| !spilled(r)) {
            *kept_per_file.entry(result.candidate.path.as_str()).or_default() += 1;
        }
        prop_assert!(kept_per_file.values().all(|&n| n <= cap));
        let spills = results.iter().filter(|r| spilled(r)).count();
        // Spillover only fills slots the capped list leaves empty, and fills all it can.
        prop_assert!(spills == 0 || within < limit);
        prop_assert_eq!(results.len(), input.len().min(within.max(limit)));
    }

    #[test]
    fn the_soft_cap_keeps_every_candidate_and_lowers_only_extra_chunks(
        candidates in candidates(),
        cap in 1..5usize,
        decay in 0.05f32..=1.0,
    ) {
        let layers: Vec<Box<dyn RankingLayer>> =
            vec![Box::new(DiversityCap::new(cap, 10, CapMode::Soft { decay: CapDecay::uniform(decay) }).unwrap())];
        let results = apply_chain(&layers, &QueryTerms::of(""), candidates.clone()).unwrap().results;
        prop_assert_eq!(results.len(), candidates.len());
        for result in results {
            match result.explanation.steps.as_slice() {
                [] => prop_assert_eq!(result.score, result.explanation.retrieval_score),
                [step] => {
                    let beyond_cap =
                        matches!(step.effect, Effect::Decayed { nth_in_file, .. } if nth_in_file > cap);
                    prop_assert!(beyond_cap, "{:?}", step);
                    prop_assert!(result.score <= result.explanation.retrieval_score);
                }
                steps => prop_assert!(false, "{steps:?}"),
            }
        }
    }

    #[test]
    fn penalties_of_one_change_nothing(
        candidates in candidates(),
        query in prop::sample::select(QUERIES),
        always in any::<bool>(),
    ) {
        let ones = PenaltyFactors {
            test: 1.0, fixture: 1.0, mock: 1.0, generated: 1.0,
            vendored: 1.0, minified: 1.0, example: 1.0, docs: 1.0,
        };
        let include_tests = if always { IncludeTests::Always } else { IncludeTests::Auto };
        let layers: Vec<Box<dyn RankingLayer>> =
            vec![Box::new(PathPenalty::new(ones, include_tests).unwrap())];
        let results = apply_chain(&layers, &QueryTerms::of(query), candidates.clone()).unwrap().results;
        prop_assert_eq!(results, sorted(&candidates));
    }

    #[test]
    fn penalties_never_raise_a_score(
        candidates in candidates(),
        query in prop::sample::select(QUERIES),
    ) {
        let layers: Vec<Box<dyn RankingLayer>> = vec![Box::new(
            PathPenalty::new(PenaltyFactors::default(), IncludeTests::Auto).unwrap(),
        )];
        for result in apply_chain(&layers, &QueryTerms::of(query), candidates).unwrap().results {
            prop_assert!(result.score <= result.explanation.retrieval_score);
        }
    }

    #[test]
    fn pagerank_keeps_zero_at_zero_and_is_monotone_in_percentile(
        strength in 0.0f32..3.0,
        low in 0.0f32..=1.0,
        high in 0.0f32..=1.0,
        score in score(),
    ) {
        let (low, high) = (low.min(high), low.max(high));
        let percentiles: HashMap<&str, f32> = [("low.rs", low), ("high.rs", high)].into();
        let layers: Vec<Box<dyn RankingLayer>> = vec![Box::new(
            PageRankBoost::new(strength, move |path| percentiles.get(path).copied()).unwrap(),
        )];
        let candidate = |path: &str, id| StoredChunk {
            id,
            path: path.into(),
            start_line: 1,
            end_line: 1,
            language: Language::Rust,
            kind: ChunkKind::Function,
            name: None,
            container: Vec::new(),
            text: String::new(),
        };
        let candidates = vec![(candidate("low.rs", 0), score), (candidate("high.rs", 1), score)];
        let results = apply_chain(&layers, &QueryTerms::of(""), candidates).unwrap().results;
        let boosted = |path: &str| results.iter().find(|r| r.candidate.path == path).unwrap().score;
        prop_assert!(boosted("low.rs") <= boosted("high.rs"));
        prop_assert!(boosted("low.rs") >= score);
        if score == 0.0 {
            prop_assert_eq!((boosted("low.rs"), boosted("high.rs")), (0.0, 0.0));
        }
        let layer = PageRankBoost::new(strength, |_| None).unwrap();
        prop_assert!(layer.factor(low) <= layer.factor(high));
        prop_assert!((1.0..=1.0 + strength).contains(&layer.factor(low)));
    }
}
