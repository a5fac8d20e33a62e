//! A fleet on one file database: N DBG-08 instances whose provider never
//! answers, each driven to exhaustion (six attempts, then FAILED), beside a
//! baseline of raw SQLite transactions of the same shape in the same run.
//!
//! - `replica N...`: one [`Replica`] (what `qflow run --replica` serves)
//!   over N seeded instances; decisions per second, to exhaustion or over
//!   the first `--window D` decisions. The cost of a decision should not
//!   depend on how many instances are parked.
//!   Before the window, every instance's first attempt is taken (by the
//!   fleet driver), so the window measures re-drives with N instances parked.
//! - `fleet N...`: the fleet driver ([`Fleet`], group commit: a batch of
//!   instances claimed in one transaction and applied in one more, each
//!   under its own claim and version check) to exhaustion: 6 N durable
//!   attempts. `--batch B` sets the batch (default 256). Prints where the
//!   time went (pick, claim, read, decide, apply) from the driver's timers.
//! - `raw T`: T raw write transactions of a decision's shape (update the
//!   instance, resolve its timer and arm the next, append a transition and a
//!   history line), one transaction each, WAL and `synchronous=FULL`: the
//!   store's own settings, on a database of the store's schema holding the
//!   last fleet's size of instances.
//!
//! - `views N`: N instances half way through the outage (every instance's
//!   first three attempts taken), then what an operator's look reads, each
//!   timed best of three: `Store::observations` and `attempts_per_minute`
//!   (`qflow stats`, the console's fleet view), `Store::instances` with
//!   `held_parks` and `quarantined` (the console's list), `deployments`,
//!   `quarantined`, and `inspect::fleet::instances` (`qflow instances`:
//!   every instance, and pages of 50 unfiltered, far in, by status and by
//!   class). `--keep FILE`
//!   writes the database there and leaves it (for `EXPLAIN QUERY PLAN`).
//!
//! Run: `cargo bench -p qflow-engine --bench fleet -- fleet 50000 raw 300000`.
//! Figures go to stdout; nothing is asserted about time.

use std::path::Path;
use std::time::Instant;

use qflow_engine::runtime::fleet::Fleet;
use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::replica::Replica;
use qflow_engine::runtime::{decide, Scenario};
use qflow_engine::store::Store;

const DBG08: &str = include_str!("../../samples/dbg08-long-outage.bpmn");
const ALWAYS_FAILS: &str = include_str!("../../samples/scenarios/dbg08-long-outage.json");

/// Deploy DBG-08 and start `n` instances through the store API.
fn seed(path: &Path, n: usize) -> Store {
    let mut store = Store::open(path).expect("store opens");
    let defs = qflow_engine::load(DBG08).expect("sample loads");
    let graph = Graph::compile(&defs).expect("sample compiles");
    let scenario = Scenario::parse(ALWAYS_FAILS).expect("scenario parses");
    let dep = store.deploy(&graph.process_id, DBG08, 0).expect("deploys");
    let start = decide::start(&graph, &scenario.variables, 0);
    for chunk in (0..n).step_by(10_000) {
        store
            .start_instances(&dep, &start, 0, (n - chunk).min(10_000))
            .expect("starts");
    }
    store
}

fn replica(n: usize, window: u64) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("fleet.db");
    let store = seed(&path, n);
    let scenario = Scenario::parse(ALWAYS_FAILS).expect("scenario parses");
    // Every instance's first attempt, so all N are parked on a retry timer.
    let mut fleet = Fleet::new(store, scenario.clone(), "bench:0".into());
    while fleet.stats().decisions < n as u64 {
        fleet.step(|_, _| {}).expect("steps");
    }
    drop(fleet);
    let store = Store::open(&path).expect("store opens");
    let mut r = Replica::new(store, scenario, "bench:1".into());
    r.stop_after(window);
    let t = Instant::now();
    let stats = r.serve(|_, _| {}).expect("serves");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "replica  N={n:>6} parked  {:>7} re-drives in {secs:>7.1} s  = {:>7.0} decisions/s",
        stats.decisions,
        stats.decisions as f64 / secs
    );
}

