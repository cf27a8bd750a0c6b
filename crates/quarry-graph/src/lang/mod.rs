//! Per language: one tree-sitter query that finds imports and declarations, what
//! each match means, and how each kind of import resolves to files.

pub(crate) mod go;
pub(crate) mod js;
pub(crate) mod paths;
pub(crate) mod python;
pub(crate) mod qualified;
pub(crate) mod rust;

use std::sync::OnceLock;

use quarry_chunk::Language;
use tree_sitter::{Node, Query, QueryCapture};

use crate::imports::{Declared, Import};
use crate::repo::Repo;

/// One query match: its captures by name, over the text that was parsed.
pub(crate) struct Found<'q, 't, 's> {
    pub(crate) query: &'q Query,
    pub(crate) captures: &'q [QueryCapture<'t>],
    pub(crate) text: &'s str,
}

impl<'t, 's> Found<'_, 't, 's> {
    /// The node captured as `name`.
    pub(crate) fn get(&self, name: &str) -> Option<Node<'t>> {
        let names = self.query.capture_names();
        self.captures
            .iter()
            .find(|c| names[c.index as usize] == name)
            .map(|c| c.node)
    }

    /// The source text of `node`.
    pub(crate) fn text(&self, node: Node<'_>) -> &'s str {
        self.text.get(node.byte_range()).unwrap_or_default()
    }

    /// The text captured as `name`, or `""`.
    pub(crate) fn text_of(&self, name: &str) -> &'s str {
        self.get(name).map_or("", |node| self.text(node))
    }
}

/// What the matches of one file add up to.
#[derive(Debug, Default)]
pub(crate) struct Sink {
    pub(crate) imports: Vec<Import>,
    pub(crate) declared: Vec<Declared>,
    /// The package or namespace declared so far at the top of the file (matches come
    /// in document order), for the declarations that follow it.
    pub(crate) namespace: String,
    /// Rust's scopes, for `rust::finish`.
    pub(crate) rust: rust::Scopes,
}

/// Turns one match into imports and declarations.
pub(crate) type Collect = fn(&Found<'_, '_, '_>, &mut Sink);

/// Languages with a query, their query text and how to read its matches.
const SPECS: &[(Language, &str, Collect)] = &[
    (Language::Bash, paths::BASH, paths::collect_bash),
    (Language::C, paths::C, paths::collect_c),
    (Language::Cpp, paths::C, paths::collect_c),
    (
        Language::CSharp,
        qualified::CSHARP,
        qualified::collect_csharp,
    ),
    (
        Language::Elixir,
        qualified::ELIXIR,
        qualified::collect_elixir,
    ),
    (Language::Go, go::QUERY, go::collect),
    (
        Language::Haskell,
        qualified::HASKELL,
        qualified::collect_haskell,
    ),
    (Language::Java, qualified::JAVA, qualified::collect_jvm),
    (Language::JavaScript, js::JAVASCRIPT, js::collect),
    (Language::Kotlin, qualified::KOTLIN, qualified::collect_jvm),
    (Language::Lua, paths::LUA, paths::collect_lua),
    (Language::Php, qualified::PHP, qualified::collect_php),
    (Language::Python, python::QUERY, python::collect),
    (Language::Ruby, paths::RUBY, paths::collect_ruby),
    (Language::Rust, rust::QUERY, rust::collect),
    (Language::Scala, qualified::SCALA, qualified::collect_scala),
    (Language::Swift, paths::SWIFT, paths::collect_swift),
    (Language::TypeScript, js::TYPESCRIPT, js::collect),
    (Language::Tsx, js::TYPESCRIPT, js::collect),
    (Language::Zig, paths::ZIG, paths::collect_zig),
];

static QUERIES: [OnceLock<Query>; SPECS.len()] = [const { OnceLock::new() }; SPECS.len()];

/// The compiled query of `language` and how to read it; compiled once per process.
pub(crate) fn query(language: Language) -> Option<(&'static Query, Collect)> {
    let slot = SPECS.iter().position(|(l, _, _)| *l == language)?;
    let (_, source, collect) = SPECS[slot];
    let query = QUERIES[slot].get_or_init(|| {
        let grammar = language
            .grammar()
            .expect("languages with a query have a grammar");
        Query::new(&grammar, source)
            .unwrap_or_else(|e| panic!("the {language} import query does not compile: {e}"))
    });
    Some((query, collect))
}

/// The files `import` of the file `from` refers to; empty when it is not in the
/// repository.
pub(crate) fn resolve(repo: &Repo<'_>, from: u32, import: &Import) -> Vec<u32> {
    match import {
        Import::RustMod { inline, name, path } => {
            rust::resolve_mod(repo, from, inline, name, path.as_deref())
        }
        Import::RustUse { inline, path } => rust::resolve_use(repo, from, inline, path),
        Import::Python {
            level,
            module,
            names,
        } => python::resolve(repo, from, *level, module, names),
        Import::Js(spec) => js::resolve(repo, from, spec),
        Import::Go(path) => go::resolve(repo, path),
        Import::Qualified {
            family,
            name,
            prefixes,
        } => repo.qualified(*family, name, *prefixes),
        Import::Path {
            path,
            bases,
            suffixes,
        } => paths::resolve(repo, from, path, *bases, *suffixes),
        Import::Swift(module) => repo.swift_module(module),
    }
}

/// A string node's text when it is one literal piece (no interpolation, no escapes),
/// whatever its quotes; `content` names the kind of its content child.
pub(crate) fn literal<'s>(
    found: &Found<'_, '_, 's>,
    string: Node<'_>,
    content: &str,
) -> Option<&'s str> {
    let mut cursor = string.walk();
    let mut named = string.named_children(&mut cursor);
    let only = named.next()?;
    (only.kind() == content && named.next().is_none()).then(|| found.text(only))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_compiles() {
        for (language, _, _) in SPECS {
            assert!(query(*language).is_some(), "{language}");
        }
    }
}
