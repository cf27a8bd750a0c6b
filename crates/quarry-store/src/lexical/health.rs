//! Whether the lexical index's files are whole: what [`inspect`] finds wrong with them, the
//! mark a search leaves when tantivy failed or panicked on them, and how tantivy's errors
//! and panics become [`StoreError::Damaged`].

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use tantivy::directory::Directory;
use tantivy::{Index, TantivyError};

use crate::StoreError;
use crate::panics::{catch_quietly, panic_message};

/// The file a search that found the index damaged leaves in its directory: the reason on
/// the first line, then the segments it had loaded, one per line. A writer that opens the
/// index while any of those segments is still part of it rebuilds it; the wipe removes it.
pub(super) const DAMAGE_MARK: &str = "quarry-damaged";

/// The files tantivy writes for every segment (its built-in plugins' extensions), beside
/// `<segment>.<opstamp>.del` for a segment with deletes.
const SEGMENT_EXTENSIONS: [&str; 6] = ["idx", "pos", "term", "fieldnorm", "fast", "store"];

/// What the lexical index is called in messages.
pub(super) const WHAT: &str = "the lexical index";

/// How closely [`inspect`] looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Depth {
    /// Its metadata, the files it lists (present, with tantivy's footer at their end) and a
    /// search's mark: no file is read but `meta.json`, `.managed.json` and the footers.
    Quick,
    /// Also every segment file's checksum (tantivy's footer records a CRC32 of the file):
    /// reads the whole index once.
    Full,
}

/// What [`inspect`] found.
#[derive(Debug, Default)]
pub(crate) struct Inspection {
    /// No `meta.json`, and nothing else of an index either: there is none.
    pub absent: bool,
    /// What is wrong, one line each; empty if the index is whole (or absent).
    pub problems: Vec<String>,
    /// The database generation its last commit records, when readable.
    pub generation: Option<u64>,
    /// Its live documents (chunks), when readable.
    pub documents: Option<u64>,
}

/// Looks at the lexical index in `dir` without opening its segments.
pub(crate) fn inspect(dir: &Path, depth: Depth) -> Inspection {
    let mut found = Inspection::default();
    if !dir.join("meta.json").is_file() {
        let leftovers = fs::read_dir(dir).is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                SEGMENT_EXTENSIONS.iter().any(|ext| name.ends_with(ext))
            })
        });
        match leftovers {
            true => found.problems.push("its meta.json is missing".into()),
            false => found.absent = true,
        }
        return found;
    }
    let index = match guarded(|| Index::open_in_dir(dir)) {
        Ok(index) => index,
        Err(problem) => {
            found.problems.push(format!("unreadable: {problem}"));
            return found;
        }
    };
    if index.schema() != super::schema().0 {
        found
            .problems
            .push("it was built by another version of quarry".into());
        return found;
    }
    let metas = match guarded(|| index.load_metas()) {
        Ok(metas) => metas,
        Err(problem) => {
            found.problems.push(format!("unreadable: {problem}"));
            return found;
        }
    };
    found.generation = metas.payload.as_deref().and_then(|p| p.parse().ok());
    found.documents = Some(metas.segments.iter().map(|s| u64::from(s.num_docs())).sum());
    for file in segment_files(&metas) {
        if let Err(problem) = check_file(dir, &index, &file, depth) {
            found.problems.push(problem);
        }
    }
    if let Some(reason) = read_mark(dir, &metas) {
        found
            .problems
            .push(format!("a search found it damaged: {reason}"));
    }
    found
}

/// Every file of every segment `metas` lists: a segment's files never change once written
/// (its deletes go to a new `.del` file named by their opstamp).
fn segment_files(metas: &tantivy::IndexMeta) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for segment in &metas.segments {
        let id = segment.id().uuid_string();
        files.extend(
            SEGMENT_EXTENSIONS
                .iter()
                .map(|ext| PathBuf::from(format!("{id}.{ext}"))),
        );
        if let Some(opstamp) = segment.delete_opstamp() {
            files.push(PathBuf::from(format!("{id}.{opstamp}.del")));
        }
    }
    files
}

/// Whether `file` of the index in `dir` is there and whole as `depth` looks; else what is
/// wrong with it, naming it.
fn check_file(dir: &Path, index: &Index, file: &Path, depth: Depth) -> Result<(), String> {
    let checked = match depth {
        _ if !dir.join(file).is_file() => Err("is missing".to_owned()),
        // Opening a file reads and checks its footer.
        Depth::Quick => guarded(|| Ok(index.directory().open_read(file).map(drop)?)),
        Depth::Full => match guarded(|| Ok(index.directory().validate_checksum(file)?)) {
            Ok(false) => Err("does not match its checksum".to_owned()),
            checked => checked.map(drop),
        },
    };
    checked.map_err(|problem| format!("{} {problem}", file.display()))
}

