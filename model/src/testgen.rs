//! Generated models that look like a modeller saved them, for benchmarks and tests.
//!
//! Performance figures only mean something on input shaped like real files:
//! namespaced bpmn/bpmndi/dc/di elements, names and documentation, a diagram
//! section about as large as the process itself, and qflow extensions on the
//! tasks. [`generate`] writes such a model at any size (about 650 bytes per
//! task: 20,000 tasks make 12.9 MB), so the CLI bench, the language
//! server bench and the memory tests all measure the same thing.

use std::fmt::Write;

/// A valid qflow model: one executable process, `start → task_1 → … → task_N → end`.
///
/// Every service task is a registered task (`q:task`); every fifth is documented and every tenth
/// carries a jittered, bounded `<q:retry>`. The diagram lays the chain out left to right,
/// wrapping every 50 nodes. The output checks with no error.
pub fn generate(tasks: usize) -> String {
    let mut s = String::with_capacity(700 + tasks * 640);
    s.push_str(concat!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
        "<bpmn:definitions xmlns:bpmn=\"http://www.omg.org/spec/BPMN/20100524/MODEL\"",
        " xmlns:bpmndi=\"http://www.omg.org/spec/BPMN/20100524/DI\"",
        " xmlns:dc=\"http://www.omg.org/spec/DD/20100524/DC\"",
        " xmlns:di=\"http://www.omg.org/spec/DD/20100524/DI\"",
        " xmlns:q=\"urn:qflow:bpmn:1\"",
        " id=\"Definitions_1\" targetNamespace=\"http://bpmn.io/schema/bpmn\"",
        " exporter=\"qflow testgen\" exporterVersion=\"1.0\">\n",
        "  <bpmn:process id=\"Process_1\" name=\"Generated chain\" isExecutable=\"true\">\n",
        "    <bpmn:documentation>A generated chain of registered tasks.</bpmn:documentation>\n",
        "    <bpmn:startEvent id=\"StartEvent_1\" name=\"Start\">\n",
        "      <bpmn:outgoing>Flow_0</bpmn:outgoing>\n",
        "    </bpmn:startEvent>\n",
    ));
    for i in 1..=tasks {
        let _ = write!(
            s,
            concat!(
                "    <bpmn:serviceTask id=\"Task_{i}\" name=\"Step {i}\" q:task=\"orders.step{m}\">\n",
            ),
            i = i,
            m = i % 7
        );
        if i % 5 == 0 {
            let _ = writeln!(
                s,
                "      <bpmn:documentation>Step {i} of the chain.</bpmn:documentation>"
            );
        }
        if i % 10 == 0 {
            s.push_str(concat!(
                "      <bpmn:extensionElements>\n",
                "        <q:retry maxAttempts=\"5\" backoff=\"PT1S PT5S PT25S\" jitter=\"full\"/>\n",
                "      </bpmn:extensionElements>\n",
            ));
        }
        let _ = write!(
            s,
            concat!(
                "      <bpmn:incoming>Flow_{p}</bpmn:incoming>\n",
                "      <bpmn:outgoing>Flow_{i}</bpmn:outgoing>\n",
                "    </bpmn:serviceTask>\n",
            ),
            p = i - 1,
            i = i
        );
    }
    let _ = write!(
        s,
        concat!(
            "    <bpmn:endEvent id=\"EndEvent_1\" name=\"Done\">\n",
            "      <bpmn:incoming>Flow_{n}</bpmn:incoming>\n",
            "    </bpmn:endEvent>\n",
        ),
        n = tasks
    );
    for f in 0..=tasks {
        let _ = writeln!(
            s,
            "    <bpmn:sequenceFlow id=\"Flow_{f}\" sourceRef=\"{}\" targetRef=\"{}\" />",
            node_id(f, tasks),
            node_id(f + 1, tasks)
        );
    }
    s.push_str(concat!(
        "  </bpmn:process>\n",
        "  <bpmndi:BPMNDiagram id=\"BPMNDiagram_1\">\n",
        "    <bpmndi:BPMNPlane id=\"BPMNPlane_1\" bpmnElement=\"Process_1\">\n",
    ));
    for n in 0..=tasks + 1 {
        let (x, y) = position(n);
        let (w, h) = if n == 0 || n == tasks + 1 {
            (36, 36)
        } else {
            (100, 80)
        };
        let _ = write!(
            s,
            concat!(
                "      <bpmndi:BPMNShape id=\"{id}_di\" bpmnElement=\"{id}\">\n",
                "        <dc:Bounds x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" />\n",
                "      </bpmndi:BPMNShape>\n",
            ),
            id = node_id(n, tasks),
            x = x,
            y = y,
            w = w,
            h = h
        );
    }
    for f in 0..=tasks {
        let (x1, y1) = position(f);
        let (x2, y2) = position(f + 1);
        let _ = write!(
            s,
            concat!(
                "      <bpmndi:BPMNEdge id=\"Flow_{f}_di\" bpmnElement=\"Flow_{f}\">\n",
                "        <di:waypoint x=\"{x1}\" y=\"{y1}\" />\n",
                "        <di:waypoint x=\"{x2}\" y=\"{y2}\" />\n",
                "      </bpmndi:BPMNEdge>\n",
            ),
            f = f,
            x1 = x1 + 100,
            y1 = y1 + 40,
            x2 = x2,
            y2 = y2 + 40
        );
    }
    s.push_str(concat!(
        "    </bpmndi:BPMNPlane>\n",
        "  </bpmndi:BPMNDiagram>\n",
        "</bpmn:definitions>\n",
    ));
    s
}

/// Node `n` of the chain: 0 is the start event, `tasks + 1` the end event.
fn node_id(n: usize, tasks: usize) -> String {
    match n {
        0 => "StartEvent_1".to_string(),
        n if n == tasks + 1 => "EndEvent_1".to_string(),
        n => format!("Task_{n}"),
    }
}

/// Where the modeller would have drawn node `n`: rows of 50, 150 px apart.
fn position(n: usize) -> (usize, usize) {
    (180 + (n % 50) * 150, 100 + (n / 50) * 120)
}
