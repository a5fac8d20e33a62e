//! Verified repair: what an instance's next decision will be, decided by the
//! runtime's own [`decide`] on its facts (the repaired facts of a migration
//! not yet applied, or the facts read back once it is), before anything runs.
//!
//! Why: a bulk retry that reports "12 of 12 completed" while every one of
//! them fails again at once has fixed nothing. The engine can know that
//! before it applies the repair, because the decision is a pure function of
//! the facts: the next step is decided here exactly as the shell would decide
//! it, with one assumption where the world answers (a handler, a
//! counterpart): that the failure the instance failed with recurs. The
//! preview then says what that failure would now lead to (a retry, or
//! FAILED), and a repair whose answer is the very decision it repairs (the
//! same node, code and reason) is [`NextDecision::unchanged`]: it would fail
//! again at once with the same failure.

use std::time::Duration;

use crate::graph::{Graph, Kind};
use qflow_instance::codes;
use qflow_instance::event::{Event, ExternalEvent, FailureClass, Resolution, TaskOutcome};
use qflow_instance::rows::{Facts, Purpose, Status, TimerRow};
use qflow_instance::snapshot::{Failure, Snapshot, TokenState};
use qflow_instance::Transition;

use crate::decide;

/// The failure an instance failed with: what the preview assumes recurs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub node: String,
    pub code: String,
    /// `exhausted`, `non-retryable`, `expired`, `uncaught-error`.
    pub reason: String,
    pub class: Option<FailureClass>,
    pub message: Option<String>,
}

impl Recorded {
    /// The failure record of a FAILED snapshot.
    pub fn of(f: &Failure) -> Recorded {
        Recorded {
            node: f.node.clone(),
            code: f.code.clone(),
            reason: f.reason.clone(),
            class: f.class.as_deref().and_then(FailureClass::parse),
            message: f.message.clone(),
        }
    }
}

/// What follows the next step, should the recorded failure recur there (or,
/// for a step the world has no part in, what follows it exactly).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then {
    /// Parked for `attempt` at `due_ms` (the instance's clock, absolute).
    Retry { attempt: u32, due_ms: i64 },
    /// FAILED with this code and reason.
    Failed { code: String, reason: String },
    /// The step leaves the instance in this status (it moved on).
    Continues(Status),
    /// The world answers and no failure is recorded to assume: not known
    /// before it runs.
    Open,
}

/// The next step the runtime takes on the instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A registered task's handler runs now (attempt `attempt`).
    Attempt { node: String, attempt: u32 },
    /// A channel call sends its request now (attempt `attempt`).
    Request { node: String, attempt: u32 },
    /// A flow node (gateway, event) is decided now, from the facts alone.
    Flow { node: String },
    /// Nothing is due now: the earliest armed timer, at `due_ms`.
    Timer {
        node: String,
        purpose: Purpose,
        due_ms: i64,
    },
    /// Nothing is due without something from outside (a response, a
    /// reconciliation).
    Outside,
    /// An operator's reconciliation of the node's unknown outcome, decided
    /// now from the facts alone.
    Resolve {
        node: String,
        resolution: Resolution,
    },
    /// The instance is finished.
    Finished(Status),
}

/// The next decision, previewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextDecision {
    pub step: Step,
    pub then: Then,
    /// The failure assumed to recur, when the step's outcome is the world's.
    pub assumed: Option<Recorded>,
    /// The decision is the one the repair repairs: FAILED again at once,
    /// same node, code and reason.
    pub unchanged: bool,
}

