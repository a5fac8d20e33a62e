//! The scenario of a local run (docs/run.md): the world around one instance.
//!
//! Every list is consumed one entry per attempt (tasks), per request (channels)
//! or per delivery (deliveries), and its last entry repeats. Without a scenario
//! tasks succeed, counterparts answer `{}` at once, deliveries succeed.
//!
//! Besides the scripted handlers and counterparts, `events` scripts what arrives from outside after the
//! fact, in order: a late queue `redeliver` of a task, and the `resolve` of an
//! unknown outcome (the operator's reconciliation). Each event is delivered at
//! its `at` (virtual time since the instance started) or, without `at`, as
//! soon as the instance has nothing else to do.
//!
//! The parser is hand-written over `serde_json::Value` so every error names the
//! field it is about, as a path (`tasks."payments.charge"[1].fail.class`).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::outcome::Expectation;

pub use qflow_instance::event::{
    ChannelOutcome, DeliveryOutcome, ExternalEvent, FailureClass, Resolution, TaskOutcome,
};

#[derive(Debug, Clone, PartialEq)]
pub struct ScheduledEvent {
    /// Virtual time since the instance started; `None`: when idle.
    pub at: Option<Duration>,
    pub event: ExternalEvent,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scenario {
    pub variables: BTreeMap<String, Value>,
    pub tasks: BTreeMap<String, Vec<TaskOutcome>>,
    pub channels: BTreeMap<String, Vec<ChannelOutcome>>,
    pub deliveries: BTreeMap<String, Vec<DeliveryOutcome>>,
    pub events: Vec<ScheduledEvent>,
    /// `"expect"`: how a run of this scenario must end (`qflow test` holds
    /// it to that; `qflow run` holds it to `--expect` only).
    pub expect: Option<Expectation>,
    /// `"model"`: the model this scenario is for, a path relative to the
    /// scenario's folder, when it is not the one whose stem it has.
    pub model: Option<String>,
}

impl Scenario {
    /// The outcome of the `n`-th run (0-based) of a handler: the list's entry,
    /// its last entry past the end, success without a list.
    pub fn task_outcome(&self, task: &str, n: usize) -> TaskOutcome {
        match self.tasks.get(task) {
            Some(list) if !list.is_empty() => list[n.min(list.len() - 1)].clone(),
            _ => TaskOutcome::Ok(BTreeMap::new()),
        }
    }

    /// The `n`-th delivery (0-based) of a request on a channel: success
    /// without a list.
    pub fn delivery_outcome(&self, channel: &str, n: usize) -> DeliveryOutcome {
        match self.deliveries.get(channel) {
            Some(list) if !list.is_empty() => list[n.min(list.len() - 1)].clone(),
            _ => DeliveryOutcome::Ok,
        }
    }

    /// What the counterpart does with the `n`-th request delivered on a
    /// channel: without a list, it answers `{}` at once.
    pub fn channel_outcome(&self, channel: &str, n: usize) -> ChannelOutcome {
        match self.channels.get(channel) {
            Some(list) if !list.is_empty() => list[n.min(list.len() - 1)].clone(),
            _ => ChannelOutcome::Respond {
                body: Value::Object(Map::new()),
                after: None,
            },
        }
    }

    pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        let v: Value = serde_json::from_str(text).map_err(|e| ScenarioError {
            path: String::new(),
            message: format!("not valid JSON: {e}"),
        })?;
        let top = object(&v, "")?;
        // `$schema` points an editor at docs/scenario.schema.json; the run ignores it.
        known(
            top,
            "",
            &[
                "$schema",
                "variables",
                "tasks",
                "channels",
                "deliveries",
                "events",
                "expect",
                "model",
            ],
        )?;
        let mut s = Scenario::default();
        if let Some(e) = top.get("expect") {
            let text = string(e, "expect")?;
            s.expect = Some(Expectation::parse(text).map_err(|m| err("expect", m))?);
        }
        if let Some(m) = top.get("model") {
            s.model = Some(string(m, "model")?.to_string());
        }
        if let Some(vars) = top.get("variables") {
            s.variables = object(vars, "variables")?
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        }
        if let Some(t) = top.get("tasks") {
            for (name, list) in object(t, "tasks")? {
                let path = format!("tasks.{}", key(name));
                let items = scripted(list, &path)?
                    .iter()
                    .enumerate()
                    .map(|(i, e)| task_outcome(e, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?;
                s.tasks.insert(name.clone(), items);
            }
        }
        if let Some(c) = top.get("channels") {
            for (name, list) in object(c, "channels")? {
                let path = format!("channels.{}", key(name));
                let items = scripted(list, &path)?
                    .iter()
                    .enumerate()
                    .map(|(i, e)| channel_outcome(e, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?;
                s.channels.insert(name.clone(), items);
            }
        }
        if let Some(d) = top.get("deliveries") {
            for (name, list) in object(d, "deliveries")? {
                let path = format!("deliveries.{}", key(name));
                let items = scripted(list, &path)?
                    .iter()
                    .enumerate()
                    .map(|(i, e)| delivery_outcome(e, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?;
                s.deliveries.insert(name.clone(), items);
            }
        }
        if let Some(e) = top.get("events") {
            s.events = array(e, "events")?
                .iter()
                .enumerate()
                .map(|(i, e)| event(e, &format!("events[{i}]")))
                .collect::<Result<_, _>>()?;
        }
        Ok(s)
    }
}

/// A scenario that is not what docs/run.md describes, and the field at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// A path such as `tasks."payments.charge"[1].fail.class` (empty: the document).
    pub path: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "field `{}`: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

fn err(path: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        path: path.to_string(),
        message: message.into(),
    }
}

pub fn key(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

fn describe(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ScenarioError> {
    v.as_object()
        .ok_or_else(|| err(path, format!("expected an object, found {}", describe(v))))
}

fn array<'a>(v: &'a Value, path: &str) -> Result<&'a Vec<Value>, ScenarioError> {
    v.as_array().ok_or_else(|| {
        err(
            path,
            format!(
                "expected a list (one entry per attempt), found {}",
                describe(v)
            ),
        )
    })
}

/// A task's, channel's or delivery list: a list, and not an empty one. An
/// empty list scripts nothing, so every attempt would get the default (the
/// task succeeds, the counterpart answers at once): a test of a failure
/// would pass green, as it would with a misspelt key.
fn scripted<'a>(v: &'a Value, path: &str) -> Result<&'a Vec<Value>, ScenarioError> {
    let items = array(v, path)?;
    if items.is_empty() {
        return Err(err(
            path,
            "an empty list scripts nothing: every attempt would get the default (a task succeeds, a counterpart answers at once); give one entry per attempt (the last repeats), or leave the key out".to_string(),
        ));
    }
    Ok(items)
}

fn string<'a>(v: &'a Value, path: &str) -> Result<&'a str, ScenarioError> {
    v.as_str()
        .ok_or_else(|| err(path, format!("expected a string, found {}", describe(v))))
}

fn known(o: &Map<String, Value>, path: &str, fields: &[&str]) -> Result<(), ScenarioError> {
    for k in o.keys() {
        if !fields.contains(&k.as_str()) {
            let mut m = format!("unknown field; expected one of {}", fields.join(", "));
            if let Some(s) = qflow_model::suggest::closest(k, fields.iter().copied()) {
                m = format!(
                    "unknown field, did you mean `{s}`? (expected one of {})",
                    fields.join(", ")
                );
            }
            return Err(err(&join(path, &key(k)), m));
        }
    }
    Ok(())
}

/// Exactly one of `choices` is present.
fn one_of<'a>(
    o: &'a Map<String, Value>,
    path: &str,
    choices: &[&'a str],
) -> Result<(&'a str, &'a Value), ScenarioError> {
    let present: Vec<&str> = choices
        .iter()
        .copied()
        .filter(|c| o.contains_key(*c))
        .collect();
    match present.as_slice() {
        [one] => Ok((one, &o[*one])),
        [] => Err(err(path, format!("expected one of {}", choices.join(", ")))),
        many => Err(err(
            path,
            format!(
                "{} given together; an entry is exactly one outcome",
                many.join(" and ")
            ),
        )),
    }
}

fn duration(v: &Value, path: &str) -> Result<Duration, ScenarioError> {
    let s = string(v, path)?;
    qflow_model::duration::parse(s)
        .map_err(|e| err(path, format!("`{s}` is not an ISO-8601 duration: {e}")))
}

fn vars(v: &Value, path: &str) -> Result<BTreeMap<String, Value>, ScenarioError> {
    match v {
        Value::Bool(true) | Value::Null => Ok(BTreeMap::new()),
        _ => Ok(object(v, path)?
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()),
    }
}

fn task_outcome(v: &Value, path: &str) -> Result<TaskOutcome, ScenarioError> {
    let o = object(v, path)?;
    known(o, path, &["ok", "fail", "bpmnError"])?;
    let (which, body) = one_of(o, path, &["ok", "fail", "bpmnError"])?;
    let p = join(path, which);
    match which {
        "ok" => Ok(TaskOutcome::Ok(vars(body, &p)?)),
        "bpmnError" => {
            let code = match body {
                Value::String(s) => s.clone(),
                _ => {
                    let b = object(body, &p)?;
                    known(b, &p, &["code", "message"])?;
                    let c = b.get("code").ok_or_else(|| {
                        err(
                            &join(&p, "code"),
                            "missing: the error code boundaries match on",
                        )
                    })?;
                    string(c, &join(&p, "code"))?.to_string()
                }
            };
            Ok(TaskOutcome::BpmnError { code })
        }
        _ => {
            let b = object(body, &p)?;
            known(b, &p, &["code", "class", "retryAfter", "message"])?;
            let code = string(
                b.get("code")
                    .ok_or_else(|| err(&join(&p, "code"), "missing: the failure's code"))?,
                &join(&p, "code"),
            )?
            .to_string();
            let cp = join(&p, "class");
            let cs = string(
                b.get("class").ok_or_else(|| {
                    err(
                        &cp,
                        "missing: one of transient, permanent, rate-limited, unknown-outcome",
                    )
                })?,
                &cp,
            )?;
            let class = FailureClass::parse(cs).ok_or_else(|| {
                let names: Vec<&str> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
                let hint = qflow_model::suggest::closest(cs, names.iter().copied())
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                err(
                    &cp,
                    format!(
                        "`{cs}` is not a failure class{hint}; expected one of {}",
                        names.join(", ")
                    ),
                )
            })?;
            let retry_after = match b.get("retryAfter") {
                Some(r) => Some(duration(r, &join(&p, "retryAfter"))?),
                None => None,
            };
            let timed = matches!(class, FailureClass::RateLimited | FailureClass::Deferred);
            if retry_after.is_some() && !timed {
                return Err(err(
                    &join(&p, "retryAfter"),
                    "only a rate-limited or a deferred failure carries a retryAfter",
                ));
            }
            if class == FailureClass::RateLimited && retry_after.is_none() {
                return Err(err(&join(&p, "retryAfter"), "missing: a rate-limited failure carries the provider's retry-after, e.g. \"PT10M\""));
            }
            if class == FailureClass::Deferred && retry_after.is_none() {
                return Err(err(&join(&p, "retryAfter"), "missing: a deferred failure names when to run the attempt again, e.g. \"PT1H\""));
            }
            let message = match b.get("message") {
                Some(m) => Some(string(m, &join(&p, "message"))?.to_string()),
                None => None,
            };
            Ok(TaskOutcome::Fail {
                code,
                class,
                retry_after,
                message,
            })
        }
    }
}

fn channel_outcome(v: &Value, path: &str) -> Result<ChannelOutcome, ScenarioError> {
    let o = object(v, path)?;
    known(o, path, &["respond", "silent", "after"])?;
    let (which, body) = one_of(o, path, &["respond", "silent"])?;
    let after = match o.get("after") {
        Some(a) => Some(duration(a, &join(path, "after"))?),
        None => None,
    };
    match which {
        "respond" => Ok(ChannelOutcome::Respond {
            body: body.clone(),
            after,
        }),
        _ => {
            if body != &Value::Bool(true) {
                return Err(err(&join(path, "silent"), "write \"silent\": true"));
            }
            Ok(ChannelOutcome::Silent)
        }
    }
}

fn delivery_outcome(v: &Value, path: &str) -> Result<DeliveryOutcome, ScenarioError> {
    let o = object(v, path)?;
    known(o, path, &["ok", "fail"])?;
    let (which, body) = one_of(o, path, &["ok", "fail"])?;
    match which {
        "ok" => Ok(DeliveryOutcome::Ok),
        _ => Ok(DeliveryOutcome::Fail(
            string(body, &join(path, "fail"))?.to_string(),
        )),
    }
}

fn event(v: &Value, path: &str) -> Result<ScheduledEvent, ScenarioError> {
    let o = object(v, path)?;
    known(o, path, &["at", "redeliver", "resolve", "as", "variables"])?;
    let at = match o.get("at") {
        Some(a) => Some(duration(a, &join(path, "at")).or_else(|e| {
            if a.as_str() == Some("PT0S") {
                Ok(Duration::ZERO)
            } else {
                Err(e)
            }
        })?),
        None => None,
    };
    let (which, body) = one_of(o, path, &["redeliver", "resolve"])?;
    let node = string(body, &join(path, which))?.to_string();
    let event = match which {
        "redeliver" => {
            for extra in ["as", "variables"] {
                if o.contains_key(extra) {
                    return Err(err(
                        &join(path, extra),
                        "only a resolve event takes this field",
                    ));
                }
            }
            ExternalEvent::Redeliver { node }
        }
        _ => {
            let ap = join(path, "as");
            let a = string(
                o.get("as")
                    .ok_or_else(|| err(&ap, "missing: one of succeeded, failed, retry"))?,
                &ap,
            )?;
            let resolution = Resolution::parse(a).ok_or_else(|| {
                err(
                    &ap,
                    format!("`{a}` is not a resolution; expected one of succeeded, failed, retry"),
                )
            })?;
            let variables = match o.get("variables") {
                Some(v) => vars(v, &join(path, "variables"))?,
                None => BTreeMap::new(),
            };
            ExternalEvent::Resolve {
                node,
                resolution,
                variables,
            }
        }
    };
    Ok(ScheduledEvent { at, event })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn design_example_parses() {
        let s = Scenario::parse(
            r#"{
  "variables": { "orderId": "A-17", "amount": 42 },
  "tasks": {
    "payments.charge": [
      { "fail": { "code": "PROVIDER_DOWN", "class": "transient" } },
      { "fail": { "code": "RATE_LIMITED", "class": "rate-limited", "retryAfter": "PT10M" } },
      { "ok": { "chargeId": "ch_1" } }
    ]
  },
  "channels": {
    "bank": [ { "silent": true }, { "respond": { "approved": true }, "after": "PT2S" } ]
  },
  "deliveries": {
    "bank": [ { "fail": "connection refused" }, { "ok": true } ]
  },
  "events": [ { "at": "PT1H", "redeliver": "charge" }, { "resolve": "charge", "as": "retry" } ]
}"#,
        )
        .unwrap();
        assert_eq!(s.tasks["payments.charge"].len(), 3);
        assert!(matches!(
            s.task_outcome("payments.charge", 9),
            TaskOutcome::Ok(_)
        ));
        assert!(matches!(
            s.task_outcome("payments.charge", 1),
            TaskOutcome::Fail { class: FailureClass::RateLimited, retry_after: Some(d), .. } if d.as_secs() == 600
        ));
        assert!(matches!(s.task_outcome("other", 0), TaskOutcome::Ok(_)));
        assert_eq!(s.events.len(), 2);
    }

