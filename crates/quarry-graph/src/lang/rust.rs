//! Rust: `mod` declarations, `use` trees (also inside macro calls such as tokio's
//! `cfg_rt! { … }`), crate names from `Cargo.toml`.

use tree_sitter::Node;

use super::{Found, Sink};
use crate::imports::Import;
use crate::repo::{Repo, join, join_dir};

pub(crate) const QUERY: &str = r#"
(mod_item name: (identifier) @name) @mod
(use_declaration argument: (_) @use)
(macro_invocation (token_tree) @tokens)
"#;

pub(crate) fn collect(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    if let Some(item) = found.get("mod") {
        let inline = inline_modules(found, item);
        let name = identifier(found.text_of("name")).to_owned();
        sink.rust.modules.push((inline.clone(), name.clone()));
        // An inline module's items are matches of their own.
        if item.child_by_field_name("body").is_none() {
            sink.imports.push(Import::RustMod {
                inline,
                name,
                path: path_attribute(found, item),
            });
        }
    } else if let Some(argument) = found.get("use") {
        let inline = inline_modules(found, argument);
        push_uses(sink, &inline, found.text(argument));
    } else if let Some(tokens) = found.get("tokens") {
        let inline = inline_modules(found, tokens);
        scan_tokens(found, tokens, &inline, sink);
    }
}

/// What a file's `use`s and modules bring into scope, per inline module, for
/// [`finish`].
#[derive(Debug, Default)]
pub(crate) struct Scopes {
    /// (inline modules, name, path): `use a::b;` binds `b` to `a::b`.
    bindings: Vec<(Vec<String>, String, Vec<String>)>,
    /// (inline modules, name) of every `mod`.
    modules: Vec<(Vec<String>, String)>,
}

/// Rewrites `use` paths that start with a name the file brought into scope: a
/// module it declares (`mod sealed { … }` then `use sealed::X` is `self::sealed::X`)
/// or a name another `use` bound (`use crate::runtime::scheduler;` then
/// `use scheduler::Context` is `crate::runtime::scheduler::Context`).
pub(crate) fn finish(sink: &mut Sink) {
    let scopes = std::mem::take(&mut sink.rust);
    for import in &mut sink.imports {
        let Import::RustUse { inline, path } = import else {
            continue;
        };
        // An alias may name another alias; the bound stops cycles.
        for _ in 0..4 {
            let first = path[0].as_str();
            if matches!(first, "crate" | "self" | "super") {
                break;
            }
            if scopes
                .modules
                .iter()
                .any(|(scope, name)| scope == inline && name == first)
            {
                path.insert(0, "self".to_owned());
                break;
            }
            let Some((_, _, bound)) = scopes
                .bindings
                .iter()
                // `use a::a;` binds `a` to a path starting with `a`: left alone.
                .find(|(scope, name, bound)| scope == inline && name == first && bound[0] != first)
            else {
                break;
            };
            let rest = path.split_off(1);
            *path = bound.clone();
            path.extend(rest);
        }
    }
}

