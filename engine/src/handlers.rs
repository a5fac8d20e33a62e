//! The handlers file (TOML) of `qflow run --handlers` and `qflow serve`, and
//! the contract that turns what a command or an HTTP endpoint answered into
//! an attempt's outcome. Pure: the processes and requests themselves are the
//! binary's; what their answers *mean* is decided here, once.
//!
//! ```toml
//! [tasks."payments.charge"]
//! command = "./charge.sh"          # or: url = "http://127.0.0.1:8080/charge"
//! timeout = "PT30S"                # no answer by then: an unknown outcome
//!
//! [channels.bank]
//! url = "http://127.0.0.1:8081/authorize"   # the outbox relay POSTs here
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::instance::event::{FailureClass, TaskOutcome};
use crate::runtime::breaker::{BreakerConfig, Trip};
use crate::runtime::ramp::Ramp;

pub use qflow_instance::codes::handler::{
    is_handler_code, EXIT, HTTP_429, INTERRUPTED, OUTPUT, TIMEOUT, UNREACHABLE,
};

/// A command's standard output, or an endpoint's answer body, at most: past
/// it the attempt fails as [`OUTPUT`] (permanent) naming the size, and no
/// more of it is kept (a result of variables is never that large; a handler
/// printing that much has broken its contract).
pub const OUTPUT_LIMIT: usize = 1 << 20;

/// The end of a command's standard error that is kept (its last 200
/// characters go into a failure's message).
pub const STDERR_TAIL: usize = 4 * 1024;

/// The default of a task's `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the relay waits for a channel's endpoint to take a request.
pub const DEFAULT_DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// How a task's attempts run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runner {
    /// `command = "…"`: run by `sh -c` in the handlers file's directory.
    Shell(String),
    /// `command = ["prog", "arg", …]`: run directly, without a shell.
    Argv(Vec<String>),
    /// `url = "http://…"`: POSTed to.
    Url(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskHandler {
    pub runner: Runner,
    /// No answer by then: an unknown outcome (`q.handler.timeout`).
    pub timeout: Duration,
    /// At most this many attempts at once under `qflow serve` (a bulkhead).
    pub concurrency: Option<usize>,
    /// `[tasks."NAME".breaker]`: the task's circuit breaker under `qflow
    /// serve` (docs/handlers.md, "Circuit breaker").
    pub breaker: Option<BreakerConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelRelay {
    /// The outbox relay POSTs each request here.
    pub url: String,
    /// How long one delivery may take before it counts as failed (the
    /// outbox delivers it again, with the same idempotency key).
    pub timeout: Duration,
    /// At most this many deliveries at once under `qflow serve`.
    pub concurrency: Option<usize>,
}

/// A parsed handlers file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HandlersFile {
    pub tasks: BTreeMap<String, TaskHandler>,
    pub channels: BTreeMap<String, ChannelRelay>,
    /// The file's directory: where commands run and relative paths resolve.
    pub dir: PathBuf,
}

/// A handlers file that is not what the format says, with the place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {message}")]
pub struct HandlersError {
    /// `tasks."payments.charge".timeout`, or the line and column of a TOML
    /// syntax error.
    pub place: String,
    pub message: String,
}

fn err(place: impl Into<String>, message: impl Into<String>) -> HandlersError {
    HandlersError {
        place: place.into(),
        message: message.into(),
    }
}

fn quoted(name: &str) -> String {
    crate::runtime::scenario::key(name)
}

impl HandlersFile {
    /// Read and parse the file at `path`.
    pub fn read(path: &Path) -> Result<HandlersFile, HandlersError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| err(path.display().to_string(), format!("cannot read: {e}")))?;
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        HandlersFile::parse(&text, dir)
    }

    /// Parse a handlers file's text; `dir` is where its commands run.
    pub fn parse(text: &str, dir: PathBuf) -> Result<HandlersFile, HandlersError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let place = match e.span() {
                Some(r) => {
                    let before = &text[..r.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                    format!("line {line}, column {col}")
                }
                None => "the file".into(),
            };
            err(place, format!("not valid TOML: {}", e.message()))
        })?;
        let mut file = HandlersFile {
            dir,
            ..HandlersFile::default()
        };
        for (key, value) in &table {
            match (key.as_str(), value) {
                ("tasks", toml::Value::Table(tasks)) => {
                    for (name, spec) in tasks {
                        let place = format!("tasks.{}", quoted(name));
                        file.tasks.insert(name.clone(), task(&place, spec)?);
                    }
                }
                ("channels", toml::Value::Table(channels)) => {
                    for (name, spec) in channels {
                        let place = format!("channels.{}", quoted(name));
                        file.channels.insert(name.clone(), channel(&place, spec)?);
                    }
                }
                ("tasks" | "channels", _) => {
                    return Err(err(key, "expected a table ([tasks.\"name\"] or [channels.name])"))
                }
                _ => {
                    return Err(err(
                        key,
                        "unknown section: a handlers file has [tasks.\"<q:task name>\"] and [channels.<channel>] tables",
                    ))
                }
            }
        }
        Ok(file)
    }
}

