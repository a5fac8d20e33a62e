//! The PostgreSQL store, through the synchronous `postgres` crate.
//!
//! The same schema (as PostgreSQL types), the same forward migrations and
//! the same contract as the SQLite store: one transaction per transition,
//! checked against the claim and the snapshot version it was decided from.
//! What SQLite gets from its one writer at a time, this store gets from row
//! locks, at PostgreSQL's default isolation (read committed):
//!
//! - every write about an instance first locks its row (`FOR UPDATE`), so
//!   the claim and version it checks cannot change before it commits;
//! - a claim that finds the row locked by another transaction gives up at
//!   once (`NOWAIT`): a replica racing for a hot instance moves on instead
//!   of queueing behind the holder's transition;
//! - work is picked with `FOR UPDATE SKIP LOCKED`, so a replica never picks
//!   a timer or instance another replica is writing at that moment;
//! - starting an instance, moving one onto a deployment and retiring it
//!   lock the deployment's row, so a retirement never races a start.
//!
//! The poison wake crosses hosts: a transition that poisons a request
//! sends `NOTIFY qflow_poison_wake` in its own transaction (delivered only
//! if it commits); replicas `LISTEN` and treat it as a prompt. It is best
//! effort — a notification is lost with a dropped connection — and the
//! call's timeout recovers the same condition.
//!
//! A lost connection (the server restarted, the backend was terminated, the
//! network dropped) is not the end of the store: the statement that met it
//! fails with an error [`StoreError::is_unavailable`] recognises, and the
//! next use of the store connects again (statements are prepared afresh,
//! `LISTEN` is sent again). Whoever drives the store decides how long to
//! wait between tries (`qflow serve`: a capped, jittered backoff). A commit
//! whose answer was lost may or may not have been applied: nothing is
//! assumed, the next decision reads the instance again under its claim and
//! version, so nothing is decided twice.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, GenericClient, Row, Statement};

use super::StoreError;

mod contain;
pub mod schema;
mod tls;
pub(crate) use tls::full_cause;

use crate::write::{WAKE_CHANNEL, WORK_CHANNEL};

/// The PostgreSQL store: one connection, and the statements it prepared.
pub(crate) struct Postgres {
    client: RefCell<Client>,
    stmts: RefCell<HashMap<&'static str, Statement>>,
    /// The URL it was opened with (never shown: messages use the redacted
    /// one); connecting again after a lost connection uses it.
    pub(crate) url: String,
    /// Whether this session listens for wakes (sent again on a new
    /// connection).
    listening: Cell<bool>,
    /// Whether this session listens for new work (sent again on a new
    /// connection).
    listening_work: Cell<bool>,
    /// When the connection last answered: one idle longer than
    /// [`IDLE_CHECK`] is checked before it is used (see `reconnect_if_lost`).
    used: Cell<std::time::Instant>,
}

/// How long the check before use may take (a server that does not answer
/// an empty query in this is treated as lost, and connected again).
const CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// A connection idle for longer is checked (an empty query) before use.
/// The client library notices a connection the server closed only when it
/// next talks on it; a check before the statement makes that a reconnect,
/// where the statement itself would have failed with it — an endpoint's
/// request would have got a 503 for a database that is up. A busy
/// connection is never idle this long, so the check costs nothing under
/// load (a quiet serving loop pays one round trip per safety poll). A
/// connection cut between the check and the statement still fails that
/// statement: the caller is told the database is unavailable, and the
/// next use connects again.
const IDLE_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// A connection or transaction with the statement cache: every statement
/// of a decision is prepared once per connection, then only executed.
pub(crate) struct Db<'c, C> {
    pub(crate) c: &'c mut C,
    pub(crate) stmts: &'c mut HashMap<&'static str, Statement>,
}

impl<C: GenericClient> Db<'_, C> {
    pub(crate) fn st(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = self.c.prepare(sql)?;
        self.stmts.insert(sql, s.clone());
        Ok(s)
    }

    pub(crate) fn exec(
        &mut self,
        sql: &'static str,
        p: Params<'_>,
    ) -> Result<u64, postgres::Error> {
        let s = self.st(sql)?;
        self.c.execute(&s, p)
    }

    pub(crate) fn rows(
        &mut self,
        sql: &'static str,
        p: Params<'_>,
    ) -> Result<Vec<Row>, postgres::Error> {
        let s = self.st(sql)?;
        self.c.query(&s, p)
    }

    pub(crate) fn one(&mut self, sql: &'static str, p: Params<'_>) -> Result<Row, postgres::Error> {
        let s = self.st(sql)?;
        self.c.query_one(&s, p)
    }
}

