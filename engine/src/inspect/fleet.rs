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
    let mut graphs: BTreeMap<i64, Result<Graph, String>> = BTreeMap::new();
    let mut out = Vec::new();
    let page = store.instance_page(filter)?;
    for row in page.rows {
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
    Ok(Page {
        instances: out,
        total: page.total,
    })
}

/// Read one instance on its pinned deployment.
pub fn instance(store: &Store, id: &str) -> Result<Inspection, crate::runtime::RunError> {
    let row = store
        .instance(id)?
        .ok_or_else(|| StoreError::NoInstance(id.to_string()))?;
    let graph = deployed_graph(store, row.deployment_id)?;
    Ok(Inspection::read(store, &graph, id)?)
}

pub use crate::diagram::NodeCount;

/// Every node of `deployment` where at least one of its instances stands,
/// failed or completed, read from the store: each unfinished instance's
/// frontier (an instance with tokens on two nodes counts at both), each
/// FAILED instance's failure, and each completed instance's last end
/// event (from its history). An instance whose snapshot cannot be read
/// counts nowhere.
pub fn node_counts(
    store: &Store,
    deployment: i64,
) -> Result<BTreeMap<String, NodeCount>, StoreError> {
    use crate::instance::history::HistoryEvent;
    use crate::instance::snapshot::{Snapshot, TokenState};
    let mut out: BTreeMap<String, NodeCount> = BTreeMap::new();
    for row in store.instances()? {
        if row.deployment_id != deployment {
            continue;
        }
        let Ok(snapshot) = Snapshot::decode(&row.snapshot) else {
            continue;
        };
        match row.status {
            Status::Failed => {
                if let Some(f) = snapshot.failure() {
                    out.entry(f.node).or_default().failed += 1;
                }
            }
            Status::Completed => {
                let end = store.history(&row.id)?.iter().rev().find_map(|h| {
                    let line = h.line()?;
                    matches!(line.event, HistoryEvent::End { .. }).then_some(line.node?)
                });
                if let Some(node) = end {
                    out.entry(node).or_default().completed += 1;
                }
            }
            Status::Running | Status::Waiting => {
                for t in snapshot.frontier() {
                    let parked = t.state == TokenState::Backoff
                        || (t.state == TokenState::Timer && snapshot.in_backoff(&t.node));
                    let c = out.entry(t.node).or_default();
                    if parked {
                        c.parked += 1;
                    } else {
                        c.waiting += 1;
                    }
                }
            }
        }
    }
    Ok(out)
}
