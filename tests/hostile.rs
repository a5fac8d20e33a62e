//! `qflow check` on hostile and unusual files: each attack is one clear QF001
//! (exit 1, a message naming the problem, a line and column), never a panic, a
//! stack overflow, a read of another file, a network connection, or unbounded
//! memory; each real-world oddity loads (exit 0).
//!
//! Peak memory is measured with `/usr/bin/time` when the machine has it (the
//! bounds are about twice what the debug binary needs, so they cannot flake);
//! without it the memory assertions are skipped with a message.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

const BPMN: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";
const TIME: &str = "/usr/bin/time";

struct Run {
    code: Option<i32>,
    stdout: String,
    /// What a person reads: the human report (on stdout) and the messages
    /// (on stderr), or, with `--format json`, the messages alone.
    stderr: String,
    /// Peak resident set size of `qflow`, when `/usr/bin/time` is available.
    peak_kb: Option<u64>,
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("temp file is writable");
    path
}

/// `qflow check ARGS… FILE`, under `/usr/bin/time -f %M` when it exists.
fn check(file: &Path, args: &[&str]) -> Run {
    let qflow = env!("CARGO_BIN_EXE_qflow");
    let timed = Path::new(TIME).exists();
    let mut cmd = if timed {
        let mut c = Command::new(TIME);
        c.args(["-f", "qflow-peak-kb=%M", qflow]);
        c
    } else {
        Command::new(qflow)
    };
    let out = cmd
        .arg("check")
        .args(args)
        .arg(file)
        .output()
        .expect("qflow runs");
    let mut stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut peak_kb = None;
    if let Some(at) = stderr.rfind("qflow-peak-kb=") {
        peak_kb = stderr[at + 14..].trim().parse().ok();
        stderr.truncate(at);
    }
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !args.contains(&"--format") {
        stderr = format!("{stdout}{stderr}");
    }
    Run {
        code: out.status.code(),
        stdout,
        stderr,
        peak_kb,
    }
}

fn assert_peak_below(run: &Run, what: &str, mb: u64) {
    match run.peak_kb {
        Some(kb) => {
            println!("{what}: peak RSS {} MB", kb / 1024);
            assert!(kb < mb * 1024, "{what}: peak RSS {kb} KB, bound {mb} MB");
        }
        None => println!("{what}: {TIME} not available, peak memory not measured"),
    }
}

/// The file gets exactly one QF001 with this message at this 1-based line and
/// column, in both output formats, and exit code 1.
fn assert_qf001(file: &Path, message: &str, line: u64, column: u64) -> Run {
    let human = check(file, &[]);
    assert_eq!(human.code, Some(1), "{}", human.stderr);
    assert!(human.stderr.contains("QF001"), "{}", human.stderr);
    assert!(human.stderr.contains(message), "{}", human.stderr);
    assert!(
        human.stderr.contains("1 error,"),
        "one summary line: {}",
        human.stderr
    );
    assert!(!human.stderr.contains("panicked"), "{}", human.stderr);
    let json = check(file, &["--format", "json"]);
    assert_eq!(json.code, Some(1), "{}", json.stderr);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON array");
    let all = v.as_array().expect("array");
    assert_eq!(all.len(), 1, "{all:#?}");
    let d = &all[0];
    assert_eq!(d["code"], "QF001");
    assert_eq!(d["severity"], "error");
    assert!(
        d["message"].as_str().unwrap().contains(message),
        "{}",
        d["message"]
    );
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(line), Some(column)),
        "{d:#?}"
    );
    human
}

#[test]
fn billion_laughs() {
    let dir = tempfile::tempdir().unwrap();
    let mut dtd = String::from("<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n");
    for i in 1..=9 {
        let prev = if i == 1 {
            "&lol;".to_string()
        } else {
            format!("&lol{};", i - 1)
        };
        dtd.push_str(&format!(" <!ENTITY lol{i} \"{}\">\n", prev.repeat(10)));
    }
    dtd.push_str("]>\n");
    let src = format!(
        "<?xml version=\"1.0\"?>\n{dtd}<bpmn:definitions xmlns:bpmn=\"{BPMN}\"><bpmn:documentation>&lol9;</bpmn:documentation></bpmn:definitions>\n"
    );
    let file = write(dir.path(), "laughs.bpmn", src.as_bytes());
    let run = assert_qf001(&file, "DOCTYPE declarations are not accepted", 2, 1);
    assert_peak_below(&run, "billion laughs", 64);
}

