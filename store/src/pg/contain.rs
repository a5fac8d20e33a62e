//! Containment on PostgreSQL: pauses and quarantine, with the same meaning
//! as SQLite's `contain.rs` (see there for why each check sits where it
//! does). A pause or a quarantine is a row, so it holds for every process
//! on every host serving the database.

use postgres::GenericClient;

use super::super::contain::{
    entry, in_order, pause_changes, quarantine_changes, record_after, Action, Actor, Containment,
    HeldPark, LogQuery, Logged, NewEntry, ParkedCause, Pause, PauseChange, PauseKind, PauseRecord,
    QuarantineChange, Quarantined, PARKED_BY_CAUSE,
};
use super::{Db, Postgres, StoreError};

impl Postgres {
    pub fn pause(
        &mut self,
        kind: PauseKind,
        value: &str,
        wall_now_ms: i64,
        actor: &Actor,
    ) -> Result<PauseChange, StoreError> {
        self.set_pause(kind, value, wall_now_ms, actor, true)
    }

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
            // commit; pauses and unpauses are one at a time under it, so
            // the record read here is the one changed.
            db.exec(
                "SELECT pg_advisory_xact_lock($1)",
                &[&super::schema::PAUSE_LOCK],
            )?;
            let record = pause_record(db, kind, value)?;
            let changed = pause_changes(record.is_some(), on);
            if changed && on {
                db.exec(
                    "INSERT INTO pauses(kind, value, paused_ms, paused_by, reason) VALUES ($1, $2, $3, $4, $5)",
                    &[&kind.flag(), &value, &wall_now_ms, &actor.by, &actor.reason],
                )?;
            } else if changed {
                db.exec(
                    "DELETE FROM pauses WHERE kind = $1 AND value = $2",
                    &[&kind.flag(), &value],
                )?;
            }
            super::super::fault::point("contain.written");
            let action = if on { Action::Pause } else { Action::Unpause };
            let logged = append_log(
                db,
                &entry(action, kind.flag(), value, wall_now_ms, actor, changed),
            )?;
            super::super::fault::point("contain.logged");
            let record = record_after(record, on, changed, actor);
            parks(db, kind, value, changed, record, logged)
        })
    }

    pub fn paused_dependencies(&self) -> Result<std::collections::BTreeSet<String>, StoreError> {
        self.read(|db| {
            Ok(db
                .rows("SELECT value FROM pauses WHERE kind = 'dependency'", &[])?
                .iter()
                .map(|r| r.get(0))
                .collect())
        })
    }

    pub fn pauses(&self) -> Result<Vec<Pause>, StoreError> {
        self.read(|db| Postgres::pauses_in(self, db))
    }

    pub(super) fn pauses_in<C: GenericClient>(
        &self,
        db: &mut Db<'_, C>,
    ) -> Result<Vec<Pause>, StoreError> {
        Ok(db
            .rows(
                "SELECT p.kind, p.value, p.paused_ms, p.paused_by, p.reason,
                        (SELECT COUNT(*) FROM timers t JOIN instances i ON i.id = t.instance_id
                         WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting')
                           AND CASE p.kind WHEN 'class' THEN t.class ELSE t.dependency END = p.value)
                 FROM pauses p ORDER BY p.paused_ms, p.kind, p.value",
                &[],
            )?
            .iter()
            .map(|r| {
                let kind: String = r.get(0);
                Pause {
                    kind: PauseKind::parse(&kind),
                    value: r.get(1),
                    paused_ms: r.get(2),
                    by: r.get(3),
                    reason: r.get(4),
                    holding: r.get::<_, i64>(5) as u64,
                }
            })
            .collect())
    }

    pub fn quarantine(
        &mut self,
        instance: &str,
        wall_now_ms: i64,
        actor: &Actor,
    ) -> Result<QuarantineChange, StoreError> {
        self.set_quarantine(instance, wall_now_ms, actor, true)
    }

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
        self.write(|db| {
            let Some(r) = db.opt(
                "SELECT status, quarantined_ms, quarantined_by, quarantine_reason FROM instances WHERE id = $1 FOR UPDATE",
                &[&instance],
            )?
            else {
                return Err(StoreError::NoInstance(instance.into()));
            };
            let (status, was): (String, Option<i64>) = (r.get(0), r.get(1));
            let (mut by, mut reason): (Option<String>, Option<String>) = (r.get(2), r.get(3));
            // A refusal returns before anything is written: rolled back,
            // nothing logged.
            let changed = quarantine_changes(instance, &status, was.is_some(), on)?;
            if changed {
                let who = on.then_some(actor);
                db.exec(
                    "UPDATE instances SET quarantined_ms = $2, quarantined_by = $3, quarantine_reason = $4 WHERE id = $1",
                    &[
                        &instance,
                        &on.then_some(wall_now_ms),
                        &who.map(|a| &a.by),
                        &who.and_then(|a| a.reason.as_ref()),
                    ],
                )?;
                if let Some(a) = who {
                    (by, reason) = (Some(a.by.clone()), a.reason.clone());
                }
            }
            super::super::fault::point("contain.written");
            let action = if on {
                Action::Quarantine
            } else {
                Action::Release
            };
            let logged = append_log(
                db,
                &entry(action, "instance", instance, wall_now_ms, actor, changed),
            )?;
            super::super::fault::point("contain.logged");
            Ok(QuarantineChange {
                instance: instance.into(),
                status,
                changed,
                by,
                reason,
                logged,
            })
        })
    }

    pub fn containment_log(&self, query: &LogQuery) -> Result<Vec<Logged>, StoreError> {
        let limit = (query.limit > 0).then_some(i64::from(query.limit));
        self.read(|db| {
            let rows = match &query.target {
                Some((kind, value)) => db.rows(
                    "SELECT seq, at_ms, action, kind, value, actor, reason, changed FROM containment_log
                     WHERE kind = $1 AND value = $2 ORDER BY seq DESC LIMIT $3",
                    &[kind, value, &limit],
                )?,
                None => db.rows(
                    "SELECT seq, at_ms, action, kind, value, actor, reason, changed FROM containment_log
                     ORDER BY seq DESC LIMIT $1",
                    &[&limit],
                )?,
            };
            Ok(in_order(
                rows.iter()
                    .map(|r| Logged {
                        seq: r.get(0),
                        at_ms: r.get(1),
                        action: Action::parse(r.get(2)),
                        kind: r.get(3),
                        value: r.get(4),
                        by: r.get(5),
                        reason: r.get(6),
                        changed: r.get(7),
                    })
                    .collect(),
            ))
        })
    }

    pub fn containment(&self, instance: &str) -> Result<Containment, StoreError> {
        self.read(|db| {
            let Some(row) = db.opt(
                "SELECT quarantined_ms, quarantined_by, quarantine_reason FROM instances WHERE id = $1",
                &[&instance],
            )?
            else {
                return Err(StoreError::NoInstance(instance.into()));
            };
            let held = db
                .rows(
                    "SELECT t.id, t.node, t.due_ms, p.kind, p.value, p.paused_ms, p.paused_by, p.reason
                     FROM timers t JOIN pauses p
                       ON (p.kind = 'class' AND p.value = t.class) OR (p.kind = 'dependency' AND p.value = t.dependency)
                     WHERE t.instance_id = $1 AND t.state = 'armed' AND t.purpose = 'retry'
                     ORDER BY t.due_ms, t.id, p.paused_ms, p.kind, p.value",
                    &[&instance],
                )?
                .iter()
                .map(|r| HeldPark {
                    timer: r.get(0),
                    node: r.get(1),
                    due_ms: r.get(2),
                    kind: PauseKind::parse(r.get(3)),
                    value: r.get(4),
                    paused_ms: r.get(5),
                    paused_by: r.get(6),
                    reason: r.get(7),
                })
                .collect();
            Ok(Containment {
                quarantined_ms: row.get(0),
                quarantined_by: row.get(1),
                quarantine_reason: row.get(2),
                held,
            })
        })
    }

    pub fn parked_by_cause(&self) -> Result<Vec<ParkedCause>, StoreError> {
        self.read(|db| {
            Ok(db
                .rows(PARKED_BY_CAUSE, &[])?
                .iter()
                .map(|r| ParkedCause {
                    kind: PauseKind::parse(r.get(0)),
                    value: r.get(1),
                    parks: r.get::<_, i64>(2) as u64,
                })
                .collect())
        })
    }

    pub fn held_parks(&self) -> Result<Vec<(String, HeldPark)>, StoreError> {
        self.read(|db| {
            Ok(db
                .rows(
                    "SELECT t.instance_id, t.id, t.node, t.due_ms, p.kind, p.value, p.paused_ms, p.paused_by, p.reason
                     FROM pauses p JOIN timers t
                       ON (p.kind = 'class' AND p.value = t.class) OR (p.kind = 'dependency' AND p.value = t.dependency)
                     JOIN instances i ON i.id = t.instance_id
                     WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting')
                     ORDER BY t.instance_id, t.due_ms, t.id, p.paused_ms, p.kind, p.value",
                    &[],
                )?
                .iter()
                .map(|r| {
                    (
                        r.get(0),
                        HeldPark {
                            timer: r.get(1),
                            node: r.get(2),
                            due_ms: r.get(3),
                            kind: PauseKind::parse(r.get(4)),
                            value: r.get(5),
                            paused_ms: r.get(6),
                            paused_by: r.get(7),
                            reason: r.get(8),
                        },
                    )
                })
                .collect())
        })
    }

    pub fn quarantined(&self) -> Result<Vec<Quarantined>, StoreError> {
        self.read(|db| {
            Ok(db
                .rows(
                    "SELECT id, quarantined_ms, quarantined_by, quarantine_reason FROM instances WHERE quarantined_ms IS NOT NULL ORDER BY quarantined_ms, seq",
                    &[],
                )?
                .iter()
                .map(|r| Quarantined {
                    instance: r.get(0),
                    at_ms: r.get(1),
                    by: r.get(2),
                    reason: r.get(3),
                })
                .collect())
        })
    }
}

