//! `qflow serve`'s HTTP endpoint: counterparts' answers, starts, an
//! instance's state, reconciliations and the health check
//! (docs/handlers.md).
//!
//! An endpoint that holds, whatever its clients do:
//!
//! - **One thread per connection, a bound on connections.** At most
//!   `max_connections` are open at once (lowered to fit the process's
//!   open-file limit); one more is answered `503` with `Retry-After` by a
//!   refusal thread and closed, so a flood degrades into refusals instead
//!   of starving the process of file descriptors.
//! - **Timeouts.** A request's head and body must arrive within the
//!   request timeout (from its first byte, or from the end of the previous
//!   request on a kept-alive connection: the idle limit), and every write
//!   of an answer must progress within it; a stalled client is answered
//!   `408` and closed and holds up nobody else.
//! - **Bounded sizes.** The request line and headers: [`HEAD_LIMIT`]
//!   (`431`); a body: [`BODY_LIMIT`] (`413`, said before a byte of the
//!   body is read, from its `Content-Length`).
//! - **Authentication first.** With a token, a request without it is
//!   answered `401` from its head alone: its body is never waited for.
//! - **No panic path in accepting.** An accept that fails (out of file
//!   descriptors, say) is reported and retried after a pause; the
//!   listener never stops.
//!
//! Requests that touch the store are answered by [`WORKERS`] threads, each
//! with an engine of its own (its own connection and claim owner); a
//! connection thread hands its request over and waits for the answer.
//! `/health` is answered by the connection thread itself.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::wire::{reason, same_secret};
use qflow_engine::embed::{Engine, EngineError, StoreHealth, StoreState};
use qflow_engine::runtime::driver::Verdict;
use serde_json::{json, Value};

/// How many requests touching the store are answered at once. An answer to
/// a busy instance waits up to [`BUSY_WAIT`] for its claim; with one worker
/// every other request would queue behind it. Concurrent workers are as
/// safe as several `qflow serve` processes on one database: every decision
/// is taken under the instance's claim and applied only if the instance
/// has not moved, so two answers to one instance are decided one after the
/// other, never both on one state.
pub(super) const WORKERS: usize = 4;

/// Requests waiting for a worker; one more is answered `503`.
const QUEUE: usize = 64;

/// The request line and headers together, at most (`431` past it).
pub(super) const HEAD_LIMIT: usize = 16 * 1024;

/// Headers in one request, at most (`431` past it).
const MAX_HEADERS: usize = 64;

/// A request body, at most (`413` past it).
pub(super) const BODY_LIMIT: usize = 1 << 20;

/// The default of `--max-connections`.
pub(super) const DEFAULT_MAX_CONNECTIONS: u32 = 256;

/// How long an answer waits for an instance's claim before `503 busy`.
const BUSY_WAIT: Duration = Duration::from_secs(3);

/// How long a connection thread waits for a worker's answer (the worker's
/// own waits are bounded by [`BUSY_WAIT`] and the store's).
const WORKER_WAIT: Duration = Duration::from_secs(60);

/// How the endpoint is bounded.
#[derive(Debug, Clone)]
pub(super) struct Config {
    /// The store's state as the serving loop meets it (`/health`, `/ready`).
    pub health: Option<StoreHealth>,
    /// The database, as `--db` named it (500 answers name it).
    pub db: String,
    /// The token every request must carry (`Authorization: Bearer …`).
    pub token: Option<String>,
    /// A request's head and body, and each write of its answer, within this.
    pub request_timeout: Duration,
    /// Connections open at once, at most.
    pub max_connections: usize,
    /// Prompts the serving loop after each answer (a start, a response or a
    /// reconciliation may have made work due), so it need not wait for its
    /// safety poll.
    pub waker: Option<qflow_engine::embed::Waker>,
    /// The web inspector's pages, with the actions, under `/ui/`: a
    /// request for them hands its connection to the inspector
    /// (`crate::cli::ui`), which checks the same token itself (as a cookie
    /// too: a browser's links carry no header).
    pub ui: Option<Arc<crate::cli::ui::Ui>>,
    /// Shown each decision an answer took (a response, a reconciliation),
    /// with its instance: `qflow serve` prints them beside the loop's own.
    pub on_decision: Option<OnDecision>,
}

