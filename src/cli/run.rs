//! `qflow run MODEL`: one local instance on the embedded store, every decision
//! printed as it is taken. The output formats are documented in docs/run.md.

use qflow_engine::local::LocalRunExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use qflow_engine::inspect::{token_words, End, FinalState, Waiting};
use qflow_engine::instance::history::{
    Attempt, AttemptOutcome, Delivered, HistoryEvent, Line, Park, Secs, Then, Verdict, WaitFor,
};
use qflow_engine::local::{final_state, migrate_instance};
use qflow_engine::runtime::clock::{Clock, SystemClock, VirtualClock};
use qflow_engine::runtime::driver::{
    Decision, RunError, Stop, DEFAULT_HORIZON, MAX_RETURNS_TO_A_STATE,
};
use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::outcome::{unfinished_instance_of, Expectation};
use qflow_engine::runtime::replica::Replica;
use qflow_engine::runtime::scenario::{ExternalEvent, Resolution, Scenario};
use qflow_engine::runtime::session::{
    load_scenario as session_scenario, ScenarioChoice, Session, SessionDb, SessionError,
};
use qflow_engine::runtime::{scenario_check, LocalRun, Status};
use qflow_engine::store::{Location, Store, StoreError};
use qflow_engine::text::counted;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// One aligned line per decision, then the final state.
    Human,
    /// One JSON object per line (docs/run.md); the last line is the final state.
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ClockKind {
    /// Time skips to the next due timer: a 13-hour schedule runs in milliseconds.
    Virtual,
    /// The wall clock: the run waits (between steps, never inside one) for due timers.
    System,
}

/// Run one local instance of a model (see docs/run.md for every format).
#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The BPMN model to run.
    pub model: PathBuf,
    /// Which executable process of the document to run, by its id; needed
    /// when the document has more than one (the run is refused otherwise,
    /// naming them).
    #[arg(long, value_name = "ID")]
    pub process: Option<String>,
    /// A scenario (JSON) scripting handlers and external events (docs/run.md).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Ignore a scenario beside the model: every task succeeds.
    #[arg(long, conflicts_with = "scenario")]
    pub no_scenario: bool,
    /// Real handlers instead of a scenario: a handlers file (TOML) mapping each
    /// q:task to a command or URL and each channel to a URL (docs/handlers.md).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["scenario", "no_scenario", "replica"])]
    pub handlers: Option<PathBuf>,
    /// With --handlers: the new instance's variables, a JSON object.
    #[arg(long, value_name = "JSON", requires = "handlers")]
    pub variables: Option<String>,
    /// The database: a SQLite file (created if missing) or a postgres:// URL.
    /// Default: a temporary SQLite file.
    #[arg(long, value_name = "DB")]
    pub db: Option<Location>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Reconcile an unknown outcome of NODE: succeeded (the effect happened), failed
    /// (it did not; fail the instance) or retry (it did not; run the next attempt now).
    /// Needs --db holding the unfinished instance.
    #[arg(long, value_name = "NODE=AS", requires = "db")]
    pub resolve: Vec<String>,
    /// Exit 3 unless the run ends this way: completed, failed[:CODE] or
    /// waiting[:WHAT] (WHAT: reconciliation, response, retry, timer, boundary, or a code).
    #[arg(long, value_name = "OUTCOME")]
    pub expect: Option<String>,
    /// Stop after this much virtual time since the instance started (2h, 5m,
    /// or ISO-8601: PT2H); the instance stays parked and a later --db run resumes it.
    /// Without it, a virtual-clock run stops 30 days past where it began.
    #[arg(long, value_name = "DURATION")]
    pub until: Option<String>,
    #[arg(long, value_enum, default_value = "virtual")]
    pub clock: ClockKind,
    /// Before running, migrate this instance of --db (unfinished, or FAILED: the
    /// repair) onto MODEL; its counters travel with their node. Then run it.
    /// (Kept for existing scripts: `qflow migrate` plans and applies a
    /// repair, `qflow resume` continues the instance.)
    #[arg(long, value_name = "INSTANCE", requires = "db")]
    pub migrate: Option<String>,
    /// With --migrate: node OLD of the old deployment is NEW in MODEL.
    #[arg(long = "map", value_name = "OLD=NEW", requires = "migrate")]
    pub map: Vec<String>,
    /// With --migrate: start the attempt counters over instead of carrying
    /// the burned budget.
    #[arg(long, requires = "migrate")]
    pub reset_budget: bool,
    /// Serve every unfinished instance in --db as one replica among several
    /// processes sharing the file (claims arbitrate): poll ready instances and
    /// due timers, decide, until nothing is left. Virtual time per instance.
    #[arg(long, requires = "db", conflicts_with_all = ["migrate", "resolve", "until"])]
    pub replica: bool,
    /// Append one line per handler run (`instance node attempt timer`) to FILE.
    #[arg(long, value_name = "FILE")]
    pub effects_log: Option<PathBuf>,
    /// With --replica: append one line per lost race (`instance version why`)
    /// to FILE, to count the events the replicas contended for.
    #[arg(long, value_name = "FILE", requires = "replica")]
    pub races_log: Option<PathBuf>,
}

const AFTER_HELP: &str = "\
Scenario: without --scenario, a scenario beside the model at <dir>/scenarios/<stem>.json
is used when it exists; --no-scenario runs without one (every task succeeds).

Resume: with --db pointing at a database that holds an unfinished instance of the same
model (same source hash), that instance is resumed, not a second one started.

