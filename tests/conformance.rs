//! qflow's modelling rules agree with bpmnlint 11.15 on models written
//! independently of qflow's rule code.
//!
//! `tests/conformance/bpmnlint/**.json` holds what the real bpmnlint reported
//! for each model (recorded by `scripts/bpmnlint-diff.js --record`, a
//! `.bpmnlintrc` extending `bpmnlint:recommended`): every (rule, element,
//! severity). This test runs the built `qflow check --format json --config`
//! with the same configuration on each model and requires the same multiset,
//! so it needs neither Node nor bpmnlint. The models are
//! `tests/conformance/models/*.bpmn` (small models written from bpmnlint's
//! rule descriptions, one mistake or exemption each, written with the
//! `<incoming>`/`<outgoing>` references a modeller writes), the repository's
//! samples (hand-written, most without those references: recorded with
//! `--complete-refs`, see docs/conformance.md; the broken samples of QF001–
//! QF003 aside, which bpmnlint cannot read or reads ambiguously) and the MIWG
//! interchange corpus (read from `../shared/corpus/miwg` and skipped with a
//! message when absent).
//!
//! `bpmnlint/rules-switched/` holds the same models recorded under a
//! `.bpmnlintrc` that switches rules off and changes severities, so a rule
//! turned off is silent and a severity changed is that severity;
//! `bpmnlint/all/` under `bpmnlint:all` (which also runs `conditional-event`
//! and `standard-size`); `bpmnlint/sizes/` the diagram models under a
//! `.bpmnlintrc` giving `standard-size` other sizes.
//!
//! A model that declares the qflow namespace is also checked under qflow's
//! own defaults (no configuration): the same (rule, element) pairs, the
//! diagram rules aside (off by default in qflow documents).
//!
//! The deliberate differences (docs/conformance.md) are listed in
//! [`DELIBERATE`], each with its reason; any other difference fails.
//!
//! To record a new model: `node scripts/bpmnlint-diff.js --record
//! tests/conformance/bpmnlint tests/conformance/models/NEW.bpmn` (add
//! `--complete-refs` for a model without `<incoming>`/`<outgoing>`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// (model file name, rule, element, which side has it, why).
const DELIBERATE: &[(&str, &str, &str, Side, &str)] = &[
    (
        "C.6.0.bpmn",
        "no-implicit-end",
        "_b25ecc7c-4eff-4a70-96f2-6b2f94cf19b1",
        Side::Bpmnlint,
        "a compensation boundary event whose association is in its sub-process (QF115)",
    ),
    (
        "C.6.0.bpmn",
        "no-implicit-end",
        "_fe3f9094-097b-416d-adeb-4b7e7e753f3c",
        Side::Bpmnlint,
        "a compensation boundary event whose association is in its sub-process (QF115)",
    ),
    (
        "QF005-no-start-event.bpmn",
        "start-event-required",
        "p",
        Side::Bpmnlint,
        "an executable qflow process without a start event is QF005, which the loader refuses, never also QF121",
    ),
    (
        "diagram-planes.bpmn",
        "no-bpmndi",
        "notesIn",
        Side::Bpmnlint,
        "a BPMNDiagram with two planes (the DI schema allows one): bpmnlint keeps the last and drops the drawings on the others; qflow counts every drawing written (QF109)",
    ),
    (
        "diagram-planes.bpmn",
        "no-bpmndi",
        "scribble",
        Side::Bpmnlint,
        "drawn on the first of two planes of one diagram (QF109)",
    ),
    (
        "diagram-planes.bpmn",
        "no-bpmndi",
        "g9",
        Side::Bpmnlint,
        "drawn on the first of two planes of one diagram (QF109)",
    ),
    (
        "links.bpmn",
        "link-event",
        "noName",
        Side::Bpmnlint,
        "bpmnlint also groups unnamed link events under the name `_` and reports the lone one again (QF108)",
    ),
    (
        "qflow-bare-fork.bpmn",
        "conditional-flows",
        "toA",
        Side::Qflow,
        "an executable qflow process's exclusive fork without conditions: the runtime would always take the first flow (QF101)",
    ),
    (
        "qflow-bare-fork.bpmn",
        "conditional-flows",
        "toB",
        Side::Qflow,
        "the same fork's second flow (QF101)",
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Bpmnlint,
    Qflow,
}

type Finding = (String, String, String);

/// What bpmnlint reported, as recorded.
fn recorded(path: &Path) -> (Vec<Finding>, serde_json::Value) {
    let text = std::fs::read_to_string(path).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let findings = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let s = |i: usize| row[i].as_str().unwrap().to_string();
            (s(0), s(1), s(2))
        })
        .collect();
    (findings, v["config"].clone())
}

/// qflow's findings under a bpmnlint rule name (its own codes aside).
fn qflow(model: &Path, config: Option<&Path>) -> Vec<Finding> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_qflow"));
    cmd.args(["check", "--format", "json"]);
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    let out = cmd.arg(model).output().expect("qflow runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: not JSON ({e}): {}",
            model.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v.as_array()
        .unwrap()
        .iter()
        .filter_map(|d| {
            let rule = d["rule"].as_str()?;
            Some((
                rule.to_string(),
                d["element"].as_str().unwrap_or("").to_string(),
                d["severity"].as_str().unwrap().to_string(),
            ))
        })
        .collect()
}

