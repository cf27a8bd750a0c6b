//! The smoke suite: the benchmark end to end with the real default model on the `shop`
//! fixture (`bench-suite/cases/shop.yaml`), as CI runs it. The controls must bracket quarry
//! (random far below, oracle perfect), the doc family must run on an index without the doc
//! comments, the cases hybrid lost must say where each retrieval leg placed their targets,
//! and a report must round-trip and catch a regression.

use std::path::Path;

use quarry_bench::arms::Arm;
use quarry_bench::cases::{Case, CaseFile, Category, Split};
use quarry_bench::corpus::CorporaFile;
use quarry_bench::metrics::Scores;
use quarry_bench::peers::SemblePeer;
use quarry_bench::report::{Comparison, Report};
use quarry_bench::{CaseResult, Run, RunOptions};
use quarry_engine::{Engine, EngineOptions, Leg, SearchOptions};
use quarry_testkit::model;

fn mean(run: &Run, arm: &str, category: Option<Category>) -> Scores {
    let arm = run.arms.iter().find(|a| a.name == arm).unwrap();
    let cases = arm
        .cases
        .iter()
        .filter(|c| category.is_none_or(|k| c.category == k));
    Scores::mean(cases.map(|c| &c.scores)).unwrap()
}

#[test]
fn the_smoke_suite_runs_and_its_controls_bracket_quarry() {
    let suite_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-suite");
    let corpora = CorporaFile::load(&suite_dir.join("corpora.yaml")).unwrap();
    let cases = CaseFile::load(&suite_dir.join("cases/shop.yaml")).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let hybrid = Arm::hybrid();
    let mut arms = Arm::with_controls();
    arms.push(hybrid.without("chunk-headers").unwrap());
    arms.push(hybrid.with_setting("diversity-cap", "0").unwrap());
    arms.extend(Arm::peers());
    let options = RunOptions {
        suite_dir: suite_dir.clone(),
        corpora: vec![corpora.get("shop").unwrap().clone()],
        cases: vec![cases.clone()],
        arms,
        cache: cache.path().to_path_buf(),
        model: model(),
        engine: EngineOptions::default(),
        vector_cache: None,
        doc_cases: 6,
        split: Split::All,
        semble: Some(SemblePeer {
            python: quarry_testkit::python(),
            script: suite_dir.join("peer_semble.py"),
            model_dir: cache.path().join("semble-model"),
        }),
        ripgrep: quarry_testkit::ripgrep(),
        commit: "test".into(),
    };
    let run = quarry_bench::run(&options, &mut |_| {}).unwrap();

    assert_eq!(run.corpora[0].cases, cases.cases.len());
    assert_eq!(run.corpora[0].doc_cases, 6);
    assert!(run.corpora[0].chunks > 20 && run.corpora[0].index_seconds.is_some());
    let scored = |arm: &str| run.arms.iter().find(|a| a.name == arm).unwrap().cases.len();
    for arm in [
        "hybrid",
        "random",
        "oracle",
        "no-chunk-headers",
        "diversity-cap=0",
        "semble",
        "ripgrep",
    ] {
        assert_eq!(
            scored(arm),
            cases.cases.len() + 6,
            "{arm} scored every case"
        );
    }
    let oracle = mean(&run, "oracle", None);
    assert_eq!(
        (oracle.ndcg10, oracle.recall10, oracle.mrr),
        (1.0, 1.0, 1.0)
    );
    let (hybrid, random) = (mean(&run, "hybrid", None), mean(&run, "random", None));
    assert!(
        hybrid.mrr >= 0.8,
        "hybrid MRR {} on the fixture",
        hybrid.mrr
    );
    assert!(
        random.ndcg10 + 0.4 < hybrid.ndcg10,
        "random {} vs hybrid {}",
        random.ndcg10,
        hybrid.ndcg10
    );
    assert!(mean(&run, "hybrid", Some(Category::Doc)).recall10 >= 0.8);
    // The peers ran for real: semble indexed the fixture cold and both beat chance.
    assert!(run.corpora[0].peer_index_seconds["semble"] > 0.0);
    for peer in ["semble", "ripgrep"] {
        let scores = mean(&run, peer, None);
        assert!(scores.ndcg10 > random.ndcg10, "{peer} {scores:?}");
    }
    // The per-file cap shows more files than no cap.
    assert!(mean(&run, "diversity-cap=0", None).distinct_files < hybrid.distinct_files);

    // The cases hybrid lost say where each leg placed their targets, as the legs rank them;
    // no other arm's cases are looked into. A case hybrid cannot win (`load_config`
    // answered by the deploy script) is run on the same index with one result, so that its
    // target is missed for sure.
    assert!(
        run.arms[1..]
            .iter()
            .all(|a| a.cases.iter().all(|c| c.lost.is_empty()))
    );
    let perfect = |c: &&CaseResult| c.scores.ndcg10 >= 1.0 - 1e-9;
    assert!(
        run.arms[0]
            .cases
            .iter()
            .filter(perfect)
            .all(|c| c.lost.is_empty())
    );
    let unwinnable = CaseFile {
        corpus: "shop".into(),
        cases: vec![Case {
            id: "LOST-01".into(),
            category: Category::Symbol,
            query: "load_config".into(),
            relevant: vec!["scripts/deploy.sh".parse().unwrap()],
            secondary: Vec::new(),
            shape: None,
        }],
    };
    let lost_run = quarry_bench::run(
        &RunOptions {
            cases: vec![unwinnable],
            arms: vec![Arm::hybrid().set("limit", "1").unwrap()],
            doc_cases: 0,
            semble: None,
            ..options
        },
        &mut |_| {},
    )
    .unwrap();
    let lost = &lost_run.arms[0].cases[0];
    assert_eq!(lost.lost.len(), 1, "{lost:?}");
    for case in run.arms[0].cases.iter().chain([lost]) {
        let variant = match case.category {
            Category::Doc => "default-no-doc",
            _ => "default",
        };
        agree_with_the_legs(&cache.path().join("work").join(variant).join("shop"), case);
    }
    let target = &lost.lost[0];
    assert_eq!(target.result, None);
    // Every chunk is a candidate (the dense leg lists them all); the file leg runs for
    // questions alone.
    let fused = match target.ranks.fused.unwrap() {
        1..=10 => "| fused | 1 | 0 | 0 | 0 | 0 |",
        _ => "| fused | 0 | 1 | 0 | 0 | 0 |",
    };
    let lost_markdown = Report::new("lost", lost_run, false).markdown(&[]);
    for line in [
        "## Lost cases (hybrid)",
        "| list | top 10 | 11 to 100 | below 100 | absent | did not run |",
        fused,
        "| file | 0 | 0 | 0 | 0 | 1 |",
        "| shop | LOST-01 | symbol | scripts/deploy.sh | – | ",
    ] {
        assert!(lost_markdown.contains(line), "{line}\n{lost_markdown}");
    }

    // The doc family's words were blanked out of the index it ran on.
    let no_doc = cache.path().join("work/default-no-doc/shop");
    let indexed_text = walk(&no_doc);
    for case in run.arms[0]
        .cases
        .iter()
        .filter(|c| c.category == Category::Doc)
    {
        let words: Vec<&str> = case.query.split_whitespace().take(3).collect();
        assert!(
            !indexed_text.contains(&words.join(" ")),
            "{}: {:?} is still indexed",
            case.id,
            case.query
        );
    }

    // A report round-trips, and compared with itself shows no change.
    let report = Report::new("smoke", run, false);
    let out = tempfile::tempdir().unwrap();
    report.write(out.path(), "relevance-smoke", &[]).unwrap();
    let loaded = Report::load(&out.path().join("relevance-smoke.json")).unwrap();
    // (Floats come back within an ulp: serde_json parses fast, not exactly.)
    assert_eq!(
        (&loaded.title, &loaded.run.config),
        (&report.title, &report.run.config)
    );
    assert_eq!(loaded.run.corpora[0].chunks, report.run.corpora[0].chunks);
    for (a, b) in loaded.run.arms.iter().zip(&report.run.arms) {
        assert_eq!(a.cases.len(), b.cases.len());
        for (x, y) in a.cases.iter().zip(&b.cases) {
            assert_eq!((x.key(), &x.top, &x.lost), (y.key(), &y.top, &y.lost));
            assert!((x.scores.ndcg10 - y.scores.ndcg10).abs() < 1e-12);
        }
    }
    let markdown = std::fs::read_to_string(out.path().join("relevance-smoke.md")).unwrap();
    assert!(
        markdown.contains("| hybrid | 16 |") && markdown.contains("## By category"),
        "{markdown}"
    );
    assert!(report.against(&loaded).iter().all(|c| c.drops().is_empty()));

    // A run that found nothing regresses against the real one, beyond the interval.
    let mut worse = loaded.clone();
    for case in &mut worse.run.arms[0].cases {
        case.scores = Scores {
            ndcg10: 0.0,
            ndcg5: 0.0,
            recall10: 0.0,
            mrr: 0.0,
            rubric: 0.0,
            ..case.scores
        };
    }
    let against = worse.against(&loaded);
    assert_eq!(
        against[0].drops(),
        ["ndcg10", "ndcg5", "recall10", "mrr", "rubric"]
    );
    assert_eq!(
        Comparison::new(&loaded.run.arms[0], &worse.run.arms[0]).cases,
        16
    );
    // A case whose query changed under its id (a doc case drawn from other chunks) is
    // not paired.
    worse.run.arms[0].cases[0].query.push_str(" elsewhere");
    assert_eq!(
        Comparison::new(&loaded.run.arms[0], &worse.run.arms[0]).cases,
        15
    );
}

