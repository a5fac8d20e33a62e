//! [`Engine::serve`] with lanes, on the wall clock, on an in-memory SQLite
//! store and on a fresh PostgreSQL database. No test asserts how fast
//! anything is: each asserts an ordering (what was decided while what was
//! still running) or a decision (its verdict, its code, the row it left);
//! the timing figures are the `serve_lanes` benchmark's.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Delivery, Engine, TaskError, Time};
use crate::runtime::driver::Verdict;
use crate::store::contain::{Actor, PauseKind};
use crate::store::fresh::{on_both_stores, Fresh};

fn new_engine(fresh: &Fresh) -> Engine {
    let mut e = if fresh.is_postgres() {
        Engine::connect(&fresh.db()).unwrap()
    } else {
        Engine::in_memory().unwrap()
    };
    e.set_time(Time::System);
    e
}

fn task_model(process: &str, task: &str, retry: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <process id="{process}" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
    <serviceTask id="work" name="Work" q:task="{task}">
      <extensionElements>{retry}</extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="work" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>
"#
    )
}

fn call_model(timeout: &str, deliveries: u32, interval: &str, retry: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <q:channelConfig channel="bank" maxDeliveries="{deliveries}" deliveryInterval="{interval}"/>
  <process id="pay" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="authorize"/>
    <serviceTask id="authorize" name="Authorize" q:channel="bank">
      <extensionElements>
        <q:timeout duration="{timeout}"/>{retry}
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="authorize" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>
"#
    )
}

/// Serve until `done` says so, at most 20 s (a safety net, not an assertion).
fn serve_until(engine: &mut Engine, mut done: impl FnMut(&mut Engine) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    engine
        .serve(Duration::from_millis(20), |e| {
            !done(e) && Instant::now() < deadline
        })
        .unwrap();
}

fn status(e: &mut Engine, id: &str) -> String {
    e.status(id).unwrap()["status"]
        .as_str()
        .unwrap()
        .to_string()
}

on_both_stores!(
    a_slow_handler_does_not_delay_another_instances_retry,
    a_dependency_bound_is_a_bulkhead_and_others_keep_their_lanes,
    an_answer_sent_after_the_timeout_was_due_is_refused,
    a_rejected_delivery_poisons_the_request_at_once_with_its_status_kept,
    a_retry_after_at_delivery_delays_the_next_delivery,
    a_paused_dependency_gets_no_request_of_any_kind_until_unpaused,
);

