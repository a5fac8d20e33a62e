//! Keys in, commands out: every key of the issue, fed to the App over a
//! recording backend.

mod common;

use common::{key, rich_view, type_keys, Tape};
use qflow_engine::inspect::NodeState;
use qflow_tui::app::{App, Panel, Screen};
use qflow_tui::backend::{Command, FailClass, Resolution, ResponseTarget};
use qflow_tui::ui;
use qflow_tui::view::{InstanceRowView, Status, View};

/// The rich view with something for every key: the bank request still
/// pending in the outbox (p), and an unknown outcome waiting for an operator (R).
fn actionable() -> View {
    let mut v = rich_view();
    v.inspection.outbox[0].state = qflow_engine::instance::OutboxState::Pending;
    v.inspection.nodes[1].state = NodeState::WaitingReconciliation;
    v
}

fn started() -> (App, Tape) {
    started_on(actionable())
}

fn started_on(view: View) -> (App, Tape) {
    let mut tape = Tape::new(vec![view]);
    let mut app = App::new();
    app.refresh(&mut tape);
    (app, tape)
}

#[test]
fn a_digit_selects_and_only_enter_confirms() {
    let (mut app, mut tape) = started();
    type_keys(&mut app, &mut tape, "f2");
    let p = app
        .prompt
        .as_ref()
        .expect("a digit does not complete the prompt");
    assert_eq!(p.selected, 1);
    assert!(p.title.contains("Fail the next attempt"), "{}", p.title);
    // Enter confirms the second code; the class picker is next, nothing sent.
    type_keys(&mut app, &mut tape, "\n");
    assert!(app.prompt.as_ref().unwrap().title.contains("INVALID_INPUT"));
    assert!(tape.commands.is_empty());
    // A digit out of range changes nothing.
    type_keys(&mut app, &mut tape, "9\n");
    assert_eq!(
        tape.commands,
        vec![Command::Fail {
            code: "INVALID_INPUT".into(),
            class: FailClass::Transient,
            retry_after_ms: None
        }]
    );
}

#[test]
fn the_time_menu_accepts_what_it_displays() {
    let (mut app, mut tape) = started();
    type_keys(&mut app, &mut tape, "t5\n5m\n");
    type_keys(&mut app, &mut tape, "t5\n2h30m\n");
    type_keys(&mut app, &mut tape, "t5\n1d\n");
    assert_eq!(
        tape.commands,
        vec![
            Command::Advance { ms: 300_000 },
            Command::Advance { ms: 9_000_000 },
            Command::Advance { ms: 86_400_000 },
        ]
    );
    // Units out of order are neither form: refused in place, with both forms named.
    type_keys(&mut app, &mut tape, "t5\n5m2h\n");
    let e = app
        .prompt
        .as_ref()
        .unwrap()
        .error
        .clone()
        .unwrap_or_default();
    assert!(e.contains("90s, 5m"), "{e}");
}

#[test]
fn an_open_text_field_shows_in_the_status_line() {
    let (mut app, mut tape) = started();
    type_keys(&mut app, &mut tape, "f4\nSLOW");
    let frame = ui::render_text(&app, 120, 30);
    let status = frame.lines().next().unwrap();
    assert!(status.contains("✎ failure code: SLOW▏"), "{status}");
}

#[test]
fn r_capital_r_and_p_say_at_once_when_nothing_can_use_them() {
    // The rich view: the bank request was delivered, nothing waits for reconciliation.
    let (mut app, mut tape) = started_on(rich_view());
    type_keys(&mut app, &mut tape, "p");
    assert!(app.prompt.is_none());
    let m = app.report.message.clone();
    assert!(
        m.contains("already delivered to bank") && m.contains("answer it with r"),
        "{m}"
    );
    type_keys(&mut app, &mut tape, "R");
    assert!(
        app.prompt.is_none(),
        "no prompt before saying there is nothing"
    );
    assert!(
        app.report
            .message
            .contains("nothing waits for reconciliation"),
        "{}",
        app.report.message
    );
    // No request sent at all: r says so before asking for a target.
    let mut v = rich_view();
    v.inspection.outbox.clear();
    let (mut app, mut tape) = started_on(v);
    type_keys(&mut app, &mut tape, "rp");
    assert!(app.prompt.is_none());
    assert!(tape.commands.is_empty());
    assert!(
        app.report.message.contains("nothing to poison"),
        "{}",
        app.report.message
    );
    type_keys(&mut app, &mut tape, "r");
    assert!(
        app.report
            .message
            .contains("nothing to answer: no request has been sent"),
        "{}",
        app.report.message
    );
}

#[test]
fn a_failed_instance_shows_its_correlation_closed() {
    let mut v = rich_view();
    v.inspection.status = Status::Failed;
    let (app, _tape) = started_on(v);
    let frame = ui::render_text(&app, 160, 50);
    assert!(frame.contains("authorize closed"), "{frame}");
    assert!(!frame.contains("in backoff corr"), "{frame}");
}

