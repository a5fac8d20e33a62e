//! What a run is expected to end as, for CI (`qflow run --expect`), and the
//! checks that keep a reconciliation from starting a run it did not mean to.
//!
//! A final state is `{"status": "completed" | "failed" | "waiting", …}`
//! ([`crate::driver::final_state`]). An expectation names a status
//! and, optionally, what it must carry: `failed:CODE` the failure code,
//! `waiting:WHAT` what the instance waits for (`reconciliation`, `response`,
//! `retry`, `timer`, `boundary`) or the code of the unknown outcome it waits
//! to have reconciled.

use serde_json::Value;

use qflow_store::{source_hash, Store, StoreError};

/// An expected final state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    pub status: &'static str,
    pub detail: Option<String>,
}

impl Expectation {
    /// `completed`, `failed`, `failed:CODE`, `waiting`, `waiting:WHAT`.
    pub fn parse(s: &str) -> Result<Expectation, String> {
        let (status, detail) = match s.split_once(':') {
            Some((a, b)) => (a.trim(), Some(b.trim())),
            None => (s.trim(), None),
        };
        let status = match status {
            "completed" => "completed",
            "failed" => "failed",
            "waiting" => "waiting",
            other => {
                let hint = qflow_model::suggest::closest(other, ["completed", "failed", "waiting"])
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                return Err(format!(
                    "`{other}` is not an outcome{hint}; write completed, failed[:CODE] or waiting[:WHAT]"
                ));
            }
        };
        match detail {
            Some("") => Err(format!("`{s}`: write a code after the colon, or no colon")),
            Some(_) if status == "completed" => Err(format!(
                "`{s}`: a completed run carries no code; write `completed`"
            )),
            d => Ok(Expectation {
                status,
                detail: d.map(str::to_string),
            }),
        }
    }

    /// Whether the final state is the one expected.
    pub fn holds(&self, state: &Value) -> bool {
        let get = |k: &str| state.get(k).and_then(Value::as_str);
        if get("status") != Some(self.status) {
            return false;
        }
        match &self.detail {
            None => true,
            Some(d) => {
                get("code") == Some(d) || (self.status == "waiting" && get("for") == Some(d))
            }
        }
    }

    /// A final state in the form the expectation is written in
    /// (`failed:PROVIDER_DOWN`), for the message that says what happened instead.
    pub fn describe(state: &Value) -> String {
        let get = |k: &str| state.get(k).and_then(Value::as_str);
        match (get("status"), get("code"), get("for")) {
            (Some("failed"), Some(c), _) => format!("failed:{c}"),
            (Some("waiting"), _, Some(f)) => format!("waiting:{f}"),
            (Some(s), _, _) => s.to_string(),
            _ => "in no known state".to_string(),
        }
    }
}

impl std::fmt::Display for Expectation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.detail {
            Some(d) => write!(f, "{}:{d}", self.status),
            None => f.write_str(self.status),
        }
    }
}

/// The unfinished (running or waiting) instance of this exact model source
/// in the store, if any: what a run with this `--db` would resume. A
/// reconciliation (`--resolve`) needs one; without it a run would start a new
/// instance and the resolution would answer nothing.
pub fn unfinished_instance_of(store: &Store, source: &str) -> Result<Option<String>, StoreError> {
    let hash = source_hash(source);
    Ok(store
        .instances()?
        .into_iter()
        .find(|i| {
            i.hash == hash && matches!(i.status, crate::Status::Running | crate::Status::Waiting)
        })
        .map(|i| i.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_expectation_matches_status_and_code() {
        let failed = json!({"status":"failed","code":"PROVIDER_DOWN","reason":"exhausted"});
        let waiting = json!({"status":"waiting","for":"reconciliation","code":"LOST_REPLY"});
        let e = |s: &str| Expectation::parse(s).unwrap();
        assert!(e("failed").holds(&failed));
        assert!(e("failed:PROVIDER_DOWN").holds(&failed));
        assert!(!e("failed:OTHER").holds(&failed));
        assert!(!e("completed").holds(&failed));
        assert!(e("waiting:reconciliation").holds(&waiting));
        assert!(e("waiting:LOST_REPLY").holds(&waiting));
        assert!(!e("waiting:retry").holds(&waiting));
        assert_eq!(Expectation::describe(&failed), "failed:PROVIDER_DOWN");
        assert_eq!(Expectation::describe(&waiting), "waiting:reconciliation");
    }

    #[test]
    fn a_bad_expectation_says_what_to_write() {
        assert_eq!(
            Expectation::parse("complete").unwrap_err(),
            "`complete` is not an outcome (did you mean `completed`?); write completed, failed[:CODE] or waiting[:WHAT]"
        );
        assert!(Expectation::parse("completed:X").is_err());
        assert!(Expectation::parse("failed:").is_err());
    }
}
