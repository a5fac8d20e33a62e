//! An accepted model, compiled into the graph the decisions walk.
//!
//! The loader has already refused models with errors; compiling still checks
//! what the runtime itself needs (one none start event, parseable conditions,
//! timer durations, supported elements) and says exactly which node is the
//! problem, so the runtime never meets a shape it cannot decide.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use qflow_model::condition::{self, Expr};
use qflow_model::model::{Definitions, EventTrigger, NodeKind, Process};
use qflow_model::policy::{ChannelPolicy, RetryPolicy};

/// One outgoing sequence flow.
#[derive(Debug, Clone)]
pub struct Out {
    pub flow: String,
    pub target: String,
    pub condition: Option<Expr>,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Start,
    End,
    /// An error end event: throws this code (the instance fails, uncaught).
    ErrorEnd {
        code: String,
    },
    Exclusive {
        /// The default flow's id.
        default: Option<String>,
    },
    Parallel,
    /// A service task: a registered task (`q:task`, `call` is `None`), or a
    /// channel call (`q:channel`, `task` is `channel` or `channel.operation`).
    Task {
        task: String,
        policy: Option<RetryPolicy>,
        /// Error boundaries: (boundary id, errorCode; `None` catches all).
        error_boundaries: Vec<(String, Option<String>)>,
        /// Timer boundaries attached to it (their ids).
        timer_boundaries: Vec<String>,
        /// A channel call's request, timeout and outbox curve.
        call: Option<Box<Call>>,
    },
    /// An intermediate timer catch event.
    Timer {
        duration: Duration,
    },
    TimerBoundary {
        attached_to: String,
        duration: Duration,
        interrupting: bool,
    },
    ErrorBoundary {
        attached_to: String,
    },
}

/// What a channel call needs beyond a task.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub channel: String,
    pub operation: Option<String>,
    /// The route-less `<q:timeout>`: when it fires, the attempt failed
    /// (`q.timeout`). `None`: the call is timed out by a timer boundary
    /// instead, which ends the wait and takes the boundary's route (the
    /// modelled outcome wins; nothing is retried).
    pub timeout: Option<Duration>,
    /// `<q:channelConfig maxDeliveries>`: the ceiling that poisons a request;
    /// `None`: the outbox retries one delivery forever.
    pub max_deliveries: Option<u32>,
    /// `<q:channelConfig deliveryInterval>` (default one second).
    pub delivery_interval: Duration,
}

#[derive(Debug, Clone)]
pub struct GNode {
    pub id: String,
    pub kind: Kind,
    pub outgoing: Vec<Out>,
    /// Incoming flow ids (a parallel join waits for one token on each).
    pub incoming: Vec<String>,
}

impl GNode {
    /// A channel call's request, timeout and outbox curve (`None`: not a call).
    pub fn call(&self) -> Option<&Call> {
        match &self.kind {
            Kind::Task { call: Some(c), .. } => Some(c),
            _ => None,
        }
    }

    /// A parallel gateway with more than one incoming flow.
    pub fn is_join(&self) -> bool {
        matches!(self.kind, Kind::Parallel) && self.incoming.len() > 1
    }
}

#[derive(Debug, Clone)]
pub struct Graph {
    pub process_id: String,
    pub start: String,
    pub nodes: BTreeMap<String, GNode>,
}

/// The model has a shape the runtime does not execute (yet).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{node}: {message}")]
pub struct GraphError {
    /// The element at fault (`process` when it is the process itself).
    pub node: String,
    pub message: String,
}

fn gerr(node: &str, message: impl Into<String>) -> GraphError {
    GraphError {
        node: node.to_string(),
        message: message.into(),
    }
}

impl Graph {
    /// Whether a token leaving `id` can arrive at it again (through its
    /// outgoing flows or its boundary events): such a node is entered more
    /// than once per instance, so what it emitted on an earlier entry (a call's
    /// idempotency keys) must not be reused on the next.
    pub fn can_reenter(&self, id: &str) -> bool {
        let successors = |n: &GNode| -> Vec<String> {
            let mut next: Vec<String> = n.outgoing.iter().map(|o| o.target.clone()).collect();
            if let Kind::Task {
                error_boundaries,
                timer_boundaries,
                ..
            } = &n.kind
            {
                next.extend(error_boundaries.iter().map(|(b, _)| b.clone()));
                next.extend(timer_boundaries.iter().cloned());
            }
            next
        };
        let Some(start) = self.nodes.get(id) else {
            return false;
        };
        let mut stack = successors(start);
        let mut seen = std::collections::BTreeSet::new();
        while let Some(n) = stack.pop() {
            if n == id {
                return true;
            }
            if seen.insert(n.clone()) {
                if let Some(node) = self.nodes.get(&n) {
                    stack.extend(successors(node));
                }
            }
        }
        false
    }

