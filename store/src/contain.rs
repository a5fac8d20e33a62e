//! Containment: hold back one failure class or one dependency without
//! stopping anything else, and set one instance aside.
//!
//! - A **pause** (`pauses`, by failure class or by dependency) holds back
//!   the re-drive of every retry park of that class or dependency. The park
//!   stays exactly as it was (its timer armed, its due time kept), so
//!   unpausing loses nothing: a park whose time has passed is due at once.
//!   The pause is a row in the store, so it survives restarts and holds for
//!   every process serving the database; a replica that picked a park just
//!   before the pause committed has its re-drive refused when it applies
//!   ([`refuse_held_redrive`](crate::write::refuse_held_redrive), inside the applying transaction).
//! - A **quarantine** (`instances.quarantined_ms`) sets one instance aside:
//!   it is never claimed, so nothing decides for it (no attempt, no timer,
//!   no operator action) until it is released.
//!
//! Each records who made it and why ([`Actor`]): an operator reading a
//! held fleet must be able to ask the one who held it.
//!
//! Every containment action (a pause, an unpause, a quarantine, a release)
//! is also appended to the **containment log** (`containment_log`), in the
//! same transaction as the action, with when, by whom, why, and whether it
//! changed anything ([`Logged`]): a pause lifted or an instance released
//! leaves no row in `pauses` or on the instance, so the log is what an
//! operator reads after an outage ("who let the bank retries go, and
//! why?"). A repeated action is logged too, as changing nothing; a refused
//! one (an unknown instance, a completed one) rolls back and logs nothing.
//!
//! A retry timer records the cause of its park when it is armed: the class
//! of the failure and the dependency (a registered task's name, or the
//! channel of a call), so a pause is one indexed comparison per timer.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::sql::{args, Conn, Dialect, Lock, Row};
use crate::write::matches_pause;
use crate::{fault, Store, StoreError};
use qflow_instance::history::{Attempt, HistoryEvent, Then};
use qflow_instance::Transition;

/// Who made a pause or a quarantine, and why: kept with it, shown
/// wherever it is shown, so an operator finding a held fleet knows whom
/// to ask. `by` is the operator's name (`qflow pause --by NAME`), else the
/// account and host the command ran from ([`Actor::this_user`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Actor {
    pub by: String,
    /// Why, in the operator's words (`--reason`), if given.
    pub reason: Option<String>,
}

impl Actor {
    /// `by`, with no reason.
    pub fn new(by: impl Into<String>) -> Actor {
        Actor {
            by: by.into(),
            reason: None,
        }
    }

    /// The same actor, giving `reason` (an empty or blank one is none).
    pub fn because(mut self, reason: Option<&str>) -> Actor {
        self.reason = reason
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_string);
        self
    }

    /// The account and host this process runs as, `user@host`: who made a
    /// pause when no name was given. Either part the system does not tell
    /// is `unknown`, so the record is never empty.
    pub fn this_user() -> Actor {
        let user = whoami::username()
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "unknown".into());
        let host = whoami::hostname()
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unknown".into());
        Actor::new(format!("{user}@{host}"))
    }

    /// `by alice@ops1 ("bank outage")`: how every face says it.
    /// `by` and `reason` as the store has them (`None` for a record made
    /// before qflow kept who).
    pub fn words(by: Option<&str>, reason: Option<&str>) -> String {
        let by = by.unwrap_or("an operator not recorded");
        match reason {
            Some(r) => format!("by {by} (\"{r}\")"),
            None => format!("by {by}"),
        }
    }
}

/// What a pause holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PauseKind {
    /// A failure class (`transient`, `rate-limited`): the class of the
    /// failure that parked the retry.
    Class,
    /// A dependency: a registered task's name, or a channel.
    Dependency,
}

