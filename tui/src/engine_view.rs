//! The view, read from the store: the engine's [`Inspection`] of the
//! instance, with the console's notes beside it (each history line in a few
//! words and its tone, which schedule plan the chart shows). This module
//! computes nothing about the instance; it only says how the console shows
//! what the inspection says.

use std::sync::Arc;

use qflow_engine::diagram::Diagram;
use qflow_engine::inspect::{HistoryItem, Inspection};
use qflow_engine::instance::history::HistoryEvent;
use qflow_engine::runtime::graph::Graph;
use qflow_engine::store::Store;

use crate::engine_describe::describe;
use crate::view::{schedule_node, HistoryNote, HistoryTone, View};

/// Everything the view needs besides the store.
pub struct Source<'a> {
    pub store: &'a Store,
    pub graph: &'a Graph,
    pub instance: &'a str,
    /// Virtual now on the run's clock (absolute); `None`: the last decision.
    pub now_abs_ms: Option<i64>,
    pub label: &'a str,
    pub read_only: bool,
    /// The process as a diagram, when the backend placed one.
    pub diagram: Option<&'a Arc<Diagram>>,
}

/// Build the view of one instance from the store.
pub fn build(src: &Source) -> Result<View, String> {
    let i = Inspection::read(src.store, src.graph, src.instance).map_err(|e| match e {
        qflow_engine::store::StoreError::NoInstance(id) => {
            format!("no instance {id} in the database")
        }
        e => e.to_string(),
    })?;
    let now_abs = src.now_abs_ms.unwrap_or(i.updated_ms).max(i.updated_ms);
    Ok(View {
        source: src.label.to_string(),
        now_ms: now_abs - i.started_ms,
        history: i.history.iter().map(note).collect(),
        schedule_node: schedule_node(&i),
        read_only: src.read_only,
        diagram: src
            .diagram
            .map(|d| (Arc::clone(d), qflow_engine::diagram::state_of(d, &i))),
        inspection: i,
    })
}

/// A history line in words, and its tone from its typed event.
fn note(h: &HistoryItem) -> HistoryNote {
    let tone = match h.line.as_ref().map(|l| &l.event) {
        Some(HistoryEvent::Attempt(_)) => HistoryTone::Attempt,
        Some(HistoryEvent::Failed { .. }) => HistoryTone::Failed,
        Some(HistoryEvent::End { .. }) => HistoryTone::Ended,
        Some(HistoryEvent::Ignored { .. }) => HistoryTone::Ignored,
        _ => HistoryTone::Other,
    };
    HistoryNote {
        detail: h.line.as_ref().map(describe).unwrap_or_default(),
        tone,
    }
}
