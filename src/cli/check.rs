//! `qflow check PATH…`: the loader's verdicts as miette reports or JSON.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use miette::{GraphicalReportHandler, GraphicalTheme};

use qflow_engine::config::Config;
use qflow_engine::diagnostic::Diagnostic;

use super::terminal_report::Report;
use qflow_engine::span::LineIndex;
use qflow_engine::text::printable;
use qflow_engine::Severity;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// miette's graphical reports on stdout, and a one-line summary.
    Human,
    /// A JSON array of diagnostics on stdout.
    Json,
    /// A SARIF 2.1.0 log on stdout, for code-scanning tools.
    Sarif,
    /// A JSON array with one LSP `publishDiagnostics` parameter object
    /// (`uri`, `diagnostics`) per file checked, an empty list for a clean
    /// file: what an editor's "check the whole workspace" shows as is, with
    /// UTF-16 ranges and severities as the language server gives them (no
    /// `codeDescription`: `check` writes no pages to link).
    Lsp,
}

use super::color::Stream;

/// What `--deny` makes fail the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Deny {
    /// Warnings fail the check (exit 1), as errors do.
    Warnings,
}

/// The least severe verdict shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MinSeverity {
    Error,
    Warning,
    Info,
    Hint,
}

impl MinSeverity {
    fn admits(self, s: Severity) -> bool {
        let floor = match self {
            MinSeverity::Error => Severity::Error,
            MinSeverity::Warning => Severity::Warning,
            MinSeverity::Info => Severity::Info,
            MinSeverity::Hint => Severity::Hint,
        };
        s <= floor
    }
}

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// BPMN files to check; a directory means every `.bpmn` file under it
    /// (`.gitignore`d and hidden paths skipped, in name order).
    #[arg(required = true, value_name = "PATH")]
    pub files: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// A configuration file (`.bpmnlintrc` JSON, or `qflow.toml`) used for
    /// every model instead of the ones found by walking up from each model.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Only errors and warnings (the same as --min-severity warning).
    #[arg(short, long, conflicts_with_all = ["verbose", "min_severity"])]
    pub quiet: bool,
    /// Notes (info, hints) as full reports with their source, not one line each.
    #[arg(short, long)]
    pub verbose: bool,
    /// Hide verdicts less severe than this (in every format).
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub min_severity: Option<MinSeverity>,
    /// `--deny warnings`: warnings fail the check (exit 1) as errors do.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub deny: Vec<Deny>,
    /// Check again whenever a file checked (or a `.bpmn` file or
    /// qflow.toml under a directory named) changes; Ctrl-C stops.
    #[arg(long)]
    pub watch: bool,
}

