//! Hover: what a piece of the model means when it runs.
//!
//! - `<q:retry>`: the full schedule (attempt, delay, time since the first
//!   attempt, with and without jitter), the worst case, and the load it
//!   implies (attempts per failing instance; for a channel call, deliveries
//!   per attempt under the channel's curve); on a registered task, which cap
//!   bounds a provider's retry-after (`maxDelay`, or the default maximum).
//! - a registered task or channel call, and its `<q:retry>`: the cross-layer
//!   bound, the worst-case remote requests per business operation
//!   (attempts × deliveries × the counterpart's own attempts).
//! - a duration value: the duration in words; `<q:timeout>`: what it does.
//! - a flow node: its kind, and the classifier's verdict on its process.
//!
//! The numbers come from the engine ([`RetryPolicy`], [`classify`],
//! [`policy::delivery_load`], [`policy::bound`]); this module only lays
//! them out.

use std::fmt::Write;
use std::time::Duration;

use qflow_model::classify::{classify, Classification, Reason};
use qflow_model::duration::{self, to_words};
use qflow_model::model::{
    ChannelConfig, Definitions, Node, NodeKind, Process, RetrySpec, TimeoutSpec,
};
use qflow_model::navigate;
use qflow_model::policy::{self, CapSource, ChannelPolicy, Jitter, RetryPolicy};
use qflow_model::span::Span;

use crate::store::Snapshot;

/// The instance count of the load projection: the DBG-08 incident
/// (docs/retry-policy.md: 50,000 jobs failing together), over one day.
const PROJECTION_INSTANCES: u64 = 50_000;
const PROJECTION_WINDOW: Duration = Duration::from_secs(86_400);

/// Markdown for the cursor's position, and the span it describes.
pub fn hover(snap: &Snapshot, offset: usize) -> Option<(String, Span)> {
    let defs = snap.definitions()?;
    if let Some(d) = navigate::duration_at(defs, offset) {
        return Some((duration_hover(&d), d.span));
    }
    if let Some((process, node, retry)) = navigate::retry_at(defs, offset) {
        return Some((retry_hover(defs, process, node, retry), retry.name_span));
    }
    if let Some((_, node, timeout)) = navigate::timeout_at(defs, offset) {
        return Some((timeout_hover(node, timeout), timeout.name_span));
    }
    if let Some(config) = defs
        .channel_configs
        .iter()
        .find(|c| c.span.contains(offset))
    {
        return Some((channel_config_hover(config), config.name_span));
    }
    let (process, node) = navigate::node_at(defs, offset)?;
    Some((node_hover(defs, process, node), node.name_span))
}

fn duration_hover(d: &navigate::DurationAt) -> String {
    match duration::parse(&d.text) {
        Ok(v) => format!("`{}` ({}) = **{}**", d.text, d.attribute, to_words(v)),
        Err(e) => format!(
            "`{}` ({}) is not a valid duration: {e}",
            d.text, d.attribute
        ),
    }
}

fn timeout_hover(node: &Node, t: &TimeoutSpec) -> String {
    let mut s = format!("**q:timeout** on `{}`\n\n", node.id());
    match t.duration.as_ref().map(|a| duration::parse(a.value.trim())) {
        Some(Ok(d)) => {
            let _ = write!(
                s,
                "Each attempt waits at most **{}** for the counterpart's response; then the attempt fails with `q.timeout` (retried if the task has a `<q:retry>`, else a catchable error).",
                to_words(d)
            );
        }
        Some(Err(e)) => {
            let _ = write!(s, "`duration` is not a valid duration: {e}");
        }
        None => s.push_str("No `duration`: write `duration=\"PT30S\"`."),
    }
    s
}

