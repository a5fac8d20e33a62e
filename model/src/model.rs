//! The BPMN model as qflow sees it: the semantic elements of a `definitions`
//! document, each with the spans it was read from.
//!
//! The model is *raw*: attribute values are kept as written (with spans) so the
//! rules in [`crate::rules`] can point at the exact text that is wrong, and so
//! the language server can navigate and rename. Interpretation (durations,
//! retry policies) happens in the rules and in [`crate::policy`]; the runtime
//! only ever sees a model the loader accepted.

use std::borrow::Cow;

use crate::span::Span;

/// An element or attribute name. BPMN's and qflow's own names borrow a static
/// copy (see `reader`), so the ~200,000 names of a large model allocate nothing;
/// any other name is owned.
pub type Name = Cow<'static, str>;

/// An attribute value, id or reference as the model keeps it: a string that
/// stores up to 24 bytes inline. Ids, references and names of modeller output
/// (`Activity_0x1ab2c`, `Flow_12`) fit, so the ~300,000 values of a 20,000-task
/// model need no heap allocation of their own (building and freeing them was a
/// tenth of `qflow check`); it derefs to `&str` like a `String`.
pub type Text = compact_str::CompactString;

/// An attribute as written: its value and where it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    pub value: Text,
    /// The value inside the quotes.
    pub span: Span,
    /// The whole `name="value"`.
    pub full_span: Span,
}

/// Any element qflow keeps a reference to: its kind (local name), id and spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementRef {
    pub local: Name,
    pub span: Span,
    pub name_span: Span,
}

/// What kind of reference an attribute makes, for QF004 and navigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefKind {
    SourceRef,
    TargetRef,
    AttachedToRef,
    ErrorRef,
    Default,
    /// `bpmndi:BPMNShape/@bpmnElement`, `BPMNEdge/@bpmnElement`, `BPMNPlane/@bpmnElement`.
    BpmnElement,
    /// Any other IDREF-valued BPMN attribute (messageRef, processRef, …): navigable,
    /// but not checked, since qflow does not execute what it points at.
    Other,
}

impl RefKind {
    pub fn attribute(self) -> &'static str {
        match self {
            RefKind::SourceRef => "sourceRef",
            RefKind::TargetRef => "targetRef",
            RefKind::AttachedToRef => "attachedToRef",
            RefKind::ErrorRef => "errorRef",
            RefKind::Default => "default",
            RefKind::BpmnElement => "bpmnElement",
            RefKind::Other => "reference",
        }
    }

    /// QF004 checks exactly these references (docs/diagnostics/QF004.md).
    pub fn is_checked(self) -> bool {
        !matches!(self, RefKind::BpmnElement | RefKind::Other)
    }
}

/// A reference from one element to an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub kind: RefKind,
    pub target: Attr,
}

/// An `id` declared by a BPMN element (including bpmndi elements, which share
/// the document's id space). Vendor extension content is not BPMN: its ids are
/// not collected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdDecl {
    pub id: Attr,
    pub element: ElementRef,
}

/// A `q:*` element or attribute, kept so QF006 can check the vocabulary and the
/// editor can hover and complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QflowItem {
    pub is_element: bool,
    /// Local name (`retry`, `task`, …).
    pub local: Name,
    /// The qualified name as written (`x:retry`): fixes keep the author's prefix.
    pub qname: Name,
    pub name_span: Span,
    /// The whole element or attribute.
    pub span: Span,
    /// The local name of the element it sits on (attributes) or in (elements).
    pub host: Name,
    /// The element it belongs to: like `host`, but looking through
    /// `extensionElements` (a `<q:retry>` in a sequenceFlow's extensionElements
    /// has owner `sequenceFlow`).
    pub owner: Name,
    /// Elements only: every attribute written on it (`maxAttempts`, …, and any
    /// prefixed ones), so QF006 can check a `q:` element's own vocabulary.
    pub attributes: Vec<NamedAttr>,
}

/// An attribute with its name as written, for vocabulary checks and fixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedAttr {
    /// The qualified name as written (`maxAttempts`, `q:maxAttempts`).
    pub qname: Text,
    /// Its local name.
    pub local: Text,
    /// Whether it is in the qflow namespace (written with the qflow prefix).
    pub in_qflow_ns: bool,
    /// Whether it is a namespace declaration (`xmlns:…`).
    pub is_xmlns: bool,
    pub name_span: Span,
    pub attr: Attr,
}

/// Where an element sits in the text, for fixes that insert into it or remove it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ElementSpans {
    /// The whole element.
    pub span: Span,
    /// The start tag alone (`<bpmn:extensionElements>`).
    pub start_tag: Span,
    /// `<x/>`: no content and no end tag.
    pub self_closing: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorDef {
    pub id: Attr,
    pub error_code: Option<Attr>,
    pub name: Option<Attr>,
    pub span: Span,
}

