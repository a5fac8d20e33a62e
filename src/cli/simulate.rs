//! `qflow simulate MODEL --jobs N --outage DURATION [--db DB]`: N real
//! instances through the engine and the store on the virtual clock, with
//! every dependency (a registered task's, a channel call's) down for the
//! outage and up after it; optionally arriving over a window, failing only
//! a share of the requests, behind a capacity, and held to `--expect`.
//!
//! The engine runs the simulation ([`simulate`]), parses the flags' values
//! and the expectations and holds them to the report
//! ([`qflow_engine::runtime::simulate::expect`]); this module passes the
//! arguments on, shows a progress bar on a terminal, writes the trace and
//! renders the report (totals, and attempts per minute as a chart).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use qflow_engine::runtime::fleet::DEFAULT_BATCH;
use qflow_engine::runtime::session::SessionDb;
use qflow_engine::runtime::simulate::expect::{Expectation, Outcome};
use qflow_engine::runtime::simulate::{self as sim, simulate, Plan, Report, OUTAGE_CODE};
use qflow_engine::store::Location;
use serde_json::json;

use crate::cli::ops::{fail, Format};
use crate::cli::run::json_line;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The BPMN model whose instances to simulate.
    #[arg(required_unless_present = "from", conflicts_with = "from")]
    pub model: Option<PathBuf>,
    /// How many instances to start (together at virtual time 0, or over
    /// --arrivals).
    #[arg(
        long,
        value_name = "N",
        required_unless_present = "from",
        conflicts_with = "from"
    )]
    pub jobs: Option<usize>,
    /// How long every dependency (a registered task's, a channel call's) is
    /// down, from the start (2h, 90m, or ISO 8601: PT2H, P1D, PT90M).
    #[arg(
        long,
        value_name = "DURATION",
        required_unless_present = "from",
        conflicts_with = "from"
    )]
    pub outage: Option<String>,
    /// What-if on a live store: re-decide every parked retry of this
    /// database (a SQLite file or a postgres:// URL, opened read-only:
    /// nothing is written) under the edited model given with --model.
    #[arg(long, value_name = "DB", requires = "edited")]
    pub from: Option<Location>,
    /// With --from: the edited model whose policies to re-decide the parks
    /// under (an edit of the deployed process: its nodes must match the
    /// deployment's, as for `qflow migrate`).
    #[arg(
        long = "model",
        id = "edited",
        value_name = "EDITED.bpmn",
        requires = "from"
    )]
    pub edited: Option<PathBuf>,
    /// With --from: the process of the edited model (and of the database)
    /// to re-decide; default: its only executable process (a model with
    /// several is refused, naming them).
    #[arg(long, value_name = "ID", requires = "from")]
    pub process: Option<String>,
    /// With --from: only the instances of this deployment (default: every
    /// deployment of the process).
    #[arg(long, value_name = "N", requires = "from")]
    pub deployment: Option<i64>,
    /// With --from: a node of the deployment that the edited model renames
    /// (OLD=NEW), as `qflow migrate --map` takes it. Repeatable; without it
    /// the migration planner's suggestion is used.
    #[arg(long, value_name = "OLD=NEW", requires = "from")]
    pub map: Vec<String>,
    /// JSON on stdout: the same as --format json.
    #[arg(long)]
    pub json: bool,
    /// Keep the instances in this database (a SQLite file, created if
    /// missing, or a postgres:// URL); else a temporary one, removed at the end.
    #[arg(long, value_name = "DB", conflicts_with = "from")]
    pub db: Option<Location>,
    /// Instances decided and committed together (one transaction each way).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BATCH)]
    pub batch: usize,
    /// Also write a self-contained HTML report here: attempts per minute
    /// over the outage, the backlog's age, each policy's schedule, the
    /// process diagram.
    /// `-` writes it to standard output (the summary then goes to stderr).
    #[arg(long, value_name = "FILE.html", conflicts_with = "from")]
    pub report: Option<PathBuf>,
    /// Start the instances evenly over this window instead of all at
    /// virtual time 0 (10m, PT10M).
    #[arg(long, value_name = "DURATION", conflicts_with = "from")]
    pub arrivals: Option<String>,
    /// A partial outage: the share of requests that fail during the outage
    /// (0.3 or 30%; 1, every one, by default), or one dependency's
    /// (bank=0.3). Repeatable.
    #[arg(
        long = "error-rate",
        value_name = "RATE|DEPENDENCY=RATE",
        conflicts_with = "from"
    )]
    pub error_rate: Vec<String>,
    /// A capacity-limited counterpart: the dependency serves N requests a
    /// minute of virtual time and answers 429 with Retry-After to those
    /// above (bank=100/min). Repeatable.
    #[arg(long, value_name = "DEPENDENCY=N/min", conflicts_with = "from")]
    pub capacity: Vec<String>,
    /// Mixed into the partial outage's draws (the same seed fails the same
    /// requests).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Hold the result to this expectation (`exhausted <= 1%`,
    /// `peak(bank) <= 500/min`, `requests(bank) <= 10000`): exit 3 when one
    /// fails. Repeatable.
    #[arg(long, value_name = "EXPR", conflicts_with = "from")]
    pub expect: Vec<String>,
    /// Write every decision's history lines here, one JSON object a line
    /// (with the instance and the virtual instant): a trace to keep as a
    /// golden. `-` writes it to standard output (the summary then goes to
    /// stderr).
    #[arg(long, value_name = "FILE.jsonl", conflicts_with = "from")]
    pub trace: Option<PathBuf>,
    /// Run the circuit breakers this handlers file declares
    /// (`[tasks."NAME".breaker]`) in the simulation, to see what they do to
    /// the outage before enabling them under `qflow serve`; the same plan
    /// is also run without them, and the requests they saved are reported.
    /// Only the breaker tables are read: no command runs and no URL is
    /// called (the simulation's counterparts stand in).
    #[arg(long, value_name = "FILE.toml")]
    pub handlers: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

