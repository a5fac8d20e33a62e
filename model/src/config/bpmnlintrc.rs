//! `.bpmnlintrc`: bpmnlint's configuration, read as bpmnlint reads it, so a
//! team that lints with bpmnlint today switches without rewriting it.
//!
//! ```json
//! { "extends": "bpmnlint:recommended", "rules": { "label-required": "off" } }
//! ```
//!
//! `extends` is `bpmnlint:recommended` or `bpmnlint:all` (a string or a list);
//! without it, only the rules listed run, as in bpmnlint. A rule's level is
//! `off`/`warn`/`error`, `0`/`1`/`2`, or `[level, options]` (only
//! `standard-size` takes options: the sizes it expects; the others take none). Plugins (`plugin:…`,
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

fn rule(
    text: &str,
    name: &str,
    value: &Value,
    settings: &mut Settings,
    problems: &mut Vec<Diagnostic>,
) {
    let span = string_span(text, name);
    let Some(code) = rule_code(name) else {
        let d = if name.contains('/') && !name.starts_with("bpmnlint/") {
            Diagnostic::new(Code::QF091, span, format!("plugin rule `{name}` is not supported: qflow has no bpmnlint plugins"))
                .label("ignored")
                .help("remove it, or keep linting with bpmnlint for this plugin; the other rules still apply")
        } else {
            let mut d = Diagnostic::new(Code::QF091, span, format!("unknown rule `{name}`"))
                .label("ignored");
            let known = Code::ALL.into_iter().filter_map(Code::alias);
            d = match crate::suggest::closest(name, known) {
                Some(s) => d.help(format!(
                    "did you mean `{s}`? qflow knows bpmnlint's rules and its own QFnnn codes"
                )),
                None => d.help("qflow knows bpmnlint's rules and its own QFnnn codes"),
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
    if code == Code::QF127 {
        if let Some(options) = value.as_array().and_then(|a| a.get(1)) {
            standard_sizes(text, span, options, settings, problems);
        }
    }
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

/// `standard-size`'s options: `{ "bpmn:Task": { "width": 120, "height": 80 } }`
/// replaces a type's standard size, as bpmnlint merges them over its
/// defaults. A type whose value is not an object is not checked, and a
/// dimension that is not a number is not checked, as in bpmnlint; a type
/// bpmnlint does not size, or options that are not an object, get a QF091.
pub(super) fn standard_sizes(
    text: &str,
    rule: Span,
    options: &Value,
    settings: &mut Settings,
    problems: &mut Vec<Diagnostic>,
) {
    let Value::Object(types) = options else {
        problems.push(
            Diagnostic::new(Code::QF091, rule, "the options of `standard-size` are an object of element types to sizes")
                .label("options ignored")
                .help("write \"standard-size\": [\"warn\", { \"bpmn:Task\": { \"width\": 120, \"height\": 80 } }]; bpmnlint's standard sizes apply"),
        );
        return;
    };
    for (type_name, size) in types {
        if super::STANDARD_SIZES.iter().all(|(t, _, _)| t != type_name) {
            let known: Vec<&str> = super::STANDARD_SIZES.iter().map(|(t, _, _)| *t).collect();
            problems.push(
                Diagnostic::new(
                    Code::QF091,
                    string_span(text, type_name),
                    format!("`standard-size` does not size `{type_name}`"),
                )
                .label("ignored")
                .help(format!(
                    "it sizes {}; the other sizes still apply",
                    known.join(", ")
                )),
            );
            continue;
        }
        let number = |k: &str| size.get(k).and_then(Value::as_f64);
        let size = match size {
            Value::Object(_) => super::Size {
                width: number("width"),
                height: number("height"),
            },
            _ => super::Size {
                width: None,
                height: None,
            },
        };
        settings.sizes.retain(|(t, _)| t != type_name);
        settings.sizes.push((type_name.clone(), size));
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
        let at = |d: &Diagnostic| &text[d.primary.span.start()..d.primary.span.end()];
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

    /// bpmnlint's two rules outside its recommended set are off under
    /// `bpmnlint:recommended`, on (error) under `bpmnlint:all`, and at the
    /// level a configuration names.
    #[test]
    fn bpmnlints_rules_outside_recommended_run_when_configured() {
        let q = Profile::Qflow { executable: true };
        let (s, p) = parse(r#"{ "extends": "bpmnlint:recommended" }"#);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(s.severity(Code::QF126, Profile::Plain), None);
        assert_eq!(s.severity(Code::QF127, q), None);
        let (s, _) = parse(r#"{ "extends": "bpmnlint:all" }"#);
        assert_eq!(s.severity(Code::QF126, q), Some(Severity::Error));
        assert_eq!(
            s.severity(Code::QF127, Profile::Plain),
            Some(Severity::Error)
        );
        let text = r#"{ "extends": "bpmnlint:recommended", "rules": { "conditional-event": "warn", "bpmnlint/standard-size": "error" } }"#;
        let (s, p) = parse(text);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(
            s.severity(Code::QF126, Profile::Plain),
            Some(Severity::Warning)
        );
        assert_eq!(s.severity(Code::QF127, q), Some(Severity::Error));
        // Without a configuration they are off in every document.
        let none = Settings::default();
        for profile in [Profile::Plain, q, Profile::Qflow { executable: false }] {
            assert_eq!(none.severity(Code::QF126, profile), None);
            assert_eq!(none.severity(Code::QF127, profile), None);
        }
    }

    /// `standard-size`'s options replace a type's size as bpmnlint merges
    /// them; what it cannot use gets a QF091 at its place.
    #[test]
    fn standard_size_options() {
        let text = r#"{ "rules": { "standard-size": ["warn", {
  "bpmn:Task": { "width": 120, "height": 80 },
  "bpmn:Gateway": { "width": 40 },
  "bpmn:Event": null,
  "bpmn:UserTask": { "width": 1 } }] } }"#;
        let (s, p) = parse(text);
        let at = |d: &Diagnostic| &text[d.primary.span.start()..d.primary.span.end()];
        let got: Vec<(&str, Code)> = p.iter().map(|d| (at(d), d.code)).collect();
        assert_eq!(got, [("bpmn:UserTask", Code::QF091)]);
        assert_eq!(
            s.severity(Code::QF127, Profile::Plain),
            Some(Severity::Warning)
        );
        let size = |t: &str| s.standard_size(t).map(|z| (z.width, z.height));
        assert_eq!(size("bpmn:Task"), Some((Some(120.0), Some(80.0))));
        assert_eq!(size("bpmn:Gateway"), Some((Some(40.0), None)));
        assert_eq!(size("bpmn:Event"), Some((None, None)));
        assert_eq!(size("bpmn:CallActivity"), Some((Some(100.0), Some(80.0))));
        assert_eq!(size("bpmn:UserTask"), None);
        let text = r#"{ "rules": { "standard-size": ["warn", 5] } }"#;
        let (s, p) = parse(text);
        assert_eq!(p.len(), 1);
        let span = p[0].primary.span;
        assert_eq!(&text[span.start()..span.end()], "standard-size");
        assert_eq!(
            s.standard_size("bpmn:Task").map(|z| z.width),
            Some(Some(100.0))
        );
    }

    #[test]
    fn malformed_json_points_at_the_fault() {
        let text = "{\n  \"rules\": { \"fake-join\": off }\n}";
        let (s, p) = parse(text);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].code, Code::QF090);
        assert_eq!(&text[p[0].primary.span.start()..], "off }\n}");
        assert_eq!(s, Settings::default());
    }
}
