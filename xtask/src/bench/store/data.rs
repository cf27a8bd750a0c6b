//! The vectors and chunks `bench store` measures: random-normal, or real embeddings of registry sources.

use quarry_bench::stats::Rng;
use std::collections::HashSet;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use quarry_changes::content_hash;
use quarry_chunk::Chunker;
use quarry_embed::DEFAULT_MODEL;
use serde_json::{Value, json};

use crate::bench::common::reference_python;

use super::{DIMENSIONS, Data, REAL_BATCH, REAL_MAX_TOKENS, Vectors};

/// Unit vectors drawn from a standard normal distribution (Box-Muller), normalised.
pub(super) fn unit_vectors(rng: &mut Rng, count: usize) -> Vectors {
    // Uniform in (0, 1].
    let mut uniform = || ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let mut data = Vec::with_capacity(count * DIMENSIONS);
    let mut vector = vec![0f64; DIMENSIONS];
    for _ in 0..count {
        for pair in vector.chunks_mut(2) {
            let (r, theta) = (
                (-2.0 * uniform().ln()).sqrt(),
                std::f64::consts::TAU * uniform(),
            );
            pair[0] = r * theta.cos();
            if let Some(second) = pair.get_mut(1) {
                *second = r * theta.sin();
            }
        }
        let norm = vector.iter().map(|x| x * x).sum::<f64>().sqrt();
        data.extend(vector.iter().map(|x| (x / norm) as f32));
    }
    Vectors { data }
}

pub(super) fn random_data(count: usize, queries: usize) -> Data {
    Data {
        corpus: unit_vectors(&mut Rng::new(1), count),
        queries: unit_vectors(&mut Rng::new(2), queries),
        texts: None,
        description: format!(
            "{count} + {queries} queries, {DIMENSIONS}-d standard normal (SplitMix64, \
             Box-Muller), normalised; queries drawn independently"
        ),
        embedding: None,
    }
}

/// Real code chunks embedded with all-MiniLM-L6-v2 (see `bench-suite/store_vectors.py`),
/// cached in the user cache.
pub(super) fn real_data(root: &Path, count: usize, queries: usize, threads: usize) -> Result<Data> {
    let total = count + queries;
    let start = Instant::now();
    let mut sample = registry_chunks(total)?;
    eprintln!(
        "{total} distinct chunks from {} of {} registry files in {:.1} s",
        sample.files_used,
        sample.files_total,
        start.elapsed().as_secs_f64()
    );
    let texts = std::mem::take(&mut sample.chunks);
    let model = crate::model::provisioner().resolve(&DEFAULT_MODEL)?;
    let mut key = format!(
        "{}@{} tokens {REAL_MAX_TOKENS} batch {REAL_BATCH} bf16-autocast\0",
        model.name, model.revision
    );
    for (_, embed_text) in &texts {
        key.push_str(embed_text);
        key.push('\0');
    }
    let cache = directories::ProjectDirs::from("", "", "quarry")
        .context("no user cache directory")?
        .cache_dir()
        .join("bench");
    std::fs::create_dir_all(&cache)?;
    let stem = format!("real-{total}-{:016x}", content_hash(key.as_bytes()));
    let (vectors_path, summary_path) = (
        cache.join(format!("{stem}.f32")),
        cache.join(format!("{stem}.json")),
    );
    let mut embedding: Value = if vectors_path.exists() && summary_path.exists() {
        eprintln!("vectors cached in {}", vectors_path.display());
        let mut summary: Value = serde_json::from_slice(&std::fs::read(&summary_path)?)?;
        summary["cached"] = json!(true);
        summary
    } else {
        let summary = embed(root, &model.path, &texts, &vectors_path, threads)?;
        std::fs::write(&summary_path, serde_json::to_string_pretty(&summary)?)?;
        summary
    };
    embedding["model"] = json!(format!("{}@{}", model.name, model.revision));
    embedding["file"] = json!(vectors_path);
    let bytes = std::fs::read(&vectors_path)?;
    ensure!(
        bytes.len() == total * DIMENSIONS * 4,
        "{} holds {} bytes, not {}",
        vectors_path.display(),
        bytes.len(),
        total * DIMENSIONS * 4
    );
    let all: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    // The held-out queries are spread evenly over the sample.
    let held_out: HashSet<usize> = (0..queries).map(|j| j * total / queries).collect();
    let (mut corpus, mut query_data, mut corpus_texts) = (Vec::new(), Vec::new(), Vec::new());
    for (i, ((text, _), vector)) in texts.into_iter().zip(all.chunks(DIMENSIONS)).enumerate() {
        if held_out.contains(&i) {
            query_data.extend_from_slice(vector);
        } else {
            corpus.extend_from_slice(vector);
            corpus_texts.push(text);
        }
    }
    ensure!(query_data.len() == queries * DIMENSIONS && corpus.len() == count * DIMENSIONS);
    Ok(Data {
        corpus: Vectors { data: corpus },
        queries: Vectors { data: query_data },
        texts: Some(corpus_texts),
        description: format!(
            "{count} + {queries} held-out queries: distinct chunks (quarry-chunk, default \
             config) of {} of the {} .rs/.py files in the local cargo registry, files in hash \
             order of their paths; \
             embedded with {} by sentence-transformers on PyTorch (CPU), texts truncated to \
             {REAL_MAX_TOKENS} tokens, bf16 autocast, normalised in f32; stored with their \
             source text",
            sample.files_used, sample.files_total, DEFAULT_MODEL.name
        ),
        embedding: Some(embedding),
    })
}

