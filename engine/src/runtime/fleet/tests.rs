//! The fleet driver decides what a local run decides, one batch at a time,
//! and group commit keeps each instance's transition whole and checked.

use std::collections::BTreeMap;

use super::{Fleet, World};
use crate::instance::event::{FailureClass, TaskOutcome};
use crate::runtime::decide;
use crate::runtime::graph::Graph;
use crate::runtime::{LocalRun, Scenario, VirtualClock};
use crate::store::batch::Pending;
use crate::store::{Store, StoreError};

const DBG08: &str = include_str!("../../../../samples/dbg08-long-outage.bpmn");
const ALWAYS_FAILS: &str = include_str!("../../../../samples/scenarios/dbg08-long-outage.json");

fn seeded(path: &std::path::Path, n: usize) -> Store {
    let mut store = Store::open(path).unwrap();
    let defs = crate::load(DBG08).unwrap();
    let graph = Graph::compile(&defs).unwrap();
    let scenario = Scenario::parse(ALWAYS_FAILS).unwrap();
    let dep = store.deploy(&graph.process_id, DBG08, 0).unwrap();
    let start = decide::start(&graph, &scenario.variables, 0);
    store.start_instances(&dep, &start, 0, n).unwrap();
    store
}

/// The decision lines of an instance, as stored.
fn lines(store: &Store, id: &str) -> Vec<String> {
    store
        .history(id)
        .unwrap()
        .into_iter()
        .map(|h| h.detail)
        .collect()
}

#[test]
fn a_fleet_in_batches_decides_what_a_local_run_decides() {
    let dir = tempfile::tempdir().unwrap();
    // One instance run alone, the way `qflow run` does.
    let defs = crate::load(DBG08).unwrap();
    let alone = Store::open(&dir.path().join("alone.db")).unwrap();
    let scenario = Scenario::parse(ALWAYS_FAILS).unwrap();
    let mut run = LocalRun::open(alone, DBG08, &defs, scenario, VirtualClock::new(0)).unwrap();
    run.run(|_| {}).unwrap();
    let expected = lines(run.store(), run.instance_id());
    let attempts = expected
        .iter()
        .filter(|l| l.contains(r#""kind":"attempt""#))
        .count();
    assert_eq!(attempts, 6, "{expected:#?}");

    // Seven instances, three at a time (batches that cut across them).
    let store = seeded(&dir.path().join("fleet.db"), 7);
    let mut fleet = Fleet::new(store, Scenario::parse(ALWAYS_FAILS).unwrap(), "t:1".into());
    fleet.batch(3);
    let stats = fleet.serve(|_, _| {}).unwrap();
    assert_eq!(stats.decisions, 42);
    assert_eq!(stats.lost, 0);
    for row in fleet.store().instances().unwrap() {
        assert_eq!(row.status.as_str(), "failed", "{}", row.id);
        assert_eq!(lines(fleet.store(), &row.id), expected, "{}", row.id);
        assert_eq!(row.claim_owner, None, "claims released");
    }
}

/// Down until `until_ms`, up after.
struct Outage {
    until_ms: i64,
}

impl World for Outage {
    fn attempt(&self, _task: &str, _run: usize, at_ms: i64) -> TaskOutcome {
        if at_ms < self.until_ms {
            TaskOutcome::Fail {
                code: "DOWN".into(),
                class: FailureClass::Transient,
                retry_after: None,
                message: None,
            }
        } else {
            TaskOutcome::Ok(BTreeMap::new())
        }
    }
}

#[test]
fn a_world_decides_by_the_instant_a_ten_minute_outage_fails_three_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let store = seeded(&dir.path().join("fleet.db"), 4);
    let mut fleet = Fleet::new(store, Scenario::parse(ALWAYS_FAILS).unwrap(), "t:1".into());
    fleet.world(Box::new(Outage { until_ms: 600_000 }));
    fleet.serve(|_, _| {}).unwrap();
    for row in fleet.store().instances().unwrap() {
        // Attempts at 0 and 60 s fail; the one at 360 s fails too (still
        // down); the one at 1,860 s succeeds.
        assert_eq!(row.status.as_str(), "completed", "{}", row.id);
        let attempts = fleet
            .store()
            .history(&row.id)
            .unwrap()
            .into_iter()
            .filter(|h| h.kind == "attempt")
            .map(|h| h.at_ms / 1000)
            .collect::<Vec<_>>();
        assert_eq!(attempts, [0, 60, 360, 1_860], "{}", row.id);
    }
}

#[test]
fn a_refused_decision_in_a_batch_is_rolled_back_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = seeded(&dir.path().join("fleet.db"), 3);
    let ids: Vec<String> = store
        .instances()
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    let wall = crate::runtime::clock::system_now_ms();
    assert_eq!(store.claim_many(&ids, "me:1", wall).unwrap(), ids);
    // Another owner holds none of them now: a second claimant gets nothing.
    assert!(store.claim_many(&ids, "other:2", wall).unwrap().is_empty());
    let defs = crate::load(DBG08).unwrap();
    let graph = Graph::compile(&defs).unwrap();
    let facts: Vec<_> = ids.iter().map(|id| store.facts(id).unwrap()).collect();
    let ts: Vec<_> = ids
        .iter()
        .zip(&facts)
        .map(|(id, f)| {
            let ev = crate::instance::Event::Attempt {
                node: "charge".into(),
                outcome: TaskOutcome::Ok(BTreeMap::new()),
                timer: None,
            };
            decide::decide(&graph, &f.as_facts(id), &ev, 0)
        })
        .collect();
    let batch: Vec<Pending<'_>> = ids
        .iter()
        .zip(&facts)
        .zip(&ts)
        .enumerate()
        .map(|(i, ((id, f), t))| Pending {
            instance: id,
            // The second was decided from facts that are no longer current.
            version: if i == 1 { f.version - 1 } else { f.version },
            transition: t,
            at_ms: 0,
        })
        .collect();
    let results = store.apply_many("me:1", &batch, &[], wall).unwrap();
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    assert!(
        matches!(results[1], Err(StoreError::Conflict(_))),
        "{results:?}"
    );
    let rows = store.instances().unwrap();
    assert_eq!(rows[0].version, facts[0].version + 1);
    assert_eq!(rows[1].version, facts[1].version, "nothing of it written");
    assert_eq!(store.history(&ids[1]).unwrap().len(), 1, "only its start");
    assert_eq!(
        store.history(&ids[0]).unwrap().len(),
        2,
        "start and attempt"
    );
    assert_eq!(rows[2].version, facts[2].version + 1);
    assert!(
        rows.iter().all(|r| r.claim_owner.is_none()),
        "every claim released"
    );
}

