use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> ExitCode {
    eprintln!("qflow run: not available in this build yet");
    ExitCode::from(2)
}
