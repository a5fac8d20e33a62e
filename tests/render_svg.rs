//! `qflow render`: the SVG of a sample's diagram, golden
//! (`tests/golden/render/<case>.svg`), and its structure checked by parsing
//! it: one shape per node, one path per flow, the state classes of an
//! instance.
//!
//! After an intended change, re-bless with
//! `QFLOW_BLESS=1 cargo test --test render_svg` and look at the diff (and at
//! the pictures: any browser opens them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use quick_xml::events::Event;
use quick_xml::Reader;

mod support;
use support::stores::Fresh;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn qflow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
}

/// One `g.node` or `g.flow` of the SVG: its classes, attributes and the
/// elements inside it.
#[derive(Debug, Default)]
struct Group {
    classes: Vec<String>,
    attrs: BTreeMap<String, String>,
    children: Vec<(String, Vec<String>)>,
    texts: Vec<String>,
}

impl Group {
    fn has(&self, class: &str) -> bool {
        self.classes.iter().any(|c| c == class)
    }
    fn count(&self, element: &str, class: &str) -> usize {
        self.children
            .iter()
            .filter(|(e, c)| e == element && c.iter().any(|x| x == class))
            .count()
    }
}

struct Svg {
    nodes: BTreeMap<String, Group>,
    flows: BTreeMap<String, Group>,
    root: BTreeMap<String, String>,
}

