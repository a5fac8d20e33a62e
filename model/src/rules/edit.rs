//! Text edits for quick fixes: insert into a task's extensionElements, remove
//! an element with its line, write names with the author's prefixes.
//!
//! Fixes are computed by the engine so every face offers the same ones; they
//! keep the document's own conventions (prefixes, indentation, line endings)
//! so applying one yields a file the author would have written.

use crate::diagnostic::Edit;
use crate::model::{Definitions, ElementSpans, Node};
use crate::span::Span;

/// What a fix needs to know about the document it edits.
pub struct Ctx<'a> {
    pub defs: &'a Definitions,
    pub source: &'a str,
}

impl<'a> Ctx<'a> {
    /// A context over a model and the exact text it was read from.
    pub fn new(defs: &'a Definitions, source: &'a str) -> Self {
        Ctx { defs, source }
    }

    pub fn text(&self, span: Span) -> &'a str {
        self.source.get(span.start()..span.end()).unwrap_or("")
    }

    /// The BPMN prefix with its colon (`bpmn:`), as the root element is written;
    /// empty when BPMN is the default namespace.
    pub fn bpmn_prefix(&self) -> String {
        prefix_of(self.text(self.defs.name_span))
    }

    /// The prefix the author bound the qflow namespace to, with its colon
    /// (`q:`, `x:`), or empty when it is the default namespace for elements.
    pub fn q_prefix(&self) -> String {
        let items = &self.defs.qflow_items;
        if let Some(el) = items.iter().find(|i| i.is_element) {
            return prefix_of(&el.qname);
        }
        if let Some(a) = items.first() {
            return prefix_of(&a.qname);
        }
        // Declared but unused: find the declaration.
        let needle = format!("\"{}\"", crate::xml::QFLOW_NS);
        if let Some(at) = self.source.find(&needle) {
            let head = &self.source[..at];
            if let Some(x) = head.rfind("xmlns") {
                let decl = head[x..].trim_end_matches(['=', ' ']);
                if let Some(p) = decl.strip_prefix("xmlns:") {
                    return format!("{p}:");
                }
                return String::new();
            }
        }
        "q:".to_string()
    }

    /// The line break the document uses.
    pub fn newline(&self) -> &'static str {
        if self.source.contains("\r\n") {
            "\r\n"
        } else {
            "\n"
        }
    }

    /// The whitespace before `offset` on its line, if only whitespace precedes it.
    pub fn indent_at(&self, offset: usize) -> &'a str {
        let line_start = self.source[..offset].rfind('\n').map_or(0, |i| i + 1);
        let before = &self.source[line_start..offset];
        if before.chars().all(|c| c == ' ' || c == '\t') {
            before
        } else {
            ""
        }
    }

    /// One indentation step, guessed from the document (two spaces if unsure).
    pub fn indent_unit(&self, node: &Node) -> String {
        let node_indent = self.indent_at(node.tag.start_tag.start());
        if let Some(ext) = node.extension_elements {
            let ext_indent = self.indent_at(ext.start_tag.start());
            if let Some(unit) = ext_indent.strip_prefix(node_indent) {
                if !unit.is_empty() {
                    return unit.to_string();
                }
            }
        }
        if node_indent.starts_with('\t') {
            "\t".to_string()
        } else {
            "  ".to_string()
        }
    }

    /// Edits that add `element` (one line of XML) to the node's
    /// `extensionElements`, creating that element (with the document's BPMN
    /// prefix) when the node has none.
    pub fn insert_extension(&self, node: &Node, element: &str) -> Vec<Edit> {
        let nl = self.newline();
        let unit = self.indent_unit(node);
        let node_indent = self.indent_at(node.tag.start_tag.start()).to_string();
        match node.extension_elements {
            Some(ext) if !ext.self_closing => {
                let inner = format!("{}{unit}", self.indent_at(ext.start_tag.start()));
                let text = self.text(ext.span);
                let end_tag = ext.span.start() + text.rfind("</").unwrap_or(text.len());
                let indent = self.indent_at(end_tag);
                if !indent.is_empty() || self.source[..end_tag].ends_with('\n') {
                    let line_start = end_tag - indent.len();
                    vec![insert(line_start, format!("{inner}{element}{nl}"))]
                } else {
                    vec![insert(end_tag, element.to_string())]
                }
            }
            Some(ext) => {
                let ext_indent = self.indent_at(ext.start_tag.start());
                let name = element_name(self.text(ext.start_tag));
                vec![Edit {
                    span: ext.span,
                    new_text: format!(
                        "<{name}>{nl}{ext_indent}{unit}{element}{nl}{ext_indent}</{name}>"
                    ),
                }]
            }
            None => {
                let bpmn = self.bpmn_prefix();
                let block = |indent: &str| {
                    format!(
                        "{indent}{unit}<{bpmn}extensionElements>{nl}{indent}{unit}{unit}{element}{nl}{indent}{unit}</{bpmn}extensionElements>"
                    )
                };
                if node.tag.self_closing {
                    // `<bpmn:serviceTask …/>` becomes `<bpmn:serviceTask …>…</bpmn:serviceTask>`.
                    let tag = node.tag.start_tag;
                    let slash = tag.start() + self.text(tag).rfind("/>").unwrap_or(0);
                    vec![Edit {
                        span: Span::new(slash, tag.end()),
                        new_text: format!(
                            ">{nl}{}{nl}{node_indent}</{}>",
                            block(&node_indent),
                            node.qname
                        ),
                    }]
                } else {
                    vec![insert(
                        node.tag.start_tag.end(),
                        format!("{nl}{}", block(&node_indent)),
                    )]
                }
            }
        }
    }

    /// An edit removing an element; when it is alone on its line(s), the whole
    /// line goes, so no blank line is left behind.
    pub fn remove(&self, span: Span) -> Edit {
        let src = self.source;
        let line_start = src[..span.start()].rfind('\n').map_or(0, |i| i + 1);
        let before = &src[line_start..span.start()];
        let rest = &src[span.end()..];
        let line_end = rest.find('\n').map_or(src.len(), |i| span.end() + i + 1);
        let after = &src[span.end()..line_end];
        let span = if before.trim().is_empty() && after.trim().is_empty() && line_start > 0 {
            Span::new(line_start, line_end)
        } else {
            span
        };
        Edit {
            span,
            new_text: String::new(),
        }
    }

    /// Removal edits for an element's diagram (its bpmndi shape or edge).
    pub fn remove_drawing(&self, id: &str) -> Vec<Edit> {
        self.defs
            .diagram_elements
            .iter()
            .filter(|d| d.bpmn_element == id)
            .map(|d| self.remove(d.span))
            .collect()
    }
}

