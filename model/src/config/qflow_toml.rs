//! `qflow.toml`: qflow's own configuration file. It takes precedence over a
//! `.bpmnlintrc`, and may also switch qflow's advisory codes.
//!
//! ```toml
//! # optional: start from bpmnlint's severities instead of qflow's defaults
//! extends = "bpmnlint:recommended"
//!
//! [rules]
//! label-required = "off"      # a bpmnlint rule, by its name
//! QF118 = "warning"           # or by its code
//! QF033 = "off"               # an advisory code: QF030-QF033, QF040, QF045
//! standard-size = ["warn", { "bpmn:Task" = { width = 120, height = 80 } }]
//!
//! [bounds]
//! requests-per-operation = 50 # QF045 above it (default 100)
//! ```
//!
//! A `qflow.toml` may also name the database of the commands that take
//! `--db` (`db = "ops.db"`, relative to the file's folder, or a
//! `postgres://` URL): see [`database`]. The flag and `QFLOW_DB` win.
//!
//! Levels: `off`, `hint`, `info`, `warning` (or `warn`), `error`. The other
//! codes (the loader's and the runtime's verdicts, QF001-QF044) can only be
//! raised to `error`: `QF043 = "error"` fails the check on a namespace slip.

use super::{parse_level, rule_code, Base, Settings, ADVISORY};
use crate::diagnostic::{Code, Diagnostic};
use crate::span::Span;

/// Read a `qflow.toml`'s text into settings and diagnostics about it.
pub fn parse(text: &str) -> (Settings, Vec<Diagnostic>) {
    let mut settings = Settings::default();
    let mut problems = Vec::new();
    let table: toml::Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            let span = e.span().map_or(Span::at(0), |r| Span::new(r.start, r.end));
            problems.push(
                Diagnostic::new(Code::QF090, span, format!("this qflow.toml is not valid TOML: {}", e.message()))
                    .label("here")
                    .help("fix the TOML; until then the other configuration (or qflow's defaults) applies"),
            );
            return (settings, problems);
        }
    };
    for (key, value) in &table {
        match (key.as_str(), value) {
            ("extends", toml::Value::String(name)) => match name.as_str() {
                "bpmnlint:recommended" => settings.base = Base::Recommended,
                "bpmnlint:all" => settings.base = Base::All,
                _ => problems.push(
                    Diagnostic::new(Code::QF091, value_span(text, name), format!("unknown configuration `{name}`"))
                        .label("ignored")
                        .help("qflow.toml extends bpmnlint:recommended or bpmnlint:all; the other settings still apply"),
                ),
            },
            ("rules", toml::Value::Table(rules)) => {
                for (name, level) in rules {
                    rule(text, name, level, &mut settings, &mut problems);
                }
            }
            ("bounds", toml::Value::Table(bounds)) => {
                for (name, value) in bounds {
                    bound(text, name, value, &mut settings, &mut problems);
                }
            }
            ("bounds", _) => problems.push(
                Diagnostic::new(Code::QF090, key_span(text, key), "`bounds` has the wrong type")
                    .label("ignored")
                    .help("write a [bounds] table: [bounds] then requests-per-operation = 100"),
            ),
            // The database of the store's commands: read by the CLI (`database`).
            ("db", toml::Value::String(_)) => {}
            ("db", _) => problems.push(
                Diagnostic::new(Code::QF090, key_span(text, key), "`db` has the wrong type")
                    .label("ignored")
                    .help("write db = \"qflow.db\" (a SQLite file) or db = \"postgres://host/db\""),
            ),
            ("extends", _) | ("rules", _) => problems.push(
                Diagnostic::new(Code::QF090, key_span(text, key), format!("`{key}` has the wrong type"))
                    .label("ignored")
                    .help("write extends = \"bpmnlint:recommended\" and a [rules] table"),
            ),
            _ => {
                let known = ["extends", "rules", "bounds", "db"];
                let help = match crate::suggest::closest(key, known) {
                    Some(s) => format!("did you mean `{s}`? qflow.toml has `extends`, a [rules] table, a [bounds] table and `db`"),
                    None => "qflow.toml has `extends`, a [rules] table, a [bounds] table and `db`".to_string(),
                };
                problems.push(
                    Diagnostic::new(Code::QF091, key_span(text, key), format!("unknown setting `{key}`"))
                        .label("ignored")
                        .help(help),
                )
            }
        }
    }
    (settings, problems)
}

