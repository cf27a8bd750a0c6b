//! Scoring one ranked list against a case's targets, and averaging scores.
//!
//! A target counts at the rank of the first result chunk in its file (overlapping its
//! line span, if it has one); later chunks of the same file gain nothing. Gains are
//! binary. The ideal ranking puts every indexed relevant target first, plus the secondary
//! targets the list did reach, so a secondary hit raises NDCG while a missing one costs
//! nothing. Targets whose files the index does not hold are left out (and reported).
//!
//! File NDCG@10 scores the same list with each target widened to its whole file: whether
//! the right files rank, whatever chunk of them comes first. A system that chunks files
//! otherwise (a peer) may find the file but not the lines; the two metrics tell which.

use serde::{Deserialize, Serialize};

use crate::cases::Target;

/// How many results are scored.
pub const DEPTH: usize = 10;

/// A result chunk's location.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// Corpus-relative path.
    pub path: String,
    /// First line, 1-based.
    pub start_line: usize,
    /// Last line, inclusive.
    pub end_line: usize,
}

/// One ranked list's scores.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    /// NDCG at 10, binary gains.
    pub ndcg10: f64,
    /// NDCG at 5.
    pub ndcg5: f64,
    /// NDCG at 10 with each target widened to its whole file (NaN in reports written
    /// before it was measured).
    #[serde(default = "not_measured")]
    pub file_ndcg10: f64,
    /// The share of relevant targets in the top 10.
    pub recall10: f64,
    /// The reciprocal rank of the first relevant or secondary hit (0 without one).
    pub mrr: f64,
    /// 3: every relevant target in the top 5; 2: all in the top 10 or most in the top 5;
    /// 1: at least one in the top 10; 0: none.
    pub rubric: f64,
    /// Distinct files among the top 10.
    pub distinct_files: f64,
}

/// A metric an older report lacks.
fn not_measured() -> f64 {
    f64::NAN
}

/// The metrics by name, in report order.
pub const METRICS: [&str; 7] = [
    "ndcg10",
    "ndcg5",
    "file_ndcg10",
    "recall10",
    "mrr",
    "rubric",
    "distinct_files",
];

impl Scores {
    /// The metric called `name` (one of [`METRICS`]).
    pub fn get(&self, name: &str) -> f64 {
        match name {
            "ndcg10" => self.ndcg10,
            "ndcg5" => self.ndcg5,
            "file_ndcg10" => self.file_ndcg10,
            "recall10" => self.recall10,
            "mrr" => self.mrr,
            "rubric" => self.rubric,
            "distinct_files" => self.distinct_files,
            other => panic!("no metric called {other}"),
        }
    }

    /// The mean of each metric over `scores` (`None` for none).
    pub fn mean<'a>(scores: impl IntoIterator<Item = &'a Scores>) -> Option<Scores> {
        let scores: Vec<&Scores> = scores.into_iter().collect();
        let mean = |metric: fn(&Scores) -> f64| {
            scores.iter().fold(0.0, |sum, s| sum + metric(s)) / scores.len() as f64
        };
        (!scores.is_empty()).then(|| Scores {
            ndcg10: mean(|s| s.ndcg10),
            ndcg5: mean(|s| s.ndcg5),
            file_ndcg10: mean(|s| s.file_ndcg10),
            recall10: mean(|s| s.recall10),
            mrr: mean(|s| s.mrr),
            rubric: mean(|s| s.rubric),
            distinct_files: mean(|s| s.distinct_files),
        })
    }
}

/// Where each target was found: its 0-based rank in the top [`DEPTH`], if anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// One entry per indexed relevant target.
    pub relevant: Vec<Option<usize>>,
    /// One entry per indexed secondary target.
    pub secondary: Vec<Option<usize>>,
}

