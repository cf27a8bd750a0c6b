//! JSON schemas of the names [`Language`] and [`ChunkKind`] serialise to (feature `schema`).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use crate::{ALL_KINDS, ALL_LANGUAGES, ChunkKind, Language};

/// A string that is one of `names`.
fn one_of<'a>(names: impl Iterator<Item = &'a str>) -> Schema {
    let names: Vec<&str> = names.collect();
    json_schema!({ "type": "string", "enum": names })
}

impl JsonSchema for Language {
    fn schema_name() -> Cow<'static, str> {
        "Language".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        one_of(ALL_LANGUAGES.iter().map(|language| language.name()))
    }
}

impl JsonSchema for ChunkKind {
    fn schema_name() -> Cow<'static, str> {
        "ChunkKind".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        one_of(ALL_KINDS.iter().map(|kind| kind.name()))
    }
}
