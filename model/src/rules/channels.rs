//! Channel calls: QF014, QF020, QF021, QF022 (and QF008/QF006 on `<q:timeout>`).
//!
//! A channel call waits for a counterpart. Its only failures are the
//! route-less `<q:timeout>` firing (`q.timeout`) and a poisoned delivery
//! (`q.delivery.poisoned`); the loader guarantees every call a timeout, which
//! is what lets the poison wake be best-effort (docs/runtime.md).

use std::collections::HashMap;

use crate::diagnostic::{Code, Diagnostic};
use crate::duration;
use crate::model::{EventTrigger, Node, NodeKind, Process};
use crate::rules::edit::Ctx;
use crate::rules::tasks::positive_duration;

pub(super) fn check(ctx: &Ctx<'_>, process: &Process, out: &mut Vec<Diagnostic>) {
    // Timer boundaries by host id, built once (a model may have thousands of calls).
    let mut timers: HashMap<&str, Vec<&Node>> = HashMap::new();
    for b in &process.nodes {
        if let NodeKind::BoundaryEvent {
            attached_to: Some(host),
            trigger: EventTrigger::Timer(_),
            ..
        } = &b.kind
        {
            timers.entry(host.value.as_str()).or_default().push(b);
        }
    }
    for node in &process.nodes {
        if node.channel_call().is_some() {
            let boundaries = timers.get(node.id()).cloned().unwrap_or_default();
            call(ctx, process, node, &boundaries, out);
        } else if node.task_attrs().is_some_and(|t| t.channel.is_some()) {
            // Both q:task and q:channel: QF007 comes first.
        } else {
            for t in &node.timeouts {
                let what = match node.registered_task() {
                    Some(_) => format!("registered task `{}`", node.id()),
                    None => format!("<{}> `{}`", node.element, node.id()),
                };
                out.push(
                    Diagnostic::new(
                        Code::QF006,
                        t.name_span,
                        format!("<{}> on {what}: only channel calls have a route-less timeout", t.qname),
                    )
                    .label("qflow ignores it here")
                    .help("a registered task's handler bounds its own work; remove <q:timeout>, or make the task a channel call (q:channel)"),
                );
            }
        }
    }
}

