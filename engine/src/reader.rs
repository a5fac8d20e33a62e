//! Reads the semantic [`Definitions`] out of a spanned XML tree.
//!
//! This is the only place that knows how BPMN lays its elements out in XML.
//! It never rejects anything except a document that is not BPMN at all (QF002):
//! every other judgement belongs to the rules, which can then point at spans.

use crate::diagnostic::{Code, Diagnostic};
use crate::model::*;
use crate::span::Span;
use crate::xml::{ElementId, XmlAttr, XmlDoc, XmlElement, BPMN_NS, QFLOW_NS};

pub const BPMNDI_NS: &str = "http://www.omg.org/spec/BPMN/20100524/DI";
pub const DC_NS: &str = "http://www.omg.org/spec/DD/20100524/DC";
pub const DI_NS: &str = "http://www.omg.org/spec/DD/20100524/DI";

/// BPMN flow-node element names (BPMN 2.0 §10); everything else inside a
/// process (sequence flows aside) is data, artifacts or structure.
const FLOW_NODES: &[&str] = &[
    "startEvent",
    "endEvent",
    "intermediateCatchEvent",
    "intermediateThrowEvent",
    "boundaryEvent",
    "implicitThrowEvent",
    "task",
    "serviceTask",
    "userTask",
    "manualTask",
    "scriptTask",
    "businessRuleTask",
    "sendTask",
    "receiveTask",
    "callActivity",
    "subProcess",
    "transaction",
    "adHocSubProcess",
    "exclusiveGateway",
    "parallelGateway",
    "inclusiveGateway",
    "eventBasedGateway",
    "complexGateway",
    "callChoreography",
    "choreographyTask",
    "subChoreography",
];

/// IDREF-valued attributes of BPMN and BPMNDI elements that qflow indexes.
fn reference_kind(attr: &str) -> Option<RefKind> {
    Some(match attr {
        "sourceRef" => RefKind::SourceRef,
        "targetRef" => RefKind::TargetRef,
        "attachedToRef" => RefKind::AttachedToRef,
        "errorRef" => RefKind::ErrorRef,
        "default" => RefKind::Default,
        "bpmnElement" => RefKind::BpmnElement,
        "processRef" | "messageRef" | "signalRef" | "escalationRef" | "calledElement"
        | "dataObjectRef" | "dataStoreRef" | "itemSubjectRef" | "structureRef" | "operationRef"
        | "inMessageRef" | "outMessageRef" | "sourceElement" | "targetElement"
        | "categoryValueRef" | "dataStateRef" | "activityRef" | "implementationRef" => {
            RefKind::Other
        }
        _ => return None,
    })
}

/// Names the model keeps by the ten thousand (the kind of every id, every
/// node, every `q:` item): borrowed from here instead of allocated.
macro_rules! static_names {
    ($($n:literal),* $(,)?) => {
        fn known_name(s: &str) -> Option<&'static str> {
            match s {
                $($n => Some($n),)*
                _ => None,
            }
        }
    };
}

static_names!(
    "startEvent",
    "endEvent",
    "intermediateCatchEvent",
    "intermediateThrowEvent",
    "boundaryEvent",
    "task",
    "serviceTask",
    "userTask",
    "manualTask",
    "scriptTask",
    "businessRuleTask",
    "sendTask",
    "receiveTask",
    "callActivity",
    "subProcess",
    "transaction",
    "exclusiveGateway",
    "parallelGateway",
    "inclusiveGateway",
    "eventBasedGateway",
    "sequenceFlow",
    "process",
    "definitions",
    "error",
    "message",
    "signal",
    "escalation",
    "extensionElements",
    "timerEventDefinition",
    "errorEventDefinition",
    "messageEventDefinition",
    "signalEventDefinition",
    "BPMNDiagram",
    "BPMNPlane",
    "BPMNShape",
    "BPMNEdge",
    "BPMNLabel",
    "collaboration",
    "participant",
    "messageFlow",
    "laneSet",
    "lane",
    "dataObject",
    "dataObjectReference",
    "textAnnotation",
    "association",
    "retry",
    "timeout",
    "channel",
    "operation",
    "channelConfig",
    "bpmn:startEvent",
    "bpmn:endEvent",
    "bpmn:serviceTask",
    "bpmn:task",
    "bpmn:userTask",
    "bpmn:exclusiveGateway",
    "bpmn:parallelGateway",
    "bpmn:boundaryEvent",
    "bpmn:intermediateCatchEvent",
    "bpmn:subProcess",
    "q:task",
    "q:retry",
    "q:timeout",
    "q:channel",
    "q:operation",
    "q:channelConfig",
);

