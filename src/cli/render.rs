//! `qflow render MODEL [--db DB --instance ID] --svg FILE`: the process as an
//! SVG diagram, with an instance's state on it when one is named.
//!
//! The engine places the diagram ([`Diagram`]), marks the state on it
//! ([`DiagramState`]) and writes the SVG ([`svg`]); this module reads the
//! files and the database and writes the result whole.

use std::path::PathBuf;
use std::process::ExitCode;

use qflow_engine::diagram::svg::svg;
use qflow_engine::diagram::Diagram;
use qflow_engine::inspect::Inspection;
use qflow_engine::model::{Definitions, Process};
use qflow_engine::runtime::graph::Graph;
use qflow_engine::store::{Location, Store};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The BPMN model to draw.
    pub model: PathBuf,
    /// A database holding an instance of the model (with --instance): a
    /// SQLite file or a postgres:// URL. Default: $QFLOW_DB, else the `db`
    /// of the nearest qflow.toml.
    #[arg(long, value_name = "DB", requires = "instance")]
    pub db: Option<Location>,
    /// The instance whose state to draw on the diagram (from --db).
    #[arg(long, value_name = "ID")]
    pub instance: Option<String>,
    /// Where to write the SVG (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub svg: PathBuf,
}

fn fail(code: u8, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("qflow render: {message}");
    ExitCode::from(code)
}

pub(crate) fn run(args: Args) -> ExitCode {
    // Exit codes as in every subcommand: 1 the model is not BPMN, 2 an
    // unreadable file, a missing instance or database, a failed write.
    let shown = args.model.display().to_string();
    let bytes = match std::fs::read(&args.model) {
        Ok(b) => b,
        Err(e) => return fail(2, format!("cannot read {shown}: {e}")),
    };
    let (text, analysis) = qflow_engine::analyze_bytes(&bytes);
    let Some(defs) = analysis.definitions else {
        let why = analysis
            .diagnostics
            .first()
            .map_or_else(|| "not a BPMN model".to_string(), |d| d.message.clone());
        return fail(
            1,
            format!("{shown}: {why} (`qflow check {shown}` shows where)"),
        );
    };
    let db = match (&args.db, &args.instance) {
        (Some(db), _) => Some(db.clone()),
        (None, Some(id)) => match super::ops::default_db() {
            Some((db, from)) => match db.parse::<Location>() {
                Ok(l) => Some(l),
                Err(e) => return fail(2, format!("{from}: the database `{db}`: {e}")),
            },
            None => {
                return fail(
                    2,
                    format!("--instance {id} needs the database holding it: --db DB (or QFLOW_DB)"),
                )
            }
        },
        (None, None) => None,
    };
    let (state, deployed) = match (&db, &args.instance) {
        (Some(db), Some(id)) => match inspect(db, id) {
            Ok((i, source)) => (Some(i), Some(source)),
            Err(m) => return fail(2, m),
        },
        _ => (None, None),
    };
    // An instance is drawn on the model it runs: a model file that is not
    // that one (edited since, or another version) would put its state on
    // the wrong shapes. The deployed model is drawn instead, and said so.
    let deployed_defs;
    let (text, defs) = match (&deployed, &args.instance) {
        (Some(source), Some(id)) if *source != text => match qflow_engine::load(source) {
            Ok(d) => {
                eprintln!(
                        "note: {shown} is not the model instance {id} was started from: \
                         drawing its deployed model instead (`qflow instances --db {}` names its deployment)",
                        db.as_ref().map(|d| d.to_string()).unwrap_or_default()
                    );
                deployed_defs = d;
                (std::borrow::Cow::Owned(source.clone()), &deployed_defs)
            }
            Err(_) => {
                return fail(
                    2,
                    format!("--instance {id}: its deployed model no longer loads"),
                )
            }
        },
        _ => (text, &defs),
    };
    let process = match pick(defs, state.as_ref().map(|i| i.process.as_str())) {
        Ok(p) => p,
        Err(m) => return fail(2, format!("{shown}: {m}")),
    };
    let diagram = Diagram::of(process, Some(&text));
    let marks = state
        .as_ref()
        .map(|i| qflow_engine::diagram::state_of(&diagram, i));
    let svg = svg(&diagram, marks.as_ref());
    if let Err(e) =
        crate::cli::report::write_output(&args.svg, &svg, "open it in a browser or an image viewer")
    {
        return fail(2, format!("cannot write {}: {e}", args.svg.display()));
    }
    ExitCode::SUCCESS
}

/// The process to draw: the instance's, else the first executable one,
/// else the first.
fn pick<'a>(defs: &'a Definitions, wanted: Option<&str>) -> Result<&'a Process, String> {
    let id = |p: &Process| p.id.as_ref().map(|a| a.value.clone()).unwrap_or_default();
    match wanted {
        Some(w) => defs.processes.iter().find(|p| id(p) == w).ok_or_else(|| {
            format!("the instance runs process `{w}`, which this model does not define: render the model the instance was started from")
        }),
        None => defs
            .processes
            .iter()
            .find(|p| p.is_executable)
            .or(defs.processes.first())
            .ok_or_else(|| "the model defines no process to draw".to_string()),
    }
}

/// Read instance `id` from the database, against the model it was deployed
/// with; that model's source beside it.
fn inspect(db: &Location, id: &str) -> Result<(Inspection, String), String> {
    if db.sqlite_path().is_some_and(|p| !p.exists()) {
        return Err(format!("--db {db}: no such database file"));
    }
    let store = Store::connect_for_reading(db).map_err(|e| {
        format!(
            "--db {}",
            qflow_engine::store::explain::connect_error(db, &e)
        )
    })?;
    let row = store
        .instance(id)
        .map_err(|e| format!("--db {db}: {e}"))?
        .ok_or_else(|| {
            format!(
                "--instance {id}: no such instance in {db} (`qflow instances --db {db}` lists them)"
            )
        })?;
    let source = store
        .deployment_source(row.deployment_id)
        .map_err(|e| format!("--db {db}: {e}"))?
        .ok_or_else(|| format!("--instance {id}: its deployment is missing from the database"))?;
    let defs = qflow_engine::load(&source)
        .map_err(|_| format!("--instance {id}: its deployed model no longer loads"))?;
    let graph = Graph::compile(&defs).map_err(|e| format!("--instance {id}: {e}"))?;
    let inspection =
        Inspection::read(&store, &graph, id).map_err(|e| format!("--instance {id}: {e}"))?;
    Ok((inspection, source))
}
