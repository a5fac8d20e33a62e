//! The real terminal: raw mode and the alternate screen on the way in, and
//! restored on the way out whatever the way out is (quit, error, panic).

use std::io;

use crossterm::event::{self, Event};

use crate::app::App;
use crate::backend::Backend;
use crate::ui;

/// Restores the terminal when dropped: covers `?` early returns and unwinding.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// Install a panic hook that restores the terminal before the panic message
/// prints, so a bug never leaves the user's shell in raw mode.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        ratatui::restore();
        previous(info);
    }));
}

/// Run the console until the user quits.
pub fn run(backend: &mut dyn Backend, mut app: App) -> io::Result<()> {
    install_panic_hook();
    let mut terminal = ratatui::try_init()?;
    let _restore = Restore;
    app.refresh(backend);
    while !app.quit {
        terminal.draw(|f| ui::draw(f, &app))?;
        match event::read()? {
            Event::Key(key) => app.handle(backend, key),
            // A resize redraws at the new size on the next turn.
            Event::Resize(..) => terminal.autoresize()?,
            _ => {}
        }
    }
    Ok(())
}
