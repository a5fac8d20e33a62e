//! A namespace-resolved XML tree that remembers where everything came from.
//!
//! quick-xml does the tokenizing and namespace scoping; this module adds what a
//! studio needs on top: a byte span for every element, attribute name and
//! attribute value, and hard limits that make hostile input harmless. The tree
//! is a flat arena (children are indices), so neither building nor dropping it
//! recurses, whatever the nesting of the input.
//!
//! Security posture: a `<!DOCTYPE>` is refused outright. qflow never expands a
//! user-defined entity and never reads an external one, so billion-laughs and
//! XXE inputs fail with a clear message instead of consuming memory or touching
//! the disk or network.

use std::borrow::Cow;

use quick_xml::events::Event;
use quick_xml::name::{QName, ResolveResult};
use quick_xml::NsReader;

use crate::span::Span;

/// The BPMN 2.0 model namespace.
pub const BPMN_NS: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";
/// The qflow extension namespace; resolved by URI, whatever prefix binds it.
pub const QFLOW_NS: &str = "urn:qflow:bpmn:1";
/// The XML namespace-declaration namespace (`xmlns`, `xmlns:p`).
pub const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";

/// Elements nested deeper than this are refused (BPMN files from real modellers
/// stay well under 50 levels).
pub const MAX_DEPTH: usize = 256;

/// Index of an element in [`XmlDoc::elements`].
pub type ElementId = usize;

#[derive(Debug, Clone)]
pub struct XmlAttr<'a> {
    /// Resolved namespace URI; `None` for unprefixed attributes (which have no namespace).
    pub ns: Option<Cow<'a, str>>,
    pub local: &'a str,
    /// The qualified name as written (`q:task`).
    pub qname: &'a str,
    /// The unescaped value.
    pub value: Cow<'a, str>,
    /// From the first byte of the name to the closing quote.
    pub span: Span,
    pub name_span: Span,
    /// Inside the quotes.
    pub value_span: Span,
}

impl XmlAttr<'_> {
    pub fn is_namespace_declaration(&self) -> bool {
        self.qname == "xmlns" || self.qname.starts_with("xmlns:")
    }
}

#[derive(Debug, Clone)]
pub struct XmlElement<'a> {
    pub ns: Option<Cow<'a, str>>,
    pub local: &'a str,
    pub qname: &'a str,
    pub parent: Option<ElementId>,
    pub children: Vec<ElementId>,
    pub attrs: Vec<XmlAttr<'a>>,
    /// From `<` of the start tag to `>` of the end tag (or of the empty tag).
    pub span: Span,
    /// The start tag alone.
    pub start_tag: Span,
    /// The qualified name inside the start tag.
    pub name_span: Span,
    /// Direct text and CDATA content, unescaped and concatenated.
    pub text: String,
    /// From the first to the last byte of direct text content, if any.
    pub text_span: Option<Span>,
}

impl<'a> XmlElement<'a> {
    pub fn is(&self, ns: &str, local: &str) -> bool {
        self.local == local && self.ns.as_deref() == Some(ns)
    }

    pub fn in_ns(&self, ns: &str) -> bool {
        self.ns.as_deref() == Some(ns)
    }

    /// An unprefixed attribute (BPMN's own attributes are unqualified).
    pub fn attr(&self, local: &str) -> Option<&XmlAttr<'a>> {
        self.attrs
            .iter()
            .find(|a| a.ns.is_none() && a.local == local && !a.is_namespace_declaration())
    }

    pub fn attr_ns(&self, ns: &str, local: &str) -> Option<&XmlAttr<'a>> {
        self.attrs
            .iter()
            .find(|a| a.local == local && a.ns.as_deref() == Some(ns))
    }
}

/// A parsed document: the arena and the root.
#[derive(Debug, Clone)]
pub struct XmlDoc<'a> {
    pub source: &'a str,
    pub elements: Vec<XmlElement<'a>>,
    pub root: ElementId,
    /// Every namespace URI declared anywhere in the document.
    pub declared_namespaces: Vec<String>,
}

impl<'a> XmlDoc<'a> {
    pub fn element(&self, id: ElementId) -> &XmlElement<'a> {
        &self.elements[id]
    }

    pub fn children(&self, id: ElementId) -> impl Iterator<Item = (ElementId, &XmlElement<'a>)> {
        self.elements[id]
            .children
            .iter()
            .map(move |&c| (c, &self.elements[c]))
    }

    pub fn declares(&self, ns: &str) -> bool {
        self.declared_namespaces.iter().any(|d| d == ns)
    }
}

/// Why a document is not well-formed, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlError {
    pub message: String,
    pub help: String,
    pub span: Span,
}