impl PauseKind {
    /// The word as the store keeps it and the command line's flag names
    /// it (`--class`, `--dependency`).
    pub fn flag(self) -> &'static str {
        match self {
            PauseKind::Class => "class",
            PauseKind::Dependency => "dependency",
        }
    }

    pub(super) fn parse(s: &str) -> PauseKind {
        if s == "class" {
            PauseKind::Class
        } else {
            PauseKind::Dependency
        }
    }
}

/// A pause in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pause {
    pub kind: PauseKind,
    pub value: String,
    /// When it was paused (wall clock, ms since the epoch).
    pub paused_ms: i64,
    /// Who paused it (`None`: made before qflow recorded who).
    pub by: Option<String>,
    /// Why, if they said.
    pub reason: Option<String>,
    /// Retry parks it holds back right now (armed, of unfinished instances).
    pub holding: u64,
}

/// Retry parks armed now (of unfinished instances) that record one cause:
/// what a pause of it would hold, and how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParkedCause {
    pub kind: PauseKind,
    pub value: String,
    pub parks: u64,
}

/// The quarantined instances, by the partial index `instances_quarantined`.
pub(super) const QUARANTINED: &str = "SELECT id, quarantined_ms, quarantined_by, quarantine_reason FROM instances WHERE quarantined_ms IS NOT NULL ORDER BY quarantined_ms, rowid";

/// The statement both stores run for [`ParkedCause`]s: each failure class,
/// then each dependency, most parks first.
pub(super) const PARKED_BY_CAUSE: &str = "SELECT 'class', t.class, COUNT(*) FROM timers t JOIN instances i ON i.id = t.instance_id
     WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting') AND t.class IS NOT NULL GROUP BY t.class
     UNION ALL
     SELECT 'dependency', t.dependency, COUNT(*) FROM timers t JOIN instances i ON i.id = t.instance_id
     WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting') AND t.dependency IS NOT NULL GROUP BY t.dependency
     ORDER BY 1, 3 DESC, 2";

/// What a pause or an unpause changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PauseChange {
    pub kind: PauseKind,
    pub value: String,
    /// False when it was already so (paused twice, unpaused while not paused).
    pub changed: bool,
    /// Retry parks of that class or dependency, armed now.
    pub parks: u64,
    /// Of those, the ones already due (what an unpause lets run at once).
    pub due_now: u64,
    /// The pause in force after a pause (who made it and why: the earlier
    /// one when it was already paused); after an unpause, the one lifted.
    /// `None` when there was none, or it predates the record.
    pub by: Option<String>,
    pub reason: Option<String>,
    /// The action as the containment log now holds it (who took it, why,
    /// when): after an unpause, who lifted the pause.
    pub logged: Logged,
}

/// What a quarantine or a release changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuarantineChange {
    pub instance: String,
    pub status: String,
    /// False when it was already so.
    pub changed: bool,
    /// Who quarantined it and why: the quarantine in force after a
    /// quarantine (the earlier one when it was already quarantined), the
    /// one lifted after a release.
    pub by: Option<String>,
    pub reason: Option<String>,
    /// The action as the containment log now holds it: after a release,
    /// who released it.
    pub logged: Logged,
}

/// A containment action, as the log names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Pause,
    Unpause,
    Quarantine,
    Release,
}

impl Action {
    /// The word as the store keeps it and the command line names it.
    pub fn word(self) -> &'static str {
        match self {
            Action::Pause => "pause",
            Action::Unpause => "unpause",
            Action::Quarantine => "quarantine",
            Action::Release => "release",
        }
    }

    /// The action a log row names. Only this qflow's four words are ever
    /// written (a newer database, which might hold others, is refused).
    pub(super) fn parse(s: &str) -> Action {
        match s {
            "pause" => Action::Pause,
            "unpause" => Action::Unpause,
            "quarantine" => Action::Quarantine,
            _ => Action::Release,
        }
    }
}

