//! Rules on sequence flows: QF107 (a conditional flow needs a label), QF112
//! (duplicate flows, with the fix removing one), QF124 (a label on an
//! unconditional flow).

use foldhash::HashMap;

use crate::diagnostic::{Code, Edit};
use crate::model::Flow;
use crate::rules::edit::Ctx;

use super::graph::Graph;
use super::{flow_diag, node_diag, unnamed, what, Emit};

/// QF107, QF112 and QF124 on every flow of the process.
pub(super) fn check(ctx: &Ctx<'_>, g: &Graph<'_>, e: &mut Emit<'_, '_>) {
    let p = g.p;
    let duplicates = if e.on(Code::QF112) {
        duplicate_flows(ctx, g)
    } else {
        Vec::new()
    };
    let mut dup_source = Vec::new();
    let mut dup_target = Vec::new();
    for (fi, f) in p.flows.iter().enumerate() {
        let source = f
            .source
            .as_ref()
            .map_or(f.id.value.as_str(), |s| s.value.as_str());
        let target = f
            .target
            .as_ref()
            .map_or(f.id.value.as_str(), |t| t.value.as_str());
        let named = !unnamed(f.name.as_ref());
        if f.condition.is_some() && !named {
            e.push(
                flow_diag(
                    ctx,
                    Code::QF107,
                    f,
                    format!("conditional sequence flow `{}` has no label", f.id.value),
                )
                .label("missing name")
                .help("name the flow after its condition (name=\"approved\")"),
            );
        }
        if named && f.condition.is_none() {
            let s = g.node_index(source);
            let default = s.is_some_and(|s| g.is_default(s, f));
            let gateway_fork = s.is_some_and(|s| {
                matches!(
                    &*p.nodes[s].element,
                    "exclusiveGateway" | "inclusiveGateway"
                ) && g.out_count(s) > 1
            });
            if !default && !gateway_fork {
                e.push(
                    flow_diag(ctx, Code::QF124, f, format!("unconditional sequence flow `{}` has a label", f.id.value))
                        .label("superfluous label")
                        .help("remove the name, or, to mark a milestone, model an intermediate event on the flow"),
                );
            }
        }
        if duplicates.get(fi).copied().unwrap_or(false) {
            let mut d = flow_diag(
                ctx,
                Code::QF112,
                f,
                format!(
                    "sequence flow `{}` duplicates another flow from `{source}` to `{target}`",
                    f.id.value
                ),
            )
            .label("duplicate sequence flow")
            .help("remove one of the two flows");
            d = d.fix(
                format!("Remove duplicate flow `{}`", f.id.value),
                remove_flow(ctx, g, f),
            );
            e.push(d);
            if !dup_source.contains(&source) {
                dup_source.push(source);
                if let Some(s) = g.node_index(source) {
                    let n = &p.nodes[s];
                    e.push(
                        node_diag(
                            Code::QF112,
                            n,
                            format!("{} has duplicate outgoing sequence flows", what(n)),
                        )
                        .label("duplicate outgoing flows")
                        .help("remove one of the two flows"),
                    );
                }
            }
            if !dup_target.contains(&target) {
                dup_target.push(target);
                if let Some(t) = g.node_index(target) {
                    let n = &p.nodes[t];
                    e.push(
                        node_diag(
                            Code::QF112,
                            n,
                            format!("{} has duplicate incoming sequence flows", what(n)),
                        )
                        .label("duplicate incoming flows")
                        .help("remove one of the two flows"),
                    );
                }
            }
        }
    }
}

/// The ends of a flow as QF112 compares them: its `sourceRef` and
/// `targetRef`, or its own id for one it lacks (so it equals no other).
fn ends(f: &Flow) -> (&str, &str) {
    let id = f.id.value.as_str();
    (
        f.source.as_ref().map_or(id, |s| s.value.as_str()),
        f.target.as_ref().map_or(id, |t| t.value.as_str()),
    )
}

/// For each flow of the process, whether an earlier flow (in document
/// order) has the same source, target and condition (QF112).
///
/// When every flow's source is a node of the process, two duplicates are
/// in the same node's outgoing list, which the graph already holds: only
/// those lists of two or more flows are compared, with no hashing (hashing
/// every flow's ends was 2.6 ms of the 20,000-task model's rules). A flow
/// without a `sourceRef`, or one naming no node, compares by its ends'
/// text with every other flow, as it always did.
fn duplicate_flows(ctx: &Ctx<'_>, g: &Graph<'_>) -> Vec<bool> {
    let p = g.p;
    let mut duplicate = vec![false; p.flows.len()];
    if (0..p.flows.len()).all(|fi| g.source_resolves(fi)) {
        for i in 0..p.nodes.len() {
            let out = g.outgoing_indices(i);
            if out.len() < 2 {
                continue;
            }
            let mut seen: HashMap<(&str, ConditionKey), ()> = HashMap::default();
            for &fi in out {
                let f = &p.flows[fi as usize];
                if seen
                    .insert((ends(f).1, condition_key(ctx, f)), ())
                    .is_some()
                {
                    duplicate[fi as usize] = true;
                }
            }
        }
        return duplicate;
    }
    let mut seen: HashMap<(&str, &str, ConditionKey), ()> =
        HashMap::with_capacity_and_hasher(p.flows.len(), Default::default());
    for (fi, f) in p.flows.iter().enumerate() {
        let (source, target) = ends(f);
        if seen
            .insert((source, target, condition_key(ctx, f)), ())
            .is_some()
        {
            duplicate[fi] = true;
        }
    }
    duplicate
}

/// What makes two flows between the same nodes different, as bpmnlint
/// compares them: no condition; a condition without text (empty or blank);
/// or the condition's text as written around its value, surrounding
/// whitespace included (`x` and ` x ` differ; `&gt;` and `>` do not).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ConditionKey {
    None,
    Blank,
    Text(String),
}

fn condition_key(ctx: &Ctx<'_>, f: &Flow) -> ConditionKey {
    let Some(c) = &f.condition else {
        return ConditionKey::None;
    };
    if c.value.is_empty() {
        return ConditionKey::Blank;
    }
    let src = ctx.source.as_bytes();
    let ws = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let mut lead = c.span.start();
    while lead > c.full_span.start() && ws(src[lead - 1]) {
        lead -= 1;
    }
    let mut trail = c.span.end();
    while trail < c.full_span.end() && ws(src[trail]) {
        trail += 1;
    }
    ConditionKey::Text(format!(
        "{}{}{}",
        &ctx.source[lead..c.span.start()],
        c.value,
        &ctx.source[c.span.end()..trail]
    ))
}

/// Edits removing a flow: the element, its drawing, and the
/// `<incoming>`/`<outgoing>` entries that name it.
fn remove_flow(ctx: &Ctx<'_>, g: &Graph<'_>, f: &Flow) -> Vec<Edit> {
    let mut edits = vec![ctx.remove(f.span)];
    edits.extend(ctx.remove_drawing(&f.id.value));
    for end in [&f.source, &f.target].into_iter().flatten() {
        if let Some(i) = g.node_index(&end.value) {
            let n = &g.p.nodes[i];
            for r in n.incoming_refs.iter().chain(&n.outgoing_refs) {
                if r.value == f.id.value {
                    edits.push(ctx.remove(r.full_span));
                }
            }
        }
    }
    edits
}
