//! `qflow console` end to end through the binary, scripted with --headless:
//! the DBG-08 sample stepped to exhaustion, a database resumed and then
//! attached, and the usage errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod support;
use support::stores::{open, Fresh};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn console(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .arg("console")
        .args(args)
        .output()
        .expect("qflow runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn dbg08_always_failing_steps_to_the_failed_screen() {
    let o = console(&[
        "samples/dbg08-charge.bpmn",
        "--scenario",
        "samples/scenarios/dbg08-long-outage.json",
        "--headless",
        "      ",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("FAILED PROVIDER_DOWN · exhausted · 6 attempts"),
        "{out}"
    );
    assert_eq!(out.matches("✗ PROVIDER_DOWN transient").count(), 6, "{out}");
    assert_eq!(out.lines().count(), 30);
}

/// The handler's words ("503 from the provider") reach the console's
/// history lines and the incident read in full (`enter` on the focused
/// Incidents panel), not only `qflow show`.
#[test]
fn the_failure_message_reaches_the_history_and_the_incident_popup() {
    let o = console(&[
        "samples/dbg08-charge.bpmn",
        "--scenario",
        "samples/scenarios/dbg08-long-outage.json",
        "--headless",
        "      <tab><tab><tab><tab><tab><tab><enter>",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("instance failed at charge: PROVIDER_DOWN (exhausted): 503 from the provider"),
        "{out}"
    );
    assert!(
        out.contains("#6 PROVIDER_DOWN  failed transient “503 from the provider” → failed"),
        "{out}"
    );
}

crate::on_both_stores!(
    a_database_resumes_then_attaches_with_failed_first,
    the_console_attached_shows_a_failed_instance_a_replica_left,
    the_console_records_the_model_file_on_its_deployment_as_run_does,
);

fn a_database_resumes_then_attaches_with_failed_first(fresh: &Fresh) {
    let db = fresh.db();
    let db = db.as_str();
    let model = "samples/dbg08-charge.bpmn";
    let sc = "samples/scenarios/dbg08-long-outage.json";
    let o = console(&[model, "--scenario", sc, "--db", db, "--headless", "   "]);
    assert!(o.status.success(), "{}", text(&o).1);
    let o = console(&[model, "--scenario", sc, "--db", db, "--headless", ""]);
    let (out, _) = text(&o);
    assert!(out.contains("resumed unfinished instance dbg08-1"), "{out}");
    assert!(out.contains("now +6m"), "{out}");
    let o = console(&[model, "--scenario", sc, "--db", db, "--headless", "   "]);
    assert!(
        text(&o).0.contains("FAILED PROVIDER_DOWN"),
        "{}",
        text(&o).0
    );
    // A second, completed instance; the list still puts the FAILED one first.
    let o = console(&[model, "--db", db, "--headless", "   "]);
    assert!(text(&o).0.contains("COMPLETED"), "{}", text(&o).0);
    let o = console(&["--db", db, "--headless", "", "--size", "80x10"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let failed = out.find("FAILED    dbg08-1").expect(&out);
    let completed = out.find("COMPLETED dbg08-2").expect(&out);
    assert!(failed < completed, "{out}");
    assert!(out.contains("PROVIDER_DOWN (exhausted)"), "{out}");
    // Opened read-only: acting keys change nothing.
    let o = console(&["--db", db, "--headless", "<enter> "]);
    let (out, _) = text(&o);
    assert!(out.contains("read-only"), "{out}");
}

/// A replica serving a database (a PostgreSQL one: replicas on several
/// hosts) leaves a FAILED instance there, and the console attached to the
/// same database lists it (FAILED, with its failure) and opens it.
fn the_console_attached_shows_a_failed_instance_a_replica_left(fresh: &Fresh) {
    use qflow_engine::runtime::graph::Graph;
    use qflow_engine::runtime::{decide, Scenario};
    let db = fresh.db();
    let model = "samples/dbg08-long-outage.bpmn";
    let sc = "samples/scenarios/dbg08-long-outage.json";
    let source = std::fs::read_to_string(repo().join(model)).unwrap();
    let scenario = Scenario::parse(&std::fs::read_to_string(repo().join(sc)).unwrap()).unwrap();
    let graph = Graph::compile(&qflow_engine::load(&source).unwrap()).unwrap();
    let id = {
        let mut store = open(&db);
        let dep = store.deploy(&graph.process_id, &source, 0).unwrap();
        let start = decide::start(&graph, &scenario.variables, 0);
        store.start_instance(&dep, &start, 0).unwrap()
    };
    let served = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .args(["run", model, "--scenario", sc, "--db", &db, "--replica"])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(served.status.success(), "{}", text(&served).1);
    let o = console(&["--db", &db, "--headless", "", "--size", "100x12"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains(&format!("FAILED    {id}")), "{out}");
    assert!(out.contains("PROVIDER_DOWN (exhausted)"), "{out}");
    // The password-free URL labels the view; opening the instance says why it failed.
    let o = console(&["--db", &db, "--headless", "<enter>"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("PROVIDER_DOWN"), "{out}");
}

#[test]
fn usage_and_input_errors_say_what_to_do() {
    let o = console(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("give a MODEL to run"), "{}", text(&o).1);

    let o = console(&["samples/dbg08-charge.bpmn"]);
    assert_eq!(o.status.code(), Some(2), "no terminal, no --headless");
    assert!(text(&o).1.contains("needs a terminal"), "{}", text(&o).1);

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"tasks": {"payments.charge": [{"fail": {"code": "X", "class": "sometimes"}}]}}"#,
    )
    .unwrap();
    let o = console(&[
        "samples/dbg08-charge.bpmn",
        "--scenario",
        bad.to_str().unwrap(),
        "--headless",
        "",
    ]);
    assert_eq!(o.status.code(), Some(2), "a bad scenario is 2, as in run");
    assert!(
        text(&o).1.contains("class"),
        "the error names the field: {}",
        text(&o).1
    );

    let o = console(&["--db", "/nonexistent/q.db"]);
    assert_eq!(o.status.code(), Some(2), "a missing file is 2 everywhere");
    assert!(
        text(&o).1.contains("no such database file"),
        "{}",
        text(&o).1
    );

    let o = console(&["samples/dbg08-charge.bpmn", "--headless", "<nope>"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("<nope>"), "{}", text(&o).1);
}

/// The console judges a model with its configuration files, as `check` and
/// `run` do: two blank start events refuse an executable qflow model by
/// default, and a `qflow.toml` beside it that switches the rule off lets the
/// console open it.
#[test]
fn the_console_reads_the_models_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("two-starts.bpmn");
    std::fs::copy(
        repo().join("samples/broken/QF119-two-blank-start-events.bpmn"),
        &model,
    )
    .unwrap();
    let m = model.to_str().unwrap();
    let o = console(&[m, "--headless", " "]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("QF119"), "{err}");

    std::fs::write(
        dir.path().join("qflow.toml"),
        "[rules]\nsingle-blank-start-event = \"off\"\n",
    )
    .unwrap();
    let o = console(&[m, "--headless", "    "]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("COMPLETED"), "{out}");
    // `qflow run` agrees on the same file and configuration.
    let o = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .args(["run", m])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
}

/// `qflow console MODEL --db DB` records the model file on the deployment
/// it makes, exactly as `qflow run MODEL --db DB` does (both open their
/// session through the engine's one path): `qflow deployments` names the
/// file, never "(by a run)", and `qflow resume` can find its scenario.
fn the_console_records_the_model_file_on_its_deployment_as_run_does(fresh: &Fresh) {
    let model = "samples/dbg08-charge.bpmn";
    let by_console = fresh.db();
    let by_run = fresh.db();
    let o = console(&[model, "--db", &by_console, "--headless", "   "]);
    assert!(o.status.success(), "{}", text(&o).1);
    let o = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .args(["run", model, "--db"])
        .arg(&by_run)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    let deployments = |db: &str| -> serde_json::Value {
        let o = Command::new(env!("CARGO_BIN_EXE_qflow"))
            .current_dir(repo())
            .args(["deployments", "--format", "json", "--db"])
            .arg(db)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o).1);
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let (c, r) = (deployments(&by_console), deployments(&by_run));
    assert_eq!(c[0]["model"], model, "{c}");
    assert_eq!(c[0]["model"], r[0]["model"]);
    assert_eq!(c[0]["hash"], r[0]["hash"]);
    assert_eq!(c.as_array().unwrap().len(), 1, "one deployment: {c}");

    // A second session on the same database resumes on that deployment.
    let o = console(&[model, "--db", &by_console, "--headless", ""]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(deployments(&by_console).as_array().unwrap().len(), 1);
}
