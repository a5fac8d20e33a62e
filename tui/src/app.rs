//! The console's state machine: keys in, [`Command`]s out.
//!
//! [`App::on_key`] only updates what the console shows (focus, scroll,
//! prompts) and says which command a key completes; [`App::run`] hands it to
//! a [`Backend`] and reads the view back. Tests drive both halves with key
//! sequences, so every key is checked without a terminal.

use std::cell::Cell;

use crossterm::event::KeyEvent;

use crate::backend::{Backend, Command, Report};
use crate::keymap::{self, Action};
use crate::view::{DeploymentRowView, FleetView, InstanceRowView, PauseTarget, Status, View};

mod prompts;

pub use prompts::{parse_duration_ms, Choice, Prompt, Stage};

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

/// The console's state.
#[derive(Debug, Clone)]
pub struct App {
    pub screen: Screen,
    /// Attach mode: there is a list to go back to.
    pub attached: bool,
    pub view: Option<View>,
    pub list: Vec<InstanceRowView>,
    /// Attach mode: the database's deployments, listed above the instances.
    pub deployments: Vec<DeploymentRowView>,
    /// Attach mode: the fleet's observations, above the lists.
    pub fleet: Option<FleetView>,
    pub list_selected: usize,
    pub focus: Panel,
    scroll: [u16; 8],
    pub help: bool,
    /// The selected incident is shown in full, over the panels.
    pub incident: bool,
    /// How far the help overlay is scrolled.
    pub help_scroll: u16,
    pub prompt: Option<Prompt>,
    pub report: Report,
    pub quit: bool,
    /// Codes the fail picker offers first.
    pub codes: Vec<String>,
    /// The process panel draws the diagram (else the list).
    pub diagram: bool,
    /// How far the diagram is panned from where it follows the current
    /// node, in cells (x right, y down); a command resets it.
    pub pan: (i32, i32),
    /// How far the last frame could pan each way: the renderer records it,
    /// so a pan key never runs past the drawing's edge.
    pub pan_room: Cell<PanRoom>,
    /// Instance list: the words a row must hold to be listed (`/`).
    pub filter: String,
    /// Instance list: the filter is being typed.
    pub filtering: bool,
    /// Instance list: how many rows the last frame showed (a page for
    /// PageUp/PageDown; the renderer records it).
    pub list_page: Cell<usize>,
}

/// How far the diagram can pan from where it follows the current node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PanRoom {
    pub left: i32,
    pub right: i32,
    pub up: i32,
    pub down: i32,
}

/// Cells one pan key moves the diagram: across, and up or down.
const PAN_X: i32 = 8;
const PAN_Y: i32 = 2;
/// Rows PageUp/PageDown scroll a panel.
const PAGE: u16 = 10;

impl App {
    /// A console driving one instance.
    pub fn new() -> App {
        App {
            screen: Screen::Instance,
            attached: false,
            view: None,
            list: Vec::new(),
            deployments: Vec::new(),
            fleet: None,
            list_selected: 0,
            focus: Panel::Process,
            scroll: [0; 8],
            help: false,
            incident: false,
            help_scroll: 0,
            prompt: None,
            report: Report::info("space steps to the next decision · ? shows every key"),
            quit: false,
            codes: Vec::new(),
            diagram: false,
            pan: (0, 0),
            pan_room: Cell::new(PanRoom::default()),
            filter: String::new(),
            filtering: false,
            list_page: Cell::new(10),
        }
    }

