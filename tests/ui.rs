//! `qflow ui`, the web inspector, through the binary over HTTP: status
//! codes, paging, escaping of what a model and a handler wrote, the token,
//! and the refusal of cross-site and read-only actions
//! (docs/inspector.md). The pages in a real browser: tests/browser/.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn qflow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qflow"))
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name)
}

fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 1),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A running `qflow ui`, stopped when dropped.
struct Ui {
    child: Child,
    addr: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_ui(db: &Path, extra: &[&str], token: Option<&str>) -> Ui {
    let mut cmd = qflow();
    cmd.args(["ui", "--db"])
        .arg(db)
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .env_remove("QFLOW_SERVE_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(t) = token {
        cmd.env("QFLOW_SERVE_TOKEN", t);
    }
    let mut child = cmd.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // qflow ui: http://127.0.0.1:PORT/ui/ (…)
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Ui { child, addr }
}

struct Answer {
    status: u16,
    head: String,
    body: String,
}

fn request(ui: &Ui, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut s = TcpStream::connect(&ui.addr).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {}\r\n", ui.addr));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Answer {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

fn get(ui: &Ui, path: &str) -> Answer {
    request(ui, "GET", path, &[], "")
}

/// A store of the long outage: `failed` instances exhausted, one waiting.
fn outage_store(dir: &Path, failed: usize) -> PathBuf {
    let db = dir.join("fleet.db");
    ok(qflow()
        .arg("simulate")
        .arg(sample("dbg08-long-outage.bpmn"))
        .args(["--jobs", &failed.to_string(), "--outage", "20h", "--db"])
        .arg(&db));
    ok(qflow()
        .arg("run")
        .arg(sample("dbg08-long-outage.bpmn"))
        .args(["--until", "1h", "--db"])
        .arg(&db));
    db
}

#[test]
fn the_fleet_page_links_each_failed_instance_and_loads_nothing_from_another_host() {
    let dir = tempfile::tempdir().unwrap();
    let db = outage_store(dir.path(), 3);
    let ui = start_ui(&db, &[], None);
    let root = get(&ui, "/");
    assert_eq!(root.status, 303, "{}", root.head);
    assert!(root.head.contains("Location: /ui/"), "{}", root.head);
    let fleet = get(&ui, "/ui/");
    assert_eq!(fleet.status, 200, "{}", fleet.body);
    assert!(fleet
        .head
        .contains("Content-Security-Policy: default-src 'none'"));
    // The diagram with its counts, the failure codes, the dependency.
    assert!(fleet.body.contains("<svg"), "no diagram");
    assert!(fleet.body.contains("1 parked"), "{}", fleet.body);
    assert!(fleet.body.contains("3 failed"), "{}", fleet.body);
    assert!(fleet.body.contains("payments.charge"));
    assert!(fleet.body.contains("DEPENDENCY_DOWN"));
    // The parked one is forecast: it reaches FAILED within the day.
    assert!(
        fleet.body.contains("id=\"exhaustion-forecast\""),
        "{}",
        fleet.body
    );
    assert!(fleet.body.contains("data-failed=\"1\""), "{}", fleet.body);
    assert!(fleet.body.contains("1 of 1 within 24 h"), "{}", fleet.body);
    // Each failed instance is one link away: the latest are on the page.
    for id in ["dbg08-1", "dbg08-2", "dbg08-3"] {
        assert!(
            fleet.body.contains(&format!("href=\"/ui/instances/{id}\"")),
            "{id} is not linked from the fleet page"
        );
    }
    // Nothing from another host: every src and href is on this server.
    for attr in ["src=\"http", "href=\"http", "src=\"//", "href=\"//"] {
        assert!(!fleet.body.contains(attr), "{attr} in the fleet page");
    }
    // The failed instances' list, then one instance by its link.
    let failed = get(&ui, "/ui/instances?status=failed");
    assert_eq!(failed.status, 200);
    assert!(failed.body.contains("1–3 of 3"), "{}", failed.body);
    assert!(failed.body.contains("href=\"/ui/instances/dbg08-1\""));
    assert!(
        failed.body.contains(
            "exhausted: <span class=\"message\">the dependency is down (simulated outage)</span>"
        ),
        "the list says each failure's message"
    );
    let one = get(&ui, "/ui/instances/dbg08-1");
    assert_eq!(one.status, 200);
    assert!(one
        .body
        .contains("the dependency is down (simulated outage)"));
    assert!(one.body.contains("DEPENDENCY_DOWN"));
    let missing = get(&ui, "/ui/instances/nope-9");
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("no instance nope-9"));
    assert_eq!(get(&ui, "/ui/nowhere").status, 404);
    assert_eq!(get(&ui, "/ui/app.js").status, 200);
}

#[test]
fn the_list_pages_fifty_at_a_time_and_refuses_a_bad_filter() {
    let dir = tempfile::tempdir().unwrap();
    let db = outage_store(dir.path(), 120);
    let ui = start_ui(&db, &[], None);
    let first = get(&ui, "/ui/instances?status=failed");
    assert!(first.body.contains("1–50 of 120"), "{}", first.body);
    assert_eq!(
        first.body.matches("href=\"/ui/instances/dbg08-").count(),
        50
    );
    assert!(first
        .body
        .contains("rel=\"next\" href=\"/ui/instances?status=failed&amp;page=2\""));
    let last = get(&ui, "/ui/instances?status=failed&page=3");
    assert!(last.body.contains("101–120 of 120"), "{}", last.body);
    assert!(!last.body.contains("rel=\"next\""));
    // A filter the store does not take (node, code): the same paging.
    let by_code = get(&ui, "/ui/instances?code=DEPENDENCY_DOWN&node=charge&page=2");
    assert!(by_code.body.contains("51–100 of 120"), "{}", by_code.body);
    let none = get(&ui, "/ui/instances?code=NO_SUCH_CODE");
    assert!(none.body.contains("No instance passes these filters"));
    let waiting = get(&ui, "/ui/instances?status=waiting");
    assert!(waiting.body.contains("1–1 of 1"), "{}", waiting.body);
    for bad in [
        "status=sleeping",
        "page=0",
        "page=18446744073709551615",
        "deployment=x",
        "from=yesterday",
    ] {
        let a = get(&ui, &format!("/ui/instances?{bad}"));
        assert_eq!(a.status, 400, "{bad}: {}", a.body);
    }
}

#[test]
fn a_hostile_task_name_and_failure_message_are_shown_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let model = std::fs::read_to_string(sample("dbg08-long-outage.bpmn"))
        .unwrap()
        .replace(
            "name=\"Charge the card\"",
            "name=\"&lt;script&gt;alert(1)&lt;/script&gt;\"",
        );
    let path = dir.path().join("hostile.bpmn");
    std::fs::write(&path, model).unwrap();
    let scenario = dir.path().join("hostile.json");
    std::fs::write(
        &scenario,
        r#"{"tasks": {"payments.charge": [{"fail": {"code": "BAD", "class": "permanent",
            "message": "<img src=x onerror=alert(2)> 503"}}]}}"#,
    )
    .unwrap();
    let db = dir.path().join("h.db");
    ok(qflow()
        .arg("run")
        .arg(&path)
        .arg("--scenario")
        .arg(&scenario)
        .arg("--db")
        .arg(&db));
    let ui = start_ui(&db, &[], None);
    let list = get(&ui, "/ui/instances?status=failed");
    let id = list
        .body
        .split("href=\"/ui/instances/")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("a failed instance")
        .to_string();
    for page in [
        format!("/ui/instances/{id}"),
        "/ui/".to_string(),
        "/ui/instances".to_string(),
    ] {
        let a = get(&ui, &page);
        assert_eq!(a.status, 200);
        assert!(!a.body.contains("<script>alert"), "{page}: unescaped name");
        assert!(!a.body.contains("<img src=x"), "{page}: unescaped message");
    }
    let one = get(&ui, &format!("/ui/instances/{id}"));
    assert!(
        one.body.contains("&lt;img src=x onerror=alert(2)&gt; 503"),
        "{}",
        one.body
    );
    assert!(one.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn actions_are_refused_read_only_and_from_another_site() {
    let dir = tempfile::tempdir().unwrap();
    let db = outage_store(dir.path(), 1);
    let form = "application/x-www-form-urlencoded";
    // Read-only: no action, not even its preview.
    let ro = start_ui(&db, &[], None);
    assert_eq!(
        get(&ro, "/ui/actions/quarantine?instance=dbg08-2").status,
        403
    );
    drop(ro);
    let ui = start_ui(&db, &["--allow-actions"], None);
    let preview = get(&ui, "/ui/actions/quarantine?instance=dbg08-2");
    assert_eq!(preview.status, 200);
    let secret = preview
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the form's secret")
        .to_string();
    let quarantined = |ui: &Ui| {
        get(ui, "/ui/instances/dbg08-2")
            .body
            .contains("Quarantined since")
    };
    // Without the secret, or from another origin: refused, nothing changed.
    let forged = request(
        &ui,
        "POST",
        "/ui/actions/quarantine",
        &[("Content-Type", form)],
        "instance=dbg08-2",
    );
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(forged.body.contains("Nothing was changed"));
    let body = format!("instance=dbg08-2&csrf={secret}");
    let cross = request(
        &ui,
        "POST",
        "/ui/actions/quarantine",
        &[("Content-Type", form), ("Origin", "http://evil.example")],
        &body,
    );
    assert_eq!(cross.status, 403, "{}", cross.body);
    let site = request(
        &ui,
        "POST",
        "/ui/actions/quarantine",
        &[("Content-Type", form), ("Sec-Fetch-Site", "cross-site")],
        &body,
    );
    assert_eq!(site.status, 403);
    // Another site's name resolved to this machine (DNS rebinding): not
    // even a page is answered, so no form's secret can be read.
    let rebound = request(
        &ui,
        "GET",
        "/ui/actions/quarantine?instance=dbg08-2",
        &[("Host", "evil.example:7879")],
        "",
    );
    assert_eq!(rebound.status, 403, "{}", rebound.body);
    assert!(rebound.body.contains("loopback names only"));
    let localhost = request(&ui, "GET", "/ui/", &[("Host", "localhost:7879")], "");
    assert_eq!(localhost.status, 200);
    assert!(!quarantined(&ui));
    // The page's own confirmation: applied.
    let origin = format!("http://{}", ui.addr);
    let done = request(
        &ui,
        "POST",
        "/ui/actions/quarantine",
        &[("Content-Type", form), ("Origin", &origin)],
        &body,
    );
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("quarantined dbg08-2"), "{}", done.body);
    assert!(quarantined(&ui));
}

