//! The cross-layer bound: how many remote requests one business operation
//! can cost the dependency behind one call when every layer retries.
//!
//! retries-multiply.txt: "Three attempts at one layer can become nine or 27
//! remote calls when layers multiply." A call's layers multiply: its
//! `<q:retry>` makes up to N attempts, the outbox delivers each attempt's
//! request up to D times (its channel's curve, within the attempt's
//! timeout), and a counterpart that retries on its own side
//! (`counterpartAttempts` on the channel's `<q:channelConfig>`) turns every
//! delivery into up to C requests downstream. N × D × C is what one
//! operation can cost when the dependency stays down; a registered task's
//! handler runs once per attempt, so its figure is its attempts.
//!
//! Computed once here, from the same worst case ([`super::node_worst_case`])
//! and delivery load ([`super::delivery_load`]) every face shows; the
//! hover, `qflow project` and the load-time rule QF045 (above the ceiling
//! a `qflow.toml` sets, [`DEFAULT_CEILING`] otherwise) only present it.

use crate::model::{Definitions, Node, Process};

use super::RetryPolicy;

/// The worst-case remote requests per business operation above which a
/// call is reported (QF045) when no `qflow.toml` sets `[bounds]
/// requests-per-operation`. The seed's three layers of three attempts make
/// 27; a call that can cost one operation more than 100 requests multiplies
/// an outage into load, whatever its layers are.
pub const DEFAULT_CEILING: u64 = 100;

/// The layers of one call, each at its worst, and their product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestBound {
    /// The call's attempts at most: its `<q:retry>`'s worst case; 1 without
    /// one, or when it never fires (QF022). `None`: unbounded.
    pub attempts: Option<u64>,
    /// Remote requests one attempt sends at most: 1 for a registered task
    /// (its handler runs once), a channel call's deliveries per attempt.
    /// `None`: unbounded (no `maxDeliveries`, and no `<q:timeout>` or
    /// interrupting timer boundary to stop them).
    pub deliveries: Option<u64>,
    /// The counterpart's own attempts per request it receives
    /// (`counterpartAttempts`; 1 when the channel declares none).
    pub counterpart: u64,
    /// Whether a channel declared [`RequestBound::counterpart`].
    pub counterpart_declared: bool,
    /// Whether the call is a channel call (a registered task has no
    /// deliveries to show).
    pub is_call: bool,
}

impl RequestBound {
    /// The worst-case remote requests of one business operation (`None`:
    /// unbounded).
    pub fn requests(&self) -> Option<u64> {
        Some(
            self.attempts?
                .saturating_mul(self.deliveries?)
                .saturating_mul(self.counterpart),
        )
    }

    /// Whether the figure is above `ceiling` (an unbounded one always is).
    pub fn exceeds(&self, ceiling: u64) -> bool {
        self.requests().is_none_or(|r| r > ceiling)
    }

    /// The most attempts that keep the figure within `ceiling` with the
    /// other layers as they are (`None`: no attempt count does, because
    /// one attempt alone is over it or its deliveries are unbounded).
    pub fn attempts_within(&self, ceiling: u64) -> Option<u64> {
        let per_attempt = self.deliveries?.saturating_mul(self.counterpart).max(1);
        Some(ceiling / per_attempt).filter(|n| *n >= 1)
    }

    /// The product in words, each layer named:
    /// `6 attempts × 5 deliveries × 3 counterpart attempts = 90`; a
    /// registered task's `6 attempts = 6`.
    pub fn formula(&self) -> String {
        let mut parts = vec![count(self.attempts, "attempt", "attempts")];
        if self.is_call {
            parts.push(count(self.deliveries, "delivery", "deliveries"));
        }
        if self.counterpart_declared {
            parts.push(count(
                Some(self.counterpart),
                "counterpart attempt",
                "counterpart attempts",
            ));
        }
        let total = self
            .requests()
            .map_or_else(|| "unbounded".to_string(), crate::text::group);
        format!("{} = {total}", parts.join(" × "))
    }