Horizon: on the virtual clock a run stops 30 days of virtual time past where it began
(--until sets another), or when the instance has come back to the same state 100 times;
it says so on stderr and in the final line (\"stopped\"), and the instance stays parked.

Unknown outcomes: an attempt whose effect may have happened is never retried blindly;
the node waits for reconciliation:
  qflow run MODEL --db FILE --resolve NODE=succeeded|failed|retry
(or a scenario event {\"resolve\": NODE, \"as\": ...}).

Exit status: 0 when the run ends (completed, failed or waiting; with --expect, as
expected), 1 when the model is refused (load errors), 2 for unreadable files, bad
scenarios or arguments, and store errors, 3 when the run ended otherwise than --expect.
With --format json every error is also a JSON record on stdout.";

/// What went wrong before or while running, for the JSON record's `error`.
#[derive(Debug, Clone, Copy)]
enum Why {
    Usage,
    Unreadable,
    Scenario,
    Store,
    /// Refused by the state of the store (a quarantine): exit 4.
    Refused,
}

impl Why {
    fn as_str(self) -> &'static str {
        match self {
            Why::Usage => "usage",
            Why::Unreadable => "unreadable",
            Why::Scenario => "scenario",
            Why::Store => "store",
            Why::Refused => "refused",
        }
    }
}

/// Report an error that ends the run (exit 2): `error: …` on stderr, and with
/// `--format json` a record `{"status":"error","error":…,"message":…}` on
/// stdout, so a consumer of the JSON lines never meets an empty stdout.
fn fail(format: Format, why: Why, msg: impl std::fmt::Display) -> ExitCode {
    let msg = msg.to_string();
    eprintln!("error: {msg}");
    if format == Format::Json {
        let rec = json!({"status": "error", "error": why.as_str(), "message": msg});
        println!("{}", json_line(&rec, &["status", "error", "message"]));
    }
    ExitCode::from(if matches!(why, Why::Refused) { 4 } else { 2 })
}

/// A run the store stopped: a quarantined instance is refused by the
/// store's state (exit 4, as resuming a FAILED one is), with the command
/// that releases it; any other store error is exit 2.
fn store_fail(format: Format, e: RunError, db: Option<&str>) -> ExitCode {
    match &e {
        RunError::Store(StoreError::Quarantined(id)) => {
            let db = db.map(|d| format!(" --db {d}")).unwrap_or_default();
            fail(
                format,
                Why::Refused,
                format!(
                    "instance {id} is quarantined: nothing runs it until `qflow release {id}{db}`"
                ),
            )
        }
        _ => fail(format, Why::Store, e),
    }
}

pub(crate) fn run(args: Args) -> ExitCode {
    let format = args.format;
    let shown = args.model.display().to_string();
    let bytes = match std::fs::read(&args.model) {
        Ok(b) => b,
        Err(e) => return fail(format, Why::Unreadable, format!("cannot read {shown}: {e}")),
    };
    // The model's configuration files decide which modelling rules refuse it,
    // exactly as `qflow check` judges it.
    let config = qflow_engine::config::Config::for_model(&args.model);
    let (text, analysis) = qflow_engine::analyze_bytes_with(&bytes, &config.settings);
    let refusals: Vec<&qflow_engine::Diagnostic> = analysis.refusals().collect();
    if !refusals.is_empty() || analysis.definitions.is_none() {
        let by = config.configured(refusals.iter().copied());
        return refuse(format, &shown, &text, &refusals, by.as_deref());
    }
    let mut defs = analysis.definitions.expect("checked above");
    // One process of several (`--process`), or the document's only one; a
    // document with several and no `--process` is refused here, before a
    // scenario check could blame the other process's tasks.
    match &args.process {
        Some(id) => match Graph::choose_process(&defs, id) {
            Ok(only) => defs = only,
            Err(e) => return fail(format, Why::Usage, format!("--process {id}: {}", e.message)),
        },
        // (A document with none is reported when the run opens it.)
        None if defs.executable_processes().nth(1).is_some() => {
            if let Err(e) = Graph::executable_process(&defs, None) {
                return fail(format, Why::Usage, format!("{shown}: {}", e.message));
            }
        }
        None => {}
    }
    // A model the runtime cannot execute is reported when the run opens it.
    let graph = Graph::compile(&defs).ok();
    let expect = match args.expect.as_deref().map(Expectation::parse) {
        None => None,
        Some(Ok(e)) => Some(e),
        Some(Err(m)) => return fail(format, Why::Usage, format!("--expect {m}")),
    };
    let world = match &args.handlers {
        Some(path) => match load_handlers(&args, path, graph.as_ref()) {
            Ok(w) => w,
            Err(code) => return code,
        },
        None => match load_scenario(&args, graph.as_ref()) {
            Ok(s) => World::Scenario(s),
            Err(code) => return code,
        },
    };
    let mut resolves = Vec::new();
    for r in &args.resolve {
        match parse_resolve(r, graph.as_ref()) {
            Ok(e) => resolves.push(e),
            Err(m) => return fail(format, Why::Usage, m),
        }
    }
    let until = match &args.until {
        None => None,
        Some(u) => match qflow_engine::duration::parse_input(u) {
            Ok(d) => Some(d),
            Err(e) => return fail(format, Why::Usage, format!("--until `{u}`: {e}")),
        },
    };
    // QFLOW_DB (or qflow.toml's db) when --db is not given, as for every
    // command that takes --db (docs/cli.md).
    let chosen = match super::ops::db_or_default(args.db.as_ref()) {
        Ok(db) => db,
        Err(m) => return fail(format, Why::Usage, m),
    };
    let db = SessionDb::new(chosen.as_ref(), "run");
    let mut store = match Store::connect(db.location()) {
        Ok(s) => s,
        Err(e) => {
            let why = qflow_engine::store::explain::connect_error(db.location(), &e);
            return fail(format, Why::Store, format!("--db {why}"));
        }
    };
    let columns = Columns::of(graph.as_ref());
    if let Some(instance) = &args.migrate {
        eprintln!(
            "note: `run --migrate` is kept for existing scripts; `qflow migrate {instance} --to {shown} --db {} [--map OLD=NEW] --dry-run` shows the plan first, and `qflow resume {instance} --db {}` continues the instance",
            db.location(),
            db.location()
        );
        let mut mapping = std::collections::BTreeMap::new();
        for m in &args.map {
            match m.split_once('=') {
                Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => {
                    mapping.insert(a.trim().to_string(), b.trim().to_string());
                }
                _ => {
                    return fail(
                        format,
                        Why::Usage,
                        format!("--map `{m}`: write OLD=NEW (node ids)"),
                    )
                }
            }
        }
        match migrate_instance(
            &mut store,
            &text,
            &defs,
            instance,
            &mapping,
            args.reset_budget,
        ) {
            Ok(d) => {
                match format {
                    Format::Json => {
                        for line in &d.lines {
                            println!("{}", json_line(line, &["at_s", "kind", "node"]));
                        }
                    }
                    Format::Human => {
                        for line in &d.events {
                            println!("{}", human_line(line, &columns));
                        }
                    }
                }
                // Nothing left to run: report the migrated instance as it
                // stands rather than letting the run start a new one.
                if matches!(d.status, Status::Completed | Status::Failed) {
                    return match final_state(&store, instance) {
                        Ok(state) => finish(
                            &Settled { state, stop: None },
                            format,
                            expect.as_ref(),
                            true,
                        ),
                        Err(e) => fail(format, Why::Store, e),
                    };
                }
            }
            Err(e) => return fail(format, Why::Usage, format!("--migrate {instance}: {e}")),
        }
    }
    if !args.resolve.is_empty() {
        match unfinished_instance_of(&store, &text) {
            Ok(Some(_)) => {}
            Ok(None) => {
                return fail(
                    format,
                    Why::Usage,
                    format!(
                        "--resolve: {} holds no unfinished instance of {shown}, so there is nothing to reconcile \
                         (nothing was started). Run the model with this --db first; an instance \
                         waiting for reconciliation is resumed and resolved",
                        db.location()
                    ),
                )
            }
            Err(e) => return fail(format, Why::Store, e),
        }
    }
    if args.replica {
        let World::Scenario(scenario) = world else {
            return fail(
                format,
                Why::Usage,
                "--replica runs a scenario, not --handlers",
            );
        };
        return serve_replica(store, &text, &defs, scenario, &args, &columns);
    }
    let opts = Opts {
        effects_log: args.effects_log.clone(),
        format,
        resolves,
        until,
        horizon: None,
        db_shown: (!db.is_temporary()).then(|| db.location().to_string()),
        expect,
        columns,
        quiet: false,
    };
    drop(store);
    match args.clock {
        ClockKind::Virtual => {
            let opts = Opts {
                horizon: Some(DEFAULT_HORIZON),
                ..opts
            };
            drive(db, &shown, &text, &defs, world, VirtualClock::new(0), &opts)
        }
        ClockKind::System => drive(db, &shown, &text, &defs, world, SystemClock, &opts),
    }
}

/// Where a run's outcomes come from.
enum World {
    Scenario(Scenario),
    /// A handlers file's commands and endpoints, and the new instance's variables.
    Handlers(
        qflow_engine::embed::Handlers,
        std::collections::BTreeMap<String, Value>,
    ),
}

/// The handlers file, read and checked against the model (every q:task of
/// the model needs a handler), and `--variables`.
fn load_handlers(
    args: &Args,
    path: &std::path::Path,
    graph: Option<&Graph>,
) -> Result<World, ExitCode> {
    let format = args.format;
    let file = qflow_engine::handlers::HandlersFile::read(path).map_err(|e| {
        fail(
            format,
            Why::Scenario,
            format!("--handlers {}: {e}", path.display()),
        )
    })?;
    let handlers = super::handlers::world(&file, None);
    if let Some(graph) = graph {
        for channel in qflow_engine::embed::channel_names(graph) {
            if !file.channels.contains_key(&channel) {
                eprintln!(
                    "note: --handlers {}: no [channels.{channel}] url: its requests reach no counterpart, \
                     so its calls wait for their timeout (add one, or answer with qflow respond)",
                    path.display()
                );
            }
        }
        let missing = handlers.missing(graph);
        if !missing.is_empty() {
            let names: Vec<String> = missing.iter().map(|m| format!("[tasks.\"{m}\"]")).collect();
            return Err(fail(
                format,
                Why::Scenario,
                format!(
                    "--handlers {}: the model's task{} {} ha{} no handler: add {}",
                    path.display(),
                    if missing.len() == 1 { "" } else { "s" },
                    missing
                        .iter()
                        .map(|m| format!("`{m}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if missing.len() == 1 { "s" } else { "ve" },
                    names.join(" ")
                ),
            ));
        }
    }
    let variables = match &args.variables {
        None => Default::default(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m.into_iter().collect(),
            Ok(other) => {
                return Err(fail(
                    format,
                    Why::Usage,
                    format!("--variables: expected a JSON object, found {other}"),
                ))
            }
            Err(e) => {
                return Err(fail(
                    format,
                    Why::Usage,
                    format!("--variables: not JSON: {e}"),
                ))
            }
        },
    };
    Ok(World::Handlers(handlers, variables))
}

/// How a run is driven and printed.
pub(crate) struct Opts {
    pub effects_log: Option<PathBuf>,
    pub format: Format,
    pub resolves: Vec<ExternalEvent>,
    pub until: Option<Duration>,
    /// Without `--until`: how far past where it begins the run decides
    /// (the virtual clock's default horizon; `None` on the system clock),
    /// and then the rounds without progress are bounded too.
    pub horizon: Option<Duration>,
    pub db_shown: Option<String>,
    pub expect: Option<Expectation>,
    pub columns: Columns,
    /// No notes on stderr (why a run stopped, how to continue it): `qflow
    /// test` reports each scenario in one line of its own.
    pub quiet: bool,
}

/// The model refused: every refusing verdict as a report on stderr (and, with
/// `--format json`, one record carrying them on stdout); exit 1.
fn refuse(
    format: Format,
    shown: &str,
    text: &str,
    refusals: &[&qflow_engine::Diagnostic],
    configured_by: Option<&str>,
) -> ExitCode {
    super::check::print_refusals(refusals, shown, text);
    let message = match configured_by {
        Some(by) => format!("{shown}: the model is refused ({by}); nothing was run"),
        None => format!("{shown}: the model is refused; nothing was run"),
    };
    eprintln!("{message}");
    if format == Format::Json {
        let index = qflow_engine::span::LineIndex::new(text);
        let diagnostics: Vec<Value> = refusals
            .iter()
            .map(|d| d.to_json(shown, text, &index))
            .collect();
        let rec = json!({"status": "error", "error": "model", "message": message, "diagnostics": diagnostics});
        println!("{}", json_line(&rec, &["status", "error", "message"]));
    }
    ExitCode::from(1)
}

/// Print the final state and hold it to `--expect`: exit 3 when the run
/// ended otherwise. `kept`: the instance stays in a database the user named.
pub(crate) fn finish(
    settled: &Settled,
    format: Format,
    expect: Option<&Expectation>,
    kept: bool,
) -> ExitCode {
    let state = &settled.to_json();
    match format {
        Format::Json => println!(
            "{}",
            json_line(state, &["status", "code", "reason", "attempts"])
        ),
        Format::Human => {
            println!("{}", human_final(settled, kept));
            for a in abandoned(&settled.state) {
                println!("{a}");
            }
        }
    }
    if !kept && matches!(settled.state.end, End::Waiting(_)) && format == Format::Json {
        eprintln!("note: the instance was in a temporary database, now removed; re-run with --db FILE to keep it and resume it");
    }
    match expect {
        Some(e) if !e.holds(&settled.state.ended()) => {
            eprintln!(
                "error: expected the run to end {e}, it ended {} (--expect; exit 3)",
                settled.state.ended().describe()
            );
            ExitCode::from(3)
        }
        _ => ExitCode::SUCCESS,
    }
}

fn serve_replica(
    mut store: Store,
    source: &str,
    defs: &qflow_engine::model::Definitions,
    scenario: Scenario,
    args: &Args,
    columns: &Columns,
) -> ExitCode {
    let format = args.format;
    let graph = match Graph::compile(defs) {
        Ok(g) => g,
        Err(e) => return fail(format, Why::Usage, format!("the model cannot run: {e}")),
    };
    if let Err(e) = store.deploy(&graph.process_id, source, 0) {
        return fail(format, Why::Store, e);
    }
    let mut replica = Replica::new(store, scenario, qflow_engine::store::local_owner());
    if let Some(p) = &args.effects_log {
        replica.log_effects(p.clone());
    }
    if let Some(p) = &args.races_log {
        if let Err(e) = replica.log_races(p) {
            return fail(
                format,
                Why::Usage,
                format!("--races-log {}: {e}", p.display()),
            );
        }
    }
    let served = replica.serve(|instance, d| match format {
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
            for line in &d.events {
                println!("{}  [{instance}]", human_line(line, columns));
            }
        }
    });
    match served {
        Ok(stats) => {
            let summary = serde_json::json!({
                "status": "served",
                "decisions": stats.decisions,
                "claimed_elsewhere": stats.claimed_elsewhere,
                "stale": stats.stale,
                "nothing_to_do": stats.nothing_to_do,
            });
            match format {
                Format::Json => println!("{}", json_line(&summary, &["status"])),
                Format::Human => println!(
                    "SERVED     {} decision(s); {} claim(s) held by another replica, {} stale decision(s) refused",
                    stats.decisions, stats.claimed_elsewhere, stats.stale
                ),
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(format, Why::Store, e),
    }
}

/// The scenario the run uses, checked against the model: an entry keyed by a
/// name the model never uses is refused (exit 2), every one named.
fn load_scenario(args: &Args, graph: Option<&Graph>) -> Result<Scenario, ExitCode> {
    let format = args.format;
    // Which scenario, read and parsed: the same session rule as the console's.
    let choice = match (&args.scenario, args.no_scenario) {
        (Some(p), _) => ScenarioChoice::File(p.clone()),
        (None, true) => ScenarioChoice::None,
        (None, false) => ScenarioChoice::BesideModel,
    };
    let (scenario, path) = match session_scenario(&args.model, &choice) {
        Ok(found) => found,
        Err(e @ SessionError::ScenarioUnreadable { .. }) => {
            return Err(fail(format, Why::Unreadable, e))
        }
        Err(e) => return Err(fail(format, Why::Scenario, e)),
    };
    let Some(path) = path else {
        return Ok(scenario);
    };
    if choice == ScenarioChoice::BesideModel {
        eprintln!(
            "using scenario {} (beside the model; --no-scenario to run without)",
            path.display()
        );
    }
    let Some(graph) = graph else {
        return Ok(scenario);
    };
    let misfits = scenario_check::check(&scenario, graph);
    if misfits.is_empty() {
        return Ok(scenario);
    }
    let shown = path.display();
    for m in &misfits {
        eprintln!("error: scenario {shown}: {m}");
    }
    eprintln!(
        "{shown}: {} scenario entr{} the model would never use; nothing was run",
        misfits.len(),
        if misfits.len() == 1 { "y" } else { "ies" }
    );
    if format == Format::Json {
        let errors: Vec<Value> = misfits
            .iter()
            .map(|m| json!({"field": m.path, "message": m.message}))
            .collect();
        let rec = json!({"status": "error", "error": "scenario",
            "message": format!("scenario {shown}: entries the model would never use"), "errors": errors});
        println!("{}", json_line(&rec, &["status", "error", "message"]));
    }
    Err(ExitCode::from(2))
}

/// `NODE=AS`, with NODE a node of the model (`graph`, when it compiles).
pub(crate) fn parse_resolve(s: &str, graph: Option<&Graph>) -> Result<ExternalEvent, String> {
    let (node, how) = s.split_once('=').ok_or_else(|| {
        format!("--resolve `{s}`: write NODE=succeeded, NODE=failed or NODE=retry")
    })?;
    let resolution = Resolution::parse(how.trim()).ok_or_else(|| {
        format!("--resolve `{s}`: `{how}` is not a resolution; use succeeded, failed or retry")
    })?;
    if let Some(why) = graph.and_then(|g| scenario_check::unknown_node(g, node.trim())) {
        return Err(format!("--resolve `{s}`: {why}"));
    }
    Ok(ExternalEvent::Resolve {
        node: node.trim().to_string(),
        resolution,
        variables: Default::default(),
    })
}

/// Open the session (a kept database records the model file `model` on its
/// deployment, the same path the console opens through) and drive it.
fn drive<C: Clock>(
    db: SessionDb,
    model: &str,
    source: &str,
    defs: &qflow_engine::model::Definitions,
    world: World,
    clock: C,
    opts: &Opts,
) -> ExitCode {
    let format = opts.format;
    let opened = match world {
        World::Scenario(scenario) => Session::open(db, model, source, defs, scenario, clock),
        World::Handlers(handlers, variables) => {
            db.open_for(model, source, defs).and_then(|store| {
                let run =
                    LocalRun::open_in(store, source, defs, &variables, Box::new(handlers), clock)?;
                Ok(Session { run, db })
            })
        }
    };
    let mut session = match opened {
        Ok(s) => s,
        Err(e) => return fail(format, Why::Store, e),
    };
    drive_run(&mut session.run, opts)
}

/// A run of an edited model on a kept database starts a new instance on a
/// new deployment; the instances of the earlier versions stay where they
/// are (the engine finds them). Said, never silent: which are left, and the
/// migrate that moves one.
fn earlier_versions_waiting(
    store: &qflow_engine::store::Store,
    instance: &str,
    opts: &Opts,
) -> Option<String> {
    let left = qflow_engine::repair::left_behind(store, instance).ok()??;
    let db = opts.db_shown.as_deref().unwrap_or("DB");
    let (example, onto) = (&left.example, left.onto);
    Some(format!(
        "this model differs from the one deployment {} runs, so {instance} is a new instance on deployment {onto}; \
         {} of the earlier versions {} left where {} (e.g. {example}): \
         `qflow migrate {example} --to {onto} --db {db}` moves it onto this one",
        left.from,
        qflow_engine::text::counted(left.count, "unfinished instance", "unfinished instances"),
        if left.count == 1 { "is" } else { "are" },
        if left.count == 1 { "it waits" } else { "they wait" },
    ))
}

/// Step a local instance until nothing more can be decided, printing each
/// decision and the final line (`qflow run` and `qflow resume`).
pub(crate) fn drive_run<C: Clock>(run: &mut LocalRun<C>, opts: &Opts) -> ExitCode {
    let format = opts.format;
    if run.resumed() {
        let db = opts.db_shown.as_deref().unwrap_or("the database");
        let msg = format!(
            "resuming unfinished instance {} from {db} (not starting a second one)",
            run.instance_id()
        );
        match opts.format {
            Format::Human => println!("{msg}"),
            Format::Json => eprintln!("{msg}"),
        }
    }
    if !run.resumed() {
        if let Some(note) = earlier_versions_waiting(run.store(), run.instance_id(), opts) {
            eprintln!("note: {note}");
        }
    }
    // The human output says a run of identical deliveries once (JSON lists each).
    let repeats = std::cell::RefCell::new(Repeats::default());
    let print = |d: &Decision| match opts.format {
        Format::Json => {
            for line in &d.lines {
                println!(
                    "{}",
                    json_line(line, &["at_s", "kind", "node", "attempt", "code"])
                );
            }
        }
        Format::Human => {
            for line in &d.events {
                if let Some(text) = repeats.borrow_mut().see(line, &opts.columns) {
                    println!("{text}");
                }
            }
        }
    };
    let settled = settle(run, opts, print);
    if let Some(text) = repeats.borrow_mut().flush() {
        println!("{text}");
    }
    match settled {
        Ok(settled) => finish(
            &settled,
            format,
            opts.expect.as_ref(),
            opts.db_shown.is_some(),
        ),
        Err(e) => store_fail(format, e, opts.db_shown.as_deref()),
    }
}

/// Deliveries of one request that end alike (delivered to a silent
/// counterpart, or failed with the same error), one after another: the
/// human output prints the first, holds the rest, and when another line
/// comes (or the run ends) says how many it held and prints the last.
#[derive(Default)]
pub(crate) struct Repeats {
    /// What the held deliveries share: node, key, outcome, error, silence.
    like: Option<String>,
    held: u64,
    /// The last one held, as printed.
    last: Option<String>,
}

impl Repeats {
    /// The text to print for `line` now (several lines, or none while held).
    pub(crate) fn see(&mut self, line: &Line, columns: &Columns) -> Option<String> {
        let like = match &line.event {
            HistoryEvent::Delivery {
                idempotency_key,
                outcome,
                error,
                silent,
                poisoned: None,
                ..
            } => Some(format!(
                "{:?}\u{0}{idempotency_key}\u{0}{outcome:?}\u{0}{error:?}\u{0}{}",
                line.node,
                silent.is_some()
            )),
            _ => None,
        };
        let text = human_line(line, columns);
        if like.is_some() && like == self.like {
            self.held += 1;
            self.last = Some(text);
            return None;
        }
        let flushed = self.flush();
        self.like = like;
        Some(match flushed {
            Some(f) => format!("{f}\n{text}"),
            None => text,
        })
    }

    /// What is held, said: the count, then the last one.
    pub(crate) fn flush(&mut self) -> Option<String> {
        let held = std::mem::take(&mut self.held);
        self.like = None;
        let last = self.last.take()?;
        Some(match held {
            1 => last,
            n => format!(
                "           … {} more deliveries like it (--format json lists each), the last:\n{last}",
                n - 1
            ),
        })
    }
}

/// How a local run ended: the instance's final state (the engine's, typed)
/// and, when the run stopped with more to do, why.
pub(crate) struct Settled {
    pub(crate) state: FinalState,
    pub(crate) stop: Option<Stop>,
}

impl Settled {
    /// The final line's JSON: the engine's form, with `stopped` (and
    /// `horizon_s`, `pause` or `returns`) when the run stopped with more
    /// to do (docs/run.md).
    pub(crate) fn to_json(&self) -> Value {
        let mut line = self.state.to_json();
        if let (Value::Object(m), Some(stop)) = (&mut line, &self.stop) {
            let extra = match stop {
                Stop::Horizon { horizon_ms, .. } => ("horizon_s", json!(horizon_ms / 1000)),
                Stop::Held { kind, value, .. } => {
                    ("pause", json!({"kind": kind.flag(), "value": value}))
                }
                Stop::NoProgress { returns, .. } => ("returns", json!(returns)),
            };
            m.insert("stopped".into(), json!(stop_word(stop)));
            m.insert(extra.0.into(), extra.1);
        }
        line
    }
}

/// Why a run stopped with more to do, as the final line's `stopped` says
/// it: `horizon`, `held` or `no-progress`.
pub(crate) fn stop_word(stop: &Stop) -> &'static str {
    match stop {
        Stop::Horizon { .. } => "horizon",
        Stop::Held { .. } => "held",
        Stop::NoProgress { .. } => "no-progress",
    }
}

/// Step a local instance until nothing more can be decided, handing each
/// decision to `print`, and return its final state (with why it stopped,
/// when it stopped with more to do): `qflow run`, `qflow resume` and each
/// scenario of `qflow test`.
pub(crate) fn settle<C: Clock>(
    run: &mut LocalRun<C>,
    opts: &Opts,
    print: impl Fn(&Decision),
) -> Result<Settled, RunError> {
    match (opts.until, opts.horizon) {
        (Some(u), _) => run.stop_after(u),
        (None, Some(h)) => run.stop_after_from_now(h),
        (None, None) => {}
    }
    if opts.horizon.is_some() {
        run.bound_rounds(MAX_RETURNS_TO_A_STATE);
    }
    if let Some(p) = &opts.effects_log {
        run.log_effects(p);
    }
    if let Some(d) = run.take_start() {
        print(&d);
    }
    // Each --resolve is delivered once, when the instance first has nothing
    // else to do (a resumed instance waiting for reconciliation: at once).
    let mut resolves = opts.resolves.iter();
    loop {
        let mut decided = false;
        run.run(|d| {
            decided = true;
            print(d)
        })?;
        if let Some(ev) = resolves.next() {
            print(&run.deliver(ev.clone())?);
            continue;
        }
        // The engine says when the instance is next due to decide anything
        // (a delivery, a timer, a response, a scripted event): a real clock
        // sleeps until then, between steps, never inside one.
        let due = run.next_due_ms()?;
        let now = run.clock().now_ms();
        if run.stalled() {
            break;
        }
        match due {
            Some(due) if !run.stops_before(due) && due > now => {
                std::thread::sleep(Duration::from_millis((due - now) as u64));
            }
            // Due now and still decided in this round: look again. A round
            // that decided nothing though something was due cannot do better
            // the next time: stop rather than spin.
            Some(due) if !run.stops_before(due) && decided => {}
            _ => break,
        }
    }
    let _ = run.release();
    let stop = run.stopped()?;
    let state = run.final_state()?;
    if let Some(stop) = &stop {
        say_stopped(stop, run.instance_id(), opts);
    }
    Ok(Settled { state, stop })
}

/// A run that stopped with more to do says why on stderr (and in the final
/// line: [`Settled::to_json`]), and how to continue.
fn say_stopped(stop: &Stop, instance: &str, opts: &Opts) {
    let why = match stop {
        Stop::Horizon { horizon_ms, due_ms } => format!(
                "stopped at {}, the run's horizon ({}); the next thing due is at {}",
                at(Some(Secs(*horizon_ms))),
                if opts.until.is_some() {
                    "--until".to_string()
                } else {
                    format!(
                        "{} days of virtual time past where this run began, the default; --until DURATION sets another",
                        DEFAULT_HORIZON.as_secs() / 86_400
                    )
                },
                at(Some(Secs(*due_ms)))
            ),
        Stop::Held {
            node,
            due_ms,
            kind,
            value,
        } => format!(
            "nothing runs: the retry of {node} due at {} is held by the pause of {} {value}, its due time kept",
            at(Some(Secs(*due_ms))),
            kind.flag()
        ),
        Stop::NoProgress {
            returns,
            node,
            at_ms,
        } => format!(
            "stopped at {} (at `{node}`): the instance came back to the same state {returns} times, \
             a loop its world never lets out (give the scenario an answer that ends the loop, or the loop an exit)",
            at(Some(Secs(*at_ms)))
        ),
    };
    if let Stop::Held { kind, value, .. } = stop {
        // Running it again does nothing until the pause is lifted: say so
        // instead of "a run continues it".
        let next = match &opts.db_shown {
            Some(db) => format!(
                "`qflow unpause --{} {value} --db {db}` lets it run, then `qflow resume {instance} --db {db}` continues it",
                kind.flag()
            ),
            None => "the instance was in a temporary database, now removed".to_string(),
        };
        if !opts.quiet {
            eprintln!("note: {why}; {next}");
        }
        return;
    }
    let next = match &opts.db_shown {
        Some(db) => format!(
            "the instance is parked: `qflow resume {instance} --db {db}` (or a run with the same --db) continues it"
        ),
        None => "the instance was in a temporary database, now removed: re-run with --db FILE to keep it and continue it".to_string(),
    };
    if !opts.quiet {
        eprintln!("note: {why}; {next}");
    }
}

/// A JSON object with `first` keys leading (in that order), the rest sorted.
pub(crate) fn json_line(v: &Value, first: &[&str]) -> String {
    let Value::Object(m) = v else {
        return v.to_string();
    };
    let mut parts = Vec::new();
    for k in first {
        if let Some(x) = m.get(*k) {
            parts.push(format!("{}:{}", Value::String((*k).into()), canonical(x)));
        }
    }
    let mut rest: Vec<&String> = m.keys().filter(|k| !first.contains(&k.as_str())).collect();
    rest.sort();
    for k in rest {
        parts.push(format!("{}:{}", Value::String(k.clone()), canonical(&m[k])));
    }
    format!("{{{}}}", parts.join(","))
}

fn canonical(v: &Value) -> String {
    qflow_engine::runtime::snapshot::canonical_string(v)
}

/// Virtual time since the instance started, as the console shows it (`+2h 36m`).
fn since_start(ms: Option<i64>) -> String {
    match ms {
        Some(ms) => format!("+{}", qflow_engine::duration::compact_ms(ms)),
        None => "+?".into(),
    }
}

/// Column widths of the human lines, from the model: the node column fits its
/// longest node id, so lines stay aligned whatever the ids are.
pub(crate) struct Columns {
    node: usize,
}

impl Columns {
    pub(crate) fn of(graph: Option<&Graph>) -> Columns {
        Columns::of_ids(
            graph
                .into_iter()
                .flat_map(|g| g.nodes.keys().map(String::as_str)),
        )
    }

    /// Columns fitting these node ids.
    pub(crate) fn of_ids<'a>(ids: impl Iterator<Item = &'a str>) -> Columns {
        let longest = ids.map(|k| k.chars().count()).max().unwrap_or(0);
        Columns {
            node: longest.max(4),
        }
    }
}

fn words(ms: i64) -> String {
    qflow_engine::duration::to_words(Duration::from_secs_f64((ms as f64 / 1000.0).max(0.0)))
}

/// Virtual time since the instance started, as the console shows it (`+2h 36m`);
/// `+?` when the line does not carry it.
fn at(s: Option<Secs>) -> String {
    match s {
        Some(s) => format!("+{}", qflow_engine::duration::compact_ms(s.ms())),
        None => "+?".into(),
    }
}

/// `; parked, attempt N eligible at +T (after D)`: where a backoff put the
/// next attempt.
fn parked(park: Option<&Park>) -> String {
    format!(
        "; parked, attempt {} eligible at {} (after {})",
        park.map_or(0, |p| p.next_attempt),
        at(park.map(|p| p.next_at_s)),
        words(park.map_or(0, |p| p.delay_s.ms()))
    )
}

/// One decision line for people: time, kind, node, then what happened in
/// words. Rendered from the typed line, so a new kind of line is a compile
/// error here rather than a silent fallback.
pub(crate) fn human_line(line: &Line, columns: &Columns) -> String {
    // Codes and messages come from handlers and scenarios: no control
    // character of theirs reaches the terminal.
    qflow_engine::text::printable(&decision_words(line, columns)).into_owned()
}

fn decision_words(line: &Line, columns: &Columns) -> String {
    let event = &line.event;
    let detail = match event {
        HistoryEvent::Start { .. } => "instance started".to_string(),
        HistoryEvent::Attempt(Attempt::Call(a)) => format!(
            "{}request {} to {}{}, key {}{}",
            if a.redrive.is_some() {
                "re-drive: "
            } else {
                ""
            },
            a.attempt,
            a.channel,
            a.operation
                .as_deref()
                .map(|o| format!(".{o}"))
                .unwrap_or_default(),
            a.idempotency_key,
            match a.timeout_at_s {
                Some(t) => format!("; timeout at {}", at(Some(t))),
                None => "; its timer boundary ends the wait".to_string(),
            }
        ),
        HistoryEvent::Delivery {
            idempotency_key: key,
            deliveries: n,
            outcome,
            respond_at_s,
            silent,
            error,
            poisoned,
            next_delivery_at_s,
            ..
        } => {
            let error = error.as_deref().unwrap_or("");
            match outcome {
                Delivered::Delivered if silent.is_some() => {
                    format!("delivered {key} (delivery {n}); the counterpart stays silent")
                }
                Delivered::Delivered => format!(
                    "delivered {key} (delivery {n}); it answers at {}",
                    at(*respond_at_s)
                ),
                Delivered::Failed if poisoned.is_some() => {
                    format!("delivery {n} of {key} failed ({error}): POISONED")
                }
                Delivered::Failed => format!(
                    "delivery {n} of {key} failed ({error}); next delivery at {}",
                    at(*next_delivery_at_s)
                ),
            }
        }
        HistoryEvent::Response {
            verdict,
            idempotency_key: key,
            reason,
            ..
        } => match verdict {
            Verdict::Accepted => format!("response to {key} accepted"),
            verdict => format!(
                "response to {key} refused ({}): {}",
                verdict.as_str(),
                reason.as_deref().unwrap_or("")
            ),
        },
        HistoryEvent::CallFailed {
            attempt,
            code,
            then,
            park,
        } => {
            let mut s = format!("attempt {attempt} failed: {code}");
            match then {
                Then::Backoff => s.push_str(&parked(park.as_ref())),
                Then::Boundary => s.push_str("; caught by an error boundary"),
                Then::Reconcile | Then::Failed => s.push_str("; no further attempt"),
            }
            s
        }
        HistoryEvent::Attempt(Attempt::Task(a)) => {
            let code = a.code.as_deref().unwrap_or("");
            let mut s = format!("attempt {} of {}: ", a.attempt, a.task);
            match a.outcome {
                AttemptOutcome::Ok => s.push_str("ok"),
                AttemptOutcome::BpmnError => s.push_str(&format!("BPMN error {code}")),
                AttemptOutcome::Failed => s.push_str(&format!(
                    "failed {code} ({})",
                    a.class.map_or("", |c| c.as_str())
                )),
            }
            if let Some(m) = &a.message {
                s.push_str(&format!(": {m}"));
            }
            match a.then {
                Some(Then::Backoff) => s.push_str(&parked(a.park.as_ref())),
                Some(Then::Reconcile) => {
                    s.push_str("; outcome unknown, no blind retry: waiting for reconciliation")
                }
                Some(Then::Failed) => s.push_str("; no further attempt"),
                Some(Then::Boundary) | None => {}
            }
            s
        }
        HistoryEvent::Failed {
            code,
            reason,
            attempts,
        } => match attempts {
            Some(n) => format!(
                "FAILED {code}: {reason} after {}",
                counted(u64::from(*n), "attempt", "attempts")
            ),
            None => format!("FAILED {code}: {reason}"),
        },
        HistoryEvent::Gateway {
            flow,
            default,
            joined,
            code,
            reason,
            ..
        } => match (flow, joined) {
            (Some(flow), _) if *default == Some(true) => {
                format!("no condition holds: default flow {flow}")
            }
            (Some(flow), _) => format!("flow {flow}"),
            (None, Some(n)) => format!("all {n} branches joined"),
            (None, None) => match code {
                Some(code) => format!("{code}: {}", reason.as_deref().unwrap_or("")),
                None => "fork".to_string(),
            },
        },
        HistoryEvent::Join { arrived, of } => format!("branch arrived ({arrived} of {of})"),
        HistoryEvent::Timer { .. } => "timer due".to_string(),
        HistoryEvent::Pass { .. } => "pass".to_string(),
        HistoryEvent::Migrated {
            mapping,
            reset_budget,
            ..
        } => format!(
            "migrated to this model{}{}",
            if mapping.is_empty() {
                String::new()
            } else {
                format!(", mapping {}", canonical(&json!(mapping)))
            },
            if *reset_budget {
                ", budget reset"
            } else {
                ", burned budget kept"
            }
        ),
        HistoryEvent::Wait { for_, until_s, .. } => match for_ {
            WaitFor::Timer => format!("waiting for its timer until {}", at(*until_s)),
            WaitFor::Reconciliation => "waiting for reconciliation".to_string(),
        },
        HistoryEvent::Ignored { event, reason } => format!("{event} ignored: {reason}"),
        HistoryEvent::Damaged { key, raw, read_as } => match read_as {
            Some(n) => format!("DAMAGED {key} held {}: read as {n}", canonical(raw)),
            None if key.starts_with("first_attempt.") => {
                format!("DAMAGED {key} held {}: read as absent", canonical(raw))
            }
            None => format!(
                "DAMAGED {key}: {}; nothing can be decided on it",
                match raw {
                    Value::String(s) => s.clone(),
                    other => canonical(other),
                }
            ),
        },
        HistoryEvent::Reconciled { as_, attempts, .. } => match attempts {
            Some(n) => format!(
                "reconciled as {} after {n} attempt{}",
                as_.as_str(),
                if *n == 1 { "" } else { "s" }
            ),
            None => format!("reconciled as {}", as_.as_str()),
        },
        HistoryEvent::Boundary { from, .. } => format!("boundary fired on {from}"),
        HistoryEvent::End { .. } => "end".to_string(),
    };
    let to = match event.to() {
        Some(to) if !to.is_empty() => format!(" → {}", qflow_engine::text::capped_list(to)),
        _ => String::new(),
    };
    format!(
        "{:>9}  {:<11} {:<width$}  {detail}{to}",
        at(Some(line.at_s)),
        event.kind(),
        line.node.as_deref().unwrap_or(""),
        width = columns.node
    )
}

/// One line per request the run leaves undelivered for good (the final
/// line's `abandoned`): which, and why it will never be delivered.
fn abandoned(state: &FinalState) -> Vec<String> {
    state
        .abandoned
        .iter()
        .map(|a| {
            format!(
                "ABANDONED  request {} to {} (attempt {}), never delivered: {}",
                a.idempotency_key,
                a.channel,
                a.attempt,
                a.reason.as_deref().unwrap_or("")
            )
        })
        .collect()
}

/// The final line. `kept`: the instance is in a database the user named (it
/// can be resumed); otherwise the temporary database is already gone.
fn human_final(settled: &Settled, kept: bool) -> String {
    qflow_engine::text::printable(&final_words(settled, kept)).into_owned()
}

fn final_words(settled: &Settled, kept: bool) -> String {
    let id = settled.state.instance.as_str();
    match &settled.state.end {
        End::Completed => format!("COMPLETED  instance {id}"),
        End::Failed {
            failure: f,
            attempts,
            first_attempt_ms,
            last_attempt_ms,
        } => {
            let mut s = format!(
                "FAILED     instance {id}{}: {} ({}), {}",
                match f.node.as_str() {
                    "" => String::new(),
                    node => format!(" at {node}"),
                },
                f.code,
                f.reason,
                counted(u64::from(*attempts), "attempt", "attempts")
            );
            // The terminal record: class, dependency, first and last attempt.
            let mut more = Vec::new();
            let named = |what: &str, v: &Option<String>| {
                v.as_deref()
                    .filter(|v| !v.is_empty())
                    .map(|v| format!("{what} {v}"))
            };
            more.extend(named("class", &f.class));
            more.extend(named("task", &f.task));
            more.extend(named("channel", &f.channel));
            if let Some(first) = first_attempt_ms {
                more.push(format!(
                    "attempts from {} to {}",
                    since_start(Some(*first)),
                    since_start(*last_attempt_ms)
                ));
            }
            if !more.is_empty() {
                s.push_str(&format!("; {}", more.join(", ")));
            }
            // The last attempt's own words, as the handler gave them.
            if let Some(m) = f.message.as_deref().filter(|m| !m.is_empty()) {
                s.push_str(&format!("; last failure: {m}"));
            }
            s
        }
        End::Waiting(Some(Waiting::Reconciliation {
            node,
            code,
            attempts,
        })) => {
            // How many times a task waiting for reconciliation has run.
            let ran = match attempts {
                Some(1) => ", after 1 attempt".to_string(),
                Some(n) => format!(", after {n} attempts"),
                None => String::new(),
            };
            let code = code.as_deref().unwrap_or("");
            if kept {
                format!(
                    "WAITING    instance {id} at {node}: reconciliation of {code}{ran} (resolve with the same --db and --resolve {node}=succeeded|failed|retry)"
                )
            } else {
                format!(
                    "WAITING    instance {id} at {node}: reconciliation of {code}{ran} (the instance was in a temporary database, now removed: re-run with --db FILE to keep it, then --resolve {node}=succeeded|failed|retry)"
                )
            }
        }
        End::Waiting(waiting) => {
            let held;
            let kept = if let Some(Stop::Held { kind, value, .. }) = &settled.stop {
                // The pause in an operator's words: `class transient`.
                held = format!(
                    " (held by the pause of {} {value}: see the note above)",
                    kind.flag()
                );
                held.as_str()
            } else if kept {
                " (a run with the same --db resumes it)"
            } else {
                " (the instance was in a temporary database, now removed: re-run with --db FILE to keep it)"
            };
            let other = settled.state.waiting_for().unwrap_or("");
            match waiting {
                // No one node waits on one thing: say where each token is.
                Some(Waiting::Nothing { tokens }) => {
                    let why = if settled.stop.is_some() {
                        "stopped"
                    } else {
                        other
                    };
                    format!(
                        "WAITING    instance {id}: {why}, tokens at {}{kept}",
                        qflow_engine::text::capped_list(&token_words(tokens))
                    )
                }
                Some(Waiting::Timer { node, due_ms, .. }) => format!(
                    "WAITING    instance {id} at {node}: {other} due at {}{kept}",
                    since_start(Some(*due_ms)),
                ),
                _ => format!("WAITING    instance {id} at : {other} due at +?{kept}"),
            }
        }
    }
}