impl Args {
    /// The model simulated (present unless --from: clap requires it).
    fn model(&self) -> &std::path::Path {
        self.model.as_deref().unwrap_or(std::path::Path::new(""))
    }

    /// The jobs started (present unless --from).
    fn jobs(&self) -> usize {
        self.jobs.unwrap_or(0)
    }
}

/// The simulation's plan from the arguments, or the exit of a refused one
/// (exit 2, naming the flag, the value and the fix).
fn plan(args: &Args, outage: Duration, format: Format) -> Result<Plan, ExitCode> {
    let usage = |m: String| fail(format, 2, "usage", m);
    let mut plan = Plan::new(args.jobs(), outage, args.batch.max(1));
    if let Some(a) = &args.arrivals {
        plan.arrivals = qflow_engine::duration::parse_input(a)
            .map_err(|e| usage(format!("--arrivals {a}: {e}")))?;
    }
    for r in &args.error_rate {
        plan.error_rate.add(r).map_err(usage)?;
    }
    for c in &args.capacity {
        let (dependency, per_minute) = sim::parse_capacity(c).map_err(usage)?;
        plan.capacity.insert(dependency, per_minute);
    }
    plan.seed = args.seed;
    Ok(plan)
}

/// Each `--expect` parsed, or the exit of the first that does not parse or
/// names a dependency the model lacks (exit 2, with the column marked).
fn expectations(
    args: &Args,
    dependencies: &std::collections::BTreeSet<String>,
    format: Format,
) -> Result<Vec<Expectation>, ExitCode> {
    let mut out = Vec::new();
    for text in &args.expect {
        let parsed = Expectation::parse(text).and_then(|e| {
            e.check_dependency(dependencies.iter().map(String::as_str))
                .map(|()| e)
        });
        match parsed {
            Ok(e) => out.push(e),
            Err(e) => {
                let code = fail(format, 2, "usage", format!("--expect `{text}`: {e}"));
                if format == Format::Human {
                    eprintln!("  {text}\n  {}^", " ".repeat(e.column.saturating_sub(1)));
                }
                return Err(code);
            }
        }
    }
    Ok(out)
}

