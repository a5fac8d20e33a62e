//! `qflow stats --db DB [--format json]`: the fleet's observations, read
//! from the store ([`Store::observations`]); this module only renders them.

use std::path::PathBuf;
use std::process::ExitCode;

use qflow_engine::duration::compact_ms;
use qflow_engine::runtime::forecast::{DependencyForecast, Forecast};
use qflow_engine::store::contain::{LogQuery, Logged};
use qflow_engine::store::stats::{LoadWindow, Observations};
use qflow_engine::store::{Location, Store};
use qflow_engine::text::group;
use serde_json::json;

use crate::cli::ops::Format;
use crate::cli::run::json_line;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The database to read (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    /// Also write a self-contained HTML report here: attempts per minute,
    /// the backlog's age, each deployed policy's schedule, the processes.
    /// `-` writes it to standard output (the summary then goes to stderr).
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// How many of the latest containment actions to list (pause,
    /// unpause, quarantine, release: who, when, why); 0 lists every one.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub log: u32,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

pub(crate) fn run(args: Args) -> ExitCode {
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
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        if format == Format::Json {
            let rec = json!({"status": "error", "error": "store", "message": msg});
            println!("{}", json_line(&rec, &["status", "error", "message"]));
        }
        ExitCode::from(2)
    };
    if args.db.sqlite_path().is_some_and(|p| !p.is_file()) {
        return fail(format!(
            "{}: no such database (give the --db of a run or a simulation)",
            args.db
        ));
    }
    let store = match Store::connect_for_reading(&args.db) {
        Ok(s) => s,
        Err(e) => return fail(qflow_engine::store::explain::connect_error(&args.db, &e)),
    };
    let obs = match store.observations() {
        Ok(o) => o,
        Err(e) => return fail(qflow_engine::store::explain::connect_error(&args.db, &e)),
    };
    // One more than asked, to say whether earlier entries were left out.
    let asked = args.log.saturating_add(u32::from(args.log > 0));
    let mut log = match store.containment_log(&LogQuery::recent(asked)) {
        Ok(l) => l,
        Err(e) => return fail(qflow_engine::store::explain::connect_error(&args.db, &e)),
    };
    let releases = match store.releases() {
        Ok(r) => r,
        Err(e) => return fail(qflow_engine::store::explain::connect_error(&args.db, &e)),
    };
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let forecast = match qflow_engine::forecast::fleet(&store, wall) {
        Ok((f, _)) => f,
        Err(e) => return fail(qflow_engine::store::explain::connect_error(&args.db, &e)),
    };
    let (breakers, moves) = match store
        .breakers()
        .and_then(|b| Ok((b, store.breaker_transitions(BREAKER_MOVES)?)))
    {
        Ok(b) => b,
        Err(e) => return fail(qflow_engine::store::explain::connect_error(&args.db, &e)),
    };
    // The web fleet page's live load, the same read and window.
    let load = match store.load_window(qflow_engine::store::stats::LOAD_WINDOW_MINUTES) {
        Ok(l) => l,
        Err(e) => return fail(qflow_engine::store::explain::connect_error(&args.db, &e)),
    };
    let earlier = args.log > 0 && log.len() > args.log as usize;
    if earlier {
        log.remove(0);
    }
    if let Some(path) = &args.report {
        let html = match html_report(&store, &obs, &args, &forecast) {
            Ok(h) => h,
            Err(e) => return fail(qflow_engine::store::explain::connect_error(&args.db, &e)),
        };
        if let Err(e) = crate::cli::report::write(path, &html) {
            return fail(format!("cannot write the report {}: {e}", path.display()));
        }
    }
    match format {
        Format::Json => {
            let mut v = serde_json::to_value(&obs).unwrap_or_default();
            v["status"] = json!("stats");
            v["containment_log"] = json!(log);
            v["containment_log_earlier"] = json!(earlier);
            v["releases"] = json!(releases);
            v["exhaustion_forecast_start_ms"] = json!(forecast.now_ms);
            v["exhaustion_forecast_hours"] = json!(forecast.hours);
            v["exhaustion_forecast"] = json!(forecast.dependencies);
            v["breakers"] = json!(breakers);
            v["breaker_transitions"] = json!(moves);
            v["load_window"] = json!(load);
            println!("{}", json_line(&v, &["status"]));
        }
        // `--report -` gave stdout to the HTML: the summary goes to stderr.
        Format::Human
            if args
                .report
                .as_deref()
                .is_some_and(crate::cli::report::is_stdout) =>
        {
            eprint!(
                "{}",
                qflow_engine::text::printable(&human(
                    &obs,
                    &(release_lines(&releases)
                        + &breaker_lines(&breakers, &moves)
                        + &log_lines(&log, earlier, &args)),
                    &forecast,
                    &load
                ))
            )
        }
        Format::Human => print!(
            "{}",
            qflow_engine::text::printable(&human(
                &obs,
                &(release_lines(&releases)
                    + &breaker_lines(&breakers, &moves)
                    + &log_lines(&log, earlier, &args)),
                &forecast,
                &load
            ))
        ),
    }
    ExitCode::SUCCESS
}

