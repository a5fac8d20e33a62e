//! What a face lays on a diagram, as plain data: one instance's state or a
//! deployment's fleet ([`DiagramState`], computed by the engine from an
//! inspection or a store's counts) and the loader's verdicts
//! ([`Finding`]). Here so the drawing ([`super::svg`]) needs nothing above
//! the model layer and the language server can draw too.

use std::collections::{BTreeMap, BTreeSet};

/// The state class of a node's shape: the SVG's CSS class, the console's
/// colour and its one-word note, named once so that no face spells the
/// classes out again (and a new class is a compile error in each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MarkClass {
    /// Not reached.
    Idle,
    /// A token is here, ready to run.
    Token,
    /// Parked for a retry.
    Parked,
    /// A timer is armed here.
    Timer,
    /// Awaits a counterpart's response.
    Waiting,
    /// An unknown outcome awaits reconciliation.
    Reconcile,
    /// A join waiting for its other branches.
    Joined,
    /// The instance FAILED here.
    Failed,
    /// Left: completed.
    Done,
    /// The snapshot is damaged: not known.
    Unknown,
}

impl MarkClass {
    /// The class as the SVG's CSS and the JSON name it.
    pub fn as_str(self) -> &'static str {
        match self {
            MarkClass::Idle => "idle",
            MarkClass::Token => "token",
            MarkClass::Parked => "parked",
            MarkClass::Timer => "timer",
            MarkClass::Waiting => "waiting",
            MarkClass::Reconcile => "reconcile",
            MarkClass::Joined => "joined",
            MarkClass::Failed => "failed",
            MarkClass::Done => "done",
            MarkClass::Unknown => "unknown",
        }
    }

    /// The state in a word, for a shape too narrow for its note.
    pub fn word(self) -> &'static str {
        match self {
            MarkClass::Idle | MarkClass::Unknown => "",
            MarkClass::Token => "ready",
            MarkClass::Parked => "parked",
            MarkClass::Timer => "timer",
            MarkClass::Waiting => "awaits reply",
            MarkClass::Reconcile => "reconcile",
            MarkClass::Joined => "joined",
            MarkClass::Failed => "FAILED",
            MarkClass::Done => "done",
        }
    }

    /// Whether the instance has reached the node at all.
    pub fn reached(self) -> bool {
        self != MarkClass::Idle
    }

    /// Whether the instance has left the node (or ended on it).
    pub fn left(self) -> bool {
        matches!(self, MarkClass::Done | MarkClass::Failed)
    }
}

/// How one node stands, as the diagram marks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMark {
    /// The state class of its shape.
    pub class: MarkClass,
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
