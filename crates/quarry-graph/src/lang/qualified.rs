//! Languages whose imports name packages, namespaces, types or modules rather than
//! files: Java, Kotlin and Scala (one JVM namespace), C#, PHP's `use`, Elixir and
//! Haskell. Each file declares dotted names; imports are looked up among them.

use tree_sitter::Node;

use super::{Found, Sink, literal};
use crate::imports::{Bases, Declared, Family, Import, Suffixes};

pub(crate) const JAVA: &str = r#"
(package_declaration [(scoped_identifier) (identifier)] @package)
(import_declaration [(scoped_identifier) (identifier)] @import)
(program
  [(class_declaration) (interface_declaration) (enum_declaration) (record_declaration)
   (annotation_type_declaration)] @type)
"#;

/// Java and Kotlin: the same captures, one JVM namespace.
pub(crate) fn collect_jvm(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    if let Some(package) = found.get("package") {
        sink.namespace = dotted(found.text(package));
    } else if let Some(name) = found.get("import") {
        import(sink, Family::Jvm, dotted(found.text(name)));
    } else if let Some(declaration) = found.get("type") {
        declare_top_level(found, sink, Family::Jvm, declaration);
    }
}

pub(crate) const KOTLIN: &str = r#"
(package_header [(qualified_identifier) (identifier)] @package)
(import [(qualified_identifier) (identifier)] @import)
(source_file
  [(class_declaration) (object_declaration) (function_declaration) (property_declaration)
   (type_alias)] @type)
"#;

pub(crate) const SCALA: &str = r#"
(package_clause name: (package_identifier) @package)
(import_declaration) @import
[(class_definition) (object_definition) (trait_definition) (enum_definition)] @type
"#;

pub(crate) fn collect_scala(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    if let Some(name) = found.get("package") {
        // `package a.b` lines at the top accumulate; a clause with a body names the
        // package of what is inside it (see `scala_package`).
        let clause = name.parent();
        let top = clause.is_some_and(|c| {
            c.child_by_field_name("body").is_none()
                && c.parent().is_some_and(|p| p.kind() == "compilation_unit")
        });
        if top {
            sink.namespace = join_dotted(&sink.namespace, &dotted(found.text(name)));
        }
    } else if let Some(declaration) = found.get("import") {
        for name in scala_import(found, declaration) {
            import(sink, Family::Jvm, name);
        }
    } else if let Some(declaration) = found.get("type")
        && let Some(package) = scala_package(found, sink, declaration)
        && let Some(name) = declaration.child_by_field_name("name")
    {
        declare(sink, Family::Jvm, &package, found.text(name));
    }
}

