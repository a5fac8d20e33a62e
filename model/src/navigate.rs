//! Position queries over a model: what sits at a byte offset, where an id is
//! declared and used, what a rename must touch, and what the author is typing.
//!
//! These answer the editor's questions (hover, go to definition, references,
//! rename, completion) in byte offsets and [`Span`]s, so the language server
//! only converts positions and renders; every face that ever needs "what is
//! under the cursor" gets the same answer.

use std::collections::HashSet;

use crate::diagnostic::Edit;
use crate::model::{
    Attr, Definitions, EventTrigger, IdDecl, Node, NodeKind, Process, RefKind, RetrySpec,
    TimeoutSpec,
};
use crate::span::Span;
use crate::xml::QFLOW_NS;

/// A cursor sitting at the end of a word still touches it.
fn touches(span: Span, offset: usize) -> bool {
    span.start() <= offset && offset <= span.end()
}

/// How an occurrence of an id uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    /// The `id="…"` that declares it.
    Declaration,
    /// An IDREF attribute (sourceRef, bpmnElement, …).
    Attribute(RefKind),
    /// The text of a `<bpmn:incoming>`/`<bpmn:outgoing>` element, which
    /// modellers write beside every flow node and which a rename must keep in step.
    FlowText,
}

/// One place an id is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    pub usage: Usage,
    /// The id's text (inside the quotes, or the trimmed element text).
    pub span: Span,
}

/// The id under the cursor, and the occurrence the cursor is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdAt {
    pub id: String,
    pub at: Occurrence,
}

/// `<incoming>`/`<outgoing>` texts of flow nodes: (flow id, span of the text).
/// The runtime derives flow from sourceRef/targetRef, but modellers write
/// these beside every node, so navigation and rename must keep them in step.
pub fn flow_text_references(defs: &Definitions) -> Vec<(String, Span)> {
    defs.processes
        .iter()
        .flat_map(|p| p.nodes.iter())
        .flat_map(|n| n.incoming_refs.iter().chain(n.outgoing_refs.iter()))
        .filter(|a| !a.value.is_empty())
        .map(|a| (a.value.to_string(), a.span))
        .collect()
}

/// Every occurrence of every id, in document order.
fn all_occurrences(defs: &Definitions) -> Vec<(String, Occurrence)> {
    let mut out: Vec<(String, Occurrence)> = Vec::new();
    for d in &defs.ids {
        out.push((
            d.id.value.to_string(),
            Occurrence {
                usage: Usage::Declaration,
                span: d.id.span,
            },
        ));
    }
    for r in &defs.references {
        out.push((
            r.target.value.to_string(),
            Occurrence {
                usage: Usage::Attribute(r.kind),
                span: r.target.span,
            },
        ));
    }
    for (id, span) in flow_text_references(defs) {
        out.push((
            id,
            Occurrence {
                usage: Usage::FlowText,
                span,
            },
        ));
    }
    out.sort_by_key(|(_, o)| o.span.start());
    out
}

/// The id declared or referenced at `offset`, if the cursor is on one: the
/// first occurrence touching it in document order (at one start, a
/// declaration before an attribute reference before a flow text). One pass
/// over the occurrences in place, keeping the best: go-to-definition in a
/// 20,000-task model had every occurrence's id copied and sorted per
/// request (18 ms).
pub fn id_at(defs: &Definitions, offset: usize) -> Option<IdAt> {
    let declarations = defs.ids.iter().map(|d| {
        let usage = Usage::Declaration;
        (
            d.id.value.as_str(),
            Occurrence {
                usage,
                span: d.id.span,
            },
        )
    });
    let references = defs.references.iter().map(|r| {
        let usage = Usage::Attribute(r.kind);
        (
            r.target.value.as_str(),
            Occurrence {
                usage,
                span: r.target.span,
            },
        )
    });
    let texts = defs
        .processes
        .iter()
        .flat_map(|p| p.nodes.iter())
        .flat_map(|n| n.incoming_refs.iter().chain(n.outgoing_refs.iter()))
        .map(|a| {
            let usage = Usage::FlowText;
            (
                a.value.as_str(),
                Occurrence {
                    usage,
                    span: a.span,
                },
            )
        });
    declarations
        .chain(references)
        .chain(texts)
        .filter(|(id, o)| !id.is_empty() && touches(o.span, offset))
        .fold(None, |best: Option<(&str, Occurrence)>, here| match best {
            Some(b) if b.1.span.start() <= here.1.span.start() => Some(b),
            _ => Some(here),
        })
        .map(|(id, at)| IdAt {
            id: id.to_string(),
            at,
        })
}

