//! The language server's memory and its whole-model answers, in process
//! (the server and the protocol client of `tests/protocol/harness.rs`
//! share the process, so RSS is the server's plus a client holding the
//! model's text once).
//!
//! Each phase runs in a fresh process (the bench starts itself again with
//! `--phase NAME`), so one phase's allocator state never shows in another's
//! figures:
//!
//! - `edits`: open the 20,000-task model, then type 150 one-character edits
//!   back to back (each sent when the previous version's diagnostics have
//!   arrived); RSS after opening and after 5, 20, 60 and 150 edits, beside
//!   each edit's didChange → publishDiagnostics latency.
//! - `copies`: the same model opened under 1, 2, 3 and 4 URIs: RSS per
//!   open copy, against the text's size.
//! - `requests`: on the 100,000-task model, completion inside a `targetRef`
//!   (nothing typed, then a prefix) and documentSymbol: time, size of the
//!   answer on the wire, and the high-water mark each raises above the
//!   steady state.
//! - `findings`: a model with a finding or more per task: RSS per finding
//!   the engine reports, and how many diagnostics were published.
//!
//! Run: `cargo bench -p qflow-lsp --bench memory`. `QFLOW_BENCH_QUICK=1`
//! runs every phase on small models (CI's smoke, seconds); so does `cargo
//! test --all-targets`, which runs this binary without `--bench`. Linux
//! only for the RSS figures (`/proc/self/status`); elsewhere they read 0.
//! The figures are printed, never asserted.

use std::time::{Duration, Instant};

#[path = "../tests/protocol/harness.rs"]
#[allow(dead_code)]
mod harness;

use harness::Harness;
use serde_json::{json, Value};

/// Where each keystroke goes: into the process documentation testgen writes.
const ANCHOR: &str = "A generated chain";

/// The sizes one run uses.
struct Sizes {
    tasks: usize,
    edits: usize,
    checkpoints: &'static [usize],
    copies: usize,
    request_tasks: usize,
    rounds: usize,
    finding_tasks: usize,
}

fn sizes() -> Sizes {
    let bench = std::env::args().any(|a| a == "--bench");
    let quick = std::env::var_os("QFLOW_BENCH_QUICK").is_some_and(|v| v != "0");
    if bench && !quick {
        Sizes {
            tasks: 20_000,
            edits: 150,
            checkpoints: &[5, 20, 60, 150],
            copies: 4,
            request_tasks: 100_000,
            rounds: 5,
            finding_tasks: 100_000,
        }
    } else {
        Sizes {
            tasks: 300,
            edits: 6,
            checkpoints: &[2, 6],
            copies: 2,
            request_tasks: 1_000,
            rounds: 1,
            finding_tasks: 1_000,
        }
    }
}

/// A field of `/proc/self/status`, in MB (0 where there is none).
fn status_mb(field: &str) -> f64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return 0.0;
    };
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn rss() -> f64 {
    status_mb("VmRSS")
}

fn high_water() -> f64 {
    status_mb("VmHWM")
}