impl XmlError {
    fn new(span: Span, message: impl Into<String>, help: impl Into<String>) -> Self {
        XmlError {
            message: message.into(),
            help: help.into(),
            span,
        }
    }
}

/// Check the raw bytes are text qflow can read, returning it as `&str`.
///
/// qflow reads UTF-8 (and therefore ASCII). An `encoding="ISO-8859-1"`
/// declaration on ASCII content is fine: the bytes are the same.
pub fn decode(bytes: &[u8]) -> Result<&str, XmlError> {
    if bytes.is_empty() {
        return Err(XmlError::new(
            Span::at(0),
            "the file is empty",
            "a BPMN model is an XML document whose root is <bpmn:definitions>",
        ));
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => {
            if let Some(nul) = s.find('\0') {
                return Err(XmlError::new(
                    Span::new(nul, nul + 1),
                    "the file contains a NUL byte: it looks like a binary file, not XML",
                    "open the .bpmn file your modeller saved, not a binary or archive",
                ));
            }
            Ok(s)
        }
        Err(e) => {
            let at = e.valid_up_to();
            let declared_latin1 = bytes
                .get(..200.min(bytes.len()))
                .map(|head| String::from_utf8_lossy(head).to_ascii_lowercase())
                .is_some_and(|h| h.contains("iso-8859-1") || h.contains("latin1"));
            let help = if declared_latin1 {
                "the declaration says ISO-8859-1 but the content is not ASCII: re-save the file as UTF-8 (and say encoding=\"UTF-8\")"
            } else {
                "qflow reads UTF-8: re-save the file as UTF-8, or check it is not a binary file"
            };
            Err(XmlError::new(
                Span::new(at, at + e.error_len().unwrap_or(1)),
                format!("invalid UTF-8 at byte {at}"),
                help,
            ))
        }
    }
}