fn parks<C: GenericClient>(
    db: &mut Db<'_, C>,
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
    let r = db.one(sql, &[&value])?;
    Ok(PauseChange {
        kind,
        value: value.into(),
        changed,
        parks: r.get::<_, i64>(0) as u64,
        due_now: r.get::<_, i64>(1) as u64,
        by,
        reason,
        logged,
    })
}

/// The pause of `kind` `value` if there is one: who made it and why (see
/// SQLite's).
fn pause_record<C: GenericClient>(
    db: &mut Db<'_, C>,
    kind: PauseKind,
    value: &str,
) -> Result<PauseRecord, StoreError> {
    Ok(db
        .opt(
            "SELECT paused_by, reason FROM pauses WHERE kind = $1 AND value = $2",
            &[&kind.flag(), &value],
        )?
        .map(|r| (r.get(0), r.get(1))))
}

/// Append `e` to the containment log, in the action's transaction.
fn append_log<C: GenericClient>(
    db: &mut Db<'_, C>,
    e: &NewEntry<'_>,
) -> Result<Logged, StoreError> {
    let r = db.one(
        "INSERT INTO containment_log(at_ms, action, kind, value, actor, reason, changed)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING seq",
        &[
            &e.at_ms, &e.action, &e.kind, &e.value, &e.by, &e.reason, &e.changed,
        ],
    )?;
    Ok(e.logged(r.get(0)))
}

