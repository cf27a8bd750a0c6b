//! What the layers did: per result ([`Explanation`]) and per query ([`Summary`]).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{ConfigError, PathClass};

/// The layers, in the order [`Pipeline::from_config`](crate::Pipeline::from_config) chains
/// them. Their names (`Display`, `FromStr`, serde) are what configuration and `--ablate` use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum LayerKind {
    /// [`CrossEncoderRerank`](crate::CrossEncoderRerank): `rerank`.
    #[serde(rename = "rerank")]
    Rerank,
    /// [`Definition`](crate::Definition): `definition`.
    #[serde(rename = "definition")]
    Definition,
    /// [`FileEvidence`](crate::FileEvidence): `file_evidence`.
    #[serde(rename = "file_evidence")]
    FileEvidence,
    /// [`PathMatch`](crate::PathMatch): `path_match`.
    #[serde(rename = "path_match")]
    PathMatch,
    /// [`PathPenalty`](crate::PathPenalty): `path_penalty`.
    #[serde(rename = "path_penalty")]
    PathPenalty,
    /// [`ThinChunk`](crate::ThinChunk): `thin_chunk`.
    #[serde(rename = "thin_chunk")]
    ThinChunk,
    /// [`SourceBoost`](crate::SourceBoost): `source_boost`.
    #[serde(rename = "source_boost")]
    SourceBoost,
    /// [`PageRankBoost`](crate::PageRankBoost): `pagerank`.
    #[serde(rename = "pagerank")]
    PageRank,
    /// [`Threshold`](crate::Threshold): `threshold`.
    #[serde(rename = "threshold")]
    Threshold,
    /// [`DiversityCap`](crate::DiversityCap): `diversity_cap`.
    #[serde(rename = "diversity_cap")]
    DiversityCap,
    /// [`TopK`](crate::TopK): `top_k`.
    #[serde(rename = "top_k")]
    TopK,
}

impl LayerKind {
    /// Every layer, in chain order.
    pub const ALL: [LayerKind; 11] = [
        LayerKind::Rerank,
        LayerKind::Definition,
        LayerKind::FileEvidence,
        LayerKind::PathMatch,
        LayerKind::PathPenalty,
        LayerKind::ThinChunk,
        LayerKind::SourceBoost,
        LayerKind::PageRank,
        LayerKind::Threshold,
        LayerKind::DiversityCap,
        LayerKind::TopK,
    ];

    /// The layer's name.
    pub fn name(self) -> &'static str {
        match self {
            LayerKind::Rerank => "rerank",
            LayerKind::FileEvidence => "file_evidence",
            LayerKind::Definition => "definition",
            LayerKind::PathMatch => "path_match",
            LayerKind::PathPenalty => "path_penalty",
            LayerKind::ThinChunk => "thin_chunk",
            LayerKind::SourceBoost => "source_boost",
            LayerKind::PageRank => "pagerank",
            LayerKind::Threshold => "threshold",
            LayerKind::DiversityCap => "diversity_cap",
            LayerKind::TopK => "top_k",
        }
    }

    /// Every name, comma-separated, for messages.
    pub(crate) fn names() -> String {
        LayerKind::ALL.map(LayerKind::name).join(", ")
    }
}

impl fmt::Display for LayerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LayerKind {
    type Err = ConfigError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        LayerKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| ConfigError::UnknownLayer(name.to_owned()))
    }
}

/// What one layer did to one result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Effect {
    /// The cross-encoder's score replaced the score.
    Rescored {
        /// The score before.
        previous: f32,
    },
    /// The chunk is the best of a file with this share of the candidates' evidence (1 for
    /// the file with the most).
    FileEvidence {
        /// The file's summed score over the largest file's.
        share: f32,
        /// The share of the query's words the file's candidates hold (weighted; 0 where
        /// `file_coverage` is 0).
        covered: f32,
        /// The boost.
        factor: f32,
    },
    /// The chunk defines the symbol the query names.
    Defines {
        /// The boost.
        factor: f32,
    },
    /// The file's name or directory holds these query words (stemmed).
    PathMatch {
        /// The query's words found.
        words: Vec<String>,
        /// The boost.
        factor: f32,
    },
    /// The file is in these classes, whose penalties multiplied to `factor`.
    Penalised {
        /// The classes whose factor applied.
        classes: Vec<PathClass>,
        /// Their product.
        factor: f32,
    },
    /// The chunk holds at most one line of code and defines nothing.
    Thin {
        /// The penalty.
        factor: f32,
    },
    /// The file is under a source directory.
    Boosted {
        /// The boost.
        factor: f32,
    },
    /// The file's PageRank percentile earned this boost.
    PageRank {
        /// The file's percentile, 0 (least central) to 1.
        percentile: f32,
        /// The boost.
        factor: f32,
    },
    /// The soft cap decayed the `nth` chunk of its file.
    Decayed {
        /// Its place among its file's chunks in score order, from 1.
        nth_in_file: usize,
        /// The decay.
        factor: f32,
    },
    /// Kept beyond the per-file cap because too few other files filled the results.
    Spilled {
        /// Its place among its file's chunks in score order, from 1.
        nth_in_file: usize,
    },
}

