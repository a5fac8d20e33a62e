//! The instance snapshot: an open-keyed map, serialized canonically.
//!
//! Canonical means sorted keys at every depth, no whitespace, and numbers as
//! serde_json writes them, so the same state is always the same bytes. That is
//! what lets a golden corpus of snapshot bytes prove that a feature leaves
//! processes which do not use it untouched (docs/runtime.md).
//!
//! Key families (each documented in docs/run.md), each read and written only
//! through its typed accessor here ([`Family`] names the node-scoped ones):
//! - `var.<name>`: process variables.
//! - `frontier`: the wait frontier, a sorted list of tokens.
//! - `attempts.<node>`: failed attempts of a task with a policy (absent until
//!   the first failure). A malformed counter reads as zero.
//! - `first_attempt.<node>`: virtual ms of the first attempt's start, written
//!   with the first failure; `maxElapsed` is measured from it.
//! - `reconcile.<node>`: the unknown outcome a node waits to have reconciled.
//! - `failure`: the fatal path's record (code, reason, node, attempts).
//! - `backoff.<node>`: a channel call's backoff-window marker (the code and
//!   attempt of the failure that parked it); absent unless in a backoff window.
//! - `keys_used.<node>`: how many idempotency keys a call node used before
//!   its counter restarted. Written by earlier versions only and still read
//!   (keys are now numbered from the store's key ledger).
//!
//! Node-scoped families end in `.<node>` so a migration with a node mapping
//! renames them with [`Snapshot::rename_node`].
//!
//! Decoding is lenient: only bytes that are not a JSON object at all are
//! refused; every typed accessor treats a malformed value as absent or zero, so
//! a snapshot never becomes unloadable.

use std::collections::BTreeMap;

use serde_json::Value;

/// The node-scoped key families: each key is `<family>.<node>`, so a
/// migration with a node mapping renames them with [`Snapshot::rename_node`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// `attempts.<node>`: failed attempts (absent until the first failure).
    Attempts,
    /// `first_attempt.<node>`: when the first attempt started (ms).
    FirstAttempt,
    /// `reconcile.<node>`: the unknown outcome the node waits to have reconciled.
    Reconcile,
    /// `backoff.<node>`: a channel call's backoff-window marker.
    Backoff,
    /// `keys_used.<node>`: idempotency keys used before the counter restarted.
    KeysUsed,
}

impl Family {
    pub const ALL: [Family; 5] = [
        Family::Attempts,
        Family::FirstAttempt,
        Family::Reconcile,
        Family::Backoff,
        Family::KeysUsed,
    ];

    pub fn prefix(self) -> &'static str {
        match self {
            Family::Attempts => "attempts",
            Family::FirstAttempt => "first_attempt",
            Family::Reconcile => "reconcile",
            Family::Backoff => "backoff",
            Family::KeysUsed => "keys_used",
        }
    }

    /// The key of `node` in this family.
    pub fn key(self, node: &str) -> String {
        format!("{}.{node}", self.prefix())
    }

    /// Which family a key belongs to, and its node.
    pub fn split(key: &str) -> Option<(Family, &str)> {
        Family::ALL.into_iter().find_map(|f| {
            key.strip_prefix(f.prefix())
                .and_then(|rest| rest.strip_prefix('.'))
                .map(|node| (f, node))
        })
    }
}

/// The key of the fatal path's record.
pub const FAILURE_KEY: &str = "failure";
/// The key of the wait frontier.
pub const FRONTIER_KEY: &str = "frontier";

/// A marker a node carries while it waits: the backoff window of a call
/// (`backoff.<node>`) or an unknown outcome to reconcile (`reconcile.<node>`):
/// the code and attempt of the failure that put it there. Read leniently:
/// a damaged field reads as absent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Marker {
    pub code: Option<String>,
    pub attempt: Option<u32>,
    /// A failure classification, when the writer recorded one.
    pub class: Option<String>,
}

impl Marker {
    fn read(v: &Value) -> Marker {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Marker {
            code: text("code"),
            attempt: v
                .get("attempt")
                .and_then(Value::as_u64)
                .map(|a| a.min(u64::from(u32::MAX)) as u32),
            class: text("class"),
        }
    }

    fn write(code: &str, attempt: u32) -> Value {
        serde_json::json!({"code": code, "attempt": attempt})
    }
}

