//! Key sequences fed to the App over the real engine backend; the checks
//! read the store, not the screen: what the keys did is what was persisted.

mod common;

use common::{engine, history_of, snapshot, type_keys};
use qflow_engine::runtime::decide::Status;
use qflow_tui::engine_backend::EngineBackend;

const DBG08: &str = "samples/dbg08-charge.bpmn";
const ALWAYS_FAILING: &str = "samples/scenarios/dbg08-long-outage.json";

fn attempts(be: &EngineBackend) -> Vec<(i64, u32, Option<String>)> {
    history_of(be, "attempt")
        .into_iter()
        .map(|h| (h.at_ms / 1000, h.attempt.unwrap_or(0), h.code))
        .collect()
}

#[test]
fn space_steps_dbg08_to_exhaustion_on_the_documented_schedule() {
    let (mut app, mut be) = engine(DBG08, Some(ALWAYS_FAILING));
    type_keys(&mut app, &mut be, "      ");
    let times: Vec<i64> = attempts(&be).iter().map(|a| a.0).collect();
    assert_eq!(times, vec![0, 60, 360, 1860, 9360, 46860]);
    let (status, snap) = snapshot(&be);
    assert_eq!(status, Status::Failed);
    assert_eq!(snap.attempts("charge"), 6);
    let f = snap.get("failure").unwrap();
    assert_eq!(f["code"], "PROVIDER_DOWN");
    assert_eq!(f["reason"], "exhausted");
    // A seventh space changes nothing in the store.
    let before = be
        .store()
        .transitions(be.instance_id().unwrap())
        .unwrap()
        .len();
    type_keys(&mut app, &mut be, " ");
    assert_eq!(
        be.store()
            .transitions(be.instance_id().unwrap())
            .unwrap()
            .len(),
        before
    );
}

#[test]
fn t_advances_time_and_decides_only_what_falls_due() {
    let (mut app, mut be) = engine(DBG08, Some(ALWAYS_FAILING));
    type_keys(&mut app, &mut be, " ");
    // +30s: the retry at +1m is not due; nothing runs.
    type_keys(&mut app, &mut be, "t1\n");
    assert_eq!(attempts(&be).len(), 1);
    assert_eq!(app.view.as_ref().unwrap().now_ms, 30_000);
    // +5m more (now +5m30s): the retry at +1m fires at +1m exactly, the next (+6m) does not.
    type_keys(&mut app, &mut be, "t2\n");
    let a = attempts(&be);
    assert_eq!(a.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 60]);
    assert_eq!(app.view.as_ref().unwrap().now_ms, 330_000);
    // A custom ISO duration: PT30S reaches +6m exactly, where attempt 3 runs.
    type_keys(&mut app, &mut be, "t5\nPT30S<");
    app.handle(&mut be, common::key('\u{8}'));
    type_keys(&mut app, &mut be, "\n");
    assert_eq!(
        attempts(&be).iter().map(|x| x.0).collect::<Vec<_>>(),
        vec![0, 60, 360]
    );
}

#[test]
fn f_permanent_fails_at_once_with_the_picked_code() {
    let (mut app, mut be) = engine(DBG08, None);
    // custom code, permanent
    type_keys(&mut app, &mut be, "f4\nINVALID_INPUT\n2\n");
    let (status, snap) = snapshot(&be);
    assert_eq!(status, Status::Failed);
    let f = snap.get("failure").unwrap();
    assert_eq!(f["code"], "INVALID_INPUT");
    assert_eq!(f["reason"], "non-retryable");
    assert_eq!(attempts(&be).len(), 1);
    // f on a FAILED instance is refused, nothing persisted.
    let n = be
        .store()
        .transitions(be.instance_id().unwrap())
        .unwrap()
        .len();
    type_keys(&mut app, &mut be, "f1\n1\n");
    assert_eq!(
        be.store()
            .transitions(be.instance_id().unwrap())
            .unwrap()
            .len(),
        n
    );
    assert!(
        app.report.message.contains("FAILED"),
        "{}",
        app.report.message
    );
}

