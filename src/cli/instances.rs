//! `qflow instances` and `qflow show`: a database's instances, listed and
//! one in full, rendered from the engine's inspection (docs/cli.md).

use std::process::ExitCode;

use qflow_engine::inspect::fleet::{self, Filter};
use qflow_engine::inspect::{Held, Inspection, InstanceSummary, NodeKind, NodeState, Waiting};
use qflow_engine::instance::Status;
use qflow_engine::runtime::snapshot::canonical_string;
use qflow_engine::store::contain::Actor;
use qflow_engine::store::Location;
use qflow_engine::text::counted;
use serde_json::{json, Value};

use super::ops::{self, Format, USAGE};
use super::run::{human_line, json_line, Columns};

/// List instances: status, deployment, current node, attempts, next due time, failure.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    /// Only instances in this status: running, waiting, completed or failed.
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    /// Only instances of this deployment.
    #[arg(long, value_name = "D")]
    pub deployment: Option<i64>,
    /// Only instances parked for a retry of this failure class (transient
    /// or rate-limited): what `qflow pause --class` would hold.
    #[arg(long, value_name = "CLASS")]
    pub class: Option<String>,
    /// Only instances parked for a retry of this dependency (a registered
    /// task's name or a channel): what `qflow pause --dependency` would hold.
    #[arg(long, value_name = "NAME")]
    pub dependency: Option<String>,
    /// Only FAILED instances whose failure has this code (PROVIDER_DOWN,
    /// q.timeout). Reads every instance the other filters leave, then pages.
    #[arg(long, value_name = "CODE")]
    pub code: Option<String>,
    /// List at most N instances (0: every one); the rest are counted.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMIT)]
    pub limit: u64,
    /// Skip the first N instances that match (the next page: --offset 50).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: u64,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

/// How many instances `qflow instances` lists unless told: a screenful,
/// read and inspected in milliseconds however large the database.
pub(crate) const DEFAULT_LIMIT: u64 = 50;

/// Print one instance in full: state, nodes, snapshot, timers, outbox,
/// correlations, incidents and history.
#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// The instance id (`qflow instances` lists them).
    pub instance: String,
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

fn parse_status(s: &str) -> Result<Status, String> {
    Status::parse(&s.to_ascii_lowercase()).ok_or_else(|| {
        let all = ["running", "waiting", "completed", "failed"];
        let hint = qflow_engine::suggest::closest(s, all)
            .map(|x| format!(" (did you mean {x}?)"))
            .unwrap_or_default();
        format!("--status {s}: not a status{hint}; write running, waiting, completed or failed")
    })
}

/// `--class`: a class that parks a retry (the others never park, so they
/// would match nothing).
fn parse_class(s: &str) -> Result<String, String> {
    use qflow_engine::instance::event::FailureClass;
    match FailureClass::parse(s) {
        Some(FailureClass::Transient | FailureClass::RateLimited | FailureClass::Deferred) => {
            Ok(s.to_string())
        }
        _ => Err(format!(
            "--class {s}: not a class that parks a retry; write transient, rate-limited or deferred"
        )),
    }
}

fn summary_json(s: &InstanceSummary) -> Value {
    json!({
        "instance": s.id,
        "process": s.process,
        "deployment": s.deployment_id,
        "status": s.status.as_str(),
        "node": s.node,
        "attempts": s.attempts,
        "next_s": s.next_ms.map(ops::seconds),
        "waiting_for": s.waiting_for,
        "code": s.failure_code,
        "reason": s.failure_reason,
        "quarantined_ms": s.quarantined_ms,
        "quarantined_by": s.quarantined_by,
        "quarantine_reason": s.quarantine_reason,
        "held_by": s.held_by.iter().map(|h| json!({"kind": h.kind.flag(), "value": h.value,
            "paused_ms": h.paused_ms, "paused_by": h.paused_by, "reason": h.reason}))
            .collect::<Vec<_>>(),
        "unreadable": s.unreadable,
    })
}

/// A retry park's pauses in a list's NEXT cell: `held by dependency
/// payments.charge paused by alice@ops1` (its due time, kept, is beside it;
/// the reason is `show`'s).
fn held_words(held: &[Held]) -> Option<String> {
    (!held.is_empty()).then(|| {
        let pauses: Vec<String> = held
            .iter()
            .map(|h| {
                format!(
                    "{} paused {}",
                    h.pause(),
                    Actor::words(h.paused_by.as_deref(), None)
                )
            })
            .collect();
        format!("held by {}", pauses.join(" and "))
    })
}