/// The fatal path's record (`failure`): where and why the instance failed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Failure {
    pub code: String,
    pub reason: String,
    pub node: String,
    /// Attempts made, for a task or call that had attempts.
    pub attempts: Option<u32>,
    /// The last attempt's failure class and message, when it had one.
    pub class: Option<String>,
    pub message: Option<String>,
    /// When the node's first and last attempts started (virtual ms, the
    /// clock `first_attempt.<node>` uses), for a node that made attempts.
    pub first_attempt_ms: Option<i64>,
    pub last_attempt_ms: Option<i64>,
    /// The dependency that failed: the registered task's handler name, or
    /// the channel a call's requests went to.
    pub task: Option<String>,
    pub channel: Option<String>,
}

impl Failure {
    fn read(v: &Value) -> Failure {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Failure {
            code: text("code").unwrap_or_default(),
            reason: text("reason").unwrap_or_default(),
            node: text("node").unwrap_or_default(),
            attempts: v
                .get("attempts")
                .and_then(Value::as_u64)
                .map(|a| a.min(u64::from(u32::MAX)) as u32),
            class: text("class"),
            message: text("message"),
            first_attempt_ms: v.get("first_attempt_ms").and_then(Value::as_i64),
            last_attempt_ms: v.get("last_attempt_ms").and_then(Value::as_i64),
            task: text("task"),
            channel: text("channel"),
        }
    }

    fn write(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("code".into(), Value::from(self.code.as_str()));
        m.insert("reason".into(), Value::from(self.reason.as_str()));
        m.insert("node".into(), Value::from(self.node.as_str()));
        if let Some(a) = self.attempts {
            m.insert("attempts".into(), Value::from(a));
        }
        if let Some(c) = &self.class {
            m.insert("class".into(), Value::from(c.as_str()));
            if let Some(msg) = &self.message {
                m.insert("message".into(), Value::from(msg.as_str()));
            }
        }
        let times = [
            ("first_attempt_ms", self.first_attempt_ms),
            ("last_attempt_ms", self.last_attempt_ms),
        ];
        for (k, ms) in times {
            if let Some(ms) = ms {
                m.insert(k.into(), Value::from(ms));
            }
        }
        for (k, dep) in [("task", &self.task), ("channel", &self.channel)] {
            if let Some(d) = dep {
                m.insert(k.into(), Value::from(d.as_str()));
            }
        }
        Value::Object(m)
    }
}

fn counter(v: Option<&Value>) -> u32 {
    match v {
        Some(Value::Number(n)) => n.as_u64().map_or(0, |n| n.min(u32::MAX as u64) as u32),
        Some(Value::String(s)) => s.trim().parse().unwrap_or(0),
        _ => 0,
    }
}

/// A counter-family value (`attempts.`, `first_attempt.`, `keys_used.`)
/// that is not the integer it should be: what was stored, and what the
/// lenient read makes of it (`None`: absent).
#[derive(Debug, Clone, PartialEq)]
pub struct DamagedValue {
    pub key: String,
    pub raw: Value,
    pub read_as: Option<i64>,
}

/// Why a value of a counter family is not well-formed, if it is not.
fn counter_damage(family: Family, v: &Value) -> Option<Option<i64>> {
    match family {
        Family::Attempts | Family::KeysUsed => match v {
            Value::Number(n) if n.as_u64().is_some_and(|n| n <= u64::from(u32::MAX)) => None,
            other => Some(Some(i64::from(counter(Some(other))))),
        },
        Family::FirstAttempt => match v.as_i64() {
            Some(_) => None,
            None => Some(None),
        },
        Family::Reconcile | Family::Backoff => None,
    }
}

/// Where a token stands on its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TokenState {
    /// Arrived; the next step executes the node.
    Ready,
    /// A registered task parked on a retry timer.
    Backoff,
    /// A task whose last attempt had an unknown outcome, waiting for an
    /// operator (or the scenario) to reconcile it.
    Reconcile,
    /// Waiting on an armed timer of its node: an intermediate timer event,
    /// or a channel call (live: its timeout; in a backoff window: its retry
    /// timer). A call's live and dead attempts look the same here on
    /// purpose; the `backoff.<node>` marker tells them apart.
    Timer,
    /// Arrived at a parallel join, waiting for the other branches.
    Joined,
}