impl NextDecision {
    /// One line in words, instants relative to `started_ms` as `run`
    /// prints them.
    pub fn describe(&self, started_ms: i64) -> String {
        let rel = |ms: i64| qflow_model::duration::compact_ms(ms - started_ms);
        let step = match &self.step {
            Step::Attempt { node, attempt } => format!("attempt {attempt} of {node} runs at once"),
            Step::Request { node, attempt } => {
                format!("attempt {attempt} of {node} sends its request at once")
            }
            Step::Flow { node } => format!("{node} is decided at once"),
            Step::Timer {
                node,
                purpose,
                due_ms,
            } => format!(
                "nothing runs now: the {} timer of {node} is due at +{}",
                purpose.as_str(),
                rel(*due_ms)
            ),
            Step::Outside => {
                "nothing runs until something arrives from outside (a response, a reconciliation)"
                    .into()
            }
            Step::Resolve { node, resolution } => {
                format!(
                    "resolving {node} as {} is decided at once",
                    resolution.as_str()
                )
            }
            Step::Finished(s) => format!("none: the instance is {}", s.as_str().to_uppercase()),
        };
        let cond = match &self.assumed {
            Some(a) => format!(
                "; if it fails again as it did ({}{})",
                a.code,
                a.class
                    .map(|c| format!(", {}", c.as_str()))
                    .unwrap_or_default()
            ),
            None => String::new(),
        };
        let then = match &self.then {
            Then::Retry { attempt, due_ms } => {
                format!("{cond}: retry, attempt {attempt} at +{}", rel(*due_ms))
            }
            Then::Failed { code, reason } => {
                let same = match (&self.step, self.unchanged) {
                    (Step::Resolve { .. }, true) => ": no attempt runs (the budget is spent)",
                    (_, true) => ": the same decision as before the repair",
                    _ => "",
                };
                format!("{cond}: FAILED, {code} ({reason}){same}")
            }
            Then::Continues(s) => format!(": then {}", s.as_str().to_uppercase()),
            Then::Open => String::new(),
        };
        format!("{step}{then}")
    }

    /// A short key a batch counts its instances by (no instants, no
    /// attempt numbers): instances whose next decisions read alike share it.
    pub fn outcome(&self) -> String {
        let step = match &self.step {
            Step::Attempt { node, .. } | Step::Request { node, .. } => format!("{node} runs"),
            Step::Flow { node } => format!("{node} is decided"),
            Step::Timer { node, purpose, .. } => {
                format!("wait for {node}'s {} timer", purpose.as_str())
            }
            Step::Outside => "wait for something from outside".into(),
            Step::Resolve { node, resolution } => {
                format!("{node} resolved as {}", resolution.as_str())
            }
            Step::Finished(s) => s.as_str().to_string(),
        };
        match &self.then {
            Then::Retry { .. } => format!("{step}, retried if it fails again"),
            Then::Failed { code, .. } if self.assumed.is_some() => {
                format!("{step}, FAILED again with {code} if it fails again")
            }
            Then::Failed { code, .. } => format!("{step}: FAILED with {code}"),
            Then::Continues(s) => format!("{step}: {}", s.as_str().to_uppercase()),
            Then::Open => step,
        }
    }
}

/// The decision an operator's reconciliation `event` (an
/// [`ExternalEvent::Resolve`]) takes on the instance `facts` describe at
/// `now_ms`: exact, the world has no part in it. A `retry` that runs no
/// attempt (its budget is spent: FAILED at once) is
/// [`NextDecision::unchanged`]: it is not the retry it asks for.
pub fn resolve(
    graph: &Graph,
    facts: &Facts<'_>,
    event: &ExternalEvent,
    now_ms: i64,
) -> NextDecision {
    let ExternalEvent::Resolve {
        node, resolution, ..
    } = event
    else {
        return next(graph, facts, None, now_ms);
    };
    let ev = Event::External {
        event: event.clone(),
        index: None,
    };
    let t = decide::decide(graph, facts, &ev, now_ms);
    let then = then_of(&t, node);
    let unchanged = *resolution == Resolution::Retry && matches!(then, Then::Failed { .. });
    NextDecision {
        step: Step::Resolve {
            node: node.clone(),
            resolution: *resolution,
        },
        then,
        assumed: None,
        unchanged,
    }
}

/// The facts of a decision, owned: what [`next`] steps in memory.
struct Owned {
    status: Status,
    snapshot: Snapshot,
    timers: Vec<TimerRow>,
}

impl Owned {
    /// These facts after `t`: its snapshot and status, its timers resolved
    /// and armed (an armed timer gets a number no stored timer has).
    fn after(&self, t: &Transition) -> Owned {
        let mut timers: Vec<TimerRow> = self
            .timers
            .iter()
            .filter(|x| !t.resolve.contains(&x.id))
            .cloned()
            .collect();
        let first = timers.iter().map(|x| x.id).max().unwrap_or(0).max(0) + 1;
        for (id, a) in (first..).zip(&t.arm) {
            timers.push(TimerRow {
                id,
                node: a.node.clone(),
                purpose: a.purpose,
                due_ms: a.due_ms,
                attempt: a.attempt,
            });
        }
        timers.sort_by_key(|x| (x.due_ms, x.id));
        Owned {
            status: t.status,
            snapshot: t.snapshot.clone(),
            timers,
        }
    }
}

