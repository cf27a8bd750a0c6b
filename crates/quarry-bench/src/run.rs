//! Running arms over corpora: fetch, index (once per index variant, cached), query, score.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use quarry_chunk::ChunkId;
use quarry_embed::ModelDir;
use quarry_engine::{Engine, EngineOptions, SearchMode, SearchOptions, VectorCacheOptions};
use quarry_store::StoredChunk;
use serde::{Deserialize, Serialize};

use crate::BenchError;
use crate::arms::{Arm, Ranker};
use crate::cases::{Case, CaseFile, Category, Shape, Split};
use crate::corpus::Corpus;
use crate::docs::{self, DocCase};
use crate::files::{Index, list_files};
use crate::lost::{self, LostTarget};
use crate::metrics::{self, DEPTH, Location, Scores};
use crate::peers::{self, PeerAnswers, SemblePeer};
use crate::stats::Rng;
use crate::worktree::{build_seconds, copy_tree, first_phase_seconds, open_indexed, sync_worktree};

/// What a run measures, and with what.
#[derive(Debug)]
pub struct RunOptions<'a> {
    /// The folder holding `corpora.yaml` (local corpora and manifests are relative to it).
    pub suite_dir: PathBuf,
    /// The corpora to run, in report order.
    pub corpora: Vec<Corpus>,
    /// Hand-written cases; each file names its corpus.
    pub cases: Vec<CaseFile>,
    /// The arms, the first being the one the others are compared with.
    pub arms: Vec<Arm>,
    /// Fetched corpora and their indexes live here.
    pub cache: PathBuf,
    /// The embedding model.
    pub model: &'a ModelDir,
    /// How engines run (`embed_header` is set per arm).
    pub engine: EngineOptions,
    /// The vector cache index builds take vectors from and fill (the machine's, for `xtask
    /// bench relevance`); `None`: every chunk embedded by the model.
    pub vector_cache: Option<VectorCacheOptions>,
    /// Generated doc-comment cases per corpus (0: none).
    pub doc_cases: usize,
    /// Which hand-written cases run (generated doc cases are never held out).
    pub split: Split,
    /// How to run semble, for a [`Ranker::Semble`] arm.
    pub semble: Option<SemblePeer>,
    /// The `rg` a [`Ranker::Ripgrep`] arm runs.
    pub ripgrep: PathBuf,
    /// The code's version, for the report (a git commit).
    pub commit: String,
}

/// Everything a run measured: the input of every report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// What was run, with what.
    pub config: RunConfig,
    /// Per corpus: size and index time.
    pub corpora: Vec<CorpusReport>,
    /// Per arm: every case's scores and every query's latency.
    pub arms: Vec<ArmResult>,
    /// Cases that could not be scored, targets the index lacks.
    pub warnings: Vec<String>,
}

/// The configuration block of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The code's git commit.
    pub commit: String,
    /// The embedding model's fingerprint.
    pub model: String,
    /// The backend that ran it.
    pub backend: String,
    /// The chunker's settings, as the index records them.
    pub chunker: String,
    /// Generated doc-comment cases per corpus.
    pub doc_cases_per_corpus: usize,
    /// The arms, with every setting.
    pub arms: Vec<Arm>,
}

/// One corpus in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorpusReport {
    /// Its name.
    pub name: String,
    /// Its main language.
    pub language: String,
    /// Where it came from.
    pub source: String,
    /// Files indexed (with chunks).
    pub files: usize,
    /// Files in the corpus (its manifest's), indexed or not: the repository's size.
    #[serde(default)]
    pub repository_files: usize,
    /// Chunks indexed.
    pub chunks: usize,
    /// Seconds the default index took when it was last built or brought up to date.
    pub index_seconds: Option<f64>,
    /// Seconds the index's first phase (files and words, no model run) took on a fresh copy,
    /// this run: when a lexical search could first answer.
    #[serde(default)]
    pub searchable_seconds: Option<f64>,
    /// Seconds each peer with an index (semble) took to index the corpus cold, this run.
    #[serde(default)]
    pub peer_index_seconds: BTreeMap<String, f64>,
    /// Hand-written cases.
    pub cases: usize,
    /// Generated doc-comment cases.
    pub doc_cases: usize,
    /// The group the suite shows apart, if any ([`crate::corpus::Corpus::group`]).
    #[serde(default)]
    pub group: Option<String>,
}

