//! Rules on the document's global definitions, participants and lanes:
//! QF106 (message, signal, error, escalation definitions) and QF107 on
//! participants and lanes.

use crate::diagnostic::{Code, Diagnostic};
use crate::model::Definitions;
use crate::rules::edit::Ctx;

use super::Emit;

/// QF106: message, signal, error and escalation definitions are named,
/// used, and their names unique per kind.
pub(super) fn global(ctx: &Ctx<'_>, e: &mut Emit<'_, '_>) {
    let defs = ctx.defs;
    if !e.on(Code::QF106) || defs.globals.is_empty() {
        return;
    }
    // As bpmnlint finds uses: an event definition of an event in a process
    // (at any depth), a send or receive task, a message flow of a
    // collaboration. A reference written elsewhere (an event definition
    // declared at the top of the document, say) is no use.
    let places: Vec<crate::span::Span> = defs
        .processes
        .iter()
        .map(|p| p.span)
        .chain(
            defs.ids
                .iter()
                .filter(|d| d.element.local == "collaboration")
                .map(|d| d.element.span),
        )
        .collect();
    let in_use_place = |at: usize| places.iter().any(|s| s.start() <= at && at < s.end());
    for g in &defs.globals {
        let what = format!("<{}> `{}`", g.local, g.id());
        let d = |msg: String, label: &str, help: &str| {
            Diagnostic::new(Code::QF106, g.name_span, msg)
                .element(g.id())
                .label(label)
                .help(help)
        };
        // As bpmnlint judges it: a blank name is missing; no name attribute
        // at all is not (but two unnamed definitions of a kind share a name).
        if g.name.as_ref().is_some_and(|n| super::blank(&n.value)) {
            e.push(d(
                format!("{what} has no name"),
                "missing name",
                "give it a name=\"…\" (what a thrower and a catcher agree on)",
            ));
        }
        let attr = format!("{}Ref", g.local);
        let used = defs.references.iter().any(|r| {
            r.target.value == g.id()
                && reference_attribute(ctx, r) == attr
                && in_use_place(r.target.full_span.start())
        });
        if !used {
            e.push(d(format!("{what} is never used"), "unused", "reference it from an event definition (or a message flow, send or receive task), or remove it"));
        }
        let name_of = |l: &crate::model::Labelled| l.name.as_ref().map(|a| a.value.clone());
        let twins = defs
            .globals
            .iter()
            .filter(|o| o.local == g.local && name_of(o) == name_of(g))
            .count();
        if twins > 1 {
            let msg = match &g.name {
                Some(n) => format!("{what}: another <{}> has the name `{}`", g.local, n.value),
                None => format!("{what}: another <{}> has no name either", g.local),
            };
            e.push(d(
                msg,
                "name not unique",
                "give each definition its own name, or use one definition",
            ));
        }
    }
}

/// The attribute name of a reference as written (`messageRef`).
fn reference_attribute<'a>(ctx: &Ctx<'a>, r: &crate::model::Reference) -> &'a str {
    let text = ctx.text(r.target.full_span);
    text.split('=').next().unwrap_or("").trim()
}

/// QF107 on participants and lanes.
pub(super) fn participants(defs: &Definitions, e: &mut Emit<'_, '_>) {
    if !e.on(Code::QF107) {
        return;
    }
    let lanes = defs.processes.iter().flat_map(|p| &p.lanes);
    for l in defs.participants.iter().chain(lanes) {
        if super::unnamed(l.name.as_ref()) {
            let d = Diagnostic::new(
                Code::QF107,
                l.name_span,
                format!("<{}> `{}` has no label", l.local, l.id()),
            )
            .label("missing name")
            .help("give it a name=\"…\" (who does the work)");
            e.push(match &l.id {
                Some(id) => d.element(id.value.clone()),
                None => d,
            });
        }
    }
}
