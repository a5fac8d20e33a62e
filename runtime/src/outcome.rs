//! What a run is expected to end as, for CI (`qflow run --expect`), and the
//! checks that keep a reconciliation from starting a run it did not mean to.
//!
//! A run's end is matched as [`Ended`]: its status (`completed`, `failed`,
//! `waiting`), its code and what it waits for, as the engine's final state
//! gives them (`FinalState::ended`). An expectation names a status
//! and, optionally, what it must carry: `failed:CODE` the failure code,
//! `waiting:WHAT` what the instance waits for (`reconciliation`, `response`,
//! `retry`, `timer`, `boundary`) or the code of the unknown outcome it waits
//! to have reconciled.

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

    /// Whether the run ended as expected.
    pub fn holds(&self, ended: &Ended<'_>) -> bool {
        if ended.status != self.status {
            return false;
        }
        match &self.detail {
            None => true,
            Some(d) => {
                ended.code == Some(d.as_str())
                    || (self.status == "waiting" && ended.waiting_for == Some(d.as_str()))
            }
        }
    }
}

/// How a run ended, in the terms an [`Expectation`] is written in: the
/// fields of the final state it matches on, typed (the engine's
/// `FinalState::ended` gives them), so no face reads a JSON line back by key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended<'a> {
    /// `completed`, `failed` or `waiting`.
    pub status: &'static str,
    /// The failure's code, or the unknown outcome's a reconciliation
    /// waits for.
    pub code: Option<&'a str>,
    /// What a waiting instance waits for (`reconciliation`, `response`,
    /// `retry`, …), when known.
    pub waiting_for: Option<&'a str>,
}

impl Ended<'_> {
    /// The end in the form an expectation is written in
    /// (`failed:PROVIDER_DOWN`), for the message that says what happened
    /// instead of what was expected.
    pub fn describe(&self) -> String {
        match (self.status, self.code, self.waiting_for) {
            ("failed", Some(c), _) => format!("failed:{c}"),
            ("waiting", _, Some(f)) => format!("waiting:{f}"),
            (s, _, _) => s.to_string(),
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

    #[test]
    fn an_expectation_matches_status_and_code() {
        let failed = Ended {
            status: "failed",
            code: Some("PROVIDER_DOWN"),
            waiting_for: None,
        };
        let waiting = Ended {
            status: "waiting",
            code: Some("LOST_REPLY"),
            waiting_for: Some("reconciliation"),
        };
        let e = |s: &str| Expectation::parse(s).unwrap();
        assert!(e("failed").holds(&failed));
        assert!(e("failed:PROVIDER_DOWN").holds(&failed));
        assert!(!e("failed:OTHER").holds(&failed));
        assert!(!e("completed").holds(&failed));
        assert!(e("waiting:reconciliation").holds(&waiting));
        assert!(e("waiting:LOST_REPLY").holds(&waiting));
        assert!(!e("waiting:retry").holds(&waiting));
        assert_eq!(failed.describe(), "failed:PROVIDER_DOWN");
        assert_eq!(waiting.describe(), "waiting:reconciliation");
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
