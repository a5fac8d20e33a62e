//! [`Conn`] for a rusqlite connection (a transaction derefs to one).

use rusqlite::types::{ToSqlOutput, ValueRef as LiteRef};
use rusqlite::Connection;

use super::{sqlite_text, Conn, Dialect, Lock, Row, Value, ValueRef};
use crate::StoreError;

/// A SQLite connection (or an open transaction on it) as a [`Conn`]: every
/// statement goes through the connection's statement cache.
pub(crate) struct Lite<'c>(pub(crate) &'c Connection);

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            Value::Null => LiteRef::Null,
            Value::Int(i) => LiteRef::Integer(i),
            Value::Text(s) => LiteRef::Text(s.as_bytes()),
            Value::Blob(b) => LiteRef::Blob(b),
        }))
    }
}

/// A row SQLite returned, read as a [`Row`] (for the few statements built
/// at run time, outside [`Conn`]).
pub(crate) struct LiteRow<'r, 's>(pub(crate) &'r rusqlite::Row<'s>);

impl Row for LiteRow<'_, '_> {
    fn value(&self, i: usize) -> Result<ValueRef<'_>, StoreError> {
        Ok(match self.0.get_ref(i)? {
            LiteRef::Null => ValueRef::Null,
            LiteRef::Integer(i) => ValueRef::Int(i),
            LiteRef::Real(f) => ValueRef::Real(f),
            LiteRef::Text(t) => ValueRef::Text(
                std::str::from_utf8(t).map_err(|e| StoreError::Decode(e.to_string()))?,
            ),
            LiteRef::Blob(b) => ValueRef::Blob(b),
        })
    }
}

impl Conn for Lite<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&mut self, sql: &'static str, args: &[Value<'_>]) -> Result<u64, StoreError> {
        let mut st = self.0.prepare_cached(sqlite_text(sql))?;
        Ok(st.execute(rusqlite::params_from_iter(args.iter()))? as u64)
    }

    fn each(
        &mut self,
        sql: &'static str,
        args: &[Value<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut st = self.0.prepare_cached(sqlite_text(sql))?;
        let mut rows = st.query(rusqlite::params_from_iter(args.iter()))?;
        while let Some(r) = rows.next()? {
            each(&LiteRow(r))?;
        }
        Ok(())
    }

    fn each_built(
        &mut self,
        sql: &str,
        args: &[Value<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut st = self.0.prepare(&super::to_sqlite(sql))?;
        let mut rows = st.query(rusqlite::params_from_iter(args.iter()))?;
        while let Some(r) = rows.next()? {
            each(&LiteRow(r))?;
        }
        Ok(())
    }

    /// SQLite's write transaction holds the whole database already.
    fn lock(&mut self, _lock: Lock) -> Result<(), StoreError> {
        Ok(())
    }

    /// No notifications: a SQLite replica keeps its own wakes in memory.
    fn notify(&mut self, _channel: &str, _payload: &str) -> Result<(), StoreError> {
        Ok(())
    }

    fn savepoint(
        &mut self,
        f: &mut dyn FnMut(&mut dyn Conn) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.0.execute_batch("SAVEPOINT qflow_step")?;
        match f(self) {
            Ok(()) => {
                self.0.execute_batch("RELEASE qflow_step")?;
                Ok(())
            }
            Err(e) => {
                self.0
                    .execute_batch("ROLLBACK TO qflow_step; RELEASE qflow_step")?;
                Err(e)
            }
        }
    }
}
