//! Chunking along the syntax tree: items, containers split into members, and
//! merged blocks of module-level code.

use std::cell::RefCell;
use std::collections::HashSet;
use std::ops::Range;

use tree_sitter::{Node, Tree};

use crate::definition::Found;
use crate::lines::Lines;
use crate::piece::Piece;
use crate::rules::Rules;
use crate::{ChunkKind, Language, SyntaxTree};

mod items;

use items::named_children;

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
    syntax: &'a SyntaxTree<'a>,
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
            syntax,
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
        if self.language == Language::Lua {
            self.define_lua_tables(root);
        }
        (pieces, self.definitions.into_inner())
    }

    /// A Lua class or module is a table: `local List = utils.stdmt.List` (or `M = {}`) at
    /// the top of a file that defines `function List.new` or `List:append` defines `List`,
    /// a module, at that statement; the functions alone would leave the name undefined.
    fn define_lua_tables(&self, root: Node) {
        let mut definitions = self.definitions.borrow_mut();
        // Names that hold functions, and names already defined at the top (a table bound
        // twice is defined once).
        let holders: HashSet<String> = definitions
            .iter()
            .filter_map(|d| d.container.first().cloned())
            .collect();
        let mut defined: HashSet<String> = definitions
            .iter()
            .filter(|d| d.container.is_empty())
            .map(|d| d.name.clone())
            .collect();
        for node in named_children(root) {
            let assignment = match node.kind() {
                "variable_declaration" => node.named_child(0),
                "assignment_statement" => Some(node),
                _ => None,
            };
            let Some(variables) = assignment
                .filter(|a| a.kind() == "assignment_statement")
                .and_then(|a| a.named_child(0))
                .filter(|v| v.kind() == "variable_list" && v.named_child_count() == 1)
            else {
                continue;
            };
            let Some(name) = variables
                .named_child(0)
                .filter(|n| n.kind() == "identifier")
            else {
                continue;
            };
            let name = self.text_of(name);
            if holders.contains(&name) && defined.insert(name.clone()) {
                let lines = self.node_lines(node);
                definitions.push(Found {
                    code_line: lines.start,
                    lines,
                    name,
                    container: Vec::new(),
                    kind: ChunkKind::Module,
                    refers_to: None,
                });
            }
        }
    }

    /// Classifies the nodes of a scope (inside `container`) into entries of whole lines.
    fn entries(&self, nodes: Vec<Node<'a>>, container: &[String]) -> Vec<Entry<'a>> {
        let mut flat = Vec::with_capacity(nodes.len());
        self.flatten(nodes, 0, &mut flat);
        let mut entries: Vec<Entry<'a>> = Vec::with_capacity(flat.len());
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

    /// The nodes of a scope, with transparent ones (`#ifdef` blocks...) and macros holding
    /// items replaced by their children, down to `MAX_DEPTH` levels.
    fn flatten(&self, nodes: Vec<Node<'a>>, depth: usize, out: &mut Vec<Node<'a>>) {
        for node in nodes {
            if depth < MAX_DEPTH && self.rules.transparent.contains(&node.kind()) {
                self.flatten(named_children(node), depth + 1, out);
            } else if let Some(body) = self.syntax.macro_body(node) {
                self.flatten(named_children(body), depth + 1, out);
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
