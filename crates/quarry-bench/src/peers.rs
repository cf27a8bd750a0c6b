//! Peer arms: other search tools answering the same cases in the same run, so that quarry
//! is measured against them on one machine at one time.
//!
//! - [`SemblePeer`]: semble (PyPI), driven through `bench-suite/peer_semble.py` in a virtual
//!   environment of its own; one process per corpus indexes it cold and answers every case.
//! - [`ripgrep`]: `rg` over the query's words; matching lines ranked by how many distinct
//!   words each holds.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Deserialize;

use crate::BenchError;
use crate::cases::Case;
use crate::metrics::{DEPTH, Location};

/// How to run semble: a Python with `semble` installed, the driver script, and the
/// directory of the stand-in model the script builds on first use.
#[derive(Debug, Clone)]
pub struct SemblePeer {
    /// The virtual environment's interpreter.
    pub python: PathBuf,
    /// `bench-suite/peer_semble.py`.
    pub script: PathBuf,
    /// Where the stand-in model lives.
    pub model_dir: PathBuf,
}

/// One peer's answers for one corpus.
#[derive(Debug, Clone, Default)]
pub struct PeerAnswers {
    /// Seconds the peer took to index the corpus cold (`None` for a tool without an index).
    pub index_seconds: Option<f64>,
    /// Per case id: the hits and the query's wall time in milliseconds.
    pub answers: HashMap<String, (Vec<Location>, f64)>,
}

#[derive(Deserialize)]
struct SembleResponse {
    corpora: Vec<SembleCorpus>,
}

#[derive(Deserialize)]
struct SembleCorpus {
    index_seconds: f64,
    results: Vec<SembleResult>,
}

#[derive(Deserialize)]
struct SembleResult {
    id: String,
    seconds: f64,
    hits: Vec<Location>,
}

impl SemblePeer {
    /// semble's answers to `cases` on the corpus at `root` (indexed cold, in one process).
    pub fn answer(
        &self,
        corpus: &str,
        root: &Path,
        cases: &[&Case],
    ) -> Result<PeerAnswers, BenchError> {
        let failed = |message: String| BenchError::Peer {
            peer: "semble".into(),
            corpus: corpus.into(),
            message,
        };
        let request = serde_json::json!({
            "k": DEPTH,
            "corpora": [{
                "name": corpus,
                "root": root,
                "queries": cases
                    .iter()
                    .map(|c| serde_json::json!({"id": c.id, "query": c.query}))
                    .collect::<Vec<_>>(),
            }],
        });
        let mut child = Command::new(&self.python)
            .arg(&self.script)
            .arg("--model-dir")
            .arg(&self.model_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| failed(format!("could not run {}: {e}", self.python.display())))?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        stdin
            .write_all(request.to_string().as_bytes())
            .map_err(|e| failed(format!("writing the request: {e}")))?;
        drop(stdin);
        let output = child
            .wait_with_output()
            .map_err(|e| failed(format!("waiting for the script: {e}")))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(failed(format!(
                "{} exited with {}: {}",
                self.script.display(),
                output.status,
                tail.join("\n")
            )));
        }
        let response: SembleResponse = serde_json::from_slice(&output.stdout)
            .map_err(|e| failed(format!("the script printed no response: {e}")))?;
        let corpus = response
            .corpora
            .into_iter()
            .next()
            .ok_or_else(|| failed("the response names no corpus".into()))?;
        Ok(PeerAnswers {
            index_seconds: Some(corpus.index_seconds),
            answers: corpus
                .results
                .into_iter()
                .map(|r| (r.id, (r.hits, r.seconds * 1000.0)))
                .collect(),
        })
    }
}

