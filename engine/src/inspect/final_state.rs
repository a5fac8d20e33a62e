//! An instance's final state, typed: what `qflow run`'s last line, the
//! library's `Engine::status` and the serving endpoint's instance reads say
//! (docs/run.md). Built from the [`Inspection`] and serialised once, here
//! ([`FinalState::to_json`]), so a face that words it (the CLI's human
//! line, `qflow test`) matches on fields instead of reading the JSON back
//! by key.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Inspection, Waiting};
use crate::instance::history::seconds;
use crate::instance::snapshot::{Failure, TokenState};
use crate::instance::{OutboxState, Purpose, Status};
use crate::runtime::outcome::Ended;
use crate::store::OutboxEntry;

/// One instance's state at the end of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct FinalState {
    pub instance: String,
    pub end: End,
    /// The requests that will never be delivered (outbox rows `abandoned`),
    /// so a run never ends quiet about them.
    pub abandoned: Vec<OutboxEntry>,
}

/// How the instance stands.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    Completed,
    /// The terminal record, with the attempts the failed node made
    /// ([`Inspection::failed_attempts`]) and the first and last attempt's
    /// start as virtual ms since the instance started, where it kept them.
    Failed {
        failure: Failure,
        attempts: u32,
        first_attempt_ms: Option<i64>,
        last_attempt_ms: Option<i64>,
    },
    /// Running or waiting: what for, when the inspection could tell.
    Waiting(Option<Waiting>),
}

impl FinalState {
    /// The final state of `inspection`.
    pub fn of(inspection: &Inspection) -> FinalState {
        let since_start = |ms: Option<i64>| ms.map(|ms| ms - inspection.started_ms);
        let end = match inspection.status {
            Status::Completed => End::Completed,
            Status::Failed => {
                let failure = inspection.failure.clone().unwrap_or_default();
                End::Failed {
                    attempts: inspection.failed_attempts().unwrap_or(0),
                    first_attempt_ms: since_start(failure.first_attempt_ms),
                    last_attempt_ms: since_start(failure.last_attempt_ms),
                    failure,
                }
            }
            Status::Running | Status::Waiting => End::Waiting(inspection.waiting.clone()),
        };
        FinalState {
            instance: inspection.id.clone(),
            end,
            abandoned: inspection
                .outbox
                .iter()
                .filter(|o| o.state == OutboxState::Abandoned)
                .cloned()
                .collect(),
        }
    }

    /// `completed`, `failed` or `waiting`: the `status` of the JSON form
    /// and the first word of an `--expect`.
    pub fn status(&self) -> &'static str {
        match self.end {
            End::Completed => "completed",
            End::Failed { .. } => "failed",
            End::Waiting(_) => "waiting",
        }
    }

    /// The JSON form (docs/run.md): `{"status":"completed",…}`,
    /// `{"status":"failed",…}` or `{"status":"waiting",…}`, with
    /// `abandoned` when there are any. Its `resolve` names the flag that
    /// reconciles a waiting task, as the run's documented output always has.
    pub fn to_json(&self) -> Value {
        let id = self.instance.as_str();
        let mut line = match &self.end {
            End::Completed => serde_json::json!({"status": "completed", "instance": id}),
            End::Failed {
                failure: f,
                attempts,
                first_attempt_ms,
                last_attempt_ms,
            } => {
                let mut line = serde_json::json!({
                    "status": "failed",
                    "code": f.code,
                    "reason": f.reason,
                    "attempts": attempts,
                    "node": f.node,
                    "instance": id,
                });
                // What the terminal record keeps to act on, where it has it.
                let extra = [
                    ("class", f.class.clone().map(Value::from)),
                    ("task", f.task.clone().map(Value::from)),
                    ("channel", f.channel.clone().map(Value::from)),
                    ("message", f.message.clone().map(Value::from)),
                    ("first_attempt_s", first_attempt_ms.map(seconds)),
                    ("last_attempt_s", last_attempt_ms.map(seconds)),
                ];
                if let Value::Object(m) = &mut line {
                    for (k, v) in extra {
                        if let Some(v) = v {
                            m.insert(k.to_string(), v);
                        }
                    }
                }
                line
            }
            End::Waiting(Some(Waiting::Reconciliation {
                node,
                code,
                attempts,
            })) => serde_json::json!({
                "status": "waiting", "for": "reconciliation", "node": node, "code": code,
                "attempts": attempts,
                "resolve": format!("--resolve {node}=succeeded|failed|retry"), "instance": id,
            }),
            End::Waiting(Some(Waiting::Timer {
                node,
                purpose,
                due_ms,
            })) => serde_json::json!({
                "status": "waiting", "for": waiting_for(*purpose), "node": node,
                "due_s": seconds(*due_ms), "instance": id,
            }),
            End::Waiting(Some(Waiting::Nothing { tokens })) => {
                let at: BTreeMap<&str, &str> = tokens
                    .iter()
                    .map(|(n, s)| (n.as_str(), s.as_str()))
                    .collect();
                serde_json::json!({"status": "waiting", "for": NOTHING_LOCAL, "tokens": at, "instance": id})
            }
            End::Waiting(None) => serde_json::json!({"status": "waiting", "instance": id}),
        };
        if let (Value::Object(m), false) = (&mut line, self.abandoned.is_empty()) {
            let abandoned = self
                .abandoned
                .iter()
                .map(|o| {
                    serde_json::json!({
                        "node": o.node,
                        "channel": o.channel,
                        "attempt": o.attempt,
                        "idempotencyKey": o.idempotency_key,
                        "reason": o.reason,
                    })
                })
                .collect();
            m.insert("abandoned".into(), Value::Array(abandoned));
        }
        line
    }

    /// What a waiting instance waits for, in the words of `for`
    /// (`reconciliation`, `response`, `retry`, …); `None` unless waiting
    /// on something the inspection named.
    pub fn waiting_for(&self) -> Option<&'static str> {
        match &self.end {
            End::Waiting(Some(Waiting::Reconciliation { .. })) => Some("reconciliation"),
            End::Waiting(Some(Waiting::Timer { purpose, .. })) => Some(waiting_for(*purpose)),
            End::Waiting(Some(Waiting::Nothing { .. })) => Some(NOTHING_LOCAL),
            _ => None,
        }
    }

    /// The end as an `--expect` matches it ([`Ended`]): status, code and
    /// what it waits for.
    pub fn ended(&self) -> Ended<'_> {
        Ended {
            status: self.status(),
            code: self.code(),
            waiting_for: self.waiting_for(),
        }
    }

    /// The code the final state carries: the failure's, or the unknown
    /// outcome's a reconciliation waits for.
    pub fn code(&self) -> Option<&str> {
        match &self.end {
            End::Failed { failure, .. } => Some(failure.code.as_str()),
            End::Waiting(Some(Waiting::Reconciliation { code, .. })) => code.as_deref(),
            _ => None,
        }
    }
}

/// The `for` of an instance waiting on tokens no local run can move.
const NOTHING_LOCAL: &str = "nothing it can be given locally";

/// What a timer's purpose means to a waiting instance, in the final line.
pub fn waiting_for(p: Purpose) -> &'static str {
    match p {
        Purpose::Timeout => "response",
        p => p.as_str(),
    }
}

/// Where each token stands, by node, as the final line's `tokens` says it.
pub fn token_words(tokens: &BTreeMap<String, TokenState>) -> Vec<String> {
    tokens
        .iter()
        .map(|(n, s)| format!("{n} {}", s.as_str()))
        .collect()
}
