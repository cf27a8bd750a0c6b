//! Behaviour of the chunker beyond the fixtures: budgets, ids, skips, headers.

use quarry_chunk::{
    Chunk, ChunkKind, Chunker, ChunkerConfig, Language, MAX_CHUNKS_PER_FILE, MAX_PARSED_BYTES,
    Skip, check_chunks,
};

fn chunk(path: &str, text: &str) -> Vec<Chunk> {
    chunk_with(Chunker::default(), path, text)
}

fn chunk_with(chunker: Chunker, path: &str, text: &str) -> Vec<Chunk> {
    let chunks = chunker.chunk(path, text.as_bytes()).unwrap();
    check_chunks(text, &chunks, chunker.config().budget).unwrap();
    chunks
}

fn summary(chunks: &[Chunk]) -> Vec<String> {
    chunks.iter().map(ToString::to_string).collect()
}

/// A Rust function of `lines` body lines.
fn long_function(name: &str, lines: usize) -> String {
    let body: String = (0..lines)
        .map(|i| format!("    let value_{i} = compute_something({i}) + offset;\n"))
        .collect();
    format!("/// Does a lot.\nfn {name}(offset: u64) {{\n{body}}}\n")
}

#[test]
fn an_item_over_budget_is_split_into_overlapping_parts_that_keep_its_identity() {
    let text = long_function("crunch", 40);
    let chunks = chunk("src/crunch.rs", &text);
    assert!(chunks.len() > 1);
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(
            (c.stored.kind, c.stored.name.as_deref()),
            (ChunkKind::Function, Some("crunch"))
        );
        assert_eq!(c.part, Some((i + 1, chunks.len())));
        assert!(c.stored.text.chars().count() <= 652);
    }
    for pair in chunks.windows(2) {
        assert!(
            pair[1].stored.start_line <= pair[0].stored.end_line,
            "parts overlap"
        );
        assert!(
            pair[1].stored.start_line > pair[0].stored.start_line,
            "parts advance"
        );
    }
    // Later parts carry the signature in their embedding header.
    assert!(chunks[1].embed_text.contains("fn crunch(offset: u64) {\n"));
}

#[test]
fn a_single_line_over_budget_is_flagged_oversized() {
    let text = format!(
        "{}\nconst TABLE: &str = \"{}\";\n",
        long_function("big", 20),
        "x".repeat(800)
    );
    let chunks = chunk("src/table.rs", &text);
    let last = chunks.last().unwrap();
    assert_eq!(last.to_string(), "25-25 block (oversized)");
    assert!(chunks.iter().rev().skip(1).all(|c| !c.oversized));
}

#[test]
fn ids_survive_unrelated_edits_and_follow_content() {
    let before = "fn alpha() {\n    1\n}\n\nfn beta() {\n    2\n}\n";
    let after = "use std::io;\n\nfn alpha() {\n    1\n}\n\nfn beta() {\n    3\n}\n";
    let (before, after) = (chunk("src/x.rs", before), chunk("src/x.rs", after));
    assert_eq!(
        before[0].stored.id, after[1].stored.id,
        "alpha moved but did not change"
    );
    assert_ne!(before[1].stored.id, after[2].stored.id, "beta changed");
    assert_ne!(
        before[0].stored.id,
        chunk("src/y.rs", "fn alpha() {\n    1\n}\n")[0].stored.id,
        "the path is part of the id"
    );
    assert_eq!(
        before,
        chunk(
            "src/x.rs",
            "fn alpha() {\n    1\n}\n\nfn beta() {\n    2\n}\n"
        )
    );
}

#[test]
fn identical_chunks_in_one_file_get_distinct_ids() {
    let chunks = chunk("a.py", "def f():\n    pass\n\n\ndef f():\n    pass\n");
    assert_eq!(chunks.len(), 2);
    assert_ne!(chunks[0].stored.id, chunks[1].stored.id);
}

#[test]
fn ids_print_and_parse_as_32_hex_digits() {
    let id = chunk("a.rs", "fn a() {}\n")[0].stored.chunk_id();
    let printed = id.to_string();
    assert_eq!(printed.len(), 32);
    assert_eq!(printed.parse(), Ok(id));
    assert!("not-an-id".parse::<quarry_chunk::ChunkId>().is_err());
}

#[test]
fn embed_header_names_path_kind_and_symbol_and_can_be_switched_off() {
    let text = "impl Index {\n    fn search(&self) {}\n}\n";
    let config = ChunkerConfig {
        budget: 30,
        ..ChunkerConfig::default()
    };
    let chunks = chunk_with(Chunker::new(config.clone()), "src/index.rs", text);
    assert_eq!(
        summary(&chunks),
        ["1-1 header Index", "2-3 method Index::search"]
    );
    assert_eq!(
        chunks[1].embed_text,
        "src/index.rs\nmethod Index::search\n\n    fn search(&self) {}\n}\n"
    );
    let plain = Chunker::new(ChunkerConfig {
        embed_header: false,
        ..config
    });
    assert!(
        chunk_with(plain, "src/index.rs", text)
            .iter()
            .all(|c| c.embed_text == c.stored.text)
    );
}

