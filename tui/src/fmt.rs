//! Compact time text for tables: panels are narrow, so `13h 1m` rather than
//! the `13 h 1 min` of reports.

/// A span of time: `0s`, `45s`, `1m`, `1m 30s`, `2h 36m`, `1d 2h`.
/// Shows the two largest non-zero units; sub-second remainders are dropped
/// (the engine's [`qflow_engine::duration::compact_ms`], shared with `qflow run`).
pub fn span(ms: i64) -> String {
    qflow_engine::duration::compact_ms(ms)
}

/// A point on the virtual time axis, with the `+` that says "since start".
pub fn at(ms: i64) -> String {
    format!("+{}", span(ms))
}

/// How far a due time is from now: `in 4m 59s`, `due now`, `overdue 3s`.
pub fn until(due_ms: i64, now_ms: i64) -> String {
    let d = due_ms - now_ms;
    if d > 0 {
        format!("in {}", span(d))
    } else if d == 0 {
        "due now".to_string()
    } else {
        format!("overdue {}", span(-d))
    }
}

/// A count and its noun, singular for one: `1 key`, `3 keys`, `0 keys`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Cut a string to `width` characters, marking the cut with `…`.
pub fn clip(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_show_the_two_largest_units() {
        assert_eq!(span(0), "0s");
        assert_eq!(span(999), "0s");
        assert_eq!(span(45_000), "45s");
        assert_eq!(span(60_000), "1m");
        assert_eq!(span(90_000), "1m 30s");
        assert_eq!(span(1_860_000), "31m");
        assert_eq!(span(46_860_000), "13h 1m");
        assert_eq!(span(90_061_000), "1d 1h");
        assert_eq!(span(86_400_000 + 61_000), "1d");
        assert_eq!(at(360_000), "+6m");
        assert_eq!(until(360_000, 61_000), "in 4m 59s");
        assert_eq!(until(5, 5), "due now");
        assert_eq!(until(0, 3000), "overdue 3s");
    }

    #[test]
    fn counts_are_singular_for_one() {
        assert_eq!(count(1, "key", "keys"), "1 key");
        assert_eq!(count(0, "key", "keys"), "0 keys");
        assert_eq!(count(2, "attempt", "attempts"), "2 attempts");
    }

    #[test]
    fn clip_marks_the_cut() {
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
        assert_eq!(clip("abc", 0), "");
    }
}