fn channel_config_hover(c: &ChannelConfig) -> String {
    let channel = c.channel.as_ref().map(|a| a.value.as_str()).unwrap_or("?");
    let mut s = format!(
        "**q:channelConfig** for channel `{channel}`: the outbox's own delivery curve.\n\n"
    );
    let policy = match ChannelPolicy::from_config(c) {
        Ok(p) => p,
        Err(errors) => {
            s.push_str("This configuration does not load:\n");
            for e in errors {
                let _ = writeln!(s, "- {} {}", e.code, e.message);
            }
            return s.trim_end().to_string();
        }
    };
    let interval = to_words(policy.delivery_interval);
    let default = if c.delivery_interval.is_none() {
        " (the default)"
    } else {
        ""
    };
    match (policy.max_deliveries, policy.last_delivery()) {
        (Some(m), Some(last)) => {
            let _ = write!(
                s,
                "Each request is delivered at most {m} times, {interval}{default} apart: if the last delivery (at {}) fails, the request is poisoned and the call's attempt fails with `q.delivery.poisoned`.",
                to_words(last)
            );
        }
        _ => {
            let _ = write!(s, "No `maxDeliveries`: the outbox retries one delivery forever, every {interval}{default}; only the call's `<q:timeout>` ends an attempt.");
        }
    }
    if let Some(n) = policy.counterpart_attempts {
        let _ = write!(
            s,
            "\n\nThe counterpart tries each request it receives up to {n} times itself (`counterpartAttempts`): every delivery can become {n} requests downstream, and the worst case per business operation counts them."
        );
    }
    s
}

fn task_kind(node: &Node) -> String {
    if let Some(t) = node.registered_task() {
        return format!("registered task `{}`", t.value);
    }
    if let Some(c) = node.channel_call() {
        let op = node
            .task_attrs()
            .and_then(|t| t.operation.as_ref())
            .map(|o| format!(", operation `{}`", o.value))
            .unwrap_or_default();
        return format!("channel call on `{}`{op}", c.value);
    }
    match &node.kind {
        NodeKind::ServiceTask(_) => {
            "serviceTask with neither or both of q:task / q:channel (QF007)".to_string()
        }
        _ => node.element.to_string(),
    }
}

/// The wait states a node's hover lists before it counts the rest.
const MAX_REASONS: usize = 8;

fn node_hover(defs: &Definitions, process: &Process, node: &Node) -> String {
    let mut s = format!("**{}** `{}`", node.element, node.id());
    if let Some(name) = &node.name {
        let _ = write!(s, " — {}", name.value);
    }
    s.push_str("\n\n");
    if matches!(node.kind, NodeKind::ServiceTask(_)) {
        let _ = writeln!(s, "Kind: {}.\n", task_kind(node));
        for r in &node.retries {
            if let Some(b) = process.routed_timer_boundary(node) {
                let _ = writeln!(
                    s,
                    "Retry: never fires (QF022): {}.\n",
                    boundary_route(process, b)
                );
                continue;
            }
            if let Ok(p) = RetryPolicy::from_spec(r) {
                let _ = writeln!(
                    s,
                    "Retry: {} (hover `<{}>` for the schedule).\n",
                    policy::node_worst_case(defs, node, &p).summary(),
                    r.qname
                );
            }
        }
        for t in &node.timeouts {
            if let Some(Ok(d)) = t.duration.as_ref().map(|a| duration::parse(a.value.trim())) {
                let _ = writeln!(s, "Timeout: {} per attempt.\n", to_words(d));
            }
        }
        if let Some(b) = policy::bound::request_bound(defs, process, node) {
            let _ = writeln!(s, "{}\n", bound_text(&b));
        }
    }
    let pid = process
        .id
        .as_ref()
        .map(|a| a.value.as_str())
        .unwrap_or("(no id)");
    let class = classify(process);
    match &class {
        Classification::RunToCompletion => {
            let _ = write!(
                s,
                "Process `{pid}` is **run-to-completion**: no wait state, an instance runs start to end in one step and needs no datasource."
            );
        }
        Classification::Stateful(reasons) => {
            let _ = writeln!(
                s,
                "Process `{pid}` is **stateful** (it needs a datasource):"
            );
            // Every wait state, in document order, up to a screenful; past
            // that the hovered node's own first, then the first others and
            // a count (a 20,000-task chain has 20,000: a 119 KB hover).
            let mine = |r: &&Reason| r.node_id == node.id();
            let shown: Vec<&Reason> = if reasons.len() <= MAX_REASONS {
                reasons.iter().collect()
            } else {
                let own: Vec<_> = reasons.iter().filter(mine).collect();
                let room = MAX_REASONS.saturating_sub(own.len());
                let others = reasons.iter().filter(|r| !mine(r)).take(room);
                own.iter().copied().chain(others).collect()
            };
            for r in &shown {
                let tag = if mine(r) { " ← this node" } else { "" };
                let _ = writeln!(s, "- {}{tag}", r.detail);
            }
            if reasons.len() > shown.len() {
                let _ = writeln!(
                    s,
                    "- … and {} more wait states in this process",
                    reasons.len() - shown.len()
                );
            }
        }
    }
    s.trim_end().to_string()
}

