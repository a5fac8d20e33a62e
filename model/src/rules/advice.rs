//! Advice on valid policies: QF030 (warning), QF031 (warning), QF033 (hint).
//!
//! These do not stop a model from loading; they point at a policy that does
//! less than its author believes (a code that can never occur, delays that are
//! never waited) or that makes many failures retry in lockstep.

use crate::diagnostic::{Code, Diagnostic, Edit};
use crate::model::{Node, Process, RetrySpec};
use crate::policy::{attempt_window, list_entries, Backoff, RetryPolicy, CHANNEL_FAILURE_CODES};
use crate::rules::edit::{insert, Ctx};
use crate::span::Span;

pub(super) fn check(ctx: &Ctx<'_>, process: &Process, out: &mut Vec<Diagnostic>) {
    for node in &process.nodes {
        let is_call = node.channel_call().is_some();
        if !is_call && node.registered_task().is_none() {
            continue;
        }
        for r in &node.retries {
            codes(node, r, is_call, out);
            if let Ok(p) = RetryPolicy::from_spec(r) {
                unused_entries(ctx, node, r, &p, out);
            }
            jitter(node, r, out);
        }
    }
}

/// QF030: `q.*` codes are qflow's own; only two exist, and only on channel calls.
fn codes(node: &Node, r: &RetrySpec, is_call: bool, out: &mut Vec<Diagnostic>) {
    let Some(attr) = &r.non_retryable_codes else {
        return;
    };
    let id = node.id();
    for (code, span) in list_entries(attr) {
        if !code.starts_with("q.") {
            continue;
        }
        let known = CHANNEL_FAILURE_CODES.contains(&code);
        if known && is_call {
            continue;
        }
        // The codes a handler from a handlers file (or the embedding API)
        // fails a registered task with.
        if !is_call && qflow_instance::codes::handler::is_handler_code(code) {
            continue;
        }
        let d = if known {
            Diagnostic::new(
                Code::QF030,
                span,
                format!("`{code}` in nonRetryableCodes of registered task `{id}`: qflow raises it only on channel calls"),
            )
            .label("never raised on a registered task")
            .help("q.timeout and q.delivery.poisoned are the failures of a channel call (its <q:timeout> firing, its request delivery poisoned); a registered task's failures carry the codes its handler gives. Remove it, or list the handler's code")
        } else {
            let mut d = Diagnostic::new(
                Code::QF030,
                span,
                format!("unknown qflow code `{code}` in nonRetryableCodes of `{id}`"),
            )
            .label("qflow never raises this code");
            let help = "the `q.` codes are qflow's own and there are two, both on channel calls: q.timeout (the <q:timeout> fired) and q.delivery.poisoned (the outbox gave up delivering the request)";
            match crate::suggest::closest(code, CHANNEL_FAILURE_CODES).filter(|_| is_call) {
                Some(best) => {
                    d = d.help(format!("did you mean `{best}`? {help}")).fix(
                        format!("Change to `{best}`"),
                        vec![Edit {
                            span,
                            new_text: best.to_string(),
                        }],
                    )
                }
                None => d = d.help(help),
            }
            d
        };
        out.push(d);
    }
}

/// QF031: list entries past the last attempt the policy can make.
fn unused_entries(
    ctx: &Ctx<'_>,
    node: &Node,
    r: &RetrySpec,
    p: &RetryPolicy,
    out: &mut Vec<Diagnostic>,
) {
    let (Backoff::List(list), Some(attr)) = (&p.backoff, &r.backoff) else {
        return;
    };
    // The node's own worst case: a call's attempts last until their timeout
    // or their request's poisoning, so maxElapsed may end its schedule
    // sooner than a task's.
    let Some(attempts) = p.worst_case(attempt_window(ctx.defs, node, p)).count else {
        return;
    };
    let usable = attempts.saturating_sub(1) as usize;
    if list.len() <= usable {
        return;
    }
    let entries = list_entries(attr);
    let (first, last) = (entries[usable].1, entries[entries.len() - 1].1);
    let unused = entries.len() - usable;
    let why = match (p.max_attempts, p.max_elapsed) {
        (Some(m), _) if u64::from(m) == attempts => format!(
            "maxAttempts=\"{m}\" allows {} retr{}, so only the first {usable} delay{} are used",
            m - 1,
            if m == 2 { "y" } else { "ies" },
            if usable == 1 { "" } else { "s" }
        ),
        (_, Some(e)) => format!(
            "maxElapsed=\"{}\" expires the policy after attempt {attempts}, so only the first {usable} delay{} are used",
            crate::duration::to_iso(e),
            if usable == 1 { "" } else { "s" }
        ),
        _ => format!("only {usable} delays are used"),
    };
    let mut d = Diagnostic::new(
        Code::QF031,
        Span::new(first.start(), last.end()),
        format!(
            "{unused} backoff entr{} of `{}` can never be used: {why}",
            if unused == 1 { "y" } else { "ies" },
            node.id()
        ),
    )
    .label("never waited")
    .help("remove the unused delays, or raise maxAttempts/maxElapsed if the schedule is what you meant");
    let bound = r.max_attempts.as_ref().or(r.max_elapsed.as_ref());
    if let Some(b) = bound {
        d = d.related(b.full_span, "the bound that ends the schedule first");
    }
    // Keep the used prefix exactly as written.
    let keep_end = entries[usable.saturating_sub(1)].1.end();
    if usable > 0 {
        d = d.fix(
            "Remove the unused delays",
            vec![Edit {
                span: Span::new(keep_end, last.end()),
                new_text: String::new(),
            }],
        );
    }
    out.push(d);
}

/// QF033: with no jitter attribute, instances that failed together retry together.
fn jitter(node: &Node, r: &RetrySpec, out: &mut Vec<Diagnostic>) {
    if r.jitter.is_some() {
        return;
    }
    out.push(
        Diagnostic::new(
            Code::QF033,
            r.name_span,
            format!("<{}> on `{}` has no jitter attribute", r.qname, node.id()),
        )
        .label("no jitter decision")
        .help("without jitter, instances that failed together become eligible together (50,000 jobs delayed by the same time retry at the same moment). Say jitter=\"full\" or \"equal\" to spread them, or jitter=\"none\" to keep the exact schedule deliberately")
        .fix("Add jitter=\"full\"", vec![insert(r.name_span.end(), " jitter=\"full\"".to_string())])
        .fix("Add jitter=\"none\" (an exact schedule, deliberately)", vec![insert(r.name_span.end(), " jitter=\"none\"".to_string())]),
    );
}
