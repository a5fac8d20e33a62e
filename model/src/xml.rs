//! A namespace-resolved XML tree that remembers where everything came from.
//!
//! quick-xml does the tokenizing; this module adds what a studio needs on top:
//! namespace resolution by URI, a byte span for every element, attribute name
//! and attribute value, and hard limits that make hostile input harmless. The
//! tree is a flat arena (children are sibling links), so neither building nor
//! dropping it recurses, whatever the nesting of the input.
//!
//! Cost: the tree borrows everything it can from the source (names, texts,
//! namespace URIs) and keeps attributes as raw tag text lexed on demand (see
//! [`Attrs`]), so a 12 MB model parses in about the time of a bare quick-xml
//! pass and with a tree smaller than three times the source (docs/performance.md).
//!
//! Security posture: a `<!DOCTYPE>` is refused outright. qflow never expands a
//! user-defined entity and never reads an external one, so billion-laughs and
//! XXE inputs fail with a clear message instead of consuming memory or touching
//! the disk or network.

use std::borrow::Cow;
use std::collections::HashMap;

use quick_xml::events::Event;
use quick_xml::Reader;

use crate::span::Span;

mod attrs;
mod chars;
mod number;

pub use attrs::{AttrIter, Attrs, XmlAttr};
pub use number::parse_float;

/// The BPMN 2.0 model namespace.
pub const BPMN_NS: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";
/// The qflow extension namespace; resolved by URI, whatever prefix binds it.
pub const QFLOW_NS: &str = "urn:qflow:bpmn:1";
/// The XML namespace-declaration namespace (`xmlns`, `xmlns:p`).
pub const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";
/// The namespace of the always-bound `xml:` prefix (`xml:lang`).
pub const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";

/// Elements nested deeper than this are refused (BPMN files from real modellers
/// stay well under 50 levels).
pub const MAX_DEPTH: usize = 256;
/// Attributes on one element beyond this are refused (real elements carry a
/// dozen at most); keeps every per-tag check linear.
pub const MAX_ATTRIBUTES: usize = 1024;
/// Namespace declarations in scope at once beyond this are refused (a modeller
/// declares ten or so on the root); keeps prefix lookup cheap.
pub const MAX_NAMESPACES_IN_SCOPE: usize = 256;

/// Index of an element in [`XmlDoc::elements`].
pub type ElementId = usize;

/// "No element" in the sibling links.
const NONE: u32 = u32::MAX;

/// One element of the tree. Only what cannot be derived is stored, in 32-bit
/// offsets (the parser refuses sources over 4 GiB): a 12 MB model has ~130,000
/// elements, so every 8 bytes here is a megabyte of `qflow check`'s peak.
#[derive(Debug, Clone)]
pub struct XmlElement<'a> {
    pub ns: Option<Cow<'a, str>>,
    pub local: &'a str,
    pub qname: &'a str,
    pub attrs: Attrs<'a>,
    /// From `<` of the start tag to `>` of the end tag (or of the empty tag).
    pub span: Span,
    /// Direct text and CDATA content, unescaped and concatenated, without the
    /// whitespace-only chunks that come before the first real text (so it is
    /// empty for element-only content; `text.trim()` is always the trimmed
    /// concatenation of every chunk).
    pub text: Cow<'a, str>,
    /// See [`XmlElement::text_span`]; `NONE` for no text.
    text_start: u32,
    text_end: u32,
    /// See [`XmlElement::start_tag`].
    start_tag_end: u32,
    parent: u32,
    first_child: u32,
    next_sibling: u32,
}

impl<'a> XmlElement<'a> {
    pub fn is(&self, ns: &str, local: &str) -> bool {
        self.local == local && self.ns.as_deref() == Some(ns)
    }

    pub fn in_ns(&self, ns: &str) -> bool {
        self.ns.as_deref() == Some(ns)
    }

    /// An unprefixed attribute (BPMN's own attributes are unqualified).
    pub fn attr(&self, local: &str) -> Option<XmlAttr<'a>> {
        self.attrs.find(|qname| qname == local, None)
    }

    pub fn attr_ns(&self, ns: &str, local: &str) -> Option<XmlAttr<'a>> {
        self.attrs
            .find(|qname| attrs::local_of(qname) == local, Some(ns))
    }

    pub fn has_children(&self) -> bool {
        self.first_child != NONE
    }

    pub fn parent(&self) -> Option<ElementId> {
        (self.parent != NONE).then_some(self.parent as usize)
    }

    /// The start tag alone.
    pub fn start_tag(&self) -> Span {
        Span::new(self.span.start(), self.start_tag_end as usize)
    }

    /// The qualified name inside the start tag (right after its `<`).
    pub fn name_span(&self) -> Span {
        let start = self.span.start() + 1;
        Span::new(start, start + self.qname.len())
    }

    /// From the first to the last byte of direct text content, if any.
    pub fn text_span(&self) -> Option<Span> {
        (self.text_start != NONE)
            .then(|| Span::new(self.text_start as usize, self.text_end as usize))
    }
}

/// A parsed document: the arena and the root.
#[derive(Debug, Clone)]
pub struct XmlDoc<'a> {
    pub source: &'a str,
    /// Every element in document order (a parent comes before its children).
    pub elements: Vec<XmlElement<'a>>,
    pub root: ElementId,
    /// Every namespace URI declared anywhere in the document.
    pub declared_namespaces: Vec<String>,
    /// The rectangles of skipped bounds leaves, in document order (see
    /// [`ParseOptions::keep_bounds_of`]).
    pub leaf_bounds: Vec<LeafBounds>,
}

