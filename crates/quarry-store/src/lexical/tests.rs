//! The lexical index: searches, filters, updates and what readers see.

use super::*;
use quarry_chunk::{ChunkKind, Language};

#[test]
fn a_definition_outranks_a_mention_and_weights_can_drop_a_field() {
    let (_dir, mut index) = new_writer();
    let defining = chunk(1, "src/a.rs", "rust", "retry", "fn retry() { loop {} }");
    let mentioning = chunk(
        2,
        "src/b.rs",
        "rust",
        "run",
        "fn run() { retry(); retry(); retry(); }",
    );
    index.apply(&[], &[&defining, &mentioning], 1).unwrap();
    let weights = LexicalWeights::default();
    assert_eq!(
        ids(&index.search("retry", 10, &all(), &weights).unwrap()),
        [1, 2]
    );
    let no_name = LexicalWeights {
        name: 0.0,
        ..weights
    };
    assert_eq!(
        ids(&index.search("retry", 10, &all(), &no_name).unwrap()),
        [2, 1]
    );
    assert!(
        LexicalWeights {
            body: -1.0,
            ..weights
        }
        .validate()
        .is_err()
    );
    let nothing = LexicalWeights {
        name: 0.0,
        container: 0.0,
        file: 0.0,
        dirs: 0.0,
        comments: 0.0,
        body: 0.0,
    };
    assert!(nothing.validate().is_err());
    assert!(weights.validate().is_ok());
}

fn chunk(id: u128, path: &str, language: &str, name: &str, text: &str) -> StoredChunk {
    StoredChunk {
        id,
        path: path.into(),
        language: language.parse().unwrap(),
        kind: ChunkKind::Function,
        name: Some(name.into()),
        container: vec![],
        start_line: 1,
        end_line: 1,
        text: text.into(),
    }
}

fn ids(hits: &[(u128, f32)]) -> Vec<u128> {
    hits.iter().map(|(id, _)| *id).collect()
}

fn all() -> LexicalFilter {
    LexicalFilter::default()
}

/// The ids `index` finds for `query` in its top 10, through `filter`, with the default
/// weights.
fn found_with(index: &LexicalIndex, query: &str, filter: &LexicalFilter) -> Vec<u128> {
    ids(&index
        .search(query, 10, filter, &LexicalWeights::default())
        .unwrap())
}

/// [`found_with`] unfiltered.
fn found(index: &LexicalIndex, query: &str) -> Vec<u128> {
    found_with(index, query, &all())
}

/// An empty writer in a temporary directory.
fn new_writer() -> (tempfile::TempDir, LexicalIndex) {
    let dir = tempfile::tempdir().unwrap();
    let index = LexicalIndex::open_writer(dir.path()).unwrap();
    (dir, index)
}

/// Adds `chunks` to `index` in one commit, as generation `generation`.
fn add(index: &mut LexicalIndex, chunks: &[StoredChunk], generation: u64) {
    let added: Vec<&StoredChunk> = chunks.iter().collect();
    index.apply(&[], &added, generation).unwrap();
}

/// A writer over a few chunks, committed as generation 1.
fn sample() -> (tempfile::TempDir, LexicalIndex) {
    let (dir, mut index) = new_writer();
    let chunks = [
        chunk(
            1,
            "src/config.rs",
            "rust",
            "parse_config",
            "fn parse_config(text: &str) -> Config { toml::from_str(text) }",
        ),
        chunk(
            2,
            "src/http_client/retry.rs",
            "rust",
            "retry",
            "fn retry(times: u32) { backoff(times) }",
        ),
        chunk(
            3,
            "lib/loader.py",
            "python",
            "load",
            "def load(path):\n    return parseConfig(open(path).read())",
        ),
    ];
    add(&mut index, &chunks, 1);
    (dir, index)
}

#[test]
fn an_identifier_finds_the_chunk_defining_it() {
    let (_dir, index) = sample();
    assert_eq!(found(&index, "parse_config")[0], 1);
    assert_eq!(found(&index, "backoff"), [2]);
    assert!(found(&index, "nowhere").is_empty());
}

