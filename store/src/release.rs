//! Planned releases: a ramped unpause, durable.
//!
//! A ramped unpause (`qflow unpause --dependency bank --ramp 10,50/min`)
//! lifts the pause and, in the same transaction, writes each held park's
//! release instant as its timer's due time: whichever process serves the
//! database (every replica, after any restart) fires the park no earlier,
//! with nothing to remember but the timers it already reads. The schedule
//! itself (`release_schedules`: what, the shape as given, who and why) and
//! each park's slot (`release_slots`: its own due time and its release
//! instant) are kept beside, so `stats`, `show` and the console can say
//! what a ramp holds, and stopping it can put every park not yet fired
//! back to its own due time under a pause again.
//!
//! A ramped release of quarantined instances (`qflow release A B C
//! --ramp 5/min`) is the same schedule over those instances' retry parks,
//! written in the transaction that releases them; stopping it
//! quarantines again each instance with a park not yet let go.
//!
//! The store never decides: the release instants come from the caller's
//! plan (the runtime's pure `ramp::plan`), run inside the transaction on
//! the parks read under the pause lock, so the parks planned are exactly
//! the parks written.

use serde::Serialize;

use crate::contain::{
    set_pause_in, set_quarantine_in, Actor, PauseChange, PauseKind, QuarantineChange,
};
use crate::sql::{args, Conn, Lock, Row};
use crate::{schema, Store, StoreError};

/// One park a release lets go, as the store reads it: armed, of an
/// unfinished instance that is not quarantined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReleasePark {
    pub timer: i64,
    pub instance: String,
    pub dependency: Option<String>,
    /// Its own due time (the run's clock, absolute ms).
    pub due_ms: i64,
}

/// What a release is shaped by, as the operator gave it: kept with the
/// schedule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ShapeText {
    /// `10,50,200/min`, if a ramp was given.
    pub ramp: Option<String>,
    /// `bank=20/min,mail=5/min`, if any cap was given.
    pub max_rate: Option<String>,
}

/// A plan's answer inside the transaction: minute 0, and the release
/// instant of each park (by timer), none before the park's due time.
pub struct Planned {
    pub start_ms: i64,
    pub slots: Vec<(i64, i64)>,
}

/// What a release let go: the parks of a paused class or dependency (a
/// ramped unpause), or those of quarantined instances (a ramped release).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseKind {
    Class,
    Dependency,
    /// `value` is the instances' ids, comma-separated.
    Instance,
}

impl ReleaseKind {
    /// The word as the store keeps it (`class`, `dependency`, `instance`).
    pub fn flag(self) -> &'static str {
        match self {
            ReleaseKind::Class => "class",
            ReleaseKind::Dependency => "dependency",
            ReleaseKind::Instance => "instance",
        }
    }

    fn parse(s: &str) -> ReleaseKind {
        match s {
            "class" => ReleaseKind::Class,
            "instance" => ReleaseKind::Instance,
            _ => ReleaseKind::Dependency,
        }
    }

    /// The release of a pause of `kind`.
    pub fn of(kind: PauseKind) -> ReleaseKind {
        match kind {
            PauseKind::Class => ReleaseKind::Class,
            PauseKind::Dependency => ReleaseKind::Dependency,
        }
    }

    /// The pause a stop makes again (none for instances: they are
    /// quarantined again).
    fn pause(self) -> Option<PauseKind> {
        match self {
            ReleaseKind::Class => Some(PauseKind::Class),
            ReleaseKind::Dependency => Some(PauseKind::Dependency),
            ReleaseKind::Instance => None,
        }
    }
}

/// A release schedule, as `stats` and the console show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReleaseSchedule {
    pub id: i64,
    pub kind: ReleaseKind,
    pub value: String,
    pub ramp: Option<String>,
    pub max_rate: Option<String>,
    /// Minute 0 and the last release (the run's clock, absolute ms).
    pub start_ms: i64,
    pub end_ms: i64,
    /// When it was made (wall clock), by whom, why.
    pub created_ms: i64,
    pub by: String,
    pub reason: Option<String>,
    /// When it was stopped (wall clock), by whom, why; `None` unless it was.
    pub stopped_ms: Option<i64>,
    pub stopped_by: Option<String>,
    pub stop_reason: Option<String>,
    /// Parks it let go.
    pub parks: u64,
    /// Of those, the ones still waiting for their release instant (armed,
    /// at the instant the ramp gave them).
    pub waiting: u64,
    /// The next of those instants (the run's clock), if any waits.
    pub next_ms: Option<i64>,
}

