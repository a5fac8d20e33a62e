//! The characters XML 1.0 forbids (its `Char` production): the C0 control
//! characters other than TAB, LF and CR (U+0000–U+0008, U+000B, U+000C,
//! U+000E–U+001F) and the noncharacters U+FFFE and U+FFFF. Surrogates
//! cannot occur in UTF-8, which the loader requires.
//!
//! quick-xml lets them through, but a document holding one is not
//! well-formed and Java's parsers (Camunda, Flowable) refuse it, so a
//! model qflow called clean would fail to deploy elsewhere. Every byte of
//! every document is looked at, so the scan is built for speed: blocks of
//! 64 bytes tested without a branch per byte (the compiler turns the loops
//! into vector compares), a block looked at byte by byte only when it
//! holds one.
//! The scan runs ahead of the tokenizer in chunks that stay in cache
//! ([`Ahead`]), inside whichever thread reads that part of the document.

/// Bytes scanned at a time ahead of the tokenizer: small enough to stay in
/// the first level caches for the tokenizer that follows, large enough
/// that the per-chunk work is negligible.
const CHUNK: usize = 16 * 1024;

/// A character XML 1.0 forbids, as a number (`0x1`, `0xFFFE`, a surrogate
/// or beyond U+10FFFF for a character reference).
pub(super) fn is_forbidden(code: u32) -> bool {
    matches!(code, 0..=0x8 | 0xB | 0xC | 0xE..=0x1F | 0xD800..=0xDFFF | 0xFFFE | 0xFFFF)
        || code > 0x10FFFF
}

/// Whether a forbidden character starts at byte `i`, and its length.
fn forbidden_at(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes[i] {
        b'\t' | b'\n' | b'\r' => None,
        b if b < 0x20 => Some(1),
        0xEF if bytes.get(i + 1) == Some(&0xBF)
            && matches!(bytes.get(i + 2), Some(0xBE | 0xBF)) =>
        {
            Some(3)
        }
        _ => None,
    }
}

/// Whether `block` holds a byte that may start a forbidden character: a
/// control byte other than LF, or a byte from `EF` up (`EF` starts
/// U+F000–U+FFFF, `F0`–`F4` the characters beyond U+FFFF: rare in any
/// script). Tab and CR are let through here and sorted out by
/// [`holds_forbidden`]. One `min` and one `max` a byte, no branch, so it
/// vectorizes, and the lanes are folded once per block.
#[inline]
fn may_hold(block: &[u8; BLOCK]) -> bool {
    let mut low = u8::MAX;
    let mut high = 0u8;
    for &b in block {
        // LF becomes 31, every other control byte less.
        low = low.min(b ^ 0x15);
        high = high.max(b);
    }
    low < 31 || high >= 0xEF
}

/// Whether the 64 bytes of `block` (and the byte after them, `next`) hold
/// the start of a forbidden character; no branch per byte.
#[inline]
fn holds_forbidden(block: &[u8], next: u8) -> bool {
    let mut acc = 0u8;
    for j in 0..block.len() {
        let b = block[j];
        let after = if j + 1 < block.len() {
            block[j + 1]
        } else {
            next
        };
        let white = u8::from(b == b'\t') | u8::from(b == b'\n') | u8::from(b == b'\r');
        acc |= (u8::from(b < 0x20) & !white) | (u8::from(b == 0xEF) & u8::from(after == 0xBF));
    }
    acc & 1 != 0
}

/// Bytes the quick test folds at once: a model indented with spaces and
/// LF line ends passes most blocks with it alone.
const BLOCK: usize = 256;

/// The first forbidden character starting in `bytes[from..to]` (it may
/// end after `to`): its offset and length in bytes.
pub(super) fn first_forbidden(bytes: &[u8], from: usize, to: usize) -> Option<(usize, usize)> {
    let to = to.min(bytes.len());
    let mut i = from;
    while i < to {
        let end = (i + BLOCK).min(to);
        let flagged = match bytes[i..end].try_into() {
            Ok(block) => may_hold(block),
            Err(_) => true,
        };
        if flagged {
            for sub in (i..end).step_by(64) {
                let sub_end = (sub + 64).min(end);
                let next = bytes.get(sub_end).copied().unwrap_or(0);
                if holds_forbidden(&bytes[sub..sub_end], next) {
                    return (sub..sub_end).find_map(|k| forbidden_at(bytes, k).map(|n| (k, n)));
                }
            }
        }
        i = end;
    }
    None
}

/// The scan of one reader's range, kept ahead of its tokenizer: the first
/// forbidden character is found at most [`CHUNK`] bytes before the
/// tokenizer reaches it, and the bytes scanned are still in cache when it
/// does.
pub(super) struct Ahead {
    /// Every byte before it is known clean: asked about an event that ends
    /// there or before, the answer is one comparison.
    clean: usize,
    scanned: usize,
    found: Option<(usize, usize)>,
    /// The fault of a forbidden character in the event being read, to be
    /// returned unless the event has a fault of its own before it.
    pub(super) pending: Option<super::XmlError>,
}

impl Ahead {
    pub(super) fn from(at: usize) -> Self {
        Ahead {
            clean: at,
            scanned: at,
            found: None,
            pending: None,
        }
    }

    /// The first forbidden character found, once [`Ahead::scan_to`]
    /// returned a `clean` short of where it was asked to scan (so one was).
    pub(super) fn first(&self) -> (usize, usize) {
        self.found.unwrap_or((self.clean, 1))
    }