    /// The layer that makes the figure unbounded, in words (`None`: it is
    /// bounded).
    pub fn unbounded_by(&self) -> Option<&'static str> {
        if self.attempts.is_none() {
            Some("its attempts never stop")
        } else if self.deliveries.is_none() {
            Some("its request is delivered again forever (no maxDeliveries, and no <q:timeout> or timer boundary ends an attempt)")
        } else {
            None
        }
    }
}

fn count(n: Option<u64>, one: &str, many: &str) -> String {
    match n {
        Some(1) => format!("1 {one}"),
        Some(n) => format!("{} {many}", crate::text::group(n)),
        None => format!("unbounded {many}"),
    }
}

/// The bound of `node` in `process`: `None` when it is neither a registered
/// task nor a channel call, or its `<q:retry>` does not load (the loader
/// reports that instead).
pub fn request_bound(defs: &Definitions, process: &Process, node: &Node) -> Option<RequestBound> {
    let is_call = node.channel_call().is_some();
    if !is_call && node.registered_task().is_none() {
        return None;
    }
    let attempts = match node.retries.first() {
        None => Some(1),
        // A policy beside a routed timer boundary never fires (QF022).
        Some(_) if process.routed_timer_boundary(node).is_some() => Some(1),
        Some(spec) => {
            let policy = RetryPolicy::from_spec(spec).ok()?;
            super::node_worst_case(defs, node, &policy).count
        }
    };
    let load = super::delivery_load(defs, node);
    let (deliveries, counterpart) = match &load {
        Some(l) => (
            l.per_attempt
                .or_else(|| by_boundary(process, node, &l.policy)),
            l.policy.counterpart_attempts,
        ),
        None => (Some(1), None),
    };
    Some(RequestBound {
        attempts,
        deliveries,
        counterpart: counterpart.map_or(1, u64::from),
        counterpart_declared: counterpart.is_some(),
        is_call,
    })
}

/// Deliveries that fit before an interrupting timer boundary ends a call
/// timed by one rather than by a `<q:timeout>`: the boundary abandons the
/// request still undelivered, so none is sent after it fires.
fn by_boundary(process: &Process, node: &Node, channel: &super::ChannelPolicy) -> Option<u64> {
    use crate::model::{EventTrigger, NodeKind};
    let fires = process
        .boundaries(node.id())
        .filter_map(|b| match &b.kind {
            NodeKind::BoundaryEvent {
                interrupting: true,
                trigger: EventTrigger::Timer(t),
                ..
            } => t
                .time_duration
                .as_ref()
                .and_then(|a| crate::duration::parse(a.value.trim()).ok()),
            _ => None,
        })
        .min()?;
    let every = channel.delivery_interval.as_nanos().max(1);
    Some((fires.as_nanos() / every) as u64 + 1)
}

/// One call's bound, named: what `qflow project` lists for every call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallBound {
    pub process_id: String,
    pub node: String,
    /// What it calls: a registered task's name, or `channel.operation`.
    pub dependency: String,
    pub bound: RequestBound,
}

/// The bound of every registered task and channel call of the model's
/// executable processes, in document order.
pub fn of_model(defs: &Definitions) -> Vec<CallBound> {
    let mut out = Vec::new();
    for p in defs.executable_processes() {
        let process_id = p.id.as_ref().map_or("process", |a| a.value.as_str());
        for node in &p.nodes {
            let (Some(bound), Some(dependency)) = (request_bound(defs, p, node), dependency(node))
            else {
                continue;
            };
            out.push(CallBound {
                process_id: process_id.to_string(),
                node: node.id().to_string(),
                dependency,
                bound,
            });
        }
    }
    out
}