fn known(place: &str, table: &toml::Table, keys: &[&str]) -> Result<(), HandlersError> {
    for k in table.keys() {
        if !keys.contains(&k.as_str()) {
            let hint = crate::suggest::closest(k, keys.iter().copied())
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            return Err(err(
                format!("{place}.{k}"),
                format!("unknown key; {hint}the keys are {}", keys.join(", ")),
            ));
        }
    }
    Ok(())
}

fn duration(place: &str, v: &toml::Value) -> Result<Duration, HandlersError> {
    let toml::Value::String(s) = v else {
        return Err(err(
            place,
            "expected an ISO-8601 duration such as \"PT30S\"",
        ));
    };
    match crate::duration::parse(s) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(err(place, "must be longer than zero")),
        Err(e) => Err(err(place, format!("`{s}`: {e}"))),
    }
}

fn url(place: &str, v: &toml::Value) -> Result<String, HandlersError> {
    match v {
        toml::Value::String(u) if u.starts_with("http://") || u.starts_with("https://") => {
            Ok(u.clone())
        }
        toml::Value::String(u) => Err(err(
            place,
            format!("`{u}` is not an http:// or https:// URL"),
        )),
        _ => Err(err(place, "expected a URL string")),
    }
}

fn task(place: &str, spec: &toml::Value) -> Result<TaskHandler, HandlersError> {
    let toml::Value::Table(t) = spec else {
        return Err(err(place, "expected a table with `command` or `url`"));
    };
    known(
        place,
        t,
        &["command", "url", "timeout", "concurrency", "breaker"],
    )?;
    let runner = match (t.get("command"), t.get("url")) {
        (Some(_), Some(_)) => return Err(err(place, "has both `command` and `url`: give one")),
        (None, None) => return Err(err(place, "needs `command` or `url`")),
        (Some(toml::Value::String(c)), None) if !c.trim().is_empty() => Runner::Shell(c.clone()),
        (Some(toml::Value::Array(a)), None) if !a.is_empty() => Runner::Argv(
            a.iter()
                .enumerate()
                .map(|(i, v)| match v {
                    toml::Value::String(s) => Ok(s.clone()),
                    _ => Err(err(format!("{place}.command[{i}]"), "expected a string")),
                })
                .collect::<Result<_, _>>()?,
        ),
        (Some(_), None) => {
            return Err(err(
                format!("{place}.command"),
                "expected a command line (a string, run by sh) or a non-empty array of strings",
            ))
        }
        (None, Some(u)) => Runner::Url(url(&format!("{place}.url"), u)?),
    };
    let timeout = match t.get("timeout") {
        Some(v) => duration(&format!("{place}.timeout"), v)?,
        None => DEFAULT_TIMEOUT,
    };
    let concurrency = concurrency(place, t)?;
    let breaker = match t.get("breaker") {
        Some(b) => Some(breaker(&format!("{place}.breaker"), b)?),
        None => None,
    };
    Ok(TaskHandler {
        runner,
        timeout,
        concurrency,
        breaker,
    })
}

