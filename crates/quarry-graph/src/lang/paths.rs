//! Imports that name a file path, searched from a few directories: C and C++
//! includes, Ruby and Lua requires, Zig's `@import`, Bash's `source`; and Swift's
//! module imports.

use std::collections::{HashMap, HashSet};

use super::{Found, Sink, literal};
use crate::imports::{Bases, FileImports, Import, Suffixes};
use crate::repo::{Repo, join};

/// How many distinct includes a directory must explain before it is taken for one that a
/// build's `-I` names: one could be a coincidence of names.
const INCLUDES_EXPLAINING_A_ROOT: usize = 2;

pub(crate) const C: &str = r#"
(preproc_include path: (string_literal (string_content) @quoted))
(preproc_include path: (system_lib_string) @system)
"#;

pub(crate) fn collect_c(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    let (path, bases) = if let Some(path) = found.get("quoted") {
        (found.text(path), Bases::Quoted)
    } else {
        let system = found.text_of("system");
        (
            system.trim_start_matches('<').trim_end_matches('>'),
            Bases::System,
        )
    };
    push(sink, path, bases, Suffixes::Exact);
}

/// The directories that C and C++ includes are written from where no directory `repo`
/// searches holds them, as a build's `-I` flags name them (protobuf's `src` for `#include
/// "google/protobuf/message.h"`): each directory that, joined with such an include of two
/// components or more, names a file, for at least [`INCLUDES_EXPLAINING_A_ROOT`] distinct
/// includes of `files` (in `repo`'s order); those that explain most first.
pub(crate) fn include_roots(repo: &Repo<'_>, files: &[FileImports]) -> Vec<String> {
    let mut named: HashMap<&str, Vec<&str>> = HashMap::new();
    for key in repo.keys() {
        let path = key.as_str();
        let name = path.rsplit_once('/').map_or(path, |(_, name)| name);
        named.entry(name).or_default().push(path);
    }
    let mut explained: HashMap<&str, HashSet<&str>> = HashMap::new();
    for (from, file) in files.iter().enumerate() {
        for import in &file.imports {
            let Import::Path {
                path,
                bases: bases @ (Bases::Quoted | Bases::System),
                suffixes,
            } = import
            else {
                continue;
            };
            let Some((_, name)) = path.rsplit_once('/') else {
                continue;
            };
            if path.split('/').any(|part| matches!(part, "" | "." | ".."))
                || !resolve(repo, from as u32, path, *bases, *suffixes).is_empty()
            {
                continue;
            }
            for found in named.get(name).into_iter().flatten() {
                if let Some(root) =
                    (found.strip_suffix(path.as_str())).and_then(|root| root.strip_suffix('/'))
                {
                    explained.entry(root).or_default().insert(path);
                }
            }
        }
    }
    let mut roots: Vec<(&str, usize)> = (explained.into_iter())
        .map(|(root, includes)| (root, includes.len()))
        .filter(|&(_, count)| count >= INCLUDES_EXPLAINING_A_ROOT)
        .collect();
    roots.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    roots.into_iter().map(|(root, _)| root.to_owned()).collect()
}

/// The `@path` capture's text when it is a plain string literal (Ruby, Lua, Zig).
fn literal_path<'s>(found: &Found<'_, '_, 's>) -> Option<&'s str> {
    literal(found, found.get("path")?, "string_content")
}

