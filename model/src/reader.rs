//! Reads the semantic [`Definitions`] straight from the parser's events
//! ([`read_source`]), without building an XML tree.
//!
//! This is the only place that knows how BPMN lays its elements out in XML.
//! It never rejects anything except a document that is not BPMN at all (QF002):
//! every other judgement belongs to the rules, which can then point at spans.

use crate::diagnostic::{Code, Diagnostic};
use crate::model::*;
use crate::span::Span;
use std::borrow::Cow;

use crate::xml::{self, LeafBounds, ParseOptions, Start, XmlAttr, XmlError, BPMN_NS, QFLOW_NS};

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

fn is_activity(local: &str) -> bool {
    local.ends_with("Task")
        || matches!(
            local,
            "task" | "subProcess" | "transaction" | "adHocSubProcess" | "callActivity"
        )
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

/// Documents at least this large are read on two threads (see
/// [`read_source`]). Below it a second thread would save less than it costs:
/// a 1 MB model reads in about 5 ms on one core, and starting a thread,
/// cloning the namespace scope and merging the two halves cost tens of
/// microseconds; the models whose reading a person waits for (a modeller's
/// export of thousands of tasks) are far above it.
pub const SPLIT_THRESHOLD: usize = 1 << 20;

/// The largest document [`read_source`] reads (4 GiB less a byte): every
/// offset into it fits the `u32`s a [`Span`] keeps. A larger one is a
/// QF001 at its first byte, before any of it is read.
pub const MAX_SOURCE_LEN: usize = u32::MAX as usize;

/// The QF001 of a document longer than [`MAX_SOURCE_LEN`] bytes.
fn too_large(len: usize) -> Option<crate::xml::XmlError> {
    (len > MAX_SOURCE_LEN).then(|| crate::xml::XmlError {
        message: format!("the document is {len} bytes: qflow reads documents of up to 4 GiB"),
        help: "split the definitions into several files".into(),
        span: Span::at(0),
    })
}

/// The result of a read: the XML fault (QF001), else QF002 or the model.
pub type Read = Result<Result<Definitions, Diagnostic>, XmlError>;

/// Read a document straight from the parser's events, with no tree.
///
/// The loader once built [`crate::xml::parse_with`]'s tree only to walk it once: building it touched ~20 MB
/// on a 12 MB model, and walking it lexed every start tag again. Here each
/// element is read when its start tag is, into the model's place for it,
/// and what is only known at its end tag (its span, the text of an
/// `incoming`, a node's event trigger) is filled in then. The outer
/// `Result` is the XML fault (QF001), the inner one QF002.
///
/// A document of [`SPLIT_THRESHOLD`] bytes or more is read on two threads
/// ([`split_plan`] says where; [`read_split`] how). The answer is always
/// the one reading it whole on one thread gives.
#[allow(clippy::result_large_err)]
pub fn read_source(source: &str, options: ParseOptions<'_>) -> Read {
    if let Some(fault) = too_large(source.len()) {
        return Err(fault);
    }
    if source.len() >= SPLIT_THRESHOLD {
        if let Some(plan) = split_plan(source) {
            if let Some((read, _)) = read_split(source, options, plan) {
                return read;
            }
        }
    }
    read_whole(source, options)
}

/// Where a split read divides a document: the second thread reads from
/// `split` to the end, the first everything before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitPlan {
    /// `None`: `split` is between two children of the root. `Some(at)`:
    /// between two children of the root's child that starts at byte `at`
    /// (a process).
    pub enter: Option<usize>,
    pub split: usize,
}

/// How a split read went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitOutcome {
    /// Both threads' work was kept.
    Kept,
    /// The first half did not end where the second began (the candidate
    /// sat in a comment, a deeper element…): the first thread read on to
    /// the end itself, and the second thread's work was dropped.
    Continued,
    /// The head read the whole document (the element to enter never
    /// opened).
    Head,
    /// The document's first fault, found after the split by a half that
    /// read to the end from the state the whole read stands in there.
    Fault,
    /// A fault, a QF002 or a plan that cannot apply: read whole again.
    Whole,
}

/// [`read_source`] with a given plan whatever the document's size, and how
/// it went. For the tests that hold the split read to the whole read.
#[doc(hidden)]
#[allow(clippy::result_large_err)]
pub fn read_source_split_at(
    source: &str,
    options: ParseOptions<'_>,
    plan: SplitPlan,
) -> (Read, SplitOutcome) {
    read_split(source, options, plan)
        .unwrap_or_else(|| (read_whole(source, options), SplitOutcome::Whole))
}

/// [`read_source`] on one thread whatever the document's size: what a split
/// read must equal.
#[doc(hidden)]
#[allow(clippy::result_large_err)]
pub fn read_source_whole(source: &str, options: ParseOptions<'_>) -> Read {
    read_whole(source, options)
}

/// The local name of the start tag whose `<` is at `lt`, if `lt` starts one
/// (`<name` or `<prefix:name`, then a delimiter).
fn start_tag_local(bytes: &[u8], lt: usize) -> Option<&[u8]> {
    let name = &bytes[lt + 1..];
    let len = name
        .iter()
        .position(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b'>' | b'/'))?;
    let qname = &name[..len];
    if qname.is_empty() || matches!(qname[0], b'/' | b'!' | b'?') {
        return None;
    }
    Some(match qname.iter().rposition(|&c| c == b':') {
        Some(colon) => &qname[colon + 1..],
        None => qname,
    })
}

/// The `<` of every `name` start tag (any prefix) from byte `from`, by a
/// `memmem` scan: only candidates (one may sit in a comment or an attribute
/// value), which [`read_split`] proves or rejects.
fn start_tags<'s>(source: &'s str, from: usize, name: &'s str) -> impl Iterator<Item = usize> + 's {
    let bytes = source.as_bytes();
    memchr::memmem::find_iter(&bytes[from.min(bytes.len())..], name.as_bytes()).filter_map(
        move |at| {
            let at = from + at;
            let before = &bytes[..at];
            let lt = match before.last()? {
                b'<' => at - 1,
                b':' => {
                    let prefix = &before[..before.len() - 1];
                    let lt = prefix.iter().rposition(|&c| {
                        !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.') || c >= 0x80)
                    })?;
                    if prefix[lt] != b'<' || lt + 1 == prefix.len() {
                        return None;
                    }
                    lt
                }
                _ => return None,
            };
            (start_tag_local(bytes, lt)? == name.as_bytes()).then_some(lt)
        },
    )
}

/// The `<` of the first `BPMNDiagram` start tag (any prefix), a candidate.
pub fn diagram_start(source: &str) -> Option<usize> {
    start_tags(source, 0, "BPMNDiagram").next()
}

/// A byte of a process costs the reader about one and a half bytes of a
/// diagram (nodes, flows, ids and references against shapes whose bounds
/// are skipped leaves), as a fraction: [`PROCESS_BYTE_COST`]`.0` /
/// [`PROCESS_BYTE_COST`]`.1`. Timed inside a split read of the
/// 20,000-task model on a quiet machine, the first half (only process)
/// took 5.9 ms a megabyte and the second (the rest of the process and the
/// 6.7 MB diagram) 3.8 ms a diagram megabyte: counting two, as measured
/// on one thread, the first half ended at 28 ms and the second at 34.
/// Each half's own page faults and its thread's start weigh on the second
/// more than a one-thread read shows.
const PROCESS_BYTE_COST: (usize, usize) = (3, 2);

