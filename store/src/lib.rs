//! The durable store: SQLite (bundled) through rusqlite, in WAL mode.
//!
//! Writes happen only in [`Store::create_instance`] and [`Store::apply`], each
//! one transaction; `apply` checks the instance claim and the snapshot version
//! the decision was computed from, so a transition decided on stale facts or by
//! a process that lost its claim is refused, never half-applied. Everything in
//! [`query`] is read-only and is what an inspector reads its views from.
//!
//! The store speaks the durable vocabulary of [`qflow_instance`] and nothing
//! above it: it applies transitions, it never decides one.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};
use sha2::{Digest, Sha256};

use qflow_instance::snapshot::Snapshot;
use qflow_instance::{Facts, IncidentKind, Purpose, Status, TimerRow, Transition};

pub mod batch;
mod boundary;
pub mod breaker;
pub mod contain;
pub mod explain;
pub mod fault;
#[cfg(any(test, feature = "testing"))]
pub mod fresh;
pub mod group;
pub mod inflight;
pub mod lifecycle;
pub mod location;
mod ops;
pub mod owner;
#[cfg(feature = "postgres")]
pub mod pg;
#[cfg(not(feature = "postgres"))]
#[path = "pg_absent.rs"]
pub mod pg;
#[cfg(any(test, feature = "testing"))]
pub mod plans;
pub mod query;
pub mod release;
pub mod schema;
mod sql;
pub mod start_keys;
pub mod stats;
mod write;

