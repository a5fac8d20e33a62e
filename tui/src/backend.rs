//! What the console asks of whatever holds the instance.
//!
//! The [`crate::app::App`] turns keys into [`Command`]s; a [`Backend`] carries
//! them out (on the engine's local driver, or a test double) and hands back a
//! fresh [`View`] read from the store. The console never computes a decision.

use crate::view::{DeploymentRowView, FleetView, InstanceRowView, View};

/// How a failed attempt is classified: the engine's classes themselves
/// (docs/runtime.md), never a copy of them.
pub use qflow_engine::runtime::scenario::FailureClass as FailClass;

/// An operator's reconciliation of an unknown outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    Succeeded,
    Failed,
    Retry,
}

impl Resolution {
    pub const ALL: [Resolution; 3] = [Resolution::Succeeded, Resolution::Failed, Resolution::Retry];

    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Succeeded => "succeeded",
            Resolution::Failed => "failed",
            Resolution::Retry => "retry",
        }
    }

    pub fn meaning(self) -> &'static str {
        match self {
            Resolution::Succeeded => "the effect happened: complete the task",
            Resolution::Failed => "it did not, and must not be retried: fail",
            Resolution::Retry => "it did not, a retry is safe: next attempt",
        }
    }
}

/// Which attempt a counterpart response answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseTarget {
    /// The live (latest) attempt.
    Live,
    /// A superseded attempt, by its 1-based number.
    Attempt(u32),
}

/// One thing the console asks the backend to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Take the next decision (skipping virtual time to the next due item
    /// when nothing else is pending).
    Step,
    /// Move virtual time forward, deciding what falls due on the way.
    Advance { ms: i64 },
    /// Run the next attempt with this failure instead of the scenario's.
    Fail {
        code: String,
        class: FailClass,
        /// A rate-limited failure's retry-after, a deferred one's delay.
        retry_after_ms: Option<i64>,
    },
    /// Run the next attempt and let it succeed.
    Succeed,
    /// Deliver a counterpart response (JSON body).
    Respond {
        target: ResponseTarget,
        body: String,
    },
    /// Poison the pending request delivery.
    Poison,
    /// Resolve the reconciliation the instance waits for.
    Resolve(Resolution),
    /// Re-read the store.
    Refresh,
    /// Attach mode: inspect this instance.
    Open { instance: String },
    /// Plan a migration of the open instance onto `target` (a deployment id
    /// or a model file); `mapping` `None` starts from the engine's suggested
    /// mapping. The plan is then read with [`Backend::migration_preview`].
    PreviewMigration {
        target: String,
        mapping: Option<Vec<(String, String)>>,
        reset_budget: bool,
        /// `Some(d)`: every FAILED instance of deployment `d` (the list's
        /// batch repair, as `qflow migrate --all-failed-of d`), not the
        /// open instance.
        failed_of: Option<i64>,
    },
    /// Apply the migration that was previewed, if the instance has not moved
    /// (a batch: each instance that has not moved since its plan).
    Migrate,
    /// Attach mode: pause (or unpause) every retry park of a failure class
    /// (`kind` `class`) or a dependency (`dependency`).
    SetPause {
        kind: String,
        value: String,
        pause: bool,
    },
    /// Attach mode: quarantine an instance (`quarantine` true: nothing
    /// decides for it) or release it.
    SetQuarantine { instance: String, quarantine: bool },
}

/// A planned migration, as the confirmation shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationPreview {
    /// The instance, or for a batch what it covers (`3 FAILED instances of
    /// deployment 1`).
    pub instance: String,
    /// A batch: the deployment whose FAILED instances move.
    pub failed_of: Option<i64>,
    /// What `--to` names: a deployment id or a model file.
    pub target: String,
    pub mapping: Vec<(String, String)>,
    pub reset_budget: bool,
    /// The plan in words, or why it is refused.
    pub lines: Vec<String>,
    /// Whether it can be applied.
    pub ok: bool,
}

/// How the status line colours a report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Tone {
    #[default]
    Info,
    Good,
    Warn,
    Bad,
}

/// What a command did, in one line for the status line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub tone: Tone,
    pub message: String,
}

impl Report {
    pub fn info(message: impl Into<String>) -> Report {
        Report {
            tone: Tone::Info,
            message: message.into(),
        }
    }

    pub fn good(message: impl Into<String>) -> Report {
        Report {
            tone: Tone::Good,
            message: message.into(),
        }
    }

    pub fn warn(message: impl Into<String>) -> Report {
        Report {
            tone: Tone::Warn,
            message: message.into(),
        }
    }

    pub fn bad(message: impl Into<String>) -> Report {
        Report {
            tone: Tone::Bad,
            message: message.into(),
        }
    }
}

/// Whatever holds the instance: the engine's local driver over its store, or
/// a test double. Errors are messages a person can act on; they end up on the
/// status line, never in a panic.
pub trait Backend {
    /// Carry out one command. `Ok` reports what happened, including honest
    /// refusals ("that attempt is gone, a retry is pending"); `Err` is a
    /// failure of the backend itself (database unreadable, …).
    fn execute(&mut self, command: &Command) -> Result<Report, String>;

    /// The current instance, read back from the store. `None` in attach mode
    /// before an instance is opened.
    fn view(&mut self) -> Result<Option<View>, String>;

    /// Attach mode: every instance in the database, FAILED first. Empty when
    /// the console drives one instance of its own.
    fn instances(&mut self) -> Result<Vec<InstanceRowView>, String> {
        Ok(Vec::new())
    }

    /// Attach mode: the database's deployments. Empty otherwise.
    fn deployments(&mut self) -> Result<Vec<DeploymentRowView>, String> {
        Ok(Vec::new())
    }

    /// Attach mode: the fleet's observations. `None` otherwise.
    fn fleet(&mut self) -> Result<Option<FleetView>, String> {
        Ok(None)
    }

    /// The migration planned by the last [`Command::PreviewMigration`].
    fn migration_preview(&mut self) -> Option<MigrationPreview> {
        None
    }

    /// Codes worth offering in the fail picker (the scenario's, the policy's
    /// non-retryable ones), most relevant first.
    fn failure_codes(&mut self) -> Vec<String> {
        Vec::new()
    }
}