/// How a decision is shown: its instance and the decision.
pub(super) type ShowDecision = dyn Fn(&str, &qflow_engine::runtime::driver::Decision) + Send + Sync;

/// What [`Config::on_decision`] calls.
#[derive(Clone)]
pub(super) struct OnDecision(pub Arc<ShowDecision>);

impl std::fmt::Debug for OnDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnDecision")
    }
}

/// The token of `QFLOW_SERVE_TOKEN` as the endpoint checks it: surrounding
/// whitespace is not part of it; a set but blank variable is refused (it
/// would let anyone in who sends an empty token).
pub(crate) fn token_from_env(value: Option<String>) -> Result<Option<String>, String> {
    match value {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Err(format!(
            "{} is set but blank: set it to a secret (counterparts send it as \
             `Authorization: Bearer <token>`), or unset it to serve loopback without a token",
            super::TOKEN_ENV
        )),
        Some(v) => Ok(Some(v.trim().to_string())),
    }
}

/// `max_connections` lowered to fit the process's open-file limit (after
/// raising its soft limit to the hard one, as a server does), keeping file
/// descriptors for the store and the handlers; a note when it was lowered.
pub(super) fn fit_connections(max_connections: usize) -> (usize, Option<String>) {
    #[cfg(unix)]
    {
        use rustix::process::{getrlimit, setrlimit, Resource};
        let mut limit = getrlimit(Resource::Nofile);
        if limit.current < limit.maximum {
            let raised = rustix::process::Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            };
            if setrlimit(Resource::Nofile, raised).is_ok() {
                limit = getrlimit(Resource::Nofile);
            }
        }
        if let Some(files) = limit.current {
            let files = usize::try_from(files).unwrap_or(usize::MAX);
            let reserve = (files / 2).min(64);
            let fits = files.saturating_sub(reserve).max(1);
            if max_connections > fits {
                return (
                    fits,
                    Some(format!(
                        "--max-connections lowered from {max_connections} to {fits}: the open-file \
                         limit is {files} (ulimit -n), and {reserve} are kept for the store and the handlers"
                    )),
                );
            }
        }
    }
    (max_connections, None)
}

/// What a connection thread hands a worker.
struct Job {
    request: Request,
    reply: mpsc::Sender<Reply>,
}

/// A parsed request: what the routes read.
struct Request {
    method: String,
    /// The path, without its query.
    path: String,
    idempotency_key: Option<String>,
    body: Vec<u8>,
}

