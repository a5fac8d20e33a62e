//! A document with two executable processes, run as a user runs it: without
//! `--process` the run is refused and both are named (it used to run the
//! first silently, and the scenario check then blamed the second's tasks);
//! `--process ID` runs that one, on a kept database too, where a parked
//! instance of the second process is resumed on its own process by a later
//! run. On a SQLite file and on a fresh PostgreSQL database.

use std::path::Path;
mod support;
use support::stores::Fresh;
use support::{lines, qflow};

/// `orders` packs; `refunds` waits an hour, then refunds.
const TWO: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="orders" isExecutable="true">
    <bpmn:startEvent id="o_start"/>
    <bpmn:sequenceFlow id="o1" sourceRef="o_start" targetRef="pack"/>
    <bpmn:serviceTask id="pack" q:task="orders.pack"/>
    <bpmn:sequenceFlow id="o2" sourceRef="pack" targetRef="o_end"/>
    <bpmn:endEvent id="o_end"/>
  </bpmn:process>
  <bpmn:process id="refunds" isExecutable="true">
    <bpmn:startEvent id="r_start"/>
    <bpmn:sequenceFlow id="r1" sourceRef="r_start" targetRef="cooling"/>
    <bpmn:intermediateCatchEvent id="cooling">
      <bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="r2" sourceRef="cooling" targetRef="refund"/>
    <bpmn:serviceTask id="refund" q:task="payments.refund"/>
    <bpmn:sequenceFlow id="r3" sourceRef="refund" targetRef="r_end"/>
    <bpmn:endEvent id="r_end"/>
  </bpmn:process>
  <bpmn:process id="sketch" isExecutable="false">
    <bpmn:startEvent id="k_start"/>
  </bpmn:process>
</bpmn:definitions>"#;

fn model(dir: &Path) -> String {
    let path = dir.join("two.bpmn");
    std::fs::write(&path, TWO).unwrap();
    path.display().to_string()
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

crate::on_both_stores!(
    a_document_with_two_executable_processes_is_refused_without_process_and_runs_the_one_named,
);

fn a_document_with_two_executable_processes_is_refused_without_process_and_runs_the_one_named(
    fresh: &Fresh,
) {
    let dir = fresh.dir();
    let file = model(dir);
    let db = fresh.db();

    // Ambiguous: refused, nothing run, both named, the flag said.
    let o = qflow(dir, &["run", &file, "--no-scenario", "--db", &db]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains("2 executable processes (`orders`, `refunds`)")
            && said.contains("--process ID"),
        "{said}"
    );
    let listed = qflow(dir, &["instances", "--db", &db]);
    assert!(
        !String::from_utf8_lossy(&listed.stdout).contains("orders-"),
        "a refused run started nothing: {}",
        text(&listed)
    );

    // A process that is not there, or not executable: refused, naming those that are.
    for (id, why) in [
        ("refundz", "no process `refundz` in the document"),
        ("sketch", "process `sketch` is not executable"),
    ] {
        let o = qflow(dir, &["run", &file, "--no-scenario", "--process", id]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let said = text(&o);
        assert!(
            said.contains(why) && said.contains("executable: `orders`, `refunds`"),
            "{said}"
        );
    }

    // The second process, parked on its hour's timer on a kept database.
    let o = qflow(
        dir,
        &[
            "run",
            &file,
            "--no-scenario",
            "--process",
            "refunds",
            "--db",
            &db,
            "--until",
            "PT10M",
            "--format",
            "json",
        ],
    );
    let out = lines(&o);
    let last = out.last().unwrap_or_else(|| panic!("{}", text(&o)));
    assert_eq!(last["instance"], "refunds-1", "{}", text(&o));
    assert_ne!(last["status"], "completed", "{}", text(&o));
    assert!(
        out.iter().any(|l| l["node"] == "r_start") && !out.iter().any(|l| l["node"] == "o_start"),
        "{}",
        text(&o)
    );

    // `qflow resume` goes on from the deployment alone: its document has
    // two processes, and the one it runs is the deployment's own.
    let o = qflow(
        dir,
        &["resume", "refunds-1", "--db", &db, "--format", "json"],
    );
    let out = lines(&o);
    let last = out.last().unwrap_or_else(|| panic!("{}", text(&o)));
    assert_eq!(
        (&last["instance"], &last["status"]),
        (&"refunds-1".into(), &"completed".into()),
        "{}",
        text(&o)
    );
    assert!(
        out.iter().any(|l| l["node"] == "refund"),
        "the refund ran: {}",
        text(&o)
    );

    // The first process on the same database: a deployment of its own.
    let o = qflow(
        dir,
        &[
            "run",
            &file,
            "--no-scenario",
            "--process",
            "orders",
            "--db",
            &db,
            "--format",
            "json",
        ],
    );
    let last = lines(&o).pop().unwrap_or_else(|| panic!("{}", text(&o)));
    assert_eq!(last["status"], "completed", "{}", text(&o));
    let shown = qflow(dir, &["show", "refunds-1", "--db", &db]);
    let shown = text(&shown);
    assert!(
        shown.contains("process refunds, deployment 1") && shown.contains("refund "),
        "{shown}"
    );
}
