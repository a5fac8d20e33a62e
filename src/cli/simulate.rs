//! `qflow simulate MODEL --jobs N --outage DURATION [--db DB]`: N real
//! instances through the engine and the store on the virtual clock, with
//! every dependency (a registered task's, a channel call's) down for the
//! outage and up after it.
//!
//! The engine runs the simulation ([`simulate`]); this module parses the
//! arguments, shows a progress bar on a terminal and renders the report
//! (totals, and attempts per minute as a chart).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use qflow_engine::runtime::fleet::DEFAULT_BATCH;
use qflow_engine::runtime::session::SessionDb;
use qflow_engine::runtime::simulate::{simulate, Plan, Report, OUTAGE_CODE};
use qflow_engine::store::Location;
use serde_json::json;

use crate::cli::ops::{fail, Format};
use crate::cli::run::json_line;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The BPMN model whose instances to simulate.
    pub model: PathBuf,
    /// How many instances to start together at virtual time 0.
    #[arg(long, value_name = "N")]
    pub jobs: usize,
    /// How long every dependency (a registered task's, a channel call's) is
    /// down, from the start (2h, 90m, or ISO 8601: PT2H, P1D, PT90M).
    #[arg(long, value_name = "DURATION")]
    pub outage: String,
    /// Keep the instances in this database (a SQLite file, created if
    /// missing, or a postgres:// URL); else a temporary one, removed at the end.
    #[arg(long, value_name = "DB")]
    pub db: Option<Location>,
    /// Instances decided and committed together (one transaction each way).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BATCH)]
    pub batch: usize,
    /// Also write a self-contained HTML report here: attempts per minute
    /// over the outage, the backlog's age, each policy's schedule, the
    /// process diagram.
    /// `-` writes it to standard output (the summary then goes to stderr).
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

