//! `qflow check --format sarif`: the verdicts as one SARIF 2.1.0 log, for
//! code-scanning consumers (a CI's annotations, a security dashboard).
//!
//! One run; one rule per code reported (its title, its page, bpmnlint's
//! name as the rule's name where it has one; no default level, since a
//! code's level depends on the document and the configuration); one result
//! per diagnostic with its place (1-based lines and columns counted in
//! Unicode code points, the columns `qflow check` prints), its element as a
//! logical location, its related places, and its quick fix as a SARIF fix.

use qflow_engine::diagnostic::{Code, Diagnostic};
use qflow_engine::span::{LineIndex, Span};
use qflow_engine::Severity;
use serde_sarif::sarif;

/// The published SARIF 2.1.0 schema, named in the log's `$schema`.
const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The results so far, and the rules they refer to (by index, in order of
/// first use).
#[derive(Default)]
pub(crate) struct Log {
    rules: Vec<Code>,
    results: Vec<sarif::Result>,
}

fn level(s: Severity) -> sarif::ResultLevel {
    match s {
        Severity::Error => sarif::ResultLevel::Error,
        Severity::Warning => sarif::ResultLevel::Warning,
        Severity::Info | Severity::Hint => sarif::ResultLevel::Note,
    }
}

/// A path as a URI reference: forward slashes, and the characters a URI
/// reserves percent-encoded (a path with a space stays one location).
fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '\\' => out.push('/'),
            ' ' => out.push_str("%20"),
            '%' => out.push_str("%25"),
            '#' => out.push_str("%23"),
            '?' => out.push_str("%3F"),
            '[' => out.push_str("%5B"),
            ']' => out.push_str("%5D"),
            c => out.push(c),
        }
    }
    out
}

/// Where a span is: start and end (the column after the last character), 1-based.
fn region(span: Span, text: &str, index: &LineIndex) -> sarif::Region {
    let start = index.position(text, span.start());
    let end = index.position(text, span.end());
    sarif::Region::builder()
        .start_line(start.line as i64 + 1)
        .start_column(start.column_chars as i64 + 1)
        .end_line(end.line as i64 + 1)
        .end_column(end.column_chars as i64 + 1)
        .build()
}

fn physical(path: &str, region: sarif::Region) -> sarif::PhysicalLocation {
    sarif::PhysicalLocation::builder()
        .artifact_location(sarif::ArtifactLocation::builder().uri(uri(path)).build())
        .region(region)
        .build()
}

impl Log {
    /// Add one diagnostic of the file shown as `path`.
    pub(crate) fn push(&mut self, d: &Diagnostic, path: &str, text: &str, index: &LineIndex) {
        let rule_index = match self.rules.iter().position(|c| *c == d.code) {
            Some(i) => i,
            None => {
                self.rules.push(d.code);
                self.rules.len() - 1
            }
        };
        let primary = physical(path, region(d.primary.span, text, index));
        let location = sarif::Location::builder().physical_location(primary);
        let location = match &d.element {
            Some(id) => location
                .logical_locations(vec![sarif::LogicalLocation::builder()
                    .name(id.clone())
                    .kind("element")
                    .build()])
                .message(sarif::Message::from(&d.primary.message))
                .build(),
            None => location
                .message(sarif::Message::from(&d.primary.message))
                .build(),
        };
        let related: Vec<sarif::Location> = d
            .related
            .iter()
            .enumerate()
            .map(|(i, r)| {
                sarif::Location::builder()
                    .id(i as i64)
                    .physical_location(physical(path, region(r.span, text, index)))
                    .message(sarif::Message::from(&r.message))
                    .build()
            })
            .collect();
        let fixes: Vec<sarif::Fix> = d
            .fixes
            .iter()
            .map(|f| {
                let replacements: Vec<sarif::Replacement> = f
                    .edits
                    .iter()
                    .map(|e| {
                        sarif::Replacement::builder()
                            .deleted_region(region(e.span, text, index))
                            .inserted_content(
                                sarif::ArtifactContent::builder()
                                    .text(e.new_text.clone())
                                    .build(),
                            )
                            .build()
                    })
                    .collect();
                sarif::Fix::builder()
                    .description(sarif::Message::from(&f.title))
                    .artifact_changes(vec![sarif::ArtifactChange::builder()
                        .artifact_location(
                            sarif::ArtifactLocation::builder().uri(uri(path)).build(),
                        )
                        .replacements(replacements)
                        .build()])
                    .build()
            })
            .collect();
        let mut message = d.message.clone();
        if let Some(help) = &d.help {
            message.push_str("\n\n");
            message.push_str(help);
        }
        let result = sarif::Result::builder()
            .rule_id(d.code.as_str())
            .rule_index(rule_index as i64)
            .level(level(d.severity))
            .message(sarif::Message::from(&message))
            .locations(vec![location]);
        let result = match (related.is_empty(), fixes.is_empty()) {
            (true, true) => result.build(),
            (false, true) => result.related_locations(related).build(),
            (true, false) => result.fixes(fixes).build(),
            (false, false) => result.related_locations(related).fixes(fixes).build(),
        };
        self.results.push(result);
    }

    /// The log: one run of qflow with its rules and results.
    pub(crate) fn finish(self) -> sarif::Sarif {
        let rules: Vec<sarif::ReportingDescriptor> = self
            .rules
            .iter()
            .map(|code| {
                let rule = sarif::ReportingDescriptor::builder()
                    .id(code.as_str())
                    .short_description(sarif::MultiformatMessageString::from(
                        &code.title().to_string(),
                    ))
                    // No helpUri while the project has no public home (a dead
                    // address helps nobody); the page itself is the help, so
                    // a code-scanning view shows it beside the alert.
                    .help(
                        sarif::MultiformatMessageString::builder()
                            .text(format!(
                                "{} prints this code's page",
                                code.explain_command()
                            ))
                            .markdown(code.page())
                            .build(),
                    );
                match code.alias() {
                    Some(alias) => rule.name(alias).build(),
                    None => rule.build(),
                }
            })
            .collect();
        let driver = sarif::ToolComponent::builder()
            .name("qflow")
            .version(env!("CARGO_PKG_VERSION"))
            .rules(rules);
        // The workspace's repository address once it has one (none is
        // configured until the project has a public home).
        let driver = match env!("CARGO_PKG_REPOSITORY") {
            "" => driver.build(),
            uri => driver.information_uri(uri).build(),
        };
        let run = sarif::Run::builder()
            .tool(driver)
            .column_kind(serde_json::json!("unicodeCodePoints"))
            .results(self.results)
            .build();
        sarif::Sarif::builder()
            .version(serde_json::json!("2.1.0"))
            .schema(SCHEMA)
            .runs(vec![run])
            .build()
    }
}