/// One instance's handler hangs until released; meanwhile another
/// instance fails, parks for 1 s, and its retry is decided and completes
/// it. Only then is the slow handler released.
fn a_slow_handler_does_not_delay_another_instances_retry(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let (release, hold) = mpsc::channel::<()>();
    let hold = Mutex::new(hold);
    let released = Arc::new(AtomicBool::new(false));
    let r = released.clone();
    engine.register("slow.op", move |_| {
        hold.lock().unwrap().recv().unwrap();
        r.store(true, Ordering::SeqCst);
        Ok(json!({}))
    });
    let runs = Arc::new(AtomicU32::new(0));
    let n = runs.clone();
    engine.register("flaky.op", move |_| {
        if n.fetch_add(1, Ordering::SeqCst) == 0 {
            Err(TaskError::transient("DOWN"))
        } else {
            Ok(json!({}))
        }
    });
    let slow = engine.deploy(&task_model("slow", "slow.op", "")).unwrap();
    let flaky = engine
        .deploy(&task_model(
            "flaky",
            "flaky.op",
            r#"<q:retry maxAttempts="3" backoff="PT1S" jitter="none"/>"#,
        ))
        .unwrap();
    let s = engine.start(&slow, json!({})).unwrap();
    let f = engine.start(&flaky, json!({})).unwrap();
    let mut flaky_done_while_slow_ran = None;
    serve_until(&mut engine, |e| {
        if flaky_done_while_slow_ran.is_none() && status(e, &f) == "completed" {
            flaky_done_while_slow_ran = Some(!released.load(Ordering::SeqCst));
            release.send(()).unwrap();
        }
        status(e, &s) == "completed"
    });
    assert_eq!(
        flaky_done_while_slow_ran,
        Some(true),
        "the retry was decided while the slow attempt was still running"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(status(&mut engine, &s), "completed");
}

/// `concurrency` on a dependency bounds its attempts in flight; another
/// dependency's attempts still run beside them.
fn a_dependency_bound_is_a_bulkhead_and_others_keep_their_lanes(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let gauge = |now: Arc<AtomicUsize>, max: Arc<AtomicUsize>| {
        move |_: &super::Task<'_>| {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(150));
            now.fetch_sub(1, Ordering::SeqCst);
            Ok(json!({}))
        }
    };
    let (a_now, a_max) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (b_now, b_max) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    engine.register("a.op", gauge(a_now, a_max.clone()));
    engine.register("b.op", gauge(b_now, b_max.clone()));
    engine.handlers_mut().concurrency("a.op", 1);
    engine.set_concurrency(8);
    let a = engine.deploy(&task_model("a", "a.op", "")).unwrap();
    let b = engine.deploy(&task_model("b", "b.op", "")).unwrap();
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(engine.start(&a, json!({})).unwrap());
        ids.push(engine.start(&b, json!({})).unwrap());
    }
    serve_until(&mut engine, |e| {
        ids.iter().all(|id| status(e, id) == "completed")
    });
    assert!(ids.iter().all(|id| status(&mut engine, id) == "completed"));
    assert_eq!(a_max.load(Ordering::SeqCst), 1, "a.op's bound of one");
    assert!(
        b_max.load(Ordering::SeqCst) >= 2,
        "b.op's attempts ran side by side: {}",
        b_max.load(Ordering::SeqCst)
    );
}

/// A counterpart's answer sent after the call's timeout was due is
/// decided after the timeout (the decision table: the timeout wins), even
/// though no loop decided the timeout before the answer came.
fn an_answer_sent_after_the_timeout_was_due_is_refused(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let sent: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let log = sent.clone();
    engine.handlers_mut().relay("bank", move |req| {
        log.lock()
            .unwrap()
            .push((req.correlation.to_string(), req.idempotency_key.to_string()));
        Delivery::Delivered
    });
    let dep = engine.deploy(&call_model("PT0.3S", 3, "PT1S", "")).unwrap();
    let id = engine.start(&dep, json!({})).unwrap();
    // Emit and deliver the request; the timeout is not due yet.
    let t0 = Instant::now();
    while sent.lock().unwrap().is_empty() {
        engine.step().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(10));
    }
    // The answer comes after the timeout is due, before anything decided it.
    std::thread::sleep(Duration::from_millis(400));
    let (c, k) = sent.lock().unwrap()[0].clone();
    let verdict = engine.respond(&c, Some(&k), json!({"ok": true})).unwrap();
    assert_eq!(
        verdict,
        Verdict::Failed,
        "the timeout won: no policy, FAILED"
    );
    let st = engine.status(&id).unwrap();
    assert_eq!(st["code"], "q.timeout", "{st}");
}

/// A 4xx at delivery is a rejection: one delivery, poisoned at once, the
/// call failed `q.delivery.poisoned`, the status kept on the outbox row.
fn a_rejected_delivery_poisons_the_request_at_once_with_its_status_kept(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let tries = Arc::new(AtomicU32::new(0));
    let t = tries.clone();
    engine.handlers_mut().relay("bank", move |_| {
        t.fetch_add(1, Ordering::SeqCst);
        Delivery::Rejected("http://bank answered HTTP 422: {\"error\":\"bad iban\"}".into())
    });
    let dep = engine
        .deploy(&call_model("PT30S", 5, "PT0.1S", ""))
        .unwrap();
    let id = engine.start(&dep, json!({})).unwrap();
    serve_until(&mut engine, |e| status(e, &id) == "failed");
    assert_eq!(tries.load(Ordering::SeqCst), 1, "never sent again");
    let st = engine.status(&id).unwrap();
    assert_eq!(st["code"], "q.delivery.poisoned", "{st}");
    let inspection = engine.inspect(&id).unwrap();
    let row = inspection.outbox.first().expect("the outbox row is kept");
    // Poisoned, then abandoned by the fatal path: the reason says both.
    assert!(row.state.is_undeliverable(), "{row:?}");
    let reason = row.reason.clone().unwrap_or_default();
    assert!(reason.contains("HTTP 422"), "{reason}");
    assert!(reason.contains("bad iban"), "{reason}");
}

