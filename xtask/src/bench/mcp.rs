//! `cargo xtask bench mcp`: warm `semantic_search` latency through the MCP server, as an
//! agent's client sees it, against the same searches in-process in the same run; then the
//! load test, the watching server (`follow.rs`) and a burst of calls (`burst.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use quarry_embed::{DEFAULT_MODEL, EmbedderOptions};
use quarry_engine::{Engine, EngineOptions, SearchOptions};
use serde_json::{Value, json};

use crate::bench::burst::{self, Burst};
use crate::bench::common::{append_comment, git_commit, largest_source_files, write_report};
use crate::bench::follow::{self, FollowArgs, QUERIES, Served, summary};
use crate::model::provisioner;

/// `cargo xtask bench mcp`'s options.
#[derive(clap::Args)]
pub struct McpArgs {
    /// An indexed repository (`quarry index DIR` first).
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// Warm searches timed through each client.
    #[arg(long, default_value_t = 100)]
    calls: usize,
    /// Concurrent callers under load.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Searches per caller under load.
    #[arg(long, default_value_t = 250)]
    load_calls: usize,
    /// Files changed, for the server to re-index under load.
    #[arg(long, default_value_t = 20)]
    edits: usize,
    /// Calls sent at once to a settled server (0: no burst).
    #[arg(long, default_value_t = 1000)]
    burst: usize,
    /// Only the long-lived server's part: edit-to-visible latency, idle CPU, the soak, the
    /// burst.
    #[arg(long)]
    follow_only: bool,
    #[command(flatten)]
    follow: FollowArgs,
}