#[test]
fn f_transient_then_o_on_a_parked_task_skips_to_its_retry_and_succeeds() {
    let (mut app, mut be) = engine(DBG08, None);
    type_keys(&mut app, &mut be, "f1\n1\n");
    assert_eq!(snapshot(&be).1.attempts("charge"), 1);
    // The task is parked until +1m: `o` runs that attempt (time skips to it).
    type_keys(&mut app, &mut be, "o");
    let a = attempts(&be);
    assert_eq!(
        a.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        vec![(0, 1), (60, 2)]
    );
    type_keys(&mut app, &mut be, " ");
    let (status, snap) = snapshot(&be);
    assert_eq!(status, Status::Completed);
    assert!(
        snap.get("attempts.charge").is_none(),
        "counters leave with the task"
    );
}

#[test]
fn rate_limited_uses_the_providers_retry_after() {
    let (mut app, mut be) = engine(DBG08, None);
    // code 1 (PROVIDER_DOWN… no scenario: common codes), rate-limited, 1h
    type_keys(&mut app, &mut be, "f3\n3\n");
    type_keys(&mut app, &mut be, "3\n");
    let id = be.instance_id().unwrap().to_string();
    let timers = be.store().timers(&id).unwrap();
    let armed: Vec<_> = timers.iter().filter(|t| t.armed).collect();
    assert_eq!(armed.len(), 1);
    assert_eq!(
        armed[0].due_ms, 3_600_000,
        "retry-after 1h (no maxDelay on DBG-08)"
    );
}

#[test]
fn unknown_outcome_then_capital_r_resolves_from_the_store() {
    let (mut app, mut be) = engine(DBG08, None);
    type_keys(&mut app, &mut be, "f1\n4\n");
    let (status, snap) = snapshot(&be);
    assert_eq!(status, Status::Waiting);
    assert!(snap.get("reconcile.charge").is_some());
    let id = be.instance_id().unwrap().to_string();
    assert!(be
        .store()
        .incidents(&id)
        .unwrap()
        .iter()
        .any(|i| i.kind.as_str() == "reconciliation" && i.closed_ms.is_none()));
    // space does not retry blindly
    type_keys(&mut app, &mut be, " ");
    assert_eq!(attempts(&be).len(), 1);
    assert!(
        app.report.message.contains("press R"),
        "{}",
        app.report.message
    );
    type_keys(&mut app, &mut be, "R1\n");
    assert_eq!(snapshot(&be).0, Status::Running);
    type_keys(&mut app, &mut be, " ");
    assert_eq!(snapshot(&be).0, Status::Completed);
    assert!(be
        .store()
        .incidents(&id)
        .unwrap()
        .iter()
        .all(|i| i.closed_ms.is_some()));
}

#[test]
fn resolve_retry_runs_the_next_attempt_within_the_budget() {
    let (mut app, mut be) = engine(DBG08, Some(ALWAYS_FAILING));
    type_keys(&mut app, &mut be, "f1\n4\nR3\n");
    type_keys(&mut app, &mut be, " ");
    let a = attempts(&be);
    assert_eq!(a.len(), 2, "{a:?}");
    assert_eq!(a[1].1, 2);
}

