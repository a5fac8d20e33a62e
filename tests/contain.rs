//! Containment through the binary: a pause recorded by one process holds
//! the park for the next one, whatever serves the database; a quarantined
//! instance is refused until released; bad input is named.

use serde_json::Value;

const DBG08: &str = "samples/dbg08-long-outage.bpmn";
const ALWAYS_FAILS: &str = "samples/scenarios/dbg08-long-outage.json";

mod support;
use support::qflow_here as qflow;

fn last_json(out: &str) -> Value {
    serde_json::from_str(out.lines().last().expect("a line")).expect("JSON")
}

/// A fresh PostgreSQL database for `test`, or `None` (it says it skips).
fn on_postgres(test: &str) -> Option<String> {
    let server = qflow_engine::store::pg::test_server(test)?;
    let name = format!("qflow_{test}_{}", std::process::id());
    Some(qflow_engine::store::pg::scratch_database(&server, &name).unwrap())
}

#[test]
fn a_paused_class_holds_the_park_across_processes_and_unpausing_resumes_it_on_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    a_pause_holds_the_park(db.to_str().unwrap());
}

#[test]
fn a_paused_class_holds_the_park_across_processes_on_postgres() {
    if let Some(db) = on_postgres("contain_pause") {
        a_pause_holds_the_park(&db);
    }
}

