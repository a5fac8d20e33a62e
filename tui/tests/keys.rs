//! Keys in, commands out: every key of the issue, fed to the App over a
//! recording backend.

mod common;

use common::{key, rich_view, type_keys, Tape};
use qflow_tui::app::{App, Panel, Screen};
use qflow_tui::backend::{Command, FailClass, Resolution, ResponseTarget};
use qflow_tui::ui;
use qflow_tui::view::{InstanceRowView, Status};

fn started() -> (App, Tape) {
    let mut tape = Tape::new(vec![rich_view()]);
    let mut app = App::new();
    app.refresh(&mut tape);
    (app, tape)
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
    type_keys(&mut app, &mut tape, "t2");
    assert_eq!(tape.commands, vec![Command::Advance { ms: 300_000 }]);
    // custom: the fifth choice opens a text field; a bad duration is refused in place.
    type_keys(&mut app, &mut tape, "t5PT90\n");
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
    type_keys(&mut app, &mut tape, "f1");
    assert!(app.prompt.as_ref().unwrap().title.contains("PROVIDER_DOWN"));
    type_keys(&mut app, &mut tape, "2");
    assert_eq!(
        tape.commands,
        vec![Command::Fail {
            code: "PROVIDER_DOWN".into(),
            class: FailClass::Permanent,
            retry_after_ms: None
        }]
    );
    // custom code, rate-limited, 5m
    type_keys(&mut app, &mut tape, "f4");
    type_keys(&mut app, &mut tape, "SLOW_DOWN\n");
    type_keys(&mut app, &mut tape, "jj\n2");
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
    type_keys(&mut app, &mut tape, "r1\n");
    assert_eq!(
        tape.commands,
        vec![Command::Respond {
            target: ResponseTarget::Live,
            body: "{}".into()
        }]
    );
    // The schedule has attempts 1 and 2: attempt 1 is superseded.
    type_keys(&mut app, &mut tape, "r2");
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
    type_keys(&mut app, &mut tape, "R3");
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
    for b in qflow_tui::keymap::KEYMAP.iter().filter(|b| b.footer) {
        assert!(
            footer.contains(&format!("{} {}", b.key_label, b.short)),
            "{footer}"
        );
    }
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
            status: Status::Failed,
            code: Some("PROVIDER_DOWN".into()),
            reason: Some("exhausted".into()),
            last_at_ms: 0,
        },
        InstanceRowView {
            id: "charge-2".into(),
            process: "charge".into(),
            status: Status::Completed,
            code: None,
            reason: None,
            last_at_ms: 0,
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
    type_keys(&mut app, &mut tape, "jjjjjjjjjjjjjjjjjjjj");
    let down = ui::render_text(&app, 60, 15);
    assert!(down.contains("quit and restore the terminal"), "{down}");
    assert!(tape.commands.is_empty());
    type_keys(&mut app, &mut tape, "\x1b");
    assert!(!app.help);
    assert_eq!(app.help_scroll, 0);
}
