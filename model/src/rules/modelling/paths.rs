//! Per-node rules on how paths pass through a node: QF105 (fake join),
//! QF107 (a flow node's label), QF111 (disconnected), QF114 (implicit split),
//! QF115 and QF116 (implicit end and start).

use crate::diagnostic::Code;
use crate::model::{Definitions, NodeKind};

use super::graph::concurrent_meets;
use super::{
    in_ad_hoc, is_activity, is_event, is_event_sub_process, is_gateway, is_sub_process, is_task,
    node_diag, only_definition, unnamed, what, At, Emit,
};

/// QF105 fake-join: several incoming flows into an activity or event (under
/// qflow's defaults, a warning where alternatives merge rather than two
/// branches of one parallel split).
pub(super) fn fake_join(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let g = at.g;
    let i = at.i;
    let n = at.n;
    let incoming = at.incoming;
    let qflow_executable = at.qflow_executable;
    if (is_activity(n) || is_event(n)) && incoming > 1 {
        let concurrent = qflow_executable && concurrent_meets(g).contains(&i);
        let d = node_diag(Code::QF105, n, format!("{} has {incoming} incoming flows: they do not join", what(n)))
            .label(if concurrent {
                "two branches of one parallel split meet here without a join"
            } else {
                "incoming flows do not join here"
            })
            .help(if concurrent {
                "put a parallel gateway before it to join the branches; as it is, qflow's runtime runs it once for every branch that arrives"
            } else {
                "put a parallel gateway before it to join concurrent flows, or an exclusive gateway to merge alternatives"
            });
        // Alternatives merging into a node (a loop back, say) run it once
        // each, as drawn: under qflow's defaults that stays a warning.
        if qflow_executable && !concurrent && e.settings.is_default(Code::QF105) {
            e.push_at(d, crate::diagnostic::Severity::Warning);
        } else {
            e.push(d);
        }
    }
}

/// QF107 label-required, on flow nodes (flows, participants and lanes have
/// their own).
pub(super) fn label(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let n = at.n;
    let outgoing = at.outgoing;
    let unlabelled_kind = matches!(&*n.element, "parallelGateway" | "eventBasedGateway")
        || (is_gateway(n) && outgoing <= 1)
        || is_sub_process(n);
    let labelled = !unlabelled_kind;
    if labelled && unnamed(n.name.as_ref()) {
        e.push(
            node_diag(Code::QF107, n, format!("{} has no label", what(n)))
                .label("missing name")
                .help("give it a name=\"…\" that says what happens here (a forking gateway: the question it asks)"),
        );
    }
}

/// QF111 no-disconnected.
pub(super) fn disconnected(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let n = at.n;
    let incoming = at.incoming;
    let outgoing = at.outgoing;
    let p = at.g.p;
    let compensation_linked = n.for_compensation
        || (matches!(n.kind, NodeKind::BoundaryEvent { .. })
            && only_definition(n, "compensateEventDefinition")
            && n.event_definitions.len() == 1);
    if (is_task(n) || is_gateway(n) || is_sub_process(n) || is_event(n))
        && !is_event_sub_process(n)
        && !compensation_linked
        && !in_ad_hoc(p, n)
        && incoming == 0
        && outgoing == 0
    {
        e.push(
            node_diag(Code::QF111, n, format!("{} is not connected", what(n)))
                .label("no sequence flow in or out")
                .help("connect it with sequence flows, or remove it and its drawing"),
        );
    }
}

/// QF114 no-implicit-split: more than one unconditional, non-default flow out
/// of an activity or event.
pub(super) fn implicit_split(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let g = at.g;
    let i = at.i;
    let n = at.n;
    let qflow_executable = at.qflow_executable;
    if is_activity(n) || is_event(n) {
        let plain = g
            .outgoing(i)
            .filter(|f| f.condition.is_none() && !g.is_default(i, f))
            .count();
        if plain > 1 {
            e.push(
                node_diag(Code::QF114, n, format!("{} splits implicitly into {plain} unconditional flows", what(n)))
                    .label("implicit split")
                    .help(if qflow_executable {
                        "model the split with a gateway after it (parallel to run every branch, exclusive to choose one); as it is, qflow's runtime takes every unconditional flow at once"
                    } else {
                        "model the split with a gateway after it: parallel to run every branch, exclusive to choose one"
                    }),
            );
        }
    }
}

/// QF115 no-implicit-end, QF116 no-implicit-start.
pub(super) fn implicit_ends(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let ctx = at.ctx;
    let n = at.n;
    let incoming = at.incoming;
    let outgoing = at.outgoing;
    let p = at.g.p;
    if is_event(n) || is_activity(n) || is_gateway(n) {
        let link_throw =
            n.element == "intermediateThrowEvent" && only_definition(n, "linkEventDefinition");
        let compensation_boundary = matches!(n.kind, NodeKind::BoundaryEvent { .. })
            && only_definition(n, "compensateEventDefinition")
            && associated(ctx.defs, n.id());
        let implicit_end = outgoing == 0
            && !is_event_sub_process(n)
            && !link_throw
            && !in_ad_hoc(p, n)
            && !matches!(n.kind, NodeKind::EndEvent { .. })
            && !compensation_boundary
            && !(is_activity(n) && n.for_compensation);
        if implicit_end {
            e.push(
                node_diag(
                    Code::QF115,
                    n,
                    format!("{} ends a path without an end event", what(n)),
                )
                .label("implicit end")
                .help("add a sequence flow from it to an end event"),
            );
        }
        let link_catch =
            n.element == "intermediateCatchEvent" && only_definition(n, "linkEventDefinition");
        let exempt_start = (is_activity(n) && n.for_compensation)
            || in_ad_hoc(p, n)
            || is_event_sub_process(n)
            || link_catch
            || matches!(
                n.kind,
                NodeKind::StartEvent { .. } | NodeKind::BoundaryEvent { .. }
            );
        let implicit_start = incoming == 0 && !exempt_start;
        if implicit_start {
            e.push(
                node_diag(
                    Code::QF116,
                    n,
                    format!("{} starts a path without a start event", what(n)),
                )
                .label("implicit start")
                .help("add a sequence flow into it from a start event or an earlier node"),
            );
        }
    }
}

/// Whether an association (or any non-flow reference) starts at `id`.
fn associated(defs: &Definitions, id: &str) -> bool {
    defs.references
        .iter()
        .any(|r| r.kind == crate::model::RefKind::SourceRef && r.target.value == id)
}
