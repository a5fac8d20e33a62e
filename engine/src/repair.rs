//! Repair by migration, as an operator asks for it: plan a move of one
//! instance (or of every FAILED instance of a deployment) onto a deployment
//! or a model file, show the plan, apply it.
//!
//! The plan is [`crate::runtime::migrate::migrate`]'s, computed from the
//! same durable facts a migration decides from. [`plan`] only reads;
//! [`apply`] takes the decision through the shell, under the instance
//! claim, and refuses when the instance moved since the plan that was shown
//! ([`Planned::version`]), so what was printed is what is applied. A model
//! file is deployed in the migration's own transaction: a refusal, or a
//! crash at any instant, leaves no trace of it.

use std::collections::BTreeMap;

use crate::runtime::graph::Graph;
use crate::runtime::migrate::{self, Holdings, MigrateError, Plan};
use crate::runtime::shell::{self, deployed_graph, Choice, What};
use crate::runtime::verify::{self, NextDecision, Recorded};
use crate::runtime::{Decision, RunError, Status};
use crate::store::contain::Actor;
use crate::store::{local_owner, source_hash, Destination, Store, StoreError};

/// Where to move an instance.
#[derive(Debug, Clone)]
pub enum Target {
    /// A deployment of the store, by id.
    Deployment(i64),
    /// A model: its (accepted) source and the file it came from.
    Model {
        source: String,
        origin: Option<String>,
        graph: Box<Graph>,
    },
}

/// Why a repair was not planned or not applied.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Refused(#[from] MigrateError),
    #[error("instance {instance} took a decision since the plan was made (version {planned} → {now}): plan again")]
    Moved {
        instance: String,
        planned: i64,
        now: i64,
    },
    #[error("deployment {0} is retired: it receives no instance")]
    Retired(i64),
    /// The repair's next decision is the one it repairs (FAILED again at
    /// once, same node, code and reason): applying it would fix nothing.
    #[error("the repair changes nothing: its next decision is the one it repairs ({next}); {fix}")]
    Unchanged { next: String, fix: String },
}

impl From<StoreError> for RepairError {
    fn from(e: StoreError) -> RepairError {
        RepairError::Run(RunError::Store(e))
    }
}

/// A migration planned for one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub plan: Plan,
    /// The deployment the instance runs on now.
    pub from_deployment: i64,
    /// The deployment it moves to; `None`: the model is not deployed yet
    /// (applying deploys it).
    pub to_deployment: Option<i64>,
    /// The instance's version the plan was made from.
    pub version: i64,
    /// The next decision on the repaired facts (the runtime's own, the
    /// failure that failed the instance assumed to recur).
    pub next: NextDecision,
    /// When the instance started (instants in words count from it).
    pub started_ms: i64,
    /// The instant the migration is decided at (the instance's last
    /// decision, on the store's clock): where a held migration parks its
    /// next attempt.
    pub decided_ms: i64,
}

impl Planned {
    /// Refuse a repair whose next decision is unchanged
    /// ([`NextDecision::unchanged`]), saying why and what would change it.
    pub fn refuse_unchanged(&self) -> Result<(), RepairError> {
        if !self.next.unchanged {
            return Ok(());
        }
        let budget = self
            .plan
            .moves
            .iter()
            .filter_map(|m| m.budget)
            .any(|b| b.carried && b.max_attempts.is_some_and(|m| b.burned >= m));
        let fix = if budget {
            "its budget is spent under the same policy: add --reset-budget, or migrate onto a model whose policy allows more attempts; --allow-unchanged applies it anyway (when the cause was fixed outside the model)"
        } else {
            "migrate onto a model that decides otherwise; --allow-unchanged applies it anyway (when the cause was fixed outside the model)"
        };
        Err(RepairError::Unchanged {
            next: self.next.describe(self.started_ms),
            fix: fix.into(),
        })
    }
}

