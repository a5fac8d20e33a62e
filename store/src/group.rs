//! A serving group's reads in a few statements, not a dozen per instance.
//!
//! A serving loop decides a group of instances at once (claims in one
//! transaction, decisions applied in one more: [`super::batch`]). Between
//! the two, choosing each instance's next event reads its facts (the
//! instance row, its armed, paused and canary timers, its key ledger) and
//! what the driver's choice asks for (its last decision's instant, its
//! pending deliveries, its open in-flight record, how often its task ran,
//! the paused dependencies). Read one instance at a time that is about a
//! dozen statements per instance per group; on PostgreSQL each is a round
//! trip and a parse, and they were most of what a replica sent (about 48
//! statements per decision, measured with `pg_stat_statements`).
//!
//! [`Store::facts_many`] reads the facts of a whole group in five
//! statements, and [`Store::begin_group_reads`] reads what the choice asks
//! for in five more, keeping it for the read phase of the group: the
//! store's own readers ([`Store::last_decision_ms`],
//! [`Store::paused_dependencies`], [`Store::pending_requests`],
//! [`Store::in_flight`], [`Store::handler_runs`]) answer from it for the
//! group's instances until [`Store::end_group_reads`]. The memo lives in
//! the store rather than beside the driver so every reader of those facts
//! (the driver's choice, the serving loop) gets the group's answer without
//! a second source of facts being threaded through them.
//!
//! Why it is safe: the memo covers only the read phase of a group whose
//! instances are all claimed by the caller, so no other process decides
//! them meanwhile; the one write of that phase that touches what is kept
//! (an attempt's in-flight record, opened or closed) forgets that
//! instance's entries, so a later read goes to the database. Pauses are
//! read once for the group; one placed meanwhile is honoured anyway by the
//! transition's own check at apply time (`write::refuse_paused_redrive`),
//! as it was when it landed between two per-instance reads.
//!
//! The lists of ids are bound as one JSON array (`json_each` on SQLite,
//! `json_array_elements_text` on PostgreSQL): one statement text whatever
//! the group's size, so both backends' statement caches keep it.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use qflow_instance::OutboxRow;

use crate::inflight::{stored_columns, InFlight, Stored, KIND};
use crate::query::{instance_row, timer_row};
use crate::sql::{args, Conn};
use crate::write::matches_pause;
use crate::{InstanceFacts, Store, StoreError};

/// `COLUMN IN (the text values of the JSON array bound at $1)`, in each
/// dialect's spelling, with the statement's text before and after it.
macro_rules! in_ids {
    ($dialect:expr, $before:expr, $after:expr) => {
        $dialect.pick(
            concat!($before, " IN (SELECT value FROM json_each($1))", $after),
            concat!(
                $before,
                " IN (SELECT json_array_elements_text(CAST(CAST($1 AS text) AS json)))",
                $after
            ),
        )
    };
}
pub(crate) use in_ids;

/// `SELECT … FROM (the ids of the JSON array at $1) j CROSS JOIN …`: the
/// list drives the loop, so a table is searched by its instance index
/// once per id. (With `IN`, SQLite's planner may prefer an index on
/// `state` and walk every armed timer of the fleet; `CROSS JOIN` keeps
/// its loop order, and PostgreSQL plans it as any join.)
macro_rules! from_ids {
    ($dialect:expr, $select:expr, $rest:expr) => {
        $dialect.pick(
            concat!($select, " FROM json_each($1) j CROSS JOIN ", $rest),
            concat!(
                $select,
                " FROM json_array_elements_text(CAST(CAST($1 AS text) AS json)) AS j(value) CROSS JOIN ",
                $rest
            ),
        )
    };
}

/// The ids of a group as the one JSON array parameter [`in_ids`] reads.
pub(crate) fn id_list(ids: &[String]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())
}

/// What [`Store::begin_group_reads`] kept, by instance.
#[derive(Debug, Default)]
pub(crate) struct GroupReads {
    /// The instances read; a reader of another instance goes to the database.
    ids: BTreeSet<String>,
    last_decision_ms: HashMap<String, i64>,
    paused: BTreeSet<String>,
    pending_requests: HashMap<String, Vec<(OutboxRow, i64)>>,
    /// Open in-flight records by instance and node (newest per node).
    in_flight: HashMap<String, BTreeMap<String, InFlight>>,
    /// Attempts recorded in history, by instance and task.
    handler_runs: HashMap<(String, String), usize>,
    /// Instances whose in-flight records were written during the phase.
    forgotten: BTreeSet<String>,
}

