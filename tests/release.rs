//! A planned release through the binary, on both stores: `qflow unpause
//! --ramp R [--max-rate D=N/min] [--dry-run]` previews the attempts per
//! minute per dependency with and without the ramp, then writes each
//! park's release instant to the store (read back through `show --json`
//! and `stats --json`: no clock is waited on); `--stop-ramp ID` holds the
//! rest again; bad input names the flag and the fix.

use std::collections::BTreeMap;

use qflow_engine::embed::{Engine, TaskError, Time};
use serde_json::Value;

mod support;
use support::qflow_here as qflow;
use support::stores::Fresh;

const DBG08: &str = "samples/dbg08-long-outage.bpmn";
/// The scenario beside it: the provider keeps failing.
const SCENARIO: &str = "samples/scenarios/dbg08-long-outage.json";

crate::on_both_stores!(
    a_dry_run_prints_the_preview_and_changes_nothing,
    a_ramped_unpause_releases_the_parks_at_the_ramps_rates,
    stopping_a_ramp_holds_the_parks_not_yet_let_go_again,
    a_ramped_release_of_quarantined_instances_spaces_their_retries,
    the_attempts_a_ramped_release_causes_are_the_previewed_curve,
    a_ramped_migration_dry_run_changes_nothing,
    a_ramped_migration_spreads_the_repaired_attempts_as_previewed,
    resume_all_with_a_ramp_runs_the_retries_at_the_previewed_rates,
);

fn last_json(out: &str) -> Value {
    serde_json::from_str(out.lines().last().expect("a line")).expect("JSON")
}

/// `n` instances of DBG-08 on the wall clock whose first attempt failed
/// (transient): each parks its retry a minute away. Their ids.
fn parked(db: &str, n: usize) -> Vec<String> {
    let mut engine = Engine::connect(&qflow_engine::store::Location::parse(db).unwrap()).unwrap();
    engine.register("payments.charge", |_| Err(TaskError::transient("DOWN")));
    engine.set_time(Time::System);
    let source = std::fs::read_to_string(DBG08).unwrap();
    let dep = engine.deploy(&source).unwrap();
    let ids: Vec<String> = (0..n)
        .map(|_| engine.start(&dep, serde_json::json!({})).unwrap())
        .collect();
    let mut attempts = 0;
    engine
        .serve_steps(std::time::Duration::from_millis(20), |_, steps| {
            attempts += steps
                .iter()
                .flat_map(|s| s.decision.events.iter())
                .filter(|l| l.event.kind() == "attempt")
                .count();
            attempts < n
        })
        .unwrap();
    ids
}

fn pause(db: &str) {
    let (code, _, err) = qflow(&["pause", "--db", db, "--dependency", "payments.charge"]);
    assert_eq!(code, 0, "{err}");
}

