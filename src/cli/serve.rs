//! `qflow serve --db DB [--handlers FILE]`: run every unfinished instance of
//! a database on the wall clock with real handlers, relay channel calls over
//! HTTP, and take counterparts' answers (and new instances) on an HTTP
//! endpoint. The contracts are in docs/handlers.md.

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use qflow_engine::embed::{Engine, EngineError, Handlers, Time};
use qflow_engine::handlers::HandlersFile;
use qflow_engine::runtime::driver::Verdict;
use qflow_engine::store::{Location, Store};
use serde_json::{json, Value};

use super::run::{json_line, Format};

/// The environment variable holding the endpoint's token.
pub const TOKEN_ENV: &str = "QFLOW_SERVE_TOKEN";

/// Serve a database's instances with real handlers, on the wall clock.
#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// The database (created if missing): a SQLite file or a postgres:// URL.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    /// The handlers file (TOML): a command or URL per q:task, a URL per channel.
    #[arg(long, value_name = "FILE")]
    pub handlers: Option<PathBuf>,
    /// Where the endpoint listens. Anything but a loopback address needs a
    /// token in the environment variable QFLOW_SERVE_TOKEN.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    pub listen: String,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// How many handler attempts and channel deliveries run at once, each
    /// on its own lane apart from the decisions (a task or channel table's
    /// `concurrency = N` bounds one dependency further).
    #[arg(long, value_name = "N", default_value_t = qflow_engine::runtime::lanes::DEFAULT_CONCURRENCY as u32,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub concurrency: u32,
}

const AFTER_HELP: &str = "\
Endpoint (JSON in and out; with QFLOW_SERVE_TOKEN set, every request needs
`Authorization: Bearer <token>`):
  POST /correlations/<instance>/<node>   a counterpart's answer (header Idempotency-Key:
                                         the request it answers); the verdict as status + JSON
  POST /processes/<process>/instances    start an instance (body: its variables)
  GET  /instances/<instance>             the instance's state (qflow run's last line)
  POST /instances/<instance>/resolve     reconcile an unknown outcome:
                                         {\"node\": N, \"as\": \"succeeded|failed|retry\", \"variables\": {}}
  GET  /health

Exit status: 2 for an unreadable or invalid handlers file, a database that cannot be
opened, an address that cannot be listened on, or a missing token; otherwise it runs
until stopped.";

pub fn run(args: Args) -> ExitCode {
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        if args.format == Format::Json {
            let rec = json!({"status": "error", "message": msg});
            println!("{}", json_line(&rec, &["status", "message"]));
        }
        ExitCode::from(2)
    };
    let file = match &args.handlers {
        Some(p) => match HandlersFile::read(p) {
            Ok(f) => f,
            Err(e) => return fail(format!("--handlers {}: {e}", p.display())),
        },
        None => HandlersFile::default(),
    };
    let addr: SocketAddr = match args.listen.parse() {
        Ok(a) => a,
        Err(_) => {
            return fail(format!(
                "--listen `{}`: write an address and port, e.g. 127.0.0.1:7878",
                args.listen
            ))
        }
    };
    let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
    if !addr.ip().is_loopback() && token.is_none() {
        return fail(format!(
            "--listen {addr} is reachable from other machines: set {TOKEN_ENV} to a secret \
             (counterparts send it as `Authorization: Bearer <token>`), or listen on 127.0.0.1"
        ));
    }
    let server = match tiny_http::Server::http(addr) {
        Ok(s) => s,
        Err(e) => return fail(format!("--listen {addr}: {e}")),
    };
    let bound = server
        .server_addr()
        .to_ip()
        .map_or(addr.to_string(), |a| a.to_string());
    let base = format!("http://{bound}");
    let handlers = super::handlers::world(&file, Some(base.clone()));
    let mut engine = match open(&args.db, handlers.clone()) {
        Ok(e) => e,
        Err(e) => return fail(format!("--db {}: {e}", args.db)),
    };
    if let Err(msg) = refuse_missing(&mut engine, args.handlers.as_deref()) {
        return fail(msg);
    }
    // The endpoint answers WORKERS requests at once, each worker with its
    // own engine: its own store connection and claim owner, as another
    // `qflow serve` on the database would have.
    let server = std::sync::Arc::new(server);
    let waker = engine.waker();
    for worker in 0..WORKERS {
        let mut endpoint = match open(&args.db, handlers.clone()) {
            Ok(e) => e,
            Err(e) => return fail(format!("--db {}: {e}", args.db)),
        };
        endpoint.set_owner(format!(
            "{}:http{worker}",
            qflow_engine::store::local_owner()
        ));
        let (server, token, waker) = (server.clone(), token.clone(), waker.clone());
        std::thread::spawn(move || listen(&server, endpoint, token, waker));
    }
    match args.format {
        Format::Human => eprintln!("listening on {base} (serving {})", args.db),
        Format::Json => println!(
            "{}",
            json_line(&json!({"status": "listening", "url": base}), &["status"])
        ),
    }
    // Decisions on this thread; attempts and deliveries on lanes. The
    // loop wakes for a lane's outcome, a request on the endpoint, the next
    // due timer or delivery, and at the latest every SAFETY_POLL (another
    // process's writes on the database).
    engine.set_concurrency(args.concurrency as usize);
    let format = args.format;
    let served = engine.serve_steps(SAFETY_POLL, |_, steps| {
        for step in steps {
            print(format, &step.instance, &step.decision);
        }
        true
    });
    match served {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => fail(format!("serving {}: {e}", args.db)),
    }
}