impl CorpusReport {
    /// The corpus's family for the report: `large` (a repository of 2,000 files or more,
    /// counted as its manifest counts them), else `C/C++` (a C or C++ corpus), else `rest`.
    pub fn family(&self) -> &'static str {
        match (
            self.repository_files >= LARGE_CORPUS_FILES,
            self.language.as_str(),
        ) {
            (true, _) => "large",
            (false, "c" | "cpp") => "C/C++",
            (false, _) => "rest",
        }
    }
}

/// Files from which a corpus counts as a large repository.
pub const LARGE_CORPUS_FILES: usize = 2000;

/// A report's backend when no arm ran the model: the index was built in its first phase
/// alone, so a run of the largest corpora costs minutes, not hours.
pub const MODEL_FREE: &str = "none (model-free: every quarry arm lexical, no chunk embedded)";

/// One arm's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmResult {
    /// The arm's name.
    pub name: String,
    /// One per scored case.
    pub cases: Vec<CaseResult>,
    /// Wall time of each query, in milliseconds (quarry's arms only).
    pub latencies_ms: Vec<f64>,
}

/// One case under one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// The corpus.
    pub corpus: String,
    /// The case id.
    pub id: String,
    /// Its category.
    pub category: Category,
    /// The query.
    pub query: String,
    /// Whether the case is held out from tuning ([`Case::held_out`]).
    #[serde(default)]
    pub held_out: bool,
    /// The shape of question it tests, where it was written for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
    /// Its scores.
    pub scores: Scores,
    /// The top results, `path:start-end`.
    pub top: Vec<String>,
    /// Where the search's legs placed each relevant target, for a case the run's first arm
    /// lost ([`crate::lost`]); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<LostTarget>,
}

impl CaseResult {
    /// `corpus/id`: unique in a run.
    pub fn key(&self) -> String {
        format!("{}/{}", self.corpus, self.id)
    }
}

/// Where a run is: shown as progress.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// A corpus is being fetched (the first time) and checked.
    Fetching(String),
    /// An index is being brought up to date: chunks embedded of total.
    Indexing {
        /// Corpus and index variant.
        index: String,
        /// Embedded so far.
        done: usize,
        /// To embed.
        total: usize,
    },
    /// Cases are being run on an index.
    Querying {
        /// Corpus and index variant.
        index: String,
        /// Cases to run.
        cases: usize,
    },
}

/// An index of one corpus, as one set of arms searches it.
struct Variant {
    /// `default`, `no-header`, `default-no-doc`...
    name: String,
    embed_header: bool,
    /// The generated doc cases run here, with their comments blanked.
    doc: bool,
}