/// A counter stored as BIGINT, as the u32 the vocabulary uses.
fn u32_of(v: i64) -> u32 {
    v.clamp(0, i64::from(u32::MAX)) as u32
}

impl Postgres {
    /// Connect to `url` and bring the schema up to date; with `create`
    /// false, refuse a database that holds no qflow store yet.
    pub(crate) fn connect(url: &str, create: bool) -> Result<Postgres, StoreError> {
        Self::connect_at(url, create, super::schema::LATEST)
    }

    /// [`Postgres::connect`], migrating only up to `version` (tests build
    /// databases of an earlier schema with it, as on SQLite).
    pub(crate) fn connect_at(
        url: &str,
        create: bool,
        version: u32,
    ) -> Result<Postgres, StoreError> {
        let shown = super::location::redact(url);
        let (config, tls) = tls::config(url).map_err(|why| StoreError::BadUrl {
            url: shown.clone(),
            why,
        })?;
        let mut client = session(url, &shown, config, tls)?;
        if !create {
            let found: Option<String> = client
                .query_one("SELECT to_regclass('qflow_schema')::text", &[])?
                .get(0);
            if found.is_none() {
                return Err(StoreError::Empty(shown));
            }
        }
        let pg = Postgres {
            client: RefCell::new(client),
            stmts: RefCell::new(HashMap::new()),
            url: url.to_string(),
            listening: Cell::new(false),
            listening_work: Cell::new(false),
            used: Cell::new(std::time::Instant::now()),
        };
        pg.migrate(&shown, version)?;
        Ok(pg)
    }

    /// Make this session read-only: every later transaction is `READ
    /// ONLY`, so PostgreSQL itself refuses a write (what a what-if opens).
    pub(crate) fn set_read_only(&self) -> Result<(), StoreError> {
        self.client
            .borrow_mut()
            .batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")?;
        Ok(())
    }

    /// Connect again if the connection was lost (see the module's note):
    /// a new session, with the statement cache emptied (statements are
    /// per connection) and `LISTEN` sent again when this session listened.
    /// A failure is a [`StoreError::Connect`] naming the database.
    fn reconnect_if_lost(&self) -> Result<(), StoreError> {
        let idle = self.used.get().elapsed() > IDLE_CHECK;
        self.used.set(std::time::Instant::now());
        let lost = {
            let mut client = self.client.borrow_mut();
            client.is_closed() || (idle && client.is_valid(CHECK_TIMEOUT).is_err())
        };
        if !lost {
            return Ok(());
        }
        let shown = super::location::redact(&self.url);
        let (config, tls) = tls::config(&self.url).map_err(|why| StoreError::BadUrl {
            url: shown.clone(),
            why,
        })?;
        let mut client = session(&self.url, &shown, config, tls)?;
        if self.listening.get() {
            client.batch_execute(&format!("LISTEN {WAKE_CHANNEL}"))?;
        }
        if self.listening_work.get() {
            client.batch_execute(&format!("LISTEN {WORK_CHANNEL}"))?;
        }
        *self.client.borrow_mut() = client;
        self.stmts.borrow_mut().clear();
        Ok(())
    }

    /// Apply the missing migrations, one transaction each, under an
    /// advisory lock (two processes opening a fresh database never both
    /// migrate it); a newer schema is refused.
    fn migrate(&self, shown: &str, version: u32) -> Result<(), StoreError> {
        let mut client = self.client.borrow_mut();
        loop {
            let mut tx = client.transaction()?;
            tx.execute(
                "SELECT pg_advisory_xact_lock($1)",
                &[&schema::MIGRATION_LOCK],
            )?;
            tx.batch_execute(schema::VERSION_TABLE)?;
            let found: i64 = tx
                .query_one("SELECT version FROM qflow_schema", &[])?
                .get(0);
            let latest = i64::from(super::schema::LATEST);
            if found > latest {
                return Err(StoreError::TooNew {
                    path: shown.to_string(),
                    found: u32_of(found),
                    supported: super::schema::LATEST,
                });
            }
            if found >= i64::from(version) {
                tx.commit()?;
                return Ok(());
            }
            tx.batch_execute(schema::MIGRATIONS[found as usize])?;
            tx.execute("UPDATE qflow_schema SET version = $1", &[&(found + 1)])?;
            tx.commit()?;
        }
    }