impl<'a> XmlDoc<'a> {
    pub fn element(&self, id: ElementId) -> &XmlElement<'a> {
        &self.elements[id]
    }

    pub fn children(&self, id: ElementId) -> impl Iterator<Item = (ElementId, &XmlElement<'a>)> {
        let mut next = self.elements[id].first_child;
        std::iter::from_fn(move || {
            if next == NONE {
                return None;
            }
            let id = next as usize;
            let el = &self.elements[id];
            next = el.next_sibling;
            Some((id, el))
        })
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
/// A file that starts with a UTF-16 byte order mark, decoded to UTF-8
/// (`None` for any other file). An unpaired surrogate is a QF001 at the
/// start of the file: its byte offset has no place in the decoded text.
pub fn utf16_text(bytes: &[u8]) -> Option<Result<String, XmlError>> {
    let little = match bytes {
        [0xFF, 0xFE, ..] => true,
        [0xFE, 0xFF, ..] => false,
        _ => return None,
    };
    let body = &bytes[2..];
    let units = body.chunks(2).map(|pair| match (pair, little) {
        ([lo, hi], true) => u16::from_le_bytes([*lo, *hi]),
        ([hi, lo], false) => u16::from_be_bytes([*hi, *lo]),
        // A dangling last byte: not a code unit, so not text.
        _ => 0xDC00,
    });
    let mut text = String::with_capacity(body.len() / 2);
    for (i, c) in char::decode_utf16(units).enumerate() {
        match c {
            Ok(c) => text.push(c),
            Err(_) => {
                return Some(Err(XmlError::new(
                    Span::at(0),
                    format!(
                        "the file is UTF-16 but its code unit {i} (byte {}) is not text (an unpaired surrogate or an odd last byte)",
                        2 + 2 * i
                    ),
                    "re-save the file as UTF-8 (or valid UTF-16) from the tool that wrote it",
                )))
            }
        }
    }
    if let Err(e) = decode(text.as_bytes()) {
        return Some(Err(e));
    }
    Some(Ok(text))
}

/// From this size, [`decode`] looks for a NUL byte on a second thread while
/// it checks the UTF-8: two passes over a large model (0.4 and 2 ms on the
/// 12.9 MB one) that nothing else runs beside.
const PARALLEL_DECODE_MIN_BYTES: usize = 1 << 20;

/// The bytes as UTF-8 text, and the offset of their first NUL byte.
fn utf8_and_first_nul(bytes: &[u8]) -> (Result<&str, std::str::Utf8Error>, Option<usize>) {
    if bytes.len() < PARALLEL_DECODE_MIN_BYTES {
        return (std::str::from_utf8(bytes), memchr::memchr(0, bytes));
    }
    std::thread::scope(|s| {
        let nul = s.spawn(|| memchr::memchr(0, bytes));
        let text = std::str::from_utf8(bytes);
        // memchr does not panic; were the thread lost, look again here.
        let nul = nul.join().unwrap_or_else(|_| memchr::memchr(0, bytes));
        (text, nul)
    })
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
    let (text, nul) = utf8_and_first_nul(bytes);
    match text {
        Ok(s) => {
            if let Some(nul) = nul {
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

/// The namespace bindings in scope, and every URI declared so far (interned,
/// so elements borrow one copy instead of allocating a URI each).
#[derive(Default, Clone)]
struct Namespaces<'a> {
    uris: Vec<Cow<'a, str>>,
    index: HashMap<Cow<'a, str>, u32>,
    /// (prefix, URI index); prefix "" is the default namespace, `None` undeclares it.
    bindings: Vec<(&'a str, Option<u32>)>,
}

impl<'a> Namespaces<'a> {
    fn declare(&mut self, uri: Cow<'a, str>) -> Option<u32> {
        if uri.is_empty() {
            return None;
        }
        if let Some(&i) = self.index.get(uri.as_ref()) {
            return Some(i);
        }
        let i = self.uris.len() as u32;
        self.index.insert(uri.clone(), i);
        self.uris.push(uri);
        Some(i)
    }

    /// The URI bound to `prefix`: `Ok(None)` for no namespace, `Err` if undeclared.
    fn resolve(&self, prefix: &str) -> Result<Option<Cow<'a, str>>, ()> {
        match self.bindings.iter().rev().find(|(p, _)| *p == prefix) {
            Some((_, Some(i))) => Ok(Some(self.uris[*i as usize].clone())),
            Some((_, None)) => Ok(None),
            None if prefix.is_empty() => Ok(None),
            None if prefix == "xml" => Ok(Some(Cow::Borrowed(XML_NS))),
            None => Err(()),
        }
    }
}

fn undeclared(prefix: &str, span: Span) -> XmlError {
    XmlError::new(
        span,
        format!("namespace prefix `{prefix}` is not declared"),
        format!("declare it with xmlns:{prefix}=\"…\" on this element or an ancestor"),
    )
}

/// What the parser may leave out of the tree: elements nobody reads.
///
/// A modeller's diagram is a third of a BPMN file's elements (`dc:Bounds` per
/// shape, two or more `di:waypoint` per edge), each with coordinates only: no
/// id, no reference. Keeping them costs a tree element each (a fifth of
/// `qflow check`'s memory on a 12 MB model) for nothing the model reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct ParseOptions<'o> {
    /// Empty elements (`<x …/>`, not the root) in these namespaces are checked
    /// like any other (names, attributes, namespaces) but not kept, when every
    /// attribute they carry is an unprefixed name listed in `leaf_attributes`.
    pub skip_leaves_in: &'o [&'o str],
    pub leaf_attributes: &'o [&'o str],
    /// A skipped leaf with this namespace and local name (`dc:Bounds`) leaves
    /// its four numbers behind in [`XmlDoc::leaf_bounds`]: the diagram rules
    /// need a shape's rectangle, not a tree element for it.
    pub keep_bounds_of: Option<(&'o str, &'o str)>,
}

/// The rectangle of a skipped `Bounds` leaf, and the element it sat in: 20
/// bytes instead of a 160-byte tree element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeafBounds {
    pub parent: u32,
    /// All four are finite numbers; otherwise those that are not are 0 (see
    /// `ShapeBounds::finite`).
    pub finite: bool,
    /// `x` and `y` are written (see `ShapeBounds::placed`).
    pub placed: bool,
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

/// Parse a whole document into a spanned tree, or report the first fault.
pub fn parse(source: &str) -> Result<XmlDoc<'_>, XmlError> {
    parse_with(source, ParseOptions::default())
}

/// [`parse`], leaving out what `options` allow. Spans of the elements kept
/// (their text spans included) are exactly those of the full tree.
pub fn parse_with<'a>(source: &'a str, options: ParseOptions<'_>) -> Result<XmlDoc<'a>, XmlError> {
    // Every element starts with `<`: reserve once instead of growing ~20 times.
    // Capacity beyond what is used is never touched, so it costs no memory.
    let mut tree = Tree {
        elements: Vec::with_capacity(count_byte(source.as_bytes(), b'<')),
        stack: Vec::new(),
        root: None,
        leaf_bounds: Vec::new(),
    };
    let declared = drive(source, options, &mut tree)?;
    let Some(root) = tree.root else {
        unreachable!("drive refuses a document without a root element");
    };
    Ok(XmlDoc {
        source,
        elements: tree.elements,
        root,
        declared_namespaces: declared.iter().map(|u| u.to_string()).collect(),
        leaf_bounds: tree.leaf_bounds,
    })
}

/// One start tag the parser keeps (checked: names, attributes, namespaces),
/// as a [`Sink`] receives it.
pub struct Start<'a, 'r> {
    pub ns: Option<Cow<'a, str>>,
    pub qname: &'a str,
    /// `<` of the start tag.
    pub start: usize,
    /// Just after `>` of the start tag.
    pub start_tag_end: usize,
    /// `<x …/>`: [`Sink::end`] follows at once.
    pub is_empty: bool,
    tag: &'a str,
    tag_offset: usize,
    raws: &'r [attrs::RawAttr],
    prefixed: &'r [Cow<'a, str>],
    escaped: bool,
}

impl<'a> Start<'a, '_> {
    pub fn local(&self) -> &'a str {
        attrs::local_of(self.qname)
    }

    pub fn name_span(&self) -> Span {
        Span::new(self.start + 1, self.start + 1 + self.qname.len())
    }

    /// Every attribute, in order, as [`Attrs`] would give them, from the
    /// lexing the parser already did (`out` is cleared first).
    pub fn attrs_into(&self, out: &mut Vec<XmlAttr<'a>>) {
        out.clear();
        let mut prefixed_seen = 0;
        for raw in self.raws {
            let qname = &self.tag[raw.name.0..raw.name.1];
            let ns = if attrs::is_xmlns(qname) {
                Some(Cow::Borrowed(XMLNS_NS))
            } else if qname.contains(':') {
                prefixed_seen += 1;
                self.prefixed.get(prefixed_seen - 1).cloned()
            } else {
                None
            };
            out.push(attrs::build(
                self.tag,
                self.tag_offset,
                *raw,
                ns,
                self.escaped,
            ));
        }
    }
}

/// What [`drive`] hands on while it checks a document: the elements kept,
/// in document order, each closed by [`Sink::end`].
pub trait Sink<'a> {
    fn start(&mut self, el: &Start<'a, '_>) -> Result<(), XmlError>;
    /// The innermost open element ends; `end` is just after its `>`.
    fn end(&mut self, end: usize);
    /// A chunk of direct text of the innermost open element: text as
    /// written, CDATA content, or a resolved entity or character reference.
    fn text(&mut self, text: Cow<'a, str>, span: Span);
    /// The content of a CDATA section, a chunk of direct text too. A sink
    /// that tells them apart overrides this (bpmnlint counts a CDATA
    /// section of blanks as a body, text of blanks as none).
    fn cdata(&mut self, text: Cow<'a, str>, span: Span) {
        self.text(text, span);
    }
    /// A skipped bounds leaf (see [`ParseOptions::keep_bounds_of`]) inside
    /// the innermost open element.
    fn leaf_bounds(&mut self, bounds: LeafBounds);
}

