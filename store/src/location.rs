//! What `--db` names: a SQLite file, or a PostgreSQL database by URL.
//!
//! Every command that takes `--db` parses it here ([`Location::parse`]), so
//! the same text means the same store everywhere: `postgres://…` or
//! `postgresql://…` is a PostgreSQL connection URL, anything else is a path
//! to a SQLite file (created when missing, where the command creates one).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Where a store lives.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite database file.
    Sqlite(PathBuf),
    /// A PostgreSQL database, by its connection URL (`postgres://user:pass@host:port/db?sslmode=require`).
    Postgres(String),
}

/// The URL schemes that name a PostgreSQL database.
const POSTGRES_SCHEMES: &[&str] = &["postgres://", "postgresql://"];

impl Location {
    /// Parse what a user gave `--db`: a PostgreSQL URL or a SQLite path.
    /// Refuses an empty value and a URL of another scheme (`mysql://…`,
    /// `sqlite://…`), each with the fix.
    pub fn parse(text: &str) -> Result<Location, String> {
        if text.trim().is_empty() {
            return Err(
                "--db is empty: give a SQLite file path (e.g. run.db) or a postgres:// URL".into(),
            );
        }
        let lower = text.to_ascii_lowercase();
        if POSTGRES_SCHEMES.iter().any(|s| lower.starts_with(s)) {
            return Ok(Location::Postgres(text.to_string()));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            {
                return Err(format!(
                    "--db {}: a {scheme}:// URL is not a store qflow knows: give a SQLite file path \
                     (e.g. run.db) or a postgres:// URL (postgres://user@host:5432/dbname)",
                    redact(text)
                ));
            }
        }
        Ok(Location::Sqlite(PathBuf::from(text)))
    }

    /// The SQLite file, if this is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Location::Sqlite(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }

    /// Whether this is a PostgreSQL database.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Location {
        Location::Sqlite(p.to_path_buf())
    }
}

impl From<&PathBuf> for Location {
    fn from(p: &PathBuf) -> Location {
        Location::Sqlite(p.clone())
    }
}

impl From<PathBuf> for Location {
    fn from(p: PathBuf) -> Location {
        Location::Sqlite(p)
    }
}

impl FromStr for Location {
    type Err = String;
    fn from_str(s: &str) -> Result<Location, String> {
        Location::parse(s)
    }
}

/// Shown as given, except a PostgreSQL URL's password, which never reaches
/// a terminal, a log or an error message.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => f.debug_tuple("Sqlite").field(p).finish(),
            Location::Postgres(_) => f.debug_tuple("Postgres").field(&self.to_string()).finish(),
        }
    }
}

/// A URL with the password of its user info (`user:password@`) and of a
/// `password=` query parameter replaced by `***`.
pub fn redact(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = out[rest_start..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| rest_start + i);
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let userinfo = rest_start..rest_start + at;
            if let Some(colon) = out[userinfo.clone()].find(':') {
                out.replace_range(rest_start + colon + 1..rest_start + at, "***");
            }
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_or_a_postgres_url() {
        assert_eq!(
            Location::parse("run.db").unwrap(),
            Location::Sqlite("run.db".into())
        );
        assert_eq!(
            Location::parse("/tmp/dir with space/q.db").unwrap(),
            Location::Sqlite("/tmp/dir with space/q.db".into())
        );
        for url in [
            "postgres://qflow@localhost:5432/qflow",
            "postgresql://localhost/qflow?sslmode=require",
            "POSTGRES://h/d",
        ] {
            assert_eq!(
                Location::parse(url).unwrap(),
                Location::Postgres(url.into())
            );
        }
    }

    #[test]
    fn other_schemes_and_empty_values_are_refused_with_the_fix() {
        let e = Location::parse("mysql://root@h/db").unwrap_err();
        assert!(
            e.contains("a mysql:// URL is not a store qflow knows") && e.contains("postgres://"),
            "{e}"
        );
        let e = Location::parse("  ").unwrap_err();
        assert!(e.contains("--db is empty"), "{e}");
    }

    #[test]
    fn passwords_never_show() {
        let l =
            Location::parse("postgres://me:s3cret@db.example:5432/q?password=x&sslmode=require")
                .unwrap();
        let shown = l.to_string();
        assert_eq!(
            shown,
            "postgres://me:***@db.example:5432/q?password=***&sslmode=require"
        );
        assert!(!format!("{l:?}").contains("s3cret"));
        assert_eq!(redact("postgres://me@h/q"), "postgres://me@h/q");
        let e = Location::parse("mysql://root:pw@h/db").unwrap_err();
        assert!(!e.contains("pw@"), "{e}");
    }
}
