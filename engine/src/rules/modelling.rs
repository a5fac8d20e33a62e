//! The modelling rules (QF100–QF125): one per rule of bpmnlint's recommended
//! configuration, with the same meaning, for every BPMN document.
//!
//! Each rule is bpmnlint's, judged on the semantic model: a node's incoming
//! and outgoing flows are the sequence flows whose `targetRef`/`sourceRef`
//! name it (what the process does), not the `<incoming>`/`<outgoing>`
//! children a modeller may or may not write. Severities come from
//! [`crate::config::Settings`]; a rule that is off costs nothing.
//!
//! Two overlaps with qflow's own codes are settled here: an executable
//! process of a qflow document without a start event is QF005 (the loader
//! refuses it), never also QF121; a node with neither incoming nor outgoing
//! flows is QF111, and QF032 (unreachable) is dropped for it.

use foldhash::HashMap;

use crate::config::{Profile, Settings};
use crate::diagnostic::{Code, Diagnostic, Edit};
use crate::model::{Definitions, Flow, Node, NodeKind, Process};
use crate::rules::edit::{insert, Ctx};
use crate::span::Span;

/// Every modelling verdict on one document.
pub fn check(ctx: &Ctx<'_>, settings: &Settings, out: &mut Vec<Diagnostic>) {
    let defs = ctx.defs;
    // A document written in qflow's dialect: it declares the namespace, or
    // binds a near miss of it (QF043 says so) and is meant to be one.
    let qflow_doc = defs.declares_qflow
        || defs
            .namespace_bindings
            .iter()
            .any(|b| crate::rules::namespace::looks_like_qflow(&b.uri.value));
    let doc_profile = if qflow_doc {
        Profile::Qflow { executable: false }
    } else {
        Profile::Plain
    };
    for p in &defs.processes {
        let profile = if qflow_doc {
            Profile::Qflow {
                executable: p.is_executable,
            }
        } else {
            Profile::Plain
        };
        let mut e = Emit {
            settings,
            profile,
            out,
        };
        if !e.any_process_rule() {
            continue;
        }
        let g = Graph::new(p);
        process_rules(ctx, &g, &mut e);
    }
    let mut e = Emit {
        settings,
        profile: doc_profile,
        out,
    };
    global(ctx, &mut e);
    participants(defs, &mut e);
    no_bpmndi(defs, &mut e);
    overlapping(defs, &mut e);
}

/// Emits a diagnostic at the configured severity, or not at all.
struct Emit<'s, 'o> {
    settings: &'s Settings,
    profile: Profile,
    out: &'o mut Vec<Diagnostic>,
}

impl Emit<'_, '_> {
    fn on(&self, code: Code) -> bool {
        self.settings.severity(code, self.profile).is_some()
    }

    fn any_process_rule(&self) -> bool {
        Code::ALL
            .into_iter()
            .filter(|c| c.is_modelling() && !matches!(c, Code::QF106 | Code::QF109 | Code::QF118))
            .any(|c| self.on(c))
    }

    /// Push at a severity a rule decided for this finding (the code is on).
    fn push_at(&mut self, d: Diagnostic, severity: crate::diagnostic::Severity) {
        if self.on(d.code) {
            self.out.push(Diagnostic { severity, ..d });
        }
    }

    fn push(&mut self, d: Diagnostic) {
        if let Some(severity) = self.settings.severity(d.code, self.profile) {
            self.out.push(Diagnostic { severity, ..d });
        }
    }
}

/// A process's flows indexed by node: what every rule asks.
pub struct Graph<'a> {
    pub p: &'a Process,
    index: HashMap<&'a str, usize>,
    /// Number of flows into node i.
    incoming: Vec<u32>,
    /// Flows out of node i: `out_flows[out_start[i]..out_start[i + 1]]`.
    out_start: Vec<u32>,
    out_flows: Vec<u32>,
    /// Nodes where two branches of one parallel split meet (computed once,
    /// when a fake join asks).
    meets: std::cell::OnceCell<Vec<usize>>,
}

impl<'a> Graph<'a> {
    pub fn new(p: &'a Process) -> Self {
        let n = p.nodes.len();
        let mut index: HashMap<&str, usize> =
            HashMap::with_capacity_and_hasher(n, Default::default());
        for (i, node) in p.nodes.iter().enumerate() {
            index.entry(node.id()).or_insert(i);
        }
        let mut incoming = vec![0u32; n];
        let mut out_count = vec![0u32; n + 1];
        let mut sources = Vec::with_capacity(p.flows.len());
        for f in &p.flows {
            let s = f
                .source
                .as_ref()
                .and_then(|s| index.get(s.value.as_str()).copied());
            if let Some(t) = f.target.as_ref().and_then(|t| index.get(t.value.as_str())) {
                incoming[*t] += 1;
            }
            if let Some(s) = s {
                out_count[s + 1] += 1;
            }
            sources.push(s);
        }
        for i in 0..n {
            out_count[i + 1] += out_count[i];
        }
        let out_start = out_count;
        let mut fill = out_start.clone();
        let mut out_flows = vec![0u32; p.flows.len()];
        for (fi, s) in sources.iter().enumerate() {
            if let Some(s) = *s {
                out_flows[fill[s] as usize] = fi as u32;
                fill[s] += 1;
            }
        }
        Graph {
            p,
            index,
            incoming,
            out_start,
            out_flows,
            meets: std::cell::OnceCell::new(),
        }
    }

