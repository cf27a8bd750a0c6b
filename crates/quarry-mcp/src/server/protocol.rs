//! The JSON-RPC errors owed to requests rmcp's types cannot read.

use quarry_engine::quoted;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, ErrorCode, InitializeRequestParams, PaginatedRequestParams,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

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
                    "method not found: {}; this server answers initialize, ping, tools/list \
                     and tools/call",
                    quoted(method)
                ),
                None,
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
        "." => serde_fault(&error),
        path => format!("params.{path}: {}", serde_fault(&error)),
    })
}

/// How many characters of serde's word on a value it could not read are kept: serde quotes
/// a wrong value whole (`invalid type: string "…", expected usize`), and a value may be
/// megabytes long.
const SERDE_FAULT_CHARS: usize = 160;

/// What serde found wrong in a request's JSON, cut to [`SERDE_FAULT_CHARS`].
pub(super) fn serde_fault(error: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let fault = error.inner().to_string();
    match fault.char_indices().nth(SERDE_FAULT_CHARS) {
        Some((cut, _)) => format!("{}… (cut)", &fault[..cut]),
        None => fault,
    }
}
