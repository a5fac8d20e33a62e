//! `qflow serve --db DB [--handlers FILE]`: run every unfinished instance of
//! a database on the wall clock with real handlers, relay channel calls over
//! HTTP, and take counterparts' answers (and new instances) on an HTTP
//! endpoint. The contracts are in docs/handlers.md.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use qflow_engine::embed::{Engine, EngineError, Handlers, Time};
use qflow_engine::handlers::HandlersFile;
use qflow_engine::store::{Location, Store};
use serde_json::{json, Value};

use super::run::{json_line, Format};

mod endpoint;
pub(crate) use endpoint::{token_from_env, verdict_reply};

/// The environment variable holding the endpoint's token.
pub(crate) const TOKEN_ENV: &str = "QFLOW_SERVE_TOKEN";

/// Serve a database's instances with real handlers, on the wall clock.
#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The database (created if missing): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    /// The handlers file (TOML): a command or URL per q:task, a URL per channel.
    #[arg(long, value_name = "FILE")]
    pub handlers: Option<PathBuf>,
    /// Where the endpoint listens. Anything but a loopback address needs a
    /// token in the environment variable QFLOW_SERVE_TOKEN.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    pub listen: String,
    /// How long a request (head and body) may take to arrive, and each write
    /// of its answer; also how long a kept-alive connection may stay idle.
    #[arg(long, value_name = "DURATION", default_value = "PT10S", value_parser = positive_duration)]
    pub request_timeout: Duration,
    /// Connections the endpoint keeps open at once; one more is answered 503.
    /// Lowered to fit the open-file limit (ulimit -n).
    #[arg(long, value_name = "N", default_value_t = endpoint::DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
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
  POST /processes/<process>/instances    start an instance (body: its variables; header
                                         Idempotency-Key: the same key returns the same instance)
  GET  /instances/<instance>             the instance's state (qflow run's last line)
  POST /instances/<instance>/resolve     reconcile an unknown outcome:
                                         {\"node\": N, \"as\": \"succeeded|failed|retry\", \"variables\": {}}
  GET  /health

Limits: headers 16 KiB (431), a body 1 MiB (413), a request within --request-timeout
(408), --max-connections open at once (503 past it).

Exit status: 2 for an unreadable or invalid handlers file, a database that cannot be
opened, an address that cannot be listened on, or a missing or blank token; otherwise
it runs until stopped.";

pub(crate) fn run(args: Args) -> ExitCode {
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
    let token = match endpoint::token_from_env(std::env::var(TOKEN_ENV).ok()) {
        Ok(t) => t,
        Err(msg) => return fail(msg),
    };
    if !addr.ip().is_loopback() && token.is_none() {
        return fail(format!(
            "--listen {addr} is reachable from other machines: set {TOKEN_ENV} to a secret \
             (counterparts send it as `Authorization: Bearer <token>`), or listen on 127.0.0.1"
        ));
    }
    let listener = match endpoint::bind(addr) {
        Ok(l) => l,
        Err(e) => return fail(format!("--listen {addr}: {e}")),
    };
    let bound = listener
        .local_addr()
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
    let waker = engine.waker();
    let mut workers = Vec::with_capacity(endpoint::WORKERS);
    for worker in 0..endpoint::WORKERS {
        let mut endpoint = match open(&args.db, handlers.clone()) {
            Ok(e) => e,
            Err(e) => return fail(format!("--db {}: {e}", args.db)),
        };
        endpoint.set_owner(format!(
            "{}/http{worker}",
            qflow_engine::store::local_owner()
        ));
        workers.push(endpoint);
    }
    let (max_connections, lowered) = endpoint::fit_connections(args.max_connections as usize);
    if let Some(note) = lowered {
        eprintln!("note: {note}");
    }
    let mut ui = crate::cli::ui::Ui::new(args.db.clone(), token.clone(), true);
    ui.request_timeout = args.request_timeout;
    ui.waker = Some(waker.clone());
    // The log says when the database is out of reach and when it is back;
    // deciding stops meanwhile, serving does not (engine::embed::outage).
    {
        let shown = args.db.to_string();
        engine.on_store_outage(move |event| match event {
            qflow_engine::embed::OutageEvent::Retrying { error, tries, wait } => eprintln!(
                "warning: the database {shown} is out of reach ({error}): deciding waits, \
                 trying again in {:.1} s (try {tries}); attempts in flight go on, \
                 their outcomes are decided once it answers",
                wait.as_secs_f64()
            ),
            qflow_engine::embed::OutageEvent::Recovered { down_for, tries } => eprintln!(
                "note: the database {shown} answers again after {:.1} s ({tries} failed \
                 tr{}): deciding resumes",
                down_for.as_secs_f64(),
                if *tries == 1 { "y" } else { "ies" }
            ),
        });
    }
    // On PostgreSQL what other processes commit wakes the loop (LISTEN/
    // NOTIFY), and the log says so: one note per wake (the notifications
    // that arrived together are one), beside the decisions it leads to.
    if args.db.is_postgres() {
        let shown = args.db.to_string();
        engine.on_notified(move || {
            eprintln!(
                "note: woken by new work another process committed on {shown} (NOTIFY qflow_work)"
            )
        });
    }
    // Each move of a breaker (docs/outage.md, "Circuit breaker") is a line
    // of the log: what it did and why.
    {
        let format = args.format;
        engine.on_breaker(move |m| match format {
            Format::Human => eprintln!(
                "note: breaker {} {} -> {}: {}{}",
                m.dependency,
                m.from.as_str(),
                m.to.as_str(),
                m.reason,
                m.release
                    .map(|r| format!(" (release ramp {r})"))
                    .unwrap_or_default()
            ),
            Format::Json => println!(
                "{}",
                json_line(
                    &json!({
                        "breaker": m.dependency,
                        "from": m.from.as_str(),
                        "to": m.to.as_str(),
                        "reason": m.reason,
                        "release": m.release,
                        "at_ms": m.at_ms,
                    }),
                    &["breaker"]
                )
            ),
        });
    }
    let config = endpoint::Config {
        health: Some(engine.store_health()),
        db: args.db.to_string(),
        token,
        request_timeout: args.request_timeout,
        max_connections,
        waker: Some(waker),
        ui: Some(std::sync::Arc::new(ui)),
        // The endpoint's decisions (answers, reconciliations) are printed
        // as the loop's are: the log of a serve is every decision it took.
        on_decision: Some({
            let format = args.format;
            endpoint::OnDecision(std::sync::Arc::new(move |instance: &str, d: &_| {
                print(format, instance, d)
            }))
        }),
    };
    endpoint::start(listener, workers, config);
    match args.format {
        Format::Human => eprintln!("listening on {base} (serving {})", args.db),
        Format::Json => println!(
            "{}",
            json_line(&json!({"status": "listening", "url": base}), &["status"])
        ),
    }
    // Decisions on this thread; attempts and deliveries on lanes. The
    // loop wakes for a lane's outcome, a request on the endpoint, the next
    // due timer or delivery, on PostgreSQL another process's new work, and
    // at the latest every safety poll.
    engine.set_concurrency(args.concurrency as usize);
    let format = args.format;
    let poll = if args.db.is_postgres() {
        SAFETY_POLL_NOTIFIED
    } else {
        SAFETY_POLL
    };
    let served = engine.serve_steps(poll, |_, steps| {
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

/// How often the serving loop looks at a SQLite database when nothing woke
/// it: SQLite sends no notifications, so what this process did not do
/// itself (another `serve` on the same file, `qflow respond`, an
/// operator's command) is seen within this.
const SAFETY_POLL: Duration = Duration::from_millis(250);

/// The same on PostgreSQL, where other processes' new work wakes the loop
/// by `NOTIFY`: only a safety net for a notification lost with a dropped
/// connection.
const SAFETY_POLL_NOTIFIED: Duration = Duration::from_secs(2);

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

/// An ISO-8601 duration longer than zero (`PT10S`).
fn positive_duration(text: &str) -> Result<Duration, String> {
    match qflow_engine::duration::parse(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("must be longer than zero".into()),
        Err(e) => Err(format!("an ISO-8601 duration such as PT10S: {e}")),
    }
}
