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
    the_containment_log_says_who_let_a_pause_go_and_when,
    a_channels_load_is_counted_in_requests_as_simulate_counts_them,
);

/// A channel call's attempt is one delivery or more: `stats` reports the
/// requests `bank` received (every delivery) beside the attempts, and they
/// are the figures `simulate` printed for the same run.
fn a_channels_load_is_counted_in_requests_as_simulate_counts_them(fresh: &Fresh) {
    let db = &fresh.db();
    let (code, out, err) = qflow(&[
        "simulate",
        "samples/bank-outage.bpmn",
        "--jobs",
        "20",
        "--outage",
        "1h",
        "--db",
        db,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let simulated: Value = serde_json::from_str(out.trim()).expect("one JSON line");
    let sent = &simulated["requests"][0];
    assert_eq!(sent["dependency"], "bank", "{simulated}");
    let v = stats(db);
    let dep = &v["by_dependency"][0];
    assert_eq!(dep["dependency"], "bank", "{v}");
    assert_eq!(dep["attempts"], 100, "{v}");
    assert_eq!(dep["requests"], sent["requests"], "{v}");
    assert!(dep["requests"].as_u64().unwrap() > 100, "{v}");
    assert_eq!(
        dep["requests_peak_per_minute"], sent["peak_per_minute"],
        "{v}"
    );
    let (_, human, _) = qflow(&["stats", "--db", db]);
    assert!(
        human.contains(&format!(
            "{}  requests, peak {}/min (2.6 per attempt: a channel's deliveries)",
            sent["requests"], sent["peak_per_minute"]
        )),
        "{human}"
    );
}

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

/// RFC 3339 wall-clock instants (the containment log's) → `<time>`.
fn mask_times(s: &str) -> String {
    let stamp = |w: &[u8]| {
        w.iter().enumerate().all(|(k, c)| match k {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
    };
    let b = s.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        if i + 20 <= b.len() && stamp(&b[i..i + 20]) {
            out.extend_from_slice(b"<time>");
            i += 20;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// The human output against `tests/golden/stats/NAME` (`QFLOW_BLESS=1`
/// writes it): every observation on an aligned row or a sentence.
/// Blessed from SQLite only: PostgreSQL must read the same.
fn golden(fresh: &Fresh, name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/stats")
        .join(name);
    support::golden::check_blessing_here(&path, actual, !fresh.is_postgres());
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
    let (code, _, err) = qflow(&["quarantine", "dbg08-1", "--db", db, "--by", "ops-bob"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = qflow(&["stats", "--db", db]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("the earliest armed timer, 1m after the latest decision"),
        "{out}"
    );
    golden(fresh, "held.txt", &mask_times(&out));
}

/// After the outage: who lifted the pause of the bank's retries, when and
/// why. `stats` lists the latest actions (10 by default, `--log N`, `--log
/// 0` every one), oldest first, and says when earlier ones were left out.
fn the_containment_log_says_who_let_a_pause_go_and_when(fresh: &Fresh) {
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
    for k in 0..6 {
        let (code, _, err) = qflow(&[
            if k % 2 == 0 { "pause" } else { "unpause" },
            "--db",
            db,
            "--dependency",
            "payments.charge",
            "--by",
            &format!("ops-{k}"),
            "--reason",
            &format!("step {k}"),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    // A repeated unpause: logged, as changing nothing.
    let (code, _, err) = qflow(&[
        "unpause",
        "--db",
        db,
        "--class",
        "transient",
        "--by",
        "ops-9",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = stats(db);
    let log = v["containment_log"].as_array().unwrap();
    assert_eq!(log.len(), 7, "{v}");
    assert_eq!(v["containment_log_earlier"], false);
    let last_lift = &log[5];
    assert_eq!(
        (
            last_lift["action"].as_str(),
            last_lift["by"].as_str(),
            last_lift["reason"].as_str(),
            last_lift["changed"].as_bool()
        ),
        (Some("unpause"), Some("ops-5"), Some("step 5"), Some(true)),
        "{v}"
    );
    assert!(
        last_lift["at_ms"].as_i64().unwrap() > 1_700_000_000_000,
        "wall clock"
    );
    assert_eq!(log[6]["changed"], false, "{v}");

    let (code, out, err) = qflow(&["stats", "--db", db, "--log", "2"]);
    assert_eq!(code, 0, "{err}");
    let section: Vec<&str> = out
        .split("containment log (the latest 2 actions)\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{out}"))
        .lines()
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(section.len(), 3, "{out}");
    assert!(section[0].contains("`qflow stats --db"), "{out}");
    assert!(
        section[1].ends_with("  unpause dependency payments.charge by ops-5 (\"step 5\")"),
        "{out}"
    );
    assert!(
        section[2]
            .ends_with("  unpause class transient by ops-9: nothing changed (it already was so)"),
        "{out}"
    );
    let (code, out, err) = qflow(&["stats", "--db", db, "--log", "0", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(v["containment_log"].as_array().unwrap().len(), 7);
    assert_eq!(v["containment_log"][0]["by"], "ops-0");
}

crate::on_both_stores!(a_wall_clock_store_shows_instants_as_dates_not_days_since_1970);

/// A store served on the wall clock (what `qflow serve` writes): its
/// instants are RFC 3339 dates in stats' human output, never `+20789d 2h`
/// (the days since 1970 a virtual-clock offset would make of them).
fn a_wall_clock_store_shows_instants_as_dates_not_days_since_1970(fresh: &Fresh) {
    use qflow_engine::embed::{Engine, TaskError, Time};
    let db = fresh.db();
    let mut engine = Engine::connect(&qflow_engine::store::Location::parse(&db).unwrap()).unwrap();
    engine.register("payments.charge", |_| Err(TaskError::transient("DOWN")));
    engine.set_time(Time::System);
    let source = std::fs::read_to_string(DBG08).unwrap();
    let dep = engine.deploy(&source).unwrap();
    engine.start(&dep, serde_json::json!({})).unwrap();
    // The first attempt fails; its retry is parked a minute away.
    let mut attempted = false;
    engine
        .serve_steps(std::time::Duration::from_millis(20), |_, steps| {
            attempted |= steps.iter().any(|s| {
                s.decision
                    .events
                    .iter()
                    .any(|l| l.event.kind() == "attempt")
            });
            !attempted
        })
        .unwrap();
    drop(engine);
    let (code, out, err) = qflow(&["stats", "--db", &db]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("oldest next-eligible time"))
        .unwrap_or_else(|| panic!("{out}"));
    // The retry's instant, as an RFC 3339 date about a minute from now
    // (not a year computed by hand, which a new year's eve would break).
    let date = line
        .split_whitespace()
        .find_map(|w| humantime::parse_rfc3339(w).ok())
        .unwrap_or_else(|| panic!("an RFC 3339 date: {line}"));
    let ahead = date
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default();
    assert!(ahead <= std::time::Duration::from_secs(120), "{line}");
    // No `+NNNNNd`: an offset of thousands of days is an epoch misread.
    let epoch_days = out.split('+').skip(1).any(|rest| {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        digits >= 4 && rest[digits..].starts_with('d')
    });
    assert!(!epoch_days, "no days since 1970: {out}");
}
