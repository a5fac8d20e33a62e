//! The inspector's pages, rendered with maud (every interpolated value is
//! escaped; only the engine's SVG drawing, which escapes its own text, is
//! spliced in as markup). Each page presents what an engine call returns:
//! `inspect::fleet` (deployments, pages of instances, counts per node),
//! `Inspection` (one instance), the store's observations and pauses, the
//! engine's diagram and its state.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use qflow_engine::diagram::{self, svg::svg};
use qflow_engine::duration::compact_ms;
use qflow_engine::inspect::fleet::{self, Search};
use qflow_engine::inspect::{AttemptResult, Inspection, InstanceSummary, Waiting};
use qflow_engine::instance::Status;
use qflow_engine::store::stats::LOAD_WINDOW_MINUTES;
use qflow_engine::store::{DeploymentRow, Store, StoreError};

use super::http::{encode, Request};
use super::Ui;

/// The highest page number taken (50 billion instances).
const MAX_PAGE: u64 = 1_000_000_000;

/// FAILED instances the fleet page links at once, the most recent.
const RECENT_FAILURES: u64 = 10;

/// The span of the attempts chart, at most.
const DAY_MINUTES: i64 = 24 * 60;

/// Instances on one page of the list.
pub(crate) const PAGE_SIZE: u64 = 50;

/// Deployments drawn on the fleet page, at most (the most recent that
/// have instances).
const DIAGRAMS: usize = 6;

pub(crate) fn layout(ui: &Ui, title: &str, here: &str, body: Markup) -> String {
    let p = ui.prefix;
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · qflow" }
                link rel="stylesheet" href={(p) "/app.css"};
                script src={(p) "/app.js"} defer {}
            }
            body {
                header.top {
                    strong { "qflow" }
                    a class=[(here == "fleet").then_some("here")] href={(p) "/"} { "Fleet" }
                    a class=[(here == "instances").then_some("here")] href={(p) "/instances"} { "Instances" }
                    span.mode { @if ui.actions { "actions on" } @else { "read-only" } }
                    span.db { (ui.db_shown) }
                }
                main { (body) }
            }
        }
    }
    .into_string()
}

/// An instant on the instances' clock: wall-clock times as RFC 3339, a
/// virtual run's small numbers as an offset.
pub(crate) fn when(ms: i64) -> String {
    // Up to the year 9999 (RFC 3339's last); past it, the number itself.
    if ms > 253_402_300_799_999 {
        return format!("{ms} ms");
    }
    if ms > 100_000_000_000 {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
        humantime::format_rfc3339_seconds(t).to_string()
    } else {
        format!("+{}", compact_ms(ms))
    }
}

fn status_badge(s: Status) -> Markup {
    html! { span class={"status " (s.as_str())} { (s.as_str().to_uppercase()) } }
}

fn instance_link(ui: &Ui, id: &str) -> Markup {
    html! { a.mono href={(ui.prefix) "/instances/" (encode(id))} { (id) } }
}

/// The live part of the fleet page: counts per node on each diagram, the
/// dependencies' load. Sent again on every change by the event stream.
pub(crate) fn fleet_live(ui: &Ui, store: &Store) -> Result<Markup, StoreError> {
    fleet_live_with(ui, store, &store.observations()?)
}

