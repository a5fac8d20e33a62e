//! Byte ranges into the source text.
//!
//! Every model element and attribute keeps the byte range it was read from, so a
//! single diagnostic can be rendered as a miette report (byte offsets) in the
//! terminal and as an LSP diagnostic (UTF-16 positions) in the editor. The
//! line and UTF-16 conversions live here, so every face agrees on them.

use serde::Serialize;

/// A half-open byte range `[start, end)` into the source the model was loaded from.
///
/// Kept as two `u32`s: every attribute, id, reference and node of a model
/// holds two or more spans, and at 16 bytes a span they were a fifth of a
/// large model's memory (the model of a 20,000-task document, and the
/// pages the loader touches to build it, shrank by ~10 MB at 8). A document
/// of 4 GiB or more is refused before it is read
/// ([`crate::reader::MAX_SOURCE_LEN`]), so every offset fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, Serialize)]
pub struct Span {
    start: u32,
    end: u32,
}

impl Span {
    /// The range `[start, end)`. Offsets past `u32::MAX` cannot occur in a
    /// document the reader accepts; were one passed, it saturates there.
    pub const fn new(start: usize, end: usize) -> Self {
        Span {
            start: clamp(start),
            end: clamp(end),
        }
    }

    /// An empty span at one offset: used for "here" positions (e.g. the first XML fault).
    pub const fn at(offset: usize) -> Self {
        Span::new(offset, offset)
    }

    /// The first byte.
    pub const fn start(&self) -> usize {
        self.start as usize
    }

    /// One past the last byte.
    pub const fn end(&self) -> usize {
        self.end as usize
    }

    pub const fn len(&self) -> usize {
        self.end() - self.start()
    }

    pub const fn is_empty(&self) -> bool {
        self.start == self.end
    }

    pub fn contains(&self, offset: usize) -> bool {
        self.start() <= offset && offset < self.end()
    }

    /// The bytes it covers, as a range to index the source with.
    pub const fn range(&self) -> std::ops::Range<usize> {
        self.start()..self.end()
    }
}

const fn clamp(offset: usize) -> u32 {
    if offset > u32::MAX as usize {
        u32::MAX
    } else {
        offset as u32
    }
}

/// A position resolved against a source text, in every unit a face may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Position {
    /// 0-based line.
    pub line: usize,
    /// 0-based column in Unicode scalar values (characters), as a terminal user counts.
    pub column_chars: usize,
    /// 0-based column in UTF-16 code units, as LSP counts.
    pub column_utf16: usize,
}