/// The HTML report of a store: its observations as a table, attempts per
/// minute, the backlog's age, the schedule of every deployed policy and
/// every deployed process.
fn html_report(
    store: &Store,
    o: &Observations,
    args: &Args,
    forecast: &Forecast,
) -> Result<String, qflow_engine::store::StoreError> {
    use qflow_engine::policy::projection;
    let per_minute = store.attempts_per_minute()?;
    let mut summary = vec![
        ("database".to_string(), args.db.to_string()),
        (
            "instances".into(),
            format!(
                "{}: {} unfinished, {} completed, {} failed",
                group(o.instances),
                group(o.unfinished),
                group(o.completed),
                group(o.terminal.iter().map(|t| t.count).sum())
            ),
        ),
        ("attempts".into(), group(o.attempts)),
        (
            "attempts per completed effect".into(),
            o.attempts_per_completed
                .map_or_else(|| "none completed".into(), |a| format!("{a:.2}")),
        ),
        (
            "oldest next-eligible time".into(),
            at(o.oldest_next_eligible_ms),
        ),
        (
            "unknown outcomes awaiting reconciliation".into(),
            group(o.unknown_outcomes),
        ),
    ];
    for c in &o.pending_by_class {
        summary.push((format!("pending, class {}", c.label), group(c.count)));
    }
    for t in &o.terminal {
        summary.push((format!("FAILED {} ({})", t.code, t.reason), group(t.count)));
    }
    for d in &o.by_dependency {
        summary.push((
            format!("attempts on {}", d.dependency),
            format!(
                "{}, busiest minute {}, mean {:.1}/min",
                group(d.attempts),
                group(d.peak_per_minute),
                d.mean_per_minute
            ),
        ));
        summary.push((
            format!("requests to {}", d.dependency),
            format!(
                "{}, busiest minute {}",
                group(d.requests),
                group(d.requests_peak_per_minute)
            ),
        ));
    }
    for p in &o.paused {
        summary.push((
            format!("paused {} {}", p.kind.flag(), p.value),
            format!(
                "holding {} retry park(s), {}",
                group(p.holding),
                qflow_engine::store::contain::Actor::words(p.by.as_deref(), p.reason.as_deref())
            ),
        ));
    }
    summary.push(("quarantined".into(), group(o.quarantined)));
    for d in &forecast.dependencies {
        let mut words = vec![format!(
            "{} of {} parked within {} h",
            group(d.failed()),
            group(d.parked),
            forecast.hours
        )];
        words.extend(d.hours.iter().map(|h| {
            format!(
                "hour {} (from {}): {}",
                h.hour,
                crate::cli::contain::instant(h.hour_start_ms),
                group(h.failed)
            )
        }));
        for (n, what) in [(d.later, "later"), (d.never, "never"), (d.held, "held")] {
            if n > 0 {
                words.push(format!("{} {what}", group(n)));
            }
        }
        summary.push((
            format!("reaching FAILED if {} stays down", d.dependency),
            words.join("; "),
        ));
    }
    // Each circuit breaker and its latest moves (docs/outage.md).
    let moves = store.breaker_transitions(BREAKER_MOVES)?;
    for b in store.breakers()? {
        summary.push((
            format!("breaker of {}", b.dependency),
            format!(
                "{} since {} (opened {})",
                b.state.phase.as_str(),
                crate::cli::ops::timestamp(b.state.since_ms),
                count(b.state.opened as u64, "time", "times")
            ),
        ));
        for m in moves.iter().filter(|m| m.dependency == b.dependency) {
            summary.push((
                format!(
                    "breaker of {}, {}",
                    b.dependency,
                    crate::cli::ops::timestamp(m.at_ms)
                ),
                format!("{} -> {}: {}", m.from.as_str(), m.to.as_str(), m.reason),
            ));
        }
    }
    if o.late.decisions > 0 {
        summary.push((
            "late decisions".into(),
            format!(
                "{} (worst {} ms late, the last {} ms)",
                group(o.late.decisions),
                o.late.worst_ms.unwrap_or(0),
                o.late.last_ms.unwrap_or(0)
            ),
        ));
    }
    let mut policies = Vec::new();
    let mut diagrams = Vec::new();
    for d in store.deployments()? {
        let source = store.deployment_source(d.id)?.unwrap_or_default();
        let Ok(defs) = qflow_engine::load(&source) else {
            continue;
        };
        let owner = match &d.origin {
            Some(origin) => format!("deployment {} ({}, {origin})", d.id, d.process_id),
            None => format!("deployment {} ({})", d.id, d.process_id),
        };
        // A deployment starts instances of one process: its policies and
        // its diagram, with where its instances stand.
        policies.extend(
            projection::of_model(
                &defs,
                o.instances.max(1),
                std::time::Duration::from_secs(86_400),
            )
            .into_iter()
            .filter(|p| p.process_id == d.process_id)
            .map(|p| (owner.clone(), p)),
        );
        let counts = qflow_engine::inspect::fleet::node_counts(store, d.id)?;
        for p in defs
            .executable_processes()
            .filter(|p| p.id.as_ref().is_some_and(|i| i.value == d.process_id))
        {
            let diagram = qflow_engine::diagram::Diagram::of(p, Some(&source));
            let state = qflow_engine::diagram::state_of_counts(&d.process_id, &counts);
            diagrams.push((
                format!(
                    "Deployment {}: {}, where its instances stand ({} completed, {} failed, {} unfinished)",
                    d.id,
                    d.process_id,
                    group(counts.completed),
                    group(counts.failed),
                    group(counts.running + counts.waiting)
                ),
                qflow_engine::diagram::svg::svg(&diagram, Some(&state)),
            ));
        }
    }
    let mut releases = Vec::new();
    for r in store.releases()? {
        releases.push((
            format!(
                "Release ramp {} of {} ({}), {}",
                r.id,
                qflow_engine::release::target_words(r.kind, &r.value),
                r.shape_words(),
                qflow_engine::store::contain::Actor::words(Some(&r.by), r.reason.as_deref())
            ),
            store.release_curve(r.id)?,
        ));
    }
    Ok(crate::cli::report::html(&crate::cli::report::Report {
        title: format!("qflow stats: {}", args.db),
        summary,
        per_minute: &per_minute,
        outage_minutes: None,
        pending: None,
        backlog_age: Some(&o.backlog_age),
        policies: &policies,
        diagrams,
        releases,
    }))
}