fn fleet_live_with(
    ui: &Ui,
    store: &Store,
    o: &qflow_engine::store::stats::Observations,
) -> Result<Markup, StoreError> {
    let deployments = fleet::deployments(store)?;
    let per_minute = store.attempts_per_minute()?;
    let load = store.load_window(LOAD_WINDOW_MINUTES)?;
    let failed: u64 = deployments.iter().map(|d| u64::from(d.counts.failed)).sum();
    let waiting: u64 = deployments
        .iter()
        .map(|d| u64::from(d.counts.waiting))
        .sum();
    let p = ui.prefix;
    let mut drawn: Vec<&DeploymentRow> = deployments
        .iter()
        .filter(|d| d.counts.total() > 0)
        .collect();
    drawn.reverse();
    drawn.truncate(DIAGRAMS);
    let recent = latest_failures(store)?;
    let mut diagrams = Vec::new();
    for d in &drawn {
        let counts = fleet::node_counts(store, d.id)?;
        let drawing = diagram::of_deployment(store, d.id).map(|dg| {
            svg(
                &dg,
                Some(&qflow_engine::diagram::state_of_counts(
                    &d.process_id,
                    &counts,
                )),
            )
        });
        diagrams.push((d, counts, drawing));
    }
    Ok(html! {
        div.cards {
            div.card { div.n data-count="instances" { (o.instances) } div.muted { "instances" } }
            div.card.parked { div.n data-count="waiting" { (waiting) } div.muted { "waiting" } }
            div.card.failed { div.n data-count="failed" { (failed) } div.muted { a href={(p) "/instances?status=failed"} { "failed" } } }
            div.card.ok { div.n data-count="completed" { (o.completed) } div.muted { "completed" } }
            div.card { div.n { (o.attempts) } div.muted { "attempts" } }
            div.card { div.n { (o.unknown_outcomes) } div.muted { "unknown outcomes" } }
            div.card { div.n { (o.quarantined) } div.muted { "quarantined" } }
        }
        @for (d, counts, drawing) in &diagrams {
            h2 {
                "Deployment " (d.id) ": " (d.process_id) " "
                a href={(p) "/instances?deployment=" (d.id)} { "its instances" }
            }
            p.muted {
                (counts.running) " running · " (counts.waiting) " waiting · "
                a href={(p) "/instances?deployment=" (d.id) "&status=failed"} { (counts.failed) " failed" }
                " · " (counts.completed) " completed. On the diagram, per node: waiting, parked for a retry, awaiting a reconciliation and failed (both an open incident); on each end event, the instances that completed there."
            }
            @if ui.actions && counts.failed > 0 {
                p.actions { a href={(p) "/actions/migrate-all?deployment=" (d.id)} { "repair all " (counts.failed) " FAILED instances by migration…" } }
            }
            @if let Some(s) = drawing {
                div.diagram { (PreEscaped(s)) }
                @let busy: Vec<_> = counts.nodes.iter().collect();
                @if !busy.is_empty() {
                    table {
                        tr { th { "node" } th.num { "waiting" } th.num { "parked for a retry" } th.num { "to reconcile" } th.num { "failed" } th.num { "completed here" } }
                        @for (node, c) in busy {
                            tr {
                                td { a href={(p) "/instances?deployment=" (d.id) "&node=" (encode(node))} { (node) } }
                                td.num { (c.waiting) } td.num { (c.parked) } td.num { (c.reconcile) }
                                td.num { @if c.failed > 0 { a href={(p) "/instances?deployment=" (d.id) "&status=failed&node=" (encode(node))} { (c.failed) } } @else { "0" } }
                                td.num data-completed=(c.completed) { (c.completed) }
                            }
                        }
                    }
                }
            } @else {
                p.error { "This deployment's source no longer loads: it cannot be drawn." }
            }
        }
        @if !recent.is_empty() {
            h2 { "Latest failures" }
            table #recent-failures {
                tr { th { "instance" } th { "deployment" } th { "node" } th.num { "attempts" } th { "failure" } }
                @for i in recent.iter().rev() {
                    tr {
                        td { (instance_link(ui, &i.id)) }
                        td { (i.deployment_id) ": " (i.process) }
                        td { (i.node.as_deref().unwrap_or("")) }
                        td.num { @if let Some(a) = i.attempts { (a) } }
                        td {
                            @if let Some(c) = &i.failure_code { code { (c) } }
                            @if let Some(r) = &i.failure_reason { " " (r) }
                            @if let Some(m) = &i.failure_message { ": " span.message { (m) } }
                        }
                    }
                }
            }
            @if failed > recent.len() as u64 {
                p { a href={(p) "/instances?status=failed"} { "all " (failed) " failed instances" } }
            }
        }
        h2 { "Dependencies" }
        @if o.by_dependency.is_empty() {
            p.muted { "No attempt recorded yet." }
        } @else {
            table {
                tr { th { "dependency" } th.num { "attempts" } th.num { "peak per minute" } th.num { "mean per minute" } th { "first" } th { "last" } th { "paused" } }
                @for l in &o.by_dependency {
                    tr {
                        td { a href={(p) "/instances?dependency=" (encode(&l.dependency))} { (l.dependency) } }
                        td.num { (l.attempts) } td.num { (l.peak_per_minute) }
                        td.num { (format!("{:.1}", l.mean_per_minute)) }
                        td { (when(l.first_ms)) } td { (when(l.last_ms)) }
                        td { @if o.paused.iter().any(|x| x.value == l.dependency) { "paused" } }
                    }
                }
            }
        }
        (load_per_minute(&load))
        h3 { "Attempts over time (all dependencies)" }
        (bars(&per_minute))
    })
}