pub use lifecycle::{Deployed, DeploymentRow, Retirement, StatusCounts};
pub use location::Location;
pub use owner::{engine_owner, engine_owner_named, local_owner, owner_is_dead, OwnerRegistration};
pub use query::{
    CorrelationRow, HistoryRow, IncidentRow, InstanceRow, OutboxEntry, TimerInfo, TransitionRow,
};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}{hint}", hint = damage_hint(.0))]
    Sql(#[from] rusqlite::Error),
    #[error(
        "{path} is a SQLite database of something else (it has the tables {}, and no qflow schema): \
         qflow does not add its tables to another program's database; give --db a new file or a qflow store",
        .tables.join(", ")
    )]
    Foreign { path: String, tables: Vec<String> },
    #[error(
        "the database {path} has schema version {found}, newer than this qflow supports ({supported}): \
         open it with a newer qflow, or use another --db file"
    )]
    TooNew {
        path: String,
        found: u32,
        supported: u32,
    },
    #[error("instance {instance} is being decided by {owner} ({}): another qflow process holds it for a moment; run the command again", claim_left(*.until_ms))]
    Claimed {
        instance: String,
        owner: String,
        until_ms: i64,
    },
    #[error("instance {0} changed since the decision was taken (stale facts): decide again")]
    Conflict(String),
    #[error("instance {0} is quarantined: nothing runs it until `qflow release {0}`")]
    Quarantined(String),
    #[error("the retry of {node} in instance {instance} is held: its {kind} `{value}` is paused (`qflow unpause --{kind} {value}` lets it run)")]
    Paused {
        instance: String,
        node: String,
        kind: String,
        value: String,
    },
    #[error("no instance {0}")]
    NoInstance(String),
    /// A planned release refused (a ramp still releasing the same target,
    /// an unknown ramp): the text says why and what to do.
    #[error("{0}")]
    Release(String),
    /// Quarantine asked of a completed instance: nothing will ever run it,
    /// so a record of it being set aside would only mislead.
    #[error("instance {0} has completed: nothing will ever run it again, so there is nothing to quarantine")]
    Completed(String),
    #[error(
        "no deployed model calls a dependency `{name}`{}: {}; `--force` goes ahead all the same (a dependency about to be deployed)",
        .suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(),
        if .known.is_empty() { "the database knows no dependency yet (no deployed model has a q:task or q:channel)".to_string() } else { format!("the known dependencies are {}", .known.join(", ")) }
    )]
    UnknownDependency {
        name: String,
        /// Every dependency the database knows, sorted.
        known: Vec<String>,
        /// The closest known name, when it is close enough to be a typo.
        suggestion: Option<String>,
    },
    #[error("no deployment {0} (`qflow deployments --db DB` lists them)")]
    NoDeployment(i64),
    #[error("deployment {0} is retired: it starts no new instance and receives none (deploy a changed model, or choose an active deployment)")]
    Retired(i64),
    /// The SQLite file was deleted or replaced while this process had it
    /// open: nothing more is decided on the orphaned copy.
    #[error(
        "the database file {path} was {} while qflow had it open: whatever is decided now would vanish when this process exits, so it stops; restore the file (from a backup, or the copy you moved away) and start again",
        if *.replaced { "replaced by another file" } else { "deleted" }
    )]
    FileGone { path: String, replaced: bool },
    #[error("{path} is read-only and its write-ahead log ({path}-wal) holds changes that cannot be read without writing ({cause}): let the process writing it finish, or copy the database and its -wal file somewhere writable and read the copy")]
    ReadOnlyLog { path: String, cause: String },
    #[error("{path} is read-only and at schema version {found}: this qflow reads version {latest} and would have to upgrade it, which writes; copy it somewhere writable and read the copy (the copy is upgraded, the original stays as it is)")]
    ReadOnlyOld {
        path: String,
        found: u32,
        latest: u32,
    },
    #[error("no such database (a run or `qflow deploy MODEL --db {0}` creates it)")]
    Missing(String),
    /// A PostgreSQL database that exists but holds no qflow store yet
    /// (made by `createdb`, never run against): a reading command refuses
    /// it, as it refuses a missing SQLite file, but the database is there.
    #[error("the database holds no qflow tables yet (a run or `qflow deploy MODEL --db {0}` creates them)")]
    Empty(String),
    /// The PostgreSQL server has no database of the URL's name: qflow
    /// creates its tables, never the database itself.
    #[error("cannot connect to {url}: the server has no database {name} (create it: `createdb {name}`, or CREATE DATABASE {name}; the first run or `qflow deploy` creates qflow's tables in it)")]
    NoDatabase { url: String, name: String },
    /// (Shown with its causes: the library's own text for a lost
    /// connection is only "db error".)
    #[cfg(feature = "postgres")]
    #[error("database error: {}", pg::full_cause(.0))]
    Postgres(#[from] postgres::Error),
    /// A `postgres://` URL given to a qflow built without PostgreSQL.
    #[error("{0}: this qflow was built without PostgreSQL (the `postgres` feature of qflow-store): use a SQLite file for --db, or build qflow with its default features")]
    NoPostgres(String),
    /// A column that does not hold what the store wrote there (the
    /// database was changed by hand or by another program).
    #[error("database error: {0} (the database was changed by hand or by another program: restore it from a backup)")]
    Decode(String),
    #[error("{url}: {why}")]
    BadUrl { url: String, why: String },
    #[error("cannot connect to {url}: {cause} (is the server running, and the URL's host, port, user and database right?)")]
    Connect { url: String, cause: String },
    /// The server refused TLS, or its certificate did not verify: `fix`
    /// says what to change (the server's settings or the URL's).
    #[error("cannot connect to {url} over TLS: {cause}; {fix}")]
    Tls {
        url: String,
        cause: String,
        fix: String,
    },
}

/// What to do about a database SQLite finds damaged: the bare "database disk
/// image is malformed" says what happened but not what a user can do.
fn damage_hint(e: &rusqlite::Error) -> &'static str {
    match e.sqlite_error_code() {
        // The busy timeout (10 s) ran out: the bare "database is locked"
        // does not say that qflow waited, nor who is likely to hold it.
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            " (another process held the database's write lock for 10 s: qflow's own processes hold it for one decision at a time, so look for a `sqlite3` shell or another program with a transaction open on this file; nothing was changed, run again once it lets go)"
        }
        Some(rusqlite::ErrorCode::DiskFull) => {
            " (the disk holding the database is full: free space on it, SQLite needs room for its write-ahead log too, and run again; the transaction that hit it was rolled back, nothing half-written was kept)"
        }
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
            " (the file is damaged: restore it from a backup, or salvage what SQLite can still read with `sqlite3 DB .recover | sqlite3 recovered.db` and point --db at recovered.db)"
        }
        _ if e.to_string().starts_with("no such table")
            || e.to_string().starts_with("no such column") =>
        {
            " (the database's schema version promises what is missing here: it was changed by hand or by another program; restore it from a backup)"
        }
        _ => "",
    }
}

