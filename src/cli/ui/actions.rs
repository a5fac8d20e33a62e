//! The inspector's actions: pause and unpause, quarantine and release,
//! repair by migration, the resolution of an unknown outcome. Each is a
//! preview (a GET: what it will change, read from the store or planned by
//! the engine) and a confirmation (a POST carrying the form's secret),
//! applied with the same engine and store calls as the command line.

use std::collections::BTreeMap;

use maud::{html, Markup};
use qflow_engine::embed::{Engine, Resolution};
use qflow_engine::inspect::Waiting;
use qflow_engine::repair::{self, Target};
use qflow_engine::runtime::clock::system_now_ms;
use qflow_engine::runtime::ramp::Shape;
use qflow_engine::store::contain::{Actor, PauseKind};
use qflow_engine::store::release::ReleaseKind;

use super::http::{encode, Reply, Request};
use super::pages::{layout, problem};
use super::Ui;

/// Who the store records for an action taken from a page: the account the
/// server runs as, marked as the web inspector's.
fn actor(req: &Request) -> Actor {
    let me = Actor::this_user();
    let by = match req
        .form
        .get("by")
        .map(|b| b.trim())
        .filter(|b| !b.is_empty())
    {
        Some(b) => b.to_string(),
        None => format!("{} (web inspector)", me.by),
    };
    Actor::new(by).because(
        req.form
            .get("reason")
            .map(String::as_str)
            .filter(|r| !r.trim().is_empty()),
    )
}

/// What continues an instance an action left running or waiting.
fn continues(ui: &Ui, status: qflow_engine::runtime::Status) -> &'static str {
    use qflow_engine::runtime::Status;
    match (status, ui.waker.is_some()) {
        (Status::Running | Status::Waiting, true) => "; the server continues it",
        (Status::Running | Status::Waiting, false) => {
            "; a running `qflow serve` (or `qflow resume`) continues it"
        }
        _ => "",
    }
}

fn field<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.form
        .get(name)
        .map(String::as_str)
        .or_else(|| req.q(name))
        .filter(|v| !v.trim().is_empty())
}

fn bad(ui: &Ui, title: &str, message: String) -> Reply {
    Reply::html(400, problem(ui, title, &message))
}

fn confirm_form(
    ui: &Ui,
    action: &str,
    hidden: &[(&str, String)],
    extra: Markup,
    label: &str,
) -> Markup {
    html! {
        form method="post" action={(ui.prefix) "/actions/" (action)} {
            input type="hidden" name="csrf" value=(ui.csrf);
            @for (k, v) in hidden { input type="hidden" name=(k) value=(v); }
            (extra)
            p { label { "reason (kept with the record) " input name="reason" size="40"; } }
            button.confirm type="submit" #confirm { (label) }
            " "
            a href={(ui.prefix) "/"} { "cancel" }
        }
    }
}

fn page(ui: &Ui, title: &str, body: Markup) -> Reply {
    Reply::html(200, layout(ui, title, "", body))
}

fn done(ui: &Ui, title: &str, message: String, back: Option<String>) -> Reply {
    let body = html! {
        h1 { (title) }
        p.done #result { (message) }
        @if let Some(b) = back { p { a href=(b) { "back to the instance" } } }
        p { a href={(ui.prefix) "/"} { "the fleet" } }
    };
    page(ui, title, body)
}

/// A pause's target from a form: a failure class that parks a retry, or a
/// dependency the database's models call.
fn pause_target(
    store: &qflow_engine::store::Store,
    req: &Request,
    pausing: bool,
) -> Result<(PauseKind, String), String> {
    let value = field(req, "value").ok_or("name the class or the dependency (value=…)")?;
    match field(req, "kind") {
        Some("class") => super::super::contain::parked_class(value).map(|c| (PauseKind::Class, c)),
        Some("dependency") => {
            qflow_engine::dependencies::require_known_dependency(store, value, !pausing)
                .map_err(|e| e.to_string())?;
            Ok((PauseKind::Dependency, value.to_string()))
        }
        _ => Err("kind=class or kind=dependency".into()),
    }
}