fn at(ms: Option<i64>) -> String {
    ms.map_or_else(|| "—".into(), qflow_engine::duration::instant)
}

/// `n thing` or `n things`, grouped.
fn count(n: u64, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{} {many}", group(n)),
    }
}

/// A per-minute mean: one decimal, or three when it is below a tenth (six
/// attempts over thirteen hours is not "0.0/min").
fn per_minute(mean: f64) -> String {
    if mean > 0.0 && mean < 0.1 {
        format!("{mean:.3}")
    } else {
        format!("{mean:.1}")
    }
}

/// The containment log's latest entries, oldest first, each with its time
/// (UTC) and who, and how to see the earlier ones.
fn log_lines(log: &[Logged], earlier: bool, args: &Args) -> String {
    let mut out = match args.log {
        0 => "\ncontainment log (every action)\n".to_string(),
        n => format!("\ncontainment log (the latest {n} actions)\n"),
    };
    if log.is_empty() {
        out += "  no containment action logged\n";
    }
    if earlier {
        out += &format!(
            "  … earlier actions: `qflow stats --db {} --log 0` lists every one\n",
            args.db
        );
    }
    for l in log {
        out += &format!(
            "  {}  {}\n",
            crate::cli::ops::timestamp(l.at_ms),
            l.words(true)
        );
    }
    out
}

