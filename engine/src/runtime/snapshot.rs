//! The instance snapshot: an open-keyed map, serialized canonically.
//!
//! Canonical means sorted keys at every depth, no whitespace, and numbers as
//! serde_json writes them, so the same state is always the same bytes. That is
//! what lets a golden corpus of snapshot bytes prove that a feature leaves
//! processes which do not use it untouched (docs/runtime.md).
//!
//! Key families (each documented in docs/run.md):
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
//!
//! Node-scoped families end in `.<node>` so a migration with a node mapping
//! renames them with [`Snapshot::rename_node`].
//!
//! Decoding is lenient: only bytes that are not a JSON object at all are
//! refused; every typed accessor treats a malformed value as absent or zero, so
//! a snapshot never becomes unloadable.

use std::collections::BTreeMap;

use serde_json::Value;

/// Families whose keys end in `.<node>` (renamed by a node mapping).
pub const NODE_FAMILIES: [&str; 5] = [
    "attempts",
    "first_attempt",
    "reconcile",
    "backoff",
    "keys_used",
];

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
        let mut tokens: Vec<Token> = match self.map.get("frontier") {
            Some(Value::Array(a)) => a.iter().filter_map(Token::from_value).collect(),
            _ => Vec::new(),
        };
        tokens.sort();
        tokens
    }

    /// Replace the frontier; an empty frontier removes the key.
    pub fn set_frontier(&mut self, mut tokens: Vec<Token>) {
        if tokens.is_empty() {
            self.map.remove("frontier");
            return;
        }
        tokens.sort();
        self.map.insert(
            "frontier".into(),
            Value::Array(tokens.iter().map(Token::to_value).collect()),
        );
    }

    /// Failed attempts of `node`; absent or malformed reads as zero.
    pub fn attempts(&self, node: &str) -> u32 {
        match self.map.get(&format!("attempts.{node}")) {
            Some(Value::Number(n)) => n.as_u64().map_or(0, |n| n.min(u32::MAX as u64) as u32),
            Some(Value::String(s)) => s.trim().parse().unwrap_or(0),
            _ => 0,
        }
    }

    pub fn first_attempt_ms(&self, node: &str) -> Option<i64> {
        self.map
            .get(&format!("first_attempt.{node}"))
            .and_then(Value::as_i64)
    }

    /// Drop every node-scoped key of `node` (the task left it).
    pub fn clear_node(&mut self, node: &str) {
        for fam in NODE_FAMILIES {
            self.map.remove(&format!("{fam}.{node}"));
        }
    }

    /// Rename every node-scoped key of `from` to `to`: what a migration with a
    /// node mapping does, so a burned budget travels with its task.
    pub fn rename_node(&mut self, from: &str, to: &str) {
        for fam in NODE_FAMILIES {
            if let Some(v) = self.map.remove(&format!("{fam}.{from}")) {
                self.map.insert(format!("{fam}.{to}"), v);
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
        if self.map.contains_key("frontier") {
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
