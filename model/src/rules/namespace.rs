//! Namespace slips (QF043, QF044): the two ways a model can look like a
//! qflow model to its author while qflow's execution rules never see it.
//!
//! - QF043: the document binds a namespace that is almost qflow's
//!   (`urn:qflow:bpmn:2`, `http://qflow…`, a typo). Everything in it is
//!   another vendor's extension to qflow, so retries, timeouts and task
//!   kinds are silently ignored.
//! - QF044: qflow task attributes on a process that is not executable. The
//!   execution rules apply only to `isExecutable="true"` processes, so the
//!   process is never checked (and never run).
//!
//! Both are warnings for `qflow check` (the document is valid BPMN) and
//! refusals for `qflow run` and the console, which would otherwise run a
//! model other than the one written.

use crate::diagnostic::{Code, Diagnostic, Edit};
use crate::model::{Definitions, Process};
use crate::span::Span;
use crate::xml::QFLOW_NS;

/// Whether a namespace URI is a near miss of qflow's: it names qflow, or it
/// is a small edit away from `urn:qflow:bpmn:1`.
pub fn looks_like_qflow(uri: &str) -> bool {
    uri != QFLOW_NS
        && (uri.to_ascii_lowercase().contains("qflow")
            || strsim::jaro_winkler(uri, QFLOW_NS) >= 0.9)
}

pub fn check(defs: &Definitions, source: &str, out: &mut Vec<Diagnostic>) {
    for b in &defs.namespace_bindings {
        if !looks_like_qflow(&b.uri.value) {
            continue;
        }
        let skipped = if defs.declares_qflow {
            "elements and attributes bound to it are not qflow's and are ignored".to_string()
        } else {
            format!("qflow's execution rules were skipped because the document does not bind `{QFLOW_NS}`")
        };
        out.push(
            Diagnostic::new(
                Code::QF043,
                b.uri.span,
                format!(
                    "`{}` is not qflow's namespace `{QFLOW_NS}`: {skipped}",
                    b.uri.value
                ),
            )
            .label("close to qflow's namespace, but not it")
            .help(format!(
                "bind the prefix to exactly `{QFLOW_NS}` ({}=\"{QFLOW_NS}\"); qflow resolves its vocabulary by this URI, whatever the prefix",
                b.qname
            ))
            .fix(
                format!("Use qflow's namespace `{QFLOW_NS}`"),
                vec![Edit {
                    span: b.uri.span,
                    new_text: QFLOW_NS.to_string(),
                }],
            ),
        );
    }
    if !defs.declares_qflow {
        return;
    }
    for p in defs.processes.iter().filter(|p| !p.is_executable) {
        if let Some(d) = not_executable(p, source) {
            out.push(d);
        }
    }
}

/// QF044 for a process that is not executable but carries qflow task
/// attributes (`q:task`, `q:channel`) or `<q:retry>`/`<q:timeout>`.
fn not_executable(p: &Process, source: &str) -> Option<Diagnostic> {
    let (node, first) = p.nodes.iter().find_map(|n| {
        let t = n.task_attrs();
        let attr = t
            .and_then(|t| t.task.as_ref().or(t.channel.as_ref()))
            .map(|a| a.full_span)
            .or_else(|| n.retries.first().map(|r| r.name_span))
            .or_else(|| n.timeouts.first().map(|t| t.name_span))?;
        Some((n.id(), attr))
    })?;
    let id = p.id.as_ref().map_or("(no id)", |a| a.value.as_str());
    let written = source
        .get(first.start()..first.end())
        .unwrap_or("")
        .to_string();
    let flag = executable_flag(p, source);
    let why = match &flag {
        Some((_, v)) => format!("it says isExecutable=\"{v}\""),
        None => "it has no isExecutable=\"true\"".to_string(),
    };
    let edit = match flag {
        Some((span, _)) => Edit {
            span,
            new_text: "true".into(),
        },
        None => Edit {
            span: Span::new(p.name_span.end(), p.name_span.end()),
            new_text: " isExecutable=\"true\"".into(),
        },
    };
    Some(
        Diagnostic::new(
            Code::QF044,
            p.name_span,
            format!(
                "qflow's execution rules were skipped because process `{id}` is not executable ({why}), yet its tasks carry qflow attributes"
            ),
        )
        .label("not executable: qflow neither checks nor runs it")
        .related(first, format!("`{written}` on `{node}`"))
        .help("mark the process isExecutable=\"true\" if qflow should run it; otherwise remove the q: attributes")
        .fix("Mark the process executable", vec![edit]),
    )
}

/// The value span and text of the process's `isExecutable` attribute, read
/// from its start tag.
fn executable_flag(p: &Process, source: &str) -> Option<(Span, String)> {
    let tag_start = p.name_span.end();
    let tag = source.get(tag_start..p.span.end())?;
    let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
    let at = tag.find("isExecutable")?;
    let rest = &tag[at + "isExecutable".len()..];
    let q = rest.find(['"', '\''])?;
    let quote = rest.as_bytes()[q] as char;
    let value_start = q + 1;
    let len = rest[value_start..].find(quote)?;
    let start = tag_start + at + "isExecutable".len() + value_start;
    Some((
        Span::new(start, start + len),
        rest[value_start..value_start + len].to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_of_the_namespace() {
        for uri in [
            "urn:qflow:bpmn:2",
            "http://qflow.dev/bpmn/1",
            "urn:qflow:bpnm:1",
            "urn:QFlow:bpmn:1",
            "urn:qfow:bpmn:1",
        ] {
            assert!(looks_like_qflow(uri), "{uri}");
        }
        for uri in [
            QFLOW_NS,
            "http://camunda.org/schema/zeebe/1.0",
            "http://www.w3.org/2001/XMLSchema-instance",
            "urn:example:vendor",
        ] {
            assert!(!looks_like_qflow(uri), "{uri}");
        }
    }
}
