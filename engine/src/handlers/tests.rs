use std::path::PathBuf;
use std::time::Duration;

use super::*;
use crate::instance::event::{FailureClass, TaskOutcome};

fn parse(text: &str) -> Result<HandlersFile, HandlersError> {
    HandlersFile::parse(text, PathBuf::from("."))
}

#[test]
fn the_documented_file_parses() {
    let f = parse(
        r#"
[tasks."payments.charge"]
command = "./charge.sh"
timeout = "PT30S"

[tasks."stock.reserve"]
url = "http://127.0.0.1:8080/reserve"

[tasks.argv]
command = ["python3", "-c", "print('{}')"]

[channels.bank]
url = "http://127.0.0.1:8081/authorize"
"#,
    )
    .unwrap();
    assert_eq!(
        f.tasks["payments.charge"],
        TaskHandler {
            runner: Runner::Shell("./charge.sh".into()),
            timeout: Duration::from_secs(30),
            concurrency: None,
            breaker: None,
        }
    );
    assert_eq!(f.tasks["stock.reserve"].timeout, DEFAULT_TIMEOUT);
    assert_eq!(
        f.tasks["argv"].runner,
        Runner::Argv(vec!["python3".into(), "-c".into(), "print('{}')".into()])
    );
    assert_eq!(f.channels["bank"].url, "http://127.0.0.1:8081/authorize");
}

#[test]
fn mistakes_name_their_place_and_the_fix() {
    let cases = [
        (
            "[tasks.a]\ncommand = \"x\"\nconcurrency = 0\n",
            "tasks.a.concurrency",
            "a whole number of 1 or more",
        ),
        (
            "[tasks.a]\ncomand = \"x\"\n",
            "tasks.a.comand",
            "did you mean `command`?",
        ),
        (
            "[tasks.a]\ncommand = \"x\"\nurl = \"http://h\"\n",
            "tasks.a",
            "both",
        ),
        ("[tasks.a]\n", "tasks.a", "needs `command` or `url`"),
        (
            "[tasks.a]\nurl = \"ftp://h\"\n",
            "tasks.a.url",
            "not an http",
        ),
        (
            "[tasks.\"p.c\"]\ncommand = \"x\"\ntimeout = \"30s\"\n",
            "tasks.\"p.c\".timeout",
            "30s",
        ),
        (
            "[tasks.a]\ncommand = \"x\"\ntimeout = \"PT0S\"\n",
            "tasks.a.timeout",
            "longer than zero",
        ),
        ("[channels.bank]\n", "channels.bank", "needs `url`"),
        ("[serve]\nport = 1\n", "serve", "unknown section"),
        ("[tasks.a\n", "line 1, column", "not valid TOML"),
    ];
    for (text, place, message) in cases {
        let e = parse(text).unwrap_err();
        assert!(e.place.starts_with(place), "{text:?}: {e}");
        assert!(e.to_string().contains(message), "{text:?}: {e}");
    }
}

