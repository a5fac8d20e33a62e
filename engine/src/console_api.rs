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
use crate::runtime::decide::{self, Event, Purpose};
use crate::runtime::graph::{Graph, Kind};
use crate::runtime::scenario::{DeliveryOutcome, TaskOutcome};
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
    /// The node is a channel call: its attempts are request emissions, and
    /// fail only by timeout or a poisoned delivery.
    IsCall(String),
    /// No channel call has a request to answer or deliver.
    NoCall,
    /// The channel retries one delivery forever: nothing ever poisons.
    NoCeiling(String),
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
            NoAttempt::IsCall(n) => write!(
                f,
                "{n} is a channel call: its attempt fails only by q.timeout (t lets it fire) or a poisoned delivery (p); r answers it"
            ),
            NoAttempt::NoCall => f.write_str("no channel call has a request out"),
            NoAttempt::NoCeiling(c) => write!(
                f,
                "channel {c} has no maxDeliveries: the outbox retries one delivery forever, so nothing poisons"
            ),
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
    let kind = |node: &str| graph.node(node).map(|n| &n.kind);
    let is_task = |node: &str| matches!(kind(node), Some(Kind::Task { call: None, .. }));
    let is_call = |node: &str| matches!(kind(node), Some(Kind::Task { call: Some(_), .. }));
    let tokens = facts.snapshot.frontier();
    let ready = tokens
        .iter()
        .find(|t| t.state == TokenState::Ready && is_task(&t.node))
        .or_else(|| tokens.iter().find(|t| t.state == TokenState::Ready));
    let retry = facts
        .timers
        .first()
        .filter(|t| t.purpose == Purpose::Retry && is_task(&t.node));
    let call = tokens.iter().find(|t| is_call(&t.node));
    let (node, timer) = match (ready, retry, call) {
        (Some(t), _, _) if is_task(&t.node) => (t.node.clone(), None),
        (None, Some(t), _) => {
            if !clock.skip_to(t.due_ms) {
                return Ok(Err(NoAttempt::Nothing));
            }
            (t.node.clone(), Some(t.id))
        }
        (_, _, Some(c)) => return Ok(Err(NoAttempt::IsCall(c.node.clone()))),
        (Some(t), _, None) => return Ok(Err(NoAttempt::NotAnAttempt(t.node.clone()))),
        (None, None, None) => return Ok(Err(NoAttempt::Nothing)),
    };
    let now = clock.now_ms();
    let f = facts.as_facts(instance);
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

/// Claim, read the facts, decide one event at the clock's now, apply.
fn decide_now<C: Clock>(
    store: &mut Store,
    graph: &Graph,
    instance: &str,
    clock: &C,
    event: &Event,
) -> Result<Decision, RunError> {
    let owner = local_owner();
    store.claim(instance, &owner, system_now_ms())?;
    let facts = store.facts(instance)?;
    let now = clock.now_ms();
    let f = facts.as_facts(instance);
    let t = decide::decide(graph, &f, event, now);
    let seq = store.apply(instance, &owner, facts.version, &t, now, system_now_ms())?;
    Ok(Decision {
        seq,
        at_ms: now,
        lines: t.history.iter().map(|e| e.detail.clone()).collect(),
        status: t.status,
    })
}

/// The channel call the console's `r` and `p` act on: the call node holding
/// a token, else the last call node that emitted a request.
fn call_node(store: &Store, graph: &Graph, instance: &str) -> Result<Option<String>, RunError> {
    let is_call = |node: &str| {
        matches!(
            graph.node(node).map(|n| &n.kind),
            Some(Kind::Task { call: Some(_), .. })
        )
    };
    let facts = store.facts(instance)?;
    if let Some(t) = facts
        .snapshot
        .frontier()
        .into_iter()
        .find(|t| is_call(&t.node))
    {
        return Ok(Some(t.node));
    }
    Ok(store
        .history(instance)?
        .into_iter()
        .rev()
        .filter(|h| h.kind == "attempt")
        .filter_map(|h| h.node)
        .find(|n| is_call(n)))
}

