//! The structural classifier: does a process need a datasource?
//!
//! A process is *run-to-completion* unless it has a wait state; then it is
//! *stateful* and needs durable storage. The wait states (docs/rules.md,
//! QF040; a `<q:retry>` makes its process stateful because a backoff park
//! needs persistence):
//!
//! - a channel call (it waits for a correlated response),
//! - a timer (intermediate catch event, timer boundary, or timer start),
//! - any `<q:retry>` (a backoff is a durable timer park, never a sleep).
//!
//! The loader reports the class as QF040 with every reason; the language
//! server and the console show the same list, computed here.

use std::fmt;

use crate::model::{EventTrigger, NodeKind, Process};
use crate::span::Span;

/// Why a process is stateful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReasonKind {
    /// A serviceTask with `q:channel`: waits for a counterpart's response.
    ChannelCall,
    /// A timer event or timer boundary: a durable timer row.
    Timer,
    /// A `<q:retry>`: each backoff is a durable timer park.
    Retry,
}

impl ReasonKind {
    /// A short name for labels (`channel call`, `timer`, `retry`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonKind::ChannelCall => "channel call",
            ReasonKind::Timer => "timer",
            ReasonKind::Retry => "retry",
        }
    }
}

/// One wait state, on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub kind: ReasonKind,
    /// The node's id.
    pub node_id: String,
    /// Where it is written: the node's element name, or the `<q:retry>` name.
    pub span: Span,
    /// In words: `channel call \`authorize\` (q:channel="bank")`.
    pub detail: String,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

/// The class of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classification {
    /// No wait state: an instance runs start to end in one step, no datasource.
    RunToCompletion,
    /// At least one wait state (every one listed, in document order).
    Stateful(Vec<Reason>),
}

impl Classification {
    /// Whether the process needs a datasource.
    pub fn is_stateful(&self) -> bool {
        matches!(self, Classification::Stateful(_))
    }

    /// Every wait state (empty when run-to-completion).
    pub fn reasons(&self) -> &[Reason] {
        match self {
            Classification::RunToCompletion => &[],
            Classification::Stateful(r) => r,
        }
    }

    /// The class as faces print it: `run-to-completion` or `stateful`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Classification::RunToCompletion => "run-to-completion",
            Classification::Stateful(_) => "stateful",
        }
    }
}

/// Classify a process from its structure alone.
pub fn classify(process: &Process) -> Classification {
    let mut reasons = Vec::new();
    for node in &process.nodes {
        let id = node.id();
        if let Some(channel) = node.channel_call() {
            let op = node
                .task_attrs()
                .and_then(|t| t.operation.as_ref())
                .map(|o| format!(" q:operation=\"{}\"", o.value))
                .unwrap_or_default();
            reasons.push(Reason {
                kind: ReasonKind::ChannelCall,
                node_id: id.to_string(),
                span: node.name_span,
                detail: format!(
                    "channel call `{id}` (q:channel=\"{}\"{op}) waits for a response",
                    channel.value
                ),
            });
        }
        let timer = match &node.kind {
            NodeKind::StartEvent { trigger }
            | NodeKind::IntermediateCatchEvent { trigger }
            | NodeKind::BoundaryEvent { trigger, .. } => {
                matches!(trigger, EventTrigger::Timer(_))
            }
            _ => false,
        };
        if timer {
            let what = match &node.kind {
                NodeKind::BoundaryEvent {
                    attached_to: Some(a),
                    ..
                } => format!("timer boundary `{id}` on `{}`", a.value),
                NodeKind::StartEvent { .. } => format!("timer start event `{id}`"),
                _ => format!("timer event `{id}`"),
            };
            reasons.push(Reason {
                kind: ReasonKind::Timer,
                node_id: id.to_string(),
                span: node.name_span,
                detail: format!("{what} is a durable timer"),
            });
        }
        for retry in &node.retries {
            reasons.push(Reason {
                kind: ReasonKind::Retry,
                node_id: id.to_string(),
                span: retry.name_span,
                detail: format!("<{}> on `{id}` parks durably between attempts", retry.qname),
            });
        }
    }
    if reasons.is_empty() {
        Classification::RunToCompletion
    } else {
        Classification::Stateful(reasons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(body: &str) -> Process {
        let src = format!(
            r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1">
  <bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"/>{body}</bpmn:process>
</bpmn:definitions>"#
        );
        let analysis = crate::analyze(&src);
        analysis.definitions.unwrap().processes.remove(0)
    }

    #[test]
    fn registered_tasks_and_gateways_run_to_completion() {
        let p = process(
            r#"<bpmn:serviceTask id="t" q:task="x"/><bpmn:exclusiveGateway id="g"/><bpmn:parallelGateway id="j"/>"#,
        );
        assert_eq!(classify(&p), Classification::RunToCompletion);
        assert_eq!(classify(&p).as_str(), "run-to-completion");
        assert!(classify(&p).reasons().is_empty());
    }

    #[test]
    fn every_wait_state_is_a_reason_in_document_order() {
        let p = process(
            r#"<bpmn:serviceTask id="call" q:channel="bank" q:operation="authorize">
                 <bpmn:extensionElements><q:timeout duration="PT30S"/><q:retry maxAttempts="2"/></bpmn:extensionElements>
               </bpmn:serviceTask>
               <bpmn:boundaryEvent id="slow" attachedToRef="call">
                 <bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition>
               </bpmn:boundaryEvent>
               <bpmn:serviceTask id="charge" q:task="payments.charge">
                 <bpmn:extensionElements><q:retry maxAttempts="3"/></bpmn:extensionElements>
               </bpmn:serviceTask>"#,
        );
        let c = classify(&p);
        assert!(c.is_stateful());
        let got: Vec<(ReasonKind, &str)> = c
            .reasons()
            .iter()
            .map(|r| (r.kind, r.node_id.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (ReasonKind::ChannelCall, "call"),
                (ReasonKind::Retry, "call"),
                (ReasonKind::Timer, "slow"),
                (ReasonKind::Retry, "charge"),
            ]
        );
        assert!(c.reasons()[0].detail.contains("q:operation=\"authorize\""));
        assert!(c.reasons()[2]
            .detail
            .contains("timer boundary `slow` on `call`"));
    }
}
