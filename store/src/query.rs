//! Read-only queries: what an inspector (the console, `qflow run`, tests)
//! reads. None of them writes.

use serde_json::Value;

use crate::sql::{args, Conn, Dialect, Row, Value as Arg, ValueRef};
use crate::write::matches_pause;
use crate::write::{canary_timers, held_timers};
use crate::{InstanceFacts, Sqlite, Store, StoreError};
use qflow_instance::history::Line;
use qflow_instance::{IncidentKind, OutboxRow, OutboxState, Purpose, Status, TimerRow};

#[derive(Debug, Clone, PartialEq)]
pub struct InstanceRow {
    pub id: String,
    pub deployment_id: i64,
    pub process_id: String,
    pub hash: String,
    pub status: Status,
    pub snapshot: Vec<u8>,
    pub version: i64,
    pub started_ms: i64,
    pub updated_ms: i64,
    pub claim_owner: Option<String>,
    pub claim_expires_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerInfo {
    pub id: i64,
    pub node: String,
    pub purpose: Purpose,
    pub due_ms: i64,
    pub attempt: Option<u32>,
    pub armed: bool,
    pub armed_seq: i64,
    pub resolved_seq: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HistoryRow {
    pub seq: i64,
    pub transition_seq: i64,
    pub at_ms: i64,
    pub kind: String,
    pub node: Option<String>,
    pub attempt: Option<u32>,
    pub code: Option<String>,
    pub timer_id: Option<i64>,
    pub event_index: Option<i64>,
    /// The decision line (canonical JSON text), `at_s` included.
    pub detail: String,
}

impl HistoryRow {
    pub fn detail_json(&self) -> Value {
        serde_json::from_str(&self.detail).unwrap_or(Value::Null)
    }

    /// The typed line; `None` for a row this version cannot read (damaged,
    /// or of a kind a newer version wrote).
    pub fn line(&self) -> Option<Line> {
        Line::parse(&self.detail)
    }
}

/// One outbox row with its delivery state, as an inspector shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    pub node: String,
    pub channel: String,
    pub attempt: u32,
    pub state: OutboxState,
    pub deliveries: u32,
    pub idempotency_key: String,
    /// Why an `abandoned` row will never be delivered, or a `poisoned`
    /// one was poisoned (a counterpart's refusal keeps its status and a
    /// summary of its body).
    pub reason: Option<String>,
}

/// One live correlation: the key a counterpart's response names, and the
/// call node it routes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorrelationRow {
    pub key: String,
    pub node: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncidentRow {
    pub id: i64,
    pub node: String,
    pub kind: IncidentKind,
    pub message: String,
    pub opened_ms: i64,
    pub closed_ms: Option<i64>,
}

impl IncidentRow {
    /// The message without what the incident's kind and node already say,
    /// for a face that prints them beside it: a FAILED incident's stored
    /// message begins "instance failed at NODE: ", so "#1 failed at charge:
    /// instance failed at charge: …" read twice. The stored message is kept
    /// whole (databases written by earlier versions hold the same words).
    pub fn detail(&self) -> &str {
        self.message
            .strip_prefix("instance failed at ")
            .and_then(|rest| rest.strip_prefix(self.node.as_str()))
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(&self.message)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionRow {
    pub seq: i64,
    pub version: i64,
    pub at_ms: i64,
    pub status: String,
    pub snapshot: Vec<u8>,
}

/// Which instances one page of a list holds: the filters, then `offset`
/// rows skipped and at most `limit` taken, oldest first. What `qflow
/// instances` asks, so a database of 50,000 instances is listed a page at
/// a time by one query instead of read whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceQuery {
    pub status: Option<Status>,
    pub deployment: Option<i64>,
    /// Only instances parked for a retry of this failure class (an armed
    /// retry park recording it: what `qflow pause --class` would hold).
    pub class: Option<String>,
    /// Only instances parked for a retry of this dependency (a registered
    /// task's name or a channel: what `qflow pause --dependency` would hold).
    pub dependency: Option<String>,
    pub offset: u64,
    /// At most this many rows; `None` for every one.
    pub limit: Option<u64>,
}

/// One page of instances, and how many match the filters in all.
#[derive(Debug, Clone, PartialEq)]
pub struct InstancePage {
    pub rows: Vec<InstanceRow>,
    pub total: u64,
}

/// The columns of an [`InstanceRow`], read by [`instance_row`].
macro_rules! instance_cols {
    () => {
        "i.id, i.deployment_id, d.process_id, d.hash, i.status, i.snapshot, i.version, \
         i.started_ms, i.updated_ms, i.claim_owner, i.claim_expires_ms"
    };
}
pub(crate) use instance_cols;

pub(crate) fn instance_row(r: &dyn Row) -> Result<InstanceRow, StoreError> {
    let status: String = r.get(4)?;
    Ok(InstanceRow {
        id: r.get(0)?,
        deployment_id: r.get(1)?,
        process_id: r.get(2)?,
        hash: r.get(3)?,
        status: Status::parse(&status).unwrap_or(Status::Waiting),
        snapshot: raw_bytes(r.value(5)?),
        version: r.get(6)?,
        started_ms: r.get(7)?,
        updated_ms: r.get(8)?,
        claim_owner: r.get(9)?,
        claim_expires_ms: r.get(10)?,
    })
}

/// A snapshot cell as stored, whatever type a hand or a damaged write gave
/// it (SQLite keeps any): its bytes are kept for the decision to judge (a
/// cell that is not a snapshot fails its instance, never the read).
pub(crate) fn raw_bytes(v: ValueRef<'_>) -> Vec<u8> {
    match v {
        ValueRef::Blob(b) => b.to_vec(),
        ValueRef::Text(t) => t.as_bytes().to_vec(),
        ValueRef::Null => Vec::new(),
        ValueRef::Int(i) => i.to_string().into_bytes(),
        ValueRef::Real(f) => f.to_string().into_bytes(),
    }
}

pub(crate) fn timer_row(r: &dyn Row, from: usize) -> Result<TimerRow, StoreError> {
    let p: String = r.get(from + 2)?;
    Ok(TimerRow {
        id: r.get(from)?,
        node: r.get(from + 1)?,
        purpose: crate::purpose_from_sql(&p),
        due_ms: r.get(from + 3)?,
        attempt: r.get(from + 4)?,
    })
}

pub(crate) fn instance(db: &mut dyn Conn, id: &str) -> Result<Option<InstanceRow>, StoreError> {
    db.opt(
        concat!(
            "SELECT ",
            instance_cols!(),
            " FROM instances i JOIN deployments d ON d.id = i.deployment_id WHERE i.id = $1"
        ),
        args![id],
        instance_row,
    )
}

pub(crate) fn armed_timers(db: &mut dyn Conn, instance: &str) -> Result<Vec<TimerRow>, StoreError> {
    db.rows(
        "SELECT id, node, purpose, due_ms, attempt FROM timers WHERE instance_id = $1 AND state = 'armed' ORDER BY due_ms, id",
        args![instance],
        |r| timer_row(r, 0),
    )
}

/// The idempotency-key ledger of an instance: for each call node, the
/// highest key number it has sent (see the schema's `request_keys`).
pub(crate) fn keys_sent(
    db: &mut dyn Conn,
    instance: &str,
) -> Result<std::collections::BTreeMap<String, u32>, StoreError> {
    Ok(db
        .rows(
            "SELECT node, last FROM request_keys WHERE instance_id = $1",
            args![instance],
            |r| Ok((r.get::<String>(0)?, r.get::<u32>(1)?)),
        )?
        .into_iter()
        .collect())
}

impl Store {
    /// The durable facts of one instance: deployment, status, version,
    /// start, snapshot, armed timers, the key ledger.
    pub fn facts(&self, instance_id: &str) -> Result<InstanceFacts, StoreError> {
        self.read(|db| {
            let row = instance(db, instance_id)?
                .ok_or_else(|| StoreError::NoInstance(instance_id.into()))?;
            let timers = armed_timers(db, instance_id)?;
            let held = held_timers(db, instance_id)?;
            let canaries = canary_timers(db, instance_id)?;
            let keys = keys_sent(db, instance_id)?;
            Ok(InstanceFacts::of_row(&row, timers, held, canaries, keys))
        })
    }

