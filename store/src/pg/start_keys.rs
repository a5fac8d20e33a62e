//! Idempotent starts on PostgreSQL (see SQLite's `start_keys.rs`). The
//! numbering lock every start takes is taken here before the key is looked
//! up, and held to the commit: two starts with one key, on any hosts, take
//! turns, and the second finds the first's key.

use super::super::start_keys::{KeyedStart, StartKey};
use super::super::Deployment;
use super::{insert_instance, refuse_retired, schema, Postgres, StoreError};
use qflow_instance::Transition;

impl Postgres {
    pub fn start_key(&self, key: &str) -> Result<Option<StartKey>, StoreError> {
        self.read(|db| {
            Ok(db
                .opt(
                    "SELECT instance_id, process_id, fingerprint FROM start_keys WHERE key = $1",
                    &[&key],
                )?
                .map(|r| StartKey {
                    instance: r.get(0),
                    process_id: r.get(1),
                    fingerprint: r.get(2),
                }))
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub fn start_instance_once(
        &mut self,
        deployment: &Deployment,
        start: &Transition,
        started_ms: i64,
        key: &str,
        fingerprint: &str,
        wall_ms: i64,
    ) -> Result<KeyedStart, StoreError> {
        self.write(|db| {
            db.exec(
                "SELECT pg_advisory_xact_lock($1)",
                &[&schema::NUMBERING_LOCK],
            )?;
            if let Some(r) = db.opt(
                "SELECT instance_id, process_id, fingerprint FROM start_keys WHERE key = $1",
                &[&key],
            )? {
                return Ok(KeyedStart::Existing(StartKey {
                    instance: r.get(0),
                    process_id: r.get(1),
                    fingerprint: r.get(2),
                }));
            }
            refuse_retired(db, deployment.id)?;
            let id = insert_instance(db, deployment, start, started_ms)?;
            db.exec(
                "INSERT INTO start_keys(key, process_id, fingerprint, instance_id, created_ms) VALUES ($1, $2, $3, $4, $5)",
                &[&key, &deployment.process_id, &fingerprint, &id, &wall_ms],
            )?;
            Ok(KeyedStart::Started(id))
        })
    }
}
