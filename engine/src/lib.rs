//! The qflow engine: everything qflow decides lives here.
//!
//! - [`loader`]: text in, model and verdicts out (parse with spans, then rules).
//! - [`xml`], [`reader`], [`model`]: the spanned XML tree and the BPMN model.
//! - [`rules`]: the load-time rules, one module per family.
//! - [`diagnostic`], [`span`]: the one diagnostic type and its positions.
//! - [`instance`]: the durable vocabulary (snapshot, history, rows), typed.
//! - [`runtime`]: the decisions and the shell that makes them durable.
//! - [`store`]: SQLite; depends on [`instance`], never on [`runtime`].
//! - [`inspect`]: one instance as plain data, for every view to render.
//! - [`diagram`]: a process as a placed diagram, for the SVG and the console.
//! - [`operate`]: an operator's actions, decided through the runtime's shell.
//!
//! The faces (CLI, language server, console) only present what this crate decides.

pub mod classify;
pub mod config;
pub mod diagnostic;
pub mod diagram;
pub mod dialect;
pub mod duration;
pub mod embed;
pub mod file;
pub mod handlers;
pub mod inspect;
pub mod instance;
pub mod loader;
pub mod model;
pub mod navigate;
pub mod operate;
pub mod policy;
pub mod reader;
pub mod repair;
pub mod rules;
pub mod runtime;
pub mod span;
pub mod store;
pub mod suggest;
/// A model generator for tests and benchmarks (not part of the engine's API:
/// other crates' tests enable it with the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub mod testgen;
#[cfg(test)]
mod testgen_tests;
pub mod text;
pub mod xml;

pub use diagnostic::{Code, Diagnostic, Severity};
pub use loader::{
    analyze, analyze_bytes, analyze_bytes_with, analyze_with, load, load_with, Analysis,
};