/// What a routed timer boundary does to its call: when it fires and where
/// the flow goes.
fn boundary_route(process: &Process, b: &Node) -> String {
    let after = match &b.kind {
        NodeKind::BoundaryEvent {
            trigger: qflow_model::model::EventTrigger::Timer(t),
            ..
        } => t
            .time_duration
            .as_ref()
            .and_then(|a| duration::parse(a.value.trim()).ok())
            .map(|d| format!(" after {}", to_words(d))),
        _ => None,
    }
    .unwrap_or_default();
    let targets: Vec<String> = process
        .outgoing(b.id())
        .filter_map(|f| f.target.as_ref())
        .map(|t| format!("`{}`", t.value))
        .collect();
    format!(
        "timer boundary `{}` routes the timeout: when it fires{after}, the call's wait ends and the flow takes its route to {}",
        b.id(),
        qflow_model::text::capped_list(&targets)
    )
}

fn words_or_dash(d: Duration) -> String {
    if d.is_zero() {
        "—".to_string()
    } else {
        to_words(d)
    }
}

fn retry_hover(defs: &Definitions, process: &Process, node: &Node, spec: &RetrySpec) -> String {
    let mut s = format!(
        "**{}** on `{}` ({})\n\n",
        spec.qname,
        node.id(),
        task_kind(node)
    );
    // A policy that can never fire (QF022) has no schedule: say what
    // happens instead.
    if let Some(b) = process.routed_timer_boundary(node) {
        let _ = writeln!(
            s,
            "**Never fires** (QF022): {}.",
            boundary_route(process, b)
        );
        let _ = writeln!(
            s,
            "\nNo attempt is ever retried, so there is no schedule and no retry load. Remove this `<{}>` for the modelled slow-answer path, or replace the boundary by a route-less `<q:timeout>` to retry a slow answer.",
            spec.qname
        );
        return s.trim_end().to_string();
    }
    let policy = match RetryPolicy::from_spec(spec) {
        Ok(p) => p,
        Err(errors) => {
            s.push_str("This policy does not load:\n");
            for e in errors {
                let _ = writeln!(s, "- {} {}", e.code, e.message);
            }
            return s.trim_end().to_string();
        }
    };
    // Worst case first: it is the line an author must not misread. The
    // node's own: a call's attempt lasts until its timeout fires.
    let window = policy::attempt_window(defs, node, &policy);
    let wc = policy::node_worst_case(defs, node, &policy);
    let worst = match (wc.count, wc.fails_by) {
        (Some(1), _) => "1 attempt, no retries".to_string(),
        (Some(n), Some(e)) => format!("{n} attempts over {}", to_words(e)),
        (Some(n), None) => format!("{n} attempts"),
        (None, Some(e)) => format!("attempts until {} after the first", to_words(e)),
        (None, None) => "unbounded: attempts never stop".to_string(),
    };
    match wc.retry_after_clause() {
        Some(more) => {
            let _ = writeln!(
                s,
                "**Worst case:** {worst} at the policy's own delays; {more}."
            );
        }
        None => {
            let _ = writeln!(s, "**Worst case:** {worst}.");
        }
    }
    let load = policy::delivery_load(defs, node);
    let timeout = load.as_ref().and_then(|l| l.timeout);
    let poisoned_first = !window.is_zero() && timeout.is_none_or(|t| window < t);
    if poisoned_first {
        let (m, every) = load.as_ref().map_or((0, Duration::ZERO), |l| {
            (
                l.policy.max_deliveries.unwrap_or(0),
                l.policy.delivery_interval,
            )
        });
        let by_timeout = match timeout {
            Some(t) => format!(
                "at the latest when its `<q:timeout>` fires ({}), and ",
                to_words(t)
            ),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "\nEach attempt fails {by_timeout}earlier when the outbox poisons its request: it is delivered at most {m} times, {} apart, so an attempt whose deliveries all fail (the dependency down) fails {} after it starts. The schedule counts that earliest failure (the most attempts, the soonest); the next delay runs from the failure, and `maxElapsed` is checked against the next attempt's start.",
            to_words(every),
            to_words(window)
        );
    } else if !window.is_zero() {
        let _ = writeln!(
            s,
            "\nEach attempt waits up to {} for its response (the call's `<q:timeout>`) before it fails; the next delay runs from that failure, and `maxElapsed` is checked against the next attempt's start.",
            to_words(window)
        );
    }
    schedule_table(&mut s, &policy, &wc, poisoned_first);
    if node.registered_task().is_some() {
        retry_after_text(&mut s, &policy);
    }
    if !policy.non_retryable_codes.is_empty() {
        let codes: Vec<String> = policy
            .non_retryable_codes
            .iter()
            .map(|c| format!("`{c}`"))
            .collect();
        let _ = writeln!(
            s,
            "\nNon-retryable (terminal at once): {}.",
            qflow_model::text::capped_list(&codes)
        );
    }
    load_text(&mut s, defs, node, &policy, window);
    if let Some(b) = policy::bound::request_bound(defs, process, node) {
        // A paragraph of its own, whatever the load text ended with.
        if !s.ends_with('\n') {
            s.push('\n');
        }
        let _ = writeln!(s, "\n{}", bound_text(&b));
    }
    s.trim_end().to_string()
}

