//! Crash safety of the containment log: a pause, an unpause, a quarantine
//! or a release and its log row commit together. `qflow pause|unpause|
//! quarantine|release` stopped at any instant leaves the database with the
//! action taken and logged, or neither: never a pause no one logged, never
//! a logged release of an instance still quarantined.
//!
//! Two ways to stop it: the store's fault points (`QFLOW_FAULT`:
//! `contain.written`, the action's row changed and the log not yet written;
//! `contain.logged`, both written, not committed), and SIGKILLs at
//! deterministic pseudo-random offsets.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use qflow_engine::store::contain::LogQuery;

mod support;
use support::stores::{open, Fresh};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn qflow(db: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_qflow"));
    c.current_dir(repo())
        .args(args)
        .args(["--db", db, "--by", "ops"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// What the containment state and its log say: whether class transient is
/// paused, whether dbg08-1 is quarantined, and the log's (action, changed)
/// entries.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    paused: bool,
    quarantined: bool,
    log: Vec<(String, bool)>,
}

fn state(db: &str) -> State {
    let store = open(db);
    State {
        paused: !store.pauses().unwrap().is_empty(),
        quarantined: !store.quarantined().unwrap().is_empty(),
        log: store
            .containment_log(&LogQuery::recent(0))
            .unwrap()
            .into_iter()
            .map(|l| (l.action.word().to_string(), l.changed))
            .collect(),
    }
}

/// A database holding one DBG-08 instance parked for its retry.
fn setup(fresh: &Fresh) -> String {
    let db = fresh.db();
    let ok = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .args([
            "run",
            "samples/dbg08-long-outage.bpmn",
            "--scenario",
            "samples/scenarios/dbg08-long-outage.json",
            "--until",
            "PT30S",
            "--db",
        ])
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success());
    db
}

crate::on_both_stores!(
    a_containment_action_stopped_at_each_fault_point_is_taken_and_logged_or_neither,
    a_containment_action_killed_at_random_instants_is_taken_and_logged_or_neither,
);

fn a_containment_action_stopped_at_each_fault_point_is_taken_and_logged_or_neither(fresh: &Fresh) {
    let db = setup(fresh);
    let pause = ["pause", "--class", "transient"];
    let unpause = ["unpause", "--class", "transient"];
    let quarantine = ["quarantine", "dbg08-1"];
    let release = ["release", "dbg08-1"];
    let empty = State {
        paused: false,
        quarantined: false,
        log: Vec::new(),
    };
    assert_eq!(state(&db), empty);
    let mut expected = empty;
    // Each action is stopped at both points (nothing changes, nothing is
    // logged), then taken (changed and logged together).
    for (args, action) in [
        (&pause[..], "pause"),
        (&unpause[..], "unpause"),
        (&quarantine[..], "quarantine"),
        (&release[..], "release"),
    ] {
        for point in ["contain.written", "contain.logged"] {
            let status = qflow(&db, args).env("QFLOW_FAULT", point).status().unwrap();
            assert!(!status.success(), "{action} {point}: the point stops it");
            assert_eq!(state(&db), expected, "{action} stopped at {point}");
        }
        assert!(qflow(&db, args).status().unwrap().success(), "{action}");
        match action {
            "pause" | "unpause" => expected.paused = action == "pause",
            _ => expected.quarantined = action == "quarantine",
        }
        expected.log.push((action.to_string(), true));
        assert_eq!(state(&db), expected, "{action} taken");
    }
}

/// xorshift64*: the same kill offsets on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn a_containment_action_killed_at_random_instants_is_taken_and_logged_or_neither(fresh: &Fresh) {
    if support::slow_test_left_out("the containment action killed at random instants") {
        return;
    }
    let db = setup(fresh);
    let t = Instant::now();
    assert!(qflow(&db, &["quarantine", "dbg08-1"])
        .status()
        .unwrap()
        .success());
    let span_us = (t.elapsed().as_micros() as u64).max(1_000);
    let mut before = state(&db);
    let mut rng = Rng(0x5eed_c0a7_a1e5_0001);
    let (mut taken, mut not) = (0, 0);
    for k in 0..30 {
        // Toggle one of the two: the pause on even rounds, the quarantine
        // on odd ones.
        let args: &[&str] = match (k % 2, before.paused, before.quarantined) {
            (0, false, _) => &["pause", "--class", "transient"],
            (0, true, _) => &["unpause", "--class", "transient"],
            (_, _, false) => &["quarantine", "dbg08-1"],
            (_, _, true) => &["release", "dbg08-1"],
        };
        let mut child = qflow(&db, args).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.next() % span_us));
        child.kill().ok();
        child.wait().unwrap();
        let after = state(&db);
        if after == before {
            not += 1;
        } else {
            let mut expected = before.clone();
            match args[0] {
                "pause" | "unpause" => expected.paused = !before.paused,
                _ => expected.quarantined = !before.quarantined,
            }
            expected.log.push((args[0].to_string(), true));
            assert_eq!(after, expected, "kill {k} of {args:?}: half an action");
            taken += 1;
        }
        before = after;
    }
    eprintln!("containment kills: {not} left nothing, {taken} the action and its log row");
}
