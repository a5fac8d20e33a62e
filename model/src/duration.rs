//! ISO-8601 durations, the only way a qflow model writes time.
//!
//! qflow reads the `PnYnMnWnDTnHnMnS` form (every component optional, at least
//! one present, in this order, each at most once). Calendar units have no fixed
//! length, and a retry schedule must be the same on every machine and every
//! date, so qflow fixes them, like most workflow engines that accept them:
//!
//! | unit | length |
//! |---|---|
//! | `Y` | 365 days |
//! | `M` (before `T`) | 30 days |
//! | `W` | 7 days |
//! | `D` | 24 hours |
//!
//! Only the seconds component may carry a fraction (`PT1.5S`, or `PT1,5S` as
//! ISO allows), down to nanoseconds. Negative durations (`-PT1S`) are refused:
//! no qflow attribute means "in the past". Surrounding whitespace is ignored.
//!
//! Whether zero is acceptable is the caller's business (a timeout of `PT0S` is
//! an error, a backoff entry of `PT0S` is allowed on registered tasks): this
//! module only says what the text means.

use std::fmt;
use std::time::Duration;

const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;
const WEEK: u64 = 7 * DAY;
/// `M` before `T`: a month is fixed at 30 days.
const MONTH: u64 = 30 * DAY;
/// `Y`: a year is fixed at 365 days.
const YEAR: u64 = 365 * DAY;

/// Why a text is not an ISO-8601 duration, and where in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    /// What is wrong, in words a model author can act on.
    pub message: String,
    /// Byte offset into the text given to [`parse`] where the fault is.
    pub offset: usize,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DurationError {}

fn fault(offset: usize, message: impl Into<String>) -> DurationError {
    DurationError {
        message: message.into(),
        offset,
    }
}

/// A duration typed on the command line or at a console prompt: the short
/// form (`30s`, `5m`, `2h30m`, `1d 2h`: whole numbers, each with one of d,
/// h, m, s, largest unit first) or an ISO-8601 duration ([`parse`]), so
/// `--until 5m` and `--until PT5M` mean the same. A model's attributes take
/// ISO-8601 only. The error names a literal to write where one can be
/// guessed (`5 min`: write 5m or PT5M).
pub fn parse_input(text: &str) -> Result<Duration, DurationError> {
    if let Some(d) = short_form(text) {
        return Ok(d);
    }
    parse(text).map_err(|e| {
        let message = match guess(text) {
            Some(d) => format!(
                "`{}` is not a duration: write {} or {}",
                text.trim(),
                short(d),
                to_iso(d)
            ),
            None => format!("{} (or the short form: 90s, 5m, 2h30m, 1d)", e.message),
        };
        DurationError {
            message,
            offset: e.offset,
        }
    })
}

/// The short form: `30s`, `5m`, `2h30m`, `1d 2h` (spaces ignored). `None`
/// when the text is not of that form.
fn short_form(text: &str) -> Option<Duration> {
    const UNITS: [(char, u64); 4] = [('d', DAY), ('h', HOUR), ('m', MINUTE), ('s', 1)];
    let mut total: u64 = 0;
    let mut digits = String::new();
    let mut next_unit = 0;
    let mut any = false;
    for c in text.chars().filter(|c| !c.is_whitespace()) {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let i = UNITS[next_unit..].iter().position(|(u, _)| *u == c)? + next_unit;
        let n: u64 = digits.parse().ok()?;
        total = total.checked_add(n.checked_mul(UNITS[i].1)?)?;
        digits.clear();
        next_unit = i + 1;
        any = true;
    }
    (any && digits.is_empty()).then_some(Duration::from_secs(total))
}

/// What a near miss probably meant: a lower-case ISO duration (`pt5m`), a
/// unit in words or upper case (`5 min`, `2 hours`, `5M`), a bare number (seconds).
fn guess(text: &str) -> Option<Duration> {
    let t = text.trim();
    if let Ok(d) = parse(&t.to_ascii_uppercase()) {
        return Some(d);
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().ok().map(Duration::from_secs);
    }
    let mut lower = t.to_ascii_lowercase();
    for (words, unit) in [
        (&["seconds", "second", "secs", "sec"][..], "s"),
        (&["minutes", "minute", "mins", "min"][..], "m"),
        (&["hours", "hour", "hrs", "hr"][..], "h"),
        (&["days", "day"][..], "d"),
    ] {
        for w in words {
            lower = lower.replace(w, unit);
        }
    }
    short_form(&lower)
}

