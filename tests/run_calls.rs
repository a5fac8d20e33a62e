//! The channel-call decision table (docs/runtime.md), one test per row, on the pure
//! decisions: each takes durable facts and one event, and returns the
//! transition the store would apply under the claim. Then the same rules end
//! to end through `qflow run` and the store (outbox withdrawal, correlations).

use qflow_engine::local::LocalRunExt;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};

use qflow_engine::runtime::decide::{self, Event, Facts, Purpose, Status, TimerRow, Transition};
use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::snapshot::Snapshot;
use qflow_engine::store::Store;
use serde_json::{json, Value};

mod support;
use support::stores::{open, Fresh};

const MODEL: &str = r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <q:channelConfig channel="bank" maxDeliveries="2" deliveryInterval="PT2S"/>
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="auth"/>
    <bpmn:serviceTask id="auth" q:channel="bank" q:operation="authorize">
      <bpmn:extensionElements>
        <q:timeout duration="PT30S"/>
        <q:retry maxAttempts="3" backoff="PT1M" jitter="none"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="auth" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

/// An instance's durable facts, advanced by applying transitions the way the
/// store does (timers get ids in arming order).
struct Sim {
    graph: Graph,
    snapshot: Snapshot,
    status: Status,
    timers: Vec<TimerRow>,
    next_id: i64,
    /// The key ledger, kept as the store keeps it.
    keys: BTreeMap<String, u32>,
}

impl Sim {
    fn new() -> Sim {
        let graph = Graph::compile(&qflow_engine::load(MODEL).unwrap()).unwrap();
        let start = decide::start(&graph, &BTreeMap::new(), 0);
        let mut sim = Sim {
            graph,
            snapshot: Snapshot::new(),
            status: Status::Running,
            timers: Vec::new(),
            next_id: 1,
            keys: BTreeMap::new(),
        };
        sim.apply(&start);
        sim
    }

    fn decide(&self, event: Event, now_ms: i64) -> Transition {
        let facts = Facts {
            instance_id: "p-1",
            status: self.status,
            started_ms: 0,
            snapshot: &self.snapshot,
            damage: None,
            timers: &self.timers,
            keys_sent: &self.keys,
        };
        decide::decide(&self.graph, &facts, &event, now_ms)
    }

    fn apply(&mut self, t: &Transition) {
        self.snapshot = t.snapshot.clone();
        self.status = t.status;
        for r in &t.calls.emit {
            let last = self.keys.entry(r.node.clone()).or_default();
            *last = (*last).max(r.key_number);
        }
        self.timers.retain(|x| !t.resolve.contains(&x.id));
        for a in &t.arm {
            self.timers.push(TimerRow {
                id: self.next_id,
                node: a.node.clone(),
                purpose: a.purpose,
                due_ms: a.due_ms,
                attempt: a.attempt,
            });
            self.next_id += 1;
        }
        self.timers.sort_by_key(|x| (x.due_ms, x.id));
    }

    fn step(&mut self, event: Event, now_ms: i64) -> Transition {
        let t = self.decide(event, now_ms);
        self.apply(&t);
        t
    }

    fn timer(&self, purpose: Purpose) -> i64 {
        self.timers
            .iter()
            .find(|t| t.purpose == purpose)
            .expect("armed")
            .id
    }

    /// Emitted attempt 1: a live attempt (unmarked).
    fn live() -> Sim {
        let mut sim = Sim::new();
        let t = sim.step(
            Event::Advance {
                node: "auth".into(),
            },
            0,
        );
        assert_eq!(t.calls.emit[0].idempotency_key, "p-1/auth/1");
        sim
    }

    /// Attempt 1 timed out: in the backoff window (marked).
    fn marked() -> Sim {
        let mut sim = Sim::live();
        let timeout = sim.timer(Purpose::Timeout);
        sim.step(Event::TimerDue { timer: timeout }, 30_000);
        assert!(sim.snapshot.get("backoff.auth").is_some());
        sim
    }
}

fn response(request: &str) -> Event {
    Event::Response {
        node: "auth".into(),
        request: request.into(),
        body: json!({"approved": true}),
    }
}

fn only_line(t: &Transition) -> Value {
    assert_eq!(t.history.len(), 1, "{:?}", t.history);
    t.history[0].detail()
}