impl StoreError {
    /// Whether a statement found its row locked by another transaction
    /// and was told not to wait (PostgreSQL's `NOWAIT`).
    pub(crate) fn is_row_locked(&self) -> bool {
        #[cfg(feature = "postgres")]
        return matches!(self, StoreError::Postgres(e) if e.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE));
        #[cfg(not(feature = "postgres"))]
        false
    }

    /// Whether the database could not be reached — a lost connection (the
    /// server restarted or shut down, the backend was terminated, the
    /// network dropped), a server that refuses new sessions for now, a
    /// connection that could not be made again, or a SQLite file whose
    /// write lock another program held past the busy timeout: nothing was
    /// decided, and the same work done again later may well succeed. A
    /// serving loop waits and tries again; a one-shot command reports it.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Connect { .. } => true,
            StoreError::Sql(e) => matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ),
            #[cfg(feature = "postgres")]
            StoreError::Postgres(e) => pg_unavailable(e),
            _ => false,
        }
    }

    /// A refusal that means "someone or something else decides for this
    /// instance now" (another claim, stale facts, a quarantine, a pause):
    /// routine for a replica, which drops the decision and moves on.
    pub fn is_lost_race(&self) -> bool {
        matches!(
            self,
            StoreError::Conflict(_)
                | StoreError::Claimed { .. }
                | StoreError::Quarantined(_)
                | StoreError::Paused { .. }
        )
    }
}

/// Whether a PostgreSQL error means the server was out of reach rather than
/// that a statement was refused: the connection closed under it, a
/// connection exception (SQLSTATE class 08), or an operator intervention
/// (class 57: shutdown, crash shutdown, "cannot connect now" while the
/// server starts, a terminated backend).
#[cfg(feature = "postgres")]
fn pg_unavailable(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(code) => {
            let c = code.code();
            c.starts_with("08") || c.starts_with("57P")
        }
        // No SQLSTATE: an I/O error on the socket (reset, broken pipe).
        None => std::error::Error::source(e)
            .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some()),
    }
}

/// How long a claim lasts without renewal (wall clock).
pub const CLAIM_TTL_MS: i64 = 30_000;

/// The store every face and the runtime use: one public API, whichever
/// database is behind it (see `docs/store.md`, "Two stores, one boundary").
pub struct Store {
    backend: Database,
    /// A serving group's reads, kept for its read phase ([`group`]).
    group: group::GroupMemo,
}

/// The database behind a [`Store`]: a closed set, each a
/// [`boundary::Backend`] (see there for what a backend supplies).
enum Database {
    Sqlite(Sqlite),
    // Boxed: the client is much larger than a SQLite connection.
    Postgres(Box<pg::Postgres>),
}

/// The SQLite store: one connection to one database file.
pub(crate) struct Sqlite {
    conn: Connection,
    /// The file the connection opened, to notice it deleted or replaced
    /// under a running process (`None`: no file, or not a Unix system).
    file: Option<OpenedFile>,
}

/// A database file by its path and its identity (device and inode) when
/// it was opened.
struct OpenedFile {
    path: std::path::PathBuf,
    id: (u64, u64),
    /// When the path was last looked at: at most every [`FILE_CHECK_MS`].
    checked: std::cell::Cell<Option<std::time::Instant>>,
}

/// How often (at most) a store checks that its file is still there.
const FILE_CHECK_MS: u64 = 500;

fn file_id(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// A deployed model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployment {
    pub id: i64,
    pub process_id: String,
    pub hash: String,
}

