//! The console's [`Backend`] over the engine: one local instance opened as
//! a [`Session`] (the same engine code `qflow run` opens it with) on a
//! virtual clock, or an existing database attached read-only. Commands go to
//! the driver (the operator's hand-picked outcomes to its `operate`
//! actions); views are built by reading the store back
//! ([`crate::engine_view`]).

use qflow_engine::local::LocalRunExt;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use qflow_engine::diagram::Diagram;
use qflow_engine::instance::history::{
    Attempt, AttemptOutcome, Delivered, HistoryEvent, TaskAttempt, Verdict,
};
use qflow_engine::model::Definitions;
use qflow_engine::operate::NoAttempt;
use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::scenario::{ExternalEvent, Resolution as EngineResolution, TaskOutcome};
use qflow_engine::runtime::session::{
    load_scenario, ScenarioChoice, Session, SessionDb, SessionError,
};
use qflow_engine::runtime::snapshot::{Snapshot, TokenState};
use qflow_engine::runtime::{Clock, Decision, Scenario, VirtualClock};
use qflow_engine::store::contain::Actor;
use qflow_engine::store::explain::connect_error;
use qflow_engine::store::{Location, Store};
use serde_json::Value;

use crate::backend::{Backend, Command, MigrationPreview, Report, Resolution, ResponseTarget};
use crate::engine_describe::describe;
use crate::engine_view::{self, Source};
use crate::view::{sort_instances, DeploymentRowView, FleetView, InstanceRowView, View};
use qflow_engine::repair::{self, Target};

/// Where the console's instance lives.
pub enum EngineBackend {
    Drive(Box<Drive>),
    Attach(Box<Attach>),
}

/// One instance driven step by step.
pub struct Drive {
    session: Session<VirtualClock>,
    /// The process as a diagram, placed once.
    diagram: Arc<Diagram>,
    label: String,
    codes: Vec<String>,
    /// Said once, on the first frame.
    pub opening: Report,
}

/// An existing database: its deployments and instances listed; the open
/// instance inspected, and stepped when it is unfinished.
pub struct Attach {
    store: Store,
    location: Location,
    label: String,
    selected: Option<Selected>,
    /// The last migration planned, with the instance version it was planned at.
    preview: Option<(MigrationPreview, Target, i64)>,
    /// A batch repair's plans, when the preview is one: each instance with
    /// the version its plan was made from.
    batch: Vec<(String, i64)>,
    /// The open instance driven, when it is unfinished: a local run of it
    /// on the same database (its own connection), as `qflow resume` runs it.
    driving: Option<Box<Drive>>,
    /// Who the pauses and quarantines made here are recorded as.
    actor: Actor,
}

/// The instance an attached console shows, its model compiled and drawn.
struct Selected {
    id: String,
    graph: Graph,
    diagram: Arc<Diagram>,
}

/// The diagram of process `id` of a model (the first process when no
/// process has that id).
fn diagram_of(defs: &Definitions, source: &str, id: &str) -> Option<Arc<Diagram>> {
    let process = defs
        .processes
        .iter()
        .find(|p| p.id.as_ref().is_some_and(|a| a.value == id))
        .or(defs.processes.first())?;
    Some(Arc::new(Diagram::of(process, Some(source))))
}

fn load_model(
    source: &str,
    shown: &str,
    config: &qflow_engine::config::Config,
) -> Result<Definitions, String> {
    qflow_engine::load_with(source, &config.settings).map_err(|diags| {
        let index = qflow_engine::span::LineIndex::new(source);
        let first: Vec<String> = diags
            .iter()
            .filter(|d| d.refuses_run())
            .take(3)
            .map(|d| {
                let p = index.position(source, d.primary.span.start());
                format!(
                    "  {} {shown}:{}:{}: {}",
                    d.code.as_str(),
                    p.line + 1,
                    p.column_chars + 1,
                    d.message
                )
            })
            .collect();
        let by = config
            .configured(diags.iter().filter(|d| d.refuses_run()))
            .map(|by| format!(" ({by})"))
            .unwrap_or_default();
        format!(
            "{shown} does not load{by}:\n{}\nrun `qflow check {shown}` for every verdict with its place",
            first.join("\n")
        )
    })
}