#[test]
fn a_console_database_resumes_where_it_stopped_and_attaches_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("console.db");
    let root = common::repo();
    {
        // The model as a user names it (tests run in tui/): the deployment
        // records the file as given, and the list shows it.
        let mut be = EngineBackend::start(
            &std::path::Path::new("..").join(DBG08),
            Some(&root.join(ALWAYS_FAILING)),
            Some(&db),
        )
        .unwrap();
        let mut app = qflow_tui::App::new();
        app.refresh(&mut be);
        type_keys(&mut app, &mut be, "   q");
        assert!(app.quit);
    }
    {
        let mut be = EngineBackend::start(
            &root.join(DBG08),
            Some(&root.join(ALWAYS_FAILING)),
            Some(&db),
        )
        .unwrap();
        assert!(be.opening().unwrap().message.contains("resumed"));
        let mut app = qflow_tui::App::new();
        app.refresh(&mut be);
        assert_eq!(
            app.view.as_ref().unwrap().now_ms,
            360_000,
            "time continues from the last decision"
        );
        type_keys(&mut app, &mut be, "   ");
        assert_eq!(snapshot(&be).0, Status::Failed);
    }
    // A second instance, completed, so the list has an order to check.
    {
        let mut be = EngineBackend::start(&root.join(DBG08), None, Some(&db)).unwrap();
        let mut app = qflow_tui::App::new();
        app.refresh(&mut be);
        type_keys(&mut app, &mut be, "   ");
        assert_eq!(snapshot(&be).0, Status::Completed);
    }
    let mut be = EngineBackend::attach(&db).unwrap();
    be.set_label("console.db");
    let mut app = qflow_tui::App::attached();
    app.refresh(&mut be);
    let ids: Vec<(&str, qflow_tui::view::Status)> =
        app.list.iter().map(|r| (r.id.as_str(), r.status)).collect();
    assert_eq!(
        ids[0].1,
        qflow_tui::view::Status::Failed,
        "FAILED first: {ids:?}"
    );
    assert_eq!(app.list[0].reason.as_deref(), Some("exhausted"));
    let n = be.store().transitions(&app.list[0].id).unwrap().len();
    type_keys(&mut app, &mut be, "\n");
    let v = app.view.as_ref().unwrap();
    assert!(v.read_only);
    assert_eq!(v.schedule().unwrap().done.len(), 6);
    // Acting keys do nothing to an attached database.
    type_keys(&mut app, &mut be, " fo");
    assert_eq!(be.store().transitions(&app.list[0].id).unwrap().len(), n);
    common::golden(
        "attach-failed-instance",
        &qflow_tui::ui::render_text(&app, 100, 30),
    );
    type_keys(&mut app, &mut be, "\x1b");
    common::golden("attach-list", &qflow_tui::ui::render_text(&app, 80, 12));
}

#[test]
fn every_sample_takes_every_key_without_error() {
    let root = common::repo();
    let mut samples: Vec<_> = std::fs::read_dir(root.join("samples"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "bpmn"))
        .collect();
    samples.sort();
    assert!(samples.len() >= 5, "{samples:?}");
    let mut ran = 0;
    for s in samples {
        let rel = s.strip_prefix(&root).unwrap().display().to_string();
        let mut be = match EngineBackend::start(&s, None, None) {
            Ok(be) => be,
            Err(e) => {
                // Channel calls are refused by the runtime for now,
                // with a clear message; every other sample must run.
                assert!(e.contains("channel calls are not executed"), "{rel}: {e}");
                continue;
            }
        };
        ran += 1;
        let mut app = qflow_tui::App::new();
        app.refresh(&mut be);
        for keys in [
            " ",
            "t2\n",
            "f1\n1\n",
            "o",
            "r",
            "p",
            "R1\n",
            "          ",
            "\t\tjjj?",
            "?",
            "t4",
        ] {
            type_keys(&mut app, &mut be, keys);
            assert!(
                !app.report.message.starts_with("error:"),
                "{rel} after {keys:?}: {}",
                app.report.message
            );
            for (w, h) in [(100, 30), (60, 15), (20, 5)] {
                qflow_tui::ui::render_text(&app, w, h);
            }
        }
    }
    assert!(ran >= 8, "only {ran} samples ran");
}