/// Every place `id` is written: its declarations first, then its uses in
/// document order.
pub fn occurrences(defs: &Definitions, id: &str) -> Vec<Occurrence> {
    let mut all: Vec<Occurrence> = all_occurrences(defs)
        .into_iter()
        .filter(|(i, _)| i == id)
        .map(|(_, o)| o)
        .collect();
    all.sort_by_key(|o| (o.usage != Usage::Declaration, o.span.start()));
    all
}

/// The element declaring `id` (the first one, as references resolve to it).
pub fn declaration<'a>(defs: &'a Definitions, id: &str) -> Option<&'a IdDecl> {
    defs.declaration(id)
}

/// Why `name` cannot be an id, if it cannot: ids are XML NCNames (BPMN types
/// them `xsd:ID`), and a rename that broke that would make the document invalid.
pub fn invalid_id(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Some("an id cannot be empty".to_string());
    };
    if !(first.is_alphabetic() || first == '_') {
        return Some(format!(
            "`{name}` is not a valid id: it must start with a letter or `_`"
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Some(format!(
            "`{name}` is not a valid id: `{bad}` is not allowed (letters, digits, `_`, `-`, `.`)"
        ));
    }
    None
}

/// The edits that rename the id at `offset` everywhere it is declared or used.
///
/// `Ok(None)`: the cursor is not on an id. `Err`: the new name is not a valid
/// id, or another element already has it (the rename would merge two elements).
pub fn rename(
    defs: &Definitions,
    offset: usize,
    new_name: &str,
) -> Result<Option<Vec<Edit>>, String> {
    let Some(at) = id_at(defs, offset) else {
        return Ok(None);
    };
    if let Some(why) = invalid_id(new_name) {
        return Err(why);
    }
    if new_name != at.id && defs.declaration(new_name).is_some() {
        return Err(format!(
            "an element with id `{new_name}` already exists: renaming `{}` to it would make references ambiguous",
            at.id
        ));
    }
    Ok(Some(
        occurrences(defs, &at.id)
            .into_iter()
            .map(|o| Edit {
                span: o.span,
                new_text: new_name.to_string(),
            })
            .collect(),
    ))
}

/// The innermost flow node whose element contains `offset`, with its process.
pub fn node_at(defs: &Definitions, offset: usize) -> Option<(&Process, &Node)> {
    defs.processes
        .iter()
        .flat_map(|p| p.nodes.iter().map(move |n| (p, n)))
        .filter(|(_, n)| n.span.contains(offset))
        .min_by_key(|(_, n)| n.span.len())
}

/// The `<q:retry>` containing `offset`, with its task and process.
pub fn retry_at(defs: &Definitions, offset: usize) -> Option<(&Process, &Node, &RetrySpec)> {
    defs.processes.iter().find_map(|p| {
        p.nodes.iter().find_map(|n| {
            n.retries
                .iter()
                .find(|r| r.span.contains(offset))
                .map(|r| (p, n, r))
        })
    })
}

/// The `<q:timeout>` containing `offset`, with its task and process.
pub fn timeout_at(defs: &Definitions, offset: usize) -> Option<(&Process, &Node, &TimeoutSpec)> {
    defs.processes.iter().find_map(|p| {
        p.nodes.iter().find_map(|n| {
            n.timeouts
                .iter()
                .find(|t| t.span.contains(offset))
                .map(|t| (p, n, t))
        })
    })
}

/// One ISO-8601 duration as written in the model (a backoff list entry is one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationAt {
    /// The attribute or element it is written in (`backoff`, `timeDuration`, …).
    pub attribute: &'static str,
    pub text: String,
    pub span: Span,
}