/// An answer: status, JSON, extra headers.
struct Reply {
    status: u16,
    body: Value,
    headers: Vec<(&'static str, String)>,
}

impl Reply {
    fn new((status, body): (u16, Value)) -> Reply {
        let mut headers = Vec::new();
        if status == 503 {
            headers.push(("Retry-After", "1".to_string()));
        }
        Reply {
            status,
            body,
            headers,
        }
    }
}

/// What every connection thread shares.
struct Shared {
    config: Config,
    open: AtomicUsize,
    jobs: mpsc::SyncSender<Job>,
}

/// Counts one open connection while it lives.
struct Open(Arc<Shared>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Answer requests on `listener`: an accepting thread, a thread per
/// connection, and one worker thread per engine in `workers`.
pub(super) fn start(listener: TcpListener, workers: Vec<Engine>, config: Config) {
    let (jobs, queue) = mpsc::sync_channel::<Job>(QUEUE);
    let queue = Arc::new(Mutex::new(queue));
    for engine in workers {
        let (queue, db, waker) = (queue.clone(), config.db.clone(), config.waker.clone());
        let (shown, health) = (config.on_decision.clone(), config.health.clone());
        std::thread::spawn(move || {
            work(
                engine,
                &queue,
                &db,
                waker.as_ref(),
                shown.as_ref(),
                health.as_ref(),
            )
        });
    }
    let (refusals, refused) = mpsc::sync_channel::<TcpStream>(QUEUE);
    std::thread::spawn(move || refuse_each(&refused));
    let shared = Arc::new(Shared {
        config,
        open: AtomicUsize::new(0),
        jobs,
    });
    std::thread::spawn(move || accept(&listener, &shared, &refusals));
}

/// The accepting loop: it never ends and never panics.
fn accept(listener: &TcpListener, shared: &Arc<Shared>, refusals: &mpsc::SyncSender<TcpStream>) {
    let mut last_report: Option<Instant> = None;
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors (EMFILE, ENFILE), out of buffers,
                // or a connection reset before it was accepted: wait and
                // accept again; the pending connections stay queued.
                if last_report.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                    eprintln!(
                        "qflow serve: the endpoint cannot accept a connection ({e}) with {} open; \
                         it keeps trying (raise the open-file limit, ulimit -n, or lower --max-connections)",
                        shared.open.load(Ordering::SeqCst)
                    );
                    last_report = Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if shared.open.fetch_add(1, Ordering::SeqCst) >= shared.config.max_connections {
            shared.open.fetch_sub(1, Ordering::SeqCst);
            // A full refusal queue: the connection is just closed.
            let _ = refusals.try_send(stream);
            continue;
        }
        let open = Open(shared.clone());
        let spawned = std::thread::Builder::new()
            .name("qflow-http".into())
            .spawn(move || connection(stream, &open));
        if let Err(e) = spawned {
            // The stream went with the closure: the client sees it closed.
            eprintln!("qflow serve: no thread for a connection ({e}); it was closed");
        }
    }
}

/// Answer each refused connection `503` and close it, lingering a moment
/// so the client reads the answer rather than a reset.
fn refuse_each(refused: &mpsc::Receiver<TcpStream>) {
    for mut stream in refused.iter() {
        let reply = Reply::new((
            503,
            json!({"error": "the endpoint has as many connections open as it takes (--max-connections): send again shortly"}),
        ));
        let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
        let _ = write_reply(&mut stream, &reply, false);
        linger(stream, Duration::from_millis(200), 64 * 1024);
    }
}

/// Shut the writing side, read and drop what the client still sends for at
/// most `wait` (or `bytes`), then close: closing with unread input would
/// reset the connection and lose the answer just written.
fn linger(mut stream: TcpStream, wait: Duration, bytes: usize) {
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; 8192];
    let mut read = 0;
    while read < bytes {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break;
        };
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
}

/// Why a request could not be read.
enum ReadError {
    /// The client closed the connection (or it broke): nothing to answer.
    Closed,
    /// The request did not arrive in time.
    Timeout,
    /// An answer to give before closing.
    Answer(u16, String),
    /// A request for the web inspector's pages (`/ui`, `/ui/…`), left
    /// unread in the pending bytes for the inspector.
    Ui,
}

/// A connection: its requests one after another (kept alive as HTTP/1.1
/// does), each within the request timeout.
fn connection(mut stream: TcpStream, open: &Open) {
    let shared = &open.0;
    let timeout = shared.config.request_timeout;
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(timeout));
    // Bytes read past the previous request (a pipelined next one).
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let deadline = Instant::now() + timeout;
        let (request, keep_alive) = match read_request(&mut stream, &mut pending, deadline, shared)
        {
            Ok(r) => r,
            Err(ReadError::Closed) => return,
            Err(ReadError::Timeout) => {
                // A connection idle between requests is closed quietly; a
                // request that started and stalled hears why.
                if !pending.is_empty() {
                    let reply = Reply::new((
                        408,
                        json!({"error": format!(
                            "the request did not arrive within {} (--request-timeout)",
                            qflow_engine::duration::to_iso(timeout)
                        )}),
                    ));
                    let _ = write_reply(&mut stream, &reply, false);
                    linger(stream, Duration::from_millis(200), 64 * 1024);
                }
                return;
            }
            Err(ReadError::Ui) => {
                if let Some(ui) = &shared.config.ui {
                    crate::cli::ui::serve_connection(stream, pending, ui);
                }
                return;
            }
            Err(ReadError::Answer(status, message)) => {
                let _ = write_reply(
                    &mut stream,
                    &Reply::new((status, json!({"error": message}))),
                    false,
                );
                linger(stream, Duration::from_secs(1), BODY_LIMIT);
                return;
            }
        };
        let reply = route(request, shared);
        if write_reply(&mut stream, &reply, keep_alive).is_err() || !keep_alive {
            linger(stream, Duration::from_millis(200), 64 * 1024);
            return;
        }
    }
}