/// Line index over a source text: maps byte offsets to line/column and back.
///
/// Lines end at `\n`; a `\r` before it belongs to the line break, so CRLF files
/// get the same columns as LF files.
///
/// An index may cover only the text up to some offset ([`LineIndex::up_to`]):
/// a report that resolves a few offsets near the top of a 12 MB model need
/// not find its 250,000 line breaks. Offsets past what it covers are still
/// resolved correctly, by scanning the rest of the way each time.
#[derive(Debug, Clone)]
pub struct LineIndex {
    line_starts: Vec<usize>,
    /// Every line start at or before this offset is in `line_starts`.
    covered: usize,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        Self::up_to(text, text.len())
    }

    /// An index of the lines that start at or before `end`: resolving an
    /// offset up to `end` costs what it costs in a whole index; beyond it,
    /// a scan from `end`.
    pub fn up_to(text: &str, end: usize) -> Self {
        let end = end.min(text.len());
        // memchr scans a word at a time: this runs on every keystroke in the
        // editor, over documents of many megabytes.
        let mut line_starts = Vec::with_capacity(end / 40 + 1);
        line_starts.push(0);
        line_starts.extend(memchr::memchr_iter(b'\n', &text.as_bytes()[..end]).map(|i| i + 1));
        LineIndex {
            line_starts,
            covered: end,
        }
    }

    /// Resolve a byte offset; offsets past the end clamp to the end, and offsets
    /// inside a multi-byte character clamp back to its first byte.
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let (line, start) = if offset > self.covered {
            // Past the index: the lines between its end and the offset.
            let rest = &text.as_bytes()[self.covered..offset];
            let known = self.line_starts.len() - 1;
            match memchr::memrchr(b'\n', rest) {
                Some(last) => (
                    known + memchr::memchr_iter(b'\n', rest).count(),
                    self.covered + last + 1,
                ),
                None => (known, self.line_starts[known]),
            }
        } else {
            let line = match self.line_starts.binary_search(&offset) {
                Ok(l) => l,
                Err(l) => l - 1,
            };
            (line, self.line_starts[line])
        };
        let prefix = &text[start..offset];
        let prefix = prefix.strip_suffix('\r').unwrap_or(prefix);
        Position {
            line,
            column_chars: prefix.chars().count(),
            column_utf16: prefix.encode_utf16().count(),
        }
    }

    /// The byte offset of a 0-based line and UTF-16 column (LSP positions).
    /// Columns past the end of the line clamp to the line's end.
    pub fn offset_utf16(&self, text: &str, line: usize, column_utf16: usize) -> usize {
        if line + 1 >= self.line_starts.len() && self.covered < text.len() {
            // The line (or its end) lies past what this index covers.
            return LineIndex::new(text).offset_utf16(text, line, column_utf16);
        }
        let Some(&start) = self.line_starts.get(line) else {
            return text.len();
        };
        let end = self
            .line_starts
            .get(line + 1)
            .copied()
            .unwrap_or(text.len());
        let line_text = &text[start..end];
        let mut units = 0;
        for (i, ch) in line_text.char_indices() {
            if units >= column_utf16 || ch == '\n' || ch == '\r' {
                return start + i;
            }
            units += ch.len_utf16();
        }
        end
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn offsets_keep_their_value_up_to_u32_max_and_saturate_past_it() {
        let s = Span::new(7, u32::MAX as usize);
        assert_eq!(
            (s.start(), s.end(), s.len()),
            (7, u32::MAX as usize, u32::MAX as usize - 7)
        );
        let past = Span::new(u32::MAX as usize + 5, u32::MAX as usize + 9);
        assert_eq!(
            (past.start(), past.end()),
            (u32::MAX as usize, u32::MAX as usize)
        );
        assert!(past.is_empty());
        assert_eq!(Span::new(3, 9).range(), 3..9);
    }

    use super::*;

    #[test]
    fn columns_count_characters_and_utf16_units() {
        let text = "a\n😀é<x/>\r\nz";
        let idx = LineIndex::new(text);
        let off = text.find("<x").unwrap();
        let p = idx.position(text, off);
        assert_eq!(p.line, 1);
        assert_eq!(p.column_chars, 2);
        assert_eq!(p.column_utf16, 3);
        assert_eq!(idx.offset_utf16(text, 1, 3), off);
        let z = idx.position(text, text.len() - 1);
        assert_eq!((z.line, z.column_chars), (2, 0));
    }

    #[test]
    fn an_index_up_to_an_offset_resolves_every_offset_as_a_whole_one() {
        let text = "<a>\r\n  😀é<x/>\n\n\tz\r\nlast é line";
        let whole = LineIndex::new(text);
        for end in 0..=text.len() + 2 {
            let part = LineIndex::up_to(text, end);
            for offset in 0..=text.len() + 1 {
                assert_eq!(
                    part.position(text, offset),
                    whole.position(text, offset),
                    "index up to {end}, offset {offset}"
                );
            }
            for line in 0..7 {
                for column in [0, 1, 3, 99] {
                    assert_eq!(
                        part.offset_utf16(text, line, column),
                        whole.offset_utf16(text, line, column),
                        "index up to {end}, line {line} column {column}"
                    );
                }
            }
        }
    }

    #[test]
    fn crlf_line_end_is_not_a_column() {
        let text = "ab\r\ncd";
        let idx = LineIndex::new(text);
        assert_eq!(idx.position(text, 2).column_chars, 2);
        assert_eq!(idx.position(text, 3).column_chars, 2);
        assert_eq!(idx.offset_utf16(text, 0, 99), 2);
    }
}
