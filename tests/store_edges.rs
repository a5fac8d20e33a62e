//! The SQLite store at its edges, through the binary: another program's
//! database is refused and left exactly as it was (not switched to WAL);
//! a database file deleted under a running `qflow serve` stops it deciding
//! with an error naming the file (docs/store.md).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::qflow;

#[test]
fn another_programs_database_is_refused_and_left_exactly_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('keep me');")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    for args in [
        vec!["instances", "--db", "notes.db"],
        vec!["deployments", "--db", "notes.db"],
        vec!["stats", "--db", "notes.db"],
    ] {
        let out = qflow(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("a SQLite database of something else"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file is byte for byte what it was (its journal mode too)"
    );
    assert!(!dir.path().join("notes.db-wal").exists());
    assert!(!dir.path().join("notes.db-shm").exists());
}

const TIMER: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <process id="wait" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="pause"/>
    <intermediateCatchEvent id="pause">
      <timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition>
    </intermediateCatchEvent>
    <sequenceFlow id="f2" sourceRef="pause" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>
"#;

#[test]
fn a_database_file_deleted_under_a_running_serve_stops_it_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.bpmn"), TIMER).unwrap();
    let out = qflow(dir.path(), &["deploy", "model.bpmn", "--db", "q.db"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(dir.path())
        .args([
            "serve",
            "--db",
            "q.db",
            "--listen",
            "127.0.0.1:0",
            "--format",
            "json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let it open the database and start deciding.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    std::fs::remove_file(dir.path().join("q.db")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve kept running on a deleted database file");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(2));
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains("q.db was deleted while qflow had it open"),
        "{err}"
    );
}

/// Runs the built binary in `dir` as a user who may not write the
/// database: as `nobody` when the tests run as root (root writes any
/// file), else as the tests' own user with the files made read-only.
fn qflow_unprivileged(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let root = rustix::process::geteuid().is_root();
    let mut cmd = if root {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_qflow"),
        ]);
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_qflow"))
    };
    cmd.current_dir(dir)
        .args(args)
        .output()
        .expect("qflow runs")
}

#[test]
fn a_read_only_database_can_be_listed_and_shown() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.bpmn"), TIMER).unwrap();
    let out = qflow(
        dir.path(),
        &["run", "model.bpmn", "--db", "q.db", "--until", "PT1M"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The run closed the database: no -wal or -shm file beside it.
    let perm = |p: &std::path::Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    perm(&dir.path().join("q.db"), 0o444);
    perm(dir.path(), 0o555);
    let before = std::fs::read(dir.path().join("q.db")).unwrap();
    let listed = qflow_unprivileged(
        dir.path(),
        &["instances", "--db", "q.db", "--format", "json"],
    );
    let shown = qflow_unprivileged(
        dir.path(),
        &["show", "wait-1", "--db", "q.db", "--format", "json"],
    );
    let deployments = qflow_unprivileged(dir.path(), &["deployments", "--db", "q.db"]);
    perm(dir.path(), 0o755);
    for (what, out) in [
        ("instances", &listed),
        ("show", &shown),
        ("deployments", &deployments),
    ] {
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(String::from_utf8_lossy(&listed.stdout).contains("wait-1"));
    assert!(String::from_utf8_lossy(&shown.stdout).contains("wait-1"));
    assert_eq!(std::fs::read(dir.path().join("q.db")).unwrap(), before);
}

const TASK: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:test">
  <process id="charge" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="charge_card"/>
    <serviceTask id="charge_card" q:task="payments.charge"/>
    <sequenceFlow id="f2" sourceRef="charge_card" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>
"#;

/// A tmpfs of `size` mounted on a new directory, unmounted when dropped;
/// `None` where mounting is not allowed (not root, a container without
/// the capability): the test says it skips.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallDisk(dir))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_disk_is_named_with_the_database_and_the_fix() {
    let Some(disk) = SmallDisk::mount("2m") else {
        eprintln!("a_full_disk_is_named_with_the_database_and_the_fix: skipped (cannot mount a small tmpfs here)");
        return;
    };
    let dir = disk.0.path();
    std::fs::write(dir.join("model.bpmn"), TASK).unwrap();
    std::fs::write(
        dir.join("handlers.toml"),
        "[tasks.\"payments.charge\"]\ncommand = \"cat >/dev/null\"\n",
    )
    .unwrap();
    let out = qflow(dir, &["deploy", "model.bpmn", "--db", "q.db"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // serve's stderr goes to a disk with room.
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("serve.err");
    let mut child = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(dir)
        .args([
            "serve",
            "--db",
            "q.db",
            "--handlers",
            "handlers.toml",
            "--listen",
            "127.0.0.1:0",
            "--format",
            "json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut first = String::new();
    {
        use std::io::BufRead;
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut first).unwrap();
    }
    let listening: serde_json::Value = serde_json::from_str(&first).unwrap();
    let url = format!(
        "{}/processes/charge/instances",
        listening["url"].as_str().unwrap()
    );
    // Fill the disk, then start instances with large variables until the
    // store says so.
    let _ = std::fs::write(dir.join("filler"), vec![0u8; 2 << 20]);
    let big = serde_json::json!({"blob": "x".repeat(200_000)});
    let mut said = String::new();
    for _ in 0..20 {
        let client = support::serve::agent();
        let Ok(mut resp) = client.post(&url).send(big.to_string().as_bytes()) else {
            break; // serve stopped
        };
        if resp.status().as_u16() == 500 {
            said = resp.body_mut().read_to_string().unwrap_or_default();
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let _ = child.kill();
    let _ = child.wait();
    // The answer, or serve's last words if its own decision hit it first.
    said.push_str(&std::fs::read_to_string(&log).unwrap_or_default());
    assert!(said.contains("q.db"), "{said}");
    assert!(
        said.contains("the disk holding the database is full"),
        "{said}"
    );
}
