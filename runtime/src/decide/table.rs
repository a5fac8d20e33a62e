//! The runtime's decision table, one readable test per row: a model, the
//! events in, the decision out. Each decision is rendered as the history
//! lines it writes and the effects the store applies with them (timers
//! armed and resolved, snapshot keys set and removed, outbox and incident
//! effects), and compared with the snapshot written beside the test.
//!
//! The harness ([`Sim`]) keeps an instance's durable facts and applies each
//! transition the way the store does (timers get ids in arming order), so a
//! row can be reached through the decisions that lead to it.

use std::collections::BTreeMap;

use crate::graph::Graph;
use qflow_instance::snapshot::{canonical_string, Snapshot};
use qflow_instance::{
    DeliveryOutcome, Event, Facts, FailureClass, OutboxChange, OutboxRow, Purpose, Status,
    TaskOutcome, TimerRow, Transition,
};

use super::{decide, start};

/// A channel call with a route-less timeout and a retry policy.
const CALL: &str = r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
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

/// A registered task with a retry policy of two attempts.
const TASK: &str = r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="charge"/>
    <bpmn:serviceTask id="charge" q:task="payments.charge">
      <bpmn:extensionElements><q:retry maxAttempts="2" backoff="PT1M" jitter="none"/></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

/// An instance's durable facts, advanced by applying transitions.
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
    fn new(model: &str) -> Sim {
        let graph = Graph::compile(&qflow_model::load(model).expect("loads")).expect("compiles");
        let first = start(&graph, &BTreeMap::new(), 0);
        let mut sim = Sim {
            graph,
            snapshot: Snapshot::new(),
            status: Status::Running,
            timers: Vec::new(),
            next_id: 1,
            keys: BTreeMap::new(),
        };
        sim.apply(&first);
        sim
    }

    /// Decide `event` at `now_ms`, apply it, and render what it did.
    fn step(&mut self, event: Event, now_ms: i64) -> String {
        let facts = Facts {
            instance_id: "p-1",
            status: self.status,
            started_ms: 0,
            snapshot: &self.snapshot,
            damage: None,
            timers: &self.timers,
            keys_sent: &self.keys,
        };
        let t = decide(&self.graph, &facts, &event, now_ms);
        self.apply(&t);
        render(&t)
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

    fn timer(&self, purpose: Purpose) -> i64 {
        self.timers
            .iter()
            .find(|t| t.purpose == purpose)
            .expect("a timer of that purpose is armed")
            .id
    }

    fn advance(&mut self, node: &str, now_ms: i64) -> String {
        self.step(Event::Advance { node: node.into() }, now_ms)
    }
}

/// What a transition did, one effect per line.
fn render(t: &Transition) -> String {
    let mut out = Vec::new();
    for e in &t.history {
        out.push(e.line.to_canonical());
    }
    for (k, v) in &t.set {
        out.push(format!("set {k} = {}", canonical_string(v)));
    }
    for k in &t.removed {
        out.push(format!("remove {k}"));
    }
    for a in &t.arm {
        let attempt = a.attempt.map(|n| format!(" #{n}")).unwrap_or_default();
        out.push(format!(
            "arm {} {}{attempt} at {}ms",
            a.purpose.as_str(),
            a.node,
            a.due_ms
        ));
    }
    for r in &t.resolve {
        out.push(format!("resolve timer {r}"));
    }
    for r in &t.calls.emit {
        out.push(format!("emit {} ({})", r.idempotency_key, r.channel));
    }
    for n in &t.calls.withdraw {
        out.push(format!("withdraw undelivered requests of {n}"));
    }
    for a in &t.calls.abandon {
        match &a.node {
            Some(n) => out.push(format!("abandon undelivered requests of {n}: {}", a.reason)),
            None => out.push(format!("abandon every undelivered request: {}", a.reason)),
        }
    }
    for c in &t.calls.outbox {
        out.push(match c {
            OutboxChange::Delivered { id, deliveries } => {
                format!("outbox {id} delivered ({deliveries})")
            }
            OutboxChange::Retry {
                id,
                deliveries,
                next_ms,
            } => format!("outbox {id} retry ({deliveries}) at {next_ms}ms"),
            OutboxChange::Poisoned { id, deliveries } => {
                format!("outbox {id} poisoned ({deliveries})")
            }
        });
    }
    for n in &t.calls.retire {
        out.push(format!("retire correlation of {n}"));
    }
    for i in &t.open_incidents {
        out.push(format!("open incident {} on {}", i.kind, i.node));
    }
    out.push(format!("status {}", t.status.as_str()));
    out.join("\n")
}