/// The sha256 of a model's source, hex: what pins an instance to its deployment.
pub fn source_hash(source: &str) -> String {
    let d = Sha256::digest(source.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// How long a claim lasts still, in words: a claim's end is a wall-clock
/// instant in ms, which no reader should have to convert.
fn claim_left(until_ms: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    match until_ms - now {
        left if left <= 0 => "its claim has just lapsed".into(),
        left if left < 1_000 => format!("its claim lasts {left} ms more"),
        left => format!("its claim lasts {:.1} s more", left as f64 / 1000.0),
    }
}

impl Store {
    /// Open the store `--db` named, creating it (a SQLite file, or the
    /// schema in an empty PostgreSQL database) when missing, and bring its
    /// schema up to date.
    pub fn connect(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) => Store::open(path),
            Location::Postgres(url) => Ok(Store {
                backend: Database::Postgres(Box::new(pg::Postgres::connect(url, true)?)),
                group: Default::default(),
            }),
        }
    }

    /// Open a store that must exist already (what reading and operating
    /// commands do: they never create a database).
    pub fn connect_existing(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) if !path.exists() => {
                Err(StoreError::Missing(location.to_string()))
            }
            Location::Sqlite(_) => Store::connect(location),
            Location::Postgres(url) => Ok(Store {
                backend: Database::Postgres(Box::new(pg::Postgres::connect(url, false)?)),
                group: Default::default(),
            }),
        }
    }

    /// Open a store to read it only (`qflow instances`, `show`,
    /// `deployments`, `stats`, `render`): as [`Store::connect_existing`],
    /// except that a SQLite file qflow may not write (a read-only file or
    /// directory, a copy on a read-only mount) is read as it is through a
    /// read-only connection, and never changed.
    pub fn connect_for_reading(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) if path.exists() => match Store::connect(location) {
                Err(e) if is_read_only(&e) => Ok(Store {
                    backend: Database::Sqlite(Sqlite::open_read_only(path)?),
                    group: Default::default(),
                }),
                other => other,
            },
            _ => Store::connect_existing(location),
        }
    }

    /// Open an existing store so that nothing can be written through it:
    /// a SQLite file through a read-only connection (`mode=ro`: the file's
    /// bytes are left exactly as they are; a store of an older schema is
    /// refused rather than upgraded), a PostgreSQL database in a session
    /// whose transactions are all `READ ONLY`. What `qflow simulate
    /// --from` reads a live store with.
    pub fn open_read_only(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) if !path.exists() => {
                Err(StoreError::Missing(location.to_string()))
            }
            Location::Sqlite(path) => Ok(Store {
                backend: Database::Sqlite(Sqlite::open_read_only(path)?),
                group: Default::default(),
            }),
            Location::Postgres(url) => {
                let pg = pg::Postgres::connect(url, false)?;
                pg.set_read_only()?;
                Ok(Store {
                    backend: Database::Postgres(Box::new(pg)),
                    group: Default::default(),
                })
            }
        }
    }

    /// [`Store::connect`], migrating only up to `version`: tests build
    /// databases of an earlier schema on either store with it.
    pub fn connect_at(location: &Location, version: u32) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) => Store::open_at(path, version),
            Location::Postgres(url) => Ok(Store {
                backend: Database::Postgres(Box::new(pg::Postgres::connect_at(
                    url, true, version,
                )?)),
                group: Default::default(),
            }),
        }
    }

    /// Open (or create) a SQLite database file and bring its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Self::open_at(path, schema::LATEST)
    }

    /// Open and migrate only up to `version` (tests build old databases with it).
    pub fn open_at(path: &Path, version: u32) -> Result<Store, StoreError> {
        Ok(Store {
            backend: Database::Sqlite(Sqlite::open_at(path, version)?),
            group: Default::default(),
        })
    }
}

/// Whether opening failed because the file (or its directory) may not be
/// written.
fn is_read_only(e: &StoreError) -> bool {
    matches!(e, StoreError::Sql(sql) if matches!(
        sql.sqlite_error_code(),
        Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::PermissionDenied)
    ))
}

/// `path` as a SQLite `file:` URI (every byte but the unreserved ones
/// percent-encoded).
fn file_uri(path: &Path, query: &str) -> String {
    let mut uri = String::from("file:");
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(char::from(*b))
            }
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push('?');
    uri.push_str(query);
    uri
}

