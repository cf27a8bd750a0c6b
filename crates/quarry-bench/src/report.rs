//! Reports: summaries per arm, category and corpus; paired comparisons with bootstrap
//! intervals; regression checks against a baseline; markdown for people, JSON for tools.

mod lost_cases;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::BenchError;
use crate::cases::Category;
use crate::metrics::{METRICS, Scores};
use crate::run::{ArmResult, CaseResult, CorpusReport, Run, mean_by};
use crate::stats::{Delta, paired_bootstrap, percentile};

/// The metrics that say "better" when they rise: all of [`METRICS`] but the last, the
/// distinct files. A regression is a drop in one of them.
pub const QUALITY_METRICS: &[&str] = match METRICS.split_last() {
    Some((_, quality)) => quality,
    None => &[],
};

/// Mean scores per group, with the group's size.
type Groups = BTreeMap<String, (usize, Scores)>;

/// How many changed cases a comparison lists.
const CHANGED_SHOWN: usize = 15;

/// One arm against another, case by case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The reference arm.
    pub a: String,
    /// The arm compared with it.
    pub b: String,
    /// Cases both scored, with the same query.
    pub cases: usize,
    /// Per metric: B's mean minus A's, with its 95% bootstrap interval.
    pub deltas: BTreeMap<String, Delta>,
    /// Cases whose NDCG@10 changed, largest change first.
    pub changed: Vec<ChangedCase>,
}

/// A case whose score moved between two arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangedCase {
    /// `corpus/id`.
    pub case: String,
    /// The query.
    pub query: String,
    /// NDCG@10 under A.
    pub a: f64,
    /// NDCG@10 under B.
    pub b: f64,
}

impl Comparison {
    /// Compares arm `b` with arm `a` over the cases both scored with the same query: a
    /// baseline from another chunker drew other doc cases under the same ids.
    pub fn new(a: &ArmResult, b: &ArmResult) -> Self {
        let a_cases: HashMap<String, &crate::run::CaseResult> =
            a.cases.iter().map(|c| (c.key(), c)).collect();
        let pairs: Vec<_> = b
            .cases
            .iter()
            .filter_map(|case| Some((*a_cases.get(&case.key())?, case)))
            .filter(|(a, b)| a.query == b.query)
            .collect();
        // A metric a report written before it lacks (NaN) is compared where both have it.
        let deltas = METRICS
            .iter()
            .filter_map(|&metric| {
                let differences: Vec<f64> = pairs
                    .iter()
                    .map(|(a, b)| b.scores.get(metric) - a.scores.get(metric))
                    .filter(|difference| difference.is_finite())
                    .collect();
                (!differences.is_empty())
                    .then(|| (metric.to_owned(), paired_bootstrap(&differences)))
            })
            .collect();
        let mut changed: Vec<ChangedCase> = pairs
            .iter()
            .filter(|(a, b)| (a.scores.ndcg10 - b.scores.ndcg10).abs() > 1e-9)
            .map(|(a, b)| ChangedCase {
                case: b.key(),
                query: b.query.clone(),
                a: a.scores.ndcg10,
                b: b.scores.ndcg10,
            })
            .collect();
        changed.sort_by(|x, y| {
            (y.b - y.a)
                .abs()
                .total_cmp(&(x.b - x.a).abs())
                .then(x.case.cmp(&y.case))
        });
        Comparison {
            a: a.name.clone(),
            b: b.name.clone(),
            cases: pairs.len(),
            deltas,
            changed,
        }
    }

    /// The quality metrics whose interval lies wholly below zero.
    pub fn drops(&self) -> Vec<&str> {
        QUALITY_METRICS
            .iter()
            .copied()
            .filter(|m| self.deltas.get(*m).is_some_and(Delta::is_drop))
            .collect()
    }
}

/// A run with its summaries and comparisons: what the report files hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// A title (`relevance`, `ablations`, `A/B diversity-cap`).
    pub title: String,
    /// The measurements.
    pub run: Run,
    /// Each arm compared with the first arm (A/B and ablation runs), or with the baseline.
    pub comparisons: Vec<Comparison>,
}