#[test]
fn a_commands_exit_and_output_map_to_the_classes() {
    let ok = command_outcome("t", Some(0), "{\"chargeId\": \"ch_1\"}\n", "");
    assert_eq!(
        ok,
        TaskOutcome::Ok([("chargeId".to_string(), serde_json::json!("ch_1"))].into())
    );
    assert_eq!(
        command_outcome("t", Some(0), "  \n", ""),
        TaskOutcome::Ok(Default::default())
    );
    let class = |o: TaskOutcome| match o {
        TaskOutcome::Fail {
            code,
            class,
            retry_after,
            ..
        } => (code, class, retry_after),
        other => panic!("{other:?}"),
    };
    assert_eq!(class(command_outcome("t", Some(0), "[1]", "")).0, OUTPUT);
    assert_eq!(
        class(command_outcome("t", Some(0), "not json", "")).1,
        FailureClass::Permanent
    );
    for (c, want) in [
        ("transient", FailureClass::Transient),
        ("permanent", FailureClass::Permanent),
        ("unknown-outcome", FailureClass::UnknownOutcome),
    ] {
        let out = format!("{{\"code\": \"E\", \"class\": \"{c}\"}}");
        assert_eq!(
            class(command_outcome("t", Some(1), &out, "")),
            ("E".into(), want, None)
        );
    }
    let limited = r#"{"code": "SLOW", "class": "rate-limited", "retryAfter": "PT10M"}"#;
    assert_eq!(
        class(command_outcome("t", Some(3), limited, "")),
        (
            "SLOW".into(),
            FailureClass::RateLimited,
            Some(Duration::from_secs(600))
        )
    );
    assert_eq!(
        command_outcome("t", Some(1), "{\"bpmnError\": \"OUT_OF_STOCK\"}", ""),
        TaskOutcome::BpmnError {
            code: "OUT_OF_STOCK".into()
        }
    );
    let (code, c, _) = class(command_outcome("t", Some(2), "oops", "boom"));
    assert_eq!((code.as_str(), c), (EXIT, FailureClass::Transient));
    let (code, c, _) = class(command_outcome("t", None, "", ""));
    assert_eq!((code.as_str(), c), (EXIT, FailureClass::Transient));
    // A class that is not one of the four is no error shape.
    assert_eq!(
        class(command_outcome(
            "t",
            Some(1),
            r#"{"code":"E","class":"fatal"}"#,
            ""
        ))
        .0,
        EXIT
    );
}

#[test]
fn an_endpoints_status_maps_to_the_classes() {
    let class = |o: TaskOutcome| match o {
        TaskOutcome::Fail {
            code,
            class,
            retry_after,
            ..
        } => (code, class, retry_after),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        http_outcome("t", 204, None, ""),
        TaskOutcome::Ok(Default::default())
    );
    assert_eq!(
        class(http_outcome("t", 429, Some(Duration::from_secs(7)), "")),
        (
            HTTP_429.into(),
            FailureClass::RateLimited,
            Some(Duration::from_secs(7))
        )
    );
    assert_eq!(
        class(http_outcome("t", 503, None, "down")).1,
        FailureClass::Transient
    );
    assert_eq!(
        class(http_outcome("t", 503, None, "")).0,
        "q.handler.http-503"
    );
    assert_eq!(
        class(http_outcome("t", 400, None, "")).1,
        FailureClass::Permanent
    );
    assert_eq!(
        class(http_outcome("t", 404, None, "")).1,
        FailureClass::Permanent
    );
    // The body's error shape names the code; the status keeps the class.
    let body = r#"{"code": "CARD_DECLINED", "class": "permanent"}"#;
    assert_eq!(class(http_outcome("t", 422, None, body)).0, "CARD_DECLINED");
    assert_eq!(
        http_outcome("t", 409, None, r#"{"bpmnError": "OUT_OF_STOCK"}"#),
        TaskOutcome::BpmnError {
            code: "OUT_OF_STOCK".into()
        }
    );
}

#[test]
fn retry_after_reads_seconds_and_http_dates() {
    assert_eq!(retry_after("120", 0), Some(Duration::from_secs(120)));
    // 1994-11-06T08:49:37Z is 784111777.
    assert_eq!(
        retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777 - 30),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777 + 5),
        Some(Duration::ZERO)
    );
    assert_eq!(retry_after("soon", 0), None);
}

#[test]
fn a_delivery_answer_is_classified_at_the_channel_boundary() {
    use crate::embed::Delivery;
    let u = "http://127.0.0.1:1/x";
    assert_eq!(delivery_outcome(u, 202, None, ""), Delivery::Delivered);
    let long = "e".repeat(1000);
    match delivery_outcome(u, 422, None, &format!("{{\"error\": \"{long}\"}}")) {
        Delivery::Rejected(why) => {
            assert!(why.contains("HTTP 422"), "{why}");
            assert!(why.len() < 300, "the body is summarised: {}", why.len());
        }
        other => panic!("{other:?}"),
    }
    for s in [408, 429, 500, 503] {
        assert!(
            matches!(delivery_outcome(u, s, None, ""), Delivery::Failed(_)),
            "{s}"
        );
    }
    for s in [429, 503] {
        assert_eq!(
            delivery_outcome(u, s, Some(Duration::from_secs(60)), ""),
            Delivery::RetryAfter(format!("{u} answered HTTP {s}"), Duration::from_secs(60))
        );
    }
    assert!(matches!(
        delivery_outcome(u, 404, Some(Duration::from_secs(60)), ""),
        Delivery::Rejected(_)
    ));
}

