//! A planned release, as a service: preview a ramped unpause (the pure
//! plan over the parks the store holds now) and apply it (the same plan,
//! taken inside the store's transaction on the parks read there), or stop
//! one. Every face (the command line, the console, the web inspector)
//! previews and applies through here, so they show the same curves.

use serde::Serialize;

use crate::runtime::ramp::{self, Load, Parked, Plan, Shape};
use crate::store::contain::{Actor, PauseKind};
use crate::store::release::{
    Planned, RampedRelease, RampedUnpause, ReleaseKind, ReleasePark, ShapeText, StoppedRelease,
};
use crate::store::{Store, StoreError};

/// What a release would do, per dependency: the attempts per minute from
/// the release's minute 0 without the shape (every park when due) and with
/// it, and the peak of each. What a preview prints (human and JSON) before
/// anything is applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preview {
    pub kind: ReleaseKind,
    pub value: String,
    /// Minute 0 (the run's clock, absolute ms).
    pub start_ms: i64,
    /// The last release, in ms after minute 0.
    pub end_after_ms: i64,
    /// Parks released.
    pub parks: u64,
    /// `10,50,200/min`, if a ramp is given.
    pub ramp: Option<String>,
    /// The cap per dependency, per minute.
    pub max_rate: std::collections::BTreeMap<String, u64>,
    pub dependencies: Vec<DependencyLoad>,
}

/// One dependency's load in a preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DependencyLoad {
    pub dependency: String,
    pub parks: u64,
    pub peak_without: u64,
    pub peak_with: u64,
    /// Attempts in each minute from minute 0, without and with the shape.
    pub without: Vec<u64>,
    pub with: Vec<u64>,
}

impl Preview {
    /// The preview of `plan`, a release of `kind` `value`.
    pub fn of(kind: ReleaseKind, value: &str, plan: &Plan) -> Preview {
        let deps = plan
            .dependencies()
            .into_iter()
            .map(|d| {
                let curve = |l: &Load| l.per_minute.get(&d).cloned().unwrap_or_default();
                DependencyLoad {
                    parks: curve(&plan.without).iter().sum(),
                    peak_without: plan.without.peak(&d),
                    peak_with: plan.with.peak(&d),
                    without: curve(&plan.without),
                    with: curve(&plan.with),
                    dependency: d,
                }
            })
            .collect();
        Preview {
            kind,
            value: value.into(),
            start_ms: plan.start_ms,
            end_after_ms: plan.end_ms() - plan.start_ms,
            parks: plan.releases.len() as u64,
            ramp: plan.shape.ramp.as_ref().map(ramp::Ramp::text),
            max_rate: plan.shape.max_rate.clone(),
            dependencies: deps,
        }
    }

    /// Minutes the longer curve spans.
    pub fn minutes(&self) -> usize {
        self.dependencies
            .iter()
            .map(|d| d.with.len().max(d.without.len()))
            .max()
            .unwrap_or(0)
    }
}

/// What a release lets go, in words: `what` (`dependency`, `class`,
/// `instance`, `instances`, or `5,000 instances` once the list is
/// summarised) and `names` (`bank`; `a, b, c`; `dbg08-1, dbg08-2,
/// dbg08-3, dbg08-4, … dbg08-5000`): a ramped repair of a whole outage
/// names thousands. Every face says it from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseTarget {
    pub what: String,
    pub names: String,
    /// Every name is listed (not summarised).
    pub listed_all: bool,
}

impl ReleaseTarget {
    /// At most this many instances are named before the list is summarised.
    const LISTED: usize = 5;

    pub fn of(kind: ReleaseKind, value: &str) -> ReleaseTarget {
        let target = |what: &str, names: String, listed_all| ReleaseTarget {
            what: what.to_string(),
            names,
            listed_all,
        };
        if kind != ReleaseKind::Instance {
            return target(kind.flag(), value.to_string(), true);
        }
        let ids: Vec<&str> = value.split(',').filter(|i| !i.is_empty()).collect();
        match ids.len() {
            1 => target("instance", ids[0].to_string(), true),
            n if n <= Self::LISTED => target("instances", ids.join(", "), true),
            n => target(
                &format!("{} instances", crate::text::group(n as u64)),
                format!("{}, … {}", ids[..Self::LISTED - 1].join(", "), ids[n - 1]),
                false,
            ),
        }
    }
}

/// [`ReleaseTarget`] in one phrase: `dependency bank`, `instances a, b`.
pub fn target_words(kind: ReleaseKind, value: &str) -> String {
    let t = ReleaseTarget::of(kind, value);
    format!("{} {}", t.what, t.names)
}

fn parked(parks: &[ReleasePark]) -> Vec<Parked> {
    parks
        .iter()
        .map(|p| Parked {
            timer: p.timer,
            instance: p.instance.clone(),
            dependency: p.dependency.clone(),
            due_ms: p.due_ms,
        })
        .collect()
}

fn shape_text(shape: &Shape) -> ShapeText {
    ShapeText {
        ramp: shape.ramp.as_ref().map(ramp::Ramp::text),
        max_rate: (!shape.max_rate.is_empty()).then(|| shape.max_rate_text()),
    }
}

