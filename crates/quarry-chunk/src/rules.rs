//! Per-language syntax rules: which tree-sitter nodes are items, containers,
//! leading trivia and so on. Adding a language means adding a table here.

use crate::{ChunkKind, Language};
use ChunkKind::*;

/// How to read one grammar's syntax tree.
pub(crate) struct Rules {
    /// Node kinds that are chunks of their own, and what kind of chunk.
    pub items: &'static [(&'static str, ChunkKind)],
    /// Item kinds that hold members and may be split into a header plus one chunk per member.
    pub containers: &'static [&'static str],
    /// Kinds of the node that holds a container's members, where there is no `body` field.
    pub bodies: &'static [&'static str],
    /// Comments, attributes, decorators and signatures that belong to the item after them.
    pub leading: &'static [&'static str],
    /// Nodes (`export ...`, `@decorated ...`, `template <...> ...`) whose inner declaration
    /// decides what they are.
    pub wrappers: &'static [&'static str],
    /// Nodes whose children belong to the enclosing scope (`#ifndef` guards, Haskell's
    /// declaration list).
    pub transparent: &'static [&'static str],
    /// Declarations (`const f = () => ...`, `const S = struct {...}`) that are items when
    /// the value bound is one of `values`.
    pub bindings: &'static [&'static str],
    /// Values that make a binding an item.
    pub values: &'static [(&'static str, ChunkKind)],
    /// Keywords that refine a generic declaration (`struct`, `extension`, `interface`...).
    pub keywords: &'static [(&'static str, ChunkKind)],
    /// Separators of a qualified name (`Matrix::rows`, `Vector:len`): the parts before the
    /// last one are the item's containers.
    pub qualifiers: &'static [&'static str],
    /// Fields that hold an item's name, tried in order (a `declarator` field is followed
    /// down to the declared identifier).
    pub name_fields: &'static [&'static str],
    /// Adjacent definitions with the same name are clauses of one function (Haskell, Elixir).
    pub clauses: bool,
    /// The grammar's external scanner crashes on characters above U+00FF (it passes them
    /// to C's `isdigit`; tree-sitter-bash 0.25.1, upstream issue #337), so it is given a
    /// copy of the text with every non-ASCII byte replaced by `_`.
    pub ascii_only: bool,
    /// The node kind of a macro invocation whose braced body may hold items (Rust's
    /// `cfg_rt! { ... }`), parsed again on its own ([`crate::SyntaxTree`]).
    pub item_macro: Option<&'static str>,
    /// Preprocessor conditionals (`#if` ... `#else` ... `#endif`) may cut through a
    /// declaration (a parameter list, an initializer) where the grammar cannot follow them:
    /// where the file's parse errs, a copy with those lines blanked is parsed too, and kept
    /// if its errors cover fewer bytes ([`crate::SyntaxTree`]).
    pub conditionals: bool,
    /// Annotation macros (`PROTOBUF_EXPORT class`, `SPDLOG_INLINE void`, `ABSL_DEPRECATED(...)`
    /// on a line of its own) read as names or calls where declarations are: where the parse
    /// still errs, a copy with them blanked is parsed too, and kept if its errors cover fewer
    /// bytes ([`crate::SyntaxTree`]).
    pub annotations: bool,
}

const NONE: &[&str] = &[];
const NO_KINDS: &[(&str, ChunkKind)] = &[];

const DEFAULT: Rules = Rules {
    items: NO_KINDS,
    containers: NONE,
    bodies: NONE,
    leading: &["comment"],
    wrappers: NONE,
    transparent: NONE,
    bindings: NONE,
    values: NO_KINDS,
    keywords: NO_KINDS,
    qualifiers: NONE,
    name_fields: &["name", "declarator"],
    clauses: false,
    ascii_only: false,
    item_macro: None,
    conditionals: false,
    annotations: false,
};

const C_ITEMS: &[(&str, ChunkKind)] = &[
    ("function_definition", Function),
    ("struct_specifier", Struct),
    ("union_specifier", Struct),
    ("enum_specifier", Enum),
    ("type_definition", Type),
    ("preproc_function_def", Macro),
    ("class_specifier", Class),
    ("namespace_definition", Module),
    ("concept_definition", Type),
];
const C_TRANSPARENT: &[&str] = &[
    "preproc_if",
    "preproc_ifdef",
    "preproc_else",
    "preproc_elif",
    "preproc_elifdef",
    "linkage_specification",
    "declaration_list",
];

