//! The store's one public API, forwarded to the database behind it.
//!
//! Every public method of [`Store`] is listed here once, with its contract;
//! each backend implements a method of the same name and signature, and the
//! forwarder picks the backend with a `match` (enum dispatch: the set of
//! stores is closed and known when qflow is built, so there is no trait
//! object, no vtable, and a method a backend lacks is a compile error here,
//! not a runtime surprise). Adding a method to the store means adding it to
//! this list and to each backend.

use super::{Backend, Store, StoreError};

/// `reads { fn name(args) -> T; … }` forwards `&self` methods, `writes`
/// forwards `&mut self` ones, each to the backend's method of the same name.
macro_rules! forward {
    (
        reads { $( $(#[$ra:meta])* fn $r:ident($($ra_n:ident: $ra_t:ty),* $(,)?) -> $rr:ty; )* }
        writes { $( $(#[$wa:meta])* fn $w:ident($($wa_n:ident: $wa_t:ty),* $(,)?) -> $wr:ty; )* }
    ) => {
        #[allow(clippy::too_many_arguments)]
        impl Store {
            $(
                $(#[$ra])*
                pub fn $r(&self, $($ra_n: $ra_t),*) -> $rr {
                    match &self.backend {
                        Backend::Sqlite(s) => s.$r($($ra_n),*),
                        Backend::Postgres(p) => p.$r($($ra_n),*),
                    }
                }
            )*
            $(
                $(#[$wa])*
                pub fn $w(&mut self, $($wa_n: $wa_t),*) -> $wr {
                    match &mut self.backend {
                        Backend::Sqlite(s) => s.$w($($wa_n),*),
                        Backend::Postgres(p) => p.$w($($wa_n),*),
                    }
                }
            )*
        }
    };
}

forward! {
    reads {
        /// The schema version of the database (the migrations applied).
        fn schema_version() -> Result<u32, StoreError>;
        /// Read everything until [`Store::end_reads`] from one snapshot of
        /// the database (a batch's facts): on SQLite one read transaction,
        /// where each statement alone takes and drops its own locks (15
        /// lock calls per decision). Writing in between is an error.
        fn begin_reads() -> Result<(), StoreError>;
        /// End what [`Store::begin_reads`] began (nothing when none is open).
        fn end_reads() -> Result<(), StoreError>;
        /// The poison wakes other processes sent since the last call
        /// (instance, node), without waiting; `owner`'s own are left out.
        /// Best effort: always empty on SQLite (a replica keeps its own
        /// wakes in memory), and a lost one is recovered by the call's
        /// timeout.
        fn wakes(owner: &str) -> Result<Vec<(String, String)>, StoreError>;
    }
    writes {
        /// Start receiving the poison wakes of every process on this
        /// database ([`Store::wakes`]); nothing to do on SQLite.
        fn listen_for_wakes() -> Result<(), StoreError>;
    }
}

#[cfg(any(test, feature = "testing"))]
impl Store {
    /// The SQLite connection, for tests that damage or inspect a database
    /// by hand.
    pub fn conn(&self) -> &rusqlite::Connection {
        match &self.backend {
            Backend::Sqlite(s) => s.conn(),
            Backend::Postgres(_) => panic!("a SQLite connection asked of a PostgreSQL store"),
        }
    }

    /// Run `sql` on a PostgreSQL store's connection (tests that set up a
    /// state by hand).
    pub fn pg_batch(&mut self, sql: &str) {
        match &mut self.backend {
            Backend::Sqlite(_) => panic!("PostgreSQL statements asked of a SQLite store"),
            Backend::Postgres(p) => p.batch(sql),
        }
    }

    /// Count SQLite's virtual-machine steps of every statement from now on
    /// (see `plans.rs`).
    pub fn count_steps(&mut self) {
        match &mut self.backend {
            Backend::Sqlite(s) => s.count_steps(),
            Backend::Postgres(_) => panic!("SQLite step counting asked of a PostgreSQL store"),
        }
    }
}
