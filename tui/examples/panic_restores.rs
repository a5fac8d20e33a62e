//! Manual check that a panic inside the console restores the terminal: run it
//! in a terminal (or tmux), press a key, and the shell must come back in
//! cooked mode with the panic message readable.
//!
//! `cargo run -p qflow-tui --example panic_restores`

fn main() -> std::io::Result<()> {
    let (mut terminal, _restore) = qflow_tui::terminal::enter()?;
    terminal.draw(|f| {
        f.render_widget(
            ratatui::widgets::Paragraph::new("press any key to panic inside the console"),
            f.area(),
        )
    })?;
    let _ = crossterm::event::read()?;
    panic!("deliberate panic: the terminal must be restored before this message");
}
