//! `qflow migrate` (repair by migration: the plan, then one transaction)
//! and `qflow resume` (continue a repaired or parked instance). docs/cli.md.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use qflow_engine::release::Preview;
use qflow_engine::repair::{self, Planned, RepairError, Target};
use qflow_engine::runtime::clock::VirtualClock;
use qflow_engine::runtime::migrate::{Held, Plan};
use qflow_engine::runtime::outcome::Expectation;
use qflow_engine::runtime::ramp::Shape;
use qflow_engine::runtime::scenario::Scenario;
use qflow_engine::runtime::session::{load_scenario, scenario_beside, ScenarioChoice};
use qflow_engine::runtime::verify::{NextDecision, Step, Then};
use qflow_engine::runtime::{scenario_check, LocalRun, Status};
use qflow_engine::store::contain::Actor;
use qflow_engine::store::release::{RampedRelease, ReleaseKind};
use qflow_engine::store::{Location, StoreError};
use serde_json::{json, Value};

use super::contain::{instant, preview_lines, RampArgs, RecordArgs};
use super::ops::{self, Format, REFUSED, USAGE};
use super::run::{self as run_cli, json_line, Columns};

/// Move an instance onto another deployment or model (the repair of a
/// FAILED instance): check the mapping, print the plan, apply it in one
/// transaction.
#[derive(Debug, clap::Args)]
pub(crate) struct MigrateArgs {
    /// The instance to move (`qflow instances --db DB --status failed` lists
    /// the FAILED ones). Omit it with --all-failed-of.
    #[arg(
        required_unless_present = "all_failed_of",
        conflicts_with = "all_failed_of"
    )]
    pub instance: Option<String>,
    /// Where to: a deployment id of --db, or a model file (deployed in the
    /// migration's own transaction unless its source is already deployed).
    #[arg(long, value_name = "DEPLOYMENT|MODEL")]
    pub to: String,
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    /// Node OLD of the instance's model is NEW in the target (repeatable).
    /// Unmapped nodes keep their id.
    #[arg(long = "map", value_name = "OLD=NEW")]
    pub map: Vec<String>,
    /// Start the attempt counters over instead of carrying the burned budget.
    #[arg(long)]
    pub reset_budget: bool,
    /// Repair every FAILED instance of this deployment (all are planned
    /// first; one refusal and none is moved).
    #[arg(long, value_name = "DEPLOYMENT")]
    pub all_failed_of: Option<i64>,
    /// Apply a repair whose next decision is the one it repairs (FAILED
    /// again at once with the same failure), refused without it: for when
    /// the cause was fixed outside the model (the dependency is back).
    #[arg(long)]
    pub allow_unchanged: bool,
    /// `--ramp R`, `--max-rate D=N/min`: spread the repaired instances'
    /// next attempts by a planned release instead of running them all at
    /// once (each migrated instance's next task attempt is parked at the
    /// migration instant and held, then released by one durable ramp, as
    /// `qflow release --ramp` does). `--dry-run`: print the plans (and,
    /// with a ramp, its preview) and change nothing.
    #[command(flatten)]
    pub shape: RampArgs,
    /// With a ramp: who holds and releases the instances, and why.
    #[command(flatten)]
    pub record: RecordArgs,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

