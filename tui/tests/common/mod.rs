//! Test doubles for the presentation layer: a rich view with every panel
//! filled, and a backend that records commands and replays a tape of views.
#![allow(dead_code)]

use qflow_tui::backend::{Backend, Command, Report};
use qflow_tui::view::*;

/// A DBG-08 charge parked before its third attempt, with a call in its
/// backoff window beside it, so every panel has rows.
pub fn rich_view() -> View {
    let fail = |n: u32, at: i64| AttemptMark {
        n,
        at_ms: at,
        outcome: AttemptOutcome::Failed {
            code: "PROVIDER_DOWN".into(),
            class: "transient".into(),
        },
    };
    View {
        source: "samples/dbg08-charge.bpmn".into(),
        instance: InstanceView {
            id: "charge-1".into(),
            process: "charge".into(),
            status: InstanceStatus::Waiting,
            failure: None,
            waiting_for: Some("retry timer of charge (attempt 3)".into()),
        },
        now_ms: 61_000,
        nodes: vec![
            NodeView {
                id: "start".into(),
                kind: NodeKindView::Start,
                state: NodeState::Completed,
                ..Default::default()
            },
            NodeView {
                id: "charge".into(),
                kind: NodeKindView::Task,
                state: NodeState::Parked {
                    eligible_at_ms: 360_000,
                },
                attempts: Some(2),
                current: true,
            },
            NodeView {
                id: "authorize".into(),
                kind: NodeKindView::Call,
                state: NodeState::Parked {
                    eligible_at_ms: 90_000,
                },
                attempts: Some(1),
                ..Default::default()
            },
            NodeView {
                id: "done".into(),
                kind: NodeKindView::End,
                ..Default::default()
            },
        ],
        snapshot: vec![
            SnapshotEntry {
                key: "attempts.authorize".into(),
                value: "1".into(),
                family: KeyFamily::Attempts,
                classification: None,
            },
            SnapshotEntry {
                key: "attempts.charge".into(),
                value: "2".into(),
                family: KeyFamily::Attempts,
                classification: None,
            },
            SnapshotEntry {
                key: "backoff.authorize".into(),
                value: r#"{"code":"q.timeout","class":"transient"}"#.into(),
                family: KeyFamily::Backoff,
                classification: Some("q.timeout (transient)".into()),
            },
            SnapshotEntry {
                key: "first_attempt.charge".into(),
                value: "0".into(),
                family: KeyFamily::Other,
                classification: None,
            },
            SnapshotEntry {
                key: "frontier".into(),
                value: r#"[{"node":"charge","state":"backoff"}]"#.into(),
                family: KeyFamily::Frontier,
                classification: None,
            },
            SnapshotEntry {
                key: "var.amount".into(),
                value: "42".into(),
                family: KeyFamily::Variable,
                classification: None,
            },
            SnapshotEntry {
                key: "var.orderId".into(),
                value: "\"A-17\"".into(),
                family: KeyFamily::Variable,
                classification: None,
            },
        ],
        timers: vec![
            TimerView {
                kind: "retry".into(),
                node: "authorize".into(),
                due_at_ms: 90_000,
                attempt: Some(2),
            },
            TimerView {
                kind: "retry".into(),
                node: "charge".into(),
                due_at_ms: 360_000,
                attempt: Some(3),
            },
        ],
        outbox: vec![OutboxView {
            node: "authorize".into(),
            channel: "bank".into(),
            attempt: 1,
            status: "delivered".into(),
            deliveries: 1,
            idempotency_key: "charge-1/authorize/1".into(),
        }],
        correlations: vec![CorrelationView {
            key: "corr-charge-1-authorize".into(),
            node: "authorize".into(),
            state: "in backoff".into(),
        }],
        incidents: vec![],
        history: vec![
            HistoryView {
                seq: 1,
                at_ms: 0,
                kind: "start".into(),
                node: Some("start".into()),
                ..Default::default()
            },
            HistoryView {
                seq: 2,
                at_ms: 0,
                kind: "attempt".into(),
                node: Some("charge".into()),
                attempt: Some(1),
                code: Some("PROVIDER_DOWN".into()),
                detail: "transient · next +1m".into(),
            },
            HistoryView {
                seq: 3,
                at_ms: 60_000,
                kind: "attempt".into(),
                node: Some("charge".into()),
                attempt: Some(2),
                code: Some("PROVIDER_DOWN".into()),
                detail: "transient · next +6m".into(),
            },
        ],
        schedule: Some(ScheduleView {
            node: "charge".into(),
            policy: "6 attempts over at most 13 h 1 min".into(),
            max_attempts: Some(6),
            done: vec![fail(1, 0), fail(2, 60_000)],
            planned: [
                (3, 360_000),
                (4, 1_860_000),
                (5, 9_360_000),
                (6, 46_860_000),
            ]
            .into_iter()
            .map(|(n, at)| PlannedMark { n, at_ms: at })
            .collect(),
            first_at_ms: Some(0),
            max_elapsed_ms: Some(172_800_000),
        }),
        read_only: false,
        channel_calls: true,
    }
}

