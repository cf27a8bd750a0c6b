//! `quarry index` killed (SIGKILL) at random points of both phases: every search after a
//! kill answers correctly, and the index finished at last equals a clean build.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use quarry_engine::{ChunkId, Engine, EngineOptions};
use quarry_testkit::copy_dir;
use serde_json::Value;

mod support;

use support::{quarry, quarry_command, quarry_ok, text, without_vector_cache};

/// Kills per run of the test: half while files are read, half while chunks are embedded.
const KILLS: usize = 20;

/// A repository of every language's chunking fixture: a few hundred chunks, so that the
/// second phase commits several times.
fn repository() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/chunk");
    copy_dir(&fixtures, repo.path());
    // Every run embeds: with the machine's cache, the clean build would leave nothing for
    // the model to do after a kill.
    without_vector_cache(repo.path());
    repo
}

/// xorshift64*: a fixed sequence of kill points, no dependency.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Every file's chunk ids, and every chunk's vector.
type Contents = (BTreeMap<String, Vec<u128>>, BTreeMap<u128, Vec<f32>>);

fn contents(root: &Path) -> Contents {
    let engine = Engine::open(root, quarry_testkit::model(), EngineOptions::default()).unwrap();
    let store = engine.store();
    let mut files = BTreeMap::new();
    let mut vectors = BTreeMap::new();
    for file in store.files().unwrap() {
        for &id in &file.chunk_ids {
            let vector = store.vector(ChunkId(id)).unwrap();
            vectors.insert(
                id,
                vector.unwrap_or_else(|| panic!("{id:032x} has no vector")),
            );
        }
        files.insert(file.path, file.chunk_ids);
    }
    (files, vectors)
}

/// A search after a kill: it succeeds, its index covers every chunk (the first phase is
/// finished by the search itself if the kill cut it), and each result is the text of the
/// file at the lines it names.
fn check_search(root: &Path, chunks: u64) {
    let out = quarry(
        root,
        &["search", "parse the input", "--json", "--detail", "full"],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["coverage"]["chunks"], chunks, "{stderr}");
    let results = json["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for result in results {
        let path = result["path"].as_str().unwrap();
        let file = fs::read_to_string(root.join(path)).unwrap();
        let (start, end) = (
            result["start_line"].as_u64().unwrap() as usize,
            result["end_line"].as_u64().unwrap() as usize,
        );
        let lines: Vec<&str> = file.lines().skip(start - 1).take(end - start + 1).collect();
        let text = result["text"].as_str().unwrap();
        assert_eq!(
            text.trim_end(),
            lines.join("\n").trim_end(),
            "{path}:{start}-{end}"
        );
    }
}

#[test]
fn an_index_killed_anywhere_resumes_to_a_clean_build() {
    // The clean build, timed: where the first phase ends and the whole run ends.
    let clean = repository();
    let started = Instant::now();
    let out = quarry(clean.path(), &["index", "--json"]);
    let whole = started.elapsed();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let searchable = Duration::from_secs_f64(report["searchable_seconds"].as_f64().unwrap());
    // Before the first phase: the process starting and loading the model.
    let first_phase_ends = whole
        .saturating_sub(Duration::from_secs_f64(report["seconds"].as_f64().unwrap()))
        + searchable;
    let (clean_files, clean_vectors) = contents(clean.path());
    let chunks = clean_vectors.len() as u64;
    assert!(
        chunks > 200,
        "{chunks} chunks: the second phase should commit several times"
    );

    let repo = repository();
    let mut rng = Rng(0x5EED_0FC0_FFEE);
    let mut while_embedding = 0;
    for kill in 0..KILLS {
        // Even kills fall before the first phase ends, odd ones anywhere in the run.
        let window = if kill % 2 == 0 {
            first_phase_ends
        } else {
            whole
        };
        let at = window.mul_f64(rng.unit());
        while_embedding += usize::from(at > first_phase_ends);
        let mut child = quarry_command(repo.path())
            .args(["index", "--json"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(at);
        child.kill().unwrap();
        child.wait().unwrap();
        check_search(repo.path(), chunks);
    }
    eprintln!(
        "{chunks} chunks; clean build {whole:?}, first phase over after {first_phase_ends:?}; \
         {while_embedding} of {KILLS} kills in the second phase"
    );
    assert!(
        while_embedding >= 3,
        "too few kills while embedding: {while_embedding}"
    );
    quarry_ok(repo.path(), &["index", "--json"]);

    let (files, vectors) = contents(repo.path());
    assert_eq!(files, clean_files, "the same files with the same chunk ids");
    assert_eq!(
        vectors.keys().collect::<Vec<_>>(),
        clean_vectors.keys().collect::<Vec<_>>()
    );
    // Batches differ between a resumed run and a clean one, and so does the padding a
    // text shares; its vector does not, beyond float rounding.
    for (id, vector) in &vectors {
        let clean = &clean_vectors[id];
        let cosine: f32 = vector.iter().zip(clean).map(|(a, b)| a * b).sum();
        assert!(cosine > 0.99999, "{id:032x}: cosine {cosine}");
    }
}
