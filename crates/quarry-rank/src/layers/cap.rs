//! [`DiversityCap`]: keep one file from filling the results.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::penalty;
use crate::{ConfigError, Effect, LayerKind, Pass, QueryShape, RankError, RankingLayer};

/// How [`DiversityCap`] treats a file's chunks beyond the cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CapMode {
    /// Drop them, except to fill result slots that no other file can.
    Hard,
    /// Keep them, each scaled by the query shape's decay once more than the one before it:
    /// the first beyond the cap by `decay`, the next by `decay²`...
    Soft {
        /// The decay per extra chunk, by query shape.
        decay: CapDecay,
    },
}

/// The soft cap's decay per extra chunk of a file, by the query's [`QueryShape`], each in
/// `(0, 1]`. A configuration may also give one number for every shape.
///
/// A description of what code does asks for one piece of code, and the file that holds
/// the best match is the likeliest to hold the answer when that match is not it, so its
/// further chunks decay less (0.7). Other shapes (a question of how or where something
/// happens, a name, a few words) ask about something that usually spans files, so a file's
/// further chunks make room for other files (0.5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CapDecay {
    /// A bare or qualified identifier.
    pub identifier: f32,
    /// A question of four words or more.
    pub question: f32,
    /// A description of four words or more.
    pub sentence: f32,
    /// A word or a few.
    pub phrase: f32,
}

impl Default for CapDecay {
    fn default() -> Self {
        Self {
            identifier: 0.5,
            question: 0.5,
            sentence: 0.7,
            phrase: 0.5,
        }
    }
}

impl CapDecay {
    /// The same decay for every shape.
    pub fn uniform(decay: f32) -> Self {
        Self {
            identifier: decay,
            question: decay,
            sentence: decay,
            phrase: decay,
        }
    }

    /// The decay for a query of `shape`.
    pub fn for_shape(&self, shape: QueryShape) -> f32 {
        match shape {
            QueryShape::Identifier => self.identifier,
            QueryShape::Question => self.question,
            QueryShape::Sentence => self.sentence,
            QueryShape::Phrase => self.phrase,
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        penalty("soft_cap_decay.identifier", self.identifier)?;
        penalty("soft_cap_decay.question", self.question)?;
        penalty("soft_cap_decay.sentence", self.sentence)?;
        penalty("soft_cap_decay.phrase", self.phrase)?;
        Ok(())
    }
}

/// A configuration gives one number for every shape, or a table by shape whose missing
/// entries keep their defaults.
impl<'de> Deserialize<'de> for CapDecay {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DecayVisitor)
    }
}

struct DecayVisitor;

impl<'de> Visitor<'de> for DecayVisitor {
    type Value = CapDecay;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number, or a table of identifier, question, sentence and phrase")
    }

    fn visit_f64<E: de::Error>(self, decay: f64) -> Result<CapDecay, E> {
        Ok(CapDecay::uniform(decay as f32))
    }

    fn visit_i64<E: de::Error>(self, decay: i64) -> Result<CapDecay, E> {
        Ok(CapDecay::uniform(decay as f32))
    }

    fn visit_u64<E: de::Error>(self, decay: u64) -> Result<CapDecay, E> {
        Ok(CapDecay::uniform(decay as f32))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<CapDecay, A::Error> {
        let table = ByShape::deserialize(de::value::MapAccessDeserializer::new(map))?;
        let default = CapDecay::default();
        Ok(CapDecay {
            identifier: table.identifier.unwrap_or(default.identifier),
            question: table.question.unwrap_or(default.question),
            sentence: table.sentence.unwrap_or(default.sentence),
            phrase: table.phrase.unwrap_or(default.phrase),
        })
    }
}

/// [`CapDecay`] as a table, for [`DecayVisitor`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ByShape {
    identifier: Option<f32>,
    question: Option<f32>,
    sentence: Option<f32>,
    phrase: Option<f32>,
}

/// At most `max_per_file` chunks of any one file among the results; 0 disables the cap.
///
/// In [`CapMode::Hard`] a file's chunks beyond the cap are set aside, then, when fewer than
/// `limit` chunks remain, the best of them fill the empty slots (recorded as
/// [`Effect::Spilled`]): a query that only one or two files answer still gets `limit`
/// results. The cap only removes candidates, so it never reorders the ones it keeps.
///
/// For the cap to choose, the retriever must fetch more than `limit` candidates:
/// [`RankingConfig::fetch_count`](crate::RankingConfig::fetch_count) says how many.
#[derive(Debug, Clone, PartialEq)]
pub struct DiversityCap {
    max_per_file: usize,
    limit: usize,
    mode: CapMode,
}

