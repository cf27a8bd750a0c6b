//! A tool's arguments: the schemas clients see, derived from the argument and view types, and
//! the parse that names the argument at fault.

use std::sync::Arc;

use quarry_engine::quoted;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::protocol;

/// How many unknown arguments an error names.
const UNKNOWN_NAMED: usize = 5;

/// A tool's input schema, from its argument type.
pub(super) fn input_schema<Args: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_type::<Args>()
}

/// A tool's output schema, from the view it returns: clients may check results against it.
pub(super) fn output_schema<View: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_output::<View>()
}

/// `arguments` as `Args`, or a message naming the argument at fault: one the schema lacks
/// (serde would ignore it, and a misspelt `max_results` would silently do nothing), or one
/// of the wrong type.
pub(super) fn parse<Args: DeserializeOwned + JsonSchema + 'static>(
    arguments: JsonObject,
) -> Result<Args, String> {
    let schema = input_schema::<Args>();
    let known: Vec<&String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    let unknown: Vec<&String> = arguments.keys().filter(|k| !known.contains(k)).collect();
    if !unknown.is_empty() {
        // Quoted: a key may be empty or odd.
        let mut named: Vec<String> = unknown
            .iter()
            .take(UNKNOWN_NAMED)
            .map(|k| quoted(k))
            .collect();
        if unknown.len() > UNKNOWN_NAMED {
            named.push(format!("and {} more", unknown.len() - UNKNOWN_NAMED));
        }
        let known: Vec<&str> = known.iter().map(|k| k.as_str()).collect();
        return Err(format!(
            "unknown argument {}; the arguments are: {}",
            named.join(", "),
            known.join(", ")
        ));
    }
    serde_path_to_error::deserialize(Value::Object(arguments)).map_err(|error| {
        match error.path().to_string().as_str() {
            "." => format!("invalid arguments: {}", protocol::serde_fault(&error)),
            path => format!("argument {path}: {}", protocol::serde_fault(&error)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::ResultArgs;
    use crate::{IndexArgs, SearchArgs};
    use serde_json::json;

    #[test]
    fn arguments_are_parsed_with_the_culprit_named() {
        let object = |value: Value| value.as_object().unwrap().clone();
        let args: SearchArgs = parse(object(
            json!({"query": "q", "limit": 3, "paths": ["src/**"]}),
        ))
        .unwrap();
        assert_eq!(
            (args.limit, args.request(None).paths),
            (Some(3), vec!["src/**".to_owned()])
        );
        let error = parse::<SearchArgs>(object(json!({"query": "q", "limit": "ten"}))).unwrap_err();
        assert!(error.starts_with("argument limit: invalid type"), "{error}");
        let error =
            parse::<SearchArgs>(object(json!({"query": "q", "max_results": 5}))).unwrap_err();
        assert!(
            error.contains("unknown argument \"max_results\"") && error.contains("limit"),
            "{error}"
        );
        let error = parse::<SearchArgs>(object(json!({}))).unwrap_err();
        assert!(error.contains("missing field `query`"), "{error}");
        let error = parse::<IndexArgs>(object(json!({"action": "explode"}))).unwrap_err();
        assert!(
            error.contains("action") && error.contains("build"),
            "{error}"
        );
    }

    #[test]
    fn schemas_are_objects_that_describe_every_argument() {
        let schema = input_schema::<SearchArgs>();
        assert_eq!(schema["type"], "object");
        for (name, property) in schema["properties"].as_object().unwrap() {
            assert!(
                property.get("description").is_some(),
                "{name} has no description"
            );
        }
        assert_eq!(
            input_schema::<SearchArgs>(),
            schema,
            "the same schema every time"
        );
    }
}
