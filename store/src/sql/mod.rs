//! One query layer over every backend: the store's durable writes are
//! written once, against [`Conn`], and each backend implements [`Conn`] for
//! its connection and transaction.
//!
//! The shape is the one diesel and sqlx share (one layer of typed
//! parameters and rows over several databases), cut down to what the store
//! needs:
//!
//! - **Statements are written once, in PostgreSQL's spelling**: `$1..$n`
//!   placeholders and PostgreSQL's row-lock clauses (`FOR UPDATE`,
//!   `FOR SHARE`, `NOWAIT`, `SKIP LOCKED`). Everything else is the SQL both
//!   databases share (`ON CONFLICT … DO …`, `RETURNING`, `CAST(… AS …)`);
//!   the SQLite connection translates each statement once ([`to_sqlite`]:
//!   `$n` becomes `?n`, a row-lock clause is dropped, since SQLite's one
//!   writer at a time already gives what the lock gives) and caches the
//!   translation.
//! - **Parameters are [`Value`]s** (null, integer, text, bytes), built by
//!   the [`args!`] macro from the Rust values the store holds; **rows are
//!   read through [`Row`]**, one [`ValueRef`] per column, decoded by
//!   [`FromValue`]. A backend converts between its own types and these
//!   four, and nothing else.
//! - **The few real differences are hooks on [`Conn`]**: an advisory
//!   transaction lock ([`Conn::lock`]: PostgreSQL's `pg_advisory_xact_lock`,
//!   nothing on SQLite, whose write transaction is already exclusive), a
//!   notification sent at commit ([`Conn::notify`]), and, for the handful
//!   of statements whose text truly differs (JSON extraction, SQLite's
//!   `rowid` where PostgreSQL has a `seq` column), [`Conn::dialect`] with
//!   [`Dialect::pick`], so each such statement names both spellings side by
//!   side. DDL and migrations stay with each backend.
//!
//! A statement's text is a `&'static str`: both backends cache prepared
//! statements by it.

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use super::StoreError;

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod sqlite;

/// A statement parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value<'a> {
    Null,
    Int(i64),
    Text(&'a str),
    Blob(&'a [u8]),
}

/// A Rust value a statement can take as a parameter.
pub(crate) trait ToValue {
    fn to_value(&self) -> Value<'_>;
}

impl ToValue for i64 {
    fn to_value(&self) -> Value<'_> {
        Value::Int(*self)
    }
}

impl ToValue for u32 {
    fn to_value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}

impl ToValue for usize {
    fn to_value(&self) -> Value<'_> {
        Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value<'_> {
        Value::Text(self)
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value<'_> {
        Value::Text(self)
    }
}

impl ToValue for [u8] {
    fn to_value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}

impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value<'_> {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value<'_> {
        (**self).to_value()
    }
}

/// The parameters of a statement, in order: `args![instance, version]`.
macro_rules! args {
    ($($e:expr),* $(,)?) => {
        &[$($crate::sql::ToValue::to_value(&$e)),*]
    };
}
pub(crate) use args;

/// One column of a row as read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ValueRef<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

impl ValueRef<'_> {
    fn kind(&self) -> &'static str {
        match self {
            ValueRef::Null => "null",
            ValueRef::Int(_) => "integer",
            ValueRef::Real(_) => "real",
            ValueRef::Text(_) => "text",
            ValueRef::Blob(_) => "bytes",
        }
    }
}

/// A row of a result, column by column (from 0).
pub(crate) trait Row {
    fn value(&self, i: usize) -> Result<ValueRef<'_>, StoreError>;
}

impl dyn Row + '_ {
    /// Column `i`, decoded as `T`.
    pub(crate) fn get<T: FromValue>(&self, i: usize) -> Result<T, StoreError> {
        let v = self.value(i)?;
        T::from_value(v).ok_or_else(|| {
            StoreError::Decode(format!(
                "column {i} holds {}, where {} was expected",
                v.kind(),
                std::any::type_name::<T>()
            ))
        })
    }
}

/// A Rust value a column decodes to (`None`: the column holds another kind).
pub(crate) trait FromValue: Sized {
    fn from_value(v: ValueRef<'_>) -> Option<Self>;
}

impl FromValue for i64 {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        match v {
            ValueRef::Int(i) => Some(i),
            _ => None,
        }
    }
}

/// A counter stored as a 64-bit integer, as the u32 the vocabulary uses.
impl FromValue for u32 {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        i64::from_value(v).map(|i| i.clamp(0, i64::from(u32::MAX)) as u32)
    }
}

/// A count (never negative).
impl FromValue for u64 {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        i64::from_value(v).map(|i| i.max(0) as u64)
    }
}

impl FromValue for usize {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        i64::from_value(v).map(|i| usize::try_from(i).unwrap_or(0))
    }
}

impl FromValue for bool {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        i64::from_value(v).map(|i| i != 0)
    }
}