/// The package of a top-level Scala definition; `None` for a nested one.
fn scala_package(found: &Found<'_, '_, '_>, sink: &Sink, declaration: Node<'_>) -> Option<String> {
    let (mut parts, _) =
        enclosing_namespaces(found, declaration, "template_body", "package_clause")?;
    parts.push(sink.namespace.clone());
    parts.reverse();
    Some(
        parts
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// The names a Scala import brings in: `a.b.C`, `a.b._` / `a.b.*` (the package),
/// `a.b.{C, D => E}`; several comma-separated paths in one declaration.
fn scala_import(found: &Found<'_, '_, '_>, declaration: Node<'_>) -> Vec<String> {
    let mut names = Vec::new();
    let mut path: Vec<&str> = Vec::new();
    let mut selected = false;
    let mut cursor = declaration.walk();
    for (i, child) in declaration.children(&mut cursor).enumerate() {
        let field = declaration.field_name_for_child(i as u32);
        match child.kind() {
            "identifier" if field == Some("path") => path.push(found.text(child)),
            "namespace_wildcard" => {
                names.push(path.join("."));
                selected = true;
            }
            "namespace_selectors" => {
                let mut selectors = child.walk();
                for selector in child.named_children(&mut selectors) {
                    let name = match selector.kind() {
                        "identifier" => Some(found.text(selector)),
                        "namespace_wildcard" => None,
                        _ => selector.child_by_field_name("name").map(|n| found.text(n)),
                    };
                    names.push(match name {
                        Some(name) => join_dotted(&path.join("."), name),
                        None => path.join("."),
                    });
                }
                selected = true;
            }
            "," => {
                if !selected && !path.is_empty() {
                    names.push(path.join("."));
                }
                path.clear();
                selected = false;
            }
            _ => {}
        }
    }
    if !selected && !path.is_empty() {
        names.push(path.join("."));
    }
    names
}

pub(crate) const CSHARP: &str = r#"
(using_directive) @import
[(class_declaration) (struct_declaration) (interface_declaration) (enum_declaration)
 (record_declaration) (delegate_declaration)] @type
"#;

pub(crate) fn collect_csharp(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    if let Some(directive) = found.get("import") {
        // `using A.B;`, `using static A.B.C;`, `using X = A.B.C;`: the name that is
        // not the alias.
        let mut cursor = directive.walk();
        let target = directive
            .children(&mut cursor)
            .enumerate()
            .filter(|(i, _)| directive.field_name_for_child(*i as u32) != Some("name"))
            .map(|(_, child)| child)
            .find(|child| matches!(child.kind(), "identifier" | "qualified_name"));
        if let Some(target) = target {
            import(sink, Family::DotNet, dotted(found.text(target)));
        }
    } else if let Some(declaration) = found.get("type")
        && let Some(namespace) = csharp_namespace(found, declaration)
        && let Some(name) = declaration.child_by_field_name("name")
    {
        declare(sink, Family::DotNet, &namespace, found.text(name));
    }
}

/// The namespace of a type declared directly in namespaces (block or file-scoped);
/// `None` for a nested type.
fn csharp_namespace(found: &Found<'_, '_, '_>, declaration: Node<'_>) -> Option<String> {
    let (mut parts, root) = enclosing_namespaces(
        found,
        declaration,
        "declaration_list",
        "namespace_declaration",
    )?;
    let mut cursor = root.walk();
    let file_scoped = root
        .named_children(&mut cursor)
        .find(|n| n.kind() == "file_scoped_namespace_declaration")
        .and_then(|n| n.child_by_field_name("name"));
    if let Some(name) = file_scoped {
        parts.push(dotted(found.text(name)));
    }
    parts.reverse();
    Some(parts.join("."))
}

/// The names of the `namespace` nodes (Scala's package clauses, C#'s namespaces) whose
/// `body` holds `declaration` directly, innermost first, with the file's root; `None` when
/// anything else (a class, a function) encloses it.
fn enclosing_namespaces<'t>(
    found: &Found<'_, '_, '_>,
    declaration: Node<'t>,
    body: &str,
    namespace: &str,
) -> Option<(Vec<String>, Node<'t>)> {
    let mut names = Vec::new();
    let mut node = declaration;
    loop {
        let parent = node.parent()?;
        match parent.kind() {
            "compilation_unit" => return Some((names, parent)),
            kind if kind == body => {
                let enclosing = parent.parent().filter(|n| n.kind() == namespace)?;
                names.push(dotted(found.text(enclosing.child_by_field_name("name")?)));
                node = enclosing;
            }
            _ => return None,
        }
    }
}

pub(crate) const PHP: &str = r#"
(namespace_definition name: (namespace_name) @package)
(namespace_use_declaration) @import
[(require_expression) (require_once_expression) (include_expression)
 (include_once_expression)] @include
[(class_declaration) (interface_declaration) (trait_declaration) (enum_declaration)
 (function_definition)] @type
"#;

pub(crate) fn collect_php(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    if let Some(name) = found.get("package") {
        sink.namespace = php_name(found.text(name));
    } else if let Some(declaration) = found.get("import") {
        php_use(found, sink, declaration);
    } else if let Some(expression) = found.get("include") {
        php_include(found, sink, expression);
    } else if let Some(declaration) = found.get("type")
        && let Some(name) = declaration.child_by_field_name("name")
    {
        // Top level, or directly in a `namespace X { … }` block.
        let Some(parent) = declaration.parent() else {
            return;
        };
        let namespace = match parent.kind() {
            "program" => sink.namespace.clone(),
            "compound_statement" => match parent.parent() {
                Some(block) if block.kind() == "namespace_definition" => block
                    .child_by_field_name("name")
                    .map(|n| php_name(found.text(n)))
                    .unwrap_or_default(),
                _ => return,
            },
            _ => return,
        };
        declare(sink, Family::Php, &namespace, found.text(name));
    }
}

/// `use A\B\C;`, `use A\B\{C, D as E};`, `use function A\b;`: one import per name.
fn php_use(found: &Found<'_, '_, '_>, sink: &mut Sink, declaration: Node<'_>) {
    let mut prefix = String::new();
    let mut clauses = Vec::new();
    let mut cursor = declaration.walk();
    for child in declaration.named_children(&mut cursor) {
        match child.kind() {
            "namespace_name" => prefix = php_name(found.text(child)),
            "namespace_use_clause" => clauses.push(child),
            "namespace_use_group" => {
                let mut group = child.walk();
                clauses.extend(
                    child
                        .named_children(&mut group)
                        .filter(|c| c.kind() == "namespace_use_clause"),
                );
            }
            _ => {}
        }
    }
    for clause in clauses {
        let mut cursor = clause.walk();
        let name = clause
            .named_children(&mut cursor)
            .find(|n| matches!(n.kind(), "qualified_name" | "name"));
        if let Some(name) = name {
            import(
                sink,
                Family::Php,
                join_dotted(&prefix, &php_name(found.text(name))),
            );
        }
    }
}

/// `require 'x.php'` (from the file's directory, then the root) and
/// `require __DIR__ . '/x.php'` or `dirname(__FILE__) . '/x.php'` (from the file's
/// directory). Computed paths are skipped.
fn php_include(found: &Found<'_, '_, '_>, sink: &mut Sink, expression: Node<'_>) {
    let Some(mut argument) = expression.named_child(0) else {
        return;
    };
    while argument.kind() == "parenthesized_expression" {
        let Some(inner) = argument.named_child(0) else {
            return;
        };
        argument = inner;
    }
    let string = |node: Node<'_>| match node.kind() {
        "string" | "encapsed_string" => literal(found, node, "string_content"),
        _ => None,
    };
    let (path, bases) = if argument.kind() == "binary_expression" {
        let (Some(left), Some(right)) = (
            argument.child_by_field_name("left"),
            argument.child_by_field_name("right"),
        ) else {
            return;
        };
        let left = found.text(left).replace(char::is_whitespace, "");
        if left != "__DIR__" && left != "dirname(__FILE__)" {
            return;
        }
        let Some(path) = string(right) else {
            return;
        };
        (path.trim_start_matches('/'), Bases::FileDir)
    } else {
        let Some(path) = string(argument) else {
            return;
        };
        (path, Bases::FileDirThenRoot)
    };
    sink.imports.push(Import::Path {
        path: path.to_owned(),
        bases,
        suffixes: Suffixes::Exact,
    });
}

