//! Task kinds and retry policies: QF007, QF008, QF010–QF013, QF015 (QF014 is
//! in [`super::channels`]).
//!
//! A retry policy is a load policy (docs/retry-policy.md): every one must be
//! well-formed, bounded, and on a task that can actually fail and retry.

use crate::diagnostic::{Code, Diagnostic};
use crate::duration;
use crate::model::{Attr, EventTrigger, Node, NodeKind, Process, RetrySpec};
use crate::policy::{Backoff, ChannelPolicy, RetryPolicy};
use crate::rules::edit::{insert, Ctx};

pub(super) fn check(ctx: &Ctx<'_>, process: &Process, out: &mut Vec<Diagnostic>) {
    for node in &process.nodes {
        task_kind(node, out);
        timer_duration(node, out);
        retries(ctx, node, out);
    }
}

/// QF007: a serviceTask is exactly one of a registered task or a channel call.
fn task_kind(node: &Node, out: &mut Vec<Diagnostic>) {
    let Some(t) = node.task_attrs() else { return };
    let id = node.id();
    match (&t.task, &t.channel) {
        (None, None) => out.push(
            Diagnostic::new(
                Code::QF007,
                node.name_span,
                format!("serviceTask `{id}` has neither q:task nor q:channel: qflow cannot tell what runs it"),
            )
            .label("neither q:task nor q:channel")
            .help("add q:task=\"payments.charge\" (a handler registered under that name runs it) or q:channel=\"bank\" (a request goes to a counterpart and the task waits for its response)"),
        ),
        (Some(task), Some(channel)) => out.push(
            Diagnostic::new(
                Code::QF007,
                channel.full_span,
                format!("serviceTask `{id}` has both q:task and q:channel: it must be one kind of task"),
            )
            .label("a channel call…")
            .related(task.full_span, "…and a registered task")
            .help("keep q:task for an in-process handler, or q:channel for a request/response with a counterpart; remove the other"),
        ),
        (Some(a), None) | (None, Some(a)) if a.value.trim().is_empty() => {
            let which = if t.task.is_some() { "q:task" } else { "q:channel" };
            out.push(
                Diagnostic::new(
                    Code::QF007,
                    a.full_span,
                    format!("serviceTask `{id}` has an empty {which}"),
                )
                .label("empty name")
                .help(format!("give {which} the name it is registered under, e.g. {which}=\"payments.charge\"")),
            );
        }
        _ => {}
    }
    if let (Some(op), None) = (&t.operation, &t.channel) {
        out.push(
            Diagnostic::new(
                Code::QF006,
                op.full_span,
                format!("q:operation on serviceTask `{id}`, which is not a channel call"),
            )
            .label("only channel calls have an operation")
            .help("q:operation names the operation of a q:channel call; remove it, or make the task a channel call"),
        );
    }
}

/// QF008 for a duration that must be positive, as `what` (e.g. "timer `t1`").
pub(super) fn positive_duration(attr: &Attr, what: &str, out: &mut Vec<Diagnostic>) {
    let span = if attr.span.is_empty() {
        attr.full_span
    } else {
        attr.span
    };
    match duration::parse(&attr.value) {
        Ok(d) if d.is_zero() => out.push(
            Diagnostic::new(
                Code::QF008,
                span,
                format!("{what} is zero: it must be a positive duration"),
            )
            .label("zero duration")
            .help("give it a positive ISO-8601 duration, e.g. PT30S, PT5M, P1D"),
        ),
        Ok(_) => {}
        Err(e) => out.push(
            Diagnostic::new(
                Code::QF008,
                span,
                format!(
                    "{what}: `{}` is not an ISO-8601 duration",
                    attr.value.trim()
                ),
            )
            .label(e.message.clone())
            .help(format!(
                "{}; ISO-8601 durations look like PT30S, PT5M, PT1H30M, P2D",
                e.message
            )),
        ),
    }
}

/// QF008 for timer events: qflow executes `timeDuration`, which must be positive.
fn timer_duration(node: &Node, out: &mut Vec<Diagnostic>) {
    let trigger = match &node.kind {
        NodeKind::StartEvent { trigger }
        | NodeKind::IntermediateCatchEvent { trigger }
        | NodeKind::BoundaryEvent { trigger, .. } => trigger,
        _ => return,
    };
    let EventTrigger::Timer(timer) = trigger else {
        return;
    };
    let id = node.id();
    match &timer.time_duration {
        Some(d) => positive_duration(d, &format!("the timeDuration of timer `{id}`"), out),
        None if timer.time_date.is_none() && timer.time_cycle.is_none() => {
            let def = node
                .event_definitions
                .iter()
                .find(|e| e.local == "timerEventDefinition")
                .map_or(node.name_span, |e| e.name_span);
            out.push(
                Diagnostic::new(Code::QF008, def, format!("timer `{id}` has no duration"))
                    .label("no timeDuration")
                    .help("add <timeDuration xsi:type=\"tFormalExpression\">PT1H</timeDuration> inside the timerEventDefinition"),
            );
        }
        None => {} // timeDate / timeCycle: QF041.
    }
}