/// The element name at the start of a tag: `<bpmn:extensionElements>` → `bpmn:extensionElements`.
fn element_name(tag: &str) -> &str {
    let t = tag.trim_start_matches('<');
    let end = t
        .find(|c: char| c.is_whitespace() || c == '/' || c == '>')
        .unwrap_or(t.len());
    &t[..end]
}

/// `bpmn:definitions` → `bpmn:`; `definitions` → ``.
pub fn prefix_of(qname: &str) -> String {
    match qname.split_once(':') {
        Some((p, _)) => format!("{p}:"),
        None => String::new(),
    }
}

/// An insertion at one offset (an empty span replaced by `text`).
pub fn insert(at: usize, text: String) -> Edit {
    Edit {
        span: Span::at(at),
        new_text: text,
    }
}

/// The end tag's name of a non-empty element (`</q:retyr>` → span of `q:retyr`),
/// so a rename touches both tags.
pub fn end_tag_name(source: &str, element: ElementSpans) -> Option<Span> {
    if element.self_closing {
        return None;
    }
    let text = source.get(element.span.start()..element.span.end())?;
    let lt = text.rfind("</")?;
    let name = element_name(&text[lt + 2..]);
    let start = element.span.start() + lt + 2;
    Some(Span::new(start, start + name.len()))
}

/// Apply a fix's edits to a text (for tests and for faces without their own
/// editor): edits are applied from the end so earlier offsets stay valid.
pub fn apply(source: &str, edits: &[Edit]) -> String {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| std::cmp::Reverse((e.span.start(), e.span.end())));
    let mut out = source.to_string();
    for e in sorted {
        out.replace_range(e.span.start()..e.span.end(), &e.new_text);
    }
    out
}