/// Read into `pending` until `deadline`; `Ok(0)` when the client closed.
fn fill(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    deadline: Instant,
) -> Result<usize, ReadError> {
    let left = deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or(ReadError::Timeout)?;
    stream
        .set_read_timeout(Some(left))
        .map_err(|_| ReadError::Closed)?;
    let mut buf = [0u8; 16 * 1024];
    match stream.read(&mut buf) {
        Ok(n) => {
            pending.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            Err(ReadError::Timeout)
        }
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(1),
        Err(_) => Err(ReadError::Closed),
    }
}

/// One request: its head (bounded), the token checked, then its body
/// (bounded, by `Content-Length`). Whether the connection stays open after.
fn read_request(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    deadline: Instant,
    shared: &Shared,
) -> Result<(Request, bool), ReadError> {
    // The head.
    let (head_len, method, path, version, headers) = loop {
        if !pending.is_empty() {
            let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut slots);
            match req.parse(pending) {
                Ok(httparse::Status::Complete(n)) => {
                    let headers: Vec<(String, Vec<u8>)> = req
                        .headers
                        .iter()
                        .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
                        .collect();
                    break (
                        n,
                        req.method.unwrap_or_default().to_string(),
                        req.path.unwrap_or_default().to_string(),
                        req.version.unwrap_or(1),
                        headers,
                    );
                }
                Ok(httparse::Status::Partial) => {}
                Err(httparse::Error::TooManyHeaders) => {
                    return Err(ReadError::Answer(
                        431,
                        format!("a request carries at most {MAX_HEADERS} headers"),
                    ))
                }
                Err(e) => {
                    return Err(ReadError::Answer(
                        400,
                        format!("not an HTTP/1.1 request ({e})"),
                    ))
                }
            }
            if pending.len() >= HEAD_LIMIT {
                return Err(ReadError::Answer(
                    431,
                    format!(
                        "the request line and headers are over the limit of {} KiB ({HEAD_LIMIT} bytes)",
                        HEAD_LIMIT / 1024
                    ),
                ));
            }
        }
        if fill(stream, pending, deadline)? == 0 {
            return Err(ReadError::Closed);
        }
    };
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| String::from_utf8_lossy(v).trim().to_string())
    };
    let page = path.split('?').next().unwrap_or_default();
    if shared.config.ui.is_some() && (page == "/ui" || page.starts_with("/ui/")) {
        return Err(ReadError::Ui);
    }
    // Authentication, from the head alone.
    if let Some(token) = &shared.config.token {
        if !authorized(header("authorization").as_deref(), token) {
            return Err(ReadError::Answer(
                401,
                "send the server's token as `Authorization: Bearer <token>`".into(),
            ));
        }
    }
    // The body's length: Content-Length only.
    if header("transfer-encoding").is_some() {
        return Err(ReadError::Answer(
            411,
            "send the body with a Content-Length (Transfer-Encoding is not taken)".into(),
        ));
    }
    let lengths: Vec<String> = headers
        .iter()
        .filter(|(n, _)| n == "content-length")
        .map(|(_, v)| String::from_utf8_lossy(v).trim().to_string())
        .collect();
    let length = match lengths.as_slice() {
        [] => 0,
        [one] => one.parse::<u64>().map_err(|_| {
            ReadError::Answer(400, format!("Content-Length `{one}` is not a number"))
        })?,
        _ => {
            return Err(ReadError::Answer(
                400,
                "more than one Content-Length".into(),
            ))
        }
    };
    if length > BODY_LIMIT as u64 {
        return Err(ReadError::Answer(
            413,
            format!("the body is {length} bytes, over the limit of 1 MiB ({BODY_LIMIT} bytes)"),
        ));
    }
    let length = length as usize;
    if header("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
        && pending.len() < head_len + length
    {
        let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    // The body.
    while pending.len() < head_len + length {
        if fill(stream, pending, deadline)? == 0 {
            return Err(ReadError::Closed);
        }
    }
    let body = pending[head_len..head_len + length].to_vec();
    pending.drain(..head_len + length);
    let connection = header("connection").unwrap_or_default();
    let keep_alive = if version == 0 {
        connection.eq_ignore_ascii_case("keep-alive")
    } else {
        !connection.eq_ignore_ascii_case("close")
    };
    let path = path.split('?').next().unwrap_or_default().to_string();
    Ok((
        Request {
            method,
            path,
            idempotency_key: header("idempotency-key"),
            body,
        },
        keep_alive,
    ))
}

/// Whether an `Authorization` header carries `token` as a bearer token:
/// the scheme in any case, the token compared in constant time.
fn authorized(value: Option<&str>, token: &str) -> bool {
    let Some((scheme, given)) = value.map(str::trim).and_then(|v| v.split_once(' ')) else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer") & same_secret(given.trim().as_bytes(), token.as_bytes())
}

/// `/health` (liveness: the process serves, whatever the database does;
/// `200` always, with the store's state) and `/ready` (readiness: `200`
/// while the store answers, `503` with what it met while it does not, so a
/// load balancer sends counterparts to a replica that can decide).
fn health_reply(path: &str, health: Option<&StoreHealth>) -> Reply {
    let state = health.map_or(StoreState::Up, StoreHealth::state);
    let store = match &state {
        StoreState::Up => json!({"state": "up"}),
        StoreState::Down {
            since_ms,
            error,
            tries,
        } => json!({
            "state": "unavailable",
            "since": qflow_engine::duration::instant(*since_ms),
            "error": error,
            "tries": tries,
        }),
    };
    let up = state == StoreState::Up;
    if path == "/ready" && !up {
        return Reply::new((503, json!({"status": "unavailable", "store": store})));
    }
    let status = if path == "/ready" { "ready" } else { "ok" };
    Reply::new((200, json!({"status": status, "store": store})))
}

/// Answer one request: the health checks here, the rest by a worker.
fn route(request: Request, shared: &Shared) -> Reply {
    if request.method == "GET" && (request.path == "/health" || request.path == "/ready") {
        return health_reply(&request.path, shared.config.health.as_ref());
    }
    let (reply, answer) = mpsc::channel();
    match shared.jobs.try_send(Job { request, reply }) {
        Ok(()) => {}
        Err(mpsc::TrySendError::Full(_)) => {
            return Reply::new((
                503,
                json!({"error": format!("the endpoint's {WORKERS} workers have {QUEUE} requests waiting: send again shortly")}),
            ))
        }
        Err(mpsc::TrySendError::Disconnected(_)) => {
            return Reply::new((500, json!({"error": "the endpoint's workers stopped"})))
        }
    }
    answer.recv_timeout(WORKER_WAIT).unwrap_or_else(|_| {
        Reply::new((
            503,
            json!({"error": format!("no answer from the store within {} s: send again", WORKER_WAIT.as_secs())}),
        ))
    })
}

/// A worker: requests from the queue, answered with its own engine.
fn work(
    mut engine: Engine,
    queue: &Mutex<mpsc::Receiver<Job>>,
    db: &str,
    waker: Option<&qflow_engine::embed::Waker>,
    shown: Option<&OnDecision>,
    health: Option<&StoreHealth>,
) {
    loop {
        let job = match queue.lock() {
            Ok(q) => q.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        let Ok(Job { request, reply }) = job else {
            return;
        };
        let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut reply = answer(&mut engine, &request, shown);
            if reply.body["store"] == "unavailable" {
                if let (Some(h), Some(e)) = (health, reply.body["error"].as_str()) {
                    h.down(e);
                }
            }
            if reply.status == 500 || reply.body["store"] == "unavailable" {
                if let Some(e) = reply.body["error"].as_str() {
                    reply.body["error"] = Value::String(format!("the store {db}: {e}"));
                }
            }
            reply
        }));
        if let Some(w) = waker {
            w.wake();
        }
        let _ = reply.send(answered.unwrap_or_else(|_| {
            Reply::new((
                500,
                json!({"error": "answering this request failed inside qflow (a bug): see serve's standard error"}),
            ))
        }));
    }
}