#[test]
fn naming_conventions_match_each_other() {
    let (_dir, index) = sample();
    // camelCase query, snake_case definition (and the camelCase call in chunk 3).
    let hits = found(&index, "parseConfig");
    assert_eq!(hits.len(), 2);
    assert!(hits.contains(&1));
    // snake_case query, camelCase call.
    assert!(found(&index, "parse_config").contains(&3));
}

#[test]
fn path_tokens_match() {
    let (_dir, index) = sample();
    for query in ["http", "client", "http_client"] {
        assert_eq!(found(&index, query), [2], "{query}");
    }
    assert_eq!(found(&index, "loader"), [3]);
}

#[test]
fn empty_queries_find_nothing() {
    let (_dir, index) = sample();
    assert!(found(&index, "").is_empty());
    assert!(found(&index, "  -> ::").is_empty());
    assert!(
        index
            .search("retry", 0, &all(), &LexicalWeights::default())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn filters_apply_before_the_top_k_cut() {
    let (_dir, mut index) = new_writer();
    // 50 strong matches in a.rs, 3 weak ones in b.py.
    let mut chunks = Vec::new();
    for id in 0..50 {
        chunks.push(chunk(id, "a.rs", "rust", "decode", "decode decode decode"));
    }
    for id in 100..103 {
        chunks.push(chunk(id, "b.py", "python", "other", "calls decode once"));
    }
    add(&mut index, &chunks, 1);

    let unfiltered = found(&index, "decode");
    assert_eq!(unfiltered.len(), 10);
    assert!(unfiltered.iter().all(|id| *id < 50));

    let only_b = LexicalFilter {
        paths: Some(vec!["b.py".into()]),
        ..all()
    };
    assert_eq!(found_with(&index, "decode", &only_b), [100, 101, 102]);

    let python = LexicalFilter {
        languages: vec![Language::Python],
        ..all()
    };
    assert_eq!(found_with(&index, "decode", &python), [100, 101, 102]);

    let not_a = LexicalFilter {
        excluded_file: Some("a.rs".into()),
        ..all()
    };
    assert_eq!(found_with(&index, "decode", &not_a), [100, 101, 102]);

    let both = LexicalFilter {
        paths: Some(vec!["a.rs".into(), "b.py".into()]),
        languages: vec![Language::Rust, Language::Python],
        excluded_file: Some("a.rs".into()),
    };
    assert_eq!(found_with(&index, "decode", &both), [100, 101, 102]);

    let none = LexicalFilter {
        paths: Some(vec![]),
        ..all()
    };
    assert!(found_with(&index, "decode", &none).is_empty());
    // The filter alone matches nothing: only the query scores.
    assert!(found_with(&index, "absent", &only_b).is_empty());
}

#[test]
fn ties_are_broken_by_chunk_id() {
    let (_dir, mut index) = new_writer();
    // Identical documents, added in a scrambled order over several commits (segments).
    let order: Vec<u128> = (0..40).map(|i| (i * 17) % 40).collect();
    for (generation, ids) in order.chunks(10).enumerate() {
        let chunks: Vec<StoredChunk> = ids
            .iter()
            .map(|&id| chunk(id, "same.rs", "rust", "same", "tie tie"))
            .collect();
        add(&mut index, &chunks, generation as u64);
    }
    for k in [1, 5, 13, 40, 100] {
        let hits = index
            .search("tie", k, &all(), &LexicalWeights::default())
            .unwrap();
        let expected: Vec<u128> = (0..40).take(k).collect();
        assert_eq!(ids(&hits), expected, "k={k}");
        assert!(hits.windows(2).all(|w| w[0].1 == w[1].1));
    }
}

#[test]
fn apply_removes_and_replaces_chunks() {
    let (_dir, mut index) = sample();
    index.apply(&[2], &[], 2).unwrap();
    assert!(found(&index, "retry").is_empty());

    // Re-adding an indexed id replaces it, even twice over.
    let changed = chunk(
        1,
        "src/config.rs",
        "rust",
        "parse_config",
        "fn renamed() {}",
    );
    index.apply(&[], &[&changed], 3).unwrap();
    index.apply(&[], &[&changed], 3).unwrap();
    assert_eq!(found(&index, "renamed"), [1]);
    assert!(found(&index, "toml").is_empty());
    assert_eq!(index.generation(), Some(3));
}

#[test]
fn rebuild_replaces_everything() {
    let (_dir, mut index) = sample();
    let fresh = chunk(9, "new.rs", "rust", "fresh", "fn fresh() {}");
    index.rebuild([fresh].into_iter(), 7).unwrap();
    assert!(found(&index, "retry").is_empty());
    assert_eq!(found(&index, "fresh"), [9]);
    assert_eq!(index.generation(), Some(7));
}

#[test]
fn the_generation_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index = LexicalIndex::open_writer(dir.path()).unwrap();
        assert_eq!(index.generation(), None);
    }
    {
        let mut index = LexicalIndex::open_writer(dir.path()).unwrap();
        assert_eq!(index.generation(), None);
        let c = chunk(1, "a.rs", "rust", "f", "fn f() {}");
        index.apply(&[], &[&c], 41).unwrap();
        assert_eq!(index.generation(), Some(41));
    }
    let index = LexicalIndex::open_writer(dir.path()).unwrap();
    assert_eq!(index.generation(), Some(41));
    assert_eq!(found(&index, "f"), [1]);
    drop(index);
    let reader = LexicalIndex::open_reader(dir.path()).unwrap().unwrap();
    assert_eq!(reader.generation(), Some(41));
}