/// A name for the model: static when it is one of BPMN's or qflow's own.
fn name(s: &str) -> Name {
    match known_name(s) {
        Some(known) => Name::Borrowed(known),
        None => Name::Owned(s.to_string()),
    }
}

fn attr(a: XmlAttr<'_>) -> Attr {
    Attr {
        value: Text::from(a.value.as_ref()),
        span: a.value_span,
        full_span: a.span,
    }
}

fn plain_attr(el: &XmlElement<'_>, local: &str) -> Option<Attr> {
    el.attr(local).map(attr)
}

/// An element's text content as an [`Attr`], trimmed, with the span of the
/// trimmed text in the source.
fn text_attr(doc: &XmlDoc<'_>, el: &XmlElement<'_>) -> Option<Attr> {
    let span = el.text_span()?;
    let raw = &doc.source[span.start..span.end];
    let lead = raw.len() - raw.trim_start().len();
    let trail = raw.len() - raw.trim_end().len();
    let value = Text::from(el.text.trim());
    let inner = if lead + trail >= raw.len() {
        Span::at(span.start)
    } else {
        Span::new(span.start + lead, span.end - trail)
    };
    Some(Attr {
        value,
        span: inner,
        full_span: el.span,
    })
}

fn is_bpmn(el: &XmlElement<'_>, local: &str) -> bool {
    el.is(BPMN_NS, local)
}

/// Read a parsed document. `Err` only for QF002 (not a BPMN definitions document).
// A refused document is rare and returned once: boxing buys nothing.
#[allow(clippy::result_large_err)]
pub fn read(doc: &XmlDoc<'_>) -> Result<Definitions, Diagnostic> {
    let root = doc.element(doc.root);
    if !is_bpmn(root, "definitions") {
        let found = match root.ns.as_deref() {
            Some(ns) => format!("<{}> in namespace `{ns}`", root.qname),
            None => format!("<{}> in no namespace", root.qname),
        };
        return Err(Diagnostic::new(
            Code::QF002,
            root.name_span(),
            format!("not a BPMN 2.0 document: the root element is {found}"),
        )
        .label("expected <definitions> of the BPMN 2.0 model namespace")
        .help(format!(
            "the root must be <bpmn:definitions xmlns:bpmn=\"{BPMN_NS}\">; check the namespace URI is exactly this one"
        )));
    }
    let mut defs = Definitions {
        span: root.span,
        name_span: root.name_span(),
        declares_qflow: doc.declares(QFLOW_NS),
        ..Definitions::default()
    };
    index_ids_refs_and_qflow(doc, &mut defs);

    for (child_id, child) in doc.children(doc.root) {
        if child.in_ns(BPMN_NS)
            && matches!(child.local, "message" | "signal" | "error" | "escalation")
        {
            defs.globals.push(labelled(child));
        }
        if is_bpmn(child, "collaboration") {
            for (_, c) in doc.children(child_id) {
                if is_bpmn(c, "participant") {
                    defs.participants.push(labelled(c));
                }
            }
        }
        if is_bpmn(child, "process") {
            defs.processes.push(read_process(doc, child_id));
        } else if is_bpmn(child, "error") {
            if let Some(id) = plain_attr(child, "id") {
                defs.errors.push(ErrorDef {
                    id,
                    error_code: plain_attr(child, "errorCode"),
                    name: plain_attr(child, "name"),
                    span: child.span,
                });
            }
        } else if child.is(QFLOW_NS, "channelConfig") {
            defs.channel_configs.push(read_channel_config(child));
        } else if is_bpmn(child, "extensionElements") {
            for (_, ext) in doc.children(child_id) {
                if ext.is(QFLOW_NS, "channelConfig") {
                    defs.channel_configs.push(read_channel_config(ext));
                }
            }
        }
    }
    Ok(defs)
}

