//! Arms: the rankings a run compares, from quarry's own configurations to the controls that
//! validate the harness, and the settings and ablations that derive one arm from another.

use quarry_engine::SearchMode;
use quarry_rank::{LayerKind, RankingConfig};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::BenchError;

/// One ranking under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    /// Its name in reports (`hybrid`, `diversity-cap=0`, `no-pagerank`).
    pub name: String,
    /// What produces its results.
    pub ranker: Ranker,
}

/// What produces an arm's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Ranker {
    /// quarry's search.
    Engine {
        /// Which retrieval legs run.
        mode: SearchMode,
        /// The ranking pipeline's settings.
        ranking: RankingConfig,
        /// Whether chunks are embedded behind their header (an index per value).
        embed_header: bool,
    },
    /// Ten chunks drawn at random from the index, seeded by the case: the floor.
    Random,
    /// Each target's first chunk, relevant targets first: the ceiling (below 1 only for a
    /// case whose span no chunk overlaps, which the report flags).
    Oracle,
}

impl Arm {
    /// quarry's default search: both legs, the default ranking.
    pub fn hybrid() -> Self {
        Arm::engine("hybrid", SearchMode::Hybrid)
    }

    /// The default ranking over one retrieval mode.
    pub fn engine(name: &str, mode: SearchMode) -> Self {
        Arm {
            name: name.into(),
            ranker: Ranker::Engine {
                mode,
                ranking: RankingConfig::default(),
                embed_header: true,
            },
        }
    }

    /// The full run's arms: hybrid, then the controls (dense only, lexical only, random,
    /// oracle).
    pub fn with_controls() -> Vec<Arm> {
        vec![
            Arm::hybrid(),
            Arm::engine("dense-only", SearchMode::Semantic),
            Arm::engine("lexical-only", SearchMode::Lexical),
            Arm {
                name: "random".into(),
                ranker: Ranker::Random,
            },
            Arm {
                name: "oracle".into(),
                ranker: Ranker::Oracle,
            },
        ]
    }

    /// This arm with `key` set to `value`, named `key=value`: `mode`, `embed-header`,
    /// `diversity-cap` (the per-file cap, `max_per_file`) or any [`RankingConfig`] field
    /// (dashes for underscores), its value as JSON or a bare string.
    pub fn with_setting(&self, key: &str, value: &str) -> Result<Arm, BenchError> {
        let invalid = |message: String| BenchError::Setting {
            setting: format!("{key}={value}"),
            message,
        };
        let Some((mut mode, ranking, mut embed_header)) = self.engine_settings() else {
            return Err(invalid("only quarry's own arms take settings".into()));
        };
        let json: Value =
            serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
        let field = match key {
            "diversity-cap" => "max_per_file".to_owned(),
            other => other.replace('-', "_"),
        };
        let mut ranking_json = serde_json::to_value(&ranking).expect("a ranking config serialises");
        match field.as_str() {
            "mode" => mode = serde_json::from_value(json).map_err(|e| invalid(e.to_string()))?,
            "embed_header" => {
                embed_header = json
                    .as_bool()
                    .ok_or_else(|| invalid("expected true or false".into()))?
            }
            _ => {
                let fields = ranking_json
                    .as_object_mut()
                    .expect("a struct serialises to an object");
                if !fields.contains_key(&field) {
                    let mut known: Vec<&str> = fields.keys().map(String::as_str).collect();
                    known.extend(["mode", "embed_header", "diversity-cap"]);
                    return Err(invalid(format!(
                        "no such setting; known: {}",
                        known.join(", ")
                    )));
                }
                fields.insert(field, json);
            }
        }
        let ranking = serde_json::from_value(ranking_json).map_err(|e| invalid(e.to_string()))?;
        Ok(Arm {
            name: format!("{key}={value}"),
            ranker: Ranker::Engine {
                mode,
                ranking,
                embed_header,
            },
        })
    }

