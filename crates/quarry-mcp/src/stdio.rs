//! The stdio transport: rmcp's, behind a line reader of ours that answers what rmcp drops
//! without a word.
//!
//! rmcp skips an input line that is not JSON (malformed, invalid UTF-8, a lone surrogate
//! escape) or longer than its bound, and the client waits for an answer until its timeout.
//! JSON-RPC 2.0 answers such input with a parse error (`-32700`, `id` null) and goes on.
//! So the server reads stdin itself ([`read_lines`]): a line that parses as JSON goes on to
//! rmcp unchanged, through an in-memory pipe; one that does not is answered here.
//!
//! Both rmcp's messages and these answers reach stdout through one task ([`write_lines`])
//! that writes whole lines, one at a time: rmcp writes into a [`LineSink`], which hands each
//! complete line to that task, so an answer never lands inside one of rmcp's messages.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use quarry_engine::quoted;
use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The longest line read as one message: rmcp's own bound (16 MiB).
pub(crate) const MAX_LINE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// JSON-RPC 2.0's code for input that is not JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;

/// The transport's two ends as rmcp takes them, and the tasks behind them.
pub(crate) struct Stdio {
    /// What rmcp reads: the input lines that are JSON.
    pub(crate) input: DuplexStream,
    /// What rmcp writes: lines for stdout.
    pub(crate) output: LineSink,
    /// Reads the input; ends with it (or when rmcp stops reading).
    pub(crate) reader: JoinHandle<()>,
    /// Writes the output; ends once both the reader and the [`LineSink`] are gone.
    pub(crate) writer: JoinHandle<()>,
}

/// Starts reading `input` and writing `output` (stdin and stdout, or pipes in tests) on
/// tasks of the current runtime.
pub(crate) fn transport<R, W>(input: R, output: W) -> Stdio
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // Room for a few ordinary messages; a longer one passes in pieces.
    let (ours, rmcp) = tokio::io::duplex(1 << 16);
    let (lines, outgoing) = mpsc::unbounded_channel();
    let reader = tokio::spawn(read_lines(input, ours, lines.clone()));
    let writer = tokio::spawn(write_lines(output, outgoing));
    Stdio {
        input: rmcp,
        output: LineSink {
            pending: Vec::new(),
            lines,
        },
        reader,
        writer,
    }
}

/// Passes each line of `input` that is JSON on to `rmcp`, and answers each that is not
/// (through `replies`), until `input` ends or either side goes away.
async fn read_lines<R: AsyncRead + Unpin>(
    input: R,
    mut rmcp: DuplexStream,
    replies: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let verdict = match read_line(&mut input, &mut line, MAX_LINE_BYTES).await {
            Ok(Read::Line) => check(&line),
            Ok(Read::TooLong) => Verdict::Answer(error_line(
                PARSE_ERROR,
                &format!(
                    "Parse error: a message longer than {} MiB (one line of JSON each)",
                    MAX_LINE_BYTES >> 20
                ),
            )),
            Ok(Read::End) | Err(_) => break,
        };
        let gone = match verdict {
            Verdict::Pass => {
                // A last line without its newline is still a message.
                if line.last() != Some(&b'\n') {
                    line.push(b'\n');
                }
                rmcp.write_all(&line).await.is_err()
            }
            Verdict::Skip => false,
            Verdict::Answer(reply) => replies.send(reply).is_err(),
        };
        if gone {
            break;
        }
    }
    // rmcp reads the end of input, and stops.
    let _ = rmcp.shutdown().await;
}

/// Writes each line it is handed to `output`, until every sender is gone or `output` fails.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut output: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = lines.recv().await {
        if output.write_all(&line).await.is_err() {
            return;
        }
        // Flushed once nothing else waits, so that a burst goes out together.
        if lines.is_empty() && output.flush().await.is_err() {
            return;
        }
    }
    let _ = output.flush().await;
}

/// How a read line ended.
#[derive(Debug, PartialEq)]
enum Read {
    /// A line, with its newline unless the input ended first.
    Line,
    /// A line longer than the bound: its bytes were dropped, through its newline.
    TooLong,
    /// The end of input, with nothing more read.
    End,
}

/// Reads one line into `line` (empty on entry), never holding more than `max` bytes of it.
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<Read> {
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Read::TooLong,
                (false, true) => Read::End,
                (false, false) => Read::Line,
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        if !too_long {
            if line.len() + take > max {
                too_long = true;
                *line = Vec::new();
            } else {
                line.extend_from_slice(&available[..take]);
            }
        }
        input.consume(take);
        if newline.is_some() {
            return Ok(if too_long { Read::TooLong } else { Read::Line });
        }
    }
}