/// The operating view: an attached database opens on the fleet's
/// observations and attempts per minute above the lists; a pause made
/// elsewhere shows on the next refresh.
#[test]
fn an_attached_fleet_opens_on_its_observations_and_attempts_per_minute() {
    use qflow_engine::runtime::fleet::Fleet;
    use qflow_engine::runtime::graph::Graph;
    use qflow_engine::runtime::{decide, Scenario};
    use qflow_engine::store::contain::{Actor, PauseKind};
    use qflow_engine::store::Store;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fleet.db");
    let root = common::repo();
    let source = std::fs::read_to_string(root.join("samples/dbg08-long-outage.bpmn")).unwrap();
    let scenario = std::fs::read_to_string(root.join(ALWAYS_FAILING)).unwrap();
    {
        let mut store = Store::open(&db).unwrap();
        let defs = qflow_engine::load(&source).unwrap();
        let graph = Graph::compile(&defs).unwrap();
        let dep = store.deploy(&graph.process_id, &source, 0).unwrap();
        let start = decide::start(&graph, &Default::default(), 0);
        store.start_instances(&dep, &start, 0, 12).unwrap();
        // Four instances to exhaustion while the rest are set aside, then
        // every first attempt of the rest and their re-drive at 60 s.
        let rest: Vec<String> = (5..=12).map(|n| format!("dbg08-{n}")).collect();
        for id in &rest {
            store.quarantine(id, 1, &Actor::new("ops")).unwrap();
        }
        let mut fleet = Fleet::new(store, Scenario::parse(&scenario).unwrap(), "t:1".into());
        fleet.serve(|_, _| {}).unwrap();
        let mut store = fleet.into_store();
        for id in &rest {
            store.release_quarantine(id, 9, &Actor::new("ops")).unwrap();
        }
        let mut fleet = Fleet::new(store, Scenario::parse(&scenario).unwrap(), "t:1".into());
        while fleet.stats().decisions < 16 {
            // (first attempts, then the re-drives due at 60 s)
            fleet.step(|_, _| {}).unwrap();
        }
    }
    let mut be = EngineBackend::attach(&db).unwrap();
    be.set_label("fleet.db");
    let mut app = qflow_tui::App::attached();
    app.refresh(&mut be);
    let fleet = app.fleet.clone().expect("the fleet view");
    let get = |k: &str| {
        fleet
            .observations
            .iter()
            .find(|(l, _)| l == k)
            .unwrap_or_else(|| panic!("{k}: {:?}", fleet.observations))
            .1
            .clone()
    };
    assert_eq!(get("instances"), "12: 8 unfinished, 0 completed, 4 failed");
    assert_eq!(get("pending by class"), "transient 8");
    assert_eq!(get("FAILED"), "PROVIDER_DOWN exhausted 4");
    assert_eq!(get("paused"), "none");
    assert_eq!(fleet.per_minute.first(), Some(&(0, 12)));
    common::golden("attach-fleet", &qflow_tui::ui::render_text(&app, 100, 34));
    // Small terminals keep the lists (the frame of attach-list is unchanged).
    assert!(!qflow_tui::ui::render_text(&app, 80, 12).contains(" Fleet "));

    // A pause made by another process shows on the next refresh.
    Store::open(&db)
        .unwrap()
        .pause(PauseKind::Class, "transient", 1, &Actor::new("ops"))
        .unwrap();
    app.refresh(&mut be);
    let paused = &app.fleet.as_ref().unwrap().observations;
    assert!(
        paused
            .iter()
            .any(|(k, v)| k == "paused" && v == "class transient (holds 8) by ops"),
        "{paused:?}"
    );

    // `P` on the fleet: the class and the dependency the parks record,
    // each with its count, the paused one offered for unpausing (nothing
    // of rate-limited is parked: not offered); a digit picks, enter
    // confirms.
    type_keys(&mut app, &mut be, "P");
    common::golden(
        "attach-fleet-pause",
        &qflow_tui::ui::render_text(&app, 100, 34),
    );
    type_keys(&mut app, &mut be, "1\n");
    assert!(
        app.report
            .message
            .starts_with("unpaused class transient: 8 retry park(s)"),
        "{}",
        app.report.message
    );
    assert!(be.store().pauses().unwrap().is_empty());
    let offered: Vec<(String, String, String)> = app
        .fleet
        .as_ref()
        .unwrap()
        .targets
        .iter()
        .map(|t| (t.kind.clone(), t.value.clone(), t.hint.clone()))
        .collect();
    assert_eq!(
        offered,
        [
            ("class".into(), "transient".into(), "8 retry parks".into()),
            (
                "dependency".into(),
                "payments.charge".into(),
                "8 retry parks".into()
            ),
        ]
    );
    // And pausing the dependency, the second choice.
    type_keys(&mut app, &mut be, "P2\n");
    let pauses = be.store().pauses().unwrap();
    assert_eq!(pauses.len(), 1);
    assert_eq!(pauses[0].value, "payments.charge");
    assert_eq!(pauses[0].holding, 8);
}

