//! Crash safety of a migration: `qflow migrate` stopped at any instant
//! leaves the database holding either the instance as it was (FAILED on
//! deployment 1, no new deployment) or as migrated (RUNNING on the repaired
//! model's deployment), never a mix, and a later `qflow migrate` finishes
//! the repair.
//!
//! Two ways to stop it: the store's fault points (`QFLOW_FAULT`), which
//! abort the process at exact instants inside and around the migration's
//! transaction, and SIGKILLs at deterministic pseudo-random offsets.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::stores::{open, Fresh};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn migrate(db: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_qflow"));
    c.current_dir(repo())
        .args([
            "migrate",
            "dbg08-1",
            "--to",
            "samples/dbg08-repaired.bpmn",
            "--map",
            "charge=chargeCard",
            "--db",
        ])
        .arg(db)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// What a migration changes: the instance's snapshot bytes, status,
/// version, history length and armed timers, the hash its deployment pins,
/// and the deployments there are (by hash).
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    snapshot: Vec<u8>,
    status: String,
    version: i64,
    history: usize,
    armed: usize,
    pinned: String,
    deployments: Vec<String>,
}

fn state(db: &str) -> State {
    let store = open(db);
    let i = store.instance("dbg08-1").unwrap().expect("the instance");
    State {
        snapshot: i.snapshot.clone(),
        status: i.status.as_str().to_string(),
        version: i.version,
        history: store.history(&i.id).unwrap().len(),
        armed: store
            .timers(&i.id)
            .unwrap()
            .iter()
            .filter(|t| t.armed)
            .count(),
        pinned: i.hash.clone(),
        deployments: store
            .deployments()
            .unwrap()
            .into_iter()
            .map(|d| d.hash)
            .collect(),
    }
}

/// A fresh copy of the database `base` holding the FAILED instance: a
/// copied file (with its log) on SQLite, a database made from it as a
/// template on PostgreSQL.
fn copy(fresh: &Fresh, base: &str, name: &str) -> String {
    if fresh.is_postgres() {
        // Named after `base` (unique to its test): the two tests of this
        // file run at once in one process, and making a copy drops any
        // database of that name first, with its connections.
        let base_name = base.rsplit('/').next().unwrap_or(base);
        let base_name = base_name.split('?').next().unwrap_or(base_name);
        let name = format!("{name}_{base_name}"); // the unique part first: names are cut at 60
        return qflow_engine::store::pg::copy_database(base, &name).unwrap();
    }
    let to = fresh.dir().join(format!("{name}.db"));
    for suffix in ["", "-wal", "-shm"] {
        let (from, dest) = (
            format!("{base}{suffix}"),
            format!("{}{suffix}", to.display()),
        );
        let _ = std::fs::remove_file(&dest);
        if Path::new(&from).exists() {
            std::fs::copy(&from, &dest).unwrap();
        }
    }
    to.display().to_string()
}

/// The base database (one FAILED long-outage instance), the state before
/// and the state after an uninterrupted migration.
fn setup(fresh: &Fresh) -> (String, State, State) {
    let base = fresh.db();
    let ok = Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .args(["run", "samples/dbg08-long-outage.bpmn", "--db"])
        .arg(&base)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success());
    let old = state(&base);
    assert_eq!(old.status, "failed");
    let reference = copy(fresh, &base, "reference");
    assert!(migrate(&reference).status().unwrap().success());
    let new = state(&reference);
    assert_eq!(new.status, "running");
    assert_ne!(old.pinned, new.pinned);
    (base, old, new)
}

crate::on_both_stores!(
    a_migration_stopped_at_each_fault_point_is_all_or_nothing_and_can_be_finished,
    a_migration_killed_at_random_instants_leaves_the_old_state_or_the_new,
);

fn a_migration_stopped_at_each_fault_point_is_all_or_nothing_and_can_be_finished(fresh: &Fresh) {
    let (base, old, new) = setup(fresh);
    for (point, committed) in [
        ("migrate.begin", false),
        ("migrate.written", false),
        ("migrate.before-commit", false),
        ("migrate.committed", true),
    ] {
        let db = copy(fresh, &base, &point.replace(['.', '-'], "_"));
        let status = migrate(&db).env("QFLOW_FAULT", point).status().unwrap();
        assert!(
            !status.success(),
            "{point}: the fault point stops the process"
        );
        let after = state(&db);
        let expected = if committed { &new } else { &old };
        assert_eq!(
            &after, expected,
            "{point}: neither the old state nor the new"
        );
        // The repair can be finished (the dead process's claim is taken over).
        if !committed {
            assert!(migrate(&db).status().unwrap().success(), "{point}: retry");
            assert_eq!(state(&db), new, "{point}: the retried migration");
        }
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

fn a_migration_killed_at_random_instants_leaves_the_old_state_or_the_new(fresh: &Fresh) {
    if support::slow_test_left_out("the migration killed at random instants") {
        return;
    }
    let (base, old, new) = setup(fresh);
    let probe = copy(fresh, &base, "probe");
    let t = Instant::now();
    assert!(migrate(&probe).status().unwrap().success());
    let span_us = (t.elapsed().as_micros() as u64).max(1_000);
    let mut rng = Rng(0x5eed_0013_d3b1_0001);
    let (mut olds, mut news) = (0, 0);
    for k in 0..40 {
        let db = copy(fresh, &base, "killed");
        let mut child = migrate(&db).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.next() % span_us));
        child.kill().ok();
        child.wait().unwrap();
        let after = state(&db);
        if after == old {
            olds += 1;
        } else {
            assert_eq!(after, new, "kill {k}: a mix of old and new");
            news += 1;
        }
    }
    eprintln!("migration kills: {olds} left the old state, {news} the new");
}
