//! A small payment provider on loopback that plays the DBG-08 shapes for
//! real over HTTP: `cargo run --example dbg08_service` (listens on
//! 127.0.0.1:8088; another address as the first argument).
//!
//! One route per shape; the attempt number comes from the `Qflow-Attempt`
//! header qflow sends, so the service keeps no state:
//!
//! - `POST /long-outage`: 503 on every attempt (the outage outlasts the policy);
//! - `POST /transient-outage`: 503 on attempts 1 and 2, then 200 with a charge id;
//! - `POST /rate-limited`: 429 with `Retry-After: 600` on attempt 1, then 200;
//! - `POST /malformed-input`: 400 with `{"code":"INVALID_INPUT","class":"permanent"}`;
//! - `POST /unknown-outcome`: takes the request, charges, and answers only after
//!   5 s (past the handler's 2 s timeout: the caller cannot know it happened).
//!
//! With it running, `qflow run samples/dbg08-charge.bpmn --handlers
//! samples/handlers/dbg08-transient-outage.toml` (and the other four files)
//! shows each shape on real requests (docs/handlers.md).

use std::time::Duration;

/// Serve the shapes on `server` until the process ends.
pub(crate) fn serve(server: tiny_http::Server) {
    for mut req in server.incoming_requests() {
        std::thread::spawn(move || {
            let mut body = String::new();
            let _ = std::io::Read::read_to_string(req.as_reader(), &mut body);
            let attempt: u32 = req
                .headers()
                .iter()
                .find(|h| h.field.equiv("Qflow-Attempt"))
                .and_then(|h| h.value.as_str().parse().ok())
                .unwrap_or(1);
            let (status, retry_after, answer, delay) = shape(req.url(), attempt);
            if let Some(d) = delay {
                std::thread::sleep(d);
            }
            let mut resp = tiny_http::Response::from_string(answer).with_status_code(status);
            if let Some(secs) = retry_after {
                let h = tiny_http::Header::from_bytes("Retry-After", secs.to_string())
                    .expect("a valid header");
                resp = resp.with_header(h);
            }
            let _ = req.respond(resp);
        });
    }
}

/// (status, Retry-After seconds, body, delay before answering) of `attempt`
/// on the route `path`.
fn shape(path: &str, attempt: u32) -> (u16, Option<u64>, String, Option<Duration>) {
    let charged = format!(r#"{{"chargeId":"ch_{attempt}"}}"#);
    match path {
        "/long-outage" => (503, None, "provider down".into(), None),
        "/transient-outage" if attempt <= 2 => (503, None, "provider down".into(), None),
        "/transient-outage" => (200, None, charged, None),
        "/rate-limited" if attempt == 1 => (429, Some(600), "slow down".into(), None),
        "/rate-limited" => (200, None, charged, None),
        "/malformed-input" => (
            400,
            None,
            r#"{"code":"INVALID_INPUT","class":"permanent","message":"destination postal code"}"#
                .into(),
            None,
        ),
        "/unknown-outcome" => (200, None, charged, Some(Duration::from_secs(5))),
        _ => (404, None, "no such shape".into(), None),
    }
}

#[allow(dead_code)]
fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8088".into());
    let server = match tiny_http::Server::http(&addr) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot listen on {addr}: {e}");
            std::process::exit(2);
        }
    };
    eprintln!("DBG-08 provider on http://{addr}: /long-outage /transient-outage /rate-limited /malformed-input /unknown-outcome");
    serve(server);
}