/// Parse a whole document into a spanned tree, or report the first fault.
pub fn parse(source: &str) -> Result<XmlDoc<'_>, XmlError> {
    let mut reader = NsReader::from_str(source);
    {
        let cfg = reader.config_mut();
        cfg.trim_text(false);
        cfg.expand_empty_elements = false;
        cfg.check_end_names = true;
        cfg.check_comments = false;
    }
    let mut elements: Vec<XmlElement<'_>> = Vec::new();
    let mut stack: Vec<ElementId> = Vec::new();
    let mut root: Option<ElementId> = None;
    let mut declared: Vec<String> = Vec::new();
    // quick-xml skips a leading UTF-8 BOM without counting it in its positions.
    let base = if source.starts_with('\u{feff}') { 3 } else { 0 };
    let mut pos = base;

    loop {
        let event = reader.read_resolved_event().map(|(resolved, event)| {
            let ns: Option<Cow<'_, str>> = match resolved {
                ResolveResult::Bound(ns) => Some(Cow::Owned(
                    String::from_utf8_lossy(ns.as_ref()).into_owned(),
                )),
                _ => None,
            };
            (ns, event)
        });
        let end = base + reader.buffer_position() as usize;
        let (ns, event) = match event {
            Ok(ok) => ok,
            Err(e) => {
                let at = base + reader.error_position() as usize;
                return Err(XmlError::new(
                    Span::at(at.min(source.len())),
                    format!("XML is not well-formed: {e}"),
                    "fix the XML at this position (a validating editor or `xmllint` shows the same fault)",
                ));
            }
        };
        let start = pos;
        pos = end;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let is_empty = matches!(event, Event::Empty(_));
                if stack.is_empty() && root.is_some() {
                    return Err(XmlError::new(
                        Span::new(start, end),
                        "a second root element: an XML document has exactly one",
                        "wrap the content in a single <bpmn:definitions> element",
                    ));
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(XmlError::new(
                        Span::new(start, end),
                        format!("elements nested deeper than {MAX_DEPTH} levels"),
                        "BPMN models are shallow; this file is probably generated or hostile",
                    ));
                }
                let name_len = e.name().as_ref().len();
                let qname: &str = &source[start + 1..start + 1 + name_len];
                let local = qname.rsplit(':').next().unwrap_or(qname);
                let name_span = Span::new(start + 1, start + 1 + qname.len());
                let raw = &source[start + 1..];
                let raw_len = e.len();
                let attrs = lex_attributes(source, start + 1, &raw[..raw_len], &reader)?;
                for a in &attrs {
                    if a.is_namespace_declaration() && !declared.iter().any(|d| d == &a.value) {
                        declared.push(a.value.to_string());
                    }
                }
                let id = elements.len();
                elements.push(XmlElement {
                    ns,
                    local,
                    qname,
                    parent: stack.last().copied(),
                    children: Vec::new(),
                    attrs,
                    span: Span::new(start, end),
                    start_tag: Span::new(start, end),
                    name_span,
                    text: String::new(),
                    text_span: None,
                });
                if let Some(&parent) = stack.last() {
                    elements[parent].children.push(id);
                } else {
                    root = Some(id);
                }
                if !is_empty {
                    stack.push(id);
                }
            }
            Event::End(_) => {
                if let Some(id) = stack.pop() {
                    elements[id].span.end = end;
                }
            }
            Event::Text(ref t) => {
                if let Some(&id) = stack.last() {
                    let text = t.decode().map_err(|e| {
                        XmlError::new(Span::new(start, end), format!("bad text: {e}"), "")
                    })?;
                    push_text(&mut elements[id], &text, Span::new(start, end));
                } else if !t.iter().all(|b| b.is_ascii_whitespace()) {
                    return Err(XmlError::new(
                        Span::new(start, end),
                        "text outside the root element",
                        "everything must be inside <bpmn:definitions>",
                    ));
                }
            }
            Event::CData(ref t) => {
                if let Some(&id) = stack.last() {
                    let text = String::from_utf8_lossy(t.as_ref()).into_owned();
                    // The content sits between `<![CDATA[` and `]]>`.
                    let inner = Span::new(start + 9, end.saturating_sub(3).max(start + 9));
                    push_text(&mut elements[id], &text, inner);
                }
            }
            Event::GeneralRef(ref r) => {
                let resolved: Option<String> = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(c.to_string()),
                    Ok(None) => {
                        let name = String::from_utf8_lossy(r.as_ref()).into_owned();
                        quick_xml::escape::resolve_predefined_entity(&name).map(str::to_string)
                    }
                    Err(_) => None,
                };
                let Some(text) = resolved else {
                    return Err(XmlError::new(
                        Span::new(start, end),
                        format!(
                            "unknown entity reference `&{};`",
                            String::from_utf8_lossy(r.as_ref())
                        ),
                        "qflow expands only XML's five predefined entities and character references; write the text itself",
                    ));
                };
                if let Some(&id) = stack.last() {
                    push_text(&mut elements[id], &text, Span::new(start, end));
                }
            }
            Event::DocType(_) => {
                return Err(XmlError::new(
                    Span::new(start, end),
                    "DOCTYPE declarations are not accepted",
                    "remove the <!DOCTYPE …> declaration: qflow never expands custom entities or reads external ones (this protects against entity-expansion and external-entity attacks)",
                ));
            }
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
            Event::Eof => break,
        }
    }
    if let Some(&open) = stack.last() {
        let e = &elements[open];
        return Err(XmlError::new(
            e.name_span,
            format!("<{}> is never closed: the file ends first", e.qname),
            format!("add </{}> (or check the file was not truncated)", e.qname),
        ));
    }
    let Some(root) = root else {
        return Err(XmlError::new(
            Span::at(source.len()),
            "the document has no root element",
            "a BPMN model is an XML document whose root is <bpmn:definitions>",
        ));
    };
    Ok(XmlDoc {
        source,
        elements,
        root,
        declared_namespaces: declared,
    })
}

fn push_text(el: &mut XmlElement<'_>, text: &str, span: Span) {
    el.text.push_str(text);
    el.text_span = Some(match el.text_span {
        Some(s) => Span::new(s.start, span.end),
        None => span,
    });
}