/// One entry of the containment log: an action as it was taken. Appended
/// in the action's own transaction and never changed, so the log and the
/// containment in force always agree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Logged {
    /// The entry's number: the log's order.
    pub seq: i64,
    /// When (wall clock, ms since the epoch: the clock the action records).
    pub at_ms: i64,
    pub action: Action,
    /// What it was aimed at: `class`, `dependency` or `instance`.
    pub kind: String,
    /// The class, the dependency or the instance's id.
    pub value: String,
    /// Who took it (`--by`, else `user@host`).
    pub by: String,
    pub reason: Option<String>,
    /// False when it found things already so (paused twice, released while
    /// not quarantined): logged all the same, since an operator who tried
    /// is part of the story.
    pub changed: bool,
}

impl Logged {
    /// `quarantine instance dbg08-1 by ops-bob ("replays a bad order")`,
    /// with `: nothing changed (it already was so)` for an entry that
    /// changed nothing: how every face says an entry (the time aside,
    /// which each face writes its own way). `target`: name what it was
    /// aimed at (a list of one instance's entries leaves it out).
    pub fn words(&self, target: bool) -> String {
        let what = if target {
            format!("{} {} {} ", self.action.word(), self.kind, self.value)
        } else {
            format!("{} ", self.action.word())
        };
        let unchanged = if self.changed {
            ""
        } else {
            ": nothing changed (it already was so)"
        };
        format!(
            "{what}{}{unchanged}",
            Actor::words(Some(&self.by), self.reason.as_deref())
        )
    }
}

/// Which entries of the containment log to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogQuery {
    /// Only the entries aimed at this target (`class`, `dependency` or
    /// `instance`, and its value); every entry when `None`.
    pub target: Option<(String, String)>,
    /// At most this many, the latest ones (0: every one).
    pub limit: u32,
}

impl LogQuery {
    /// The latest `limit` entries of the whole log (0: every one).
    pub fn recent(limit: u32) -> LogQuery {
        LogQuery {
            target: None,
            limit,
        }
    }

    /// Every entry aimed at one instance (its quarantines and releases).
    pub fn instance(id: &str) -> LogQuery {
        LogQuery {
            target: Some(("instance".into(), id.into())),
            limit: 0,
        }
    }
}

/// The entries read newest first, put back in the log's order.
pub(super) fn in_order(mut newest_first: Vec<Logged>) -> Vec<Logged> {
    newest_first.reverse();
    newest_first
}

/// Whether a pause (`on`) or an unpause changes a class or dependency that
/// is `paused` or not: both stores ask it under their write lock, and log
/// the action either way.
pub(super) fn pause_changes(paused: bool, on: bool) -> bool {
    paused != on
}

/// Who paused, and why, as a pause change reports it: this action's actor
/// when it made the pause, else the record it found (the pause it lifted,
/// or the one already in force); nobody when there was none.
pub(super) fn record_after(
    found: Option<(Option<String>, Option<String>)>,
    on: bool,
    changed: bool,
    actor: &Actor,
) -> (Option<String>, Option<String>) {
    match found {
        _ if on && changed => (Some(actor.by.clone()), actor.reason.clone()),
        Some(r) => r,
        None => (None, None),
    }
}

/// The log entry of an action, before the store numbers it: what both
/// stores append, in the action's transaction.
pub(super) struct NewEntry<'a> {
    pub at_ms: i64,
    pub action: &'static str,
    pub kind: &'static str,
    pub value: &'a str,
    pub by: &'a str,
    pub reason: Option<&'a str>,
    pub changed: bool,
}

impl NewEntry<'_> {
    /// The entry as the log holds it, numbered `seq`.
    pub(super) fn logged(&self, seq: i64) -> Logged {
        Logged {
            seq,
            at_ms: self.at_ms,
            action: Action::parse(self.action),
            kind: self.kind.into(),
            value: self.value.into(),
            by: self.by.into(),
            reason: self.reason.map(str::to_string),
            changed: self.changed,
        }
    }
}

