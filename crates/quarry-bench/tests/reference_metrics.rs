//! quarry-bench's metrics agree with trec_eval's (through `pytrec_eval`, pinned in
//! `crates/quarry-testkit/python-requirements.txt`) on random rankings.
//!
//! Each synthetic case is translated the way the metrics define it: a target is judged
//! relevant at the first result chunk of its file that overlaps its span; relevant targets
//! the list misses become judged documents it never returns (they count in the ideal);
//! secondary targets count only where the list reaches them.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use quarry_bench::cases::Target;
use quarry_bench::metrics::{DEPTH, Location, score};
use quarry_bench::stats::Rng;
use serde_json::{Value, json};

struct Synthetic {
    results: Vec<Location>,
    relevant: Vec<Target>,
    secondary: Vec<Target>,
}

/// Targets in distinct files (a file is judged once), half of them with spans.
fn synthetic(rng: &mut Rng) -> Synthetic {
    let mut files: Vec<usize> = (0..8).collect();
    let mut target = |rng: &mut Rng| {
        let file = files.remove(rng.below(files.len()));
        let start = 1 + rng.below(60);
        Target {
            path: format!("src/f{file}.rs"),
            lines: (rng.below(2) == 0).then_some((start, start + rng.below(20))),
        }
    };
    let relevant = (0..1 + rng.below(3)).map(|_| target(rng)).collect();
    let secondary = (0..rng.below(3)).map(|_| target(rng)).collect();
    let results = (0..1 + rng.below(14))
        .map(|_| {
            let start = 1 + rng.below(80);
            Location {
                path: format!("src/f{}.rs", rng.below(8)),
                start_line: start,
                end_line: start + rng.below(15),
            }
        })
        .collect();
    Synthetic {
        results,
        relevant,
        secondary,
    }
}

/// The trec_eval input for one case: the run (`r0`... scored by rank) and the judgements.
fn trec_input(id: &str, case: &Synthetic) -> Value {
    let top = &case.results[..case.results.len().min(DEPTH)];
    let first_hit = |t: &Target| {
        top.iter().position(|h| {
            h.path == t.path
                && t.lines
                    .is_none_or(|(a, b)| h.start_line <= b && a <= h.end_line)
        })
    };
    let run: BTreeMap<String, f64> = (0..top.len())
        .map(|i| (format!("r{i}"), (100 - i) as f64))
        .collect();
    let (mut qrels, mut relevant_only) = (BTreeMap::new(), BTreeMap::new());
    for (j, target) in case.relevant.iter().enumerate() {
        let doc = first_hit(target).map_or(format!("missing{j}"), |i| format!("r{i}"));
        qrels.insert(doc.clone(), 1);
        relevant_only.insert(doc, 1);
    }
    for target in &case.secondary {
        if let Some(i) = first_hit(target) {
            qrels.insert(format!("r{i}"), 1);
        }
    }
    json!({"id": id, "run": run, "qrels": qrels, "qrels_relevant": relevant_only})
}

#[test]
fn metrics_match_trec_eval_on_random_rankings() {
    let mut rng = Rng::new(2026);
    let cases: Vec<Synthetic> = (0..400).map(|_| synthetic(&mut rng)).collect();
    let input: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| trec_input(&format!("q{i}"), c))
        .collect();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ir_reference.py");
    let mut child = Command::new(quarry_testkit::python())
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::from(input).to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "the reference script failed");
    let reference: Value = serde_json::from_slice(&output.stdout).unwrap();

    let mut compared = 0;
    for (i, case) in cases.iter().enumerate() {
        let ours = score(&case.results, &case.relevant, &case.secondary, |_| true).unwrap();
        let theirs = &reference[format!("q{i}")];
        for (name, value) in [
            ("ndcg10", ours.ndcg10),
            ("ndcg5", ours.ndcg5),
            ("mrr", ours.mrr),
            ("recall10", ours.recall10),
        ] {
            let expected = theirs[name]
                .as_f64()
                .unwrap_or_else(|| panic!("q{i}: no {name}"));
            assert!(
                (value - expected).abs() < 1e-6,
                "q{i} {name}: ours {value}, trec_eval {expected}"
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 1600);
    // The draw exercises every regime: misses, perfect lists and partial credit.
    let ndcgs: Vec<f64> = cases
        .iter()
        .map(|c| {
            score(&c.results, &c.relevant, &c.secondary, |_| true)
                .unwrap()
                .ndcg10
        })
        .collect();
    assert!(ndcgs.contains(&0.0) && ndcgs.contains(&1.0));
    assert!(ndcgs.iter().any(|&n| n > 0.0 && n < 1.0));
}