fn write_reply(stream: &mut TcpStream, reply: &Reply, keep_alive: bool) -> io::Result<()> {
    let body = reply.body.to_string();
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        reply.status,
        reason(reply.status),
        body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !keep_alive {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    head.push_str(&body);
    stream.write_all(head.as_bytes())?;
    stream.flush()
}

/// The HTTP status and JSON of a verdict.
pub(crate) fn verdict_reply(v: &Verdict) -> (u16, Value) {
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
        Verdict::Quarantined => (
            409,
            json!({"verdict": "quarantined",
                   "message": "the instance is quarantined: nothing is decided for it until `qflow release INSTANCE` (send the answer again then)"}),
        ),
    }
}

/// A body as JSON (empty is `{}`).
fn body_json(body: &[u8]) -> Result<Value, (u16, Value)> {
    let text = std::str::from_utf8(body).map_err(|e| {
        (
            400,
            json!({"error": format!("the body is not UTF-8 ({e})")}),
        )
    })?;
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(text)
        .map_err(|e| (400, json!({"error": format!("the body is not JSON: {e}")})))
}

fn answer(engine: &mut Engine, req: &Request, shown: Option<&OnDecision>) -> Reply {
    let url = req.path.as_str();
    let path = url.trim_start_matches('/');
    let body = || body_json(&req.body);
    let reply = |r: (u16, Value)| Reply::new(r);
    match (req.method.as_str(), path.split_once('/')) {
        ("POST", Some(("correlations", key))) if !key.is_empty() => {
            let body = match body() {
                Ok(b @ Value::Object(_)) => b,
                Ok(other) => {
                    return reply((
                        400,
                        json!({"error": format!(
                            "the answer must be a JSON object (its fields are the variables the flow resumes with), not {}",
                            kind(&other)
                        )}),
                    ))
                }
                Err(e) => return reply(e),
            };
            let request = req.idempotency_key.as_deref();
            // The driving thread claims an instance for every look at it:
            // a moment's wait usually finds the claim free again.
            let deadline = Instant::now() + BUSY_WAIT;
            let mut answer = engine.respond_decided(key, request, body.clone());
            while matches!(answer, Err(EngineError::Busy(_))) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
                answer = engine.respond_decided(key, request, body.clone());
            }
            reply(match answer {
                Ok((v, decided)) => {
                    if let (Some(show), Some((instance, d))) = (shown, &decided) {
                        (show.0)(instance, d);
                    }
                    verdict_reply(&v)
                }
                Err(EngineError::Busy(_)) => (
                    503,
                    json!({"verdict": "busy", "message": "the instance is being decided; send the answer again"}),
                ),
                Err(e) => failure(&e),
            })
        }
        ("POST", Some(("processes", rest))) => {
            let Some(process) = rest.strip_suffix("/instances").filter(|p| !p.is_empty()) else {
                return reply(not_found(url));
            };
            let vars = match body() {
                Ok(b) => b,
                Err(e) => return reply(e),
            };
            start_instance(engine, process, vars, req.idempotency_key.as_deref())
        }
        ("POST", Some(("instances", rest))) if rest.ends_with("/resolve") => {
            let id = rest.trim_end_matches("/resolve");
            let body = match body() {
                Ok(b) => b,
                Err(e) => return reply(e),
            };
            reply(resolve(engine, id, &body, shown))
        }
        ("GET", Some(("instances", id))) if !id.is_empty() => reply(match engine.status(id) {
            Ok(state) => (200, state),
            Err(e @ EngineError::NoInstance(_)) => (404, json!({"error": e.to_string()})),
            Err(e) => failure(&e),
        }),
        _ => reply(not_found(url)),
    }
}

