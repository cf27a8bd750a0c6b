//! The smoke suite: the benchmark end to end with the real default model on the `shop`
//! fixture (`bench-suite/cases/shop.yaml`), as CI runs it. The controls must bracket quarry
//! (random far below, oracle perfect), the doc family must run on an index without the doc
//! comments, and a report must round-trip and catch a regression.

use std::path::Path;

use quarry_bench::arms::Arm;
use quarry_bench::cases::{CaseFile, Category, Split};
use quarry_bench::corpus::CorporaFile;
use quarry_bench::metrics::Scores;
use quarry_bench::peers::SemblePeer;
use quarry_bench::report::{Comparison, Report};
use quarry_bench::{Run, RunOptions};
use quarry_engine::EngineOptions;
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
            assert_eq!((x.key(), &x.top), (y.key(), &y.top));
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
