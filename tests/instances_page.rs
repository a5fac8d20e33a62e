//! `qflow instances` a page at a time: the store selects and counts the
//! page, so only the listed instances are inspected. `--limit` (default 50,
//! 0 for every one) and `--offset` page it, a `… N more` line counts the
//! rest; `--class` and `--dependency` keep the instances parked for a retry
//! of that class or dependency (what a pause of it would hold).

use serde_json::Value;

mod support;
use support::qflow_here as qflow;
use support::stores::Fresh;

const DBG08: &str = "samples/dbg08-long-outage.bpmn";
const ALWAYS_FAILS: &str = "samples/scenarios/dbg08-long-outage.json";

crate::on_both_stores!(a_long_list_is_paged_counted_and_filtered_by_what_parks_it);

/// Rows of the human table (the header and the `… more` line left out).
fn rows(out: &str) -> Vec<&str> {
    out.lines()
        .skip(1)
        .filter(|l| !l.starts_with('…'))
        .collect()
}

fn a_long_list_is_paged_counted_and_filtered_by_what_parks_it(fresh: &Fresh) {
    let db = &fresh.db();
    // 60 instances exhausted by a day's outage, then one parked for its
    // second attempt (a transient failure of payments.charge).
    let (code, _, err) = qflow(&[
        "simulate", DBG08, "--jobs", "60", "--outage", "P1D", "--db", db,
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = qflow(&[
        "run",
        DBG08,
        "--scenario",
        ALWAYS_FAILS,
        "--db",
        db,
        "--until",
        "PT30S",
    ]);
    assert_eq!(code, 0, "{err}");

    // The first page: 50 rows, the rest counted with the way to them.
    let (code, out, err) = qflow(&["instances", "--db", db]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(rows(&out).len(), 50, "{out}");
    assert!(
        out.ends_with("… 11 more (--offset 50 for the next page, --limit 0 for every one)\n"),
        "{out}"
    );
    // The next page: the last 11, the parked one last; nothing more.
    let (code, out, _) = qflow(&["instances", "--db", db, "--offset", "50"]);
    assert_eq!(code, 0);
    let page = rows(&out);
    assert_eq!(page.len(), 11, "{out}");
    assert!(page[10].contains("WAITING"), "{out}");
    assert!(page[..10].iter().all(|r| r.contains("FAILED")), "{out}");
    assert!(!out.contains("more ("), "{out}");
    let (_, out, _) = qflow(&["instances", "--db", db, "--offset", "61"]);
    assert_eq!(out, "no instances past --offset 61 (61 match)\n");

    // JSON: the page and its paging data (the total, where the next page
    // starts), the rest counted on stderr too; --limit 0 lists every one.
    let (code, out, err) = qflow(&["instances", "--db", db, "--format", "json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["instances"].as_array().unwrap().len(), 50);
    assert_eq!(
        (v["total"].as_u64(), v["next_offset"].as_u64()),
        (Some(61), Some(50))
    );
    assert!(err.contains("… 11 more"), "{err}");
    let (_, out, err) = qflow(&["instances", "--db", db, "--limit", "0", "--format", "json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["instances"].as_array().unwrap().len(), 61);
    assert_eq!(
        (v["total"].as_u64(), &v["next_offset"]),
        (Some(61), &Value::Null)
    );
    assert!(err.is_empty(), "{err}");

    // Filters: a status counts its own; a class or a dependency keeps the
    // instances parked for a retry of it.
    let (_, out, _) = qflow(&[
        "instances",
        "--db",
        db,
        "--status",
        "failed",
        "--limit",
        "5",
    ]);
    assert_eq!(rows(&out).len(), 5, "{out}");
    assert!(out.contains("… 55 more (--offset 5 "), "{out}");
    for filter in [
        ["--class", "transient"],
        ["--dependency", "payments.charge"],
    ] {
        let (code, out, err) = qflow(
            &[
                &["instances", "--db", db, "--format", "json"][..],
                &filter[..],
            ]
            .concat(),
        );
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let statuses: Vec<&str> = v["instances"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["waiting"], "{filter:?}: {out}");
    }
    let (_, out, _) = qflow(&["instances", "--db", db, "--class", "rate-limited"]);
    assert_eq!(out, "no instances match\n");
    let (code, _, err) = qflow(&["instances", "--db", db, "--class", "permanent"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--class permanent: not a class that parks a retry"),
        "{err}"
    );
}
