//! Crash safety: `qflow run --db FILE` is killed with SIGKILL at many
//! deterministic pseudo-random points, restarted, and after every kill the
//! database must hold:
//!
//! - no lost instance (once created, it is there, exactly one per run);
//! - at most one attempt per (node, attempt number), and at most one attempt
//!   per armed retry timer;
//! - for every parked token, exactly one armed timer driving it (a channel
//!   call: its timeout while live, its retry timer in a backoff window);
//!
//! and when the run finally completes, its decisions and every persisted
//! snapshot byte must equal an uninterrupted run's: a crash changes nothing.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use qflow_engine::runtime::snapshot::{Snapshot, TokenState};
use qflow_engine::store::{Location, Store};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// (model, scenario)
const CASES: &[(&str, &str)] = &[
    ("dbg08-long-outage", "dbg08-long-outage"),
    ("dbg08-transient-outage", "dbg08-transient-outage"),
    ("run-order-retry", "run-order-retry-flaky"),
    ("run-boundaries", "run-boundaries-escalate"),
    ("bank-authorize", "call-silent-then-answer"),
];

const KILLS_PER_CASE: usize = 50;

/// A small deterministic generator (xorshift64*), so every run of the test
/// kills at the same offsets.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Where a case's databases live: SQLite files in a directory, or fresh
/// databases on a PostgreSQL server.
enum Dbs<'a> {
    Files(&'a Path),
    Server(&'a str),
}

impl Dbs<'_> {
    /// A fresh, empty database named `name`: what `--db` takes.
    fn fresh(&self, name: &str) -> String {
        match self {
            Dbs::Files(dir) => {
                let path = dir.join(format!("{name}.db"));
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
                path.to_str().unwrap().to_string()
            }
            Dbs::Server(url) => {
                let name = format!("qflow_crash_{name}_{}", std::process::id());
                qflow_engine::store::pg::scratch_database(url, &name).unwrap()
            }
        }
    }
}

/// The store `db` names; `None` for a SQLite file not created yet.
fn open(db: &str) -> Option<Store> {
    let location = Location::parse(db).unwrap();
    if location.sqlite_path().is_some_and(|p| !p.exists()) {
        return None;
    }
    Some(Store::connect(&location).unwrap_or_else(|e| panic!("database unreadable: {e}")))
}