/// The report renderer for reports written to `stream`. Output is a
/// contract (golden tests compare it), so nothing is left to miette's
/// environment sniffing: colours only when `--color` says so (auto: a
/// terminal, unless `NO_COLOR` is set; `CLICOLOR_FORCE` forces them), at a
/// fixed width of 100. A report carries no link: its help names the
/// `qflow explain` command that prints the code's page offline.
fn report_handler(color: super::color::ColorChoice, stream: Stream) -> GraphicalReportHandler {
    let on = color.on(stream);
    let theme = if on {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    GraphicalReportHandler::new_themed(theme)
        .with_links(false)
        .with_width(100)
}

/// One verdict as a report, as `check` prints it and as `run`, `deploy` and
/// `migrate --to MODEL` print a refused model's: miette's drawing, or plain
/// lines for a finding too far along one line for it.
pub(crate) fn report_text(
    d: &Diagnostic,
    shown: &str,
    text: &str,
    index: &LineIndex,
    handler: &GraphicalReportHandler,
) -> String {
    // miette pads a label to its column and cannot past 65,535 (it
    // panics): a finding that far along one line (a minified file) is plain.
    if too_wide(d, text, index) {
        let p = index.position(text, d.primary.span.start());
        return format!(
            "{} {}: {}\n  at {}:{}:{}\n",
            d.code,
            d.severity.as_str(),
            printable(&d.message),
            printable(shown),
            p.line + 1,
            p.column_chars + 1
        );
    }
    let report = Report::with_index(d.clone(), shown, text, index);
    let mut out = String::new();
    match handler.render_report(&mut out, &report) {
        Ok(()) => out,
        Err(_) => format!("{}: {}", d.code, printable(&d.message)),
    }
}

/// The reports of a model the runtime refuses (`run`, `deploy`, `migrate
/// --to MODEL`), on stderr, drawn exactly as `check` draws them.
pub(crate) fn print_refusals(refusals: &[&Diagnostic], shown: &str, text: &str) {
    let handler = report_handler(super::color::choice(), Stream::Stderr);
    let index = LineIndex::new(text);
    for d in refusals {
        eprintln!("{}", report_text(d, shown, text, &index, &handler));
    }
}

/// Whether a label sits beyond the column miette can render.
fn too_wide(d: &Diagnostic, text: &str, index: &LineIndex) -> bool {
    std::iter::once(&d.primary)
        .chain(&d.related)
        .any(|l| index.position(text, l.span.end()).column_chars > 60_000)
}

/// A note (info or hint) in one line: severity, code, place, message, and
/// where to read more.
fn one_line(d: &Diagnostic, shown: &str, text: &str, index: &LineIndex) -> String {
    let p = index.position(text, d.primary.span.start());
    format!(
        "{}[{}] {shown}:{}:{}: {} (-v shows the details; qflow explain {})",
        d.severity.as_str(),
        d.code,
        p.line + 1,
        p.column_chars + 1,
        printable(&d.message),
        d.code
    )
}

pub(crate) fn run(args: Args) -> ExitCode {
    if args.watch {
        return watch(args);
    }
    let handler = report_handler(super::color::choice(), Stream::Stdout);
    let deny_warnings = args.deny.contains(&Deny::Warnings);
    let floor = if args.quiet {
        MinSeverity::Warning
    } else {
        args.min_severity.unwrap_or(MinSeverity::Hint)
    };
    let mut json = Vec::new();
    let mut sarif = super::sarif::Log::default();
    // Per file shown: its URI and its diagnostics as the editor takes them.
    let published: RefCell<Vec<(String, qflow_lsp::Uri, Vec<serde_json::Value>)>> =
        RefCell::default();
    let publish_to = |shown: &str| -> Option<usize> {
        let mut p = published.borrow_mut();
        if let Some(i) = p.iter().position(|(s, _, _)| s == shown) {
            return Some(i);
        }
        let uri = qflow_lsp::convert::file_uri(Path::new(shown))?;
        p.push((shown.to_string(), uri, Vec::new()));
        Some(p.len() - 1)
    };
    let (mut errors, mut warnings, mut others, mut unreadable, mut hidden) =
        (0usize, 0usize, 0usize, 0usize, 0usize);
    let mut reported: Vec<PathBuf> = Vec::new();
    let mut configured: Vec<String> = Vec::new();
    // Hints held back to be summarised per file and code (`print_hints`).
    let hints: RefCell<Hints> = RefCell::default();
    let mut emit = |shown: &str, text: &str, index: &LineIndex, d: &Diagnostic| {
        match d.severity {
            Severity::Error => errors += 1,
            Severity::Warning => warnings += 1,
            _ => others += 1,
        }
        if !floor.admits(d.severity) {
            hidden += 1;
            return;
        }
        match args.format {
            Format::Json => json.push(d.to_json(shown, text, index)),
            Format::Sarif => sarif.push(d, shown, text, index),
            Format::Lsp => {
                if let Some(i) = publish_to(shown) {
                    let mut p = published.borrow_mut();
                    let (_, uri, out) = &mut p[i];
                    out.push(qflow_lsp::convert::diagnostic_json(text, index, uri, d));
                }
            }
            // Hints come by the dozen on a newcomer's model: one line per
            // code and file, listed in full with -v.
            Format::Human if d.severity == Severity::Hint && !args.verbose => {
                let p = index.position(text, d.primary.span.start());
                hints
                    .borrow_mut()
                    .entry((shown.to_string(), d.code))
                    .or_default()
                    .push((
                        format!("{}:{}", p.line + 1, p.column_chars + 1),
                        one_line(d, shown, text, index),
                        printable(&d.message).into_owned(),
                    ))
            }
            Format::Human if d.severity >= Severity::Info && !args.verbose => {
                println!("{}\n", one_line(d, shown, text, index))
            }
            Format::Human => println!("{}", report_text(d, shown, text, index, &handler)),
        }
    };
    let files = model_files(&args.files, &mut unreadable);
    for (n, path) in files.iter().enumerate() {
        let shown = path.display().to_string();
        // A large model is read in two halves on two threads.
        let bytes = match qflow_engine::file::read(path) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: cannot read {shown}: {e}");
                unreadable += 1;
                continue;
            }
        };
        let config = match &args.config {
            Some(file) => Config::from_files(std::slice::from_ref(file)),
            None => Config::for_model(path),
        };
        // Which files set the rules, once per set, before the summary.
        if let Some(by) = config.configured_by() {
            if !configured.contains(&by) {
                configured.push(by);
            }
        }
        // A configuration file's own problems, once per file.
        for file in &config.files {
            if reported.contains(&file.path) {
                continue;
            }
            reported.push(file.path.clone());
            let index = LineIndex::new(&file.text);
            // Shown relative to the working directory, like the models.
            let shown = file.shown();
            for d in &file.diagnostics {
                emit(&shown, &file.text, &index, d);
            }
        }
        if args.format == Format::Lsp {
            // A clean file is listed too: its stale findings are cleared.
            publish_to(&shown);
        }
        let (text, analysis) = qflow_engine::analyze_bytes_with(&bytes, &config.settings);
        // Only the lines the reports name: a large model's findings are
        // few, and indexing all of its lines was 3 % of a whole check.
        let index = LineIndex::up_to(
            &text,
            qflow_engine::diagnostic::furthest(&analysis.diagnostics),
        );
        for d in &analysis.diagnostics {
            emit(&shown, &text, &index, d);
        }
        print_hints(&mut hints.borrow_mut());
        if n + 1 == files.len() {
            // The process ends next: freeing the last model (hundreds of
            // thousands of small allocations; 9 % of a check of the
            // 20,000-task model, docs/performance.md) would only delay the
            // exit, and the OS takes the memory back at once.
            std::mem::forget(analysis);
            std::mem::forget(index);
            std::mem::forget(text);
            std::mem::forget(bytes);
        }
    }
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&json).expect("diagnostics serialize")
        ),
        Format::Sarif => println!(
            "{}",
            serde_json::to_string_pretty(&sarif.finish()).expect("a SARIF log serializes")
        ),
        Format::Lsp => {
            let files: Vec<serde_json::Value> = published
                .into_inner()
                .into_iter()
                .map(|(_, uri, diagnostics)| {
                    serde_json::json!({ "uri": uri.as_str(), "diagnostics": diagnostics })
                })
                .collect();
            println!(
                "{}",
                serde_json::to_string(&files).expect("diagnostics serialize")
            )
        }
        Format::Human => {
            for by in &configured {
                println!("note: {by}");
            }
            println!(
                "{} checked: {}, {}, {}{}{}{}",
                counted(files.len(), "file", "files"),
                counted(errors, "error", "errors"),
                counted(warnings, "warning", "warnings"),
                counted(others, "note", "notes"),
                if unreadable > 0 {
                    format!(", {unreadable} unreadable")
                } else {
                    String::new()
                },
                if hidden > 0 {
                    format!(" ({hidden} below the minimum severity not shown)")
                } else {
                    String::new()
                },
                if deny_warnings && warnings > 0 {
                    " (warnings denied: --deny warnings)"
                } else {
                    ""
                }
            )
        }
    }
    if unreadable > 0 {
        ExitCode::from(2)
    } else if errors > 0 || (deny_warnings && warnings > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Hints held back, by file and code: (line:column, the one-line form, the message).
type Hints = BTreeMap<(String, qflow_engine::Code), Vec<(String, String, String)>>;

/// The hints of one file: a code's only hint as its line, several as one
/// line that counts them and says where (`-v` shows each in full).
fn print_hints(hints: &mut Hints) {
    for ((shown, code), found) in std::mem::take(hints) {
        if let [(_, line, _)] = found.as_slice() {
            println!("{line}\n");
            continue;
        }
        let rule = code
            .alias()
            .map(|rule| format!(" ({rule})"))
            .unwrap_or_default();
        let places: Vec<&str> = found.iter().map(|(at, _, _)| at.as_str()).collect();
        println!(
            "hint[{code}]{rule} {shown}: {} hints, at {}; the first: {} (-v shows each; qflow explain {code})\n",
            found.len(),
            places.join(", "),
            found[0].2,
        );
    }
}

fn counted(n: usize, one: &str, many: &str) -> String {
    qflow_engine::text::counted(n as u64, one, many)
}

/// The models the arguments name: a file as given (even without the
/// `.bpmn` extension: the user chose it), a directory as every model file
/// under it (`.bpmn`, `.bpmn20.xml`), walked as ripgrep walks (`.gitignore`, hidden files and
/// directories skipped) and sorted so reports come in a stable order. A
/// directory with no model, or one that cannot be walked, is reported and
/// counted as unreadable.
fn model_files(paths: &[PathBuf], unreadable: &mut usize) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = Vec::new();
        for entry in ignore::WalkBuilder::new(path).build() {
            match entry {
                Ok(e) if e.file_type().is_some_and(|t| t.is_file()) && is_model(e.path()) => {
                    found.push(e.into_path())
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!("error: cannot walk {}: {e}", path.display());
                    *unreadable += 1;
                }
            }
        }
        if found.is_empty() {
            eprintln!(
                "error: {} is a directory with no .bpmn or .bpmn20.xml file under it: give model files or a directory that holds some",
                path.display()
            );
            *unreadable += 1;
        }
        found.sort();
        files.extend(found);
    }
    files
}

