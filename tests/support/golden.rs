//! Golden files: output that is the contract (check reports, run
//! decisions, snapshot bytes, stats, console frames, SVG), compared byte for
//! byte with the file that holds it. One tool for every golden file of the
//! workspace (the console's tests include this file too):
//! `QFLOW_BLESS=1 cargo test` writes the files afresh, and the diff is
//! reviewed like code. A test run on both stores blesses from SQLite only;
//! PostgreSQL must agree with what SQLite wrote.

use std::path::Path;

/// Whether this run rewrites the golden files: `QFLOW_BLESS=1` (the
/// console's tests once read `QFLOW_UPDATE_GOLDEN=1`, still honoured).
pub(crate) fn blessing() -> bool {
    std::env::var_os("QFLOW_BLESS").is_some() || std::env::var_os("QFLOW_UPDATE_GOLDEN").is_some()
}

/// Compare `actual` with the golden file at `path`, or write it when
/// blessing. Fails naming the file, the first line that differs, and how
/// to accept the change.
pub(crate) fn check(path: &Path, actual: &str) {
    check_blessing_here(path, actual, true)
}

/// [`check`], written when blessing only if `bless_here` (false on
/// PostgreSQL: that run must agree with the file SQLite's wrote).
pub(crate) fn check_blessing_here(path: &Path, actual: &str, bless_here: bool) {
    if let Some(failure) = compare(path, actual, bless_here) {
        panic!("{failure}");
    }
}

/// What [`check`] finds, for a test that gathers every mismatch before it
/// fails: `None` when the file holds `actual` (or was just written).
pub(crate) fn compare(path: &Path, actual: &str, bless_here: bool) -> Option<String> {
    if blessing() {
        if bless_here {
            std::fs::create_dir_all(path.parent().expect("a golden file has a folder"))
                .expect("the golden folder can be made");
            std::fs::write(path, actual).expect("the golden file can be written");
        }
        return None;
    }
    let Ok(expected) = std::fs::read_to_string(path) else {
        return Some(format!(
            "{} is missing: run with QFLOW_BLESS=1 to write it, then review it\n{actual}",
            path.display()
        ));
    };
    (expected != actual).then(|| {
        let (line, want, got) = first_difference(&expected, actual);
        format!(
            "{} differs at line {line}:\n  expected: {want:?}\n  actual:   {got:?}\n(intended? rerun with QFLOW_BLESS=1, then review git diff)\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        )
    })
}

/// The first line (1-based) where `expected` and `actual` part, and each
/// side's text there (`<end>` past the last line).
pub(crate) fn first_difference<'a>(
    expected: &'a str,
    actual: &'a str,
) -> (usize, &'a str, &'a str) {
    let mut e = expected.split('\n');
    let mut a = actual.split('\n');
    let mut n = 1;
    loop {
        match (e.next(), a.next()) {
            (Some(x), Some(y)) if x == y => n += 1,
            (x, y) => return (n, x.unwrap_or("<end>"), y.unwrap_or("<end>")),
        }
    }
}
