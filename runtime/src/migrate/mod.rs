//! Migration of an instance to a new deployment with a node mapping: how a
//! FAILED instance is repaired (docs/runtime.md). A pure decision like the others.
//!
//! - Tokens move to their mapped node (unmapped nodes keep their id, which
//!   must exist in the new deployment).
//! - Node-scoped snapshot keys (`attempts.<node>`, `first_attempt.<node>`,
//!   `reconcile.<node>`, `backoff.<node>`) are renamed with their node: the
//!   burned budget travels, unless the operator resets it. A reset writes
//!   nothing new: the restarted attempts' idempotency keys continue from the
//!   store's key ledger, so they are still keys never sent before.
//! - Armed timers are re-armed on the mapped node at the same instant (a
//!   backoff park keeps its eligible time).
//! - A call node's outbox rows and correlation move with it (the store
//!   applies `calls.rename`); requests keep the idempotency key they were
//!   sent with.
//! - A FAILED instance loses its `failure` record and the token where it
//!   stopped becomes ready: the next step runs a fresh attempt under the new
//!   deployment's policy. A failure that consumed its token (a gateway with
//!   no flow to take, an error end event) gets it back at that node.

use std::collections::BTreeMap;

use crate::graph::Graph;
use qflow_instance::history::{Entry, HistoryEvent, Line, Secs};
use qflow_instance::snapshot::{Family, Snapshot, Token, TokenState, FAILURE_KEY, FRONTIER_KEY};
use qflow_instance::{CallEffects, Facts, NewTimer, Status, Transition};

mod plan;

pub use plan::{kind_words, suggest, Budget, Held, Holdings, NodeMove, Plan};

/// Why a migration cannot be applied: every problem found, each saying
/// what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot migrate: {0}")]
pub struct MigrateError(pub String);

impl MigrateError {
    fn of(problems: Vec<String>) -> MigrateError {
        MigrateError(if problems.len() == 1 {
            problems.into_iter().next().unwrap_or_default()
        } else {
            problems
                .iter()
                .map(|p| format!("\n  - {p}"))
                .collect::<String>()
        })
    }
}

/// Decide a migration of the instance described by `facts` (running on
/// `old_graph`, holding `holdings` beside its snapshot) onto `new_graph`:
/// the plan, checked against both models, and the transition that carries
/// it out. A refusal lists every problem and decides nothing.
pub fn migrate(
    old_graph: &Graph,
    new_graph: &Graph,
    facts: &Facts<'_>,
    holdings: &Holdings,
    mapping: &BTreeMap<String, String>,
    reset_budget: bool,
    now_ms: i64,
) -> Result<(Plan, Transition), MigrateError> {
    if facts.status == Status::Completed {
        return Err(MigrateError(
            "the instance is completed: there is nothing to repair or move".into(),
        ));
    }
    // A snapshot that cannot be read cannot be carried: migrating it would
    // start from nothing and could complete an instance that never ran.
    if let Some(why) = facts
        .damage
        .map(str::to_string)
        .or_else(|| facts.snapshot.frontier_damage())
    {
        return Err(MigrateError(format!(
            "its stored snapshot is damaged ({why}); it is kept as it was: repair the bytes in the database first"
        )));
    }
    let mut plan = plan::check(old_graph, new_graph, facts, holdings, mapping, reset_budget)
        .map_err(MigrateError::of)?;
    let t = transition(new_graph, facts, mapping, reset_budget, now_ms)?;
    plan.status_after = t.status;
    Ok((plan, t))
}

