//! Repair by migration through `qflow run`, for failures that consumed their
//! token: the flow continues at the node it stopped at, on the same instance.

mod support;
use support::stores::{open, Fresh};
use support::{lines, qflow};

const GATEWAY: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="gw"/>
    <bpmn:exclusiveGateway id="gw"/>
    <bpmn:sequenceFlow id="f2" sourceRef="gw" targetRef="e">
      <bpmn:conditionExpression>${amount > 100}</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

crate::on_both_stores!(a_gateway_failure_is_repaired_on_the_same_instance_never_a_second);

fn a_gateway_failure_is_repaired_on_the_same_instance_never_a_second(fresh: &Fresh) {
    let dir = fresh.dir();
    let db = fresh.db();
    std::fs::write(dir.join("gw.bpmn"), GATEWAY).unwrap();
    let fixed = GATEWAY.replace(
        r#"<bpmn:exclusiveGateway id="gw"/>"#,
        r#"<bpmn:exclusiveGateway id="gw" default="f3"/>
    <bpmn:sequenceFlow id="f3" sourceRef="gw" targetRef="e"/>"#,
    );
    std::fs::write(dir.join("gw-fixed.bpmn"), fixed).unwrap();
    let first = qflow(dir, &["run", "gw.bpmn", "--db", &db, "--format", "json"]);
    let end = lines(&first).pop().expect("a final line");
    assert_eq!(
        (end["status"].as_str(), end["code"].as_str()),
        (Some("failed"), Some("q.gateway.no-match")),
        "{end}"
    );
    let repaired = qflow(
        dir,
        &[
            "run",
            "gw-fixed.bpmn",
            "--db",
            &db,
            "--migrate",
            "p-1",
            "--format",
            "json",
        ],
    );
    let out = lines(&repaired);
    assert_eq!(out[0]["kind"], "migrated", "{out:?}");
    assert!(
        out.iter()
            .any(|l| l["kind"] == "gateway" && l["default"] == true),
        "the gateway decides again, by its new default flow: {out:?}"
    );
    let end = out.last().unwrap();
    assert_eq!(
        (end["status"].as_str(), end["instance"].as_str()),
        (Some("completed"), Some("p-1")),
        "{end}"
    );
    let store = open(&db);
    assert_eq!(
        store.instances().unwrap().len(),
        1,
        "never a second instance"
    );
}

crate::on_both_stores!(a_spent_budget_carried_by_a_repair_says_one_last_attempt_runs);

/// The checkout sample fails exhausted after its four attempts. Repaired onto
/// the same deployment with the burned budget carried, the plan used to say
/// "0 of 4 attempts left", which reads as "resuming does nothing", while the
/// resume does run one attempt (and its failure is final). The plan says so.
/// Since that attempt, failing as the last did, decides what the repair
/// repairs, the repair is refused unless asked for (`--allow-unchanged`).
fn a_spent_budget_carried_by_a_repair_says_one_last_attempt_runs(fresh: &Fresh) {
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let model = samples.join("checkout.bpmn");
    let outage = samples.join("scenarios/checkout-outage.json");
    let (model, outage) = (model.to_str().unwrap(), outage.to_str().unwrap());
    let (dir, db) = (fresh.dir(), fresh.db());
    let failed = qflow(dir, &["run", model, "--scenario", outage, "--db", &db]);
    assert_eq!(failed.status.code(), Some(0));
    let plan = qflow(dir, &["migrate", "checkout-1", "--to", "1", "--db", &db]);
    assert_eq!(plan.status.code(), Some(4), "the repair changes nothing");
    let said = String::from_utf8_lossy(&plan.stdout);
    assert!(
        said.contains(
            "budget: 4 attempts burned (carried), none of 4 attempts left: one last attempt runs, and its failure is final"
        ),
        "{said}"
    );
    assert!(!said.contains("another process"), "{said}");
    let applied = qflow(
        dir,
        &[
            "migrate",
            "checkout-1",
            "--to",
            "1",
            "--db",
            &db,
            "--allow-unchanged",
        ],
    );
    assert_eq!(applied.status.code(), Some(0));
    // A deployment picked by number can be another process whose node ids
    // happen to match (DBG-08's `charge`): allowed, and said.
    let dbg08 = samples.join("dbg08-charge.bpmn");
    let deployed = qflow(dir, &["deploy", dbg08.to_str().unwrap(), "--db", &db]);
    assert_eq!(deployed.status.code(), Some(0));
    let other = qflow(
        dir,
        &[
            "migrate",
            "checkout-1",
            "--to",
            "2",
            "--db",
            &db,
            "--dry-run",
        ],
    );
    let said = String::from_utf8_lossy(&other.stdout);
    assert!(
        said.contains("process checkout → dbg08: another process (its nodes are matched by id or --map); check it is the model you mean"),
        "{said}"
    );
    let resumed = qflow(
        dir,
        &[
            "resume",
            "checkout-1",
            "--scenario",
            outage,
            "--db",
            &db,
            "--allow-unchanged",
        ],
    );
    let out = String::from_utf8_lossy(&resumed.stdout);
    assert!(
        out.contains(
            "attempt 5 of payments.charge: failed PROVIDER_DOWN (transient); no further attempt"
        ),
        "one attempt ran, as the plan said: {out}"
    );
    assert!(
        out.contains("FAILED PROVIDER_DOWN: exhausted after 5 attempts"),
        "{out}"
    );
}
