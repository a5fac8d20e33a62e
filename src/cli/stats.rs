//! `qflow stats --db DB [--format json]`: the fleet's observations, read
//! from the store ([`Store::observations`]); this module only renders them.

use std::path::PathBuf;
use std::process::ExitCode;

use qflow_engine::duration::compact_ms;
use qflow_engine::store::stats::Observations;
use qflow_engine::store::Store;
use qflow_engine::text::group;
use serde_json::json;

use crate::cli::run::{json_line, Format};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The database to read (it must exist).
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

pub fn run(args: Args) -> ExitCode {
    let format = args.format;
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        if format == Format::Json {
            let rec = json!({"status": "error", "error": "store", "message": msg});
            println!("{}", json_line(&rec, &["status", "error", "message"]));
        }
        ExitCode::from(2)
    };
    if !args.db.is_file() {
        return fail(format!(
            "{}: no such database (give the --db of a run or a simulation)",
            args.db.display()
        ));
    }
    let obs = match Store::open(&args.db).and_then(|s| s.observations()) {
        Ok(o) => o,
        Err(e) => return fail(qflow_engine::store::explain::open_error(&args.db, &e)),
    };
    match format {
        Format::Json => {
            let mut v = serde_json::to_value(&obs).unwrap_or_default();
            v["status"] = json!("stats");
            println!("{}", json_line(&v, &["status"]));
        }
        Format::Human => print!("{}", human(&obs)),
    }
    ExitCode::SUCCESS
}

fn at(ms: Option<i64>) -> String {
    ms.map_or_else(|| "—".into(), |ms| format!("+{}", compact_ms(ms)))
}

fn human(o: &Observations) -> String {
    let mut out = String::new();
    out += &format!(
        "instances {}: {} unfinished, {} completed, {} failed\n",
        group(o.instances),
        group(o.unfinished),
        group(o.completed),
        group(o.terminal.iter().map(|t| t.count).sum())
    );
    out += "\npending by failure class (of the last attempt)\n";
    if o.pending_by_class.is_empty() {
        out += "  (none pending)\n";
    }
    for c in &o.pending_by_class {
        out += &format!("  {:<24} {:>10}\n", c.label, group(c.count));
    }
    out += &format!(
        "\nattempts {}; per completed effect {}\n",
        group(o.attempts),
        o.attempts_per_completed
            .map_or_else(|| "— (none completed)".into(), |a| format!("{a:.2}"))
    );
    out += &format!(
        "oldest next-eligible time {}   (store's latest decision {})\n",
        at(o.oldest_next_eligible_ms),
        at(o.now_ms)
    );
    out += &format!(
        "unknown outcomes awaiting reconciliation {}\n",
        group(o.unknown_outcomes)
    );
    out += "\nterminal failures by code and reason\n";
    if o.terminal.is_empty() {
        out += "  (none)\n";
    }
    for t in &o.terminal {
        out += &format!("  {:<24} {:<16} {:>10}\n", t.code, t.reason, group(t.count));
    }
    out += "\nattempt rate by dependency (per minute of the store's time)\n";
    if o.by_dependency.is_empty() {
        out += "  (no attempts)\n";
    }
    for d in &o.by_dependency {
        out += &format!(
            "  {:<24} {:>10} attempts, peak {}/min, mean {:.1}/min, {}..{}\n",
            d.dependency,
            group(d.attempts),
            group(d.peak_per_minute),
            d.mean_per_minute,
            at(Some(d.first_ms)),
            at(Some(d.last_ms))
        );
    }
    out += "\ncontainment\n";
    if o.paused.is_empty() {
        out += "  no pause in force\n";
    }
    for p in &o.paused {
        out += &format!(
            "  paused {:<10} {:<24} holding {} retry park(s)\n",
            p.kind.flag(),
            p.value,
            group(p.holding)
        );
    }
    out += &format!("  quarantined instances {}\n", group(o.quarantined));
    out += "\nbacklog age by creation time (unfinished instances)\n";
    for c in &o.backlog_age {
        out += &format!("  {:<24} {:>10}\n", c.label, group(c.count));
    }
    out
}
