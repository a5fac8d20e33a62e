//! Decisions that move tokens through the flow: start and end events,
//! gateways (exclusive choice, parallel fork and join), intermediate timers
//! parking, boundaries passing on, and a channel call's first request.

use crate::graph::{GNode, Graph, Kind};
use qflow_instance::codes;
use qflow_instance::event::Event;
use qflow_instance::history::{HistoryEvent, WaitFor};
use qflow_instance::rows::{Facts, Purpose};
use qflow_instance::snapshot::{Token, TokenState};
use qflow_instance::NewTimer;

use super::{arrive, call, fatal, ignore, leave, ms, Work};

/// Execute the ready token at a node that is not a registered task.
pub(super) fn advance(graph: &Graph, facts: &Facts<'_>, w: &mut Work, id: &str) {
    let ev = Event::Advance { node: id.into() };
    let Some(node) = graph.node(id) else {
        return ignore(w, &ev, "no such node in the deployment");
    };
    let ready = w
        .tokens()
        .into_iter()
        .find(|t| t.node == id && t.state == TokenState::Ready);
    let Some(token) = ready else {
        return ignore(w, &ev, "no ready token there");
    };
    match &node.kind {
        Kind::Start | Kind::TimerBoundary { .. } | Kind::ErrorBoundary { .. } => {
            w.take(id, TokenState::Ready);
            let to = leave(graph, w, node);
            w.entry(Some(id), HistoryEvent::Pass { to });
        }
        Kind::End => {
            w.take(id, TokenState::Ready);
            w.entry(
                Some(id),
                HistoryEvent::End {
                    code: None,
                    error: false,
                },
            );
        }
        Kind::ErrorEnd { code } => {
            w.take(id, TokenState::Ready);
            w.entry(
                Some(id),
                HistoryEvent::End {
                    code: Some(code.clone()),
                    error: true,
                },
            );
            fatal(w, id, code, "uncaught-error", None, None);
        }
        Kind::Exclusive { default } => exclusive(graph, w, node, default.as_deref()),
        Kind::Parallel if node.is_join() => join(graph, w, node, token),
        Kind::Parallel => {
            w.take(id, TokenState::Ready);
            let to: Vec<String> = node.outgoing.iter().map(|o| o.target.clone()).collect();
            for o in &node.outgoing {
                w.push(arrive(graph, &o.flow, &o.target));
            }
            w.entry(Some(id), HistoryEvent::gateway(None, to, None));
        }
        Kind::Timer { duration } => {
            w.set_state(id, TokenState::Ready, TokenState::Timer);
            let due = w.now_ms + ms(*duration);
            w.arm.push(NewTimer {
                node: id.into(),
                purpose: Purpose::Timer,
                due_ms: due,
                attempt: None,
            });
            let until = w.rel(due);
            w.entry(
                Some(id),
                HistoryEvent::Wait {
                    for_: WaitFor::Timer,
                    until_s: Some(until),
                    code: None,
                },
            );
        }
        Kind::Task { call: Some(_), .. } => {
            w.set_state(id, TokenState::Ready, TokenState::Timer);
            call::emit(graph, facts, w, node, false);
        }
        Kind::Task { .. } => ignore(w, &ev, "a task runs through its handler"),
    }
}

/// An exclusive gateway: the first flow whose condition holds (the default
/// flow last); none holding and no default is the fatal path.
fn exclusive(graph: &Graph, w: &mut Work, node: &GNode, default: Option<&str>) {
    let id = node.id.as_str();
    let vars = w.snap.variables();
    let is_default = |flow: &str| Some(flow) == default;
    let chosen = node
        .outgoing
        .iter()
        .filter(|o| !is_default(&o.flow))
        .find(|o| o.condition.as_ref().is_none_or(|c| c.eval(&vars)))
        .or_else(|| node.outgoing.iter().find(|o| is_default(&o.flow)));
    w.take(id, TokenState::Ready);
    match chosen {
        Some(o) => {
            w.push(arrive(graph, &o.flow, &o.target));
            w.entry(
                Some(id),
                HistoryEvent::gateway(
                    Some(o.flow.clone()),
                    vec![o.target.clone()],
                    Some(is_default(&o.flow)),
                ),
            );
        }
        None => {
            let names: Vec<&str> = node.outgoing.iter().map(|o| o.flow.as_str()).collect();
            w.entry(
                Some(id),
                HistoryEvent::Gateway {
                    flow: None,
                    to: Vec::new(),
                    default: None,
                    joined: None,
                    code: Some(codes::GATEWAY_NO_MATCH.into()),
                    reason: Some(format!(
                        "no condition of {} holds and the gateway has no default flow",
                        qflow_model::text::capped_list(&names)
                    )),
                },
            );
            fatal(w, id, codes::GATEWAY_NO_MATCH, "uncaught-error", None, None);
        }
    }
}

/// A parallel join: count arrivals per incoming flow; the last one moves on.
fn join(graph: &Graph, w: &mut Work, node: &GNode, token: Token) {
    let id = node.id.as_str();
    w.take(id, TokenState::Ready);
    w.push(Token {
        state: TokenState::Joined,
        ..token
    });
    let joined: Vec<Token> = w
        .tokens()
        .into_iter()
        .filter(|t| t.node == id && t.state == TokenState::Joined)
        .collect();
    let arrived = |f: &str| joined.iter().any(|t| t.via.as_deref() == Some(f));
    if node.incoming.iter().all(|f| arrived(f)) {
        let mut t = w.tokens();
        for f in &node.incoming {
            if let Some(i) = t.iter().position(|x| {
                x.node == id && x.state == TokenState::Joined && x.via.as_deref() == Some(f)
            }) {
                t.remove(i);
            }
        }
        w.snap.set_frontier(t);
        let to = leave(graph, w, node);
        w.entry(
            Some(id),
            HistoryEvent::Gateway {
                flow: None,
                to,
                default: None,
                joined: Some(node.incoming.len()),
                code: None,
                reason: None,
            },
        );
    } else {
        let n = node.incoming.iter().filter(|f| arrived(f)).count();
        w.entry(
            Some(id),
            HistoryEvent::Join {
                arrived: n,
                of: node.incoming.len(),
            },
        );
    }
}