pub(crate) fn preview(ui: &Ui, action: &str, req: &Request) -> Reply {
    let store = match ui.open() {
        Ok(s) => s,
        Err(e) => return Reply::html(500, problem(ui, "The store", &e)),
    };
    match action {
        "pause" | "unpause" => {
            let pausing = action == "pause";
            let (kind, value) = match pause_target(&store, req, pausing) {
                Ok(t) => t,
                Err(e) => return bad(ui, action, e),
            };
            let parks = store
                .parked_by_cause()
                .ok()
                .and_then(|c| c.into_iter().find(|c| c.kind == kind && c.value == value))
                .map_or(0, |c| c.parks);
            let paused = store
                .pauses()
                .ok()
                .and_then(|p| p.into_iter().find(|p| p.kind == kind && p.value == value));
            // A planned release: the ramp's preview (the engine's plan over
            // the parks held now), shown before anything is applied.
            let shape = (!pausing).then(|| ramp_shape(req)).flatten();
            let ramp_preview = shape.as_ref().map(|shape| {
                let shape = shape.clone()?;
                qflow_engine::release::preview(&store, kind, &value, &shape, system_now_ms())
                    .map(|plan| {
                        qflow_engine::release::Preview::of(ReleaseKind::of(kind), &value, &plan)
                    })
                    .map_err(|e| e.to_string())
            });
            let mut hidden = vec![("kind", kind.flag().to_string()), ("value", value.clone())];
            for name in ["ramp", "max_rate"] {
                if let Some(v) = field(req, name) {
                    hidden.push((name, v.to_string()));
                }
            }
            let body = html! {
                h1 { (if pausing { "Pause " } else { "Unpause " }) (kind.flag()) " " code { (value) } }
                div.notice #preview {
                    @if pausing {
                        @if let Some(p) = &paused { p { "Already paused " (Actor::words(p.by.as_deref(), p.reason.as_deref())) ": confirming keeps it." } }
                        p { (parks) " retry parks of it are armed now: each is held back (its due time kept), and new parks of it are held too, until it is unpaused." }
                    } @else if let Some(p) = &paused {
                        @if shape.is_some() {
                            p { "Paused " (Actor::words(p.by.as_deref(), p.reason.as_deref())) ", holding " (p.holding) " retry parks: the ramp lets each go at the instant its plan below gives (never before its own due time)." }
                        } @else {
                            p { "Paused " (Actor::words(p.by.as_deref(), p.reason.as_deref())) ", holding " (p.holding) " retry parks: each is let go and re-driven when due (at once if its time has passed)." }
                        }
                    } @else if shape.is_some() {
                        p { "It is not paused: the ramp spaces its armed retry parks all the same." }
                    } @else {
                        p { "It is not paused: confirming changes nothing." }
                    }
                }
                @if !pausing {
                    @match &ramp_preview {
                        Some(Ok(preview)) => (preview_chart(preview)),
                        Some(Err(e)) => div.notice #ramp-error { p { (e) } },
                        None => {},
                    }
                    (ramp_form(ui, action, kind, &value, req))
                }
                @if ramp_preview.as_ref().is_none_or(|p| p.is_ok()) {
                    (confirm_form(ui, action, &hidden, html! {}, if pausing { "Pause" } else if shape.is_some() { "Unpause by this ramp" } else { "Unpause" }))
                }
            };
            page(ui, action, body)
        }
        "quarantine" | "release" => {
            let Some(id) = field(req, "instance") else {
                return bad(ui, action, "instance=ID".into());
            };
            let ins = match qflow_engine::inspect::fleet::instance(&store, id) {
                Ok(i) => i,
                Err(e) => return bad(ui, action, format!("{id}: {e}")),
            };
            let on = action == "quarantine";
            let body = html! {
                h1 { (if on { "Quarantine " } else { "Release " }) span.mono { (id) } }
                div.notice #preview {
                    @if on { p { "It is " (ins.status.as_str().to_uppercase()) ". Quarantined, nothing decides for it (no attempt, no timer, no delivery) until it is released." } }
                    @else { p { "Released, it runs again with whatever serves the database." } }
                }
                (confirm_form(ui, action, &[("instance", id.to_string())], html! {}, if on { "Quarantine" } else { "Release" }))
            };
            page(ui, action, body)
        }
        "migrate" => migrate_preview(ui, &store, req),
        "migrate-all" => migrate_all_preview(ui, &store, req),
        "resolve" => {
            let Some(id) = field(req, "instance") else {
                return bad(ui, action, "instance=ID".into());
            };
            let ins = match qflow_engine::inspect::fleet::instance(&store, id) {
                Ok(i) => i,
                Err(e) => return bad(ui, action, format!("{id}: {e}")),
            };
            let Some(Waiting::Reconciliation {
                node,
                code,
                attempts,
            }) = &ins.waiting
            else {
                return bad(
                    ui,
                    "Resolve",
                    format!("{id} waits for no reconciliation: nothing to resolve"),
                );
            };
            let body = html! {
                h1 { "Resolve the unknown outcome of " code { (node) } " in " span.mono { (id) } }
                div.notice #preview {
                    p { "Its last attempt's outcome is unknown" @if let Some(c) = code { " (" code { (c) } ")" } @if let Some(a) = attempts { " after " (a) " attempts" } ". Say what happened: succeeded (with the variables the flow continues with), failed (the failure path is taken), or retry (it is attempted again)." }
                }
                (confirm_form(ui, "resolve", &[("instance", id.to_string()), ("node", node.clone())], html! {
                    p { label { "as " select name="as" { option value="succeeded" { "succeeded" } option value="failed" { "failed" } option value="retry" { "retry" } } } }
                    p { label { "variables (JSON, for succeeded) " input name="variables" size="40" value="{}"; } }
                }, "Resolve"))
            };
            page(ui, "Resolve", body)
        }
        _ => Reply::html(
            404,
            problem(
                ui,
                "No such action",
                &format!(
                    "no action {action}: pause, unpause, quarantine, release, migrate, resolve"
                ),
            ),
        ),
    }
}