/// Records every command; each command moves to the next view of the tape
/// (the last one repeats).
pub struct Tape {
    pub views: Vec<View>,
    pub at: usize,
    pub commands: Vec<Command>,
    pub rows: Vec<InstanceRowView>,
}

impl Tape {
    pub fn new(views: Vec<View>) -> Tape {
        Tape {
            views,
            at: 0,
            commands: Vec::new(),
            rows: Vec::new(),
        }
    }
}

impl Backend for Tape {
    fn execute(&mut self, command: &Command) -> Result<Report, String> {
        self.commands.push(command.clone());
        if *command != Command::Refresh {
            self.at = (self.at + 1).min(self.views.len().saturating_sub(1));
        }
        Ok(Report::info(format!("did {command:?}")))
    }

    fn view(&mut self) -> Result<Option<View>, String> {
        Ok(self.views.get(self.at).cloned())
    }

    fn instances(&mut self) -> Result<Vec<InstanceRowView>, String> {
        Ok(self.rows.clone())
    }

    fn failure_codes(&mut self) -> Vec<String> {
        vec!["PROVIDER_DOWN".into()]
    }
}

pub fn key(c: char) -> crossterm::event::KeyEvent {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let code = match c {
        '\n' => KeyCode::Enter,
        '\t' => KeyCode::Tab,
        '\u{1b}' => KeyCode::Esc,
        '\u{8}' => KeyCode::Backspace,
        c => KeyCode::Char(c),
    };
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Feed a string of keys (`\n` enter, `\t` tab, `\x1b` esc).
pub fn type_keys(app: &mut qflow_tui::App, backend: &mut dyn Backend, keys: &str) {
    for c in keys.chars() {
        app.handle(backend, key(c));
    }
}

/// The repository root (the workspace), from the tui crate.
pub fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A console over the real engine: `model` and `scenario` relative to the
/// repository (`samples/…`), on a temporary database.
pub fn engine(
    model: &str,
    scenario: Option<&str>,
) -> (qflow_tui::App, qflow_tui::engine_backend::EngineBackend) {
    let root = repo();
    let scenario = scenario.map(|s| root.join(s));
    let mut backend = qflow_tui::engine_backend::EngineBackend::start(
        &root.join(model),
        scenario.as_deref(),
        None,
    )
    .unwrap_or_else(|e| panic!("{model}: {e}"));
    backend.set_label(model);
    let mut app = qflow_tui::App::new();
    if let Some(r) = backend.opening() {
        app.report = r;
    }
    app.refresh(&mut backend);
    (app, backend)
}

/// Compare a frame with `tests/golden/<name>.txt`; `QFLOW_UPDATE_GOLDEN=1`
/// rewrites it (then review the diff by eye).
pub fn golden(name: &str, frame: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"));
    if std::env::var_os("QFLOW_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, frame).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing golden frame {}: run with QFLOW_UPDATE_GOLDEN=1 and review it\n{frame}",
            path.display()
        )
    });
    assert!(
        want == frame,
        "golden frame {name} changed; review, then rerun with QFLOW_UPDATE_GOLDEN=1\n--- want\n{want}\n--- got\n{frame}"
    );
}

/// The console instance's history rows of one `kind`, oldest first, as
/// persisted in the store.
pub fn history_of(
    be: &qflow_tui::engine_backend::EngineBackend,
    kind: &str,
) -> Vec<qflow_engine::store::HistoryRow> {
    let id = be.instance_id().unwrap().to_string();
    be.store()
        .history(&id)
        .unwrap()
        .into_iter()
        .filter(|h| h.kind == kind)
        .collect()
}

/// The console instance's status and decoded snapshot, as persisted.
pub fn snapshot(
    be: &qflow_tui::engine_backend::EngineBackend,
) -> (
    qflow_engine::runtime::decide::Status,
    qflow_engine::runtime::snapshot::Snapshot,
) {
    let row = be
        .store()
        .instance(be.instance_id().unwrap())
        .unwrap()
        .unwrap();
    (
        row.status,
        qflow_engine::runtime::snapshot::Snapshot::decode(&row.snapshot).unwrap(),
    )
}