/// The live load per dependency: for each, its attempts and requests per
/// minute over the window the store read ([`LOAD_WINDOW_MINUTES`]), as numbers
/// and as a pair of bars per minute.
fn load_per_minute(load: &qflow_engine::store::stats::LoadWindow) -> Markup {
    let (Some(first), Some(last)) = (load.first_minute, load.last_minute) else {
        return html! {
            h3 #load-per-minute { "Attempts and requests per minute per dependency" }
            p.muted { "No decision recorded yet." }
        };
    };
    html! {
        h3 #load-per-minute {
            "Attempts and requests per minute per dependency, the last " (load.minutes) " minutes"
        }
        p.muted {
            "From " (when(first * 60_000)) " to the minute of the store's latest decision, "
            (when(last * 60_000)) " (the minute starting then). A request is a task's attempt or a channel's delivery."
        }
        @if load.dependencies.is_empty() {
            p.muted { "No attempt or request in these " (load.minutes) " minutes." }
        } @else {
            table #load-table {
                tr {
                    th { "dependency" }
                    th.num { "attempts, " (load.minutes) " min" }
                    th.num { "requests, " (load.minutes) " min" }
                    th.num { "requests, last minute" }
                    th.num { "peak requests per minute" }
                    th { "per minute (attempts, requests)" }
                }
                @for d in &load.dependencies {
                    tr data-dependency=(d.dependency) {
                        td { (d.dependency) }
                        td.num data-attempts=(d.attempts()) { (d.attempts()) }
                        td.num data-requests=(d.requests()) { (d.requests()) }
                        td.num data-last-minute=(d.latest_requests()) { (d.latest_requests()) "/min" }
                        td.num { (d.peak_requests()) "/min" }
                        td { (minute_pairs(first, d)) }
                    }
                }
            }
        }
    }
}

/// A dependency's attempts and requests per minute: two thin bars per
/// minute of the window, one scale (the higher peak), ticks every 15 min.
fn minute_pairs(first: i64, d: &qflow_engine::store::stats::MinuteLoad) -> Markup {
    let n = d.requests_per_minute.len();
    let peak = d
        .requests_per_minute
        .iter()
        .chain(&d.attempts_per_minute)
        .copied()
        .max()
        .unwrap_or(0)
        .max(1);
    let (step, h) = (8usize, 60i64);
    let w = 46 + n * step;
    let height = |v: u64| (v as f64 / peak as f64 * h as f64).round() as i64;
    html! {
        svg.pairs width=(w) height="92" viewBox={"0 0 " (w) " 92"} role="img"
            aria-label={(d.dependency) ": attempts and requests per minute"} {
            text x="2" y="10" { (peak) "/min" }
            text x="2" y=(h + 6) { "0" }
            @for k in 0..n {
                @let a = d.attempts_per_minute[k];
                @let r = d.requests_per_minute[k];
                @let x = 40 + k * step;
                @let m = first + k as i64;
                rect.attempts x=(x) y=(h + 6 - height(a)) width="3" height=(height(a)) {
                    title { (when(m * 60_000)) ": " (a) " attempts, " (r) " requests" }
                }
                rect.requests x=(x + 3) y=(h + 6 - height(r)) width="3" height=(height(r)) {
                    title { (when(m * 60_000)) ": " (a) " attempts, " (r) " requests" }
                }
                @if k % 15 == 0 {
                    text x=(x) y=(h + 18) { (when(m * 60_000)) }
                }
            }
            rect.attempts x="40" y="82" width="8" height="8" {}
            text x="50" y="90" { "attempts" }
            rect.requests x="100" y="82" width="8" height="8" {}
            text x="110" y="90" { "requests, per minute" }
        }
    }
}

/// What the fleet page's load, pauses, breakers and ramps present, as
/// JSON (`/ui/fleet.json`): the same engine reads, unrendered.
pub(crate) fn fleet_json(store: &Store) -> Result<serde_json::Value, StoreError> {
    let o = store.observations()?;
    let releases: Vec<_> = store
        .releases()?
        .into_iter()
        .filter(|r| r.in_force())
        .collect();
    Ok(serde_json::json!({
        "load_window": store.load_window(LOAD_WINDOW_MINUTES)?,
        "paused": o.paused,
        "breakers": store.breakers()?,
        "releases_in_force": releases,
    }))
}

/// The most recent FAILED instances, oldest first (the list's order).
fn latest_failures(store: &Store) -> Result<Vec<InstanceSummary>, StoreError> {
    let mut filter = fleet::Filter {
        status: Some(Status::Failed),
        limit: Some(0),
        ..fleet::Filter::default()
    };
    let total = fleet::instances(store, &filter)?.total;
    filter.offset = total.saturating_sub(RECENT_FAILURES);
    filter.limit = Some(RECENT_FAILURES);
    Ok(fleet::instances(store, &filter)?.instances)
}