/// The ramp a form or a query asks for (`ramp=10,50,200/min`,
/// `max_rate=bank=20/min`, several comma- or space-separated): `None` when
/// neither is given, else the shape, checked by the command line's own
/// parser (an error names the field and a literal fix).
fn ramp_shape(req: &Request) -> Option<Result<Shape, String>> {
    let ramp = field(req, "ramp").map(str::trim).map(str::to_string);
    let max_rate: Vec<String> = field(req, "max_rate")
        .map(|m| {
            m.split([' ', ','])
                .filter(|x| !x.trim().is_empty())
                .map(|x| x.trim().to_string())
                .collect()
        })
        .unwrap_or_default();
    if ramp.is_none() && max_rate.is_empty() {
        return None;
    }
    let args = super::super::contain::RampArgs {
        ramp,
        max_rate,
        dry_run: false,
    };
    Some(args.shape())
}

/// The fields that ask for a ramp's preview (a plain GET of the same page).
fn ramp_form(ui: &Ui, action: &str, kind: PauseKind, value: &str, req: &Request) -> Markup {
    html! {
        form.ramp method="get" action={(ui.prefix) "/actions/" (action)} #ramp-form {
            input type="hidden" name="kind" value=(kind.flag());
            input type="hidden" name="value" value=(value);
            p {
                "Or let them go by a planned release: "
                label { "ramp " input name="ramp" size="16" placeholder="10,50,200/min" value=(field(req, "ramp").unwrap_or_default()); }
                " "
                label { "max rate " input name="max_rate" size="22" placeholder="payments.charge=20/min" value=(field(req, "max_rate").unwrap_or_default()); }
                " "
                button type="submit" #preview-ramp { "Preview the ramp" }
            }
        }
    }
}

