//! `cargo xtask bench cli`: what a search costs as a whole `quarry search` process on an
//! indexed repository (lexical, hybrid, and right after an edit), against ripgrep over the
//! same copy in the same run.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use quarry_bench::stats::percentile;

use crate::bench::common::{
    CorpusArgs, append_comment, git_commit, largest_source_files, release_quarry, repository_root,
    write_report,
};

/// The question every search asks; what it finds does not matter here.
const QUERY: &str = "where is the configuration loaded";

/// A command the benchmark times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    Ripgrep,
    Lexical,
    LexicalAfterEdit,
    Hybrid,
    HybridAfterEdit,
}

impl Probe {
    fn label(self) -> &'static str {
        match self {
            Probe::Ripgrep => "ripgrep",
            Probe::Lexical => "lexical",
            Probe::LexicalAfterEdit => "lexical after an edit",
            Probe::Hybrid => "hybrid",
            Probe::HybridAfterEdit => "hybrid after an edit",
        }
    }

    fn edits_first(self) -> bool {
        matches!(self, Probe::LexicalAfterEdit | Probe::HybridAfterEdit)
    }

    fn command(self, quarry: &Path) -> Command {
        let (program, args): (&Path, &[&str]) = match self {
            Probe::Ripgrep => (Path::new("rg"), &["--count", "-i", "configuration", "."]),
            Probe::Lexical | Probe::LexicalAfterEdit => {
                (quarry, &["search", "--mode", "lexical", QUERY])
            }
            Probe::Hybrid | Probe::HybridAfterEdit => (quarry, &["search", QUERY]),
        };
        let mut command = Command::new(program);
        command.args(args);
        command
    }
}

/// One probe's whole-process times in milliseconds, sorted.
struct Timed {
    probe: Probe,
    millis: Vec<f64>,
}

impl Timed {
    fn p50(&self) -> f64 {
        percentile(&self.millis, 0.5)
    }

    fn p95(&self) -> f64 {
        percentile(&self.millis, 0.95)
    }
}

/// One corpus's measurements.
struct Measured {
    name: String,
    chunks: u64,
    embedded: bool,
    timed: Vec<Timed>,
}

/// `cargo xtask bench cli`'s options.
#[derive(clap::Args)]
pub struct CliArgs {
    /// Searches per kind and corpus; p50 and p95 are reported.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    #[command(flatten)]
    corpora: CorpusArgs,
}

pub fn run(args: CliArgs) -> Result<()> {
    let runs = args.runs as usize;
    let quarry = release_quarry()?;
    let root = repository_root()?;
    let mut measured = Vec::new();
    for (corpus, source) in args.corpora.corpora(root)? {
        let embed = args.corpora.embeds(&corpus);
        eprintln!("{}: {runs} runs", corpus.name);
        measured.push(measure(&corpus.name, &source, &quarry, runs, embed)?);
    }

    let commit = git_commit(root);
    let markdown = markdown(&commit, runs, &measured);
    let json = json!({
        "commit": commit,
        "runs": runs,
        "query": QUERY,
        "corpora": measured.iter().map(|m| json!({
            "name": m.name,
            "chunks": m.chunks,
            "embedded": m.embedded,
            "millis": m.timed.iter().map(|t| (t.probe.label().to_owned(), json!({
                "p50": t.p50(), "p95": t.p95(), "all": t.millis,
            }))).collect::<serde_json::Map<String, Value>>(),
        })).collect::<Vec<_>>(),
    });
    write_report(root, &format!("cli-{commit}"), &markdown, &json)?;
    print!("{markdown}");
    Ok(())
}

