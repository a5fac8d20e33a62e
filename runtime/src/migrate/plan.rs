//! The plan of a migration: what every node holding state becomes, checked
//! against both models before anything is written. A pure function of the
//! two graphs, the instance's durable facts and what else it holds in the
//! store (outbox rows, correlations), so a dry run, the command line and the
//! console show the very plan the migration then applies.
//!
//! Every node that holds a token, a counter (`attempts.`, `first_attempt.`,
//! `keys_used.`), a marker (`backoff.`, `reconcile.`), an armed timer, an
//! outbox row, a correlation or the failure must map (by `--map`, else by
//! its own id) to a node of the new model of a compatible kind: a
//! registered task to a registered task, a call to a call on the same
//! channel, a gateway to a gateway of the same kind, an event to the same
//! kind of event. Every problem is reported, not only the first.

use std::collections::BTreeMap;

use crate::graph::{Graph, Kind};
use qflow_instance::snapshot::{Family, TokenState};
use qflow_instance::{Facts, Purpose, Status};

/// What a node of the instance holds that a migration carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// A token in this state.
    Token(TokenState),
    /// A node-scoped snapshot key (a counter or a marker) and its value, as
    /// canonical JSON text.
    Key { family: Family, value: String },
    /// An armed timer, re-armed on the mapped node at the same instant
    /// (`due_ms`: on the run's clock, since the instance started).
    Timer { purpose: Purpose, due_ms: i64 },
    /// Outbox rows (requests keep their idempotency keys).
    Outbox(usize),
    /// The live correlation of a call.
    Correlation,
    /// The instance failed here: the failure record is cleared and the
    /// token is ready again, so the next step runs a fresh attempt.
    Failure { code: String },
}

/// Outbox rows and correlations of the instance, by node: the state a
/// migration carries that is not in the snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holdings {
    /// Nodes of the instance's outbox rows, one entry per row.
    pub outbox: Vec<String>,
    /// Nodes of its live correlations.
    pub correlations: Vec<String>,
}

/// The budget of a node with a retry policy after the migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Failed attempts counted against the new policy.
    pub burned: u32,
    /// Whether they were carried (`false`: `--reset-budget` restarted them).
    pub carried: bool,
    /// The new policy's `maxAttempts`, when it has one.
    pub max_attempts: Option<u32>,
}

impl Budget {
    /// What is left of the budget, in words, for the plan and the console
    /// (`2 of 8 attempts left`), or `None` without a `maxAttempts`. A
    /// budget already spent still gets its repaired token one attempt (the
    /// decision counts a failure after it as exhaustion, not before it), so
    /// "0 left" would tell the operator that the resume does nothing: it
    /// says that one last attempt runs instead.
    pub fn left(&self) -> Option<String> {
        let max = self.max_attempts?;
        Some(match max.checked_sub(self.burned) {
            Some(left) if left > 0 => format!("{left} of {max} attempts left"),
            _ => format!(
                "none of {max} attempts left: one last attempt runs, and its failure is final"
            ),
        })
    }
}

/// One node holding state, and what it becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMove {
    pub from: String,
    pub to: String,
    /// The kind of node it is in the old model and in the new one, in words
    /// (`registered task payments.charge`, `call on channel bank`).
    pub from_kind: String,
    pub to_kind: String,
    pub held: Vec<Held>,
    pub budget: Option<Budget>,
}

/// A migration, planned: what it will do, decided before it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub instance: String,
    pub mapping: BTreeMap<String, String>,
    pub reset_budget: bool,
    pub status_before: Status,
    pub status_after: Status,
    /// Every node holding state, in the old model's flow order.
    pub moves: Vec<NodeMove>,
    /// The process ids (old, new) when the new model is another process: a
    /// repair onto it is allowed (its nodes map by id or `--map`), and the
    /// plan says so, since a deployment picked by its number alone can be
    /// the wrong model. Boxed: a plan travels in every `Decision`.
    pub other_process: Option<Box<(String, String)>>,
}

impl Plan {
    /// The plan in words, one line each (the command line and the console
    /// print the same lines).
    pub fn describe(&self) -> Vec<String> {
        let mut out = vec![format!(
            "instance {}: {} → {}{}",
            self.instance,
            self.status_before.as_str().to_uppercase(),
            self.status_after.as_str().to_uppercase(),
            if self.reset_budget {
                ", attempt counters reset"
            } else {
                ", burned budget kept"
            }
        )];
        if let Some(p) = &self.other_process {
            out.push(format!(
                "  process {} → {}: another process (its nodes are matched by id or --map); check it is the model you mean",
                p.0, p.1
            ));
        }
        if self.moves.is_empty() {
            out.push("  no node holds state".into());
        }
        for m in &self.moves {
            let arrow = if m.from == m.to {
                format!("{} (same id)", m.from)
            } else {
                format!("{} → {}", m.from, m.to)
            };
            out.push(format!("  {arrow}: {} → {}", m.from_kind, m.to_kind));
            for h in &m.held {
                out.push(format!("    {}", held_words(h, &m.from, &m.to)));
            }
            if let Some(b) = m.budget {
                let left = b.left().map(|l| format!(", {l}")).unwrap_or_default();
                out.push(format!(
                    "    budget: {} burned{}{left}",
                    qflow_model::text::counted(u64::from(b.burned), "attempt", "attempts"),
                    if b.carried { " (carried)" } else { " (reset)" }
                ));
            }
        }
        out
    }
}