/// A ramp's preview as the command line's `--dry-run` gives it: per
/// dependency, the attempts per minute without the ramp (every park when
/// due) and with it, drawn as bars (an inline SVG, nothing loaded from
/// anywhere), with the peaks and when the last goes in words.
fn preview_chart(p: &qflow_engine::release::Preview) -> Markup {
    const HEIGHT: u64 = 80;
    let minutes = p.minutes().max(1);
    // About 600 px for the whole curve: wide bars for a short release,
    // thin ones (never under 2 px) for a long one.
    let bar = (300 / minutes).clamp(2, 24);
    html! {
        div #ramp-preview data-parks=(p.parks) {
            h2 { "What the release causes" }
            p { (qflow_engine::text::group(p.parks)) @if p.parks == 1 { " retry park" } @else { " retry parks" } " from " (super::super::contain::instant(p.start_ms)) "; the last goes " (qflow_engine::duration::compact_ms(p.end_after_ms)) " after the start." }
            @for d in &p.dependencies {
                @let top = d.peak_without.max(d.peak_with).max(1);
                @let width = minutes * (2 * bar + 2);
                figure.ramp-chart data-dependency=(d.dependency) data-peak-without=(d.peak_without) data-peak-with=(d.peak_with) {
                    figcaption { code { (d.dependency) } ": at most " (d.peak_without) "/min without the ramp, " (d.peak_with) "/min with it (attempts per minute; a channel's: deliveries, one request each)" }
                    svg width=(width) height=(HEIGHT + 2) viewBox={"0 0 " (width) " " (HEIGHT + 2)} role="img" aria-label={"attempts per minute of " (d.dependency) ", without and with the ramp"} {
                        @for m in 0..minutes {
                            @let without = d.without.get(m).copied().unwrap_or(0);
                            @let with = d.with.get(m).copied().unwrap_or(0);
                            @let x = m * (2 * bar + 2);
                            @let h0 = without * HEIGHT / top;
                            @let h1 = with * HEIGHT / top;
                            rect.without x=(x) y=(HEIGHT + 1 - h0) width=(bar) height=(h0) fill="#b0b0b0" { title { "minute " (m) ": " (without) " without the ramp" } }
                            rect.with x=(x + bar) y=(HEIGHT + 1 - h1) width=(bar) height=(h1) fill="#2a6fdb" { title { "minute " (m) ": " (with) " with the ramp" } }
                        }
                    }
                    p.legend { span style="color:#808080" { "■ without the ramp" } " " span style="color:#2a6fdb" { "■ with it" } " — one pair of bars per minute from the start" }
                }
            }
        }
    }
}