/// Indexes a fresh copy of `source` (both phases if `embed`, else the first), then times
/// each command `runs` times, interleaved so that a slow moment of the machine falls on all.
fn measure(name: &str, source: &Path, quarry: &Path, runs: usize, embed: bool) -> Result<Measured> {
    let copy = tempfile::tempdir()?;
    quarry_testkit::copy_dir(source, copy.path());
    let index = copy.path().join(quarry_store::INDEX_DIR);
    if index.exists() {
        fs::remove_dir_all(&index)?;
    }
    let dir = copy.path();
    let prepare: &[&str] = match embed {
        true => &["index"],
        false => &["search", "--mode", "lexical", QUERY],
    };
    run_checked(Command::new(quarry).args(prepare).current_dir(dir), name)?;
    let status: Value = serde_json::from_slice(
        &run_checked(
            Command::new(quarry)
                .args(["status", "--json"])
                .current_dir(dir),
            name,
        )?
        .stdout,
    )?;
    let chunks = status["coverage"]["chunks"].as_u64().unwrap_or_default();
    let edited = largest_source_files(dir, 1)?.remove(0);

    let probes: &[Probe] = match embed {
        true => &[
            Probe::Ripgrep,
            Probe::Lexical,
            Probe::LexicalAfterEdit,
            Probe::Hybrid,
            Probe::HybridAfterEdit,
        ],
        false => &[Probe::Ripgrep, Probe::Lexical, Probe::LexicalAfterEdit],
    };
    let mut timed: Vec<Timed> = probes
        .iter()
        .map(|&probe| Timed {
            probe,
            millis: Vec::new(),
        })
        .collect();
    for run in 0..runs {
        for t in &mut timed {
            if t.probe.edits_first() {
                append_comment(&edited, &format!("edit {run} {:?}", t.probe))?;
            }
            let mut command = t.probe.command(quarry);
            command.env("NO_COLOR", "1");
            let started = Instant::now();
            let out = run_checked(command.current_dir(dir), name)?;
            t.millis.push(started.elapsed().as_secs_f64() * 1e3);
            ensure!(
                !out.stdout.is_empty(),
                "{command:?} on {name} printed nothing"
            );
            if t.probe.edits_first() && embed {
                // Untimed: a lexical search leaves its edit's chunks without vectors, which
                // the next hybrid search would embed; every probe starts from a settled index.
                run_checked(Command::new(quarry).arg("index").current_dir(dir), name)?;
            }
        }
    }
    for t in &mut timed {
        t.millis.sort_by(f64::total_cmp);
    }
    Ok(Measured {
        name: name.to_owned(),
        chunks,
        embedded: embed,
        timed,
    })
}

fn run_checked(command: &mut Command, name: &str) -> Result<std::process::Output> {
    let out = command
        .output()
        .with_context(|| format!("running {command:?}"))?;
    ensure!(
        out.status.success(),
        "{command:?} on {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(out)
}

fn markdown(commit: &str, runs: usize, measured: &[Measured]) -> String {
    let mut out = format!(
        "# CLI search, whole process ({commit})\n\n\
         `cargo xtask bench cli --runs {runs}`: each command {runs} times on an indexed fresh \
         copy, interleaved; milliseconds from spawn to exit. The reference is ripgrep \
         (`rg --count -i configuration .`) over the same copy in the same run. An edit \
         appends a comment to the corpus's largest source file before the search, which \
         then re-indexes that file (and, hybrid, embeds its chunks); an untimed `quarry \
         index` follows each edit, so that every search starts from a settled index. Query: \"{QUERY}\".\n\n\
         | corpus | chunks | command | p50 ms | p95 ms | p50 / ripgrep |\n\
         |---|---:|---|---:|---:|---:|\n"
    );
    for m in measured {
        let reference = m
            .timed
            .iter()
            .find(|t| t.probe == Probe::Ripgrep)
            .map_or(f64::NAN, Timed::p50);
        for t in &m.timed {
            out.push_str(&format!(
                "| {} | {} | {} | {:.1} | {:.1} | {:.1}x |\n",
                m.name,
                m.chunks,
                t.probe.label(),
                t.p50(),
                t.p95(),
                t.p50() / reference
            ));
        }
        if !m.embedded {
            out.push_str(&format!(
                "| {} | | hybrid | not measured: not embedded (run with --embed) | | |\n",
                m.name
            ));
        }
    }
    out
}