pub(crate) const RUBY: &str = r#"
(call
  !receiver
  method: (identifier) @function
  arguments: (argument_list . (string) @path)
  (#any-of? @function "require" "require_relative" "load"))
(call
  !receiver
  method: (identifier) @function
  arguments: (argument_list (simple_symbol) . (string) @path)
  (#eq? @function "autoload"))
"#;

pub(crate) fn collect_ruby(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    let Some(path) = literal_path(found) else {
        return;
    };
    let bases = match found.text_of("function") {
        "require_relative" => Bases::FileDir,
        _ => Bases::RubyLoadPath,
    };
    push(sink, path, bases, Suffixes::Ruby);
}

pub(crate) const LUA: &str = r#"
(function_call
  name: (identifier) @function
  arguments: (arguments . (string) @path)
  (#any-of? @function "require" "dofile" "loadfile"))
"#;

pub(crate) fn collect_lua(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    let Some(path) = literal_path(found) else {
        return;
    };
    if found.text_of("function") == "require" {
        // `require "a.b"` is the module `a/b.lua` or `a/b/init.lua` on the path.
        push(sink, &path.replace('.', "/"), Bases::LuaPath, Suffixes::Lua);
    } else {
        push(sink, path, Bases::FileDirThenRoot, Suffixes::Exact);
    }
}

pub(crate) const ZIG: &str = r#"
(builtin_function
  (builtin_identifier) @function
  (arguments . (string) @path)
  (#eq? @function "@import"))
"#;

pub(crate) fn collect_zig(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    // `@import("std")` names a package: no such file, so it counts as external.
    if let Some(path) = literal_path(found) {
        push(sink, path, Bases::FileDir, Suffixes::Exact);
    }
}

pub(crate) const BASH: &str = r#"
(command
  name: (command_name (word) @function)
  .
  argument: [(word) (raw_string) (string)] @path
  (#any-of? @function "source" "."))
"#;

pub(crate) fn collect_bash(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    let Some(argument) = found.get("path") else {
        return;
    };
    // Paths built from variables or commands cannot be read without running them.
    let path = match argument.kind() {
        "word" => Some(found.text(argument)).filter(|w| !w.contains(['$', '`', '*', '?'])),
        "raw_string" => Some(found.text(argument).trim_matches('\'')),
        _ => literal(found, argument, "string_content"),
    };
    if let Some(path) = path {
        push(sink, path, Bases::FileDirThenRoot, Suffixes::Exact);
    }
}

pub(crate) const SWIFT: &str = r#"
(import_declaration (identifier) @module)
"#;

pub(crate) fn collect_swift(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    // `import Foo.Bar` imports a submodule of the module `Foo`.
    let module = found.text_of("module");
    let module = module.split('.').next().unwrap_or(module).trim();
    sink.imports.push(Import::Swift(module.to_owned()));
}

fn push(sink: &mut Sink, path: &str, bases: Bases, suffixes: Suffixes) {
    if !path.is_empty() {
        sink.imports.push(Import::Path {
            path: path.to_owned(),
            bases,
            suffixes,
        });
    }
}

/// The first of `bases` (in order) holding `path` with one of `suffixes` (in order)
/// appended. Absolute paths are outside the repository.
pub(crate) fn resolve(
    repo: &Repo<'_>,
    file: u32,
    path: &str,
    bases: Bases,
    suffixes: Suffixes,
) -> Vec<u32> {
    if path.starts_with('/') {
        return Vec::new();
    }
    let dir = repo.key(file).dir();
    let mut dirs: Vec<&str> = Vec::new();
    match bases {
        Bases::FileDir => dirs.push(dir),
        Bases::FileDirThenRoot => dirs.extend([dir, ""]),
        Bases::Root => dirs.push(""),
        Bases::Quoted => {
            dirs.push(dir);
            dirs.extend(repo.include_dirs.iter().map(String::as_str));
            dirs.push("");
        }
        Bases::System => {
            dirs.extend(repo.include_dirs.iter().map(String::as_str));
            dirs.push("");
        }
        Bases::RubyLoadPath => {
            for name in ["lib", "test", "spec"] {
                dirs.extend(repo.dirs_named(name));
            }
            dirs.push("");
        }
        Bases::LuaPath => {
            dirs.push("");
            for name in ["lua", "src", "lib"] {
                dirs.extend(repo.dirs_named(name));
            }
        }
    }
    dirs.iter()
        .filter_map(|dir| join(dir, path))
        .find_map(|base| {
            suffixes
                .list()
                .iter()
                .find_map(|suffix| repo.file(&format!("{base}{suffix}")))
        })
        .into_iter()
        .collect()
}
