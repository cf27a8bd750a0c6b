//! Every file of an index damaged in turn (truncated to half, 4 KB overwritten with seeded
//! random bytes, deleted): a reader either refuses to open with the fix, or searches answer
//! as before or with [`StoreError::Damaged`] (never a panic, never other results unless the
//! check reports the damage); [`Store::check`] reports what it can; and a writer's open and
//! checkpoint (what `quarry index` does) repair every derived index from the database.

mod common;

use common::Rng;
use std::collections::BTreeMap;
use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use quarry_chunk::ChunkKind;
use quarry_store::{
    Check, Damage, FileState, Filter, Hit, IndexPart, IndexSettings, Store, StoreError, StoredChunk,
};

const DIMENSIONS: usize = 16;
const FILES: usize = 60;
const CHUNKS_PER_FILE: usize = 10;
/// For the index with a graph: the graph is used from this many vectors on.
const GRAPH_FROM: u64 = 300;

fn settings() -> IndexSettings {
    common::settings("damage-test", DIMENSIONS)
}

fn unit(seed: u64) -> Vec<f32> {
    common::unit(seed, DIMENSIONS)
}

const WORDS: &[&str] = &[
    "parse_config",
    "loadFile",
    "retry",
    "backoff",
    "HttpClient",
    "request",
    "render_template",
    "session",
    "timeout",
    "flush",
];

fn chunk(id: u128, path: &str) -> StoredChunk {
    let word = |i: u128| WORDS[(i % WORDS.len() as u128) as usize];
    StoredChunk {
        id,
        path: path.into(),
        language: "rust".parse().unwrap(),
        kind: ChunkKind::Function,
        name: Some(format!("{}_{id}", word(id))),
        container: vec![],
        start_line: 1,
        end_line: 3,
        text: format!(
            "// {} then {}\nfn {}_{id}() {{ {}({}) + {} }}",
            word(id / 3),
            word(id / 7),
            word(id),
            word(id * 7),
            word(id + 3),
            word(id / 11)
        ),
    }
}

fn path_of(file: usize) -> String {
    format!("src/dir{}/file{file}.rs", file % 6)
}

/// Stores files `files` (chunk `c` of file `f` is `f * 10 + c + offset`) in one batch.
fn put(store: &Store, files: std::ops::Range<usize>, offset: u128) {
    let mut batch = store.write().unwrap();
    for file in files {
        let path = path_of(file);
        let ids: Vec<u128> = (0..CHUNKS_PER_FILE)
            .map(|c| (file * CHUNKS_PER_FILE + c) as u128 + offset)
            .collect();
        let vectors: Vec<Vec<f32>> = ids.iter().map(|&id| unit(id as u64)).collect();
        let new: Vec<(StoredChunk, &[f32])> = ids
            .iter()
            .zip(&vectors)
            .map(|(&id, v)| (chunk(id, &path), &v[..]))
            .collect();
        let state = FileState {
            path: path.clone(),
            content_hash: offset as u64,
            mtime_ns: 0,
            size: 0,
            chunk_ids: ids,
        };
        batch.put_file(&state, &new).unwrap();
    }
    batch.commit().unwrap();
}

/// An index of [`FILES`] files in several commits, a few files re-indexed, one removed and
/// two added (so that segments hold deletes), its vectors saved by a checkpoint: as rows,
/// or with `graph`, as a graph.
fn build(root: &Path, graph: bool) {
    let mut store = Store::open(root, settings()).unwrap();
    if graph {
        store.set_exact_scan_below(GRAPH_FROM);
    }
    for first in (0..FILES).step_by(20) {
        put(&store, first..first + 20, 0);
    }
    put(&store, 5..9, 10_000);
    // After tantivy's merges, a file removed and two added: segments with deletes.
    common::remove_file(&store, &path_of(30));
    put(&store, FILES..FILES + 2, 0);
    store.checkpoint().unwrap();
}

const QUERIES: &[&str] = &[
    "parse config",
    "load file",
    "retry with backoff",
    "http client request",
    "render template",
    "session timeout",
];

/// What searches answer: each query's lexical hits and each vector's dense hits, or the
/// error's message.
type Answers = Vec<Result<Vec<Hit>, String>>;