/// The failure a repair cleared that nothing has exercised yet: the last
/// `failed` line of `instance`'s history, when a repairing migration came
/// after it and no attempt since, at the node the migration moved it to
/// (class and message from the failed attempt before it). What a `resume`
/// assumes recurs.
pub fn repaired_failure(store: &Store, instance: &str) -> Result<Option<Recorded>, StoreError> {
    use crate::instance::history::{Attempt, AttemptOutcome, HistoryEvent};
    let (mut failed, mut repaired) = (None::<Recorded>, None::<Recorded>);
    let mut last_attempt = None;
    for row in store.history(instance)? {
        let Some(line) = row.line() else { continue };
        let node = line.node.clone().unwrap_or_default();
        match line.event {
            HistoryEvent::Attempt(Attempt::Task(a)) => {
                repaired = None;
                last_attempt =
                    (a.outcome == AttemptOutcome::Failed).then_some((a.class, a.message));
            }
            HistoryEvent::Attempt(Attempt::Call(_)) | HistoryEvent::CallFailed { .. } => {
                repaired = None;
                last_attempt = None;
            }
            HistoryEvent::Failed { code, reason, .. } => {
                let (class, message) = last_attempt.take().unwrap_or((None, None));
                failed = Some(Recorded {
                    node,
                    code,
                    reason,
                    class,
                    message,
                });
            }
            HistoryEvent::Migrated {
                mapping,
                repaired: true,
                ..
            } => {
                repaired = failed.take().map(|mut r| {
                    if let Some(to) = mapping.get(&r.node) {
                        r.node = to.clone();
                    }
                    r
                });
            }
            _ => {}
        }
    }
    Ok(repaired)
}

/// What `resume` decides first on `instance`: the reconciliation `resolve`
/// when given, else its next step, a repaired failure assumed to recur
/// ([`repaired_failure`]). Refused ([`RepairError::Unchanged`]) when that
/// decision fixes nothing, unless `allow_unchanged`. Also the instant
/// instants in words count from (the instance's start).
pub fn resume_next(
    store: &Store,
    instance: &str,
    resolve: Option<&crate::instance::event::ExternalEvent>,
    allow_unchanged: bool,
) -> Result<(NextDecision, i64), RepairError> {
    let facts = store.facts(instance)?;
    let graph = deployed_graph(store, facts.deployment_id)?;
    let at = decided_at(store, instance, facts.started_ms)?;
    let f = facts.as_facts(instance);
    let next = match resolve {
        Some(ev) => verify::resolve(&graph, &f, ev, at),
        None => verify::next(&graph, &f, repaired_failure(store, instance)?.as_ref(), at),
    };
    if next.unchanged && !allow_unchanged {
        let fix = if resolve.is_some() {
            "resolve it as failed to say so, or as succeeded if the effect happened; to run it again, migrate it onto a model whose policy allows more attempts (or with --reset-budget) first"
        } else {
            "migrate it again with --reset-budget, or onto a model whose policy allows more attempts; --allow-unchanged resumes it anyway (when the cause was fixed outside the model)"
        };
        return Err(RepairError::Unchanged {
            next: next.describe(facts.started_ms),
            fix: fix.into(),
        });
    }
    Ok((next, facts.started_ms))
}

/// The next decision of `instance` as the store holds it now, `recorded`
/// assumed to recur (a repaired instance's failure): what a repair reports
/// once applied, decided by the same function as its preview.
pub fn next_of(
    store: &Store,
    instance: &str,
    recorded: Option<&Recorded>,
) -> Result<NextDecision, RepairError> {
    let facts = store.facts(instance)?;
    let graph = deployed_graph(store, facts.deployment_id)?;
    let at = decided_at(store, instance, facts.started_ms)?;
    Ok(verify::next(
        &graph,
        &facts.as_facts(instance),
        recorded,
        at,
    ))
}

struct Resolved {
    graph: Graph,
    destination: Destination,
    existing: Option<i64>,
}

