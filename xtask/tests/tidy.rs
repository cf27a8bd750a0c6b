//! The tree's shape, as docs/ARCHITECTURE.md keeps it: no source file past 700 lines, and no
//! files of one crate that reach each other through `crate::` or `super::` paths in a ring
//! (a module and the modules inside it aside).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The most lines a source file may have; a longer one is split along its seams.
const MAX_LINES: usize = 700;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the repository's root")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("a source folder reads") {
            let path = entry.expect("a folder entry reads").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Each crate's folder: the workspace's crates and xtask.
fn crates() -> Vec<PathBuf> {
    let root = root();
    let mut crates: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .expect("crates/ reads")
        .map(|entry| entry.expect("a folder entry reads").path())
        .collect();
    crates.push(root.join("xtask"));
    crates.sort();
    crates
}

#[test]
fn no_source_file_is_past_700_lines() {
    let long: Vec<String> = crates()
        .iter()
        .flat_map(|dir| rust_files(dir))
        .filter_map(|file| {
            let lines = fs::read_to_string(&file).ok()?.lines().count();
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", file.display()))
        })
        .collect();
    assert!(long.is_empty(), "split along their seams: {long:?}");
}

#[test]
fn no_files_of_a_crate_import_each_other_in_a_ring() {
    let mut rings = Vec::new();
    for dir in crates() {
        let src = dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let modules: BTreeMap<Vec<String>, PathBuf> = rust_files(&src)
            .into_iter()
            .map(|file| (module_of(&src, &file), file))
            .filter(|(module, _)| module.last().is_none_or(|last| last != "tests"))
            .collect();
        let mut edges: BTreeMap<&Vec<String>, BTreeSet<&Vec<String>>> = BTreeMap::new();
        for (module, file) in &modules {
            let text = fs::read_to_string(file).expect("a source file reads");
            for path in paths_named(module, &without_tests(&text)) {
                let target = (0..=path.len())
                    .rev()
                    .find_map(|n| modules.get_key_value(&path[..n]).map(|(key, _)| key));
                if let Some(target) = target
                    && !target.starts_with(module)
                    && !module.starts_with(target)
                {
                    edges.entry(module).or_default().insert(target);
                }
            }
        }
        for ring in strong_components(&edges) {
            rings.push(format!("{}: {ring:?}", dir.display()));
        }
    }
    assert!(rings.is_empty(), "files that import each other: {rings:?}");
}

/// The module path of `file` under `src` (`a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs` and
/// `main.rs` the root).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).expect("a file under src");
    let mut parts: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if (parts.len() == 1 && matches!(parts[0].as_str(), "lib" | "main"))
        || parts.last().is_some_and(|p| p == "mod")
    {
        parts.pop();
    }
    parts
}

/// `text` without its comment lines and without a test module that ends the file.
fn without_tests(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|pair| {
            // A block, not a `mod tests;` that names a file of its own (code may follow it).
            pair[0].trim() == "#[cfg(test)]"
                && pair[1].starts_with("mod ")
                && pair[1].trim_end().ends_with('{')
        })
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .filter(|line| !line.trim_start().starts_with("//"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths `text` (in `module`) names through `crate::` and `super::`, each as far
/// as it goes (`crate::a::{b::C, d}` names `a::b::C` and `a::d`).
fn paths_named(module: &[String], text: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for (start, _) in text
        .match_indices("crate::")
        .chain(text.match_indices("super::"))
    {
        let before = text[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut rest = &text[start..];
        let mut base: Vec<String> = match rest.starts_with("crate::") {
            true => {
                rest = &rest["crate::".len()..];
                Vec::new()
            }
            false => {
                let mut base = module.to_vec();
                while let Some(after) = rest.strip_prefix("super::") {
                    base.pop();
                    rest = after;
                }
                base
            }
        };
        collect(&mut base, rest, &mut paths);
    }
    paths
}

/// The paths `rest` spells after `base::`, into `paths`.
fn collect(base: &mut Vec<String>, rest: &str, paths: &mut Vec<Vec<String>>) {
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 0;
        let mut item_start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    collect(base, &group[item_start..i], paths);
                    return;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    collect(base, group[item_start..i].trim_start(), paths);
                    item_start = i + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let rest = rest.trim_start();
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if name.is_empty() {
        paths.push(base.clone());
        return;
    }
    base.push(name.clone());
    match rest[name.len()..].strip_prefix("::") {
        Some(after) => collect(base, after, paths),
        None => paths.push(base.clone()),
    }
    base.pop();
}

/// The groups of two or more modules that reach each other (Tarjan's strongly connected
/// components).
fn strong_components<'a>(
    edges: &BTreeMap<&'a Vec<String>, BTreeSet<&'a Vec<String>>>,
) -> Vec<Vec<String>> {
    struct Walk<'a, 'e> {
        edges: &'e BTreeMap<&'a Vec<String>, BTreeSet<&'a Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        components: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a, '_> {
        fn visit(&mut self, node: &'a Vec<String>) {
            let order = self.index.len();
            self.index.insert(node, (order, order));
            self.stack.push(node);
            for &next in self.edges.get(node).into_iter().flatten() {
                let low = match self.index.get(next) {
                    None => {
                        self.visit(next);
                        self.index[next].1
                    }
                    Some(&(order, _)) if self.stack.contains(&next) => order,
                    Some(_) => continue,
                };
                let entry = self.index.get_mut(node).expect("visited");
                entry.1 = entry.1.min(low);
            }
            let (order, low) = self.index[node];
            if order == low {
                let at = self
                    .stack
                    .iter()
                    .position(|&n| n == node)
                    .expect("on the stack");
                let component: Vec<String> = self
                    .stack
                    .drain(at..)
                    .map(|module| module.join("::"))
                    .collect();
                if component.len() > 1 {
                    self.components.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        components: Vec::new(),
    };
    for &node in edges.keys() {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.components
}

#[test]
fn the_checks_see_grouped_and_relative_paths_and_rings() {
    let module = |path: &str| -> Vec<String> { path.split("::").map(str::to_owned).collect() };
    let text = "use crate::{a::{B, c::D}, e};\nuse super::super::f::G;\n// crate::h\n";
    let named = paths_named(&module("x::y::z"), &without_tests(text));
    let expected = [
        module("a::B"),
        module("a::c::D"),
        module("e"),
        module("x::f::G"),
    ];
    assert_eq!(named, expected);
    let (a, b, c) = (module("a"), module("b"), module("c"));
    let edges = BTreeMap::from([(&a, BTreeSet::from([&b])), (&b, BTreeSet::from([&a, &c]))]);
    // a and b reach each other; c, reached from b only, is in no ring.
    assert_eq!(strong_components(&edges), [["a", "b"]]);
}
