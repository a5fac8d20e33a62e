//! Per-node rules on events: where an event may stand and what defines it
//! (QF100, QF104, QF122, QF120, QF126), and link events pairing up in their
//! scope (QF108).

use crate::diagnostic::{Code, Diagnostic};
use crate::model::{Node, NodeKind, Process};

use super::{is_event, is_event_sub_process, is_sub_process, node_diag, what, At, Emit};

/// QF100 ad-hoc-sub-process: no start or end event directly inside an
/// ad-hoc sub-process (an intermediate catch event is allowed, with or
/// without an outgoing flow, as in bpmnlint).
pub(super) fn ad_hoc(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let n = at.n;
    let parent = at.parent;
    if parent.is_some_and(|p| p.element == "adHocSubProcess") {
        let bad = match n.kind {
            NodeKind::StartEvent { .. } => Some("a start event"),
            NodeKind::EndEvent { .. } => Some("an end event"),
            _ => None,
        };
        if let Some(bad) = bad {
            e.push(
                node_diag(
                    Code::QF100,
                    n,
                    format!("{} is {bad} inside an ad-hoc sub-process", what(n)),
                )
                .label("not allowed in an ad-hoc sub-process")
                .help("an ad-hoc sub-process has no start or end events: its activities run in any order; remove the event"),
            );
        }
    }
}

/// QF126 conditional-event: in an executable process, an event whose
/// (first) conditional event definition has no condition, or only an empty
/// one: it waits for nothing it can ever evaluate.
pub(super) fn conditional(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let n = at.n;
    let p = at.g.p;
    if !p.is_executable || !is_event(n) {
        return;
    }
    let Some(k) = n
        .event_definitions
        .iter()
        .position(|d| d.local == "conditionalEventDefinition")
    else {
        return;
    };
    // The last `<condition>` written is the one a reader keeps.
    let condition = p
        .event_conditions
        .iter()
        .rev()
        .find(|c| c.node as usize == at.i && c.definition as usize == k);
    if condition.is_some_and(|c| c.body) {
        return;
    }
    let (message, label) = match condition {
        None => ("has no condition", "no <condition> in this definition"),
        Some(_) => ("has an empty condition", "its <condition> is empty"),
    };
    e.push(
        Diagnostic::new(
            Code::QF126,
            n.event_definitions[k].name_span,
            format!("conditional event {} {message}", what(n)),
        )
        .element(n.id())
        .label(label)
        .help("write the condition it waits for: <bpmn:condition xsi:type=\"bpmn:tFormalExpression\">…</bpmn:condition> inside the conditionalEventDefinition"),
    );
}

/// QF104 event-sub-process-typed-start-event: an event sub-process starts on
/// a trigger; QF122 sub-process-blank-start-event: a plain sub-process starts
/// when entered.
pub(super) fn start_definitions(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let n = at.n;
    let parent = at.parent;
    if let (NodeKind::StartEvent { .. }, Some(parent)) = (&n.kind, parent) {
        if is_event_sub_process(parent) {
            if n.event_definitions.is_empty() {
                e.push(
                    node_diag(
                        Code::QF104,
                        n,
                        format!("{} in event sub-process `{}` has no event definition", what(n), parent.id()),
                    )
                    .label("a blank start event never triggers an event sub-process")
                    .help("give the start event the trigger it waits for (a message, timer, error, signal, …) or model a plain sub-process"),
                );
            }
        } else if is_sub_process(parent) && !n.event_definitions.is_empty() {
            e.push(
                Diagnostic::new(
                    Code::QF122,
                    n.event_definitions[0].name_span,
                    format!("{} in sub-process `{}` has an event definition", what(n), parent.id()),
                )
                .element(n.id())
                .label("a sub-process starts when it is entered, not on an event")
                .help("remove the event definition (a sub-process's start event is blank), or make it an event sub-process (triggeredByEvent=\"true\")"),
            );
        }
    }
}

/// QF120 single-event-definition.
pub(super) fn single_definition(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let n = at.n;
    if is_event(n) && n.event_definitions.len() > 1 {
        e.push(
            Diagnostic::new(
                Code::QF120,
                n.event_definitions[1].name_span,
                format!("{} has {} event definitions", what(n), n.event_definitions.len()),
            )
            .element(n.id())
            .label("a second event definition")
            .help("give the event one definition; to wait for one of several triggers, model an event-based gateway"),
        );
    }
}

/// QF108: every link name in a scope has exactly one catch and a throw.
pub(super) fn link_events(p: &Process, e: &mut Emit<'_, '_>) {
    let mut groups: Vec<(Option<usize>, &str, Vec<usize>)> = Vec::new();
    for (node, name) in &p.links {
        let n = &p.nodes[*node as usize];
        let name = name.as_ref().map_or("", |a| a.value.as_str());
        if name.is_empty() {
            e.push(
                node_diag(Code::QF108, n, format!("link event `{}` has no link name", n.id()))
                    .label("missing link name")
                    .help("name the linkEventDefinition (name=\"…\"): a throw jumps to the catch of the same name"),
            );
            continue;
        }
        match groups
            .iter_mut()
            .find(|(s, m, _)| *s == n.scope && *m == name)
        {
            Some((_, _, v)) => v.push(*node as usize),
            None => groups.push((n.scope, name, vec![*node as usize])),
        }
    }
    let is_throw = |n: &Node| {
        matches!(
            &*n.element,
            "intermediateThrowEvent" | "endEvent" | "implicitThrowEvent"
        )
    };
    for (_, name, events) in groups {
        if let [one] = events.as_slice() {
            let n = &p.nodes[*one];
            let missing = if is_throw(n) { "catch" } else { "throw" };
            e.push(
                node_diag(Code::QF108, n, format!("link event `{}`: no link {missing} event named `{name}` in its scope", n.id()))
                    .label(format!("no matching link {missing}"))
                    .help("a link throw and its catch share a name and a scope; add the counterpart or fix the name"),
            );
            continue;
        }
        let catches: Vec<usize> = events
            .iter()
            .copied()
            .filter(|&i| !is_throw(&p.nodes[i]))
            .collect();
        let report: Vec<usize> = match catches.len() {
            0 => events.clone(),
            1 => Vec::new(),
            _ => catches,
        };
        for i in report {
            let n = &p.nodes[i];
            let msg = if is_throw(n) {
                format!(
                    "link event `{}`: no link catch event named `{name}` in its scope",
                    n.id()
                )
            } else {
                format!("link catch event `{}`: another link catch event in its scope is named `{name}`", n.id())
            };
            e.push(
                node_diag(Code::QF108, n, msg)
                    .label("link name without exactly one catch")
                    .help("a link name has exactly one catch event per scope"),
            );
        }
    }
}
