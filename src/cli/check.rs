//! `qflow check FILE…`: the loader's verdicts as miette reports or JSON.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use miette::{GraphicalReportHandler, GraphicalTheme};

use qflow_engine::diagnostic::Report;
use qflow_engine::span::LineIndex;
use qflow_engine::Severity;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// miette's graphical reports on stderr, and a one-line summary.
    Human,
    /// A JSON array of diagnostics on stdout.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// BPMN files to check.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

/// The report renderer. Output is a contract (golden tests compare it), so
/// nothing is left to miette's environment sniffing: colours and terminal
/// hyperlinks only on a terminal without `NO_COLOR`; otherwise plain unicode,
/// the documentation link printed as text, and a fixed width of 100 columns.
fn report_handler() -> GraphicalReportHandler {
    let fancy = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let theme = if fancy {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    GraphicalReportHandler::new_themed(theme)
        .with_links(fancy)
        .with_width(100)
}

pub fn run(args: Args) -> ExitCode {
    let handler = report_handler();
    let mut json = Vec::new();
    let (mut errors, mut warnings, mut others, mut unreadable) = (0usize, 0usize, 0usize, 0usize);
    for path in &args.files {
        let shown = path.display().to_string();
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: cannot read {shown}: {e}");
                unreadable += 1;
                continue;
            }
        };
        let (text, analysis) = qflow_engine::analyze_bytes(&bytes);
        let index = LineIndex::new(&text);
        for d in &analysis.diagnostics {
            match d.severity {
                Severity::Error => errors += 1,
                Severity::Warning => warnings += 1,
                _ => others += 1,
            }
            match args.format {
                Format::Json => json.push(d.to_json(&shown, &text, &index)),
                Format::Human => {
                    let report = Report::new(d.clone(), &shown, &text);
                    let mut out = String::new();
                    match handler.render_report(&mut out, &report) {
                        Ok(()) => eprintln!("{out}"),
                        Err(_) => eprintln!("{}: {}", d.code, d.message),
                    }
                }
            }
        }
    }
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&json).expect("diagnostics serialize")
        ),
        Format::Human => eprintln!(
            "{} file(s) checked: {errors} error(s), {warnings} warning(s), {others} note(s){}",
            args.files.len(),
            if unreadable > 0 {
                format!(", {unreadable} unreadable")
            } else {
                String::new()
            }
        ),
    }
    if unreadable > 0 {
        ExitCode::from(2)
    } else if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
