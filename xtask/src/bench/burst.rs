//! `cargo xtask bench mcp`'s burst: 1,000 `semantic_search` calls sent at once to a
//! settled `quarry mcp`, every one answered or refused as busy, with the server's resident
//! memory and threads at rest, at their peak during the burst, and 10 s after it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::bench::follow::{QUERIES, Served, call, rss_kib};

/// How long the server rests before its memory is read, and after the burst.
const REST: Duration = Duration::from_secs(10);

/// What the burst saw.
pub struct Burst {
    calls: usize,
    answered: usize,
    busy: usize,
    failed: Vec<String>,
    seconds: f64,
    rest_kib: u64,
    peak_kib: u64,
    after_kib: u64,
    /// Resident memory each second after the burst's last answer.
    after: Vec<u64>,
    threads_rest: u64,
    threads_peak: u64,
}

/// Runs the burst against a `quarry mcp --no-index --no-watch` over `root` (indexed).
pub fn run(quarry: &Path, root: &Path, calls: usize) -> Result<Burst> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let served = Served::start(quarry, root, &["--no-index", "--no-watch"]).await?;
        let peer = served.client.peer().clone();
        // Warm: the model loaded, the index's pages read.
        for query in QUERIES {
            call(&peer, "semantic_search", json!({ "query": query })).await?;
        }
        tokio::time::sleep(REST).await;
        let pid = served.pid()?;
        let (rest_kib, threads_rest) = (rss_kib(pid)?, threads(pid)?);

        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let done = Arc::clone(&done);
            std::thread::spawn(move || -> Result<(u64, u64)> {
                let (mut rss, mut threads_seen) = (0, 0);
                while !done.load(Ordering::SeqCst) {
                    rss = rss.max(rss_kib(pid)?);
                    threads_seen = threads_seen.max(threads(pid)?);
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok((rss, threads_seen))
            })
        };
        let started = Instant::now();
        let mut pending = tokio::task::JoinSet::new();
        for i in 0..calls {
            let peer = peer.clone();
            let arguments = json!({ "query": QUERIES[i % QUERIES.len()] });
            let params = CallToolRequestParams::new("semantic_search")
                .with_arguments(arguments.as_object().cloned().unwrap_or_default());
            pending.spawn(async move { peer.call_tool(params).await });
        }
        let (mut answered, mut busy, mut failed) = (0, 0, Vec::new());
        while let Some(outcome) = pending.join_next().await {
            match outcome? {
                Ok(result) if result.is_error != Some(true) => answered += 1,
                Ok(result) => {
                    let text = format!("{:?}", result.content);
                    match text.contains("busy") {
                        true => busy += 1,
                        false => failed.push(text),
                    }
                }
                Err(error) => failed.push(error.to_string()),
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        done.store(true, Ordering::SeqCst);
        let (peak_kib, threads_peak) = sampler.join().expect("the sampler does not panic")?;
        // Each second of the rest after the burst, and as long again: the reading at REST is
        // the measure, the rest shows the trend.
        let mut after = Vec::new();
        for _ in 0..2 * REST.as_secs() {
            tokio::time::sleep(Duration::from_secs(1)).await;
            after.push(rss_kib(pid)?);
        }
        let after_kib = after[REST.as_secs() as usize - 1];
        served.client.cancel().await?;
        Ok(Burst {
            calls,
            answered,
            busy,
            failed,
            seconds,
            rest_kib,
            peak_kib: peak_kib.max(rest_kib),
            after_kib,
            after,
            threads_rest,
            threads_peak: threads_peak.max(threads_rest),
        })
    })
}

/// How many threads a process runs, from `/proc`.
fn threads(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("Threads:"))
        .context("Threads")?;
    Ok(line["Threads:".len()..].trim().parse()?)
}

impl Burst {
    pub fn json(&self) -> Value {
        json!({
            "calls": self.calls,
            "answered": self.answered,
            "busy": self.busy,
            "failed": self.failed,
            "seconds": self.seconds,
            "rss_kib": {"rest": self.rest_kib, "peak": self.peak_kib, "after": self.after_kib,
                "each_second_after": self.after},
            "peak_over_rest": self.peak_kib as f64 / self.rest_kib as f64,
            "after_over_rest": self.after_kib as f64 / self.rest_kib as f64,
            "threads": {"rest": self.threads_rest, "peak": self.threads_peak},
        })
    }

    pub fn markdown(&self) -> String {
        let mib = |kib: u64| kib as f64 / 1024.0;
        format!(
            "## A burst\n\n{} `semantic_search` calls sent at once (rmcp's client, one stdio \
             session) to a settled server (`--no-index --no-watch`), after {} s at rest: {} \
             answered, {} refused as busy, {} failed, in {:.1} s. Resident memory is sampled \
             every 10 ms during the burst, and read again {} s after its last answer.\n\n\
             | | at rest | peak | {} s after | peak / rest | after / rest |\n\
             |---|---:|---:|---:|---:|---:|\n\
             | RSS | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.2} | {:.3} |\n\
             | threads | {} | {} | | | |\n",
            self.calls,
            REST.as_secs(),
            self.answered,
            self.busy,
            self.failed.len(),
            self.seconds,
            REST.as_secs(),
            REST.as_secs(),
            mib(self.rest_kib),
            mib(self.peak_kib),
            mib(self.after_kib),
            self.peak_kib as f64 / self.rest_kib as f64,
            self.after_kib as f64 / self.rest_kib as f64,
            self.threads_rest,
            self.threads_peak,
        )
    }
}