/// The transition of a checked migration.
fn transition(
    new_graph: &Graph,
    facts: &Facts<'_>,
    mapping: &BTreeMap<String, String>,
    reset_budget: bool,
    now_ms: i64,
) -> Result<Transition, MigrateError> {
    let map = |n: &str| mapping.get(n).cloned().unwrap_or_else(|| n.to_string());
    let before = facts.snapshot;
    let mut snap = Snapshot::new();
    for (k, v) in before.entries() {
        match Family::split(k) {
            Some((family, old)) => {
                let node = map(old);
                let budget = matches!(family, Family::Attempts | Family::FirstAttempt);
                if !(reset_budget && budget) {
                    snap.set(family.key(&node), v.clone());
                }
            }
            None if k == FRONTIER_KEY || k == FAILURE_KEY => {}
            None => snap.set(k, v.clone()),
        }
    }
    let failed_node = before.failure().map(|f| f.node).filter(|n| !n.is_empty());
    let mut tokens = Vec::new();
    for mut t in before.frontier() {
        let target = map(&t.node);
        if new_graph.node(&target).is_none() {
            return Err(MigrateError(format!(
                "node `{}` has a token but `{target}` is not in the new deployment: map it (--map {}=NEW)",
                t.node, t.node
            )));
        }
        if facts.status == Status::Failed && failed_node.as_deref() == Some(t.node.as_str()) {
            t.state = TokenState::Ready;
            snap.clear_reconcile(&target);
        }
        t.node = target;
        tokens.push(t);
    }
    // A failure that consumed its token (an exclusive gateway with no flow
    // to take, an error end event) left nothing at the node it stopped at:
    // the repair puts the token back there, so the flow continues from
    // where it stopped under the new deployment (never a completed instance
    // that ran nothing, never a second instance).
    if let Some(stopped) = failed_node
        .as_deref()
        .filter(|_| facts.status == Status::Failed)
    {
        let target = map(stopped);
        if !tokens.iter().any(|t| t.node == target) {
            if new_graph.node(&target).is_none() {
                return Err(MigrateError(format!(
                    "the instance failed at `{stopped}` but `{target}` is not in the new deployment: map it (--map {stopped}=NEW)"
                )));
            }
            tokens.push(Token::ready(&target));
        }
    }
    snap.set_frontier(tokens);
    let mut arm = Vec::new();
    let mut resolve = Vec::new();
    if facts.status != Status::Failed {
        for t in facts.timers {
            let node = map(&t.node);
            if new_graph.node(&node).is_none() {
                return Err(MigrateError(format!(
                    "timer on `{}` but `{node}` is not in the new deployment",
                    t.node
                )));
            }
            resolve.push(t.id);
            arm.push(NewTimer {
                node,
                purpose: t.purpose,
                due_ms: t.due_ms,
                attempt: t.attempt,
            });
        }
    }
    let t = snap.frontier();
    let status = if t.is_empty() {
        Status::Completed
    } else if t.iter().any(|x| x.state == TokenState::Ready) {
        Status::Running
    } else {
        Status::Waiting
    };
    let mut set = BTreeMap::new();
    for (k, v) in snap.entries() {
        if before.get(k) != Some(v) {
            set.insert(k.to_string(), v.clone());
        }
    }
    let removed = before
        .keys()
        .filter(|k| snap.get(k).is_none())
        .map(str::to_string)
        .collect();
    let at_node = failed_node
        .as_deref()
        .map(map)
        .or_else(|| snap.frontier().first().map(|t| t.node.clone()))
        .unwrap_or_else(|| new_graph.process_id.clone());
    let line = Line {
        at_s: Secs(now_ms - facts.started_ms),
        node: Some(at_node),
        event: HistoryEvent::Migrated {
            mapping: mapping.clone(),
            reset_budget,
            repaired: facts.status == Status::Failed,
        },
    };
    Ok(Transition {
        snapshot: snap,
        set,
        removed,
        status,
        arm,
        resolve,
        history: vec![Entry::new(line)],
        open_incidents: Vec::new(),
        close_incidents: failed_node.into_iter().collect(),
        close_in_flight: Vec::new(),
        calls: CallEffects {
            rename: mapping
                .iter()
                .filter(|(old, new)| old != new)
                .map(|(old, new)| (old.clone(), new.clone()))
                .collect(),
            ..Default::default()
        },
        keep_stored_snapshot: false,
    })
}

