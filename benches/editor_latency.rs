//! The editor's latency as a user sees it, beside `qflow check`, both as
//! whole processes: an independent client starts `qflow lsp`, opens a
//! generated model (a `file:` URI, so the configuration lookup runs as in an
//! editor), and times a one-character edit from writing `didChange` to
//! reading the `publishDiagnostics` of that version; `qflow check FILE` is
//! timed from spawn to exit on the same model. The target: the language
//! server publishes within `check` + 5 ms at every size.
//!
//! Then the requests an author makes while reading, each timed from the
//! request to its answer: documentSymbol, hover on a task and on a retry's
//! backoff, definition from a flow's sourceRef, completion in a targetRef
//! (docs/performance.md has the figures).
//!
//! Run: `cargo bench --bench editor_latency` (sizes 1,000 and 20,000 tasks;
//! a release build of the binary). Under `cargo test --all-targets` it runs
//! one small model, proving the measurement still works.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const QFLOW: &str = env!("CARGO_BIN_EXE_qflow");
/// Where each keystroke goes: into the process documentation testgen writes.
const ANCHOR: &str = "A generated chain";

fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// `qflow check FILE` from spawn to exit, in ms.
fn check_once(file: &Path) -> f64 {
    let start = Instant::now();
    let o = Command::new(QFLOW)
        .arg("check")
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("qflow check runs");
    let t = start.elapsed().as_secs_f64() * 1e3;
    assert!(o.success(), "the generated model checks clean");
    t
}

/// A language server process and a thread reading its messages.
struct Server {
    child: Child,
    stdin: ChildStdin,
    messages: mpsc::Receiver<(Value, Instant)>,
    next_id: i64,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(QFLOW)
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("qflow lsp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut len = None;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(n) = line.strip_prefix("Content-Length: ") {
                        len = n.parse::<usize>().ok();
                    }
                }
                let mut body = vec![0; len.expect("a Content-Length header")];
                if r.read_exact(&mut body).is_err() {
                    return;
                }
                let at = Instant::now();
                let v: Value = serde_json::from_slice(&body).expect("the server writes JSON");
                if tx.send((v, at)).is_err() {
                    return;
                }
            }
        });
        Server {
            child,
            stdin,
            messages,
            next_id: 1,
        }
    }

    fn send(&mut self, v: &Value) -> Instant {
        let body = v.to_string();
        let framed = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let start = Instant::now();
        self.stdin.write_all(framed.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
        start
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let (m, _) = self.recv();
            if m["id"] == id {
                return m;
            }
        }
    }

    fn notify(&mut self, method: &str, params: Value) -> Instant {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    fn recv(&self) -> (Value, Instant) {
        self.messages
            .recv_timeout(Duration::from_secs(120))
            .expect("the server answers within two minutes")
    }

    /// Wait for the diagnostics of `uri` at `version`; when they arrived.
    fn diagnostics(&self, uri: &str, version: i64) -> Instant {
        loop {
            let (m, at) = self.recv();
            if m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"] == version
            {
                return at;
            }
        }
    }

    fn stop(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let _ = self.child.wait();
    }
}