/// The cross-layer bound in one line: the figure, then its layers.
fn bound_text(b: &policy::bound::RequestBound) -> String {
    let figure = match b.requests() {
        Some(n) => format!("up to {} remote requests", qflow_model::text::group(n)),
        None => "unbounded remote requests".to_string(),
    };
    let mut s = format!(
        "**Per business operation:** {figure} to the dependency at worst ({}).",
        b.formula()
    );
    if let Some(why) = b.unbounded_by() {
        let _ = write!(s, " Unbounded because {why}.");
    }
    s
}

/// The node's timetable: nominal times, and the jittered range beside them;
/// for a call, when each attempt times out.
fn schedule_table(s: &mut String, policy: &RetryPolicy, wc: &policy::WorstCase, poisoned: bool) {
    let (column, ends) = if poisoned {
        ("fails (poisoned)", "fails")
    } else {
        ("times out", "times out")
    };
    if policy.jitter != Jitter::None {
        let _ = writeln!(
            s,
            "\nJitter `{}`: each delay is drawn per instance, node and attempt (deterministic); times below are nominal, with the earliest jittered start beside them.",
            policy.jitter.as_str()
        );
    }
    let call = !wc.attempt_takes.is_zero();
    if call {
        let _ = writeln!(s, "\n| attempt | delay | since first attempt | {column} | with jitter (earliest – latest) |\n|---:|---:|---:|---:|---:|");
    } else {
        s.push_str("\n| attempt | delay | since first attempt | with jitter (earliest – latest) |\n|---:|---:|---:|---:|\n");
    }
    let schedule = &wc.attempts;
    for a in schedule {
        let jitter = if a.since_first_min == a.since_first_max {
            to_words(a.since_first)
        } else {
            format!(
                "{} – {}",
                to_words(a.since_first_min),
                to_words(a.since_first_max)
            )
        };
        let out = if call {
            format!(" {} |", to_words(a.fails_at))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} |{out} {} |",
            a.attempt,
            words_or_dash(a.delay),
            to_words(a.since_first),
            jitter
        );
    }
    if !wc.complete {
        let _ = writeln!(
            s,
            "| … | | | |{}\n\nOnly the first {} attempts are listed.",
            if call { " |" } else { "" },
            schedule.len()
        );
    } else if let Some(last) = schedule.last() {
        if call {
            let _ = writeln!(
                s,
                "\nThen terminal: the instance fails when attempt {} {ends}, {} after the first attempt.",
                last.attempt,
                to_words(last.fails_at)
            );
        } else {
            let _ = writeln!(
                s,
                "\nThen terminal: the instance fails after attempt {}.",
                last.attempt
            );
        }
    }
}