/// Park the next attempt of every registered task a migration left ready
/// on its retry timer, due at the migration instant `now_ms`: what
/// `migrate --all-failed-of … --ramp` does before the ramped release that
/// spreads those attempts (a retry park is what a release schedules, and a
/// park due now runs at once when nothing holds it back, so the park alone
/// changes no outcome). The attempt numbers stay those the ready token
/// would have run: the budget carried (or reset) by the migration, plus
/// one. A channel call or any other node left ready is not parked (its
/// next step is not a handler attempt a dependency's ramp can spread); the
/// answer counts the tasks parked, so a caller can hold only the
/// instances it parked.
pub fn park_next_attempts(graph: &Graph, t: &mut Transition, now_ms: i64) -> usize {
    let mut tokens = t.snapshot.frontier();
    let mut parked = 0;
    for tok in tokens.iter_mut() {
        let registered_task = matches!(
            graph.node(&tok.node).map(|n| &n.kind),
            Some(crate::graph::Kind::Task { call: None, .. })
        );
        if tok.state != TokenState::Ready || !registered_task {
            continue;
        }
        let runs = crate::decide::task::runs_in(&t.snapshot, &tok.node);
        tok.state = TokenState::Backoff;
        t.arm.push(NewTimer {
            node: tok.node.clone(),
            purpose: qflow_instance::Purpose::Retry,
            due_ms: now_ms,
            attempt: Some(runs.saturating_add(1)),
        });
        parked += 1;
    }
    if parked == 0 {
        return 0;
    }
    t.snapshot.set_frontier(tokens);
    if let Some(v) = t.snapshot.get(FRONTIER_KEY) {
        t.set.insert(FRONTIER_KEY.to_string(), v.clone());
    }
    if t.status == Status::Running
        && !t
            .snapshot
            .frontier()
            .iter()
            .any(|x| x.state == TokenState::Ready)
    {
        t.status = Status::Waiting;
    }
    parked
}

#[cfg(test)]
mod tests {
    use super::*;
    use qflow_instance::{Event, Purpose, TimerRow};
    use serde_json::json;

    const NEW: &str = r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="a"/>
    <bpmn:serviceTask id="a" q:task="x.a"/>
    <bpmn:sequenceFlow id="f2" sourceRef="a" targetRef="b"/>
    <bpmn:serviceTask id="b" q:task="x.b"/>
    <bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

    fn graph() -> Graph {
        Graph::compile(&qflow_model::load(NEW).unwrap()).unwrap()
    }

    #[test]
    fn swapped_nodes_swap_their_counters_tokens_and_timers() {
        let mut s = Snapshot::new();
        s.set("attempts.a", json!(2));
        s.set("attempts.b", json!(5));
        s.set_frontier(vec![Token {
            node: "a".into(),
            state: TokenState::Backoff,
            via: None,
        }]);
        let timers = [TimerRow {
            id: 7,
            node: "a".into(),
            purpose: Purpose::Retry,
            due_ms: 90_000,
            attempt: Some(3),
        }];
        let facts = Facts {
            instance_id: "p-1",
            status: Status::Waiting,
            started_ms: 0,
            snapshot: &s,
            damage: None,
            timers: &timers,
            keys_sent: &BTreeMap::new(),
        };
        let mapping: BTreeMap<String, String> = [
            ("a".to_string(), "b".to_string()),
            ("b".to_string(), "a".to_string()),
        ]
        .into();
        let (_, t) = migrate(
            &graph(),
            &graph(),
            &facts,
            &Holdings::default(),
            &mapping,
            false,
            1_000,
        )
        .unwrap();
        assert_eq!(t.snapshot.attempts("b"), 2);
        assert_eq!(t.snapshot.attempts("a"), 5);
        assert_eq!(t.snapshot.frontier()[0].node, "b");
        assert_eq!(t.resolve, vec![7]);
        assert_eq!((t.arm[0].node.as_str(), t.arm[0].due_ms), ("b", 90_000));
        assert_eq!(t.status, Status::Waiting);
        let (_, reset) = migrate(
            &graph(),
            &graph(),
            &facts,
            &Holdings::default(),
            &mapping,
            true,
            1_000,
        )
        .unwrap();
        assert_eq!(reset.snapshot.attempts("b"), 0);
    }

