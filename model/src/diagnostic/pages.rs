//! Each code's page, offline: the files under `docs/diagnostics/` built into
//! every binary that links the model (the CLI's `qflow explain`, the SARIF
//! log's rule help, the language server's links), and written out as files
//! where an editor can open them.
//!
//! Until the project has a public home, no diagnostic links to an address on
//! the web: a link that cannot open is worse than none. The language server
//! links each diagnostic to its page written under the user's cache
//! ([`cache_dir`], [`write_all`]); the terminal and CI name the command that
//! prints it ([`Code::explain_command`]).

use std::io;
use std::path::{Path, PathBuf};

use super::Code;

impl Code {
    /// The page of this code, as written in `docs/diagnostics/QFnnn.md`. A
    /// code without a page does not compile (the match is exhaustive and
    /// `include_str!` needs the file).
    pub fn page(self) -> &'static str {
        match self {
            Code::QF001 => include_str!("../../../docs/diagnostics/QF001.md"),
            Code::QF002 => include_str!("../../../docs/diagnostics/QF002.md"),
            Code::QF003 => include_str!("../../../docs/diagnostics/QF003.md"),
            Code::QF004 => include_str!("../../../docs/diagnostics/QF004.md"),
            Code::QF005 => include_str!("../../../docs/diagnostics/QF005.md"),
            Code::QF006 => include_str!("../../../docs/diagnostics/QF006.md"),
            Code::QF007 => include_str!("../../../docs/diagnostics/QF007.md"),
            Code::QF008 => include_str!("../../../docs/diagnostics/QF008.md"),
            Code::QF010 => include_str!("../../../docs/diagnostics/QF010.md"),
            Code::QF011 => include_str!("../../../docs/diagnostics/QF011.md"),
            Code::QF012 => include_str!("../../../docs/diagnostics/QF012.md"),
            Code::QF013 => include_str!("../../../docs/diagnostics/QF013.md"),
            Code::QF014 => include_str!("../../../docs/diagnostics/QF014.md"),
            Code::QF015 => include_str!("../../../docs/diagnostics/QF015.md"),
            Code::QF020 => include_str!("../../../docs/diagnostics/QF020.md"),
            Code::QF021 => include_str!("../../../docs/diagnostics/QF021.md"),
            Code::QF022 => include_str!("../../../docs/diagnostics/QF022.md"),
            Code::QF030 => include_str!("../../../docs/diagnostics/QF030.md"),
            Code::QF031 => include_str!("../../../docs/diagnostics/QF031.md"),
            Code::QF032 => include_str!("../../../docs/diagnostics/QF032.md"),
            Code::QF033 => include_str!("../../../docs/diagnostics/QF033.md"),
            Code::QF040 => include_str!("../../../docs/diagnostics/QF040.md"),
            Code::QF041 => include_str!("../../../docs/diagnostics/QF041.md"),
            Code::QF042 => include_str!("../../../docs/diagnostics/QF042.md"),
            Code::QF043 => include_str!("../../../docs/diagnostics/QF043.md"),
            Code::QF044 => include_str!("../../../docs/diagnostics/QF044.md"),
            Code::QF045 => include_str!("../../../docs/diagnostics/QF045.md"),
            Code::QF090 => include_str!("../../../docs/diagnostics/QF090.md"),
            Code::QF091 => include_str!("../../../docs/diagnostics/QF091.md"),
            Code::QF100 => include_str!("../../../docs/diagnostics/QF100.md"),
            Code::QF101 => include_str!("../../../docs/diagnostics/QF101.md"),
            Code::QF102 => include_str!("../../../docs/diagnostics/QF102.md"),
            Code::QF103 => include_str!("../../../docs/diagnostics/QF103.md"),
            Code::QF104 => include_str!("../../../docs/diagnostics/QF104.md"),
            Code::QF105 => include_str!("../../../docs/diagnostics/QF105.md"),
            Code::QF106 => include_str!("../../../docs/diagnostics/QF106.md"),
            Code::QF107 => include_str!("../../../docs/diagnostics/QF107.md"),
            Code::QF108 => include_str!("../../../docs/diagnostics/QF108.md"),
            Code::QF109 => include_str!("../../../docs/diagnostics/QF109.md"),
            Code::QF110 => include_str!("../../../docs/diagnostics/QF110.md"),
            Code::QF111 => include_str!("../../../docs/diagnostics/QF111.md"),
            Code::QF112 => include_str!("../../../docs/diagnostics/QF112.md"),
            Code::QF113 => include_str!("../../../docs/diagnostics/QF113.md"),
            Code::QF114 => include_str!("../../../docs/diagnostics/QF114.md"),
            Code::QF115 => include_str!("../../../docs/diagnostics/QF115.md"),
            Code::QF116 => include_str!("../../../docs/diagnostics/QF116.md"),
            Code::QF117 => include_str!("../../../docs/diagnostics/QF117.md"),
            Code::QF118 => include_str!("../../../docs/diagnostics/QF118.md"),
            Code::QF119 => include_str!("../../../docs/diagnostics/QF119.md"),
            Code::QF120 => include_str!("../../../docs/diagnostics/QF120.md"),
            Code::QF121 => include_str!("../../../docs/diagnostics/QF121.md"),
            Code::QF122 => include_str!("../../../docs/diagnostics/QF122.md"),
            Code::QF123 => include_str!("../../../docs/diagnostics/QF123.md"),
            Code::QF124 => include_str!("../../../docs/diagnostics/QF124.md"),
            Code::QF125 => include_str!("../../../docs/diagnostics/QF125.md"),
            Code::QF126 => include_str!("../../../docs/diagnostics/QF126.md"),
            Code::QF127 => include_str!("../../../docs/diagnostics/QF127.md"),
        }
    }

    /// The command that prints this code's page: `qflow explain QF022`.
    pub fn explain_command(self) -> String {
        format!("qflow explain {}", self.as_str())
    }

    /// The file name of this code's page in a directory [`write_all`] wrote.
    pub fn page_file_name(self) -> String {
        format!("{}.md", self.as_str())
    }
}