fn call(
    ctx: &Ctx<'_>,
    process: &Process,
    node: &Node,
    boundaries: &[&Node],
    out: &mut Vec<Diagnostic>,
) {
    let id = node.id();
    let q = ctx.q_prefix();
    for t in &node.timeouts {
        match &t.duration {
            Some(d) => positive_duration(d, &format!("the <{}> of `{id}`", t.qname), out),
            None => out.push(
                Diagnostic::new(
                    Code::QF008,
                    t.name_span,
                    format!("<{}> on `{id}` has no duration", t.qname),
                )
                .label("no duration")
                .help("write how long one attempt may wait for its response: duration=\"PT30S\""),
            ),
        }
    }
    // QF020: no way for the wait to end without the counterpart.
    if node.timeouts.is_empty() && boundaries.is_empty() {
        out.push(
            Diagnostic::new(
                Code::QF020,
                node.name_span,
                format!("channel call `{id}` has no timeout: it could wait for its response forever"),
            )
            .label("no <q:timeout> and no timer boundary")
            .help(format!("add <{q}timeout duration=\"PT30S\"/> to its extensionElements (a route-less timeout: with a <q:retry> it is a retryable failure, without one a catchable q.timeout error), or a routed timer boundary"))
            .fix(
                format!("Add <{q}timeout duration=\"PT30S\"/>"),
                ctx.insert_extension(node, &format!("<{q}timeout duration=\"PT30S\"/>")),
            ),
        );
    }
    // QF021: two timeouts that race each other.
    for t in node.timeouts.iter().skip(1) {
        out.push(
            Diagnostic::new(
                Code::QF021,
                t.name_span,
                format!("channel call `{id}` has a second <{}>", t.qname),
            )
            .label("second timeout")
            .related(node.timeouts[0].name_span, "the first one")
            .help("a call has one timeout: keep one <q:timeout> and remove the other")
            .fix("Remove this timeout", vec![ctx.remove(t.span)]),
        );
    }
    if let (Some(t), Some(b)) = (node.timeouts.first(), boundaries.first()) {
        out.push(
            Diagnostic::new(
                Code::QF021,
                t.name_span,
                format!("channel call `{id}` has both <{}> and timer boundary `{}`", t.qname, b.id()),
            )
            .label("route-less timeout")
            .related(b.name_span, "and a timer boundary: which one ends the wait?")
            .help("keep one: <q:timeout> (the attempt fails with q.timeout, retryable by <q:retry>) or the timer boundary (a modelled outcome with its own path)"),
        );
    }
    // QF014: a call retried with no delay hammers a counterpart that just failed to answer.
    for r in &node.retries {
        match (&r.backoff, &r.initial) {
            (None, None) => out.push(
                Diagnostic::new(
                    Code::QF014,
                    r.name_span,
                    format!("<{}> on channel call `{id}` has no backoff: every retry would be immediate", r.qname),
                )
                .label("no backoff: zero delay")
                .help("a call fails by timing out or by its delivery being poisoned: asking again at once asks a struggling counterpart again at once. Add backoff=\"PT10S PT1M PT5M\" or initial=\"PT10S\" factor=\"2\""),
            ),
            (Some(list), _) => {
                for (text, span) in crate::policy::list_entries(list) {
                    if duration::parse(text).is_ok_and(|d| d.is_zero()) {
                        out.push(
                            Diagnostic::new(
                                Code::QF014,
                                span,
                                format!("<{}> on channel call `{id}` has a zero backoff entry `{text}`", r.qname),
                            )
                            .label("zero delay")
                            .help("give every delay of a channel call's retry a positive duration (e.g. PT10S): a zero delay re-sends at once to a counterpart that just failed to answer"),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    // QF022: a routed timer boundary is a modelled outcome; it always wins, so the policy never fires.
    let routed: Vec<&Node> = boundaries
        .iter()
        .copied()
        .filter(|b| process.outgoing(b.id()).next().is_some())
        .collect();
    if let (Some(r), Some(b)) = (node.retries.first(), routed.first()) {
        out.push(qf022(ctx, node, r, b, process));
    }
}

fn qf022(
    ctx: &Ctx<'_>,
    node: &Node,
    r: &crate::model::RetrySpec,
    boundary: &Node,
    process: &Process,
) -> Diagnostic {
    let id = node.id();
    let bid = boundary.id();
    let q = crate::rules::edit::prefix_of(&r.qname);
    let mut d = Diagnostic::new(
        Code::QF022,
        r.name_span,
        format!("<{}> on channel call `{id}` can never fire: timer boundary `{bid}` routes the timeout", r.qname),
    )
    .label("this retry policy is dead")
    .related(boundary.name_span, format!("routed timer boundary `{bid}`: its outgoing flow always wins"))
    .help(format!(
        "a timer boundary with outgoing flows is a modelled outcome and beats any policy, so this call has no retries. Either remove <{}>, or replace boundary `{bid}` by a route-less <{q}timeout> so a timeout becomes a retryable failure",
        r.qname
    ))
    .fix(format!("Remove <{}>", r.qname), vec![ctx.remove(r.span)]);
    // Second fix: the boundary's duration becomes a route-less timeout.
    let duration = match &boundary.kind {
        NodeKind::BoundaryEvent {
            trigger: EventTrigger::Timer(t),
            ..
        } => t
            .time_duration
            .as_ref()
            .filter(|a| duration::parse(&a.value).is_ok_and(|d| !d.is_zero()))
            .map(|a| a.value.trim().to_string()),
        _ => None,
    };
    if let Some(dur) = duration {
        // What only the boundary reached goes with it (its route would be
        // left orphaned: QF111, QF116), so the fix leaves a valid model.
        let orphans = only_reached_from(process, bid);
        let mut edits = vec![ctx.remove(boundary.span)];
        edits.extend(ctx.remove_drawing(bid));
        let mut removed_flows: Vec<&str> = Vec::new();
        for from in std::iter::once(bid).chain(orphans.iter().map(String::as_str)) {
            if from != bid {
                let n = process
                    .node(from)
                    .expect("an orphan is a node of the process");
                edits.push(ctx.remove(n.span));
                edits.extend(ctx.remove_drawing(from));
            }
            for f in process.outgoing(from) {
                if removed_flows.contains(&f.id.value.as_str()) {
                    continue;
                }
                removed_flows.push(&f.id.value);
                edits.push(ctx.remove(f.span));
                edits.extend(ctx.remove_drawing(&f.id.value));
                let target = f.target.as_ref().and_then(|t| process.node(&t.value));
                // (An orphan's own references go with its element.)
                let survives = target.filter(|t| !orphans.iter().any(|o| *o == t.id.value));
                for inc in survives.iter().flat_map(|t| t.incoming_refs.iter()) {
                    if inc.value == f.id.value {
                        edits.push(ctx.remove(inc.full_span));
                    }
                }
            }
        }
        if node.timeouts.is_empty() {
            edits.extend(ctx.insert_extension(node, &format!("<{q}timeout duration=\"{dur}\"/>")));
        }
        let title = match orphans.len() {
            0 => format!("Replace timer boundary `{bid}` by <{q}timeout duration=\"{dur}\"/>"),
            _ => format!(
                "Replace timer boundary `{bid}` by <{q}timeout duration=\"{dur}\"/> (and remove what only it reached: {})",
                orphans.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(", ")
            ),
        };
        d = d.fix(title, edits);
    }
    d
}

/// The nodes of `process` that only `from` (a boundary) reaches: those
/// downstream of it every one of whose ways in comes from it or from
/// another such node, with the boundaries attached to them. Sub-process
/// children go with their sub-process's element and are not listed.
fn only_reached_from(process: &Process, from: &str) -> Vec<String> {
    // Downstream of `from` in its own scope, by flows and attachment.
    let mut set: Vec<String> = Vec::new();
    let mut todo = vec![from.to_string()];
    while let Some(at) = todo.pop() {
        let next = process
            .outgoing(&at)
            .filter_map(|f| f.target.as_ref().map(|t| t.value.to_string()))
            .chain(process.boundaries(&at).map(|b| b.id.value.to_string()));
        for n in next.collect::<Vec<_>>() {
            if n != from && !set.contains(&n) && process.node(&n).is_some() {
                set.push(n.clone());
                todo.push(n);
            }
        }
    }
    // Keep only what has no way in from outside the set (the greatest such
    // set, so a loop downstream of the boundary goes as a whole).
    loop {
        let was = set.clone();
        let inside = |id: &str| id == from || was.iter().any(|s| s == id);
        let before = set.len();
        set.retain(|id| {
            let Some(n) = process.node(id) else {
                return false;
            };
            let attached_inside = match &n.kind {
                NodeKind::BoundaryEvent { attached_to, .. } => {
                    attached_to.as_ref().is_some_and(|a| inside(&a.value))
                }
                _ => true,
            };
            let flows_inside = process
                .incoming(id)
                .all(|f| f.source.as_ref().is_some_and(|s| inside(&s.value)));
            attached_inside && flows_inside && !n.for_compensation
        });
        if set.len() == before {
            break;
        }
    }
    set.sort_by_key(|id| process.node_index(id));
    set
}
