//! A local session: how every face opens one instance of a model on this
//! machine. `qflow run` and `qflow console` both go through here, so the
//! same model, scenario and database give the same instance in both.
//!
//! - **The scenario**: the one given; else, unless the caller says "none",
//!   the scenario beside the model (`<dir>/scenarios/<stem>.json`); else no
//!   scenario (every task succeeds, counterparts answer `{}` at once).
//! - **The database**: the one given (a SQLite file, created if missing, or
//!   a PostgreSQL URL); else a temporary SQLite file made for this session
//!   and removed when it ends.
//! - **The model file**: a database the user keeps (`--db`) records the
//!   model file on its deployment, as `qflow deploy` does, whichever face
//!   opened the session ([`SessionDb::open_for`]).
//! - **Resume**: a database holding an unfinished instance of the same model
//!   (same source hash) resumes it instead of starting a second one, and
//!   virtual time continues from its last decision ([`LocalRun::open`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::Clock;
use crate::driver::{LocalRun, RunError};
use crate::graph::Graph;
use crate::scenario::Scenario;
use qflow_model::model::Definitions;
use qflow_store::{Location, Store, StoreError};

/// Which scenario a session runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScenarioChoice {
    /// This file.
    File(PathBuf),
    /// The scenario beside the model, if there is one.
    BesideModel,
    /// None: every task succeeds.
    None,
}

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot read scenario {path}: {message}")]
    ScenarioUnreadable { path: String, message: String },
    #[error("scenario {path}: {message}")]
    ScenarioInvalid { path: String, message: String },
    #[error("{path}: {error}")]
    Database { path: String, error: StoreError },
    #[error(transparent)]
    Run(#[from] RunError),
}

/// `<dir>/scenarios/<stem>.json` beside a model, if that file exists: the
/// one rule for which scenario belongs to a model, which every face asks
/// (`qflow run`, `qflow console`, and the editor, which runs those). The
/// stem is the file name without its model suffix
/// ([`qflow_model::file::model_stem`]), so `order.v2.bpmn`'s scenario is
/// `scenarios/order.v2.json` and `order.bpmn20.xml`'s `scenarios/order.json`.
pub fn scenario_beside(model: &Path) -> Option<PathBuf> {
    let p = companion_scenario(model)?;
    p.is_file().then_some(p)
}

/// Where [`scenario_beside`] looks, whether or not the file exists.
pub fn companion_scenario(model: &Path) -> Option<PathBuf> {
    let stem = qflow_model::file::model_stem(model)?;
    let dir = model.parent().unwrap_or(Path::new("."));
    Some(dir.join("scenarios").join(format!("{stem}.json")))
}