fn resolve(store: &Store, target: &Target) -> Result<Resolved, RepairError> {
    match target {
        Target::Deployment(id) => {
            let row = store
                .deployment(*id)?
                .ok_or(StoreError::NoDeployment(*id))?;
            if row.retired_ms.is_some() {
                return Err(RepairError::Retired(*id));
            }
            Ok(Resolved {
                graph: deployed_graph(store, *id)?,
                destination: Destination::Deployed(*id),
                existing: Some(*id),
            })
        }
        Target::Model {
            source,
            origin,
            graph,
        } => {
            let hash = source_hash(source);
            let existing = store
                .deployments()?
                .into_iter()
                .find(|d| d.hash == hash && d.process_id == graph.process_id);
            if let Some(d) = existing.as_ref().filter(|d| d.retired_ms.is_some()) {
                return Err(RepairError::Retired(d.id));
            }
            Ok(Resolved {
                graph: (**graph).clone(),
                destination: Destination::New {
                    process_id: graph.process_id.clone(),
                    source: source.clone(),
                    origin: origin.clone(),
                },
                existing: existing.map(|d| d.id),
            })
        }
    }
}

/// What the instance holds beside its snapshot (outbox rows, correlations).
pub(crate) fn holdings(store: &Store, instance: &str) -> Result<Holdings, StoreError> {
    Ok(Holdings {
        outbox: store
            .outbox(instance)?
            .into_iter()
            .map(|o| o.node)
            .collect(),
        correlations: store
            .correlations(instance)?
            .into_iter()
            .map(|c| c.node)
            .collect(),
    })
}

/// The instant a migration is decided at: the instance's last decision
/// (virtual time does not move).
fn decided_at(store: &Store, instance: &str, started_ms: i64) -> Result<i64, StoreError> {
    Ok(store.last_decision_ms(instance)?.unwrap_or(started_ms))
}

/// The model a migration onto `target` moves instances to (its deployed
/// graph, or the model file's), as [`plan`] checks them against.
pub fn target_graph(store: &Store, target: &Target) -> Result<Graph, RepairError> {
    Ok(resolve(store, target)?.graph)
}

/// Plan a migration of `instance` onto `target` (reads only).
pub fn plan(
    store: &Store,
    instance: &str,
    target: &Target,
    mapping: &BTreeMap<String, String>,
    reset_budget: bool,
) -> Result<Planned, RepairError> {
    let to = resolve(store, target)?;
    let facts = store.facts(instance)?;
    let old = deployed_graph(store, facts.deployment_id)?;
    let extra = holdings(store, instance)?;
    let at = decided_at(store, instance, facts.started_ms)?;
    let f = facts.as_facts(instance);
    let (plan, t) = migrate::migrate(&old, &to.graph, &f, &extra, mapping, reset_budget, at)?;
    let next = verify::after_migration(&to.graph, &f, mapping, &t, at);
    Ok(Planned {
        plan,
        from_deployment: facts.deployment_id,
        to_deployment: to.existing,
        version: facts.version,
        next,
        started_ms: facts.started_ms,
        decided_ms: at,
    })
}

/// Apply a migration in one transaction under the claim; with `planned`
/// set, only if the instance is still at that version. Returns the decision
/// (its `plan` is the one applied) and the deployment the instance is on.
pub fn apply(
    store: &mut Store,
    instance: &str,
    target: &Target,
    mapping: &BTreeMap<String, String>,
    reset_budget: bool,
    planned: Option<i64>,
) -> Result<(Decision, i64), RepairError> {
    apply_held(
        store,
        instance,
        target,
        mapping,
        reset_budget,
        planned,
        None,
    )
    .map(|(decision, deployment, _)| (decision, deployment))
}

