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
    // Attempts at +0s, +1m 30s and +7m time out; the one at +32m 30s is
    // answered.
    assert_eq!(v["attempts"], 80);
    assert_eq!(v["completed"], 20);
    assert_eq!(v["exhausted"], 0);
    assert_eq!(v["virtual_end_s"], 1_950);
    assert_eq!(per_minute(&v), [(0, 20), (1, 20), (7, 20), (32, 20)]);
    assert_eq!(
        v["by_dependency"],
        serde_json::json!([{"dependency": "bank", "attempts": 80}])
    );
    assert_eq!(backlog(&v), [(0, 20), (32, 0)]);
}

crate::on_both_stores!(
    a_channel_down_longer_than_the_schedule_exhausts_the_calls_and_stats_names_the_channel
);

/// The fleet driver's outbox path (deliveries failing, requests poisoned,
/// calls timing out) on a SQLite file and on a PostgreSQL database.
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
    // every instance FAILED q.timeout, exhausted at +2h 33m 30s.
    let stats = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .args(["stats", "--db", db_arg, "--format", "json"])
        .output()
        .unwrap();
    let s: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(s["by_dependency"][0]["dependency"], "bank");
    assert_eq!(s["by_dependency"][0]["attempts"], 40);
    assert_eq!(
        s["terminal"],
        serde_json::json!([{"code": "q.timeout", "reason": "exhausted", "count": 8}])
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
