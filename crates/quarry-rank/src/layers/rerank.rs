//! [`CrossEncoderRerank`]: rescore candidates with a model that reads query and chunk
//! together. The model lives elsewhere (quarry-embed's `CrossEncoder`, whose `relevance`
//! method has [`Reranker::rerank`]'s shape, adapted by the engine); this is its interface.

use crate::{Effect, LayerKind, Pass, RankError, RankingLayer, RerankError};

/// Scores how relevant each text is to a query.
pub trait Reranker: Send + Sync {
    /// One score per text, in order; higher is more relevant. Scores should be
    /// probabilities of relevance in `[0, 1]` (a cross-encoder's logit through a sigmoid),
    /// so that the multiplicative layers and the threshold after it keep their meaning.
    fn rerank(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, RerankError>;
}

/// Replaces every candidate's score by its [`Reranker`]'s.
///
/// It scores every candidate it is given, so its cost grows with the retriever's fetch
/// ([`RankingConfig::fetch_count`](crate::RankingConfig::fetch_count)); it runs first, so
/// the other layers adjust the better relevance score.
pub struct CrossEncoderRerank {
    reranker: Box<dyn Reranker>,
}

impl CrossEncoderRerank {
    /// The layer around `reranker`.
    pub fn new(reranker: Box<dyn Reranker>) -> Self {
        Self { reranker }
    }
}

impl RankingLayer for CrossEncoderRerank {
    fn kind(&self) -> LayerKind {
        LayerKind::Rerank
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        let Pass {
            query,
            list,
            report,
        } = pass;
        if list.is_empty() {
            return Ok(());
        }
        let texts: Vec<&str> = list.iter().map(|r| r.candidate.text.as_str()).collect();
        let scores = self
            .reranker
            .rerank(query.text(), &texts)
            .map_err(RankError::Reranker)?;
        if scores.len() != list.len() {
            return Err(RankError::RerankerCount {
                expected: list.len(),
                got: scores.len(),
            });
        }
        for (ranked, score) in list.iter_mut().zip(scores) {
            if !score.is_finite() {
                return Err(RankError::RerankerScore {
                    id: ranked.candidate.id,
                    path: ranked.candidate.path.clone(),
                    score,
                });
            }
            let previous = ranked.score;
            ranked.score = score;
            ranked.record(LayerKind::Rerank, Effect::Rescored { previous });
            report.adjusted += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::QueryTerms;
    use crate::chain::tests::{WordOverlap, outline, run};

    #[test]
    fn reranked_scores_replace_retrieval_scores() {
        // The test candidates' texts are `fn at_<line>() {}`.
        let layer = CrossEncoderRerank::new(Box::new(WordOverlap));
        let ranking = run(layer, "at_7 fn", &[("a.rs", 3, 0.9), ("b.rs", 7, 0.1)]);
        assert_eq!(outline(&ranking), [("b.rs", 7, 1.0), ("a.rs", 3, 0.5)]);
        assert_eq!(
            ranking.results[0].explanation.steps[0].effect,
            Effect::Rescored { previous: 0.1 }
        );
    }

    #[test]
    fn a_score_the_reranker_cannot_order_is_an_error() {
        // An empty query has no words: WordOverlap divides zero by zero.
        let layers: Vec<Box<dyn RankingLayer>> =
            vec![Box::new(CrossEncoderRerank::new(Box::new(WordOverlap)))];
        let candidates = vec![(crate::chain::tests::candidate("a.rs", 1), 0.5)];
        let error = crate::apply_chain(&layers, &QueryTerms::of(""), candidates).unwrap_err();
        assert!(matches!(error, RankError::RerankerScore { .. }), "{error}");
    }
}
