//! The durable writes every backend shares, written once over
//! [`Conn`](crate::sql::Conn): the transition writer and the checks a
//! transition is applied under (the claim, the version, a pause holding a
//! re-drive back). Each runs inside the transaction its caller opened, so a
//! transition is written whole or not at all.

use std::collections::BTreeSet;

use qflow_instance::history::HistoryEvent;
use qflow_instance::snapshot::canonical_string;
use qflow_instance::{OutboxChange, Purpose, Transition};

use crate::contain::{cause_in_transition, CauseInTransition};
use crate::sql::{args, Conn, Lock};
use crate::{poison_reason, StoreError};

/// The notification channel of poison wakes (PostgreSQL's `LISTEN`).
pub(crate) const WAKE_CHANNEL: &str = "qflow_poison_wake";

/// The notification channel of new due work (PostgreSQL's `LISTEN`): a
/// start, a decision taken outside a serving loop's group (an answer, an
/// operator's pick, a migration), an unpause, a quarantine released. The
/// payload is who made it (a claim owner, or empty), so a serving loop
/// skips its own. Sent at most once per transaction (PostgreSQL folds
/// equal notifications of one transaction into one).
pub(crate) const WORK_CHANNEL: &str = "qflow_work";

/// Tell the serving replicas that this transaction, when it commits, made
/// work that may be due now (nothing on SQLite: no notifications there).
pub(crate) fn work_made(db: &mut dyn Conn, by: &str) -> Result<(), StoreError> {
    db.notify(WORK_CHANNEL, by)
}

/// The pause-match rule, once: a retry park `t` is held by a pause `p` of
/// its class or of its dependency, unless a half-open breaker chose it as
/// one of its canaries (`breaker_canaries`, [`crate::breaker`]): a canary
/// goes through its dependency's pause on its own schedule (a class pause
/// still holds it).
macro_rules! matches_pause {
    () => {
        "((p.kind = 'class' AND p.value = t.class) OR (p.kind = 'dependency' AND p.value = t.dependency AND NOT EXISTS (SELECT 1 FROM breaker_canaries bc WHERE bc.timer_id = t.id)))"
    };
}
pub(crate) use matches_pause;

/// Open an incident: instance, node, kind, message, when.
pub(crate) const OPEN_INCIDENT: &str =
    "INSERT INTO incidents(instance_id, node, kind, message, opened_ms) VALUES ($1, $2, $3, $4, $5)";

