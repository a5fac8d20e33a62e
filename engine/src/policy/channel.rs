//! A channel's delivery policy: the outbox's own curve for delivering one
//! request (`<q:channelConfig>`), and what one attempt of a channel call costs
//! the outbox under it.

use crate::model::{Definitions, Node};

/// The failure codes qflow itself raises on channel calls (docs/runtime.md).
pub const CHANNEL_FAILURE_CODES: [&str; 2] = ["q.timeout", "q.delivery.poisoned"];

/// The failure codes the engine itself raises on a channel call.
pub const ENGINE_FAILURE_CODES: &[(&str, &str)] = &[
    (
        "q.timeout",
        "the route-less <q:timeout> fired before the response came",
    ),
    (
        "q.delivery.poisoned",
        "the outbox gave up delivering the request (its channel's maxDeliveries)",
    ),
];

/// What one attempt of a channel call costs the outbox: its request is
/// delivered again on the channel's own curve (`<q:channelConfig>`) until it
/// is answered, poisoned or the attempt's `<q:timeout>` ends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryLoad {
    pub channel: String,
    /// `maxDeliveries` (`None`: not configured, the outbox retries forever).
    pub max_deliveries: Option<u64>,
    pub interval: Option<std::time::Duration>,
    /// The route-less timeout of one attempt, if written and valid.
    pub timeout: Option<std::time::Duration>,
    /// Deliveries of one attempt's request at most (`None`: no bound can be
    /// derived: no ceiling and no interval or timeout to bound it).
    pub per_attempt: Option<u64>,
}

/// The delivery load of one attempt of the channel call `node`.
pub fn delivery_load(defs: &Definitions, node: &Node) -> Option<DeliveryLoad> {
    let channel = node.channel_call()?;
    let config = defs.channel_config(&channel.value);
    let max_deliveries = config
        .and_then(|c| c.max_deliveries.as_ref())
        .and_then(|a| a.value.trim().parse::<u64>().ok())
        .filter(|n| *n > 0);
    let interval = config
        .and_then(|c| c.delivery_interval.as_ref())
        .and_then(|a| crate::duration::parse(a.value.trim()).ok())
        .filter(|d| !d.is_zero());
    let timeout = node
        .timeouts
        .first()
        .and_then(|t| t.duration.as_ref())
        .and_then(|a| crate::duration::parse(a.value.trim()).ok())
        .filter(|d| !d.is_zero());
    // Deliveries at 0, interval, 2×interval, … that start within the timeout.
    let by_time = match (interval, timeout) {
        (Some(i), Some(t)) => Some((t.as_nanos() / i.as_nanos()) as u64 + 1),
        _ => None,
    };
    let per_attempt = match (max_deliveries, by_time) {
        (Some(m), Some(t)) => Some(m.min(t)),
        (a, b) => a.or(b),
    };
    Some(DeliveryLoad {
        channel: channel.value.clone(),
        max_deliveries,
        interval,
        timeout,
        per_attempt,
    })
}
