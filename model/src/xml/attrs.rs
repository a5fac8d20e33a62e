//! Start-tag attributes, lexed on demand.
//!
//! A modeller's file has about two attributes per element, and materializing
//! each one (names, value, namespace, three spans) costs more memory than the
//! source text itself: on a 12 MB model that alone would break the 100 MB
//! budget. So the parser validates every start tag once, and an element keeps
//! only its raw tag text and the namespaces of its prefixed attributes; the
//! accessors lex the tag again when asked, which is cheaper than allocating.

use std::borrow::Cow;

use crate::span::Span;

use super::XMLNS_NS;

/// One attribute as written, with its resolved namespace and spans.
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
        is_xmlns(self.qname)
    }
}

pub(super) fn is_xmlns(qname: &str) -> bool {
    qname == "xmlns" || qname.starts_with("xmlns:")
}

/// The local part of a qualified name.
pub(super) fn local_of(qname: &str) -> &str {
    // A plain loop: names are short, and `rfind` pays for a memrchr call.
    match qname.bytes().rposition(|b| b == b':') {
        Some(i) => &qname[i + 1..],
        None => qname,
    }
}

/// The attributes of one element. Iterate with `for a in &el.attrs` or
/// [`Attrs::iter`]; each item is built from the source when it is reached.
#[derive(Debug, Clone)]
pub struct Attrs<'a> {
    /// The start tag after the element name, up to (not including) `>` or `/>`.
    tag: &'a str,
    /// Namespace URIs of the prefixed, non-`xmlns` attributes, in order.
    prefixed: Option<Box<[Cow<'a, str>]>>,
    /// Where `tag` starts in the source (the parser refuses sources over 4 GiB).
    offset: u32,
    /// Whether any value contains `&` (most do not, and are borrowed as written).
    escaped: bool,
}

impl<'a> Attrs<'a> {
    pub(super) fn new(
        tag: &'a str,
        offset: usize,
        prefixed: Vec<Cow<'a, str>>,
        escaped: bool,
    ) -> Self {
        Attrs {
            tag,
            prefixed: (!prefixed.is_empty()).then(|| prefixed.into_boxed_slice()),
            offset: u32::try_from(offset).unwrap_or(u32::MAX),
            escaped,
        }
    }

    pub fn iter(&self) -> AttrIter<'a, '_> {
        AttrIter {
            attrs: self,
            at: 0,
            prefixed_seen: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// The first attribute whose qualified name satisfies `wanted`, built only
    /// once found (the common lookups never unescape the other values).
    pub(super) fn find(
        &self,
        mut wanted: impl FnMut(&str) -> bool,
        ns: Option<&str>,
    ) -> Option<XmlAttr<'a>> {
        let mut it = self.iter();
        while let Some(Ok(raw)) = next_raw(it.attrs.tag.as_bytes(), &mut it.at) {
            let qname = &self.tag[raw.name.0..raw.name.1];
            let prefixed_index = it.note_prefixed(qname);
            if wanted(qname) {
                let a = self.build(raw, prefixed_index);
                if a.ns.as_deref() == ns {
                    return Some(a);
                }
            }
        }
        None
    }

    fn build(&self, raw: RawAttr, prefixed_index: Option<usize>) -> XmlAttr<'a> {
        let qname = &self.tag[raw.name.0..raw.name.1];
        let ns = if is_xmlns(qname) {
            Some(Cow::Borrowed(XMLNS_NS))
        } else {
            prefixed_index.and_then(|i| self.prefixed.as_ref()?.get(i).cloned())
        };
        build(self.tag, self.offset as usize, raw, ns, self.escaped)
    }
}