    pub fn node_index(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    pub fn incoming(&self, i: usize) -> usize {
        self.incoming[i] as usize
    }

    pub fn outgoing(&self, i: usize) -> impl Iterator<Item = &'a Flow> + '_ {
        let range = self.out_start[i] as usize..self.out_start[i + 1] as usize;
        self.out_flows[range]
            .iter()
            .map(|&f| &self.p.flows[f as usize])
    }

    pub fn out_count(&self, i: usize) -> usize {
        (self.out_start[i + 1] - self.out_start[i]) as usize
    }

    fn is_default(&self, i: usize, flow: &Flow) -> bool {
        self.p
            .default_of(i)
            .is_some_and(|d| d.value.trim() == flow.id.value)
    }
}

fn is_event(n: &Node) -> bool {
    n.element.ends_with("Event")
}

fn is_gateway(n: &Node) -> bool {
    n.element.ends_with("Gateway")
}

/// bpmn:Task and its kinds (service, user, script, …), not choreography tasks.
fn is_task(n: &Node) -> bool {
    n.element == "task" || (n.element.ends_with("Task") && n.element != "choreographyTask")
}

/// bpmn:SubProcess and its kinds (transaction, ad-hoc).
fn is_sub_process(n: &Node) -> bool {
    matches!(
        &*n.element,
        "subProcess" | "transaction" | "adHocSubProcess"
    )
}

fn is_activity(n: &Node) -> bool {
    is_task(n) || is_sub_process(n) || n.element == "callActivity"
}

fn is_event_sub_process(n: &Node) -> bool {
    matches!(
        n.kind,
        NodeKind::SubProcess {
            triggered_by_event: true
        }
    )
}

fn has_definition(n: &Node, local: &str) -> bool {
    n.event_definitions.iter().any(|d| d.local == local)
}

/// Every definition of the event is a `local` (and it has one).
fn only_definition(n: &Node, local: &str) -> bool {
    !n.event_definitions.is_empty() && n.event_definitions.iter().all(|d| d.local == local)
}

fn in_ad_hoc(p: &Process, n: &Node) -> bool {
    n.scope
        .is_some_and(|s| p.nodes[s].element == "adHocSubProcess")
}

fn what(n: &Node) -> String {
    format!("<{}> `{}`", n.element, n.id())
}

/// `<bpmn:sequenceFlow` → the span of `bpmn:sequenceFlow`.
fn tag_name(ctx: &Ctx<'_>, span: Span) -> Span {
    let text = ctx.text(span);
    let len = text[1.min(text.len())..]
        .find(|c: char| c.is_whitespace() || c == '/' || c == '>')
        .unwrap_or(0);
    Span::new(span.start + 1, span.start + 1 + len)
}

fn node_diag(code: Code, n: &Node, message: String) -> Diagnostic {
    Diagnostic::new(code, n.name_span, message).element(n.id())
}

fn flow_diag(ctx: &Ctx<'_>, code: Code, f: &Flow, message: String) -> Diagnostic {
    Diagnostic::new(code, tag_name(ctx, f.span), message).element(f.id.value.clone())
}

/// A container of flow elements: the process (`None`) or a sub-process.
struct Scope {
    /// `None` = the process itself.
    node: Option<usize>,
    blank_starts: Vec<usize>,
    starts: usize,
    ends: usize,
    /// An event sub-process with an interrupting start event.
    interrupting_start: bool,
    /// Terminate end events among the scope's dead ends (QF125).
    terminate_ends: Vec<usize>,
    /// Event sub-processes among the dead ends, by scope index (QF125).
    event_sub_ends: Vec<usize>,
    /// A dead end that is neither of those (QF125 does not apply).
    other_end: bool,
}

fn process_rules(ctx: &Ctx<'_>, g: &Graph<'_>, e: &mut Emit<'_, '_>) {
    let p = g.p;
    let qflow_executable = matches!(e.profile, Profile::Qflow { executable: true });
    // Scopes: the process, then every sub-process in node order.
    let mut scope_of: Vec<Option<usize>> = vec![None; p.nodes.len()];
    let new_scope = |node| Scope {
        node,
        blank_starts: Vec::new(),
        starts: 0,
        ends: 0,
        interrupting_start: false,
        terminate_ends: Vec::new(),
        event_sub_ends: Vec::new(),
        other_end: false,
    };
    let mut scopes = vec![new_scope(None)];
    for (i, n) in p.nodes.iter().enumerate() {
        if is_sub_process(n) {
            scope_of[i] = Some(scopes.len());
            scopes.push(new_scope(Some(i)));
        }
    }
    let scope_index = |n: &Node| n.scope.and_then(|s| scope_of[s]).unwrap_or(0);

    for (i, n) in p.nodes.iter().enumerate() {
        let s = scope_index(n);
        let parent = n.scope.map(|s| &p.nodes[s]);
        let incoming = g.incoming(i);
        let outgoing = g.out_count(i);
        match n.kind {
            NodeKind::StartEvent { .. } => {
                scopes[s].starts += 1;
                if n.event_definitions.is_empty() {
                    scopes[s].blank_starts.push(i);
                }
                if !n.non_interrupting && parent.is_some_and(is_event_sub_process) {
                    scopes[s].interrupting_start = true;
                }
            }
            NodeKind::EndEvent { .. } => scopes[s].ends += 1,
            _ => {}
        }
        if outgoing == 0 {
            if matches!(n.kind, NodeKind::EndEvent { .. })
                && has_definition(n, "terminateEventDefinition")
            {
                scopes[s].terminate_ends.push(i);
            } else if let (true, Some(own)) = (is_event_sub_process(n), scope_of[i]) {
                scopes[s].event_sub_ends.push(own);
            } else {
                scopes[s].other_end = true;
            }
        }

        // QF100 ad-hoc-sub-process
        if parent.is_some_and(|p| p.element == "adHocSubProcess") {
            let bad = match n.kind {
                NodeKind::StartEvent { .. } => Some("a start event"),
                NodeKind::EndEvent { .. } => Some("an end event"),
                NodeKind::IntermediateCatchEvent { .. } if outgoing == 0 => {
                    Some("an intermediate catch event without an outgoing flow")
                }
                _ => None,
            };
            if let Some(bad) = bad {
                e.push(
                    node_diag(
                        Code::QF100,
                        n,
                        format!("{} is {bad} inside an ad-hoc sub-process", what(n)),
                    )
                    .label("not allowed in an ad-hoc sub-process")
                    .help("an ad-hoc sub-process has no start or end events: its activities run in any order; remove the event, or give a catch event the flow it triggers"),
                );
            }
        }

        // QF104 event-sub-process-typed-start-event, QF122 sub-process-blank-start-event
        if let (NodeKind::StartEvent { .. }, Some(parent)) = (&n.kind, parent) {
            if is_event_sub_process(parent) {
                if n.event_definitions.is_empty() {
                    e.push(
                        node_diag(
                            Code::QF104,
                            n,
                            format!("{} in event sub-process `{}` has no event definition", what(n), parent.id()),
                        )
                        .label("a blank start event never triggers an event sub-process")
                        .help("give the start event the trigger it waits for (a message, timer, error, signal, …) or model a plain sub-process"),
                    );
                }
            } else if is_sub_process(parent) && !n.event_definitions.is_empty() {
                e.push(
                    Diagnostic::new(
                        Code::QF122,
                        n.event_definitions[0].name_span,
                        format!("{} in sub-process `{}` has an event definition", what(n), parent.id()),
                    )
                    .element(n.id())
                    .label("a sub-process starts when it is entered, not on an event")
                    .help("remove the event definition (a sub-process's start event is blank), or make it an event sub-process (triggeredByEvent=\"true\")"),
                );
            }
        }

        // QF120 single-event-definition
        if is_event(n) && n.event_definitions.len() > 1 {
            e.push(
                Diagnostic::new(
                    Code::QF120,
                    n.event_definitions[1].name_span,
                    format!("{} has {} event definitions", what(n), n.event_definitions.len()),
                )
                .element(n.id())
                .label("a second event definition")
                .help("give the event one definition; to wait for one of several triggers, model an event-based gateway"),
            );
        }

        // QF103 event-based-gateway
        if n.element == "eventBasedGateway" {
            if outgoing < 2 {
                e.push(
                    node_diag(Code::QF103, n, format!("{} has {outgoing} outgoing flow(s)", what(n)))
                        .label("an event-based gateway chooses between at least two events")
                        .help("add a flow to each event the gateway waits for (at least two), or remove the gateway"),
                );
            }
            for f in g.outgoing(i).filter(|f| f.condition.is_some()) {
                e.push(
                    flow_diag(
                        ctx,
                        Code::QF103,
                        f,
                        format!(
                            "sequence flow `{}` out of event-based gateway `{}` has a condition",
                            f.id.value,
                            n.id()
                        ),
                    )
                    .label("the event that occurs first decides, not a condition")
                    .help("remove the conditionExpression"),
                );
            }
        }

        // QF101 conditional-flows
        let conditional_gateway =
            matches!(&*n.element, "exclusiveGateway" | "inclusiveGateway") && outgoing > 1;
        if p.default_of(i).is_some()
            || conditional_gateway
            || g.outgoing(i).any(|f| f.condition.is_some())
        {
            for f in g.outgoing(i) {
                if f.condition.is_some() || g.is_default(i, f) {
                    continue;
                }
                let mut d = flow_diag(
                    ctx,
                    Code::QF101,
                    f,
                    format!(
                        "sequence flow `{}` out of {} has no condition and is not the default",
                        f.id.value,
                        what(n)
                    ),
                )
                .label("missing condition")
                .related(n.name_span, "the conditional split it leaves")
                .help(if qflow_executable {
                    "give the flow a conditionExpression, or make it the split's default flow; as it is, qflow's runtime takes the first flow in document order whose condition holds, and this flow always holds"
                } else {
                    "give the flow a conditionExpression, or make it the split's default flow"
                });
                if n.element == "exclusiveGateway" && p.default_of(i).is_none() {
                    d = d.fix(
                        format!("Make `{}` the default flow of `{}`", f.id.value, n.id()),
                        vec![add_attribute(ctx, n, "default", &f.id.value)],
                    );
                }
                e.push(d);
            }
        }

        // QF105 fake-join
        if (is_activity(n) || is_event(n)) && incoming > 1 {
            let concurrent = qflow_executable && concurrent_meets(g).contains(&i);
            let d = node_diag(Code::QF105, n, format!("{} has {incoming} incoming flows: they do not join", what(n)))
                .label(if concurrent {
                    "two branches of one parallel split meet here without a join"
                } else {
                    "incoming flows do not join here"
                })
                .help(if concurrent {
                    "put a parallel gateway before it to join the branches; as it is, qflow's runtime runs it once for every branch that arrives"
                } else {
                    "put a parallel gateway before it to join concurrent flows, or an exclusive gateway to merge alternatives"
                });
            // Alternatives merging into a node (a loop back, say) run it once
            // each, as drawn: under qflow's defaults that stays a warning.
            if qflow_executable && !concurrent && e.settings.is_default(Code::QF105) {
                e.push_at(d, crate::diagnostic::Severity::Warning);
            } else {
                e.push(d);
            }
        }

        // QF107 label-required (flow nodes)
        let unlabelled_kind = matches!(&*n.element, "parallelGateway" | "eventBasedGateway")
            || (is_gateway(n) && outgoing <= 1)
            || is_sub_process(n);
        let labelled = !unlabelled_kind;
        if labelled && n.name.as_ref().is_none_or(|a| a.value.trim().is_empty()) {
            e.push(
                node_diag(Code::QF107, n, format!("{} has no label", what(n)))
                    .label("missing name")
                    .help("give it a name=\"…\" that says what happens here (a forking gateway: the question it asks)"),
            );
        }

        // QF110 no-complex-gateway, QF117 no-inclusive-gateway
        for (code, element, why) in [
            (Code::QF110, "complexGateway", "a complex gateway's behaviour is hard to read and rarely supported"),
            (Code::QF117, "inclusiveGateway", "an inclusive gateway's join waits for tokens that may never come; its behaviour is hard to read"),
        ] {
            if n.element == element {
                e.push(
                    node_diag(code, n, format!("{} is discouraged", what(n)))
                        .label(why)
                        .help("model the choice with exclusive and parallel gateways"),
                );
            }
        }

        // QF111 no-disconnected
        let compensation_linked = n.for_compensation
            || (matches!(n.kind, NodeKind::BoundaryEvent { .. })
                && only_definition(n, "compensateEventDefinition")
                && n.event_definitions.len() == 1);
        if (is_task(n) || is_gateway(n) || is_sub_process(n) || is_event(n))
            && !is_event_sub_process(n)
            && !compensation_linked
            && !in_ad_hoc(p, n)
            && incoming == 0
            && outgoing == 0
        {
            e.push(
                node_diag(Code::QF111, n, format!("{} is not connected", what(n)))
                    .label("no sequence flow in or out")
                    .help("connect it with sequence flows, or remove it and its drawing"),
            );
        }

        // QF113 no-gateway-join-fork
        if is_gateway(n) && incoming > 1 && outgoing > 1 {
            e.push(
                node_diag(Code::QF113, n, format!("{} both joins {incoming} flows and forks into {outgoing}", what(n)))
                    .label("joins and forks")
                    .help(if qflow_executable {
                        "split it into a joining gateway followed by a forking one; as it is, qflow's runtime treats it as one step that first joins, then forks, which a reader easily takes for two decisions"
                    } else {
                        "split it into a joining gateway followed by a forking one"
                    }),
            );
        }

        // QF114 no-implicit-split
        if is_activity(n) || is_event(n) {
            let plain = g
                .outgoing(i)
                .filter(|f| f.condition.is_none() && !g.is_default(i, f))
                .count();
            if plain > 1 {
                e.push(
                    node_diag(Code::QF114, n, format!("{} splits implicitly into {plain} unconditional flows", what(n)))
                        .label("implicit split")
                        .help(if qflow_executable {
                            "model the split with a gateway after it (parallel to run every branch, exclusive to choose one); as it is, qflow's runtime takes every unconditional flow at once"
                        } else {
                            "model the split with a gateway after it: parallel to run every branch, exclusive to choose one"
                        }),
                );
            }
        }

        // QF115 no-implicit-end, QF116 no-implicit-start
        if is_event(n) || is_activity(n) || is_gateway(n) {
            let link_throw =
                n.element == "intermediateThrowEvent" && only_definition(n, "linkEventDefinition");
            let compensation_boundary = matches!(n.kind, NodeKind::BoundaryEvent { .. })
                && only_definition(n, "compensateEventDefinition")
                && associated(ctx.defs, n.id());
            let implicit_end = outgoing == 0
                && !is_event_sub_process(n)
                && !link_throw
                && !in_ad_hoc(p, n)
                && !matches!(n.kind, NodeKind::EndEvent { .. })
                && !compensation_boundary
                && !(is_task(n) && n.for_compensation);
            if implicit_end {
                e.push(
                    node_diag(
                        Code::QF115,
                        n,
                        format!("{} ends a path without an end event", what(n)),
                    )
                    .label("implicit end")
                    .help("add a sequence flow from it to an end event"),
                );
            }
            let link_catch =
                n.element == "intermediateCatchEvent" && only_definition(n, "linkEventDefinition");
            let exempt_start = (is_activity(n) && n.for_compensation)
                || in_ad_hoc(p, n)
                || is_event_sub_process(n)
                || link_catch
                || matches!(
                    n.kind,
                    NodeKind::StartEvent { .. } | NodeKind::BoundaryEvent { .. }
                );
            let implicit_start = incoming == 0 && !exempt_start;
            if implicit_start {
                e.push(
                    node_diag(
                        Code::QF116,
                        n,
                        format!("{} starts a path without a start event", what(n)),
                    )
                    .label("implicit start")
                    .help("add a sequence flow into it from a start event or an earlier node"),
                );
            }
        }

        // QF123 superfluous-gateway
        if is_gateway(n) && incoming == 1 && outgoing == 1 {
            let mut d = node_diag(
                Code::QF123,
                n,
                format!(
                    "{} has one incoming and one outgoing flow: it does nothing",
                    what(n)
                ),
            )
            .label("superfluous gateway")
            .help("remove the gateway and connect its incoming flow to its target");
            if let Some(fix) = remove_gateway(ctx, g, i) {
                d = d.fix(
                    format!("Remove gateway `{}` and reconnect its flows", n.id()),
                    fix,
                );
            }
            e.push(d);
        }
    }

    // Flow rules: QF107 (conditional flows need a label), QF112, QF124.
    let mut seen: HashMap<(&str, &str, &str), usize> = HashMap::with_capacity_and_hasher(
        if e.on(Code::QF112) { p.flows.len() } else { 0 },
        Default::default(),
    );
    let mut dup_source = Vec::new();
    let mut dup_target = Vec::new();
    for f in &p.flows {
        let source = f
            .source
            .as_ref()
            .map_or(f.id.value.as_str(), |s| s.value.as_str());
        let target = f
            .target
            .as_ref()
            .map_or(f.id.value.as_str(), |t| t.value.as_str());
        let named = f.name.as_ref().is_some_and(|a| !a.value.trim().is_empty());
        if f.condition.is_some() && !named {
            e.push(
                flow_diag(
                    ctx,
                    Code::QF107,
                    f,
                    format!("conditional sequence flow `{}` has no label", f.id.value),
                )
                .label("missing name")
                .help("name the flow after its condition (name=\"approved\")"),
            );
        }
        if named && f.condition.is_none() {
            let s = g.node_index(source);
            let default = s.is_some_and(|s| g.is_default(s, f));
            let gateway_fork = s.is_some_and(|s| {
                matches!(
                    &*p.nodes[s].element,
                    "exclusiveGateway" | "inclusiveGateway"
                ) && g.out_count(s) > 1
            });
            if !default && !gateway_fork {
                e.push(
                    flow_diag(ctx, Code::QF124, f, format!("unconditional sequence flow `{}` has a label", f.id.value))
                        .label("superfluous label")
                        .help("remove the name, or, to mark a milestone, model an intermediate event on the flow"),
                );
            }
        }
        if e.on(Code::QF112) {
            let condition = f.condition.as_ref().map_or("", |c| c.value.as_str());
            if seen.insert((source, target, condition), 0).is_some() {
                let mut d = flow_diag(
                    ctx,
                    Code::QF112,
                    f,
                    format!(
                        "sequence flow `{}` duplicates another flow from `{source}` to `{target}`",
                        f.id.value
                    ),
                )
                .label("duplicate sequence flow")
                .help("remove one of the two flows");
                d = d.fix(
                    format!("Remove duplicate flow `{}`", f.id.value),
                    remove_flow(ctx, g, f),
                );
                e.push(d);
                if !dup_source.contains(&source) {
                    dup_source.push(source);
                    if let Some(s) = g.node_index(source) {
                        let n = &p.nodes[s];
                        e.push(
                            node_diag(
                                Code::QF112,
                                n,
                                format!("{} has duplicate outgoing sequence flows", what(n)),
                            )
                            .label("duplicate outgoing flows")
                            .help("remove one of the two flows"),
                        );
                    }
                }
                if !dup_target.contains(&target) {
                    dup_target.push(target);
                    if let Some(t) = g.node_index(target) {
                        let n = &p.nodes[t];
                        e.push(
                            node_diag(
                                Code::QF112,
                                n,
                                format!("{} has duplicate incoming sequence flows", what(n)),
                            )
                            .label("duplicate incoming flows")
                            .help("remove one of the two flows"),
                        );
                    }
                }
            }
        }
    }

    // Scope rules: QF102, QF119, QF121, QF125.
    for scope in &scopes {
        let (span, element, kind) = match scope.node {
            None => (
                p.name_span,
                p.id.as_ref().map(|a| a.value.clone()),
                "process".to_string(),
            ),
            Some(i) => (
                p.nodes[i].name_span,
                Some(p.nodes[i].id().to_string()),
                format!("sub-process `{}`", p.nodes[i].id()),
            ),
        };
        let process_name = match &p.id {
            Some(id) => format!("process `{}`", id.value),
            None => "process (without id)".to_string(),
        };
        let kind = if scope.node.is_none() {
            process_name
        } else {
            kind
        };
        let ad_hoc = scope
            .node
            .is_some_and(|i| p.nodes[i].element == "adHocSubProcess");
        let with_element = |d: Diagnostic| match &element {
            Some(id) => d.element(id.clone()),
            None => d,
        };
        if !ad_hoc && scope.starts == 0 && !(scope.node.is_none() && qflow_executable) {
            e.push(with_element(
                Diagnostic::new(Code::QF121, span, format!("{kind} has no start event"))
                    .label("missing start event")
                    .help("add a start event and a sequence flow from it to the first node"),
            ));
        }
        if !ad_hoc && scope.ends == 0 {
            e.push(with_element(
                Diagnostic::new(Code::QF102, span, format!("{kind} has no end event"))
                    .label("missing end event")
                    .help("end every path in an end event"),
            ));
        }
        if scope.blank_starts.len() > 1 {
            let mut d = with_element(Diagnostic::new(
                Code::QF119,
                span,
                format!("{kind} has {} blank start events", scope.blank_starts.len()),
            ))
            .label("several blank start events")
            .help(if qflow_executable {
                "keep one blank start event (merge the paths after it with a gateway); as it is, qflow's runtime starts every instance at the first one in document order and never at the others"
            } else {
                "keep one blank start event; give the others the trigger that starts them (message, timer, …)"
            });
            for &b in scope.blank_starts.iter().take(crate::text::LIST_CAP) {
                d = d.related(
                    p.nodes[b].name_span,
                    format!("blank start event `{}`", p.nodes[b].id()),
                );
            }
            e.push(d);
        }
    }
    if e.on(Code::QF125) {
        superfluous_termination(g, &scopes, e);
    }
    if e.on(Code::QF108) {
        link_events(p, e);
    }
}

/// Nodes where tokens of two branches of one parallel split (a parallel
/// gateway, or an activity's implicit split) arrive without a parallel join
/// between: each branch is followed until a joining parallel gateway.
fn concurrent_meets<'g>(g: &'g Graph<'_>) -> &'g [usize] {
    g.meets.get_or_init(|| {
        let p = g.p;
        let n = p.nodes.len();
        let mut meets = Vec::new();
        let mut stamp = vec![u32::MAX; n];
        let mut branch_of = vec![0u32; n];
        let mut stack = Vec::new();
        for (fork, node) in p.nodes.iter().enumerate() {
            let forks = if node.element == "parallelGateway" {
                g.out_count(fork) > 1
            } else {
                g.outgoing(fork).filter(|f| f.condition.is_none()).count() > 1 && !is_gateway(node)
            };
            if !forks {
                continue;
            }
            for (b, f) in g.outgoing(fork).enumerate() {
                if let Some(t) = f.target.as_ref().and_then(|t| g.node_index(&t.value)) {
                    stack.push((t, b as u32));
                }
            }
            while let Some((i, b)) = stack.pop() {
                if stamp[i] == fork as u32 {
                    if branch_of[i] != b && !meets.contains(&i) {
                        meets.push(i);
                    }
                    continue;
                }
                stamp[i] = fork as u32;
                branch_of[i] = b;
                let joins = p.nodes[i].element == "parallelGateway" && g.incoming(i) > 1;
                if joins || i == fork {
                    continue;
                }
                for f in g.outgoing(i) {
                    if let Some(t) = f.target.as_ref().and_then(|t| g.node_index(&t.value)) {
                        stack.push((t, b));
                    }
                }
            }
        }
        meets
    })
}

/// Whether an association (or any non-flow reference) starts at `id`.
fn associated(defs: &Definitions, id: &str) -> bool {
    defs.references
        .iter()
        .any(|r| r.kind == crate::model::RefKind::SourceRef && r.target.value == id)
}

/// QF125: a scope whose only terminate end event ends it as every other
/// dead end would (the others being interrupting event sub-processes).
fn superfluous_termination(g: &Graph<'_>, scopes: &[Scope], e: &mut Emit<'_, '_>) {
    for scope in scopes {
        let [only] = scope.terminate_ends.as_slice() else {
            continue;
        };
        if scope.other_end
            || scope
                .event_sub_ends
                .iter()
                .any(|&k| !scopes[k].interrupting_start)
        {
            continue;
        }
        let n = &g.p.nodes[*only];
        e.push(
            node_diag(
                Code::QF125,
                n,
                format!("terminate end event `{}` is superfluous", n.id()),
            )
            .label("nothing else is running when this path ends")
            .help("use a plain end event (remove the terminateEventDefinition)"),
        );
    }
}

/// QF108: every link name in a scope has exactly one catch and a throw.
fn link_events(p: &Process, e: &mut Emit<'_, '_>) {
    let mut groups: Vec<(Option<usize>, &str, Vec<usize>)> = Vec::new();
    for (node, name) in &p.links {
        let n = &p.nodes[*node as usize];
        let name = name.as_ref().map_or("", |a| a.value.as_str());
        if name.is_empty() {
            e.push(
                node_diag(Code::QF108, n, format!("link event `{}` has no link name", n.id()))
                    .label("missing link name")
                    .help("name the linkEventDefinition (name=\"…\"): a throw jumps to the catch of the same name"),
            );
            continue;
        }
        match groups
            .iter_mut()
            .find(|(s, m, _)| *s == n.scope && *m == name)
        {
            Some((_, _, v)) => v.push(*node as usize),
            None => groups.push((n.scope, name, vec![*node as usize])),
        }
    }
    let is_throw = |n: &Node| {
        matches!(
            &*n.element,
            "intermediateThrowEvent" | "endEvent" | "implicitThrowEvent"
        )
    };
    for (_, name, events) in groups {
        if let [one] = events.as_slice() {
            let n = &p.nodes[*one];
            let missing = if is_throw(n) { "catch" } else { "throw" };
            e.push(
                node_diag(Code::QF108, n, format!("link event `{}`: no link {missing} event named `{name}` in its scope", n.id()))
                    .label(format!("no matching link {missing}"))
                    .help("a link throw and its catch share a name and a scope; add the counterpart or fix the name"),
            );
            continue;
        }
        let catches: Vec<usize> = events
            .iter()
            .copied()
            .filter(|&i| !is_throw(&p.nodes[i]))
            .collect();
        let report: Vec<usize> = match catches.len() {
            0 => events.clone(),
            1 => Vec::new(),
            _ => catches,
        };
        for i in report {
            let n = &p.nodes[i];
            let msg = if is_throw(n) {
                format!(
                    "link event `{}`: no link catch event named `{name}` in its scope",
                    n.id()
                )
            } else {
                format!("link catch event `{}`: another link catch event in its scope is named `{name}`", n.id())
            };
            e.push(
                node_diag(Code::QF108, n, msg)
                    .label("link name without exactly one catch")
                    .help("a link name has exactly one catch event per scope"),
            );
        }
    }
}

/// QF106: message, signal, error and escalation definitions are named,
/// used, and their names unique per kind.
fn global(ctx: &Ctx<'_>, e: &mut Emit<'_, '_>) {
    let defs = ctx.defs;
    if !e.on(Code::QF106) || defs.globals.is_empty() {
        return;
    }
    for g in &defs.globals {
        let what = format!("<{}> `{}`", g.local, g.id());
        let d = |msg: String, label: &str, help: &str| {
            Diagnostic::new(Code::QF106, g.name_span, msg)
                .element(g.id())
                .label(label)
                .help(help)
        };
        // As bpmnlint judges it: a blank name is missing; no name attribute
        // at all is not (but two unnamed definitions of a kind share a name).
        if g.name.as_ref().is_some_and(|n| n.value.trim().is_empty()) {
            e.push(d(
                format!("{what} has no name"),
                "missing name",
                "give it a name=\"…\" (what a thrower and a catcher agree on)",
            ));
        }
        let attr = format!("{}Ref", g.local);
        let used = defs
            .references
            .iter()
            .any(|r| r.target.value == g.id() && reference_attribute(ctx, r) == attr);
        if !used {
            e.push(d(format!("{what} is never used"), "unused", "reference it from an event definition (or a message flow, send or receive task), or remove it"));
        }
        let name_of = |l: &crate::model::Labelled| l.name.as_ref().map(|a| a.value.clone());
        let twins = defs
            .globals
            .iter()
            .filter(|o| o.local == g.local && name_of(o) == name_of(g))
            .count();
        if twins > 1 {
            let msg = match &g.name {
                Some(n) => format!("{what}: another <{}> has the name `{}`", g.local, n.value),
                None => format!("{what}: another <{}> has no name either", g.local),
            };
            e.push(d(
                msg,
                "name not unique",
                "give each definition its own name, or use one definition",
            ));
        }
    }
}

/// The attribute name of a reference as written (`messageRef`).
fn reference_attribute<'a>(ctx: &Ctx<'a>, r: &crate::model::Reference) -> &'a str {
    let text = ctx.text(r.target.full_span);
    text.split('=').next().unwrap_or("").trim()
}