/// Refuse a transition unless `owner` holds the instance's live claim and
/// the instance is still at `expected_version`; on PostgreSQL the row stays
/// locked until the transaction ends.
pub(crate) fn check_claim(
    db: &mut dyn Conn,
    instance: &str,
    owner: &str,
    expected_version: i64,
    wall_now_ms: i64,
) -> Result<(), StoreError> {
    let (held, until, version, quarantined): (Option<String>, Option<i64>, i64, Option<i64>) = db
        .opt(
            "SELECT claim_owner, claim_expires_ms, version, quarantined_ms FROM instances WHERE id = $1 FOR UPDATE",
            args![instance],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?
        .ok_or_else(|| StoreError::NoInstance(instance.into()))?;
    if quarantined.is_some() {
        return Err(StoreError::Quarantined(instance.into()));
    }
    if held.as_deref() != Some(owner) || until.is_none_or(|u| u < wall_now_ms) {
        return Err(StoreError::Claimed {
            instance: instance.into(),
            owner: held.unwrap_or_else(|| "nobody".into()),
            until_ms: until.unwrap_or(0),
        });
    }
    if version != expected_version {
        return Err(StoreError::Conflict(instance.into()));
    }
    Ok(())
}

/// Write one transition inside an open transaction; returns its seq.
/// `owner` signs the poison wakes it sends (empty for a start, which no
/// one claims yet).
pub(crate) fn write_transition(
    db: &mut dyn Conn,
    instance: &str,
    owner: &str,
    version: i64,
    t: &Transition,
    at_ms: i64,
) -> Result<i64, StoreError> {
    refuse_held_redrive(db, instance, t)?;
    let new_version = version + 1;
    let status = t.status.as_str();
    let changed = if t.keep_stored_snapshot {
        // A snapshot that cannot be decoded stays byte for byte as stored.
        db.execute(
            "UPDATE instances SET status = $2, version = $3, updated_ms = $4 WHERE id = $1 AND version = $5",
            args![instance, status, new_version, at_ms, version],
        )?
    } else {
        db.execute(
            "UPDATE instances SET status = $2, snapshot = $3, version = $4, updated_ms = $5 WHERE id = $1 AND version = $6",
            args![instance, status, t.snapshot.encode(), new_version, at_ms, version],
        )?
    };
    if changed != 1 {
        return Err(StoreError::Conflict(instance.into()));
    }
    let seq: i64 = db.one(
        "INSERT INTO transitions(instance_id, version, at_ms, status, snapshot)
         SELECT id, $2, $3, $4, snapshot FROM instances WHERE id = $1 RETURNING seq",
        args![instance, new_version, at_ms, status],
        |r| r.get(0),
    )?;
    for id in &t.resolve {
        let n = db.execute(
            "UPDATE timers SET state = 'resolved', resolved_seq = $3 WHERE id = $1 AND instance_id = $2 AND state = 'armed'",
            args![id, instance, seq],
        )?;
        if n != 1 {
            return Err(StoreError::Conflict(instance.into()));
        }
    }
    for a in &t.arm {
        let (class, dependency) = if a.purpose == Purpose::Retry {
            park_cause(db, instance, t, &a.node)?
        } else {
            (None, None)
        };
        db.execute(
            "INSERT INTO timers(instance_id, node, purpose, due_ms, attempt, state, armed_seq, class, dependency) VALUES ($1, $2, $3, $4, $5, 'armed', $6, $7, $8)",
            args![instance, a.node, a.purpose.as_str(), a.due_ms, a.attempt, seq, class, dependency],
        )?;
    }
    for e in &t.history {
        let event = &e.line.event;
        db.execute(
            "INSERT INTO history(transition_seq, instance_id, at_ms, kind, node, attempt, code, task, timer_id, event_index, detail)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            args![
                seq,
                instance,
                at_ms,
                event.kind(),
                e.line.node,
                event.attempt(),
                event.code(),
                event.task(),
                e.timer_id,
                e.event_index,
                e.line.to_canonical()
            ],
        )?;
    }
    // A migration renames call nodes: their outbox rows, key ledger and
    // correlations go with them. Two passes through a name no node id can
    // have (ids are XML names, never containing a space), so a swap
    // `a=b, b=a` cannot collide.
    for pass in 0..2 {
        for (old, new) in &t.calls.rename {
            let (from, to) = if pass == 0 {
                (old.clone(), format!("migrating {new}"))
            } else {
                (format!("migrating {new}"), new.clone())
            };
            db.execute(
                "UPDATE outbox SET node = $3 WHERE instance_id = $1 AND node = $2",
                args![instance, from, to],
            )?;
            // The ledger moves with its node; a node that already had keys
            // keeps the higher count.
            db.execute(
                "INSERT INTO request_keys(instance_id, node, last)
                 SELECT instance_id, $3, last FROM request_keys WHERE instance_id = $1 AND node = $2
                 ON CONFLICT (instance_id, node) DO UPDATE SET last = CASE WHEN excluded.last > request_keys.last THEN excluded.last ELSE request_keys.last END",
                args![instance, from, to],
            )?;
            db.execute(
                "DELETE FROM request_keys WHERE instance_id = $1 AND node = $2",
                args![instance, from],
            )?;
            db.execute(
                "UPDATE correlations SET key = $3, node = $4 WHERE key = $2 AND instance_id = $1",
                args![
                    instance,
                    format!("{instance}/{from}"),
                    format!("{instance}/{to}"),
                    to
                ],
            )?;
        }
    }
    // The dead attempt's undelivered requests (pending and poisoned) are
    // withdrawn at its backoff park: the one exception to "the outbox never
    // deletes an undelivered row". A superseded request delivered late would
    // race the re-drive's fresh emission into a double submit, and one
    // poisoning late would fail the live attempt and burn a budget slot it
    // never spent. Nothing is forgotten: the failure lives on in the marker,
    // the attempt counter, the history, and the poison's incident.
    for node in &t.calls.withdraw {
        db.execute(
            "DELETE FROM outbox WHERE instance_id = $1 AND node = $2 AND state IN ('pending','poisoned')",
            args![instance, node],
        )?;
    }
    // Everywhere else an undelivered row is kept: marked `abandoned` with
    // why it will never be delivered (a poisoned row's reason says it was
    // poisoned first). Before any emission of this transition, so a flow
    // that re-enters the call node keeps its fresh request pending.
    for a in &t.calls.abandon {
        db.execute(
            "UPDATE outbox SET reason = CASE WHEN state = 'poisoned' THEN 'poisoned' || COALESCE(' (' || reason || ')', '') || ', then ' || $3 ELSE $3 END,
                               state = 'abandoned'
             WHERE instance_id = $1 AND (CAST($2 AS TEXT) IS NULL OR node = $2) AND state IN ('pending','poisoned')",
            args![instance, a.node, a.reason],
        )?;
    }
    for r in &t.calls.emit {
        db.execute(
            "INSERT INTO outbox(instance_id, node, channel, operation, attempt, idempotency_key, payload, state, deliveries, next_ms, created_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 0, $8, $8)",
            args![
                instance,
                r.node,
                r.channel,
                r.operation,
                r.attempt,
                r.idempotency_key,
                canonical_string(&r.payload),
                at_ms
            ],
        )?;
        db.execute(
            "INSERT INTO request_keys(instance_id, node, last) VALUES ($1, $2, $3)
             ON CONFLICT (instance_id, node) DO UPDATE SET last = CASE WHEN excluded.last > request_keys.last THEN excluded.last ELSE request_keys.last END",
            args![instance, r.node, r.key_number],
        )?;
    }
    for c in &t.calls.outbox {
        let (id, state, deliveries, next) = match c {
            OutboxChange::Delivered { id, deliveries } => (id, "delivered", deliveries, at_ms),
            OutboxChange::Retry {
                id,
                deliveries,
                next_ms,
            } => (id, "pending", deliveries, *next_ms),
            OutboxChange::Poisoned { id, deliveries } => (id, "poisoned", deliveries, at_ms),
        };
        let node: Option<String> = db.opt(
            "UPDATE outbox SET state = $3, deliveries = $4, next_ms = $5 WHERE id = $1 AND instance_id = $2 AND state = 'pending' RETURNING node",
            args![id, instance, state, deliveries, next],
            |r| r.get(0),
        )?;
        let Some(node) = node else {
            return Err(StoreError::Conflict(instance.into()));
        };
        if matches!(c, OutboxChange::Poisoned { .. }) {
            if let Some(why) = poison_reason(t) {
                // Why it was poisoned (the counterpart's status and body,
                // or the deliveries spent), kept on the row.
                db.execute(
                    "UPDATE outbox SET reason = $2 WHERE id = $1",
                    args![id, why],
                )?;
            }
            // Sent when (and only if) this transaction commits.
            db.notify(WAKE_CHANNEL, &format!("{owner}\n{instance}\n{node}"))?;
        }
    }
    for node in &t.calls.correlate {
        db.execute(
            "INSERT INTO correlations(key, instance_id, node, created_ms) VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING",
            args![format!("{instance}/{node}"), instance, node, at_ms],
        )?;
    }
    for node in &t.calls.retire {
        db.execute(
            "DELETE FROM correlations WHERE key = $1",
            args![format!("{instance}/{node}")],
        )?;
    }
    for node in &t.close_incidents {
        db.execute(
            "UPDATE incidents SET closed_ms = $3 WHERE instance_id = $1 AND node = $2 AND closed_ms IS NULL",
            args![instance, node, at_ms],
        )?;
    }
    for node in &t.close_in_flight {
        db.execute(
            "UPDATE incidents SET closed_ms = $3 WHERE instance_id = $1 AND node = $2 AND kind = 'in-flight' AND closed_ms IS NULL",
            args![instance, node, at_ms],
        )?;
    }
    for i in &t.open_incidents {
        db.execute(
            OPEN_INCIDENT,
            args![instance, i.node, i.kind.as_str(), i.message, at_ms],
        )?;
    }
    Ok(seq)
}