/// The database a `qflow.toml` names (`db = "…"`), for the commands that
/// take `--db`: the nearest `qflow.toml` walking up from `dir` that has a
/// `db`, as (the file, the value, a SQLite path made relative to the
/// file's folder). A `postgres://` URL is kept as written. A file that is
/// not valid TOML, or whose `db` is not a string, names none (`qflow check`
/// reports it).
pub fn database(dir: &std::path::Path) -> Option<(std::path::PathBuf, String)> {
    let mut at = Some(dir);
    while let Some(d) = at {
        let file = d.join("qflow.toml");
        if let Ok(text) = std::fs::read_to_string(&file) {
            if let Some(db) = text
                .parse::<toml::Table>()
                .ok()
                .and_then(|t| t.get("db").and_then(|v| v.as_str()).map(str::to_string))
            {
                let value = if db.starts_with("postgres://")
                    || db.starts_with("postgresql://")
                    || std::path::Path::new(&db).is_absolute()
                {
                    db
                } else {
                    d.join(&db).display().to_string()
                };
                return Some((file, value));
            }
        }
        at = d.parent();
    }
    None
}

/// One entry of `[bounds]`: `requests-per-operation`, the ceiling of
/// QF045, a positive integer.
fn bound(
    text: &str,
    name: &str,
    value: &toml::Value,
    settings: &mut Settings,
    problems: &mut Vec<Diagnostic>,
) {
    const KNOWN: [&str; 1] = ["requests-per-operation"];
    let span = key_span(text, name);
    if name != KNOWN[0] {
        let help = match crate::suggest::closest(name, KNOWN) {
            Some(s) => {
                format!("did you mean `{s}`? [bounds] has requests-per-operation (QF045's ceiling)")
            }
            None => "[bounds] has requests-per-operation (QF045's ceiling)".to_string(),
        };
        problems.push(
            Diagnostic::new(Code::QF091, span, format!("unknown bound `{name}`"))
                .label("ignored")
                .help(help),
        );
        return;
    }
    match value.as_integer().and_then(|n| u64::try_from(n).ok()).filter(|n| *n >= 1) {
        Some(n) => settings.requests_per_operation = Some(n),
        None => problems.push(
            Diagnostic::new(
                Code::QF091,
                span,
                "requests-per-operation must be a positive integer",
            )
            .label("ignored: the default ceiling applies")
            .help(format!(
                "write requests-per-operation = 100: the most remote requests one business operation may cost a dependency through one call (the default is {})",
                crate::policy::bound::DEFAULT_CEILING
            )),
        ),
    }
}

fn rule(
    text: &str,
    name: &str,
    level: &toml::Value,
    settings: &mut Settings,
    problems: &mut Vec<Diagnostic>,
) {
    let span = key_span(text, name);
    let Some(code) = rule_code(name) else {
        let known = Code::ALL.into_iter().filter_map(Code::alias);
        let help = match crate::suggest::closest(name, known) {
            Some(s) => {
                format!("did you mean `{s}`? rules are named as in bpmnlint, or by code (QF105)")
            }
            None => "rules are named as in bpmnlint, or by code (QF105)".to_string(),
        };
        problems.push(
            Diagnostic::new(Code::QF091, span, format!("unknown rule `{name}`"))
                .label("ignored")
                .help(help),
        );
        return;
    };
    if !code.is_modelling() && !ADVISORY.contains(&code) {
        // A verdict the loader and the runtime rely on may be made
        // stricter (a team gating CI on a namespace slip, QF043), never
        // weaker: `error` is the one level it takes.
        if level.as_str().and_then(parse_level) == Some(Some(crate::Severity::Error)) {
            settings.set(code, Some(crate::Severity::Error));
            return;
        }
        problems.push(
            Diagnostic::new(
                Code::QF091,
                span,
                format!("{code} can only be raised to an error: the loader and the runtime rely on it"),
            )
            .label("ignored")
            .help(format!(
                "write {code} = \"error\" to make it fail the check; qflow.toml switches bpmnlint's rules and the advisory codes QF030-QF033, QF040 and QF045 to any level"
            )),
        );
        return;
    }
    // `[level, options]` as in a .bpmnlintrc: only standard-size takes
    // options (the sizes it expects), the others ignore them.
    let (level, options) = match level {
        toml::Value::Array(a) => (a.first(), a.get(1)),
        v => (Some(v), None),
    };
    if let (Code::QF127, Some(options)) = (code, options) {
        match serde_json::to_value(options) {
            Ok(options) => {
                super::bpmnlintrc::standard_sizes(text, span, &options, settings, problems)
            }
            Err(_) => problems.push(
                Diagnostic::new(Code::QF091, span, "the options of `standard-size` are a table of element types to sizes")
                    .label("options ignored")
                    .help("write standard-size = [\"warn\", { \"bpmn:Task\" = { width = 120, height = 80 } }]"),
            ),
        }
    }
    let word = match level {
        Some(toml::Value::String(s)) => Some(s.clone()),
        Some(toml::Value::Integer(n)) => Some(n.to_string()),
        _ => None,
    };
    match word.as_deref().and_then(parse_level) {
        Some(l) => settings.set(code, l),
        _ => problems.push(
            Diagnostic::new(
                Code::QF091,
                span,
                format!("rule `{name}`: the level must be off, hint, info, warning or error"),
            )
            .label("ignored")
            .help("write \"off\", \"hint\", \"info\", \"warning\" or \"error\""),
        ),
    }
}