    #[test]
    fn a_token_on_a_node_the_new_deployment_lacks_must_be_mapped() {
        let mut s = Snapshot::new();
        s.set_frontier(vec![Token::ready("gone")]);
        let facts = Facts {
            instance_id: "p-1",
            status: Status::Running,
            started_ms: 0,
            snapshot: &s,
            damage: None,
            timers: &[],
            keys_sent: &BTreeMap::new(),
        };
        let e = migrate(
            &graph(),
            &graph(),
            &facts,
            &Holdings::default(),
            &BTreeMap::new(),
            false,
            0,
        )
        .unwrap_err();
        assert!(e.0.contains("--map gone=NEW"), "{e}");
    }

    const GATEWAY: &str = r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="gw"/>
    <bpmn:exclusiveGateway id="gw"/>
    <bpmn:sequenceFlow id="f2" sourceRef="gw" targetRef="e">
      <bpmn:conditionExpression>${amount > 100}</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

    /// Decide `events` from a fresh instance of `model`, applying each
    /// transition; the facts at the end.
    fn run(model: &str, events: &[&str]) -> (Graph, Snapshot, Status) {
        let graph = Graph::compile(&qflow_model::load(model).unwrap()).unwrap();
        let t = crate::decide::start(&graph, &BTreeMap::new(), 0);
        let (mut snap, mut status) = (t.snapshot, t.status);
        for node in events {
            let facts = Facts {
                instance_id: "p-1",
                status,
                started_ms: 0,
                snapshot: &snap,
                damage: None,
                timers: &[],
                keys_sent: &BTreeMap::new(),
            };
            let ev = Event::Advance {
                node: node.to_string(),
            };
            let t = crate::decide::decide(&graph, &facts, &ev, 0);
            (snap, status) = (t.snapshot, t.status);
        }
        (graph, snap, status)
    }

    #[test]
    fn a_gateway_that_found_no_flow_is_repaired_by_putting_its_token_back() {
        let (old, snap, status) = run(GATEWAY, &["s", "gw"]);
        assert_eq!(status, Status::Failed);
        assert!(snap.frontier().is_empty(), "the failure consumed the token");
        let fixed = GATEWAY.replace(
            r#"<bpmn:exclusiveGateway id="gw"/>"#,
            r#"<bpmn:exclusiveGateway id="gw" default="f3"/>
    <bpmn:sequenceFlow id="f3" sourceRef="gw" targetRef="e"/>"#,
        );
        let graph = Graph::compile(&qflow_model::load(&fixed).unwrap()).unwrap();
        let facts = Facts {
            instance_id: "p-1",
            status,
            started_ms: 0,
            snapshot: &snap,
            damage: None,
            timers: &[],
            keys_sent: &BTreeMap::new(),
        };
        let (_, t) = migrate(
            &old,
            &graph,
            &facts,
            &Holdings::default(),
            &BTreeMap::new(),
            false,
            0,
        )
        .unwrap();
        assert_eq!(t.status, Status::Running, "not COMPLETED without running");
        assert_eq!(t.snapshot.frontier(), vec![Token::ready("gw")]);
        assert!(t.snapshot.failure().is_none());
        // The flow continues from the gateway, now by its default flow.
        let facts = Facts {
            snapshot: &t.snapshot,
            status: t.status,
            ..facts
        };
        let ev = Event::Advance { node: "gw".into() };
        let next = crate::decide::decide(&graph, &facts, &ev, 0);
        assert_eq!(next.snapshot.frontier(), vec![Token::ready("e")]);
    }

