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

/// The codes a handler (a command, an endpoint, a library closure) fails a
/// registered task with when its answer is not its own failure.
pub mod handler {
    use crate::event::{FailureClass, TaskOutcome};

    /// A command that exited non-zero without a JSON error on stdout.
    pub const EXIT: &str = "q.handler.exit";
    /// A command or endpoint gave no answer within the task's `timeout`, or an
    /// endpoint's connection dropped after the request was sent (unknown outcome).
    pub const TIMEOUT: &str = "q.handler.timeout";
    /// A command could not be started, or an endpoint could not be reached
    /// before anything was sent (transient: nothing happened).
    pub const UNREACHABLE: &str = "q.handler.unreachable";
    /// A successful answer that is not a JSON object of variables (permanent:
    /// the handler's contract is broken, a retry would not mend it).
    pub const OUTPUT: &str = "q.handler.output";
    /// The process running an attempt stopped (killed, crashed) before the
    /// attempt's outcome was recorded; the next process decides it as an
    /// unknown outcome instead of running the handler again.
    pub const INTERRUPTED: &str = "q.handler.interrupted";
    /// An endpoint answered 429 (rate-limited, with its `Retry-After`).
    pub const HTTP_429: &str = "q.handler.http-429";

    /// The code of a library handler that panicked (class `unknown-outcome`).
    pub const PANIC: &str = "q.handler.panic";
    /// The code of an attempt of a task no handler is registered for (class
    /// `permanent`: a configuration problem, which no retry repairs).
    pub const MISSING: &str = "q.handler.missing";

    /// Whether `code` is one a handler fails a registered task with (the
    /// constants above, `q.handler.http-NNN`, and the embedding API's
    /// `q.handler.panic` and `q.handler.missing`): a name `nonRetryableCodes`
    /// may list.
    pub fn is_handler_code(code: &str) -> bool {
        [EXIT, TIMEOUT, UNREACHABLE, OUTPUT, HTTP_429, PANIC, MISSING].contains(&code)
            || code
                .strip_prefix("q.handler.http-")
                .is_some_and(|n| n.len() == 3 && n.bytes().all(|b| b.is_ascii_digit()))
    }

    /// The attempt a dead process was running: its outcome is unknown.
    pub fn interrupted(task: &str, attempt: u32) -> TaskOutcome {
        TaskOutcome::Fail {
            code: INTERRUPTED.to_string(),
            class: FailureClass::UnknownOutcome,
            retry_after: None,
            message: Some(format!("attempt {attempt} of `{task}` was running when its process stopped, before its outcome was recorded: the effect may have happened, so it is not run again")),
        }
    }
}
