//! `cargo xtask bench mcp`: warm `semantic_search` latency through the MCP server, as an
//! agent's client sees it, against the same searches in-process in the same run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use quarry_bench::stats::percentile;
use quarry_embed::{DEFAULT_MODEL, EmbedderOptions};
use quarry_engine::{Engine, EngineOptions, SearchOptions};
use serde_json::{Value, json};

use crate::bench_embed::{git_commit, write_report};
use crate::model::provisioner;

/// Questions an agent working on an async runtime might ask (tokio's sources are the
/// reference corpus); other repositories get them too, which only changes what is found.
const QUERIES: [&str; 10] = [
    "wake the task blocked on a full channel",
    "spawn a task onto the runtime",
    "how does the timer wheel fire expired timers",
    "read from an async reader until a delimiter",
    "graceful shutdown of the runtime",
    "JoinHandle::abort",
    "acquire semaphore permits fairly",
    "block_in_place",
    "cooperative scheduling budget",
    "bounded mpsc channel send",
];

pub fn run(args: &[String]) -> Result<()> {
    let mut root: Option<PathBuf> = None;
    let mut calls = 100usize;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--root" => root = Some(value()?.into()),
            "--calls" => calls = value()?.parse().context("--calls N")?,
            other => bail!("unknown option {other:?} (see `cargo xtask help`)"),
        }
    }
    let root = root.context("--root DIR: an indexed repository (`quarry index DIR` first)")?;
    let quarry = std::env::current_exe()?.with_file_name("quarry");
    ensure!(
        quarry.is_file(),
        "{} is missing: build it in the same profile (`cargo build [--release] -p quarry-cli`)",
        quarry.display()
    );

    let in_process = in_process_latencies(&root, calls)?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench-suite/mcp_latency.py");
    let output = Command::new(quarry_testkit::python())
        .arg(script)
        .arg(&quarry)
        .arg(&root)
        .arg(calls.to_string())
        .args(QUERIES)
        .output()?;
    ensure!(
        output.status.success(),
        "the MCP client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let client: Value = serde_json::from_slice(&output.stdout)?;
    let through_mcp: Vec<f64> = client["millis"]
        .as_array()
        .context("no latencies")?
        .iter()
        .filter_map(Value::as_f64)
        .collect();

    let summary = |millis: &[f64]| {
        let mut sorted = millis.to_vec();
        sorted.sort_by(f64::total_cmp);
        (percentile(&sorted, 0.5), percentile(&sorted, 0.95))
    };
    let (mcp_p50, mcp_p95) = summary(&through_mcp);
    let (direct_p50, direct_p95) = summary(&in_process.1);
    let project = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("root")?;
    let commit = git_commit(project);
    let report = json!({
        "commit": commit,
        "root": root,
        "chunks": in_process.0,
        "calls": calls,
        "queries": QUERIES,
        "mcp_ms": {"p50": mcp_p50, "p95": mcp_p95, "all": through_mcp},
        "in_process_ms": {"p50": direct_p50, "p95": direct_p95, "all": in_process.1},
        "ratio_p50": mcp_p50 / direct_p50,
    });
    let markdown = format!(
        "# MCP latency ({commit})\n\nWarm `semantic_search` (hybrid, 10 results, compact) on \
         {} ({} chunks), {calls} calls cycling through {} queries; the same searches \
         in-process in the same run are the reference. Written by `cargo xtask bench mcp`.\n\n\
         | path | p50 ms | p95 ms |\n|---|---:|---:|\n\
         | in-process `Engine::search` | {direct_p50:.1} | {direct_p95:.1} |\n\
         | through MCP (Python SDK client, stdio) | {mcp_p50:.1} | {mcp_p95:.1} |\n\n\
         MCP / in-process at p50: {:.2}x.\n",
        root.display(),
        in_process.0,
        QUERIES.len(),
        mcp_p50 / direct_p50,
    );
    write_report(project, &format!("mcp-{commit}"), &markdown, &report)?;
    print!("{markdown}");
    Ok(())
}

/// The index's chunk count and each in-process search's wall time, after a warm-up.
fn in_process_latencies(root: &Path, calls: usize) -> Result<(u64, Vec<f64>)> {
    let model = provisioner().resolve(&DEFAULT_MODEL)?;
    let options = EngineOptions {
        embedder: EmbedderOptions::from_env()?,
        ..EngineOptions::default()
    };
    let engine = Engine::open(root, &model, options)?;
    let chunks = engine.store().counts()?.chunks;
    ensure!(
        chunks > 0,
        "{} has no index: run `quarry index {0}` first",
        root.display()
    );
    let search = SearchOptions::default();
    for query in &QUERIES[..3] {
        engine.search(query, &search)?;
    }
    let millis = (0..calls)
        .map(|i| {
            let started = Instant::now();
            engine.search(QUERIES[i % QUERIES.len()], &search)?;
            Ok(started.elapsed().as_secs_f64() * 1000.0)
        })
        .collect::<Result<_>>()?;
    Ok((chunks, millis))
}