impl TokenState {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenState::Ready => "ready",
            TokenState::Backoff => "backoff",
            TokenState::Reconcile => "reconcile",
            TokenState::Timer => "timer",
            TokenState::Joined => "joined",
        }
    }

    pub fn parse(s: &str) -> Option<TokenState> {
        [
            TokenState::Ready,
            TokenState::Backoff,
            TokenState::Reconcile,
            TokenState::Timer,
            TokenState::Joined,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}

/// One token of the wait frontier.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Token {
    pub node: String,
    pub state: TokenState,
    /// The flow it arrived by; kept only at parallel joins, which count
    /// arrivals per incoming flow.
    pub via: Option<String>,
}

impl Token {
    pub fn ready(node: &str) -> Token {
        Token {
            node: node.to_string(),
            state: TokenState::Ready,
            via: None,
        }
    }

    fn to_value(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("node".into(), Value::String(self.node.clone()));
        m.insert("state".into(), Value::String(self.state.as_str().into()));
        if let Some(v) = &self.via {
            m.insert("via".into(), Value::String(v.clone()));
        }
        Value::Object(m)
    }

    fn from_value(v: &Value) -> Option<Token> {
        let o = v.as_object()?;
        Some(Token {
            node: o.get("node")?.as_str()?.to_string(),
            state: TokenState::parse(o.get("state")?.as_str()?)?,
            via: o.get("via").and_then(Value::as_str).map(str::to_string),
        })
    }
}

/// The snapshot could not be read at all (not a JSON object).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("snapshot is not a JSON object: {0}")]
pub struct SnapshotError(pub String);

/// The open-keyed map.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    map: BTreeMap<String, Value>,
}

