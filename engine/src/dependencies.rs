//! Containment's names: which dependencies a database knows, so that a
//! pause of a name nothing uses is refused with the closest known name.
//! Computed here, above the store, from the deployed models' sources: the
//! store never loads a model.

use std::collections::BTreeSet;

use crate::store::contain::PauseKind;
use crate::store::{Store, StoreError};

/// The dependencies this database knows, sorted: every registered
/// task's name (`q:task`) and every channel (`q:channel`) of its deployed
/// models, retired ones included. Every retry park's dependency comes
/// from one of them, so a pause of any other name would hold nothing,
/// now or later: how an operator's typo would pass for containment. Built
/// on the reads every backend offers ([`Store::deployments`],
/// [`Store::deployment_source`]).
pub fn dependencies(store: &Store) -> Result<BTreeSet<String>, StoreError> {
    let mut known = BTreeSet::new();
    for d in store.deployments()? {
        let Some(source) = store.deployment_source(d.id)? else {
            continue;
        };
        // A model loaded when it was deployed; one that no longer does
        // (another qflow's rules) names no dependency.
        let Ok(defs) = crate::loader::load(&source) else {
            continue;
        };
        for node in defs.processes.iter().flat_map(|p| &p.nodes) {
            if let Some(t) = node.task_attrs() {
                known.extend(t.task.iter().map(|a| a.value.to_string()));
                known.extend(t.channel.iter().map(|a| a.value.to_string()));
            }
        }
    }
    Ok(known)
}

/// Refuse a dependency name this database does not know
/// ([`dependencies`]; for an unpause, a name paused already is
/// known too, so a pause made with force can be lifted), with the
/// closest known name as a suggestion. Reads only: call it before
/// [`Store::pause`] or [`Store::unpause`] unless the operator insists
/// (a dependency about to be deployed).
pub fn require_known_dependency(
    store: &Store,
    name: &str,
    unpausing: bool,
) -> Result<(), StoreError> {
    let mut known = dependencies(store)?;
    if unpausing {
        known.extend(
            store
                .pauses()?
                .into_iter()
                .filter(|p| p.kind == PauseKind::Dependency)
                .map(|p| p.value),
        );
    }
    if known.contains(name) {
        return Ok(());
    }
    let suggestion =
        crate::suggest::closest(name, known.iter().map(String::as_str)).map(str::to_string);
    Err(StoreError::UnknownDependency {
        name: name.to_string(),
        known: known.into_iter().collect(),
        suggestion,
    })
}