/// How often the serving loop looks at the database when nothing woke it:
/// what this process did not do itself (another replica, `qflow respond`,
/// an operator's command) is seen within this.
const SAFETY_POLL: Duration = Duration::from_millis(250);

fn open(db: &Location, handlers: Handlers) -> Result<Engine, EngineError> {
    let mut engine = Engine::with_store(Store::connect(db)?);
    engine.set_time(Time::System).set_handlers(handlers);
    Ok(engine)
}

/// Unfinished instances whose deployment has a task without a handler
/// would fail it (`q.handler.missing`): refuse to start instead.
fn refuse_missing(engine: &mut Engine, file: Option<&Path>) -> Result<(), String> {
    let rows = engine
        .store()
        .deployments()
        .map_err(|e| format!("reading the deployments: {e}"))?;
    for row in rows {
        if row.counts.running + row.counts.waiting == 0 {
            continue;
        }
        let dep = qflow_engine::store::Deployment {
            id: row.id,
            process_id: row.process_id.clone(),
            hash: row.hash.clone(),
        };
        let missing = engine
            .missing_handlers(&dep)
            .map_err(|e| format!("deployment {}: {e}", row.id))?;
        if !missing.is_empty() {
            let names: Vec<String> = missing.iter().map(|m| format!("`{m}`")).collect();
            let fix: Vec<String> = missing.iter().map(|m| format!("[tasks.\"{m}\"]")).collect();
            return Err(format!(
                "deployment {} ({}) has unfinished instances and no handler for {}: add {} to {}",
                row.id,
                row.process_id,
                names.join(", "),
                fix.join(" "),
                file.map_or("a handlers file (--handlers FILE)".into(), |p| p
                    .display()
                    .to_string())
            ));
        }
    }
    Ok(())
}

fn print(format: Format, instance: &str, d: &qflow_engine::runtime::driver::Decision) {
    match format {
        Format::Json => {
            for line in &d.lines {
                let mut line = line.clone();
                line["instance"] = Value::String(instance.to_string());
                println!(
                    "{}",
                    json_line(&line, &["at_s", "kind", "node", "attempt", "code"])
                );
            }
        }
        Format::Human => {
            let columns = super::run::Columns::of(None);
            for line in &d.events {
                println!("{}  [{instance}]", super::run::human_line(line, &columns));
            }
        }
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
const WORKERS: usize = 4;

/// Answer requests until the server closes: one of [`WORKERS`] threads.
fn listen(
    server: &tiny_http::Server,
    mut engine: Engine,
    token: Option<String>,
    waker: qflow_engine::embed::Waker,
) {
    for mut req in server.incoming_requests() {
        let (status, body) = answer(&mut engine, token.as_deref(), &mut req);
        // A start, an answer or a reconciliation may have made work due.
        waker.wake();
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