/// Attempts per minute as bars: one bar per minute, or per declared
/// bucket of minutes when the record spans more than 60 (the axis says
/// which), the axis labelled in minutes on the instances' clock.
fn bars(per_minute: &std::collections::BTreeMap<i64, u64>) -> Markup {
    let (Some(&first), Some(&last)) = (per_minute.keys().next(), per_minute.keys().next_back())
    else {
        return html! { p.muted { "No attempt recorded yet." } };
    };
    // The last day of the record at most: a store whose older minutes are
    // on another clock (a simulation's, beside a server's) still reads.
    let cut = first < last - DAY_MINUTES + 1;
    let first = first.max(last - DAY_MINUTES + 1);
    let per_minute: std::collections::BTreeMap<i64, u64> =
        per_minute.range(first..).map(|(m, n)| (*m, *n)).collect();
    let per_minute = &per_minute;
    let bucket = ((last - first + 1) as u64).div_ceil(60).max(1) as i64;
    let mut sums: std::collections::BTreeMap<i64, u64> = std::collections::BTreeMap::new();
    for (m, n) in per_minute {
        *sums.entry((m - first) / bucket).or_default() += n;
    }
    let count = ((last - first) / bucket + 1) as usize;
    let peak = sums.values().copied().max().unwrap_or(1).max(1);
    let (w, h, bw) = (60 + count * 12, 150, 10);
    let unit = if bucket == 1 {
        "min".to_string()
    } else {
        format!("{bucket} min")
    };
    html! {
        svg.bars width=(w) height=(h) viewBox={"0 0 " (w) " " (h)} role="img" aria-label={"attempts per " (unit)} {
            text x="2" y="12" { (peak) " per " (unit) }
            text x="2" y="118" { "0" }
            @for k in 0..count {
                @let n = sums.get(&(k as i64)).copied().unwrap_or(0);
                @let bh = (n as f64 / peak as f64 * 100.0) as i64;
                @let x = 40 + k * 12;
                @let m = first + k as i64 * bucket;
                rect x=(x) y=(118 - bh) width=(bw) height=(bh) { title { "from minute " (m) ": " (n) " attempts" } }
                @if k % 10 == 0 {
                    text x=(x) y="134" { (when(m * 60_000)) }
                }
            }
            text x="40" y="148" { "one bar per " (unit) " of the store's clock" @if cut { ", the last 24 h recorded" } }
        }
    }
}

