//! The console's state machine: keys in, [`Command`]s out.
//!
//! [`App::on_key`] only updates what the console shows (focus, scroll,
//! prompts) and says which command a key completes; [`App::run`] hands it to
//! a [`Backend`] and reads the view back. Tests drive both halves with key
//! sequences, so every key is checked without a terminal.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::backend::{Backend, Command, FailClass, Report, Resolution, ResponseTarget};
use crate::keymap::{self, Action};
use crate::view::{InstanceRowView, View};

/// The panels, in `tab` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Panel {
    Process,
    Schedule,
    Snapshot,
    Timers,
    Outbox,
    Correlations,
    Incidents,
    History,
}

impl Panel {
    pub const ALL: [Panel; 8] = [
        Panel::Process,
        Panel::Schedule,
        Panel::Snapshot,
        Panel::Timers,
        Panel::Outbox,
        Panel::Correlations,
        Panel::Incidents,
        Panel::History,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Panel::Process => "Process",
            Panel::Schedule => "Schedule",
            Panel::Snapshot => "Snapshot",
            Panel::Timers => "Timers",
            Panel::Outbox => "Outbox",
            Panel::Correlations => "Correlations",
            Panel::Incidents => "Incidents",
            Panel::History => "History",
        }
    }

    fn index(self) -> usize {
        Panel::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }
}

/// Which screen is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// Attach mode: the database's instances, FAILED first.
    List,
    /// One instance's panels.
    Instance,
}

/// One line of a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub label: String,
    pub hint: String,
}

impl Choice {
    fn new(label: impl Into<String>, hint: impl Into<String>) -> Choice {
        Choice {
            label: label.into(),
            hint: hint.into(),
        }
    }
}

/// What a prompt is collecting; a completed stage either yields a command or
/// opens the next stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    Advance,
    FailCode,
    FailClass { code: String },
    RetryAfter { code: String },
    RespondTarget,
    RespondBody { target: ResponseTarget },
    Resolve,
}

/// A small modal: a list of choices, the last of which may open a text field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub stage: Stage,
    pub title: String,
    pub choices: Vec<Choice>,
    pub selected: usize,
    /// The last choice asks for text instead of being a value.
    pub custom: bool,
    /// `Some` while typing.
    pub input: Option<String>,
    pub input_label: String,
    /// Why the typed text was refused.
    pub error: Option<String>,
}

const TIME_CHOICES: [(&str, i64); 4] = [
    ("30s", 30_000),
    ("5m", 300_000),
    ("1h", 3_600_000),
    ("1d", 86_400_000),
];

const COMMON_CODES: [&str; 3] = ["PROVIDER_DOWN", "INVALID_INPUT", "RATE_LIMITED"];

/// The console's state.
#[derive(Debug, Clone)]
pub struct App {
    pub screen: Screen,
    /// Attach mode: there is a list to go back to.
    pub attached: bool,
    pub view: Option<View>,
    pub list: Vec<InstanceRowView>,
    pub list_selected: usize,
    pub focus: Panel,
    scroll: [u16; 8],
    pub help: bool,
    pub prompt: Option<Prompt>,
    pub report: Report,
    pub quit: bool,
    /// Codes the fail picker offers first.
    pub codes: Vec<String>,
}

impl App {
    /// A console driving one instance.
    pub fn new() -> App {
        App {
            screen: Screen::Instance,
            attached: false,
            view: None,
            list: Vec::new(),
            list_selected: 0,
            focus: Panel::Process,
            scroll: [0; 8],
            help: false,
            prompt: None,
            report: Report::info("space steps to the next decision · ? shows every key"),
            quit: false,
            codes: Vec::new(),
        }
    }

    /// A console attached to a database: starts on the instance list.
    pub fn attached() -> App {
        App {
            screen: Screen::List,
            attached: true,
            report: Report::info("enter opens an instance · FAILED ones are listed first"),
            ..App::new()
        }
    }

    /// Read everything the backend has (first frame, and after each command).
    pub fn refresh(&mut self, backend: &mut dyn Backend) {
        if self.attached {
            match backend.instances() {
                Ok(list) => {
                    self.list = list;
                    self.list_selected = self.list_selected.min(self.list.len().saturating_sub(1));
                }
                Err(e) => self.report = Report::bad(format!("error: {e}")),
            }
        }
        match backend.view() {
            Ok(v) => self.view = v,
            Err(e) => self.report = Report::bad(format!("error: {e}")),
        }
        if self.codes.is_empty() {
            self.codes = backend.failure_codes();
        }
    }

