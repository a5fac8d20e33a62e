//! Test doubles for the presentation layer: a rich view with every panel
//! filled, and a backend that records commands and replays a tape of views.
#![allow(dead_code)]

// The workspace's one golden-file tool, shared with the binary's tests.
#[path = "../../../tests/support/golden.rs"]
mod golden_files;

use qflow_engine::inspect::{Correlation, HistoryItem, SnapshotKey};
use qflow_engine::instance::history::Line;
use qflow_engine::instance::snapshot::Family;
use qflow_engine::instance::Purpose;
use qflow_engine::store::{OutboxEntry, TimerInfo};
use qflow_tui::backend::{Backend, Command, Report};
use qflow_tui::view::*;

fn node(id: &str, kind: NodeKind, state: NodeState, attempts: Option<u32>) -> NodeInspection {
    NodeInspection {
        id: id.into(),
        kind,
        state,
        attempts,
    }
}

fn snap_key(key: &str, value: &str, marker: Option<(&str, &str)>) -> SnapshotKey {
    SnapshotKey {
        key: key.into(),
        value: value.into(),
        family: Family::split(key).map(|(f, _)| f),
        marker: marker.map(|(code, class)| (code.into(), Some(class.into()))),
    }
}

fn timer(id: i64, node: &str, due_ms: i64, attempt: u32) -> TimerInfo {
    TimerInfo {
        id,
        node: node.into(),
        purpose: Purpose::Retry,
        due_ms,
        attempt: Some(attempt),
        armed: true,
        armed_seq: id,
        resolved_seq: None,
    }
}

/// A history item from its decision line (the JSON the store keeps), with
/// the console's note for it.
fn line(seq: i64, json: &str, tone: HistoryTone, detail: &str) -> (HistoryItem, HistoryNote) {
    let l: Line = serde_json::from_str(json).unwrap();
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let item = HistoryItem {
        seq,
        at_ms: l.at_s.ms(),
        kind: v["kind"].as_str().unwrap().into(),
        node: l.node.clone(),
        attempt: v["attempt"].as_u64().map(|a| a as u32),
        code: v["code"].as_str().map(str::to_string),
        line: Some(l),
    };
    let note = HistoryNote {
        detail: detail.into(),
        tone,
    };
    (item, note)
}

