//! The store's contract: migrations, claims, stale facts, one transaction.
//! Transitions are built by hand: the store applies them, whoever decided.

use std::collections::BTreeMap;

use super::*;
use crate::contain::{Actor, PauseKind};
use qflow_instance::history::{Entry, HistoryEvent, Line, Secs};
use qflow_instance::snapshot::{Token, TokenState};
use qflow_instance::{CallEffects, NewTimer, OutboxChange};

const MODEL: &str = "<definitions/>";

/// A transition to `snapshot` with `status`, one history line, `arm` timers:
/// built by hand, because the store's contract does not depend on how a
/// decision was taken.
fn transition(
    snapshot: Snapshot,
    status: Status,
    event: HistoryEvent,
    arm: Vec<NewTimer>,
) -> Transition {
    Transition {
        snapshot,
        set: BTreeMap::new(),
        removed: Vec::new(),
        status,
        arm,
        resolve: Vec::new(),
        history: vec![Entry::new(Line {
            at_s: Secs(0),
            node: Some("t".into()),
            event,
        })],
        open_incidents: Vec::new(),
        close_incidents: Vec::new(),
        close_in_flight: Vec::new(),
        calls: CallEffects::default(),
        keep_stored_snapshot: false,
    }
}

fn setup(dir: &tempfile::TempDir) -> (Store, String) {
    setup_in(Store::open(&dir.path().join("q.db")).unwrap())
}

/// A store on a fresh PostgreSQL database (see `pg::test_store`), or `None`.
fn on_postgres(test: &str) -> Option<Store> {
    super::pg::test_store(test)
}

fn is_pg(store: &Store) -> bool {
    matches!(store.backend, super::Database::Postgres(_))
}

/// Write rows by hand, as a database of an earlier schema held them:
/// statements with literal values, on the store's own connection.
fn raw(store: &mut Store, sql: &str) {
    if is_pg(store) {
        store.pg_batch(sql);
    } else {
        store.conn().execute_batch(sql).unwrap();
    }
}

/// An instance row `p-1` of deployment `dep` at `version`, as an earlier
/// schema holds it (PostgreSQL numbers instances in `seq`; SQLite by rowid).
fn old_instance(store: &Store, dep: i64, version: i64) -> String {
    let (seq_col, seq) = if is_pg(store) {
        (", seq", ", 1")
    } else {
        ("", "")
    };
    format!(
        "INSERT INTO instances(id, deployment_id, status, snapshot, version, started_ms, updated_ms{seq_col}) \
         VALUES ('p-1', {dep}, 'waiting', '{{}}', {version}, 0, 0{seq});"
    )
}

/// The start of an instance whose token is ready at `t`.
fn started() -> Transition {
    let mut snap = Snapshot::new();
    snap.set_frontier(vec![Token::ready("t")]);
    transition(
        snap,
        Status::Running,
        HistoryEvent::Start {
            variables: BTreeMap::new(),
        },
        Vec::new(),
    )
}

fn setup_in(mut store: Store) -> (Store, String) {
    let dep = store.deploy("p", MODEL, 0).unwrap();
    let (id, created) = store.create_instance(&dep, &started(), 0).unwrap();
    assert!(created);
    (store, id)
}

/// The first attempt of `t` failed: counter, park, a retry timer at one minute.
fn parked() -> Transition {
    let mut snap = Snapshot::new();
    snap.set_frontier(vec![Token {
        node: "t".into(),
        state: TokenState::Backoff,
        via: None,
    }]);
    snap.set_attempts("t", 1);
    snap.set_first_attempt_ms("t", 0);
    transition(
        snap,
        Status::Waiting,
        HistoryEvent::Failed {
            code: "DOWN".into(),
            reason: "a stand-in line".into(),
            attempts: Some(1),
        },
        vec![NewTimer {
            node: "t".into(),
            purpose: Purpose::Retry,
            due_ms: 60_000,
            attempt: Some(2),
        }],
    )
}

#[test]
fn an_old_database_migrates_forward_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let mut old = Store::open_at(&path, 1).unwrap();
        assert_eq!(old.schema_version().unwrap(), 1);
        old.deploy("p", MODEL, 0).unwrap();
        let has_outbox: i64 = old
            .conn()
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'outbox'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(has_outbox, 0);
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), schema::LATEST);
    let deployments: i64 = store
        .conn()
        .query_row("SELECT COUNT(*) FROM deployments", [], |r| r.get(0))
        .unwrap();
    assert_eq!(deployments, 1);
    let outbox: i64 = store
        .conn()
        .query_row("SELECT COUNT(*) FROM outbox", [], |r| r.get(0))
        .unwrap();
    assert_eq!(outbox, 0);
}

#[test]
fn a_newer_database_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    {
        let s = Store::open(&path).unwrap();
        s.conn().pragma_update(None, "user_version", 99).unwrap();
    }
    let err = Store::open(&path).err().expect("refused").to_string();
    assert!(
        err.contains("schema version 99, newer than this qflow supports"),
        "{err}"
    );
}

