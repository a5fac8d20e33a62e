//! Scopes: the process and each sub-process, what each holds (starts, ends,
//! dead ends), and the rules judged per scope: QF121 (no start event), QF102
//! (no end event), QF119 (several blank start events), QF125 (a superfluous
//! terminate end event).

use crate::config::Profile;
use crate::diagnostic::{Code, Diagnostic};
use crate::model::{Node, NodeKind};

use super::graph::Graph;
use super::{has_definition, is_event_sub_process, is_sub_process, node_diag, Emit};

/// A container of flow elements: the process (`None`) or a sub-process.
pub(super) struct Scope {
    /// `None` = the process itself.
    node: Option<usize>,
    blank_starts: Vec<usize>,
    starts: usize,
    ends: usize,
    /// An event sub-process with an interrupting start event.
    interrupting_start: bool,
    /// Terminate end events among the scope's dead ends (QF125).
    terminate_ends: Vec<usize>,
    /// Event sub-processes among the dead ends, by scope index (QF125).
    event_sub_ends: Vec<usize>,
    /// A dead end that is neither of those (QF125 does not apply).
    other_end: bool,
}

/// The process's scopes (the process first, then every sub-process in node
/// order), each with what the scope rules count in it.
pub(super) fn tally(g: &Graph<'_>) -> Vec<Scope> {
    let p = g.p;
    let mut scope_of: Vec<Option<usize>> = vec![None; p.nodes.len()];
    let new_scope = |node| Scope {
        node,
        blank_starts: Vec::new(),
        starts: 0,
        ends: 0,
        interrupting_start: false,
        terminate_ends: Vec::new(),
        event_sub_ends: Vec::new(),
        other_end: false,
    };
    let mut scopes = vec![new_scope(None)];
    for (i, n) in p.nodes.iter().enumerate() {
        if is_sub_process(n) {
            scope_of[i] = Some(scopes.len());
            scopes.push(new_scope(Some(i)));
        }
    }
    let scope_index = |n: &Node| n.scope.and_then(|s| scope_of[s]).unwrap_or(0);

    for (i, n) in p.nodes.iter().enumerate() {
        let s = scope_index(n);
        let parent = n.scope.map(|s| &p.nodes[s]);
        let outgoing = g.out_count(i);
        match n.kind {
            NodeKind::StartEvent { .. } => {
                scopes[s].starts += 1;
                if n.event_definitions.is_empty() {
                    scopes[s].blank_starts.push(i);
                }
                if !n.non_interrupting && parent.is_some_and(is_event_sub_process) {
                    scopes[s].interrupting_start = true;
                }
            }
            NodeKind::EndEvent { .. } => scopes[s].ends += 1,
            _ => {}
        }
        if outgoing == 0 {
            if matches!(n.kind, NodeKind::EndEvent { .. })
                && has_definition(n, "terminateEventDefinition")
            {
                scopes[s].terminate_ends.push(i);
            } else if let (true, Some(own)) = (is_event_sub_process(n), scope_of[i]) {
                scopes[s].event_sub_ends.push(own);
            } else {
                scopes[s].other_end = true;
            }
        }
    }
    scopes
}

/// QF121, QF102 and QF119 on every scope.
pub(super) fn check(g: &Graph<'_>, scopes: &[Scope], e: &mut Emit<'_, '_>) {
    let p = g.p;
    let qflow_executable = matches!(e.profile, Profile::Qflow { executable: true });
    for scope in scopes {
        let (span, element, kind) = match scope.node {
            None => (
                p.name_span,
                p.id.as_ref().map(|a| a.value.to_string()),
                "process".to_string(),
            ),
            Some(i) => (
                p.nodes[i].name_span,
                Some(p.nodes[i].id().to_string()),
                format!("sub-process `{}`", p.nodes[i].id()),
            ),
        };
        let process_name = match &p.id {
            Some(id) => format!("process `{}`", id.value),
            None => "process (without id)".to_string(),
        };
        let kind = if scope.node.is_none() {
            process_name
        } else {
            kind
        };
        let ad_hoc = scope
            .node
            .is_some_and(|i| p.nodes[i].element == "adHocSubProcess");
        let with_element = |d: Diagnostic| match &element {
            Some(id) => d.element(id.clone()),
            None => d,
        };
        if !ad_hoc && scope.starts == 0 && !(scope.node.is_none() && qflow_executable) {
            e.push(with_element(
                Diagnostic::new(Code::QF121, span, format!("{kind} has no start event"))
                    .label("missing start event")
                    .help("add a start event and a sequence flow from it to the first node"),
            ));
        }
        if !ad_hoc && scope.ends == 0 {
            e.push(with_element(
                Diagnostic::new(Code::QF102, span, format!("{kind} has no end event"))
                    .label("missing end event")
                    .help("end every path in an end event"),
            ));
        }
        if scope.blank_starts.len() > 1 {
            let mut d = with_element(Diagnostic::new(
                Code::QF119,
                span,
                format!("{kind} has {} blank start events", scope.blank_starts.len()),
            ))
            .label("several blank start events")
            .help(if qflow_executable {
                "keep one blank start event (merge the paths after it with a gateway); as it is, qflow's runtime starts every instance at the first one in document order and never at the others"
            } else {
                "keep one blank start event; give the others the trigger that starts them (message, timer, …)"
            });
            for &b in scope.blank_starts.iter().take(crate::text::LIST_CAP) {
                d = d.related(
                    p.nodes[b].name_span,
                    format!("blank start event `{}`", p.nodes[b].id()),
                );
            }
            e.push(d);
        }
    }
}

/// QF125: a scope whose only terminate end event ends it as every other
/// dead end would (the others being interrupting event sub-processes).
pub(super) fn superfluous_termination(g: &Graph<'_>, scopes: &[Scope], e: &mut Emit<'_, '_>) {
    for scope in scopes {
        let [only] = scope.terminate_ends.as_slice() else {
            continue;
        };
        if scope.other_end
            || scope
                .event_sub_ends
                .iter()
                .any(|&k| !scopes[k].interrupting_start)
        {
            continue;
        }
        let n = &g.p.nodes[*only];
        e.push(
            node_diag(
                Code::QF125,
                n,
                format!("terminate end event `{}` is superfluous", n.id()),
            )
            .label("nothing else is running when this path ends")
            .help("use a plain end event (remove the terminateEventDefinition)"),
        );
    }
}
