//! The history: one typed line per thing a decision did, serialized as the
//! JSON object `qflow run --format json` prints and the store keeps in
//! `history.detail` (canonical text, sorted keys).
//!
//! Every line is `{"at_s": …, "kind": …, "node": …, …}`: [`Line`] holds the
//! first and third, [`HistoryEvent`] the tag and the rest. The serialized
//! shape is a contract (golden decision files, databases written by earlier
//! versions), so a field here is renamed only with a migration of the history.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::event::{FailureClass, Resolution};
use super::snapshot::canonical_string;

/// A time in the history: milliseconds since the instance started, written
/// as seconds (an integer when whole, else a decimal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Secs(pub i64);

impl Secs {
    /// Milliseconds since the instance started.
    pub fn ms(self) -> i64 {
        self.0
    }

    /// The JSON number the history writes.
    pub fn to_value(self) -> Value {
        seconds(self.0)
    }
}

/// Milliseconds as a JSON number of seconds: an integer when whole.
pub fn seconds(ms: i64) -> Value {
    if ms % 1000 == 0 {
        Value::from(ms / 1000)
    } else {
        Value::from(ms as f64 / 1000.0)
    }
}

impl Serialize for Secs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0 % 1000 == 0 {
            s.serialize_i64(self.0 / 1000)
        } else {
            s.serialize_f64(self.0 as f64 / 1000.0)
        }
    }
}

impl<'de> Deserialize<'de> for Secs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Secs, D::Error> {
        let s = f64::deserialize(d)?;
        Ok(Secs((s * 1000.0).round() as i64))
    }
}

/// `Some` for a present field, even a JSON `null` (a response body may be null).
fn some_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub at_s: Secs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(flatten)]
    pub event: HistoryEvent,
}

/// What happens after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Then {
    /// Parked on a retry timer until the next attempt is eligible.
    Backoff,
    /// The outcome is unknown: the node waits for reconciliation.
    Reconcile,
    /// No further attempt: the fatal path (a `failed` line follows).
    Failed,
    /// Caught by an error boundary (a `boundary` line follows).
    Boundary,
}

/// How one attempt of a registered task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptOutcome {
    Ok,
    BpmnError,
    Failed,
}

/// The next attempt of a backoff park: its number, when it is eligible, and
/// the delay that put it there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Park {
    pub next_attempt: u32,
    pub next_at_s: Secs,
    pub delay_s: Secs,
}

/// One attempt of a registered task: the handler ran once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskAttempt {
    pub attempt: u32,
    pub task: String,
    pub outcome: AttemptOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "class_name")]
    pub class: Option<FailureClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub then: Option<Then>,
    #[serde(default, skip_serializing_if = "Option::is_none", flatten)]
    pub park: Option<Park>,
    /// Where the flow went on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<String>>,
    /// The handler's own words for a failure ("503 from the provider"),
    /// bounded by [`bounded_message`]: every face that shows the attempt
    /// shows why it failed, not only its code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The longest failure message kept on an attempt line (characters).
pub const MESSAGE_LIMIT: usize = 200;

