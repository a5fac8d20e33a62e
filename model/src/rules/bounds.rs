//! The cross-layer bound: QF045 (warning).
//!
//! A call whose worst-case remote requests per business operation (its
//! attempts × each attempt's deliveries × the counterpart's own attempts,
//! [`crate::policy::bound`]) are above the ceiling (`qflow.toml`'s
//! `[bounds] requests-per-operation`, 100 by default) turns one failing
//! operation into that much load on a dependency that is already down. The
//! finding points at the layer the author is most likely to change, the
//! retry, and names the others as related information.

use crate::diagnostic::{Code, Diagnostic, Edit};
use crate::model::{Node, Process};
use crate::policy::bound::{request_bound, RequestBound};
use crate::rules::edit::Ctx;
use crate::text::group;

pub(super) fn check(ctx: &Ctx<'_>, process: &Process, ceiling: u64, out: &mut Vec<Diagnostic>) {
    for node in &process.nodes {
        let Some(b) = request_bound(ctx.defs, process, node) else {
            continue;
        };
        // One finding per mistake: attempts that never stop are QF012's
        // finding, a channel configuration that does not load QF008's or
        // QF013's.
        let config_fails = node
            .channel_call()
            .is_some_and(|c| crate::policy::ChannelPolicy::of_channel(ctx.defs, &c.value).is_err());
        // A call with no way to end its wait is QF020's, one whose timeout
        // does not parse QF008's.
        let untimed = node.channel_call().is_some()
            && (node.timeouts.iter().any(|t| {
                t.duration.as_ref().is_none_or(|d| {
                    crate::duration::parse(d.value.trim()).is_ok_and(|v| v.is_zero())
                        || crate::duration::parse(d.value.trim()).is_err()
                })
            }) || (node.timeouts.is_empty() && process.boundaries(node.id()).next().is_none()));
        if b.attempts.is_none() || config_fails || untimed {
            continue;
        }
        if b.exceeds(ceiling) {
            out.push(finding(ctx, node, &b, ceiling));
        }
    }
}

fn finding(ctx: &Ctx<'_>, node: &Node, b: &RequestBound, ceiling: u64) -> Diagnostic {
    let id = node.id();
    let retry = node.retries.first();
    let span = retry.map_or(node.name_span, |r| r.name_span);
    let figure = match b.requests() {
        Some(n) => format!("up to {} remote requests", group(n)),
        None => "unbounded remote requests".to_string(),
    };
    let mut d = Diagnostic::new(
        Code::QF045,
        span,
        format!(
            "one business operation through `{id}` can cost {figure} ({}), above the ceiling of {}",
            b.formula(),
            group(ceiling)
        ),
    )
    .label(match retry {
        Some(_) => "these attempts multiply with the layers below",
        None => "one attempt, multiplied by the layers below",
    });
    // The other layers, where they are written.
    let channel = node.channel_call().map(|c| c.value.as_str());
    let config = channel.and_then(|c| ctx.defs.channel_config(c));
    if let (Some(t), Some(n), true) = (node.timeouts.first(), b.deliveries, b.is_call) {
        let capped = config
            .and_then(|c| c.max_deliveries.as_ref())
            .and_then(|m| m.value.trim().parse::<u64>().ok())
            .is_some_and(|m| m <= n);
        let label = if capped {
            "each attempt lasts up to this timeout".to_string()
        } else {
            format!(
                "up to {} deliveries of one attempt's request fit in this timeout",
                group(n)
            )
        };
        d = d.related(t.name_span, label);
    }
    if let Some(c) = config {
        let deliveries = match c.max_deliveries.as_ref() {
            Some(m) => format!(
                "the outbox delivers each request up to {} times",
                m.value.trim()
            ),
            None => "no maxDeliveries: the outbox delivers each request until the attempt ends"
                .to_string(),
        };
        d = d.related(c.name_span, deliveries);
        if let Some(a) = c
            .counterpart_attempts
            .as_ref()
            .filter(|_| b.counterpart_declared)
        {
            d = d.related(
                a.full_span,
                format!(
                    "the counterpart tries each request {} times itself",
                    group(b.counterpart)
                ),
            );
        }
    }
    let d = d.help(help(node, b, ceiling, channel, config.is_some()));
    match fix(node, b, ceiling) {
        Some((title, edits)) => d.fix(title, edits),
        None => d,
    }
}

/// What to change, with the numbers that fit: the attempts that keep the
/// figure within the ceiling, a ceiling on deliveries, the counterpart's
/// own retries, or the ceiling itself.
fn help(
    node: &Node,
    b: &RequestBound,
    ceiling: u64,
    channel: Option<&str>,
    configured: bool,
) -> String {
    let mut ways = Vec::new();
    if let Some(why) = b.unbounded_by() {
        ways.push(format!("the figure is unbounded because {why}"));
    }
    if let (Some(n), Some(r)) = (b.attempts_within(ceiling), node.retries.first()) {
        if b.attempts.is_none_or(|a| n < a) {
            ways.push(match r.max_attempts {
                Some(_) => format!("lower maxAttempts to {n} (the most that fit)"),
                None => format!("add maxAttempts=\"{n}\" (the most that fit)"),
            });
        }
    }
    if let Some(c) = channel {
        if configured {
            ways.push(format!(
                "lower maxDeliveries on <q:channelConfig channel=\"{c}\"> (or shorten the <q:timeout>) so fewer deliveries fit in one attempt"
            ));
        } else {
            ways.push(format!(
                "add <q:channelConfig channel=\"{c}\" maxDeliveries=\"3\"/> so the outbox stops re-delivering one request (without it, it delivers every second until the attempt ends)"
            ));
        }
        if b.counterpart_declared {
            ways.push("have the counterpart stop retrying what qflow already retries (counterpartAttempts)".to_string());
        }
    }
    ways.push(format!(
        "or, if this load is intended, raise the ceiling in qflow.toml: [bounds] requests-per-operation = {}",
        b.requests().map_or_else(|| group(ceiling), group)
    ));
    let mut s = String::from("retry at one layer only: ");
    s.push_str(&ways.join("; "));
    s
}

/// The quick fix: `maxAttempts` lowered to the most that fit, when that is
/// a change and enough; a backoff list's entries past the new last attempt
/// go with it (they could never be waited: QF031).
fn fix(node: &Node, b: &RequestBound, ceiling: u64) -> Option<(String, Vec<Edit>)> {
    let retry = node.retries.first()?;
    let attr = retry.max_attempts.as_ref()?;
    let n = b.attempts_within(ceiling)?;
    if b.attempts.is_some_and(|a| n >= a) || attr.span.is_empty() {
        return None;
    }
    let mut edits = vec![Edit {
        span: attr.span,
        new_text: n.to_string(),
    }];
    if let Some(list) = &retry.backoff {
        let entries = crate::policy::list_entries(list);
        let keep = usize::try_from(n.saturating_sub(1)).unwrap_or(usize::MAX);
        if entries.len() > keep {
            if keep == 0 || list.span.len() != list.value.len() {
                // No delay is ever waited, or the value is not written
                // plainly enough to edit entry by entry: no fix.
                return None;
            }
            let kept: Vec<&str> = entries[..keep].iter().map(|(e, _)| *e).collect();
            edits.push(Edit {
                span: list.span,
                new_text: kept.join(" "),
            });
        }
    }
    Some((format!("Lower maxAttempts to {n}"), edits))
}