#[test]
fn with_a_token_a_page_needs_it_once_then_the_cookie() {
    let dir = tempfile::tempdir().unwrap();
    let db = outage_store(dir.path(), 1);
    let ui = start_ui(&db, &[], Some("s3cret"));
    assert_eq!(get(&ui, "/ui/").status, 401);
    assert_eq!(get(&ui, "/ui/?token=wrong").status, 401);
    let given = get(&ui, "/ui/instances?token=s3cret&status=failed");
    assert_eq!(given.status, 303, "{}", given.head);
    assert!(
        given.head.contains("Location: /ui/instances?status=failed"),
        "{}",
        given.head
    );
    assert!(given
        .head
        .contains("Set-Cookie: qflow_ui_token=s3cret; Path=/ui; HttpOnly; SameSite=Strict"));
    let with_cookie = request(
        &ui,
        "GET",
        "/ui/",
        &[("Cookie", "qflow_ui_token=s3cret")],
        "",
    );
    assert_eq!(with_cookie.status, 200);
    let bearer = request(
        &ui,
        "GET",
        "/ui/",
        &[("Authorization", "Bearer s3cret")],
        "",
    );
    assert_eq!(bearer.status, 200);
}

#[test]
fn another_address_than_loopback_needs_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let db = outage_store(dir.path(), 1);
    let out = qflow()
        .args(["ui", "--db"])
        .arg(&db)
        .args(["--listen", "0.0.0.0:0"])
        .env_remove("QFLOW_SERVE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("QFLOW_SERVE_TOKEN"));
    let missing = qflow()
        .args(["ui", "--db"])
        .arg(dir.path().join("absent.db"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

/// The form's secret, from a preview page.
fn secret_of(page: &Answer) -> String {
    page.body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the form's secret")
        .to_string()
}

fn confirm(ui: &Ui, action: &str, fields: &str) -> Answer {
    let origin = format!("http://{}", ui.addr);
    request(
        ui,
        "POST",
        &format!("/ui/actions/{action}"),
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Origin", &origin),
        ],
        fields,
    )
}

#[test]
fn an_unknown_outcome_is_resolved_from_its_preview() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("uo.db");
    ok(qflow()
        .arg("run")
        .arg(sample("dbg08-unknown-outcome.bpmn"))
        .arg("--db")
        .arg(&db));
    let ui = start_ui(&db, &["--allow-actions"], None);
    assert!(
        get(&ui, "/ui/").body.contains("1 to reconcile"),
        "the fleet's diagram counts the unknown outcome"
    );
    let page = get(&ui, "/ui/instances/dbg08-1");
    assert!(page
        .body
        .contains("href=\"/ui/actions/resolve?instance=dbg08-1\""));
    let preview = get(&ui, "/ui/actions/resolve?instance=dbg08-1");
    assert_eq!(preview.status, 200);
    assert!(
        preview.body.contains("CONNECTION_RESET_AFTER_SEND"),
        "{}",
        preview.body
    );
    let secret = secret_of(&preview);
    let bad = confirm(
        &ui,
        "resolve",
        &format!("csrf={secret}&instance=dbg08-1&node=charge&as=maybe"),
    );
    assert_eq!(bad.status, 400);
    let done = confirm(
        &ui,
        "resolve",
        &format!("csrf={secret}&instance=dbg08-1&node=charge&as=succeeded&variables=%7B%7D"),
    );
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(
        done.body
            .contains("resolved charge of dbg08-1: it is RUNNING; a running `qflow serve`"),
        "{}",
        done.body
    );
    // Nothing is left to resolve.
    assert_eq!(get(&ui, "/ui/actions/resolve?instance=dbg08-1").status, 400);
}

#[test]
fn a_dependency_is_paused_and_unpaused_from_the_fleet_page() {
    let dir = tempfile::tempdir().unwrap();
    let db = outage_store(dir.path(), 1);
    let ui = start_ui(&db, &["--allow-actions"], None);
    let fleet = get(&ui, "/ui/");
    let link = "/ui/actions/pause?kind=dependency&amp;value=payments.charge";
    assert!(fleet.body.contains(link), "{}", fleet.body);
    let preview = get(
        &ui,
        "/ui/actions/pause?kind=dependency&value=payments.charge",
    );
    assert!(
        preview.body.contains("1 retry parks of it are armed now"),
        "{}",
        preview.body
    );
    let unknown = get(
        &ui,
        "/ui/actions/pause?kind=dependency&value=payments.chrage",
    );
    assert_eq!(unknown.status, 400);
    assert!(
        unknown.body.contains("payments.charge"),
        "the known name is suggested"
    );
    assert_eq!(
        get(&ui, "/ui/actions/pause?kind=class&value=permanent").status,
        400
    );
    let secret = secret_of(&preview);
    let paused = confirm(
        &ui,
        "pause",
        &format!("csrf={secret}&kind=dependency&value=payments.charge&reason=provider+down"),
    );
    assert!(
        paused
            .body
            .contains("paused dependency payments.charge: 1 retry parks held"),
        "{}",
        paused.body
    );
    let fleet = get(&ui, "/ui/");
    assert!(fleet.body.contains("(web inspector)"), "who paused it");
    assert!(fleet.body.contains("provider down"));
    let unpaused = confirm(
        &ui,
        "unpause",
        &format!("csrf={secret}&kind=dependency&value=payments.charge"),
    );
    assert!(
        unpaused
            .body
            .contains("unpaused dependency payments.charge"),
        "{}",
        unpaused.body
    );
    assert!(get(&ui, "/ui/")
        .body
        .contains("Pauses in force</h2><p class=\"muted\">None."));
}

#[test]
fn a_paused_dependency_is_let_go_by_a_ramp_previewed_as_a_chart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ramp.db");
    // Three instances parked for a retry at +1m (each its own deployment).
    let model = std::fs::read_to_string(sample("dbg08-long-outage.bpmn")).unwrap();
    for i in 1..=3 {
        let path = dir.path().join(format!("m{i}.bpmn"));
        std::fs::write(&path, format!("{model}<!-- copy {i} -->\n")).unwrap();
        ok(qflow()
            .arg("run")
            .arg(&path)
            .args(["--scenario"])
            .arg(sample("scenarios/dbg08-long-outage.json"))
            .args(["--until", "PT30S", "--db"])
            .arg(&db));
    }
    ok(qflow()
        .args(["pause", "--dependency", "payments.charge", "--db"])
        .arg(&db));
    let ui = start_ui(&db, &["--allow-actions"], None);
    let plain = get(
        &ui,
        "/ui/actions/unpause?kind=dependency&value=payments.charge",
    );
    assert!(plain.body.contains("id=\"ramp-form\""), "{}", plain.body);
    assert!(!plain.body.contains("id=\"ramp-preview\""));
    let bad = get(
        &ui,
        "/ui/actions/unpause?kind=dependency&value=payments.charge&ramp=10,x%2Fmin",
    );
    assert!(bad.body.contains("id=\"ramp-error\""), "{}", bad.body);
    assert!(
        bad.body.contains("--ramp 10,50,200/min"),
        "a literal fix: {}",
        bad.body
    );
    assert!(
        !bad.body.contains("id=\"confirm\""),
        "no confirming a bad ramp"
    );
    let preview = get(
        &ui,
        "/ui/actions/unpause?kind=dependency&value=payments.charge&ramp=1%2Fmin",
    );
    assert_eq!(preview.status, 200, "{}", preview.body);
    let body = &preview.body;
    assert!(
        body.contains("id=\"ramp-preview\" data-parks=\"3\""),
        "{body}"
    );
    assert!(
        body.contains(
            "data-dependency=\"payments.charge\" data-peak-without=\"3\" data-peak-with=\"1\""
        ),
        "{body}"
    );
    assert!(body.contains("<svg"), "the chart is drawn in the page");
    assert!(
        body.contains("name=\"ramp\" value=\"1/min\""),
        "the confirmation carries the ramp"
    );
    assert!(body.contains("Unpause by this ramp"), "{body}");
    // Confirmed, the release is the one previewed, durable in the store.
    let secret = secret_of(&preview);
    let done = confirm(
        &ui,
        "unpause",
        &format!(
            "csrf={secret}&kind=dependency&value=payments.charge&ramp=1%2Fmin&reason=bank+back"
        ),
    );
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(
        done.body.contains(
            "unpaused dependency payments.charge: 3 retry parks released by ramp 1 (ramp 1/min)"
        ),
        "{}",
        done.body
    );
    let stats: serde_json::Value = serde_json::from_str(
        ok(qflow().args(["stats", "--format", "json", "--db"]).arg(&db)).trim(),
    )
    .unwrap();
    let r = &stats["releases"][0];
    assert_eq!(
        (r["ramp"].clone(), r["reason"].clone()),
        ("1/min".into(), "bank back".into()),
        "{stats}"
    );
    assert_eq!(
        stats["paused"],
        serde_json::json!([]),
        "the ramp lifted the pause"
    );
}