/// A duration in the short form, largest unit first (`2h30m`, `90s` stays `1m30s`).
fn short(d: Duration) -> String {
    let mut left = d.as_secs();
    if left == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    for (unit, len) in [('d', DAY), ('h', HOUR), ('m', MINUTE), ('s', 1)] {
        if left >= len {
            out.push_str(&format!("{}{unit}", left / len));
            left %= len;
        }
    }
    out
}

/// Parse an ISO-8601 duration such as `PT30S`, `PT1M`, `P2D`, `P1DT12H`, `PT0.25S`.
///
/// The error says what is wrong (`"`T` is missing before the hours: write PT1H"`),
/// because its message ends up verbatim in a QF008 diagnostic.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let lead = text.len() - text.trim_start().len();
    let s = text.trim();
    if s.is_empty() {
        return Err(fault(lead, "empty duration: write one like PT30S or P1D"));
    }
    let bytes = s.as_bytes();
    if bytes[0] == b'-' || bytes[0] == b'+' {
        return Err(fault(
            lead,
            "signed durations are not accepted: a qflow duration is always forward, e.g. PT30S",
        ));
    }
    if bytes[0] != b'P' {
        let hint = if let Some(iso) = short_form(s).map(to_iso) {
            format!("`{s}` is the short form, which a model does not take: write {iso}")
        } else if bytes[0] == b'p' {
            match parse(&s.to_ascii_uppercase()) {
                Ok(_) => format!(
                    "ISO-8601 durations are upper case: write {}",
                    s.to_ascii_uppercase()
                ),
                Err(_) => "ISO-8601 durations are upper case: write P…, e.g. PT30S".to_string(),
            }
        } else if s.bytes().all(|b| b.is_ascii_digit()) {
            format!("a bare number has no unit: write PT{s}S for {s} seconds")
        } else {
            "an ISO-8601 duration starts with P, e.g. PT30S, PT5M, P1D".to_string()
        };
        return Err(fault(lead, hint));
    }
    // Order of designators: date part Y M W D, then T, then time part H M S.
    const DATE: [(u8, u64); 4] = [(b'Y', YEAR), (b'M', MONTH), (b'W', WEEK), (b'D', DAY)];
    const TIME: [(u8, u64); 3] = [(b'H', HOUR), (b'M', MINUTE), (b'S', 1)];
    let mut total_secs: u64 = 0;
    let mut nanos: u32 = 0;
    let mut in_time = false;
    let mut saw_time_component = false;
    let mut saw_any = false;
    // Index of the next designator allowed in the current part.
    let mut next_slot = 0usize;
    let mut i = 1;
    let overflow = |at: usize| fault(lead + at, "duration too large");
    while i < bytes.len() {
        if bytes[i] == b'T' {
            if in_time {
                return Err(fault(lead + i, "`T` appears twice"));
            }
            in_time = true;
            next_slot = 0;
            i += 1;
            continue;
        }
        let num_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let int_end = i;
        let mut frac: Option<(usize, usize)> = None;
        if i < bytes.len() && (bytes[i] == b'.' || bytes[i] == b',') {
            i += 1;
            let fs = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            frac = Some((fs, i));
        }
        if num_start == int_end {
            let what = match bytes[num_start] {
                b if b.is_ascii_alphabetic() => {
                    format!("`{}` has no number before it", bytes[num_start] as char)
                }
                b' ' | b'\t' | b'\n' | b'\r' => {
                    "spaces are not allowed inside a duration".to_string()
                }
                _ => format!(
                    "unexpected `{}`",
                    s[num_start..].chars().next().unwrap_or('?')
                ),
            };
            return Err(fault(lead + num_start, what));
        }
        let Some(&designator) = bytes.get(i) else {
            return Err(fault(
                lead + num_start,
                format!(
                    "`{}` has no unit: end it with {}",
                    &s[num_start..],
                    if in_time {
                        "H, M or S"
                    } else {
                        "Y, M, W or D (or put T before hours, minutes, seconds)"
                    }
                ),
            ));
        };
        if designator.is_ascii_whitespace() {
            return Err(fault(lead + i, "spaces are not allowed inside a duration"));
        }
        if designator == b'T' {
            return Err(fault(
                lead + num_start,
                format!("`{}` has no unit before `T`", &s[num_start..i]),
            ));
        }
        let table: &[(u8, u64)] = if in_time { &TIME } else { &DATE };
        let Some(slot) = table.iter().position(|(d, _)| *d == designator) else {
            let msg = if !in_time && (designator == b'H' || designator == b'S') {
                format!(
                    "`T` is missing before the {}: write PT{}{}",
                    if designator == b'H' {
                        "hours"
                    } else {
                        "seconds"
                    },
                    &s[num_start..i],
                    designator as char
                )
            } else if in_time && (designator == b'D' || designator == b'W' || designator == b'Y') {
                format!(
                    "`{}` belongs before `T`: write P{}{}…",
                    designator as char,
                    &s[num_start..i],
                    designator as char
                )
            } else if designator.is_ascii_lowercase() {
                format!(
                    "unit `{}` must be upper case: `{}`",
                    designator as char,
                    designator.to_ascii_uppercase() as char
                )
            } else {
                format!(
                    "unknown unit `{}`: use Y, M, W, D before T and H, M, S after it",
                    s[i..].chars().next().unwrap_or('?')
                )
            };
            return Err(fault(lead + i, msg));
        };
        if slot < next_slot {
            return Err(fault(
                lead + i,
                format!(
                    "`{}` is repeated or out of order: the order is {}",
                    designator as char,
                    if in_time { "H, M, S" } else { "Y, M, W, D" }
                ),
            ));
        }
        next_slot = slot + 1;
        let unit = table[slot].1;
        if let Some((fs, fe)) = frac {
            if !(in_time && designator == b'S') {
                return Err(fault(
                    lead + num_start,
                    format!(
                        "only seconds may have a fraction: write `{}` in a smaller unit",
                        &s[num_start..=i]
                    ),
                ));
            }
            if fe == fs {
                return Err(fault(lead + fs, "a decimal point needs digits after it"));
            }
            let digits = &s[fs..fe];
            if digits.len() > 9 {
                return Err(fault(
                    lead + fs,
                    "at most 9 fractional digits (nanoseconds)",
                ));
            }
            let padded = format!("{digits:0<9}");
            nanos = padded.parse().map_err(|_| overflow(fs))?;
        }
        let value: u64 = s[num_start..int_end]
            .parse()
            .map_err(|_| overflow(num_start))?;
        let secs = value.checked_mul(unit).ok_or_else(|| overflow(num_start))?;
        total_secs = total_secs
            .checked_add(secs)
            .ok_or_else(|| overflow(num_start))?;
        saw_any = true;
        if in_time {
            saw_time_component = true;
        }
        i += 1;
        if frac.is_some() && i < bytes.len() {
            return Err(fault(
                lead + i,
                "the fractional seconds must be the last component",
            ));
        }
    }
    if in_time && !saw_time_component {
        return Err(fault(
            lead + s.len(),
            "`T` must be followed by hours, minutes or seconds, e.g. PT30S",
        ));
    }
    if !saw_any {
        return Err(fault(
            lead + s.len(),
            "`P` alone is not a duration: add a component, e.g. PT30S or P1D",
        ));
    }
    Ok(Duration::new(total_secs, nanos))
}