    pub fn node(&self, id: &str) -> Option<&GNode> {
        self.nodes.get(id)
    }

    /// Compile the executable process of an accepted model: its only one.
    /// A document with several is refused, each named, rather than running
    /// the first and leaving the reader to guess which ran (the scenario
    /// check would then blame the other's tasks): name one with
    /// [`Graph::compile_named`].
    pub fn compile(defs: &Definitions) -> Result<Graph, GraphError> {
        Self::compile_named(defs, None)
    }

    /// Compile the executable process `process` names, or with `None` the
    /// only one (refusing a document with several).
    pub fn compile_named(defs: &Definitions, process: Option<&str>) -> Result<Graph, GraphError> {
        compile_process(defs, Self::executable_process(defs, process)?)
    }

    /// The executable process `process` names, or with `None` the only
    /// one; refused, naming the executable ones, otherwise.
    pub fn executable_process<'d>(
        defs: &'d Definitions,
        process: Option<&str>,
    ) -> Result<&'d Process, GraphError> {
        let runnable: Vec<&Process> = defs.executable_processes().collect();
        let id_of = |p: &Process| p.id.as_ref().map_or("process", |a| &*a.value).to_string();
        let named = |ps: &[&Process]| {
            ps.iter()
                .map(|p| format!("`{}`", id_of(p)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (process, runnable.as_slice()) {
            (_, []) => Err(gerr(
                "process",
                "no executable process: mark one isExecutable=\"true\" in a document that declares xmlns:q=\"urn:qflow:bpmn:1\"",
            )),
            (None, [only]) => Ok(*only),
            (None, several) => Err(gerr(
                "process",
                format!(
                    "the document has {} executable processes ({}): name the one to run (--process ID)",
                    several.len(),
                    named(several)
                ),
            )),
            (Some(id), all) => match all.iter().find(|p| id_of(p) == id) {
                Some(p) => Ok(*p),
                None => {
                    let declared = defs
                        .processes
                        .iter()
                        .any(|p| p.id.as_ref().is_some_and(|a| &*a.value == id));
                    Err(gerr(
                        "process",
                        if declared {
                            format!(
                                "process `{id}` is not executable (isExecutable=\"true\" is missing); executable: {}",
                                named(all)
                            )
                        } else {
                            format!("no process `{id}` in the document; executable: {}", named(all))
                        },
                    ))
                }
            },
        }
    }

    /// The document as run for `process` alone: the others are left as
    /// they are but not executable, so every later compile (the run's, the
    /// console's, the deployment's) takes that one. Refused, with the
    /// executable ones named, when `process` is not one of them.
    pub fn choose_process(defs: &Definitions, process: &str) -> Result<Definitions, GraphError> {
        Self::executable_process(defs, Some(process))?;
        let mut only = defs.clone();
        for p in &mut only.processes {
            p.is_executable = p.id.as_ref().is_some_and(|a| &*a.value == process);
        }
        Ok(only)
    }
}

fn timer_duration(id: &str, trigger: &EventTrigger) -> Result<Option<Duration>, GraphError> {
    let EventTrigger::Timer(t) = trigger else {
        return Ok(None);
    };
    match &t.time_duration {
        Some(d) => qflow_model::duration::parse(&d.value)
            .map(Some)
            .map_err(|e| gerr(id, format!("timeDuration `{}`: {e}", d.value))),
        None => Err(gerr(
            id,
            "only timeDuration timers run locally (timeDate and timeCycle are not executed)",
        )),
    }
}

fn compile_process(defs: &Definitions, p: &Process) -> Result<Graph, GraphError> {
    let process_id =
        p.id.as_ref()
            .map_or("process".to_string(), |a| a.value.to_string());
    let mut nodes = BTreeMap::new();
    let mut start = None;
    for n in &p.nodes {
        let id = n.id().to_string();
        if n.scope.is_some() {
            return Err(gerr(
                &id,
                "sub-process contents are not executed by the local runtime",
            ));
        }
        let kind = match &n.kind {
            NodeKind::StartEvent { trigger } => match trigger {
                EventTrigger::None => {
                    if start.is_none() {
                        start = Some(id.clone());
                    }
                    Kind::Start
                }
                _ => return Err(gerr(&id, "only none start events are executed")),
            },
            NodeKind::EndEvent { trigger } => match trigger {
                EventTrigger::None => Kind::End,
                EventTrigger::Error { error_ref, .. } => {
                    let code = error_ref
                        .as_ref()
                        .and_then(|r| defs.error(&r.value))
                        .and_then(|e| e.error_code.as_ref().map(|c| c.value.to_string()))
                        .or_else(|| error_ref.as_ref().map(|r| r.value.to_string()))
                        .unwrap_or_else(|| id.clone());
                    Kind::ErrorEnd { code }
                }
                other => {
                    return Err(gerr(
                        &id,
                        format!("end event {} is not executed", trigger_name(other)),
                    ))
                }
            },
            NodeKind::ExclusiveGateway { default } => Kind::Exclusive {
                default: default.as_ref().map(|d| d.value.to_string()),
            },
            NodeKind::ParallelGateway => Kind::Parallel,
            NodeKind::ServiceTask(_) => {
                let call = match n.channel_call() {
                    Some(channel) => Some(Box::new(call_spec(defs, n, &id, &channel.value)?)),
                    None => None,
                };
                let task = match (&call, n.registered_task()) {
                    (Some(c), _) => match &c.operation {
                        Some(op) => format!("{}.{op}", c.channel),
                        None => c.channel.clone(),
                    },
                    (None, Some(t)) => t.value.to_string(),
                    (None, None) => {
                        return Err(gerr(&id, "serviceTask without q:task or q:channel"))
                    }
                };
                let policy = match n.retries.first() {
                    None => None,
                    Some(spec) => Some(RetryPolicy::from_spec(spec).map_err(|e| {
                        gerr(
                            &id,
                            e.first()
                                .map_or("invalid <q:retry>".to_string(), |e| e.message.clone()),
                        )
                    })?),
                };
                let mut error_boundaries = Vec::new();
                let mut timer_boundaries = Vec::new();
                for b in p.boundaries(&id) {
                    if let NodeKind::BoundaryEvent { trigger, .. } = &b.kind {
                        match trigger {
                            EventTrigger::Error { error_ref, .. } => {
                                let code = error_ref.as_ref().map(|r| {
                                    defs.error(&r.value)
                                        .and_then(|e| {
                                            e.error_code.as_ref().map(|c| c.value.to_string())
                                        })
                                        .unwrap_or_else(|| r.value.to_string())
                                });
                                error_boundaries.push((b.id().to_string(), code));
                            }
                            EventTrigger::Timer(_) => timer_boundaries.push(b.id().to_string()),
                            _ => {}
                        }
                    }
                }
                if call.as_ref().is_some_and(|c| c.timeout.is_none()) && timer_boundaries.is_empty()
                {
                    return Err(gerr(
                        &id,
                        "channel call without a timeout: add <q:timeout duration=\"…\"/> or a timer boundary",
                    ));
                }
                Kind::Task {
                    task,
                    policy,
                    error_boundaries,
                    timer_boundaries,
                    call,
                }
            }
            NodeKind::BoundaryEvent {
                attached_to,
                interrupting,
                trigger,
            } => {
                let attached_to = attached_to
                    .as_ref()
                    .map(|a| a.value.to_string())
                    .ok_or_else(|| gerr(&id, "boundary event without attachedToRef"))?;
                let host = p
                    .node(&attached_to)
                    .ok_or_else(|| gerr(&id, "attachedToRef names no node"))?;
                if host.registered_task().is_none() && host.channel_call().is_none() {
                    return Err(gerr(&id, "boundary events run only on service tasks"));
                }
                match trigger {
                    EventTrigger::Error { .. } => Kind::ErrorBoundary { attached_to },
                    EventTrigger::Timer(_) => Kind::TimerBoundary {
                        attached_to,
                        duration: timer_duration(&id, trigger)?.unwrap_or_default(),
                        interrupting: *interrupting,
                    },
                    other => {
                        return Err(gerr(
                            &id,
                            format!("{} boundary events are not executed", trigger_name(other)),
                        ))
                    }
                }
            }
            NodeKind::IntermediateCatchEvent { trigger } => match timer_duration(&id, trigger)? {
                Some(duration) => Kind::Timer { duration },
                None => {
                    return Err(gerr(
                        &id,
                        "only timer intermediate catch events are executed",
                    ))
                }
            },
            NodeKind::SubProcess { .. } | NodeKind::Other => {
                return Err(gerr(
                    &id,
                    format!("{} is not executed by the local runtime", n.element),
                ))
            }
        };
        nodes.insert(
            id.clone(),
            GNode {
                id,
                kind,
                outgoing: Vec::new(),
                incoming: Vec::new(),
            },
        );
    }
    for f in &p.flows {
        let flow = f.id.value.to_string();
        let (Some(s), Some(t)) = (&f.source, &f.target) else {
            return Err(gerr(&flow, "sequence flow without sourceRef or targetRef"));
        };
        let condition = match &f.condition {
            Some(c) if !c.value.trim().is_empty() => {
                Some(condition::parse(&c.value).map_err(|e| {
                    gerr(
                        &flow,
                        format!("condition `{}` does not parse: {e}", c.value.trim()),
                    )
                })?)
            }
            _ => None,
        };
        if !nodes.contains_key(t.value.as_str()) {
            return Err(gerr(
                &flow,
                format!("targetRef `{}` is not an executed node", t.value),
            ));
        }
        let src = nodes.get_mut(s.value.as_str()).ok_or_else(|| {
            gerr(
                &flow,
                format!("sourceRef `{}` is not an executed node", s.value),
            )
        })?;
        src.outgoing.push(Out {
            flow: flow.clone(),
            target: t.value.to_string(),
            condition,
        });
        nodes
            .get_mut(t.value.as_str())
            .expect("checked above")
            .incoming
            .push(flow);
    }
    let start =
        start.ok_or_else(|| gerr(&process_id, "no none start event to start an instance at"))?;
    Ok(Graph {
        process_id,
        start,
        nodes,
    })
}

fn call_spec(
    defs: &Definitions,
    n: &qflow_model::model::Node,
    id: &str,
    channel: &str,
) -> Result<Call, GraphError> {
    let timeout = match n.timeouts.first() {
        Some(t) => {
            let d = t
                .duration
                .as_ref()
                .ok_or_else(|| gerr(id, "<q:timeout> without duration=\"…\""))?;
            Some(
                qflow_model::duration::parse(&d.value)
                    .map_err(|e| gerr(id, format!("<q:timeout> `{}`: {e}", d.value)))?,
            )
        }
        // A timer boundary must end the wait instead (checked with the
        // boundaries, below).
        None => None,
    };
    // The loader refused a model whose channel configuration does not parse;
    // a graph compiled from one unchecked says which attribute is wrong.
    let policy = ChannelPolicy::of_channel(defs, channel).map_err(|errs| {
        let why: Vec<String> = errs.into_iter().map(|e| e.message).collect();
        gerr(id, why.join("; "))
    })?;
    Ok(Call {
        channel: channel.to_string(),
        operation: n
            .task_attrs()
            .and_then(|t| t.operation.as_ref())
            .map(|o| o.value.to_string()),
        timeout,
        max_deliveries: policy.max_deliveries,
        delivery_interval: policy.delivery_interval,
    })
}

fn trigger_name(t: &EventTrigger) -> String {
    match t {
        EventTrigger::None => "none".into(),
        EventTrigger::Timer(_) => "timer".into(),
        EventTrigger::Error { .. } => "error".into(),
        EventTrigger::Other(s) => s.clone(),
    }
}

/// Breadth-first from the start event, each task followed by its boundaries;
/// nodes no flow reaches come last, by id.
pub fn flow_order(graph: &Graph) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<String> = VecDeque::from([graph.start.clone()]);
    let boundaries = |task: &str| -> Vec<String> {
        graph
            .nodes
            .values()
            .filter(|n| match &n.kind {
                Kind::TimerBoundary { attached_to, .. } | Kind::ErrorBoundary { attached_to } => {
                    attached_to == task
                }
                _ => false,
            })
            .map(|n| n.id.clone())
            .collect()
    };
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let Some(n) = graph.node(&id) else { continue };
        order.push(id.clone());
        for o in &n.outgoing {
            queue.push_back(o.target.clone());
        }
        for b in boundaries(&id) {
            queue.push_front(b);
        }
    }
    for id in graph.nodes.keys() {
        if !seen.contains(id) {
            order.push(id.clone());
        }
    }
    order
}