/// QF107 on participants and lanes.
fn participants(defs: &Definitions, e: &mut Emit<'_, '_>) {
    if !e.on(Code::QF107) {
        return;
    }
    let lanes = defs.processes.iter().flat_map(|p| &p.lanes);
    for l in defs.participants.iter().chain(lanes) {
        if l.label().is_empty() {
            let d = Diagnostic::new(
                Code::QF107,
                l.name_span,
                format!("<{}> `{}` has no label", l.local, l.id()),
            )
            .label("missing name")
            .help("give it a name=\"…\" (who does the work)");
            e.push(match &l.id {
                Some(id) => d.element(id.value.clone()),
                None => d,
            });
        }
    }
}

/// Elements bpmnlint expects a diagram to draw.
const DRAWN: &[&str] = &[
    "sequenceFlow",
    "participant",
    "lane",
    "messageFlow",
    "textAnnotation",
    "association",
    "group",
    "dataObjectReference",
    "dataStoreReference",
];

/// QF109 no-bpmndi: every flow element, participant, lane, artifact and
/// message flow has a shape or an edge.
fn no_bpmndi(defs: &Definitions, e: &mut Emit<'_, '_>) {
    if !e.on(Code::QF109) {
        return;
    }
    let drawn: foldhash::HashSet<&str> = defs
        .diagram_elements
        .iter()
        .map(|d| d.bpmn_element.as_str())
        .collect();
    let flow_nodes: foldhash::HashSet<&str> = defs
        .processes
        .iter()
        .flat_map(|p| p.nodes.iter().map(|n| n.id()))
        .collect();
    for decl in &defs.ids {
        let id = decl.id.value.as_str();
        let visual = DRAWN.contains(&&*decl.element.local) || flow_nodes.contains(id);
        if visual && !drawn.contains(id) {
            e.push(
                Diagnostic::new(Code::QF109, decl.element.name_span, format!("<{}> `{id}` is missing from the diagram", decl.element.local))
                    .element(id)
                    .label("no BPMNShape or BPMNEdge draws it")
                    .help("open the model in a graphical modeller and lay it out, or add the bpmndi shape or edge"),
            );
        }
    }
}