/// A handler's failure message as the history keeps it: one line, control
/// characters replaced by `?` (a terminal face never receives an escape sequence
/// from a handler), at most [`MESSAGE_LIMIT`] characters with `…` marking
/// the cut. A handler's message is foreign text of any length; the history
/// is durable and shown everywhere, so it is bounded once, here.
pub fn bounded_message(message: &str) -> String {
    let mut out = String::new();
    for (kept, c) in message.trim().chars().enumerate() {
        if kept == MESSAGE_LIMIT {
            out.push('…');
            break;
        }
        if c == '\n' || c == '\r' || c == '\t' {
            out.push(' ');
        } else if c.is_control() {
            // As the terminal faces show any control character.
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

/// One attempt of a channel call: a request emitted to the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallAttempt {
    pub attempt: u32,
    pub channel: String,
    #[serde(rename = "idempotencyKey")]
    pub idempotency_key: String,
    /// When its `<q:timeout>` fires; absent for a call timed out by a timer
    /// boundary instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_at_s: Option<Secs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// A re-drive out of a backoff window: a new incarnation of the wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redrive: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incarnation: Option<u32>,
}

/// The `attempt` lines: a handler run, or a request emission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Attempt {
    Call(CallAttempt),
    Task(TaskAttempt),
}

/// What a response's arrival was decided to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The node was waiting on a live attempt: the flow resumed.
    Accepted,
    /// The node is in a backoff window: that attempt is gone, a retry is pending.
    RetryPending,
    /// It names an earlier attempt's request, replaced by a re-drive.
    Superseded,
    /// It names a request no attempt of the call was sent with.
    UnknownRequest,
    /// No channel call of that id is waiting for a response.
    NoWait,
    /// The instance is FAILED.
    Failed,
    /// The instance is COMPLETED.
    Completed,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Accepted => "accepted",
            Verdict::RetryPending => "retry-pending",
            Verdict::Superseded => "superseded",
            Verdict::UnknownRequest => "unknown-request",
            Verdict::NoWait => "no-wait",
            Verdict::Failed => "failed",
            Verdict::Completed => "completed",
        }
    }
}

/// How one delivery of an outbox row went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivered {
    Delivered,
    Failed,
}

/// What a `wait` line waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitFor {
    Timer,
    Reconciliation,
}

/// What happened, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum HistoryEvent {
    /// The instance started with these variables.
    Start {
        variables: BTreeMap<String, Value>,
    },
    /// A start event or a boundary passed the token on.
    Pass {
        to: Vec<String>,
    },
    /// A token ended; an error end event also throws its code.
    End {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        #[serde(default, skip_serializing_if = "is_false")]
        error: bool,
    },
    /// A gateway routed: an exclusive choice (`flow`, `default`), a failed
    /// choice (`code`, `reason`, no target), a completed join (`joined`) or a
    /// fork (only `to`).
    Gateway {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        flow: Option<String>,
        to: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        joined: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A branch arrived at a parallel join that still waits for others.
    Join {
        arrived: usize,
        of: usize,
    },
    /// A token parked: on its timer, or for a reconciliation.
    Wait {
        #[serde(rename = "for")]
        for_: WaitFor,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        until_s: Option<Secs>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    /// An intermediate timer fired.
    Timer {
        to: Vec<String>,
    },
    /// A boundary fired on the task `from`: an error boundary (`code`) or a
    /// timer boundary (`timer`, `interrupting`).
    Boundary {
        from: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timer: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interrupting: Option<bool>,
        to: Vec<String>,
    },
    Attempt(Attempt),
    /// A channel call's attempt failed (timeout or a poisoned delivery).
    CallFailed {
        attempt: u32,
        code: String,
        then: Then,
        #[serde(default, skip_serializing_if = "Option::is_none", flatten)]
        park: Option<Park>,
    },
    /// A counterpart's response arrived, and what it was decided to be.
    Response {
        verdict: Verdict,
        #[serde(rename = "idempotencyKey")]
        idempotency_key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        live_attempt: Option<u32>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "some_value"
        )]
        body: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<Vec<String>>,
    },
    /// The dispatcher tried to deliver one outbox row.
    Delivery {
        attempt: u32,
        channel: String,
        #[serde(rename = "idempotencyKey")]
        idempotency_key: String,
        deliveries: u32,
        outcome: Delivered,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        respond_at_s: Option<Secs>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "some_value"
        )]
        response: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        silent: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        poisoned: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_delivery_at_s: Option<Secs>,
    },
    /// The fatal path: the instance is FAILED.
    Failed {
        code: String,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempts: Option<u32>,
    },
    /// A stored value a decision could not read as written: the snapshot
    /// `key` (a counter, the frontier, or `snapshot` for the whole) held
    /// `raw`; a counter is `read_as` that (null: absent) and the decision
    /// went on, anything else failed the instance.
    Damaged {
        key: String,
        raw: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        read_as: Option<i64>,
    },
    /// An event that had no effect, and why.
    Ignored {
        event: String,
        reason: String,
    },
    /// An unknown outcome was reconciled; `attempts`: how many times the
    /// task has run so far.
    Reconciled {
        #[serde(rename = "as")]
        as_: Resolution,
        code: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempts: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<Vec<String>>,
    },
    /// The instance moved to another deployment.
    Migrated {
        mapping: BTreeMap<String, String>,
        reset_budget: bool,
        repaired: bool,
    },
}