#[test]
fn a_reader_sees_the_writers_commits_after_refresh() {
    let dir = tempfile::tempdir().unwrap();
    assert!(LexicalIndex::open_reader(dir.path()).unwrap().is_none());
    assert!(
        LexicalIndex::open_reader(&dir.path().join("missing"))
            .unwrap()
            .is_none()
    );

    let mut writer = LexicalIndex::open_writer(dir.path()).unwrap();
    let mut reader = LexicalIndex::open_reader(dir.path()).unwrap().unwrap();
    assert_eq!(reader.generation(), None);
    assert!(found(&reader, "alpha").is_empty());

    let alpha = chunk(1, "a.rs", "rust", "alpha", "fn alpha() {}");
    writer.apply(&[], &[&alpha], 5).unwrap();
    assert!(found(&reader, "alpha").is_empty());
    reader.refresh().unwrap();
    assert_eq!(reader.generation(), Some(5));
    assert_eq!(found(&reader, "alpha"), [1]);
    // Nothing new: nothing changes.
    reader.refresh().unwrap();
    assert_eq!(reader.generation(), Some(5));

    writer.apply(&[1], &[], 6).unwrap();
    reader.refresh().unwrap();
    assert_eq!(reader.generation(), Some(6));
    assert!(found(&reader, "alpha").is_empty());

    let error = reader.apply(&[], &[&alpha], 7).unwrap_err();
    assert!(matches!(error, StoreError::ReadOnly { .. }), "{error}");
}

#[test]
fn a_second_writer_is_refused_without_wiping() {
    let (dir, _writer) = sample();
    let error = LexicalIndex::open_writer(dir.path()).unwrap_err();
    assert!(matches!(error, StoreError::Locked { .. }), "{error}");
    let reader = LexicalIndex::open_reader(dir.path()).unwrap().unwrap();
    assert_eq!(reader.generation(), Some(1));
}

#[test]
fn garbage_is_wiped_by_the_writer() {
    let (dir, writer) = sample();
    drop(writer);
    fs::write(dir.path().join("meta.json"), [0x9f, 0x00, 0xff, 0x13, 0x37]).unwrap();
    let error = LexicalIndex::open_reader(dir.path()).unwrap_err();
    assert!(matches!(error, StoreError::Damaged { .. }), "{error}");
    assert!(
        error
            .to_string()
            .ends_with("is damaged: rebuild with `quarry index --force`"),
        "{error}"
    );

    let mut index = LexicalIndex::open_writer(dir.path()).unwrap();
    assert_eq!(index.generation(), None);
    assert!(index.take_replaced().unwrap().contains("unreadable"));
    assert!(found(&index, "retry").is_empty());
    let c = chunk(1, "a.rs", "rust", "again", "fn again() {}");
    index.apply(&[], &[&c], 2).unwrap();
    assert_eq!(found(&index, "again"), [1]);
}

