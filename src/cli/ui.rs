//! `qflow ui --db DB [--listen ADDR]`: the web inspector (docs/inspector.md).
//! Its pages are also served by `qflow serve` under `/ui/`, with the
//! actions.
//!
//! The stack: server-rendered HTML (maud templates, escaping by default),
//! one embedded style sheet and one embedded script (live updates by
//! server-sent events), over the same kind of HTTP layer as `qflow serve`'s
//! endpoint: std's blocking sockets, httparse for the head, a thread per
//! connection bounded in number, size and time. The engine is synchronous
//! and each page is a handful of store reads, so an async runtime would only
//! add a bridge; a connection thread opens the store, reads, renders and
//! answers. See docs/inspector.md, "Why this stack".

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use qflow_engine::store::{Location, Store};

pub(crate) mod actions;
pub(crate) mod http;
pub(crate) mod pages;

use http::{Reply, Request};

/// The address `qflow ui` listens on unless `--listen` says otherwise.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:7879";

/// Connections open at once, at most (one more is closed at once).
const MAX_CONNECTIONS: usize = 128;

/// How often a live page's stream looks for a change.
const LIVE_EVERY: Duration = Duration::from_millis(1000);

/// How long one event stream stays open; the browser opens the next.
const STREAM_FOR: Duration = Duration::from_secs(300);

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    /// Where to listen. Another address than loopback needs
    /// QFLOW_SERVE_TOKEN (the browser sends it once as `?token=`).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    pub listen: String,
    /// Offer the operator's actions (pause, quarantine, migrate, resolve)
    /// on the pages, each with its preview and a confirmation. Without it
    /// the inspector only reads.
    #[arg(long)]
    pub allow_actions: bool,
}

/// What every connection of the inspector shares.
pub(crate) struct Ui {
    pub db: Location,
    /// The database as the header shows it (a URL's password left out).
    pub db_shown: String,
    /// The token a browser must present (bearer header or cookie).
    pub token: Option<String>,
    /// Whether the actions are offered.
    pub actions: bool,
    /// The secret every form carries back (cross-site requests cannot read it).
    pub csrf: String,
    /// Where the pages live: `/ui`.
    pub prefix: &'static str,
    pub request_timeout: Duration,
    /// Prompts `qflow serve`'s loop after an action.
    pub waker: Option<qflow_engine::embed::Waker>,
}

impl std::fmt::Debug for Ui {
    /// Without its secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ui")
            .field("db", &self.db_shown)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("actions", &self.actions)
            .finish_non_exhaustive()
    }
}

impl Ui {
    pub(crate) fn new(db: Location, token: Option<String>, actions: bool) -> Ui {
        Ui {
            db_shown: db.to_string(),
            db,
            token,
            actions,
            csrf: http::secret(),
            prefix: "/ui",
            request_timeout: Duration::from_secs(10),
            waker: None,
        }
    }

    fn open(&self) -> Result<Store, String> {
        super::ops::open_for_reading(&self.db)
    }

    fn open_for_writing(&self) -> Result<Store, String> {
        super::ops::open_existing(&self.db)
    }
}

pub(crate) fn run(args: Args) -> ExitCode {
    let addr: SocketAddr = match args.listen.parse() {
        Ok(a) => a,
        Err(_) => {
            eprintln!(
                "qflow ui: --listen {}: write an address and port, such as {DEFAULT_LISTEN}",
                args.listen
            );
            return ExitCode::from(2);
        }
    };
    let token = match super::serve::token_from_env(std::env::var(super::serve::TOKEN_ENV).ok()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("qflow ui: {e}");
            return ExitCode::from(2);
        }
    };
    if !addr.ip().is_loopback() && token.is_none() {
        eprintln!(
            "qflow ui: --listen {addr} is not a loopback address: set {} to a secret first \
             (a browser opens http://{addr}/ui/?token=<secret> once), or listen on 127.0.0.1",
            super::serve::TOKEN_ENV
        );
        return ExitCode::from(2);
    }
    // The database must exist and be readable before anything listens.
    if let Err(e) = super::ops::open_for_reading(&args.db) {
        eprintln!("qflow ui: {e}");
        return ExitCode::from(2);
    }
    let listener = match TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("qflow ui: cannot listen on {addr}: {e}");
            return ExitCode::from(2);
        }
    };
    let bound = listener.local_addr().unwrap_or(addr);
    let ui = Arc::new(Ui::new(args.db, token, args.allow_actions));
    println!(
        "qflow ui: http://{bound}/ui/ ({}) over {}; Ctrl-C stops it",
        if ui.actions {
            "actions on"
        } else {
            "read-only"
        },
        ui.db_shown
    );
    accept(&listener, &ui);
    ExitCode::SUCCESS
}

