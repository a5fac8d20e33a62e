//! The cost of a decision does not depend on how many instances the store
//! holds. Every statement a replica runs while serving a fleet (pick, claim,
//! read, decide, apply, release) is counted in SQLite's virtual-machine
//! steps, for a fleet of 20 and one of 200: no statement may take more steps
//! in the larger one. A full scan, or an index range over every parked
//! instance's timers, is what made each decision cost time in proportion to
//! the instances parked.

use std::collections::BTreeMap;

use super::Replica;
use crate::decide;
use crate::fleet::Fleet;
use crate::graph::Graph;
use crate::Scenario;
use qflow_store::{plans, Store};

const DBG08: &str = include_str!("../../../samples/dbg08-long-outage.bpmn");
const ALWAYS_FAILS: &str = include_str!("../../../samples/scenarios/dbg08-long-outage.json");

/// Serve `n` always-failing DBG-08 instances to exhaustion (with the fleet
/// driver, or one replica), with or without the fleet indexes: the most
/// steps one run of each statement took.
fn steps_serving(n: usize, indexes: bool, fleet: bool) -> BTreeMap<String, i64> {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("fleet.db")).unwrap();
    if !indexes {
        store
            .conn()
            .execute_batch(
                "DROP INDEX instances_by_status; DROP INDEX timers_by_instance; DROP INDEX outbox_by_instance;
                 DROP INDEX correlations_by_instance; DROP INDEX incidents_by_instance;",
            )
            .unwrap();
    }
    let defs = qflow_model::load(DBG08).unwrap();
    let graph = Graph::compile(&defs).unwrap();
    let scenario = Scenario::parse(ALWAYS_FAILS).unwrap();
    let dep = store.deploy(&graph.process_id, DBG08, 0).unwrap();
    let start = decide::start(&graph, &scenario.variables, 0);
    for _ in 0..n {
        store.start_instance(&dep, &start, 0).unwrap();
    }
    plans::take_steps();
    store.count_steps();
    let decisions = if fleet {
        let mut f = Fleet::new(store, scenario, "plans:1".into());
        f.batch(8);
        f.serve(|_, _| {}).unwrap().decisions
    } else {
        let mut replica = Replica::new(store, scenario, "plans:1".into());
        replica.serve(|_, _| {}).unwrap().decisions
    };
    assert_eq!(decisions, 6 * n as u64, "six attempts per instance");
    plans::take_steps()
}

/// Statements that took more steps per run serving 200 instances than 20
/// (beyond a small allowance for rows of the instance itself).
fn growing(indexes: bool, fleet: bool) -> Vec<String> {
    // The counted steps are one table for the test binary: the tests that
    // count take turns.
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let small = steps_serving(20, indexes, fleet);
    let large = steps_serving(200, indexes, fleet);
    assert!(large.len() > 10, "statements counted: {large:?}");
    large
        .iter()
        .filter(|(sql, &steps)| steps > small.get(*sql).copied().unwrap_or(0) * 3 / 2 + 20)
        .map(|(sql, steps)| {
            format!(
                "{steps:>6} steps (20 instances: {:?})  {sql}",
                small.get(sql)
            )
        })
        .collect()
}

#[test]
fn no_statement_of_a_replicas_loop_costs_more_in_a_larger_fleet() {
    let grown = growing(true, false);
    assert!(
        grown.is_empty(),
        "{} statement(s) grow with the fleet:\n{}",
        grown.len(),
        grown.join("\n")
    );
    // Without the fleet indexes (as before schema 4) the same loop read
    // every parked instance's timers per decision: the check sees what it
    // looks for.
    let before = growing(false, false);
    assert!(
        before
            .iter()
            .any(|s| s.contains("FROM timers WHERE instance_id")),
        "{before:#?}"
    );
}

#[test]
fn no_statement_of_the_fleet_drivers_loop_costs_more_in_a_larger_fleet() {
    let grown = growing(true, true);
    assert!(
        grown.is_empty(),
        "{} statement(s) grow with the fleet:\n{}",
        grown.len(),
        grown.join("\n")
    );
}