impl ReleaseSchedule {
    /// Still letting parks go: not stopped, and some still waiting (what
    /// the fleet page lists as "in force").
    pub fn in_force(&self) -> bool {
        self.stopped_ms.is_none() && self.waiting > 0
    }

    /// `ramp 10,50/min, bank=20/min` (or `no ramp`).
    pub fn shape_words(&self) -> String {
        ReleaseSchedule::words_of(self.ramp.as_deref(), self.max_rate.as_deref())
    }

    /// [`ReleaseSchedule::shape_words`] of a ramp and caps as kept.
    pub fn words_of(ramp: Option<&str>, max_rate: Option<&str>) -> String {
        let mut parts = Vec::new();
        if let Some(r) = ramp {
            parts.push(format!("ramp {r}"));
        }
        if let Some(m) = max_rate {
            parts.push(format!("max rate {m}"));
        }
        if parts.is_empty() {
            "no ramp".into()
        } else {
            parts.join(", ")
        }
    }
}

/// A ramped unpause, applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RampedUnpause {
    /// The schedule's id (what `qflow unpause --stop-ramp ID` names).
    pub schedule: i64,
    pub start_ms: i64,
    pub end_ms: i64,
    /// Parks given a release instant.
    pub parks: u64,
    /// The unpause itself: its log entry, who had paused.
    pub unpause: PauseChange,
}

/// A stopped release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoppedRelease {
    pub schedule: i64,
    pub kind: ReleaseKind,
    pub value: String,
    /// False when it was stopped already (nothing changed).
    pub changed: bool,
    /// Parks not yet fired, put back to their own due times and held by
    /// the pause again (or their instances quarantined again).
    pub held_again: u64,
    /// The pause made again (or found in force), for a class or a
    /// dependency.
    pub pause: Option<PauseChange>,
    /// For instances: those quarantined again (each with a park not yet
    /// let go).
    pub quarantined: Vec<QuarantineChange>,
}

/// A ramped release of quarantined instances, applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RampedRelease {
    /// The schedule's id (what `qflow unpause --stop-ramp ID` names).
    pub schedule: i64,
    pub start_ms: i64,
    pub end_ms: i64,
    /// Parks given a release instant.
    pub parks: u64,
    /// Each instance's release: its log entry, who had quarantined it.
    pub released: Vec<QuarantineChange>,
}

/// One of an instance's parks a release ramp let go, waiting for the
/// instant it gave (held by the ramp when that is later than its own due
/// time): what `qflow show` says of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RampHold {
    pub schedule: i64,
    pub timer: i64,
    pub node: String,
    /// Its own due time, and the instant the ramp lets it go (the run's
    /// clock, absolute ms).
    pub due_ms: i64,
    pub release_ms: i64,
    pub ramp: Option<String>,
    pub max_rate: Option<String>,
    pub by: String,
    pub reason: Option<String>,
}

const PARKS_OF_CLASS: &str = "SELECT t.id, t.instance_id, t.dependency, t.due_ms FROM timers t JOIN instances i ON i.id = t.instance_id
     WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting')
       AND i.quarantined_ms IS NULL AND t.class = $1
     ORDER BY t.due_ms, t.id";
const PARKS_OF_DEPENDENCY: &str = "SELECT t.id, t.instance_id, t.dependency, t.due_ms FROM timers t JOIN instances i ON i.id = t.instance_id
     WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting')
       AND i.quarantined_ms IS NULL AND t.dependency = $1
     ORDER BY t.due_ms, t.id";

/// The parks an unpause of `kind` `value` lets go.
fn parks_in(
    db: &mut dyn Conn,
    kind: PauseKind,
    value: &str,
) -> Result<Vec<ReleasePark>, StoreError> {
    let sql = match kind {
        PauseKind::Class => PARKS_OF_CLASS,
        PauseKind::Dependency => PARKS_OF_DEPENDENCY,
    };
    db.rows(sql, args![value], |r| {
        Ok(ReleasePark {
            timer: r.get(0)?,
            instance: r.get(1)?,
            dependency: r.get(2)?,
            due_ms: r.get(3)?,
        })
    })
}

