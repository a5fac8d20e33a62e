//! Runtime tests on both stores: one list of cases, each run on a SQLite
//! file and, when `QFLOW_TEST_POSTGRES_URL` names a server, on a fresh
//! PostgreSQL database of its own (without a server the PostgreSQL case
//! prints that it skips; under `QFLOW_REQUIRE_POSTGRES` it fails instead).
//!
//! ```ignore
//! crate::on_both_stores!(a_case, another_case);
//! fn a_case(fresh: &Fresh) {
//!     let db = fresh.db(); // what `--db` takes
//!     let store = open(&db);
//! }
//! ```

use std::path::Path;

use qflow_engine::store::{Location, Store};

/// Fresh databases for one test: the store crate's harness
/// (`qflow_store::fresh`, one for every crate), giving each database as the
/// text `--db` takes.
pub(crate) struct Fresh(qflow_engine::store::fresh::Fresh);

impl Fresh {
    pub(crate) fn sqlite(test: &'static str) -> Fresh {
        Fresh(qflow_engine::store::fresh::Fresh::sqlite(test))
    }

    /// `None` (the test says it skips) without a server.
    pub(crate) fn postgres(test: &'static str) -> Option<Fresh> {
        qflow_engine::store::fresh::Fresh::postgres(test).map(Fresh)
    }

    /// Whether this case runs on PostgreSQL.
    pub(crate) fn is_postgres(&self) -> bool {
        self.0.is_postgres()
    }

    /// A scratch directory for the test's other files (models, logs).
    pub(crate) fn dir(&self) -> &Path {
        self.0.dir()
    }

    /// A new, empty database: what `--db` takes (a file path or a URL).
    pub(crate) fn db(&self) -> String {
        self.0.db_text()
    }
}

/// The throwaway server's TLS directory (`scripts/pg-throwaway.sh`: ca.crt
/// signed the server's certificate, other-ca.crt did not), beside the
/// server of a `Fresh` on PostgreSQL; `None`, saying the test skips,
/// without it — a failure under `QFLOW_REQUIRE_POSTGRES`.
pub(crate) fn tls_dir(test: &str) -> Option<std::path::PathBuf> {
    match std::env::var("QFLOW_TEST_POSTGRES_TLS_DIR") {
        Ok(dir) if !dir.trim().is_empty() => Some(dir.into()),
        _ => {
            let required =
                std::env::var("QFLOW_REQUIRE_POSTGRES").is_ok_and(|v| !v.is_empty() && v != "0");
            assert!(
                !required,
                "{test}: QFLOW_REQUIRE_POSTGRES is set but QFLOW_TEST_POSTGRES_TLS_DIR is not: \
                 run the tests under scripts/pg-throwaway.sh run …"
            );
            eprintln!(
                "{test}: skipped (QFLOW_TEST_POSTGRES_TLS_DIR is not set: \
                 `scripts/pg-throwaway.sh run cargo test` provides a server with TLS)"
            );
            None
        }
    }
}

/// `url` by the name the throwaway server's certificate gives
/// (`localhost`) instead of the address its URL has (`127.0.0.1`, which the
/// certificate does not name): what `sslmode=verify-full` passes with.
pub(crate) fn by_name(url: &str) -> String {
    assert!(
        url.contains("@127.0.0.1:"),
        "{url}: the TLS tests expect the server of scripts/pg-throwaway.sh (127.0.0.1)"
    );
    url.replacen("@127.0.0.1:", "@localhost:", 1)
}

/// The store `db` names (a SQLite file or a PostgreSQL URL), as `--db`
/// reads it.
pub(crate) fn open(db: &str) -> Store {
    Store::connect(&Location::parse(db).unwrap()).unwrap_or_else(|e| panic!("{db}: {e}"))
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
                    super::$name(&$crate::support::stores::Fresh::sqlite(stringify!($name)));
                }

                #[test]
                fn postgres() {
                    if let Some(f) = $crate::support::stores::Fresh::postgres(stringify!($name)) {
                        super::$name(&f);
                    }
                }
            }
        )*
    };
}