/// The span of a key as written (bare or quoted), at its first occurrence at
/// the start of a line.
fn key_span(text: &str, key: &str) -> Span {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let lead = line.len() - trimmed.len();
        for (skip, written) in [(0, key.to_string()), (1, format!("\"{key}\""))] {
            if let Some(rest) = trimmed.strip_prefix(&written) {
                if rest.trim_start().starts_with('=') {
                    let start = offset + lead + skip;
                    return Span::new(start, start + key.len());
                }
            }
        }
        offset += line.len();
    }
    Span::at(0)
}

fn value_span(text: &str, value: &str) -> Span {
    super::bpmnlintrc::string_span(text, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Profile;
    use crate::Severity;

    /// standard-size's options, as in a .bpmnlintrc; a type it does not
    /// size is pointed at.
    #[test]
    fn standard_size_takes_its_options() {
        let text = "[rules]\nstandard-size = [\"warn\", { \"bpmn:Task\" = { width = 120, height = 80 }, \"bpmn:Step\" = { width = 1 } }]\n";
        let (s, p) = parse(text);
        let at: Vec<&str> = p
            .iter()
            .map(|d| &text[d.primary.span.start()..d.primary.span.end()])
            .collect();
        assert_eq!(at, ["bpmn:Step"]);
        assert_eq!(
            s.severity(Code::QF127, Profile::Plain),
            Some(Severity::Warning)
        );
        let task = s.standard_size("bpmn:Task").unwrap();
        assert_eq!((task.width, task.height), (Some(120.0), Some(80.0)));
        let gateway = s.standard_size("bpmn:Gateway").unwrap();
        assert_eq!((gateway.width, gateway.height), (Some(50.0), Some(50.0)));
    }

    #[test]
    fn rules_by_name_and_code_and_advisory_codes() {
        let (s, p) = parse("[rules]\nlabel-required = \"off\"\nQF118 = \"warning\"\nQF033 = \"off\"\nQF032 = \"error\"\n");
        assert!(p.is_empty(), "{p:?}");
        let q = Profile::Qflow { executable: true };
        assert_eq!(s.severity(Code::QF107, q), None);
        assert_eq!(s.severity(Code::QF118, q), Some(Severity::Warning));
        assert_eq!(s.severity(Code::QF033, q), None);
        assert_eq!(s.severity(Code::QF032, q), Some(Severity::Error));
        // Untouched rules keep qflow's defaults.
        assert_eq!(s.severity(Code::QF109, q), None);
        assert_eq!(s.severity(Code::QF119, q), Some(Severity::Error));
    }

    #[test]
    fn problems_point_into_the_file() {
        let text = "extends = \"bpmnlint:everything\"\ncolour = true\n[rules]\nfake-jion = \"off\"\nQF012 = \"off\"\nsuperfluous-gateway = \"loud\"\nno-bpmndi = \"error\"\n";
        let (s, p) = parse(text);
        let got: Vec<(&str, Code)> = p
            .iter()
            .map(|d| (&text[d.primary.span.start()..d.primary.span.end()], d.code))
            .collect();
        assert_eq!(
            got,
            [
                ("colour", Code::QF091),
                ("bpmnlint:everything", Code::QF091),
                ("QF012", Code::QF091),
                ("fake-jion", Code::QF091),
                ("superfluous-gateway", Code::QF091),
            ]
        );
        assert_eq!(
            s.severity(Code::QF109, Profile::Qflow { executable: true }),
            Some(Severity::Error)
        );
    }

    /// `[bounds]` sets QF045's ceiling; a bad value or name is pointed at
    /// and the default stays.
    #[test]
    fn bounds_set_the_request_ceiling() {
        let (s, p) = parse("[bounds]\nrequests-per-operation = 27\n");
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(s.request_ceiling(), 27);
        assert_eq!(Settings::default().request_ceiling(), 100);
        let text = "[bounds]\nrequests-per-operation = 0\nrequest-per-operation = 5\n";
        let (s, p) = parse(text);
        let at: Vec<(&str, Code)> = p
            .iter()
            .map(|d| (&text[d.primary.span.start()..d.primary.span.end()], d.code))
            .collect();
        assert_eq!(
            at,
            [
                ("request-per-operation", Code::QF091),
                ("requests-per-operation", Code::QF091)
            ]
        );
        assert!(p[0]
            .help
            .as_deref()
            .unwrap()
            .contains("did you mean `requests-per-operation`"));
        assert_eq!(s.request_ceiling(), 100);
    }

    #[test]
    fn malformed_toml_is_one_qf090_at_the_fault() {
        let text = "[rules]\nfake-join = off\n";
        let (_, p) = parse(text);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].code, Code::QF090);
        assert!(
            p[0].primary.span.start() >= text.find("off").unwrap(),
            "{:?}",
            p[0]
        );
    }
}
