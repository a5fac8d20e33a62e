//! The facade: an [`Engine`] over a store and its handlers (open, deploy,
//! start, answer, reconcile, read); the driving loop is in `drive`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::diagnostic::Diagnostic;
use crate::inspect::Inspection;
use crate::instance::event::{ExternalEvent, Resolution};
use crate::instance::Event;
use crate::runtime::clock::system_now_ms;
use crate::runtime::decide;
use crate::runtime::driver::{self, Decision, RunError, Verdict};
use crate::runtime::graph::Graph;
use crate::runtime::shell::{self, deployed_graph, Choice, Taken};
use crate::store::{Deployment, Store, StoreError};

use super::task::{Task, TaskResult, Variables};
use super::world::Handlers;

/// How an [`Engine`] tells time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Time {
    /// Every instance on its own time-skipping clock, starting at 0: a due
    /// timer is taken at once, at its own instant (tests, simulations).
    #[default]
    Virtual,
    /// The wall clock: a timer is taken when it is due.
    System,
}

/// Why the engine could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the model is refused: {}", .0.iter().map(|d| format!("{} {}", d.code.as_str(), d.message)).collect::<Vec<_>>().join("; "))]
    Refused(Vec<Diagnostic>),
    #[error("variables must be a JSON object, not {0}")]
    NotAnObject(String),
    #[error("no instance `{0}` in this store")]
    NoInstance(String),
    #[error("no deployment of a process `{0}` that may start instances (deploy it first: qflow deploy MODEL --db DB)")]
    NoProcess(String),
    #[error("no handler for the task{} {}: add them to the handlers", if .0.len() == 1 { "" } else { "s" }, .0.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", "))]
    MissingHandlers(Vec<String>),
    #[error("another process holds the claim on instance `{0}`; try again when it lets go")]
    Busy(String),
    /// A start's idempotency key names another start (another process, or
    /// other variables): nothing was started.
    #[error("the idempotency key `{key}` started instance `{instance}` with other variables or of another process: send a new key for a new start")]
    KeyReused { key: String, instance: String },
}

/// One decision an [`Engine`] took, and the instance it was for.
#[derive(Debug, Clone)]
pub struct Step {
    pub instance: String,
    pub decision: Decision,
}

/// The engine, embedded: a store, the handlers, and a driver.
pub struct Engine {
    pub(super) store: Store,
    pub(super) handlers: Handlers,
    pub(super) time: Time,
    pub(super) owner: String,
    /// Keeps `owner` known as alive in this process while the engine
    /// lives, so another engine of the process (a server's endpoint
    /// worker, a second library engine) respects its claims and its
    /// attempts in flight, and takes them over once it is dropped.
    pub(super) owner_alive: crate::store::OwnerRegistration,
    pub(super) graphs: BTreeMap<i64, Arc<Graph>>,
    /// Best-effort poison wakes (instance, node): prompts, never facts.
    pub(super) wakes: Vec<(String, String)>,
    /// Per instance: the instant of its last decision and how many were
    /// taken at it (a loop that never waits is stopped, not spun).
    pub(super) instants: BTreeMap<String, (i64, u32)>,
    /// The serving loop's mailbox: lanes' outcomes and wake-ups in, the
    /// receiver taken while [`Engine::serve`] runs.
    pub(super) signal: (
        std::sync::mpsc::Sender<crate::runtime::lanes::Msg>,
        Option<std::sync::mpsc::Receiver<crate::runtime::lanes::Msg>>,
    ),
    pub(super) concurrency: usize,
    pub(super) late_after: std::time::Duration,
    pub(super) lateness: super::serve::Lateness,
    /// The store's state as the serving loop last met it (shared with a
    /// health endpoint).
    pub(super) health: super::outage::StoreHealth,
    /// Told of a database outage as it happens (a serving loop's log).
    pub(super) on_outage: Option<super::outage::OutageReport>,
    /// Told each time another process's new work woke the serving loop.
    pub(super) on_notified: Option<Box<dyn FnMut() + Send>>,
    /// Told of each move of a breaker this engine made (a serving loop's log).
    pub(super) on_breaker: Option<BreakerReport>,
}

/// Whoever is told of a breaker's moves ([`Engine::on_breaker`]).
pub(super) type BreakerReport = Box<dyn FnMut(&crate::store::breaker::BreakerLogged) + Send>;

/// Instances started before this instant (2000-01-01, wall clock) were
/// started on a virtual clock, whose epoch is 0.
pub(super) const VIRTUAL_EPOCH_LIMIT_MS: i64 = 946_684_800_000;

