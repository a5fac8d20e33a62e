//! `qflow respond CORRELATION --db DB`: a counterpart's answer from the
//! command line, decided exactly as `qflow serve`'s endpoint decides one
//! (docs/handlers.md): the verdict of the decision table, as JSON.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use qflow_engine::embed::{Engine, EngineError, Time};
use qflow_engine::runtime::driver::Verdict;
use qflow_engine::store::explain::connect_error;
use qflow_engine::store::{Location, Store};
use serde_json::{json, Value};

use super::ops::Format;
use super::run::json_line;

/// Answer a channel call by its correlation (`instance/node`).
#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The correlation: `instance/node` (a relayed request's Qflow-Correlation).
    pub correlation: String,
    /// The database holding the instance: a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    /// The idempotency key of the request answered (default: the live attempt's).
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// The answer, a JSON object (default `{}`).
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub body: String,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

const AFTER_HELP: &str = "\
Exit status: 0 accepted (the flow resumed with the answer); 4 any other verdict
(retry-pending, superseded, unknown-request, not-waiting, failed, no-such-instance,
quarantined, busy), nothing changed; 2 bad arguments, a database that does not exist, a store error.";

pub(crate) fn run(args: Args) -> ExitCode {
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        if args.format == Format::Json {
            let rec = json!({"status": "error", "message": msg});
            println!("{}", json_line(&rec, &["status", "message"]));
        }
        ExitCode::from(2)
    };
    let body: Value = match serde_json::from_str(&args.body) {
        Ok(v @ Value::Object(_)) => v,
        Ok(other) => return fail(format!("--body: expected a JSON object, found {other}")),
        Err(e) => return fail(format!("--body: not JSON: {e}")),
    };
    if args.db.sqlite_path().is_some_and(|p| !p.exists()) {
        return fail(format!("--db {}: no such database", args.db));
    }
    let mut engine = match Store::connect_existing(&args.db).map(Engine::with_store) {
        Ok(e) => e,
        Err(e) => return fail(format!("--db {}", connect_error(&args.db, &e))),
    };
    engine.set_time(Time::System);
    // A serving process may hold the instance's claim for a moment.
    let deadline = Instant::now() + Duration::from_secs(3);
    let verdict = loop {
        match engine.respond(&args.correlation, args.key.as_deref(), body.clone()) {
            Ok(v) => break Some(v),
            Err(EngineError::Busy(_)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(EngineError::Busy(_)) => break None,
            Err(e) => return fail(format!("{}: {e}", args.correlation)),
        }
    };
    let (_, reply) = match &verdict {
        Some(v) => super::serve::verdict_reply(v),
        None => (
            503,
            json!({"verdict": "busy", "message": "the instance stayed claimed; try again"}),
        ),
    };
    match args.format {
        Format::Json => println!("{}", json_line(&reply, &["verdict"])),
        Format::Human => {
            let word = reply["verdict"].as_str().unwrap_or("?");
            match reply["message"].as_str() {
                Some(m) => println!("{word}: {m}"),
                None => println!("{word}"),
            }
        }
    }
    if matches!(verdict, Some(Verdict::Accepted)) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(4)
    }
}
