//! docs/reference.md names every field of the JSON that quarry writes (the CLI's `--json`
//! and the MCP tools' results, both the engine's views) and every MCP tool argument: a
//! field added to a view or an argument type without a word in the reference fails here.

use std::collections::BTreeSet;

use quarry_engine::view::{IndexReportView, RelatedView, SearchView, StatusView};
use quarry_mcp::{IndexArgs, RelatedArgs, SearchArgs, SimilarArgs};
use schemars::schema_for;
use serde_json::Value;

/// The reference every field must be named in, as `` `name` ``.
const REFERENCE: &str = include_str!("../../../docs/reference.md");

/// Every property name in `schema`, its definitions' included.
fn properties(schema: &Value, names: &mut BTreeSet<String>) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::Object(properties)) = object.get("properties") {
                names.extend(properties.keys().cloned());
            }
            object.values().for_each(|value| properties(value, names));
        }
        Value::Array(values) => values.iter().for_each(|value| properties(value, names)),
        _ => {}
    }
}

/// The names `schemas` hold that the reference does not quote.
fn missing(schemas: &[(&str, Value)]) -> Vec<String> {
    let mut missing = Vec::new();
    for (name, schema) in schemas {
        let mut names = BTreeSet::new();
        properties(schema, &mut names);
        assert!(!names.is_empty(), "{name}'s schema has no properties");
        missing.extend(
            names
                .into_iter()
                .filter(|field| !REFERENCE.contains(&format!("`{field}`")))
                .map(|field| format!("{name}.{field}")),
        );
    }
    missing
}

/// Fails, listing them as `what`, where the reference leaves out any of the properties.
#[track_caller]
fn assert_named(schemas: &[(&str, Value)], what: &str) {
    let missing = missing(schemas);
    assert!(
        missing.is_empty(),
        "docs/reference.md does not name these {what}: {}",
        missing.join(", ")
    );
}

#[test]
fn every_json_field_is_in_the_reference() {
    let views = [
        ("SearchView", schema_for!(SearchView).to_value()),
        ("RelatedView", schema_for!(RelatedView).to_value()),
        ("IndexReportView", schema_for!(IndexReportView).to_value()),
        ("StatusView", schema_for!(StatusView).to_value()),
    ];
    assert_named(&views, "JSON fields (as `field`)");
}

#[test]
fn every_tool_argument_is_in_the_reference() {
    let arguments = [
        ("semantic_search", schema_for!(SearchArgs).to_value()),
        ("get_related", schema_for!(RelatedArgs).to_value()),
        ("find_similar", schema_for!(SimilarArgs).to_value()),
        ("index", schema_for!(IndexArgs).to_value()),
    ];
    assert_named(&arguments, "MCP tool arguments (as `argument`)");
}
