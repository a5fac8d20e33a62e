//! The embedding API end to end on virtual time, each case on an in-memory
//! SQLite store (as the documented example opens it) and on a fresh
//! PostgreSQL database (`Engine::connect`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::{Delivery, Engine, Resolution, TaskError, EXAMPLE_MODEL};
use crate::runtime::driver::Verdict;
use crate::store::fresh::{on_both_stores, Fresh};

/// A new engine on a new store of `fresh`: in memory for the SQLite case,
/// a fresh database for the PostgreSQL one.
fn new_engine(fresh: &Fresh) -> Engine {
    if fresh.is_postgres() {
        Engine::connect(&fresh.db()).unwrap()
    } else {
        Engine::in_memory().unwrap()
    }
}

const ERROR_BOUNDARY: &str = include_str!("../../../samples/error-boundary.bpmn");
const BANK: &str = include_str!("../../../samples/bank-authorize.bpmn");

on_both_stores!(
    transient_failures_park_and_retry_on_the_policy_then_the_result_is_merged,
    a_permanent_failure_is_terminal_at_once_with_its_code,
    a_rate_limit_waits_the_providers_delay,
    a_panicking_handler_is_an_unknown_outcome_and_the_engine_carries_on,
    a_bpmn_error_routes_to_its_boundary_and_a_missing_handler_fails_permanently,
    a_channel_call_is_relayed_with_its_key_and_answered_by_correlation,
    refused_models_and_bad_variables_are_errors_not_panics,
    an_attempt_whose_process_died_mid_handler_is_an_unknown_outcome_not_a_second_run,
    a_virtual_instance_keeps_its_own_time_under_a_wall_clock_engine,
    serve_takes_decisions_on_the_wall_clock_and_lets_the_caller_answer_between,
    two_serving_engines_of_one_process_respect_each_others_attempts_in_flight,
);

/// (attempt number, seconds since the start) of every attempt line.
fn attempts(engine: &mut Engine, instance: &str) -> Vec<(u32, i64)> {
    let inspection = engine.inspect(instance).unwrap();
    let started = engine
        .store()
        .instance(instance)
        .unwrap()
        .unwrap()
        .started_ms;
    inspection
        .history
        .iter()
        .filter(|h| h.kind == "attempt")
        .map(|h| (h.attempt.unwrap_or(0), (h.at_ms - started) / 1000))
        .collect()
}

fn transient_failures_park_and_retry_on_the_policy_then_the_result_is_merged(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    engine.register("payments.charge", move |task| {
        let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
        assert_eq!(task.attempt, n, "the handler sees the attempt number");
        if n < 3 {
            return Err(TaskError::transient("PROVIDER_DOWN").with_message("503 from the provider"));
        }
        Ok(json!({ "chargeId": "ch_1", "attempts": n }))
    });
    let dep = engine.deploy(EXAMPLE_MODEL).unwrap();
    let id = engine.start(&dep, json!({ "amount": 42 })).unwrap();
    engine.run_until_idle().unwrap();
    assert_eq!(engine.status(&id).unwrap()["status"], "completed");
    let vars = engine.variables(&id).unwrap();
    assert_eq!(vars["chargeId"], "ch_1");
    assert_eq!(vars["amount"], 42);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // The policy's delays, on the instance's own virtual clock: 1 min, 5 min.
    assert_eq!(attempts(&mut engine, &id), vec![(1, 0), (2, 60), (3, 360)]);
}

fn a_permanent_failure_is_terminal_at_once_with_its_code(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    engine.register("payments.charge", |_| {
        Err(TaskError::permanent("INVALID_AMOUNT"))
    });
    let dep = engine.deploy(EXAMPLE_MODEL).unwrap();
    let id = engine.start(&dep, Value::Null).unwrap();
    engine.run_until_idle().unwrap();
    let status = engine.status(&id).unwrap();
    assert_eq!(status["status"], "failed", "{status}");
    assert_eq!(status["code"], "INVALID_AMOUNT");
    assert_eq!(status["reason"], "non-retryable");
    assert_eq!(status["attempts"], 1);
}

fn a_rate_limit_waits_the_providers_delay(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    engine.register("payments.charge", move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(TaskError::rate_limited(
                "TOO_MANY",
                Some(Duration::from_secs(7)),
            ));
        }
        Ok(Value::Null)
    });
    let dep = engine.deploy(EXAMPLE_MODEL).unwrap();
    let id = engine.start(&dep, Value::Null).unwrap();
    engine.run_until_idle().unwrap();
    assert_eq!(engine.status(&id).unwrap()["status"], "completed");
    assert_eq!(attempts(&mut engine, &id), vec![(1, 0), (2, 7)]);
}

