//! Fleet assertions: `qflow simulate … --expect 'EXPR'`, held against a
//! simulation's [`Report`] so a CI job fails (exit 3) when a retry policy
//! would load a dependency more than it can take, or lose more instances
//! than the team accepts.
//!
//! An expression is one comparison, `MEASURE OP VALUE`:
//!
//! - instances: `completed`, `exhausted` (FAILED with the retry budget
//!   spent), `failed` (FAILED for any reason, exhausted included),
//!   `unfinished` (still parked or waiting at the end), each against a count
//!   (`exhausted <= 10`) or a share of the jobs (`exhausted <= 1%`);
//! - load: `attempts` and `requests` (every remote request: a task's
//!   attempt, a channel's delivery), in all or of one dependency
//!   (`requests(bank) <= 10000`), against a count;
//! - `peak` and `peak(DEPENDENCY)`: the most requests in one minute of
//!   virtual time, against a rate (`500/min`, or `/s`, `/h`, converted to a
//!   minute);
//! - `end`: the virtual time of the last decision, against a duration
//!   (`end <= 4h`, `end <= PT4H`).
//!
//! `OP` is one of `<=`, `<`, `>=`, `>`, `==`. Parsing and evaluating are pure:
//! the text in, an [`Expectation`] or a [`ParseError`] naming the column and
//! the fix out; an expectation and a report in, an [`Outcome`] out.

use std::fmt;
use std::time::Duration;

use super::Report;

/// What an expectation measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Measure {
    Completed,
    Exhausted,
    Failed,
    Unfinished,
    /// Attempts: all (`None`) or of one dependency.
    Attempts(Option<String>),
    /// Remote requests: all or of one dependency.
    Requests(Option<String>),
    /// The busiest minute's requests: all or of one dependency.
    Peak(Option<String>),
    /// The virtual time of the last decision.
    End,
}

impl Measure {
    fn word(&self) -> &'static str {
        match self {
            Measure::Completed => "completed",
            Measure::Exhausted => "exhausted",
            Measure::Failed => "failed",
            Measure::Unfinished => "unfinished",
            Measure::Attempts(_) => "attempts",
            Measure::Requests(_) => "requests",
            Measure::Peak(_) => "peak",
            Measure::End => "end",
        }
    }

    /// The dependency it is of, if one.
    pub fn dependency(&self) -> Option<&str> {
        match self {
            Measure::Attempts(d) | Measure::Requests(d) | Measure::Peak(d) => d.as_deref(),
            _ => None,
        }
    }

    fn counts_instances(&self) -> bool {
        matches!(
            self,
            Measure::Completed | Measure::Exhausted | Measure::Failed | Measure::Unfinished
        )
    }
}

/// The comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Le,
    Lt,
    Ge,
    Gt,
    Eq,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Eq => "==",
        }
    }

    fn holds(self, measured: f64, bound: f64) -> bool {
        match self {
            Op::Le => measured <= bound,
            Op::Lt => measured < bound,
            Op::Ge => measured >= bound,
            Op::Gt => measured > bound,
            Op::Eq => measured == bound,
        }
    }
}

/// The bound an expectation compares with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// A number of instances, attempts or requests.
    Count(f64),
    /// A share of the jobs, in percent.
    Percent(f64),
    /// Requests per minute.
    PerMinute(f64),
    Duration(Duration),
}

/// One parsed `--expect`.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// The text as written (what the report shows).
    pub text: String,
    pub measure: Measure,
    pub op: Op,
    pub bound: Bound,
    /// Where the dependency's name starts (0-based character), for an error
    /// naming a dependency the model does not have.
    dependency_at: usize,
}

/// Why an expression does not parse: where (1-based character column), what
/// is wrong there, and what to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub column: usize,
    pub message: String,
    pub fix: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at column {}: {}: {}",
            self.column, self.message, self.fix
        )
    }
}

impl std::error::Error for ParseError {}

const MEASURES: &str =
    "completed, exhausted, failed, unfinished, attempts, requests, peak, end (with a dependency: attempts(NAME), requests(NAME), peak(NAME))";