/// Chunks of the cargo registry's sources.
struct Sample {
    /// (text, text to embed).
    chunks: Vec<(String, String)>,
    /// How many files were chunked for them.
    files_used: usize,
    /// How many `.rs` and `.py` files the registry holds.
    files_total: usize,
}

/// `total` distinct chunks, as (text, text to embed), from the `.rs` and `.py` files of the
/// local cargo registry taken in the order of their paths' hashes, so that the sample spreads
/// over many crates; also how many files were chunked, of how many.
fn registry_chunks(total: usize) -> Result<Sample> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| directories::BaseDirs::new().map(|d| d.home_dir().join(".cargo")))
        .context("no cargo home")?;
    let registry = home.join("registry/src");
    let mut files = Vec::new();
    for index in std::fs::read_dir(&registry)
        .with_context(|| format!("cannot read {}", registry.display()))?
    {
        let index = index?.path();
        if index.is_dir() {
            collect_sources(&index, &index, &mut files)?;
        }
    }
    files.sort_by_cached_key(|(relative, _)| (content_hash(relative.as_bytes()), relative.clone()));
    let chunker = Chunker::default();
    let (mut seen, mut chunks) = (HashSet::new(), Vec::with_capacity(total));
    let mut used = 0;
    for (relative, path) in &files {
        if chunks.len() == total {
            break;
        }
        used += 1;
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        let Ok(file_chunks) = chunker.chunk(relative, &bytes) else {
            continue;
        };
        for chunk in file_chunks {
            if chunks.len() < total && seen.insert(content_hash(chunk.embed_text.as_bytes())) {
                chunks.push((chunk.stored.text, chunk.embed_text));
            }
        }
    }
    ensure!(
        chunks.len() == total,
        "the cargo registry has only {} distinct chunks; fewer --vectors",
        chunks.len()
    );
    Ok(Sample {
        chunks,
        files_used: used,
        files_total: files.len(),
    })
}

/// The `.rs` and `.py` files under `dir`, as (path relative to `base`, path).
fn collect_sources(base: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            collect_sources(base, &path, files)?;
        } else if file_type.is_file() && path.extension().is_some_and(|e| e == "rs" || e == "py") {
            let relative = path
                .strip_prefix(base)?
                .to_string_lossy()
                .replace('\\', "/");
            files.push((relative, path));
        }
    }
    Ok(())
}

/// Runs `bench-suite/store_vectors.py` in the reference's virtual environment.
fn embed(
    root: &Path,
    model_dir: &Path,
    texts: &[(String, String)],
    out: &Path,
    threads: usize,
) -> Result<Value> {
    let python = reference_python()?;
    let input = tempfile::NamedTempFile::new()?;
    {
        let mut writer = BufWriter::new(input.as_file());
        for (_, embed_text) in texts {
            serde_json::to_writer(&mut writer, embed_text)?;
            writer.write_all(b"\n")?;
        }
        writer.flush()?;
    }
    eprintln!(
        "embedding {} texts with PyTorch ({threads} threads; progress below)",
        texts.len()
    );
    let output = Command::new(&python)
        .arg(root.join("bench-suite/store_vectors.py"))
        .arg("--model-dir")
        .arg(model_dir)
        .arg("--out")
        .arg(out)
        .arg("--input")
        .arg(input.path())
        .args(["--max-seq-length", &REAL_MAX_TOKENS.to_string()])
        .args(["--batch-size", &REAL_BATCH.to_string()])
        .args(["--threads", &threads.to_string()])
        .env("HF_HUB_OFFLINE", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    ensure!(
        output.status.success(),
        "store_vectors.py failed ({})",
        output.status
    );
    Ok(serde_json::from_slice(&output.stdout)?)
}