fn no_effect(t: &Transition) {
    assert!(
        t.set.is_empty() && t.removed.is_empty(),
        "snapshot changed: {:?} {:?}",
        t.set,
        t.removed
    );
    assert!(t.arm.is_empty() && t.calls.emit.is_empty() && t.calls.withdraw.is_empty());
}

#[test]
fn response_to_marked_node_is_refused_and_correlation_stays_live() {
    let sim = Sim::marked();
    let t = sim.decide(response("p-1/auth/1"), 32_000);
    let l = only_line(&t);
    assert_eq!(
        (l["kind"].as_str(), l["verdict"].as_str()),
        (Some("response"), Some("retry-pending"))
    );
    assert!(l["reason"]
        .as_str()
        .unwrap()
        .contains("that attempt is gone, a retry is pending"));
    no_effect(&t);
    assert!(t.calls.retire.is_empty());
    assert!(t.resolve.is_empty(), "the retry timer stays armed");
}

#[test]
fn response_to_live_attempt_resumes_flow() {
    let sim = Sim::live();
    let t = sim.decide(response("p-1/auth/1"), 5_000);
    assert_eq!(t.history[0].detail()["verdict"], "accepted");
    assert_eq!(t.snapshot.variable("approved"), Some(&json!(true)));
    assert_eq!(t.resolve, vec![sim.timer(Purpose::Timeout)]);
    assert_eq!(t.calls.retire, vec!["auth".to_string()]);
    assert_eq!(t.snapshot.frontier()[0].node, "e");
}

#[test]
fn retry_timer_on_marked_node_redrives_with_fresh_key_and_timeout() {
    let sim = Sim::marked();
    let retry = sim.timer(Purpose::Retry);
    assert_eq!(
        sim.timers.iter().find(|t| t.id == retry).unwrap().due_ms,
        90_000
    );
    let t = sim.decide(Event::TimerDue { timer: retry }, 90_000);
    let l = only_line(&t);
    assert_eq!(
        (l["kind"].as_str(), l["attempt"].as_u64()),
        (Some("attempt"), Some(2))
    );
    assert_eq!(l["redrive"], true);
    assert_eq!(l["incarnation"], 2);
    assert_eq!(t.calls.emit[0].idempotency_key, "p-1/auth/2");
    assert!(
        t.snapshot.get("backoff.auth").is_none(),
        "the marker leaves with the re-drive"
    );
    assert_eq!(t.arm.len(), 1);
    assert_eq!(
        (t.arm[0].purpose, t.arm[0].due_ms),
        (Purpose::Timeout, 120_000)
    );
    assert_eq!(t.resolve, vec![retry]);
}

#[test]
fn retry_timer_on_live_attempt_is_stale_residue() {
    let mut sim = Sim::live();
    // A retry timer row left behind, as after a race: the node is live.
    sim.timers.push(TimerRow {
        id: 99,
        node: "auth".into(),
        purpose: Purpose::Retry,
        due_ms: 10_000,
        attempt: Some(2),
    });
    let t = sim.decide(Event::TimerDue { timer: 99 }, 10_000);
    assert_eq!(only_line(&t)["kind"], "ignored");
    assert!(only_line(&t)["reason"]
        .as_str()
        .unwrap()
        .contains("stale residue"));
    no_effect(&t);
    assert_eq!(t.resolve, vec![99]);
}

#[test]
fn timeout_on_marked_node_is_stale_residue() {
    let mut sim = Sim::marked();
    sim.timers.push(TimerRow {
        id: 98,
        node: "auth".into(),
        purpose: Purpose::Timeout,
        due_ms: 31_000,
        attempt: Some(1),
    });
    let t = sim.decide(Event::TimerDue { timer: 98 }, 31_000);
    assert_eq!(only_line(&t)["kind"], "ignored");
    no_effect(&t);
    assert_eq!(t.snapshot.attempts("auth"), 1, "no budget consumed");
}

