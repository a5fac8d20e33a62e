//! `Engine::serve` (what `qflow serve` runs) with lanes, against its
//! one-lane baseline in the same run:
//!
//! 1. **Outage fleet.** N instances of DBG-08's transient-outage shape
//!    (`samples/dbg08-transient-outage.bpmn`) whose handler POSTs to a
//!    loopback HTTP provider that answers `503` after 1 s: the wall time
//!    until every first attempt is decided (each parked on the DBG-08
//!    curve, its retry a minute away), with `--concurrency 100` for N
//!    instances and with one lane for `N / 50` (at least 5) instances,
//!    extrapolated per instance.
//! 2. **Lateness beside a hang.** 20 instances of a healthy dependency
//!    that fails at once and retries every 200 ms, and from half a second
//!    in 20 of a task whose handler hangs until the window ends: p50/p99/max
//!    lateness of the healthy retries (handed to a lane after due, wall
//!    clock) over the window and one second more, with 100 lanes and with
//!    one lane (where the first hung attempt holds the only lane, as a
//!    loop that runs handlers inline is held).
//!
//! 3. **Throughput** (`throughput`). N instances of a one-task model whose
//!    in-process handler answers at once: decisions per second of
//!    `Engine::serve` until all complete, beside the batched fleet driver
//!    (what `simulate` runs) deciding the same N instances on a store of
//!    its own, in the same run; on SQLite, and on PostgreSQL too when
//!    `QFLOW_BENCH_PG` names a server (a new database per store).
//! 4. **Replicas** (`replicas`, PostgreSQL only). N instances served by one
//!    and then by four `Engine::serve` processes (this binary run again,
//!    each its own connection and claim owner) on one database:
//!    decisions per second and duplicates (attempts beyond one per
//!    instance, decisions beyond two; must be 0).
//! 5. **Memory** (`memory`). 1,000 and then 10,000 instances parked on an
//!    hour's retry, then 100 whose handler takes 300 ms, all in flight at
//!    once: the resident set while they run (VmRSS) and its high-water
//!    mark (VmHWM), from /proc/self/status.
//!
//! Run: `cargo bench --bench serve_lanes -- 1000` (N, default 1,000; the
//! throughput and replicas cases take 5 N instances), or name cases after
//! N: `cargo bench --bench serve_lanes -- 5000 throughput`. PostgreSQL:
//! `QFLOW_BENCH_PG=postgres://… cargo bench --bench serve_lanes -- 1000
//! throughput replicas` (with a throwaway server:
//! `scripts/pg-throwaway.sh run sh -c 'QFLOW_BENCH_PG=$QFLOW_TEST_POSTGRES_URL
//! cargo bench --bench serve_lanes -- 1000 replicas'`). Under `cargo test
//! --all-targets`, as CI runs it, a smoke of every case with N = 10 and a
//! 1 s window (replicas only with `QFLOW_BENCH_PG`). SQLite in a temporary
//! directory. Figures go to stdout; nothing is asserted.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use qflow_engine::embed::{Engine, TaskError, Time};
use serde_json::json;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A provider on loopback that answers every POST with 503 after `delay`.
fn provider(delay: Duration) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("a loopback port");
    let url = format!("http://{}/charge", server.server_addr().to_ip().unwrap());
    std::thread::spawn(move || {
        for mut req in server.incoming_requests() {
            std::thread::spawn(move || {
                let mut body = String::new();
                let _ = req.as_reader().read_to_string(&mut body);
                std::thread::sleep(delay);
                let _ = req.respond(tiny_http::Response::empty(503));
            });
        }
    });
    url
}

fn outage(url: &str, instances: usize, lanes: usize) -> (Duration, u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = Engine::open(dir.path().join("bench.db")).unwrap();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(30)))
        .http_status_as_error(false)
        .build()
        .into();
    let url = url.to_string();
    engine.register("payments.charge", move |task| {
        let resp = agent
            .post(&url)
            .header("Idempotency-Key", task.idempotency_key())
            .send(b"{}".as_slice());
        match resp {
            Ok(r) if r.status().is_success() => Ok(json!({})),
            Ok(r) => Err(TaskError::transient(format!(
                "q.handler.http-{}",
                r.status().as_u16()
            ))),
            Err(e) => Err(TaskError::transient(format!("q.handler.unreachable: {e}"))),
        }
    });
    engine.set_concurrency(lanes).set_time(Time::System);
    let source =
        std::fs::read_to_string(repo().join("samples/dbg08-transient-outage.bpmn")).unwrap();
    let dep = engine.deploy(&source).unwrap();
    let started = Instant::now();
    let ids: Vec<String> = (0..instances)
        .map(|_| engine.start(&dep, json!({"amount": 42})).unwrap())
        .collect();
    let mut decided = 0u64;
    let mut attempts = 0usize;
    engine
        .serve_steps(Duration::from_millis(250), |_, steps| {
            for s in steps {
                decided += 1;
                attempts += s
                    .decision
                    .events
                    .iter()
                    .filter(|l| l.event.kind() == "attempt")
                    .count();
            }
            attempts < ids.len() && started.elapsed() < Duration::from_secs(1800)
        })
        .unwrap();
    (started.elapsed(), decided)
}

