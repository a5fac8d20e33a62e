//! Idempotent starts: a start that names a key (`Idempotency-Key` on
//! `POST /processes/<process>/instances`) is recorded with the instance it
//! started, in the start's own transaction, so the same key returns that
//! instance for as long as the database lives: after a lost reply, a
//! restart, or on another replica. Two starts with one key never both
//! start: SQLite's writers take turns on the file; PostgreSQL's starts take
//! turns through the numbering lock, taken before the key is looked up.
//!
//! Table `start_keys` (migration 10): `key` (the primary key), the
//! `process_id` and a `fingerprint` of the variables the first start was
//! given (so a key reused for another start is refused rather than
//! answered with the wrong instance), the `instance_id` and when
//! (`created_ms`, wall clock). Rows are never updated or deleted.

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{exec, insert_instance, lifecycle, Deployment, Sqlite, StoreError};
use qflow_instance::Transition;

/// The start a key names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartKey {
    pub instance: String,
    pub process_id: String,
    /// The first start's variables, fingerprinted (the caller's choice of
    /// digest; compared for equality only).
    pub fingerprint: String,
}

/// What a keyed start did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyedStart {
    /// No start had the key: this one started the instance.
    Started(String),
    /// The key was taken already: nothing was started.
    Existing(StartKey),
}

impl Sqlite {
    pub fn start_key(&self, key: &str) -> Result<Option<StartKey>, StoreError> {
        Ok(self
            .conn()
            .prepare_cached(
                "SELECT instance_id, process_id, fingerprint FROM start_keys WHERE key = ?1",
            )?
            .query_row(params![key], |r| {
                Ok(StartKey {
                    instance: r.get(0)?,
                    process_id: r.get(1)?,
                    fingerprint: r.get(2)?,
                })
            })
            .optional()?)
    }

    pub fn start_instance_once(
        &mut self,
        deployment: &Deployment,
        start: &Transition,
        started_ms: i64,
        key: &str,
        fingerprint: &str,
        wall_ms: i64,
    ) -> Result<KeyedStart, StoreError> {
        self.still_there()?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing = tx
            .prepare_cached(
                "SELECT instance_id, process_id, fingerprint FROM start_keys WHERE key = ?1",
            )?
            .query_row(params![key], |r| {
                Ok(StartKey {
                    instance: r.get(0)?,
                    process_id: r.get(1)?,
                    fingerprint: r.get(2)?,
                })
            })
            .optional()?;
        if let Some(k) = existing {
            return Ok(KeyedStart::Existing(k));
        }
        lifecycle::refuse_retired(&tx, deployment.id)?;
        let id = insert_instance(&tx, deployment, start, started_ms)?;
        exec(
            &tx,
            "INSERT INTO start_keys(key, process_id, fingerprint, instance_id, created_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![key, deployment.process_id, fingerprint, id, wall_ms],
        )?;
        tx.commit()?;
        Ok(KeyedStart::Started(id))
    }
}
