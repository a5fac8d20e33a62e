//! Time is an input: decisions take `now` from a [`Clock`], never from the OS.
//!
//! Local runs use a [`VirtualClock`], which only moves when the driver skips
//! it to the next due timer (like Temporal's time-skipping test server), so a
//! thirteen-hour backoff schedule runs in milliseconds and every run gives the
//! same times. Times are milliseconds on the clock's own epoch.

use std::cell::Cell;

pub trait Clock {
    /// Milliseconds since the clock's epoch.
    fn now_ms(&self) -> i64;

    /// Whether the driver may move time forward to `due_ms` instead of waiting
    /// for it. Only a virtual clock can.
    fn skip_to(&self, due_ms: i64) -> bool;

    /// Time has been at least `ms` (a resumed instance's last decision): a
    /// virtual clock moves there, a real one ignores it.
    fn observe(&self, _ms: i64) {}
}

/// Time that moves only when told to.
#[derive(Debug, Default)]
pub struct VirtualClock {
    now: Cell<i64>,
}

impl VirtualClock {
    pub fn new(start_ms: i64) -> VirtualClock {
        VirtualClock {
            now: Cell::new(start_ms),
        }
    }

    /// Move forward (never backward) to `ms`.
    pub fn advance_to(&self, ms: i64) {
        if ms > self.now.get() {
            self.now.set(ms);
        }
    }
}

impl Clock for VirtualClock {
    fn now_ms(&self) -> i64 {
        self.now.get()
    }

    fn skip_to(&self, due_ms: i64) -> bool {
        self.advance_to(due_ms);
        true
    }

    fn observe(&self, ms: i64) {
        self.advance_to(ms);
    }
}

/// The wall clock (Unix epoch). The driver never sleeps in a step: with this
/// clock a not-yet-due timer ends the step, and the caller's poller decides
/// when to look again.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        system_now_ms()
    }

    fn skip_to(&self, due_ms: i64) -> bool {
        self.now_ms() >= due_ms
    }
}

/// Wall-clock milliseconds since the Unix epoch (claims always use it).
pub fn system_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_time_skips_forward_only() {
        let c = VirtualClock::new(0);
        assert!(c.skip_to(60_000));
        assert_eq!(c.now_ms(), 60_000);
        c.advance_to(10);
        assert_eq!(c.now_ms(), 60_000);
        assert!(!SystemClock.skip_to(i64::MAX));
    }
}