/// Why a console session could not start, so the command line can exit
/// with the code every subcommand uses for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartFailure {
    /// The model or scenario file cannot be read (exit 2).
    Unreadable,
    /// The model is refused: load errors or a namespace slip (exit 1).
    Refused,
    /// The scenario is malformed or names what the model does not have (exit 2).
    Scenario,
    /// The database or the run could not be opened (exit 2).
    Store,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartError {
    pub failure: StartFailure,
    pub message: String,
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn start_err(failure: StartFailure) -> impl Fn(String) -> StartError {
    move |message| StartError {
        failure: failure.clone(),
        message,
    }
}

impl EngineBackend {
    /// Start (or, with a `db` holding an unfinished instance of the same
    /// model, resume) one instance of `model` under `scenario` (`None`: no
    /// scenario).
    pub fn start(
        model: &Path,
        scenario: Option<&Path>,
        db: Option<&Path>,
    ) -> Result<EngineBackend, String> {
        Self::start_checked(model, scenario, db).map_err(|e| e.message)
    }

    /// [`EngineBackend::start`], saying what kind of failure stopped it.
    pub fn start_checked(
        model: &Path,
        scenario: Option<&Path>,
        db: Option<&Path>,
    ) -> Result<EngineBackend, StartError> {
        let choice = match scenario {
            Some(p) => ScenarioChoice::File(p.to_path_buf()),
            None => ScenarioChoice::None,
        };
        EngineBackend::open(model, &choice, db.map(Location::from).as_ref())
    }

    /// Open a session on `model` as `qflow run` does: the scenario chosen
    /// by `scenario` (a file, the one beside the model, or none), checked
    /// against the model; the database `db` or a temporary one; an
    /// unfinished instance resumed.
    pub fn open(
        model: &Path,
        scenario: &ScenarioChoice,
        db: Option<&Location>,
    ) -> Result<EngineBackend, StartError> {
        let shown = model.display().to_string();
        let source = std::fs::read_to_string(model)
            .map_err(|e| format!("cannot read {shown}: {e}"))
            .map_err(start_err(StartFailure::Unreadable))?;
        // The model's configuration files (`.bpmnlintrc`, `qflow.toml`,
        // found walking up from it) decide which modelling rules refuse it,
        // exactly as `qflow check`, `qflow run` and the editor judge it.
        let config = qflow_engine::config::Config::for_model(model);
        let defs =
            load_model(&source, &shown, &config).map_err(start_err(StartFailure::Refused))?;
        let (scenario, file) = load_scenario(model, scenario).map_err(|e| StartError {
            failure: match e {
                SessionError::ScenarioUnreadable { .. } => StartFailure::Unreadable,
                _ => StartFailure::Scenario,
            },
            message: e.to_string(),
        })?;
        if let Some(p) = &file {
            // The same check as `qflow run`: every entry names something
            // the model has.
            if let Ok(graph) = Graph::compile(&defs) {
                let misfits = qflow_engine::runtime::scenario_check::check(&scenario, &graph);
                if !misfits.is_empty() {
                    let lines: Vec<String> = misfits
                        .iter()
                        .map(|m| format!("scenario {}: {m}", p.display()))
                        .collect();
                    return Err(start_err(StartFailure::Scenario)(lines.join("\n")));
                }
            }
        }
        let codes = scenario_codes(&scenario);
        let mut session = Session::open(
            SessionDb::new(db, "console"),
            &shown,
            &source,
            &defs,
            scenario,
            VirtualClock::new(0),
        )
        .map_err(|e| match e {
            SessionError::Database { path, error } => {
                // The database given, or the temporary file that failed.
                let at = db.cloned().unwrap_or_else(|| Location::Sqlite(path.into()));
                StartError {
                    failure: StartFailure::Store,
                    message: format!("--db {}", connect_error(&at, &error)),
                }
            }
            SessionError::Run(e) => start_err(StartFailure::Store)(format!("{shown}: {e}")),
            other => start_err(StartFailure::Store)(other.to_string()),
        })?;
        let run = &mut session.run;
        run.take_start();
        let opening = if run.resumed() {
            Report::info(format!(
                "resumed unfinished instance {} from {} · space steps",
                run.instance_id(),
                session.db.location()
            ))
        } else {
            Report::info(format!(
                "started {} · space steps to the next decision · ? shows every key",
                run.instance_id()
            ))
        };
        let label = match db {
            Some(db) => format!("{shown} · {db}"),
            None => shown,
        };
        let process = session.run.graph().process_id.clone();
        let diagram = diagram_of(&defs, &source, &process)
            .ok_or("the model defines no process")
            .map_err(|e| start_err(StartFailure::Refused)(e.to_string()))?;
        Ok(EngineBackend::Drive(Box::new(Drive {
            session,
            diagram,
            label,
            codes,
            opening,
        })))
    }

    /// Attach to an existing database (a SQLite file or a PostgreSQL URL),
    /// read-only.
    pub fn attach(db: impl Into<Location>) -> Result<EngineBackend, String> {
        let db: Location = db.into();
        if db.sqlite_path().is_some_and(|p| !p.exists()) {
            return Err(format!("{db}: no such database file"));
        }
        let store = Store::connect_existing(&db).map_err(|e| connect_error(&db, &e))?;
        Ok(EngineBackend::Attach(Box::new(Attach {
            store,
            location: db.clone(),
            label: db.to_string(),
            selected: None,
            preview: None,
            batch: Vec::new(),
            driving: None,
            actor: Actor::this_user(),
        })))
    }

    /// Record the pauses and quarantines made from this console as
    /// `actor` (`qflow console --by NAME`); by default the account and
    /// host it runs as. Nothing to record outside an attached database.
    pub fn act_as(&mut self, actor: Actor) {
        if let EngineBackend::Attach(a) = self {
            a.actor = actor;
        }
    }

    /// The store being shown (tests check it directly).
    pub fn store(&self) -> &Store {
        match self {
            EngineBackend::Drive(d) => d.session.run.store(),
            EngineBackend::Attach(a) => &a.store,
        }
    }

    /// The driven instance's id.
    pub fn instance_id(&self) -> Option<&str> {
        match self {
            EngineBackend::Drive(d) => Some(d.session.run.instance_id()),
            EngineBackend::Attach(a) => a.selected.as_ref().map(|s| s.id.as_str()),
        }
    }

    /// Name what is shown differently (tests show a repository-relative path).
    pub fn set_label(&mut self, label: &str) {
        match self {
            EngineBackend::Drive(d) => d.label = label.to_string(),
            EngineBackend::Attach(a) => a.label = label.to_string(),
        }
    }

    /// The first status-line message.
    pub fn opening(&self) -> Option<Report> {
        match self {
            EngineBackend::Drive(d) => Some(d.opening.clone()),
            EngineBackend::Attach(_) => None,
        }
    }
}

fn scenario_codes(s: &Scenario) -> Vec<String> {
    let mut codes: Vec<String> = Vec::new();
    for list in s.tasks.values() {
        for o in list {
            if let TaskOutcome::Fail { code, .. } = o {
                if !codes.contains(code) {
                    codes.push(code.clone());
                }
            }
        }
    }
    codes
}

/// A decision in one line for the status line.
fn summary(d: &Decision) -> String {
    let at = crate::fmt::at(d.at_ms);
    let parts: Vec<String> = d
        .events
        .iter()
        .map(|l| {
            let kind = l.event.kind();
            let node = l.node.as_deref().unwrap_or("");
            let attempt = l
                .event
                .attempt()
                .map(|a| format!(" #{a}"))
                .unwrap_or_default();
            let code = l.event.code().map(|c| format!(" {c}")).unwrap_or_default();
            format!("{kind} {node}{attempt}{code} {}", describe(l))
                .trim_end()
                .to_string()
        })
        .collect();
    format!("{at} {}", parts.join(" · "))
}

fn tone_of(d: &Decision) -> Report {
    let text = summary(d);
    let failed = d
        .events
        .iter()
        .any(|l| matches!(l.event, HistoryEvent::Failed { .. }));
    let bad_attempt = d.events.iter().any(|l| {
        matches!(
            &l.event,
            HistoryEvent::Attempt(Attempt::Task(TaskAttempt {
                outcome: AttemptOutcome::Failed,
                ..
            })) | HistoryEvent::Delivery {
                outcome: Delivered::Failed,
                ..
            }
        )
    });
    if failed {
        Report::bad(text)
    } else if bad_attempt {
        Report::warn(text)
    } else {
        Report::good(text)
    }
}

impl Drive {
    fn snapshot(&self) -> Result<Snapshot, String> {
        self.session
            .run
            .store()
            .facts(self.session.run.instance_id())
            .map(|f| f.snapshot)
            .map_err(|e| e.to_string())
    }

    /// Why a step decided nothing, in words that say what to do next.
    fn idle_reason(&self) -> Result<Report, String> {
        let row = self
            .session
            .run
            .store()
            .instance(self.session.run.instance_id())
            .map_err(|e| e.to_string())?
            .ok_or("the instance is gone from the database")?;
        let snap = Snapshot::decode(&row.snapshot).unwrap_or_default();
        if row.status.is_terminal() {
            let extra = snap
                .failure()
                .map(|f| format!(" ({}, {})", f.code, f.reason))
                .unwrap_or_default();
            return Ok(Report::info(format!(
                "nothing to decide: the instance is {}{extra}",
                row.status.as_str().to_uppercase()
            )));
        }
        if let Some(t) = snap
            .frontier()
            .iter()
            .find(|t| t.state == TokenState::Reconcile)
        {
            return Ok(Report::warn(format!(
                "{} waits for reconciliation: press R to resolve it",
                t.node
            )));
        }
        Ok(Report::info(
            "nothing pending: the instance waits for something from outside",
        ))
    }

    fn step(&mut self) -> Result<Report, String> {
        match self.session.run.step().map_err(|e| e.to_string())? {
            Some(d) => Ok(tone_of(&d)),
            None => self.idle_reason(),
        }
    }

    fn advance(&mut self, ms: i64) -> Result<Report, String> {
        let start = self.session.run.started_ms();
        let target = self.session.run.clock().now_ms().saturating_add(ms);
        self.session
            .run
            .stop_after(Duration::from_millis((target - start).max(0) as u64));
        let mut n = 0usize;
        let mut last = None;
        let result = loop {
            if n >= 10_000 {
                break Ok(());
            }
            match self.session.run.step() {
                Ok(Some(d)) => {
                    n += 1;
                    last = Some(d);
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e.to_string()),
            }
        };
        self.session.run.stop_after(Duration::MAX);
        result?;
        self.session.run.clock().advance_to(target);
        let mut msg = format!(
            "advanced {} to {}: {n} decision{}",
            crate::fmt::span(ms),
            crate::fmt::at(target - start),
            if n == 1 { "" } else { "s" }
        );
        if let Some(d) = &last {
            msg.push_str(&format!(" · last: {}", summary(d)));
        }
        Ok(Report::info(msg))
    }

    fn attempt(&mut self, outcome: TaskOutcome, what: &str) -> Result<Report, String> {
        let r = self
            .session
            .run
            .attempt_now(outcome)
            .map_err(|e| e.to_string())?;
        match r {
            Ok(d) => {
                let mut rep = tone_of(&d);
                rep.message = format!("{what}: {}", rep.message);
                Ok(rep)
            }
            Err(NoAttempt::Terminal(s)) => Ok(Report::info(format!(
                "nothing to {what}: the instance is {}",
                s.to_uppercase()
            ))),
            Err(why) => Ok(Report::warn(format!("nothing to {what}: {why}"))),
        }
    }

    fn respond(&mut self, target: &ResponseTarget, body: &str) -> Result<Report, String> {
        let body: Value = serde_json::from_str(body).map_err(|e| format!("response body: {e}"))?;
        let attempt = match target {
            ResponseTarget::Live => None,
            ResponseTarget::Attempt(n) => Some(*n),
        };
        let r = self
            .session
            .run
            .respond_now(attempt, body)
            .map_err(|e| e.to_string())?;
        match r {
            Ok(d) => {
                let accepted = d.events.iter().any(|l| {
                    matches!(
                        l.event,
                        HistoryEvent::Response {
                            verdict: Verdict::Accepted,
                            ..
                        }
                    )
                });
                let mut rep = tone_of(&d);
                if !accepted {
                    rep.tone = crate::backend::Tone::Warn;
                }
                rep.message = format!("respond: {}", rep.message);
                Ok(rep)
            }
            Err(why) => Ok(Report::warn(format!("nothing to answer: {why}"))),
        }
    }

    fn poison(&mut self) -> Result<Report, String> {
        let r = self.session.run.poison_now().map_err(|e| e.to_string())?;
        match r {
            Ok(ds) if ds.is_empty() => Ok(Report::warn("nothing was delivered")),
            Ok(ds) => {
                let last = ds.last().expect("checked");
                let mut rep = tone_of(last);
                rep.message = format!(
                    "poison: {} failed deliver{} · {}",
                    ds.iter()
                        .filter(|d| {
                            d.events
                                .iter()
                                .any(|l| matches!(l.event, HistoryEvent::Delivery { .. }))
                        })
                        .count(),
                    if ds.len() == 1 { "y" } else { "ies" },
                    summary(last)
                );
                Ok(rep)
            }
            Err(why) => Ok(Report::warn(format!("nothing to poison: {why}"))),
        }
    }

    fn resolve(&mut self, r: Resolution) -> Result<Report, String> {
        let snap = self.snapshot()?;
        let Some(t) = snap
            .frontier()
            .into_iter()
            .find(|t| t.state == TokenState::Reconcile)
        else {
            return Ok(Report::warn("nothing waits for reconciliation"));
        };
        let resolution = match r {
            Resolution::Succeeded => EngineResolution::Succeeded,
            Resolution::Failed => EngineResolution::Failed,
            Resolution::Retry => EngineResolution::Retry,
        };
        let d = self
            .session
            .run
            .deliver(ExternalEvent::Resolve {
                node: t.node,
                resolution,
                variables: BTreeMap::new(),
            })
            .map_err(|e| e.to_string())?;
        Ok(tone_of(&d))
    }

    fn view(&self) -> Result<View, String> {
        engine_view::build(&Source {
            store: self.session.run.store(),
            graph: self.session.run.graph(),
            instance: self.session.run.instance_id(),
            now_abs_ms: Some(self.session.run.clock().now_ms()),
            label: &self.label,
            read_only: false,
            diagram: Some(&self.diagram),
        })
    }
}

impl Drive {
    /// Run one command on the driven instance.
    fn execute(&mut self, command: &Command) -> Result<Report, String> {
        match command {
            Command::Step => self.step(),
            Command::Advance { ms } => self.advance(*ms),
            Command::Fail {
                code,
                class,
                retry_after_ms,
            } => self.attempt(
                TaskOutcome::Fail {
                    code: code.clone(),
                    class: *class,
                    retry_after: retry_after_ms.map(|ms| Duration::from_millis(ms.max(0) as u64)),
                    message: Some("failed by hand in the console".into()),
                },
                "fail",
            ),
            Command::Succeed => self.attempt(TaskOutcome::Ok(BTreeMap::new()), "succeed"),
            Command::Respond { target, body } => self.respond(target, body),
            Command::Poison => self.poison(),
            Command::Resolve(r) => self.resolve(*r),
            Command::Refresh => Ok(Report::info("re-read the store")),
            Command::Open { .. } => Ok(Report::info("this console drives one instance")),
            Command::PreviewMigration { .. } | Command::Migrate => Ok(Report::warn(
                "repair by migration works on a database: `qflow console --db FILE`",
            )),
            Command::SetPause { .. } => Ok(Report::warn(
                "pausing works on a database: `qflow console --db FILE`",
            )),
            Command::SetQuarantine { .. } => Ok(Report::warn(
                "quarantine works on a database: `qflow console --db FILE`",
            )),
        }
    }
}

impl Backend for EngineBackend {
    fn execute(&mut self, command: &Command) -> Result<Report, String> {
        match self {
            EngineBackend::Drive(d) => d.execute(command),
            EngineBackend::Attach(a) => match command {
                Command::Open { instance } => {
                    let status = a.select(instance)?;
                    a.preview = None;
                    if status == qflow_engine::instance::Status::Failed {
                        return Ok(a.repair_hint(instance));
                    }
                    if status.is_terminal() {
                        return Ok(Report::info(format!(
                            "{instance}: {} · esc back to the list",
                            status.as_str().to_uppercase()
                        )));
                    }
                    let scenario = a.drive_selected()?;
                    Ok(Report::info(format!(
                        "{instance}: {} · space steps it{scenario} · m migrates it · esc back to the list",
                        status.as_str().to_uppercase()
                    )))
                }
                Command::PreviewMigration {
                    target,
                    mapping,
                    reset_budget,
                    failed_of: None,
                } => a.preview(target, mapping.as_deref(), *reset_budget),
                Command::PreviewMigration {
                    target,
                    mapping,
                    reset_budget,
                    failed_of: Some(d),
                } => a.preview_batch(*d, target, mapping.as_deref(), *reset_budget),
                Command::Migrate => a.migrate(),
                Command::SetPause { kind, value, pause } => {
                    set_pause(&mut a.store, &a.actor, kind, value, *pause)
                }
                Command::SetQuarantine {
                    instance,
                    quarantine,
                } => set_quarantine(&mut a.store, &a.actor, instance, *quarantine),
                Command::Refresh => Ok(Report::info("re-read the store")),
                other => match a.driving.as_mut() {
                    // The open instance is unfinished: drive it.
                    Some(d) => d.execute(other),
                    None => Ok(Report::warn(
                        "this instance is finished: it is inspected, not driven",
                    )),
                },
            },
        }
    }

    fn view(&mut self) -> Result<Option<View>, String> {
        match self {
            EngineBackend::Drive(d) => d.view().map(Some),
            EngineBackend::Attach(a) => match &a.selected {
                None => Ok(None),
                // An unfinished instance is driven: the run's view.
                Some(_) if a.driving.is_some() => {
                    a.driving.as_ref().expect("checked").view().map(Some)
                }
                Some(s) => engine_view::build(&Source {
                    store: &a.store,
                    graph: &s.graph,
                    instance: &s.id,
                    now_abs_ms: None,
                    label: &a.label,
                    read_only: true,
                    diagram: Some(&s.diagram),
                })
                .map(Some),
            },
        }
    }

    fn instances(&mut self) -> Result<Vec<InstanceRowView>, String> {
        let EngineBackend::Attach(a) = self else {
            return Ok(Vec::new());
        };
        let rows = a.store.instances().map_err(|e| e.to_string())?;
        // Two whole-store reads, not one per instance.
        let mut held: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (id, h) in a.store.held_parks().map_err(|e| e.to_string())? {
            let words = format!("{} {}", h.kind.flag(), h.value);
            let v = held.entry(id).or_default();
            if !v.contains(&words) {
                v.push(words);
            }
        }
        let quarantined: std::collections::BTreeSet<String> = a
            .store
            .quarantined()
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|q| q.instance)
            .collect();
        let mut out: Vec<InstanceRowView> = rows
            .into_iter()
            .map(|r| {
                let snap = Snapshot::decode(&r.snapshot).unwrap_or_default();
                let f = snap.failure();
                InstanceRowView {
                    status: r.status,
                    code: f.as_ref().map(|f| f.code.clone()),
                    reason: f.as_ref().map(|f| f.reason.clone()),
                    last_at_ms: r.updated_ms - r.started_ms,
                    held_by: held.remove(&r.id).unwrap_or_default(),
                    quarantined: quarantined.contains(&r.id),
                    process: r.process_id,
                    deployment: r.deployment_id,
                    id: r.id,
                }
            })
            .collect();
        sort_instances(&mut out);
        Ok(out)
    }

    fn fleet(&mut self) -> Result<Option<FleetView>, String> {
        let EngineBackend::Attach(a) = self else {
            return Ok(None);
        };
        let o = a.store.observations().map_err(|e| e.to_string())?;
        let minutes = a.store.attempts_per_minute().map_err(|e| e.to_string())?;
        let parked = a.store.parked_by_cause().map_err(|e| e.to_string())?;
        let mut observations = fleet_lines(&o);
        // The live load (the window `qflow stats` and the web page show):
        // per dependency, its requests in the last hour of the store's
        // clock, the busiest minute and the latest, so a rising outage or
        // a release ramp reads here as it happens.
        let load = a
            .store
            .load_window(qflow_engine::store::stats::LOAD_WINDOW_MINUTES)
            .map_err(|e| e.to_string())?;
        if load.last_minute.is_some() {
            observations.push((
                format!("requests in {} min", load.minutes),
                load_words(&load),
            ));
        }
        // The release ramps, once there is one (the newest first): what
        // each released, who and why, and how many retries still wait.
        let releases = a.store.releases().map_err(|e| e.to_string())?;
        if !releases.is_empty() {
            let lines: Vec<String> = releases
                .iter()
                .map(|r| {
                    let state = match r.stopped_ms {
                        Some(_) => format!(
                            "stopped {}",
                            Actor::words(r.stopped_by.as_deref(), r.stop_reason.as_deref())
                        ),
                        None if r.waiting > 0 => {
                            format!("{} waiting", qflow_engine::text::group(r.waiting))
                        }
                        None => "done".into(),
                    };
                    format!(
                        "ramp {} of {} ({}) {}: {} retry park(s), {state}",
                        r.id,
                        qflow_engine::release::target_words(r.kind, &r.value),
                        r.shape_words(),
                        Actor::words(Some(&r.by), r.reason.as_deref()),
                        qflow_engine::text::group(r.parks)
                    )
                })
                .collect();
            observations.push(("release ramps".into(), lines.join("; ")));
        }
        // The exhaustion forecast (the engine's, as `qflow stats` shows it):
        // how many parked instances reach FAILED within the day, and the
        // hour most of them do.
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let (forecast, _) =
            qflow_engine::forecast::fleet(&a.store, wall).map_err(|e| e.to_string())?;
        observations.push(("exhaustion forecast".into(), forecast_words(&forecast)));
        // The circuit breakers, once there is one: each one's phase, how
        // often it opened, and its last move with why (docs/outage.md).
        let breakers = a.store.breakers().map_err(|e| e.to_string())?;
        if !breakers.is_empty() {
            let moves = a.store.breaker_transitions(0).map_err(|e| e.to_string())?;
            let lines: Vec<String> = breakers
                .iter()
                .map(|b| {
                    let last = moves
                        .iter()
                        .rev()
                        .find(|m| m.dependency == b.dependency)
                        .map(|m| {
                            format!(
                                "; last {} -> {}: {}{}",
                                m.from.as_str(),
                                m.to.as_str(),
                                m.reason,
                                m.release
                                    .map(|r| format!(" (release ramp {r})"))
                                    .unwrap_or_default()
                            )
                        })
                        .unwrap_or_default();
                    format!(
                        "{} {} (opened {}×){last}",
                        b.dependency,
                        b.state.phase.as_str(),
                        b.state.opened
                    )
                })
                .collect();
            observations.push(("breakers".into(), lines.join("; ")));
        }
        Ok(Some(FleetView {
            observations,
            per_minute: minutes.into_iter().collect(),
            targets: pause_targets(&o, &parked),
        }))
    }

    fn deployments(&mut self) -> Result<Vec<DeploymentRowView>, String> {
        let EngineBackend::Attach(a) = self else {
            return Ok(Vec::new());
        };
        let rows = a.store.deployments().map_err(|e| e.to_string())?;
        let onto: Vec<Option<i64>> = rows
            .iter()
            .map(|d| repair::likely_target_among(&rows, d.id))
            .collect();
        Ok(rows
            .into_iter()
            .zip(onto)
            .map(|(d, repair_onto)| DeploymentRowView {
                repair_onto,
                id: d.id,
                process: d.process_id,
                model: d.origin,
                hash: d.hash.chars().take(12).collect(),
                instances: d.counts.in_words().unwrap_or_else(|| "no instances".into()),
                retired: d.retired_ms.is_some(),
            })
            .collect())
    }

    fn migration_preview(&mut self) -> Option<MigrationPreview> {
        match self {
            EngineBackend::Attach(a) => a.preview.as_ref().map(|(p, _, _)| p.clone()),
            EngineBackend::Drive(_) => None,
        }
    }

    fn failure_codes(&mut self) -> Vec<String> {
        match self {
            EngineBackend::Drive(d) => d.codes.clone(),
            EngineBackend::Attach(_) => Vec::new(),
        }
    }
}