/// The next decision of the instance a migration's transition `t` leaves
/// (decided from `facts`, the instance before it, with `mapping`, at
/// `now_ms`): the repaired facts stepped in memory, `facts`' failure assumed
/// to recur at the node it maps to.
pub fn after_migration(
    graph: &Graph,
    facts: &Facts<'_>,
    mapping: &std::collections::BTreeMap<String, String>,
    t: &Transition,
    now_ms: i64,
) -> NextDecision {
    let before = Owned {
        status: facts.status,
        snapshot: facts.snapshot.clone(),
        timers: facts.timers.to_vec(),
    };
    let recorded = facts.snapshot.failure().map(|f| {
        let mut r = Recorded::of(&f);
        if let Some(to) = mapping.get(&r.node) {
            r.node = to.clone();
        }
        r
    });
    let after = before.after(t);
    next_owned(graph, facts, &after, recorded.as_ref(), now_ms)
}

/// The next decision of the instance `facts` describe at `now_ms`, with
/// `recorded` the failure assumed to recur (the one a repair repaired).
pub fn next(
    graph: &Graph,
    facts: &Facts<'_>,
    recorded: Option<&Recorded>,
    now_ms: i64,
) -> NextDecision {
    let owned = Owned {
        status: facts.status,
        snapshot: facts.snapshot.clone(),
        timers: facts.timers.to_vec(),
    };
    next_owned(graph, facts, &owned, recorded, now_ms)
}

fn facts_of<'a>(base: &Facts<'a>, o: &'a Owned) -> Facts<'a> {
    Facts {
        instance_id: base.instance_id,
        status: o.status,
        started_ms: base.started_ms,
        snapshot: &o.snapshot,
        damage: None,
        timers: &o.timers,
        keys_sent: base.keys_sent,
    }
}

fn next_owned(
    graph: &Graph,
    base: &Facts<'_>,
    o: &Owned,
    recorded: Option<&Recorded>,
    now_ms: i64,
) -> NextDecision {
    let plain = |step: Step, then: Then| NextDecision {
        step,
        then,
        assumed: None,
        unchanged: false,
    };
    if o.status.is_terminal() {
        return plain(Step::Finished(o.status), Then::Continues(o.status));
    }
    let facts = facts_of(base, o);
    // The shell's order: a ready token first (in frontier order), else the
    // earliest armed timer.
    let ready = o
        .snapshot
        .frontier()
        .into_iter()
        .find(|t| t.state == TokenState::Ready);
    let Some(token) = ready else {
        return match o.timers.first() {
            Some(t) => plain(
                Step::Timer {
                    node: t.node.clone(),
                    purpose: t.purpose,
                    due_ms: t.due_ms,
                },
                Then::Open,
            ),
            None => plain(Step::Outside, Then::Open),
        };
    };
    let node = token.node.clone();
    // The failure recurs only where it happened.
    let recurring = recorded.filter(|r| r.node == node);
    let kind = graph.node(&node).map(|n| &n.kind);
    let (step, first) = match kind {
        Some(Kind::Task { call: None, .. }) => {
            let attempt = runs_after(o, &node);
            let Some(r) = recurring else {
                return plain(Step::Attempt { node, attempt }, Then::Open);
            };
            let outcome = match r.class {
                None if r.reason == "uncaught-error" => TaskOutcome::BpmnError {
                    code: r.code.clone(),
                },
                class => TaskOutcome::Fail {
                    code: r.code.clone(),
                    class: class.unwrap_or(FailureClass::Transient),
                    retry_after: None::<Duration>,
                    message: r.message.clone(),
                },
            };
            let ev = Event::Attempt {
                node: node.clone(),
                outcome,
                timer: None,
            };
            (
                Step::Attempt { node, attempt },
                decide::decide(graph, &facts, &ev, now_ms),
            )
        }
        Some(Kind::Task { call: Some(_), .. }) => {
            let ev = Event::Advance { node: node.clone() };
            let sent = decide::decide(graph, &facts, &ev, now_ms);
            let attempt = sent
                .history
                .iter()
                .find_map(|e| e.line.event.attempt())
                .unwrap_or(1);
            let step = Step::Request {
                node: node.clone(),
                attempt,
            };
            let Some(r) = recurring else {
                return plain(step, Then::Open);
            };
            let o2 = o.after(&sent);
            let f2 = facts_of(base, &o2);
            let failure = if r.code == codes::POISONED {
                Some((
                    Event::PoisonWake {
                        node: node.clone(),
                        poisoned: true,
                    },
                    now_ms,
                ))
            } else {
                o2.timers
                    .iter()
                    .find(|t| t.node == node && t.purpose == Purpose::Timeout)
                    .map(|t| (Event::TimerDue { timer: t.id }, t.due_ms))
            };
            let Some((ev, at)) = failure else {
                return plain(step, Then::Open);
            };
            (step, decide::decide(graph, &f2, &ev, at))
        }
        _ => {
            // A gateway or an event: the world has no part in it.
            let ev = Event::Advance { node: node.clone() };
            let t = decide::decide(graph, &facts, &ev, now_ms);
            let d = NextDecision {
                step: Step::Flow { node: node.clone() },
                then: then_of(&t, &node),
                assumed: None,
                unchanged: false,
            };
            return with_unchanged(d, recorded);
        }
    };
    let d = NextDecision {
        step,
        then: then_of(&first, token.node.as_str()),
        assumed: recurring.cloned(),
        unchanged: false,
    };
    with_unchanged(d, recorded)
}

