//! The fleet driver decides what a local run decides, one batch at a time,
//! and group commit keeps each instance's transition whole and checked.

use std::collections::BTreeMap;

use super::{Fleet, World};
use crate::decide;
use crate::graph::Graph;
use crate::{LocalRun, Scenario, VirtualClock};
use qflow_instance::event::{FailureClass, TaskOutcome};
use qflow_store::batch::Pending;
use qflow_store::contain::Actor;
use qflow_store::fresh::{on_both_stores, open, Fresh};
use qflow_store::{Location, Store, StoreError};

const DBG08: &str = include_str!("../../../samples/dbg08-long-outage.bpmn");
const ALWAYS_FAILS: &str = include_str!("../../../samples/scenarios/dbg08-long-outage.json");

fn seeded(at: &Location, n: usize) -> Store {
    let mut store = open(at);
    let defs = qflow_model::load(DBG08).unwrap();
    let graph = Graph::compile(&defs).unwrap();
    let scenario = Scenario::parse(ALWAYS_FAILS).unwrap();
    let dep = store.deploy(&graph.process_id, DBG08, 0).unwrap();
    let start = decide::start(&graph, &scenario.variables, 0);
    store.start_instances(&dep, &start, 0, n).unwrap();
    store
}

on_both_stores!(
    a_fleet_in_batches_decides_what_a_local_run_decides,
    a_world_decides_by_the_instant_a_ten_minute_outage_fails_three_attempts,
    a_refused_decision_in_a_batch_is_rolled_back_alone,
    two_fleets_racing_on_one_database_take_every_attempt_once,
    observations_count_pending_by_class_and_backlog_age_by_creation_time,
    a_pause_holds_the_parks_of_its_class_or_dependency_through_restarts_and_unpausing_loses_nothing,
    fleets_racing_a_pause_never_redrive_a_held_park_and_unpausing_loses_nothing,
    a_redrive_decided_before_a_pause_is_refused_when_applied_after_it,
    a_quarantined_instance_is_never_claimed_until_released,
);

/// The decision lines of an instance, as stored.
fn lines(store: &Store, id: &str) -> Vec<String> {
    store
        .history(id)
        .unwrap()
        .into_iter()
        .map(|h| h.detail)
        .collect()
}