/// Split into days, hours, minutes, whole seconds and nanoseconds.
fn parts(d: Duration) -> (u64, u64, u64, u64, u32) {
    let s = d.as_secs();
    (
        s / DAY,
        (s % DAY) / HOUR,
        (s % HOUR) / MINUTE,
        s % MINUTE,
        d.subsec_nanos(),
    )
}

/// Fractional nanoseconds as `.5`, `.25`, … (empty for zero).
fn fraction(nanos: u32) -> String {
    if nanos == 0 {
        return String::new();
    }
    let f = format!("{nanos:09}");
    format!(".{}", f.trim_end_matches('0'))
}

/// A duration as a person reads it in a hover or a report: `13 h 1 min`,
/// `30 s`, `2 d 4 h`, `1.5 s`, `0 s`. Days are the largest unit (a year would
/// be an approximation the schedule does not make).
pub fn to_words(d: Duration) -> String {
    let (days, h, m, s, ns) = parts(d);
    let mut out: Vec<String> = Vec::new();
    if days > 0 {
        out.push(format!("{days} d"));
    }
    if h > 0 {
        out.push(format!("{h} h"));
    }
    if m > 0 {
        out.push(format!("{m} min"));
    }
    if s > 0 || ns > 0 {
        out.push(format!("{s}{} s", fraction(ns)));
    }
    if out.is_empty() {
        return "0 s".to_string();
    }
    out.join(" ")
}

