//! The one table of failure codes the runtime itself raises. A handler's
//! codes are its own; these are qflow's, and every place that names one
//! (the decisions, the editor's completion and hover, the console, the
//! docs) reads it from here.

/// A channel call's route-less `<q:timeout>` fired before the response came.
pub const TIMEOUT: &str = "q.timeout";
/// The outbox gave up delivering a request (its channel's `maxDeliveries`).
pub const POISONED: &str = "q.delivery.poisoned";
/// An exclusive gateway found no condition that holds and has no default flow.
pub const GATEWAY_NO_MATCH: &str = "q.gateway.no-match";
/// An unknown outcome reconciled without the code that made it unknown.
pub const UNKNOWN_OUTCOME: &str = "q.unknown-outcome";
/// The instance's stored snapshot cannot be decided on: its bytes are not a
/// snapshot, or its frontier holds an entry that is not a token (or names a
/// node the deployment does not have). The bytes are kept as they are.
pub const SNAPSHOT_DAMAGED: &str = "q.snapshot.damaged";

const TIMEOUT_MEANING: &str = "the route-less <q:timeout> fired before the response came";
const POISONED_MEANING: &str =
    "the outbox gave up delivering the request (its channel's maxDeliveries)";

/// The codes a channel call's attempt fails with.
pub const CHANNEL_CALL_CODES: [&str; 2] = [TIMEOUT, POISONED];

/// The same, with what each means (for completion and hover).
pub const CHANNEL_CALL_MEANINGS: &[(&str, &str)] =
    &[(TIMEOUT, TIMEOUT_MEANING), (POISONED, POISONED_MEANING)];

/// One runtime failure code and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeCode {
    pub code: &'static str,
    pub meaning: &'static str,
    /// Raised on a channel call's attempt (a `<q:retry>` on the call may
    /// retry it, or name it in `nonRetryable`).
    pub channel_call: bool,
}

/// Every failure code the runtime raises.
pub const RUNTIME_CODES: [RuntimeCode; 5] = [
    RuntimeCode {
        code: TIMEOUT,
        meaning: TIMEOUT_MEANING,
        channel_call: true,
    },
    RuntimeCode {
        code: POISONED,
        meaning: POISONED_MEANING,
        channel_call: true,
    },
    RuntimeCode {
        code: GATEWAY_NO_MATCH,
        meaning: "no condition of the exclusive gateway holds and it has no default flow",
        channel_call: false,
    },
    RuntimeCode {
        code: UNKNOWN_OUTCOME,
        meaning: "an unknown outcome was reconciled as failed without its own code",
        channel_call: false,
    },
    RuntimeCode {
        code: SNAPSHOT_DAMAGED,
        meaning:
            "the stored snapshot or its frontier cannot be decoded; the bytes are kept as they are",
        channel_call: false,
    },
];

/// The codes a channel call's attempt can fail with.
pub fn channel_call_codes() -> impl Iterator<Item = &'static RuntimeCode> {
    RUNTIME_CODES.iter().filter(|c| c.channel_call)
}

/// The entry for `code`, if the runtime raises it.
pub fn runtime_code(code: &str) -> Option<&'static RuntimeCode> {
    RUNTIME_CODES.iter().find(|c| c.code == code)
}
