//! The exact chunks (lines, kind, symbol) of one fixture file per language.
//!
//! Each `fixtures/chunk/<language>/<file>` has its expected chunks beside it in
//! `<file>.chunks`, one chunk per line as `Chunk`'s `Display` prints it. After an
//! intended change, regenerate them with `UPDATE_EXPECT=1 cargo test --test fixtures`
//! and review the diff.

use std::path::{Path, PathBuf};

use quarry_chunk::{Chunker, Language, check_chunks};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/chunk")
}

/// Chunks `fixtures/chunk/<relative>` and compares with its `.chunks` file.
fn check_fixture(relative: &str, language: Language) {
    let path = fixture_dir().join(relative);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let chunker = Chunker::default();
    let chunks = chunker
        .chunk(relative, &bytes)
        .unwrap_or_else(|skip| panic!("{relative} was skipped: {skip}"));
    check_chunks(
        std::str::from_utf8(&bytes).unwrap(),
        &chunks,
        chunker.config().budget,
    )
    .unwrap();
    assert!(
        chunks
            .iter()
            .all(|c| c.stored.language == language && c.stored.path == relative)
    );

    let actual: String = chunks.iter().map(|c| format!("{c}\n")).collect();
    let expected_path = path.with_file_name(format!(
        "{}.chunks",
        path.file_name().unwrap().to_string_lossy()
    ));
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&expected_path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_EXPECT=1 to create it)",
            expected_path.display()
        )
    });
    assert_eq!(
        actual,
        expected,
        "{relative}: chunks differ from {} (UPDATE_EXPECT=1 rewrites it)",
        expected_path.display()
    );
}

macro_rules! fixtures {
    ($($test:ident: $file:literal => $language:ident,)*) => {$(
        #[test]
        fn $test() {
            check_fixture($file, Language::$language);
        }
    )*};
}

fixtures! {
    bash: "bash/deploy.sh" => Bash,
    c: "c/ring_buffer.c" => C,
    cpp: "cpp/matrix.cpp" => Cpp,
    csharp: "csharp/Ledger.cs" => CSharp,
    elixir: "elixir/bank.ex" => Elixir,
    go: "go/server.go" => Go,
    haskell: "haskell/Queue.hs" => Haskell,
    java: "java/Inventory.java" => Java,
    javascript: "javascript/router.js" => JavaScript,
    kotlin: "kotlin/Shapes.kt" => Kotlin,
    lua: "lua/vector.lua" => Lua,
    markdown: "markdown/guide.md" => Markdown,
    php: "php/UserRepository.php" => Php,
    python: "python/cache.py" => Python,
    ruby: "ruby/inventory.rb" => Ruby,
    rust: "rust/index.rs" => Rust,
    scala: "scala/Accounts.scala" => Scala,
    swift: "swift/Stack.swift" => Swift,
    text_falls_back_to_line_windows: "text/settings.toml" => Text,
    tsx: "tsx/TodoList.tsx" => Tsx,
    typescript: "typescript/queue.ts" => TypeScript,
    zig: "zig/list.zig" => Zig,
}
