//! JSON-RPC 2.0's `id` rule on every error path: each method the server answers, sent in
//! malformed shapes, before the handshake and after it. Every error answer has an `id`
//! member: the request's where it had one JSON-RPC allows (a string or an integer), `null`
//! where it had none or one that cannot be read. A well-formed notification gets no answer,
//! and the server goes on serving.

use super::*;

/// What a malformed message must get.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// An error with this code and this `id` (`null` included).
    Error(i64, Value),
    /// An error with one of these codes, and this `id`.
    ErrorOf(&'static [i64], Value),
    /// An answer (a result or an error) with this `id`.
    Answer(Value),
    /// No answer at all: a well-formed notification.
    Nothing,
}

const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// The methods, with params that fit each, and whether it is a notification.
fn methods() -> Vec<(&'static str, Value, bool)> {
    vec![
        (
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "conformance", "version": "0"}}),
            false,
        ),
        ("ping", json!({}), false),
        ("tools/list", json!({}), false),
        (
            "tools/call",
            json!({"name": "index", "arguments": {"action": "status"}}),
            false,
        ),
        ("resources/explode", json!({}), false),
        ("notifications/initialized", json!({}), true),
        (
            "notifications/cancelled",
            json!({"requestId": 123_456, "reason": "conformance"}),
            true,
        ),
    ]
}

/// Every malformed shape of `method` (with `params` that fit it), as lines to send and what
/// each must get. `next_id` numbers the requests: even ones integers, odd ones strings.
fn cases(
    method: &str,
    params: &Value,
    notification: bool,
    next_id: &mut u64,
) -> Vec<(String, Vec<u8>, Expect)> {
    let served = ["initialize", "ping", "tools/list", "tools/call"].contains(&method);
    let mut id = move || -> Value {
        *next_id += 1;
        match *next_id % 2 {
            0 => json!(*next_id),
            _ => json!(format!("conformance-{next_id}")),
        }
    };
    let message = |id: &Option<Value>, params: Value| -> Value {
        let mut message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if let Some(id) = id {
            message["id"] = id.clone();
        }
        message
    };
    // The id a well-formed request of this method has (none for a notification), and what
    // an error at the envelope answers with.
    let mut request_id = || (!notification).then(&mut id);
    let envelope =
        |id: &Option<Value>| Expect::Error(INVALID_REQUEST, id.clone().unwrap_or(Value::Null));
    // Params that do not fit: the method's error, or nothing for a notification.
    let unfit = |id: &Option<Value>| match id {
        None => Expect::Nothing,
        Some(id) if served => Expect::Error(INVALID_PARAMS, id.clone()),
        // Not found; before the handshake, rmcp's lifecycle asks for its metadata first.
        Some(id) => Expect::ErrorOf(&[METHOD_NOT_FOUND, INVALID_PARAMS], id.clone()),
    };
    let mut cases: Vec<(String, Value, Expect)> = Vec::new();
    for (what, value) in [
        ("params a string", json!("x")),
        ("params a number", json!(5)),
        ("params true", json!(true)),
        ("params false", json!(false)),
    ] {
        let id = request_id();
        cases.push((what.into(), message(&id, value), envelope(&id)));
    }
    let id = request_id();
    cases.push((
        "params an array".into(),
        message(&id, json!([1, 2])),
        unfit(&id),
    ));
    let id = request_id();
    let expect = match (&id, method) {
        (None, _) => Expect::Nothing,
        // Both take params.
        (Some(id), "initialize" | "tools/call") => Expect::Error(INVALID_PARAMS, id.clone()),
        (Some(id), "resources/explode") => {
            Expect::ErrorOf(&[METHOD_NOT_FOUND, INVALID_PARAMS], id.clone())
        }
        (Some(id), _) => Expect::Answer(id.clone()),
    };
    cases.push(("params null".into(), message(&id, Value::Null), expect));
    for (what, meta) in [
        ("_meta a string", json!("x")),
        ("_meta a number", json!(7)),
        ("_meta an array", json!([1])),
        ("_meta true", json!(true)),
    ] {
        let id = request_id();
        let mut params = params.clone();
        params["_meta"] = meta;
        let expect = match &id {
            None => Expect::Nothing,
            Some(id) => Expect::ErrorOf(&[INVALID_PARAMS, METHOD_NOT_FOUND], id.clone()),
        };
        cases.push((what.into(), message(&id, params), expect));
    }
    // Ids JSON-RPC does not allow (a notification's method with one is a request).
    for (what, bad) in [
        ("id an object", json!({"a": 1})),
        ("id an array", json!([1])),
        ("id a fraction", json!(1.5)),
        ("id an integer written as a fraction", json!(2.0)),
        ("id true", json!(true)),
        ("id null", Value::Null),
    ] {
        let mut line = message(&None, params.clone());
        line["id"] = bad;
        cases.push((
            what.into(),
            line,
            Expect::Error(INVALID_REQUEST, Value::Null),
        ));
    }
    let id = request_id();
    let mut line = message(&id, params.clone());
    line.as_object_mut().unwrap().remove("jsonrpc");
    cases.push(("jsonrpc missing".into(), line, envelope(&id)));
    for (what, version) in [
        ("jsonrpc 1.0", json!("1.0")),
        ("jsonrpc a number", json!(2.0)),
    ] {
        let id = request_id();
        let mut line = message(&id, params.clone());
        line["jsonrpc"] = version;
        cases.push((what.into(), line, envelope(&id)));
    }
    for (what, name) in [
        ("method in an array", json!([method])),
        ("method a number", json!(42)),
        ("method null", Value::Null),
    ] {
        let id = request_id();
        let mut line = message(&id, params.clone());
        line["method"] = name;
        cases.push((what.into(), line, envelope(&id)));
    }
    let id = request_id();
    let mut line = message(&id, params.clone());
    line["result"] = json!({});
    cases.push(("a method and a result".into(), line, envelope(&id)));
    let id = request_id();
    cases.push((
        "in a batch".into(),
        json!([message(&id, params.clone())]),
        Expect::Error(INVALID_REQUEST, Value::Null),
    ));
    cases
        .into_iter()
        .map(|(what, line, expect)| (what, line.to_string().into_bytes(), expect))
        .collect()
}

