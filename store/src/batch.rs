//! Group commit: many instances' transitions in one transaction, each still
//! under its own claim and version check.
//!
//! A fleet driver claims a batch of instances in one transaction
//! ([`super::Store::claim_many`]), decides each from facts read under its claim, and
//! applies every decision in one more ([`super::Store::apply_many`]). Inside that
//! transaction each instance's transition sits in its own savepoint: one
//! refused (its claim lapsed, its facts went stale, its timer was consumed)
//! is rolled back alone and reported, the others commit. Two commits — two
//! syncs of the log — carry a whole batch, where one decision at a time
//! costs three (claim, apply, release).
//!
//! Crash safety is unchanged: a crash before the apply's commit loses the
//! whole batch's decisions and nothing else (their claims lapse); after it,
//! every accepted transition is whole.

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{Sqlite, StoreError, CLAIM_TTL_MS};
use crate::sql::sqlite::Lite;
use crate::write::{check_claim, write_transition};
use qflow_instance::Transition;

/// One decision of a batch, decided from the facts read at `version`.
pub struct Pending<'a> {
    pub instance: &'a str,
    pub version: i64,
    pub transition: &'a Transition,
    pub at_ms: i64,
}

impl Sqlite {
    /// Claim every instance of `ids` not held by another live owner and not
    /// quarantined, in one transaction; returns those claimed, in the order
    /// given.
    pub fn claim_many(
        &mut self,
        ids: &[String],
        owner: &str,
        wall_now_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        self.still_there()?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut claimed = Vec::with_capacity(ids.len());
        for id in ids {
            let row: Option<(Option<String>, Option<i64>, Option<i64>)> = tx
                .prepare_cached(
                    "SELECT claim_owner, claim_expires_ms, quarantined_ms FROM instances WHERE id = ?1",
                )?
                .query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?;
            let Some((held, until, quarantined)) = row else {
                continue;
            };
            if quarantined.is_some() {
                continue;
            }
            if let (Some(h), Some(u)) = (&held, until) {
                if h != owner && u > wall_now_ms && !super::owner_is_dead(h) {
                    continue;
                }
            }
            tx.prepare_cached(
                "UPDATE instances SET claim_owner = ?2, claim_expires_ms = ?3 WHERE id = ?1",
            )?
            .execute(params![id, owner, wall_now_ms + CLAIM_TTL_MS])?;
            claimed.push(id.clone());
        }
        tx.commit()?;
        Ok(claimed)
    }

    /// Apply a batch of transitions in one transaction, each under `owner`'s
    /// claim and the version it was decided at, and release the claims of
    /// `owner` on every instance of the batch and of `release` (claimed, but
    /// with nothing to decide). One result per decision, in order: the
    /// transition's seq, or why it was refused (nothing of it written).
    pub fn apply_many(
        &mut self,
        owner: &str,
        batch: &[Pending<'_>],
        release: &[String],
        wall_now_ms: i64,
    ) -> Result<Vec<Result<i64, StoreError>>, StoreError> {
        let mut tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut results = Vec::with_capacity(batch.len());
        for p in batch {
            let sp = tx.savepoint()?;
            let mut db = Lite(&sp);
            let applied =
                check_claim(&mut db, p.instance, owner, p.version, wall_now_ms).and_then(|()| {
                    write_transition(&mut db, p.instance, owner, p.version, p.transition, p.at_ms)
                });
            match applied {
                Ok(seq) => {
                    sp.commit()?;
                    results.push(Ok(seq));
                }
                Err(e) if e.is_lost_race() => {
                    // Dropping the savepoint rolls its writes back.
                    drop(sp);
                    results.push(Err(e));
                }
                Err(e) => return Err(e),
            }
        }
        let ids = batch
            .iter()
            .map(|p| p.instance)
            .chain(release.iter().map(String::as_str));
        for id in ids {
            tx.prepare_cached(
                "UPDATE instances SET claim_owner = NULL, claim_expires_ms = NULL WHERE id = ?1 AND claim_owner = ?2",
            )?
            .execute(params![id, owner])?;
        }
        tx.commit()?;
        Ok(results)
    }
}