#[test]
fn another_schema_is_wiped_by_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let mut builder = Schema::builder();
    builder.add_text_field("title", tantivy::schema::TEXT);
    Index::create_in_dir(dir.path(), builder.build()).unwrap();
    assert!(LexicalIndex::open_reader(dir.path()).is_err());
    let index = LexicalIndex::open_writer(dir.path()).unwrap();
    assert_eq!(index.generation(), None);
    drop(index);
    assert!(LexicalIndex::open_reader(dir.path()).unwrap().is_some());
}

#[test]
fn symbols_weigh_more_than_bodies() {
    let (_dir, mut index) = new_writer();
    let caller = chunk(1, "a.rs", "rust", "main", "fn main() { tokenize(input) }");
    let mut definer = chunk(2, "b.rs", "rust", "tokenize", "fn tokenize(input: &str) {}");
    definer.container = vec!["Lexer".into()];
    index.apply(&[], &[&caller, &definer], 1).unwrap();
    assert_eq!(found(&index, "tokenize"), [2, 1]);
    assert_eq!(found(&index, "lexer"), [2]);
}

#[test]
fn a_search_s_mark_is_seen_by_the_check_and_makes_the_writer_rebuild() {
    let (dir, writer) = sample();
    drop(writer);
    assert!(inspect(dir.path(), Depth::Quick).problems.is_empty());
    let reader = LexicalIndex::open_reader(dir.path()).unwrap().unwrap();

    // A mark on segments the index no longer holds is stale.
    health::mark(
        dir.path(),
        "gone",
        ["0123456789abcdef0123456789abcdef".into()].into_iter(),
    );
    assert!(inspect(dir.path(), Depth::Quick).problems.is_empty());

    reader.mark_if_damaged(&health::damaged(
        dir.path(),
        "tantivy panicked: boom".into(),
    ));
    let problems = inspect(dir.path(), Depth::Quick).problems;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("tantivy panicked: boom"),
        "{problems:?}"
    );

    let mut index = LexicalIndex::open_writer(dir.path()).unwrap();
    assert!(index.take_replaced().unwrap().contains("boom"));
    assert_eq!(index.generation(), None, "wiped, for the store to rebuild");
    assert!(!dir.path().join(health::DAMAGE_MARK).exists());
    assert!(inspect(dir.path(), Depth::Full).problems.is_empty());
}

