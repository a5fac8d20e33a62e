//! The durable runtime: decisions as pure functions of durable facts, and the
//! local run loop that applies them through [`qflow_store`].
//!
//! - [`snapshot`]: the canonical open-keyed snapshot (same state, same bytes),
//!   defined with the rest of the durable vocabulary in [`qflow_instance`].
//! - [`graph`]: an accepted model compiled into what decisions walk.
//! - [`condition`]: the exclusive gateways' condition language.
//! - [`decide`]: the functional core, facts + event + now → transition.
//! - [`clock`]: virtual (time-skipping) and system clocks.
//! - [`scenario`]: the scripted world of a local run (docs/run.md).
//! - [`scenario_check`]: a scenario checked against the model it drives.
//! - [`shell`]: the one function that takes a decision durably (claim, read,
//!   decide, apply), which every caller below goes through.
//! - [`driver`]: [`driver::LocalRun`], one decision per `step`.
//! - [`session`]: how a face opens a local instance (scenario beside the
//!   model, temporary database, resume).
//! - [`replica`]: several processes serving one database, the claim arbitrating.
//! - [`migrate`]: moving an instance to a new deployment with a node mapping.
//! - [`world`]: where attempts' and deliveries' outcomes come from (a
//!   scenario, real handlers): the one interface every driver asks.
//! - [`outcome`]: the expected end of a run (`--expect`), and what a reconciliation needs.
//! - [`ramp`]: a planned release (`--ramp`, `--max-rate`): when each park is
//!   let go, and the load with and without the ramp, pure.
//! - [`breaker`]: a dependency's circuit breaker (declaration and machine), pure.
//! - [`verify`]: what an instance's next decision will be (a repair's preview), pure.

pub mod breaker;
pub mod clock;
pub use qflow_model::condition;
pub mod decide;
pub mod driver;
pub mod fleet;
pub mod forecast;
pub mod graph;
pub mod lanes;
pub mod migrate;
pub mod outcome;
pub mod ramp;
pub mod replica;
pub mod scenario;
pub mod scenario_check;
pub mod session;
pub mod shell;
pub mod simulate;
pub mod verify;
pub mod world;
pub use qflow_instance::snapshot;

pub use clock::{Clock, SystemClock, VirtualClock};
pub use decide::{Status, Transition};
pub use driver::{Decision, LocalRun, RunError};
pub use scenario::Scenario;
pub use world::World;