fn answers(store: &Store) -> Answers {
    let lexical = QUERIES
        .iter()
        .map(|q| store.search_lexical(q, 10, &Filter::default()));
    let dense = (0..4).map(|q| store.search_dense(&unit(1_000 + q), 10, &Filter::default()));
    lexical
        .chain(dense)
        .map(|answer| answer.map_err(|e| e.to_string()))
        .collect()
}

fn open_reader(root: &Path, graph: bool) -> Result<Store, StoreError> {
    let mut store = Store::open_read_only(root, settings())?;
    if graph {
        store.set_exact_scan_below(GRAPH_FROM);
    }
    Ok(store)
}

/// Every file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).unwrap();
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Harm {
    Truncate,
    Overwrite,
    Delete,
}

/// Damages `file` as `harm` says. An overwrite writes 4 KB of random bytes (seeded by
/// `seed`) at a random place, leaving the last 256 bytes (a tantivy file's footer, with its
/// checksum) alone where the file is large enough, so that the damage is inside the data.
fn damage(file: &Path, harm: Harm, seed: u64) {
    let bytes = fs::read(file).unwrap();
    match harm {
        Harm::Truncate => fs::write(file, &bytes[..bytes.len() / 2]).unwrap(),
        Harm::Delete => fs::remove_file(file).unwrap(),
        Harm::Overwrite => {
            let mut rng = Rng(seed | 1);
            let mut bytes = bytes;
            let room = bytes.len().saturating_sub(256);
            let (start, end) = if room > 4096 {
                let start = (rng.next() % (room - 4096) as u64) as usize;
                (start, start + 4096)
            } else {
                (0, bytes.len().min(4096))
            };
            for byte in &mut bytes[start..end] {
                *byte = rng.next() as u8;
            }
            fs::write(file, bytes).unwrap();
        }
    }
}

/// Files whose damage is harmless: tantivy's lock files (empty), the writer's lock, the
/// directory's `.gitignore`, and tantivy's list of its files (without it, tantivy only
/// forgets to delete files it no longer needs).
fn harmless(name: &str, harm: Harm) -> bool {
    matches!(
        name,
        ".gitignore" | "writer.lock" | ".tantivy-meta.lock" | ".tantivy-writer.lock"
    ) || (name == ".managed.json" && harm == Harm::Delete)
}

/// What one damaged file did, for the summary.
#[derive(Debug)]
enum Outcome {
    /// The reader would not open, with this message.
    Refused(String),
    /// Searches answered as before, and the check reported these.
    Same(Vec<Damage>),
    /// Some searches failed or answered otherwise, and the check reported these.
    Different(Vec<Damage>),
}

/// Damages each file of the pristine index at `pristine` (those `select` picks) in each way,
/// and checks the reader, the check and the writer's repair for each.
fn damage_each_file(pristine: &Path, graph: bool, select: impl Fn(&Path) -> bool) {
    let expected = answers(&open_reader(pristine, graph).unwrap());
    assert!(expected.iter().all(Result::is_ok), "{expected:?}");
    let index_dir = pristine.join(".quarry");
    let mut summary: BTreeMap<String, Vec<(Harm, String)>> = BTreeMap::new();
    let mut seed = 0x00da_3a6e_u64;
    for file in files_under(&index_dir).into_iter().filter(|f| select(f)) {
        let relative = file.strip_prefix(&index_dir).unwrap().to_path_buf();
        let name = relative.file_name().unwrap().to_string_lossy().into_owned();
        for harm in [Harm::Truncate, Harm::Overwrite, Harm::Delete] {
            seed += 1;
            let case = format!("{} {harm:?}", relative.display());
            let root = tempfile::tempdir().unwrap();
            copy_dir(&index_dir, &root.path().join(".quarry"));
            damage(&root.path().join(".quarry").join(&relative), harm, seed);

            let lexical = relative.starts_with("lexical");
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                read_damaged(root.path(), graph, &expected, lexical)
            }))
            .unwrap_or_else(|_| panic!("{case}: a panic reached the caller"));
            match &outcome {
                Outcome::Refused(message) => {
                    assert!(relative == Path::new("index.redb"), "{case}: {message}");
                    assert!(message.contains("quarry index"), "{case}: {message}");
                }
                Outcome::Same(damages) if harmless(&name, harm) => {
                    assert!(damages.is_empty(), "{case}: {damages:?}");
                }
                Outcome::Different(damages) => {
                    assert!(
                        !damages.is_empty(),
                        "{case}: other answers, and no damage found"
                    );
                }
                Outcome::Same(_) => {}
            }
            let detected = match &outcome {
                Outcome::Refused(_) => true,
                Outcome::Same(damages) | Outcome::Different(damages) => !damages.is_empty(),
            };
            // Everything but the database and the harmless files is found.
            if relative != Path::new("index.redb") && !harmless(&name, harm) {
                assert!(detected, "{case}: not found by the check");
            }
            for damage in match &outcome {
                Outcome::Same(d) | Outcome::Different(d) => d.as_slice(),
                Outcome::Refused(_) => &[],
            } {
                let message = damage.to_string();
                assert!(
                    message.contains("is damaged: rebuild with `quarry index --force`"),
                    "{case}: {message}"
                );
            }

            if relative != Path::new("index.redb") {
                repair(root.path(), graph, &expected, &case);
            }
            let described = match outcome {
                Outcome::Refused(message) => format!("refused: {message}"),
                Outcome::Same(d) => format!("same answers; check: {}", describe(&d)),
                Outcome::Different(d) => {
                    format!("errors or other answers; check: {}", describe(&d))
                }
            };
            summary
                .entry(relative.display().to_string())
                .or_default()
                .push((harm, described));
        }
    }
    for (file, outcomes) in summary {
        for (harm, outcome) in outcomes {
            eprintln!("{file} {harm:?}: {outcome}");
        }
    }
}

