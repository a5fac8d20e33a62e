//! Why a database could not be opened, in words a user can act on: the path
//! and the cause (a missing directory, a file that is not a database), not
//! SQLite's bare "unable to open database file".

use std::path::Path;

use super::{Location, StoreError};

/// `LOCATION: cause` for an error of [`super::Store::connect`] on `location`
/// (a PostgreSQL URL shown without its password).
pub fn connect_error(location: &Location, e: &StoreError) -> String {
    match (location, e) {
        (_, StoreError::Missing(_)) => format!("{location}: {e}"),
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
        StoreError::TooNew { .. } => e.to_string(),
        _ => format!("{shown}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

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
}
