//! The built `qflow lsp` binary over real stdio: initialize, diagnostics for
//! an opened model, hover, then `shutdown` + `exit` ends the process promptly
//! with code 0 (and `exit` alone with code 1), even though stdin stays open.
//! Each diagnostic links its code's page, written under the cache
//! (`$XDG_CACHE_HOME`) where any editor opens it offline.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(20);

struct Lsp {
    child: Child,
    stdin: ChildStdin,
    messages: mpsc::Receiver<Value>,
}

fn read_message(r: &mut BufReader<ChildStdout>) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            length = v.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    r.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl Lsp {
    /// `qflow lsp` with `cache` as its `$XDG_CACHE_HOME` (never the user's).
    fn start(extra: &[&str], cache: &std::path::Path) -> Lsp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_qflow"))
            .arg("lsp")
            .args(extra)
            .env("XDG_CACHE_HOME", cache)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn qflow lsp");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            while let Some(m) = read_message(&mut stdout) {
                if tx.send(m).is_err() {
                    break;
                }
            }
        });
        Lsp {
            child,
            stdin,
            messages: rx,
        }
    }

    fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message matching `pred`.
    fn wait(&self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self
                .messages
                .recv_timeout(left)
                .expect("no message from qflow lsp in time");
            if pred(&m) {
                return m;
            }
        }
    }

    fn exit_code(mut self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // stdin is still open here: the server must not wait for EOF.
                drop(self.stdin);
                return status.code().expect("exited normally");
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("qflow lsp did not exit within 5 s of `exit`");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

const MODEL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:serviceTask id="charge" q:task="payments.charge">
      <bpmn:extensionElements>
        <q:retry maxAttempts="6" backoff="PT1M PT5M PT25M PT125M PT625M" jitter="none"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="chrage"/>
  </bpmn:process>
</bpmn:definitions>
"#;

#[test]
fn qflow_lsp_over_stdio() {
    let cache = tempfile::tempdir().unwrap();
    let mut lsp = Lsp::start(&["--stdio"], cache.path());
    lsp.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "capabilities": {} } }));
    let init = lsp.wait(|m| m["id"] == 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "qflow");
    lsp.send(json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }));
    let uri = "file:///tmp/e2e.bpmn";
    lsp.send(
        json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": { "uri": uri, "languageId": "bpmn", "version": 1, "text": MODEL } } }),
    );
    let published = lsp.wait(|m| m["method"] == "textDocument/publishDiagnostics");
    let diags = published["params"]["diagnostics"].as_array().unwrap();
    let qf004 = diags
        .iter()
        .find(|d| d["code"] == "QF004")
        .expect("QF004 published");
    assert_eq!(
        qf004["range"]["start"],
        json!({ "line": 9, "character": 60 })
    );
    assert!(qf004["message"]
        .as_str()
        .unwrap()
        .contains("did you mean `charge`?"));
    // The code's link is the page as a file, written by the server: it opens
    // offline, in any editor, and is the page `docs/` holds.
    let href = qf004["codeDescription"]["href"].as_str().unwrap();
    let page = cache.path().join(format!(
        "qflow/{}/diagnostics/QF004.md",
        env!("CARGO_PKG_VERSION")
    ));
    assert_eq!(href, format!("file://{}", page.display()));
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/diagnostics/QF004.md");
    assert_eq!(
        std::fs::read_to_string(&page).unwrap(),
        std::fs::read_to_string(docs).unwrap()
    );
    // Hover on the retry: the DBG-08 worst case.
    lsp.send(
        json!({ "jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {
        "textDocument": { "uri": uri }, "position": { "line": 6, "character": 12 } } }),
    );
    let hover = lsp.wait(|m| m["id"] == 2);
    assert!(
        hover["result"]["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("6 attempts over 13 h 1 min"),
        "{hover}"
    );
    // A malformed frame does not end the session.
    lsp.stdin
        .write_all(b"Content-Length: 5\r\n\r\n{oops")
        .unwrap();
    lsp.stdin.flush().unwrap();
    let parse_error = lsp.wait(|m| m.get("error").is_some());
    assert_eq!(parse_error["error"]["code"], -32700);
    lsp.send(json!({ "jsonrpc": "2.0", "id": 3, "method": "shutdown" }));
    let shut = lsp.wait(|m| m["id"] == 3);
    assert_eq!(shut["result"], Value::Null);
    lsp.send(json!({ "jsonrpc": "2.0", "method": "exit" }));
    assert_eq!(lsp.exit_code(), 0);
}

#[test]
fn exit_without_shutdown_is_code_1() {
    let cache = tempfile::tempdir().unwrap();
    let mut lsp = Lsp::start(&[], cache.path());
    lsp.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "capabilities": {} } }));
    lsp.wait(|m| m["id"] == 1);
    lsp.send(json!({ "jsonrpc": "2.0", "method": "exit" }));
    assert_eq!(lsp.exit_code(), 1);
}

#[test]
fn a_cache_that_cannot_be_written_costs_the_links_not_the_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("cache");
    std::fs::write(&not_a_dir, "a file where the cache would go").unwrap();
    let mut lsp = Lsp::start(&[], &not_a_dir);
    lsp.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "capabilities": {} } }));
    lsp.wait(|m| m["id"] == 1);
    lsp.send(json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }));
    lsp.send(
        json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": { "uri": "file:///tmp/e2e.bpmn", "languageId": "bpmn", "version": 1, "text": MODEL } } }),
    );
    let published = lsp.wait(|m| m["method"] == "textDocument/publishDiagnostics");
    let diags = published["params"]["diagnostics"].as_array().unwrap();
    let qf004 = diags
        .iter()
        .find(|d| d["code"] == "QF004")
        .expect("QF004 published");
    assert!(
        qf004.get("codeDescription").is_none(),
        "no dead link: {qf004}"
    );
    lsp.send(json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown" }));
    lsp.wait(|m| m["id"] == 2);
    lsp.send(json!({ "jsonrpc": "2.0", "method": "exit" }));
    assert_eq!(lsp.exit_code(), 0);
}
