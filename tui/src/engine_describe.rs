//! Decision lines (the history's JSON details) in a few words, for the
//! history panel and the status line.

use serde_json::Value;

/// What a waiting instance waits for, from the driver's final-state line.
pub(crate) fn waiting_text(v: &Value) -> Option<String> {
    if v.get("status").and_then(Value::as_str) != Some("waiting") {
        return None;
    }
    let what = v.get("for").and_then(Value::as_str)?;
    let node = v.get("node").and_then(Value::as_str);
    let due = v
        .get("due_s")
        .and_then(Value::as_f64)
        .map(|s| (s * 1000.0) as i64);
    Some(match (node, due) {
        (Some(n), Some(d)) => format!("{what} of {n} at {}", crate::fmt::at(d)),
        (Some(n), None) => format!("{what} of {n}"),
        _ => what.to_string(),
    })
}

/// A decision line in a few words, without the fields the history panel
/// already shows in columns.
pub fn describe(line: &Value) -> String {
    let Some(m) = line.as_object() else {
        return String::new();
    };
    let s = |k: &str| m.get(k).and_then(Value::as_str);
    let secs = |k: &str| {
        m.get(k)
            .and_then(Value::as_f64)
            .map(|x| crate::fmt::at((x * 1000.0) as i64))
    };
    let mut parts: Vec<String> = Vec::new();
    match m.get("kind").and_then(Value::as_str) {
        Some("attempt") | Some("call-failed") => {
            // A call's attempt is a request emission: say where it went.
            if let Some(ch) = s("channel") {
                if m.get("redrive") == Some(&Value::Bool(true)) {
                    parts.push("re-drive:".into());
                }
                parts.push(format!("request to {ch}"));
                parts.extend(secs("timeout_at_s").map(|t| format!("timeout {t}")));
            }
            parts.extend(s("outcome").map(str::to_string));
            parts.extend(s("class").map(str::to_string));
            match s("then") {
                Some("backoff") => parts.push(format!(
                    "→ #{} at {}",
                    m.get("next_attempt").and_then(Value::as_u64).unwrap_or(0),
                    secs("next_at_s").unwrap_or_default()
                )),
                Some(other) => parts.push(format!("→ {other}")),
                None => {}
            }
        }
        Some("delivery") => {
            parts.extend(s("outcome").map(str::to_string));
            if let Some(n) = m.get("deliveries").and_then(Value::as_u64) {
                parts.push(format!("×{n}"));
            }
            if m.get("poisoned") == Some(&Value::Bool(true)) {
                parts.push("POISONED".into());
            }
            parts.extend(secs("next_delivery_at_s").map(|t| format!("next {t}")));
            parts.extend(secs("respond_at_s").map(|t| format!("answer {t}")));
            if m.get("silent") == Some(&Value::Bool(true)) {
                parts.push("counterpart silent".into());
            }
        }
        Some("response") => {
            parts.extend(s("verdict").map(str::to_string));
            parts.extend(s("idempotencyKey").map(|k| format!("to {k}")));
            parts.extend(s("reason").map(|r| format!("· {r}")));
        }
        Some("failed") => {
            parts.extend(s("reason").map(str::to_string));
            if let Some(a) = m.get("attempts").and_then(Value::as_u64) {
                parts.push(format!("after {a} attempts"));
            }
        }
        Some("ignored") => {
            parts.extend(s("event").map(|e| format!("{e}:")));
            parts.extend(s("reason").map(str::to_string));
        }
        Some("wait") => {
            parts.extend(s("for").map(|f| format!("for {f}")));
            parts.extend(secs("until_s").map(|u| format!("until {u}")));
        }
        Some("reconciled") => parts.extend(s("as").map(|a| format!("as {a}"))),
        _ => {}
    }
    if let Some(Value::Array(to)) = m.get("to") {
        let to: Vec<&str> = to.iter().filter_map(Value::as_str).collect();
        if !to.is_empty() {
            parts.push(format!("→ {}", to.join(", ")));
        }
    }
    parts.join(" ")
}
