//! `cargo xtask chunks`: show how quarry chunks files.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use quarry_chunk::{ChunkKind, Chunker, ChunkerConfig, Language, check_chunks};

/// `cargo xtask chunks`'s options.
#[derive(clap::Args)]
pub struct ChunksArgs {
    /// The files to chunk.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
    /// Characters per chunk (default: from the model's 256 tokens).
    #[arg(long, value_name = "N")]
    budget: Option<usize>,
    /// Print each chunk's text too.
    #[arg(long)]
    text: bool,
    /// Print the tree-sitter syntax tree instead (for writing rules).
    #[arg(long)]
    tree: bool,
    /// Compare, per language, the definitions the scanners find (a file read as when the
    /// parse guard abandons its parse) with the tree's, over the files and folders given:
    /// how many of the tree's they find and how many of theirs the tree has.
    #[arg(long, conflicts_with_all = ["text", "tree"])]
    scanners: bool,
}

pub fn run(args: ChunksArgs) -> Result<()> {
    let mut config = ChunkerConfig::default();
    if let Some(budget) = args.budget {
        config.budget = budget;
    }
    let (show_text, show_tree) = (args.text, args.tree);
    let chunker = Chunker::new(config);
    if args.scanners {
        return scanners(&chunker, &args.files);
    }
    for file in &args.files {
        let bytes = std::fs::read(file).with_context(|| format!("cannot read {file}"))?;
        if show_tree {
            print!("{}", syntax_tree(file, &bytes)?);
            continue;
        }
        match chunker.chunk(file, &bytes) {
            Ok(chunks) => {
                for chunk in &chunks {
                    println!("{chunk}");
                    if show_text {
                        println!("{}", chunk.stored.text);
                    }
                }
            }
            Err(skip) => println!("{file}: skipped: {skip}"),
        }
    }
    Ok(())
}

/// Per language: files, the tree's definitions (types, functions and scopes; macros, type
/// aliases and tests left out, which the scanners do not read), how many of them the
/// scanners find by qualified name, and how many the scanners find in all.
fn scanners(chunker: &Chunker, roots: &[String]) -> Result<()> {
    let mut totals: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    let mut files = Vec::new();
    for root in roots.iter().map(Path::new) {
        match root.is_dir() {
            true => files.extend(crate::fuzz::files_under(root)?),
            false => files.push(root.to_path_buf()),
        }
    }
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let path = file.to_string_lossy();
        let language = Language::detect(&path, &text);
        let Some((chunks, scanned)) = chunker.chunk_unparsed(&path, &text, language) else {
            continue;
        };
        check_chunks(&text, &chunks, chunker.config().budget)
            .map_err(|violation| anyhow::anyhow!("{path}: {violation:?}"))?;
        let parsed = match chunker.chunk_file(&path, text.as_bytes()) {
            Ok(parsed) if parsed.syntax.is_some() => parsed,
            _ => continue,
        };
        let tree: HashSet<String> = parsed
            .definitions
            .iter()
            .filter(|d| !matches!(d.kind, ChunkKind::Type | ChunkKind::Macro | ChunkKind::Test))
            .map(|d| d.qualified_name())
            .collect();
        let found: HashSet<String> = scanned.iter().map(|d| d.qualified_name()).collect();
        let total = totals.entry(language.to_string()).or_default();
        total[0] += 1;
        total[1] += tree.len();
        total[2] += tree.intersection(&found).count();
        total[3] += found.len();
    }
    println!(
        "| language | files | tree's definitions | found by the scanner | scanner's definitions | of them the tree's |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let share = |part: usize, whole: usize| 100.0 * part as f64 / whole.max(1) as f64;
    for (language, [files, tree, hit, found]) in totals {
        println!(
            "| {language} | {files} | {tree} | {hit} ({:.1}%) | {found} | {:.1}% |",
            share(hit, tree),
            share(hit, found)
        );
    }
    Ok(())
}

fn syntax_tree(file: &str, bytes: &[u8]) -> Result<String> {
    let text = std::str::from_utf8(bytes).with_context(|| format!("{file} is not UTF-8"))?;
    let language = Language::detect(file, text);
    let grammar = language
        .grammar()
        .with_context(|| format!("{file}: {language} has no tree-sitter grammar"))?;
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&grammar)?;
    let tree = parser
        .parse(text, None)
        .with_context(|| format!("{file}: the parser gave up"))?;
    let mut out = String::new();
    let mut cursor = tree.walk();
    let mut depth = 0;
    loop {
        let node = cursor.node();
        if node.is_named() {
            let field = cursor
                .field_name()
                .map(|f| format!("{f}: "))
                .unwrap_or_default();
            let (start, end) = (node.start_position().row + 1, node.end_position().row + 1);
            writeln!(
                out,
                "{}{field}{} [{start}-{end}]",
                "  ".repeat(depth),
                node.kind()
            )?;
        }
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return Ok(out);
            }
            depth -= 1;
        }
    }
}
