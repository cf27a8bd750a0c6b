//! The generated family: a function's doc comment is the query, the function is the
//! answer, and the comment is blanked out of the indexed copy of the corpus, so the query's
//! words cannot simply be found in the target.
//!
//! Doc comments are recognised in the chunk text the index stores: comment lines leading
//! a function or method (`///`, `/** */`, `/* */`, `//`) and, in Python, the docstring
//! after the `def` line. Blanking replaces the comment's lines with empty lines, so every
//! line number (and every case's span) stays valid.

use quarry_chunk::{ChunkKind, Language};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use quarry_store::StoredChunk;

use crate::BenchError;
use crate::cases::{Case, Category, Target};

/// Doc-comment cases drawn per corpus: enough to measure, few enough that re-embedding the
/// blanked functions stays cheap.
pub const PER_CORPUS: usize = 12;

/// The fewest words a doc comment's first paragraph needs to make a query.
const MIN_WORDS: usize = 6;
/// The most words of it kept (a query, not an essay).
const MAX_WORDS: usize = 40;

/// A generated case and the lines to blank for it.
#[derive(Debug, Clone, PartialEq)]
pub struct DocCase {
    /// The case (category [`Category::Doc`], id `DOC-01`...).
    pub case: Case,
    /// The doc comment's lines, 1-based and inclusive.
    pub comment: (usize, usize),
}

/// Up to `per_corpus` doc-comment cases from an index's chunks, spread evenly over the
/// documented functions in path and line order (the same cases every run).
pub fn doc_cases(chunks: &[StoredChunk], per_corpus: usize) -> Vec<DocCase> {
    let mut found: Vec<(&StoredChunk, Documented)> = chunks
        .iter()
        .filter(|c| matches!(c.kind, ChunkKind::Function | ChunkKind::Method))
        .filter_map(|c| Some((c, doc_comment(c)?)))
        .collect();
    found.sort_by(|a, b| (&a.0.path, a.0.start_line).cmp(&(&b.0.path, b.0.start_line)));
    // One case per query text: overloads and twins share their docs.
    let mut seen = std::collections::HashSet::new();
    found.retain(|(_, doc)| seen.insert(doc.query.clone()));
    let step = (found.len() as f64 / per_corpus as f64).max(1.0);
    (0..per_corpus.min(found.len()))
        .map(|i| &found[(i as f64 * step) as usize])
        .enumerate()
        .map(|(i, (chunk, doc))| DocCase {
            case: Case {
                id: format!("DOC-{:02}", i + 1),
                category: Category::Doc,
                query: doc.query.clone(),
                relevant: vec![Target {
                    path: chunk.path.clone(),
                    lines: Some(doc.answer),
                }],
                secondary: Vec::new(),
                shape: None,
            },
            comment: doc.comment,
        })
        .collect()
}

/// A documented function chunk, as a case: lines 1-based and inclusive.
#[derive(Debug, PartialEq)]
struct Documented {
    /// The doc comment's first paragraph.
    query: String,
    /// The comment's lines.
    comment: (usize, usize),
    /// The function's lines without the comment above it.
    answer: (usize, usize),
}

fn doc_comment(chunk: &StoredChunk) -> Option<Documented> {
    let lines: Vec<&str> = chunk.text.lines().collect();
    let (first, last, text) = if chunk.language == Language::Python {
        python_docstring(&lines)?
    } else {
        leading_comment(&lines)?
    };
    let query = first_paragraph(&text)?;
    let comment = (chunk.start_line + first, chunk.start_line + last);
    // In Python the docstring sits inside the function; elsewhere the answer starts below
    // the comment.
    let answer = match chunk.language {
        Language::Python => (chunk.start_line, chunk.end_line),
        _ => (comment.1 + 1, chunk.end_line),
    };
    Some(Documented {
        query,
        comment,
        answer,
    })
}

/// The comment lines (0-based, inclusive) leading `lines`, and their text without markers.
/// Attributes and decorators may sit among them; the declaration must follow.
fn leading_comment(lines: &[&str]) -> Option<(usize, usize, String)> {
    let mut range: Option<(usize, usize)> = None;
    let mut text = String::new();
    let mut in_block = false;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        let is_comment = in_block || trimmed.starts_with("//") || trimmed.starts_with("/*");
        if !is_comment {
            let attribute = trimmed.starts_with("#[") || trimmed.starts_with('@');
            if attribute && range.is_none() {
                continue;
            }
            break;
        }
        if trimmed.starts_with("/*") {
            in_block = true;
        }
        if in_block && trimmed.ends_with("*/") {
            in_block = false;
        }
        range = Some((range.map_or(i, |r| r.0), i));
        text.push_str(&strip_markers(trimmed));
        text.push('\n');
    }
    let (first, last) = range?;
    // The comment must lead the declaration, not be the whole chunk.
    (last + 1 < lines.len()).then_some((first, last, text))
}