mod class_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::event::FailureClass;

    pub(super) fn serialize<S: Serializer>(
        c: &Option<FailureClass>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match c {
            Some(c) => s.serialize_str(c.as_str()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<FailureClass>, D::Error> {
        let s = Option::<String>::deserialize(d)?;
        Ok(s.and_then(|s| FailureClass::parse(&s)))
    }
}

impl HistoryEvent {
    /// A gateway line that routed: an exclusive choice (`flow`, `default`)
    /// or a fork (neither).
    pub fn gateway(flow: Option<String>, to: Vec<String>, default: Option<bool>) -> HistoryEvent {
        HistoryEvent::Gateway {
            flow,
            to,
            default,
            joined: None,
            code: None,
            reason: None,
        }
    }

    /// The `kind` tag (the history table's `kind` column).
    pub fn kind(&self) -> &'static str {
        match self {
            HistoryEvent::Start { .. } => "start",
            HistoryEvent::Pass { .. } => "pass",
            HistoryEvent::End { .. } => "end",
            HistoryEvent::Gateway { .. } => "gateway",
            HistoryEvent::Join { .. } => "join",
            HistoryEvent::Wait { .. } => "wait",
            HistoryEvent::Timer { .. } => "timer",
            HistoryEvent::Boundary { .. } => "boundary",
            HistoryEvent::Attempt(_) => "attempt",
            HistoryEvent::CallFailed { .. } => "call-failed",
            HistoryEvent::Response { .. } => "response",
            HistoryEvent::Delivery { .. } => "delivery",
            HistoryEvent::Failed { .. } => "failed",
            HistoryEvent::Damaged { .. } => "damaged",
            HistoryEvent::Ignored { .. } => "ignored",
            HistoryEvent::Reconciled { .. } => "reconciled",
            HistoryEvent::Migrated { .. } => "migrated",
        }
    }

    /// The attempt a line is about (the history table's `attempt` column).
    pub fn attempt(&self) -> Option<u32> {
        match self {
            HistoryEvent::Attempt(Attempt::Task(a)) => Some(a.attempt),
            HistoryEvent::Attempt(Attempt::Call(a)) => Some(a.attempt),
            HistoryEvent::CallFailed { attempt, .. } | HistoryEvent::Delivery { attempt, .. } => {
                Some(*attempt)
            }
            _ => None,
        }
    }

    /// The code a line carries (the history table's `code` column).
    pub fn code(&self) -> Option<&str> {
        match self {
            HistoryEvent::End { code, .. }
            | HistoryEvent::Gateway { code, .. }
            | HistoryEvent::Wait { code, .. }
            | HistoryEvent::Boundary { code, .. } => code.as_deref(),
            HistoryEvent::Attempt(Attempt::Task(a)) => a.code.as_deref(),
            HistoryEvent::CallFailed { code, .. }
            | HistoryEvent::Failed { code, .. }
            | HistoryEvent::Reconciled { code, .. } => Some(code),
            _ => None,
        }
    }

    /// The registered task a handler run was for (the `task` column).
    pub fn task(&self) -> Option<&str> {
        match self {
            HistoryEvent::Attempt(Attempt::Task(a)) => Some(&a.task),
            _ => None,
        }
    }

    /// Where the flow went, for lines that moved it.
    pub fn to(&self) -> Option<&[String]> {
        match self {
            HistoryEvent::Pass { to }
            | HistoryEvent::Gateway { to, .. }
            | HistoryEvent::Timer { to }
            | HistoryEvent::Boundary { to, .. } => Some(to),
            HistoryEvent::Attempt(Attempt::Task(a)) => a.to.as_deref(),
            HistoryEvent::Response { to, .. } | HistoryEvent::Reconciled { to, .. } => {
                to.as_deref()
            }
            _ => None,
        }
    }
}

impl Line {
    /// The line as the JSON object it is stored and printed as.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a history line serializes")
    }

    /// The canonical text (sorted keys) the store keeps.
    pub fn to_canonical(&self) -> String {
        canonical_string(&self.to_value())
    }

    /// Read a stored line back; `None` when it is not a line this version
    /// knows (a damaged row, or a kind written by a newer version).
    pub fn parse(text: &str) -> Option<Line> {
        serde_json::from_str(text).ok()
    }
}