/// A DBG-08 charge parked before its third attempt, with a call in its
/// backoff window beside it, so every panel has rows.
pub(crate) fn rich_view() -> View {
    let fail = |n: u32, at: i64| PastAttempt {
        n,
        at_ms: at,
        result: AttemptResult::Failed {
            code: "PROVIDER_DOWN".into(),
            class: "transient".into(),
        },
        message: None,
    };
    let attempt = |n: u32, at_s: i64, next: u32, next_at_s: i64, delay_s: i64| {
        format!(
            r#"{{"at_s":{at_s},"attempt":{n},"class":"transient","code":"PROVIDER_DOWN","delay_s":{delay_s},"kind":"attempt","next_at_s":{next_at_s},"next_attempt":{next},"node":"charge","outcome":"failed","task":"charge","then":"backoff"}}"#
        )
    };
    let (history, notes): (Vec<HistoryItem>, Vec<HistoryNote>) = [
        line(
            1,
            r#"{"at_s":0,"kind":"start","node":"start","variables":{"amount":42,"orderId":"A-17"}}"#,
            HistoryTone::Other,
            "",
        ),
        line(
            2,
            &attempt(1, 0, 2, 60, 60),
            HistoryTone::Attempt,
            "transient · next +1m",
        ),
        line(
            3,
            &attempt(2, 60, 3, 360, 300),
            HistoryTone::Attempt,
            "transient · next +6m",
        ),
    ]
    .into_iter()
    .unzip();
    let charge_plan = SchedulePlan {
        node: "charge".into(),
        policy: "6 attempts over at most 13 h 1 min".into(),
        max_attempts: Some(6),
        used: 2,
        carried: 0,
        done: vec![fail(1, 0), fail(2, 60_000)],
        planned: [
            (3, 360_000),
            (4, 1_860_000),
            (5, 9_360_000),
            (6, 46_860_000),
        ]
        .into_iter()
        .map(|(n, at_ms)| PlannedAttempt { n, at_ms })
        .collect(),
        first_at_ms: Some(0),
        max_elapsed_ms: Some(172_800_000),
    };
    let inspection = Inspection {
        id: "charge-1".into(),
        process: "charge".into(),
        deployment_id: 1,
        status: Status::Waiting,
        started_ms: 0,
        updated_ms: 60_000,
        failure: None,
        raw_snapshot: None,
        waiting: Some(Waiting::Timer {
            node: "charge".into(),
            purpose: Purpose::Retry,
            due_ms: 360_000,
        }),
        nodes: vec![
            node("start", NodeKind::Start, NodeState::Completed, None),
            node(
                "charge",
                NodeKind::Task,
                NodeState::Parked {
                    eligible_at_ms: 360_000,
                },
                Some(2),
            ),
            node(
                "authorize",
                NodeKind::Call,
                NodeState::Parked {
                    eligible_at_ms: 90_000,
                },
                Some(1),
            ),
            node("done", NodeKind::End, NodeState::Idle, None),
        ],
        current: Some("charge".into()),
        snapshot: vec![
            snap_key("attempts.authorize", "1", None),
            snap_key("attempts.charge", "2", None),
            snap_key(
                "backoff.authorize",
                r#"{"code":"q.timeout","class":"transient"}"#,
                Some(("q.timeout", "transient")),
            ),
            snap_key("first_attempt.charge", "0", None),
            snap_key("frontier", r#"[{"node":"charge","state":"backoff"}]"#, None),
            snap_key("var.amount", "42", None),
            snap_key("var.orderId", "\"A-17\"", None),
        ],
        timers: vec![
            timer(1, "authorize", 90_000, 2),
            timer(2, "charge", 360_000, 3),
        ],
        outbox: vec![OutboxEntry {
            node: "authorize".into(),
            channel: "bank".into(),
            attempt: 1,
            state: qflow_engine::instance::OutboxState::Delivered,
            deliveries: 1,
            idempotency_key: "charge-1/authorize/1".into(),
            reason: None,
        }],
        correlations: vec![Correlation {
            key: "corr-charge-1-authorize".into(),
            node: "authorize".into(),
            in_backoff: true,
        }],
        incidents: vec![],
        history,
        schedules: vec![charge_plan],
        channel_calls: true,
        quarantined_ms: None,
        quarantined_by: None,
        quarantine_reason: None,
        held: Vec::new(),
        containment_log: Vec::new(),
        ramped: Vec::new(),
    };
    View {
        source: "samples/dbg08-charge.bpmn".into(),
        now_ms: 61_000,
        history: notes,
        schedule_node: Some("charge".into()),
        read_only: false,
        diagram: None,
        inspection,
    }
}

/// Records every command; each command moves to the next view of the tape
/// (the last one repeats).
pub(crate) struct Tape {
    pub views: Vec<View>,
    pub at: usize,
    pub commands: Vec<Command>,
    pub rows: Vec<InstanceRowView>,
}

impl Tape {
    pub(crate) fn new(views: Vec<View>) -> Tape {
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

pub(crate) fn key(c: char) -> crossterm::event::KeyEvent {
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
pub(crate) fn type_keys(app: &mut qflow_tui::App, backend: &mut dyn Backend, keys: &str) {
    for c in keys.chars() {
        app.handle(backend, key(c));
    }
}

/// The repository root (the workspace), from the tui crate.
pub(crate) fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A console over the real engine: `model` and `scenario` relative to the
/// repository (`samples/…`), on a temporary database.
pub(crate) fn engine(
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

/// Compare a frame with `tests/golden/<name>.txt`; `QFLOW_BLESS=1`
/// rewrites it (then review the diff): the workspace's one golden tool.
pub(crate) fn golden(name: &str, frame: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"));
    golden_files::check(&path, frame);
}

/// The console instance's history rows of one `kind`, oldest first, as
/// persisted in the store.
pub(crate) fn history_of(
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
pub(crate) fn snapshot(
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