/// The tree [`parse_with`] builds, as a [`Sink`].
struct Tree<'a> {
    elements: Vec<XmlElement<'a>>,
    stack: Vec<(u32, u32)>, // (element, last child)
    root: Option<ElementId>,
    leaf_bounds: Vec<LeafBounds>,
}

impl<'a> Sink<'a> for Tree<'a> {
    fn start(&mut self, e: &Start<'a, '_>) -> Result<(), XmlError> {
        let id = self.elements.len();
        if id >= NONE as usize {
            return Err(XmlError::new(
                Span::new(e.start, e.start_tag_end),
                "too many elements in one document",
                "split the model",
            ));
        }
        self.elements.push(XmlElement {
            ns: e.ns.clone(),
            local: e.local(),
            qname: e.qname,
            attrs: Attrs::new(e.tag, e.tag_offset, e.prefixed.to_vec(), e.escaped),
            span: Span::new(e.start, e.start_tag_end),
            text: Cow::Borrowed(""),
            text_start: NONE,
            text_end: NONE,
            start_tag_end: e.start_tag_end as u32,
            parent: self.stack.last().map_or(NONE, |o| o.0),
            first_child: NONE,
            next_sibling: NONE,
        });
        match self.stack.last_mut() {
            Some(open) => {
                match open.1 {
                    NONE => self.elements[open.0 as usize].first_child = id as u32,
                    last => self.elements[last as usize].next_sibling = id as u32,
                }
                open.1 = id as u32;
            }
            None => self.root = Some(id),
        }
        self.stack.push((id as u32, NONE));
        Ok(())
    }

    fn end(&mut self, end: usize) {
        if let Some((id, _)) = self.stack.pop() {
            let span = &mut self.elements[id as usize].span;
            *span = crate::span::Span::new(span.start(), end);
        }
    }

    fn text(&mut self, text: Cow<'a, str>, span: Span) {
        if let Some(&(id, _)) = self.stack.last() {
            push_text(&mut self.elements[id as usize], text, span);
        }
    }

    fn leaf_bounds(&mut self, mut bounds: LeafBounds) {
        if let Some(&(id, _)) = self.stack.last() {
            bounds.parent = id;
            self.leaf_bounds.push(bounds);
        }
    }
}

/// An element whose end tag has not been read yet.
#[derive(Clone)]
struct Open<'a> {
    qname: &'a str,
    start: usize,
    /// Namespace bindings to drop when it closes.
    ns_mark: usize,
}

/// Check a whole document, handing every element kept (see `options`) and
/// its text to `sink` in document order, or report the first fault. Returns
/// every namespace URI declared anywhere in the document.
pub fn drive<'a>(
    source: &'a str,
    options: ParseOptions<'_>,
    sink: &mut impl Sink<'a>,
) -> Result<Vec<Cow<'a, str>>, XmlError> {
    check_size(source)?;
    let mut state = Resume::default();
    run(source, 0, Piece::Whole, &mut state, options, sink)?;
    state.finish(source)
}

/// Where [`drive_head`] stopped.
pub enum Head<'a> {
    /// The document was read to its end, as [`drive`] reads it (the root
    /// element was empty, or no element started where the head was to
    /// stop).
    Done(Vec<Cow<'a, str>>),
    /// The head's last start tag was read and handed on; `at` is just after
    /// its `>`.
    Open { at: usize, state: Resume<'a> },
}

/// [`drive`], stopping just after the root element's start tag (`enter`:
/// `None`) or just after the start tag of the root's child that starts at
/// byte `enter`, so the rest of the document can be read in pieces
/// ([`drive_piece`]).
pub fn drive_head<'a>(
    source: &'a str,
    options: ParseOptions<'_>,
    enter: Option<usize>,
    sink: &mut impl Sink<'a>,
) -> Result<Head<'a>, XmlError> {
    check_size(source)?;
    let mut state = Resume::default();
    match run(source, 0, Piece::Head(enter), &mut state, options, sink)? {
        Some(at) => Ok(Head::Open { at, state }),
        None => state.finish(source).map(Head::Done),
    }
}

/// Read `source[range]` from `state` (the open elements and namespaces in
/// scope where the range starts), handing what it holds to `sink` like
/// [`drive`]; `state` is where the range ends.
///
/// `range.start` must be where [`drive`]'s tokenizer would stand between two
/// events (just after a `>`, or at a `<`). A fault here is a fault of the
/// piece, not necessarily the document's: an end tag that closes an element
/// opened before the range is checked here instead of by quick-xml, with a
/// message of its own ([`Resume::own_fault`]), a range that ends before the
/// document does may end inside a construct, and the end of the range is
/// not checked at all (see [`Resume::open_elements`]).
pub fn drive_piece<'a>(
    source: &'a str,
    range: std::ops::Range<usize>,
    options: ParseOptions<'_>,
    state: &mut Resume<'a>,
    sink: &mut impl Sink<'a>,
) -> Result<(), XmlError> {
    check_size(source)?;
    if range.start > 0 && source[range.start..range.end].starts_with('\u{feff}') {
        state.own_fault = true;
        // quick-xml would drop it as a byte order mark; in the middle of a
        // document it is text.
        return Err(XmlError::new(
            Span::at(range.start),
            "a piece may not start with U+FEFF",
            "read the document whole",
        ));
    }
    run(
        &source[..range.end],
        range.start,
        Piece::Part,
        state,
        options,
        sink,
    )?;
    Ok(())
}

fn check_size(source: &str) -> Result<(), XmlError> {
    if u32::try_from(source.len()).is_err() {
        return Err(XmlError::new(
            Span::at(0),
            "the file is larger than 4 GiB",
            "a BPMN model is a few megabytes at most; check this is the right file",
        ));
    }
    Ok(())
}

/// The parser's state between two pieces of one document: the open
/// elements, the namespace bindings in scope and every URI declared so far.
#[derive(Clone, Default)]
pub struct Resume<'a> {
    stack: Vec<Open<'a>>,
    names: Namespaces<'a>,
    root_seen: bool,
    root_end: Option<usize>,
    /// The piece's last fault is its own, not one [`drive`] would report:
    /// an end tag of an element opened before the piece, checked with a
    /// message of its own, or a piece that starts with U+FEFF.
    own_fault: bool,
}

impl<'a> Resume<'a> {
    /// Elements open where the read stopped (the root included).
    pub fn open_elements(&self) -> usize {
        self.stack.len()
    }

    /// The same elements are open in both (so the same namespace bindings
    /// are in scope: each open element's own, in order).
    pub fn same_open(&self, other: &Resume<'_>) -> bool {
        self.stack.len() == other.stack.len()
            && self
                .stack
                .iter()
                .zip(&other.stack)
                .all(|(a, b)| a.start == b.start && a.qname == b.qname && a.ns_mark == b.ns_mark)
    }

    /// Whether the fault [`drive_piece`] last returned is the piece's own
    /// (see the field); any other fault of a piece that reads to the end of
    /// the document, from the state the whole read stands in where the
    /// piece starts, is exactly the fault [`drive`] reports.
    pub fn own_fault(&self) -> bool {
        self.own_fault
    }

    /// Just after the root's end tag, once it was read.
    pub fn root_end(&self) -> Option<usize> {
        self.root_end
    }

    /// Every namespace URI declared in what was read, in order.
    pub fn declared(self) -> Vec<Cow<'a, str>> {
        self.names.uris
    }

    /// The end of the document: every element closed, a root seen; every
    /// namespace URI declared, as [`drive`] returns them.
    pub fn finish(self, source: &str) -> Result<Vec<Cow<'a, str>>, XmlError> {
        if let Some(open) = self.stack.last() {
            let name_span = Span::new(open.start + 1, open.start + 1 + open.qname.len());
            return Err(XmlError::new(
                name_span,
                format!("<{}> is never closed: the file ends first", open.qname),
                format!(
                    "add </{}> (or check the file was not truncated)",
                    open.qname
                ),
            ));
        }
        if !self.root_seen {
            return Err(XmlError::new(
                Span::at(source.len()),
                "the document has no root element",
                "a BPMN model is an XML document whose root is <bpmn:definitions>",
            ));
        }
        Ok(self.names.uris)
    }
}

