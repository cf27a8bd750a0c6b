//! `cargo xtask chunks`: show how quarry chunks files.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail};
use quarry_chunk::{Chunker, ChunkerConfig, Language};

pub fn run(args: &[String]) -> Result<()> {
    let mut config = ChunkerConfig::default();
    let (mut show_text, mut show_tree, mut files) = (false, false, Vec::new());
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--text" => show_text = true,
            "--tree" => show_tree = true,
            "--budget" => {
                let value = args.next().context("--budget needs a number")?;
                config.budget = value
                    .parse()
                    .with_context(|| format!("--budget: {value:?} is not a number"))?;
            }
            flag if flag.starts_with('-') => bail!("unknown flag {flag:?}"),
            file => files.push(file),
        }
    }
    if files.is_empty() {
        bail!("no file given: cargo xtask chunks <file>...");
    }
    let chunker = Chunker::new(config);
    for file in files {
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
                        println!("{}", chunk.text);
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
