//! A channel's delivery policy: the outbox's own curve for delivering one
//! request (`<q:channelConfig>`), parsed once into a [`ChannelPolicy`] that
//! the loader's rules, the runtime, the editor's hover and every load
//! projection read, and what one attempt of a channel call costs the outbox
//! under it.

use std::time::Duration;

use super::SpecError;
use crate::diagnostic::Code;
use crate::duration;
use crate::model::{Attr, ChannelConfig, Definitions, Node};

/// The failure codes qflow itself raises on channel calls (docs/runtime.md),
/// from the runtime's one table of its codes.
pub use qflow_instance::codes::CHANNEL_CALL_CODES as CHANNEL_FAILURE_CODES;

/// The failure codes the engine itself raises on a channel call, with what
/// each means.
pub use qflow_instance::codes::CHANNEL_CALL_MEANINGS as ENGINE_FAILURE_CODES;

/// The delay between deliveries of one request when `deliveryInterval` is not
/// written.
pub const DEFAULT_DELIVERY_INTERVAL: Duration = Duration::from_secs(1);

/// What the outbox does with one request of a channel: deliver it, and after
/// a failed delivery deliver it again `delivery_interval` later, until it is
/// delivered or, at `max_deliveries`, poisoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelPolicy {
    /// Deliveries of one request before the outbox poisons it; `None`: not
    /// configured, the outbox retries one delivery forever.
    pub max_deliveries: Option<u32>,
    /// The delay between deliveries ([`DEFAULT_DELIVERY_INTERVAL`] when not
    /// written).
    pub delivery_interval: Duration,
    /// The counterpart's own attempts per request it receives
    /// (`counterpartAttempts`: its retries downstream, counting the first);
    /// `None`: not declared. The outbox never sees them, so the runtime
    /// ignores them; the cross-layer bound ([`super::bound`]) multiplies
    /// each delivery by them, because the dependency behind the counterpart
    /// does not.
    pub counterpart_attempts: Option<u32>,
}

impl Default for ChannelPolicy {
    /// A channel without `<q:channelConfig>`: every second, forever.
    fn default() -> Self {
        ChannelPolicy {
            max_deliveries: None,
            delivery_interval: DEFAULT_DELIVERY_INTERVAL,
            counterpart_attempts: None,
        }
    }
}

impl ChannelPolicy {
    /// Validate a `<q:channelConfig>` as written. Every fault is reported,
    /// each with the code of the rule it breaks: QF008 for a `deliveryInterval`
    /// that is not a positive ISO-8601 duration, QF013 for a `maxDeliveries`
    /// or a `counterpartAttempts` that is not a positive integer (at most
    /// 4,294,967,295).
    pub fn from_config(config: &ChannelConfig) -> Result<ChannelPolicy, Vec<SpecError>> {
        let name = config
            .channel
            .as_ref()
            .map_or_else(|| "(no channel)".to_string(), |a| format!("`{}`", a.value));
        let mut errs = Vec::new();
        let delivery_interval = match &config.delivery_interval {
            None => Some(DEFAULT_DELIVERY_INTERVAL),
            Some(a) => interval(a, &format!("deliveryInterval of channel {name}"), &mut errs),
        };
        let max_deliveries = positive(
            &config.max_deliveries,
            "maxDeliveries",
            &name,
            "write how many deliveries of one request the outbox makes before it poisons the request, e.g. maxDeliveries=\"5\" (omit it to retry a delivery forever)",
            &mut errs,
        );
        let counterpart_attempts = positive(
            &config.counterpart_attempts,
            "counterpartAttempts",
            &name,
            "write how many attempts the counterpart itself makes downstream for each request it receives, counting the first, e.g. counterpartAttempts=\"3\" (omit it when it does not retry)",
            &mut errs,
        );
        match (delivery_interval, max_deliveries, counterpart_attempts) {
            (Some(delivery_interval), Some(max_deliveries), Some(counterpart_attempts))
                if errs.is_empty() =>
            {
                Ok(ChannelPolicy {
                    max_deliveries,
                    delivery_interval,
                    counterpart_attempts,
                })
            }
            _ => Err(errs),
        }
    }

    /// The policy of `channel` in a model: its `<q:channelConfig>`'s, or the
    /// default when it has none.
    pub fn of_channel(defs: &Definitions, channel: &str) -> Result<ChannelPolicy, Vec<SpecError>> {
        defs.channel_config(channel)
            .map_or(Ok(ChannelPolicy::default()), ChannelPolicy::from_config)
    }

    /// When the last delivery of one request starts, after the first
    /// (`None`: no ceiling, deliveries never stop).
    pub fn last_delivery(&self) -> Option<Duration> {
        let m = self.max_deliveries?;
        Some(self.delivery_interval.saturating_mul(m.saturating_sub(1)))
    }
}

/// An optional count that must be a positive integer that fits 32 bits
/// (QF013 otherwise): `Some(None)` when not written, `None` when faulty.
fn positive(
    attr: &Option<Attr>,
    what: &str,
    channel: &str,
    help: &str,
    errs: &mut Vec<SpecError>,
) -> Option<Option<u32>> {
    let Some(a) = attr else {
        return Some(None);
    };
    match a.value.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Some(Some(n)),
        _ => {
            errs.push(SpecError {
                code: Code::QF013,
                span: a.span,
                message: format!(
                    "{what} `{}` of channel {channel} is not a positive integer",
                    a.value.trim()
                ),
                label: "not a positive integer".into(),
                help: help.into(),
                related: Vec::new(),
            });
            None
        }
    }
}