pub(crate) fn list(args: ListArgs) -> ExitCode {
    let format = args.format;
    let status = match args.status.as_deref().map(parse_status).transpose() {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    let store = match ops::open_for_reading(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    if let Some(d) = args.deployment {
        match store.deployment(d) {
            Ok(Some(_)) => {}
            Ok(None) => {
                return ops::fail(
                    format,
                    USAGE,
                    "usage",
                    format!(
                    "--deployment {d}: no such deployment (`qflow deployments --db {}` lists them)",
                    args.db
                ),
                )
            }
            Err(e) => return ops::fail(format, USAGE, "store", e),
        }
    }
    let class = match args.class.as_deref().map(parse_class).transpose() {
        Ok(c) => c,
        Err(e) => return ops::fail(format, USAGE, "usage", e),
    };
    if args
        .dependency
        .as_deref()
        .is_some_and(|d| d.trim().is_empty())
    {
        return ops::fail(
            format,
            USAGE,
            "usage",
            "--dependency needs a name: a registered task (payments.charge) or a channel (bank)",
        );
    }
    if let Some(d) = args.dependency.as_deref() {
        // A name no deployed model uses matches nothing, now or later: say
        // so, with the nearest one, rather than "no instances match".
        match qflow_engine::dependencies::dependencies(&store) {
            Ok(known) if !known.contains(d) => {
                let hint = qflow_engine::suggest::closest(d, known.iter().map(String::as_str))
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                let all: Vec<&str> = known.iter().map(String::as_str).collect();
                return ops::fail(
                    format,
                    USAGE,
                    "usage",
                    format!(
                        "--dependency {d}: no deployed model has this task or channel; {hint}known: {}",
                        if all.is_empty() { "none (nothing is deployed)".to_string() } else { all.join(", ") }
                    ),
                );
            }
            Ok(_) => {}
            Err(e) => return ops::fail(format, USAGE, "store", e),
        }
    }
    let code = match args.code.as_deref().map(str::trim) {
        Some("") => {
            return ops::fail(
                format,
                USAGE,
                "usage",
                "--code needs a failure code (PROVIDER_DOWN, q.timeout)",
            )
        }
        c => c.map(str::to_string),
    };
    let filter = Filter {
        status,
        deployment: args.deployment,
        class,
        dependency: args.dependency.clone(),
        // A code is read from each instance's inspection: every instance the
        // other filters leave is read, then the page is cut here.
        offset: if code.is_some() { 0 } else { args.offset },
        limit: if code.is_some() {
            None
        } else {
            (args.limit > 0).then_some(args.limit)
        },
    };
    let mut page = match fleet::instances(&store, &filter) {
        Ok(r) => r,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    if let Some(code) = &code {
        let codes: std::collections::BTreeSet<String> = page
            .instances
            .iter()
            .filter_map(|s| s.failure_code.clone())
            .collect();
        page.instances
            .retain(|s| s.failure_code.as_deref() == Some(code.as_str()));
        if page.instances.is_empty() && !codes.is_empty() {
            let hint = qflow_engine::suggest::closest(code, codes.iter().map(String::as_str))
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            let all: Vec<&str> = codes.iter().map(String::as_str).collect();
            eprintln!(
                "note: --code {code}: no instance has this code{hint}; the codes there are: {}",
                all.join(", ")
            );
        }
        page.total = page.instances.len() as u64;
        let from = (args.offset as usize).min(page.instances.len());
        page.instances.drain(..from);
        if args.limit > 0 {
            page.instances.truncate(args.limit as usize);
        }
    }
    let more = page.after(args.offset);
    let next = format!(
        "… {} more (--offset {} for the next page, --limit 0 for every one)",
        qflow_engine::text::group(more),
        args.offset + page.instances.len() as u64
    );
    let rows = page.instances;
    match format {
        Format::Json => {
            let all: Vec<Value> = rows.iter().map(summary_json).collect();
            // The page and where the next one starts (null: this is the last).
            let page = json!({
                "instances": all,
                "total": page.total,
                "offset": args.offset,
                "limit": (args.limit > 0).then_some(args.limit),
                "next_offset": (more > 0).then(|| args.offset + rows.len() as u64),
            });
            println!("{}", canonical_string(&page));
            if more > 0 {
                eprintln!("{next}");
            }
        }
        Format::Human if rows.is_empty() && page.total > 0 => println!(
            "no instances past --offset {} ({} match)",
            args.offset,
            qflow_engine::text::group(page.total)
        ),
        Format::Human if rows.is_empty() => println!("no instances match"),
        Format::Human => {
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|s| {
                    let waits = match (&s.waiting_for, held_words(&s.held_by)) {
                        (Some(w), Some(h)) => Some(format!("{w}, {h}")),
                        (w, h) => w.clone().or(h),
                    };
                    let next = match (s.next_ms, &waits) {
                        (Some(ms), Some(w)) => format!("{} ({w})", ops::since_start(ms)),
                        (Some(ms), None) => ops::since_start(ms),
                        (None, Some(w)) => format!("({w})"),
                        (None, None) => "-".into(),
                    };
                    let failure = match (&s.failure_code, &s.failure_reason, &s.unreadable) {
                        (_, _, Some(why)) => format!("unreadable: {why}"),
                        (Some(c), Some(r), _) => format!("{c} ({r})"),
                        (Some(c), None, _) => c.clone(),
                        _ => "-".into(),
                    };
                    let status = s.status.as_str().to_uppercase();
                    vec![
                        s.id.clone(),
                        match s.quarantined_ms {
                            Some(_) => format!(
                                "{status} (quarantined {})",
                                Actor::words(s.quarantined_by.as_deref(), None)
                            ),
                            None => status,
                        },
                        s.deployment_id.to_string(),
                        s.node.clone().unwrap_or_else(|| "-".into()),
                        s.attempts.map_or("-".into(), |a| a.to_string()),
                        next,
                        failure,
                    ]
                })
                .collect();
            ops::table(
                &[
                    "INSTANCE",
                    "STATUS",
                    "DEPLOYMENT",
                    "NODE",
                    "ATTEMPTS",
                    "NEXT",
                    "FAILURE",
                ],
                &cells,
            );
            if more > 0 {
                println!("{next}");
            }
        }
    }
    ExitCode::SUCCESS
}

fn kind_word(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Start => "start",
        NodeKind::End => "end",
        NodeKind::ErrorEnd => "error end",
        NodeKind::Gateway => "gateway",
        NodeKind::Task => "task",
        NodeKind::Call => "call",
        NodeKind::Timer => "timer",
        NodeKind::Boundary => "boundary",
    }
}

/// A node's state: a word, and the instant it concerns (ms since start).
fn state_of(s: &NodeState) -> (&'static str, Option<i64>) {
    match s {
        NodeState::Idle => ("idle", None),
        NodeState::Active => ("active", None),
        NodeState::Parked { eligible_at_ms } => ("parked", Some(*eligible_at_ms)),
        NodeState::Timer { due_at_ms } => ("timer", Some(*due_at_ms)),
        NodeState::WaitingResponse { timeout_at_ms } => ("waiting-response", *timeout_at_ms),
        NodeState::WaitingReconciliation => ("waiting-reconciliation", None),
        NodeState::Joined => ("joined", None),
        NodeState::Failed => ("failed", None),
        NodeState::Completed => ("completed", None),
        NodeState::Unknown => ("unknown", None),
    }
}

/// `qflow show --format json`: the inspection as one JSON object.
fn show_json(i: &Inspection) -> Value {
    let snapshot: serde_json::Map<String, Value> = i
        .snapshot
        .iter()
        .map(|k| {
            (
                k.key.clone(),
                serde_json::from_str(&k.value).unwrap_or(Value::String(k.value.clone())),
            )
        })
        .collect();
    let failure = snapshot
        .get("failure")
        .filter(|_| i.status == Status::Failed)
        .cloned();
    let nodes: Vec<Value> = i
        .nodes
        .iter()
        .map(|n| {
            let (state, at) = state_of(&n.state);
            json!({"node": n.id, "kind": kind_word(n.kind), "state": state,
                   "at_s": at.map(ops::seconds), "attempts": n.attempts})
        })
        .collect();
    let waiting = i.waiting.as_ref().map(|w| match w {
        Waiting::Reconciliation {
            node,
            code,
            attempts,
        } => {
            json!({"for": "reconciliation", "node": node, "code": code, "attempts": attempts})
        }
        Waiting::Timer {
            node,
            purpose,
            due_ms,
        } => json!({"for": qflow_engine::inspect::waiting_for(*purpose), "node": node,
                    "due_s": ops::seconds(*due_ms)}),
        Waiting::Nothing { .. } => json!({"for": "nothing"}),
    });
    json!({
        "instance": i.id,
        "process": i.process,
        "deployment": i.deployment_id,
        "status": i.status.as_str(),
        "updated_s": ops::seconds(i.updated_ms - i.started_ms),
        "current": i.current,
        "failure": failure,
        "waiting": waiting,
        "quarantined_ms": i.quarantined_ms,
        "quarantined_by": i.quarantined_by,
        "quarantine_reason": i.quarantine_reason,
        "held": i.held.iter().map(|h| {
            let mut v = json!({"node": h.node, "timer": h.timer,
                "due_s": ops::seconds(h.due_ms), "kind": h.kind.flag(), "value": h.value,
                "paused_ms": h.paused_ms, "paused_by": h.paused_by, "reason": h.reason});
            // A retry park's entry is as it always was; others say what.
            if h.request != qflow_engine::inspect::HeldRequest::Retry {
                v["request"] = json!(h.request.as_str());
            }
            v
        }).collect::<Vec<_>>(),
        "ramp_held": i.ramped.iter().map(|h| json!({"ramp": h.schedule, "node": h.node,
            "timer": h.timer, "due_s": ops::seconds(h.due_ms - i.started_ms),
            "release_s": ops::seconds(h.release_ms - i.started_ms), "release_ms": h.release_ms,
            "delayed": h.release_ms > h.due_ms, "ramp_rates": h.ramp, "max_rate": h.max_rate, "by": h.by, "reason": h.reason}))
            .collect::<Vec<_>>(),
        "nodes": nodes,
        "snapshot": snapshot,
        "raw_snapshot": i.raw_snapshot,
        "timers": i.timers.iter().map(|t| json!({"id": t.id, "node": t.node,
            "purpose": t.purpose.as_str(), "due_s": ops::seconds(t.due_ms - i.started_ms),
            "attempt": t.attempt})).collect::<Vec<_>>(),
        "outbox": i.outbox.iter().map(|o| json!({"node": o.node, "channel": o.channel,
            "attempt": o.attempt, "state": o.state.as_str(), "deliveries": o.deliveries,
            "idempotencyKey": o.idempotency_key, "reason": o.reason})).collect::<Vec<_>>(),
        "correlations": i.correlations.iter().map(|c| json!({"key": c.key, "node": c.node,
            "in_backoff": c.in_backoff})).collect::<Vec<_>>(),
        "containment_log": i.containment_log,
        "incidents": i.incidents.iter().map(|x| json!({"id": x.id, "node": x.node,
            "kind": x.kind.to_string(), "message": x.message,
            "opened_s": ops::seconds(x.opened_ms - i.started_ms),
            "closed_s": x.closed_ms.map(|c| ops::seconds(c - i.started_ms))})).collect::<Vec<_>>(),
        "history": i.history.iter().map(|h| h.line.as_ref().map_or(Value::Null,
            |l| serde_json::from_str(&l.to_canonical()).unwrap_or(Value::Null))).collect::<Vec<_>>(),
    })
}

/// What holds the instance back, in `show`'s status block: each held retry
/// park with its pause (since when, by whom, why) and the command that
/// lifts it, and the quarantine (the same) with the one that releases it.
fn containment_lines(i: &Inspection, db: &str) -> Vec<String> {
    let mut out: Vec<String> = i
        .held
        .iter()
        .map(|h| {
            format!(
                "held     {} of {} due at {} is held by the pause of {} since {} {}; its due time is kept: `qflow unpause --{} {} --db {db}` lets it run",
                h.request.words(),
                h.node,
                ops::since_start(h.due_ms),
                h.pause(),
                ops::timestamp(h.paused_ms),
                h.by(),
                h.kind.flag(),
                h.value,
            )
        })
        .collect();
    for h in i.ramped.iter().filter(|h| h.release_ms > h.due_ms) {
        let shape = qflow_engine::store::release::ReleaseSchedule::words_of(
            h.ramp.as_deref(),
            h.max_rate.as_deref(),
        );
        out.push(format!(
            "ramped   the retry of {} due at {} is held by release ramp {} ({shape}) {} until {}: `qflow unpause --stop-ramp {} --db {db}` stops the ramp",
            h.node,
            ops::since_start(h.due_ms - i.started_ms),
            h.schedule,
            Actor::words(Some(&h.by), h.reason.as_deref()),
            ops::since_start(h.release_ms - i.started_ms),
            h.schedule,
        ));
    }
    if let Some(ms) = i.quarantined_ms {
        out.push(format!(
            "quarantined since {} {}: nothing decides for it until `qflow release {} --db {db}`",
            ops::timestamp(ms),
            Actor::words(i.quarantined_by.as_deref(), i.quarantine_reason.as_deref()),
            i.id
        ));
    }
    out
}

/// `qflow show`: the inspection in sections, for people.
fn show_human(i: &Inspection, db: &str, columns: &Columns) -> Vec<String> {
    let mut out = vec![format!(
        "instance {}  (process {}, deployment {})",
        i.id, i.process, i.deployment_id
    )];
    let status = i.status.as_str().to_uppercase();
    match (&i.status, &i.failure) {
        (Status::Failed, Some(f)) => {
            out.push(format!(
                "status   {status} at {}: {} ({}), {}",
                f.node,
                f.code,
                f.reason,
                counted(
                    u64::from(i.failed_attempts().unwrap_or(0)),
                    "attempt",
                    "attempts"
                )
            ));
            if let Some(m) = &f.message {
                let class = f
                    .class
                    .as_deref()
                    .map(|c| format!("{c}: "))
                    .unwrap_or_default();
                out.push(format!("         last failure: {class}{m}"));
            }
            // A damaged snapshot is refused by migrate until its bytes are
            // corrected: say that, not a command that would be refused.
            if f.code == qflow_engine::instance::codes::SNAPSHOT_DAMAGED {
                out.push(format!(
                    "repair   the stored snapshot is damaged (shown below as stored; the incident says what is wrong): correct it in the database first, since migrate refuses it until then; then qflow migrate {} --to {} --db {db} --dry-run, and qflow resume {} --db {db}",
                    i.id, i.deployment_id, i.id
                ));
            } else {
                out.push(format!(
                    "repair   qflow migrate {} --to MODEL|DEPLOYMENT --db {db} --dry-run   (then without --dry-run, then qflow resume {} --db {db})",
                    i.id, i.id
                ));
            }
        }
        _ => {
            let waits = match &i.waiting {
                // Resuming a quarantined instance is refused: its own line
                // below says what releases it.
                _ if i.status == Status::Running && i.quarantined_ms.is_some() => format!(
                    ": a token is ready at {}",
                    i.current.as_deref().unwrap_or("?")
                ),
                _ if i.status == Status::Running => format!(
                    ": a token is ready at {} (`qflow resume {} --db {db}` continues it)",
                    i.current.as_deref().unwrap_or("?"),
                    i.id
                ),
                Some(Waiting::Reconciliation { node, code, .. }) => format!(
                    ": waiting at {node} for the reconciliation of {}",
                    code.as_deref().unwrap_or("an unknown outcome")
                ),
                Some(Waiting::Timer {
                    node,
                    purpose,
                    due_ms,
                }) => format!(
                    ": waiting at {node} for its {} due at {}",
                    qflow_engine::inspect::waiting_for(*purpose),
                    ops::since_start(*due_ms)
                ),
                Some(Waiting::Nothing { .. }) => ": waiting for nothing a run can give".into(),
                None => String::new(),
            };
            out.push(format!("status   {status}{waits}"));
        }
    }
    out.extend(containment_lines(i, db));
    out.push(format!(
        "last decision at {}",
        ops::since_start(i.updated_ms - i.started_ms)
    ));
    out.push(String::new());
    out.push("nodes".into());
    let w = i
        .nodes
        .iter()
        .map(|n| n.id.chars().count())
        .max()
        .unwrap_or(4);
    for n in &i.nodes {
        let (state, at) = state_of(&n.state);
        let at = at
            .map(|a| format!(" {}", ops::since_start(a)))
            .unwrap_or_default();
        let attempts = n
            .attempts
            .map(|a| format!("  {} burned", counted(u64::from(a), "attempt", "attempts")))
            .unwrap_or_default();
        out.push(format!(
            "  {:<w$}  {:<9}  {state}{at}{attempts}",
            n.id,
            kind_word(n.kind)
        ));
    }
    let section = |out: &mut Vec<String>, title: &str, lines: Vec<String>| {
        out.push(String::new());
        out.push(title.to_string());
        if lines.is_empty() {
            out.push("  none".into());
        }
        out.extend(lines.into_iter().map(|l| format!("  {l}")));
    };
    let mut snapshot: Vec<String> = i
        .snapshot
        .iter()
        .map(|k| format!("{} = {}", k.key, k.value))
        .collect();
    // Bytes that are not a snapshot are shown as stored, never hidden.
    if let Some(raw) = &i.raw_snapshot {
        snapshot.push(
            "damaged: the stored bytes are not a snapshot (kept as stored; the next decision fails the instance with q.snapshot.damaged):"
                .into(),
        );
        snapshot.push(qflow_engine::text::clip(raw, 400));
    }
    section(&mut out, "snapshot", snapshot);
    section(
        &mut out,
        "timers (armed)",
        i.timers
            .iter()
            .map(|t| {
                format!(
                    "#{} {} on {} due at {}{}",
                    t.id,
                    t.purpose.as_str(),
                    t.node,
                    ops::since_start(t.due_ms - i.started_ms),
                    t.attempt
                        .map(|a| format!(" (attempt {a})"))
                        .unwrap_or_default()
                )
            })
            .collect(),
    );
    section(
        &mut out,
        "outbox",
        i.outbox
            .iter()
            .map(|o| {
                format!(
                    "{} attempt {} to {}: {} after {}, key {}{}",
                    o.node,
                    o.attempt,
                    o.channel,
                    o.state,
                    counted(u64::from(o.deliveries), "delivery", "deliveries"),
                    o.idempotency_key,
                    o.reason
                        .as_deref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                )
            })
            .collect(),
    );
    section(
        &mut out,
        "correlations",
        i.correlations
            .iter()
            .map(|c| {
                format!(
                    "{} → {}{}",
                    c.key,
                    c.node,
                    if c.in_backoff {
                        " (in a backoff window: a response now is refused, a retry is pending)"
                    } else {
                        ""
                    }
                )
            })
            .collect(),
    );
    section(
        &mut out,
        "incidents",
        i.incidents
            .iter()
            .map(|x| {
                format!(
                    "#{} {} at {}: {} (opened {}{})",
                    x.id,
                    x.kind,
                    x.node,
                    x.detail(),
                    ops::since_start(x.opened_ms - i.started_ms),
                    x.closed_ms
                        .map(|c| format!(", closed {}", ops::since_start(c - i.started_ms)))
                        .unwrap_or_else(|| ", open".into())
                )
            })
            .collect(),
    );
    section(
        &mut out,
        "containment log",
        i.containment_log
            .iter()
            .map(|l| format!("{}  {}", ops::timestamp(l.at_ms), l.words(false)))
            .collect(),
    );
    section(
        &mut out,
        "history",
        i.history
            .iter()
            .map(|h| match &h.line {
                Some(l) => human_line(l, columns),
                None => format!("#{} {} (a line this version cannot read)", h.seq, h.kind),
            })
            .collect(),
    );
    out
}

pub(crate) fn show(args: ShowArgs) -> ExitCode {
    let format = args.format;
    let store = match ops::open_for_reading(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    let inspection = match fleet::instance(&store, &args.instance) {
        Ok(i) => i,
        Err(qflow_engine::runtime::RunError::Store(
            qflow_engine::store::StoreError::NoInstance(id),
        )) => {
            let known: Vec<String> = store
                .instances()
                .map(|v| v.into_iter().map(|i| i.id).collect())
                .unwrap_or_default();
            let hint = qflow_engine::suggest::closest(&id, known.iter().map(String::as_str))
                .map(|s| format!(" (did you mean {s}?)"))
                .unwrap_or_default();
            return ops::fail(
                format,
                USAGE,
                "usage",
                format!(
                    "no instance {id} in {}{hint}; `qflow instances --db {}` lists them",
                    args.db, args.db
                ),
            );
        }
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    match format {
        Format::Json => println!("{}", json_line(&show_json(&inspection), &["instance"])),
        Format::Human => {
            let columns = Columns::of_ids(inspection.nodes.iter().map(|n| n.id.as_str()));
            for l in show_human(&inspection, &args.db.to_string(), &columns) {
                println!("{}", qflow_engine::text::printable(&l));
            }
        }
    }
    ExitCode::SUCCESS
}