/// The scenario a session runs under, and the file it came from (`None`:
/// no scenario file).
pub fn load_scenario(
    model: &Path,
    choice: &ScenarioChoice,
) -> Result<(Scenario, Option<PathBuf>), SessionError> {
    let path = match choice {
        ScenarioChoice::File(p) => p.clone(),
        ScenarioChoice::None => return Ok((Scenario::default(), None)),
        ScenarioChoice::BesideModel => match scenario_beside(model) {
            Some(p) => p,
            None => return Ok((Scenario::default(), None)),
        },
    };
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| SessionError::ScenarioUnreadable {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    let scenario = Scenario::parse(&text).map_err(|e| SessionError::ScenarioInvalid {
        path: shown,
        message: e.to_string(),
    })?;
    Ok((scenario, Some(path)))
}

/// A session's database: the one given (`--db`: a SQLite file or a
/// PostgreSQL URL), or a temporary SQLite file removed (with its WAL files)
/// when this value is dropped.
#[derive(Debug)]
pub struct SessionDb {
    location: Location,
    temporary: bool,
}

impl SessionDb {
    /// `given`, or a fresh temporary SQLite file (unique per process and
    /// session; `face` names the face in the file name, for whoever finds
    /// one left by a killed process).
    pub fn new(given: Option<&Location>, face: &str) -> SessionDb {
        match given {
            Some(l) => SessionDb {
                location: l.clone(),
                temporary: false,
            },
            None => {
                static SESSIONS: AtomicU64 = AtomicU64::new(0);
                let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.subsec_nanos());
                let name = format!("qflow-{face}-{}-{n}-{nanos}.db", std::process::id());
                SessionDb {
                    location: Location::Sqlite(std::env::temp_dir().join(name)),
                    temporary: true,
                }
            }
        }
    }

    /// Where the store is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Whether the database is this session's own, removed when it ends.
    pub fn is_temporary(&self) -> bool {
        self.temporary
    }

    /// Open (or create) the store.
    pub fn open(&self) -> Result<Store, SessionError> {
        Store::connect(&self.location).map_err(|error| self.error(error))
    }

    /// Open (or create) the store for a session on the model file `model`
    /// (as the user named it; `source` is its text). A database the user
    /// keeps records that file on the model's deployment, as `qflow deploy`
    /// does, so `qflow resume` finds the scenario beside it and `qflow
    /// deployments` and the console's list name it; a temporary database
    /// records nothing. `qflow run` and `qflow console` both open here, so
    /// a database reads the same whichever made it. A model the runtime
    /// cannot execute records nothing either: opening its run says why.
    pub fn open_for(
        &self,
        model: &str,
        source: &str,
        defs: &Definitions,
    ) -> Result<Store, SessionError> {
        let mut store = self.open()?;
        if !self.temporary {
            if let Ok(graph) = Graph::compile(defs) {
                let now = crate::clock::system_now_ms();
                store
                    .deploy_from(&graph.process_id, source, Some(model), now)
                    .map_err(|error| self.error(error))?;
            }
        }
        Ok(store)
    }

    fn error(&self, error: StoreError) -> SessionError {
        SessionError::Database {
            path: self.location.to_string(),
            error,
        }
    }
}

impl Drop for SessionDb {
    fn drop(&mut self) {
        if let (true, Location::Sqlite(path)) = (self.temporary, &self.location) {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
}

/// One local instance and the database it lives in. Field order matters:
/// the run (and its connection) goes before the temporary file is removed.
pub struct Session<C: Clock> {
    pub run: LocalRun<C>,
    pub db: SessionDb,
}

impl<C: Clock> Session<C> {
    /// Open the store in `db` for the model file `model` (whose text is
    /// `source`; [`SessionDb::open_for`]) and start the model's instance
    /// there, or resume the unfinished one.
    pub fn open(
        db: SessionDb,
        model: &str,
        source: &str,
        defs: &Definitions,
        scenario: Scenario,
        clock: C,
    ) -> Result<Session<C>, SessionError> {
        let store = db.open_for(model, source, defs)?;
        let run = LocalRun::open(store, source, defs, scenario, clock)?;
        Ok(Session { run, db })
    }
}

impl<C: Clock> Drop for Session<C> {
    fn drop(&mut self) {
        let _ = self.run.release();
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::companion_scenario;

    #[test]
    fn a_model_s_scenario_keeps_every_dot_of_its_stem() {
        assert_eq!(
            companion_scenario(Path::new("/m/order.v2.bpmn")).unwrap(),
            Path::new("/m/scenarios/order.v2.json")
        );
        assert_eq!(
            companion_scenario(Path::new("charge.bpmn")).unwrap(),
            Path::new("scenarios/charge.json")
        );
    }

    #[test]
    fn a_bpmn20_xml_model_s_scenario_is_named_by_the_stem_before_the_whole_suffix() {
        assert_eq!(
            companion_scenario(Path::new("/m/order.bpmn20.xml")).unwrap(),
            Path::new("/m/scenarios/order.json")
        );
        assert_eq!(
            companion_scenario(Path::new("/m/order.v2.bpmn20.xml")).unwrap(),
            Path::new("/m/scenarios/order.v2.json")
        );
        // A model given by another name keeps Path::file_stem's stem.
        assert_eq!(
            companion_scenario(Path::new("/m/order.xml")).unwrap(),
            Path::new("/m/scenarios/order.json")
        );
    }
}
