//! Python: `import a.b`, `from a.b import c`, `from ..a import b`, anywhere in a file.

use tree_sitter::Node;

use super::{Found, Sink};
use crate::FileKey;
use crate::imports::Import;
use crate::repo::{Repo, join_dir};

pub(crate) const QUERY: &str = r#"
(import_statement) @import
(import_from_statement) @from
"#;

pub(crate) fn collect(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    if let Some(statement) = found.get("import") {
        for name in field_nodes(statement, "name") {
            sink.imports.push(Import::Python {
                level: 0,
                module: dotted(found, name),
                names: Vec::new(),
            });
        }
    } else if let Some(statement) = found.get("from") {
        let Some(module) = statement.child_by_field_name("module_name") else {
            return;
        };
        let (level, module) = if module.kind() == "relative_import" {
            let mut cursor = module.walk();
            let mut level = 0;
            let mut path = Vec::new();
            for child in module.named_children(&mut cursor) {
                match child.kind() {
                    "import_prefix" => level = found.text(child).matches('.').count(),
                    _ => path = dotted(found, child),
                }
            }
            (level, path)
        } else {
            (0, dotted(found, module))
        };
        // `from m import *` has no names: it needs `m` itself.
        let names = field_nodes(statement, "name")
            .into_iter()
            .map(|name| dotted(found, name).join("."))
            .collect();
        sink.imports.push(Import::Python {
            level,
            module,
            names,
        });
    }
}

fn field_nodes<'t>(node: Node<'t>, field: &str) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.children_by_field_name(field, &mut cursor).collect()
}

/// The segments of a `dotted_name`, or of the name of an `aliased_import`.
fn dotted(found: &Found<'_, '_, '_>, node: Node<'_>) -> Vec<String> {
    let name = match node.kind() {
        "aliased_import" => node.child_by_field_name("name").unwrap_or(node),
        _ => node,
    };
    found
        .text(name)
        .split('.')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The directories absolute imports are searched from, in order: the file's own
/// directory when it is not inside a package (a script: `sys.path[0]`), the root,
/// then every directory holding a top-level package (`src/` layouts and the like).
fn search_roots<'r>(repo: &'r Repo<'_>, key: &'r FileKey) -> Vec<&'r str> {
    let mut roots = Vec::with_capacity(repo.python_roots.len() + 2);
    let dir = key.dir();
    if repo.file(&join_dir(dir, "__init__.py")).is_none() {
        roots.push(dir);
    }
    for root in std::iter::once("").chain(repo.python_roots.iter().map(String::as_str)) {
        if !roots.contains(&root) {
            roots.push(root);
        }
    }
    roots
}

/// Directories holding a top-level package: a directory with an `__init__.py`
/// whose parent has none.
pub(crate) fn import_roots(keys: &[FileKey]) -> Vec<String> {
    let packages: std::collections::HashSet<&str> = keys
        .iter()
        .filter(|k| k.file_name() == "__init__.py")
        .map(FileKey::dir)
        .collect();
    let mut roots: Vec<String> = packages
        .iter()
        .filter(|package| !package.is_empty())
        .map(|package| package.rsplit_once('/').map_or("", |(parent, _)| parent))
        .filter(|parent| !packages.contains(parent) && !parent.is_empty())
        .map(str::to_owned)
        .collect();
    roots.sort_unstable();
    roots.dedup();
    roots
}

/// The file of module `path` under `base`: `a/b.py`, `a/b/__init__.py` (or their
/// `.pyi` stubs); `base/__init__.py` for the empty path.
fn module_file(repo: &Repo<'_>, base: &str, path: &[String]) -> Option<u32> {
    let dir = if path.is_empty() {
        base.to_owned()
    } else {
        join_dir(base, &path.join("/"))
    };
    let module = |ext: &str| (!path.is_empty()).then(|| format!("{dir}.{ext}"));
    [
        module("py"),
        Some(join_dir(&dir, "__init__.py")),
        module("pyi"),
        Some(join_dir(&dir, "__init__.pyi")),
    ]
    .into_iter()
    .flatten()
    .find_map(|candidate| repo.file(&candidate))
}

/// A name imported `from` a module is a submodule when it has a file, else it is
/// defined in the module's own file. Absolute imports try each search root in turn;
/// a module path with no file falls back to its longest prefix that has one
/// (`import os.path` → `os.py`).
pub(crate) fn resolve(
    repo: &Repo<'_>,
    file: u32,
    level: usize,
    module: &[String],
    names: &[String],
) -> Vec<u32> {
    let key = repo.key(file);
    let bases = if level == 0 {
        search_roots(repo, key)
    } else {
        let mut base = key.dir();
        for _ in 1..level {
            if base.is_empty() {
                return Vec::new();
            }
            base = base.rsplit_once('/').map_or("", |(parent, _)| parent);
        }
        vec![base]
    };
    for base in bases {
        let mut ids = Vec::new();
        let mut needs_module = names.is_empty();
        for name in names {
            let path: Vec<String> = module
                .iter()
                .cloned()
                .chain(name.split('.').map(str::to_owned))
                .collect();
            match module_file(repo, base, &path) {
                Some(id) => ids.push(id),
                None => needs_module = true,
            }
        }
        if needs_module {
            let shortest = if level == 0 { 1 } else { module.len() };
            if let Some(id) = (shortest..=module.len())
                .rev()
                .find_map(|len| module_file(repo, base, &module[..len]))
            {
                ids.push(id);
            }
        }
        if !ids.is_empty() {
            return ids;
        }
    }
    Vec::new()
}