impl Snapshot {
    pub fn new() -> Snapshot {
        Snapshot::default()
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key)
    }

    pub fn set(&mut self, key: impl Into<String>, value: Value) {
        self.map.insert(key.into(), value);
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key)
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    pub fn entries(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Process variables (`var.<name>`), by name.
    pub fn variables(&self) -> BTreeMap<String, Value> {
        self.map
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("var.").map(|n| (n.to_string(), v.clone())))
            .collect()
    }

    pub fn variable(&self, name: &str) -> Option<&Value> {
        self.map.get(&format!("var.{name}"))
    }

    pub fn set_variable(&mut self, name: &str, value: Value) {
        self.map.insert(format!("var.{name}"), value);
    }

    /// The wait frontier, sorted. Malformed entries are skipped.
    pub fn frontier(&self) -> Vec<Token> {
        let mut tokens: Vec<Token> = match self.map.get(FRONTIER_KEY) {
            Some(Value::Array(a)) => a.iter().filter_map(Token::from_value).collect(),
            _ => Vec::new(),
        };
        tokens.sort();
        tokens
    }

    /// Why the stored frontier cannot be read whole, if it cannot: it is not
    /// a list, or an entry is not a token. The lenient [`Snapshot::frontier`]
    /// skips such entries, which would make a waiting instance look finished;
    /// a decision fails the instance on this instead.
    pub fn frontier_damage(&self) -> Option<String> {
        let v = self.map.get(FRONTIER_KEY)?;
        let Value::Array(a) = v else {
            return Some(format!(
                "the frontier is {}, not a list of tokens: {}",
                kind(v),
                canonical_string(v)
            ));
        };
        a.iter().enumerate().find_map(|(i, t)| {
            Token::from_value(t).is_none().then(|| {
                format!(
                    "frontier entry {} is not a token: {}",
                    i + 1,
                    canonical_string(t)
                )
            })
        })
    }

    /// The counter-family values that are not well-formed integers, with
    /// what each reads as (zero, or absent for a start time).
    pub fn damaged_counters(&self) -> Vec<DamagedValue> {
        self.map
            .iter()
            .filter_map(|(k, v)| {
                let (family, _) = Family::split(k)?;
                counter_damage(family, v).map(|read_as| DamagedValue {
                    key: k.clone(),
                    raw: v.clone(),
                    read_as,
                })
            })
            .collect()
    }

    /// Replace the frontier; an empty frontier removes the key.
    pub fn set_frontier(&mut self, mut tokens: Vec<Token>) {
        if tokens.is_empty() {
            self.map.remove(FRONTIER_KEY);
            return;
        }
        tokens.sort();
        self.map.insert(
            FRONTIER_KEY.into(),
            Value::Array(tokens.iter().map(Token::to_value).collect()),
        );
    }

    /// Failed attempts of `node`; absent or malformed reads as zero.
    pub fn attempts(&self, node: &str) -> u32 {
        counter(self.map.get(&Family::Attempts.key(node)))
    }

    /// Whether `node` has an attempt counter at all (absent until a failure).
    pub fn has_attempts(&self, node: &str) -> bool {
        self.map.contains_key(&Family::Attempts.key(node))
    }

    pub fn set_attempts(&mut self, node: &str, n: u32) {
        self.map.insert(Family::Attempts.key(node), Value::from(n));
    }

    pub fn first_attempt_ms(&self, node: &str) -> Option<i64> {
        self.map
            .get(&Family::FirstAttempt.key(node))
            .and_then(Value::as_i64)
    }

    pub fn set_first_attempt_ms(&mut self, node: &str, ms: i64) {
        self.map
            .insert(Family::FirstAttempt.key(node), Value::from(ms));
    }

    /// The backoff-window marker of a call node, if it is in a backoff window.
    pub fn backoff_marker(&self, node: &str) -> Option<Marker> {
        self.map.get(&Family::Backoff.key(node)).map(Marker::read)
    }

    /// Whether a call node is in a backoff window (its live attempt is gone).
    pub fn in_backoff(&self, node: &str) -> bool {
        self.map.contains_key(&Family::Backoff.key(node))
    }

    pub fn set_backoff_marker(&mut self, node: &str, code: &str, attempt: u32) {
        self.map
            .insert(Family::Backoff.key(node), Marker::write(code, attempt));
    }

    pub fn clear_backoff_marker(&mut self, node: &str) {
        self.map.remove(&Family::Backoff.key(node));
    }

    /// The unknown outcome `node` waits to have reconciled.
    pub fn reconcile(&self, node: &str) -> Option<Marker> {
        self.map.get(&Family::Reconcile.key(node)).map(Marker::read)
    }

    pub fn set_reconcile(&mut self, node: &str, code: &str, attempt: u32) {
        self.map
            .insert(Family::Reconcile.key(node), Marker::write(code, attempt));
    }

    pub fn clear_reconcile(&mut self, node: &str) {
        self.map.remove(&Family::Reconcile.key(node));
    }

    /// Idempotency keys a call node used before its counter restarted;
    /// absent or malformed reads as zero.
    pub fn keys_used(&self, node: &str) -> u32 {
        self.map
            .get(&Family::KeysUsed.key(node))
            .and_then(Value::as_u64)
            .map_or(0, |n| n.min(u64::from(u32::MAX)) as u32)
    }

    /// The fatal path's record, if the instance failed.
    pub fn failure(&self) -> Option<Failure> {
        self.map.get(FAILURE_KEY).map(Failure::read)
    }

    pub fn set_failure(&mut self, f: &Failure) {
        self.map.insert(FAILURE_KEY.into(), f.write());
    }

    pub fn clear_failure(&mut self) {
        self.map.remove(FAILURE_KEY);
    }

    /// Drop every node-scoped key of `node` (the task left it).
    pub fn clear_node(&mut self, node: &str) {
        for fam in Family::ALL {
            self.map.remove(&fam.key(node));
        }
    }

    /// Rename every node-scoped key of `from` to `to`: what a migration with a
    /// node mapping does, so a burned budget travels with its task.
    pub fn rename_node(&mut self, from: &str, to: &str) {
        for fam in Family::ALL {
            if let Some(v) = self.map.remove(&fam.key(from)) {
                self.map.insert(fam.key(to), v);
            }
        }
        let tokens = self
            .frontier()
            .into_iter()
            .map(|mut t| {
                if t.node == from {
                    t.node = to.to_string();
                }
                t
            })
            .collect();
        if self.map.contains_key(FRONTIER_KEY) {
            self.set_frontier(tokens);
        }
    }

    /// The canonical bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::new();
        out.push('{');
        for (i, (k, v)) in self.map.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(&mut out, k);
            out.push(':');
            write_canonical(&mut out, v);
        }
        out.push('}');
        out.into_bytes()
    }

    /// Read stored bytes leniently (see the module docs).
    pub fn decode(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(m)) => Ok(Snapshot {
                map: m.into_iter().collect(),
            }),
            Ok(other) => Err(SnapshotError(format!("found {}", kind(&other)))),
            Err(e) => Err(SnapshotError(e.to_string())),
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Write any JSON value with sorted object keys, whatever map type
/// serde_json was built with.
pub fn write_canonical(out: &mut String, v: &Value) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_canonical(out, &m[k]);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, x);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push_str(&Value::String(s.to_string()).to_string());
}

