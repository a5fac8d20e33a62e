//! Finding the configuration of a model: `--config FILE`, or the nearest
//! `.bpmnlintrc` and the nearest `qflow.toml` walking up from the model's
//! directory. Both may apply: the `qflow.toml` is layered over the
//! `.bpmnlintrc`, so it takes precedence.
//!
//! A file that cannot be read or parsed is reported (QF090, pointing into
//! it) and the rest applies; nothing here panics or fails the check.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{bpmnlintrc, qflow_toml, Settings};
use crate::diagnostic::{Code, Diagnostic};
use crate::span::Span;

/// The file names qflow looks for, in the order they are layered.
pub const FILE_NAMES: [&str; 2] = [".bpmnlintrc", "qflow.toml"];

/// One configuration file that applies, with what qflow said about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    pub path: PathBuf,
    /// Its text, for rendering the diagnostics' spans (empty if unreadable).
    pub text: String,
    /// Problems in the file, with spans into `text`.
    pub diagnostics: Vec<Diagnostic>,
    /// When it was last modified (the language server reloads on change).
    pub modified: Option<SystemTime>,
}

/// The configuration of one model: its settings and the files they came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub settings: Settings,
    pub files: Vec<ConfigFile>,
}

impl Config {
    /// The configuration found by walking up from `model`'s directory.
    pub fn for_model(model: &Path) -> Config {
        Config::from_files(&Config::locate(model))
    }

    /// The configuration of exactly these files (`--config`), layered in order.
    pub fn from_files(paths: &[PathBuf]) -> Config {
        let mut config = Config::default();
        for path in paths {
            let file = read(path);
            let (settings, diagnostics) = parse_file(path, &file.0);
            config.settings.merge(&settings);
            config.files.push(ConfigFile {
                path: path.clone(),
                text: file.0,
                diagnostics: file.1.into_iter().chain(diagnostics).collect(),
                modified: file.2,
            });
        }
        config
    }

    /// Whether any file this configuration was read from changed, appeared
    /// or went away since (a cheap stat per file, for the language server).
    pub fn is_stale(&self, model: &Path) -> bool {
        let now = Config::locate(model);
        let then: Vec<&Path> = self.files.iter().map(|f| f.path.as_path()).collect();
        if now.iter().map(PathBuf::as_path).ne(then.iter().copied()) {
            return true;
        }
        self.files.iter().any(|f| modified(&f.path) != f.modified)
    }

    /// The configuration files that apply to `model`, without reading them.
    pub fn locate(model: &Path) -> Vec<PathBuf> {
        let model = std::path::absolute(model).unwrap_or_else(|_| model.to_path_buf());
        let mut found = Vec::new();
        for name in FILE_NAMES {
            let mut dir = model.parent();
            while let Some(d) = dir {
                let candidate = d.join(name);
                if candidate.is_file() {
                    found.push(candidate);
                    break;
                }
                dir = d.parent();
            }
        }
        found
    }

    /// The files that set the modelling rules, named for a person
    /// (`modelling rules configured by ../.bpmnlintrc`), or `None` under
    /// qflow's defaults. A `.bpmnlintrc` in any parent directory (a home
    /// directory, `/tmp`) can make rules errors that refuse a run; a
    /// refusal or a check that does not name it leaves the user comparing
    /// two machines' output with no clue why they differ.
    pub fn configured_by(&self) -> Option<String> {
        if self.files.is_empty() {
            return None;
        }
        let names: Vec<String> = self.files.iter().map(ConfigFile::shown).collect();
        Some(format!(
            "modelling rules configured by {}",
            names.join(" and ")
        ))
    }

    /// [`Config::configured_by`] when it may have decided one of these
    /// verdicts: a modelling rule's severity is the configuration's to set,
    /// qflow's own codes are not.
    pub fn configured<'a>(
        &self,
        verdicts: impl IntoIterator<Item = &'a Diagnostic>,
    ) -> Option<String> {
        verdicts
            .into_iter()
            .any(|d| d.code.alias().is_some())
            .then(|| self.configured_by())
            .flatten()
    }

    /// Every problem found in the configuration files, with the file.
    pub fn problems(&self) -> impl Iterator<Item = (&ConfigFile, &Diagnostic)> {
        self.files
            .iter()
            .flat_map(|f| f.diagnostics.iter().map(move |d| (f, d)))
    }
}

impl ConfigFile {
    /// Its path as a face shows it: relative to the working directory when
    /// it is under it (as the models are shown), else as found.
    pub fn shown(&self) -> String {
        std::env::current_dir()
            .ok()
            .and_then(|cwd| self.path.strip_prefix(cwd).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| self.path.clone())
            .display()
            .to_string()
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Text, a read failure as a diagnostic, and the modification time.
fn read(path: &Path) -> (String, Option<Diagnostic>, Option<SystemTime>) {
    let stamp = modified(path);
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => (text, None, stamp),
            Err(e) => (
                String::new(),
                Some(
                    Diagnostic::new(
                        Code::QF090,
                        Span::at(0),
                        format!(
                            "{} is not UTF-8 text (byte {})",
                            path.display(),
                            e.utf8_error().valid_up_to()
                        ),
                    )
                    .label("here")
                    .help("save the configuration file as UTF-8"),
                ),
                stamp,
            ),
        },
        Err(e) => (
            String::new(),
            Some(
                Diagnostic::new(
                    Code::QF090,
                    Span::at(0),
                    format!("cannot read {}: {e}", path.display()),
                )
                .label("here")
                .help("check the file exists and is readable"),
            ),
            stamp,
        ),
    }
}

/// `qflow.toml` (any `.toml`) is qflow's format; anything else is a `.bpmnlintrc`.
fn parse_file(path: &Path, text: &str) -> (Settings, Vec<Diagnostic>) {
    if text.is_empty() && !path.exists() {
        return (Settings::default(), Vec::new());
    }
    if path.extension().is_some_and(|e| e == "toml") {
        qflow_toml::parse(text)
    } else {
        bpmnlintrc::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Profile;
    use crate::{Code, Severity};

    #[test]
    fn nearest_files_walking_up_and_qflow_toml_wins() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("models/orders");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(
            dir.path().join(".bpmnlintrc"),
            r#"{ "extends": "bpmnlint:recommended", "rules": { "fake-join": "off", "superfluous-gateway": "off" } }"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("models/qflow.toml"),
            "[rules]\nfake-join = \"error\"\n",
        )
        .unwrap();
        let model = nested.join("order.bpmn");
        let c = Config::for_model(&model);
        assert_eq!(c.files.len(), 2);
        assert!(c.problems().next().is_none());
        let q = Profile::Qflow { executable: false };
        assert_eq!(c.settings.severity(Code::QF105, q), Some(Severity::Error));
        assert_eq!(c.settings.severity(Code::QF123, q), None);
        assert_eq!(c.settings.severity(Code::QF107, q), Some(Severity::Error));
        assert!(!c.is_stale(&model));
        std::fs::write(dir.path().join("models/orders/.bpmnlintrc"), "{}").unwrap();
        assert!(c.is_stale(&model), "a nearer file appeared");
    }

    #[test]
    fn no_files_means_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let c = Config::for_model(&dir.path().join("m.bpmn"));
        assert!(c.files.is_empty() || c.files.iter().all(|f| !f.path.starts_with(dir.path())));
    }
}
