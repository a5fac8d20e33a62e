//! The store's contract with the database behind it: what a backend
//! implements so that every method of [`Store`] runs on it.
//!
//! Every durable write and read of the store is written once, over
//! [`Conn`] (see `sql/mod.rs`): a backend supplies its connection as a
//! [`Conn`] outside a transaction ([`Backend::read`]) and inside a write
//! transaction ([`Backend::write`]), and the few session-level things that
//! are not statements (its schema version, a batch's read snapshot,
//! cross-process wakes, a file deleted under it). [`Store`] holds one of a
//! closed set of backends ([`Database`]) and asks it for `&dyn Backend`:
//! the set is known when qflow is built, and one dynamic call per
//! transaction costs nothing beside the statements it runs.

#[cfg(feature = "postgres")]
use super::pg;
use super::sql::sqlite::Lite;
use super::sql::Conn;
use super::{Database, Sqlite, Store, StoreError};
use rusqlite::TransactionBehavior;

/// A body run on a backend's connection (the store's generic code, with
/// its result kept by the caller).
pub(crate) type Body<'a> = &'a mut dyn FnMut(&mut dyn Conn) -> Result<(), StoreError>;

/// What a database must supply for the store to run on it.
pub(crate) trait Backend {
    /// Run `f` on the connection, outside any transaction (each statement
    /// commits on its own).
    fn read(&self, f: Body<'_>) -> Result<(), StoreError>;
    /// Run `f` in one write transaction, committed when it returns `Ok`
    /// and rolled back otherwise (nothing of it is kept).
    fn write(&mut self, f: Body<'_>) -> Result<(), StoreError>;
    /// The schema version of the database (the migrations applied).
    fn schema_version(&self) -> Result<u32, StoreError>;
    /// Read everything until [`Backend::end_reads`] from one snapshot, if
    /// the backend gains by it (nothing by default).
    fn begin_reads(&self) -> Result<(), StoreError> {
        Ok(())
    }
    fn end_reads(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Group a serving round's small writes and reads into one write
    /// transaction until [`Backend::end_group`], if the backend gains by it
    /// (nothing by default: each statement commits alone).
    fn begin_group(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// End the group: commit it, or roll it back (`commit` false).
    fn end_group(&self, _commit: bool) -> Result<(), StoreError> {
        Ok(())
    }
    /// Start receiving other processes' poison wakes (none by default: a
    /// replica keeps its own in memory, and a lost one is recovered by the
    /// call's timeout).
    fn listen_for_wakes(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    fn wakes(&self, _owner: &str) -> Result<Vec<(String, String)>, StoreError> {
        Ok(Vec::new())
    }
    /// Start receiving notifications of new work (false: this database
    /// sends none; SQLite).
    fn listen_for_work(&mut self) -> Result<bool, StoreError> {
        Ok(false)
    }
    /// Wait at most `timeout` for a notification of new work made by
    /// someone other than `owner`.
    fn wait_for_work(
        &self,
        _owner: &str,
        _timeout: std::time::Duration,
    ) -> Result<bool, StoreError> {
        Ok(false)
    }
    /// Refuse to go on when the database under this process is gone (a
    /// SQLite file deleted or replaced); checked by claims and picks of
    /// work.
    fn still_there(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

impl Backend for Sqlite {
    fn read(&self, f: Body<'_>) -> Result<(), StoreError> {
        f(&mut Lite(self.conn()))
    }

    fn write(&mut self, f: Body<'_>) -> Result<(), StoreError> {
        // Inside a group ([`Store::begin_group`]) a write is a savepoint
        // of the group's transaction: committed with it, rolled back
        // alone when it fails.
        if !self.conn().is_autocommit() {
            return crate::sql::Conn::savepoint(&mut Lite(self.conn()), f);
        }
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        f(&mut Lite(&tx))?;
        tx.commit()?;
        Ok(())
    }

    fn schema_version(&self) -> Result<u32, StoreError> {
        Sqlite::schema_version(self)
    }

    /// One read transaction, where each statement alone takes and drops
    /// its own locks (15 lock calls per decision).
    fn begin_reads(&self) -> Result<(), StoreError> {
        Ok(self.conn().execute_batch("BEGIN DEFERRED")?)
    }

    fn end_reads(&self) -> Result<(), StoreError> {
        if !self.conn().is_autocommit() {
            self.conn().execute_batch("COMMIT")?;
        }
        Ok(())
    }

    /// One commit, one sync of the log, for the whole group instead of
    /// one per record. IMMEDIATE: the write lock from the start (waiting
    /// out another writer), never a read snapshot that cannot be upgraded
    /// later.
    fn begin_group(&self) -> Result<(), StoreError> {
        Ok(self.conn().execute_batch("BEGIN IMMEDIATE")?)
    }

    fn end_group(&self, commit: bool) -> Result<(), StoreError> {
        if !self.conn().is_autocommit() {
            self.conn()
                .execute_batch(if commit { "COMMIT" } else { "ROLLBACK" })?;
        }
        Ok(())
    }

    fn still_there(&self) -> Result<(), StoreError> {
        Sqlite::still_there(self)
    }
}

#[cfg(feature = "postgres")]
impl Backend for pg::Postgres {
    fn read(&self, f: Body<'_>) -> Result<(), StoreError> {
        pg::Postgres::read(self, |db| f(db))
    }

    fn write(&mut self, f: Body<'_>) -> Result<(), StoreError> {
        pg::Postgres::write(self, |db| f(db))
    }

    fn schema_version(&self) -> Result<u32, StoreError> {
        pg::Postgres::schema_version(self)
    }

    fn listen_for_wakes(&mut self) -> Result<(), StoreError> {
        pg::Postgres::listen_for_wakes(self)
    }

    fn wakes(&self, owner: &str) -> Result<Vec<(String, String)>, StoreError> {
        pg::Postgres::wakes(self, owner)
    }

    fn listen_for_work(&mut self) -> Result<bool, StoreError> {
        pg::Postgres::listen_for_work(self)?;
        Ok(true)
    }

    fn wait_for_work(&self, owner: &str, timeout: std::time::Duration) -> Result<bool, StoreError> {
        pg::Postgres::wait_for_work(self, owner, timeout)
    }
}

impl Store {
    pub(crate) fn backend(&self) -> &dyn Backend {
        match &self.backend {
            Database::Sqlite(s) => s,
            Database::Postgres(p) => &**p,
        }
    }

    fn backend_mut(&mut self) -> &mut dyn Backend {
        match &mut self.backend {
            Database::Sqlite(s) => s,
            Database::Postgres(p) => &mut **p,
        }
    }

    /// Run `f` on the connection, outside any transaction (each statement
    /// commits on its own).
    pub(crate) fn read<T>(
        &self,
        f: impl FnOnce(&mut dyn Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let (mut f, mut out) = (Some(f), None);
        self.backend().read(&mut |db| {
            if let Some(f) = f.take() {
                out = Some(f(db)?);
            }
            Ok(())
        })?;
        out.ok_or_else(|| StoreError::Decode("a read ran no body".into()))
    }

    /// Run `f` in one write transaction, committed when it returns `Ok`
    /// (rolled back otherwise: nothing of it is kept).
    pub(crate) fn write<T>(
        &mut self,
        f: impl FnOnce(&mut dyn Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let (mut f, mut out) = (Some(f), None);
        self.backend_mut().write(&mut |db| {
            if let Some(f) = f.take() {
                out = Some(f(db)?);
            }
            Ok(())
        })?;
        out.ok_or_else(|| StoreError::Decode("a write ran no body".into()))
    }

    /// SQLite only: refuse to go on when the database file was deleted or
    /// replaced under this process (claims and picks of work check it).
    pub(crate) fn still_there(&self) -> Result<(), StoreError> {
        self.backend().still_there()
    }

    /// The schema version of the database (the migrations applied).
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        self.backend().schema_version()
    }

    /// Read everything until [`Store::end_reads`] from one snapshot of the
    /// database (a batch's facts): on SQLite one read transaction, where
    /// each statement alone takes and drops its own locks (15 lock calls
    /// per decision). Writing in between is an error.
    pub fn begin_reads(&self) -> Result<(), StoreError> {
        self.backend().begin_reads()
    }

    /// End what [`Store::begin_reads`] began (nothing when none is open).
    pub fn end_reads(&self) -> Result<(), StoreError> {
        self.backend().end_reads()
    }

    /// Group the small writes of a serving round's looks (the in-flight
    /// records of the attempts it hands to lanes) and its reads into one
    /// write transaction until [`Store::end_group`]: on SQLite one commit,
    /// one sync of the log, for the whole group instead of one per record.
    /// On PostgreSQL each statement commits alone, as before.
    pub fn begin_group(&self) -> Result<(), StoreError> {
        self.backend().begin_group()
    }

    /// End what [`Store::begin_group`] began: commit it, or roll it back
    /// (`commit` false: nothing of the group is kept).
    pub fn end_group(&self, commit: bool) -> Result<(), StoreError> {
        self.backend().end_group(commit)
    }

    /// The poison wakes other processes sent since the last call
    /// (instance, node), without waiting; `owner`'s own are left out. Best
    /// effort: always empty on SQLite (a replica keeps its own wakes in
    /// memory), and a lost one is recovered by the call's timeout.
    pub fn wakes(&self, owner: &str) -> Result<Vec<(String, String)>, StoreError> {
        self.backend().wakes(owner)
    }

    /// Start receiving notifications of new due work from every process
    /// on this database (a start, an answer, an unpause, a release:
    /// [`Store::wait_for_work`]). `false`: this database sends none
    /// (SQLite), and a serving loop keeps its safety poll for another
    /// process's writes.
    pub fn listen_for_work(&mut self) -> Result<bool, StoreError> {
        self.backend_mut().listen_for_work()
    }

    /// Wait at most `timeout` for a notification of new work made by
    /// someone other than `owner` (true), after
    /// [`Store::listen_for_work`]. Best effort: a notification sent while
    /// the connection was down is lost (the caller looks again anyway
    /// after an error).
    pub fn wait_for_work(
        &self,
        owner: &str,
        timeout: std::time::Duration,
    ) -> Result<bool, StoreError> {
        self.backend().wait_for_work(owner, timeout)
    }

    /// A second connection to the same PostgreSQL database (a serving
    /// loop's listener of new work); `None` on SQLite.
    pub fn another_connection(&self) -> Result<Option<Store>, StoreError> {
        match &self.backend {
            Database::Sqlite(_) => Ok(None),
            Database::Postgres(p) => Ok(Some(Store::connect_existing(
                &crate::Location::Postgres(p.connection_url()),
            )?)),
        }
    }

    /// Start receiving the poison wakes of every process on this database
    /// ([`Store::wakes`]); nothing to do on SQLite.
    pub fn listen_for_wakes(&mut self) -> Result<(), StoreError> {
        self.backend_mut().listen_for_wakes()
    }
}

#[cfg(any(test, feature = "testing"))]
impl Store {
    /// The SQLite connection, for tests that damage or inspect a database
    /// by hand.
    pub fn conn(&self) -> &rusqlite::Connection {
        match &self.backend {
            Database::Sqlite(s) => s.conn(),
            Database::Postgres(_) => panic!("a SQLite connection asked of a PostgreSQL store"),
        }
    }

    /// Run `sql` on a PostgreSQL store's connection (tests that set up a
    /// state by hand).
    pub fn pg_batch(&mut self, sql: &str) {
        match &mut self.backend {
            Database::Sqlite(_) => panic!("PostgreSQL statements asked of a SQLite store"),
            Database::Postgres(p) => p.batch(sql),
        }
    }

    /// Count SQLite's virtual-machine steps of every statement from now on
    /// (see `plans.rs`).
    pub fn count_steps(&mut self) {
        match &mut self.backend {
            Database::Sqlite(s) => s.count_steps(),
            Database::Postgres(_) => panic!("SQLite step counting asked of a PostgreSQL store"),
        }
    }
}