/// A value's canonical text (sorted keys): for history details and output.
pub fn canonical_string(v: &Value) -> String {
    let mut s = String::new();
    write_canonical(&mut s, v);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn same_state_same_bytes_whatever_the_insertion_order() {
        let mut a = Snapshot::new();
        a.set_variable("b", json!({"z": 1, "a": [2, {"y": 1, "x": 0}]}));
        a.set_variable("a", json!("x"));
        let mut b = Snapshot::new();
        b.set_variable("a", json!("x"));
        b.set_variable("b", json!({"a": [2, {"x": 0, "y": 1}], "z": 1}));
        assert_eq!(a.encode(), b.encode());
        assert_eq!(
            String::from_utf8(a.encode()).unwrap(),
            r#"{"var.a":"x","var.b":{"a":[2,{"x":0,"y":1}],"z":1}}"#
        );
        assert_eq!(Snapshot::decode(&a.encode()).unwrap(), a);
    }

    #[test]
    fn malformed_counters_read_as_zero_and_never_fail_the_load() {
        let s = Snapshot::decode(
            br#"{"attempts.a":"x","attempts.b":-3,"attempts.c":"4","attempts.d":2,"frontier":[1,{"node":"n","state":"ready"},{"node":"m"}]}"#,
        )
        .unwrap();
        assert_eq!(s.attempts("a"), 0);
        assert_eq!(s.attempts("b"), 0);
        assert_eq!(s.attempts("c"), 4);
        assert_eq!(s.attempts("d"), 2);
        assert_eq!(s.attempts("absent"), 0);
        assert_eq!(s.frontier(), vec![Token::ready("n")]);
        assert!(Snapshot::decode(b"[1]").is_err());
        assert!(Snapshot::decode(b"{").is_err());
    }

    #[test]
    fn damaged_counters_and_frontier_entries_are_named_with_their_raw_value() {
        let s = Snapshot::decode(
            br#"{"attempts.a":"x","attempts.b":-3,"attempts.c":"4","attempts.d":2,"first_attempt.a":"soon","keys_used.a":1.5,"frontier":[{"node":"n","state":"ready"},{"node":"m"}]}"#,
        )
        .unwrap();
        let d: Vec<(String, Option<i64>)> = s
            .damaged_counters()
            .into_iter()
            .map(|d| (d.key, d.read_as))
            .collect();
        assert_eq!(
            d,
            vec![
                ("attempts.a".into(), Some(0)),
                ("attempts.b".into(), Some(0)),
                ("attempts.c".into(), Some(4)),
                ("first_attempt.a".into(), None),
                ("keys_used.a".into(), Some(0)),
            ]
        );
        assert_eq!(
            s.frontier_damage().as_deref(),
            Some(r#"frontier entry 2 is not a token: {"node":"m"}"#)
        );
        let mut ok = Snapshot::new();
        ok.set_frontier(vec![Token::ready("n")]);
        ok.set_attempts("n", 3);
        assert!(ok.frontier_damage().is_none() && ok.damaged_counters().is_empty());
        ok.set(FRONTIER_KEY, serde_json::json!("n"));
        assert!(ok.frontier_damage().unwrap().contains("is a string"));
    }

    #[test]
    fn rename_node_moves_counters_and_tokens() {
        let mut s = Snapshot::new();
        s.set("attempts.charge", json!(3));
        s.set("first_attempt.charge", json!(0));
        s.set_frontier(vec![Token {
            node: "charge".into(),
            state: TokenState::Backoff,
            via: None,
        }]);
        s.rename_node("charge", "charge2");
        assert_eq!(s.attempts("charge2"), 3);
        assert_eq!(s.attempts("charge"), 0);
        assert_eq!(s.frontier()[0].node, "charge2");
        s.clear_node("charge2");
        assert!(s.get("attempts.charge2").is_none());
    }
}