fn labelled(el: &XmlElement<'_>) -> Labelled {
    Labelled {
        local: name(el.local),
        id: plain_attr(el, "id"),
        name: plain_attr(el, "name"),
        name_span: el.name_span(),
        process_ref: plain_attr(el, "processRef"),
    }
}

/// Lanes of a lane set, and of every child lane set below them.
fn read_lanes(doc: &XmlDoc<'_>, lane_set: ElementId, out: &mut Vec<Labelled>) {
    for (lane_id, lane) in doc.children(lane_set) {
        if !is_bpmn(lane, "lane") {
            continue;
        }
        out.push(labelled(lane));
        for (child_set, c) in doc.children(lane_id) {
            if is_bpmn(c, "childLaneSet") {
                read_lanes(doc, child_set, out);
            }
        }
    }
}

fn read_channel_config(el: &XmlElement<'_>) -> ChannelConfig {
    ChannelConfig {
        channel: plain_attr(el, "channel"),
        max_deliveries: plain_attr(el, "maxDeliveries"),
        delivery_interval: plain_attr(el, "deliveryInterval"),
        span: el.span,
        name_span: el.name_span(),
    }
}

/// One pass over the document in order: ids, references and `q:` vocabulary.
fn index_ids_refs_and_qflow(doc: &XmlDoc<'_>, defs: &mut Definitions) {
    // in_vendor[i]: element i is inside extension content (not BPMN).
    let mut in_vendor = vec![false; doc.elements.len()];
    // (tree element, diagram element) of every shape, to attach its bounds.
    let mut shapes: Vec<(u32, u32, bool)> = Vec::new();
    for (i, el) in doc.elements.iter().enumerate() {
        let parent_vendor = el.parent().map(|p| in_vendor[p]).unwrap_or(false);
        let parent_is_ext = el
            .parent()
            .map(|p| is_bpmn(doc.element(p), "extensionElements"))
            .unwrap_or(false);
        let is_spec_ns = matches!(
            el.ns.as_deref(),
            Some(BPMN_NS) | Some(BPMNDI_NS) | Some(DC_NS) | Some(DI_NS)
        );
        in_vendor[i] = parent_vendor || parent_is_ext || !is_spec_ns;

        // q: vocabulary anywhere (extension content included: that is where it lives).
        if el.in_ns(QFLOW_NS) {
            let host = el
                .parent()
                .map(|p| name(doc.element(p).local))
                .unwrap_or_default();
            let owner = match el.parent().map(|p| doc.element(p)) {
                Some(p) if is_bpmn(p, "extensionElements") => p
                    .parent()
                    .map(|g| name(doc.element(g).local))
                    .unwrap_or_default(),
                _ => host.clone(),
            };
            defs.qflow_items.push(QflowItem {
                is_element: true,
                local: name(el.local),
                qname: name(el.qname),
                name_span: el.name_span(),
                span: el.span,
                host,
                owner,
                attributes: el
                    .attrs
                    .iter()
                    .map(|a| NamedAttr {
                        qname: Text::from(a.qname),
                        local: Text::from(a.local),
                        in_qflow_ns: a.ns.as_deref() == Some(QFLOW_NS),
                        is_xmlns: a.is_namespace_declaration(),
                        name_span: a.name_span,
                        attr: attr(a),
                    })
                    .collect(),
            });
        }
        // One pass over the attributes (they are lexed on demand): q: names,
        // then, for BPMN content, ids, references and drawings.
        let vendor = in_vendor[i];
        let is_di = el.in_ns(BPMNDI_NS);
        for a in &el.attrs {
            if a.ns.as_deref() == Some(QFLOW_NS) {
                defs.qflow_items.push(QflowItem {
                    is_element: false,
                    local: name(a.local),
                    qname: name(a.qname),
                    name_span: a.name_span,
                    span: a.span,
                    host: name(el.local),
                    owner: name(el.local),
                    attributes: Vec::new(),
                });
            }
            if a.is_namespace_declaration()
                && !matches!(
                    a.value.as_ref(),
                    BPMN_NS | BPMNDI_NS | DC_NS | DI_NS | QFLOW_NS
                )
            {
                defs.namespace_bindings
                    .push(crate::model::NamespaceBinding {
                        qname: Text::from(a.qname),
                        uri: Attr {
                            value: Text::from(a.value.as_ref()),
                            span: a.value_span,
                            full_span: a.span,
                        },
                    });
            }
            if vendor || a.ns.is_some() {
                continue;
            }
            if a.local == "id" {
                defs.ids.push(IdDecl {
                    id: attr(a),
                    element: ElementRef {
                        local: name(el.local),
                        span: el.span,
                        name_span: el.name_span(),
                    },
                });
            } else if let Some(kind) = reference_kind(a.local) {
                if is_di && kind == RefKind::BpmnElement {
                    if el.local == "BPMNShape" {
                        let expanded = el
                            .attr("isExpanded")
                            .is_some_and(|a| a.value.trim() == "true");
                        shapes.push((i as u32, defs.diagram_elements.len() as u32, expanded));
                    }
                    defs.diagram_elements.push(DiagramElement {
                        bpmn_element: Text::from(a.value.as_ref()),
                        span: el.span,
                    });
                }
                // `default` is a reference only on gateways and activities.
                if kind == RefKind::Default
                    && !(el.local.ends_with("Gateway") || is_activity(el.local))
                {
                    continue;
                }
                if a.value.is_empty() && kind == RefKind::Default {
                    continue;
                }
                defs.references.push(Reference {
                    kind,
                    target: attr(a),
                });
            }
        }
    }
    attach_bounds(doc, &shapes, defs);
}