/// An error no request could help: `503` (send again) when the database
/// is out of reach for a moment (qflow connects again by itself), `500`
/// otherwise. `work` adds which database.
fn failure(e: &EngineError) -> (u16, Value) {
    if e.is_unavailable() {
        (
            503,
            json!({"error": format!("out of reach ({e}); qflow connects again by itself: send again shortly"), "store": "unavailable"}),
        )
    } else {
        (500, json!({"error": e.to_string()}))
    }
}

/// A JSON value's kind, as an error message names it.
fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// `POST /processes/<process>/instances`, once per `Idempotency-Key`.
fn start_instance(engine: &mut Engine, process: &str, vars: Value, key: Option<&str>) -> Reply {
    let started = match key {
        None => engine.start_process(process, vars).map(|id| (id, true)),
        Some(k) if k.is_empty() || k.len() > 255 => {
            return Reply::new((
                400,
                json!({"error": "Idempotency-Key: send 1 to 255 characters naming this start (a UUID, say)"}),
            ))
        }
        Some(k) => engine.start_process_once(process, vars, k),
    };
    match started {
        Ok((id, true)) => Reply::new((201, json!({"instance": id}))),
        Ok((id, false)) => {
            let mut r = Reply::new((201, json!({"instance": id})));
            r.headers.push(("Idempotent-Replayed", "true".into()));
            r
        }
        Err(e @ EngineError::NoProcess(_)) => Reply::new((404, json!({"error": e.to_string()}))),
        Err(e @ (EngineError::NotAnObject(_) | EngineError::MissingHandlers(_))) => {
            Reply::new((422, json!({"error": e.to_string()})))
        }
        Err(e @ EngineError::KeyReused { .. }) => {
            Reply::new((422, json!({"error": e.to_string()})))
        }
        Err(e) => Reply::new(failure(&e)),
    }
}