/// Runs every arm over every case of every corpus.
pub fn run(
    options: &RunOptions<'_>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Run, BenchError> {
    let mut results: Vec<ArmResult> = options
        .arms
        .iter()
        .map(|arm| ArmResult {
            name: arm.name.clone(),
            cases: Vec::new(),
            latencies_ms: Vec::new(),
        })
        .collect();
    let mut corpora = Vec::new();
    let mut warnings = Vec::new();
    let mut config = None;
    let model_free = options.arms.iter().all(|arm| !arm.needs_model());
    for corpus in &options.corpora {
        progress(Progress::Fetching(corpus.name.clone()));
        let source = corpus.fetch(&options.suite_dir, &options.cache.join("corpora"))?;
        let cases: Vec<Case> = options
            .cases
            .iter()
            .filter(|file| file.corpus == corpus.name)
            .flat_map(|file| file.cases.iter().cloned())
            .filter(|case| options.split.admits(case.held_out(&corpus.name)))
            .collect();
        let mut report = CorpusReport {
            name: corpus.name.clone(),
            language: corpus.language.clone(),
            source: corpus.describe(),
            files: 0,
            repository_files: list_files(&source, Index::Skip)?.len(),
            chunks: 0,
            index_seconds: None,
            searchable_seconds: None,
            peer_index_seconds: BTreeMap::new(),
            cases: cases.len(),
            doc_cases: 0,
            group: corpus.group.clone(),
        };
        let mut doc_cases: Vec<DocCase> = Vec::new();
        for variant in variants(&options.arms, options.doc_cases > 0) {
            let work = options
                .cache
                .join("work")
                .join(&variant.name)
                .join(corpus.key());
            let label = format!("{} ({})", corpus.name, variant.name);
            if variant.doc {
                if doc_cases.is_empty() {
                    continue;
                }
                let base = if variant.embed_header {
                    "default"
                } else {
                    "no-header"
                };
                let from = options.cache.join("work").join(base).join(corpus.key());
                copy_tree(&from, &work)?;
                docs::blank_comments(&work, &doc_cases)?;
            } else {
                sync_worktree(&source, &work)?;
            }
            let engine_options = EngineOptions {
                embed_header: variant.embed_header,
                ..options.engine
            };
            let engine = open_indexed(
                options.model,
                engine_options,
                options.vector_cache.as_ref(),
                &work,
                model_free,
                &mut |done, total| {
                    progress(Progress::Indexing {
                        index: label.clone(),
                        done,
                        total,
                    })
                },
            )?;
            let chunks = all_chunks(&engine)?;
            if variant.name == "default" {
                report.index_seconds = (!model_free).then(|| build_seconds(&work)).flatten();
                report.searchable_seconds = Some(first_phase_seconds(
                    &options.cache,
                    options.model,
                    options.engine,
                    &source,
                )?);
                report.files = chunks.iter().map(|c| &c.path).collect::<HashSet<_>>().len();
                report.chunks = chunks.len();
                doc_cases = docs::doc_cases(&chunks, options.doc_cases);
                report.doc_cases = doc_cases.len();
                let backend = match model_free {
                    true => MODEL_FREE.to_owned(),
                    false => engine
                        .model()
                        .expect("a bench engine is opened with its model")
                        .backend()
                        .map_err(quarry_engine::EngineError::from)?
                        .to_string(),
                };
                config.get_or_insert_with(|| RunConfig {
                    commit: options.commit.clone(),
                    model: engine.store().settings().model.clone(),
                    backend,
                    chunker: engine.store().settings().chunker.clone(),
                    doc_cases_per_corpus: options.doc_cases,
                    arms: options.arms.clone(),
                });
            }
            let run_cases: Vec<&Case> = match variant.doc {
                true => doc_cases.iter().map(|d| &d.case).collect(),
                false => cases.iter().collect(),
            };
            progress(Progress::Querying {
                index: label,
                cases: run_cases.len(),
            });
            let index = IndexedChunks::new(chunks);
            // The first search after opening loads the vector index: not a query's cost.
            let warm_up = SearchOptions {
                mode: match model_free {
                    true => SearchMode::Lexical,
                    false => SearchMode::Hybrid,
                },
                ..SearchOptions::default()
            };
            let _ = engine.search("warm up", &warm_up);
            // Peers and controls answer on the default index's worktree (and its doc twin).
            let default_variant = variant.embed_header;
            let semble = match options.arms.iter().find(|a| a.ranker == Ranker::Semble) {
                Some(arm) if default_variant => {
                    let peer = options
                        .semble
                        .as_ref()
                        .ok_or_else(|| BenchError::MissingPeer {
                            arm: arm.name.clone(),
                            peer: "semble (a Python with semble installed)".into(),
                        })?;
                    let answers = peer.answer(&corpus.name, &work, &run_cases)?;
                    if !variant.doc
                        && let Some(seconds) = answers.index_seconds
                    {
                        report.peer_index_seconds.insert(arm.name.clone(), seconds);
                    }
                    answers
                }
                _ => PeerAnswers::default(),
            };
            let context = Context {
                engine: &engine,
                index: &index,
                work: &work,
                ripgrep: &options.ripgrep,
                semble: &semble,
            };
            for (arm, result) in options.arms.iter().zip(&mut results) {
                if arm.embed_header().unwrap_or(true) != variant.embed_header {
                    continue;
                }
                for case in &run_cases {
                    let (hits, latency) = answer(&context, arm, &corpus.name, case)?;
                    let indexed = |path: &str| index.by_path.contains_key(path);
                    let Some(scores) =
                        metrics::score(&hits, &case.relevant, &case.secondary, indexed)
                    else {
                        warnings.push(format!(
                            "{}/{}: no relevant file is indexed ({}); not scored",
                            corpus.name,
                            case.id,
                            list(&case.relevant)
                        ));
                        continue;
                    };
                    let missing: Vec<_> =
                        case.relevant.iter().filter(|t| !indexed(&t.path)).collect();
                    if !missing.is_empty() && arm.name == options.arms[0].name {
                        warnings.push(format!(
                            "{}/{}: not indexed, left out of its ideal: {}",
                            corpus.name,
                            case.id,
                            list(missing)
                        ));
                    }
                    let lost = match arm.name == options.arms[0].name {
                        true => lost::diagnose(&engine, arm, case, &hits, indexed)?,
                        false => Vec::new(),
                    };
                    result.latencies_ms.extend(latency);
                    result.cases.push(CaseResult {
                        corpus: corpus.name.clone(),
                        id: case.id.clone(),
                        category: case.category,
                        query: case.query.clone(),
                        held_out: case.held_out(&corpus.name),
                        shape: case.shape,
                        scores,
                        top: hits
                            .iter()
                            .map(|h| format!("{}:{}-{}", h.path, h.start_line, h.end_line))
                            .collect(),
                        lost,
                    });
                }
            }
        }
        corpora.push(report);
    }
    let config = config.ok_or(BenchError::NothingToRun)?;
    Ok(Run {
        config,
        corpora,
        arms: results,
        warnings,
    })
}