#[test]
fn nested_containers_split_recursively() {
    let methods: String = (0..6)
        .map(|i| format!("        void m{i}() {{ work({i}); work({i}); work({i}); }}\n"))
        .collect();
    let text =
        format!("namespace app {{\nclass Outer {{\n  class Inner {{\n{methods}  }};\n}};\n}}\n");
    let config = ChunkerConfig {
        budget: 200,
        ..ChunkerConfig::default()
    };
    let chunks = chunk_with(Chunker::new(config), "x.cpp", &text);
    let symbols: Vec<_> = chunks
        .iter()
        .filter_map(|c| c.stored.symbol_path())
        .collect();
    assert!(
        symbols.contains(&"app::Outer::Inner::m5".to_owned()),
        "{symbols:?}"
    );
    assert_eq!(chunks[0].stored.kind, ChunkKind::Header);
}

#[test]
fn small_module_level_statements_merge_into_blocks_up_to_the_budget() {
    let imports: String = (0..60).map(|i| format!("import module_{i}\n")).collect();
    let chunks = chunk("many_imports.py", &imports);
    assert!(chunks.iter().all(|c| c.stored.kind == ChunkKind::Block));
    assert!(chunks.len() >= 2 && chunks.len() < 10, "{}", chunks.len());
}

#[test]
fn language_comes_from_extension_then_shebang() {
    let script = "#!/usr/bin/env bash\nset -e\n\ngreet() {\n  echo hi\n}\n";
    let chunks = chunk("bin/greet", script);
    assert_eq!(chunks[0].stored.language, Language::Bash);
    assert_eq!(summary(&chunks), ["1-2 block", "4-6 function greet"]);
    assert_eq!(
        chunk("notes", "just some words\n")[0].stored.language,
        Language::Text
    );
}

#[test]
fn markdown_headings_inside_code_fences_are_not_headings() {
    let text = "# Title\n\n```sh\n# not a heading\nls\n```\n\n## Next\ntext\n";
    let chunks = chunk("README.md", text);
    assert_eq!(
        summary(&chunks),
        ["1-6 section Title", "8-9 section Title::Next"]
    );
}

#[test]
fn windows_paths_are_normalised() {
    let chunks = chunk("src\\lib.rs", "fn a() {}\n");
    assert_eq!(chunks[0].stored.path, "src/lib.rs");
}

#[test]
fn crlf_line_endings_are_handled() {
    let text = "/// Doc.\r\nfn a() {\r\n    1\r\n}\r\n\r\nfn b() {}\r\n";
    let chunks = chunk("crlf.rs", text);
    assert_eq!(summary(&chunks), ["1-4 function a", "6-6 function b"]);
}

#[test]
fn empty_and_blank_files_have_no_chunks() {
    assert!(chunk("empty.rs", "").is_empty());
    assert!(chunk("blank.py", "\n   \n\t\n").is_empty());
}

#[test]
fn machine_written_and_binary_files_are_skipped_with_a_reason() {
    let chunker = Chunker::default();
    assert_eq!(
        chunker.chunk("logo.png", b"\x89PNG\r\n\x1a\n\0\0"),
        Err(Skip::Binary)
    );
    let minified = format!("function a(){{{}}}\n", "x=1;".repeat(3000));
    assert!(matches!(
        chunker.chunk("app.js", minified.as_bytes()),
        Err(Skip::Minified { .. })
    ));
    let generated = "// Code generated by mockgen. DO NOT EDIT.\npackage mocks\n";
    assert!(matches!(
        chunker.chunk("mocks/db.go", generated.as_bytes()),
        Err(Skip::Generated { .. })
    ));
    assert!(matches!(
        chunker.chunk("latin1.txt", b"caf\xe9"),
        Err(Skip::NotUtf8 { valid_up_to: 3 })
    ));
}

#[test]
fn syntax_errors_do_not_lose_lines() {
    let text = "fn ok() {}\n\nfn broken( {\n    let x = ;\n\nstruct S { a: u8 }\n";
    let chunks = chunk("broken.rs", text);
    assert!(!chunks.is_empty());
}

#[test]
fn bash_with_characters_beyond_latin1_does_not_crash_the_parser() {
    // tree-sitter-bash 0.25.1 segfaults on `{` followed by such characters (upstream
    // #337); this input, found by the property tests, crashed it reliably here.
    let crasher = "\u{83a78}\u{c4}{\u{e9788}\u{2176c}\u{40ff2}\u{6a9e8}";
    assert_eq!(chunk("x.sh", crasher).len(), 1);
    let text = "greet() {\n  echo \"héllo 𝔘\"\n}\n";
    assert_eq!(summary(&chunk("x.sh", text)), ["1-3 function greet"]);
}

