//! Damaged durable state. A damaged value never wedges an instance and never
//! turns into success:
//!
//! - A counter (`attempts.`, `first_attempt.`, `keys_used.`) that is not the
//!   integer it should be reads as zero (a start time as absent), as the
//!   lenient decoding always said; the decision that reads it records a
//!   `damaged` history line and an incident naming the key and the raw
//!   value, and writes the value back as it was read, so it is reported
//!   once. Idempotency keys do not depend on it: they come from the store's
//!   key ledger.
//! - Snapshot bytes that are not a snapshot, a frontier entry that is not a
//!   token, or a token on a node the deployment does not have: nothing can
//!   be decided on such a snapshot, and the lenient reading (skip what does
//!   not decode) would make a waiting instance look finished. The instance
//!   is FAILED with `q.snapshot.damaged`, its stored bytes kept exactly as
//!   they are for inspection; other instances are untouched.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{NewIncident, Work};
use crate::graph::Graph;
use qflow_instance::codes::SNAPSHOT_DAMAGED;
use qflow_instance::history::{Entry, HistoryEvent, Line, Secs};
use qflow_instance::rows::{Facts, Status};
use qflow_instance::snapshot::{canonical_string, Family, FRONTIER_KEY};
use qflow_instance::{CallEffects, IncidentKind, Transition};

/// Why nothing can be decided on this instance's snapshot, if so: the
/// stored bytes do not decode, the frontier does not, or a token names a
/// node `graph` does not have.
pub fn unreadable(graph: &Graph, facts: &Facts<'_>) -> Option<String> {
    if let Some(why) = facts.damage {
        return Some(why.to_string());
    }
    if let Some(why) = facts.snapshot.frontier_damage() {
        return Some(why);
    }
    facts
        .snapshot
        .frontier()
        .into_iter()
        .find(|t| graph.node(&t.node).is_none())
        .map(|t| {
            format!(
                "the frontier has a token on `{}`, which the deployment does not have",
                t.node
            )
        })
}

/// The decision on an instance whose snapshot is [`unreadable`]: FAILED with
/// `q.snapshot.damaged`, every armed timer resolved, a history line and an
/// incident saying what was found; the stored bytes stay as they are. The
/// lines and the incident name the process (no node can be trusted).
pub fn fail(graph: &Graph, facts: &Facts<'_>, why: &str, now_ms: i64) -> Transition {
    let at_s = Secs(now_ms - facts.started_ms);
    let (key, raw) = match facts.damage {
        Some(_) => ("snapshot", Value::String(why.to_string())),
        None => (
            "frontier",
            facts
                .snapshot
                .get(FRONTIER_KEY)
                .cloned()
                .unwrap_or(Value::Null),
        ),
    };
    let line = |event| {
        Entry::new(Line {
            at_s,
            node: Some(graph.process_id.clone()),
            event,
        })
    };
    let mut resolve: Vec<i64> = facts.timers.iter().map(|t| t.id).collect();
    resolve.sort_unstable();
    Transition {
        snapshot: facts.snapshot.clone(),
        set: BTreeMap::new(),
        removed: Vec::new(),
        status: Status::Failed,
        arm: Vec::new(),
        resolve,
        history: vec![
            line(HistoryEvent::Damaged {
                key: key.to_string(),
                raw,
                read_as: None,
            }),
            line(HistoryEvent::Failed {
                code: SNAPSHOT_DAMAGED.to_string(),
                reason: "damaged".to_string(),
                attempts: None,
            }),
        ],
        open_incidents: vec![NewIncident {
            node: graph.process_id.clone(),
            kind: IncidentKind::Damaged,
            message: format!(
                "instance {} failed: {SNAPSHOT_DAMAGED} ({why}); its stored snapshot is kept as it was, for inspection and repair",
                facts.instance_id
            ),
        }],
        close_incidents: Vec::new(),
        close_in_flight: Vec::new(),
        calls: CallEffects::default(),
        keep_stored_snapshot: true,
    }
}

/// Report and settle every malformed counter of the snapshot: a `damaged`
/// line and an incident each, and the value written back as it reads.
pub(super) fn counters(w: &mut Work) {
    for d in w.snap.damaged_counters() {
        let node = Family::split(&d.key).map(|(_, n)| n.to_string());
        match d.read_as {
            Some(n) if n > 0 => w.snap.set(d.key.clone(), Value::from(n)),
            _ => {
                w.snap.remove(&d.key);
            }
        }
        let read = d
            .read_as
            .map_or_else(|| "absent".to_string(), |n| n.to_string());
        w.open_incidents.push(NewIncident {
            node: node.clone().unwrap_or_default(),
            kind: IncidentKind::Damaged,
            message: format!(
                "snapshot key {} held {}, not a well-formed value: read as {read}",
                d.key,
                canonical_string(&d.raw)
            ),
        });
        w.entry(
            node.as_deref(),
            HistoryEvent::Damaged {
                key: d.key,
                raw: d.raw,
                read_as: d.read_as,
            },
        );
    }
}