struct Cursor<'a> {
    chars: Vec<char>,
    at: usize,
    text: &'a str,
}

impl Cursor<'_> {
    fn skip_spaces(&mut self) {
        while self.chars.get(self.at).is_some_and(|c| c.is_whitespace()) {
            self.at += 1;
        }
    }
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }
    fn take_while(&mut self, f: impl Fn(char) -> bool) -> String {
        let from = self.at;
        while self.peek().is_some_and(&f) {
            self.at += 1;
        }
        self.chars[from..self.at].iter().collect()
    }
    fn error(&self, at: usize, message: impl Into<String>, fix: impl Into<String>) -> ParseError {
        ParseError {
            column: at + 1,
            message: message.into(),
            fix: fix.into(),
        }
    }
}

impl Expectation {
    /// Parse one expression (`exhausted <= 1%`, `peak(bank) <= 500/min`).
    pub fn parse(text: &str) -> Result<Expectation, ParseError> {
        let mut c = Cursor {
            chars: text.chars().collect(),
            at: 0,
            text,
        };
        c.skip_spaces();
        let word_at = c.at;
        let word = c.take_while(|ch| ch.is_ascii_alphabetic() || ch == '_');
        if word.is_empty() {
            return Err(c.error(
                word_at,
                match c.peek() {
                    None => "the expression is empty".to_string(),
                    Some(ch) => format!("`{ch}` is not a measure"),
                },
                format!("start with one of {MEASURES}, as in `exhausted <= 1%`"),
            ));
        }
        let mut dependency_at = 0;
        c.skip_spaces();
        let dependency = if c.peek() == Some('(') {
            let open = c.at;
            c.at += 1;
            c.skip_spaces();
            dependency_at = c.at;
            let name = c.take_while(|ch| ch != ')' && !ch.is_whitespace());
            c.skip_spaces();
            if c.peek() != Some(')') {
                return Err(c.error(
                    c.at,
                    format!("`{word}(` is not closed"),
                    format!(
                        "write `{word}({})`",
                        if name.is_empty() { "NAME" } else { &name }
                    ),
                ));
            }
            if name.is_empty() {
                return Err(c.error(
                    open + 1,
                    format!("`{word}()` names no dependency"),
                    format!("write a task's name or a call's channel, as in `{word}(bank)`, or `{word}` for all"),
                ));
            }
            c.at += 1;
            Some(name)
        } else {
            None
        };
        let measure = match (word.as_str(), dependency) {
            ("completed", None) => Measure::Completed,
            ("exhausted", None) => Measure::Exhausted,
            ("failed", None) => Measure::Failed,
            ("unfinished", None) => Measure::Unfinished,
            ("end", None) => Measure::End,
            ("attempts", d) => Measure::Attempts(d),
            ("requests", d) => Measure::Requests(d),
            ("peak", d) => Measure::Peak(d),
            (w @ ("completed" | "exhausted" | "failed" | "unfinished" | "end"), Some(_)) => {
                return Err(c.error(
                    word_at + w.chars().count(),
                    format!("`{w}` is of the whole fleet, not of one dependency"),
                    format!("write `{w} …` without the parenthesis; attempts, requests and peak take a dependency"),
                ))
            }
            (w, _) => {
                return Err(c.error(
                    word_at,
                    format!("`{w}` is not a measure"),
                    format!("write one of {MEASURES}"),
                ))
            }
        };
        c.skip_spaces();
        let op_at = c.at;
        let op_text = c.take_while(|ch| "<>=!".contains(ch));
        let op = match op_text.as_str() {
            "<=" => Op::Le,
            "<" => Op::Lt,
            ">=" => Op::Ge,
            ">" => Op::Gt,
            "==" => Op::Eq,
            "=" => {
                return Err(c.error(
                    op_at,
                    "`=` is not a comparison",
                    "write `==` (or <=, <, >=, >)",
                ))
            }
            "=<" => return Err(c.error(op_at, "`=<` is not a comparison", "write `<=`")),
            "=>" => return Err(c.error(op_at, "`=>` is not a comparison", "write `>=`")),
            "" => {
                return Err(c.error(
                    op_at,
                    match c.peek() {
                        None => format!("`{}` ends before its comparison", text.trim()),
                        Some(ch) => format!("`{ch}` is not a comparison"),
                    },
                    format!(
                        "write one of <=, <, >=, >, == and a bound, as in `{} <= {}`",
                        measure.word(),
                        example(&measure)
                    ),
                ))
            }
            other => {
                return Err(c.error(
                    op_at,
                    format!("`{other}` is not a comparison"),
                    "write one of <=, <, >=, >, ==",
                ))
            }
        };
        c.skip_spaces();
        let bound_at = c.at;
        let rest: String = c.chars[c.at..].iter().collect();
        let rest = rest.trim_end();
        if rest.is_empty() {
            return Err(c.error(
                bound_at,
                format!("`{}` has no bound after `{}`", c.text.trim(), op.as_str()),
                format!(
                    "write one, as in `{} {} {}`",
                    measure.word(),
                    op.as_str(),
                    example(&measure)
                ),
            ));
        }
        let bound = bound(&measure, rest)
            .map_err(|(offset, message, fix)| c.error(bound_at + offset, message, fix))?;
        Ok(Expectation {
            text: text.trim().to_string(),
            measure,
            op,
            bound,
            dependency_at,
        })
    }