fn channel(place: &str, spec: &toml::Value) -> Result<ChannelRelay, HandlersError> {
    let toml::Value::Table(t) = spec else {
        return Err(err(place, "expected a table with `url`"));
    };
    if t.contains_key("breaker") {
        return Err(err(
            format!("{place}.breaker"),
            "a breaker is declared on a task table ([tasks.\"NAME\".breaker]); a channel's deliveries have no breaker yet: pause the channel with `qflow pause --dependency` instead",
        ));
    }
    known(place, t, &["url", "timeout", "concurrency"])?;
    let url = match t.get("url") {
        Some(u) => url(&format!("{place}.url"), u)?,
        None => return Err(err(place, "needs `url`: where the outbox relay POSTs")),
    };
    let timeout = match t.get("timeout") {
        Some(v) => duration(&format!("{place}.timeout"), v)?,
        None => DEFAULT_DELIVERY_TIMEOUT,
    };
    let concurrency = concurrency(place, t)?;
    Ok(ChannelRelay {
        url,
        timeout,
        concurrency,
    })
}

/// A `breaker` table: one threshold (`consecutive_failures = N`, or
/// `failure_ratio = R` with `window` and optionally `min_attempts`), then
/// `open_for`, `canaries` and optionally `release_ramp`. Durations are
/// ISO-8601 (`PT30S`) or short (`30s`, `1m`), as `--until` takes them.
fn breaker(place: &str, spec: &toml::Value) -> Result<BreakerConfig, HandlersError> {
    const KEYS: &[&str] = &[
        "consecutive_failures",
        "failure_ratio",
        "window",
        "min_attempts",
        "open_for",
        "canaries",
        "release_ramp",
    ];
    let toml::Value::Table(t) = spec else {
        return Err(err(
            place,
            "expected a table, as in [tasks.\"NAME\".breaker] with consecutive_failures = 5, open_for = \"30s\", canaries = 2",
        ));
    };
    known(place, t, KEYS)?;
    let whole = |key: &str, what: &str| -> Result<Option<u32>, HandlersError> {
        match t.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(n)) if *n >= 1 && *n <= u32::MAX as i64 => {
                Ok(Some(*n as u32))
            }
            Some(_) => Err(err(
                format!("{place}.{key}"),
                format!("expected a whole number of 1 or more: {what}"),
            )),
        }
    };
    let span = |key: &str| -> Result<Option<i64>, HandlersError> {
        let Some(v) = t.get(key) else {
            return Ok(None);
        };
        let p = format!("{place}.{key}");
        let toml::Value::String(s) = v else {
            return Err(err(p, "expected a duration such as \"30s\" or \"PT30S\""));
        };
        match crate::duration::parse_input(s) {
            Ok(d) if !d.is_zero() => Ok(Some(d.as_millis().min(i64::MAX as u128) as i64)),
            Ok(_) => Err(err(p, "must be longer than zero")),
            Err(e) => Err(err(p, format!("`{s}`: {e}"))),
        }
    };
    let consecutive = whole("consecutive_failures", "how many failures in a row open it")?;
    let ratio = match t.get("failure_ratio") {
        None => None,
        Some(toml::Value::Float(r)) if *r > 0.0 && *r <= 1.0 => Some(*r),
        Some(toml::Value::Integer(1)) => Some(1.0),
        Some(_) => return Err(err(
            format!("{place}.failure_ratio"),
            "expected a number above 0 and at most 1 (0.5: half the attempts in the window failed)",
        )),
    };
    let window = span("window")?;
    let min_attempts = whole(
        "min_attempts",
        "how many attempts the window needs before a ratio counts",
    )?;
    let trip = match (consecutive, ratio) {
        (Some(_), Some(_)) => {
            return Err(err(
                place,
                "has both `consecutive_failures` and `failure_ratio`: give one threshold",
            ))
        }
        (None, None) => {
            return Err(err(
                place,
                "needs a threshold: `consecutive_failures = N`, or `failure_ratio = R` with `window = \"1m\"`",
            ))
        }
        (Some(n), None) => {
            for key in ["window", "min_attempts"] {
                if t.contains_key(key) {
                    return Err(err(
                        format!("{place}.{key}"),
                        "belongs to `failure_ratio`; `consecutive_failures` counts failures in a row, over no window: remove it",
                    ));
                }
            }
            Trip::Consecutive(n)
        }
        (None, Some(r)) => Trip::Ratio {
            per_mille: ((r * 1000.0).round() as u32).max(1),
            window_ms: window.ok_or_else(|| {
                err(
                    place,
                    "`failure_ratio` needs `window`: the span its attempts are counted over, as in window = \"1m\"",
                )
            })?,
            min_attempts: min_attempts.unwrap_or(DEFAULT_MIN_ATTEMPTS),
        },
    };
    let open_for_ms = span("open_for")?.ok_or_else(|| {
        err(
            place,
            "needs `open_for`: how long it holds the dependency before canaries go, as in open_for = \"30s\"",
        )
    })?;
    let canaries = whole("canaries", "how many canaries must succeed to close it")?.unwrap_or(1);
    let release_ramp = match t.get("release_ramp") {
        None => None,
        Some(toml::Value::String(r)) => {
            Some(Ramp::parse(r).map_err(|e| err(format!("{place}.release_ramp"), e))?)
        }
        Some(_) => {
            return Err(err(
                format!("{place}.release_ramp"),
                "expected a ramp such as \"10,50,200/min\"",
            ))
        }
    };
    Ok(BreakerConfig {
        trip,
        open_for_ms,
        canaries,
        release_ramp,
    })
}

