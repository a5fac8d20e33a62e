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