pub(crate) fn run(mut args: Args) -> ExitCode {
    if args.json {
        args.format = Format::Json;
    }
    if args.from.is_some() {
        return crate::cli::whatif::run(&args);
    }
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
    let report_out = args
        .report
        .as_deref()
        .is_some_and(crate::cli::report::is_stdout);
    let trace_out = args
        .trace
        .as_deref()
        .is_some_and(crate::cli::report::is_stdout);
    if trace_out && (report_out || format == Format::Json) {
        return fail(
            format,
            2,
            "usage",
            "--trace - would share standard output with the report or the JSON summary: give the trace a file name",
        );
    }
    let outage = match crate::cli::ops::outage_and_jobs(
        args.outage.as_deref().unwrap_or_default(),
        args.jobs() as u64,
        format,
    ) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let plan = match plan(&args, outage, format) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // An expression that cannot parse is refused before the model is read.
    for text in &args.expect {
        if Expectation::parse(text).is_err() {
            return match expectations(&args, &Default::default(), format) {
                Err(code) => code,
                Ok(_) => ExitCode::from(2),
            };
        }
    }
    let (_, text, defs) = match crate::cli::ops::read_definitions(args.model(), format) {
        Ok(read) => read,
        Err(code) => return code,
    };
    let dependencies = match sim::dependencies(&defs) {
        Ok(d) => d,
        Err(e) => return fail(format, 2, "model", e),
    };
    if let Err(m) = plan.check(&dependencies) {
        return fail(format, 2, "usage", m);
    }
    let mut plan = plan;
    if let Some(path) = &args.handlers {
        let file = match qflow_engine::handlers::HandlersFile::read(path) {
            Ok(f) => f,
            Err(e) => return fail(format, 2, "handlers", format!("{}: {e}", path.display())),
        };
        plan.breakers = file
            .tasks
            .iter()
            .filter(|(name, _)| dependencies.contains(*name))
            .filter_map(|(name, t)| t.breaker.clone().map(|b| (name.clone(), b)))
            .collect();
        if plan.breakers.is_empty() {
            return fail(
                format,
                2,
                "usage",
                format!(
                    "--handlers {}: it declares no breaker for a task of this model (its tasks: {}): add a [tasks.\"NAME\".breaker] table, or leave --handlers out",
                    path.display(),
                    dependencies.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            );
        }
    }
    let expected = match expectations(&args, &dependencies, format) {
        Ok(e) => e,
        Err(code) => return code,
    };
    let mut trace = match &args.trace {
        None => None,
        Some(path) if crate::cli::report::is_stdout(path) => Some(Trace::new(
            Box::new(std::io::stdout().lock()) as Box<dyn std::io::Write>,
            path,
        )),
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Some(Trace::new(Box::new(f), path)),
            Err(e) => {
                return fail(
                    format,
                    2,
                    "unwritable",
                    format!("cannot write the trace {}: {e}", path.display()),
                )
            }
        },
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
    // The simulation decides every instance its store holds: older ones
    // still waiting would be decided on its virtual clock and counted in its
    // totals. Refused before anything is written.
    if let Some(chosen) = &chosen {
        let unfinished = match store.instances() {
            Ok(rows) => rows.iter().filter(|r| !r.status.is_terminal()).count(),
            Err(e) => return fail(format, 2, "store", e),
        };
        if unfinished > 0 {
            return fail(
                format,
                2,
                "store",
                format!(
                    "--db {chosen} already holds {unfinished} unfinished instance(s), which the simulation would decide and count as its own: give --db a new file (or database), or leave --db out"
                ),
            );
        }
    }
    let bar = (format == Format::Human && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(args.jobs() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} finished  {msg}",
            )
            .expect("a valid template"),
        );
        bar
    });
    let wall = Instant::now();
    // With breakers, the same plan without them first (on a temporary
    // store of its own): what they saved is the difference.
    let baseline = if plan.breakers.is_empty() {
        None
    } else {
        let mut without = plan.clone();
        without.breakers.clear();
        let db = SessionDb::new(None, "simulate-without-breakers");
        let run = db.open().map_err(|e| e.to_string()).and_then(|s| {
            simulate(s, &text, &defs, &without, |_| {}, |_, _| {}).map_err(|e| e.to_string())
        });
        match run {
            Ok((r, _)) => Some(r.requests_by_dependency),
            Err(e) => return fail(format, 2, "store", e),
        }
    };
    let result = simulate(
        store,
        &text,
        &defs,
        &plan,
        |p| {
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
        },
        |id, d| {
            if let Some(t) = trace.as_mut() {
                t.decision(id, d);
            }
        },
    );
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let (mut report, store) = match result {
        Ok(r) => r,
        Err(e) => return fail(format, 2, "store", e),
    };
    report.requests_without_breakers = baseline;
    if let Some(t) = trace.take() {
        if let Err(m) = t.finish() {
            return fail(format, 2, "unwritable", m);
        }
    }
    let elapsed = wall.elapsed();
    let rss = peak_rss_kb();
    let outcomes: Vec<Outcome> = expected.iter().map(|e| e.evaluate(&report)).collect();
    if let Some(path) = &args.report {
        let html = match html_report(
            &report,
            &store,
            &args,
            &text,
            &defs,
            plan.outage,
            elapsed,
            rss,
        ) {
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
    // `--report -` or `--trace -` gave stdout to the HTML or the trace:
    // the summary goes to stderr.
    let to_stdout = report_out || trace_out;
    match format {
        Format::Json => println!("{}", json_report(&report, &plan, &outcomes, elapsed, rss)),
        Format::Human if to_stdout => {
            eprint!("{}", human_report(&report, &plan, &outcomes, elapsed, rss))
        }
        Format::Human => print!("{}", human_report(&report, &plan, &outcomes, elapsed, rss)),
    }
    if let Some(db) = &chosen {
        if format == Format::Human {
            let kept = format!("instances kept in {db}");
            if to_stdout {
                eprintln!("{kept}");
            } else {
                println!("{kept}");
            }
        }
    }
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| !o.held).collect();
    if failed.is_empty() {
        return ExitCode::SUCCESS;
    }
    for o in failed {
        eprintln!(
            "error: expectation failed: `{}`: measured {} (--expect; exit 3)",
            o.expectation.text, o.measured_text
        );
    }
    ExitCode::from(3)
}

