//! `qflow console`: the terminal inspector (the `qflow-tui` crate), on one
//! local instance of a model or on an existing database.

use std::path::PathBuf;
use std::process::ExitCode;

use qflow_engine::runtime::session::{scenario_beside, ScenarioChoice};
use qflow_engine::store::Location;
use qflow_tui::engine_backend::{EngineBackend, StartFailure};
use qflow_tui::{script, ui, App};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The model to run, one decision per key press. Omit it and give --db
    /// to inspect the instances of an existing database (FAILED first).
    pub model: Option<PathBuf>,
    /// A scenario (JSON, docs/run.md) scripting handlers, counterparts and
    /// deliveries. Default: the scenario beside the model
    /// (<dir>/scenarios/<stem>.json), as `qflow run` uses it.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Ignore a scenario beside the model: every task succeeds.
    #[arg(long, conflicts_with = "scenario")]
    pub no_scenario: bool,
    /// The database: a SQLite file or a postgres:// URL (default: a
    /// temporary SQLite file). With MODEL, an unfinished instance of the
    /// same model in it is resumed. Without MODEL and --db: $QFLOW_DB,
    /// else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Option<Location>,
    /// Feed these keys without a terminal and print the last frame (scripts,
    /// tests): every character is a key; <enter>, <esc>, <tab>, <space> name others.
    #[arg(long, value_name = "KEYS")]
    pub headless: Option<String>,
    /// Who the pauses and quarantines made from an attached console are
    /// recorded as (default: the account and host it runs as, user@host).
    #[arg(long, value_name = "NAME")]
    pub by: Option<String>,
    /// The frame size for --headless, as WIDTHxHEIGHT.
    #[arg(long, value_name = "WxH", default_value = "100x30")]
    pub size: String,
}

fn usage(message: &str) -> ExitCode {
    eprintln!("qflow console: {message}");
    ExitCode::from(2)
}

pub(crate) fn run(args: Args) -> ExitCode {
    // Exit codes as in every subcommand: 1 the model is refused, 2 an
    // unreadable file, a bad scenario, a database that cannot be opened.
    // Without a model, the console attaches to a database: the one named
    // outside the command line when --db is not given.
    let db = match super::ops::db_or_default(args.db.as_ref()) {
        Ok(db) => db,
        Err(m) => return usage(&m),
    };
    let backend = match (&args.model, &db) {
        (Some(model), db) => {
            let choice = match (&args.scenario, args.no_scenario) {
                (Some(p), _) => ScenarioChoice::File(p.clone()),
                (None, true) => ScenarioChoice::None,
                (None, false) => {
                    if let Some(p) = scenario_beside(model) {
                        eprintln!(
                            "using scenario {} (beside the model; --no-scenario to run without)",
                            p.display()
                        );
                    }
                    ScenarioChoice::BesideModel
                }
            };
            EngineBackend::open(model, &choice, db.as_ref()).map_err(|e| {
                let code = if e.failure == StartFailure::Refused { 1 } else { 2 };
                (e.message, code)
            })
        }
        (None, Some(db)) => {
            if args.scenario.is_some() || args.no_scenario {
                return usage("--scenario needs a MODEL to run; --db alone inspects a database read-only");
            }
            EngineBackend::attach(db.clone()).map_err(|e| (e, 2))
        }
        (None, None) => {
            return usage("give a MODEL to run (qflow console samples/dbg08-charge.bpmn), or --db DB (a SQLite file or a postgres:// URL; or QFLOW_DB) to inspect a database")
        }
    };
    let mut backend = match backend {
        Ok(b) => b,
        Err((e, code)) => {
            eprintln!("qflow console: {e}");
            return ExitCode::from(code);
        }
    };
    match args.by.as_deref().map(str::trim) {
        Some("") => return usage("--by needs a name (leave it out to record user@host)"),
        Some(by) if args.model.is_some() => {
            return usage(&format!(
                "--by {by}: only an attached console (--db without a MODEL) pauses or quarantines"
            ))
        }
        Some(by) => backend.act_as(qflow_engine::store::contain::Actor::new(by)),
        None => {}
    }
    let mut app = if args.model.is_some() {
        App::new()
    } else {
        App::attached()
    };
    if let Some(r) = backend.opening() {
        app.report = r;
    }
    match &args.headless {
        Some(keys) => {
            let Some((w, h)) = parse_size(&args.size) else {
                return usage(&format!(
                    "--size {}: write WIDTHxHEIGHT, e.g. 100x30",
                    args.size
                ));
            };
            let keys = match script::parse(keys) {
                Ok(k) => k,
                Err(e) => return usage(&e),
            };
            app.refresh(&mut backend);
            script::feed(&mut app, &mut backend, &keys);
            print!("{}", ui::render_text(&app, w, h));
            ExitCode::SUCCESS
        }
        None if !std::io::IsTerminal::is_terminal(&std::io::stdout()) => usage(
            "the console needs a terminal: run it in one, or script it with --headless KEYS (e.g. --headless '      ')",
        ),
        None => match qflow_tui::terminal::run(&mut backend, app) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("qflow console: terminal error: {e}");
                ExitCode::from(1)
            }
        },
    }
}

fn parse_size(s: &str) -> Option<(u16, u16)> {
    let (w, h) = s.split_once(['x', 'X'])?;
    let (w, h) = (w.trim().parse().ok()?, h.trim().parse().ok()?);
    (w > 0 && h > 0).then_some((w, h))
}
