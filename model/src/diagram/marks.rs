//! What a face lays on a diagram, as plain data: one instance's state or a
//! deployment's fleet ([`DiagramState`], computed by the engine from an
//! inspection or a store's counts) and the loader's verdicts
//! ([`Finding`]). Here so the drawing ([`super::svg`]) needs nothing above
//! the model layer and the language server can draw too.

use std::collections::{BTreeMap, BTreeSet};

/// How one node stands, as the diagram marks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMark {
    /// One of `idle`, `token`, `parked`, `timer`, `waiting`, `reconcile`,
    /// `joined`, `failed`, `done`: the state class of its shape.
    pub class: &'static str,
    /// What to write beside it: `parked until +35s`, `FAILED q.timeout`, …
    pub note: Option<String>,
    /// Failed attempts burned at this node, when it has any.
    pub attempts: Option<u32>,
    /// An incident is open at this node.
    pub incident: bool,
}

/// The state of one instance, laid on its diagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagramState {
    pub instance: String,
    /// `completed`, `failed`, `waiting`, `running`.
    pub status: String,
    /// Per node id; nodes the inspection does not know are absent.
    pub nodes: BTreeMap<String, NodeMark>,
    /// Ids of the flows the instance has taken.
    pub taken: BTreeSet<String>,
}

/// What the loader says about one element, as an editor's diagram marks
/// it: the most severe verdict's severity (`error`, `warning`, `info`,
/// `hint`) and every verdict's message, most severe first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: &'static str,
    pub messages: Vec<String>,
}