impl Judged {
    /// Finds each target's first hit among the top [`DEPTH`] of `results`. Targets `indexed`
    /// rejects are left out.
    pub fn new(
        results: &[Location],
        relevant: &[Target],
        secondary: &[Target],
        indexed: impl Fn(&str) -> bool,
    ) -> Self {
        let top = &results[..results.len().min(DEPTH)];
        let rank = |target: &Target| {
            top.iter()
                .position(|hit| target.hit_by(&hit.path, hit.start_line, hit.end_line))
        };
        let judge = |targets: &[Target]| {
            targets
                .iter()
                .filter(|t| indexed(&t.path))
                .map(rank)
                .collect()
        };
        Judged {
            relevant: judge(relevant),
            secondary: judge(secondary),
        }
    }

    /// The scores, or `None` when no relevant target is indexed (nothing to find).
    pub fn scores(&self, distinct_files: usize) -> Option<Scores> {
        let wanted = self.relevant.len();
        if wanted == 0 {
            return None;
        }
        let mut gains = [false; DEPTH];
        for rank in self.relevant.iter().chain(&self.secondary).flatten() {
            gains[*rank] = true;
        }
        let secondary_hits = self.secondary.iter().flatten().count();
        let ideal = wanted + secondary_hits;
        let discount = |rank: usize| 1.0 / (rank as f64 + 2.0).log2();
        let ndcg = |depth: usize| {
            let dcg: f64 = (0..depth).filter(|&r| gains[r]).map(discount).sum();
            let idcg: f64 = (0..depth.min(ideal)).map(discount).sum();
            dcg / idcg
        };
        let found = |depth: usize| {
            self.relevant
                .iter()
                .flatten()
                .filter(|&&r| r < depth)
                .count()
        };
        let (top5, top10) = (found(5), found(DEPTH));
        let rubric = if top5 == wanted {
            3.0
        } else if top10 == wanted || 2 * top5 > wanted {
            2.0
        } else if top10 > 0 {
            1.0
        } else {
            0.0
        };
        Some(Scores {
            ndcg10: ndcg(DEPTH),
            ndcg5: ndcg(5),
            // Set by `score`, which judges the list again by files.
            file_ndcg10: f64::NAN,
            recall10: top10 as f64 / wanted as f64,
            mrr: gains
                .iter()
                .position(|&g| g)
                .map_or(0.0, |r| 1.0 / (r as f64 + 1.0)),
            rubric,
            distinct_files: distinct_files as f64,
        })
    }
}

/// Scores the top [`DEPTH`] of `results` for a case (see the module docs); `None` when
/// none of its relevant targets is indexed.
pub fn score(
    results: &[Location],
    relevant: &[Target],
    secondary: &[Target],
    indexed: impl Fn(&str) -> bool,
) -> Option<Scores> {
    let top = &results[..results.len().min(DEPTH)];
    let distinct: std::collections::HashSet<&str> = top.iter().map(|h| h.path.as_str()).collect();
    let mut scores = Judged::new(results, relevant, secondary, &indexed).scores(distinct.len())?;
    // Each target file once: two spans of one file are one file found.
    let relevant_files = whole_files(relevant, &[]);
    let secondary_files = whole_files(secondary, &relevant_files);
    let by_files = Judged::new(results, &relevant_files, &secondary_files, &indexed);
    scores.file_ndcg10 = by_files.scores(distinct.len()).map_or(0.0, |s| s.ndcg10);
    Some(scores)
}

