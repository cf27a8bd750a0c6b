//! `cargo xtask bench relevance`: the relevance benchmark's command line (the work is in
//! quarry-bench).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use quarry_bench::arms::{ABLATIONS, Arm};
use quarry_bench::cases::{CaseFile, Split};
use quarry_bench::corpus::{CorporaFile, Suite};
use quarry_bench::peers::SemblePeer;
use quarry_bench::report::Report;
use quarry_bench::{Progress, RunOptions};
use quarry_embed::{DEFAULT_MODEL, EmbedderOptions};
use quarry_engine::EngineOptions;

use crate::bench::common::git_commit;
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

pub fn run(args: &[String]) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?;
    let suite_dir = root.join("bench-suite");
    let mut corpus_names: Vec<String> = Vec::new();
    let mut case_paths: Vec<PathBuf> = Vec::new();
    let mut suite = Suite::Full;
    let mut plan = Plan::Controls;
    let mut baseline: Option<PathBuf> = None;
    let mut doc_cases = quarry_bench::docs::PER_CORPUS;
    let mut split = Split::All;
    let mut settings: Vec<(String, String)> = Vec::new();
    let mut peers = true;
    let mut out = suite_dir.join("reports");
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--corpus" => corpus_names.push(value()?.clone()),
            "--cases" => case_paths.push(value()?.into()),
            "--suite" => {
                suite = match value()?.as_str() {
                    "full" => Suite::Full,
                    "smoke" => Suite::Smoke,
                    other => bail!("--suite full|smoke, not {other:?}"),
                }
            }
            "--ab" => {
                let spec = value()?;
                let (key, values) = spec
                    .split_once('=')
                    .with_context(|| format!("--ab KEY=A,B, not {spec:?}"))?;
                let values: Vec<String> = values.split(',').map(str::to_owned).collect();
                ensure!(
                    values.len() >= 2,
                    "--ab {key}= needs two values or more, comma-separated"
                );
                plan = Plan::Ab {
                    key: key.to_owned(),
                    values,
                };
            }
            "--ablate" => {
                let part = value()?;
                let parts: Vec<String> = match part.as_str() {
                    "all" => ABLATIONS.iter().map(|p| p.to_string()).collect(),
                    one => vec![one.to_owned()],
                };
                match &mut plan {
                    Plan::Ablate(existing) => existing.extend(parts),
                    _ => plan = Plan::Ablate(parts),
                }
            }
            "--arm" => {
                let spec = value()?.clone();
                match &mut plan {
                    Plan::Variants(existing) => existing.push(spec),
                    _ => plan = Plan::Variants(vec![spec]),
                }
            }
            "--no-controls" => plan = Plan::Hybrid,
            "--no-peers" => peers = false,
            "--set" => {
                let spec = value()?;
                let (key, value) = spec
                    .split_once('=')
                    .with_context(|| format!("--set KEY=VALUE, not {spec:?}"))?;
                settings.push((key.to_owned(), value.to_owned()));
            }
            "--split" => {
                split = match value()?.as_str() {
                    "all" => Split::All,
                    "tuning" => Split::Tuning,
                    "held-out" => Split::HeldOut,
                    other => bail!("--split all|tuning|held-out, not {other:?}"),
                }
            }
            "--baseline" => baseline = Some(value()?.into()),
            "--doc-cases" => doc_cases = value()?.parse().context("--doc-cases N")?,
            "--out" => out = value()?.into(),
            other => bail!("unknown option {other:?} (see `cargo xtask help`)"),
        }
    }

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
    let suite_slug = match (suite, split) {
        (Suite::Smoke, _) => "-smoke",
        (_, Split::Tuning) => "-tuning",
        (_, Split::HeldOut) => "-held-out",
        (_, Split::All) => "",
    };

    let model = provisioner().resolve(&DEFAULT_MODEL)?;
    let cache = directories::ProjectDirs::from("", "", "quarry")
        .context("no home directory for the cache")?
        .cache_dir()
        .join("bench");
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
            embedder: EmbedderOptions::from_env()?,
            ..EngineOptions::default()
        },
        doc_cases,
        split,
        semble,
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
    let stem = format!("relevance{suite_slug}{slug}-{commit}");
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
