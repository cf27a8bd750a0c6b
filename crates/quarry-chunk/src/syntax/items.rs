//! What a syntax node is to the chunker: an item (its kind, name and qualifiers), a leading
//! comment, or other code; the language-specific ways items are written (bindings of
//! functions, Elixir's definition calls) and named.

use tree_sitter::Node;

use super::{Item, SyntaxChunker, What};
use crate::rules::lookup;
use crate::{ChunkKind, Language};

impl SyntaxChunker<'_> {
    pub(super) fn classify<'tree>(&self, node: Node<'tree>) -> What<'tree> {
        if self.rules.leading.contains(&node.kind()) || self.is_elixir_attribute(node) {
            return What::Leading;
        }
        match self.item(node) {
            Some(item) => What::Item(item),
            None => What::Other,
        }
    }

    fn item<'tree>(&self, node: Node<'tree>) -> Option<Item<'tree>> {
        let kind = node.kind();
        if self.rules.wrappers.contains(&kind) {
            let inner = ["declaration", "definition", "value"]
                .iter()
                .find_map(|field| node.child_by_field_name(field))
                .or_else(|| named_children(node).into_iter().last())?;
            return self.item(inner);
        }
        if self.language == Language::Elixir {
            return self.elixir_item(node);
        }
        if self.rules.bindings.contains(&kind) {
            return self.binding(node);
        }
        let kind = self.refine(self.rules.item_kind(kind)?, node);
        let mut qualifiers = Vec::new();
        if node.kind() == "method_declaration"
            && let Some(receiver) = node.child_by_field_name("receiver")
        {
            // Go: `func (ix *Index) Search()` is `Index::Search`.
            qualifiers
                .extend(find_descendant(receiver, "type_identifier").map(|t| self.text_of(t)));
        }
        let mut item = Item {
            kind,
            name: None,
            qualifiers,
            decl: node,
        };
        self.set_name(&mut item, self.name_of(node));
        Some(item)
    }

    /// `const f = () => ...`, `handle = (e) => ...` (a class field) or
    /// `const List = struct { ... }`: an item if the bound value is one.
    fn binding<'tree>(&self, node: Node<'tree>) -> Option<Item<'tree>> {
        let name_of = |n: Node| {
            ["name", "property"]
                .iter()
                .find_map(|f| n.child_by_field_name(f))
                .or_else(|| {
                    named_children(n)
                        .into_iter()
                        .find(|c| c.kind() == "identifier")
                })
                .map(|name| self.text_of(name))
        };
        for holder in std::iter::once(node).chain(named_children(node)) {
            let value = holder.child_by_field_name("value").or_else(|| {
                named_children(holder)
                    .into_iter()
                    .find(|c| self.rules.value_kind(c.kind()).is_some())
            });
            if let Some(value) = value
                && let Some(kind) = self.rules.value_kind(value.kind())
            {
                return Some(self.named(kind, name_of(holder), value));
            }
        }
        None
    }

    /// Elixir definitions are calls: `defmodule Name do ... end`, `def name(args) do ... end`.
    fn elixir_item<'tree>(&self, node: Node<'tree>) -> Option<Item<'tree>> {
        if node.kind() != "call" {
            return None;
        }
        let target = self.text_of(node.child_by_field_name("target")?);
        let kind = match target.as_str() {
            "defmodule" | "describe" => ChunkKind::Module,
            "defprotocol" => ChunkKind::Trait,
            "defimpl" => ChunkKind::Impl,
            "def" | "defp" | "defdelegate" => ChunkKind::Function,
            "defmacro" | "defmacrop" | "defguard" | "defguardp" => ChunkKind::Macro,
            "test" => ChunkKind::Test,
            _ => return None,
        };
        let mut head = named_children(node)
            .into_iter()
            .find(|c| c.kind() == "arguments")
            .and_then(|args| args.named_child(0));
        // `def name(args) when guard`: the head is the left side of `when`.
        while let Some(h) = head.filter(|h| h.kind() == "binary_operator") {
            head = h.child_by_field_name("left");
        }
        let name = head.map(|h| match h.kind() {
            "call" => h
                .child_by_field_name("target")
                .map_or_else(|| self.text_of(h), |t| self.text_of(t)),
            "string" => self.text_of(h).trim_matches('"').to_owned(),
            _ => self.text_of(h),
        });
        let mut item = self.named(kind, name, node);
        // `defmodule Shop.Cart`: the module `Cart` in `Shop`, as a Rust `shop::Cart` is, so
        // that a search for `Cart` finds its definition and `Shop.Cart` its qualified one.
        let aliased = head.is_some_and(|h| h.kind() == "alias");
        if aliased && let Some(dotted) = item.name.take() {
            let mut parts: Vec<String> = dotted.split('.').map(str::to_owned).collect();
            item.name = parts.pop();
            item.qualifiers.extend(parts);
        }
        Some(item)
    }

    fn is_elixir_attribute(&self, node: Node) -> bool {
        const DOC_ATTRIBUTES: &[&str] = &["@doc", "@spec", "@impl", "@deprecated", "@typedoc"];
        self.language == Language::Elixir
            && node.kind() == "unary_operator"
            && DOC_ATTRIBUTES
                .iter()
                .any(|a| self.text[node.byte_range()].starts_with(a))
    }

    fn named<'tree>(
        &self,
        kind: ChunkKind,
        name: Option<String>,
        decl: Node<'tree>,
    ) -> Item<'tree> {
        let mut item = Item {
            kind,
            name: None,
            qualifiers: Vec::new(),
            decl,
        };
        self.set_name(&mut item, name);
        item
    }

    /// Stores a (possibly qualified) name: `geo::Matrix<T>::rows` is `rows` in `geo::Matrix`.
    fn set_name(&self, item: &mut Item, name: Option<String>) {
        let Some(name) = name else { return };
        let mut parts = vec![name.as_str()];
        for sep in self.rules.qualifiers {
            parts = parts.iter().flat_map(|p| p.split(sep)).collect();
        }
        let mut parts: Vec<String> = parts
            .into_iter()
            .map(strip_generics)
            .filter(|p| !p.is_empty())
            .collect();
        item.name = parts.pop();
        item.qualifiers.extend(parts);
    }

    /// Narrows a generic kind by a keyword or a descendant's kind (`class_declaration`
    /// holding `struct`, a Go type declaration holding a `struct_type`).
    fn refine(&self, kind: ChunkKind, node: Node) -> ChunkKind {
        if self.rules.keywords.is_empty() {
            return kind;
        }
        find_keyword(self.rules.keywords, node, 3).unwrap_or(kind)
    }

    fn name_of(&self, node: Node) -> Option<String> {
        for field in self.rules.name_fields {
            let Some(mut named) = node.child_by_field_name(field) else {
                continue;
            };
            // C declarators nest: `*make(void)` -> `make(void)` -> `make`; reference
            // declarators hold theirs without a field name.
            while let Some(inner) = named.child_by_field_name("declarator").or_else(|| {
                named
                    .kind()
                    .ends_with("_declarator")
                    .then(|| named.named_child(0))
                    .flatten()
            }) {
                named = inner;
            }
            if node.kind() == "instance" {
                // Haskell: `instance Container Queue` is named by class and type.
                let patterns = node.child_by_field_name("patterns");
                return Some(
                    self.text_of(named)
                        + &patterns
                            .map(|p| format!(" {}", self.text_of(p)))
                            .unwrap_or_default(),
                );
            }
            return Some(self.text_of(named));
        }
        // Go's `type_declaration` holds a `type_spec` that holds the name.
        named_children(node)
            .into_iter()
            .find_map(|child| child.child_by_field_name("name"))
            .or_else(|| {
                named_children(node).into_iter().find(|c| {
                    c.kind().ends_with("identifier") || matches!(c.kind(), "constant" | "name")
                })
            })
            .map(|n| self.text_of(n))
    }

    pub(super) fn text_of(&self, node: Node) -> String {
        let text = &self.text[node.byte_range()];
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

pub(super) fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// The first node of `kind` below `node`, in document order.
fn find_descendant<'tree>(node: Node<'tree>, kind: &str) -> Option<Node<'tree>> {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        if child.kind() == kind {
            return Some(child);
        }
        if let Some(found) = find_descendant(child, kind) {
            return Some(found);
        }
    }
    None
}

/// The first keyword of `table` among the descendants of `node` down to `depth`
/// levels, in document order (so an outer keyword wins over a nested declaration's).
fn find_keyword(table: &[(&str, ChunkKind)], node: Node, depth: usize) -> Option<ChunkKind> {
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        let found = lookup(table, child.kind()).or_else(|| {
            (depth > 1)
                .then(|| find_keyword(table, child, depth - 1))
                .flatten()
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// `Matrix<T>` -> `Matrix`, `List[A]` -> `List`; operators (`operator<<`) and names
/// that are all generics stay as they are.
fn strip_generics(name: &str) -> String {
    let cut = name
        .find(['<', '['])
        .filter(|&i| i > 0 && !name.starts_with("operator"))
        .unwrap_or(name.len());
    name[..cut].trim().to_owned()
}
