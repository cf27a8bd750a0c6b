//! `bench embed`'s report: the rates, the ratios to the references (with the rounds' range),
//! query latency, peak RSS and each runtime's lowest cosine to the baseline, in Markdown and
//! JSON.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{BATCH_SIZES, CUDA_REFERENCE, LENGTHS, Measured, QUERY_RUNS, REFERENCES, Run};

/// What one `bench embed` run measured, as its report shows it.
pub(super) struct Report {
    /// The model, without the precision a fingerprint ends with.
    pub(super) model: String,
    /// The CPU, its SIMD flags and the level quarry ran at.
    pub(super) cpu: String,
    pub(super) texts: usize,
    /// The name of the runtime quarry runs by default on the backend measured: its default
    /// precision's on the CPU, or its GPU runtime.
    pub(super) default: String,
    /// The name of quarry's default precision's runtime on the CPU.
    pub(super) cpu_default: String,
    /// quarry on the GPU, its precisions on the CPU, then the references.
    pub(super) measured: Vec<Measured>,
    /// The references that could not run here (PyTorch on CUDA without a CUDA device).
    pub(super) unavailable: Vec<String>,
    /// How many times each runtime was measured (each rate is the median).
    pub(super) rounds: u16,
}

impl Report {
    fn find(&self, name: &str) -> Option<&Measured> {
        self.measured.iter().find(|runtime| runtime.name == name)
    }

    /// The runtime every runtime's vectors are compared with: PyTorch fp32, or without the
    /// references quarry's f32.
    pub(super) fn baseline(&self) -> Option<&Measured> {
        self.find(REFERENCES[0].1)
            .or_else(|| self.find("quarry f32"))
    }

    fn label(&self, runtime: &Measured) -> String {
        if runtime.name == self.default {
            format!("{} (default)", runtime.name)
        } else {
            runtime.name.clone()
        }
    }

    fn seq_per_s(&self, run: &Run) -> f64 {
        self.texts as f64 / run.seconds()
    }

    fn speed(&self, runtime: &Measured, length: usize, batch_size: usize) -> Option<f64> {
        runtime
            .run_at(length, batch_size)
            .map(|r| self.seq_per_s(r))
    }