#[test]
fn external_entities_read_nothing_and_connect_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let first_line = passwd.lines().next().unwrap_or("root:x:0:0").to_string();
    // A listener the http entity points at: any fetch would connect to it.
    let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let doc = |system: &str| {
        format!(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE d [ <!ENTITY xxe SYSTEM \"{system}\"> ]>\n<bpmn:definitions xmlns:bpmn=\"{BPMN}\" id=\"d\"><bpmn:documentation>&xxe;</bpmn:documentation></bpmn:definitions>\n"
        )
    };
    let cases = [
        ("xxe-file.bpmn", doc("file:///etc/passwd")),
        ("xxe-path.bpmn", doc("/etc/passwd")),
        ("xxe-http.bpmn", doc(&format!("http://127.0.0.1:{port}/evil.dtd"))),
        (
            "xxe-dtd.bpmn",
            format!(
                "<?xml version=\"1.0\"?>\n<!DOCTYPE d SYSTEM \"http://127.0.0.1:{port}/evil.dtd\">\n<bpmn:definitions xmlns:bpmn=\"{BPMN}\"/>\n"
            ),
        ),
    ];
    for (name, src) in cases {
        let file = write(dir.path(), name, src.as_bytes());
        let run = assert_qf001(&file, "DOCTYPE declarations are not accepted", 2, 1);
        for out in [&run.stdout, &run.stderr] {
            assert!(!out.contains(&first_line), "{name}: {out}");
            assert!(!out.contains("/bin/"), "{name}: {out}");
        }
    }
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("qflow connected to the entity's URL: {other:?}"),
    }
}

#[test]
fn hundred_thousand_deep_nesting() {
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        "<bpmn:definitions xmlns:bpmn=\"{BPMN}\">\n{}{}</bpmn:definitions>\n",
        "<bpmn:a>".repeat(100_000),
        "</bpmn:a>".repeat(100_000)
    );
    let file = write(dir.path(), "deep.bpmn", src.as_bytes());
    // Line 2: the 256th <bpmn:a> is the first too deep (the root is level 1).
    let run = assert_qf001(
        &file,
        "elements nested deeper than 256 levels",
        2,
        255 * 8 + 1,
    );
    assert_peak_below(&run, "100,000-deep nesting", 64);
}

/// A finding on a line longer than miette can pad to is printed plainly, not
/// a panic.
#[test]
fn a_finding_far_along_one_line_is_reported_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        "<bpmn:definitions xmlns:bpmn=\"{BPMN}\" id=\"d\"><bpmn:process id=\"p\" name=\"{}\"><bpmn:startEvent id=\"s\"/><bpmn:task id=\"t\"/></bpmn:process></bpmn:definitions>",
        "A".repeat(100_000)
    );
    let file = write(dir.path(), "one-line.bpmn", src.as_bytes());
    let run = check(&file, &[]);
    assert!(
        !run.stderr.contains("panicked"),
        "{}",
        &run.stderr[..2000.min(run.stderr.len())]
    );
    assert!(
        run.stderr.contains("QF111"),
        "{}",
        &run.stderr[..2000.min(run.stderr.len())]
    );
    assert!(
        run.stderr.contains("one-line.bpmn:1:100"),
        "{}",
        &run.stderr[..2000.min(run.stderr.len())]
    );
}

#[test]
fn fifty_megabyte_attribute_loads() {
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        "<?xml version=\"1.0\"?>\n<bpmn:definitions xmlns:bpmn=\"{BPMN}\" id=\"d\">\n<bpmn:process id=\"p\" name=\"{}\"><bpmn:startEvent id=\"s\"/></bpmn:process>\n</bpmn:definitions>\n",
        "A".repeat(50 * 1024 * 1024)
    );
    let file = write(dir.path(), "big-attribute.bpmn", src.as_bytes());
    drop(src);
    // Only loading is judged here: a configuration with no modelling rules.
    write(dir.path(), ".bpmnlintrc", b"{}");
    let run = check(&file, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("0 errors"), "{}", run.stderr);
    // The file itself (50 MB) plus the name as one model string (50 MB).
    assert_peak_below(&run, "50 MB attribute", 250);
}