/// Items of `a` not matched one for one in `b`.
fn minus<'a>(a: &'a [Finding], b: &[Finding]) -> Vec<&'a Finding> {
    let mut left: BTreeMap<&Finding, usize> = BTreeMap::new();
    for f in b {
        *left.entry(f).or_default() += 1;
    }
    a.iter()
        .filter(|f| match left.get_mut(f) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .collect()
}

/// Whether the difference is a deliberate one; marks it seen.
fn deliberate(file: &str, f: &Finding, side: Side, used: &mut [bool]) -> bool {
    match DELIBERATE
        .iter()
        .position(|(m, r, e, s, _)| *m == file && *r == f.0 && *e == f.1 && *s == side)
    {
        Some(k) => {
            used[k] = true;
            true
        }
        None => false,
    }
}

/// Compare every recorded model under `records` with `models`; returns the
/// number compared and the disagreements found.
fn compare_dir(
    records: &Path,
    models: &Path,
    problems: &mut Vec<String>,
    used: &mut [bool],
    files: &mut Vec<String>,
) -> usize {
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(records)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    entries.sort();
    let dir = tempfile::tempdir().unwrap();
    for rec in entries {
        let stem = rec.file_stem().unwrap().to_string_lossy().to_string();
        let file = format!("{stem}.bpmn");
        let model = models.join(&file);
        assert!(
            model.exists(),
            "{} has no model {}",
            rec.display(),
            model.display()
        );
        files.push(file.clone());
        let (expected, config) = recorded(&rec);
        let rc = dir.path().join(format!("{stem}.bpmnlintrc"));
        std::fs::write(&rc, config.to_string()).unwrap();
        let actual = qflow(&model, Some(&rc));
        for f in minus(&expected, &actual) {
            if !deliberate(&file, f, Side::Bpmnlint, used) {
                problems.push(format!("{file}: bpmnlint reports {f:?}, qflow does not"));
            }
        }
        for f in minus(&actual, &expected) {
            if !deliberate(&file, f, Side::Qflow, used) {
                problems.push(format!("{file}: qflow reports {f:?}, bpmnlint does not"));
            }
        }
        // A qflow document under qflow's own defaults: the same findings,
        // at qflow's severities, the diagram rules (off by default) aside.
        let source = std::fs::read_to_string(&model).unwrap();
        let recommended = config == serde_json::json!({ "extends": "bpmnlint:recommended" });
        if recommended && source.contains("urn:qflow:bpmn:1") {
            let pairs = |v: &[Finding]| {
                let mut p: Vec<(String, String)> = v
                    .iter()
                    .filter(|f| f.0 != "no-bpmndi" && f.0 != "no-overlapping-elements")
                    .map(|f| (f.0.clone(), f.1.clone()))
                    .collect();
                p.sort();
                p
            };
            let defaults = qflow(&model, None);
            if pairs(&defaults) != pairs(&actual) {
                problems.push(format!(
                    "{file}: under qflow's defaults the findings differ:\n  defaults: {:?}\n  bpmnlint:recommended: {:?}",
                    pairs(&defaults),
                    pairs(&actual)
                ));
            }
        }
        n += 1;
    }
    n
}

#[test]
fn qflow_reports_what_bpmnlint_reports() {
    let root = repo().join("tests/conformance");
    let mut problems = Vec::new();
    let mut used = vec![false; DELIBERATE.len()];
    let mut compared = 0;
    let mut sets = vec![
        (root.join("bpmnlint"), root.join("models")),
        // The same models under a .bpmnlintrc that switches rules off and
        // changes severities (recorded with that file).
        (root.join("bpmnlint/rules-switched"), root.join("models")),
        // The same models under `bpmnlint:all` (every rule an error, its
        // two rules outside the recommended set included), and the diagram
        // and conditional-event models under a .bpmnlintrc giving
        // `standard-size` a team's own sizes.
        (root.join("bpmnlint/all"), root.join("models")),
        (root.join("bpmnlint/sizes"), root.join("models")),
        (root.join("bpmnlint/samples"), repo().join("samples")),
        (
            root.join("bpmnlint/samples-broken"),
            repo().join("samples/broken"),
        ),
    ];
    let corpus = repo().join("../shared/corpus/miwg");
    if corpus.is_dir() {
        sets.push((root.join("bpmnlint/miwg"), corpus));
    } else {
        eprintln!(
            "note: {} is absent; the MIWG corpus is not compared",
            corpus.display()
        );
    }
    let mut files = Vec::new();
    for (records, models) in &sets {
        let n = compare_dir(records, models, &mut problems, &mut used, &mut files);
        assert!(n >= 1, "no recorded models in {}", records.display());
        compared += n;
    }
    // A deliberate difference that no longer shows is stale: remove it here
    // and from docs/conformance.md.
    for (k, (file, rule, element, side, _)) in DELIBERATE.iter().enumerate() {
        if files.iter().any(|f| f == file) && !used[k] {
            problems.push(format!(
                "{file}: the deliberate difference {side:?} {rule} {element} no longer shows"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} disagreement(s) with bpmnlint over {compared} models:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