    #[test]
    fn an_error_end_is_repaired_by_putting_its_token_back_at_the_mapped_node() {
        let model = GATEWAY.replace(
            r#"<bpmn:endEvent id="e"/>"#,
            r#"<bpmn:endEvent id="e"><bpmn:errorEventDefinition errorRef="Err"/></bpmn:endEvent>"#,
        ).replace(
            "<bpmn:process ",
            r#"<bpmn:error id="Err" errorCode="DECLINED"/>
  <bpmn:process "#,
        );
        let (old, snap, status) = run(
            &model.replace("${amount > 100}", "${true}"),
            &["s", "gw", "e"],
        );
        assert_eq!(status, Status::Failed);
        assert_eq!(snap.failure().unwrap().node, "e");
        let fixed = GATEWAY
            .replace("${amount > 100}", "${true}")
            .replace(r#"targetRef="e""#, r#"targetRef="done""#)
            .replace(
                r#"<bpmn:endEvent id="e"/>"#,
                r#"<bpmn:endEvent id="done"/>"#,
            );
        let graph = Graph::compile(&qflow_model::load(&fixed).unwrap()).unwrap();
        let facts = Facts {
            instance_id: "p-1",
            status,
            started_ms: 0,
            snapshot: &snap,
            damage: None,
            timers: &[],
            keys_sent: &BTreeMap::new(),
        };
        let unmapped = migrate(
            &old,
            &graph,
            &facts,
            &Holdings::default(),
            &BTreeMap::new(),
            false,
            0,
        )
        .unwrap_err();
        assert!(unmapped.0.contains("--map e=done"), "{unmapped}");
        let mapping = BTreeMap::from([("e".to_string(), "done".to_string())]);
        let (_, t) = migrate(
            &old,
            &graph,
            &facts,
            &Holdings::default(),
            &mapping,
            false,
            0,
        )
        .unwrap();
        assert_eq!(t.status, Status::Running);
        assert_eq!(t.snapshot.frontier(), vec![Token::ready("done")]);
    }

    /// A failed task whose token the migration makes ready is parked
    /// instead on a retry timer due at the migration instant, numbered as
    /// the carried budget says; the instance waits (nothing is ready).
    #[test]
    fn a_migrated_failed_task_is_parked_at_the_migration_instant_for_a_ramp() {
        let mut s = Snapshot::new();
        s.set("attempts.a", json!(3));
        s.set_frontier(vec![Token {
            node: "a".into(),
            state: TokenState::Backoff,
            via: None,
        }]);
        s.set_failure(&qflow_instance::snapshot::Failure {
            code: "q.retry-exhausted".into(),
            reason: "exhausted".into(),
            node: "a".into(),
            attempts: Some(3),
            ..Default::default()
        });
        let facts = Facts {
            instance_id: "p-1",
            status: Status::Failed,
            started_ms: 0,
            snapshot: &s,
            damage: None,
            timers: &[],
            keys_sent: &BTreeMap::new(),
        };
        let g = graph();
        let (_, mut t) = migrate(
            &g,
            &g,
            &facts,
            &Holdings::default(),
            &BTreeMap::new(),
            false,
            90_000,
        )
        .unwrap();
        assert_eq!(t.status, Status::Running);
        assert_eq!(park_next_attempts(&g, &mut t, 90_000), 1);
        assert_eq!(
            t.status,
            Status::Waiting,
            "nothing is ready: the attempt is parked"
        );
        assert_eq!(t.snapshot.frontier()[0].state, TokenState::Backoff);
        assert_eq!(t.set.get(FRONTIER_KEY), t.snapshot.get(FRONTIER_KEY));
        assert_eq!(
            t.arm,
            vec![NewTimer {
                node: "a".into(),
                purpose: Purpose::Retry,
                due_ms: 90_000,
                attempt: Some(4),
            }]
        );
        // Parking twice parks nothing more; with the budget reset the
        // attempt is the first again.
        assert_eq!(park_next_attempts(&g, &mut t, 90_000), 0);
        let (_, mut reset) = migrate(
            &g,
            &g,
            &facts,
            &Holdings::default(),
            &BTreeMap::new(),
            true,
            90_000,
        )
        .unwrap();
        park_next_attempts(&g, &mut reset, 90_000);
        assert_eq!(reset.arm[0].attempt, Some(1));
    }
}
