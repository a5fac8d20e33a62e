//! The exhaustion forecast and the what-if, as services: read the retry
//! parks a store holds, load the models their deployments pin (and, for a
//! what-if, the edited model), and let the runtime's pure
//! [`crate::runtime::forecast`] decide what they will do. Nothing is
//! written: `qflow stats` and `qflow simulate --from` (which opens the store
//! read-only) call these.

use std::collections::{BTreeMap, BTreeSet};

use crate::runtime::forecast::{self, Forecast, NodePolicy, Parked, WhatIf};
use crate::runtime::graph::Graph;
use crate::runtime::migrate;
use crate::runtime::ramp::{self, Load};
use crate::runtime::shell::deployed_graph;
use crate::runtime::RunError;
use crate::store::{Store, StoreError};

/// The exhaustion forecast of every retry park of the store, and the
/// attempts per minute per dependency they make until then: "now" is the
/// latest decision on a virtual clock, else `wall_now_ms`
/// ([`ramp::start_ms`], what a release preview starts from). A deployment
/// whose pinned model no longer loads forecasts nothing.
pub fn fleet(store: &Store, wall_now_ms: i64) -> Result<(Forecast, Load), StoreError> {
    let (rows, latest) = store.retry_parks(None)?;
    let parks: Vec<Parked> = rows.iter().map(Parked::of).collect();
    let mut graphs: BTreeMap<i64, Option<Graph>> = BTreeMap::new();
    for p in &parks {
        graphs
            .entry(p.deployment_id)
            .or_insert_with(|| deployed_graph(store, p.deployment_id).ok());
    }
    let now = ramp::start_ms(latest, wall_now_ms);
    Ok(forecast::forecast(
        &parks,
        |p| {
            graphs
                .get(&p.deployment_id)?
                .as_ref()
                .and_then(|g| NodePolicy::of(g, &p.node))
        },
        now,
    ))
}

/// Why a what-if was refused: each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum WhatIfError {
    #[error(transparent)]
    Run(#[from] RunError),
    /// The store has no deployment of the model's process (or not the one
    /// asked for).
    #[error("{0}")]
    NoDeployment(String),
    /// The edited model's nodes do not match the deployment's: the
    /// migration planner's refusal, for one instance.
    #[error(
        "the edited model does not fit instance {instance} of deployment {deployment}: {problems}"
    )]
    Mismatch {
        instance: String,
        deployment: i64,
        problems: String,
    },
}

impl From<StoreError> for WhatIfError {
    fn from(e: StoreError) -> WhatIfError {
        WhatIfError::Run(RunError::Store(e))
    }
}

/// A what-if of an edited model on a store's parked instances.
#[derive(Debug, Clone)]
pub struct Report {
    pub process: String,
    /// The deployments re-decided.
    pub deployments: Vec<i64>,
    /// Nodes of the deployments matched to another id of the edited model
    /// (the migration planner's suggestion, or `--map`).
    pub mapping: BTreeMap<String, String>,
    pub what_if: WhatIf,
}

/// Re-decide every retry park of the deployments of `edited`'s process
/// (only `deployment`, when given) under `edited`'s policies, without
/// writing anything. Each node holding a park must map onto a node of the
/// edited model that the migration planner accepts (by its id, `mapping`,
/// else the planner's suggestion): the plan of a migration onto the edit
/// is checked for one instance per deployment and node, so a model whose
/// nodes do not match is refused as `qflow migrate` would refuse it.
pub fn what_if(
    store: &Store,
    edited: &Graph,
    deployment: Option<i64>,
    mapping: &BTreeMap<String, String>,
    wall_now_ms: i64,
) -> Result<Report, WhatIfError> {
    let all = store.deployments()?;
    let process = edited.process_id.as_str();
    let ids: Vec<i64> = all
        .iter()
        .filter(|d| d.process_id == process && deployment.is_none_or(|id| id == d.id))
        .map(|d| d.id)
        .collect();
    if ids.is_empty() {
        let known: BTreeSet<String> = all
            .iter()
            .map(|d| format!("{} (deployment {})", d.process_id, d.id))
            .collect();
        let has = if known.is_empty() {
            "it has no deployment at all: give --from the database the instances run on".to_string()
        } else {
            format!(
                "it has {}: give --model an edit of one of them, or --process the id to edit",
                known.into_iter().collect::<Vec<_>>().join(", ")
            )
        };
        return Err(WhatIfError::NoDeployment(match deployment {
            Some(id) => match all.iter().find(|d| d.id == id) {
                Some(d) => format!(
                    "--deployment {id} is of process {}, not {process}: give the deployment of {process}, or the edit of {}",
                    d.process_id, d.process_id
                ),
                None => format!("the database has no deployment {id}; {has}"),
            },
            None => format!("the database has no deployment of process {process}; {has}"),
        }));
    }
    let mut graphs = BTreeMap::new();
    for id in &ids {
        graphs.insert(*id, deployed_graph(store, *id)?);
    }
    let (rows, latest) = store.retry_parks(Some(&ids))?;
    let parks: Vec<Parked> = rows.iter().map(Parked::of).collect();
    // The mapping: what was asked, else what the planner suggests for the
    // first instance of each deployment and parked node; every such
    // instance's plan checked against both models.
    let mut merged = mapping.clone();
    let mut representatives: BTreeMap<(i64, &str), &str> = BTreeMap::new();
    for p in &parks {
        representatives
            .entry((p.deployment_id, p.node.as_str()))
            .or_insert(p.instance.as_str());
    }
    for ((dep, _), instance) in &representatives {
        let old = &graphs[dep];
        let facts = store.facts(instance)?;
        let extra = crate::repair::holdings(store, instance)?;
        for (from, to) in migrate::suggest(old, edited, &facts.as_facts(instance), &extra) {
            merged.entry(from).or_insert(to);
        }
    }
    for ((dep, _), instance) in &representatives {
        let old = &graphs[dep];
        let facts = store.facts(instance)?;
        let extra = crate::repair::holdings(store, instance)?;
        let at = latest.unwrap_or(facts.started_ms);
        if let Err(e) = migrate::migrate(
            old,
            edited,
            &facts.as_facts(instance),
            &extra,
            &merged,
            false,
            at,
        ) {
            return Err(WhatIfError::Mismatch {
                instance: instance.to_string(),
                deployment: *dep,
                problems: e.0,
            });
        }
    }
    let target = |node: &str| {
        merged
            .get(node)
            .cloned()
            .unwrap_or_else(|| node.to_string())
    };
    // The planner accepts a park's node only onto a task of its kind; one
    // the edited model has no retrying task for is refused here too.
    for p in &parks {
        let to = target(&p.node);
        if NodePolicy::of(edited, &to).is_none() {
            return Err(WhatIfError::Mismatch {
                instance: p.instance.clone(),
                deployment: p.deployment_id,
                problems: format!(
                    "node {} holds a retry park but the edited model has no task {to}: map it to the task that replaces it (--map {}=NEW)",
                    p.node, p.node
                ),
            });
        }
    }
    let now = ramp::start_ms(latest, wall_now_ms);
    let targets: BTreeMap<&str, String> = parks
        .iter()
        .map(|p| (p.node.as_str(), target(&p.node)))
        .collect();
    let w = forecast::what_if(
        &parks,
        |p| NodePolicy::of(graphs.get(&p.deployment_id)?, &p.node),
        |p| NodePolicy::of(edited, targets.get(p.node.as_str())?),
        now,
    );
    merged.retain(|from, to| from != to);
    Ok(Report {
        process: process.to_string(),
        deployments: ids,
        mapping: merged,
        what_if: w,
    })
}