#[test]
fn space_steps_and_direct_keys_send_their_command() {
    let (mut app, mut tape) = started();
    type_keys(&mut app, &mut tape, " op");
    assert_eq!(
        tape.commands,
        vec![Command::Step, Command::Succeed, Command::Poison]
    );
}

#[test]
fn t_offers_amounts_and_takes_an_iso_duration() {
    let (mut app, mut tape) = started();
    type_keys(&mut app, &mut tape, "t2\n");
    assert_eq!(tape.commands, vec![Command::Advance { ms: 300_000 }]);
    // custom: the fifth choice opens a text field; a bad duration is refused in place.
    type_keys(&mut app, &mut tape, "t5\nPT90\n");
    let p = app
        .prompt
        .as_ref()
        .expect("still open after a bad duration");
    assert!(
        p.error.as_deref().unwrap_or("").contains("unit"),
        "{:?}",
        p.error
    );
    type_keys(&mut app, &mut tape, "S\n");
    assert!(app.prompt.is_none());
    assert_eq!(tape.commands[1], Command::Advance { ms: 90_000 });
}

#[test]
fn f_picks_a_code_then_a_class_and_rate_limited_asks_for_retry_after() {
    let (mut app, mut tape) = started();
    type_keys(&mut app, &mut tape, "f1\n");
    assert!(app.prompt.as_ref().unwrap().title.contains("PROVIDER_DOWN"));
    type_keys(&mut app, &mut tape, "2\n");
    assert_eq!(
        tape.commands,
        vec![Command::Fail {
            code: "PROVIDER_DOWN".into(),
            class: FailClass::Permanent,
            retry_after_ms: None
        }]
    );
    // custom code, rate-limited, 5m
    type_keys(&mut app, &mut tape, "f4\n");
    type_keys(&mut app, &mut tape, "SLOW_DOWN\n");
    type_keys(&mut app, &mut tape, "jj\n2\n");
    assert_eq!(
        tape.commands[1],
        Command::Fail {
            code: "SLOW_DOWN".into(),
            class: FailClass::RateLimited,
            retry_after_ms: Some(300_000)
        }
    );
    // unknown-outcome with arrows and enter
    type_keys(&mut app, &mut tape, "f\njjj\n");
    assert_eq!(
        tape.commands[2],
        Command::Fail {
            code: "PROVIDER_DOWN".into(),
            class: FailClass::UnknownOutcome,
            retry_after_ms: None
        }
    );
    // deferred asks when to run again, as rate-limited does
    type_keys(&mut app, &mut tape, "f\n5\n");
    assert!(app.prompt.as_ref().unwrap().title.contains("deferred"));
    type_keys(&mut app, &mut tape, "2\n");
    assert_eq!(
        tape.commands[3],
        Command::Fail {
            code: "PROVIDER_DOWN".into(),
            class: FailClass::Deferred,
            retry_after_ms: Some(300_000)
        }
    );
}

#[test]
fn esc_cancels_a_prompt_without_a_command() {
    let (mut app, mut tape) = started();
    type_keys(&mut app, &mut tape, "f\x1bt\x1bR\x1b");
    assert!(tape.commands.is_empty());
    assert!(app.prompt.is_none());
    assert!(!app.quit);
}

#[test]
fn r_answers_the_live_or_a_superseded_attempt() {
    let (mut app, mut tape) = started();
    type_keys(&mut app, &mut tape, "r1\n\n");
    assert_eq!(
        tape.commands,
        vec![Command::Respond {
            target: ResponseTarget::Live,
            body: "{}".into()
        }]
    );
    // The schedule has attempts 1 and 2: attempt 1 is superseded.
    type_keys(&mut app, &mut tape, "r2\n");
    for _ in 0..2 {
        app.handle(&mut tape, key('\u{8}'));
    }
    type_keys(&mut app, &mut tape, "{\"approved\": true}\n");
    assert_eq!(
        tape.commands[1],
        Command::Respond {
            target: ResponseTarget::Attempt(1),
            body: "{\"approved\": true}".into()
        }
    );
}

#[test]
fn capital_r_resolves_and_lowercase_does_not() {
    let (mut app, mut tape) = started();
    type_keys(&mut app, &mut tape, "R3\n");
    assert_eq!(tape.commands, vec![Command::Resolve(Resolution::Retry)]);
}

#[test]
fn tab_moves_focus_and_scroll_is_per_panel() {
    let (mut app, mut tape) = started();
    assert_eq!(app.focus, Panel::Process);
    type_keys(&mut app, &mut tape, "\t\t");
    assert_eq!(app.focus, Panel::Snapshot);
    type_keys(&mut app, &mut tape, "jjjk");
    assert_eq!(app.scroll(Panel::Snapshot), 2);
    assert_eq!(app.scroll(Panel::Process), 0);
    app.handle(
        &mut tape,
        crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::BackTab,
            crossterm::event::KeyModifiers::SHIFT,
        ),
    );
    assert_eq!(app.focus, Panel::Schedule);
    assert!(tape.commands.is_empty());
}

