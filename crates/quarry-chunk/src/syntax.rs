//! Chunking along the syntax tree: items, containers split into members, and
//! merged blocks of module-level code.

use std::cell::RefCell;
use std::ops::Range;

use tree_sitter::{Node, Tree};

use crate::definition::Found;
use crate::lines::Lines;
use crate::piece::Piece;
use crate::rules::{Rules, lookup};
use crate::{ChunkKind, Language, SyntaxTree};

/// Containers and transparent scopes nested deeper than this are not opened (it
/// bounds recursion on pathological input).
const MAX_DEPTH: usize = 16;
/// Signatures in the embedding header are cut to this many characters.
const MAX_SIGNATURE: usize = 160;
/// A declaration that becomes a chunk of its own.
struct Item<'tree> {
    kind: ChunkKind,
    name: Option<String>,
    /// Containers named by the item itself (`Matrix::rows`, a Go method's receiver).
    qualifiers: Vec<String>,
    /// The declaration proper: wrappers (`export`, decorators) unwrapped, bindings
    /// resolved to their value. Its body holds the members.
    decl: Node<'tree>,
}

enum What<'tree> {
    /// A comment, attribute or signature that belongs to the next item.
    Leading,
    Item(Item<'tree>),
    /// Anything else: imports, statements, fields.
    Other,
}

/// A run of whole lines in a scope, and what it holds.
struct Entry<'tree> {
    lines: Range<usize>,
    what: What<'tree>,
}

/// Splits parsed source into pieces; see the crate docs for the rules.
pub(crate) struct SyntaxChunker<'a> {
    /// The text the parser saw ([`SyntaxTree::text`]): offsets and lines are the file's.
    text: &'a str,
    tree: &'a Tree,
    lines: &'a Lines<'a>,
    language: Language,
    rules: &'static Rules,
    budget: usize,
    /// What the file defines, gathered while its pieces are made.
    definitions: RefCell<Vec<Found>>,
}

impl<'a> SyntaxChunker<'a> {
    pub(crate) fn new(
        syntax: &'a SyntaxTree<'a>,
        lines: &'a Lines<'a>,
        rules: &'static Rules,
        budget: usize,
    ) -> Self {
        SyntaxChunker {
            text: syntax.text(),
            tree: syntax.tree(),
            lines,
            language: syntax.language(),
            rules,
            budget,
            definitions: RefCell::new(Vec::new()),
        }
    }

    /// The pieces of the whole file, in order, and the definitions found in it.
    pub(crate) fn pieces(self) -> (Vec<Piece>, Vec<Found>) {
        let root = self.tree.root_node();
        let mut pieces = Vec::new();
        let entries = self.entries(named_children(root), &[]);
        self.emit(entries, 0..self.lines.count(), &[], None, 0, &mut pieces);
        (pieces, self.definitions.into_inner())
    }

