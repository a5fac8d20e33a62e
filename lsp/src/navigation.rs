//! Go to definition, find references, rename: ids and everything that points
//! at them (sourceRef, targetRef, attachedToRef, default, errorRef, bpmndi
//! bpmnElement, and the `<incoming>`/`<outgoing>` texts modellers write).
//! The engine's [`navigate`] module finds the places; this only selects.

use qflow_model::diagnostic::Edit;
use qflow_model::navigate::{self, Usage};
use qflow_model::span::Span;

use crate::store::Snapshot;

/// The id declaration the cursor's id resolves to (the first, as the model
/// resolves references to it).
pub fn definition(snap: &Snapshot, offset: usize) -> Option<Span> {
    let defs = snap.definitions()?;
    let at = navigate::id_at(defs, offset)?;
    navigate::declaration(defs, &at.id).map(|d| d.id.span)
}

/// Every use of the id under the cursor; its declarations too when asked.
pub fn references(snap: &Snapshot, offset: usize, include_declaration: bool) -> Vec<Span> {
    let Some(defs) = snap.definitions() else {
        return Vec::new();
    };
    let Some(at) = navigate::id_at(defs, offset) else {
        return Vec::new();
    };
    navigate::occurrences(defs, &at.id)
        .into_iter()
        .filter(|o| include_declaration || o.usage != Usage::Declaration)
        .map(|o| o.span)
        .collect()
}

/// The id the cursor is on and its span, for `prepareRename`.
pub fn prepare_rename(snap: &Snapshot, offset: usize) -> Option<(Span, String)> {
    let defs = snap.definitions()?;
    let at = navigate::id_at(defs, offset)?;
    Some((at.at.span, at.id))
}

/// The edits of a rename; `Err` says why the new name is refused.
pub fn rename(snap: &Snapshot, offset: usize, new_name: &str) -> Result<Option<Vec<Edit>>, String> {
    let Some(defs) = snap.definitions() else {
        return Ok(None);
    };
    navigate::rename(defs, offset, new_name)
}
