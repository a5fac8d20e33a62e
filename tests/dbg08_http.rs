//! The DBG-08 shapes over real HTTP: `examples/dbg08_service.rs` (the small
//! provider the docs point `qflow` at) on loopback, and `qflow run
//! samples/dbg08-charge.bpmn --handlers` with each of the sample handlers
//! files, re-pointed at the service's port. Malformed input: one attempt,
//! terminal; transient outage: increasing delay, then success; long outage:
//! finite attempts, terminal; rate-limited: the provider's delay honoured;
//! unknown remote result: reconciliation, no blind retry.

mod support;

#[allow(dead_code)]
#[path = "../examples/dbg08_service.rs"]
mod service;

use std::path::PathBuf;

use serde_json::Value;
use support::{lines, qflow};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The sample handlers file of `shape`, pointed at `port`.
fn handlers(dir: &std::path::Path, shape: &str, port: u16) -> PathBuf {
    let sample = repo().join(format!("samples/handlers/dbg08-{shape}.toml"));
    let text = std::fs::read_to_string(&sample).unwrap();
    assert!(text.contains("127.0.0.1:8088"), "{}", sample.display());
    let text = text.replace("127.0.0.1:8088", &format!("127.0.0.1:{port}"));
    let p = dir.join(format!("{shape}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

/// An attempt line: seconds since the start, code, class.
type Attempt = (i64, Option<String>, Option<String>);

/// Every attempt, and the final line.
fn run(shape: &str, port: u16) -> (Vec<Attempt>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let file = handlers(dir.path(), shape, port);
    let model = repo().join("samples/dbg08-charge.bpmn");
    let out = qflow(
        dir.path(),
        &[
            "run",
            model.to_str().unwrap(),
            "--handlers",
            file.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = lines(&out);
    let attempts = all
        .iter()
        .filter(|l| l["kind"] == "attempt")
        .map(|l| {
            (
                l["at_s"].as_f64().unwrap_or(-1.0) as i64,
                l["code"].as_str().map(str::to_string),
                l["class"].as_str().map(str::to_string),
            )
        })
        .collect();
    (attempts, all.last().cloned().unwrap_or(Value::Null))
}

#[test]
fn the_dbg08_shapes_happen_over_real_http() {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    std::thread::spawn(move || service::serve(server));
    let s = |x: &str| Some(x.to_string());

    let (a, last) = run("malformed-input", port);
    assert_eq!(a, vec![(0, s("INVALID_INPUT"), s("permanent"))]);
    assert_eq!(
        (last["status"].as_str(), last["reason"].as_str()),
        (Some("failed"), Some("non-retryable"))
    );

    let (a, last) = run("transient-outage", port);
    let down = (s("q.handler.http-503"), s("transient"));
    assert_eq!(
        a,
        vec![
            (0, down.0.clone(), down.1.clone()),
            (60, down.0.clone(), down.1.clone()),
            (360, None, None)
        ]
    );
    assert_eq!(last["status"], "completed");

    let (a, last) = run("long-outage", port);
    let times: Vec<i64> = a.iter().map(|x| x.0).collect();
    assert_eq!(times, vec![0, 60, 360, 1_860, 9_360, 46_860]);
    assert_eq!(
        (last["status"].as_str(), last["reason"].as_str()),
        (Some("failed"), Some("exhausted"))
    );
    assert_eq!(last["code"], "q.handler.http-503");

    let (a, last) = run("rate-limited", port);
    assert_eq!(a[0], (0, s("q.handler.http-429"), s("rate-limited")));
    assert_eq!(
        a[1].0, 600,
        "Retry-After: 600 honoured (not the policy's 60 s)"
    );
    assert_eq!(last["status"], "completed");

    let (a, last) = run("unknown-outcome", port);
    assert_eq!(a, vec![(0, s("q.handler.timeout"), s("unknown-outcome"))]);
    assert_eq!(
        (last["status"].as_str(), last["for"].as_str()),
        (Some("waiting"), Some("reconciliation"))
    );
}