/// A failure ratio's minimum of attempts in its window when none is given:
/// a ratio over one or two attempts says little.
pub const DEFAULT_MIN_ATTEMPTS: u32 = 10;

/// `concurrency = N`: a positive integer, if given.
fn concurrency(place: &str, t: &toml::Table) -> Result<Option<usize>, HandlersError> {
    match t.get("concurrency") {
        None => Ok(None),
        Some(toml::Value::Integer(n)) if *n >= 1 => Ok(Some(*n as usize)),
        Some(_) => Err(err(
            format!("{place}.concurrency"),
            "expected a whole number of 1 or more: how many requests to it may run at once",
        )),
    }
}

/// A success's body: a JSON object of variables, or nothing at all.
fn variables(task: &str, body: &str) -> TaskOutcome {
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return TaskOutcome::Ok(BTreeMap::new());
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(m)) => TaskOutcome::Ok(m.into_iter().collect()),
        Ok(other) => fail(
            OUTPUT,
            FailureClass::Permanent,
            format!("the handler of `{task}` answered {other}, not a JSON object of variables"),
        ),
        Err(e) => fail(
            OUTPUT,
            FailureClass::Permanent,
            format!("the handler of `{task}` answered text that is not JSON ({e})"),
        ),
    }
}

fn fail(code: &str, class: FailureClass, message: String) -> TaskOutcome {
    TaskOutcome::Fail {
        code: code.to_string(),
        class,
        retry_after: None,
        message: Some(message),
    }
}

/// The error shape a failing command prints (or an endpoint answers):
/// `{"code": …, "class": …, "retryAfter": "PT…"}` or `{"bpmnError": "CODE"}`.
fn error_shape(body: &str) -> Option<TaskOutcome> {
    let v: Value = serde_json::from_str(body.trim()).ok()?;
    let o = v.as_object()?;
    if let Some(code) = o.get("bpmnError").and_then(Value::as_str) {
        return Some(TaskOutcome::BpmnError {
            code: code.to_string(),
        });
    }
    let code = o.get("code")?.as_str()?.to_string();
    let class = FailureClass::parse(o.get("class")?.as_str()?)?;
    let retry_after = match (class, o.get("retryAfter").and_then(Value::as_str)) {
        (FailureClass::RateLimited | FailureClass::Deferred, Some(d)) => {
            Some(crate::duration::parse(d).ok()?)
        }
        // A deferral names when: without it the answer is no failure shape.
        (FailureClass::Deferred, None) => return None,
        _ => None,
    };
    Some(TaskOutcome::Fail {
        code,
        class,
        retry_after,
        message: o.get("message").and_then(Value::as_str).map(str::to_string),
    })
}

