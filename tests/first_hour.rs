//! A newcomer's mistakes, end to end through the built binary: a scenario
//! keyed by names the model does not have, a namespace slip, an outcome CI
//! asserts, a reconciliation that names no node or no instance, a `--db` that
//! cannot be opened. None of them may come out green.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn qflow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("qflow runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every stdout line parses as JSON; the parsed lines.
fn json_lines(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn a_scenario_keyed_by_the_node_id_is_refused_with_the_task_name() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        &dir,
        "s.json",
        r#"{"tasks":{"charge":[{"fail":{"code":"DOWN","class":"permanent"}}]}}"#,
    );
    let o = qflow(&["run", "samples/dbg08-charge.bpmn", "--scenario", &s]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("field `tasks.charge`: `charge` is the id of the node whose q:task is `payments.charge` (did you mean `payments.charge`?)"), "{e}");
    assert!(
        e.contains("scenarios key `tasks` by the q:task name"),
        "{e}"
    );
    assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
    // The console refuses it the same way.
    let o = qflow(&[
        "console",
        "samples/dbg08-charge.bpmn",
        "--scenario",
        &s,
        "--headless",
        " ",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("field `tasks.charge`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_misspelt_channel_and_an_event_on_a_missing_node_are_refused_with_a_did_you_mean() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        &dir,
        "s.json",
        r#"{"channels":{"bnak":[{"silent":true}]},"events":[{"redeliver":"authorise"}]}"#,
    );
    let o = qflow(&[
        "run",
        "samples/bank-authorize.bpmn",
        "--scenario",
        &s,
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let rec = json_lines(&o);
    assert_eq!(rec.len(), 1, "{rec:?}");
    assert_eq!(rec[0]["status"], "error");
    assert_eq!(rec[0]["error"], "scenario");
    let errors = rec[0]["errors"].as_array().unwrap();
    assert_eq!(errors[0]["field"], "channels.bnak");
    assert!(errors[0]["message"]
        .as_str()
        .unwrap()
        .contains("(did you mean `bank`?)"));
    assert_eq!(errors[1]["field"], "events[0].redeliver");
    assert!(errors[1]["message"]
        .as_str()
        .unwrap()
        .contains("the model has no node `authorise` (did you mean `authorize`?)"));
}

#[test]
fn a_namespace_slip_is_a_warning_to_check_and_refused_by_run_with_code_and_place() {
    let model = "samples/broken/QF043-namespace-near-miss.bpmn";
    let o = qflow(&["check", model]);
    assert_eq!(code(&o), 0, "a warning: {}", stdout(&o));
    assert!(stdout(&o).contains("QF043"));
    let o = qflow(&["run", model]);
    assert_eq!(code(&o), 1);
    let e = stderr(&o);
    assert!(e.contains("QF043"), "{e}");
    assert!(e.contains("QF043-namespace-near-miss.bpmn:3:28"), "{e}");
    let o = qflow(&["run", model, "--format", "json"]);
    assert_eq!(code(&o), 1);
    let rec = json_lines(&o);
    assert_eq!(rec[0]["error"], "model");
    assert_eq!(rec[0]["diagnostics"][0]["code"], "QF043");
    assert_eq!(rec[0]["diagnostics"][0]["line"], 3);
    let o = qflow(&["run", "samples/broken/QF044-not-executable.bpmn"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("QF044"), "{}", stderr(&o));
    let o = qflow(&[
        "console",
        "samples/broken/QF044-not-executable.bpmn",
        "--headless",
        " ",
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("QF044 samples/broken/QF044-not-executable.bpmn:7:4"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn expect_passes_when_the_run_ends_as_said_and_exits_3_otherwise() {
    let model = "samples/dbg08-long-outage.bpmn";
    for (expect, want) in [
        ("failed", 0),
        ("failed:PROVIDER_DOWN", 0),
        ("failed:OTHER", 3),
        ("completed", 3),
        ("waiting", 3),
    ] {
        let o = qflow(&["run", model, "--expect", expect, "--format", "json"]);
        assert_eq!(code(&o), want, "--expect {expect}: {}", stderr(&o));
        let last = json_lines(&o).pop().unwrap();
        assert_eq!(last["status"], "failed", "the final state is still printed");
        if want == 3 {
            assert!(
                stderr(&o).contains(&format!(
                    "expected the run to end {expect}, it ended failed:PROVIDER_DOWN"
                )),
                "{}",
                stderr(&o)
            );
        }
    }
    let o = qflow(&[
        "run",
        "samples/dbg08-unknown-outcome.bpmn",
        "--expect",
        "waiting:reconciliation",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = qflow(&["run", model, "--expect", "complete"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("did you mean `completed`?"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_missing_file_exits_2_in_every_subcommand_and_json_stays_json() {
    for args in [
        &["check", "no-such.bpmn"][..],
        &["run", "no-such.bpmn"],
        &["console", "no-such.bpmn", "--headless", " "],
    ] {
        let o = qflow(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
    }
    let o = qflow(&["run", "no-such.bpmn", "--format", "json"]);
    let rec = json_lines(&o);
    assert_eq!(rec.len(), 1);
    assert_eq!(rec[0]["status"], "error");
    assert_eq!(rec[0]["error"], "unreadable");
    assert!(rec[0]["message"].as_str().unwrap().contains("no-such.bpmn"));
    let o = qflow(&["check", "no-such.bpmn", "--format", "json"]);
    assert!(
        serde_json::from_str::<Value>(&stdout(&o)).is_ok(),
        "{}",
        stdout(&o)
    );
}

#[test]
fn resolve_on_a_node_that_does_not_exist_is_a_usage_error_with_a_did_you_mean() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db").display().to_string();
    let model = "samples/dbg08-unknown-outcome.bpmn";
    assert_eq!(code(&qflow(&["run", model, "--db", &db])), 0);
    let o = qflow(&["run", model, "--db", &db, "--resolve", "chrage=succeeded"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("the model has no node `chrage` (did you mean `charge`?)"),
        "{}",
        stderr(&o)
    );
    // Nothing was recorded: the instance still waits, and resolves.
    let o = qflow(&[
        "run",
        model,
        "--db",
        &db,
        "--resolve",
        "charge=succeeded",
        "--expect",
        "completed",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stdout(&o).contains("ignored"), "{}", stdout(&o));
}

#[test]
fn resolve_with_no_unfinished_instance_refuses_instead_of_starting_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db").display().to_string();
    let model = "samples/dbg08-unknown-outcome.bpmn";
    let o = qflow(&["run", model, "--db", &db, "--resolve", "charge=succeeded"]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("holds no unfinished instance"),
        "{}",
        stderr(&o)
    );
    let store = qflow_engine::store::Store::open(std::path::Path::new(&db)).unwrap();
    assert!(store.instances().unwrap().is_empty(), "no instance started");
    // Without --db there is nothing to resolve at all.
    let o = qflow(&["run", model, "--resolve", "charge=succeeded"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--db"), "{}", stderr(&o));
}

#[test]
fn a_run_without_db_that_ends_waiting_says_to_rerun_with_db() {
    let o = qflow(&["run", "samples/dbg08-unknown-outcome.bpmn"]);
    assert_eq!(code(&o), 0);
    let last = stdout(&o).lines().last().unwrap().to_string();
    assert!(last.contains("re-run with --db FILE to keep it"), "{last}");
}

#[test]
fn human_lines_show_console_times_aligned_at_any_length() {
    let o = qflow(&["run", "samples/dbg08-long-outage.bpmn"]);
    let text = stdout(&o);
    assert!(
        text.contains("  +2h 36m  attempt     charge  attempt 5 of payments.charge"),
        "{text}"
    );
    assert!(
        text.contains("eligible at +13h 1m (after 10 h 25 min)"),
        "{text}"
    );
    // Every decision line puts its kind, node and detail at the same columns.
    let decisions: Vec<&str> = text.lines().filter(|l| l.starts_with(' ')).collect();
    assert!(decisions.len() >= 7, "{text}");
    let columns = |l: &str| -> Vec<usize> {
        // Past the right-aligned time: where each run of non-spaces after a gap
        // of two or more spaces starts (kind, node, detail).
        let b = l.as_bytes();
        (10..b.len())
            .filter(|&i| b[i] != b' ' && b[i - 1] == b' ' && b[i - 2] == b' ')
            .take(3)
            .collect()
    };
    let first = columns(decisions[0]);
    assert_eq!(first.len(), 3, "{}", decisions[0]);
    for l in &decisions {
        assert_eq!(columns(l), first, "misaligned: {l}\n{text}");
    }
}

#[test]
fn db_errors_name_the_path_and_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-dir/run.db").display().to_string();
    let o = qflow(&["run", "samples/dbg08-charge.bpmn", "--db", &missing]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains(&missing), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    let text = write(&dir, "notes.db", &"not a database, only words. ".repeat(40));
    let o = qflow(&["run", "samples/dbg08-charge.bpmn", "--db", &text]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains(&format!("{text} is not a database")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn explain_prints_the_codes_page_offline_and_suggests_a_close_code() {
    let o = qflow(&["explain", "qf22"]);
    assert_eq!(code(&o), 0);
    let page = std::fs::read_to_string(repo().join("docs/diagnostics/QF022.md")).unwrap();
    assert_eq!(
        stdout(&o),
        page,
        "the page as written in docs/, nothing else"
    );
    // The list gives each code's default severity: bpmnlint's two rules
    // outside its recommended set are off until configured.
    let o = qflow(&["explain"]);
    let list = stdout(&o);
    let row = |code: &str| -> Vec<String> {
        let line = list.lines().find(|l| l.starts_with(code)).unwrap_or("");
        line.split_whitespace()
            .take(3)
            .map(str::to_string)
            .collect()
    };
    assert_eq!(row("QF126"), ["QF126", "off", "off"], "{list}");
    assert_eq!(row("QF125"), ["QF125", "warning", "warning"], "{list}");
    let o = qflow(&["explain", "QF0222"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("did you mean QF022?"), "{}", stderr(&o));
}

#[test]
fn every_diagnostic_names_the_command_that_prints_its_page_and_no_dead_address() {
    let o = qflow(&[
        "check",
        "--format",
        "json",
        "samples/broken/QF022-retry-beside-routed-timer.bpmn",
    ]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    for d in v.as_array().unwrap() {
        let id = d["code"].as_str().unwrap();
        assert_eq!(d["explain"], format!("qflow explain {id}"), "{d}");
        assert!(d.get("url").is_none(), "{d}");
        // The command it names prints the page.
        let page = qflow(&["explain", id]);
        assert_eq!(code(&page), 0);
        assert!(stdout(&page).starts_with(&format!("# {id}")));
    }
    // No placeholder address anywhere a user meets one.
    let cargo = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    assert!(!cargo.contains("example.invalid"), "Cargo.toml");
    assert!(!stdout(&o).contains("example.invalid"));
}

#[test]
fn color_never_and_always_decide_escapes_and_the_report_names_qflow_explain() {
    let model = "samples/broken/QF022-retry-beside-routed-timer.bpmn";
    let o = qflow(&["check", "--color", "never", model]);
    assert!(!stdout(&o).contains('\u{1b}'), "no escapes");
    assert!(
        stdout(&o).contains("qflow explain QF022 prints this code's page"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("://"), "no address: {}", stdout(&o));
    // Forced colour, even on a hyperlink-capable terminal: colours, and the
    // way to the page a command a person can run offline.
    let o = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .env_remove("NO_COLOR")
        .env("FORCE_HYPERLINK", "1")
        .args(["check", "--color", "always", model])
        .output()
        .unwrap();
    let e = stdout(&o);
    assert!(e.contains("\u{1b}["), "colour escapes: {e}");
    assert!(e.contains("qflow explain QF022"), "{e}");
    assert!(
        !e.contains("\u{1b}]8;"),
        "no hyperlink to a dead address: {e}"
    );
}

#[test]
fn a_typo_in_max_attempts_is_one_finding_and_notes_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        &dir,
        "typo.bpmn",
        r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="start" name="Start"/>
    <bpmn:serviceTask id="charge" name="Charge" q:task="payments.charge">
      <bpmn:extensionElements><q:retry maxAtempts="6" backoff="PT1M" jitter="full"/></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:endEvent id="end" name="End"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="charge"/>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="end"/>
  </bpmn:process>
</bpmn:definitions>"#,
    );
    let o = qflow(&["check", "--format", "json", &m]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let codes: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        ["QF006", "QF040"],
        "root cause first, no QF012 consequence"
    );
    let o = qflow(&["check", &m]);
    let e = stdout(&o);
    assert!(e.contains("info[QF040] "), "{e}");
    assert!(e.contains("its instances wait durably"), "{e}");
    assert!(
        !e.contains("parks durably between attempts"),
        "the reasons need -v: {e}"
    );
    let o = qflow(&["check", "-v", &m]);
    assert!(
        stdout(&o).contains("parks durably between attempts"),
        "{}",
        stdout(&o)
    );
    let o = qflow(&["check", "-q", "--format", "json", &m]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1, "-q hides the note: {v}");
    let o = qflow(&[
        "check",
        "--min-severity",
        "error",
        "samples/dbg08-charge.bpmn",
    ]);
    assert!(!stdout(&o).contains("QF040"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("1 below the minimum severity not shown"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn completions_and_the_man_page_are_generated() {
    for shell in ["bash", "zsh", "fish"] {
        let o = qflow(&["completions", shell]);
        assert_eq!(code(&o), 0, "{shell}");
        assert!(stdout(&o).contains("explain"), "{shell}: {}", stdout(&o));
    }
    let o = qflow(&["man"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains(".TH qflow 1"));
}

/// `qflow check --format json samples | head -1`: the reader goes away after
/// one line. The command ends quietly with 141 (what a shell reports for a
/// program ended by SIGPIPE), not with a panic and a backtrace on stderr.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .env("RUST_BACKTRACE", "1")
        .args(["check", "--format", "json", "samples"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("qflow runs");
    // The report is well over a pipe's buffer: read its first bytes, then
    // close the pipe while qflow is still writing.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"[");
    drop(stdout);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(141), "stderr: {err}");
    assert!(!err.contains("panicked"), "stderr: {err}");
}

/// A script asked for JSON and made a usage mistake (a missing model, an
/// unknown flag, a bad value): stdout is still JSON, exit 2, and the parser's
/// own text with the usage line is on stderr.
#[test]
fn usage_errors_with_format_json_still_print_json() {
    for (args, message) in [
        (
            &["run", "--format", "json"][..],
            "the following required arguments were not provided: <MODEL>",
        ),
        (
            &["instances", "--db", "x.db", "--format=json", "--bogus"][..],
            "unexpected argument '--bogus' found",
        ),
        (
            &["project", "--format", "json", "samples/checkout.bpmn"][..],
            "the following required arguments were not provided: --jobs <N>",
        ),
    ] {
        let o = qflow(args);
        assert_eq!(code(&o), 2, "{args:?}");
        let v: Value = serde_json::from_str(stdout(&o).trim())
            .unwrap_or_else(|e| panic!("{args:?}: not JSON: {}: {e}", stdout(&o)));
        assert_eq!(v["status"], "error", "{args:?}: {v}");
        assert_eq!(v["error"], "usage", "{args:?}: {v}");
        assert_eq!(v["message"], message, "{args:?}: {v}");
        assert!(
            stderr(&o).contains("Usage: qflow"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // check's JSON is an array of diagnostics: an empty one.
    let o = qflow(&[
        "check",
        "--format",
        "json",
        "--bogus",
        "samples/checkout.bpmn",
    ]);
    assert_eq!(code(&o), 2);
    assert_eq!(stdout(&o).trim(), "[]");
    // Without --format json the parser's text alone, stdout empty.
    let o = qflow(&["run"]);
    assert_eq!(code(&o), 2);
    assert_eq!(stdout(&o), "");
}

/// The checkout sample, copied under a directory whose parent holds a
/// `.bpmnlintrc` extending bpmnlint's recommended rules (a team's, or a
/// stray one in `/tmp`): the diagram and label rules become errors and
/// `run` refuses the model that runs from the repository. The refusal, the
/// check and the console name the file that decided it; without that the
/// user sees eleven "missing from the diagram" errors on a sample that
/// "works on the other machine".
#[test]
fn a_refusal_decided_by_a_parent_bpmnlintrc_names_that_file() {
    let team = tempfile::tempdir().unwrap();
    write(
        &team,
        ".bpmnlintrc",
        r#"{ "extends": "bpmnlint:recommended" }"#,
    );
    std::fs::create_dir(team.path().join("models")).unwrap();
    let model = team.path().join("models/checkout.bpmn");
    std::fs::copy(repo().join("samples/checkout.bpmn"), &model).unwrap();
    // The file as the commands show it: relative to the working directory
    // (the repository here) when under it, else absolute.
    let rc = team.path().join(".bpmnlintrc");
    let rc = rc.strip_prefix(repo()).unwrap_or(&rc).display().to_string();
    let model = model.display().to_string();
    let run = qflow(&["run", &model, "--no-scenario"]);
    assert_eq!(code(&run), 1, "{}", stderr(&run));
    assert!(
        stderr(&run).contains(&format!(
            "checkout.bpmn: the model is refused (modelling rules configured by {rc}); nothing was run"
        )),
        "{}",
        stderr(&run)
    );
    let check = qflow(&["check", "-q", &model]);
    assert!(
        stdout(&check).contains(&format!(
            "note: modelling rules configured by {rc}\n1 file checked: 11 errors"
        )),
        "{}",
        stdout(&check)
    );
    let console = qflow(&["console", &model, "--no-scenario", "--headless", "q"]);
    assert!(
        stderr(&console).contains(&format!(
            "does not load (modelling rules configured by {rc}):"
        )),
        "{}",
        stderr(&console)
    );
    // qflow's own verdicts are not the configuration's: with a
    // `.bpmnlintrc` that runs no rule, a model refused for a bad duration
    // alone does not blame the file.
    write(&team, ".bpmnlintrc", r#"{ "rules": {} }"#);
    let broken = std::fs::read_to_string(&model)
        .unwrap()
        .replace(r#"backoff="PT30S PT2M""#, r#"backoff="PT30""#);
    std::fs::write(&model, broken).unwrap();
    let refused = qflow(&["run", &model, "--no-scenario"]);
    assert_eq!(code(&refused), 1, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("QF008")
            && stderr(&refused).contains("checkout.bpmn: the model is refused; nothing was run"),
        "{}",
        stderr(&refused)
    );
}

/// `qflow respond` on an instance that exists but whose call is not waiting
/// (answered already, or a typo in the node) used to say
/// "no-such-instance: no live correlation has that key", which sends the
/// user looking for a missing instance. It says what is true instead.
#[test]
fn respond_says_why_a_call_of_an_existing_instance_is_not_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db").display().to_string();
    let silent = write(
        &dir,
        "silent.json",
        r#"{"channels": {"bank": [{"silent": true}]}}"#,
    );
    let run = qflow(&[
        "run",
        "samples/checkout.bpmn",
        "--scenario",
        &silent,
        "--db",
        &db,
        "--until",
        "PT20S",
    ]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let answer = |node: &str| {
        qflow(&[
            "respond",
            node,
            "--db",
            &db,
            "--body",
            r#"{"captured": true}"#,
        ])
    };
    let first = answer("checkout-1/capture");
    assert_eq!((code(&first), stdout(&first).trim()), (0, "accepted"));
    let again = answer("checkout-1/capture");
    assert_eq!(code(&again), 4);
    assert!(
        stdout(&again).starts_with("not-waiting: ") && stdout(&again).contains("answered already"),
        "{}",
        stdout(&again)
    );
    let typo = answer("checkout-1/captur");
    assert!(
        stdout(&typo)
            .contains("instance checkout-1 has no node captur (did you mean checkout-1/capture?)"),
        "{}",
        stdout(&typo)
    );
    let nobody = answer("checkout-9/capture");
    assert!(
        stdout(&nobody).starts_with("no-such-instance"),
        "{}",
        stdout(&nobody)
    );
}

/// Every command that cannot find an instance points at the command that
/// lists them, `qflow instances`; `render --instance` pointed at the console.
#[test]
fn render_of_an_unknown_instance_points_at_qflow_instances() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db").display().to_string();
    let svg = dir.path().join("x.svg").display().to_string();
    let run = qflow(&["run", "samples/checkout.bpmn", "--db", &db]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let render = qflow(&[
        "render",
        "samples/checkout.bpmn",
        "--svg",
        &svg,
        "--db",
        &db,
        "--instance",
        "checkout-9",
    ]);
    assert_eq!(code(&render), 2);
    assert!(
        stderr(&render).contains(&format!(
            "--instance checkout-9: no such instance in {db} (`qflow instances --db {db}` lists them)"
        )),
        "{}",
        stderr(&render)
    );
}