#[test]
fn timeout_on_live_attempt_fails_with_q_timeout() {
    let sim = Sim::live();
    let timeout = sim.timer(Purpose::Timeout);
    let t = sim.decide(Event::TimerDue { timer: timeout }, 30_000);
    let l = &t.history[0].detail();
    assert_eq!(
        (l["kind"].as_str(), l["code"].as_str(), l["then"].as_str()),
        (Some("call-failed"), Some("q.timeout"), Some("backoff"))
    );
    // The backoff park, in one transition: counter +1, marker with the
    // classification, dead attempt withdrawn, timeout resolved, retry armed.
    assert_eq!(t.snapshot.attempts("auth"), 1);
    assert_eq!(
        t.snapshot.get("backoff.auth"),
        Some(&json!({"attempt": 1, "code": "q.timeout"}))
    );
    assert_eq!(t.calls.withdraw, vec!["auth".to_string()]);
    assert_eq!(t.resolve, vec![timeout]);
    assert_eq!(
        (t.arm[0].purpose, t.arm[0].due_ms),
        (Purpose::Retry, 90_000)
    );
    assert!(t.calls.retire.is_empty(), "the correlation stays live");
}

#[test]
fn poison_wake_on_marked_node_does_nothing() {
    let sim = Sim::marked();
    let t = sim.decide(
        Event::PoisonWake {
            node: "auth".into(),
            poisoned: true,
        },
        33_000,
    );
    assert_eq!(only_line(&t)["kind"], "ignored");
    no_effect(&t);
}

#[test]
fn poison_wake_without_poisoned_row_does_nothing() {
    let sim = Sim::live();
    let spurious = sim.decide(
        Event::PoisonWake {
            node: "auth".into(),
            poisoned: false,
        },
        2_000,
    );
    assert_eq!(only_line(&spurious)["kind"], "ignored");
    no_effect(&spurious);
    assert!(spurious.resolve.is_empty(), "the live timeout stays armed");
}

#[test]
fn poison_wake_on_live_attempt_with_poisoned_row_fails_with_q_delivery_poisoned() {
    let sim = Sim::live();
    let t = sim.decide(
        Event::PoisonWake {
            node: "auth".into(),
            poisoned: true,
        },
        2_000,
    );
    assert_eq!(t.history[0].detail()["kind"], "call-failed");
    assert_eq!(t.history[0].detail()["code"], "q.delivery.poisoned");
    assert_eq!(
        t.snapshot.get("backoff.auth").unwrap()["code"],
        "q.delivery.poisoned"
    );
    assert_eq!(t.snapshot.attempts("auth"), 1);
    assert_eq!(
        t.resolve,
        vec![sim.timer(Purpose::Timeout)],
        "the live timeout is resolved"
    );
}

#[test]
fn exhaustion_on_q_timeout_takes_the_one_fatal_path_and_a_late_response_hears_failed() {
    let mut sim = Sim::marked();
    for (attempt, at) in [(2u64, 90_000), (3, 180_000)] {
        let retry = sim.timer(Purpose::Retry);
        let t = sim.step(Event::TimerDue { timer: retry }, at);
        assert_eq!(t.history[0].detail()["attempt"], attempt);
        let timeout = sim.timer(Purpose::Timeout);
        sim.step(Event::TimerDue { timer: timeout }, at + 30_000);
    }
    assert_eq!(sim.status, Status::Failed);
    let f = sim.snapshot.get("failure").unwrap();
    assert_eq!(
        (
            f["code"].as_str(),
            f["reason"].as_str(),
            f["attempts"].as_u64()
        ),
        (Some("q.timeout"), Some("exhausted"), Some(3))
    );
    assert!(sim.timers.is_empty());
    let t = sim.decide(response("p-1/auth/3"), 300_000);
    assert_eq!(only_line(&t)["verdict"], "failed");
    no_effect(&t);
}

/// Attempt 1 timed out and the retry timer re-drove: attempt 2 is live.
fn redriven() -> Sim {
    let mut sim = Sim::marked();
    let retry = sim.timer(Purpose::Retry);
    let t = sim.step(Event::TimerDue { timer: retry }, 90_000);
    assert_eq!(t.calls.emit[0].idempotency_key, "p-1/auth/2");
    sim
}

