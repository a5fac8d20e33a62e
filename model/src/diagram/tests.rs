use super::*;

const HEAD: &str = r#"<?xml version="1.0"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d" targetNamespace="t">
<bpmn:process id="p" isExecutable="true">
"#;

fn diagram(body: &str) -> Diagram {
    let text = format!("{HEAD}{body}</bpmn:process></bpmn:definitions>");
    let defs = crate::analyze(&text).definitions.expect("a model");
    Diagram::of(&defs.processes[0], Some(&text))
}

fn flows(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .enumerate()
        .map(|(i, (s, t))| {
            format!(r#"<bpmn:sequenceFlow id="f{i}" sourceRef="{s}" targetRef="{t}"/>"#)
        })
        .collect()
}

#[test]
fn a_chain_runs_left_to_right_on_one_row() {
    let d = diagram(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:serviceTask id="a" q:task="x"/><bpmn:serviceTask id="b" q:task="y"/><bpmn:endEvent id="e"/>{}"#,
        flows(&[("s", "a"), ("a", "b"), ("b", "e")])
    ));
    assert_eq!(d.placement, Placement::Layered);
    let xs: Vec<f64> = ["s", "a", "b", "e"]
        .iter()
        .map(|id| d.node(id).unwrap().rect.x)
        .collect();
    assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
    let ys: Vec<f64> = ["s", "a", "b", "e"]
        .iter()
        .map(|id| d.node(id).unwrap().rect.center().y)
        .collect();
    assert!(ys.iter().all(|y| (y - ys[0]).abs() < 0.01), "{ys:?}");
    for f in &d.flows {
        assert_eq!(f.points.len(), 2, "a straight line: {f:?}");
        assert!(!f.back);
    }
}

#[test]
fn a_split_puts_its_branches_apart_and_centres_the_join() {
    let d = diagram(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/><bpmn:serviceTask id="a" q:task="x"/><bpmn:serviceTask id="b" q:task="y"/><bpmn:parallelGateway id="join"/><bpmn:endEvent id="e"/>{}"#,
        flows(&[
            ("s", "fork"),
            ("fork", "a"),
            ("fork", "b"),
            ("a", "join"),
            ("b", "join"),
            ("join", "e")
        ])
    ));
    let (a, b) = (d.node("a").unwrap().rect, d.node("b").unwrap().rect);
    assert_eq!(a.x, b.x, "one layer");
    assert!(
        a.bottom() < b.y || b.bottom() < a.y,
        "no overlap: {a:?} {b:?}"
    );
    let join = d.node("join").unwrap().rect.center().y;
    assert!((join - (a.center().y + b.center().y) / 2.0).abs() < 0.01);
}

#[test]
fn a_loop_is_routed_back_below_the_rest() {
    let d = diagram(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:serviceTask id="a" q:task="x"/><bpmn:exclusiveGateway id="g" default="f3"/><bpmn:endEvent id="e"/>{}"#,
        flows(&[("s", "a"), ("a", "g"), ("g", "a"), ("g", "e")])
    ));
    let back = d.flow("f2").unwrap();
    assert!(back.back);
    let lowest = d.nodes.iter().map(|n| n.rect.bottom()).fold(0.0, f64::max);
    assert!(back.points.iter().any(|p| p.y > lowest), "{back:?}");
    assert_eq!(d.flow("f3").unwrap().mark, FlowMark::Default);
    assert!(d.node("e").unwrap().rect.x > d.node("g").unwrap().rect.x);
}

#[test]
fn a_boundary_rides_on_its_task_and_its_flow_leaves_downwards() {
    let d = diagram(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:serviceTask id="a" q:task="x"/><bpmn:boundaryEvent id="b" attachedToRef="a"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent><bpmn:endEvent id="e"/><bpmn:endEvent id="late"/>{}"#,
        flows(&[("s", "a"), ("a", "e"), ("b", "late")])
    ));
    let (task, b) = (d.node("a").unwrap().rect, d.node("b").unwrap().rect);
    assert_eq!(b.center().y, task.bottom());
    assert!(b.x > task.x && b.right() < task.right());
    let f = d.flow("f2").unwrap();
    assert_eq!(
        f.points[0],
        Point {
            x: b.center().x,
            y: b.bottom()
        }
    );
    assert!(d.node("late").unwrap().rect.x > task.x);
}

#[test]
fn the_diagram_section_gives_the_positions_when_it_draws_every_node() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../samples/approval-gateway.bpmn"
    ))
    .unwrap();
    let defs = crate::analyze(&text).definitions.unwrap();
    let d = Diagram::of(&defs.processes[0], Some(&text));
    assert_eq!(d.placement, Placement::Drawn);
    // Shifted to the margin, sizes as drawn.
    let start = d.node("start").unwrap().rect;
    assert_eq!((start.w, start.h), (36.0, 36.0));
    assert_eq!(d.flow("flow-manual").unwrap().mark, FlowMark::Default);
    assert!(matches!(
        d.flow("flow-auto").unwrap().mark,
        FlowMark::Condition(_)
    ));
    // Without the text, the same model is laid out.
    assert_eq!(
        Diagram::of(&defs.processes[0], None).placement,
        Placement::Layered
    );
}