pub fn run(args: McpArgs) -> Result<()> {
    let McpArgs {
        root,
        calls,
        clients,
        load_calls,
        edits,
        burst,
        follow_only,
        follow,
    } = args;
    let load = Load {
        clients,
        calls: load_calls,
        edits,
    };
    let quarry = std::env::current_exe()?.with_file_name("quarry");
    ensure!(
        quarry.is_file(),
        "{} is missing: build it in the same profile (`cargo build [--release] -p quarry-cli`)",
        quarry.display()
    );

    let project = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("root")?;
    let commit = git_commit(project);
    let followed = follow::run(&quarry, &root, &follow)?;
    let burst = match burst {
        0 => None,
        calls => Some(burst::run(&quarry, &root, calls)?),
    };
    let burst_markdown = burst.as_ref().map(Burst::markdown).unwrap_or_default();
    let burst_json = burst.as_ref().map(Burst::json);
    if follow_only {
        let markdown = format!(
            "# MCP following the working tree ({commit})\n\nOn {}. Written by `cargo xtask \
             bench mcp --follow-only`.\n\n{}\n{burst_markdown}",
            root.display(),
            followed.markdown()
        );
        let report = json!({"commit": commit, "root": root, "follow": followed.json(),
            "burst": burst_json});
        write_report(project, &format!("mcp-follow-{commit}"), &markdown, &report)?;
        print!("{markdown}");
        return Ok(());
    }
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
    let through_rust = rust_client_latencies(&quarry, &root, calls)?;
    let through_mcp: Vec<f64> = client["millis"]
        .as_array()
        .context("no latencies")?
        .iter()
        .filter_map(Value::as_f64)
        .collect();

    let (mcp_p50, mcp_p95) = summary(&through_mcp);
    let (direct_p50, direct_p95) = summary(&in_process.1);
    let (rust_p50, rust_p95) = summary(&through_rust);
    let report = json!({
        "commit": commit,
        "root": root,
        "chunks": in_process.0,
        "calls": calls,
        "queries": QUERIES,
        "mcp_ms": {"p50": mcp_p50, "p95": mcp_p95, "all": through_mcp},
        "mcp_rust_client_ms": {"p50": rust_p50, "p95": rust_p95, "all": through_rust},
        "in_process_ms": {"p50": direct_p50, "p95": direct_p95, "all": in_process.1},
        "ratio_p50": mcp_p50 / direct_p50,
    });
    let loaded = load.run(&quarry, &root)?;
    let mut report = report;
    report["load"] = loaded.json();
    report["follow"] = followed.json();
    report["burst"] = json!(burst_json);
    let markdown = format!(
        "# MCP latency ({commit})\n\nWarm `semantic_search` (hybrid, 10 results, compact) on \
         {} ({} chunks), {calls} calls cycling through {} queries; the same searches \
         in-process in the same run are the reference. Written by `cargo xtask bench mcp`.\n\n\
         | path | p50 ms | p95 ms |\n|---|---:|---:|\n\
         | in-process `Engine::search` | {direct_p50:.1} | {direct_p95:.1} |\n\
         | through MCP (rmcp client, stdio) | {rust_p50:.1} | {rust_p95:.1} |\n\
         | through MCP (Python SDK client, stdio) | {mcp_p50:.1} | {mcp_p95:.1} |\n\n\
         MCP / in-process at p50: {:.2}x with the rmcp client, {:.2}x with the Python \
         one.\n\n{}\n{}\n{burst_markdown}",
        root.display(),
        in_process.0,
        QUERIES.len(),
        rust_p50 / direct_p50,
        mcp_p50 / direct_p50,
        loaded.markdown(&load),
        followed.markdown(),
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

/// Each warm `semantic_search`'s wall time through a `quarry mcp` over stdio, called by
/// rmcp's client: the server's share of the latency, with a client that adds little.
fn rust_client_latencies(quarry: &Path, root: &Path, calls: usize) -> Result<Vec<f64>> {
    use rmcp::model::CallToolRequestParams;

    let search = |query: &str| {
        let arguments = json!({ "query": query });
        CallToolRequestParams::new("semantic_search")
            .with_arguments(arguments.as_object().cloned().unwrap_or_default())
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let served = Served::start(quarry, root, &["--no-index"]).await?;
        let client = &served.client;
        // Warm up as the Python client does.
        for query in &QUERIES[..3] {
            client.call_tool(search(query)).await?;
        }
        let mut millis = Vec::with_capacity(calls);
        for i in 0..calls {
            let started = Instant::now();
            let result = client.call_tool(search(QUERIES[i % QUERIES.len()])).await?;
            millis.push(started.elapsed().as_secs_f64() * 1000.0);
            ensure!(
                result.is_error != Some(true),
                "semantic_search failed: {:?}",
                result.content
            );
        }
        served.client.cancel().await?;
        Ok(millis)
    })
}

/// The load test: concurrent MCP callers and a CLI search loop while the server re-indexes.
struct Load {
    /// Concurrent callers over the server's one stdio session.
    clients: usize,
    /// Searches per caller.
    calls: usize,
    /// Source files changed before the server's re-index.
    edits: usize,
}

/// What the load test saw.
struct Loaded {
    mcp_millis: Vec<f64>,
    mcp_errors: Vec<String>,
    build: Value,
    cli_millis: Vec<f64>,
    cli_errors: Vec<String>,
    /// CLI searches that answered from the last commit because the server was writing.
    cli_beside_writer: usize,
}

/// What `quarry search` prints when another process writes the index.
const BESIDE_WRITER: &str = "another quarry process is writing this index";

impl Load {
    /// On a copy of `root` (with its index), changes [`Load::edits`] files, then runs
    /// the MCP callers and the server's re-index (`mcp_load.py`) with CLI searches in a
    /// loop beside them until the callers are done.
    fn run(&self, quarry: &Path, root: &Path) -> Result<Loaded> {
        let copy = tempfile::tempdir()?;
        quarry_testkit::copy_dir(root, copy.path());
        for (i, path) in largest_source_files(copy.path(), self.edits)?
            .iter()
            .enumerate()
        {
            append_comment(path, &format!("load test edit {i}"))?;
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench-suite/mcp_load.py");
        // Outside the copy: the CLI's index runs must not see it.
        let signals = tempfile::tempdir()?;
        let started = signals.path().join("build-started");
        let client = Command::new(quarry_testkit::python())
            .arg(script)
            .arg(quarry)
            .arg(copy.path())
            .arg(self.clients.to_string())
            .arg(self.calls.to_string())
            .arg(&started)
            .args(QUERIES)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        let done = std::sync::atomic::AtomicBool::new(false);
        let (output, cli) = std::thread::scope(|scope| {
            let cli = scope.spawn(|| {
                // Beside the server's index run, not before it takes the index.
                while !started.exists() && !done.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                cli_loop(quarry, copy.path(), &done)
            });
            let output = client.wait_with_output();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            (output, cli.join().expect("the CLI loop does not panic"))
        });
        let output = output?;
        ensure!(
            output.status.success(),
            "the MCP load client failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let client: Value = serde_json::from_slice(&output.stdout)?;
        let strings = |key: &str| -> Vec<String> {
            client[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        };
        let (cli_millis, cli_errors, cli_beside_writer) = cli?;
        Ok(Loaded {
            mcp_millis: client["millis"]
                .as_array()
                .context("no latencies")?
                .iter()
                .filter_map(Value::as_f64)
                .collect(),
            mcp_errors: strings("errors"),
            build: client["build"].clone(),
            cli_millis,
            cli_errors,
            cli_beside_writer,
        })
    }
}

/// `quarry search` in a loop in `dir` until `done`: each run's wall time, the failures, and
/// how many answered beside a writer.
fn cli_loop(
    quarry: &Path,
    dir: &Path,
    done: &std::sync::atomic::AtomicBool,
) -> Result<(Vec<f64>, Vec<String>, usize)> {
    let (mut millis, mut errors, mut beside) = (Vec::new(), Vec::new(), 0);
    let mut i = 0;
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        let started = Instant::now();
        let out = Command::new(quarry)
            .args(["search", QUERIES[i % QUERIES.len()]])
            .current_dir(dir)
            .env("NO_COLOR", "1")
            .output()?;
        millis.push(started.elapsed().as_secs_f64() * 1000.0);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() || out.stdout.is_empty() {
            errors.push(format!("search {i}: {stderr}"));
        }
        beside += usize::from(stderr.contains(BESIDE_WRITER));
        i += 1;
    }
    Ok((millis, errors, beside))
}

impl Loaded {
    fn json(&self) -> Value {
        let (mcp_p50, mcp_p95) = summary(&self.mcp_millis);
        let (cli_p50, cli_p95) = summary(&self.cli_millis);
        json!({
            "mcp_ms": {"p50": mcp_p50, "p95": mcp_p95, "calls": self.mcp_millis.len()},
            "mcp_errors": self.mcp_errors,
            "build": self.build,
            "cli_ms": {"p50": cli_p50, "p95": cli_p95, "runs": self.cli_millis.len()},
            "cli_errors": self.cli_errors,
            "cli_beside_writer": self.cli_beside_writer,
        })
    }

    fn markdown(&self, load: &Load) -> String {
        let (mcp_p50, mcp_p95) = summary(&self.mcp_millis);
        let (cli_p50, cli_p95) = summary(&self.cli_millis);
        let report = &self.build["result"]["indexing"]["report"];
        format!(
            "## Under load\n\n{} callers x {} `semantic_search` calls, concurrent over one \
             server's stdio session, while the server re-indexes {} changed files (`index \
             build`, {:.1} s: {} files read, {} chunks embedded), with `quarry search` (hybrid) \
             in a loop beside them in the same repository.\n\n\
             | path | calls | errors | p50 ms | p95 ms |\n|---|---:|---:|---:|---:|\n\
             | MCP `semantic_search` | {} | {} | {mcp_p50:.1} | {mcp_p95:.1} |\n\
             | CLI `quarry search` (whole process) | {} | {} | {cli_p50:.1} | {cli_p95:.1} |\n\n\
             {} of the CLI searches answered from the last commit while the server wrote.\n",
            load.clients,
            load.calls,
            load.edits,
            self.build["seconds"].as_f64().unwrap_or(f64::NAN),
            report["files_read"],
            report["chunks_embedded"],
            self.mcp_millis.len(),
            self.mcp_errors.len(),
            self.cli_millis.len(),
            self.cli_errors.len(),
            self.cli_beside_writer,
        )
    }
}