fn a_pause_holds_the_park(db: &str) {
    // The first attempt fails and parks the retry at 60 s.
    let (code, out, err) = qflow(&[
        "run",
        DBG08,
        "--scenario",
        ALWAYS_FAILS,
        "--db",
        db,
        "--until",
        "PT30S",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(last_json(&out)["due_s"], 60);

    let (code, out, err) = qflow(&[
        "pause",
        "--db",
        db,
        "--class",
        "transient",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(
        (v["changed"].clone(), v["parks"].clone()),
        (true.into(), 1.into())
    );
    // Without --by, the record names the account and host: user@host.
    let me = v["by"].as_str().unwrap_or_default().to_string();
    assert!(me.contains('@') && !me.starts_with('@'), "{v}");
    assert_eq!(v["reason"], serde_json::Value::Null);
    // A second pause keeps the first one's record.
    let (_, out, _) = qflow(&[
        "pause",
        "--db",
        db,
        "--class",
        "transient",
        "--by",
        "bob",
        "--reason",
        "again",
    ]);
    assert!(
        out.contains(&format!(
            "class transient was already paused by {me} (kept)"
        )),
        "{out}"
    );
    let (code, _, err) = qflow(&["pause", "--db", db, "--class", "transient", "--by", " "]);
    assert_eq!(code, 2, "a blank --by names no one");
    assert!(err.contains("--by needs a name"), "{err}");

    // Another process serving the database leaves the park alone, due
    // time and all.
    let (code, out, err) = qflow(&[
        "resume",
        "dbg08-1",
        "--db",
        db,
        "--scenario",
        ALWAYS_FAILS,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(
        (v["status"].clone(), v["due_s"].clone()),
        ("waiting".into(), 60.into())
    );
    assert_eq!(out.lines().count(), 1, "no decision taken: {out}");
    // It says why nothing ran, and what lets it run: it used to end
    // "(a run with the same --db resumes it)", which does nothing here.
    assert_eq!(
        (v["stopped"].clone(), v["pause"].clone()),
        (
            "held".into(),
            serde_json::json!({"kind": "class", "value": "transient"})
        ),
        "{v}"
    );
    assert!(
        err.contains(&format!(
            "the retry of charge due at +1m is held by the pause of class transient, its due time kept; `qflow unpause --class transient --db {db}` lets it run"
        )),
        "{err}"
    );
    let (_, out, _) = qflow(&["resume", "dbg08-1", "--db", db, "--scenario", ALWAYS_FAILS]);
    assert!(
        out.contains("(held by the pause of class transient: see the note above)")
            && !out.contains("resumes it"),
        "{out}"
    );

    let (code, out, _) = qflow(&["stats", "--db", db, "--format", "json"]);
    assert_eq!(code, 0);
    let v = last_json(&out);
    assert_eq!(v["paused"][0]["value"], "transient");
    assert_eq!(v["paused"][0]["holding"], 1);
    assert_eq!(v["paused"][0]["by"], me.as_str());

    // The unpause names who lifted it and whose pause it was.
    let (code, out, err) = qflow(&[
        "unpause",
        "--db",
        db,
        "--class",
        "transient",
        "--by",
        "ops-erin",
        "--reason",
        "bank back",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("unpaused class transient by ops-erin (\"bank back\"): 1 retry park let go")
            && out.contains(&format!("it was paused by {me}")),
        "{out}"
    );
    let (code, out, err) = qflow(&[
        "resume",
        "dbg08-1",
        "--db",
        db,
        "--scenario",
        ALWAYS_FAILS,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let attempts: Vec<i64> = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "attempt")
        .map(|v| v["at_s"].as_i64().unwrap())
        .collect();
    assert_eq!(attempts, [60, 360, 1_860, 9_360, 46_860]);
    assert_eq!(last_json(&out)["status"], "failed");
}

#[test]
fn a_migration_that_renames_a_parked_node_keeps_it_held() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    a_renamed_park_stays_held(dir.path(), db.to_str().unwrap());
}

#[test]
fn a_migration_that_renames_a_parked_node_keeps_it_held_on_postgres() {
    if let Some(db) = on_postgres("contain_rename") {
        let dir = tempfile::tempdir().unwrap();
        a_renamed_park_stays_held(dir.path(), &db);
    }
}

/// A park moved by a migration onto a renamed node keeps its cause (class
/// and dependency): a pause in force goes on holding it. (It used to be
/// re-armed with no cause, and the retry ran under the pause.)
fn a_renamed_park_stays_held(dir: &std::path::Path, db: &str) {
    let (code, _, err) = qflow(&[
        "run",
        DBG08,
        "--scenario",
        ALWAYS_FAILS,
        "--db",
        db,
        "--until",
        "PT30S",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = qflow(&["pause", "--db", db, "--dependency", "payments.charge"]);
    assert_eq!(code, 0, "{err}");
    let renamed = std::fs::read_to_string(DBG08)
        .unwrap()
        .replace("\"charge\"", "\"charge_card\"");
    assert!(renamed.contains("id=\"charge_card\""));
    let edited = dir.join("renamed.bpmn");
    std::fs::write(&edited, renamed).unwrap();
    let (code, out, err) = qflow(&[
        "migrate",
        "dbg08-1",
        "--db",
        db,
        "--to",
        edited.to_str().unwrap(),
        "--map",
        "charge=charge_card",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // The moved park is still one the pause holds...
    let (code, out, err) = qflow(&[
        "instances",
        "--db",
        db,
        "--dependency",
        "payments.charge",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let listed = last_json(&out);
    assert_eq!(listed["total"], 1, "{listed}");
    assert_eq!(listed["instances"][0]["node"], "charge_card", "{listed}");
    // ...and a process serving the database leaves it alone.
    let (code, out, err) = qflow(&[
        "resume",
        "dbg08-1",
        "--db",
        db,
        "--scenario",
        ALWAYS_FAILS,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(
        (
            v["status"].clone(),
            v["stopped"].clone(),
            v["due_s"].clone()
        ),
        ("waiting".into(), "held".into(), 60.into()),
        "{out}"
    );
    assert!(
        !out.lines().any(|l| l.contains("\"kind\":\"attempt\"")),
        "an attempt ran under the pause: {out}"
    );
}

#[test]
fn a_quarantined_instance_is_refused_until_released() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    quarantine_refuses_until_released(db.to_str().unwrap());
}

#[test]
fn a_quarantined_instance_is_refused_until_released_on_postgres() {
    if let Some(db) = on_postgres("contain_quarantine") {
        quarantine_refuses_until_released(&db);
    }
}

fn quarantine_refuses_until_released(db: &str) {
    let (code, _, err) = qflow(&[
        "run",
        DBG08,
        "--scenario",
        ALWAYS_FAILS,
        "--db",
        db,
        "--until",
        "PT30S",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = qflow(&[
        "quarantine",
        "dbg08-1",
        "--db",
        db,
        "--by",
        "ops-dave",
        "--reason",
        "replays a bad order",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("quarantined dbg08-1 (waiting) by ops-dave (\"replays a bad order\")"),
        "{out}"
    );
    let (code, _, err) = qflow(&["resume", "dbg08-1", "--db", db, "--scenario", ALWAYS_FAILS]);
    assert_eq!(
        code, 4,
        "refused by the store's state, as a FAILED instance's resume: {err}"
    );
    assert!(err.contains("dbg08-1 is quarantined"), "{err}");
    assert!(
        err.contains(&format!("qflow release dbg08-1 --db {db}")),
        "{err}"
    );
    let (code, out, _) = qflow(&["stats", "--db", db, "--format", "json"]);
    assert_eq!(code, 0);
    assert_eq!(last_json(&out)["quarantined"], 1);
    let (code, out, err) = qflow(&["release", "dbg08-1", "--db", db, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(
        (v["by"].as_str(), v["reason"].as_str()),
        (Some("ops-dave"), Some("replays a bad order")),
        "whose quarantine it was: {v}"
    );
    // Without --by, the one who released it is the account and host.
    let me = v["logged"]["by"].as_str().unwrap_or_default();
    assert!(me.contains('@') && !me.starts_with('@'), "{v}");
    assert_eq!(
        (
            v["logged"]["action"].as_str(),
            v["logged"]["changed"].as_bool()
        ),
        (Some("release"), Some(true)),
        "{v}"
    );
    let (code, out, err) = qflow(&[
        "resume",
        "dbg08-1",
        "--db",
        db,
        "--scenario",
        ALWAYS_FAILS,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(last_json(&out)["status"], "failed");
}

#[test]
fn bad_containment_input_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("b.db");
    let db = db.to_str().unwrap();
    let (code, _, err) = qflow(&["pause", "--db", db, "--class", "transient"]);
    assert_eq!(code, 2);
    assert!(err.contains("no such database"), "{err}");
    qflow(&["run", DBG08, "--db", db]);
    for (class, says) in [
        ("permanent", "never retried"),
        ("unknown-outcome", "reconciliation"),
        ("flaky", "not a failure class"),
    ] {
        let (code, _, err) = qflow(&["pause", "--db", db, "--class", class]);
        assert_eq!(code, 2, "{class}");
        assert!(err.contains(says), "{class}: {err}");
    }
    let (code, _, err) = qflow(&["pause", "--db", db]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = qflow(&[
        "pause",
        "--db",
        db,
        "--class",
        "transient",
        "--dependency",
        "x",
    ]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = qflow(&["quarantine", "dbg08-9", "--db", db]);
    assert_eq!(code, 2);
    assert!(err.contains("no instance dbg08-9"), "{err}");
    // Lifting names who lifts it as pausing names who pauses: a blank
    // --by is refused before anything is written.
    for args in [
        &["unpause", "--db", db, "--class", "transient", "--by", " "][..],
        &["release", "dbg08-1", "--db", db, "--by", ""][..],
    ] {
        let (code, out, err) = qflow(&[args, &["--format", "json"]].concat());
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("--by needs a name"), "{args:?}: {err}");
        assert_eq!(last_json(&out)["error"], "usage", "{args:?}");
    }
    let store = support::stores::open(db);
    assert!(store
        .containment_log(&qflow_engine::store::contain::LogQuery::recent(0))
        .unwrap()
        .is_empty());
}

crate::on_both_stores!(
    a_dependency_no_deployment_calls_is_refused_with_the_known_ones_unless_forced
);

fn a_dependency_no_deployment_calls_is_refused_with_the_known_ones_unless_forced(
    fresh: &support::stores::Fresh,
) {
    let db = fresh.db();
    let db = db.as_str();
    let (code, _, err) = qflow(&[
        "run",
        DBG08,
        "--scenario",
        ALWAYS_FAILS,
        "--db",
        db,
        "--until",
        "PT30S",
    ]);
    assert_eq!(code, 0, "{err}");

    // The operator's typo: refused, named, the database unchanged.
    for verb in ["pause", "unpause"] {
        let (code, out, err) = qflow(&[verb, "--db", db, "--dependency", "payments.chrage"]);
        assert_eq!(code, 2, "{verb}: {out}");
        assert!(out.is_empty(), "{verb}: nothing reported as done: {out}");
        assert!(
            err.contains("no deployed model calls a dependency `payments.chrage`"),
            "{err}"
        );
        assert!(err.contains("did you mean `payments.charge`?"), "{err}");
        assert!(
            err.contains("the known dependencies are payments.charge"),
            "{err}"
        );
        assert!(err.contains("--force"), "{err}");
    }
    let (_, out, _) = qflow(&["stats", "--db", db, "--format", "json"]);
    assert_eq!(last_json(&out)["paused"], serde_json::json!([]));

    // JSON names the refusal too.
    let (code, out, _) = qflow(&[
        "pause",
        "--db",
        db,
        "--dependency",
        "ledger",
        "--format",
        "json",
    ]);
    assert_eq!(code, 2);
    let v = last_json(&out);
    assert_eq!(v["error"], "unknown-dependency");
    assert!(
        !v["message"].as_str().unwrap().contains("did you mean"),
        "nothing close to ledger: {v}"
    );

    // The real name pauses its park.
    let (code, out, err) = qflow(&["pause", "--db", db, "--dependency", "payments.charge"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 retry park held"), "{out}");

    // --force: a dependency about to be deployed; the forced pause can be
    // lifted without --force.
    let (code, out, err) = qflow(&[
        "pause",
        "--db",
        db,
        "--dependency",
        "ledger",
        "--force",
        "--by",
        "ops-carol",
        "--reason",
        "ledger migration tonight",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "paused dependency ledger by ops-carol (\"ledger migration tonight\"): 0 retry parks held"
        ),
        "{out}"
    );
    let (code, out, err) = qflow(&["unpause", "--db", db, "--dependency", "ledger"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("unpaused dependency ledger"), "{out}");
}

crate::on_both_stores!(a_completed_instance_is_not_quarantined);

/// Nothing will ever run a completed instance: setting it aside would only
/// leave a misleading record, so it is refused as the store's state (exit 4).
fn a_completed_instance_is_not_quarantined(fresh: &support::stores::Fresh) {
    let db = fresh.db();
    let db = db.as_str();
    let (code, out, err) = qflow(&[
        "run",
        "samples/checkout.bpmn",
        "--db",
        db,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(last_json(&out)["status"], "completed", "{out}");
    let (code, _, err) = qflow(&["quarantine", "checkout-1", "--db", db]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("checkout-1 has completed") && err.contains("nothing to quarantine"),
        "{err}"
    );
    let (code, out, _) = qflow(&["quarantine", "checkout-1", "--db", db, "--format", "json"]);
    assert_eq!(code, 4);
    assert_eq!(last_json(&out)["error"], "refused", "{out}");
    let (code, out, _) = qflow(&["stats", "--db", db, "--format", "json"]);
    assert_eq!(code, 0);
    assert_eq!(last_json(&out)["quarantined"], 0);
}
