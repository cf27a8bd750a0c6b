//! Graph keys: the one spelling of a file's path that every lookup uses.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::GraphError;

/// A file's key in the graph: its path relative to the repository root, components
/// joined by `/`, with no `.`, `..` or empty components (`src/lib.rs`).
///
/// Made by [`graph_key`] (or [`crate::FileGraph::key`]), so that every caller spells
/// a file the same way; deserialising checks the form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct FileKey(String);

impl FileKey {
    /// The key as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key's directory: everything before the last `/`, `""` at the root.
    pub(crate) fn dir(&self) -> &str {
        self.0.rsplit_once('/').map_or("", |(dir, _)| dir)
    }

    /// The last component.
    pub(crate) fn file_name(&self) -> &str {
        self.0.rsplit_once('/').map_or(&self.0, |(_, name)| name)
    }
}

impl fmt::Display for FileKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for FileKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for FileKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<FileKey> for String {
    fn from(key: FileKey) -> String {
        key.0
    }
}

impl TryFrom<String> for FileKey {
    type Error = GraphError;

    /// Accepts a string already in key form (as stored), refuses anything else.
    fn try_from(s: String) -> Result<Self, GraphError> {
        let normal = !s.is_empty()
            && !s.contains('\\')
            && s.split('/').all(|c| !matches!(c, "" | "." | ".."))
            && !is_drive(&s);
        if normal {
            Ok(FileKey(s))
        } else {
            Err(GraphError::NotAKey(s))
        }
    }
}

/// The graph key of `path`, a file of the repository at `root`.
///
/// The rules, applied to the text of both paths (nothing is read from the disk, and
/// symbolic links are not followed):
///
/// 1. `\` is a separator, like `/` (a Windows `\\?\` prefix is dropped).
/// 2. Empty and `.` components are dropped; `..` removes the component before it.
/// 3. An absolute path (`/…`, `C:/…`, `//server/…`) must lie below `root`, compared
///    component by component (drive letters in any case); `root` is dropped from its
///    front. If `root` itself is relative it is first made absolute against the
///    current directory.
/// 4. A relative path is relative to `root`, whatever the current directory:
///    `src/lib.rs`, `./src/lib.rs` and `src\lib.rs` are the same key.
///
/// ```
/// use quarry_graph::graph_key;
///
/// let root = "/work/repo";
/// for path in ["/work/repo/src/lib.rs", "./src/lib.rs", r"src\lib.rs", "src/x/../lib.rs"] {
///     assert_eq!(graph_key(root, path)?.as_str(), "src/lib.rs");
/// }
/// assert!(graph_key(root, "/work/other/lib.rs").is_err());
/// # Ok::<(), quarry_graph::GraphError>(())
/// ```
///
/// # Errors
///
/// [`GraphError::OutsideRoot`] for a path outside `root` (absolute, or climbing out
/// with `..`), [`GraphError::IsRoot`] for the root itself and
/// [`GraphError::NotUtf8`] for a path that is not UTF-8.
pub fn graph_key(root: impl AsRef<Path>, path: impl AsRef<Path>) -> Result<FileKey, GraphError> {
    let (root, path) = (root.as_ref(), path.as_ref());
    let outside = || GraphError::OutsideRoot {
        path: path.to_owned(),
        root: root.to_owned(),
    };
    let path_text = path
        .to_str()
        .ok_or_else(|| GraphError::NotUtf8(path.to_owned()))?;
    let relative = match Spelling::parse(path_text) {
        Spelling::Relative(components) => components,
        Spelling::Absolute(prefix, components) => {
            let mut root_text = Cow::Borrowed(utf8(root)?);
            if matches!(Spelling::parse(&root_text), Spelling::Relative(_)) {
                let absolute = std::path::absolute(root).map_err(|_| outside())?;
                root_text = Cow::Owned(utf8(&absolute)?.to_owned());
            }
            let Spelling::Absolute(root_prefix, root_components) = Spelling::parse(&root_text)
            else {
                return Err(outside());
            };
            if prefix != root_prefix || !components.starts_with(&root_components) {
                return Err(outside());
            }
            components[root_components.len()..].to_vec()
        }
    };
    let mut key = Vec::with_capacity(relative.len());
    for component in relative {
        if component == ".." {
            key.pop().ok_or_else(outside)?;
        } else {
            key.push(component);
        }
    }
    if key.is_empty() {
        return Err(GraphError::IsRoot(path.to_owned()));
    }
    Ok(FileKey(key.join("/")))
}

fn utf8(path: &Path) -> Result<&str, GraphError> {
    path.to_str()
        .ok_or_else(|| GraphError::NotUtf8(PathBuf::from(path)))
}