#[test]
fn response_naming_a_superseded_attempt_after_the_redrive_is_refused_and_the_flow_untouched() {
    let sim = redriven();
    let t = sim.decide(response("p-1/auth/1"), 95_000);
    let l = only_line(&t);
    assert_eq!(
        (l["verdict"].as_str(), l["live_attempt"].as_u64()),
        (Some("superseded"), Some(2))
    );
    assert_eq!(
        l["reason"],
        "that attempt was replaced by attempt 2 (the correlation stays live)"
    );
    no_effect(&t);
    assert!(t.calls.retire.is_empty(), "the correlation stays live");
    assert!(t.resolve.is_empty(), "attempt 2's timeout stays armed");
    assert_eq!(t.snapshot.variable("approved"), None);
    // The live attempt's own answer is then accepted.
    let t = sim.decide(response("p-1/auth/2"), 96_000);
    assert_eq!(only_line_of(&t, "response")["verdict"], "accepted");
}

#[test]
fn response_naming_no_request_of_the_call_is_refused_as_unknown_request() {
    let sim = redriven();
    let t = sim.decide(response("p-1/auth/7"), 95_000);
    assert_eq!(only_line(&t)["verdict"], "unknown-request");
    no_effect(&t);
}

#[test]
fn response_without_a_key_is_matched_by_correlation_alone() {
    let sim = redriven();
    let t = sim.decide(response(""), 95_000);
    assert_eq!(only_line_of(&t, "response")["verdict"], "accepted");
    assert_eq!(t.snapshot.variable("approved"), Some(&json!(true)));
}

