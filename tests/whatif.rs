//! What-if on a live store and the exhaustion forecast, through the binary
//! on both stores: `qflow simulate --from DB --model EDITED.bpmn`
//! re-decides every parked retry under the edited policy (per instance its
//! next eligible time and whether it exhausts earlier or later; for the
//! fleet attempts per minute and the exhaustion forecast both ways) and
//! leaves the store exactly as it was; a model that does not fit the
//! deployment, or a database without its process, is refused (exit 2,
//! naming the fix); `qflow stats` forecasts how many parked instances
//! reach FAILED in each coming hour.

use serde_json::{json, Value};

mod support;
use support::qflow_here as qflow;
use support::stores::{open, Fresh};

const DBG08: &str = "samples/dbg08-long-outage.bpmn";
const SCENARIO: &str = "samples/scenarios/dbg08-long-outage.json";
const HOUR_MS: i64 = 3_600_000;

crate::on_both_stores!(
    a_what_if_re_decides_every_park_and_leaves_the_store_unchanged,
    a_model_that_does_not_fit_the_deployment_is_refused,
    a_database_without_the_process_is_refused,
    stats_forecasts_the_instances_reaching_failed_per_hour,
    the_consoles_fleet_view_shows_the_forecast,
    the_forecast_is_what_the_runtime_then_decides,
);

fn last_json(out: &str) -> Value {
    serde_json::from_str(out.lines().last().expect("a line")).expect("JSON")
}