/// [`apply`], with `hold`: holding the migrated instance for a ramped
/// release as that actor: its next task attempts parked at the migration
/// instant and the instance quarantined, in the migration's transaction,
/// so that a release ([`crate::release::apply_instances`]) spreads them.
/// An instance already quarantined is not held by the migration (its
/// quarantine stays the operator's, and no ramp lets it go); nor is one
/// the migration leaves with no task attempt to park (a channel call's
/// request, a gateway). Whether it was held is in the answer.
pub fn apply_held(
    store: &mut Store,
    instance: &str,
    target: &Target,
    mapping: &BTreeMap<String, String>,
    reset_budget: bool,
    planned: Option<i64>,
    hold: Option<&Actor>,
) -> Result<(Decision, i64, bool), RepairError> {
    let hold = match hold {
        Some(a) if store.containment(instance)?.quarantined_ms.is_none() => Some(a.clone()),
        _ => None,
    };
    let asked = hold.is_some();
    let mut hold = hold;
    let to = resolve(store, target)?;
    let owner = local_owner();
    let mut moved = None;
    let taken = shell::take(
        store,
        &owner,
        instance,
        |store, facts| deployed_graph(store, facts.deployment_id).map(Box::new),
        |store, _, facts| {
            if let Some(v) = planned.filter(|v| *v != facts.version) {
                moved = Some((v, facts.version));
                return Ok(None);
            }
            Ok(Some(Choice {
                what: What::Migrate {
                    destination: to.destination.clone(),
                    graph: Box::new(to.graph.clone()),
                    holdings: holdings(store, instance)?,
                    mapping: mapping.clone(),
                    reset_budget,
                    hold: hold.take(),
                },
                at_ms: decided_at(store, instance, facts.started_ms)?,
            }))
        },
    );
    store.release(instance, &owner)?;
    if let Some((planned, now)) = moved {
        return Err(RepairError::Moved {
            instance: instance.to_string(),
            planned,
            now,
        });
    }
    let decision = match taken {
        Ok(t) => t.or_lost()?.expect("a migration is always decided"),
        Err(RunError::Migrate(e)) => return Err(RepairError::Refused(e)),
        Err(e) => return Err(e.into()),
    };
    let deployment = store
        .instance(instance)?
        .ok_or_else(|| StoreError::NoInstance(instance.into()))?
        .deployment_id;
    let held = asked && store.containment(instance)?.quarantined_ms.is_some();
    Ok((decision, deployment, held))
}

/// The FAILED instances of a deployment, oldest first.
pub fn failed_of(store: &Store, deployment: i64) -> Result<Vec<String>, StoreError> {
    store
        .deployment(deployment)?
        .ok_or(StoreError::NoDeployment(deployment))?;
    Ok(store
        .instances()?
        .into_iter()
        .filter(|i| i.deployment_id == deployment && i.status == Status::Failed)
        .map(|i| i.id)
        .collect())
}

/// The unfinished instances (RUNNING or WAITING) that nothing sets aside
/// (not quarantined), of `deployment` when given, oldest first: what
/// `qflow resume --all` continues.
pub fn unfinished(store: &Store, deployment: Option<i64>) -> Result<Vec<String>, StoreError> {
    if let Some(d) = deployment {
        store.deployment(d)?.ok_or(StoreError::NoDeployment(d))?;
    }
    let quarantined: std::collections::BTreeSet<String> = store
        .quarantined()?
        .into_iter()
        .map(|q| q.instance)
        .collect();
    Ok(store
        .instances()?
        .into_iter()
        .filter(|i| deployment.is_none_or(|d| i.deployment_id == d))
        .filter(|i| matches!(i.status, Status::Running | Status::Waiting))
        .filter(|i| !quarantined.contains(&i.id))
        .map(|i| i.id)
        .collect())
}

/// Plan the repair of each of `instances` onto `target` with one mapping,
/// every plan before any is applied: the plans in order, or the first
/// refusal and the instance it refuses (then none is to be moved). What
/// `qflow migrate --all-failed-of` and the console's batch repair both
/// show before they apply each plan with [`apply`].
pub fn plan_all(
    store: &Store,
    instances: &[String],
    target: &Target,
    mapping: &BTreeMap<String, String>,
    reset_budget: bool,
) -> Result<Vec<Planned>, (String, RepairError)> {
    instances
        .iter()
        .map(|id| plan(store, id, target, mapping, reset_budget).map_err(|e| (id.clone(), e)))
        .collect()
}