/// The armed retry parks of one unfinished instance (quarantined or
/// not): what a ramped release of it lets go.
fn instance_parks(db: &mut dyn Conn, instance: &str) -> Result<Vec<ReleasePark>, StoreError> {
    db.rows(
        "SELECT t.id, t.instance_id, t.dependency, t.due_ms FROM timers t JOIN instances i ON i.id = t.instance_id
         WHERE t.instance_id = $1 AND t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting')
         ORDER BY t.due_ms, t.id",
        args![instance],
        |r| {
            Ok(ReleasePark {
                timer: r.get(0)?,
                instance: r.get(1)?,
                dependency: r.get(2)?,
                due_ms: r.get(3)?,
            })
        },
    )
}

/// The latest decision the store holds (the run's clock), if any.
fn latest_decision(db: &mut dyn Conn) -> Result<Option<i64>, StoreError> {
    db.one("SELECT MAX(at_ms) FROM transitions", args![], |r| r.get(0))
}

/// A schedule still releasing `kind` `value` (a park of it waits for its
/// instant): its id.
/// The ramped unpause of [`Store::unpause_ramped`] in the open
/// transaction, which holds [`Lock::PauseExclusive`] and has found no ramp
/// of the same target in progress: a closing breaker
/// ([`crate::breaker`]) releases through it too.
pub(crate) fn unpause_ramped_in(
    db: &mut dyn Conn,
    kind: PauseKind,
    value: &str,
    wall_now_ms: i64,
    actor: &Actor,
    shape: &ShapeText,
    plan: impl FnOnce(&[ReleasePark], Option<i64>) -> Planned,
) -> Result<RampedUnpause, StoreError> {
    let parks = parks_in(db, kind, value)?;
    let latest = latest_decision(db)?;
    let planned = plan(&parks, latest);
    let (id, end_ms, n) = write_schedule(
        db,
        ReleaseKind::of(kind),
        value,
        shape,
        &planned,
        &parks,
        wall_now_ms,
        actor,
    )?;
    crate::fault::point("release.written");
    let unpause = set_pause_in(db, kind, value, wall_now_ms, actor, false)?;
    Ok(RampedUnpause {
        schedule: id,
        start_ms: planned.start_ms,
        end_ms,
        parks: n,
        unpause,
    })
}

pub(crate) fn in_progress(
    db: &mut dyn Conn,
    kind: PauseKind,
    value: &str,
) -> Result<Option<i64>, StoreError> {
    db.opt(
        "SELECT s.id FROM release_schedules s
         WHERE s.kind = $1 AND s.value = $2 AND s.stopped_ms IS NULL
           AND EXISTS (SELECT 1 FROM release_slots r JOIN timers t ON t.id = r.timer_id
                       WHERE r.schedule_id = s.id AND t.state = 'armed' AND t.due_ms = r.release_ms AND r.release_ms > r.due_ms)
         ORDER BY s.id DESC LIMIT 1",
        args![kind.flag(), value],
        |r| r.get(0),
    )
}

fn schedule_row(r: &dyn Row) -> Result<ReleaseSchedule, StoreError> {
    let kind: String = r.get(1)?;
    Ok(ReleaseSchedule {
        id: r.get(0)?,
        kind: ReleaseKind::parse(&kind),
        value: r.get(2)?,
        ramp: r.get(3)?,
        max_rate: r.get(4)?,
        start_ms: r.get(5)?,
        end_ms: r.get(6)?,
        created_ms: r.get(7)?,
        by: r.get(8)?,
        reason: r.get(9)?,
        stopped_ms: r.get(10)?,
        stopped_by: r.get(11)?,
        stop_reason: r.get(12)?,
        parks: r.get::<i64>(13)? as u64,
        waiting: r.get::<i64>(14)? as u64,
        next_ms: r.get(15)?,
    })
}