/// What [`run`] reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// The whole document.
    Whole,
    /// The whole document, stopping after the root's start tag, or after
    /// the start tag of the root's child starting at the given byte.
    Head(Option<usize>),
    /// A range after the root's start tag ([`drive_piece`]).
    Part,
}

/// Read `source[from..]` into `sink` from `state`: the one loop behind
/// [`drive`], [`drive_head`] and [`drive_piece`]. `Some(at)`: a head stopped
/// just after the root's start tag.
fn run<'a>(
    source: &'a str,
    from: usize,
    piece: Piece,
    state: &mut Resume<'a>,
    options: ParseOptions<'_>,
    sink: &mut impl Sink<'a>,
) -> Result<Option<usize>, XmlError> {
    let mut reader = Reader::from_str(&source[from..]);
    {
        let cfg = reader.config_mut();
        cfg.trim_text(false);
        cfg.expand_empty_elements = false;
        cfg.check_end_names = true;
        cfg.check_comments = false;
        // A piece's reader never saw the start tags of the elements open
        // where it starts: their end tags are checked below instead.
        cfg.allow_unmatched_ends = piece == Piece::Part;
    }
    let Resume {
        stack,
        names,
        root_seen,
        root_end,
        own_fault,
    } = state;
    // End tags of the elements open before the piece: quick-xml does not
    // know them, so they are checked here.
    let mut inherited = if piece == Piece::Part { stack.len() } else { 0 };
    let mut raws: Vec<attrs::RawAttr> = Vec::new();
    let mut prefixed: Vec<Cow<'a, str>> = Vec::new();
    // quick-xml skips a leading UTF-8 BOM without counting it in its positions.
    let base = if source[from..].starts_with('\u{feff}') {
        from + 3
    } else {
        from
    };
    let mut pos = base;
    // Every byte read is also looked at for characters XML 1.0 forbids,
    // ahead of the tokenizer; only `clean` (every byte before it is) stays
    // in a register, so the loop pays one comparison an event.
    let mut ahead = chars::Ahead::from(from);
    let mut clean = from;

    loop {
        let event = reader.read_event();
        let end = base + reader.buffer_position() as usize;
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                let at = base + reader.error_position() as usize;
                if let Some(fault) = ahead.pending.take() {
                    return Err(fault);
                }
                if let Some(bad) = ahead.before(source.as_bytes(), at + 1) {
                    return Err(forbidden_char(source, bad, ""));
                }
                return Err(XmlError::new(
                    Span::at(at.min(source.len())),
                    format!("XML is not well-formed: {e}"),
                    "fix the XML at this position (a validating editor or `xmllint` shows the same fault)",
                ));
            }
        };
        let start = pos;
        pos = end;
        // A forbidden character in this event is its fault, unless the
        // event has one of its own that ends before it (document order):
        // it is described now, while the open elements are those around
        // it, and returned when the next event is read (so the loop pays
        // one comparison an event and nothing at its exits).
        if end > clean {
            clean = ahead.scan_to(source.as_bytes(), end);
            if let Some(fault) = ahead.pending.take() {
                return Err(fault);
            }
            if end > clean {
                ahead.pending = Some(chars_fault(source, ahead.first(), (start, end), stack));
            }
        }
        // The event's own fault, or a forbidden character before it.
        macro_rules! first {
            ($e:expr) => {
                match ahead.pending.take() {
                    Some(bad) if bad.span.start() < $e.span.end().max($e.span.start() + 1) => bad,
                    _ => $e,
                }
            };
        }
        // Return the event's own fault (an `XmlError`, or its span, message
        // and help), unless a forbidden character comes before it.
        macro_rules! fail {
            ($fault:expr) => {{
                let fault = $fault;
                return Err(first!(fault));
            }};
            ($span:expr, $message:expr, $help:expr $(,)?) => {
                fail!(XmlError::new($span, $message, $help))
            };
        }
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let is_empty = matches!(event, Event::Empty(_));
                if stack.is_empty() && *root_seen {
                    fail!(
                        Span::new(start, end),
                        "a second root element: an XML document has exactly one",
                        "wrap the content in a single <bpmn:definitions> element"
                    );
                }
                if stack.len() >= MAX_DEPTH {
                    fail!(
                        Span::new(start, end),
                        format!("elements nested deeper than {MAX_DEPTH} levels"),
                        "BPMN models are shallow; this file is probably generated or hostile"
                    );
                }
                let name_len = e.name().as_ref().len();
                let qname: &str = &source[start + 1..start + 1 + name_len];
                let name_span = Span::new(start + 1, start + 1 + name_len);
                let tag_offset = start + 1 + name_len;
                let tag = &source[tag_offset..start + 1 + e.len()];
                let ns_mark = names.bindings.len();
                let escaped = read_start_tag(tag, tag_offset, &mut raws, &mut prefixed, names)
                    .map_err(|e| first!(e))?;
                let ns = match qname.rfind(':') {
                    Some(colon) => names.resolve(&qname[..colon]).map_err(|()| {
                        let e = undeclared(&qname[..colon], name_span);
                        first!(e)
                    })?,
                    None => names.resolve("").unwrap_or(None),
                };
                if is_empty
                    && !stack.is_empty()
                    && is_skipped_leaf(&options, ns.as_deref(), tag, &raws)
                {
                    if let Some((bns, blocal)) = options.keep_bounds_of {
                        if ns.as_deref() == Some(bns) && attrs::local_of(qname) == blocal {
                            if let Some(b) = bounds_of(tag, &raws, NONE) {
                                sink.leaf_bounds(b);
                            }
                        }
                    }
                    names.bindings.truncate(ns_mark);
                    continue;
                }
                *root_seen = true;
                sink.start(&Start {
                    ns,
                    qname,
                    start,
                    start_tag_end: end,
                    is_empty,
                    tag,
                    tag_offset,
                    raws: &raws,
                    prefixed: &prefixed,
                    escaped,
                })
                .map_err(|e| first!(e))?;
                if is_empty {
                    names.bindings.truncate(ns_mark);
                    sink.end(end);
                    if stack.is_empty() {
                        *root_end = Some(end);
                    }
                } else {
                    stack.push(Open {
                        qname,
                        start,
                        ns_mark,
                    });
                    let stop = match piece {
                        Piece::Head(None) => stack.len() == 1,
                        Piece::Head(Some(at)) => stack.len() == 2 && start == at,
                        Piece::Whole | Piece::Part => false,
                    };
                    if stop {
                        if let Some(fault) = ahead.pending.take() {
                            return Err(fault);
                        }
                        return Ok(Some(end));
                    }
                }
            }
            Event::End(ref e) => {
                if stack.len() <= inherited {
                    // Opened before the piece: quick-xml let it through.
                    let matches = stack
                        .last()
                        .is_some_and(|open| e.name().as_ref() == open.qname.as_bytes());
                    if !matches {
                        *own_fault = true;
                        fail!(
                            Span::new(start, end),
                            "this end tag closes no open element of its name",
                            "check the end tags match their start tags"
                        );
                    }
                    inherited -= 1;
                }
                if let Some(open) = stack.pop() {
                    sink.end(end);
                    names.bindings.truncate(open.ns_mark);
                    if stack.is_empty() {
                        *root_end = Some(end);
                    }
                }
            }
            Event::Text(ref t) => {
                // Entity references arrive as their own events, so the text is
                // exactly the source bytes and can be borrowed.
                let raw = &source[start..end];
                debug_assert_eq!(&**t, raw.as_bytes());
                if !stack.is_empty() {
                    sink.text(Cow::Borrowed(raw), Span::new(start, end));
                } else if !raw.bytes().all(|b| b.is_ascii_whitespace()) {
                    fail!(
                        Span::new(start, end),
                        "text outside the root element",
                        "everything must be inside <bpmn:definitions>"
                    );
                }
            }
            Event::CData(ref t) => {
                if stack.is_empty() {
                    // A CDATA section is text, which only an element holds.
                    fail!(outside_root(Span::new(start, end), "a CDATA section"));
                }
                // The content sits between `<![CDATA[` and `]]>`.
                let inner = Span::new(start + 9, end.saturating_sub(3).max(start + 9));
                let text = &source[inner.start()..inner.end()];
                debug_assert_eq!(&**t, text.as_bytes());
                sink.cdata(Cow::Borrowed(text), inner);
            }
            Event::GeneralRef(ref r) => {
                let name = &source[start + 1..end.saturating_sub(1).max(start + 1)];
                if let Some(code) = chars::char_ref_code(name).filter(|&c| chars::is_forbidden(c)) {
                    let place = match stack.last() {
                        Some(open) => format!("in the text of <{}>", open.qname),
                        None => "outside the root element".to_string(),
                    };
                    let span = Span::new(start, end);
                    return Err(forbidden_ref(&source[start..end], span, code, &place));
                }
                if stack.is_empty() {
                    // A reference stands for text, which only an element holds.
                    fail!(outside_root(Span::new(start, end), "a reference"));
                }
                let resolved: Option<Cow<'_, str>> = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(Cow::Owned(c.to_string())),
                    Ok(None) => {
                        let name = String::from_utf8_lossy(r.as_ref());
                        quick_xml::escape::resolve_predefined_entity(&name).map(Cow::Borrowed)
                    }
                    Err(_) => None,
                };
                let Some(text) = resolved else {
                    fail!(
                        Span::new(start, end),
                        format!(
                            "unknown entity reference `&{};`",
                            String::from_utf8_lossy(r.as_ref())
                        ),
                        "qflow expands only XML's five predefined entities and character \
                         references; write the text itself"
                    );
                };
                sink.text(text, Span::new(start, end));
            }
            Event::DocType(_) => {
                fail!(
                    Span::new(start, end),
                    "DOCTYPE declarations are not accepted",
                    "remove the <!DOCTYPE …> declaration: qflow never expands custom entities \
                     or reads external ones (this protects against entity-expansion and \
                     external-entity attacks)"
                );
            }
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
            Event::Eof => break,
        }
    }
    Ok(None)
}