/// How many instances one round of [`Engine::step`] looks at.
pub(super) const ROUND: usize = 256;

impl EngineError {
    /// Whether the error is the database out of reach (a lost connection,
    /// a server restarting): the same work done later may succeed
    /// ([`crate::store::StoreError::is_unavailable`]).
    pub fn is_unavailable(&self) -> bool {
        match self {
            EngineError::Store(e) | EngineError::Run(RunError::Store(e)) => e.is_unavailable(),
            _ => false,
        }
    }
}

impl Engine {
    /// Open (or create) the SQLite store at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Engine, EngineError> {
        Ok(Engine::with_store(Store::open(path.as_ref())?))
    }

    /// Open (or create) the store a `--db` value names: a SQLite file or a
    /// PostgreSQL database by URL (`Location::parse`).
    pub fn connect(location: &crate::store::Location) -> Result<Engine, EngineError> {
        Ok(Engine::with_store(Store::connect(location)?))
    }

    /// A store in memory, gone when the engine is dropped (tests, examples).
    pub fn in_memory() -> Result<Engine, EngineError> {
        Ok(Engine::with_store(Store::open(Path::new(":memory:"))?))
    }

    /// An engine over an open store.
    pub fn with_store(store: Store) -> Engine {
        let owner_alive = crate::store::engine_owner();
        Engine {
            store,
            handlers: Handlers::new(),
            time: Time::Virtual,
            owner: owner_alive.name().to_string(),
            owner_alive,
            graphs: BTreeMap::new(),
            wakes: Vec::new(),
            instants: BTreeMap::new(),
            signal: {
                let (tx, rx) = std::sync::mpsc::channel();
                (tx, Some(rx))
            },
            concurrency: crate::runtime::lanes::DEFAULT_CONCURRENCY,
            late_after: std::time::Duration::from_millis(100),
            lateness: Default::default(),
            health: Default::default(),
            on_outage: None,
            on_notified: None,
            on_breaker: None,
        }
    }

    /// Take claims and run attempts as `owner`. By default each engine has
    /// a name of its own, `host:pid/eN`, so two engines of one process
    /// arbitrate by their claims and respect each other's attempts in
    /// flight. A chosen name should keep that shape (`host:pid/NAME`, see
    /// [`crate::store::engine_owner_named`]): the `host:pid` part lets a
    /// replica take over at once what a killed process left.
    pub fn set_owner(&mut self, owner: impl Into<String>) -> &mut Engine {
        self.owner = owner.into();
        self.owner_alive = crate::store::OwnerRegistration::new(self.owner.clone());
        self
    }

    /// Tell time this way from now on ([`Time::Virtual`] by default).
    pub fn set_time(&mut self, time: Time) -> &mut Engine {
        self.time = time;
        self
    }

    /// Run `handler` for every attempt of the `q:task` named `name`.
    pub fn register<F>(&mut self, name: &str, handler: F) -> &mut Engine
    where
        F: Fn(&Task<'_>) -> TaskResult + Send + Sync + 'static,
    {
        self.handlers.task(name, handler);
        self
    }

    /// The handlers and relays, to register more ([`Handlers::relay`],
    /// [`Handlers::task_with_lease`]).
    pub fn handlers_mut(&mut self) -> &mut Handlers {
        &mut self.handlers
    }

    /// Replace every handler and relay at once.
    pub fn set_handlers(&mut self, handlers: Handlers) -> &mut Engine {
        self.handlers = handlers;
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Load `source` (refused with its diagnostics if any rule refuses it),
    /// compile it and record it as a deployment (the same source is the
    /// same deployment).
    pub fn deploy(&mut self, source: &str) -> Result<Deployment, EngineError> {
        let defs = crate::load(source).map_err(|d| {
            EngineError::Refused(
                d.into_iter()
                    .filter(|d| d.severity == crate::Severity::Error)
                    .collect(),
            )
        })?;
        let graph = Graph::compile(&defs).map_err(RunError::from)?;
        let dep = self
            .store
            .deploy(&graph.process_id, source, system_now_ms())?;
        self.graphs.insert(dep.id, Arc::new(graph));
        Ok(dep)
    }

    /// The `q:task` names of a deployment no handler is registered for
    /// (each would fail its first attempt with [`MISSING`]).
    pub fn missing_handlers(
        &mut self,
        deployment: &Deployment,
    ) -> Result<Vec<String>, EngineError> {
        let graph = self.graph(deployment.id)?;
        Ok(self.handlers.missing(&graph))
    }

    pub(super) fn graph(&mut self, deployment: i64) -> Result<Arc<Graph>, EngineError> {
        if let Some(g) = self.graphs.get(&deployment) {
            return Ok(g.clone());
        }
        let g = Arc::new(deployed_graph(&self.store, deployment)?);
        self.graphs.insert(deployment, g.clone());
        Ok(g)
    }

    pub(super) fn start_ms(&self) -> i64 {
        match self.time {
            Time::Virtual => 0,
            Time::System => system_now_ms(),
        }
    }

    /// Start an instance of `deployment` with `variables` (a JSON object,
    /// or `Value::Null` for none); its id.
    pub fn start(
        &mut self,
        deployment: &Deployment,
        variables: Value,
    ) -> Result<String, EngineError> {
        let vars: Variables = match variables {
            Value::Null => Variables::new(),
            Value::Object(m) => m.into_iter().collect(),
            other => return Err(EngineError::NotAnObject(other.to_string())),
        };
        let graph = self.graph(deployment.id)?;
        let now = self.start_ms();
        let start = decide::start(&graph, &vars, now);
        Ok(self.store.start_instance(deployment, &start, now)?)
    }

    /// Start an instance of the newest deployment of `process_id` that is
    /// not retired; its id. Refused when a task of that deployment has no
    /// handler ([`EngineError::MissingHandlers`]).
    pub fn start_process(
        &mut self,
        process_id: &str,
        variables: Value,
    ) -> Result<String, EngineError> {
        let row = self
            .store
            .deployments()?
            .into_iter()
            .filter(|d| d.process_id == process_id && d.retired_ms.is_none())
            .max_by_key(|d| d.id)
            .ok_or_else(|| EngineError::NoProcess(process_id.into()))?;
        let dep = Deployment {
            id: row.id,
            process_id: row.process_id,
            hash: row.hash,
        };
        let missing = self.missing_handlers(&dep)?;
        if !missing.is_empty() {
            return Err(EngineError::MissingHandlers(missing));
        }
        self.start(&dep, variables)
    }

    /// [`Engine::start_process`] once per `key`: the first start with the
    /// key starts an instance, every later one (after a lost reply, on
    /// another replica, after a restart) returns that same instance and
    /// starts nothing; `false` says it was started before. A key already
    /// used for another process or other variables is refused
    /// ([`EngineError::KeyReused`]).
    pub fn start_process_once(
        &mut self,
        process_id: &str,
        variables: Value,
        key: &str,
    ) -> Result<(String, bool), EngineError> {
        let vars: Variables = match variables {
            Value::Null => Variables::new(),
            Value::Object(m) => m.into_iter().collect(),
            other => return Err(EngineError::NotAnObject(other.to_string())),
        };
        let fingerprint = start_fingerprint(process_id, &vars);
        let same = |k: &crate::store::start_keys::StartKey| -> Result<(String, bool), EngineError> {
            if k.process_id == process_id && k.fingerprint == fingerprint {
                Ok((k.instance.clone(), false))
            } else {
                Err(EngineError::KeyReused {
                    key: key.to_string(),
                    instance: k.instance.clone(),
                })
            }
        };
        if let Some(k) = self.store.start_key(key)? {
            return same(&k);
        }
        let row = self
            .store
            .deployments()?
            .into_iter()
            .filter(|d| d.process_id == process_id && d.retired_ms.is_none())
            .max_by_key(|d| d.id)
            .ok_or_else(|| EngineError::NoProcess(process_id.into()))?;
        let dep = Deployment {
            id: row.id,
            process_id: row.process_id,
            hash: row.hash,
        };
        let missing = self.missing_handlers(&dep)?;
        if !missing.is_empty() {
            return Err(EngineError::MissingHandlers(missing));
        }
        let graph = self.graph(dep.id)?;
        let now = self.start_ms();
        let start = decide::start(&graph, &vars, now);
        use crate::store::start_keys::KeyedStart;
        match self.store.start_instance_once(
            &dep,
            &start,
            now,
            key,
            &fingerprint,
            system_now_ms(),
        )? {
            KeyedStart::Started(id) => Ok((id, true)),
            KeyedStart::Existing(k) => same(&k),
        }
    }

    /// A counterpart's answer on `correlation` (`instance/node`, what a
    /// relay's [`Request::correlation`] says) to the request with
    /// `idempotency_key` (`None`: whichever attempt is live). The verdict
    /// is the runtime's: accepted, a retry pending, superseded, failed, or
    /// no such instance.
    pub fn respond(
        &mut self,
        correlation: &str,
        idempotency_key: Option<&str>,
        body: Value,
    ) -> Result<Verdict, EngineError> {
        Ok(self.respond_decided(correlation, idempotency_key, body)?.0)
    }

    /// [`Engine::respond`], with the decision it took and its instance
    /// (`None` when the verdict changed nothing): what a server prints.
    pub fn respond_decided(
        &mut self,
        correlation: &str,
        idempotency_key: Option<&str>,
        body: Value,
    ) -> Result<(Verdict, Option<(String, Decision)>), EngineError> {
        let Some((instance, _)) = self.store.correlation(correlation)? else {
            return Ok((driver::no_live_correlation(&self.store, correlation)?, None));
        };
        let now = self.now_for(&instance)?;
        match driver::respond_as(
            &mut self.store,
            &self.owner,
            correlation,
            idempotency_key.unwrap_or(""),
            body,
            now,
        ) {
            Ok((verdict, decision)) => Ok((verdict, decision.map(|d| (instance, d)))),
            Err(RunError::Store(StoreError::Claimed { .. } | StoreError::Conflict(_))) => {
                Err(EngineError::Busy(instance))
            }
            Err(RunError::Store(StoreError::Quarantined(_))) => Ok((Verdict::Quarantined, None)),
            Err(e) => Err(e.into()),
        }
    }

    /// Reconcile an unknown outcome at `node`: the effect happened
    /// (`Succeeded`, merging `variables`), did not and must not be retried
    /// (`Failed`), or did not and may be (`Retry`: the next attempt now,
    /// within the policy's budget). The decision taken, or `None` when the
    /// instance was not waiting for that (the history says why).
    pub fn resolve(
        &mut self,
        instance: &str,
        node: &str,
        resolution: Resolution,
        variables: Value,
    ) -> Result<Decision, EngineError> {
        let variables: Variables = match variables {
            Value::Null => Variables::new(),
            Value::Object(m) => m.into_iter().collect(),
            other => return Err(EngineError::NotAnObject(other.to_string())),
        };
        let now = self.now_for(instance)?;
        let ev = Event::External {
            event: ExternalEvent::Resolve {
                node: node.to_string(),
                resolution,
                variables,
            },
            index: None,
        };
        let owner = self.owner.clone();
        let taken = shell::take(
            &mut self.store,
            &owner,
            instance,
            |store, facts| deployed_graph(store, facts.deployment_id).map(Box::new),
            |_, _, _| Ok(Some(Choice::event(ev, now))),
        );
        self.store.release(instance, &owner)?;
        match taken? {
            Taken::Decided(d) => Ok(d),
            Taken::Idle => Err(EngineError::NoInstance(instance.into())),
            Taken::Lost { .. } => Err(EngineError::Busy(instance.into())),
        }
    }

    /// The instance's state as `qflow run`'s last line says it:
    /// `{"status": "completed"}`, `{"status": "failed", "code": …}`, or
    /// `{"status": "waiting", …}` with what it waits for.
    pub fn status(&self, instance: &str) -> Result<Value, EngineError> {
        if self.store.instance(instance)?.is_none() {
            return Err(EngineError::NoInstance(instance.into()));
        }
        Ok(crate::local::final_state(&self.store, instance)?.to_json())
    }

    /// The instance's variables, as persisted.
    pub fn variables(&self, instance: &str) -> Result<Value, EngineError> {
        let facts = match self.store.facts(instance) {
            Err(StoreError::NoInstance(_)) => return Err(EngineError::NoInstance(instance.into())),
            other => other?,
        };
        Ok(Value::Object(
            facts
                .snapshot
                .variables()
                .into_iter()
                .collect::<Map<_, _>>(),
        ))
    }

    /// The instance as plain data (nodes, timers, outbox, history, …).
    pub fn inspect(&mut self, instance: &str) -> Result<Inspection, EngineError> {
        let row = self
            .store
            .instance(instance)?
            .ok_or_else(|| EngineError::NoInstance(instance.into()))?;
        let graph = self.graph(row.deployment_id)?;
        Ok(Inspection::read(&self.store, &graph, instance)?)
    }
}

/// What identifies a start's request: its process and variables (sorted by
/// name), as a SHA-256 in hex.
fn start_fingerprint(process_id: &str, vars: &Variables) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(process_id.as_bytes());
    h.update(b"\n");
    h.update(serde_json::to_string(vars).unwrap_or_default().as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}
