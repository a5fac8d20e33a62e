//! For qflow's own tests (the `testing` feature): fresh databases on both stores, so one list
//! of cases runs on a SQLite file and, when `QFLOW_TEST_POSTGRES_URL` names
//! a server, on a PostgreSQL database of its own (the PostgreSQL case says
//! it skips without a server, and fails instead under
//! `QFLOW_REQUIRE_POSTGRES`). The one harness for every crate: the
//! binary's tests (`tests/support/stores.rs`) take their databases from it
//! as the text `--db` takes ([`Fresh::db_text`]).

use std::sync::atomic::{AtomicU32, Ordering};

use super::{Location, Store};

/// Fresh databases for one test: SQLite files in a temporary directory, or
/// new databases on the server of `QFLOW_TEST_POSTGRES_URL`.
pub struct Fresh {
    dir: tempfile::TempDir,
    server: Option<String>,
    test: &'static str,
}

/// Numbers every database this test process makes, so no two tests (nor
/// two databases of one test) share one.
static MADE: AtomicU32 = AtomicU32::new(0);

impl Fresh {
    pub fn sqlite(test: &'static str) -> Fresh {
        Fresh {
            dir: tempfile::tempdir().unwrap(),
            server: None,
            test,
        }
    }

    /// `None` (the test says it skips) without a server.
    pub fn postgres(test: &'static str) -> Option<Fresh> {
        let server = super::pg::test_server(test)?;
        Some(Fresh {
            server: Some(server),
            ..Fresh::sqlite(test)
        })
    }

    /// Whether this case runs on PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        self.server.is_some()
    }

    /// A scratch directory for the test's other files (models, logs).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// A new, empty database, as the text `--db` takes (a file path or a
    /// URL, unredacted).
    pub fn db_text(&self) -> String {
        match self.db() {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => url,
        }
    }

    /// A new, empty database.
    pub fn db(&self) -> Location {
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        match &self.server {
            None => Location::Sqlite(self.dir.path().join(format!("q{n}.db"))),
            Some(server) => {
                // The unique part first: PostgreSQL names are cut at 60.
                let name = format!("qflow_unit_{}_{n}_{}", std::process::id(), self.test);
                Location::Postgres(
                    super::pg::scratch_database(server, &name)
                        .unwrap_or_else(|e| panic!("{}: {e}", self.test)),
                )
            }
        }
    }
}

/// The store at `at` (created and migrated when new).
pub fn open(at: &Location) -> Store {
    Store::connect(at).unwrap_or_else(|e| panic!("{at}: {e}"))
}

/// Each named test function (`fn(&Fresh)`) runs as `NAME::sqlite` and
/// `NAME::postgres`.
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn sqlite() {
                    super::$name(&$crate::fresh::Fresh::sqlite(stringify!($name)));
                }

                #[test]
                fn postgres() {
                    if let Some(f) = $crate::fresh::Fresh::postgres(stringify!($name)) {
                        super::$name(&f);
                    }
                }
            }
        )*
    };
}
pub use crate::on_both_stores;