/// The QF001 of text (`what`: a reference, a CDATA section) before or
/// after the root element, where XML allows only comments, processing
/// instructions and whitespace.
#[cold]
fn outside_root(span: Span, what: &str) -> XmlError {
    XmlError::new(
        span,
        format!("text outside the root element: {what}"),
        "everything must be inside <bpmn:definitions>; remove it, or move it into an element",
    )
}

/// The QF001 of a character XML 1.0 forbids, written as itself (`bad`: its
/// offset and length) in the event at `start..end`, which says where it is
/// from its first bytes (so the reading loop keeps nothing for it).
#[cold]
#[inline(never)]
fn chars_fault(
    source: &str,
    bad: (usize, usize),
    (start, end): (usize, usize),
    stack: &[Open<'_>],
) -> XmlError {
    let raw = &source[start..end];
    let place = if raw.starts_with("<!--") {
        "in a comment".to_string()
    } else if raw.starts_with("<![CDATA[") {
        "in a CDATA section".to_string()
    } else if raw.starts_with("<?xml") && raw[5..].starts_with(|c: char| c.is_ascii_whitespace()) {
        "in the XML declaration".to_string()
    } else if raw.starts_with("<?") {
        "in a processing instruction".to_string()
    } else if raw.starts_with("<!") {
        "in the DOCTYPE declaration".to_string()
    } else if raw.starts_with("</") {
        "in an end tag".to_string()
    } else if let Some(tag) = raw.strip_prefix('<') {
        let name_len = tag
            .find(|c: char| c.is_ascii_whitespace() || c == '/' || c == '>')
            .unwrap_or(tag.len());
        let qname = &tag[..name_len];
        let tag_offset = start + 1 + name_len;
        if bad.0 < tag_offset {
            "in an element name".to_string()
        } else {
            match attribute_at(&source[tag_offset..end], bad.0 - tag_offset) {
                Some(name) => format!("in the value of attribute `{name}` of <{qname}>"),
                None => format!("in the start tag of <{qname}>"),
            }
        }
    } else if raw.starts_with('&') {
        "in an entity reference".to_string()
    } else {
        match stack.last() {
            None => "outside the root element".to_string(),
            // Whitespace but for the character itself (or other controls).
            Some(_)
                if raw.bytes().enumerate().all(|(i, b)| {
                    b.is_ascii_whitespace()
                        || b < 0x20
                        || (bad.0..bad.0 + bad.1).contains(&(start + i))
                }) =>
            {
                "in the whitespace between tags".to_string()
            }
            Some(open) => format!("in the text of <{}>", open.qname),
        }
    };
    forbidden_char(source, bad, &place)
}

/// The name of the attribute whose value holds byte `at` of `tag` (the
/// start tag after the element name), if one does.
fn attribute_at(tag: &str, at: usize) -> Option<&str> {
    let mut i = 0;
    while let Some(Ok(raw)) = attrs::next_raw(tag.as_bytes(), &mut i) {
        if (raw.value.0..raw.value.1).contains(&at) {
            return Some(&tag[raw.name.0..raw.name.1]);
        }
        if raw.value.1 > at {
            break;
        }
    }
    None
}

/// The QF001 of a forbidden character written as itself; `place` says
/// where ("in a comment"), or is empty.
fn forbidden_char(source: &str, (at, len): (usize, usize), place: &str) -> XmlError {
    let code = chars::code_at(source.as_bytes(), at, len);
    let what = if code < 0x20 {
        "the control character"
    } else {
        "the noncharacter"
    };
    let place = if place.is_empty() {
        String::new()
    } else {
        format!(" {place}")
    };
    XmlError::new(
        Span::new(at, at + len),
        format!("{what} {}{place} is not allowed in XML", chars::name(code)),
        "remove it, or write what it stands for as text (a space, for example): XML 1.0 allows no control character but tab, line feed and carriage return, and other tools (Camunda, Flowable) refuse the whole document",
    )
}

/// The QF001 of a character reference (`&#1;`, at `span`) to a character
/// XML 1.0 forbids (`reference`, as written); `place` says where.
fn forbidden_ref(reference: &str, span: Span, code: u32, place: &str) -> XmlError {
    let what = chars::describe(code);
    XmlError::new(
        span,
        format!("the character reference `{reference}` {place} stands for {what}, which XML does not allow"),
        format!("remove the reference: XML 1.0 cannot carry {what}, not even as a reference; write what it stands for as text (a space, for example)"),
    )
}

/// `x`, `y`, `width`, `height` of a bounds leaf ([`shape_numbers`]).
fn bounds_of(tag: &str, raws: &[attrs::RawAttr], parent: u32) -> Option<LeafBounds> {
    let mut v = [None::<&str>; 4];
    for r in raws {
        let slot = match &tag[r.name.0..r.name.1] {
            "x" => 0,
            "y" => 1,
            "width" => 2,
            "height" => 3,
            _ => continue,
        };
        v[slot] = Some(&tag[r.value.0..r.value.1]);
    }
    let ShapeNumbers {
        finite,
        placed,
        values: [x, y, width, height],
    } = shape_numbers(v)?;
    Some(LeafBounds {
        parent,
        finite,
        placed,
        x,
        y,
        width,
        height,
    })
}

/// What a `dc:Bounds` says: its four numbers (0 for one left out or not
/// finite), whether every one written is finite, and whether it places the
/// shape (`x` and `y` written).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ShapeNumbers {
    pub finite: bool,
    pub placed: bool,
    pub values: [f64; 4],
}

