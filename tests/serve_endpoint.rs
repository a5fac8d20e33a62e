//! `qflow serve`'s endpoint holds whatever its clients do (docs/handlers.md,
//! "`qflow serve`'s endpoint"): stalled and unauthenticated clients hold up
//! nobody else and are cut off at the request timeout; heads and bodies
//! over their limits are refused by name before they are read; past its
//! bound on connections, or out of file descriptors, it answers 503 and
//! keeps serving; a token is matched in constant time with `Bearer` in any
//! case, and a blank one is refused at start. Starts honour an
//! `Idempotency-Key`, on both stores; the correlation endpoint takes only
//! JSON objects.
//!
//! Bounds are generous (seconds where the endpoint needs milliseconds): the
//! assertions are about outcomes, not speed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::serve::{agent, post, spawn_with, Serve};
use support::stores::Fresh;

const TASK: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <process id="charge" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="charge_card"/>
    <serviceTask id="charge_card" q:task="payments.charge"/>
    <sequenceFlow id="f2" sourceRef="charge_card" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>
"#;

/// A channel call that waits a minute for its answer.
const CALL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <process id="pay" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="authorize"/>
    <serviceTask id="authorize" q:channel="bank">
      <extensionElements>
        <q:timeout duration="PT60S"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="authorize" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>
"#;

const HANDLERS: &str = "[tasks.\"payments.charge\"]\ncommand = \"cat >/dev/null\"\n";

fn qflow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
}