/// Start the high-water mark again from the current RSS (Linux 4.0+).
fn reset_high_water() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn runtime() -> tokio::runtime::Runtime {
    // As `qflow lsp` runs: two workers (lib.rs, run_stdio).
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The LSP position of byte `offset` (testgen writes ASCII).
fn position_of(text: &str, offset: usize) -> Value {
    let line = text[..offset].matches('\n').count();
    let character = offset - text[..offset].rfind('\n').map_or(0, |i| i + 1);
    json!({"line": line, "character": character})
}

/// Let the diagnostics worker finish freeing what the last edit retired.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

fn edits(s: &Sizes) {
    let rt = runtime();
    let base = qflow_model::testgen::generate(s.tasks);
    let at = base.find(ANCHOR).expect("testgen writes a documentation");
    let pos = position_of(&base, at);
    let uri = format!("file:///bench/edits-{}.bpmn", s.tasks);
    rt.block_on(async {
        let mut h = Harness::initialized().await;
        let before = rss();
        let start = Instant::now();
        h.open(&uri, 0, &base).await;
        h.diagnostics(&uri, 0).await;
        let open_ms = start.elapsed().as_secs_f64() * 1e3;
        settle().await;
        let opened = rss();
        println!(
            "edits: {} tasks ({:.1} MB of text); RSS before opening {before:.0} MB, after opening {opened:.0} MB ({open_ms:.0} ms to the first diagnostics)",
            s.tasks,
            mb(base.len()),
        );
        let mut times = Vec::new();
        let mut window = Vec::new();
        for version in 1..=s.edits as i64 {
            let start = Instant::now();
            h.edit(&uri, version, json!({"start": pos, "end": pos}), "x")
                .await;
            h.diagnostics(&uri, version).await;
            let t = start.elapsed().as_secs_f64() * 1e3;
            times.push(t);
            window.push(t);
            if s.checkpoints.contains(&(version as usize)) {
                settle().await;
                println!(
                    "edits: after {version:>3} edits RSS {:>6.0} MB (high-water {:>6.0} MB); didChange→publishDiagnostics median {:.1} ms over the last {} edits",
                    rss(),
                    high_water(),
                    median(&mut window),
                    window.len()
                );
                window.clear();
            }
        }
        settle().await;
        let after = rss();
        println!(
            "edits: summary, {} tasks: RSS {opened:.0} MB after 0 edits, {after:.0} MB after {} ({:+.0} MB), high-water {:.0} MB; latency median {:.1} ms, worst {:.1} ms",
            s.tasks,
            s.edits,
            after - opened,
            high_water(),
            median(&mut times.clone()),
            times.iter().copied().fold(0.0, f64::max)
        );
        h.stop().await;
    });
}

fn copies(s: &Sizes) {
    let rt = runtime();
    let base = qflow_model::testgen::generate(s.tasks);
    rt.block_on(async {
        let mut h = Harness::initialized().await;
        let before = rss();
        let mut last = before;
        for n in 1..=s.copies {
            let uri = format!("file:///bench/copy-{n}.bpmn");
            h.open(&uri, 0, &base).await;
            h.diagnostics(&uri, 0).await;
            settle().await;
            let now = rss();
            println!(
                "copies: {n} open, RSS {now:.0} MB: {:.0} MB for this copy ({:.1}x its {:.1} MB of text), {:.1}x per copy on average",
                now - last,
                (now - last) / mb(base.len()),
                mb(base.len()),
                (now - before) / n as f64 / mb(base.len()),
            );
            last = now;
        }
        h.stop().await;
    });
}

/// One request `rounds + 1` times (the first warms caches): the median
/// time, the answer's size on the wire, and the high-water mark above the
/// RSS before it.
async fn timed(
    h: &mut Harness,
    what: &str,
    method: &str,
    params: Value,
    rounds: usize,
    describe: impl Fn(&[u8]) -> String,
) {
    let mut times = Vec::new();
    let mut peak: f64 = 0.0;
    let mut answer = Vec::new();
    for round in 0..=rounds {
        drop(std::mem::take(&mut answer));
        settle().await;
        let steady = rss();
        reset_high_water();
        let start = Instant::now();
        // Unparsed: the client's own value tree of a 55 MB outline would
        // be most of the high-water mark.
        answer = h.request_raw(method, params.clone()).await;
        let t = start.elapsed().as_secs_f64() * 1e3;
        peak = peak.max(high_water() - steady);
        if round > 0 || rounds == 0 {
            times.push(t);
        }
    }
    println!(
        "requests: {what:<34} median {:>8.1} ms, {:>9} bytes on the wire, high-water +{peak:.0} MB over the steady RSS; {}",
        median(&mut times),
        answer.len(),
        describe(&answer)
    );
}

/// How many items a completion answer holds, and whether it is incomplete.
fn completion_items(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Answer {
        Array(Vec<serde::de::IgnoredAny>),
        List {
            items: Vec<serde::de::IgnoredAny>,
            #[serde(rename = "isIncomplete")]
            incomplete: bool,
        },
    }
    #[derive(serde::Deserialize)]
    struct Response {
        result: Answer,
    }
    let r: Response = serde_json::from_slice(body).expect("a completion answer");
    let (items, incomplete) = match r.result {
        Answer::Array(a) => (a.len(), false),
        Answer::List { items, incomplete } => (items.len(), incomplete),
    };
    format!("{items} items, isIncomplete {incomplete}")
}

/// How many symbols an outline holds at its top and in its first symbol.
fn outline_symbols(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Symbol {
        children: Option<Vec<serde::de::IgnoredAny>>,
    }
    #[derive(serde::Deserialize)]
    struct Response {
        result: Vec<Symbol>,
    }
    let r: Response = serde_json::from_slice(body).expect("an outline");
    let inner = r
        .result
        .first()
        .and_then(|s| s.children.as_ref())
        .map_or(0, Vec::len);
    format!("{} top-level symbols, {inner} in the first", r.result.len())
}

fn requests(s: &Sizes) {
    let rt = runtime();
    let text = qflow_model::testgen::generate(s.request_tasks);
    let uri = format!("file:///bench/requests-{}.bpmn", s.request_tasks);
    let mid = s.request_tasks / 2;
    let target = text
        .find(&format!("targetRef=\"Task_{mid}\""))
        .expect("testgen writes the flow")
        + "targetRef=\"".len();
    rt.block_on(async {
        let mut h = Harness::initialized().await;
        h.open(&uri, 0, &text).await;
        h.diagnostics(&uri, 0).await;
        settle().await;
        println!(
            "requests: {} tasks ({:.1} MB of text) open, steady RSS {:.0} MB",
            s.request_tasks,
            mb(text.len()),
            rss()
        );
        let doc = json!({ "uri": uri });
        for (what, skip) in [
            ("completion in a targetRef, \"\"", 0),
            ("completion in a targetRef, \"Ta\"", 2),
            ("completion in a targetRef, \"Task_12\"", 7),
        ] {
            timed(
                &mut h,
                what,
                "textDocument/completion",
                json!({ "textDocument": doc, "position": position_of(&text, target + skip) }),
                s.rounds,
                completion_items,
            )
            .await;
        }
        timed(
            &mut h,
            "documentSymbol",
            "textDocument/documentSymbol",
            json!({ "textDocument": doc }),
            s.rounds,
            outline_symbols,
        )
        .await;
        h.stop().await;
    });
}

/// A plain BPMN model of `tasks` unnamed, unconnected tasks: every task
/// breaks bpmnlint's recommended rules (a finding or more each).
fn findings_model(tasks: usize) -> String {
    let mut s = String::from(concat!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
        "<bpmn:definitions xmlns:bpmn=\"http://www.omg.org/spec/BPMN/20100524/MODEL\" id=\"d\">\n",
        "  <bpmn:process id=\"p\">\n",
    ));
    for i in 0..tasks {
        s.push_str(&format!("    <bpmn:task id=\"t{i}\"/>\n"));
    }
    s.push_str("  </bpmn:process>\n</bpmn:definitions>\n");
    s
}

