//! Attempts in flight: a handler that runs outside the store (a command, an
//! HTTP call, a closure) is recorded as started, in its own transaction,
//! before it runs, as an open incident of kind `in-flight`. If the process
//! dies before the attempt's outcome is applied, the next process finds the
//! record with the instance still at the version the attempt was started
//! from, and decides that attempt as an unknown outcome instead of running
//! the handler a second time: the effect may have happened.

use rusqlite::{params, OptionalExtension};

use super::{exec, Sqlite, StoreError};

/// The incident kind of an attempt in flight.
pub const KIND: &str = "in-flight";

/// An attempt recorded as started and not yet closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub attempt: u32,
    /// The instance's version the attempt was started from: still the
    /// instance's version means its outcome was never applied.
    pub version: i64,
    pub opened_ms: i64,
    pub message: String,
}

pub(super) fn message(attempt: u32, version: i64, wall_ms: i64) -> String {
    format!("attempt {attempt} started (instance version {version}, wall clock {wall_ms} ms); the handler is running")
}

pub(super) fn parse(message: &str) -> Option<(u32, i64)> {
    let mut words = message.split_whitespace();
    let attempt = words.nth(1)?.parse().ok()?;
    let version = words.nth(3)?.trim_end_matches(',').parse().ok()?;
    Some((attempt, version))
}

impl Sqlite {
    /// Record that attempt `attempt` of `node` starts now, from the
    /// instance at `version` (call under the instance's claim).
    pub fn open_in_flight(
        &self,
        instance: &str,
        node: &str,
        attempt: u32,
        version: i64,
        at_ms: i64,
        wall_ms: i64,
    ) -> Result<(), StoreError> {
        exec(self.conn(),
            "INSERT INTO incidents(instance_id, node, kind, message, opened_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![instance, node, KIND, message(attempt, version, wall_ms), at_ms],
        )?;
        Ok(())
    }

    /// The latest open in-flight record of `node`, if any.
    pub fn in_flight(&self, instance: &str, node: &str) -> Result<Option<InFlight>, StoreError> {
        let row: Option<(String, i64)> = self
            .conn()
            .prepare_cached(
                "SELECT message, opened_ms FROM incidents WHERE instance_id = ?1 AND node = ?2 AND kind = ?3 AND closed_ms IS NULL ORDER BY id DESC LIMIT 1",
            )?
            .query_row(params![instance, node, KIND], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        Ok(row.and_then(|(message, opened_ms)| {
            parse(&message).map(|(attempt, version)| InFlight {
                attempt,
                version,
                opened_ms,
                message,
            })
        }))
    }

    /// Close the instance's in-flight records (its attempt's outcome was
    /// applied, or lost to another party).
    pub fn close_in_flight(&self, instance: &str, at_ms: i64) -> Result<(), StoreError> {
        exec(self.conn(),
            "UPDATE incidents SET closed_ms = ?3 WHERE instance_id = ?1 AND kind = ?2 AND closed_ms IS NULL",
            params![instance, KIND, at_ms],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_message_says_what_is_parsed_back() {
        let m = super::message(3, 17, 1_700_000_000_000);
        assert_eq!(super::parse(&m), Some((3, 17)), "{m}");
    }
}
