//! What happens to an instance: the events a decision takes in, and the
//! outcomes of the effects around it (a handler's attempt, a delivery, a
//! counterpart's answer, an operator's reconciliation).
//!
//! A scenario scripts these outcomes for a local run; a server would receive
//! them from real handlers and counterparts. The decisions read them only
//! through [`Event`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::rows::OutboxRow;

/// How a failed attempt is classified: what the retry policy may do next
/// (docs/runtime.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    Transient,
    Permanent,
    RateLimited,
    UnknownOutcome,
    /// Not a failure of the attempt but of a named condition (reference data
    /// not active yet, say): the attempt is re-run at the time the handler
    /// named, with the same attempt number, burning no budget
    /// (docs/handlers.md, "A deferred failure").
    Deferred,
}

impl FailureClass {
    pub const ALL: [FailureClass; 5] = [
        FailureClass::Transient,
        FailureClass::Permanent,
        FailureClass::RateLimited,
        FailureClass::UnknownOutcome,
        FailureClass::Deferred,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Transient => "transient",
            FailureClass::Permanent => "permanent",
            FailureClass::RateLimited => "rate-limited",
            FailureClass::UnknownOutcome => "unknown-outcome",
            FailureClass::Deferred => "deferred",
        }
    }

    pub fn parse(s: &str) -> Option<FailureClass> {
        FailureClass::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// What the retry policy does with a failure of this class, in a few
    /// words (the console's picker, help texts).
    pub fn meaning(self) -> &'static str {
        match self {
            FailureClass::Transient => "retry per policy",
            FailureClass::Permanent => "terminal at once",
            FailureClass::RateLimited => "retry after the provider's delay",
            FailureClass::UnknownOutcome => "may have happened: reconcile",
            FailureClass::Deferred => "re-run when its condition is due, no budget",
        }
    }

    /// Whether a failure of this class names when to run again (a
    /// rate-limited provider's retry-after, a deferred failure's time).
    pub fn takes_a_delay(self) -> bool {
        matches!(self, FailureClass::RateLimited | FailureClass::Deferred)
    }
}

/// What a registered task's handler returns for one attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutcome {
    /// Success; the variables are merged into the instance's.
    Ok(BTreeMap<String, Value>),
    Fail {
        code: String,
        class: FailureClass,
        /// The provider's retry-after (rate-limited only).
        retry_after: Option<Duration>,
        message: Option<String>,
    },
    /// A BPMN error: routes to a matching error boundary.
    BpmnError { code: String },
}

/// A counterpart's behaviour for one request (docs/run.md, channel calls).
#[derive(Debug, Clone, PartialEq)]
pub enum ChannelOutcome {
    Respond {
        body: Value,
        after: Option<Duration>,
    },
    Silent,
}

/// The outbox's luck with one delivery (docs/run.md, channel calls).
#[derive(Debug, Clone, PartialEq)]
pub enum DeliveryOutcome {
    Ok,
    /// Not delivered: tried again on the channel's curve, with the same key.
    Fail(String),
    /// The counterpart refused the request itself (an HTTP 4xx other than
    /// 408 and 429): sending it again cannot mend it, so it is poisoned at
    /// once. The text keeps the status and a bounded summary of the body.
    Rejected(String),
    /// Not delivered, and the counterpart said when to come back (429 or
    /// 503 with `Retry-After`): the next delivery waits that long (at least
    /// the channel's interval, at most the cap of [`DELIVERY_RETRY_AFTER_CAP`]
    /// or the call's `maxDelay`).
    Later(String, Duration),
}

/// The longest a counterpart's `Retry-After` delays a delivery of a call
/// without a retry policy (with one, its `maxDelay`, as for tasks).
pub const DELIVERY_RETRY_AFTER_CAP: Duration = Duration::from_secs(3600);

/// An operator's reconciliation of an unknown outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resolution {
    /// The effect happened: the task completes.
    Succeeded,
    /// The effect did not happen and must not be retried: the fatal path.
    Failed,
    /// The effect did not happen and a retry is safe: the next attempt runs
    /// now, within the policy's budget.
    Retry,
}

impl Resolution {
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Succeeded => "succeeded",
            Resolution::Failed => "failed",
            Resolution::Retry => "retry",
        }
    }

    pub fn parse(s: &str) -> Option<Resolution> {
        [Resolution::Succeeded, Resolution::Failed, Resolution::Retry]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

/// Something that arrives from outside, after the fact.
#[derive(Debug, Clone, PartialEq)]
pub enum ExternalEvent {
    /// A late queue delivery asking to run the task at this node again.
    Redeliver { node: String },
    /// Reconcile the unknown outcome of this node.
    Resolve {
        node: String,
        resolution: Resolution,
        variables: BTreeMap<String, Value>,
    },
}

impl ExternalEvent {
    pub fn node(&self) -> &str {
        match self {
            ExternalEvent::Redeliver { node } | ExternalEvent::Resolve { node, .. } => node,
        }
    }
}

/// One thing that happens to an instance.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Execute the ready token at a non-task node.
    Advance { node: String },
    /// A registered task's handler ran once; `timer` is the retry timer that
    /// drove this attempt (`None` for the first attempt, or a reconciled retry).
    Attempt {
        node: String,
        outcome: TaskOutcome,
        timer: Option<i64>,
    },
    /// A non-retry timer came due.
    TimerDue { timer: i64 },
    /// A counterpart's response, matched to this node by its correlation.
    Response {
        node: String,
        /// The idempotency key of the request it answers.
        request: String,
        body: Value,
    },
    /// The outbox gave up on a request of this node: a prompt to look, never
    /// a fact. `poisoned` is what the re-read under the claim found: a
    /// poisoned row for exactly this instance and node.
    PoisonWake { node: String, poisoned: bool },
    /// The dispatcher tried to deliver one outbox row; for a delivered
    /// request, what the counterpart will do with it.
    Delivery {
        row: OutboxRow,
        outcome: DeliveryOutcome,
        counterpart: Option<ChannelOutcome>,
    },
    /// Something from outside: a late delivery, a reconciliation.
    External {
        event: ExternalEvent,
        /// The scenario's `events` index, or `None` (e.g. `--resolve`).
        index: Option<usize>,
    },
}

impl Event {
    /// The event's name in an `ignored` line, and the node it is about.
    pub fn name_and_node(&self) -> (&'static str, Option<&str>) {
        match self {
            Event::Advance { node } => ("advance", Some(node)),
            Event::Attempt { node, .. } => ("attempt", Some(node)),
            Event::TimerDue { .. } => ("timer", None),
            Event::Response { node, .. } => ("response", Some(node)),
            Event::PoisonWake { node, .. } => ("poison-wake", Some(node)),
            Event::Delivery { row, .. } => ("delivery", Some(&row.node)),
            Event::External { event, .. } => (
                match event {
                    ExternalEvent::Redeliver { .. } => "redeliver",
                    ExternalEvent::Resolve { .. } => "resolve",
                },
                Some(event.node()),
            ),
        }
    }
}