/// The numbers of a `dc:Bounds` from its `x`, `y`, `width` and `height` as
/// written, `None` unless it has a width and a height: bpmnlint judges the
/// size of bounds that place nothing (`standard-size`), and compares only
/// placed ones (`no-overlapping-elements`).
pub(crate) fn shape_numbers(values: [Option<&str>; 4]) -> Option<ShapeNumbers> {
    let [x, y, width, height] = values;
    let (width, height) = (width?, height?);
    let placed = x.is_some() && y.is_some();
    let (finite, values) = finite_bounds([x.unwrap_or("0"), y.unwrap_or("0"), width, height]);
    Some(ShapeNumbers {
        finite,
        placed,
        values,
    })
}

/// The four numbers of a `dc:Bounds`, read as bpmnlint reads them
/// ([`parse_float`]: `100px` is 100) and kept as JavaScript keeps them
/// (`f64`: a height of 35.999999999999886 is not 36), and whether all are
/// finite; one that is not (no number at its start, `Infinity`) is 0 and
/// makes it `false`.
fn finite_bounds(values: [&str; 4]) -> (bool, [f64; 4]) {
    let mut out = [0.0f64; 4];
    let mut finite = true;
    for (slot, value) in out.iter_mut().zip(values) {
        let n = parse_float(value);
        if n.is_finite() {
            *slot = n;
        } else {
            finite = false;
        }
    }
    (finite, out)
}

/// An empty element `options` say nobody reads (its tag was already checked).
fn is_skipped_leaf(
    options: &ParseOptions<'_>,
    ns: Option<&str>,
    tag: &str,
    raws: &[attrs::RawAttr],
) -> bool {
    ns.is_some_and(|ns| options.skip_leaves_in.contains(&ns))
        && raws
            .iter()
            .all(|r| options.leaf_attributes.contains(&&tag[r.name.0..r.name.1]))
}

/// How often `needle` occurs: byte-wide counters in 255-byte chunks, which the
/// compiler vectorizes well (a plain `filter().count()` widens every lane to 64 bits).
fn count_byte(bytes: &[u8], needle: u8) -> usize {
    bytes
        .chunks(255)
        .map(|chunk| {
            chunk
                .iter()
                .fold(0u8, |n, &b| n.wrapping_add(u8::from(b == needle))) as usize
        })
        .sum()
}

/// Append a chunk of direct text. Whitespace-only chunks before the first real
/// text are dropped: in element-only content (most of a BPMN file) they are
/// indentation, and keeping them would allocate a string per container. The
/// first real chunk is borrowed, not copied.
fn push_text<'a>(el: &mut XmlElement<'a>, text: Cow<'a, str>, span: Span) {
    if el.text_start == NONE {
        el.text_start = span.start() as u32;
    }
    el.text_end = span.end() as u32;
    if !el.text.is_empty() {
        el.text.to_mut().push_str(&text);
    } else if !text.trim().is_empty() {
        el.text = text;
    }
}

/// Validate one start tag's attributes and bind its namespace declarations.
///
/// `tag` is the text after the element name, starting at `offset` in the
/// source. Fills `prefixed` with the namespaces of the prefixed attributes,
/// in order, and returns whether any value has an escape: all [`Attrs`]
/// needs beyond the tag text to answer later.
fn read_start_tag<'a>(
    tag: &'a str,
    offset: usize,
    raws: &mut Vec<attrs::RawAttr>,
    prefixed: &mut Vec<Cow<'a, str>>,
    names: &mut Namespaces<'a>,
) -> Result<bool, XmlError> {
    let fault = |at: usize, msg: String, help: &str| {
        XmlError::new(Span::at(offset + at), msg, help.to_string())
    };
    raws.clear();
    let mut i = 0;
    let mut any_prefixed = false;
    let mut escaped = false;
    while let Some(raw) = attrs::next_raw(tag.as_bytes(), &mut i) {
        let raw = raw.map_err(|e| fault(e.at, e.message.to_string(), e.help))?;
        if raws.len() >= MAX_ATTRIBUTES {
            return Err(fault(
                raw.name.0,
                format!("more than {MAX_ATTRIBUTES} attributes on one element"),
                "BPMN elements carry a handful of attributes; this file is probably generated or hostile",
            ));
        }
        let qname = &tag[raw.name.0..raw.name.1];
        let raw_value = &tag[raw.value.0..raw.value.1];
        // One pass over the value for both bytes that matter (most values
        // have neither): a `<` is refused, a `&` must be a valid escape.
        let mut amp = false;
        for at in memchr::memchr2_iter(b'<', b'&', raw_value.as_bytes()) {
            if raw_value.as_bytes()[at] == b'<' {
                return Err(fault(
                    raw.value.0 + at,
                    "`<` inside an attribute value".to_string(),
                    "write &lt; instead",
                ));
            }
            amp = true;
        }
        escaped |= amp;
        if amp {
            if let Some((at, len, code)) = chars::forbidden_ref_in(raw_value) {
                let start = offset + raw.value.0 + at;
                return Err(forbidden_ref(
                    &raw_value[at..at + len],
                    Span::new(start, start + len),
                    code,
                    &format!("in the value of attribute `{qname}`"),
                ));
            }
        }
        let value = if amp {
            quick_xml::escape::unescape(raw_value).map_err(|e| {
                fault(
                    raw.value.0,
                    format!("bad escape in attribute value: {e}"),
                    "qflow expands only XML's five predefined entities and character references",
                )
            })?
        } else {
            Cow::Borrowed(raw_value)
        };
        if attrs::is_xmlns(qname) {
            let prefix = qname.strip_prefix("xmlns:").unwrap_or("");
            if !prefix.is_empty() && value.is_empty() {
                return Err(fault(
                    raw.value.0,
                    format!("namespace prefix `{prefix}` is bound to an empty URI"),
                    "only the default namespace can be undeclared (xmlns=\"\"); give the prefix a URI or remove it",
                ));
            }
            if names.bindings.len() >= MAX_NAMESPACES_IN_SCOPE {
                return Err(fault(
                    raw.name.0,
                    format!("more than {MAX_NAMESPACES_IN_SCOPE} namespace declarations in scope"),
                    "a model declares a few namespaces on its root; this file is probably generated or hostile",
                ));
            }
            let uri = names.declare(value);
            names.bindings.push((prefix, uri));
        } else if qname.contains(':') {
            any_prefixed = true;
        }
        raws.push(raw);
    }
    check_unique_names(tag, raws).map_err(|at| {
        let name = &tag[raws[at].name.0..raws[at].name.1];
        fault(
            raws[at].name.0,
            format!("attribute `{name}` appears twice on one element"),
            "remove one of them",
        )
    })?;
    prefixed.clear();
    if any_prefixed {
        for raw in raws.iter() {
            let qname = &tag[raw.name.0..raw.name.1];
            let Some(colon) = qname.find(':') else {
                continue;
            };
            if attrs::is_xmlns(qname) {
                continue;
            }
            let prefix = &qname[..colon];
            let span = Span::new(offset + raw.name.0, offset + raw.name.1);
            match names.resolve(prefix) {
                Ok(Some(ns)) => prefixed.push(ns),
                _ => return Err(undeclared(prefix, span)),
            }
        }
    }
    Ok(escaped)
}

