//! Fault points for the crash tests: `QFLOW_FAULT=NAME` aborts the process
//! (no unwinding, no destructor, no commit) when it reaches the point of
//! that name, so a test can stop a write at an exact instant inside its
//! transaction instead of hoping a timed kill lands there. Unset, a point
//! costs one environment lookup on a path that writes to disk anyway.
//!
//! Points: `migrate.begin` (the migration's transaction is open, nothing
//! written), `migrate.written` (the transition is written, the instance not
//! yet re-pinned), `migrate.before-commit`, `migrate.committed`;
//! `contain.written` (a pause, unpause, quarantine or release has changed
//! its row, the containment log not yet written) and `contain.logged` (the
//! log row written, not yet committed).

/// Abort here when `QFLOW_FAULT` names this point.
pub fn point(name: &str) {
    if std::env::var_os("QFLOW_FAULT").is_some_and(|v| v == name) {
        std::process::abort();
    }
}
