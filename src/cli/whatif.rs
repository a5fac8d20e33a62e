//! `qflow simulate --from DB --model EDITED.bpmn [--process ID]
//! [--deployment N] [--map OLD=NEW] [--json]`: what-if on a live store.
//! The store is opened read-only ([`Store::open_read_only`]); the engine
//! re-decides every parked retry of the process's deployments under the
//! edited model ([`qflow_engine::forecast::what_if`], over the runtime's
//! pure [`qflow_engine::runtime::forecast`]); this module renders it: per
//! instance, the next eligible time and the exhaustion now and under the
//! edit; for the fleet, attempts per minute per dependency both ways (a
//! table with bars) and the exhaustion forecast both ways.

use std::process::ExitCode;

use qflow_engine::forecast::{Report, WhatIfError};
use qflow_engine::runtime::forecast::{Change, DependencyForecast, Exhaustion, HOURS, HOUR_MS};
use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::ramp::Load;
use qflow_engine::store::Store;
use qflow_engine::text::group;
use serde_json::json;

use crate::cli::contain::instant;
use crate::cli::ops::{fail, Format, USAGE};
use crate::cli::run::json_line;
use crate::cli::simulate::Args;

/// Instances listed in the human output (the JSON lists every one).
const INSTANCE_ROWS: usize = 50;
/// Rows of the attempts-per-minute table before spans are grouped.
const MINUTE_ROWS: usize = 40;
/// Width of the longest bar.
const BAR: usize = 24;

pub(crate) fn run(args: &Args) -> ExitCode {
    let format = args.format;
    let (Some(db), Some(path)) = (&args.from, &args.edited) else {
        return fail(
            format,
            USAGE,
            "usage",
            "--from DB needs --model EDITED.bpmn: the edit to re-decide the parks under",
        );
    };
    let mapping = match crate::cli::migrate::parse_map(&args.map) {
        Ok(m) => m,
        Err(m) => return fail(format, USAGE, "usage", m),
    };
    let (shown, _, defs) = match crate::cli::ops::read_definitions(path, format) {
        Ok(read) => read,
        Err(code) => return code,
    };
    let graph = match &args.process {
        Some(id) => Graph::compile_named(&defs, Some(id)).map_err(|e| {
            fail(
                format,
                USAGE,
                "usage",
                format!("--process {id}: {shown}: {}", e.message),
            )
        }),
        None => Graph::compile(&defs).map_err(|e| {
            fail(
                format,
                USAGE,
                "model",
                format!("{shown}: the model cannot run: {e}"),
            )
        }),
    };
    let graph = match graph {
        Ok(g) => g,
        Err(code) => return code,
    };
    if db.sqlite_path().is_some_and(|p| !p.is_file()) {
        return fail(
            format,
            USAGE,
            "store",
            format!("--from {db}: no such database (give the --db the instances run on)"),
        );
    }
    let store = match Store::open_read_only(db) {
        Ok(s) => s,
        Err(e) => {
            return fail(
                format,
                USAGE,
                "store",
                format!(
                    "--from {}",
                    qflow_engine::store::explain::connect_error(db, &e)
                ),
            )
        }
    };
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let report =
        match qflow_engine::forecast::what_if(&store, &graph, args.deployment, &mapping, wall) {
            Ok(r) => r,
            Err(WhatIfError::Mismatch {
                instance,
                deployment,
                problems,
            }) => {
                return fail(
                    format,
                    USAGE,
                    "mismatch",
                    format!(
                        "{shown} does not match deployment {deployment} of the database (instance {instance}): {problems}; nothing was read further and nothing was written"
                    ),
                )
            }
            Err(WhatIfError::NoDeployment(m)) => {
                return fail(format, USAGE, "no-deployment", format!("--from {db}: {m}"))
            }
            Err(WhatIfError::Run(e)) => return fail(format, USAGE, "store", e),
        };
    match format {
        Format::Json => println!("{}", json_line(&json_report(&report, &shown), &["status"])),
        Format::Human => print!("{}", qflow_engine::text::printable(&human(&report, &shown))),
    }
    ExitCode::SUCCESS
}

/// The dependencies of both curves and both forecasts, by name.
fn dependencies(r: &Report) -> Vec<String> {
    let w = &r.what_if;
    let mut names: std::collections::BTreeSet<String> = w
        .load_now
        .per_minute
        .keys()
        .chain(w.load_edit.per_minute.keys())
        .cloned()
        .collect();
    names.extend(
        w.forecast_now
            .dependencies
            .iter()
            .map(|d| d.dependency.clone()),
    );
    names.into_iter().collect()
}

fn curve(l: &Load, d: &str) -> Vec<u64> {
    l.per_minute.get(d).cloned().unwrap_or_default()
}