/// `qflow ui`'s accepting loop: a thread per connection, at most
/// [`MAX_CONNECTIONS`]; a failing accept is retried after a pause.
fn accept(listener: &TcpListener, ui: &Arc<Ui>) {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            drop(stream);
            continue;
        }
        let (ui, open) = (ui.clone(), open.clone());
        let spawned = std::thread::Builder::new()
            .name("qflow-ui".into())
            .spawn(move || {
                serve_connection(stream, Vec::new(), &ui);
                open.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            eprintln!("qflow ui: no thread for a connection; it was closed");
        }
    }
}

/// Answer one connection's requests (`pending`: bytes already read from
/// it, such as the head `qflow serve`'s endpoint read to route it here).
pub(crate) fn serve_connection(mut stream: TcpStream, mut pending: Vec<u8>, ui: &Ui) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(ui.request_timeout));
    loop {
        let (request, keep_alive) =
            match http::read_request(&mut stream, &mut pending, ui.request_timeout) {
                Ok(r) => r,
                Err(http::ReadError::Closed | http::ReadError::Timeout) => return,
                Err(http::ReadError::Answer(status, message)) => {
                    let reply = Reply::html(status, pages::problem(ui, "Bad request", &message));
                    let _ = http::write_reply(&mut stream, &reply, false);
                    return;
                }
            };
        if request.method == "GET" && request.path == format!("{}/events", ui.prefix) {
            if let Err(reply) = authorize(ui, &request) {
                let _ = http::write_reply(&mut stream, &reply, false);
                return;
            }
            events(stream, &request, ui);
            return;
        }
        let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| route(ui, &request)))
            .unwrap_or_else(|_| {
                Reply::html(
                    500,
                    pages::problem(
                        ui,
                        "Internal error",
                        "answering this request failed inside qflow (a bug): see standard error",
                    ),
                )
            });
        if http::write_reply(&mut stream, &reply, keep_alive).is_err() || !keep_alive {
            return;
        }
    }
}

/// The token, when there is one: a bearer header, the cookie, or a
/// `?token=` that sets the cookie (and is taken out of the address).
fn authorize(ui: &Ui, req: &Request) -> Result<(), Reply> {
    let Some(token) = &ui.token else {
        // Without a token the server is on loopback: a page may only be
        // asked for by a loopback name, so another site whose name is made
        // to resolve to 127.0.0.1 (DNS rebinding) reads nothing, and
        // cannot read a form's secret to confirm an action with.
        let host = req.header("host").unwrap_or_default();
        if !loopback_host(host) {
            return Err(Reply::html(
                403,
                pages::problem(
                    ui,
                    "Refused",
                    &format!(
                        "a request for the host name `{host}`: without a token ({}) the inspector answers loopback names only (127.0.0.1, localhost, [::1])",
                        super::serve::TOKEN_ENV
                    ),
                ),
            ));
        }
        return Ok(());
    };
    let t = token.as_bytes();
    let bearer = req
        .header("authorization")
        .and_then(|v| v.split_once(' '))
        .filter(|(s, _)| s.eq_ignore_ascii_case("bearer"))
        .is_some_and(|(_, g)| http::same_secret(g.trim().as_bytes(), t));
    let cookie = req
        .cookie(http::TOKEN_COOKIE)
        .is_some_and(|c| http::same_secret(c.as_bytes(), t));
    if bearer || cookie {
        return Ok(());
    }
    if let Some(given) = req.query.get("token") {
        if http::same_secret(given.as_bytes(), t) && req.method == "GET" {
            let rest: Vec<String> = req
                .query
                .iter()
                .filter(|(k, _)| *k != "token")
                .map(|(k, v)| format!("{k}={}", http::encode(v)))
                .collect();
            let to = if rest.is_empty() {
                req.path.clone()
            } else {
                format!("{}?{}", req.path, rest.join("&"))
            };
            let mut r = Reply::redirect(to);
            r.headers.push((
                "Set-Cookie",
                format!(
                    "{}={token}; Path={}; HttpOnly; SameSite=Strict",
                    http::TOKEN_COOKIE,
                    ui.prefix
                ),
            ));
            return Err(r);
        }
    }
    Err(Reply::html(
        401,
        pages::problem(
            ui,
            "The token, please",
            &format!(
                "This inspector takes the server's token ({}): open {}/?token=<token> once (the browser keeps it as a cookie), or send `Authorization: Bearer <token>`.",
                super::serve::TOKEN_ENV,
                ui.prefix
            ),
        ),
    ))
}

