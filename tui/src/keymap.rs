//! The one keymap: the footer, the `?` overlay and the event loop all read
//! [`KEYMAP`], so a key cannot be documented one way and dispatched another.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Step,
    Advance,
    Fail,
    Succeed,
    Respond,
    Poison,
    Resolve,
    /// Repair by migration: target, mapping, budget, plan, confirmation.
    Migrate,
    /// Attached database: pause or unpause a failure class or a
    /// dependency (on the fleet: any; on an instance: its own).
    Pause,
    /// Attached database: quarantine or release the selected instance.
    Quarantine,
    FocusNext,
    FocusPrev,
    ScrollUp,
    ScrollDown,
    /// Switch the process panel between the diagram and the list.
    Diagram,
    PanLeft,
    PanRight,
    Help,
    Quit,
    /// Instance list: open the selected instance; in a prompt: confirm.
    Open,
    /// Back to the instance list (attach mode), or close a prompt.
    Back,
    /// The first row (the list), the top (a panel).
    Top,
    /// The last row (the list).
    Bottom,
    PageUp,
    PageDown,
    /// Instance list: filter the rows by what they say.
    Filter,
}

/// One binding: the keys, the short footer label, the help text.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub action: Action,
    pub keys: &'static [KeyCode],
    /// As the footer and overlay print the keys (`space`, `j/k ↑↓`).
    pub key_label: &'static str,
    /// The footer's word for it.
    pub short: &'static str,
    /// The overlay's sentence.
    pub help: &'static str,
    /// Whether it changes the instance (hidden when read-only).
    pub acts: bool,
    /// Shown in the footer (the overlay shows every binding).
    pub footer: bool,
    /// What it does in the instance list of an attached database, as the
    /// list's `?` overlay says it; `None`: it does nothing there.
    pub list: Option<&'static str>,
}

/// Every key the console understands, in the order the footer shows them.
pub const KEYMAP: &[Binding] = &[
    Binding {
        action: Action::Step,
        keys: &[KeyCode::Char(' ')],
        key_label: "space",
        short: "step",
        help: "take the next decision (nothing ready: skip virtual time to the next due timer)",
        acts: true,
        footer: true,
        list: Some("open the selected instance"),
    },
    Binding {
        action: Action::Advance,
        keys: &[KeyCode::Char('t')],
        key_label: "t",
        short: "time",
        help: "advance virtual time (30s, 5m, 1h, ISO), deciding what falls due on the way",
        acts: true,
        footer: true,
        list: None,
    },
    Binding {
        action: Action::Fail,
        keys: &[KeyCode::Char('f')],
        key_label: "f",
        short: "fail",
        help: "run the next attempt and make it fail: pick the code and the class",
        acts: true,
        footer: true,
        list: None,
    },
    Binding {
        action: Action::Succeed,
        keys: &[KeyCode::Char('o')],
        key_label: "o",
        short: "ok",
        help: "run the next attempt and let it succeed",
        acts: true,
        footer: true,
        list: None,
    },
    Binding {
        action: Action::Respond,
        keys: &[KeyCode::Char('r')],
        key_label: "r",
        short: "respond",
        help: "deliver a counterpart response, to the live attempt or a superseded one",
        acts: true,
        footer: true,
        list: None,
    },
    Binding {
        action: Action::Poison,
        keys: &[KeyCode::Char('p')],
        key_label: "p",
        short: "poison",
        help: "poison the pending request: its deliveries fail until maxDeliveries",
        acts: true,
        footer: true,
        list: None,
    },
    Binding {
        action: Action::Resolve,
        keys: &[KeyCode::Char('R')],
        key_label: "R",
        short: "resolve",
        help: "resolve a reconciliation: succeeded, failed or retry",
        acts: true,
        footer: true,
        list: None,
    },
    Binding {
        action: Action::Diagram,
        keys: &[KeyCode::Char('d')],
        key_label: "d",
        short: "diagram",
        help: "switch the process panel between the diagram and the list of nodes",
        acts: false,
        footer: true,
        list: None,
    },
    Binding {
        action: Action::Migrate,
        keys: &[KeyCode::Char('m')],
        key_label: "m",
        short: "migrate",
        help: "repair by migration (attached database): target, mapping, budget; plan, confirm",
        acts: false,
        // Shown on an open instance of an attached database only.
        footer: true,
        list: Some("repair every FAILED instance of the selected instance's deployment: the target (the suggested one selected), the plans, then confirm"),
    },
    Binding {
        action: Action::Pause,
        keys: &[KeyCode::Char('P')],
        key_label: "P",
        short: "pause",
        help: "attached database: pause or unpause a class or dependency (an instance: its own)",
        acts: false,
        // Shown on an attached database only.
        footer: true,
        list: Some("pause or unpause the retries of a failure class or a dependency of the fleet"),
    },
    Binding {
        action: Action::Quarantine,
        keys: &[KeyCode::Char('Q')],
        key_label: "Q",
        short: "quarantine",
        help: "attached database: quarantine or release the selected instance (asks first)",
        acts: false,
        // Shown on an attached database only.
        footer: true,
        list: Some("quarantine or release the selected instance (asks first)"),
    },
    Binding {
        action: Action::FocusNext,
        keys: &[KeyCode::Tab],
        key_label: "tab",
        short: "focus",
        help: "move focus to the next panel (shift+tab: previous)",
        acts: false,
        // The focused panel's heavy border shows it, and a collapsed
        // layout's titles say `‹tab›`: the footer's room goes to `d`.
        footer: false,
        list: None,
    },
    Binding {
        action: Action::FocusPrev,
        keys: &[KeyCode::BackTab],
        key_label: "S-tab",
        short: "back",
        help: "move focus to the previous panel",
        acts: false,
        footer: false,
        list: None,
    },
    Binding {
        action: Action::ScrollUp,
        keys: &[KeyCode::Up, KeyCode::Char('k')],
        key_label: "k ↑",
        short: "up",
        help: "scroll the focused panel up (in a list: select)",
        acts: false,
        footer: false,
        list: Some("select the instance above"),
    },
    Binding {
        action: Action::ScrollDown,
        keys: &[KeyCode::Down, KeyCode::Char('j')],
        key_label: "j ↓",
        short: "down",
        help: "scroll the focused panel down (in a list: select)",
        acts: false,
        footer: false,
        list: Some("select the instance below"),
    },
    Binding {
        action: Action::PanLeft,
        keys: &[KeyCode::Left, KeyCode::Char('h')],
        key_label: "h ←",
        short: "left",
        help: "diagram: pan left (k/j pan up and down while the process panel is focused)",
        acts: false,
        footer: false,
        list: None,
    },
    Binding {
        action: Action::PanRight,
        keys: &[KeyCode::Right, KeyCode::Char('l')],
        key_label: "l →",
        short: "right",
        help: "diagram: pan right (a step, or d twice, follows the current node again)",
        acts: false,
        footer: false,
        list: None,
    },
    Binding {
        action: Action::Open,
        keys: &[KeyCode::Enter],
        key_label: "enter",
        short: "open",
        help: "open the selected instance; show the selected incident in full; confirm a prompt",
        acts: false,
        footer: false,
        list: Some("open the selected instance"),
    },
    Binding {
        action: Action::Back,
        keys: &[KeyCode::Esc],
        key_label: "esc",
        short: "back",
        help: "close a prompt or this help; back to the instance list (attached database)",
        acts: false,
        footer: false,
        list: Some("clear the filter; close a prompt or this help"),
    },
    Binding {
        action: Action::Top,
        keys: &[KeyCode::Home, KeyCode::Char('g')],
        key_label: "g Home",
        short: "top",
        help: "scroll the focused panel to its top (in the list: the first instance)",
        acts: false,
        footer: false,
        list: Some("select the first instance"),
    },
    Binding {
        action: Action::Bottom,
        keys: &[KeyCode::End, KeyCode::Char('G')],
        key_label: "G End",
        short: "end",
        help: "in the instance list: select the last instance",
        acts: false,
        footer: false,
        list: Some("select the last instance"),
    },
    Binding {
        action: Action::PageUp,
        keys: &[KeyCode::PageUp],
        key_label: "PgUp",
        short: "page up",
        help: "scroll the focused panel up a page (in the list: a page of instances)",
        acts: false,
        footer: false,
        list: Some("a page of instances up"),
    },
    Binding {
        action: Action::PageDown,
        keys: &[KeyCode::PageDown],
        key_label: "PgDn",
        short: "page down",
        help: "scroll the focused panel down a page (in the list: a page of instances)",
        acts: false,
        footer: false,
        list: Some("a page of instances down"),
    },
    Binding {
        action: Action::Filter,
        keys: &[KeyCode::Char('/')],
        key_label: "/",
        short: "filter",
        help: "in the instance list: filter the instances by what their row says",
        acts: false,
        footer: false,
        list: Some("filter: type words (an id, a status, a code, a process, d2 for deployment 2); only rows holding every word stay · enter keeps it, esc clears it"),
    },
    Binding {
        action: Action::Help,
        keys: &[KeyCode::Char('?')],
        key_label: "?",
        short: "help",
        help: "show or hide this help",
        acts: false,
        footer: true,
        list: Some("show or hide this help"),
    },
    Binding {
        action: Action::Quit,
        keys: &[KeyCode::Char('q')],
        key_label: "q",
        short: "quit",
        help: "quit and restore the terminal (ctrl+c too)",
        acts: false,
        footer: true,
        list: Some("quit and restore the terminal (ctrl+c too)"),
    },
];