impl FromValue for f64 {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        match v {
            ValueRef::Real(f) => Some(f),
            ValueRef::Int(i) => Some(i as f64),
            _ => None,
        }
    }
}

impl FromValue for String {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        match v {
            ValueRef::Text(s) => Some(s.to_string()),
            _ => None,
        }
    }
}

impl FromValue for Vec<u8> {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        match v {
            ValueRef::Blob(b) => Some(b.to_vec()),
            // SQLite keeps what it was given: text where bytes were bound
            // by another program reads as its bytes.
            ValueRef::Text(s) => Some(s.as_bytes().to_vec()),
            _ => None,
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: ValueRef<'_>) -> Option<Self> {
        match v {
            ValueRef::Null => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// Which SQL a connection speaks, for the few statements whose text
/// differs (everything else is written once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The spelling of a statement for this dialect: the two texts side by
    /// side where they truly differ (a new backend adds its own here).
    pub(crate) fn pick(self, sqlite: &'static str, postgres: &'static str) -> &'static str {
        match self {
            Dialect::Sqlite => sqlite,
            Dialect::Postgres => postgres,
        }
    }
}

/// A transaction-wide lock that is not a row's: held until the
/// transaction ends (PostgreSQL's advisory locks; SQLite's write
/// transaction is exclusive already).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lock {
    /// Numbering of deployments and instances (the next after the newest).
    Numbering,
    /// Pauses, shared by a re-drive's check and exclusive for a pause.
    PauseShared,
    PauseExclusive,
}

