//! Per-node rules on gateways and the flows a split chooses between: QF103,
//! QF101, QF110, QF117, QF113, QF123 (with QF123's fix).

use crate::diagnostic::{Code, Edit};
use crate::model::Node;
use crate::rules::edit::{insert, Ctx};

use super::graph::Graph;
use super::{flow_diag, is_gateway, node_diag, what, At, Emit};

/// QF103 event-based-gateway: at least two outgoing flows, none conditional.
pub(super) fn event_based(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let ctx = at.ctx;
    let g = at.g;
    let i = at.i;
    let n = at.n;
    let outgoing = at.outgoing;
    if n.element == "eventBasedGateway" {
        if outgoing < 2 {
            e.push(
                node_diag(Code::QF103, n, format!("{} has {outgoing} outgoing flow(s)", what(n)))
                    .label("an event-based gateway chooses between at least two events")
                    .help("add a flow to each event the gateway waits for (at least two), or remove the gateway"),
            );
        }
        for f in g.outgoing(i).filter(|f| f.condition.is_some()) {
            e.push(
                flow_diag(
                    ctx,
                    Code::QF103,
                    f,
                    format!(
                        "sequence flow `{}` out of event-based gateway `{}` has a condition",
                        f.id.value,
                        n.id()
                    ),
                )
                .label("the event that occurs first decides, not a condition")
                .help("remove the conditionExpression"),
            );
        }
    }
}

/// QF101 conditional-flows: out of a conditional split (a node with a
/// default flow or a conditional outgoing flow, as bpmnlint judges it), every
/// flow has a condition or is the default (fix: make it the default of an
/// exclusive gateway that has none). In an executable process of a qflow
/// document, an exclusive or inclusive gateway forking into flows none of
/// which has a condition is one too: qflow's runtime would always take the
/// first of them (bpmnlint does not report it).
pub(super) fn conditional_flows(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let ctx = at.ctx;
    let g = at.g;
    let i = at.i;
    let n = at.n;
    let outgoing = at.outgoing;
    let qflow_executable = at.qflow_executable;
    let conditional_gateway = qflow_executable
        && matches!(&*n.element, "exclusiveGateway" | "inclusiveGateway")
        && outgoing > 1;
    if g.default_of(i).is_some()
        || conditional_gateway
        || g.outgoing(i).any(|f| f.condition.is_some())
    {
        for f in g.outgoing(i) {
            if f.condition.is_some() || g.is_default(i, f) {
                continue;
            }
            let mut d = flow_diag(
                ctx,
                Code::QF101,
                f,
                format!(
                    "sequence flow `{}` out of {} has no condition and is not the default",
                    f.id.value,
                    what(n)
                ),
            )
            .label("missing condition")
            .related(n.name_span, "the conditional split it leaves")
            .help(if qflow_executable {
                "give the flow a conditionExpression, or make it the split's default flow; as it is, qflow's runtime takes the first flow in document order whose condition holds, and this flow always holds"
            } else {
                "give the flow a conditionExpression, or make it the split's default flow"
            });
            if n.element == "exclusiveGateway" && g.default_of(i).is_none() {
                d = d.fix(
                    format!("Make `{}` the default flow of `{}`", f.id.value, n.id()),
                    vec![add_attribute(ctx, n, "default", &f.id.value)],
                );
            }
            e.push(d);
        }
    }
}

/// QF110 no-complex-gateway, QF117 no-inclusive-gateway.
pub(super) fn discouraged(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let n = at.n;
    for (code, element, why) in [
        (Code::QF110, "complexGateway", "a complex gateway's behaviour is hard to read and rarely supported"),
        (Code::QF117, "inclusiveGateway", "an inclusive gateway's join waits for tokens that may never come; its behaviour is hard to read"),
    ] {
        if n.element == element {
            e.push(
                node_diag(code, n, format!("{} is discouraged", what(n)))
                    .label(why)
                    .help("model the choice with exclusive and parallel gateways"),
            );
        }
    }
}

/// QF113 no-gateway-join-fork.
pub(super) fn join_fork(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let n = at.n;
    let incoming = at.incoming;
    let outgoing = at.outgoing;
    let qflow_executable = at.qflow_executable;
    if is_gateway(n) && incoming > 1 && outgoing > 1 {
        e.push(
            node_diag(Code::QF113, n, format!("{} both joins {incoming} flows and forks into {outgoing}", what(n)))
                .label("joins and forks")
                .help(if qflow_executable {
                    "split it into a joining gateway followed by a forking one; as it is, qflow's runtime treats it as one step that first joins, then forks, which a reader easily takes for two decisions"
                } else {
                    "split it into a joining gateway followed by a forking one"
                }),
        );
    }
}

/// QF123 superfluous-gateway: one flow in, one out (fix: remove it).
pub(super) fn superfluous(at: &At<'_>, e: &mut Emit<'_, '_>) {
    let ctx = at.ctx;
    let g = at.g;
    let i = at.i;
    let n = at.n;
    let incoming = at.incoming;
    let outgoing = at.outgoing;
    if is_gateway(n) && incoming == 1 && outgoing == 1 {
        let mut d = node_diag(
            Code::QF123,
            n,
            format!(
                "{} has one incoming and one outgoing flow: it does nothing",
                what(n)
            ),
        )
        .label("superfluous gateway")
        .help("remove the gateway and connect its incoming flow to its target");
        if let Some(fix) = remove_gateway(ctx, g, i) {
            d = d.fix(
                format!("Remove gateway `{}` and reconnect its flows", n.id()),
                fix,
            );
        }
        e.push(d);
    }
}

/// An edit adding `name="value"` to a node's start tag.
fn add_attribute(ctx: &Ctx<'_>, n: &Node, name: &str, value: &str) -> Edit {
    let tag = n.tag.start_tag;
    let text = ctx.text(tag);
    let close = if text.ends_with("/>") { 2 } else { 1 };
    let mut at = tag.end() - close;
    // Before any whitespace that precedes `>`.
    while at > tag.start() && ctx.source.as_bytes()[at - 1].is_ascii_whitespace() {
        at -= 1;
    }
    insert(at, format!(" {name}=\"{value}\""))
}

/// QF123's fix: the gateway and its outgoing flow go; its incoming flow now
/// targets what the outgoing flow targeted. Only offered when the outgoing
/// flow has no condition (removing it would drop the condition).
fn remove_gateway(ctx: &Ctx<'_>, g: &Graph<'_>, i: usize) -> Option<Vec<Edit>> {
    let p = g.p;
    let gateway = &p.nodes[i];
    let out = g.outgoing(i).next()?;
    if out.condition.is_some() {
        return None;
    }
    let inc = p
        .flows
        .iter()
        .find(|f| f.target.as_ref().is_some_and(|t| t.value == gateway.id()))?;
    let target = out.target.as_ref()?;
    if inc.source.as_ref().is_some_and(|s| s.value == target.value) {
        return None;
    }
    let mut edits = vec![
        ctx.remove(gateway.span),
        ctx.remove(out.span),
        Edit {
            span: inc.target.as_ref()?.span,
            new_text: target.value.to_string(),
        },
    ];
    edits.extend(ctx.remove_drawing(gateway.id()));
    edits.extend(ctx.remove_drawing(&out.id.value));
    if let Some(t) = g.node_index(&target.value) {
        for r in &p.nodes[t].incoming_refs {
            if r.value == out.id.value {
                edits.push(Edit {
                    span: r.span,
                    new_text: inc.id.value.to_string(),
                });
            }
        }
    }
    Some(edits)
}
