//! `cargo xtask bench relevance`: the relevance benchmark's command line (the work is in
//! quarry-bench).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use quarry_bench::arms::{ABLATIONS, Arm};
use quarry_bench::cases::{CaseFile, Split};
use quarry_bench::corpus::{CorporaFile, Suite};
use quarry_bench::peers::SemblePeer;
use quarry_bench::report::Report;
use quarry_bench::{Progress, RunOptions};
use quarry_embed::{DEFAULT_MODEL, EmbedderOptions};
use quarry_engine::{EngineOptions, VectorCacheOptions};

use crate::bench::common::{bench_cache, git_commit};
use crate::model::provisioner;

/// What to compare.
enum Plan {
    /// Hybrid and the controls.
    Controls,
    /// Hybrid with no controls.
    Hybrid,
    /// One setting, two values.
    Ab { key: String, values: Vec<String> },
    /// Hybrid, then hybrid without each part.
    Ablate(Vec<String>),
    /// Hybrid, then hybrid with each set of settings (`--arm K=V+K=V`).
    Variants(Vec<String>),
}

/// `cargo xtask bench relevance`'s options. Reports go to
/// bench-suite/reports/relevance[-smoke|-tuning|-held-out][-ab-K|-ablate|-arms][-SET]-<commit>.*,
/// where `-SET` names each `--set` (`-lexical` for `mode=lexical`, `-K-V` for the rest).
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("plan").args(["ab", "ablate", "arm"])))]
pub struct RelevanceArgs {
    /// Only this corpus (repeatable; default: every one of the suite).
    #[arg(long = "corpus", value_name = "C")]
    corpora: Vec<String>,
    /// Cases from this file instead of bench-suite/cases/ (repeatable).
    #[arg(long = "cases", value_name = "FILE")]
    case_files: Vec<PathBuf>,
    /// Which suite: the benchmark proper, or the fixture-sized one CI runs.
    #[arg(long, value_enum, default_value_t = Suite::Full)]
    suite: Suite,
    /// Which cases: every one, those tuning may look at, or the held-out ones alone.
    #[arg(long, value_enum, default_value_t = Split::All)]
    split: Split,
    /// Two values or more of one setting, hybrid under each: `diversity-cap=0,3`, `mode`,
    /// `embed-header`, `legs.SHAPE`, `lexical.FIELD`, or any [ranking] key.
    #[arg(long, value_name = "KEY=A,B", value_parser = setting_values)]
    ab: Option<(String, Vec<String>)>,
    /// Hybrid without this part, against hybrid (repeatable; `all` for every part).
    #[arg(long, value_name = "PART")]
    ablate: Vec<String>,
    /// Hybrid with these settings, against hybrid (repeatable; `K=V+K=V`).
    #[arg(long, value_name = "K=V+..")]
    arm: Vec<String>,
    /// Hybrid alone, without the controls (as --ab, --ablate and --arm run; --ablate keeps
    /// the peers).
    #[arg(long)]
    no_controls: bool,
    /// Without the semble and ripgrep peers.
    #[arg(long)]
    no_peers: bool,
    /// A setting for every quarry arm of the run (repeatable): a tuned default tried.
    #[arg(long, value_name = "KEY=V", value_parser = setting)]
    set: Vec<(String, String)>,
    /// Fail on a drop beyond its 95% interval against this report's arm of the same name.
    #[arg(long, value_name = "REPORT.json")]
    baseline: Option<PathBuf>,
    /// Generated doc-comment cases per corpus.
    #[arg(long, value_name = "N", default_value_t = quarry_bench::docs::PER_CORPUS)]
    doc_cases: usize,
    /// Where reports go (default: bench-suite/reports).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Read documents up to this many tokens instead of the model's maximum (chunks are cut
    /// to fit it too): the speed-against-relevance trade of a shorter window.
    #[arg(long, value_name = "N")]
    max_tokens: Option<usize>,
}

/// `KEY=VALUE`.
fn setting(spec: &str) -> Result<(String, String), String> {
    spec.split_once('=')
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .ok_or_else(|| format!("KEY=VALUE, not {spec:?}"))
}