fn a_panicking_handler_is_an_unknown_outcome_and_the_engine_carries_on(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    engine.register("payments.charge", move |task| {
        seen.fetch_add(1, Ordering::SeqCst);
        if task.var("amount") == Some(&json!(13)) {
            panic!("unlucky amount");
        }
        Ok(Value::Null)
    });
    let dep = engine.deploy(EXAMPLE_MODEL).unwrap();
    let unlucky = engine.start(&dep, json!({ "amount": 13 })).unwrap();
    let fine = engine.start(&dep, json!({ "amount": 14 })).unwrap();
    engine.run_until_idle().unwrap();
    assert_eq!(engine.status(&fine).unwrap()["status"], "completed");
    let status = engine.status(&unlucky).unwrap();
    assert_eq!(status["status"], "waiting", "{status}");
    assert_eq!(status["for"], "reconciliation", "{status}");
    // Never retried blindly: one run each, however long we drive.
    engine.run_until_idle().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let inspection = engine.inspect(&unlucky).unwrap();
    let failed = inspection
        .history
        .iter()
        .filter(|h| h.kind == "attempt")
        .find_map(|h| h.code.clone());
    assert_eq!(failed.as_deref(), Some(super::PANIC));
    // The operator reconciles: the charge did happen.
    engine
        .resolve(
            &unlucky,
            "charge_card",
            Resolution::Succeeded,
            json!({ "chargeId": "manual" }),
        )
        .unwrap();
    engine.run_until_idle().unwrap();
    assert_eq!(engine.status(&unlucky).unwrap()["status"], "completed");
    assert_eq!(engine.variables(&unlucky).unwrap()["chargeId"], "manual");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

fn a_bpmn_error_routes_to_its_boundary_and_a_missing_handler_fails_permanently(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    engine.register("stock.reserve", |_| Err(TaskError::bpmn("OUT_OF_STOCK")));
    engine.register("stock.backorder", |_| Ok(json!({ "backordered": true })));
    let dep = engine.deploy(ERROR_BOUNDARY).unwrap();
    assert_eq!(
        engine.missing_handlers(&dep).unwrap(),
        vec!["shipping.dispatch"]
    );
    let id = engine.start(&dep, Value::Null).unwrap();
    engine.run_until_idle().unwrap();
    let status = engine.status(&id).unwrap();
    let inspection = engine.inspect(&id).unwrap();
    let nodes: Vec<_> = inspection
        .history
        .iter()
        .filter_map(|h| h.node.clone())
        .collect();
    assert!(nodes.iter().any(|n| n == "backorder"), "{nodes:?}");
    assert!(!nodes.iter().any(|n| n == "ship"), "{nodes:?}");
    assert_ne!(status["status"], "waiting", "{status}");

    // Reserved: the flow goes on to `ship`, which has no handler.
    engine.register("stock.reserve", |_| Ok(Value::Null));
    let id = engine.start(&dep, Value::Null).unwrap();
    engine.run_until_idle().unwrap();
    let status = engine.status(&id).unwrap();
    assert_eq!(status["status"], "failed", "{status}");
    assert_eq!(status["code"], super::MISSING);
}

fn a_channel_call_is_relayed_with_its_key_and_answered_by_correlation(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let sent: Arc<Mutex<Vec<(String, String, Value)>>> = Arc::default();
    let log = sent.clone();
    engine.handlers_mut().relay("bank", move |req| {
        log.lock().unwrap().push((
            req.correlation.to_string(),
            req.idempotency_key.to_string(),
            req.body.clone(),
        ));
        Delivery::Delivered
    });
    let dep = engine.deploy(BANK).unwrap();
    let id = engine.start(&dep, json!({ "amount": 5 })).unwrap();
    engine.run_until_idle().unwrap();
    let status = engine.status(&id).unwrap();
    // Virtual time: the silent bank's timeouts burn every attempt.
    assert_eq!(status["status"], "failed", "{status}");
    assert_eq!(status["code"], "q.timeout");
    let keys: Vec<String> = sent.lock().unwrap().iter().map(|s| s.1.clone()).collect();
    assert_eq!(keys.len(), 4, "one request per attempt: {keys:?}");
    let mut unique = keys.clone();
    unique.dedup();
    assert_eq!(unique, keys, "a fresh key per attempt");
    assert_eq!(sent.lock().unwrap()[0].2, json!({ "amount": 5 }));
    // The honest verdict for a FAILED instance.
    let correlation = sent.lock().unwrap()[0].0.clone();
    assert_eq!(
        engine.respond(&correlation, None, json!({})).unwrap(),
        Verdict::Failed
    );

    // Answered in time: accepted, and the gateway routes on the body.
    let id = engine.start(&dep, json!({ "amount": 6 })).unwrap();
    engine.step().unwrap(); // the start's advance
    while engine.status(&id).unwrap()["status"] == "running" {
        engine.step().unwrap();
    }
    engine.step().unwrap(); // the delivery
    let (correlation, key, _) = sent.lock().unwrap().last().cloned().unwrap();
    assert_eq!(correlation, format!("{id}/authorize"));
    assert_eq!(
        engine
            .respond(&correlation, Some(&key), json!({ "approved": true }))
            .unwrap(),
        Verdict::Accepted
    );
    engine.run_until_idle().unwrap();
    assert_eq!(engine.status(&id).unwrap()["status"], "completed");
    assert_eq!(
        engine.respond("nobody/authorize", None, json!({})).unwrap(),
        Verdict::NoSuchInstance
    );
}

fn refused_models_and_bad_variables_are_errors_not_panics(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let broken = EXAMPLE_MODEL.replace("maxAttempts=\"4\"", "");
    match engine.deploy(&broken) {
        Err(super::EngineError::Refused(d)) => {
            assert!(d.iter().any(|d| d.code.as_str() == "QF012"), "{d:?}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let dep = engine.deploy(EXAMPLE_MODEL).unwrap();
    assert!(matches!(
        engine.start(&dep, json!([1])),
        Err(super::EngineError::NotAnObject(_))
    ));
    assert!(matches!(
        engine.status("p-404"),
        Err(super::EngineError::NoInstance(_))
    ));
}

fn an_attempt_whose_process_died_mid_handler_is_an_unknown_outcome_not_a_second_run(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    engine.register("payments.charge", move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
        Ok(Value::Null)
    });
    let dep = engine.deploy(EXAMPLE_MODEL).unwrap();
    let done = engine.start(&dep, Value::Null).unwrap();
    engine.run_until_idle().unwrap();
    assert_eq!(engine.status(&done).unwrap()["status"], "completed");
    // A completed attempt leaves no record open.
    let open = |e: &Engine, id: &str| {
        e.store()
            .incidents(id)
            .unwrap()
            .into_iter()
            .filter(|i| i.kind == crate::store::inflight::KIND && i.closed_ms.is_none())
            .count()
    };
    assert_eq!(open(&engine, &done), 0);

    // What a process killed inside the handler leaves behind: the record of
    // attempt 1, started from the instance's version as it still stands.
    let mut engine = new_engine(fresh);
    let calls2 = calls.clone();
    engine.register("payments.charge", move |_| {
        calls2.fetch_add(1, Ordering::SeqCst);
        Ok(Value::Null)
    });
    let dep = engine.deploy(EXAMPLE_MODEL).unwrap();
    let id = engine.start(&dep, Value::Null).unwrap();
    let version = engine.store().instance(&id).unwrap().unwrap().version;
    engine
        .store()
        .open_in_flight(&id, "charge_card", 1, version, 0, 0)
        .unwrap();
    let before = calls.load(Ordering::SeqCst);
    engine.run_until_idle().unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        before,
        "the handler is not run again"
    );
    let status = engine.status(&id).unwrap();
    assert_eq!(status["for"], "reconciliation", "{status}");
    assert_eq!(status["code"], crate::handlers::INTERRUPTED);
    assert_eq!(
        open(&engine, &id),
        0,
        "the record is closed by the decision"
    );
    // Reconciled as "retry": the handler runs once more, knowingly.
    engine
        .resolve(&id, "charge_card", Resolution::Retry, Value::Null)
        .unwrap();
    engine.run_until_idle().unwrap();
    assert_eq!(engine.status(&id).unwrap()["status"], "completed");
    assert_eq!(calls.load(Ordering::SeqCst), before + 1);
}

fn a_virtual_instance_keeps_its_own_time_under_a_wall_clock_engine(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    engine.register("payments.charge", move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(TaskError::transient("DOWN"));
        }
        Ok(Value::Null)
    });
    let dep = engine.deploy(EXAMPLE_MODEL).unwrap();
    let id = engine.start(&dep, Value::Null).unwrap();
    // The first attempt parks the instance for 1 min on its virtual clock.
    engine.step().unwrap().unwrap();
    assert_eq!(engine.status(&id).unwrap()["for"], "retry");
    engine.set_time(super::Time::System);
    engine.run_until_idle().unwrap();
    assert_eq!(engine.status(&id).unwrap()["status"], "completed");
    assert_eq!(attempts(&mut engine, &id), vec![(1, 0), (2, 60)]);
}