/// A known fleet of DBG-08 (six attempts at 0, 1 m, 6 m, 31 m, 2 h 36 m,
/// 13 h 1 m, then exhausted), every attempt failing, on the virtual clock:
/// dbg08-1 has failed once (parked until +1m), dbg08-2 twice (parked until
/// +6m, its second failure at +1m: the latest decision, "now"). Each is
/// a run of its own copy of the model (two deployments of process dbg08).
fn fleet(fresh: &Fresh) -> String {
    let db = fresh.db();
    let model = std::fs::read_to_string(DBG08).unwrap();
    for (i, until) in [(1, "PT30S"), (2, "PT2M")] {
        let path = fresh.dir().join(format!("m{i}.bpmn"));
        std::fs::write(&path, format!("{model}<!-- copy {i} -->\n")).unwrap();
        let (code, out, err) = qflow(&[
            "run",
            path.to_str().unwrap(),
            "--scenario",
            SCENARIO,
            "--db",
            &db,
            "--until",
            until,
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(last_json(&out)["for"], "retry", "{out}");
    }
    db
}

/// The edit: the same process, every retry three hours after the failure.
fn edited(fresh: &Fresh, backoff: &str) -> String {
    let model = std::fs::read_to_string(DBG08).unwrap();
    let text = model.replace(
        r#"backoff="PT1M PT5M PT25M PT125M PT625M""#,
        &format!(r#"backoff="{backoff}""#),
    );
    assert_ne!(text, model);
    let path = fresh.dir().join("edited.bpmn");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// Every row a what-if could touch, as the store reads them back: the
/// instances, and each one's timers, history and transitions.
fn fingerprint(db: &str) -> String {
    let store = open(db);
    let mut out = String::new();
    for i in store.instances().unwrap() {
        out += &format!("{i:?}\n");
        out += &format!("{:?}\n", store.timers(&i.id).unwrap());
        out += &format!("{:?}\n", store.history(&i.id).unwrap());
        out += &format!("{:?}\n", store.transitions(&i.id).unwrap());
    }
    out += &format!("{:?}\n", store.deployments().unwrap());
    out
}

/// The bytes of a SQLite store's files (none for PostgreSQL).
fn bytes(fresh: &Fresh, db: &str) -> Vec<Vec<u8>> {
    if fresh.is_postgres() {
        return Vec::new();
    }
    ["", "-wal"]
        .iter()
        .map(|s| std::fs::read(format!("{db}{s}")).unwrap_or_default())
        .collect()
}

fn at_ms(v: &Value) -> i64 {
    v["at_ms"]
        .as_i64()
        .unwrap_or_else(|| panic!("an instant: {v}"))
}

fn a_what_if_re_decides_every_park_and_leaves_the_store_unchanged(fresh: &Fresh) {
    let db = fleet(fresh);
    let edit = edited(fresh, "PT3H");
    let (rows, files) = (fingerprint(&db), bytes(fresh, &db));
    let (code, out, err) = qflow(&["simulate", "--from", &db, "--model", &edit, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(v["status"], "what-if");
    assert_eq!(v["process"], "dbg08");
    assert_eq!(v["deployments"], json!([1, 2]));
    assert_eq!(v["now_ms"], 60_000);
    assert_eq!(v["written"], false);
    let by_id = |id: &str| {
        v["instances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["instance"] == id)
            .unwrap_or_else(|| panic!("{id} in {v}"))
            .clone()
    };
    // dbg08-1 failed once at 0: its retry was due at +1m and is now due
    // 3 h after that failure; it exhausts at 15 h instead of 13 h 1 m.
    let one = by_id("dbg08-1");
    assert_eq!(one["attempts"], 1);
    assert_eq!(one["next_ms"], 60_000);
    assert_eq!(one["edit_next_ms"], 3 * HOUR_MS);
    assert_eq!(at_ms(&one["exhausts"]), 46_860_000);
    assert_eq!(one["exhausts"]["reason"], "exhausted");
    assert_eq!(at_ms(&one["edit_exhausts"]), 15 * HOUR_MS);
    assert_eq!(one["change"], "later");
    // dbg08-2 failed twice (at 0 and +1m): four attempts left, 3 h apart,
    // so it exhausts at 12 h 1 m: earlier.
    let two = by_id("dbg08-2");
    assert_eq!(two["attempts"], 2);
    assert_eq!(two["next_ms"], 360_000);
    assert_eq!(two["edit_next_ms"], 60_000 + 3 * HOUR_MS);
    assert_eq!(at_ms(&two["edit_exhausts"]), 60_000 + 12 * HOUR_MS);
    assert_eq!(two["change"], "earlier");
    assert_eq!(
        (v["earlier"].clone(), v["later"].clone()),
        (json!(1), json!(1))
    );
    // The fleet: attempts per minute from now, both ways.
    let load = &v["attempts_per_minute"][0];
    assert_eq!(load["dependency"], "payments.charge");
    assert_eq!(
        (load["peak_now"].clone(), load["peak_edit"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(load["attempts_now"], 9);
    assert_eq!(load["now"][0], 1);
    assert_eq!(load["now"][5], 2);
    assert_eq!(load["edit"][179], 1);
    assert_eq!(load["edit"][180], 1);
    // The exhaustion forecast, both ways.
    let hours = |k: &str| -> Vec<(i64, i64, i64)> {
        v[k][0]["hours"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["hour"].as_i64().unwrap(),
                    h["hour_start_ms"].as_i64().unwrap(),
                    h["failed"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        hours("exhaustion_forecast_now"),
        [(13, 60_000 + 13 * HOUR_MS, 2)]
    );
    assert_eq!(
        hours("exhaustion_forecast_edit"),
        [
            (12, 60_000 + 12 * HOUR_MS, 1),
            (14, 60_000 + 14 * HOUR_MS, 1)
        ]
    );
    // The human form: the same, in a table and a chart.
    let (code, human, err) = qflow(&["simulate", "--from", &db, "--model", &edit]);
    assert_eq!(code, 0, "{err}");
    for says in [
        "on deployments 1, 2 of process dbg08: 2 parked instances from +1m",
        "1 exhaust earlier, 1 later, 0 the same",
        "dbg08-1   charge  1         +1m       +3h          +13h 1m (exhausted)  +15h (exhausted)     later",
        "payments.charge: peak 2/min now, 1/min edited",
        "exhaustion forecast: instances reaching FAILED per hour from +1m",
        "nothing was written: the store is as it was",
    ] {
        assert!(human.contains(says), "{says}\n{human}");
    }
    assert!(
        human
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["13", "+13h", "1m", "2", "0"]),
        "{human}"
    );
    // Nothing was written, row for row (and byte for byte on SQLite).
    assert_eq!(fingerprint(&db), rows);
    assert_eq!(bytes(fresh, &db), files);
    // One deployment only.
    let (code, out, err) = qflow(&[
        "simulate",
        "--from",
        &db,
        "--model",
        &edit,
        "--deployment",
        "2",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(v["parked"], 1);
    assert_eq!(v["instances"][0]["instance"], "dbg08-2");
}

fn a_model_that_does_not_fit_the_deployment_is_refused(fresh: &Fresh) {
    let db = fleet(fresh);
    // The parked task `charge` is gone: two tasks stand in its place, and
    // neither is its obvious successor.
    let model = std::fs::read_to_string(DBG08).unwrap();
    let text = model
        .replace(r#"id="charge""#, r#"id="settle""#)
        .replace(r#"targetRef="charge""#, r#"targetRef="settle""#)
        .replace(
            r#"sourceRef="charge" targetRef="done""#,
            r#"sourceRef="settle" targetRef="refund""#,
        )
        .replace(
            r#"    <bpmn:endEvent id="done">"#,
            r#"    <bpmn:serviceTask id="refund" q:task="payments.refund">
      <bpmn:incoming>f2</bpmn:incoming>
      <bpmn:outgoing>f3</bpmn:outgoing>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f3" sourceRef="refund" targetRef="done"/>
    <bpmn:endEvent id="done">"#,
        )
        .replace(
            "<bpmn:incoming>f2</bpmn:incoming>\n    </bpmn:endEvent>",
            "<bpmn:incoming>f3</bpmn:incoming>\n    </bpmn:endEvent>",
        );
    let path = fresh.dir().join("renamed.bpmn");
    std::fs::write(&path, &text).unwrap();
    let edit = path.to_str().unwrap();
    let (code, _, err) = qflow(&["check", edit]);
    assert_eq!(code, 0, "the edit loads: {err}\n{text}");
    let rows = fingerprint(&db);
    let (code, out, err) = qflow(&["simulate", "--from", &db, "--model", edit, "--json"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("does not match deployment"), "{err}");
    assert!(err.contains("node charge holds state"), "{err}");
    assert!(err.contains("--map charge="), "the fix: {err}");
    assert_eq!(last_json(&out)["error"], "mismatch");
    // Mapped, it fits: the mapping is the operator's.
    let (code, out, err) = qflow(&[
        "simulate",
        "--from",
        &db,
        "--model",
        edit,
        "--map",
        "charge=settle",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(v["mapping"], json!({"charge": "settle"}));
    assert_eq!(v["instances"][0]["edit_node"], "settle");
    assert_eq!(fingerprint(&db), rows);
}

fn a_database_without_the_process_is_refused(fresh: &Fresh) {
    let db = fleet(fresh);
    let model = std::fs::read_to_string(DBG08).unwrap();
    let path = fresh.dir().join("other.bpmn");
    std::fs::write(&path, model.replace(r#"id="dbg08""#, r#"id="refunds""#)).unwrap();
    let (code, _, err) = qflow(&["simulate", "--from", &db, "--model", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("has no deployment of process refunds"),
        "{err}"
    );
    assert!(
        err.contains("dbg08 (deployment 1)"),
        "names what it has: {err}"
    );
    // A database that does not exist is refused, not created.
    if !fresh.is_postgres() {
        let missing = fresh.dir().join("missing.db");
        let (code, _, err) = qflow(&[
            "simulate",
            "--from",
            missing.to_str().unwrap(),
            "--model",
            DBG08,
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no such database"), "{err}");
        assert!(!missing.exists());
    }
    // --from takes no outage flags.
    let (code, _, err) = qflow(&["simulate", "--from", &db, "--model", DBG08, "--jobs", "5"]);
    assert_eq!(code, 2, "{err}");
}

fn stats_forecasts_the_instances_reaching_failed_per_hour(fresh: &Fresh) {
    let db = fleet(fresh);
    let stats = |db: &str| {
        let (code, out, err) = qflow(&["stats", "--db", db, "--format", "json"]);
        assert_eq!(code, 0, "{err}");
        last_json(&out)
    };
    let v = stats(&db);
    assert_eq!(v["exhaustion_forecast_start_ms"], 60_000);
    assert_eq!(v["exhaustion_forecast_hours"], 24);
    // Both exhaust 13 h 1 m after their first attempt: hour 13 from now.
    assert_eq!(
        v["exhaustion_forecast"],
        json!([{
            "dependency": "payments.charge",
            "parked": 2,
            "held": 0,
            "hours": [{"hour": 13, "hour_start_ms": 60_000 + 13 * HOUR_MS, "failed": 2}],
            "later": 0,
            "never": 0,
        }])
    );
    let (code, human, err) = qflow(&["stats", "--db", &db]);
    assert_eq!(code, 0, "{err}");
    assert!(
        human.contains("exhaustion forecast: parked instances reaching FAILED per hour from +1m"),
        "{human}"
    );
    assert!(human.contains("hour  13  from +13h 1m"), "{human}");
    // And in the HTML report's summary.
    let report = fresh.dir().join("stats.html");
    let (code, _, err) = qflow(&["stats", "--db", &db, "--report", report.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        html.contains("reaching FAILED if payments.charge stays down</td><td>2 of 2 parked within 24 h; hour 13 (from +13h 1m): 2"),
        "{html}"
    );
    // Held by a pause, they make no attempt: counted apart.
    let (code, _, err) = qflow(&["pause", "--db", &db, "--dependency", "payments.charge"]);
    assert_eq!(code, 0, "{err}");
    let v = stats(&db);
    assert_eq!(v["exhaustion_forecast"][0]["held"], 2);
    assert_eq!(v["exhaustion_forecast"][0]["hours"], json!([]));
    let (_, human, _) = qflow(&["stats", "--db", &db]);
    assert!(human.contains("2 held by a pause or quarantine"), "{human}");
}

fn the_consoles_fleet_view_shows_the_forecast(fresh: &Fresh) {
    let db = fleet(fresh);
    let (code, frame, err) = qflow(&["console", "--db", &db, "--headless", "", "--size", "120x36"]);
    assert_eq!(code, 0, "{err}");
    let line = frame
        .lines()
        .find(|l| l.contains("exhaustion forecast"))
        .unwrap_or_else(|| panic!("no forecast in the fleet view:\n{frame}"));
    assert!(
        line.contains("payments.charge: 2 of 2 in 24 h, most (2) in 13h"),
        "{line}"
    );
}

/// With jitter (drawn per instance, node and attempt), the forecast of a
/// park is what the runtime then does: the same FAILED instant, and the
/// same attempts per minute, observed by letting the instance run on.
fn the_forecast_is_what_the_runtime_then_decides(fresh: &Fresh) {
    let db = fresh.db();
    let model = std::fs::read_to_string(DBG08)
        .unwrap()
        .replace(r#"jitter="none""#, r#"jitter="full""#);
    let path = fresh.dir().join("jittered.bpmn");
    std::fs::write(&path, model).unwrap();
    let path = path.to_str().unwrap();
    let (code, _, err) = qflow(&[
        "run",
        path,
        "--scenario",
        SCENARIO,
        "--db",
        &db,
        "--until",
        "PT30S",
    ]);
    assert_eq!(code, 0, "{err}");
    // The what-if of the model it runs: the forecast now.
    let (code, out, err) = qflow(&["simulate", "--from", &db, "--model", path, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    let now = v["now_ms"].as_i64().unwrap();
    let forecast = at_ms(&v["instances"][0]["exhausts"]);
    assert_eq!(v["instances"][0]["change"], "same");
    let curve: Vec<u64> = v["attempts_per_minute"][0]["now"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    let (code, out, err) = qflow(&[
        "resume",
        "dbg08-1",
        "--db",
        &db,
        "--scenario",
        SCENARIO,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let ms = |l: &Value| (l["at_s"].as_f64().unwrap() * 1000.0).round() as i64;
    let failed = lines
        .iter()
        .find(|l| l["kind"] == "failed")
        .unwrap_or_else(|| panic!("it fails: {out}"));
    assert_eq!(failed["reason"], "exhausted");
    assert_eq!(ms(failed), forecast, "{out}");
    let mut observed = vec![0u64; curve.len()];
    for l in lines.iter().filter(|l| l["kind"] == "attempt") {
        let m = ((ms(l) - now) / 60_000) as usize;
        observed[m] += 1;
    }
    assert_eq!(observed, curve);
    let (_, out, _) = qflow(&["stats", "--db", &db, "--format", "json"]);
    assert_eq!(last_json(&out)["exhaustion_forecast"], json!([]), "{out}");
}