/// QF118 no-overlapping-elements: shapes of one container overlap (a
/// boundary event and its host aside), or a shape leaves its expanded
/// sub-process or pool.
fn overlapping(defs: &Definitions, e: &mut Emit<'_, '_>) {
    if !e.on(Code::QF118) || defs.shape_bounds.is_empty() {
        return;
    }
    // Bounds by drawn id.
    let mut by_id: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(defs.shape_bounds.len(), Default::default());
    for (k, b) in defs.shape_bounds.iter().enumerate() {
        by_id
            .entry(
                defs.diagram_elements[b.diagram as usize]
                    .bpmn_element
                    .as_str(),
            )
            .or_insert(k);
    }
    let mut overlaps: Vec<(usize, usize)> = Vec::new(); // (process, node) reported
    let mut outside: Vec<(usize, usize)> = Vec::new();
    // Participant overlaps.
    let parts: Vec<(usize, &crate::model::ShapeBounds)> = defs
        .participants
        .iter()
        .enumerate()
        .filter_map(|(k, pa)| by_id.get(pa.id()).map(|&b| (k, &defs.shape_bounds[b])))
        .collect();
    let mut part_hits = vec![false; defs.participants.len()];
    for (a, (ka, ba)) in parts.iter().enumerate() {
        for (kb, bb) in &parts[a + 1..] {
            if collide(ba, bb) {
                part_hits[*ka] = true;
                part_hits[*kb] = true;
            }
        }
    }
    for (k, hit) in part_hits.iter().enumerate() {
        if *hit {
            let pa = &defs.participants[k];
            e.push(
                Diagnostic::new(
                    Code::QF118,
                    pa.name_span,
                    format!(
                        "<participant> `{}` overlaps another element in the diagram",
                        pa.id()
                    ),
                )
                .element(pa.id())
                .label("overlaps")
                .help("move the shapes apart in the diagram"),
            );
        }
    }
    for (pi, p) in defs.processes.iter().enumerate() {
        // The pool drawing this process, if any.
        let pool = p.id.as_ref().and_then(|pid| {
            let part = defs.participants.iter().find(|pa| {
                pa.process_ref
                    .as_ref()
                    .is_some_and(|r| r.value == pid.value)
            })?;
            by_id.get(part.id()).map(|&b| &defs.shape_bounds[b])
        });
        // Group the process's drawn nodes by scope.
        let mut groups: HashMap<Option<usize>, Vec<(usize, &crate::model::ShapeBounds)>> =
            HashMap::default();
        for (i, n) in p.nodes.iter().enumerate() {
            if let Some(&b) = by_id.get(n.id()) {
                groups
                    .entry(n.scope)
                    .or_default()
                    .push((i, &defs.shape_bounds[b]));
            }
        }
        for (scope, mut shapes) in groups {
            let parent = match scope {
                None => pool,
                Some(s) => by_id
                    .get(p.nodes[s].id())
                    .map(|&b| &defs.shape_bounds[b])
                    .filter(|b| b.expanded),
            };
            if let Some(parent) = parent {
                for (i, b) in &shapes {
                    if !inside(b, parent) {
                        outside.push((pi, *i));
                    }
                }
            }
            // Sweep along x: only shapes whose x-ranges meet are compared.
            shapes.sort_by(|a, b| a.1.x.total_cmp(&b.1.x));
            for a in 0..shapes.len() {
                let (ia, ba) = shapes[a];
                for &(ib, bb) in &shapes[a + 1..] {
                    if bb.x > ba.x + ba.width {
                        break;
                    }
                    if attached(p, ia, ib) || attached(p, ib, ia) {
                        continue;
                    }
                    if collide(ba, bb) {
                        overlaps.push((pi, ia));
                        overlaps.push((pi, ib));
                    }
                }
            }
        }
    }
    overlaps.sort_unstable();
    overlaps.dedup();
    outside.sort_unstable();
    outside.dedup();
    for (pi, i) in overlaps {
        let n = &defs.processes[pi].nodes[i];
        e.push(
            node_diag(
                Code::QF118,
                n,
                format!("{} overlaps another element in the diagram", what(n)),
            )
            .label("overlaps")
            .help("move the shapes apart in the diagram"),
        );
    }
    for (pi, i) in outside {
        let n = &defs.processes[pi].nodes[i];
        e.push(
            node_diag(
                Code::QF118,
                n,
                format!(
                    "{} lies outside its parent's boundary in the diagram",
                    what(n)
                ),
            )
            .label("outside its parent")
            .help("move the shape inside its pool or expanded sub-process"),
        );
    }
}