impl Drop for Attach {
    fn drop(&mut self) {
        self.stop_driving();
    }
}

impl Attach {
    /// Drive the open (unfinished) instance: a local run of it on its own
    /// connection to the database, under the scenario beside the model its
    /// deployment was deployed from (as `qflow resume` finds it), else
    /// none. Returns how the status line names the scenario.
    fn drive_selected(&mut self) -> Result<String, String> {
        self.stop_driving();
        let Some(selected) = &self.selected else {
            return Ok(String::new());
        };
        let id = selected.id.clone();
        let row = self
            .store
            .instance(&id)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no instance {id}"))?;
        let origin = self
            .store
            .deployments()
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|d| d.id == row.deployment_id)
            .and_then(|d| d.origin);
        let file =
            origin.and_then(|o| qflow_engine::runtime::session::scenario_beside(Path::new(&o)));
        let scenario = match &file {
            None => Scenario::default(),
            Some(p) => {
                let (s, _) = load_scenario(p, &ScenarioChoice::File(p.clone()))
                    .map_err(|e| e.to_string())?;
                let misfits = qflow_engine::runtime::scenario_check::check(&s, &selected.graph);
                if let Some(m) = misfits.first() {
                    return Err(format!("scenario {}: {m}", p.display()));
                }
                s
            }
        };
        let store = Store::connect_existing(&self.location)
            .map_err(|e| connect_error(&self.location, &e))?;
        let codes = scenario_codes(&scenario);
        let run =
            qflow_engine::runtime::LocalRun::attach(store, &id, scenario, VirtualClock::new(0))
                .map_err(|e| e.to_string())?;
        self.driving = Some(Box::new(Drive {
            session: Session {
                run,
                db: SessionDb::new(Some(&self.location), "console"),
            },
            diagram: selected.diagram.clone(),
            label: self.label.clone(),
            codes,
            opening: Report::info(""),
        }));
        Ok(match file {
            Some(p) => format!(" (scenario {})", p.display()),
            None => " (no scenario: tasks succeed)".to_string(),
        })
    }

    /// Stop driving the open instance: its claim is given up.
    fn stop_driving(&mut self) {
        if let Some(mut d) = self.driving.take() {
            let _ = d.session.run.release();
        }
    }

    /// Show this instance: its deployment's model compiled and drawn.
    fn select(&mut self, instance: &str) -> Result<qflow_engine::instance::Status, String> {
        self.stop_driving();
        let row = self
            .store
            .instance(instance)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no instance {instance}"))?;
        let source = self
            .store
            .deployment_source(row.deployment_id)
            .map_err(|e| e.to_string())?
            .ok_or("the instance's deployment is missing from the database")?;
        // A stored deployment has no file to find a configuration beside:
        // it is judged by qflow's defaults, as the runtime loads it.
        let defs = load_model(
            &source,
            &format!("deployment {}", row.deployment_id),
            &qflow_engine::config::Config::default(),
        )?;
        let graph = Graph::compile(&defs).map_err(|e| e.to_string())?;
        let diagram = diagram_of(&defs, &source, &row.process_id)
            .ok_or("the instance's deployment defines no process")?;
        self.selected = Some(Selected {
            id: instance.to_string(),
            graph,
            diagram,
        });
        Ok(row.status)
    }

    /// `--to` as the command line reads it: a deployment id, else a model file.
    fn target(&self, to: &str) -> Result<Target, String> {
        if let Ok(id) = to.parse::<i64>() {
            if !Path::new(to).exists() {
                return Ok(Target::Deployment(id));
            }
        }
        let source = std::fs::read_to_string(to).map_err(|e| format!("cannot read {to}: {e}"))?;
        let config = qflow_engine::config::Config::for_model(Path::new(to));
        let defs = load_model(&source, to, &config)?;
        let graph = Graph::compile(&defs).map_err(|e| format!("{to}: {e}"))?;
        Ok(Target::Model {
            source,
            origin: Some(to.to_string()),
            graph: Box::new(graph),
        })
    }

    /// Plan a migration of the open instance; the plan (or the refusal) is
    /// kept for the confirmation.
    fn preview(
        &mut self,
        to: &str,
        mapping: Option<&[(String, String)]>,
        reset_budget: bool,
    ) -> Result<Report, String> {
        let Some(selected) = &self.selected else {
            return Ok(Report::warn("open an instance first"));
        };
        let instance = selected.id.clone();
        let target = match self.target(to) {
            Ok(t) => t,
            Err(e) => return Ok(Report::bad(e)),
        };
        let mapping: BTreeMap<String, String> = match mapping {
            Some(m) => m.iter().cloned().collect(),
            None => repair::suggest_mapping(&self.store, &instance, &target).unwrap_or_default(),
        };
        let version = self
            .store
            .instance(&instance)
            .map_err(|e| e.to_string())?
            .map_or(0, |r| r.version);
        let (lines, ok) =
            match repair::plan(&self.store, &instance, &target, &mapping, reset_budget) {
                Ok(p) => (p.plan.describe(), true),
                Err(e) => (
                    e.to_string()
                        .lines()
                        .map(|l| l.trim_start_matches("  - ").to_string())
                        .collect(),
                    false,
                ),
            };
        self.batch.clear();
        let preview = MigrationPreview {
            failed_of: None,
            instance: instance.clone(),
            target: to.to_string(),
            mapping: mapping.into_iter().collect(),
            reset_budget,
            lines,
            ok,
        };
        self.preview = Some((preview, target, version));
        Ok(Report::info(if ok {
            format!("planned the migration of {instance} onto {to}: review it, then apply")
        } else {
            format!("the migration of {instance} onto {to} is refused as planned: edit the mapping or cancel")
        }))
    }

    /// Plan the repair of every FAILED instance of deployment `from` onto
    /// `to` with one mapping (the engine's suggestion for them all unless
    /// given): the engine's `repair::failed_of` and `repair::plan_all`, as
    /// `qflow migrate --all-failed-of`. The plans (or the refusal) are kept
    /// for the confirmation, summarised: instances planned alike share
    /// their lines.
    fn preview_batch(
        &mut self,
        from: i64,
        to: &str,
        mapping: Option<&[(String, String)]>,
        reset_budget: bool,
    ) -> Result<Report, String> {
        let instances = repair::failed_of(&self.store, from).map_err(|e| e.to_string())?;
        if instances.is_empty() {
            self.preview = None;
            return Ok(Report::info(format!(
                "deployment {from} has no FAILED instance: nothing to repair"
            )));
        }
        let target = match self.target(to) {
            Ok(t) => t,
            Err(e) => return Ok(Report::bad(e)),
        };
        let mapping: BTreeMap<String, String> = match mapping {
            Some(m) => m.iter().cloned().collect(),
            None => {
                repair::suggest_mapping_all(&self.store, &instances, &target).unwrap_or_default()
            }
        };
        let what = format!(
            "{} FAILED instance{} of deployment {from}",
            instances.len(),
            if instances.len() == 1 { "" } else { "s" }
        );
        let (lines, ok) =
            match repair::plan_all(&self.store, &instances, &target, &mapping, reset_budget) {
                Ok(plans) => {
                    self.batch = plans
                        .iter()
                        .map(|p| (p.plan.instance.clone(), p.version))
                        .collect();
                    (batch_lines(&plans), true)
                }
                Err((id, e)) => {
                    self.batch.clear();
                    let mut lines = vec![format!("{id} is refused, so none is moved:")];
                    lines.extend(
                        e.to_string()
                            .lines()
                            .map(|l| format!("  {}", l.trim_start_matches("  - "))),
                    );
                    (lines, false)
                }
            };
        let preview = MigrationPreview {
            instance: what.clone(),
            failed_of: Some(from),
            target: to.to_string(),
            mapping: mapping.into_iter().collect(),
            reset_budget,
            lines,
            ok,
        };
        self.preview = Some((preview, target, 0));
        Ok(Report::info(if ok {
            format!("planned the repair of {what} onto {to}: review it, then apply")
        } else {
            format!(
                "the repair of {what} onto {to} is refused as planned: edit the mapping or cancel"
            )
        }))
    }

    /// Apply a batch repair: each planned instance at the version it was
    /// planned at (one that moved since is left as it is, and named).
    fn migrate_batch(&mut self, p: &MigrationPreview, target: &Target) -> Report {
        let mapping: BTreeMap<String, String> = p.mapping.iter().cloned().collect();
        let batch = std::mem::take(&mut self.batch);
        let mut moved = 0;
        let mut onto = None;
        let mut refused: Vec<String> = Vec::new();
        for (id, version) in &batch {
            match repair::apply(
                &mut self.store,
                id,
                target,
                &mapping,
                p.reset_budget,
                Some(*version),
            ) {
                Ok((_, deployment)) => {
                    moved += 1;
                    onto = Some(deployment);
                }
                Err(e) => refused.push(format!("{id}: {e}")),
            }
        }
        let onto = onto.map_or_else(|| p.target.clone(), |d| format!("deployment {d}"));
        if refused.is_empty() {
            Report::good(format!(
                "repaired {moved} of {} onto {onto} · enter opens one, space continues it",
                p.instance
            ))
        } else {
            Report::bad(format!(
                "repaired {moved} of {} onto {onto}; not moved: {}",
                p.instance,
                refused.join("; ")
            ))
        }
    }

    /// Apply the previewed migration (only at the version it was planned
    /// at), then show the instance on its new deployment.
    fn migrate(&mut self) -> Result<Report, String> {
        let Some((p, target, version)) = self.preview.take() else {
            return Ok(Report::warn("nothing planned: m plans a migration"));
        };
        if p.failed_of.is_some() {
            return Ok(self.migrate_batch(&p, &target));
        }
        let mapping: BTreeMap<String, String> = p.mapping.iter().cloned().collect();
        match repair::apply(
            &mut self.store,
            &p.instance,
            &target,
            &mapping,
            p.reset_budget,
            Some(version),
        ) {
            Ok((d, deployment)) => {
                let status = self.select(&p.instance)?;
                let next = if status.is_terminal() {
                    String::new()
                } else {
                    let scenario = self.drive_selected()?;
                    format!(" · space continues it{scenario}")
                };
                Ok(Report::good(format!(
                    "migrated {} onto deployment {deployment}: {}{next}",
                    p.instance,
                    d.status.as_str().to_uppercase(),
                )))
            }
            Err(e) => Ok(Report::bad(format!(
                "{}: {e}; nothing was changed",
                p.instance
            ))),
        }
    }

    /// Why a FAILED instance failed and what a repair would do, in a line.
    fn repair_hint(&self, instance: &str) -> Report {
        let why = self
            .store
            .instance(instance)
            .ok()
            .flatten()
            .and_then(|r| Snapshot::decode(&r.snapshot).ok())
            .and_then(|s| s.failure())
            .map(|f| format!("FAILED at {}: {} ({})", f.node, f.code, f.reason))
            .unwrap_or_else(|| "FAILED".into());
        let Ok(Some(to)) = repair::likely_target(&self.store, instance) else {
            return Report::warn(format!(
                "{why} · to repair: deploy a fixed model (`qflow deploy MODEL --db {}`), then m",
                self.label
            ));
        };
        let target = Target::Deployment(to);
        let mapping = repair::suggest_mapping(&self.store, instance, &target).unwrap_or_default();
        match repair::plan(&self.store, instance, &target, &mapping, false) {
            Ok(p) => {
                let moves: Vec<String> = p
                    .plan
                    .moves
                    .iter()
                    .map(|m| {
                        let budget = m
                            .budget
                            .and_then(|b| b.left())
                            .map(|l| format!(", {l}"))
                            .unwrap_or_default();
                        format!("{} → {}{budget}", m.from, m.to)
                    })
                    .collect();
                Report::warn(format!(
                    "{why} · a repair onto deployment {to} would move {} and make it {} · m plans it",
                    moves.join("; "),
                    p.plan.status_after.as_str().to_uppercase()
                ))
            }
            Err(e) => Report::warn(format!(
                "{why} · onto deployment {to}: {} · m plans it with a mapping",
                e.to_string().lines().next().unwrap_or_default()
            )),
        }
    }
}

