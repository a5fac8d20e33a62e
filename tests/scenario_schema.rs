//! The published JSON Schema for scenario files (`docs/scenario.schema.json`)
//! accepts every sample scenario and refuses what `qflow run` refuses, so an
//! editor that checks against it agrees with the runtime.

use std::path::PathBuf;

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo().join("docs/scenario.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema")
}

#[test]
fn every_sample_scenario_validates_against_the_schema() {
    let v = validator();
    let mut n = 0;
    for e in std::fs::read_dir(repo().join("samples/scenarios"))
        .unwrap()
        .flatten()
    {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", p.display());
        n += 1;
    }
    assert!(n >= 20, "{n} scenarios");
}

#[test]
fn the_schema_refuses_what_the_parser_refuses() {
    let v = validator();
    for bad in [
        r#"{"task": {}}"#,
        r#"{"tasks": {"a": [{"fail": {"code": "X", "class": "transiant"}}]}}"#,
        r#"{"tasks": {"a": [{"ok": {}, "fail": {"code": "X", "class": "permanent"}}]}}"#,
        r#"{"tasks": {"a": [{"fail": {"code": "R", "class": "rate-limited"}}]}}"#,
        r#"{"tasks": {"a": {"ok": {}}}}"#,
        // An empty list scripts nothing: every attempt would take the default.
        r#"{"tasks": {"payments.charge": []}}"#,
        r#"{"channels": {"bank": []}}"#,
        r#"{"deliveries": {"bank": []}}"#,
        r#"{"channels": {"bank": [{"silent": false}]}}"#,
        r#"{"events": [{"resolve": "charge", "as": "maybe"}]}"#,
        r#"{"events": [{"at": "1h", "redeliver": "x"}]}"#,
    ] {
        let doc: Value = serde_json::from_str(bad).unwrap();
        assert!(!v.is_valid(&doc), "the schema accepts {bad}");
        assert!(
            qflow_engine::runtime::scenario::Scenario::parse(bad).is_err(),
            "the parser accepts {bad}"
        );
    }
}