/// What a command's run means. `exit`: its exit code (`None`: killed by a
/// signal); `stdout`: what it printed.
pub fn command_outcome(task: &str, exit: Option<i32>, stdout: &str, stderr: &str) -> TaskOutcome {
    if exit == Some(0) {
        return variables(task, stdout);
    }
    if let Some(outcome) = error_shape(stdout) {
        return outcome;
    }
    let how = match exit {
        Some(c) => format!("exited with status {c}"),
        None => "was killed by a signal".to_string(),
    };
    let tail: String = stderr
        .trim()
        .chars()
        .rev()
        .take(200)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let said = if tail.is_empty() {
        String::new()
    } else {
        format!(": {tail}")
    };
    fail(
        EXIT,
        FailureClass::Transient,
        format!("the command of `{task}` {how} without a JSON error on stdout{said}"),
    )
}

/// What a command's run means, from the bytes it printed: `stdout_total`
/// is how many it printed in all (only the first [`OUTPUT_LIMIT`] are
/// kept). Output over the limit, or a success's output that is not UTF-8,
/// is a broken contract ([`OUTPUT`], permanent), whatever the exit.
pub fn command_output(
    task: &str,
    exit: Option<i32>,
    stdout: &[u8],
    stdout_total: u64,
    stderr: &[u8],
) -> TaskOutcome {
    let stderr = String::from_utf8_lossy(stderr);
    if stdout_total > OUTPUT_LIMIT as u64 {
        return fail(
            OUTPUT,
            FailureClass::Permanent,
            format!(
                "the command of `{task}` printed {stdout_total} bytes on stdout, over the limit of 1 MiB ({OUTPUT_LIMIT} bytes)"
            ),
        );
    }
    match std::str::from_utf8(stdout) {
        Ok(text) => command_outcome(task, exit, text, &stderr),
        Err(e) if exit == Some(0) => fail(
            OUTPUT,
            FailureClass::Permanent,
            format!(
                "the command of `{task}` exited 0 with output that is not UTF-8 (a byte that is not at offset {}): a result is a JSON object",
                e.valid_up_to()
            ),
        ),
        Err(_) => command_outcome(task, exit, &String::from_utf8_lossy(stdout), &stderr),
    }
}

/// What an endpoint's answer means, from its body's bytes; `over_limit`:
/// the body was longer than [`OUTPUT_LIMIT`] (and not read past it). A
/// success whose body is over the limit or not UTF-8 is a broken contract
/// ([`OUTPUT`], permanent); a failure is classified by its status alone
/// then.
pub fn http_answer(
    task: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
    over_limit: bool,
) -> TaskOutcome {
    let success = (200..300).contains(&status);
    if over_limit {
        if success {
            return fail(
                OUTPUT,
                FailureClass::Permanent,
                format!(
                    "the endpoint of `{task}` answered HTTP {status} with a body over the limit of 1 MiB ({OUTPUT_LIMIT} bytes)"
                ),
            );
        }
        return http_outcome(task, status, retry_after, "");
    }
    match std::str::from_utf8(body) {
        Ok(text) => http_outcome(task, status, retry_after, text),
        Err(e) if success => fail(
            OUTPUT,
            FailureClass::Permanent,
            format!(
                "the endpoint of `{task}` answered HTTP {status} with a body that is not UTF-8 (a byte that is not at offset {}): a result is a JSON object",
                e.valid_up_to()
            ),
        ),
        Err(_) => http_outcome(task, status, retry_after, &String::from_utf8_lossy(body)),
    }
}