fn show(db: &str, id: &str) -> Value {
    let (code, out, err) = qflow(&["show", id, "--db", db, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    last_json(&out)
}

fn stats(db: &str) -> Value {
    let (code, out, err) = qflow(&["stats", "--db", db, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    last_json(&out)
}

/// The ramp's rate in minute `m` (the last holding on).
fn rate(rates: &[u64], m: usize) -> u64 {
    rates[m.min(rates.len() - 1)]
}

fn a_dry_run_prints_the_preview_and_changes_nothing(fresh: &Fresh) {
    let db = fresh.db();
    let ids = parked(&db, 6);
    pause(&db);
    let before: Vec<Value> = ids.iter().map(|i| show(&db, i)).collect();
    let stats_before = stats(&db);

    let (code, out, err) = qflow(&[
        "unpause",
        "--db",
        &db,
        "--dependency",
        "payments.charge",
        "--ramp",
        "2,4/min",
        "--dry-run",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(v["dry_run"], true, "{v}");
    let p = &v["preview"];
    assert_eq!(p["parks"], 6, "{p}");
    assert_eq!(p["ramp"], "2,4/min");
    let d = &p["dependencies"][0];
    assert_eq!(d["dependency"], "payments.charge", "{p}");
    let curve = |k: &str| -> Vec<u64> {
        d[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    let (without, with) = (curve("without"), curve("with"));
    assert_eq!(without.iter().sum::<u64>(), 6, "{d}");
    assert_eq!(with.iter().sum::<u64>(), 6, "{d}");
    for (m, n) in with.iter().enumerate() {
        assert!(*n <= rate(&[2, 4], m), "minute {m}: {with:?}");
    }
    // Without the ramp the six go together (when due); with it they spread.
    assert!(d["peak_without"].as_u64() > d["peak_with"].as_u64(), "{d}");

    let (code, out, err) = qflow(&[
        "unpause",
        "--db",
        &db,
        "--dependency",
        "payments.charge",
        "--ramp",
        "2,4/min",
        "--dry-run",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("release of dependency payments.charge: 6 retry parks from ")
            && out.contains("minute  dependency       without ramp  with ramp")
            && out.contains("peak     payments.charge: ")
            && out.contains("dry run: nothing changed"),
        "{out}"
    );

    // Nothing changed: every instance reads the same, the pause holds,
    // no schedule was written.
    let after: Vec<Value> = ids.iter().map(|i| show(&db, i)).collect();
    assert_eq!(before, after);
    let s = stats(&db);
    assert_eq!(s["paused"], stats_before["paused"]);
    assert_eq!(s["paused"][0]["holding"], 6, "{s}");
    assert_eq!(s["releases"], serde_json::json!([]));
    assert_eq!(s["containment_log"], stats_before["containment_log"]);
}

/// Applies `unpause --ramp 2,4/min` to 12 parks: the JSON line.
fn ramped(db: &str) -> Value {
    let (code, out, err) = qflow(&[
        "unpause",
        "--db",
        db,
        "--dependency",
        "payments.charge",
        "--ramp",
        "2,4/min",
        "--by",
        "ops-erin",
        "--reason",
        "bank back",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    last_json(&out)
}

fn a_ramped_unpause_releases_the_parks_at_the_ramps_rates(fresh: &Fresh) {
    let db = fresh.db();
    let ids = parked(&db, 12);
    pause(&db);
    let v = ramped(&db);
    assert_eq!(
        (v["changed"].clone(), v["paused"].clone()),
        (true.into(), false.into())
    );
    assert_eq!(v["logged"]["by"], "ops-erin", "{v}");
    let release = &v["release"];
    assert_eq!(release["parks"], 12, "{v}");
    let start = release["start_ms"].as_i64().unwrap();
    let ramp = release["ramp"].as_i64().unwrap();
    let previewed = preview_curve(&v, "with");

    // Each park's release instant, as the store now has it (what every
    // process serving the database reads): never before its own due time,
    // its timer due then, and per minute within the ramp and as previewed.
    let mut per_minute: BTreeMap<usize, u64> = BTreeMap::new();
    let mut instants = Vec::new();
    for id in &ids {
        let s = show(&db, id);
        let held = s["ramp_held"].as_array().unwrap();
        assert_eq!(held.len(), 1, "{id}: {s}");
        let h = &held[0];
        assert_eq!(h["ramp"], ramp);
        assert_eq!(h["by"], "ops-erin");
        assert!(h["release_s"].as_f64() >= h["due_s"].as_f64(), "{h}");
        let timer_due = &s["timers"][0]["due_s"];
        assert_eq!(
            timer_due, &h["release_s"],
            "the timer is due at the release: {s}"
        );
        let at = h["release_ms"].as_i64().unwrap();
        assert!(at >= start, "{h}");
        *per_minute
            .entry(((at - start) / 60_000) as usize)
            .or_default() += 1;
        instants.push(at);
    }
    instants.sort();
    instants.dedup();
    assert_eq!(instants.len(), 12, "one slot each: {instants:?}");
    let last = *per_minute.keys().last().unwrap();
    let observed: Vec<u64> = (0..=last)
        .map(|m| per_minute.get(&m).copied().unwrap_or(0))
        .collect();
    for (m, n) in observed.iter().enumerate() {
        assert!(*n <= rate(&[2, 4], m), "minute {m}: {observed:?}");
    }
    assert_eq!(observed, previewed, "the store holds what was previewed");

    // stats: the pause is gone, the schedule is there with who and why.
    let s = stats(&db);
    assert_eq!(s["paused"], serde_json::json!([]), "{s}");
    let r = &s["releases"][0];
    assert_eq!(
        (r["id"].clone(), r["parks"].clone(), r["waiting"].clone()),
        (ramp.into(), 12.into(), 12.into()),
        "{s}"
    );
    assert_eq!(
        (r["by"].clone(), r["reason"].clone()),
        ("ops-erin".into(), "bank back".into())
    );
    assert_eq!(r["ramp"], "2,4/min");
    let (code, out, _) = qflow(&["stats", "--db", &db]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!(
            "release ramp {ramp} of dependency payments.charge (ramp 2,4/min) by ops-erin (\"bank back\"): 12 retry parks; 12 waiting"
        )),
        "{out}"
    );
    let (_, out, _) = qflow(&["show", &ids[11], "--db", &db]);
    assert!(
        out.contains(&format!(
            "is held by release ramp {ramp} (ramp 2,4/min) by ops-erin"
        )),
        "{out}"
    );

    // The HTML report charts the ramp's releases per minute, as written.
    let report = fresh.dir().join("stats.html");
    let (code, _, err) = qflow(&["stats", "--db", &db, "--report", report.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&report).unwrap();
    let caption = format!("Release ramp {ramp} of dependency payments.charge (ramp 2,4/min)");
    let section = &html[html
        .find(&caption)
        .unwrap_or_else(|| panic!("{caption}: {html}"))..];
    let section = &section[..section.find("</svg>").unwrap()];
    let attr = |bar: &str, name: &str| -> u64 {
        let at = bar.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        bar[at..].split('"').next().unwrap().parse().unwrap()
    };
    let charted: Vec<(usize, u64)> = section
        .split("<rect class=\"bar\"")
        .skip(1)
        .map(|b| {
            let b = &b[..b.find('>').unwrap()];
            (attr(b, "data-minute") as usize, attr(b, "data-attempts"))
        })
        .collect();
    let expected: Vec<(usize, u64)> = observed
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(m, n)| (m, *n))
        .collect();
    assert_eq!(charted, expected, "{section}");

    // The console's fleet view lists the ramp too.
    let (code, out, err) = qflow(&["console", "--db", &db, "--headless", "", "--size", "220x40"]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("release ramps"))
        .unwrap_or_else(|| panic!("no release ramps line:\n{out}"));
    assert!(
        line.contains(&format!(
            "ramp {ramp} of dependency payments.charge (ramp 2,4/min) by ops-erin (\"bank back\"): 12 retry park(s), 12 waiting"
        )),
        "{line}"
    );

    // A second ramp of the same dependency is refused while this one holds
    // a park, with what to do.
    let (code, _, err) = qflow(&[
        "unpause",
        "--db",
        &db,
        "--dependency",
        "payments.charge",
        "--ramp",
        "9/min",
    ]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains(&format!("release ramp {ramp} is still releasing dependency payments.charge: stop it first (`qflow unpause --stop-ramp {ramp}`)")),
        "{err}"
    );
}

fn stopping_a_ramp_holds_the_parks_not_yet_let_go_again(fresh: &Fresh) {
    let db = fresh.db();
    let ids = parked(&db, 5);
    pause(&db);
    let own_due: Vec<Value> = ids
        .iter()
        .map(|i| show(&db, i)["timers"][0]["due_s"].clone())
        .collect();
    let ramp = ramped(&db)["release"]["ramp"].as_i64().unwrap();
    let id = ramp.to_string();
    let (code, out, err) = qflow(&[
        "unpause",
        "--db",
        &db,
        "--stop-ramp",
        &id,
        "--by",
        "ops-bob",
        "--reason",
        "bank flaps",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(
        (v["changed"].clone(), v["held_again"].clone()),
        (true.into(), 5.into()),
        "{v}"
    );
    // Held by the pause again, made by who stopped it, each park at its
    // own due time; the ramp holds nothing.
    let s = stats(&db);
    assert_eq!(s["paused"][0]["value"], "payments.charge", "{s}");
    assert_eq!(s["paused"][0]["by"], "ops-bob");
    assert_eq!(s["paused"][0]["holding"], 5);
    assert_eq!(s["releases"][0]["stopped_by"], "ops-bob");
    assert_eq!(s["releases"][0]["waiting"], 0);
    for (i, id) in ids.iter().enumerate() {
        let sh = show(&db, id);
        assert_eq!(sh["ramp_held"], serde_json::json!([]), "{sh}");
        assert_eq!(sh["timers"][0]["due_s"], own_due[i], "{sh}");
        assert_eq!(sh["held"][0]["value"], "payments.charge", "{sh}");
    }
    let (code, out, _) = qflow(&["unpause", "--db", &db, "--stop-ramp", &id]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("ramp {id} was stopped already: nothing changed")),
        "{out}"
    );
    let (code, _, err) = qflow(&["unpause", "--db", &db, "--stop-ramp", "99"]);
    assert_eq!(code, 2);
    assert!(err.contains("no release ramp 99"), "{err}");
    // Stopped, it no longer refuses a new ramp.
    let (code, _, err) = qflow(&[
        "unpause",
        "--db",
        &db,
        "--dependency",
        "payments.charge",
        "--ramp",
        "1/min",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// The preview against what happens: five instances parked on the virtual
/// clock (`qflow run`, each its own deployment), a ramped unpause, then
/// each resumed by another process. The retries' attempts, minute by
/// minute, are the previewed curve with the ramp, not the one without.
fn the_attempts_a_ramped_release_causes_are_the_previewed_curve(fresh: &Fresh) {
    let db = fresh.db();
    parked_on_the_virtual_clock(fresh, &db, 5);
    pause(&db);
    let (code, out, err) = qflow(&[
        "unpause",
        "--db",
        &db,
        "--dependency",
        "payments.charge",
        "--ramp",
        "1,2/min",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    let start = v["release"]["start_ms"].as_i64().unwrap();
    let curve = |k: &str| preview_curve(&v, k);
    let mut retries = Vec::new();
    for i in 1..=5 {
        let (code, out, err) = qflow(&[
            "resume",
            &format!("dbg08-{i}"),
            "--db",
            &db,
            "--scenario",
            SCENARIO,
            "--until",
            "PT10M",
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{err}");
        retries.extend(attempt_instants(&out, 2));
    }
    assert_eq!(retries.len(), 5, "{retries:?}");
    let observed = per_minute(&retries, start);
    assert_eq!(observed, curve("with"), "observed {retries:?}");
    assert_ne!(observed, curve("without"));
    for (m, n) in observed.iter().enumerate() {
        assert!(*n <= rate(&[1, 2], m), "minute {m}: {observed:?}");
    }
}

fn resume_all_with_a_ramp_runs_the_retries_at_the_previewed_rates(fresh: &Fresh) {
    let db = fresh.db();
    parked_on_the_virtual_clock(fresh, &db, 3);
    // One instance only: the ramp goes with --all.
    let (code, _, err) = qflow(&["resume", "dbg08-1", "--db", &db, "--ramp", "1/min"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("go with --all"), "{err}");
    let before: Vec<Value> = (1..=3).map(|i| show(&db, &format!("dbg08-{i}"))).collect();
    let (code, out, err) = qflow(&[
        "resume",
        "--all",
        "--db",
        &db,
        "--ramp",
        "1/min",
        "--dry-run",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(
        (v["dry_run"].clone(), v["preview"]["parks"].clone()),
        (true.into(), 3.into()),
        "{v}"
    );
    let after: Vec<Value> = (1..=3).map(|i| show(&db, &format!("dbg08-{i}"))).collect();
    assert_eq!(before, after, "a dry run changes nothing");

    let (code, out, err) = qflow(&[
        "resume",
        "--all",
        "--db",
        &db,
        "--ramp",
        "1/min",
        "--no-scenario",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let release: Value = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l.get("release").is_some())
        .unwrap_or_else(|| panic!("a release line: {out}"));
    let start = release["release"]["start_ms"].as_i64().unwrap();
    let with = preview_curve(&release, "with");
    let observed = per_minute(&attempt_instants(&out, 2), start);
    assert_eq!(observed, with, "{out}");
    assert_eq!(
        observed.iter().copied().max(),
        Some(1),
        "one a minute: {out}"
    );
    let v = last_json(&out);
    assert_eq!(
        (v["resumed"].clone(), v["ended"]["completed"].clone()),
        (3.into(), 3.into()),
        "{v}"
    );
}

/// `n` instances of DBG-08's long outage on the virtual clock (`qflow
/// run --until PT30S`, each its own deployment, so each run starts an
/// instance), each parked for its second attempt at +1m.
fn parked_on_the_virtual_clock(fresh: &Fresh, db: &str, n: usize) {
    let model = std::fs::read_to_string(DBG08).unwrap();
    for i in 1..=n {
        let path = fresh.dir().join(format!("m{i}.bpmn"));
        std::fs::write(&path, format!("{model}<!-- copy {i} -->\n")).unwrap();
        let (code, out, err) = qflow(&[
            "run",
            path.to_str().unwrap(),
            "--scenario",
            SCENARIO,
            "--db",
            db,
            "--until",
            "PT30S",
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(last_json(&out)["due_s"], 60, "{out}");
    }
}

/// A preview's per-minute curve `with` or `without` the ramp, of its
/// first dependency.
fn preview_curve(v: &Value, k: &str) -> Vec<u64> {
    v["preview"]["dependencies"][0][k]
        .as_array()
        .unwrap_or_else(|| panic!("no {k} curve in {v}"))
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// When attempt `n` ran, in `run --format json` lines (`at_s` of each
/// attempt line of that number, in ms: the instance's virtual clock).
fn attempt_instants(out: &str, n: u64) -> Vec<i64> {
    out.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["kind"] == "attempt" && l["attempt"] == n)
        .map(|l| (l["at_s"].as_f64().unwrap() * 1000.0) as i64)
        .collect()
}

/// The per-minute counts of `instants` from `start`, minute 0 first.
fn per_minute(instants: &[i64], start: i64) -> Vec<u64> {
    let mut v = Vec::new();
    for at in instants {
        let m = ((at - start) / 60_000) as usize;
        if v.len() <= m {
            v.resize(m + 1, 0);
        }
        v[m] += 1;
    }
    v
}

fn a_ramped_release_of_quarantined_instances_spaces_their_retries(fresh: &Fresh) {
    let db = fresh.db();
    let ids = parked(&db, 4);
    for id in &ids {
        let (code, _, err) = qflow(&["quarantine", id, "--db", &db]);
        assert_eq!(code, 0, "{err}");
    }
    let before: Vec<Value> = ids.iter().map(|i| show(&db, i)).collect();
    let mut args = vec!["release"];
    args.extend(ids.iter().map(String::as_str));
    args.extend(["--db", &db, "--ramp", "1,2/min"]);
    let (code, out, err) = qflow(&[&args[..], &["--dry-run", "--format", "json"]].concat());
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(
        (v["dry_run"].clone(), v["preview"]["parks"].clone()),
        (true.into(), 4.into()),
        "{v}"
    );
    let after: Vec<Value> = ids.iter().map(|i| show(&db, i)).collect();
    assert_eq!(before, after, "a dry run changes nothing");
    assert!(after.iter().all(|s| !s["quarantined_ms"].is_null()));

    let (code, out, err) = qflow(&[&args[..], &["--by", "ops-erin", "--format", "json"]].concat());
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(v["released"].as_array().unwrap().len(), 4, "{v}");
    assert!(
        v["released"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["changed"] == true && r["logged"]["by"] == "ops-erin"),
        "{v}"
    );
    let start = v["release"]["start_ms"].as_i64().unwrap();
    let ramp = v["release"]["ramp"].as_i64().unwrap();
    let previewed = preview_curve(&v, "with");
    let mut instants = Vec::new();
    for id in &ids {
        let s = show(&db, id);
        assert!(s["quarantined_ms"].is_null(), "released: {s}");
        assert_eq!(s["ramp_held"][0]["ramp"], ramp, "{s}");
        assert_eq!(
            s["timers"][0]["due_s"], s["ramp_held"][0]["release_s"],
            "{s}"
        );
        instants.push(s["ramp_held"][0]["release_ms"].as_i64().unwrap());
    }
    let observed = per_minute(&instants, start);
    for (m, n) in observed.iter().enumerate() {
        assert!(*n <= rate(&[1, 2], m), "minute {m}: {observed:?}");
    }
    assert_eq!(observed, previewed);

    // Stopped, every instance with a retry not yet let go is quarantined
    // again, its retry at its own due time.
    let (code, out, err) = qflow(&[
        "unpause",
        "--db",
        &db,
        "--stop-ramp",
        &ramp.to_string(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(v["quarantined"].as_array().unwrap().len(), 4, "{v}");
    for (i, id) in ids.iter().enumerate() {
        let s = show(&db, id);
        assert!(!s["quarantined_ms"].is_null(), "{s}");
        assert_eq!(s["ramp_held"], serde_json::json!([]), "{s}");
        assert_eq!(
            s["timers"][0]["due_s"], before[i]["timers"][0]["due_s"],
            "{s}"
        );
    }
    let (code, _, err) = qflow(&["release", "nope-9", "--db", &db, "--ramp", "1/min"]);
    assert_eq!(code, 2);
    assert!(err.contains("no instance nope-9"), "{err}");
}

/// `n` instances of DBG-08's long outage on the virtual clock, each FAILED
/// after its six attempts (the last at +46,860 s): the deployment's id.
fn failed(db: &str, n: usize) -> String {
    let mut engine = Engine::connect(&qflow_engine::store::Location::parse(db).unwrap()).unwrap();
    engine.register("payments.charge", |_| {
        Err(TaskError::transient("PROVIDER_DOWN"))
    });
    let source = std::fs::read_to_string(DBG08).unwrap();
    let dep = engine.deploy(&source).unwrap();
    for _ in 0..n {
        engine.start(&dep, serde_json::json!({})).unwrap();
    }
    engine.run_until_idle().unwrap();
    let (code, out, err) = qflow(&[
        "instances",
        "--db",
        db,
        "--status",
        "failed",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(last_json(&out)["total"], n, "{out}");
    let (code, out, err) = qflow(&["deployments", "--db", db, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    last_json(&out)[0]["deployment"].to_string()
}

/// `migrate --all-failed-of D --to the repaired model` with `extra`.
fn migrate_all(db: &str, deployment: &str, extra: &[&str]) -> (i32, String, String) {
    let args = [
        &[
            "migrate",
            "--all-failed-of",
            deployment,
            "--to",
            "samples/dbg08-repaired.bpmn",
            "--map",
            "charge=chargeCard",
            "--db",
            db,
        ][..],
        extra,
    ]
    .concat();
    qflow(&args)
}

fn a_ramped_migration_dry_run_changes_nothing(fresh: &Fresh) {
    let db = fresh.db();
    let dep = failed(&db, 3);
    let (code, out, _) = qflow(&["instances", "--db", &db, "--format", "json"]);
    assert_eq!(code, 0);
    let ids: Vec<String> = last_json(&out)["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["instance"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3, "{out}");
    let before: Vec<Value> = ids.iter().map(|i| show(&db, i)).collect();
    let (code, out, err) = migrate_all(
        &db,
        &dep,
        &["--ramp", "1/min", "--dry-run", "--format", "json"],
    );
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(v["dry_run"], true, "{out}");
    assert_eq!(v["preview"]["parks"], 3, "{v}");
    let d = &v["preview"]["dependencies"][0];
    assert_eq!(d["dependency"], "payments.charge", "{v}");
    assert_eq!(
        d["without"],
        serde_json::json!([3]),
        "every repaired attempt at once: {v}"
    );
    assert_eq!(d["with"], serde_json::json!([1, 1, 1]), "{v}");
    let after: Vec<Value> = ids.iter().map(|i| show(&db, i)).collect();
    assert_eq!(before, after, "a dry run changes nothing");
    assert!(after
        .iter()
        .all(|s| s["status"] == "failed" && s["quarantined_ms"].is_null()));
    assert_eq!(
        stats(&db)["releases"],
        serde_json::json!([]),
        "no ramp was written"
    );

    // The human preview says the same in words; --by without a ramp is refused.
    let (code, out, err) = migrate_all(&db, &dep, &["--ramp", "1/min", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("3 retry parks")
            && out.contains("peak     payments.charge: 3/min without the ramp, 1/min with it"),
        "{out}"
    );
    assert!(out.contains("dry run: nothing was changed"), "{out}");
    let (code, _, err) = migrate_all(&db, &dep, &["--by", "carol"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--by and --reason are recorded with a ramped migration"),
        "{err}"
    );
}

fn a_ramped_migration_spreads_the_repaired_attempts_as_previewed(fresh: &Fresh) {
    let db = fresh.db();
    let dep = failed(&db, 5);
    let (code, out, err) = migrate_all(
        &db,
        &dep,
        &["--ramp", "1,2/min", "--by", "ops-erin", "--format", "json"],
    );
    assert_eq!(code, 0, "{err}");
    let v = last_json(&out);
    assert_eq!(
        (v["migrated"].clone(), v["held"].clone()),
        (5.into(), 5.into()),
        "{v}"
    );
    let start = v["release"]["start_ms"].as_i64().unwrap();
    let ramp = v["release"]["ramp"].as_i64().unwrap();
    let curve = |k: &str| preview_curve(&v, k);
    assert_eq!(curve("with"), vec![1, 2, 2], "{v}");
    assert_eq!(curve("without"), vec![5], "{v}");
    // Every plan line says it was held; the held instances' outcome is
    // counted once the ramp gave it its instant.
    let plans: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["applied"] == true)
        .collect();
    assert_eq!(plans.len(), 5, "{out}");
    assert!(plans.iter().all(|p| p["held"] == true), "{out}");
    assert_eq!(v["outcomes"][0]["instances"], 5, "{v}");
    let ids: Vec<String> = plans
        .iter()
        .map(|p| p["instance"].as_str().unwrap().to_string())
        .collect();
    for id in &ids {
        let s = show(&db, id);
        assert!(s["quarantined_ms"].is_null(), "released by the ramp: {s}");
        // Held by this ramp, if held at all (the first goes at its own time).
        assert!(
            s["ramp_held"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["ramp"] == ramp),
            "{s}"
        );
        let log = s["containment_log"].as_array().unwrap();
        assert!(
            log.iter()
                .any(|e| e["by"] == "ops-erin" && e["action"] == "quarantine"),
            "held in the migration's transaction, as ops-erin: {s}"
        );
    }
    let releases = stats(&db)["releases"].clone();
    assert_eq!(releases[0]["id"], ramp, "{releases}");
    // What runs is what was previewed: each repaired attempt (the
    // seventh) at its release instant, per minute as the preview said.
    let mut sevenths = Vec::new();
    for id in &ids {
        let (code, out, err) = qflow(&[
            "resume",
            id,
            "--db",
            &db,
            "--no-scenario",
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{err}");
        sevenths.extend(attempt_instants(&out, 7));
    }
    assert_eq!(sevenths.len(), 5, "{sevenths:?}");
    let observed = per_minute(&sevenths, start);
    assert_eq!(
        observed,
        curve("with"),
        "observed {sevenths:?} from {start}"
    );
    for (m, n) in observed.iter().enumerate() {
        assert!(*n <= rate(&[1, 2], m), "minute {m}: {observed:?}");
    }
}

#[test]
fn a_bad_ramp_names_the_flag_and_a_literal_fix() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none.db");
    let db = db.to_str().unwrap();
    for (ramp, says) in [
        (
            "10,x/min",
            "--ramp 10,x/min: `x` is not a whole number of releases per minute",
        ),
        ("0/min", "--ramp 0/min: a rate of 0 releases nothing"),
        ("10,50", "--ramp 10,50: it has no unit"),
    ] {
        let (code, _, err) = qflow(&[
            "unpause",
            "--db",
            db,
            "--dependency",
            "bank",
            "--ramp",
            ramp,
        ]);
        assert_eq!(code, 2, "{ramp}: {err}");
        assert!(err.contains(says), "{err}");
        assert!(err.contains("--ramp 1"), "a literal fix: {err}");
    }
    let (code, _, err) = qflow(&[
        "unpause",
        "--db",
        db,
        "--dependency",
        "bank",
        "--max-rate",
        "bank=20",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--max-rate bank=20: `20` is not per minute; write bank=20/min"),
        "{err}"
    );
    // JSON says it as a usage error too.
    let (code, out, _) = qflow(&[
        "unpause",
        "--db",
        db,
        "--class",
        "transient",
        "--ramp",
        "5",
        "--format",
        "json",
    ]);
    assert_eq!(code, 2);
    assert_eq!(last_json(&out)["error"], "usage", "{out}");
}