/// The indexes the arms need: the default one (controls, doc cases), one without chunk
/// headers if an arm asks, and each one's doc-blanked twin.
fn variants(arms: &[Arm], doc: bool) -> Vec<Variant> {
    let headers: std::collections::BTreeSet<bool> = arms
        .iter()
        .map(|a| a.embed_header().unwrap_or(true))
        .chain([true])
        .collect();
    let mut variants = Vec::new();
    // `true` first: the default index is where corpus sizes and doc cases come from.
    for embed_header in headers.into_iter().rev() {
        let name = if embed_header { "default" } else { "no-header" };
        variants.push(Variant {
            name: name.into(),
            embed_header,
            doc: false,
        });
        if doc {
            variants.push(Variant {
                name: format!("{name}-no-doc"),
                embed_header,
                doc: true,
            });
        }
    }
    variants
}

fn list<'a>(targets: impl IntoIterator<Item = &'a crate::cases::Target>) -> String {
    targets
        .into_iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every chunk of the index, in path and file order.
fn all_chunks(engine: &Engine) -> Result<Vec<StoredChunk>, BenchError> {
    let store = engine.store();
    let mut files = store.files()?;
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let snapshot = store.snapshot()?;
    let mut chunks = Vec::new();
    for file in files {
        for id in file.chunk_ids {
            chunks.extend(snapshot.chunk(ChunkId(id))?);
        }
    }
    Ok(chunks)
}

/// The chunks' locations, by file, for the controls.
struct IndexedChunks {
    all: Vec<Location>,
    by_path: HashMap<String, Vec<usize>>,
}

impl IndexedChunks {
    fn new(chunks: Vec<StoredChunk>) -> Self {
        let all: Vec<Location> = chunks
            .into_iter()
            .map(|c| Location {
                path: c.path,
                start_line: c.start_line,
                end_line: c.end_line,
            })
            .collect();
        let mut by_path: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, hit) in all.iter().enumerate() {
            by_path.entry(hit.path.clone()).or_default().push(i);
        }
        IndexedChunks { all, by_path }
    }
}

