//! Key scripts: `qflow console --headless KEYS` feeds keys without a terminal
//! and prints the last frame, so a run can be scripted (and tested end to end
//! through the binary). Every character is its key; `<enter>`, `<esc>`,
//! `<tab>`, `<backtab>`, `<space>`, `<up>`, `<down>`, `<bs>`, `<home>`,
//! `<end>`, `<pgup>`, `<pgdn>` name the others.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::App;
use crate::backend::Backend;

/// Parse a key script; an unknown `<name>` is an error naming it.
pub fn parse(script: &str) -> Result<Vec<KeyEvent>, String> {
    let mut keys = Vec::new();
    let mut rest = script;
    while let Some(c) = rest.chars().next() {
        if c == '<' {
            if let Some(end) = rest.find('>') {
                let name = &rest[1..end];
                let code = match name {
                    "enter" => KeyCode::Enter,
                    "esc" => KeyCode::Esc,
                    "tab" => KeyCode::Tab,
                    "backtab" => KeyCode::BackTab,
                    "space" => KeyCode::Char(' '),
                    "up" => KeyCode::Up,
                    "down" => KeyCode::Down,
                    "bs" => KeyCode::Backspace,
                    "home" => KeyCode::Home,
                    "end" => KeyCode::End,
                    "pgup" => KeyCode::PageUp,
                    "pgdn" => KeyCode::PageDown,
                    "lt" => KeyCode::Char('<'),
                    other => {
                        return Err(format!(
                            "unknown key <{other}> in the key script: use <enter>, <esc>, <tab>, <backtab>, <space>, <up>, <down>, <bs>, <home>, <end>, <pgup>, <pgdn> or <lt>"
                        ))
                    }
                };
                keys.push(KeyEvent::new(code, KeyModifiers::NONE));
                rest = &rest[end + 1..];
                continue;
            }
        }
        keys.push(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        rest = &rest[c.len_utf8()..];
    }
    Ok(keys)
}

/// Feed a script to the app (stops early if a key quits).
pub fn feed(app: &mut App, backend: &mut dyn Backend, keys: &[KeyEvent]) {
    for k in keys {
        if app.quit {
            break;
        }
        app.handle(backend, *k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_plain_characters() {
        let k = parse("  f<enter>1<esc>q").unwrap();
        assert_eq!(k.len(), 7);
        assert_eq!(k[2].code, KeyCode::Char('f'));
        assert_eq!(k[3].code, KeyCode::Enter);
        assert_eq!(k[5].code, KeyCode::Esc);
        assert!(parse("<nope>").unwrap_err().contains("<nope>"));
        assert_eq!(parse("a<b").unwrap().len(), 3);
    }
}