/// Whether a `Host` header names this machine's loopback (any port).
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(n, _)| n),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Refuse a state-changing request that may come from another site: it
/// must carry the form's secret, and its Origin (when sent) must be this
/// host, its Sec-Fetch-Site (when sent) same-origin.
fn same_site(ui: &Ui, req: &Request) -> Result<(), String> {
    if let Some(site) = req.header("sec-fetch-site") {
        if !matches!(site, "same-origin" | "none") {
            return Err(format!("a cross-site request (Sec-Fetch-Site: {site})"));
        }
    }
    if let Some(origin) = req.header("origin") {
        let host = req.header("host").unwrap_or_default();
        let ok = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .is_some_and(|o| o.eq_ignore_ascii_case(host));
        if !ok {
            return Err(format!(
                "a request from another origin ({origin}, not this host {host})"
            ));
        }
    }
    let given = req
        .form
        .get("csrf")
        .map(String::as_bytes)
        .unwrap_or_default();
    if !http::same_secret(given, ui.csrf.as_bytes()) {
        return Err("a form without this page's secret (reload the page and confirm again)".into());
    }
    Ok(())
}

fn route(ui: &Ui, req: &Request) -> Reply {
    let p = ui.prefix;
    if req.path == "/" || req.path == p {
        return Reply::redirect(format!("{p}/"));
    }
    let Some(rest) = req.path.strip_prefix(p) else {
        return Reply::html(
            404,
            pages::problem(
                ui,
                "Not found",
                &format!("no page {}: the inspector is at {p}/", req.path),
            ),
        );
    };
    match (req.method.as_str(), rest) {
        ("GET", "/app.css") => {
            return Reply::asset("text/css; charset=utf-8", include_str!("ui/assets/app.css"))
        }
        ("GET", "/app.js") => {
            return Reply::asset(
                "text/javascript; charset=utf-8",
                include_str!("ui/assets/app.js"),
            )
        }
        _ => {}
    }
    if let Err(reply) = authorize(ui, req) {
        return reply;
    }
    let store = match ui.open() {
        Ok(s) => s,
        Err(e) => return Reply::html(500, pages::problem(ui, "The store", &e)),
    };
    let store_error = |e: &dyn std::fmt::Display| {
        Reply::html(
            500,
            pages::problem(ui, "The store", &format!("the store {}: {e}", ui.db_shown)),
        )
    };
    match (req.method.as_str(), rest) {
        ("GET", "/") => match pages::fleet_page(ui, &store) {
            Ok(html) => Reply::html(200, html),
            Err(e) => store_error(&e),
        },
        ("GET", "/fleet.json") => match pages::fleet_json(&store) {
            Ok(v) => Reply::json(200, v.to_string()),
            Err(e) => store_error(&e),
        },
        ("GET", "/instances") => match pages::ListQuery::parse(req) {
            Err(e) => Reply::html(400, pages::problem(ui, "Instances", &e)),
            Ok(q) => match pages::instances_page(ui, &store, &q) {
                Ok(html) => Reply::html(200, html),
                Err(e) => store_error(&e),
            },
        },
        ("GET", r) if r.starts_with("/instances/") => {
            let id = &r["/instances/".len()..];
            match qflow_engine::inspect::fleet::instance(&store, id) {
                Ok(ins) => Reply::html(200, pages::instance_page(ui, &store, &ins)),
                Err(qflow_engine::runtime::RunError::Store(
                    qflow_engine::store::StoreError::NoInstance(_),
                )) => Reply::html(
                    404,
                    pages::problem(
                        ui,
                        "No such instance",
                        &format!("no instance {id} in {}", ui.db_shown),
                    ),
                ),
                Err(e) => store_error(&e),
            }
        }
        (method, r) if r.starts_with("/actions/") => {
            let action = &r["/actions/".len()..];
            if !ui.actions {
                return Reply::html(
                    403,
                    pages::problem(
                        ui,
                        "Read-only",
                        "This inspector only reads: the actions are on `qflow serve`'s /ui/ pages, or `qflow ui --allow-actions`.",
                    ),
                );
            }
            drop(store);
            match method {
                "GET" => actions::preview(ui, action, req),
                "POST" => {
                    if let Err(why) = same_site(ui, req) {
                        return Reply::html(
                            403,
                            pages::problem(
                                ui,
                                "Refused",
                                &format!("Refused: {why}. Nothing was changed."),
                            ),
                        );
                    }
                    let reply = actions::apply(ui, action, req);
                    if let Some(w) = &ui.waker {
                        w.wake();
                    }
                    reply
                }
                _ => Reply::html(
                    405,
                    pages::problem(ui, "Method", "GET a preview, POST its confirmation"),
                ),
            }
        }
        ("GET", _) => Reply::html(
            404,
            pages::problem(ui, "Not found", &format!("no page {}", req.path)),
        ),
        _ => Reply::html(
            405,
            pages::problem(
                ui,
                "Method",
                &format!(
                    "{} {}: the pages only take GET (and POST for a confirmed action)",
                    req.method, req.path
                ),
            ),
        ),
    }
}