fn findings(s: &Sizes) {
    let rt = runtime();
    let text = findings_model(s.finding_tasks);
    let (_, analysis) = qflow_model::analyze_bytes(text.as_bytes());
    let found = analysis.diagnostics.len();
    drop(analysis);
    let uri = format!("file:///bench/findings-{}.bpmn", s.finding_tasks);
    rt.block_on(async {
        let mut h = Harness::initialized().await;
        settle().await;
        let before = rss();
        reset_high_water();
        let start = Instant::now();
        h.open(&uri, 0, &text).await;
        let published = h.diagnostics(&uri, 0).await;
        let t = start.elapsed().as_secs_f64() * 1e3;
        let wire = h.last_frame_bytes;
        settle().await;
        let after = rss();
        let peak = high_water();
        println!(
            "findings: {} tasks ({:.1} MB of text), {found} findings, {} diagnostics published ({wire} bytes) in {t:.0} ms; RSS {before:.0} → {after:.0} MB, high-water {peak:.0} MB: {:.0} bytes of RSS after and {:.0} at the high-water mark per finding",
            s.finding_tasks,
            mb(text.len()),
            published.len(),
            (after - before) * 1024.0 * 1024.0 / found.max(1) as f64,
            (peak - before) * 1024.0 * 1024.0 / found.max(1) as f64,
        );
        h.stop().await;
    });
}

const PHASES: [&str; 4] = ["edits", "copies", "requests", "findings"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let s = sizes();
    if let Some(i) = args.iter().position(|a| a == "--phase") {
        match args.get(i + 1).map(String::as_str) {
            Some("edits") => edits(&s),
            Some("copies") => copies(&s),
            Some("requests") => requests(&s),
            Some("findings") => findings(&s),
            other => panic!("unknown phase {other:?}"),
        }
        return;
    }
    // `--phase X` alone or a filter naming phases, as `cargo bench -- NAME` passes.
    let wanted: Vec<&str> = PHASES
        .iter()
        .copied()
        .filter(|p| {
            let named: Vec<&String> = args[1..].iter().filter(|a| !a.starts_with("--")).collect();
            named.is_empty() || named.iter().any(|n| p.contains(n.as_str()))
        })
        .collect();
    let exe = std::env::current_exe().expect("the bench's own path");
    for phase in wanted {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["--phase", phase]);
        if args.iter().any(|a| a == "--bench") {
            cmd.arg("--bench");
        }
        let status = cmd.status().expect("the bench starts itself");
        assert!(status.success(), "phase {phase} failed");
    }
}