/// One mapping to offer for the repair of all of `instances` onto
/// `target`: every instance's suggestion ([`suggest_mapping`]) together,
/// the first instance's choice kept where two suggest differently.
pub fn suggest_mapping_all(
    store: &Store,
    instances: &[String],
    target: &Target,
) -> Result<BTreeMap<String, String>, RepairError> {
    let mut out = BTreeMap::new();
    for id in instances {
        for (from, to) in suggest_mapping(store, id, target)? {
            out.entry(from).or_insert(to);
        }
    }
    Ok(out)
}

/// A mapping to offer for a migration of `instance` onto `target`: each node
/// holding state that the target lacks, to its likely counterpart.
pub fn suggest_mapping(
    store: &Store,
    instance: &str,
    target: &Target,
) -> Result<BTreeMap<String, String>, RepairError> {
    let to = resolve(store, target)?;
    let facts = store.facts(instance)?;
    let old = deployed_graph(store, facts.deployment_id)?;
    let extra = holdings(store, instance)?;
    Ok(migrate::suggest(
        &old,
        &to.graph,
        &facts.as_facts(instance),
        &extra,
    ))
}

/// The deployment a FAILED instance would most likely be repaired onto: the
/// newest active deployment of the same process other than its own.
pub fn likely_target(store: &Store, instance: &str) -> Result<Option<i64>, StoreError> {
    let Some(row) = store.instance(instance)? else {
        return Ok(None);
    };
    Ok(likely_target_among(
        &store.deployments()?,
        row.deployment_id,
    ))
}

/// The deployment the instances of `deployment` would most likely be
/// repaired onto, among `deployments` (a store's list): the newest active
/// deployment of its process other than itself.
pub fn likely_target_among(
    deployments: &[crate::store::DeploymentRow],
    deployment: i64,
) -> Option<i64> {
    let process = &deployments.iter().find(|d| d.id == deployment)?.process_id;
    deployments
        .iter()
        .filter(|d| &d.process_id == process && d.id != deployment && d.retired_ms.is_none())
        .map(|d| d.id)
        .max()
}

/// Unfinished instances that earlier deployments of the same process left
/// behind, seen from `instance` (just started on a newer one): what a run of
/// an edited model on a kept database must say rather than leave silent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftBehind {
    /// The deployment `instance` runs: where a `migrate` would move them.
    pub onto: i64,
    /// The earliest earlier deployment that has some.
    pub from: i64,
    /// How many in all, over every earlier deployment.
    pub count: u64,
    /// One of them, to name in a `migrate` command.
    pub example: String,
}

/// [`LeftBehind`] for `instance`, or `None` when no earlier deployment of
/// its process has an unfinished instance.
pub fn left_behind(store: &Store, instance: &str) -> Result<Option<LeftBehind>, StoreError> {
    let Some(this) = store.instance(instance)? else {
        return Ok(None);
    };
    let earlier: Vec<_> = store
        .deployments()?
        .into_iter()
        .filter(|d| d.id != this.deployment_id && d.process_id == this.process_id)
        .filter(|d| d.counts.running + d.counts.waiting > 0)
        .collect();
    let Some(first) = earlier.first() else {
        return Ok(None);
    };
    let Some(example) = store.unfinished_instance(first.id)? else {
        return Ok(None);
    };
    Ok(Some(LeftBehind {
        onto: this.deployment_id,
        from: first.id,
        count: earlier
            .iter()
            .map(|d| u64::from(d.counts.running + d.counts.waiting))
            .sum(),
        example,
    }))
}

