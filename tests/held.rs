//! What holds an instance back, as `qflow instances` and `qflow show` say
//! it: a retry park held by a pause (which pause, since when, its due time
//! kept, the command that lifts it) and a quarantine (since when, the
//! command that releases it), in human and JSON output. The transcripts are
//! golden files under `tests/golden/held/` (wall-clock times and the
//! temporary database's path masked); re-bless with
//! `QFLOW_BLESS=1 cargo test --test held` and review the diff.

use std::path::PathBuf;

use serde_json::Value;

mod support;
use support::qflow_here as qflow;

const DBG08: &str = "samples/dbg08-long-outage.bpmn";
const ALWAYS_FAILS: &str = "samples/scenarios/dbg08-long-outage.json";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// RFC 3339 wall-clock instants (`2026-12-01T04:40:12Z`) → `<time>`, and
/// JSON's wall-clock milliseconds (`"paused_ms":1764564012000`) → `<ms>`.
fn mask(s: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let is_stamp = |w: &[char]| {
        w.len() == 20
            && w.iter().enumerate().all(|(k, c)| match k {
                4 | 7 => *c == '-',
                10 => *c == 'T',
                13 | 16 => *c == ':',
                19 => *c == 'Z',
                _ => c.is_ascii_digit(),
            })
    };
    while i < chars.len() {
        if i + 20 <= chars.len() && is_stamp(&chars[i..i + 20]) {
            out.push_str("<time>");
            i += 20;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    for key in ["\"paused_ms\":", "\"quarantined_ms\":", "\"at_ms\":"] {
        let mut masked = String::new();
        let mut rest = out.as_str();
        while let Some(at) = rest.find(key) {
            let (head, tail) = rest.split_at(at + key.len());
            masked.push_str(head);
            let digits = tail.chars().take_while(char::is_ascii_digit).count();
            if digits > 0 {
                masked.push_str("<ms>");
            }
            rest = &tail[digits..];
        }
        masked.push_str(rest);
        out = masked;
    }
    out
}

fn check_golden(name: &str, actual: &str) {
    support::golden::check(&repo().join("tests/golden/held").join(name), actual);
}

/// Run one command into the transcript; its stdout.
fn step(t: &mut String, db: &str, args: &[&str]) -> String {
    let (code, out, err) = qflow(args);
    let line = args.join(" ").replace(db, "DB");
    t.push_str(&format!(
        "$ qflow {line}\n# exit {code}\n{}",
        mask(&out.replace(db, "DB"))
    ));
    if !err.is_empty() {
        t.push_str(&format!("# stderr\n{}", mask(&err.replace(db, "DB"))));
    }
    t.push('\n');
    out
}

/// One DBG-08 instance parked for its second attempt (due at +1m), its
/// dependency paused, then quarantined, then both lifted: what the list and
/// the full view say at each stage.
fn walk(db: &str, format: &str) -> String {
    let mut t = String::new();
    let f = ["--format", format];
    let (code, _, err) = qflow(&[
        "run",
        DBG08,
        "--scenario",
        ALWAYS_FAILS,
        "--db",
        db,
        "--until",
        "PT30S",
    ]);
    assert_eq!(code, 0, "{err}");
    let pause = [
        "pause",
        "--db",
        db,
        "--dependency",
        "payments.charge",
        "--by",
        "ops-alice",
        "--reason",
        "bank outage",
    ];
    let (code, _, err) = qflow(&pause);
    assert_eq!(code, 0, "{err}");
    step(&mut t, db, &[&["instances", "--db", db][..], &f].concat());
    let shown = step(
        &mut t,
        db,
        &[&["show", "dbg08-1", "--db", db][..], &f].concat(),
    );
    if format == "json" {
        let v: Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(v["held"][0]["value"], "payments.charge", "{v}");
        assert_eq!(v["held"][0]["due_s"], 60, "the due time is kept: {v}");
        assert_eq!(v["held"][0]["paused_by"], "ops-alice", "{v}");
        assert_eq!(v["held"][0]["reason"], "bank outage", "{v}");
    } else {
        assert!(
            shown.contains("is held by the pause of dependency payments.charge"),
            "{shown}"
        );
        assert!(
            shown.contains("by ops-alice (\"bank outage\"); its due time is kept"),
            "{shown}"
        );
    }
    let (code, _, err) = qflow(&["quarantine", "dbg08-1", "--db", db, "--by", "ops-bob"]);
    assert_eq!(code, 0, "{err}");
    step(&mut t, db, &[&["instances", "--db", db][..], &f].concat());
    step(
        &mut t,
        db,
        &[&["show", "dbg08-1", "--db", db][..], &f].concat(),
    );
    // A quarantine repeated, then lifted by someone else: the instance's
    // containment log keeps all three after the quarantine is gone.
    let (code, _, err) = qflow(&["quarantine", "dbg08-1", "--db", db, "--by", "ops-dave"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = qflow(&[
        "release",
        "dbg08-1",
        "--db",
        db,
        "--by",
        "ops-carol",
        "--reason",
        "order fixed",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = qflow(&[
        "unpause",
        "--db",
        db,
        "--dependency",
        "payments.charge",
        "--by",
        "ops-alice",
    ]);
    assert_eq!(code, 0, "{err}");
    step(&mut t, db, &[&["instances", "--db", db][..], &f].concat());
    let shown = step(
        &mut t,
        db,
        &[&["show", "dbg08-1", "--db", db][..], &f].concat(),
    );
    if format == "json" {
        let v: Value = serde_json::from_str(&shown).unwrap();
        let log: Vec<(&str, &str, bool)> = v["containment_log"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["action"].as_str().unwrap(),
                    l["by"].as_str().unwrap(),
                    l["changed"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            log,
            [
                ("quarantine", "ops-bob", true),
                ("quarantine", "ops-dave", false),
                ("release", "ops-carol", true)
            ],
            "{v}"
        );
        assert_eq!(v["quarantined_ms"], Value::Null, "{v}");
    } else {
        assert!(
            shown.contains("  release by ops-carol (\"order fixed\")\n"),
            "{shown}"
        );
    }
    t
}

#[test]
fn instances_and_show_say_which_pause_holds_a_park_and_that_an_instance_is_quarantined() {
    for (format, golden) in [("human", "walk.txt"), ("json", "walk-json.txt")] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("held.db");
        let t = walk(db.to_str().unwrap(), format);
        check_golden(golden, &t);
    }
}

#[test]
fn postgres_says_the_same_as_sqlite() {
    let Some(server) = qflow_engine::store::pg::test_server("held_walk") else {
        return;
    };
    let name = format!("qflow_held_walk_{}", std::process::id());
    let db = qflow_engine::store::pg::scratch_database(&server, &name).unwrap();
    let t = walk(&db, "json");
    let dir = tempfile::tempdir().unwrap();
    let sqlite = dir.path().join("held.db");
    assert_eq!(t, walk(sqlite.to_str().unwrap(), "json"));
    let name = format!("qflow_held_parks_{}", std::process::id());
    let db = qflow_engine::store::pg::scratch_database(&server, &name).unwrap();
    held_parks_read_the_same(&db);
}

#[test]
fn the_held_parks_of_a_store_are_listed_by_instance() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("parks.db");
    held_parks_read_the_same(db.to_str().unwrap());
}

/// Two instances parked, a class paused: the store lists both parks held
/// (what the console's list marks), each with the pause and its due time;
/// after the unpause, none.
fn held_parks_read_the_same(db: &str) {
    use qflow_engine::runtime::fleet::Fleet;
    use qflow_engine::runtime::graph::Graph;
    use qflow_engine::runtime::{decide, Scenario};
    use qflow_engine::store::{Location, Store};
    {
        let source = std::fs::read_to_string(repo().join(DBG08)).unwrap();
        let scenario = std::fs::read_to_string(repo().join(ALWAYS_FAILS)).unwrap();
        let mut store = Store::connect(&Location::parse(db).unwrap()).unwrap();
        let graph = Graph::compile(&qflow_engine::load(&source).unwrap()).unwrap();
        let dep = store.deploy(&graph.process_id, &source, 0).unwrap();
        let start = decide::start(&graph, &Default::default(), 0);
        store.start_instances(&dep, &start, 0, 2).unwrap();
        // Each first attempt fails and parks its retry at +1m.
        let mut fleet = Fleet::new(store, Scenario::parse(&scenario).unwrap(), "t:1".into());
        while fleet.stats().decisions < 2 {
            fleet.step(|_, _| {}).unwrap();
        }
    }
    let (code, _, err) = qflow(&["pause", "--db", db, "--class", "transient"]);
    assert_eq!(code, 0, "{err}");
    let store = Store::connect(&Location::parse(db).unwrap()).unwrap();
    let parks = store.held_parks().unwrap();
    let seen: Vec<(&str, &str, &str, i64)> = parks
        .iter()
        .map(|(id, h)| (id.as_str(), h.kind.flag(), h.value.as_str(), h.due_ms))
        .collect();
    assert_eq!(
        seen,
        [
            ("dbg08-1", "class", "transient", 60_000),
            ("dbg08-2", "class", "transient", 60_000)
        ],
        "{parks:?}"
    );
    drop(store);
    let (code, _, err) = qflow(&["unpause", "--db", db, "--class", "transient"]);
    assert_eq!(code, 0, "{err}");
    let store = Store::connect(&Location::parse(db).unwrap()).unwrap();
    assert!(store.held_parks().unwrap().is_empty());
}