fn measure(tasks: usize, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("model-{tasks}.bpmn"));
    let text = qflow_engine::testgen::generate(tasks);
    std::fs::write(&file, &text).unwrap();
    let anchor = text.find(ANCHOR).expect("testgen writes a documentation");
    let line = text[..anchor].matches('\n').count();
    let character = anchor - text[..anchor].rfind('\n').map_or(0, |i| i + 1);
    let uri = format!("file://{}", file.display());

    // Warm the page cache and the binary, then alternate so both see the
    // same machine load.
    check_once(&file);
    let mut server = Server::start();
    server.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    server.notify("initialized", json!({}));
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "bpmn", "version": 0, "text": text}}),
    );
    server.diagnostics(&uri, 0);
    let (mut check, mut lsp) = (Vec::new(), Vec::new());
    for version in 1..=rounds as i64 {
        check.push(check_once(&file));
        let start = server.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{
                    "range": {"start": {"line": line, "character": character},
                              "end": {"line": line, "character": character}},
                    "text": "x"
                }]
            }),
        );
        let at = server.diagnostics(&uri, version);
        lsp.push((at - start).as_secs_f64() * 1e3);
    }
    // Then typing as fast as the server answers: each edit is sent the
    // moment the previous one's diagnostics arrive (nothing else runs in
    // between, so whatever the server does after publishing competes with
    // the next edit).
    let mut burst = Vec::new();
    for version in rounds as i64 + 1..=2 * rounds as i64 {
        let start = server.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{
                    "range": {"start": {"line": line, "character": character},
                              "end": {"line": line, "character": character}},
                    "text": "x"
                }]
            }),
        );
        let at = server.diagnostics(&uri, version);
        burst.push((at - start).as_secs_f64() * 1e3);
    }
    requests(&mut server, &uri, &text, tasks, rounds.min(7));
    server.stop();
    let best_burst = min(&burst);
    println!(
        "{tasks} tasks, back to back: qflow lsp didChange→publishDiagnostics median {:.1} ms, best {best_burst:.1} ms",
        median(&mut burst)
    );
    let (best_check, best_lsp) = (min(&check), min(&lsp));
    println!(
        "{tasks} tasks ({} bytes), {rounds} rounds: qflow check (whole process) median {:.1} ms, best {:.1} ms; qflow lsp didChange→publishDiagnostics median {:.1} ms, best {:.1} ms; difference of medians {:+.1} ms, of bests {:+.1} ms",
        text.len(),
        median(&mut check),
        best_check,
        median(&mut lsp),
        best_lsp,
        median(&mut lsp) - median(&mut check),
        best_lsp - best_check,
    );
}

/// The LSP position (line, UTF-16 column) of byte `offset` of `text`
/// (testgen writes ASCII, so a byte is a UTF-16 unit).
fn position_of(text: &str, offset: usize) -> Value {
    let line = text[..offset].matches('\n').count();
    let character = offset - text[..offset].rfind('\n').map_or(0, |i| i + 1);
    json!({"line": line, "character": character})
}

/// The requests an author makes while reading the model, each timed from
/// writing the request to reading its answer (the document's analysis is
/// current: the last edit's diagnostics were read): the outline, a hover on
/// a task and on a retry's backoff, go-to-definition from a flow's
/// `sourceRef`, and completion inside a `targetRef` (every id is offered).
fn requests(server: &mut Server, uri: &str, text: &str, tasks: usize, rounds: usize) {
    let mid = tasks / 2 / 10 * 10; // a task with a <q:retry>
    let at = |needle: &str, skip: usize| -> Value {
        let i = text
            .find(needle)
            .unwrap_or_else(|| panic!("testgen writes {needle}"));
        position_of(text, i + skip)
    };
    // The backoff of the retry under the task `mid`, found from the task.
    let task = text.find(&format!("id=\"Task_{mid}\"")).unwrap();
    let backoff = task + text[task..].find("backoff=\"").unwrap() + 10;
    let doc = json!({"uri": uri});
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "documentSymbol",
            "textDocument/documentSymbol",
            json!({"textDocument": doc}),
        ),
        (
            "hover on a task",
            "textDocument/hover",
            json!({"textDocument": doc, "position": at(&format!("name=\"Step {mid}\""), 7)}),
        ),
        (
            "hover on a backoff",
            "textDocument/hover",
            json!({"textDocument": doc, "position": position_of(text, backoff)}),
        ),
        (
            "definition",
            "textDocument/definition",
            json!({"textDocument": doc,
                   "position": at(&format!("sourceRef=\"Task_{mid}\""), 12)}),
        ),
        (
            "completion",
            "textDocument/completion",
            json!({"textDocument": doc,
                   "position": at(&format!("targetRef=\"Task_{}\"", mid + 1), 13)}),
        ),
    ];
    for (name, method, params) in cases {
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..=rounds {
            let start = Instant::now();
            let answer = server.request(method, params.clone());
            times.push(start.elapsed().as_secs_f64() * 1e3);
            assert!(
                answer.get("error").is_none(),
                "{method} answered an error: {answer}"
            );
            assert!(
                !answer["result"].is_null(),
                "{method} found nothing: {answer}"
            );
            size = answer["result"].to_string().len();
        }
        times.remove(0); // the first one warms the server's caches
        println!(
            "{tasks} tasks: {name:<20} median {:>8.1} ms, best {:>8.1} ms ({size} bytes of answer)",
            median(&mut times),
            min(&times)
        );
    }
}

fn main() {
    if bench_mode() {
        measure(1_000, 30);
        measure(20_000, 15);
    } else {
        measure(50, 2);
    }
}
