//! The text of a `<q:retry>` into a [`RetryPolicy`]: every fault of the text
//! is a [`SpecError`] with the code of the rule it breaks, which the loader's
//! rules report as a diagnostic at its span.

use std::time::Duration;

use super::{Backoff, Jitter, RetryPolicy, DEFAULT_FACTOR};
use crate::diagnostic::Code;
use crate::duration;
use crate::model::{Attr, RetrySpec};
use crate::span::Span;

/// Why a `<q:retry>` or a `<q:channelConfig>` as written is not a policy. The rules turn each into a
/// diagnostic with this code at this span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    pub code: Code,
    /// The offending text (an attribute value, or one entry of a list).
    pub span: Span,
    pub message: String,
    /// The primary label.
    pub label: String,
    pub help: String,
    /// Other places involved (the other half of a list/curve mix).
    pub related: Vec<(Span, String)>,
}

impl RetryPolicy {
    /// Validate a `<q:retry>` as written. Every fault is reported (not just the
    /// first), each with the code of the rule it breaks: QF008 for durations,
    /// QF013 for `maxAttempts`, QF015 for a malformed backoff or jitter.
    ///
    /// Rules about the policy in its context (unbounded: QF012, zero backoff on
    /// a channel call: QF014, unusable entries: QF031, no jitter: QF033) are
    /// not faults of the text and live in the rules, which use the policy.
    pub fn from_spec(spec: &RetrySpec) -> Result<RetryPolicy, Vec<SpecError>> {
        let mut errs = Vec::new();
        let max_attempts = spec
            .max_attempts
            .as_ref()
            .and_then(|a| parse_max_attempts(a, &mut errs));
        let max_delay = spec
            .max_delay
            .as_ref()
            .and_then(|a| positive_duration(a, "maxDelay", &mut errs));
        let max_elapsed = spec
            .max_elapsed
            .as_ref()
            .and_then(|a| positive_duration(a, "maxElapsed", &mut errs));
        let backoff = parse_backoff(spec, &mut errs);
        let jitter = match &spec.jitter {
            None => Jitter::None,
            Some(a) => match a.value.trim() {
                "none" => Jitter::None,
                "full" => Jitter::Full,
                "equal" => Jitter::Equal,
                other => {
                    let mut help = "jitter is one of `none`, `full` (uniform in [0, d]) or `equal` (d/2 plus uniform in [0, d/2])".to_string();
                    if let Some(s) = crate::suggest::closest(other, ["none", "full", "equal"]) {
                        help = format!("did you mean `{s}`? {help}");
                    }
                    errs.push(SpecError {
                        code: Code::QF015,
                        span: a.span,
                        message: format!("unknown jitter `{other}`"),
                        label: "not a jitter mode".into(),
                        help,
                        related: Vec::new(),
                    });
                    Jitter::None
                }
            },
        };
        let non_retryable_codes = spec
            .non_retryable_codes
            .as_ref()
            .map(|a| a.value.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        match (errs.is_empty(), backoff) {
            (true, Some(backoff)) => Ok(RetryPolicy {
                max_attempts,
                backoff,
                max_delay,
                max_elapsed,
                jitter,
                non_retryable_codes,
            }),
            _ => Err(errs),
        }
    }
}

fn parse_max_attempts(a: &Attr, errs: &mut Vec<SpecError>) -> Option<u32> {
    let v = a.value.trim();
    let problem = match v.parse::<i64>() {
        Ok(n) if n >= 1 && n <= i64::from(u32::MAX) => return Some(n as u32),
        Ok(n) if n < 1 => format!("maxAttempts is {n}: it counts every attempt including the first, so it must be at least 1"),
        Ok(_) => format!("maxAttempts `{v}` is too large (at most {})", u32::MAX),
        Err(_) => format!("maxAttempts `{v}` is not a whole number"),
    };
    errs.push(SpecError {
        code: Code::QF013,
        span: a.span,
        message: problem,
        label: "not a positive integer".into(),
        help: "write the total number of attempts, including the first, e.g. maxAttempts=\"3\""
            .into(),
        related: Vec::new(),
    });
    None
}

/// A duration attribute that must be positive (QF008 otherwise).
fn positive_duration(a: &Attr, name: &str, errs: &mut Vec<SpecError>) -> Option<Duration> {
    match duration::parse(&a.value) {
        Ok(d) if !d.is_zero() => Some(d),
        Ok(_) => {
            errs.push(SpecError {
                code: Code::QF008,
                span: a.span,
                message: format!("{name} is zero: it must be a positive duration"),
                label: "zero duration".into(),
                help: format!("give {name} a positive ISO-8601 duration, e.g. PT30S, PT1H, P2D"),
                related: Vec::new(),
            });
            None
        }
        Err(e) => {
            errs.push(invalid_duration(a.span, name, &a.value, &e));
            None
        }
    }
}

fn invalid_duration(span: Span, name: &str, text: &str, e: &duration::DurationError) -> SpecError {
    SpecError {
        code: Code::QF008,
        span,
        message: format!("{name} `{}` is not an ISO-8601 duration", text.trim()),
        label: e.message.clone(),
        help: format!(
            "{}; ISO-8601 durations look like PT30S, PT5M, PT1H30M, P2D",
            e.message
        ),
        related: Vec::new(),
    }
}

/// Spans of each whitespace-separated entry of an attribute value. Exact when
/// the value was written without entity references (always, in practice);
/// otherwise each entry gets the whole value's span.
pub fn list_entries(a: &Attr) -> Vec<(&str, Span)> {
    let exact = a.span.len() == a.value.len();
    let base = a.value.as_ptr() as usize;
    a.value
        .split_whitespace()
        .map(|w| {
            let off = w.as_ptr() as usize - base;
            let span = if exact {
                Span::new(a.span.start() + off, a.span.start() + off + w.len())
            } else {
                a.span
            };
            (w, span)
        })
        .collect()
}

/// A malformed backoff (QF015) at `span`, with no related places.
fn malformed(span: Span, message: String, label: &str, help: &str) -> SpecError {
    SpecError {
        code: Code::QF015,
        span,
        message,
        label: label.into(),
        help: help.into(),
        related: Vec::new(),
    }
}

/// The backoff in either form; `List(vec![])` when none is written.
fn parse_backoff(spec: &RetrySpec, errs: &mut Vec<SpecError>) -> Option<Backoff> {
    let curve_attrs: Vec<(&str, &Attr)> = [("initial", &spec.initial), ("factor", &spec.factor)]
        .into_iter()
        .filter_map(|(n, a)| a.as_ref().map(|a| (n, a)))
        .collect();
    match (&spec.backoff, curve_attrs.first()) {
        (Some(list), Some((name, other))) => {
            let mut e = malformed(
                list.full_span,
                format!("backoff mixes the list form (`backoff`) with the curve form (`{name}`)"),
                "the list form",
                "keep one form: either backoff=\"PT1M PT5M …\" (a list) or initial=\"PT1M\" factor=\"5\" (a curve)",
            );
            e.related.push((other.full_span, "the curve form".into()));
            errs.push(e);
            None
        }
        (Some(list), None) => parse_list(list, errs),
        (None, None) => Some(Backoff::List(Vec::new())),
        (None, Some(_)) => parse_curve(spec, errs),
    }
}

/// The list form: `backoff="PT1M PT5M PT25M"`, every entry a duration.
fn parse_list(list: &Attr, errs: &mut Vec<SpecError>) -> Option<Backoff> {
    let entries = list_entries(list);
    if entries.is_empty() {
        errs.push(malformed(
            list.full_span,
            "backoff is empty".into(),
            "no delays listed",
            "list the delays before attempt 2, 3, … (e.g. backoff=\"PT1M PT5M PT25M\"), or remove the attribute for immediate retries",
        ));
        return None;
    }
    let mut delays = Vec::new();
    let before = errs.len();
    for (i, (w, span)) in entries.iter().enumerate() {
        match duration::parse(w) {
            Ok(d) => delays.push(d),
            Err(e) => errs.push(invalid_duration(
                *span,
                &format!("backoff entry {}", i + 1),
                w,
                &e,
            )),
        }
    }
    (errs.len() == before).then_some(Backoff::List(delays))
}

/// The curve form: `initial` (required) and `factor` (default 2, at least 1).
fn parse_curve(spec: &RetrySpec, errs: &mut Vec<SpecError>) -> Option<Backoff> {
    let Some(initial_attr) = &spec.initial else {
        let f = spec
            .factor
            .as_ref()
            .expect("curve attrs are initial or factor");
        errs.push(malformed(
            f.full_span,
            "factor without initial: the curve has no first delay".into(),
            "needs initial",
            "add initial=\"PT1M\" (the delay before attempt 2), or use the list form backoff=\"…\"",
        ));
        return None;
    };
    let initial = positive_duration(initial_attr, "initial", errs);
    let factor = match &spec.factor {
        None => Some(DEFAULT_FACTOR),
        Some(f) => parse_factor(f, errs),
    };
    Some(Backoff::Curve {
        initial: initial?,
        factor: factor?,
    })
}

fn parse_factor(f: &Attr, errs: &mut Vec<SpecError>) -> Option<f64> {
    match f.value.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 1.0 => return Some(x),
        Ok(x) if x.is_finite() => errs.push(malformed(
            f.span,
            format!("factor {x} is below 1: each delay would be shorter than the one before"),
            "factor below 1",
            "use a factor of at least 1 (1 keeps the delay constant; 2 doubles it)",
        )),
        _ => errs.push(malformed(
            f.span,
            format!("factor `{}` is not a number", f.value.trim()),
            "not a number",
            "write the growth factor as a number of at least 1, e.g. factor=\"2\" or factor=\"1.5\"",
        )),
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::attr;

    fn errors(spec: RetrySpec) -> Vec<(Code, String)> {
        RetryPolicy::from_spec(&spec)
            .unwrap_err()
            .into_iter()
            .map(|e| (e.code, e.message))
            .collect()
    }

    #[test]
    fn spec_errors_carry_their_codes() {
        let e = errors(RetrySpec {
            max_attempts: attr("0"),
            backoff: attr("PT1M 5M"),
            max_elapsed: attr("PT0S"),
            jitter: attr("ful"),
            ..RetrySpec::default()
        });
        let codes: Vec<Code> = e.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            codes,
            vec![Code::QF013, Code::QF008, Code::QF008, Code::QF015]
        );
        assert!(e[2].1.contains("backoff entry 2"), "{e:?}");
        let mixed = errors(RetrySpec {
            backoff: attr("PT1M"),
            factor: attr("2"),
            ..RetrySpec::default()
        });
        assert_eq!(mixed[0].0, Code::QF015);
        assert!(mixed[0].1.contains("mixes"));
        let low = errors(RetrySpec {
            initial: attr("PT1M"),
            factor: attr("0.5"),
            ..RetrySpec::default()
        });
        assert!(low[0].1.contains("below 1"));
        let lone = errors(RetrySpec {
            factor: attr("2"),
            ..RetrySpec::default()
        });
        assert!(lone[0].1.contains("without initial"));
        assert_eq!(
            errors(RetrySpec {
                max_attempts: attr("2.5"),
                ..RetrySpec::default()
            })[0]
                .0,
            Code::QF013
        );
    }

    #[test]
    fn list_entry_spans_point_at_each_entry() {
        let src = r#"backoff="PT1M  PT5M""#;
        let a = Attr {
            value: "PT1M  PT5M".into(),
            span: Span::new(9, 19),
            full_span: Span::new(0, 20),
        };
        let e = list_entries(&a);
        assert_eq!(&src[e[1].1.start()..e[1].1.end()], "PT5M");
    }
}