/// Items inside macro calls are not parsed, only tokenised: `mod name ;` (with a
/// `#[path = "…"]` before it), `mod name { … }` and `use … ;` are read from the
/// tokens, in nested token trees too.
fn scan_tokens(found: &Found<'_, '_, '_>, tree: Node<'_>, inline: &[String], sink: &mut Sink) {
    let mut cursor = tree.walk();
    let tokens: Vec<Node<'_>> = tree.children(&mut cursor).collect();
    let mut path = None;
    for (i, token) in tokens.iter().enumerate() {
        match token.kind() {
            "token_tree" => {
                let attribute = i > 0 && tokens[i - 1].kind() == "#";
                if attribute {
                    path = path_value(found.text(*token)).or(path);
                } else if let [.., keyword, name] = &tokens[..i]
                    && keyword.kind() == "mod"
                    && name.kind() == "identifier"
                {
                    let name = identifier(found.text(*name)).to_owned();
                    sink.rust.modules.push((inline.to_vec(), name.clone()));
                    scan_tokens(found, *token, &[inline, &[name]].concat(), sink);
                } else {
                    scan_tokens(found, *token, inline, sink);
                }
            }
            "mod" => {
                if let [name, semicolon, ..] = &tokens[i + 1..]
                    && name.kind() == "identifier"
                    && semicolon.kind() == ";"
                {
                    let name = identifier(found.text(*name)).to_owned();
                    sink.rust.modules.push((inline.to_vec(), name.clone()));
                    sink.imports.push(Import::RustMod {
                        inline: inline.to_vec(),
                        name,
                        path: path.take(),
                    });
                }
            }
            "use" => {
                if let Some(end) = tokens[i + 1..].iter().find(|t| t.kind() == ";") {
                    let tree_text = found
                        .text
                        .get(token.end_byte()..end.start_byte())
                        .unwrap_or_default();
                    push_uses(sink, inline, tree_text);
                }
            }
            ";" => path = None,
            _ => {}
        }
    }
}

/// `"x.rs"` from the text of `[path = "x.rs"]`.
fn path_value(attribute: &str) -> Option<String> {
    let (name, value) = attribute
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split_once('=')?;
    (name.trim() == "path").then(|| value.trim().trim_matches('"').to_owned())
}

fn push_uses(sink: &mut Sink, inline: &[String], tree: &str) {
    for (path, binding) in use_paths(tree) {
        if let Some(binding) = binding {
            sink.rust
                .bindings
                .push((inline.to_vec(), binding, path.clone()));
        }
        sink.imports.push(Import::RustUse {
            inline: inline.to_vec(),
            path,
        });
    }
}

/// The names of the inline modules (`mod a { … }`) around `node`, outermost first.
fn inline_modules(found: &Found<'_, '_, '_>, node: Node<'_>) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = node.parent();
    while let Some(parent) = current {
        if parent.kind() == "mod_item"
            && let Some(name) = parent.child_by_field_name("name")
        {
            names.push(identifier(found.text(name)).to_owned());
        }
        current = parent.parent();
    }
    names.reverse();
    names
}

/// The value of a `#[path = "…"]` attribute on the `mod` item.
fn path_attribute(found: &Found<'_, '_, '_>, item: Node<'_>) -> Option<String> {
    let mut previous = item.prev_named_sibling();
    while let Some(attribute) = previous.filter(|n| n.kind() == "attribute_item") {
        if let Some(path) = path_value(found.text(attribute).trim_start_matches('#')) {
            return Some(path);
        }
        previous = attribute.prev_named_sibling();
    }
    None
}

/// `r#type` → `type`.
fn identifier(text: &str) -> &str {
    text.strip_prefix("r#").unwrap_or(text)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Name(&'a str),
    /// `::`
    Separator,
    Open,
    Close,
    Comma,
    Star,
}

/// Every path a `use` tree names, with the name it binds: `crate::a::{b, c::D as E,
/// self}` → `crate::a::b` (`b`), `crate::a::c::D` (`E`), `crate::a` (`a`). Globs
/// name their module and bind nothing.
pub(crate) fn use_paths(tree: &str) -> Vec<(Vec<String>, Option<String>)> {
    let tokens = tokenize(tree);
    let mut paths = Vec::new();
    let mut position = 0;
    use_tree(&tokens, &mut position, &mut Vec::new(), &mut paths);
    paths
}

fn tokenize(text: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let (token, len) = match c {
            _ if c.is_whitespace() => (None, c.len_utf8()),
            ':' if rest.starts_with("::") => (Some(Token::Separator), 2),
            '{' => (Some(Token::Open), 1),
            '}' => (Some(Token::Close), 1),
            ',' => (Some(Token::Comma), 1),
            '*' => (Some(Token::Star), 1),
            '/' if rest.starts_with("//") => (None, rest.find('\n').unwrap_or(rest.len())),
            '/' if rest.starts_with("/*") => (None, rest.find("*/").map_or(rest.len(), |e| e + 2)),
            _ if c.is_alphanumeric() || matches!(c, '_' | '$' | '#') => {
                let len = rest
                    .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '$' | '#')))
                    .unwrap_or(rest.len());
                // `$crate` in macros is the defining crate.
                let name = rest[..len].trim_start_matches('$');
                (Some(Token::Name(identifier(name))), len)
            }
            // Anything else (a stray `;`, attributes' brackets) ends the tree.
            _ => break,
        };
        tokens.extend(token);
        rest = &rest[len..];
    }
    tokens
}

