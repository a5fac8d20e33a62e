//! Who takes a claim or runs an attempt: an *owner* name, written on the
//! instance's claim and on an attempt's in-flight record.
//!
//! A process is `host:pid`, so a claim or record left by a killed process on
//! the same host can be taken over at once. One process may run several
//! engines on one database (`qflow serve` runs its decision loop and its
//! endpoint workers; a library user may serve twice): each engine names
//! itself `host:pid/NAME` and registers that name here while it lives, so
//! another engine of the same process tells a live engine's claim or attempt
//! from one left by an engine that is gone, instead of taking every record of
//! its own process for its own.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The engines of this process that are alive, by owner name (a count, for
/// a name registered twice).
static LIVE: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

/// Numbers the engines of this process, for [`engine_owner`].
static NEXT_ENGINE: AtomicU64 = AtomicU64::new(1);

/// This process's owner: host and pid (what one-shot commands claim as).
pub fn local_owner() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "local".into());
    format!("{host}:{}", std::process::id())
}

/// A fresh owner name for one engine of this process (`host:pid/eN`),
/// registered as alive while the returned registration lives.
pub fn engine_owner() -> OwnerRegistration {
    let n = NEXT_ENGINE.fetch_add(1, Ordering::Relaxed);
    OwnerRegistration::new(format!("{}/e{n}", local_owner()))
}

/// `name` within this process (`host:pid/NAME`), registered as alive while
/// the returned registration lives.
pub fn engine_owner_named(name: &str) -> OwnerRegistration {
    OwnerRegistration::new(format!("{}/{name}", local_owner()))
}

/// An owner name registered as alive in this process until dropped.
#[derive(Debug)]
pub struct OwnerRegistration {
    name: String,
}

impl OwnerRegistration {
    /// Register `name` (any owner name; one of this process's is told apart
    /// from a gone engine's only while registered).
    pub fn new(name: String) -> OwnerRegistration {
        *LIVE
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name.clone())
            .or_default() += 1;
        OwnerRegistration { name }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for OwnerRegistration {
    fn drop(&mut self) {
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = live.get_mut(&self.name) {
            *n -= 1;
            if *n == 0 {
                live.remove(&self.name);
            }
        }
    }
}

/// Whether `owner` can no longer act: a process of this host that no
/// longer exists, or an engine of this process that is gone. An owner of
/// another host is never known dead (its claim's expiry and its attempt's
/// lease decide), nor is this process itself.
pub fn owner_is_dead(owner: &str) -> bool {
    let me = local_owner();
    let (process, engine) = match owner.split_once('/') {
        Some((p, e)) => (p, Some(e)),
        None => (owner, None),
    };
    if process == me {
        return engine.is_some()
            && !LIVE
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(owner);
    }
    let (Some((host, pid)), Some((my_host, _))) = (process.rsplit_once(':'), me.rsplit_once(':'))
    else {
        return false;
    };
    host == my_host
        && Path::new("/proc/self").exists()
        && !Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_of_this_process_lives_while_registered() {
        let me = local_owner();
        assert!(!owner_is_dead(&me), "this process lives");
        let a = engine_owner();
        let name = a.name().to_string();
        assert!(name.starts_with(&format!("{me}/e")), "{name}");
        assert!(!owner_is_dead(&name));
        let b = engine_owner();
        assert_ne!(a.name(), b.name(), "each engine has a name of its own");
        drop(a);
        assert!(owner_is_dead(&name), "a dropped engine is gone");
        assert!(!owner_is_dead(b.name()));
        // A name registered twice lives until both are dropped.
        let x = engine_owner_named("http0");
        let y = engine_owner_named("http0");
        drop(x);
        assert!(!owner_is_dead(y.name()));
        drop(y);
        assert!(owner_is_dead(&format!("{me}/http0")));
    }

    #[test]
    fn another_host_is_never_known_dead_and_a_gone_local_process_is() {
        assert!(!owner_is_dead("elsewhere:1"));
        assert!(!owner_is_dead("elsewhere:1/e3"));
        let host = local_owner().rsplit_once(':').unwrap().0.to_string();
        assert!(owner_is_dead(&format!("{host}:999999999")));
        assert!(owner_is_dead(&format!("{host}:999999999/e1")));
    }
}
