//! The architecture's invariants (ARCHITECTURE.md, "Invariants"), checked by
//! reading the sources: which layer may name which, and what the faces may
//! not compute. Each check reads the code with comments removed (and, where a
//! check is about names, string literals too), so prose about a layer never
//! trips it and an `use` of one always does.
//!
//! No check has an exception: a file that breaks an invariant fails it.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir` (relative to the repository), sorted.
fn rust_files(dir: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join(dir), &mut out);
    assert!(!out.is_empty(), "no Rust sources under {dir}");
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root())
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

/// A source file split into what the compiler reads.
struct Source {
    path: String,
    /// The code without comments, string literals blanked to `""`.
    code: String,
    /// The code without comments, string literals kept.
    with_strings: String,
    /// The contents of every string literal.
    strings: Vec<String>,
}

impl Source {
    fn read(p: &Path) -> Source {
        let text = std::fs::read_to_string(p).unwrap();
        let (code, with_strings, strings) = lex(&text);
        Source {
            path: rel(p),
            code,
            with_strings,
            strings,
        }
    }

    /// Whether the code (no comments, no strings) names identifier `ident`.
    fn names(&self, ident: &str) -> bool {
        let is_ident = |c: char| c.is_alphanumeric() || c == '_';
        self.code.match_indices(ident).any(|(i, _)| {
            let before = self.code[..i].chars().next_back();
            let after = self.code[i + ident.len()..].chars().next();
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
        })
    }
}

/// Removes comments (line, block, nested) from Rust source; returns the code
/// with string literals blanked, the code with them kept, and the literals.
fn lex(src: &str) -> (String, String, Vec<String>) {
    let mut l = Lexer {
        chars: src.chars().collect(),
        i: 0,
        code: String::new(),
        kept: String::new(),
        strings: Vec::new(),
    };
    while l.i < l.chars.len() {
        let _ = l.comment() || l.raw_string() || l.string() || l.char_literal() || l.other();
    }
    (l.code, l.kept, l.strings)
}

struct Lexer {
    chars: Vec<char>,
    i: usize,
    code: String,
    kept: String,
    strings: Vec<String>,
}

impl Lexer {
    fn at(&self, k: usize) -> Option<char> {
        self.chars.get(k).copied()
    }

    fn starts(&self, s: &str) -> bool {
        s.chars()
            .enumerate()
            .all(|(n, c)| self.at(self.i + n) == Some(c))
    }

    /// `// …` to the end of the line, or `/* … */` (nested).
    fn comment(&mut self) -> bool {
        if self.starts("//") {
            while self.at(self.i).is_some_and(|c| c != '\n') {
                self.i += 1;
            }
            return true;
        }
        if !self.starts("/*") {
            return false;
        }
        let mut depth = 0;
        while self.i < self.chars.len() {
            if self.starts("/*") {
                depth += 1;
                self.i += 2;
            } else if self.starts("*/") {
                depth -= 1;
                self.i += 2;
                if depth == 0 {
                    break;
                }
            } else {
                self.i += 1;
            }
        }
        true
    }

    fn literal(&mut self, body: String, resume: usize) -> bool {
        self.code.push_str("\"\"");
        self.kept.push('"');
        self.kept.push_str(&body);
        self.kept.push('"');
        self.strings.push(body);
        self.i = resume.min(self.chars.len());
        true
    }

    /// `r"…"`, `r#"…"#`, `br"…"` (not the tail of an identifier like `for`).
    fn raw_string(&mut self) -> bool {
        let prev_ident = self.i > 0
            && self
                .at(self.i - 1)
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let start = if self.starts("br") {
            self.i + 2
        } else if self.starts("r") {
            self.i + 1
        } else {
            return false;
        };
        if prev_ident || !matches!(self.at(start), Some('"' | '#')) {
            return false;
        }
        let hashes = (start..).take_while(|&k| self.at(k) == Some('#')).count();
        let open = start + hashes;
        if self.at(open) != Some('"') {
            return false;
        }
        let closes = |k: usize| {
            self.at(k) == Some('"') && (0..hashes).all(|h| self.at(k + 1 + h) == Some('#'))
        };
        let end = (open + 1..self.chars.len())
            .find(|&k| closes(k))
            .unwrap_or(self.chars.len());
        let body: String = self.chars[open + 1..end].iter().collect();
        self.literal(body, end + 1 + hashes)
    }

    /// `"…"` with escapes (a byte string's `b` stays in the code, harmlessly).
    fn string(&mut self) -> bool {
        if self.at(self.i) != Some('"') {
            return false;
        }
        let mut k = self.i + 1;
        let mut body = String::new();
        while let Some(c) = self.at(k).filter(|c| *c != '"') {
            body.push(c);
            if c == '\\' {
                body.extend(self.at(k + 1));
                k += 1;
            }
            k += 1;
        }
        self.literal(body, k + 1)
    }