/// Where [`read_source`] splits a document so both threads have about the
/// same work: inside the process that holds the point of equal cost, at
/// the start of a flow node or sequence flow, counting a process byte as
/// [`PROCESS_BYTE_COST`] diagram bytes; before the diagram when no such
/// start is found. `None` when neither is found.
pub fn split_plan(source: &str) -> Option<SplitPlan> {
    let diagram = diagram_start(source);
    let first_process = start_tags(source, 0, "process").next();
    let Some(process) = first_process.filter(|&p| diagram.is_none_or(|d| p < d)) else {
        return diagram.map(|split| SplitPlan { enter: None, split });
    };
    let processes_end = diagram.unwrap_or(source.len());
    let processes = processes_end - process;
    let rest = source.len() - processes_end;
    // process + x costs as much as the rest of the processes and the diagram:
    // x * c = (processes - x) * c + rest, c = num / den.
    let (num, den) = PROCESS_BYTE_COST;
    let target = process + processes / 2 + rest * den / (2 * num);
    if target >= processes_end {
        // The diagram alone is at least half the work.
        return diagram.map(|split| SplitPlan { enter: None, split });
    }
    let enter = start_tags(source, process, "process")
        .take_while(|&p| p < target)
        .last()
        .unwrap_or(process);
    let bytes = source.as_bytes();
    let split = memchr::memchr_iter(b'<', &bytes[target..processes_end])
        .map(|at| target + at)
        .find(|&lt| {
            start_tag_local(bytes, lt).is_some_and(|local| {
                local == b"sequenceFlow" || FLOW_NODES.iter().any(|n| n.as_bytes() == local)
            })
        });
    match split {
        Some(split) => Some(SplitPlan {
            enter: Some(enter),
            split,
        }),
        None => diagram.map(|split| SplitPlan { enter: None, split }),
    }
}

/// One thread, start to end.
#[allow(clippy::result_large_err)]
fn read_whole(source: &str, options: ParseOptions<'_>) -> Read {
    let mut b = Builder::new(source);
    let declared = xml::drive(source, options, &mut b)?;
    Ok(b.finish(&declared))
}

/// The document read in two halves, `[0, split)` on this thread and
/// `[split, end)` on a second one, or `None` when they are not provably
/// the whole read (and it must be read whole).
///
/// This thread reads the head: the prolog, the root's start tag and, when
/// the plan enters one of the root's children (a process), everything up
/// to and including that child's start tag. The second thread starts at
/// `split` from the state the head ends in (the head's open elements, their
/// namespace scope) with a builder of its own holding copies of their
/// frames; this thread reads on from the head to `split`. The halves are
/// kept only when the first ends exactly at `split` with the head's
/// elements open and nothing else, and neither faulted: then `split` sat
/// between two children of the last of them (not in a comment, a CDATA
/// section, a processing instruction, an attribute value or a deeper
/// element), so the whole read hands one builder exactly the events the
/// two halves hand theirs, in the same order, with the same namespace
/// scope at `split` (the open elements' own). Every element opened after
/// the head then opens and closes within one half, so each half's model
/// entries are complete, and the model is the first half's document-order
/// lists followed by the second's ([`Builder::absorb`]); the end tags of
/// the head's elements, read by the second thread, are closed by the first
/// builder after the merge. The second builder assumed the entered
/// process had no lane set yet; if it met one and the first half had one,
/// the split is dropped.
///
/// When the first half ends anywhere else without a fault, this thread
/// reads on from `split` itself with its own state (a piece starts at any
/// `<` between two events) and the second thread's work is dropped. A
/// QF002 is only ever decided at the root, in the head. A fault found by a
/// half that read to the end from the whole read's state at the split (the
/// second half, or this thread reading on) is the whole read's first fault,
/// word for word, unless it is one of the piece's own checks
/// ([`xml::Resume::own_fault`]); any other fault (the first half's, which
/// may be its range's own ending) reads the document whole again.
#[allow(clippy::result_large_err)]
fn read_split(
    source: &str,
    options: ParseOptions<'_>,
    plan: SplitPlan,
) -> Option<(Read, SplitOutcome)> {
    let split = plan.split;
    if split >= source.len() || !source.is_char_boundary(split) {
        return None;
    }
    let mut first = Builder::new(source);
    let (head_end, mut scope) = match xml::drive_head(source, options, plan.enter, &mut first) {
        Ok(xml::Head::Open { at, state }) => (at, state),
        Ok(xml::Head::Done(declared)) => {
            return Some((Ok(first.finish(&declared)), SplitOutcome::Head))
        }
        Err(_) => return None,
    };
    if first.refused.is_some() || split < head_end {
        return None;
    }
    first.reserve_for(source.len());
    let mut inherited = first.inherited_by_second()?;
    inherited.reserve_for(source.len());
    let head = scope.clone();
    let second_scope = scope.clone();
    let (first_read, second) = std::thread::scope(|s| {
        let second = s.spawn(move || {
            let mut b = inherited;
            let mut scope = second_scope;
            let read = xml::drive_piece(source, split..source.len(), options, &mut scope, &mut b);
            (read, b, scope)
        });
        let read = xml::drive_piece(source, head_end..split, options, &mut scope, &mut first);
        (read, second.join())
    });
    let (second_read, second, second_scope) = match second {
        Ok(done) => done,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    // A fault of the first half may be its range's own (it ends at the
    // split, maybe inside a construct): read whole.
    first_read.ok()?;
    let heads_match = scope.same_open(&head) && first.frames.len() == second.inherited;
    if !heads_match {
        // The first half ended elsewhere: read on alone.
        let read = xml::drive_piece(source, split..source.len(), options, &mut scope, &mut first)
            .and_then(|()| scope.clone().finish(source));
        return match read {
            Ok(declared) => Some((Ok(first.finish(&declared)), SplitOutcome::Continued)),
            Err(_) if scope.own_fault() => None,
            Err(e) => Some((Err(e), SplitOutcome::Continued)),
        };
    }
    // The second half read to the end from the whole read's state at the
    // split: its faults are the whole read's first, but for its own checks.
    if let Err(e) = second_read.and_then(|()| second_scope.clone().finish(source)) {
        return (!second_scope.own_fault()).then_some((Err(e), SplitOutcome::Fault));
    }
    if second.refused.is_some() || second.inherited_ends.len() != first.frames.len() {
        return None;
    }
    // What the second builder assumed of the open elements' first children.
    // (It copied their flags at the head, where none is set yet.)
    let assumed_ok = first
        .frames
        .iter()
        .rev()
        .zip(&second.inherited_ends)
        .all(|(f, &(_, seen))| f.seen & seen == 0);
    if !assumed_ok {
        return None;
    }
    let ends = first.absorb(second);
    for end in ends {
        xml::Sink::end(&mut first, end);
    }
    let mut declared = scope.declared();
    declared.extend(second_scope.declared());
    Some((Ok(first.finish(&declared)), SplitOutcome::Kept))
}

/// `more` after `list`'s entries, moving the fewer of the two: `more`'s
/// are copied after `list`'s, or `list`'s are inserted before `more`'s when
/// `more` is the longer and has the room (both builders reserve it, see
/// [`Builder::reserve_for`]), so the merge mostly shifts entries within
/// memory already in use instead of copying them to fresh pages.
fn append<T>(list: &mut Vec<T>, mut more: Vec<T>) {
    if more.len() > list.len() && more.capacity() - more.len() >= list.len() {
        more.splice(0..0, list.drain(..));
        *list = more;
    } else {
        list.extend(more);
    }
}

/// Append a process's entries read by a split read's second builder (its
/// node indices counted from 0) to those the first read.
fn continue_process(process: &mut Process, rest: Process) {
    // Every field named: a new one must be merged here too.
    let Process {
        id: _,
        name: _,
        is_executable: _,
        span: _,
        name_span: _,
        nodes,
        flows,
        other_defaults,
        links,
        event_conditions,
        lanes,
        later_lane_sets,
    } = rest;
    let offset = process.nodes.len();
    let shift = |i: u32| i + offset as u32;
    process.nodes.extend(nodes.into_iter().map(|n| Node {
        scope: n.scope.map(|s| s + offset),
        ..n
    }));
    let mut flows = flows;
    for f in &mut flows {
        f.scope = f.scope.map(|s| s + offset);
    }
    append(&mut process.flows, flows);
    process
        .other_defaults
        .extend(other_defaults.into_iter().map(|(i, d)| (shift(i), d)));
    process
        .links
        .extend(links.into_iter().map(|(i, l)| (shift(i), l)));
    process
        .event_conditions
        .extend(event_conditions.into_iter().map(|c| EventCondition {
            node: shift(c.node),
            ..c
        }));
    // The lanes its sub-processes handed on; its own come at its end.
    process.lanes.extend(lanes);
    process.later_lane_sets.extend(later_lane_sets);
}

/// Push onto one of a node's short lists (its retries, timeouts, event
/// definitions, `<incoming>`/`<outgoing>` children), giving the first
/// entry room for itself alone: a node mostly has one or none, and `Vec`'s
/// first growth makes room for four (a `RetrySpec` is 504 bytes, so every
/// retried task of a large model kept 1.5 KB it never used; ~3 MB of pages
/// touched on the 20,000-task model).
fn push_sparse<T>(list: &mut Vec<T>, item: T) {
    if list.is_empty() {
        list.reserve_exact(1);
    }
    list.push(item);
}

/// "None" in the builder's indices.
const NO: u32 = u32::MAX;

/// What an open element is to the model (beside the id/reference index,
/// which every element takes part in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Plain,
    Definitions,
    /// The `extensionElements` of `definitions`.
    DefsExt,
    Collaboration,
    Process {
        p: u32,
    },
    /// A process's or sub-process's `laneSet` (`later`: its place in
    /// [`Builder::later_sets`] when it is not the container's first), or a
    /// lane's `childLaneSet`.
    LaneSet {
        later: u32,
    },
    Lane,
    Node {
        p: u32,
        node: u32,
        container: bool,
    },
    Flow {
        p: u32,
        flow: u32,
    },
    /// A flow's first `conditionExpression`.
    Condition {
        p: u32,
        flow: u32,
    },
    /// The `condition` of a node's `conditionalEventDefinition` (`k`).
    EventCondition {
        p: u32,
        node: u32,
        k: u32,
    },
    NodeExt {
        p: u32,
        node: u32,
        first: bool,
    },
    Retry {
        p: u32,
        node: u32,
        k: u32,
    },
    Timeout {
        p: u32,
        node: u32,
        k: u32,
    },
    /// A node's `*EventDefinition`: `k` in its `event_definitions`.
    EventDef {
        p: u32,
        node: u32,
        k: u32,
    },
    /// `timeDuration` (0), `timeDate` (1), `timeCycle` (2) in a node's first
    /// event definition.
    TimerPart {
        which: u8,
    },
    Incoming {
        p: u32,
        node: u32,
    },
    Outgoing {
        p: u32,
        node: u32,
    },
    ErrorDef(u32),
    ChannelConfig(u32),
}

