//! [`RankingConfig`] and the one function that turns it into a [`Pipeline`].

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::QueryTerms;
use crate::{
    CapDecay, CapMode, ConfigError, CrossEncoderRerank, Definition, DiversityCap, FileEvidence,
    IncludeTests, LayerKind, PageRankBoost, PathMatch, PathPenalty, PenaltyFactors, Percentiles,
    RankError, Ranking, RankingLayer, Reranker, SourceBoost, ThinChunk, Threshold, TopK,
    apply_chain,
};
use quarry_chunk::StoredChunk;

/// The most results one query may ask for ([`RankingConfig::limit`]): more than anyone
/// reads, few enough that the retriever's work stays bounded.
pub const MAX_LIMIT: usize = 1_000;
/// The largest per-file cap ([`RankingConfig::max_per_file`]); a cap past the limit is no cap.
pub const MAX_PER_FILE: usize = MAX_LIMIT;
/// The deepest pool a retrieval leg fetches ([`RankingConfig::pool`], and
/// [`RankingConfig::fetch_count`] at most).
pub const MAX_POOL: usize = 10_000;

/// Everything that shapes ranking. Every entry point (search, related, the MCP server, the
/// benchmark) builds its pipeline from one of these with [`Pipeline::from_config`].
///
/// Missing fields take their defaults, so a configuration file names only what it changes.
/// The factors are starting points, to be tuned on the relevance benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RankingConfig {
    /// Results per query, 1 to [`MAX_LIMIT`] (10: a screenful, and what an agent reads).
    pub limit: usize,
    /// Results ranked before these `limit`: a later page of the same ranking, which keeps
    /// `offset + limit` results. Neither the candidates fetched
    /// ([`RankingConfig::fetch_count`] reads `limit` alone) nor their order depend on it, so
    /// that every page is a slice of one ranking. Asked per request, never read from a file.
    #[serde(skip)]
    pub offset: usize,
    /// Candidates each retrieval leg fetches, at least (the fetch is never below
    /// `limit × max_per_file`; 0 fetches just that), at most [`MAX_POOL`]: deep enough that the per-file cap and the boosts choose among
    /// many files, not the few that fill the first places.
    pub pool: usize,
    /// At most this many chunks per file at full score, up to [`MAX_PER_FILE`]; `None` means
    /// 1; 0 disables the cap.
    /// With the soft cap (the default) a file's further chunks stay, decayed, so a file that
    /// holds the answer twice still shows it twice while other files get their turn.
    pub max_per_file: Option<usize>,
    /// Decay a file's extra chunks instead of dropping them (true: on the relevance suite's
    /// hand-written cases it ranked better than dropping them, with seven files or more in
    /// ten results on average; false drops them, spilling back only into slots no other file
    /// fills).
    pub soft_cap: bool,
    /// The soft cap's decay per extra chunk, by query shape (see [`CapDecay`]).
    pub soft_cap_decay: CapDecay,
    /// What to do with test code (`auto`).
    pub include_tests: IncludeTests,
    /// Penalty per path class.
    pub penalties: PenaltyFactors,
    /// The factor of a chunk that holds one line of code and defines nothing, in `(0, 1]`
    /// (see [`ThinChunk`]; 0.5: on the suite's large corpora, +0.006 NDCG@10 on the tuning
    /// cases, no change held out nor on the smaller corpora; 1 leaves them be).
    pub thin_chunk: f32,
    /// Boost for files under source directories, at least 1 (1.1: a nudge that breaks near
    /// ties in favour of the code itself).
    pub source_boost: f32,
    /// The boost of a chunk that defines the symbol the query names, at least 1 (see
    /// [`Definition`]).
    pub definition_boost: f32,
    /// The largest boost of a chunk whose file is named after the query's words, at least 0
    /// (see [`PathMatch`]).
    pub path_match: f32,
    /// The boost of a chunk whose language the query names (`the C++ messages`), at least 0
    /// (see [`PathMatch`]).
    pub language_match: f32,
    /// The largest boost of the best chunk of a file many candidates come from, at least 0
    /// (see [`FileEvidence`]).
    pub file_evidence: f32,
    /// The largest boost of the best chunk of a file whose candidates hold the query's words
    /// between them, at least 0 (see [`FileEvidence`]; 0.5: files ranked better, chunks as
    /// well as before, on both splits of the suite, hybrid and lexical).
    pub file_coverage: f32,
    /// The largest PageRank boost, at least 0 (0.2: the most central files gain up to 20%,
    /// enough to overtake a peripheral file that matches slightly better, not one that
    /// matches clearly better).
    pub pagerank_strength: f32,
    /// Results must score above this (0: drop candidates with no positive evidence, on any
    /// retriever's scale); `None` keeps every score.
    pub threshold: Option<f32>,
    /// Layers to leave out, by name (`pagerank`, `diversity_cap`...): ablations.
    pub disable: BTreeSet<LayerKind>,
}

