//! The deployment lifecycle and repair by migration, end to end through the
//! `qflow` binary: deploy, deployments, instances, show, retire, migrate,
//! resume. The walk's outputs (human and JSON) are golden transcripts under
//! `tests/golden/lifecycle/` (wall-clock timestamps and the temporary
//! database's path masked); re-bless with
//! `QFLOW_BLESS=1 cargo test --test lifecycle` and review the diff.

use std::path::PathBuf;
use std::process::{Command, Output};

use qflow_engine::runtime::snapshot::Snapshot;
use qflow_engine::store::Store;
use serde_json::Value;

mod support;
use support::stores::{open, Fresh};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn qflow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .args(args)
        .output()
        .expect("qflow runs")
}

/// `2026-11-30T22:37:27Z` → `<time>`: the only wall-clock text in the outputs.
fn mask_times(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let shape = |w: &[u8]| {
        w.len() == 20
            && w.iter().enumerate().all(|(k, c)| match k {
                4 | 7 => *c == b'-',
                10 => *c == b'T',
                13 | 16 => *c == b':',
                19 => *c == b'Z',
                _ => c.is_ascii_digit(),
            })
    };
    while i < b.len() {
        if i + 20 <= b.len() && shape(&b[i..i + 20]) {
            out.push_str("<time>");
            i += 20;
        } else {
            let c = s[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// One command of a transcript: the command line, exit code, stdout and stderr.
fn step(transcript: &mut String, db: &str, args: &[&str]) -> Output {
    let o = qflow(args);
    let shown_db = db.to_string();
    let clean = |s: &[u8]| mask_times(&String::from_utf8_lossy(s).replace(&shown_db, "DB"));
    let line = args
        .iter()
        .map(|a| a.replace(&shown_db, "DB"))
        .collect::<Vec<_>>()
        .join(" ");
    transcript.push_str(&format!(
        "$ qflow {line}\n# exit {}\n{}",
        o.status.code().unwrap_or(-1),
        clean(&o.stdout)
    ));
    let err = clean(&o.stderr);
    if !err.is_empty() {
        transcript.push_str(&format!("# stderr\n{err}"));
    }
    transcript.push('\n');
    o
}

/// Compares with the golden file `name`; `QFLOW_BLESS` rewrites it from the
/// SQLite run only (the PostgreSQL run must agree with it, never bless).
fn check_golden(fresh: &Fresh, name: &str, actual: &str) {
    let path = repo().join("tests/golden/lifecycle").join(name);
    support::golden::check_blessing_here(&path, actual, !fresh.is_postgres());
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

crate::on_both_stores!(
    the_long_outage_is_repaired_and_its_deployment_retired_golden,
    a_failed_instance_blocks_retirement_and_is_named,
    a_mapping_that_drops_a_node_holding_state_is_refused_and_nothing_changes,
    migrating_to_a_fixed_model_completes_the_instance_and_keeps_its_burned_budget,
    a_parked_retry_keeps_its_due_time_across_a_migration,
    counters_markers_timers_outbox_rows_and_correlations_are_renamed_with_their_node,
    every_failed_instance_of_a_deployment_is_repaired_at_once,
    an_existing_database_of_the_previous_schema_opens_and_its_deployments_list,
    resume_runs_under_the_scenario_beside_the_deployments_model_unless_told_otherwise,
);

/// The walk a user takes: the long outage to FAILED, a fixed model
/// deployed, retirement refused, the plan, the migration, the completion,
/// the retirement; in both formats.
fn the_long_outage_is_repaired_and_its_deployment_retired_golden(fresh: &Fresh) {
    for (format, golden) in [("human", "walk.txt"), ("json", "walk-json.txt")] {
        let db = &fresh.db();
        let mut t = String::new();
        let f = ["--format", format];
        let run = [
            "run",
            "samples/dbg08-long-outage.bpmn",
            "--db",
            db,
            "--format",
            format,
        ];
        let o = step(&mut t, db, &run);
        assert_eq!(code(&o), 0);
        let o = step(
            &mut t,
            db,
            &[
                &["deploy", "samples/dbg08-repaired.bpmn", "--db", db],
                &f[..],
            ]
            .concat(),
        );
        assert_eq!(code(&o), 0);
        step(&mut t, db, &[&["deployments", "--db", db], &f[..]].concat());
        step(&mut t, db, &[&["instances", "--db", db], &f[..]].concat());
        step(
            &mut t,
            db,
            &[&["show", "dbg08-1", "--db", db], &f[..]].concat(),
        );
        let o = step(&mut t, db, &[&["retire", "1", "--db", db], &f[..]].concat());
        assert_eq!(code(&o), 4, "a FAILED instance blocks retirement");
        let o = step(
            &mut t,
            db,
            &[
                &["migrate", "dbg08-1", "--to", "2", "--db", db, "--dry-run"],
                &f[..],
            ]
            .concat(),
        );
        assert_eq!(code(&o), 4, "charge is not in the new model: refused");
        let o = step(
            &mut t,
            db,
            &[
                &[
                    "migrate",
                    "dbg08-1",
                    "--to",
                    "samples/dbg08-repaired.bpmn",
                    "--db",
                    db,
                    "--map",
                    "charge=chargeCard",
                ],
                &f[..],
            ]
            .concat(),
        );
        assert_eq!(code(&o), 0);
        let o = step(
            &mut t,
            db,
            &[
                &["resume", "dbg08-1", "--db", db, "--expect", "completed"],
                &f[..],
            ]
            .concat(),
        );
        assert_eq!(code(&o), 0, "the repaired instance completes");
        let o = step(&mut t, db, &[&["retire", "1", "--db", db], &f[..]].concat());
        assert_eq!(code(&o), 0);
        step(&mut t, db, &[&["deployments", "--db", db], &f[..]].concat());
        let o = step(&mut t, db, &run);
        assert_eq!(code(&o), 2, "a retired deployment starts no new instance");
        check_golden(fresh, golden, &t);
    }
}

/// A database holding one FAILED long-outage instance (deployment 1).
fn failed_long_outage(fresh: &Fresh) -> String {
    let db = fresh.db();
    let o = qflow(&["run", "samples/dbg08-long-outage.bpmn", "--db", &db]);
    assert_eq!(code(&o), 0);
    db
}

/// Snapshot bytes, deployment, version, timers, deployments (id, retired)
/// and history length: what a refusal must leave as it was.
type State = (Vec<u8>, i64, i64, usize, Vec<(i64, Option<i64>)>, usize);

/// Everything about the instance and the deployments, to compare before and after.
fn state(db: &str) -> State {
    let store = open(db);
    let i = &store.instances().unwrap()[0];
    let deps = store
        .deployments()
        .unwrap()
        .into_iter()
        .map(|d| (d.id, d.retired_ms))
        .collect();
    let history = store.history(&i.id).unwrap().len();
    (
        i.snapshot.clone(),
        i.deployment_id,
        i.version,
        store.timers(&i.id).unwrap().len(),
        deps,
        history,
    )
}

fn a_failed_instance_blocks_retirement_and_is_named(fresh: &Fresh) {
    let db = failed_long_outage(fresh);
    let before = state(&db);
    let o = qflow(&["retire", "1", "--db", &db, "--format", "json"]);
    assert_eq!(code(&o), 4);
    let rec: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rec["blocking"][0]["instance"], "dbg08-1");
    assert_eq!(rec["blocking"][0]["status"], "failed");
    assert!(String::from_utf8_lossy(&o.stderr).contains("dbg08-1 (FAILED)"));
    assert_eq!(state(&db), before, "a refused retirement changes nothing");
}

fn a_mapping_that_drops_a_node_holding_state_is_refused_and_nothing_changes(fresh: &Fresh) {
    let db = failed_long_outage(fresh);
    let before = state(&db);
    // The repaired model has no `charge`: unmapped, the node's token, failure
    // and counters would be dropped.
    let o = qflow(&[
        "migrate",
        "dbg08-1",
        "--to",
        "samples/dbg08-repaired.bpmn",
        "--db",
        &db,
    ]);
    assert_eq!(code(&o), 4);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("node charge holds state"), "{err}");
    assert!(err.contains("attempts.charge = 6"), "{err}");
    assert!(err.contains("--map charge=chargeCard"), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    // A mapping onto a node of another kind is refused the same way.
    let o = qflow(&[
        "migrate",
        "dbg08-1",
        "--to",
        "samples/dbg08-repaired.bpmn",
        "--db",
        &db,
        "--map",
        "charge=done",
    ]);
    assert_eq!(code(&o), 4);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cannot become done (end event)"), "{err}");
    assert_eq!(
        state(&db),
        before,
        "refusals change nothing, not even a deployment"
    );
}

fn migrating_to_a_fixed_model_completes_the_instance_and_keeps_its_burned_budget(fresh: &Fresh) {
    let db = failed_long_outage(fresh);
    let o = qflow(&[
        "migrate",
        "dbg08-1",
        "--to",
        "samples/dbg08-repaired.bpmn",
        "--db",
        &db,
        "--map",
        "charge=chargeCard",
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let plan: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["applied"], true);
    assert_eq!(plan["status_after"], "running");
    assert_eq!(plan["moves"][0]["budget"]["burned"], 6);
    assert_eq!(plan["moves"][0]["budget"]["max_attempts"], 8);
    let store = open(&db);
    let snap = Snapshot::decode(&store.instances().unwrap()[0].snapshot).unwrap();
    assert_eq!(
        snap.attempts("chargeCard"),
        6,
        "the counter is renamed with its node"
    );
    assert!(!snap.has_attempts("charge"));
    drop(store);
    let o = qflow(&[
        "resume",
        "dbg08-1",
        "--db",
        &db,
        "--scenario",
        "samples/scenarios/dbg08-transient-outage.json",
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0);
    let last: Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    let store = open(&db);
    assert_eq!(
        store.instances().unwrap().len(),
        1,
        "never a second instance"
    );
}

fn a_parked_retry_keeps_its_due_time_across_a_migration(fresh: &Fresh) {
    let db = fresh.db();
    // Two failed attempts (0 s, 60 s): attempt 3 is parked until 360 s.
    let o = qflow(&[
        "run",
        "samples/dbg08-long-outage.bpmn",
        "--db",
        &db,
        "--until",
        "PT2M",
    ]);
    assert_eq!(code(&o), 0);
    let store = open(&db);
    let armed = |store: &Store| -> Vec<(String, i64)> {
        store
            .timers("dbg08-1")
            .unwrap()
            .into_iter()
            .filter(|t| t.armed)
            .map(|t| (t.node, t.due_ms))
            .collect()
    };
    let before = armed(&store);
    assert_eq!(before.len(), 1);
    let due = before[0].1;
    drop(store);
    let o = qflow(&[
        "migrate",
        "dbg08-1",
        "--to",
        "samples/dbg08-repaired.bpmn",
        "--db",
        &db,
        "--map",
        "charge=chargeCard",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("retry timer due at +6m (kept)"), "{text}");
    let store = open(&db);
    assert_eq!(armed(&store), vec![("chargeCard".to_string(), due)]);
    drop(store);
    let o = qflow(&["resume", "dbg08-1", "--db", &db, "--format", "json"]);
    let lines: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let attempt = lines
        .iter()
        .find(|l| l["kind"] == "attempt")
        .expect("an attempt");
    assert_eq!(
        (attempt["attempt"].as_u64(), attempt["at_s"].as_i64()),
        (Some(3), Some(360)),
        "attempt 3 runs when it was due before the migration"
    );
}

/// The bank call's node renamed throughout (its id and every reference),
/// the operation name untouched.
fn renamed_bank() -> String {
    std::fs::read_to_string(repo().join("samples/bank-authorize.bpmn"))
        .unwrap()
        .replace(r#"id="authorize""#, r#"id="authorizeBank""#)
        .replace(r#"Ref="authorize""#, r#"Ref="authorizeBank""#)
        .replace(
            r#"bpmnElement="authorize""#,
            r#"bpmnElement="authorizeBank""#,
        )
}

fn counters_markers_timers_outbox_rows_and_correlations_are_renamed_with_their_node(fresh: &Fresh) {
    let db = fresh.db();
    // Attempt 1 times out at 30 s: the call parks in a backoff window.
    let o = qflow(&[
        "run",
        "samples/bank-authorize.bpmn",
        "--scenario",
        "samples/scenarios/call-silent-then-answer.json",
        "--db",
        &db,
        "--until",
        "PT31S",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let id = "bank-authorize-1";
    let store = open(&db);
    let snap = Snapshot::decode(&store.instances().unwrap()[0].snapshot).unwrap();
    assert!(snap.in_backoff("authorize"), "parked in a backoff window");
    let attempts = snap.attempts("authorize");
    let retry: Vec<i64> = store
        .timers(id)
        .unwrap()
        .into_iter()
        .filter(|t| t.armed)
        .map(|t| t.due_ms)
        .collect();
    let outbox_before = store.outbox(id).unwrap().len();
    drop(store);
    let model = fresh.dir().join("bank-renamed.bpmn");
    std::fs::write(&model, renamed_bank()).unwrap();
    let o = qflow(&[
        "migrate",
        id,
        "--to",
        model.to_str().unwrap(),
        "--db",
        &db,
        "--map",
        "authorize=authorizeBank",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let store = open(&db);
    let snap = Snapshot::decode(&store.instances().unwrap()[0].snapshot).unwrap();
    assert_eq!(snap.attempts("authorizeBank"), attempts);
    assert!(snap.in_backoff("authorizeBank"), "the marker is renamed");
    assert!(!snap.in_backoff("authorize") && !snap.has_attempts("authorize"));
    let timers: Vec<(String, i64)> = store
        .timers(id)
        .unwrap()
        .into_iter()
        .filter(|t| t.armed)
        .map(|t| (t.node, t.due_ms))
        .collect();
    assert_eq!(
        timers,
        retry
            .iter()
            .map(|d| ("authorizeBank".to_string(), *d))
            .collect::<Vec<_>>()
    );
    let outbox = store.outbox(id).unwrap();
    assert_eq!(outbox.len(), outbox_before);
    assert!(
        outbox.iter().all(|o| o.node == "authorizeBank"),
        "{outbox:?}"
    );
    let corr = store.correlations(id).unwrap();
    assert_eq!(corr.len(), 1);
    assert_eq!(
        (corr[0].key.as_str(), corr[0].node.as_str()),
        ("bank-authorize-1/authorizeBank", "authorizeBank")
    );
    drop(store);
    // The call on another channel is not a compatible node.
    let other = fresh.dir().join("bank-other-channel.bpmn");
    std::fs::write(
        &other,
        renamed_bank()
            .replace(r#"q:channel="bank""#, r#"q:channel="card""#)
            .replace(r#"channel="bank""#, r#"channel="card""#),
    )
    .unwrap();
    let o = qflow(&["migrate", id, "--to", other.to_str().unwrap(), "--db", &db]);
    assert_eq!(code(&o), 4);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("a call on channel bank"), "{err}");
    // And the renamed call finishes on its answer.
    let o = qflow(&[
        "resume",
        id,
        "--db",
        &db,
        "--scenario",
        "samples/scenarios/call-silent-then-answer.json",
        "--expect",
        "completed",
    ]);
    assert_eq!(
        code(&o),
        0,
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn every_failed_instance_of_a_deployment_is_repaired_at_once(fresh: &Fresh) {
    let db = failed_long_outage(fresh);
    // A second FAILED instance of the same deployment.
    let o = qflow(&["run", "samples/dbg08-long-outage.bpmn", "--db", &db]);
    assert_eq!(code(&o), 0);
    let o = qflow(&[
        "migrate",
        "--all-failed-of",
        "1",
        "--to",
        "samples/dbg08-repaired.bpmn",
        "--db",
        &db,
        "--map",
        "charge=chargeCard",
        "--reset-budget",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let o = qflow(&[
        "instances",
        "--db",
        &db,
        "--deployment",
        "2",
        "--format",
        "json",
    ]);
    let list: Value = serde_json::from_slice::<Value>(&o.stdout).unwrap()["instances"].clone();
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["instance"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["dbg08-1", "dbg08-2"]);
    assert!(list
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["status"] == "running"));
}

fn an_existing_database_of_the_previous_schema_opens_and_its_deployments_list(fresh: &Fresh) {
    let db = fresh.db();
    {
        let previous = qflow_engine::store::schema::LATEST - 1;
        let location = qflow_engine::store::Location::parse(&db).unwrap();
        let mut old = Store::connect_at(&location, previous).unwrap();
        old.deploy("p", "<definitions/>", 0).unwrap();
    }
    let o = qflow(&["deployments", "--db", &db, "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list[0]["deployment"], 1);
    assert_eq!(list[0]["retired"], Value::Null);
    assert_eq!(list[0]["model"], Value::Null);
}

fn resume_runs_under_the_scenario_beside_the_deployments_model_unless_told_otherwise(
    fresh: &Fresh,
) {
    let db = fresh.db();
    // A run with --db records the model file it deployed; parked at +2 min
    // after two failed attempts under the scenario beside it. Twice: one
    // database per way of resuming.
    let copy = fresh.db();
    for db in [&db, &copy] {
        let o = qflow(&[
            "run",
            "samples/dbg08-long-outage.bpmn",
            "--db",
            db,
            "--until",
            "PT2M",
        ]);
        assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    }
    let last = |o: &Output| -> Value {
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().last().unwrap()).unwrap()
    };
    // --no-scenario: every task succeeds.
    let o = qflow(&[
        "resume",
        "dbg08-1",
        "--db",
        &copy,
        "--no-scenario",
        "--format",
        "json",
    ]);
    assert_eq!(last(&o)["status"], "completed", "{}", last(&o));
    // By default, the scenario beside the deployment's model: the outage goes on.
    let o = qflow(&["resume", "dbg08-1", "--db", &db, "--format", "json"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("using scenario samples/scenarios/dbg08-long-outage.json (beside the model of deployment 1"),
        "{stderr}"
    );
    let end = last(&o);
    assert_eq!(
        (&end["status"], &end["code"], &end["attempts"]),
        (
            &Value::from("failed"),
            &Value::from("PROVIDER_DOWN"),
            &Value::from(6)
        ),
        "{end}"
    );
}

crate::on_both_stores!(a_run_of_an_edited_model_says_which_instances_the_earlier_version_left);

/// Rerunning an edited model on the same database starts a new instance
/// on a new deployment; the earlier one is named, with the migrate that
/// moves it, never left parked without a word.
fn a_run_of_an_edited_model_says_which_instances_the_earlier_version_left(fresh: &Fresh) {
    let db = fresh.db();
    let first = qflow(&[
        "run",
        "samples/dbg08-long-outage.bpmn",
        "--db",
        &db,
        "--until",
        "PT30S",
    ]);
    assert!(first.status.success());
    assert!(!String::from_utf8_lossy(&first.stderr).contains("earlier versions"));
    let edited = fresh.dir().join("edited.bpmn");
    let source = std::fs::read_to_string(repo().join("samples/dbg08-long-outage.bpmn")).unwrap();
    std::fs::write(
        &edited,
        source.replace("Charge the card", "Charge the card now"),
    )
    .unwrap();
    let second = qflow(&[
        "run",
        edited.to_str().unwrap(),
        "--scenario",
        "samples/scenarios/dbg08-long-outage.json",
        "--db",
        &db,
        "--until",
        "PT30S",
    ]);
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{err}");
    assert!(
        err.contains("dbg08-2 is a new instance on deployment 2")
            && err.contains("1 unfinished instance of the earlier versions is left")
            && err.contains(&format!("`qflow migrate dbg08-1 --to 2 --db {db}`")),
        "{err}"
    );
}