/// The memo a [`Store`] holds (empty outside a group's read phase).
#[derive(Debug, Default)]
pub(crate) struct GroupMemo(RefCell<Option<GroupReads>>);

impl GroupMemo {
    /// `f` of the kept reads when `instance` is one of the group's (and
    /// still known), `None` otherwise.
    fn answer<T>(&self, instance: &str, f: impl FnOnce(&GroupReads) -> T) -> Option<T> {
        let memo = self.0.borrow();
        let g = memo.as_ref()?;
        (g.ids.contains(instance) && !g.forgotten.contains(instance)).then(|| f(g))
    }

    /// The instant of `instance`'s last decision, if the group read it.
    pub(crate) fn last_decision_ms(&self, instance: &str) -> Option<Option<i64>> {
        self.answer(instance, |g| g.last_decision_ms.get(instance).copied())
    }

    /// The dependencies paused, while a group's reads are kept.
    pub(crate) fn paused(&self) -> Option<BTreeSet<String>> {
        self.0.borrow().as_ref().map(|g| g.paused.clone())
    }

    pub(crate) fn pending_requests(&self, instance: &str) -> Option<Vec<(OutboxRow, i64)>> {
        self.answer(instance, |g| {
            g.pending_requests
                .get(instance)
                .cloned()
                .unwrap_or_default()
        })
    }

    pub(crate) fn in_flight(&self, instance: &str, node: &str) -> Option<Option<InFlight>> {
        self.answer(instance, |g| {
            g.in_flight.get(instance).and_then(|m| m.get(node)).cloned()
        })
    }

    pub(crate) fn handler_runs(&self, instance: &str, task: &str) -> Option<usize> {
        self.answer(instance, |g| {
            g.handler_runs
                .get(&(instance.to_string(), task.to_string()))
                .copied()
                .unwrap_or(0)
        })
    }

    /// An in-flight record of `instance` was written: its kept reads are
    /// stale, and its next reads go to the database.
    pub(crate) fn forget(&self, instance: &str) {
        if let Some(g) = self.0.borrow_mut().as_mut() {
            g.forgotten.insert(instance.to_string());
        }
    }
}