fn describe(damages: &[Damage]) -> String {
    match damages.first() {
        None => "nothing".into(),
        Some(first) => format!(
            "{} ({:?}, {} in all)",
            first.problem,
            first.part,
            damages.len()
        ),
    }
}

/// Opens the damaged index at `root` to read and searches it. Where the damage is in the
/// lexical index (`lexical`), a lexical search answers as before or fails: a reader checks
/// the files it loads, so damage never changes a ranking in silence.
fn read_damaged(root: &Path, graph: bool, expected: &Answers, lexical: bool) -> Outcome {
    let reader = match open_reader(root, graph) {
        Ok(reader) => reader,
        Err(error) => return Outcome::Refused(error.to_string()),
    };
    let found = answers(&reader);
    if lexical {
        for (query, (found, expected)) in QUERIES.iter().zip(found.iter().zip(expected)) {
            assert!(
                found.is_err() || found == expected,
                "{query:?}: other lexical answers, and no error"
            );
        }
    }
    for answer in &found {
        if let Err(message) = answer {
            assert!(
                message.ends_with("is damaged: rebuild with `quarry index --force`")
                    || message.contains("rebuild it with `quarry index --force`"),
                "an error that does not say what to do: {message}"
            );
        }
    }
    let damages = reader.check(Check::Full).unwrap_or_else(|error| {
        vec![Damage {
            part: IndexPart::Database,
            path: root.into(),
            problem: format!("the check failed: {error}"),
        }]
    });
    // A quick check finds a subset of what the full one does.
    if let Ok(quick) = reader.check(Check::Quick) {
        assert!(
            quick.iter().all(|d| damages.contains(d)),
            "{quick:?} {damages:?}"
        );
    }
    match found == *expected {
        true => Outcome::Same(damages),
        false => Outcome::Different(damages),
    }
}

/// Opens the damaged index at `root` as `quarry index` does (a writer, then a checkpoint),
/// and checks that it is whole again and answers as before.
fn repair(root: &Path, graph: bool, expected: &Answers, case: &str) {
    {
        let mut writer = Store::open(root, settings())
            .unwrap_or_else(|error| panic!("{case}: the writer does not open: {error}"));
        if graph {
            writer.set_exact_scan_below(GRAPH_FROM);
        }
        writer.checkpoint().unwrap();
    }
    let reader = open_reader(root, graph).unwrap();
    let damages = reader.check(Check::Full).unwrap();
    assert!(damages.is_empty(), "{case}: after the repair: {damages:?}");
    assert_eq!(answers(&reader), *expected, "{case}: after the repair");
}

#[test]
fn damage_to_any_file_of_an_index_is_an_error_or_harmless_found_and_repaired() {
    let pristine = tempfile::tempdir().unwrap();
    build(pristine.path(), false);
    damage_each_file(pristine.path(), false, |_| true);
}