/// Deliver a counterpart response now to the call's attempt `attempt` (its
/// request's idempotency key, read from the history), or the latest one.
/// The verdict is the engine's: accepted, retry-pending, failed, no-wait.
pub fn respond_now<C: Clock>(
    store: &mut Store,
    graph: &Graph,
    instance: &str,
    clock: &C,
    attempt: Option<u32>,
    body: serde_json::Value,
) -> Result<Result<Decision, NoAttempt>, RunError> {
    let Some(node) = call_node(store, graph, instance)? else {
        return Ok(Err(NoAttempt::NoCall));
    };
    let requests: Vec<(u32, String)> = store
        .history(instance)?
        .into_iter()
        .filter(|h| h.kind == "attempt" && h.node.as_deref() == Some(node.as_str()))
        .filter_map(|h| {
            let key = h.detail_json()["idempotencyKey"].as_str()?.to_string();
            Some((h.attempt.unwrap_or(0), key))
        })
        .collect();
    let chosen = match attempt {
        Some(n) => requests.iter().rev().find(|(a, _)| *a == n),
        None => requests.last(),
    };
    let Some((_, request)) = chosen else {
        return Ok(Err(NoAttempt::NoCall));
    };
    let event = Event::Response {
        node,
        request: request.clone(),
        body,
    };
    Ok(Ok(decide_now(store, graph, instance, clock, &event)?))
}

/// Poison the pending request: its deliveries fail, on the channel's own
/// curve (time skips to each retry), until the outbox's ceiling poisons it;
/// then the poison wake, which re-reads the outbox under the claim. Every
/// failed delivery is a decision in the history, as the dispatcher's are.
pub fn poison_now<C: Clock>(
    store: &mut Store,
    graph: &Graph,
    instance: &str,
    clock: &C,
) -> Result<Result<Vec<Decision>, NoAttempt>, RunError> {
    let Some((row, _)) = store.pending_requests(instance)?.into_iter().next() else {
        return Ok(Err(NoAttempt::NoCall));
    };
    let ceiling = match graph.node(&row.node).map(|n| &n.kind) {
        Some(Kind::Task { call: Some(c), .. }) => c.max_deliveries,
        _ => None,
    };
    let Some(ceiling) = ceiling else {
        return Ok(Err(NoAttempt::NoCeiling(row.channel)));
    };
    let mut out = Vec::new();
    for _ in 0..ceiling {
        let Some((current, next)) = store
            .pending_requests(instance)?
            .into_iter()
            .find(|(r, _)| r.id == row.id)
        else {
            break;
        };
        if !clock.skip_to(next) {
            break;
        }
        let event = Event::Delivery {
            row: current,
            outcome: DeliveryOutcome::Fail("poisoned by hand in the console".into()),
            counterpart: None,
        };
        out.push(decide_now(store, graph, instance, clock, &event)?);
    }
    if store.has_poisoned_request(instance, &row.node)? {
        let event = Event::PoisonWake {
            node: row.node.clone(),
            poisoned: true,
        };
        out.push(decide_now(store, graph, instance, clock, &event)?);
    }
    Ok(Ok(out))
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
    instance_rows(
        store,
        "SELECT node, channel, attempt, state, deliveries, idempotency_key FROM outbox WHERE instance_id = ?1 ORDER BY id",
        instance,
        |r| {
            Ok(OutboxRow {
                node: r.get(0)?,
                channel: r.get(1)?,
                attempt: r.get(2)?,
                state: r.get(3)?,
                deliveries: r.get(4)?,
                idempotency_key: r.get(5)?,
            })
        },
    )
}

/// The correlations of an instance (read-only).
pub fn correlations(store: &Store, instance: &str) -> Result<Vec<CorrelationRow>, StoreError> {
    instance_rows(
        store,
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

/// One read-only query keyed by instance id (`?1`), each row mapped by `map`:
/// the outbox and correlation readers differ only in their SQL and row type.
fn instance_rows<T>(
    store: &Store,
    sql: &str,
    instance: &str,
    map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, StoreError> {
    let mut st = store.conn().prepare(sql)?;
    let rows = st.query_map(params![instance], map)?;
    Ok(rows.collect::<Result<_, _>>()?)
}