/// Write a schedule of `planned` over `parks`: the schedule row, a slot
/// per park, and each park's release instant as its timer's due time
/// (what every replica reads). Its id, last release and slots written.
#[allow(clippy::too_many_arguments)]
fn write_schedule(
    db: &mut dyn Conn,
    kind: ReleaseKind,
    value: &str,
    shape: &ShapeText,
    planned: &Planned,
    parks: &[ReleasePark],
    wall_now_ms: i64,
    actor: &Actor,
) -> Result<(i64, i64, u64), StoreError> {
    let end_ms = planned
        .slots
        .iter()
        .map(|(_, at)| *at)
        .max()
        .unwrap_or(planned.start_ms);
    let id: i64 = db.one(
        "INSERT INTO release_schedules(kind, value, ramp, max_rate, start_ms, end_ms, created_ms, actor, reason)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        args![
            kind.flag(),
            value,
            shape.ramp,
            shape.max_rate,
            planned.start_ms,
            end_ms,
            wall_now_ms,
            actor.by,
            actor.reason
        ],
        |r| r.get(0),
    )?;
    let by_timer: std::collections::HashMap<i64, &ReleasePark> =
        parks.iter().map(|p| (p.timer, p)).collect();
    let mut n = 0u64;
    for (timer, release_ms) in &planned.slots {
        let Some(p) = by_timer.get(timer) else {
            continue;
        };
        let release_ms = (*release_ms).max(p.due_ms);
        db.execute(
            "INSERT INTO release_slots(schedule_id, timer_id, instance_id, dependency, due_ms, release_ms)
             VALUES ($1, $2, $3, $4, $5, $6)",
            args![id, timer, p.instance, p.dependency, p.due_ms, release_ms],
        )?;
        n += 1;
    }
    db.execute(
        "UPDATE timers SET due_ms = (SELECT r.release_ms FROM release_slots r WHERE r.schedule_id = $1 AND r.timer_id = timers.id)
         WHERE id IN (SELECT r.timer_id FROM release_slots r WHERE r.schedule_id = $1 AND r.release_ms > r.due_ms)
           AND state = 'armed'",
        args![id],
    )?;
    Ok((id, end_ms, n))
}

impl Store {
    /// The parks an unpause of `kind` `value` would let go now, and the
    /// latest decision the store holds: what a preview plans from
    /// (nothing is written).
    pub fn release_parks(
        &self,
        kind: PauseKind,
        value: &str,
    ) -> Result<(Vec<ReleasePark>, Option<i64>), StoreError> {
        self.read(|db| Ok((parks_in(db, kind, value)?, latest_decision(db)?)))
    }

    /// The latest decision the store holds (the run's clock), if any:
    /// where a planned release's minute 0 is on a virtual clock
    /// (a preview of parks not yet armed starts from it).
    pub fn latest_decision_ms(&self) -> Result<Option<i64>, StoreError> {
        self.read(|db| latest_decision(db))
    }

    /// The armed retry parks of `instances` (an unknown one refused), and
    /// the latest decision the store holds: what a preview of their
    /// ramped release plans from (nothing is written).
    pub fn instances_release_parks(
        &self,
        instances: &[String],
    ) -> Result<(Vec<ReleasePark>, Option<i64>), StoreError> {
        self.read(|db| {
            let mut parks = Vec::new();
            for instance in instances {
                let known: Option<String> = db.opt(
                    "SELECT status FROM instances WHERE id = $1",
                    args![instance],
                    |r| r.get(0),
                )?;
                if known.is_none() {
                    return Err(StoreError::NoInstance(instance.clone()));
                }
                parks.extend(instance_parks(db, instance)?);
            }
            Ok((parks, latest_decision(db)?))
        })
    }

    /// Unpause `kind` `value` with a planned release, in one transaction
    /// under the pause lock: read the parks, ask `plan` for their release
    /// instants (with the latest decision the store holds), write the
    /// schedule, its slots and each park's timer, lift the pause and log
    /// it. Refused while an earlier ramp of the same target still holds a
    /// park (stop it first).
    pub fn unpause_ramped(
        &mut self,
        kind: PauseKind,
        value: &str,
        wall_now_ms: i64,
        actor: &Actor,
        shape: &ShapeText,
        plan: impl FnOnce(&[ReleasePark], Option<i64>) -> Planned,
    ) -> Result<RampedUnpause, StoreError> {
        self.write(|db| {
            db.lock(Lock::PauseExclusive)?;
            if let Some(id) = in_progress(db, kind, value)? {
                return Err(StoreError::Release(format!(
                    "release ramp {id} is still releasing {} {value}: stop it first (`qflow unpause --stop-ramp {id}`), then ramp again",
                    kind.flag()
                )));
            }
            unpause_ramped_in(db, kind, value, wall_now_ms, actor, shape, plan)
        })
    }

