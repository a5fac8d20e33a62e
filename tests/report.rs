//! `--report FILE.html` of `simulate` and `stats`: one self-contained HTML
//! file whose SVG charts carry the run's numbers. Each `<svg>` is parsed as
//! XML and its elements counted and read.

use quick_xml::events::Event;
use quick_xml::Reader;
use std::collections::BTreeMap;

const DBG08: &str = "samples/dbg08-long-outage.bpmn";

mod support;
use support::qflow_here as qflow;

/// One element of an SVG: its name, classes and attributes.
#[derive(Debug)]
struct El {
    name: String,
    classes: Vec<String>,
    attrs: BTreeMap<String, String>,
}

/// Every `<svg>…</svg>` of the document, parsed: the root's classes, and
/// every element inside it.
fn svgs(html: &str) -> Vec<(Vec<String>, Vec<El>)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("a closed svg") + start + "</svg>".len();
        let doc = &rest[start..end];
        let mut reader = Reader::from_str(doc);
        let mut els = Vec::new();
        loop {
            match reader.read_event().expect("well-formed SVG") {
                Event::Start(e) | Event::Empty(e) => {
                    let attrs: BTreeMap<String, String> = e
                        .attributes()
                        .map(|a| {
                            let a = a.unwrap();
                            (
                                String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                                a.unescape_value().unwrap().into_owned(),
                            )
                        })
                        .collect();
                    els.push(El {
                        name: String::from_utf8(e.local_name().as_ref().to_vec()).unwrap(),
                        classes: attrs
                            .get("class")
                            .map(|c| c.split_whitespace().map(str::to_string).collect())
                            .unwrap_or_default(),
                        attrs,
                    });
                }
                Event::Eof => break,
                _ => {}
            }
        }
        let root = els.remove(0);
        assert_eq!(root.name, "svg");
        out.push((root.classes, els));
        rest = &rest[end..];
    }
    out
}

fn chart<'a>(all: &'a [(Vec<String>, Vec<El>)], class: &str) -> Vec<&'a [El]> {
    all.iter()
        .filter(|(c, _)| c.iter().any(|x| x == class))
        .map(|(_, e)| e.as_slice())
        .collect()
}

fn with<'a>(els: &'a [El], name: &str, class: &str) -> Vec<&'a El> {
    els.iter()
        .filter(|e| e.name == name && e.classes.iter().any(|c| c == class))
        .collect()
}

fn attr(els: &[&El], key: &str) -> Vec<i64> {
    els.iter().map(|e| e.attrs[key].parse().unwrap()).collect()
}

fn self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script"), "no script");
    assert!(!html.contains(" src="), "nothing fetched");
    assert!(!html.contains("href="), "no link out");
}

crate::on_both_stores!(
    a_simulation_report_charts_the_outage_the_backlog_the_schedule_and_the_process
);

