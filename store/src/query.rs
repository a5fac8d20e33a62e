//! Read-only queries: what an inspector (the console, `qflow run`, tests)
//! reads. None of them writes.

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;

use super::{Sqlite, StoreError};
use qflow_instance::history::Line;
use qflow_instance::{OutboxRow, Purpose, Status, TimerRow};

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
    /// `pending`, `delivered`, `poisoned` or `abandoned`.
    pub state: String,
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
    pub kind: String,
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

const INSTANCE_COLS: &str =
    "i.id, i.deployment_id, d.process_id, d.hash, i.status, i.snapshot, i.version, \
     i.started_ms, i.updated_ms, i.claim_owner, i.claim_expires_ms";

fn instance_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<InstanceRow> {
    let status: String = r.get(4)?;
    Ok(InstanceRow {
        id: r.get(0)?,
        deployment_id: r.get(1)?,
        process_id: r.get(2)?,
        hash: r.get(3)?,
        status: Status::parse(&status).unwrap_or(Status::Waiting),
        snapshot: raw_bytes(r.get_ref(5)?),
        version: r.get(6)?,
        started_ms: r.get(7)?,
        updated_ms: r.get(8)?,
        claim_owner: r.get(9)?,
        claim_expires_ms: r.get(10)?,
    })
}

/// A snapshot cell as stored, whatever SQLite type a hand or a damaged
/// write gave it: its bytes are kept for the decision to judge (a cell that
/// is not a snapshot fails its instance, never the read).
fn raw_bytes(v: rusqlite::types::ValueRef<'_>) -> Vec<u8> {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Blob(b) | ValueRef::Text(b) => b.to_vec(),
        ValueRef::Null => Vec::new(),
        ValueRef::Integer(i) => i.to_string().into_bytes(),
        ValueRef::Real(f) => f.to_string().into_bytes(),
    }
}

pub(crate) fn instance(conn: &Connection, id: &str) -> Result<Option<InstanceRow>, StoreError> {
    Ok(conn
        .prepare_cached(&format!("SELECT {INSTANCE_COLS} FROM instances i JOIN deployments d ON d.id = i.deployment_id WHERE i.id = ?1"))?.query_row(params![id],
            instance_row,
        )
        .optional()?)
}