fn json_report(r: &Report, shown: &str) -> serde_json::Value {
    let w = &r.what_if;
    let count = |c: Change| w.instances.iter().filter(|i| i.change == c).count();
    let deps: Vec<serde_json::Value> = dependencies(r)
        .iter()
        .map(|d| {
            json!({
                "dependency": d,
                "peak_now": w.load_now.peak(d),
                "peak_edit": w.load_edit.peak(d),
                "attempts_now": curve(&w.load_now, d).iter().sum::<u64>(),
                "attempts_edit": curve(&w.load_edit, d).iter().sum::<u64>(),
                "now": curve(&w.load_now, d),
                "edit": curve(&w.load_edit, d),
            })
        })
        .collect();
    json!({
        "status": "what-if",
        "model": shown,
        "process": r.process,
        "deployments": r.deployments,
        "mapping": r.mapping,
        "now_ms": w.now_ms,
        "hours": HOURS,
        "parked": w.instances.len(),
        "earlier": count(Change::Earlier),
        "later": count(Change::Later),
        "same": count(Change::Same),
        "instances": w.instances,
        "attempts_per_minute": deps,
        "exhaustion_forecast_now": w.forecast_now.dependencies,
        "exhaustion_forecast_edit": w.forecast_edit.dependencies,
        "written": false,
    })
}

fn exhaustion_words(e: &Exhaustion) -> String {
    match e {
        Exhaustion::At {
            at_ms,
            reason,
            attempts: 0,
        } => format!("{} ({reason}, no further attempt)", instant(*at_ms)),
        Exhaustion::At { at_ms, reason, .. } => format!("{} ({reason})", instant(*at_ms)),
        Exhaustion::Beyond => "not within a year".into(),
        Exhaustion::Never => "never (the policy does not stop)".into(),
    }
}

fn bar(n: u64, peak: u64) -> String {
    if n == 0 || peak == 0 {
        return String::new();
    }
    let len = ((n as f64 / peak as f64) * BAR as f64).ceil() as usize;
    "#".repeat(len.clamp(1, BAR))
}

fn human(r: &Report, shown: &str) -> String {
    let w = &r.what_if;
    let mut out = format!(
        "what-if of {shown} on {} of process {}: {} from {} (if every attempt keeps failing; nothing is written)\n",
        match r.deployments.as_slice() {
            [one] => format!("deployment {one}"),
            many => format!(
                "deployments {}",
                many.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
            ),
        },
        r.process,
        qflow_engine::text::counted(w.instances.len() as u64, "parked instance", "parked instances"),
        instant(w.now_ms),
    );
    for (from, to) in &r.mapping {
        out += &format!("  node {from} is {to} in the edit\n");
    }
    if w.instances.is_empty() {
        out += "  no retry park is armed: nothing to re-decide\n";
        return out;
    }
    let count = |c: Change| w.instances.iter().filter(|i| i.change == c).count() as u64;
    out += &format!(
        "  under the edit: {} exhaust earlier, {} later, {} the same\n",
        group(count(Change::Earlier)),
        group(count(Change::Later)),
        group(count(Change::Same))
    );
    out += "\nper instance\n";
    let mut rows = vec![];
    for i in w.instances.iter().take(INSTANCE_ROWS) {
        rows.push(vec![
            i.instance.clone(),
            if i.node == i.edit_node {
                i.node.clone()
            } else {
                format!("{} → {}", i.node, i.edit_node)
            },
            i.attempts.to_string(),
            instant(i.next_ms) + if i.held { " (held)" } else { "" },
            match (i.edit_next_ms, i.edit_stop) {
                (Some(t), _) if i.kept => format!("{} (kept)", instant(t)),
                (Some(t), _) => instant(t),
                (None, Some(why)) => format!("none ({why})"),
                (None, None) => "none".into(),
            },
            exhaustion_words(&i.exhausts),
            exhaustion_words(&i.edit_exhausts),
            i.change.as_str().into(),
        ]);
    }
    out += &table(
        &[
            "instance",
            "node",
            "attempts",
            "next now",
            "next edited",
            "exhausts now",
            "exhausts edited",
            "change",
        ],
        &rows,
    );
    if w.instances.len() > INSTANCE_ROWS {
        out += &format!(
            "  … and {} more (--json lists every one)\n",
            group((w.instances.len() - INSTANCE_ROWS) as u64)
        );
    }
    out += &format!(
        "\nattempts per minute, now and edited (the next {HOURS} h; a channel's attempt: one request or more)\n"
    );
    for d in dependencies(r) {
        out += &minute_table(&d, &curve(&w.load_now, &d), &curve(&w.load_edit, &d));
    }
    out += &format!(
        "\nexhaustion forecast: instances reaching FAILED per hour from {} if the dependency stays down\n",
        instant(w.now_ms)
    );
    for d in &w.forecast_now.dependencies {
        let edit = w
            .forecast_edit
            .dependencies
            .iter()
            .find(|e| e.dependency == d.dependency);
        out += &forecast_table(w.now_ms, d, edit);
    }
    out += "nothing was written: the store is as it was\n";
    out
}