/// The plan of an unpause of `kind` `value` under `shape` now: nothing is
/// written.
pub fn preview(
    store: &Store,
    kind: PauseKind,
    value: &str,
    shape: &Shape,
    wall_now_ms: i64,
) -> Result<Plan, StoreError> {
    let (parks, latest) = store.release_parks(kind, value)?;
    Ok(ramp::plan(
        &parked(&parks),
        ramp::start_ms(latest, wall_now_ms),
        shape,
    ))
}

/// The plan of a release of quarantined `instances` under `shape` now:
/// nothing is written.
pub fn preview_instances(
    store: &Store,
    instances: &[String],
    shape: &Shape,
    wall_now_ms: i64,
) -> Result<Plan, StoreError> {
    let (parks, latest) = store.instances_release_parks(instances)?;
    Ok(ramp::plan(
        &parked(&parks),
        ramp::start_ms(latest, wall_now_ms),
        shape,
    ))
}

/// The plan of a held migration's ramped release before anything is
/// written (`migrate --all-failed-of … --ramp … --dry-run`, and the
/// preview printed before one is applied): one park per planned instance
/// whose next step is an attempt of a registered task of the target
/// `graph`, due at the migration's instant (as
/// [`crate::runtime::migrate::park_next_attempts`] will arm it) and
/// counted against that task. Instances whose next step is anything else
/// are not held, so they are not in the plan.
pub fn preview_migration(
    store: &Store,
    plans: &[crate::repair::Planned],
    graph: &crate::runtime::graph::Graph,
    shape: &Shape,
    wall_now_ms: i64,
) -> Result<Plan, StoreError> {
    use crate::runtime::graph::Kind;
    use crate::runtime::verify::Step;
    let parks: Vec<Parked> = plans
        .iter()
        .filter_map(|p| {
            let Step::Attempt { node, .. } = &p.next.step else {
                return None;
            };
            let Some(Kind::Task {
                task, call: None, ..
            }) = graph.node(node).map(|n| &n.kind)
            else {
                return None;
            };
            Some((p, task.clone()))
        })
        .enumerate()
        .map(|(i, (p, task))| Parked {
            // Not yet a timer: a stand-in id, unique in the plan and in
            // the plans' order (as the timers will be armed).
            timer: i as i64 + 1,
            instance: p.plan.instance.clone(),
            dependency: Some(task),
            due_ms: p.decided_ms,
        })
        .collect();
    let latest = store.latest_decision_ms()?;
    Ok(ramp::plan(
        &parks,
        ramp::start_ms(latest, wall_now_ms),
        shape,
    ))
}

/// The store's plan callback over `shape`, keeping the plan it took.
fn planner<'a>(
    shape: &'a Shape,
    wall_now_ms: i64,
    taken: &'a mut Option<Plan>,
) -> impl FnOnce(&[ReleasePark], Option<i64>) -> Planned + 'a {
    move |parks, latest| {
        let plan = ramp::plan(&parked(parks), ramp::start_ms(latest, wall_now_ms), shape);
        let planned = Planned {
            start_ms: plan.start_ms,
            slots: plan
                .releases
                .iter()
                .map(|r| (r.timer, r.release_ms))
                .collect(),
        };
        *taken = Some(plan);
        planned
    }
}

/// Release quarantined `instances` under `shape`, as `actor`: the plan
/// taken in the store's transaction, and what was applied.
pub fn apply_instances(
    store: &mut Store,
    instances: &[String],
    shape: &Shape,
    wall_now_ms: i64,
    actor: &Actor,
) -> Result<(Plan, RampedRelease), StoreError> {
    let mut taken = None;
    let applied = store.release_ramped(
        instances,
        wall_now_ms,
        actor,
        &shape_text(shape),
        planner(shape, wall_now_ms, &mut taken),
    )?;
    let plan = taken.unwrap_or_else(|| ramp::plan(&[], applied.start_ms, shape));
    Ok((plan, applied))
}

/// Unpause `kind` `value` under `shape`, as `actor`: the plan taken in the
/// store's transaction, and what was applied.
pub fn apply(
    store: &mut Store,
    kind: PauseKind,
    value: &str,
    shape: &Shape,
    wall_now_ms: i64,
    actor: &Actor,
) -> Result<(Plan, RampedUnpause), StoreError> {
    let mut taken = None;
    let applied = store.unpause_ramped(
        kind,
        value,
        wall_now_ms,
        actor,
        &shape_text(shape),
        planner(shape, wall_now_ms, &mut taken),
    )?;
    let plan = taken.unwrap_or_else(|| ramp::plan(&[], applied.start_ms, shape));
    Ok((plan, applied))
}

/// Stop release ramp `id`, as `actor`.
pub fn stop(
    store: &mut Store,
    id: i64,
    wall_now_ms: i64,
    actor: &Actor,
) -> Result<StoppedRelease, StoreError> {
    store.stop_release(id, wall_now_ms, actor)
}
