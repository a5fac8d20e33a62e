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

use qflow_instance::Transition;

/// One decision of a batch, decided from the facts read at `version`.
pub struct Pending<'a> {
    pub instance: &'a str,
    pub version: i64,
    pub transition: &'a Transition,
    pub at_ms: i64,
}