fn command(model: &str, scenario: &str, db: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_qflow"));
    c.current_dir(repo())
        .arg("run")
        .arg(format!("samples/{model}.bpmn"))
        .arg("--scenario")
        .arg(format!("samples/scenarios/{scenario}.json"))
        .arg("--db")
        .arg(db)
        .args(["--format", "json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// What a finished run leaves: attempts (node, attempt, at) and the snapshot
/// byte sequence.
type Trace = (Vec<(String, u32, i64)>, Vec<Vec<u8>>, String);

fn trace(db: &str) -> Trace {
    let store = open(db).expect("the database exists");
    let inst = &store.instances().unwrap()[0];
    let attempts = store
        .history(&inst.id)
        .unwrap()
        .into_iter()
        .filter(|h| h.kind == "attempt")
        .map(|h| (h.node.unwrap_or_default(), h.attempt.unwrap_or(0), h.at_ms))
        .collect();
    let snaps = store
        .transitions(&inst.id)
        .unwrap()
        .into_iter()
        .map(|t| t.snapshot)
        .collect();
    (attempts, snaps, inst.status.as_str().to_string())
}

/// The invariants that must hold at any kill point.
fn check_invariants(db: &str, seen_instance: &mut Option<String>, ctx: &str) {
    let Some(store) = open(db) else {
        assert!(seen_instance.is_none(), "{ctx}: database vanished");
        return;
    };
    let instances = store.instances().unwrap();
    assert!(instances.len() <= 1, "{ctx}: {} instances", instances.len());
    match (&seen_instance, instances.first()) {
        (Some(id), None) => panic!("{ctx}: instance {id} lost"),
        (Some(id), Some(i)) => assert_eq!(&i.id, id, "{ctx}"),
        (None, Some(i)) => *seen_instance = Some(i.id.clone()),
        (None, None) => return,
    }
    let inst = &instances[0];
    let history = store.history(&inst.id).unwrap();
    let mut per_attempt: BTreeMap<(String, u32), usize> = BTreeMap::new();
    let mut per_timer: BTreeMap<i64, usize> = BTreeMap::new();
    for h in history.iter().filter(|h| h.kind == "attempt") {
        *per_attempt
            .entry((h.node.clone().unwrap_or_default(), h.attempt.unwrap_or(0)))
            .or_default() += 1;
        if let Some(t) = h.timer_id {
            *per_timer.entry(t).or_default() += 1;
        }
    }
    assert!(
        per_attempt.values().all(|n| *n == 1),
        "{ctx}: an attempt ran twice: {per_attempt:?}"
    );
    assert!(
        per_timer.values().all(|n| *n == 1),
        "{ctx}: a timer drove two attempts: {per_timer:?}"
    );
    let timers = store.timers(&inst.id).unwrap();
    let armed: Vec<_> = timers.iter().filter(|t| t.armed).collect();
    // Every attempt a retry timer drove resolved that very timer.
    for (t, _) in per_timer {
        assert!(
            timers.iter().any(|x| x.id == t && !x.armed),
            "{ctx}: timer {t} drove an attempt but is still armed"
        );
    }
    let snap = Snapshot::decode(&inst.snapshot).unwrap();
    if inst.status.is_terminal() {
        assert!(
            armed.is_empty(),
            "{ctx}: a terminal instance keeps armed timers"
        );
        return;
    }
    for tok in snap.frontier() {
        let n = armed.iter().filter(|t| t.node == tok.node).count();
        match tok.state {
            TokenState::Backoff | TokenState::Timer => {
                assert_eq!(
                    n, 1,
                    "{ctx}: parked token at {} has {n} armed timers",
                    tok.node
                )
            }
            _ => {}
        }
    }
}

#[test]
fn sigkill_at_random_points_loses_nothing_and_repeats_nothing() {
    let dir = tempfile::tempdir().unwrap();
    kill_and_restart(&Dbs::Files(dir.path()));
}

/// The same kills against PostgreSQL: a killed client's transaction is
/// rolled back by the server, its claim taken over by the next process.
#[test]
fn sigkill_at_random_points_loses_nothing_and_repeats_nothing_on_postgres() {
    if let Some(server) = qflow_engine::store::pg::test_server("the crash test") {
        kill_and_restart(&Dbs::Server(&server));
    }
}

fn kill_and_restart(dbs: &Dbs<'_>) {
    if support::slow_test_left_out("the random-instant crash test") {
        return;
    }
    let started = Instant::now();
    let mut rng = Rng(0x5eed_0008_dbd8_0001);
    let (mut kill_points, mut restarts) = (0usize, 0usize);
    for (n, (model, scenario)) in CASES.iter().enumerate() {
        // The reference: an uninterrupted run.
        let reference_db = dbs.fresh(&format!("reference_{n}"));
        let t = Instant::now();
        assert!(command(model, scenario, &reference_db)
            .status()
            .unwrap()
            .success());
        let span_us = (t.elapsed().as_micros() as u64).max(1_000);
        let reference = trace(&reference_db);

        let mut db = dbs.fresh(&format!("crashed_{n}"));
        let mut seen = None;
        let mut kills = 0;
        loop {
            let mut child = command(model, scenario, &db).spawn().unwrap();
            restarts += 1;
            if kills < KILLS_PER_CASE {
                kills += 1;
                std::thread::sleep(Duration::from_micros(rng.next() % span_us));
                let running = child.try_wait().unwrap().is_none();
                child.kill().ok();
                let status = child.wait().unwrap();
                if running {
                    kill_points += 1;
                }
                check_invariants(&db, &mut seen, &format!("{model} after kill {kills}"));
                let _ = status;
                if seen.is_some() && trace(&db).2 == reference.2 {
                    // The run finished (before or despite the kill): it must
                    // equal the uninterrupted run; start over on a fresh file.
                    let final_trace = trace(&db);
                    assert_eq!(final_trace, reference, "{model}: a run with kills diverged");
                    db = dbs.fresh(&format!("crashed_{n}"));
                    seen = None;
                }
            } else {
                assert!(child.wait().unwrap().success());
                check_invariants(&db, &mut seen, &format!("{model} final"));
                break;
            }
        }
        let got = trace(&db);
        assert_eq!(
            got.0, reference.0,
            "{model}: attempts differ from the uninterrupted run"
        );
        assert_eq!(
            got.1, reference.1,
            "{model}: snapshot bytes differ from the uninterrupted run"
        );
        assert_eq!(got.2, reference.2);
    }
    eprintln!(
        "crash test: {kill_points} SIGKILLs landed in a running qflow ({} cases × {KILLS_PER_CASE} kills, {restarts} processes) in {:?}",
        CASES.len(),
        started.elapsed()
    );
    assert!(
        kill_points >= CASES.len() * KILLS_PER_CASE / 2,
        "too few kills hit a running process: {kill_points}"
    );
}
