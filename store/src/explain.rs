//! Why a database could not be opened, in words a user can act on: the path
//! and the cause (a missing directory, a file that is not a database), not
//! SQLite's bare "unable to open database file".

use std::path::Path;

use super::{Location, StoreError};

/// `LOCATION: cause` for an error of [`super::Store::connect`] on `location`
/// (a PostgreSQL URL shown without its password).
pub fn connect_error(location: &Location, e: &StoreError) -> String {
    match (location, e) {
        (_, StoreError::Missing(_) | StoreError::Empty(_)) => format!("{location}: {e}"),
        // These name the URL themselves (password hidden): said once.
        (
            Location::Postgres(_),
            StoreError::Connect { .. }
            | StoreError::NoDatabase { .. }
            | StoreError::Tls { .. }
            | StoreError::BadUrl { .. },
        ) => e.to_string(),
        (Location::Sqlite(path), _) => open_error(path, e),
        (Location::Postgres(_), _) => format!("{location}: {e}"),
    }
}

/// `PATH: cause` for an error of [`super::Store::open`] on `path`.
pub fn open_error(path: &Path, e: &StoreError) -> String {
    let shown = path.display();
    if path.is_dir() {
        return format!("{shown} is a directory: give --db a file path, e.g. {shown}/run.db");
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            return format!(
                "{shown}: the directory {} does not exist (create it, or choose another path)",
                parent.display()
            );
        }
    }
    if let StoreError::Sql(sql) = e {
        match sql.sqlite_error_code() {
            Some(rusqlite::ErrorCode::NotADatabase) => {
                return format!(
                    "{shown} is not a database (SQLite says: file is not a database): choose another --db file; qflow creates it when missing"
                )
            }
            Some(rusqlite::ErrorCode::PermissionDenied | rusqlite::ErrorCode::ReadOnly) => {
                return format!("{shown}: permission denied ({sql})")
            }
            Some(rusqlite::ErrorCode::CannotOpen) => {
                return format!("{shown}: cannot open the file ({sql})")
            }
            _ => {}
        }
    }
    match e {
        // TooNew already names the path.
        StoreError::TooNew { .. } | StoreError::Foreign { .. } => e.to_string(),
        _ => format!("{shown}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    #[test]
    fn a_postgres_connection_error_names_its_url_once() {
        let url = "postgres://me:pw@db.example/q?sslmode=verify-full";
        let location = Location::parse(url).unwrap();
        let shown = location.to_string();
        assert!(!shown.contains("pw@"), "{shown}");
        let e = StoreError::Tls {
            url: shown.clone(),
            cause: "certificate verify failed".into(),
            fix: "give the CA as sslrootcert".into(),
        };
        let text = connect_error(&location, &e);
        assert_eq!(text.matches(&shown).count(), 1, "{text}");
        assert!(text.starts_with(&format!("cannot connect to {shown} over TLS")));
    }

    #[test]
    fn a_missing_directory_and_a_non_database_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope/run.db");
        let e = Store::open(&missing).err().expect("no directory");
        assert!(open_error(&missing, &e).ends_with(&format!(
            "the directory {} does not exist (create it, or choose another path)",
            dir.path().join("nope").display()
        )));
        let text = dir.path().join("notes.txt");
        std::fs::write(
            &text,
            "this is not a database, it is a long enough text file to have a header",
        )
        .unwrap();
        let e = Store::open(&text).err().expect("not a database");
        assert!(
            open_error(&text, &e).contains("is not a database"),
            "{}",
            open_error(&text, &e)
        );
    }

    #[test]
    fn another_programs_database_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("theirs.db");
        {
            let c = rusqlite::Connection::open(&theirs).unwrap();
            c.execute_batch("CREATE TABLE notes(a); CREATE TABLE tags(b);")
                .unwrap();
        }
        let e = Store::open(&theirs).err().expect("a foreign database");
        let shown = open_error(&theirs, &e);
        assert!(
            shown.contains("has the tables notes, tags, and no qflow schema"),
            "{shown}"
        );
        let c = rusqlite::Connection::open(&theirs).unwrap();
        let tables: Vec<String> = c
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(tables, ["notes", "tags"], "nothing was added");
        // An empty file made by `touch` is still a new database.
        let empty = dir.path().join("empty.db");
        std::fs::write(&empty, b"").unwrap();
        Store::open(&empty).expect("an empty file becomes a store");
    }

    #[test]
    fn a_damaged_database_says_how_to_salvage_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("run.db");
        {
            let c = rusqlite::Connection::open(&db).unwrap();
            c.execute_batch(
                "PRAGMA page_size=1024; CREATE TABLE t(a); \
                 INSERT INTO t SELECT zeroblob(900) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<20) SELECT i FROM n);",
            )
            .unwrap();
        }
        let mut bytes = std::fs::read(&db).unwrap();
        for b in &mut bytes[1024..4096] {
            *b = 0x5a;
        }
        std::fs::write(&db, bytes).unwrap();
        let c = rusqlite::Connection::open(&db).unwrap();
        let e: StoreError = c
            .query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))
            .unwrap_err()
            .into();
        let shown = e.to_string();
        assert!(shown.contains("the file is damaged"), "{shown}");
        assert!(shown.contains(".recover"), "{shown}");
    }

    #[test]
    fn a_database_another_program_holds_locked_says_who_to_look_for() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("run.db");
        let store = Store::open(&db).unwrap();
        // A `sqlite3` shell in the middle of a transaction.
        let shell = rusqlite::Connection::open(&db).unwrap();
        shell.execute_batch("BEGIN EXCLUSIVE").unwrap();
        // (qflow waits 10 s before it gives up; this test does not.)
        store
            .conn()
            .busy_timeout(std::time::Duration::ZERO)
            .unwrap();
        let e: StoreError = store
            .conn()
            .execute_batch("BEGIN IMMEDIATE")
            .unwrap_err()
            .into();
        let shown = e.to_string();
        assert!(shown.starts_with("database error: database is locked (another process held the database's write lock for 10 s"), "{shown}");
        assert!(shown.contains("`sqlite3` shell"), "{shown}");
    }

    #[test]
    fn a_store_missing_one_of_its_tables_is_called_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("run.db");
        let store = Store::open(&db).unwrap();
        store.conn().execute_batch("DROP TABLE timers").unwrap();
        let e = store.timers("x").unwrap_err();
        let shown = e.to_string();
        assert!(shown.contains("no such table: timers"), "{shown}");
        assert!(shown.contains("restore it from a backup"), "{shown}");
    }
}