#[test]
fn invalid_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = format!("<?xml version=\"1.0\"?>\n<bpmn:definitions xmlns:bpmn=\"{BPMN}\">\n  <bpmn:process name=\"caf").into_bytes();
    let at = bytes.len();
    bytes.extend_from_slice(b"\xE9\"/>\n</bpmn:definitions>\n");
    let file = write(dir.path(), "latin1.bpmn", &bytes);
    assert_qf001(&file, &format!("invalid UTF-8 at byte {at}"), 3, 26);
}

#[test]
fn a_utf16_model_checks_exactly_as_its_utf8_original() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("samples/broken/QF022-retry-beside-routed-timer.bpmn"),
    )
    .unwrap();
    let utf8 = write(dir.path(), "model.bpmn", original.as_bytes());
    let le: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(original.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let utf16 = write(dir.path(), "model16.bpmn", &le);
    let a = check(&utf8, &["--format", "json"]);
    let b = check(&utf16, &["--format", "json"]);
    assert_eq!(a.code, Some(1), "the sample has an error: {}", a.stderr);
    assert_eq!(b.code, a.code);
    assert_eq!(
        b.stdout.replace("model16.bpmn", "model.bpmn"),
        a.stdout,
        "same findings, same spans"
    );
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "empty.bpmn", b"");
    assert_qf001(&file, "the file is empty", 1, 1);
}