/// The trace being written: every decision's history lines, one JSON
/// object a line, each with the instance and the decision's virtual
/// instant (ms since the simulation began) first. The first write error
/// stops the writing and is reported at the end.
struct Trace<'a> {
    out: std::io::BufWriter<Box<dyn std::io::Write + 'a>>,
    path: String,
    error: Option<std::io::Error>,
}

impl<'a> Trace<'a> {
    fn new(out: Box<dyn std::io::Write + 'a>, path: &std::path::Path) -> Trace<'a> {
        Trace {
            out: std::io::BufWriter::new(out),
            path: path.display().to_string(),
            error: None,
        }
    }

    fn decision(&mut self, id: &str, d: &qflow_engine::runtime::Decision) {
        use std::io::Write;
        if self.error.is_some() {
            return;
        }
        for line in &d.lines {
            let mut v = line.clone();
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("instance".into(), json!(id));
                m.insert("at_ms".into(), json!(d.at_ms));
            }
            let text = json_line(&v, &["at_ms", "instance", "kind", "node"]);
            if let Err(e) = writeln!(self.out, "{text}") {
                self.error = Some(e);
                return;
            }
        }
    }

    fn finish(mut self) -> Result<(), String> {
        use std::io::Write;
        let flushed = self.out.flush();
        match self.error.take().map_or(flushed, Err) {
            Ok(()) => Ok(()),
            Err(e) => Err(format!("cannot write the trace {}: {e}", self.path)),
        }
    }
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
        ("model".to_string(), args.model().display().to_string()),
        ("jobs".into(), group(args.jobs() as u64)),
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
    // The breakers' moves at their virtual instants, and what they saved.
    for m in &r.breaker_moves {
        summary.push((
            format!(
                "breaker of {} at +{}",
                m.dependency,
                qflow_engine::duration::compact_ms(m.at_ms)
            ),
            format!("{} -> {}: {}", m.from.as_str(), m.to.as_str(), m.reason),
        ));
    }
    if let Some(without) = &r.requests_without_breakers {
        let with_breaker: std::collections::BTreeSet<&str> = r
            .breaker_moves
            .iter()
            .map(|m| m.dependency.as_str())
            .collect();
        for d in without.keys().filter(|d| with_breaker.contains(d.as_str())) {
            let with = r.requests_by_dependency.get(d).copied().unwrap_or(0);
            summary.push((
                format!("requests to {d}, with and without its breaker"),
                format!("{} and {}", group(with), group(without[d])),
            ));
        }
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
        Some(d) => format!(
            "deployment {} ({process}, {})",
            d.id,
            args.model().display()
        ),
        None => format!("{process} ({})", args.model().display()),
    };
    let policies: Vec<(String, projection::NodeProjection)> =
        projection::of_model(defs, args.jobs() as u64, outage)
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
            group(args.jobs() as u64),
            qflow_engine::duration::to_words(outage)
        ),
        summary,
        per_minute: &r.per_minute,
        outage_minutes: Some(outage.as_secs_f64() / 60.0),
        pending: Some(&r.backlog_per_minute()),
        backlog_age: Some(&obs.backlog_age),
        policies: &policies,
        diagrams,
        releases: Vec::new(),
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
    plan: &Plan,
    outcomes: &[Outcome],
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
        "jobs": plan.jobs,
        "outage_s": plan.outage.as_secs(),
        "arrivals_s": plan.arrivals.as_secs(),
        "attempts": t.attempts,
        "completed": t.completed,
        "exhausted": t.exhausted,
        "failed_other": t.failed,
        "unfinished": t.jobs as u64 - t.finished(),
        "virtual_end_s": t.virtual_ms / 1000,
        "per_minute": per_minute,
        "by_dependency": r.by_dependency.iter()
            .map(|(d, n)| json!({"dependency": d, "attempts": n})).collect::<Vec<_>>(),
        "requests": r.requests_by_dependency.iter().map(|(d, n)| {
            let peak = r.peak_requests(Some(d));
            json!({
                "dependency": d,
                "requests": n,
                "peak_per_minute": peak.map_or(0, |p| p.1),
                "peak_minute": peak.map(|p| p.0),
                "rate_limited": r.rate_limited.get(d).copied().unwrap_or(0),
            })
        }).collect::<Vec<_>>(),
        "backlog": r.backlog().iter().map(|(m, n)| json!({"minute": m, "pending": n}))
            .collect::<Vec<_>>(),
        "expectations": outcomes.iter().map(|o| json!({
            "expect": o.expectation.text,
            "measured": o.measured_text,
            "value": o.measured,
            "held": o.held,
        })).collect::<Vec<_>>(),
        "batches": r.batches,
        "wall_ms": elapsed.as_millis() as u64,
        "peak_rss_kb": rss_kb,
    });
    let mut v = v;
    // Only a simulation given breakers (--handlers) reports them.
    if !plan.breakers.is_empty() {
        v["breakers"] = breakers_json(r, plan);
    }
    json_line(&v, &["status"])
}

