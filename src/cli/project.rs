//! `qflow project MODEL --jobs N [--outage DURATION] [--format json]`: the
//! arithmetic of every retry policy of a model for N jobs failing together,
//! beside the old unbounded loop. The engine projects
//! ([`qflow_engine::policy::projection`]); this module renders.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use qflow_engine::duration::{compact_ms, to_words};
use qflow_engine::policy::bound::{self, CallBound, RequestBound};
use qflow_engine::policy::projection::{self, PeakMinute, Projection};
use qflow_engine::text::group;
use serde_json::{json, Value};

use crate::cli::ops::Format;
use crate::cli::run::json_line;

/// What every figure is, in the seed's words: printed with them.
pub(crate) const LABEL: &str = "scheduled opportunities, not observed requests";

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The BPMN model whose retry policies to project.
    pub model: PathBuf,
    /// How many instances fail together (all start at the same instant).
    #[arg(long, value_name = "N")]
    pub jobs: u64,
    /// How long the dependency is down: every attempt that starts within it
    /// fails (2h, 1d, or ISO 8601: PT2H, P1D).
    #[arg(long, value_name = "DURATION", default_value = "P1D")]
    pub outage: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

pub(crate) fn run(args: Args) -> ExitCode {
    let format = args.format;
    let outage = match crate::cli::ops::outage_and_jobs(&args.outage, args.jobs, format) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let (shown, _, defs) = match crate::cli::ops::read_definitions(&args.model, format) {
        Ok(read) => read,
        Err(code) => return code,
    };
    let nodes = projection::of_model(&defs, args.jobs, outage);
    let calls = bound::of_model(&defs);
    // QF045's ceiling, as `qflow check` judges this model.
    let ceiling = qflow_engine::config::Config::for_model(&args.model)
        .settings
        .request_ceiling();
    let old = projection::unbounded_loop().project("", "", args.jobs, outage, Duration::ZERO);
    let old_day = projection::unbounded_loop().scheduled_attempts(
        args.jobs,
        Duration::from_secs(86_400),
        Duration::ZERO,
    );
    match format {
        Format::Json => {
            let policies: Vec<Value> = nodes
                .iter()
                .map(|n| {
                    let mut v = projection_json(&n.projection);
                    v["process"] = json!(n.process_id);
                    v["node"] = json!(n.node);
                    v["name"] = json!(n.name);
                    v["dependency"] = json!(n.dependency);
                    v["summary"] = json!(n.projection.worst_case.summary());
                    // Load in remote requests, beside attempts (a call's
                    // attempt is up to its deliveries).
                    v["requests_per_attempt"] = json!(n.requests_per_attempt);
                    v["requests_scheduled"] = json!(n.requests_scheduled());
                    v["requests_peak_per_minute"] = json!(n.requests_peak());
                    v["requests_per_operation"] = json!(n.bound.and_then(|b| b.requests()));
                    v
                })
                .collect();
            let mut loop_v = projection_json(&old);
            loop_v["per_day"] = json!(old_day);
            let rec = json!({
                "status": "project",
                "label": LABEL,
                "jobs": args.jobs,
                "outage_s": outage.as_secs_f64(),
                "policies": policies,
                "ceiling": ceiling,
                "calls": calls.iter().map(|c| call_json(c, ceiling)).collect::<Vec<_>>(),
                "unbounded_loop": loop_v,
            });
            println!("{}", json_line(&rec, &["status", "label"]));
        }
        Format::Human => {
            print!("{}", human(&shown, &args, outage, &nodes, &old, old_day));
            print!("{}", calls_text(&calls, ceiling));
        }
    }
    ExitCode::SUCCESS
}

/// One call's cross-layer bound: each layer, the product, and whether it
/// is above the ceiling (QF045).
fn call_json(c: &CallBound, ceiling: u64) -> Value {
    let b = &c.bound;
    json!({
        "process": c.process_id,
        "node": c.node,
        "dependency": c.dependency,
        "attempts": b.attempts,
        "deliveries_per_attempt": b.deliveries,
        "counterpart_attempts": b.counterpart,
        "requests_per_operation": b.requests(),
        "formula": b.formula(),
        "over_ceiling": b.exceeds(ceiling),
    })
}

/// The closing table: every call's worst-case remote requests per business
/// operation, the ones above the ceiling marked.
fn calls_text(calls: &[CallBound], ceiling: u64) -> String {
    if calls.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nper business operation, every layer at its worst (attempts × deliveries × counterpart attempts; ceiling {}, QF045)\n",
        group(ceiling)
    );
    let titles: Vec<String> = calls
        .iter()
        .map(|c| format!("{} ({})", c.node, c.dependency))
        .collect();
    let width = titles.iter().map(|t| t.chars().count()).max().unwrap_or(0);
    for (c, title) in calls.iter().zip(&titles) {
        let over = if c.bound.exceeds(ceiling) {
            "  above the ceiling (QF045)"
        } else {
            ""
        };
        out += &format!("  {title:<width$}  {}{over}\n", requests_text(&c.bound));
    }
    out
}

fn requests_text(b: &RequestBound) -> String {
    format!("{} remote requests", b.formula())
}

fn secs(d: Duration) -> Value {
    if d.subsec_nanos() == 0 {
        json!(d.as_secs())
    } else {
        json!(d.as_secs_f64())
    }
}

fn peak_json(p: Option<PeakMinute>) -> Value {
    p.map_or(
        Value::Null,
        |p| json!({"minute": p.minute, "attempts": p.attempts}),
    )
}

