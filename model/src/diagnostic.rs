//! The one diagnostic type every face presents.
//!
//! The loader produces [`Diagnostic`]s with byte spans; the CLI renders them as
//! miette reports (the binary's `src/cli/terminal_report.rs`: the terminal's
//! rendering is a face's), the language server converts the same
//! values to LSP diagnostics with UTF-16 ranges, and `--format json` serializes
//! them. Codes are stable: each has a page under `docs/diagnostics/`.

use std::fmt;

use serde::Serialize;

use crate::span::{LineIndex, Span};

pub mod pages;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
    Hint,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
            Severity::Hint => "hint",
        }
    }
}

/// Every stable diagnostic code, with its severity and one-line rule.
///
/// The table is data so the docs test, the CLI, and the language server's
/// completion of codes all read the same list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Code {
    QF001,
    QF002,
    QF003,
    QF004,
    QF005,
    QF006,
    QF007,
    QF008,
    QF010,
    QF011,
    QF012,
    QF013,
    QF014,
    QF015,
    QF020,
    QF021,
    QF022,
    QF030,
    QF031,
    QF032,
    QF033,
    QF040,
    QF041,
    QF042,
    QF043,
    QF044,
    QF045,
    QF090,
    QF091,
    QF100,
    QF101,
    QF102,
    QF103,
    QF104,
    QF105,
    QF106,
    QF107,
    QF108,
    QF109,
    QF110,
    QF111,
    QF112,
    QF113,
    QF114,
    QF115,
    QF116,
    QF117,
    QF118,
    QF119,
    QF120,
    QF121,
    QF122,
    QF123,
    QF124,
    QF125,
    QF126,
    QF127,
}

