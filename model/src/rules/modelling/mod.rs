//! The modelling rules (QF100–QF127): one per rule of bpmnlint 11.15, with
//! the same meaning, for every BPMN document. QF100–QF125 are its
//! recommended configuration; QF126 and QF127 are in `bpmnlint:all` only and
//! run when a configuration turns them on.
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
//!
//! | module | what it judges |
//! |---|---|
//! | `graph` | (the flows indexed by node; where parallel branches meet) |
//! | `events` | QF100, QF104, QF122, QF120, QF126 per node; QF108 link pairs |
//! | `gateways` | QF103, QF101, QF110, QF117, QF113, QF123 per node |
//! | `paths` | QF105, QF107 (flow nodes), QF111, QF114, QF115, QF116 per node |
//! | `flows` | QF107 (conditional flows), QF112, QF124 |
//! | `scopes` | QF121, QF102, QF119, QF125 per process and sub-process |
//! | `globals` | QF106, QF107 (participants and lanes) |
//! | `drawing` | QF109, QF118, QF127 |

use crate::config::{Profile, Settings};
use crate::diagnostic::{Code, Diagnostic};
use crate::model::{Flow, Node, NodeKind, Process};
use crate::rules::edit::Ctx;
use crate::span::Span;

mod drawing;
mod events;
mod flows;
mod gateways;
mod globals;
mod graph;
mod paths;
mod scopes;

pub use graph::Graph;

/// Every modelling verdict on one document: [`check_processes`], then
/// [`check_drawing`].
pub fn check(ctx: &Ctx<'_>, settings: &Settings, out: &mut Vec<Diagnostic>) {
    check_processes(ctx, settings, out);
    check_drawing(ctx, settings, out);
}

/// A document written in qflow's dialect: it declares the namespace, or
/// binds a near miss of it (QF043 says so) and is meant to be one.
fn is_qflow_doc(ctx: &Ctx<'_>) -> bool {
    let defs = ctx.defs;
    defs.declares_qflow
        || defs
            .namespace_bindings
            .iter()
            .any(|b| crate::rules::namespace::looks_like_qflow(&b.uri.value))
}

/// The profile of the rules about the whole document (globals, drawing).
fn doc_profile(ctx: &Ctx<'_>) -> Profile {
    if is_qflow_doc(ctx) {
        Profile::Qflow { executable: false }
    } else {
        Profile::Plain
    }
}

/// The modelling verdicts on the processes' graphs and on the document's
/// global elements and participants.
pub fn check_processes(ctx: &Ctx<'_>, settings: &Settings, out: &mut Vec<Diagnostic>) {
    let defs = ctx.defs;
    let qflow_doc = is_qflow_doc(ctx);
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
        profile: doc_profile(ctx),
        out,
    };
    globals::global(ctx, &mut e);
    globals::participants(defs, &mut e);
}

/// The modelling verdicts on the diagram (QF109, QF118, QF127): they read
/// the drawings and ids, not the processes' graphs, so they may run beside
/// [`check_processes`].
pub fn check_drawing(ctx: &Ctx<'_>, settings: &Settings, out: &mut Vec<Diagnostic>) {
    let mut e = Emit {
        settings,
        profile: doc_profile(ctx),
        out,
    };
    if e.on(Code::QF109) || e.on(Code::QF118) {
        let drawn = drawing::Drawn::new(ctx);
        drawing::no_bpmndi(ctx, &drawn, &mut e);
        drawing::overlapping(ctx.defs, &drawn, &mut e);
    }
    drawing::standard_size(ctx, &mut e);
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
            .filter(|c| {
                c.is_modelling()
                    && !matches!(c, Code::QF106 | Code::QF109 | Code::QF118 | Code::QF127)
            })
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

/// Blank as bpmnlint's `name.trim()` sees it: JavaScript's whitespace (which
/// counts U+FEFF and not U+0085, unlike Rust's `trim`).
fn blank(s: &str) -> bool {
    s.chars()
        .all(|c| (c.is_whitespace() && c != '\u{85}') || c == '\u{FEFF}')
}

/// A name attribute that is absent or blank.
fn unnamed(name: Option<&crate::model::Attr>) -> bool {
    name.is_none_or(|a| blank(&a.value))
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
    Span::new(span.start() + 1, span.start() + 1 + len)
}

fn node_diag(code: Code, n: &Node, message: String) -> Diagnostic {
    Diagnostic::new(code, n.name_span, message).element(n.id())
}

fn flow_diag(ctx: &Ctx<'_>, code: Code, f: &Flow, message: String) -> Diagnostic {
    Diagnostic::new(code, tag_name(ctx, f.span), message).element(f.id.value.clone())
}

/// One node as the per-node rules see it.
struct At<'r> {
    ctx: &'r Ctx<'r>,
    g: &'r Graph<'r>,
    i: usize,
    n: &'r Node,
    /// The sub-process the node is in, if any.
    parent: Option<&'r Node>,
    incoming: usize,
    outgoing: usize,
    /// The process is executable in a qflow document: some rules say what
    /// qflow's runtime does with the finding.
    qflow_executable: bool,
}

/// Every rule on one process: each node's rules in node order, then the
/// flows', then the scopes'.
fn process_rules(ctx: &Ctx<'_>, g: &Graph<'_>, e: &mut Emit<'_, '_>) {
    let p = g.p;
    let qflow_executable = matches!(e.profile, Profile::Qflow { executable: true });
    for (i, n) in p.nodes.iter().enumerate() {
        let at = At {
            ctx,
            g,
            i,
            n,
            parent: n.scope.map(|s| &p.nodes[s]),
            incoming: g.incoming(i),
            outgoing: g.out_count(i),
            qflow_executable,
        };
        events::ad_hoc(&at, e);
        events::start_definitions(&at, e);
        events::single_definition(&at, e);
        events::conditional(&at, e);
        gateways::event_based(&at, e);
        gateways::conditional_flows(&at, e);
        paths::fake_join(&at, e);
        paths::label(&at, e);
        gateways::discouraged(&at, e);
        paths::disconnected(&at, e);
        gateways::join_fork(&at, e);
        paths::implicit_split(&at, e);
        paths::implicit_ends(&at, e);
        gateways::superfluous(&at, e);
    }
    flows::check(ctx, g, e);
    let scopes = scopes::tally(g);
    scopes::check(g, &scopes, e);
    if e.on(Code::QF125) {
        scopes::superfluous_termination(g, &scopes, e);
    }
    if e.on(Code::QF108) {
        events::link_events(p, e);
    }
}