    /// `'x'`, `'\n'`, `'\''`; a lifetime (`'a`) is code.
    fn char_literal(&mut self) -> bool {
        if self.at(self.i) != Some('\'') {
            return false;
        }
        let end = if self.at(self.i + 1) == Some('\\') {
            (self.i + 3..self.chars.len()).find(|&k| self.at(k) == Some('\''))
        } else if self.at(self.i + 2) == Some('\'') {
            Some(self.i + 2)
        } else {
            None
        };
        let Some(end) = end else { return false };
        self.code.push_str("' '");
        self.kept.extend(&self.chars[self.i..=end]);
        self.i = end + 1;
        true
    }

    fn other(&mut self) -> bool {
        let c = self.chars[self.i];
        self.code.push(c);
        self.kept.push(c);
        self.i += 1;
        true
    }
}

fn sources(dirs: &[&str]) -> Vec<Source> {
    dirs.iter()
        .flat_map(|d| rust_files(d))
        .map(|p| Source::read(&p))
        .collect()
}

/// The faces: argument parsing and rendering, never rules.
const FACES: &[&str] = &["src/cli", "lsp/src", "tui/src"];

/// Fails listing every file that breaks an invariant.
fn check(invariant: &str, offenders: Vec<String>) {
    assert!(
        offenders.is_empty(),
        "{invariant} (ARCHITECTURE.md, Invariants); broken by:\n  {}",
        offenders.join("\n  ")
    );
}

/// The qflow crates a crate's `[dependencies]` names (dev-dependencies are
/// a test's business: a crate's tests may use the harness of one below).
fn qflow_dependencies(krate: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join(krate).join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("{krate}/Cargo.toml: {e}"));
    let mut in_deps = false;
    let mut deps = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]" || line.ends_with(".dependencies]");
            continue;
        }
        if in_deps && line.starts_with("qflow-") {
            let name = line.split(['.', ' ', '=']).next().unwrap_or_default();
            deps.push(name.to_string());
        }
    }
    deps.sort();
    deps
}

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    // From the bottom: the durable vocabulary, the model, the store, the
    // runtime, the facade with its services; the language server stands on
    // the model alone, the console and the binary on the facade.
    const LAYERS: &[(&str, &str, &[&str])] = &[
        ("instance", "qflow-instance", &[]),
        ("model", "qflow-model", &["qflow-instance"]),
        ("store", "qflow-store", &["qflow-instance"]),
        (
            "runtime",
            "qflow-runtime",
            &["qflow-instance", "qflow-model", "qflow-store"],
        ),
        (
            "engine",
            "qflow-engine",
            &[
                "qflow-instance",
                "qflow-model",
                "qflow-runtime",
                "qflow-store",
            ],
        ),
        ("lsp", "qflow-lsp", &["qflow-model"]),
        ("tui", "qflow-tui", &["qflow-engine"]),
    ];
    let offenders = LAYERS
        .iter()
        .flat_map(|(dir, name, allowed)| {
            qflow_dependencies(dir)
                .into_iter()
                .filter(|d| !allowed.contains(&d.as_str()))
                .map(move |d| format!("{name} depends on {d}"))
        })
        .collect();
    check("each crate depends only on the layers below it", offenders);
}

#[test]
fn lsp_types_only_in_the_conversion_module_and_the_server_glue() {
    // convert.rs converts; lib.rs builds the service, server.rs answers
    // requests, transport.rs frames them, store.rs keys documents by URI.
    const GLUE: &[&str] = &[
        "lsp/src/convert.rs",
        "lsp/src/lib.rs",
        "lsp/src/server.rs",
        "lsp/src/store.rs",
        "lsp/src/transport.rs",
    ];
    let offenders = sources(&[
        "engine/src",
        "model/src",
        "runtime/src",
        "lsp/src",
        "tui/src",
        "src",
    ])
    .into_iter()
    .filter(|s| s.names("tower_lsp_server") || s.names("lsp_types") || s.names("ls_types"))
    .filter(|s| !GLUE.contains(&s.path.as_str()))
    .map(|s| s.path)
    .collect();
    check(
        "LSP types appear only in lsp/src/convert.rs and the server glue",
        offenders,
    );
}

#[test]
fn faces_do_not_compute_schedules() {
    // The steps of a schedule. A face asks the engine for a whole one
    // (`worst_case` and its `summary`, `upcoming`), never steps it.
    const STEPS: &[&str] = &[
        "delay_before",
        "delay_with_jitter",
        "jitter_bounds",
        "jitter_unit",
        "next_after_failure",
        "rate_limited_delay",
    ];
    let offenders = sources(FACES)
        .into_iter()
        .filter_map(|s| {
            let used: Vec<&str> = STEPS.iter().copied().filter(|f| s.names(f)).collect();
            (!used.is_empty()).then(|| format!("{} ({})", s.path, used.join(", ")))
        })
        .collect();
    check("faces do not compute retry schedules", offenders);
}

