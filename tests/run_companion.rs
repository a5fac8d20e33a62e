//! Which scenario belongs to a model is one rule, the engine's
//! (`<dir>/scenarios/<stem>.json`, the stem without only the last
//! extension): `qflow run` follows it for a model whose name has a dot in
//! its stem, as the editor's "Run Model" (which types `qflow run MODEL`) does.

use std::process::Command;

#[test]
fn a_dotted_model_runs_under_the_scenario_named_after_its_whole_stem() {
    let root = env!("CARGO_MANIFEST_DIR");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("scenarios")).unwrap();
    std::fs::copy(
        format!("{root}/samples/dbg08-long-outage.bpmn"),
        dir.path().join("order.v2.bpmn"),
    )
    .unwrap();
    // The long outage: every attempt fails, six in all, then FAILED.
    std::fs::copy(
        format!("{root}/samples/scenarios/dbg08-long-outage.json"),
        dir.path().join("scenarios/order.v2.json"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(dir.path())
        .args(["run", "order.v2.bpmn", "--format", "json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a final line")).unwrap();
    // Without the scenario every task succeeds and the run completes.
    assert_eq!(last["status"], "failed", "{stdout}");
    assert_eq!(last["attempts"], 6, "{stdout}");
}