/// A `.bpmn` or `.bpmn20.xml` file: the engine's rule (`model::file`).
fn is_model(path: &Path) -> bool {
    qflow_engine::file::is_model_file(path)
}

/// `check --watch`: a check, then another each time what it read changes.
/// The files are polled (every 300 ms, by size and modification time), as
/// cargo-watch's poll mode does: it works alike on every file system,
/// network and container mounts included, and needs no watcher library for
/// a handful of models. Ends only when interrupted.
fn watch(args: Args) -> ExitCode {
    use std::io::IsTerminal;
    let once = Args {
        watch: false,
        ..args.clone()
    };
    loop {
        let seen = fingerprint(&args.files);
        let _ = run(once.clone());
        eprintln!(
            "[watching {} for changes; Ctrl-C stops]",
            qflow_engine::text::counted(seen.len() as u64, "file", "files")
        );
        while fingerprint(&args.files) == seen {
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        if std::io::stdout().is_terminal() {
            // A fresh screen for the fresh report, as cargo-watch's --clear.
            print!("\x1b[2J\x1b[H");
        } else {
            println!();
        }
    }
}

/// What a check read, as (path, size, modified time): the model files and
/// `qflow.toml` files under each directory named, and each file named.
fn fingerprint(paths: &[PathBuf]) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
    fn walk(p: &std::path::Path, out: &mut Vec<(PathBuf, u64, Option<std::time::SystemTime>)>) {
        if p.is_dir() {
            let Ok(entries) = std::fs::read_dir(p) else {
                return;
            };
            for e in entries.flatten() {
                let path = e.path();
                let name = e.file_name();
                let name = name.to_string_lossy();
                if path.is_dir() {
                    if !name.starts_with('.') && name != "target" && name != "node_modules" {
                        walk(&path, out);
                    }
                } else if qflow_engine::file::is_model_name(&name) || name == "qflow.toml" {
                    walk(&path, out);
                }
            }
        } else {
            let meta = std::fs::metadata(p).ok();
            out.push((
                p.to_path_buf(),
                meta.as_ref().map_or(0, |m| m.len()),
                meta.and_then(|m| m.modified().ok()),
            ));
        }
    }
    let mut out = Vec::new();
    for p in paths {
        walk(p, &mut out);
    }
    out.sort();
    out
}