/// `KEY=A,B[,C...]`.
fn setting_values(spec: &str) -> Result<(String, Vec<String>), String> {
    let (key, values) = setting(spec)?;
    let values: Vec<String> = values.split(',').map(str::to_owned).collect();
    match values.len() {
        0 | 1 => Err(format!("{key}= needs two values or more, comma-separated")),
        _ => Ok((key, values)),
    }
}

impl RelevanceArgs {
    /// What the options ask to compare (clap lets at most one kind through).
    fn plan(&self) -> Plan {
        if let Some((key, values)) = &self.ab {
            Plan::Ab {
                key: key.clone(),
                values: values.clone(),
            }
        } else if !self.ablate.is_empty() {
            let parts = self.ablate.iter().flat_map(|part| match part.as_str() {
                "all" => ABLATIONS.iter().map(|p| p.to_string()).collect(),
                one => vec![one.to_owned()],
            });
            Plan::Ablate(parts.collect())
        } else if !self.arm.is_empty() {
            Plan::Variants(self.arm.clone())
        } else if self.no_controls {
            Plan::Hybrid
        } else {
            Plan::Controls
        }
    }
}

pub fn run(args: RelevanceArgs) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?;
    let suite_dir = root.join("bench-suite");
    let plan = args.plan();
    let RelevanceArgs {
        corpora: corpus_names,
        case_files: case_paths,
        suite,
        split,
        no_peers,
        set: settings,
        baseline,
        doc_cases,
        out,
        max_tokens,
        ..
    } = args;
    let peers = !no_peers;
    let out = out.unwrap_or_else(|| suite_dir.join("reports"));

    let corpora_file = CorporaFile::load(&suite_dir.join("corpora.yaml"))?;
    let cases: Vec<CaseFile> = if case_paths.is_empty() {
        let names: Vec<&str> = match corpus_names.is_empty() {
            true => corpora_file
                .corpora
                .iter()
                .filter(|c| c.suite == suite)
                .map(|c| c.name.as_str())
                .collect(),
            false => corpus_names.iter().map(String::as_str).collect(),
        };
        names
            .iter()
            .map(|name| CaseFile::load(&suite_dir.join("cases").join(format!("{name}.yaml"))))
            .collect::<Result<_, _>>()?
    } else {
        case_paths
            .iter()
            .map(|p| CaseFile::load(p))
            .collect::<Result<_, _>>()?
    };
    let mut corpora = Vec::new();
    for file in &cases {
        let corpus = corpora_file.get(&file.corpus).with_context(|| {
            format!(
                "the cases name corpus {:?}, which corpora.yaml lacks",
                file.corpus
            )
        })?;
        if !corpora.contains(corpus)
            && (corpus_names.is_empty() || corpus_names.contains(&corpus.name))
        {
            corpora.push(corpus.clone());
        }
    }

    // `--set` changes every quarry arm of the run, under its own name.
    let with_settings = |arm: Arm| -> Result<Arm> {
        if arm.embed_header().is_none() {
            return Ok(arm); // peers and controls have no settings
        }
        settings
            .iter()
            .try_fold(arm, |arm, (key, value)| Ok(arm.set(key, value)?))
    };
    let hybrid = with_settings(Arm::hybrid())?;
    let (arms, title, slug) = match &plan {
        Plan::Controls if peers && suite == Suite::Full => {
            let mut arms: Vec<Arm> = Arm::with_controls()
                .into_iter()
                .map(with_settings)
                .collect::<Result<_>>()?;
            arms.extend(Arm::peers());
            (arms, "hybrid, peers and controls".to_owned(), String::new())
        }
        Plan::Controls => (
            Arm::with_controls()
                .into_iter()
                .map(with_settings)
                .collect::<Result<_>>()?,
            "hybrid and controls".to_owned(),
            String::new(),
        ),
        Plan::Hybrid => (vec![hybrid], "hybrid".to_owned(), "-hybrid".to_owned()),
        Plan::Ab { key, values } => {
            let arms = values
                .iter()
                .map(|v| hybrid.with_setting(key, v))
                .collect::<Result<_, _>>()?;
            (
                arms,
                format!("A/B {key}={}", values.join(",")),
                format!("-ab-{key}"),
            )
        }
        Plan::Ablate(parts) => {
            let mut arms = vec![hybrid.clone()];
            for part in parts {
                arms.push(hybrid.without(part)?);
            }
            // Each part's worth beside the peers', measured in the same run.
            if peers && suite == Suite::Full {
                arms.extend(Arm::peers());
            }
            let slug = match parts.as_slice() {
                [one] => format!("-ablate-{one}"),
                _ => "-ablate".to_owned(),
            };
            (arms, format!("ablations of {}", parts.join(", ")), slug)
        }
        Plan::Variants(specs) => {
            let mut arms = vec![hybrid.clone()];
            for spec in specs {
                let mut arm = hybrid.clone();
                for setting in spec.split('+') {
                    let (key, value) = setting
                        .split_once('=')
                        .with_context(|| format!("--arm K=V+K=V, not {spec:?}"))?;
                    arm = arm.set(key, value)?;
                }
                arm.name = spec.clone();
                arms.push(arm);
            }
            (
                arms,
                format!("hybrid against {}", specs.join(", ")),
                "-arms".to_owned(),
            )
        }
    };
    // `--set mode=lexical` makes the controls lexical like hybrid: one of each is enough.
    let mut arms: Vec<Arm> = arms;
    if matches!(plan, Plan::Controls) {
        let mut kept: Vec<quarry_bench::arms::Ranker> = Vec::new();
        arms.retain(|arm| match kept.contains(&arm.ranker) {
            true => false,
            false => {
                kept.push(arm.ranker.clone());
                true
            }
        });
    }
    let suite_slug = match (suite, split) {
        (Suite::Smoke, _) => "-smoke",
        (_, Split::Tuning) => "-tuning",
        (_, Split::HeldOut) => "-held-out",
        (_, Split::All) => "",
    };

    let model = provisioner().resolve(&DEFAULT_MODEL)?;
    let cache = bench_cache()?;
    let commit = git_commit(root);
    let semble = arms
        .iter()
        .any(|a| a.ranker == quarry_bench::arms::Ranker::Semble)
        .then(|| semble_peer(&cache, &suite_dir))
        .transpose()?;
    let options = RunOptions {
        suite_dir: suite_dir.clone(),
        corpora,
        cases,
        arms,
        cache,
        model: &model,
        engine: EngineOptions {
            embedder: EmbedderOptions {
                max_tokens,
                ..EmbedderOptions::from_env()?
            },
            ..EngineOptions::default()
        },
        // The machine's: a chunk text an earlier run embedded (another commit's index, a
        // variant's) is not embedded again.
        vector_cache: VectorCacheOptions::for_user(quarry_store::DEFAULT_VECTOR_CACHE_BYTES),
        doc_cases,
        split,
        semble,
        // The ripgrep arm's floor is the user's own rg.
        ripgrep: "rg".into(),
        commit: commit.clone(),
    };
    let compare = matches!(plan, Plan::Ab { .. } | Plan::Ablate(_) | Plan::Variants(_));
    let run = quarry_bench::run(&options, &mut show_progress)?;
    eprintln!();
    let report = Report::new(&title, run, compare);
    let regressions = match &baseline {
        Some(path) => report.against(&Report::load(path)?),
        None => Vec::new(),
    };
    // The settings name the run too, so that a lexical run does not overwrite the hybrid one.
    let settings_slug: String = settings
        .iter()
        .map(|(key, value)| match key.as_str() {
            "mode" => format!("-{value}"),
            _ => format!("-{key}-{value}"),
        })
        .collect();
    let corpora_slug = corpora_slug(&corpus_names);
    let stem = format!("relevance{suite_slug}{slug}{settings_slug}{corpora_slug}-{commit}");
    report.write(&out, &stem, &regressions)?;

    print!("{}", report.table());
    for comparison in report.comparisons.iter().chain(&regressions) {
        let d = &comparison.deltas["ndcg10"];
        println!(
            "{} vs {}: NDCG@10 {:+.4} [{:+.4}, {:+.4}], {} cases changed",
            comparison.b,
            comparison.a,
            d.mean,
            d.low,
            d.high,
            comparison.changed.len()
        );
    }
    for warning in &report.run.warnings {
        eprintln!("warning: {warning}");
    }
    println!("wrote {}", out.join(format!("{stem}.md")).display());
    let drops: Vec<String> = regressions
        .iter()
        .flat_map(|c| c.drops().into_iter().map(move |m| format!("{} {m}", c.b)))
        .collect();
    ensure!(
        drops.is_empty(),
        "regression against {}: {} dropped beyond its 95% interval",
        baseline.as_deref().unwrap_or(Path::new("?")).display(),
        drops.join(", ")
    );
    Ok(())
}