    /// Run `f` with a statement-caching handle on the connection (outside
    /// any transaction: each statement commits on its own).
    pub(crate) fn read<T>(
        &self,
        f: impl FnOnce(&mut Db<'_, Client>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.reconnect_if_lost()?;
        let mut client = self.client.borrow_mut();
        let mut stmts = self.stmts.borrow_mut();
        f(&mut Db {
            c: &mut *client,
            stmts: &mut stmts,
        })
    }

    /// Run `f` in one transaction, committed when it returns `Ok`.
    pub(crate) fn write<T>(
        &mut self,
        f: impl FnOnce(&mut Db<'_, postgres::Transaction<'_>>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.reconnect_if_lost()?;
        let client = self.client.get_mut();
        let stmts = self.stmts.get_mut();
        let mut tx = client.transaction()?;
        let out = f(&mut Db { c: &mut tx, stmts })?;
        tx.commit()?;
        Ok(out)
    }

    pub(crate) fn schema_version(&self) -> Result<u32, StoreError> {
        self.read(|db| {
            let v: i64 = db.one("SELECT version FROM qflow_schema", &[])?.get(0);
            Ok(u32_of(v))
        })
    }

    /// The URL it was opened with.
    #[cfg(test)]
    pub(crate) fn url(&self) -> String {
        self.url.clone()
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn batch(&mut self, sql: &str) {
        self.client.get_mut().batch_execute(sql).unwrap();
    }

    /// Whether this connection is encrypted, as the server sees it.
    #[cfg(test)]
    pub(crate) fn encrypted(&mut self) -> bool {
        self.client
            .get_mut()
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0)
    }

    /// Start receiving poison wakes from every process on this database.
    pub(crate) fn listen_for_wakes(&mut self) -> Result<(), StoreError> {
        self.listening.set(true);
        self.reconnect_if_lost()?;
        self.client
            .get_mut()
            .batch_execute(&format!("LISTEN {WAKE_CHANNEL}"))?;
        Ok(())
    }

    /// The URL this store connects with (a second connection's).
    pub(crate) fn connection_url(&self) -> String {
        self.url.clone()
    }

    /// Start receiving notifications of new work (`WORK_CHANNEL`).
    pub(crate) fn listen_for_work(&mut self) -> Result<(), StoreError> {
        self.listening_work.set(true);
        self.reconnect_if_lost()?;
        self.client
            .get_mut()
            .batch_execute(&format!("LISTEN {WORK_CHANNEL}"))?;
        Ok(())
    }

    /// Wait at most `timeout` for a notification of new work; true when
    /// one (or more: all that arrived are read) came from someone other
    /// than `owner`.
    pub(crate) fn wait_for_work(
        &self,
        owner: &str,
        timeout: std::time::Duration,
    ) -> Result<bool, StoreError> {
        self.reconnect_if_lost()?;
        let mut client = self.client.borrow_mut();
        let mut notifications = client.notifications();
        let mut woken = false;
        let first = notifications.timeout_iter(timeout).next()?;
        if let Some(n) = first {
            woken |= n.channel() == WORK_CHANNEL && n.payload() != owner;
            let mut rest = notifications.iter();
            while let Some(n) = rest.next()? {
                woken |= n.channel() == WORK_CHANNEL && n.payload() != owner;
            }
        }
        drop(notifications);
        drop(client);
        // Waiting is use: the idle check before the next wait is not owed.
        self.used.set(std::time::Instant::now());
        Ok(woken)
    }

    /// The poison wakes other processes sent since the last call (instance,
    /// node), without waiting; this process's own are left out (it keeps
    /// them in memory already).
    pub(crate) fn wakes(&self, owner: &str) -> Result<Vec<(String, String)>, StoreError> {
        self.reconnect_if_lost()?;
        let mut client = self.client.borrow_mut();
        // One round trip reads what the server sent: a notification
        // arrives between commands, and the non-blocking iterator alone
        // sees only what an earlier command already read off the socket.
        client.batch_execute("SELECT 1")?;
        let mut out = Vec::new();
        let mut notifications = client.notifications();
        let mut it = notifications.iter();
        while let Some(n) = it.next()? {
            let mut parts = n.payload().splitn(3, '\n');
            if let (Some(from), Some(instance), Some(node)) =
                (parts.next(), parts.next(), parts.next())
            {
                if from != owner {
                    out.push((instance.to_string(), node.to_string()));
                }
            }
        }
        Ok(out)
    }
}

/// A new session on the server: connected within [`CONNECT_TIMEOUT`]
/// unless the URL says otherwise (an unreachable host fails in seconds, not
/// at the system's TCP timeout of minutes), with TCP keepalives so a
/// silently dropped network is noticed, and commits durable.
fn session(
    url: &str,
    shown: &str,
    mut config: postgres::Config,
    tls: postgres_native_tls::MakeTlsConnector,
) -> Result<Client, StoreError> {
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    // (2 h is the library's default: a URL that names keepalives_idle
    // keeps its own.)
    if config.get_keepalives_idle() == std::time::Duration::from_secs(2 * 60 * 60) {
        config.keepalives_idle(std::time::Duration::from_secs(10));
    }
    let mut client = config
        .connect(tls)
        .map_err(|e| tls::connect_error(url, shown, &e))?;
    // A committed decision is on the server's disk before the commit
    // returns, whatever the server's default for sessions.
    client.batch_execute("SET synchronous_commit TO on")?;
    Ok(client)
}

/// How long connecting may take when the URL sets no `connect_timeout`.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The read-only queries, as on SQLite (see `query.rs` for what each is for).
impl Postgres {}

/// For tests and benchmarks: a fresh, empty database on the server of
/// `url` (created through the server's `postgres` database), and its URL.
/// Each test gets its own, so tests run in parallel without sharing rows.
pub fn scratch_database(url: &str, name: &str) -> Result<String, StoreError> {
    create_database(url, name, false)
}

/// For tests: a new database `name` holding a copy of `url`'s database
/// (`CREATE DATABASE … TEMPLATE`, so nothing may be connected to `url`'s
/// database meanwhile), and its URL: what copying a SQLite file is to the
/// crash tests, which start each run from the same state.
pub fn copy_database(url: &str, name: &str) -> Result<String, StoreError> {
    create_database(url, name, true)
}

fn create_database(url: &str, name: &str, copy: bool) -> Result<String, StoreError> {
    let shown = super::location::redact(url);
    let (config, tls) = tls::config(url).map_err(|why| StoreError::BadUrl {
        url: shown.clone(),
        why,
    })?;
    let mut admin = config.clone();
    admin.dbname("postgres");
    let mut client = admin
        .connect(tls)
        .map_err(|e| tls::connect_error(url, &shown, &e))?;
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))?;
    let template = match (copy, config.get_dbname()) {
        (false, _) => String::new(),
        (true, Some(from)) => format!(" TEMPLATE \"{}\"", from.replace('"', "\"\"")),
        (true, None) => {
            return Err(StoreError::BadUrl {
                url: shown,
                why: "names no database to copy".into(),
            })
        }
    };
    client.batch_execute(&format!("CREATE DATABASE {name}{template}"))?;
    Ok(with_dbname(url, &name))
}

