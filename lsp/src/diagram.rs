//! The diagram beside the text (`qflow/diagram`, docs/language-server.md):
//! the model layer's drawing of one process of the document
//! (`qflow_model::diagram`, the picture `qflow render` writes), every
//! verdict of the loader marked on the element it is about, and where each
//! element is in the text, so a click on the drawing can reveal it. The
//! server only presents the drawing: where things go is the model's.

use std::collections::BTreeMap;

use qflow_model::diagnostic::Severity;
use qflow_model::diagram::{svg, Diagram, Finding};
use qflow_model::model::Process;
use qflow_model::span::Span;

use crate::store::Snapshot;

/// One process drawn, with its elements' places in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The process drawn (its id).
    pub process: String,
    /// Every process of the document (its id), the drawn one among them.
    pub processes: Vec<String>,
    /// A standalone SVG document.
    pub svg: String,
    /// Each node and flow: its id, the whole element and its id's value.
    pub elements: Vec<Element>,
    /// How many verdicts are marked on an element of the drawing.
    pub marked: usize,
    /// How many verdicts of the document are on no element of the drawing
    /// (a flow whose reference dangles is not drawn; a document's own, an
    /// `<error>` definition's, another process's): the picture alone would
    /// hide them, so the editor says how many there are.
    pub unmarked: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub id: String,
    pub span: Span,
    pub selection: Span,
}

/// Draw `process` (by id), else the first executable process, else the
/// first one. `None`: the document holds no process (or is no model).
pub fn diagram(snap: &Snapshot, process: Option<&str>) -> Option<Answer> {
    let defs = snap.definitions()?;
    let id = |p: &Process| p.id.as_ref().map_or(String::new(), |a| a.value.to_string());
    let chosen = process
        .and_then(|want| defs.processes.iter().find(|p| id(p) == want))
        .or_else(|| defs.executable_processes().next())
        .or_else(|| defs.processes.first())?;
    let drawing = Diagram::of(chosen, Some(snap.text.as_str()));
    let mut elements: Vec<Element> = chosen
        .nodes
        .iter()
        .map(|n| Element {
            id: n.id.value.to_string(),
            span: n.span,
            selection: n.id.span,
        })
        .chain(chosen.flows.iter().map(|f| Element {
            id: f.id.value.to_string(),
            span: f.span,
            selection: f.id.span,
        }))
        .filter(|e| !e.id.is_empty())
        .collect();
    elements.sort_by_key(|e| (e.span.start(), std::cmp::Reverse(e.span.end())));
    let drawn: std::collections::BTreeSet<&str> = drawing
        .nodes
        .iter()
        .map(|n| n.id.as_str())
        .chain(drawing.flows.iter().map(|f| f.id.as_str()))
        .collect();
    let mut findings: BTreeMap<String, (Severity, Vec<(Severity, String)>)> = BTreeMap::new();
    let mut marked = 0;
    let mut unmarked = 0;
    let diagnostics = snap
        .analysis
        .as_ref()
        .map_or(&[][..], |a| &a.diagnostics[..]);
    for d in diagnostics {
        // The element the verdict names, else the innermost one its span
        // starts in.
        let at = d
            .element
            .as_deref()
            .filter(|e| drawn.contains(e))
            .map(str::to_string)
            .or_else(|| {
                let start = d.primary.span.start();
                elements
                    .iter()
                    .filter(|e| e.span.contains(start) && drawn.contains(e.id.as_str()))
                    .min_by_key(|e| e.span.len())
                    .map(|e| e.id.clone())
            });
        let Some(at) = at else {
            unmarked += 1;
            continue;
        };
        marked += 1;
        let entry = findings.entry(at).or_insert((d.severity, Vec::new()));
        if rank(d.severity) < rank(entry.0) {
            entry.0 = d.severity;
        }
        entry
            .1
            .push((d.severity, format!("{} {}", d.code.as_str(), d.message)));
    }
    let findings: BTreeMap<String, Finding> = findings
        .into_iter()
        .map(|(id, (severity, mut messages))| {
            messages.sort_by_key(|(s, _)| rank(*s));
            (
                id,
                Finding {
                    severity: severity.as_str(),
                    messages: messages.into_iter().map(|(_, m)| m).collect(),
                },
            )
        })
        .collect();
    Some(Answer {
        process: id(chosen),
        processes: defs.processes.iter().map(id).collect(),
        svg: svg::svg_with_findings(&drawing, &findings),
        elements,
        marked,
        unmarked,
    })
}

/// Most severe first.
fn rank(s: Severity) -> u8 {
    match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
        Severity::Hint => 3,
    }
}