impl Sqlite {
    /// A database qflow may not write, opened read-only and left exactly
    /// as it is: no setting applied, no migration. A database in WAL mode
    /// needs its `-shm` file to be read; where that cannot be made (a
    /// read-only directory) and no `-wal` file holds changes, the file is
    /// read as immutable (nothing else writes it: it is read-only). A
    /// database whose log holds changes, or older than
    /// [`schema::READABLE_FROM`], is refused with what to do.
    fn open_read_only(path: &Path) -> Result<Sqlite, StoreError> {
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let version =
            |c: &Connection| c.query_row("PRAGMA user_version", [], |r| r.get::<_, u32>(0));
        let mut conn = Connection::open_with_flags(file_uri(path, "mode=ro"), flags)?;
        let found = match version(&conn) {
            Ok(v) => v,
            Err(e) => {
                let log = std::path::PathBuf::from(format!("{}-wal", path.display()));
                if std::fs::metadata(&log).is_ok_and(|m| m.len() > 0) {
                    return Err(StoreError::ReadOnlyLog {
                        path: path.display().to_string(),
                        cause: e.to_string(),
                    });
                }
                conn = Connection::open_with_flags(file_uri(path, "mode=ro&immutable=1"), flags)?;
                version(&conn)?
            }
        };
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.set_prepared_statement_cache_capacity(64);
        let store = Sqlite { conn, file: None };
        let shown = path.display().to_string();
        if found == 0 {
            store.refuse_foreign(&shown)?;
            return Err(StoreError::Missing(shown));
        }
        if found > schema::LATEST {
            return Err(StoreError::TooNew {
                path: shown,
                found,
                supported: schema::LATEST,
            });
        }
        if found < schema::READABLE_FROM {
            return Err(StoreError::ReadOnlyOld {
                path: shown,
                found,
                latest: schema::LATEST,
            });
        }
        Ok(store)
    }

    fn over(conn: Connection, path: &Path) -> Sqlite {
        let file = file_id(path).map(|id| OpenedFile {
            path: path.to_path_buf(),
            id,
            checked: std::cell::Cell::new(Some(std::time::Instant::now())),
        });
        Sqlite { conn, file }
    }

    /// Whether the database file is still the one opened. A file deleted
    /// (or replaced) under a running process keeps working through the open
    /// connection, but everything written from then on vanishes when the
    /// process exits: claims and picks of work refuse to go on instead
    /// (checked at most every 500 ms).
    pub(crate) fn still_there(&self) -> Result<(), StoreError> {
        let Some(f) = &self.file else {
            return Ok(());
        };
        let now = std::time::Instant::now();
        if f.checked
            .get()
            .is_some_and(|t| now.duration_since(t).as_millis() < u128::from(FILE_CHECK_MS))
        {
            return Ok(());
        }
        f.checked.set(Some(now));
        match file_id(&f.path) {
            Some(id) if id == f.id => Ok(()),
            found => Err(StoreError::FileGone {
                path: f.path.display().to_string(),
                replaced: found.is_some(),
            }),
        }
    }

    fn open_at(path: &Path, version: u32) -> Result<Sqlite, StoreError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // Room for every statement of the decision loop (reads and writes).
        conn.set_prepared_statement_cache_capacity(64);
        // Another program's database is refused before any setting is
        // changed: switching it to WAL would already rewrite its header.
        let found: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let store = Sqlite::over(conn, path);
        if found == 0 {
            store.refuse_foreign(&path.display().to_string())?;
        }
        let conn = &store.conn;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Statement journals in memory: group commit gives each instance of
        // a batch its own savepoint, and on a file the savepoint journal is
        // only emptied at the commit, so every page a transition touched was
        // first copied to a temporary file (60 KiB written per decision,
        // against 4 KiB to the log). In memory it is emptied at each
        // savepoint's release. Durability is the log's, not this journal's.
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        let mut store = store;
        store.migrate(&path.display().to_string(), version)?;
        Ok(store)
    }

    pub(crate) fn schema_version(&self) -> Result<u32, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    fn migrate(&mut self, path: &str, target: u32) -> Result<(), StoreError> {
        let found = self.schema_version()?;
        if found == 0 {
            self.refuse_foreign(path)?;
        }
        if found > schema::LATEST {
            return Err(StoreError::TooNew {
                path: path.to_string(),
                found,
                supported: schema::LATEST,
            });
        }
        for v in found..target.min(schema::LATEST) {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            // Re-check inside the write lock: another process may have migrated.
            let now: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if now > v {
                continue;
            }
            tx.execute_batch(schema::MIGRATIONS[v as usize])?;
            tx.pragma_update(None, "user_version", v + 1)?;
            tx.commit()?;
        }
        Ok(())
    }

    /// A database at schema 0 is new only if it holds no table: a file
    /// another program made is refused rather than given qflow's tables.
    fn refuse_foreign(&self, path: &str) -> Result<(), StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )?;
        let tables = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        if tables.is_empty() {
            return Ok(());
        }
        Err(StoreError::Foreign {
            path: path.to_string(),
            tables,
        })
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