/// The entry of `action` on `kind` `value` (a pause's `class` or
/// `dependency`, or an `instance`) taken by `actor` at `at_ms`.
pub(super) fn entry<'a>(
    action: Action,
    kind: &'static str,
    value: &'a str,
    at_ms: i64,
    actor: &'a Actor,
    changed: bool,
) -> NewEntry<'a> {
    NewEntry {
        at_ms,
        action: action.word(),
        kind,
        value,
        by: &actor.by,
        reason: actor.reason.as_deref(),
        changed,
    }
}

/// A quarantined instance, with when, by whom and why it was set aside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Quarantined {
    pub instance: String,
    /// Wall clock, ms since the epoch.
    pub at_ms: i64,
    /// `None`: quarantined before qflow recorded who.
    pub by: Option<String>,
    pub reason: Option<String>,
}

/// One retry park a pause holds back, as the store records it: the park's
/// timer, node and due time (kept while held), and the pause holding it.
/// A park matched by two pauses (its class and its dependency) is held by
/// each, and listed once per pause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldPark {
    pub timer: i64,
    pub node: String,
    /// When the park falls due (the run's clock, absolute ms): kept as it
    /// was armed, so an unpause loses nothing.
    pub due_ms: i64,
    pub kind: PauseKind,
    pub value: String,
    /// When the pause was made (wall clock, ms since the epoch).
    pub paused_ms: i64,
    /// Who made the pause, and why ([`Pause::by`], [`Pause::reason`]).
    pub paused_by: Option<String>,
    pub reason: Option<String>,
}

/// What holds one instance back, from the durable facts alone: whether it
/// is quarantined (and since when), and which of its retry parks a pause
/// holds. What `qflow show`, `qflow instances` and the console say of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Containment {
    /// When it was set aside (wall clock, ms since the epoch), if it is.
    pub quarantined_ms: Option<i64>,
    /// Who set it aside, and why (with `quarantined_ms`).
    pub quarantined_by: Option<String>,
    pub quarantine_reason: Option<String>,
    /// Its armed retry parks that a pause holds, earliest due first.
    pub held: Vec<HeldPark>,
}

/// Who held a park back and why, read by [`held_parks`](Store::held_parks)
/// and [`containment`](Store::containment): the park's timer columns, then
/// the pause's.
fn held_park(r: &dyn Row, from: usize) -> Result<HeldPark, StoreError> {
    let kind: String = r.get(from + 3)?;
    Ok(HeldPark {
        timer: r.get(from)?,
        node: r.get(from + 1)?,
        due_ms: r.get(from + 2)?,
        kind: PauseKind::parse(&kind),
        value: r.get(from + 4)?,
        paused_ms: r.get(from + 5)?,
        paused_by: r.get(from + 6)?,
        reason: r.get(from + 7)?,
    })
}

impl Store {
    /// Pause the re-drive of every retry park of a failure class or a
    /// dependency (idempotent: a second pause keeps the first one's
    /// record). `wall_now_ms` and `actor`: when, by whom and why, for the
    /// record and the log.
    pub fn pause(
        &mut self,
        kind: PauseKind,
        value: &str,
        wall_now_ms: i64,
        actor: &Actor,
    ) -> Result<PauseChange, StoreError> {
        self.set_pause(kind, value, wall_now_ms, actor, true)
    }

    /// Lift a pause (idempotent): its parks are re-driven as they fall due,
    /// those already due at once. `wall_now_ms` and `actor`: when, by whom
    /// and why, for the log.
    pub fn unpause(
        &mut self,
        kind: PauseKind,
        value: &str,
        wall_now_ms: i64,
        actor: &Actor,
    ) -> Result<PauseChange, StoreError> {
        self.set_pause(kind, value, wall_now_ms, actor, false)
    }

