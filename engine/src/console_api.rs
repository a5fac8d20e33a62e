//! What the console needs from the engine beyond the local driver's `step`:
//! running the next attempt with an outcome a person picked, and read-only
//! queries of the channel-call tables.
//!
//! The decision itself is still [`decide::decide`] over durable facts, applied
//! by [`Store::apply`] under the instance claim: the console only replaces
//! what the handler returns, exactly as a scenario entry would. It lives here,
//! not in the console crate, so the console computes no decision.

use rusqlite::params;

use crate::runtime::clock::{system_now_ms, Clock};
use crate::runtime::decide::{self, Event, Facts, Purpose};
use crate::runtime::graph::{Graph, Kind};
use crate::runtime::scenario::TaskOutcome;
use crate::runtime::snapshot::TokenState;
use crate::runtime::{Decision, RunError};
use crate::store::{local_owner, Store, StoreError};

/// Why there is no attempt to run now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoAttempt {
    /// The instance reached a terminal status.
    Terminal(String),
    /// The next thing is not an attempt (say, a gateway): step first.
    NotAnAttempt(String),
    /// Nothing is pending that would run a task.
    Nothing,
}

impl std::fmt::Display for NoAttempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoAttempt::Terminal(s) => write!(f, "the instance is {s}: no attempt runs any more"),
            NoAttempt::NotAnAttempt(n) => write!(
                f,
                "the next decision is at {n}, not an attempt: step first (space)"
            ),
            NoAttempt::Nothing => f.write_str("no task is waiting to run an attempt"),
        }
    }
}

/// Run the next attempt of a registered task with `outcome` instead of the
/// scenario's: the task whose token is ready, else the task whose retry timer
/// is the earliest armed timer (the virtual clock skips to it, as `step`
/// would). The attempt counts as a handler run, like any other.
pub fn attempt_now<C: Clock>(
    store: &mut Store,
    graph: &Graph,
    instance: &str,
    clock: &C,
    outcome: TaskOutcome,
) -> Result<Result<Decision, NoAttempt>, RunError> {
    let owner = local_owner();
    store.claim(instance, &owner, system_now_ms())?;
    let facts = store.facts(instance)?;
    if facts.status.is_terminal() {
        return Ok(Err(NoAttempt::Terminal(facts.status.as_str().into())));
    }
    let is_task = |node: &str| matches!(graph.node(node).map(|n| &n.kind), Some(Kind::Task { .. }));
    let ready = facts
        .snapshot
        .frontier()
        .into_iter()
        .find(|t| t.state == TokenState::Ready);
    let (node, timer) = match ready {
        Some(t) if is_task(&t.node) => (t.node, None),
        Some(t) => return Ok(Err(NoAttempt::NotAnAttempt(t.node))),
        None => match facts.timers.first() {
            Some(t) if t.purpose == Purpose::Retry => {
                if !clock.skip_to(t.due_ms) {
                    return Ok(Err(NoAttempt::Nothing));
                }
                (t.node.clone(), Some(t.id))
            }
            _ => return Ok(Err(NoAttempt::Nothing)),
        },
    };
    let now = clock.now_ms();
    let f = Facts {
        instance_id: instance,
        status: facts.status,
        started_ms: facts.started_ms,
        snapshot: &facts.snapshot,
        timers: &facts.timers,
    };
    let event = Event::Attempt {
        node,
        outcome,
        timer,
    };
    let t = decide::decide(graph, &f, &event, now);
    let seq = store.apply(instance, &owner, facts.version, &t, now, system_now_ms())?;
    Ok(Ok(Decision {
        seq,
        at_ms: now,
        lines: t.history.iter().map(|e| e.detail.clone()).collect(),
        status: t.status,
    }))
}

/// One outbox row, as the console's outbox panel shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    pub node: String,
    pub channel: String,
    pub attempt: u32,
    pub state: String,
    pub deliveries: u32,
    pub idempotency_key: String,
}

/// One correlation row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorrelationRow {
    pub key: String,
    pub node: String,
}

/// The outbox rows of an instance, oldest first (read-only).
pub fn outbox(store: &Store, instance: &str) -> Result<Vec<OutboxRow>, StoreError> {
    let mut st = store.conn().prepare(
        "SELECT node, channel, attempt, state, deliveries, idempotency_key FROM outbox WHERE instance_id = ?1 ORDER BY id",
    )?;
    let rows = st.query_map(params![instance], |r| {
        Ok(OutboxRow {
            node: r.get(0)?,
            channel: r.get(1)?,
            attempt: r.get(2)?,
            state: r.get(3)?,
            deliveries: r.get(4)?,
            idempotency_key: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The correlations of an instance (read-only).
pub fn correlations(store: &Store, instance: &str) -> Result<Vec<CorrelationRow>, StoreError> {
    let mut st = store.conn().prepare(
        "SELECT key, node FROM correlations WHERE instance_id = ?1 ORDER BY created_ms, key",
    )?;
    let rows = st.query_map(params![instance], |r| {
        Ok(CorrelationRow {
            key: r.get(0)?,
            node: r.get(1)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
