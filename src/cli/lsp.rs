//! `qflow lsp`: the language server on stdio (the `qflow-lsp` crate does the work).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Accepted and ignored: editors pass it, and stdio is the only transport.
    #[arg(long)]
    stdio: bool,
}

/// Exit code 0 after `shutdown` then `exit`, 1 after an `exit` without
/// `shutdown` (as the LSP specification asks), 2 if the server cannot start.
pub(crate) fn run(args: Args) -> ExitCode {
    let _ = args.stdio;
    ExitCode::from(qflow_lsp::run_stdio().clamp(0, 255) as u8)
}
