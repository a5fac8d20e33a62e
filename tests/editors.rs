//! The editor setups of docs/editors.md, tried with the real editor where
//! it is installed: Neovim, headless, with docs/editors/qflow.lua as its
//! only configuration, gets qflow's diagnostics on a `.bpmn` model (and on
//! a `.bpmn20.xml` one, Activiti's and Flowable's suffix) and attaches no
//! server to a plain `.xml` file. Without `nvim` (a machine
//! without Debian's `neovim`), the test says it skips; CI installs it.

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn neovim_gets_the_diagnostics_of_a_bpmn_model_and_leaves_xml_alone() {
    neovim_sees("model.bpmn");
}

#[test]
fn neovim_takes_a_bpmn20_xml_file_for_a_model_not_for_xml() {
    neovim_sees("order.bpmn20.xml");
}

/// Neovim opens a model named `name` (QF022's sample), then `pom.xml`.
fn neovim_sees(name: &str) {
    if Command::new("nvim").arg("--version").output().is_err() {
        println!("skipping: nvim not found (Debian: apt-get install neovim)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join(name);
    std::fs::copy(
        repo().join("samples/broken/QF022-retry-beside-routed-timer.bpmn"),
        &model,
    )
    .unwrap();
    let xml = dir.path().join("pom.xml");
    std::fs::write(&xml, "<project><name>not BPMN</name></project>\n").unwrap();
    let out = dir.path().join("seen.txt");
    let o = Command::new("nvim")
        .current_dir(dir.path())
        .env("QFLOW_NVIM_OUT", &out)
        .env("QFLOW_NVIM_MODEL", &model)
        .env("QFLOW_NVIM_XML", &xml)
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .args(["--headless", "-i", "NONE", "-n", "-u"])
        .arg(repo().join("docs/editors/qflow.lua"))
        .arg("--cmd")
        .arg(format!(
            "let g:qflow_path = '{}'",
            env!("CARGO_BIN_EXE_qflow")
        ))
        .arg("-c")
        .arg(format!(
            "luafile {}",
            repo().join("tests/editors/nvim-check.lua").display()
        ))
        .output()
        .expect("nvim runs");
    let seen = std::fs::read_to_string(&out).unwrap_or_else(|_| {
        panic!(
            "nvim wrote nothing: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    assert!(seen.contains("filetype: bpmn\n"), "{seen}");
    assert!(seen.contains("diagnostics: true\n"), "{seen}");
    assert!(seen.contains("code: QF022 "), "{seen}");
    assert!(seen.contains("xml filetype: xml\n"), "{seen}");
    assert!(seen.contains("xml clients: 0\n"), "{seen}");
}