    /// Handle a key: update the console and run the command it completes.
    pub fn handle(&mut self, backend: &mut dyn Backend, key: KeyEvent) {
        if let Some(cmd) = self.on_key(key) {
            self.run(backend, &cmd);
        }
    }

    /// Run one command and read the store back.
    pub fn run(&mut self, backend: &mut dyn Backend, cmd: &Command) {
        match backend.execute(cmd) {
            Ok(r) => self.report = r,
            Err(e) => self.report = Report::bad(format!("error: {e}")),
        }
        let report = self.report.clone();
        self.refresh(backend);
        if self.report.tone != crate::backend::Tone::Bad {
            self.report = report;
        }
        if let Command::Open { .. } = cmd {
            if self.view.is_some() {
                self.screen = Screen::Instance;
                self.scroll = [0; 8];
            }
        }
    }

    /// The scroll offset of a panel (the renderer clamps it).
    pub fn scroll(&self, panel: Panel) -> u16 {
        self.scroll[panel.index()]
    }

    /// A key's effect on the console; `Some` when it completes a command.
    pub fn on_key(&mut self, key: KeyEvent) -> Option<Command> {
        if key.kind == crossterm::event::KeyEventKind::Release {
            return None;
        }
        if self.prompt.is_some() {
            return self.prompt_key(key);
        }
        let action = keymap::lookup(key)?;
        if self.help {
            if matches!(action, Action::Help | Action::Back) {
                self.help = false;
            } else if action == Action::Quit {
                self.quit = true;
            }
            return None;
        }
        match action {
            Action::Quit => {
                self.quit = true;
                None
            }
            Action::Help => {
                self.help = true;
                None
            }
            _ if self.screen == Screen::List => self.list_key(action),
            Action::Back => {
                if self.attached {
                    self.screen = Screen::List;
                    self.report =
                        Report::info("enter opens an instance · FAILED ones are listed first");
                }
                None
            }
            Action::FocusNext => {
                self.focus = Panel::ALL[(self.focus.index() + 1) % Panel::ALL.len()];
                None
            }
            Action::FocusPrev => {
                self.focus =
                    Panel::ALL[(self.focus.index() + Panel::ALL.len() - 1) % Panel::ALL.len()];
                None
            }
            Action::ScrollUp => {
                let s = &mut self.scroll[self.focus.index()];
                *s = s.saturating_sub(1);
                None
            }
            Action::ScrollDown => {
                let s = &mut self.scroll[self.focus.index()];
                *s = s.saturating_add(1);
                None
            }
            Action::Open => None,
            acting => self.acting_key(acting),
        }
    }

    fn list_key(&mut self, action: Action) -> Option<Command> {
        match action {
            Action::ScrollUp => {
                self.list_selected = self.list_selected.saturating_sub(1);
                None
            }
            Action::ScrollDown => {
                if self.list_selected + 1 < self.list.len() {
                    self.list_selected += 1;
                }
                None
            }
            Action::Open | Action::Step => {
                self.list.get(self.list_selected).map(|r| Command::Open {
                    instance: r.id.clone(),
                })
            }
            _ => {
                self.report = Report::info("open an instance first (enter)");
                None
            }
        }
    }

    fn acting_key(&mut self, action: Action) -> Option<Command> {
        let Some(view) = &self.view else {
            self.report = Report::warn("no instance to act on");
            return None;
        };
        if view.read_only {
            self.report = Report::warn(
                "read-only: an attached database is inspected, not driven (run `qflow console MODEL --db FILE` to step it)",
            );
            return None;
        }
        if matches!(action, Action::Respond | Action::Poison) && !view.channel_calls {
            self.report = Report::warn(format!(
                "`{}`: this model has no channel call to {}",
                keymap::binding(action).key_label,
                if action == Action::Respond {
                    "answer"
                } else {
                    "poison"
                }
            ));
            return None;
        }
        match action {
            Action::Step => Some(Command::Step),
            Action::Succeed => Some(Command::Succeed),
            Action::Poison => Some(Command::Poison),
            Action::Advance => {
                self.open(Stage::Advance);
                None
            }
            Action::Fail => {
                self.open(Stage::FailCode);
                None
            }
            Action::Respond => {
                self.open(Stage::RespondTarget);
                None
            }
            Action::Resolve => {
                self.open(Stage::Resolve);
                None
            }
            _ => None,
        }
    }