impl Default for RankingConfig {
    fn default() -> Self {
        Self {
            limit: 10,
            offset: 0,
            pool: 100,
            max_per_file: None,
            soft_cap: true,
            soft_cap_decay: CapDecay::default(),
            include_tests: IncludeTests::Auto,
            penalties: PenaltyFactors::default(),
            thin_chunk: 0.5,
            definition_boost: 2.0,
            path_match: 0.5,
            language_match: 0.5,
            file_evidence: 0.2,
            file_coverage: 0.5,
            source_boost: 1.1,
            pagerank_strength: 0.2,
            threshold: Some(0.0),
            disable: BTreeSet::new(),
        }
    }
}

impl RankingConfig {
    /// The per-file cap: `max_per_file`, or 1 when it is not set.
    pub fn max_per_file(&self) -> usize {
        self.max_per_file.unwrap_or_else(|| self.default_cap())
    }

    /// How many candidates the retriever should fetch: the `pool`, and at least
    /// `limit × max_per_file` (up to [`MAX_POOL`]), so that after the cap keeps at most `max_per_file` of any
    /// file, `limit` results can remain, and the boosts have candidates to promote.
    ///
    /// It does not shrink when the cap is disabled (0 or in `disable`): an ablation then
    /// compares rankings of the same candidates.
    pub fn fetch_count(&self) -> usize {
        let per_file = match self.max_per_file() {
            0 => self.default_cap(),
            cap => cap,
        };
        self.limit
            .saturating_mul(per_file)
            .min(MAX_POOL)
            .max(self.pool)
    }

    /// Whether every setting is in its range: the counts ([`MAX_LIMIT`], [`MAX_POOL`],
    /// [`MAX_PER_FILE`]) and every layer's factor, enabled or not. The first setting out of
    /// range is the error.
    pub fn check(&self) -> Result<(), ConfigError> {
        Pipeline::from_config(self, None, None).map(drop)
    }

    fn check_counts(&self) -> Result<(), ConfigError> {
        let counts = [
            ("limit", self.limit, 1, MAX_LIMIT),
            ("offset", self.offset, 0, MAX_LIMIT),
            ("pool", self.pool, 0, MAX_POOL),
            ("max_per_file", self.max_per_file(), 0, MAX_PER_FILE),
        ];
        for (setting, value, min, max) in counts {
            if !(min..=max).contains(&value) {
                return Err(ConfigError::CountOutOfRange {
                    setting,
                    value,
                    min,
                    max,
                });
            }
        }
        Ok(())
    }

    /// The largest factor the boosts of the chain can multiply a score by together: what
    /// divides a score to bring it back to `[0, 1]` without changing the order.
    pub fn boost_ceiling(&self) -> f32 {
        let enabled = |layer, factor: f32| match self.enabled(layer) {
            true => factor.max(1.0),
            false => 1.0,
        };
        enabled(
            LayerKind::FileEvidence,
            (1.0 + self.file_evidence) * (1.0 + self.file_coverage),
        ) * enabled(LayerKind::Definition, self.definition_boost)
            * enabled(
                LayerKind::PathMatch,
                (1.0 + self.path_match) * (1.0 + self.language_match),
            )
            * enabled(LayerKind::SourceBoost, self.source_boost)
            * enabled(LayerKind::PageRank, 1.0 + self.pagerank_strength)
    }

    fn default_cap(&self) -> usize {
        1
    }

    fn enabled(&self, layer: LayerKind) -> bool {
        !self.disable.contains(&layer)
    }
}

/// A chain of [`RankingLayer`]s.
pub struct Pipeline {
    layers: Vec<Box<dyn RankingLayer>>,
}