fn attached(p: &Process, boundary: usize, host: usize) -> bool {
    matches!(&p.nodes[boundary].kind, NodeKind::BoundaryEvent { attached_to: Some(a), .. } if a.value == p.nodes[host].id())
}

fn collide(a: &crate::model::ShapeBounds, b: &crate::model::ShapeBounds) -> bool {
    a.x + a.width >= b.x && b.x + b.width >= a.x && a.y + a.height >= b.y && b.y + b.height >= a.y
}

fn inside(child: &crate::model::ShapeBounds, parent: &crate::model::ShapeBounds) -> bool {
    child.x >= parent.x
        && child.y >= parent.y
        && child.x + child.width <= parent.x + parent.width
        && child.y + child.height <= parent.y + parent.height
}

/// An edit adding `name="value"` to a node's start tag.
fn add_attribute(ctx: &Ctx<'_>, n: &Node, name: &str, value: &str) -> Edit {
    let tag = n.tag.start_tag;
    let text = ctx.text(tag);
    let close = if text.ends_with("/>") { 2 } else { 1 };
    let mut at = tag.end - close;
    // Before any whitespace that precedes `>`.
    while at > tag.start && ctx.source.as_bytes()[at - 1].is_ascii_whitespace() {
        at -= 1;
    }
    insert(at, format!(" {name}=\"{value}\""))
}