#[test]
fn serve_answers_the_pages_under_ui_with_its_token_and_its_json_routes_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("done.db");
    // Only FAILED instances: serve needs no handler for them.
    ok(qflow()
        .arg("simulate")
        .arg(sample("dbg08-long-outage.bpmn"))
        .args(["--jobs", "2", "--outage", "20h", "--db"])
        .arg(&db));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = qflow()
        .args(["serve", "--db"])
        .arg(&db)
        .args(["--listen", &addr])
        .env("QFLOW_SERVE_TOKEN", "t0ken")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("listening"), "{line}");
    let ui = Ui { child, addr };
    assert_eq!(get(&ui, "/ui/").status, 401);
    let page = request(
        &ui,
        "GET",
        "/ui/instances/dbg08-1",
        &[("Cookie", "qflow_ui_token=t0ken")],
        "",
    );
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("repair by migration"),
        "serve's pages offer the actions"
    );
    // The endpoint's own routes still take the bearer token only.
    let json = get(&ui, "/instances/dbg08-1");
    assert_eq!(json.status, 401);
    let json = request(
        &ui,
        "GET",
        "/instances/dbg08-1",
        &[("Authorization", "Bearer t0ken")],
        "",
    );
    assert_eq!(json.status, 200);
    assert!(json.head.contains("application/json"));
    assert_eq!(
        get(&ui, "/uix").status,
        401,
        "only /ui and /ui/… are the inspector's"
    );
}

