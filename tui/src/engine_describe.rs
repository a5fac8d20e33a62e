//! Decision lines (the history's typed lines) in a few words, for the
//! history panel and the status line.

use qflow_engine::instance::history::{
    Attempt, AttemptOutcome, Delivered, HistoryEvent, Line, Secs, Then, WaitFor,
};

fn at(s: Secs) -> String {
    crate::fmt::at(s.ms())
}

/// A decision line in a few words, without the fields the history panel
/// already shows in columns.
pub(crate) fn describe(line: &Line) -> String {
    let mut parts: Vec<String> = Vec::new();
    let then =
        |parts: &mut Vec<String>, then: Option<Then>, next: Option<(u32, Secs)>| match (then, next)
        {
            (Some(Then::Backoff), next) => {
                let (n, t) = next.map_or((0, String::new()), |(n, t)| (n, at(t)));
                parts.push(format!("→ #{n} at {t}"));
            }
            (Some(other), _) => parts.push(format!("→ {}", then_word(other))),
            (None, _) => {}
        };
    match &line.event {
        HistoryEvent::Attempt(Attempt::Call(c)) => {
            // A call's attempt is a request emission: say where it went.
            if c.redrive == Some(true) {
                parts.push("re-drive:".into());
            }
            parts.push(format!("request to {}", c.channel));
            parts.extend(c.timeout_at_s.map(|t| format!("timeout {}", at(t))));
        }
        HistoryEvent::Attempt(Attempt::Task(t)) => {
            parts.push(outcome_word(t.outcome).to_string());
            parts.extend(t.class.map(|c| c.as_str().to_string()));
            parts.extend(t.message.as_ref().map(|m| format!("“{m}”")));
            then(
                &mut parts,
                t.then,
                t.park.map(|p| (p.next_attempt, p.next_at_s)),
            );
        }
        HistoryEvent::CallFailed { then: th, park, .. } => {
            then(
                &mut parts,
                Some(*th),
                park.map(|p| (p.next_attempt, p.next_at_s)),
            );
        }
        HistoryEvent::Delivery {
            outcome,
            deliveries,
            poisoned,
            next_delivery_at_s,
            respond_at_s,
            silent,
            ..
        } => {
            parts.push(
                match outcome {
                    Delivered::Delivered => "delivered",
                    Delivered::Failed => "failed",
                }
                .to_string(),
            );
            parts.push(format!("×{deliveries}"));
            if *poisoned == Some(true) {
                parts.push("POISONED".into());
            }
            parts.extend(next_delivery_at_s.map(|t| format!("next {}", at(t))));
            parts.extend(respond_at_s.map(|t| format!("answer {}", at(t))));
            if *silent == Some(true) {
                parts.push("counterpart silent".into());
            }
        }
        HistoryEvent::Response {
            verdict,
            idempotency_key,
            reason,
            ..
        } => {
            parts.push(verdict.as_str().to_string());
            parts.push(format!("to {idempotency_key}"));
            parts.extend(reason.as_ref().map(|r| format!("· {r}")));
        }
        HistoryEvent::Failed {
            reason, attempts, ..
        } => {
            parts.push(reason.clone());
            if let Some(a) = attempts {
                parts.push(format!("after {a} attempts"));
            }
        }
        HistoryEvent::Ignored { event, reason } => {
            parts.push(format!("{event}:"));
            parts.push(reason.clone());
        }
        HistoryEvent::Wait { for_, until_s, .. } => {
            parts.push(format!(
                "for {}",
                match for_ {
                    WaitFor::Timer => "timer",
                    WaitFor::Reconciliation => "reconciliation",
                }
            ));
            parts.extend(until_s.map(|u| format!("until {}", at(u))));
        }
        HistoryEvent::Reconciled { as_, .. } => parts.push(format!("as {}", as_.as_str())),
        _ => {}
    }
    if let Some(to) = line.event.to() {
        if !to.is_empty() {
            parts.push(format!("→ {}", qflow_engine::text::capped_list(to)));
        }
    }
    parts.join(" ")
}

fn outcome_word(o: AttemptOutcome) -> &'static str {
    match o {
        AttemptOutcome::Ok => "ok",
        AttemptOutcome::BpmnError => "bpmn-error",
        AttemptOutcome::Failed => "failed",
    }
}

fn then_word(t: Then) -> &'static str {
    match t {
        Then::Backoff => "backoff",
        Then::Reconcile => "reconcile",
        Then::Failed => "failed",
        Then::Boundary => "boundary",
    }
}