fn a_fleet_in_batches_decides_what_a_local_run_decides(fresh: &Fresh) {
    // One instance run alone, the way `qflow run` does.
    let defs = qflow_model::load(DBG08).unwrap();
    let alone = open(&fresh.db());
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
    let store = seeded(&fresh.db(), 7);
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
    fn attempt(&self, _instance: &str, _task: &str, _run: usize, at_ms: i64) -> TaskOutcome {
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

fn a_world_decides_by_the_instant_a_ten_minute_outage_fails_three_attempts(fresh: &Fresh) {
    let store = seeded(&fresh.db(), 4);
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

fn a_refused_decision_in_a_batch_is_rolled_back_alone(fresh: &Fresh) {
    let mut store = seeded(&fresh.db(), 3);
    let ids: Vec<String> = store
        .instances()
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    let wall = crate::clock::system_now_ms();
    assert_eq!(store.claim_many(&ids, "me:1", wall).unwrap(), ids);
    // Another owner holds none of them now: a second claimant gets nothing.
    assert!(store.claim_many(&ids, "other:2", wall).unwrap().is_empty());
    let defs = qflow_model::load(DBG08).unwrap();
    let graph = Graph::compile(&defs).unwrap();
    let facts: Vec<_> = ids.iter().map(|id| store.facts(id).unwrap()).collect();
    let ts: Vec<_> = ids
        .iter()
        .zip(&facts)
        .map(|(id, f)| {
            let ev = qflow_instance::Event::Attempt {
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

fn two_fleets_racing_on_one_database_take_every_attempt_once(fresh: &Fresh) {
    let at = fresh.db();
    drop(seeded(&at, 30));
    let serve = |owner: &'static str| {
        let at = at.clone();
        std::thread::spawn(move || {
            let store = open(&at);
            let mut fleet = Fleet::new(store, Scenario::parse(ALWAYS_FAILS).unwrap(), owner.into());
            fleet.batch(4);
            fleet.serve(|_, _| {}).unwrap()
        })
    };
    let (a, b) = (serve("a:1"), serve("b:2"));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    assert_eq!(a.decisions + b.decisions, 180, "{a:?} {b:?}");
    let store = open(&at);
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

fn observations_count_pending_by_class_and_backlog_age_by_creation_time(fresh: &Fresh) {
    use qflow_store::stats::Count;
    let store = seeded(&fresh.db(), 9);
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
    // The window per minute ends with the latest decision's minute (1):
    // nine attempts in minute 0, nine in minute 1, each one request.
    let w = fleet.store().load_window(60).unwrap();
    assert_eq!((w.first_minute, w.last_minute), (Some(-58), Some(1)));
    let d = &w.dependencies[0];
    assert_eq!(d.attempts_per_minute.len(), 60);
    assert_eq!(d.attempts_per_minute[58..], [9, 9]);
    assert_eq!(d.requests_per_minute[58..], [9, 9]);
    assert_eq!((d.attempts(), d.requests()), (18, 18));
    // A window of one minute counts only the last one.
    let w = fleet.store().load_window(1).unwrap();
    assert_eq!(w.dependencies[0].attempts_per_minute, [9]);
}

/// Each instance's attempt instants, in seconds.
fn attempt_times(store: &Store, id: &str) -> Vec<i64> {
    store
        .history(id)
        .unwrap()
        .into_iter()
        .filter(|h| h.kind == "attempt")
        .map(|h| h.at_ms / 1000)
        .collect()
}

const DBG08_STARTS: [i64; 6] = [0, 60, 360, 1_860, 9_360, 46_860];

fn a_pause_holds_the_parks_of_its_class_or_dependency_through_restarts_and_unpausing_loses_nothing(
    fresh: &Fresh,
) {
    use qflow_store::contain::PauseKind;
    let at = fresh.db();
    let fleet_on = |store| {
        let mut f = Fleet::new(store, Scenario::parse(ALWAYS_FAILS).unwrap(), "t:1".into());
        f.batch(8);
        f
    };
    let mut fleet = fleet_on(seeded(&at, 20));
    // Every first attempt: twenty parks due at 60 s.
    while fleet.stats().decisions < 20 {
        fleet.step(|_, _| {}).unwrap();
    }
    // The operator pauses the class from another process.
    let mut operator = open(&at);
    let alice = Actor::new("alice@ops1").because(Some("  payments outage  "));
    let change = operator
        .pause(PauseKind::Class, "transient", 1, &alice)
        .unwrap();
    assert!(change.changed);
    assert_eq!((change.parks, change.due_now), (20, 0));
    // Paused again by someone else: the first record stands.
    let again = operator
        .pause(PauseKind::Class, "transient", 5, &Actor::new("bob"))
        .unwrap();
    assert!(!again.changed);
    assert_eq!(
        (again.by.as_deref(), again.reason.as_deref()),
        (Some("alice@ops1"), Some("payments outage"))
    );
    let held = fleet.serve(|_, _| {}).unwrap();
    assert_eq!(held.decisions, 20, "no re-drive while paused");
    // A restart changes nothing: the pause is in the store.
    drop(fleet);
    let mut fleet = fleet_on(open(&at));
    assert_eq!(fleet.serve(|_, _| {}).unwrap().decisions, 0);
    // Each park is still armed, due when it was.
    for row in fleet.store().instances().unwrap() {
        assert_eq!(row.status.as_str(), "waiting");
        let timers = fleet.store().timers(&row.id).unwrap();
        let armed: Vec<_> = timers.iter().filter(|t| t.armed).collect();
        assert_eq!(armed.len(), 1);
        assert_eq!((armed[0].due_ms, armed[0].attempt), (60_000, Some(2)));
    }
    let pauses = operator.pauses().unwrap();
    assert_eq!(pauses.len(), 1);
    assert_eq!(pauses[0].holding, 20);
    assert_eq!(
        (
            pauses[0].paused_ms,
            pauses[0].by.as_deref(),
            pauses[0].reason.as_deref()
        ),
        (1, Some("alice@ops1"), Some("payments outage"))
    );
    let id = &fleet.store().instances().unwrap()[0].id;
    let held = operator.containment(id).unwrap().held;
    assert_eq!(
        (held[0].paused_by.as_deref(), held[0].reason.as_deref()),
        (Some("alice@ops1"), Some("payments outage"))
    );

    // Swap the class for the dependency: still held.
    let lifted = operator
        .unpause(PauseKind::Class, "transient", 9, &Actor::new("ops"))
        .unwrap();
    assert!(lifted.changed);
    assert_eq!(lifted.by.as_deref(), Some("alice@ops1"), "the pause lifted");
    operator
        .pause(
            PauseKind::Dependency,
            "payments.charge",
            2,
            &Actor::new("ops"),
        )
        .unwrap();
    assert_eq!(fleet.serve(|_, _| {}).unwrap().decisions, 0);
    // A pause of something else holds nothing.
    operator
        .unpause(
            PauseKind::Dependency,
            "payments.charge",
            9,
            &Actor::new("ops"),
        )
        .unwrap();
    operator
        .pause(PauseKind::Dependency, "bank", 3, &Actor::new("ops"))
        .unwrap();
    operator
        .pause(PauseKind::Class, "rate-limited", 3, &Actor::new("ops"))
        .unwrap();
    let stats = fleet.serve(|_, _| {}).unwrap();
    assert_eq!(stats.decisions, 20 * 5);
    for row in fleet.store().instances().unwrap() {
        assert_eq!(row.status.as_str(), "failed");
        assert_eq!(attempt_times(fleet.store(), &row.id), DBG08_STARTS);
    }
}

fn fleets_racing_a_pause_never_redrive_a_held_park_and_unpausing_loses_nothing(fresh: &Fresh) {
    use qflow_store::contain::PauseKind;
    let at = fresh.db();
    // Enough work that the operator's pause lands while the fleets still
    // re-drive, however fast they run (60 were sometimes all done first).
    const N: usize = 240;
    drop(seeded(&at, N));
    let serve = |owner: &'static str| {
        let at = at.clone();
        std::thread::spawn(move || {
            let store = open(&at);
            let mut fleet = Fleet::new(store, Scenario::parse(ALWAYS_FAILS).unwrap(), owner.into());
            // One instance per commit: slow enough for the pause to land
            // while re-drives are under way.
            fleet.batch(1);
            fleet.serve(|_, _| {}).unwrap()
        })
    };
    let (a, b) = (serve("a:1"), serve("b:2"));
    // Pause once the fleets are re-driving.
    let mut operator = open(&at);
    let count = |s: &Store| {
        s.instances()
            .unwrap()
            .iter()
            .map(|r| attempt_times(s, &r.id).len())
            .sum::<usize>()
    };
    // Every first attempt, and re-drives under way.
    while count(&operator) < N + 60 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    operator
        .pause(PauseKind::Class, "transient", 1, &Actor::new("ops"))
        .unwrap();
    let paused_at = operator
        .instances()
        .unwrap()
        .iter()
        .flat_map(|r| operator.history(&r.id).unwrap())
        .map(|h| h.seq)
        .max()
        .unwrap();
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    // After the pause committed, no attempt consumed a retry timer (first
    // attempts, which no park holds, may still run).
    for row in operator.instances().unwrap() {
        for h in operator.history(&row.id).unwrap() {
            if h.seq > paused_at && h.kind == "attempt" {
                assert_eq!(h.timer_id, None, "{} re-driven after the pause", row.id);
            }
        }
    }
    let done = operator
        .instances()
        .unwrap()
        .iter()
        .filter(|r| r.status.is_terminal())
        .count();
    assert!(done < N, "the pause came before the end ({a:?} {b:?})");
    operator
        .unpause(PauseKind::Class, "transient", 9, &Actor::new("ops"))
        .unwrap();
    let mut fleet = Fleet::new(
        operator,
        Scenario::parse(ALWAYS_FAILS).unwrap(),
        "c:3".into(),
    );
    fleet.serve(|_, _| {}).unwrap();
    for row in fleet.store().instances().unwrap() {
        assert_eq!(row.status.as_str(), "failed", "{}", row.id);
        assert_eq!(
            attempt_times(fleet.store(), &row.id),
            DBG08_STARTS,
            "{}",
            row.id
        );
    }
}

fn a_redrive_decided_before_a_pause_is_refused_when_applied_after_it(fresh: &Fresh) {
    use qflow_store::contain::PauseKind;
    let at = fresh.db();
    let mut fleet = Fleet::new(
        seeded(&at, 1),
        Scenario::parse(ALWAYS_FAILS).unwrap(),
        "t:1".into(),
    );
    fleet.step(|_, _| {}).unwrap();
    let mut store = fleet.into_store();
    let id = store.instances().unwrap()[0].id.clone();
    let wall = crate::clock::system_now_ms();
    let one = std::slice::from_ref(&id);
    assert_eq!(store.claim_many(one, "me:1", wall).unwrap(), one);
    let facts = store.facts(&id).unwrap();
    let timer = facts.timers[0].id;
    let graph = Graph::compile(&qflow_model::load(DBG08).unwrap()).unwrap();
    let ev = qflow_instance::Event::Attempt {
        node: "charge".into(),
        outcome: TaskOutcome::Ok(BTreeMap::new()),
        timer: Some(timer),
    };
    let t = decide::decide(&graph, &facts.as_facts(&id), &ev, 60_000);
    // The pause commits between the read and the apply.
    open(&at)
        .pause(
            PauseKind::Dependency,
            "payments.charge",
            1,
            &Actor::new("ops"),
        )
        .unwrap();
    let pending = [Pending {
        instance: &id,
        version: facts.version,
        transition: &t,
        at_ms: 60_000,
    }];
    let results = store.apply_many("me:1", &pending, &[], wall).unwrap();
    let Err(e) = &results[0] else {
        panic!("applied: {results:?}")
    };
    assert!(matches!(e, StoreError::Paused { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("qflow unpause --dependency payments.charge"),
        "{e}"
    );
    assert_eq!(
        store.facts(&id).unwrap().version,
        facts.version,
        "nothing written"
    );
    // Facts read now say the park is held: a driver sees nothing to do.
    assert!(store.facts(&id).unwrap().held.contains(&timer));
}

fn a_quarantined_instance_is_never_claimed_until_released(fresh: &Fresh) {
    let at = fresh.db();
    let mut store = seeded(&at, 3);
    let ids: Vec<String> = store
        .instances()
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    let carol = Actor::new("carol").because(Some("replays a bad order"));
    let change = store.quarantine(&ids[1], 1, &carol).unwrap();
    assert!(change.changed);
    let again = store.quarantine(&ids[1], 2, &Actor::new("dave")).unwrap();
    assert!(!again.changed, "once is enough");
    assert_eq!(
        again.by.as_deref(),
        Some("carol"),
        "the first record stands"
    );
    let held = store.containment(&ids[1]).unwrap();
    assert_eq!(
        (
            held.quarantined_ms,
            held.quarantined_by.as_deref(),
            held.quarantine_reason.as_deref()
        ),
        (Some(1), Some("carol"), Some("replays a bad order"))
    );
    let wall = crate::clock::system_now_ms();
    let err = store.claim(&ids[1], "me:1", wall).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("qflow release {}", ids[1])),
        "{err}"
    );
    let mut fleet = Fleet::new(store, Scenario::parse(ALWAYS_FAILS).unwrap(), "t:1".into());
    let stats = fleet.serve(|_, _| {}).unwrap();
    assert_eq!(stats.decisions, 12, "the two others, six attempts each");
    assert!(attempt_times(fleet.store(), &ids[1]).is_empty());
    let mut store = fleet.into_store();
    let q = store.quarantined().unwrap();
    assert_eq!(q.len(), 1);
    assert_eq!((q[0].by.as_deref(), q[0].at_ms), (Some("carol"), 1));
    let released = store
        .release_quarantine(&ids[1], 9, &Actor::new("ops"))
        .unwrap();
    assert!(released.changed);
    assert_eq!(
        released.by.as_deref(),
        Some("carol"),
        "the quarantine lifted"
    );
    let after = store.containment(&ids[1]).unwrap();
    assert_eq!((after.quarantined_ms, after.quarantined_by), (None, None));
    let mut fleet = Fleet::new(store, Scenario::parse(ALWAYS_FAILS).unwrap(), "t:1".into());
    fleet.serve(|_, _| {}).unwrap();
    assert_eq!(attempt_times(fleet.store(), &ids[1]), DBG08_STARTS);
    assert!(matches!(
        fleet.into_store().quarantine("nope", 1, &Actor::new("ops")),
        Err(StoreError::NoInstance(_))
    ));
}
