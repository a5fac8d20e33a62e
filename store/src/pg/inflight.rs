//! Attempts in flight on PostgreSQL (see SQLite's `inflight.rs`: an
//! attempt recorded as started before its handler runs, so a process that
//! dies mid-attempt never has the attempt run twice).

use super::super::inflight::{message, message_by, record, InFlight, KIND};
use super::{Postgres, StoreError};

impl Postgres {
    pub fn open_in_flight(
        &self,
        instance: &str,
        node: &str,
        attempt: u32,
        version: i64,
        at_ms: i64,
        wall_ms: i64,
    ) -> Result<(), StoreError> {
        self.read(|db| {
            db.exec(
                "INSERT INTO incidents(instance_id, node, kind, message, opened_ms) VALUES ($1, $2, $3, $4, $5)",
                &[&instance, &node, &KIND, &message(attempt, version, wall_ms), &at_ms],
            )?;
            Ok(())
        })
    }

    pub fn in_flight(&self, instance: &str, node: &str) -> Result<Option<InFlight>, StoreError> {
        self.read(|db| {
            let row: Option<(String, i64)> = db
                .opt(
                    "SELECT message, opened_ms FROM incidents WHERE instance_id = $1 AND node = $2 AND kind = $3 AND closed_ms IS NULL ORDER BY id DESC LIMIT 1",
                    &[&instance, &node, &KIND],
                )?
                .map(|r| (r.get(0), r.get(1)));
            Ok(row.and_then(|(message, opened_ms)| record(message, opened_ms)))
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub fn open_in_flight_by(
        &self,
        instance: &str,
        node: &str,
        attempt: u32,
        version: i64,
        at_ms: i64,
        wall_ms: i64,
        lease_until_ms: i64,
    ) -> Result<(), StoreError> {
        let m = message_by(
            attempt,
            version,
            wall_ms,
            &super::super::local_owner(),
            lease_until_ms,
        );
        self.read(|db| {
            db.exec(
                "INSERT INTO incidents(instance_id, node, kind, message, opened_ms) VALUES ($1, $2, $3, $4, $5)",
                &[&instance, &node, &KIND, &m, &at_ms],
            )?;
            Ok(())
        })
    }

    pub fn close_in_flight_of(
        &self,
        instance: &str,
        node: &str,
        at_ms: i64,
    ) -> Result<(), StoreError> {
        self.read(|db| {
            db.exec(
                "UPDATE incidents SET closed_ms = $4 WHERE instance_id = $1 AND node = $2 AND kind = $3 AND closed_ms IS NULL",
                &[&instance, &node, &KIND, &at_ms],
            )?;
            Ok(())
        })
    }

    pub fn close_in_flight(&self, instance: &str, at_ms: i64) -> Result<(), StoreError> {
        self.read(|db| {
            db.exec(
                "UPDATE incidents SET closed_ms = $3 WHERE instance_id = $1 AND kind = $2 AND closed_ms IS NULL",
                &[&instance, &KIND, &at_ms],
            )?;
            Ok(())
        })
    }
}