#[test]
fn a_newer_postgres_database_is_refused_and_an_older_one_migrates() {
    let Some(mut store) = on_postgres("schema_versions") else {
        return;
    };
    assert_eq!(store.schema_version().unwrap(), schema::LATEST);
    let url = match &store.backend {
        super::Database::Postgres(p) => p.url(),
        super::Database::Sqlite(_) => unreachable!(),
    };
    // Opening again (another process) migrates nothing and keeps the rows.
    let dep = store.deploy("p", MODEL, 0).unwrap();
    let again = Store::connect(&Location::Postgres(url.clone())).unwrap();
    assert_eq!(again.deployments().unwrap()[0].id, dep.id);
    drop(again);
    store.pg_batch("UPDATE qflow_schema SET version = 99");
    let err = Store::connect(&Location::Postgres(url.clone()))
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains("schema version 99, newer than this qflow supports")
            && !err.contains("://postgres:"),
        "{err}"
    );
}

#[test]
fn a_live_claim_of_another_owner_is_respected_and_apply_needs_the_claim() {
    let dir = tempfile::tempdir().unwrap();
    claims_are_leases_and_apply_needs_the_claim(setup(&dir));
}

#[test]
fn a_live_claim_of_another_owner_is_respected_and_apply_needs_the_claim_on_postgres() {
    if let Some(store) = on_postgres("claims_are_leases") {
        claims_are_leases_and_apply_needs_the_claim(setup_in(store));
    }
}

fn claims_are_leases_and_apply_needs_the_claim((mut store, id): (Store, String)) {
    // A live process on another host holds it.
    store.claim(&id, "elsewhere:1", 1_000).unwrap();
    let err = store.claim(&id, "me:2", 2_000).unwrap_err();
    assert!(matches!(err, StoreError::Claimed { .. }), "{err}");
    // Expired: taken over.
    store.claim(&id, "me:2", 1_000 + CLAIM_TTL_MS + 1).unwrap();
    let f = store.facts(&id).unwrap();
    let t = parked();
    let wall = 1_000 + CLAIM_TTL_MS + 2;
    // Not the owner: refused, nothing written.
    assert!(store
        .apply(&id, "elsewhere:1", f.version, &t, 0, wall)
        .is_err());
    assert_eq!(store.history(&id).unwrap().len(), 1);
    // Stale version: refused.
    assert!(matches!(
        store.apply(&id, "me:2", f.version - 1, &t, 0, wall),
        Err(StoreError::Conflict(_))
    ));
    // The owner with fresh facts: one transaction writes snapshot, timer, history.
    store.apply(&id, "me:2", f.version, &t, 0, wall).unwrap();
    let timers = store.timers(&id).unwrap();
    assert_eq!(timers.len(), 1);
    assert!(store.due_timers(59_999, 10).unwrap().is_empty());
    assert_eq!(store.due_timers(60_000, 10).unwrap()[0].0, id);
    assert!(timers[0].armed);
    assert_eq!(timers[0].due_ms, 60_000);
    let f2 = store.facts(&id).unwrap();
    assert_eq!(f2.snapshot.attempts("t"), 1);
    assert_eq!(f2.version, f.version + 1);
    // The same transition again (a replayed decision) conflicts on the version.
    assert!(store.apply(&id, "me:2", f.version, &t, 0, wall).is_err());
    assert_eq!(store.timers(&id).unwrap().len(), 1);
}

#[test]
fn a_dead_local_owner_is_taken_over_at_once() {
    let dir = tempfile::tempdir().unwrap();
    a_dead_owner_is_taken_over(setup(&dir));
}

#[test]
fn a_dead_local_owner_is_taken_over_at_once_on_postgres() {
    if let Some(store) = on_postgres("dead_owner") {
        a_dead_owner_is_taken_over(setup_in(store));
    }
}

fn a_dead_owner_is_taken_over((mut store, id): (Store, String)) {
    let me = local_owner();
    let host = me.rsplit_once(':').unwrap().0;
    // A pid above any pid_max: no live process has it.
    let dead = format!("{host}:999999999");
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    store.claim(&id, &dead, wall).unwrap();
    store.claim(&id, &me, wall).unwrap();
}

crate::fresh::on_both_stores!(a_malformed_stored_counter_reads_as_zero);

fn a_malformed_stored_counter_reads_as_zero(fresh: &crate::fresh::Fresh) {
    let (mut store, id) = setup_in(Store::connect(&fresh.db()).unwrap());
    raw(
        &mut store,
        &format!(
            r#"UPDATE instances SET snapshot = '{{"attempts.t":"garbage","frontier":[{{"node":"t","state":"ready"}}]}}' WHERE id = '{id}';"#
        ),
    );
    let f = store.facts(&id).unwrap();
    assert_eq!(f.snapshot.attempts("t"), 0);
}

crate::fresh::on_both_stores!(
    a_version_2_database_gets_its_key_ledger_from_the_history_and_the_outbox,
    a_version_5_database_gets_the_cause_of_its_armed_retry_parks,
    a_version_6_database_keeps_its_pauses_and_quarantines_with_no_one_recorded,
);

