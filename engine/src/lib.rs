//! The qflow engine: the facade over qflow's layers, and the services that
//! stand on them.
//!
//! The layers are crates of their own, each depending only on those below:
//! [`qflow_instance`] (the durable vocabulary), [`qflow_model`] (the loader,
//! rules and diagnostics), [`qflow_store`] (the durable store) and
//! [`qflow_runtime`] (decisions, the shell, the drivers). This crate adds
//! the services and re-exports the layers under the paths the faces use:
//!
//! - [`embed`]: the engine as a library (docs/library.md).
//! - [`inspect`]: one instance as plain data, for every view to render.
//! - [`diagram`]: a process as a placed diagram, for the SVG and the console.
//! - [`dependencies`]: the dependencies a database knows (containment's names).
//! - [`operate`]: an operator's actions, decided through the runtime's shell.
//! - [`repair`]: migration of an instance with its plan shown first.
//! - [`local`]: what a local run offers its faces beyond its next decision.
//! - [`handlers`]: the handlers file and what a handler's answer means.
//! - [`breaker`]: a dependency's circuit breaker, fed and moved under `serve`.
//!
//! The faces (CLI, language server, console) only present what this crate decides.

pub use qflow_instance as instance;
#[cfg(feature = "testing")]
pub use qflow_model::testgen;
pub use qflow_model::{
    classify, condition, config, diagnostic, dialect, duration, file, loader, model, navigate,
    policy, reader, rules, span, suggest, text, xml,
};
pub use qflow_runtime as runtime;
pub use qflow_store as store;

pub mod breaker;
pub mod dependencies;
pub mod diagram;
pub mod embed;
pub mod forecast;
pub mod handlers;
pub mod inspect;
pub mod local;
pub mod operate;
pub mod release;
pub mod repair;

pub use qflow_model::{
    analyze, analyze_bytes, analyze_bytes_with, analyze_with, load, load_with, Analysis, Code,
    Diagnostic, Severity,
};