/// The observations as an aligned table: a label, a value right-aligned,
/// then what the value means; each section says so in words when empty.
/// `containment_log` ([`log_lines`]) follows the containment in force.
fn human(
    o: &Observations,
    containment_log: &str,
    forecast: &Forecast,
    load: &LoadWindow,
) -> String {
    let row = |label: &str, value: &str, note: &str| {
        let line = format!("{label:<26}{value:>10}  {note}");
        format!("{}\n", line.trim_end())
    };
    let mut out = String::new();
    out += &row(
        "instances",
        &group(o.instances),
        &format!(
            "{} unfinished, {} completed, {} failed",
            group(o.unfinished),
            group(o.completed),
            group(o.terminal.iter().map(|t| t.count).sum())
        ),
    );
    out += &row(
        "attempts",
        &group(o.attempts),
        &o.attempts_per_completed.map_or_else(
            || "none completed yet: no cost per completed effect".into(),
            |a| format!("{a:.2} per completed effect"),
        ),
    );
    let next = match (o.oldest_next_eligible_ms, o.now_ms) {
        (None, _) => "nothing waits for a timer".to_string(),
        (Some(due), Some(now)) if due > now => format!(
            "the earliest armed timer, {} after the latest decision",
            compact_ms(due - now)
        ),
        (Some(_), Some(_)) => "the earliest armed timer, due already".to_string(),
        (Some(_), None) => "the earliest armed timer".to_string(),
    };
    out += &row(
        "oldest next-eligible time",
        &at(o.oldest_next_eligible_ms),
        &next,
    );
    out += &row(
        "unknown outcomes",
        &group(o.unknown_outcomes),
        "awaiting reconciliation",
    );
    out += &row(
        "latest decision",
        &at(o.now_ms),
        "on the store's clock: what the backlog's ages count from",
    );

    out += "\npending by failure class (of the last attempt)\n";
    if o.pending_by_class.is_empty() {
        out += "  nothing pending\n";
    }
    for c in &o.pending_by_class {
        out += &format!("  {:<24}{:>10}\n", c.label, group(c.count));
    }
    out += "\nterminal failures by code and reason\n";
    if o.terminal.is_empty() {
        out += "  no terminal failure\n";
    }
    for t in &o.terminal {
        out += &format!("  {:<24}{:>10}  {}\n", t.code, group(t.count), t.reason);
    }
    out += "\nattempt and request rate by dependency (per minute of the store's time)\n";
    if o.by_dependency.is_empty() {
        out += "  no attempt yet\n";
    }
    for d in &o.by_dependency {
        out += &format!(
            "  {:<24}{:>10}  {}, peak {}/min, mean {}/min, from {} to {}\n",
            d.dependency,
            group(d.attempts),
            if d.attempts == 1 {
                "attempt"
            } else {
                "attempts"
            },
            group(d.peak_per_minute),
            per_minute(d.mean_per_minute),
            at(Some(d.first_ms)),
            at(Some(d.last_ms))
        );
        // What the dependency received: for a channel, every delivery of
        // every attempt (retries-multiply.txt counts load in requests).
        out += &format!(
            "  {:<24}{:>10}  {}, peak {}/min{}\n",
            "",
            group(d.requests),
            if d.requests == 1 {
                "request"
            } else {
                "requests"
            },
            group(d.requests_peak_per_minute),
            if d.requests != d.attempts && d.attempts > 0 {
                format!(
                    " ({:.1} per attempt: a channel's deliveries)",
                    d.requests as f64 / d.attempts as f64
                )
            } else {
                String::new()
            }
        );
    }
    out += &load_lines(load);
    out += "\ncontainment\n";
    if o.paused.is_empty() {
        out += "  no pause in force\n";
    }
    for p in &o.paused {
        out += &format!(
            "  paused {} {} {}: holding {}\n",
            p.kind.flag(),
            p.value,
            qflow_engine::store::contain::Actor::words(p.by.as_deref(), p.reason.as_deref()),
            count(p.holding, "retry park", "retry parks")
        );
    }
    out += &match o.quarantined {
        0 => "  no instance quarantined\n".to_string(),
        n => format!("  {} quarantined\n", count(n, "instance", "instances")),
    };
    out += containment_log;
    if o.late.decisions > 0 {
        out += &format!(
            "\ndecisions on time\n  {} taken late by qflow serve (more than its threshold after due), worst {} ms, the last {} ms\n",
            count(o.late.decisions, "decision", "decisions"),
            o.late.worst_ms.unwrap_or(0),
            o.late.last_ms.unwrap_or(0)
        );
    }
    out += &format!(
        "\nexhaustion forecast: parked instances reaching FAILED per hour from {} if every attempt keeps failing\n",
        crate::cli::contain::instant(forecast.now_ms)
    );
    if forecast.dependencies.is_empty() {
        out += "  no retry park is armed\n";
    }
    for d in &forecast.dependencies {
        out += &forecast_lines(forecast.now_ms, d);
    }
    out += "\nbacklog age by creation time (unfinished instances)\n";
    if o.unfinished == 0 {
        out += "  no unfinished instance\n";
    } else {
        for c in &o.backlog_age {
            out += &format!("  {:<24}{:>10}\n", c.label, group(c.count));
        }
    }
    out
}