/// Aligned columns, two spaces apart, the last unpadded, indented by two.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    crate::cli::ops::table_text(header, rows, "  ")
}

/// One dependency's two curves: a row per minute with an attempt (or,
/// past [`MINUTE_ROWS`] such minutes, per span of minutes showing each
/// curve's busiest minute in it), with bars scaled to the busier peak.
fn minute_table(dependency: &str, now: &[u64], edit: &[u64]) -> String {
    let (pn, pe) = (
        now.iter().max().copied().unwrap_or(0),
        edit.iter().max().copied().unwrap_or(0),
    );
    let peak = pn.max(pe);
    let mut out = format!(
        "  {dependency}: peak {}/min now, {}/min edited; {} attempts now, {} edited\n",
        group(pn),
        group(pe),
        group(now.iter().sum()),
        group(edit.iter().sum())
    );
    let at = |v: &[u64], m: usize| v.get(m).copied().unwrap_or(0);
    let minutes = now.len().max(edit.len());
    let busy: Vec<usize> = (0..minutes)
        .filter(|m| at(now, *m) + at(edit, *m) > 0)
        .collect();
    if busy.is_empty() {
        return out + "    no attempt\n";
    }
    let spans: Vec<(usize, usize)> = if busy.len() <= MINUTE_ROWS {
        busy.iter().map(|m| (*m, *m)).collect()
    } else {
        let width = minutes.div_ceil(MINUTE_ROWS);
        (0..minutes)
            .step_by(width)
            .map(|a| (a, (a + width - 1).min(minutes - 1)))
            .filter(|(a, b)| (*a..=*b).any(|m| at(now, m) + at(edit, m) > 0))
            .collect()
    };
    out += &format!(
        "    {:>11}  {:>7}  {:<BAR$}  {:>7}\n",
        "minute", "now", "", "edited"
    );
    for (a, b) in spans {
        let max = |v: &[u64]| (a..=b).map(|m| at(v, m)).max().unwrap_or(0);
        let (n, e) = (max(now), max(edit));
        let label = if a == b {
            a.to_string()
        } else {
            format!("{a}..{b}")
        };
        let line = format!(
            "    {label:>11}  {:>7}  {:<BAR$}  {:>7}  {}",
            group(n),
            bar(n, peak),
            group(e),
            bar(e, peak)
        );
        out += &format!("{}\n", line.trim_end());
    }
    out
}

/// One dependency's forecast now and edited: a row per hour in which some
/// reach FAILED either way, then those later, never, and held.
fn forecast_table(
    now_ms: i64,
    now: &DependencyForecast,
    edit: Option<&DependencyForecast>,
) -> String {
    let mut out = format!("  {}: {} parked\n", now.dependency, group(now.parked));
    let failed = |d: Option<&DependencyForecast>, h: u32| {
        d.and_then(|d| d.hours.iter().find(|x| x.hour == h))
            .map_or(0, |x| x.failed)
    };
    let mut hours: Vec<u32> = now.hours.iter().map(|h| h.hour).collect();
    if let Some(e) = edit {
        hours.extend(e.hours.iter().map(|h| h.hour));
    }
    hours.sort_unstable();
    hours.dedup();
    if hours.is_empty() {
        out += &format!("    none reaches FAILED within {HOURS} h either way\n");
    } else {
        out += &format!(
            "    {:>5}  {:>12}  {:>7}  {:>7}\n",
            "hour", "from", "now", "edited"
        );
        for h in hours {
            out += &format!(
                "    {h:>5}  {:>12}  {:>7}  {:>7}\n",
                instant(now_ms + i64::from(h) * HOUR_MS),
                group(failed(Some(now), h)),
                group(failed(edit, h))
            );
        }
    }
    let e = |f: fn(&DependencyForecast) -> u64| edit.map_or(0, f);
    out += &format!(
        "    within {HOURS} h: {} now, {} edited; later: {} now, {} edited; never: {} now, {} edited",
        group(now.failed()),
        group(e(DependencyForecast::failed)),
        group(now.later),
        group(e(|d| d.later)),
        group(now.never),
        group(e(|d| d.never)),
    );
    if now.held > 0 {
        out += &format!(
            "; held by a pause or quarantine (no attempt until released): {}",
            group(now.held)
        );
    }
    out + "\n"
}
