//! Numbers in DI attributes, read as the BPMN tools of the web read them.
//!
//! bpmn-moddle, under bpmnlint and bpmn-js, turns a `Real` attribute
//! (`dc:Bounds`' `x`, `y`, `width`, `height`, a waypoint's `x` and `y`) into
//! a number with JavaScript's `parseFloat`: leading blanks skipped, then the
//! longest prefix that is a decimal number, the rest ignored. So
//! `width="100px"` is 100 to them, and qflow's diagram rules and drawing
//! read it the same way, so both tools judge the same shapes.

/// `parseFloat(text)`: the longest decimal prefix after leading blanks
/// (`12px` → 12, `.5e1x` → 5, `Infinity` → ∞), NaN when there is none
/// (`px`, `0x` → 0 but `x1` → NaN, `inf` and `NaN` → NaN).
pub fn parse_float(text: &str) -> f64 {
    // A plain number (the bounds of every modeller's file) reads the same
    // in Rust's grammar as in JavaScript's: a finite result is the answer.
    // Rust alone also reads `inf` and `nan`, which are not finite.
    if let Ok(n) = text.parse::<f64>() {
        if n.is_finite() {
            return n;
        }
    }
    let s = text.trim_start_matches(is_js_blank);
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    if b[i..].starts_with(b"Infinity") {
        return if b[0] == b'-' {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int = digits(i);
    let mut end = i + int;
    let mut frac = 0;
    if b.get(end) == Some(&b'.') {
        frac = digits(end + 1);
        if int > 0 || frac > 0 {
            end += 1 + frac;
        }
    }
    if int == 0 && frac == 0 {
        return f64::NAN;
    }
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let mut j = end + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp = digits(j);
        if exp > 0 {
            end = j + exp;
        }
    }
    // What is left is digits, at most one point, and an exponent: a form
    // Rust's own parser reads exactly ("5." and ".5" included).
    s[..end].parse().unwrap_or(f64::NAN)
}

/// JavaScript's white space and line terminators (what `parseFloat` skips).
fn is_js_blank(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{b}'
            | '\u{c}'
            | '\r'
            | ' '
            | '\u{a0}'
            | '\u{feff}'
            | '\u{2028}'
            | '\u{2029}'
    ) || (c.is_whitespace() && c != '\u{85}')
}

#[cfg(test)]
mod tests {
    use super::parse_float;

    /// Each case as Node's `parseFloat` answers it (Node 20).
    #[test]
    fn reads_what_javascript_reads() {
        let cases: &[(&str, f64)] = &[
            ("12", 12.0),
            ("12px", 12.0),
            ("  12.5  ", 12.5),
            ("\u{a0}\t7", 7.0),
            ("-3.25e2", -325.0),
            ("+4", 4.0),
            ("5.", 5.0),
            (".5", 0.5),
            (".5e1x", 5.0),
            ("1e", 1.0),
            ("1e+", 1.0),
            ("1e-2", 0.01),
            ("0x10", 0.0),
            ("1_000", 1.0),
            ("12 34", 12.0),
            ("Infinity", f64::INFINITY),
            ("-Infinityx", f64::NEG_INFINITY),
            ("+Infinity", f64::INFINITY),
            ("+.5", 0.5),
            ("1E3", 1000.0),
            ("1e400", f64::INFINITY),
        ];
        for &(text, want) in cases {
            assert_eq!(parse_float(text), want, "parseFloat({text:?})");
        }
        for text in [
            "", "px", "x1", ".", "-", "+.", "e5", "inf", "NaN", "infinity", "\u{85}1",
        ] {
            assert!(parse_float(text).is_nan(), "parseFloat({text:?}) is NaN");
        }
    }
}
