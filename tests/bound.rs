//! The cross-layer bound (retries-multiply.txt: "Three attempts at one
//! layer can become nine or 27 remote calls when layers multiply"): a
//! call's worst-case remote requests per business operation, above the
//! ceiling of `qflow.toml`'s `[bounds] requests-per-operation` (100 by
//! default), is QF045 in `qflow check`; `qflow project` lists every call's
//! figure.

use serde_json::Value;
use std::path::Path;

mod support;
use support::{qflow, qflow_here};

const LAYERED: &str = "samples/broken/QF045-retries-multiply.bpmn";

fn check_json(dir: &Path, model: &str) -> (i32, Vec<Value>) {
    let o = qflow(dir, &["check", "--format", "json", model]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("a JSON array");
    (o.status.code().unwrap_or(-1), v.as_array().unwrap().clone())
}

fn qf045(diags: &[Value]) -> Vec<&Value> {
    diags.iter().filter(|d| d["code"] == "QF045").collect()
}

#[test]
fn six_attempts_five_deliveries_and_a_counterpart_that_tries_four_times_are_over_the_default_ceiling(
) {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (code, diags) = check_json(here, LAYERED);
    // A warning: the check passes unless warnings are denied.
    assert_eq!(code, 0);
    let found = qf045(&diags);
    assert_eq!(found.len(), 1, "{diags:#?}");
    let d = found[0];
    assert_eq!(d["severity"], "warning");
    assert_eq!(
        d["message"],
        "one business operation through `authorize` can cost up to 120 remote requests (6 attempts × 5 deliveries × 4 counterpart attempts = 120), above the ceiling of 100"
    );
    // On the retry (line 12), the other layers as related information.
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(12), Some(10))
    );
    let related: Vec<(u64, &str)> = d["related"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["line"].as_u64().unwrap(), r["message"].as_str().unwrap()))
        .collect();
    assert_eq!(
        related,
        [
            (11, "each attempt lasts up to this timeout"),
            (6, "the outbox delivers each request up to 5 times"),
            (6, "the counterpart tries each request 4 times itself"),
        ]
    );
    let help = d["help"].as_str().unwrap();
    assert!(
        help.contains("lower maxAttempts to 5 (the most that fit)"),
        "{help}"
    );
    assert!(
        help.contains("[bounds] requests-per-operation = 120"),
        "{help}"
    );

    // The human report says the same, and --deny warnings fails on it.
    let (code, out, _) = qflow_here(&["check", LAYERED]);
    assert_eq!(code, 0);
    assert!(out.contains("QF045"), "{out}");
    assert!(out.contains("above the ceiling of 100"), "{out}");
    let (code, _, _) = qflow_here(&["check", "--deny", "warnings", LAYERED]);
    assert_eq!(code, 1);
}

/// The ceiling is the project's: a `qflow.toml` beside the model lowers
/// it, raises it, or makes the finding an error.
#[test]
fn the_ceiling_is_configured_in_qflow_toml() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    // checkout: a charge of 4 attempts, a capture of 3 attempts × 5 deliveries.
    std::fs::copy(
        here.join("samples/checkout.bpmn"),
        dir.path().join("checkout.bpmn"),
    )
    .unwrap();
    std::fs::copy(here.join(LAYERED), dir.path().join("layered.bpmn")).unwrap();
    let (_, diags) = check_json(dir.path(), "checkout.bpmn");
    assert!(qf045(&diags).is_empty(), "{diags:#?}");

    let toml = dir.path().join("qflow.toml");
    std::fs::write(&toml, "[bounds]\nrequests-per-operation = 10\n").unwrap();
    let (code, diags) = check_json(dir.path(), "checkout.bpmn");
    assert_eq!(code, 0);
    let found = qf045(&diags);
    assert_eq!(found.len(), 1, "{diags:#?}");
    assert_eq!(found[0]["element"], "capture");
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .ends_with("(3 attempts × 5 deliveries = 15), above the ceiling of 10"),
        "{}",
        found[0]["message"]
    );
    assert!(found[0]["help"]
        .as_str()
        .unwrap()
        .contains("lower maxAttempts to 2"));

    std::fs::write(&toml, "[bounds]\nrequests-per-operation = 150\n").unwrap();
    let (_, diags) = check_json(dir.path(), "layered.bpmn");
    assert!(qf045(&diags).is_empty(), "{diags:#?}");

    // An advisory code: a team may gate CI on it.
    std::fs::write(&toml, "[rules]\nQF045 = \"error\"\n").unwrap();
    let (code, diags) = check_json(dir.path(), "layered.bpmn");
    assert_eq!(code, 1);
    assert_eq!(qf045(&diags)[0]["severity"], "error");

    // A ceiling that is not a positive integer is pointed at; the default holds.
    std::fs::write(&toml, "[bounds]\nrequests-per-operation = \"lots\"\n").unwrap();
    let (_, diags) = check_json(dir.path(), "layered.bpmn");
    assert!(
        diags.iter().any(|d| d["code"] == "QF091"
            && d["message"] == "requests-per-operation must be a positive integer"),
        "{diags:#?}"
    );
    assert_eq!(qf045(&diags).len(), 1);
}

/// `qflow project` gives every call's figure, each layer named, and marks
/// the ones above the ceiling.
#[test]
fn project_lists_every_calls_worst_case_requests_per_business_operation() {
    let (code, out, err) = qflow_here(&[
        "project",
        "samples/checkout.bpmn",
        "--jobs",
        "100",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["ceiling"], 100);
    let calls: Vec<(&str, &str, u64, bool)> = v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["node"].as_str().unwrap(),
                c["formula"].as_str().unwrap(),
                c["requests_per_operation"].as_u64().unwrap(),
                c["over_ceiling"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("charge", "4 attempts = 4", 4, false),
            ("capture", "3 attempts × 5 deliveries = 15", 15, false),
        ]
    );
    let capture = v["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["node"] == "capture")
        .unwrap();
    assert_eq!(capture["requests_per_operation"], 15);

    let (code, out, _) = qflow_here(&["project", LAYERED, "--jobs", "100", "--format", "json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let c = &v["calls"][0];
    assert_eq!(
        (
            &c["attempts"],
            &c["deliveries_per_attempt"],
            &c["counterpart_attempts"]
        ),
        (&Value::from(6), &Value::from(5), &Value::from(4))
    );
    assert_eq!(c["requests_per_operation"], 120);
    assert_eq!(c["over_ceiling"], true);

    let (_, out, _) = qflow_here(&["project", LAYERED, "--jobs", "100"]);
    assert!(
        out.contains("per business operation, every layer at its worst (attempts × deliveries × counterpart attempts; ceiling 100, QF045)"),
        "{out}"
    );
    assert!(
        out.contains("authorize (bank.authorize)  6 attempts × 5 deliveries × 4 counterpart attempts = 120 remote requests  above the ceiling (QF045)"),
        "{out}"
    );
}