#[test]
fn a_live_page_streams_its_fragment_as_server_sent_events() {
    let dir = tempfile::tempdir().unwrap();
    let db = outage_store(dir.path(), 2);
    let ui = start_ui(&db, &[], None);
    let mut s = TcpStream::connect(&ui.addr).unwrap();
    write!(
        s,
        "GET /ui/events?view=fleet HTTP/1.1\r\nHost: {}\r\n\r\n",
        ui.addr
    )
    .unwrap();
    // The head, then the first event: the fleet's live part.
    let mut reader = BufReader::new(s);
    let mut text = String::new();
    while !text.contains("event: fragment\n") || !text.ends_with("\n\n") {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        text.push_str(&line);
    }
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("Content-Type: text/event-stream"), "{text}");
    assert!(
        text.contains("data: ") && text.contains("data-count=\"failed\">2<"),
        "{text}"
    );
    let instance = get(&ui, "/ui/instances/dbg08-1");
    assert!(instance
        .body
        .contains("data-live=\"/ui/events?view=instance&amp;id=dbg08-1\""));
}

#[test]
fn every_failed_instance_of_a_deployment_is_repaired_from_one_preview() {
    let dir = tempfile::tempdir().unwrap();
    let db = outage_store(dir.path(), 3);
    ok(qflow()
        .arg("deploy")
        .arg(sample("dbg08-repaired.bpmn"))
        .arg("--db")
        .arg(&db));
    let ui = start_ui(&db, &["--allow-actions"], None);
    let fleet = get(&ui, "/ui/");
    assert!(fleet
        .body
        .contains("href=\"/ui/actions/migrate-all?deployment=1\""));
    let preview = get(&ui, "/ui/actions/migrate-all?deployment=1");
    assert_eq!(preview.status, 200, "{}", preview.body);
    assert!(
        preview
            .body
            .contains("3 FAILED instances move to deployment 2"),
        "{}",
        preview.body
    );
    assert_eq!(preview.body.matches("charge → chargeCard").count(), 3);
    let secret = secret_of(&preview);
    let fields = |count: u32| {
        format!("csrf={secret}&deployment=1&to=2&map=charge%3DchargeCard&count={count}")
    };
    // A preview of another number of instances is not confirmed.
    let stale = confirm(&ui, "migrate-all", &fields(2));
    assert_eq!(stale.status, 400);
    assert!(stale
        .body
        .contains("3 FAILED instances now, not the 2 previewed"));
    assert!(get(&ui, "/ui/instances?status=failed")
        .body
        .contains("1–3 of 3"));
    let done = confirm(&ui, "migrate-all", &fields(3));
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(
        done.body
            .contains("applied: 3 instances moved to deployment 2"),
        "{}",
        done.body
    );
    assert!(get(&ui, "/ui/instances?status=failed")
        .body
        .contains("No instance passes these filters"));
    let nothing = get(&ui, "/ui/actions/migrate-all?deployment=1");
    assert!(nothing.body.contains("has no FAILED instance"));
}