    fn set_pause(
        &mut self,
        kind: PauseKind,
        value: &str,
        wall_now_ms: i64,
        actor: &Actor,
        on: bool,
    ) -> Result<PauseChange, StoreError> {
        self.write(|db| {
            // Wait for the re-drives that checked before this pause to
            // commit (PostgreSQL; SQLite's writers take turns already);
            // pauses and unpauses are one at a time under it, so the
            // record read here is the one changed.
            db.lock(Lock::PauseExclusive)?;
            set_pause_in(db, kind, value, wall_now_ms, actor, on)
        })
    }

    /// The dependencies paused now: every request to them (first
    /// attempts, retries, deliveries) waits for the unpause.
    pub fn paused_dependencies(&self) -> Result<BTreeSet<String>, StoreError> {
        if let Some(kept) = self.group.paused() {
            return Ok(kept);
        }
        self.read(paused_dependencies)
    }

    /// The pauses in force, oldest first, with the parks each holds.
    pub fn pauses(&self) -> Result<Vec<Pause>, StoreError> {
        self.read(pauses_in)
    }

    /// Set an instance aside: never claimed, so nothing runs it (no
    /// decision, no operator action, no migration), until released.
    /// Idempotent (a second quarantine keeps the first one's record);
    /// refused for an unknown instance. `wall_now_ms` and `actor`: when,
    /// by whom and why, for the record and the log.
    pub fn quarantine(
        &mut self,
        instance: &str,
        wall_now_ms: i64,
        actor: &Actor,
    ) -> Result<QuarantineChange, StoreError> {
        self.set_quarantine(instance, wall_now_ms, actor, true)
    }

    /// Let a quarantined instance run again (idempotent; refused for an
    /// unknown instance). `wall_now_ms` and `actor`: for the log.
    pub fn release_quarantine(
        &mut self,
        instance: &str,
        wall_now_ms: i64,
        actor: &Actor,
    ) -> Result<QuarantineChange, StoreError> {
        self.set_quarantine(instance, wall_now_ms, actor, false)
    }

    fn set_quarantine(
        &mut self,
        instance: &str,
        wall_now_ms: i64,
        actor: &Actor,
        on: bool,
    ) -> Result<QuarantineChange, StoreError> {
        self.write(|db| set_quarantine_in(db, instance, wall_now_ms, actor, on))
    }

    /// The containment log: the entries `query` asks for, oldest first
    /// (read newest first, so the limit keeps the latest).
    pub fn containment_log(&self, query: &LogQuery) -> Result<Vec<Logged>, StoreError> {
        self.read(|db| {
            // No limit: SQLite's is a negative one, PostgreSQL's a null.
            let limit = match (query.limit, db.dialect()) {
                (0, Dialect::Sqlite) => Some(-1),
                (0, Dialect::Postgres) => None,
                (n, _) => Some(i64::from(n)),
            };
            let read = |r: &dyn Row| {
                let action: String = r.get(2)?;
                Ok(Logged {
                    seq: r.get(0)?,
                    at_ms: r.get(1)?,
                    action: Action::parse(&action),
                    kind: r.get(3)?,
                    value: r.get(4)?,
                    by: r.get(5)?,
                    reason: r.get(6)?,
                    changed: r.get(7)?,
                })
            };
            let rows = match &query.target {
                Some((kind, value)) => db.rows(
                    "SELECT seq, at_ms, action, kind, value, actor, reason, changed FROM containment_log
                     WHERE kind = $1 AND value = $2 ORDER BY seq DESC LIMIT $3",
                    args![kind, value, limit],
                    read,
                )?,
                None => db.rows(
                    "SELECT seq, at_ms, action, kind, value, actor, reason, changed FROM containment_log
                     ORDER BY seq DESC LIMIT $1",
                    args![limit],
                    read,
                )?,
            };
            Ok(in_order(rows))
        })
    }