fn serve_takes_decisions_on_the_wall_clock_and_lets_the_caller_answer_between(fresh: &Fresh) {
    let mut engine = new_engine(fresh);
    let requests: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let log = requests.clone();
    engine.handlers_mut().relay("bank", move |req| {
        log.lock()
            .unwrap()
            .push((req.correlation.to_string(), req.idempotency_key.to_string()));
        Delivery::Delivered
    });
    let dep = engine.deploy(BANK).unwrap();
    engine.set_time(super::Time::System);
    let id = engine.start(&dep, json!({})).unwrap();
    let started = std::time::Instant::now();
    let mut verdicts = Vec::new();
    engine
        .serve(Duration::from_millis(5), |e| {
            // The counterpart answers as soon as the request is out.
            if let Some((c, k)) = requests.lock().unwrap().pop() {
                verdicts.push(e.respond(&c, Some(&k), json!({"approved": true})).unwrap());
            }
            e.status(&id).unwrap()["status"] != "completed"
                && started.elapsed() < Duration::from_secs(10)
        })
        .unwrap();
    assert_eq!(verdicts, vec![Verdict::Accepted]);
    assert_eq!(engine.status(&id).unwrap()["status"], "completed");
}

/// Two engines of one process serving one database (as a library user
/// runs replicas as threads): each takes claims and runs attempts under a
/// name of its own, so neither takes the other's attempt running on a lane
/// for one a dead process left (which would decide it as an unknown
/// outcome), nor starts a second attempt of it.
fn two_serving_engines_of_one_process_respect_each_others_attempts_in_flight(fresh: &Fresh) {
    const INSTANCES: usize = 12;
    let location = fresh.db();
    let runs: Arc<Mutex<std::collections::BTreeMap<String, u32>>> = Arc::default();
    let engine = |runs: Arc<Mutex<std::collections::BTreeMap<String, u32>>>| {
        let mut e = Engine::connect(&location).unwrap();
        e.register("payments.charge", move |task| {
            *runs
                .lock()
                .unwrap()
                .entry(task.instance.to_string())
                .or_default() += 1;
            // Long enough for the other engine to look at the instance
            // while this attempt runs.
            std::thread::sleep(Duration::from_millis(300));
            Ok(json!({ "chargeId": "ch" }))
        });
        e.set_time(super::Time::System);
        e
    };
    let mut first = engine(runs.clone());
    let second = engine(runs.clone());
    assert_ne!(
        first.owner, second.owner,
        "each engine has a name of its own"
    );
    let dep = first.deploy(EXAMPLE_MODEL).unwrap();
    let ids: Vec<String> = (0..INSTANCES)
        .map(|n| first.start(&dep, json!({ "amount": n })).unwrap())
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let serve = move |mut e: Engine, ids: Vec<String>| {
        std::thread::spawn(move || {
            e.serve(Duration::from_millis(5), |e| {
                std::time::Instant::now() < deadline
                    && ids
                        .iter()
                        .any(|id| e.status(id).unwrap()["status"] != "completed")
            })
            .unwrap();
            e
        })
    };
    let a = serve(first, ids.clone());
    let b = serve(second, ids.clone());
    let mut first = a.join().unwrap();
    b.join().unwrap();
    for id in &ids {
        let state = first.status(id).unwrap();
        assert_eq!(state["status"], "completed", "{id}: {state}");
        let inspection = first.inspect(id).unwrap();
        let interrupted: Vec<_> = inspection
            .history
            .iter()
            .filter(|h| format!("{h:?}").contains("interrupted"))
            .collect();
        assert!(interrupted.is_empty(), "{id}: {interrupted:?}");
    }
    let runs = runs.lock().unwrap();
    assert_eq!(runs.len(), INSTANCES);
    assert!(
        runs.values().all(|&n| n == 1),
        "each attempt ran once: {runs:?}"
    );
}