fn fleet(n: usize, batch: usize) -> f64 {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("fleet.db");
    let t = Instant::now();
    let store = seed(&path, n);
    let seeded = t.elapsed().as_secs_f64();
    let scenario = Scenario::parse(ALWAYS_FAILS).expect("scenario parses");
    let mut f = Fleet::new(store, scenario, "bench:1".into());
    f.batch(batch);
    let mut failed = 0u64;
    let io0 = io();
    let t = Instant::now();
    let stats = f
        .serve(|_, d| failed += u64::from(d.status.as_str() == "failed"))
        .expect("serves");
    let secs = t.elapsed().as_secs_f64();
    let io1 = io();
    assert_eq!(stats.decisions, 6 * n as u64, "six attempts per instance");
    assert_eq!(failed, n as u64, "every instance exhausted");
    let rate = stats.decisions as f64 / secs;
    println!(
        "fleet    N={n:>6} batch {batch}  seeded in {seeded:>5.1} s  {:>7} attempts in {secs:>7.1} s  = {rate:>7.0} attempts/s  ({} batches, {} lost)",
        stats.decisions, stats.batches, stats.lost
    );
    let total = (stats.pick_ns + stats.choose_ns + stats.group_ns) as f64;
    let share = |ns: u64| 100.0 * ns as f64 / total;
    let per = |ns: u64| ns as f64 / 1000.0 / stats.decisions as f64;
    println!(
        "         per attempt: pick {:.0} µs ({:.0}%), choose {:.0} µs ({:.0}%), claim+read+decide+apply+commit {:.0} µs ({:.0}%)",
        per(stats.pick_ns), share(stats.pick_ns),
        per(stats.choose_ns), share(stats.choose_ns),
        per(stats.group_ns), share(stats.group_ns),
    );
    print_io(io0, io1, stats.decisions);
    rate
}

/// This process's I/O counters from `/proc/self/io` (Linux): bytes passed
/// to read and write calls, and how many calls. Unlike the rates they do
/// not move with the machine's load: they count the pages SQLite reads
/// and writes (log frames, checkpoints) per attempt.
fn io() -> [u64; 5] {
    // The process's time on a CPU, in ns (first field of schedstat): what
    // the work cost, without the time spent waiting for the disk or for a
    // core on a busy machine.
    let cpu = std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0);
    let text = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    [
        field("rchar:"),
        field("wchar:"),
        field("syscr:"),
        field("syscw:"),
        cpu,
    ]
}

fn print_io(a: [u64; 5], b: [u64; 5], attempts: u64) {
    let per = |i: usize| (b[i] - a[i]) as f64 / attempts as f64;
    println!(
        "         per attempt: {:.0} µs on a CPU; read {:.1} KiB in {:.1} calls, written {:.1} KiB in {:.1} calls",
        per(4) / 1000.0,
        per(0) / 1024.0,
        per(2),
        per(1) / 1024.0,
        per(3)
    );
}

/// `t` transactions of a decision's shape, one commit each, over `n` seeded
/// instances, through rusqlite with the store's settings.
fn raw(t: usize, n: usize) -> f64 {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("raw.db");
    drop(seed(&path, n));
    let mut conn = rusqlite::Connection::open(&path).expect("opens");
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "FULL").unwrap();
    conn.pragma_update(None, "foreign_keys", "ON").unwrap();
    let ids: Vec<String> = {
        let mut st = conn
            .prepare("SELECT id FROM instances ORDER BY rowid")
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    // Each instance's armed timer (none yet: the first decision arms one).
    let mut timer: Vec<Option<i64>> = vec![None; ids.len()];
    let snapshot = vec![b'x'; 160];
    let detail = "{\"at_s\":60,\"attempt\":2,\"code\":\"PROVIDER_DOWN\",\"kind\":\"attempt\",\"node\":\"charge\",\"outcome\":\"failed\"}";
    let io0 = io();
    let start = Instant::now();
    for i in 0..t {
        let k = i % ids.len();
        let id = &ids[k];
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        tx.prepare_cached(
            "UPDATE instances SET status = 'waiting', snapshot = ?2, version = version + 1, updated_ms = ?3 WHERE id = ?1",
        )
        .unwrap()
        .execute(rusqlite::params![id, snapshot, i as i64])
        .unwrap();
        tx.prepare_cached(
            "INSERT INTO transitions(instance_id, version, at_ms, status, snapshot) VALUES (?1, ?2, ?3, 'waiting', ?4)",
        )
        .unwrap()
        .execute(rusqlite::params![id, i as i64, i as i64, snapshot])
        .unwrap();
        let seq = tx.last_insert_rowid();
        if let Some(old) = timer[k] {
            tx.prepare_cached(
                "UPDATE timers SET state = 'resolved', resolved_seq = ?2 WHERE id = ?1 AND state = 'armed'",
            )
            .unwrap()
            .execute(rusqlite::params![old, seq])
            .unwrap();
        }
        tx.prepare_cached(
            "INSERT INTO timers(instance_id, node, purpose, due_ms, attempt, state, armed_seq) VALUES (?1, 'charge', 'retry', ?2, 2, 'armed', ?3)",
        )
        .unwrap()
        .execute(rusqlite::params![id, i as i64 + 60_000, seq])
        .unwrap();
        timer[k] = Some(tx.last_insert_rowid());
        tx.prepare_cached(
            "INSERT INTO history(transition_seq, instance_id, at_ms, kind, node, attempt, code, task, timer_id, detail) VALUES (?1, ?2, ?3, 'attempt', 'charge', 2, 'PROVIDER_DOWN', 'payments.charge', ?4, ?5)",
        )
        .unwrap()
        .execute(rusqlite::params![seq, id, i as i64, timer[k], detail])
        .unwrap();
        tx.commit().unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let io1 = io();
    let rate = t as f64 / secs;
    println!(
        "raw      N={n:>6}  {t:>7} transactions in {secs:>7.1} s  = {rate:>7.0} transactions/s"
    );
    print_io(io0, io1, t as u64);
    rate
}

/// Best of three wall times of `f`, in ms, and its last result.
fn best_of_3<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::MAX;
    let mut last = None;
    for _ in 0..3 {
        let t = Instant::now();
        last = Some(f());
        best = best.min(t.elapsed().as_secs_f64() * 1000.0);
    }
    (best, last.expect("ran"))
}