/// A connection or transaction of any backend: what every durable write
/// and read of the store is written against.
pub(crate) trait Conn {
    fn dialect(&self) -> Dialect;
    /// Run a statement; the number of rows it changed.
    fn execute(&mut self, sql: &'static str, args: &[Value<'_>]) -> Result<u64, StoreError>;
    /// Run a query, calling `each` with every row in order.
    fn each(
        &mut self,
        sql: &'static str,
        args: &[Value<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
    /// [`Conn::each`] for a statement built at run time (an operator's
    /// filtered list): translated and prepared anew, not kept.
    fn each_built(
        &mut self,
        sql: &str,
        args: &[Value<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
    /// Take a transaction-wide lock (see [`Lock`]).
    fn lock(&mut self, lock: Lock) -> Result<(), StoreError>;
    /// Send `payload` on `channel` when (and only if) the transaction
    /// commits; nothing where the backend has no notifications.
    fn notify(&mut self, channel: &str, payload: &str) -> Result<(), StoreError>;
    /// Run `f` in a savepoint of the open transaction: what it wrote is
    /// kept when it returns `Ok`, and rolled back alone (the transaction
    /// goes on) when it returns an error, which is returned.
    fn savepoint(
        &mut self,
        f: &mut dyn FnMut(&mut dyn Conn) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
}

impl dyn Conn + '_ {
    /// Every row of a query, each read by `f`.
    pub(crate) fn rows<T>(
        &mut self,
        sql: &'static str,
        args: &[Value<'_>],
        mut f: impl FnMut(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let mut out = Vec::new();
        self.each(sql, args, &mut |r| {
            out.push(f(r)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// The first row of a query, if any, read by `f`.
    pub(crate) fn opt<T>(
        &mut self,
        sql: &'static str,
        args: &[Value<'_>],
        f: impl FnOnce(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        let mut f = Some(f);
        let mut out = None;
        self.each(sql, args, &mut |r| {
            if let Some(f) = f.take() {
                out = Some(f(r)?);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// The row a query must return, read by `f`.
    pub(crate) fn one<T>(
        &mut self,
        sql: &'static str,
        args: &[Value<'_>],
        f: impl FnOnce(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.opt(sql, args, f)?
            .ok_or_else(|| StoreError::Decode(format!("no row where one was expected: {sql}")))
    }
}

/// `sql`, written in PostgreSQL's spelling, as SQLite runs it: every `$n`
/// placeholder becomes `?n`, and a row-lock clause (`FOR UPDATE [OF t]
/// [NOWAIT | SKIP LOCKED]`, `FOR SHARE …`) is dropped. Quoted text is
/// left as it is.
pub(crate) fn to_sqlite(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    let word_at = |i: usize, w: &str| {
        b[i..].starts_with(w.as_bytes())
            && (i == 0 || !is_ident(b[i - 1]))
            && b.get(i + w.len()).is_none_or(|c| !is_ident(*c))
    };
    while i < b.len() {
        let c = b[i];
        if c == b'\'' || c == b'"' {
            let end = b[i + 1..]
                .iter()
                .position(|x| *x == c)
                .map_or(b.len(), |p| i + 2 + p);
            out.push_str(&sql[i..end]);
            i = end;
        } else if c == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            out.push('?');
            i += 1;
        } else if word_at(i, "FOR") && lock_clause_at(sql, i + 3).is_some() {
            let end = lock_clause_at(sql, i + 3).unwrap_or(i + 3);
            while out.ends_with(char::is_whitespace) {
                out.pop();
            }
            i = end;
        } else {
            let ch = sql[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Where a row-lock clause that follows `FOR` (at `from`) ends, if one does.
fn lock_clause_at(sql: &str, from: usize) -> Option<usize> {
    let mut words = Words { sql, at: from };
    match words.next()? {
        "UPDATE" | "SHARE" => {}
        _ => return None,
    }
    let mut end = words.at;
    loop {
        match words.next() {
            Some("OF") => {
                words.next()?;
                end = words.at;
            }
            Some("NOWAIT") => end = words.at,
            Some("SKIP") if words.next() == Some("LOCKED") => end = words.at,
            _ => {
                return Some(end);
            }
        }
    }
}

/// The words of `sql` from `at` on (letters, digits and `_`; anything else
/// ends the walk).
struct Words<'a> {
    sql: &'a str,
    at: usize,
}

impl<'a> Words<'a> {
    fn next(&mut self) -> Option<&'a str> {
        let b = self.sql.as_bytes();
        let mut i = self.at;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if start == i {
            return None;
        }
        self.at = i;
        Some(&self.sql[start..i])
    }
}

/// [`to_sqlite`] of a statement text, translated once per process.
pub(crate) fn sqlite_text(sql: &'static str) -> &'static str {
    type Cache = RwLock<HashMap<(usize, usize), &'static str>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    // Keyed by where the text is: statement texts are constants, so one
    // address and length is one text for the life of the process.
    let key = (sql.as_ptr() as usize, sql.len());
    let cache = CACHE.get_or_init(Default::default);
    if let Some(done) = cache.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return done;
    }
    // Each constant is translated and kept once, for the life of the
    // process (a fixed set: a few kilobytes).
    let mut map = cache.write().unwrap_or_else(|e| e.into_inner());
    map.entry(key)
        .or_insert_with(|| Box::leak(to_sqlite(sql).into_boxed_str()))
}

#[cfg(test)]
mod tests {
    use super::to_sqlite;
    use crate::fresh::{open, Fresh};

    crate::on_both_stores!(a_value_reads_back_as_it_was_bound);

    /// One statement text, the same answer on every backend: integers at
    /// their extremes, nulls, text holding what looks like SQL, and a
    /// quoted placeholder left as the literal it is.
    fn a_value_reads_back_as_it_was_bound(fresh: &Fresh) {
        let store = open(&fresh.db());
        type Got = (i64, Option<i64>, String, Option<String>, String);
        let got: Got = store
            .read(|db| {
                db.one(
                    "SELECT CAST($1 AS BIGINT), CAST($2 AS BIGINT), CAST($3 AS TEXT), CAST($4 AS TEXT), CAST($3 AS TEXT) || '$2'",
                    args![i64::MIN, None::<i64>, "é ' $1 FOR UPDATE", None::<String>],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
                )
            })
            .unwrap();
        assert_eq!(
            got,
            (
                i64::MIN,
                None,
                "é ' $1 FOR UPDATE".to_string(),
                None,
                "é ' $1 FOR UPDATE$2".to_string()
            )
        );
    }

    #[test]
    fn placeholders_become_sqlite_numbered_ones() {
        assert_eq!(
            to_sqlite("UPDATE t SET a = $3, b = $10 WHERE id = $1"),
            "UPDATE t SET a = ?3, b = ?10 WHERE id = ?1"
        );
    }

    #[test]
    fn quoted_text_is_left_as_it_is() {
        assert_eq!(
            to_sqlite("SELECT '$1 FOR UPDATE' FROM t WHERE a = $1"),
            "SELECT '$1 FOR UPDATE' FROM t WHERE a = ?1"
        );
    }

    #[test]
    fn row_lock_clauses_are_dropped() {
        for (pg, lite) in [
            (
                "SELECT a FROM t WHERE id = $1 FOR UPDATE",
                "SELECT a FROM t WHERE id = ?1",
            ),
            (
                "SELECT a FROM t WHERE id = $1 FOR UPDATE NOWAIT",
                "SELECT a FROM t WHERE id = ?1",
            ),
            (
                "SELECT a FROM t WHERE id = $1 FOR SHARE",
                "SELECT a FROM t WHERE id = ?1",
            ),
            (
                "SELECT t.a FROM t JOIN u ON u.x = t.x LIMIT $1 FOR UPDATE OF t SKIP LOCKED",
                "SELECT t.a FROM t JOIN u ON u.x = t.x LIMIT ?1",
            ),
        ] {
            assert_eq!(to_sqlite(pg), lite);
        }
    }

    #[test]
    fn a_word_like_for_is_not_a_lock_clause() {
        assert_eq!(
            to_sqlite("SELECT format, FOR_x FROM t WHERE b = 'FOR UPDATE'"),
            "SELECT format, FOR_x FROM t WHERE b = 'FOR UPDATE'"
        );
    }
}
