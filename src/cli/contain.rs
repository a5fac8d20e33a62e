//! Containment: `qflow pause|unpause --db DB --class CLASS | --dependency
//! NAME` and `qflow quarantine|release INSTANCE --db DB`. The store keeps
//! the pauses and quarantines ([`qflow_engine::store::contain`]); this
//! module parses and reports.

use std::process::ExitCode;

use qflow_engine::instance::event::FailureClass;
use qflow_engine::runtime::clock::system_now_ms;
use qflow_engine::store::contain::{Actor, PauseChange, PauseKind};
use qflow_engine::store::{Location, StoreError};
use qflow_engine::text::group;
use serde_json::json;

use super::ops::{self, Format, REFUSED, USAGE};
use super::run::json_line;

/// Hold back (or let go) every retry park of a failure class or a
/// dependency.
#[derive(Debug, clap::Args)]
pub struct PauseArgs {
    #[command(flatten)]
    pub what: PauseTarget,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// Who contains or lifts a containment, and why: kept with a pause or a
/// quarantine and shown wherever it is (`instances`, `show`, `stats`, the
/// console), and written to the containment log for every action.
#[derive(Debug, clap::Args)]
pub struct RecordArgs {
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
    fn actor(&self) -> Result<Actor, String> {
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

/// What a pause or an unpause names: a failure class or a dependency.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["class", "dependency"])))]
pub struct PauseTarget {
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    /// The failure class whose retries to hold: transient or rate-limited
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
pub struct QuarantineArgs {
    #[command(flatten)]
    pub which: QuarantineTarget,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// The instance a quarantine or a release names.
#[derive(Debug, clap::Args)]
pub struct QuarantineTarget {
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
/// rate-limited); the others are refused with why (the web inspector's
/// pause checks the same way).
pub fn parked_class(class: &str) -> Result<String, String> {
    match FailureClass::parse(class) {
        Some(FailureClass::Transient | FailureClass::RateLimited) => Ok(class.to_string()),
        Some(FailureClass::Permanent) => Err(
            "--class permanent: a permanent failure is never retried (it fails at once), so nothing of it parks; pause transient or rate-limited".into(),
        ),
        Some(FailureClass::UnknownOutcome) => Err(
            "--class unknown-outcome: an unknown outcome is never retried blindly (it waits for reconciliation), so nothing of it parks; pause transient or rate-limited".into(),
        ),
        None => Err(format!(
            "--class {class}: not a failure class; the classes that park a retry are transient and rate-limited"
        )),
    }
}

pub fn pause(args: PauseArgs) -> ExitCode {
    change_pause(args, true)
}

pub fn unpause(args: PauseArgs) -> ExitCode {
    change_pause(args, false)
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

pub fn quarantine(args: QuarantineArgs) -> ExitCode {
    set_quarantine(args, true)
}

pub fn release(args: QuarantineArgs) -> ExitCode {
    set_quarantine(args, false)
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