/// Sends `line`, then a ping, and checks what comes back before and with the ping's answer
/// against `expect`; rmcp answers requests concurrently, so an answer carrying the case's
/// own id may also follow the ping's.
fn check(client: &mut Client, what: &str, line: &[u8], expect: &Expect, sentinel: u64) {
    let mut sent = line.to_vec();
    sent.push(b'\n');
    client.send_raw(&sent);
    let ping = json!(format!("sentinel-{sentinel}"));
    client.send(&json!({"jsonrpc": "2.0", "id": ping, "method": "ping"}));
    let case = format!("{what}: {}", String::from_utf8_lossy(line));
    let wanted = match expect {
        Expect::Nothing => 0,
        _ => 1,
    };
    let mut answers = Vec::new();
    let mut pinged = false;
    while !pinged || answers.len() < wanted {
        let answer = client.answer();
        // Every answer has an id member: none may lack it.
        assert!(
            answer.as_object().unwrap().contains_key("id"),
            "{case}: an answer without an id: {answer}"
        );
        if answer["id"] == ping {
            assert_eq!(answer["result"], json!({}), "{case}: the ping: {answer}");
            pinged = true;
        } else {
            answers.push(answer);
        }
    }
    assert_eq!(answers.len(), wanted, "{case}: {answers:?}");
    let Some(answer) = answers.first() else {
        return;
    };
    let (codes, id): (&[i64], &Value) = match expect {
        Expect::Error(code, id) => (std::slice::from_ref(code), id),
        Expect::ErrorOf(codes, id) => (codes, id),
        Expect::Answer(id) => (&[], id),
        Expect::Nothing => unreachable!(),
    };
    assert_eq!(&answer["id"], id, "{case}: the id: {answer}");
    if !matches!(expect, Expect::Answer(_)) {
        let code = answer["error"]["code"].as_i64();
        assert!(
            code.is_some_and(|code| codes.contains(&code)),
            "{case}: an error of {codes:?}: {answer}"
        );
        assert!(answer.get("result").is_none(), "{case}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{case}: {answer}"
        );
    }
}

/// Every method in every malformed shape, before the handshake (but the well-formed
/// notifications, which get no answer: rmcp's lifecycle ends the connection on a
/// notification before `initialize`) and after it; then a ping and a tool call are still
/// answered.
pub(crate) fn every_error_answer_carries_the_id_json_rpc_prescribes() {
    let repo = shop();
    let mut client = Client::start_with(repo.path(), false, false);
    let mut next_id = 1000;
    let mut sentinel = 0;
    let mut checked = 0;
    for phase in ["before the handshake", "after the handshake"] {
        if phase == "after the handshake" {
            client = Client::handshake(client);
        }
        for (method, params, notification) in methods() {
            let cases = cases(method, &params, notification, &mut next_id);
            assert!(cases.len() >= 10, "{method}: {} shapes", cases.len());
            for (what, line, expect) in cases {
                // rmcp's lifecycle ends the connection on a notification before
                // `initialize`: only those answered here are sent then.
                if phase == "before the handshake" && expect == Expect::Nothing {
                    continue;
                }
                sentinel += 1;
                check(
                    &mut client,
                    &format!("{phase}, {method}, {what}"),
                    &line,
                    &expect,
                    sentinel,
                );
                checked += 1;
            }
        }
    }
    println!("  {checked} malformed messages answered by the rule");
    // Still serving.
    let ping = client.request("ping", json!({}));
    assert_eq!(ping["result"], json!({}), "{ping}");
    let status = client.call("index", json!({"action": "status"}));
    assert!(status.get("indexing").is_some(), "{status}");
    client.close();
}