/// `url` with its database name replaced by `name`.
fn with_dbname(url: &str, name: &str) -> String {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let (head, query) = match url.find('?') {
        Some(q) => (&url[..q], &url[q..]),
        None => (url, ""),
    };
    let path_start = head[scheme_end..]
        .find('/')
        .map_or(head.len(), |i| scheme_end + i);
    format!("{}/{name}{query}", &head[..path_start])
}

/// For the engine's own tests: a store on a fresh database of the server
/// `QFLOW_TEST_POSTGRES_URL` names; `None`, with a line saying the test
/// skips, when it is unset — and a failure instead when
/// `QFLOW_REQUIRE_POSTGRES` is set (CI), so CI never skips.
#[cfg(test)]
pub(crate) fn test_store(test: &str) -> Option<super::Store> {
    let url = test_server(test)?;
    let name = format!("qflow_unit_{test}_{}", std::process::id());
    let db = scratch_database(&url, &name).unwrap_or_else(|e| panic!("{test}: {e}"));
    Some(
        super::Store::connect(&super::Location::Postgres(db))
            .unwrap_or_else(|e| panic!("{test}: {e}")),
    )
}

/// The server's URL from `QFLOW_TEST_POSTGRES_URL`, or `None` (printing
/// that `test` skips); with `QFLOW_REQUIRE_POSTGRES` set, a missing URL is
/// a failure.
pub fn test_server(test: &str) -> Option<String> {
    match std::env::var("QFLOW_TEST_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            let required =
                std::env::var("QFLOW_REQUIRE_POSTGRES").is_ok_and(|v| !v.is_empty() && v != "0");
            assert!(
                !required,
                "{test}: QFLOW_REQUIRE_POSTGRES is set but QFLOW_TEST_POSTGRES_URL is not: \
                 run the tests under scripts/pg-throwaway.sh run …"
            );
            eprintln!(
                "{test}: skipped on PostgreSQL (QFLOW_TEST_POSTGRES_URL is not set; \
                 `scripts/pg-throwaway.sh run cargo test` provides a throwaway server)"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_dbname;

    #[test]
    fn a_scratch_url_keeps_everything_but_the_name() {
        assert_eq!(
            with_dbname("postgres://u:p@h:5/old?sslmode=require", "new"),
            "postgres://u:p@h:5/new?sslmode=require"
        );
        assert_eq!(with_dbname("postgres://h:5", "new"), "postgres://h:5/new");
        assert_eq!(
            with_dbname("postgresql://h?host=/tmp", "n"),
            "postgresql://h/n?host=/tmp"
        );
    }
}