fn a_version_2_database_gets_its_key_ledger_from_the_history_and_the_outbox(
    fresh: &crate::fresh::Fresh,
) {
    let at = fresh.db();
    {
        let mut old = Store::connect_at(&at, 2).unwrap();
        assert_eq!(old.schema_version().unwrap(), 2);
        // The deployment by hand too: this qflow's deploy writes columns
        // of later versions (its origin).
        let mut sql = String::from(
            "INSERT INTO deployments(id, process_id, hash, source, deployed_ms) \
             VALUES (1, 'p', 'h', '<definitions/>', 0);",
        );
        sql.push_str(&old_instance(&old, 1, 3));
        sql.push_str(
            "INSERT INTO transitions(seq, instance_id, version, at_ms, status, snapshot) \
             VALUES (1, 'p-1', 1, 0, 'waiting', '{}');",
        );
        // Key /3 was sent and then withdrawn by a backoff park: only the
        // history remembers it. Key /2 is still in the outbox.
        for (n, node) in [(1, "auth"), (3, "auth"), (1, "other")] {
            sql.push_str(&format!(
                "INSERT INTO history(transition_seq, instance_id, at_ms, kind, node, attempt, detail) \
                 VALUES (1, 'p-1', 0, 'attempt', '{node}', {n}, \
                 '{{\"idempotencyKey\":\"p-1/{node}/{n}\",\"kind\":\"attempt\"}}');"
            ));
        }
        sql.push_str(
            "INSERT INTO outbox(instance_id, node, channel, attempt, idempotency_key, payload, state, next_ms, created_ms) \
             VALUES ('p-1', 'auth', 'bank', 2, 'p-1/auth/2', '{}', 'delivered', 0, 0);",
        );
        raw(&mut old, &sql);
    }
    let store = Store::connect(&at).unwrap();
    assert_eq!(store.schema_version().unwrap(), schema::LATEST);
    let f = store.facts("p-1").unwrap();
    assert_eq!(
        f.keys_sent,
        BTreeMap::from([("auth".to_string(), 3), ("other".to_string(), 1)])
    );
}