fn retries(ctx: &Ctx<'_>, node: &Node, out: &mut Vec<Diagnostic>) {
    let Some(first) = node.retries.first() else {
        return;
    };
    let id = node.id();
    let is_task = node.registered_task().is_some() || node.channel_call().is_some();
    if !is_task {
        if !matches!(node.kind, NodeKind::ServiceTask(_)) {
            for r in &node.retries {
                out.push(misplaced_retry(r, &format!("<{}> `{id}`", node.element)));
            }
        }
        return; // A serviceTask of neither/both kinds: QF007 says what to fix first.
    }
    for r in &node.retries[1..] {
        out.push(
            Diagnostic::new(
                Code::QF011,
                r.name_span,
                format!("task `{id}` has a second <{}>", r.qname),
            )
            .label("second retry policy")
            .related(first.name_span, "the first one")
            .help("a task has one retry policy: merge the two into one element and remove this one")
            .fix("Remove this retry policy", vec![ctx.remove(r.span)]),
        );
    }
    for r in &node.retries {
        policy(node, r, out);
    }
}

/// QF010 for a `<q:retry>` that is not on a registered task or channel call.
pub(super) fn misplaced_retry(r: &RetrySpec, place: &str) -> Diagnostic {
    Diagnostic::new(
        Code::QF010,
        r.name_span,
        format!("<{}> on {place}: only a registered task or a channel call can retry", r.qname),
    )
    .label("nothing here can retry")
    .help("put <q:retry> inside the extensionElements of a serviceTask with q:task or q:channel, or remove it")
}

/// QF008, QF013, QF015 from the policy's own validation; QF012 when unbounded.
fn policy(node: &Node, r: &RetrySpec, out: &mut Vec<Diagnostic>) {
    let id = node.id();
    let parsed = RetryPolicy::from_spec(r);
    if let Err(errors) = &parsed {
        for e in errors {
            let mut d = Diagnostic::new(
                e.code,
                e.span,
                format!("<{}> on `{id}`: {}", r.qname, e.message),
            )
            .label(e.label.clone())
            .help(e.help.clone());
            for (span, msg) in &e.related {
                d = d.related(*span, msg.clone());
            }
            out.push(d);
        }
    }
    if r.max_attempts.is_none() && r.max_elapsed.is_none() {
        out.push(
            Diagnostic::new(
                Code::QF012,
                r.name_span,
                format!("<{}> on `{id}` is unbounded: neither maxAttempts nor maxElapsed", r.qname),
            )
            .label("retries forever")
            .help("an unbounded retry turns an outage into load (50,000 failing jobs retrying every minute schedule 72,000,000 attempts a day): add maxAttempts (every attempt, the first included) or maxElapsed (an expiry from the first attempt)")
            .fix("Add maxAttempts=\"3\"", vec![insert(r.name_span.end(), " maxAttempts=\"3\"".to_string())]),
        );
        return;
    }
    // Bounded only by time, with no delay: attempts repeat back to back until it expires.
    if let Ok(p) = &parsed {
        let immediate = matches!(&p.backoff, Backoff::List(l) if l.iter().all(|d| d.is_zero()));
        if p.max_attempts.is_none() && immediate && node.registered_task().is_some() {
            let span = r.max_elapsed.as_ref().map_or(r.name_span, |a| a.full_span);
            out.push(
                Diagnostic::new(
                    Code::QF012,
                    span,
                    format!("<{}> on `{id}` retries immediately with no maxAttempts: maxElapsed alone does not bound the number of attempts", r.qname),
                )
                .label("no delay and no attempt limit")
                .help("add maxAttempts, or a backoff (e.g. backoff=\"PT1S PT10S PT1M\") so the attempts within maxElapsed are few")
                .fix("Add maxAttempts=\"3\"", vec![insert(r.name_span.end(), " maxAttempts=\"3\"".to_string())]),
            );
        }
    }
}

/// QF008 and QF013 on `<q:channelConfig>` (definitions level): the faults
/// [`ChannelPolicy::from_config`] finds, as diagnostics.
pub(super) fn channel_configs(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for c in &ctx.defs.channel_configs {
        for e in ChannelPolicy::from_config(c).err().unwrap_or_default() {
            out.push(
                Diagnostic::new(e.code, e.span, e.message)
                    .label(e.label)
                    .help(e.help),
            );
        }
    }
}