#[test]
fn a_breaker_table_is_read_with_its_defaults() {
    use crate::runtime::breaker::Trip;
    let f = HandlersFile::parse(
        r#"
[tasks."payments.charge"]
command = "./charge.sh"
[tasks."payments.charge".breaker]
consecutive_failures = 5
open_for = "30s"
canaries = 2
release_ramp = "5,20/min"

[tasks.ratio]
command = "./r.sh"
breaker = { failure_ratio = 0.5, window = "PT1M", open_for = "1m" }
"#,
        PathBuf::from("."),
    )
    .unwrap();
    let b = f.tasks["payments.charge"].breaker.clone().unwrap();
    assert_eq!(b.trip, Trip::Consecutive(5));
    assert_eq!((b.open_for_ms, b.canaries), (30_000, 2));
    assert_eq!(b.ramp().text(), "5,20/min");
    let r = f.tasks["ratio"].breaker.clone().unwrap();
    assert_eq!(
        r.trip,
        Trip::Ratio {
            per_mille: 500,
            window_ms: 60_000,
            min_attempts: DEFAULT_MIN_ATTEMPTS
        }
    );
    assert_eq!((r.open_for_ms, r.canaries), (60_000, 1));
    assert_eq!(r.ramp().text(), "10,50,200/min");
}

#[test]
fn a_bad_breaker_table_names_its_place_and_the_fix() {
    let bad = |body: &str| {
        HandlersFile::parse(
            &format!("[tasks.t]\ncommand = \"x\"\n[tasks.t.breaker]\n{body}\n"),
            PathBuf::from("."),
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        bad("open_for = \"30s\""),
        "tasks.t.breaker: needs a threshold: `consecutive_failures = N`, or `failure_ratio = R` with `window = \"1m\"`"
    );
    assert!(bad("consecutive_failures = 3").contains("needs `open_for`"));
    assert!(
        bad("consecutive_failures = 3\nfailure_ratio = 0.5\nopen_for = \"1s\"")
            .contains("give one threshold")
    );
    assert!(bad("failure_ratio = 0.5\nopen_for = \"1s\"").contains("needs `window`"));
    assert!(
        bad("failure_ratio = 1.5\nwindow = \"1m\"\nopen_for = \"1s\"")
            .starts_with("tasks.t.breaker.failure_ratio: expected a number above 0")
    );
    assert!(bad("consecutive_failures = 0\nopen_for = \"1s\"")
        .starts_with("tasks.t.breaker.consecutive_failures: expected a whole number"));
    assert!(bad("consecutive_failures = 3\nopen_for = \"soon\"")
        .starts_with("tasks.t.breaker.open_for: `soon`"));
    assert!(
        bad("consecutive_failures = 3\nopen_for = \"1s\"\nwindow = \"1m\"")
            .starts_with("tasks.t.breaker.window: belongs to `failure_ratio`")
    );
    assert!(
        bad("consecutive_failures = 3\nopen_for = \"1s\"\ncanary = 2")
            .contains("did you mean `canaries`?")
    );
    assert!(
        bad("consecutive_failures = 3\nopen_for = \"1s\"\nrelease_ramp = \"10/s\"")
            .starts_with("tasks.t.breaker.release_ramp:")
    );
    let channel = HandlersFile::parse(
        "[channels.bank]\nurl = \"http://x\"\n[channels.bank.breaker]\nconsecutive_failures = 1\n",
        PathBuf::from("."),
    )
    .unwrap_err()
    .to_string();
    assert!(
        channel.starts_with("channels.bank.breaker: a breaker is declared on a task table"),
        "{channel}"
    );
}
