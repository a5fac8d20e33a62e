//! The PostgreSQL backend of a qflow-store built without its `postgres`
//! feature: a type with no values, so every `Database::Postgres` arm stays
//! written once and compiles away, and a `postgres://` URL is refused with
//! what to do instead of a link error or a panic.

use crate::boundary::{Backend, Body};
use crate::StoreError;

/// No PostgreSQL store can exist in this build.
pub(crate) enum Postgres {}

impl Postgres {
    pub(crate) fn connect(url: &str, _create: bool) -> Result<Postgres, StoreError> {
        Err(StoreError::NoPostgres(crate::location::redact(url)))
    }

    pub(crate) fn connect_at(
        url: &str,
        create: bool,
        _version: u32,
    ) -> Result<Postgres, StoreError> {
        Postgres::connect(url, create)
    }

    pub(crate) fn set_read_only(&self) -> Result<(), StoreError> {
        match *self {}
    }

    pub(crate) fn connection_url(&self) -> String {
        match *self {}
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn batch(&mut self, _sql: &str) {
        match *self {}
    }

    /// The URL it was opened with (never: there is none).
    #[cfg(test)]
    pub(crate) fn url(&self) -> String {
        match *self {}
    }
}

/// For the store's own tests: no PostgreSQL store in this build.
#[cfg(test)]
pub(crate) fn test_store(test: &str) -> Option<crate::Store> {
    test_server(test).map(|_| unreachable!("no server is named without PostgreSQL"))
}

impl Backend for Postgres {
    fn read(&self, _f: Body<'_>) -> Result<(), StoreError> {
        match *self {}
    }

    fn write(&mut self, _f: Body<'_>) -> Result<(), StoreError> {
        match *self {}
    }

    fn schema_version(&self) -> Result<u32, StoreError> {
        match *self {}
    }
}

/// Without PostgreSQL every PostgreSQL test says it skips.
pub fn test_server(test: &str) -> Option<String> {
    eprintln!(
        "{test}: skipped on PostgreSQL (this qflow-store was built without its `postgres` feature)"
    );
    None
}

/// Never reached: [`test_server`] names no server.
pub fn scratch_database(url: &str, _name: &str) -> Result<String, StoreError> {
    Err(StoreError::NoPostgres(crate::location::redact(url)))
}
