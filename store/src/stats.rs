//! The fleet's observations, read from the store: what an operator watches
//! while retries pile up (pending instances by failure class, attempts per
//! completed effect, the oldest next-eligible time, terminal failures by
//! code and reason, unknown outcomes awaiting reconciliation, the attempt
//! rate by dependency, and backlog age by original creation time).
//!
//! Times are the store's: the virtual clock of the runs that wrote it. "Now"
//! for ages is the latest decision in the store, so a simulated day reads
//! the same an hour or a month later.

use serde::Serialize;

use crate::sql::{args, Conn};
use crate::{Store, StoreError};

/// A count under a label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Count {
    pub label: String,
    pub count: u64,
}

/// Instances FAILED with one code and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Terminal {
    pub code: String,
    pub reason: String,
    pub count: u64,
}

/// The attempts one dependency (a registered task's name, or a channel) saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DependencyLoad {
    pub dependency: String,
    pub attempts: u64,
    /// The busiest minute's attempts.
    pub peak_per_minute: u64,
    /// Attempts per minute between its first and last attempt's minute.
    pub mean_per_minute: f64,
    pub first_ms: i64,
    pub last_ms: i64,
}

/// What [`Store::observations`] reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observations {
    pub instances: u64,
    pub unfinished: u64,
    pub completed: u64,
    /// Unfinished instances by the class of their last attempt's failure
    /// (`none`: no attempt of theirs has failed).
    pub pending_by_class: Vec<Count>,
    /// Attempts recorded, all instances.
    pub attempts: u64,
    /// Attempts spent by the instances that completed, over how many did:
    /// what one completed effect cost.
    pub attempts_per_completed: Option<f64>,
    /// The earliest armed timer of an unfinished instance.
    pub oldest_next_eligible_ms: Option<i64>,
    pub terminal: Vec<Terminal>,
    /// Open reconciliation incidents: attempts whose outcome is unknown.
    pub unknown_outcomes: u64,
    pub by_dependency: Vec<DependencyLoad>,
    /// The latest decision in the store: "now" for the backlog's ages.
    pub now_ms: Option<i64>,
    /// Unfinished instances by age since their creation (not their last
    /// attempt): `< 1 min`, `< 10 min`, `< 1 h`, `< 6 h`, `< 1 d`, `>= 1 d`.
    pub backlog_age: Vec<Count>,
    /// The pauses in force, with the parks each holds.
    pub paused: Vec<super::contain::Pause>,
    /// Instances set aside by a quarantine.
    pub quarantined: u64,
    /// Timed decisions `qflow serve` took more than its threshold after
    /// they were due (left out while there are none).
    #[serde(skip_serializing_if = "Late::is_none")]
    pub late: Late,
}

/// The late decisions recorded (`late_decisions`): how many, and the worst.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Late {
    pub decisions: u64,
    /// The latest one's lateness and the worst's (wall clock, ms).
    pub worst_ms: Option<i64>,
    pub last_ms: Option<i64>,
}

impl Late {
    pub fn is_none(&self) -> bool {
        self.decisions == 0
    }
}

pub(crate) const AGE_BUCKETS: [(&str, i64); 5] = [
    ("< 1 min", 60_000),
    ("< 10 min", 600_000),
    ("< 1 h", 3_600_000),
    ("< 6 h", 21_600_000),
    ("< 1 d", 86_400_000),
];

impl Store {
    /// Read the fleet's observations (read-only; whole-table reads, meant
    /// for an operator's look, not the decision loop).
    pub fn observations(&self) -> Result<Observations, StoreError> {
        self.read(observations)
    }

    /// Attempts per minute of the store's time (minute index → attempts),
    /// only minutes that saw one: the load a dependency saw, over time.
    pub fn attempts_per_minute(&self) -> Result<std::collections::BTreeMap<i64, u64>, StoreError> {
        Ok(self
            .read(|db| {
                db.rows(
                    "SELECT at_ms / 60000, COUNT(*) FROM history WHERE kind = 'attempt' GROUP BY 1 ORDER BY 1",
                    args![],
                    |r| Ok((r.get::<i64>(0)?, r.get::<u64>(1)?)),
                )
            })?
            .into_iter()
            .collect())
    }
}