fn lateness(lanes: usize, window: Duration) -> (Option<i64>, Option<i64>, Option<i64>, u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = Engine::open(dir.path().join("bench.db")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    engine.register("stuck.op", move |_| {
        // Hangs as a handler at its 30 s timeout would, until the window
        // is over (then lets go, so the bench ends).
        while !s.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(TaskError::transient("HUNG"))
    });
    engine.register("healthy.op", |_| Err(TaskError::transient("DOWN")));
    engine.set_concurrency(lanes).set_time(Time::System);
    let model = |process: &str, task: &str, retry: &str| {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:bench">
  <process id="{process}" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
    <serviceTask id="work" q:task="{task}"><extensionElements>{retry}</extensionElements></serviceTask>
    <sequenceFlow id="f2" sourceRef="work" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>"#
        )
    };
    let stuck = engine.deploy(&model("stuck", "stuck.op", "")).unwrap();
    let healthy = engine
        .deploy(&model(
            "healthy",
            "healthy.op",
            r#"<q:retry maxAttempts="1000" backoff="PT0.2S" jitter="none"/>"#,
        ))
        .unwrap();
    // The healthy instances first (parked on their 200 ms retries), then,
    // half a second in, the ones whose handler hangs: with one lane the
    // first hung attempt takes it.
    for _ in 0..20 {
        engine.start(&healthy, json!({})).unwrap();
    }
    let started = Instant::now();
    let mut hung = false;
    engine
        .serve(Duration::from_millis(250), |e| {
            if !hung && started.elapsed() >= Duration::from_millis(500) {
                hung = true;
                for _ in 0..20 {
                    e.start(&stuck, json!({})).unwrap();
                }
            }
            // The hang ends with the window; one more second lets a lane
            // freed by it take what waited (the one-lane baseline's
            // lateness is measured then).
            if started.elapsed() >= window {
                stop.store(true, Ordering::SeqCst);
            }
            started.elapsed() < window + Duration::from_secs(1)
        })
        .unwrap();
    let l = engine.lateness();
    (
        l.percentile(50.0),
        l.percentile(99.0),
        l.samples.iter().max().copied(),
        l.decisions,
        l.late,
    )
}

const ONE_TASK: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:bench">
  <process id="quick" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
    <serviceTask id="work" q:task="quick.op"/>
    <sequenceFlow id="f2" sourceRef="work" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>"#;

/// Where a case keeps its store: a SQLite file in a temporary directory,
/// or a new database on the PostgreSQL server of `QFLOW_BENCH_PG`.
#[derive(Clone)]
enum Db {
    Sqlite(std::path::PathBuf),
    Pg(String),
}

impl Db {
    /// A new, empty store named `name` of the kind `pg` asks for (the
    /// directory holds a SQLite one).
    fn fresh(dir: &Path, pg: Option<&str>, name: &str) -> Db {
        match pg {
            None => Db::Sqlite(dir.join(format!("{name}.db"))),
            Some(url) => {
                let unique = format!(
                    "bench_{name}_{}_{}",
                    std::process::id(),
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap()
                        .as_micros()
                );
                Db::Pg(qflow_engine::store::pg::scratch_database(url, &unique).unwrap())
            }
        }
    }

    fn location(&self) -> qflow_engine::store::Location {
        match self {
            Db::Sqlite(p) => qflow_engine::store::Location::Sqlite(p.clone()),
            Db::Pg(url) => qflow_engine::store::Location::Postgres(url.clone()),
        }
    }

    fn engine(&self) -> Engine {
        Engine::connect(&self.location()).unwrap()
    }
}

/// `n` started instances of [`ONE_TASK`] in the store `db`.
fn seeded(db: &Db, n: usize) -> Engine {
    let mut engine = db.engine();
    engine.register("quick.op", |_| Ok(json!({})));
    let dep = engine.deploy(ONE_TASK).unwrap();
    for _ in 0..n {
        engine.start(&dep, json!({})).unwrap();
    }
    engine
}

