//! `qflow explain QFnnn`: a diagnostic code's page, offline. The pages are
//! the files under `docs/diagnostics/`, embedded at build time (build.rs).

use std::process::ExitCode;

use qflow_engine::Code;

include!(concat!(env!("OUT_DIR"), "/diagnostic_pages.rs"));

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The code, e.g. QF022 (case and leading zeros do not matter: qf22 works).
    /// Without one, every code is listed with its rule.
    pub code: Option<String>,
}

/// The embedded page of a code.
pub fn page(code: &str) -> Option<&'static str> {
    PAGES.iter().find(|(c, _)| *c == code).map(|(_, p)| *p)
}

/// `qf22`, `22`, `QF022` → `QF022`.
fn normalize(s: &str) -> String {
    let t = s.trim();
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

pub fn run(args: Args) -> ExitCode {
    let Some(raw) = args.code else {
        let mut out = String::new();
        for code in Code::ALL {
            // bpmnlint's rules outside its recommended set run only when a
            // configuration turns them on: their default is off.
            let severity = if code.is_modelling() && !code.is_recommended() {
                "off"
            } else {
                code.severity().as_str()
            };
            out.push_str(&format!("{code}  {severity:<7}  {}\n", code.title()));
        }
        out.push_str("\n`qflow explain CODE` prints a code's page.\n");
        return write_out(&out);
    };
    let code = normalize(&raw);
    match page(&code) {
        Some(text) => {
            let mut out = text.to_string();
            if !out.ends_with('\n') {
                out.push('\n');
            }
            if let Some(c) = Code::parse(&code) {
                out.push_str(&format!("\nOnline: {}\n", c.doc_url()));
            }
            write_out(&out)
        }
        None => {
            let hint = qflow_engine::suggest::closest(&code, PAGES.iter().map(|(c, _)| *c))
                .map(|c| format!(" (did you mean {c}?)"))
                .unwrap_or_default();
            eprintln!("error: no diagnostic code `{raw}`{hint}; `qflow explain` lists every code");
            ExitCode::from(2)
        }
    }
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
    fn every_code_has_an_embedded_page_about_it() {
        for code in Code::ALL {
            let p = page(code.as_str()).unwrap_or_else(|| panic!("{code}: no embedded page"));
            assert!(
                p.starts_with(&format!("# {code}")),
                "{code}: {}",
                &p[..40.min(p.len())]
            );
        }
    }

    #[test]
    fn codes_are_normalized() {
        assert_eq!(normalize("qf22"), "QF022");
        assert_eq!(normalize("22"), "QF022");
        assert_eq!(normalize("QF022"), "QF022");
        assert_eq!(normalize("QF1000"), "QF1000");
        assert_eq!(normalize("nope"), "nope");
    }
}