#[test]
fn help_overlay_lists_the_keymap_and_q_quits() {
    let (mut app, mut tape) = started();
    type_keys(&mut app, &mut tape, "?");
    let text = ui::render_text(&app, 100, 30);
    for b in qflow_tui::keymap::KEYMAP {
        assert!(
            text.contains(b.help),
            "help overlay misses {:?}:\n{text}",
            b.action
        );
    }
    type_keys(&mut app, &mut tape, " ");
    assert!(
        tape.commands.is_empty(),
        "keys under the overlay do nothing"
    );
    type_keys(&mut app, &mut tape, "?q");
    assert!(app.quit);
}

#[test]
fn the_footer_shows_the_keymap_keys() {
    let (app, _) = started();
    let text = ui::render_text(&app, 100, 30);
    let footer = text.lines().last().unwrap();
    // `m` repairs an instance of an attached database: a model's console
    // has none to repair (the attached footer is in tests/console_repair.rs).
    // `P` and `Q` pause and quarantine on an attached database (its
    // footers are in tui/tests/golden/attach-fleet.txt and
    // attach-instance-held.txt).
    let migrate = |b: &&qflow_tui::keymap::Binding| {
        matches!(
            b.action,
            qflow_tui::keymap::Action::Migrate
                | qflow_tui::keymap::Action::Pause
                | qflow_tui::keymap::Action::Quarantine
        )
    };
    for b in qflow_tui::keymap::KEYMAP
        .iter()
        .filter(|b| b.footer && !migrate(b))
    {
        assert!(
            footer.contains(&format!("{} {}", b.key_label, b.short)),
            "{footer}"
        );
    }
    assert!(!footer.contains("m migrate"), "{footer}");
    assert!(!footer.contains("P pause"), "{footer}");
    assert!(!footer.contains("Q quarantine"), "{footer}");
}

#[test]
fn a_read_only_view_refuses_acting_keys_with_a_reason() {
    let mut v = rich_view();
    v.read_only = true;
    let mut tape = Tape::new(vec![v]);
    let mut app = App::new();
    app.refresh(&mut tape);
    type_keys(&mut app, &mut tape, " fo");
    assert!(tape.commands.is_empty());
    assert!(
        app.report.message.contains("read-only"),
        "{}",
        app.report.message
    );
}

#[test]
fn respond_and_poison_say_so_when_the_model_has_no_call() {
    let mut v = rich_view();
    v.inspection.channel_calls = false;
    let mut tape = Tape::new(vec![v]);
    let mut app = App::new();
    app.refresh(&mut tape);
    type_keys(&mut app, &mut tape, "rp");
    assert!(tape.commands.is_empty());
    assert!(
        app.report.message.contains("no channel call"),
        "{}",
        app.report.message
    );
}

#[test]
fn attach_mode_lists_failed_first_and_opens_the_selection() {
    let mut tape = Tape::new(vec![rich_view()]);
    tape.rows = vec![
        InstanceRowView {
            id: "charge-1".into(),
            process: "charge".into(),
            deployment: 1,
            status: Status::Failed,
            code: Some("PROVIDER_DOWN".into()),
            reason: Some("exhausted".into()),
            last_at_ms: 0,
            held_by: Vec::new(),
            quarantined: false,
        },
        InstanceRowView {
            id: "charge-2".into(),
            process: "charge".into(),
            deployment: 1,
            status: Status::Completed,
            code: None,
            reason: None,
            last_at_ms: 0,
            held_by: Vec::new(),
            quarantined: false,
        },
    ];
    let mut app = App::attached();
    app.refresh(&mut tape);
    let text = ui::render_text(&app, 80, 12);
    assert!(text.contains("FAILED    charge-1"), "{text}");
    type_keys(&mut app, &mut tape, "j\n");
    assert_eq!(
        tape.commands,
        vec![Command::Open {
            instance: "charge-2".into()
        }]
    );
    assert_eq!(app.screen, Screen::Instance);
    type_keys(&mut app, &mut tape, "\x1b");
    assert_eq!(app.screen, Screen::List);
}

#[test]
fn the_readme_documents_every_key_of_the_keymap() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for b in qflow_tui::keymap::KEYMAP {
        assert!(
            readme.contains(&format!("`{}`", b.key_label)),
            "README.md misses the key {:?} ({})",
            b.key_label,
            b.help
        );
    }
}

#[test]
fn the_help_overlay_scrolls_on_a_small_terminal() {
    let (mut app, mut tape) = started();
    type_keys(&mut app, &mut tape, "?");
    let top = ui::render_text(&app, 60, 15);
    assert!(top.contains("take the next decision"), "{top}");
    type_keys(&mut app, &mut tape, &"j".repeat(40));
    let down = ui::render_text(&app, 60, 15);
    assert!(down.contains("quit and restore the terminal"), "{down}");
    assert!(tape.commands.is_empty());
    type_keys(&mut app, &mut tape, "\x1b");
    assert!(!app.help);
    assert_eq!(app.help_scroll, 0);
}
