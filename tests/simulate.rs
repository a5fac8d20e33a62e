//! `qflow simulate`: real instances through the engine and the store on the
//! virtual clock, the dependency down for the outage and up after it.

use std::process::Command;

use serde_json::Value;

mod support;

const DBG08: &str = "samples/dbg08-long-outage.bpmn";

fn simulate(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .arg("simulate")
        .args(args)
        .output()
        .expect("qflow runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let (code, out, err) = simulate(&all);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(out.trim()).expect("one JSON line")
}

fn per_minute(v: &Value) -> Vec<(i64, u64)> {
    v["per_minute"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["minute"].as_i64().unwrap(),
                m["attempts"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn backlog(v: &Value) -> Vec<(i64, u64)> {
    v["backlog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["minute"].as_i64().unwrap(),
                m["pending"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn an_outage_longer_than_the_schedule_exhausts_every_job_after_six_attempts() {
    // DBG-08: attempts at 0, 60, 360, 1,860, 9,360 and 46,860 s, then FAILED.
    let v = json(&[DBG08, "--jobs", "30", "--outage", "P1D", "--batch", "7"]);
    assert_eq!(v["attempts"], 180);
    assert_eq!(v["exhausted"], 30);
    assert_eq!(v["completed"], 0);
    assert_eq!(v["unfinished"], 0);
    assert_eq!(v["virtual_end_s"], 46_860);
    assert_eq!(
        per_minute(&v),
        [(0, 30), (1, 30), (6, 30), (31, 30), (156, 30), (781, 30)]
    );
    // All thirty pend until the sixth attempt fails them at +13h 1m.
    assert_eq!(backlog(&v), [(0, 30), (781, 0)]);
}

#[test]
fn a_two_hour_outage_costs_four_failed_attempts_and_the_fifth_succeeds() {
    let v = json(&[DBG08, "--jobs", "25", "--outage", "PT2H"]);
    assert_eq!(v["attempts"], 125);
    assert_eq!(v["completed"], 25);
    assert_eq!(v["exhausted"], 0);
    assert_eq!(
        per_minute(&v),
        [(0, 25), (1, 25), (6, 25), (31, 25), (156, 25)]
    );
    assert_eq!(backlog(&v), [(0, 25), (156, 0)]);
}

#[test]
fn the_human_report_charts_the_pending_backlog_by_the_levels_it_held() {
    let (code, out, err) = simulate(&[DBG08, "--jobs", "30", "--outage", "PT2H"]);
    assert_eq!(code, 0, "{err}");
    let chart: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("pending backlog"))
        .take_while(|l| !l.is_empty())
        .collect();
    let bar = "█".repeat(50);
    assert_eq!(
        chart,
        [
            "pending backlog (unfinished instances at the end of each minute)",
            &format!("        +0m..2h35m {bar} 30"),
            &format!("            +2h36m {} 0", " ".repeat(50)),
        ],
        "{out}"
    );
}

#[test]
fn the_instances_stay_in_the_database_given_and_the_human_report_charts_each_minute() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sim.db");
    let db_arg = db.to_str().unwrap();
    let (code, out, err) = simulate(&[DBG08, "--jobs", "12", "--outage", "PT30M", "--db", db_arg]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("attempts executed            48"), "{out}");
    assert!(out.contains("completed                    12"), "{out}");
    // Failures at 0, 1 and 6 minutes; the attempt at 31 minutes succeeds.
    for row in ["+0m", "+1m", "+6m", "+31m"] {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(row) && l.ends_with(" 12")),
            "{row} in\n{out}"
        );
    }
    assert!(
        out.contains(&format!("instances kept in {db_arg}")),
        "{out}"
    );
    // The instances are real: `qflow run --db` would find them, the store
    // holds twelve completed ones.
    let store = qflow_engine::store::Store::open(&db).unwrap();
    let rows = store.instances().unwrap();
    assert_eq!(rows.len(), 12);
    assert!(rows.iter().all(|r| r.status.as_str() == "completed"));
}

/// The fleet driver's group commit on PostgreSQL: the same attempts, the
/// same minutes and the same outcome as on SQLite, and the instances stay
/// in the database for `qflow stats`.
#[test]
fn a_simulation_on_postgres_decides_what_it_decides_on_sqlite() {
    let Some(server) = qflow_engine::store::pg::test_server("simulate on PostgreSQL") else {
        return;
    };
    let name = format!("qflow_simulate_{}", std::process::id());
    let db = qflow_engine::store::pg::scratch_database(&server, &name).unwrap();
    let args = [DBG08, "--jobs", "60", "--outage", "PT2H", "--batch", "16"];
    let on_pg = json(&[&args[..], &["--db", &db]].concat());
    let on_sqlite = json(&args);
    for k in [
        "attempts",
        "completed",
        "exhausted",
        "unfinished",
        "virtual_end_s",
    ] {
        assert_eq!(on_pg[k], on_sqlite[k], "{k}");
    }
    assert_eq!(per_minute(&on_pg), per_minute(&on_sqlite));
    assert_eq!(on_pg["completed"], 60);
    let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .args(["stats", "--db", &db, "--format", "json"])
        .output()
        .unwrap();
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (stats["instances"].clone(), stats["attempts"].clone()),
        (60.into(), 300.into())
    );
}

#[test]
fn bad_arguments_are_named() {
    // `2h` is a duration now (one parser: 2h and PT2H alike); a word is not.
    let (code, _, err) = simulate(&[DBG08, "--jobs", "5", "--outage", "soon"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--outage") && err.contains("soon"), "{err}");
    let (code, _, err) = simulate(&[DBG08, "--jobs", "0", "--outage", "PT1H"]);
    assert_eq!(code, 2);
    assert!(err.contains("--jobs must be at least 1"), "{err}");
    let (code, _, err) = simulate(&["no/such.bpmn", "--jobs", "5", "--outage", "PT1H"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read no/such.bpmn"), "{err}");
}

const BANK: &str = "samples/bank-outage.bpmn";

/// A model whose dependency is a channel call: during the outage every
/// delivery of its request fails, the outbox gives up after three and the
/// call's 30 s timeout fails the attempt (q.timeout); after it, the bank
/// answers and the call completes. The attempts are the call's, by its
/// channel.
#[test]
fn a_channel_call_is_simulated_down_during_the_outage_and_answered_after_it() {
    let v = json(&[BANK, "--jobs", "20", "--outage", "PT10M", "--batch", "6"]);
    // Attempts at +0s, +1m 10s and +6m 20s fail when the outbox poisons
    // their request (3 deliveries 5 s apart, before the 30 s timeout); the
    // one at +31m 30s is answered.
    assert_eq!(v["attempts"], 80);
    assert_eq!(v["completed"], 20);
    assert_eq!(v["exhausted"], 0);
    assert_eq!(v["virtual_end_s"], 1_890);
    assert_eq!(per_minute(&v), [(0, 20), (1, 20), (6, 20), (31, 20)]);
    assert_eq!(
        v["by_dependency"],
        serde_json::json!([{"dependency": "bank", "attempts": 80}])
    );
    assert_eq!(backlog(&v), [(0, 20), (31, 0)]);
}

crate::on_both_stores!(
    a_channel_down_longer_than_the_schedule_exhausts_the_calls_and_stats_names_the_channel
);

/// The fleet driver's outbox path (deliveries failing, requests poisoned,
/// each poisoning failing its attempt) on a SQLite file and on a PostgreSQL
/// database.
fn a_channel_down_longer_than_the_schedule_exhausts_the_calls_and_stats_names_the_channel(
    fresh: &support::stores::Fresh,
) {
    let db = fresh.db();
    let db_arg = db.as_str();
    let (code, out, err) = simulate(&[BANK, "--jobs", "8", "--outage", "P1D", "--db", db_arg]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("exhausted                     8"), "{out}");
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("attempts by dependency"))
        .take(2)
        .collect();
    assert_eq!(
        rows,
        [
            "attempts by dependency (a task's name, or a call's channel)",
            "  bank            40"
        ],
        "{out}"
    );
    // The store's observations: five attempts each on the bank channel,
    // every instance FAILED q.delivery.poisoned (the outbox gave up before
    // the timeout), exhausted at +2h 31m 50s.
    let stats = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .args(["stats", "--db", db_arg, "--format", "json"])
        .output()
        .unwrap();
    let s: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(s["by_dependency"][0]["dependency"], "bank");
    assert_eq!(s["by_dependency"][0]["attempts"], 40);
    assert_eq!(
        s["terminal"],
        serde_json::json!([{"code": "q.delivery.poisoned", "reason": "exhausted", "count": 8}])
    );
    // Each attempt's request failed to be delivered during the outage.
    let show = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .args(["show", "bank-outage-1", "--db", db_arg])
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert_eq!(
        show.matches("failed (DEPENDENCY_DOWN)").count(),
        15,
        "three deliveries of each of five requests: {show}"
    );
    assert_eq!(show.matches("POISONED").count(), 5, "{show}");
}

/// `--expect` in CI: expectations that hold exit 0 and the report says each
/// with its measured value.
#[test]
fn expectations_that_hold_exit_zero_and_are_reported_with_what_was_measured() {
    // DBG-08 through two hours: every job completes, five attempts each.
    let (code, out, err) = simulate(&[
        DBG08,
        "--jobs",
        "25",
        "--outage",
        "PT2H",
        "--expect",
        "exhausted <= 1%",
        "--expect",
        "peak(payments.charge) <= 25/min",
        "--expect",
        "requests(payments.charge) <= 125",
        "--expect",
        "end <= 3h",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "expectations")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        rows,
        [
            "  held    exhausted <= 1%                   measured 0 (0%)",
            "  held    peak(payments.charge) <= 25/min   measured 25/min",
            "  held    requests(payments.charge) <= 125  measured 125",
            "  held    end <= 3h                         measured 2h 36m",
        ],
        "{out}"
    );
    let v = json(&[
        DBG08,
        "--jobs",
        "25",
        "--outage",
        "PT2H",
        "--expect",
        "completed == 100%",
    ]);
    assert_eq!(
        v["expectations"],
        serde_json::json!([{"expect": "completed == 100%", "measured": "25 (100%)", "value": 100.0, "held": true}])
    );
}

/// An expectation that fails exits 3, as `run --expect` does, naming the
/// expectation and what was measured, on stderr and in the JSON.
#[test]
fn an_expectation_that_fails_exits_three_naming_it_and_the_measured_value() {
    let args = [
        DBG08,
        "--jobs",
        "30",
        "--outage",
        "P1D",
        "--expect",
        "exhausted <= 1%",
        "--expect",
        "attempts <= 1000",
    ];
    let (code, out, err) = simulate(&args);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        err.contains(
            "error: expectation failed: `exhausted <= 1%`: measured 30 (100%) (--expect; exit 3)"
        ),
        "{err}"
    );
    assert!(!err.contains("attempts <= 1000"), "it held: {err}");
    assert!(
        out.contains("  FAILED  exhausted <= 1%   measured 30 (100%)"),
        "{out}"
    );
    assert!(
        out.contains("  held    attempts <= 1000  measured 180"),
        "{out}"
    );
    let (code, out, _) = simulate(&[&args[..], &["--format", "json"]].concat());
    assert_eq!(code, 3);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["expectations"][0]["held"], false);
    assert_eq!(v["expectations"][0]["measured"], "30 (100%)");
    assert_eq!(v["expectations"][1]["held"], true);
}

/// An expression that does not parse, or names a dependency the model does
/// not have, is refused (exit 2) before anything runs, naming the
/// expression, the column and the fix.
#[test]
fn a_bad_expectation_is_refused_with_its_column_and_the_fix() {
    let (code, out, err) = simulate(&[
        DBG08,
        "--jobs",
        "5",
        "--outage",
        "PT1H",
        "--expect",
        "peak(payments.charge) <= 500",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "nothing ran: {out}");
    assert!(
        err.contains("error: --expect `peak(payments.charge) <= 500`: at column 29: a peak is a rate: write it per minute: `500/min`"),
        "{err}"
    );
    // The caret under the column.
    assert!(
        err.contains("  peak(payments.charge) <= 500\n                              ^"),
        "{err}"
    );
    let (code, _, err) = simulate(&[
        DBG08,
        "--jobs",
        "5",
        "--outage",
        "PT1H",
        "--expect",
        "exhaustd <= 1%",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("at column 1: `exhaustd` is not a measure: write one of completed, exhausted"),
        "{err}"
    );
    let (code, _, err) = simulate(&[
        DBG08,
        "--jobs",
        "5",
        "--outage",
        "PT1H",
        "--expect",
        "requests(bank) <= 10",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--expect `requests(bank) <= 10`: at column 10: the model has no dependency `bank`: write one of its task names or channels: payments.charge"),
        "{err}"
    );
    let (code, out, _) = simulate(&[
        DBG08,
        "--jobs",
        "5",
        "--outage",
        "PT1H",
        "--expect",
        "exhausted = 0",
        "--format",
        "json",
    ]);
    assert_eq!(code, 2);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["error"], "usage");
    assert!(v["message"]
        .as_str()
        .unwrap()
        .contains("at column 11: `=` is not a comparison: write `==`"));
}

/// `--arrivals`: the jobs start evenly over the window, so the first
/// attempts are spread over it instead of all at +0m.
#[test]
fn arrivals_spread_the_starts_over_the_window() {
    let v = json(&[
        DBG08,
        "--jobs",
        "30",
        "--outage",
        "PT1M",
        "--arrivals",
        "PT10M",
    ]);
    assert_eq!(v["arrivals_s"], 600);
    // Three a minute; those arriving in the first minute fail once (the
    // outage), retry a minute later and succeed; the rest succeed at once.
    assert_eq!(v["completed"], 30);
    assert_eq!(v["attempts"], 33);
    assert_eq!(
        per_minute(&v),
        [
            (0, 3),
            (1, 6),
            (2, 3),
            (3, 3),
            (4, 3),
            (5, 3),
            (6, 3),
            (7, 3),
            (8, 3),
            (9, 3)
        ]
    );
}

/// `--error-rate`: a partial outage fails that share of the requests during
/// the outage, drawn per request from a stable hash: the same run twice is
/// the same, another `--seed` is another draw at the same rate.
#[test]
fn a_partial_outage_fails_a_share_of_the_requests_the_same_way_each_run() {
    let args = [
        DBG08,
        "--jobs",
        "200",
        "--outage",
        "PT2M",
        "--error-rate",
        "0.5",
    ];
    let a = json(&args);
    assert_eq!(a, {
        let mut b = json(&args);
        b["wall_ms"] = a["wall_ms"].clone();
        b["peak_rss_kb"] = a["peak_rss_kb"].clone();
        b
    });
    // All 200 attempt at +0m; about half fail and retry at +1m; of those,
    // about half fail again and retry at +6m, after the outage.
    let first = per_minute(&a);
    assert_eq!(first[0], (0, 200));
    let (_, retried) = first[1];
    assert!((70..=130).contains(&retried), "{first:?}");
    assert_eq!(a["completed"], 200);
    let other = json(&[&args[..], &["--seed", "7"]].concat());
    assert_ne!(per_minute(&other), first, "another seed, another draw");
    // One dependency's rate: payments.charge=0 is no outage at all.
    let none = json(&[
        DBG08,
        "--jobs",
        "20",
        "--outage",
        "PT2M",
        "--error-rate",
        "payments.charge=0",
    ]);
    assert_eq!(none["attempts"], 20);
    let (code, _, err) = simulate(&[
        DBG08,
        "--jobs",
        "5",
        "--outage",
        "PT2M",
        "--error-rate",
        "1.5",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--error-rate 1.5: `1.5` is not a share of requests: write one from 0 to 1 (0.3) or a percentage (30%)"), "{err}");
    let (code, _, err) = simulate(&[
        DBG08,
        "--jobs",
        "5",
        "--outage",
        "PT2M",
        "--error-rate",
        "bank=0.3",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--error-rate bank=…: the model has no dependency `bank`"),
        "{err}"
    );
}

/// `--capacity`: a counterpart serving N requests a minute answers 429 with
/// Retry-After to the rest; the rate-limited attempts come back the next
/// minute, so no minute serves more than N, and `peak` sees every request
/// that arrived.
#[test]
fn a_capacity_limited_counterpart_answers_429_above_its_rate() {
    let v = json(&[
        DBG08,
        "--jobs",
        "50",
        "--outage",
        "PT0S",
        "--capacity",
        "payments.charge=20/min",
        "--expect",
        "completed == 100%",
    ]);
    assert_eq!(v["completed"], 50, "{v}");
    let req = &v["requests"][0];
    assert_eq!(req["dependency"], "payments.charge");
    // Minute 0: 50 arrive, 20 served, 30 told to come back at +1m; there 20
    // of those 30 are served; at +2m the last 10.
    assert_eq!(req["rate_limited"], 40, "{v}");
    assert_eq!(req["requests"], 90);
    assert_eq!(req["peak_per_minute"], 50);
    assert_eq!(per_minute(&v), [(0, 50), (1, 30), (2, 10)]);
    let (code, _, err) = simulate(&[
        DBG08,
        "--jobs",
        "5",
        "--outage",
        "PT0S",
        "--capacity",
        "payments.charge=20",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "--capacity payments.charge=20: `20` has no unit: write payments.charge=20/min"
        ),
        "{err}"
    );
}

crate::on_both_stores!(the_trace_of_a_jittered_simulation_is_the_golden_one);

/// Seeded jitter, seeded partial outage, a capacity and arrivals: the trace
/// (every decision's history lines) and the report are the same bytes on
/// every run and on both stores, so a CI job can keep them as a golden
/// (`tests/golden/simulate/`; `QFLOW_BLESS=1` rewrites them from SQLite).
fn the_trace_of_a_jittered_simulation_is_the_golden_one(fresh: &support::stores::Fresh) {
    let db = fresh.db();
    let trace = fresh.dir().join("trace.jsonl");
    let (code, out, err) = simulate(&[
        "samples/checkout.bpmn",
        "--jobs",
        "6",
        "--outage",
        "4m",
        "--arrivals",
        "3m",
        "--error-rate",
        "0.5",
        "--capacity",
        "bank=2/min",
        "--batch",
        "4",
        "--db",
        &db,
        "--trace",
        trace.to_str().unwrap(),
        "--format",
        "json",
        "--expect",
        "peak(bank) <= 6/min",
    ]);
    assert_eq!(code, 0, "{err}");
    let mut report: Value = serde_json::from_str(out.trim()).unwrap();
    // What the machine measured, not what was simulated.
    for k in ["wall_ms", "peak_rss_kb"] {
        report.as_object_mut().unwrap().remove(k);
    }
    let report = serde_json::to_string_pretty(&report).unwrap() + "\n";
    let trace = std::fs::read_to_string(&trace).unwrap();
    golden(fresh, "checkout-report.json", &report);
    golden(fresh, "checkout-trace.jsonl", &trace);
}

fn golden(fresh: &support::stores::Fresh, name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/simulate")
        .join(name);
    support::golden::check_blessing_here(&path, actual, !fresh.is_postgres());
}

/// A channel's attempt is one delivery or more: the human report charts the
/// requests the channel received per minute beside the attempts, and its
/// rows add up to the requests counted; a task (one request an attempt)
/// gets no second chart.
#[test]
fn the_human_report_charts_a_channels_requests_per_minute_beside_its_attempts() {
    let (code, out, err) = simulate(&[
        "samples/bank-outage.bpmn",
        "--jobs",
        "100",
        "--outage",
        "1h",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<u64> = out
        .lines()
        .skip_while(|l| !l.starts_with("requests per minute to bank"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(!rows.is_empty(), "{out}");
    let v = json(&[
        "samples/bank-outage.bpmn",
        "--jobs",
        "100",
        "--outage",
        "1h",
    ]);
    let requests = v["requests"][0]["requests"].as_u64().unwrap();
    assert!(requests > 500, "more requests than the 500 attempts: {v}");
    assert_eq!(rows.iter().sum::<u64>(), requests, "{out}");
    let (_, task_only, _) = simulate(&[DBG08, "--jobs", "10", "--outage", "PT2H"]);
    assert!(!task_only.contains("requests per minute to"), "{task_only}");
}

/// A database that already holds a waiting instance is refused before
/// anything is written: the simulation would decide that instance on its
/// virtual clock and count it in its totals.
#[test]
fn a_database_holding_unfinished_instances_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("busy.db");
    let db_arg = db.to_str().unwrap();
    let waiting = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .args(["run", "samples/dbg08-unknown-outcome.bpmn", "--db", db_arg])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&waiting.stdout).contains("WAITING"));
    let (code, _, err) = simulate(&[DBG08, "--jobs", "3", "--outage", "PT1M", "--db", db_arg]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "--db {db_arg} already holds 1 unfinished instance(s)"
        )) && err.contains("give --db a new file"),
        "{err}"
    );
    let store = qflow_engine::store::Store::open(&db).unwrap();
    assert_eq!(store.instances().unwrap().len(), 1, "nothing was added");
}
