//! `qflow project`: the seed's arithmetic, from the engine's schedule, for
//! the DBG-08 policy and the old unbounded loop; and a projection that
//! agrees with a simulation of the same jobs.

use serde_json::{json, Value};

const DBG08: &str = "samples/dbg08-long-outage.bpmn";

mod support;
use support::qflow_here as qflow;

fn project(args: &[&str]) -> Value {
    let mut all = vec!["project"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let (code, out, err) = qflow(&all);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(out.trim()).expect("one JSON object")
}

#[test]
fn dbg08_for_50000_jobs_schedules_300000_attempts_and_the_old_loop_72_million_a_day() {
    let v = project(&[DBG08, "--jobs", "50000"]);
    assert_eq!(v["label"], "scheduled opportunities, not observed requests");
    assert_eq!(v["outage_s"], 86_400.0);
    let p = &v["policies"][0];
    assert_eq!(v["policies"].as_array().unwrap().len(), 1);
    assert_eq!(p["node"], "charge");
    assert_eq!(p["dependency"], "payments.charge");
    assert_eq!(p["attempts_per_instance"], 6);
    assert_eq!(p["worst_case_s"], 46_860);
    assert_eq!(p["stop"], "exhausted");
    assert_eq!(p["starts_s"], json!([0, 60, 360, 1860, 9360, 46860]));
    assert_eq!(p["scheduled"], 300_000);
    assert_eq!(p["given_up"], 50_000);
    assert_eq!(p["after_outage"], 0);
    assert_eq!(
        p["peak_per_minute"],
        json!({"minute": 0, "attempts": 50_000})
    );
    // The policy has no jitter: the jittered figure says what full jitter
    // would do, and says it is not the policy's own.
    assert_eq!(p["jittered"]["jitter"], "full");
    assert_eq!(p["jittered"]["policy_own"], false);

    let old = &v["unbounded_loop"];
    assert_eq!(old["scheduled"], 72_000_000);
    assert_eq!(old["per_day"], 72_000_000);
    assert_eq!(old["scheduled_per_instance"], 1_440);
    assert_eq!(old["attempts_per_instance"], Value::Null);
    assert_eq!(old["worst_case_s"], Value::Null);
    assert_eq!(old["peak_per_minute"]["attempts"], 50_000);

    let (code, out, _) = qflow(&["project", DBG08, "--jobs", "50000"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("scheduled opportunities, not observed requests"),
        "{out}"
    );
    assert!(out.contains("300,000 scheduled attempts"), "{out}");
    assert!(out.contains("46,860 s"), "{out}");
    assert!(out.contains("72,000,000 scheduled attempts"), "{out}");
}

/// The projection's totals are what a simulation of the same jobs runs.
#[test]
fn a_two_hour_outage_projects_what_the_simulation_executes() {
    let v = project(&[DBG08, "--jobs", "30", "--outage", "PT2H"]);
    let p = &v["policies"][0];
    assert_eq!(p["scheduled_per_instance"], 4);
    assert_eq!(p["scheduled"], 120);
    assert_eq!(p["after_outage"], 30);
    assert_eq!(v["unbounded_loop"]["scheduled"], 30 * 120);

    let (code, out, err) = qflow(&[
        "simulate", DBG08, "--jobs", "30", "--outage", "PT2H", "--format", "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let sim: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(sim["attempts"], 120 + 30);
    assert_eq!(sim["completed"], 30);
}

/// A call whose deliveries poison before its timeout fires (3 deliveries
/// 5 s apart: poisoned at 10 s, within the 30 s timeout) fails each attempt
/// at the poisoning: `project` schedules what `simulate` and a local run do
/// with every delivery failing (0, 70, 380, 1,890, 9,100 s), not the
/// timeout's timetable (0, 90, 420, 1,950, 9,180 s).
#[test]
fn a_call_whose_deliveries_poison_first_is_projected_at_its_poisonings() {
    const BANK: &str = "samples/bank-outage.bpmn";
    let v = project(&[BANK, "--jobs", "50000"]);
    let p = &v["policies"][0];
    assert_eq!(p["starts_s"], json!([0, 70, 380, 1890, 9100]), "{p}");
    assert_eq!(p["attempt_window_s"], 10.0, "{p}");
    assert_eq!(p["scheduled"], 250_000);

    let (code, out, err) = qflow(&[
        "simulate", BANK, "--jobs", "4", "--outage", "P1D", "--format", "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let sim: Value = serde_json::from_str(out.trim()).unwrap();
    let starts: Vec<u64> = sim["per_minute"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["minute"].as_u64().unwrap())
        .collect();
    let projected: Vec<u64> = p["starts_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap() / 60)
        .collect();
    assert_eq!(starts, projected, "{sim}");
    assert_eq!(sim["attempts"], 4 * 5);

    // A local run whose every delivery fails makes the same attempts.
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("down.json");
    std::fs::write(&scenario, r#"{"deliveries":{"bank":[{"fail":"down"}]}}"#).unwrap();
    let (_, out, err) = qflow(&[
        "run",
        BANK,
        "--scenario",
        scenario.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let at: Vec<u64> = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["kind"] == "attempt")
        .map(|l| l["at_s"].as_u64().unwrap())
        .collect();
    assert_eq!(at, [0, 70, 380, 1890, 9100], "{out}{err}");
}

/// "At most" is at most: under a provider's retry-after of 20 h, DBG-08's
/// last attempt comes at 100 h (5 waits of 20 h), past the policy's own
/// 13 h 1 min. The projection says how far a retry-after can stretch the
/// bound (each wait capped at 1 d without maxDelay: at most 5 d), and the
/// real run stays within it.
#[test]
fn at_most_is_at_most_under_a_providers_retry_after() {
    let v = project(&[DBG08, "--jobs", "10"]);
    let p = &v["policies"][0];
    assert_eq!(p["worst_case_s"], 46_860);
    assert_eq!(p["worst_case_retry_after_s"], 432_000, "{p}");
    let (_, human, _) = qflow(&["project", DBG08, "--jobs", "10"]);
    assert!(
        human.contains("a provider's retry-after can stretch each wait to 1 d (the default cap; maxDelay sets it): at most 5 d (432,000 s)"),
        "{human}"
    );

    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("limited.json");
    std::fs::write(
        &scenario,
        r#"{"tasks":{"payments.charge":[{"fail":{"code":"RATE_LIMITED","class":"rate-limited","retryAfter":"PT20H"}}]}}"#,
    )
    .unwrap();
    let (_, out, err) = qflow(&[
        "run",
        DBG08,
        "--scenario",
        scenario.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let last = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["kind"] == "attempt")
        .map(|l| l["at_s"].as_u64().unwrap())
        .max()
        .unwrap_or_else(|| panic!("{out}{err}"));
    assert_eq!(last, 5 * 20 * 3600);
    assert!(last > 46_860 && last <= 432_000, "{last}");
}

/// Load is counted in remote requests, not only attempts: each of the
/// bank-outage call's attempts is up to 3 deliveries, so 250,000 scheduled
/// attempts are 750,000 requests to the bank; a registered task's attempt
/// is one request.
#[test]
fn load_is_counted_in_remote_requests_beside_attempts() {
    let v = project(&["samples/bank-outage.bpmn", "--jobs", "50000"]);
    let p = &v["policies"][0];
    assert_eq!(p["scheduled"], 250_000);
    assert_eq!(p["requests_per_attempt"], 3, "{p}");
    assert_eq!(p["requests_scheduled"], 750_000, "{p}");
    assert_eq!(p["requests_peak_per_minute"], 150_000, "{p}");
    let (_, human, _) = qflow(&["project", "samples/bank-outage.bpmn", "--jobs", "50000"]);
    assert!(
        human.contains("remote requests         750,000 to bank.charge (3 per attempt), up to 150,000 in the busiest minute"),
        "{human}"
    );
    let task = project(&[DBG08, "--jobs", "50000"]);
    assert_eq!(task["policies"][0]["requests_scheduled"], 300_000);
}

#[test]
fn a_jittered_policy_draws_each_instances_delays_as_the_runtime_does() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("jittered.bpmn");
    let src = std::fs::read_to_string(DBG08)
        .unwrap()
        .replace(r#"jitter="none""#, r#"jitter="equal""#);
    std::fs::write(&model, src).unwrap();
    let v = project(&[model.to_str().unwrap(), "--jobs", "200"]);
    let j = &v["policies"][0]["jittered"];
    assert_eq!(j["jitter"], "equal");
    assert_eq!(j["policy_own"], true);
    assert_eq!(j["scheduled"], 1_200);
    // Equal jitter waits 30 to 60 s before the second attempt: minute 0
    // holds every first attempt and nearly every second one.
    let peak = j["peak_per_minute"]["attempts"].as_u64().unwrap();
    assert!((380..=400).contains(&peak), "{peak}");
    // The worst case is the nominal one (jitter only shortens delays).
    assert_eq!(v["policies"][0]["worst_case_s"], 46_860);

    // A simulation of the same 200 jobs waits exactly the drawn delays:
    // its busiest minute is the projection's.
    let (code, out, err) = qflow(&[
        "simulate",
        model.to_str().unwrap(),
        "--jobs",
        "200",
        "--outage",
        "P1D",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let sim: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(sim["attempts"], j["scheduled"]);
    let busiest = sim["per_minute"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|m| {
            (
                m["attempts"].as_u64(),
                std::cmp::Reverse(m["minute"].as_u64()),
            )
        })
        .unwrap()
        .clone();
    assert_eq!(busiest["attempts"], j["peak_per_minute"]["attempts"]);
    assert_eq!(busiest["minute"], j["peak_per_minute"]["minute"]);
}

#[test]
fn bad_arguments_are_named() {
    let (code, _, err) = qflow(&["project", DBG08, "--jobs", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--jobs must be at least 1"), "{err}");
    // `2h` is a duration now (the CLI's one parser takes 2h and PT2H alike);
    // a word is not, and the error names the flag and the literal to write.
    let (code, _, err) = qflow(&["project", DBG08, "--jobs", "5", "--outage", "soon"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--outage") && err.contains("soon"), "{err}");
    let (code, _, err) = qflow(&["project", "no/such.bpmn", "--jobs", "5"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read no/such.bpmn"), "{err}");
    let (code, _, err) = qflow(&[
        "project",
        "samples/broken/QF012-unbounded-retry.bpmn",
        "--jobs",
        "5",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("does not load"), "{err}");
}

#[test]
fn a_model_that_does_not_load_counts_its_errors_as_check_does() {
    // check: "1 error, 1 warning, 2 notes".
    let model = "samples/broken/QF005-no-start-event.bpmn";
    let (code, out, _) = qflow(&["check", model]);
    assert_eq!(code, 1);
    assert!(out.contains("1 error, 1 warning, 2 notes"), "{out}");
    for cmd in [
        vec!["project", model, "--jobs", "10"],
        vec!["simulate", model, "--jobs", "10", "--outage", "1h"],
    ] {
        let (code, _, err) = qflow(&cmd);
        assert_eq!(code, 1, "{cmd:?}: {err}");
        assert!(
            err.contains("does not load (1 error)"),
            "{cmd:?} counts errors as check does, not every finding: {err}"
        );
    }
}