/// What to do with an input line.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// JSON: rmcp's to read (a JSON value that is no JSON-RPC message, rmcp answers).
    Pass,
    /// Blank: nothing was sent, nothing to answer.
    Skip,
    /// Not JSON: this answer, for stdout.
    Answer(Vec<u8>),
}

/// A line's verdict: whether it is JSON, as rmcp reads it (a leading byte order mark and a
/// trailing carriage return aside), and a message rmcp reads.
fn check(line: &[u8]) -> Verdict {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    // Parsed whole, into values: strings are checked for UTF-8 and surrogates, as rmcp's
    // own parse checks them.
    match serde_json::from_slice::<Value>(text) {
        Ok(value) => judge(&value, text),
        Err(error) => Verdict::Answer(error_line(
            PARSE_ERROR,
            &format!("Parse error: {error} (each message is one line of JSON, in UTF-8)"),
        )),
    }
}

/// JSON-RPC 2.0's code for JSON that is no request.
pub(crate) const INVALID_REQUEST: i64 = -32600;

/// JSON-RPC 2.0's code for a method the server does not have.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

/// JSON-RPC 2.0's code for a request whose params its method cannot read.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// The methods this server answers.
const METHODS: [&str; 4] = ["initialize", "ping", "tools/list", "tools/call"];

/// What to do with `value`, the JSON of the line `text`: pass it on where it is a JSON-RPC
/// 2.0 message that rmcp reads, else answer it here, by JSON-RPC 2.0's rules.
///
/// rmcp answers a message it cannot read with an error that has no `id` member at all (and
/// a client waiting on that id waits forever); so nothing reaches rmcp that it cannot read.
/// Every answer given here carries the request's `id` where it has one JSON-RPC allows (a
/// string or an integer), and `"id": null` where it has none or it cannot be read. A
/// notification (no `id`) that is a well-formed JSON-RPC message gets no answer, whatever
/// its params, as JSON-RPC requires; one that is no well-formed message gets the invalid
/// request error, `id` null.
fn judge(value: &Value, text: &[u8]) -> Verdict {
    let Some(object) = value.as_object() else {
        return invalid_request(
            &Value::Null,
            &format!(
                "the message is {}; a message is one JSON object (MCP has no batches)",
                kind(value)
            ),
        );
    };
    let id = match object.get("id") {
        None => None,
        Some(id) if is_id(id) => Some(id),
        Some(id) => {
            return invalid_request(
                &Value::Null,
                &format!("the id is {}; an id is a string or an integer", kind(id)),
            );
        }
    };
    let reply_id = id.cloned().unwrap_or(Value::Null);
    match object.get("jsonrpc") {
        Some(Value::String(version)) if version == "2.0" => {}
        None => return invalid_request(&reply_id, "\"jsonrpc\": \"2.0\" is missing"),
        Some(other) => {
            return invalid_request(
                &reply_id,
                &format!("\"jsonrpc\" is {}, not \"2.0\"", kind(other)),
            );
        }
    }
    let answer = object.contains_key("result") || object.contains_key("error");
    let method = match object.get("method") {
        Some(Value::String(method)) if !answer => Some(method.as_str()),
        Some(Value::String(_)) => {
            return invalid_request(
                &reply_id,
                "a message has a \"method\" (a request or notification) or a \"result\" or \
                 \"error\" (a response), not both",
            );
        }
        Some(other) => {
            return invalid_request(
                &reply_id,
                &format!("the method is {}, not a string", kind(other)),
            );
        }
        None if answer => None,
        None => {
            return invalid_request(
                &reply_id,
                "a message has a \"method\" (a request or notification) or a \"result\" or \
                 \"error\" (a response)",
            );
        }
    };
    if let Some(method) = method {
        match object.get("params") {
            None | Some(Value::Null | Value::Object(_) | Value::Array(_)) => {}
            Some(params) => {
                return invalid_request(
                    &reply_id,
                    &format!(
                        "the params of {} are {}; params are an object",
                        quoted(method),
                        kind(params)
                    ),
                );
            }
        }
    }
    if serde_json::from_slice::<ClientJsonRpcMessage>(text).is_ok() {
        return Verdict::Pass;
    }
    match (method, id) {
        // A well-formed notification: JSON-RPC answers none, whatever its params.
        (Some(_), None) => Verdict::Skip,
        (Some(method), Some(_)) if !METHODS.contains(&method) => Verdict::Answer(error_line_for(
            &reply_id,
            METHOD_NOT_FOUND,
            &format!(
                "Method not found: {}; this server answers {}",
                quoted(method),
                METHODS.join(", ")
            ),
        )),
        (Some(method), Some(_)) => Verdict::Answer(error_line_for(
            &reply_id,
            INVALID_PARAMS,
            &format!(
                "Invalid params for {}: {}",
                quoted(method),
                params_fault(object.get("params"))
            ),
        )),
        (None, _) => invalid_request(
            &reply_id,
            "a response has an id and either a \"result\" or an \"error\" object (with an \
             integer \"code\" and a string \"message\")",
        ),
    }
}