impl Sqlite {}

impl Sqlite {}

/// Where a migration moves an instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A deployment that exists.
    Deployed(i64),
    /// A model, deployed in the migration's own transaction (or the
    /// existing deployment of the same source), so a refused or interrupted
    /// migration leaves no deployment behind.
    New {
        process_id: String,
        source: String,
        origin: Option<String>,
    },
}

/// What [`Store::facts`] reads.
#[derive(Debug, Clone)]
pub struct InstanceFacts {
    /// The deployment the instance runs on (a migration moves it).
    pub deployment_id: i64,
    pub status: Status,
    pub version: i64,
    pub started_ms: i64,
    /// The snapshot as decoded; empty when the stored bytes are not a
    /// snapshot at all (then `damage` says why).
    pub snapshot: Snapshot,
    /// Why the stored snapshot bytes could not be decoded, if they could not.
    pub damage: Option<String>,
    pub timers: Vec<TimerRow>,
    /// Armed retry timers whose re-drive is paused (their class or
    /// dependency): kept, due time and all, but not to be re-driven.
    pub held: std::collections::BTreeSet<i64>,
    /// Armed retry timers a half-open breaker chose as canaries: let
    /// through their dependency's pause on their own schedule
    /// ([`breaker`]); a chooser does not hold them for it.
    pub canaries: std::collections::BTreeSet<i64>,
    /// The idempotency-key ledger: the highest key number each call node
    /// has sent.
    pub keys_sent: std::collections::BTreeMap<String, u32>,
}

impl InstanceFacts {
    /// The facts from an instance's row and its other tables' reads: one
    /// assembly for every store. Bytes that are not a snapshot at all are a
    /// fact too: the decision fails the instance on them (never this read),
    /// and the bytes stay.
    pub(crate) fn of_row(
        row: &InstanceRow,
        timers: Vec<TimerRow>,
        held: std::collections::BTreeSet<i64>,
        canaries: std::collections::BTreeSet<i64>,
        keys_sent: std::collections::BTreeMap<String, u32>,
    ) -> InstanceFacts {
        let (snapshot, damage) = match Snapshot::decode(&row.snapshot) {
            Ok(s) => (s, None),
            Err(e) => (Snapshot::new(), Some(e.to_string())),
        };
        InstanceFacts {
            deployment_id: row.deployment_id,
            status: row.status,
            version: row.version,
            started_ms: row.started_ms,
            snapshot,
            damage,
            timers,
            held,
            canaries,
            keys_sent,
        }
    }

    /// The durable facts a decision is a pure function of, borrowed from what
    /// the store read (every caller of `decide` and `migrate` starts here).
    pub fn as_facts<'a>(&'a self, instance_id: &'a str) -> Facts<'a> {
        Facts {
            instance_id,
            status: self.status,
            started_ms: self.started_ms,
            snapshot: &self.snapshot,
            damage: self.damage.as_deref(),
            timers: &self.timers,
            keys_sent: &self.keys_sent,
        }
    }
}

/// Why a transition's poisoned request was refused, when the counterpart
/// refused it (its status and body summary, from the incident the
/// transition opens): kept on the outbox row. A request poisoned by its
/// spent deliveries keeps no reason there (its incident and history say it).
pub(crate) fn poison_reason(t: &Transition) -> Option<&str> {
    t.open_incidents
        .iter()
        .find(|i| {
            i.kind == IncidentKind::Poisoned && i.message.contains(" rejected by the counterpart ")
        })
        .map(|i| i.message.as_str())
}

impl Sqlite {}

impl Sqlite {}

/// A timer row's purpose as stored (an unknown word reads as a plain timer,
/// as the rest of the decode path is lenient).
pub(crate) fn purpose_from_sql(s: &str) -> Purpose {
    Purpose::parse(s).unwrap_or(Purpose::Timer)
}

#[cfg(test)]
mod tests;