/// `{"node": …, "as": "succeeded|failed|retry", "variables": {…}}`: the
/// reconciliation of an unknown outcome.
fn resolve(
    engine: &mut Engine,
    id: &str,
    body: &Value,
    shown: Option<&OnDecision>,
) -> (u16, Value) {
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
    let deadline = Instant::now() + BUSY_WAIT;
    loop {
        match engine.resolve(id, node, how, vars.clone()) {
            Ok(d) => {
                if let Some(show) = shown {
                    (show.0)(id, &d);
                }
                let state = engine.status(id).unwrap_or(Value::Null);
                return (200, json!({"lines": d.lines, "state": state}));
            }
            Err(EngineError::Busy(_)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e @ EngineError::Busy(_)) => {
                return (503, json!({"verdict": "busy", "error": e.to_string()}))
            }
            Err(e @ EngineError::NoInstance(_)) => return (404, json!({"error": e.to_string()})),
            Err(e @ EngineError::NotAnObject(_)) => return (400, json!({"error": e.to_string()})),
            Err(e) => return failure(&e),
        }
    }
}

fn not_found(url: &str) -> (u16, Value) {
    (
        404,
        json!({"error": format!("no endpoint {url}: POST /correlations/<instance>/<node>, POST /processes/<process>/instances, GET /instances/<instance>, POST /instances/<instance>/resolve, GET /health, GET /ready")}),
    )
}

/// Bind the endpoint's listener.
pub(super) fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    TcpListener::bind(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_token_is_matched_in_any_case_of_the_scheme_and_exactly() {
        assert!(authorized(Some("Bearer s3cret"), "s3cret"));
        assert!(authorized(Some("bearer s3cret"), "s3cret"));
        assert!(authorized(Some("BEARER   s3cret "), "s3cret"));
        assert!(!authorized(Some("Bearer s3cre"), "s3cret"));
        assert!(!authorized(Some("Bearer s3cretx"), "s3cret"));
        assert!(!authorized(Some("Basic s3cret"), "s3cret"));
        assert!(!authorized(Some("Bearer"), "s3cret"));
        assert!(!authorized(None, "s3cret"));
    }

    #[test]
    fn a_blank_token_is_refused_and_surrounding_whitespace_is_not_part_of_it() {
        assert!(token_from_env(Some("   ".into())).is_err());
        assert!(token_from_env(Some(String::new())).is_err());
        assert_eq!(token_from_env(Some(" t \n".into())), Ok(Some("t".into())));
        assert_eq!(token_from_env(None), Ok(None));
    }
}