/// Which cap bounds a provider's retry-after (only a registered task's
/// handler reports a rate-limited failure).
fn retry_after_text(s: &mut String, policy: &RetryPolicy) {
    let cap = policy.retry_after_cap();
    let why = match cap.source {
        CapSource::MaxDelay => "by this policy's `maxDelay`",
        CapSource::Default => "by the default local maximum (no `maxDelay`; set one to change it)",
    };
    let _ = writeln!(
        s,
        "\nA rate-limited failure waits the provider's retry-after, capped at **{}** {why}.",
        to_words(cap.cap)
    );
}

/// What the policy costs a failing population, and a call's deliveries.
fn load_text(
    s: &mut String,
    defs: &Definitions,
    node: &Node,
    policy: &RetryPolicy,
    window: Duration,
) {
    s.push_str("\n**Load:** ");
    match policy.attempts_per_failing_instance(window) {
        Some(n) => {
            let _ = write!(s, "{n} attempts per failing instance");
        }
        None => s.push_str("attempts per failing instance are unbounded"),
    }
    match policy.scheduled_attempts(PROJECTION_INSTANCES, PROJECTION_WINDOW, window) {
        Some(total) => {
            // Load on the dependency is in remote requests: a call's attempt
            // is up to its deliveries.
            let per = match policy::delivery_load(defs, node) {
                Some(l) => l.per_attempt,
                None => Some(1),
            };
            let requests = match per {
                Some(p) => format!(
                    " ({} remote requests to the dependency)",
                    qflow_model::text::group(total.saturating_mul(p))
                ),
                None => " (remote requests unbounded: deliveries have no ceiling)".to_string(),
            };
            let _ = writeln!(
                s,
                "; {} instances failing together schedule up to {} attempts in their first day{requests}.",
                qflow_model::text::group(PROJECTION_INSTANCES),
                qflow_model::text::group(total)
            );
        }
        None => s.push_str(".\n"),
    }
    if let Some(load) = policy::delivery_load(defs, node) {
        s.push('\n');
        s.push_str(&delivery_text(
            &load,
            policy.attempts_per_failing_instance(window),
        ));
    }
}

fn delivery_text(load: &policy::DeliveryLoad, attempts: Option<u64>) -> String {
    let every = to_words(load.policy.delivery_interval);
    let curve = match (load.configured, load.policy.max_deliveries) {
        (false, _) => {
            format!("no q:channelConfig: the outbox retries one delivery forever, every {every}")
        }
        (true, Some(m)) => format!("maxDeliveries {m}, every {every}"),
        (true, None) => {
            format!("every {every}, no maxDeliveries (the outbox retries forever)")
        }
    };
    let mut s = format!("**Deliveries** on channel `{}` ({curve}): ", load.channel);
    match load.per_attempt {
        Some(n) => {
            let _ = write!(s, "up to {n} deliveries per attempt");
            if let Some(t) = load.timeout {
                let _ = write!(s, " (within the {} timeout)", to_words(t));
            }
            if let Some(a) = attempts {
                let _ = write!(
                    s,
                    ", up to {} per failing instance.",
                    qflow_model::text::group(n.saturating_mul(a))
                );
            } else {
                s.push('.');
            }
        }
        None => s.push_str("deliveries per attempt are unbounded."),
    }
    s
}