/// Checks that each lost target of `case` (if any) has the rank the lexical and dense legs
/// give it when searched alone, as deep as the search fetches, on the index in `work`.
fn agree_with_the_legs(work: &Path, case: &CaseResult) {
    if case.lost.is_empty() {
        return;
    }
    let engine = Engine::open(work, model(), EngineOptions::default()).unwrap();
    let (store, search) = (engine.store(), SearchOptions::default());
    let depth = search.ranking.fetch_count();
    let lexical = store
        .search_lexical_with(&case.query, depth, &search.filter, &search.lexical)
        .unwrap();
    let embedder = engine.model().unwrap().get().unwrap();
    let vector = embedder.embed_query(&case.query).unwrap().vector;
    let dense = store.search_dense(&vector, depth, &search.filter).unwrap();
    let snapshot = store.snapshot().unwrap();
    for target in &case.lost {
        for (leg, hits) in [(Leg::Lexical, &lexical), (Leg::Dense, &dense)] {
            let first = (1..).zip(hits).find(|(_, hit)| {
                let chunk = snapshot.chunk(hit.id).unwrap().unwrap();
                (target.target).hit_by(&chunk.path, chunk.start_line, chunk.end_line)
            });
            let recorded = target.ranks.legs.iter().find(|p| p.leg == leg).unwrap();
            assert_eq!(
                (recorded.rank, recorded.hits),
                (first.map(|(rank, _)| rank), hits.len()),
                "{}: {} in the {leg} leg",
                case.id,
                target.target
            );
        }
    }
}

/// The text of every file under `dir` but the index.
fn walk(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == ".quarry" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            text.push_str(&walk(&entry.path()));
        } else {
            text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
        }
    }
    text
}