    /// Classifies the nodes of a scope (inside `container`) into entries of whole lines.
    fn entries<'tree>(&self, nodes: Vec<Node<'tree>>, container: &[String]) -> Vec<Entry<'tree>> {
        let mut flat = Vec::with_capacity(nodes.len());
        self.flatten(nodes, 0, &mut flat);
        let mut entries: Vec<Entry<'tree>> = Vec::with_capacity(flat.len());
        let mut leading: Option<Range<usize>> = None;
        for node in flat {
            self.define_within(node, container);
            let mut entry = Entry {
                lines: self.node_lines(node),
                what: self.classify(node),
            };
            // Nodes sharing a line become one entry: a line belongs to one chunk.
            if let Some(prev) = entries.last_mut()
                && leading.is_none()
                && entry.lines.start < prev.lines.end
            {
                prev.lines.end = prev.lines.end.max(entry.lines.end);
                prev.what = match (std::mem::replace(&mut prev.what, What::Other), entry.what) {
                    (What::Item(item), What::Leading | What::Other)
                    | (What::Leading, What::Item(item)) => What::Item(item),
                    (What::Leading, What::Leading) => What::Leading,
                    _ => What::Other,
                };
                continue;
            }
            if let Some(run) = leading.take() {
                match entry.what {
                    What::Leading if entry.lines.start <= run.end => {
                        leading = Some(run.start..entry.lines.end.max(run.end));
                        continue;
                    }
                    // Doc comments and attributes directly above an item belong to it;
                    // trivia sharing a line with anything else goes with that.
                    What::Item(_) if entry.lines.start <= run.end => {
                        entry.lines.start = run.start;
                    }
                    _ if entry.lines.start < run.end => entry.lines.start = run.start,
                    _ => entries.push(Entry {
                        lines: run,
                        what: What::Other,
                    }),
                }
            }
            if let What::Leading = entry.what {
                leading = Some(entry.lines);
                continue;
            }
            if self.rules.clauses
                && let Some(prev) = entries.last_mut()
                && let (What::Item(a), What::Item(b)) = (&prev.what, &entry.what)
                && a.kind == b.kind
                && a.name.is_some()
                && a.name == b.name
            {
                prev.lines.end = entry.lines.end;
                continue;
            }
            entries.push(entry);
        }
        if let Some(run) = leading {
            entries.push(Entry {
                lines: run,
                what: What::Other,
            });
        }
        entries
    }

    /// The nodes of a scope, with transparent ones (`#ifdef` blocks...) replaced by
    /// their children, down to `MAX_DEPTH` levels.
    fn flatten<'tree>(&self, nodes: Vec<Node<'tree>>, depth: usize, out: &mut Vec<Node<'tree>>) {
        for node in nodes {
            if depth < MAX_DEPTH && self.rules.transparent.contains(&node.kind()) {
                self.flatten(named_children(node), depth + 1, out);
            } else if node.end_byte() > node.start_byte() {
                out.push(node);
            }
        }
    }

    /// The whole lines a node spans, ignoring whitespace at its end (some grammars end
    /// a definition where the next one starts).
    fn node_lines(&self, node: Node) -> Range<usize> {
        let start = node.start_byte();
        let text = &self.text[start..node.end_byte()];
        let end = start + text.trim_end().len().max(1);
        self.lines.line_of(start)..self.lines.line_of(end - 1) + 1
    }

    fn classify<'tree>(&self, node: Node<'tree>) -> What<'tree> {
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

    fn text_of(&self, node: Node) -> String {
        let text = &self.text[node.byte_range()];
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Turns a scope's entries into pieces: items on their own (containers over budget
    /// split), everything else merged into blocks up to the budget.
    fn emit(
        &self,
        mut entries: Vec<Entry>,
        span: Range<usize>,
        container: &[String],
        parent: Option<ChunkKind>,
        depth: usize,
        out: &mut Vec<Piece>,
    ) {
        self.cover_gaps(&mut entries, span);
        let mut block: Option<Range<usize>> = None;
        for entry in entries {
            if let What::Item(item) = &entry.what {
                self.define(item, &entry.lines, container, parent);
            }
            match entry.what {
                What::Item(item) if !self.is_small_declaration(&item, &entry.lines) => {
                    self.flush_block(&mut block, container, out);
                    self.item_pieces(entry.lines, item, container, parent, depth, out);
                }
                _ => match &mut block {
                    Some(b) if self.lines.chars(b.start..entry.lines.end) <= self.budget => {
                        b.end = entry.lines.end;
                    }
                    _ => {
                        self.flush_block(&mut block, container, out);
                        block = Some(entry.lines);
                    }
                },
            }
        }
        self.flush_block(&mut block, container, out);
    }

    /// Extends entries over the non-blank lines between them (closing braces, stray
    /// tokens, `#endif`), so that no line of the file is lost.
    fn cover_gaps(&self, entries: &mut Vec<Entry>, span: Range<usize>) {
        if entries.is_empty() {
            let lines = self.lines.trim(span);
            if !lines.is_empty() {
                entries.push(Entry {
                    lines,
                    what: What::Other,
                });
            }
            return;
        }
        let first = self.lines.trim(span.start..entries[0].lines.start);
        if !first.is_empty() {
            entries[0].lines.start = first.start;
        }
        for i in 0..entries.len() {
            let next = entries.get(i + 1).map_or(span.end, |e| e.lines.start);
            let gap = self
                .lines
                .trim(entries[i].lines.end..next.max(entries[i].lines.end));
            if !gap.is_empty() {
                entries[i].lines.end = gap.end;
            }
        }
    }

    /// One-line declarations (type aliases, unit structs, `mod x;`, marker impls, record
    /// classes) merge into blocks; one-line functions stay chunks of their own.
    fn is_small_declaration(&self, item: &Item, lines: &Range<usize>) -> bool {
        use ChunkKind::*;
        lines.len() == 1 && !matches!(item.kind, Function | Method | Test | Macro)
    }

    fn flush_block(
        &self,
        block: &mut Option<Range<usize>>,
        container: &[String],
        out: &mut Vec<Piece>,
    ) {
        if let Some(lines) = block.take() {
            out.push(Piece {
                lines,
                kind: ChunkKind::Block,
                name: None,
                container: container.to_vec(),
                signature: None,
            });
        }
    }

    fn item_pieces(
        &self,
        lines: Range<usize>,
        item: Item,
        container: &[String],
        parent: Option<ChunkKind>,
        depth: usize,
        out: &mut Vec<Piece>,
    ) {
        let kind = member_kind(item.kind, parent);
        let mut path = container.to_vec();
        path.extend(item.qualifiers.iter().cloned());
        let signature = self.signature(item.decl);
        let is_container = depth < MAX_DEPTH && self.rules.containers.contains(&item.decl.kind());
        if self.lines.chars(lines.clone()) > self.budget
            && is_container
            && self.split_container(&lines, &item, kind, &path, &signature, depth, out)
        {
            return;
        }
        if is_container {
            self.define_members(&item, kind, &path, depth);
        }
        out.push(Piece {
            lines,
            kind,
            name: item.name,
            container: path,
            signature: Some(signature),
        });
    }

    /// Splits a container into a header (signature, fields) and its members. Returns
    /// `false`, emitting nothing, if it has no member items.
    #[allow(clippy::too_many_arguments)]
    fn split_container(
        &self,
        lines: &Range<usize>,
        item: &Item,
        kind: ChunkKind,
        path: &[String],
        signature: &str,
        depth: usize,
        out: &mut Vec<Piece>,
    ) -> bool {
        let Some(body) = self.body_of(item.decl) else {
            return false;
        };
        let mut inner = path.to_vec();
        inner.extend(item.name.iter().cloned());
        let mut members = self.entries(named_children(body), &inner);
        let Some(first) = members.iter().position(|e| matches!(e.what, What::Item(_))) else {
            return false;
        };
        let members_start = members[first].lines.start.max(lines.start);
        members.drain(..first);
        let header = self.lines.trim(lines.start..members_start);
        if !header.is_empty() {
            out.push(Piece {
                lines: header,
                kind: ChunkKind::Header,
                name: item.name.clone(),
                container: path.to_vec(),
                signature: Some(signature.to_owned()),
            });
        }
        self.emit(
            members,
            members_start..lines.end,
            &inner,
            Some(kind),
            depth + 1,
            out,
        );
        true
    }

    /// Records `item`, spanning `lines`, as a definition inside `container`.
    fn define(
        &self,
        item: &Item,
        lines: &Range<usize>,
        container: &[String],
        parent: Option<ChunkKind>,
    ) {
        let Some(name) = item.name.clone().filter(|n| !n.is_empty()) else {
            return;
        };
        // A forward declaration (`struct foo;`) defines nothing.
        if matches!(self.language, Language::C | Language::Cpp)
            && matches!(
                item.kind,
                ChunkKind::Struct | ChunkKind::Enum | ChunkKind::Class
            )
            && item.decl.child_by_field_name("body").is_none()
        {
            return;
        }
        let mut path = container.to_vec();
        path.extend(item.qualifiers.iter().cloned());
        self.definitions.borrow_mut().push(Found {
            lines: lines.clone(),
            code_line: item
                .decl
                .start_position()
                .row
                .clamp(lines.start, lines.end - 1),
            name,
            container: path,
            kind: member_kind(item.kind, parent),
            refers_to: self.typedef_target(item.decl),
        });
    }

    /// Records the members of a container that stays one chunk, so that `Type::method`
    /// finds the method's lines inside it.
    fn define_members(&self, item: &Item, kind: ChunkKind, path: &[String], depth: usize) {
        let Some(body) = self.body_of(item.decl) else {
            return;
        };
        let mut inner = path.to_vec();
        inner.extend(item.name.iter().cloned());
        for entry in self.entries(named_children(body), &inner) {
            let What::Item(member) = &entry.what else {
                continue;
            };
            self.define(member, &entry.lines, &inner, Some(kind));
            if depth + 1 < MAX_DEPTH && self.rules.containers.contains(&member.decl.kind()) {
                let member_kind = member_kind(member.kind, Some(kind));
                let mut member_path = inner.clone();
                member_path.extend(member.qualifiers.iter().cloned());
                self.define_members(member, member_kind, &member_path, depth + 1);
            }
        }
    }

    /// Definitions that are not items of their own: a C `#define` constant, the `struct`
    /// tag a `typedef` declares beside its alias, and JavaScript's assignments of a function
    /// or class to an export or a prototype.
    fn define_within(&self, node: Node, container: &[String]) {
        if matches!(
            self.language,
            Language::JavaScript | Language::TypeScript | Language::Tsx
        ) {
            self.define_assignment(node, container);
            return;
        }
        if !matches!(self.language, Language::C | Language::Cpp) {
            return;
        }
        let lines = self.node_lines(node);
        let found = |name: Node, kind: ChunkKind| Found {
            lines: lines.clone(),
            code_line: lines.start,
            name: self.text_of(name),
            container: container.to_vec(),
            kind,
            refers_to: None,
        };
        let mut definitions = self.definitions.borrow_mut();
        match node.kind() {
            // `#define deflate z_deflate` renames a symbol (zlib's prefixing): an alias, not
            // where the symbol is defined.
            "preproc_def" if !self.is_alias(node) => definitions.extend(
                node.child_by_field_name("name")
                    .map(|name| found(name, ChunkKind::Macro)),
            ),
            "type_definition" => {
                let tag = typedef_tag(node).filter(|t| t.child_by_field_name("body").is_some());
                if let Some(tag) = tag
                    && let Some(name) = tag.child_by_field_name("name")
                {
                    let kind = match tag.kind() {
                        "enum_specifier" => ChunkKind::Enum,
                        _ => ChunkKind::Struct,
                    };
                    definitions.push(found(name, kind));
                }
            }
            _ => {}
        }
    }

    /// `exports.compileTrust = function (val) {...}`, `Router.prototype.use = function ...`,
    /// `module.exports = function createApplication() {...}`: the function or class assigned
    /// is defined under the name it is assigned to (or its own, for `module.exports`), inside
    /// the objects named before it (without `prototype`, `module` and `exports`).
    fn define_assignment(&self, node: Node, container: &[String]) {
        let Some(assignment) = (node.kind() == "expression_statement")
            .then(|| node.named_child(0))
            .flatten()
            .filter(|a| a.kind() == "assignment_expression")
        else {
            return;
        };
        let (Some(left), Some(right)) = (
            assignment.child_by_field_name("left"),
            assignment.child_by_field_name("right"),
        ) else {
            return;
        };
        let kind = match right.kind() {
            "function_expression" | "function" | "arrow_function" | "generator_function" => {
                ChunkKind::Function
            }
            "class" => ChunkKind::Class,
            _ => return,
        };
        if left.kind() != "member_expression" {
            return;
        }
        let path = self.text_of(left);
        let mut parts: Vec<&str> = path
            .split('.')
            .map(str::trim)
            .filter(|p| !matches!(*p, "prototype" | "module" | "exports"))
            .collect();
        let own = right.child_by_field_name("name").map(|n| self.text_of(n));
        let name = match (parts.pop(), own) {
            (Some(name), _) => name.to_owned(),
            (None, Some(own)) => own,
            (None, None) => return,
        };
        if !name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        {
            return;
        }
        let mut path = container.to_vec();
        path.extend(parts.into_iter().map(str::to_owned));
        let lines = self.node_lines(node);
        self.definitions.borrow_mut().push(Found {
            code_line: lines.start,
            lines,
            name,
            container: path,
            kind,
            refers_to: None,
        });
    }

    /// The `struct`, `union` or `enum` tag a C `typedef` names without defining it
    /// (`typedef struct evp_pkey_st EVP_PKEY;`).
    fn typedef_target(&self, decl: Node) -> Option<String> {
        let tag = typedef_tag(decl).filter(|t| t.child_by_field_name("body").is_none())?;
        Some(self.text_of(tag.child_by_field_name("name")?))
    }

    /// Whether a `#define` stands for another identifier alone.
    fn is_alias(&self, define: Node) -> bool {
        define.child_by_field_name("value").is_some_and(|value| {
            let value = self.text[value.byte_range()].trim();
            !value.is_empty()
                && value.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !value.starts_with(|c: char| c.is_ascii_digit())
        })
    }

    fn body_of<'tree>(&self, decl: Node<'tree>) -> Option<Node<'tree>> {
        if self.rules.bodies.contains(&decl.kind()) {
            return Some(decl);
        }
        decl.child_by_field_name("body").or_else(|| {
            named_children(decl)
                .into_iter()
                .find(|c| self.rules.bodies.contains(&c.kind()))
        })
    }

    /// The first line of the declaration proper (after its doc comments), trimmed.
    fn signature(&self, decl: Node) -> String {
        let line = self
            .lines
            .line(decl.start_position().row.min(self.lines.count() - 1));
        let line = line.trim();
        match line.char_indices().nth(MAX_SIGNATURE) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line.to_owned(),
        }
    }
}

/// The `struct`, `union` or `enum` specifier a C `typedef` declares its alias of, with or
/// without a body.
fn typedef_tag(node: Node) -> Option<Node> {
    (node.kind() == "type_definition")
        .then(|| node.child_by_field_name("type"))
        .flatten()
        .filter(|t| {
            matches!(
                t.kind(),
                "struct_specifier" | "union_specifier" | "enum_specifier"
            )
        })
}

/// A function inside anything but a module is a method.
fn member_kind(kind: ChunkKind, parent: Option<ChunkKind>) -> ChunkKind {
    match (kind, parent) {
        (ChunkKind::Function, Some(p)) if p != ChunkKind::Module => ChunkKind::Method,
        (kind, _) => kind,
    }
}

fn named_children(node: Node) -> Vec<Node> {
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
