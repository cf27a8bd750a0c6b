//! `cargo xtask bench mcp`'s second half: a watching `quarry mcp` as an agent edits beside
//! it. Edit-to-visible latency (an appended line found by the next searches, and its vector
//! in), the CPU an idle watching server spends against one started with `--no-watch` in the
//! same minute, and a soak of edits and concurrent searches with the server's resident
//! memory over it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use quarry_bench::stats::percentile;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService};
use serde_json::{Value, json};

use crate::bench::common::largest_source_files;

/// Questions an agent working on an async runtime might ask (tokio's sources are the
/// reference corpus); other repositories get them too, which only changes what is found.
pub(super) const QUERIES: [&str; 10] = [
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

/// p50 and p95 of `millis`.
pub(super) fn summary(millis: &[f64]) -> (f64, f64) {
    let mut sorted = millis.to_vec();
    sorted.sort_by(f64::total_cmp);
    (percentile(&sorted, 0.5), percentile(&sorted, 0.95))
}

/// What the follow bench measures.
#[derive(clap::Args)]
pub struct FollowArgs {
    /// Edits timed from write to visible.
    #[arg(long, default_value_t = 100)]
    follow_edits: usize,
    /// Seconds the idle servers' CPU time is measured over.
    #[arg(long, default_value_t = 60)]
    idle_seconds: u64,
    /// Minutes of the soak (0: none).
    #[arg(long, default_value_t = 20.0)]
    soak_minutes: f64,
    /// Concurrent callers searching during the soak.
    #[arg(long, default_value_t = 4)]
    soak_clients: usize,
    /// Seconds between the soak's edits.
    #[arg(long, default_value_t = 2.0)]
    soak_edit_every: f64,
}

/// A `quarry mcp` child and rmcp's client session over its stdio.
pub(super) struct Served {
    child: tokio::process::Child,
    pub(super) client: RunningService<RoleClient, ()>,
}

impl Served {
    /// Starts `quarry mcp --root root` with `flags`, and shakes hands.
    pub(super) async fn start(quarry: &Path, root: &Path, flags: &[&str]) -> Result<Self> {
        let mut child = tokio::process::Command::new(quarry)
            .arg("mcp")
            .arg("--root")
            .arg(root)
            .args(flags)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {} mcp", quarry.display()))?;
        let pipes = (
            child.stdout.take().context("the server's stdout")?,
            child.stdin.take().context("the server's stdin")?,
        );
        let client = ().serve(pipes).await.context("the MCP handshake")?;
        Ok(Served { child, client })
    }

    pub(super) fn pid(&self) -> Result<u32> {
        self.child.id().context("the server has exited")
    }

    /// Polls status until nothing waits: no changed file, no run, no chunk without its
    /// vector.
    async fn settled(&self) -> Result<Value> {
        let deadline = Instant::now() + Duration::from_secs(1800);
        loop {
            let status = call(self.client.peer(), "index", json!({"action": "status"})).await?;
            let coverage = &status["coverage"];
            let state = status["indexing"]["state"].as_str().unwrap_or_default();
            if status["watch"]["files_waiting"] == 0
                && matches!(state, "finished" | "idle")
                && coverage["chunks"] == coverage["embedded"]
            {
                return Ok(status);
            }
            ensure!(state != "failed", "the server's index run failed: {status}");
            ensure!(
                Instant::now() < deadline,
                "the index never settled: {status}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A tool's structured result; a tool error is an error.
pub(super) async fn call(
    peer: &Peer<RoleClient>,
    tool: &'static str,
    arguments: Value,
) -> Result<Value> {
    let params = CallToolRequestParams::new(tool)
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    let result = peer.call_tool(params).await?;
    if result.is_error == Some(true) {
        bail!("{tool} failed: {:?}", result.content);
    }
    result.structured_content.context("no structured content")
}

/// A word no source holds and no other probe shares a token with: letters only, so that
/// the lexical index keeps it whole (`probe12x3` would be split, and its pieces found in
/// every other probe's line).
fn probe_word(i: usize) -> String {
    let mut n = i * 7919 + std::process::id() as usize;
    let mut word = String::from("freshnessprobe");
    for _ in 0..6 {
        word.push(char::from(b'a' + (n % 26) as u8));
        n /= 26;
    }
    word
}

/// Appends a line naming `token` to the source file at `path`, as a comment.
fn append_probe(path: &Path, token: &str) -> Result<()> {
    crate::bench::common::append_comment(path, &format!("probe {token}"))
}

/// What the follow bench saw.
pub struct Followed {
    edits: Edits,
    idle: Idle,
    soak: Option<Soak>,
    files: usize,
}

struct Idle {
    seconds: u64,
    watching_cpu_s: f64,
    unwatched_cpu_s: f64,
}

struct Soak {
    minutes: f64,
    clients: usize,
    edit_every: f64,
    edits: usize,
    searches: usize,
    errors: Vec<String>,
    search_ms: Vec<f64>,
    rss_first_minute_kib: u64,
    rss_end_kib: u64,
    /// Samples of resident memory every ten seconds of soak (pauses left out).
    rss_samples: Vec<(f64, u64)>,
    wall_s: f64,
}

/// Runs the follow bench on a copy of `root` (with its index).
pub fn run(quarry: &Path, root: &Path, args: &FollowArgs) -> Result<Followed> {
    let copy = tempfile::tempdir()?;
    quarry_testkit::copy_dir(root, copy.path());
    let unwatched = tempfile::tempdir()?;
    quarry_testkit::copy_dir(root, unwatched.path());
    let files = largest_source_files(copy.path(), 20)?;
    // One thread: the callers wait on the server, not on the client.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let served = Served::start(quarry, copy.path(), &[]).await?;
        served.settled().await?;
        let edited = edits(&served, copy.path(), &files, args).await?;
        let idle = idle(quarry, &served, unwatched.path(), args.idle_seconds).await?;
        let soak = match args.soak_minutes > 0.0 {
            true => Some(soak(&served, &files, args).await?),
            false => None,
        };
        served.client.cancel().await?;
        Ok(Followed {
            edits: edited,
            idle,
            soak,
            files: files.len(),
        })
    })
}

/// Each edit's time from the write to the first search that returns the new line, and to
/// every chunk having its vector; and what the server spent on it.
async fn edits(
    served: &Served,
    root: &Path,
    files: &[PathBuf],
    args: &FollowArgs,
) -> Result<Edits> {
    let peer = served.client.peer();
    let mut edits = Edits::default();
    for i in 0..args.follow_edits {
        let token = probe_word(i);
        let file = &files[i % files.len()];
        let relative = file
            .strip_prefix(root)?
            .to_string_lossy()
            .replace('\\', "/");
        append_probe(file, &token)?;
        let written = Instant::now();
        loop {
            let found = call(
                peer,
                "semantic_search",
                json!({"query": token, "mode": "lexical", "limit": 10, "detail_level": "full"}),
            )
            .await?;
            let hit = found["results"].as_array().into_iter().flatten().any(|r| {
                r["path"] == relative.as_str()
                    && r["text"].as_str().is_some_and(|t| t.contains(&token))
            });
            if hit {
                break;
            }
            if written.elapsed() > Duration::from_secs(60) {
                let status = call(peer, "index", json!({"action": "status"})).await?;
                bail!("edit {i} of {relative} never became visible: {found}\nstatus: {status}");
            }
        }
        edits
            .lexical_ms
            .push(written.elapsed().as_secs_f64() * 1000.0);
        let status = served.settled().await?;
        edits
            .vector_ms
            .push(written.elapsed().as_secs_f64() * 1000.0);
        if let Some(seconds) = status["indexing"]["report"]["seconds"].as_f64() {
            edits.run_ms.push(seconds * 1000.0);
        }
    }
    edits.cost = writer_cost(served, files, args.follow_edits.min(COST_EDITS)).await?;
    Ok(edits)
}

/// Edits whose cost is measured, at most.
const COST_EDITS: usize = 30;

/// The server's cost of `count` edits, one a second with nothing else asked of it (the
/// latency loop's searches and status polls cost far more than the runs they wait for):
/// CPU and bytes through system calls from the first write to a second after the last.
async fn writer_cost(served: &Served, files: &[PathBuf], count: usize) -> Result<WriterCost> {
    let pid = served.pid()?;
    let (cpu, io) = (cpu_seconds(pid)?, Io::of(pid)?);
    for i in 0..count {
        append_probe(&files[i % files.len()], &format!("costprobe{i}"))?;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let spent = Io::of(pid)?.since(io);
    let cost = WriterCost {
        edits: count,
        cpu_ms: (cpu_seconds(pid)? - cpu) * 1000.0,
        read_kib: spent.read as f64 / 1024.0,
        written_kib: spent.written as f64 / 1024.0,
    };
    served.settled().await?;
    Ok(cost)
}

/// Per edit: latencies and the server's cost.
#[derive(Default)]
struct Edits {
    lexical_ms: Vec<f64>,
    vector_ms: Vec<f64>,
    /// Each index run's own time, as its report gives it.
    run_ms: Vec<f64>,
    cost: WriterCost,
}

/// What a run of edits cost the server in all.
#[derive(Default)]
struct WriterCost {
    edits: usize,
    /// CPU time, user and system.
    cpu_ms: f64,
    /// Bytes read and written through system calls (`rchar`, `wchar`: page cache included,
    /// so that loading and saving the vector index count whole).
    read_kib: f64,
    written_kib: f64,
}

impl WriterCost {
    /// CPU ms, KiB read and KiB written per edit.
    fn per_edit(&self) -> (f64, f64, f64) {
        let n = self.edits.max(1) as f64;
        (self.cpu_ms / n, self.read_kib / n, self.written_kib / n)
    }
}

/// A process's I/O through system calls so far, from `/proc/PID/io`.
#[derive(Clone, Copy)]
struct Io {
    read: u64,
    written: u64,
}

impl Io {
    fn of(pid: u32) -> Result<Self> {
        let io = std::fs::read_to_string(format!("/proc/{pid}/io"))?;
        let field = |name: &str| -> Result<u64> {
            io.lines()
                .find_map(|line| line.strip_prefix(name))
                .with_context(|| format!("{name} in /proc/{pid}/io"))?
                .trim()
                .parse()
                .map_err(Into::into)
        };
        Ok(Io {
            read: field("rchar:")?,
            written: field("wchar:")?,
        })
    }

    fn since(self, earlier: Io) -> Io {
        Io {
            read: self.read - earlier.read,
            written: self.written - earlier.written,
        }
    }
}

/// CPU seconds (user and system) a process has spent, from `/proc`.
fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .context("a /proc stat line")?
        .1
        .split_whitespace()
        .collect();
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    Ok(ticks / clock_ticks()?)
}

/// The kernel's clock ticks per second, as `getconf` reports them.
fn clock_ticks() -> Result<f64> {
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()?;
    Ok(String::from_utf8(out.stdout)?.trim().parse()?)
}

/// Resident memory of a process in KiB, from `/proc`.
pub(super) fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("VmRSS")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .context("VmRSS's value")?
        .parse()?)
}

/// The CPU time of the watching server and of a `--no-watch` one, both idle, over the same
/// `seconds`.
async fn idle(
    quarry: &Path,
    watching: &Served,
    unwatched_root: &Path,
    seconds: u64,
) -> Result<Idle> {
    let unwatched = Served::start(quarry, unwatched_root, &["--no-watch"]).await?;
    unwatched.settled().await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pids = [watching.pid()?, unwatched.pid()?];
    let before = [cpu_seconds(pids[0])?, cpu_seconds(pids[1])?];
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let after = [cpu_seconds(pids[0])?, cpu_seconds(pids[1])?];
    unwatched.client.cancel().await?;
    Ok(Idle {
        seconds,
        watching_cpu_s: after[0] - before[0],
        unwatched_cpu_s: after[1] - before[1],
    })
}

/// Edits every `soak_edit_every` seconds while `soak_clients` callers search without pause,
/// for `soak_minutes`; resident memory sampled every ten seconds, and measured at rest (the
/// callers paused, the index settled, ten seconds later) after the first minute and at the
/// end, so that the two are alike.
async fn soak(served: &Served, files: &[PathBuf], args: &FollowArgs) -> Result<Soak> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let duration = Duration::from_secs_f64(args.soak_minutes * 60.0);
    let pid = served.pid()?;
    let (paused, stopped) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let mut callers = Vec::new();
    for c in 0..args.soak_clients {
        let peer = served.client.peer().clone();
        let (paused, stopped) = (Arc::clone(&paused), Arc::clone(&stopped));
        callers.push(tokio::spawn(async move {
            let (mut millis, mut errors) = (Vec::new(), Vec::new());
            let mut i = c;
            while !stopped.load(Ordering::Relaxed) {
                if paused.load(Ordering::Relaxed) {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                let query = QUERIES[i % QUERIES.len()];
                let called = Instant::now();
                match call(&peer, "semantic_search", json!({"query": query})).await {
                    Ok(_) => millis.push(called.elapsed().as_secs_f64() * 1000.0),
                    Err(error) => errors.push(format!("{query}: {error:#}")),
                }
                i += 1;
            }
            (millis, errors)
        }));
    }
    // The server at rest: callers paused, the index settled, ten seconds on.
    let at_rest = || async {
        paused.store(true, Ordering::Relaxed);
        served.settled().await?;
        tokio::time::sleep(Duration::from_secs(10)).await;
        let rss = rss_kib(pid);
        paused.store(false, Ordering::Relaxed);
        rss
    };
    let started = Instant::now();
    let (mut edits, mut active, mut samples) = (0, Duration::ZERO, Vec::new());
    let mut first_minute = None;
    let mut next_sample = Duration::ZERO;
    while active < duration {
        let edit_started = Instant::now();
        if active >= next_sample {
            samples.push((active.as_secs_f64(), rss_kib(pid)?));
            next_sample += Duration::from_secs(10);
        }
        if first_minute.is_none() && active >= Duration::from_secs(60) {
            first_minute = Some(at_rest().await?);
            continue;
        }
        append_probe(&files[edits % files.len()], &format!("soak{edits}"))?;
        edits += 1;
        tokio::time::sleep(Duration::from_secs_f64(args.soak_edit_every)).await;
        active += edit_started.elapsed();
    }
    let end = at_rest().await?;
    stopped.store(true, Ordering::Relaxed);
    let (mut search_ms, mut errors) = (Vec::new(), Vec::new());
    for caller in callers {
        let (millis, failed) = caller.await?;
        search_ms.extend(millis);
        errors.extend(failed);
    }
    samples.push((active.as_secs_f64(), end));
    Ok(Soak {
        minutes: args.soak_minutes,
        clients: args.soak_clients,
        edit_every: args.soak_edit_every,
        edits,
        searches: search_ms.len(),
        errors,
        search_ms,
        rss_first_minute_kib: first_minute.unwrap_or(end),
        rss_end_kib: end,
        rss_samples: samples,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

impl Followed {
    pub fn json(&self) -> Value {
        let edits = &self.edits;
        let (l50, l95) = summary(&edits.lexical_ms);
        let (v50, v95) = summary(&edits.vector_ms);
        let (cpu, read, written) = edits.cost.per_edit();
        let quantiles = |values: &[f64]| {
            let (p50, p95) = summary(values);
            json!({"p50": p50, "p95": p95})
        };
        let mut value = json!({
            "edits": edits.lexical_ms.len(),
            "files_edited": self.files,
            "edit_to_visible_ms": {"p50": l50, "p95": l95, "all": edits.lexical_ms},
            "edit_to_vector_ms": {"p50": v50, "p95": v95, "all": edits.vector_ms},
            "index_run_ms": quantiles(&edits.run_ms),
            "per_edit_unpolled": {
                "edits": edits.cost.edits,
                "server_cpu_ms": cpu,
                "read_kib": read,
                "written_kib": written,
            },
            "idle": {
                "seconds": self.idle.seconds,
                "watching_cpu_s": self.idle.watching_cpu_s,
                "no_watch_cpu_s": self.idle.unwatched_cpu_s,
            },
        });
        if let Some(soak) = &self.soak {
            let (s50, s95) = summary(&soak.search_ms);
            value["soak"] = json!({
                "minutes": soak.minutes,
                "clients": soak.clients,
                "edit_every_s": soak.edit_every,
                "edits": soak.edits,
                "searches": soak.searches,
                "errors": soak.errors,
                "search_ms": {"p50": s50, "p95": s95},
                "rss_kib": {"after_first_minute": soak.rss_first_minute_kib,
                    "end": soak.rss_end_kib, "samples": soak.rss_samples},
                "rss_end_over_first_minute": soak.rss_end_kib as f64
                    / soak.rss_first_minute_kib as f64,
                "wall_s": soak.wall_s,
            });
        }
        value
    }

    pub fn markdown(&self) -> String {
        let edits = &self.edits;
        let (l50, l95) = summary(&edits.lexical_ms);
        let (v50, v95) = summary(&edits.vector_ms);
        let (x50, x95) = summary(&edits.run_ms);
        let (cpu, read, written) = edits.cost.per_edit();
        let idle = &self.idle;
        let mut text = format!(
            "## Following the working tree\n\n{} edits, each a comment line with a new word \
             appended to one of the {} largest source files of a copy of the repository, with \
             a watching server over it; an edit is visible when a lexical `semantic_search` for \
             the word returns the edited file's new line (searching without pause from the \
             write), and its vector is in when `index` status shows every chunk embedded.\n\n\
             | | p50 ms | p95 ms |\n|---|---:|---:|\n\
             | edit to visible (lexical) | {l50:.1} | {l95:.1} |\n\
             | edit to vector in | {v50:.1} | {v95:.1} |\n\n\
             An edit's index run took {x50:.1} ms (p50; p95 {x95:.1} ms) by its report. \
             Then {} more edits, one a second with nothing else asked of the server, cost it \
             per edit {cpu:.1} ms of CPU, {read:.0} KiB read and {written:.0} KiB written \
             (`rchar`, `wchar` of `/proc/PID/io`).\n\n\
             Idle for {} s, in the same minute: the watching server spent {:.3} s of CPU, a \
             `--no-watch` server {:.3} s.\n",
            edits.lexical_ms.len(),
            self.files,
            edits.cost.edits,
            idle.seconds,
            idle.watching_cpu_s,
            idle.unwatched_cpu_s,
        );
        if let Some(soak) = &self.soak {
            let (s50, s95) = summary(&soak.search_ms);
            text.push_str(&format!(
                "\n## Soak\n\n{:.1} minutes: an edit every {} s ({} edits) while {} callers \
                 searched without pause over the server's session ({} searches, p50 {s50:.1} ms, \
                 p95 {s95:.1} ms). Resident memory is measured at rest both times: the callers \
                 paused, the index settled, 10 s later.\n\n\
                 | errors | RSS after the first minute | RSS at the end | end / first minute |\n\
                 |---:|---:|---:|---:|\n| {} | {:.1} MiB | {:.1} MiB | {:.3} |\n",
                soak.minutes,
                soak.edit_every,
                soak.edits,
                soak.clients,
                soak.searches,
                soak.errors.len(),
                soak.rss_first_minute_kib as f64 / 1024.0,
                soak.rss_end_kib as f64 / 1024.0,
                soak.rss_end_kib as f64 / soak.rss_first_minute_kib as f64,
            ));
        }
        text
    }
}