    /// Refuse a dependency the model does not have (a misspelt name would
    /// otherwise measure zero and hold): `known` are the model's task names
    /// and channels.
    pub fn check_dependency<'a>(
        &self,
        known: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Result<(), ParseError> {
        let Some(d) = self.measure.dependency() else {
            return Ok(());
        };
        if known.clone().into_iter().any(|k| k == d) {
            return Ok(());
        }
        let names: Vec<&str> = known.into_iter().collect();
        Err(ParseError {
            column: self.dependency_at + 1,
            message: format!("the model has no dependency `{d}`"),
            fix: if names.is_empty() {
                "it has no registered task and no channel call: drop the name".into()
            } else {
                format!(
                    "write one of its task names or channels: {}",
                    names.join(", ")
                )
            },
        })
    }

    /// Hold the expectation against a simulation's report.
    pub fn evaluate(&self, report: &Report) -> Outcome {
        let jobs = report.totals.jobs as f64;
        let t = &report.totals;
        let count = match &self.measure {
            Measure::Completed => t.completed,
            Measure::Exhausted => t.exhausted,
            Measure::Failed => t.exhausted + t.failed,
            Measure::Unfinished => (t.jobs as u64).saturating_sub(t.finished()),
            Measure::Attempts(None) => t.attempts,
            Measure::Attempts(Some(d)) => report.by_dependency.get(d).copied().unwrap_or(0),
            Measure::Requests(None) => report.requests_by_dependency.values().sum(),
            Measure::Requests(Some(d)) => {
                report.requests_by_dependency.get(d).copied().unwrap_or(0)
            }
            Measure::Peak(d) => report.peak_requests(d.as_deref()).map_or(0, |(_, n)| n),
            Measure::End => 0,
        };
        let (measured, bound, shown) = match (&self.measure, self.bound) {
            (Measure::End, Bound::Duration(b)) => (
                t.virtual_ms.max(0) as f64,
                b.as_millis() as f64,
                qflow_model::duration::compact_ms(t.virtual_ms),
            ),
            (_, Bound::Percent(p)) => {
                let share = if jobs > 0.0 {
                    count as f64 * 100.0 / jobs
                } else {
                    0.0
                };
                (
                    share,
                    p,
                    format!("{} ({})", qflow_model::text::group(count), percent(share)),
                )
            }
            (Measure::Peak(_), Bound::PerMinute(b)) => (
                count as f64,
                b,
                format!("{}/min", qflow_model::text::group(count)),
            ),
            (_, Bound::Count(b)) => (count as f64, b, qflow_model::text::group(count)),
            // The parser pairs each measure with its kind of bound.
            (_, b) => (
                count as f64,
                bound_number(b),
                qflow_model::text::group(count),
            ),
        };
        Outcome {
            expectation: self.clone(),
            measured,
            measured_text: shown,
            held: self.op.holds(measured, bound),
        }
    }
}

