//! Attempts in flight: a handler that runs outside the store (a command, an
//! HTTP call, a closure) is recorded as started, in its own transaction,
//! before it runs, as an open incident of kind `in-flight`. If the process
//! dies before the attempt's outcome is applied, the next process finds the
//! record with the instance still at the version the attempt was started
//! from, and decides that attempt as an unknown outcome instead of running
//! the handler a second time: the effect may have happened.

use crate::sql::args;
use crate::{Store, StoreError};
use qflow_instance::IncidentKind;

/// The incident kind of an attempt in flight.
pub const KIND: IncidentKind = IncidentKind::InFlight;

/// An attempt recorded as started and not yet closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub attempt: u32,
    /// The instance's version the attempt was started from: still the
    /// instance's version means its outcome was never applied.
    pub version: i64,
    pub opened_ms: i64,
    pub message: String,
    /// The process running the attempt (`host:pid`), and until when (wall
    /// clock) it may run at most: absent in records written before lanes.
    pub owner: Option<String>,
    pub lease_until_ms: Option<i64>,
}

impl InFlight {
    /// Whether the attempt this open record names can no longer report its
    /// outcome: its owner is gone (a dead process on this host, an engine
    /// of this process that was dropped, or the reader itself, `me`, when it
    /// is not running the attempt on one of its lanes), or its lease ran
    /// out. A record written before lanes (no owner) is an orphan when the
    /// instance is still at the version it was started from. Every applied
    /// attempt outcome closes its record in its own transaction, so an open
    /// record is an outcome never recorded.
    pub fn orphaned(&self, me: &str, version: i64, running_here: bool, wall_now_ms: i64) -> bool {
        if self.owner.is_none() {
            return self.version == version;
        }
        !self.running(me, running_here, wall_now_ms)
    }

    /// Whether the attempt may still be running, so no other may start:
    /// its owner lives (the reader `me` only if it runs it on a lane now;
    /// another engine of this process while it is registered) and its lease
    /// has not run out. A record without an owner was written by a process
    /// that held the claim while its handler ran: whoever reads it holds
    /// the claim, so that attempt is not running.
    pub fn running(&self, me: &str, running_here: bool, wall_now_ms: i64) -> bool {
        let Some(owner) = &self.owner else {
            return false;
        };
        if self.lease_until_ms.is_some_and(|l| l <= wall_now_ms) {
            return false;
        }
        if owner == me {
            return running_here;
        }
        !super::owner_is_dead(owner)
    }
}

pub(super) fn message(attempt: u32, version: i64, wall_ms: i64) -> String {
    format!("attempt {attempt} started (instance version {version}, wall clock {wall_ms} ms); the handler is running")
}

/// [`message`] naming the process that runs the attempt and its lease.
pub(super) fn message_by(
    attempt: u32,
    version: i64,
    wall_ms: i64,
    owner: &str,
    lease_until_ms: i64,
) -> String {
    format!(
        "{}; owner {owner}, lease until {lease_until_ms} ms",
        message(attempt, version, wall_ms)
    )
}

pub(super) fn parse(message: &str) -> Option<(u32, i64)> {
    let mut words = message.split_whitespace();
    let attempt = words.nth(1)?.parse().ok()?;
    let version = words.nth(3)?.trim_end_matches(',').parse().ok()?;
    Some((attempt, version))
}

/// The owner and lease [`message_by`] wrote, if it did.
pub(super) fn parse_owner(message: &str) -> (Option<String>, Option<i64>) {
    let Some((_, rest)) = message.rsplit_once("; owner ") else {
        return (None, None);
    };
    let Some((owner, lease)) = rest.split_once(", lease until ") else {
        return (None, None);
    };
    let lease = lease.trim_end_matches(" ms").parse().ok();
    (Some(owner.to_string()), lease)
}

/// The fields a new record is written with.
struct Opened<'a> {
    attempt: u32,
    version: i64,
    owner: Option<&'a str>,
    lease_until_ms: Option<i64>,
}

/// The columns of an open record as [`Stored::read`] reads them, from
/// its first.
macro_rules! stored_columns {
    () => {
        "message, opened_ms, attempt, from_version, owner, lease_until_ms"
    };
}
pub(crate) use stored_columns;

/// An open record's row as read.
pub(crate) struct Stored {
    message: String,
    opened_ms: i64,
    attempt: Option<i64>,
    version: Option<i64>,
    owner: Option<String>,
    lease_until_ms: Option<i64>,
}

impl Stored {
    /// The [`stored_columns`] of a row, from column `at`.
    pub(crate) fn read(r: &dyn crate::sql::Row, at: usize) -> Result<Stored, StoreError> {
        Ok(Stored {
            message: r.get(at)?,
            opened_ms: r.get(at + 1)?,
            attempt: r.get(at + 2)?,
            version: r.get(at + 3)?,
            owner: r.get(at + 4)?,
            lease_until_ms: r.get(at + 5)?,
        })
    }