pub(crate) fn fleet_page(ui: &Ui, store: &Store) -> Result<String, StoreError> {
    let o = store.observations()?;
    let live = fleet_live_with(ui, store, &o)?;
    let deployments = fleet::deployments(store)?;
    let causes = store.parked_by_cause()?;
    let quarantined = store.quarantined()?;
    // The exhaustion forecast, on the full page only (the live fragment is
    // redrawn often; the forecast steps every park).
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let (forecast, _) = qflow_engine::forecast::fleet(store, wall)?;
    let breakers = store.breakers()?;
    let moves = store.breaker_transitions(10)?;
    let ramps: Vec<_> = store
        .releases()?
        .into_iter()
        .filter(|r| r.in_force())
        .collect();
    let p = ui.prefix;
    let body = html! {
        h1 { "Fleet" }
        p.live-state #live-state { "live" }
        div #live data-live={(p) "/events?view=fleet"} { (live) }
        h2 { "Deployments" }
        table {
            tr { th.num { "id" } th { "process" } th { "from" } th { "deployed" } th { "retired" } th.num { "running" } th.num { "waiting" } th.num { "completed" } th.num { "failed" } }
            @for d in deployments.iter().rev() {
                tr {
                    td.num { a href={(p) "/instances?deployment=" (d.id)} { (d.id) } }
                    td { (d.process_id) }
                    td.mono { (d.origin.as_deref().unwrap_or("")) }
                    td { (when(d.deployed_ms)) }
                    td { @if let Some(r) = d.retired_ms { (when(r)) } }
                    td.num { (d.counts.running) } td.num { (d.counts.waiting) } td.num { (d.counts.completed) }
                    td.num { @if d.counts.failed > 0 { a href={(p) "/instances?deployment=" (d.id) "&status=failed"} { (d.counts.failed) } } @else { "0" } }
                }
            }
        }
        h2 { "Observations" }
        table {
            tr { th { "unfinished" } td.num { (o.unfinished) } }
            tr { th { "completed" } td.num { (o.completed) } }
            tr { th { "attempts per completed instance" } td.num { @if let Some(a) = o.attempts_per_completed { (format!("{a:.2}")) } @else { "—" } } }
            tr { th { "oldest next eligible" } td { @if let Some(t) = o.oldest_next_eligible_ms { (when(t)) } @else { "—" } } }
            tr { th { "unknown outcomes (open reconciliations)" } td.num { (o.unknown_outcomes) } }
        }
        @if !o.pending_by_class.is_empty() {
            h3 { "Unfinished by the class of their last failure" }
            table { @for c in &o.pending_by_class { tr { td { (c.label) } td.num { (c.count) } } } }
        }
        @if !o.terminal.is_empty() {
            h3 { "Failures" }
            table {
                tr { th { "code" } th { "reason" } th.num { "instances" } }
                @for t in &o.terminal {
                    tr {
                        td.mono { a href={(p) "/instances?status=failed&code=" (encode(&t.code))} { (t.code) } }
                        td { (t.reason) }
                        td.num { (t.count) }
                    }
                }
            }
        }
        @if !o.backlog_age.is_empty() {
            h3 { "Backlog by age" }
            table { @for c in &o.backlog_age { tr { td { (c.label) } td.num { (c.count) } } } }
        }
        h2 { "Pauses in force" }
        @if o.paused.is_empty() {
            p.muted { "None." }
        } @else {
            table {
                tr { th { "paused" } th { "since" } th { "by" } th.num { "parks held" } @if ui.actions { th {} } }
                @for x in &o.paused {
                    tr {
                        td { (x.kind.flag()) " " (x.value) }
                        td { (when(x.paused_ms)) }
                        td { (qflow_engine::store::contain::Actor::words(x.by.as_deref(), x.reason.as_deref())) }
                        td.num { (x.holding) }
                        @if ui.actions { td { a href={(p) "/actions/unpause?kind=" (x.kind.flag()) "&value=" (encode(&x.value))} { "unpause…" } } }
                    }
                }
            }
        }
        h3 #breakers { "Circuit breakers" }
        @if breakers.is_empty() {
            p.muted { "None declared, or none has seen an attempt yet." }
        } @else {
            table #breakers-table {
                tr { th { "dependency" } th { "phase" } th { "since" } th.num { "opened" } th { "latest moves" } }
                @for b in &breakers {
                    tr data-dependency=(b.dependency) {
                        td { (b.dependency) }
                        td { (b.state.phase.as_str()) }
                        td { (when(b.state.since_ms)) }
                        td.num { (b.state.opened) }
                        td {
                            @for m in moves.iter().filter(|m| m.dependency == b.dependency) {
                                div { (when(m.at_ms)) " " (m.from.as_str()) " → " (m.to.as_str()) ": " (m.reason) @if let Some(r) = m.release { " (release ramp " (r) ")" } }
                            }
                        }
                    }
                }
            }
        }
        h3 #ramps { "Release ramps in force" }
        @if ramps.is_empty() {
            p.muted { "None: no ramp is letting parks go." }
        } @else {
            table #ramps-table {
                tr { th.num { "ramp" } th { "releases" } th { "shape" } th.num { "let go" } th.num { "waiting" } th { "next" } th { "last" } th { "by" } }
                @for r in &ramps {
                    tr {
                        td.num { (r.id) }
                        td { (qflow_engine::release::target_words(r.kind, &r.value)) }
                        td { (r.shape_words()) }
                        td.num { (r.parks) }
                        td.num data-waiting=(r.waiting) { (r.waiting) }
                        td { @if let Some(n) = r.next_ms { (when(n)) } }
                        td { (when(r.end_ms)) }
                        td { (qflow_engine::store::contain::Actor::words(Some(r.by.as_str()), r.reason.as_deref())) }
                    }
                }
            }
        }
        h3 { "Retry parks by cause (what a pause would hold)" }
        @if causes.is_empty() {
            p.muted { "No retry park is armed." }
        } @else {
            table {
                tr { th { "cause" } th.num { "parks" } @if ui.actions { th {} } }
                @for c in &causes {
                    tr {
                        td { (c.kind.flag()) " " (c.value) }
                        td.num { (c.parks) }
                        @if ui.actions { td { a href={(p) "/actions/pause?kind=" (c.kind.flag()) "&value=" (encode(&c.value))} { "pause…" } } }
                    }
                }
            }
        }
        h3 #exhaustion-forecast { "Exhaustion forecast: parked instances reaching FAILED per hour if every attempt keeps failing" }
        @if forecast.dependencies.is_empty() {
            p.muted { "No retry park is armed." }
        } @else {
            table {
                tr { th { "dependency" } th.num { "hour" } th { "from" } th.num { "reach FAILED" } }
                @for d in &forecast.dependencies {
                    @for h in &d.hours {
                        tr { td { (d.dependency) } td.num { (h.hour) } td { (when(h.hour_start_ms)) } td.num data-failed=(h.failed) { (h.failed) } }
                    }
                    tr.muted {
                        td { (d.dependency) }
                        td colspan="3" {
                            (d.failed()) " of " (d.parked) " within " (forecast.hours) " h; "
                            (d.later) " later; " (d.never) " never; " (d.held) " held by a pause or quarantine"
                        }
                    }
                }
            }
        }
        h2 { "Quarantined" }
        @if quarantined.is_empty() {
            p.muted { "None." }
        } @else {
            table {
                tr { th { "instance" } th { "since" } th { "by" } }
                @for q in &quarantined {
                    tr { td { (instance_link(ui, &q.instance)) } td { (when(q.at_ms)) } td { (qflow_engine::store::contain::Actor::words(q.by.as_deref(), q.reason.as_deref())) } }
                }
            }
        }
    };
    Ok(layout(ui, "Fleet", "fleet", body))
}

