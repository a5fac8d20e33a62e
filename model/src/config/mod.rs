//! Which rules run, and at what severity: qflow's defaults, a `.bpmnlintrc`,
//! a `qflow.toml`.
//!
//! The modelling rules (QF100 upward, one per bpmnlint rule) have two sets of
//! defaults. A plain BPMN document gets bpmnlint's recommended severities, so
//! a file from any modeller is judged as bpmnlint would judge it. A document
//! that declares the qflow namespace is mostly written by hand in an editor:
//! the mistakes that change what qflow's runtime does are errors in its
//! executable processes (so `qflow run` refuses them), label-required is a
//! hint, the diagram rules are off (hand-written models have no diagram), and
//! every other modelling rule is a warning. The two rules bpmnlint has
//! outside its recommended set (QF126 `conditional-event`, QF127
//! `standard-size`) are off in every document until a configuration turns
//! them on (`extends: bpmnlint:all`, or the rule named).
//!
//! A configuration file changes this: `.bpmnlintrc` in bpmnlint's own format
//! (see [`bpmnlintrc`]) and `qflow.toml` (see [`qflow_toml`]), found by
//! walking up from the model (see [`discover`]). The faces only ask
//! [`Config::for_model`] and pass the result to [`crate::loader::analyze_with`].

use crate::diagnostic::{Code, Severity};

pub mod bpmnlintrc;
pub mod discover;
pub mod qflow_toml;

pub use discover::{Config, ConfigFile, FILE_NAMES};

/// The modelling rules that change what qflow's runtime does when the
/// mistake is in an executable process: two blank starts (the runtime starts
/// at the first), an unconditioned non-default flow out of a split (the
/// runtime takes the first match in document order), a fake join (the task
/// runs once per arriving token), an implicit split (every unconditioned
/// flow is taken), a gateway that joins and forks (it joins first, then
/// forks: not two decisions).
pub const RUNTIME_CHANGING: [Code; 5] = [
    Code::QF101,
    Code::QF105,
    Code::QF113,
    Code::QF114,
    Code::QF119,
];

/// The modelling rules about the diagram rather than the process.
pub const DIAGRAM_RULES: [Code; 2] = [Code::QF109, Code::QF118];

/// qflow's advisory codes, the only non-modelling codes a `qflow.toml` may
/// switch (the others are verdicts the runtime relies on).
pub const ADVISORY: [Code; 6] = [
    Code::QF030,
    Code::QF031,
    Code::QF032,
    Code::QF033,
    Code::QF040,
    Code::QF045,
];

/// What a rule is judged against: a plain BPMN document, or a process of a
/// document that declares the qflow namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Plain,
    Qflow { executable: bool },
}

/// The rule set a configuration starts from before its own `rules`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Base {
    /// qflow's defaults (no `extends`, or no configuration at all).
    #[default]
    Defaults,
    /// `bpmnlint:recommended`: bpmnlint's severities, whatever the document.
    Recommended,
    /// `bpmnlint:all`: every bpmnlint rule an error.
    All,
    /// A `.bpmnlintrc` without `extends`: as in bpmnlint, only the rules it
    /// lists run.
    Listed,
}

/// Resolved severities: a base and per-code overrides (`None` = off).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub base: Base,
    pub overrides: Vec<(Code, Option<Severity>)>,
    /// QF127's sizes a configuration gives (`standard-size`'s options), by
    /// bpmnlint type name; the others are [`STANDARD_SIZES`].
    pub sizes: Vec<(String, Size)>,
    /// The ceiling on a call's worst-case remote requests per business
    /// operation (`qflow.toml`'s `[bounds] requests-per-operation`), above
    /// which QF045 reports it; `None`: not configured, see
    /// [`Settings::request_ceiling`].
    pub requests_per_operation: Option<u64>,
}

/// A standard size QF127 holds a shape to: a dimension that is `None` is
/// not checked (a configuration that gives no number for it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Size {
    pub width: Option<f64>,
    pub height: Option<f64>,
}

// Sizes come from JSON numbers, which are never NaN: equality is reflexive.
impl Eq for Size {}

/// bpmnlint's `standard-size` defaults (bpmn-js's element sizes), by the
/// type name a configuration uses. A participant's is an empty pool's fixed
/// side: its height when horizontal, its width when vertical.
pub const STANDARD_SIZES: [(&str, f64, f64); 8] = [
    ("bpmn:Task", 100.0, 80.0),
    ("bpmn:CallActivity", 100.0, 80.0),
    ("bpmn:SubProcess", 100.0, 80.0),
    ("bpmn:Gateway", 50.0, 50.0),
    ("bpmn:Event", 36.0, 36.0),
    ("bpmn:DataObjectReference", 36.0, 50.0),
    ("bpmn:DataStoreReference", 50.0, 50.0),
    ("bpmn:Participant", 60.0, 60.0),
];