impl Pipeline {
    /// The pipeline `config` describes, in this order:
    ///
    /// 1. [`CrossEncoderRerank`], when a `reranker` is given;
    /// 2. [`Definition`];
    /// 3. [`FileEvidence`];
    /// 4. [`PathMatch`];
    /// 5. [`PathPenalty`];
    /// 6. [`ThinChunk`];
    /// 7. [`SourceBoost`];
    /// 8. [`PageRankBoost`], when `pagerank` percentiles are given;
    /// 9. [`Threshold`], when `config.threshold` is set;
    /// 10. [`DiversityCap`], when the cap is not 0;
    /// 11. [`TopK`] at `config.offset + config.limit`.
    ///
    /// A layer named in `config.disable` is left out.
    pub fn from_config(
        config: &RankingConfig,
        pagerank: Option<Percentiles>,
        reranker: Option<Box<dyn Reranker>>,
    ) -> Result<Self, ConfigError> {
        config.check_counts()?;
        let mut layers: Vec<Box<dyn RankingLayer>> = Vec::new();
        // Built (and so checked) even when disabled: an ablation must not hide a bad value.
        let penalty = PathPenalty::new(config.penalties.clone(), config.include_tests)?;
        let thin = ThinChunk::new(config.thin_chunk)?;
        let boost = SourceBoost::new(config.source_boost)?;
        let evidence = FileEvidence::new(config.file_evidence, config.file_coverage)?;
        let definition = Definition::new(config.definition_boost)?;
        let path_match = PathMatch::new(config.path_match, config.language_match)?;
        let mode = if config.soft_cap {
            CapMode::Soft {
                decay: config.soft_cap_decay,
            }
        } else {
            CapMode::Hard
        };
        // The whole ranking up to the page's end: the cap's spill fills slots up to there.
        let depth = config.offset.saturating_add(config.limit);
        let cap = DiversityCap::new(config.max_per_file(), depth, mode)?;
        let threshold = config.threshold.map(Threshold::new).transpose()?;
        let pagerank = pagerank
            .map(|percentiles| PageRankBoost::new(config.pagerank_strength, percentiles))
            .transpose()?;

        if let Some(reranker) = reranker.filter(|_| config.enabled(LayerKind::Rerank)) {
            layers.push(Box::new(CrossEncoderRerank::new(reranker)));
        }
        // Definitions first: a file's evidence then raises its defining chunk, not a chunk
        // that mentions the name more often.
        if config.enabled(LayerKind::Definition) {
            layers.push(Box::new(definition));
        }
        if config.enabled(LayerKind::FileEvidence) {
            layers.push(Box::new(evidence));
        }
        if config.enabled(LayerKind::PathMatch) {
            layers.push(Box::new(path_match));
        }
        if config.enabled(LayerKind::PathPenalty) {
            layers.push(Box::new(penalty));
        }
        if config.enabled(LayerKind::ThinChunk) {
            layers.push(Box::new(thin));
        }
        if config.enabled(LayerKind::SourceBoost) {
            layers.push(Box::new(boost));
        }
        if let Some(pagerank) = pagerank.filter(|_| config.enabled(LayerKind::PageRank)) {
            layers.push(Box::new(pagerank));
        }
        if let Some(threshold) = threshold.filter(|_| config.enabled(LayerKind::Threshold)) {
            layers.push(Box::new(threshold));
        }
        if config.max_per_file() > 0 && config.enabled(LayerKind::DiversityCap) {
            layers.push(Box::new(cap));
        }
        if config.enabled(LayerKind::TopK) {
            layers.push(Box::new(TopK::new(depth)));
        }
        Ok(Self { layers })
    }

    /// The layers, in order.
    pub fn layers(&self) -> &[Box<dyn RankingLayer>] {
        &self.layers
    }