fn mapping_of(text: &str) -> Result<BTreeMap<String, String>, String> {
    let items: Vec<String> = text
        .split([',', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    super::super::migrate::parse_map(&items)
}

/// The node mapping of a migration: the form's, or (none given) the one
/// the engine suggests for `id`, written back into `text` for the form.
fn mapping(
    store: &qflow_engine::store::Store,
    req: &Request,
    id: &str,
    target: &Target,
    text: &mut String,
) -> Result<BTreeMap<String, String>, String> {
    if field(req, "map").is_some() {
        return mapping_of(text);
    }
    let m = repair::suggest_mapping(store, id, target).unwrap_or_default();
    *text = m
        .iter()
        .map(|(a, b)| format!("{a}={b}"))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(m)
}

fn migrate_preview(ui: &Ui, store: &qflow_engine::store::Store, req: &Request) -> Reply {
    let Some(id) = field(req, "instance") else {
        return bad(ui, "Migrate", "instance=ID".into());
    };
    let deployments = store.deployments().unwrap_or_default();
    let to = match field(req, "to") {
        Some(t) => match t.parse::<i64>() {
            Ok(t) => Some(t),
            Err(_) => return bad(ui, "Migrate", format!("to={t}: a deployment's number")),
        },
        None => repair::likely_target(store, id).ok().flatten(),
    };
    let reset = field(req, "reset_budget").is_some();
    let mut mapping_text = field(req, "map").unwrap_or_default().to_string();
    let plan = to.map(|to| {
        let target = Target::Deployment(to);
        mapping(store, req, id, &target, &mut mapping_text)
            .and_then(|m| repair::plan(store, id, &target, &m, reset).map_err(|e| e.to_string()))
    });
    let body = html! {
        h1 { "Repair " span.mono { (id) } " by migration" }
        form method="get" action={(ui.prefix) "/actions/migrate"} {
            input type="hidden" name="instance" value=(id);
            p {
                label { "to deployment "
                    select name="to" #to {
                        @for d in &deployments {
                            option value=(d.id) selected[Some(d.id) == to] { (d.id) ": " (d.process_id) @if let Some(o) = &d.origin { " (" (o) ")" } @if d.retired_ms.is_some() { " retired" } }
                        }
                    }
                }
                " "
                label { "node mapping " input name="map" value=(mapping_text) size="30" placeholder="old=new, …"; }
                " "
                label { input type="checkbox" name="reset_budget" value="1" checked[reset]; " reset the attempt counters" }
                " "
                button type="submit" { "Plan" }
            }
        }
        @match &plan {
            None => { p.notice { "Pick the deployment to move it to." } }
            Some(Err(e)) => { p.error #plan-error { (e) "; nothing would be changed." } }
            Some(Ok(planned)) => {
                h2 { "The plan" }
                pre #plan { @for l in planned.plan.describe() { (l) "\n" } }
                p #next { "Next decision: " (planned.next.describe(planned.started_ms)) }
                @if planned.next.unchanged {
                    p.error #unchanged { "This repair changes nothing: its next decision is the one it repairs (qflow migrate refuses it without --allow-unchanged). Reset the budget or pick a model whose policy allows more attempts." }
                }
                p { "From deployment " (planned.from_deployment) " to deployment " (to.unwrap_or_default()) ". Applied in one transaction, only if the instance has not moved since this plan." }
                (confirm_form(ui, "migrate", &[
                    ("instance", id.to_string()),
                    ("to", to.unwrap_or_default().to_string()),
                    ("map", mapping_text.clone()),
                    ("version", planned.version.to_string()),
                    ("reset_budget", if reset { "1".into() } else { String::new() }),
                ], html! {}, "Apply the migration"))
            }
        }
    };
    page(ui, "Migrate", body)
}

/// Plans shown in full on the preview of a batch repair; the rest are
/// counted.
const PLANS_SHOWN: usize = 10;

/// Every FAILED instance of a deployment, its target, mapping and plans:
/// what `qflow migrate --all-failed-of` plans (one refusal: nothing moves).
struct Batch {
    deployment: i64,
    to: Option<i64>,
    mapping_text: String,
    reset: bool,
    plans: Result<Vec<repair::Planned>, String>,
    ids: Vec<String>,
}

fn batch(store: &qflow_engine::store::Store, req: &Request) -> Result<Batch, String> {
    let deployment = field(req, "deployment")
        .and_then(|d| d.parse::<i64>().ok())
        .ok_or("deployment=N: the deployment whose FAILED instances to repair")?;
    let ids = repair::failed_of(store, deployment).map_err(|e| e.to_string())?;
    let to = match field(req, "to") {
        Some(t) => Some(
            t.parse::<i64>()
                .map_err(|_| format!("to={t}: a deployment's number"))?,
        ),
        None => match ids.first() {
            Some(first) => repair::likely_target(store, first).map_err(|e| e.to_string())?,
            None => None,
        },
    };
    let reset = field(req, "reset_budget").is_some();
    let mut mapping_text = field(req, "map").unwrap_or_default().to_string();
    let plans = match (to, ids.first()) {
        (Some(to), Some(first)) => {
            let target = Target::Deployment(to);
            mapping(store, req, first, &target, &mut mapping_text).and_then(|m| {
                ids.iter()
                    .map(|id| {
                        repair::plan(store, id, &target, &m, reset)
                            .map_err(|e| format!("{id}: {e}"))
                    })
                    .collect()
            })
        }
        _ => Ok(Vec::new()),
    };
    Ok(Batch {
        deployment,
        to,
        mapping_text,
        reset,
        plans,
        ids,
    })
}

fn migrate_all_preview(ui: &Ui, store: &qflow_engine::store::Store, req: &Request) -> Reply {
    let b = match batch(store, req) {
        Ok(b) => b,
        Err(e) => return bad(ui, "Repair every FAILED instance", e),
    };
    let deployments = store.deployments().unwrap_or_default();
    let body = html! {
        h1 { "Repair every FAILED instance of deployment " (b.deployment) }
        @if b.ids.is_empty() {
            p.notice #preview { "Deployment " (b.deployment) " has no FAILED instance: nothing to repair." }
        } @else {
            form method="get" action={(ui.prefix) "/actions/migrate-all"} {
                input type="hidden" name="deployment" value=(b.deployment);
                p {
                    label { "to deployment "
                        select name="to" #to {
                            @for d in &deployments {
                                option value=(d.id) selected[Some(d.id) == b.to] { (d.id) ": " (d.process_id) @if let Some(o) = &d.origin { " (" (o) ")" } }
                            }
                        }
                    }
                    " "
                    label { "node mapping " input name="map" value=(b.mapping_text) size="30"; }
                    " "
                    label { input type="checkbox" name="reset_budget" value="1" checked[b.reset]; " reset the attempt counters" }
                    " "
                    button type="submit" { "Plan" }
                }
            }
            @match &b.plans {
                Err(e) => { p.error #plan-error { (e) "; nothing would be changed (one refusal and no instance moves)." } }
                Ok(plans) => {
                    p.notice #preview { (plans.len()) " FAILED instances move to deployment " (b.to.unwrap_or_default()) ", each in its own transaction, each only if it has not moved since its plan." }
                    @for p in plans.iter().take(PLANS_SHOWN) {
                        pre.plan { @for l in p.plan.describe() { (l) "\n" } }
                    }
                    @if plans.len() > PLANS_SHOWN { p { "… and " (plans.len() - PLANS_SHOWN) " more plans." } }
                    (confirm_form(ui, "migrate-all", &[
                        ("deployment", b.deployment.to_string()),
                        ("to", b.to.unwrap_or_default().to_string()),
                        ("map", b.mapping_text.clone()),
                        ("count", plans.len().to_string()),
                        ("reset_budget", if b.reset { "1".into() } else { String::new() }),
                    ], html! {}, &format!("Repair {} instances", plans.len())))
                }
            }
        }
    };
    page(ui, "Repair every FAILED instance", body)
}

pub(crate) fn apply(ui: &Ui, action: &str, req: &Request) -> Reply {
    let mut store = match ui.open_for_writing() {
        Ok(s) => s,
        Err(e) => return Reply::html(500, problem(ui, "The store", &e)),
    };
    let now = system_now_ms();
    match action {
        "pause" | "unpause" => {
            let pausing = action == "pause";
            let (kind, value) = match pause_target(&store, req, pausing) {
                Ok(t) => t,
                Err(e) => return bad(ui, action, e),
            };
            if let (false, Some(shape)) = (pausing, ramp_shape(req)) {
                let shape = match shape {
                    Ok(s) => s,
                    Err(e) => return bad(ui, action, format!("{e}; nothing was changed")),
                };
                return match qflow_engine::release::apply(
                    &mut store,
                    kind,
                    &value,
                    &shape,
                    now,
                    &actor(req),
                ) {
                    Ok((_, applied)) => done(
                        ui,
                        "Unpaused by a ramp",
                        format!(
                            "unpaused {} {value}: {} retry parks released by ramp {} ({}) from {} to {}; `qflow unpause --stop-ramp {}` stops it.",
                            kind.flag(),
                            applied.parks,
                            applied.schedule,
                            shape.words(),
                            super::super::contain::instant(applied.start_ms),
                            super::super::contain::instant(applied.end_ms),
                            applied.schedule,
                        ),
                        None,
                    ),
                    Err(e) => bad(ui, action, format!("{e}; nothing was changed")),
                };
            }
            let change = if pausing {
                store.pause(kind, &value, now, &actor(req))
            } else {
                store.unpause(kind, &value, now, &actor(req))
            };
            match change {
                Ok(c) => done(
                    ui,
                    if pausing { "Paused" } else { "Unpaused" },
                    format!(
                        "{} {} {}: {} retry parks {}.",
                        if !c.changed {
                            "nothing changed for"
                        } else if pausing {
                            "paused"
                        } else {
                            "unpaused"
                        },
                        kind.flag(),
                        value,
                        c.parks,
                        if pausing { "held" } else { "let go" }
                    ),
                    None,
                ),
                Err(e) => bad(ui, action, format!("{e}; nothing was changed")),
            }
        }
        "quarantine" | "release" => {
            let Some(id) = field(req, "instance") else {
                return bad(ui, action, "instance=ID".into());
            };
            let on = action == "quarantine";
            let change = if on {
                store.quarantine(id, now, &actor(req))
            } else {
                store.release_quarantine(id, now, &actor(req))
            };
            let back = Some(format!("{}/instances/{}", ui.prefix, encode(id)));
            match change {
                Ok(c) => done(
                    ui,
                    if on { "Quarantined" } else { "Released" },
                    match (on, c.changed) {
                        (true, true) => format!(
                            "quarantined {id} ({}): nothing runs it until it is released",
                            c.status
                        ),
                        (false, true) => format!(
                            "released {id} ({}): it runs again with whatever serves the database",
                            c.status
                        ),
                        (true, false) => format!("{id} was already quarantined: nothing changed"),
                        (false, false) => format!("{id} was not quarantined: nothing changed"),
                    },
                    back,
                ),
                Err(e) => bad(ui, action, format!("{id}: {e}; nothing was changed")),
            }
        }
        "migrate" => {
            let Some(id) = field(req, "instance") else {
                return bad(ui, "Migrate", "instance=ID".into());
            };
            let Some(to) = field(req, "to").and_then(|t| t.parse::<i64>().ok()) else {
                return bad(ui, "Migrate", "to=DEPLOYMENT".into());
            };
            let version = field(req, "version").and_then(|v| v.parse::<i64>().ok());
            let mapping = match mapping_of(field(req, "map").unwrap_or_default()) {
                Ok(m) => m,
                Err(e) => return bad(ui, "Migrate", e),
            };
            let reset = field(req, "reset_budget").is_some();
            let target = Target::Deployment(to);
            match repair::apply(&mut store, id, &target, &mapping, reset, version) {
                Ok((decision, deployment)) => done(
                    ui,
                    "Migrated",
                    format!(
                        "applied: {id} is on deployment {deployment}, {}{}",
                        decision.status.as_str().to_uppercase(),
                        continues(ui, decision.status)
                    ),
                    Some(format!("{}/instances/{}", ui.prefix, encode(id))),
                ),
                Err(e) => bad(ui, "Migrate", format!("{id}: {e}; nothing was changed")),
            }
        }
        "migrate-all" => {
            let b = match batch(&store, req) {
                Ok(b) => b,
                Err(e) => return bad(ui, "Repair every FAILED instance", e),
            };
            let expected = field(req, "count").and_then(|c| c.parse::<usize>().ok());
            if expected != Some(b.ids.len()) {
                return bad(
                    ui,
                    "Repair every FAILED instance",
                    format!(
                        "deployment {} has {} FAILED instances now, not the {} previewed: plan again; nothing was changed",
                        b.deployment,
                        b.ids.len(),
                        expected.map_or("?".to_string(), |n| n.to_string())
                    ),
                );
            }
            let plans = match b.plans {
                Ok(p) => p,
                Err(e) => {
                    return bad(
                        ui,
                        "Repair every FAILED instance",
                        format!("{e}; nothing was changed"),
                    )
                }
            };
            let Some(to) = b.to else {
                return bad(ui, "Repair every FAILED instance", "to=DEPLOYMENT".into());
            };
            let mapping = mapping_of(&b.mapping_text).unwrap_or_default();
            let target = Target::Deployment(to);
            let (mut moved, mut refused) = (0usize, Vec::new());
            for p in &plans {
                let id = &p.plan.instance;
                match repair::apply(&mut store, id, &target, &mapping, b.reset, Some(p.version)) {
                    Ok(_) => moved += 1,
                    Err(e) => refused.push(format!("{id}: {e}")),
                }
            }
            let mut message = format!(
                "applied: {moved} instances moved to deployment {to}{}",
                continues(ui, qflow_engine::runtime::Status::Running)
            );
            if !refused.is_empty() {
                message.push_str(&format!(
                    "; {} were not moved (they moved since their plan): {}",
                    refused.len(),
                    refused.join("; ")
                ));
            }
            done(ui, "Repaired", message, None)
        }
        "resolve" => {
            let (Some(id), Some(node)) = (field(req, "instance"), field(req, "node")) else {
                return bad(ui, "Resolve", "instance=ID and node=NODE".into());
            };
            let Some(how) = field(req, "as").and_then(Resolution::parse) else {
                return bad(ui, "Resolve", "as=succeeded, failed or retry".into());
            };
            let vars = match field(req, "variables") {
                None => serde_json::Value::Null,
                Some(v) => match serde_json::from_str(v) {
                    Ok(v) => v,
                    Err(e) => {
                        return bad(ui, "Resolve", format!("the variables are not JSON: {e}"))
                    }
                },
            };
            let mut engine = Engine::with_store(store);
            match engine.resolve(id, node, how, vars) {
                Ok(d) => done(
                    ui,
                    "Resolved",
                    format!(
                        "resolved {node} of {id}: it is {}{}",
                        d.status.as_str().to_uppercase(),
                        continues(ui, d.status)
                    ),
                    Some(format!("{}/instances/{}", ui.prefix, encode(id))),
                ),
                Err(e) => bad(ui, "Resolve", format!("{id}: {e}; nothing was changed")),
            }
        }
        _ => Reply::html(
            404,
            problem(ui, "No such action", &format!("no action {action}")),
        ),
    }
}
