//! Every diagnostic links to `docs/diagnostics/QFnnn.md`; every code must have
//! that page, and every page must be about its code (what, why, how to fix,
//! with a before/after snippet).

use std::path::PathBuf;

use qflow_engine::Code;

fn docs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/diagnostics")
}

#[test]
fn every_code_has_a_page_that_names_it() {
    for code in Code::ALL {
        let path = docs().join(format!("{code}.md"));
        let page = std::fs::read_to_string(&path)
            .unwrap_or_else(|_| panic!("{code} has no page at {}", path.display()));
        let title = page.lines().next().unwrap_or("");
        assert!(
            title.starts_with(&format!("# {code}")),
            "{}: the title names the code: {title:?}",
            path.display()
        );
        assert!(
            page.contains(&format!("**Severity:** {}", code.severity().as_str())),
            "{code}: the page states the severity the engine uses"
        );
        for section in [
            "## What",
            "## Why",
            "## How to fix",
            "Before:",
            "After:",
            "```xml",
        ] {
            assert!(page.contains(section), "{code}: the page lacks `{section}`");
        }
        assert!(
            code.doc_url()
                .ends_with(&format!("docs/diagnostics/{code}.md")),
            "{code}: the diagnostic's url is this page"
        );
    }
}

#[test]
fn every_page_is_for_a_known_code() {
    for e in std::fs::read_dir(docs()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        if !stem.starts_with("QF") {
            continue;
        }
        let code = Code::parse(stem).unwrap_or_else(|| panic!("{name}: no such code"));
        let page = std::fs::read_to_string(e.path()).unwrap();
        assert!(page.contains(code.as_str()), "{name} names its code");
    }
}
