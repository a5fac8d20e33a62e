//! What the store-operating subcommands (deploy, deployments, instances,
//! show, retire, migrate, resume) share: opening the database the user
//! named, reading a model, the output format, exit codes, timestamps.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use qflow_engine::runtime::graph::Graph;
use qflow_engine::store::explain::connect_error;
use qflow_engine::store::{Location, Store};
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Aligned text for people.
    Human,
    /// JSON on stdout (docs/cli.md), messages on stderr.
    Json,
}

/// Exit 2: the command could not do its work (bad arguments, an
/// unreadable file, a database that cannot be opened, no such instance).
pub(crate) const USAGE: u8 = 2;
/// Exit 4: refused by the state of the store (a retirement blocked by
/// FAILED or unfinished instances, a migration that does not fit, an
/// instance that cannot be resumed); nothing was changed.
pub(crate) const REFUSED: u8 = 4;

/// `error: …` on stderr and, with JSON, `{"status":"error",…}` on stdout; exit `code`.
pub(crate) fn fail(format: Format, code: u8, why: &str, msg: impl std::fmt::Display) -> ExitCode {
    let msg = msg.to_string();
    eprintln!("error: {msg}");
    if format == Format::Json {
        let rec = json!({"status": "error", "error": why, "message": msg});
        println!(
            "{}",
            super::run::json_line(&rec, &["status", "error", "message"])
        );
    }
    ExitCode::from(code)
}

/// The environment variable naming the database of every command that
/// operates one (docs/cli.md, "The database").
pub(crate) const DB_VAR: &str = "QFLOW_DB";

/// The database named outside the command line, and where: `QFLOW_DB`, else
/// the `db` of the nearest `qflow.toml` walking up from the working
/// directory (a SQLite path there is relative to the file's folder).
pub(crate) fn default_db() -> Option<(String, String)> {
    if let Some(v) = std::env::var_os(DB_VAR).filter(|v| !v.is_empty()) {
        return Some((v.to_string_lossy().into_owned(), DB_VAR.to_string()));
    }
    let dir = std::env::current_dir().ok()?;
    let (file, db) = qflow_engine::config::qflow_toml::database(&dir)?;
    Some((db, file.display().to_string()))
}

/// `--db` when given, else the database named outside the command line
/// ([`default_db`]); `Ok(None)` when neither names one. A name outside the
/// command line that is not a database location is an error naming where
/// it came from, never silently ignored.
pub(crate) fn db_or_default(flag: Option<&Location>) -> Result<Option<Location>, String> {
    if let Some(db) = flag {
        return Ok(Some(db.clone()));
    }
    match default_db() {
        None => Ok(None),
        Some((db, from)) => db.parse::<Location>().map(Some).map_err(|e| {
            format!("{from}: `{db}` is not a database (a SQLite file or a postgres:// URL): {e}")
        }),
    }
}

/// Open a database that must already exist (reading commands never create one).
pub(crate) fn open_existing(db: &Location) -> Result<Store, String> {
    Store::connect_existing(db).map_err(|e| format!("--db {}", connect_error(db, &e)))
}

/// Open a database only to read it: one qflow may not write (a read-only
/// file, directory or mount) is read as it is (`Store::connect_for_reading`).
pub(crate) fn open_for_reading(db: &Location) -> Result<Store, String> {
    Store::connect_for_reading(db).map_err(|e| format!("--db {}", connect_error(db, &e)))
}

/// Open (or create) a database.
pub(crate) fn open(db: &Location) -> Result<Store, String> {
    Store::connect(db).map_err(|e| format!("--db {}", connect_error(db, &e)))
}

/// A model read, checked as `qflow check` checks it (its configuration
/// deciding the modelling rules), and compiled for the runtime.
pub(crate) struct Model {
    pub shown: String,
    pub source: String,
    pub graph: Graph,
}