/// The invalid request error, for the request `id` (`null` where it has none that can be
/// read), saying `why`.
fn invalid_request(id: &Value, why: &str) -> Verdict {
    Verdict::Answer(error_line_for(
        id,
        INVALID_REQUEST,
        &format!("Invalid Request: {why}"),
    ))
}

/// Whether `id` is an id JSON-RPC 2.0 allows: a string, or a number without a fraction (an
/// integer as JSON writes it: `1.0` and `1e3` are read as fractions, and answered `null`).
fn is_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(number) => number.is_i64() || number.is_u64(),
        _ => false,
    }
}

/// What is wrong with `params`, given that rmcp does not read them as its method's.
fn params_fault(params: Option<&Value>) -> String {
    match params {
        Some(Value::Array(_)) => "params are an array; MCP's params are an object".into(),
        Some(Value::Object(object)) => match object.get("_meta") {
            Some(meta) if !meta.is_object() => {
                format!("params._meta is {}; it is an object", kind(meta))
            }
            _ => "the params do not fit the method".into(),
        },
        _ => "the params do not fit the method".into(),
    }
}

/// What sort of JSON value `value` is, in words.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(number) if number.is_f64() => "a number with a fraction",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON-RPC error response without an id (`null`: the request could not be read), as a
/// line.
fn error_line(code: i64, message: &str) -> Vec<u8> {
    error_line_for(&Value::Null, code, message)
}

/// A JSON-RPC error response to the request `id`, as a line.
fn error_line_for(id: &Value, code: i64, message: &str) -> Vec<u8> {
    let response = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut line = serde_json::to_vec(&response).expect("a JSON value serialises");
    line.push(b'\n');
    line
}

/// What rmcp writes to: each complete line goes to the writer task whole.
pub(crate) struct LineSink {
    /// The start of a line not yet complete.
    pending: Vec<u8>,
    lines: mpsc::UnboundedSender<Vec<u8>>,
}