#[test]
fn binary_files() {
    let dir = tempfile::tempdir().unwrap();
    // A zip header: valid UTF-8 with NUL bytes.
    let mut zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00".to_vec();
    zip.extend(std::iter::repeat_n(0u8, 200));
    let file = write(dir.path(), "archive.bpmn", &zip);
    assert_qf001(&file, "NUL byte", 1, 6);
    // Random bytes (a fixed xorshift stream, NULs and high bytes included).
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let noise: Vec<u8> = (0..64 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect();
    let file = write(dir.path(), "noise.bpmn", &noise);
    let run = check(&file, &[]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("QF001"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

/// A modeller-like qflow model with the namespace under `prefix` (or the
/// default namespace for elements, `qf:` for attributes).
fn model(prefix: Option<&str>) -> String {
    let (decl, el, at) = match prefix {
        Some(p) => (
            format!("xmlns:{p}=\"urn:qflow:bpmn:1\""),
            format!("{p}:"),
            format!("{p}:"),
        ),
        None => (
            "xmlns=\"urn:qflow:bpmn:1\" xmlns:qf=\"urn:qflow:bpmn:1\"".to_string(),
            String::new(),
            "qf:".to_string(),
        ),
    };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- exported by a modeller -->
<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:signavio="http://www.signavio.com" {decl} id="defs" targetNamespace="urn:t">
  <bpmn:process id="order" name="Bestellung prüfen — 注文" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:documentation>Größe ≥ 2 📦</bpmn:documentation></bpmn:startEvent>
    <bpmn:serviceTask id="charge" name="Zahlung" camunda:asyncBefore="true" {at}task="payments.charge">
      <bpmn:extensionElements>
        <zeebe:taskDefinition type="charge" retries="3"/>
        <signavio:signavioMetaData metaKey="id" metaValue="charge"/>
        <!-- the retry policy -->
        <{el}retry maxAttempts="3" backoff="PT1S PT5S" jitter="full"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:exclusiveGateway id="big" default="small"/>
    <bpmn:endEvent id="done"/>
    <bpmn:endEvent id="review"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="charge"/>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="big"/>
    <bpmn:sequenceFlow id="large" sourceRef="big" targetRef="review">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression"><![CDATA[amount > 100 && currency == "EUR"]]></bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="small" sourceRef="big" targetRef="done"/>
  </bpmn:process>
</bpmn:definitions>
"#
    )
}

/// Diagnostic codes and positions: the same model must get the same verdicts
/// whatever its encoding details or prefix.
fn verdicts(run: &Run) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON array");
    v.as_array()
        .expect("array")
        .iter()
        .map(|d| format!("{} {}:{}", d["code"], d["line"], d["column"]))
        .collect()
}

#[test]
fn real_world_variants_load() {
    let dir = tempfile::tempdir().unwrap();
    let base = model(Some("q"));
    let reference = check(
        &write(dir.path(), "base.bpmn", base.as_bytes()),
        &["--format", "json"],
    );
    assert_eq!(reference.code, Some(0), "{}", reference.stdout);
    let expected = verdicts(&reference);
    assert!(
        expected.iter().any(|v| v.starts_with("\"QF040\"")),
        "the retry makes the process stateful: {expected:?}"
    );
    let variants = [
        ("bom.bpmn", format!("\u{feff}{base}")),
        ("crlf.bpmn", base.replace('\n', "\r\n")),
        (
            "latin1.bpmn",
            base.replace("encoding=\"UTF-8\"", "encoding=\"ISO-8859-1\"")
                .replace(" — 注文", "")
                .replace("prüfen", "pruefen")
                .replace("Größe ≥ 2 📦", "Size 2"),
        ),
        ("x-prefix.bpmn", model(Some("x"))),
        ("default-namespace.bpmn", model(None)),
    ];
    for (name, src) in variants {
        let file = write(dir.path(), name, src.as_bytes());
        let run = check(&file, &["--format", "json"]);
        assert_eq!(run.code, Some(0), "{name}: {}{}", run.stdout, run.stderr);
        assert_eq!(verdicts(&run), expected, "{name}");
        let human = check(&file, &[]);
        assert_eq!(human.code, Some(0), "{name}: {}", human.stderr);
        assert!(
            human.stderr.contains("0 errors"),
            "{name}: {}",
            human.stderr
        );
    }
}

#[test]
fn generated_twenty_thousand_task_model_checks_within_memory() {
    let dir = tempfile::tempdir().unwrap();
    let src = qflow_engine::testgen::generate(20_000);
    let file = write(dir.path(), "generated-20k.bpmn", src.as_bytes());
    println!("generated model: {} bytes", src.len());
    drop(src);
    let run = check(&file, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("0 errors"), "{}", run.stderr);
    assert_peak_below(&run, "20,000-task model", 200);
}

/// QF040 on 20,000 tasks (2,000 of them retried) is one short note: each kind
/// of wait state on one line, its ids capped at ten and the rest counted. It
/// listed all 2,000 ids before, about 1,400 lines of output for one note.
/// (`-v`: by default a note is one line and its help is not printed at all.)
#[test]
fn the_twenty_thousand_task_report_caps_its_lists() {
    let dir = tempfile::tempdir().unwrap();
    let src = qflow_engine::testgen::generate(20_000);
    let file = write(dir.path(), "generated-20k.bpmn", src.as_bytes());
    drop(src);
    let run = check(&file, &["-v"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // `stderr` holds the human report (stdout) and the messages.
    let report = run.stderr.clone();
    assert!(
        report.contains("2,000 wait states"),
        "the count is grouped: {report}"
    );
    assert!(
        report.contains("… and 1,990 more"),
        "the ids are capped: {report}"
    );
    assert!(
        !report.contains("Task_110`"),
        "the 11th id is counted, not listed"
    );
    let lines = report.lines().count();
    println!("report: {lines} lines, {} bytes", report.len());
    assert!(lines <= 40, "{lines} lines of report:\n{report}");
    assert!(report.len() <= 4_000, "{} bytes of report", report.len());
}

/// No control character but tab and newline on a terminal, from any of these.
fn assert_no_control(what: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\t' | '\n'))
        .collect();
    assert!(
        bad.is_empty(),
        "{what} printed control characters {bad:?}:\n{text}"
    );
}

/// Terminal escapes in someone else's model (an attribute value) and in a
/// handler's failure (its code and message, as a scenario scripts them and
/// an HTTP handler would send them) used to reach the terminal raw: `check`
/// printed the model's line with `ESC]0;…BEL` (a new window title) and
/// `ESC[2J` (a cleared screen, the report gone), and `run`, `show`,
/// `instances` and `stats` printed the code and message. Each is shown as
/// `?` now, at the place it was (the report's underline still points at the
/// mistake; for ESC, a character XML forbids, that is the ESC itself).
#[test]
fn terminal_escapes_from_a_model_or_a_handler_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sample = std::fs::read_to_string(repo.join("samples/checkout.bpmn")).unwrap();
    let hostile = sample.replace(
        r#"maxAttempts="4""#,
        "maxAtempts=\"4\" name=\"\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}31m\"",
    );
    let model = write(dir.path(), "model.bpmn", hostile.as_bytes());
    let run = check(&model, &[]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_no_control("check", &run.stderr);
    assert!(
        run.stderr.contains("name=\"?]0;PWNED??[2J¿31m\""),
        "the line is shown, each control character as a visible mark: {}",
        run.stderr
    );
    // ESC is a control character XML 1.0 forbids: the model is not
    // well-formed, and the report points at the first one.
    assert!(
        run.stderr.contains("QF001") && run.stderr.contains("U+001B"),
        "{}",
        run.stderr
    );
    // A C1 control (U+009B, a CSI on some terminals) is allowed in XML:
    // the model is read, and the line of the mistake is still shown safely.
    let c1 = sample.replace(
        r#"maxAttempts="4""#,
        "maxAtempts=\"4\" name=\"\u{9b}31m\u{9b}2J\"",
    );
    let model = write(dir.path(), "c1.bpmn", c1.as_bytes());
    let run = check(&model, &[]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_no_control("check", &run.stderr);
    assert!(run.stderr.contains("name=\"¿31m¿2J\""), "{}", run.stderr);
    assert!(
        run.stderr.contains("has no such attribute"),
        "{}",
        run.stderr
    );

    let scenario = write(
        dir.path(),
        "escapes.json",
        br#"{"tasks": {"payments.charge": [{"fail": {"code": "DOWN\u001b[31m", "class": "permanent", "message": "boom \u001b]0;T\u0007\u001b[2J"}}]}}"#,
    );
    let db = dir.path().join("q.db");
    let sample = repo.join("samples/checkout.bpmn");
    let qflow = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
            .args(args)
            .output()
            .expect("qflow runs");
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let (sample, scenario, db) = (
        sample.to_str().unwrap(),
        scenario.to_str().unwrap(),
        db.to_str().unwrap(),
    );
    let ran = qflow(&["run", sample, "--scenario", scenario, "--db", db]);
    assert!(ran.contains("failed DOWN?[31m (permanent)"), "{ran}");
    assert_no_control("run", &ran);
    let shown = qflow(&["show", "checkout-1", "--db", db]);
    assert!(shown.contains("boom ?]0;T??[2J"), "{shown}");
    assert_no_control("show", &shown);
    assert_no_control("instances", &qflow(&["instances", "--db", db]));
    assert_no_control("stats", &qflow(&["stats", "--db", db]));
}

/// `qflow check` reports a finding past column 65,535 of one line (a
/// minified model) in plain lines, because miette cannot pad a label that
/// far; `qflow run` and `qflow deploy` drew the same refusal with miette and
/// panicked ("Formatting argument out of range", exit 101). They print
/// what `check` prints now, and refuse the model (exit 1).
#[test]
fn a_refusal_far_along_one_line_is_reported_by_run_and_deploy_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sample = std::fs::read_to_string(repo.join("samples/checkout.bpmn")).unwrap();
    let at = sample.find("<bpmn:process").unwrap();
    let minified = format!(
        "{}<!--{}-->{}",
        &sample[..at],
        "x".repeat(70_000),
        &sample[at..]
    )
    .replace(r#"maxAttempts="4""#, r#"maxAtempts="4""#)
    .replace('\n', " ");
    let model = write(dir.path(), "wide.bpmn", minified.as_bytes());
    let db = dir.path().join("q.db");
    for args in [
        vec!["run", model.to_str().unwrap()],
        vec![
            "deploy",
            model.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
            .args(&args)
            .output()
            .expect("qflow runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("QF006 error: unknown attribute `maxAtempts` on <q:retry>\n  at ")
                && err.contains("wide.bpmn:1:"),
            "{args:?}: {err}"
        );
    }
}