/// A live page's event stream: the page's live fragment, sent whenever it
/// differs from the last one sent (looked at every [`LIVE_EVERY`], or
/// after twice as long as the last look took, whichever is longer).
fn events(mut stream: TcpStream, req: &Request, ui: &Ui) {
    if http::start_events(&mut stream).is_err() {
        return;
    }
    let started = Instant::now();
    let mut last: Option<String> = None;
    let mut quiet = 0u32;
    // One connection for the stream's life (each look reads afresh).
    let mut store: Option<Store> = None;
    while started.elapsed() < STREAM_FOR {
        let look = Instant::now();
        if store.is_none() {
            store = ui.open().ok();
        }
        let fragment = store.as_ref().and_then(|store| match req.q("view") {
            Some("instance") => {
                let id = req.q("id")?;
                qflow_engine::inspect::fleet::instance(store, id)
                    .ok()
                    .map(|ins| pages::instance_live(&ins, store).into_string())
            }
            _ => pages::fleet_live(ui, store).ok().map(|m| m.into_string()),
        });
        if fragment.is_none() {
            // Read again on a fresh connection next time.
            store = None;
        }
        let sent = match fragment {
            Some(f) if last.as_deref() != Some(f.as_str()) => {
                let r = http::send_event(&mut stream, "fragment", &f);
                last = Some(f);
                quiet = 0;
                r
            }
            _ => {
                quiet += 1;
                if quiet % 15 == 0 {
                    http::send_keepalive(&mut stream)
                } else {
                    Ok(())
                }
            }
        };
        if sent.is_err() {
            return;
        }
        // A large store's look costs more: never spend more than a third
        // of the time looking.
        std::thread::sleep(LIVE_EVERY.max(look.elapsed() * 2));
    }
}
