//! A database's deployments and instances as plain data: what
//! `qflow deployments`, `qflow instances` and the console's attach mode
//! list. Each instance line is a summary of that instance's [`Inspection`],
//! so a list and `qflow show` never disagree.

use std::collections::BTreeMap;

use crate::instance::Status;
use crate::runtime::graph::Graph;
use crate::runtime::shell::deployed_graph;
use crate::store::{DeploymentRow, Store, StoreError};

use super::{Held, Inspection, Waiting};

/// One instance in a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceSummary {
    pub id: String,
    pub process: String,
    pub deployment_id: i64,
    pub status: Status,
    /// Where it stands: the node it failed at, else its first token.
    pub node: Option<String>,
    /// Failed attempts burned at that node (or the failure's count).
    pub attempts: Option<u32>,
    /// When its next attempt (or timer) is due, in ms since it started.
    pub next_ms: Option<i64>,
    /// What a waiting instance waits for (`retry`, `response`,
    /// `reconciliation`, …).
    pub waiting_for: Option<String>,
    pub failure_code: Option<String>,
    pub failure_reason: Option<String>,
    /// The last attempt's failure message, when the failure recorded one
    /// (a handler's words: `503 from the provider`).
    pub failure_message: Option<String>,
    /// When it was quarantined (wall clock, ms since the epoch), if it is.
    pub quarantined_ms: Option<i64>,
    /// Who quarantined it, and why.
    pub quarantined_by: Option<String>,
    pub quarantine_reason: Option<String>,
    /// The pauses holding the retry park it waits for (its due time is
    /// kept: `next_ms`), one per pause; empty when nothing holds it.
    pub held_by: Vec<Held>,
    /// Set when the instance could not be inspected (its deployment's source
    /// no longer compiles): the row's status is still listed.
    pub unreadable: Option<String>,
}

impl Inspection {
    /// This instance as one line of a list.
    pub fn summary(&self) -> InstanceSummary {
        let failed = self.status == Status::Failed;
        let failure = self.failure.as_ref().filter(|_| failed);
        let node = self.current.clone();
        let attempts = node.as_deref().and_then(|n| {
            if failed {
                self.failed_attempts()
            } else {
                self.nodes
                    .iter()
                    .find(|x| x.id == n)
                    .and_then(|x| x.attempts)
            }
        });
        let (next_ms, waiting_for) = match &self.waiting {
            Some(Waiting::Timer {
                purpose, due_ms, ..
            }) => (
                Some(*due_ms),
                Some(super::waiting_for(*purpose).to_string()),
            ),
            Some(Waiting::Reconciliation { .. }) => (None, Some("reconciliation".into())),
            Some(Waiting::Nothing { .. }) => (None, Some("nothing".into())),
            None => (None, None),
        };
        InstanceSummary {
            id: self.id.clone(),
            process: self.process.clone(),
            deployment_id: self.deployment_id,
            status: self.status,
            node,
            attempts,
            next_ms,
            waiting_for: waiting_for.filter(|_| self.status == Status::Waiting),
            failure_code: failure.map(|f| f.code.clone()),
            failure_reason: failure.map(|f| f.reason.clone()),
            failure_message: failure.and_then(|f| f.message.clone()),
            quarantined_ms: self.quarantined_ms,
            quarantined_by: self.quarantined_by.clone(),
            quarantine_reason: self.quarantine_reason.clone(),
            held_by: self.held_wait().into_iter().cloned().collect(),
            unreadable: None,
        }
    }
}

/// Which instances to list, a page at a time (the store's query).
pub type Filter = crate::store::query::InstanceQuery;

/// One page of a list of instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub instances: Vec<InstanceSummary>,
    /// How many instances pass the filter in all (this page included).
    pub total: u64,
}

impl Page {
    /// How many pass the filter after this page (`offset`: the page's).
    pub fn after(&self, offset: u64) -> u64 {
        self.total
            .saturating_sub(offset.saturating_add(self.instances.len() as u64))
    }
}