/// The duration value under the cursor, if any: every duration-valued
/// attribute of the dialect and a timer's `timeDuration`.
pub fn duration_at(defs: &Definitions, offset: usize) -> Option<DurationAt> {
    let mut candidates: Vec<(&'static str, &Attr)> = Vec::new();
    for p in &defs.processes {
        for n in &p.nodes {
            for r in &n.retries {
                for (name, a) in [
                    ("backoff", &r.backoff),
                    ("initial", &r.initial),
                    ("maxDelay", &r.max_delay),
                    ("maxElapsed", &r.max_elapsed),
                ] {
                    if let Some(a) = a {
                        candidates.push((name, a));
                    }
                }
            }
            for t in &n.timeouts {
                if let Some(a) = &t.duration {
                    candidates.push(("duration", a));
                }
            }
            let trigger = match &n.kind {
                NodeKind::StartEvent { trigger }
                | NodeKind::EndEvent { trigger }
                | NodeKind::IntermediateCatchEvent { trigger }
                | NodeKind::BoundaryEvent { trigger, .. } => Some(trigger),
                _ => None,
            };
            if let Some(EventTrigger::Timer(t)) = trigger {
                if let Some(a) = &t.time_duration {
                    candidates.push(("timeDuration", a));
                }
            }
        }
    }
    for c in &defs.channel_configs {
        if let Some(a) = &c.delivery_interval {
            candidates.push(("deliveryInterval", a));
        }
    }
    let (attribute, attr) = candidates
        .into_iter()
        .find(|(_, a)| touches(a.span, offset))?;
    // A backoff list holds several durations: pick the word under the cursor.
    let raw_start = attr.span.start();
    let raw = &attr.value;
    let rel = offset.saturating_sub(raw_start);
    let mut pos = 0;
    for word in raw.split_whitespace() {
        let start = pos + raw[pos..].find(word).unwrap_or(0);
        let end = start + word.len();
        pos = end;
        if start <= rel && rel <= end {
            return Some(DurationAt {
                attribute,
                text: word.to_string(),
                span: Span::new(raw_start + start, raw_start + end),
            });
        }
    }
    None
}

/// What the author is typing at the cursor, read from the text alone (the
/// document is usually not well-formed mid-edit, so the model cannot answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CursorContext {
    /// After `<`: an element name. `parent` is the local name of the enclosing
    /// open element, if any.
    ElementName {
        prefix: String,
        /// Where the partial name starts (right after `<`).
        start: usize,
        parent: Option<String>,
    },
    /// Inside a start tag, between attributes.
    AttributeName {
        /// The element's qualified name as written.
        element: String,
        prefix: String,
        start: usize,
        /// Attributes already written on the element (qualified names).
        present: Vec<String>,
    },
    /// Inside a quoted attribute value.
    AttributeValue {
        element: String,
        /// The attribute's qualified name as written.
        attribute: String,
        /// The whole value typed so far (up to the cursor).
        value: String,
        /// Where the value starts (after the quote).
        value_start: usize,
    },
    /// Text content, a comment, a closing tag, …: nothing to complete.
    Other,
}

/// Classify the cursor for completion.
pub fn cursor_context(source: &str, offset: usize) -> CursorContext {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let Some(lt) = before.rfind('<') else {
        return CursorContext::Other;
    };
    let tag = &before[lt + 1..];
    if tag.starts_with(['/', '!', '?']) {
        return CursorContext::Other;
    }
    // Element name: no whitespace typed yet.
    let name_end = tag
        .find(|c: char| c.is_whitespace() || c == '/' || c == '>')
        .unwrap_or(tag.len());
    if name_end == tag.len() {
        return CursorContext::ElementName {
            prefix: tag.to_string(),
            start: lt + 1,
            parent: enclosing_element(&source[..lt]),
        };
    }
    match attribute_context(tag, lt + 1, tag[..name_end].to_string(), name_end) {
        // Attributes after the cursor are written too: offering
        // `maxAttempts` again where it already follows would make a
        // duplicate attribute (QF001).
        CursorContext::AttributeName {
            element,
            prefix,
            start,
            mut present,
        } => {
            present.extend(names_after(&source[offset..]));
            CursorContext::AttributeName {
                element,
                prefix,
                start,
                present,
            }
        }
        other => other,
    }
}

