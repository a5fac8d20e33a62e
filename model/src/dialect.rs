//! The qflow dialect's vocabulary: which `q:` elements and attributes exist,
//! where each goes, what each means and what kind of value it takes.
//!
//! One table serves the loader's QF006 rule (an unknown `q:` name is refused),
//! the editor's completion and its hover, so the editor never suggests what the
//! loader refuses. The dialect is described for authors in `docs/dialect.md`.

/// A `q:` element of the dialect, for completion and hover.
#[derive(Debug, Clone, Copy)]
pub struct VocabElement {
    pub local: &'static str,
    /// Where it goes: `extensionElements` of a task, or of `definitions`.
    pub host: &'static str,
    pub doc: &'static str,
    /// Its (plain, unprefixed) attributes.
    pub attributes: &'static [VocabAttribute],
}

#[derive(Debug, Clone, Copy)]
pub struct VocabAttribute {
    pub name: &'static str,
    pub doc: &'static str,
    /// The value's kind, so an editor can complete or template it.
    pub value: ValueKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    Duration,
    DurationList,
    PositiveInteger,
    Number,
    OneOf(&'static [&'static str]),
    FailureCodes,
    Name,
}

const RETRY_ATTRS: &[VocabAttribute] = &[
    VocabAttribute { name: "maxAttempts", doc: "Every attempt, the first included: the retry budget.", value: ValueKind::PositiveInteger },
    VocabAttribute { name: "backoff", doc: "ISO-8601 delays before attempt 2, 3, …; the last one repeats.", value: ValueKind::DurationList },
    VocabAttribute { name: "initial", doc: "Curve form: the first delay.", value: ValueKind::Duration },
    VocabAttribute { name: "factor", doc: "Curve form: each delay is the previous one times this (at least 1).", value: ValueKind::Number },
    VocabAttribute { name: "maxDelay", doc: "Caps every delay, in both forms.", value: ValueKind::Duration },
    VocabAttribute { name: "maxElapsed", doc: "Retry expiry, measured from the first attempt.", value: ValueKind::Duration },
    VocabAttribute { name: "jitter", doc: "none | full | equal: spreads instances that failed together (deterministic per instance, node and attempt).", value: ValueKind::OneOf(&["none", "full", "equal"]) },
    VocabAttribute { name: "nonRetryableCodes", doc: "Failure codes that end the task at once, space separated.", value: ValueKind::FailureCodes },
];

const TIMEOUT_ATTRS: &[VocabAttribute] = &[VocabAttribute {
    name: "duration",
    doc: "How long one attempt of the channel call may wait for its response.",
    value: ValueKind::Duration,
}];

const CHANNEL_CONFIG_ATTRS: &[VocabAttribute] = &[
    VocabAttribute {
        name: "channel",
        doc: "The channel this delivery curve applies to.",
        value: ValueKind::Name,
    },
    VocabAttribute {
        name: "maxDeliveries",
        doc: "Deliveries of one request before the outbox poisons it (default: forever).",
        value: ValueKind::PositiveInteger,
    },
    VocabAttribute {
        name: "deliveryInterval",
        doc: "The outbox's delay between deliveries of one request.",
        value: ValueKind::Duration,
    },
    VocabAttribute {
        name: "counterpartAttempts",
        doc: "The counterpart's own attempts per request it receives (its retries downstream, counting the first): the cross-layer bound multiplies each delivery by it (default 1).",
        value: ValueKind::PositiveInteger,
    },
];

/// The `q:` elements of the dialect (docs/dialect.md).
pub const Q_ELEMENTS: &[VocabElement] = &[
    VocabElement { local: "retry", host: "task", doc: "The task's retry policy: how many attempts, how far apart, which failures end it at once.", attributes: RETRY_ATTRS },
    VocabElement { local: "timeout", host: "task", doc: "The route-less timeout of a channel call: it fails the attempt with `q.timeout`.", attributes: TIMEOUT_ATTRS },
    VocabElement { local: "channelConfig", host: "definitions", doc: "The outbox's own per-delivery curve for one channel.", attributes: CHANNEL_CONFIG_ATTRS },
];

/// The `q:` attributes on a `serviceTask` (docs/dialect.md).
pub const Q_TASK_ATTRIBUTES: &[VocabAttribute] = &[
    VocabAttribute { name: "task", doc: "A registered task: an in-process handler registered under this name runs it.", value: ValueKind::Name },
    VocabAttribute { name: "channel", doc: "A channel call: a request goes out through the outbox and the task waits for the correlated response.", value: ValueKind::Name },
    VocabAttribute { name: "operation", doc: "The operation of a channel call.", value: ValueKind::Name },
];

/// The failure codes the engine itself raises on a channel call.
pub use crate::policy::channel::ENGINE_FAILURE_CODES;