/// Pair each shape with the bounds leaf the parser kept for it (a label's
/// bounds sit in the label, not the shape, and are not kept).
fn attach_bounds(doc: &XmlDoc<'_>, shapes: &[(u32, u32, bool)], defs: &mut Definitions) {
    defs.shape_bounds.reserve(shapes.len());
    let mut taken = vec![false; shapes.len()];
    for b in &doc.leaf_bounds {
        // `shapes` is in tree order, so sorted by element.
        let Ok(k) = shapes.binary_search_by_key(&b.parent, |s| s.0) else {
            continue;
        };
        if std::mem::replace(&mut taken[k], true) {
            continue;
        }
        let (_, diagram, expanded) = shapes[k];
        defs.shape_bounds.push(ShapeBounds {
            diagram,
            expanded,
            x: b.x,
            y: b.y,
            width: b.width,
            height: b.height,
        });
    }
    // A tree parsed without skipping leaves keeps the bounds as elements.
    for (k, &(element, diagram, expanded)) in shapes.iter().enumerate() {
        if taken[k] {
            continue;
        }
        let bounds = doc
            .children(element as usize)
            .find(|(_, c)| c.is(DC_NS, "Bounds"))
            .and_then(|(_, b)| {
                let num = |n: &str| {
                    b.attr(n)
                        .and_then(|a| a.value.trim().parse::<f32>().ok())
                        .filter(|v| v.is_finite())
                };
                Some((num("x")?, num("y")?, num("width")?, num("height")?))
            });
        if let Some((x, y, width, height)) = bounds {
            defs.shape_bounds.push(ShapeBounds {
                diagram,
                expanded,
                x,
                y,
                width,
                height,
            });
        }
    }
    defs.shape_bounds.sort_by_key(|s| s.diagram);
}

