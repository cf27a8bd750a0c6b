//! The report's markdown.

use std::fmt::Write as _;

use serde_json::Value;

use super::{
    CHUNKS_PER_FILE, EF_SWEEP, FILES_PER_COMMIT, FILTER_GLOBS, FILTERED_QUERIES, K, SCORE_EPSILON,
};

fn num(value: &Value) -> f64 {
    value.as_f64().unwrap_or(f64::NAN)
}

pub(super) fn markdown(report: &Value) -> String {
    let mut out = String::new();
    let p = &report["parameters"];
    let _ = writeln!(out, "# Store benchmark\n");
    let _ = writeln!(
        out,
        "- commit {}, {} cores; {} vectors x {} dimensions, {} queries, k = {}",
        report["commit"].as_str().unwrap_or("?"),
        report["cores"],
        report["vectors"],
        report["dimensions"],
        report["queries"],
        report["k"]
    );
    let _ = writeln!(
        out,
        "- HNSW (hnsw_rs 0.3.5): max connections {}, ef_construction {}, max layers {}; \
         each build calibrates on {} held-out vectors: beams from {} doubling to at most {} \
         until recall@10 reaches {} or costs more than the in-memory scan, which answers then; \
         exact database scan below {} chunks; graph rebuilt past {} tombstones",
        p["max_connections"],
        p["ef_construction"],
        p["max_layers"],
        p["calibration_queries"],
        p["ef_search"],
        p["max_ef"],
        p["recall_target"],
        p["exact_scan_below"],
        p["tombstone_rebuild_fraction"]
    );
    let _ = writeln!(
        out,
        "- stored as files of {CHUNKS_PER_FILE} chunks (`src/dir<f/100>/file<f>.rs`), \
         {FILES_PER_COMMIT} files per commit; load average at start / end: {} / {}",
        report["load_average"]["start"].as_str().unwrap_or("?"),
        report["load_average"]["end"].as_str().unwrap_or("?")
    );
    let _ = writeln!(
        out,
        "- strategies: *calibrated* is `search_dense` as users get it; *graph* forces the graph \
         at the calibrated beam (the widest tried if none reached the target), *scan* the \
         in-memory scan; the truth and the latency reference is `search_exact`, a scan of the \
         database. Wider beams: asking the graph for ef results (beam max(calibrated, ef)) and \
         keeping the first {K} (the latency includes returning ef results); filtered rows use \
         the first {FILTERED_QUERIES} queries; a hit counts as found when it scores at least the exact \
         {K}th score - {SCORE_EPSILON} (identical vectors tie; the exact scan breaks ties by \
         id), recall by id in parentheses"
    );
    let datasets = report["datasets"].as_array().cloned().unwrap_or_default();
    for d in &datasets {
        let _ = writeln!(
            out,
            "- **{}**: {}",
            d["dataset"].as_str().unwrap_or("?"),
            d["description"].as_str().unwrap_or("")
        );
        if let Some(e) = d["embedding"].as_object() {
            let cached = if e.get("cached").and_then(Value::as_bool) == Some(true) {
                " (cached from an earlier run)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  - embedding {} texts took {:.0} s, {:.1} texts/s{cached} ({})",
                e.get("texts").unwrap_or(&Value::Null),
                num(e.get("seconds").unwrap_or(&Value::Null)),
                num(e.get("texts_per_s").unwrap_or(&Value::Null)),
                e.get("runtime").and_then(Value::as_str).unwrap_or("")
            );
        }
    }
    let _ = writeln!(out);

    if !datasets.is_empty() {
        let _ = write!(out, "| |");
        for d in &datasets {
            let _ = write!(out, " {} |", d["dataset"].as_str().unwrap_or("?"));
        }
        let _ = write!(out, "\n|---|");
        for _ in &datasets {
            let _ = write!(out, "---:|");
        }
        let _ = writeln!(out);
        let mut row = |label: String, cell: &dyn Fn(&Value) -> String| {
            let _ = write!(out, "| {label} |");
            for d in &datasets {
                let _ = write!(out, " {} |", cell(d));
            }
            let _ = writeln!(out);
        };
        let ms_pair = |v: &Value| format!("{:.2} / {:.2} ms", num(&v["p50"]), num(&v["p95"]));
        row("write (put_file + commit)".into(), &|d| {
            format!(
                "{:.1} s, {:.0} chunks/s",
                num(&d["write"]["seconds"]),
                num(&d["write"]["chunks_per_s"])
            )
        });
        row(
            "checkpoint = HNSW build + calibration + save".into(),
            &|d| format!("{:.1} s", num(&d["checkpoint_s"])),
        );
        row(
            "index on disk per chunk (redb / HNSW / lexical)".into(),
            &|d| {
                let s = &d["size"];
                format!(
                    "{:.0} B ({:.0} / {:.0} / {:.0}); raw vector {} B",
                    num(&s["per_chunk"]),
                    num(&s["redb_per_chunk"]),
                    num(&s["hnsw_per_chunk"]),
                    num(&s["lexical_per_chunk"]),
                    s["raw_vector"]
                )
            },
        );
        row("distinct vectors".into(), &|d| {
            format!("{} of {}", d["distinct_vectors"], d["vectors"])
        });
        row(
            "calibration: in-memory scan; beams tried (recall, ms); chosen".into(),
            &|d| {
                let c = &d["calibration"];
                let trials: Vec<String> = c["trials"]
                    .as_array()
                    .map(|t| {
                        t.iter()
                            .map(|t| {
                                format!(
                                    "{}: {:.3}, {:.1}",
                                    t["ef"],
                                    num(&t["recall"]),
                                    num(&t["ms"])
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                format!(
                    "{:.1} ms; {}; **{}**",
                    num(&c["scan_ms"]),
                    trials.join("; "),
                    c["chosen_ef"]
                        .as_u64()
                        .map_or("scan".to_owned(), |ef| format!("ef {ef}"))
                )
            },
        );
        let recall_cell = |m: &Value| {
            let r = &m["recall"];
            format!(
                "{:.4} ({:.4}), {} under 0.9; {}",
                num(&r["mean"]),
                num(&r["by_id"]),
                r["below_0_9"],
                ms_pair(&m["ms"])
            )
        };
        for (key, label) in [
            ("calibrated", "**search_dense as calibrated**"),
            ("graph", "graph at the calibrated beam"),
            ("scan", "in-memory scan"),
        ] {
            row(
                format!("{label}: recall@{K} (by id), queries under 0.9; p50 / p95"),
                &|d| recall_cell(&d["search"][key]),
            );
        }
        row(
            "database scan (`search_exact`, the truth) p50 / p95".into(),
            &|d| ms_pair(&d["exact_ms"]),
        );
        row("database scan p50 / calibrated p50".into(), &|d| {
            format!(
                "{:.0}x",
                num(&d["exact_ms"]["p50"]) / num(&d["search"]["calibrated"]["ms"]["p50"])
            )
        });
        for (i, ef) in EF_SWEEP.iter().enumerate() {
            row(format!("graph, beam {ef}: recall@{K} (by id), p50"), &|d| {
                let s = &d["ef_sweep"][i];
                format!(
                    "{:.4} ({:.4}), {:.2} ms",
                    num(&s["recall"]["mean"]),
                    num(&s["recall"]["by_id"]),
                    num(&s["ms"]["p50"])
                )
            });
        }
        for (i, glob) in FILTER_GLOBS.iter().enumerate() {
            row(
                format!(
                    "filter `{glob}`: admitted; calibrated recall, p50; graph recall, p50; \
                     database scan p50"
                ),
                &|d| {
                    let f = &d["filtered"][i];
                    format!(
                        "{:.1}%; {:.4}, {:.2} ms; {:.4}, {:.2} ms; {:.1} ms",
                        100.0 * num(&f["admitted_fraction"]),
                        num(&f["calibrated"]["recall"]["mean"]),
                        num(&f["calibrated"]["ms"]["p50"]),
                        num(&f["graph"]["recall"]["mean"]),
                        num(&f["graph"]["ms"]["p50"]),
                        num(&f["exact_ms"]["p50"])
                    )
                },
            );
        }
        row(
            "reopen: Store::open, first search (loads graph), next".into(),
            &|d| {
                let r = &d["reopen"];
                format!(
                    "{:.0} / {:.0} / {:.2} ms",
                    num(&r["open_ms"]),
                    num(&r["first_search_ms"]),
                    num(&r["second_search_ms"])
                )
            },
        );
        row(
            "re-index 1 file (10 chunks): put_file + commit".into(),
            &|d| format!("{:.1} ms", num(&d["reindex"]["put_file_commit_ms"])),
        );
        row(
            "next search (graph catches up: +10 nodes, 10 tombstones)".into(),
            &|d| format!("{:.1} ms", num(&d["reindex"]["next_search_ms"])),
        );
        row("full checkpoint / (commit + catch-up)".into(), &|d| {
            format!("{:.0}x", num(&d["reindex"]["full_checkpoint_over_reindex"]))
        });
        row(
            "after the change (10 tombstones): calibrated recall, p50; graph recall, p50; \
             database scan p50"
                .into(),
            &|d| {
                let a = &d["reindex"]["after"];
                format!(
                    "{:.4}, {:.2} ms; {:.4}, {:.2} ms; {:.1} ms ({} queries)",
                    num(&a["calibrated"]["recall"]["mean"]),
                    num(&a["calibrated"]["ms"]["p50"]),
                    num(&a["graph"]["recall"]["mean"]),
                    num(&a["graph"]["ms"]["p50"]),
                    num(&a["exact_ms"]["p50"]),
                    a["queries"]
                )
            },
        );
        row("checkpoint after the change (save)".into(), &|d| {
            format!("{:.1} s", num(&d["reindex"]["checkpoint_after_s"]))
        });
    }

    let c = &report["change_detection"];
    let _ = writeln!(
        out,
        "\nChange detection, {} files in 20 x 10 directories, nothing changed ({} runs after a \
         warm-up; reference: the walk alone):\n",
        c["files"], c["runs"]
    );
    let _ = writeln!(out, "| | min | p50 | max | p50 / walk p50 |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    let walk_p50 = num(&c["walk_ms"]["p50"]);
    for (label, key) in [
        ("walk alone (reference)", "walk_ms"),
        ("`git diff --name-only <commit>` alone", "git_diff_ms"),
        (
            "**detect_changes**, git diff against the indexed commit",
            "detect_git_ms",
        ),
        (
            "detect_changes, git repository, no indexed commit",
            "detect_no_indexed_commit_ms",
        ),
        (
            "detect_changes, not a git repository",
            "detect_not_a_repository_ms",
        ),
    ] {
        let v = &c[key];
        let _ = writeln!(
            out,
            "| {label} | {:.1} ms | {:.1} ms | {:.1} ms | {:.2} |",
            num(&v["min"]),
            num(&v["p50"]),
            num(&v["max"]),
            num(&v["p50"]) / walk_p50
        );
    }
    let _ = writeln!(out, "\nWhole run: {:.0} s.", num(&report["run_seconds"]));
    out
}