impl AsyncWrite for LineSink {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        mut bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        let sink = self.get_mut();
        let written = bytes.len();
        while let Some(at) = bytes.iter().position(|&b| b == b'\n') {
            sink.pending.extend_from_slice(&bytes[..=at]);
            bytes = &bytes[at + 1..];
            let line = std::mem::take(&mut sink.pending);
            if sink.lines.send(line).is_err() {
                return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
            }
        }
        sink.pending.extend_from_slice(bytes);
        Poll::Ready(Ok(written))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Lines are handed on as they complete; the writer task flushes stdout.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn answer(line: &[u8]) -> Value {
        match check(line) {
            Verdict::Answer(reply) => serde_json::from_slice(&reply).unwrap(),
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(line)),
        }
    }

    #[test]
    fn json_passes_and_anything_else_is_a_parse_error() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..],
            b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":2}\r\n",
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"\\ud83e\\udd80\"}\n",
            br#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        ] {
            assert_eq!(check(line), Verdict::Pass, "{:?}", line);
        }
        // JSON, but no message: invalid request, with the id where there is one.
        for (line, id) in [
            (&b"[1, 2]\n"[..], Value::Null),
            (b"\"\xC3\xA9\"\n", Value::Null),
            (br#"{"jsonrpc":"2.0","id":7}"#, json!(7)),
            (br#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#, json!("x")),
            (br#"{"jsonrpc":"2.0","id":{"a":1},"method":5}"#, Value::Null),
        ] {
            let reply = answer(line);
            assert_eq!(reply["error"]["code"], INVALID_REQUEST, "{reply}");
            assert_eq!(reply["id"], id, "{reply}");
        }
        for line in [&b"\n"[..], b"   \r\n", b""] {
            assert_eq!(check(line), Verdict::Skip, "{line:?}");
        }
        for line in [
            &b"{\"jsonrpc\": \"2.0\", \"id\": 1,\n"[..],
            b"not json\n",
            b"{\"s\": \"\xFF\xFE\"}\n",
            b"{\"s\": \"\\ud800\"}\n",
            b"{\"s\": \"\\udc00 \\ud800x\"}\n",
            b"{\"a\": 1} {\"b\": 2}\n",
        ] {
            let reply = answer(line);
            assert_eq!(reply["jsonrpc"], "2.0");
            assert_eq!(reply["id"], Value::Null, "{reply}");
            assert!(reply.as_object().unwrap().contains_key("id"), "{reply}");
            assert_eq!(reply["error"]["code"], PARSE_ERROR, "{reply}");
            let message = reply["error"]["message"].as_str().unwrap();
            assert!(message.starts_with("Parse error: "), "{message}");
        }
    }

    /// Each answer's id: the request's where it is a string or an integer, else null; a
    /// well-formed notification gets none, whatever its params.
    #[test]
    fn answers_carry_the_request_id_or_null() {
        for (line, id, code) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#,
                json!(1),
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a","method":"ping","params":5}"#,
                json!("a"),
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[1]}"#,
                json!(2),
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":"x"}}"#,
                json!(3),
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"nope/nope","params":[1]}"#,
                json!(4),
                METHOD_NOT_FOUND,
            ),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                Value::Null,
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                Value::Null,
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":2.0,"method":"ping"}"#,
                Value::Null,
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
                Value::Null,
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                Value::Null,
                INVALID_REQUEST,
            ),
            (r#"{"id":5,"method":"ping"}"#, json!(5), INVALID_REQUEST),
            (
                r#"{"jsonrpc":2.0,"id":"b","method":"ping"}"#,
                json!("b"),
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":6,"method":["ping"]}"#,
                json!(6),
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"ping","result":{}}"#,
                json!(7),
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":"x"}"#,
                Value::Null,
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"result":{},"error":{"code":1,"message":"m"}}"#,
                json!(8),
                INVALID_REQUEST,
            ),
            (
                r#"[{"jsonrpc":"2.0","id":9,"method":"ping"}]"#,
                Value::Null,
                INVALID_REQUEST,
            ),
        ] {
            let reply = answer(line.as_bytes());
            assert!(
                reply.as_object().unwrap().contains_key("id"),
                "{line}: {reply}"
            );
            assert_eq!(
                (&reply["id"], &reply["error"]["code"]),
                (&id, &json!(code)),
                "{line}: {reply}"
            );
        }
        for line in [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[1]}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":"x"}}"#,
        ] {
            assert_eq!(check(line.as_bytes()), Verdict::Skip, "{line}");
        }
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"index"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"nope/nope","params":{}}"#,
        ] {
            assert_eq!(check(line.as_bytes()), Verdict::Pass, "{line}");
        }
    }

    #[test]
    fn lines_are_read_whole_and_bounded() {
        runtime().block_on(async {
            let mut input: &[u8] = b"short\nwaaaaaaaaay too long\nok\nlast";
            let mut line = Vec::new();
            let mut read = Vec::new();
            loop {
                line.clear();
                let outcome = read_line(&mut input, &mut line, 10).await.unwrap();
                if outcome == Read::End {
                    break;
                }
                read.push((outcome, String::from_utf8(line.clone()).unwrap()));
            }
            assert_eq!(
                read,
                [
                    (Read::Line, "short\n".into()),
                    (Read::TooLong, String::new()),
                    (Read::Line, "ok\n".into()),
                    (Read::Line, "last".into()),
                ]
            );
        });
    }

    /// Through the transport: rmcp's end reads only the JSON lines; stdout gets every
    /// answer and every line rmcp writes, each whole, however rmcp splits its writes.
    #[test]
    fn answers_and_rmcp_lines_never_interleave() {
        runtime().block_on(async {
            let (mut client, server_in) = tokio::io::duplex(1 << 16);
            let (server_out, mut stdout) = tokio::io::duplex(1 << 16);
            let mut stdio = transport(server_in, server_out);
            client
                .write_all(
                    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\nnope\n\n\
                      {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n\xFF\n",
                )
                .await
                .unwrap();
            // rmcp writes one message in pieces, then another.
            stdio.output.write_all(b"{\"jsonrpc\":").await.unwrap();
            tokio::task::yield_now().await;
            stdio.output.write_all(b"\"2.0\"}\n{\"b\"").await.unwrap();
            stdio.output.write_all(b":1}\n").await.unwrap();
            drop(client);
            let mut passed = String::new();
            stdio.input.read_to_string(&mut passed).await.unwrap();
            assert_eq!(
                passed,
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\
                 {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n"
            );
            stdio.reader.await.unwrap();
            drop(stdio.output);
            stdio.writer.await.unwrap();
            let mut written = String::new();
            stdout.read_to_string(&mut written).await.unwrap();
            let lines: Vec<Value> = written
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect();
            assert_eq!(lines.len(), 4, "{written}");
            assert!(lines.contains(&json!({"jsonrpc": "2.0"})));
            assert!(lines.contains(&json!({"b": 1})));
            let errors = lines
                .iter()
                .filter(|line| line["error"]["code"] == PARSE_ERROR)
                .count();
            assert_eq!(errors, 2, "{written}");
        });
    }
}