/// The attribute names written after the cursor, to the end of the start
/// tag. The rest of a name the cursor is in (being typed) is not one.
fn names_after(rest: &str) -> Vec<String> {
    let b = rest.as_bytes();
    let ends_name = |c: u8| c.is_ascii_whitespace() || matches!(c, b'=' | b'>' | b'/' | b'<');
    let mut i = 0;
    while i < b.len() && !ends_name(b[i]) {
        i += 1;
    }
    let mut names = Vec::new();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        match b.get(i) {
            None | Some(b'>' | b'/' | b'<') => return names,
            Some(b'=') => {
                i += 1;
                while i < b.len() && b[i].is_ascii_whitespace() {
                    i += 1;
                }
                if let Some(&q @ (b'"' | b'\'')) = b.get(i) {
                    match rest[i + 1..].find(q as char) {
                        Some(len) => i += len + 2,
                        None => return names,
                    }
                }
            }
            Some(_) => {
                let start = i;
                while i < b.len() && !ends_name(b[i]) {
                    i += 1;
                }
                names.push(rest[start..i].to_string());
            }
        }
    }
}

/// Inside the start tag `tag` (which begins at `base`, right after `<`):
/// walk its attributes from `from` (name, `=`, quoted value) to the cursor at
/// the tag's end.
fn attribute_context(tag: &str, base: usize, element: String, from: usize) -> CursorContext {
    // Walk the attributes: name, '=', quoted value.
    let bytes = tag.as_bytes();
    let mut i = from;
    let mut present = Vec::new();
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() {
            return CursorContext::AttributeName {
                element,
                prefix: String::new(),
                start: base + i,
                present,
            };
        }
        if bytes[i] == b'>' || bytes[i] == b'/' {
            return CursorContext::Other;
        }
        let name_start = i;
        while i < bytes.len()
            && !bytes[i].is_ascii_whitespace()
            && bytes[i] != b'='
            && bytes[i] != b'>'
        {
            i += 1;
        }
        let name = &tag[name_start..i];
        if i >= bytes.len() {
            return CursorContext::AttributeName {
                element,
                prefix: name.to_string(),
                start: base + name_start,
                present,
            };
        }
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() || bytes[i] != b'=' {
            // A name with no value (mid-edit): keep going.
            present.push(name.to_string());
            continue;
        }
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() {
            return CursorContext::Other;
        }
        let quote = bytes[i];
        if quote != b'"' && quote != b'\'' {
            return CursorContext::Other;
        }
        let value_start = i + 1;
        match tag[value_start..].find(quote as char) {
            Some(len) => {
                present.push(name.to_string());
                i = value_start + len + 1;
            }
            None => {
                return CursorContext::AttributeValue {
                    element,
                    attribute: name.to_string(),
                    value: tag[value_start..].to_string(),
                    value_start: base + value_start,
                };
            }
        }
    }
}

/// The local name of the innermost element still open at the end of `text`.
fn enclosing_element(text: &str) -> Option<String> {
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = text;
    let mut base = 0;
    while let Some(lt) = rest.find('<') {
        let tag = &rest[lt..];
        let skip_to = |end: &str| tag.find(end).map(|e| lt + e + end.len());
        let consumed = if tag.starts_with("<!--") {
            skip_to("-->")
        } else if tag.starts_with("<![CDATA[") {
            skip_to("]]>")
        } else if tag.starts_with("<?") || tag.starts_with("<!") {
            skip_to(">")
        } else if let Some(close) = tag.strip_prefix("</") {
            let name_len = close
                .find(|c: char| c.is_whitespace() || c == '>')
                .unwrap_or(close.len());
            let name = &close[..name_len];
            if let Some(pos) = stack.iter().rposition(|n| *n == name) {
                stack.truncate(pos);
            }
            skip_to(">")
        } else {
            let end = tag_end(tag);
            let name_len = tag[1..]
                .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
                .unwrap_or(tag.len() - 1);
            let self_closing = end.is_some_and(|e| tag[..e].ends_with("/>"));
            if !self_closing {
                stack.push(&tag[1..1 + name_len]);
            }
            end.map(|e| lt + e)
        };
        match consumed {
            Some(c) => {
                base += c;
                rest = &text[base..];
            }
            None => break,
        }
    }
    stack
        .last()
        .map(|q| q.rsplit(':').next().unwrap_or(q).to_string())
}