/// `<q:channelConfig>`: the outbox's own per-delivery curve for one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelConfig {
    pub channel: Option<Attr>,
    pub max_deliveries: Option<Attr>,
    pub delivery_interval: Option<Attr>,
    /// The counterpart's own attempts per request it receives (its own
    /// retries downstream, counting the first): what the cross-layer bound
    /// multiplies a delivery by.
    pub counterpart_attempts: Option<Attr>,
    pub span: Span,
    pub name_span: Span,
}

/// `<q:retry>` as written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RetrySpec {
    pub span: Span,
    pub name_span: Span,
    /// The prefix the author bound the qflow namespace to (for fixes).
    pub qname: Text,
    pub max_attempts: Option<Attr>,
    pub backoff: Option<Attr>,
    pub initial: Option<Attr>,
    pub factor: Option<Attr>,
    pub max_delay: Option<Attr>,
    pub max_elapsed: Option<Attr>,
    pub jitter: Option<Attr>,
    pub non_retryable_codes: Option<Attr>,
}

/// `<q:timeout duration="…"/>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeoutSpec {
    pub span: Span,
    pub name_span: Span,
    /// The qualified name as written (`q:timeout`): fixes keep the author's prefix.
    pub qname: Text,
    pub duration: Option<Attr>,
}

/// The timer definition of a timer event: exactly one of the three forms.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TimerDef {
    pub span: Span,
    pub time_duration: Option<Attr>,
    pub time_date: Option<Attr>,
    pub time_cycle: Option<Attr>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventTrigger {
    None,
    /// Boxed: three optional attributes inline would make every node's
    /// `NodeKind` 248 bytes for the few nodes that are timers.
    Timer(Box<TimerDef>),
    Error {
        error_ref: Option<Attr>,
        span: Span,
    },
    /// Message, signal, escalation, … : loaded, not executed.
    Other(String),
}

/// What a serviceTask says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskAttrs {
    /// `q:task="payments.charge"`.
    pub task: Option<Attr>,
    /// `q:channel="bank"`.
    pub channel: Option<Attr>,
    /// `q:operation="authorize"`.
    pub operation: Option<Attr>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    StartEvent {
        trigger: EventTrigger,
    },
    EndEvent {
        trigger: EventTrigger,
    },
    ExclusiveGateway {
        default: Option<Attr>,
    },
    ParallelGateway,
    ServiceTask(TaskAttrs),
    BoundaryEvent {
        attached_to: Option<Attr>,
        /// `cancelActivity`, default true.
        interrupting: bool,
        trigger: EventTrigger,
    },
    IntermediateCatchEvent {
        trigger: EventTrigger,
    },
    /// A sub-process: its contents are nodes with `scope` = this node's index.
    SubProcess {
        triggered_by_event: bool,
    },
    /// Any other flow node (userTask, task, inclusiveGateway, …), by local name.
    Other,
}

/// A flow node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: Attr,
    pub name: Option<Attr>,
    /// The element's local name (`serviceTask`, `boundaryEvent`, …).
    pub element: Name,
    pub kind: NodeKind,
    pub span: Span,
    pub name_span: Span,
    /// Index of the enclosing sub-process node, if any.
    pub scope: Option<usize>,
    pub retries: Vec<RetrySpec>,
    pub timeouts: Vec<TimeoutSpec>,
    /// `isForCompensation="true"`: entered by compensation, not by flow.
    pub for_compensation: bool,
    /// The element's qualified name as written (`bpmn:serviceTask`).
    pub qname: Name,
    /// The element's start tag and whether it is self-closing (for fixes).
    pub tag: ElementSpans,
    /// Its `bpmn:extensionElements`, if it has one (fixes insert into it).
    pub extension_elements: Option<ElementSpans>,
    /// Every `*EventDefinition` child, by local name, with its spans (QF041
    /// points at the one qflow does not execute).
    pub event_definitions: Vec<ElementRef>,
    /// `<bpmn:incoming>` children: value = the flow id, full_span = the element.
    pub incoming_refs: Vec<Attr>,
    /// `<bpmn:outgoing>` children, likewise.
    pub outgoing_refs: Vec<Attr>,
    /// A start event with `isInterrupting="false"` (an event sub-process's
    /// non-interrupting start).
    pub non_interrupting: bool,
}

impl Node {
    pub fn id(&self) -> &str {
        &self.id.value
    }

    pub fn task_attrs(&self) -> Option<&TaskAttrs> {
        match &self.kind {
            NodeKind::ServiceTask(t) => Some(t),
            _ => None,
        }
    }

