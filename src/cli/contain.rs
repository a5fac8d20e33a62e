//! Containment: `qflow pause|unpause --db DB --class CLASS | --dependency
//! NAME` and `qflow quarantine|release INSTANCE --db DB`. The store keeps
//! the pauses and quarantines ([`qflow_engine::store::contain`]); this
//! module parses and reports.

use std::process::ExitCode;

use qflow_engine::instance::event::FailureClass;
use qflow_engine::release::Preview;
use qflow_engine::runtime::clock::system_now_ms;
use qflow_engine::runtime::ramp::{parse_max_rate, Ramp, Shape, VIRTUAL_EPOCH_LIMIT_MS};
use qflow_engine::store::contain::{Actor, PauseChange, PauseKind};
use qflow_engine::store::release::ReleaseKind;
use qflow_engine::store::{Location, StoreError};
use qflow_engine::text::group;
use serde_json::json;

use super::ops::{self, Format, REFUSED, USAGE};
use super::run::json_line;

/// Hold back (or let go) every retry park of a failure class or a
/// dependency.
#[derive(Debug, clap::Args)]
pub(crate) struct PauseArgs {
    #[command(flatten)]
    pub what: PauseTarget,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// Who contains or lifts a containment, and why: kept with a pause or a
/// quarantine and shown wherever it is (`instances`, `show`, `stats`, the
/// console), and written to the containment log for every action.
#[derive(Debug, clap::Args)]
pub(crate) struct RecordArgs {
    /// Who is acting, for the record and the containment log (default:
    /// the account and host this runs as, user@host).
    #[arg(long, value_name = "NAME")]
    pub by: Option<String>,
    /// Why, for the record and the containment log (shown beside it).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

impl RecordArgs {
    /// The actor to record: `--by`, else `user@host`; a blank `--by` is
    /// refused (the record would name no one).
    pub(crate) fn actor(&self) -> Result<Actor, String> {
        let actor = match &self.by {
            Some(b) if b.trim().is_empty() => {
                return Err("--by needs a name (leave it out to record user@host)".into())
            }
            Some(b) => Actor::new(b.trim()),
            None => Actor::this_user(),
        };
        Ok(actor.because(self.reason.as_deref()))
    }
}

/// Lift a pause, at once or by a planned release (`--ramp`, `--max-rate`,
/// previewed first; `--dry-run` previews only); or stop a release ramp.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["class", "dependency", "stop_ramp"])))]
pub(crate) struct UnpauseArgs {
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    /// The failure class whose retries to let go: transient, rate-limited or deferred.
    #[arg(long, value_name = "CLASS")]
    pub class: Option<String>,
    /// The dependency whose retries to let go: a registered task's name
    /// (`payments.charge`) or a channel (`bank`).
    #[arg(long, value_name = "NAME")]
    pub dependency: Option<String>,
    /// Let a dependency go that no deployed model of the database calls.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub shape: RampArgs,
    /// Stop release ramp ID (`qflow stats` lists them under releases): its
    /// parks not yet let go get their own due times back and are held by
    /// the pause again, made anew by --by for --reason.
    #[arg(long, value_name = "ID", conflicts_with_all = ["class", "dependency", "ramp", "max_rate", "dry_run"])]
    pub stop_ramp: Option<i64>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// A planned release's shape and preview.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RampArgs {
    /// Release the held parks at these per-minute rates: a comma list
    /// ending in /min (`10,50,200/min`: 10 in the first minute, 50 in the
    /// second, 200 in every minute after). Durable: every process serving
    /// the database honours it, across restarts.
    #[arg(long, value_name = "R")]
    pub ramp: Option<String>,
    /// At most N releases per minute of one dependency (repeatable; with
    /// or without --ramp): `--max-rate bank=20/min`.
    #[arg(long = "max-rate", value_name = "DEPENDENCY=N/min")]
    pub max_rate: Vec<String>,
    /// Print the preview (attempts per minute per dependency, with and
    /// without the ramp) and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

impl RampArgs {
    /// The shape asked for, each value checked (an error names the flag
    /// and a literal fix).
    pub(crate) fn shape(&self) -> Result<Shape, String> {
        let ramp = self.ramp.as_deref().map(Ramp::parse).transpose()?;
        let mut max_rate = std::collections::BTreeMap::new();
        for m in &self.max_rate {
            let (d, n) = parse_max_rate(m)?;
            if max_rate.insert(d.clone(), n).is_some() {
                return Err(format!(
                    "--max-rate {m}: {d} is capped twice: give one --max-rate {d}=N/min"
                ));
            }
        }
        Ok(Shape { ramp, max_rate })
    }