#[test]
fn two_fleets_racing_on_one_database_take_every_attempt_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fleet.db");
    drop(seeded(&path, 30));
    let serve = |owner: &'static str| {
        let path = path.clone();
        std::thread::spawn(move || {
            let store = Store::open(&path).unwrap();
            let mut fleet = Fleet::new(store, Scenario::parse(ALWAYS_FAILS).unwrap(), owner.into());
            fleet.batch(4);
            fleet.serve(|_, _| {}).unwrap()
        })
    };
    let (a, b) = (serve("a:1"), serve("b:2"));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    assert_eq!(a.decisions + b.decisions, 180, "{a:?} {b:?}");
    let store = Store::open(&path).unwrap();
    for row in store.instances().unwrap() {
        assert_eq!(row.status.as_str(), "failed");
        let attempts = store
            .history(&row.id)
            .unwrap()
            .into_iter()
            .filter(|h| h.kind == "attempt")
            .count();
        assert_eq!(attempts, 6, "{}", row.id);
    }
}

#[test]
fn observations_count_pending_by_class_and_backlog_age_by_creation_time() {
    use crate::store::stats::Count;
    let dir = tempfile::tempdir().unwrap();
    let store = seeded(&dir.path().join("fleet.db"), 9);
    let mut fleet = Fleet::new(store, Scenario::parse(ALWAYS_FAILS).unwrap(), "t:1".into());
    fleet.batch(9);
    // Every first attempt: nine instances parked on a retry timer at 60 s.
    fleet.step(|_, _| {}).unwrap();
    let o = fleet.store().observations().unwrap();
    assert_eq!(o.unfinished, 9);
    let count = |label: &str, count| Count {
        label: label.into(),
        count,
    };
    assert_eq!(o.pending_by_class, [count("transient", 9)]);
    assert_eq!(o.oldest_next_eligible_ms, Some(60_000));
    assert_eq!(o.now_ms, Some(0));
    assert_eq!(o.backlog_age[0], count("< 1 min", 9));
    // The re-drive at 60 s: ages run from creation, not from the attempt.
    fleet.step(|_, _| {}).unwrap();
    let o = fleet.store().observations().unwrap();
    assert_eq!(o.now_ms, Some(60_000));
    assert_eq!(o.backlog_age[0], count("< 1 min", 0));
    assert_eq!(o.backlog_age[1], count("< 10 min", 9));
    assert_eq!(o.oldest_next_eligible_ms, Some(360_000));
    assert_eq!(o.by_dependency[0].attempts, 18);
    assert_eq!(o.by_dependency[0].peak_per_minute, 9);
}
