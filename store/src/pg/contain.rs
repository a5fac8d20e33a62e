//! Containment on PostgreSQL: written once with SQLite's in `contain.rs`
//! (the pause lock is [`Lock::PauseExclusive`](crate::sql::Lock), the row
//! locks are the statements' `FOR UPDATE`). What is left here is the test
//! of the race only PostgreSQL's concurrent writers can run.

#[cfg(test)]
mod tests {
    use super::super::{schema::PAUSE_LOCK, scratch_database, test_server};
    use crate::contain::{Actor, PauseKind};
    use crate::{Location, Store};

    /// A re-drive that checked for pauses before a pause committed must not
    /// commit after it: the pause waits for the re-drive's shared lock.
    /// (Staged with a raw transaction holding that lock, as an applying
    /// transition does between its check and its commit.)
    #[test]
    fn a_pause_waits_for_a_redrive_already_past_its_check() {
        let test = "a_pause_waits_for_a_redrive";
        let Some(server) = test_server(test) else {
            return;
        };
        let db = scratch_database(
            &server,
            &format!("qflow_unit_{test}_{}", std::process::id()),
        )
        .unwrap();
        drop(Store::connect(&Location::Postgres(db.clone())).unwrap());
        let mut redrive = postgres::Client::connect(&db, postgres::NoTls).unwrap();
        let mut in_flight = redrive.transaction().unwrap();
        in_flight
            .execute("SELECT pg_advisory_xact_lock_shared($1)", &[&PAUSE_LOCK])
            .unwrap();
        let pausing = {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut operator = Store::connect(&Location::Postgres(db)).unwrap();
                operator
                    .pause(PauseKind::Class, "transient", 1, &Actor::new("ops"))
                    .unwrap();
            })
        };
        // The pause is seen waiting on the lock, not committed.
        let mut watcher = postgres::Client::connect(&db, postgres::NoTls).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let waiting: i64 = watcher
                .query_one(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
                    &[],
                )
                .unwrap()
                .get(0);
            if waiting == 1 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline && !pausing.is_finished(),
                "the pause did not wait for the in-flight re-drive"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let paused: i64 = watcher
            .query_one("SELECT count(*) FROM pauses", &[])
            .unwrap()
            .get(0);
        assert_eq!(paused, 0, "not committed while the re-drive is in flight");
        in_flight.commit().unwrap();
        pausing.join().unwrap();
        let paused: i64 = watcher
            .query_one("SELECT count(*) FROM pauses", &[])
            .unwrap()
            .get(0);
        assert_eq!(paused, 1);
    }
}