fn bound_number(b: Bound) -> f64 {
    match b {
        Bound::Count(n) | Bound::Percent(n) | Bound::PerMinute(n) => n,
        Bound::Duration(d) => d.as_millis() as f64,
    }
}

/// A share as written back: `0.6%`, `12%`.
fn percent(p: f64) -> String {
    let rounded = (p * 100.0).round() / 100.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}%")
    } else {
        format!("{rounded}%")
    }
}

/// An example bound for a measure (in a fix).
fn example(m: &Measure) -> &'static str {
    match m {
        Measure::Peak(_) => "500/min",
        Measure::End => "4h",
        Measure::Attempts(_) | Measure::Requests(_) => "10000",
        _ => "1%",
    }
}

/// The bound's text for `measure`: an error is (offset in `text`, what, fix).
fn bound(measure: &Measure, text: &str) -> Result<Bound, (usize, String, String)> {
    if *measure == Measure::End {
        return qflow_model::duration::parse_input(text)
            .map(Bound::Duration)
            .map_err(|e| {
                (
                    0,
                    format!("`end` takes a duration: {e}"),
                    "as in `end <= 4h`".into(),
                )
            });
    }
    let digits: String = text
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | '_' | ','))
        .collect();
    let number_len = digits.chars().count();
    if digits.is_empty() {
        return Err((
            0,
            format!("`{text}` is not a number"),
            format!(
                "write one, as in `{} <= {}`",
                measure.word(),
                example(measure)
            ),
        ));
    }
    let n: f64 = digits.replace(['_', ','], "").parse().map_err(|_| {
        (
            0,
            format!("`{digits}` is not a number"),
            "write digits, with at most one `.`".to_string(),
        )
    })?;
    let unit = text[digits.len()..].trim();
    let unit_at = text.chars().count() - unit.chars().count();
    match (measure, unit) {
        (Measure::Peak(_), "/min" | "/m") => Ok(Bound::PerMinute(n)),
        (Measure::Peak(_), "/s" | "/sec") => Ok(Bound::PerMinute(n * 60.0)),
        (Measure::Peak(_), "/h") => Ok(Bound::PerMinute(n / 60.0)),
        (Measure::Peak(_), "") => Err((
            number_len,
            "a peak is a rate".into(),
            format!("write it per minute: `{digits}/min`"),
        )),
        (Measure::Peak(_), u) => Err((
            unit_at,
            format!("`{u}` is not a rate's unit"),
            format!("write `{digits}/min` (or /s, /h)"),
        )),
        (m, "%") if m.counts_instances() => {
            if n > 100.0 {
                Err((
                    0,
                    format!("{digits}% is more than all the jobs"),
                    "write a share from 0% to 100%".into(),
                ))
            } else {
                Ok(Bound::Percent(n))
            }
        }
        (m, "%") => Err((
            unit_at,
            format!(
                "`{}` counts {}, not a share of the jobs",
                m.word(),
                m.word()
            ),
            format!("write a number, as in `{} <= {}`", m.word(), example(m)),
        )),
        (_, "") if n.fract() == 0.0 => Ok(Bound::Count(n)),
        (_, "") => Err((
            0,
            format!("`{digits}` is not a whole number"),
            "write a count".into(),
        )),
        (m, u) if u.starts_with('/') => Err((
            unit_at,
            format!("`{}` is a total, not a rate", m.word()),
            format!(
                "write a number (a rate is for peak: `peak{} <= {digits}/min`)",
                m.dependency().map_or(String::new(), |d| format!("({d})"))
            ),
        )),
        (m, u) => Err((
            unit_at,
            format!("`{u}` after the number is not understood"),
            format!(
                "write a number{}",
                if m.counts_instances() {
                    " or a share (`1%`)"
                } else {
                    ""
                }
            ),
        )),
    }
}

