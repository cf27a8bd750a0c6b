//! Arms: the rankings a run compares, from quarry's own configurations to the controls that
//! validate the harness, and the settings and ablations that derive one arm from another.

use quarry_engine::{Fusion, LegWeights, SearchMode, SearchOptions};
use quarry_rank::{CapDecay, LayerKind, RankingConfig};
use quarry_store::{Filter, LexicalWeights};
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
        /// The ranking pipeline's settings (boxed: the largest of them, kept off the enum's
        /// size).
        ranking: Box<RankingConfig>,
        /// Whether chunks are embedded behind their header (an index per value).
        embed_header: bool,
        /// The legs' weights by query shape.
        #[serde(default)]
        legs: LegWeights,
        /// The lexical leg's field weights.
        #[serde(default)]
        lexical: LexicalWeights,
        /// How the legs' hits are fused.
        #[serde(default)]
        fusion: Fusion,
    },
    /// semble 0.7.0 from PyPI, searching with BM25 and its own ranking (dense weight 0: its
    /// model cannot be downloaded here), through `bench-suite/peer_semble.py`: the peer to
    /// beat.
    Semble,
    /// ripgrep over the query's words, lines ranked by how many distinct words they hold:
    /// what a person with grep gets, the floor a search engine must clear.
    Ripgrep,
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
                ranking: Box::default(),
                embed_header: true,
                legs: LegWeights::default(),
                lexical: LexicalWeights::default(),
                fusion: Fusion::default(),
            },
        }
    }

    /// The peer arms: semble and ripgrep.
    pub fn peers() -> Vec<Arm> {
        vec![
            Arm {
                name: "semble".into(),
                ranker: Ranker::Semble,
            },
            Arm {
                name: "ripgrep".into(),
                ranker: Ranker::Ripgrep,
            },
        ]
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

    /// This arm with `key` set to `value`, named `key=value`: `mode`, `embed-header`, `fusion` (`rank` or `score`),
    /// `diversity-cap` (the per-file cap, `max_per_file`), `legs.SHAPE` (the dense leg's
    /// weight for `identifier`, `question`, `sentence` or `phrase` queries), `lexical.FIELD` (a lexical
    /// field's weight) or any [`RankingConfig`] field (dashes for underscores; a dot reaches
    /// inside, as in `penalties.test`), its value as JSON or a bare string.
    pub fn with_setting(&self, key: &str, value: &str) -> Result<Arm, BenchError> {
        Ok(Arm {
            name: format!("{key}={value}"),
            ..self.set(key, value)?
        })
    }

    /// This arm, under its own name, with `key` set to `value` (see [`Arm::with_setting`]):
    /// how a tuned default is tried on every arm of a run.
    pub fn set(&self, key: &str, value: &str) -> Result<Arm, BenchError> {
        let invalid = |message: String| BenchError::Setting {
            setting: format!("{key}={value}"),
            message,
        };
        let Some(settings) = self.engine_settings() else {
            return Err(invalid("only quarry's own arms take settings".into()));
        };
        let json: Value =
            serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
        let key_path = match key {
            "diversity-cap" => "ranking.max_per_file".to_owned(),
            "mode" | "embed-header" | "fusion" => key.replace('-', "_"),
            other if other.starts_with("legs.") || other.starts_with("lexical.") => {
                other.replace('-', "_")
            }
            other => format!("ranking.{}", other.replace('-', "_")),
        };
        let mut tree = serde_json::to_value(&settings).expect("an arm's settings serialise");
        let mut node = &mut tree;
        let segments: Vec<&str> = key_path.split('.').collect();
        let (last, parents) = segments.split_last().expect("a key has a segment");
        for segment in parents {
            node = node
                .get_mut(*segment)
                .filter(|n| n.is_object())
                .ok_or_else(|| invalid(format!("no such setting group {segment:?}")))?;
        }
        let fields = node.as_object_mut().expect("checked to be an object");
        if !fields.contains_key(*last) {
            let mut known: Vec<String> = fields.keys().cloned().collect();
            if parents == ["ranking"] {
                known.extend(
                    [
                        "mode",
                        "embed-header",
                        "fusion",
                        "diversity-cap",
                        "legs.*",
                        "lexical.*",
                    ]
                    .map(String::from),
                );
            }
            return Err(invalid(format!(
                "no such setting; known: {}",
                known.join(", ")
            )));
        }
        fields.insert((*last).to_owned(), json);
        let settings: EngineSettings =
            serde_json::from_value(tree).map_err(|e| invalid(e.to_string()))?;
        Ok(Arm {
            name: self.name.clone(),
            ranker: settings.into_ranker(),
        })
    }

    /// This arm without `part` (one of [`ABLATIONS`]), named `no-<part>`.
    pub fn without(&self, part: &str) -> Result<Arm, BenchError> {
        let invalid = |message: &str| BenchError::Setting {
            setting: format!("--ablate {part}"),
            message: message.into(),
        };
        let Some(mut settings) = self.engine_settings() else {
            return Err(invalid("only quarry's own arms can be ablated"));
        };
        let lexical = &mut settings.lexical;
        let disabled = match part {
            "dense" => {
                settings.mode = SearchMode::Lexical;
                None
            }
            "lexical" => {
                settings.mode = SearchMode::Semantic;
                None
            }
            "chunk-headers" => {
                settings.embed_header = false;
                None
            }
            "leg-weights" => {
                let even = 0.5;
                settings.legs = LegWeights {
                    identifier: even,
                    question: even,
                    sentence: even,
                    phrase: even,
                    ..settings.legs
                };
                None
            }
            "symbol-leg" => {
                settings.legs.symbol = 0.0;
                None
            }
            "file-leg" => {
                settings.legs.file = 0.0;
                None
            }
            "cap-by-shape" => {
                // One decay for every shape: the one before decays followed the shape.
                settings.ranking.soft_cap_decay = CapDecay::uniform(CapDecay::default().question);
                None
            }
            "deep-pool" => {
                // The fetch before deep pools: three candidates per result.
                settings.ranking.pool = settings.ranking.limit * 3;
                None
            }
            "lexical-name" => zero(&mut lexical.name),
            "lexical-container" => zero(&mut lexical.container),
            "lexical-file" => zero(&mut lexical.file),
            "lexical-dirs" => zero(&mut lexical.dirs),
            "lexical-comments" => zero(&mut lexical.comments),
            "file-evidence" => Some(LayerKind::FileEvidence),
            "definition" => Some(LayerKind::Definition),
            "path-match" => Some(LayerKind::PathMatch),
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
        settings.ranking.disable.extend(disabled);
        Ok(Arm {
            name: format!("no-{part}"),
            ranker: settings.into_ranker(),
        })
    }

    /// The settings of quarry's arms (`None` for peers and controls).
    fn engine_settings(&self) -> Option<EngineSettings> {
        match &self.ranker {
            Ranker::Engine {
                mode,
                ranking,
                embed_header,
                legs,
                lexical,
                fusion,
            } => Some(EngineSettings {
                mode: *mode,
                ranking: RankingConfig::clone(ranking),
                embed_header: *embed_header,
                legs: *legs,
                lexical: *lexical,
                fusion: *fusion,
            }),
            Ranker::Semble | Ranker::Ripgrep | Ranker::Random | Ranker::Oracle => None,
        }
    }

    /// The options quarry's search runs with for this arm (`None` for peers and controls).
    pub fn search_options(&self) -> Option<SearchOptions> {
        match &self.ranker {
            Ranker::Engine {
                mode,
                ranking,
                legs,
                lexical,
                fusion,
                ..
            } => Some(SearchOptions {
                ranking: RankingConfig::clone(ranking),
                filter: Filter::default(),
                mode: *mode,
                legs: *legs,
                lexical: *lexical,
                fusion: *fusion,
            }),
            Ranker::Semble | Ranker::Ripgrep | Ranker::Random | Ranker::Oracle => None,
        }
    }

    /// Whether its answers need the embedding model: quarry's arms unless in lexical mode.
    pub fn needs_model(&self) -> bool {
        matches!(&self.ranker, Ranker::Engine { mode, .. } if *mode != SearchMode::Lexical)
    }

    /// The index the arm searches: `Some(embed_header)` for quarry's arms, `None` for
    /// controls (they use the default index).
    pub fn embed_header(&self) -> Option<bool> {
        match &self.ranker {
            Ranker::Engine { embed_header, .. } => Some(*embed_header),
            Ranker::Semble | Ranker::Ripgrep | Ranker::Random | Ranker::Oracle => None,
        }
    }
}

/// The fields of [`Ranker::Engine`], as one value that settings and ablations edit.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EngineSettings {
    mode: SearchMode,
    ranking: RankingConfig,
    embed_header: bool,
    legs: LegWeights,
    lexical: LexicalWeights,
    fusion: Fusion,
}