/// The length of a start tag up to and including its `>`, respecting quotes.
fn tag_end(tag: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in tag.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '>' => return Some(i + 1),
            None => {}
        }
    }
    None
}

/// The prefix the document binds the qflow namespace to (`q` when none is
/// bound yet, the convention), read lexically so it works mid-edit.
pub fn qflow_prefix(source: &str) -> String {
    let needle = format!("\"{QFLOW_NS}\"");
    let alt = format!("'{QFLOW_NS}'");
    for pat in [&needle, &alt] {
        if let Some(pos) = source.find(pat.as_str()) {
            let head = source[..pos].trim_end();
            if let Some(head) = head.strip_suffix('=') {
                let head = head.trim_end();
                let start = head
                    .rfind(|c: char| c.is_whitespace())
                    .map(|i| i + 1)
                    .unwrap_or(0);
                if let Some(p) = head[start..].strip_prefix("xmlns:") {
                    return p.to_string();
                }
            }
        }
    }
    "q".to_string()
}

/// Ids a reference attribute may point at, in document order: sourceRef and
/// targetRef name flow nodes, attachedToRef activities, errorRef errors,
/// `default` the gateway's outgoing flows, bpmnElement anything.
pub fn reference_candidates<'a>(
    defs: &'a Definitions,
    attribute: &str,
    element_offset: usize,
) -> Vec<&'a IdDecl> {
    // The ids of each process's nodes (the first node of an id, as
    // `Process::node` finds it) passing `keep`, in one set: looking each
    // declared id up in every process was quadratic, seconds per completion
    // in a 20,000-task model.
    let nodes = |keep: &dyn Fn(&crate::model::Node) -> bool| -> HashSet<&str> {
        let mut out = HashSet::new();
        for p in &defs.processes {
            let mut seen = HashSet::new();
            for n in &p.nodes {
                if seen.insert(n.id.value.as_str()) && keep(n) {
                    out.insert(n.id.value.as_str());
                }
            }
        }
        out
    };
    match attribute {
        "sourceRef" | "targetRef" => {
            let flow_nodes = nodes(&|_| true);
            defs.ids
                .iter()
                .filter(|d| flow_nodes.contains(d.id.value.as_str()))
                .collect()
        }
        "attachedToRef" => {
            let activities = nodes(&|n| {
                matches!(
                    n.kind,
                    NodeKind::ServiceTask(_) | NodeKind::SubProcess { .. }
                ) || n.element.ends_with("Task")
            });
            defs.ids
                .iter()
                .filter(|d| activities.contains(d.id.value.as_str()))
                .collect()
        }
        "errorRef" => defs
            .ids
            .iter()
            .filter(|d| d.element.local == "error")
            .collect(),
        "default" => {
            let gateway = node_at(defs, element_offset).map(|(p, n)| (p, n.id.value.clone()));
            match gateway {
                Some((p, id)) => defs
                    .ids
                    .iter()
                    .filter(|d| p.outgoing(&id).any(|f| f.id.value == d.id.value))
                    .collect(),
                None => Vec::new(),
            }
        }
        _ => defs.ids.iter().collect(),
    }
}

