//! The modelling rules (QF100–QF125, bpmnlint's), as a user meets them: a
//! model with the mistake is flagged on the right element with the exact
//! span, the same model without it is clean of that code, severities follow
//! the document (plain BPMN: bpmnlint's; qflow: qflow's defaults), and the
//! mechanical fixes make the code go away.

use qflow_engine::config::{bpmnlintrc, qflow_toml, Settings};
use qflow_engine::rules::apply_edits;
use qflow_engine::{analyze, analyze_with, Code, Diagnostic, Severity};

const BPMN: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";

/// A plain BPMN document (bpmnlint's severities) with one process.
fn plain(body: &str) -> String {
    format!(
        "<bpmn:definitions xmlns:bpmn=\"{BPMN}\" id=\"d\">\n  <bpmn:process id=\"p\" isExecutable=\"false\">\n{body}\n  </bpmn:process>\n</bpmn:definitions>\n"
    )
}

/// A qflow document with one executable process.
fn qflow(body: &str) -> String {
    format!(
        "<bpmn:definitions xmlns:bpmn=\"{BPMN}\" xmlns:q=\"urn:qflow:bpmn:1\" id=\"d\">\n  <bpmn:process id=\"p\" isExecutable=\"true\">\n{body}\n  </bpmn:process>\n</bpmn:definitions>\n"
    )
}

fn of(src: &str, code: Code) -> Vec<Diagnostic> {
    analyze(src)
        .diagnostics
        .into_iter()
        .filter(|d| d.code == code)
        .collect()
}

fn text<'a>(src: &'a str, d: &Diagnostic) -> &'a str {
    &src[d.primary.span.start()..d.primary.span.end()]
}