const JS_ITEMS: &[(&str, ChunkKind)] = &[
    ("function_declaration", Function),
    ("generator_function_declaration", Function),
    ("class_declaration", Class),
    ("abstract_class_declaration", Class),
    ("class", Class),
    ("method_definition", Function),
    ("interface_declaration", Interface),
    ("type_alias_declaration", Type),
    ("enum_declaration", Enum),
    ("internal_module", Module),
    ("module", Module),
];
const JS_VALUES: &[(&str, ChunkKind)] = &[
    ("arrow_function", Function),
    ("function_expression", Function),
    ("function", Function),
    ("generator_function", Function),
    ("class", Class),
];
const JS: Rules = Rules {
    items: JS_ITEMS,
    containers: &[
        "class_declaration",
        "abstract_class_declaration",
        "class",
        "interface_declaration",
        "internal_module",
        "module",
    ],
    bodies: &["class_body", "interface_body", "statement_block"],
    leading: &["comment", "decorator"],
    wrappers: &[
        "export_statement",
        "expression_statement",
        "ambient_declaration",
    ],
    bindings: &[
        "lexical_declaration",
        "variable_declaration",
        "public_field_definition",
        "field_definition",
    ],
    values: JS_VALUES,
    ..DEFAULT
};

/// The syntax rules of a language, or `None` for languages without a grammar.
pub(crate) fn rules(language: Language) -> Option<&'static Rules> {
    Some(match language {
        Language::Rust => &Rules {
            items: &[
                ("function_item", Function),
                ("function_signature_item", Function),
                ("struct_item", Struct),
                ("union_item", Struct),
                ("enum_item", Enum),
                ("trait_item", Trait),
                ("impl_item", Impl),
                ("mod_item", Module),
                ("type_item", Type),
                ("macro_definition", Macro),
            ],
            containers: &["impl_item", "trait_item", "mod_item"],
            leading: &["line_comment", "block_comment", "attribute_item"],
            qualifiers: &["::"],
            // An impl is named by the type it implements.
            name_fields: &["name", "type"],
            item_macro: Some("macro_invocation"),
            ..DEFAULT
        },
        Language::Python => &Rules {
            items: &[
                ("function_definition", Function),
                ("class_definition", Class),
            ],
            containers: &["class_definition"],
            wrappers: &["decorated_definition"],
            ..DEFAULT
        },
        Language::JavaScript | Language::TypeScript | Language::Tsx => &JS,
        Language::Go => &Rules {
            items: &[
                ("function_declaration", Function),
                ("method_declaration", Method),
                ("type_declaration", Type),
            ],
            keywords: &[("struct_type", Struct), ("interface_type", Interface)],
            ..DEFAULT
        },
        Language::Java => &Rules {
            items: &[
                ("class_declaration", Class),
                ("record_declaration", Class),
                ("interface_declaration", Interface),
                ("annotation_type_declaration", Interface),
                ("enum_declaration", Enum),
                ("method_declaration", Function),
                ("constructor_declaration", Function),
            ],
            containers: &[
                "class_declaration",
                "record_declaration",
                "interface_declaration",
                "enum_declaration",
            ],
            transparent: &["enum_body_declarations"],
            leading: &["line_comment", "block_comment"],
            ..DEFAULT
        },
        Language::C => &Rules {
            items: C_ITEMS,
            transparent: C_TRANSPARENT,
            conditionals: true,
            annotations: true,
            ..DEFAULT
        },
        Language::Cpp => &Rules {
            items: C_ITEMS,
            containers: &[
                "class_specifier",
                "struct_specifier",
                "namespace_definition",
            ],
            // A nested class is a field declaration whose type is the class.
            wrappers: &["template_declaration", "field_declaration"],
            transparent: C_TRANSPARENT,
            qualifiers: &["::"],
            conditionals: true,
            annotations: true,
            ..DEFAULT
        },
        Language::CSharp => &Rules {
            items: &[
                ("namespace_declaration", Module),
                ("class_declaration", Class),
                ("record_declaration", Class),
                ("struct_declaration", Struct),
                ("interface_declaration", Interface),
                ("enum_declaration", Enum),
                ("delegate_declaration", Type),
                ("method_declaration", Function),
                ("constructor_declaration", Function),
                ("local_function_statement", Function),
            ],
            containers: &[
                "namespace_declaration",
                "class_declaration",
                "record_declaration",
                "struct_declaration",
                "interface_declaration",
            ],
            transparent: &["file_scoped_namespace_declaration"],
            conditionals: true,
            ..DEFAULT
        },
        Language::Ruby => &Rules {
            items: &[
                ("method", Function),
                ("singleton_method", Function),
                ("class", Class),
                ("singleton_class", Class),
                ("module", Module),
            ],
            containers: &["class", "singleton_class", "module"],
            qualifiers: &["::"],
            ..DEFAULT
        },
        Language::Php => &Rules {
            items: &[
                ("function_definition", Function),
                ("method_declaration", Function),
                ("class_declaration", Class),
                ("interface_declaration", Interface),
                ("trait_declaration", Trait),
                ("enum_declaration", Enum),
            ],
            containers: &[
                "class_declaration",
                "interface_declaration",
                "trait_declaration",
                "enum_declaration",
            ],
            ..DEFAULT
        },
        Language::Kotlin => &Rules {
            items: &[
                ("class_declaration", Class),
                ("object_declaration", Class),
                ("companion_object", Class),
                ("function_declaration", Function),
                ("type_alias", Type),
            ],
            containers: &[
                "class_declaration",
                "object_declaration",
                "companion_object",
            ],
            bodies: &["class_body", "enum_class_body"],
            leading: &["line_comment", "block_comment"],
            keywords: &[("interface", Interface), ("enum", Enum)],
            name_fields: &["name"],
            ..DEFAULT
        },
        Language::Swift => &Rules {
            items: &[
                ("class_declaration", Class),
                ("protocol_declaration", Trait),
                ("function_declaration", Function),
                ("protocol_function_declaration", Function),
                ("init_declaration", Function),
                ("deinit_declaration", Function),
                ("typealias_declaration", Type),
            ],
            containers: &["class_declaration", "protocol_declaration"],
            leading: &["comment", "multiline_comment"],
            keywords: &[
                ("struct", Struct),
                ("enum", Enum),
                ("extension", Impl),
                ("actor", Class),
            ],
            ..DEFAULT
        },
        Language::Scala => &Rules {
            items: &[
                ("class_definition", Class),
                ("object_definition", Module),
                ("trait_definition", Trait),
                ("enum_definition", Enum),
                ("function_definition", Function),
                ("function_declaration", Function),
                ("type_definition", Type),
                ("given_definition", Impl),
                ("extension_definition", Impl),
            ],
            containers: &[
                "class_definition",
                "object_definition",
                "trait_definition",
                "enum_definition",
                "extension_definition",
            ],
            leading: &["comment", "block_comment"],
            ..DEFAULT
        },
        Language::Bash => &Rules {
            items: &[("function_definition", Function)],
            ascii_only: true,
            ..DEFAULT
        },
        Language::Lua => &Rules {
            items: &[("function_declaration", Function)],
            qualifiers: &[".", ":"],
            ..DEFAULT
        },
        Language::Zig => &Rules {
            items: &[
                ("function_declaration", Function),
                ("test_declaration", Test),
            ],
            containers: &[
                "struct_declaration",
                "enum_declaration",
                "union_declaration",
            ],
            bodies: &[
                "struct_declaration",
                "enum_declaration",
                "union_declaration",
            ],
            bindings: &["variable_declaration"],
            values: &[
                ("struct_declaration", Struct),
                ("enum_declaration", Enum),
                ("union_declaration", Struct),
                ("opaque_declaration", Type),
            ],
            ..DEFAULT
        },
        Language::Haskell => &Rules {
            items: &[
                ("function", Function),
                ("bind", Function),
                ("data_type", Type),
                ("newtype", Type),
                ("type_synomym", Type),
                ("type_family", Type),
                ("class", Trait),
                ("instance", Impl),
            ],
            containers: &["class", "instance"],
            bodies: &["class_declarations", "instance_declarations"],
            leading: &["comment", "haddock", "signature", "pragma"],
            transparent: &["imports", "declarations"],
            clauses: true,
            ..DEFAULT
        },
        // Elixir's definitions are all calls (`def`, `defmodule`...): see `syntax::elixir_call`.
        Language::Elixir => &Rules {
            containers: &["call"],
            bodies: &["do_block"],
            leading: &["comment"],
            clauses: true,
            ..DEFAULT
        },
        Language::Markdown | Language::Text => return None,
    })
}

impl Rules {
    pub(crate) fn item_kind(&self, node_kind: &str) -> Option<ChunkKind> {
        lookup(self.items, node_kind)
    }

    pub(crate) fn value_kind(&self, node_kind: &str) -> Option<ChunkKind> {
        lookup(self.values, node_kind)
    }
}

pub(crate) fn lookup(table: &[(&str, ChunkKind)], key: &str) -> Option<ChunkKind> {
    table.iter().find(|(k, _)| *k == key).map(|(_, kind)| *kind)
}
