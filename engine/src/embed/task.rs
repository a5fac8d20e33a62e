//! A registered task's attempt as its handler sees it, what the handler
//! may answer, and how that answer (or a panic) becomes the runtime's
//! outcome.

pub use qflow_instance::codes::handler::{MISSING, PANIC};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use serde_json::Value;

use crate::instance::event::{FailureClass, TaskOutcome};

/// An instance's variables.
pub type Variables = BTreeMap<String, Value>;

/// One attempt of a registered task, as its handler sees it.
#[derive(Debug, Clone, Copy)]
pub struct Task<'a> {
    /// The instance's id.
    pub instance: &'a str,
    /// The BPMN id of the task's node.
    pub node: &'a str,
    /// The `q:task` name.
    pub name: &'a str,
    /// This attempt's number, from 1 (it restarts where the node's budget
    /// does: a loop entering the node again, a migration's reset budget).
    pub attempt: u32,
    /// This attempt's idempotency key (see [`Task::idempotency_key`]).
    pub key: &'a str,
    /// The instance's variables, as persisted.
    pub variables: &'a Variables,
}

impl Task<'_> {
    /// One variable, if set.
    pub fn var(&self, name: &str) -> Option<&Value> {
        self.variables.get(name)
    }

    /// A key that names this attempt and no other (`instance/node/N`):
    /// what a handler sends to a provider that deduplicates. `N` is the
    /// attempt's number until that restarts; it comes from the store's key
    /// ledger, so no two attempts of a node ever share a key.
    pub fn idempotency_key(&self) -> String {
        self.key.to_string()
    }
}

/// Why an attempt did not succeed.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskError {
    /// A BPMN error: routes to the task's error boundary for `code` (or a
    /// catch-all one); without one, the instance fails.
    Bpmn { code: String },
    /// The attempt failed; the task's `<q:retry>` decides what follows
    /// from the class.
    Failure {
        code: String,
        class: FailureClass,
        /// The provider's delay before the next attempt (rate-limited only;
        /// capped by the policy's `maxDelay`).
        retry_after: Option<Duration>,
        message: Option<String>,
    },
}

impl TaskError {
    /// A BPMN error with this code.
    pub fn bpmn(code: impl Into<String>) -> TaskError {
        TaskError::Bpmn { code: code.into() }
    }

    fn failure(code: impl Into<String>, class: FailureClass) -> TaskError {
        TaskError::Failure {
            code: code.into(),
            class,
            retry_after: None,
            message: None,
        }
    }

    /// Worth another attempt later (a provider outage): retried per policy.
    pub fn transient(code: impl Into<String>) -> TaskError {
        TaskError::failure(code, FailureClass::Transient)
    }

    /// No retry can repair it (invalid input, configuration): terminal at once.
    pub fn permanent(code: impl Into<String>) -> TaskError {
        TaskError::failure(code, FailureClass::Permanent)
    }

    /// The provider said when to come back: that delay is the next one
    /// (capped by the policy's `maxDelay`).
    pub fn rate_limited(code: impl Into<String>, retry_after: Option<Duration>) -> TaskError {
        TaskError::Failure {
            code: code.into(),
            class: FailureClass::RateLimited,
            retry_after,
            message: None,
        }
    }

    /// The effect may have happened: never retried blindly; the node waits
    /// for a reconciliation ([`Engine::resolve`]).
    pub fn unknown_outcome(code: impl Into<String>) -> TaskError {
        TaskError::failure(code, FailureClass::UnknownOutcome)
    }

    /// The same failure, with a message for the history and the operator.
    pub fn with_message(mut self, text: impl Into<String>) -> TaskError {
        if let TaskError::Failure { message, .. } = &mut self {
            *message = Some(text.into());
        }
        self
    }
}

/// What a handler returns: a JSON object of variables to merge into the
/// instance's (`Value::Null` merges nothing), or why it did not succeed.
pub type TaskResult = Result<Value, TaskError>;

pub(super) type TaskFn = dyn Fn(&Task<'_>) -> TaskResult + Send + Sync;

/// A handler's result as the runtime's outcome; a panic is `q.handler.panic`.
pub(super) fn run_handler(handler: &TaskFn, task: &Task<'_>) -> TaskOutcome {
    match catch_unwind(AssertUnwindSafe(|| handler(task))) {
        Ok(Ok(Value::Null)) => TaskOutcome::Ok(BTreeMap::new()),
        Ok(Ok(Value::Object(vars))) => TaskOutcome::Ok(vars.into_iter().collect()),
        Ok(Ok(other)) => TaskOutcome::Fail {
            code: "q.handler.output".into(),
            class: FailureClass::Permanent,
            retry_after: None,
            message: Some(format!(
                "the handler of `{}` returned {other}, not a JSON object of variables",
                task.name
            )),
        },
        Ok(Err(TaskError::Bpmn { code })) => TaskOutcome::BpmnError { code },
        Ok(Err(TaskError::Failure {
            code,
            class,
            retry_after,
            message,
        })) => TaskOutcome::Fail {
            code,
            class,
            retry_after,
            message,
        },
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-text panic payload".into());
            TaskOutcome::Fail {
                code: PANIC.into(),
                class: FailureClass::UnknownOutcome,
                retry_after: None,
                message: Some(format!("the handler of `{}` panicked: {what}", task.name)),
            }
        }
    }
}