/// The namespaces the reader tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ns {
    Bpmn,
    BpmnDi,
    Dc,
    Di,
    Qflow,
    Other,
}

fn ns_of(ns: Option<&str>) -> Ns {
    match ns {
        Some(BPMN_NS) => Ns::Bpmn,
        Some(BPMNDI_NS) => Ns::BpmnDi,
        Some(DC_NS) => Ns::Dc,
        Some(DI_NS) => Ns::Di,
        Some(QFLOW_NS) => Ns::Qflow,
        _ => Ns::Other,
    }
}

/// First-child flags of a frame.
const SEEN_CONDITION: u8 = 1;
const SEEN_EXTENSION: u8 = 2;
const SEEN_LINK: u8 = 4;
const SEEN_LANE_SET: u8 = 8;

/// An element whose end tag has not been read yet.
struct Frame<'a> {
    local: &'a str,
    ns: Ns,
    /// Inside extension content, or not in a BPMN namespace: contributes no ids.
    vendor: bool,
    role: Role,
    start: u32,
    start_tag_end: u32,
    /// Model entries whose span ends at this element's end tag.
    id_decl: u32,
    qflow_item: u32,
    diagram: u32,
    /// Index into [`Builder::shapes`] for a `BPMNShape`.
    shape: u32,
    seen: u8,
    /// A process or sub-process: where its lanes and later lane sets start
    /// in [`Builder::lanes`] and [`Builder::later_sets`].
    lanes_mark: u32,
    later_mark: u32,
    /// Direct text, kept only for the roles that read it (see `push_text`).
    wants_text: bool,
    text: Cow<'a, str>,
    text_start: u32,
    text_end: u32,
    /// A CDATA section with content was among the text: a body to bpmnlint
    /// even when it holds only blanks (bpmn-moddle keeps every CDATA
    /// section and drops only whitespace-only text; QF126).
    cdata: bool,
}

impl<'a> Frame<'a> {
    /// The same open element for another builder, which will not close it:
    /// its model entries stay with this one.
    fn detached(&self) -> Frame<'a> {
        Frame {
            local: self.local,
            ns: self.ns,
            vendor: self.vendor,
            role: self.role,
            start: self.start,
            start_tag_end: self.start_tag_end,
            id_decl: NO,
            qflow_item: NO,
            diagram: NO,
            shape: NO,
            seen: self.seen,
            lanes_mark: 0,
            later_mark: 0,
            wants_text: false,
            text: Cow::Borrowed(""),
            text_start: NO,
            text_end: NO,
            cdata: false,
        }
    }
}

/// What a node's event trigger is made of, known at its end tag.
struct PendingNode {
    defs: u32,
    first_local: &'static str,
    first_other: Option<String>,
    first_span: Span,
    error_ref: Option<Attr>,
    timer: [Option<Attr>; 3],
}

/// A shape and the bounds it may get: a skipped `dc:Bounds` leaf first, else
/// its first kept `dc:Bounds` child.
struct ShapeState {
    diagram: u32,
    expanded: bool,
    horizontal: bool,
    taken: bool,
    candidate: Option<Option<crate::xml::ShapeNumbers>>,
}