/// The list's filters as the query string has them.
pub(crate) struct ListQuery {
    pub search: Search,
    pub page: u64,
    /// The fields as given, kept in the form and the pager's links.
    pub given: Vec<(&'static str, String)>,
}

/// An instant of `from`/`to`: RFC 3339, or ms on the instances' clock.
fn instant(field: &str, v: &str) -> Result<i64, String> {
    if let Ok(ms) = v.parse::<i64>() {
        return Ok(ms);
    }
    humantime::parse_rfc3339_weak(v)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .ok_or_else(|| {
            format!("{field}={v}: write an instant as 2026-05-01T12:00:00Z (or ms on the instances' clock)")
        })
}

impl ListQuery {
    pub(crate) fn parse(req: &Request) -> Result<ListQuery, String> {
        let mut search = Search::default();
        let mut given = Vec::new();
        for name in [
            "status",
            "deployment",
            "node",
            "code",
            "class",
            "dependency",
            "from",
            "to",
        ] {
            if let Some(v) = req.q(name) {
                given.push((name, v.to_string()));
            }
        }
        if let Some(s) = req.q("status") {
            search.store.status = Some(Status::parse(s).ok_or_else(|| {
                format!("status={s}: one of running, waiting, completed, failed")
            })?);
        }
        if let Some(d) = req.q("deployment") {
            search.store.deployment = Some(
                d.parse()
                    .map_err(|_| format!("deployment={d}: a deployment's number"))?,
            );
        }
        search.store.class = req.q("class").map(str::to_string);
        search.store.dependency = req.q("dependency").map(str::to_string);
        search.node = req.q("node").map(str::to_string);
        search.code = req.q("code").map(str::to_string);
        search.started_from_ms = req.q("from").map(|v| instant("from", v)).transpose()?;
        search.started_before_ms = req.q("to").map(|v| instant("to", v)).transpose()?;
        let page = match req.q("page") {
            None => 1,
            Some(p) => p
                .parse::<u64>()
                .ok()
                .filter(|&p| (1..=MAX_PAGE).contains(&p))
                .ok_or_else(|| format!("page={p}: a page number from 1 to {MAX_PAGE}"))?,
        };
        search.store.offset = (page - 1) * PAGE_SIZE;
        search.store.limit = Some(PAGE_SIZE);
        Ok(ListQuery {
            search,
            page,
            given,
        })
    }

    fn link(&self, ui: &Ui, page: u64) -> String {
        let mut q: Vec<String> = self
            .given
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect();
        q.push(format!("page={page}"));
        format!("{}/instances?{}", ui.prefix, q.join("&"))
    }