fn projection_json(p: &Projection) -> Value {
    let w = &p.worst_case;
    json!({
        "attempt_window_s": secs(p.attempt_takes),
        "attempts_per_instance": w.count,
        "worst_case_s": w.fails_by.map(secs),
        // What a provider's retry-after can stretch the worst case to (a
        // registered task's; null for a call, or when it cannot).
        "worst_case_retry_after_s": w
            .retry_after_clause()
            .and(w.retry_after.and_then(|r| r.fails_by))
            .map(secs),
        "stop": w.stop.map(|s| s.as_str()),
        "starts_s": w.attempts.iter().map(|a| secs(a.since_first)).collect::<Vec<_>>(),
        "scheduled_per_instance": p.per_instance,
        "scheduled": p.scheduled,
        "after_outage": p.after,
        "given_up": p.given_up,
        "peak_per_minute": peak_json(p.peak),
        "jittered": p.jittered.as_ref().map(|j| json!({
            "jitter": j.jitter,
            "policy_own": j.policy_own,
            "scheduled": j.scheduled,
            "peak_per_minute": peak_json(j.peak),
        })),
    })
}

fn count(n: Option<u64>) -> String {
    n.map_or_else(|| "unbounded".into(), group)
}

fn peak_text(p: Option<PeakMinute>) -> String {
    p.map_or_else(
        || "not computed".into(),
        |p| {
            format!(
                "{} in minute {} (+{})",
                group(p.attempts),
                p.minute,
                compact_ms(p.minute as i64 * 60_000)
            )
        },
    )
}

fn human(
    shown: &str,
    args: &Args,
    outage: Duration,
    nodes: &[projection::NodeProjection],
    old: &Projection,
    old_day: Option<u64>,
) -> String {
    let mut out = format!(
        "{shown}: {} jobs failing together through a {} outage\n\
         (every figure: {LABEL}; what the policy schedules if every attempt runs on time)\n",
        group(args.jobs),
        to_words(outage)
    );
    if nodes.is_empty() {
        out += "\nno <q:retry> in the model's executable processes: each task makes one attempt\n";
    }
    for n in nodes {
        let p = &n.projection;
        let title = match &n.name {
            Some(name) => format!("{} \"{name}\"", n.node),
            None => n.node.clone(),
        };
        out += &format!("\n{title} ({})\n", n.dependency);
        out += &format!("  one failing instance    {}", p.worst_case.base_summary());
        if let Some(e) = p.worst_case.fails_by {
            out += &format!(" ({} s)", group(e.as_secs()));
        }
        if let Some(stop) = p.worst_case.stop {
            out += &format!(", then {}", stop.as_str());
        }
        out += "\n";
        if let Some(more) = p.worst_case.retry_after_clause() {
            out += &format!("  under a retry-after     {more}");
            if let Some(e) = p.worst_case.retry_after.and_then(|r| r.fails_by) {
                out += &format!(" ({} s)", group(e.as_secs()));
            }
            out += "\n";
        }
        let starts: Vec<String> = p
            .worst_case
            .attempts
            .iter()
            .take(12)
            .map(|a| group(a.since_first.as_secs()))
            .collect();
        let more = if p.worst_case.attempts.len() > 12 || !p.worst_case.complete {
            ", …"
        } else {
            ""
        };
        out += &format!("  attempts start at (s)   {}{more}\n", starts.join(", "));
        out += &format!(
            "  during the outage       {} scheduled attempts ({} per instance)\n",
            count(p.scheduled),
            count(p.per_instance)
        );
        match (n.requests_per_attempt, n.requests_scheduled()) {
            (Some(per), Some(total)) => {
                out += &format!(
                    "  remote requests         {} to {} ({} per attempt)",
                    group(total),
                    n.dependency,
                    group(per)
                );
                if let Some(peak) = n.requests_peak() {
                    out += &format!(", up to {} in the busiest minute", group(peak));
                }
                out += "\n";
            }
            _ => {
                out +=
                    "  remote requests         unbounded (deliveries per attempt have no ceiling)\n"
            }
        }
        if p.given_up > 0 {
            out += &format!(
                "  after it                none: the policy gives up on all {} within the outage\n",
                group(p.given_up)
            );
        } else if p.after > 0 {
            out += &format!(
                "  after it                {} (one per instance, the first that can succeed)\n",
                group(p.after)
            );
        }
        out += &format!(
            "  peak per minute         {} (no jitter)\n",
            peak_text(p.peak)
        );
        match &p.jittered {
            Some(j) => {
                let which = if j.policy_own {
                    format!("with its jitter=\"{}\"", j.jitter)
                } else {
                    format!("if it had jitter=\"{}\"", j.jitter)
                };
                out += &format!(
                    "                          {} {which} ({} scheduled)\n",
                    peak_text(j.peak),
                    group(j.scheduled)
                );
            }
            None => out += "                          with jitter: not computed (unbounded, or too many attempts to draw)\n",
        }
    }
    out += "\nbeside it: the unbounded loop (retry every 60 s, forever, no jitter)\n";
    out += &format!(
        "  during the outage       {} scheduled attempts ({} per instance)\n",
        count(old.scheduled),
        count(old.per_instance)
    );
    out += &format!(
        "  a day                   {} scheduled attempts\n",
        count(old_day)
    );
    out += &format!("  peak per minute         {}\n", peak_text(old.peak));
    out
}