#[test]
fn damage_to_a_saved_graph_is_scanned_around_found_and_repaired() {
    let pristine = tempfile::tempdir().unwrap();
    build(pristine.path(), true);
    let vectors = pristine.path().join(".quarry/vectors");
    assert!(vectors.join("meta.bin").is_file());
    damage_each_file(pristine.path(), true, |file| file.starts_with(&vectors));
}

#[test]
fn a_missing_lexical_index_is_an_error_not_an_empty_answer_and_the_next_writer_rebuilds_it() {
    let root = tempfile::tempdir().unwrap();
    build(root.path(), false);
    fs::remove_file(root.path().join(".quarry/lexical/meta.json")).unwrap();
    let reader = open_reader(root.path(), false).unwrap();
    let error = reader
        .search_lexical("retry", 10, &Filter::default())
        .unwrap_err();
    assert!(matches!(error, StoreError::Damaged { .. }), "{error}");
    let damages = reader.check(Check::Quick).unwrap();
    assert_eq!(damages.len(), 1, "{damages:?}");
    assert_eq!(damages[0].part, IndexPart::Lexical);
    assert!(
        damages[0].to_string().contains("meta.json is missing"),
        "{damages:?}"
    );

    let writer = Store::open(root.path(), settings()).unwrap();
    let notes = writer.notes();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("lexical index was damaged") && n.contains("rebuilt")),
        "{notes:?}"
    );
    assert!(writer.check(Check::Full).unwrap().is_empty());
    drop(writer);
    assert_eq!(
        reader
            .search_lexical("retry", 10, &Filter::default())
            .unwrap()
            .len(),
        10
    );
    assert!(reader.check(Check::Full).unwrap().is_empty());
}

#[test]
fn a_lexical_index_behind_the_database_is_reported_when_no_writer_works() {
    let root = tempfile::tempdir().unwrap();
    build(root.path(), false);
    let lexical = root.path().join(".quarry/lexical");
    let saved = tempfile::tempdir().unwrap();
    copy_dir(&lexical, saved.path());
    // A commit whose lexical half is then lost, as if the writer had died between the two.
    put(&Store::open(root.path(), settings()).unwrap(), 0..1, 20_000);
    fs::remove_dir_all(&lexical).unwrap();
    copy_dir(saved.path(), &lexical);

    let reader = open_reader(root.path(), false).unwrap();
    let damages = reader.check(Check::Quick).unwrap();
    assert_eq!(damages.len(), 1, "{damages:?}");
    assert!(
        damages[0].problem.contains("a writer stopped"),
        "{damages:?}"
    );
    // The next writer's open brings it up to date.
    let writer = Store::open(root.path(), settings()).unwrap();
    assert!(
        writer.notes().iter().any(|n| n.contains("behind")),
        "{:?}",
        writer.notes()
    );
    drop(writer);
    assert!(reader.check(Check::Full).unwrap().is_empty());
}

/// redb's integrity check (`quarry status --deep`) finds what the full check cannot: bytes
/// overwritten across the middle of the database, where the vectors and records lie.
#[test]
fn the_page_check_finds_damage_inside_the_database() {
    let root = tempfile::tempdir().unwrap();
    build(root.path(), false);
    assert_eq!(Store::check_pages(root.path()).unwrap(), Vec::new());
    let database = root.path().join(".quarry/index.redb");
    let mut bytes = fs::read(&database).unwrap();
    let (start, end) = (bytes.len() / 4, bytes.len() * 3 / 4);
    let mut rng = Rng(0xdeeb);
    for byte in &mut bytes[start..end] {
        *byte = rng.next() as u8;
    }
    fs::write(&database, bytes).unwrap();
    let damage = Store::check_pages(root.path()).unwrap();
    assert_eq!(damage.len(), 1, "{damage:?}");
    assert_eq!(damage[0].part, IndexPart::Database);
    assert!(
        damage[0].to_string().contains("quarry index --force"),
        "{damage:?}"
    );
}

#[test]
fn the_page_check_is_refused_while_another_writer_works() {
    let root = tempfile::tempdir().unwrap();
    build(root.path(), false);
    let _writer = Store::open(root.path(), settings()).unwrap();
    let error = Store::check_pages(root.path()).unwrap_err();
    assert!(matches!(error, StoreError::Locked { .. }), "{error}");
}