impl EngineSettings {
    fn into_ranker(self) -> Ranker {
        Ranker::Engine {
            mode: self.mode,
            ranking: Box::new(self.ranking),
            embed_header: self.embed_header,
            legs: self.legs,
            lexical: self.lexical,
            fusion: self.fusion,
        }
    }
}

/// Sets a lexical weight to 0 (the field leaves the query); no layer to disable.
fn zero(weight: &mut f32) -> Option<LayerKind> {
    *weight = 0.0;
    None
}

/// Every part `--ablate` can leave out: the retrieval legs (`file-leg`: whole files), their weights by query shape
/// (`leg-weights`: even instead), the soft cap's decay by query shape (`cap-by-shape`: the
/// question's 0.5 for every shape), the deep candidate pool (`deep-pool`: three candidates
/// per result, the fetch before it), each lexical field (`lexical-*`: weight 0), each
/// ranking layer that runs by default, and the chunk header. (The cross-encoder rerank is
/// off by default, so it has nothing to ablate.)
pub const ABLATIONS: [&str; 21] = [
    "dense",
    "lexical",
    "symbol-leg",
    "file-leg",
    "leg-weights",
    "deep-pool",
    "lexical-name",
    "lexical-container",
    "lexical-file",
    "lexical-dirs",
    "lexical-comments",
    "file-evidence",
    "definition",
    "path-match",
    "pagerank",
    "path-penalty",
    "source-boost",
    "threshold",
    "diversity-cap",
    "cap-by-shape",
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
                ..
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
        let test = hybrid.with_setting("penalties.test", "0.3").unwrap();
        assert_eq!(engine(&test).1.penalties.test, 0.3);
        let Ranker::Engine { legs, lexical, .. } = hybrid
            .with_setting("legs.sentence", "0.6")
            .unwrap()
            .with_setting("lexical.name", "5")
            .unwrap()
            .ranker
        else {
            panic!("not an engine arm")
        };
        assert_eq!((legs.sentence, lexical.name), (0.6, 5.0));
        let Ranker::Engine { fusion, .. } = hybrid.with_setting("fusion", "score").unwrap().ranker
        else {
            panic!("not an engine arm")
        };
        assert_eq!(fusion, Fusion::Score);
        assert!(hybrid.with_setting("fusion", "votes").is_err());
        assert!(hybrid.with_setting("lexical.colour", "1").is_err());
        assert!(Arm::peers()[0].with_setting("mode", "lexical").is_err());
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
