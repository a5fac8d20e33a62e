//! The load-time rules (docs/rules.md), one module per family.
//!
//! Scoping: the document rules (QF001–QF004, QF032) run on every BPMN file;
//! the vocabulary rule (QF006) wherever `q:` names appear; the execution rules
//! only on executable processes in documents that declare the qflow
//! namespace, so another engine's models never drown in qflow errors.
//!
//! | module | codes |
//! |---|---|
//! | `document` | QF003, QF004 |
//! | `reachability` | QF032 |
//! | `vocabulary` | QF006 |
//! | `structure` | QF005, QF041 |
//! | `tasks` | QF007, QF008, QF010–QF013, QF015 |
//! | `channels` | QF014, QF020–QF022 |
//! | `advice` | QF030, QF031, QF033 |
//! | `stateful` | QF040 |
//! | `conditions` | QF042 |
//! | `namespace` | QF043, QF044 (every document: they find the models the execution rules would skip) |
//!
//! QF001/QF002 come from the parser and the reader.

use crate::diagnostic::{Diagnostic, Edit};
use crate::model::{Definitions, Process};
use crate::span::Span;

mod advice;
mod channels;
mod conditions;
mod document;
pub mod edit;
pub mod namespace;
mod reachability;
mod stateful;
pub mod structure;
mod tasks;
mod vocabulary;

/// Every verdict on a model that was read successfully.
pub fn check(defs: &Definitions, source: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    document::check(defs, source, &mut out);
    for p in &defs.processes {
        reachability::check(p, &mut out);
    }
    namespace::check(defs, source, &mut out);
    if !defs.declares_qflow {
        return out;
    }
    let ctx = edit::Ctx::new(defs, source);
    vocabulary::check(&ctx, &mut out);
    for p in defs.executable_processes() {
        structure::check(&ctx, p, &mut out);
        tasks::check(&ctx, p, &mut out);
        channels::check(&ctx, p, &mut out);
        advice::check(&ctx, p, &mut out);
        stateful::check(p, &mut out);
        conditions::check(p, &mut out);
    }
    tasks::channel_configs(&ctx, &mut out);
    stray_extensions(defs, &mut out);
    out
}

/// `<q:retry>` and `<q:timeout>` that sit on no flow node (a sequence flow's or
/// the process's extensionElements, say): QF010 / QF006, unless they are in a
/// process qflow does not execute.
fn stray_extensions(defs: &Definitions, out: &mut Vec<Diagnostic>) {
    let placed: std::collections::HashSet<Span> = defs
        .processes
        .iter()
        .flat_map(|p| &p.nodes)
        .flat_map(|n| {
            n.retries
                .iter()
                .map(|r| r.span)
                .chain(n.timeouts.iter().map(|t| t.span))
        })
        .collect();
    let on_nodes = |span: Span| placed.contains(&span);
    let in_process = |span: Span| -> Option<&Process> {
        defs.processes
            .iter()
            .find(|p| p.span.start <= span.start && span.end <= p.span.end)
    };
    for item in defs.qflow_items.iter().filter(|i| i.is_element) {
        if !(item.local == "retry" || item.local == "timeout") || on_nodes(item.span) {
            continue;
        }
        if in_process(item.span).is_some_and(|p| !p.is_executable) {
            continue;
        }
        let place = format!("<{}>", item.owner);
        let d = if item.local == "retry" {
            let spec = crate::model::RetrySpec {
                span: item.span,
                name_span: item.name_span,
                qname: item.qname.to_string(),
                ..Default::default()
            };
            tasks::misplaced_retry(&spec, &place)
        } else {
            Diagnostic::new(
                crate::Code::QF006,
                item.name_span,
                format!("<{}> in {place}: it belongs on a channel call", item.qname),
            )
            .label("qflow ignores it here")
            .help("put <q:timeout> inside the extensionElements of a serviceTask with q:channel")
        };
        out.push(d);
    }
}

/// Apply a fix's edits to a text: what an editor does with a quick fix.
pub fn apply_edits(source: &str, edits: &[Edit]) -> String {
    edit::apply(source, edits)
}