fn is_activity(local: &str) -> bool {
    local.ends_with("Task")
        || matches!(
            local,
            "task" | "subProcess" | "transaction" | "adHocSubProcess" | "callActivity"
        )
}

fn read_process(doc: &XmlDoc<'_>, process_id: ElementId) -> Process {
    let el = doc.element(process_id);
    // Reserve once (nodes and flows are at most the children, sub-processes
    // aside): growing a Vec of large nodes by doubling copies it every time.
    let children = doc.children(process_id).count();
    let mut process = Process {
        id: plain_attr(el, "id"),
        name: plain_attr(el, "name"),
        is_executable: el
            .attr("isExecutable")
            .is_some_and(|a| a.value.trim() == "true"),
        span: el.span,
        name_span: el.name_span(),
        nodes: Vec::with_capacity(children),
        flows: Vec::with_capacity(children),
        other_defaults: Vec::new(),
        links: Vec::new(),
        lanes: Vec::new(),
        later_lane_sets: Vec::new(),
    };
    read_container(doc, process_id, None, &mut process);
    read_lane_sets(doc, process_id, &mut process);
    process
}

/// The lanes of a process's or sub-process's lane sets.
fn read_lane_sets(doc: &XmlDoc<'_>, container: ElementId, process: &mut Process) {
    let mut first = true;
    for (set_id, set) in doc.children(container) {
        if is_bpmn(set, "laneSet") {
            if !first {
                process.later_lane_sets.push(set.span);
            }
            first = false;
            read_lanes(doc, set_id, &mut process.lanes);
        }
    }
}

/// Read the flow elements of a process or sub-process into `process`.
fn read_container(
    doc: &XmlDoc<'_>,
    container: ElementId,
    scope: Option<usize>,
    process: &mut Process,
) {
    for (child_id, child) in doc.children(container) {
        if !child.in_ns(BPMN_NS) {
            continue;
        }
        if child.local == "sequenceFlow" {
            // A written conditionExpression makes the flow conditional even
            // when it is empty (as BPMN tools and bpmnlint read it): an empty
            // one is an empty value, which the runtime treats as no condition.
            let condition = doc
                .children(child_id)
                .find(|(_, c)| is_bpmn(c, "conditionExpression"))
                .map(|(_, c)| {
                    text_attr(doc, c).unwrap_or_else(|| Attr {
                        value: Text::default(),
                        span: Span::at(c.span.end),
                        full_span: c.span,
                    })
                });
            let a = Plain::read(child, &["id", "name", "sourceRef", "targetRef"]);
            let [id, name_attr, source, target] = a.0;
            process.flows.push(Flow {
                id: id.map(attr).unwrap_or_else(|| missing_attr(child)),
                name: name_attr.map(attr),
                source: source.map(attr),
                target: target.map(attr),
                condition,
                span: child.span,
                scope,
            });
            continue;
        }
        if !FLOW_NODES.contains(&child.local) {
            continue;
        }
        let index = process.nodes.len();
        let (node, default) = read_node(doc, child_id, scope);
        process.nodes.push(node);
        if child.local != "exclusiveGateway" {
            if let Some(d) = default.filter(|d| !d.value.is_empty()) {
                process.other_defaults.push((index as u32, d));
            }
        }
        if child.local.ends_with("Event") {
            if let Some((_, link)) = doc
                .children(child_id)
                .find(|(_, c)| is_bpmn(c, "linkEventDefinition"))
            {
                process.links.push((index as u32, plain_attr(link, "name")));
            }
        }
        if matches!(
            child.local,
            "subProcess" | "transaction" | "adHocSubProcess"
        ) {
            read_container(doc, child_id, Some(index), process);
            read_lane_sets(doc, child_id, process);
        }
    }
}