    /// Whether a planned release was asked for (a shape, or a preview).
    pub(crate) fn planned(&self) -> bool {
        self.ramp.is_some() || !self.max_rate.is_empty() || self.dry_run
    }
}

/// What a pause or an unpause names: a failure class or a dependency.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["class", "dependency"])))]
pub(crate) struct PauseTarget {
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    /// The failure class whose retries to hold: transient, rate-limited or deferred
    /// (the classes that park a retry).
    #[arg(long, value_name = "CLASS")]
    pub class: Option<String>,
    /// The dependency whose retries to hold: a registered task's name
    /// (`payments.charge`) or a channel (`bank`).
    #[arg(long, value_name = "NAME")]
    pub dependency: Option<String>,
    /// Pause (or unpause) a dependency no deployed model of the database
    /// calls (one about to be deployed). Without it such a name is refused,
    /// with the known ones: a typo must not pass for containment. A class
    /// is checked by its name alone, so `--force` changes nothing there.
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

/// Set one instance aside (or let it run again).
#[derive(Debug, clap::Args)]
pub(crate) struct QuarantineArgs {
    #[command(flatten)]
    pub which: QuarantineTarget,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// Let quarantined instances run again: at once, or their retries by a
/// planned release (`--ramp`, `--max-rate`, previewed first; `--dry-run`
/// previews only).
#[derive(Debug, clap::Args)]
pub(crate) struct ReleaseArgs {
    /// The instances' ids (`qflow instances` lists them): one, or several
    /// to release together.
    #[arg(required = true, value_name = "INSTANCE")]
    pub instances: Vec<String>,
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    #[command(flatten)]
    pub shape: RampArgs,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// The instance a quarantine or a release names.
#[derive(Debug, clap::Args)]
pub(crate) struct QuarantineTarget {
    /// The instance's id (`qflow instances` lists them).
    pub instance: String,
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

fn what(args: &PauseTarget) -> Result<(PauseKind, String), String> {
    if let Some(d) = &args.dependency {
        if d.trim().is_empty() {
            return Err("--dependency needs a name: a registered task (payments.charge) or a channel (bank)".into());
        }
        return Ok((PauseKind::Dependency, d.clone()));
    }
    let class = args.class.clone().unwrap_or_default();
    parked_class(&class).map(|c| (PauseKind::Class, c))
}

/// A failure class a pause can name: one that parks a retry (transient,
/// rate-limited, deferred); the others are refused with why (the web inspector's
/// pause checks the same way).
pub(crate) fn parked_class(class: &str) -> Result<String, String> {
    match FailureClass::parse(class) {
        Some(
            FailureClass::Transient | FailureClass::RateLimited | FailureClass::Deferred,
        ) => Ok(class.to_string()),
        Some(FailureClass::Permanent) => Err(
            "--class permanent: a permanent failure is never retried (it fails at once), so nothing of it parks; pause transient, rate-limited or deferred".into(),
        ),
        Some(FailureClass::UnknownOutcome) => Err(
            "--class unknown-outcome: an unknown outcome is never retried blindly (it waits for reconciliation), so nothing of it parks; pause transient, rate-limited or deferred".into(),
        ),
        None => Err(format!(
            "--class {class}: not a failure class; the classes that park a retry are transient, rate-limited and deferred"
        )),
    }
}

pub(crate) fn pause(args: PauseArgs) -> ExitCode {
    change_pause(args, true)
}

pub(crate) fn unpause(args: UnpauseArgs) -> ExitCode {
    if let Some(id) = args.stop_ramp {
        return stop_ramp(&args, id);
    }
    if args.shape.planned() {
        return planned_release(&args);
    }
    let UnpauseArgs {
        db,
        class,
        dependency,
        force,
        format,
        record,
        ..
    } = args;
    let what = PauseTarget {
        db,
        class,
        dependency,
        force,
        format,
    };
    change_pause(PauseArgs { what, record }, false)
}

/// Pause or unpause, as `actor` (`--by`, else user@host) for `--reason`.
fn change_pause(PauseArgs { what: args, record }: PauseArgs, pause: bool) -> ExitCode {
    let format = args.format;
    let actor = match record.actor() {
        Ok(a) => a,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let (kind, value) = match what(&args) {
        Ok(w) => w,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let mut store = match ops::open_existing(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    if kind == PauseKind::Dependency && !args.force {
        if let Err(e) = qflow_engine::dependencies::require_known_dependency(&store, &value, !pause)
        {
            return ops::fail(format, USAGE, "unknown-dependency", e);
        }
    }
    let change = if pause {
        store.pause(kind, &value, system_now_ms(), &actor)
    } else {
        store.unpause(kind, &value, system_now_ms(), &actor)
    };
    let change = match change {
        Ok(c) => c,
        Err(e @ StoreError::Completed(_)) => return ops::fail(format, REFUSED, "refused", e),
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    match format {
        Format::Json => {
            let mut v = serde_json::to_value(&change).unwrap_or_default();
            v["paused"] = json!(pause);
            println!("{}", json_line(&v, &["kind", "value", "paused"]));
        }
        Format::Human => println!("{}", pause_text(&change, pause, &args.db)),
    }
    ExitCode::SUCCESS
}

fn pause_text(c: &PauseChange, pause: bool, db: &Location) -> String {
    let (kind, value) = (c.kind.flag(), &c.value);
    let by = Actor::words(c.by.as_deref(), c.reason.as_deref());
    let parks = match c.parks {
        1 => "1 retry park".to_string(),
        n => format!("{} retry parks", group(n)),
    };
    if pause {
        let head = if c.changed {
            format!("paused {kind} {value} {by}")
        } else {
            format!("{kind} {value} was already paused {by} (kept)")
        };
        format!(
            "{head}: {parks} held ({} already due); each keeps its due time, and new parks of it are held too.\n\
             `qflow unpause --db {} --{kind} {value}` lets them run.",
            group(c.due_now),
            db
        )
    } else if c.changed {
        format!(
            "unpaused {kind} {value} {}: {parks} let go, each re-driven when due ({} due already); it was paused {by}",
            Actor::words(Some(&c.logged.by), c.logged.reason.as_deref()),
            group(c.due_now)
        )
    } else {
        format!("{kind} {value} was not paused: nothing changed ({parks} armed)")
    }
}

pub(crate) fn quarantine(args: QuarantineArgs) -> ExitCode {
    set_quarantine(args, true)
}

pub(crate) fn release(args: ReleaseArgs) -> ExitCode {
    if args.shape.planned() {
        return planned_instance_release(&args);
    }
    let mut code = ExitCode::SUCCESS;
    for instance in &args.instances {
        let one = QuarantineArgs {
            which: QuarantineTarget {
                instance: instance.clone(),
                db: args.db.clone(),
                format: args.format,
            },
            record: RecordArgs {
                by: args.record.by.clone(),
                reason: args.record.reason.clone(),
            },
        };
        let c = set_quarantine(one, false);
        if c != ExitCode::SUCCESS {
            code = c;
        }
    }
    code
}

/// `release INSTANCE… --ramp R | --max-rate D=N/min | --dry-run`: the
/// preview over the instances' retry parks, then (unless `--dry-run`) the
/// release, each instance's retries at the instant the plan gave.
fn planned_instance_release(args: &ReleaseArgs) -> ExitCode {
    let format = args.format;
    let actor = match args.record.actor() {
        Ok(a) => a,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let shape = match args.shape.shape() {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let mut store = match ops::open_existing(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    let value = args.instances.join(",");
    let no_instance = |id: &str| {
        format!(
            "no instance {id} in {} (`qflow instances --db {}` lists them)",
            args.db, args.db
        )
    };
    let now = system_now_ms();
    if args.shape.dry_run {
        let plan =
            match qflow_engine::release::preview_instances(&store, &args.instances, &shape, now) {
                Ok(p) => p,
                Err(StoreError::NoInstance(id)) => {
                    return ops::fail(format, USAGE, "store", no_instance(&id))
                }
                Err(e) => return ops::fail(format, USAGE, "store", e),
            };
        let preview = Preview::of(ReleaseKind::Instance, &value, &plan);
        match format {
            Format::Json => {
                let v = json!({"instances": args.instances, "dry_run": true, "preview": preview});
                println!("{}", json_line(&v, &["instances", "dry_run"]));
            }
            Format::Human => {
                for l in preview_lines(&preview) {
                    println!("{l}");
                }
                println!("dry run: nothing changed (without --dry-run this applies it)");
            }
        }
        return ExitCode::SUCCESS;
    }
    let (plan, applied) = match qflow_engine::release::apply_instances(
        &mut store,
        &args.instances,
        &shape,
        now,
        &actor,
    ) {
        Ok(a) => a,
        Err(StoreError::NoInstance(id)) => {
            return ops::fail(format, USAGE, "store", no_instance(&id))
        }
        Err(e @ StoreError::Release(_)) => return ops::fail(format, REFUSED, "refused", e),
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    let preview = Preview::of(ReleaseKind::Instance, &value, &plan);
    match format {
        Format::Json => {
            let v = json!({"instances": args.instances, "released": applied.released,
                "release": {"ramp": applied.schedule, "start_ms": applied.start_ms,
                    "end_ms": applied.end_ms, "parks": applied.parks},
                "preview": preview});
            println!("{}", json_line(&v, &["instances"]));
        }
        Format::Human => {
            for l in preview_lines(&preview) {
                println!("{l}");
            }
            let changed = applied.released.iter().filter(|r| r.changed).count();
            println!(
                "released {} of {} instances {}: {} released by ramp {} ({}) from {} to {}; anything else they wait for runs when due",
                changed,
                args.instances.len(),
                Actor::words(Some(&actor.by), actor.reason.as_deref()),
                parks_words(applied.parks),
                applied.schedule,
                shape.words(),
                instant(applied.start_ms),
                instant(applied.end_ms),
            );
            println!(
                "`qflow unpause --stop-ramp {} --db {}` stops it: the instances with a retry not yet let go are quarantined again, each retry at its own due time.",
                applied.schedule, args.db
            );
        }
    }
    ExitCode::SUCCESS
}

/// Quarantine or release, as `actor` (`--by`, else user@host) for
/// `--reason`.
fn set_quarantine(
    QuarantineArgs {
        which: args,
        record,
    }: QuarantineArgs,
    on: bool,
) -> ExitCode {
    let format = args.format;
    let actor = match record.actor() {
        Ok(a) => a,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let mut store = match ops::open_existing(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    let change = if on {
        store.quarantine(&args.instance, system_now_ms(), &actor)
    } else {
        store.release_quarantine(&args.instance, system_now_ms(), &actor)
    };
    let change = match change {
        Ok(c) => c,
        Err(StoreError::NoInstance(id)) => {
            return ops::fail(
                format,
                USAGE,
                "store",
                format!(
                    "no instance {id} in {} (`qflow instances --db {}` lists them)",
                    args.db, args.db
                ),
            )
        }
        Err(e @ StoreError::Completed(_)) => return ops::fail(format, REFUSED, "refused", e),
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    match format {
        Format::Json => {
            let mut v = serde_json::to_value(&change).unwrap_or_default();
            v["quarantined"] = json!(on);
            println!("{}", json_line(&v, &["instance", "quarantined"]));
        }
        Format::Human => {
            let id = &change.instance;
            let db = &args.db;
            let by = Actor::words(change.by.as_deref(), change.reason.as_deref());
            println!(
                "{}",
                match (on, change.changed) {
                    (true, true) => format!(
                        "quarantined {id} ({}) {by}: nothing runs it until `qflow release {id} --db {db}`",
                        change.status
                    ),
                    (true, false) =>
                        format!("{id} was already quarantined {by}: nothing changed"),
                    (false, true) => format!(
                        "released {id} ({}) {}; it was quarantined {by}: it runs again with whatever serves the database",
                        change.status,
                        Actor::words(Some(&change.logged.by), change.logged.reason.as_deref()),
                    ),
                    (false, false) => format!("{id} was not quarantined: nothing changed"),
                }
            );
        }
    }
    ExitCode::SUCCESS
}

/// `unpause --ramp R | --max-rate D=N/min | --dry-run`: print the preview,
/// then (unless `--dry-run`) apply the release and say what was applied.
fn planned_release(args: &UnpauseArgs) -> ExitCode {
    let format = args.format;
    let actor = match args.record.actor() {
        Ok(a) => a,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let shape = match args.shape.shape() {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let target = PauseTarget {
        db: args.db.clone(),
        class: args.class.clone(),
        dependency: args.dependency.clone(),
        force: args.force,
        format,
    };
    let (kind, value) = match what(&target) {
        Ok(w) => w,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let mut store = match ops::open_existing(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    if kind == PauseKind::Dependency && !args.force {
        if let Err(e) = qflow_engine::dependencies::require_known_dependency(&store, &value, true) {
            return ops::fail(format, USAGE, "unknown-dependency", e);
        }
    }
    let now = system_now_ms();
    if args.shape.dry_run {
        let plan = match qflow_engine::release::preview(&store, kind, &value, &shape, now) {
            Ok(p) => p,
            Err(e) => return ops::fail(format, USAGE, "store", e),
        };
        let preview = Preview::of(ReleaseKind::of(kind), &value, &plan);
        match format {
            Format::Json => {
                let v = json!({"kind": kind.flag(), "value": value, "dry_run": true,
                    "preview": preview});
                println!("{}", json_line(&v, &["kind", "value", "dry_run"]));
            }
            Format::Human => {
                for l in preview_lines(&preview) {
                    println!("{l}");
                }
                println!("dry run: nothing changed (without --dry-run this applies it)");
            }
        }
        return ExitCode::SUCCESS;
    }
    let (plan, applied) =
        match qflow_engine::release::apply(&mut store, kind, &value, &shape, now, &actor) {
            Ok(a) => a,
            Err(e @ StoreError::Release(_)) => return ops::fail(format, REFUSED, "refused", e),
            Err(e) => return ops::fail(format, USAGE, "store", e),
        };
    let preview = Preview::of(ReleaseKind::of(kind), &value, &plan);
    match format {
        Format::Json => {
            let mut v = serde_json::to_value(&applied.unpause).unwrap_or_default();
            v["paused"] = json!(false);
            v["release"] = json!({"ramp": applied.schedule, "start_ms": applied.start_ms,
                "end_ms": applied.end_ms, "parks": applied.parks});
            v["preview"] = json!(preview);
            println!("{}", json_line(&v, &["kind", "value", "paused"]));
        }
        Format::Human => {
            for l in preview_lines(&preview) {
                println!("{l}");
            }
            let c = &applied.unpause;
            let was = if c.changed {
                format!(
                    "; it was paused {}",
                    Actor::words(c.by.as_deref(), c.reason.as_deref())
                )
            } else {
                " (it was not paused)".into()
            };
            println!(
                "unpaused {} {value} {}: {} released by ramp {} ({}) from {} to {}{was}",
                kind.flag(),
                Actor::words(Some(&c.logged.by), c.logged.reason.as_deref()),
                parks_words(applied.parks),
                applied.schedule,
                shape.words(),
                instant(applied.start_ms),
                instant(applied.end_ms),
            );
            println!(
                "`qflow unpause --stop-ramp {} --db {}` stops it: the parks not yet let go get their own due times back, held by a pause again.",
                applied.schedule, args.db
            );
        }
    }
    ExitCode::SUCCESS
}

/// `unpause --stop-ramp ID`.
fn stop_ramp(args: &UnpauseArgs, id: i64) -> ExitCode {
    let format = args.format;
    let actor = match args.record.actor() {
        Ok(a) => a,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let mut store = match ops::open_existing(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    let stopped = match qflow_engine::release::stop(&mut store, id, system_now_ms(), &actor) {
        Ok(s) => s,
        Err(e @ StoreError::Release(_)) => return ops::fail(format, USAGE, "usage", e),
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    match format {
        Format::Json => {
            let v = serde_json::to_value(&stopped).unwrap_or_default();
            println!("{}", json_line(&v, &["schedule", "changed"]));
        }
        Format::Human => {
            let (kind, value) = (stopped.kind.flag(), &stopped.value);
            let by = Actor::words(Some(&actor.by), actor.reason.as_deref());
            let parks = parks_words(stopped.held_again);
            match (stopped.changed, stopped.kind) {
                (true, ReleaseKind::Instance) => {
                    let ids: Vec<&str> = stopped
                        .quarantined
                        .iter()
                        .map(|q| q.instance.as_str())
                        .collect();
                    println!(
                        "stopped ramp {id} {by}: {parks} not yet let go, each at its own due time again; quarantined again: {}.\n\
                         `qflow release INSTANCE… --db {}` (with --ramp R) lets them go.",
                        if ids.is_empty() { "none".to_string() } else { ids.join(", ") },
                        args.db
                    );
                }
                (true, _) => println!(
                    "stopped ramp {id} {by}: {parks} not yet let go held again by the pause of {kind} {value}, each at its own due time.\n\
                     `qflow unpause --db {} --{kind} {value}` (with --ramp R) lets them go.",
                    args.db
                ),
                (false, _) => println!("ramp {id} was stopped already: nothing changed"),
            }
        }
    }
    ExitCode::SUCCESS
}

fn parks_words(n: u64) -> String {
    match n {
        1 => "1 retry park".to_string(),
        n => format!("{} retry parks", group(n)),
    }
}

/// An instant of the run's clock: since the start on a virtual clock
/// (`+5m`), else the wall clock's time.
pub(crate) fn instant(ms: i64) -> String {
    if ms < VIRTUAL_EPOCH_LIMIT_MS {
        ops::since_start(ms)
    } else {
        ops::timestamp(ms)
    }
}

/// How many minute rows a human preview shows before it summarises.
const PREVIEW_ROWS: usize = 15;

/// The preview for people: per minute, per dependency, the attempts
/// without and with the ramp, then each dependency's peak.
pub(crate) fn preview_lines(p: &Preview) -> Vec<String> {
    let shape = Shape {
        ramp: p.ramp.as_deref().and_then(|r| Ramp::parse(r).ok()),
        max_rate: p.max_rate.clone(),
    };
    // `release of instance: a`, `release of instances: a, b`, `release of
    // 5,000 instances a, … z`, `release of dependency bank`.
    let target = qflow_engine::release::ReleaseTarget::of(p.kind, &p.value);
    let what = if p.kind == ReleaseKind::Instance && target.listed_all {
        format!("release of {}: {}", target.what, target.names)
    } else {
        format!("release of {} {}", target.what, target.names)
    };
    let mut out = vec![format!(
        "{what}: {} from {} ({})",
        parks_words(p.parks),
        instant(p.start_ms),
        shape.words()
    )];
    if p.parks == 0 {
        out.push("  nothing to release: no retry park of it is armed".into());
        return out;
    }
    out.push("attempts per minute (a channel's: deliveries, one remote request each)".into());
    let w = p
        .dependencies
        .iter()
        .map(|d| d.dependency.chars().count())
        .max()
        .unwrap_or(0)
        .max("dependency".len());
    out.push(format!(
        "  minute  {:<w$}  without ramp  with ramp",
        "dependency"
    ));
    let minutes = p.minutes();
    let mut rows = 0;
    for m in 0..minutes {
        for d in &p.dependencies {
            let (a, b) = (
                d.without.get(m).copied().unwrap_or(0),
                d.with.get(m).copied().unwrap_or(0),
            );
            if a == 0 && b == 0 {
                continue;
            }
            if rows == PREVIEW_ROWS {
                out.push(format!(
                    "  … to minute {} (--format json has every minute)",
                    minutes - 1
                ));
                rows += 1;
            }
            if rows < PREVIEW_ROWS {
                out.push(format!(
                    "  {m:>6}  {:<w$}  {:>12}  {:>9}",
                    d.dependency,
                    group(a),
                    group(b)
                ));
                rows += 1;
            }
        }
    }
    for d in &p.dependencies {
        out.push(format!(
            "peak     {}: {}/min without the ramp, {}/min with it",
            d.dependency,
            group(d.peak_without),
            group(d.peak_with)
        ));
    }
    out.push(format!(
        "last release {} after the start (minute {})",
        qflow_engine::duration::compact_ms(p.end_after_ms),
        p.end_after_ms / 60_000
    ));
    out
}
