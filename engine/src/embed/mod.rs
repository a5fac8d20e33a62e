//! qflow as a library: open a store, deploy a model, register a handler for
//! each `q:task` name, start instances, drive them, answer their channel
//! calls.
//!
//! ```
//! use qflow_engine::embed::{Engine, TaskError};
//! use serde_json::json;
//!
//! # let source = qflow_engine::embed::EXAMPLE_MODEL;
//! let mut engine = Engine::in_memory()?;
//! engine.register("payments.charge", |task| {
//!     let amount = task.var("amount").and_then(|a| a.as_i64()).unwrap_or(0);
//!     if amount <= 0 {
//!         return Err(TaskError::permanent("INVALID_AMOUNT"));
//!     }
//!     Ok(json!({ "chargeId": format!("ch_{amount}") }))
//! });
//! let deployment = engine.deploy(source)?;
//! let instance = engine.start(&deployment, json!({ "amount": 42 }))?;
//! engine.run_until_idle()?;
//! assert_eq!(engine.status(&instance)?["status"], "completed");
//! assert_eq!(engine.variables(&instance)?["chargeId"], "ch_42");
//! # Ok::<(), qflow_engine::embed::EngineError>(())
//! ```
//!
//! Everything the engine decides is decided exactly as for `qflow run`:
//! every attempt, retry park, timeout and failure is a durable transition
//! in the store, taken under the instance's claim. A handler is a plain
//! closure: it returns the variables to merge, a BPMN error (routed to an
//! error boundary), or a failure with a code and a class (and, for
//! rate-limited, the provider's delay). A handler that panics does not
//! crash the engine: the attempt fails with the code `q.handler.panic`
//! and the class `unknown-outcome`, because the panic may have come after
//! the handler's effect; the node then waits for a reconciliation
//! ([`Engine::resolve`]) and is never retried blindly.
//!
//! Time: [`Time::Virtual`] (the default) gives every instance its own
//! time-skipping clock, as `qflow run` does, so a thirteen-hour backoff
//! runs at once; [`Time::System`] waits for the wall clock, which is what
//! [`Engine::serve`] is for.

mod drive;
mod engine;
mod outage;
mod serve;
mod task;
mod world;

pub use engine::{Engine, EngineError, Step, Time};
pub use outage::{reconnect_wait, OutageEvent, StoreHealth, StoreState, FIRST_WAIT, MAX_WAIT};
pub use serve::{Late, Lateness, Waker};
pub use task::{Task, TaskError, TaskResult, Variables, MISSING, PANIC};
pub use world::{channel_names, task_names, Delivery, Handlers, Request, DEFAULT_LEASE};

pub use crate::instance::event::{FailureClass, Resolution};
pub use crate::runtime::driver::Verdict as ResponseVerdict;

/// The model the crate's examples run: `payments.charge` between a start
/// and an end, with a retry policy.
pub const EXAMPLE_MODEL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
             xmlns:q="urn:qflow:bpmn:1" id="defs" targetNamespace="urn:example">
  <process id="charge" isExecutable="true">
    <startEvent id="start" name="Order placed"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="charge_card"/>
    <serviceTask id="charge_card" name="Charge card" q:task="payments.charge">
      <extensionElements>
        <q:retry maxAttempts="4" backoff="PT1M PT5M PT25M" jitter="none"/>
      </extensionElements>
    </serviceTask>
    <sequenceFlow id="f2" sourceRef="charge_card" targetRef="done"/>
    <endEvent id="done" name="Charged"/>
  </process>
</definitions>
"#;

#[cfg(test)]
mod lane_tests;
#[cfg(test)]
mod tests;