impl Code {
    pub const ALL: [Code; 57] = [
        Code::QF001,
        Code::QF002,
        Code::QF003,
        Code::QF004,
        Code::QF005,
        Code::QF006,
        Code::QF007,
        Code::QF008,
        Code::QF010,
        Code::QF011,
        Code::QF012,
        Code::QF013,
        Code::QF014,
        Code::QF015,
        Code::QF020,
        Code::QF021,
        Code::QF022,
        Code::QF030,
        Code::QF031,
        Code::QF032,
        Code::QF033,
        Code::QF040,
        Code::QF041,
        Code::QF042,
        Code::QF043,
        Code::QF044,
        Code::QF045,
        Code::QF090,
        Code::QF091,
        Code::QF100,
        Code::QF101,
        Code::QF102,
        Code::QF103,
        Code::QF104,
        Code::QF105,
        Code::QF106,
        Code::QF107,
        Code::QF108,
        Code::QF109,
        Code::QF110,
        Code::QF111,
        Code::QF112,
        Code::QF113,
        Code::QF114,
        Code::QF115,
        Code::QF116,
        Code::QF117,
        Code::QF118,
        Code::QF119,
        Code::QF120,
        Code::QF121,
        Code::QF122,
        Code::QF123,
        Code::QF124,
        Code::QF125,
        Code::QF126,
        Code::QF127,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::QF001 => "QF001",
            Code::QF002 => "QF002",
            Code::QF003 => "QF003",
            Code::QF004 => "QF004",
            Code::QF005 => "QF005",
            Code::QF006 => "QF006",
            Code::QF007 => "QF007",
            Code::QF008 => "QF008",
            Code::QF010 => "QF010",
            Code::QF011 => "QF011",
            Code::QF012 => "QF012",
            Code::QF013 => "QF013",
            Code::QF014 => "QF014",
            Code::QF015 => "QF015",
            Code::QF020 => "QF020",
            Code::QF021 => "QF021",
            Code::QF022 => "QF022",
            Code::QF030 => "QF030",
            Code::QF031 => "QF031",
            Code::QF032 => "QF032",
            Code::QF033 => "QF033",
            Code::QF040 => "QF040",
            Code::QF041 => "QF041",
            Code::QF042 => "QF042",
            Code::QF043 => "QF043",
            Code::QF044 => "QF044",
            Code::QF045 => "QF045",
            Code::QF090 => "QF090",
            Code::QF091 => "QF091",
            Code::QF100 => "QF100",
            Code::QF101 => "QF101",
            Code::QF102 => "QF102",
            Code::QF103 => "QF103",
            Code::QF104 => "QF104",
            Code::QF105 => "QF105",
            Code::QF106 => "QF106",
            Code::QF107 => "QF107",
            Code::QF108 => "QF108",
            Code::QF109 => "QF109",
            Code::QF110 => "QF110",
            Code::QF111 => "QF111",
            Code::QF112 => "QF112",
            Code::QF113 => "QF113",
            Code::QF114 => "QF114",
            Code::QF115 => "QF115",
            Code::QF116 => "QF116",
            Code::QF117 => "QF117",
            Code::QF118 => "QF118",
            Code::QF119 => "QF119",
            Code::QF120 => "QF120",
            Code::QF121 => "QF121",
            Code::QF122 => "QF122",
            Code::QF123 => "QF123",
            Code::QF124 => "QF124",
            Code::QF125 => "QF125",
            Code::QF126 => "QF126",
            Code::QF127 => "QF127",
        }
    }

    /// The default severity. A modelling rule (QF100 upward) has bpmnlint's
    /// recommended severity here, which is what a plain BPMN document gets;
    /// [`crate::config`] gives qflow documents their own defaults. A rule
    /// outside bpmnlint's recommended set (see [`Code::is_recommended`]) is
    /// off until configured; this is its severity under `bpmnlint:all`.
    pub fn severity(self) -> Severity {
        match self {
            Code::QF030
            | Code::QF031
            | Code::QF032
            | Code::QF043
            | Code::QF044
            | Code::QF045
            | Code::QF091 => Severity::Warning,
            Code::QF105
            | Code::QF106
            | Code::QF117
            | Code::QF118
            | Code::QF123
            | Code::QF124
            | Code::QF125 => Severity::Warning,
            Code::QF033 => Severity::Hint,
            Code::QF040 => Severity::Info,
            _ => Severity::Error,
        }
    }

    /// The rule in one line, as in docs/rules.md.
    pub fn title(self) -> &'static str {
        match self {
            Code::QF001 => "XML not well-formed",
            Code::QF002 => "not a BPMN 2.0 definitions document",
            Code::QF003 => "duplicate id among BPMN elements",
            Code::QF004 => "dangling reference",
            Code::QF005 => "executable process without a start event",
            Code::QF006 => "unknown q: element or attribute",
            Code::QF007 => "serviceTask with neither or both of q:task / q:channel",
            Code::QF008 => "invalid or non-positive ISO-8601 duration",
            Code::QF010 => "<q:retry> on anything but a registered task or channel call",
            Code::QF011 => "<q:retry> twice on one task",
            Code::QF012 => "unbounded retry: neither maxAttempts nor maxElapsed",
            Code::QF013 => "maxAttempts not a positive integer",
            Code::QF014 => "zero backoff on a channel call",
            Code::QF015 => "malformed backoff",
            Code::QF020 => "channel call without a timeout",
            Code::QF021 => "channel call with both <q:timeout> and a timer boundary",
            Code::QF022 => "channel-call <q:retry> beside a routed timer boundary",
            Code::QF030 => "unknown q.* code in nonRetryableCodes",
            Code::QF031 => "backoff entries that can never be used",
            Code::QF032 => "unreachable node",
            Code::QF033 => "retry with no jitter attribute",
            Code::QF040 => "the process is stateful",
            Code::QF041 => "element the qflow runtime does not execute",
            Code::QF042 => "condition expression does not parse",
            Code::QF043 => "namespace close to qflow's but not urn:qflow:bpmn:1",
            Code::QF044 => "qflow task attributes on a process that is not executable",
            Code::QF045 => "worst-case remote requests per business operation above the ceiling",
            Code::QF090 => "configuration file cannot be read",
            Code::QF091 => "configuration entry ignored",
            Code::QF100 => "start or end event in an ad-hoc sub-process",
            Code::QF101 => {
                "flow out of a conditional fork with neither a condition nor default status"
            }
            Code::QF102 => "process or sub-process without an end event",
            Code::QF103 => "event-based gateway with fewer than two or conditional outgoing flows",
            Code::QF104 => "event sub-process with a blank start event",
            Code::QF105 => "activity or event joined by several incoming flows",
            Code::QF106 => "message, signal, error or escalation unnamed, unused or named twice",
            Code::QF107 => "element without a label",
            Code::QF108 => "link event unnamed or without its counterpart",
            Code::QF109 => "element missing from the diagram",
            Code::QF110 => "complex gateway",
            Code::QF111 => "flow node with neither incoming nor outgoing flows",
            Code::QF112 => "duplicate sequence flow",
            Code::QF113 => "gateway that both joins and forks",
            Code::QF114 => "activity or event that splits implicitly",
            Code::QF115 => "flow node that ends a path without an end event",
            Code::QF116 => "flow node that starts a path without a start event",
            Code::QF117 => "inclusive gateway",
            Code::QF118 => "diagram elements overlap or leave their container",
            Code::QF119 => "several blank start events in one scope",
            Code::QF120 => "event with several event definitions",
            Code::QF121 => "process or sub-process without a start event",
            Code::QF122 => "sub-process start event with an event definition",
            Code::QF123 => "gateway with one incoming and one outgoing flow",
            Code::QF124 => "label on an unconditional sequence flow",
            Code::QF125 => "terminate end event where a plain end event does the same",
            Code::QF126 => "conditional event without a condition",
            Code::QF127 => "diagram shape not of its element's standard size",
        }
    }

    /// bpmnlint's name for a modelling rule (`fake-join`): accepted wherever a
    /// code is (configuration files), and reported as the diagnostic's `rule`.
    pub fn alias(self) -> Option<&'static str> {
        Some(match self {
            Code::QF100 => "ad-hoc-sub-process",
            Code::QF101 => "conditional-flows",
            Code::QF102 => "end-event-required",
            Code::QF103 => "event-based-gateway",
            Code::QF104 => "event-sub-process-typed-start-event",
            Code::QF105 => "fake-join",
            Code::QF106 => "global",
            Code::QF107 => "label-required",
            Code::QF108 => "link-event",
            Code::QF109 => "no-bpmndi",
            Code::QF110 => "no-complex-gateway",
            Code::QF111 => "no-disconnected",
            Code::QF112 => "no-duplicate-sequence-flows",
            Code::QF113 => "no-gateway-join-fork",
            Code::QF114 => "no-implicit-split",
            Code::QF115 => "no-implicit-end",
            Code::QF116 => "no-implicit-start",
            Code::QF117 => "no-inclusive-gateway",
            Code::QF118 => "no-overlapping-elements",
            Code::QF119 => "single-blank-start-event",
            Code::QF120 => "single-event-definition",
            Code::QF121 => "start-event-required",
            Code::QF122 => "sub-process-blank-start-event",
            Code::QF123 => "superfluous-gateway",
            Code::QF124 => "superfluous-label",
            Code::QF125 => "superfluous-termination",
            Code::QF126 => "conditional-event",
            Code::QF127 => "standard-size",
            _ => return None,
        })
    }

    /// One of bpmnlint's rules (QF100 upward): scoped and configured as a
    /// modelling rule rather than a load-time rule.
    pub fn is_modelling(self) -> bool {
        self.alias().is_some()
    }

    /// A rule of bpmnlint's recommended configuration. The two others
    /// (QF126 `conditional-event`, QF127 `standard-size`) are in
    /// `bpmnlint:all` only: as in bpmnlint, they run only when a
    /// configuration turns them on, so [`Code::severity`] is theirs under
    /// `bpmnlint:all` (error).
    pub fn is_recommended(self) -> bool {
        self.is_modelling() && !matches!(self, Code::QF126 | Code::QF127)
    }

    /// The code of a bpmnlint rule name.
    pub fn from_alias(alias: &str) -> Option<Code> {
        Code::ALL.into_iter().find(|c| c.alias() == Some(alias))
    }

    /// Whether a verdict with this code keeps `qflow run` and the console from
    /// running the model: every error, and the namespace slips (QF043, QF044)
    /// that are only warnings to `check` (the document is valid BPMN) but mean
    /// a run would execute something other than what the author wrote.
    pub fn refuses_run(self) -> bool {
        self.severity() == Severity::Error || matches!(self, Code::QF043 | Code::QF044)
    }

    pub fn parse(s: &str) -> Option<Code> {
        Code::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A span with something to say about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

impl Label {
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Label {
            span,
            message: message.into(),
        }
    }
}