/// Continue a repaired or parked instance on its deployment, printing every
/// decision as `qflow run` does.
#[derive(Debug, clap::Args)]
pub(crate) struct ResumeArgs {
    /// The instance to continue. Omit it with --all.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub instance: Option<String>,
    /// Continue every unfinished instance (RUNNING or WAITING, not
    /// quarantined; of --deployment D only, if given), oldest first; with
    /// --ramp R or --max-rate DEPENDENCY=N/min their armed retries are
    /// first spread by one durable planned release (previewed; --dry-run
    /// previews only), as `qflow release --ramp` does.
    #[arg(long, conflicts_with = "resolve")]
    pub all: bool,
    /// With --all: only the instances of this deployment.
    #[arg(long, value_name = "DEPLOYMENT", requires = "all")]
    pub deployment: Option<i64>,
    #[command(flatten)]
    pub shape: RampArgs,
    /// With a ramp: who releases, and why.
    #[command(flatten)]
    pub record: RecordArgs,
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    /// A scenario (JSON, docs/run.md) for the handlers and counterparts from
    /// here on. Default: the scenario beside the model the instance's
    /// deployment was deployed from (`<dir>/scenarios/<stem>.json`), as
    /// `run` finds it; else none (every task succeeds, counterparts answer `{}`).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Ignore a scenario beside the deployment's model: every task succeeds.
    #[arg(long, conflicts_with = "scenario")]
    pub no_scenario: bool,
    /// Reconcile an unknown outcome of NODE first: succeeded, failed or retry.
    #[arg(long, value_name = "NODE=AS")]
    pub resolve: Vec<String>,
    /// Exit 3 unless the instance ends this way (as `qflow run --expect`).
    #[arg(long, value_name = "OUTCOME")]
    pub expect: Option<String>,
    /// Resume even when the next decision is the one a repair repaired
    /// (FAILED again at once with the same failure), or a --resolve retry
    /// that runs no attempt: refused without it.
    #[arg(long)]
    pub allow_unchanged: bool,
    /// Stop after this much virtual time since the instance started (5m, 2h30m, or ISO-8601: PT5M).
    /// Without it, the run stops 30 days of virtual time past where it began.
    #[arg(long, value_name = "DURATION")]
    pub until: Option<String>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

pub(crate) fn parse_map(items: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut mapping = BTreeMap::new();
    for m in items {
        match m.split_once('=') {
            Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => {
                if let Some(prev) = mapping.insert(a.trim().to_string(), b.trim().to_string()) {
                    return Err(format!(
                        "--map {m}: {} is already mapped to {prev}; map each node once",
                        a.trim()
                    ));
                }
            }
            _ => return Err(format!("--map `{m}`: write OLD=NEW (node ids)")),
        }
    }
    Ok(mapping)
}

/// `--to`: a deployment id when it is a number and no such file exists,
/// else a model file.
fn target(to: &str, format: Format) -> Result<(Target, String), ExitCode> {
    let path = PathBuf::from(to);
    if let Ok(id) = to.parse::<i64>() {
        if !path.exists() {
            return Ok((Target::Deployment(id), format!("deployment {id}")));
        }
    }
    let model = ops::read_model(&path, format)?;
    let shown = model.shown.clone();
    Ok((
        Target::Model {
            source: model.source,
            origin: Some(model.shown),
            graph: Box::new(model.graph),
        },
        shown,
    ))
}

fn held_json(h: &Held) -> Value {
    match h {
        Held::Token(s) => json!({"token": s.as_str()}),
        Held::Key { family, value } => json!({"key": family.prefix(),
            "value": serde_json::from_str::<Value>(value).unwrap_or(Value::Null)}),
        Held::Timer { purpose, due_ms } => {
            json!({"timer": purpose.as_str(), "due_s": ops::seconds(*due_ms)})
        }
        Held::Outbox(n) => json!({"outbox": n}),
        Held::Correlation => json!({"correlation": true}),
        Held::Failure { code } => json!({"failure": code}),
    }
}

fn plan_json(p: &Plan) -> Value {
    let moves: Vec<Value> = p
        .moves
        .iter()
        .map(|m| {
            json!({
                "from": m.from, "to": m.to, "from_kind": m.from_kind, "to_kind": m.to_kind,
                "held": m.held.iter().map(held_json).collect::<Vec<_>>(),
                "budget": m.budget.map(|b| json!({"burned": b.burned, "carried": b.carried,
                    "max_attempts": b.max_attempts})),
            })
        })
        .collect();
    json!({
        "instance": p.instance,
        "status_before": p.status_before.as_str(),
        "status_after": p.status_after.as_str(),
        "reset_budget": p.reset_budget,
        "mapping": p.mapping,
        "moves": moves,
    })
}

/// A next decision as JSON (`next` of a plan, `next_applied` once applied).
pub(crate) fn next_json(d: &NextDecision, started_ms: i64) -> Value {
    let s = |ms: i64| ops::seconds(ms - started_ms);
    let step = match &d.step {
        Step::Attempt { node, attempt } => {
            json!({"kind": "attempt", "node": node, "attempt": attempt})
        }
        Step::Request { node, attempt } => {
            json!({"kind": "request", "node": node, "attempt": attempt})
        }
        Step::Flow { node } => json!({"kind": "flow", "node": node}),
        Step::Timer {
            node,
            purpose,
            due_ms,
        } => {
            json!({"kind": "timer", "node": node, "timer": purpose.as_str(), "due_s": s(*due_ms)})
        }
        Step::Outside => json!({"kind": "outside"}),
        Step::Resolve { node, resolution } => {
            json!({"kind": "resolve", "node": node, "as": resolution.as_str()})
        }
        Step::Finished(st) => json!({"kind": "finished", "status": st.as_str()}),
    };
    let then = match &d.then {
        Then::Retry { attempt, due_ms } => {
            json!({"kind": "retry", "attempt": attempt, "due_s": s(*due_ms)})
        }
        Then::Failed { code, reason } => json!({"kind": "failed", "code": code, "reason": reason}),
        Then::Continues(st) => json!({"kind": "continues", "status": st.as_str()}),
        Then::Open => json!({"kind": "open"}),
    };
    json!({
        "step": step,
        "then": then,
        "assumed": d.assumed.as_ref().map(|a| json!({"node": a.node, "code": a.code,
            "class": a.class.map(|c| c.as_str()), "reason": a.reason})),
        "unchanged": d.unchanged,
        "text": d.describe(started_ms),
    })
}

/// What a migration applied: its deployment and the next decision read
/// back from the store once it was written; whether it was held for a
/// ramped release.
struct Applied {
    deployment: i64,
    next: NextDecision,
    held: bool,
}

fn print_plan(planned: &Planned, to_shown: &str, format: Format, applied: Option<&Applied>) {
    let deployment = applied.map(|a| a.deployment);
    match format {
        Format::Json => {
            let mut v = plan_json(&planned.plan);
            v["from_deployment"] = json!(planned.from_deployment);
            v["to_deployment"] = json!(deployment.or(planned.to_deployment));
            v["applied"] = json!(applied.is_some());
            v["next"] = next_json(&planned.next, planned.started_ms);
            if let Some(a) = applied {
                v["next_applied"] = next_json(&a.next, planned.started_ms);
                v["as_previewed"] = json!(a.next == planned.next);
                v["held"] = json!(a.held);
            }
            println!("{}", json_line(&v, &["instance", "applied"]));
        }
        Format::Human => {
            let to = match (
                deployment.or(planned.to_deployment),
                to_shown.starts_with("deployment "),
            ) {
                (Some(id), true) => format!("deployment {id}"),
                (Some(id), false) => format!("deployment {id} ({to_shown})"),
                (None, _) => format!("{to_shown} (deployed by the migration)"),
            };
            println!(
                "plan: {} from deployment {} to {to}",
                planned.plan.instance, planned.from_deployment
            );
            for l in planned.plan.describe() {
                println!("  {}", qflow_engine::text::printable(&l));
            }
            println!(
                "  next decision: {}",
                qflow_engine::text::printable(&planned.next.describe(planned.started_ms))
            );
        }
    }
}

fn refusal(format: Format, instance: &str, e: &RepairError) -> ExitCode {
    let (code, why) = match e {
        RepairError::Refused(_)
        | RepairError::Moved { .. }
        | RepairError::Retired(_)
        | RepairError::Unchanged { .. } => (REFUSED, "refused"),
        RepairError::Run(qflow_engine::runtime::RunError::Store(
            qflow_engine::store::StoreError::NoInstance(_)
            | qflow_engine::store::StoreError::NoDeployment(_),
        )) => (USAGE, "usage"),
        RepairError::Run(_) => (USAGE, "store"),
    };
    ops::fail(
        format,
        code,
        why,
        format!("{instance}: {e}; nothing was changed"),
    )
}

pub(crate) fn migrate(args: MigrateArgs) -> ExitCode {
    let format = args.format;
    let mapping = match parse_map(&args.map) {
        Ok(m) => m,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let ramp = match ramp_of(&args) {
        Ok(r) => r,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let mut store = match ops::open_existing(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    let (target, to_shown) = match target(&args.to, format) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let instances = match (&args.instance, args.all_failed_of) {
        (Some(i), _) => vec![i.clone()],
        (None, Some(d)) => match repair::failed_of(&store, d) {
            Ok(v) if v.is_empty() => {
                match format {
                    Format::Json => println!("[]"),
                    Format::Human => {
                        println!("deployment {d} has no FAILED instance: nothing to repair")
                    }
                }
                return ExitCode::SUCCESS;
            }
            Ok(v) => v,
            Err(e) => return ops::fail(format, USAGE, "usage", e),
        },
        (None, None) => unreachable!("clap requires an instance or --all-failed-of"),
    };
    // Every plan first: one refusal and nothing is moved.
    let plans = match repair::plan_all(&store, &instances, &target, &mapping, args.reset_budget) {
        Ok(plans) => plans,
        Err((id, e)) => return refusal(format, &id, &e),
    };
    // A repair whose next decision is the one it repairs fixes nothing:
    // refused (all of a batch, as any refusal) unless asked for.
    if !args.allow_unchanged {
        let unchanged: Vec<&Planned> = plans.iter().filter(|p| p.next.unchanged).collect();
        if let Some(first) = unchanged.first() {
            let Err(e) = first.refuse_unchanged() else {
                unreachable!("an unchanged plan is refused")
            };
            let who = if plans.len() == 1 {
                first.plan.instance.clone()
            } else {
                format!(
                    "{} of {} instances ({}{})",
                    unchanged.len(),
                    plans.len(),
                    first.plan.instance,
                    if unchanged.len() > 1 { ", …" } else { "" }
                )
            };
            if format == Format::Human {
                for p in &plans {
                    print_plan(p, &to_shown, format, None);
                }
            }
            return refusal(format, &who, &e);
        }
    }
    // With a ramp, its preview from the plans: the parks the migrations
    // will arm, spread as the release will spread them.
    let now = qflow_engine::runtime::clock::system_now_ms();
    let preview = match &ramp {
        Some((shape, _)) => {
            let plan = repair::target_graph(&store, &target)
                .map_err(|e| e.to_string())
                .and_then(|graph| {
                    qflow_engine::release::preview_migration(&store, &plans, &graph, shape, now)
                        .map_err(|e| e.to_string())
                });
            match plan {
                Ok(plan) => Some(Preview::of(
                    ReleaseKind::Instance,
                    &held_value(&plan),
                    &plan,
                )),
                Err(e) => return ops::fail(format, USAGE, "store", e),
            }
        }
        None => None,
    };
    if args.shape.dry_run {
        for p in &plans {
            print_plan(p, &to_shown, format, None);
        }
        if let Some(preview) = &preview {
            print_preview(format, preview, true);
        }
        if format == Format::Human {
            println!("dry run: nothing was changed");
        }
        return ExitCode::SUCCESS;
    }
    let batch = args.all_failed_of.is_some();
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    let mut not_moved: Vec<(String, String)> = Vec::new();
    let mut held: Vec<&Planned> = Vec::new();
    let mut moved = 0u64;
    for p in &plans {
        let id = &p.plan.instance;
        let applied = repair::apply_held(
            &mut store,
            id,
            &target,
            &mapping,
            args.reset_budget,
            Some(p.version),
            ramp.as_ref().map(|(_, actor)| actor),
        )
        .and_then(|(decision, deployment, held)| {
            // What the store now holds decides the next step: read back,
            // decided by the preview's own function.
            let next = repair::next_of(&store, id, p.next.assumed.as_ref())?;
            Ok((
                decision,
                Applied {
                    deployment,
                    next,
                    held,
                },
            ))
        });
        match applied {
            Ok((decision, a)) => {
                moved += 1;
                if a.held {
                    // Counted once the ramp has set its release instant.
                    held.push(p);
                } else {
                    *outcomes.entry(a.next.outcome()).or_default() += 1;
                }
                let shown = Planned {
                    plan: decision.plan.clone().unwrap_or_else(|| p.plan.clone()),
                    ..p.clone()
                };
                print_plan(&shown, &to_shown, format, Some(&a));
                if format == Format::Human {
                    print_applied(&args.db, id, p, &decision, &a);
                }
            }
            // A batch goes on past an instance that moved since its plan
            // (running it again moves the rest); anything else stops it.
            Err(e @ RepairError::Moved { .. }) if batch => {
                if format == Format::Human {
                    eprintln!("{id}: {e}; it was not moved");
                }
                not_moved.push((id.clone(), e.to_string()));
            }
            Err(e) => {
                if !held.is_empty() {
                    eprintln!("{}", still_held(&held, &args.db));
                }
                return refusal(format, id, &e);
            }
        }
    }
    let released = match &ramp {
        Some((shape, actor)) if !held.is_empty() => {
            let ids: Vec<String> = held.iter().map(|p| p.plan.instance.clone()).collect();
            match qflow_engine::release::apply_instances(&mut store, &ids, shape, now, actor) {
                Ok((plan, applied)) => {
                    for p in &held {
                        match repair::next_of(&store, &p.plan.instance, p.next.assumed.as_ref()) {
                            Ok(next) => *outcomes.entry(next.outcome()).or_default() += 1,
                            Err(e) => return refusal(format, &p.plan.instance, &e),
                        }
                    }
                    let preview = Preview::of(ReleaseKind::Instance, &ids.join(","), &plan);
                    Some((preview, applied, shape.words()))
                }
                Err(e) => {
                    eprintln!("{}", still_held(&held, &args.db));
                    let code = match e {
                        StoreError::Release(_) => REFUSED,
                        _ => USAGE,
                    };
                    return ops::fail(format, code, "refused", format!("the ramped release: {e}"));
                }
            }
        }
        _ => None,
    };
    if batch || released.is_some() {
        print_batch(
            format,
            moved,
            &outcomes,
            &not_moved,
            released.as_ref(),
            &args.db,
        );
        if !not_moved.is_empty() {
            return ExitCode::from(REFUSED);
        }
    }
    ExitCode::SUCCESS
}

/// The ramp a migration was given (`--ramp`, `--max-rate`) and who
/// applies it; `--by`/`--reason` without one are refused (nothing else of
/// a migration records an actor).
fn ramp_of(args: &MigrateArgs) -> Result<Option<(Shape, Actor)>, String> {
    let ramped = args.shape.ramp.is_some() || !args.shape.max_rate.is_empty();
    if !ramped {
        if args.record.by.is_some() || args.record.reason.is_some() {
            return Err("--by and --reason are recorded with a ramped migration's hold and release: give --ramp R or --max-rate DEPENDENCY=N/min, or leave them out".into());
        }
        return Ok(None);
    }
    let shape = args.shape.shape()?;
    let mut actor = args.record.actor()?;
    if actor.reason.is_none() {
        actor = actor.because(Some(&format!(
            "migrated to {}, held for a ramped release",
            args.to
        )));
    }
    Ok(Some((shape, actor)))
}

/// The instances a migration's release lets go (as `release` names
/// them): those with a park in `plan`, in its order, each once.
fn held_value(plan: &qflow_engine::runtime::ramp::Plan) -> String {
    let mut seen = std::collections::BTreeSet::new();
    plan.releases
        .iter()
        .filter(|r| seen.insert(r.instance.as_str()))
        .map(|r| r.instance.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// What is left when a held migration stops before its release: the
/// instances stay quarantined, each next attempt parked; the fix.
fn still_held(held: &[&Planned], db: &Location) -> String {
    let ids: Vec<&str> = held.iter().map(|p| p.plan.instance.as_str()).collect();
    format!(
        "{} migrated and held, not yet released (each quarantined, its next attempt parked): `qflow release {} --db {db} --ramp R` lets them go",
        ids.len(),
        ids.join(" ")
    )
}

/// The preview of a migration's ramped release (`dry_run`: nothing applied).
fn print_preview(format: Format, preview: &Preview, dry_run: bool) {
    match format {
        Format::Json => {
            let v = json!({"dry_run": dry_run, "preview": preview});
            println!("{}", json_line(&v, &["dry_run"]));
        }
        Format::Human => {
            for l in preview_lines(preview) {
                println!("{l}");
            }
        }
    }
}

/// The human lines of one applied migration.
fn print_applied(
    db: &Location,
    id: &str,
    p: &Planned,
    decision: &qflow_engine::runtime::Decision,
    a: &Applied,
) {
    if a.held {
        println!(
            "applied: {id} is on deployment {}, held for the ramped release below: its next attempt parked at the migration instant, the instance quarantined until the ramp lets it go",
            a.deployment
        );
        return;
    }
    let next = match decision.status {
        Status::Running | Status::Waiting => {
            format!("; `qflow resume {id} --db {db}` continues it")
        }
        _ => String::new(),
    };
    println!(
        "applied: {id} is on deployment {}, {}{next}",
        a.deployment,
        decision.status.as_str().to_uppercase()
    );
    let same = if a.next == p.next {
        "as previewed".to_string()
    } else {
        format!("not the preview's ({})", p.next.describe(p.started_ms))
    };
    println!(
        "  next decision, read back: {} ({same})",
        qflow_engine::text::printable(&a.next.describe(p.started_ms))
    );
}

/// A batch's result counted by outcome (each instance's next decision, read
/// back once applied, and for the held ones once released), never by
/// submission; with a ramp, the release that spreads them.
fn print_batch(
    format: Format,
    moved: u64,
    outcomes: &BTreeMap<String, u64>,
    not_moved: &[(String, String)],
    released: Option<&(Preview, RampedRelease, String)>,
    db: &Location,
) {
    let mut by: Vec<(&String, &u64)> = outcomes.iter().collect();
    by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    match format {
        Format::Json => {
            let mut v = json!({
                "migrated": moved,
                "outcomes": by.iter().map(|(k, n)| json!({"next": k, "instances": n})).collect::<Vec<_>>(),
                "not_moved": not_moved.iter().map(|(i, why)| json!({"instance": i, "why": why})).collect::<Vec<_>>(),
            });
            if let Some((preview, applied, _)) = released {
                v["held"] = json!(applied.released.len());
                v["release"] = json!({"ramp": applied.schedule, "start_ms": applied.start_ms,
                    "end_ms": applied.end_ms, "parks": applied.parks});
                v["preview"] = json!(preview);
            }
            println!("{}", json_line(&v, &["migrated"]));
        }
        Format::Human => {
            if let Some((preview, _, _)) = released {
                for l in preview_lines(preview) {
                    println!("{l}");
                }
            }
            let parts: Vec<String> = by.iter().map(|(k, n)| format!("{n} {k}")).collect();
            let of = moved + not_moved.len() as u64;
            println!(
                "{moved} of {of} migrated{}{}",
                if parts.is_empty() {
                    String::new()
                } else {
                    format!("; next: {}", parts.join("; "))
                },
                if not_moved.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; {} not moved (took a decision since the plan: run the command again)",
                        not_moved.len()
                    )
                }
            );
            if let Some((_, applied, words)) = released {
                let held = applied.released.len();
                let not_held = moved.saturating_sub(held as u64);
                println!(
                    "{held} held and released by ramp {} ({words}): {} from {} to {}{}",
                    applied.schedule,
                    match applied.parks {
                        1 => "1 attempt".to_string(),
                        n => format!("{} attempts", qflow_engine::text::group(n)),
                    },
                    instant(applied.start_ms),
                    instant(applied.end_ms),
                    if not_held == 0 {
                        String::new()
                    } else {
                        format!(
                            "; {not_held} not held (already quarantined, or a next step that is not a task's attempt: it runs when due)"
                        )
                    }
                );
                println!(
                    "`qflow unpause --stop-ramp {} --db {db}` stops it: the instances with an attempt not yet let go are quarantined again.",
                    applied.schedule
                );
            }
        }
    }
}

pub(crate) fn resume(args: ResumeArgs) -> ExitCode {
    if args.all {
        return resume_all(&args);
    }
    if args.shape.ramp.is_some() || !args.shape.max_rate.is_empty() || args.shape.dry_run {
        return ops::fail(
            args.format,
            USAGE,
            "usage",
            "--ramp, --max-rate and --dry-run go with --all (one instance's retries are released by `qflow release INSTANCE --ramp R`)",
        );
    }
    let Some(instance) = args.instance.clone() else {
        unreachable!("clap requires an instance or --all")
    };
    resume_one(&args, &instance)
}

/// `resume --all`: the unfinished instances, their retries spread first
/// by a planned release when a ramp is given, then each resumed in turn;
/// the first failing exit of them, and a summary counting how each ended.
fn resume_all(args: &ResumeArgs) -> ExitCode {
    let fmt = args.format;
    let mut store = match ops::open_existing(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(fmt, USAGE, "store", e),
    };
    let ids = match repair::unfinished(&store, args.deployment) {
        Ok(ids) => ids,
        Err(e) => return ops::fail(fmt, USAGE, "store", e),
    };
    if ids.is_empty() {
        match fmt {
            Format::Json => println!("{}", json!({"resumed": 0, "ended": {}})),
            Format::Human => {
                println!("no unfinished instance to resume (quarantined ones are left as they are)")
            }
        }
        return ExitCode::SUCCESS;
    }
    let ramped = args.shape.ramp.is_some() || !args.shape.max_rate.is_empty();
    if ramped || args.shape.dry_run {
        if let Err(code) = release_before_resuming(args, &mut store, &ids) {
            return code;
        }
        if args.shape.dry_run {
            return ExitCode::SUCCESS;
        }
    }
    // Each resume opens the database itself, as `resume INSTANCE` does.
    drop(store);
    let mut first_failure = 0u8;
    for id in &ids {
        if fmt == Format::Human {
            println!("resume {id}:");
        }
        let code = resume_one(args, id);
        if code != ExitCode::SUCCESS && first_failure == 0 {
            first_failure = exit_of(code);
        }
    }
    // How each ended, read back from the store.
    let mut ended: BTreeMap<String, u64> = BTreeMap::new();
    if let Ok(store) = ops::open_existing(&args.db) {
        for id in &ids {
            if let Ok(Some(row)) = store.instance(id) {
                *ended.entry(row.status.as_str().to_string()).or_default() += 1;
            }
        }
    }
    match fmt {
        Format::Json => println!("{}", json!({"resumed": ids.len(), "ended": ended})),
        Format::Human => {
            let parts: Vec<String> = ended.iter().map(|(s, n)| format!("{n} {s}")).collect();
            println!("resumed {} instances: {}", ids.len(), parts.join(", "));
        }
    }
    ExitCode::from(first_failure)
}

/// The planned release of `ids`' armed retries before they are resumed:
/// its preview (all of it with `--dry-run`), else applied in one
/// transaction and said.
fn release_before_resuming(
    args: &ResumeArgs,
    store: &mut qflow_engine::store::Store,
    ids: &[String],
) -> Result<(), ExitCode> {
    let fmt = args.format;
    let shape = args
        .shape
        .shape()
        .map_err(|e| ops::fail(fmt, USAGE, "usage", e))?;
    let actor = args
        .record
        .actor()
        .map_err(|e| ops::fail(fmt, USAGE, "usage", e))?;
    let now = qflow_engine::runtime::clock::system_now_ms();
    let value = ids.join(",");
    if args.shape.dry_run {
        let plan = qflow_engine::release::preview_instances(store, ids, &shape, now)
            .map_err(|e| ops::fail(fmt, USAGE, "store", e))?;
        print_preview(
            fmt,
            &Preview::of(ReleaseKind::Instance, &value, &plan),
            true,
        );
        if fmt == Format::Human {
            println!(
                "dry run: nothing was changed ({} instances would be resumed)",
                ids.len()
            );
        }
        return Ok(());
    }
    let (plan, applied) =
        match qflow_engine::release::apply_instances(store, ids, &shape, now, &actor) {
            Ok(a) => a,
            Err(e @ StoreError::Release(_)) => {
                return Err(ops::fail(
                    fmt,
                    REFUSED,
                    "refused",
                    format!("{e}; nothing was resumed"),
                ))
            }
            Err(e) => return Err(ops::fail(fmt, USAGE, "store", e)),
        };
    let preview = Preview::of(ReleaseKind::Instance, &value, &plan);
    match fmt {
        Format::Json => {
            let v = json!({"release": {"ramp": applied.schedule, "start_ms": applied.start_ms,
                "end_ms": applied.end_ms, "parks": applied.parks}, "preview": preview});
            println!("{}", json_line(&v, &["release"]));
        }
        Format::Human => {
            for l in preview_lines(&preview) {
                println!("{l}");
            }
            println!(
                "released by ramp {} ({}): {} from {} to {}; `qflow unpause --stop-ramp {} --db {}` stops it",
                applied.schedule,
                shape.words(),
                match applied.parks {
                    1 => "1 retry".to_string(),
                    n => format!("{} retries", qflow_engine::text::group(n)),
                },
                instant(applied.start_ms),
                instant(applied.end_ms),
                applied.schedule,
                args.db
            );
        }
    }
    Ok(())
}

/// The number an exit code carries (`ExitCode` hides it).
fn exit_of(code: ExitCode) -> u8 {
    [1u8, 2, 3, 4, 101]
        .into_iter()
        .find(|n| ExitCode::from(*n) == code)
        .unwrap_or(1)
}

/// `resume INSTANCE`: the one instance, as `run` drives it.
fn resume_one(args: &ResumeArgs, instance: &str) -> ExitCode {
    let format = match args.format {
        Format::Human => run_cli::Format::Human,
        Format::Json => run_cli::Format::Json,
    };
    let fmt = args.format;
    let store = match ops::open_existing(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(fmt, USAGE, "store", e),
    };
    let row = match store.instance(instance) {
        Ok(Some(r)) => r,
        Ok(None) => {
            return ops::fail(
                fmt,
                USAGE,
                "usage",
                format!(
                    "no instance {} in {}; `qflow instances --db {}` lists them",
                    instance, args.db, args.db
                ),
            )
        }
        Err(e) => return ops::fail(fmt, USAGE, "store", e),
    };
    if row.status == Status::Failed {
        return ops::fail(
            fmt,
            REFUSED,
            "refused",
            format!(
                "instance {} is FAILED: repair it first (`qflow migrate {} --to MODEL|DEPLOYMENT --db {}`), then resume it",
                instance,
                instance,
                args.db
            ),
        );
    }
    let expect = match args.expect.as_deref().map(Expectation::parse) {
        None => None,
        Some(Ok(e)) => Some(e),
        Some(Err(m)) => return ops::fail(fmt, USAGE, "usage", format!("--expect {m}")),
    };
    let until = match &args.until {
        None => None,
        Some(u) => match qflow_engine::duration::parse_input(u) {
            Ok(d) => Some(d),
            Err(e) => return ops::fail(fmt, USAGE, "usage", format!("--until `{u}`: {e}")),
        },
    };
    let graph = match qflow_engine::runtime::shell::deployed_graph(&store, row.deployment_id) {
        Ok(g) => g,
        Err(e) => return ops::fail(fmt, USAGE, "store", e),
    };
    // The scenario given, else the one beside the deployment's model file
    // (the convention `run` follows), else none.
    let beside = match (&args.scenario, args.no_scenario) {
        (None, false) => match store.deployments() {
            Ok(deps) => deps
                .into_iter()
                .find(|d| d.id == row.deployment_id)
                .and_then(|d| d.origin)
                .and_then(|origin| scenario_beside(std::path::Path::new(&origin))),
            Err(e) => return ops::fail(fmt, USAGE, "store", e),
        },
        _ => None,
    };
    if let Some(p) = &beside {
        eprintln!(
            "using scenario {} (beside the model of deployment {}; --no-scenario to run without)",
            p.display(),
            row.deployment_id
        );
    }
    let scenario = match args.scenario.as_ref().or(beside.as_ref()) {
        None => Scenario::default(),
        Some(p) => match load_scenario(p, &ScenarioChoice::File(p.clone())) {
            Ok((s, _)) => {
                let misfits = scenario_check::check(&s, &graph);
                if !misfits.is_empty() {
                    let all: Vec<String> = misfits.iter().map(|m| m.to_string()).collect();
                    return ops::fail(
                        fmt,
                        USAGE,
                        "scenario",
                        format!("scenario {}: {}", p.display(), all.join("; ")),
                    );
                }
                s
            }
            Err(e) => return ops::fail(fmt, USAGE, "scenario", e),
        },
    };
    let mut resolves = Vec::new();
    for r in &args.resolve {
        match run_cli::parse_resolve(r, Some(&graph)) {
            Ok(e) => resolves.push(e),
            Err(m) => return ops::fail(fmt, USAGE, "usage", m),
        }
    }
    // The first decision, previewed by the runtime's own decision on the
    // stored facts; refused when it fixes nothing.
    let (next, started_ms) =
        match repair::resume_next(&store, instance, resolves.first(), args.allow_unchanged) {
            Ok(n) => n,
            Err(e) => return refusal(fmt, instance, &e),
        };
    let since = match store.history(instance) {
        Ok(h) => h.last().map_or(0, |r| r.seq),
        Err(e) => return ops::fail(fmt, USAGE, "store", e),
    };
    let preview = format!(
        "next decision: {}",
        qflow_engine::text::printable(&next.describe(started_ms))
    );
    match fmt {
        Format::Human => println!("{preview}"),
        Format::Json => eprintln!("{preview}"),
    }
    let mut run = match LocalRun::attach(store, instance, scenario, VirtualClock::new(0)) {
        Ok(r) => r,
        Err(e) => return ops::fail(fmt, USAGE, "store", e),
    };
    let opts = run_cli::Opts {
        effects_log: None,
        format,
        resolves,
        until,
        horizon: Some(qflow_engine::runtime::driver::DEFAULT_HORIZON),
        db_shown: Some(args.db.to_string()),
        expect,
        columns: Columns::of(Some(run.graph())),
        quiet: false,
    };
    let code = run_cli::drive_run(&mut run, &opts);
    // What the first decision was, read back from the history.
    if let Ok(Some((was, same))) =
        repair::what_it_was(run.store(), instance, since, &next, started_ms)
    {
        let note = if same {
            "as previewed"
        } else if next.assumed.is_some() {
            "the assumed failure did not recur"
        } else {
            "not the preview's"
        };
        let line = format!(
            "next decision was: {} ({note})",
            qflow_engine::text::printable(&was)
        );
        match fmt {
            Format::Human => println!("{line}"),
            Format::Json => eprintln!("{line}"),
        }
    }
    code
}