impl DiversityCap {
    /// A cap of `max_per_file` chunks per file for a query that wants `limit` results.
    pub fn new(max_per_file: usize, limit: usize, mode: CapMode) -> Result<Self, ConfigError> {
        if let CapMode::Soft { decay } = mode {
            decay.validate()?;
        }
        Ok(Self {
            max_per_file,
            limit,
            mode,
        })
    }
}

impl RankingLayer for DiversityCap {
    fn kind(&self) -> LayerKind {
        LayerKind::DiversityCap
    }

    fn apply(&self, pass: &mut Pass<'_>) -> Result<(), RankError> {
        if self.max_per_file == 0 {
            return Ok(());
        }
        // Each chunk's place among its file's chunks, in score order, from 1. The map is
        // only counted in, never iterated, so its order cannot leak into the results.
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let nth: Vec<usize> = pass
            .list
            .iter()
            .map(|ranked| {
                let count = seen.entry(ranked.candidate.path.as_str()).or_default();
                *count += 1;
                *count
            })
            .collect();
        match self.mode {
            CapMode::Hard => {
                let within = nth.iter().filter(|&&n| n <= self.max_per_file).count();
                let mut empty_slots = self.limit.saturating_sub(within);
                let mut keep = Vec::with_capacity(nth.len());
                for (ranked, &n) in pass.list.iter_mut().zip(&nth) {
                    // In score order, so the best of the set-aside chunks fill the slots.
                    let spill = n > self.max_per_file && empty_slots > 0;
                    if spill {
                        empty_slots -= 1;
                        pass.report.spilled += 1;
                        let effect = Effect::Spilled { nth_in_file: n };
                        ranked.record(LayerKind::DiversityCap, effect);
                    }
                    keep.push(n <= self.max_per_file || spill);
                }
                pass.keep_where(|i, _| keep[i]);
            }
            CapMode::Soft { decay } => {
                let decay = decay.for_shape(pass.query.shape());
                pass.scale_each(|index, _| {
                    let n = nth[index];
                    if n <= self.max_per_file {
                        return None;
                    }
                    let exponent = i32::try_from(n - self.max_per_file).unwrap_or(i32::MAX);
                    let factor = decay.powi(exponent);
                    let effect = Effect::Decayed {
                        nth_in_file: n,
                        factor,
                    };
                    Some((factor, effect))
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::tests::{outline, run};

    /// One large file whose 20 chunks all match well, and three small files that match less.
    fn large_and_small() -> Vec<(&'static str, usize, f32)> {
        let mut input: Vec<_> = (0..20)
            .map(|i| ("src/large.rs", 1 + 10 * i, 0.9 - 0.01 * i as f32))
            .collect();
        input.extend([
            ("src/a.rs", 1, 0.6),
            ("src/b.rs", 1, 0.55),
            ("src/c.rs", 1, 0.5),
        ]);
        input
    }

    fn paths(ranking: &crate::Ranking) -> Vec<&str> {
        ranking
            .results
            .iter()
            .map(|r| r.candidate.path.as_str())
            .collect()
    }

    #[test]
    fn the_cap_lets_smaller_files_into_the_results() {
        let ranking = run(
            DiversityCap::new(3, 6, CapMode::Hard).unwrap(),
            "",
            &large_and_small(),
        );
        assert_eq!(
            paths(&ranking),
            [
                "src/large.rs",
                "src/large.rs",
                "src/large.rs",
                "src/a.rs",
                "src/b.rs",
                "src/c.rs"
            ]
        );
        let report = &ranking.summary.layers[0];
        assert_eq!(
            report.dropped_per_file,
            [("src/large.rs".to_string(), 17)].into()
        );
        assert_eq!(report.spilled, 0);
    }

    #[test]
    fn capped_chunks_spill_into_slots_no_other_file_fills() {
        let ranking = run(
            DiversityCap::new(3, 10, CapMode::Hard).unwrap(),
            "",
            &large_and_small(),
        );
        assert_eq!(ranking.results.len(), 10);
        assert_eq!(
            paths(&ranking)
                .iter()
                .filter(|&&p| p == "src/large.rs")
                .count(),
            7
        );
        // The best four set-aside chunks, in score order, and no reordering.
        let spilled: Vec<_> = ranking
            .results
            .iter()
            .filter(|r| !r.explanation.steps.is_empty())
            .map(|r| r.candidate.start_line)
            .collect();
        assert_eq!(spilled, [31, 41, 51, 61]);
        assert_eq!(
            ranking.results[3].explanation.steps[0].effect,
            Effect::Spilled { nth_in_file: 4 }
        );
        let report = &ranking.summary.layers[0];
        assert_eq!(report.spilled, 4);
        assert_eq!(
            report.dropped_per_file,
            [("src/large.rs".to_string(), 13)].into()
        );
    }

    #[test]
    fn the_soft_cap_decays_each_extra_chunk_and_keeps_them_all() {
        let input = [
            ("big.rs", 1, 0.9),
            ("big.rs", 2, 0.9),
            ("big.rs", 3, 0.9),
            ("small.rs", 1, 0.4),
        ];
        let ranking = run(
            DiversityCap::new(
                1,
                10,
                CapMode::Soft {
                    decay: CapDecay::uniform(0.5),
                },
            )
            .unwrap(),
            "",
            &input,
        );
        assert_eq!(
            outline(&ranking),
            [
                ("big.rs", 1, 0.9),
                ("big.rs", 2, 0.45),
                ("small.rs", 1, 0.4),
                ("big.rs", 3, 0.225)
            ]
        );
        assert_eq!(
            ranking.results[3].explanation.steps[0].effect,
            Effect::Decayed {
                nth_in_file: 3,
                factor: 0.25
            }
        );
        assert!(
            DiversityCap::new(
                1,
                10,
                CapMode::Soft {
                    decay: CapDecay::uniform(0.0)
                }
            )
            .is_err()
        );
    }

    #[test]
    fn a_description_keeps_more_of_its_best_file_than_a_question_does() {
        let input = [
            ("src/take.rs", 1, 0.9),
            ("src/take.rs", 20, 0.8),
            ("src/chain.rs", 1, 0.5),
        ];
        let cap = || {
            DiversityCap::new(
                1,
                10,
                CapMode::Soft {
                    decay: CapDecay::default(),
                },
            )
        };
        let description = run(
            cap().unwrap(),
            "consume the adapter and return its inner value",
            &input,
        );
        assert_eq!(
            outline(&description),
            [
                ("src/take.rs", 1, 0.9),
                ("src/take.rs", 20, 0.56),
                ("src/chain.rs", 1, 0.5)
            ]
        );
        let question = run(
            cap().unwrap(),
            "how do buffer adapters limit what is read?",
            &input,
        );
        assert_eq!(
            outline(&question),
            [
                ("src/take.rs", 1, 0.9),
                ("src/chain.rs", 1, 0.5),
                ("src/take.rs", 20, 0.4)
            ]
        );
    }

    #[test]
    fn a_configuration_gives_one_decay_or_one_per_shape() {
        let uniform: CapDecay = serde_json::from_str("0.6").unwrap();
        assert_eq!(uniform, CapDecay::uniform(0.6));
        let table: CapDecay = serde_json::from_str(r#"{"question": 0.9}"#).unwrap();
        assert_eq!(
            table,
            CapDecay {
                question: 0.9,
                ..CapDecay::default()
            }
        );
        let unknown = serde_json::from_str::<CapDecay>(r#"{"questions": 0.9}"#).unwrap_err();
        assert!(unknown.to_string().contains("questions"), "{unknown}");
        let round_trip: CapDecay =
            serde_json::from_str(&serde_json::to_string(&table).unwrap()).unwrap();
        assert_eq!(round_trip, table);
        let out_of_range = CapDecay {
            sentence: 1.5,
            ..CapDecay::default()
        };
        let error = DiversityCap::new(
            1,
            10,
            CapMode::Soft {
                decay: out_of_range,
            },
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("soft_cap_decay.sentence"),
            "{error}"
        );
    }

    #[test]
    fn a_cap_of_zero_changes_nothing() {
        let input = large_and_small();
        let ranking = run(DiversityCap::new(0, 5, CapMode::Hard).unwrap(), "", &input);
        let results: Vec<_> = ranking
            .results
            .iter()
            .map(|r| (r.candidate.path.as_str(), r.candidate.start_line, r.score))
            .collect();
        assert_eq!(results, input);
        assert!(
            ranking
                .results
                .iter()
                .all(|r| r.explanation.steps.is_empty())
        );
    }
}