/// The library on PostgreSQL: `Engine::connect` with a URL runs the
/// documented example to the same end as in memory.
#[test]
fn the_engine_as_a_library_runs_on_postgres() {
    use crate::embed::{Engine, TaskError};
    use crate::store::{pg, Location};
    let Some(server) = pg::test_server("the library on PostgreSQL") else {
        return;
    };
    let name = format!("qflow_unit_embed_{}", std::process::id());
    let url = pg::scratch_database(&server, &name).unwrap();
    let mut engine = Engine::connect(&Location::parse(&url).unwrap()).unwrap();
    engine.register("payments.charge", |task| {
        let amount = task.var("amount").and_then(|a| a.as_i64()).unwrap_or(0);
        if amount <= 0 {
            return Err(TaskError::permanent("INVALID_AMOUNT"));
        }
        Ok(serde_json::json!({ "chargeId": format!("ch_{amount}") }))
    });
    let deployment = engine.deploy(crate::embed::EXAMPLE_MODEL).unwrap();
    let instance = engine
        .start(&deployment, serde_json::json!({ "amount": 42 }))
        .unwrap();
    engine.run_until_idle().unwrap();
    assert_eq!(engine.status(&instance).unwrap()["status"], "completed");
    assert_eq!(engine.variables(&instance).unwrap()["chargeId"], "ch_42");
}