/// A duration attribute that must be positive (QF008 otherwise).
fn interval(a: &Attr, what: &str, errs: &mut Vec<SpecError>) -> Option<Duration> {
    let span = if a.span.is_empty() {
        a.full_span
    } else {
        a.span
    };
    let (message, label, help) = match duration::parse(&a.value) {
        Ok(d) if !d.is_zero() => return Some(d),
        Ok(_) => (
            format!("{what} is zero: it must be a positive duration"),
            "zero duration".to_string(),
            "give it a positive ISO-8601 duration, e.g. PT30S, PT5M, P1D".to_string(),
        ),
        Err(e) => (
            format!("{what}: `{}` is not an ISO-8601 duration", a.value.trim()),
            e.message.clone(),
            format!(
                "{}; ISO-8601 durations look like PT30S, PT5M, PT1H30M, P2D",
                e.message
            ),
        ),
    };
    errs.push(SpecError {
        code: Code::QF008,
        span,
        message,
        label,
        help,
        related: Vec::new(),
    });
    None
}

/// What one attempt of a channel call costs the outbox: its request is
/// delivered again on the channel's own curve (`<q:channelConfig>`) until it
/// is answered, poisoned or the attempt's `<q:timeout>` ends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryLoad {
    pub channel: String,
    /// The channel's policy (the default when it is not configured, or its
    /// configuration does not load).
    pub policy: ChannelPolicy,
    /// Whether the model has a `<q:channelConfig>` for the channel.
    pub configured: bool,
    /// The route-less timeout of one attempt, if written and valid.
    pub timeout: Option<Duration>,
    /// Deliveries of one attempt's request at most (`None`: no bound can be
    /// derived: no ceiling and no timeout to bound it).
    pub per_attempt: Option<u64>,
}

/// The delivery load of one attempt of the channel call `node`.
pub fn delivery_load(defs: &Definitions, node: &Node) -> Option<DeliveryLoad> {
    let channel = node.channel_call()?;
    // The editor hovers models the loader refuses too: a configuration that
    // does not load projects as the default curve.
    let policy = ChannelPolicy::of_channel(defs, &channel.value).unwrap_or_default();
    let timeout = node
        .timeouts
        .first()
        .and_then(|t| t.duration.as_ref())
        .and_then(|a| duration::parse(&a.value).ok())
        .filter(|d| !d.is_zero());
    // Deliveries at 0, interval, 2×interval, … that start within the timeout.
    let by_time =
        timeout.map(|t| (t.as_nanos() / policy.delivery_interval.as_nanos().max(1)) as u64 + 1);
    let per_attempt = match (policy.max_deliveries.map(u64::from), by_time) {
        (Some(m), Some(t)) => Some(m.min(t)),
        (a, b) => a.or(b),
    };
    Some(DeliveryLoad {
        channel: channel.value.to_string(),
        policy,
        configured: defs.channel_config(&channel.value).is_some(),
        timeout,
        per_attempt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::attr;
    use crate::span::Span;

    fn config(max: Option<&str>, interval: Option<&str>) -> ChannelConfig {
        ChannelConfig {
            channel: attr("bank"),
            max_deliveries: max.and_then(attr),
            delivery_interval: interval.and_then(attr),
            counterpart_attempts: None,
            span: Span::new(0, 0),
            name_span: Span::new(0, 0),
        }
    }

    #[test]
    fn a_config_is_parsed_once_with_the_runtimes_defaults() {
        let p = ChannelPolicy::from_config(&config(Some("5"), Some("PT2S"))).unwrap();
        assert_eq!(p.max_deliveries, Some(5));
        assert_eq!(p.delivery_interval, Duration::from_secs(2));
        assert_eq!(p.last_delivery(), Some(Duration::from_secs(8)));
        // Unwritten: every second, forever.
        let d = ChannelPolicy::from_config(&config(None, None)).unwrap();
        assert_eq!(d, ChannelPolicy::default());
        assert_eq!(d.delivery_interval, DEFAULT_DELIVERY_INTERVAL);
        assert_eq!(d.last_delivery(), None);
    }

    #[test]
    fn every_fault_is_reported_with_its_rules_code() {
        let e = ChannelPolicy::from_config(&config(Some("0"), Some("2s"))).unwrap_err();
        let codes: Vec<Code> = e.iter().map(|e| e.code).collect();
        assert_eq!(codes, vec![Code::QF008, Code::QF013]);
        assert_eq!(
            e[1].message,
            "maxDeliveries `0` of channel `bank` is not a positive integer"
        );
        let zero = ChannelPolicy::from_config(&config(None, Some("PT0S"))).unwrap_err();
        assert_eq!(
            zero[0].message,
            "deliveryInterval of channel `bank` is zero: it must be a positive duration"
        );
        // The runtime counts deliveries in 32 bits: a ceiling past that is
        // refused at load time, not discovered when the process is deployed.
        assert!(ChannelPolicy::from_config(&config(Some("4294967295"), None)).is_ok());
        let big = ChannelPolicy::from_config(&config(Some("4294967296"), None)).unwrap_err();
        assert_eq!(big[0].code, Code::QF013);
    }
}
