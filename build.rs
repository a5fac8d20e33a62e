//! Embeds every page under `docs/diagnostics/` in the binary, so
//! `qflow explain QFnnn` works offline and always matches the docs it was
//! built from (a new page is picked up without touching the code).

use std::path::Path;

fn main() {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"))
        .join("docs/diagnostics");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut pages: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("docs/diagnostics is readable")
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let code = name.strip_suffix(".md")?;
            (code.starts_with("QF") && code[2..].chars().all(|c| c.is_ascii_digit()))
                .then(|| (code.to_string(), e.path().display().to_string()))
        })
        .collect();
    pages.sort();
    let mut out = String::from("/// Every page under docs/diagnostics/, by code, sorted.\npub static PAGES: &[(&str, &str)] = &[\n");
    for (code, path) in &pages {
        println!("cargo:rerun-if-changed={path}");
        out.push_str(&format!("    ({code:?}, include_str!({path:?})),\n"));
    }
    out.push_str("];\n");
    let target =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("diagnostic_pages.rs");
    std::fs::write(target, out).expect("OUT_DIR is writable");
}