/// One history entry as a decision produces it: the line, and what the
/// store files it under besides its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub line: Line,
    /// The retry timer this entry consumed (attempts only).
    pub timer_id: Option<i64>,
    /// The scenario event it delivered, if any.
    pub event_index: Option<usize>,
}

impl Entry {
    pub fn new(line: Line) -> Entry {
        Entry {
            line,
            timer_id: None,
            event_index: None,
        }
    }

    pub fn kind(&self) -> &'static str {
        self.line.event.kind()
    }

    /// The full line as JSON, `at_s` included.
    pub fn detail(&self) -> Value {
        self.line.to_value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of every golden decision file reads back into a typed
    /// line and writes out as exactly the same canonical JSON.
    #[test]
    fn every_golden_decision_line_round_trips_byte_for_byte() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/run");
        let mut n = 0;
        for f in std::fs::read_dir(&dir).expect("golden dir") {
            let path = f.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for l in text.lines() {
                let v: Value = serde_json::from_str(l).unwrap();
                // The final-state line is not a history line.
                if v.get("kind").is_none() {
                    continue;
                }
                let mut v = v;
                // Replica output adds the instance; not part of the line.
                v.as_object_mut().unwrap().remove("instance");
                let line: Line = serde_json::from_value(v.clone())
                    .unwrap_or_else(|e| panic!("{}: {l}: {e}", path.display()));
                assert_eq!(
                    line.to_canonical(),
                    canonical_string(&v),
                    "{}",
                    path.display()
                );
                n += 1;
            }
        }
        assert!(n > 100, "only {n} lines read");
    }

    #[test]
    fn seconds_are_integers_when_whole() {
        assert_eq!(canonical_string(&Secs(5000).to_value()), "5");
        assert_eq!(canonical_string(&Secs(1500).to_value()), "1.5");
        let l = Line {
            at_s: Secs(250),
            node: None,
            event: HistoryEvent::Pass { to: vec![] },
        };
        assert_eq!(l.to_canonical(), r#"{"at_s":0.25,"kind":"pass","to":[]}"#);
        assert_eq!(Line::parse(&l.to_canonical()), Some(l));
    }

    #[test]
    fn a_failure_message_is_kept_on_one_line_escaped_and_bounded() {
        assert_eq!(
            bounded_message("  503 from the provider\n"),
            "503 from the provider"
        );
        assert_eq!(bounded_message("a\nb\tc"), "a b c");
        assert_eq!(bounded_message("\u{1b}[31mred\u{7}"), "?[31mred?");
        let long = "x".repeat(MESSAGE_LIMIT + 50);
        let kept = bounded_message(&long);
        assert_eq!(kept.chars().count(), MESSAGE_LIMIT + 1);
        assert!(kept.ends_with('…'));
        assert_eq!(
            bounded_message(&"y".repeat(MESSAGE_LIMIT)),
            "y".repeat(MESSAGE_LIMIT)
        );
    }
}