fn deploy(dir: &Path, db: &str, model: &str) {
    std::fs::write(dir.join("model.bpmn"), model).unwrap();
    let out = qflow()
        .current_dir(dir)
        .args(["deploy", "model.bpmn", "--db", db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `qflow serve` on a fresh SQLite database with the task model deployed.
fn served(fresh: &Fresh, env: &[(&str, &str)], extra: &[&str], files: Option<u32>) -> Serve {
    let (dir, db) = (fresh.dir(), fresh.db());
    deploy(dir, &db, TASK);
    std::fs::write(dir.join("handlers.toml"), HANDLERS).unwrap();
    spawn_with(dir, &db, env, extra, files)
}

fn addr(s: &Serve) -> String {
    s.url.trim_start_matches("http://").to_string()
}

/// A raw connection that has sent `bytes` and then goes quiet.
fn stalled(s: &Serve, bytes: &[u8]) -> TcpStream {
    let mut c = TcpStream::connect(addr(s)).unwrap();
    c.write_all(bytes).unwrap();
    c
}

/// What the server sends on `c` until it closes it (at most `wait`).
fn answer_on(c: &mut TcpStream, wait: Duration) -> String {
    c.set_read_timeout(Some(wait)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                // One answer is all these tests read.
                if let Some(head) = String::from_utf8_lossy(&got).split_once("\r\n\r\n") {
                    let len = head
                        .0
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .and_then(|n| n.trim().parse::<usize>().ok());
                    if len.is_some_and(|n| head.1.len() >= n) {
                        break;
                    }
                }
            }
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// `GET /health` on a connection of its own, within `wait`: its status.
fn health_within(s: &Serve, wait: Duration, token: Option<&str>) -> Option<u16> {
    let client: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(wait))
        .build()
        .into();
    let mut req = client.get(format!("{}/health", s.url));
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    req.call().ok().map(|r| r.status().as_u16())
}

fn alive(s: &mut Serve) -> bool {
    s.child.try_wait().unwrap().is_none()
}

#[test]
fn stalled_clients_hold_up_nobody_and_are_cut_off_at_the_request_timeout() {
    let fresh = Fresh::sqlite("stalled");
    let mut s = served(&fresh, &[], &["--request-timeout", "PT2S"], None);
    // Eight clients stall: four in their headers, four in their bodies.
    let mut stalls: Vec<TcpStream> = (0..4)
        .map(|_| {
            stalled(
                &s,
                b"POST /processes/charge/instances HTTP/1.1\r\nHost: x\r\n",
            )
        })
        .chain((0..4).map(|_| {
            stalled(
                &s,
                b"POST /processes/charge/instances HTTP/1.1\r\nContent-Length: 100\r\n\r\n{",
            )
        }))
        .collect();
    // Everyone else is answered meanwhile: the health check and a start.
    assert_eq!(health_within(&s, Duration::from_secs(5), None), Some(200));
    let (status, body) = post(
        &format!("{}/processes/charge/instances", s.url),
        None,
        &json!({}),
    );
    assert_eq!(status, 201, "{body}");
    // Each stalled request is answered 408 at the timeout, and closed.
    for c in &mut stalls {
        let said = answer_on(c, Duration::from_secs(20));
        assert!(said.starts_with("HTTP/1.1 408"), "{said}");
        assert!(said.contains("PT2S"), "{said}");
    }
    assert!(alive(&mut s));
}

#[test]
fn a_client_that_does_not_read_its_answers_is_cut_off_at_the_request_timeout() {
    let fresh = Fresh::sqlite("unread");
    let mut s = served(&fresh, &[], &["--request-timeout", "PT2S"], None);
    // 200,000 requests sent at once, none of their answers read: some
    // megabytes of answers, more than the sockets' buffers hold, so the
    // endpoint's writes stop making progress.
    const SENT: usize = 200_000;
    let mut c = TcpStream::connect(addr(&s)).unwrap();
    let pipelined = "GET /instances/nobody-like-this HTTP/1.1\r\nHost: x\r\n\r\n".repeat(SENT);
    let writer = {
        let mut c = c.try_clone().unwrap();
        std::thread::spawn(move || {
            // Ends with an error once the endpoint has closed the connection.
            let _ = c.write_all(pipelined.as_bytes());
        })
    };
    std::thread::sleep(Duration::from_secs(1));
    // Everyone else is answered meanwhile.
    assert_eq!(health_within(&s, Duration::from_secs(5), None), Some(200));
    // The endpoint answers some thousands a second: within 12 s its
    // answers fill the sockets' buffers (about 10 MB on loopback) and its
    // writes stall past the request timeout, so it gives up on the
    // connection. Reading now finds fewer answers than were asked for,
    // then the end.
    std::thread::sleep(Duration::from_secs(12));
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let answers = String::from_utf8_lossy(&got)
        .matches("HTTP/1.1 404")
        .count();
    assert!(
        answers > 0 && answers < SENT,
        "{answers} of {SENT} answers arrived: the endpoint should have cut off the connection"
    );
    let _ = writer.join();
    assert_eq!(health_within(&s, Duration::from_secs(5), None), Some(200));
    assert!(alive(&mut s));
}

#[test]
fn without_the_token_a_request_is_refused_from_its_head_before_its_body() {
    let fresh = Fresh::sqlite("token_first");
    let s = served(&fresh, &[("QFLOW_SERVE_TOKEN", "s3cret")], &[], None);
    // Six clients announce a large body and never send it: each is refused
    // at once, from its head.
    let mut c: Vec<TcpStream> = (0..6)
        .map(|_| {
            stalled(
                &s,
                b"POST /processes/charge/instances HTTP/1.1\r\nContent-Length: 500000\r\n\r\n",
            )
        })
        .collect();
    for c in &mut c {
        let said = answer_on(c, Duration::from_secs(5));
        assert!(said.starts_with("HTTP/1.1 401"), "{said:?}");
    }
    // And they hold up nobody.
    assert_eq!(
        health_within(&s, Duration::from_secs(5), Some("s3cret")),
        Some(200)
    );
    // `Bearer` in any case; the token exactly.
    for (header, want) in [
        ("bearer s3cret", 200),
        ("BEARER s3cret", 200),
        ("Bearer s3cre", 401),
        ("Bearer s3cret2", 401),
        ("Basic s3cret", 401),
    ] {
        let resp = agent()
            .get(format!("{}/health", s.url))
            .header("Authorization", header)
            .call()
            .unwrap();
        assert_eq!(resp.status().as_u16(), want, "{header}");
    }
}

#[test]
fn a_blank_token_is_refused_at_start() {
    let fresh = Fresh::sqlite("blank_token");
    let (dir, db) = (fresh.dir(), fresh.db());
    std::fs::write(dir.join("handlers.toml"), HANDLERS).unwrap();
    for blank in ["", "   "] {
        let out = qflow()
            .current_dir(dir)
            .args(["serve", "--db", &db, "--listen", "127.0.0.1:0"])
            .env("QFLOW_SERVE_TOKEN", blank)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{blank:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("QFLOW_SERVE_TOKEN is set but blank"), "{err}");
    }
}

#[test]
fn heads_and_bodies_over_their_limits_are_refused_by_name_before_they_are_read() {
    let fresh = Fresh::sqlite("limits");
    let mut s = served(&fresh, &[], &[], None);
    // A body over 1 MiB: 413 from its Content-Length, before it is sent.
    let mut c = stalled(
        &s,
        b"POST /processes/charge/instances HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n",
    );
    let said = answer_on(&mut c, Duration::from_secs(5));
    assert!(said.starts_with("HTTP/1.1 413"), "{said}");
    assert!(said.contains("1 MiB (1048576 bytes)"), "{said}");
    // Headers over 16 KiB: 431.
    let mut head = b"GET /health HTTP/1.1\r\nX-Big: ".to_vec();
    head.extend(std::iter::repeat_n(b'a', 20_000));
    head.extend_from_slice(b"\r\n\r\n");
    let mut c = TcpStream::connect(addr(&s)).unwrap();
    let _ = c.write_all(&head);
    let said = answer_on(&mut c, Duration::from_secs(5));
    assert!(said.starts_with("HTTP/1.1 431"), "{said}");
    assert!(said.contains("16 KiB"), "{said}");
    // A body without a length: 411, before it is read.
    let mut c = stalled(
        &s,
        b"POST /processes/charge/instances HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    let said = answer_on(&mut c, Duration::from_secs(5));
    assert!(said.starts_with("HTTP/1.1 411"), "{said}");
    assert!(said.contains("Content-Length"), "{said}");
    // A body just under the limit is read (and is not JSON: 400 says so).
    let (status, body) = {
        let mut resp = agent()
            .post(format!("{}/processes/charge/instances", s.url))
            .send(vec![b'x'; 1000].as_slice())
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap();
        (status, text)
    };
    assert_eq!(status, 400);
    assert!(body.contains("not JSON"), "{body}");
    assert!(alive(&mut s));
}

#[test]
fn past_its_bound_on_connections_the_endpoint_answers_503_and_serves_again() {
    let fresh = Fresh::sqlite("bound");
    let mut s = served(&fresh, &[], &["--max-connections", "4"], None);
    let idle: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(addr(&s)).unwrap())
        .collect();
    // Let the four be accepted before the fifth.
    std::thread::sleep(Duration::from_millis(300));
    let mut resp = agent().get(format!("{}/health", s.url)).call().unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    assert_eq!(
        resp.headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let text = resp.body_mut().read_to_string().unwrap();
    assert!(text.contains("--max-connections"), "{text}");
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(20);
    while health_within(&s, Duration::from_secs(5), None) != Some(200) {
        assert!(Instant::now() < deadline, "the endpoint never served again");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(alive(&mut s));
}

#[test]
fn out_of_file_descriptors_the_endpoint_keeps_serving() {
    let fresh = Fresh::sqlite("nofile");
    // 64 open files, and 150 idle connections: more than the process can
    // hold. (The HTTP library before stopped accepting for good here.)
    let mut s = served(&fresh, &[], &[], Some(64));
    let idle: Vec<TcpStream> = (0..150)
        .filter_map(|_| TcpStream::connect(addr(&s)).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // While they are open, a request is refused (503) or waits: the
    // process lives.
    let during = health_within(&s, Duration::from_secs(3), None);
    assert!(matches!(during, None | Some(503) | Some(200)), "{during:?}");
    assert!(alive(&mut s));
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(30);
    while health_within(&s, Duration::from_secs(5), None) != Some(200) {
        assert!(
            Instant::now() < deadline,
            "the endpoint never served again after running out of file descriptors"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (status, body) = post(
        &format!("{}/processes/charge/instances", s.url),
        None,
        &json!({}),
    );
    assert_eq!(status, 201, "{body}");
    assert!(alive(&mut s));
}

#[test]
fn the_correlation_endpoint_takes_only_a_json_object() {
    let fresh = Fresh::sqlite("objects_only");
    let (dir, db) = (fresh.dir(), fresh.db());
    deploy(dir, &db, CALL);
    // A counterpart that takes every request.
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let bank = format!("http://{}/bank", server.server_addr().to_ip().unwrap());
    let (taken, delivered) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for req in server.incoming_requests() {
            let _ = req.respond(tiny_http::Response::empty(202));
            let _ = taken.send(());
        }
    });
    std::fs::write(
        dir.join("handlers.toml"),
        format!("[channels.bank]\nurl = \"{bank}\"\n"),
    )
    .unwrap();
    let s = spawn_with(dir, &db, &[], &[], None);
    let (status, body) = post(
        &format!("{}/processes/pay/instances", s.url),
        None,
        &json!({}),
    );
    assert_eq!(status, 201, "{body}");
    let id = body["instance"].as_str().unwrap().to_string();
    delivered
        .recv_timeout(Duration::from_secs(20))
        .expect("the request is delivered");
    let url = format!("{}/correlations/{id}/authorize", s.url);
    for answer in [json!([1, 2]), json!("approved"), Value::Null, json!(42)] {
        let (status, body) = post(&url, None, &answer);
        assert_eq!(status, 400, "{answer}: {body}");
        let msg = body["error"].as_str().unwrap_or_default();
        assert!(msg.contains("must be a JSON object"), "{answer}: {msg}");
    }
    // Nothing was taken: an object still is.
    let (status, body) = post(&url, None, &json!({"approved": true}));
    assert_eq!(
        (status, body["verdict"].as_str()),
        (200, Some("accepted")),
        "{body}"
    );
}

crate::on_both_stores!(
    a_start_with_an_idempotency_key_returns_the_same_instance,
    racing_starts_with_one_key_on_two_replicas_start_one_instance,
);

fn a_start_with_an_idempotency_key_returns_the_same_instance(fresh: &Fresh) {
    let (dir, db) = (fresh.dir(), fresh.db());
    deploy(dir, &db, TASK);
    std::fs::write(dir.join("handlers.toml"), HANDLERS).unwrap();
    let s = spawn_with(dir, &db, &[], &[], None);
    let url = format!("{}/processes/charge/instances", s.url);
    let (status, first) = post(&url, Some("order-A-17"), &json!({"orderId": "A-17"}));
    assert_eq!(status, 201, "{first}");
    // The reply was lost; the client sends again: the same instance.
    let mut resp = agent()
        .post(&url)
        .header("Idempotency-Key", "order-A-17")
        .send(json!({"orderId": "A-17"}).to_string().as_bytes())
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    assert_eq!(
        resp.headers()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    let again: Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(again["instance"], first["instance"]);
    // The same key for another start is refused, naming the instance.
    let (status, body) = post(&url, Some("order-A-17"), &json!({"orderId": "B-2"}));
    assert_eq!(status, 422, "{body}");
    let msg = body["error"].as_str().unwrap_or_default();
    assert!(msg.contains(first["instance"].as_str().unwrap()), "{msg}");
    // The key outlives the process: a new serve on the database knows it.
    drop(s);
    let s = spawn_with(dir, &db, &[], &[], None);
    let url = format!("{}/processes/charge/instances", s.url);
    let (status, after) = post(&url, Some("order-A-17"), &json!({"orderId": "A-17"}));
    assert_eq!(status, 201, "{after}");
    assert_eq!(after["instance"], first["instance"]);
    // Another key, another instance; no key, another each time.
    let (_, other) = post(&url, Some("order-B-2"), &json!({"orderId": "B-2"}));
    assert_ne!(other["instance"], first["instance"]);
    let (_, a) = post(&url, None, &json!({}));
    let (_, b) = post(&url, None, &json!({}));
    assert_ne!(a["instance"], b["instance"]);
    let instances = support::stores::open(&db).instances().unwrap();
    assert_eq!(instances.len(), 4, "A-17 once, B-2, and two without a key");
}

fn racing_starts_with_one_key_on_two_replicas_start_one_instance(fresh: &Fresh) {
    let (dir, db) = (fresh.dir(), fresh.db());
    deploy(dir, &db, TASK);
    std::fs::write(dir.join("handlers.toml"), HANDLERS).unwrap();
    let a = spawn_with(dir, &db, &[], &[], None);
    let b = spawn_with(dir, &db, &[], &[], None);
    // Twelve keys, each sent eight times at once, half to each replica.
    let urls = [a.url.clone(), b.url.clone()];
    let mut threads = Vec::new();
    for k in 0..12 {
        for i in 0..8 {
            let url = format!("{}/processes/charge/instances", urls[i % 2]);
            threads.push(std::thread::spawn(move || {
                let (status, body) = post(&url, Some(&format!("key-{k}")), &json!({"k": k}));
                (k, status, body["instance"].as_str().map(str::to_string))
            }));
        }
    }
    let mut by_key: std::collections::BTreeMap<i32, std::collections::BTreeSet<String>> =
        Default::default();
    for t in threads {
        let (k, status, id) = t.join().unwrap();
        assert_eq!(status, 201, "key-{k}");
        by_key.entry(k).or_default().insert(id.unwrap());
    }
    for (k, ids) in &by_key {
        assert_eq!(ids.len(), 1, "key-{k} started {ids:?}");
    }
    let instances = support::stores::open(&db).instances().unwrap();
    assert_eq!(instances.len(), 12, "one instance per key");
}
