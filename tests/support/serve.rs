//! A `qflow serve` process for the end-to-end tests that talk to it over
//! HTTP on loopback, and the small client they talk with.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// A running `qflow serve`, killed when dropped; the JSON lines it printed.
pub(crate) struct Serve {
    pub child: Child,
    pub url: String,
    pub lines: Arc<Mutex<Vec<Value>>>,
    /// What it printed on standard error so far (warnings, notes).
    pub stderr: Arc<Mutex<String>>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// The lines printed so far, once one of them satisfies `seen` (or after
    /// 20 s): the store can say "completed" before the reader thread has
    /// collected the decision lines printed for it.
    pub(crate) fn lines_once(&self, seen: impl Fn(&Value) -> bool) -> Vec<Value> {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let lines = self.lines.lock().unwrap().clone();
            if lines.iter().any(&seen) || std::time::Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Start `qflow serve --db DB --handlers handlers.toml` in `dir` on a free
/// loopback port, with `env` set, and wait until it says where it listens.
/// `db` is what `--db` takes: a SQLite file (relative to `dir`) or a
/// PostgreSQL URL (a `Fresh` database of `support::stores`).
pub(crate) fn spawn(dir: &Path, db: &str, env: &[(&str, &str)]) -> Serve {
    spawn_with(dir, db, env, &[], None)
}

/// [`spawn`] with more arguments for `qflow serve`, and with the open-file
/// limit set to `files` (through `sh -c 'ulimit -n N; exec qflow …'`).
pub(crate) fn spawn_with(
    dir: &Path,
    db: &str,
    env: &[(&str, &str)],
    extra: &[&str],
    files: Option<u32>,
) -> Serve {
    let mut cmd = match files {
        None => Command::new(env!("CARGO_BIN_EXE_qflow")),
        Some(n) => {
            let mut c = Command::new("sh");
            c.args([
                "-c",
                &format!("ulimit -n {n} && exec \"$0\" \"$@\""),
                env!("CARGO_BIN_EXE_qflow"),
            ]);
            c
        }
    };
    cmd.current_dir(dir)
        .args([
            "serve",
            "--db",
            db,
            "--handlers",
            "handlers.toml",
            "--listen",
            "127.0.0.1:0",
            "--format",
            "json",
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr: Arc<Mutex<String>> = Arc::default();
    {
        let (pipe, sink) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
    }
    let lines: Arc<Mutex<Vec<Value>>> = Arc::default();
    let (tx, rx) = mpsc::channel();
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v["status"] == "listening" {
                let _ = tx.send(v["url"].as_str().unwrap_or_default().to_string());
            }
            sink.lock().unwrap().push(v);
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("serve listens");
    Serve {
        child,
        url,
        lines,
        stderr,
    }
}

/// A client that hands back every status (a 409 is an answer, not an error).
pub(crate) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

/// POST JSON, with an `Idempotency-Key` when given; (status, JSON body).
pub(crate) fn post(url: &str, key: Option<&str>, body: &Value) -> (u16, Value) {
    let mut req = agent().post(url).header("Content-Type", "application/json");
    if let Some(k) = key {
        req = req.header("Idempotency-Key", k);
    }
    let mut resp = req.send(body.to_string().as_bytes()).unwrap();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// GET; (status, JSON body).
pub(crate) fn get(url: &str) -> (u16, Value) {
    let mut resp = agent().get(url).call().unwrap();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}
