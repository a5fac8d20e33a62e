//! `qflow serve`'s HTTP endpoint: counterparts' answers, starts, an
//! instance's state, reconciliations and the health check, answered by
//! [`WORKERS`] threads, each with an engine of its own (docs/handlers.md).

use std::io::Read;
use std::time::Duration;

use qflow_engine::embed::{Engine, EngineError};
use qflow_engine::runtime::driver::Verdict;
use serde_json::{json, Value};

/// Answer requests on `server` with one thread per engine in `workers`.
pub fn start(server: tiny_http::Server, workers: Vec<Engine>, token: Option<String>) {
    let server = std::sync::Arc::new(server);
    for engine in workers {
        let (server, token) = (server.clone(), token.clone());
        std::thread::spawn(move || listen(&server, engine, token));
    }
}

/// The HTTP status and JSON of a verdict.
pub fn verdict_reply(v: &Verdict) -> (u16, Value) {
    match v {
        Verdict::Accepted => (200, json!({"verdict": "accepted"})),
        Verdict::RetryPending => (
            409,
            json!({"verdict": "retry-pending", "message": "that attempt is gone, a retry is pending"}),
        ),
        Verdict::Superseded { live } => (
            409,
            json!({"verdict": "superseded", "live_attempt": live,
                   "message": format!("that attempt was replaced by attempt {live}")}),
        ),
        Verdict::UnknownRequest => (
            409,
            json!({"verdict": "unknown-request",
                   "message": "no attempt of this call was sent with that idempotency key"}),
        ),
        Verdict::Failed => (
            410,
            json!({"verdict": "failed", "message": "the instance is FAILED"}),
        ),
        Verdict::NotWaiting(what) => (
            409,
            json!({"verdict": "not-waiting", "message": format!("the node is not waiting for a response ({what})")}),
        ),
        Verdict::NoSuchInstance => (
            404,
            json!({"verdict": "no-such-instance", "message": "no instance by that name"}),
        ),
    }
}

/// How many requests the endpoint answers at once. An answer to a busy
/// instance waits up to [`BUSY_WAIT`] for its claim; with one worker every
/// other request (another instance's answer, a health check) would queue
/// behind it. Concurrent workers are as safe as several `qflow serve`
/// processes on one database: every decision is taken under the instance's
/// claim and applied only if the instance has not moved, so two answers to
/// one instance are decided one after the other, never both on one state.
pub const WORKERS: usize = 4;

/// Answer requests until the server closes: one of [`WORKERS`] threads.
fn listen(server: &tiny_http::Server, mut engine: Engine, token: Option<String>) {
    for mut req in server.incoming_requests() {
        let (status, body) = answer(&mut engine, token.as_deref(), &mut req);
        let retry = status == 503;
        let mut resp = tiny_http::Response::from_string(body.to_string())
            .with_status_code(status)
            .with_header(header("Content-Type", "application/json"));
        if retry {
            resp = resp.with_header(header("Retry-After", "1"));
        }
        let _ = req.respond(resp);
    }
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes())
        .expect("static header names and values are valid")
}

fn header_value<'a>(req: &'a tiny_http::Request, name: &'static str) -> Option<&'a str> {
    req.headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str())
}

/// How long an answer waits for an instance's claim before `503 busy`.
const BUSY_WAIT: Duration = Duration::from_secs(3);

/// At most this much of a request body is read.
const BODY_LIMIT: u64 = 1 << 20;

fn read_json(req: &mut tiny_http::Request) -> Result<Value, (u16, Value)> {
    let mut text = String::new();
    if let Err(e) = req.as_reader().take(BODY_LIMIT).read_to_string(&mut text) {
        return Err((400, json!({"error": format!("cannot read the body: {e}")})));
    }
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(&text)
        .map_err(|e| (400, json!({"error": format!("the body is not JSON: {e}")})))
}