    /// Every instance, oldest first.
    pub fn instances(&self) -> Result<Vec<InstanceRow>, StoreError> {
        self.read(|db| {
            db.rows(
                db.dialect().pick(
                    concat!(
                        "SELECT ",
                        instance_cols!(),
                        " FROM instances i JOIN deployments d ON d.id = i.deployment_id ORDER BY i.rowid"
                    ),
                    concat!(
                        "SELECT ",
                        instance_cols!(),
                        " FROM instances i JOIN deployments d ON d.id = i.deployment_id ORDER BY i.seq"
                    ),
                ),
                args![],
                instance_row,
            )
        })
    }

    /// One instance, if it exists.
    pub fn instance(&self, id: &str) -> Result<Option<InstanceRow>, StoreError> {
        self.read(|db| instance(db, id))
    }

    /// Every timer of an instance, armed and resolved, in arming order.
    pub fn timers(&self, instance: &str) -> Result<Vec<TimerInfo>, StoreError> {
        self.read(|db| {
            db.rows(
                "SELECT id, node, purpose, due_ms, attempt, state, armed_seq, resolved_seq FROM timers WHERE instance_id = $1 ORDER BY id",
                args![instance],
                |r| {
                    let p: String = r.get(2)?;
                    let s: String = r.get(5)?;
                    Ok(TimerInfo {
                        id: r.get(0)?,
                        node: r.get(1)?,
                        purpose: crate::purpose_from_sql(&p),
                        due_ms: r.get(3)?,
                        attempt: r.get(4)?,
                        armed: s == "armed",
                        armed_seq: r.get(6)?,
                        resolved_seq: r.get(7)?,
                    })
                },
            )
        })
    }