/// Two DBG-08 instances whose first attempt failed, each parked for its
/// retry at +1m, in a database at `db`.
fn two_parked(db: &std::path::Path) {
    use qflow_engine::runtime::fleet::Fleet;
    use qflow_engine::runtime::graph::Graph;
    use qflow_engine::runtime::{decide, Scenario};
    use qflow_engine::store::Store;
    let root = common::repo();
    let source = std::fs::read_to_string(root.join("samples/dbg08-long-outage.bpmn")).unwrap();
    let scenario = std::fs::read_to_string(root.join(ALWAYS_FAILING)).unwrap();
    let mut store = Store::open(db).unwrap();
    let defs = qflow_engine::load(&source).unwrap();
    let graph = Graph::compile(&defs).unwrap();
    let dep = store.deploy(&graph.process_id, &source, 0).unwrap();
    let start = decide::start(&graph, &Default::default(), 0);
    store.start_instances(&dep, &start, 0, 2).unwrap();
    let mut fleet = Fleet::new(store, Scenario::parse(&scenario).unwrap(), "t:1".into());
    while fleet.stats().decisions < 2 {
        fleet.step(|_, _| {}).unwrap();
    }
}

/// `Q` quarantines or releases the selected instance, on the list and on
/// the instance, after a confirmation; `P` on an instance pauses its own
/// class or dependency; the list and the status line say what holds it.
#[test]
fn q_quarantines_and_p_pauses_the_selected_instance_and_the_console_says_what_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("held.db");
    two_parked(&db);
    let mut be = EngineBackend::attach(&db).unwrap();
    be.set_label("held.db");
    be.act_as(qflow_engine::store::contain::Actor::new("ops-erin"));
    let mut app = qflow_tui::App::attached();
    app.refresh(&mut be);
    assert_eq!(app.list[0].id, "dbg08-1");

    // Q on the list asks first; cancelling changes nothing.
    type_keys(&mut app, &mut be, "Q");
    common::golden(
        "attach-quarantine-confirm",
        &qflow_tui::ui::render_text(&app, 100, 34),
    );
    type_keys(&mut app, &mut be, "2\n");
    assert!(be.store().quarantined().unwrap().is_empty());
    assert!(
        app.report.message.starts_with("cancelled"),
        "{}",
        app.report.message
    );
    // Confirmed: the store has it, the list says so.
    type_keys(&mut app, &mut be, "Q\n");
    let q = be.store().quarantined().unwrap();
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].instance, "dbg08-1");
    // The console records who it acts as (`qflow console --by`).
    assert_eq!(q[0].by.as_deref(), Some("ops-erin"));
    assert!(
        app.report
            .message
            .contains("quarantined dbg08-1 by ops-erin"),
        "{}",
        app.report.message
    );
    assert!(
        app.report.message.starts_with("quarantined dbg08-1"),
        "{}",
        app.report.message
    );
    assert!(app.list[0].quarantined);
    let frame = qflow_tui::ui::render_text(&app, 100, 34);
    assert!(frame.contains("dbg08-1  +0s       quarantined"), "{frame}");

    // P on the open instance offers its own class and dependency.
    type_keys(&mut app, &mut be, "\n");
    assert_eq!(app.view.as_ref().unwrap().inspection.id, "dbg08-1");
    type_keys(&mut app, &mut be, "P");
    common::golden(
        "attach-instance-pause",
        &qflow_tui::ui::render_text(&app, 120, 30),
    );
    type_keys(&mut app, &mut be, "2\n");
    let pauses = be.store().pauses().unwrap();
    assert_eq!(pauses.len(), 1);
    assert_eq!(
        (pauses[0].kind.flag(), pauses[0].value.as_str()),
        ("dependency", "payments.charge")
    );
    assert_eq!(pauses[0].holding, 2);
    assert_eq!(pauses[0].by.as_deref(), Some("ops-erin"));
    // The status line says the park is held and the instance set aside;
    // the footer shows P and Q.
    let frame = qflow_tui::ui::render_text(&app, 120, 30);
    assert!(
        frame.contains("held by paused dependency payments.charge"),
        "{frame}"
    );
    common::golden("attach-instance-held", &frame);
    // Nothing steps a quarantined instance: the console says why.
    let before = be.store().transitions("dbg08-1").unwrap().len();
    type_keys(&mut app, &mut be, " ");
    assert_eq!(be.store().transitions("dbg08-1").unwrap().len(), before);
    assert!(
        app.report
            .message
            .starts_with("quarantined: nothing decides"),
        "{}",
        app.report.message
    );

    // Q on the instance releases it (after the confirmation); P again
    // offers the unpause.
    type_keys(&mut app, &mut be, "Q\n");
    assert!(be.store().quarantined().unwrap().is_empty());
    assert!(
        app.report
            .message
            .ends_with("it was quarantined by ops-erin, released by ops-erin"),
        "{}",
        app.report.message
    );
    // Every action the console took is in the containment log, as the
    // one it acts as (the cancelled one is not).
    let log: Vec<(&str, String, String)> = be
        .store()
        .containment_log(&qflow_engine::store::contain::LogQuery::recent(0))
        .unwrap()
        .into_iter()
        .map(|l| (l.action.word(), l.value, l.by))
        .collect();
    let erin = || "ops-erin".to_string();
    assert_eq!(
        log,
        [
            ("quarantine", "dbg08-1".to_string(), erin()),
            ("pause", "payments.charge".to_string(), erin()),
            ("release", "dbg08-1".to_string(), erin()),
        ]
    );
    type_keys(&mut app, &mut be, "P");
    let p = app.prompt.as_ref().expect("the pause picker");
    assert_eq!(p.choices[1].label, "unpause dependency payments.charge");
    type_keys(&mut app, &mut be, "\x1b");

    // Back on the list: each instance says which pause holds its park.
    type_keys(&mut app, &mut be, "\x1b");
    assert_eq!(
        app.list[1].held_by,
        vec!["dependency payments.charge".to_string()]
    );
    common::golden(
        "attach-list-held",
        &qflow_tui::ui::render_text(&app, 100, 34),
    );
}

