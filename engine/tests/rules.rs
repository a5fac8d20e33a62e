//! Every load-time rule, as a user meets it: a model in, the diagnostic's code,
//! severity and the exact text its primary span covers out; fixes applied to
//! the text make the diagnostic go away; prefixes and scoping do not change
//! the verdicts.

use qflow_engine::diagnostic::Fix;
use qflow_engine::rules::apply_edits;
use qflow_engine::{analyze, Code, Diagnostic, Severity};

const BPMN: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";

/// A qflow document with one executable process around `body`.
fn model(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:q="urn:qflow:bpmn:1" id="defs">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="start"/>
{body}
    <bpmn:endEvent id="end"/>
  </bpmn:process>
</bpmn:definitions>
"#
    )
}

/// start → `task` → end, with `task` written by the caller.
fn line_model(task_id: &str, task: &str) -> String {
    model(&format!(
        "{task}\n    <bpmn:sequenceFlow id=\"f1\" sourceRef=\"start\" targetRef=\"{task_id}\"/>\n    <bpmn:sequenceFlow id=\"f2\" sourceRef=\"{task_id}\" targetRef=\"end\"/>"
    ))
}

fn registered(ext: &str) -> String {
    line_model(
        "charge",
        &format!(
            "    <bpmn:serviceTask id=\"charge\" q:task=\"payments.charge\">\n      <bpmn:extensionElements>\n        {ext}\n      </bpmn:extensionElements>\n    </bpmn:serviceTask>"
        ),
    )
}

fn call(ext: &str) -> String {
    line_model(
        "authorize",
        &format!(
            "    <bpmn:serviceTask id=\"authorize\" q:channel=\"bank\" q:operation=\"authorize\">\n      <bpmn:extensionElements>\n        {ext}\n      </bpmn:extensionElements>\n    </bpmn:serviceTask>"
        ),
    )
}

fn diagnostics(src: &str) -> Vec<Diagnostic> {
    analyze(src).diagnostics
}

fn text<'a>(src: &'a str, d: &Diagnostic) -> &'a str {
    &src[d.primary.span.start()..d.primary.span.end()]
}

/// The diagnostics of one code.
fn of(src: &str, code: Code) -> Vec<Diagnostic> {
    diagnostics(src)
        .into_iter()
        .filter(|d| d.code == code)
        .collect()
}

/// Exactly one diagnostic of `code`, at exactly `span_text`, with the code's severity.
fn one(src: &str, code: Code, span_text: &str) -> Diagnostic {
    let found = of(src, code);
    assert_eq!(
        found.len(),
        1,
        "expected one {code}, got {:#?}\nall: {:#?}",
        found,
        diagnostics(src)
    );
    let d = found.into_iter().next().unwrap();
    assert_eq!(text(src, &d), span_text, "{code} span: {d:#?}");
    assert_eq!(d.severity, code.severity());
    assert!(!d.message.is_empty() && d.help.is_some(), "{d:#?}");
    d
}

fn errors(src: &str) -> Vec<Diagnostic> {
    diagnostics(src)
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .collect()
}

/// Apply a fix and re-check: the code is gone and no error appeared.
fn fixed(src: &str, fix: &Fix, code: Code) -> String {
    let after = apply_edits(src, &fix.edits);
    assert!(
        of(&after, code).is_empty(),
        "{code} still there after `{}`:\n{after}",
        fix.title
    );
    after
}

#[test]
fn qf001_points_at_the_first_fault() {
    let src = "<bpmn:definitions xmlns:bpmn=\"x\">\n  <a>\n</bpmn:definitions>";
    let d = &diagnostics(src)[0];
    assert_eq!(d.code, Code::QF001);
    assert!(
        src[d.primary.span.start()..].starts_with("</bpmn:definitions>"),
        "{d:?}"
    );
}

#[test]
fn qf002_names_the_root() {
    let src = r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/2010524/MODEL"/>"#;
    one(src, Code::QF002, "bpmn:definitions");
}

#[test]
fn qf003_duplicate_id_points_at_the_second_with_the_first_related() {
    let src = line_model(
        "charge",
        r#"    <bpmn:serviceTask id="charge" q:task="a"/>
    <bpmn:serviceTask id="charge" q:task="b"/>"#,
    );
    let d = one(&src, Code::QF003, "charge");
    assert!(d.primary.span.start() > d.related[0].span.start());
    assert_eq!(
        &src[d.related[0].span.start()..d.related[0].span.end()],
        "charge"
    );
}