/// The breakers' part of the JSON summary: per breaker, its declaration,
/// its moves (at virtual seconds), and the requests to its dependency with
/// it and without it (`saved`: the difference).
fn breakers_json(r: &Report, plan: &Plan) -> serde_json::Value {
    plan.breakers
        .iter()
        .map(|(d, c)| {
            let with = r.requests_by_dependency.get(d).copied().unwrap_or(0);
            let without = r
                .requests_without_breakers
                .as_ref()
                .map(|w| w.get(d).copied().unwrap_or(0));
            json!({
                "dependency": d,
                "breaker": c.words(),
                "moves": r.breaker_moves.iter().filter(|m| &m.dependency == d).map(|m| json!({
                    "at_s": m.at_ms as f64 / 1000.0,
                    "from": m.from.as_str(),
                    "to": m.to.as_str(),
                    "reason": m.reason,
                    "release": m.release,
                })).collect::<Vec<_>>(),
                "requests": with,
                "requests_without_breaker": without,
                "saved": without.map(|w| w as i64 - with as i64),
            })
        })
        .collect::<Vec<_>>()
        .into()
}

/// The breakers' part of the human summary: each move at its virtual
/// instant, and the requests it saved.
fn breakers_human(r: &Report, plan: &Plan) -> String {
    let n = qflow_engine::text::group;
    let mut out = String::new();
    for (d, c) in &plan.breakers {
        out += &format!("\nbreaker of {d} ({})\n", c.words());
        let moves: Vec<_> = r
            .breaker_moves
            .iter()
            .filter(|m| &m.dependency == d)
            .collect();
        if moves.is_empty() {
            out += "  never opened\n";
        }
        for m in moves {
            out += &format!(
                "  +{:<10} {} -> {}: {}{}\n",
                qflow_engine::duration::compact_ms(m.at_ms),
                m.from.as_str(),
                m.to.as_str(),
                m.reason,
                m.release
                    .map(|r| format!(" (release ramp {r})"))
                    .unwrap_or_default()
            );
        }
        let with = r.requests_by_dependency.get(d).copied().unwrap_or(0);
        if let Some(without) = r
            .requests_without_breakers
            .as_ref()
            .map(|w| w.get(d).copied().unwrap_or(0))
        {
            let saved = without as i64 - with as i64;
            out += &format!(
                "  requests to {d}: {} with the breaker, {} without it ({} {})\n",
                n(with),
                n(without),
                n(saved.unsigned_abs()),
                if saved >= 0 { "saved" } else { "more" }
            );
        }
    }
    out
}