    fn bad(text: &str) -> String {
        Scenario::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(
            bad(r#"{"tasks":{"payments.charge":[{"ok":{}},{"fail":{"code":"X","class":"transiant"}}]}}"#),
            "field `tasks.\"payments.charge\"[1].fail.class`: `transiant` is not a failure class (did you mean `transient`?); expected one of transient, permanent, rate-limited, unknown-outcome, deferred"
        );
        assert!(
            bad(r#"{"task":{}}"#).starts_with("field `task`: unknown field, did you mean `tasks`?")
        );
        assert!(
            bad(r#"{"tasks":{"a":[{"ok":{},"fail":{}}]}}"#).contains("ok and fail given together")
        );
        assert!(bad(r#"{"tasks":{"a":{"ok":{}}}}"#).starts_with("field `tasks.a`: expected a list"));
        assert!(
            bad(r#"{"tasks":{"a":[{"fail":{"code":"R","class":"rate-limited"}}]}}"#)
                .starts_with("field `tasks.a[0].fail.retryAfter`: missing")
        );
        assert!(bad(r#"{"events":[{"resolve":"charge","as":"maybe"}]}"#)
            .starts_with("field `events[0].as`"));
        assert!(
            bad(r#"{"events":[{"at":"1h","redeliver":"x"}]}"#).starts_with("field `events[0].at`")
        );
        assert!(bad("[").starts_with("not valid JSON"));
    }
}