/// ripgrep's answer to `query` on the corpus at `root`: every line that holds one of the
/// query's words (identifiers whole and in parts, English function words and words under
/// three letters left out; case-insensitive, fixed strings), ranked by how many distinct
/// words the line holds, then by how many its file holds, then path and line; the first
/// [`DEPTH`] lines, each a one-line hit, from the `rg` at `program`. Also the wall time in
/// milliseconds.
pub fn ripgrep(
    program: &Path,
    root: &Path,
    query: &str,
) -> Result<(Vec<Location>, f64), BenchError> {
    let failed = |message: String| BenchError::Peer {
        peer: "ripgrep".into(),
        corpus: root.display().to_string(),
        message,
    };
    let patterns = grep_words(query);
    let started = Instant::now();
    if patterns.is_empty() {
        return Ok((Vec::new(), 0.0));
    }
    let mut rg = Command::new(program);
    rg.current_dir(root)
        .args([
            "--line-number",
            "--ignore-case",
            "--fixed-strings",
            "--null",
        ])
        .args(["--no-heading", "--with-filename", "--color", "never"])
        .args(["--glob", "!.quarry/"]);
    for pattern in &patterns {
        rg.arg("-e").arg(pattern);
    }
    let output = rg.arg(".").output().map_err(|e| {
        failed(format!(
            "could not run {}: {e} (install ripgrep, or name its rg)",
            program.display()
        ))
    })?;
    // 1: nothing matched.
    if !output.status.success() && output.status.code() != Some(1) {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(failed(format!("rg failed: {}", stderr.trim())));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines: Vec<(String, usize, usize)> = Vec::new();
    let mut per_file: HashMap<String, std::collections::HashSet<usize>> = HashMap::new();
    for line in text.lines() {
        let Some((path, rest)) = line.split_once('\0') else {
            continue;
        };
        let Some((number, content)) = rest.split_once(':') else {
            continue;
        };
        let Ok(number) = number.parse::<usize>() else {
            continue;
        };
        let path = path.strip_prefix("./").unwrap_or(path).to_owned();
        let content = content.to_lowercase();
        let found: Vec<usize> = (0..patterns.len())
            .filter(|&i| content.contains(&patterns[i]))
            .collect();
        per_file.entry(path.clone()).or_default().extend(&found);
        lines.push((path, number, found.len()));
    }
    lines.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then_with(|| per_file[&b.0].len().cmp(&per_file[&a.0].len()))
            .then_with(|| a.0.cmp(&b.0))
            .then(a.1.cmp(&b.1))
    });
    let hits = lines
        .into_iter()
        .take(DEPTH)
        .map(|(path, line, _)| Location {
            path,
            start_line: line,
            end_line: line,
        })
        .collect();
    Ok((hits, started.elapsed().as_secs_f64() * 1000.0))
}

/// The words ripgrep looks for: each identifier of the query, lowercase, and its parts,
/// without English function words and words under three letters.
fn grep_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for (start, end) in quarry_text::identifiers(query) {
        let identifier = &query[start..end];
        let whole = std::iter::once(identifier.to_lowercase());
        let parts = quarry_text::words(identifier);
        for word in whole.chain(parts) {
            if word.chars().count() >= 3
                && !quarry_text::is_stopword(&word)
                && !words.contains(&word)
            {
                words.push(word);
            }
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grep_words_are_topical() {
        assert_eq!(
            grep_words("where is send_from_directory called?"),
            ["send_from_directory", "send", "directory", "called"]
        );
        assert!(grep_words("is it a").is_empty());
    }

    #[test]
    fn ripgrep_ranks_lines_by_distinct_words() {
        let rg = quarry_testkit::ripgrep();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/a.rs"),
            "fn parse() {}\nfn parse_config(config: &str) {}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("src/b.rs"), "// config\n").unwrap();
        let (hits, _) = ripgrep(&rg, dir.path(), "parse config").unwrap();
        let places: Vec<(&str, usize)> = hits
            .iter()
            .map(|h| (h.path.as_str(), h.start_line))
            .collect();
        assert_eq!(places, [("src/a.rs", 2), ("src/a.rs", 1), ("src/b.rs", 1)]);
        assert!(
            ripgrep(&rg, dir.path(), "nothing matches zzzq")
                .unwrap()
                .0
                .is_empty()
        );
    }
}