    /// The first forbidden character in the range that starts before `to`.
    pub(super) fn before(&mut self, bytes: &[u8], to: usize) -> Option<(usize, usize)> {
        self.scan_to(bytes, to);
        self.found.filter(|&(at, _)| at < to)
    }

    /// Scan at least up to `to`; returns the new [`Ahead::clean`].
    #[inline(never)]
    pub(super) fn scan_to(&mut self, bytes: &[u8], to: usize) -> usize {
        while self.found.is_none() && self.scanned < to {
            let end = (self.scanned + CHUNK).max(to).min(bytes.len());
            self.found = first_forbidden(bytes, self.scanned, end);
            self.scanned = end;
        }
        self.clean = self.found.map_or(self.scanned, |(at, _)| at);
        self.clean
    }
}

/// `U+0001`, as messages name a character.
pub(super) fn name(code: u32) -> String {
    format!("U+{code:04X}")
}

/// The code point of the forbidden character at `bytes[at..at + len]`.
pub(super) fn code_at(bytes: &[u8], at: usize, len: usize) -> u32 {
    match len {
        1 => u32::from(bytes[at]),
        _ => 0xFFC0 | u32::from(bytes[at + 2] & 0x3F),
    }
}

/// A character reference's number (`#1`, `#x1F` without `&` and `;`), if
/// it is one: `None` for any other entity name or a malformed number.
pub(super) fn char_ref_code(name: &str) -> Option<u32> {
    let num = name.strip_prefix('#')?;
    let (digits, radix) = match num.strip_prefix('x') {
        Some(hex) => (hex, 16),
        None => (num, 10),
    };
    if digits.is_empty() || !digits.bytes().all(|b| (b as char).is_digit(radix)) {
        return None;
    }
    // Leading zeros are allowed; a number too large for u32 is beyond
    // U+10FFFF all the same.
    let significant = digits.trim_start_matches('0');
    Some(
        u32::from_str_radix(significant, radix).unwrap_or(if significant.is_empty() {
            0
        } else {
            u32::MAX
        }),
    )
}

/// The first character reference in an attribute value (`x &#1; y`) to
/// a character XML 1.0 forbids, before any malformed reference (which the
/// unescaping reports): its offset, length and code point.
pub(super) fn forbidden_ref_in(value: &str) -> Option<(usize, usize, u32)> {
    for amp in memchr::memchr_iter(b'&', value.as_bytes()) {
        let len = value[amp..].find(';')? + 1;
        let name = &value[amp + 1..amp + len - 1];
        match char_ref_code(name) {
            Some(code) if is_forbidden(code) => return Some((amp, len, code)),
            Some(_) => {}
            None if matches!(name, "lt" | "gt" | "amp" | "apos" | "quot") => {}
            None => return None,
        }
    }
    None
}

/// How a message names a code point (`U+0001`; one beyond Unicode is
/// named as the number it is).
pub(super) fn describe(code: u32) -> String {
    if code > 0x10FFFF {
        format!("the number {code}, beyond the last character U+10FFFF")
    } else {
        name(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_forbidden_byte_and_noncharacter_is_found_wherever_it_sits_in_a_block() {
        for len in [1usize, 63, 64, 65, 130, 200] {
            for at in 0..len {
                for bad in (0u8..0x20).filter(|b| !matches!(b, b'\t' | b'\n' | b'\r')) {
                    let mut s = vec![b'a'; len];
                    s[at] = bad;
                    assert_eq!(
                        first_forbidden(&s, 0, len),
                        Some((at, 1)),
                        "{len} {at} {bad}"
                    );
                }
                for last in [0xBE, 0xBF] {
                    let mut s = vec![b'a'; len + 2];
                    s[at..at + 3].copy_from_slice(&[0xEF, 0xBF, last]);
                    assert_eq!(first_forbidden(&s, 0, len), Some((at, 3)), "{len} {at}");
                    assert_eq!(code_at(&s, at, 3), 0xFFFE | u32::from(last & 1));
                }
            }
        }
    }

    #[test]
    fn allowed_text_is_not_flagged() {
        let text =
            "\t\n\r <a b=\"x\u{85}\u{2028}\u{FFFD}\u{FFEF}\u{FFC0}\u{10FFFF}😀é\"/>".repeat(40);
        assert_eq!(first_forbidden(text.as_bytes(), 0, text.len()), None);
    }

    #[test]
    fn the_first_of_two_is_found_and_a_range_ends_where_it_says() {
        let mut s = vec![b' '; 300];
        s[70] = 1;
        s[250] = 0x1F;
        assert_eq!(first_forbidden(&s, 0, 300), Some((70, 1)));
        assert_eq!(first_forbidden(&s, 71, 300), Some((250, 1)));
        assert_eq!(first_forbidden(&s, 0, 70), None);
        let mut ahead = Ahead::from(0);
        assert_eq!(ahead.before(&s, 70), None);
        assert_eq!(ahead.before(&s, 71), Some((70, 1)));
    }

    #[test]
    fn character_reference_numbers() {
        assert_eq!(char_ref_code("#1"), Some(1));
        assert_eq!(char_ref_code("#x1F"), Some(0x1F));
        assert_eq!(char_ref_code("#x0000FFFE"), Some(0xFFFE));
        assert_eq!(char_ref_code("#0"), Some(0));
        assert_eq!(char_ref_code("#99999999999"), Some(u32::MAX));
        assert_eq!(char_ref_code("#x"), None);
        assert_eq!(char_ref_code("amp"), None);
        assert!(is_forbidden(0xD800) && is_forbidden(0x110000) && is_forbidden(0));
        assert!(!is_forbidden(9) && !is_forbidden(0x85) && !is_forbidden(0xFFFD));
    }
}