fn held_words(h: &Held, from: &str, to: &str) -> String {
    match h {
        Held::Token(s) => format!("token ({})", s.as_str()),
        Held::Key { family, value } => {
            let (a, b) = (family.key(from), family.key(to));
            if a == b {
                format!("{a} = {value}")
            } else {
                format!("{a} = {value} → {b}")
            }
        }
        Held::Timer { purpose, due_ms } => format!(
            "{} timer due at +{} (kept)",
            purpose.as_str(),
            qflow_model::duration::compact_ms(*due_ms)
        ),
        Held::Outbox(n) => format!(
            "{}, idempotency keys kept",
            qflow_model::text::counted(*n as u64, "outbox row", "outbox rows")
        ),
        Held::Correlation => "live correlation".into(),
        Held::Failure { code } => {
            format!("failed here ({code}): failure cleared, token ready for a fresh attempt")
        }
    }
}

/// The kind of a node, for compatibility: two nodes are compatible when
/// their shapes are equal.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    Start,
    End,
    Exclusive,
    Parallel,
    Task,
    Call(String),
    Timer,
    TimerBoundary,
    ErrorBoundary,
}

fn shape(k: &Kind) -> Shape {
    match k {
        Kind::Start => Shape::Start,
        // An error end repaired into a plain end (or back) is still an end.
        Kind::End | Kind::ErrorEnd { .. } => Shape::End,
        Kind::Exclusive { .. } => Shape::Exclusive,
        Kind::Parallel => Shape::Parallel,
        Kind::Task { call: Some(c), .. } => Shape::Call(c.channel.clone()),
        Kind::Task { .. } => Shape::Task,
        Kind::Timer { .. } => Shape::Timer,
        Kind::TimerBoundary { .. } => Shape::TimerBoundary,
        Kind::ErrorBoundary { .. } => Shape::ErrorBoundary,
    }
}

/// A node's kind in words.
pub fn kind_words(k: &Kind) -> String {
    match k {
        Kind::Start => "start event".into(),
        Kind::End => "end event".into(),
        Kind::ErrorEnd { code } => format!("error end event ({code})"),
        Kind::Exclusive { .. } => "exclusive gateway".into(),
        Kind::Parallel => "parallel gateway".into(),
        Kind::Task {
            call: Some(c),
            task,
            ..
        } => format!("call {task} on channel {}", c.channel),
        Kind::Task { task, .. } => format!("registered task {task}"),
        Kind::Timer { .. } => "timer event".into(),
        Kind::TimerBoundary { .. } => "timer boundary".into(),
        Kind::ErrorBoundary { .. } => "error boundary".into(),
    }
}

/// What the instance holds, by old node, in a stable order.
fn holdings(facts: &Facts<'_>, extra: &Holdings) -> BTreeMap<String, Vec<Held>> {
    let mut by: BTreeMap<String, Vec<Held>> = BTreeMap::new();
    let snap = facts.snapshot;
    let failed = facts.status == Status::Failed;
    let failure = snap.failure().filter(|f| failed && !f.node.is_empty());
    for t in snap.frontier() {
        by.entry(t.node.clone())
            .or_default()
            .push(Held::Token(t.state));
    }
    if let Some(f) = &failure {
        by.entry(f.node.clone()).or_default().push(Held::Failure {
            code: f.code.clone(),
        });
    }
    for (k, v) in snap.entries() {
        if let Some((family, node)) = Family::split(k) {
            by.entry(node.to_string()).or_default().push(Held::Key {
                family,
                value: qflow_instance::snapshot::canonical_string(v),
            });
        }
    }
    // A FAILED instance's timers are not carried (the fatal path resolved them).
    if !failed {
        for t in facts.timers {
            by.entry(t.node.clone()).or_default().push(Held::Timer {
                purpose: t.purpose,
                due_ms: t.due_ms - facts.started_ms,
            });
        }
    }
    let mut rows: BTreeMap<&str, usize> = BTreeMap::new();
    for n in &extra.outbox {
        *rows.entry(n).or_default() += 1;
    }
    for (n, count) in rows {
        by.entry(n.to_string())
            .or_default()
            .push(Held::Outbox(count));
    }
    for n in &extra.correlations {
        by.entry(n.clone()).or_default().push(Held::Correlation);
    }
    by
}