/// The attempt number the node's next run has: its runs so far plus one.
fn runs_after(o: &Owned, node: &str) -> u32 {
    let reconciled = o
        .snapshot
        .reconcile(node)
        .and_then(|m| m.attempt)
        .unwrap_or(0);
    o.snapshot.attempts(node).max(reconciled).saturating_add(1)
}

fn then_of(t: &Transition, node: &str) -> Then {
    if t.status == Status::Failed {
        let f = t.snapshot.failure().unwrap_or_default();
        return Then::Failed {
            code: f.code,
            reason: f.reason,
        };
    }
    match t
        .arm
        .iter()
        .find(|a| a.node == node && a.purpose == Purpose::Retry)
    {
        Some(a) => Then::Retry {
            attempt: a.attempt.unwrap_or(0),
            due_ms: a.due_ms,
        },
        None => Then::Continues(t.status),
    }
}

fn with_unchanged(mut d: NextDecision, recorded: Option<&Recorded>) -> NextDecision {
    let node = match &d.step {
        Step::Attempt { node, .. } | Step::Request { node, .. } | Step::Flow { node } => node,
        _ => return d,
    };
    d.unchanged = match (&d.then, recorded) {
        (Then::Failed { code, reason }, Some(r)) => {
            &r.node == node && &r.code == code && &r.reason == reason
        }
        _ => false,
    };
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use qflow_instance::snapshot::Token;
    use std::collections::BTreeMap;

    const MODEL: &str = r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    <bpmn:serviceTask id="t" q:task="x.t">
      <bpmn:extensionElements><q:retry maxAttempts="3" backoff="PT1M" jitter="none"/></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

    /// FAILED at `t` after its three attempts: DOWN, transient, exhausted.
    fn exhausted() -> Snapshot {
        let mut s = Snapshot::new();
        s.set_attempts("t", 3);
        s.set_first_attempt_ms("t", 0);
        s.set_frontier(vec![Token {
            node: "t".into(),
            state: TokenState::Backoff,
            via: None,
        }]);
        s.set_failure(&Failure {
            code: "DOWN".into(),
            reason: "exhausted".into(),
            node: "t".into(),
            attempts: Some(3),
            class: Some("transient".into()),
            ..Failure::default()
        });
        s
    }

    fn preview(reset: bool) -> NextDecision {
        let graph = Graph::compile(&qflow_model::load(MODEL).unwrap()).unwrap();
        let s = exhausted();
        let facts = Facts {
            instance_id: "p-1",
            status: Status::Failed,
            started_ms: 0,
            snapshot: &s,
            damage: None,
            timers: &[],
            keys_sent: &BTreeMap::new(),
        };
        let none = BTreeMap::new();
        let (_, t) = crate::migrate::migrate(
            &graph,
            &graph,
            &facts,
            &Default::default(),
            &none,
            reset,
            180_000,
        )
        .unwrap();
        after_migration(&graph, &facts, &none, &t, 180_000)
    }

    #[test]
    fn a_spent_budget_carried_onto_the_same_policy_fails_again_unchanged() {
        let d = preview(false);
        assert_eq!(
            d.step,
            Step::Attempt {
                node: "t".into(),
                attempt: 4
            }
        );
        assert_eq!(
            d.then,
            Then::Failed {
                code: "DOWN".into(),
                reason: "exhausted".into()
            }
        );
        assert!(d.unchanged);
    }

    #[test]
    fn a_reset_budget_retries_the_same_failure() {
        let d = preview(true);
        assert_eq!(
            d.then,
            Then::Retry {
                attempt: 2,
                due_ms: 240_000
            }
        );
        assert!(!d.unchanged);
        assert_eq!(d.assumed.map(|a| a.code), Some("DOWN".to_string()));
    }
}
