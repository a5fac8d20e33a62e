//! The worst case the hover shows is the run an always-failing instance makes.
//!
//! On random policies (list and curve backoffs, `maxDelay`, `maxAttempts`,
//! `maxElapsed`, every jitter mode) on a registered task whose handler always
//! fails, on a channel call whose counterpart never answers (each attempt
//! lasting its `<q:timeout>`) and on a call whose every delivery fails (each
//! attempt ending when the outbox poisons its request, `maxDeliveries` and
//! `deliveryInterval` drawn too, or at its timeout if that comes first), a
//! real run on the engine and the store makes
//! exactly the attempts the node's worst case lists, at those times, and
//! fails when and why it says. With jitter the times fall in the ranges the
//! hover prints and the count stays within its bound. A drawn
//! `nonRetryableCodes` that names the failure's codes (a task's own, or a
//! call's `q.timeout` and `q.delivery.poisoned`) ends the run after its first
//! attempt, `non-retryable`; one naming other codes changes nothing. Each run keeps its
//! instance in a new database: 48 random policies on SQLite files, 16 on
//! PostgreSQL databases (one `CREATE DATABASE` each).

use qflow_engine::local::LocalRunExt;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use qflow_engine::policy::{attempt_window, RetryPolicy, StopReason};
use qflow_engine::runtime::driver::LocalRun;
use qflow_engine::runtime::scenario::Scenario;
use qflow_engine::runtime::VirtualClock;
use serde_json::Value;

mod support;
use support::stores::{open, Fresh};

#[derive(Debug, Clone)]
struct Case {
    call: Option<u64>,
    /// A `<q:channelConfig>` (maxDeliveries, deliveryInterval s) whose every
    /// delivery fails: attempts end poisoned.
    poison: Option<(u32, u64)>,
    backoff: String,
    max_attempts: Option<u32>,
    max_elapsed: Option<u64>,
    max_delay: Option<u64>,
    jitter: &'static str,
    /// `nonRetryableCodes`, drawn: `Some(true)` names the code every
    /// attempt fails with (the run then ends after its first attempt,
    /// `non-retryable`); `Some(false)` names only other codes (the list
    /// changes nothing).
    non_retryable: Option<bool>,
}

impl Case {
    fn retry(&self) -> String {
        let mut r = format!("<q:retry {} jitter=\"{}\"", self.backoff, self.jitter);
        if let Some(m) = self.max_attempts {
            r.push_str(&format!(" maxAttempts=\"{m}\""));
        }
        if let Some(e) = self.max_elapsed {
            r.push_str(&format!(" maxElapsed=\"PT{e}S\""));
        }
        if let Some(d) = self.max_delay {
            r.push_str(&format!(" maxDelay=\"PT{d}S\""));
        }
        match self.non_retryable {
            Some(true) => r.push_str(&format!(
                " nonRetryableCodes=\"BAD_INPUT {}\"",
                self.failure_codes().join(" ")
            )),
            Some(false) => r.push_str(" nonRetryableCodes=\"BAD_INPUT CARD_DECLINED\""),
            None => {}
        }
        r.push_str("/>");
        r
    }

    fn model(&self) -> String {
        let task = match self.call {
            Some(t) => format!(
                r#"<bpmn:serviceTask id="t" q:channel="bank"><bpmn:extensionElements><q:timeout duration="PT{t}S"/>{}</bpmn:extensionElements></bpmn:serviceTask>"#,
                self.retry()
            ),
            None => format!(
                r#"<bpmn:serviceTask id="t" q:task="x.y"><bpmn:extensionElements>{}</bpmn:extensionElements></bpmn:serviceTask>"#,
                self.retry()
            ),
        };
        let config = match (self.call, self.poison) {
            (Some(_), Some((m, i))) => format!(
                r#"<q:channelConfig channel="bank" maxDeliveries="{m}" deliveryInterval="PT{i}S"/>"#
            ),
            _ => String::new(),
        };
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="defs">
  {config}
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    {task}
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#
        )
    }

    /// The codes an attempt can fail with: a call whose deliveries fail
    /// ends at its timeout or when its request is poisoned, whichever
    /// comes first.
    fn failure_codes(&self) -> &'static [&'static str] {
        match (self.call, self.poison) {
            (Some(_), Some(_)) => &["q.timeout", "q.delivery.poisoned"],
            (Some(_), None) => &["q.timeout"],
            (None, _) => &["DOWN"],
        }
    }

    fn scenario(&self) -> &'static str {
        match (self.call, self.poison) {
            (Some(_), Some(_)) => r#"{"deliveries":{"bank":[{"fail":"down"}]}}"#,
            (Some(_), None) => r#"{"channels":{"bank":[{"silent":true}]}}"#,
            (None, _) => r#"{"tasks":{"x.y":[{"fail":{"code":"DOWN","class":"transient"}}]}}"#,
        }
    }
}

