//! Repair by migration in the console: attach mode lists the deployments,
//! a FAILED instance says why it failed and what a repair would do, `m`
//! plans the migration (target, suggested mapping, budget) and applies it
//! after confirmation; the attached console then steps it to completion.
//! On a SQLite file and on a fresh PostgreSQL database (`support::stores`).

use std::path::PathBuf;
use std::process::{Command, Output};

use qflow_engine::runtime::snapshot::Snapshot;

mod support;
use support::stores::{open, Fresh};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn qflow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
        .current_dir(repo())
        .args(args)
        .output()
        .expect("qflow runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// A new database holding one FAILED long-outage instance (deployment 1).
fn failed_long_outage(fresh: &Fresh) -> String {
    let db = fresh.db();
    let o = qflow(&["run", "samples/dbg08-long-outage.bpmn", "--db", &db]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    db
}

/// The console's last frame after these keys.
fn console(args: &[&str], keys: &str) -> String {
    let o = qflow(&[args, &["--headless", keys, "--size", "160x40"]].concat());
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).to_string()
}

crate::on_both_stores!(
    the_console_shows_why_and_the_repair_then_migrates_after_confirmation,
    the_schedule_after_a_repair_that_keeps_the_burned_budget_counts_it,
);

/// A repair that keeps the burned budget moves 6 spent attempts of `charge`
/// onto `chargeCard` (8 attempts). The runtime runs #7 next; the Schedule
/// panel used to read its own history under the new node name and say
/// "0/8 attempts" with a fresh #1…#8, then "1/8" after #7 ran.
fn the_schedule_after_a_repair_that_keeps_the_burned_budget_counts_it(fresh: &Fresh) {
    let db = failed_long_outage(fresh);
    let o = qflow(&[
        "migrate",
        "dbg08-1",
        "--to",
        "samples/dbg08-repaired.bpmn",
        "--map",
        "charge=chargeCard",
        "--db",
        &db,
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout)
        .contains("6 attempts burned (carried), 2 of 8 attempts left"));
    let frame = console(&["console", "--db", &db], "<enter>");
    assert!(
        frame.contains("Schedule · chargeCard · 6/8 attempts"),
        "{frame}"
    );
    assert!(frame.contains("#7 +13h 1m · due now"), "{frame}");
    assert!(frame.contains("6 burned (carried)"), "{frame}");
    assert!(
        !frame.contains("#1 +13h 1m"),
        "no fresh #1 is planned: {frame}"
    );
    let o = qflow(&["resume", "dbg08-1", "--db", &db]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let frame = console(&["console", "--db", &db], "<enter>");
    assert!(
        frame.contains("Schedule · chargeCard · 7/8 attempts"),
        "{frame}"
    );
    assert!(frame.contains("#7 +13h 1m ✓ succeeded"), "{frame}");
}

fn the_console_shows_why_and_the_repair_then_migrates_after_confirmation(fresh: &Fresh) {
    let db = failed_long_outage(fresh);
    let o = qflow(&["deploy", "samples/dbg08-repaired.bpmn", "--db", &db]);
    assert_eq!(code(&o), 0);
    // Attach mode lists the deployments as well as the instances.
    let list = console(&["console", "--db", &db], "");
    assert!(list.contains("Deployments"), "{list}");
    assert!(list.contains("samples/dbg08-repaired.bpmn"), "{list}");
    assert!(list.contains("1 failed"), "{list}");
    // Opening the FAILED instance says why, and what a repair would do.
    let opened = console(&["console", "--db", &db], "<enter>");
    assert!(
        opened.contains("FAILED at charge: PROVIDER_DOWN (exhausted)"),
        "{opened}"
    );
    assert!(
        opened.contains(
            "a repair onto deployment 2 would move charge → chargeCard, 2 of 8 attempts left"
        ),
        "{opened}"
    );
    // m: the target, then the plan with the suggested mapping, before anything changes.
    let planned = console(&["console", "--db", &db], "<enter>m1<enter>");
    assert!(
        planned.contains("Apply the migration of dbg08-1 onto deployment 2"),
        "{planned}"
    );
    assert!(
        planned.contains("attempts.charge = 6 → attempts.chargeCard"),
        "{planned}"
    );
    assert!(planned.contains("mapping: charge=chargeCard"), "{planned}");
    let store = open(&db);
    assert_eq!(store.instance("dbg08-1").unwrap().unwrap().deployment_id, 1);
    drop(store);
    // Reset the budget (plans again), then apply: the result is on screen.
    let applied = console(
        &["console", "--db", &db],
        "<enter>m1<enter>2<enter>1<enter>",
    );
    assert!(
        applied.contains("migrated dbg08-1 onto deployment 2: RUNNING"),
        "{applied}"
    );
    let store = open(&db);
    let row = store.instance("dbg08-1").unwrap().unwrap();
    assert_eq!(row.deployment_id, 2);
    let snap = Snapshot::decode(&row.snapshot).unwrap();
    assert!(!snap.has_attempts("chargeCard"), "the budget was reset");
    drop(store);
    // The attached console steps the repaired instance to completion.
    let opened = console(&["console", "--db", &db], "<enter>");
    assert!(
        opened.contains("dbg08-1: RUNNING · space steps it (no scenario: tasks succeed)"),
        "{opened}"
    );
    assert!(opened.contains(" m migrate "), "m in the footer: {opened}");
    let done = console(
        &["console", "--db", &db],
        "<enter><space><space><space><space>",
    );
    assert!(done.contains("COMPLETED"), "{done}");
    let store = open(&db);
    assert_eq!(
        store.instance("dbg08-1").unwrap().unwrap().status,
        qflow_engine::instance::Status::Completed
    );
    drop(store);
    let o = qflow(&["retire", "1", "--db", &db]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
}