/// Edits removing a flow: the element, its drawing, and the
/// `<incoming>`/`<outgoing>` entries that name it.
fn remove_flow(ctx: &Ctx<'_>, g: &Graph<'_>, f: &Flow) -> Vec<Edit> {
    let mut edits = vec![ctx.remove(f.span)];
    edits.extend(ctx.remove_drawing(&f.id.value));
    for end in [&f.source, &f.target].into_iter().flatten() {
        if let Some(i) = g.node_index(&end.value) {
            let n = &g.p.nodes[i];
            for r in n.incoming_refs.iter().chain(&n.outgoing_refs) {
                if r.value == f.id.value {
                    edits.push(ctx.remove(r.full_span));
                }
            }
        }
    }
    edits
}

/// QF123's fix: the gateway and its outgoing flow go; its incoming flow now
/// targets what the outgoing flow targeted. Only offered when the outgoing
/// flow has no condition (removing it would drop the condition).
fn remove_gateway(ctx: &Ctx<'_>, g: &Graph<'_>, i: usize) -> Option<Vec<Edit>> {
    let p = g.p;
    let gateway = &p.nodes[i];
    let out = g.outgoing(i).next()?;
    if out.condition.is_some() {
        return None;
    }
    let inc = p
        .flows
        .iter()
        .find(|f| f.target.as_ref().is_some_and(|t| t.value == gateway.id()))?;
    let target = out.target.as_ref()?;
    if inc.source.as_ref().is_some_and(|s| s.value == target.value) {
        return None;
    }
    let mut edits = vec![
        ctx.remove(gateway.span),
        ctx.remove(out.span),
        Edit {
            span: inc.target.as_ref()?.span,
            new_text: target.value.clone(),
        },
    ];
    edits.extend(ctx.remove_drawing(gateway.id()));
    edits.extend(ctx.remove_drawing(&out.id.value));
    if let Some(t) = g.node_index(&target.value) {
        for r in &p.nodes[t].incoming_refs {
            if r.value == out.id.value {
                edits.push(Edit {
                    span: r.span,
                    new_text: inc.id.value.clone(),
                });
            }
        }
    }
    Some(edits)
}
