//! `qflow check --format lsp`: each file's findings as the language server
//! publishes them (what an editor's "Check Workspace" shows as is), with
//! UTF-16 columns on a line that holds characters beyond the BMP, and a
//! clean file listed with no findings so an editor clears it.

use std::process::Command;

use serde_json::Value;

fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The UTF-16 column of byte `offset` of `text`, and its 0-based line.
fn utf16_position(text: &str, offset: usize) -> (u64, u64) {
    let before = &text[..offset];
    let line = before.matches('\n').count() as u64;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[start..offset].encode_utf16().count() as u64)
}

#[test]
fn check_format_lsp_gives_each_file_its_editor_diagnostics_in_utf16() {
    let dir = tempfile::tempdir().unwrap();
    let original =
        std::fs::read_to_string(repo().join("samples/broken/QF022-retry-beside-routed-timer.bpmn"))
            .unwrap();
    // A comment of a 4-byte (two UTF-16 units) and a 2-byte character just
    // before the finding, on its line: byte, character and UTF-16 columns
    // all differ there.
    let text = original.replacen("<q:retry", "<!--𝄞é--><q:retry", 1);
    assert_ne!(text, original);
    let broken = dir.path().join("broken.bpmn");
    std::fs::write(&broken, &text).unwrap();
    let clean = dir.path().join("clean.bpmn");
    std::fs::copy(repo().join("samples/dbg08-charge.bpmn"), &clean).unwrap();

    let run = |format: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_qflow"))
            .args(["check", "--format", format])
            .arg(&broken)
            .arg(&clean)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "the QF022 model is an error");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let lsp = run("lsp");
    let files = lsp.as_array().unwrap();
    let uri = |p: &std::path::Path| format!("file://{}", p.display());
    assert_eq!(files.len(), 2, "{lsp}");
    assert_eq!(files[0]["uri"], uri(&broken));
    assert_eq!(files[1]["uri"], uri(&clean));
    let errors = |f: &Value| {
        f["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["severity"] == 1)
            .count()
    };
    assert_eq!(errors(&files[1]), 0, "the clean sample: {}", files[1]);

    // Every finding of the broken file, against `--format json`'s byte
    // offsets: the same code, at the UTF-16 position of the same bytes.
    let json = run("json");
    let entries: Vec<&Value> = json
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["path"].as_str().unwrap().ends_with("broken.bpmn"))
        .collect();
    let diagnostics = files[0]["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), entries.len());
    for (d, e) in diagnostics.iter().zip(&entries) {
        assert_eq!(d["code"], e["code"]);
        assert_eq!(d["source"], "qflow");
        let offset = e["offset"].as_u64().unwrap() as usize;
        let (line, character) = utf16_position(&text, offset);
        assert_eq!(d["range"]["start"]["line"], line, "{d}");
        assert_eq!(d["range"]["start"]["character"], character, "{d}");
    }
    let qf022 = diagnostics.iter().find(|d| d["code"] == "QF022").unwrap();
    let (line, character) = utf16_position(&text, text.find("<q:retry").unwrap() + 1);
    assert_eq!(
        qf022["range"]["start"],
        serde_json::json!({"line": line, "character": character})
    );
    // The comment before it is nine characters and ten UTF-16 units (𝄞 is two).
    let line_text = text.lines().nth(line as usize).unwrap();
    let chars_before = line_text[..line_text.find("<q:retry").unwrap()]
        .chars()
        .count() as u64;
    assert_eq!(
        character,
        chars_before + 1 + 1,
        "the UTF-16 column counts 𝄞 twice"
    );
    assert!(qf022["message"].as_str().unwrap().contains("\nhelp: "));
    // `check` writes no pages, so it links none (the extension links the
    // code to `qflow explain` itself): no address that cannot open.
    assert!(qf022.get("codeDescription").is_none(), "{qf022}");
    assert_eq!(
        qf022["relatedInformation"][0]["location"]["uri"],
        uri(&broken)
    );
}
