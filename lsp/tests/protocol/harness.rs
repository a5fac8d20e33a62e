//! An in-process LSP client speaking the real wire protocol (Content-Length
//! framed JSON-RPC over a pipe) to the real server and transport: the
//! tests and the benchmark drive the server exactly as an editor does,
//! framing and concurrency included.
//!
//! Requests run concurrently in the server, so [`Harness::request`] waits for
//! each reply (keeping the notifications that arrive meanwhile) before the
//! caller sends the next one.

// Shared by the protocol tests and two benches (each a crate of its own,
// each using part of it): its items are `pub` for all of them.
#![allow(unreachable_pub)]

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{
    AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf,
};

use qflow_lsp::Config;

/// How long any expected message may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(20);

pub struct Harness {
    writer: WriteHalf<DuplexStream>,
    reader: BufReader<ReadHalf<DuplexStream>>,
    next_id: i64,
    /// Notifications received while waiting for something else, in order.
    pub notifications: VecDeque<Value>,
    /// The body length of the last message read (what a reply weighs on the wire).
    pub last_frame_bytes: usize,
    server: tokio::task::JoinHandle<bool>,
}

/// Frame one JSON-RPC message.
pub fn frame(body: &str) -> Vec<u8> {
    qflow_lsp::transport::frame(body.as_bytes())
}

/// A directory holding every code's page, as `qflow lsp` writes them under
/// the user's cache: one per test process, removed by nobody (a temporary
/// directory), so the tests never write to the user's own cache.
pub fn pages() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        qflow_model::diagnostic::pages::write_all(&dir).unwrap();
        dir
    })
}

/// The server's configuration with the code pages written to [`pages`].
pub fn with_pages() -> Config {
    Config {
        pages: Some(pages()),
        ..Config::default()
    }
}

impl Harness {
    /// A server with `config` on the other end of a pipe (not yet initialised).
    pub fn start(config: Config) -> Harness {
        let (client_end, server_end) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_end);
        let server = tokio::spawn(qflow_lsp::transport::serve(
            server_read,
            server_write,
            config,
        ));
        let (read, write) = tokio::io::split(client_end);
        Harness {
            writer: write,
            reader: BufReader::new(read),
            next_id: 1,
            notifications: VecDeque::new(),
            last_frame_bytes: 0,
            server,
        }
    }

    /// A started and initialised server with the default configuration.
    pub async fn initialized() -> Harness {
        Self::initialized_with(Config::default()).await
    }

    pub async fn initialized_with(config: Config) -> Harness {
        let mut h = Self::start(config);
        let init = h
            .request(
                "initialize",
                json!({ "capabilities": {}, "processId": null, "rootUri": null }),
            )
            .await;
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        h.notify("initialized", json!({})).await;
        h
    }

    /// Write raw bytes (for malformed-input tests).
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.writer
            .write_all(bytes)
            .await
            .expect("server pipe closed");
        self.writer.flush().await.expect("server pipe closed");
    }

    pub async fn send(&mut self, message: &Value) {
        self.send_raw(&frame(&message.to_string())).await;
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }))
            .await;
    }

    /// Send a request and return its whole response (`result` or `error`).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        self.response(json!(id)).await
    }

    /// Send a request and return its response's body unparsed (a benchmark
    /// weighing the server's answer must not weigh a client's value tree
    /// of it too). Notifications meanwhile are parsed and kept.
    pub async fn request_raw(&mut self, method: &str, params: Value) -> Vec<u8> {
        #[derive(serde::Deserialize)]
        struct Head {
            id: Option<Value>,
            method: Option<String>,
        }
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        loop {
            let body = tokio::time::timeout(TIMEOUT, self.read_body())
                .await
                .unwrap_or_else(|_| panic!("no message from the server within {TIMEOUT:?}"));
            let head: Head = serde_json::from_slice(&body).expect("the server sent invalid JSON");
            if head.method.is_some() {
                let msg = serde_json::from_slice(&body).expect("the server sent invalid JSON");
                self.notifications.push_back(msg);
            } else if head.id == Some(json!(id)) {
                return body;
            } else {
                panic!("unexpected response while waiting for {id}");
            }
        }
    }

    /// Wait for the response with `id`, keeping notifications for later.
    pub async fn response(&mut self, id: Value) -> Value {
        loop {
            let msg = self.read().await;
            if msg.get("method").is_some() {
                self.notifications.push_back(msg);
            } else if msg.get("id") == Some(&id) {
                return msg;
            } else {
                panic!("unexpected response while waiting for {id}: {msg}");
            }
        }
    }

    /// The next message of any kind.
    pub async fn read(&mut self) -> Value {
        tokio::time::timeout(TIMEOUT, self.read_unbounded())
            .await
            .unwrap_or_else(|_| panic!("no message from the server within {TIMEOUT:?}"))
    }

    async fn read_unbounded(&mut self) -> Value {
        let body = self.read_body().await;
        serde_json::from_slice(&body).expect("the server sent invalid JSON")
    }

    async fn read_body(&mut self) -> Vec<u8> {
        let mut length = None;
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).await.expect("read header");
            assert!(n > 0, "server closed the pipe");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length: ") {
                length = Some(v.parse::<usize>().expect("Content-Length"));
            }
        }
        let mut body = vec![0; length.expect("a Content-Length header")];
        self.reader.read_exact(&mut body).await.expect("read body");
        self.last_frame_bytes = body.len();
        body
    }

    /// The next notification named `method` (earlier ones of other kinds are kept).
    pub async fn notification(&mut self, method: &str) -> Value {
        if let Some(pos) = self
            .notifications
            .iter()
            .position(|n| n["method"] == method)
        {
            return self.notifications.remove(pos).expect("present");
        }
        loop {
            let msg = self.read().await;
            if msg["method"] == method {
                return msg;
            }
            self.notifications.push_back(msg);
        }
    }

    /// The diagnostics published for `uri` at `version` (earlier versions'
    /// publications are skipped: only the latest verdict matters).
    pub async fn diagnostics(&mut self, uri: &str, version: i64) -> Vec<Value> {
        loop {
            let n = self.notification("textDocument/publishDiagnostics").await;
            let p = &n["params"];
            if p["uri"] == uri && p["version"] == version {
                return p["diagnostics"].as_array().cloned().unwrap_or_default();
            }
            assert!(
                p["uri"] != uri || p["version"].as_i64().is_none_or(|v| v < version),
                "published a version newer than expected: {n}"
            );
        }
    }

    pub async fn open(&mut self, uri: &str, version: i64, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "bpmn", "version": version, "text": text } }),
        )
        .await;
    }

    /// An incremental change: replace `range` (LSP positions) with `text`.
    pub async fn edit(&mut self, uri: &str, version: i64, range: Value, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [ { "range": range, "text": text } ] }),
        )
        .await;
    }

    /// A full-text change.
    pub async fn change(&mut self, uri: &str, version: i64, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [ { "text": text } ] }),
        )
        .await;
    }

    /// `shutdown` then `exit`; returns once the server loop has ended.
    pub async fn stop(self) {
        assert!(self.stop_with_code().await, "shutdown was not recorded");
    }

    /// `shutdown` then `exit`; whether the server recorded the shutdown.
    pub async fn stop_with_code(mut self) -> bool {
        let r = self.request("shutdown", Value::Null).await;
        assert_eq!(r["result"], Value::Null, "shutdown failed: {r}");
        self.notify("exit", Value::Null).await;
        tokio::time::timeout(TIMEOUT, &mut self.server)
            .await
            .expect("server did not stop after exit")
            .expect("server task panicked")
    }
}