/// What the arms answer from, for one index variant of one corpus.
struct Context<'a> {
    engine: &'a Engine,
    index: &'a IndexedChunks,
    /// The worktree the peers search.
    work: &'a Path,
    /// The `rg` the ripgrep arm runs.
    ripgrep: &'a Path,
    /// semble's answers, when a semble arm runs.
    semble: &'a PeerAnswers,
}

/// An arm's top results for a case, and the query's wall time for quarry's and the peers'
/// arms.
fn answer(
    context: &Context<'_>,
    arm: &Arm,
    corpus: &str,
    case: &Case,
) -> Result<(Vec<Location>, Option<f64>), BenchError> {
    let (engine, index) = (context.engine, context.index);
    match &arm.ranker {
        Ranker::Engine { .. } => {
            let options = arm
                .search_options()
                .expect("quarry's arms search with options");
            let started = Instant::now();
            let response = engine.search(&case.query, &options)?;
            let millis = started.elapsed().as_secs_f64() * 1000.0;
            let hits = response
                .results
                .into_iter()
                .map(|r| Location {
                    path: r.chunk.path,
                    start_line: r.chunk.start_line,
                    end_line: r.chunk.end_line,
                })
                .collect();
            Ok((hits, Some(millis)))
        }
        Ranker::Semble => {
            let (hits, millis) =
                context
                    .semble
                    .answers
                    .get(&case.id)
                    .cloned()
                    .ok_or_else(|| BenchError::Peer {
                        peer: "semble".into(),
                        corpus: corpus.into(),
                        message: format!("no answer for {}", case.id),
                    })?;
            Ok((hits, Some(millis)))
        }
        Ranker::Ripgrep => {
            let (hits, millis) = peers::ripgrep(context.ripgrep, context.work, &case.query)?;
            Ok((hits, Some(millis)))
        }
        Ranker::Random => {
            let mut rng = Rng::from_key(&format!("{corpus}/{}", case.id));
            let mut picked = Vec::new();
            while picked.len() < DEPTH.min(index.all.len()) {
                let i = rng.below(index.all.len());
                if !picked.contains(&i) {
                    picked.push(i);
                }
            }
            Ok((
                picked.into_iter().map(|i| index.all[i].clone()).collect(),
                None,
            ))
        }
        Ranker::Oracle => {
            let mut hits: Vec<Location> = Vec::new();
            for target in case.relevant.iter().chain(&case.secondary) {
                let first = index.by_path.get(&target.path).and_then(|chunks| {
                    chunks
                        .iter()
                        .map(|&i| &index.all[i])
                        .find(|h| target.hit_by(&h.path, h.start_line, h.end_line))
                });
                if let Some(hit) = first
                    && !hits.contains(hit)
                {
                    hits.push(hit.clone());
                }
            }
            Ok((hits, None))
        }
    }
}

/// Mean scores of `cases` grouped by `key`, with the count per group.
pub fn mean_by(
    cases: &[CaseResult],
    key: impl Fn(&CaseResult) -> Option<String>,
) -> BTreeMap<String, (usize, Scores)> {
    let mut groups: BTreeMap<String, Vec<&Scores>> = BTreeMap::new();
    for case in cases {
        if let Some(group) = key(case) {
            groups.entry(group).or_default().push(&case.scores);
        }
    }
    groups
        .into_iter()
        .filter_map(|(k, scores)| Some((k, (scores.len(), Scores::mean(scores)?))))
        .collect()
}