fn answer(engine: &mut Engine, token: Option<&str>, req: &mut tiny_http::Request) -> (u16, Value) {
    if let Some(t) = token {
        let given = header_value(req, "Authorization").and_then(|v| v.strip_prefix("Bearer "));
        if given != Some(t) {
            return (
                401,
                json!({"error": "send the server's token as `Authorization: Bearer <token>`"}),
            );
        }
    }
    let method = req.method().clone();
    let url = req.url().split('?').next().unwrap_or("").to_string();
    let path = url.trim_start_matches('/');
    use tiny_http::Method::{Get, Post};
    match (&method, path.split_once('/')) {
        (Get, _) if path == "health" => (200, json!({"status": "ok"})),
        (Post, Some(("correlations", key))) if !key.is_empty() => {
            let body = match read_json(req) {
                Ok(b) => b,
                Err(e) => return e,
            };
            let request = header_value(req, "Idempotency-Key").map(str::to_string);
            // The driving thread claims an instance for every look at it:
            // a moment's wait usually finds the claim free again.
            let deadline = std::time::Instant::now() + BUSY_WAIT;
            let mut answer = engine.respond(key, request.as_deref(), body.clone());
            while matches!(answer, Err(EngineError::Busy(_)))
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(5));
                answer = engine.respond(key, request.as_deref(), body.clone());
            }
            match answer {
                Ok(v) => verdict_reply(&v),
                Err(EngineError::Busy(_)) => (
                    503,
                    json!({"verdict": "busy", "message": "the instance is being decided; send the answer again"}),
                ),
                Err(e) => (500, json!({"error": e.to_string()})),
            }
        }
        (Post, Some(("processes", rest))) => {
            let Some(process) = rest.strip_suffix("/instances").filter(|p| !p.is_empty()) else {
                return not_found(&url);
            };
            let vars = match read_json(req) {
                Ok(b) => b,
                Err(e) => return e,
            };
            match engine.start_process(process, vars) {
                Ok(id) => (201, json!({"instance": id})),
                Err(e @ EngineError::NoProcess(_)) => (404, json!({"error": e.to_string()})),
                Err(e @ (EngineError::NotAnObject(_) | EngineError::MissingHandlers(_))) => {
                    (422, json!({"error": e.to_string()}))
                }
                Err(e) => (500, json!({"error": e.to_string()})),
            }
        }
        (Post, Some(("instances", rest))) if rest.ends_with("/resolve") => {
            let id = rest.trim_end_matches("/resolve");
            let body = match read_json(req) {
                Ok(b) => b,
                Err(e) => return e,
            };
            resolve(engine, id, &body)
        }
        (Get, Some(("instances", id))) if !id.is_empty() => match engine.status(id) {
            Ok(state) => (200, state),
            Err(e @ EngineError::NoInstance(_)) => (404, json!({"error": e.to_string()})),
            Err(e) => (500, json!({"error": e.to_string()})),
        },
        _ => not_found(&url),
    }
}

/// `{"node": …, "as": "succeeded|failed|retry", "variables": {…}}`: the
/// reconciliation of an unknown outcome.
fn resolve(engine: &mut Engine, id: &str, body: &Value) -> (u16, Value) {
    use qflow_engine::embed::Resolution;
    let node = body["node"].as_str().unwrap_or_default();
    let Some(how) = body["as"].as_str().and_then(Resolution::parse) else {
        return (
            400,
            json!({"error": "send {\"node\": NODE, \"as\": \"succeeded\" | \"failed\" | \"retry\"} (and \"variables\" for succeeded)"}),
        );
    };
    if node.is_empty() {
        return (
            400,
            json!({"error": "`node`: the node waiting for reconciliation"}),
        );
    }
    let vars = body.get("variables").cloned().unwrap_or(Value::Null);
    let deadline = std::time::Instant::now() + BUSY_WAIT;
    loop {
        match engine.resolve(id, node, how, vars.clone()) {
            Ok(d) => {
                let state = engine.status(id).unwrap_or(Value::Null);
                return (200, json!({"lines": d.lines, "state": state}));
            }
            Err(EngineError::Busy(_)) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e @ EngineError::Busy(_)) => {
                return (503, json!({"verdict": "busy", "error": e.to_string()}))
            }
            Err(e @ EngineError::NoInstance(_)) => return (404, json!({"error": e.to_string()})),
            Err(e @ EngineError::NotAnObject(_)) => return (400, json!({"error": e.to_string()})),
            Err(e) => return (500, json!({"error": e.to_string()})),
        }
    }
}

fn not_found(url: &str) -> (u16, Value) {
    (
        404,
        json!({"error": format!("no endpoint {url}: POST /correlations/<instance>/<node>, POST /processes/<process>/instances, GET /instances/<instance>, POST /instances/<instance>/resolve, GET /health")}),
    )
}