/// What `instance`'s first decision after history line `since_seq` was, in
/// words, and whether it is the previewed `next`'s outcome (a failure
/// recurring as assumed decided as previewed; any other outcome is not the
/// preview's assumption): what `resume` reports after running.
pub fn what_it_was(
    store: &Store,
    instance: &str,
    since_seq: i64,
    next: &NextDecision,
    started_ms: i64,
) -> Result<Option<(String, bool)>, StoreError> {
    use crate::instance::history::{Attempt, AttemptOutcome, HistoryEvent, Then as T};
    use crate::runtime::verify::Then;
    let lines: Vec<_> = store
        .history(instance)?
        .into_iter()
        .filter(|r| r.seq > since_seq)
        .filter_map(|r| r.line())
        .collect();
    let failed_after = |i: usize| {
        lines[i..].iter().find_map(|l| match &l.event {
            HistoryEvent::Failed { code, reason, .. } => Some((code.clone(), reason.clone())),
            _ => None,
        })
    };
    let rel = crate::duration::compact_ms;
    for (i, l) in lines.iter().enumerate() {
        let node = l.node.clone().unwrap_or_default();
        let (words, then) = match &l.event {
            HistoryEvent::Attempt(Attempt::Task(a)) => {
                let head = format!("attempt {} of {node}", a.attempt);
                match (a.outcome, a.then) {
                    (AttemptOutcome::Failed, Some(T::Backoff)) => {
                        let p = a.park;
                        let then = p.as_ref().map(|p| Then::Retry {
                            attempt: p.next_attempt,
                            due_ms: started_ms + p.next_at_s.ms(),
                        });
                        let at = p
                            .map(|p| {
                                format!(
                                    ", attempt {} at +{}",
                                    p.next_attempt,
                                    rel(p.next_at_s.ms())
                                )
                            })
                            .unwrap_or_default();
                        (
                            format!(
                                "{head} failed with {}: retry{at}",
                                a.code.clone().unwrap_or_default()
                            ),
                            then,
                        )
                    }
                    (AttemptOutcome::Failed, Some(T::Reconcile)) => (
                        format!("{head} ended with an unknown outcome: waits for reconciliation"),
                        None,
                    ),
                    (AttemptOutcome::Failed | AttemptOutcome::BpmnError, _) => {
                        match failed_after(i) {
                            Some((code, reason)) => (
                                format!("{head} failed with {code}: FAILED ({reason})"),
                                Some(Then::Failed { code, reason }),
                            ),
                            None => (
                                format!(
                                    "{head} failed with {}",
                                    a.code.clone().unwrap_or_default()
                                ),
                                None,
                            ),
                        }
                    }
                    (AttemptOutcome::Ok, _) => (format!("{head} succeeded"), None),
                }
            }
            HistoryEvent::CallFailed {
                attempt,
                code,
                then: t,
                park,
            } => {
                let head = format!("attempt {attempt} of {node} failed with {code}");
                match (t, park) {
                    (T::Backoff, Some(p)) => (
                        format!(
                            "{head}: retry, attempt {} at +{}",
                            p.next_attempt,
                            rel(p.next_at_s.ms())
                        ),
                        Some(Then::Retry {
                            attempt: p.next_attempt,
                            due_ms: started_ms + p.next_at_s.ms(),
                        }),
                    ),
                    _ => match failed_after(i) {
                        Some((code, reason)) => (
                            format!("{head}: FAILED ({reason})"),
                            Some(Then::Failed { code, reason }),
                        ),
                        None => (head, None),
                    },
                }
            }
            HistoryEvent::Response { .. } => (format!("{node} got its response"), None),
            HistoryEvent::Reconciled { as_, .. } => match failed_after(i) {
                Some((code, reason)) => (
                    format!(
                        "{node} resolved as {}: FAILED, {code} ({reason})",
                        as_.as_str()
                    ),
                    Some(Then::Failed { code, reason }),
                ),
                None => {
                    // The flow went on: the preview's, when it said so.
                    let words = format!("{node} resolved as {}", as_.as_str());
                    let same = matches!(next.then, Then::Continues(_))
                        && matches!(&next.step, crate::runtime::verify::Step::Resolve { node: n, .. } if *n == node);
                    return Ok(Some((words, same)));
                }
            },
            HistoryEvent::Failed { code, reason, .. } => (
                format!("{node}: FAILED, {code} ({reason})"),
                Some(Then::Failed {
                    code: code.clone(),
                    reason: reason.clone(),
                }),
            ),
            _ => continue,
        };
        let same = then.is_some_and(|t| t == next.then);
        return Ok(Some((words, same)));
    }
    Ok(None)
}
