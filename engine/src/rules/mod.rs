//! The load-time rules of DESIGN.md §2, one module per family.
//!
//! Scoping: the document rules run on every BPMN file; the execution rules run
//! only on executable processes in documents that declare the qflow namespace,
//! so another engine's models never drown in qflow errors.

use crate::diagnostic::Diagnostic;
use crate::model::Definitions;

mod document;

/// Every verdict on a model that was read successfully.
pub fn check(defs: &Definitions, source: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    document::check(defs, source, &mut out);
    out
}
