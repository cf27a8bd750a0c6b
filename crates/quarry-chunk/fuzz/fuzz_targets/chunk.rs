//! Fuzz target: chunk arbitrary bytes as each language and check the chunker's promises.
//!
//! Input layout: byte 0 picks the file extension (`EXTENSIONS[byte % len]`), the rest
//! is the file's content.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry_chunk::{Chunker, ChunkerConfig, check_chunks};

/// One extension per language. Keep in sync with `EXTENSIONS` in xtask/src/fuzz.rs,
/// which seeds the corpus by prefixing each fixture with its extension's index here.
const EXTENSIONS: &[&str] = &[
    "rs", "py", "js", "ts", "tsx", "go", "java", "c", "cpp", "cs", "rb", "php", "kt", "swift",
    "scala", "sh", "lua", "zig", "hs", "ex", "md", "txt",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, content)) = data.split_first() else {
        return;
    };
    let path = format!(
        "src/input.{}",
        EXTENSIONS[selector as usize % EXTENSIONS.len()]
    );
    let tiny = Chunker::new(ChunkerConfig {
        budget: 40,
        ..Default::default()
    });
    for chunker in [Chunker::default(), tiny] {
        // Skips (binary, not UTF-8, minified, generated) are fine; chunks must keep every promise.
        let Ok(chunks) = chunker.chunk(&path, content) else {
            continue;
        };
        let text = std::str::from_utf8(content).expect("chunked content must be UTF-8");
        if let Err(violation) = check_chunks(text, &chunks, chunker.config().budget) {
            panic!("invariant violated: {violation}");
        }
    }
});