/// An id-less element still gets a node, with an empty id at its name (QF003/QF004
/// never match it, and the runtime never sees it because the loader refuses it).
fn missing_attr(el: &XmlElement<'_>) -> Attr {
    Attr {
        value: Text::default(),
        span: el.name_span(),
        full_span: el.name_span(),
    }
}

/// The attributes a node is read from, found in one pass over its start tag
/// (each lookup by name lexes the tag again).
const NODE_ATTRS: [&str; 8] = [
    "id",
    "name",
    "default",
    "attachedToRef",
    "cancelActivity",
    "triggeredByEvent",
    "isForCompensation",
    "isInterrupting",
];

/// Unprefixed attributes of one element looked up by name in one pass: slot
/// `k` holds the first attribute named `names[k]`, as [`XmlElement::attr`]
/// would find it. The `q:` attributes a service task names come along.
struct Plain<'a, const N: usize>([Option<XmlAttr<'a>>; N], [Option<XmlAttr<'a>>; 3]);

impl<'a, const N: usize> Plain<'a, N> {
    fn read(el: &XmlElement<'a>, names: &[&str; N]) -> Self {
        let mut found = Plain(std::array::from_fn(|_| None), [None, None, None]);
        for a in &el.attrs {
            match a.ns.as_deref() {
                None => {
                    if let Some(k) = names.iter().position(|n| *n == a.qname) {
                        if found.0[k].is_none() {
                            found.0[k] = Some(a);
                        }
                    }
                }
                Some(QFLOW_NS) => {
                    let k = match a.local {
                        "task" => 0,
                        "channel" => 1,
                        "operation" => 2,
                        _ => continue,
                    };
                    if found.1[k].is_none() {
                        found.1[k] = Some(a);
                    }
                }
                Some(_) => {}
            }
        }
        found
    }
}

fn is_true(a: &Option<XmlAttr<'_>>) -> bool {
    a.as_ref().is_some_and(|a| a.value.trim() == "true")
}

/// A node, and its `default` attribute (kept beside the node unless it is an
/// exclusive gateway's).
fn read_node(doc: &XmlDoc<'_>, id: ElementId, scope: Option<usize>) -> (Node, Option<Attr>) {
    let el = doc.element(id);
    let trigger = read_trigger(doc, id);
    let Plain(
        [id_attr, name_attr, default, attached_to, cancel_activity, triggered_by_event, for_compensation, is_interrupting],
        [task, channel, operation],
    ) = Plain::read(el, &NODE_ATTRS);
    let mut default = default.map(attr);
    let kind = match el.local {
        "startEvent" => NodeKind::StartEvent { trigger },
        "endEvent" => NodeKind::EndEvent { trigger },
        "exclusiveGateway" => NodeKind::ExclusiveGateway {
            default: default.take(),
        },
        "parallelGateway" => NodeKind::ParallelGateway,
        "serviceTask" => NodeKind::ServiceTask(TaskAttrs {
            task: task.map(attr),
            channel: channel.map(attr),
            operation: operation.map(attr),
        }),
        "boundaryEvent" => NodeKind::BoundaryEvent {
            attached_to: attached_to.map(attr),
            interrupting: cancel_activity.is_none_or(|a| a.value.trim() != "false"),
            trigger,
        },
        "intermediateCatchEvent" => NodeKind::IntermediateCatchEvent { trigger },
        "subProcess" | "transaction" | "adHocSubProcess" => NodeKind::SubProcess {
            triggered_by_event: is_true(&triggered_by_event),
        },
        _ => NodeKind::Other,
    };
    let mut retries = Vec::new();
    let mut timeouts = Vec::new();
    let mut extension_elements = None;
    let mut event_definitions = Vec::new();
    // Most nodes have one incoming and one outgoing flow: a first push into an
    // empty Vec reserves four (224 B of `Attr`s), 7 MB over a 20,000-task model.
    let mut incoming_refs = Vec::with_capacity(1);
    let mut outgoing_refs = Vec::with_capacity(1);
    for (_, c) in doc.children(id).filter(|(_, c)| c.in_ns(BPMN_NS)) {
        if c.local.ends_with("EventDefinition") {
            event_definitions.push(ElementRef {
                local: name(c.local),
                span: c.span,
                name_span: c.name_span(),
            });
        } else if c.local == "incoming" || c.local == "outgoing" {
            if let Some(t) = text_attr(doc, c) {
                if c.local == "incoming" {
                    incoming_refs.push(t);
                } else {
                    outgoing_refs.push(t);
                }
            }
        }
    }
    for (ext_id, ext) in doc.children(id) {
        if !is_bpmn(ext, "extensionElements") {
            continue;
        }
        if extension_elements.is_none() {
            extension_elements = Some(element_spans(ext));
        }
        for (_, q) in doc.children(ext_id) {
            if q.is(QFLOW_NS, "retry") {
                retries.push(RetrySpec {
                    span: q.span,
                    name_span: q.name_span(),
                    qname: Text::from(q.qname),
                    max_attempts: plain_attr(q, "maxAttempts"),
                    backoff: plain_attr(q, "backoff"),
                    initial: plain_attr(q, "initial"),
                    factor: plain_attr(q, "factor"),
                    max_delay: plain_attr(q, "maxDelay"),
                    max_elapsed: plain_attr(q, "maxElapsed"),
                    jitter: plain_attr(q, "jitter"),
                    non_retryable_codes: plain_attr(q, "nonRetryableCodes"),
                });
            } else if q.is(QFLOW_NS, "timeout") {
                timeouts.push(TimeoutSpec {
                    span: q.span,
                    name_span: q.name_span(),
                    qname: Text::from(q.qname),
                    duration: plain_attr(q, "duration"),
                });
            }
        }
    }
    let node = Node {
        id: id_attr.map(attr).unwrap_or_else(|| missing_attr(el)),
        name: name_attr.map(attr),
        element: name(el.local),
        kind,
        span: el.span,
        name_span: el.name_span(),
        scope,
        retries,
        timeouts,
        for_compensation: is_true(&for_compensation),
        qname: name(el.qname),
        tag: element_spans(el),
        extension_elements,
        event_definitions,
        incoming_refs,
        outgoing_refs,
        non_interrupting: el.local == "startEvent"
            && is_interrupting.is_some_and(|a| a.value.trim() == "false"),
    };
    (node, default)
}

fn element_spans(el: &XmlElement<'_>) -> ElementSpans {
    ElementSpans {
        span: el.span,
        start_tag: el.start_tag(),
        self_closing: el.span.end == el.start_tag().end,
    }
}

fn read_trigger(doc: &XmlDoc<'_>, id: ElementId) -> EventTrigger {
    let defs: Vec<(ElementId, &XmlElement<'_>)> = doc
        .children(id)
        .filter(|(_, c)| c.in_ns(BPMN_NS) && c.local.ends_with("EventDefinition"))
        .collect();
    match defs.as_slice() {
        [] => EventTrigger::None,
        [(def_id, def)] if def.local == "timerEventDefinition" => {
            let mut timer = TimerDef {
                span: def.span,
                ..TimerDef::default()
            };
            for (_, t) in doc.children(*def_id) {
                if !t.in_ns(BPMN_NS) {
                    continue;
                }
                match t.local {
                    "timeDuration" => timer.time_duration = text_attr(doc, t),
                    "timeDate" => timer.time_date = text_attr(doc, t),
                    "timeCycle" => timer.time_cycle = text_attr(doc, t),
                    _ => {}
                }
            }
            EventTrigger::Timer(Box::new(timer))
        }
        [(_, def)] if def.local == "errorEventDefinition" => EventTrigger::Error {
            error_ref: plain_attr(def, "errorRef"),
            span: def.span,
        },
        [(_, def)] => EventTrigger::Other(def.local.to_string()),
        _ => EventTrigger::Other("multiple event definitions".to_string()),
    }
}
