//! The repository as resolution sees it: which files exist, where directories are,
//! and who declares which names.

use std::collections::{HashMap, HashSet};

use crate::FileKey;
use crate::imports::{Declared, Family, FileImports};

/// Every file of the graph by key and id (its position in the sorted keys), with the
/// indexes the resolvers look things up in.
pub(crate) struct Repo<'a> {
    keys: &'a [FileKey],
    ids: HashMap<&'a str, u32>,
    /// Directories by their last component, each list sorted.
    named_dirs: HashMap<&'a str, Vec<&'a str>>,
    /// Files directly inside each directory.
    children: HashMap<&'a str, Vec<u32>>,
    /// Directories C includes are searched in: configured ones, every directory named
    /// `include`, then those the includes are written from
    /// ([`include_roots`](crate::lang::paths::include_roots)).
    pub(crate) include_dirs: Vec<String>,
    /// Directories holding a top-level Python package.
    pub(crate) python_roots: Vec<String>,
    /// Rust library crates: name → the directory of its `lib.rs`.
    pub(crate) crates: HashMap<String, String>,
    /// Go modules: path → directory of its `go.mod`, longest path first.
    pub(crate) go_modules: Vec<(String, String)>,
    names: HashMap<(Family, &'a str), Vec<u32>>,
    namespaces: HashMap<(Family, &'a str), Vec<u32>>,
}

impl<'a> Repo<'a> {
    /// Indexes `keys` (sorted, distinct) and what `files` (same order) declare;
    /// `python_roots` are the directories Python imports start from.
    pub(crate) fn new(
        keys: &'a [FileKey],
        files: &'a [FileImports],
        include_dirs: &[String],
        python_roots: Vec<String>,
    ) -> Self {
        let mut repo = Repo {
            keys,
            ids: HashMap::with_capacity(keys.len()),
            named_dirs: HashMap::new(),
            children: HashMap::new(),
            include_dirs: include_dirs.to_vec(),
            python_roots,
            crates: HashMap::new(),
            go_modules: Vec::new(),
            names: HashMap::new(),
            namespaces: HashMap::new(),
        };
        let mut dirs = HashSet::new();
        for (id, key) in keys.iter().enumerate() {
            let id = id as u32;
            repo.ids.insert(key.as_str(), id);
            repo.children.entry(key.dir()).or_default().push(id);
            let mut dir = key.dir();
            while !dir.is_empty() && dirs.insert(dir) {
                dir = dir.rsplit_once('/').map_or("", |(parent, _)| parent);
            }
        }
        for dir in dirs {
            repo.named_dirs
                .entry(last_component(dir))
                .or_default()
                .push(dir);
        }
        for dirs in repo.named_dirs.values_mut() {
            dirs.sort_unstable();
        }
        for &dir in repo.named_dirs.get("include").into_iter().flatten() {
            if !repo.include_dirs.iter().any(|d| d == dir) {
                repo.include_dirs.push(dir.to_owned());
            }
        }
        for (id, (key, file)) in keys.iter().zip(files).enumerate() {
            let id = id as u32;
            for declared in &file.declared {
                match declared {
                    Declared::Name(family, name) => {
                        push_unique(repo.names.entry((*family, name)).or_default(), id);
                    }
                    Declared::Namespace(family, name) => {
                        push_unique(repo.namespaces.entry((*family, name)).or_default(), id);
                    }
                    Declared::Crate(name) => {
                        let src = join_dir(key.dir(), "src");
                        if repo.file(&join_dir(&src, "lib.rs")).is_some() {
                            repo.crates.entry(name.clone()).or_insert(src);
                        }
                    }
                    Declared::GoModule(path) => {
                        repo.go_modules.push((path.clone(), key.dir().to_owned()));
                    }
                }
            }
        }
        repo.go_modules
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        repo
    }

    /// Every file's key, sorted: the ids are their positions.
    pub(crate) fn keys(&self) -> &'a [FileKey] {
        self.keys
    }

    /// The id of the file at `path` (a key's spelling), if there is one.
    pub(crate) fn file(&self, path: &str) -> Option<u32> {
        self.ids.get(path).copied()
    }

    /// The key of file `id`.
    pub(crate) fn key(&self, id: u32) -> &'a FileKey {
        &self.keys[id as usize]
    }

    /// The files directly inside `dir`.
    pub(crate) fn files_in(&self, dir: &str) -> &[u32] {
        self.children.get(dir).map_or(&[], Vec::as_slice)
    }

    /// Every directory named `name`, sorted.
    pub(crate) fn dirs_named(&self, name: &str) -> &[&'a str] {
        self.named_dirs.get(name).map_or(&[], Vec::as_slice)
    }

    /// The files a dotted `name` of `family` refers to: the files declaring it, else
    /// those of the namespace it names, else (with `prefixes`) the files declaring
    /// its longest declared prefix (`a.b.C.Inner` → `a.b.C`).
    pub(crate) fn qualified(&self, family: Family, name: &str, prefixes: bool) -> Vec<u32> {
        if let Some(ids) = self.names.get(&(family, name)) {
            return ids.clone();
        }
        if let Some(ids) = self.namespaces.get(&(family, name)) {
            return ids.clone();
        }
        if prefixes {
            let mut prefix = name;
            while let Some((shorter, _)) = prefix.rsplit_once('.') {
                if let Some(ids) = self.names.get(&(family, shorter)) {
                    return ids.clone();
                }
                prefix = shorter;
            }
        }
        Vec::new()
    }

    /// The Swift files of the SwiftPM target `module`: every `.swift` file below a
    /// directory `Sources/<module>`.
    pub(crate) fn swift_module(&self, module: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        for &sources in self.dirs_named("Sources") {
            let dir = join_dir(sources, module);
            let prefix = format!("{dir}/");
            let start = self.keys.partition_point(|k| k.as_str() < prefix.as_str());
            ids.extend(
                (start..self.keys.len())
                    .take_while(|&i| self.keys[i].as_str().starts_with(&prefix))
                    .filter(|&i| self.keys[i].as_str().ends_with(".swift"))
                    .map(|i| i as u32),
            );
        }
        ids
    }
}

fn push_unique(ids: &mut Vec<u32>, id: u32) {
    if ids.last() != Some(&id) {
        ids.push(id);
    }
}

fn last_component(dir: &str) -> &str {
    dir.rsplit_once('/').map_or(dir, |(_, last)| last)
}

/// `dir/name`, or `name` at the root.
pub(crate) fn join_dir(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// `rel` (with `/`, `.` and `..`) taken from `dir`, spelt as a key (`""` for the
/// root); `None` if it climbs out of the repository.
pub(crate) fn join(dir: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|c| !c.is_empty()).collect();
    for component in rel.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            _ => parts.push(component),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins() {
        assert_eq!(join("a/b", "../c.h").as_deref(), Some("a/c.h"));
        assert_eq!(join("a/b", "./c/./d.h").as_deref(), Some("a/b/c/d.h"));
        assert_eq!(join("", "c.h").as_deref(), Some("c.h"));
        assert_eq!(join("a", "../../c.h"), None);
        assert_eq!(join("a", "..").as_deref(), Some(""));
        assert_eq!(join("", ".."), None);
        assert_eq!(join_dir("", "x"), "x");
        assert_eq!(join_dir("a", "x"), "a/x");
    }
}