#[test]
fn qf004_dangling_reference_offers_the_close_id() {
    let src = model(
        r#"    <bpmn:serviceTask id="charge" q:task="a"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="chrage"/>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="end"/>"#,
    );
    let d = one(&src, Code::QF004, "chrage");
    fixed(&src, &d.fixes[0], Code::QF004);
}

#[test]
fn qf005_executable_process_without_start() {
    let src = format!(
        r#"<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:q="urn:qflow:bpmn:1">
  <bpmn:process id="p" isExecutable="true"><bpmn:endEvent id="end"/></bpmn:process>
</bpmn:definitions>"#
    );
    one(&src, Code::QF005, "bpmn:process");
}

#[test]
fn qf006_unknown_element_fix_renames_both_tags_keeping_the_prefix() {
    let src = registered(r#"<q:retyr maxAttempts="3" backoff="PT1M" jitter="full"></q:retyr>"#);
    let d = one(&src, Code::QF006, "q:retyr");
    assert!(d
        .help
        .as_deref()
        .unwrap()
        .contains("did you mean <q:retry>"));
    let after = fixed(&src, &d.fixes[0], Code::QF006);
    assert!(
        after.contains("<q:retry maxAttempts=\"3\" backoff=\"PT1M\" jitter=\"full\"></q:retry>")
    );
    assert!(errors(&after).is_empty(), "{:#?}", errors(&after));
}

#[test]
fn qf006_unknown_attribute_on_a_q_element_and_on_a_task() {
    let src = registered(r#"<q:retry maxAttemps="3" maxElapsed="PT1H" jitter="full"/>"#);
    let d = one(&src, Code::QF006, "maxAttemps");
    fixed(&src, &d.fixes[0], Code::QF006);

    let src = line_model(
        "charge",
        r#"    <bpmn:serviceTask id="charge" q:taks="payments.charge" q:task="x"/>"#,
    );
    let d = one(&src, Code::QF006, "q:taks");
    assert_eq!(d.fixes[0].edits[0].new_text, "q:task");
}

#[test]
fn qf006_applies_outside_executable_processes_too() {
    let src = format!(
        r#"<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:q="urn:qflow:bpmn:1">
  <bpmn:process id="p" isExecutable="false">
    <bpmn:serviceTask id="t" q:chanel="bank"/>
  </bpmn:process>
</bpmn:definitions>"#
    );
    one(&src, Code::QF006, "q:chanel");
}

#[test]
fn qf007_neither_and_both() {
    let src = line_model("charge", r#"    <bpmn:serviceTask id="charge" name="x"/>"#);
    one(&src, Code::QF007, "bpmn:serviceTask");
    let src = line_model(
        "charge",
        r#"    <bpmn:serviceTask id="charge" q:task="a" q:channel="bank"/>"#,
    );
    let d = one(&src, Code::QF007, r#"q:channel="bank""#);
    assert_eq!(
        &src[d.related[0].span.start()..d.related[0].span.end()],
        r#"q:task="a""#
    );
}

#[test]
fn qf008_every_duration_attribute() {
    let src = registered(r#"<q:retry maxAttempts="3" backoff="PT1M P1H" jitter="full"/>"#);
    let d = one(&src, Code::QF008, "P1H");
    assert!(d.primary.message.contains("`T` is missing"), "{d:?}");
    one(
        &call(
            r#"<q:timeout duration="PT0S"/><q:retry maxAttempts="2" backoff="PT1S" jitter="full"/>"#,
        ),
        Code::QF008,
        "PT0S",
    );
    one(
        &registered(r#"<q:retry maxElapsed="30" jitter="full"/>"#),
        Code::QF008,
        "30",
    );
    one(
        &registered(r#"<q:retry maxAttempts="2" initial="PT0S" jitter="full"/>"#),
        Code::QF008,
        "PT0S",
    );
    let timer = model(
        r#"    <bpmn:intermediateCatchEvent id="wait">
      <bpmn:timerEventDefinition><bpmn:timeDuration> PT0S </bpmn:timeDuration></bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait"/>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="end"/>"#,
    );
    one(&timer, Code::QF008, "PT0S");
    // A zero backoff entry is fine on a registered task.
    assert!(of(
        &registered(r#"<q:retry maxAttempts="3" backoff="PT0S PT1M" jitter="full"/>"#),
        Code::QF008
    )
    .is_empty());
    let cfg = format!(
        r#"<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:q="urn:qflow:bpmn:1">
  <q:channelConfig channel="bank" maxDeliveries="0" deliveryInterval="2s"/>
</bpmn:definitions>"#
    );
    one(&cfg, Code::QF008, "2s");
    one(&cfg, Code::QF013, "0");
}

#[test]
fn qf010_retry_on_a_gateway_or_a_flow() {
    let src = model(
        r#"    <bpmn:exclusiveGateway id="g">
      <bpmn:extensionElements><q:retry maxAttempts="2" jitter="full"/></bpmn:extensionElements>
    </bpmn:exclusiveGateway>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="g"/>
    <bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="end">
      <bpmn:extensionElements><q:retry maxAttempts="2" jitter="full"/></bpmn:extensionElements>
    </bpmn:sequenceFlow>"#,
    );
    let found = of(&src, Code::QF010);
    assert_eq!(found.len(), 2, "{found:#?}");
    for d in &found {
        assert_eq!(text(&src, d), "q:retry");
    }
    assert!(
        found[1].message.contains("<sequenceFlow>"),
        "{:?}",
        found[1]
    );
}

#[test]
fn qf011_second_retry() {
    let src = registered(
        r#"<q:retry maxAttempts="3" backoff="PT1M" jitter="full"/>
        <q:retry maxAttempts="6" backoff="PT5M" jitter="full"/>"#,
    );
    let d = one(&src, Code::QF011, "q:retry");
    assert!(d.primary.span.start() > d.related[0].span.start());
    let after = fixed(&src, &d.fixes[0], Code::QF011);
    assert!(errors(&after).is_empty());
}

#[test]
fn qf012_unbounded_and_its_fix() {
    let src = registered(r#"<q:retry backoff="PT1M" jitter="full"/>"#);
    let d = one(&src, Code::QF012, "q:retry");
    assert!(d.help.as_deref().unwrap().contains("72,000,000"));
    let after = fixed(&src, &d.fixes[0], Code::QF012);
    assert!(after.contains(r#"<q:retry maxAttempts="3" backoff="PT1M""#));
    assert!(errors(&after).is_empty());
    // Immediate retries bounded only by time.
    one(
        &registered(r#"<q:retry maxElapsed="PT1H" jitter="full"/>"#),
        Code::QF012,
        r#"maxElapsed="PT1H""#,
    );
}

#[test]
fn qf013_max_attempts() {
    for bad in ["0", "-1", "2.5", "three", "99999999999"] {
        let src = registered(&format!(
            r#"<q:retry maxAttempts="{bad}" backoff="PT1M" jitter="full"/>"#
        ));
        one(&src, Code::QF013, bad);
    }
}

#[test]
fn qf014_zero_backoff_on_a_call() {
    let src = call(
        r#"<q:timeout duration="PT30S"/><q:retry maxAttempts="3" backoff="PT0S PT1M" jitter="full"/>"#,
    );
    one(&src, Code::QF014, "PT0S");
    let src = call(r#"<q:timeout duration="PT30S"/><q:retry maxAttempts="3" jitter="full"/>"#);
    one(&src, Code::QF014, "q:retry");
}

#[test]
fn qf015_malformed_backoff() {
    let src = registered(
        r#"<q:retry maxAttempts="4" backoff="PT1M PT5M" initial="PT1M" factor="5" jitter="full"/>"#,
    );
    let d = one(&src, Code::QF015, r#"backoff="PT1M PT5M""#);
    assert_eq!(
        &src[d.related[0].span.start()..d.related[0].span.end()],
        r#"initial="PT1M""#
    );
    one(
        &registered(r#"<q:retry maxAttempts="4" initial="PT1M" factor="0.5" jitter="full"/>"#),
        Code::QF015,
        "0.5",
    );
    one(
        &registered(r#"<q:retry maxAttempts="4" factor="2" jitter="full"/>"#),
        Code::QF015,
        r#"factor="2""#,
    );
    let d = one(
        &registered(r#"<q:retry maxAttempts="4" backoff="PT1M" jitter="fulll"/>"#),
        Code::QF015,
        "fulll",
    );
    assert!(d.help.unwrap().contains("did you mean `full`"));
}

#[test]
fn qf020_fix_inserts_a_timeout_in_every_shape() {
    // Self-closing task.
    let a = line_model(
        "authorize",
        r#"    <bpmn:serviceTask id="authorize" q:channel="bank"/>"#,
    );
    // Task with content but no extensionElements.
    let b = line_model(
        "authorize",
        "    <bpmn:serviceTask id=\"authorize\" q:channel=\"bank\">\n      <bpmn:incoming>f1</bpmn:incoming>\n    </bpmn:serviceTask>",
    );
    // Task with extensionElements already (holding a retry).
    let c = call(r#"<q:retry maxAttempts="2" backoff="PT1S" jitter="full"/>"#);
    // Empty self-closing extensionElements.
    let e = line_model(
        "authorize",
        "    <bpmn:serviceTask id=\"authorize\" q:channel=\"bank\">\n      <bpmn:extensionElements/>\n    </bpmn:serviceTask>",
    );
    for src in [a, b, c, e] {
        let d = one(&src, Code::QF020, "bpmn:serviceTask");
        let after = fixed(&src, &d.fixes[0], Code::QF020);
        assert!(
            after.contains(r#"<q:timeout duration="PT30S"/>"#),
            "{after}"
        );
        assert!(errors(&after).is_empty(), "{after}\n{:#?}", errors(&after));
    }
}

#[test]
fn qf020_fix_keeps_the_authors_prefixes() {
    let src = format!(
        r#"<definitions xmlns="{BPMN}" xmlns:x="urn:qflow:bpmn:1">
  <process id="p" isExecutable="true">
    <startEvent id="start"/>
    <serviceTask id="authorize" x:channel="bank"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="authorize"/>
  </process>
</definitions>"#
    );
    let d = one(&src, Code::QF020, "serviceTask");
    let after = fixed(&src, &d.fixes[0], Code::QF020);
    assert!(after.contains("<extensionElements>"), "{after}");
    assert!(
        after.contains(r#"<x:timeout duration="PT30S"/>"#),
        "{after}"
    );
    assert!(after.contains("</serviceTask>"), "{after}");
    assert!(errors(&after).is_empty(), "{after}");
}

#[test]
fn qf021_timeout_and_timer_boundary() {
    let src = model(
        r#"    <bpmn:serviceTask id="authorize" q:channel="bank">
      <bpmn:extensionElements><q:timeout duration="PT30S"/></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:boundaryEvent id="slow" attachedToRef="authorize">
      <bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition>
    </bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="authorize"/>
    <bpmn:sequenceFlow id="f2" sourceRef="authorize" targetRef="end"/>"#,
    );
    let d = one(&src, Code::QF021, "q:timeout");
    assert_eq!(
        &src[d.related[0].span.start()..d.related[0].span.end()],
        "bpmn:boundaryEvent"
    );
}

const QF022: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
                  xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI"
                  xmlns:dc="http://www.omg.org/spec/DD/20100524/DC"
                  xmlns:q="urn:qflow:bpmn:1">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:serviceTask id="authorize" q:channel="bank">
      <bpmn:extensionElements>
        <q:retry maxAttempts="3" backoff="PT10S" jitter="full"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:boundaryEvent id="too-slow" attachedToRef="authorize">
      <bpmn:outgoing>f3</bpmn:outgoing>
      <bpmn:timerEventDefinition>
        <bpmn:timeDuration>PT45S</bpmn:timeDuration>
      </bpmn:timerEventDefinition>
    </bpmn:boundaryEvent>
    <bpmn:endEvent id="end"/>
    <bpmn:endEvent id="timed-out">
      <bpmn:incoming>f3</bpmn:incoming>
    </bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="authorize"/>
    <bpmn:sequenceFlow id="f2" sourceRef="authorize" targetRef="end"/>
    <bpmn:sequenceFlow id="f3" sourceRef="too-slow" targetRef="timed-out"/>
  </bpmn:process>
  <bpmndi:BPMNDiagram id="d">
    <bpmndi:BPMNPlane id="pl" bpmnElement="p">
      <bpmndi:BPMNShape id="s1" bpmnElement="too-slow">
        <dc:Bounds x="1" y="2" width="36" height="36"/>
      </bpmndi:BPMNShape>
      <bpmndi:BPMNEdge id="e3" bpmnElement="f3"/>
    </bpmndi:BPMNPlane>
  </bpmndi:BPMNDiagram>
</bpmn:definitions>
"#;

#[test]
fn qf022_points_at_the_retry_and_names_the_routed_boundary() {
    let d = one(QF022, Code::QF022, "q:retry");
    assert_eq!(d.related.len(), 1);
    let r = &d.related[0];
    assert_eq!(&QF022[r.span.start()..r.span.end()], "bpmn:boundaryEvent");
    assert!(r.message.contains("too-slow"), "{r:?}");
    assert!(d.message.contains("too-slow") && d.message.contains("authorize"));
    // An unrouted timer boundary is not QF022 (it is QF021's business if doubled).
    let unrouted = QF022
        .replace("<bpmn:outgoing>f3</bpmn:outgoing>", "")
        .replace(
            r#"<bpmn:sequenceFlow id="f3" sourceRef="too-slow" targetRef="timed-out"/>"#,
            "",
        );
    assert!(of(&unrouted, Code::QF022).is_empty());
}

#[test]
fn qf022_fix_one_removes_the_retry() {
    let d = one(QF022, Code::QF022, "q:retry");
    assert_eq!(d.fixes.len(), 2);
    let after = fixed(QF022, &d.fixes[0], Code::QF022);
    assert!(!after.contains("q:retry"));
    assert!(errors(&after).is_empty(), "{after}");
}

#[test]
fn qf022_fix_two_replaces_the_boundary_by_a_routeless_timeout() {
    let d = one(QF022, Code::QF022, "q:retry");
    let after = fixed(QF022, &d.fixes[1], Code::QF022);
    assert!(
        after.contains(r#"<q:timeout duration="PT45S"/>"#),
        "{after}"
    );
    assert!(
        !after.contains("too-slow"),
        "boundary, its shape and flow ref gone:\n{after}"
    );
    assert!(
        !after.contains(r#"id="f3""#) && !after.contains(">f3<"),
        "{after}"
    );
    assert!(!after.contains(r#"bpmnElement="f3""#), "{after}");
    assert!(errors(&after).is_empty(), "{after}\n{:#?}", errors(&after));
    // The XML is still tidy: no blank lines left behind.
    assert!(!after.contains("\n\n"), "{after}");
}

#[test]
fn qf030_unknown_and_misplaced_engine_codes() {
    let src = call(
        r#"<q:timeout duration="PT30S"/><q:retry maxAttempts="3" backoff="PT10S" jitter="full" nonRetryableCodes="q.timeot"/>"#,
    );
    let d = one(&src, Code::QF030, "q.timeot");
    fixed(&src, &d.fixes[0], Code::QF030);
    let src = registered(
        r#"<q:retry maxAttempts="3" backoff="PT10S" jitter="full" nonRetryableCodes="INVALID q.timeout"/>"#,
    );
    let d = one(&src, Code::QF030, "q.timeout");
    assert!(d.message.contains("only on channel calls"));
    // The handler contract's codes are a registered task's own; not a call's.
    assert!(of(
        &registered(
            r#"<q:retry maxAttempts="3" backoff="PT10S" jitter="full" nonRetryableCodes="q.handler.exit q.handler.http-404 q.handler.panic"/>"#
        ),
        Code::QF030
    )
    .is_empty());
    one(
        &registered(
            r#"<q:retry maxAttempts="3" backoff="PT10S" jitter="full" nonRetryableCodes="q.handler.exits"/>"#,
        ),
        Code::QF030,
        "q.handler.exits",
    );
    // The two real codes on a call are fine.
    assert!(of(
        &call(r#"<q:timeout duration="PT30S"/><q:retry maxAttempts="3" backoff="PT10S" jitter="full" nonRetryableCodes="q.timeout q.delivery.poisoned"/>"#),
        Code::QF030
    )
    .is_empty());
}

#[test]
fn qf031_entries_past_max_attempts_or_max_elapsed() {
    let src = registered(
        r#"<q:retry maxAttempts="3" backoff="PT1M PT5M PT25M PT125M PT625M" jitter="none"/>"#,
    );
    let d = one(&src, Code::QF031, "PT25M PT125M PT625M");
    let after = fixed(&src, &d.fixes[0], Code::QF031);
    assert!(after.contains(r#"backoff="PT1M PT5M""#), "{after}");
    let src = registered(
        r#"<q:retry maxElapsed="PT30M" backoff="PT1M PT5M PT25M PT125M" jitter="none"/>"#,
    );
    one(&src, Code::QF031, "PT25M PT125M");
    // DBG-08's own list is exactly used up.
    assert!(of(
        &registered(
            r#"<q:retry maxAttempts="6" backoff="PT1M PT5M PT25M PT125M PT625M" jitter="none"/>"#
        ),
        Code::QF031
    )
    .is_empty());
}

#[test]
fn qf032_unreachable_nodes_in_any_bpmn_file() {
    // No qflow namespace at all: a document rule still applies.
    let src = format!(
        r#"<bpmn:definitions xmlns:bpmn="{BPMN}">
  <bpmn:process id="p">
    <bpmn:startEvent id="start"/>
    <bpmn:task id="a"/>
    <bpmn:task id="island"/>
    <bpmn:boundaryEvent id="b" attachedToRef="a"/>
    <bpmn:endEvent id="after-b"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="a"/>
    <bpmn:sequenceFlow id="f2" sourceRef="b" targetRef="after-b"/>
    <bpmn:sequenceFlow id="f3" sourceRef="island" targetRef="after-b"/>
    <bpmn:subProcess id="events" triggeredByEvent="true">
      <bpmn:startEvent id="inner-start"/>
      <bpmn:task id="inner"/>
    </bpmn:subProcess>
  </bpmn:process>
</bpmn:definitions>"#
    );
    let d = one(&src, Code::QF032, "bpmn:task");
    assert!(d.message.contains("`island`"));
    // Without any flow it is disconnected: QF111 says so, and QF032 not again.
    let alone = src.replace(
        "<bpmn:sequenceFlow id=\"f3\" sourceRef=\"island\" targetRef=\"after-b\"/>",
        "",
    );
    assert!(of(&alone, Code::QF032).is_empty());
    assert_eq!(
        of(&alone, Code::QF111)[0].element.as_deref(),
        Some("island")
    );
}

#[test]
fn qf033_no_jitter_hint_and_its_fixes() {
    let src = registered(r#"<q:retry maxAttempts="6" backoff="PT1M PT5M"/>"#);
    let d = one(&src, Code::QF033, "q:retry");
    assert_eq!(d.severity, Severity::Hint);
    for f in &d.fixes {
        fixed(&src, f, Code::QF033);
    }
    assert!(of(
        &registered(r#"<q:retry maxAttempts="6" backoff="PT1M" jitter="none"/>"#),
        Code::QF033
    )
    .is_empty());
}

#[test]
fn qf040_lists_every_reason() {
    let src = model(
        r#"    <bpmn:serviceTask id="authorize" q:channel="bank">
      <bpmn:extensionElements><q:timeout duration="PT30S"/></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:intermediateCatchEvent id="cool-off">
      <bpmn:timerEventDefinition><bpmn:timeDuration>PT10M</bpmn:timeDuration></bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:serviceTask id="charge" q:task="payments.charge">
      <bpmn:extensionElements><q:retry maxAttempts="3" backoff="PT1M" jitter="full"/></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="authorize"/>
    <bpmn:sequenceFlow id="f2" sourceRef="authorize" targetRef="cool-off"/>
    <bpmn:sequenceFlow id="f3" sourceRef="cool-off" targetRef="charge"/>
    <bpmn:sequenceFlow id="f4" sourceRef="charge" targetRef="end"/>"#,
    );
    let d = one(&src, Code::QF040, "bpmn:process");
    assert_eq!(d.severity, Severity::Info);
    let related: Vec<&str> = d
        .related
        .iter()
        .map(|r| &src[r.span.start()..r.span.end()])
        .collect();
    assert_eq!(
        related,
        ["bpmn:serviceTask", "bpmn:intermediateCatchEvent", "q:retry"]
    );
    let help = d.help.unwrap();
    for id in ["authorize", "cool-off", "charge"] {
        assert!(help.contains(id), "{help}");
    }
    // Run-to-completion: no QF040.
    let plain = line_model(
        "charge",
        r#"    <bpmn:serviceTask id="charge" q:task="a"/>"#,
    );
    let qflow_codes: Vec<_> = diagnostics(&plain)
        .into_iter()
        .filter(|d| !d.code.is_modelling())
        .collect();
    assert!(qflow_codes.is_empty(), "{qflow_codes:#?}");
}

#[test]
fn qf041_elements_qflow_does_not_execute() {
    let src = model(
        r#"    <bpmn:userTask id="approve"/>
    <bpmn:intermediateCatchEvent id="nightly">
      <bpmn:timerEventDefinition><bpmn:timeCycle>R/P1D</bpmn:timeCycle></bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:intermediateCatchEvent id="msg"><bpmn:messageEventDefinition/></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve"/>
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="nightly"/>
    <bpmn:sequenceFlow id="f3" sourceRef="nightly" targetRef="msg"/>
    <bpmn:sequenceFlow id="f4" sourceRef="msg" targetRef="end"/>"#,
    );
    let all = of(&src, Code::QF041);
    let found: Vec<&str> = all.iter().map(|d| text(&src, d)).collect();
    assert_eq!(
        found,
        ["bpmn:userTask", "R/P1D", "bpmn:messageEventDefinition"]
    );
    let help = of(&src, Code::QF041)[0].help.clone().unwrap();
    assert!(
        help.contains("exclusiveGateway") && help.contains("serviceTask"),
        "{help}"
    );
}

/// The same model under three spellings of the qflow namespace.
#[test]
fn verdicts_do_not_depend_on_the_prefix() {
    let q = QF022
        .replace(r#"backoff="PT10S""#, "")
        .replace(r#"jitter="full""#, r#"maxAttemps="2""#);
    let x = q.replace("xmlns:q=", "xmlns:x=").replace("q:", "x:");
    let default_ns = q
        .replace(
            r#"xmlns:q="urn:qflow:bpmn:1""#,
            r#"xmlns="urn:qflow:bpmn:1" xmlns:q="urn:qflow:bpmn:1""#,
        )
        .replace("<q:retry", "<retry");
    let verdicts = |src: &str| -> Vec<(Code, Severity, String)> {
        diagnostics(src)
            .iter()
            .map(|d| {
                (
                    d.code,
                    d.severity,
                    text(src, d).replace("x:", "").replace("q:", ""),
                )
            })
            .collect()
    };
    let base = verdicts(&q);
    assert!(base.iter().any(|v| v.0 == Code::QF022));
    assert!(base.iter().any(|v| v.0 == Code::QF006));
    assert!(base.iter().any(|v| v.0 == Code::QF014));
    assert_eq!(base, verdicts(&x));
    assert_eq!(base, verdicts(&default_ns));
}

/// Another engine's model is not a qflow model: document rules only.
#[test]
fn camunda_models_get_no_execution_rules() {
    let src = format!(
        r#"<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
  <bpmn:process id="order" isExecutable="true">
    <bpmn:serviceTask id="charge">
      <bpmn:extensionElements>
        <zeebe:taskDefinition type="payments.charge" retries="3"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:userTask id="approve"/>
    <bpmn:intermediateCatchEvent id="nightly">
      <bpmn:timerEventDefinition><bpmn:timeCycle>R/P1D</bpmn:timeCycle></bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
  </bpmn:process>
</bpmn:definitions>"#
    );
    // (The modelling rules, bpmnlint's, apply to every document.)
    let qflow_codes: Vec<_> = diagnostics(&src)
        .into_iter()
        .filter(|d| !d.code.is_modelling())
        .collect();
    assert!(qflow_codes.is_empty(), "{qflow_codes:#?}");
    // A qflow document's non-executable process is not run, so not judged.
    let off = model("    <bpmn:userTask id=\"approve\"/>")
        .replace(r#"isExecutable="true""#, r#"isExecutable="false""#);
    assert!(errors(&off).is_empty(), "{:#?}", errors(&off));
}

/// The interchange corpus loads with no error (read from ../shared, never copied).
#[test]
fn miwg_corpus_has_no_execution_diagnostics() {
    let dir = std::path::PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../shared/corpus/miwg");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipping: {} not found", dir.display());
        return;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "bpmn") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let (_, a) = qflow_engine::analyze_bytes(&bytes);
        assert!(
            !a.errors().any(|d| !d.code.is_modelling()),
            "{}: {:#?}",
            path.display(),
            a.diagnostics
        );
        n += 1;
    }
    assert!(n > 10);
}

#[test]
fn qf040_on_a_large_model_lists_reasons_by_kind_capped_and_marks_the_first() {
    let mut body = String::new();
    let mut prev = "start".to_string();
    for i in 0..25 {
        body.push_str(&format!(
            "    <bpmn:serviceTask id=\"t{i}\" q:task=\"x\"><bpmn:extensionElements><q:retry maxAttempts=\"2\" jitter=\"full\"/></bpmn:extensionElements></bpmn:serviceTask>\n    <bpmn:sequenceFlow id=\"f{i}\" sourceRef=\"{prev}\" targetRef=\"t{i}\"/>\n"
        ));
        prev = format!("t{i}");
    }
    body.push_str(&format!(
        "    <bpmn:sequenceFlow id=\"last\" sourceRef=\"{prev}\" targetRef=\"end\"/>"
    ));
    let src = model(&body);
    let d = one(&src, Code::QF040, "bpmn:process");
    assert!(d.message.contains("25 wait states"), "{}", d.message);
    let help = d.help.unwrap();
    assert!(
        help.contains("- 25 <q:retry> elements, on: `t0`, `t1`"),
        "{help}"
    );
    for i in 0..10 {
        assert!(help.contains(&format!("`t{i}`")), "t{i} missing: {help}");
    }
    for i in 10..25 {
        assert!(!help.contains(&format!("`t{i}`")), "t{i} listed: {help}");
    }
    assert!(help.contains("`t9`, … and 15 more"), "{help}");
    assert_eq!(d.related.len(), 1);
}

#[test]
fn qf032_scopes_links_and_compensation() {
    let src = format!(
        r#"<bpmn:definitions xmlns:bpmn="{BPMN}">
  <bpmn:process id="p">
    <bpmn:startEvent id="start"/>
    <bpmn:subProcess id="sub">
      <bpmn:startEvent id="sub-start"/>
      <bpmn:task id="inner"/>
      <bpmn:task id="inner-orphan"/>
      <bpmn:sequenceFlow id="s1" sourceRef="sub-start" targetRef="inner"/>
    </bpmn:subProcess>
    <bpmn:intermediateCatchEvent id="landing"><bpmn:linkEventDefinition name="L"/></bpmn:intermediateCatchEvent>
    <bpmn:task id="after-landing"/>
    <bpmn:task id="undo" isForCompensation="true"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="sub"/>
    <bpmn:sequenceFlow id="f2" sourceRef="landing" targetRef="after-landing"/>
  </bpmn:process>
  <bpmn:process id="no-start">
    <bpmn:task id="implicit"/>
  </bpmn:process>
</bpmn:definitions>"#
    );
    // `inner-orphan` has no flow at all: it is disconnected (QF111), not
    // also unreachable; nothing else in the file is unreachable.
    let found = of(&src, Code::QF032);
    assert!(found.is_empty(), "{found:#?}");
    let disconnected = of(&src, Code::QF111);
    let ids: Vec<_> = disconnected
        .iter()
        .filter_map(|d| d.element.as_deref())
        .collect();
    assert_eq!(ids, ["inner-orphan", "implicit"]);
}

/// Every sample, mutated at many places (a byte range deleted, a quote or a
/// `q:` name broken), analyzes without panicking, and every fix offered on the
/// mutants applies to a text that analyzes without panicking either.
#[test]
fn mutated_samples_never_panic_and_fixes_always_apply() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples");
    let mut files = vec![];
    for dir in [root.clone(), root.join("broken")] {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "bpmn") {
                files.push(e.path());
            }
        }
    }
    assert!(files.len() > 20);
    let mut analyzed = 0;
    for path in files {
        let src = std::fs::read_to_string(&path).unwrap();
        let mut variants = vec![src.clone()];
        for (i, _) in src.char_indices().step_by(53) {
            let end = src[i..]
                .char_indices()
                .nth(7)
                .map_or(src.len(), |(j, _)| i + j);
            variants.push(format!("{}{}", &src[..i], &src[end..]));
        }
        variants.push(src.replace("maxAttempts", "maxAttemps"));
        variants.push(src.replace("PT", "P"));
        variants.push(src.replace("q:task", "q:channel"));
        variants.push(src.replace("isExecutable=\"false\"", "isExecutable=\"true\""));
        for v in &variants {
            let a = analyze(v);
            analyzed += 1;
            for d in &a.diagnostics {
                assert!(
                    d.primary.span.end() <= v.len() && v.is_char_boundary(d.primary.span.start())
                );
                for fix in &d.fixes {
                    let after = apply_edits(v, &fix.edits);
                    let _ = analyze(&after);
                }
            }
        }
    }
    assert!(analyzed > 200);
}
