//! A deferred failure through the binary: the handler says "not yet, try at
//! this time", the attempt is re-run then with the same attempt number (no
//! budget burned), the park is a durable retry timer of class `deferred`
//! (it survives the process: `resume` runs it), and `maxElapsed` still ends
//! a deferral that would go on past it.

mod support;

use serde_json::Value;
use support::stores::Fresh;
use support::{lines, qflow};

const MODEL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="defs">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    <bpmn:serviceTask id="t" q:task="catalogue.read"><bpmn:extensionElements>RETRY</bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

const DEFER: &str =
    r#"{"fail":{"code":"CATALOGUE_NOT_ACTIVE","class":"deferred","retryAfter":"PT1H"}}"#;

fn setup(fresh: &Fresh, retry: &str, outcomes: &str) {
    let dir = fresh.dir();
    std::fs::write(dir.join("m.bpmn"), MODEL.replace("RETRY", retry)).unwrap();
    std::fs::write(
        dir.join("s.json"),
        format!(r#"{{"tasks":{{"catalogue.read":[{outcomes}]}}}}"#),
    )
    .unwrap();
}

fn attempts(out: &[Value]) -> Vec<(u64, u64)> {
    out.iter()
        .filter(|l| l["kind"] == "attempt")
        .map(|l| (l["at_s"].as_u64().unwrap(), l["attempt"].as_u64().unwrap()))
        .collect()
}

crate::on_both_stores!(
    a_deferred_attempt_is_re_run_at_its_time_with_the_same_number,
    a_deferral_is_a_durable_park_that_resume_runs_in_a_new_process,
    a_deferral_past_max_elapsed_expires,
);

fn a_deferred_attempt_is_re_run_at_its_time_with_the_same_number(fresh: &Fresh) {
    setup(
        fresh,
        r#"<q:retry maxAttempts="2" backoff="PT1M" jitter="none"/>"#,
        &format!(
            r#"{DEFER},{DEFER},{{"fail":{{"code":"DOWN","class":"transient"}}}},{{"ok":{{}}}}"#
        ),
    );
    let db = fresh.db();
    let o = qflow(
        fresh.dir(),
        &[
            "run",
            "m.bpmn",
            "--scenario",
            "s.json",
            "--db",
            &db,
            "--format",
            "json",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = lines(&o);
    // Two deferrals burn nothing: a budget of two still has its second
    // attempt after the transient failure.
    assert_eq!(
        attempts(&out),
        vec![(0, 1), (3600, 1), (7200, 1), (7260, 2)],
        "{out:?}"
    );
    assert_eq!(out.last().unwrap()["status"], "completed");
}

fn a_deferral_is_a_durable_park_that_resume_runs_in_a_new_process(fresh: &Fresh) {
    setup(
        fresh,
        r#"<q:retry maxAttempts="3" backoff="PT1M" jitter="none"/>"#,
        &format!(r#"{DEFER},{{"ok":{{}}}}"#),
    );
    let db = fresh.db();
    let o = qflow(
        fresh.dir(),
        &[
            "run",
            "m.bpmn",
            "--scenario",
            "s.json",
            "--db",
            &db,
            "--format",
            "json",
            "--until",
            "PT30M",
        ],
    );
    let out = lines(&o);
    assert_eq!(
        attempts(&out),
        vec![(0, 1)],
        "{out:?} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let deferred = out
        .iter()
        .find(|l| l["class"] == "deferred")
        .expect("the deferral line");
    assert_eq!(deferred["next_attempt"], 1, "{deferred}");
    assert_eq!(deferred["next_at_s"], 3600, "{deferred}");
    assert_ne!(out.last().unwrap()["status"], "completed");
    // The park is a retry timer of class deferred: stats counts it.
    let s = qflow(fresh.dir(), &["stats", "--db", &db]);
    let text = String::from_utf8_lossy(&s.stdout);
    assert!(text.contains("deferred"), "{text}");
    // Another process picks it up from the store.
    let id = out
        .iter()
        .find_map(|l| l["instance"].as_str())
        .map(str::to_string)
        .unwrap_or_else(|| "p-1".into());
    let o = qflow(
        fresh.dir(),
        &[
            "resume",
            &id,
            "--db",
            &db,
            "--scenario",
            "s.json",
            "--format",
            "json",
        ],
    );
    let out = lines(&o);
    assert_eq!(
        attempts(&out).iter().map(|a| a.1).collect::<Vec<_>>(),
        vec![1],
        "{out:?} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(out.last().unwrap()["status"], "completed", "{out:?}");
}

fn a_deferral_past_max_elapsed_expires(fresh: &Fresh) {
    setup(
        fresh,
        r#"<q:retry maxAttempts="3" backoff="PT1M" maxElapsed="PT90M" jitter="none"/>"#,
        DEFER,
    );
    let db = fresh.db();
    let o = qflow(
        fresh.dir(),
        &[
            "run",
            "m.bpmn",
            "--scenario",
            "s.json",
            "--db",
            &db,
            "--format",
            "json",
        ],
    );
    let out = lines(&o);
    assert_eq!(attempts(&out), vec![(0, 1), (3600, 1)], "{out:?}");
    let last = out.last().unwrap();
    assert_eq!(
        (last["status"].as_str(), last["reason"].as_str()),
        (Some("failed"), Some("expired")),
        "{last}"
    );
}
