//! Candidates, the layer trait, and the chain that keeps them in order.

use quarry_chunk::StoredChunk;
use std::cmp::Ordering;

use crate::{Effect, Explanation, LayerKind, LayerReport, QueryTerms, RankError, Step, Summary};

/// A candidate with its current score and how it got it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// The chunk.
    pub candidate: StoredChunk,
    /// Its score so far.
    pub score: f32,
    /// What the layers did to it.
    pub explanation: Explanation,
}

impl Ranked {
    /// Scales the score by `factor` and records it, unless the factor changes nothing.
    /// Returns whether it did.
    ///
    /// A negative score (a cosine similarity can be one) is divided instead, so that a
    /// penalty lowers every score and a boost raises every score; zero stays zero. The
    /// result saturates at the largest finite values, so scores stay orderable.
    pub(crate) fn scale(&mut self, layer: LayerKind, factor: f32, effect: Effect) -> bool {
        if factor == 1.0 {
            return false;
        }
        let scaled = if self.score >= 0.0 {
            self.score * factor
        } else {
            self.score / factor
        };
        self.score = scaled.clamp(f32::MIN, f32::MAX);
        self.record(layer, effect);
        true
    }

    /// Records what `layer` did, with the score as it stands.
    pub(crate) fn record(&mut self, layer: LayerKind, effect: Effect) {
        self.explanation.steps.push(Step {
            layer,
            effect,
            score: self.score,
        });
    }
}

/// One layer's turn at the candidates: the query, the list in ranking order, and the report
/// of what the layer did to it.
pub struct Pass<'a> {
    /// The query.
    pub query: &'a QueryTerms,
    /// The candidates, in ranking order.
    pub list: &'a mut Vec<Ranked>,
    /// What the layer did to the candidates as a whole.
    pub report: &'a mut LayerReport,
}

impl Pass<'_> {
    /// Scales each candidate that `rescore` (called once per candidate, in order, with its
    /// index) gives a factor and an effect for ([`Ranked::scale`]), counting it as adjusted
    /// when the factor changed its score: the bookkeeping every rescoring layer does.
    pub(crate) fn scale_each(
        &mut self,
        mut rescore: impl FnMut(usize, &Ranked) -> Option<(f32, Effect)>,
    ) {
        for (index, ranked) in self.list.iter_mut().enumerate() {
            if let Some((factor, effect)) = rescore(index, ranked)
                && ranked.scale(self.report.layer, factor, effect)
            {
                self.report.adjusted += 1;
            }
        }
    }

    /// Keeps the candidates `keep` accepts (called once per candidate, in order, with its
    /// index) and records the others as dropped.
    pub(crate) fn keep_where(&mut self, mut keep: impl FnMut(usize, &Ranked) -> bool) {
        let mut index = 0;
        self.list.retain(|ranked| {
            let kept = keep(index, ranked);
            index += 1;
            if !kept {
                self.report.record_drop(&ranked.candidate.path);
            }
            kept
        });
    }
}

/// One step of the ranking pipeline.
///
/// [`apply_chain`] hands every layer the list in ranking order (descending score, ties by
/// path, then start line, then end line, then id) and restores that order after it, so a
/// layer only changes scores or drops candidates.
pub trait RankingLayer: Send + Sync {
    /// Which layer this is, for reports and explanations.
    fn kind(&self) -> LayerKind;

    /// Rescores or drops the candidates of `pass` for its query, recording in its report
    /// what it dropped and in each result's explanation what it changed.
    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError>;
}

/// One query's results, best first, with what the pipeline did.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// The results in ranking order.
    pub results: Vec<Ranked>,
    /// What each layer did to the candidates as a whole.
    pub summary: Summary,
}

/// Runs `candidates` (each with its retrieval score) through `layers` in turn.
///
/// After every layer the list is in ranking order: descending score, ties broken by path,
/// then start line (then end line and id, so the order is total). Scores must be finite.
pub fn apply_chain(
    layers: &[Box<dyn RankingLayer>],
    query: &QueryTerms,
    candidates: Vec<(StoredChunk, f32)>,
) -> Result<Ranking, RankError> {
    let mut list = Vec::with_capacity(candidates.len());
    for (candidate, score) in candidates {
        if !score.is_finite() {
            return Err(RankError::InvalidScore {
                id: candidate.id,
                path: candidate.path,
                score,
            });
        }
        list.push(Ranked {
            candidate,
            score,
            explanation: Explanation {
                retrieval_score: score,
                steps: Vec::new(),
            },
        });
    }
    sort(&mut list);
    let mut summary = Summary {
        candidates: list.len(),
        layers: Vec::with_capacity(layers.len()),
    };
    for layer in layers {
        let mut report = LayerReport::new(layer.kind(), list.len());
        layer.apply(&mut Pass {
            query,
            list: &mut list,
            report: &mut report,
        })?;
        sort(&mut list);
        report.kept = list.len();
        summary.layers.push(report);
    }
    Ok(Ranking {
        results: list,
        summary,
    })
}

