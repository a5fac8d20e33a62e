//! What the reader's and the rules' tests share: a document written to
//! reach every corner of the reader, and every model of the repository and
//! the interchange corpus.

use std::path::{Path, PathBuf};

/// Every `.bpmn` file under `dir`, build and dependency directories aside.
pub(crate) fn bpmn_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let skip = path
            .file_name()
            .is_some_and(|n| n == "target" || n == "node_modules" || n == ".git");
        if path.is_dir() && !skip {
            bpmn_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "bpmn") {
            out.push(path);
        }
    }
}

/// Every model of the repository (samples, broken samples, conformance
/// models, fixtures) and, when `../shared` is present, the MIWG corpus.
/// A fresh clone has no `../shared`: the tests then say they skip the
/// corpus and assert only what the repository's own models give
/// ([`corpus_present`] tells them which).
pub(crate) fn repository_and_corpus_models() -> Vec<PathBuf> {
    let root = std::path::PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("..");
    let mut files = Vec::new();
    for dir in ["samples", "tests", "lsp", "engine"] {
        bpmn_files(&root.join(dir), &mut files);
    }
    let repo = files.len();
    assert!(repo >= 50, "expected the repository's models, found {repo}");
    if corpus_present() {
        bpmn_files(&corpus_dir(), &mut files);
    } else {
        println!("skipping the corpus: ../shared/corpus/miwg not found");
    }
    files
}

/// `<repo>/../shared/corpus/miwg`, the interchange corpus beside the
/// checkout. The package folder is read when the test runs (cargo sets
/// CARGO_MANIFEST_DIR then too), not when it was built: .ci/run runs the
/// same test binaries in a copy of the checkout with no ../shared beside it.
pub(crate) fn corpus_dir() -> PathBuf {
    std::path::PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../shared/corpus/miwg")
}

/// Whether the interchange corpus is beside the checkout (CI has it; a
/// fresh clone does not).
pub(crate) fn corpus_present() -> bool {
    corpus_dir().is_dir()
}

pub(crate) const HEAD: &str = r#"<?xml version="1.0"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" xmlns:di="http://www.omg.org/spec/DD/20100524/DI" xmlns:q="urn:qflow:bpmn:1" xmlns:v="urn:vendor" xmlns:qq="urn:qflow:bpmn:2" id="D">"#;