    /// Ranks one query's candidates (each with its retrieval score); see [`apply_chain`].
    pub fn rank(
        &self,
        query: &QueryTerms,
        candidates: Vec<(StoredChunk, f32)>,
    ) -> Result<Ranking, RankError> {
        apply_chain(&self.layers, query, candidates)
    }
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.layers.iter().map(|layer| layer.kind()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::tests::WordOverlap;

    fn kinds(pipeline: &Pipeline) -> Vec<LayerKind> {
        pipeline.layers().iter().map(|l| l.kind()).collect()
    }

    /// Every layer in chain order, less `left_out`.
    fn all_but(left_out: &[LayerKind]) -> Vec<LayerKind> {
        LayerKind::ALL
            .into_iter()
            .filter(|l| !left_out.contains(l))
            .collect()
    }

    #[test]
    fn the_default_chain_leaves_out_what_it_was_not_given() {
        let config = RankingConfig::default();
        let pipeline = Pipeline::from_config(&config, None, None).unwrap();
        assert_eq!(
            kinds(&pipeline),
            all_but(&[LayerKind::Rerank, LayerKind::PageRank])
        );
        let full = Pipeline::from_config(
            &config,
            Some(Box::new(|_| Some(0.5))),
            Some(Box::new(WordOverlap)),
        )
        .unwrap();
        assert_eq!(kinds(&full), LayerKind::ALL);
        assert_eq!(format!("{full:?}"), format!("{:?}", LayerKind::ALL));
    }

    #[test]
    fn every_layer_can_be_disabled() {
        for layer in LayerKind::ALL {
            let mut config = RankingConfig::default();
            config.disable.insert(layer);
            let pipeline = Pipeline::from_config(
                &config,
                Some(Box::new(|_| Some(0.5))),
                Some(Box::new(WordOverlap)),
            )
            .unwrap();
            let expected: Vec<_> = LayerKind::ALL.into_iter().filter(|&l| l != layer).collect();
            assert_eq!(kinds(&pipeline), expected);
        }
        let no_cap = RankingConfig {
            max_per_file: Some(0),
            threshold: None,
            ..RankingConfig::default()
        };
        let pipeline = Pipeline::from_config(&no_cap, None, None).unwrap();
        use LayerKind::*;
        assert_eq!(
            kinds(&pipeline),
            all_but(&[Rerank, PageRank, Threshold, DiversityCap])
        );
    }

    #[test]
    fn the_cap_and_the_fetch_follow_the_limit() {
        let config = |limit, max_per_file| RankingConfig {
            limit,
            max_per_file,
            ..RankingConfig::default()
        };
        assert_eq!(config(10, None).max_per_file(), 1);
        assert_eq!(config(10, None).fetch_count(), 100);
        assert_eq!(config(200, None).fetch_count(), 200);
        assert_eq!(config(30, Some(5)).fetch_count(), 150);
        let shallow = |limit, max_per_file| RankingConfig {
            pool: 0,
            ..config(limit, max_per_file)
        };
        assert_eq!(shallow(10, None).fetch_count(), 10);
        assert_eq!(shallow(10, Some(5)).fetch_count(), 50);
        // Disabling the cap keeps the fetch, so an ablation ranks the same candidates.
        assert_eq!(shallow(10, Some(0)).fetch_count(), 10);
    }

    #[test]
    fn bad_values_are_refused_even_in_disabled_layers() {
        let mut config = RankingConfig {
            source_boost: 0.5,
            ..RankingConfig::default()
        };
        config.disable.insert(LayerKind::SourceBoost);
        let error = Pipeline::from_config(&config, None, None).unwrap_err();
        assert!(error.to_string().contains("source_boost"), "{error}");
        let zero = RankingConfig {
            limit: 0,
            ..RankingConfig::default()
        };
        assert_eq!(
            Pipeline::from_config(&zero, None, None).unwrap_err(),
            ConfigError::CountOutOfRange {
                setting: "limit",
                value: 0,
                min: 1,
                max: MAX_LIMIT
            }
        );
        for (huge, setting) in [
            (
                RankingConfig {
                    limit: 1_000_000_000,
                    ..RankingConfig::default()
                },
                "limit",
            ),
            (
                RankingConfig {
                    pool: 1 << 40,
                    ..RankingConfig::default()
                },
                "pool",
            ),
            (
                RankingConfig {
                    max_per_file: Some(usize::MAX),
                    ..RankingConfig::default()
                },
                "max_per_file",
            ),
        ] {
            let error = huge.check().unwrap_err().to_string();
            assert!(error.contains(setting) && error.contains(" to "), "{error}");
        }
        let widest = RankingConfig {
            limit: MAX_LIMIT,
            max_per_file: Some(MAX_PER_FILE),
            pool: 1,
            ..RankingConfig::default()
        };
        widest.check().unwrap();
        assert_eq!(
            widest.fetch_count(),
            MAX_POOL,
            "the fetch is bounded by the deepest pool"
        );
    }

    #[test]
    fn a_config_file_names_only_what_it_changes() {
        let config: RankingConfig = serde_json::from_str(
            r#"{"limit": 20, "include_tests": "never", "penalties": {"test": 0.9},
                "disable": ["pagerank", "diversity_cap"]}"#,
        )
        .unwrap();
        assert_eq!(config.limit, 20);
        assert_eq!(config.include_tests, IncludeTests::Never);
        assert_eq!(config.penalties.test, 0.9);
        assert_eq!(config.penalties.vendored, 0.5);
        assert_eq!(
            config.disable,
            [LayerKind::PageRank, LayerKind::DiversityCap].into()
        );
        assert!(serde_json::from_str::<RankingConfig>(r#"{"limt": 20}"#).is_err());
        let round_trip: RankingConfig =
            serde_json::from_str(&serde_json::to_string(&config).unwrap()).unwrap();
        assert_eq!(round_trip, config);
        assert_eq!("top_k".parse::<LayerKind>(), Ok(LayerKind::TopK));
        let unknown = "page_rank".parse::<LayerKind>().unwrap_err();
        assert!(unknown.to_string().contains("pagerank"), "{unknown}");
    }
}