    /// Release quarantined `instances` with a planned release, in one
    /// transaction: read their armed retry parks, ask `plan` for the
    /// release instants, write the schedule, its slots and each park's
    /// timer, then release each instance (logged). Their other work (a
    /// ready token, a pending delivery, a timer that is not a retry) runs
    /// as soon as it is due: a ramp spaces the retries. Refused for an
    /// unknown instance, and while an earlier ramp holds a park of one.
    pub fn release_ramped(
        &mut self,
        instances: &[String],
        wall_now_ms: i64,
        actor: &Actor,
        shape: &ShapeText,
        plan: impl FnOnce(&[ReleasePark], Option<i64>) -> Planned,
    ) -> Result<RampedRelease, StoreError> {
        self.write(|db| {
            db.lock(Lock::PauseExclusive)?;
            let mut parks = Vec::new();
            for instance in instances {
                let known: Option<String> = db.opt(
                    "SELECT status FROM instances WHERE id = $1",
                    args![instance],
                    |r| r.get(0),
                )?;
                if known.is_none() {
                    return Err(StoreError::NoInstance(instance.clone()));
                }
                if let Some(id) = db.opt(
                    "SELECT s.id FROM release_slots r JOIN release_schedules s ON s.id = r.schedule_id JOIN timers t ON t.id = r.timer_id
                     WHERE r.instance_id = $1 AND s.stopped_ms IS NULL AND t.state = 'armed'
                       AND t.due_ms = r.release_ms AND r.release_ms > r.due_ms
                     ORDER BY s.id DESC LIMIT 1",
                    args![instance],
                    |r| r.get::<i64>(0),
                )? {
                    return Err(StoreError::Release(format!(
                        "release ramp {id} still holds a retry of {instance}: stop it first (`qflow unpause --stop-ramp {id}`), then ramp again"
                    )));
                }
                parks.extend(instance_parks(db, instance)?);
            }
            let latest = latest_decision(db)?;
            let planned = plan(&parks, latest);
            let (id, end_ms, n) = write_schedule(
                db,
                ReleaseKind::Instance,
                &instances.join(","),
                shape,
                &planned,
                &parks,
                wall_now_ms,
                actor,
            )?;
            let mut released = Vec::new();
            for instance in instances {
                released.push(set_quarantine_in(db, instance, wall_now_ms, actor, false)?);
            }
            Ok(RampedRelease {
                schedule: id,
                start_ms: planned.start_ms,
                end_ms,
                parks: n,
                released,
            })
        })
    }