impl fmt::Display for Effect {
    /// What happened, in words, with the factor it applied (`PageRank percentile 0.92, ×1.18`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Effect::Rescored { previous } => {
                write!(f, "rescored by the cross-encoder (was {previous:.3})")
            }
            Effect::FileEvidence {
                share,
                covered,
                factor,
            } => write!(
                f,
                "file's evidence {share:.2}, query words covered {covered:.2}, ×{factor:.3}"
            ),
            Effect::Defines { factor } => write!(f, "defines the symbol asked for, ×{factor:.3}"),
            Effect::PathMatch { words, factor } => {
                write!(
                    f,
                    "path or language matches {}, ×{factor:.3}",
                    words.join(" ")
                )
            }
            Effect::Penalised { classes, factor } => {
                let classes: Vec<_> = classes.iter().map(|class| class.name()).collect();
                write!(f, "{} path, ×{factor:.3}", classes.join(" and "))
            }
            Effect::Thin { factor } => write!(f, "one line of code at most, ×{factor:.3}"),
            Effect::Boosted { factor } => write!(f, "under a source directory, ×{factor:.3}"),
            Effect::PageRank { percentile, factor } => {
                write!(f, "PageRank percentile {percentile:.2}, ×{factor:.3}")
            }
            Effect::Decayed {
                nth_in_file,
                factor,
            } => write!(f, "chunk {nth_in_file} of its file, ×{factor:.3}"),
            Effect::Spilled { nth_in_file } => write!(
                f,
                "chunk {nth_in_file} of its file, kept past the cap: too few other files"
            ),
        }
    }
}

/// One layer's effect on a result, and the score it left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Step {
    /// The layer.
    pub layer: LayerKind,
    /// What it did.
    pub effect: Effect,
    /// The score after it.
    pub score: f32,
}

impl fmt::Display for Step {
    /// `pagerank: PageRank percentile 0.92, ×1.18 → 0.712`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} → {:.3}", self.layer, self.effect, self.score)
    }
}

/// How a result got its score: the retriever's score, then every layer that changed it or
/// kept it by exception. Layers that simply let a result through leave no step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Explanation {
    /// The score the candidate arrived with.
    pub retrieval_score: f32,
    /// What the layers did, in chain order.
    pub steps: Vec<Step>,
}

/// What one layer did to one query's candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerReport {
    /// The layer.
    pub layer: LayerKind,
    /// Candidates it received.
    pub received: usize,
    /// Candidates it passed on.
    pub kept: usize,
    /// Candidates whose score it changed.
    pub adjusted: usize,
    /// Candidates it dropped, by file.
    pub dropped_per_file: BTreeMap<String, usize>,
    /// Chunks kept beyond the per-file cap to fill slots no other file could.
    pub spilled: usize,
    /// Decisions that depend on the query or the candidates, in words.
    pub notes: Vec<String>,
}

impl LayerReport {
    pub(crate) fn new(layer: LayerKind, received: usize) -> Self {
        Self {
            layer,
            received,
            kept: received,
            adjusted: 0,
            dropped_per_file: BTreeMap::new(),
            spilled: 0,
            notes: Vec::new(),
        }
    }

    pub(crate) fn record_drop(&mut self, path: &str) {
        // One allocation per file, not per dropped chunk.
        match self.dropped_per_file.get_mut(path) {
            Some(count) => *count += 1,
            None => {
                self.dropped_per_file.insert(path.to_owned(), 1);
            }
        }
    }
}

/// What the pipeline did to one query's candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Candidates that came in.
    pub candidates: usize,
    /// One report per layer, in chain order.
    pub layers: Vec<LayerReport>,
}

impl Summary {
    /// Candidates dropped by any layer, by file.
    pub fn dropped_per_file(&self) -> BTreeMap<&str, usize> {
        let mut total = BTreeMap::new();
        for report in &self.layers {
            for (path, count) in &report.dropped_per_file {
                *total.entry(path.as_str()).or_default() += count;
            }
        }
        total
    }

    /// The report of `layer`, if it ran.
    pub fn layer(&self, layer: LayerKind) -> Option<&LayerReport> {
        self.layers.iter().find(|report| report.layer == layer)
    }
}