/// `\Acme\Util` → `Acme.Util`.
fn php_name(text: &str) -> String {
    text.trim()
        .trim_start_matches('\\')
        .split('\\')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(".")
}

pub(crate) const ELIXIR: &str = r#"
(call
  target: (identifier) @function
  (arguments . [(alias) (dot)] @import)
  (#any-of? @function "alias" "import" "require" "use"))
(call
  target: (identifier) @function
  (arguments . (alias) @type)
  (#eq? @function "defmodule"))
(call
  target: (dot left: (alias) @module right: (identifier) @function)
  (arguments . (string) @file)
  (#eq? @module "Code")
  (#any-of? @function "require_file" "compile_file"))
"#;

pub(crate) fn collect_elixir(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    if let Some(argument) = found.get("import") {
        for name in elixir_aliases(found, argument) {
            sink.imports.push(Import::Qualified {
                family: Family::Elixir,
                name,
                prefixes: false,
            });
        }
    } else if let Some(alias) = found.get("type") {
        let name = join_dotted(&enclosing_module(found, alias), found.text(alias));
        sink.declared.push(Declared::Name(Family::Elixir, name));
    } else if let Some(string) = found.get("file")
        && let Some(path) = literal(found, string, "quoted_content")
    {
        // `Code.require_file("x.exs", __DIR__)` is relative to the file, without
        // `__DIR__` to the current directory (the root, for mix).
        let relative = string
            .next_named_sibling()
            .is_some_and(|n| found.text(n) == "__DIR__");
        sink.imports.push(Import::Path {
            path: path.to_owned(),
            bases: if relative {
                Bases::FileDir
            } else {
                Bases::Root
            },
            suffixes: Suffixes::Exact,
        });
    }
}

/// `Acme.Util`, `Acme.Model.{User, Post}`, `__MODULE__.Sub`.
fn elixir_aliases(found: &Found<'_, '_, '_>, argument: Node<'_>) -> Vec<String> {
    if argument.kind() == "alias" {
        return vec![found.text(argument).to_owned()];
    }
    let (Some(left), Some(right)) = (
        argument.child_by_field_name("left"),
        argument.child_by_field_name("right"),
    ) else {
        return Vec::new();
    };
    let base = match left.kind() {
        "alias" => found.text(left).to_owned(),
        "identifier" if found.text(left) == "__MODULE__" => enclosing_module(found, argument),
        _ => return Vec::new(),
    };
    match right.kind() {
        "alias" => vec![join_dotted(&base, found.text(right))],
        "tuple" => {
            let mut cursor = right.walk();
            right
                .named_children(&mut cursor)
                .filter(|n| n.kind() == "alias")
                .map(|n| join_dotted(&base, found.text(n)))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The full name of the module whose `defmodule` encloses `node`.
fn enclosing_module(found: &Found<'_, '_, '_>, node: Node<'_>) -> String {
    let mut names = Vec::new();
    let mut current = node.parent();
    while let Some(parent) = current {
        if parent.kind() == "do_block"
            && let Some(call) = parent.parent()
            && call
                .child_by_field_name("target")
                .is_some_and(|t| found.text(t) == "defmodule")
            && let Some(alias) = call
                .named_children(&mut call.walk())
                .find(|n| n.kind() == "arguments")
                .and_then(|arguments| arguments.named_child(0))
                .filter(|n| n.kind() == "alias")
        {
            names.push(found.text(alias));
        }
        current = parent.parent();
    }
    names.reverse();
    names.join(".")
}

pub(crate) const HASKELL: &str = r#"
(header module: (module) @type)
(import module: (module) @import)
"#;

pub(crate) fn collect_haskell(found: &Found<'_, '_, '_>, sink: &mut Sink) {
    if let Some(module) = found.get("type") {
        let name = dotted(found.text(module));
        sink.declared.push(Declared::Name(Family::Haskell, name));
    } else if let Some(module) = found.get("import") {
        sink.imports.push(Import::Qualified {
            family: Family::Haskell,
            name: dotted(found.text(module)),
            prefixes: false,
        });
    }
}

/// A Java or Kotlin declaration at the top of the file, in the package declared
/// before it.
fn declare_top_level(
    found: &Found<'_, '_, '_>,
    sink: &mut Sink,
    family: Family,
    declaration: Node<'_>,
) {
    let name = declaration
        .child_by_field_name("name")
        // Kotlin: `typealias Name = …`, `val name = …`.
        .or_else(|| declaration.child_by_field_name("type"))
        .or_else(|| {
            let mut cursor = declaration.walk();
            declaration
                .named_children(&mut cursor)
                .find(|n| n.kind() == "variable_declaration")
                .and_then(|n| n.named_child(0))
        });
    if let Some(name) = name {
        let namespace = sink.namespace.clone();
        declare(sink, family, &namespace, found.text(name));
    }
}

/// Records `namespace.name`, and `namespace` as one the file has names in.
fn declare(sink: &mut Sink, family: Family, namespace: &str, name: &str) {
    sink.declared
        .push(Declared::Name(family, join_dotted(namespace, name)));
    if !namespace.is_empty() {
        let namespace = Declared::Namespace(family, namespace.to_owned());
        if !sink.declared.contains(&namespace) {
            sink.declared.push(namespace);
        }
    }
}

/// A type, a package (wildcards), or a member of a type (static imports, nested
/// classes) found through its declared prefix.
fn import(sink: &mut Sink, family: Family, name: String) {
    if !name.is_empty() {
        sink.imports.push(Import::Qualified {
            family,
            name,
            prefixes: true,
        });
    }
}

fn dotted(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn join_dotted(prefix: &str, name: &str) -> String {
    match (prefix.is_empty(), name.is_empty()) {
        (true, _) => name.to_owned(),
        (_, true) => prefix.to_owned(),
        _ => format!("{prefix}.{name}"),
    }
}