fn observations(db: &mut dyn Conn) -> Result<Observations, StoreError> {
    let (instances, unfinished, completed): (u64, u64, u64) = db.one(
        "SELECT COUNT(*), COUNT(*) FILTER (WHERE status IN ('running','waiting')), COUNT(*) FILTER (WHERE status = 'completed') FROM instances",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    // The three statements that read JSON: SQLite's `json_extract`,
    // PostgreSQL's `->>`.
    let pending_by_class = db.rows(
        db.dialect().pick(
            "SELECT COALESCE(json_extract(h.detail, '$.class'), 'none') AS class, COUNT(*) FROM instances i
             LEFT JOIN history h ON h.seq = (SELECT MAX(seq) FROM history WHERE instance_id = i.id AND kind = 'attempt')
             WHERE i.status IN ('running','waiting') GROUP BY class ORDER BY 2 DESC, 1",
            "SELECT COALESCE(h.detail::json->>'class', 'none') AS class, COUNT(*) FROM instances i
             LEFT JOIN history h ON h.seq = (SELECT MAX(seq) FROM history WHERE instance_id = i.id AND kind = 'attempt')
             WHERE i.status IN ('running','waiting') GROUP BY class ORDER BY 2 DESC, 1",
        ),
        args![],
        |r| {
            Ok(Count {
                label: r.get(0)?,
                count: r.get(1)?,
            })
        },
    )?;
    let of_completed: i64 = db.one(
        "SELECT COUNT(*) FROM history h JOIN instances i ON i.id = h.instance_id WHERE h.kind = 'attempt' AND i.status = 'completed'",
        args![],
        |r| r.get(0),
    )?;
    let oldest_next_eligible_ms: Option<i64> = db.one(
        "SELECT MIN(t.due_ms) FROM timers t JOIN instances i ON i.id = t.instance_id
         WHERE t.state = 'armed' AND i.status IN ('running','waiting')",
        args![],
        |r| r.get(0),
    )?;
    let terminal = db.rows(
        db.dialect().pick(
            "SELECT COALESCE(h.code, json_extract(h.detail, '$.code'), '?'), COALESCE(json_extract(h.detail, '$.reason'), '?'), COUNT(*)
             FROM instances i JOIN history h ON h.seq = (SELECT MAX(seq) FROM history WHERE instance_id = i.id AND kind = 'failed')
             WHERE i.status = 'failed' GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2",
            "SELECT COALESCE(h.code, h.detail::json->>'code', '?'), COALESCE(h.detail::json->>'reason', '?'), COUNT(*)
             FROM instances i JOIN history h ON h.seq = (SELECT MAX(seq) FROM history WHERE instance_id = i.id AND kind = 'failed')
             WHERE i.status = 'failed' GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2",
        ),
        args![],
        |r| {
            Ok(Terminal {
                code: r.get(0)?,
                reason: r.get(1)?,
                count: r.get(2)?,
            })
        },
    )?;
    let unknown_outcomes: u64 = db.one(
        "SELECT COUNT(*) FROM incidents WHERE kind = 'reconciliation' AND closed_ms IS NULL",
        args![],
        |r| r.get(0),
    )?;
    let by_dependency = db.rows(
        db.dialect().pick(
            "SELECT dep, CAST(SUM(n) AS BIGINT), MAX(n), MIN(m), MAX(m), MIN(first), MAX(last) FROM (
                 SELECT COALESCE(task, json_extract(detail, '$.channel'), '?') AS dep, at_ms / 60000 AS m,
                        COUNT(*) AS n, MIN(at_ms) AS first, MAX(at_ms) AS last
                 FROM history WHERE kind = 'attempt' GROUP BY dep, m) per_minute
             GROUP BY dep ORDER BY 2 DESC, 1",
            "SELECT dep, CAST(SUM(n) AS BIGINT), MAX(n), MIN(m), MAX(m), MIN(first), MAX(last) FROM (
                 SELECT COALESCE(task, detail::json->>'channel', '?') AS dep, at_ms / 60000 AS m,
                        COUNT(*) AS n, MIN(at_ms) AS first, MAX(at_ms) AS last
                 FROM history WHERE kind = 'attempt' GROUP BY dep, m) per_minute
             GROUP BY dep ORDER BY 2 DESC, 1",
        ),
        args![],
        |r| {
            let attempts: u64 = r.get(1)?;
            let (m0, m1): (i64, i64) = (r.get(3)?, r.get(4)?);
            Ok(DependencyLoad {
                dependency: r.get(0)?,
                attempts,
                peak_per_minute: r.get(2)?,
                mean_per_minute: attempts as f64 / (m1 - m0 + 1) as f64,
                first_ms: r.get(5)?,
                last_ms: r.get(6)?,
            })
        },
    )?;
    // Every attempt line is in exactly one dependency's count: their sum
    // is the attempts recorded, without another pass over the history.
    let attempts: u64 = by_dependency.iter().map(|d| d.attempts).sum();
    let now_ms: Option<i64> =
        db.one("SELECT MAX(at_ms) FROM transitions", args![], |r| r.get(0))?;
    // One pass over the unfinished instances, each counted in the first
    // bucket its age is under (six passes before, one per bucket).
    let mut backlog_age = Vec::new();
    if let Some(now) = now_ms {
        let mut by_bucket = [0u64; AGE_BUCKETS.len() + 1];
        let [a, b, c, d, e] = AGE_BUCKETS.map(|(_, upper)| upper);
        let rows: Vec<(i64, u64)> = db.rows(
            "SELECT CASE WHEN $1 - started_ms < $2 THEN 0 WHEN $1 - started_ms < $3 THEN 1
                         WHEN $1 - started_ms < $4 THEN 2 WHEN $1 - started_ms < $5 THEN 3
                         WHEN $1 - started_ms < $6 THEN 4 ELSE 5 END AS bucket, COUNT(*)
             FROM instances WHERE status IN ('running','waiting') GROUP BY bucket",
            args![now, a, b, c, d, e],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        for (bucket, n) in rows {
            by_bucket[bucket.clamp(0, AGE_BUCKETS.len() as i64) as usize] = n;
        }
        for ((label, _), count) in AGE_BUCKETS
            .iter()
            .copied()
            .chain([(">= 1 d", i64::MAX)])
            .zip(by_bucket)
        {
            backlog_age.push(Count {
                label: label.into(),
                count,
            });
        }
    }
    let paused = crate::contain::pauses_in(db)?;
    let quarantined: u64 = db.one(
        "SELECT COUNT(*) FROM instances WHERE quarantined_ms IS NOT NULL",
        args![],
        |r| r.get(0),
    )?;
    let late = db.one(
        "SELECT COUNT(*), MAX(decided_ms - due_ms),
                (SELECT decided_ms - due_ms FROM late_decisions ORDER BY seq DESC LIMIT 1)
         FROM late_decisions",
        args![],
        |r| {
            Ok(Late {
                decisions: r.get(0)?,
                worst_ms: r.get(1)?,
                last_ms: r.get(2)?,
            })
        },
    )?;
    Ok(Observations {
        late,
        paused,
        quarantined,
        instances,
        unfinished,
        completed,
        pending_by_class,
        attempts,
        attempts_per_completed: (completed > 0).then(|| of_completed as f64 / completed as f64),
        oldest_next_eligible_ms,
        terminal,
        unknown_outcomes,
        by_dependency,
        now_ms,
        backlog_age,
    })
}