/// The armed retry timers of an instance whose re-drive a pause holds back.
pub(crate) fn held_timers(db: &mut dyn Conn, instance: &str) -> Result<BTreeSet<i64>, StoreError> {
    Ok(db
        .rows(
            concat!(
                "SELECT t.id FROM timers t WHERE t.instance_id = $1 AND t.state = 'armed' AND t.purpose = 'retry'
                 AND EXISTS (SELECT 1 FROM pauses p WHERE ",
                matches_pause!(),
                ")"
            ),
            args![instance],
            |r| r.get(0),
        )?
        .into_iter()
        .collect())
}

/// The armed retry timers of an instance a half-open breaker chose as
/// canaries.
pub(crate) fn canary_timers(
    db: &mut dyn Conn,
    instance: &str,
) -> Result<BTreeSet<i64>, StoreError> {
    Ok(db
        .rows(
            "SELECT t.id FROM timers t JOIN breaker_canaries bc ON bc.timer_id = t.id
             WHERE t.instance_id = $1 AND t.state = 'armed' AND t.purpose = 'retry'",
            args![instance],
            |r| r.get(0),
        )?
        .into_iter()
        .collect())
}

/// Refuse a transition that re-drives a paused park: it resolves a retry
/// timer of a paused class or dependency and makes an attempt of that
/// timer's node. (A transition that cancels the park, an interrupting
/// boundary or a migration, is no re-drive and goes through.) Checked inside
/// the applying transaction, so a replica that read its facts before the
/// pause committed cannot slip a re-drive past it: on PostgreSQL the shared
/// pause lock, held until commit, makes a pause committing meanwhile wait
/// for this transition.
pub(crate) fn refuse_held_redrive(
    db: &mut dyn Conn,
    instance: &str,
    t: &Transition,
) -> Result<(), StoreError> {
    if t.resolve.is_empty() {
        return Ok(());
    }
    db.lock(Lock::PauseShared)?;
    for id in &t.resolve {
        let held: Option<(String, String, String)> = db.opt(
            concat!(
                "SELECT t.node, p.kind, p.value FROM timers t JOIN pauses p ON ",
                matches_pause!(),
                " WHERE t.id = $1 AND t.purpose = 'retry' AND NOT EXISTS (SELECT 1 FROM incidents i
                   WHERE i.instance_id = t.instance_id AND i.node = t.node AND i.kind = 'in-flight' AND i.closed_ms IS NULL)
                 LIMIT 1"
            ),
            args![id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let Some((node, kind, value)) = held else {
            continue;
        };
        let attempts = t.history.iter().any(|e| {
            e.line.node.as_deref() == Some(node.as_str())
                && matches!(e.line.event, HistoryEvent::Attempt(_))
        });
        if attempts {
            return Err(StoreError::Paused {
                instance: instance.into(),
                node,
                kind,
                value,
            });
        }
    }
    Ok(())
}

/// The class and dependency of the failure that parks `node`'s retry in
/// transition `t`: from its own attempt line (a registered task's failed
/// attempt; a channel call's failed attempt, always transient, whose
/// channel is on the call's last attempt line). A park re-armed by a
/// migration keeps the cause of the park it replaces — the retry timer the
/// same transition resolves on the node's old name (`t.calls.rename`: a
/// renamed node, a swap `a=b, b=a`, a second migration with no attempt in
/// between) — so a pause in force goes on holding it; else the node's last
/// attempt line in the store, under its old name.
pub(crate) fn park_cause(
    db: &mut dyn Conn,
    instance: &str,
    t: &Transition,
    node: &str,
) -> Result<(Option<String>, Option<String>), StoreError> {
    let class = match cause_in_transition(t, node) {
        CauseInTransition::Task(class, task) => return Ok((class, Some(task))),
        CauseInTransition::Call => Some("transient".to_string()),
        CauseInTransition::None => None,
    };
    let source = t
        .calls
        .rename
        .iter()
        .find(|(_, new)| new == node)
        .map_or(node, |(old, _)| old.as_str());
    if class.is_none() {
        for id in &t.resolve {
            let replaced: Option<(Option<String>, Option<String>)> = db.opt(
                "SELECT class, dependency FROM timers WHERE id = $1 AND instance_id = $2 AND node = $3 AND purpose = 'retry'",
                args![id, instance, source],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            if let Some(cause @ (Some(_), _) | cause @ (_, Some(_))) = replaced {
                return Ok(cause);
            }
        }
    }
    // The one difference: how a JSON field is read.
    let sql = db.dialect().pick(
        "SELECT COALESCE(json_extract(detail, '$.class'), CASE WHEN task IS NULL THEN 'transient' END),
                COALESCE(task, json_extract(detail, '$.channel'))
         FROM history WHERE instance_id = $1 AND node = $2 AND kind = 'attempt' ORDER BY seq DESC LIMIT 1",
        "SELECT COALESCE(detail::json->>'class', CASE WHEN task IS NULL THEN 'transient' END),
                COALESCE(task, detail::json->>'channel')
         FROM history WHERE instance_id = $1 AND node = $2 AND kind = 'attempt' ORDER BY seq DESC LIMIT 1",
    );
    let last: Option<(Option<String>, Option<String>)> =
        db.opt(sql, args![instance, source], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let (last_class, dependency) = last.unwrap_or((None, None));
    Ok((class.or(last_class), dependency))
}
