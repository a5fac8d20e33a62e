//! Every diagnostic's page is `docs/diagnostics/QFnnn.md`, built into the
//! binary (`qflow explain`, the language server's links); every code must
//! have that page, and every page must be about its code (what, why, how to
//! fix, with a before/after snippet).

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
        assert_eq!(code.page(), page, "{code}: the built-in page is this file");
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

/// The project's docs stand alone: every relative link between them (and from
/// the top-level pages) resolves to a file, and every `#anchor` to a heading.
#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<PathBuf> = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for dir in ["docs", "docs/diagnostics"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "md") {
                pages.push(e.path());
            }
        }
    }
    let slug = |heading: &str| -> String {
        heading
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect()
    };
    let anchors = |page: &PathBuf| -> Vec<String> {
        std::fs::read_to_string(page)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix('#'))
            .map(|h| slug(h.trim_start_matches('#')))
            .collect()
    };
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let dest = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let name = page.strip_prefix(&root).unwrap().display().to_string();
            if !dest.exists() {
                broken.push(format!("{name}: {target} (no such file)"));
            } else if !anchor.is_empty() && !anchors(&dest).iter().any(|a| a == anchor) {
                broken.push(format!("{name}: {target} (no such heading)"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// docs/rules.md names every load-time code with a link to its page and the
/// title the engine gives it. (The modelling rules, QF100 upward, are listed
/// in docs/diagnostics/README.md.)
#[test]
fn the_rules_page_lists_every_load_time_code() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/rules.md")).unwrap();
    for code in Code::ALL {
        if code.as_str()[2..].parse::<u32>().unwrap_or(0) >= 100 {
            continue;
        }
        let link = format!(
            "| [{code}](diagnostics/{code}.md) | {} |",
            code.severity().as_str()
        );
        assert!(
            page.contains(&link),
            "docs/rules.md lacks the row `{link} … |`"
        );
    }
}