    fn open(&mut self, stage: Stage) {
        let (title, choices, custom, input_label): (String, Vec<Choice>, bool, &str) = match &stage
        {
            Stage::Advance => (
                "Advance virtual time by".into(),
                TIME_CHOICES
                    .iter()
                    .map(|(l, _)| Choice::new(*l, ""))
                    .chain([Choice::new("custom…", "an ISO-8601 duration")])
                    .collect(),
                true,
                "ISO duration (e.g. PT90S, PT2H, P1D)",
            ),
            Stage::FailCode => {
                let mut codes: Vec<String> = self.codes.clone();
                for c in COMMON_CODES {
                    if !codes.iter().any(|x| x == c) {
                        codes.push(c.to_string());
                    }
                }
                (
                    "Fail the next attempt with code".into(),
                    codes
                        .into_iter()
                        .map(|c| Choice::new(c, ""))
                        .chain([Choice::new("custom…", "type a code")])
                        .collect(),
                    true,
                    "failure code",
                )
            }
            Stage::FailClass { code } => (
                format!("Classify {code} as"),
                FailClass::ALL
                    .iter()
                    .map(|c| Choice::new(c.as_str(), c.meaning()))
                    .collect(),
                false,
                "",
            ),
            Stage::RetryAfter { code } => (
                format!("{code}: the provider says retry after"),
                TIME_CHOICES
                    .iter()
                    .take(3)
                    .map(|(l, _)| Choice::new(*l, "capped by maxDelay"))
                    .chain([Choice::new("custom…", "an ISO-8601 duration")])
                    .collect(),
                true,
                "ISO duration (e.g. PT10M)",
            ),
            Stage::RespondTarget => {
                let mut choices = vec![Choice::new(
                    "the live attempt",
                    "resumes the flow if it is waiting",
                )];
                for n in self.superseded_attempts() {
                    choices.push(Choice::new(
                        format!("superseded attempt {n}"),
                        "expect the honest refusal",
                    ));
                }
                ("Deliver a response to".into(), choices, false, "")
            }
            Stage::RespondBody { .. } => ("Response body".into(), Vec::new(), true, "JSON body"),
            Stage::Resolve => (
                "Resolve the reconciliation as".into(),
                Resolution::ALL
                    .iter()
                    .map(|r| Choice::new(r.as_str(), r.meaning()))
                    .collect(),
                false,
                "",
            ),
        };
        let input = match stage {
            Stage::RespondBody { .. } => Some("{}".to_string()),
            _ => None,
        };
        self.prompt = Some(Prompt {
            stage,
            title,
            choices,
            selected: 0,
            custom,
            input,
            input_label: input_label.to_string(),
            error: None,
        });
    }

    /// Attempts of the schedule's node before the latest one.
    fn superseded_attempts(&self) -> Vec<u32> {
        let Some(s) = self.view.as_ref().and_then(|v| v.schedule.as_ref()) else {
            return Vec::new();
        };
        let last = s.done.iter().map(|a| a.n).max().unwrap_or(0);
        s.done.iter().map(|a| a.n).filter(|n| *n < last).collect()
    }

