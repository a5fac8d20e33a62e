//! The conveniences of a user's first week, through the built binary:
//! `qflow test` over every model's scenarios, `QFLOW_DB` and a
//! `qflow.toml`'s `db`, `check --deny warnings`, findings on stdout, `-` as
//! stdout, `--color` everywhere, durations typed as `5m`, did-you-mean on
//! filters, paging data in JSON, man pages that exist, `explain` by rule
//! name, and the quiet defaults (hints summarised, repeated deliveries
//! collapsed).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `qflow ARGS` in `dir` with `env` set (and QFLOW_DB, NO_COLOR and
/// CLICOLOR_FORCE cleared unless `env` sets them).
fn qflow_in(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_qflow"));
    cmd.current_dir(dir)
        .env_remove("QFLOW_DB")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(args).output().expect("qflow runs")
}

fn qflow(args: &[&str]) -> Output {
    qflow_in(&repo(), &[], args)
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn sample(name: &str) -> String {
    repo().join("samples").join(name).display().to_string()
}

// ---- qflow test ----

#[test]
fn qflow_test_passes_over_the_samples_every_scenario_with_its_expect() {
    let o = qflow(&["test", "samples"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let text = out(&o);
    let scenarios = std::fs::read_dir(repo().join("samples/scenarios"))
        .unwrap()
        .count();
    assert!(
        text.contains(&format!("running {scenarios} scenarios")),
        "{text}"
    );
    assert!(
        text.contains(
            "test samples/scenarios/dbg08-long-outage.json ... ok (failed:PROVIDER_DOWN)"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "test result: ok. {scenarios} passed; 0 failed; 0 errors;"
        )),
        "{text}"
    );
    // Every sample scenario says how its run must end.
    assert!(!text.contains("no expect"), "{text}");
}

/// A model's several scenarios: those in the folder beside it that name it
/// (bank-authorize.bpmn has six), and not the others.
#[test]
fn a_model_given_runs_its_own_scenarios_only() {
    let o = qflow(&["test", "samples/bank-authorize.bpmn", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    let tests = v["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 6, "{v:#}");
    assert!(tests
        .iter()
        .all(|t| t["model"] == "samples/bank-authorize.bpmn" && t["result"] == "ok"));
    assert_eq!(v["status"], "ok");
    assert_eq!(v["passed"], 6);
}

/// A model named as Activiti and Flowable name theirs, `order.bpmn20.xml`,
/// is a model wherever qflow looks for one: `check DIR` walks it, its stem
/// is `order` (the whole suffix dropped), so `run` uses
/// `scenarios/order.json` and `test` pairs that scenario with it.
#[test]
fn a_bpmn20_xml_model_is_checked_in_a_directory_and_runs_with_its_stem_s_scenario() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        sample("dbg08-long-outage.bpmn"),
        dir.path().join("order.bpmn20.xml"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("scenarios")).unwrap();
    std::fs::copy(
        repo().join("samples/scenarios/dbg08-long-outage.json"),
        dir.path().join("scenarios/order.json"),
    )
    .unwrap();

    let o = qflow_in(dir.path(), &[], &["check", "."]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    assert!(out(&o).contains("1 file checked"), "{}", out(&o));

    let o = qflow_in(dir.path(), &[], &["run", "order.bpmn20.xml"]);
    assert!(
        err(&o).contains("using scenario scenarios/order.json (beside the model"),
        "{}",
        err(&o)
    );
    assert!(out(&o).contains("PROVIDER_DOWN"), "{}", out(&o));

    let o = qflow_in(dir.path(), &[], &["test", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["passed"], 1, "{v:#}");
    let o = qflow_in(dir.path(), &[], &["test", "order.bpmn20.xml"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
}

fn copy_model(dir: &Path, model: &str) {
    std::fs::copy(sample(model), dir.join(model)).unwrap();
    std::fs::create_dir_all(dir.join("scenarios")).unwrap();
}

#[test]
fn an_expectation_that_fails_exits_3_and_says_how_the_run_ended() {
    let dir = tempfile::tempdir().unwrap();
    copy_model(dir.path(), "dbg08-long-outage.bpmn");
    let s = std::fs::read_to_string(repo().join("samples/scenarios/dbg08-long-outage.json"))
        .unwrap()
        .replace(
            r#""expect": "failed:PROVIDER_DOWN""#,
            r#""expect": "completed""#,
        );
    std::fs::write(dir.path().join("scenarios/dbg08-long-outage.json"), s).unwrap();
    // A second scenario of the same model, by "model", that holds.
    std::fs::write(
        dir.path().join("scenarios/quick.json"),
        r#"{"model": "../dbg08-long-outage.bpmn", "expect": "completed"}"#,
    )
    .unwrap();
    let o = qflow_in(dir.path(), &[], &["test"]);
    assert_eq!(code(&o), 3, "{}{}", out(&o), err(&o));
    let text = out(&o);
    assert!(
        text.contains("test ./scenarios/dbg08-long-outage.json ... FAILED"),
        "{text}"
    );
    assert!(
        text.contains("test ./scenarios/quick.json ... ok (completed)"),
        "{text}"
    );
    assert!(
        text.contains("expected completed, ended failed:PROVIDER_DOWN (exhausted, 6 attempts)"),
        "{text}"
    );
    assert!(
        text.contains("test result: FAILED. 1 passed; 1 failed; 0 errors;"),
        "{text}"
    );

    // JUnit XML: one suite for the model, a failure in it; it parses.
    let o = qflow_in(dir.path(), &[], &["test", ".", "--format", "junit"]);
    assert_eq!(code(&o), 3);
    let xml = out(&o);
    let mut reader = quick_xml::Reader::from_str(&xml);
    let (mut cases, mut failures) = (0, 0);
    loop {
        match reader.read_event().expect("well-formed JUnit XML") {
            quick_xml::events::Event::Eof => break,
            quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => {
                match e.name().as_ref() {
                    b"testcase" => cases += 1,
                    b"failure" => failures += 1,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    assert_eq!((cases, failures), (2, 1), "{xml}");
    assert!(
        xml.contains(
            r#"<testsuite name="./dbg08-long-outage.bpmn" tests="2" failures="1" errors="0""#
        ),
        "{xml}"
    );
}

#[test]
fn an_unreadable_scenario_or_one_for_no_model_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    copy_model(dir.path(), "dbg08-long-outage.bpmn");
    std::fs::write(
        dir.path().join("scenarios/dbg08-long-outage.json"),
        "{ not json",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("scenarios/orphan.json"),
        r#"{"expect": "completed"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("scenarios/typo.json"),
        r#"{"model": "../dbg08-long-outage.bpmn", "expect": "complete"}"#,
    )
    .unwrap();
    let o = qflow_in(dir.path(), &[], &["test", "--format", "json"]);
    assert_eq!(code(&o), 2, "{}{}", out(&o), err(&o));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["errors"], 3, "{v:#}");
    let messages: Vec<&str> = v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["message"].as_str().unwrap_or(""))
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("not valid JSON")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("is for no model") && m.contains("\"model\": \"../NAME.bpmn\"")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("did you mean `completed`")),
        "{messages:?}"
    );
    // Nothing to test at all is an error too, not a green run.
    let empty = tempfile::tempdir().unwrap();
    let o = qflow_in(empty.path(), &[], &["test"]);
    assert_eq!(code(&o), 2);
    assert!(err(&o).contains("no scenario found"), "{}", err(&o));
}

// ---- the database ----

#[test]
fn qflow_db_and_qflow_toml_name_the_database_and_the_flag_wins() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let model = sample("checkout.bpmn");
    let o = qflow_in(d, &[("QFLOW_DB", "env.db")], &["deploy", &model]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(d.join("env.db").is_file());
    let o = qflow_in(
        d,
        &[("QFLOW_DB", "env.db")],
        &["deployments", "--format", "json"],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(
        serde_json::from_str::<Value>(&out(&o))
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // The flag wins over the variable.
    let o = qflow_in(
        d,
        &[("QFLOW_DB", "env.db")],
        &["deployments", "--db", "missing.db"],
    );
    assert_eq!(code(&o), 2);
    assert!(err(&o).contains("missing.db"), "{}", err(&o));
    // A qflow.toml above the working directory, its path relative to itself.
    std::fs::write(d.join("qflow.toml"), "db = \"env.db\"\n").unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    let o = qflow_in(&d.join("sub"), &[], &["instances", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    // ...and the variable wins over it.
    let o = qflow_in(&d.join("sub"), &[("QFLOW_DB", "other.db")], &["instances"]);
    assert_eq!(code(&o), 2);
    assert!(err(&o).contains("other.db"), "{}", err(&o));
    // check takes the `db` key as a setting, not a mistake.
    let o = qflow_in(d, &[], &["check", &model]);
    assert_eq!(code(&o), 0, "{}", out(&o));
    assert!(!out(&o).contains("QF091"), "{}", out(&o));
    // Without any, the parser says what is missing.
    let bare = tempfile::tempdir().unwrap();
    let o = qflow_in(bare.path(), &[], &["instances"]);
    assert_eq!(code(&o), 2);
    assert!(err(&o).contains("--db"), "{}", err(&o));
}

/// A local run takes QFLOW_DB too, as every command that takes --db does
/// (the flag winning); a database it names that cannot be opened is an
/// error (exit 2), never a silent fall back to a temporary one.
#[test]
fn a_local_run_uses_qflow_db_and_the_flag_wins() {
    let dir = tempfile::tempdir().unwrap();
    let ops = dir.path().join("ops.db");
    let o = qflow_in(
        &repo(),
        &[("QFLOW_DB", ops.to_str().unwrap())],
        &["run", "samples/checkout.bpmn", "--format", "json"],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(
        ops.exists(),
        "the run's instance is kept in QFLOW_DB's database"
    );
    let o = qflow_in(
        &repo(),
        &[("QFLOW_DB", ops.to_str().unwrap())],
        &["instances", "--format", "json"],
    );
    assert!(out(&o).contains("checkout"), "{}", out(&o));
    let flag = dir.path().join("flag.db");
    let o = qflow_in(
        &repo(),
        &[("QFLOW_DB", dir.path().join("other.db").to_str().unwrap())],
        &[
            "run",
            "samples/checkout.bpmn",
            "--db",
            flag.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(flag.exists() && !dir.path().join("other.db").exists());
    let o = qflow_in(
        &repo(),
        &[("QFLOW_DB", "postgres://")],
        &["run", "samples/checkout.bpmn"],
    );
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert!(
        err(&o).contains("cannot connect to postgres://"),
        "{}",
        err(&o)
    );
}

// ---- check ----

#[test]
fn check_deny_warnings_fails_on_a_warning_and_findings_are_on_stdout() {
    let model = "samples/broken/QF030-unknown-q-code.bpmn";
    let o = qflow(&["check", model]);
    assert_eq!(code(&o), 0, "{}", out(&o));
    assert!(out(&o).contains("QF030"), "findings on stdout: {}", out(&o));
    assert!(
        out(&o).contains("1 file checked: 0 errors, 2 warnings"),
        "{}",
        out(&o)
    );
    assert_eq!(err(&o), "", "nothing on stderr");
    let o = qflow(&["check", "--deny", "warnings", model]);
    assert_eq!(code(&o), 1, "{}", out(&o));
    assert!(
        out(&o).contains("(warnings denied: --deny warnings)"),
        "{}",
        out(&o)
    );
    let o = qflow(&["check", "--deny", "warnings", "samples/checkout.bpmn"]);
    assert_eq!(code(&o), 0, "{}", out(&o));
    // An unreadable file is an error, on stderr.
    let o = qflow(&["check", "no-such.bpmn"]);
    assert_eq!(code(&o), 2);
    assert!(err(&o).contains("cannot read no-such.bpmn"), "{}", err(&o));
}

/// A namespace slip (QF043) is a warning `check` passes while `run`
/// refuses the model; a team's `qflow.toml` may raise it (or any verdict)
/// to an error, so CI fails as `run` would. Lowering one is refused by
/// name, with the line to write instead.
#[test]
fn qflow_toml_raises_a_warning_verdict_to_an_error_and_refuses_to_lower_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.bpmn");
    std::fs::copy(
        repo().join("samples/broken/QF043-namespace-near-miss.bpmn"),
        &model,
    )
    .unwrap();
    let model = model.to_str().unwrap();
    let o = qflow(&["check", model]);
    assert_eq!(code(&o), 0, "a warning alone passes: {}", out(&o));
    let toml = dir.path().join("qflow.toml");
    std::fs::write(&toml, "[rules]\nQF043 = \"error\"\n").unwrap();
    let o = qflow(&["check", model]);
    assert_eq!(code(&o), 1, "{}", out(&o));
    assert!(out(&o).contains("1 file checked: 1 error"), "{}", out(&o));
    std::fs::write(&toml, "[rules]\nQF043 = \"off\"\n").unwrap();
    let o = qflow(&["check", model]);
    assert_eq!(code(&o), 0, "{}", out(&o));
    let text = out(&o);
    assert!(
        text.contains("QF043 can only be raised to an error")
            && text.contains("write QF043 = \"error\""),
        "{text}"
    );
    assert!(
        text.contains("`urn:qflow:bpmn:2` is not qflow's namespace"),
        "still reported: {text}"
    );
}

#[test]
fn hints_of_one_code_are_one_line_and_v_lists_them() {
    let model = "samples/broken/QF004-dangling-reference.bpmn";
    let o = qflow(&["check", model]);
    let text = out(&o);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("hint[QF107]"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].starts_with(&format!(
            "hint[QF107] (label-required) {model}: 5 hints, at "
        )),
        "{}",
        lines[0]
    );
    let o = qflow(&["check", "-v", model]);
    // Each report ends with the line that names its page.
    assert_eq!(
        out(&o)
            .matches("qflow explain QF107 prints this code's page")
            .count(),
        5,
        "{}",
        out(&o)
    );
}

// ---- - as stdout ----

#[test]
fn a_dash_writes_the_svg_and_the_report_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let o = qflow_in(
        dir.path(),
        &[],
        &["render", &sample("checkout.bpmn"), "--svg", "-"],
    );
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(
        out(&o).starts_with("<svg") || out(&o).starts_with("<?xml"),
        "{}",
        out(&o)
    );
    assert!(out(&o).trim_end().ends_with("</svg>"));
    assert!(!dir.path().join("-").exists(), "no file named -");
    assert_eq!(err(&o), "");
    let db = dir.path().join("s.db");
    let db = db.to_str().unwrap();
    let o = qflow(&[
        "simulate",
        "samples/dbg08-long-outage.bpmn",
        "--jobs",
        "3",
        "--outage",
        "1h",
        "--db",
        db,
    ]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let o = qflow_in(dir.path(), &[], &["stats", "--db", db, "--report", "-"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(
        out(&o).starts_with("<!DOCTYPE html>"),
        "{}",
        &out(&o)[..100.min(out(&o).len())]
    );
    assert!(!dir.path().join("-").exists());
    let o = qflow(&["stats", "--db", db, "--report", "-", "--format", "json"]);
    assert_eq!(code(&o), 2);
    assert!(
        err(&o).contains("give the report a file name"),
        "{}",
        err(&o)
    );
}

// ---- colour ----

#[test]
fn every_subcommand_takes_color_and_the_environment_is_honoured() {
    for sub in [
        "explain",
        "test",
        "instances",
        "deployments",
        "man",
        "run",
        "stats",
    ] {
        let o = qflow(&[sub, "--color", "never", "--help"]);
        assert_eq!(code(&o), 0, "{sub}: {}", err(&o));
    }
    let model = "samples/broken/QF030-unknown-q-code.bpmn";
    let plain = qflow(&["check", model]);
    assert!(!out(&plain).contains('\x1b'), "a pipe gets no colour");
    let forced = qflow_in(&repo(), &[("CLICOLOR_FORCE", "1")], &["check", model]);
    assert!(
        out(&forced).contains('\x1b'),
        "CLICOLOR_FORCE colours a pipe"
    );
    let never = qflow_in(
        &repo(),
        &[("CLICOLOR_FORCE", "1")],
        &["check", "--color", "never", model],
    );
    assert!(!out(&never).contains('\x1b'), "the flag wins");
    let always = qflow_in(
        &repo(),
        &[("NO_COLOR", "1")],
        &["--color", "always", "check", model],
    );
    assert!(
        out(&always).contains('\x1b'),
        "the flag wins over NO_COLOR too"
    );
}

// ---- durations ----

#[test]
fn until_takes_5m_as_pt5m_and_a_bad_duration_names_the_literal() {
    let run = |until: &str| {
        qflow(&[
            "run",
            "samples/dbg08-charge.bpmn",
            "--scenario",
            "samples/scenarios/dbg08-long-outage.json",
            "--until",
            until,
            "--format",
            "json",
        ])
    };
    let (short, iso) = (run("5m"), run("PT5M"));
    assert_eq!(code(&short), 0, "{}", err(&short));
    assert_eq!(out(&short), out(&iso));
    let bad = run("5 min");
    assert_eq!(code(&bad), 2);
    assert!(
        err(&bad).contains("--until `5 min`: `5 min` is not a duration: write 5m or PT5M"),
        "{}",
        err(&bad)
    );
    let o = qflow(&[
        "project",
        "samples/dbg08-long-outage.bpmn",
        "--jobs",
        "10",
        "--outage",
        "2h",
    ]);
    assert_eq!(code(&o), 0, "{}", err(&o));
}

// ---- instances ----

fn failed_fleet(dir: &Path) -> String {
    let db = dir.join("f.db").display().to_string();
    let o = qflow(&[
        "simulate",
        "samples/dbg08-long-outage.bpmn",
        "--jobs",
        "5",
        "--outage",
        "P1D",
        "--db",
        &db,
    ]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    db
}

#[test]
fn instances_filter_by_code_page_in_json_and_suggest_a_near_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = failed_fleet(dir.path());
    // A simulated outage fails every instance with DEPENDENCY_DOWN.
    let o = qflow(&[
        "instances",
        "--db",
        &db,
        "--code",
        "DEPENDENCY_DOWN",
        "--limit",
        "2",
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["total"], 5, "{v:#}");
    assert_eq!(v["instances"].as_array().unwrap().len(), 2);
    assert_eq!(v["next_offset"], 2);
    assert!(v["instances"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["code"] == "DEPENDENCY_DOWN"));
    let o = qflow(&[
        "instances",
        "--db",
        &db,
        "--offset",
        "4",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(
        (v["total"].clone(), v["next_offset"].clone()),
        (5.into(), Value::Null),
        "{v:#}"
    );
    let o = qflow(&["instances", "--db", &db, "--code", "DEPENDENCY_DWN"]);
    assert_eq!(code(&o), 0);
    assert!(
        err(&o).contains("did you mean `DEPENDENCY_DOWN`?"),
        "{}",
        err(&o)
    );
    let o = qflow(&["instances", "--db", &db, "--dependency", "payments.chrage"]);
    assert_eq!(code(&o), 2, "{}", out(&o));
    assert!(
        err(&o).contains("did you mean `payments.charge`?"),
        "{}",
        err(&o)
    );
}

// ---- help, man, explain ----

#[test]
fn help_fits_each_command_and_every_man_page_named_exists() {
    for sub in ["stats", "respond"] {
        let o = qflow(&[sub, "--help"]);
        assert!(!out(&o).contains("per decision"), "{sub}: {}", out(&o));
    }
    let dir = tempfile::tempdir().unwrap();
    let o = qflow(&["man", "--out-dir", dir.path().to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let main = std::fs::read_to_string(dir.path().join("qflow.1")).unwrap();
    let mut named = 0;
    for part in main.split("qflow\\-").skip(1) {
        let name: String = part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if part[name.len()..].starts_with("(1)") {
            named += 1;
            assert!(
                dir.path().join(format!("qflow-{name}.1")).is_file(),
                "qflow(1) names qflow-{name}(1), which is not written"
            );
        }
    }
    assert!(named > 20, "{named} pages named");
    let o = qflow(&["man", "check"]);
    assert!(out(&o).contains("qflow\\-check"), "{}", out(&o));
    let o = qflow(&["man", "chek"]);
    assert_eq!(code(&o), 2);
    assert!(err(&o).contains("did you mean `check`?"), "{}", err(&o));
}

#[test]
fn explain_takes_rule_names_and_lists_the_severity_check_gives() {
    let by_rule = qflow(&["explain", "fake-join"]);
    assert_eq!(code(&by_rule), 0, "{}", err(&by_rule));
    assert_eq!(out(&by_rule), out(&qflow(&["explain", "QF105"])));
    let list = out(&qflow(&["explain"]));
    let qf107 = list.lines().find(|l| l.starts_with("QF107")).unwrap();
    let cols: Vec<&str> = qf107.split_whitespace().collect();
    assert_eq!(
        &cols[..4],
        ["QF107", "hint", "error", "label-required"],
        "{qf107}"
    );
    let qf105 = list.lines().find(|l| l.starts_with("QF105")).unwrap();
    assert!(qf105.split_whitespace().nth(1) == Some("error"), "{qf105}");
}

// ---- quiet by default ----

/// A silent counterpart redelivered to: the human output says the run of
/// identical deliveries once, with a count and the last one.
#[test]
fn repeated_identical_deliveries_are_one_line_with_a_count() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.json"),
        r#"{"deliveries": {"bank": [{"fail": "connection refused"}]}}"#,
    )
    .unwrap();
    let s = dir.path().join("s.json");
    let args = |fmt: &'static str| {
        vec![
            "run".to_string(),
            "samples/bank-authorize.bpmn".to_string(),
            "--scenario".to_string(),
            s.display().to_string(),
            "--format".to_string(),
            fmt.to_string(),
        ]
    };
    let json = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .args(args("json"))
        .output()
        .unwrap();
    let deliveries = out(&json)
        .lines()
        .filter(|l| l.contains(r#""kind":"delivery""#))
        .count();
    assert!(deliveries >= 4, "{}", out(&json));
    let human = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .args(args("human"))
        .output()
        .unwrap();
    let text = out(&human);
    // Each request's five deliveries: the first, a count of the two
    // between, the last held one, then the one that poisons it.
    let shown = text
        .lines()
        .filter(|l| l.contains(" delivery ") && l.contains("failed (connection refused)"))
        .count();
    assert!(shown < deliveries, "{shown} of {deliveries}: {text}");
    assert!(
        text.contains("… 2 more deliveries like it (--format json lists each), the last:\n"),
        "{text}"
    );
    assert!(
        text.contains("delivery 4 of bank-authorize-1/authorize/1 failed (connection refused)"),
        "{text}"
    );
}

/// `scripts/test.sh --quick` leaves the slow tests out by name and `--slow`
/// runs them by target: the two lists must name the same test files, or a
/// slow test would run in neither (or a target listed as slow would be
/// missing).
#[test]
fn the_slow_tests_scripts_test_sh_names_are_the_ones_that_mark_themselves_slow() {
    let script = std::fs::read_to_string(repo().join("scripts/test.sh")).unwrap();
    let listed: std::collections::BTreeSet<String> = script
        .lines()
        .find_map(|l| l.trim().strip_prefix("slow_targets=("))
        .and_then(|rest| rest.strip_suffix(')'))
        .expect("scripts/test.sh has a slow_targets=(…) line")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    // Spelled in two parts so this file does not mark itself.
    let call = ["support::slow_test_left_out", "(\""].concat();
    let mut marked = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(repo().join("tests")).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "rs")
            && std::fs::read_to_string(&p).unwrap().contains(&call)
        {
            marked.insert(p.file_stem().unwrap().to_string_lossy().into_owned());
        }
    }
    assert!(!marked.is_empty(), "no test marks itself slow");
    assert_eq!(
        listed, marked,
        "scripts/test.sh's slow_targets and the tests calling support::slow_test_left_out differ"
    );
}