/// Every deployment of the store, oldest first, with its instance counts.
pub fn deployments(store: &Store) -> Result<Vec<DeploymentRow>, StoreError> {
    store.deployments()
}

/// One page of the instances of the store that pass `filter`, oldest
/// first, each summarised from its inspection (one compiled graph per
/// deployment), and how many pass in all. The store selects and counts the
/// page in one query each, so only the page's instances are inspected: a
/// page of 50 costs the same at 50,000 instances as at 50.
pub fn instances(store: &Store, filter: &Filter) -> Result<Page, StoreError> {
    let page = store.instance_page(filter)?;
    Ok(Page {
        instances: summaries(store, page.rows.iter())?,
        total: page.total,
    })
}

/// Each row summarised from its inspection (one compiled graph per
/// deployment); a row whose deployment no longer compiles is listed from
/// the row itself, saying why.
fn summaries<'a>(
    store: &Store,
    rows: impl Iterator<Item = &'a crate::store::InstanceRow>,
) -> Result<Vec<InstanceSummary>, StoreError> {
    let mut graphs: BTreeMap<i64, Result<Graph, String>> = BTreeMap::new();
    let mut out = Vec::new();
    for row in rows {
        let graph = graphs
            .entry(row.deployment_id)
            .or_insert_with(|| deployed_graph(store, row.deployment_id).map_err(|e| e.to_string()));
        let summary = match graph {
            Ok(g) => Inspection::read(store, g, &row.id)?.summary(),
            Err(why) => {
                // Read from the row itself, so even an instance that
                // cannot be inspected says it is set aside, and by whom.
                let c = store.containment(&row.id)?;
                InstanceSummary {
                    id: row.id.clone(),
                    process: row.process_id.clone(),
                    deployment_id: row.deployment_id,
                    status: row.status,
                    node: None,
                    attempts: None,
                    next_ms: None,
                    waiting_for: None,
                    failure_code: None,
                    failure_reason: None,
                    failure_message: None,
                    quarantined_ms: c.quarantined_ms,
                    quarantined_by: c.quarantined_by,
                    quarantine_reason: c.quarantine_reason,
                    held_by: Vec::new(),
                    unreadable: Some(why.clone()),
                }
            }
        };
        out.push(summary);
    }
    Ok(out)
}

/// Read one instance on its pinned deployment.
pub fn instance(store: &Store, id: &str) -> Result<Inspection, crate::runtime::RunError> {
    let row = store
        .instance(id)?
        .ok_or_else(|| StoreError::NoInstance(id.to_string()))?;
    let graph = deployed_graph(store, row.deployment_id)?;
    Ok(Inspection::read(store, &graph, id)?)
}

/// Which instances a browser's list shows: the store's filters, and those
/// read from each row (its snapshot and start), for the inspector's list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Search {
    /// Status, deployment, failure class and dependency of a retry park,
    /// and the page (`offset`, `limit`): the store's own query.
    pub store: Filter,
    /// Only instances standing at this node: a token there, or failed there.
    pub node: Option<String>,
    /// Only FAILED instances whose failure has this code (`q.retry.exhausted`).
    pub code: Option<String>,
    /// Only instances started at or after / before this instant (ms on the
    /// instances' clock, `started_ms`).
    pub started_from_ms: Option<i64>,
    pub started_before_ms: Option<i64>,
}

impl Search {
    /// Whether a filter the store's query does not take is set.
    fn reads_rows(&self) -> bool {
        self.node.is_some()
            || self.code.is_some()
            || self.started_from_ms.is_some()
            || self.started_before_ms.is_some()
    }

