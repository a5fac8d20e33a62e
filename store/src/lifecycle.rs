//! The deployment lifecycle: deploying a model from a file, listing the
//! deployments with their instances by status, and retiring one.
//!
//! A retired deployment starts no new instance ([`super::Store::create_instance`]
//! and [`super::Store::start_instance`] refuse it) and receives no migrated
//! one. Retirement is refused, in the same write transaction that would set
//! it, while any instance of the deployment is FAILED or unfinished: a FAILED
//! instance is kept for its repair, and retiring its deployment would hide it.

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{source_hash, Deployment, Sqlite, StoreError};

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

impl Sqlite {
    /// Deploy a model from a file (idempotent by source hash and process
    /// id): a new deployment, or the existing one of the same source.
    pub fn deploy_from(
        &mut self,
        process_id: &str,
        source: &str,
        origin: Option<&str>,
        wall_ms: i64,
    ) -> Result<Deployed, StoreError> {
        let hash = source_hash(source);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let before: i64 = tx.query_row("SELECT COUNT(*) FROM deployments", [], |r| r.get(0))?;
        let id = insert_deployment(&tx, process_id, source, origin, wall_ms)?;
        let after: i64 = tx.query_row("SELECT COUNT(*) FROM deployments", [], |r| r.get(0))?;
        let created = after > before;
        let (deployed_ms, retired_ms): (i64, Option<i64>) = tx.query_row(
            "SELECT deployed_ms, retired_ms FROM deployments WHERE id = ?1",
            params![id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        tx.commit()?;
        Ok(Deployed {
            deployment: Deployment {
                id,
                process_id: process_id.to_string(),
                hash,
            },
            created,
            deployed_ms,
            retired_ms,
        })
    }

    /// Every deployment, oldest first, with its instances by status.
    pub fn deployments(&self) -> Result<Vec<DeploymentRow>, StoreError> {
        let mut st = self.conn.prepare(
            "SELECT d.id, d.process_id, d.hash, d.origin, d.deployed_ms, d.retired_ms,
                    COUNT(CASE WHEN i.status = 'running' THEN 1 END),
                    COUNT(CASE WHEN i.status = 'waiting' THEN 1 END),
                    COUNT(CASE WHEN i.status = 'completed' THEN 1 END),
                    COUNT(CASE WHEN i.status = 'failed' THEN 1 END)
             FROM deployments d LEFT JOIN instances i ON i.deployment_id = d.id
             GROUP BY d.id ORDER BY d.id",
        )?;
        let rows = st.query_map([], |r| {
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
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// One deployment, if it exists.
    pub fn deployment(&self, id: i64) -> Result<Option<DeploymentRow>, StoreError> {
        Ok(self.deployments()?.into_iter().find(|d| d.id == id))
    }

    /// Retire a deployment, unless an instance of it is FAILED or
    /// unfinished: checked and set in one write transaction, so no instance
    /// starts or fails between the check and the retirement.
    pub fn retire(&mut self, deployment: i64, wall_ms: i64) -> Result<Retirement, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let retired: Option<Option<i64>> = tx
            .query_row(
                "SELECT retired_ms FROM deployments WHERE id = ?1",
                params![deployment],
                |r| r.get(0),
            )
            .optional()?;
        match retired {
            None => return Err(StoreError::NoDeployment(deployment)),
            Some(Some(at)) => return Ok(Retirement::AlreadyRetired(at)),
            Some(None) => {}
        }
        let blocking: Vec<(String, qflow_instance::Status)> = {
            let mut st = tx.prepare(
                "SELECT id, status FROM instances WHERE deployment_id = ?1 AND status IN ('failed','running','waiting') ORDER BY status = 'failed' DESC, rowid",
            )?;
            let rows = st.query_map(params![deployment], |r| {
                let s: String = r.get(1)?;
                Ok((
                    r.get::<_, String>(0)?,
                    qflow_instance::Status::parse(&s).unwrap_or(qflow_instance::Status::Waiting),
                ))
            })?;
            rows.collect::<Result<_, _>>()?
        };
        if !blocking.is_empty() {
            return Ok(Retirement::Blocked(blocking));
        }
        tx.execute(
            "UPDATE deployments SET retired_ms = ?2 WHERE id = ?1",
            params![deployment, wall_ms],
        )?;
        tx.commit()?;
        Ok(Retirement::Retired)
    }
}

/// Refuse to start (or move) an instance onto a retired deployment, inside
/// the caller's write transaction.
pub(super) fn refuse_retired(
    tx: &rusqlite::Transaction<'_>,
    deployment: i64,
) -> Result<(), StoreError> {
    let version: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version < super::schema::LIFECYCLE {
        return Ok(());
    }
    let retired: Option<Option<i64>> = tx
        .query_row(
            "SELECT retired_ms FROM deployments WHERE id = ?1",
            params![deployment],
            |r| r.get(0),
        )
        .optional()?;
    match retired {
        None => Err(StoreError::NoDeployment(deployment)),
        Some(Some(_)) => Err(StoreError::Retired(deployment)),
        Some(None) => Ok(()),
    }
}

/// Insert a deployment unless the same source of the same process is
/// deployed; its id either way. Inside the caller's write transaction.
pub(super) fn insert_deployment(
    tx: &rusqlite::Transaction<'_>,
    process_id: &str,
    source: &str,
    origin: Option<&str>,
    wall_ms: i64,
) -> Result<i64, StoreError> {
    let hash = source_hash(source);
    match origin {
        Some(origin) => tx.execute(
            "INSERT OR IGNORE INTO deployments(process_id, hash, source, deployed_ms, origin) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![process_id, hash, source, wall_ms, origin],
        )?,
        // (Without an origin the columns of every schema version suffice.)
        None => tx.execute(
            "INSERT OR IGNORE INTO deployments(process_id, hash, source, deployed_ms) VALUES (?1, ?2, ?3, ?4)",
            params![process_id, hash, source, wall_ms],
        )?,
    };
    Ok(tx.query_row(
        "SELECT id FROM deployments WHERE hash = ?1 AND process_id = ?2",
        params![hash, process_id],
        |r| r.get(0),
    )?)
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
