//! Which directories may be a repository's root: a mistaken `--root /` would walk the whole
//! machine (and `/proc`'s endless files) and leave an index at the top of every project.

use std::path::{Path, PathBuf};

use crate::EngineError;

/// Directories that hold the system, not a project: refused as they are.
const SYSTEM_DIRS: &[&str] = &[
    "/", "/bin", "/boot", "/etc", "/home", "/lib", "/lib64", "/mnt", "/opt", "/root", "/sbin",
    "/srv", "/usr", "/var", "/Users", "/Volumes", "/System", "/Library",
];

/// Trees of special files: refused with everything below them.
const SPECIAL_TREES: &[&str] = &["/dev", "/proc", "/sys", "/run"];

/// The files that make a directory a project even where it would otherwise be refused
/// (a home directory kept in git).
const PROJECT_MARKERS: &[&str] = &[".git", quarry_store::INDEX_DIR];

/// Refuses a root that is a system directory or a tree of special files, and the temporary
/// or home directory unless it holds `.git` or `.quarry`.
pub fn check_root(root: &Path) -> Result<(), EngineError> {
    let Ok(canonical) = root.canonicalize() else {
        // Not there: the caller's own check says so.
        return Ok(());
    };
    let refuse = |what: &'static str| {
        Err(EngineError::NotAProject {
            path: root.to_path_buf(),
            what,
        })
    };
    if SPECIAL_TREES.iter().any(|tree| canonical.starts_with(tree)) {
        return refuse("a tree of special files");
    }
    if SYSTEM_DIRS.iter().any(|dir| canonical == Path::new(dir)) {
        return refuse("a system directory");
    }
    if PROJECT_MARKERS.iter().any(|m| canonical.join(m).exists()) {
        return Ok(());
    }
    let temporary = [std::env::temp_dir(), PathBuf::from("/tmp")];
    if temporary.into_iter().any(|dir| same_dir(&canonical, dir)) {
        return refuse("the temporary directory");
    }
    if std::env::var_os("HOME").is_some_and(|home| same_dir(&canonical, PathBuf::from(home))) {
        return refuse("the home directory");
    }
    Ok(())
}

fn same_dir(canonical: &Path, other: PathBuf) -> bool {
    other.canonicalize().is_ok_and(|other| other == canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_directories_are_refused_and_projects_are_not() {
        for path in [
            "/",
            "/proc",
            "/proc/self",
            "/sys/kernel",
            "/usr",
            "/etc",
            "/dev",
        ] {
            let path = Path::new(path);
            if path.exists() {
                let error = check_root(path).unwrap_err().to_string();
                assert!(error.contains("not a project"), "{error}");
            }
        }
        let project = tempfile::tempdir().unwrap();
        check_root(project.path()).unwrap();
    }
}