/// The action a key press asks for, if any. Ctrl+C always quits.
pub fn lookup(key: KeyEvent) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return matches!(key.code, KeyCode::Char('c')).then_some(Action::Quit);
    }
    KEYMAP
        .iter()
        .find(|b| b.keys.contains(&key.code))
        .map(|b| b.action)
}

/// The binding of an action (every action has exactly one).
pub fn binding(action: Action) -> &'static Binding {
    KEYMAP
        .iter()
        .find(|b| b.action == action)
        .expect("every action is bound in KEYMAP")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn no_key_is_bound_twice_and_every_action_once() {
        let mut keys = HashSet::new();
        let mut actions = HashSet::new();
        for b in KEYMAP {
            assert!(actions.insert(b.action), "{:?} bound twice", b.action);
            for k in b.keys {
                assert!(keys.insert(*k), "{k:?} bound twice");
            }
        }
    }

    #[test]
    fn the_issue_keys_dispatch_as_documented() {
        assert_eq!(lookup(key(KeyCode::Char(' '))), Some(Action::Step));
        assert_eq!(lookup(key(KeyCode::Char('R'))), Some(Action::Resolve));
        assert_eq!(lookup(key(KeyCode::Char('r'))), Some(Action::Respond));
        assert_eq!(lookup(key(KeyCode::Char('j'))), Some(Action::ScrollDown));
        assert_eq!(lookup(key(KeyCode::Up)), Some(Action::ScrollUp));
        assert_eq!(lookup(key(KeyCode::Char('d'))), Some(Action::Diagram));
        assert_eq!(lookup(key(KeyCode::Left)), Some(Action::PanLeft));
        assert_eq!(lookup(key(KeyCode::Char('l'))), Some(Action::PanRight));
        assert_eq!(lookup(key(KeyCode::Char('x'))), None);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(lookup(ctrl_c), Some(Action::Quit));
    }
}