/// Every corner of the reader: nested sub-processes, event triggers (none,
/// timer with repeated parts, error, link, several), first-only children
/// (condition, extensionElements, link), text with CDATA, entities,
/// comments and children between its chunks, lanes at depth, globals,
/// participants, channel configurations, `q:` items in and out of extension
/// content, vendor ids, shapes with kept and skipped bounds.
pub(crate) const BODY: &str = r#"
<bpmn:message id="M" name="m"/><bpmn:signal id="Sig"/><bpmn:escalation id="Esc" name=" e "/>
<bpmn:error id="E1" errorCode="c1" name="n"/><bpmn:error name="no id"/>
<q:channelConfig channel="bank" maxDeliveries="3" deliveryInterval="PT1S"/>
<bpmn:extensionElements><q:channelConfig channel="mail"/><v:x id="VendorId"/></bpmn:extensionElements>
<bpmn:collaboration id="C"><bpmn:participant id="Pa" name="pool" processRef="P"/><bpmn:participant id="Pb"/></bpmn:collaboration>
<bpmn:process id="P" name="p &amp; q" isExecutable=" true ">
  <bpmn:laneSet id="LS"><bpmn:lane id="L1" name="one"><bpmn:childLaneSet id="CLS"><bpmn:lane id="L2"/></bpmn:childLaneSet></bpmn:lane></bpmn:laneSet>
  <bpmn:laneSet id="LS2"><bpmn:lane id="L3"/></bpmn:laneSet>
  <bpmn:startEvent id="S" isInterrupting="false"><bpmn:outgoing> F1 </bpmn:outgoing></bpmn:startEvent>
  <bpmn:serviceTask id="T" name="t" q:task="pay" q:channel="bank" q:operation="op" default="F3" isForCompensation="true">
    <bpmn:incoming>F1</bpmn:incoming><bpmn:incoming>   </bpmn:incoming><bpmn:incoming/>
    <bpmn:outgoing>F<!-- c -->2</bpmn:outgoing><bpmn:outgoing>&#70;3</bpmn:outgoing>
    <bpmn:extensionElements><q:retry maxAttempts="5" backoff="PT1S PT5S" jitter="full" q:bad="1"/><q:timeout duration="PT5M"/><v:y><q:retry maxAttempts="9"/></v:y></bpmn:extensionElements>
    <bpmn:extensionElements><q:timeout duration="PT1M"/></bpmn:extensionElements>
  </bpmn:serviceTask>
  <bpmn:boundaryEvent id="B" attachedToRef="T" cancelActivity="false"><bpmn:timerEventDefinition id="TD"><bpmn:timeDuration>PT1M</bpmn:timeDuration><bpmn:timeDuration/><bpmn:timeCycle><![CDATA[ R3/PT1M ]]></bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:boundaryEvent>
  <bpmn:boundaryEvent id="B2" attachedToRef="T"><bpmn:errorEventDefinition errorRef="E1"/></bpmn:boundaryEvent>
  <bpmn:intermediateCatchEvent id="Link"><bpmn:linkEventDefinition name="a"/><bpmn:linkEventDefinition name="b"/></bpmn:intermediateCatchEvent>
  <bpmn:intermediateThrowEvent id="Link2"><bpmn:messageEventDefinition/></bpmn:intermediateThrowEvent>
  <bpmn:endEvent id="End"><bpmn:terminateEventDefinition/><bpmn:timerEventDefinition><bpmn:timeDate>2020</bpmn:timeDate></bpmn:timerEventDefinition></bpmn:endEvent>
  <bpmn:exclusiveGateway id="G" default="F3"/><bpmn:inclusiveGateway id="IG" default=""/><bpmn:userTask id="U" default="F2"/>
  <bpmn:sequenceFlow id="F1" sourceRef="S" targetRef="T"/>
  <bpmn:sequenceFlow id="F2" name="two" sourceRef="T" targetRef="G"><bpmn:conditionExpression> a &lt; b <![CDATA[&& c]]> </bpmn:conditionExpression><bpmn:conditionExpression>second</bpmn:conditionExpression></bpmn:sequenceFlow>
  <bpmn:sequenceFlow sourceRef="G" targetRef="Sub"><bpmn:conditionExpression/></bpmn:sequenceFlow>
  <bpmn:subProcess id="Sub" triggeredByEvent="true">
    <bpmn:incoming>F3</bpmn:incoming>
    <bpmn:startEvent id="SS"><bpmn:errorEventDefinition/></bpmn:startEvent>
    <bpmn:transaction id="Tx"><bpmn:task id="In"/><bpmn:sequenceFlow id="F9" sourceRef="In" targetRef="In"/><bpmn:laneSet><bpmn:lane id="TxLane"/></bpmn:laneSet><bpmn:laneSet id="TxLater"/></bpmn:transaction>
    <bpmn:adHocSubProcess id="AH"><bpmn:scriptTask id="Sc"/></bpmn:adHocSubProcess>
    <bpmn:sequenceFlow id="F8" sourceRef="SS" targetRef="Tx"/>
    <bpmn:extensionElements><q:retry maxAttempts="2"/></bpmn:extensionElements>
  </bpmn:subProcess>
  <bpmn:task id="Odd"><bpmn:startEvent id="NotANode"/><bpmn:sequenceFlow id="NotAFlow"/></bpmn:task>
  <bpmn:callActivity id="CA" calledElement="Other" default="F2"/>
  <v:custom id="VendorNode"><bpmn:task id="InVendor"/></v:custom>
  <bpmn:complexGateway id="CG"/><bpmn:eventBasedGateway id="EG"/><bpmn:parallelGateway id="PG"/>
  <bpmn:dataObjectReference id="DOR" dataObjectRef="DO"/><bpmn:dataObject id="DO"/>
  <bpmn:textAnnotation id="TA"><bpmn:text>note</bpmn:text></bpmn:textAnnotation>
  <qq:task id="NearMiss"/>
</bpmn:process>
<bpmn:process id="P2"><bpmn:startEvent/><bpmn:sequenceFlow/></bpmn:process>
<bpmndi:BPMNDiagram id="Dg"><bpmndi:BPMNPlane id="Pl" bpmnElement="P">
  <bpmndi:BPMNShape id="ShS" bpmnElement="S"><dc:Bounds x="1" y="2" width="3" height="4"/></bpmndi:BPMNShape>
  <bpmndi:BPMNShape id="ShT" bpmnElement="T" isExpanded="true"><dc:Bounds id="Kept" x="10" y="20" width="30" height="40"/><dc:Bounds x="5" y="6" width="7" height="8"/></bpmndi:BPMNShape>
  <bpmndi:BPMNShape id="ShB" bpmnElement="B"><dc:Bounds id="Kept2" x="10" y="20" width="30" height="40"/></bpmndi:BPMNShape>
  <bpmndi:BPMNShape id="ShG" bpmnElement="G"><dc:Bounds x="a" y="2" width="3" height="4"/><dc:Bounds id="K3" x="1" y="1" width="1" height="1"/></bpmndi:BPMNShape>
  <bpmndi:BPMNShape id="ShSub" bpmnElement="Sub"><bpmndi:BPMNLabel><dc:Bounds x="1" y="2" width="3" height="4"/></bpmndi:BPMNLabel><dc:Bounds x="9" y="9" width="9" height="9"></dc:Bounds></bpmndi:BPMNShape>
  <bpmndi:BPMNShape id="ShBad" bpmnElement="U"><dc:Bounds id="K4" x="inf" y="1" width="1" height="1"/><dc:Bounds x="1" y="1" width="1" height="1"/></bpmndi:BPMNShape>
  <bpmndi:BPMNEdge id="EdF1" bpmnElement="F1"><di:waypoint x="1" y="2"/><di:waypoint x="3" y="4" sourceRef="S"/></bpmndi:BPMNEdge>
  <bpmndi:BPMNShape bpmnElement="Link" q:x="1"><dc:Bounds x="1" y="2" width="3" height="4"/></bpmndi:BPMNShape>
</bpmndi:BPMNPlane></bpmndi:BPMNDiagram>
</bpmn:definitions>"#;
