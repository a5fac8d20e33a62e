//! For tests: how much work each statement a loop ran did, in SQLite's own
//! count of virtual-machine steps. A statement whose steps grow with the
//! number of instances in the store reads rows of instances it is not about
//! (a scan, or an index range over every parked instance's timers).

use std::collections::BTreeMap;
use std::sync::Mutex;

use rusqlite::trace::{TraceEvent, TraceEventCodes};
use rusqlite::StatementStatus;

use super::Sqlite;

/// Statement text (parameters unexpanded) → the most steps one run took.
static STEPS: Mutex<BTreeMap<String, i64>> = Mutex::new(BTreeMap::new());

fn profiled(e: TraceEvent<'_>) {
    if let TraceEvent::Profile(stmt, _) = e {
        // Counters are per prepared statement: a cached one has run `runs`
        // times, so its steps per run are the average.
        let runs = i64::from(stmt.get_status(StatementStatus::Run)).max(1);
        let steps = i64::from(stmt.get_status(StatementStatus::VmStep)) / runs;
        let mut m = STEPS.lock().unwrap_or_else(|p| p.into_inner());
        let e = m.entry(stmt.sql().into_owned()).or_default();
        *e = (*e).max(steps);
    }
}

impl Sqlite {
    /// Count the steps of every statement this connection runs from now on,
    /// into one table for the whole test binary (so one test at a time).
    pub(crate) fn count_steps(&mut self) {
        self.conn
            .trace_v2(TraceEventCodes::SQLITE_TRACE_PROFILE, Some(profiled));
    }
}

/// The counted steps so far, emptied.
pub fn take_steps() -> BTreeMap<String, i64> {
    std::mem::take(&mut *STEPS.lock().unwrap_or_else(|p| p.into_inner()))
}
