//! `qflow stats`: the fleet's observations read back from a store that
//! `qflow simulate` filled.

use serde_json::Value;

const DBG08: &str = "samples/dbg08-long-outage.bpmn";

mod support;
use support::qflow_here as qflow;

fn stats(db: &str) -> Value {
    let (code, out, err) = qflow(&["stats", "--db", db, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(out.trim()).expect("one JSON line")
}

#[test]
fn an_exhausting_outage_shows_terminal_failures_and_the_dependencys_load() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sim.db");
    let db = db.to_str().unwrap();
    let (code, _, err) = qflow(&[
        "simulate", DBG08, "--jobs", "40", "--outage", "P1D", "--db", db,
    ]);
    assert_eq!(code, 0, "{err}");
    let v = stats(db);
    assert_eq!(v["instances"], 40);
    assert_eq!(v["unfinished"], 0);
    assert_eq!(v["attempts"], 240);
    assert_eq!(
        v["terminal"],
        serde_json::json!([{"code": "DEPENDENCY_DOWN", "reason": "exhausted", "count": 40}])
    );
    let dep = &v["by_dependency"][0];
    assert_eq!(dep["dependency"], "payments.charge");
    assert_eq!(dep["attempts"], 240);
    // All 40 instances attempt in the same minute, six times.
    assert_eq!(dep["peak_per_minute"], 40);
    assert_eq!(dep["first_ms"], 0);
    assert_eq!(dep["last_ms"], 46_860_000);
    assert_eq!(v["attempts_per_completed"], Value::Null);
    assert_eq!(v["oldest_next_eligible_ms"], Value::Null);
    assert_eq!(v["unknown_outcomes"], 0);
    assert!(v["backlog_age"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["count"] == 0));

    let (code, out, _) = qflow(&["stats", "--db", db]);
    assert_eq!(code, 0);
    assert!(out.contains("DEPENDENCY_DOWN"), "{out}");
    assert!(out.contains("exhausted"), "{out}");
}

#[test]
fn a_recovered_outage_costs_five_attempts_per_completed_effect() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sim.db");
    let db = db.to_str().unwrap();
    let (code, _, err) = qflow(&[
        "simulate", DBG08, "--jobs", "10", "--outage", "PT2H", "--db", db,
    ]);
    assert_eq!(code, 0, "{err}");
    let v = stats(db);
    assert_eq!(v["completed"], 10);
    assert_eq!(v["attempts_per_completed"], 5.0);
    assert_eq!(v["terminal"], serde_json::json!([]));
}

#[test]
fn a_missing_database_is_named() {
    let (code, _, err) = qflow(&["stats", "--db", "no/such.db"]);
    assert_eq!(code, 2);
    assert!(err.contains("no/such.db: no such database"), "{err}");
}

/// The human output against `tests/golden/stats/NAME` (`QFLOW_BLESS=1`
/// writes it): every observation on an aligned row or a sentence.
fn golden(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/stats")
        .join(name);
    if std::env::var_os("QFLOW_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{} is missing (QFLOW_BLESS=1 to write it)\n{actual}",
            path.display()
        )
    });
    assert_eq!(actual, expected, "{} differs", path.display());
}

#[test]
fn the_human_output_of_a_failed_only_store_reads_row_by_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sim.db");
    let db = db.to_str().unwrap();
    let (code, _, err) = qflow(&[
        "simulate", DBG08, "--jobs", "40", "--outage", "P1D", "--db", db,
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = qflow(&["stats", "--db", db]);
    assert_eq!(code, 0, "{err}");
    // Nothing pending: said in words, not a dash and a stray gap.
    assert!(
        out.contains("oldest next-eligible time          —  nothing waits for a timer\n"),
        "{out}"
    );
    golden("failed-only.txt", &out);
}

#[test]
fn the_human_output_of_a_held_park_names_its_timer_pause_and_quarantine() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("held.db");
    let db = db.to_str().unwrap();
    let (code, _, err) = qflow(&[
        "run",
        DBG08,
        "--scenario",
        "samples/scenarios/dbg08-long-outage.json",
        "--db",
        db,
        "--until",
        "PT30S",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = qflow(&["pause", "--db", db, "--dependency", "payments.charge"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = qflow(&["quarantine", "dbg08-1", "--db", db]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = qflow(&["stats", "--db", db]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("the earliest armed timer, 1m after the latest decision"),
        "{out}"
    );
    golden("held.txt", &out);
}