/// The (element, primary text) of every diagnostic of `code`.
fn hits(src: &str, code: Code) -> Vec<(String, String)> {
    of(src, code)
        .iter()
        .map(|d| {
            (
                d.element.clone().unwrap_or_default(),
                text(src, d).to_string(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

const NAMED_LINE: &str = r#"    <bpmn:startEvent id="s" name="Start"/>
    <bpmn:task id="t" name="Work"/>
    <bpmn:endEvent id="e" name="End"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>"#;

#[test]
fn a_clean_line_has_no_modelling_finding_but_no_bpmndi() {
    let d = analyze(&plain(NAMED_LINE)).diagnostics;
    let codes: Vec<Code> = d.iter().map(|d| d.code).collect();
    // A plain document without a diagram: bpmnlint asks for one, per element.
    assert!(codes.iter().all(|c| *c == Code::QF109), "{d:#?}");
    assert_eq!(codes.len(), 5);
    // In a qflow document the diagram rules are off: nothing at all.
    let q = qflow(
        &NAMED_LINE
            .replace("bpmn:task", "bpmn:serviceTask")
            .replace("name=\"Work\"", "name=\"Work\" q:task=\"w\""),
    );
    assert!(
        analyze(&q).diagnostics.is_empty(),
        "{:#?}",
        analyze(&q).diagnostics
    );
}

#[test]
fn qf100_ad_hoc_sub_process() {
    let src = plain(
        r#"    <bpmn:adHocSubProcess id="a">
      <bpmn:startEvent id="in"/>
      <bpmn:task id="t" name="T"/>
      <bpmn:intermediateCatchEvent id="c" name="C"><bpmn:messageEventDefinition/></bpmn:intermediateCatchEvent>
      <bpmn:endEvent id="out"/>
    </bpmn:adHocSubProcess>"#,
    );
    // The catch event without an outgoing flow is allowed (bpmnlint 11.15
    // reports start and end events only).
    assert_eq!(
        hits(&src, Code::QF100),
        pairs(&[("in", "bpmn:startEvent"), ("out", "bpmn:endEvent")])
    );
    assert_eq!(of(&src, Code::QF100)[0].severity, Severity::Error);
    // Inside an ad-hoc sub-process, disconnected tasks are fine (the
    // sub-process itself, alone in its process, is not).
    assert_eq!(
        hits(&src, Code::QF111),
        pairs(&[("a", "bpmn:adHocSubProcess")])
    );
}

#[test]
fn qf101_conditional_flows_and_the_default_fix() {
    let body = r#"    <bpmn:startEvent id="s" name="S"/>
    <bpmn:exclusiveGateway id="g" name="Large?"/>
    <bpmn:serviceTask id="a" name="A" q:task="a"/>
    <bpmn:serviceTask id="b" name="B" q:task="b"/>
    <bpmn:endEvent id="e" name="E"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
    <bpmn:sequenceFlow id="yes" name="yes" sourceRef="g" targetRef="a"><bpmn:conditionExpression>x &gt; 1</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="no" sourceRef="g" targetRef="b"/>
    <bpmn:sequenceFlow id="f2" sourceRef="a" targetRef="e"/>
    <bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="e"/>"#;
    let src = qflow(body);
    let found = of(&src, Code::QF101);
    assert_eq!(found.len(), 1, "{found:#?}");
    let d = &found[0];
    assert_eq!(text(&src, d), "bpmn:sequenceFlow");
    assert_eq!(d.element.as_deref(), Some("no"));
    // In an executable qflow process: an error, so `run` refuses it.
    assert_eq!(d.severity, Severity::Error);
    assert!(d
        .help
        .as_deref()
        .unwrap()
        .contains("first flow in document order"));
    // The fix makes `no` the default: the code is gone, nothing else appears.
    assert_eq!(d.fixes.len(), 1);
    let fixed = apply_edits(&src, &d.fixes[0].edits);
    assert!(
        fixed.contains(r#"<bpmn:exclusiveGateway id="g" name="Large?" default="no"/>"#),
        "{fixed}"
    );
    assert!(of(&fixed, Code::QF101).is_empty());
    assert!(
        !analyze(&fixed).has_errors(),
        "{:#?}",
        analyze(&fixed).diagnostics
    );
    // Plain document: bpmnlint's error too; non-executable qflow: a warning.
    let off = src.replace("isExecutable=\"true\"", "isExecutable=\"false\"");
    assert_eq!(of(&off, Code::QF101)[0].severity, Severity::Warning);
}

#[test]
fn qf101_a_gateway_without_conditions_is_no_conditional_fork_as_in_bpmnlint() {
    // bpmnlint's conditional-flows judges a fork conditional when it has a
    // default or a conditional flow: two bare flows out of an exclusive
    // gateway are not reported in a plain document.
    let body = r#"    <bpmn:startEvent id="s" name="S"/>
    <bpmn:exclusiveGateway id="g" name="Which?"/>
    <bpmn:task id="a" name="A"/>
    <bpmn:task id="b" name="B"/>
    <bpmn:endEvent id="e" name="E"/>
    <bpmn:endEvent id="e2" name="E2"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
    <bpmn:sequenceFlow id="one" sourceRef="g" targetRef="a"/>
    <bpmn:sequenceFlow id="two" sourceRef="g" targetRef="b"/>
    <bpmn:sequenceFlow id="f2" sourceRef="a" targetRef="e"/>
    <bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="e2"/>"#;
    let src = plain(body);
    // Nothing but the missing diagram: the model reads, QF101 is silent.
    let all = analyze(&src).diagnostics;
    assert!(all.iter().all(|d| d.code == Code::QF109), "{all:#?}");
    assert!(of(&src, Code::QF101).is_empty());
    // In an executable qflow process the runtime would always take `one`:
    // both flows are reported, as errors.
    let q = qflow(
        &body
            .replace(
                r#"<bpmn:task id="a" name="A"/>"#,
                r#"<bpmn:serviceTask id="a" name="A" q:task="a"/>"#,
            )
            .replace(
                r#"<bpmn:task id="b" name="B"/>"#,
                r#"<bpmn:serviceTask id="b" name="B" q:task="b"/>"#,
            ),
    );
    assert_eq!(
        hits(&q, Code::QF101),
        pairs(&[("one", "bpmn:sequenceFlow"), ("two", "bpmn:sequenceFlow")])
    );
    assert!(of(&q, Code::QF101)
        .iter()
        .all(|d| d.severity == Severity::Error));
    // A written but empty conditionExpression makes a flow conditional (as
    // bpmnlint reads it): the fork is conditional, the other flow is
    // reported, and the conditional flow needs a label.
    let empty = plain(&body.replace(
        r#"<bpmn:sequenceFlow id="one" sourceRef="g" targetRef="a"/>"#,
        r#"<bpmn:sequenceFlow id="one" sourceRef="g" targetRef="a"><bpmn:conditionExpression/></bpmn:sequenceFlow>"#,
    ));
    assert_eq!(
        hits(&empty, Code::QF101),
        pairs(&[("two", "bpmn:sequenceFlow")])
    );
    assert_eq!(
        hits(&empty, Code::QF107),
        pairs(&[("one", "bpmn:sequenceFlow")])
    );
}

#[test]
fn qf102_and_qf121_start_and_end_per_scope() {
    let src = plain(
        r#"    <bpmn:task id="t" name="T"/>
    <bpmn:subProcess id="sub">
      <bpmn:task id="inner" name="I"/>
    </bpmn:subProcess>
    <bpmn:sequenceFlow id="f" sourceRef="t" targetRef="sub"/>"#,
    );
    assert_eq!(
        hits(&src, Code::QF102),
        pairs(&[("p", "bpmn:process"), ("sub", "bpmn:subProcess")])
    );
    assert_eq!(
        hits(&src, Code::QF121),
        pairs(&[("p", "bpmn:process"), ("sub", "bpmn:subProcess")])
    );
    // An executable qflow process without a start event is QF005, never also QF121.
    let q = qflow(r#"    <bpmn:serviceTask id="t" name="T" q:task="t"/>"#);
    assert_eq!(of(&q, Code::QF005).len(), 1);
    assert!(of(&q, Code::QF121).is_empty());
}

#[test]
fn qf103_event_based_gateway() {
    let src = plain(
        r#"    <bpmn:eventBasedGateway id="g"/>
    <bpmn:intermediateCatchEvent id="m" name="M"><bpmn:messageEventDefinition/></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f" sourceRef="g" targetRef="m"><bpmn:conditionExpression>x</bpmn:conditionExpression></bpmn:sequenceFlow>"#,
    );
    assert_eq!(
        hits(&src, Code::QF103),
        pairs(&[("g", "bpmn:eventBasedGateway"), ("f", "bpmn:sequenceFlow")])
    );
}

#[test]
fn qf104_and_qf122_start_events_of_sub_processes() {
    let src = plain(
        r#"    <bpmn:subProcess id="ev" triggeredByEvent="true">
      <bpmn:startEvent id="blank" name="B"/>
    </bpmn:subProcess>
    <bpmn:subProcess id="sub" name="S">
      <bpmn:startEvent id="typed" name="T"><bpmn:timerEventDefinition/></bpmn:startEvent>
    </bpmn:subProcess>"#,
    );
    assert_eq!(
        hits(&src, Code::QF104),
        pairs(&[("blank", "bpmn:startEvent")])
    );
    assert_eq!(
        hits(&src, Code::QF122),
        pairs(&[("typed", "bpmn:timerEventDefinition")])
    );
}

#[test]
fn qf105_fake_join_error_only_where_parallel_branches_meet() {
    let parallel = qflow(
        r#"    <bpmn:startEvent id="s" name="S"/>
    <bpmn:parallelGateway id="split"/>
    <bpmn:serviceTask id="a" name="A" q:task="a"/>
    <bpmn:serviceTask id="b" name="B" q:task="b"/>
    <bpmn:serviceTask id="j" name="J" q:task="j"/>
    <bpmn:endEvent id="e" name="E"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="split"/>
    <bpmn:sequenceFlow id="f2" sourceRef="split" targetRef="a"/>
    <bpmn:sequenceFlow id="f3" sourceRef="split" targetRef="b"/>
    <bpmn:sequenceFlow id="f4" sourceRef="a" targetRef="j"/>
    <bpmn:sequenceFlow id="f5" sourceRef="b" targetRef="j"/>
    <bpmn:sequenceFlow id="f6" sourceRef="j" targetRef="e"/>"#,
    );
    let d = &of(&parallel, Code::QF105)[0];
    assert_eq!(
        (d.element.as_deref(), text(&parallel, d)),
        (Some("j"), "bpmn:serviceTask")
    );
    assert_eq!(d.severity, Severity::Error);
    // A loop back into a task: alternatives, run once each as drawn: a warning.
    let looping = qflow(
        r#"    <bpmn:startEvent id="s" name="S"/>
    <bpmn:serviceTask id="ask" name="Ask" q:task="a"/>
    <bpmn:exclusiveGateway id="ok" name="OK?" default="again"/>
    <bpmn:endEvent id="e" name="E"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="ask"/>
    <bpmn:sequenceFlow id="f2" sourceRef="ask" targetRef="ok"/>
    <bpmn:sequenceFlow id="yes" name="yes" sourceRef="ok" targetRef="e"><bpmn:conditionExpression>ok</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="again" sourceRef="ok" targetRef="ask"/>"#,
    );
    let d = &of(&looping, Code::QF105)[0];
    assert_eq!(d.element.as_deref(), Some("ask"));
    assert_eq!(d.severity, Severity::Warning);
    // A parallel join in between: no fake join at all.
    let joined = parallel
        .replace(r#"targetRef="j"/>"#, r#"targetRef="join"/>"#)
        .replace(
            "    <bpmn:endEvent id=\"e\"",
            "    <bpmn:parallelGateway id=\"join\"/>\n    <bpmn:sequenceFlow id=\"fj\" sourceRef=\"join\" targetRef=\"j\"/>\n    <bpmn:endEvent id=\"e\"",
        );
    assert!(
        of(&joined, Code::QF105).is_empty(),
        "{:#?}",
        of(&joined, Code::QF105)
    );
    assert!(!analyze(&joined).has_errors());
}

#[test]
fn qf106_global_definitions() {
    let src = format!(
        r#"<bpmn:definitions xmlns:bpmn="{BPMN}" id="d">
  <bpmn:message id="used" name="Order"/>
  <bpmn:message id="twin" name="Order"/>
  <bpmn:signal id="blank" name=" "/>
  <bpmn:process id="p">
    <bpmn:startEvent id="s" name="S"><bpmn:messageEventDefinition messageRef="used"/></bpmn:startEvent>
    <bpmn:intermediateThrowEvent id="t" name="T"><bpmn:signalEventDefinition signalRef="blank"/></bpmn:intermediateThrowEvent>
  </bpmn:process>
</bpmn:definitions>"#
    );
    let found = of(&src, Code::QF106);
    let got: Vec<(&str, &str)> = found
        .iter()
        .map(|d| (d.element.as_deref().unwrap(), d.message.as_str()))
        .collect();
    assert_eq!(got.len(), 4, "{got:#?}");
    assert!(got[0].0 == "used" && got[0].1.contains("another <message> has the name `Order`"));
    assert!(got[1].0 == "twin" && got[1].1.contains("never used"));
    assert!(got[2].0 == "twin" && got[2].1.contains("another <message>"));
    assert!(got[3].0 == "blank" && got[3].1.contains("has no name"));
    assert!(found.iter().all(|d| text(&src, d).starts_with("bpmn:")));
}

#[test]
fn qf107_label_required_and_its_exemptions() {
    let src = plain(
        r#"    <bpmn:startEvent id="s"/>
    <bpmn:parallelGateway id="par"/>
    <bpmn:exclusiveGateway id="fork"/>
    <bpmn:exclusiveGateway id="join"/>
    <bpmn:subProcess id="sub"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="fork"/>
    <bpmn:sequenceFlow id="c1" sourceRef="fork" targetRef="join"><bpmn:conditionExpression>a</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="c2" name="b" sourceRef="fork" targetRef="join"><bpmn:conditionExpression>b</bpmn:conditionExpression></bpmn:sequenceFlow>"#,
    );
    assert_eq!(
        hits(&src, Code::QF107),
        pairs(&[
            ("s", "bpmn:startEvent"),
            ("fork", "bpmn:exclusiveGateway"),
            ("c1", "bpmn:sequenceFlow")
        ])
    );
    // In a qflow document it is a hint.
    let q = qflow(r#"    <bpmn:startEvent id="s"/>"#);
    assert_eq!(of(&q, Code::QF107)[0].severity, Severity::Hint);
}

#[test]
fn qf108_link_events() {
    let src = plain(
        r#"    <bpmn:intermediateThrowEvent id="go" name="Go"><bpmn:linkEventDefinition name="A"/></bpmn:intermediateThrowEvent>
    <bpmn:intermediateCatchEvent id="land1" name="L1"><bpmn:linkEventDefinition name="B"/></bpmn:intermediateCatchEvent>
    <bpmn:intermediateCatchEvent id="nameless" name="N"><bpmn:linkEventDefinition/></bpmn:intermediateCatchEvent>
    <bpmn:intermediateThrowEvent id="goC" name="C"><bpmn:linkEventDefinition name="C"/></bpmn:intermediateThrowEvent>
    <bpmn:intermediateCatchEvent id="c1" name="C1"><bpmn:linkEventDefinition name="C"/></bpmn:intermediateCatchEvent>
    <bpmn:intermediateCatchEvent id="c2" name="C2"><bpmn:linkEventDefinition name="C"/></bpmn:intermediateCatchEvent>"#,
    );
    let ids: Vec<String> = hits(&src, Code::QF108)
        .into_iter()
        .map(|(e, _)| e)
        .collect();
    // In document order: `go` and `land1` lack their counterparts, `nameless`
    // its name, and `C` has two catches.
    assert_eq!(ids, ["go", "land1", "nameless", "c1", "c2"]);
}

#[test]
fn qf109_and_qf118_the_diagram() {
    let di = |ship_x: u32, with_f2: bool| {
        format!(
            r#"<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" xmlns:di="http://www.omg.org/spec/DD/20100524/DI" id="d">
  <bpmn:process id="p">
    <bpmn:task id="a" name="A"/>
    <bpmn:task id="b" name="B"/>
    <bpmn:sequenceFlow id="f2" sourceRef="a" targetRef="b"/>
  </bpmn:process>
  <bpmndi:BPMNDiagram id="dia"><bpmndi:BPMNPlane id="pl" bpmnElement="p">
    <bpmndi:BPMNShape id="a_di" bpmnElement="a"><dc:Bounds x="100" y="100" width="100" height="80"/></bpmndi:BPMNShape>
    <bpmndi:BPMNShape id="b_di" bpmnElement="b"><dc:Bounds x="{ship_x}" y="100" width="100" height="80"/></bpmndi:BPMNShape>
    {}
  </bpmndi:BPMNPlane></bpmndi:BPMNDiagram>
</bpmn:definitions>"#,
            if with_f2 {
                r#"<bpmndi:BPMNEdge id="f2_di" bpmnElement="f2"><di:waypoint x="200" y="140"/><di:waypoint x="300" y="140"/></bpmndi:BPMNEdge>"#
            } else {
                ""
            }
        )
    };
    let missing = di(300, false);
    assert_eq!(
        hits(&missing, Code::QF109),
        pairs(&[("f2", "bpmn:sequenceFlow")])
    );
    assert!(of(&missing, Code::QF118).is_empty());
    let overlapping = di(150, true);
    assert!(of(&overlapping, Code::QF109).is_empty());
    assert_eq!(
        hits(&overlapping, Code::QF118),
        pairs(&[("a", "bpmn:task"), ("b", "bpmn:task")])
    );
    assert_eq!(of(&overlapping, Code::QF118)[0].severity, Severity::Warning);
    // Touching counts, as in bpmnlint; 1 unit apart does not.
    assert_eq!(of(&di(200, true), Code::QF118).len(), 2);
    assert!(of(&di(201, true), Code::QF118).is_empty());
}

/// QF118 as bpmnlint judges it: participants overlap only within their
/// collaboration; a data object reference is a shape of its process like a
/// task (a data store reference may leave the pool); an element drawn twice
/// counts where it is drawn last.
#[test]
fn qf118_collaborations_data_references_and_the_last_drawing() {
    let src = format!(
        r#"<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" id="d">
  <bpmn:collaboration id="c1"><bpmn:participant id="shop" name="Shop" processRef="p"/></bpmn:collaboration>
  <bpmn:collaboration id="c2"><bpmn:participant id="bank" name="Bank"/></bpmn:collaboration>
  <bpmn:process id="p">
    <bpmn:task id="t" name="T"/>
    <bpmn:dataObjectReference id="dor" name="Order" dataObjectRef="do"/>
    <bpmn:dataObject id="do"/>
    <bpmn:dataStoreReference id="dsr" name="Orders"/>
    <bpmn:subProcess id="sub" name="Sub">
      <bpmn:dataObjectReference id="inner" name="Inner" dataObjectRef="do"/>
    </bpmn:subProcess>
    <bpmn:task id="twice" name="Twice"/>
  </bpmn:process>
  <bpmndi:BPMNDiagram id="d1"><bpmndi:BPMNPlane id="pl1" bpmnElement="c1">
    <bpmndi:BPMNShape id="shop_di" bpmnElement="shop"><dc:Bounds x="0" y="0" width="600" height="300"/></bpmndi:BPMNShape>
    <bpmndi:BPMNShape id="bank_di" bpmnElement="bank"><dc:Bounds x="0" y="250" width="600" height="100"/></bpmndi:BPMNShape>
    <bpmndi:BPMNShape id="t_di" bpmnElement="t"><dc:Bounds x="100" y="100" width="100" height="80"/></bpmndi:BPMNShape>
    <bpmndi:BPMNShape id="dor_di" bpmnElement="dor"><dc:Bounds x="180" y="120" width="36" height="50"/></bpmndi:BPMNShape>
    <bpmndi:BPMNShape id="dsr_di" bpmnElement="dsr"><dc:Bounds x="700" y="100" width="50" height="50"/></bpmndi:BPMNShape>
    <bpmndi:BPMNShape id="sub_di" bpmnElement="sub" isExpanded="true"><dc:Bounds x="300" y="100" width="200" height="100"/></bpmndi:BPMNShape>
    <bpmndi:BPMNShape id="inner_di" bpmnElement="inner"><dc:Bounds x="480" y="120" width="36" height="50"/></bpmndi:BPMNShape>
    <bpmndi:BPMNShape id="twice_first" bpmnElement="twice"><dc:Bounds x="100" y="100" width="100" height="80"/></bpmndi:BPMNShape>
  </bpmndi:BPMNPlane></bpmndi:BPMNDiagram>
  <bpmndi:BPMNDiagram id="d2"><bpmndi:BPMNPlane id="pl2" bpmnElement="p">
    <bpmndi:BPMNShape id="twice_last" bpmnElement="twice"><dc:Bounds x="20" y="20" width="50" height="40"/></bpmndi:BPMNShape>
  </bpmndi:BPMNPlane></bpmndi:BPMNDiagram>
</bpmn:definitions>"#
    );
    let found = of(&src, Code::QF118);
    let got: Vec<(String, String, String)> = found
        .iter()
        .map(|d| {
            (
                d.element.clone().unwrap_or_default(),
                text(&src, d).to_string(),
                d.message.clone(),
            )
        })
        .collect();
    let want = |e: &str, t: &str, m: &str| (e.to_string(), t.to_string(), m.to_string());
    assert_eq!(
        got,
        vec![
            // `shop` and `bank` overlap, but in two collaborations: neither
            // is reported. `twice` was first drawn on `t`, last elsewhere.
            want(
                "t",
                "bpmn:task",
                "<task> `t` overlaps another element in the diagram"
            ),
            want(
                "dor",
                "bpmn:dataObjectReference",
                "<dataObjectReference> `dor` overlaps another element in the diagram"
            ),
            // `dsr` lies outside the pool too, which a data store may.
            want(
                "inner",
                "bpmn:dataObjectReference",
                "<dataObjectReference> `inner` lies outside its parent's boundary in the diagram"
            ),
        ],
        "{found:#?}"
    );
    // In one collaboration the two pools overlap.
    let one = src
        .replace(
            r#"<bpmn:collaboration id="c1"><bpmn:participant id="shop" name="Shop" processRef="p"/></bpmn:collaboration>
  <bpmn:collaboration id="c2"><bpmn:participant id="bank" name="Bank"/></bpmn:collaboration>"#,
            r#"<bpmn:collaboration id="c1"><bpmn:participant id="shop" name="Shop" processRef="p"/><bpmn:participant id="bank" name="Bank"/></bpmn:collaboration>"#,
        );
    assert_eq!(
        hits(&one, Code::QF118)[..2],
        pairs(&[("shop", "bpmn:participant"), ("bank", "bpmn:participant")])[..]
    );
}

/// Where bpmnlint looks: the lanes of a sub-process need names; only the
/// first lane set's lanes need drawing; a message referenced only from an
/// event definition declared at the top of the document is unused.
#[test]
fn qf106_qf107_qf109_where_lanes_and_uses_are_found() {
    let src = format!(
        r#"<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" id="d">
  <bpmn:message id="m" name="M"/>
  <bpmn:messageEventDefinition id="top" messageRef="m"/>
  <bpmn:process id="p">
    <bpmn:laneSet id="first"><bpmn:lane id="drawn" name="Drawn"/></bpmn:laneSet>
    <bpmn:laneSet id="second"><bpmn:lane id="alternative" name="Alternative"/></bpmn:laneSet>
    <bpmn:subProcess id="sub" name="Sub">
      <bpmn:laneSet id="subLanes"><bpmn:lane id="subLane"/></bpmn:laneSet>
    </bpmn:subProcess>
  </bpmn:process>
  <bpmndi:BPMNDiagram id="dia"><bpmndi:BPMNPlane id="pl" bpmnElement="p">
    <bpmndi:BPMNShape id="sub_di" bpmnElement="sub"><dc:Bounds x="0" y="0" width="100" height="80"/></bpmndi:BPMNShape>
  </bpmndi:BPMNPlane></bpmndi:BPMNDiagram>
</bpmn:definitions>"#
    );
    assert_eq!(hits(&src, Code::QF106), pairs(&[("m", "bpmn:message")]));
    assert_eq!(
        of(&src, Code::QF106)[0].message,
        "<message> `m` is never used"
    );
    assert_eq!(hits(&src, Code::QF107), pairs(&[("subLane", "bpmn:lane")]));
    assert_eq!(
        hits(&src, Code::QF109),
        pairs(&[("drawn", "bpmn:lane"), ("subLane", "bpmn:lane")])
    );
}

/// A node or flow without an id cannot be drawn: QF109 reports it at its
/// tag, with an empty element, as bpmnlint reports it with no id.
#[test]
fn qf109_elements_without_an_id() {
    let src = plain(
        r#"    <bpmn:task name="Anonymous"/>
    <bpmn:sequenceFlow sourceRef="a" targetRef="b"/>"#,
    );
    let found = of(&src, Code::QF109);
    let got: Vec<(Option<&str>, &str)> = found
        .iter()
        .map(|d| (d.element.as_deref(), text(&src, d)))
        .collect();
    assert_eq!(
        got,
        vec![(Some(""), "bpmn:task"), (Some(""), "bpmn:sequenceFlow")],
        "{found:#?}"
    );
}

#[test]
fn qf110_qf117_discouraged_gateways() {
    let src = plain(
        r#"    <bpmn:complexGateway id="c" name="C"/>
    <bpmn:inclusiveGateway id="i" name="I"/>"#,
    );
    assert_eq!(
        hits(&src, Code::QF110),
        pairs(&[("c", "bpmn:complexGateway")])
    );
    assert_eq!(
        hits(&src, Code::QF117),
        pairs(&[("i", "bpmn:inclusiveGateway")])
    );
    // bpmnlint's recommended severities: no-complex-gateway an error,
    // no-inclusive-gateway a warning.
    assert_eq!(of(&src, Code::QF110)[0].severity, Severity::Error);
    assert_eq!(of(&src, Code::QF117)[0].severity, Severity::Warning);
}

#[test]
fn qf111_disconnected_replaces_qf032() {
    let src = qflow(
        r#"    <bpmn:startEvent id="s" name="S"/>
    <bpmn:serviceTask id="alone" name="Alone" q:task="a"/>
    <bpmn:endEvent id="e" name="E"/>
    <bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"/>
    <bpmn:task id="comp" name="Undo" isForCompensation="true"/>"#,
    );
    assert_eq!(
        hits(&src, Code::QF111),
        pairs(&[("alone", "bpmn:serviceTask")])
    );
    assert_eq!(of(&src, Code::QF111)[0].severity, Severity::Warning);
    assert!(of(&src, Code::QF032).is_empty());
    // With QF111 switched off, QF032 reports it again.
    let (settings, problems) = qflow_toml::parse("[rules]\nno-disconnected = \"off\"\n");
    assert!(problems.is_empty());
    let a = analyze_with(&src, &settings);
    let codes: Vec<Code> = a.diagnostics.iter().map(|d| d.code).collect();
    assert!(
        codes.contains(&Code::QF032) && !codes.contains(&Code::QF111),
        "{codes:?}"
    );
}

#[test]
fn qf112_duplicate_flows_and_the_removal_fix() {
    let src = qflow(
        r#"    <bpmn:startEvent id="s" name="S"/>
    <bpmn:serviceTask id="t" name="T" q:task="t">
      <bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:outgoing>dup</bpmn:outgoing>
    </bpmn:serviceTask>
    <bpmn:endEvent id="e" name="E"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
    <bpmn:sequenceFlow id="dup" sourceRef="t" targetRef="e"/>"#,
    );
    assert_eq!(
        hits(&src, Code::QF112),
        pairs(&[
            ("t", "bpmn:serviceTask"),
            ("e", "bpmn:endEvent"),
            ("dup", "bpmn:sequenceFlow")
        ])
    );
    let d = of(&src, Code::QF112)
        .into_iter()
        .find(|d| d.element.as_deref() == Some("dup"))
        .unwrap();
    let fixed = apply_edits(&src, &d.fixes[0].edits);
    assert!(!fixed.contains("dup"), "{fixed}");
    assert!(of(&fixed, Code::QF112).is_empty());
    assert!(
        analyze(&fixed).diagnostics.is_empty(),
        "{:#?}",
        analyze(&fixed).diagnostics
    );
}

/// Duplicates are found whether or not a flow's source is a node of the
/// process: two flows from a `sourceRef` that names no node compare by
/// their text (the loader's QF004 reports the dangling reference), and
/// with them in the process, two flows between nodes are still found.
#[test]
fn qf112_flows_whose_source_is_no_node_compare_by_their_text() {
    let src = plain(
        r#"    <bpmn:task id="a" name="A"/>
    <bpmn:task id="b" name="B"/>
    <bpmn:sequenceFlow id="g1" sourceRef="ghost" targetRef="a"/>
    <bpmn:sequenceFlow id="g2" sourceRef="ghost" targetRef="a"/>
    <bpmn:sequenceFlow id="n1" targetRef="b"/>
    <bpmn:sequenceFlow id="n2" targetRef="b"/>
    <bpmn:sequenceFlow id="ab1" sourceRef="a" targetRef="b"/>
    <bpmn:sequenceFlow id="ab2" sourceRef="a" targetRef="b"/>"#,
    );
    assert_eq!(
        hits(&src, Code::QF112),
        // `a`: duplicate incoming flows (from `ghost`), then duplicate
        // outgoing ones.
        pairs(&[
            ("a", "bpmn:task"),
            ("a", "bpmn:task"),
            ("b", "bpmn:task"),
            ("g2", "bpmn:sequenceFlow"),
            ("ab2", "bpmn:sequenceFlow"),
        ])
    );
}

/// Two flows between the same nodes are duplicates when their conditions
/// read the same to bpmnlint: the text as written around its value (so
/// `x` and ` x ` differ, `&gt;` and a CDATA `>` do not), an empty or blank
/// condition unlike none at all.
#[test]
fn qf112_conditions_compared_as_bpmnlint_compares_them() {
    let src = plain(
        r#"    <bpmn:exclusiveGateway id="g" name="G"/>
    <bpmn:task id="a" name="A"/>
    <bpmn:task id="b" name="B"/>
    <bpmn:task id="c" name="C"/>
    <bpmn:sequenceFlow id="x1" name="x" sourceRef="g" targetRef="a"><bpmn:conditionExpression>x</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="x2" name="x" sourceRef="g" targetRef="a"><bpmn:conditionExpression> x </bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="none" sourceRef="g" targetRef="b"/>
    <bpmn:sequenceFlow id="empty" name="e" sourceRef="g" targetRef="b"><bpmn:conditionExpression/></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="blank" name="b" sourceRef="g" targetRef="b"><bpmn:conditionExpression>  </bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="gt" name="gt" sourceRef="g" targetRef="c"><bpmn:conditionExpression>y &gt; 1</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="cdata" name="cd" sourceRef="g" targetRef="c"><bpmn:conditionExpression><![CDATA[y > 1]]></bpmn:conditionExpression></bpmn:sequenceFlow>"#,
    );
    assert_eq!(
        hits(&src, Code::QF112),
        pairs(&[
            ("g", "bpmn:exclusiveGateway"),
            ("b", "bpmn:task"),
            ("c", "bpmn:task"),
            ("blank", "bpmn:sequenceFlow"),
            ("cdata", "bpmn:sequenceFlow"),
        ])
    );
}

/// A `default` on a parallel gateway (or an event) is no default flow in
/// BPMN: bpmnlint ignores it, so the flow it names needs a condition like
/// the others out of a conditional fork. A name of JavaScript whitespace
/// (a byte-order mark) is blank.
#[test]
fn qf101_qf107_defaults_only_where_bpmn_has_them_and_javascript_blanks() {
    let src = plain(
        r#"    <bpmn:startEvent id="s" name="&#xFEFF;"/>
    <bpmn:parallelGateway id="pg" default="pd"/>
    <bpmn:task id="a" name="A"/>
    <bpmn:task id="b" name="B"/>
    <bpmn:sequenceFlow id="f" sourceRef="s" targetRef="pg"/>
    <bpmn:sequenceFlow id="pc" name="when" sourceRef="pg" targetRef="a"><bpmn:conditionExpression>w</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="pd" sourceRef="pg" targetRef="b"/>"#,
    );
    assert_eq!(
        hits(&src, Code::QF101),
        pairs(&[("pd", "bpmn:sequenceFlow")])
    );
    assert_eq!(hits(&src, Code::QF107), pairs(&[("s", "bpmn:startEvent")]));
}

#[test]
fn qf113_gateway_join_fork_and_qf123_superfluous_gateway_fix() {
    let src = qflow(
        r#"    <bpmn:startEvent id="s" name="S"/>
    <bpmn:serviceTask id="a" name="A" q:task="a"/>
    <bpmn:exclusiveGateway id="gw"/>
    <bpmn:serviceTask id="b" name="B" q:task="b">
      <bpmn:incoming>f3</bpmn:incoming>
    </bpmn:serviceTask>
    <bpmn:endEvent id="e" name="E"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="a"/>
    <bpmn:sequenceFlow id="f2" sourceRef="a" targetRef="gw"/>
    <bpmn:sequenceFlow id="f3" sourceRef="gw" targetRef="b"/>
    <bpmn:sequenceFlow id="f4" sourceRef="b" targetRef="e"/>"#,
    );
    assert_eq!(
        hits(&src, Code::QF123),
        pairs(&[("gw", "bpmn:exclusiveGateway")])
    );
    let d = &of(&src, Code::QF123)[0];
    assert_eq!(d.severity, Severity::Warning);
    let fixed = apply_edits(&src, &d.fixes[0].edits);
    assert!(
        fixed.contains(r#"<bpmn:sequenceFlow id="f2" sourceRef="a" targetRef="b"/>"#),
        "{fixed}"
    );
    assert!(
        fixed.contains("<bpmn:incoming>f2</bpmn:incoming>"),
        "{fixed}"
    );
    assert!(!fixed.contains("gw") && !fixed.contains("f3"), "{fixed}");
    assert!(
        analyze(&fixed).diagnostics.is_empty(),
        "{:#?}",
        analyze(&fixed).diagnostics
    );

    let join_fork = qflow(
        r#"    <bpmn:parallelGateway id="g"/>
    <bpmn:sequenceFlow id="i1" sourceRef="x" targetRef="g"/>
    <bpmn:sequenceFlow id="i2" sourceRef="y" targetRef="g"/>
    <bpmn:sequenceFlow id="o1" sourceRef="g" targetRef="x"/>
    <bpmn:sequenceFlow id="o2" sourceRef="g" targetRef="y"/>
    <bpmn:task id="x" name="X"/>
    <bpmn:task id="y" name="Y"/>"#,
    );
    let d = &of(&join_fork, Code::QF113)[0];
    assert_eq!(
        (d.element.as_deref(), text(&join_fork, d)),
        (Some("g"), "bpmn:parallelGateway")
    );
    assert_eq!(d.severity, Severity::Error);
}

#[test]
fn qf114_implicit_split() {
    let src = plain(
        r#"    <bpmn:task id="t" name="T" default="d"/>
    <bpmn:task id="a" name="A"/>
    <bpmn:sequenceFlow id="x" sourceRef="t" targetRef="a"/>
    <bpmn:sequenceFlow id="y" sourceRef="t" targetRef="a"><bpmn:conditionExpression>c</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="d" sourceRef="t" targetRef="a"/>"#,
    );
    // One unconditional non-default flow: no implicit split.
    assert!(of(&src, Code::QF114).is_empty());
    let split = src.replace(r#" default="d""#, "");
    assert_eq!(hits(&split, Code::QF114), pairs(&[("t", "bpmn:task")]));
}

#[test]
fn qf115_qf116_implicit_end_and_start_with_bpmnlints_exemptions() {
    let src = plain(
        r#"    <bpmn:startEvent id="s" name="S"/>
    <bpmn:task id="mid" name="M"/>
    <bpmn:task id="orphan" name="O"/>
    <bpmn:endEvent id="e" name="E"/>
    <bpmn:intermediateThrowEvent id="jump" name="J"><bpmn:linkEventDefinition name="L"/></bpmn:intermediateThrowEvent>
    <bpmn:intermediateCatchEvent id="land" name="L"><bpmn:linkEventDefinition name="L"/></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="mid"/>
    <bpmn:sequenceFlow id="f2" sourceRef="mid" targetRef="jump"/>
    <bpmn:sequenceFlow id="f3" sourceRef="land" targetRef="e"/>
    <bpmn:sequenceFlow id="f4" sourceRef="orphan" targetRef="e"/>
    <bpmn:task id="sink" name="Sink"/>
    <bpmn:sequenceFlow id="f5" sourceRef="s" targetRef="sink"/>"#,
    );
    assert_eq!(hits(&src, Code::QF115), pairs(&[("sink", "bpmn:task")]));
    assert_eq!(hits(&src, Code::QF116), pairs(&[("orphan", "bpmn:task")]));
}

/// Compensation handlers are neither implicit starts nor implicit ends, a
/// sub-process or call activity as much as a task; a compensation boundary
/// event is no implicit end when an association leads from it, wherever the
/// association is written (here in the sub-process, where modellers put it).
#[test]
fn qf115_qf116_compensation_handlers_and_boundaries() {
    let src = plain(
        r#"    <bpmn:startEvent id="s" name="S"/>
    <bpmn:subProcess id="outer" name="Outer">
      <bpmn:startEvent id="os" name="In"/>
      <bpmn:task id="book" name="Book"/>
      <bpmn:boundaryEvent id="undo" name="Undo" attachedToRef="book"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>
      <bpmn:subProcess id="cancel" name="Cancel" isForCompensation="true">
        <bpmn:startEvent id="cs" name="C"/>
        <bpmn:endEvent id="ce" name="C done"/>
        <bpmn:sequenceFlow id="c1" sourceRef="cs" targetRef="ce"/>
      </bpmn:subProcess>
      <bpmn:endEvent id="oe" name="Out"/>
      <bpmn:sequenceFlow id="o1" sourceRef="os" targetRef="book"/>
      <bpmn:sequenceFlow id="o2" sourceRef="book" targetRef="oe"/>
      <bpmn:association id="as" associationDirection="One" sourceRef="undo" targetRef="cancel"/>
    </bpmn:subProcess>
    <bpmn:task id="charge" name="Charge"/>
    <bpmn:boundaryEvent id="loose" name="Loose" attachedToRef="charge"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>
    <bpmn:callActivity id="refund" name="Refund" isForCompensation="true"/>
    <bpmn:endEvent id="e" name="E"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="outer"/>
    <bpmn:sequenceFlow id="f2" sourceRef="outer" targetRef="charge"/>
    <bpmn:sequenceFlow id="f3" sourceRef="charge" targetRef="e"/>"#,
    );
    // Only the compensation boundary event without an association.
    assert_eq!(
        hits(&src, Code::QF115),
        pairs(&[("loose", "bpmn:boundaryEvent")])
    );
    assert!(
        of(&src, Code::QF116).is_empty(),
        "{:#?}",
        of(&src, Code::QF116)
    );
}

#[test]
fn qf119_single_blank_start_event() {
    let src = qflow(
        r#"    <bpmn:startEvent id="a" name="A"/>
    <bpmn:startEvent id="b" name="B"/>
    <bpmn:startEvent id="m" name="M"><bpmn:messageEventDefinition/></bpmn:startEvent>"#,
    );
    let d = &of(&src, Code::QF119)[0];
    assert_eq!(
        (d.element.as_deref(), text(&src, d)),
        (Some("p"), "bpmn:process")
    );
    assert_eq!(d.severity, Severity::Error);
    let related: Vec<&str> = d
        .related
        .iter()
        .map(|r| &src[r.span.start()..r.span.end()])
        .collect();
    assert_eq!(related, ["bpmn:startEvent", "bpmn:startEvent"]);
    assert!(d
        .help
        .as_deref()
        .unwrap()
        .contains("first one in document order"));
}

#[test]
fn qf120_single_event_definition() {
    let src = plain(
        r#"    <bpmn:intermediateCatchEvent id="w" name="W"><bpmn:messageEventDefinition/><bpmn:signalEventDefinition/></bpmn:intermediateCatchEvent>"#,
    );
    assert_eq!(
        hits(&src, Code::QF120),
        pairs(&[("w", "bpmn:signalEventDefinition")])
    );
}

#[test]
fn qf124_superfluous_label() {
    let src = plain(
        r#"    <bpmn:exclusiveGateway id="g" name="G?" default="other"/>
    <bpmn:task id="a" name="A"/>
    <bpmn:task id="b" name="B"/>
    <bpmn:sequenceFlow id="fork1" name="one" sourceRef="g" targetRef="a"><bpmn:conditionExpression>x</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="other" name="otherwise" sourceRef="g" targetRef="b"/>
    <bpmn:sequenceFlow id="plain" name="then" sourceRef="a" targetRef="b"/>"#,
    );
    assert_eq!(
        hits(&src, Code::QF124),
        pairs(&[("plain", "bpmn:sequenceFlow")])
    );
}

#[test]
fn qf125_superfluous_termination() {
    let body = r#"    <bpmn:startEvent id="s" name="S"/>
    <bpmn:endEvent id="t" name="T"><bpmn:terminateEventDefinition/></bpmn:endEvent>
    <bpmn:sequenceFlow id="f" sourceRef="s" targetRef="t"/>"#;
    assert_eq!(
        hits(&plain(body), Code::QF125),
        pairs(&[("t", "bpmn:endEvent")])
    );
    // A second, plain end: termination stops the other path, so it matters.
    let two = plain(&format!(
        "{body}\n    <bpmn:endEvent id=\"e\" name=\"E\"/>\n    <bpmn:sequenceFlow id=\"g\" sourceRef=\"s\" targetRef=\"e\"/>"
    ));
    assert!(of(&two, Code::QF125).is_empty());
}

#[test]
fn a_bpmnlintrc_extending_recommended_gives_bpmnlints_severities_in_qflow_documents() {
    let src = qflow(
        r#"    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="t" name="T" q:task="t"/>
    <bpmn:endEvent id="e" name="E"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>"#,
    );
    let (settings, problems) = bpmnlintrc::parse(
        r#"{ "extends": "bpmnlint:recommended", "rules": { "no-bpmndi": "off" } }"#,
    );
    assert!(problems.is_empty());
    let a = analyze_with(&src, &settings);
    let label = a
        .diagnostics
        .iter()
        .find(|d| d.code == Code::QF107)
        .unwrap();
    assert_eq!(label.severity, Severity::Error);
    assert!(a.diagnostics.iter().all(|d| d.code != Code::QF109));
    // Turned off, it is gone.
    let (off, _) = bpmnlintrc::parse(
        r#"{ "extends": "bpmnlint:recommended", "rules": { "label-required": "off", "no-bpmndi": 0 } }"#,
    );
    assert!(analyze_with(&src, &off).diagnostics.is_empty());
    assert_eq!(
        Settings::default().severity(Code::QF107, qflow_engine::config::Profile::Plain),
        Some(Severity::Error)
    );
}

/// The findings of `code` under a `.bpmnlintrc`.
fn hits_with(src: &str, rc: &str, code: Code) -> Vec<(String, String)> {
    findings_with(src, rc)
        .iter()
        .filter(|d| d.code == code)
        .map(|d| {
            (
                d.element.clone().unwrap_or_default(),
                text(src, d).to_string(),
            )
        })
        .collect()
}

/// Every finding under a `.bpmnlintrc`, in the order reported.
fn findings_with(src: &str, rc: &str) -> Vec<Diagnostic> {
    let (settings, problems) = bpmnlintrc::parse(rc);
    assert!(problems.is_empty(), "{problems:?}");
    analyze_with(src, &settings).diagnostics
}

/// The elements `code` names under a `.bpmnlintrc`, in the order reported.
fn elements_with(src: &str, rc: &str, code: Code) -> Vec<String> {
    hits_with(src, rc, code)
        .into_iter()
        .map(|(element, _)| element)
        .collect()
}

const ALL: &str = r#"{ "extends": "bpmnlint:all" }"#;

#[test]
fn qf126_conditional_event_without_a_condition() {
    let body = r#"    <bpmn:startEvent id="s" name="S"><bpmn:conditionalEventDefinition><bpmn:condition>stock &lt; 10</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:startEvent>
    <bpmn:intermediateCatchEvent id="none" name="N"><bpmn:conditionalEventDefinition/></bpmn:intermediateCatchEvent>
    <bpmn:intermediateCatchEvent id="blank" name="B"><bpmn:conditionalEventDefinition id="cd">
      <bpmn:condition xsi:type="bpmn:tFormalExpression">
      </bpmn:condition></bpmn:conditionalEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:intermediateCatchEvent id="second" name="2"><bpmn:timerEventDefinition/><bpmn:conditionalEventDefinition/></bpmn:intermediateCatchEvent>
    <bpmn:task id="t" name="T"/>
    <bpmn:boundaryEvent id="onT" attachedToRef="t"><bpmn:conditionalEventDefinition><bpmn:condition/></bpmn:conditionalEventDefinition></bpmn:boundaryEvent>
    <bpmn:subProcess id="sub" name="Sub">
      <bpmn:intermediateCatchEvent id="deep" name="D"><bpmn:conditionalEventDefinition/></bpmn:intermediateCatchEvent>
    </bpmn:subProcess>"#;
    let xsi = |doc: String| {
        doc.replace(
            "id=\"d\"",
            "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" id=\"d\"",
        )
    };
    let executable = xsi(plain(body).replace("isExecutable=\"false\"", "isExecutable=\"true\""));
    let rule = r#"{ "rules": { "conditional-event": "error" } }"#;
    assert_eq!(
        hits_with(&executable, rule, Code::QF126),
        pairs(&[
            ("none", "bpmn:conditionalEventDefinition"),
            ("blank", "bpmn:conditionalEventDefinition"),
            ("second", "bpmn:conditionalEventDefinition"),
            ("onT", "bpmn:conditionalEventDefinition"),
            ("deep", "bpmn:conditionalEventDefinition"),
        ])
    );
    let (settings, _) = bpmnlintrc::parse(rule);
    let d = analyze_with(&executable, &settings).diagnostics;
    let blank = d
        .iter()
        .find(|d| d.code == Code::QF126 && d.element.as_deref() == Some("blank"))
        .unwrap();
    assert_eq!(
        blank.message,
        "conditional event <intermediateCatchEvent> `blank` has an empty condition"
    );
    assert_eq!(blank.severity, Severity::Error);
    // bpmnlint judges executable processes only.
    assert!(hits_with(&xsi(plain(body)), rule, Code::QF126).is_empty());
    // Off unless configured: under qflow's defaults, in a plain or a qflow
    // document, and under bpmnlint:recommended.
    assert!(of(&executable, Code::QF126).is_empty());
    assert!(of(&xsi(qflow(body)), Code::QF126).is_empty());
    assert!(hits_with(
        &executable,
        r#"{ "extends": "bpmnlint:recommended" }"#,
        Code::QF126
    )
    .is_empty());
    assert_eq!(hits_with(&executable, ALL, Code::QF126).len(), 5);
    // The same rule in a qflow document once configured.
    assert_eq!(hits_with(&xsi(qflow(body)), ALL, Code::QF126).len(), 5);
}

/// A condition's body as bpmnlint reads it (bpmn-moddle): text that is only
/// whitespace is dropped, a CDATA section is kept whatever it holds, so a
/// CDATA section of blanks is a body and an empty one is not; a character
/// reference to a blank is a blank.
#[test]
fn qf126_a_cdata_section_of_blanks_is_a_body_an_empty_one_is_not() {
    let event = |id: &str, condition: &str| {
        format!(
            "    <bpmn:intermediateCatchEvent id=\"{id}\" name=\"{id}\"><bpmn:conditionalEventDefinition><bpmn:condition>{condition}</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:intermediateCatchEvent>\n"
        )
    };
    let body = [
        event("blanks", "<![CDATA[ ]]>"),
        event("blanksAround", "\n  <![CDATA[\n]]>\n  "),
        event("text", "<![CDATA[x > 1]]>"),
        event("empty", "<![CDATA[]]>"),
        event("emptyAround", "  <![CDATA[]]>  "),
        event("spaceRef", "&#32;&#10;"),
        event("blank", "  "),
    ]
    .concat();
    let executable = plain(&body).replace("isExecutable=\"false\"", "isExecutable=\"true\"");
    assert_eq!(
        elements_with(&executable, ALL, Code::QF126),
        ["empty", "emptyAround", "spaceRef", "blank"]
    );
}

/// A diagram of `shapes` (id, element, bounds attributes, shape attributes)
/// over the process `body` of a plain document, with a collaboration.
fn drawn(body: &str, participants: &str, shapes: &[(&str, &str, &str)]) -> String {
    let shapes: String = shapes
        .iter()
        .map(|(el, bounds, extra)| {
            format!("    <bpmndi:BPMNShape id=\"{el}_di\" bpmnElement=\"{el}\"{extra}><dc:Bounds {bounds}/></bpmndi:BPMNShape>\n")
        })
        .collect();
    format!(
        r#"<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" id="d">
  <bpmn:collaboration id="c">{participants}</bpmn:collaboration>
  <bpmn:process id="p">
{body}
  </bpmn:process>
  <bpmndi:BPMNDiagram id="dia"><bpmndi:BPMNPlane id="pl" bpmnElement="c">
{shapes}  </bpmndi:BPMNPlane></bpmndi:BPMNDiagram>
</bpmn:definitions>"#
    )
}

/// [`drawn`] with one pool, `pool` (0,0 1000×300), drawing the process.
fn pooled(body: &str, shapes: &[(&str, &str, &str)]) -> String {
    let pool = [("pool", r#"x="0" y="0" width="1000" height="300""#, "")];
    drawn(
        body,
        r#"<bpmn:participant id="pool" name="Pool" processRef="p"/>"#,
        &[&pool[..], shapes].concat(),
    )
}

/// Bounds are read as bpmnlint reads them (JavaScript's `parseFloat`):
/// `100px` is 100 and ` 80` is 80, so those shapes are of standard size and
/// placed where their numbers say; `px100` is no number: that shape has no
/// place (outside its pool) and no standard size.
#[test]
fn qf118_and_qf127_read_bounds_as_javascript_numbers() {
    let body = r#"    <bpmn:task id="px" name="Px"/>
    <bpmn:task id="lead" name="Lead"/>
    <bpmn:task id="bad" name="Bad"/>
    <bpmn:task id="under" name="Under"/>"#;
    let src = pooled(
        body,
        &[
            ("px", r#"x="10px" y="10" width="100px" height="80.0px""#, ""),
            ("lead", r#"x=" 300" y="10" width=" 100" height="80e0""#, ""),
            ("bad", r#"x="px100" y="10" width="100" height="80""#, ""),
            ("under", r#"x="50" y="50px;" width="100" height="80""#, ""),
        ],
    );
    let rc = r#"{ "rules": { "standard-size": "error", "no-overlapping-elements": "error" } }"#;
    let found: Vec<(String, Code, bool)> = findings_with(&src, rc)
        .iter()
        .map(|d| {
            let element = d.element.clone().unwrap_or_default();
            (element, d.code, d.message.contains("overlaps"))
        })
        .collect();
    // What bpmnlint 11.15 reports on the same document: `px` (at 10,10)
    // and `under` (at 50,50) overlap, `bad` lies outside the pool; every
    // size is standard.
    assert_eq!(
        found,
        [
            ("px".to_string(), Code::QF118, true),
            ("bad".to_string(), Code::QF118, false),
            ("under".to_string(), Code::QF118, true),
        ]
    );
}

/// Bounds without `x` or `y` place nothing (QF118 leaves the shape out, as
/// bpmnlint does) but still have a size (QF127 judges it, as bpmnlint does);
/// bounds without a width or height are not judged at all.
#[test]
fn qf127_judges_the_size_of_bounds_without_a_place() {
    let body = r#"    <bpmn:task id="noX" name="NoX"/>
    <bpmn:task id="noY" name="NoY"/>
    <bpmn:task id="noXok" name="NoXok"/>
    <bpmn:task id="noW" name="NoW"/>
    <bpmn:task id="near" name="Near"/>"#;
    let src = pooled(
        body,
        &[
            ("noX", r#"y="10" width="120" height="80""#, ""),
            ("noY", r#"x="200" width="100" height="90""#, ""),
            ("noXok", r#"y="10" width="100" height="80""#, ""),
            ("noW", r#"x="400" y="10" height="80""#, ""),
            ("near", r#"x="200" y="10" width="100" height="80""#, ""),
        ],
    );
    let rc = r#"{ "rules": { "standard-size": "error", "no-overlapping-elements": "error" } }"#;
    let found: Vec<(String, Code)> = findings_with(&src, rc)
        .iter()
        .map(|d| (d.element.clone().unwrap_or_default(), d.code))
        .collect();
    // What bpmnlint 11.15 reports on the same document.
    assert_eq!(
        found,
        [
            ("noX".to_string(), Code::QF127),
            ("noY".to_string(), Code::QF127),
        ]
    );
}

/// Sizes are compared as bpmnlint compares them, in double precision: a
/// height a modeller's tool wrote as 35.999999999999886 (the interchange
/// suite's C.6.0 has one) is not the standard 36, nor is 100.00001 the
/// standard 100.
#[test]
fn qf127_compares_sizes_in_double_precision() {
    let body = r#"    <bpmn:startEvent id="s" name="S"/>
    <bpmn:endEvent id="almost" name="Almost"/>
    <bpmn:task id="wider" name="Wider"/>"#;
    let src = pooled(
        body,
        &[
            ("s", r#"x="10" y="10" width="36" height="36.0""#, ""),
            (
                "almost",
                r#"x="100" y="10" width="36" height="35.999999999999886""#,
                "",
            ),
            (
                "wider",
                r#"x="200" y="10" width="100.00001" height="80""#,
                "",
            ),
        ],
    );
    assert_eq!(
        elements_with(
            &src,
            r#"{ "rules": { "standard-size": "error" } }"#,
            Code::QF127
        ),
        ["almost", "wider"]
    );
}

/// Where an element is drawn twice, the last drawing counts, as in
/// bpmnlint, even when it has no bounds: `b` drawn over `a` and then again
/// without bounds is compared with nothing.
#[test]
fn qf118_the_last_drawing_counts_even_without_bounds() {
    let body = r#"    <bpmn:task id="a" name="A"/>
    <bpmn:task id="b" name="B"/>
    <bpmn:task id="c" name="C"/>
    <bpmn:task id="d" name="D"/>"#;
    let src = pooled(
        body,
        &[
            ("a", r#"x="10" y="10" width="100" height="80""#, ""),
            ("b", r#"x="50" y="50" width="100" height="80""#, ""),
            ("c", r#"x="400" y="10" width="100" height="80""#, ""),
            ("d", r#"x="420" y="20" width="100" height="80""#, ""),
        ],
    )
    .replace(
        "<bpmndi:BPMNShape id=\"c_di\"",
        "<bpmndi:BPMNShape id=\"b_again\" bpmnElement=\"b\"></bpmndi:BPMNShape>\n    <bpmndi:BPMNShape id=\"c_di\"",
    );
    assert!(src.contains("b_again"));
    let rc = r#"{ "rules": { "no-overlapping-elements": "error" } }"#;
    // bpmnlint 11.15 on the same document: `c` and `d`.
    assert_eq!(elements_with(&src, rc, Code::QF118), ["c", "d"]);
}

#[test]
fn qf127_standard_size() {
    let body = r#"    <bpmn:task id="t" name="T"/>
    <bpmn:userTask id="wide" name="W"/>
    <bpmn:callActivity id="call" name="C"/>
    <bpmn:subProcess id="collapsed" name="S"/>
    <bpmn:subProcess id="open" name="O"/>
    <bpmn:exclusiveGateway id="g"/>
    <bpmn:startEvent id="s"/>
    <bpmn:boundaryEvent id="b" attachedToRef="t"/>
    <bpmn:dataObjectReference id="doc" dataObjectRef="obj"/>
    <bpmn:dataObject id="obj"/>
    <bpmn:dataStoreReference id="db"/>
    <bpmn:textAnnotation id="note"/>
    <bpmn:laneSet id="ls"><bpmn:lane id="lane"/></bpmn:laneSet>"#;
    let participants = r#"<bpmn:participant id="pool" processRef="p"/><bpmn:participant id="empty"/><bpmn:participant id="upright"/><bpmn:participant id="fine"/>"#;
    let src = drawn(
        body,
        participants,
        &[
            ("pool", r#"x="0" y="0" width="900" height="400""#, ""),
            ("empty", r#"x="0" y="500" width="900" height="100""#, ""),
            (
                "upright",
                r#"x="0" y="700" width="100" height="60""#,
                r#" isHorizontal="false""#,
            ),
            ("fine", r#"x="0" y="800" width="300" height="60""#, ""),
            ("lane", r#"x="30" y="0" width="870" height="400""#, ""),
            ("t", r#"x="100" y="100" width="100" height="80""#, ""),
            ("wide", r#"x="300" y="100" width="120" height="80""#, ""),
            ("call", r#"x="500" y="100" width="100" height="81""#, ""),
            (
                "collapsed",
                r#"x="100" y="200" width="350" height="200""#,
                r#" isExpanded="false""#,
            ),
            (
                "open",
                r#"x="500" y="200" width="350" height="200""#,
                r#" isExpanded="true""#,
            ),
            ("g", r#"x="700" y="100" width="50" height="50""#, ""),
            ("s", r#"x="NaN" y="100" width="36" height="36""#, ""),
            ("b", r#"x="150" y="160" width="NaN" height="36""#, ""),
            ("doc", r#"x="800" y="100" width="36" height="50""#, ""),
            ("db", r#"x="850" y="100" width="36" height="50""#, ""),
            ("note", r#"x="850" y="300" width="5" height="5""#, ""),
        ],
    );
    let hits = hits_with(
        &src,
        r#"{ "rules": { "standard-size": "warn" } }"#,
        Code::QF127,
    );
    assert_eq!(
        hits,
        pairs(&[
            ("empty", "bpmndi:BPMNShape"),
            ("upright", "bpmndi:BPMNShape"),
            ("wide", "bpmndi:BPMNShape"),
            ("call", "bpmndi:BPMNShape"),
            ("collapsed", "bpmndi:BPMNShape"),
            ("b", "bpmndi:BPMNShape"),
            ("db", "bpmndi:BPMNShape"),
        ])
    );
    let (settings, _) = bpmnlintrc::parse(r#"{ "rules": { "standard-size": "warn" } }"#);
    let d = analyze_with(&src, &settings).diagnostics;
    let msg = |id: &str| {
        let d = d
            .iter()
            .find(|d| d.code == Code::QF127 && d.element.as_deref() == Some(id))
            .unwrap();
        assert_eq!(d.severity, Severity::Warning);
        let r = d.related[0].span;
        (d.message.clone(), src[r.start()..r.end()].to_string())
    };
    assert_eq!(
        msg("wide"),
        (
            "<userTask> `wide` is 120x80; the standard size is 100x80".into(),
            "bpmn:userTask".into()
        )
    );
    assert_eq!(
        msg("empty").0,
        "<participant> `empty` is 100 high; the standard height is 60"
    );
    assert_eq!(
        msg("upright").0,
        "<participant> `upright` is 100 wide; the standard width is 60"
    );
    // Off unless configured; bpmnlint:all turns it on as an error.
    assert!(of(&src, Code::QF127).is_empty());
    let (all, _) = bpmnlintrc::parse(ALL);
    let under_all: Vec<Severity> = analyze_with(&src, &all)
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::QF127)
        .map(|d| d.severity)
        .collect();
    assert_eq!(under_all, [Severity::Error; 7]);
    // A team's own sizes: tasks 120 wide, gateways checked by width only,
    // data stores not at all.
    let team = r#"{ "rules": { "standard-size": ["warn", {
      "bpmn:Task": { "width": 120, "height": 80 },
      "bpmn:Gateway": { "width": 40 },
      "bpmn:DataStoreReference": false } ] } }"#;
    let mut got = hits_with(&src, team, Code::QF127);
    got.sort();
    let mut want = pairs(&[
        ("empty", "bpmndi:BPMNShape"),
        ("upright", "bpmndi:BPMNShape"),
        ("t", "bpmndi:BPMNShape"),
        ("call", "bpmndi:BPMNShape"),
        ("collapsed", "bpmndi:BPMNShape"),
        ("g", "bpmndi:BPMNShape"),
        ("b", "bpmndi:BPMNShape"),
    ]);
    want.sort();
    assert_eq!(got, want);
}

/// A `BPMNPlane` draws what is on it, not its own element: a sub-process
/// drawn only as the plane of a diagram of its own is missing where it
/// stands; drawn there too, it is not.
#[test]
fn qf109_a_plane_does_not_draw_its_own_element() {
    let doc = |shape: &str| {
        format!(
            r#"<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" id="d">
  <bpmn:process id="p">
    <bpmn:subProcess id="sub" name="Sub">
      <bpmn:task id="t" name="T"/>
    </bpmn:subProcess>
  </bpmn:process>
  <bpmndi:BPMNDiagram id="main"><bpmndi:BPMNPlane id="mainPlane" bpmnElement="p">{shape}</bpmndi:BPMNPlane></bpmndi:BPMNDiagram>
  <bpmndi:BPMNDiagram id="inner"><bpmndi:BPMNPlane id="subPlane" bpmnElement="sub">
    <bpmndi:BPMNShape id="t_di" bpmnElement="t"><dc:Bounds x="0" y="0" width="100" height="80"/></bpmndi:BPMNShape>
  </bpmndi:BPMNPlane></bpmndi:BPMNDiagram>
</bpmn:definitions>"#
        )
    };
    let plane_only = doc("");
    assert_eq!(
        hits(&plane_only, Code::QF109),
        pairs(&[("sub", "bpmn:subProcess")])
    );
    let drawn = doc(
        r#"<bpmndi:BPMNShape id="sub_di" bpmnElement="sub" isExpanded="false"><dc:Bounds x="0" y="0" width="100" height="80"/></bpmndi:BPMNShape>"#,
    );
    assert!(of(&drawn, Code::QF109).is_empty());
}

/// QF109 asks its question of BPMN elements, as bpmnlint does: a drawing
/// whose own id repeats an undrawn task's (a duplicate id, QF003) is not
/// itself "missing from the diagram"; the undrawn task is. A declaration
/// that is no node but shares its id with one (a message here) is visual
/// as the node is.
#[test]
fn qf109_asks_of_bpmn_elements_not_of_drawings_with_a_nodes_id() {
    let src = format!(
        r#"<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" id="d">
  <bpmn:message id="b" name="M"/>
  <bpmn:process id="p">
    <bpmn:task id="a" name="A"/>
    <bpmn:task id="b" name="B"/>
  </bpmn:process>
  <bpmndi:BPMNDiagram id="main"><bpmndi:BPMNPlane id="plane" bpmnElement="p">
    <bpmndi:BPMNShape id="a" bpmnElement="b"><dc:Bounds x="0" y="0" width="100" height="80"/></bpmndi:BPMNShape>
  </bpmndi:BPMNPlane></bpmndi:BPMNDiagram>
</bpmn:definitions>"#
    );
    assert_eq!(hits(&src, Code::QF109), pairs(&[("a", "bpmn:task")]));
    let codes: Vec<Code> = analyze(&src).diagnostics.iter().map(|d| d.code).collect();
    assert!(codes.contains(&Code::QF003), "{codes:?}");
}