/// A path split into components, `.` and empty ones dropped. Absolute paths resolve
/// `..` against their prefix; relative ones keep a leading `..` for the caller.
enum Spelling<'a> {
    Relative(Vec<&'a str>),
    /// The prefix (`/`, `C:`, `//`) and the components after it.
    Absolute(String, Vec<&'a str>),
}

impl<'a> Spelling<'a> {
    fn parse(text: &'a str) -> Spelling<'a> {
        // Separators are normalised by splitting on both.
        let mut rest = text;
        for verbatim in [r"\\?\", "//?/"] {
            if let Some(stripped) = rest.strip_prefix(verbatim) {
                rest = stripped;
            }
        }
        let prefix = if is_drive(rest) {
            let drive = rest[..2].to_ascii_uppercase();
            rest = &rest[2..];
            Some(drive)
        } else if rest.starts_with(['/', '\\']) {
            let unc = rest[1..].starts_with(['/', '\\']);
            Some(if unc { "//" } else { "/" }.to_owned())
        } else {
            None
        };
        let components = rest
            .split(['/', '\\'])
            .filter(|c| !c.is_empty() && *c != ".");
        match prefix {
            None => Spelling::Relative(components.collect()),
            Some(prefix) => {
                let mut resolved = Vec::new();
                for component in components {
                    if component == ".." {
                        // `/..` is `/`, as the operating system has it.
                        resolved.pop();
                    } else {
                        resolved.push(component);
                    }
                }
                Spelling::Absolute(prefix, resolved)
            }
        }
    }
}

/// `C:` and the like, followed by a separator or nothing.
fn is_drive(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 2
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && bytes.get(2).is_none_or(|b| matches!(b, b'/' | b'\\'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(root: &str, path: &str) -> Result<String, GraphError> {
        graph_key(root, path).map(String::from)
    }

    #[test]
    fn relative_paths_are_relative_to_the_root() {
        for path in [
            "src/lib.rs",
            "./src/lib.rs",
            "src//lib.rs",
            "src/./lib.rs",
            "src/x/../lib.rs",
            r"src\lib.rs",
            r".\src\lib.rs",
            "src/lib.rs/",
        ] {
            assert_eq!(key("/repo", path).as_deref(), Ok("src/lib.rs"), "{path}");
            // The current directory plays no part for relative paths.
            assert_eq!(key("some/dir", path).as_deref(), Ok("src/lib.rs"), "{path}");
        }
    }

    #[test]
    fn absolute_paths_lose_the_root() {
        for root in ["/repo", "/repo/", "/repo/.", "/x/../repo", r"\repo"] {
            assert_eq!(
                key(root, "/repo/src/lib.rs").as_deref(),
                Ok("src/lib.rs"),
                "{root}"
            );
        }
        assert_eq!(key("/repo", "/repo/a/../b.rs").as_deref(), Ok("b.rs"));
    }

    #[test]
    fn windows_spellings() {
        let root = r"C:\work\repo";
        for path in [
            r"C:\work\repo\src\lib.rs",
            r"c:\work\repo\src\lib.rs",
            "C:/work/repo/src/lib.rs",
            r"\\?\C:\work\repo\src\lib.rs",
        ] {
            assert_eq!(key(root, path).as_deref(), Ok("src/lib.rs"), "{path}");
        }
        assert!(matches!(
            key(root, r"D:\work\repo\src\lib.rs"),
            Err(GraphError::OutsideRoot { .. })
        ));
        assert_eq!(
            key(r"\\server\share\repo", r"\\server\share\repo\a.c").as_deref(),
            Ok("a.c")
        );
    }

    #[test]
    fn the_root_is_a_whole_component() {
        assert!(matches!(
            key("/repo", "/repository/src/lib.rs"),
            Err(GraphError::OutsideRoot { .. })
        ));
        assert!(matches!(
            key("/repo", "/other/lib.rs"),
            Err(GraphError::OutsideRoot { .. })
        ));
    }

    #[test]
    fn climbing_out_is_outside() {
        for path in ["../lib.rs", "src/../../lib.rs", "/repo/../lib.rs"] {
            assert!(
                matches!(key("/repo", path), Err(GraphError::OutsideRoot { .. })),
                "{path}"
            );
        }
    }

    #[test]
    fn the_root_is_not_a_file() {
        for path in [".", "", "/repo", "/repo/", "src/.."] {
            assert!(
                matches!(key("/repo", path), Err(GraphError::IsRoot(_))),
                "{path}"
            );
        }
    }

    #[test]
    fn a_relative_root_meets_absolute_paths_in_the_current_directory() {
        let cwd = std::env::current_dir().unwrap();
        let inside = cwd.join("src").join("lib.rs");
        assert_eq!(
            graph_key(".", &inside).map(String::from).as_deref(),
            Ok("src/lib.rs")
        );
        assert_eq!(
            graph_key("src", &inside).map(String::from).as_deref(),
            Ok("lib.rs")
        );
    }

    #[test]
    fn stored_keys_are_checked() {
        assert!(FileKey::try_from("src/lib.rs".to_owned()).is_ok());
        for bad in [
            "",
            "/src/lib.rs",
            "./lib.rs",
            "a//b",
            r"a\b",
            "a/../b",
            "C:",
        ] {
            assert!(FileKey::try_from(bad.to_owned()).is_err(), "{bad}");
        }
        let key: FileKey = serde_json::from_str("\"src/lib.rs\"").unwrap();
        assert_eq!(key.as_str(), "src/lib.rs");
        assert!(serde_json::from_str::<FileKey>("\"/src/lib.rs\"").is_err());
    }

    #[test]
    fn parts() {
        let key = graph_key("/r", "a/b/c.rs").unwrap();
        assert_eq!((key.dir(), key.file_name()), ("a/b", "c.rs"));
        let key = graph_key("/r", "c.rs").unwrap();
        assert_eq!((key.dir(), key.file_name()), ("", "c.rs"));
    }
}
