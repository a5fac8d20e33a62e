//! `qflow check --format sarif` writes a SARIF 2.1.0 log that the official
//! schema accepts (vendored in `tests/sarif/`, with its notice), and that
//! says what `--format json` says: the same findings in the same order, each
//! with its rule id, level, element, and line and column; every rule's help
//! link is the code's documentation page, which exists.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo().join("tests/sarif/sarif-schema-2.1.0.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the SARIF schema is a valid JSON Schema")
}

fn check(format: &str, files: &[String]) -> (Option<i32>, Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .arg("check")
        .args(["--format", format])
        .args(files)
        .output()
        .expect("qflow runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    (o.status.code(), v)
}

fn schema_errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

/// Every sample, every broken sample (a configuration file's own problem
/// included): most codes, related places and quick fixes.
fn all_samples() -> Vec<String> {
    let mut files = Vec::new();
    for dir in ["samples", "samples/broken"] {
        for e in std::fs::read_dir(repo().join(dir)).unwrap().flatten() {
            let p = e.path();
            let rel = |p: &Path| p.strip_prefix(repo()).unwrap().display().to_string();
            if p.extension().is_some_and(|x| x == "bpmn") {
                files.push(rel(&p));
            } else if p.join("model.bpmn").exists() {
                files.push(rel(&p.join("model.bpmn")));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn the_log_validates_and_says_what_the_json_says() {
    let files = all_samples();
    assert!(files.len() >= 60, "{} sample files", files.len());
    let (sarif_code, log) = check("sarif", &files);
    let (json_code, json) = check("json", &files);
    assert_eq!(
        sarif_code, json_code,
        "the exit code does not depend on the format"
    );
    assert_eq!(sarif_code, Some(1), "the broken samples have errors");

    let errors = schema_errors(&validator(), &log);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(log["version"], "2.1.0");
    assert_eq!(log["runs"].as_array().unwrap().len(), 1);
    let run = &log["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "qflow");
    assert_eq!(run["columnKind"], "unicodeCodePoints");

    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let results = run["results"].as_array().unwrap();
    let json = json.as_array().unwrap();
    assert_eq!(results.len(), json.len());
    assert!(results.len() > 100, "{} results", results.len());

    for (r, j) in results.iter().zip(json) {
        let code = j["code"].as_str().unwrap();
        assert_eq!(r["ruleId"], code);
        // ruleIndex points at that rule.
        let rule = &rules[r["ruleIndex"].as_u64().unwrap() as usize];
        assert_eq!(rule["id"], code);
        let level = match j["severity"].as_str().unwrap() {
            "error" => "error",
            "warning" => "warning",
            "info" | "hint" => "note",
            other => panic!("severity {other}"),
        };
        assert_eq!(r["level"], level, "{code}");
        assert!(
            r["message"]["text"]
                .as_str()
                .unwrap()
                .starts_with(j["message"].as_str().unwrap()),
            "{r}"
        );
        let loc = &r["locations"][0];
        let phys = &loc["physicalLocation"];
        assert_eq!(
            phys["artifactLocation"]["uri"],
            j["path"].as_str().unwrap().replace(' ', "%20")
        );
        assert_eq!(phys["region"]["startLine"], j["line"], "{code} {r}");
        assert_eq!(phys["region"]["startColumn"], j["column"], "{code} {r}");
        assert!(phys["region"]["endLine"].as_u64() >= j["line"].as_u64());
        match j["element"].as_str() {
            Some(id) => {
                assert_eq!(loc["logicalLocations"][0]["name"], id);
                assert_eq!(loc["logicalLocations"][0]["kind"], "element");
            }
            None => assert!(loc.get("logicalLocations").is_none(), "{r}"),
        }
        let related = j["related"].as_array().unwrap();
        let sarif_related = r["relatedLocations"].as_array().map_or(&[][..], |v| v);
        assert_eq!(sarif_related.len(), related.len(), "{code}");
        for (s, j) in sarif_related.iter().zip(related) {
            assert_eq!(s["physicalLocation"]["region"]["startLine"], j["line"]);
            assert_eq!(s["physicalLocation"]["region"]["startColumn"], j["column"]);
            assert_eq!(s["message"]["text"], j["message"]);
        }
    }

    // One rule per code reported, each carrying its page as its help (no
    // helpUri: the project has no public home to link to yet).
    let mut ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "a rule is listed once");
    for rule in rules {
        let id = rule["id"].as_str().unwrap();
        assert!(rule.get("helpUri").is_none(), "{id}: no dead link: {rule}");
        let page = std::fs::read_to_string(repo().join(format!("docs/diagnostics/{id}.md")))
            .unwrap_or_else(|_| panic!("{id} has no page"));
        assert_eq!(rule["help"]["markdown"], page, "{id}: the page is the help");
        assert_eq!(
            rule["help"]["text"],
            format!("qflow explain {id} prints this code's page")
        );
        assert!(rule["shortDescription"]["text"].as_str().unwrap().len() > 5);
        let code = qflow_engine::Code::parse(id).unwrap();
        if let Some(alias) = code.alias() {
            assert_eq!(rule["name"], alias, "bpmnlint's name is the rule's name");
        }
    }
    // QF126 and QF127 are off unless configured: their samples' own
    // .bpmnlintrc turns them on.
    for code in [
        "QF001", "QF022", "QF090", "QF101", "QF125", "QF126", "QF127",
    ] {
        assert!(ids.contains(&code), "{code} reported: {ids:?}");
    }
    // QF022 names the routed boundary as a related place.
    assert!(results
        .iter()
        .any(|r| r["ruleId"] == "QF022" && r["relatedLocations"].is_array()));
    // A mechanical fix travels as a SARIF fix with its replacement.
    let fixed = results
        .iter()
        .find(|r| r["fixes"].is_array())
        .expect("some finding has a quick fix");
    let change = &fixed["fixes"][0]["artifactChanges"][0];
    assert!(change["replacements"][0]["deletedRegion"]["startLine"].is_u64());
    assert!(change["replacements"][0]["insertedContent"]["text"].is_string());
}

#[test]
fn a_clean_model_is_an_empty_run_and_exits_zero() {
    let (code, log) = check(
        "sarif",
        &[
            "--min-severity".into(),
            "warning".into(),
            "samples/checkout.bpmn".into(),
        ],
    );
    assert_eq!(code, Some(0));
    assert!(schema_errors(&validator(), &log).is_empty());
    assert_eq!(log["runs"][0]["results"], serde_json::json!([]));
    assert_eq!(
        log["runs"][0]["tool"]["driver"]["rules"],
        serde_json::json!([])
    );
}

/// The validation is real: the schema refuses a log with a level SARIF does
/// not have, or without its version.
#[test]
fn the_schema_refuses_a_broken_log() {
    let (_, mut log) = check(
        "sarif",
        &["samples/broken/QF022-retry-beside-routed-timer.bpmn".into()],
    );
    let v = validator();
    assert!(schema_errors(&v, &log).is_empty());
    log["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(
        !schema_errors(&v, &log).is_empty(),
        "a level outside SARIF's"
    );
    log["runs"][0]["results"][0]["level"] = "error".into();
    log.as_object_mut().unwrap().remove("version");
    assert!(!schema_errors(&v, &log).is_empty(), "no version");
}