/// A span of time in a table's compact form: `0s`, `45s`, `1m 30s`,
/// Instants before this one (2000-01-01, ms since the epoch) are on a run's
/// virtual clock, whose epoch is 0; later ones are wall-clock instants
/// (`qflow serve`, `Time::System`).
pub const WALL_CLOCK_FROM_MS: i64 = 946_684_800_000;

/// An instant as an operator reads it: a virtual-clock one as the time
/// since the clock's start (`+2h 36m`, as `qflow run` prints it), a
/// wall-clock one as RFC 3339 in UTC to the second
/// (`2026-12-02T02:36:00Z`), never days since 1970.
pub fn instant(ms: i64) -> String {
    if ms < WALL_CLOCK_FROM_MS {
        return format!("+{}", compact_ms(ms));
    }
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// `2h 36m`, `1d 2h` — the two largest non-zero units, sub-second remainders
/// dropped. The console's panels and `qflow run`'s human lines both show time
/// this way, so a time reads the same in both.
pub fn compact_ms(ms: i64) -> String {
    let neg = ms < 0;
    let total = ms.unsigned_abs() / 1000;
    let (d, h, m, s) = (
        total / 86_400,
        total / 3600 % 24,
        total / 60 % 60,
        total % 60,
    );
    let parts: Vec<String> = [(d, "d"), (h, "h"), (m, "m"), (s, "s")]
        .into_iter()
        .skip_while(|(v, _)| *v == 0)
        .take(2)
        .filter(|(v, _)| *v > 0)
        .map(|(v, u)| format!("{v}{u}"))
        .collect();
    let text = if parts.is_empty() {
        "0s".to_string()
    } else {
        parts.join(" ")
    };
    if neg {
        format!("-{text}")
    } else {
        text
    }
}

/// The canonical ISO-8601 text of a duration, in days and below (`PT13H1M`,
/// `P2DT4H`, `PT0.5S`, `PT0S`), so that `parse(to_iso(d)) == d`. Used by quick
/// fixes that write a duration into a model.
pub fn to_iso(d: Duration) -> String {
    let (days, h, m, s, ns) = parts(d);
    let mut out = String::from("P");
    if days > 0 {
        out.push_str(&format!("{days}D"));
    }
    if h > 0 || m > 0 || s > 0 || ns > 0 {
        out.push('T');
        if h > 0 {
            out.push_str(&format!("{h}H"));
        }
        if m > 0 {
            out.push_str(&format!("{m}M"));
        }
        if s > 0 || ns > 0 {
            out.push_str(&format!("{s}{}S", fraction(ns)));
        }
    }
    if out == "P" {
        return "PT0S".to_string();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn parses_every_component() {
        assert_eq!(parse("PT30S").unwrap(), secs(30));
        assert_eq!(parse("PT1M").unwrap(), secs(60));
        assert_eq!(parse("PT625M").unwrap(), secs(37_500));
        assert_eq!(parse("PT12H").unwrap(), secs(12 * 3600));
        assert_eq!(parse("P2D").unwrap(), secs(2 * DAY));
        assert_eq!(parse("P1W").unwrap(), secs(7 * DAY));
        assert_eq!(parse("P1M").unwrap(), secs(30 * DAY));
        assert_eq!(parse("P1Y").unwrap(), secs(365 * DAY));
        assert_eq!(
            parse("P1Y2M3W4DT5H6M7S").unwrap(),
            secs(365 * DAY + 60 * DAY + 21 * DAY + 4 * DAY + 5 * 3600 + 6 * 60 + 7)
        );
        assert_eq!(parse("PT1.5S").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse("PT0,25S").unwrap(), Duration::from_millis(250));
        assert_eq!(parse("PT0S").unwrap(), Duration::ZERO);
        assert_eq!(parse("  PT2S \n").unwrap(), secs(2));
        assert_eq!(parse("PT90M").unwrap(), secs(5400));
    }

    fn err(s: &str) -> String {
        parse(s).unwrap_err().message
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(err("").contains("empty"));
        assert!(err("30").contains("PT30S"), "{}", err("30"));
        assert!(err("pt30s").contains("upper case"));
        assert!(err("-PT1S").contains("signed"));
        assert!(err("P").contains("alone"));
        assert!(err("PT").contains("followed by"));
        assert!(err("P1H").contains("`T` is missing"), "{}", err("P1H"));
        assert!(err("PT1D").contains("before `T`"), "{}", err("PT1D"));
        assert!(err("PT5").contains("no unit"));
        assert!(err("PT1S1M").contains("out of order"));
        assert!(err("PT1M1M").contains("repeated"));
        assert!(err("P1.5D").contains("only seconds"));
        assert!(err("PT1.5S2M").contains("out of order") || err("PT1.5S2M").contains("last"));
        assert!(err("PT1X").contains("unknown unit"));
        assert!(err("PTS").contains("no number"));
        assert!(err("PT1 S").contains("spaces"));
        assert!(err("PT1.S").contains("digits after"));
        assert!(err("P99999999999999999999D").contains("too large"));
        assert!(err("P999999999999999D").contains("too large"));
        assert!(err("PT1TH").contains("no unit"), "{}", err("PT1TH"));
        assert!(err("PTT1H").contains("twice"), "{}", err("PTT1H"));
    }

    #[test]
    fn error_offsets_point_into_the_text() {
        let e = parse(" P1H").unwrap_err();
        assert_eq!(e.offset, 3);
    }

    #[test]
    fn words() {
        assert_eq!(to_words(secs(46_860)), "13 h 1 min");
        assert_eq!(to_words(secs(30)), "30 s");
        assert_eq!(to_words(secs(2 * DAY + 4 * 3600)), "2 d 4 h");
        assert_eq!(to_words(Duration::ZERO), "0 s");
        assert_eq!(to_words(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(to_words(secs(61)), "1 min 1 s");
    }

    #[test]
    fn iso_round_trips() {
        for s in [
            "PT13H1M", "PT30S", "P2DT4H", "PT0S", "PT0.5S", "P365D", "PT1M1S",
        ] {
            let d = parse(s).unwrap();
            assert_eq!(to_iso(d), s);
            assert_eq!(parse(&to_iso(d)).unwrap(), d);
        }
        assert_eq!(to_iso(parse("P1Y").unwrap()), "P365D");
    }

    #[test]
    fn input_takes_the_short_form_and_iso_alike_and_errors_name_a_literal() {
        use super::parse_input;
        assert_eq!(parse_input("5m"), parse_input("PT5M"));
        assert_eq!(parse_input("2h30m").unwrap(), Duration::from_secs(9000));
        assert_eq!(parse_input("1d 2h").unwrap(), Duration::from_secs(93_600));
        let e = |t: &str| parse_input(t).unwrap_err().message;
        assert_eq!(e("5 min"), "`5 min` is not a duration: write 5m or PT5M");
        assert_eq!(e("pt5m"), "`pt5m` is not a duration: write 5m or PT5M");
        assert_eq!(e("90"), "`90` is not a duration: write 1m30s or PT1M30S");
        assert_eq!(
            e("2 hours"),
            "`2 hours` is not a duration: write 2h or PT2H"
        );
        assert!(e("soon").ends_with("(or the short form: 90s, 5m, 2h30m, 1d)"));
        // A model takes ISO-8601 only, and is told the literal.
        assert_eq!(
            parse("5m").unwrap_err().message,
            "`5m` is the short form, which a model does not take: write PT5M"
        );
    }
}
