//! The real terminal: raw mode and the alternate screen on the way in, and
//! restored on the way out whatever the way out is (quit, error, panic).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event};
use ratatui::DefaultTerminal;

use crate::app::App;
use crate::backend::Backend;
use crate::ui;

/// Whether the terminal is taken over (raw mode, alternate screen).
static ENTERED: AtomicBool = AtomicBool::new(false);

/// Give the terminal back, once: the panic hook and the guard both call it,
/// and leaving the alternate screen twice would move the cursor back over
/// the panic message.
fn restore_once() {
    if ENTERED.swap(false, Ordering::SeqCst) {
        ratatui::restore();
    }
}

/// Restores the terminal when dropped: covers `?` early returns and unwinding.
pub struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        restore_once();
    }
}

/// Install a panic hook that restores the terminal before the panic message
/// prints, so a bug never leaves the user's shell in raw mode.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_once();
        previous(info);
    }));
}

/// Take the terminal over: panic hook, raw mode, alternate screen. Keep the
/// [`Restore`] alive for as long as the terminal is in use.
pub fn enter() -> io::Result<(DefaultTerminal, Restore)> {
    install_panic_hook();
    ENTERED.store(true, Ordering::SeqCst);
    let guard = Restore;
    // Not ratatui::try_init: it installs a second hook of its own.
    crossterm::terminal::enable_raw_mode()?;
    crossterm::execute!(io::stdout(), crossterm::terminal::EnterAlternateScreen)?;
    let terminal = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(io::stdout()))?;
    Ok((terminal, guard))
}

/// Run the console until the user quits.
pub fn run(backend: &mut dyn Backend, mut app: App) -> io::Result<()> {
    let (mut terminal, _restore) = enter()?;
    app.refresh(backend);
    // Attached to a database, an idle console reads it again: every 2 s, or
    // ten times as long as the last read took (a fleet of 50,000 takes
    // about half a second), so watching never keeps the store busy.
    let mut every = Duration::from_secs(2);
    while !app.quit {
        terminal.draw(|f| ui::draw(f, &app))?;
        if app.attached && !event::poll(every)? {
            let began = Instant::now();
            if app.tick(backend) {
                every = (began.elapsed() * 10).max(Duration::from_secs(2));
            }
            continue;
        }
        match event::read()? {
            Event::Key(key) => app.handle(backend, key),
            // A resize redraws at the new size on the next turn.
            Event::Resize(..) => terminal.autoresize()?,
            _ => {}
        }
    }
    Ok(())
}