/// The pinned peer: semble from PyPI, with the Python packages it needs.
const SEMBLE_PACKAGES: [&str; 1] = ["semble==0.7.0"];

/// semble in a virtual environment of the benchmark's own (made once in the cache, remade
/// when the pin changes), with its driver script and the stand-in model's directory.
fn semble_peer(cache: &Path, suite_dir: &Path) -> Result<SemblePeer> {
    let venv = cache.join("semble-venv");
    let python = venv.join("bin/python");
    let pins = venv.join("quarry-pins.txt");
    let wanted = SEMBLE_PACKAGES.join("\n");
    if std::fs::read_to_string(&pins).ok().as_deref() != Some(wanted.as_str()) {
        eprintln!(
            "installing {SEMBLE_PACKAGES:?} into {} (once)",
            venv.display()
        );
        let status = std::process::Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(&venv)
            .status()?;
        ensure!(
            status.success(),
            "python3 -m venv {} failed",
            venv.display()
        );
        let status = std::process::Command::new(&python)
            .args(["-m", "pip", "install", "--quiet"])
            .args(SEMBLE_PACKAGES)
            .status()?;
        ensure!(status.success(), "pip install {SEMBLE_PACKAGES:?} failed");
        std::fs::write(&pins, wanted)?;
    }
    Ok(SemblePeer {
        python,
        script: suite_dir.join("peer_semble.py"),
        model_dir: cache.join("semble-stand-in-model"),
    })
}