/// Where the pages of this build are written for editors to open:
/// `$XDG_CACHE_HOME/qflow/VERSION/diagnostics` (else `~/.cache/…`; on
/// Windows `%LOCALAPPDATA%\qflow\…`), or under the temporary directory when
/// no home is known. One directory per version, so two versions' servers
/// never overwrite each other's pages.
pub fn cache_dir() -> PathBuf {
    let non_empty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = non_empty("XDG_CACHE_HOME")
        .or_else(|| {
            if cfg!(windows) {
                non_empty("LOCALAPPDATA")
            } else {
                non_empty("HOME").map(|h| h.join(".cache"))
            }
        })
        .unwrap_or_else(std::env::temp_dir);
    base.join("qflow")
        .join(env!("CARGO_PKG_VERSION"))
        .join("diagnostics")
}

/// Write every code's page into `dir` (created if missing), leaving a page
/// that already holds the same text untouched. Each page is written to a
/// temporary file and renamed into place, so an editor never opens half a
/// page and two servers starting together do not tear one.
pub fn write_all(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for code in Code::ALL {
        let path = dir.join(code.page_file_name());
        let page = code.page();
        if std::fs::read(&path).is_ok_and(|have| have == page.as_bytes()) {
            continue;
        }
        let tmp = dir.join(format!(".{}.{}.tmp", code.as_str(), std::process::id()));
        std::fs::write(&tmp, page)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_is_about_its_code() {
        for code in Code::ALL {
            assert!(code.page().starts_with(&format!("# {code}")), "{code}");
        }
    }

    #[test]
    fn write_all_writes_each_page_once_and_repairs_a_changed_one() {
        let dir = tempfile::tempdir().unwrap();
        let pages = dir.path().join("a/b");
        write_all(&pages).unwrap();
        let qf022 = pages.join("QF022.md");
        assert_eq!(std::fs::read_to_string(&qf022).unwrap(), Code::QF022.page());
        std::fs::write(&qf022, "stale").unwrap();
        write_all(&pages).unwrap();
        assert_eq!(std::fs::read_to_string(&qf022).unwrap(), Code::QF022.page());
        let names = std::fs::read_dir(&pages).unwrap().count();
        assert_eq!(names, Code::ALL.len(), "no temporary file is left behind");
    }
}