    fn prompt_key(&mut self, key: KeyEvent) -> Option<Command> {
        let ctrl_c =
            key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c');
        if ctrl_c {
            self.quit = true;
            return None;
        }
        let p = self.prompt.as_mut()?;
        if let Some(text) = p.input.as_mut() {
            match key.code {
                KeyCode::Esc => {
                    if p.choices.is_empty() {
                        self.prompt = None;
                    } else {
                        p.input = None;
                        p.error = None;
                    }
                }
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Enter => {
                    let text = text.trim().to_string();
                    return self.complete(Value::Text(text));
                }
                KeyCode::Char(c) => text.push(c),
                _ => {}
            }
            return None;
        }
        let n = p.choices.len();
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => {
                self.prompt = None;
                self.report = Report::info("cancelled");
            }
            KeyCode::Up | KeyCode::Char('k') => p.selected = p.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab if p.selected + 1 < n => {
                p.selected += 1;
            }
            KeyCode::Char(c @ '1'..='9') => {
                let i = c as usize - '1' as usize;
                if i < n {
                    p.selected = i;
                    return self.pick();
                }
            }
            KeyCode::Enter | KeyCode::Char(' ') => return self.pick(),
            _ => {}
        }
        None
    }

    fn pick(&mut self) -> Option<Command> {
        let p = self.prompt.as_mut()?;
        if p.custom && p.selected + 1 == p.choices.len() {
            p.input = Some(String::new());
            return None;
        }
        let i = p.selected;
        self.complete(Value::Index(i))
    }

    fn complete(&mut self, value: Value) -> Option<Command> {
        let p = self.prompt.as_mut()?;
        let stage = p.stage.clone();
        let label = match &value {
            Value::Index(i) => p
                .choices
                .get(*i)
                .map(|c| c.label.clone())
                .unwrap_or_default(),
            Value::Text(t) => t.clone(),
        };
        let time = |value: &Value| -> Result<i64, String> {
            match value {
                Value::Index(i) => Ok(TIME_CHOICES[(*i).min(TIME_CHOICES.len() - 1)].1),
                Value::Text(t) => parse_duration_ms(t),
            }
        };
        match stage {
            Stage::Advance => match time(&value) {
                Ok(ms) => {
                    self.prompt = None;
                    Some(Command::Advance { ms })
                }
                Err(e) => {
                    p.error = Some(e);
                    None
                }
            },
            Stage::FailCode => {
                if label.is_empty() || label.chars().any(char::is_whitespace) {
                    p.error = Some("a code is one word, e.g. PROVIDER_DOWN".into());
                    return None;
                }
                self.open(Stage::FailClass { code: label });
                None
            }
            Stage::FailClass { code } => {
                let class = match value {
                    Value::Index(i) => FailClass::ALL[i.min(3)],
                    Value::Text(_) => return None,
                };
                if class == FailClass::RateLimited {
                    self.open(Stage::RetryAfter { code });
                    return None;
                }
                self.prompt = None;
                Some(Command::Fail {
                    code,
                    class,
                    retry_after_ms: None,
                })
            }
            Stage::RetryAfter { code } => match time(&value) {
                Ok(ms) => {
                    self.prompt = None;
                    Some(Command::Fail {
                        code,
                        class: FailClass::RateLimited,
                        retry_after_ms: Some(ms),
                    })
                }
                Err(e) => {
                    p.error = Some(e);
                    None
                }
            },
            Stage::RespondTarget => {
                let target = match value {
                    Value::Index(0) => ResponseTarget::Live,
                    Value::Index(i) => {
                        let n = self.superseded_attempts().get(i - 1).copied().unwrap_or(1);
                        ResponseTarget::Attempt(n)
                    }
                    Value::Text(_) => return None,
                };
                self.open(Stage::RespondBody { target });
                None
            }
            Stage::RespondBody { target } => {
                if let Err(e) = serde_json_check(&label) {
                    p.error = Some(e);
                    return None;
                }
                self.prompt = None;
                Some(Command::Respond {
                    target,
                    body: label,
                })
            }
            Stage::Resolve => {
                let r = match value {
                    Value::Index(i) => Resolution::ALL[i.min(2)],
                    Value::Text(_) => return None,
                };
                self.prompt = None;
                Some(Command::Resolve(r))
            }
        }
    }
}

impl Default for App {
    fn default() -> App {
        App::new()
    }
}

enum Value {
    Index(usize),
    Text(String),
}

/// An ISO-8601 duration typed at a prompt, in milliseconds; the engine's
/// parser, so the console accepts exactly what a model may write.
pub fn parse_duration_ms(text: &str) -> Result<i64, String> {
    let d: Duration = qflow_engine::duration::parse(text).map_err(|e| e.message)?;
    if d.is_zero() {
        return Err("zero does not move time: try PT30S".into());
    }
    Ok(d.as_millis().min(i64::MAX as u128) as i64)
}

/// A response body must be a JSON object (it becomes the task's variables).
fn serde_json_check(text: &str) -> Result<(), String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(_) => Err("a response body is a JSON object, e.g. {\"approved\": true}".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}