/// One attribute of `tag` (which starts at `offset` in the source), its
/// namespace resolved; `escaped`: whether any value of the tag has an escape.
pub(super) fn build<'a>(
    tag: &'a str,
    offset: usize,
    raw: RawAttr,
    ns: Option<Cow<'a, str>>,
    escaped: bool,
) -> XmlAttr<'a> {
    let qname = &tag[raw.name.0..raw.name.1];
    let raw_value = &tag[raw.value.0..raw.value.1];
    let value = if escaped && raw_value.contains('&') {
        // Validated when the document was parsed.
        quick_xml::escape::unescape(raw_value).unwrap_or(Cow::Borrowed(raw_value))
    } else {
        Cow::Borrowed(raw_value)
    };
    XmlAttr {
        ns,
        local: local_of(qname),
        qname,
        value,
        span: Span::new(offset + raw.name.0, offset + raw.value.1 + 1),
        name_span: Span::new(offset + raw.name.0, offset + raw.name.1),
        value_span: Span::new(offset + raw.value.0, offset + raw.value.1),
    }
}

/// Iterator over [`Attrs`]; yields owned attributes borrowing the source.
pub struct AttrIter<'a, 'b> {
    attrs: &'b Attrs<'a>,
    at: usize,
    prefixed_seen: usize,
}

impl AttrIter<'_, '_> {
    /// The index among prefixed attributes, if `qname` is one.
    fn note_prefixed(&mut self, qname: &str) -> Option<usize> {
        if qname.contains(':') && !is_xmlns(qname) {
            self.prefixed_seen += 1;
            Some(self.prefixed_seen - 1)
        } else {
            None
        }
    }
}

impl<'a> Iterator for AttrIter<'a, '_> {
    type Item = XmlAttr<'a>;

    fn next(&mut self) -> Option<XmlAttr<'a>> {
        let raw = next_raw(self.attrs.tag.as_bytes(), &mut self.at)?.ok()?;
        let qname = &self.attrs.tag[raw.name.0..raw.name.1];
        let index = self.note_prefixed(qname);
        Some(self.attrs.build(raw, index))
    }
}

impl<'a, 'b> IntoIterator for &'b Attrs<'a> {
    type Item = XmlAttr<'a>;
    type IntoIter = AttrIter<'a, 'b>;

    fn into_iter(self) -> AttrIter<'a, 'b> {
        self.iter()
    }
}

/// Byte ranges of one attribute inside a tag: the name, and the value inside the quotes.
#[derive(Debug, Clone, Copy)]
pub(super) struct RawAttr {
    pub name: (usize, usize),
    pub value: (usize, usize),
}

/// A fault in a start tag, at a byte offset inside it.
#[derive(Debug)]
pub(super) struct LexError {
    pub at: usize,
    pub message: &'static str,
    pub help: &'static str,
}

/// The next `name="value"` of a tag from `*i`, or `None` at its end.
pub(super) fn next_raw(bytes: &[u8], i: &mut usize) -> Option<Result<RawAttr, LexError>> {
    let fault = |at: usize, message, help| Some(Err(LexError { at, message, help }));
    let skip_ws = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    skip_ws(i);
    if *i >= bytes.len() || bytes[*i] == b'/' {
        return None;
    }
    let name_start = *i;
    while *i < bytes.len() && !bytes[*i].is_ascii_whitespace() && bytes[*i] != b'=' {
        *i += 1;
    }
    let name_end = *i;
    skip_ws(i);
    if *i >= bytes.len() || bytes[*i] != b'=' {
        return fault(
            name_start,
            "attribute without a value",
            "write attributes as name=\"value\"",
        );
    }
    *i += 1;
    skip_ws(i);
    let quote = match bytes.get(*i) {
        Some(q @ (b'"' | b'\'')) => *q,
        _ => {
            return fault(
                *i,
                "attribute value is not quoted",
                "quote attribute values: name=\"value\"",
            )
        }
    };
    *i += 1;
    let value_start = *i;
    match bytes[value_start..].iter().position(|&b| b == quote) {
        Some(len) => *i = value_start + len,
        None => {
            return fault(
                value_start,
                "attribute value is never closed",
                "add the closing quote",
            )
        }
    }
    let value_end = *i;
    *i += 1;
    Some(Ok(RawAttr {
        name: (name_start, name_end),
        value: (value_start, value_end),
    }))
}