/// The fleet page's live load per dependency (attempts and requests per
/// minute, the last 60 minutes), its circuit breakers and its ramps in
/// force beside the pauses: `/ui/fleet.json` answers the engine's reads,
/// the same `qflow stats --format json` prints, and the page shows them.
#[test]
fn the_fleet_json_and_page_give_the_load_per_minute_the_breakers_and_the_ramps_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("breaker.db");
    let handlers = dir.path().join("handlers.toml");
    std::fs::write(
        &handlers,
        "[tasks.\"payments.charge\"]\ncommand = \"true\"\n\n[tasks.\"payments.charge\".breaker]\n\
         consecutive_failures = 5\nopen_for = \"5m\"\ncanaries = 2\nrelease_ramp = \"10,50,200/min\"\n",
    )
    .unwrap();
    ok(qflow()
        .arg("simulate")
        .arg(sample("dbg08-long-outage.bpmn"))
        .args([
            "--jobs",
            "20",
            "--outage",
            "2h",
            "--format",
            "json",
            "--handlers",
        ])
        .arg(&handlers)
        .arg("--db")
        .arg(&db));
    // One instance parked for a retry, held by a pause, let go by a ramp.
    ok(qflow()
        .arg("run")
        .arg(sample("dbg08-long-outage.bpmn"))
        .args(["--until", "1h", "--db"])
        .arg(&db));
    ok(qflow()
        .args(["pause", "--dependency", "payments.charge", "--db"])
        .arg(&db));
    ok(qflow()
        .args([
            "unpause",
            "--dependency",
            "payments.charge",
            "--ramp",
            "1/min",
            "--db",
        ])
        .arg(&db));
    let stats: serde_json::Value = serde_json::from_str(
        ok(qflow().args(["stats", "--format", "json", "--db"]).arg(&db)).trim(),
    )
    .unwrap();
    let ui = start_ui(&db, &[], None);
    let answer = get(&ui, "/ui/fleet.json");
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.head.contains("application/json"), "{}", answer.head);
    let v: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    // The window: 60 minutes, a count per minute, the same read as stats.
    let w = &v["load_window"];
    assert_eq!(w, &stats["load_window"], "one read, two faces");
    assert_eq!(w["minutes"], 60);
    assert_eq!(
        w["last_minute"].as_i64().unwrap() - w["first_minute"].as_i64().unwrap(),
        59
    );
    let d = &w["dependencies"][0];
    assert_eq!(d["dependency"], "payments.charge", "{v}");
    let sum = |k: &str| -> u64 {
        let per = d[k].as_array().unwrap();
        assert_eq!(per.len(), 60, "{k}");
        per.iter().map(|n| n.as_u64().unwrap()).sum()
    };
    let (attempts, requests) = (sum("attempts_per_minute"), sum("requests_per_minute"));
    assert!(attempts > 0, "{v}");
    assert_eq!(requests, attempts, "a task's attempt is one request");
    // The breaker and the ramp in force.
    assert_eq!(v["breakers"][0]["dependency"], "payments.charge", "{v}");
    assert_eq!(v["breakers"], stats["breakers"]);
    let ramp = &v["releases_in_force"][0];
    assert_eq!(ramp["ramp"], "1/min", "{v}");
    assert_eq!(ramp["waiting"], 1, "{v}");
    assert_eq!(
        v["paused"],
        serde_json::json!([]),
        "the ramp lifted the pause"
    );
    // The page presents the same figures.
    let page = get(&ui, "/ui/").body;
    assert!(page.contains("id=\"load-per-minute\""), "{page}");
    assert!(page.contains("the last 60 minutes"), "{page}");
    assert!(
        page.contains(&format!(
            "<tr data-dependency=\"payments.charge\"><td>payments.charge</td><td class=\"num\" data-attempts=\"{attempts}\">{attempts}</td><td class=\"num\" data-requests=\"{requests}\">{requests}</td>"
        )),
        "{page}"
    );
    assert!(page.contains("requests, per minute"), "the chart's unit");
    // Beside the pauses: after them, before the parks by cause.
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("no {s} in {page}"));
    let (pauses, breakers, ramps, causes) = (
        at("Pauses in force"),
        at("id=\"breakers-table\""),
        at("id=\"ramps-table\""),
        at("Retry parks by cause"),
    );
    assert!(pauses < breakers && breakers < ramps && ramps < causes);
    assert!(page.contains("ramp 1/min"), "{page}");
    assert!(page.contains("data-waiting=\"1\""), "{page}");
    // The 20 completed, on their end event: the diagram and the table.
    assert!(page.contains("20 completed</text>"), "{page}");
    assert!(page.contains("data-completed=\"20\""), "{page}");
}
