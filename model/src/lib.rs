//! qflow's model layer: text in, model and verdicts out. Nothing here knows
//! a store or a runtime; the language server depends on this crate alone.
//!
//! - [`loader`]: text in, model and verdicts out (parse with spans, then rules).
//! - [`xml`], [`reader`], [`model`]: the spanned XML tree and the BPMN model.
//! - [`rules`]: the load-time rules, one module per family.
//! - [`diagnostic`], [`span`]: the one diagnostic type and its positions.
//! - [`policy`]: retry policies, their schedules and load projections.
//! - [`condition`]: the exclusive gateways' condition language.
//! - [`config`]: `.bpmnlintrc` and `qflow.toml`.
//! - [`diagram`]: the process drawn (placement, layout, SVG), for every face.

pub mod classify;
pub mod condition;
pub mod config;
pub mod diagnostic;
pub mod diagram;
pub mod dialect;
pub mod duration;
pub mod file;
pub mod loader;
pub mod model;
pub mod navigate;
pub mod policy;
pub mod reader;
pub mod rules;
pub mod span;
pub mod suggest;
/// A model generator for tests and benchmarks (not part of the API: other
/// crates' tests enable it with the `testing` feature).
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