#[cfg(test)]
mod tests {
    use super::super::{schema::PAUSE_LOCK, scratch_database, test_server};
    use crate::contain::{Actor, PauseKind};
    use crate::{Location, Store};

    /// A re-drive that checked for pauses before a pause committed must not
    /// commit after it: the pause waits for the re-drive's shared lock.
    /// (Staged with a raw transaction holding that lock, as an applying
    /// transition does between its check and its commit.)
    #[test]
    fn a_pause_waits_for_a_redrive_already_past_its_check() {
        let test = "a_pause_waits_for_a_redrive";
        let Some(server) = test_server(test) else {
            return;
        };
        let db = scratch_database(
            &server,
            &format!("qflow_unit_{test}_{}", std::process::id()),
        )
        .unwrap();
        drop(Store::connect(&Location::Postgres(db.clone())).unwrap());
        let mut redrive = postgres::Client::connect(&db, postgres::NoTls).unwrap();
        let mut in_flight = redrive.transaction().unwrap();
        in_flight
            .execute("SELECT pg_advisory_xact_lock_shared($1)", &[&PAUSE_LOCK])
            .unwrap();
        let pausing = {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut operator = Store::connect(&Location::Postgres(db)).unwrap();
                operator
                    .pause(PauseKind::Class, "transient", 1, &Actor::new("ops"))
                    .unwrap();
            })
        };
        // The pause is seen waiting on the lock, not committed.
        let mut watcher = postgres::Client::connect(&db, postgres::NoTls).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let waiting: i64 = watcher
                .query_one(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
                    &[],
                )
                .unwrap()
                .get(0);
            if waiting == 1 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline && !pausing.is_finished(),
                "the pause did not wait for the in-flight re-drive"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let paused: i64 = watcher
            .query_one("SELECT count(*) FROM pauses", &[])
            .unwrap()
            .get(0);
        assert_eq!(paused, 0, "not committed while the re-drive is in flight");
        in_flight.commit().unwrap();
        pausing.join().unwrap();
        let paused: i64 = watcher
            .query_one("SELECT count(*) FROM pauses", &[])
            .unwrap()
            .get(0);
        assert_eq!(paused, 1);
    }
}