fn use_tree(
    tokens: &[Token<'_>],
    position: &mut usize,
    prefix: &mut Vec<String>,
    paths: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let depth = prefix.len();
    while let Some(token) = tokens.get(*position) {
        *position += 1;
        match *token {
            Token::Separator => {}
            Token::Name(name) => {
                prefix.push(name.to_owned());
                let mut binding = Some(None);
                match tokens.get(*position) {
                    Some(Token::Separator) => continue,
                    Some(Token::Name("as")) => {
                        binding = match tokens.get(*position + 1) {
                            Some(Token::Name(alias)) if *alias != "_" => Some(Some(*alias)),
                            _ => None,
                        };
                        *position += 2;
                    }
                    _ => {}
                }
                push_path(prefix, binding, paths);
                break;
            }
            Token::Star => {
                push_path(prefix, None, paths);
                break;
            }
            Token::Open => {
                while let Some(token) = tokens.get(*position) {
                    match token {
                        Token::Close => {
                            *position += 1;
                            break;
                        }
                        Token::Comma => *position += 1,
                        _ => use_tree(tokens, position, prefix, paths),
                    }
                }
                break;
            }
            Token::Close | Token::Comma => {
                // The enclosing list's business.
                *position -= 1;
                break;
            }
        }
    }
    prefix.truncate(depth);
}

/// Adds `prefix` as a path; `alias` is `None` when it binds no name (a glob,
/// `as _`), `Some(None)` when it binds its own last name (or, ending in `self`, its
/// module's), `Some(Some(_))` for `as`.
fn push_path(
    prefix: &[String],
    alias: Option<Option<&str>>,
    paths: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut path = prefix.to_vec();
    if path.len() > 1 && path.last().is_some_and(|last| last == "self") {
        path.pop();
    }
    let Some(last) = path.last() else {
        return;
    };
    let binding = match alias {
        None => None,
        Some(Some(alias)) => Some(alias.to_owned()),
        Some(None) => Some(last.clone()),
    };
    paths.push((path, binding));
}

/// A library crate's name as code spells it (`-` as `_`): `[lib] name`, else
/// `[package] name`. Read line by line; `name.workspace = true` has no name.
pub(crate) fn crate_name(manifest: &str) -> Option<String> {
    let mut table = "";
    let (mut package, mut lib) = (None, None);
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            table = line.trim_matches(['[', ']', ' ']);
            continue;
        }
        let Some(value) = line
            .strip_prefix("name")
            .and_then(|rest| rest.trim_start().strip_prefix('='))
            .and_then(|rest| rest.trim_start().strip_prefix('"'))
            .and_then(|rest| rest.split_once('"'))
            .map(|(value, _)| value.replace('-', "_"))
        else {
            continue;
        };
        match table {
            "package" => package = Some(value),
            "lib" => lib = Some(value),
            _ => {}
        }
    }
    lib.or(package)
}

/// Where a Rust file's module lives: the crate's source directory (the nearest one
/// above the file holding `lib.rs` or `main.rs`), the crate root file, and the
/// module path from there. A file with no such directory above it (an integration
/// test, `build.rs`, an example) is a crate root of its own.
struct ModuleOf {
    crate_dir: String,
    crate_root: u32,
    path: Vec<String>,
}