/// An expectation held against a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub expectation: Expectation,
    /// The value measured, in the bound's terms (a percent for a share,
    /// requests per minute for a peak, milliseconds for `end`).
    pub measured: f64,
    /// The measured value as the report shows it (`3 (0.6%)`, `120/min`).
    pub measured_text: String,
    pub held: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn report() -> Report {
        let mut r = Report::empty(200);
        r.totals.exhausted = 3;
        r.totals.completed = 197;
        r.totals.attempts = 900;
        r.totals.virtual_ms = 3 * 3_600_000;
        r.by_dependency.insert("bank".into(), 900);
        r.requests_by_dependency.insert("bank".into(), 2_700);
        r.requests_per_minute
            .insert("bank".into(), BTreeMap::from([(0, 600), (1, 200), (7, 40)]));
        r
    }

    fn holds(text: &str) -> bool {
        Expectation::parse(text).unwrap().evaluate(&report()).held
    }

    #[test]
    fn each_measure_is_held_against_the_report() {
        assert!(holds("exhausted <= 1.5%"));
        assert!(!holds("exhausted <= 1%"));
        assert!(holds("exhausted == 3"));
        assert!(holds("failed<3%"));
        assert!(holds("completed >= 98%"));
        assert!(holds("unfinished == 0"));
        assert!(holds("attempts(bank) == 900"));
        assert!(holds("requests(bank) <= 2,700"));
        assert!(!holds("requests < 2_700"));
        assert!(holds("peak(bank) <= 600/min"));
        assert!(!holds("peak <= 599/min"));
        assert!(holds("peak <= 10/s"));
        assert!(holds("end <= 3h"));
        assert!(!holds("end < PT3H"));
        let o = Expectation::parse("exhausted <= 1%")
            .unwrap()
            .evaluate(&report());
        assert_eq!(o.measured_text, "3 (1.5%)");
        let o = Expectation::parse("peak(bank) <= 500/min")
            .unwrap()
            .evaluate(&report());
        assert_eq!((o.measured_text.as_str(), o.held), ("600/min", false));
    }

    fn error(text: &str) -> ParseError {
        Expectation::parse(text).unwrap_err()
    }

    #[test]
    fn a_bad_expression_names_the_column_and_the_fix() {
        let e = error("exhaustd <= 1%");
        assert_eq!(e.column, 1);
        assert!(e.message.contains("`exhaustd` is not a measure"), "{e}");
        let e = error("exhausted = 1%");
        assert_eq!(
            (e.column, e.fix.as_str()),
            (11, "write `==` (or <=, <, >=, >)")
        );
        let e = error("peak(bank) <= 500");
        assert_eq!(e.column, 18);
        assert_eq!(e.fix, "write it per minute: `500/min`");
        let e = error("requests(bank) <= 5%");
        assert_eq!(e.column, 20);
        let e = error("peak(bank <= 5/min");
        assert!(e.message.contains("not closed"), "{e}");
        let e = error("exhausted <=");
        assert!(e.message.contains("no bound"), "{e}");
        let e = error("exhausted <= 120%");
        assert!(e.message.contains("more than all"), "{e}");
        let e = error("end <= soon");
        assert!(e.message.contains("`end` takes a duration"), "{e}");
        let e = error("exhausted(bank) <= 1");
        assert!(e.message.contains("whole fleet"), "{e}");
        assert_eq!(error("").message, "the expression is empty");
    }

    #[test]
    fn a_dependency_the_model_lacks_is_refused_where_it_is_written() {
        let x = Expectation::parse("peak(bnk) <= 5/min").unwrap();
        let e = x.check_dependency(["bank", "payments.charge"]).unwrap_err();
        assert_eq!(e.column, 6);
        assert_eq!(
            e.fix,
            "write one of its task names or channels: bank, payments.charge"
        );
        assert!(Expectation::parse("peak(bank) <= 5/min")
            .unwrap()
            .check_dependency(["bank"])
            .is_ok());
    }
}