#[test]
fn a_parse_that_explodes_is_read_for_its_braces() {
    // Found by the fuzzer (then minimised): tree-sitter-kotlin-ng's error recovery on this file
    // ran for over a minute and took 4 GB before the parse budget existed.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/regressions/kotlin-parse-blowup.kt"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let file = Chunker::default()
        .chunk_file("Shapes.kt", text.as_bytes())
        .unwrap();
    assert!(file.syntax.is_none(), "the parse is abandoned");
    assert_eq!(summary(&file.chunks), ["1-16 function distance"]);
    assert_eq!(file.chunks[0].stored.language, Language::Kotlin);
    let definitions: Vec<&str> = file.definitions.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(definitions, ["distance"]);
}

#[test]
fn deep_nesting_is_bounded() {
    let depth = 5000;
    let mut text = "#if A\n".repeat(depth);
    text.push_str("int f(void) { return 1; }\n");
    text.push_str(&"#endif\n".repeat(depth));
    chunk("deep.c", &text);
    let rust = format!(
        "{}fn f() {{}}\n{}",
        "mod m {\n".repeat(depth),
        "}\n".repeat(depth)
    );
    chunk("deep.rs", &rust);
}

#[test]
fn an_annotation_ending_a_kotlin_file_does_not_hang_the_parser() {
    // tree-sitter-kotlin-ng 1.1.0's scanner looped forever here (found by the property tests).
    let chunks = chunk("A.kt", "class A {\n    val x: Int\n    @Foo");
    assert_eq!(summary(&chunks), ["1-3 class A"]);
}

#[test]
fn a_file_past_the_chunk_cap_keeps_its_first_chunks_and_counts_the_rest() {
    // Lines of 64 characters: ten fill a window of the default budget (652), and the next
    // window starts two lines back, so 8 × n + 2 lines make exactly n windows.
    let windows = MAX_CHUNKS_PER_FILE + 2_000;
    let text: String = (0..8 * windows + 2)
        .map(|i| format!("{i:>8} {:<54}\n", "words of a huge log file"))
        .collect();
    assert_eq!(text.len(), 64 * (8 * windows + 2));
    let file = Chunker::default()
        .chunk_file("huge.txt", text.as_bytes())
        .unwrap();
    assert_eq!(file.chunks.len(), MAX_CHUNKS_PER_FILE);
    assert_eq!(file.left_out, 2_000);
    let (first, last) = (&file.chunks[0].stored, &file.chunks.last().unwrap().stored);
    assert_eq!((first.start_line, first.end_line), (1, 10));
    assert_eq!(last.end_line, 8 * MAX_CHUNKS_PER_FILE + 2);
    check_chunks(&text, &file.chunks, Chunker::default().config().budget).unwrap();
}

#[test]
fn definitions_past_the_chunk_cap_are_left_out_with_their_chunks() {
    let functions = MAX_CHUNKS_PER_FILE + 50;
    let text: String = (0..functions)
        .map(|i| format!("fn f{i}() {{}}\n"))
        .collect();
    let file = Chunker::default()
        .chunk_file("many.rs", text.as_bytes())
        .unwrap();
    assert_eq!(
        (file.chunks.len(), file.left_out),
        (MAX_CHUNKS_PER_FILE, 50)
    );
    let names: Vec<&str> = file.definitions.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names.len(), MAX_CHUNKS_PER_FILE);
    assert_eq!(
        names.last(),
        Some(&format!("f{}", MAX_CHUNKS_PER_FILE - 1).as_str())
    );
    check_chunks(&text, &file.chunks, Chunker::default().config().budget).unwrap();
}

#[test]
fn a_file_at_the_chunk_cap_leaves_nothing_out() {
    let text: String = (0..MAX_CHUNKS_PER_FILE)
        .map(|i| format!("fn f{i}() {{}}\n"))
        .collect();
    let file = Chunker::default()
        .chunk_file("many.rs", text.as_bytes())
        .unwrap();
    assert_eq!((file.chunks.len(), file.left_out), (MAX_CHUNKS_PER_FILE, 0));
}

#[test]
fn a_file_past_the_parse_limit_is_read_for_its_braces() {
    // A syntax tree takes about 20 bytes a byte of source: a larger file is not parsed.
    let function = "fn handle() {\n    run();\n}\n";
    let text = function.repeat(MAX_PARSED_BYTES / function.len() + 1);
    let file = Chunker::default()
        .chunk_file("huge.rs", text.as_bytes())
        .unwrap();
    assert!(file.syntax.is_none());
    assert_eq!(
        summary(&file.chunks[..2]),
        ["1-3 function handle", "4-6 function handle"]
    );
    assert_eq!(file.chunks.len(), MAX_CHUNKS_PER_FILE);
    assert_eq!(file.definitions.len(), MAX_CHUNKS_PER_FILE);
    let smaller = &text[..MAX_PARSED_BYTES - MAX_PARSED_BYTES % function.len()];
    assert!(
        Chunker::default()
            .chunk_file("huge.rs", smaller.as_bytes())
            .unwrap()
            .syntax
            .is_some()
    );
}