fn module_of(repo: &Repo<'_>, file: u32) -> ModuleOf {
    let key = repo.key(file).as_str();
    let mut dir = repo.key(file).dir();
    loop {
        let root = ["lib.rs", "main.rs"]
            .iter()
            .find_map(|name| repo.file(&join_dir(dir, name)));
        if let Some(crate_root) = root {
            let relative = key[if dir.is_empty() { 0 } else { dir.len() + 1 }..]
                .strip_suffix(".rs")
                .unwrap_or_default();
            let mut path: Vec<String> = relative.split('/').map(str::to_owned).collect();
            if path.last().is_some_and(|last| last == "mod")
                || (path.len() == 1 && matches!(path[0].as_str(), "lib" | "main"))
            {
                path.pop();
            }
            return ModuleOf {
                crate_dir: dir.to_owned(),
                crate_root,
                path,
            };
        }
        if dir.is_empty() {
            return ModuleOf {
                crate_dir: repo.key(file).dir().to_owned(),
                crate_root: file,
                path: Vec::new(),
            };
        }
        dir = dir.rsplit_once('/').map_or("", |(parent, _)| parent);
    }
}

/// The file of module `path` in the crate whose sources are in `crate_dir`: the
/// longest prefix of `path` that has a file (the rest are items or inline modules),
/// else the crate root.
fn module_file(repo: &Repo<'_>, crate_dir: &str, crate_root: u32, path: &[String]) -> u32 {
    (1..=path.len())
        .rev()
        .find_map(|len| {
            let base = join_dir(crate_dir, &path[..len].join("/"));
            repo.file(&format!("{base}.rs"))
                .or_else(|| repo.file(&format!("{base}/mod.rs")))
        })
        .unwrap_or(crate_root)
}

/// `mod name;` in `file`, inside its inline modules `inline`: `name.rs` or
/// `name/mod.rs` in the file's module directory (its own directory for `lib.rs`,
/// `main.rs` and `mod.rs`, else `<dir>/<stem>/`), or beside the file for a crate
/// root such as `tests/it.rs`. `#[path]` is taken from the file's directory (inside
/// inline modules, from the module directory and the inline modules).
pub(crate) fn resolve_mod(
    repo: &Repo<'_>,
    file: u32,
    inline: &[String],
    name: &str,
    path: Option<&str>,
) -> Vec<u32> {
    let key = repo.key(file);
    let dir = key.dir();
    let mut module_dirs = Vec::with_capacity(2);
    match key.file_name() {
        "lib.rs" | "main.rs" | "mod.rs" => module_dirs.push(dir.to_owned()),
        file_name => {
            let stem = file_name.strip_suffix(".rs").unwrap_or(file_name);
            module_dirs.push(join_dir(dir, stem));
            module_dirs.push(dir.to_owned());
        }
    }
    if let Some(path) = path {
        // The reference's rule: from the file's directory, or inside inline modules
        // from the module directory and the inline modules.
        let base = if inline.is_empty() {
            dir.to_owned()
        } else {
            join_dir(&module_dirs[0], &inline.join("/"))
        };
        return join(&base, path)
            .and_then(|p| repo.file(&p))
            .into_iter()
            .collect();
    }
    module_dirs
        .iter()
        .find_map(|module_dir| {
            let mut base = module_dir.clone();
            for segment in inline.iter().map(String::as_str).chain([name]) {
                base = join_dir(&base, segment);
            }
            repo.file(&format!("{base}.rs"))
                .or_else(|| repo.file(&format!("{base}/mod.rs")))
        })
        .into_iter()
        .collect()
}

