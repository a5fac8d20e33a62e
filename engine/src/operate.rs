//! Operator actions on one instance: run the next attempt with an outcome a
//! person picked, answer a channel call, poison its pending request. Any
//! face may offer them (the console does); none decides them.
//!
//! Each action is one or more decisions through the shell
//! ([`crate::runtime::shell::take`]): chosen from durable facts read under
//! the instance claim, decided by the same functions as every other event,
//! applied in one transaction. An operator only replaces what the world
//! would have supplied (a handler's outcome, a counterpart's answer, a
//! delivery's failure), exactly as a scenario entry would.

use crate::instance::history::{Attempt, HistoryEvent};
use crate::instance::{DeliveryOutcome, Event, Purpose, TaskOutcome};
use crate::runtime::clock::Clock;
use crate::runtime::graph::{Graph, Kind};
use crate::runtime::shell::{self, Choice};
use crate::runtime::snapshot::TokenState;
use crate::runtime::{Decision, RunError};
use crate::store::{local_owner, InstanceFacts, Store};

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

/// One operator decision through the shell: `choose` picks the event from
/// facts read under the claim, or says why there is none.
fn operate<C: Clock>(
    store: &mut Store,
    graph: &Graph,
    instance: &str,
    clock: &C,
    choose: impl FnOnce(&Store, &InstanceFacts) -> Result<Result<Event, NoAttempt>, RunError>,
) -> Result<Result<Decision, NoAttempt>, RunError> {
    let mut why = None;
    let taken = shell::take(
        store,
        &local_owner(),
        instance,
        |_, _| Ok(graph),
        |store, _, facts| {
            Ok(match choose(store, facts)? {
                Ok(event) => Some(Choice::event(event, clock.now_ms())),
                Err(no) => {
                    why = Some(no);
                    None
                }
            })
        },
    )?;
    Ok(match taken.or_lost()? {
        Some(d) => Ok(d),
        None => Err(why.unwrap_or(NoAttempt::Nothing)),
    })
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
    operate(store, graph, instance, clock, |_, facts| {
        if facts.status.is_terminal() {
            return Ok(Err(NoAttempt::Terminal(facts.status.as_str().into())));
        }
        let kind = |node: &str| graph.node(node).map(|n| &n.kind);
        let is_task = |node: &str| matches!(kind(node), Some(Kind::Task { call: None, .. }));
        let tokens = facts.snapshot.frontier();
        let ready = tokens
            .iter()
            .find(|t| t.state == TokenState::Ready && is_task(&t.node))
            .or_else(|| tokens.iter().find(|t| t.state == TokenState::Ready));
        let retry = facts
            .timers
            .first()
            .filter(|t| t.purpose == Purpose::Retry && is_task(&t.node));
        let call = tokens.iter().find(|t| is_call(graph, &t.node));
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
        Ok(Ok(Event::Attempt {
            node,
            outcome,
            timer,
        }))
    })
}

fn is_call(graph: &Graph, node: &str) -> bool {
    matches!(
        graph.node(node).map(|n| &n.kind),
        Some(Kind::Task { call: Some(_), .. })
    )
}

/// The requests a call node sent, in order: (attempt, idempotency key).
fn requests(store: &Store, instance: &str, node: &str) -> Result<Vec<(u32, String)>, RunError> {
    Ok(store
        .history(instance)?
        .iter()
        .filter_map(|h| h.line())
        .filter(|l| l.node.as_deref() == Some(node))
        .filter_map(|l| match l.event {
            HistoryEvent::Attempt(Attempt::Call(a)) => Some((a.attempt, a.idempotency_key)),
            _ => None,
        })
        .collect())
}

/// The channel call an operator's answer or poison acts on: the call node
/// holding a token, else the last call node that emitted a request.
fn call_node(
    store: &Store,
    graph: &Graph,
    instance: &str,
    facts: &InstanceFacts,
) -> Result<Option<String>, RunError> {
    if let Some(t) = facts
        .snapshot
        .frontier()
        .into_iter()
        .find(|t| is_call(graph, &t.node))
    {
        return Ok(Some(t.node));
    }
    Ok(store
        .history(instance)?
        .iter()
        .rev()
        .filter_map(|h| h.line())
        .filter(|l| matches!(l.event, HistoryEvent::Attempt(Attempt::Call(_))))
        .filter_map(|l| l.node)
        .find(|n| is_call(graph, n)))
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
    operate(store, graph, instance, clock, |store, facts| {
        let Some(node) = call_node(store, graph, instance, facts)? else {
            return Ok(Err(NoAttempt::NoCall));
        };
        let requests = requests(store, instance, &node)?;
        let chosen = match attempt {
            Some(n) => requests.into_iter().rev().find(|(a, _)| *a == n),
            None => requests.into_iter().last(),
        };
        let Some((_, request)) = chosen else {
            return Ok(Err(NoAttempt::NoCall));
        };
        Ok(Ok(Event::Response {
            node,
            request,
            body,
        }))
    })
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
        let delivered = operate(store, graph, instance, clock, |store, _| {
            let Some((current, next)) = store
                .pending_requests(instance)?
                .into_iter()
                .find(|(r, _)| r.id == row.id)
            else {
                return Ok(Err(NoAttempt::NoCall));
            };
            if !clock.skip_to(next) {
                return Ok(Err(NoAttempt::Nothing));
            }
            Ok(Ok(Event::Delivery {
                row: current,
                outcome: DeliveryOutcome::Fail("poisoned by hand in the console".into()),
                counterpart: None,
            }))
        })?;
        match delivered {
            Ok(d) => out.push(d),
            Err(_) => break,
        }
    }
    // The wake: a prompt to look, acting only on what the re-read finds.
    let woken = operate(store, graph, instance, clock, |store, _| {
        Ok(if store.has_poisoned_request(instance, &row.node)? {
            Ok(Event::PoisonWake {
                node: row.node.clone(),
                poisoned: true,
            })
        } else {
            Err(NoAttempt::Nothing)
        })
    })?;
    if let Ok(d) = woken {
        out.push(d);
    }
    Ok(Ok(out))
}