/// Decisions per second of `Engine::serve` until every instance of `n`
/// completed, and of the fleet driver on the same shape (each on a store
/// of its own, of the kind `pg` asks for).
fn throughput(n: usize, pg: Option<&str>) -> ((u64, f64), (u64, f64)) {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = seeded(&Db::fresh(dir.path(), pg, "serve"), n);
    engine.set_concurrency(32).set_time(Time::System);
    let (mut decided, mut completed) = (0u64, 0usize);
    let t = Instant::now();
    engine
        .serve_steps(Duration::from_millis(250), |_, steps| {
            for s in steps {
                decided += 1;
                completed += usize::from(s.decision.status.as_str() == "completed");
            }
            completed < n && t.elapsed() < Duration::from_secs(1800)
        })
        .unwrap();
    let serve = (decided, t.elapsed().as_secs_f64());
    drop(engine);

    let db = Db::fresh(dir.path(), pg, "fleet");
    drop(seeded(&db, n));
    let store = qflow_engine::store::Store::connect(&db.location()).unwrap();
    let mut fleet = qflow_engine::runtime::fleet::Fleet::new(
        store,
        qflow_engine::runtime::Scenario::default(),
        "bench:fleet".into(),
    );
    let t = Instant::now();
    let stats = fleet.serve(|_, _| {}).unwrap();
    (
        (serve.0, serve.1),
        (stats.decisions, t.elapsed().as_secs_f64()),
    )
}

/// `replicas` processes (this bench run again as `replica URL`), each an
/// `Engine::serve` with its own connection and claim owner, on one
/// PostgreSQL database seeded with `n` instances of [`ONE_TASK`], until
/// all completed: decisions per second, and duplicates (attempts beyond
/// one per instance, decisions beyond the two each needs). Processes, not
/// threads: an attempt's in-flight record names its process, and two
/// serving engines of one process would each read the other's records as
/// a dead process's.
fn replicas(db: &Db, n: usize, replicas: usize) -> (u64, f64, u64, Cpu) {
    drop(seeded(db, n));
    let Db::Pg(url) = db else {
        unreachable!("replicas run on PostgreSQL")
    };
    let exe = std::env::current_exe().unwrap();
    let machine = machine_jiffies();
    let t = Instant::now();
    let children: Vec<_> = (0..replicas)
        .map(|_| {
            std::process::Command::new(&exe)
                .args(["replica", url])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut decided = 0u64;
    let mut replicas_cpu_s = 0.0;
    for c in children {
        let out = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut words = text.split_whitespace();
        decided += words
            .next()
            .and_then(|w| w.parse::<u64>().ok())
            .unwrap_or(0);
        replicas_cpu_s += words
            .next()
            .and_then(|w| w.parse::<f64>().ok())
            .unwrap_or(0.0);
    }
    let wall = t.elapsed().as_secs_f64();
    let cpu = Cpu {
        replicas_s: replicas_cpu_s,
        machine_busy_s: match (machine, machine_jiffies()) {
            (Some((b0, _)), Some((b1, _))) => Some((b1 - b0) as f64 / CLOCK_TICKS),
            _ => None,
        },
    };
    let store = qflow_engine::store::Store::connect(&db.location()).unwrap();
    let mut attempts = 0u64;
    for row in store.instances().unwrap() {
        attempts += store
            .history(&row.id)
            .unwrap()
            .iter()
            .filter(|h| h.kind == "attempt")
            .count() as u64;
    }
    let extra = attempts.saturating_sub(n as u64) + decided.saturating_sub(2 * n as u64);
    (decided, wall, extra, cpu)
}

/// Where the CPU of a replicas run went: the replicas' own (user and
/// system, each process's from /proc/self/stat as it ends) and the whole
/// machine's busy time over the run (/proc/stat), so that the server's
/// share (the rest, on a machine doing nothing else) and whether the cores
/// were spent can be read beside the decisions a second.
struct Cpu {
    replicas_s: f64,
    machine_busy_s: Option<f64>,
}

/// The kernel's clock ticks a second for /proc's CPU times (USER_HZ: 100
/// on every Linux this runs on).
const CLOCK_TICKS: f64 = 100.0;

/// The machine's busy and idle ticks since boot, from /proc/stat's `cpu`
/// line (idle counts iowait too); `None` off Linux.
fn machine_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|w| w.parse().ok())
        .collect();
    let idle = v.get(3)? + v.get(4).unwrap_or(&0);
    let total: u64 = v.iter().take(8).sum();
    Some((total - idle, idle))
}