    /// The record: from its columns; a record an older qflow wrote (before
    /// migration 15, the columns empty) from its message's words, as that
    /// qflow read it. `None` for a record neither can read.
    pub(crate) fn record(self) -> Option<InFlight> {
        let (attempt, version, owner, lease_until_ms) = match (self.attempt, self.version) {
            (Some(a), Some(v)) => (u32::try_from(a).ok()?, v, self.owner, self.lease_until_ms),
            _ => {
                let (a, v) = parse(&self.message)?;
                let (owner, lease) = parse_owner(&self.message);
                (a, v, owner, lease)
            }
        };
        Some(InFlight {
            attempt,
            version,
            opened_ms: self.opened_ms,
            message: self.message,
            owner,
            lease_until_ms,
        })
    }
}

impl Store {
    /// Record that attempt `attempt` of `node` starts now, from the
    /// instance at `version` (call under the instance's claim). Returns the
    /// number of the attempt's idempotency key ([`Store::next_task_key`]).
    pub fn open_in_flight(
        &self,
        instance: &str,
        node: &str,
        attempt: u32,
        version: i64,
        at_ms: i64,
        wall_ms: i64,
    ) -> Result<u32, StoreError> {
        let key = self.next_task_key(instance, node, attempt)?;
        let record = Opened {
            attempt,
            version,
            owner: None,
            lease_until_ms: None,
        };
        self.open_record(
            instance,
            node,
            &message(attempt, version, wall_ms),
            &record,
            at_ms,
        )?;
        Ok(key)
    }

    /// The number of the next idempotency key of the registered task at
    /// `node` (its key is `instance/node/N`), taken from the durable key
    /// ledger channel calls use (`request_keys`): one more than the last
    /// key the node was given, and never less than `attempt`, so the key
    /// says the attempt's number until the counter restarts (a loop that
    /// enters the node again, `migrate --reset-budget`, a damaged counter)
    /// and is never given twice. The ledger moves with a node a migration
    /// renames. Taken before the attempt's record is written: a crash in
    /// between leaves a gap in the numbers, never a key used twice.
    pub fn next_task_key(
        &self,
        instance: &str,
        node: &str,
        attempt: u32,
    ) -> Result<u32, StoreError> {
        self.read(|db| {
            db.execute(
                "INSERT INTO request_keys(instance_id, node, last) VALUES ($1, $2, $3)
                 ON CONFLICT (instance_id, node) DO UPDATE SET last = CASE WHEN request_keys.last + 1 > excluded.last THEN request_keys.last + 1 ELSE excluded.last END",
                args![instance, node, i64::from(attempt)],
            )?;
            let last: i64 = db.one(
                "SELECT last FROM request_keys WHERE instance_id = $1 AND node = $2",
                args![instance, node],
                |r| r.get(0),
            )?;
            Ok(last.clamp(0, i64::from(u32::MAX)) as u32)
        })
    }

    /// [`Store::open_in_flight`] for an attempt that `owner` (an engine's
    /// name, see [`crate::owner`]) runs on a lane, without the claim held
    /// while it runs: the record names the owner and how long the attempt
    /// may take.
    #[allow(clippy::too_many_arguments)]
    pub fn open_in_flight_by(
        &self,
        owner: &str,
        instance: &str,
        node: &str,
        attempt: u32,
        version: i64,
        at_ms: i64,
        wall_ms: i64,
        lease_until_ms: i64,
    ) -> Result<u32, StoreError> {
        let key = self.next_task_key(instance, node, attempt)?;
        let m = message_by(attempt, version, wall_ms, owner, lease_until_ms);
        let record = Opened {
            attempt,
            version,
            owner: Some(owner),
            lease_until_ms: Some(lease_until_ms),
        };
        self.open_record(instance, node, &m, &record, at_ms)?;
        Ok(key)
    }