/// An attached console reads the database again when idle: another
/// process's quarantine and a new instance show up without a key, the
/// highlight stays on the instance it was on, and an open prompt holds the
/// view still (its answer applies to what it asked about).
#[test]
fn an_idle_attached_console_shows_what_another_process_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    two_parked(&db);
    let mut be = EngineBackend::attach(&db).unwrap();
    let mut app = qflow_tui::App::attached();
    app.refresh(&mut be);
    assert_eq!(app.list.len(), 2);
    type_keys(&mut app, &mut be, "j");
    assert_eq!(app.list[app.list_selected].id, "dbg08-2");

    // Another process: quarantines dbg08-2 and starts a third instance.
    {
        use qflow_engine::runtime::graph::Graph;
        let mut other = qflow_engine::store::Store::open(&db).unwrap();
        other
            .quarantine(
                "dbg08-2",
                1,
                &qflow_engine::store::contain::Actor::new("ops"),
            )
            .unwrap();
        let source =
            std::fs::read_to_string(common::repo().join("samples/dbg08-long-outage.bpmn")).unwrap();
        let graph = Graph::compile(&qflow_engine::load(&source).unwrap()).unwrap();
        let dep = other.deploy(&graph.process_id, &source, 0).unwrap();
        let start = qflow_engine::runtime::decide::start(&graph, &Default::default(), 0);
        other.start_instances(&dep, &start, 0, 1).unwrap();
    }
    // A prompt is open: the tick leaves the view as it was.
    type_keys(&mut app, &mut be, "Q");
    assert!(app.prompt.is_some());
    assert!(!app.tick(&mut be));
    assert_eq!(app.list.len(), 2);
    type_keys(&mut app, &mut be, "2\n");
    // Idle: the tick reads the store again.
    assert!(app.tick(&mut be));
    assert_eq!(app.list.len(), 3, "the new instance is listed");
    let selected = &app.list[app.list_selected];
    assert_eq!(selected.id, "dbg08-2", "the highlight follows its instance");
    assert!(
        selected.quarantined,
        "another process's quarantine is shown"
    );
}