/// The load window (`load_window` in the JSON, the web fleet page's
/// chart): per dependency, its requests and attempts in the window and a
/// sparkline of its requests per minute, a column per [`SPARK_MINUTES`]
/// minutes (the busiest of them), oldest on the left, so that an operator
/// sees whether a release or an outage is rising or over without a browser.
fn load_lines(load: &LoadWindow) -> String {
    let Some(last) = load.last_minute else {
        return String::new();
    };
    let mut out = format!(
        "\nload in the {} minutes to {} (requests per minute; a column per {} minutes, its busiest)\n",
        load.minutes,
        crate::cli::contain::instant((last + 1) * 60_000),
        SPARK_MINUTES
    );
    if load.dependencies.is_empty() {
        out += "  no attempt or request in the window\n";
    }
    for d in &load.dependencies {
        out += &format!(
            "  {:<24}{:>10}  {}, {}, peak {}/min, {} in the latest minute\n",
            d.dependency,
            group(d.requests()),
            if d.requests() == 1 {
                "request"
            } else {
                "requests"
            },
            count(d.attempts(), "attempt", "attempts"),
            group(d.peak_requests()),
            group(d.latest_requests())
        );
        let spark = format!(
            "  {:<36}{}",
            "",
            sparkline(&d.requests_per_minute, SPARK_MINUTES)
        );
        out += spark.trim_end();
        out += "\n";
    }
    out
}

/// Minutes per column of the human output's load sparkline: an hour in 30.
const SPARK_MINUTES: usize = 2;

/// Counts as a row of block characters, `per` counts to a column (the
/// largest of them), each scaled to the row's largest: a zero is a space
/// only when it is zero, so a minute with one request among thousands
/// still shows.
fn sparkline(counts: &[u64], per: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let columns: Vec<u64> = counts
        .chunks(per.max(1))
        .map(|c| c.iter().copied().max().unwrap_or(0))
        .collect();
    let top = columns.iter().copied().max().unwrap_or(0).max(1);
    columns
        .iter()
        .map(|&n| match n {
            0 => ' ',
            n => BARS[((n * 8).div_ceil(top) as usize).clamp(1, 8) - 1],
        })
        .collect()
}