impl Store {
    /// The durable facts of every instance of `ids` that exists, by id,
    /// read in five statements whatever their number (what
    /// [`Store::facts`] reads for one).
    pub fn facts_many(&self, ids: &[String]) -> Result<HashMap<String, InstanceFacts>, StoreError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let list = id_list(ids);
        self.read(|db| {
            let d = db.dialect();
            let rows = db.rows(
                in_ids!(
                    d,
                    concat!(
                        "SELECT ",
                        crate::query::instance_cols!(),
                        " FROM instances i JOIN deployments d ON d.id = i.deployment_id WHERE i.id"
                    ),
                    ""
                ),
                args![list],
                instance_row,
            )?;
            let mut timers: HashMap<String, Vec<_>> = HashMap::new();
            for (instance, t) in db.rows(
                from_ids!(
                    d,
                    "SELECT t.id, t.node, t.purpose, t.due_ms, t.attempt, t.instance_id",
                    "timers t WHERE t.instance_id = j.value AND t.state = 'armed' ORDER BY t.due_ms, t.id"
                ),
                args![list],
                |r| Ok((r.get::<String>(5)?, timer_row(r, 0)?)),
            )? {
                timers.entry(instance).or_default().push(t);
            }
            let held = id_sets(
                db,
                in_ids!(
                    d,
                    concat!(
                        "SELECT t.instance_id, t.id FROM timers t WHERE t.state = 'armed' AND t.purpose = 'retry'
                         AND EXISTS (SELECT 1 FROM pauses p WHERE ",
                        matches_pause!(),
                        ") AND t.instance_id"
                    ),
                    ""
                ),
                &list,
            )?;
            let canaries = id_sets(
                db,
                in_ids!(
                    d,
                    "SELECT t.instance_id, t.id FROM timers t JOIN breaker_canaries bc ON bc.timer_id = t.id
                     WHERE t.state = 'armed' AND t.purpose = 'retry' AND t.instance_id",
                    ""
                ),
                &list,
            )?;
            let mut keys: HashMap<String, BTreeMap<String, u32>> = HashMap::new();
            for (instance, node, last) in db.rows(
                in_ids!(d, "SELECT instance_id, node, last FROM request_keys WHERE instance_id", ""),
                args![list],
                |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?, r.get::<u32>(2)?)),
            )? {
                keys.entry(instance).or_default().insert(node, last);
            }
            Ok(rows
                .into_iter()
                .map(|row| {
                    let facts = InstanceFacts::of_row(
                        &row,
                        timers.remove(&row.id).unwrap_or_default(),
                        held.get(&row.id).cloned().unwrap_or_default(),
                        canaries.get(&row.id).cloned().unwrap_or_default(),
                        keys.remove(&row.id).unwrap_or_default(),
                    );
                    (row.id, facts)
                })
                .collect())
        })
    }

    /// Read, for the instances of `ids` (all claimed by the caller), what
    /// choosing their next events asks for, in five statements, and answer
    /// the store's readers of it from memory until
    /// [`Store::end_group_reads`] (see the module's doc for why this is
    /// safe). A second call replaces the first's reads.
    pub fn begin_group_reads(&self, ids: &[String]) -> Result<(), StoreError> {
        let list = id_list(ids);
        let reads = self.read(|db| {
            let d = db.dialect();
            let mut g = GroupReads {
                ids: ids.iter().cloned().collect(),
                ..GroupReads::default()
            };
            g.last_decision_ms = db
                .rows(
                    from_ids!(
                        d,
                        "SELECT t.instance_id, t.at_ms",
                        "transitions t WHERE t.instance_id = j.value
                         AND t.seq = (SELECT MAX(l.seq) FROM transitions l WHERE l.instance_id = j.value)"
                    ),
                    args![list],
                    |r| Ok((r.get::<String>(0)?, r.get::<i64>(1)?)),
                )?
                .into_iter()
                .collect();
            g.paused = crate::contain::paused_dependencies(db)?;
            for (instance, row, next) in db.rows(
                from_ids!(
                    d,
                    "SELECT o.id, o.node, o.channel, o.attempt, o.deliveries, o.idempotency_key, o.next_ms, o.instance_id",
                    "outbox o WHERE o.instance_id = j.value AND o.state = 'pending' ORDER BY o.next_ms, o.id"
                ),
                args![list],
                |r| {
                    Ok((
                        r.get::<String>(7)?,
                        OutboxRow {
                            id: r.get(0)?,
                            node: r.get(1)?,
                            channel: r.get(2)?,
                            attempt: r.get(3)?,
                            deliveries: r.get(4)?,
                            idempotency_key: r.get(5)?,
                        },
                        r.get::<i64>(6)?,
                    ))
                },
            )? {
                g.pending_requests
                    .entry(instance)
                    .or_default()
                    .push((row, next));
            }
            // Oldest first: the newest open record of a node is kept, as
            // `in_flight` reads it (`ORDER BY id DESC LIMIT 1`).
            for (instance, node, stored) in db.rows(
                in_ids!(
                    d,
                    concat!(
                        "SELECT instance_id, node, ",
                        stored_columns!(),
                        " FROM incidents WHERE kind = $2 AND closed_ms IS NULL AND instance_id"
                    ),
                    " ORDER BY id"
                ),
                args![list, KIND.as_str()],
                |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?, Stored::read(r, 2)?)),
            )? {
                let nodes = g.in_flight.entry(instance).or_default();
                match stored.record() {
                    Some(f) => {
                        nodes.insert(node, f);
                    }
                    // An unreadable newest record reads as none, as alone.
                    None => {
                        nodes.remove(&node);
                    }
                }
            }
            g.handler_runs = db
                .rows(
                    in_ids!(
                        d,
                        "SELECT instance_id, task, COUNT(*) FROM history WHERE kind = 'attempt' AND task IS NOT NULL AND instance_id",
                        " GROUP BY instance_id, task"
                    ),
                    args![list],
                    |r| {
                        Ok((
                            (r.get::<String>(0)?, r.get::<String>(1)?),
                            r.get::<usize>(2)?,
                        ))
                    },
                )?
                .into_iter()
                .collect();
            Ok(g)
        })?;
        *self.group.0.borrow_mut() = Some(reads);
        Ok(())
    }

    /// Forget what [`Store::begin_group_reads`] kept: every read goes to
    /// the database again.
    pub fn end_group_reads(&self) {
        self.group.0.borrow_mut().take();
    }
}

/// `(instance, id)` rows as each instance's set of ids.
fn id_sets(
    db: &mut dyn Conn,
    sql: &'static str,
    list: &str,
) -> Result<HashMap<String, BTreeSet<i64>>, StoreError> {
    let mut out: HashMap<String, BTreeSet<i64>> = HashMap::new();
    for (instance, id) in db.rows(sql, args![list], |r| {
        Ok((r.get::<String>(0)?, r.get::<i64>(1)?))
    })? {
        out.entry(instance).or_default().insert(id);
    }
    Ok(out)
}
