//! `qflow respond` through the binary, on both stores: what an answer
//! without a key records, what an instance's id without its node gets, and
//! the verdict for a quarantined instance.

use serde_json::Value;

mod support;
use support::qflow_here as qflow;
use support::stores::Fresh;

/// A checkout instance whose bank call waits for its answer (the bank is
/// silent), in a fresh database.
fn waiting_checkout(fresh: &Fresh) -> String {
    let db = fresh.db();
    let silent = fresh.dir().join("silent.json");
    std::fs::write(&silent, r#"{"channels": {"bank": [{"silent": true}]}}"#).unwrap();
    let (code, _, err) = qflow(&[
        "run",
        "samples/checkout.bpmn",
        "--scenario",
        silent.to_str().unwrap(),
        "--db",
        &db,
        "--until",
        "PT20S",
    ]);
    assert_eq!(code, 0, "{err}");
    db
}

crate::on_both_stores!(
    an_answer_without_a_key_records_the_live_attempts_key,
    an_instance_id_without_its_node_names_the_calls_that_wait,
    an_answer_to_a_quarantined_instance_is_refused_and_decided_after_release,
);

/// The last line of `out`, as JSON.
fn last_json(out: &str) -> Value {
    serde_json::from_str(out.lines().last().unwrap_or("null")).expect("a JSON line")
}

fn an_answer_without_a_key_records_the_live_attempts_key(fresh: &Fresh) {
    let db = waiting_checkout(fresh);
    let (code, out, err) = qflow(&["respond", "checkout-1/capture", "--db", &db]);
    assert_eq!((code, out.trim()), (0, "accepted"), "{err}");
    let (code, out, err) = qflow(&["show", "checkout-1", "--db", &db, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let history = v["history"].as_array().expect("the history");
    let response = history
        .iter()
        .find(|l| l["kind"] == "response")
        .unwrap_or_else(|| panic!("no response line: {v}"));
    assert_eq!(
        response["idempotencyKey"], "checkout-1/capture/1",
        "the key of the attempt it answered, never an empty one: {response}"
    );
}

fn an_instance_id_without_its_node_names_the_calls_that_wait(fresh: &Fresh) {
    let db = waiting_checkout(fresh);
    let (code, out, _) = qflow(&["respond", "checkout-1", "--db", &db]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.starts_with("not-waiting: ") && out.contains("checkout-1/capture waits for an answer"),
        "the instance exists: not no-such-instance: {out}"
    );
    let (code, out, _) = qflow(&["respond", "checkout-9", "--db", &db]);
    assert_eq!(code, 4);
    assert!(out.starts_with("no-such-instance"), "{out}");
}

/// A counterpart's answer to a quarantined instance: the `quarantined`
/// verdict (exit 4, nothing changed; HTTP 409 at the endpoint), never a
/// store error; after `qflow release` the same answer is accepted.
fn an_answer_to_a_quarantined_instance_is_refused_and_decided_after_release(fresh: &Fresh) {
    let db = waiting_checkout(fresh);
    let (code, _, err) = qflow(&["quarantine", "checkout-1", "--db", &db]);
    assert_eq!(code, 0, "{err}");
    let answer = || {
        qflow(&[
            "respond",
            "checkout-1/capture",
            "--db",
            &db,
            "--body",
            r#"{"captured": true}"#,
            "--format",
            "json",
        ])
    };
    let (code, out, err) = answer();
    assert_eq!(code, 4, "refused, not a store error: {out}{err}");
    let v = last_json(&out);
    assert_eq!(v["verdict"], "quarantined", "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap_or("")
            .contains("qflow release"),
        "{v}"
    );
    let (code, _, err) = qflow(&["release", "checkout-1", "--db", &db]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = answer();
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(last_json(&out)["verdict"], "accepted");
}