    /// Write the record: its fields as columns (migration 15), and the
    /// same in words in its message, for a person reading the incident
    /// (`qflow show`) and for an older qflow reading a newer record.
    fn open_record(
        &self,
        instance: &str,
        node: &str,
        message: &str,
        record: &Opened<'_>,
        at_ms: i64,
    ) -> Result<(), StoreError> {
        self.group.forget(instance);
        self.read(|db| {
            db.execute(
                "INSERT INTO incidents(instance_id, node, kind, message, opened_ms, attempt, from_version, owner, lease_until_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                args![
                    instance,
                    node,
                    KIND.as_str(),
                    message,
                    at_ms,
                    i64::from(record.attempt),
                    record.version,
                    record.owner,
                    record.lease_until_ms
                ],
            )?;
            Ok(())
        })
    }

    /// Close the in-flight records of one node (its attempt came back and
    /// was decided, or found nothing waiting for it).
    pub fn close_in_flight_of(
        &self,
        instance: &str,
        node: &str,
        at_ms: i64,
    ) -> Result<(), StoreError> {
        self.group.forget(instance);
        self.read(|db| {
            db.execute(
                "UPDATE incidents SET closed_ms = $4 WHERE instance_id = $1 AND node = $2 AND kind = $3 AND closed_ms IS NULL",
                args![instance, node, KIND.as_str(), at_ms],
            )?;
            Ok(())
        })
    }

    /// The latest open in-flight record of `node`, if any.
    pub fn in_flight(&self, instance: &str, node: &str) -> Result<Option<InFlight>, StoreError> {
        if let Some(kept) = self.group.in_flight(instance, node) {
            return Ok(kept);
        }
        let row: Option<Stored> = self.read(|db| {
            db.opt(
                concat!(
                    "SELECT ",
                    stored_columns!(),
                    " FROM incidents WHERE instance_id = $1 AND node = $2 AND kind = $3 AND closed_ms IS NULL ORDER BY id DESC LIMIT 1"
                ),
                args![instance, node, KIND.as_str()],
                |r| Stored::read(r, 0),
            )
        })?;
        Ok(row.and_then(Stored::record))
    }

    /// Close the instance's in-flight records (its attempt's outcome was
    /// applied, or lost to another party).
    pub fn close_in_flight(&self, instance: &str, at_ms: i64) -> Result<(), StoreError> {
        self.group.forget(instance);
        self.read(|db| {
            db.execute(
                "UPDATE incidents SET closed_ms = $3 WHERE instance_id = $1 AND kind = $2 AND closed_ms IS NULL",
                args![instance, KIND.as_str(), at_ms],
            )?;
            Ok(())
        })
    }

    /// Record a decision taken more than the serving loop's threshold
    /// after it was due (wall clock): an observation `qflow stats` counts.
    pub fn record_late(
        &self,
        instance: &str,
        node: Option<&str>,
        kind: &str,
        due_ms: i64,
        decided_ms: i64,
    ) -> Result<(), StoreError> {
        self.read(|db| {
            db.execute(
                "INSERT INTO late_decisions(instance_id, node, kind, due_ms, decided_ms) VALUES ($1, $2, $3, $4, $5)",
                args![instance, node, kind, due_ms, decided_ms],
            )?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_message_says_what_is_parsed_back() {
        let m = super::message(3, 17, 1_700_000_000_000);
        assert_eq!(super::parse(&m), Some((3, 17)), "{m}");
        assert_eq!(super::parse_owner(&m), (None, None));
        let m = super::message_by(3, 17, 1_700_000_000_000, "box:42", 1_700_000_035_000);
        assert_eq!(super::parse(&m), Some((3, 17)), "{m}");
        assert_eq!(
            super::parse_owner(&m),
            (Some("box:42".into()), Some(1_700_000_035_000))
        );
    }

    #[test]
    fn a_record_runs_while_its_process_lives_and_its_lease_lasts() {
        use super::InFlight;
        let me = super::super::local_owner();
        let rec = |owner: Option<&str>, lease: Option<i64>| InFlight {
            attempt: 1,
            version: 5,
            opened_ms: 0,
            message: String::new(),
            owner: owner.map(str::to_string),
            lease_until_ms: lease,
        };
        // Written under a held claim (no owner): an orphan at its version only.
        assert!(rec(None, None).orphaned(&me, 5, false, 0));
        assert!(!rec(None, None).orphaned(&me, 6, false, 0));
        assert!(!rec(None, None).running(&me, false, 0));
        // The reader's own: running only on one of its lanes.
        assert!(rec(Some(&me), Some(100)).running(&me, true, 50));
        assert!(rec(Some(&me), Some(100)).orphaned(&me, 9, false, 50));
        // Past its lease: an orphan whoever owns it.
        assert!(rec(Some(&me), Some(100)).orphaned(&me, 5, true, 100));
        // A dead process on this host.
        let host = me.rsplit_once(':').unwrap().0;
        let dead = format!("{host}:999999999");
        assert!(rec(Some(&dead), Some(100)).orphaned(&me, 5, false, 50));
        // Another host's: running until its lease ends.
        assert!(rec(Some("elsewhere:1"), Some(100)).running(&me, false, 50));
        assert!(rec(Some("elsewhere:1"), Some(100)).orphaned(&me, 5, false, 100));
    }

    #[test]
    fn another_engine_of_this_process_runs_its_attempt_while_it_lives() {
        use super::InFlight;
        let other = super::super::engine_owner();
        let reader = super::super::engine_owner();
        let rec = InFlight {
            attempt: 1,
            version: 5,
            opened_ms: 0,
            message: String::new(),
            owner: Some(other.name().to_string()),
            lease_until_ms: Some(100),
        };
        // Not the reader's own, so the reader's lanes do not matter.
        assert!(rec.running(reader.name(), false, 50));
        assert!(!rec.orphaned(reader.name(), 5, false, 50));
        drop(other);
        assert!(
            rec.orphaned(reader.name(), 5, false, 50),
            "its engine is gone"
        );
    }
}
