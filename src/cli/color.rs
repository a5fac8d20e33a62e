//! `--color auto|always|never`, taken by every subcommand (a global flag),
//! and the conventions of the environment: `NO_COLOR` (set and not empty)
//! turns colour off and `CLICOLOR_FORCE` (set and not `0`) turns it on,
//! where `auto` would otherwise look at whether the stream is a terminal.
//! The flag wins over both.

use std::io::IsTerminal;
use std::sync::OnceLock;

/// When output uses colour (and terminal hyperlinks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set (CLICOLOR_FORCE: always).
    #[default]
    Auto,
    Always,
    Never,
}

/// Which standard stream the coloured text goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

static CHOICE: OnceLock<ColorChoice> = OnceLock::new();

/// Record the command line's `--color` (once, before the subcommand runs).
pub(crate) fn set(choice: ColorChoice) {
    let _ = CHOICE.set(choice);
}

/// The command line's `--color` (auto when not given).
pub(crate) fn choice() -> ColorChoice {
    CHOICE.get().copied().unwrap_or_default()
}

impl ColorChoice {
    /// Whether text written to `stream` is coloured.
    pub(crate) fn on(self, stream: Stream) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => auto(
                std::env::var_os("NO_COLOR").as_deref(),
                std::env::var_os("CLICOLOR_FORCE").as_deref(),
                match stream {
                    Stream::Stdout => std::io::stdout().is_terminal(),
                    Stream::Stderr => std::io::stderr().is_terminal(),
                },
            ),
        }
    }
}

/// `auto`'s decision: CLICOLOR_FORCE first (the user insists), then
/// NO_COLOR, then whether the stream is a terminal.
fn auto(
    no_color: Option<&std::ffi::OsStr>,
    force: Option<&std::ffi::OsStr>,
    terminal: bool,
) -> bool {
    if force.is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    if no_color.is_some_and(|v| !v.is_empty()) {
        return false;
    }
    terminal
}

/// `text` in an ANSI colour (`32` green, `31` red) when `on`.
pub(crate) fn paint(text: &str, code: u8, on: bool) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::auto;
    use std::ffi::OsStr;

    #[test]
    fn force_beats_no_color_which_beats_the_terminal() {
        let s = |v: &'static str| Some(OsStr::new(v));
        assert!(auto(None, None, true));
        assert!(!auto(None, None, false));
        assert!(!auto(s("1"), None, true));
        assert!(auto(s(""), None, true), "an empty NO_COLOR is unset");
        assert!(auto(s("1"), s("1"), false));
        assert!(
            !auto(None, s("0"), false),
            "CLICOLOR_FORCE=0 forces nothing"
        );
    }
}
