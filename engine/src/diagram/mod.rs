//! The process as a diagram: the drawing itself is the model layer's
//! ([`qflow_model::diagram`]: placement from bpmndi or a layered layout,
//! and the SVG), so the language server draws the same picture; the engine
//! adds what needs a store or an inspection: an instance's state on it
//! ([`state_of`]) and a fleet's counts per node
//! (`inspect::fleet::node_counts`).

pub use qflow_model::diagram::*;

mod state;

pub use state::{state_of, state_of_counts};

/// The diagram of deployment `id`'s process, drawn from its stored source;
/// `None` when the deployment is unknown or its source no longer loads.
pub fn of_deployment(store: &crate::store::Store, id: i64) -> Option<Diagram> {
    let row = store.deployment(id).ok()??;
    let source = store.deployment_source(id).ok()??;
    let defs = crate::load(&source).ok()?;
    let process = defs.executable_processes().find(|p| {
        p.id.as_ref()
            .is_some_and(|a| a.value.as_str() == row.process_id)
    })?;
    Some(Diagram::of(process, Some(&source)))
}