fn case() -> impl Strategy<Value = Case> {
    let list = prop::collection::vec(1u64..=600, 1..=4).prop_map(|ds| {
        let ds: Vec<String> = ds.iter().map(|d| format!("PT{d}S")).collect();
        format!("backoff=\"{}\"", ds.join(" "))
    });
    let curve = (
        1u64..=120,
        prop::sample::select(vec!["1", "1.5", "2", "3", "5"]),
    )
        .prop_map(|(i, f)| format!("initial=\"PT{i}S\" factor=\"{f}\""));
    (
        prop::option::weighted(0.6, 1u64..=600),
        prop::option::weighted(0.5, (1u32..=6, 1u64..=120)),
        prop_oneof![list, curve],
        prop::option::weighted(0.8, 1u32..=8),
        prop::option::weighted(0.5, 60u64..=7_200),
        prop::option::weighted(0.3, 30u64..=3_600),
        prop::sample::select(vec!["none", "full", "equal"]),
        prop::option::weighted(0.4, any::<bool>()),
    )
        .prop_map(
            |(
                call,
                poison,
                backoff,
                max_attempts,
                max_elapsed,
                max_delay,
                jitter,
                non_retryable,
            )| Case {
                call,
                poison,
                backoff,
                // A policy needs a bound (QF012).
                max_attempts: if max_elapsed.is_none() {
                    max_attempts.or(Some(3))
                } else {
                    max_attempts
                },
                max_elapsed,
                max_delay,
                jitter,
                non_retryable,
            },
        )
}

/// Run the model until nothing is left: the attempt lines `(n, at ms)`, the
/// final state and the time of the last decision.
fn run(fresh: &Fresh, source: &str, scenario: &str) -> (Vec<(u32, i64)>, Value, i64) {
    let defs = qflow_engine::load(source).unwrap_or_else(|d| panic!("model loads: {d:?}"));
    let store = open(&fresh.db());
    let scenario = Scenario::parse(scenario).unwrap();
    let mut run = LocalRun::open(store, source, &defs, scenario, VirtualClock::new(0)).unwrap();
    let (mut attempts, mut last) = (Vec::new(), 0);
    run.run(|d| {
        last = d.at_ms;
        for l in &d.lines {
            if l["kind"] == "attempt" {
                attempts.push((l["attempt"].as_u64().unwrap() as u32, d.at_ms));
            }
        }
    })
    .unwrap();
    (attempts, run.final_state().unwrap().to_json(), last)
}

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

crate::on_both_stores!(an_always_failing_run_makes_the_attempts_the_hover_shows);

fn an_always_failing_run_makes_the_attempts_the_hover_shows(fresh: &Fresh) {
    let cases = if fresh.is_postgres() { 16 } else { 48 };
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    if let Err(e) = runner.run(&case(), |c| the_run_makes_the_worst_case(fresh, &c)) {
        panic!("{e}");
    }
}

fn the_run_makes_the_worst_case(fresh: &Fresh, c: &Case) -> Result<(), TestCaseError> {
    let source = c.model();
    let defs = qflow_engine::load(&source).unwrap_or_else(|d| panic!("{source}\n{d:?}"));
    let node = defs.processes[0].node("t").unwrap();
    let policy = RetryPolicy::from_spec(&node.retries[0]).unwrap();
    let wc = policy.worst_case(attempt_window(&defs, node, &policy));
    // Keep each run short: the listing is complete and small.
    prop_assume!(wc.complete && wc.count.is_some_and(|n| n <= 40));
    let (attempts, last, failed_at) = run(fresh, &source, c.scenario());
    prop_assert_eq!(&last["status"], "failed", "{}", last);
    if c.non_retryable == Some(true) {
        // The code is named: the first attempt's failure ends the task,
        // with no retry parked, at the instant that attempt failed.
        prop_assert_eq!(attempts.len(), 1, "{:?}", attempts);
        prop_assert_eq!(&last["reason"], "non-retryable", "{}", last);
        prop_assert!(
            c.failure_codes().iter().any(|code| last["code"] == *code),
            "{}",
            last
        );
        let first_ends = wc
            .attempts
            .get(1)
            .map(|a| ms(a.since_first))
            .unwrap_or(failed_at);
        prop_assert!(
            failed_at <= first_ends,
            "failed at {failed_at}, after the second attempt's time {first_ends}"
        );
        return Ok(());
    }
    let made = attempts.len() as u64;
    let numbers: Vec<u32> = attempts.iter().map(|a| a.0).collect();
    prop_assert_eq!(numbers, (1..=made as u32).collect::<Vec<_>>());
    prop_assert_eq!(last["attempts"].as_u64(), Some(made));
    if c.jitter == "none" {
        let planned: Vec<(u32, i64)> = wc
            .attempts
            .iter()
            .map(|a| (a.attempt, ms(a.since_first)))
            .collect();
        prop_assert_eq!(&attempts, &planned);
        prop_assert_eq!(Some(made), wc.count);
        prop_assert_eq!(Some(failed_at), wc.fails_by.map(ms));
        let reason = match wc.stop {
            Some(StopReason::Exhausted) => "exhausted",
            Some(StopReason::Expired) => "expired",
            other => panic!("{other:?}"),
        };
        prop_assert_eq!(&last["reason"], reason);
    } else {
        // Jitter only shortens delays: at least the nominal attempts, at
        // most the bound, each in its printed range, failing by the bound.
        prop_assert!(made >= wc.attempts.len() as u64);
        prop_assert!(wc.count.is_some_and(|n| made <= n));
        for ((_, at), a) in attempts.iter().zip(&wc.attempts) {
            prop_assert!(
                *at >= ms(a.since_first_min) && *at <= ms(a.since_first_max),
                "attempt {} at {} outside {:?}..{:?}",
                a.attempt,
                at,
                a.since_first_min,
                a.since_first_max
            );
        }
        prop_assert!(wc.fails_by.is_some_and(|f| failed_at <= ms(f)));
    }
    Ok(())
}