pub fn run(args: Args) -> ExitCode {
    let format = args.format;
    if format == Format::Json
        && args
            .report
            .as_deref()
            .is_some_and(crate::cli::report::is_stdout)
    {
        return crate::cli::ops::fail(
            crate::cli::ops::Format::Json,
            2,
            "usage",
            "--report - and --format json would both write to standard output: give the report a file name",
        );
    }
    let outage = match crate::cli::ops::outage_and_jobs(&args.outage, args.jobs as u64, format) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let (_, text, defs) = match crate::cli::ops::read_definitions(&args.model, format) {
        Ok(read) => read,
        Err(code) => return code,
    };
    let chosen = match crate::cli::ops::db_or_default(args.db.as_ref()) {
        Ok(db) => db,
        Err(m) => {
            eprintln!("qflow simulate: {m}");
            return ExitCode::from(2);
        }
    };
    let db = SessionDb::new(chosen.as_ref(), "simulate");
    let store = match db.open() {
        Ok(s) => s,
        Err(e) => return fail(format, 2, "store", e),
    };
    let plan = Plan {
        jobs: args.jobs,
        outage,
        batch: args.batch.max(1),
    };
    let bar = (format == Format::Human && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(args.jobs as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} finished  {msg}",
            )
            .expect("a valid template"),
        );
        bar
    });
    let wall = Instant::now();
    let result = simulate(store, &text, &defs, &plan, |p| {
        if let Some(bar) = &bar {
            bar.set_position(p.finished());
            bar.set_message(if p.started < p.jobs {
                format!("starting {}/{}", p.started, p.jobs)
            } else {
                format!(
                    "{} attempts · virtual +{}",
                    p.attempts,
                    qflow_engine::duration::compact_ms(p.virtual_ms)
                )
            });
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let (report, store) = match result {
        Ok(r) => r,
        Err(e) => return fail(format, 2, "store", e),
    };
    let elapsed = wall.elapsed();
    let rss = peak_rss_kb();
    if let Some(path) = &args.report {
        let html = match html_report(&report, &store, &args, &text, &defs, outage, elapsed, rss) {
            Ok(h) => h,
            Err(e) => return fail(format, 2, "store", e),
        };
        if let Err(e) = crate::cli::report::write(path, &html) {
            return fail(
                format,
                2,
                "unwritable",
                format!("cannot write the report {}: {e}", path.display()),
            );
        }
    }
    drop(store);
    // `--report -` gave stdout to the HTML: the summary goes to stderr.
    let to_stdout = args
        .report
        .as_deref()
        .is_some_and(crate::cli::report::is_stdout);
    match format {
        Format::Json => println!("{}", json_report(&report, &args, outage, elapsed, rss)),
        Format::Human if to_stdout => {
            eprint!("{}", human_report(&report, &args, outage, elapsed, rss))
        }
        Format::Human => print!("{}", human_report(&report, &args, outage, elapsed, rss)),
    }
    if let Some(db) = &chosen {
        if format == Format::Human {
            println!("instances kept in {db}");
        }
    }
    ExitCode::SUCCESS
}

/// The HTML report: the run's totals, attempts per minute with the outage
/// shaded, the backlog left at the end, each policy's schedule and the
/// process diagram.
#[allow(clippy::too_many_arguments)]
fn html_report(
    r: &Report,
    store: &qflow_engine::store::Store,
    args: &Args,
    text: &str,
    defs: &qflow_engine::model::Definitions,
    outage: Duration,
    elapsed: Duration,
    rss_kb: Option<u64>,
) -> Result<String, qflow_engine::store::StoreError> {
    use qflow_engine::policy::projection;
    use qflow_engine::text::group;
    let obs = store.observations()?;
    let t = &r.totals;
    let mut summary = vec![
        ("model".to_string(), args.model.display().to_string()),
        ("jobs".into(), group(args.jobs as u64)),
        (
            "outage".into(),
            format!(
                "{} (every attempt of a task fails with {OUTAGE_CODE}, transient; every delivery of a call's request fails)",
                qflow_engine::duration::to_words(outage)
            ),
        ),
        ("attempts executed".into(), group(t.attempts)),
        ("completed".into(), group(t.completed)),
        ("exhausted".into(), group(t.exhausted)),
    ];
    if t.failed > 0 {
        summary.push(("failed (other)".into(), group(t.failed)));
    }
    summary.push((
        "virtual time".into(),
        qflow_engine::duration::compact_ms(t.virtual_ms),
    ));
    if let Some((m, n)) = r.peak() {
        summary.push((
            "busiest minute".into(),
            format!(
                "{} attempts at +{}",
                group(n),
                qflow_engine::duration::compact_ms(m * 60_000)
            ),
        ));
    }
    summary.push((
        "wall time".into(),
        format!(
            "{:.1} s, {} group commits, peak RSS {}",
            elapsed.as_secs_f64(),
            group(r.batches),
            rss_kb.map_or("unknown".to_string(), |k| format!(
                "{:.1} MB",
                k as f64 / 1024.0
            ))
        ),
    ));
    // The deployment the simulation made of each process: the newest of
    // its id (a database given with --db may hold older ones).
    let deployments = store.deployments()?;
    let deployment_of = |process: &str| deployments.iter().rev().find(|d| d.process_id == process);
    let owner = |process: &str| match deployment_of(process) {
        Some(d) => format!("deployment {} ({process}, {})", d.id, args.model.display()),
        None => format!("{process} ({})", args.model.display()),
    };
    let policies: Vec<(String, projection::NodeProjection)> =
        projection::of_model(defs, args.jobs as u64, outage)
            .into_iter()
            .map(|p| (owner(&p.process_id), p))
            .collect();
    let mut diagrams = Vec::new();
    for p in defs.executable_processes() {
        let d = qflow_engine::diagram::Diagram::of(p, Some(text));
        let name = p.id.as_ref().map_or("process", |a| a.value.as_str());
        let counts = match deployment_of(name) {
            Some(dep) => qflow_engine::inspect::fleet::node_counts(store, dep.id)?,
            None => Default::default(),
        };
        let state = qflow_engine::diagram::state_of_counts(name, &counts);
        diagrams.push((
            format!(
                "The process {name}: where the instances stand ({} completed, {} failed, {} unfinished)",
                group(counts.completed),
                group(counts.failed),
                group(counts.running + counts.waiting)
            ),
            qflow_engine::diagram::svg::svg(&d, Some(&state)),
        ));
    }
    Ok(crate::cli::report::html(&crate::cli::report::Report {
        title: format!(
            "qflow simulate: {} jobs through a {} outage",
            group(args.jobs as u64),
            qflow_engine::duration::to_words(outage)
        ),
        summary,
        per_minute: &r.per_minute,
        outage_minutes: Some(outage.as_secs_f64() / 60.0),
        pending: Some(&r.backlog_per_minute()),
        backlog_age: Some(&obs.backlog_age),
        policies: &policies,
        diagrams,
    }))
}

/// This process's peak resident set (Linux: VmHWM), in KiB.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn json_report(
    r: &Report,
    args: &Args,
    outage: Duration,
    elapsed: Duration,
    rss_kb: Option<u64>,
) -> String {
    let t = &r.totals;
    let per_minute: Vec<_> = r
        .per_minute
        .iter()
        .map(|(m, n)| json!({"minute": m, "attempts": n}))
        .collect();
    let v = json!({
        "status": "simulated",
        "jobs": args.jobs,
        "outage_s": outage.as_secs(),
        "attempts": t.attempts,
        "completed": t.completed,
        "exhausted": t.exhausted,
        "failed_other": t.failed,
        "unfinished": t.jobs as u64 - t.finished(),
        "virtual_end_s": t.virtual_ms / 1000,
        "per_minute": per_minute,
        "by_dependency": r.by_dependency.iter()
            .map(|(d, n)| json!({"dependency": d, "attempts": n})).collect::<Vec<_>>(),
        "backlog": r.backlog().iter().map(|(m, n)| json!({"minute": m, "pending": n}))
            .collect::<Vec<_>>(),
        "batches": r.batches,
        "wall_ms": elapsed.as_millis() as u64,
        "peak_rss_kb": rss_kb,
    });
    json_line(&v, &["status"])
}

fn human_report(
    r: &Report,
    args: &Args,
    outage: Duration,
    elapsed: Duration,
    rss_kb: Option<u64>,
) -> String {
    let t = &r.totals;
    let mut out = String::new();
    let n = qflow_engine::text::group;
    out += &format!(
        "SIMULATED  {} jobs, every dependency down for {} ({} on each attempt or delivery), then up\n",
        n(args.jobs as u64),
        qflow_engine::duration::to_words(outage),
        OUTAGE_CODE
    );
    out += &format!("attempts executed  {:>12}\n", n(t.attempts));
    out += &format!("completed          {:>12}\n", n(t.completed));
    out += &format!("exhausted          {:>12}\n", n(t.exhausted));
    if t.failed > 0 {
        out += &format!("failed (other)     {:>12}\n", n(t.failed));
    }
    let open = t.jobs as u64 - t.finished();
    if open > 0 {
        out += &format!("waiting elsewhere  {:>12}\n", n(open));
    }
    out += &format!(
        "virtual time       {:>12}\n",
        qflow_engine::duration::compact_ms(t.virtual_ms)
    );
    if !r.by_dependency.is_empty() {
        out += "\nattempts by dependency (a task's name, or a call's channel)\n";
        let w = r
            .by_dependency
            .keys()
            .map(|k| k.chars().count())
            .max()
            .unwrap_or(0);
        for (dependency, attempts) in &r.by_dependency {
            out += &format!("  {dependency:<w$}  {:>12}\n", n(*attempts));
        }
    }
    out += "\nattempts per minute (virtual time)\n";
    out += &chart(&r.per_minute, 40, 50);
    out += "\npending backlog (unfinished instances at the end of each minute)\n";
    out += &backlog_chart(&r.backlog(), t.virtual_ms.div_euclid(60_000), 40, 50);
    out += &format!(
        "\nwall {:.1} s, {} group commits, peak RSS {}\n",
        elapsed.as_secs_f64(),
        n(r.batches),
        rss_kb.map_or("unknown".to_string(), |k| format!(
            "{:.1} MB",
            k as f64 / 1024.0
        ))
    );
    out
}

/// Attempts per minute as horizontal bars: one row per minute that saw an
/// attempt when there are at most `rows` of them, else `rows` equal spans of
/// time, each showing its busiest minute.
fn chart(per_minute: &std::collections::BTreeMap<i64, u64>, rows: usize, width: usize) -> String {
    let (Some((&first, _)), Some((&last, _))) =
        (per_minute.first_key_value(), per_minute.last_key_value())
    else {
        return "  (no attempts)\n".into();
    };
    let buckets: Vec<(i64, i64, u64)> = if per_minute.len() <= rows {
        per_minute.iter().map(|(m, n)| (*m, *m, *n)).collect()
    } else {
        let span = (last - first + 1) as usize;
        let w = span.div_ceil(rows) as i64;
        let mut b: Vec<(i64, i64, u64)> = Vec::new();
        for (m, n) in per_minute {
            let start = first + (m - first) / w * w;
            match b.last_mut() {
                Some(last) if last.0 == start => last.2 = last.2.max(*n),
                _ => b.push((start, start + w - 1, *n)),
            }
        }
        b
    };
    bar_rows(buckets, width, " (busiest minute)")
}

/// The pending backlog as horizontal bars: one row per level it held (from
/// the minute it changed to the minute before it changed again; the last
/// row to the last decision's minute), or, when it changed more than `rows`
/// times, `rows` equal spans of time, each showing its highest.
fn backlog_chart(steps: &[(i64, u64)], last: i64, rows: usize, width: usize) -> String {
    let Some(&(first, _)) = steps.first() else {
        return "  (nothing pending)\n".into();
    };
    // (from, to, pending)
    let buckets: Vec<(i64, i64, u64)> = if steps.len() <= rows {
        steps
            .iter()
            .enumerate()
            .map(|(i, (m, n))| {
                let to = steps.get(i + 1).map_or(last.max(*m), |next| next.0 - 1);
                (*m, to, *n)
            })
            .collect()
    } else {
        let w = ((last - first + 1) as usize).div_ceil(rows).max(1) as i64;
        let mut b: Vec<(i64, i64, u64)> = Vec::new();
        for (m, n) in steps {
            let start = first + (m - first) / w * w;
            match b.last_mut() {
                Some(x) if x.0 == start => x.2 = x.2.max(*n),
                _ => b.push((start, (start + w - 1).min(last), *n)),
            }
        }
        b
    };
    bar_rows(buckets, width, "")
}

/// One bar per `(from, to, value)` row, scaled to the highest, labelled
/// `+from` or `+from..to`; a row spanning several minutes ends with
/// `span_note` (what its value is of the span).
fn bar_rows(buckets: Vec<(i64, i64, u64)>, width: usize, span_note: &str) -> String {
    let max = buckets.iter().map(|b| b.2).max().unwrap_or(1).max(1);
    let mut out = String::new();
    for (from, to, n) in buckets {
        let len = ((n as f64 / max as f64) * width as f64).ceil() as usize;
        let label = if from == to {
            format!("+{}", minutes(from))
        } else {
            format!("+{}..{}", minutes(from), minutes(to))
        };
        out += &format!(
            "  {label:>16} {:<width$} {}{}\n",
            "█".repeat(len),
            qflow_engine::text::group(n),
            if from == to { "" } else { span_note }
        );
    }
    out
}

/// A minute index as `1h 05m` / `12m`.
fn minutes(m: i64) -> String {
    if m >= 60 {
        format!("{}h{:02}m", m / 60, m % 60)
    } else {
        format!("{m}m")
    }
}