    /// What holds instance `instance` back: its quarantine and its retry
    /// parks a pause holds (refused for an unknown instance).
    pub fn containment(&self, instance: &str) -> Result<Containment, StoreError> {
        self.read(|db| {
            type Found = (Option<i64>, Option<String>, Option<String>);
            let row: Option<Found> = db.opt(
                "SELECT quarantined_ms, quarantined_by, quarantine_reason FROM instances WHERE id = $1",
                args![instance],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let Some((quarantined_ms, quarantined_by, quarantine_reason)) = row else {
                return Err(StoreError::NoInstance(instance.into()));
            };
            let held = db.rows(
                concat!(
                    "SELECT t.id, t.node, t.due_ms, p.kind, p.value, p.paused_ms, p.paused_by, p.reason
                     FROM timers t JOIN pauses p ON ",
                    matches_pause!(),
                    " WHERE t.instance_id = $1 AND t.state = 'armed' AND t.purpose = 'retry'
                     ORDER BY t.due_ms, t.id, p.paused_ms, p.kind, p.value"
                ),
                args![instance],
                |r| held_park(r, 0),
            )?;
            Ok(Containment {
                quarantined_ms,
                quarantined_by,
                quarantine_reason,
                held,
            })
        })
    }

    /// Every retry park a pause holds, of every unfinished instance, with
    /// its instance: what a list of instances marks as held.
    pub fn held_parks(&self) -> Result<Vec<(String, HeldPark)>, StoreError> {
        self.read(|db| {
            db.rows(
                concat!(
                    "SELECT t.instance_id, t.id, t.node, t.due_ms, p.kind, p.value, p.paused_ms, p.paused_by, p.reason
                     FROM pauses p JOIN timers t ON ",
                    matches_pause!(),
                    " JOIN instances i ON i.id = t.instance_id
                     WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting')
                     ORDER BY t.instance_id, t.due_ms, t.id, p.paused_ms, p.kind, p.value"
                ),
                args![],
                |r| Ok((r.get(0)?, held_park(r, 1)?)),
            )
        })
    }

    /// The retry parks armed now, counted by the class and by the
    /// dependency they record: what the fleet can pause, and how much each
    /// would hold.
    pub fn parked_by_cause(&self) -> Result<Vec<ParkedCause>, StoreError> {
        self.read(|db| {
            db.rows(PARKED_BY_CAUSE, args![], |r| {
                let kind: String = r.get(0)?;
                Ok(ParkedCause {
                    kind: PauseKind::parse(&kind),
                    value: r.get(1)?,
                    parks: r.get::<i64>(2)? as u64,
                })
            })
        })
    }

    /// The quarantined instances, with when, by whom and why they were
    /// set aside.
    pub fn quarantined(&self) -> Result<Vec<Quarantined>, StoreError> {
        self.read(|db| {
            db.rows(
                db.dialect().pick(QUARANTINED, QUARANTINED_PG),
                args![],
                |r| {
                    Ok(Quarantined {
                        instance: r.get(0)?,
                        at_ms: r.get(1)?,
                        by: r.get(2)?,
                        reason: r.get(3)?,
                    })
                },
            )
        })
    }
}

/// [`QUARANTINED`] on PostgreSQL, in the order of its `seq` column (SQLite's
/// `rowid`).
const QUARANTINED_PG: &str = "SELECT id, quarantined_ms, quarantined_by, quarantine_reason FROM instances WHERE quarantined_ms IS NOT NULL ORDER BY quarantined_ms, seq";

/// Quarantine (`on`) or release `instance` in the open transaction: the
/// row, the log entry, and what it changed. A ramped release
/// ([`crate::release`]) releases through it too, in its own transaction.
pub(crate) fn set_quarantine_in(
    db: &mut dyn Conn,
    instance: &str,
    wall_now_ms: i64,
    actor: &Actor,
    on: bool,
) -> Result<QuarantineChange, StoreError> {
    type Found = (String, Option<i64>, Option<String>, Option<String>);
    let row: Option<Found> = db.opt(
        "SELECT status, quarantined_ms, quarantined_by, quarantine_reason FROM instances WHERE id = $1 FOR UPDATE",
        args![instance],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    let Some((status, was, mut by, mut reason)) = row else {
        return Err(StoreError::NoInstance(instance.into()));
    };
    // A refusal returns here, before anything is written: the
    // transaction rolls back and the log keeps nothing of it.
    let changed = quarantine_changes(instance, &status, was.is_some(), on)?;
    if changed {
        let who = on.then_some(actor);
        db.execute(
            "UPDATE instances SET quarantined_ms = $2, quarantined_by = $3, quarantine_reason = $4 WHERE id = $1",
            args![
                instance,
                on.then_some(wall_now_ms),
                who.map(|a| &a.by),
                who.and_then(|a| a.reason.as_ref())
            ],
        )?;
        if let Some(a) = who {
            (by, reason) = (Some(a.by.clone()), a.reason.clone());
        }
        if !on {
            // Released: its work may be due now.
            crate::write::work_made(db, "")?;
        }
    }
    fault::point("contain.written");
    let action = if on {
        Action::Quarantine
    } else {
        Action::Release
    };
    let logged = append_log(
        db,
        &entry(action, "instance", instance, wall_now_ms, actor, changed),
    )?;
    fault::point("contain.logged");
    Ok(QuarantineChange {
        instance: instance.into(),
        status,
        changed,
        by,
        reason,
        logged,
    })
}

/// Pause (`on`) or unpause `kind` `value` in the open transaction, which
/// holds [`Lock::PauseExclusive`]: the row, the log entry, and what it
/// changed. A ramped release ([`crate::release`]) unpauses through it too,
/// in its own transaction.
pub(crate) fn set_pause_in(
    db: &mut dyn Conn,
    kind: PauseKind,
    value: &str,
    wall_now_ms: i64,
    actor: &Actor,
    on: bool,
) -> Result<PauseChange, StoreError> {
    let record = pause_record(db, kind, value)?;
    let changed = pause_changes(record.is_some(), on);
    if changed && on {
        db.execute(
            "INSERT INTO pauses(kind, value, paused_ms, paused_by, reason) VALUES ($1, $2, $3, $4, $5)",
            args![kind.flag(), value, wall_now_ms, actor.by, actor.reason],
        )?;
    } else if changed {
        db.execute(
            "DELETE FROM pauses WHERE kind = $1 AND value = $2",
            args![kind.flag(), value],
        )?;
        // What the pause held may be due now: serving replicas are told.
        crate::write::work_made(db, "")?;
    }
    fault::point("contain.written");
    let action = if on { Action::Pause } else { Action::Unpause };
    let logged = append_log(
        db,
        &entry(action, kind.flag(), value, wall_now_ms, actor, changed),
    )?;
    fault::point("contain.logged");
    let record = record_after(record, on, changed, actor);
    parks(db, kind, value, changed, record, logged)
}

/// The pauses in force, oldest first, with the parks each holds (also
/// part of the fleet's observations).
pub(crate) fn pauses_in(db: &mut dyn Conn) -> Result<Vec<Pause>, StoreError> {
    db.rows(
        "SELECT p.kind, p.value, p.paused_ms, p.paused_by, p.reason,
                (SELECT COUNT(*) FROM timers t JOIN instances i ON i.id = t.instance_id
                 WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting')
                   AND CASE p.kind WHEN 'class' THEN t.class ELSE t.dependency END = p.value)
         FROM pauses p ORDER BY p.paused_ms, p.kind, p.value",
        args![],
        |r| {
            let kind: String = r.get(0)?;
            Ok(Pause {
                kind: PauseKind::parse(&kind),
                value: r.get(1)?,
                paused_ms: r.get(2)?,
                by: r.get(3)?,
                reason: r.get(4)?,
                holding: r.get::<i64>(5)? as u64,
            })
        },
    )
}

/// The retry parks of one class or dependency, armed now, and how many are
/// due at the latest decision the store holds.
fn parks(
    db: &mut dyn Conn,
    kind: PauseKind,
    value: &str,
    changed: bool,
    (by, reason): (Option<String>, Option<String>),
    logged: Logged,
) -> Result<PauseChange, StoreError> {
    let sql = match kind {
        PauseKind::Class => {
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE t.due_ms <= (SELECT COALESCE(MAX(at_ms), 0) FROM transitions))
             FROM timers t JOIN instances i ON i.id = t.instance_id
             WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting') AND t.class = $1"
        }
        PauseKind::Dependency => {
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE t.due_ms <= (SELECT COALESCE(MAX(at_ms), 0) FROM transitions))
             FROM timers t JOIN instances i ON i.id = t.instance_id
             WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting') AND t.dependency = $1"
        }
    };
    let (parks, due_now): (i64, i64) = db.one(sql, args![value], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(PauseChange {
        kind,
        value: value.into(),
        changed,
        parks: parks as u64,
        due_now: due_now as u64,
        by,
        reason,
        logged,
    })
}

/// The pause of `kind` `value` if there is one: who made it and why (both
/// `None` when it predates the record).
pub(super) type PauseRecord = Option<(Option<String>, Option<String>)>;

fn pause_record(
    db: &mut dyn Conn,
    kind: PauseKind,
    value: &str,
) -> Result<PauseRecord, StoreError> {
    db.opt(
        "SELECT paused_by, reason FROM pauses WHERE kind = $1 AND value = $2",
        args![kind.flag(), value],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Append `e` to the containment log, in the action's transaction; the
/// entry as the log now holds it.
fn append_log(db: &mut dyn Conn, e: &NewEntry<'_>) -> Result<Logged, StoreError> {
    let seq = db.one(
        "INSERT INTO containment_log(at_ms, action, kind, value, actor, reason, changed)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING seq",
        args![e.at_ms, e.action, e.kind, e.value, e.by, e.reason, e.changed],
        |r| r.get(0),
    )?;
    Ok(e.logged(seq))
}

/// What transition `t` itself says of the failure that parks `node`'s
/// retry: one pure reading both stores share before they fall back to the
/// node's last attempt line in their own history table.
pub(super) enum CauseInTransition {
    /// A registered task's failed attempt: its class and task name.
    Task(Option<String>, String),
    /// A channel call's failed attempt (always transient); its channel is
    /// on the call's last attempt line.
    Call,
    /// Nothing in `t` (a park re-armed by a migration).
    None,
}

/// Whether a quarantine (`on`) or a release changes an instance in
/// `status`, quarantined already or not; both stores ask it under their row
/// lock. A completed instance is refused: nothing will ever run it, so a
/// record of it set aside would only mislead.
pub(super) fn quarantine_changes(
    instance: &str,
    status: &str,
    quarantined: bool,
    on: bool,
) -> Result<bool, StoreError> {
    if on && !quarantined && status == "completed" {
        return Err(StoreError::Completed(instance.into()));
    }
    Ok(quarantined != on)
}

pub(super) fn cause_in_transition(t: &Transition, node: &str) -> CauseInTransition {
    let mut cause = CauseInTransition::None;
    for e in t
        .history
        .iter()
        .filter(|e| e.line.node.as_deref() == Some(node))
    {
        match &e.line.event {
            HistoryEvent::Attempt(Attempt::Task(a)) if a.then == Some(Then::Backoff) => {
                return CauseInTransition::Task(
                    a.class.map(|c| c.as_str().to_string()),
                    a.task.clone(),
                );
            }
            HistoryEvent::CallFailed {
                then: Then::Backoff,
                ..
            } => cause = CauseInTransition::Call,
            _ => {}
        }
    }
    cause
}

/// The dependencies paused now.
pub(crate) fn paused_dependencies(db: &mut dyn Conn) -> Result<BTreeSet<String>, StoreError> {
    Ok(db
        .rows(
            "SELECT value FROM pauses WHERE kind = 'dependency'",
            args![],
            |r| r.get(0),
        )?
        .into_iter()
        .collect())
}
