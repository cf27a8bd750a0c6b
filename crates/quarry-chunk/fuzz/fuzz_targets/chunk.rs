//! Fuzz target: chunk arbitrary bytes as each language and check the chunker's promises.
//!
//! Input layout: byte 0 picks the language (`ALL_LANGUAGES[byte % len]`, given to the
//! chunker through the file's extension), the rest is the file's content.
//! `cargo xtask fuzz` seeds the corpus with the fixtures in this layout.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry_chunk::{ALL_LANGUAGES, Chunker, ChunkerConfig, check_chunks};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, content)) = data.split_first() else {
        return;
    };
    let language = ALL_LANGUAGES[selector as usize % ALL_LANGUAGES.len()];
    let path = format!("src/input.{}", language.extension());
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
