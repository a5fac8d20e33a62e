//! The console's fleet list on an attached database, through the binary
//! (`--headless` keys, the last frame on stdout): End/Home/PageUp/PageDown/G
//! move the selection, `/` filters the rows, `?` shows the list's own keys,
//! the Deployments columns line up under their header, and `m` on the list
//! repairs every FAILED instance of the selected row's deployment (as
//! `qflow migrate --all-failed-of`), the suggested deployment selected in
//! its picker and every plan shown before anything moves.

use std::path::PathBuf;
use std::process::{Command, Output};

mod support;

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

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A database with four FAILED long-outage instances and one completed
/// instance of deployment 1, then a deployment of another process (2) and
/// the repaired model (3): the suggested repair target is 3, not the first
/// one listed.
fn fleet(dir: &std::path::Path) -> String {
    let db = dir.join("fleet.db").to_str().unwrap().to_string();
    for _ in 0..4 {
        ok(&qflow(&[
            "run",
            "samples/dbg08-long-outage.bpmn",
            "--db",
            &db,
        ]));
    }
    let ok_scenario = dir.join("ok.json");
    std::fs::write(&ok_scenario, r#"{"tasks": {}}"#).unwrap();
    ok(&qflow(&[
        "run",
        "samples/dbg08-long-outage.bpmn",
        "--db",
        &db,
        "--scenario",
        ok_scenario.to_str().unwrap(),
    ]));
    ok(&qflow(&["deploy", "samples/run-order.bpmn", "--db", &db]));
    ok(&qflow(&[
        "deploy",
        "samples/dbg08-repaired.bpmn",
        "--db",
        &db,
    ]));
    db
}

/// The console's last frame after these keys.
fn frame(db: &str, keys: &str) -> String {
    let o = qflow(&[
        "console",
        "--db",
        db,
        "--headless",
        keys,
        "--size",
        "120x22",
    ]);
    ok(&o);
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// The id on the selected row (`▸`).
fn selected(frame: &str) -> String {
    let line = frame
        .lines()
        .find(|l| l.contains('▸'))
        .unwrap_or_else(|| panic!("no selected row:\n{frame}"));
    line.split_whitespace()
        .find(|w| w.starts_with("dbg08-"))
        .unwrap_or_else(|| panic!("no id on the selected row: {line}"))
        .to_string()
}

#[test]
fn the_fleet_list_moves_by_page_and_end_filters_and_has_its_own_help() {
    let dir = tempfile::tempdir().unwrap();
    let db = fleet(dir.path());
    // FAILED first (1 to 4), then the completed one (5).
    assert_eq!(selected(&frame(&db, "")), "dbg08-1");
    assert_eq!(selected(&frame(&db, "G")), "dbg08-5");
    assert_eq!(selected(&frame(&db, "<end>")), "dbg08-5");
    assert_eq!(selected(&frame(&db, "Gg")), "dbg08-1");
    assert_eq!(selected(&frame(&db, "G<home>")), "dbg08-1");
    // A page is what the list shows (here every row): the last, and back.
    assert_eq!(selected(&frame(&db, "<pgdn>")), "dbg08-5");
    assert_eq!(selected(&frame(&db, "<pgdn><pgup>")), "dbg08-1");

    // `/` filters as it is typed; the title counts what stays.
    let filtered = frame(&db, "/completed");
    assert!(
        filtered.contains("Instances · /completed▏ · 1 of 5"),
        "{filtered}"
    );
    assert_eq!(
        selected(&filtered),
        "dbg08-5",
        "the selection follows the filter"
    );
    assert!(!filtered.contains("dbg08-1 "), "{filtered}");
    let kept = frame(&db, "/exhausted dbg08-3<enter>");
    assert!(
        kept.contains("Instances · /exhausted dbg08-3 · 1 of 5"),
        "{kept}"
    );
    assert!(
        kept.contains("filter \"exhausted dbg08-3\": 1 of 5 instances"),
        "{kept}"
    );
    assert_eq!(selected(&kept), "dbg08-3");
    let none = frame(&db, "/nosuchthing<enter>");
    assert!(
        none.contains("no instance holds every word of the filter"),
        "{none}"
    );
    let cleared = frame(&db, "/completed<enter><esc>");
    assert!(cleared.contains("Instances · 5 · enter opens"), "{cleared}");
    assert!(cleared.contains("dbg08-1 "), "{cleared}");
    // enter on a filtered list opens the row the filter kept.
    let opened = frame(&db, "/dbg08-4<enter><enter>");
    assert!(opened.contains("dbg08-4"), "{opened}");
    assert!(opened.contains("FAILED at charge"), "{opened}");

    // `?` on the list: the list's keys, not an instance's.
    let help = frame(&db, "?");
    assert!(help.contains("keys of the instance list"), "{help}");
    assert!(help.contains("select the last instance"), "{help}");
    assert!(help.contains("repair every FAILED instance"), "{help}");
    assert!(!help.contains("take the next decision"), "{help}");
    assert!(!help.contains("poison"), "{help}");

    // The Deployments columns line up under their header.
    let list = frame(&db, "");
    let rows: Vec<&str> = list
        .lines()
        .skip_while(|l| !l.contains("Deployments"))
        .skip(1)
        .take(4)
        .collect();
    assert!(
        rows[0].contains("id") && rows[0].contains("process"),
        "{list}"
    );
    let col = |l: &str, word: &str| l.find(word).unwrap_or_else(|| panic!("{word} in {l}"));
    let model_col = col(rows[0], "model");
    let state_col = col(rows[0], "state");
    for (row, model) in rows[1..].iter().zip([
        "samples/dbg08-long-outage.bpmn",
        "samples/run-order.bpmn",
        "samples/dbg08-repaired.bpmn",
    ]) {
        assert_eq!(col(row, model), model_col, "{list}");
        assert_eq!(col(row, "active"), state_col, "{list}");
    }
}

#[test]
fn m_on_the_list_repairs_every_failed_instance_of_a_deployment_after_its_plans() {
    let dir = tempfile::tempdir().unwrap();
    let db = fleet(dir.path());
    // The picker: onto which deployment, the suggested one (3, the newest
    // of the same process) selected rather than the first listed (2).
    let picker = frame(&db, "m");
    assert!(
        picker.contains("Repair every FAILED instance of deployment 1 onto"),
        "{picker}"
    );
    let chosen = picker
        .lines()
        .find(|l| l.contains("▸ ") && l.contains(" deployment ") && !l.contains("Repair"))
        .unwrap_or_else(|| panic!("{picker}"));
    assert!(chosen.contains("deployment 3"), "{chosen}");
    assert!(chosen.contains("suggested"), "{chosen}");
    // An open instance's `m` selects the same suggestion.
    let single = frame(&db, "<enter>m");
    assert!(single.contains("Migrate onto"), "{single}");
    let chosen = single
        .lines()
        .find(|l| l.contains("▸ 2 deployment 3"))
        .unwrap_or_else(|| panic!("{single}"));
    assert!(chosen.contains("suggested"), "{chosen}");
    // The plans, before anything moves: four alike, one group.
    let planned = frame(&db, "m<enter>");
    assert!(
        planned
            .contains("Apply the repair of 4 FAILED instances of deployment 1 onto deployment 3"),
        "{planned}"
    );
    assert!(
        planned.contains("every plan checked, none refused (4 in all)"),
        "{planned}"
    );
    assert!(
        planned.contains("dbg08-1, dbg08-2, dbg08-3 and 1 more: FAILED →"),
        "{planned}"
    );
    assert!(planned.contains("mapping: charge=chargeCard"), "{planned}");
    let store = support::stores::open(&db);
    assert!(store
        .instances()
        .unwrap()
        .iter()
        .all(|r| r.deployment_id == 1));
    drop(store);
    // Cancel changes nothing; apply moves every FAILED one, and only those.
    let cancelled = frame(&db, "m<enter>3<enter>");
    assert!(cancelled.contains("migration cancelled"), "{cancelled}");
    let applied = frame(&db, "m<enter><enter>");
    assert!(
        applied.contains("repaired 4 of 4 FAILED instances of deployment 1 onto deployment 3"),
        "{applied}"
    );
    let store = support::stores::open(&db);
    for r in store.instances().unwrap() {
        let want = if r.id == "dbg08-5" { 1 } else { 3 };
        assert_eq!(r.deployment_id, want, "{}", r.id);
    }
    drop(store);
    // Nothing FAILED is left on deployment 1: the repair says so.
    let again = frame(&db, "G");
    assert_eq!(selected(&again), "dbg08-5");
    let nothing = frame(&db, "Gm<enter>");
    assert!(
        nothing.contains("deployment 1 has no FAILED instance: nothing to repair"),
        "{nothing}"
    );
}

#[test]
fn the_fleet_panel_counts_the_decisions_serve_took_late() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("late.db").to_str().unwrap().to_string();
    ok(&qflow(&[
        "run",
        "samples/dbg08-long-outage.bpmn",
        "--db",
        &db,
    ]));
    // Tall enough for the fleet panel above the lists.
    let tall = |db: &str| {
        let o = qflow(&["console", "--db", db, "--headless", "", "--size", "120x36"]);
        ok(&o);
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let on_time = tall(&db);
    let line = |f: &str| {
        f.lines()
            .find(|l| l.contains("late decisions"))
            .unwrap_or_else(|| panic!("no late decisions line:\n{f}"))
            .to_string()
    };
    assert!(line(&on_time).contains("none"), "{on_time}");
    // What `qflow serve` records when it takes a due decision late.
    let store = support::stores::open(&db);
    store
        .record_late("dbg08-1", Some("charge"), "timer", 1_000, 1_450)
        .unwrap();
    store
        .record_late("dbg08-1", Some("charge"), "attempt", 2_000, 2_120)
        .unwrap();
    drop(store);
    let late = tall(&db);
    assert!(
        line(&late).contains("2 (worst 450 ms late, the last 120 ms)"),
        "{late}"
    );
}

#[test]
fn the_fleet_panel_shows_each_breaker_and_its_last_move() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("breaker.db").to_str().unwrap().to_string();
    let handlers = dir.path().join("handlers.toml");
    std::fs::write(
        &handlers,
        "[tasks.\"payments.charge\"]\ncommand = \"x\"\n[tasks.\"payments.charge\".breaker]\nconsecutive_failures = 3\nopen_for = \"5m\"\ncanaries = 1\n",
    )
    .unwrap();
    // A simulated outage whose breaker opened and closed, kept in the store.
    ok(&qflow(&[
        "simulate",
        "samples/dbg08-long-outage.bpmn",
        "--jobs",
        "10",
        "--outage",
        "20m",
        "--handlers",
        handlers.to_str().unwrap(),
        "--db",
        &db,
    ]));
    let o = qflow(&["console", "--db", &db, "--headless", "", "--size", "200x40"]);
    ok(&o);
    let f = String::from_utf8_lossy(&o.stdout);
    let line = f
        .lines()
        .find(|l| l.contains("breakers"))
        .unwrap_or_else(|| panic!("no breakers line:\n{f}"));
    assert!(line.contains("payments.charge closed (opened"), "{line}");
    assert!(
        line.contains("half-open -> closed: 1 of 1 canaries succeeded"),
        "{line}"
    );
}