fn views(n: usize, keep: Option<&Path>) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = keep.map_or_else(|| dir.path().join("fleet.db"), Path::to_path_buf);
    let store = seed(&path, n);
    let scenario = Scenario::parse(ALWAYS_FAILS).expect("scenario parses");
    let mut fleet = Fleet::new(store, scenario, "bench:0".into());
    while fleet.stats().decisions < 3 * n as u64 {
        fleet.step(|_, _| {}).expect("steps");
    }
    let store = fleet.into_store();
    let (ms, o) = best_of_3(|| store.observations().expect("observations"));
    println!(
        "views    N={n:>6}  observations (qflow stats)            {ms:>8.1} ms  ({} unfinished, {} attempts)",
        o.unfinished, o.attempts
    );
    let (ms, m) = best_of_3(|| store.attempts_per_minute().expect("per minute"));
    println!(
        "views    N={n:>6}  attempts per minute (the chart)        {ms:>8.1} ms  ({} minutes)",
        m.len()
    );
    let (ms, rows) = best_of_3(|| {
        let rows = store.instances().expect("instances");
        let held = store.held_parks().expect("held parks");
        let q = store.quarantined().expect("quarantined");
        rows.len() + held.len() + q.len()
    });
    println!(
        "views    N={n:>6}  instances + held parks + quarantined   {ms:>8.1} ms  ({rows} rows, the console's list)"
    );
    let (ms, d) = best_of_3(|| store.deployments().expect("deployments"));
    println!(
        "views    N={n:>6}  deployments with counts               {ms:>8.1} ms  ({} deployments)",
        d.len()
    );
    let (ms, q) = best_of_3(|| store.quarantined().expect("quarantined").len());
    println!("views    N={n:>6}  quarantined (the list's marks)          {ms:>8.1} ms  ({q} rows)");
    use qflow_engine::inspect::fleet::{self, Filter};
    let every = Filter::default();
    let (ms, rows) = best_of_3(|| {
        fleet::instances(&store, &every)
            .expect("instances")
            .instances
            .len()
    });
    println!(
        "views    N={n:>6}  qflow instances --limit 0 (every one)   {ms:>8.1} ms  ({rows} rows)"
    );
    for (what, filter) in [
        (
            "qflow instances (first page of 50)    ",
            Filter {
                limit: Some(50),
                ..Filter::default()
            },
        ),
        (
            "qflow instances --offset 40000        ",
            Filter {
                limit: Some(50),
                offset: 40_000,
                ..Filter::default()
            },
        ),
        (
            "qflow instances --status waiting      ",
            Filter {
                limit: Some(50),
                status: Some(qflow_engine::instance::Status::Waiting),
                ..Filter::default()
            },
        ),
        (
            "qflow instances --class transient     ",
            Filter {
                limit: Some(50),
                class: Some("transient".into()),
                ..Filter::default()
            },
        ),
    ] {
        let (ms, page) = best_of_3(|| fleet::instances(&store, &filter).expect("a page"));
        println!(
            "views    N={n:>6}  {what} {ms:>8.1} ms  ({} rows of {})",
            page.instances.len(),
            page.total
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut window, mut batch, mut last_n) = (
        3_000u64,
        qflow_engine::runtime::fleet::DEFAULT_BATCH,
        50_000,
    );
    let mut mode = String::new();
    let mut keep: Option<std::path::PathBuf> = None;
    let (mut fleet_rate, mut raw_rate) = (None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--bench" => {}
            "--window" => window = it.next().and_then(|w| w.parse().ok()).unwrap_or(window),
            "--batch" => batch = it.next().and_then(|w| w.parse().ok()).unwrap_or(batch),
            "--keep" => keep = it.next().map(Into::into),
            "replica" | "fleet" | "raw" | "views" => mode = a.clone(),
            n => {
                let Ok(n) = n.parse::<usize>() else {
                    eprintln!("fleet: unknown argument {n}");
                    std::process::exit(2);
                };
                match mode.as_str() {
                    "replica" => replica(n, window),
                    "fleet" => {
                        fleet_rate = Some(fleet(n, batch));
                        last_n = n;
                    }
                    "raw" => raw_rate = Some(raw(n, last_n)),
                    "views" => views(n, keep.as_deref()),
                    _ => {
                        eprintln!("fleet: give a mode (replica, fleet, raw, views) before a size");
                        std::process::exit(2);
                    }
                }
            }
        }
    }
    if let (Some(f), Some(r)) = (fleet_rate, raw_rate) {
        println!("fleet / raw = {:.0} %", 100.0 * f / r);
    }
}