/// The docstring's lines (0-based, inclusive) after the `def` line, and its text.
fn python_docstring(lines: &[&str]) -> Option<(usize, usize, String)> {
    let def = lines.iter().position(|l| {
        let t = l.trim_start();
        t.starts_with("def ") || t.starts_with("async def ")
    })?;
    // The signature may span lines; the body starts after the line ending in `:`.
    let body = def
        + lines[def..]
            .iter()
            .position(|l| l.trim_end().ends_with(':'))?
        + 1;
    let start = body + lines[body..].iter().position(|l| !l.trim().is_empty())?;
    let opening = lines[start]
        .trim_start()
        .trim_start_matches(['r', 'u', 'R', 'U']);
    let quote = ["\"\"\"", "'''"]
        .into_iter()
        .find(|q| opening.starts_with(q))?;
    let rest = &opening[3..];
    let (end, text) = match rest.find(quote) {
        Some(close) => (start, rest[..close].to_owned()),
        None => {
            let end = start + 1 + lines[start + 1..].iter().position(|l| l.contains(quote))?;
            let mut text = format!("{rest}\n");
            for line in &lines[start + 1..end] {
                text.push_str(line.trim());
                text.push('\n');
            }
            text.push_str(lines[end].split(quote).next().unwrap_or(""));
            (end, text)
        }
    };
    // Blanking must leave a body behind.
    lines[end + 1..]
        .iter()
        .any(|l| !l.trim().is_empty())
        .then_some((start, end, text))
}

/// A comment line without its markers (`///`, `//`, `/**`, `*`, `*/`) and rules
/// (`/* ===== */`).
fn strip_markers(line: &str) -> String {
    let mut s = line.trim();
    for marker in ["///", "//!", "//", "/**", "/*"] {
        if let Some(rest) = s.strip_prefix(marker) {
            s = rest;
            break;
        }
    }
    s = s.trim_end_matches("*/").trim();
    s = s.trim_start_matches('*').trim();
    s.trim_matches(|c| c == '=' || c == '-').trim().to_owned()
}

/// The first paragraph of prose, cut at [`MAX_WORDS`]; `None` if shorter than
/// [`MIN_WORDS`]. Stops at tags (`@param`), section headers (`Args:`) and code fences.
fn first_paragraph(text: &str) -> Option<String> {
    let mut words = Vec::new();
    for line in text.lines().map(str::trim) {
        let ends_paragraph = line.is_empty() && !words.is_empty();
        let section = line.starts_with('@')
            || line.starts_with("```")
            || line.starts_with("# ")
            || (line.ends_with(':') && line.split_whitespace().count() == 1);
        if ends_paragraph || section {
            break;
        }
        words.extend(line.split_whitespace().map(|w| w.replace('`', "")));
    }
    words.retain(|w| !w.is_empty());
    (words.len() >= MIN_WORDS).then(|| words[..words.len().min(MAX_WORDS)].join(" "))
}