/// The files of `targets`, each once and whole, leaving out those of `except`.
fn whole_files(targets: &[Target], except: &[Target]) -> Vec<Target> {
    let mut files: Vec<Target> = Vec::new();
    for target in targets {
        let known = files.iter().chain(except).any(|t| t.path == target.path);
        if !known {
            files.push(Target {
                path: target.path.clone(),
                lines: None,
            });
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(paths: &[&str]) -> Vec<Location> {
        paths
            .iter()
            .enumerate()
            .map(|(i, p)| Location {
                path: p.to_string(),
                start_line: 10 * i + 1,
                end_line: 10 * i + 10,
            })
            .collect()
    }

    fn targets(specs: &[&str]) -> Vec<Target> {
        specs.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn a_perfect_list_scores_one_and_an_empty_one_zero() {
        let relevant = targets(&["a", "b"]);
        let perfect = score(&hits(&["a", "b", "c"]), &relevant, &[], |_| true).unwrap();
        assert_eq!(
            (
                perfect.ndcg10,
                perfect.recall10,
                perfect.mrr,
                perfect.rubric
            ),
            (1.0, 1.0, 1.0, 3.0)
        );
        assert_eq!(perfect.distinct_files, 3.0);
        let empty = score(&[], &relevant, &[], |_| true).unwrap();
        assert_eq!(
            (empty.ndcg10, empty.recall10, empty.mrr, empty.rubric),
            (0.0, 0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn a_target_counts_once_at_its_files_first_overlapping_chunk() {
        // Ranks 1 and 2 are the same file; the span only overlaps rank 2's lines (11-20).
        let results = hits(&["x", "a", "a", "b"]);
        let judged = Judged::new(&results, &targets(&["a:15-16", "b"]), &[], |_| true);
        assert_eq!(judged.relevant, [Some(1), Some(3)]);
        let scores = judged.scores(3).unwrap();
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!((scores.ndcg10 - dcg / idcg).abs() < 1e-12);
        assert_eq!(scores.mrr, 0.5);
    }

    #[test]
    fn file_ndcg_counts_the_right_file_whatever_its_lines() {
        // `a`'s first chunk (lines 11-20) misses the span; the file is still first found
        // at rank 2. Two spans of `b` are one file.
        let relevant = targets(&["a:50-60", "b:1-5", "b:90-99"]);
        let scores = score(&hits(&["x", "a", "b"]), &relevant, &[], |_| true).unwrap();
        assert_eq!(scores.ndcg10, 0.0);
        let dcg = 1.0 / 3f64.log2() + 1.0 / 4f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!((scores.file_ndcg10 - dcg / idcg).abs() < 1e-12);
        let whole = score(&hits(&["a", "b"]), &relevant, &[], |_| true).unwrap();
        assert_eq!(whole.file_ndcg10, 1.0);
    }

    #[test]
    fn secondary_hits_help_and_missing_ones_cost_nothing() {
        let relevant = targets(&["a"]);
        let only = score(&hits(&["a"]), &relevant, &targets(&["s"]), |_| true).unwrap();
        assert_eq!(only.ndcg10, 1.0);
        let with = score(&hits(&["s", "a"]), &relevant, &targets(&["s"]), |_| true).unwrap();
        let without = score(&hits(&["x", "a"]), &relevant, &[], |_| true).unwrap();
        assert!(with.ndcg10 > without.ndcg10);
        assert_eq!(with.mrr, 1.0);
        assert_eq!(with.recall10, 1.0);
    }

    #[test]
    fn the_rubric_follows_its_definition() {
        let relevant = targets(&["a", "b", "c"]);
        let rubric = |paths: &[&str]| {
            score(&hits(paths), &relevant, &[], |_| true)
                .unwrap()
                .rubric
        };
        assert_eq!(rubric(&["a", "b", "c"]), 3.0);
        assert_eq!(rubric(&["x", "x", "x", "x", "x", "a", "b", "c"]), 2.0); // all in the top 10
        assert_eq!(rubric(&["a", "b", "x"]), 2.0); // most in the top 5
        assert_eq!(rubric(&["a", "x", "x", "x", "x", "x"]), 1.0);
        assert_eq!(rubric(&["x"]), 0.0);
    }

    #[test]
    fn unindexed_targets_leave_the_ideal() {
        let relevant = targets(&["a", "gone"]);
        let scores = score(&hits(&["a"]), &relevant, &[], |p| p != "gone").unwrap();
        assert_eq!((scores.ndcg10, scores.recall10), (1.0, 1.0));
        assert_eq!(
            score(&hits(&["a"]), &targets(&["gone"]), &[], |p| p != "gone"),
            None
        );
    }

    #[test]
    fn only_the_top_ten_count() {
        let mut paths = vec!["x"; 10];
        paths.push("a");
        assert_eq!(
            score(&hits(&paths), &targets(&["a"]), &[], |_| true)
                .unwrap()
                .mrr,
            0.0
        );
    }
}