/// `Err(i)`: attribute `i` repeats an earlier name. Linear for the usual
/// handful, sorted beyond that so a hostile tag cannot make it quadratic.
fn check_unique_names(tag: &str, raws: &[attrs::RawAttr]) -> Result<(), usize> {
    let name = |i: usize| &tag[raws[i].name.0..raws[i].name.1];
    if raws.len() <= 16 {
        for i in 1..raws.len() {
            if (0..i).any(|j| name(j) == name(i)) {
                return Err(i);
            }
        }
        return Ok(());
    }
    let mut order: Vec<usize> = (0..raws.len()).collect();
    order.sort_by(|&a, &b| name(a).cmp(name(b)).then(a.cmp(&b)));
    match order
        .windows(2)
        .filter(|w| name(w[0]) == name(w[1]))
        .map(|w| w[1])
        .min()
    {
        Some(second) => Err(second),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn utf16_with_either_byte_order_reads_as_the_same_text() {
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><a x=\"é😀\"/>";
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(xml.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain(xml.encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert_eq!(super::utf16_text(&le).unwrap().unwrap(), xml);
        assert_eq!(super::utf16_text(&be).unwrap().unwrap(), xml);
        assert!(
            super::utf16_text(xml.as_bytes()).is_none(),
            "UTF-8 is not UTF-16"
        );
        let mut odd = le.clone();
        odd.push(b'<');
        let e = super::utf16_text(&odd).unwrap().unwrap_err();
        assert!(e.message.contains("is not text"), "{}", e.message);
    }

    use super::*;

    #[test]
    fn spans_point_at_source_bytes() {
        let src = "\u{feff}<?xml version=\"1.0\"?>\r\n<a xmlns=\"urn:x\" xmlns:q=\"urn:qflow:bpmn:1\">\r\n  <q:b q:c=\"1 &amp; 2\"/><d>t<![CDATA[<x>]]></d></a>";
        let doc = parse(src).unwrap();
        let root = doc.element(doc.root);
        assert_eq!(root.local, "a");
        assert_eq!(root.ns.as_deref(), Some("urn:x"));
        assert_eq!(&src[root.span.start()..root.span.start() + 2], "<a");
        assert!(src[root.span.start()..root.span.end()].ends_with("</a>"));
        let (_, b) = doc.children(doc.root).next().unwrap();
        assert!(b.is(QFLOW_NS, "b"));
        let c = b.attr_ns(QFLOW_NS, "c").unwrap();
        assert_eq!(c.value, "1 & 2");
        assert_eq!(&src[c.value_span.start()..c.value_span.end()], "1 &amp; 2");
        assert_eq!(&src[c.name_span.start()..c.name_span.end()], "q:c");
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
        assert!(err.span.start() >= 4, "{err:?}");
    }

    #[test]
    fn unclosed_root() {
        let err = parse("<a><b/>").unwrap_err();
        assert!(err.message.contains("never closed"), "{err:?}");
    }

    #[test]
    fn indentation_is_not_text_but_real_text_is_exact() {
        let src = "<a>\n  <b/>\n  <c/>\n</a>";
        let doc = parse(src).unwrap();
        let a = doc.element(doc.root);
        assert_eq!(a.text, "");
        assert!(matches!(a.text, Cow::Borrowed(_)), "no allocation");
        let span = a.text_span().unwrap();
        assert_eq!(&src[span.start()..span.end()], "\n  <b/>\n  <c/>\n");
        let src = "<a>  <b/>x &amp; <c/> y  </a>";
        let doc = parse(src).unwrap();
        assert_eq!(doc.element(doc.root).text, "x &  y  ");
        let doc = parse("<d>  PT5M </d>").unwrap();
        assert_eq!(doc.element(doc.root).text, "  PT5M ");
    }

    #[test]
    fn children_keep_document_order() {
        let doc = parse("<a><b/><c><d/></c><e/></a>").unwrap();
        let names: Vec<&str> = doc.children(doc.root).map(|(_, e)| e.local).collect();
        assert_eq!(names, ["b", "c", "e"]);
        let (c, _) = doc.children(doc.root).nth(1).unwrap();
        assert_eq!(
            doc.children(c).map(|(_, e)| e.local).collect::<Vec<_>>(),
            ["d"]
        );
        assert_eq!(doc.element(c).parent(), Some(doc.root));
        assert!(!doc.element(doc.elements.len() - 1).has_children());
    }

    #[test]
    fn attributes_are_lexed_on_demand_with_namespaces_and_spans() {
        let src = r#"<a q:x="1" xmlns:q="urn:qflow:bpmn:1" b='two' xml:lang="de" xmlns="urn:d"><q:c/><e xmlns=""/></a>"#;
        let doc = parse(src).unwrap();
        let a = doc.element(doc.root);
        let all: Vec<(Option<String>, &str, String)> = a
            .attrs
            .iter()
            .map(|x| {
                (
                    x.ns.as_deref().map(str::to_string),
                    x.local,
                    x.value.to_string(),
                )
            })
            .collect();
        assert_eq!(
            all,
            [
                (Some(QFLOW_NS.to_string()), "x", "1".to_string()),
                (Some(XMLNS_NS.to_string()), "q", QFLOW_NS.to_string()),
                (None, "b", "two".to_string()),
                (Some(XML_NS.to_string()), "lang", "de".to_string()),
                (Some(XMLNS_NS.to_string()), "xmlns", "urn:d".to_string()),
            ]
        );
        assert_eq!(a.attrs.len(), 5);
        let x = a.attr_ns(QFLOW_NS, "x").unwrap();
        assert_eq!(&src[x.span.start()..x.span.end()], "q:x=\"1\"");
        let b = a.attr("b").unwrap();
        assert_eq!(&src[b.value_span.start()..b.value_span.end()], "two");
        assert!(a.attr("x").is_none(), "q:x is not the unprefixed x");
        assert!(a.attr("xmlns").is_none(), "declarations are not attributes");
        assert_eq!(a.ns.as_deref(), Some("urn:d"));
        let kids: Vec<_> = doc.children(doc.root).map(|(_, e)| e).collect();
        assert!(kids[0].is(QFLOW_NS, "c"));
        assert_eq!(kids[1].ns, None, "xmlns=\"\" undeclares the default");
        assert_eq!(doc.declared_namespaces, [QFLOW_NS, "urn:d"]);
    }

    #[test]
    fn escaped_values_and_uris_are_unescaped() {
        let src = r#"<a xmlns:v="urn:a&amp;b" v:k="x &lt; y"/>"#;
        let doc = parse(src).unwrap();
        let a = doc.element(doc.root);
        let k = a.attr_ns("urn:a&b", "k").unwrap();
        assert_eq!(k.value, "x < y");
        assert_eq!(&src[k.value_span.start()..k.value_span.end()], "x &lt; y");
    }

    #[test]
    fn namespace_faults_are_refused() {
        let err = parse(r#"<a xmlns:p=""/>"#).unwrap_err();
        assert!(err.message.contains("empty URI"), "{err:?}");
        let err = parse("<p:a/>").unwrap_err();
        assert!(
            err.message.contains("prefix `p` is not declared"),
            "{err:?}"
        );
        assert_eq!(err.span, Span::new(1, 4));
    }

    /// The fault `parse` gives for `src`: its message and the source text
    /// its span covers.
    fn fault_of(src: &str) -> (String, String, String) {
        let e = parse(src).expect_err(src);
        (
            e.message.clone(),
            src[e.span.start()..e.span.end()].to_string(),
            e.help,
        )
    }

    /// Every place a character may sit, with `@` where it goes, and the
    /// words the message uses for it.
    const PLACES: &[(&str, &str)] = &[
        ("<a>x @ y</a>", "in the text of <a>"),
        ("<a b=\"x@\"/>", "in the value of attribute `b` of <a>"),
        ("<a b='@'/>", "in the value of attribute `b` of <a>"),
        ("<a><!-- x@ --></a>", "in a comment"),
        ("<a><![CDATA[x@]]></a>", "in a CDATA section"),
        ("<a><?pi x@?></a>", "in a processing instruction"),
        ("<?pi x@?><a/>", "in a processing instruction"),
        ("<a>\n  @\n  <b/></a>", "in the whitespace between tags"),
        ("<a/>\n@", "outside the root element"),
        ("@<a/>", "outside the root element"),
        ("<a b=\"1\"@/>", "in the start tag of <a>"),
        ("<?xml version=\"1.0\"@?><a/>", "in the XML declaration"),
    ];

    /// Every character XML 1.0 forbids that UTF-8 can carry but NUL (the
    /// loader calls a file with a NUL binary before reading it).
    fn forbidden() -> impl Iterator<Item = char> {
        (1u32..0x20)
            .filter(|c| !matches!(c, 9 | 10 | 13))
            .chain([0xFFFE, 0xFFFF])
            .map(|c| char::from_u32(c).unwrap())
    }

    #[test]
    fn a_forbidden_character_is_a_fault_wherever_it_sits_with_its_exact_span() {
        for &(template, place) in PLACES {
            for c in forbidden() {
                let src = template.replace('@', &c.to_string());
                let (message, covered, help) = fault_of(&src);
                let name = format!("U+{:04X}", c as u32);
                assert_eq!(covered, c.to_string(), "{src:?}: {message}");
                assert!(message.contains(&name), "{src:?}: {message}");
                assert!(message.contains(place), "{src:?}: {message}");
                assert!(message.contains("not allowed in XML"), "{src:?}: {message}");
                assert!(help.starts_with("remove it"), "{help}");
            }
        }
    }

    /// A large file's NUL is looked for on a second thread: the verdict is
    /// the one-thread one (the first NUL, and invalid UTF-8 before it wins).
    #[test]
    fn a_nul_in_a_large_file_is_found_where_it_is_and_after_the_utf8_check() {
        let mut bytes = vec![b' '; PARALLEL_DECODE_MIN_BYTES + 4321];
        bytes[PARALLEL_DECODE_MIN_BYTES + 7] = 0;
        bytes[PARALLEL_DECODE_MIN_BYTES + 9] = 0;
        let e = decode(&bytes).expect_err("a NUL");
        let at = PARALLEL_DECODE_MIN_BYTES + 7;
        assert_eq!(e.span, Span::new(at, at + 1));
        assert!(e.message.contains("NUL byte"), "{}", e.message);
        bytes[10] = 0xFF;
        let e = decode(&bytes).expect_err("invalid UTF-8");
        assert!(!e.message.contains("NUL"), "{}", e.message);
        assert_eq!(e.span.start(), 10);
        bytes[10] = b' ';
        bytes[PARALLEL_DECODE_MIN_BYTES + 7] = b' ';
        bytes[PARALLEL_DECODE_MIN_BYTES + 9] = b' ';
        assert!(decode(&bytes).is_ok());
    }

    /// XML allows only comments, processing instructions and whitespace
    /// around the root element: a reference or a CDATA section there is
    /// text, and a fault at exactly its bytes (quick-xml hands them over as
    /// their own events, which the loader once dropped).
    #[test]
    fn a_reference_or_cdata_outside_the_root_is_text_outside_the_root() {
        for (src, covered) in [
            ("<a/>&amp;", "&amp;"),
            ("<a/>\n&#65;\n", "&#65;"),
            ("&lt;<a/>", "&lt;"),
            ("<a/><![CDATA[x]]>", "<![CDATA[x]]>"),
            ("<![CDATA[]]><a/>", "<![CDATA[]]>"),
        ] {
            let (message, at, help) = fault_of(src);
            assert!(
                message.starts_with("text outside the root element"),
                "{src:?}: {message}"
            );
            assert_eq!(at, covered, "{src:?}");
            assert!(help.contains("inside <bpmn:definitions>"), "{help}");
        }
        // Inside the root they are text as before.
        assert!(parse("<a>&amp;&#65;<![CDATA[x]]></a>").is_ok());
        // An unknown entity outside the root is first text outside it.
        assert!(fault_of("<a/>&nbsp;")
            .0
            .starts_with("text outside the root element"));
    }

    #[test]
    fn allowed_characters_are_accepted_everywhere() {
        for &(template, _) in PLACES {
            // Text outside the root or in a declaration is a fault of its
            // own whatever it is; whitespace is not.
            for c in [
                '\t', '\n', '\r', '\u{85}', '\u{2028}', '\u{FFFD}', '\u{FFEF}', '😀',
            ] {
                let src = template.replace('@', &c.to_string());
                let plain = template.replace('@', "");
                if parse(&plain).is_ok() {
                    let r = parse(&src);
                    if let Err(e) = &r {
                        assert!(
                            !e.message.contains("not allowed in XML"),
                            "{src:?}: {}",
                            e.message
                        );
                    }
                }
            }
        }
        let ok = "<a b=\"\t\u{85}\u{2028}😀\u{10FFFF}\u{FFFD}\">\r\n\t\u{FFEF}<![CDATA[\u{2028}]]><!--😀--></a>";
        parse(ok).unwrap();
    }

    #[test]
    fn a_reference_to_a_forbidden_character_is_a_fault_spanning_the_reference() {
        let refs = [
            ("&#1;", "U+0001"),
            ("&#x1F;", "U+001F"),
            ("&#x1f;", "U+001F"),
            ("&#0;", "U+0000"),
            ("&#x0;", "U+0000"),
            ("&#11;", "U+000B"),
            ("&#xFFFE;", "U+FFFE"),
            ("&#65535;", "U+FFFF"),
            ("&#xD800;", "U+D800"),
            ("&#x110000;", "beyond the last character U+10FFFF"),
        ];
        for (reference, named) in refs {
            for (template, place) in [
                ("<a>x @ y</a>", "in the text of <a>"),
                ("<a b=\"x &amp; @\"/>", "in the value of attribute `b`"),
                ("<a b='@'/>", "in the value of attribute `b`"),
            ] {
                let src = template.replace('@', reference);
                let (message, covered, help) = fault_of(&src);
                assert_eq!(covered, reference, "{src:?}: {message}");
                assert!(message.contains(named), "{src:?}: {message}");
                assert!(message.contains(place), "{src:?}: {message}");
                assert!(help.contains("not even as a reference"), "{help}");
            }
        }
        // Allowed references still resolve.
        let doc = parse("<a b=\"&#9;&#x85;&#x1F600;\">x&#10;&#xD;&#x2028;&#xFFFD;</a>").unwrap();
        let a = doc.element(doc.root);
        assert_eq!(a.attr("b").unwrap().value, "\t\u{85}😀");
        assert_eq!(a.text, "x\n\r\u{2028}\u{FFFD}");
    }

    #[test]
    fn the_first_fault_in_document_order_is_the_verdict() {
        // Two forbidden characters: the first.
        let (_, covered, _) = fault_of("<a>\u{2}<b>\u{1}</b></a>");
        assert_eq!(covered, "\u{2}");
        // A raw one after a reference to one in the same tag: the reference.
        let (_, covered, _) = fault_of("<a b=\"&#1;\" c=\"\u{2}\"/>");
        assert_eq!(covered, "&#1;");
        let (_, covered, _) = fault_of("<a b=\"\u{2}\" c=\"&#1;\"/>");
        assert_eq!(covered, "\u{2}");
        // Another fault before it wins; one after it loses.
        let (message, _, _) = fault_of("<a b=\"1\" b=\"\u{1}\"/>");
        assert!(message.contains("appears twice"), "{message}");
        let (message, _, _) = fault_of("<a b=\"\u{1}\" b=\"1\"/>");
        assert!(message.contains("U+0001"), "{message}");
        let (message, _, _) = fault_of("<a></b>\u{1}</a>");
        assert!(!message.contains("U+0001"), "{message}");
        let (message, _, _) = fault_of("<a>\u{1}</b></a>");
        assert!(message.contains("U+0001"), "{message}");
        // Markup that is never finished is at fault where it starts.
        let (message, _, _) = fault_of("<a><!-- \u{1}");
        assert!(message.contains("comment not closed"), "{message}");
        let (message, covered, _) = fault_of("<a>\u{1}<!-- ");
        assert_eq!(covered, "\u{1}", "{message}");
    }
}
