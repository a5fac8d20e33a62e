//! Document symbols: the outline of a model — processes, and inside each its
//! tasks, events, gateways and flows (sub-process contents nested under the
//! sub-process), plus the definitions-level errors and channel configs.

use qflow_model::model::{Definitions, Node, NodeKind, Process};
use qflow_model::span::Span;

use crate::store::Snapshot;

/// What a symbol is, as the outline groups it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolKind {
    Process,
    Task,
    SubProcess,
    Event,
    Gateway,
    Flow,
    Error,
    ChannelConfig,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The element's name if it has one, else its id.
    pub name: String,
    /// The element kind and id (`serviceTask · Task_1`), and the task kind.
    pub detail: String,
    pub kind: SymbolKind,
    /// The whole element.
    pub span: Span,
    /// What the editor selects: the id's value.
    pub selection: Span,
    pub children: Vec<Symbol>,
}

pub fn document_symbols(snap: &Snapshot) -> Vec<Symbol> {
    let Some(defs) = snap.definitions() else {
        return Vec::new();
    };
    let mut out: Vec<Symbol> = defs.processes.iter().map(process).collect();
    out.extend(definitions_level(defs));
    out
}

fn label(name: Option<&str>, id: &str) -> String {
    match name.map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None if id.is_empty() => "(no id)".to_string(),
        None => id.to_string(),
    }
}

fn process(p: &Process) -> Symbol {
    let id = p.id.as_ref().map(|a| a.value.as_str()).unwrap_or("");
    let mut detail = format!("process · {id}");
    if p.is_executable {
        detail.push_str(" · executable");
    }
    Symbol {
        name: label(p.name.as_ref().map(|a| a.value.as_str()), id),
        detail,
        kind: SymbolKind::Process,
        span: p.span,
        selection: p.id.as_ref().map(|a| a.span).unwrap_or(p.name_span),
        children: scope_children(p, None),
    }
}

/// The nodes and flows directly inside one scope (the process, or a sub-process).
fn scope_children(p: &Process, scope: Option<usize>) -> Vec<Symbol> {
    let mut out: Vec<Symbol> = Vec::new();
    for (i, n) in p.nodes.iter().enumerate() {
        if n.scope != scope {
            continue;
        }
        let mut s = node(n);
        if matches!(n.kind, NodeKind::SubProcess { .. }) {
            s.children = scope_children(p, Some(i));
        }
        out.push(s);
    }
    for f in p.flows.iter().filter(|f| f.scope == scope) {
        let ends = match (&f.source, &f.target) {
            (Some(s), Some(t)) => format!(" · {} → {}", s.value, t.value),
            _ => String::new(),
        };
        out.push(Symbol {
            name: label(f.name.as_ref().map(|a| a.value.as_str()), &f.id.value),
            detail: format!("sequenceFlow · {}{ends}", f.id.value),
            kind: SymbolKind::Flow,
            span: f.span,
            selection: f.id.span,
            children: Vec::new(),
        });
    }
    out.sort_by_key(|s| s.span.start());
    out
}

fn node(n: &Node) -> Symbol {
    let kind = match &n.kind {
        NodeKind::StartEvent { .. }
        | NodeKind::EndEvent { .. }
        | NodeKind::BoundaryEvent { .. }
        | NodeKind::IntermediateCatchEvent { .. } => SymbolKind::Event,
        NodeKind::ExclusiveGateway { .. } | NodeKind::ParallelGateway => SymbolKind::Gateway,
        NodeKind::ServiceTask(_) => SymbolKind::Task,
        NodeKind::SubProcess { .. } => SymbolKind::SubProcess,
        NodeKind::Other if n.element.ends_with("Event") => SymbolKind::Event,
        NodeKind::Other if n.element.ends_with("Gateway") => SymbolKind::Gateway,
        NodeKind::Other if n.element.ends_with("Task") || n.element == "task" => SymbolKind::Task,
        NodeKind::Other => SymbolKind::Other,
    };
    let mut detail = format!("{} · {}", n.element, n.id.value);
    if let Some(t) = n.registered_task() {
        detail.push_str(&format!(" · task {}", t.value));
    } else if let Some(c) = n.channel_call() {
        detail.push_str(&format!(" · channel {}", c.value));
    }
    Symbol {
        name: label(n.name.as_ref().map(|a| a.value.as_str()), &n.id.value),
        detail,
        kind,
        span: n.span,
        selection: if n.id.value.is_empty() {
            n.name_span
        } else {
            n.id.span
        },
        children: Vec::new(),
    }
}

fn definitions_level(defs: &Definitions) -> Vec<Symbol> {
    let mut out = Vec::new();
    for e in &defs.errors {
        let code = e
            .error_code
            .as_ref()
            .map(|c| format!(" · errorCode {}", c.value))
            .unwrap_or_default();
        out.push(Symbol {
            name: label(e.name.as_ref().map(|a| a.value.as_str()), &e.id.value),
            detail: format!("error · {}{code}", e.id.value),
            kind: SymbolKind::Error,
            span: e.span,
            selection: e.id.span,
            children: Vec::new(),
        });
    }
    for c in &defs.channel_configs {
        let channel = c.channel.as_ref().map(|a| a.value.as_str()).unwrap_or("?");
        out.push(Symbol {
            name: format!("channel {channel}"),
            detail: "q:channelConfig".to_string(),
            kind: SymbolKind::ChannelConfig,
            span: c.span,
            selection: c.channel.as_ref().map(|a| a.span).unwrap_or(c.name_span),
            children: Vec::new(),
        });
    }
    out.sort_by_key(|s| s.span.start());
    out
}