    /// Pending outbox rows of an instance with their next delivery time,
    /// earliest first (what the dispatcher delivers).
    pub fn pending_requests(&self, instance: &str) -> Result<Vec<(OutboxRow, i64)>, StoreError> {
        if let Some(kept) = self.group.pending_requests(instance) {
            return Ok(kept);
        }
        self.read(|db| {
            db.rows(
                "SELECT id, node, channel, attempt, deliveries, idempotency_key, next_ms FROM outbox
                 WHERE instance_id = $1 AND state = 'pending' ORDER BY next_ms, id",
                args![instance],
                |r| {
                    Ok((
                        OutboxRow {
                            id: r.get(0)?,
                            node: r.get(1)?,
                            channel: r.get(2)?,
                            attempt: r.get(3)?,
                            deliveries: r.get(4)?,
                            idempotency_key: r.get(5)?,
                        },
                        r.get(6)?,
                    ))
                },
            )
        })
    }

    /// The body an outbox row was emitted with (what the relay sends), if
    /// the row exists and its payload is JSON.
    pub fn request_payload(&self, id: i64) -> Result<Option<Value>, StoreError> {
        let text: Option<String> = self.read(|db| {
            db.opt("SELECT payload FROM outbox WHERE id = $1", args![id], |r| {
                r.get(0)
            })
        })?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// Whether the outbox holds a poisoned request for exactly this instance
    /// and node (what a poison wake re-reads under the claim).
    pub fn has_poisoned_request(&self, instance: &str, node: &str) -> Result<bool, StoreError> {
        let n: i64 = self.read(|db| {
            db.one(
                "SELECT COUNT(*) FROM outbox WHERE instance_id = $1 AND node = $2 AND state = 'poisoned'",
                args![instance, node],
                |r| r.get(0),
            )
        })?;
        Ok(n > 0)
    }

    /// The instance and node a correlation key names (`instance/node`), if live.
    pub fn correlation(&self, key: &str) -> Result<Option<(String, String)>, StoreError> {
        self.read(|db| {
            db.opt(
                "SELECT instance_id, node FROM correlations WHERE key = $1",
                args![key],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    }

    /// The earliest armed timer of an instance that no pause holds.
    pub fn next_timer(&self, instance: &str) -> Result<Option<TimerRow>, StoreError> {
        self.read(|db| {
            // A park a pause holds is not due for anyone: a poller waiting
            // for it would wait forever.
            let held = held_timers(db, instance)?;
            Ok(armed_timers(db, instance)?
                .into_iter()
                .find(|t| !held.contains(&t.id)))
        })
    }

    /// The decisions of an instance, in order.
    pub fn history(&self, instance: &str) -> Result<Vec<HistoryRow>, StoreError> {
        self.read(|db| {
            db.rows(
                "SELECT seq, transition_seq, at_ms, kind, node, attempt, code, timer_id, event_index, detail
                 FROM history WHERE instance_id = $1 ORDER BY seq",
                args![instance],
                |r| {
                    Ok(HistoryRow {
                        seq: r.get(0)?,
                        transition_seq: r.get(1)?,
                        at_ms: r.get(2)?,
                        kind: r.get(3)?,
                        node: r.get(4)?,
                        attempt: r.get(5)?,
                        code: r.get(6)?,
                        timer_id: r.get(7)?,
                        event_index: r.get(8)?,
                        detail: r.get(9)?,
                    })
                },
            )
        })
    }

    /// Every snapshot the instance persisted, in order (the golden corpus).
    pub fn transitions(&self, instance: &str) -> Result<Vec<TransitionRow>, StoreError> {
        self.read(|db| {
            db.rows(
                "SELECT seq, version, at_ms, status, snapshot FROM transitions WHERE instance_id = $1 ORDER BY seq",
                args![instance],
                |r| {
                    Ok(TransitionRow {
                        seq: r.get(0)?,
                        version: r.get(1)?,
                        at_ms: r.get(2)?,
                        status: r.get(3)?,
                        snapshot: r.get(4)?,
                    })
                },
            )
        })
    }

    /// The incidents of an instance, open and closed, oldest first.
    pub fn incidents(&self, instance: &str) -> Result<Vec<IncidentRow>, StoreError> {
        self.read(|db| {
            db.rows(
                "SELECT id, node, kind, message, opened_ms, closed_ms FROM incidents WHERE instance_id = $1 ORDER BY id",
                args![instance],
                |r| {
                    let kind: String = r.get(2)?;
                    Ok(IncidentRow {
                        id: r.get(0)?,
                        node: r.get(1)?,
                        // Every kind a store of this schema holds is one
                        // of these; another is a damaged row, and reads so.
                        kind: IncidentKind::parse(&kind).unwrap_or(IncidentKind::Damaged),
                        message: r.get(3)?,
                        opened_ms: r.get(4)?,
                        closed_ms: r.get(5)?,
                    })
                },
            )
        })
    }

    /// How many times a handler has run for an instance: which scenario entry
    /// its next run consumes.
    pub fn handler_runs(&self, instance: &str, task: &str) -> Result<usize, StoreError> {
        if let Some(kept) = self.group.handler_runs(instance, task) {
            return Ok(kept);
        }
        self.read(|db| {
            db.one(
                "SELECT COUNT(*) FROM history WHERE instance_id = $1 AND kind = 'attempt' AND task = $2",
                args![instance, task],
                |r| r.get(0),
            )
        })
    }

    /// Scenario event indexes already delivered to an instance.
    pub fn delivered_events(&self, instance: &str) -> Result<Vec<usize>, StoreError> {
        self.read(|db| {
            db.rows(
                "SELECT DISTINCT event_index FROM history WHERE instance_id = $1 AND event_index IS NOT NULL ORDER BY event_index",
                args![instance],
                |r| r.get(0),
            )
        })
    }

    /// The outbox rows of an instance, oldest first.
    ///
    /// A `state` the schema never writes reads as pending (the decode path
    /// is lenient, as a timer's purpose is): a face still shows the row.
    pub fn outbox(&self, instance: &str) -> Result<Vec<OutboxEntry>, StoreError> {
        self.read(|db| {
            db.rows(
                "SELECT node, channel, attempt, state, deliveries, idempotency_key, reason FROM outbox WHERE instance_id = $1 ORDER BY id",
                args![instance],
                |r| {
                    Ok(OutboxEntry {
                        node: r.get(0)?,
                        channel: r.get(1)?,
                        attempt: r.get(2)?,
                        state: outbox_state(&r.get::<String>(3)?),
                        deliveries: r.get(4)?,
                        idempotency_key: r.get(5)?,
                        reason: r.get(6)?,
                    })
                },
            )
        })
    }

    /// The live correlations of an instance.
    pub fn correlations(&self, instance: &str) -> Result<Vec<CorrelationRow>, StoreError> {
        self.read(|db| {
            db.rows(
                "SELECT key, node FROM correlations WHERE instance_id = $1 ORDER BY created_ms, key",
                args![instance],
                |r| {
                    Ok(CorrelationRow {
                        key: r.get(0)?,
                        node: r.get(1)?,
                    })
                },
            )
        })
    }

    /// Armed timers due at `now_ms` across all instances, earliest first: what
    /// a poller serving many instances re-drives (each under its instance's
    /// claim, so two pollers never act on the same timer twice; on
    /// PostgreSQL a timer another replica's transaction is writing is
    /// skipped).
    pub fn due_timers(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<(String, TimerRow)>, StoreError> {
        self.still_there()?;
        self.read(|db| {
            db.rows(
                "SELECT instance_id, id, node, purpose, due_ms, attempt FROM timers
                 WHERE state = 'armed' AND due_ms <= $1 ORDER BY due_ms, id LIMIT $2
                 FOR UPDATE SKIP LOCKED",
                args![now_ms, limit],
                |r| Ok((r.get(0)?, timer_row(r, 1)?)),
            )
        })
    }

    /// One page of the instances that pass `q`'s filters, oldest first, and
    /// how many pass in all. Only the conditions given are written into the
    /// statement, so a status or deployment filter reads its index and the
    /// count of everything reads the smallest index, never the rows.
    pub fn instance_page(&self, q: &InstanceQuery) -> Result<InstancePage, StoreError> {
        self.read(|db| {
            let mut conditions: Vec<String> = Vec::new();
            let mut values: Vec<Arg<'_>> = Vec::new();
            if let Some(s) = q.status {
                values.push(Arg::Text(s.as_str()));
                conditions.push(format!("i.status = ${}", values.len()));
            }
            if let Some(d) = q.deployment {
                values.push(Arg::Int(d));
                conditions.push(format!("i.deployment_id = ${}", values.len()));
            }
            for (column, v) in [("class", &q.class), ("dependency", &q.dependency)] {
                if let Some(v) = v {
                    values.push(Arg::Text(v));
                    conditions.push(format!(
                        "EXISTS (SELECT 1 FROM timers t WHERE t.instance_id = i.id AND t.state = 'armed' AND t.purpose = 'retry' AND t.{column} = ${})",
                        values.len()
                    ));
                }
            }
            let where_ = if conditions.is_empty() {
                String::new()
            } else {
                format!(" WHERE {}", conditions.join(" AND "))
            };
            let mut total = 0;
            db.each_built(
                &format!("SELECT COUNT(*) FROM instances i{where_}"),
                &values,
                &mut |r| {
                    total = r.get(0)?;
                    Ok(())
                },
            )?;
            // No limit: SQLite's is a negative one, PostgreSQL's a null.
            let limit = match (q.limit, db.dialect()) {
                (Some(l), _) => Arg::Int(l.min(i64::MAX as u64) as i64),
                (None, Dialect::Sqlite) => Arg::Int(-1),
                (None, Dialect::Postgres) => Arg::Null,
            };
            values.push(limit);
            values.push(Arg::Int(q.offset.min(i64::MAX as u64) as i64));
            let n = values.len();
            let sql = format!(
                "SELECT {} FROM instances i JOIN deployments d ON d.id = i.deployment_id{where_} ORDER BY {} LIMIT ${} OFFSET ${n}",
                instance_cols!(),
                db.dialect().pick("i.rowid", "i.seq"),
                n - 1,
            );
            let mut rows = Vec::new();
            db.each_built(&sql, &values, &mut |r| {
                rows.push(instance_row(r)?);
                Ok(())
            })?;
            Ok(InstancePage { rows, total })
        })
    }

    /// Up to `limit` unfinished instances with work: those with a ready
    /// token first (oldest first), else those with the earliest armed timers.
    /// What a replica picks from. A quarantined instance is never picked,
    /// nor a retry park of a paused class or dependency. On PostgreSQL an
    /// instance or timer another replica's transaction is writing right now
    /// is not offered (`SKIP LOCKED`).
    pub fn candidates(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        self.still_there()?;
        self.read(|db| {
            let ready: Vec<String> = db.rows(
                db.dialect().pick(
                    "SELECT id FROM instances WHERE status = 'running' AND quarantined_ms IS NULL ORDER BY rowid LIMIT $1",
                    "SELECT id FROM instances WHERE status = 'running' AND quarantined_ms IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED",
                ),
                args![limit],
                |r| r.get(0),
            )?;
            if !ready.is_empty() {
                return Ok(ready);
            }
            timer_candidates_in(db, limit)
        })
    }

    /// The instances with the earliest armed timers (no retry park a pause
    /// holds), at most `limit`: [`Store::candidates`] without the ready
    /// tokens, for a driver whose ready instances are all held (their
    /// first attempts wait for a paused dependency).
    pub fn timer_candidates(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        self.still_there()?;
        self.read(|db| timer_candidates_in(db, limit))
    }

    /// What a serving loop looks at now (wall clock `now_ms`): instances
    /// with a due timer (not held by a pause), then with a due delivery,
    /// then with a ready token, at most `limit` of each, once each; and
    /// when the next timer or delivery falls due after `now_ms`. Each
    /// instance comes with its version as read, so a loop that found it
    /// with nothing to do at that version need not read it again.
    ///
    /// With `owner` (a serving loop's name), what another live owner holds
    /// claimed is left out: replicas reading the same due list at once
    /// would otherwise all pick the first `limit`, and all but one would
    /// find them claimed and idle until that one is done with them. On
    /// PostgreSQL, where replicas share the work, up to four times `limit`
    /// rows are read so that as many free ones remain; SQLite's writers
    /// take turns on one file, so reading more would only cost.
    pub fn due_instances(
        &self,
        owner: Option<&str>,
        now_ms: i64,
        limit: usize,
    ) -> Result<DueInstances, StoreError> {
        // What a serving loop polls: a deleted database file stops it here.
        self.still_there()?;
        let wall_now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let held_elsewhere = |claim: &Option<(String, i64)>| match (owner, claim) {
            (Some(me), Some((holder, until))) => {
                holder != me && *until > wall_now_ms && !crate::owner_is_dead(holder)
            }
            _ => false,
        };
        self.read(|db| {
            let mut ids: Vec<(String, i64)> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            let d = db.dialect();
            let read = match (owner, d) {
                (Some(_), crate::sql::Dialect::Postgres) => limit.saturating_mul(4),
                _ => limit,
            };
            for sql in [
                d.pick(
                    concat!(
                        "SELECT t.instance_id, i.version, i.claim_owner, i.claim_expires_ms FROM timers t CROSS JOIN instances i ON i.id = t.instance_id
                         WHERE t.state = 'armed' AND t.due_ms <= $1 AND i.status IN ('running','waiting') AND i.quarantined_ms IS NULL
                           AND NOT (t.purpose = 'retry' AND EXISTS (SELECT 1 FROM pauses p WHERE ",
                        matches_pause!(),
                        ")) ORDER BY t.due_ms, t.id LIMIT $2"
                    ),
                    concat!(
                        "SELECT t.instance_id, i.version, i.claim_owner, i.claim_expires_ms FROM timers t JOIN instances i ON i.id = t.instance_id
                         WHERE t.state = 'armed' AND t.due_ms <= $1 AND i.status IN ('running','waiting') AND i.quarantined_ms IS NULL
                           AND NOT (t.purpose = 'retry' AND EXISTS (SELECT 1 FROM pauses p WHERE ",
                        matches_pause!(),
                        ")) ORDER BY t.due_ms, t.id LIMIT $2"
                    ),
                ),
                d.pick(
                    "SELECT o.instance_id, i.version, i.claim_owner, i.claim_expires_ms FROM outbox o CROSS JOIN instances i ON i.id = o.instance_id
                     WHERE o.state = 'pending' AND o.next_ms <= $1 AND i.status IN ('running','waiting') AND i.quarantined_ms IS NULL
                     ORDER BY o.next_ms, o.id LIMIT $2",
                    "SELECT o.instance_id, i.version, i.claim_owner, i.claim_expires_ms FROM outbox o JOIN instances i ON i.id = o.instance_id
                     WHERE o.state = 'pending' AND o.next_ms <= $1 AND i.status IN ('running','waiting') AND i.quarantined_ms IS NULL
                     ORDER BY o.next_ms, o.id LIMIT $2",
                ),
                // ($1 is named so PostgreSQL can type every parameter.)
                d.pick(
                    "SELECT id, version, claim_owner, claim_expires_ms FROM instances WHERE status = 'running' AND quarantined_ms IS NULL ORDER BY rowid LIMIT $2",
                    "SELECT id, version, claim_owner, claim_expires_ms FROM instances WHERE status = 'running' AND quarantined_ms IS NULL AND $1::BIGINT IS NOT NULL ORDER BY seq LIMIT $2",
                ),
            ] {
                let rows = db.rows(sql, args![now_ms, read], |r| {
                    let claim = match (r.get::<Option<String>>(2)?, r.get::<Option<i64>>(3)?) {
                        (Some(holder), Some(until)) => Some((holder, until)),
                        _ => None,
                    };
                    Ok((r.get::<String>(0)?, r.get::<i64>(1)?, claim))
                })?;
                let mut kept = 0;
                for (id, version, claim) in rows {
                    if kept == limit {
                        break;
                    }
                    if held_elsewhere(&claim) {
                        continue;
                    }
                    if seen.insert(id.clone()) {
                        ids.push((id, version));
                        kept += 1;
                    }
                }
            }
            let next: Option<i64> = db.one(
                d.pick(
                    "SELECT MIN(d) FROM (SELECT MIN(due_ms) AS d FROM timers WHERE state = 'armed' AND due_ms > $1
                     UNION ALL SELECT MIN(next_ms) FROM outbox WHERE state = 'pending' AND next_ms > $1)",
                    "SELECT LEAST((SELECT MIN(due_ms) FROM timers WHERE state = 'armed' AND due_ms > $1),
                                  (SELECT MIN(next_ms) FROM outbox WHERE state = 'pending' AND next_ms > $1))",
                ),
                args![now_ms],
                |r| r.get(0),
            )?;
            Ok((ids, next))
        })
    }

    /// The time of the instance's last decision (its start if none).
    pub fn last_decision_ms(&self, instance: &str) -> Result<Option<i64>, StoreError> {
        if let Some(kept) = self.group.last_decision_ms(instance) {
            return Ok(kept);
        }
        self.read(|db| {
            db.opt(
                "SELECT at_ms FROM transitions WHERE instance_id = $1 ORDER BY seq DESC LIMIT 1",
                args![instance],
                |r| r.get(0),
            )
        })
    }

    /// The deployed source of a deployment.
    pub fn deployment_source(&self, deployment_id: i64) -> Result<Option<String>, StoreError> {
        self.read(|db| {
            db.opt(
                "SELECT source FROM deployments WHERE id = $1",
                args![deployment_id],
                |r| r.get(0),
            )
        })
    }
}

impl Sqlite {}

/// What [`Store::due_instances`] finds: each instance with its version,
/// and when the next timer or delivery falls due.
pub type DueInstances = (Vec<(String, i64)>, Option<i64>);

/// The instances with the earliest armed timers no pause holds (the
/// second half of [`Store::candidates`]).
fn timer_candidates_in(db: &mut dyn Conn, limit: usize) -> Result<Vec<String>, StoreError> {
    // SQLite's CROSS JOIN keeps the armed timers, in due order, as
    // the outer loop (an index walk that stops at the limit); the
    // planner would otherwise be free to start from every
    // unfinished instance. PostgreSQL locks (and skips) timers.
    db.rows(
        db.dialect().pick(
            concat!(
                "SELECT t.instance_id FROM timers t CROSS JOIN instances i ON i.id = t.instance_id
                 WHERE t.state = 'armed' AND i.status IN ('running','waiting') AND i.quarantined_ms IS NULL
                   AND NOT (t.purpose = 'retry' AND EXISTS (SELECT 1 FROM pauses p WHERE ",
                matches_pause!(),
                ")) ORDER BY t.due_ms, t.id LIMIT $1"
            ),
            concat!(
                "SELECT t.instance_id FROM timers t JOIN instances i ON i.id = t.instance_id
                 WHERE t.state = 'armed' AND i.status IN ('running','waiting') AND i.quarantined_ms IS NULL
                   AND NOT (t.purpose = 'retry' AND EXISTS (SELECT 1 FROM pauses p WHERE ",
                matches_pause!(),
                ")) ORDER BY t.due_ms, t.id LIMIT $1 FOR UPDATE OF t SKIP LOCKED"
            ),
        ),
        args![limit],
        |r| r.get(0),
    )
}

/// An outbox row's state as stored ([`Store::outbox`]).
fn outbox_state(s: &str) -> OutboxState {
    OutboxState::parse(s).unwrap_or(OutboxState::Pending)
}

#[cfg(test)]
mod incident_tests {
    use super::{IncidentKind, IncidentRow};

    fn row(node: &str, message: &str) -> IncidentRow {
        IncidentRow {
            id: 1,
            node: node.into(),
            kind: IncidentKind::Failed,
            message: message.into(),
            opened_ms: 0,
            closed_ms: None,
        }
    }

    #[test]
    fn the_detail_drops_only_what_kind_and_node_already_say() {
        let failed = row(
            "charge",
            "instance failed at charge: PROVIDER_DOWN (exhausted)",
        );
        assert_eq!(failed.detail(), "PROVIDER_DOWN (exhausted)");
        // Another node's words, or another kind's message, stay whole.
        let other = row(
            "capture",
            "instance failed at charge: PROVIDER_DOWN (exhausted)",
        );
        assert_eq!(other.detail(), other.message);
        let poisoned = row("bank", "request k to bank poisoned after 3 deliveries: 500");
        assert_eq!(poisoned.detail(), poisoned.message);
    }
}