    /// Stop release schedule `id`: its parks not yet fired go back to
    /// their own due times and its target is paused again (by `actor`, for
    /// the record and the log), so nothing more of it is let go until an
    /// unpause. Stopping a stopped schedule changes nothing.
    pub fn stop_release(
        &mut self,
        id: i64,
        wall_now_ms: i64,
        actor: &Actor,
    ) -> Result<StoppedRelease, StoreError> {
        self.write(|db| {
            db.lock(Lock::PauseExclusive)?;
            type Found = (String, String, Option<i64>);
            let row: Option<Found> = db.opt(
                "SELECT kind, value, stopped_ms FROM release_schedules WHERE id = $1 FOR UPDATE",
                args![id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let Some((kind, value, stopped)) = row else {
                return Err(StoreError::Release(format!(
                    "no release ramp {id} (`qflow stats --db DB` lists them under releases)"
                )));
            };
            let kind = ReleaseKind::parse(&kind);
            let changed = stopped.is_none();
            // The instances with a park not yet let go, before their
            // timers move back.
            let waiting: Vec<String> = if changed && kind == ReleaseKind::Instance {
                db.rows(
                    "SELECT DISTINCT r.instance_id FROM release_slots r JOIN timers t ON t.id = r.timer_id
                     WHERE r.schedule_id = $1 AND t.state = 'armed' AND t.due_ms = r.release_ms
                     ORDER BY r.instance_id",
                    args![id],
                    |r| r.get(0),
                )?
            } else {
                Vec::new()
            };
            let mut held_again = 0;
            if changed {
                held_again = db.execute(
                    "UPDATE timers SET due_ms = (SELECT r.due_ms FROM release_slots r WHERE r.schedule_id = $1 AND r.timer_id = timers.id)
                     WHERE state = 'armed' AND id IN (SELECT r.timer_id FROM release_slots r WHERE r.schedule_id = $1)
                       AND due_ms = (SELECT r.release_ms FROM release_slots r WHERE r.schedule_id = $1 AND r.timer_id = timers.id)",
                    args![id],
                )?;
                db.execute(
                    "UPDATE release_schedules SET stopped_ms = $2, stopped_by = $3, stop_reason = $4 WHERE id = $1",
                    args![id, wall_now_ms, actor.by, actor.reason],
                )?;
            }
            let pause = match kind.pause() {
                Some(p) => Some(set_pause_in(db, p, &value, wall_now_ms, actor, true)?),
                None => None,
            };
            let mut quarantined = Vec::new();
            for instance in &waiting {
                quarantined.push(set_quarantine_in(db, instance, wall_now_ms, actor, true)?);
            }
            Ok(StoppedRelease {
                schedule: id,
                kind,
                value,
                changed,
                held_again,
                pause,
                quarantined,
            })
        })
    }

    /// Every release schedule, newest first (none on a database older
    /// than [`schema::RELEASES`], read without upgrading).
    pub fn releases(&self) -> Result<Vec<ReleaseSchedule>, StoreError> {
        if self.schema_version()? < schema::RELEASES {
            return Ok(Vec::new());
        }
        self.read(|db| {
            db.rows(
                concat!(
                    "SELECT s.id, s.kind, s.value, s.ramp, s.max_rate, s.start_ms, s.end_ms, s.created_ms, s.actor, s.reason,
            s.stopped_ms, s.stopped_by, s.stop_reason,
            (SELECT COUNT(*) FROM release_slots r WHERE r.schedule_id = s.id),
            (SELECT COUNT(*) FROM release_slots r JOIN timers t ON t.id = r.timer_id
             WHERE r.schedule_id = s.id AND s.stopped_ms IS NULL AND t.state = 'armed' AND t.due_ms = r.release_ms),
            (SELECT MIN(r.release_ms) FROM release_slots r JOIN timers t ON t.id = r.timer_id
             WHERE r.schedule_id = s.id AND s.stopped_ms IS NULL AND t.state = 'armed' AND t.due_ms = r.release_ms)
     FROM release_schedules s",
                    " ORDER BY s.id DESC"
                ),
                args![],
                schedule_row,
            )
        })
    }

    /// Release schedule `id`'s releases per minute from its minute 0 (by
    /// the instants it wrote): what a report charts.
    pub fn release_curve(
        &self,
        id: i64,
    ) -> Result<std::collections::BTreeMap<i64, u64>, StoreError> {
        self.read(|db| {
            let rows: Vec<(i64, i64)> = db.rows(
                "SELECT (r.release_ms - s.start_ms) / 60000, COUNT(*) FROM release_slots r
                 JOIN release_schedules s ON s.id = r.schedule_id
                 WHERE r.schedule_id = $1 GROUP BY 1 ORDER BY 1",
                args![id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            Ok(rows.into_iter().map(|(m, n)| (m, n as u64)).collect())
        })
    }

    /// The parks of `instance` a release ramp let go and that wait for
    /// the instant it gave them (a ramp not stopped, the park armed at that
    /// instant; held by it when the instant is later than the park's own
    /// due time), earliest first.
    pub fn ramp_holds(&self, instance: &str) -> Result<Vec<RampHold>, StoreError> {
        if self.schema_version()? < schema::RELEASES {
            return Ok(Vec::new());
        }
        self.read(|db| {
            db.rows(
                "SELECT s.id, t.id, t.node, r.due_ms, r.release_ms, s.ramp, s.max_rate, s.actor, s.reason
                 FROM release_slots r JOIN release_schedules s ON s.id = r.schedule_id JOIN timers t ON t.id = r.timer_id
                 WHERE r.instance_id = $1 AND s.stopped_ms IS NULL AND t.state = 'armed'
                   AND t.due_ms = r.release_ms
                 ORDER BY r.release_ms, t.id",
                args![instance],
                |r| {
                    Ok(RampHold {
                        schedule: r.get(0)?,
                        timer: r.get(1)?,
                        node: r.get(2)?,
                        due_ms: r.get(3)?,
                        release_ms: r.get(4)?,
                        ramp: r.get(5)?,
                        max_rate: r.get(6)?,
                        by: r.get(7)?,
                        reason: r.get(8)?,
                    })
                },
            )
        })
    }
}