    fn given(&self, name: &str) -> &str {
        self.given
            .iter()
            .find(|(k, _)| *k == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

pub(crate) fn instances_page(ui: &Ui, store: &Store, q: &ListQuery) -> Result<String, StoreError> {
    let page = fleet::search(store, &q.search)?;
    let deployments = fleet::deployments(store)?;
    let dependencies = qflow_engine::dependencies::dependencies(store)?;
    let pages = page.total.div_ceil(PAGE_SIZE).max(1);
    let first = q.search.store.offset + 1;
    let last = q.search.store.offset + page.instances.len() as u64;
    let p = ui.prefix;
    let body = html! {
        h1 { "Instances" }
        form.filters method="get" action={(p) "/instances"} {
            label { "status"
                select name="status" {
                    option value="" { "any" }
                    @for s in ["running", "waiting", "completed", "failed"] {
                        option value=(s) selected[q.given("status") == s] { (s) }
                    }
                }
            }
            label { "deployment"
                select name="deployment" {
                    option value="" { "any" }
                    @for d in &deployments {
                        @let id = d.id.to_string();
                        option value=(id) selected[q.given("deployment") == id] { (d.id) ": " (d.process_id) }
                    }
                }
            }
            label { "node" input name="node" value=(q.given("node")) size="14"; }
            label { "failure code" input name="code" value=(q.given("code")) size="18" placeholder="q.retry.exhausted"; }
            label { "class (parked)"
                select name="class" {
                    option value="" { "any" }
                    @for c in ["transient", "rate-limited"] { option value=(c) selected[q.given("class") == c] { (c) } }
                }
            }
            label { "dependency (parked)"
                select name="dependency" {
                    option value="" { "any" }
                    @for d in &dependencies { option value=(d) selected[q.given("dependency") == d.as_str()] { (d) } }
                }
            }
            label { "created from" input name="from" value=(q.given("from")) size="20" placeholder="2026-05-01T12:00:00Z"; }
            label { "created before" input name="to" value=(q.given("to")) size="20"; }
            button type="submit" { "Filter" }
            a href={(p) "/instances"} { "clear" }
        }
        div.pager {
            @if page.total == 0 {
                span { "No instance passes these filters." }
            } @else {
                span #range { (first) "–" (last) " of " (page.total) }
            }
            @if q.page > 1 {
                a href=(q.link(ui, 1)) { "« first" }
                a rel="prev" href=(q.link(ui, q.page - 1)) { "‹ previous" }
            }
            span { "page " (q.page) " of " (pages) }
            @if q.page < pages {
                a rel="next" href=(q.link(ui, q.page + 1)) { "next ›" }
                a href=(q.link(ui, pages)) { "last »" }
            }
        }
        table #instances {
            tr { th { "instance" } th { "deployment" } th { "status" } th { "node" } th.num { "attempts" } th { "waits for" } th { "failure" } th { "held" } }
            @for i in &page.instances { (summary_row(ui, i)) }
        }
    };
    Ok(layout(ui, "Instances", "instances", body))
}

fn summary_row(ui: &Ui, i: &InstanceSummary) -> Markup {
    html! {
        tr {
            td { (instance_link(ui, &i.id)) }
            td { (i.deployment_id) ": " (i.process) }
            td { (status_badge(i.status)) @if i.quarantined_ms.is_some() { " quarantined" } }
            td { (i.node.as_deref().unwrap_or("")) }
            td.num { @if let Some(a) = i.attempts { (a) } }
            td { (i.waiting_for.as_deref().unwrap_or("")) @if let Some(n) = i.next_ms { " at +" (compact_ms(n)) } }
            td {
                @if let Some(c) = &i.failure_code { code { (c) } }
                @if let Some(r) = &i.failure_reason { " " (r) }
                            @if let Some(m) = &i.failure_message { ": " span.message { (m) } }
                @if let Some(u) = &i.unreadable { span.message { (u) } }
            }
            td { @for h in &i.held_by { (h.pause()) " " } }
        }
    }
}

/// The live part of an instance's page: its status, diagram and state.
pub(crate) fn instance_live(ins: &Inspection, store: &Store) -> Markup {
    let drawing = diagram::of_deployment(store, ins.deployment_id).map(|d| {
        let state = qflow_engine::diagram::state_of(&d, ins);
        svg(&d, Some(&state))
    });
    html! {
        p { (status_badge(ins.status)) " last decision " (when(ins.updated_ms))
            @if let Some(Waiting::Timer { node, purpose, due_ms }) = &ins.waiting {
                " · waits at " code { (node) } " for " (qflow_engine::inspect::waiting_for(*purpose)) " at +" (compact_ms(*due_ms))
            }
            @if let Some(Waiting::Reconciliation { node, .. }) = &ins.waiting {
                " · waits at " code { (node) } " for a reconciliation of its unknown outcome"
            }
        }
        @if let Some(s) = drawing { div.diagram { (PreEscaped(s)) } }
    }
}

pub(crate) fn instance_page(ui: &Ui, store: &Store, ins: &Inspection) -> String {
    let p = ui.prefix;
    let id = encode(&ins.id);
    let body = html! {
        h1 { "Instance " span.mono #instance-id { (ins.id) } " " (status_badge(ins.status)) }
        p.muted {
            "process " (ins.process) " · "
            a href={(p) "/instances?deployment=" (ins.deployment_id)} { "deployment " (ins.deployment_id) }
            " · started " (when(ins.started_ms))
        }
        @if let Some(f) = ins.failure.as_ref().filter(|_| ins.status == Status::Failed) {
            div.error #failure {
                strong { "FAILED at " code { (f.node) } ": " code { (f.code) } }
                p { (f.reason) }
                @if let Some(m) = &f.message { p { "last attempt's message: " span.message #failure-message { (m) } } }
                @if let Some(c) = &f.class { p { "class: " (c) } }
                @if let Some(a) = f.attempts { p { (a) " attempts" @if let Some(t) = &f.task { " of " code { (t) } } } }
            }
        }
        @if let Some(q) = ins.quarantined_ms {
            div.notice { "Quarantined since " (when(q)) " " (qflow_engine::store::contain::Actor::words(ins.quarantined_by.as_deref(), ins.quarantine_reason.as_deref())) ": nothing decides for it until it is released." }
        }
        @for h in &ins.held {
            div.notice { (h.request.words()) " of " code { (h.node) } " is held by the pause of " (h.pause()) " " (h.by()) }
        }
        @if ui.actions {
            div.actions {
                @if ins.quarantined_ms.is_some() {
                    a href={(p) "/actions/release?instance=" (id)} { "release…" }
                } @else if !matches!(ins.status, Status::Completed | Status::Failed) {
                    a href={(p) "/actions/quarantine?instance=" (id)} { "quarantine…" }
                }
                @if ins.status == Status::Failed {
                    a #migrate-link href={(p) "/actions/migrate?instance=" (id)} { "repair by migration…" }
                }
                @if matches!(ins.waiting, Some(Waiting::Reconciliation { .. })) {
                    a href={(p) "/actions/resolve?instance=" (id)} { "resolve the unknown outcome…" }
                }
            }
        }
        p.live-state #live-state { "live" }
        div #live data-live={(p) "/events?view=instance&id=" (id)} { (instance_live(ins, store)) }
        h2 { "Attempts" }
        @if ins.schedules.is_empty() { p.muted { "No node with a retry policy has started." } }
        @for s in &ins.schedules {
            h3 { code { (s.node) } " · " (s.policy) }
            table.timeline {
                tr { th.num { "attempt" } th { "at" } th { "result" } th { "class" } th { "message" } }
                @for a in &s.done {
                    tr {
                        td.num { (a.n) }
                        td { "+" (compact_ms(a.at_ms)) }
                        @match &a.result {
                            AttemptResult::Succeeded => { td { "succeeded" } td {} td {} }
                            AttemptResult::Pending => { td { "pending" } td {} td {} }
                            AttemptResult::Failed { code, class } => {
                                td { code { (code) } } td { (class) }
                                td { @if let Some(m) = a.message.as_ref().or_else(|| ins.failure.as_ref().filter(|f| f.node == s.node && f.attempts == Some(a.n)).and_then(|f| f.message.as_ref())) {
                                    span.message { (m) }
                                } }
                            }
                        }
                    }
                }
            }
            @if !s.planned.is_empty() {
                p { "Still to come if each fails: "
                    @for (k, a) in s.planned.iter().enumerate() {
                        @if k > 0 { ", " }
                        "attempt " (a.n) " at +" (compact_ms(a.at_ms))
                    }
                }
            }
        }
        h2 { "Timers" }
        @if ins.timers.is_empty() { p.muted { "None." } } @else {
            table {
                tr { th { "node" } th { "purpose" } th { "due" } th.num { "attempt" } th { "state" } }
                @for t in &ins.timers {
                    tr { td { (t.node) } td { (t.purpose.as_str()) } td { "+" (compact_ms(t.due_ms)) } td.num { @if let Some(a) = t.attempt { (a) } } td { @if t.armed { "armed" } @else { "resolved" } } }
                }
            }
        }
        h2 { "Outbox" }
        @if ins.outbox.is_empty() { p.muted { "None." } } @else {
            table {
                tr { th { "node" } th { "channel" } th.num { "attempt" } th { "state" } th.num { "deliveries" } th { "idempotency key" } th { "reason" } }
                @for o in &ins.outbox {
                    tr { td { (o.node) } td { (o.channel) } td.num { (o.attempt) } td { (o.state.as_str()) } td.num { (o.deliveries) } td.mono { (o.idempotency_key) } td { (o.reason.as_deref().unwrap_or("")) } }
                }
            }
        }
        h2 { "Correlations" }
        @if ins.correlations.is_empty() { p.muted { "None." } } @else {
            table {
                tr { th { "key" } th { "node" } th { "in a backoff window" } }
                @for c in &ins.correlations { tr { td.mono { (c.key) } td { (c.node) } td { @if c.in_backoff { "yes" } @else { "no" } } } }
            }
        }
        h2 { "Incidents" }
        @if ins.incidents.is_empty() { p.muted { "None." } } @else {
            table {
                tr { th { "node" } th { "kind" } th { "message" } th { "opened" } th { "closed" } }
                @for i in &ins.incidents {
                    tr { td { (i.node) } td { (i.kind) } td.message { (i.message) } td { "+" (compact_ms(i.opened_ms)) } td { @if let Some(c) = i.closed_ms { "+" (compact_ms(c)) } @else { "open" } } }
                }
            }
        }
        h2 { "Snapshot" }
        @if let Some(raw) = &ins.raw_snapshot { pre { (raw) } } @else {
            table {
                tr { th { "key" } th { "value" } }
                @for k in &ins.snapshot { tr { td.mono { (k.key) } td.mono { (k.value) } } }
            }
        }
        h2 { "History" }
        table #history {
            tr { th.num { "seq" } th { "at" } th { "kind" } th { "node" } th.num { "attempt" } th { "code" } th { "line" } }
            @for h in &ins.history {
                tr {
                    td.num { (h.seq) } td { "+" (compact_ms(h.at_ms)) } td { (h.kind) } td { (h.node.as_deref().unwrap_or("")) }
                    td.num { @if let Some(a) = h.attempt { (a) } } td.mono { (h.code.as_deref().unwrap_or("")) }
                    td.mono { @if let Some(l) = &h.line { (l.to_canonical()) } @else { "(a line this version cannot read)" } }
                }
            }
        }
        @if !ins.containment_log.is_empty() {
            h2 { "Quarantines and releases" }
            ul { @for l in &ins.containment_log { li { (l.words(false)) } } }
        }
    };
    layout(ui, &format!("Instance {}", ins.id), "", body)
}

/// A page that says what went wrong, with a way back.
pub(crate) fn problem(ui: &Ui, title: &str, message: &str) -> String {
    let body = html! {
        h1 { (title) }
        p.error #problem { (message) }
        p { a href={(ui.prefix) "/"} { "back to the fleet" } }
    };
    layout(ui, title, "", body)
}
