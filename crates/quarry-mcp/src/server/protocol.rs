//! The JSON-RPC errors owed to requests rmcp's types cannot read.

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, ErrorCode, InitializeRequestParams, PaginatedRequestParams,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The error for a request that rmcp's types do not read: `method` with `params`.
pub(super) fn unreadable_request(
    method: &str,
    params: Option<&Value>,
    tools: &[String],
) -> ErrorData {
    let fault = match method {
        "tools/call" => params_fault::<CallToolRequestParams>(params).map(|fault| {
            format!(
                "{fault}; tools/call takes params {{\"name\": the tool ({}), \"arguments\": \
                 an object}}",
                tools.join(", ")
            )
        }),
        // Its params are optional.
        "tools/list" => params.and_then(|p| params_fault::<PaginatedRequestParams>(Some(p))),
        "initialize" => params_fault::<InitializeRequestParams>(params),
        "ping" => None,
        _ => {
            return ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "method not found: {method:?}; this server answers initialize, ping, \
                     tools/list and tools/call"
                ),
                Some(json!({"method": method})),
            );
        }
    };
    let fault = fault.unwrap_or_else(|| "the params do not fit it".into());
    ErrorData::invalid_params(format!("invalid params for {method}: {fault}"), None)
}

/// What is wrong with `params` as `Params`: missing, or the field at fault and why; `None`
/// where they read.
fn params_fault<Params: DeserializeOwned>(params: Option<&Value>) -> Option<String> {
    let Some(params) = params.filter(|p| !p.is_null()) else {
        return Some("params are missing".into());
    };
    let error = serde_path_to_error::deserialize::<_, Params>(params.clone()).err()?;
    Some(match error.path().to_string().as_str() {
        "." => error.inner().to_string(),
        path => format!("params.{path}: {}", error.inner()),
    })
}