    /// `q:task` and no `q:channel`: a registered task.
    pub fn registered_task(&self) -> Option<&Attr> {
        self.task_attrs()
            .filter(|t| t.channel.is_none())
            .and_then(|t| t.task.as_ref())
    }

    /// `q:channel` and no `q:task`: a channel call.
    pub fn channel_call(&self) -> Option<&Attr> {
        self.task_attrs()
            .filter(|t| t.task.is_none())
            .and_then(|t| t.channel.as_ref())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    pub id: Attr,
    pub name: Option<Attr>,
    pub source: Option<Attr>,
    pub target: Option<Attr>,
    /// The condition's text (trimmed), with the span of the text, when the
    /// flow has a `conditionExpression`; an empty expression is an empty
    /// value (the flow is conditional for the modelling rules, as in
    /// bpmnlint; the runtime reads it as no condition).
    pub condition: Option<Attr>,
    pub span: Span,
    pub scope: Option<usize>,
}

/// A `<condition>` in a node's `conditionalEventDefinition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventCondition {
    /// Index into [`Process::nodes`].
    pub node: u32,
    /// Index into that node's `event_definitions`.
    pub definition: u32,
    /// It has a body, as bpmnlint reads one: text that is not only
    /// whitespace, or a CDATA section that is not empty (even one of
    /// blanks: bpmn-moddle keeps every CDATA section). An empty
    /// `<condition/>` is as good as none, to bpmnlint and to a reader.
    pub body: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Process {
    pub id: Option<Attr>,
    pub name: Option<Attr>,
    pub is_executable: bool,
    pub span: Span,
    pub name_span: Span,
    pub nodes: Vec<Node>,
    pub flows: Vec<Flow>,
    /// `default="…"` on any node other than an exclusive gateway (whose
    /// default is in its [`NodeKind`]): (node index, attribute). Few nodes
    /// carry one, so it is kept beside the nodes rather than in each.
    pub other_defaults: Vec<(u32, Attr)>,
    /// Link events: (node index, the `name` of its linkEventDefinition).
    pub links: Vec<(u32, Option<Attr>)>,
    /// The `<condition>` of each conditional event definition, in document
    /// order (few events are conditional, so it is kept beside the nodes).
    pub event_conditions: Vec<EventCondition>,
    /// Lanes, at any depth of the lane sets, of the process and of its
    /// sub-processes.
    pub lanes: Vec<Labelled>,
    /// The lane sets after the first of the process or of a sub-process
    /// (rare): alternative partitions, whose lanes a diagram does not draw.
    pub later_lane_sets: Vec<Span>,
}

impl Process {
    /// The `default` flow id of node `i`, whatever its kind.
    pub fn default_of(&self, i: usize) -> Option<&Attr> {
        match &self.nodes[i].kind {
            NodeKind::ExclusiveGateway { default } => default.as_ref(),
            _ => self
                .other_defaults
                .iter()
                .find(|(n, _)| *n as usize == i)
                .map(|(_, a)| a),
        }
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id.value == id)
    }

    pub fn node_index(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id.value == id)
    }

    pub fn outgoing<'a>(&'a self, node_id: &'a str) -> impl Iterator<Item = &'a Flow> + 'a {
        self.flows
            .iter()
            .filter(move |f| f.source.as_ref().is_some_and(|s| s.value == node_id))
    }

    pub fn incoming<'a>(&'a self, node_id: &'a str) -> impl Iterator<Item = &'a Flow> + 'a {
        self.flows
            .iter()
            .filter(move |f| f.target.as_ref().is_some_and(|s| s.value == node_id))
    }

    /// The routed timer boundary of a channel call, if it has one: a timer
    /// boundary attached to `node` with an outgoing flow. Such a boundary is
    /// a modelled outcome that always wins, so a `<q:retry>` on the call can
    /// never fire (QF022, which refuses the model); the hover shows the
    /// boundary's route instead of a schedule. `None` for a node that is not
    /// a channel call.
    pub fn routed_timer_boundary<'a>(&'a self, node: &'a Node) -> Option<&'a Node> {
        node.channel_call()?;
        self.boundaries(node.id()).find(|b| {
            matches!(
                &b.kind,
                NodeKind::BoundaryEvent {
                    trigger: EventTrigger::Timer(_),
                    ..
                }
            ) && self.outgoing(b.id()).next().is_some()
        })
    }

    /// Boundary events attached to a node.
    pub fn boundaries<'a>(&'a self, node_id: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.nodes.iter().filter(move |n| {
            matches!(&n.kind, NodeKind::BoundaryEvent { attached_to: Some(a), .. } if a.value == node_id)
        })
    }
}