/// What the plan makes of the counterparts, in words (the report's first
/// line): down wholly or in part, behind a capacity, arriving over a window.
fn plan_words(plan: &Plan) -> String {
    let n = qflow_engine::text::group;
    let rates = &plan.error_rate;
    let share = |r: f64| {
        if r >= 1.0 {
            "every request".to_string()
        } else {
            format!("{}% of requests", (r * 1000.0).round() / 10.0)
        }
    };
    let mut out = format!(
        "SIMULATED  {} jobs{}, every dependency down for {} ({} fail{}, {} on each attempt or delivery), then up\n",
        n(plan.jobs as u64),
        if plan.arrivals.is_zero() {
            String::new()
        } else {
            format!(
                " arriving over {}",
                qflow_engine::duration::to_words(plan.arrivals)
            )
        },
        qflow_engine::duration::to_words(plan.outage),
        share(rates.default),
        if rates.default >= 1.0 { "s" } else { "" },
        OUTAGE_CODE
    );
    for (d, r) in &rates.by_dependency {
        out += &format!("           {d}: {} fail during the outage\n", share(*r));
    }
    for (d, c) in &plan.capacity {
        out += &format!(
            "           {d}: serves {}/min, answers 429 with Retry-After above it\n",
            n(*c)
        );
    }
    out
}

fn human_report(
    r: &Report,
    plan: &Plan,
    outcomes: &[Outcome],
    elapsed: Duration,
    rss_kb: Option<u64>,
) -> String {
    let t = &r.totals;
    let mut out = String::new();
    let n = qflow_engine::text::group;
    out += &plan_words(plan);
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
    if !r.requests_by_dependency.is_empty() {
        out += "\nrequests by dependency (what each received: a task's attempts, a channel's deliveries)\n";
        let w = r
            .requests_by_dependency
            .keys()
            .map(|k| k.chars().count())
            .max()
            .unwrap_or(0)
            .max("dependency".len());
        out += &format!(
            "  {:<w$}  {:>12}  {:>16}  {:>12}\n",
            "dependency", "requests", "busiest minute", "answered 429"
        );
        for (dependency, requests) in &r.requests_by_dependency {
            let peak = r
                .peak_requests(Some(dependency))
                .map_or("-".to_string(), |(m, k)| {
                    format!("{} at +{}", n(k), minutes(m))
                });
            out += &format!(
                "  {dependency:<w$}  {:>12}  {peak:>16}  {:>12}\n",
                n(*requests),
                n(r.rate_limited.get(dependency).copied().unwrap_or(0))
            );
        }
    }
    out += &breakers_human(r, plan);
    out += "\nattempts per minute (virtual time)\n";
    out += &chart(&r.per_minute, 40, 50);
    // The load each dependency saw, where it is not its attempts: a
    // channel's attempt is one delivery or more, each one a request.
    for (dependency, per_minute) in &r.requests_per_minute {
        let attempts = r.by_dependency.get(dependency).copied().unwrap_or(0);
        if r.requests_by_dependency
            .get(dependency)
            .copied()
            .unwrap_or(0)
            != attempts
        {
            out +=
                &format!("\nrequests per minute to {dependency} (virtual time; every delivery)\n");
            out += &chart(per_minute, 40, 50);
        }
    }
    out += "\npending backlog (unfinished instances at the end of each minute)\n";
    out += &backlog_chart(&r.backlog(), t.virtual_ms.div_euclid(60_000), 40, 50);
    if !outcomes.is_empty() {
        out += "\nexpectations\n";
        let w = outcomes
            .iter()
            .map(|o| o.expectation.text.chars().count())
            .max()
            .unwrap_or(0);
        for o in outcomes {
            out += &format!(
                "  {:<6}  {:<w$}  measured {}\n",
                if o.held { "held" } else { "FAILED" },
                o.expectation.text,
                o.measured_text
            );
        }
    }
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