fn show_progress(progress: Progress) {
    match progress {
        Progress::Fetching(corpus) => eprintln!("corpus {corpus}"),
        Progress::Indexing { index, done, total } => {
            eprint!("\r  indexing {index}: {done}/{total} chunks");
            let _ = std::io::stderr().flush();
        }
        Progress::Querying { index, cases } => eprintln!("\n  querying {index}: {cases} cases"),
    }
}

/// What names a run of the corpora `--corpus` chose (none: the whole suite), so that two runs
/// of other corpora at one commit do not overwrite each other's report: up to four by name,
/// more by their count and a hash of their names.
fn corpora_slug(names: &[String]) -> String {
    let mut names = names.to_vec();
    names.sort();
    names.dedup();
    match names.len() {
        0..=4 => names.iter().map(|name| format!("-{name}")).collect(),
        count => {
            let hash = xxhash_rust::xxh3::xxh3_64(names.join(",").as_bytes());
            format!("-{count}-corpora-{:08x}", hash as u32)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::corpora_slug;

    #[test]
    fn a_run_of_some_corpora_is_named_after_them() {
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(corpora_slug(&[]), "");
        assert_eq!(corpora_slug(&names(&["sanity", "rustc"])), "-rustc-sanity");
        let six = corpora_slug(&names(&["a", "b", "c", "d", "e", "f"]));
        assert!(six.starts_with("-6-corpora-") && six.len() == "-6-corpora-".len() + 8);
        assert_ne!(six, corpora_slug(&names(&["a", "b", "c", "d", "e", "g"])));
        assert_eq!(six, corpora_slug(&names(&["f", "e", "d", "c", "b", "a"])));
    }
}