/// One text replacement; a fix is a list of them applied together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edit {
    pub span: Span,
    pub new_text: String,
}

/// A machine-applicable resolution, offered by the editor as a quick fix.
/// Fixes are computed by the engine (which knows the model) so every face
/// offers the same ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fix {
    pub title: String,
    pub edits: Vec<Edit>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    /// Where the fault is.
    pub primary: Label,
    /// Other places that explain it (QF022 names the routed boundary here).
    pub related: Vec<Label>,
    /// How to fix it, in words.
    pub help: Option<String>,
    pub fixes: Vec<Fix>,
    /// The id of the BPMN element it is about (a process, a node, a flow,
    /// a definition), when there is one: what other tools key findings on.
    pub element: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with the code's default severity.
    pub fn new(code: Code, span: Span, message: impl Into<String>) -> Self {
        let message = message.into();
        Diagnostic {
            code,
            severity: code.severity(),
            primary: Label::new(span, String::new()),
            message,
            related: Vec::new(),
            help: None,
            fixes: Vec::new(),
            element: None,
        }
    }

    /// The BPMN id this diagnostic is about.
    pub fn element(mut self, id: impl Into<String>) -> Self {
        self.element = Some(id.into());
        self
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.primary.message = label.into();
        self
    }

    pub fn related(mut self, span: Span, message: impl Into<String>) -> Self {
        self.related.push(Label::new(span, message));
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn fix(mut self, title: impl Into<String>, edits: Vec<Edit>) -> Self {
        self.fixes.push(Fix {
            title: title.into(),
            edits,
        });
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Whether this verdict keeps `qflow run` and the console from running
    /// the model: an error (at the severity it was given: a modelling rule's
    /// depends on the document and the configuration), or a namespace slip
    /// (QF043, QF044).
    pub fn refuses_run(&self) -> bool {
        self.is_error() || matches!(self.code, Code::QF043 | Code::QF044)
    }

    /// The flat JSON shape of `qflow check --format json` (documented in the
    /// README): `element` is the BPMN id it is about (or null), `rule` the
    /// bpmnlint name of a modelling rule (or null).
    pub fn to_json(&self, path: &str, source: &str, index: &LineIndex) -> serde_json::Value {
        let place = |span: Span| {
            let p = index.position(source, span.start());
            (p.line + 1, p.column_chars + 1)
        };
        let (line, column) = place(self.primary.span);
        let related: Vec<serde_json::Value> = self
            .related
            .iter()
            .map(|r| {
                let (line, column) = place(r.span);
                serde_json::json!({
                    "message": r.message,
                    "path": path,
                    "line": line,
                    "column": column,
                    "offset": r.span.start(),
                    "length": r.span.len(),
                })
            })
            .collect();
        serde_json::json!({
            "code": self.code.as_str(),
            "severity": self.severity.as_str(),
            "message": self.message,
            "label": self.primary.message,
            "help": self.help,
            "explain": self.code.explain_command(),
            "element": self.element,
            "rule": self.code.alias(),
            "path": path,
            "line": line,
            "column": column,
            "offset": self.primary.span.start(),
            "length": self.primary.span.len(),
            "related": related,
        })
    }
}

/// The furthest offset any report of `diagnostics` resolves to a line and
/// column (the end of every label, related place and fix edit): a face
/// that reports them needs a [`LineIndex::up_to`] that offset, no more.
pub fn furthest(diagnostics: &[Diagnostic]) -> usize {
    diagnostics
        .iter()
        .flat_map(|d| {
            std::iter::once(d.primary.span)
                .chain(d.related.iter().map(|r| r.span))
                .chain(d.fixes.iter().flat_map(|f| f.edits.iter().map(|e| e.span)))
        })
        .map(|span| span.end())
        .max()
        .unwrap_or(0)
}
