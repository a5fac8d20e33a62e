//! The deployment lifecycle: deploying a model from a file, listing the
//! deployments with their instances by status, and retiring one.
//!
//! A retired deployment starts no new instance ([`super::Store::create_instance`]
//! and [`super::Store::start_instance`] refuse it) and receives no migrated
//! one. Retirement is refused, in the same write transaction that would set
//! it, while any instance of the deployment is FAILED or unfinished: a FAILED
//! instance is kept for its repair, and retiring its deployment would hide it.

use super::{Deployment, Store, StoreError};
use crate::sql::args;

/// One deployment as the lifecycle commands list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentRow {
    pub id: i64,
    pub process_id: String,
    /// sha256 of the source, hex.
    pub hash: String,
    /// The model file it was deployed from, as given (`None`: deployed by a
    /// run before the store recorded it).
    pub origin: Option<String>,
    /// Wall-clock ms since the Unix epoch (a deployment made by a version
    /// that recorded the run's virtual clock shows its virtual instant).
    pub deployed_ms: i64,
    /// Wall-clock ms of the retirement; `None` while it may start instances.
    pub retired_ms: Option<i64>,
    /// Its instances by status.
    pub counts: StatusCounts,
}

/// How many instances of a deployment are in each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts {
    pub running: u32,
    pub waiting: u32,
    pub completed: u32,
    pub failed: u32,
}

impl StatusCounts {
    pub fn total(&self) -> u32 {
        self.running + self.waiting + self.completed + self.failed
    }

    /// `1 failed, 2 completed` (FAILED first, the statuses with none left
    /// out), or `None` when there is no instance: `qflow deployments` and
    /// the console's list of deployments say it in the same words.
    pub fn in_words(&self) -> Option<String> {
        let parts: Vec<String> = [
            (self.failed, "failed"),
            (self.running, "running"),
            (self.waiting, "waiting"),
            (self.completed, "completed"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// What [`super::Store::deploy_from`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployed {
    pub deployment: Deployment,
    /// `false`: the same source was already deployed under this id.
    pub created: bool,
    /// When it was deployed (the earlier time, when it already was).
    pub deployed_ms: i64,
    /// Set when the existing deployment of this source is retired.
    pub retired_ms: Option<i64>,
}

/// What [`super::Store::retire`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retirement {
    Retired,
    /// It already was, since this wall-clock instant.
    AlreadyRetired(i64),
    /// Refused: these instances (id, status) are FAILED or unfinished.
    Blocked(Vec<(String, qflow_instance::Status)>),
}

impl Store {
    /// Every deployment, oldest first, with its instances by status.
    pub fn deployments(&self) -> Result<Vec<DeploymentRow>, StoreError> {
        self.read(|db| {
            db.rows(
                "SELECT d.id, d.process_id, d.hash, d.origin, d.deployed_ms, d.retired_ms,
                        COUNT(CASE WHEN i.status = 'running' THEN 1 END),
                        COUNT(CASE WHEN i.status = 'waiting' THEN 1 END),
                        COUNT(CASE WHEN i.status = 'completed' THEN 1 END),
                        COUNT(CASE WHEN i.status = 'failed' THEN 1 END)
                 FROM deployments d LEFT JOIN instances i ON i.deployment_id = d.id
                 GROUP BY d.id ORDER BY d.id",
                args![],
                |r| {
                    Ok(DeploymentRow {
                        id: r.get(0)?,
                        process_id: r.get(1)?,
                        hash: r.get(2)?,
                        origin: r.get(3)?,
                        deployed_ms: r.get(4)?,
                        retired_ms: r.get(5)?,
                        counts: StatusCounts {
                            running: r.get(6)?,
                            waiting: r.get(7)?,
                            completed: r.get(8)?,
                            failed: r.get(9)?,
                        },
                    })
                },
            )
        })
    }

    /// One deployment, if it exists.
    pub fn deployment(&self, id: i64) -> Result<Option<DeploymentRow>, StoreError> {
        Ok(self.deployments()?.into_iter().find(|d| d.id == id))
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema;

    #[test]
    fn the_lifecycle_version_is_the_migration_that_adds_retirement() {
        let m = schema::MIGRATIONS[schema::LIFECYCLE as usize - 1];
        assert!(m.contains("retired_ms") && m.contains("origin"), "{m}");
    }
}