/// Attributes whose value is an id of the document.
pub fn is_reference_attribute(name: &str) -> bool {
    matches!(
        name,
        "sourceRef" | "targetRef" | "attachedToRef" | "errorRef" | "default" | "bpmnElement"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = r#"<?xml version="1.0"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:x="urn:qflow:bpmn:1" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="charge"/>
    <bpmn:serviceTask id="charge" x:task="payments.charge">
      <bpmn:incoming>f1</bpmn:incoming>
      <bpmn:extensionElements><x:retry maxAttempts="3" backoff="PT1M PT5M"/></bpmn:extensionElements>
    </bpmn:serviceTask>
  </bpmn:process>
  <bpmndi:BPMNDiagram id="dia"><bpmndi:BPMNPlane id="pl" bpmnElement="p"><bpmndi:BPMNShape id="s1" bpmnElement="charge"/></bpmndi:BPMNPlane></bpmndi:BPMNDiagram>
</bpmn:definitions>"#;

    fn defs() -> Definitions {
        crate::analyze(MODEL).definitions.unwrap()
    }

    #[test]
    fn id_occurrences_include_flow_text_and_diagram() {
        let d = defs();
        let at = MODEL.find("targetRef=\"charge").unwrap() + "targetRef=\"".len() + 2;
        let hit = id_at(&d, at).unwrap();
        assert_eq!(hit.id, "charge");
        let occ = occurrences(&d, "charge");
        let usages: Vec<Usage> = occ.iter().map(|o| o.usage).collect();
        assert_eq!(
            usages,
            vec![
                Usage::Declaration,
                Usage::Attribute(RefKind::TargetRef),
                Usage::Attribute(RefKind::BpmnElement)
            ]
        );
        let f1: Vec<&str> = occurrences(&d, "f1")
            .iter()
            .map(|o| &MODEL[o.span.start()..o.span.end()])
            .collect();
        assert_eq!(f1, vec!["f1", "f1", "f1"]);
    }

    #[test]
    fn rename_refuses_invalid_and_taken_names() {
        let d = defs();
        let at = MODEL.find("id=\"f1\"").unwrap() + 4;
        assert!(rename(&d, at, "9lives")
            .unwrap_err()
            .contains("start with a letter"));
        assert!(rename(&d, at, "charge")
            .unwrap_err()
            .contains("already exists"));
        let edits = rename(&d, at, "toCharge").unwrap().unwrap();
        assert_eq!(edits.len(), 3);
        assert_eq!(rename(&d, 0, "x").unwrap(), None);
    }

    #[test]
    fn durations_and_retry_under_cursor() {
        let d = defs();
        let at = MODEL.find("PT5M").unwrap() + 1;
        let dur = duration_at(&d, at).unwrap();
        assert_eq!((dur.attribute, dur.text.as_str()), ("backoff", "PT5M"));
        let (_, node, _) = retry_at(&d, at).unwrap();
        assert_eq!(node.id(), "charge");
        assert_eq!(node_at(&d, at).unwrap().1.id(), "charge");
    }

    #[test]
    fn cursor_contexts() {
        let src = "<a><bpmn:extensionElements>\n<x:re";
        assert_eq!(
            cursor_context(src, src.len()),
            CursorContext::ElementName {
                prefix: "x:re".into(),
                start: src.len() - 4,
                parent: Some("extensionElements".into())
            }
        );
        let src = "<x:retry maxAttempts=\"3\" jit";
        match cursor_context(src, src.len()) {
            CursorContext::AttributeName {
                element,
                prefix,
                present,
                ..
            } => {
                assert_eq!((element.as_str(), prefix.as_str()), ("x:retry", "jit"));
                assert_eq!(present, vec!["maxAttempts".to_string()]);
            }
            other => panic!("{other:?}"),
        }
        // Those after the cursor count too (not the name the cursor is in).
        let src = "<x:retry maxAttempts=\"3\" ji backoff = 'PT1S' initial=\"a>b\" factor=\"2\"/>";
        let at = src.find("ji").unwrap() + 1;
        match cursor_context(src, at) {
            CursorContext::AttributeName {
                prefix, present, ..
            } => {
                assert_eq!(prefix, "j");
                assert_eq!(present, ["maxAttempts", "backoff", "initial", "factor"]);
            }
            other => panic!("{other:?}"),
        }
        let src = "<x:retry nonRetryableCodes=\"q.timeout q.";
        match cursor_context(src, src.len()) {
            CursorContext::AttributeValue {
                attribute, value, ..
            } => {
                assert_eq!(
                    (attribute.as_str(), value.as_str()),
                    ("nonRetryableCodes", "q.timeout q.")
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(cursor_context("<a>text", 6), CursorContext::Other);
        assert_eq!(qflow_prefix(MODEL), "x");
        assert_eq!(qflow_prefix("<a/>"), "q");
    }
}