    /// Instance list: the rows the filter keeps, as indices into `list`
    /// (all of them without a filter). A row is kept when it holds every
    /// word of the filter, ignoring case, in its id, status, failure code
    /// and reason, process, deployment (`d2`), holds and quarantine.
    pub fn visible(&self) -> Vec<usize> {
        let words: Vec<String> = self
            .filter
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        self.list
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                if words.is_empty() {
                    return true;
                }
                let mut hay = format!(
                    "{} {} {} {} {} d{}",
                    r.id,
                    crate::view::status_label(r.status),
                    r.code.as_deref().unwrap_or(""),
                    r.reason.as_deref().unwrap_or(""),
                    r.process,
                    r.deployment
                );
                for h in &r.held_by {
                    hay.push(' ');
                    hay.push_str(h);
                }
                if r.quarantined {
                    hay.push_str(" quarantined");
                }
                let hay = hay.to_lowercase();
                words.iter().all(|w| hay.contains(w.as_str()))
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Keep the selection on a listed row: the first one the filter keeps
    /// when the selected row is filtered out.
    fn keep_selection_visible(&mut self) {
        let visible = self.visible();
        if !visible.contains(&self.list_selected) {
            if let Some(&first) = visible.first() {
                self.list_selected = first;
            }
        }
    }

    /// Move the list's selection `by` listed rows (negative: up), or to the
    /// first or last listed row, never off the list.
    fn select_by(&mut self, by: isize) {
        let visible = self.visible();
        if visible.is_empty() {
            return;
        }
        let at = visible
            .iter()
            .position(|&i| i == self.list_selected)
            .unwrap_or(0) as isize;
        let to = (at + by).clamp(0, visible.len() as isize - 1) as usize;
        self.list_selected = visible[to];
    }

    /// A key while the filter is typed: text edits it (the list follows at
    /// once), enter keeps it, esc clears it.
    fn filter_key(&mut self, key: KeyEvent) {
        use crossterm::event::KeyCode;
        match key.code {
            KeyCode::Enter => {
                self.filtering = false;
                self.report = Report::info(self.filter_report());
            }
            KeyCode::Esc => {
                self.filtering = false;
                self.filter.clear();
                self.report = Report::info("filter cleared: every instance is listed");
            }
            KeyCode::Backspace => {
                self.filter.pop();
            }
            KeyCode::Char(c) => self.filter.push(c),
            _ => {}
        }
        self.keep_selection_visible();
    }

    /// What the filter keeps, in words.
    fn filter_report(&self) -> String {
        let n = self.visible().len();
        if self.filter.trim().is_empty() {
            return "no filter: every instance is listed".into();
        }
        format!(
            "filter \"{}\": {n} of {} instances · / edits it, esc clears it",
            self.filter.trim(),
            self.list.len()
        )
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
            // Whole-store reads: only while the fleet is what is shown.
            if self.screen == Screen::List {
                if let Ok(fleet) = backend.fleet() {
                    self.fleet = fleet;
                }
            }
            match backend.instances() {
                Ok(list) => {
                    // The selection follows its instance, not its row: a
                    // new FAILED instance is listed first and would
                    // otherwise move the highlight onto another one.
                    let selected = self.list.get(self.list_selected).map(|r| r.id.clone());
                    self.list = list;
                    self.list_selected = selected
                        .and_then(|id| self.list.iter().position(|r| r.id == id))
                        .unwrap_or(self.list_selected)
                        .min(self.list.len().saturating_sub(1));
                    self.keep_selection_visible();
                }
                Err(e) => self.report = Report::bad(format!("error: {e}")),
            }
            match backend.deployments() {
                Ok(d) => self.deployments = d,
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

    /// Read the database again when the user is idle: replicas and other
    /// operators change a shared store while the console looks at it. Not
    /// while a prompt or overlay is open (its answer must apply to what was
    /// asked about), and never in a local run (nothing else writes there).
    pub fn tick(&mut self, backend: &mut dyn Backend) -> bool {
        if !self.attached || self.prompt.is_some() || self.help || self.incident {
            return false;
        }
        self.refresh(backend);
        true
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
        // The diagram follows the step that just ran.
        self.pan = (0, 0);
        self.refresh(backend);
        // A pause or a quarantine made from an instance changes what the
        // fleet shows and offers: read it again now.
        if self.attached
            && self.screen == Screen::Instance
            && matches!(
                cmd,
                Command::SetPause { .. } | Command::SetQuarantine { .. }
            )
        {
            if let Ok(fleet) = backend.fleet() {
                self.fleet = fleet;
            }
        }
        if self.report.tone != crate::backend::Tone::Bad {
            self.report = report;
        }
        if let Command::Open { .. } = cmd {
            if self.view.is_some() {
                self.screen = Screen::Instance;
                self.scroll = [0; 8];
            }
        }
        if let Command::PreviewMigration { .. } = cmd {
            if let Some(preview) = backend.migration_preview() {
                self.open(Stage::MigrateConfirm(Box::new(preview)));
            }
        }
    }

    /// The scroll offset of a panel (the renderer clamps it).
    pub fn scroll(&self, panel: Panel) -> u16 {
        self.scroll[panel.index()]
    }

    /// The incident the incidents panel selects (its first row scrolled to,
    /// never past the last): what `enter` shows in full.
    pub fn selected_incident(&self) -> Option<usize> {
        let n = self.view.as_ref()?.inspection.incidents.len();
        (n > 0).then(|| (self.scroll(Panel::Incidents) as usize).min(n - 1))
    }

    /// Focus on incidents: say how to read one in full (the panel's row is
    /// cut to its width).
    fn hint_incidents(&mut self) {
        if self.focus == Panel::Incidents && self.selected_incident().is_some() {
            self.report =
                Report::info("incidents: j/k select · enter shows the selected one in full");
        }
    }

    /// Keys while an incident is shown in full: j/k read the previous or
    /// next one, enter or esc close it.
    fn incident_key(&mut self, action: Action) {
        let n = self
            .view
            .as_ref()
            .map_or(0, |v| v.inspection.incidents.len());
        let at = self.selected_incident().unwrap_or(0) as u16;
        let s = &mut self.scroll[Panel::Incidents.index()];
        match action {
            Action::Open | Action::Back => self.incident = false,
            Action::Quit => self.quit = true,
            Action::ScrollUp => *s = at.saturating_sub(1),
            Action::ScrollDown => *s = (at + 1).min(n.saturating_sub(1) as u16),
            _ => {}
        }
    }

    /// A key's effect on the console; `Some` when it completes a command.
    pub fn on_key(&mut self, key: KeyEvent) -> Option<Command> {
        if key.kind == crossterm::event::KeyEventKind::Release {
            return None;
        }
        if self.prompt.is_some() {
            return self.prompt_key(key);
        }
        if self.filtering && self.screen == Screen::List && !self.help {
            let ctrl_c = key
                .modifiers
                .contains(crossterm::event::KeyModifiers::CONTROL)
                && key.code == crossterm::event::KeyCode::Char('c');
            if ctrl_c {
                self.quit = true;
            } else {
                self.filter_key(key);
            }
            return None;
        }
        let action = keymap::lookup(key)?;
        if self.incident {
            self.incident_key(action);
            return None;
        }
        if self.help {
            match action {
                Action::Help | Action::Back => {
                    self.help = false;
                    self.help_scroll = 0;
                }
                Action::Quit => self.quit = true,
                // A small terminal shows part of the overlay: j/k scroll it.
                Action::ScrollDown => self.help_scroll = self.help_scroll.saturating_add(1),
                Action::ScrollUp => self.help_scroll = self.help_scroll.saturating_sub(1),
                _ => {}
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
                    self.incident = false;
                    self.screen = Screen::List;
                    self.report =
                        Report::info("enter opens an instance · FAILED ones are listed first");
                }
                None
            }
            Action::FocusNext => {
                self.focus = Panel::ALL[(self.focus.index() + 1) % Panel::ALL.len()];
                self.hint_incidents();
                None
            }
            Action::FocusPrev => {
                self.focus =
                    Panel::ALL[(self.focus.index() + Panel::ALL.len() - 1) % Panel::ALL.len()];
                self.hint_incidents();
                None
            }
            Action::ScrollUp if self.diagram && self.focus == Panel::Process => {
                self.pan_by(0, -PAN_Y);
                None
            }
            Action::ScrollDown if self.diagram && self.focus == Panel::Process => {
                self.pan_by(0, PAN_Y);
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
            Action::Top => {
                self.scroll[self.focus.index()] = 0;
                None
            }
            Action::PageUp | Action::PageDown => {
                let s = &mut self.scroll[self.focus.index()];
                *s = if action == Action::PageUp {
                    s.saturating_sub(PAGE)
                } else {
                    s.saturating_add(PAGE)
                };
                None
            }
            Action::Bottom | Action::Filter => {
                self.report = Report::info(if self.attached {
                    "G and / work in the instance list: esc goes back to it"
                } else {
                    "G and / work in the instance list of `qflow console --db DB`"
                });
                None
            }
            Action::Diagram => {
                self.diagram = !self.diagram;
                self.pan = (0, 0);
                self.report = Report::info(if self.diagram {
                    "diagram: h/l pan across, j/k up and down (process panel focused) · d lists the nodes"
                } else {
                    "process as a list · d draws the diagram"
                });
                None
            }
            Action::PanLeft | Action::PanRight if self.diagram => {
                let dx = if action == Action::PanLeft {
                    -PAN_X
                } else {
                    PAN_X
                };
                self.pan_by(dx, 0);
                None
            }
            Action::PanLeft | Action::PanRight => {
                self.report = Report::info("h/l pan the diagram: d draws it");
                None
            }
            Action::Open if self.focus == Panel::Incidents => {
                if self.selected_incident().is_some() {
                    self.incident = true;
                } else {
                    self.report = Report::info("no incident to read");
                }
                None
            }
            Action::Open => None,
            Action::Migrate => self.migrate_key(),
            Action::Pause => {
                self.pause_instance_key();
                None
            }
            Action::Quarantine => {
                let target = self.view.as_ref().map(|v| {
                    (
                        v.inspection.id.clone(),
                        v.inspection.quarantined_ms.is_none(),
                    )
                });
                self.quarantine_key(target);
                None
            }
            acting => self.acting_key(acting),
        }
    }

    /// Pan the diagram, no further than the last frame could show.
    fn pan_by(&mut self, dx: i32, dy: i32) {
        let room = self.pan_room.get();
        self.pan = (
            (self.pan.0 + dx).clamp(-room.left, room.right),
            (self.pan.1 + dy).clamp(-room.up, room.down),
        );
    }

    fn list_key(&mut self, action: Action) -> Option<Command> {
        let page = self.list_page.get().max(1) as isize;
        match action {
            Action::ScrollUp => {
                self.select_by(-1);
                None
            }
            Action::ScrollDown => {
                self.select_by(1);
                None
            }
            Action::Top => {
                self.select_by(isize::MIN / 2);
                None
            }
            Action::Bottom => {
                self.select_by(isize::MAX / 2);
                None
            }
            Action::PageUp => {
                self.select_by(-page);
                None
            }
            Action::PageDown => {
                self.select_by(page);
                None
            }
            Action::Filter => {
                self.filtering = true;
                self.report = Report::info(
                    "filter: type words (id, status, code, process, d2 for deployment 2) · enter keeps it · esc clears it",
                );
                None
            }
            Action::Back if !self.filter.is_empty() => {
                self.filter.clear();
                self.report = Report::info("filter cleared: every instance is listed");
                None
            }
            Action::Back => None,
            Action::Migrate => {
                let visible = self.visible();
                match self
                    .list
                    .get(self.list_selected)
                    .filter(|_| visible.contains(&self.list_selected))
                {
                    Some(r) => {
                        let d = r.deployment;
                        self.open(Stage::MigrateTarget { failed_of: Some(d) });
                    }
                    None => self.report = Report::info("no instance selected"),
                }
                None
            }
            Action::Open | Action::Step => {
                if !self.visible().contains(&self.list_selected) {
                    self.report = Report::info("no instance listed: esc clears the filter");
                    return None;
                }
                self.list.get(self.list_selected).map(|r| Command::Open {
                    instance: r.id.clone(),
                })
            }
            Action::Pause => {
                match &self.fleet {
                    Some(f) if !f.targets.is_empty() => {
                        let targets = f.targets.clone();
                        self.open(Stage::Pause { targets })
                    }
                    _ => {
                        self.report = Report::info(
                            "nothing to pause: no retry is parked and no pause is in force",
                        )
                    }
                }
                None
            }
            Action::Quarantine => {
                let target = self
                    .list
                    .get(self.list_selected)
                    .map(|r| (r.id.clone(), !r.quarantined));
                self.quarantine_key(target);
                None
            }
            _ => {
                self.report = Report::info("open an instance first (enter)");
                None
            }
        }
    }

    /// `Q`: quarantine or release `target` (an instance, and whether to
    /// quarantine it), after a confirmation.
    fn quarantine_key(&mut self, target: Option<(String, bool)>) {
        if !self.attached {
            self.report = Report::warn("quarantine works on a database: `qflow console --db FILE`");
            return;
        }
        match target {
            Some((instance, quarantine)) => self.open(Stage::Quarantine {
                instance,
                quarantine,
            }),
            None => self.report = Report::info("no instance selected"),
        }
    }

    /// `P` on an instance: pause or unpause its own failure class or
    /// dependency (the engine says which), each shown paused when the
    /// fleet lists it so or a pause holds one of its parks.
    fn pause_instance_key(&mut self) {
        if !self.attached {
            self.report = Report::warn("pausing works on a database: `qflow console --db FILE`");
            return;
        }
        let Some(view) = &self.view else {
            self.report = Report::info("no instance selected");
            return;
        };
        let i = &view.inspection;
        let targets: Vec<PauseTarget> = i
            .pause_targets()
            .into_iter()
            .map(|(pause, value)| {
                let kind = pause.flag().to_string();
                let holding = i.held.iter().any(|h| h.kind == pause && h.value == value);
                let listed = self
                    .fleet
                    .iter()
                    .flat_map(|f| &f.targets)
                    .any(|t| t.paused && t.kind == kind && t.value == value);
                let hint = if holding {
                    "paused: it holds this instance's retry park"
                } else if listed {
                    "paused"
                } else if pause == qflow_engine::store::contain::PauseKind::Class {
                    "the class of its last failure"
                } else {
                    "what its last attempt called"
                };
                PauseTarget {
                    paused: listed || holding,
                    kind,
                    value,
                    hint: hint.to_string(),
                }
            })
            .collect();
        if targets.is_empty() {
            self.report = Report::info(
                "nothing to pause for this instance: it has made no attempt at its current node",
            );
            return;
        }
        self.open(Stage::Pause { targets });
    }

    /// `m`: repair by migration, on an instance of an attached database.
    fn migrate_key(&mut self) -> Option<Command> {
        let Some(view) = &self.view else {
            self.report = Report::warn("no instance to migrate");
            return None;
        };
        if !self.attached {
            self.report = Report::warn(
                "repair by migration works on a database: quit and run `qflow console --db FILE` on this session's database (or `qflow migrate`)",
            );
            return None;
        }
        if view.status() == Status::Completed {
            self.report = Report::warn("a completed instance has nothing to repair or move");
            return None;
        }
        self.open(Stage::MigrateTarget { failed_of: None });
        None
    }

    fn acting_key(&mut self, action: Action) -> Option<Command> {
        let Some(view) = &self.view else {
            self.report = Report::warn("no instance to act on");
            return None;
        };
        if view.inspection.quarantined_ms.is_some() {
            self.report = Report::warn(
                "quarantined: nothing decides for this instance until it is released (Q)",
            );
            return None;
        }
        if view.read_only {
            self.report = Report::warn(
                "read-only: this instance is finished, it is inspected, not driven (a FAILED one: m repairs it, then space continues it)",
            );
            return None;
        }
        if matches!(action, Action::Respond | Action::Poison) && !view.channel_calls() {
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
        if let Some(why) = nothing_for(view, action) {
            self.report = Report::warn(format!("`{}`: {why}", keymap::binding(action).key_label));
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
}

/// Why `r`, `R` or `p` has nothing to act on in this state, said at once
/// rather than after a prompt has asked for input.
fn nothing_for(view: &View, action: Action) -> Option<String> {
    use qflow_engine::inspect::NodeState;
    use qflow_engine::instance::OutboxState;
    let i = &view.inspection;
    match action {
        Action::Respond if i.outbox.is_empty() => Some(
            "nothing to answer: no request has been sent yet (step until the call sends one)".into(),
        ),
        Action::Resolve
            if !i
                .nodes
                .iter()
                .any(|n| n.state == NodeState::WaitingReconciliation) =>
        {
            Some(
                "nothing waits for reconciliation (an attempt failed as unknown-outcome waits for one)"
                    .into(),
            )
        }
        Action::Poison if !i.outbox.iter().any(|o| o.state == OutboxState::Pending) => {
            Some(match i.outbox.iter().rev().find(|o| o.state == OutboxState::Delivered) {
                Some(o) => format!(
                    "the request of {} (attempt {}) was already delivered to {}: only a pending delivery can be poisoned; answer it with r, or let its timeout decide",
                    o.node, o.attempt, o.channel
                ),
                None => "nothing to poison: no request waits in the outbox (step until the call sends one)".into(),
            })
        }
        _ => None,
    }
}

impl Default for App {
    fn default() -> App {
        App::new()
    }
}