#[test]
fn faces_do_not_parse_channel_config() {
    // Reading a `<q:channelConfig>` attribute's text starts with taking the
    // model's optional attribute; the parsed ChannelPolicy has plain values.
    let offenders = sources(FACES)
        .into_iter()
        .filter(|s| {
            let code: String = s.code.split_whitespace().collect();
            code.contains("max_deliveries.as_ref()") || code.contains("delivery_interval.as_ref()")
        })
        .map(|s| s.path)
        .collect();
    check(
        "faces do not parse channel configuration (ChannelPolicy does)",
        offenders,
    );
}

/// Whether code (comments removed, strings kept) reads a history line's
/// `kind` as a string to decide on it: compares it, matches it, or looks the
/// field up by name in the JSON. A face matches the typed line instead.
fn matches_kind_string(with_strings: &str) -> bool {
    let code: String = with_strings.split_whitespace().collect();
    code.contains("kind==\"")
        || code.contains("kind.as_str()")
        || code.contains("[\"kind\"]")
        || code.contains("(\"kind\")")
        || code.contains("matchkind{\"")
}

#[test]
fn faces_do_not_match_history_kind_strings() {
    let offenders = sources(FACES)
        .into_iter()
        .filter(|s| matches_kind_string(&s.with_strings))
        .map(|s| s.path)
        .collect();
    check("faces do not match history `kind` strings", offenders);
}

#[test]
fn sql_only_in_the_store() {
    const SQL: &[&str] = &[
        "SELECT ", "INSERT ", "UPDATE ", "DELETE ", "CREATE ", "PRAGMA ", "BEGIN ",
    ];
    let offenders = sources(&[
        "engine/src",
        "instance/src",
        "model/src",
        "runtime/src",
        "lsp/src",
        "tui/src",
        "src",
    ])
    .into_iter()
    .filter(|s| !s.path.starts_with("store/src/"))
    .filter(|s| {
        s.names("rusqlite")
            || s.strings
                .iter()
                .any(|t| SQL.iter().any(|k| t.trim_start().starts_with(k)))
    })
    .map(|s| s.path)
    .collect();
    check(
        "SQL and rusqlite only in the store crate (store/src)",
        offenders,
    );
}

/// Decisions are applied in one place: the shell (`take`, `take_many`).
/// A driver that applied
/// its own transitions would bypass the damaged-snapshot guard and the
/// lost-race policy (the fleet driver once did).
#[test]
fn drivers_take_decisions_through_the_shell() {
    let offenders = sources(&["runtime/src", "engine/src"])
        .into_iter()
        .filter(|s| {
            s.path != "runtime/src/shell.rs"
                && !s.path.contains("/tests")
                && !s.path.ends_with("tests.rs")
        })
        .filter(|s| s.code.contains(".apply_many(") || s.code.contains("store.apply("))
        .map(|s| s.path)
        .collect();
    check(
        "decisions are applied through the shell (runtime/src/shell.rs: take, take_many), never by a driver's own apply",
        offenders,
    );
}

#[test]
fn the_checks_see_what_they_look_for() {
    // The reader itself: comments and strings do not count as names, code does.
    let (code, _, strings) = lex(
        "use crate::runtime::x; // runtime\n/* runtime /* nested */ */ let s = \"runtime\"; let r = r#\"SELECT 1\"#; let c = '\"'; fn f<'a>() {}",
    );
    let s = Source {
        path: "x.rs".into(),
        with_strings: String::new(),
        code,
        strings,
    };
    assert!(s.names("runtime"));
    assert_eq!(s.code.matches("runtime").count(), 1, "{}", s.code);
    assert_eq!(s.strings, vec!["runtime", "SELECT 1"]);
    assert!(!s.names("untime"));
    assert!(s.code.contains("fn f<'a>()"), "{}", s.code);
    // Escaped quotes stay inside their literal.
    let (code, _, strings) =
        lex(r#"let a = "x\"runtime"; let b = '\''; let c = br"y"; for_runtime"#);
    assert!(!code.contains("runtime\""), "{code}");
    assert_eq!(strings, vec![r#"x\"runtime"#, "y"]);
    assert!(code.ends_with("for_runtime"), "{code}");
    // Reading `kind` by name and matching its strings is seen; naming the
    // field to order printed JSON, or asking a typed line its kind, is not.
    for seen in [
        "let kind = v.get(\"kind\").and_then(Value::as_str);",
        "let kind = get(\"kind\");\nmatch kind {\n    \"start\" => 1,\n    _ => 0,\n}",
        "if h.kind == \"attempt\" {}",
        "match r.kind.as_str() { _ => {} }",
        "let k = &line[\"kind\"];",
    ] {
        let (_, with_strings, _) = lex(seen);
        assert!(matches_kind_string(&with_strings), "not seen: {seen}");
    }
    for unseen in [
        "json_line(line, &[\"at_s\", \"kind\", \"node\"])",
        "let k = line.event.kind(); // match kind { \"start\" }",
        "let s = Span::styled(format!(\"{:<11}\", h.kind), style);",
    ] {
        let (_, with_strings, _) = lex(unseen);
        assert!(!matches_kind_string(&with_strings), "seen: {unseen}");
    }
}