/// Checks the checksum of every file of `metas`' segments not in `verified` (and adds it
/// there): a reader calls it when it loads a commit, so that a damaged file is an error
/// before a search reads it, not a ranking quietly changed; each file is read once per
/// process. The first problem found is the error.
pub(crate) fn verify_new_files(
    dir: &Path,
    index: &Index,
    metas: &tantivy::IndexMeta,
    verified: &mut HashSet<PathBuf>,
) -> Result<(), String> {
    for file in segment_files(metas) {
        if verified.contains(&file) {
            continue;
        }
        check_file(dir, index, &file, Depth::Full)?;
        verified.insert(file);
    }
    Ok(())
}

/// The reason of the mark a search left in `dir`, if it names a segment of `metas` (a mark
/// left on segments since replaced is stale).
fn read_mark(dir: &Path, metas: &tantivy::IndexMeta) -> Option<String> {
    let mark = fs::read_to_string(dir.join(DAMAGE_MARK)).ok()?;
    let mut lines = mark.lines();
    let reason = lines.next().unwrap_or("").to_owned();
    let marked: Vec<&str> = lines.collect();
    let current = |id: &str| metas.segments.iter().any(|s| s.id().uuid_string() == id);
    (marked.is_empty() || marked.iter().any(|id| current(id))).then_some(reason)
}

/// Leaves the mark of a search that found the index in `dir` damaged (best effort: a reader
/// may not be allowed to write there, and the error it reports says what to do anyway).
pub(super) fn mark(dir: &Path, reason: &str, segments: impl Iterator<Item = String>) {
    let mut text = reason.replace('\n', " ");
    for segment in segments {
        text.push('\n');
        text.push_str(&segment);
    }
    let _ = fs::write(dir.join(DAMAGE_MARK), text);
}

/// Runs tantivy's `work`, a panic inside it caught and described: tantivy panics on some
/// damaged files (a corrupt posting list, `postings/compression/vint.rs`) rather than
/// returning an error.
pub(super) fn guarded<T>(work: impl FnOnce() -> tantivy::Result<T>) -> Result<T, String> {
    match catch_quietly(work) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(short(&error.to_string())),
        Err(panic) => Err(format!(
            "tantivy panicked: {}",
            short(&panic_message(&*panic))
        )),
    }
}

/// As [`guarded`], for reading the index: a panic, or an error that means damaged files,
/// is [`StoreError::Damaged`]; another error (out of memory, a permission) is
/// [`StoreError::Lexical`].
pub(super) fn reading<T>(
    dir: &Path,
    work: impl FnOnce() -> tantivy::Result<T>,
) -> Result<T, StoreError> {
    match catch_quietly(work) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) if is_damage(&error) => Err(damaged(dir, short(&error.to_string()))),
        Ok(Err(error)) => Err(StoreError::Lexical {
            path: dir.to_path_buf(),
            message: error.to_string(),
        }),
        Err(panic) => Err(damaged(
            dir,
            format!("tantivy panicked: {}", short(&panic_message(&*panic))),
        )),
    }
}

/// [`StoreError::Damaged`] for the lexical index in `dir`.
pub(super) fn damaged(dir: &Path, detail: String) -> StoreError {
    StoreError::Damaged {
        path: dir.to_path_buf(),
        what: WHAT.into(),
        detail,
    }
}

/// Whether tantivy's `error` says that the index's files are not what it wrote.
fn is_damage(error: &TantivyError) -> bool {
    use std::io::ErrorKind;
    use tantivy::directory::error::{OpenDirectoryError, OpenReadError};
    // tantivy reports most malformed data as `ErrorKind::Other` (an unknown dictionary type,
    // say): what is not about the machine is about the files.
    let damaged_io = |kind: ErrorKind| {
        !matches!(
            kind,
            ErrorKind::PermissionDenied
                | ErrorKind::OutOfMemory
                | ErrorKind::Interrupted
                | ErrorKind::WouldBlock
                | ErrorKind::StorageFull
        )
    };
    match error {
        TantivyError::DataCorruption(_)
        | TantivyError::IncompatibleIndex(_)
        | TantivyError::SchemaError(_)
        | TantivyError::FieldNotFound(_) => true,
        TantivyError::OpenReadError(OpenReadError::IoError { io_error, .. }) => {
            damaged_io(io_error.kind())
        }
        TantivyError::OpenReadError(_) => true,
        TantivyError::OpenDirectoryError(OpenDirectoryError::DoesNotExist(_)) => true,
        TantivyError::IoError(io_error) => damaged_io(io_error.kind()),
        _ => false,
    }
}

/// At most 200 characters of `message`: tantivy quotes a whole unreadable `meta.json`.
fn short(message: &str) -> String {
    const MAX: usize = 200;
    match message.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}...", &message[..end]),
        None => message.to_owned(),
    }
}