/// One `use` path of `file`: `crate::`, `self::`, `super::` (after the inline
/// modules `inline`), a module of the current one, or a crate of the workspace
/// (from its `Cargo.toml`). Anything else (`std`, a dependency) is external.
pub(crate) fn resolve_use(
    repo: &Repo<'_>,
    file: u32,
    inline: &[String],
    path: &[String],
) -> Vec<u32> {
    let Some(first) = path.first() else {
        return Vec::new();
    };
    let mut module = module_of(repo, file);
    module.path.extend_from_slice(inline);
    let absolute: Vec<String> = match first.as_str() {
        "crate" => path[1..].to_vec(),
        "self" => [&module.path[..], &path[1..]].concat(),
        "super" => {
            let supers = path.iter().take_while(|s| *s == "super").count();
            let Some(kept) = module.path.len().checked_sub(supers) else {
                return Vec::new();
            };
            [&module.path[..kept], &path[supers..]].concat()
        }
        // A type or enum in scope (`use Kind as K`, variants of a local enum).
        name if name.starts_with(char::is_uppercase) => [&module.path[..], path].concat(),
        name => {
            let child = [&module.path[..], &path[..1]].concat();
            let base = join_dir(&module.crate_dir, &child.join("/"));
            let is_child = repo.file(&format!("{base}.rs")).is_some()
                || repo.file(&format!("{base}/mod.rs")).is_some();
            if is_child {
                [&module.path[..], path].concat()
            } else if let Some(crate_dir) = repo.crates.get(name) {
                let Some(root) = repo.file(&join_dir(crate_dir, "lib.rs")) else {
                    return Vec::new();
                };
                return vec![module_file(repo, crate_dir, root, &path[1..])];
            } else {
                return Vec::new();
            }
        }
    };
    vec![module_file(
        repo,
        &module.crate_dir,
        module.crate_root,
        &absolute,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(tree: &str) -> Vec<String> {
        use_paths(tree).iter().map(|(p, _)| p.join("::")).collect()
    }

    #[test]
    fn use_bindings() {
        let bindings: Vec<Option<String>> = use_paths("a::{b, c::D as E, self, f as _, g::*}")
            .into_iter()
            .map(|(_, binding)| binding)
            .collect();
        let expected = [Some("b"), Some("E"), Some("a"), None, None];
        assert_eq!(bindings, expected.map(|b| b.map(str::to_owned)));
    }

    #[test]
    fn path_attributes_in_macros() {
        assert_eq!(
            path_value(r#"[path = "imp/unix.rs"]"#).as_deref(),
            Some("imp/unix.rs")
        );
        assert_eq!(path_value("[cfg(unix)]"), None);
    }

    #[test]
    fn use_trees() {
        assert_eq!(paths("std::io"), ["std::io"]);
        assert_eq!(
            paths("crate::a::{b, c::D, self}"),
            ["crate::a::b", "crate::a::c::D", "crate::a"]
        );
        assert_eq!(paths("super::super::e as f"), ["super::super::e"]);
        assert_eq!(paths("super::*"), ["super"]);
        assert_eq!(
            paths("::std::{fmt::{self, Write as _}, io}"),
            ["std::fmt", "std::fmt::Write", "std::io"]
        );
        assert_eq!(paths("{a::b, c}"), ["a::b", "c"]);
        assert_eq!(paths("$crate::runtime::Handle"), ["crate::runtime::Handle"]);
        assert_eq!(paths("r#type::x"), ["type::x"]);
        assert_eq!(
            paths("a::{\n    // why\n    b, /* c, */ d,\n}"),
            ["a::b", "a::d"]
        );
        assert!(paths("a::{}").is_empty());
    }

    #[test]
    fn crate_names() {
        let manifest = "[package]\nname = \"quarry-chunk\" # the chunker\nversion = \"1\"\n\n[dependencies]\nname = \"no\"\n";
        assert_eq!(crate_name(manifest).as_deref(), Some("quarry_chunk"));
        let renamed = "[package]\nname = \"a\"\n[lib]\nname = \"b_lib\"\n";
        assert_eq!(crate_name(renamed).as_deref(), Some("b_lib"));
        assert_eq!(crate_name("[workspace]\nmembers = []\n"), None);
        assert_eq!(crate_name("[package]\nname.workspace = true\n"), None);
    }
}