/// On a SQLite file and on a PostgreSQL database: the simulation and
/// `stats` read back the same minutes from either store.
fn a_simulation_report_charts_the_outage_the_backlog_the_schedule_and_the_process(
    fresh: &support::stores::Fresh,
) {
    let dir = fresh.dir();
    let report = dir.join("sim.html");
    let db = fresh.db();
    let (code, _, err) = qflow(&[
        "simulate",
        DBG08,
        "--jobs",
        "30",
        "--outage",
        "PT2H",
        "--db",
        &db,
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("wrote {} (", report.display()))
            && err.contains("open it in a browser"),
        "the report says where it went: {err}"
    );
    let html = std::fs::read_to_string(&report).unwrap();
    self_contained(&html);
    let all = svgs(&html);

    // Attempts at 0, 60, 360 and 1,860 s fail, the one at 9,360 s succeeds:
    // five minutes with 30 attempts each, the first two hours shaded.
    let attempts = chart(&all, "attempts");
    assert_eq!(attempts.len(), 1);
    let bars = with(attempts[0], "rect", "bar");
    assert_eq!(attr(&bars, "data-minute"), [0, 1, 6, 31, 156]);
    assert_eq!(attr(&bars, "data-attempts"), [30; 5]);
    let heights: Vec<f64> = bars
        .iter()
        .map(|b| b.attrs["height"].parse().unwrap())
        .collect();
    assert!(
        heights.iter().all(|h| *h == heights[0] && *h > 0.0),
        "{heights:?}"
    );
    assert_eq!(with(attempts[0], "rect", "outage").len(), 1);
    // The outage is drawn over the bars (after them), translucent, so the
    // bars inside it still show; the legend says what each colour is.
    let pos = |els: &[El], class: &str| {
        els.iter()
            .position(|e| e.classes.iter().any(|c| c == class))
            .unwrap()
    };
    let last_bar = attempts[0]
        .iter()
        .rposition(|e| e.name == "rect" && e.classes.iter().any(|c| c == "bar"))
        .unwrap();
    assert!(
        pos(attempts[0], "outage") > last_bar,
        "the outage above the bars"
    );
    assert_eq!(with(attempts[0], "g", "legend").len(), 1);
    assert_eq!(with(attempts[0], "rect", "outage-key").len(), 1);
    assert!(
        html.contains("outage: the dependency down for the first 2 h")
            && html.contains("attempts in each minute"),
        "the legend names the bars and the outage"
    );
    // A labelled tick every half hour over the 2h 36m, and the axes' titles
    // with their units.
    let ticks: Vec<&El> = with(attempts[0], "text", "tick")
        .into_iter()
        .filter(|e| e.attrs.contains_key("data-minute"))
        .collect();
    assert_eq!(
        attr(&ticks, "data-minute"),
        [0, 30, 60, 90, 120, 150],
        "round ticks"
    );
    for label in ["+0s", "+30m", "+1h", "+1h 30m", "+2h", "+2h 30m"] {
        assert!(html.contains(&format!(">{label}</text>")), "{label}");
    }
    assert!(html.contains("virtual time since the start (d h m), one bar per minute"));
    assert!(html.contains(">attempts per minute</text>"));
    // The value axis: round steps of 10 up to the 30 of the busiest minute.
    assert_eq!(with(attempts[0], "line", "grid").len(), 4);

    // The pending backlog: all thirty from minute 0 to 155, none once the
    // fifth attempt completes them at minute 156; one bar a minute.
    let pending = chart(&all, "pending");
    assert_eq!(pending.len(), 1);
    let bars = with(pending[0], "rect", "bar");
    assert_eq!(attr(&bars, "data-minute"), (0..=156).collect::<Vec<_>>());
    let mut expected = vec![30; 156];
    expected.push(0);
    assert_eq!(attr(&bars, "data-pending"), expected);
    assert_eq!(bars[156].attrs["height"], "0.00");
    assert_eq!(with(pending[0], "rect", "outage").len(), 1);

    // Everything finished: six age buckets, all empty.
    let backlog = chart(&all, "backlog");
    let buckets = with(backlog[0], "rect", "bar");
    assert_eq!(buckets.len(), 6);
    assert_eq!(attr(&buckets, "data-count"), [0; 6]);

    // The policy's six attempts at the DBG-08 times.
    let schedule = chart(&all, "schedule");
    assert_eq!(schedule.len(), 1);
    let dots = with(schedule[0], "circle", "attempt");
    assert_eq!(attr(&dots, "data-attempt"), [1, 2, 3, 4, 5, 6]);
    assert_eq!(attr(&dots, "data-at-s"), [0, 60, 360, 1_860, 9_360, 46_860]);
    assert_eq!(with(schedule[0], "circle", "last").len(), 1);
    // It names the deployment it belongs to, and has a time axis.
    assert!(
        html.contains(r#"data-owner="deployment 1 (dbg08, samples/dbg08-long-outage.bpmn)""#),
        "the schedule names its deployment"
    );
    assert!(!with(schedule[0], "text", "tick").is_empty());

    // The engine's drawing of the process: start, charge, end.
    let diagram: Vec<_> = all
        .iter()
        .filter(|(c, _)| !c.iter().any(|x| x == "chart"))
        .collect();
    assert_eq!(diagram.len(), 1);
    assert_eq!(with(&diagram[0].1, "g", "node").len(), 3);
    // With where the instances stand: all thirty completed, none waiting on
    // a node; the one note is the end event's count of those it completed.
    assert!(
        html.contains("where the instances stand (30 completed, 0 failed, 0 unfinished)"),
        "the caption counts them"
    );
    assert_eq!(
        diagram[0]
            .1
            .iter()
            .filter(|e| e.classes.iter().any(|c| c == "note"))
            .count(),
        1
    );
    assert!(html.contains("30 completed<"), "the end event's count");

    // The same store read back by stats charts the same minutes.
    let stats = dir.join("stats.html");
    let (code, _, err) = qflow(&["stats", "--db", &db, "--report", stats.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("wrote {} (", stats.display())),
        "{err}"
    );
    let html = std::fs::read_to_string(&stats).unwrap();
    self_contained(&html);
    let all = svgs(&html);
    let bars = with(chart(&all, "attempts")[0], "rect", "bar");
    assert_eq!(attr(&bars, "data-minute"), [0, 1, 6, 31, 156]);
    assert_eq!(attr(&bars, "data-attempts"), [30; 5]);
    assert!(with(chart(&all, "attempts")[0], "rect", "outage").is_empty());
    // A store has no simulation's timeline: no pending chart.
    assert!(chart(&all, "pending").is_empty());
    assert_eq!(chart(&all, "schedule").len(), 1);
}

#[test]
fn a_long_outage_keeps_one_bar_per_minute_and_counts_the_failed_on_the_diagram() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("long.html");
    let (code, _, err) = qflow(&[
        "simulate",
        DBG08,
        "--jobs",
        "12",
        "--outage",
        "P1D",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&report).unwrap();
    let all = svgs(&html);
    // Minutes 0 to 781, one bar each: the six bursts of the DBG-08
    // schedule are six bars (minutes 0 and 1 no longer share one).
    let bars = with(chart(&all, "attempts")[0], "rect", "bar");
    assert_eq!(attr(&bars, "data-minute"), [0, 1, 6, 31, 156, 781]);
    assert_eq!(attr(&bars, "data-attempts"), [12; 6]);
    // The backlog: twelve pending at the end of every minute 0 to 780,
    // none at the end of 781, where the sixth attempts exhaust them.
    let pending = with(chart(&all, "pending")[0], "rect", "bar");
    assert_eq!(attr(&pending, "data-minute"), (0..=781).collect::<Vec<_>>());
    let mut twelve = vec![12; 781];
    twelve.push(0);
    assert_eq!(attr(&pending, "data-pending"), twelve);
    // Too wide for the page at three pixels a minute: the chart scrolls
    // in its own box rather than merging minutes.
    assert!(html.contains("<div class=\"scroll\">"));
    assert!(html.contains("one bar per minute"));
    // All twelve exhausted at the task: the diagram says so on it (the
    // engine's fleet state, as the web inspector draws it).
    let diagram: Vec<_> = all
        .iter()
        .filter(|(c, _)| !c.iter().any(|x| x == "chart"))
        .collect();
    let charge = diagram[0]
        .1
        .iter()
        .find(|e| e.name == "g" && e.attrs.get("data-id").map(String::as_str) == Some("charge"))
        .unwrap();
    assert!(
        charge.classes.iter().any(|c| c == "failed"),
        "{:?}",
        charge.classes
    );
    assert!(html.contains(">12 failed</text>"), "the count on the node");
    assert!(html.contains("(0 completed, 12 failed, 0 unfinished)"));
}

#[test]
fn past_a_day_of_minutes_a_bar_is_a_declared_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("slow.bpmn");
    // The DBG-08 model with its schedule stretched tenfold: attempts at 0,
    // 10 m, 1 h, 5 h 10 m, 1 d 2 h and 5 d 10 h 10 m (minute 7,810).
    let source = std::fs::read_to_string(DBG08).unwrap();
    let stretched = source.replace(
        r#"backoff="PT1M PT5M PT25M PT125M PT625M""#,
        r#"backoff="PT10M PT50M PT250M PT1250M PT6250M""#,
    );
    assert_ne!(source, stretched, "the sample's schedule as DBG-08 has it");
    std::fs::write(&model, stretched).unwrap();
    let report = dir.path().join("slow.html");
    let (code, _, err) = qflow(&[
        "simulate",
        model.to_str().unwrap(),
        "--jobs",
        "5",
        "--outage",
        "P10D",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&report).unwrap();
    let all = svgs(&html);
    let bars = with(chart(&all, "attempts")[0], "rect", "bar");
    // 7,811 minutes: buckets of 10 (the first round size that keeps the
    // bars under 1,440); each bar is the attempts in its ten minutes, and
    // the legend and the axis say so.
    assert!(html.contains("attempts in each 10 minutes"), "declared");
    assert!(html.contains("one bar per 10 minutes"));
    assert_eq!(attr(&bars, "data-minute"), [0, 10, 60, 310, 1560, 7810]);
    assert_eq!(attr(&bars, "data-attempts"), [5; 6]);
}

#[test]
fn an_unwritable_report_is_named() {
    let (code, _, err) = qflow(&[
        "simulate",
        DBG08,
        "--jobs",
        "2",
        "--outage",
        "PT1M",
        "--report",
        "no/such/dir/r.html",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot write the report no/such/dir/r.html"),
        "{err}"
    );
}
