//! `cargo xtask chunks`: show how quarry chunks files.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use quarry_chunk::{Chunker, ChunkerConfig, Language};

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
}

pub fn run(args: ChunksArgs) -> Result<()> {
    let mut config = ChunkerConfig::default();
    if let Some(budget) = args.budget {
        config.budget = budget;
    }
    let (show_text, show_tree) = (args.text, args.tree);
    let chunker = Chunker::new(config);
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
