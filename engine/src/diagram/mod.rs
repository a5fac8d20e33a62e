//! The process as a diagram: the drawing itself is the model layer's
//! ([`qflow_model::diagram`]: placement from bpmndi or a layered layout,
//! and the SVG), so the language server draws the same picture; the engine
//! adds what needs a store or an inspection: an instance's state on it
//! ([`state_of`]) and a fleet's counts per node
//! (`inspect::fleet::node_counts`).

pub use qflow_model::diagram::*;

mod state;

pub use state::state_of;