/// `Retry-After` at delivery: the next delivery is no sooner than asked
/// (capped), not on the channel's 100 ms curve.
fn a_retry_after_at_delivery_delays_the_next_delivery(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let tries = Arc::new(AtomicU32::new(0));
    let t = tries.clone();
    engine.handlers_mut().relay("bank", move |_| {
        t.fetch_add(1, Ordering::SeqCst);
        Delivery::RetryAfter(
            "http://bank answered HTTP 503".into(),
            Duration::from_secs(60),
        )
    });
    let dep = engine
        .deploy(&call_model("PT120S", 5, "PT0.1S", ""))
        .unwrap();
    let id = engine.start(&dep, json!({})).unwrap();
    let before = crate::runtime::clock::system_now_ms();
    serve_until(&mut engine, |_| tries.load(Ordering::SeqCst) >= 1);
    // A few more rounds: on the channel's curve there would be more tries.
    let rounds = Instant::now();
    serve_until(&mut engine, |_| {
        rounds.elapsed() > Duration::from_millis(400)
    });
    assert_eq!(tries.load(Ordering::SeqCst), 1);
    let (_, next) = engine.store().pending_requests(&id).unwrap()[0].clone();
    assert!(
        next >= before + 60_000,
        "the next delivery waits the asked 60 s: {} ms",
        next - before
    );
}

/// Paused, a dependency receives nothing: no first attempt of a task, no
/// delivery of a channel. Unpaused, both go out.
fn a_paused_dependency_gets_no_request_of_any_kind_until_unpaused(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let runs = Arc::new(AtomicU32::new(0));
    let n = runs.clone();
    engine.register("payments.charge", move |_| {
        n.fetch_add(1, Ordering::SeqCst);
        Ok(json!({}))
    });
    let sent = Arc::new(AtomicU32::new(0));
    let s = sent.clone();
    engine.handlers_mut().relay("bank", move |_| {
        s.fetch_add(1, Ordering::SeqCst);
        Delivery::Delivered
    });
    let actor = Actor::new("test");
    let wall = crate::runtime::clock::system_now_ms();
    for dep in ["payments.charge", "bank"] {
        engine
            .store
            .pause(PauseKind::Dependency, dep, wall, &actor)
            .unwrap();
    }
    let task = engine
        .deploy(&task_model("charge", "payments.charge", ""))
        .unwrap();
    let call = engine
        .deploy(&call_model("PT60S", 3, "PT0.1S", ""))
        .unwrap();
    let t = engine.start(&task, json!({})).unwrap();
    let c = engine.start(&call, json!({})).unwrap();
    let rounds = Instant::now();
    serve_until(&mut engine, |_| {
        rounds.elapsed() > Duration::from_millis(500)
    });
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "no first attempt while paused"
    );
    assert_eq!(sent.load(Ordering::SeqCst), 0, "no delivery while paused");
    let wall = crate::runtime::clock::system_now_ms();
    for dep in ["payments.charge", "bank"] {
        engine
            .store
            .unpause(PauseKind::Dependency, dep, wall, &actor)
            .unwrap();
    }
    serve_until(&mut engine, |e| {
        status(e, &t) == "completed" && sent.load(Ordering::SeqCst) > 0
    });
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    assert_eq!(status(&mut engine, &c), "waiting");
}
