//! `qflow`: the command-line face of the engine.
//!
//! Each subcommand lives in its own module under `cli/` and only presents what
//! the engine decides.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// A developer studio for durable BPMN 2.0 process models.
#[derive(Debug, Parser)]
#[command(name = "qflow", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check models against qflow's load-time rules (exit 0: no errors, 1: errors, 2: unreadable/usage).
    Check(cli::check::Args),
    /// Run one local instance of a model on the embedded store, printing every decision.
    Run(cli::run::Args),
    /// Step one local instance in a terminal inspector (or inspect an existing database).
    Console(cli::console::Args),
    /// Start the language server on stdio.
    Lsp(cli::lsp::Args),
    /// Draw a model as an SVG diagram, with an instance's state on it (--db, --instance).
    Render(cli::render::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Check(args) => cli::check::run(args),
        Command::Run(args) => cli::run::run(args),
        Command::Console(args) => cli::console::run(args),
        Command::Lsp(args) => cli::lsp::run(args),
        Command::Render(args) => cli::render::run(args),
    }
}