fn response(request: &str) -> Event {
    Event::Response {
        node: "auth".into(),
        request: request.into(),
        body: serde_json::json!({"approved": true}),
    }
}

/// Attempt 1 of the call is out: a live attempt (unmarked).
fn live() -> Sim {
    let mut sim = Sim::new(CALL);
    sim.advance("s", 0);
    sim.advance("auth", 0);
    sim
}

/// Attempt 1 timed out: in the backoff window (marked).
fn marked() -> Sim {
    let mut sim = live();
    let timeout = sim.timer(Purpose::Timeout);
    sim.step(Event::TimerDue { timer: timeout }, 30_000);
    sim
}

fn fail(code: &str) -> TaskOutcome {
    TaskOutcome::Fail {
        code: code.into(),
        class: FailureClass::Transient,
        retry_after: None,
        message: None,
    }
}

#[test]
fn unmarked_response_resumes_the_flow() {
    let mut sim = live();
    insta::assert_snapshot!(sim.step(response("p-1/auth/1"), 5_000), @r###"
        {"at_s":5,"body":{"approved":true},"idempotencyKey":"p-1/auth/1","kind":"response","node":"auth","to":["e"],"verdict":"accepted"}
        set frontier = [{"node":"e","state":"ready"}]
        set var.approved = true
        resolve timer 1
        abandon undelivered requests of auth: the call was answered before this request was delivered
        retire correlation of auth
        status running
        "###);
}

#[test]
fn marked_response_is_refused_while_a_retry_is_pending() {
    let mut sim = marked();
    insta::assert_snapshot!(sim.step(response("p-1/auth/1"), 40_000), @r###"
        {"at_s":40,"idempotencyKey":"p-1/auth/1","kind":"response","node":"auth","reason":"that attempt is gone, a retry is pending (the correlation stays live)","verdict":"retry-pending"}
        status waiting
        "###);
}

#[test]
fn unmarked_retry_timer_is_stale_residue() {
    let mut sim = live();
    // A retry timer left over on a live attempt: armed by hand, as a crash
    // between two decisions could leave one.
    sim.timers.push(TimerRow {
        id: 99,
        node: "auth".into(),
        purpose: Purpose::Retry,
        due_ms: 1_000,
        attempt: Some(2),
    });
    insta::assert_snapshot!(sim.step(Event::TimerDue { timer: 99 }, 1_000), @r###"
        {"at_s":1,"event":"timer","kind":"ignored","reason":"stale residue: the attempt is live, no retry is pending"}
        resolve timer 99
        status waiting
        "###);
}

#[test]
fn marked_retry_timer_redrives_with_a_fresh_request_key_and_timeout() {
    let mut sim = marked();
    let retry = sim.timer(Purpose::Retry);
    insta::assert_snapshot!(sim.step(Event::TimerDue { timer: retry }, 90_000), @r###"
        {"at_s":90,"attempt":2,"channel":"bank","idempotencyKey":"p-1/auth/2","incarnation":2,"kind":"attempt","node":"auth","operation":"authorize","redrive":true,"timeout_at_s":120}
        remove backoff.auth
        arm timeout auth #2 at 120000ms
        resolve timer 2
        emit p-1/auth/2 (bank)
        status waiting
        "###);
}

#[test]
fn unmarked_timeout_fails_the_attempt_and_parks_in_one_decision() {
    let mut sim = live();
    let timeout = sim.timer(Purpose::Timeout);
    insta::assert_snapshot!(sim.step(Event::TimerDue { timer: timeout }, 30_000), @r###"
        {"at_s":30,"attempt":1,"code":"q.timeout","delay_s":60,"kind":"call-failed","next_at_s":90,"next_attempt":2,"node":"auth","then":"backoff"}
        set attempts.auth = 1
        set backoff.auth = {"attempt":1,"code":"q.timeout"}
        set first_attempt.auth = 0
        arm retry auth #2 at 90000ms
        resolve timer 1
        withdraw undelivered requests of auth
        status waiting
        "###);
}

#[test]
fn marked_timeout_is_stale_residue() {
    let mut sim = marked();
    sim.timers.push(TimerRow {
        id: 98,
        node: "auth".into(),
        purpose: Purpose::Timeout,
        due_ms: 31_000,
        attempt: Some(1),
    });
    insta::assert_snapshot!(sim.step(Event::TimerDue { timer: 98 }, 31_000), @r###"
        {"at_s":31,"event":"timer","kind":"ignored","reason":"stale residue: the attempt it timed is gone"}
        resolve timer 98
        status waiting
        "###);
}

#[test]
fn unmarked_poison_wake_with_a_poisoned_row_fails_the_attempt() {
    let mut sim = live();
    let wake = Event::PoisonWake {
        node: "auth".into(),
        poisoned: true,
    };
    insta::assert_snapshot!(sim.step(wake, 4_000), @r###"
        {"at_s":4,"attempt":1,"code":"q.delivery.poisoned","delay_s":60,"kind":"call-failed","next_at_s":64,"next_attempt":2,"node":"auth","then":"backoff"}
        set attempts.auth = 1
        set backoff.auth = {"attempt":1,"code":"q.delivery.poisoned"}
        set first_attempt.auth = 0
        arm retry auth #2 at 64000ms
        resolve timer 1
        withdraw undelivered requests of auth
        status waiting
        "###);
}

#[test]
fn unmarked_poison_wake_without_a_poisoned_row_does_nothing() {
    let mut sim = live();
    let wake = Event::PoisonWake {
        node: "auth".into(),
        poisoned: false,
    };
    insta::assert_snapshot!(sim.step(wake, 4_000), @r###"
        {"at_s":4,"event":"poison-wake","kind":"ignored","node":"auth","reason":"no poisoned request of this node: nothing to do"}
        status waiting
        "###);
}

#[test]
fn marked_poison_wake_does_nothing() {
    let mut sim = marked();
    let wake = Event::PoisonWake {
        node: "auth".into(),
        poisoned: true,
    };
    insta::assert_snapshot!(sim.step(wake, 40_000), @r###"
        {"at_s":40,"event":"poison-wake","kind":"ignored","node":"auth","reason":"the node is in a backoff window: nothing to do"}
        status waiting
        "###);
}

#[test]
fn a_failed_delivery_at_the_ceiling_poisons_the_request() {
    let mut sim = live();
    let row = |deliveries| OutboxRow {
        id: 1,
        node: "auth".into(),
        channel: "bank".into(),
        attempt: 1,
        deliveries,
        idempotency_key: "p-1/auth/1".into(),
    };
    let refused = |deliveries| Event::Delivery {
        row: row(deliveries),
        outcome: DeliveryOutcome::Fail("connection refused".into()),
        counterpart: None,
    };
    insta::assert_snapshot!(sim.step(refused(0), 0), @r###"
        {"at_s":0,"attempt":1,"channel":"bank","deliveries":1,"error":"connection refused","idempotencyKey":"p-1/auth/1","kind":"delivery","next_delivery_at_s":2,"node":"auth","outcome":"failed"}
        outbox 1 retry (1) at 2000ms
        status waiting
        "###);
    insta::assert_snapshot!(sim.step(refused(1), 2_000), @r###"
        {"at_s":2,"attempt":1,"channel":"bank","deliveries":2,"error":"connection refused","idempotencyKey":"p-1/auth/1","kind":"delivery","node":"auth","outcome":"failed","poisoned":true}
        outbox 1 poisoned (2)
        open incident poisoned on auth
        status waiting
        "###);
}

#[test]
fn a_failed_task_attempt_parks_on_its_retry_timer_in_one_decision() {
    let mut sim = Sim::new(TASK);
    sim.advance("s", 0);
    let attempt = Event::Attempt {
        node: "charge".into(),
        outcome: fail("PROVIDER_DOWN"),
        timer: None,
    };
    insta::assert_snapshot!(sim.step(attempt, 0), @r###"
        {"at_s":0,"attempt":1,"class":"transient","code":"PROVIDER_DOWN","delay_s":60,"kind":"attempt","next_at_s":60,"next_attempt":2,"node":"charge","outcome":"failed","task":"payments.charge","then":"backoff"}
        set attempts.charge = 1
        set first_attempt.charge = 0
        set frontier = [{"node":"charge","state":"backoff"}]
        arm retry charge #2 at 60000ms
        status waiting
        "###);
}

#[test]
fn the_last_attempt_of_the_budget_fails_the_instance_as_exhausted() {
    let mut sim = Sim::new(TASK);
    sim.advance("s", 0);
    let first = Event::Attempt {
        node: "charge".into(),
        outcome: fail("PROVIDER_DOWN"),
        timer: None,
    };
    sim.step(first, 0);
    let retry = sim.timer(Purpose::Retry);
    let second = Event::Attempt {
        node: "charge".into(),
        outcome: fail("PROVIDER_DOWN"),
        timer: Some(retry),
    };
    insta::assert_snapshot!(sim.step(second, 60_000), @r###"
        {"at_s":60,"attempt":2,"class":"transient","code":"PROVIDER_DOWN","kind":"attempt","node":"charge","outcome":"failed","task":"payments.charge","then":"failed"}
        {"at_s":60,"attempts":2,"code":"PROVIDER_DOWN","kind":"failed","node":"charge","reason":"exhausted"}
        set attempts.charge = 2
        set failure = {"attempts":2,"class":"transient","code":"PROVIDER_DOWN","first_attempt_ms":0,"last_attempt_ms":60000,"node":"charge","reason":"exhausted","task":"payments.charge"}
        resolve timer 1
        abandon every undelivered request: the instance failed at charge: PROVIDER_DOWN (exhausted)
        open incident failed on charge
        status failed
        "###);
}

#[test]
fn the_call_budget_runs_out_on_the_last_timeout() {
    let mut sim = marked();
    for (redrive, timeout) in [(90_000, 120_000), (180_000, 210_000)] {
        let retry = sim.timer(Purpose::Retry);
        sim.step(Event::TimerDue { timer: retry }, redrive);
        let t = sim.timer(Purpose::Timeout);
        if timeout == 210_000 {
            insta::assert_snapshot!(sim.step(Event::TimerDue { timer: t }, timeout), @r###"
                {"at_s":210,"attempt":3,"code":"q.timeout","kind":"call-failed","node":"auth","then":"failed"}
                {"at_s":210,"attempts":3,"code":"q.timeout","kind":"failed","node":"auth","reason":"exhausted"}
                set attempts.auth = 3
                set failure = {"attempts":3,"channel":"bank","class":"transient","code":"q.timeout","first_attempt_ms":0,"last_attempt_ms":180000,"node":"auth","reason":"exhausted"}
                resolve timer 5
                abandon every undelivered request: the instance failed at auth: q.timeout (exhausted)
                open incident failed on auth
                status failed
                "###);
        } else {
            sim.step(Event::TimerDue { timer: t }, timeout);
        }
    }
}