/// Lex the attributes of a start tag, keeping byte spans quick-xml does not expose.
///
/// `raw` is the tag's content between `<` and `>` (name first), which starts at
/// `offset` in `source`.
fn lex_attributes<'a>(
    source: &'a str,
    offset: usize,
    raw: &'a str,
    reader: &NsReader<&[u8]>,
) -> Result<Vec<XmlAttr<'a>>, XmlError> {
    let bytes = raw.as_bytes();
    let mut i = bytes
        .iter()
        .position(|b| b.is_ascii_whitespace() || *b == b'/')
        .unwrap_or(bytes.len());
    let mut attrs: Vec<XmlAttr<'a>> = Vec::new();
    let fault = |at: usize, msg: &str, help: &str| {
        XmlError::new(Span::at(offset + at), msg.to_string(), help.to_string())
    };
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() || bytes[i] == b'/' {
            break;
        }
        let name_start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'=' {
            i += 1;
        }
        let name_end = i;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() || bytes[i] != b'=' {
            return Err(fault(
                name_start,
                "attribute without a value",
                "write attributes as name=\"value\"",
            ));
        }
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let quote = match bytes.get(i) {
            Some(q @ (b'"' | b'\'')) => *q,
            _ => {
                return Err(fault(
                    i,
                    "attribute value is not quoted",
                    "quote attribute values: name=\"value\"",
                ))
            }
        };
        i += 1;
        let value_start = i;
        while i < bytes.len() && bytes[i] != quote {
            i += 1;
        }
        if i >= bytes.len() {
            return Err(fault(
                value_start,
                "attribute value is never closed",
                "add the closing quote",
            ));
        }
        let value_end = i;
        i += 1;
        let qname = &raw[name_start..name_end];
        let raw_value = &raw[value_start..value_end];
        if raw_value.contains('<') {
            return Err(fault(
                value_start + raw_value.find('<').unwrap_or(0),
                "`<` inside an attribute value",
                "write &lt; instead",
            ));
        }
        let value = quick_xml::escape::unescape(raw_value).map_err(|e| {
            fault(
                value_start,
                &format!("bad escape in attribute value: {e}"),
                "qflow expands only XML's five predefined entities and character references",
            )
        })?;
        if attrs.iter().any(|a| a.qname == qname) {
            return Err(fault(
                name_start,
                &format!("attribute `{qname}` appears twice on one element"),
                "remove one of them",
            ));
        }
        let local = qname.rsplit(':').next().unwrap_or(qname);
        let ns = if qname == "xmlns" || qname.starts_with("xmlns:") {
            Some(Cow::Borrowed(XMLNS_NS))
        } else if qname.contains(':') {
            match reader.resolve_attribute(QName(qname.as_bytes())).0 {
                ResolveResult::Bound(ns) => Some(Cow::Owned(
                    String::from_utf8_lossy(ns.as_ref()).into_owned(),
                )),
                ResolveResult::Unknown(p) => {
                    return Err(fault(
                        name_start,
                        &format!(
                            "namespace prefix `{}` is not declared",
                            String::from_utf8_lossy(&p)
                        ),
                        "declare it with xmlns:prefix=\"…\" on this element or an ancestor",
                    ))
                }
                ResolveResult::Unbound => None,
            }
        } else {
            None
        };
        let _ = source;
        attrs.push(XmlAttr {
            ns,
            local,
            qname,
            value,
            span: Span::new(offset + name_start, offset + value_end + 1),
            name_span: Span::new(offset + name_start, offset + name_end),
            value_span: Span::new(offset + value_start, offset + value_end),
        });
    }
    Ok(attrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_point_at_source_bytes() {
        let src = "\u{feff}<?xml version=\"1.0\"?>\r\n<a xmlns=\"urn:x\" xmlns:q=\"urn:qflow:bpmn:1\">\r\n  <q:b q:c=\"1 &amp; 2\"/><d>t<![CDATA[<x>]]></d></a>";
        let doc = parse(src).unwrap();
        let root = doc.element(doc.root);
        assert_eq!(root.local, "a");
        assert_eq!(root.ns.as_deref(), Some("urn:x"));
        assert_eq!(&src[root.span.start..root.span.start + 2], "<a");
        assert!(src[root.span.start..root.span.end].ends_with("</a>"));
        let (_, b) = doc.children(doc.root).next().unwrap();
        assert!(b.is(QFLOW_NS, "b"));
        let c = b.attr_ns(QFLOW_NS, "c").unwrap();
        assert_eq!(c.value, "1 & 2");
        assert_eq!(&src[c.value_span.start..c.value_span.end], "1 &amp; 2");
        assert_eq!(&src[c.name_span.start..c.name_span.end], "q:c");
        let (_, d) = doc.children(doc.root).nth(1).unwrap();
        assert_eq!(d.text, "t<x>");
        assert!(doc.declares(QFLOW_NS));
    }

    #[test]
    fn doctype_is_refused() {
        let src = "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">]><a>&lol;</a>";
        let err = parse(src).unwrap_err();
        assert!(err.message.contains("DOCTYPE"), "{err:?}");
    }

    #[test]
    fn unknown_entity_is_refused() {
        let err = parse("<a>&lol9;</a>").unwrap_err();
        assert!(err.message.contains("&lol9;"), "{err:?}");
    }

    #[test]
    fn deep_nesting_is_refused_without_recursion() {
        let src = "<a>".repeat(100_000) + &"</a>".repeat(100_000);
        let err = parse(&src).unwrap_err();
        assert!(err.message.contains("nested deeper"));
    }

    #[test]
    fn mismatched_end_tag_reports_position() {
        let err = parse("<a>\n<b></c></a>").unwrap_err();
        assert!(err.span.start >= 4, "{err:?}");
    }

    #[test]
    fn unclosed_root() {
        let err = parse("<a><b/>").unwrap_err();
        assert!(err.message.contains("never closed"), "{err:?}");
    }
}