impl Settings {
    /// Set one code (a later setting wins).
    pub fn set(&mut self, code: Code, level: Option<Severity>) {
        self.overrides.retain(|(c, _)| *c != code);
        self.overrides.push((code, level));
    }

    /// Layer `other` over `self`: its base, if it names one, and its overrides.
    pub fn merge(&mut self, other: &Settings) {
        if other.base != Base::Defaults {
            self.base = other.base;
            // A new base resets what the earlier layer said about its rules.
            self.overrides.retain(|(c, _)| !c.is_modelling());
            self.sizes.clear();
        }
        for &(c, l) in &other.overrides {
            self.set(c, l);
        }
        if !other.sizes.is_empty() {
            self.sizes = other.sizes.clone();
        }
        if other.requests_per_operation.is_some() {
            self.requests_per_operation = other.requests_per_operation;
        }
    }

    /// The ceiling QF045 holds every call's worst-case remote requests per
    /// business operation to: the configured one, else
    /// [`crate::policy::bound::DEFAULT_CEILING`].
    pub fn request_ceiling(&self) -> u64 {
        self.requests_per_operation
            .unwrap_or(crate::policy::bound::DEFAULT_CEILING)
    }

    /// The size QF127 expects of a bpmnlint type (`bpmn:Task`): the
    /// configured one, else bpmnlint's default.
    pub fn standard_size(&self, type_name: &str) -> Option<Size> {
        if let Some((_, size)) = self.sizes.iter().find(|(t, _)| t == type_name) {
            return Some(*size);
        }
        STANDARD_SIZES
            .iter()
            .find(|(t, _, _)| *t == type_name)
            .map(|&(_, width, height)| Size {
                width: Some(width),
                height: Some(height),
            })
    }

    /// Whether `code`'s severity is qflow's default (nothing configured it).
    pub fn is_default(&self, code: Code) -> bool {
        self.base == Base::Defaults && !self.overrides.iter().any(|(c, _)| *c == code)
    }

    /// The severity of `code` in a document or process of this profile;
    /// `None` when it is off.
    pub fn severity(&self, code: Code, profile: Profile) -> Option<Severity> {
        if let Some((_, level)) = self.overrides.iter().find(|(c, _)| *c == code) {
            return *level;
        }
        if !code.is_modelling() {
            return Some(code.severity());
        }
        match self.base {
            Base::Defaults => default_severity(code, profile),
            Base::Recommended => Some(code.severity()).filter(|_| code.is_recommended()),
            Base::All => Some(Severity::Error),
            Base::Listed => None,
        }
    }
}

/// A modelling rule's severity without any configuration.
pub fn default_severity(code: Code, profile: Profile) -> Option<Severity> {
    if !code.is_recommended() {
        // bpmnlint:all's rules beyond the recommended ones: off unless a
        // configuration turns them on, in every document.
        return None;
    }
    match profile {
        Profile::Plain => Some(code.severity()),
        Profile::Qflow { executable } => {
            if DIAGRAM_RULES.contains(&code) {
                None
            } else if code == Code::QF107 {
                Some(Severity::Hint)
            } else if executable && RUNTIME_CHANGING.contains(&code) {
                Some(Severity::Error)
            } else {
                Some(Severity::Warning)
            }
        }
    }
}

/// Parse a severity word as bpmnlint (`off`, `warn`, `error`, 0/1/2) and
/// qflow (`hint`, `info`, `warning`) write it: `Some(None)` is off, `None`
/// is not a level.
pub fn parse_level(word: &str) -> Option<Option<Severity>> {
    Some(match word {
        "off" | "0" => None,
        "warn" | "warning" | "1" => Some(Severity::Warning),
        "error" | "2" => Some(Severity::Error),
        "info" => Some(Severity::Info),
        "hint" => Some(Severity::Hint),
        _ => return None,
    })
}

/// The code a configuration names, by code (`QF105`) or bpmnlint name
/// (`fake-join`, also `bpmnlint/fake-join`).
pub fn rule_code(name: &str) -> Option<Code> {
    let bare = name.strip_prefix("bpmnlint/").unwrap_or(name);
    Code::from_alias(bare).or_else(|| Code::parse(bare))
}
