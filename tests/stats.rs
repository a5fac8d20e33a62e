//! `qflow stats`: the fleet's observations read back from a store that
//! `qflow simulate` filled.

use serde_json::Value;

const DBG08: &str = "samples/dbg08-long-outage.bpmn";

mod support;
use support::qflow_here as qflow;
use support::stores::Fresh;

fn stats(db: &str) -> Value {
    let (code, out, err) = qflow(&["stats", "--db", db, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(out.trim()).expect("one JSON line")
}

crate::on_both_stores!(
    an_exhausting_outage_shows_terminal_failures_and_the_dependencys_load,
    a_recovered_outage_costs_five_attempts_per_completed_effect,
    the_human_output_of_a_failed_only_store_reads_row_by_row,
    the_human_output_of_a_held_park_names_its_timer_pause_and_quarantine,
);

fn an_exhausting_outage_shows_terminal_failures_and_the_dependencys_load(fresh: &Fresh) {
    let db = &fresh.db();
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

fn a_recovered_outage_costs_five_attempts_per_completed_effect(fresh: &Fresh) {
    let db = &fresh.db();
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
/// Blessed from SQLite only: PostgreSQL must read the same.
fn golden(fresh: &Fresh, name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/stats")
        .join(name);
    if std::env::var_os("QFLOW_BLESS").is_some() && !fresh.is_postgres() {
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

fn the_human_output_of_a_failed_only_store_reads_row_by_row(fresh: &Fresh) {
    let db = &fresh.db();
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
    golden(fresh, "failed-only.txt", &out);
}

fn the_human_output_of_a_held_park_names_its_timer_pause_and_quarantine(fresh: &Fresh) {
    let db = &fresh.db();
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
    let (code, _, err) = qflow(&[
        "pause",
        "--db",
        db,
        "--dependency",
        "payments.charge",
        "--by",
        "ops-alice",
        "--reason",
        "bank outage",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = qflow(&["quarantine", "dbg08-1", "--db", db]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = qflow(&["stats", "--db", db]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("the earliest armed timer, 1m after the latest decision"),
        "{out}"
    );
    golden(fresh, "held.txt", &out);
}
