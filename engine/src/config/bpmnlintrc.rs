//! `.bpmnlintrc`: bpmnlint's configuration, read as bpmnlint reads it, so a
//! team that lints with bpmnlint today switches without rewriting it.
//!
//! ```json
//! { "extends": "bpmnlint:recommended", "rules": { "label-required": "off" } }
//! ```
//!
//! `extends` is `bpmnlint:recommended` or `bpmnlint:all` (a string or a list);
//! without it, only the rules listed run, as in bpmnlint. A rule's level is
//! `off`/`warn`/`error`, `0`/`1`/`2`, or `[level, options]` (the options of the
//! recommended rules are ignored: they take none). Plugins (`plugin:…`,
//! `name/rule`) are not supported: each gets a QF091 pointing at it, and the
//! rest of the file still applies.

use serde_json::Value;

use super::{parse_level, rule_code, Base, Settings};
use crate::diagnostic::{Code, Diagnostic};
use crate::span::Span;

/// Read a `.bpmnlintrc`'s text into settings and diagnostics about it.
pub fn parse(text: &str) -> (Settings, Vec<Diagnostic>) {
    let mut settings = Settings::default();
    let mut problems = Vec::new();
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let at = offset_of(text, e.line(), e.column());
            problems.push(
                Diagnostic::new(
                    Code::QF090,
                    Span::at(at),
                    format!("this .bpmnlintrc is not valid JSON: {e}"),
                )
                .label("here")
                .help("fix the JSON; until then qflow's default rule settings apply"),
            );
            return (settings, problems);
        }
    };
    let Some(obj) = root.as_object() else {
        problems.push(
            Diagnostic::new(
                Code::QF090,
                Span::new(0, text.len()),
                "a .bpmnlintrc is a JSON object",
            )
            .label("not an object")
            .help("write { \"extends\": \"bpmnlint:recommended\", \"rules\": { … } }"),
        );
        return (settings, problems);
    };
    settings.base = Base::Listed;
    let extends: Vec<&Value> = match obj.get("extends") {
        None => Vec::new(),
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v) => vec![v],
    };
    for ext in extends {
        let Some(name) = ext.as_str() else {
            problems.push(
                Diagnostic::new(
                    Code::QF090,
                    key_span(text, "extends"),
                    "`extends` is a configuration name or a list of them",
                )
                .label("not a name")
                .help("write \"extends\": \"bpmnlint:recommended\""),
            );
            continue;
        };
        match name {
            "bpmnlint:recommended" => settings.base = Base::Recommended,
            "bpmnlint:all" => settings.base = Base::All,
            _ => {
                let what = if name.starts_with("plugin:") {
                    format!("plugin configuration `{name}` is not supported: qflow has no bpmnlint plugins")
                } else {
                    format!("unknown configuration `{name}`")
                };
                problems.push(
                    Diagnostic::new(Code::QF091, string_span(text, name), what)
                        .label("ignored")
                        .help("qflow knows bpmnlint:recommended and bpmnlint:all; the other settings in this file still apply"),
                );
            }
        }
    }
    match obj.get("rules") {
        None => {}
        Some(Value::Object(rules)) => {
            for (name, value) in rules {
                rule(text, name, value, &mut settings, &mut problems);
            }
        }
        Some(_) => problems.push(
            Diagnostic::new(
                Code::QF090,
                key_span(text, "rules"),
                "`rules` is an object of rule names to levels",
            )
            .label("not an object")
            .help("write \"rules\": { \"label-required\": \"off\" }"),
        ),
    }
    (settings, problems)
}

/// bpmnlint 11.15's rules outside its recommended configuration (in
/// `bpmnlint:all` only), which qflow does not implement.
const NOT_RECOMMENDED: [&str; 2] = ["conditional-event", "standard-size"];

fn rule(
    text: &str,
    name: &str,
    value: &Value,
    settings: &mut Settings,
    problems: &mut Vec<Diagnostic>,
) {
    let span = string_span(text, name);
    let Some(code) = rule_code(name) else {
        let bare = name.strip_prefix("bpmnlint/").unwrap_or(name);
        let d = if NOT_RECOMMENDED.contains(&bare) {
            Diagnostic::new(Code::QF091, span, format!("bpmnlint's `{bare}` is not one of the rules qflow implements"))
                .label("ignored")
                .help("qflow implements bpmnlint's recommended rules; `conditional-event` and `standard-size` (in bpmnlint:all only) are not among them; the other rules still apply")
        } else if name.contains('/') && !name.starts_with("bpmnlint/") {
            Diagnostic::new(Code::QF091, span, format!("plugin rule `{name}` is not supported: qflow has no bpmnlint plugins"))
                .label("ignored")
                .help("remove it, or keep linting with bpmnlint for this plugin; the other rules still apply")
        } else {
            let mut d = Diagnostic::new(Code::QF091, span, format!("unknown rule `{name}`"))
                .label("ignored");
            let known = Code::ALL.into_iter().filter_map(Code::alias);
            d = match crate::suggest::closest(name, known) {
                Some(s) => d.help(format!("did you mean `{s}`? qflow knows bpmnlint's recommended rules and its own QFnnn codes")),
                None => d.help("qflow knows bpmnlint's recommended rules and its own QFnnn codes"),
            };
            d
        };
        problems.push(d);
        return;
    };
    let level = match value {
        Value::Array(a) => a.first(),
        v => Some(v),
    };
    let word = match level {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    match word.as_deref().and_then(parse_level) {
        Some(level) if code.is_modelling() => settings.set(code, level),
        Some(_) => problems.push(
            Diagnostic::new(Code::QF091, span, format!("{code} is not a bpmnlint rule: set it in qflow.toml"))
                .label("ignored here")
                .help("a .bpmnlintrc configures bpmnlint's rules; qflow's own advisory codes are switched in qflow.toml"),
        ),
        _ => problems.push(
            Diagnostic::new(Code::QF091, span, format!("rule `{name}`: the level must be \"off\", \"warn\" or \"error\" (or 0, 1, 2)"))
                .label("ignored")
                .help("write \"off\", \"warn\" or \"error\""),
        ),
    }
}

/// The byte offset of a 1-based line and column (serde_json's position).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (start + column.saturating_sub(1)).min(text.len())
}