/// What a call calls, as the projection and the simulation name it: a
/// registered task's name, or `channel.operation` (`channel` without one).
pub fn dependency(node: &Node) -> Option<String> {
    match (node.registered_task(), node.channel_call()) {
        (Some(t), _) => Some(t.value.to_string()),
        (None, Some(c)) => Some(match node.task_attrs().and_then(|t| t.operation.as_ref()) {
            Some(op) => format!("{}.{}", c.value, op.value),
            None => c.value.to_string(),
        }),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(channel_config: &str, task: &str) -> Definitions {
        let src = format!(
            r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  {channel_config}
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    {task}
  </bpmn:process>
</bpmn:definitions>"#
        );
        crate::loader::analyze(&src).definitions.unwrap()
    }

    fn bound(defs: &Definitions) -> RequestBound {
        let p = &defs.processes[0];
        let node = p.nodes.iter().find(|n| n.id() == "t").unwrap();
        request_bound(defs, p, node).unwrap()
    }

    const CALL: &str = r#"<bpmn:serviceTask id="t" q:channel="bank"><bpmn:extensionElements>
      <q:retry maxAttempts="3" backoff="PT10S" jitter="none"/><q:timeout duration="PT30S"/>
    </bpmn:extensionElements></bpmn:serviceTask>"#;

    /// The seed's layers: three attempts, three deliveries, a counterpart
    /// that tries three times itself: 27.
    #[test]
    fn three_layers_of_three_make_27() {
        let defs = model(
            r#"<q:channelConfig channel="bank" maxDeliveries="3" deliveryInterval="PT2S" counterpartAttempts="3"/>"#,
            CALL,
        );
        let b = bound(&defs);
        assert_eq!(
            (b.attempts, b.deliveries, b.counterpart),
            (Some(3), Some(3), 3)
        );
        assert_eq!(b.requests(), Some(27));
        assert_eq!(
            b.formula(),
            "3 attempts × 3 deliveries × 3 counterpart attempts = 27"
        );
        assert!(!b.exceeds(27));
        assert!(b.exceeds(26));
        assert_eq!(b.attempts_within(20), Some(2));
        assert_eq!(b.attempts_within(8), None);
    }

    #[test]
    fn without_a_ceiling_the_timeout_bounds_the_deliveries() {
        // Every second within 30 s: 31 deliveries an attempt.
        let b = bound(&model("", CALL));
        assert_eq!(b.requests(), Some(93));
        assert_eq!(b.formula(), "3 attempts × 31 deliveries = 93");
        assert!(!b.counterpart_declared);
    }

    #[test]
    fn a_registered_task_costs_its_attempts_and_a_call_without_retry_its_deliveries() {
        let task = r#"<bpmn:serviceTask id="t" q:task="payments.charge"><bpmn:extensionElements>
          <q:retry maxAttempts="6" backoff="PT1M PT5M" jitter="none"/></bpmn:extensionElements></bpmn:serviceTask>"#;
        let b = bound(&model("", task));
        assert_eq!(b.formula(), "6 attempts = 6");
        let once = r#"<bpmn:serviceTask id="t" q:channel="bank"><bpmn:extensionElements>
          <q:timeout duration="PT10S"/></bpmn:extensionElements></bpmn:serviceTask>"#;
        let b = bound(&model(
            r#"<q:channelConfig channel="bank" maxDeliveries="4" counterpartAttempts="5"/>"#,
            once,
        ));
        assert_eq!(
            b.formula(),
            "1 attempt × 4 deliveries × 5 counterpart attempts = 20"
        );
    }

    #[test]
    fn a_timer_boundary_ends_the_deliveries_and_without_one_they_are_unbounded() {
        // The boundary abandons the undelivered request after a minute:
        // 61 deliveries, one a second.
        let bounded_by_boundary = r#"<bpmn:serviceTask id="t" q:channel="bank"/>
          <bpmn:boundaryEvent id="late" attachedToRef="t"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>"#;
        let b = bound(&model("", bounded_by_boundary));
        assert_eq!(b.formula(), "1 attempt × 61 deliveries = 61");
        let b = bound(&model("", r#"<bpmn:serviceTask id="t" q:channel="bank"/>"#));
        assert_eq!(b.requests(), None);
        assert!(b.exceeds(u64::MAX));
        assert_eq!(b.attempts_within(100), None);
        assert!(b.unbounded_by().unwrap().contains("maxDeliveries"));
        assert_eq!(b.formula(), "1 attempt × unbounded deliveries = unbounded");
    }
}