    /// This arm without `part` (one of [`ABLATIONS`]), named `no-<part>`.
    pub fn without(&self, part: &str) -> Result<Arm, BenchError> {
        let invalid = |message: &str| BenchError::Setting {
            setting: format!("--ablate {part}"),
            message: message.into(),
        };
        let Some((mut mode, mut ranking, mut embed_header)) = self.engine_settings() else {
            return Err(invalid("only quarry's own arms can be ablated"));
        };
        let disabled = match part {
            "dense" => {
                mode = SearchMode::Lexical;
                None
            }
            "lexical" => {
                mode = SearchMode::Semantic;
                None
            }
            "chunk-headers" => {
                embed_header = false;
                None
            }
            "pagerank" => Some(LayerKind::PageRank),
            "path-penalty" => Some(LayerKind::PathPenalty),
            "source-boost" => Some(LayerKind::SourceBoost),
            "threshold" => Some(LayerKind::Threshold),
            "diversity-cap" => Some(LayerKind::DiversityCap),
            _ => {
                return Err(invalid(&format!(
                    "unknown part; known: {}",
                    ABLATIONS.join(", ")
                )));
            }
        };
        ranking.disable.extend(disabled);
        Ok(Arm {
            name: format!("no-{part}"),
            ranker: Ranker::Engine {
                mode,
                ranking,
                embed_header,
            },
        })
    }

    /// The mode, ranking and header setting of quarry's arms (`None` for controls).
    fn engine_settings(&self) -> Option<(SearchMode, RankingConfig, bool)> {
        match &self.ranker {
            Ranker::Engine {
                mode,
                ranking,
                embed_header,
            } => Some((*mode, ranking.clone(), *embed_header)),
            Ranker::Random | Ranker::Oracle => None,
        }
    }

    /// The index the arm searches: `Some(embed_header)` for quarry's arms, `None` for
    /// controls (they use the default index).
    pub fn embed_header(&self) -> Option<bool> {
        match &self.ranker {
            Ranker::Engine { embed_header, .. } => Some(*embed_header),
            Ranker::Random | Ranker::Oracle => None,
        }
    }
}

/// Every part `--ablate` can leave out: the retrieval legs, each ranking layer that runs
/// by default, and the chunk header. (The cross-encoder rerank is off by default, so it
/// has nothing to ablate.)
pub const ABLATIONS: [&str; 8] = [
    "dense",
    "lexical",
    "pagerank",
    "path-penalty",
    "source-boost",
    "threshold",
    "diversity-cap",
    "chunk-headers",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(arm: &Arm) -> (SearchMode, &RankingConfig, bool) {
        match &arm.ranker {
            Ranker::Engine {
                mode,
                ranking,
                embed_header,
            } => (*mode, ranking, *embed_header),
            _ => panic!("not an engine arm"),
        }
    }

    #[test]
    fn settings_reach_any_ranking_field() {
        let hybrid = Arm::hybrid();
        let cap = hybrid.with_setting("diversity-cap", "0").unwrap();
        assert_eq!(cap.name, "diversity-cap=0");
        assert_eq!(engine(&cap).1.max_per_file, Some(0));
        let strength = hybrid.with_setting("pagerank-strength", "0.5").unwrap();
        assert_eq!(engine(&strength).1.pagerank_strength, 0.5);
        let soft = hybrid.with_setting("soft-cap", "true").unwrap();
        assert!(engine(&soft).1.soft_cap);
        assert_eq!(
            engine(&hybrid.with_setting("mode", "lexical").unwrap()).0,
            SearchMode::Lexical
        );
        assert!(!engine(&hybrid.with_setting("embed-header", "false").unwrap()).2);
        let unknown = hybrid.with_setting("warp", "9").unwrap_err().to_string();
        assert!(
            unknown.contains("known: ") && unknown.contains("source_boost"),
            "{unknown}"
        );
        assert!(hybrid.with_setting("limit", "\"ten\"").is_err());
    }

    #[test]
    fn every_ablation_changes_the_arm() {
        let hybrid = Arm::hybrid();
        for part in ABLATIONS {
            let ablated = hybrid.without(part).unwrap();
            assert_ne!(ablated.ranker, hybrid.ranker, "{part}");
            assert_eq!(ablated.name, format!("no-{part}"));
        }
        assert!(hybrid.without("vibes").is_err());
        assert!(Arm::with_controls()[3].without("dense").is_err());
    }
}