/// The cause of an armed retry park, filled from its last attempt line, is
/// what a pause by class and a pause by dependency both find.
fn a_version_5_database_gets_the_cause_of_its_armed_retry_parks(fresh: &crate::fresh::Fresh) {
    let at = fresh.db();
    {
        let mut old = Store::connect_at(&at, 5).unwrap();
        assert_eq!(old.schema_version().unwrap(), 5);
        let dep = old.deploy("p", MODEL, 0).unwrap();
        let mut sql = old_instance(&old, dep.id, 2);
        sql.push_str(
            "INSERT INTO transitions(seq, instance_id, version, at_ms, status, snapshot) \
             VALUES (1, 'p-1', 2, 0, 'waiting', '{}');\
             INSERT INTO history(transition_seq, instance_id, at_ms, kind, node, attempt, code, task, detail) \
             VALUES (1, 'p-1', 0, 'attempt', 't', 1, 'SLOW', 'svc.call', '{\"class\":\"rate-limited\",\"kind\":\"attempt\"}');\
             INSERT INTO timers(instance_id, node, purpose, due_ms, attempt, state, armed_seq) \
             VALUES ('p-1', 't', 'retry', 60000, 2, 'armed', 1);",
        );
        raw(&mut old, &sql);
    }
    let mut store = Store::connect(&at).unwrap();
    if !is_pg(&store) {
        let cause: (String, String) = store
            .conn()
            .query_row("SELECT class, dependency FROM timers", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(cause, ("rate-limited".into(), "svc.call".into()));
    }
    assert_eq!(store.candidates(10).unwrap(), ["p-1"]);
    let ops = super::contain::Actor::new("ops");
    let change = store
        .pause(super::contain::PauseKind::Class, "rate-limited", 1, &ops)
        .unwrap();
    assert_eq!(change.parks, 1, "the park's class was filled");
    assert!(store.candidates(10).unwrap().is_empty());
    store
        .unpause(
            super::contain::PauseKind::Class,
            "rate-limited",
            9,
            &super::contain::Actor::new("ops"),
        )
        .unwrap();
    assert_eq!(store.candidates(10).unwrap(), ["p-1"]);
    let change = store
        .pause(super::contain::PauseKind::Dependency, "svc.call", 2, &ops)
        .unwrap();
    assert_eq!(change.parks, 1, "the park's dependency was filled");
    assert!(store.candidates(10).unwrap().is_empty());
}

/// The poison wake crosses processes on PostgreSQL: a transition that
/// poisons a request notifies every listening connection when it commits
/// (signed by its owner, so the sender's own wake is left out), and a
/// refused transition notifies no one.
#[test]
fn a_poisoned_delivery_wakes_the_other_processes_on_postgres() {
    let Some(store) = on_postgres("poison_wake") else {
        return;
    };
    let url = match &store.backend {
        super::Database::Postgres(p) => p.url(),
        super::Database::Sqlite(_) => unreachable!(),
    };
    let (mut a, id) = setup_in(store);
    let mut b = Store::connect(&Location::Postgres(url)).unwrap();
    b.listen_for_wakes().unwrap();
    a.claim(&id, "a:1", 1_000).unwrap();
    let line = || HistoryEvent::Start {
        variables: BTreeMap::new(),
    };
    let mut snap = Snapshot::new();
    snap.set_frontier(vec![Token::ready("t")]);
    let emit = |n: u32| {
        let mut t = transition(snap.clone(), Status::Waiting, line(), Vec::new());
        t.calls.emit.push(qflow_instance::NewRequest {
            node: "t".into(),
            channel: "bank".into(),
            operation: None,
            attempt: n,
            idempotency_key: format!("{id}/t/{n}"),
            key_number: n,
            payload: serde_json::json!({}),
        });
        t
    };
    let poison = |row: i64| {
        let mut t = transition(snap.clone(), Status::Waiting, line(), Vec::new());
        t.calls.outbox.push(OutboxChange::Poisoned {
            id: row,
            deliveries: 1,
        });
        t
    };
    let pending = |s: &Store| s.pending_requests(&id).unwrap()[0].0.id;
    // A notification may trail the commit by a moment: look again for up
    // to 2 s, as a replica's polling loop looks on every round.
    let wakes_of = |s: &Store, owner: &str| {
        for _ in 0..100 {
            let w = s.wakes(owner).unwrap();
            if !w.is_empty() {
                return w;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Vec::new()
    };

    let v = a.facts(&id).unwrap().version;
    a.apply(&id, "a:1", v, &emit(1), 0, 1_000).unwrap();
    assert!(b.wakes("b:2").unwrap().is_empty(), "nothing poisoned yet");
    // A refused poisoning (stale version) notifies no one.
    let row = pending(&a);
    assert!(a.apply(&id, "a:1", v, &poison(row), 0, 1_000).is_err());
    assert!(b.wakes("b:2").unwrap().is_empty());
    // The committed one wakes the other process.
    let v = a.facts(&id).unwrap().version;
    a.apply(&id, "a:1", v, &poison(row), 0, 1_000).unwrap();
    assert_eq!(wakes_of(&b, "b:2"), vec![(id.clone(), "t".to_string())]);
    assert!(
        b.wakes("b:2").unwrap().is_empty(),
        "a wake is delivered once"
    );
    // The sender's own wake is left out (it keeps it in memory).
    let v = a.facts(&id).unwrap().version;
    a.apply(&id, "a:1", v, &emit(2), 0, 1_000).unwrap();
    let v = a.facts(&id).unwrap().version;
    let row = pending(&a);
    a.apply(&id, "a:1", v, &poison(row), 0, 1_000).unwrap();
    assert!(b.wakes("a:1").unwrap().is_empty());
    // SQLite has no cross-process wake: always empty.
    let dir = tempfile::tempdir().unwrap();
    let (mut s, _) = setup(&dir);
    s.listen_for_wakes().unwrap();
    assert!(s.wakes("x:1").unwrap().is_empty());
}

#[test]
fn a_batch_journals_its_savepoints_in_memory_not_in_a_temporary_file() {
    // Group commit opens a savepoint per instance; on a file that journal
    // kept a copy of every page the batch touched until the commit.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("q.db")).unwrap();
    let mode: i64 = store
        .conn()
        .query_row("PRAGMA temp_store", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, 2, "temp_store=MEMORY");
}

fn a_version_6_database_keeps_its_pauses_and_quarantines_with_no_one_recorded(
    fresh: &crate::fresh::Fresh,
) {
    let at = fresh.db();
    {
        let (mut old, id) = setup_in(Store::connect_at(&at, 6).unwrap());
        assert_eq!(old.schema_version().unwrap(), 6);
        raw(
            &mut old,
            &format!(
                "INSERT INTO pauses(kind, value, paused_ms) VALUES ('class', 'transient', 5);\
                 UPDATE instances SET quarantined_ms = 7 WHERE id = '{id}';"
            ),
        );
    }
    let mut store = Store::connect(&at).unwrap();
    assert_eq!(store.schema_version().unwrap(), schema::LATEST);
    let pauses = store.pauses().unwrap();
    assert_eq!(
        (
            pauses[0].paused_ms,
            pauses[0].by.clone(),
            pauses[0].reason.clone()
        ),
        (5, None, None),
        "made before anyone was recorded"
    );
    let q = store.quarantined().unwrap();
    assert_eq!((q[0].at_ms, q[0].by.clone()), (7, None));
    // A new pause records who and why; lifting the old one says no one.
    let change = store
        .pause(
            super::contain::PauseKind::Dependency,
            "svc.call",
            9,
            &super::contain::Actor::new("ops").because(Some("slow")),
        )
        .unwrap();
    assert_eq!(
        (change.by.as_deref(), change.reason.as_deref()),
        (Some("ops"), Some("slow"))
    );
    let lifted = store
        .unpause(
            super::contain::PauseKind::Class,
            "transient",
            9,
            &super::contain::Actor::new("ops"),
        )
        .unwrap();
    assert!(lifted.changed);
    assert_eq!(lifted.by, None);
}

#[test]
fn the_quarantined_and_their_count_are_read_by_their_index() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = setup(&dir);
    let plan = |sql: &str| -> String {
        let mut st = store
            .conn()
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap();
        let rows = st.query_map([], |r| r.get::<_, String>(3)).unwrap();
        rows.map(Result::unwrap).collect::<Vec<_>>().join("; ")
    };
    for sql in [
        super::contain::QUARANTINED,
        "SELECT COUNT(*) FROM instances WHERE quarantined_ms IS NOT NULL",
    ] {
        let p = plan(sql);
        assert!(
            p.contains("USING") && p.contains("INDEX instances_quarantined"),
            "{sql}: {p}"
        );
        assert!(!p.contains("SCAN instances"), "{sql}: {p}");
    }
}

crate::fresh::on_both_stores!(
    every_containment_action_is_logged_with_who_why_and_whether_it_changed,
    a_refused_containment_action_logs_nothing,
    an_action_whose_log_row_cannot_be_written_is_not_taken,
    a_version_8_database_logs_from_its_upgrade_on_and_invents_nothing_earlier,
    operators_pausing_at_once_are_each_logged_and_one_made_the_pause,
);

/// The log as `(action, kind, value, by, reason, changed)`, oldest first.
type Row = (&'static str, String, String, String, Option<String>, bool);

fn log_rows(store: &Store, query: &super::contain::LogQuery) -> Vec<Row> {
    store
        .containment_log(query)
        .unwrap()
        .into_iter()
        .map(|l| (l.action.word(), l.kind, l.value, l.by, l.reason, l.changed))
        .collect()
}

fn every_containment_action_is_logged_with_who_why_and_whether_it_changed(
    fresh: &crate::fresh::Fresh,
) {
    use super::contain::{Actor, LogQuery, PauseKind};
    let (mut store, id) = setup_in(Store::connect(&fresh.db()).unwrap());
    let alice = Actor::new("alice").because(Some("bank outage"));
    let bob = Actor::new("bob");
    let carol = Actor::new("carol").because(Some("bank back"));
    assert!(store
        .containment_log(&LogQuery::recent(0))
        .unwrap()
        .is_empty());

    let paused = store
        .pause(PauseKind::Dependency, "bank", 100, &alice)
        .unwrap();
    assert_eq!((paused.logged.seq > 0, paused.logged.at_ms), (true, 100));
    // Paused again by someone else: nothing changes, the first record is
    // kept, and the attempt is logged as changing nothing.
    let again = store
        .pause(PauseKind::Dependency, "bank", 200, &bob)
        .unwrap();
    assert!(!again.changed);
    assert_eq!(again.by.as_deref(), Some("alice"), "the first record kept");
    assert_eq!(
        (again.logged.by.as_str(), again.logged.changed),
        ("bob", false)
    );
    // The unpause says who lifted it, and whose pause it was.
    let lifted = store
        .unpause(PauseKind::Dependency, "bank", 300, &carol)
        .unwrap();
    assert!(lifted.changed);
    assert_eq!(
        (lifted.by.as_deref(), lifted.reason.as_deref()),
        (Some("alice"), Some("bank outage")),
        "whose pause it was"
    );
    assert_eq!(
        (lifted.logged.by.as_str(), lifted.logged.reason.as_deref()),
        ("carol", Some("bank back")),
        "who lifted it"
    );
    assert!(store.pauses().unwrap().is_empty());
    let not_paused = store
        .unpause(PauseKind::Class, "transient", 400, &bob)
        .unwrap();
    assert!(!not_paused.changed);
    store.quarantine(&id, 500, &bob).unwrap();
    store.quarantine(&id, 600, &carol).unwrap();
    let released = store.release_quarantine(&id, 700, &alice).unwrap();
    assert_eq!(
        released.by.as_deref(),
        Some("bob"),
        "whose quarantine it was"
    );
    assert_eq!(released.logged.by, "alice", "who released it");
    store.release_quarantine(&id, 800, &alice).unwrap();

    let s = |v: &str| v.to_string();
    let o = |v: &str| Some(v.to_string());
    let everything = log_rows(&store, &LogQuery::recent(0));
    assert_eq!(
        everything,
        vec![
            (
                "pause",
                s("dependency"),
                s("bank"),
                s("alice"),
                o("bank outage"),
                true
            ),
            ("pause", s("dependency"), s("bank"), s("bob"), None, false),
            (
                "unpause",
                s("dependency"),
                s("bank"),
                s("carol"),
                o("bank back"),
                true
            ),
            ("unpause", s("class"), s("transient"), s("bob"), None, false),
            (
                "quarantine",
                s("instance"),
                id.clone(),
                s("bob"),
                None,
                true
            ),
            (
                "quarantine",
                s("instance"),
                id.clone(),
                s("carol"),
                o("bank back"),
                false
            ),
            (
                "release",
                s("instance"),
                id.clone(),
                s("alice"),
                o("bank outage"),
                true
            ),
            (
                "release",
                s("instance"),
                id.clone(),
                s("alice"),
                o("bank outage"),
                false
            ),
        ]
    );
    let log = store.containment_log(&LogQuery::recent(0)).unwrap();
    assert_eq!(
        log.iter().map(|l| l.at_ms).collect::<Vec<_>>(),
        [100, 200, 300, 400, 500, 600, 700, 800],
        "the time each action recorded, in the log's order"
    );
    assert!(log.windows(2).all(|w| w[0].seq < w[1].seq));
    // The latest two, oldest first; one instance's entries alone.
    assert_eq!(log_rows(&store, &LogQuery::recent(2)), everything[6..]);
    assert_eq!(log_rows(&store, &LogQuery::instance(&id)), everything[4..]);
    assert!(store
        .containment_log(&LogQuery::instance("p-99"))
        .unwrap()
        .is_empty());
}

/// A refused action (an unknown instance, a completed one) is rolled back
/// whole: no quarantine, and no log row saying there was one.
fn a_refused_containment_action_logs_nothing(fresh: &crate::fresh::Fresh) {
    use super::contain::{Actor, LogQuery};
    let (mut store, id) = setup_in(Store::connect(&fresh.db()).unwrap());
    let ops = Actor::new("ops");
    assert!(matches!(
        store.quarantine("p-99", 1, &ops),
        Err(StoreError::NoInstance(_))
    ));
    assert!(matches!(
        store.release_quarantine("p-99", 1, &ops),
        Err(StoreError::NoInstance(_))
    ));
    raw(
        &mut store,
        &format!("UPDATE instances SET status = 'completed' WHERE id = '{id}';"),
    );
    assert!(matches!(
        store.quarantine(&id, 1, &ops),
        Err(StoreError::Completed(_))
    ));
    assert!(store.quarantined().unwrap().is_empty());
    assert!(store
        .containment_log(&LogQuery::recent(0))
        .unwrap()
        .is_empty());
}

/// The log row is written in the action's transaction: when it cannot be
/// written, the action is not taken either (the pause is not made, the
/// quarantine not lifted).
fn an_action_whose_log_row_cannot_be_written_is_not_taken(fresh: &crate::fresh::Fresh) {
    use super::contain::{Actor, PauseKind};
    let (mut store, id) = setup_in(Store::connect(&fresh.db()).unwrap());
    let ops = Actor::new("ops");
    store.quarantine(&id, 1, &ops).unwrap();
    raw(&mut store, "DROP TABLE containment_log;");
    assert!(store.pause(PauseKind::Class, "transient", 2, &ops).is_err());
    assert!(store.pauses().unwrap().is_empty(), "the pause rolled back");
    assert!(store.release_quarantine(&id, 3, &ops).is_err());
    assert_eq!(store.quarantined().unwrap().len(), 1, "still quarantined");
}

/// An upgraded database's earlier pauses and quarantines stay in force
/// with no log entry (none was kept then); every action from the upgrade
/// on is logged, a lift of an old pause included.
fn a_version_8_database_logs_from_its_upgrade_on_and_invents_nothing_earlier(
    fresh: &crate::fresh::Fresh,
) {
    use super::contain::{Actor, LogQuery, PauseKind};
    let at = fresh.db();
    {
        let (mut old, id) = setup_in(Store::connect_at(&at, 8).unwrap());
        assert_eq!(old.schema_version().unwrap(), 8);
        raw(
            &mut old,
            &format!(
                "INSERT INTO pauses(kind, value, paused_ms, paused_by, reason) VALUES ('dependency', 'bank', 5, 'alice', 'outage');\
                 UPDATE instances SET quarantined_ms = 7, quarantined_by = 'bob' WHERE id = '{id}';"
            ),
        );
    }
    let mut store = Store::connect(&at).unwrap();
    assert_eq!(store.schema_version().unwrap(), schema::LATEST);
    const { assert!(schema::LATEST >= schema::CONTAINMENT_LOG) };
    assert!(store
        .containment_log(&LogQuery::recent(0))
        .unwrap()
        .is_empty());
    assert_eq!(store.pauses().unwrap()[0].by.as_deref(), Some("alice"));
    let lifted = store
        .unpause(PauseKind::Dependency, "bank", 9, &Actor::new("carol"))
        .unwrap();
    assert_eq!(
        (lifted.by.as_deref(), lifted.logged.by.as_str()),
        (Some("alice"), "carol")
    );
    let released = store
        .release_quarantine("p-1", 10, &Actor::new("carol"))
        .unwrap();
    assert_eq!(released.by.as_deref(), Some("bob"));
    let s = |v: &str| v.to_string();
    assert_eq!(
        log_rows(&store, &LogQuery::recent(0)),
        vec![
            (
                "unpause",
                s("dependency"),
                s("bank"),
                s("carol"),
                None,
                true
            ),
            ("release", s("instance"), s("p-1"), s("carol"), None, true),
        ]
    );
}

/// Four operators pause the same class at the same moment, each from a
/// process of their own: one pause is made (its record names who made
/// it), the other three find it made, and all four are logged, exactly one
/// as having changed anything.
fn operators_pausing_at_once_are_each_logged_and_one_made_the_pause(fresh: &crate::fresh::Fresh) {
    use super::contain::{Actor, LogQuery, PauseKind};
    let at = fresh.db();
    drop(setup_in(Store::connect(&at).unwrap()));
    let barrier = std::sync::Barrier::new(4);
    let changed: Vec<(String, bool)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|k| {
                let (at, barrier) = (&at, &barrier);
                s.spawn(move || {
                    let mut store = Store::connect(at).unwrap();
                    let who = format!("ops-{k}");
                    barrier.wait();
                    let c = store
                        .pause(PauseKind::Class, "transient", k, &Actor::new(&who))
                        .unwrap();
                    (who, c.changed)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let makers: Vec<&String> = changed.iter().filter(|c| c.1).map(|c| &c.0).collect();
    assert_eq!(makers.len(), 1, "{changed:?}");
    let store = Store::connect(&at).unwrap();
    assert_eq!(store.pauses().unwrap()[0].by.as_ref(), Some(makers[0]));
    let log = store.containment_log(&LogQuery::recent(0)).unwrap();
    assert_eq!(log.len(), 4, "{log:?}");
    let logged_makers: Vec<&String> = log.iter().filter(|l| l.changed).map(|l| &l.by).collect();
    assert_eq!(logged_makers, makers, "{log:?}");
}

crate::fresh::on_both_stores!(a_serving_loop_does_not_pick_what_another_live_owner_holds_claimed);

/// Replicas read the same due list at once: what another live owner has
/// claimed is left out of a loop's pick (else every replica picks the same
/// first instances and all but one idle), while a dead owner's claim and
/// one's own are not.
fn a_serving_loop_does_not_pick_what_another_live_owner_holds_claimed(fresh: &crate::fresh::Fresh) {
    let (mut store, id) = setup_in(Store::connect(&fresh.db()).unwrap());
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let picked = |store: &Store, owner: Option<&str>| -> Vec<String> {
        let (ids, _) = store.due_instances(owner, wall, 10).unwrap();
        ids.into_iter().map(|(id, _)| id).collect()
    };
    assert_eq!(
        picked(&store, Some("me:2")),
        vec![id.clone()],
        "a running instance is due"
    );
    store.claim(&id, "elsewhere:1", wall).unwrap();
    assert!(
        picked(&store, Some("me:2")).is_empty(),
        "held by a live owner"
    );
    assert_eq!(
        picked(&store, Some("elsewhere:1")),
        vec![id.clone()],
        "its own"
    );
    assert_eq!(
        picked(&store, None),
        vec![id.clone()],
        "no owner: everything due"
    );
    // A dead process of this host: its claim is taken over at once.
    let host = local_owner().rsplit_once(':').unwrap().0.to_string();
    store.release(&id, "elsewhere:1").unwrap();
    store
        .claim(&id, &format!("{host}:999999999"), wall)
        .unwrap();
    assert_eq!(picked(&store, Some("me:2")), vec![id]);
}

crate::fresh::on_both_stores!(a_store_opened_read_only_refuses_every_write);

/// What `qflow simulate --from` opens: reads work, a write is refused by
/// the database itself (SQLite's `mode=ro`, PostgreSQL's `READ ONLY`
/// session), and nothing changes.
fn a_store_opened_read_only_refuses_every_write(fresh: &crate::fresh::Fresh) {
    use crate::contain::{Actor, PauseKind};
    let at = fresh.db();
    let (store, _) = setup_in(Store::connect(&at).unwrap());
    drop(store);
    let mut ro = Store::open_read_only(&at).unwrap();
    let before = ro.instances().unwrap();
    assert!(ro.retry_parks(None).is_ok());
    let refused = ro.pause(PauseKind::Dependency, "bank", 0, &Actor::new("t"));
    let why = refused.expect_err("a write is refused").to_string();
    assert!(
        why.contains("readonly") || why.contains("read-only"),
        "refused as read-only: {why}"
    );
    assert_eq!(ro.instances().unwrap(), before);
    assert!(ro.pauses().unwrap().is_empty());
    if let Location::Sqlite(path) = &at {
        let missing = path.with_extension("missing");
        assert!(Store::open_read_only(&Location::Sqlite(missing.clone())).is_err());
        assert!(!missing.exists());
    }
}

#[test]
fn a_groups_reads_answer_as_each_instances_own_reads_do() {
    let dir = tempfile::tempdir().unwrap();
    group_reads_answer_alike(setup(&dir));
}

#[test]
fn a_groups_reads_answer_as_each_instances_own_reads_do_on_postgres() {
    if let Some(store) = on_postgres("group_reads") {
        group_reads_answer_alike(setup_in(store));
    }
}

/// [`Store::facts_many`] and the kept reads of [`Store::begin_group_reads`]
/// give what one instance's reads give (a parked instance, a ready one, one
/// with an attempt in flight, one that does not exist); the claims of a
/// group are taken and given back as one instance's are; an in-flight
/// record written during the phase is read from the database again.
fn group_reads_answer_alike((mut store, first): (Store, String)) {
    let dep = store.deploy("p", MODEL, 0).unwrap();
    let mut ids = vec![first.clone()];
    for _ in 0..2 {
        ids.push(store.start_instance(&dep, &started(), 0).unwrap());
    }
    // The first is parked (a retry timer, a transition after its start).
    store.claim(&first, "me:1", 1_000).unwrap();
    let f = store.facts(&first).unwrap();
    store
        .apply(&first, "me:1", f.version, &parked(), 5, 1_000)
        .unwrap();
    store.release(&first, "me:1").unwrap();
    // The second has an attempt in flight and a key taken.
    store.open_in_flight(&ids[1], "t", 1, 1, 7, 1_000).unwrap();
    store
        .pause(PauseKind::Dependency, "bank", 1_000, &Actor::new("ops"))
        .unwrap();
    let mut asked = ids.clone();
    asked.push("no-such-instance".into());

    let claimed = store.claim_many(&asked, "me:1", 2_000).unwrap();
    assert_eq!(claimed, ids, "every existing free instance, in order");
    let many = store.facts_many(&asked).unwrap();
    assert_eq!(many.len(), 3);
    let one_by_one: Vec<_> = ids
        .iter()
        .map(|id| {
            (
                format!("{:?}", store.facts(id).unwrap()),
                store.last_decision_ms(id).unwrap(),
                store.pending_requests(id).unwrap(),
                store.in_flight(id, "t").unwrap(),
                store.handler_runs(id, "t").unwrap(),
            )
        })
        .collect();
    let paused = store.paused_dependencies().unwrap();
    assert!(paused.contains("bank"));
    assert!(one_by_one[0].1 == Some(5) && one_by_one[1].3.is_some());

    store.begin_group_reads(&claimed).unwrap();
    for (id, alone) in ids.iter().zip(&one_by_one) {
        let kept = (
            format!("{:?}", many[id]),
            store.last_decision_ms(id).unwrap(),
            store.pending_requests(id).unwrap(),
            store.in_flight(id, "t").unwrap(),
            store.handler_runs(id, "t").unwrap(),
        );
        assert_eq!(&kept, alone, "{id}");
    }
    assert_eq!(store.paused_dependencies().unwrap(), paused);
    // Written during the phase: read again, not kept.
    store.open_in_flight(&ids[2], "t", 1, 1, 9, 2_000).unwrap();
    assert_eq!(store.in_flight(&ids[2], "t").unwrap().unwrap().opened_ms, 9);
    store.end_group_reads();

    // Claimed: another owner is refused; given back as a group, taken again.
    assert!(store.claim_many(&ids, "other:2", 2_001).unwrap().is_empty());
    store.apply_many("me:1", &[], &ids, 2_002).unwrap();
    assert_eq!(store.claim_many(&ids, "other:2", 2_003).unwrap(), ids);
}

crate::fresh::on_both_stores!(
    an_attempt_in_flight_is_read_from_its_columns_and_an_older_record_from_its_words
);

/// Migration 15: a record's attempt, version, owner and lease are columns;
/// one an older qflow wrote has them only in its message, and reads the same.
fn an_attempt_in_flight_is_read_from_its_columns_and_an_older_record_from_its_words(
    fresh: &crate::fresh::Fresh,
) {
    let (mut store, id) = setup_in(Store::connect(&fresh.db()).unwrap());
    store
        .open_in_flight_by(
            "box:42",
            &id,
            "t",
            3,
            17,
            0,
            1_700_000_000_000,
            1_700_000_035_000,
        )
        .unwrap();
    let read = store.in_flight(&id, "t").unwrap().unwrap();
    assert_eq!(
        (
            read.attempt,
            read.version,
            read.owner.as_deref(),
            read.lease_until_ms
        ),
        (3, 17, Some("box:42"), Some(1_700_000_035_000))
    );
    // The columns, not the words, are what is read: words that say
    // otherwise change nothing.
    raw(&mut store, "UPDATE incidents SET message = 'attempt 9 started (instance version 99, wall clock 0 ms); the handler is running'");
    let read = store.in_flight(&id, "t").unwrap().unwrap();
    assert_eq!((read.attempt, read.version), (3, 17));
    // An older qflow's record: no columns, its fields in its words.
    raw(
        &mut store,
        "UPDATE incidents SET attempt = NULL, from_version = NULL, owner = NULL, lease_until_ms = NULL, \
         message = 'attempt 2 started (instance version 8, wall clock 5 ms); the handler is running; owner old:7, lease until 900 ms'",
    );
    let read = store.in_flight(&id, "t").unwrap().unwrap();
    assert_eq!(
        (
            read.attempt,
            read.version,
            read.owner.as_deref(),
            read.lease_until_ms
        ),
        (2, 8, Some("old:7"), Some(900))
    );
}