/// Sorts `list` into ranking order. A candidate is a couple of hundred bytes, and sorting
/// moves elements many times over, so this sorts their indices and then moves each
/// candidate into place once (the permutation is applied by swaps, as
/// `slice::sort_by_cached_key` does).
fn sort(list: &mut [Ranked]) {
    if list.is_sorted_by(|a, b| ranking_order(a, b).is_le()) {
        return;
    }
    let mut order: Vec<usize> = (0..list.len()).collect();
    order.sort_by(|&a, &b| ranking_order(&list[a], &list[b]));
    for i in 0..order.len() {
        // Where the element for place `i` is now: earlier places swapped theirs away.
        let mut index = order[i];
        while index < i {
            index = order[index];
        }
        order[i] = index;
        list.swap(i, index);
    }
}

/// Descending score, then path, start line, end line and id: never the input's order.
fn ranking_order(a: &Ranked, b: &Ranked) -> Ordering {
    let (x, y) = (&a.candidate, &b.candidate);
    // Adding 0 turns -0 into 0: the same score, so a tie.
    (b.score + 0.0)
        .total_cmp(&(a.score + 0.0))
        .then_with(|| x.path.cmp(&y.path))
        .then(x.start_line.cmp(&y.start_line))
        .then(x.end_line.cmp(&y.end_line))
        .then(x.id.cmp(&y.id))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use quarry_chunk::{ChunkKind, Language};

    /// Scores a text by the share of the query's words it contains: a real, if crude,
    /// relevance model.
    pub struct WordOverlap;

    impl crate::Reranker for WordOverlap {
        fn rerank(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, crate::RerankError> {
            let words: Vec<&str> = query.split_whitespace().collect();
            Ok(texts
                .iter()
                .map(|text| {
                    let found = words.iter().filter(|w| text.contains(*w)).count();
                    found as f32 / words.len() as f32
                })
                .collect())
        }
    }

    /// A Rust function chunk of `path` at `line`.
    pub fn candidate(path: &str, line: usize) -> StoredChunk {
        StoredChunk {
            id: (path.len() * 1000 + line) as u128,
            path: path.into(),
            start_line: line,
            end_line: line + 9,
            language: Language::Rust,
            kind: ChunkKind::Function,
            name: None,
            container: Vec::new(),
            text: format!("fn at_{line}() {{}}"),
        }
    }

    /// Runs one layer over `(path, line, score)` candidates.
    pub fn run(
        layer: impl RankingLayer + 'static,
        query: &str,
        input: &[(&str, usize, f32)],
    ) -> Ranking {
        let layers: Vec<Box<dyn RankingLayer>> = vec![Box::new(layer)];
        let candidates = input
            .iter()
            .map(|&(path, line, score)| (candidate(path, line), score))
            .collect();
        apply_chain(&layers, &QueryTerms::of(query), candidates).unwrap()
    }

    /// `(path, line, score)` of each result, the score rounded to 4 decimals so that
    /// tests can write `0.64` for `0.8 × 0.8`.
    pub fn outline(ranking: &Ranking) -> Vec<(&str, usize, f32)> {
        ranking
            .results
            .iter()
            .map(|r| {
                let score = (r.score * 1e4).round() / 1e4;
                (r.candidate.path.as_str(), r.candidate.start_line, score)
            })
            .collect()
    }

    #[test]
    fn the_chain_orders_by_score_then_path_then_line_whatever_the_input_order() {
        let input = [
            ("b.rs", 1, 0.5),
            ("a.rs", 9, 0.5),
            ("c.rs", 1, 0.9),
            ("a.rs", 2, 0.5),
        ];
        let mut reversed = input;
        reversed.reverse();
        let layers: Vec<Box<dyn RankingLayer>> = Vec::new();
        for order in [input, reversed] {
            let candidates = order
                .iter()
                .map(|&(p, l, s)| (candidate(p, l), s))
                .collect();
            let ranking = apply_chain(&layers, &QueryTerms::of(""), candidates).unwrap();
            assert_eq!(
                outline(&ranking),
                [
                    ("c.rs", 1, 0.9),
                    ("a.rs", 2, 0.5),
                    ("a.rs", 9, 0.5),
                    ("b.rs", 1, 0.5)
                ]
            );
        }
    }

    #[test]
    fn a_score_that_cannot_be_ordered_is_refused() {
        for score in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let error = apply_chain(
                &[],
                &QueryTerms::of(""),
                vec![(candidate("a.rs", 1), score)],
            )
            .unwrap_err();
            assert!(matches!(error, RankError::InvalidScore { .. }), "{error}");
        }
    }

    #[test]
    fn scaling_lowers_negative_scores_too_and_keeps_zero() {
        let mut ranked = Ranked {
            candidate: candidate("a.rs", 1),
            score: -0.4,
            explanation: Explanation {
                retrieval_score: -0.4,
                steps: Vec::new(),
            },
        };
        let effect = Effect::Boosted { factor: 0.5 };
        assert!(ranked.scale(LayerKind::SourceBoost, 0.5, effect.clone()));
        assert_eq!(ranked.score, -0.8);
        ranked.score = 0.0;
        ranked.scale(LayerKind::SourceBoost, 0.5, effect.clone());
        assert_eq!(ranked.score, 0.0);
        ranked.score = f32::MAX;
        ranked.scale(LayerKind::SourceBoost, 2.0, effect);
        assert_eq!(ranked.score, f32::MAX);
        assert_eq!(ranked.explanation.steps.len(), 3);
    }
}