fn parse(svg: &str) -> Svg {
    let mut reader = Reader::from_str(svg);
    let mut out = Svg {
        nodes: BTreeMap::new(),
        flows: BTreeMap::new(),
        root: BTreeMap::new(),
    };
    let mut open: Option<Group> = None;
    let mut depth_in_group = 0usize;
    loop {
        let ev = reader.read_event().expect("the SVG is well-formed XML");
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let name = String::from_utf8(e.local_name().as_ref().to_vec()).unwrap();
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
                let classes: Vec<String> = attrs
                    .get("class")
                    .map(|c| c.split_whitespace().map(str::to_string).collect())
                    .unwrap_or_default();
                let empty = matches!(ev, Event::Empty(_));
                if name == "svg" {
                    out.root = attrs;
                } else if let Some(g) = open.as_mut() {
                    g.children.push((name, classes));
                    if !empty {
                        depth_in_group += 1;
                    }
                } else if name == "g" && (classes[0] == "node" || classes[0] == "flow") {
                    open = Some(Group {
                        classes,
                        attrs,
                        ..Group::default()
                    });
                    depth_in_group = 0;
                }
            }
            Event::Text(t) => {
                if let Some(g) = open.as_mut() {
                    g.texts.push(String::from_utf8(t.to_vec()).unwrap());
                }
            }
            Event::End(_) => {
                if let Some(g) = open.as_ref() {
                    if depth_in_group == 0 {
                        let g = open.take().unwrap();
                        let id = g.attrs["data-id"].clone();
                        let map = if g.classes[0] == "node" {
                            &mut out.nodes
                        } else {
                            &mut out.flows
                        };
                        assert!(map.insert(id.clone(), g).is_none(), "{id} drawn twice");
                    } else {
                        let _ = g;
                        depth_in_group -= 1;
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    out
}

/// Node and flow ids of a sample's first process, from the engine's loader.
fn model_ids(sample: &str) -> (Vec<String>, Vec<String>) {
    let text =
        std::fs::read_to_string(repo().join("samples").join(format!("{sample}.bpmn"))).unwrap();
    let defs = qflow_engine::analyze(&text).definitions.unwrap();
    let p = &defs.processes[0];
    (
        p.nodes.iter().map(|n| n.id.value.to_string()).collect(),
        p.flows.iter().map(|f| f.id.value.to_string()).collect(),
    )
}

fn render(sample: &str, instance: Option<(&str, &str)>, out: &Path) {
    let mut cmd = qflow();
    cmd.arg("render")
        .arg(repo().join("samples").join(format!("{sample}.bpmn")))
        .arg("--svg")
        .arg(out);
    if let Some((db, id)) = instance {
        cmd.arg("--db").arg(db).arg("--instance").arg(id);
    }
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "qflow render {sample}: {err}");
    // Where the drawing went, and nothing on stdout.
    let size = std::fs::metadata(out).unwrap().len();
    assert!(
        err.starts_with(&format!("wrote {} (", out.display()))
            && err.contains(" bytes)") == (size < 10 * 1024),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

fn golden(case: &str, svg: &str) {
    support::golden::check(
        &repo()
            .join("tests/golden/render")
            .join(format!("{case}.svg")),
        svg,
    );
}

/// Every node drawn once with one shape, every flow once with one path
/// ending in an arrow; boundaries name their task.
fn check_structure(sample: &str, svg: &Svg) {
    let (nodes, flows) = model_ids(sample);
    assert_eq!(
        svg.nodes.keys().cloned().collect::<Vec<_>>(),
        {
            let mut n = nodes.clone();
            n.sort();
            n
        },
        "{sample}: one g.node per node"
    );
    for (id, g) in &svg.nodes {
        let shapes =
            g.count("rect", "shape") + g.count("circle", "shape") + g.count("polygon", "shape");
        assert_eq!(shapes, 1, "{sample}: node {id} has one shape");
        assert_eq!(
            g.attrs["data-kind"], g.classes[1],
            "{sample}: {id} class by kind"
        );
        if g.has("boundary") {
            assert!(
                svg.nodes.contains_key(&g.attrs["data-attached-to"]),
                "{sample}: boundary {id} on a drawn task"
            );
        }
    }
    let mut fl = flows.clone();
    fl.sort();
    assert_eq!(
        svg.flows.keys().cloned().collect::<Vec<_>>(),
        fl,
        "{sample}: one g.flow per flow"
    );
    for (id, g) in &svg.flows {
        assert_eq!(
            g.count("path", "line"),
            1,
            "{sample}: flow {id} has one path"
        );
    }
}

#[test]
fn samples_render_as_golden_svgs_with_one_shape_per_node_and_one_path_per_flow() {
    let dir = tempfile::tempdir().unwrap();
    // A chain, an exclusive split with a default (drawn by its diagram
    // section), a parallel split and join, boundaries (laid out, and drawn),
    // a loop.
    for sample in [
        "dbg08-long-outage",
        "approval-gateway",
        "run-order",
        "run-boundaries",
        "error-boundary",
        "call-loop-until-approved",
    ] {
        let out = dir.path().join(format!("{sample}.svg"));
        render(sample, None, &out);
        let text = std::fs::read_to_string(&out).unwrap();
        golden(sample, &text);
        let svg = parse(&text);
        check_structure(sample, &svg);
        assert!(
            !svg.root.contains_key("data-instance"),
            "no state without an instance"
        );
    }
}

#[test]
fn gateway_marks_loops_and_kinds_are_classes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a.svg");
    render("approval-gateway", None, &out);
    let svg = parse(&std::fs::read_to_string(&out).unwrap());
    let manual = &svg.flows["flow-manual"];
    assert!(manual.has("default"));
    assert_eq!(
        manual.count("line", "default-mark"),
        1,
        "a default flow carries its slash"
    );
    assert!(svg.flows["flow-auto"].has("conditional"));
    assert!(svg.flows["flow-auto"]
        .texts
        .iter()
        .any(|t| t == "small and trusted"));
    assert!(svg.nodes["route"].has("exclusive"));

    render("call-loop-until-approved", None, &out);
    let svg = parse(&std::fs::read_to_string(&out).unwrap());
    assert!(svg.flows["again"].has("back"), "the loop goes back");
    assert!(svg.flows["again"]
        .texts
        .iter()
        .any(|t| t == "approved == false"));
    assert!(svg.nodes["authorize"].has("call"));

    render("run-order", None, &out);
    let svg = parse(&std::fs::read_to_string(&out).unwrap());
    assert!(svg.nodes["fork"].has("parallel") && svg.nodes["join"].has("parallel"));
    assert!(svg.nodes["pause"].has("intermediate"));
}

/// An instance's SVG against its golden, which only the SQLite case
/// blesses: the PostgreSQL case draws the same instance and must match it.
fn instance_golden(fresh: &Fresh, case: &str, svg: &str) {
    if fresh.is_postgres() && std::env::var_os("QFLOW_BLESS").is_some() {
        return;
    }
    golden(case, svg);
}

/// Runs a sample with its scenario into `db` (a SQLite file or a
/// PostgreSQL URL); the instance's id.
fn run_into(db: &str, sample: &str, scenario: &str) -> String {
    let o = qflow()
        .arg("run")
        .arg(repo().join("samples").join(format!("{sample}.bpmn")))
        .arg("--scenario")
        .arg(
            repo()
                .join("samples/scenarios")
                .join(format!("{scenario}.json")),
        )
        .arg("--db")
        .arg(db)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(o.stdout).unwrap();
    let last = stdout.lines().last().expect("a final line");
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    v["instance"]
        .as_str()
        .expect("the final line names the instance")
        .to_string()
}

fn an_instance_state_sits_on_the_diagram(fresh: &Fresh) {
    let dir = fresh.dir();
    // The long outage: the charge fails for good after its attempts.
    let db = fresh.db();
    let id = run_into(&db, "dbg08-long-outage", "dbg08-long-outage");
    let out = dir.join("outage.svg");
    render("dbg08-long-outage", Some((&db, &id)), &out);
    let text = std::fs::read_to_string(&out).unwrap();
    instance_golden(
        fresh,
        "dbg08-long-outage-failed",
        &text.replace(&id, "INSTANCE"),
    );
    let svg = parse(&text);
    check_structure("dbg08-long-outage", &svg);
    assert_eq!(svg.root["data-instance"], id);
    assert_eq!(svg.root["data-status"], "failed");
    let charge = &svg.nodes["charge"];
    assert!(charge.has("failed"), "{:?}", charge.classes);
    assert!(
        charge.texts.iter().any(|t| t.starts_with("FAILED ")),
        "{:?}",
        charge.texts
    );
    assert!(
        charge.texts.iter().any(|t| t.starts_with("attempts: ")),
        "{:?}",
        charge.texts
    );
    assert!(svg.nodes["start"].has("done"));
    assert!(svg.nodes["done"].has("idle"), "the end was never reached");
    let taken: Vec<&String> = svg
        .flows
        .iter()
        .filter(|(_, g)| g.has("taken"))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(taken.len(), 1, "only the flow into the charge: {taken:?}");

    // The loop: declined once, then approved: the path goes round.
    let db = fresh.db();
    let id = run_into(&db, "call-loop-until-approved", "call-loop-until-approved");
    render("call-loop-until-approved", Some((&db, &id)), &out);
    let text = std::fs::read_to_string(&out).unwrap();
    instance_golden(
        fresh,
        "call-loop-until-approved-completed",
        &text.replace(&id, "INSTANCE"),
    );
    let svg = parse(&text);
    assert_eq!(svg.root["data-status"], "completed");
    for f in ["f1", "f2", "again", "ok"] {
        assert!(svg.flows[f].has("taken"), "{f} taken");
    }
    assert!(svg.nodes["end"].has("done"));
}

crate::on_both_stores!(
    an_instance_state_sits_on_the_diagram,
    a_fired_boundary_is_done_and_notes_stay_on_the_drawing,
);

#[test]
fn bad_arguments_name_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.svg");
    let o = qflow()
        .args(["render", "samples/approval-gateway.bpmn", "--db"])
        .arg(dir.path().join("none.db"))
        .args(["--instance", "i-1", "--svg"])
        .arg(&out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no such database file"));
    assert!(!out.exists(), "nothing written");

    let o = qflow()
        .args([
            "render",
            "samples/approval-gateway.bpmn",
            "--instance",
            "i-1",
            "--svg",
        ])
        .arg(&out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "--instance needs --db");

    let o = qflow()
        .args(["render", "no-such.bpmn", "--svg"])
        .arg(&out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read no-such.bpmn"));
}

/// The names of events and gateways are never struck through by a flow: a
/// boundary's own flow leaving downwards, a gateway's branch. Each name's
/// box is estimated from its anchor, its lines and half an em per
/// character (a little narrower than the renderer reserves), and must meet
/// no segment of any flow's path.
#[test]
fn event_and_gateway_names_keep_clear_of_the_flows() {
    let dir = tempfile::tempdir().unwrap();
    for sample in [
        "approval-gateway",
        "run-order",
        "run-boundaries",
        "error-boundary",
        "call-bank-no-policy",
        "call-loop-until-approved",
    ] {
        let out = dir.path().join(format!("{sample}.svg"));
        render(sample, None, &out);
        let text = std::fs::read_to_string(&out).unwrap();
        let (names, segments) = names_and_segments(&text);
        assert!(!names.is_empty() && !segments.is_empty(), "{sample}");
        for (node, (x0, y0, x1, y1)) in &names {
            for &((ax, ay), (bx, by)) in &segments {
                let (sx0, sx1) = (ax.min(bx) - 1.0, ax.max(bx) + 1.0);
                let (sy0, sy1) = (ay.min(by) - 1.0, ay.max(by) + 1.0);
                assert!(
                    !(x0 < &sx1 && &sx0 < x1 && y0 < &sy1 && &sy0 < y1),
                    "{sample}: the name of `{node}` ({x0:.0},{y0:.0})-({x1:.0},{y1:.0}) is crossed by the flow segment ({ax},{ay})-({bx},{by})"
                );
            }
        }
    }
}

type Box = (f64, f64, f64, f64);
type Segment = ((f64, f64), (f64, f64));

/// Every event's and gateway's name box, and every flow path's segments.
fn names_and_segments(svg: &str) -> (Vec<(String, Box)>, Vec<Segment>) {
    let mut reader = Reader::from_str(svg);
    let (mut names, mut segments) = (Vec::new(), Vec::new());
    let mut node: Option<String> = None; // inside an event's or gateway's group
    let mut name: Option<(f64, f64, String, Vec<String>)> = None;
    let mut in_tspan = false;
    let attr = |e: &quick_xml::events::BytesStart, k: &str| -> Option<String> {
        e.attributes()
            .flatten()
            .find(|a| a.key.as_ref() == k.as_bytes())
            .map(|a| a.unescape_value().unwrap().into_owned())
    };
    loop {
        match reader.read_event().expect("well-formed") {
            Event::Start(e) | Event::Empty(e) => match e.local_name().as_ref() {
                b"g" => {
                    let kind = attr(&e, "data-kind").unwrap_or_default();
                    let named = [
                        "start",
                        "end",
                        "error-end",
                        "intermediate",
                        "boundary",
                        "exclusive",
                        "parallel",
                    ];
                    if named.contains(&kind.as_str()) {
                        node = attr(&e, "data-id");
                    }
                }
                b"path" if attr(&e, "class").as_deref() == Some("line") => {
                    let d = attr(&e, "d").unwrap();
                    let points: Vec<(f64, f64)> = d
                        .split(['M', 'L'])
                        .filter_map(|p| {
                            let (x, y) = p.trim().split_once(',')?;
                            Some((x.parse().ok()?, y.parse().ok()?))
                        })
                        .collect();
                    segments.extend(points.windows(2).map(|w| (w[0], w[1])));
                }
                b"text" if node.is_some() && attr(&e, "class").as_deref() == Some("name") => {
                    let x: f64 = attr(&e, "x").unwrap().parse().unwrap();
                    let y: f64 = attr(&e, "y").unwrap().parse().unwrap();
                    let anchor = attr(&e, "text-anchor").unwrap_or_else(|| "start".into());
                    name = Some((x, y, anchor, Vec::new()));
                }
                b"tspan" => in_tspan = true,
                _ => {}
            },
            Event::Text(t) if in_tspan => {
                if let Some((.., lines)) = name.as_mut() {
                    lines.push(String::from_utf8(t.to_vec()).unwrap());
                }
            }
            Event::End(e) => match e.local_name().as_ref() {
                b"tspan" => in_tspan = false,
                b"text" => {
                    if let (Some((x, y, anchor, lines)), Some(id)) = (name.take(), &node) {
                        let w =
                            lines.iter().map(|l| l.chars().count()).max().unwrap_or(0) as f64 * 6.0;
                        let x0 = match anchor.as_str() {
                            "middle" => x - w / 2.0,
                            "end" => x - w,
                            _ => x,
                        };
                        let y1 = y + 14.0 * (lines.len().max(1) as f64 - 1.0) + 2.0;
                        names.push((id.clone(), (x0, y - 8.0, x0 + w, y1)));
                    }
                }
                b"g" => node = None,
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    (names, segments)
}

/// A fired boundary event is drawn done (its ring and fill green, as every
/// node the instance executed), the one that never fired stays idle; an
/// instance's note that would run off the drawing's right edge ends at its
/// shape instead.
fn a_fired_boundary_is_done_and_notes_stay_on_the_drawing(fresh: &Fresh) {
    let dir = fresh.dir();
    let out = dir.join("b.svg");
    let db = fresh.db();
    let id = run_into(&db, "run-boundaries", "run-boundaries-declined");
    render("run-boundaries", Some((&db, &id)), &out);
    let text = std::fs::read_to_string(&out).unwrap();
    instance_golden(
        fresh,
        "run-boundaries-declined",
        &text.replace(&id, "INSTANCE"),
    );
    let svg = parse(&text);
    assert!(
        svg.nodes["onDeclined"].has("done"),
        "the error boundary fired"
    );
    assert!(svg.nodes["tooLong"].has("idle"), "the timer never fired");
    assert!(
        text.contains(".node.done .symbol { stroke: #2e7d32; }")
            && text.contains(".node.boundary.done .shape { fill: #c8e6c9; }"),
        "a done boundary's inner ring and fill are shaded"
    );

    // The escalation: FAILED at the end event on the drawing's right edge.
    let db = fresh.db();
    let id = run_into(&db, "run-boundaries", "run-boundaries-escalate");
    render("run-boundaries", Some((&db, &id)), &out);
    let text = std::fs::read_to_string(&out).unwrap();
    let svg = parse(&text);
    assert!(svg.nodes["tooLong"].has("done"), "the timer boundary fired");
    let width: f64 = svg.root["width"].parse().unwrap();
    let notes = texts_of(&text, "note");
    assert!(!notes.is_empty());
    for (x, anchor, body) in notes {
        // 11 px bold: a little under 0.6 em a glyph.
        let w = body.chars().count() as f64 * 11.0 * 0.54;
        let (x0, x1) = match anchor.as_str() {
            "end" => (x - w, x),
            "middle" => (x - w / 2.0, x + w / 2.0),
            _ => (x, x + w),
        };
        assert!(
            x0 >= 0.0 && x1 <= width,
            "note `{body}` spans {x0:.0}..{x1:.0}, the drawing is {width} wide"
        );
    }
}

/// Every `text` of `class`: its x, its anchor and its content.
fn texts_of(svg: &str, class: &str) -> Vec<(f64, String, String)> {
    let mut reader = Reader::from_str(svg);
    let mut out = Vec::new();
    let mut open: Option<(f64, String, String)> = None;
    loop {
        match reader.read_event().expect("well-formed") {
            Event::Start(e) if e.local_name().as_ref() == b"text" => {
                let attr = |k: &[u8]| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == k)
                        .map(|a| a.unescape_value().unwrap().into_owned())
                };
                if attr(b"class").as_deref() == Some(class) {
                    let x = attr(b"x").unwrap().parse().unwrap();
                    let anchor = attr(b"text-anchor").unwrap_or_else(|| "start".into());
                    open = Some((x, anchor, String::new()));
                }
            }
            Event::Text(t) => {
                if let Some(o) = open.as_mut() {
                    o.2.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Event::End(e) if e.local_name().as_ref() == b"text" => {
                out.extend(open.take());
            }
            Event::Eof => break,
            _ => {}
        }
    }
    out
}

/// A box's name stays inside its box and below the kind icon in its top
/// left corner, however many lines it wraps to: the samples, and every model
/// of the BPMN interchange corpus (their own drawings: short boxes with long
/// names, such as B.2.0's `User Task 12 Muti-Inst. Seq.`).
#[test]
fn box_names_stay_inside_the_box_and_clear_of_the_icon() {
    let mut models: Vec<PathBuf> = std::fs::read_dir(repo().join("samples"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "bpmn"))
        .collect();
    let corpus = repo().join("../shared/corpus/miwg");
    match std::fs::read_dir(&corpus) {
        Ok(dir) => models.extend(
            dir.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "bpmn")),
        ),
        Err(_) => eprintln!(
            "skipping the interchange corpus: {} is absent",
            corpus.display()
        ),
    }
    models.sort();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.svg");
    let mut boxes = 0;
    for model in &models {
        let o = qflow()
            .arg("render")
            .arg(model)
            .arg("--svg")
            .arg(&out)
            .output()
            .unwrap();
        if !o.status.success() {
            continue; // not drawable (no process): other tests cover refusals
        }
        let text = std::fs::read_to_string(&out).unwrap();
        for b in boxed_names(&text) {
            boxes += 1;
            let (font, step) = if b.small { (10.0, 12.0) } else { (12.0, 14.0) };
            let top = b.baseline - font * 0.8;
            let bottom = b.baseline + step * (b.lines as f64 - 1.0) + font * 0.25;
            assert!(
                top >= b.y + 19.0 && bottom <= b.y + b.h,
                "{}: the name of `{}` ({} lines, {top:.1}..{bottom:.1}) leaves its box {:.1}..{:.1} or meets its icon (down to {:.1})",
                model.display(),
                b.id,
                b.lines,
                b.y,
                b.y + b.h,
                b.y + 19.0
            );
        }
    }
    assert!(boxes > 20, "only {boxes} boxes drawn");
}

struct BoxedName {
    id: String,
    y: f64,
    h: f64,
    baseline: f64,
    lines: usize,
    small: bool,
}

/// Every node drawn as a box (a `rect` shape) with its name's baseline,
/// line count and size.
fn boxed_names(svg: &str) -> Vec<BoxedName> {
    let mut reader = Reader::from_str(svg);
    let mut out = Vec::new();
    let mut node: Option<String> = None;
    let mut rect: Option<(f64, f64)> = None;
    let mut name: Option<(f64, bool, usize)> = None;
    loop {
        match reader.read_event().expect("well-formed") {
            Event::Start(e) | Event::Empty(e) => {
                let attr = |k: &[u8]| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == k)
                        .map(|a| a.unescape_value().unwrap().into_owned())
                };
                let class = attr(b"class").unwrap_or_default();
                match e.local_name().as_ref() {
                    b"g" if class.starts_with("node ") => {
                        node = attr(b"data-id");
                        rect = None;
                    }
                    b"rect" if class == "shape" => {
                        let y: f64 = attr(b"y").unwrap().parse().unwrap();
                        let h: f64 = attr(b"height").unwrap().parse().unwrap();
                        rect = Some((y, h));
                    }
                    b"text" if class.starts_with("name") && rect.is_some() => {
                        let y = attr(b"y").unwrap().parse().unwrap();
                        name = Some((y, class.contains("small"), 0));
                    }
                    b"tspan" => {
                        if let Some(n) = name.as_mut() {
                            n.2 += 1;
                        }
                    }
                    _ => {}
                }
            }
            Event::End(e) if e.local_name().as_ref() == b"text" => {
                if let (Some((baseline, small, lines)), Some((y, h)), Some(id)) =
                    (name.take(), rect, node.as_ref())
                {
                    if lines > 0 {
                        out.push(BoxedName {
                            id: id.clone(),
                            y,
                            h,
                            baseline,
                            lines,
                            small,
                        });
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    out
}

/// BPMN draws a non-interrupting boundary event dashed and an interrupting
/// one solid: the class says which, so the stylesheet can.
#[test]
fn only_a_non_interrupting_boundary_is_marked_to_be_drawn_dashed() {
    let dir = tempfile::tempdir().unwrap();
    let source = std::fs::read_to_string(repo().join("samples/run-boundaries.bpmn"))
        .unwrap()
        .replace(
            r#"<bpmn:boundaryEvent id="tooLong" attachedToRef="charge">"#,
            r#"<bpmn:boundaryEvent id="tooLong" attachedToRef="charge" cancelActivity="false">"#,
        );
    assert!(source.contains("cancelActivity=\"false\""));
    let model = dir.path().join("m.bpmn");
    std::fs::write(&model, source).unwrap();
    let out = dir.path().join("m.svg");
    let o = qflow()
        .arg("render")
        .arg(&model)
        .arg("--svg")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    let svg = parse(&text);
    assert!(svg.nodes["tooLong"].has("non-interrupting"));
    assert!(!svg.nodes["onDeclined"].has("non-interrupting"));
    assert!(text.contains(".node.boundary.non-interrupting .shape { stroke-dasharray"));
}

/// A boundary event carries its trigger's BPMN marker: a clock for a
/// timer, a bolt for an error (so the two boundaries of `run-boundaries`
/// no longer look alike); a thrown error end event's bolt is there too.
#[test]
fn boundary_events_carry_their_bpmn_markers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b.svg");
    render("run-boundaries", None, &out);
    let svg = parse(&std::fs::read_to_string(&out).unwrap());
    let timer = &svg.nodes["tooLong"];
    assert_eq!(timer.attrs["data-trigger"], "timer");
    assert_eq!(timer.count("g", "clock"), 1, "{timer:?}");
    assert_eq!(timer.count("path", "hands"), 1);
    assert_eq!(timer.count("polygon", "bolt"), 0);
    let error = &svg.nodes["onDeclined"];
    assert_eq!(error.attrs["data-trigger"], "error");
    assert_eq!(error.count("polygon", "bolt"), 1, "{error:?}");
    assert_eq!(error.count("g", "clock"), 0);
    assert_eq!(svg.nodes["failedEnd"].count("polygon", "bolt"), 1);
    // A blank end event has no marker and no trigger.
    assert!(!svg.nodes["paid"].attrs.contains_key("data-trigger"));
    assert_eq!(svg.nodes["paid"].count("polygon", "bolt"), 0);
}

/// Two flows run along one stretch of line only when they leave the same
/// node or enter the same node: in `run-boundaries` the declined card's
/// flow (`f3`, from the error boundary) used to join `f2`'s run out of
/// Charge, so the line read "Charge → Tell the customer".
#[test]
fn flows_never_share_a_segment_with_a_flow_between_other_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let samples: Vec<String> = std::fs::read_dir(repo().join("samples"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".bpmn").map(str::to_string)
        })
        .collect();
    assert!(samples.len() > 10, "{samples:?}");
    for sample in &samples {
        let out = dir.path().join(format!("{sample}.svg"));
        render(sample, None, &out);
        let text = std::fs::read_to_string(&out).unwrap();
        let flows = flow_lines(&text);
        for (i, a) in flows.iter().enumerate() {
            for b in &flows[i + 1..] {
                if a.1 == b.1 || a.2 == b.2 {
                    continue;
                }
                let shared = a.3.iter().any(|s| b.3.iter().any(|t| run_together(*s, *t)));
                assert!(
                    !shared,
                    "{sample}: {} ({} → {}) and {} ({} → {}) share a segment",
                    a.0, a.1, a.2, b.0, b.1, b.2
                );
            }
        }
    }
    // The declined card's flow now enters Tell the customer on its own.
    let out = dir.path().join("run-boundaries.svg");
    let flows = flow_lines(&std::fs::read_to_string(out).unwrap());
    let f3 = flows.iter().find(|f| f.0 == "f3").unwrap();
    assert_eq!(
        (f3.1.as_str(), f3.2.as_str()),
        ("onDeclined", "tellCustomer")
    );
}

/// Every flow: id, source, target and its segments.
fn flow_lines(svg: &str) -> Vec<(String, String, String, Vec<Segment>)> {
    let mut out = Vec::new();
    let mut reader = Reader::from_str(svg);
    let mut open: Option<(String, String, String)> = None;
    loop {
        match reader.read_event().expect("well-formed") {
            Event::Start(e) | Event::Empty(e) => {
                let attrs: BTreeMap<String, String> = e
                    .attributes()
                    .flatten()
                    .map(|a| {
                        (
                            String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                            a.unescape_value().unwrap().into_owned(),
                        )
                    })
                    .collect();
                let class = attrs.get("class").cloned().unwrap_or_default();
                if e.local_name().as_ref() == b"g" && class.split(' ').next() == Some("flow") {
                    open = Some((
                        attrs["data-id"].clone(),
                        attrs["data-source"].clone(),
                        attrs["data-target"].clone(),
                    ));
                } else if e.local_name().as_ref() == b"path" && class == "line" {
                    let points: Vec<(f64, f64)> = attrs["d"]
                        .split(['M', 'L'])
                        .filter_map(|p| {
                            let (x, y) = p.trim().split_once(',')?;
                            Some((x.parse().ok()?, y.parse().ok()?))
                        })
                        .collect();
                    let (id, s, t) = open.take().expect("a line inside its flow");
                    out.push((id, s, t, points.windows(2).map(|w| (w[0], w[1])).collect()));
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    out
}

/// Whether two axis-parallel segments run together for more than a point.
fn run_together(a: Segment, b: Segment) -> bool {
    let ((ax0, ay0), (ax1, ay1)) = a;
    let ((bx0, by0), (bx1, by1)) = b;
    let close = |x: f64, y: f64| (x - y).abs() < 0.5;
    let run = |a0: f64, a1: f64, b0: f64, b1: f64| {
        a0.max(a1).min(b0.max(b1)) - a0.min(a1).max(b0.min(b1)) > 1.0
    };
    if close(ay0, ay1) && close(by0, by1) && close(ay0, by0) {
        run(ax0, ax1, bx0, bx1)
    } else if close(ax0, ax1) && close(bx0, bx1) && close(ax0, bx0) {
        run(ay0, ay1, by0, by1)
    } else {
        false
    }
}

#[test]
fn an_instance_is_drawn_on_its_deployed_model_whatever_model_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db").display().to_string();
    let id = run_into(&db, "dbg08-long-outage", "dbg08-long-outage");
    let draw = |sample: &str, out: &str| {
        let out = dir.path().join(out);
        let o = qflow()
            .arg("render")
            .arg(repo().join("samples").join(format!("{sample}.bpmn")))
            .args(["--db", &db, "--instance", &id, "--svg"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{err}");
        (std::fs::read_to_string(out).unwrap(), err)
    };
    let (own, err) = draw("dbg08-long-outage", "own.svg");
    assert!(!err.contains("note:"), "{err}");
    // Another version of the same process (the repaired model) is not the
    // one the instance runs: its state is drawn on the deployed model.
    let (other, err) = draw("dbg08-repaired", "other.svg");
    assert!(
        err.contains(&format!("is not the model instance {id} was started from"))
            && err.contains("drawing its deployed model instead"),
        "{err}"
    );
    assert_eq!(other, own, "the deployed model's drawing, with the state");
}