/// An element that may carry a label: a participant, a lane, a global
/// definition (message, signal, error, escalation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labelled {
    /// Its local name (`participant`, `lane`, `message`, …).
    pub local: Name,
    pub id: Option<Attr>,
    pub name: Option<Attr>,
    pub name_span: Span,
    /// A participant's `processRef` (the process its pool draws).
    pub process_ref: Option<Attr>,
}

impl Labelled {
    pub fn id(&self) -> &str {
        self.id.as_ref().map_or("", |a| a.value.as_str())
    }

    /// The trimmed name, empty when there is none.
    pub fn label(&self) -> &str {
        self.name.as_ref().map_or("", |a| a.value.trim())
    }
}

/// A shape's rectangle in the diagram: which [`DiagramElement`] it belongs
/// to and its four numbers (the loader keeps no tree element for them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShapeBounds {
    /// Index into [`Definitions::diagram_elements`].
    pub diagram: u32,
    /// `isExpanded="true"` on the shape (an expanded sub-process or pool).
    pub expanded: bool,
    /// The shape is drawn horizontally: `isHorizontal` is absent or
    /// `"true"` (a pool's fixed side is then its height; QF127).
    pub horizontal: bool,
    /// All four numbers are finite, read as bpmnlint reads them
    /// ([`crate::xml::parse_float`]: `10px` is 10). `false` when all four
    /// are written but one is not finite (`NaN`, `Infinity`, no number at
    /// its start): such a shape
    /// has no place in the diagram, so it collides with nothing and lies
    /// outside whatever pool or sub-process holds it, as bpmnlint reads it.
    /// Each number that is not finite is then 0; the others are as written
    /// (a standard width with an `x="NaN"` is still standard).
    pub finite: bool,
    /// `x` and `y` are written. Bounds with only a width and a height place
    /// nothing: the overlap rule leaves them out (bpmnlint does too), the
    /// size rule judges them (`x` and `y` are then 0).
    pub placed: bool,
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

// The parser keeps only finite numbers (0 in place of the others), so
// equality is reflexive.
impl Eq for ShapeBounds {}

/// A whole `definitions` document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Definitions {
    pub span: Span,
    pub name_span: Span,
    /// The document binds `urn:qflow:bpmn:1` to some prefix (or as default):
    /// only then do the execution rules apply.
    pub declares_qflow: bool,
    pub processes: Vec<Process>,
    pub errors: Vec<ErrorDef>,
    pub channel_configs: Vec<ChannelConfig>,
    /// Every BPMN id in document order (duplicates included: QF003 reports them).
    pub ids: Vec<IdDecl>,
    /// Every reference from a BPMN attribute to an id, in document order.
    pub references: Vec<Reference>,
    /// Every `q:` element and attribute, in document order.
    pub qflow_items: Vec<QflowItem>,
    /// Every bpmndi shape, edge and plane: which BPMN element it draws, and
    /// the whole element (fixes that remove a node remove its drawing too).
    pub diagram_elements: Vec<DiagramElement>,
    /// Every namespace binding (`xmlns:q="…"`) whose URI is not one of BPMN's
    /// own: the prefix as written and the URI, so a near miss of qflow's
    /// namespace can be reported where it is bound.
    pub namespace_bindings: Vec<NamespaceBinding>,
    /// The bounds of every `bpmndi:BPMNShape` that has them (a width and a
    /// height at least), in document order.
    pub shape_bounds: Vec<ShapeBounds>,
    /// Top-level `message`, `signal`, `error` and `escalation` definitions.
    pub globals: Vec<Labelled>,
    /// Every `participant` of every collaboration.
    pub participants: Vec<Labelled>,
}

/// A namespace binding, `xmlns:prefix="uri"` (or `xmlns="uri"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceBinding {
    /// `xmlns:q` or `xmlns`.
    pub qname: Text,
    pub uri: Attr,
}

/// A `bpmndi:BPMNShape`/`BPMNEdge`/`BPMNPlane` and the id it draws.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagramElement {
    pub bpmn_element: Text,
    pub span: Span,
}

impl Definitions {
    /// The first declaration of an id.
    pub fn declaration(&self, id: &str) -> Option<&IdDecl> {
        self.ids.iter().find(|d| d.id.value == id)
    }

    pub fn error(&self, id: &str) -> Option<&ErrorDef> {
        self.errors.iter().find(|e| e.id.value == id)
    }

    pub fn channel_config(&self, channel: &str) -> Option<&ChannelConfig> {
        self.channel_configs
            .iter()
            .find(|c| c.channel.as_ref().is_some_and(|a| a.value == channel))
    }

    /// Processes the qflow execution rules apply to.
    pub fn executable_processes(&self) -> impl Iterator<Item = &Process> {
        let applies = self.declares_qflow;
        self.processes
            .iter()
            .filter(move |p| applies && p.is_executable)
    }
}