/// Copies `from` (a corpus worktree, its index included) to `to` with the comments of
/// `cases` blanked out.
pub fn blank_comments(to: &Path, cases: &[DocCase]) -> Result<(), BenchError> {
    let mut by_file: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
    for doc in cases {
        by_file
            .entry(&doc.case.relevant[0].path)
            .or_default()
            .push(doc.comment);
    }
    for (file, ranges) in by_file {
        let path = to.join(file);
        let io = |source| BenchError::Io {
            path: path.clone(),
            source,
        };
        let text = fs::read_to_string(&path).map_err(io)?;
        let blanked: Vec<&str> = text
            .split('\n')
            .enumerate()
            .map(|(i, line)| {
                let blank = ranges.iter().any(|&(a, b)| (a..=b).contains(&(i + 1)));
                if blank { "" } else { line }
            })
            .collect();
        // A new file, not an edit in place: the worktree may share it with its source.
        fs::remove_file(&path).map_err(io)?;
        fs::write(&path, blanked.join("\n")).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(language: &str, start_line: usize, text: &str) -> StoredChunk {
        StoredChunk {
            id: start_line as u128,
            path: format!("src/f{start_line}.{language}"),
            language: language.parse().unwrap(),
            kind: ChunkKind::Function,
            name: Some("f".into()),
            container: Vec::new(),
            start_line,
            end_line: start_line + text.lines().count() - 1,
            text: text.into(),
        }
    }

    #[test]
    fn rust_doc_comments_become_queries_and_the_answer_starts_below_them() {
        let c = chunk(
            "rust",
            10,
            "/// Splits the buffer into two at the given `index`, keeping both halves.\n\
             ///\n/// # Panics\n#[inline]\npub fn split_at(&mut self) {\n}\n",
        );
        let doc = doc_comment(&c).unwrap();
        assert_eq!(
            doc.query,
            "Splits the buffer into two at the given index, keeping both halves."
        );
        assert_eq!((doc.comment, doc.answer), ((10, 12), (13, 15)));
    }

    #[test]
    fn block_comments_and_jsdoc_lose_their_markers_and_tags() {
        let c = chunk(
            "c",
            1,
            "/* ===========================================================\n \
             * Flush as much pending output as possible to the next stream.\n \
             */\nlocal void flush_pending(z_streamp strm) {\n}\n",
        );
        assert_eq!(
            doc_comment(&c).unwrap().query,
            "Flush as much pending output as possible to the next stream."
        );
        let js = chunk(
            "javascript",
            1,
            "/**\n * Resolve or reject a Promise based on the response status.\n *\n * @param {Function} resolve\n */\nfunction settle(resolve) {\n}\n",
        );
        assert_eq!(
            doc_comment(&js).unwrap().query,
            "Resolve or reject a Promise based on the response status."
        );
    }

    #[test]
    fn python_docstrings_are_found_after_multi_line_signatures() {
        let c = chunk(
            "python",
            5,
            "@app.route('/')\ndef get_netrc_auth(\n    url, raise_errors=False\n):\n    \"\"\"Returns the Requests tuple auth for a given url from netrc.\n\n    More.\n    \"\"\"\n    return None\n",
        );
        let doc = doc_comment(&c).unwrap();
        assert_eq!(
            doc.query,
            "Returns the Requests tuple auth for a given url from netrc."
        );
        assert_eq!((doc.comment, doc.answer), ((9, 12), (5, 13)));
        let only_docstring = chunk(
            "python",
            1,
            "def f():\n    \"\"\"Only a docstring here, nothing else at all.\"\"\"\n",
        );
        assert_eq!(doc_comment(&only_docstring), None);
    }

    #[test]
    fn short_or_missing_comments_make_no_case() {
        assert_eq!(
            doc_comment(&chunk("rust", 1, "/// Too short.\nfn f() {}\n")),
            None
        );
        assert_eq!(doc_comment(&chunk("rust", 1, "fn f() {}\n")), None);
    }

    #[test]
    fn blanking_keeps_every_line_number() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("src")).unwrap();
        fs::write(
            dir.path().join("src/a.rs"),
            "// head\n/// doc one\n/// doc two\nfn a() {}\n",
        )
        .unwrap();
        let case = DocCase {
            case: Case {
                id: "DOC-01".into(),
                category: Category::Doc,
                query: "q".into(),
                relevant: vec!["src/a.rs:4-4".parse().unwrap()],
                secondary: Vec::new(),
                shape: None,
            },
            comment: (2, 3),
        };
        blank_comments(dir.path(), &[case]).unwrap();
        let text = fs::read_to_string(dir.path().join("src/a.rs")).unwrap();
        assert_eq!(text, "// head\n\n\nfn a() {}\n");
    }

    #[test]
    fn cases_spread_over_the_documented_functions() {
        let chunks: Vec<StoredChunk> = (1..=30)
            .map(|i| {
                let text =
                    format!("/// Function number {i} does a useful thing here.\nfn f() {{}}\n");
                StoredChunk {
                    path: "src/a.rs".into(),
                    ..chunk("rust", i * 10, &text)
                }
            })
            .collect();
        let cases = doc_cases(&chunks, 3);
        let lines: Vec<usize> = cases.iter().map(|c| c.comment.0).collect();
        assert_eq!(lines, [10, 110, 210]);
        assert_eq!(cases[2].case.id, "DOC-03");
    }
}