/// The span of `"s"` (inside the quotes) at its first occurrence.
pub(super) fn string_span(text: &str, s: &str) -> Span {
    let needle = format!("\"{s}\"");
    match text.find(&needle) {
        Some(at) => Span::new(at + 1, at + 1 + s.len()),
        None => Span::at(0),
    }
}

fn key_span(text: &str, key: &str) -> Span {
    string_span(text, key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Profile;
    use crate::Severity;

    #[test]
    fn recommended_with_one_rule_off() {
        let (s, p) = parse(
            r#"{ "extends": "bpmnlint:recommended", "rules": { "label-required": "off", "fake-join": ["error", {}] } }"#,
        );
        assert!(p.is_empty(), "{p:?}");
        let q = Profile::Qflow { executable: true };
        assert_eq!(s.severity(Code::QF107, q), None);
        assert_eq!(s.severity(Code::QF105, q), Some(Severity::Error));
        assert_eq!(s.severity(Code::QF123, q), Some(Severity::Warning));
        assert_eq!(s.severity(Code::QF109, q), Some(Severity::Error));
    }

    #[test]
    fn without_extends_only_listed_rules_run() {
        let (s, p) = parse(r#"{ "rules": { "no-implicit-end": 2 } }"#);
        assert!(p.is_empty());
        assert_eq!(
            s.severity(Code::QF115, Profile::Plain),
            Some(Severity::Error)
        );
        assert_eq!(s.severity(Code::QF116, Profile::Plain), None);
        // qflow's own codes are untouched.
        assert_eq!(
            s.severity(Code::QF012, Profile::Plain),
            Some(Severity::Error)
        );
    }

    #[test]
    fn problems_point_into_the_file_and_the_rest_applies() {
        let text = r#"{
  "extends": ["bpmnlint:recommended", "plugin:camunda-compat/camunda-cloud-8-0"],
  "rules": { "fake-jion": "off", "camunda-compat/timer": "error", "no-inclusive-gateway": "sometimes", "superfluous-gateway": "off" }
}"#;
        let (s, p) = parse(text);
        let at = |d: &Diagnostic| &text[d.primary.span.start..d.primary.span.end];
        let got: Vec<(&str, Code)> = p.iter().map(|d| (at(d), d.code)).collect();
        assert_eq!(
            got,
            [
                ("plugin:camunda-compat/camunda-cloud-8-0", Code::QF091),
                ("camunda-compat/timer", Code::QF091),
                ("fake-jion", Code::QF091),
                ("no-inclusive-gateway", Code::QF091),
            ]
        );
        assert!(p[2].help.as_deref().unwrap().contains("fake-join"));
        assert_eq!(s.severity(Code::QF123, Profile::Plain), None);
        assert_eq!(
            s.severity(Code::QF107, Profile::Plain),
            Some(Severity::Error)
        );
    }

    /// bpmnlint's two rules outside its recommended set are named as such,
    /// not as unknown rules with a near miss suggested.
    #[test]
    fn bpmnlints_rules_outside_recommended_are_named_as_not_implemented() {
        let text = r#"{ "extends": "bpmnlint:recommended", "rules": { "conditional-event": "warn", "bpmnlint/standard-size": "error", "fake-join": "off" } }"#;
        let (s, p) = parse(text);
        let at = |d: &Diagnostic| &text[d.primary.span.start..d.primary.span.end];
        let got: Vec<(&str, &str)> = p.iter().map(|d| (at(d), d.message.as_str())).collect();
        assert_eq!(
            got,
            [
                (
                    "bpmnlint/standard-size",
                    "bpmnlint's `standard-size` is not one of the rules qflow implements"
                ),
                (
                    "conditional-event",
                    "bpmnlint's `conditional-event` is not one of the rules qflow implements"
                ),
            ]
        );
        assert!(p.iter().all(|d| d.code == Code::QF091));
        assert_eq!(s.severity(Code::QF105, Profile::Plain), None);
    }

    #[test]
    fn malformed_json_points_at_the_fault() {
        let text = "{\n  \"rules\": { \"fake-join\": off }\n}";
        let (s, p) = parse(text);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].code, Code::QF090);
        assert_eq!(&text[p[0].primary.span.start..], "off }\n}");
        assert_eq!(s, Settings::default());
    }
}
