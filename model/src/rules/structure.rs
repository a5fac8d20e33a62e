//! The shape of an executable process: QF005 (a start event) and QF041 (only
//! elements the qflow runtime executes).
//!
//! A model that loads must run as drawn. An element qflow would skip or
//! misread (a user task, a message event, a timer cycle) is refused at load,
//! not discovered when an instance reaches it.

use crate::diagnostic::{Code, Diagnostic};
use crate::model::{EventTrigger, Node, NodeKind, Process};
use crate::rules::edit::Ctx;

/// The executable set (docs/dialect.md), for help texts.
pub const SUPPORTED: &str = "startEvent (none), endEvent (none or error), sequenceFlow (optionally conditional), exclusiveGateway, parallelGateway, serviceTask (q:task or q:channel), boundaryEvent (timer or error, interrupting), intermediateCatchEvent (timer), and error definitions";

pub fn check(ctx: &Ctx<'_>, process: &Process, out: &mut Vec<Diagnostic>) {
    start_event(ctx, process, out);
    for node in process.nodes.iter().filter(|n| n.scope.is_none()) {
        unsupported(node, out);
    }
}

/// QF005: an executable process needs a top-level none start event to begin.
fn start_event(ctx: &Ctx<'_>, process: &Process, out: &mut Vec<Diagnostic>) {
    let has_start = process
        .nodes
        .iter()
        .any(|n| n.scope.is_none() && matches!(n.kind, NodeKind::StartEvent { .. }));
    if has_start {
        return;
    }
    let name = process_name(process);
    let bpmn = ctx.bpmn_prefix();
    out.push(
        Diagnostic::new(
            Code::QF005,
            process.name_span,
            format!("executable process {name} has no start event"),
        )
        .label("no start event: an instance could never begin")
        .help(format!(
            "add <{bpmn}startEvent id=\"start\"/> and a sequence flow from it to the first node, or mark the process isExecutable=\"false\" if qflow should not run it"
        )),
    );
}

pub fn process_name(process: &Process) -> String {
    match &process.id {
        Some(id) => format!("`{}`", id.value),
        None => "(without id)".to_string(),
    }
}

fn refuse(node: &Node, what: String, out: &mut Vec<Diagnostic>) {
    out.push(
        Diagnostic::new(
            Code::QF041,
            node.name_span,
            format!("{what}: the qflow runtime does not execute it"),
        )
        .label("not executed by qflow")
        .help(format!(
            "qflow executes {SUPPORTED}. Model this step with those, or mark the process isExecutable=\"false\""
        )),
    );
}

/// QF041 for one top-level node (nodes inside an unsupported sub-process are
/// covered by the sub-process's own diagnostic).
fn unsupported(node: &Node, out: &mut Vec<Diagnostic>) {
    let id = node.id();
    let trigger = match &node.kind {
        NodeKind::StartEvent { trigger } => {
            if !matches!(trigger, EventTrigger::None) {
                event_definition(node, "start event", trigger, out);
            }
            return;
        }
        NodeKind::EndEvent { trigger } => {
            if !matches!(trigger, EventTrigger::None | EventTrigger::Error { .. }) {
                event_definition(node, "end event", trigger, out);
            }
            return;
        }
        NodeKind::ExclusiveGateway { .. }
        | NodeKind::ParallelGateway
        | NodeKind::ServiceTask(_) => return,
        NodeKind::BoundaryEvent {
            interrupting,
            trigger,
            ..
        } => {
            if !interrupting {
                refuse(
                    node,
                    format!("non-interrupting boundary event `{id}` (cancelActivity=\"false\")"),
                    out,
                );
                return;
            }
            trigger
        }
        NodeKind::IntermediateCatchEvent { trigger } => trigger,
        NodeKind::SubProcess { triggered_by_event } => {
            let what = if *triggered_by_event {
                "event sub-process"
            } else {
                "sub-process"
            };
            refuse(node, format!("{what} <{}> `{id}`", node.element), out);
            return;
        }
        NodeKind::Other => {
            refuse(node, format!("<{}> `{id}`", node.element), out);
            return;
        }
    };
    let allowed = matches!(
        (&node.kind, trigger),
        (_, EventTrigger::Timer(_)) | (NodeKind::BoundaryEvent { .. }, EventTrigger::Error { .. })
    );
    if !allowed {
        let what = match node.kind {
            NodeKind::BoundaryEvent { .. } => "boundary event",
            _ => "intermediate catch event",
        };
        event_definition(node, what, trigger, out);
    }
    if let EventTrigger::Timer(timer) = trigger {
        for (form, attr) in [
            ("timeDate", &timer.time_date),
            ("timeCycle", &timer.time_cycle),
        ] {
            if let Some(a) = attr {
                let span = if a.span.is_empty() {
                    a.full_span
                } else {
                    a.span
                };
                out.push(
                    Diagnostic::new(
                        Code::QF041,
                        span,
                        format!("timer `{id}` uses {form}: the qflow runtime executes only timeDuration"),
                    )
                    .label(format!("{form} is not executed"))
                    .help("write the wait as <timeDuration> with an ISO-8601 duration (e.g. PT1H); a date or a cycle needs a scheduler outside the process"),
                );
            }
        }
    }
}

/// QF041 on an event whose definition qflow does not execute, pointing at the
/// definition itself.
fn event_definition(node: &Node, what: &str, trigger: &EventTrigger, out: &mut Vec<Diagnostic>) {
    let id = node.id();
    let (span, kind) = match (trigger, node.event_definitions.as_slice()) {
        (_, [one]) => (one.name_span, one.local.to_string()),
        (_, [_, second, ..]) => (second.name_span, "several event definitions".to_string()),
        (EventTrigger::Other(k), []) => (node.name_span, k.clone()),
        _ => (node.name_span, "this trigger".to_string()),
    };
    out.push(
        Diagnostic::new(
            Code::QF041,
            span,
            format!("{what} `{id}` with {kind}: the qflow runtime does not execute it"),
        )
        .label("not executed by qflow")
        .help(format!(
            "qflow executes {SUPPORTED}. Remove the event definition or model the step with those"
        )),
    );
}