/// This process's CPU time so far (user + system, seconds), from
/// /proc/self/stat; 0 off Linux.
fn own_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces), from ')'.
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|w| w.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of stat; 12 and 13 after ')'.
    (tick(11) + tick(12)) / CLOCK_TICKS
}

/// One replica of [`replicas`]: serve `url` until nothing is unfinished;
/// prints how many decisions it took.
fn replica(url: &str) {
    let mut engine = Engine::connect(&qflow_engine::store::Location::Postgres(url.into())).unwrap();
    engine.register("quick.op", |_| Ok(json!({})));
    engine.set_concurrency(32).set_time(Time::System);
    let mut decided = 0u64;
    let mut checked = Instant::now();
    engine
        .serve_steps(Duration::from_millis(250), |e, steps| {
            decided += steps.len() as u64;
            if checked.elapsed() < Duration::from_millis(100) {
                return true;
            }
            checked = Instant::now();
            let left: u64 = e
                .store()
                .deployments()
                .unwrap()
                .iter()
                .map(|d| (d.counts.running + d.counts.waiting) as u64)
                .sum();
            left > 0
        })
        .unwrap();
    println!("{decided} {:.2}", own_cpu_s());
}

/// This process's resident set now and at its highest (kB), from
/// /proc/self/status (Linux).
fn rss_kb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A task that fails at once and retries in an hour: an instance of it
/// parks after its first attempt.
const PARKS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:bench">
  <process id="parks" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
    <serviceTask id="work" q:task="down.op"><extensionElements><q:retry maxAttempts="5" backoff="PT1H" jitter="none"/></extensionElements></serviceTask>
    <sequenceFlow id="f2" sourceRef="work" targetRef="done"/>
    <endEvent id="done"/>
  </process>
</definitions>"#;

/// `parked` instances parked on an hour's retry, then 100 instances whose
/// handler takes 300 ms, all in flight at once (`--concurrency 100`):
/// the resident set while they run (highest sample, kB), and VmHWM after.
fn memory(parked: usize) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = Engine::open(dir.path().join("memory.db")).unwrap();
    engine.register("down.op", |_| Err(TaskError::transient("DOWN")));
    engine.register("slow.op", |_| {
        std::thread::sleep(Duration::from_millis(300));
        Ok(json!({}))
    });
    engine.set_concurrency(100).set_time(Time::System);
    let parks = engine.deploy(PARKS).unwrap();
    let slow = engine
        .deploy(
            &ONE_TASK
                .replace("quick.op", "slow.op")
                .replace("\"quick\"", "\"slow\""),
        )
        .unwrap();
    for _ in 0..parked {
        engine.start(&parks, json!({})).unwrap();
    }
    let mut attempts = 0usize;
    engine
        .serve_steps(Duration::from_millis(250), |_, steps| {
            attempts += steps
                .iter()
                .filter(|s| {
                    s.decision
                        .events
                        .iter()
                        .any(|l| l.event.kind() == "attempt")
                })
                .count();
            attempts < parked
        })
        .unwrap();
    for _ in 0..100 {
        engine.start(&slow, json!({})).unwrap();
    }
    let (mut completed, mut peak) = (0usize, 0u64);
    engine
        .serve_steps(Duration::from_millis(250), |_, steps| {
            completed += steps
                .iter()
                .filter(|s| s.decision.status.as_str() == "completed")
                .count();
            peak = peak.max(rss_kb().0);
            completed < 100
        })
        .unwrap();
    (peak, rss_kb().1)
}

fn main() {
    // A child process of the replicas case.
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("replica") {
        replica(&args[2]);
        return;
    }
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this
    // without it: a smoke run of every case at a small size.
    let bench = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(if bench { 1000 } else { 10 });
    // Case names after `--` pick cases (`outage`, `lateness`,
    // `throughput`, ...); none: every case.
    let picked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-') && a.parse::<usize>().is_err())
        .collect();
    let run = |case: &str| picked.is_empty() || picked.iter().any(|p| p == case);
    if run("outage") {
        outage_case(bench, n);
    }
    if run("lateness") {
        lateness_case(bench);
    }
    if run("throughput") {
        throughput_case(bench, n);
    }
    if run("replicas") {
        replicas_case(bench, n);
    }
    if run("memory") {
        memory_case(bench);
    }
}