/// Read and accept a model, or say why not: `Err((exit code, printed))`.
/// A refused model's reports go to stderr (and a JSON record to stdout).
pub(crate) fn read_model(path: &Path, format: Format) -> Result<Model, ExitCode> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        fail(
            format,
            USAGE,
            "unreadable",
            format!("cannot read {shown}: {e}"),
        )
    })?;
    let config = qflow_engine::config::Config::for_model(path);
    let (text, analysis) = qflow_engine::analyze_bytes_with(&bytes, &config.settings);
    let refusals: Vec<&qflow_engine::Diagnostic> = analysis.refusals().collect();
    if !refusals.is_empty() || analysis.definitions.is_none() {
        super::check::print_refusals(&refusals, &shown, &text);
        let message = match config.configured(refusals.iter().copied()) {
            Some(by) => {
                format!("{shown}: the model is refused (load errors; {by}); nothing was changed")
            }
            None => format!("{shown}: the model is refused (load errors); nothing was changed"),
        };
        eprintln!("{message}");
        if format == Format::Json {
            let index = qflow_engine::span::LineIndex::new(&text);
            let diagnostics: Vec<Value> = refusals
                .iter()
                .map(|d| d.to_json(&shown, &text, &index))
                .collect();
            let rec = json!({"status": "error", "error": "model", "message": message, "diagnostics": diagnostics});
            println!(
                "{}",
                super::run::json_line(&rec, &["status", "error", "message"])
            );
        }
        return Err(ExitCode::from(1));
    }
    let defs = analysis.definitions.expect("checked above");
    let graph = Graph::compile(&defs).map_err(|e| {
        eprintln!("error: {shown}: the model cannot run: {e}");
        if format == Format::Json {
            let rec = json!({"status": "error", "error": "model", "message": format!("{shown}: the model cannot run: {e}")});
            println!(
                "{}",
                super::run::json_line(&rec, &["status", "error", "message"])
            );
        }
        ExitCode::from(1)
    })?;
    Ok(Model {
        shown,
        source: text.into_owned(),
        graph,
    })
}

/// `--outage DURATION` and `--jobs N` as `project` and `simulate` take
/// them: the outage parsed, and at least one job; else the usage error
/// (exit 2), said once for both commands.
pub(crate) fn outage_and_jobs(
    outage: &str,
    jobs: u64,
    format: Format,
) -> Result<Duration, ExitCode> {
    let d = qflow_engine::duration::parse_input(outage)
        .map_err(|e| fail(format, USAGE, "usage", format!("--outage {outage}: {e}")))?;
    if jobs == 0 {
        return Err(fail(format, USAGE, "usage", "--jobs must be at least 1"));
    }
    Ok(d)
}

/// A model's path as shown, its text, and its definitions: for commands that
/// read a model's policies without running one instance of it (`project`,
/// `simulate`). Exit 2 for an unreadable file, 1 for a model that does not
/// load (the reports say where), as everywhere.
pub(crate) fn read_definitions(
    path: &Path,
    format: Format,
) -> Result<(String, String, qflow_engine::model::Definitions), ExitCode> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        fail(
            format,
            USAGE,
            "unreadable",
            format!("cannot read {shown}: {e}"),
        )
    })?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    match qflow_engine::load(&text) {
        Ok(defs) => Ok((shown, text, defs)),
        Err(diags) => {
            // Counted as `check` counts them: the errors, not every finding
            // the failed load carried (its warnings and hints too).
            let errors = diags
                .iter()
                .filter(|d| d.severity == qflow_engine::diagnostic::Severity::Error)
                .count()
                .max(1);
            Err(fail(
                format,
                1,
                "model",
                format!(
                    "{shown} does not load ({}): `qflow check {shown}` shows where",
                    qflow_engine::text::counted(errors as u64, "error", "errors")
                ),
            ))
        }
    }
}

/// A wall-clock instant as RFC 3339 UTC, to the second.
pub(crate) fn timestamp(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// The short form of a source hash shown in lists (the JSON has it whole).
pub(crate) fn short_hash(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// Milliseconds since an instance started, as `qflow run` shows them (`+2h 36m`).
pub(crate) fn since_start(ms: i64) -> String {
    format!("+{}", qflow_engine::duration::compact_ms(ms))
}

/// Seconds (JSON's axis) from milliseconds.
pub(crate) fn seconds(ms: i64) -> Value {
    qflow_engine::instance::history::seconds(ms)
}

/// Print rows as aligned columns (the last column unpadded).
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) {
    print!("{}", table_text(header, rows, ""));
}

/// Rows as aligned columns two spaces apart (the last column unpadded),
/// each line after `indent` and ending in a newline.
pub(crate) fn table_text(header: &[&str], rows: &[Vec<String>], indent: &str) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let n = cells.len();
        let mut s = String::new();
        for (i, c) in cells.into_iter().enumerate() {
            if i + 1 == n {
                s.push_str(&c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        format!("{indent}{}\n", qflow_engine::text::printable(s.trim_end()))
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    for r in rows {
        out += &line(r.clone());
    }
    out
}