#[test]
fn a_panic_inside_tantivy_is_a_damaged_error() {
    let dir = tempfile::tempdir().unwrap();
    let error =
        health::reading(dir.path(), || -> tantivy::Result<()> { panic!("vint") }).unwrap_err();
    assert!(matches!(error, StoreError::Damaged { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("tantivy panicked: vint"), "{message}");
    assert!(
        message.ends_with("is damaged: rebuild with `quarry index --force`"),
        "{message}"
    );
}

#[test]
fn token_counts_are_exact_and_live_statistics_skip_deleted_chunks() {
    let (_dir, mut index) = sample();
    let searcher = index.reader.searcher();
    let before = index.token_totals.of(&searcher).unwrap();
    let body = before[SCORED.len() - 1];
    assert!(body > 0);
    // Deleting a chunk takes its tokens out of the totals at once, before any merge.
    let text = "fn retry(times: u32) { backoff(times) }";
    index.apply(&[2], &[], 2).unwrap();
    let searcher = index.reader.searcher();
    let after = index.token_totals.of(&searcher).unwrap();
    assert_eq!(
        body - after[SCORED.len() - 1],
        analysis::tokens(text).len() as u64
    );
    let statistics = LiveStatistics {
        searcher: &searcher,
        fields: index.fields.scored(),
        tokens: after,
    };
    use tantivy::query::Bm25StatisticsProvider;
    let term = Term::from_field_text(index.fields.body, "backoff");
    assert_eq!(statistics.doc_freq(&term).unwrap(), 0);
    assert_eq!(statistics.total_num_docs().unwrap(), searcher.num_docs());
}

/// A large file that holds a question's words across its chunks, and a small one whose one
/// chunk repeats two of them.
fn spread_and_dense() -> Vec<StoredChunk> {
    let spread = [
        (
            10,
            "refill",
            "fn refill(bucket: &mut Bucket) { bucket.tokens += bucket.rate }",
        ),
        (
            11,
            "take",
            "fn take(bucket: &mut Bucket) -> bool { bucket.tokens > 0 }",
        ),
        (
            12,
            "burst",
            "fn burst(bucket: &Bucket) -> u32 { bucket.capacity }",
        ),
        (
            13,
            "Bucket",
            "struct Bucket { tokens: u32, rate: u32, capacity: u32 }",
        ),
        (
            14,
            "new",
            "fn new(limit: u32) -> Bucket { Bucket::with(limit) }",
        ),
        (15, "clock", "fn clock() -> Instant { Instant::now() }"),
    ];
    let mut chunks: Vec<StoredChunk> = spread
        .iter()
        .map(|&(id, name, text)| chunk(id, "src/throttle.rs", "rust", name, text))
        .collect();
    chunks.push(chunk(
        20,
        "src/limits.rs",
        "rust",
        "rate_limit",
        "fn rate_limit() { rate limit rate limit rate limit }",
    ));
    chunks.push(chunk(30, "docs/other.py", "python", "x", "def x(): pass"));
    chunks
}

const SPREAD_QUESTION: &str = "refill the token bucket at its rate limit, with a burst";

fn files_found(index: &LexicalIndex, filter: &LexicalFilter) -> Vec<(u128, f32)> {
    let weights = LexicalWeights::default();
    index
        .search_files(SPREAD_QUESTION, 10, filter, &weights, &[])
        .unwrap()
}

#[test]
fn a_file_that_holds_the_question_across_its_chunks_ranks_as_one() {
    let (_dir, mut index) = new_writer();
    add(&mut index, &spread_and_dense(), 1);
    // Chunk by chunk, the small file's dense chunk comes first.
    assert_eq!(found(&index, SPREAD_QUESTION)[0], 20);
    // As whole files, the large one does, as its chunk holding the most of the question
    // (refill: refill, bucket, tokens, rate).
    let files = files_found(&index, &all());
    assert_eq!(ids(&files), [10, 20], "{files:?}");
    assert!(files[0].1 > files[1].1);

    // Filters apply: the file left out, or only the other's path or language admitted.
    let not_throttle = LexicalFilter {
        excluded_file: Some("src/throttle.rs".into()),
        ..all()
    };
    assert_eq!(ids(&files_found(&index, &not_throttle)), [20]);
    let only_limits = LexicalFilter {
        paths: Some(vec!["src/limits.rs".into(), "docs/other.py".into()]),
        ..all()
    };
    assert_eq!(ids(&files_found(&index, &only_limits)), [20]);
    let python = LexicalFilter {
        languages: vec![Language::Python],
        ..all()
    };
    assert!(files_found(&index, &python).is_empty());

    // A file answers with the first chunk of a chunk search's it holds.
    let weights = LexicalWeights::default();
    let ranked = index
        .search_files(SPREAD_QUESTION, 10, &all(), &weights, &[99, 12, 20, 11])
        .unwrap();
    assert_eq!(ids(&ranked), [12, 20]);
    assert_eq!(ranked[0].1, files[0].1, "the same file's score");

    // A file whose chunks are gone is gone.
    index.apply(&[10, 11, 12, 13, 14, 15], &[], 2).unwrap();
    assert_eq!(ids(&files_found(&index, &all())), [20]);
}

#[test]
fn a_file_scores_the_same_bits_however_its_chunks_lie_in_segments() {
    let chunks = spread_and_dense();
    let (_one, mut at_once) = new_writer();
    add(&mut at_once, &chunks, 1);
    // The same chunks over several commits, some of them deleted and added again.
    let (_many, mut piecemeal) = new_writer();
    for (generation, part) in chunks.chunks(3).enumerate() {
        add(&mut piecemeal, part, generation as u64 + 1);
    }
    let again: Vec<&StoredChunk> = chunks.iter().filter(|c| c.id % 2 == 0).collect();
    piecemeal.apply(&[], &again, 9).unwrap();
    assert_eq!(
        files_found(&at_once, &all()),
        files_found(&piecemeal, &all())
    );
}