fn only_line_of(t: &Transition, kind: &str) -> Value {
    let mut of = t.history.iter().filter(|h| h.kind() == kind);
    let l = of.next().expect("a line of that kind");
    assert!(of.next().is_none());
    l.detail()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `qflow run <args> --format json --db <db>` from the repo root.
fn qflow_run(args: &[&str], db: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .arg("run")
        .args(args)
        .args(["--format", "json", "--db"])
        .arg(db)
        .output()
        .unwrap()
}

/// The JSON lines of a run that must have succeeded.
fn json_lines(out: Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn run(model: &str, scenario: &str, db: &str) -> Vec<Value> {
    json_lines(qflow_run(&[model, "--scenario", scenario], db))
}

/// The bank sample under `scenario`, stopped at virtual time `until`.
fn run_bank_until(scenario: &str, until: &str, db: &str) -> Output {
    qflow_run(
        &[
            "samples/bank-authorize.bpmn",
            "--scenario",
            scenario,
            "--until",
            until,
        ],
        db,
    )
}

crate::on_both_stores!(
    a_poisoned_request_is_withdrawn_at_the_park_and_the_retry_gets_a_fresh_key,
    the_correlation_stays_live_through_the_backoff_window,
    a_response_by_correlation_returns_its_verdict_to_the_caller,
    a_lost_poison_wake_is_recovered_by_the_timeout,
    backoff_park_is_one_transaction_withdrawing_the_dead_attempts_pending_and_poisoned_rows,
    redrive_is_a_new_incarnation_in_history_not_an_update,
    response_to_failed_instance_is_answered_failed,
    response_to_unknown_correlation_is_answered_no_such_instance,
    migration_moves_a_waiting_calls_outbox_rows_and_correlation_with_its_node,
    repair_with_a_reset_budget_gives_the_restarted_attempts_keys_never_sent_before,
    a_call_entered_again_through_a_loop_sends_never_sent_keys,
    a_loop_that_never_waits_stops_as_a_livelock_with_the_instance_kept,
);

fn a_poisoned_request_is_withdrawn_at_the_park_and_the_retry_gets_a_fresh_key(fresh: &Fresh) {
    let db = fresh.db();
    let lines = run(
        "samples/bank-authorize.bpmn",
        "samples/scenarios/call-delivery-poisoned.json",
        &db,
    );
    let keys: Vec<&str> = lines
        .iter()
        .filter(|l| l["kind"] == "attempt")
        .map(|l| l["idempotencyKey"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        vec![
            "bank-authorize-1/authorize/1",
            "bank-authorize-1/authorize/2"
        ]
    );
    let store = open(&db);
    let rows = store.outbox("bank-authorize-1").unwrap();
    // Attempt 1's poisoned row was withdrawn; attempt 2's was delivered.
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (
            rows[0].attempt,
            rows[0].state.as_str(),
            rows[0].idempotency_key.as_str()
        ),
        (2, "delivered", "bank-authorize-1/authorize/2")
    );
    assert!(store
        .incidents("bank-authorize-1")
        .unwrap()
        .iter()
        .any(|i| i.kind.as_str() == "poisoned"));
    // The call is over: its correlation is retired.
    assert_eq!(
        store.correlation("bank-authorize-1/authorize").unwrap(),
        None
    );
}

fn the_correlation_stays_live_through_the_backoff_window(fresh: &Fresh) {
    let db = fresh.db();
    let out = run_bank_until("samples/scenarios/call-late-answer.json", "PT33S", &db);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(r#""verdict":"retry-pending""#), "{text}");
    let store = open(&db);
    assert_eq!(
        store.correlation("bank-authorize-1/authorize").unwrap(),
        Some(("bank-authorize-1".to_string(), "authorize".to_string()))
    );
}

fn a_response_by_correlation_returns_its_verdict_to_the_caller(fresh: &Fresh) {
    use qflow_engine::runtime::driver::{respond, Verdict};
    let db = fresh.db();
    // Attempt 1 timed out at 30 s; the instance waits in its backoff window.
    let out = run_bank_until("samples/scenarios/call-silent-forever.json", "PT31S", &db);
    assert!(out.status.success());
    let mut store = open(&db);
    let key = "bank-authorize-1/authorize";
    let (v, _) = respond(
        &mut store,
        key,
        "bank-authorize-1/authorize/1",
        json!({"approved": true}),
        31_000,
    )
    .unwrap();
    assert_eq!(v, Verdict::RetryPending);
    let (v, d) = respond(&mut store, "nobody/authorize", "x", json!({}), 31_000).unwrap();
    assert_eq!((v, d), (Verdict::NoSuchInstance, None));
    // After the re-drive the same correlation serves the new attempt.
    let out = run_bank_until("samples/scenarios/call-silent-forever.json", "PT45S", &db);
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""redrive":true"#));
    // A late answer to attempt 1 after the re-drive is superseded, not taken
    // for attempt 2's.
    let (v, d) = respond(
        &mut store,
        key,
        "bank-authorize-1/authorize/1",
        json!({"approved": false}),
        44_000,
    )
    .unwrap();
    assert_eq!(v, Verdict::Superseded { live: 2 });
    assert_eq!(d.unwrap().status, Status::Waiting);
    let (v, d) = respond(
        &mut store,
        key,
        "bank-authorize-1/authorize/2",
        json!({"approved": true}),
        45_000,
    )
    .unwrap();
    assert_eq!(v, Verdict::Accepted);
    assert_eq!(d.unwrap().lines[0]["verdict"], "accepted");
}

fn a_lost_poison_wake_is_recovered_by_the_timeout(fresh: &Fresh) {
    use qflow_engine::runtime::driver::LocalRun;
    use qflow_engine::runtime::scenario::Scenario;
    use qflow_engine::runtime::VirtualClock;
    let db = fresh.db();
    let source = std::fs::read_to_string(repo().join("samples/bank-authorize.bpmn")).unwrap();
    let defs = qflow_engine::load(&source).unwrap();
    let scenario_text =
        std::fs::read_to_string(repo().join("samples/scenarios/call-delivery-poisoned.json"))
            .unwrap();
    let open = || {
        let store = open(&db);
        let scenario = Scenario::parse(&scenario_text).unwrap();
        LocalRun::open(store, &source, &defs, scenario, VirtualClock::new(0)).unwrap()
    };
    {
        let mut run = open();
        // Step until the request is poisoned, then "crash": the in-process
        // wake dies with the process.
        loop {
            let d = run.step().unwrap().expect("runs until the poisoning");
            if d.lines.iter().any(|l| l["poisoned"] == true) {
                break;
            }
        }
    }
    let mut run = open();
    assert!(run.resumed());
    let mut lines = Vec::new();
    run.run(|d| lines.extend(d.lines.iter().cloned())).unwrap();
    let failed: Vec<(&str, f64)> = lines
        .iter()
        .filter(|l| l["kind"] == "call-failed")
        .map(|l| (l["code"].as_str().unwrap(), l["at_s"].as_f64().unwrap()))
        .collect();
    // Nothing told the task; the timeout the loader guarantees did.
    assert_eq!(failed, vec![("q.timeout", 30.0)]);
    assert_eq!(run.final_state().unwrap().status(), "completed");
}

fn local_run(
    source: &str,
    scenario: &str,
    db: &str,
) -> qflow_engine::runtime::LocalRun<qflow_engine::runtime::VirtualClock> {
    use qflow_engine::runtime::{LocalRun, Scenario, VirtualClock};
    let defs = qflow_engine::load(source).unwrap();
    let store = open(db);
    let scenario = Scenario::parse(scenario).unwrap();
    LocalRun::open(store, source, &defs, scenario, VirtualClock::new(0)).unwrap()
}

/// Step until a decision has a `call-failed` line; returns that decision.
fn step_to_park(
    run: &mut qflow_engine::runtime::LocalRun<qflow_engine::runtime::VirtualClock>,
) -> qflow_engine::runtime::Decision {
    loop {
        let d = run.step().unwrap().expect("runs until the attempt fails");
        if d.lines.iter().any(|l| l["kind"] == "call-failed") {
            return d;
        }
    }
}

/// What the backoff park of `bank-authorize-1`'s attempt 1 left in the
/// store, all from the one transition `park`.
fn assert_one_transaction_park(store: &Store, park: &qflow_engine::runtime::Decision, code: &str) {
    let id = "bank-authorize-1";
    let facts = store.facts(id).unwrap();
    // Counter +1 and the marker with the failure's classification.
    assert_eq!(facts.snapshot.attempts("authorize"), 1);
    assert_eq!(
        facts.snapshot.get("backoff.authorize"),
        Some(&json!({"attempt": 1, "code": code}))
    );
    // The dead attempt's outbox rows are gone (whatever state they were in).
    let rows = store.outbox(id).unwrap();
    assert!(rows.iter().all(|r| r.attempt != 1), "{rows:?}");
    // Timeout resolved and retry armed by this very transition.
    let timers = store.timers(id).unwrap();
    let timeout = timers
        .iter()
        .find(|t| t.purpose == Purpose::Timeout)
        .expect("the timeout row is kept, resolved");
    assert_eq!(
        (timeout.armed, timeout.resolved_seq),
        (false, Some(park.seq))
    );
    let retry: Vec<_> = timers.iter().filter(|t| t.armed).collect();
    assert_eq!(retry.len(), 1, "{timers:?}");
    assert_eq!(
        (retry[0].purpose, retry[0].armed_seq, retry[0].attempt),
        (Purpose::Retry, park.seq, Some(2))
    );
    // The correlation stays live for the retry's response.
    assert_eq!(
        store.correlation("bank-authorize-1/authorize").unwrap(),
        Some((id.to_string(), "authorize".to_string()))
    );
    assert_eq!(
        store.transitions(id).unwrap().last().unwrap().seq,
        park.seq,
        "the park is the latest transition"
    );
}

fn backoff_park_is_one_transaction_withdrawing_the_dead_attempts_pending_and_poisoned_rows(
    fresh: &Fresh,
) {
    let source = std::fs::read_to_string(repo().join("samples/bank-authorize.bpmn")).unwrap();
    // A poisoned row: the outbox gave up on attempt 1; the wake parks.
    let db = fresh.db();
    let scenario =
        std::fs::read_to_string(repo().join("samples/scenarios/call-delivery-poisoned.json"))
            .unwrap();
    let mut run = local_run(&source, &scenario, &db);
    let park = step_to_park(&mut run);
    assert_eq!(park.lines[0]["code"], "q.delivery.poisoned");
    assert_one_transaction_park(run.store(), &park, "q.delivery.poisoned");
    drop(run);
    // A pending row: without a delivery ceiling the outbox retries attempt
    // 1's request forever; the timeout parks while it is still pending.
    let db = fresh.db();
    let unbounded = source.replace(r#" maxDeliveries="5""#, "");
    assert_ne!(unbounded, source, "the sample sets a ceiling");
    let scenario = r#"{"deliveries": {"bank": [{"fail": "connection refused"}]}}"#;
    let mut run = local_run(&unbounded, scenario, &db);
    let park = step_to_park(&mut run);
    assert_eq!(park.lines[0]["code"], "q.timeout");
    assert_one_transaction_park(run.store(), &park, "q.timeout");
}

fn redrive_is_a_new_incarnation_in_history_not_an_update(fresh: &Fresh) {
    let source = std::fs::read_to_string(repo().join("samples/bank-authorize.bpmn")).unwrap();
    let scenario =
        std::fs::read_to_string(repo().join("samples/scenarios/call-silent-then-answer.json"))
            .unwrap();
    let db = fresh.db();
    let mut run = local_run(&source, &scenario, &db);
    run.run(|_| {}).unwrap();
    let history = run.store().history("bank-authorize-1").unwrap();
    let attempts: Vec<_> = history.iter().filter(|h| h.kind == "attempt").collect();
    assert_eq!(attempts.len(), 2, "{history:?}");
    let (first, second) = (attempts[0].detail_json(), attempts[1].detail_json());
    // The dead incarnation's record is untouched; the new one is its own row,
    // its own transition, with its own key.
    assert_eq!(first.get("redrive"), None);
    assert_eq!(first["idempotencyKey"], "bank-authorize-1/authorize/1");
    assert_eq!(
        (second["redrive"].as_bool(), second["incarnation"].as_u64()),
        (Some(true), Some(2))
    );
    assert_eq!(second["idempotencyKey"], "bank-authorize-1/authorize/2");
    assert!(attempts[1].transition_seq > attempts[0].transition_seq);
    assert!(attempts[1].seq > attempts[0].seq);
}

fn response_to_failed_instance_is_answered_failed(fresh: &Fresh) {
    use qflow_engine::runtime::driver::{respond, Verdict};
    let db = fresh.db();
    let lines = run(
        "samples/bank-authorize.bpmn",
        "samples/scenarios/call-silent-forever.json",
        &db,
    );
    assert_eq!(lines.last().unwrap()["status"], "failed");
    let mut store = open(&db);
    // FAILED keeps its correlation so the counterpart hears the truth.
    let (v, d) = respond(
        &mut store,
        "bank-authorize-1/authorize",
        "bank-authorize-1/authorize/4",
        json!({"approved": true}),
        10_000_000,
    )
    .unwrap();
    assert_eq!(v, Verdict::Failed);
    let d = d.unwrap();
    assert_eq!(d.status, Status::Failed);
    assert_eq!(d.lines[0]["verdict"], "failed");
}

fn response_to_unknown_correlation_is_answered_no_such_instance(fresh: &Fresh) {
    use qflow_engine::runtime::driver::{respond, Verdict};
    let db = fresh.db();
    let mut store = open(&db);
    let (v, d) = respond(
        &mut store,
        "nobody-1/authorize",
        "nobody-1/authorize/1",
        json!({}),
        0,
    )
    .unwrap();
    assert_eq!((v, d), (Verdict::NoSuchInstance, None));
}

fn migration_moves_a_waiting_calls_outbox_rows_and_correlation_with_its_node(fresh: &Fresh) {
    use qflow_engine::local::migrate_instance;
    use qflow_engine::runtime::driver::{respond, Verdict};
    let db = fresh.db();
    // Attempt 1 is out and delivered; the bank has not answered yet.
    let out = run_bank_until("samples/scenarios/call-silent-forever.json", "PT5S", &db);
    assert!(out.status.success());
    let source = std::fs::read_to_string(repo().join("samples/bank-authorize.bpmn")).unwrap();
    let mut renamed = source.clone();
    for attr in ["id", "sourceRef", "targetRef", "bpmnElement"] {
        renamed = renamed.replace(
            &format!(r#"{attr}="authorize""#),
            &format!(r#"{attr}="authorize-v2""#),
        );
    }
    let defs = qflow_engine::load(&renamed).unwrap();
    let mut store = open(&db);
    let mapping = BTreeMap::from([("authorize".to_string(), "authorize-v2".to_string())]);
    let d = migrate_instance(
        &mut store,
        &renamed,
        &defs,
        "bank-authorize-1",
        &mapping,
        false,
    )
    .unwrap();
    assert_eq!(d.lines[0]["kind"], "migrated");
    // The correlation and the request moved with the node; the request keeps
    // the key it was sent with.
    assert_eq!(
        store.correlation("bank-authorize-1/authorize").unwrap(),
        None
    );
    assert_eq!(
        store.correlation("bank-authorize-1/authorize-v2").unwrap(),
        Some(("bank-authorize-1".to_string(), "authorize-v2".to_string()))
    );
    let rows = store.outbox("bank-authorize-1").unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].node.as_str(), rows[0].idempotency_key.as_str()),
        ("authorize-v2", "bank-authorize-1/authorize/1")
    );
    // The bank's answer to the request it got is the live attempt's.
    let (v, d) = respond(
        &mut store,
        "bank-authorize-1/authorize-v2",
        "bank-authorize-1/authorize/1",
        json!({"approved": true}),
        6_000,
    )
    .unwrap();
    assert_eq!(v, Verdict::Accepted, "{:?}", d.map(|d| d.lines));
}

fn repair_with_a_reset_budget_gives_the_restarted_attempts_keys_never_sent_before(fresh: &Fresh) {
    let db = fresh.db();
    let first = run(
        "samples/bank-authorize.bpmn",
        "samples/scenarios/call-silent-forever.json",
        &db,
    );
    assert_eq!(first.last().unwrap()["attempts"], 4);
    let lines = json_lines(qflow_run(
        &[
            "samples/bank-authorize.bpmn",
            "--scenario",
            "samples/scenarios/call-silent-forever.json",
            "--migrate",
            "bank-authorize-1",
            "--reset-budget",
        ],
        &db,
    ));
    // The budget restarts at attempt 1; the keys continue at 5, so the bank
    // (deduplicating by key) sees four new requests, not four it handled.
    let attempts: Vec<(u64, &str)> = lines
        .iter()
        .filter(|l| l["kind"] == "attempt")
        .map(|l| {
            (
                l["attempt"].as_u64().unwrap(),
                l["idempotencyKey"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        attempts,
        vec![
            (1, "bank-authorize-1/authorize/5"),
            (2, "bank-authorize-1/authorize/6"),
            (3, "bank-authorize-1/authorize/7"),
            (4, "bank-authorize-1/authorize/8"),
        ]
    );
    assert_eq!(lines.last().unwrap()["status"], "failed");
}

fn a_call_entered_again_through_a_loop_sends_never_sent_keys(fresh: &Fresh) {
    let lines = run(
        "samples/call-loop-until-approved.bpmn",
        "samples/scenarios/call-loop-until-approved.json",
        &fresh.db(),
    );
    let keys: Vec<&str> = lines
        .iter()
        .filter(|l| l["kind"] == "attempt")
        .map(|l| l["idempotencyKey"].as_str().unwrap())
        .collect();
    // Entry 1 is answered "declined"; entry 2 times out once and is re-driven.
    assert_eq!(
        keys,
        [
            "ask-until-approved-1/authorize/1",
            "ask-until-approved-1/authorize/2",
            "ask-until-approved-1/authorize/3",
        ]
    );
    assert_eq!(lines.last().unwrap()["status"], "completed");
}

fn a_loop_that_never_waits_stops_as_a_livelock_with_the_instance_kept(fresh: &Fresh) {
    // The gateway always routes back and the counterpart answers at once:
    // virtual time never moves.
    let model = std::fs::read_to_string(repo().join("samples/call-loop-until-approved.bpmn"))
        .unwrap()
        .replace(
            "approved == false",
            "approved == false || approved != false",
        );
    let path = fresh.dir().join("livelock.bpmn");
    std::fs::write(&path, model).unwrap();
    let db = fresh.db();
    let out = qflow_run(&[path.to_str().unwrap(), "--no-scenario"], &db);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("decisions at virtual time +0s without time moving")
            && stderr.contains("`authorize`"),
        "{stderr}"
    );
    // Every decision taken was committed: the instance is still there, running.
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.iter().filter(|l| l["kind"] == "attempt").count() > 100);
    let store = open(&db);
    let kept = store.instances().unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(
        ["running", "waiting"].contains(&kept[0].status.as_str()),
        "unfinished, not terminal: {kept:?}"
    );
}