/// One dependency's exhaustion forecast: a row per hour in which some
/// reach FAILED, then those later, never, and held.
fn forecast_lines(now_ms: i64, d: &DependencyForecast) -> String {
    use qflow_engine::runtime::forecast::{HOURS, HOUR_MS};
    let mut out = format!(
        "  {}: {}\n",
        d.dependency,
        count(d.parked, "parked instance", "parked instances")
    );
    for h in &d.hours {
        out += &format!(
            "    hour {:>3}  from {:<12}{:>10} reach FAILED\n",
            h.hour,
            crate::cli::contain::instant(now_ms + i64::from(h.hour) * HOUR_MS),
            group(h.failed)
        );
    }
    let mut rest = vec![format!("{} within {} h", group(d.failed()), HOURS)];
    if d.later > 0 {
        rest.push(format!("{} later", group(d.later)));
    }
    if d.never > 0 {
        rest.push(format!(
            "{} never (their policy does not stop)",
            group(d.never)
        ));
    }
    if d.held > 0 {
        rest.push(format!(
            "{} held by a pause or quarantine (no attempt until released)",
            group(d.held)
        ));
    }
    out + &format!("    {}\n", rest.join("; "))
}

/// How many of the latest breaker moves `stats` shows.
const BREAKER_MOVES: u32 = 20;

/// Each breaker (its phase, since when, its canaries) and its latest
/// moves, in the containment block.
fn breaker_lines(
    breakers: &[qflow_engine::store::breaker::BreakerRow],
    moves: &[qflow_engine::store::breaker::BreakerLogged],
) -> String {
    use qflow_engine::instance::breaker::Phase;
    let mut out = String::new();
    for b in breakers {
        let canaries = match b.state.phase {
            Phase::HalfOpen => format!(
                "; canaries: {} chosen, {} still parked, {} succeeded",
                b.canaries, b.canaries_waiting, b.state.canaries_ok
            ),
            _ => String::new(),
        };
        out += &format!(
            "  breaker of dependency {}: {} since {} (opened {}){canaries}\n",
            b.dependency,
            b.state.phase.as_str(),
            crate::cli::ops::timestamp(b.state.since_ms),
            count(b.state.opened as u64, "time", "times"),
        );
        for m in moves.iter().filter(|m| m.dependency == b.dependency) {
            out += &format!(
                "    {} {} -> {}: {}{}\n",
                crate::cli::ops::timestamp(m.at_ms),
                m.from.as_str(),
                m.to.as_str(),
                m.reason,
                m.release
                    .map(|r| format!(" (release ramp {r})"))
                    .unwrap_or_default()
            );
        }
    }
    out
}

/// The release ramps, newest first, in the containment block: what each
/// released, who and why, how many parks still wait and when the next
/// goes, or who stopped it.
fn release_lines(releases: &[qflow_engine::store::release::ReleaseSchedule]) -> String {
    use crate::cli::contain::instant;
    use qflow_engine::store::contain::Actor;
    let mut out = String::new();
    for r in releases {
        let state = match (r.stopped_ms, r.next_ms) {
            (Some(ms), _) => format!(
                "stopped at {} {}",
                crate::cli::ops::timestamp(ms),
                Actor::words(r.stopped_by.as_deref(), r.stop_reason.as_deref())
            ),
            (None, Some(next)) => format!(
                "{} waiting, the next let go at {}, the last at {} (`qflow unpause --stop-ramp {}` stops it)",
                group(r.waiting),
                instant(next),
                instant(r.end_ms),
                r.id
            ),
            (None, None) => "done: every park let go".into(),
        };
        out += &format!(
            "  release ramp {} of {} ({}) {}: {}; {state}\n",
            r.id,
            qflow_engine::release::target_words(r.kind, &r.value),
            r.shape_words(),
            Actor::words(Some(&r.by), r.reason.as_deref()),
            count(r.parks, "retry park", "retry parks"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::sparkline;

    #[test]
    fn a_sparkline_scales_to_its_busiest_column_and_keeps_a_single_request_visible() {
        let counts = [0, 0, 1, 3, 800, 400, 0, 2];
        assert_eq!(sparkline(&counts, 1), "  ▁▁█▄ ▁");
        assert_eq!(sparkline(&counts, 2), " ▁█▁");
        assert_eq!(sparkline(&[0, 0], 2), " ");
        assert_eq!(sparkline(&[], 2), "");
    }
}