    /// Whether one row passes the filters read from the row itself.
    fn keeps(&self, row: &crate::store::InstanceRow) -> bool {
        if self.started_from_ms.is_some_and(|t| row.started_ms < t)
            || self.started_before_ms.is_some_and(|t| row.started_ms >= t)
        {
            return false;
        }
        if self.node.is_none() && self.code.is_none() {
            return true;
        }
        let Ok(snapshot) = crate::instance::snapshot::Snapshot::decode(&row.snapshot) else {
            return false;
        };
        let failure = snapshot.failure().filter(|_| row.status == Status::Failed);
        if let Some(code) = &self.code {
            if failure.as_ref().is_none_or(|f| &f.code != code) {
                return false;
            }
        }
        if let Some(node) = &self.node {
            let at_node = failure.as_ref().is_some_and(|f| &f.node == node)
                || snapshot.frontier().iter().any(|t| &t.node == node);
            if !at_node {
                return false;
            }
        }
        true
    }
}

/// One page of the instances that pass `search`, oldest first. With the
/// store's filters alone this is [`instances`] (the store pages). With a
/// node, a failure code or a start window, the store's filters select the
/// rows, each row's snapshot and start are read (no further query per
/// row), and only the page's instances are inspected.
pub fn search(store: &Store, search: &Search) -> Result<Page, StoreError> {
    if !search.reads_rows() {
        return instances(store, &search.store);
    }
    let all = Filter {
        offset: 0,
        limit: None,
        ..search.store.clone()
    };
    let rows = store.instance_page(&all)?.rows;
    let kept: Vec<&crate::store::InstanceRow> = rows.iter().filter(|r| search.keeps(r)).collect();
    let total = kept.len() as u64;
    let offset = usize::try_from(search.store.offset).unwrap_or(usize::MAX);
    let limit = search
        .store
        .limit
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    let out = summaries(store, kept.into_iter().skip(offset).take(limit))?;
    Ok(Page {
        instances: out,
        total,
    })
}

/// How many instances of one deployment stand at each node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeCounts {
    /// A token waits there (ready, on a timer, for a response, a join),
    /// not parked for a retry nor awaiting a reconciliation.
    pub waiting: u64,
    /// A token is parked there for a retry.
    pub parked: u64,
    /// An attempt's outcome is unknown there: it waits for an operator's
    /// reconciliation (an open incident).
    pub reconcile: u64,
    /// The instance FAILED there (its incident is open there).
    pub failed: u64,
    /// COMPLETED instances that reached this end event.
    pub completed: u64,
}

/// What the fleet of one deployment looks like, node by node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeploymentCounts {
    pub nodes: BTreeMap<String, NodeCounts>,
    pub running: u64,
    pub waiting: u64,
    pub completed: u64,
    pub failed: u64,
}

/// The counts per node of `deployment`'s instances, read from each
/// instance's row and snapshot (one query for the deployment, none per
/// instance).
pub fn node_counts(store: &Store, deployment: i64) -> Result<DeploymentCounts, StoreError> {
    use crate::instance::snapshot::{Snapshot, TokenState};
    let rows = store
        .instance_page(&Filter {
            deployment: Some(deployment),
            ..Filter::default()
        })?
        .rows;
    let mut out = DeploymentCounts::default();
    for row in rows {
        match row.status {
            Status::Running => out.running += 1,
            Status::Waiting => out.waiting += 1,
            Status::Completed => out.completed += 1,
            Status::Failed => out.failed += 1,
        }
        let Ok(snapshot) = Snapshot::decode(&row.snapshot) else {
            continue;
        };
        if row.status == Status::Failed {
            if let Some(f) = snapshot.failure() {
                out.nodes.entry(f.node).or_default().failed += 1;
            }
            continue;
        }
        if row.status == Status::Completed {
            continue;
        }
        for t in snapshot.frontier() {
            let c = out.nodes.entry(t.node).or_default();
            match t.state {
                TokenState::Backoff => c.parked += 1,
                TokenState::Reconcile => c.reconcile += 1,
                _ => c.waiting += 1,
            }
        }
    }
    for (node, n) in store.completions_by_end(deployment)? {
        out.nodes.entry(node).or_default().completed += n;
    }
    Ok(out)
}