fn outage_case(bench: bool, n: usize) {
    let url = provider(Duration::from_secs(1));
    println!("serve_lanes: SQLite, handler answers 503 after 1 s over loopback HTTP");
    let (wall, decided) = outage(&url, n, 100);
    println!(
        "outage fleet, --concurrency 100: {n} first attempts in {:.1} s ({decided} decisions, {:.0} decisions/s)",
        wall.as_secs_f64(),
        decided as f64 / wall.as_secs_f64()
    );
    let small = if bench { (n / 50).max(5) } else { 3 };
    let (wall1, _) = outage(&url, small, 1);
    let per = wall1.as_secs_f64() / small as f64;
    println!(
        "outage fleet, one lane (baseline): {small} first attempts in {:.1} s ({per:.2} s each: {n} would take {:.0} s)",
        wall1.as_secs_f64(),
        per * n as f64
    );
}

fn lateness_case(bench: bool) {
    let window = Duration::from_secs(if bench { 5 } else { 1 });
    for lanes in [100, 1] {
        let (p50, p99, max, decisions, late) = lateness(lanes, window);
        println!(
            "lateness of a healthy dependency's due retries beside a hung one, {lanes} lane(s), {}s window: \
             p50 {} ms, p99 {} ms, max {} ms over {decisions} timed decisions ({late} late > 100 ms)",
            window.as_secs(),
            p50.map_or("-".into(), |v| v.to_string()),
            p99.map_or("-".into(), |v| v.to_string()),
            max.map_or("-".into(), |v| v.to_string()),
        );
    }
}

fn throughput_case(bench: bool, n: usize) {
    let n3 = if bench { 5 * n } else { 20 };
    let pg = std::env::var("QFLOW_BENCH_PG").ok();
    let stores: Vec<(&str, Option<&str>)> = std::iter::once(("SQLite", None))
        .chain(pg.as_deref().map(|u| ("PostgreSQL", Some(u))))
        .collect();
    for (name, url) in stores {
        let ((sd, ss), (fd, fs)) = throughput(n3, url);
        println!(
            "throughput on {name}, {n3} one-task instances, handler answers at once: serve {sd} decisions in {ss:.2} s = {:.0}/s; \
             fleet driver {fd} in {fs:.2} s = {:.0}/s; serve at {:.0} % of the fleet driver",
            sd as f64 / ss,
            fd as f64 / fs,
            100.0 * (sd as f64 / ss) / (fd as f64 / fs)
        );
    }
}

fn replicas_case(bench: bool, n: usize) {
    let Ok(url) = std::env::var("QFLOW_BENCH_PG") else {
        println!("replicas: skipped (set QFLOW_BENCH_PG to a postgres:// URL)");
        return;
    };
    let n4 = if bench { 5 * n } else { 20 };
    let dir = tempfile::tempdir().unwrap();
    let (d1, w1, dup1, c1) = replicas(&Db::fresh(dir.path(), Some(&url), "one"), n4, 1);
    let (d4, w4, dup4, c4) = replicas(&Db::fresh(dir.path(), Some(&url), "four"), n4, 4);
    println!(
        "replicas on PostgreSQL, {n4} one-task instances: one serve {d1} decisions in {w1:.2} s = {:.0}/s ({dup1} duplicates); \
         four {d4} in {w4:.2} s = {:.0}/s ({dup4} duplicates); four at {:.2}x one",
        d1 as f64 / w1,
        d4 as f64 / w4,
        (d4 as f64 / w4) / (d1 as f64 / w1)
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (what, d, w, c) in [("one", d1, w1, &c1), ("four", d4, w4, &c4)] {
        let machine = c.machine_busy_s.map_or_else(
            || "machine busy: unknown".to_string(),
            |b| {
                format!(
                    "machine busy {:.2} of {cores} cores ({:.2} ms a decision; the rest of it, the server and anything else, {:.2} ms)",
                    b / w,
                    b * 1000.0 / d.max(1) as f64,
                    (b - c.replicas_s).max(0.0) * 1000.0 / d.max(1) as f64
                )
            },
        );
        println!(
            "  {what}: replicas' CPU {:.2} s = {:.2} cores, {:.2} ms a decision; {machine}",
            c.replicas_s,
            c.replicas_s / w,
            c.replicas_s * 1000.0 / d.max(1) as f64
        );
    }
}

fn memory_case(bench: bool) {
    let sizes = if bench { [1_000, 10_000] } else { [10, 100] };
    for parked in sizes {
        let (peak, hwm) = memory(parked);
        println!(
            "memory, {parked} parked and 100 in flight: VmRSS {:.1} MB at most while they ran (VmHWM {:.1} MB)",
            peak as f64 / 1024.0,
            hwm as f64 / 1024.0
        );
    }
}
