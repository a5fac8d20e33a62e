//! `qflow explain QFnnn`: a diagnostic code's page, offline. The pages are
//! the files under `docs/diagnostics/`, built into the model
//! (`Code::page`), so the page printed is the one this binary's checks
//! were written with.

use std::process::ExitCode;

use qflow_engine::Code;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The code, e.g. QF022 (case and leading zeros do not matter: qf22
    /// works), or a modelling rule's bpmnlint name (fake-join). Without one,
    /// every code is listed with the severity `qflow check` gives it here.
    pub code: Option<String>,
}

/// `qf22`, `22`, `QF022`, `fake-join` → `QF022`, `QF105`.
fn normalize(s: &str) -> String {
    let t = s.trim();
    if let Some(code) = qflow_engine::config::rule_code(t) {
        return code.as_str().to_string();
    }
    let digits = t
        .strip_prefix("QF")
        .or_else(|| t.strip_prefix("qf"))
        .or_else(|| t.strip_prefix("Qf"))
        .or_else(|| t.strip_prefix("qF"))
        .unwrap_or(t);
    match digits.parse::<u32>() {
        Ok(n) if digits.chars().all(|c| c.is_ascii_digit()) => format!("QF{n:03}"),
        _ => t.to_string(),
    }
}

pub(crate) fn run(args: Args) -> ExitCode {
    let Some(raw) = args.code else {
        return write_out(&list());
    };
    let code = normalize(&raw);
    match Code::parse(&code) {
        Some(c) => {
            let mut out = c.page().to_string();
            if !out.ends_with('\n') {
                out.push('\n');
            }
            write_out(&out)
        }
        None => {
            let hint = qflow_engine::suggest::closest(&code, Code::ALL.iter().map(|c| c.as_str()))
                .map(|c| format!(" (did you mean {c}?)"))
                .unwrap_or_default();
            eprintln!("error: no diagnostic code `{raw}`{hint}; `qflow explain` lists every code");
            ExitCode::from(2)
        }
    }
}

/// Every code with the severity `qflow check` gives it under the
/// configuration that applies in the working directory (qflow's defaults
/// when none does): in an executable process of a qflow model, and in a
/// plain BPMN file; then its bpmnlint rule and title.
fn list() -> String {
    use qflow_engine::config::{Config, Profile};
    let here = std::env::current_dir()
        .unwrap_or_else(|_| ".".into())
        .join("model.bpmn");
    let config = Config::for_model(&here);
    let word = |s: Option<qflow_engine::Severity>| s.map_or("off", |s| s.as_str());
    let mut out = format!(
        "{:<6}  {:<7}  {:<7}  {:<28}  {}\n",
        "CODE", "QFLOW", "PLAIN", "RULE", "TITLE"
    );
    for code in Code::ALL {
        let qflow = word(
            config
                .settings
                .severity(code, Profile::Qflow { executable: true }),
        );
        let plain = word(config.settings.severity(code, Profile::Plain));
        out.push_str(&format!(
            "{:<6}  {qflow:<7}  {plain:<7}  {:<28}  {}\n",
            code.as_str(),
            code.alias().unwrap_or("-"),
            code.title()
        ));
    }
    out.push_str("\nQFLOW: in an executable process of a model that declares urn:qflow:bpmn:1; PLAIN: in any other\nBPMN file; as `qflow check` gives them here");
    match config.configured_by() {
        Some(by) => out.push_str(&format!(" ({by})")),
        None => out.push_str(" (qflow's defaults: no .bpmnlintrc or qflow.toml applies)"),
    }
    out.push_str(".\n`qflow explain CODE` (or a rule's name: qflow explain fake-join) prints a code's page.\n");
    out
}

/// Print to stdout; a closed pipe (`qflow explain QF022 | head`) ends quietly.
fn write_out(text: &str) -> ExitCode {
    use std::io::Write;
    match std::io::stdout().write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_normalized() {
        assert_eq!(normalize("qf22"), "QF022");
        assert_eq!(normalize("22"), "QF022");
        assert_eq!(normalize("QF022"), "QF022");
        assert_eq!(normalize("QF1000"), "QF1000");
        assert_eq!(normalize("nope"), "nope");
        assert_eq!(normalize("fake-join"), "QF105");
        assert_eq!(normalize("bpmnlint/label-required"), "QF107");
    }
}