    /// `ours`' rate over `theirs`' (medians), and over several rounds the range of the
    /// rounds' own ratios, each round's runtimes having run one after the other.
    fn ratio(&self, ours: &Run, theirs: &Run) -> String {
        let ratio = format!("{:.2}", theirs.seconds() / ours.seconds());
        if self.rounds < 2 {
            return ratio;
        }
        let (low, high) = ours
            .rounds
            .iter()
            .zip(&theirs.rounds)
            .map(|(ours, theirs)| theirs / ours)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), r| {
                (low.min(r), high.max(r))
            });
        format!("{ratio} ({low:.2}-{high:.2})")
    }

    /// The lowest cosine between `runtime`'s vectors and the baseline's for the same inputs
    /// (both are normalised).
    pub(super) fn lowest_cosine(&self, runtime: &Measured) -> Option<f64> {
        let vectors = |of: &Measured| -> Option<Vec<Vec<f64>>> {
            serde_json::from_value(of.result["embeddings"].clone()).ok()
        };
        let (ours, theirs) = (vectors(runtime)?, vectors(self.baseline()?)?);
        ours.iter()
            .zip(&theirs)
            .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>())
            .reduce(f64::min)
    }

    pub(super) fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Embedding benchmark\n");
        let _ = writeln!(out, "- model: {}", self.model);
        let _ = writeln!(out, "- CPU: {}", self.cpu);
        // One line per description: quarry's precisions share theirs.
        let mut described: Vec<(&str, Vec<String>)> = Vec::new();
        for runtime in &self.measured {
            let description = runtime.result["runtime"].as_str().unwrap_or("");
            match described.iter_mut().find(|(d, _)| *d == description) {
                Some((_, names)) => names.push(self.label(runtime)),
                None => described.push((description, vec![self.label(runtime)])),
            }
        }
        for (description, names) in described {
            let _ = writeln!(out, "- {}: {description}", names.join(", "));
        }
        let _ = writeln!(
            out,
            "- inputs: {} code chunks, each truncated to the length measured\n",
            self.texts
        );

        // Sequences per second, and the default against PyTorch fp32 and against the faster
        // of the reduced-precision references.
        let default = self.find(&self.default);
        // On a GPU, the default is also compared with quarry's on the CPU and PyTorch's on
        // CUDA; everywhere, with PyTorch fp32 on the CPU.
        let cpu_default = Some(&self.cpu_default)
            .filter(|name| **name != self.default)
            .and_then(|name| self.find(name));
        let compared: Vec<&Measured> = [cpu_default, self.find(CUDA_REFERENCE.1)]
            .into_iter()
            .chain([self.find(REFERENCES[0].1)])
            .flatten()
            .collect();
        let reduced: Vec<&Measured> = REFERENCES[1..]
            .iter()
            .filter_map(|(_, name)| self.find(name))
            .collect();
        let mut header: Vec<String> = vec!["tokens".into(), "batch".into()];
        header.extend(self.measured.iter().map(|r| self.label(r)));
        for theirs in &compared {
            header.push(format!("{} / {}", self.default, theirs.name));
        }
        if !reduced.is_empty() {
            let names: Vec<&str> = reduced.iter().map(|r| r.name.as_str()).collect();
            header.push(format!("{} / faster of {}", self.default, names.join(", ")));
        }
        let _ = writeln!(out, "Sequences per second:\n");
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---:|".repeat(header.len()));
        for length in LENGTHS {
            for batch_size in BATCH_SIZES {
                let speed = |runtime: &Measured| self.speed(runtime, length, batch_size);
                let ours = default.and_then(speed);
                let our_run = default.and_then(|ours| ours.run_at(length, batch_size));
                let mut row = vec![length.to_string(), batch_size.to_string()];
                row.extend(self.measured.iter().map(|runtime| {
                    speed(runtime).map_or("-".into(), |seq_per_s| format!("{seq_per_s:.1}"))
                }));
                for theirs in &compared {
                    let their_run = theirs.run_at(length, batch_size);
                    let ratio = our_run.zip(their_run).map(|(a, b)| self.ratio(a, b));
                    row.push(ratio.unwrap_or_else(|| "-".into()));
                }
                let faster = reduced
                    .iter()
                    .filter_map(|runtime| Some((speed(runtime)?, &runtime.name)))
                    .max_by(|a, b| a.0.total_cmp(&b.0));
                if let Some((theirs, name)) = faster {
                    let ratio = ours.map_or(f64::NAN, |ours| ours / theirs);
                    row.push(format!("{ratio:.2} ({name})"));
                }
                let _ = writeln!(out, "| {} |", row.join(" | "));
            }
        }

        let baseline = self.baseline().map_or("-", |b| b.name.as_str());
        let _ = writeln!(
            out,
            "\n| runtime | query p50 ms | query p95 ms | peak RSS MB | lowest cosine to {baseline} |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|");
        let number = |value: &Value| value.as_f64().unwrap_or(f64::NAN);
        for runtime in &self.measured {
            let result = &runtime.result;
            let cosine = self
                .lowest_cosine(runtime)
                .map_or("-".into(), |cosine| format!("{cosine:.6}"));
            let _ = writeln!(
                out,
                "| {} | {:.1} | {:.1} | {:.0} | {cosine} |",
                self.label(runtime),
                number(&result["query_ms"]["p50"]),
                number(&result["query_ms"]["p95"]),
                number(&result["peak_rss_mb"]),
            );
        }
        let _ = writeln!(
            out,
            "\nSequences per second: the {} texts in one call per row, after a warm-up batch, \
             tokenization included; quarry's batches are cut by their size alone (no token \
             budget), as the references' are. Query: one of 12 tokens, {QUERY_RUNS} runs after \
             warm-up. Peak RSS: each runtime's own process, loading included.",
            self.texts
        );
        if self.rounds > 1 {
            let _ = writeln!(
                out,
                "\nEach runtime was measured {} times, in turns (every runtime once, then every \
                 runtime again); each rate and query time is the median of its rounds, and a \
                 ratio's range (in parentheses) is that of the rounds' own ratios.",
                self.rounds
            );
        }
        for name in &self.unavailable {
            let _ = writeln!(
                out,
                "\n{name}: not measured, PyTorch found no CUDA device here."
            );
        }
        if self.find(REFERENCES[2].1).is_some() {
            let _ = writeln!(
                out,
                "\n{}: the model's transformer exported by torch.onnx, its weights quantised by \
                 `quantize_dynamic` (per channel, QInt8) in another process (not in its peak \
                 RSS); tokenization, mean pooling and normalisation as sentence-transformers' \
                 pipeline.",
                REFERENCES[2].1
            );
        }
        if let Some(f32) = self.find("quarry f32") {
            let (query, f32_weights) = (
                number(&f32.result["query_ms"]["p50"]),
                number(&f32.result["query_f32_ms"]["p50"]),
            );
            let _ = writeln!(
                out,
                "\nquarry f32's queries read half-precision copies of the weights (`embed_query`): \
                 p50 {query:.1} ms against {f32_weights:.1} ms with the f32 weights documents \
                 are embedded with (`embed_one`), in turns of ten runs: {:.2}x.",
                query / f32_weights
            );
        }
        out
    }

    pub(super) fn json(&self) -> Value {
        let runtimes: Vec<Value> = self
            .measured
            .iter()
            .map(|runtime| {
                let mut summary = runtime.result.clone();
                if let Some(fields) = summary.as_object_mut() {
                    fields.remove("embeddings");
                }
                summary["name"] = json!(runtime.name);
                summary["runs"] = runtime
                    .runs
                    .iter()
                    .map(|r| json!({"length": r.length, "batch_size": r.batch_size, "seconds": r.seconds(), "round_seconds": r.rounds, "seq_per_s": self.seq_per_s(r)}))
                    .collect();
                summary["lowest_cosine"] = json!(self.lowest_cosine(runtime));
                summary
            })
            .collect();
        json!({
            "model": self.model,
            "cpu": self.cpu,
            "texts": self.texts,
            "default": self.default,
            "rounds": self.rounds,
            "baseline": self.baseline().map(|b| &b.name),
            "runtimes": runtimes,
        })
    }
}
