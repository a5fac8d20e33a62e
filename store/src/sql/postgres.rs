//! [`Conn`] for a PostgreSQL client or transaction.

use postgres::types::{IsNull, ToSql, Type};
use postgres::GenericClient;

use super::{Conn, Dialect, Lock, Row, Value, ValueRef};
use crate::pg::{schema, Db};
use crate::StoreError;

impl ToSql for Value<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Value::Null => Ok(IsNull::Yes),
            // Every integer column is BIGINT; a parameter PostgreSQL typed
            // narrower (an expression's) takes the value if it fits.
            Value::Int(i) if *ty == Type::INT4 => i32::try_from(i)?.to_sql_checked(ty, out),
            Value::Int(i) if *ty == Type::INT2 => i16::try_from(i)?.to_sql_checked(ty, out),
            Value::Int(i) if *ty == Type::BOOL => (i != 0).to_sql_checked(ty, out),
            Value::Int(i) => i.to_sql_checked(ty, out),
            Value::Text(s) => s.to_sql_checked(ty, out),
            Value::Blob(b) => b.to_sql_checked(ty, out),
        }
    }

    /// Any type: each value is checked against the parameter's type as
    /// it is written (a mismatch is an error, never a wrong value).
    fn accepts(_ty: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

struct PgRow<'r>(&'r postgres::Row);

impl Row for PgRow<'_> {
    fn value(&self, i: usize) -> Result<ValueRef<'_>, StoreError> {
        let r = self.0;
        let ty = r
            .columns()
            .get(i)
            .ok_or_else(|| StoreError::Decode(format!("no column {i}")))?
            .type_()
            .clone();
        let v = match ty {
            Type::INT8 => r.try_get::<_, Option<i64>>(i)?.map(ValueRef::Int),
            Type::INT4 => r
                .try_get::<_, Option<i32>>(i)?
                .map(|v| ValueRef::Int(v.into())),
            Type::INT2 => r
                .try_get::<_, Option<i16>>(i)?
                .map(|v| ValueRef::Int(v.into())),
            Type::BOOL => r
                .try_get::<_, Option<bool>>(i)?
                .map(|v| ValueRef::Int(v.into())),
            Type::FLOAT8 => r.try_get::<_, Option<f64>>(i)?.map(ValueRef::Real),
            Type::FLOAT4 => r
                .try_get::<_, Option<f32>>(i)?
                .map(|v| ValueRef::Real(v.into())),
            Type::BYTEA => r.try_get::<_, Option<&[u8]>>(i)?.map(ValueRef::Blob),
            _ => r.try_get::<_, Option<&str>>(i)?.map(ValueRef::Text),
        };
        Ok(v.unwrap_or(ValueRef::Null))
    }
}

fn refs<'a>(args: &'a [Value<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    args.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl<C: GenericClient> Conn for Db<'_, C> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &'static str, args: &[Value<'_>]) -> Result<u64, StoreError> {
        Ok(self.exec(sql, &refs(args))?)
    }

    fn each(
        &mut self,
        sql: &'static str,
        args: &[Value<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        for r in self.rows(sql, &refs(args))? {
            each(&PgRow(&r))?;
        }
        Ok(())
    }

    fn each_built(
        &mut self,
        sql: &str,
        args: &[Value<'_>],
        each: &mut dyn FnMut(&dyn Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        for r in self.c.query(sql, &refs(args))? {
            each(&PgRow(&r))?;
        }
        Ok(())
    }

    fn lock(&mut self, lock: Lock) -> Result<(), StoreError> {
        let (sql, key) = match lock {
            Lock::Numbering => ("SELECT pg_advisory_xact_lock($1)", schema::NUMBERING_LOCK),
            Lock::PauseExclusive => ("SELECT pg_advisory_xact_lock($1)", schema::PAUSE_LOCK),
            Lock::PauseShared => (
                "SELECT pg_advisory_xact_lock_shared($1)",
                schema::PAUSE_LOCK,
            ),
        };
        self.exec(sql, &[&key])?;
        Ok(())
    }

    fn notify(&mut self, channel: &str, payload: &str) -> Result<(), StoreError> {
        self.exec("SELECT pg_notify($1, $2)", &[&channel, &payload])?;
        Ok(())
    }

    fn savepoint(
        &mut self,
        f: &mut dyn FnMut(&mut dyn Conn) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut sp = self.c.transaction()?;
        let out = f(&mut Db {
            c: &mut sp,
            stmts: &mut *self.stmts,
        });
        match out {
            Ok(()) => sp.commit()?,
            Err(_) => sp.rollback()?,
        }
        out
    }
}
