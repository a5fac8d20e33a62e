//! Handlers that cannot lie or swamp (docs/handlers.md): a command's exit
//! ends its attempt even when a background child keeps its stdout open
//! (the rest of its process group is ended); output that is not UTF-8, or
//! over 1 MiB, is a `q.handler.output` failure saying so, for commands and
//! URL handlers alike; a URL handler's failure with an oversized body is
//! still classified by its status. Through `qflow run --handlers`.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{lines, qflow};

/// A task whose result routes: `chargeId == "ch_1"` ends at `charged`,
/// anything else at `lost`.
const ROUTED: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <process id="charge" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="charge_card"/>
    <serviceTask id="charge_card" q:task="payments.charge"/>
    <sequenceFlow id="f2" sourceRef="charge_card" targetRef="check"/>
    <exclusiveGateway id="check" default="no"/>
    <sequenceFlow id="yes" sourceRef="check" targetRef="charged">
      <conditionExpression xsi:type="tFormalExpression">chargeId == "ch_1"</conditionExpression>
    </sequenceFlow>
    <sequenceFlow id="no" sourceRef="check" targetRef="lost"/>
    <endEvent id="charged"/>
    <endEvent id="lost"/>
  </process>
</definitions>
"#;

fn world(handlers: &str, scripts: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("handlers.toml"), handlers).unwrap();
    std::fs::write(dir.path().join("model.bpmn"), ROUTED).unwrap();
    for (name, body) in scripts {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// `qflow run model.bpmn --handlers handlers.toml --db run.db`: its lines,
/// and `qflow show`'s JSON of the instance afterwards (the failure's
/// message is there).
fn run(dir: &Path) -> (Vec<Value>, String) {
    let out = qflow(
        dir,
        &[
            "run",
            "model.bpmn",
            "--handlers",
            "handlers.toml",
            "--db",
            "run.db",
            "--format",
            "json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = qflow(
        dir,
        &["show", "charge-1", "--db", "run.db", "--format", "json"],
    );
    (
        lines(&out),
        String::from_utf8_lossy(&shown.stdout).into_owned(),
    )
}

fn attempt(lines: &[Value]) -> (Option<String>, Option<String>) {
    let a = lines
        .iter()
        .find(|l| l["kind"] == "attempt")
        .expect("an attempt line");
    (
        a["code"].as_str().map(str::to_string),
        a["class"].as_str().map(str::to_string),
    )
}

fn ended_at(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["kind"] == "end")
        .filter_map(|l| l["node"].as_str().map(str::to_string))
        .collect()
}

const CHARGE: &str =
    "[tasks.\"payments.charge\"]\ncommand = \"./charge.sh\"\ntimeout = \"PT60S\"\n";

#[test]
fn a_background_child_holding_stdout_does_not_hold_the_attempt_and_is_ended() {
    // The command answers and exits at once; its background job keeps
    // stdout open and would write `late.txt` after 3 s.
    let script = "#!/bin/sh\ncat >/dev/null\n(sleep 3; echo late > late.txt) &\n\
                  echo '{\"chargeId\":\"ch_1\"}'\n";
    let dir = world(CHARGE, &[("charge.sh", script)]);
    let started = Instant::now();
    let (out, _) = run(dir.path());
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the attempt waited for the background job ({:?}), not for the command's exit",
        started.elapsed()
    );
    assert_eq!(attempt(&out), (None, None), "{out:?}");
    assert_eq!(
        ended_at(&out),
        vec!["charged"],
        "the result was kept: {out:?}"
    );
    std::thread::sleep(Duration::from_secs(5).saturating_sub(started.elapsed()));
    assert!(
        !dir.path().join("late.txt").exists(),
        "the background job outlived the command's exit"
    );
}

#[test]
fn a_success_whose_output_is_not_utf8_is_an_output_failure() {
    let script = "#!/bin/sh\ncat >/dev/null\nprintf '{\"chargeId\":\"\\377\\376\"}'\n";
    let dir = world(CHARGE, &[("charge.sh", script)]);
    let (out, shown) = run(dir.path());
    assert_eq!(
        attempt(&out),
        (Some("q.handler.output".into()), Some("permanent".into()))
    );
    assert_eq!(out.last().unwrap()["status"], "failed", "{out:?}");
    assert!(shown.contains("not UTF-8"), "{shown}");
}

#[test]
fn output_over_the_limit_is_an_output_failure_naming_the_size() {
    // A valid JSON object of 2 MB.
    let script = "#!/bin/sh\ncat >/dev/null\nprintf '{\"chargeId\":\"ch_1\",\"blob\":\"'\n\
                  head -c 2000000 /dev/zero | tr '\\0' a\nprintf '\"}'\n";
    let dir = world(CHARGE, &[("charge.sh", script)]);
    let (out, shown) = run(dir.path());
    assert_eq!(
        attempt(&out),
        (Some("q.handler.output".into()), Some("permanent".into()))
    );
    assert!(shown.contains("2000029 bytes on stdout"), "{shown}");
    assert!(shown.contains("over the limit of 1 MiB"), "{shown}");
}

/// A loopback endpoint answering every request with `status` and `body`.
fn endpoint(status: u16, body: Vec<u8>) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let url = format!("http://{}/charge", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for mut req in server.incoming_requests() {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(req.as_reader(), &mut sink);
            let _ =
                req.respond(tiny_http::Response::from_data(body.clone()).with_status_code(status));
        }
    });
    url
}

fn url_handler(url: &str) -> String {
    format!("[tasks.\"payments.charge\"]\nurl = \"{url}\"\ntimeout = \"PT20S\"\n")
}

#[test]
fn a_url_handlers_oversized_or_non_utf8_success_is_an_output_failure_not_a_timeout() {
    let mut big = b"{\"chargeId\":\"ch_1\",\"blob\":\"".to_vec();
    big.extend(std::iter::repeat_n(b'a', 2_000_000));
    big.extend_from_slice(b"\"}");
    for (body, says) in [
        (big, "over the limit of 1 MiB"),
        (b"{\"chargeId\":\"\xff\xfe\"}".to_vec(), "not UTF-8"),
    ] {
        let dir = world(&url_handler(&endpoint(200, body)), &[]);
        let (out, shown) = run(dir.path());
        assert_eq!(
            attempt(&out),
            (Some("q.handler.output".into()), Some("permanent".into())),
            "{says}"
        );
        assert!(shown.contains(says), "{says}: {shown}");
    }
    // A failure with a body over the limit is still its status's class.
    let dir = world(&url_handler(&endpoint(503, vec![b'x'; 2_000_000])), &[]);
    let (out, _) = run(dir.path());
    assert_eq!(
        attempt(&out),
        (Some("q.handler.http-503".into()), Some("transient".into()))
    );
}