/// What an endpoint's answer means: 2xx a result, 429 rate-limited
/// (honouring `Retry-After`, in seconds or an HTTP date's distance from
/// `now`), 5xx transient, any other status permanent; an error shape in
/// the body refines a failure's code and class.
pub fn http_outcome(
    task: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
) -> TaskOutcome {
    if (200..300).contains(&status) {
        return variables(task, body);
    }
    if let Some(TaskOutcome::BpmnError { code }) = error_shape(body) {
        return TaskOutcome::BpmnError { code };
    }
    let shaped = error_shape(body);
    let (class, code) = match status {
        429 => (FailureClass::RateLimited, HTTP_429.to_string()),
        500..=599 => (FailureClass::Transient, format!("q.handler.http-{status}")),
        _ => (FailureClass::Permanent, format!("q.handler.http-{status}")),
    };
    let code = match &shaped {
        Some(TaskOutcome::Fail { code, .. }) => code.clone(),
        _ => code,
    };
    let retry_after = match (class, &shaped) {
        (
            FailureClass::RateLimited,
            Some(TaskOutcome::Fail {
                retry_after: Some(d),
                ..
            }),
        ) => Some(*d),
        (FailureClass::RateLimited, _) => retry_after,
        _ => None,
    };
    let snippet: String = body.trim().chars().take(200).collect();
    TaskOutcome::Fail {
        code,
        class,
        retry_after,
        message: Some(format!(
            "the endpoint of `{task}` answered HTTP {status}{}",
            if snippet.is_empty() {
                String::new()
            } else {
                format!(": {snippet}")
            }
        )),
    }
}

/// How much of a counterpart's body a refused delivery keeps (characters).
pub const BODY_SUMMARY: usize = 200;

/// What a counterpart's answer to one delivery means (the delivery
/// contract, docs/handlers.md): 2xx delivered; a 4xx other than 408 and
/// 429 a rejection, poisoned at once, with the status and the body's first
/// [`BODY_SUMMARY`] characters; 429 or 503 with `Retry-After` a failed
/// delivery tried again no sooner than asked; anything else a failed
/// delivery on the channel's curve.
pub fn delivery_outcome(
    url: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
) -> crate::embed::Delivery {
    use crate::embed::Delivery;
    if (200..300).contains(&status) {
        return Delivery::Delivered;
    }
    let summary: String = body.trim().chars().take(BODY_SUMMARY).collect();
    let said = if summary.is_empty() {
        format!("{url} answered HTTP {status}")
    } else {
        format!("{url} answered HTTP {status}: {summary}")
    };
    match (status, retry_after) {
        (429 | 503, Some(after)) => Delivery::RetryAfter(said, after),
        (400..=499, _) if status != 408 && status != 429 => Delivery::Rejected(said),
        _ => Delivery::Failed(said),
    }
}

/// A `Retry-After` header's value: delay-seconds, or an HTTP date (its
/// distance from `now_unix_s`, never negative).
pub fn retry_after(value: &str, now_unix_s: i64) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = http_date(v)?;
    Some(Duration::from_secs(
        at.saturating_sub(now_unix_s).max(0) as u64
    ))
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) as Unix seconds.
fn http_date(v: &str) -> Option<i64> {
    let parts: Vec<&str> = v.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = months.iter().position(|x| x == month)? as i64 + 1;
    let (d, y): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, mi, s] = hms.as_slice() else {
        return None;
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + s)
}

/// A task that gave no answer in time, or whose connection dropped after
/// the request went out: the effect may have happened.
pub fn unknown_outcome(task: &str, what: &str) -> TaskOutcome {
    fail(
        TIMEOUT,
        FailureClass::UnknownOutcome,
        format!("the handler of `{task}` {what}: the effect may have happened, so it is not retried blindly"),
    )
}

pub use qflow_instance::codes::handler::interrupted;

/// A handler that could not be reached or started: nothing happened.
pub fn unreachable(task: &str, what: &str) -> TaskOutcome {
    fail(
        UNREACHABLE,
        FailureClass::Transient,
        format!("the handler of `{task}` could not be reached: {what}"),
    )
}

#[cfg(test)]
mod tests;