pub(crate) fn armed_timers(conn: &Connection, instance: &str) -> Result<Vec<TimerRow>, StoreError> {
    let mut st = conn.prepare_cached(
        "SELECT id, node, purpose, due_ms, attempt FROM timers WHERE instance_id = ?1 AND state = 'armed' ORDER BY due_ms, id",
    )?;
    let rows = st.query_map(params![instance], |r| {
        let p: String = r.get(2)?;
        Ok(TimerRow {
            id: r.get(0)?,
            node: r.get(1)?,
            purpose: crate::purpose_from_sql(&p),
            due_ms: r.get(3)?,
            attempt: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The idempotency-key ledger of an instance: for each call node, the
/// highest key number it has sent (see the schema's `request_keys`).
pub(crate) fn keys_sent(
    conn: &Connection,
    instance: &str,
) -> Result<std::collections::BTreeMap<String, u32>, StoreError> {
    let mut st =
        conn.prepare_cached("SELECT node, last FROM request_keys WHERE instance_id = ?1")?;
    let rows = st.query_map(params![instance], |r| {
        let n: i64 = r.get(1)?;
        Ok((
            r.get::<_, String>(0)?,
            n.clamp(0, i64::from(u32::MAX)) as u32,
        ))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

impl Sqlite {
    /// Every instance, oldest first.
    pub fn instances(&self) -> Result<Vec<InstanceRow>, StoreError> {
        let mut st = self.conn().prepare_cached(&format!(
            "SELECT {INSTANCE_COLS} FROM instances i JOIN deployments d ON d.id = i.deployment_id ORDER BY i.rowid"
        ))?;
        let rows = st.query_map([], instance_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn instance(&self, id: &str) -> Result<Option<InstanceRow>, StoreError> {
        instance(self.conn(), id)
    }

    /// One page of the instances that pass `q`'s filters, oldest first, and
    /// how many pass in all. Only the conditions given are written into the
    /// statement, so a status or deployment filter reads its index and the
    /// count of everything reads the smallest index, never the rows.
    pub fn instance_page(&self, q: &InstanceQuery) -> Result<InstancePage, StoreError> {
        use rusqlite::types::Value as V;
        let mut conditions: Vec<&str> = Vec::new();
        let mut args: Vec<V> = Vec::new();
        if let Some(s) = q.status {
            conditions.push("i.status = ?");
            args.push(V::Text(s.as_str().into()));
        }
        if let Some(d) = q.deployment {
            conditions.push("i.deployment_id = ?");
            args.push(V::Integer(d));
        }
        if let Some(c) = &q.class {
            conditions.push("EXISTS (SELECT 1 FROM timers t WHERE t.instance_id = i.id AND t.state = 'armed' AND t.purpose = 'retry' AND t.class = ?)");
            args.push(V::Text(c.clone()));
        }
        if let Some(d) = &q.dependency {
            conditions.push("EXISTS (SELECT 1 FROM timers t WHERE t.instance_id = i.id AND t.state = 'armed' AND t.purpose = 'retry' AND t.dependency = ?)");
            args.push(V::Text(d.clone()));
        }
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conditions.join(" AND "))
        };
        let total: i64 = self
            .conn()
            .prepare_cached(&format!("SELECT COUNT(*) FROM instances i{filter}"))?
            .query_row(rusqlite::params_from_iter(args.iter()), |r| r.get(0))?;
        // SQLite reads a negative limit as none.
        args.push(V::Integer(
            q.limit.map_or(-1, |l| l.min(i64::MAX as u64) as i64),
        ));
        args.push(V::Integer(q.offset.min(i64::MAX as u64) as i64));
        let mut st = self.conn().prepare_cached(&format!(
            "SELECT {INSTANCE_COLS} FROM instances i JOIN deployments d ON d.id = i.deployment_id{filter} ORDER BY i.rowid LIMIT ? OFFSET ?"
        ))?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args.iter()), instance_row)?
            .collect::<Result<_, _>>()?;
        Ok(InstancePage {
            rows,
            total: total as u64,
        })
    }

    /// Every timer of an instance, armed and resolved, in arming order.
    pub fn timers(&self, instance: &str) -> Result<Vec<TimerInfo>, StoreError> {
        let mut st = self.conn().prepare_cached(
            "SELECT id, node, purpose, due_ms, attempt, state, armed_seq, resolved_seq FROM timers WHERE instance_id = ?1 ORDER BY id",
        )?;
        let rows = st.query_map(params![instance], |r| {
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
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Armed timers due at `now_ms` across all instances, earliest first: what
    /// a poller serving many instances re-drives (each under its instance's
    /// claim, so two pollers never act on the same timer twice).
    pub fn due_timers(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<(String, TimerRow)>, StoreError> {
        self.still_there()?;
        let mut st = self.conn().prepare_cached(
            "SELECT instance_id, id, node, purpose, due_ms, attempt FROM timers
             WHERE state = 'armed' AND due_ms <= ?1 ORDER BY due_ms, id LIMIT ?2",
        )?;
        let rows = st.query_map(params![now_ms, limit as i64], |r| {
            let p: String = r.get(3)?;
            Ok((
                r.get(0)?,
                TimerRow {
                    id: r.get(1)?,
                    node: r.get(2)?,
                    purpose: crate::purpose_from_sql(&p),
                    due_ms: r.get(4)?,
                    attempt: r.get(5)?,
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Pending outbox rows of an instance with their next delivery time,
    /// earliest first (what the dispatcher delivers).
    pub fn pending_requests(&self, instance: &str) -> Result<Vec<(OutboxRow, i64)>, StoreError> {
        let mut st = self.conn().prepare_cached(
            "SELECT id, node, channel, attempt, deliveries, idempotency_key, next_ms FROM outbox
             WHERE instance_id = ?1 AND state = 'pending' ORDER BY next_ms, id",
        )?;
        let rows = st.query_map(params![instance], |r| {
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
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The body an outbox row was emitted with (what the relay sends), if
    /// the row exists and its payload is JSON.
    pub fn request_payload(&self, id: i64) -> Result<Option<Value>, StoreError> {
        let text: Option<String> = self
            .conn()
            .prepare_cached("SELECT payload FROM outbox WHERE id = ?1")?
            .query_row(params![id], |r| r.get(0))
            .optional()?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// Whether the outbox holds a poisoned request for exactly this instance
    /// and node (what a poison wake re-reads under the claim).
    pub fn has_poisoned_request(&self, instance: &str, node: &str) -> Result<bool, StoreError> {
        let n: i64 = self.conn().prepare_cached("SELECT COUNT(*) FROM outbox WHERE instance_id = ?1 AND node = ?2 AND state = 'poisoned'")?.query_row(params![instance, node],
            |r| r.get(0),
        )?;
        Ok(n > 0)
    }

    /// The instance and node a correlation key names (`instance/node`), if live.
    pub fn correlation(&self, key: &str) -> Result<Option<(String, String)>, StoreError> {
        Ok(self
            .conn()
            .prepare_cached("SELECT instance_id, node FROM correlations WHERE key = ?1")?
            .query_row(params![key], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    /// The earliest armed timer of an instance that no pause holds.
    pub fn next_timer(&self, instance: &str) -> Result<Option<TimerRow>, StoreError> {
        // A park a pause holds is not due for anyone: a poller waiting for
        // it would wait forever.
        let held = crate::write::held_timers(&mut crate::sql::sqlite::Lite(self.conn()), instance)?;
        Ok(armed_timers(self.conn(), instance)?
            .into_iter()
            .find(|t| !held.contains(&t.id)))
    }

    /// The decisions of an instance, in order.
    pub fn history(&self, instance: &str) -> Result<Vec<HistoryRow>, StoreError> {
        let mut st = self.conn().prepare_cached(
            "SELECT seq, transition_seq, at_ms, kind, node, attempt, code, timer_id, event_index, detail
             FROM history WHERE instance_id = ?1 ORDER BY seq",
        )?;
        let rows = st.query_map(params![instance], |r| {
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
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every snapshot the instance persisted, in order (the golden corpus).
    pub fn transitions(&self, instance: &str) -> Result<Vec<TransitionRow>, StoreError> {
        let mut st = self.conn().prepare_cached(
            "SELECT seq, version, at_ms, status, snapshot FROM transitions WHERE instance_id = ?1 ORDER BY seq",
        )?;
        let rows = st.query_map(params![instance], |r| {
            Ok(TransitionRow {
                seq: r.get(0)?,
                version: r.get(1)?,
                at_ms: r.get(2)?,
                status: r.get(3)?,
                snapshot: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn incidents(&self, instance: &str) -> Result<Vec<IncidentRow>, StoreError> {
        let mut st = self.conn().prepare_cached(
            "SELECT id, node, kind, message, opened_ms, closed_ms FROM incidents WHERE instance_id = ?1 ORDER BY id",
        )?;
        let rows = st.query_map(params![instance], |r| {
            Ok(IncidentRow {
                id: r.get(0)?,
                node: r.get(1)?,
                kind: r.get(2)?,
                message: r.get(3)?,
                opened_ms: r.get(4)?,
                closed_ms: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many times a handler has run for an instance: which scenario entry
    /// its next run consumes.
    pub fn handler_runs(&self, instance: &str, task: &str) -> Result<usize, StoreError> {
        let n: i64 = self.conn().prepare_cached("SELECT COUNT(*) FROM history WHERE instance_id = ?1 AND kind = 'attempt' AND task = ?2")?.query_row(params![instance, task],
            |r| r.get(0),
        )?;
        Ok(n as usize)
    }

    /// Scenario event indexes already delivered to an instance.
    pub fn delivered_events(&self, instance: &str) -> Result<Vec<usize>, StoreError> {
        let mut st = self.conn().prepare_cached(
            "SELECT DISTINCT event_index FROM history WHERE instance_id = ?1 AND event_index IS NOT NULL ORDER BY event_index",
        )?;
        let rows = st.query_map(params![instance], |r| r.get::<_, i64>(0))?;
        Ok(rows
            .map(|r| r.map(|i| i as usize))
            .collect::<Result<_, _>>()?)
    }

    /// The outbox rows of an instance, oldest first.
    pub fn outbox(&self, instance: &str) -> Result<Vec<OutboxEntry>, StoreError> {
        self.instance_rows(
            "SELECT node, channel, attempt, state, deliveries, idempotency_key, reason FROM outbox WHERE instance_id = ?1 ORDER BY id",
            instance,
            |r| {
                Ok(OutboxEntry {
                    node: r.get(0)?,
                    channel: r.get(1)?,
                    attempt: r.get(2)?,
                    state: r.get(3)?,
                    deliveries: r.get(4)?,
                    idempotency_key: r.get(5)?,
                    reason: r.get(6)?,
                })
            },
        )
    }

    /// The live correlations of an instance.
    pub fn correlations(&self, instance: &str) -> Result<Vec<CorrelationRow>, StoreError> {
        self.instance_rows(
            "SELECT key, node FROM correlations WHERE instance_id = ?1 ORDER BY created_ms, key",
            instance,
            |r| {
                Ok(CorrelationRow {
                    key: r.get(0)?,
                    node: r.get(1)?,
                })
            },
        )
    }

    /// One read-only query keyed by instance id (`?1`), each row mapped by `map`.
    fn instance_rows<T>(
        &self,
        sql: &str,
        instance: &str,
        map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let mut st = self.conn().prepare_cached(sql)?;
        let rows = st.query_map(params![instance], map)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Up to `limit` unfinished instances with work: those with a ready
    /// token first (oldest first), else those with the earliest armed timers.
    /// What a replica picks from. A quarantined instance is never picked,
    /// nor a retry park of a paused class or dependency.
    pub fn candidates(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        self.still_there()?;
        let mut st = self.conn().prepare_cached(
            "SELECT id FROM instances WHERE status = 'running' AND quarantined_ms IS NULL ORDER BY rowid LIMIT ?1",
        )?;
        let ready: Vec<String> = st
            .query_map(params![limit as i64], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        if !ready.is_empty() {
            return Ok(ready);
        }
        // CROSS JOIN keeps the armed timers, in due order, as the outer
        // loop (an index walk that stops at the limit); the planner would
        // otherwise be free to start from every unfinished instance.
        let mut st = self.conn().prepare_cached(
            "SELECT t.instance_id FROM timers t CROSS JOIN instances i ON i.id = t.instance_id
             WHERE t.state = 'armed' AND i.status IN ('running','waiting') AND i.quarantined_ms IS NULL
               AND NOT (t.purpose = 'retry' AND EXISTS (SELECT 1 FROM pauses p
                   WHERE (p.kind = 'class' AND p.value = t.class) OR (p.kind = 'dependency' AND p.value = t.dependency)))
             ORDER BY t.due_ms, t.id LIMIT ?1",
        )?;
        let due: Vec<String> = st
            .query_map(params![limit as i64], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(due)
    }

    pub fn due_instances(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<(Vec<String>, Option<i64>), StoreError> {
        // What a serving loop polls: a deleted database file stops it here.
        self.still_there()?;
        let c = self.conn();
        let mut ids: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut add = |v: Vec<String>| {
            for id in v {
                if seen.insert(id.clone()) {
                    ids.push(id);
                }
            }
        };
        let lim = limit as i64;
        let timers: Vec<String> = c
            .prepare_cached(
                "SELECT t.instance_id FROM timers t CROSS JOIN instances i ON i.id = t.instance_id
                 WHERE t.state = 'armed' AND t.due_ms <= ?1 AND i.status IN ('running','waiting') AND i.quarantined_ms IS NULL
                   AND NOT (t.purpose = 'retry' AND EXISTS (SELECT 1 FROM pauses p
                       WHERE (p.kind = 'class' AND p.value = t.class) OR (p.kind = 'dependency' AND p.value = t.dependency)))
                 ORDER BY t.due_ms, t.id LIMIT ?2",
            )?
            .query_map(params![now_ms, lim], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        add(timers);
        let rows: Vec<String> = c
            .prepare_cached(
                "SELECT o.instance_id FROM outbox o CROSS JOIN instances i ON i.id = o.instance_id
                 WHERE o.state = 'pending' AND o.next_ms <= ?1 AND i.status IN ('running','waiting') AND i.quarantined_ms IS NULL
                 ORDER BY o.next_ms, o.id LIMIT ?2",
            )?
            .query_map(params![now_ms, lim], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        add(rows);
        let ready: Vec<String> = c
            .prepare_cached(
                "SELECT id FROM instances WHERE status = 'running' AND quarantined_ms IS NULL ORDER BY rowid LIMIT ?1",
            )?
            .query_map(params![lim], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        add(ready);
        let next: Option<i64> = c
            .prepare_cached(
                "SELECT MIN(d) FROM (SELECT MIN(due_ms) AS d FROM timers WHERE state = 'armed' AND due_ms > ?1
                 UNION ALL SELECT MIN(next_ms) FROM outbox WHERE state = 'pending' AND next_ms > ?1)",
            )?
            .query_row(params![now_ms], |r| r.get(0))?;
        Ok((ids, next))
    }

    pub fn begin_reads(&self) -> Result<(), StoreError> {
        Ok(self.conn().execute_batch("BEGIN DEFERRED")?)
    }

    pub fn end_reads(&self) -> Result<(), StoreError> {
        if !self.conn().is_autocommit() {
            self.conn().execute_batch("COMMIT")?;
        }
        Ok(())
    }

    /// The time of the instance's last decision (its start if none).
    pub fn last_decision_ms(&self, instance: &str) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn()
            .prepare_cached(
                "SELECT at_ms FROM transitions WHERE instance_id = ?1 ORDER BY seq DESC LIMIT 1",
            )?
            .query_row(params![instance], |r| r.get(0))
            .optional()?)
    }

    /// The deployed source of an instance (pinned by hash).
    pub fn deployment_source(&self, deployment_id: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn()
            .prepare_cached("SELECT source FROM deployments WHERE id = ?1")?
            .query_row(params![deployment_id], |r| r.get(0))
            .optional()?)
    }
}

#[cfg(test)]
mod incident_tests {
    use super::IncidentRow;

    fn row(node: &str, message: &str) -> IncidentRow {
        IncidentRow {
            id: 1,
            node: node.into(),
            kind: "failed".into(),
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
