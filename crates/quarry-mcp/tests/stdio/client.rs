//! [`Client`]: a server process of this executable's own, spoken to in raw JSON-RPC.

use super::*;

/// A server process and the lines it writes.
pub(crate) struct Client {
    pub(crate) child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Vec<u8>>,
    next_id: u64,
}

impl Client {
    /// Starts a server over `root`, indexing on start or not, following the tree.
    pub(crate) fn start(root: &Path, index_on_start: bool) -> Client {
        Self::start_with(root, index_on_start, true)
    }

    /// Starts a server over `root`, indexing on start or not, following the tree or not.
    pub(crate) fn start_with(root: &Path, index_on_start: bool, watch: bool) -> Client {
        // Fetched here once, not by each server.
        model();
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .env(SERVE, root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if !index_on_start {
            command.env(NO_INDEX, "1");
        }
        if !watch {
            command.env(NO_WATCH, "1");
        }
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) if send.send(line).is_err() => return,
                    Ok(_) => {}
                }
            }
        });
        Client {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 1,
        }
    }

    /// Starts a server and completes the MCP handshake.
    pub(crate) fn initialized(root: &Path, index_on_start: bool) -> Client {
        Self::handshake(Client::start(root, index_on_start))
    }

    /// Starts a server that does not follow the tree, and completes the MCP handshake.
    pub(crate) fn unwatched(root: &Path, index_on_start: bool) -> Client {
        Self::handshake(Client::start_with(root, index_on_start, false))
    }

    pub(crate) fn handshake(mut client: Client) -> Client {
        let init = client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "stdio-test", "version": "0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "quarry", "{init}");
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    pub(crate) fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.send_raw(&line);
    }

    /// The next message the server writes: one line, a JSON-RPC 2.0 object.
    pub(crate) fn receive(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(ANSWER_TIMEOUT)
            .unwrap_or_else(|e| panic!("no message from the server in {ANSWER_TIMEOUT:?}: {e}"));
        let text = String::from_utf8(line).expect("the server writes UTF-8");
        let message: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("not JSON on the server's stdout ({e}): {text:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{text}");
        assert!(text.ends_with('\n'), "{text:?}");
        message
    }

    /// The next message that is no notification.
    pub(crate) fn answer(&mut self) -> Value {
        loop {
            let message = self.receive();
            if message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Sends a request and returns its answer (a result or an error).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = self.answer();
        assert_eq!(answer["id"], id, "answers come in order here: {answer}");
        answer
    }

    /// A tool's structured result, which must not be a tool error.
    pub(crate) fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &answer["result"];
        assert_ne!(result["isError"], true, "{tool} {arguments}: {answer}");
        result["structuredContent"].clone()
    }

    /// `index status`'s `indexing` part.
    pub(crate) fn indexing(&mut self) -> Value {
        self.call("index", json!({"action": "status"}))["indexing"].clone()
    }

    /// Polls `index status` until `done` holds for its `indexing` part, at most `timeout`.
    pub(crate) fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let indexing = self.indexing();
            if done(&indexing) {
                return indexing;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not in {timeout:?}; indexing is {indexing}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Closes stdin: the server must write nothing more than the protocol and exit cleanly.
    pub(crate) fn close(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit after its input ended"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "the server exited with {status}");
        // Whatever it wrote last is protocol too.
        while let Ok(line) = self.lines.try_recv() {
            let message: Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(message["jsonrpc"], "2.0");
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // A failed test leaves no server behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