/// Check a migration and say what it will do; `Err` lists every problem.
/// (`status_after` is filled in by [`super::migrate`], from the transition
/// it decides; here it is the status before.)
pub(super) fn check(
    old: &Graph,
    new: &Graph,
    facts: &Facts<'_>,
    extra: &Holdings,
    mapping: &BTreeMap<String, String>,
    reset_budget: bool,
) -> Result<Plan, Vec<String>> {
    let mut problems = Vec::new();
    // (A mapped node the instance's model lacks holds nothing: harmless,
    // and a mistyped one leaves the real node unmapped, which the check of
    // every node holding state below reports.)
    for (from, to) in mapping {
        if new.node(to).is_none() {
            let hint = qflow_model::suggest::closest(to, new.nodes.keys().map(String::as_str))
                .map(|s| format!(" (did you mean {s}?)"))
                .unwrap_or_default();
            problems.push(format!(
                "--map {from}={to}: the new model has no node {to}{hint}"
            ));
        }
    }
    let map = |n: &str| mapping.get(n).cloned().unwrap_or_else(|| n.to_string());
    let held = holdings(facts, extra);
    let mut targets: BTreeMap<String, String> = BTreeMap::new();
    let mut moves = Vec::new();
    let order = crate::graph::flow_order(old);
    let rank = |n: &str| order.iter().position(|o| o == n).unwrap_or(usize::MAX);
    let mut nodes: Vec<&String> = held.keys().collect();
    nodes.sort_by_key(|n| (rank(n), n.to_string()));
    for from in nodes {
        let what = &held[from];
        let to = map(from);
        let listed = what
            .iter()
            .map(|h| held_words(h, from, from))
            .collect::<Vec<_>>()
            .join(", ");
        let Some(target) = new.node(&to) else {
            if mapping.contains_key(from.as_str()) {
                continue; // already reported: the new model has no such node
            }
            let suggestion = counterpart(old, new, from).unwrap_or("NEW");
            problems.push(format!(
                "node {from} holds state ({listed}) but the new model has no node {from}: map it to a node of the same kind (--map {from}={suggestion})"
            ));
            continue;
        };
        if let Some(other) = targets.insert(to.clone(), from.clone()) {
            problems.push(format!(
                "nodes {other} and {from} both hold state and both map to {to}: map one of them elsewhere"
            ));
        }
        let from_kind = old
            .node(from)
            .map(|n| kind_words(&n.kind))
            .unwrap_or_else(|| "a node the instance's model lacks".into());
        let to_kind = kind_words(&target.kind);
        // A token that is only ready (or put back where a failure consumed
        // it) runs whatever node it lands on: any kind will do. Anything
        // else a node holds is bound to its kind.
        let only_ready = what
            .iter()
            .all(|h| matches!(h, Held::Token(TokenState::Ready) | Held::Failure { .. }));
        if let Some(source) = old.node(from).filter(|_| !only_ready) {
            let (a, b) = (shape(&source.kind), shape(&target.kind));
            if a != b {
                problems.push(format!(
                    "node {from} ({from_kind}) holds state ({listed}) and cannot become {to} ({to_kind}): map it to a node of the same kind{}",
                    match (a, b) {
                        (Shape::Call(x), Shape::Call(_)) => format!(", a call on channel {x}"),
                        _ => String::new(),
                    }
                ));
            }
        }
        if what
            .iter()
            .any(|h| matches!(h, Held::Token(TokenState::Joined)))
            && !target.is_join()
        {
            problems.push(format!(
                "node {from} holds a token waiting at a join, and {to} is not a join"
            ));
        }
        let budget = match &target.kind {
            Kind::Task {
                policy: Some(p), ..
            } => {
                let burned = facts.snapshot.attempts(from);
                (burned > 0 || facts.snapshot.has_attempts(from)).then_some(Budget {
                    burned: if reset_budget { 0 } else { burned },
                    carried: !reset_budget,
                    max_attempts: p.max_attempts,
                })
            }
            _ => None,
        };
        moves.push(NodeMove {
            from: from.clone(),
            to,
            from_kind,
            to_kind,
            held: what.clone(),
            budget,
        });
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Plan {
        instance: facts.instance_id.to_string(),
        mapping: mapping.clone(),
        reset_budget,
        status_before: facts.status,
        status_after: facts.status,
        moves,
        other_process: (old.process_id != new.process_id)
            .then(|| Box::new((old.process_id.clone(), new.process_id.clone()))),
    })
}

/// The node of the new model a node of the old one most likely became: of
/// the same kind, the closest id, or the only one of its kind.
fn counterpart<'a>(old: &Graph, new: &'a Graph, from: &str) -> Option<&'a str> {
    let o = old.node(from)?;
    let same: Vec<&str> = new
        .nodes
        .values()
        .filter(|n| shape(&n.kind) == shape(&o.kind))
        .map(|n| n.id.as_str())
        .collect();
    qflow_model::suggest::closest(from, same.iter().copied()).or(if same.len() == 1 {
        same.first().copied()
    } else {
        None
    })
}

/// A mapping to start from: every node holding state whose id the new model
/// lacks, to its likely counterpart (what a console offers first).
pub fn suggest(
    old: &Graph,
    new: &Graph,
    facts: &Facts<'_>,
    extra: &Holdings,
) -> BTreeMap<String, String> {
    holdings(facts, extra)
        .into_keys()
        .filter(|n| new.node(n).is_none())
        .filter_map(|n| counterpart(old, new, &n).map(|c| (n.clone(), c.to_string())))
        .collect()
}