struct Builder<'a> {
    source: &'a str,
    defs: Definitions,
    refused: Option<Diagnostic>,
    frames: Vec<Frame<'a>>,
    /// One per open node, innermost last.
    pending: Vec<PendingNode>,
    shapes: Vec<ShapeState>,
    /// The current start tag's attributes (reused).
    attrs: Vec<XmlAttr<'a>>,
    /// Lanes and later lane sets of the open processes and sub-processes:
    /// each container hands its own on at its end tag, after those of the
    /// sub-processes inside it, in the order [`read`] gives them.
    lanes: Vec<Labelled>,
    later_sets: Vec<Span>,
    /// See [`Builder::classify`].
    ns_seen: Vec<((usize, usize), Ns)>,
    /// A split read's second builder: how many of the bottom frames are
    /// copies of the first builder's (see [`read_split`]), and where each
    /// of them ended, innermost first, with the first-child flags set
    /// meanwhile. Their ends are the first builder's to close.
    inherited: usize,
    inherited_ends: Vec<(usize, u8)>,
}

fn attr_ref(a: &XmlAttr<'_>) -> Attr {
    Attr {
        value: Text::from(a.value.as_ref()),
        span: a.value_span,
        full_span: a.span,
    }
}

/// The first unprefixed attribute named `local` (BPMN's own attributes are unqualified).
fn plain_of(attrs: &[XmlAttr<'_>], local: &str) -> Option<Attr> {
    attrs
        .iter()
        .find(|a| a.qname == local && a.ns.is_none())
        .map(attr_ref)
}

/// `isHorizontal` as bpmnlint reads a shape's: absent, or `true`.
fn horizontal_of(attrs: &[XmlAttr<'_>]) -> bool {
    attrs
        .iter()
        .find(|a| a.qname == "isHorizontal" && a.ns.is_none())
        .is_none_or(|a| a.value.trim() == "true")
}

fn true_of(attrs: &[XmlAttr<'_>], local: &str) -> bool {
    attrs
        .iter()
        .find(|a| a.qname == local && a.ns.is_none())
        .is_some_and(|a| a.value.trim() == "true")
}

fn labelled_of(local: &str, attrs: &[XmlAttr<'_>], name_span: Span) -> Labelled {
    Labelled {
        local: name(local),
        id: plain_of(attrs, "id"),
        name: plain_of(attrs, "name"),
        name_span,
        process_ref: plain_of(attrs, "processRef"),
    }
}

/// [`Plain::read`] over attributes already built.
fn plain_slots<'x, 'a, const N: usize>(
    attrs: &'x [XmlAttr<'a>],
    names: &[&str; N],
) -> ([Option<&'x XmlAttr<'a>>; N], [Option<&'x XmlAttr<'a>>; 3]) {
    let mut found: ([Option<&XmlAttr<'a>>; N], [Option<&XmlAttr<'a>>; 3]) = ([None; N], [None; 3]);
    for a in attrs {
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

/// The bounds' numbers ([`crate::xml::shape_numbers`]): `None` without a
/// width and a height.
fn numbers_of(attrs: &[XmlAttr<'_>]) -> Option<crate::xml::ShapeNumbers> {
    let raw = |n: &str| {
        attrs
            .iter()
            .find(|a| a.qname == n && a.ns.is_none())
            .map(|a| &*a.value)
    };
    crate::xml::shape_numbers([raw("x"), raw("y"), raw("width"), raw("height")])
}

impl<'a> Builder<'a> {
    fn new(source: &'a str) -> Self {
        Builder {
            source,
            defs: Definitions::default(),
            refused: None,
            frames: Vec::new(),
            pending: Vec::new(),
            shapes: Vec::new(),
            attrs: Vec::new(),
            lanes: Vec::new(),
            later_sets: Vec::new(),
            ns_seen: Vec::new(),
            inherited: 0,
            inherited_ends: Vec::new(),
        }
    }

    /// Room for a whole document of `bytes` in the lists the two halves of
    /// a split read merge (see [`append`]). Estimates
    /// (a modeller's file has an id and a reference every ~160 bytes, a
    /// node every ~600): too much costs address space, not memory, since
    /// untouched capacity is never paged in; too little only costs the move.
    fn reserve_for(&mut self, bytes: usize) {
        let d = &mut self.defs;
        d.ids.reserve(bytes / 100);
        d.references.reserve(bytes / 100);
        d.diagram_elements.reserve(bytes / 200);
        d.qflow_items.reserve(bytes / 400);
        if let Some(p) = self.frames.iter().find_map(|f| match f.role {
            Role::Process { p } => Some(p as usize),
            _ => None,
        }) {
            let process = &mut d.processes[p];
            process.nodes.reserve(bytes / 400);
            process.flows.reserve(bytes / 400);
        }
    }

    /// A builder for the rest of the document, whose open elements are this
    /// one's (see [`read_split`]); `None` if one of them is not an element
    /// a split may sit in.
    fn inherited_by_second(&self) -> Option<Builder<'a>> {
        let mut b = Builder::new(self.source);
        for f in &self.frames {
            let mut copy = f.detached();
            match f.role {
                Role::Process { p } => {
                    // The process goes on in the second half: its entries
                    // there are appended to this one's (`absorb`).
                    let process = &self.defs.processes[p as usize];
                    copy.role = Role::Process {
                        p: b.defs.processes.len() as u32,
                    };
                    b.defs.processes.push(Process {
                        id: process.id.clone(),
                        name: process.name.clone(),
                        is_executable: process.is_executable,
                        span: process.span,
                        name_span: process.name_span,
                        ..Process::default()
                    });
                }
                Role::Definitions
                | Role::Collaboration
                | Role::DefsExt
                | Role::ErrorDef(_)
                | Role::ChannelConfig(_)
                | Role::Plain => {}
                _ => return None,
            }
            b.frames.push(copy);
        }
        b.inherited = b.frames.len();
        Some(b)
    }

    /// The read's answer, once the document has ended (`declared`: every
    /// namespace URI it declares).
    #[allow(clippy::result_large_err)]
    fn finish(self, declared: &[Cow<'_, str>]) -> Result<Definitions, Diagnostic> {
        if let Some(d) = self.refused {
            return Err(d);
        }
        let mut defs = self.defs;
        defs.declares_qflow = declared.iter().any(|u| u == QFLOW_NS);
        defs.shape_bounds.sort_by_key(|s| s.diagram);
        Ok(defs)
    }

    /// Append the model entries of the rest of the document, read by
    /// `later` (see [`read_split`]); the ends of this builder's open
    /// elements, innermost first, for it to close.
    fn absorb(&mut self, later: Builder<'a>) -> Vec<usize> {
        // Every field named: a new one must be merged here too.
        let Definitions {
            span: _,
            name_span: _,
            declares_qflow: _,
            processes,
            errors,
            channel_configs,
            ids,
            references,
            qflow_items,
            diagram_elements,
            namespace_bindings,
            shape_bounds,
            globals,
            participants,
        } = later.defs;
        let mut processes = processes.into_iter();
        let open_process = self.frames.iter().find_map(|f| match f.role {
            Role::Process { p } => Some(p as usize),
            _ => None,
        });
        let continued = open_process.map(|p| {
            let rest = processes.next().expect("the open process's second half");
            (p, rest)
        });
        let d = &mut self.defs;
        let diagram_offset = d.diagram_elements.len() as u32;
        std::thread::scope(|s| {
            // Two threads share the merge (it took 4 ms on one on the
            // 20,000-task model): the open process's nodes and flows and
            // the references on one, the ids and the other lists on this
            // one, about half the bytes each.
            let all_references = &mut d.references;
            match continued {
                Some((p, rest)) => {
                    let process = &mut d.processes[p];
                    s.spawn(move || {
                        continue_process(process, rest);
                        append(all_references, references);
                    });
                }
                None => append(all_references, references),
            }
            append(&mut d.errors, errors);
            append(&mut d.channel_configs, channel_configs);
            append(&mut d.ids, ids);
            append(&mut d.qflow_items, qflow_items);
            append(&mut d.diagram_elements, diagram_elements);
            append(&mut d.namespace_bindings, namespace_bindings);
            d.shape_bounds
                .extend(shape_bounds.into_iter().map(|s| ShapeBounds {
                    diagram: s.diagram + diagram_offset,
                    ..s
                }));
            append(&mut d.globals, globals);
            append(&mut d.participants, participants);
        });
        d.processes.extend(processes);
        // The open process's own lanes and later lane sets from the second
        // half: handed on after this half's when it ends.
        self.lanes.extend(later.lanes);
        self.later_sets.extend(later.later_sets);
        later.inherited_ends.iter().map(|&(end, _)| end).collect()
    }

    fn node_mut(&mut self, p: u32, node: u32) -> &mut Node {
        &mut self.defs.processes[p as usize].nodes[node as usize]
    }

    /// The element's text as [`text_attr`] reads it from a tree element.
    fn text_of(&self, f: &Frame<'a>, end: usize) -> Option<Attr> {
        if f.text_start == NO {
            return None;
        }
        let span = Span::new(f.text_start as usize, f.text_end as usize);
        let raw = &self.source[span.start()..span.end()];
        let lead = raw.len() - raw.trim_start().len();
        let trail = raw.len() - raw.trim_end().len();
        let value = Text::from(f.text.trim());
        let inner = if lead + trail >= raw.len() {
            Span::at(span.start())
        } else {
            Span::new(span.start() + lead, span.end() - trail)
        };
        Some(Attr {
            value,
            span: inner,
            full_span: Span::new(f.start as usize, end),
        })
    }

    /// The index pass of [`index_ids_refs_and_qflow`] for one element.
    fn index(&mut self, e: &Start<'a, '_>, frame: &mut Frame<'a>, attrs: &[XmlAttr<'a>]) {
        let span = Span::new(e.start, e.start_tag_end);
        let local = e.local();
        let depth = self.frames.len();
        let parent = self.frames.last();
        if frame.ns == Ns::Qflow {
            let host = parent.map(|p| name(p.local)).unwrap_or_default();
            let owner = match parent {
                Some(p) if p.ns == Ns::Bpmn && p.local == "extensionElements" => depth
                    .checked_sub(2)
                    .map(|g| name(self.frames[g].local))
                    .unwrap_or_default(),
                _ => host.clone(),
            };
            frame.qflow_item = self.defs.qflow_items.len() as u32;
            self.defs.qflow_items.push(QflowItem {
                is_element: true,
                local: name(local),
                qname: name(e.qname),
                name_span: e.name_span(),
                span,
                host,
                owner,
                attributes: attrs
                    .iter()
                    .map(|a| NamedAttr {
                        qname: Text::from(a.qname),
                        local: Text::from(a.local),
                        in_qflow_ns: a.ns.as_deref() == Some(QFLOW_NS),
                        is_xmlns: a.is_namespace_declaration(),
                        name_span: a.name_span,
                        attr: attr_ref(a),
                    })
                    .collect(),
            });
        }
        let is_di = frame.ns == Ns::BpmnDi;
        for a in attrs {
            if a.ns.as_deref() == Some(QFLOW_NS) {
                self.defs.qflow_items.push(QflowItem {
                    is_element: false,
                    local: name(a.local),
                    qname: name(a.qname),
                    name_span: a.name_span,
                    span: a.span,
                    host: name(local),
                    owner: name(local),
                    attributes: Vec::new(),
                });
            }
            if a.is_namespace_declaration()
                && !matches!(
                    a.value.as_ref(),
                    BPMN_NS | BPMNDI_NS | DC_NS | DI_NS | QFLOW_NS
                )
            {
                self.defs.namespace_bindings.push(NamespaceBinding {
                    qname: Text::from(a.qname),
                    uri: attr_ref(a),
                });
            }
            if frame.vendor || a.ns.is_some() {
                continue;
            }
            if a.local == "id" {
                frame.id_decl = self.defs.ids.len() as u32;
                self.defs.ids.push(IdDecl {
                    id: attr_ref(a),
                    element: ElementRef {
                        local: name(local),
                        span,
                        name_span: e.name_span(),
                    },
                });
            } else if let Some(kind) = reference_kind(a.local) {
                if is_di && kind == RefKind::BpmnElement {
                    if local == "BPMNShape" {
                        frame.shape = self.shapes.len() as u32;
                        self.shapes.push(ShapeState {
                            diagram: self.defs.diagram_elements.len() as u32,
                            expanded: true_of(attrs, "isExpanded"),
                            horizontal: horizontal_of(attrs),
                            taken: false,
                            candidate: None,
                        });
                    }
                    frame.diagram = self.defs.diagram_elements.len() as u32;
                    self.defs.diagram_elements.push(DiagramElement {
                        bpmn_element: Text::from(a.value.as_ref()),
                        span,
                    });
                }
                if kind == RefKind::Default && !(local.ends_with("Gateway") || is_activity(local)) {
                    continue;
                }
                if a.value.is_empty() && kind == RefKind::Default {
                    continue;
                }
                self.defs.references.push(Reference {
                    kind,
                    target: attr_ref(a),
                });
            }
        }
        // A kept `dc:Bounds` in a shape: the shape's bounds unless a skipped
        // leaf gives them.
        if frame.ns == Ns::Dc && local == "Bounds" {
            if let Some(shape) = parent.map(|p| p.shape).filter(|&s| s != NO) {
                let shape = &mut self.shapes[shape as usize];
                if shape.candidate.is_none() {
                    shape.candidate = Some(numbers_of(attrs));
                }
            }
        }
    }

    /// What the element is to the model, from its parent's role; pushes the
    /// model entry it starts.
    fn role(&mut self, e: &Start<'a, '_>, ns: Ns, attrs: &[XmlAttr<'a>]) -> Role {
        let local = e.local();
        let span = Span::new(e.start, e.start_tag_end);
        let Some(parent) = self.frames.last() else {
            return Role::Definitions;
        };
        let (parent_role, parent_local, parent_seen) = (parent.role, parent.local, parent.seen);
        let bpmn = ns == Ns::Bpmn;
        match parent_role {
            Role::Definitions => {
                if bpmn && matches!(local, "message" | "signal" | "error" | "escalation") {
                    self.defs
                        .globals
                        .push(labelled_of(local, attrs, e.name_span()));
                }
                if bpmn && local == "collaboration" {
                    return Role::Collaboration;
                }
                if bpmn && local == "process" {
                    let p = self.defs.processes.len() as u32;
                    self.defs.processes.push(Process {
                        id: plain_of(attrs, "id"),
                        name: plain_of(attrs, "name"),
                        is_executable: true_of(attrs, "isExecutable"),
                        span,
                        name_span: e.name_span(),
                        ..Process::default()
                    });
                    return Role::Process { p };
                }
                if bpmn && local == "error" {
                    if let Some(id) = plain_of(attrs, "id") {
                        let k = self.defs.errors.len() as u32;
                        self.defs.errors.push(ErrorDef {
                            id,
                            error_code: plain_of(attrs, "errorCode"),
                            name: plain_of(attrs, "name"),
                            span,
                        });
                        return Role::ErrorDef(k);
                    }
                    return Role::Plain;
                }
                if ns == Ns::Qflow && local == "channelConfig" {
                    return self.channel_config(e, attrs);
                }
                if bpmn && local == "extensionElements" {
                    return Role::DefsExt;
                }
                Role::Plain
            }
            Role::DefsExt if ns == Ns::Qflow && local == "channelConfig" => {
                self.channel_config(e, attrs)
            }
            Role::Collaboration if bpmn && local == "participant" => {
                self.defs
                    .participants
                    .push(labelled_of(local, attrs, e.name_span()));
                Role::Plain
            }
            Role::Process { .. }
            | Role::Node {
                container: true, ..
            } if bpmn && local == "laneSet" => {
                let later = if parent_seen & SEEN_LANE_SET == 0 {
                    NO
                } else {
                    self.later_sets.push(span);
                    self.later_sets.len() as u32 - 1
                };
                self.frames.last_mut().expect("the parent").seen |= SEEN_LANE_SET;
                Role::LaneSet { later }
            }
            Role::LaneSet { .. } if bpmn && local == "lane" => {
                self.lanes.push(labelled_of(local, attrs, e.name_span()));
                Role::Lane
            }
            Role::Lane if bpmn && local == "childLaneSet" => Role::LaneSet { later: NO },
            Role::Process { p } if bpmn => self.flow_element(e, attrs, p, None),
            Role::Node { p, node, container } if bpmn => {
                if local.ends_with("EventDefinition") {
                    let k = {
                        let n = self.node_mut(p, node);
                        push_sparse(
                            &mut n.event_definitions,
                            ElementRef {
                                local: name(local),
                                span,
                                name_span: e.name_span(),
                            },
                        );
                        n.event_definitions.len() as u32 - 1
                    };
                    let pending = self.pending.last_mut().expect("an open node");
                    pending.defs += 1;
                    if pending.defs == 1 {
                        pending.first_span = span;
                        pending.first_local = match local {
                            "timerEventDefinition" => "timerEventDefinition",
                            "errorEventDefinition" => "errorEventDefinition",
                            _ => {
                                pending.first_other = Some(local.to_string());
                                ""
                            }
                        };
                        pending.error_ref = plain_of(attrs, "errorRef");
                    }
                    if local == "linkEventDefinition"
                        && parent_local.ends_with("Event")
                        && parent_seen & SEEN_LINK == 0
                    {
                        self.frames.last_mut().expect("the parent").seen |= SEEN_LINK;
                        self.defs.processes[p as usize]
                            .links
                            .push((node, plain_of(attrs, "name")));
                    }
                    return Role::EventDef { p, node, k };
                }
                match local {
                    "incoming" => return Role::Incoming { p, node },
                    "outgoing" => return Role::Outgoing { p, node },
                    "extensionElements" => {
                        let first = parent_seen & SEEN_EXTENSION == 0;
                        self.frames.last_mut().expect("the parent").seen |= SEEN_EXTENSION;
                        return Role::NodeExt { p, node, first };
                    }
                    _ => {}
                }
                if container {
                    return self.flow_element(e, attrs, p, Some(node as usize));
                }
                Role::Plain
            }
            Role::NodeExt { p, node, .. } if ns == Ns::Qflow => match local {
                "retry" => {
                    let n = self.node_mut(p, node);
                    push_sparse(
                        &mut n.retries,
                        RetrySpec {
                            span,
                            name_span: e.name_span(),
                            qname: Text::from(e.qname),
                            max_attempts: plain_of(attrs, "maxAttempts"),
                            backoff: plain_of(attrs, "backoff"),
                            initial: plain_of(attrs, "initial"),
                            factor: plain_of(attrs, "factor"),
                            max_delay: plain_of(attrs, "maxDelay"),
                            max_elapsed: plain_of(attrs, "maxElapsed"),
                            jitter: plain_of(attrs, "jitter"),
                            non_retryable_codes: plain_of(attrs, "nonRetryableCodes"),
                        },
                    );
                    let k = n.retries.len() as u32 - 1;
                    Role::Retry { p, node, k }
                }
                "timeout" => {
                    let n = self.node_mut(p, node);
                    push_sparse(
                        &mut n.timeouts,
                        TimeoutSpec {
                            span,
                            name_span: e.name_span(),
                            qname: Text::from(e.qname),
                            duration: plain_of(attrs, "duration"),
                        },
                    );
                    let k = n.timeouts.len() as u32 - 1;
                    Role::Timeout { p, node, k }
                }
                _ => Role::Plain,
            },
            Role::EventDef { p, node, k }
                if bpmn && local == "condition" && parent_local == "conditionalEventDefinition" =>
            {
                Role::EventCondition { p, node, k }
            }
            Role::EventDef { k: 0, .. } if bpmn => match local {
                "timeDuration" => Role::TimerPart { which: 0 },
                "timeDate" => Role::TimerPart { which: 1 },
                "timeCycle" => Role::TimerPart { which: 2 },
                _ => Role::Plain,
            },
            Role::Flow { p, flow }
                if bpmn && local == "conditionExpression" && parent_seen & SEEN_CONDITION == 0 =>
            {
                self.frames.last_mut().expect("the parent").seen |= SEEN_CONDITION;
                Role::Condition { p, flow }
            }
            _ => Role::Plain,
        }
    }

    /// [`ns_of`], remembered by the URI's address: the parser interns each
    /// URI once per document, so every element of a namespace hands over
    /// the same slice, and 40-byte comparisons per element are spared.
    fn classify(&mut self, ns: Option<&str>) -> Ns {
        let Some(uri) = ns else {
            return Ns::Other;
        };
        let key = (uri.as_ptr() as usize, uri.len());
        if let Some(&(_, class)) = self.ns_seen.iter().find(|(k, _)| *k == key) {
            return class;
        }
        let class = ns_of(Some(uri));
        if self.ns_seen.len() < 16 {
            self.ns_seen.push((key, class));
        }
        class
    }

    /// A process or sub-process ends: its lanes and later lane sets go to
    /// the process.
    fn hand_on_lanes(&mut self, p: u32, f: &Frame<'a>) {
        let process = &mut self.defs.processes[p as usize];
        process
            .lanes
            .extend(self.lanes.drain(f.lanes_mark as usize..));
        process
            .later_lane_sets
            .extend(self.later_sets.drain(f.later_mark as usize..));
    }

    fn channel_config(&mut self, e: &Start<'a, '_>, attrs: &[XmlAttr<'a>]) -> Role {
        let k = self.defs.channel_configs.len() as u32;
        self.defs.channel_configs.push(ChannelConfig {
            channel: plain_of(attrs, "channel"),
            max_deliveries: plain_of(attrs, "maxDeliveries"),
            delivery_interval: plain_of(attrs, "deliveryInterval"),
            counterpart_attempts: plain_of(attrs, "counterpartAttempts"),
            span: Span::new(e.start, e.start_tag_end),
            name_span: e.name_span(),
        });
        Role::ChannelConfig(k)
    }

    /// A BPMN child of a process or sub-process: a sequence flow or a flow
    /// node, as [`read_container`] reads them.
    fn flow_element(
        &mut self,
        e: &Start<'a, '_>,
        attrs: &[XmlAttr<'a>],
        p: u32,
        scope: Option<usize>,
    ) -> Role {
        let local = e.local();
        let span = Span::new(e.start, e.start_tag_end);
        let process = &mut self.defs.processes[p as usize];
        if local == "sequenceFlow" {
            let ([id, name_attr, source, target], _) =
                plain_slots(attrs, &["id", "name", "sourceRef", "targetRef"]);
            let flow = process.flows.len() as u32;
            process.flows.push(Flow {
                id: id.map(attr_ref).unwrap_or_else(|| Attr {
                    value: Text::default(),
                    span: e.name_span(),
                    full_span: e.name_span(),
                }),
                name: name_attr.map(attr_ref),
                source: source.map(attr_ref),
                target: target.map(attr_ref),
                condition: None,
                span,
                scope,
            });
            return Role::Flow { p, flow };
        }
        let Some(&element) = FLOW_NODES.iter().find(|n| **n == local) else {
            return Role::Plain;
        };
        let (
            [id_attr, name_attr, default, attached_to, cancel_activity, triggered_by_event, for_compensation, is_interrupting],
            [task, channel, operation],
        ) = plain_slots(attrs, &NODE_ATTRS);
        let is_true = |a: Option<&XmlAttr<'_>>| a.is_some_and(|a| a.value.trim() == "true");
        let mut default = default.map(attr_ref);
        let kind = match element {
            "startEvent" => NodeKind::StartEvent {
                trigger: EventTrigger::None,
            },
            "endEvent" => NodeKind::EndEvent {
                trigger: EventTrigger::None,
            },
            "exclusiveGateway" => NodeKind::ExclusiveGateway {
                default: default.take(),
            },
            "parallelGateway" => NodeKind::ParallelGateway,
            "serviceTask" => NodeKind::ServiceTask(TaskAttrs {
                task: task.map(attr_ref),
                channel: channel.map(attr_ref),
                operation: operation.map(attr_ref),
            }),
            "boundaryEvent" => NodeKind::BoundaryEvent {
                attached_to: attached_to.map(attr_ref),
                interrupting: cancel_activity.is_none_or(|a| a.value.trim() != "false"),
                trigger: EventTrigger::None,
            },
            "intermediateCatchEvent" => NodeKind::IntermediateCatchEvent {
                trigger: EventTrigger::None,
            },
            "subProcess" | "transaction" | "adHocSubProcess" => NodeKind::SubProcess {
                triggered_by_event: is_true(triggered_by_event),
            },
            _ => NodeKind::Other,
        };
        let index = process.nodes.len() as u32;
        process.nodes.push(Node {
            id: id_attr.map(attr_ref).unwrap_or_else(|| Attr {
                value: Text::default(),
                span: e.name_span(),
                full_span: e.name_span(),
            }),
            name: name_attr.map(attr_ref),
            element: name(element),
            kind,
            span,
            name_span: e.name_span(),
            scope,
            retries: Vec::new(),
            timeouts: Vec::new(),
            for_compensation: is_true(for_compensation),
            qname: name(e.qname),
            tag: ElementSpans {
                span,
                start_tag: span,
                self_closing: false,
            },
            extension_elements: None,
            event_definitions: Vec::new(),
            incoming_refs: Vec::with_capacity(1),
            outgoing_refs: Vec::with_capacity(1),
            non_interrupting: element == "startEvent"
                && is_interrupting.is_some_and(|a| a.value.trim() == "false"),
        });
        if element != "exclusiveGateway" {
            if let Some(d) = default.filter(|d| !d.value.is_empty()) {
                process.other_defaults.push((index, d));
            }
        }
        self.pending.push(PendingNode {
            defs: 0,
            first_local: "",
            first_other: None,
            first_span: Span::default(),
            error_ref: None,
            timer: [None, None, None],
        });
        Role::Node {
            p,
            node: index,
            container: matches!(element, "subProcess" | "transaction" | "adHocSubProcess"),
        }
    }
}

impl<'a> xml::Sink<'a> for Builder<'a> {
    fn start(&mut self, e: &Start<'a, '_>) -> Result<(), XmlError> {
        if self.refused.is_some() {
            return Ok(());
        }
        let ns = self.classify(e.ns.as_deref());
        let local = e.local();
        if self.frames.is_empty() {
            if !(ns == Ns::Bpmn && local == "definitions") {
                let found = match e.ns.as_deref() {
                    Some(ns) => format!("<{}> in namespace `{ns}`", e.qname),
                    None => format!("<{}> in no namespace", e.qname),
                };
                self.refused = Some(
                    Diagnostic::new(
                        Code::QF002,
                        e.name_span(),
                        format!("not a BPMN 2.0 document: the root element is {found}"),
                    )
                    .label("expected <definitions> of the BPMN 2.0 model namespace")
                    .help(format!(
                        "the root must be <bpmn:definitions xmlns:bpmn=\"{BPMN_NS}\">; check the namespace URI is exactly this one"
                    )),
                );
                return Ok(());
            }
            self.defs.span = Span::new(e.start, e.start_tag_end);
            self.defs.name_span = e.name_span();
        }
        let mut attrs = std::mem::take(&mut self.attrs);
        e.attrs_into(&mut attrs);
        let parent_vendor = self
            .frames
            .last()
            .is_some_and(|p| p.vendor || (p.ns == Ns::Bpmn && p.local == "extensionElements"));
        let is_spec_ns = matches!(ns, Ns::Bpmn | Ns::BpmnDi | Ns::Dc | Ns::Di);
        let mut frame = Frame {
            local,
            ns,
            vendor: parent_vendor || !is_spec_ns,
            role: Role::Plain,
            start: e.start as u32,
            start_tag_end: e.start_tag_end as u32,
            id_decl: NO,
            qflow_item: NO,
            diagram: NO,
            shape: NO,
            seen: 0,
            lanes_mark: self.lanes.len() as u32,
            later_mark: self.later_sets.len() as u32,
            wants_text: false,
            text: Cow::Borrowed(""),
            text_start: NO,
            text_end: NO,
            cdata: false,
        };
        self.index(e, &mut frame, &attrs);
        frame.role = self.role(e, ns, &attrs);
        frame.wants_text = matches!(
            frame.role,
            Role::Condition { .. }
                | Role::EventCondition { .. }
                | Role::TimerPart { .. }
                | Role::Incoming { .. }
                | Role::Outgoing { .. }
        );
        self.attrs = attrs;
        self.frames.push(frame);
        Ok(())
    }

    fn end(&mut self, end: usize) {
        if self.refused.is_some() {
            return;
        }
        if self.frames.len() + self.inherited_ends.len() <= self.inherited {
            // A copy of the first builder's: it closes the original.
            if let Some(f) = self.frames.pop() {
                self.inherited_ends.push((end, f.seen));
            }
            return;
        }
        let Some(f) = self.frames.pop() else {
            return;
        };
        let span = Span::new(f.start as usize, end);
        if f.id_decl != NO {
            self.defs.ids[f.id_decl as usize].element.span = span;
        }
        if f.qflow_item != NO {
            self.defs.qflow_items[f.qflow_item as usize].span = span;
        }
        if f.diagram != NO {
            self.defs.diagram_elements[f.diagram as usize].span = span;
        }
        if f.shape != NO {
            let shape = &mut self.shapes[f.shape as usize];
            if !shape.taken {
                if let Some(Some(numbers)) = shape.candidate {
                    let [x, y, width, height] = numbers.values;
                    shape.taken = true;
                    self.defs.shape_bounds.push(ShapeBounds {
                        diagram: shape.diagram,
                        expanded: shape.expanded,
                        horizontal: shape.horizontal,
                        finite: numbers.finite,
                        placed: numbers.placed,
                        x,
                        y,
                        width,
                        height,
                    });
                }
            }
        }
        let spans = ElementSpans {
            span,
            start_tag: Span::new(f.start as usize, f.start_tag_end as usize),
            self_closing: end == f.start_tag_end as usize,
        };
        match f.role {
            Role::Definitions => self.defs.span = span,
            Role::Process { p } => {
                self.defs.processes[p as usize].span = span;
                self.hand_on_lanes(p, &f);
            }
            Role::ErrorDef(k) => self.defs.errors[k as usize].span = span,
            Role::ChannelConfig(k) => self.defs.channel_configs[k as usize].span = span,
            Role::Flow { p, flow } => {
                self.defs.processes[p as usize].flows[flow as usize].span = span
            }
            Role::Condition { p, flow } => {
                // Written but empty: an empty condition (see `read_container`).
                let condition = self.text_of(&f, end).unwrap_or_else(|| Attr {
                    value: Text::default(),
                    span: Span::at(end),
                    full_span: span,
                });
                self.defs.processes[p as usize].flows[flow as usize].condition = Some(condition);
            }
            Role::EventCondition { p, node, k } => {
                let body = f.cdata || self.text_of(&f, end).is_some_and(|t| !t.value.is_empty());
                self.defs.processes[p as usize]
                    .event_conditions
                    .push(EventCondition {
                        node,
                        definition: k,
                        body,
                    });
            }
            Role::Node { p, node, container } => {
                if container {
                    self.hand_on_lanes(p, &f);
                }
                let pending = self.pending.pop().expect("an open node");
                let trigger = match pending.defs {
                    0 => EventTrigger::None,
                    1 => match pending.first_local {
                        "timerEventDefinition" => {
                            let [time_duration, time_date, time_cycle] = pending.timer;
                            EventTrigger::Timer(Box::new(TimerDef {
                                span: pending.first_span,
                                time_duration,
                                time_date,
                                time_cycle,
                            }))
                        }
                        "errorEventDefinition" => EventTrigger::Error {
                            error_ref: pending.error_ref,
                            span: pending.first_span,
                        },
                        _ => EventTrigger::Other(pending.first_other.unwrap_or_default()),
                    },
                    _ => EventTrigger::Other("multiple event definitions".to_string()),
                };
                let n = self.node_mut(p, node);
                n.span = span;
                n.tag = spans;
                match &mut n.kind {
                    NodeKind::StartEvent { trigger: t }
                    | NodeKind::EndEvent { trigger: t }
                    | NodeKind::BoundaryEvent { trigger: t, .. }
                    | NodeKind::IntermediateCatchEvent { trigger: t } => *t = trigger,
                    _ => {}
                }
            }
            Role::EventDef { p, node, k } => {
                self.node_mut(p, node).event_definitions[k as usize].span = span;
                if k == 0 {
                    if let Some(pending) = self.pending.last_mut() {
                        pending.first_span = span;
                    }
                }
            }
            Role::TimerPart { which } => {
                let text = self.text_of(&f, end);
                if let Some(pending) = self.pending.last_mut() {
                    pending.timer[which as usize] = text;
                }
            }
            Role::Incoming { p, node } => {
                if let Some(t) = self.text_of(&f, end) {
                    push_sparse(&mut self.node_mut(p, node).incoming_refs, t);
                }
            }
            Role::Outgoing { p, node } => {
                if let Some(t) = self.text_of(&f, end) {
                    push_sparse(&mut self.node_mut(p, node).outgoing_refs, t);
                }
            }
            Role::NodeExt { p, node, first } => {
                if first {
                    self.node_mut(p, node).extension_elements = Some(spans);
                }
            }
            Role::Retry { p, node, k } => self.node_mut(p, node).retries[k as usize].span = span,
            Role::Timeout { p, node, k } => self.node_mut(p, node).timeouts[k as usize].span = span,
            Role::LaneSet { later } => {
                if later != NO {
                    self.later_sets[later as usize] = span;
                }
            }
            Role::Plain | Role::DefsExt | Role::Collaboration | Role::Lane => {}
        }
    }

    fn text(&mut self, text: Cow<'a, str>, span: Span) {
        let Some(f) = self.frames.last_mut() else {
            return;
        };
        if !f.wants_text {
            return;
        }
        if f.text_start == NO {
            f.text_start = span.start() as u32;
        }
        f.text_end = span.end() as u32;
        if !f.text.is_empty() {
            f.text.to_mut().push_str(&text);
        } else if !text.trim().is_empty() {
            f.text = text;
        }
    }

    fn cdata(&mut self, text: Cow<'a, str>, span: Span) {
        if let Some(f) = self.frames.last_mut().filter(|f| f.wants_text) {
            f.cdata |= !text.is_empty();
        }
        self.text(text, span);
    }

    fn leaf_bounds(&mut self, b: LeafBounds) {
        let Some(f) = self.frames.last() else {
            return;
        };
        if f.shape == NO {
            return;
        }
        let shape = &mut self.shapes[f.shape as usize];
        if shape.taken {
            return;
        }
        shape.taken = true;
        self.defs.shape_bounds.push(ShapeBounds {
            diagram: shape.diagram,
            expanded: shape.expanded,
            horizontal: shape.horizontal,
            finite: b.finite,
            placed: b.placed,
            x: b.x,
            y: b.y,
            width: b.width,
            height: b.height,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_past_4_gib_is_a_fault_at_its_first_byte_and_one_at_the_limit_is_not() {
        assert!(too_large(MAX_SOURCE_LEN).is_none());
        let fault = too_large(MAX_SOURCE_LEN + 1).expect("refused");
        assert_eq!(fault.span, Span::at(0));
        assert!(
            fault.message.contains("4294967296 bytes"),
            "{}",
            fault.message
        );
    }
}