impl Report {
    /// A report of `run`; `compare` adds each later arm's comparison with the first.
    /// Without it, a run with a `semble` arm compares each of quarry's arms with semble.
    pub fn new(title: &str, run: Run, compare: bool) -> Self {
        let peer = run.arms.iter().find(|a| a.name == "semble");
        let comparisons = match (compare, run.arms.split_first(), peer) {
            (true, Some((first, rest)), _) => {
                rest.iter().map(|b| Comparison::new(first, b)).collect()
            }
            (false, _, Some(semble)) => run
                .arms
                .iter()
                .filter(|b| matches!(b.name.as_str(), "hybrid" | "lexical-only" | "dense-only"))
                .map(|b| Comparison::new(semble, b))
                .collect(),
            _ => Vec::new(),
        };
        Report {
            title: title.into(),
            run,
            comparisons,
        }
    }

    /// Reads a report written by [`Report::write`] (its JSON file).
    pub fn load(path: &Path) -> Result<Self, BenchError> {
        let bytes = std::fs::read(path).map_err(|source| BenchError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        serde_json::from_slice(&bytes).map_err(|e| BenchError::InvalidReport {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// Compares each arm of this run with the arm of the same name in `baseline`.
    pub fn against(&self, baseline: &Report) -> Vec<Comparison> {
        self.run
            .arms
            .iter()
            .filter_map(|arm| {
                let old = baseline.run.arms.iter().find(|b| b.name == arm.name)?;
                Some(Comparison::new(old, arm))
            })
            .collect()
    }

    /// Writes `<dir>/<stem>.md` and `<dir>/<stem>.json`.
    pub fn write(
        &self,
        dir: &Path,
        stem: &str,
        regressions: &[Comparison],
    ) -> Result<(), BenchError> {
        std::fs::create_dir_all(dir).map_err(|source| BenchError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        // Compact: reports are part of every clone.
        let json = serde_json::to_string(self).expect("a report serialises");
        for (extension, text) in [("md", self.markdown(regressions)), ("json", json)] {
            let path = dir.join(format!("{stem}.{extension}"));
            std::fs::write(&path, text).map_err(|source| BenchError::Io { path, source })?;
        }
        Ok(())
    }

    /// Mean scores per arm over every case.
    pub fn overall(&self) -> Vec<(&str, usize, Scores)> {
        self.run
            .arms
            .iter()
            .filter_map(|arm| {
                let mean = Scores::mean(arm.cases.iter().map(|c| &c.scores))?;
                Some((arm.name.as_str(), arm.cases.len(), mean))
            })
            .collect()
    }

    /// The overall table, printed at the end of a run.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<22} {:>5} {:>8} {:>8} {:>8} {:>9} {:>6} {:>6} {:>8} {:>8} {:>8}",
            "arm",
            "cases",
            "NDCG@10",
            "NDCG@5",
            "file@10",
            "Recall@10",
            "MRR",
            "rubric",
            "files",
            "p50 ms",
            "p95 ms"
        );
        for (name, cases, s) in self.overall() {
            let (p50, p95) = self.latency(name);
            let _ = writeln!(
                out,
                "{name:<22} {cases:>5} {:>8.3} {:>8.3} {:>8.3} {:>9.3} {:>6.3} {:>6.2} {:>8.1} {p50:>8} {p95:>8}",
                s.ndcg10, s.ndcg5, s.file_ndcg10, s.recall10, s.mrr, s.rubric, s.distinct_files
            );
        }
        out
    }

    fn latency(&self, arm: &str) -> (String, String) {
        let Some(arm) = self.run.arms.iter().find(|a| a.name == arm) else {
            return ("-".into(), "-".into());
        };
        let mut sorted = arm.latencies_ms.clone();
        if sorted.is_empty() {
            return ("-".into(), "-".into());
        }
        sorted.sort_by(f64::total_cmp);
        let show = |q| format!("{:.1}", percentile(&sorted, q));
        (show(0.5), show(0.95))
    }

    /// The markdown report.
    pub fn markdown(&self, regressions: &[Comparison]) -> String {
        let run = &self.run;
        let mut md = String::new();
        let _ = writeln!(
            md,
            "# Relevance benchmark: {} ({})\n",
            self.title, run.config.commit
        );
        let _ = writeln!(
            md,
            "Written by `cargo xtask bench relevance`; see `bench-suite/README.md`.\n"
        );
        let _ = writeln!(md, "## Configuration\n\n```");
        let _ = writeln!(md, "commit:    {}", run.config.commit);
        let _ = writeln!(md, "model:     {}", run.config.model);
        let _ = writeln!(md, "backend:   {}", run.config.backend);
        let _ = writeln!(md, "chunker:   {}", run.config.chunker);
        let _ = writeln!(
            md,
            "doc cases: {} per corpus",
            run.config.doc_cases_per_corpus
        );
        for arm in &run.config.arms {
            let settings = serde_json::to_string(&arm.ranker).expect("an arm serialises");
            let _ = writeln!(md, "arm {}: {settings}", arm.name);
        }
        let _ = writeln!(md, "```\n\n## Corpora\n");
        let _ = writeln!(
            md,
            "| corpus | language | source | files | chunks | phase 1 s | index s | semble index s | cases | held out | doc cases |"
        );
        let _ = writeln!(md, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        let held_out = |corpus: &str| {
            run.arms.first().map_or(0, |arm| {
                arm.cases
                    .iter()
                    .filter(|c| c.corpus == corpus && c.held_out)
                    .count()
            })
        };
        for c in &run.corpora {
            let seconds = c.index_seconds.map_or("-".into(), |s| format!("{s:.0}"));
            let searchable = c
                .searchable_seconds
                .map_or("-".into(), |s| format!("{s:.2}"));
            let semble = c
                .peer_index_seconds
                .get("semble")
                .map_or("-".into(), |s| format!("{s:.2}"));
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {searchable} | {seconds} | {semble} | {} | {} | {} |",
                c.name,
                c.language,
                c.source,
                c.files,
                c.chunks,
                c.cases,
                held_out(&c.name),
                c.doc_cases
            );
        }
        let _ = writeln!(md, "\n## Overall\n");
        md.push_str(&self.overall_markdown());
        let _ = writeln!(
            md,
            "\nNDCG@10's 95% interval: a percentile bootstrap over the cases ({} resamples).",
            crate::stats::RESAMPLES
        );
        type Key<'k> = Box<dyn Fn(&CaseResult) -> Option<String> + 'k>;
        let family = |case: &CaseResult| {
            run.corpora
                .iter()
                .find(|c| c.name == case.corpus)
                .map(CorpusReport::family)
        };
        let sections: [(&str, Key); 7] = [
            (
                "By category",
                Box::new(|c| Some(c.category.name().to_owned())),
            ),
            (
                "By shape (the cases written for a shape of question)",
                Box::new(|c| c.shape.map(|shape| shape.name().to_owned())),
            ),
            ("By corpus", Box::new(|c| Some(c.corpus.clone()))),
            (
                "By corpus family (large: 2,000 files or more; C/C++: the smaller C and C++ corpora)",
                Box::new(|c| family(c).map(str::to_owned)),
            ),
            (
                "Symbol cases by corpus family",
                Box::new(|c| {
                    (c.category == Category::Symbol)
                        .then(|| family(c).map(str::to_owned))
                        .flatten()
                }),
            ),
            (
                "The corpora added for symbol lookups, apart (hand-written cases)",
                Box::new(|c| {
                    let added = run
                        .corpora
                        .iter()
                        .any(|corpus| corpus.name == c.corpus && corpus.group.is_some());
                    (c.category != Category::Doc).then(|| match added {
                        true => format!("added: {}", c.category.name()),
                        false => format!("earlier: {}", c.category.name()),
                    })
                }),
            ),
            (
                "Held out and tuning cases (hand-written; doc cases are generated, never tuned on)",
                Box::new(|c| {
                    Some(match (c.category, c.held_out) {
                        (Category::Doc, _) => "doc (generated)".to_owned(),
                        (_, true) => "held out".to_owned(),
                        (_, false) => "tuning".to_owned(),
                    })
                }),
            ),
        ];
        for (title, key) in sections {
            let _ = writeln!(md, "\n## {title}\n");
            let _ = writeln!(
                md,
                "| group | arm | cases | NDCG@10 | 95% CI | NDCG@5 | file NDCG@10 | Recall@10 | MRR | rubric | files |"
            );
            let _ = writeln!(md, "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|");
            let by_arm: Vec<(&ArmResult, Groups)> = run
                .arms
                .iter()
                .map(|a| (a, mean_by(&a.cases, &key)))
                .collect();
            let groups: std::collections::BTreeSet<&String> =
                by_arm.iter().flat_map(|(_, g)| g.keys()).collect();
            for group in groups {
                for (arm, means) in &by_arm {
                    if let Some((n, s)) = means.get(group) {
                        let interval = ndcg_interval(
                            arm.cases.iter().filter(|c| key(c).as_ref() == Some(group)),
                        );
                        let _ = writeln!(
                            md,
                            "| {group} | {} | {n} | {:.3} | {interval} | {} |",
                            arm.name,
                            s.ndcg10,
                            cells_after_ndcg(s)
                        );
                    }
                }
            }
        }
        for (heading, comparisons) in [
            ("Comparisons", &self.comparisons),
            ("Against the baseline", &regressions.to_vec()),
        ] {
            if comparisons.is_empty() {
                continue;
            }
            let _ = writeln!(md, "\n## {heading}\n");
            let _ = writeln!(
                md,
                "Paired over the cases both arms scored; 95% intervals from {} bootstrap resamples of the cases.\n",
                crate::stats::RESAMPLES
            );
            for comparison in comparisons {
                md.push_str(&comparison_markdown(comparison));
            }
        }
        md.push_str(&lost_cases::markdown(run));
        let oracle_misses: Vec<_> = run
            .arms
            .iter()
            .filter(|a| a.name == "oracle")
            .flat_map(|a| &a.cases)
            .filter(|c| c.scores.ndcg10 < 1.0 - 1e-9)
            .collect();
        let _ = writeln!(md, "\n## Harness checks\n");
        let _ = writeln!(
            md,
            "- Oracle cases below NDCG@10 = 1 (a span no chunk overlaps, or two targets sharing a chunk): {}",
            if oracle_misses.is_empty() {
                "none".to_owned()
            } else {
                oracle_misses
                    .iter()
                    .map(|c| c.key())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        for warning in &run.warnings {
            let _ = writeln!(md, "- {warning}");
        }
        md
    }

    fn overall_markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(
            md,
            "| arm | cases | NDCG@10 | 95% CI | NDCG@5 | file NDCG@10 | Recall@10 | MRR | rubric | files | p50 ms | p95 ms |"
        );
        let _ = writeln!(
            md,
            "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for (name, n, s) in self.overall() {
            let (p50, p95) = self.latency(name);
            let arm = self.run.arms.iter().find(|a| a.name == name);
            let interval = ndcg_interval(arm.into_iter().flat_map(|a| &a.cases));
            let _ = writeln!(
                md,
                "| {name} | {n} | {:.3} | {interval} | {} | {p50} | {p95} |",
                s.ndcg10,
                cells_after_ndcg(&s)
            );
        }
        md
    }
}

/// The cells after NDCG@10: NDCG@5, file NDCG@10, Recall@10, MRR, rubric, distinct files.
fn cells_after_ndcg(s: &Scores) -> String {
    format!(
        "{:.3} | {:.3} | {:.3} | {:.3} | {:.2} | {:.1}",
        s.ndcg5, s.file_ndcg10, s.recall10, s.mrr, s.rubric, s.distinct_files
    )
}

/// The 95% bootstrap interval of the mean NDCG@10 of `cases`, as `[low, high]`.
fn ndcg_interval<'a>(cases: impl Iterator<Item = &'a crate::run::CaseResult>) -> String {
    let values: Vec<f64> = cases.map(|c| c.scores.ndcg10).collect();
    let interval = paired_bootstrap(&values);
    format!("[{:.3}, {:.3}]", interval.low, interval.high)
}

fn comparison_markdown(comparison: &Comparison) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "### {} vs {} ({} cases)\n",
        comparison.b, comparison.a, comparison.cases
    );
    let _ = writeln!(md, "| metric | Δ (B − A) | 95% CI | verdict |");
    let _ = writeln!(md, "|---|---:|---|---|");
    for (metric, d) in &comparison.deltas {
        let verdict = if d.is_drop() {
            "worse"
        } else if d.is_gain() {
            "better"
        } else {
            "no clear change"
        };
        let verdict = if QUALITY_METRICS.contains(&metric.as_str()) {
            verdict
        } else {
            "-"
        };
        let _ = writeln!(
            md,
            "| {metric} | {:+.4} | [{:+.4}, {:+.4}] | {verdict} |",
            d.mean, d.low, d.high
        );
    }
    if !comparison.changed.is_empty() {
        let _ = writeln!(
            md,
            "\n{} cases changed NDCG@10; the largest changes:\n",
            comparison.changed.len()
        );
        let _ = writeln!(md, "| case | query | A | B |");
        let _ = writeln!(md, "|---|---|---:|---:|");
        for c in comparison.changed.iter().take(CHANGED_SHOWN) {
            let _ = writeln!(
                md,
                "| {} | {} | {:.3} | {:.3} |",
                c.case,
                c.query.replace('|', "\\|"),
                c.a,
                c.b
            );
        }
    }
    md.push('\n');
    md
}