/// A batch's plans in words: instances whose plans read alike (but for
/// their id) share one group, its first few ids named.
fn batch_lines(plans: &[repair::Planned]) -> Vec<String> {
    let mut groups: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for p in plans {
        let mut lines = p.plan.describe();
        let id = p.plan.instance.clone();
        if let Some(first) = lines.first_mut() {
            *first = first.replacen(&format!("instance {id}: "), "", 1);
        }
        match groups.iter_mut().find(|(l, _)| *l == lines) {
            Some((_, ids)) => ids.push(id),
            None => groups.push((lines, vec![id])),
        }
    }
    let mut out = vec![format!(
        "every plan checked, none refused ({} in all):",
        plans.len()
    )];
    for (lines, ids) in groups {
        let named: Vec<&str> = ids.iter().take(3).map(String::as_str).collect();
        let more = if ids.len() > 3 {
            format!(" and {} more", ids.len() - 3)
        } else {
            String::new()
        };
        let mut lines = lines.into_iter();
        out.push(format!(
            "{}{more}: {}",
            named.join(", "),
            lines.next().unwrap_or_default()
        ));
        out.extend(lines);
    }
    out
}

/// The observations as the fleet panel's lines.
/// The exhaustion forecast in one line: per dependency, how many of its
/// parked instances reach FAILED within the forecast's hours and the hour
/// most of them do (`payments.charge: 3 of 3 in 24 h, most (3) in 13h`),
/// then those held.
fn forecast_words(f: &qflow_engine::runtime::forecast::Forecast) -> String {
    use qflow_engine::text::group;
    if f.dependencies.is_empty() {
        return "no retry park".into();
    }
    f.dependencies
        .iter()
        .map(|d| {
            let mut s = format!(
                "{}: {} of {} in {} h",
                d.dependency,
                group(d.failed()),
                group(d.parked),
                f.hours
            );
            if let Some(h) = d
                .hours
                .iter()
                .max_by_key(|h| (h.failed, std::cmp::Reverse(h.hour)))
            {
                s += &format!(
                    ", most ({}) {}",
                    group(h.failed),
                    crate::fmt::until(h.hour_start_ms, f.now_ms)
                );
            }
            if d.held > 0 {
                s += &format!(", {} held", group(d.held));
            }
            s
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The load window in a line: each dependency's requests in the window,
/// its busiest minute and its last minute's, most requests first.
fn load_words(load: &qflow_engine::store::stats::LoadWindow) -> String {
    use qflow_engine::text::group;
    if load.dependencies.is_empty() {
        return "no attempt or request".into();
    }
    load.dependencies
        .iter()
        .map(|d| {
            format!(
                "{} {}, peak {}/min, last {}",
                d.dependency,
                group(d.requests()),
                group(d.peak_requests()),
                group(d.latest_requests())
            )
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

fn fleet_lines(o: &qflow_engine::store::stats::Observations) -> Vec<(String, String)> {
    use qflow_engine::text::group;
    let or_none = |v: Vec<String>| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(" · ")
        }
    };
    let at =
        |ms: Option<i64>| ms.map_or_else(|| "none".to_string(), qflow_engine::duration::instant);
    let failed: u64 = o.terminal.iter().map(|t| t.count).sum();
    vec![
        (
            "instances".into(),
            format!(
                "{}: {} unfinished, {} completed, {} failed",
                group(o.instances),
                group(o.unfinished),
                group(o.completed),
                group(failed)
            ),
        ),
        (
            "pending by class".into(),
            or_none(
                o.pending_by_class
                    .iter()
                    .map(|c| format!("{} {}", c.label, group(c.count)))
                    .collect(),
            ),
        ),
        (
            "attempts".into(),
            format!(
                "{} · per completed effect {}",
                group(o.attempts),
                o.attempts_per_completed
                    .map_or_else(|| "none yet".into(), |a| format!("{a:.2}"))
            ),
        ),
        ("oldest next eligible".into(), at(o.oldest_next_eligible_ms)),
        ("unknown outcomes".into(), group(o.unknown_outcomes)),
        (
            // What `qflow serve` decided later than its threshold after due
            // (as `qflow stats` says it under "decisions on time").
            "late decisions".into(),
            if o.late.decisions == 0 {
                "none".into()
            } else {
                format!(
                    "{} (worst {} ms late, the last {} ms)",
                    group(o.late.decisions),
                    o.late.worst_ms.unwrap_or(0),
                    o.late.last_ms.unwrap_or(0)
                )
            },
        ),
        (
            "FAILED".into(),
            or_none(
                o.terminal
                    .iter()
                    .map(|t| format!("{} {} {}", t.code, t.reason, group(t.count)))
                    .collect(),
            ),
        ),
        (
            "by dependency".into(),
            or_none(
                o.by_dependency
                    .iter()
                    .map(|d| {
                        format!(
                            "{} {} (peak {}/min)",
                            d.dependency,
                            group(d.attempts),
                            group(d.peak_per_minute)
                        )
                    })
                    .collect(),
            ),
        ),
        (
            "backlog age".into(),
            or_none(
                o.backlog_age
                    .iter()
                    .filter(|c| c.count > 0)
                    .map(|c| format!("{} {}", c.label, group(c.count)))
                    .collect(),
            ),
        ),
        (
            "paused".into(),
            or_none(
                o.paused
                    .iter()
                    .map(|p| {
                        format!(
                            "{} {} (holds {}) {}",
                            p.kind.flag(),
                            p.value,
                            group(p.holding),
                            Actor::words(p.by.as_deref(), p.reason.as_deref())
                        )
                    })
                    .collect(),
            ),
        ),
        ("quarantined".into(), group(o.quarantined)),
    ]
}

/// What the fleet's `P` offers: the failure classes, then the dependencies,
/// that the retry parks armed now record, each with how many it would hold
/// (most first), then any other pause in force: what is in the fleet, as
/// an open instance's `P` offers what is in that instance.
fn pause_targets(
    o: &qflow_engine::store::stats::Observations,
    parked: &[qflow_engine::store::contain::ParkedCause],
) -> Vec<crate::view::PauseTarget> {
    use qflow_engine::text::group;
    let mut out: Vec<crate::view::PauseTarget> = Vec::new();
    let mut push = |kind: &str, value: &str, about: String| {
        if out.iter().any(|t| t.kind == kind && t.value == value) {
            return;
        }
        let p = o
            .paused
            .iter()
            .find(|p| p.kind.flag() == kind && p.value == value);
        out.push(crate::view::PauseTarget {
            kind: kind.into(),
            value: value.into(),
            paused: p.is_some(),
            hint: match p {
                Some(p) => format!(
                    "paused {}, holding {} retry park(s)",
                    Actor::words(p.by.as_deref(), None),
                    group(p.holding)
                ),
                None => about,
            },
        });
    };
    for c in parked {
        let parks = match c.parks {
            1 => "1 retry park".to_string(),
            n => format!("{} retry parks", group(n)),
        };
        push(c.kind.flag(), &c.value, parks);
    }
    for p in &o.paused {
        push(p.kind.flag(), &p.value, String::new());
    }
    out
}

/// Quarantine or release an instance, as `qflow quarantine` and `release` do.
fn set_quarantine(
    store: &mut qflow_engine::store::Store,
    actor: &Actor,
    instance: &str,
    quarantine: bool,
) -> Result<Report, String> {
    let c = if quarantine {
        store.quarantine(
            instance,
            qflow_engine::runtime::clock::system_now_ms(),
            actor,
        )
    } else {
        store.release_quarantine(
            instance,
            qflow_engine::runtime::clock::system_now_ms(),
            actor,
        )
    };
    let c = c.map_err(|e| e.to_string())?;
    let already = if c.changed { "" } else { " (it already was)" };
    let by = Actor::words(c.by.as_deref(), c.reason.as_deref());
    Ok(if quarantine {
        Report::warn(format!(
            "quarantined {instance} {by}{already}: nothing decides for it, its state is kept · Q again releases it"
        ))
    } else {
        let whose = if c.changed {
            format!(
                " · it was quarantined {by}, released {}",
                Actor::words(Some(&c.logged.by), None)
            )
        } else {
            String::new()
        };
        Report::good(format!(
            "released {instance}{already}: it runs again, what fell due meanwhile is due at once{whose}"
        ))
    })
}

/// Pause or unpause, from the fleet view.
fn set_pause(
    store: &mut qflow_engine::store::Store,
    actor: &Actor,
    of: &str,
    value: &str,
    pause: bool,
) -> Result<Report, String> {
    use qflow_engine::store::contain::PauseKind;
    let k = if of == "class" {
        PauseKind::Class
    } else {
        PauseKind::Dependency
    };
    let c = if pause {
        store.pause(
            k,
            value,
            qflow_engine::runtime::clock::system_now_ms(),
            actor,
        )
    } else {
        store.unpause(
            k,
            value,
            qflow_engine::runtime::clock::system_now_ms(),
            actor,
        )
    };
    let c = c.map_err(|e| e.to_string())?;
    let n = qflow_engine::text::group(c.parks);
    let by = Actor::words(c.by.as_deref(), None);
    Ok(if pause {
        Report::warn(format!(
            "paused {of} {value} {by}: {n} retry park(s) held, each keeps its due time · P again unpauses"
        ))
    } else {
        let whose = if c.changed {
            format!(
                " · it was paused {by}, lifted {}",
                Actor::words(Some(&c.logged.by), None)
            )
        } else {
            String::new()
        };
        Report::good(format!(
            "unpaused {of} {value}: {n} retry park(s) re-driven when due{whose}"
        ))
    })
}
