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
    /// The remote requests it received: a registered task's attempts (one
    /// request each), a channel's deliveries (an attempt is one delivery
    /// or more: retries-multiply.txt's load is counted in these).
    pub requests: u64,
    /// The busiest minute's requests.
    pub requests_peak_per_minute: u64,
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

/// The dependency a history line belongs to, as SQL in each dialect's
/// JSON spelling: a task line's task, else the channel its detail names.
/// Every per-dependency count (the stats, the load window) groups by it.
macro_rules! line_dependency {
    (sqlite) => {
        "COALESCE(task, json_extract(detail, '$.channel'), '?')"
    };
    (postgres) => {
        "COALESCE(task, detail::json->>'channel', '?')"
    };
}

/// The minutes [`Store::load_window`] reads at most: a day.
pub const LOAD_WINDOW_MAX_MINUTES: u32 = 24 * 60;

/// The window every face shows by default (`qflow stats`, the web fleet
/// page, the console): the last hour, long enough to see a release ramp or
/// an outage rise and fall, short enough to read only the live tail of a
/// store with millions of history lines.
pub const LOAD_WINDOW_MINUTES: u32 = 60;

/// Attempts and requests per minute per dependency, over a bounded window
/// of the store's clock ending at its latest decision ([`Store::load_window`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadWindow {
    /// How many minutes the window spans.
    pub minutes: u32,
    /// The window's first minute (a minute index: ms / 60,000 of the
    /// store's clock); `None` when the store has no decision yet.
    pub first_minute: Option<i64>,
    /// Its last minute: the one holding the store's latest decision.
    pub last_minute: Option<i64>,
    /// Each dependency with an attempt or a request in the window, most
    /// requests first.
    pub dependencies: Vec<MinuteLoad>,
}

/// One dependency's load, a count per minute of the window, oldest first
/// (`minutes` entries each; a minute without any counts 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MinuteLoad {
    pub dependency: String,
    /// Attempts per minute (a task's attempt, a call's attempt).
    pub attempts_per_minute: Vec<u64>,
    /// Requests per minute: a task's attempts, a channel's deliveries
    /// (as [`DependencyLoad::requests`] counts them).
    pub requests_per_minute: Vec<u64>,
}

impl MinuteLoad {
    pub fn attempts(&self) -> u64 {
        self.attempts_per_minute.iter().sum()
    }
    pub fn requests(&self) -> u64 {
        self.requests_per_minute.iter().sum()
    }
    /// The busiest minute's requests.
    pub fn peak_requests(&self) -> u64 {
        self.requests_per_minute.iter().copied().max().unwrap_or(0)
    }
    /// The requests of the window's last minute (the latest decision's).
    pub fn latest_requests(&self) -> u64 {
        self.requests_per_minute.last().copied().unwrap_or(0)
    }
}

impl Store {
    /// The last `minutes` minutes' attempts and requests per dependency
    /// (at most [`LOAD_WINDOW_MAX_MINUTES`]), the window ending with the
    /// minute of the store's latest decision, so that it follows a
    /// running `serve` and reads a simulated day the same later. Only the
    /// window's history lines are read (`history_load_by_time`, migration 14).
    pub fn load_window(&self, minutes: u32) -> Result<LoadWindow, StoreError> {
        let minutes = minutes.clamp(1, LOAD_WINDOW_MAX_MINUTES);
        self.read(|db| {
            // The latest of the newest transitions by number, not of all
            // of them: a read of the key's tail instead of the whole table,
            // and a thousand rows cover replicas committing out of order.
            let latest: Option<i64> = db.one(
                "SELECT MAX(at_ms) FROM (SELECT at_ms FROM transitions ORDER BY seq DESC LIMIT 1000) AS newest",
                args![],
                |r| r.get(0),
            )?;
            let Some(latest) = latest else {
                return Ok(LoadWindow {
                    minutes,
                    first_minute: None,
                    last_minute: None,
                    dependencies: Vec::new(),
                });
            };
            let last = latest.div_euclid(60_000);
            let first = last - i64::from(minutes) + 1;
            let rows: Vec<(String, i64, u64, u64)> = db.rows(
                db.dialect().pick(
                    concat!("SELECT ", line_dependency!(sqlite), " AS dep, at_ms / 60000 AS m,
                            COUNT(*) FILTER (WHERE kind = 'attempt'),
                            COUNT(*) FILTER (WHERE (kind = 'attempt' AND task IS NOT NULL) OR kind = 'delivery')
                     FROM history WHERE kind IN ('attempt', 'delivery') AND at_ms >= $1 AND at_ms < $2
                     GROUP BY dep, m"),
                    concat!("SELECT ", line_dependency!(postgres), " AS dep, at_ms / 60000 AS m,
                            COUNT(*) FILTER (WHERE kind = 'attempt'),
                            COUNT(*) FILTER (WHERE (kind = 'attempt' AND task IS NOT NULL) OR kind = 'delivery')
                     FROM history WHERE kind IN ('attempt', 'delivery') AND at_ms >= $1 AND at_ms < $2
                     GROUP BY dep, m"),
                ),
                args![first * 60_000, (last + 1) * 60_000],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?;
            let mut dependencies: Vec<MinuteLoad> = Vec::new();
            for (dependency, m, attempts, requests) in rows {
                let at = match dependencies.iter().position(|d| d.dependency == dependency) {
                    Some(i) => i,
                    None => {
                        dependencies.push(MinuteLoad {
                            dependency,
                            attempts_per_minute: vec![0; minutes as usize],
                            requests_per_minute: vec![0; minutes as usize],
                        });
                        dependencies.len() - 1
                    }
                };
                let k = (m - first).clamp(0, i64::from(minutes) - 1) as usize;
                dependencies[at].attempts_per_minute[k] += attempts;
                dependencies[at].requests_per_minute[k] += requests;
            }
            dependencies.sort_by(|a, b| {
                b.requests()
                    .cmp(&a.requests())
                    .then(b.attempts().cmp(&a.attempts()))
                    .then(a.dependency.cmp(&b.dependency))
            });
            Ok(LoadWindow {
                minutes,
                first_minute: Some(first),
                last_minute: Some(last),
                dependencies,
            })
        })
    }
}

impl Store {
    /// How many of `deployment`'s COMPLETED instances reached each end
    /// event (an instance whose branches end at two counts at both), by
    /// the end event's id: the history's `end` lines.
    pub fn completions_by_end(&self, deployment: i64) -> Result<Vec<(String, u64)>, StoreError> {
        self.read(|db| {
            db.rows(
                "SELECT h.node, COUNT(DISTINCT h.instance_id) FROM instances i
                 JOIN history h ON h.instance_id = i.id
                 WHERE i.deployment_id = $1 AND i.status = 'completed' AND h.kind = 'end' AND h.node IS NOT NULL
                 GROUP BY h.node ORDER BY h.node",
                args![deployment],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    }
}

/// One armed retry park of an unfinished instance, with what a forecast or
/// a what-if re-decides it from: the instance's snapshot (its attempt
/// counter and first attempt), the park's due time, and the history line
/// of the failure that armed it (`None` when another decision armed it: a
/// migration re-arms a park at the same instant). Facts only: the runtime
/// decides what they mean ([`Store::retry_parks`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPark {
    pub timer: i64,
    pub instance: String,
    pub deployment_id: i64,
    pub process_id: String,
    pub node: String,
    /// When the park is due (the store's clock, absolute ms): its next
    /// eligible time (a ramped release's instant when one holds it).
    pub due_ms: i64,
    /// The dependency and failure class the park recorded (`None` on a
    /// park armed before qflow recorded them).
    pub dependency: Option<String>,
    pub class: Option<String>,
    /// Held: its class or dependency is paused, or the instance is
    /// quarantined. A held park makes no attempt until it is released.
    pub held: bool,
    pub snapshot: Vec<u8>,
    pub started_ms: i64,
    /// The failure that armed it: when it was decided and its history line
    /// (canonical JSON).
    pub failed_ms: Option<i64>,
    pub failure_line: Option<String>,
}

impl Store {
    /// Every armed retry park of an unfinished instance (of `deployments`
    /// only, when given), in the order of their due time, and the latest
    /// decision the store holds. Read-only: what `qflow stats`' exhaustion
    /// forecast and `qflow simulate --from`'s what-if read.
    pub fn retry_parks(
        &self,
        deployments: Option<&[i64]>,
    ) -> Result<(Vec<RetryPark>, Option<i64>), StoreError> {
        self.read(|db| {
            let rows = db.rows(
                concat!(
                    "SELECT t.id, t.instance_id, i.deployment_id, d.process_id, t.node, t.due_ms,
                            t.dependency, t.class,
                            CASE WHEN i.quarantined_ms IS NOT NULL OR EXISTS (SELECT 1 FROM pauses p WHERE ",
                    crate::write::matches_pause!(),
                    ") THEN 1 ELSE 0 END,
                            i.snapshot, i.started_ms, h.at_ms, h.detail
                     FROM timers t JOIN instances i ON i.id = t.instance_id
                     JOIN deployments d ON d.id = i.deployment_id
                     LEFT JOIN history h ON h.instance_id = t.instance_id AND h.transition_seq = t.armed_seq
                          AND h.node = t.node AND h.kind IN ('attempt', 'call-failed')
                     WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting')
                     ORDER BY t.due_ms, t.id, h.seq"
                ),
                args![],
                |r| {
                    Ok(RetryPark {
                        timer: r.get(0)?,
                        instance: r.get(1)?,
                        deployment_id: r.get(2)?,
                        process_id: r.get(3)?,
                        node: r.get(4)?,
                        due_ms: r.get(5)?,
                        dependency: r.get(6)?,
                        class: r.get(7)?,
                        held: r.get::<i64>(8)? != 0,
                        snapshot: crate::query::raw_bytes(r.value(9)?),
                        started_ms: r.get(10)?,
                        failed_ms: r.get(11)?,
                        failure_line: r.get(12)?,
                    })
                },
            )?;
            // One park per timer: the last failure line of its transition.
            let mut parks: Vec<RetryPark> = Vec::with_capacity(rows.len());
            for p in rows {
                if deployments.is_some_and(|ds| !ds.contains(&p.deployment_id)) {
                    continue;
                }
                match parks.last_mut() {
                    Some(last) if last.timer == p.timer => *last = p,
                    _ => parks.push(p),
                }
            }
            // The latest of the newest transitions by number, not of all
            // of them: a read of the key's tail instead of the whole table,
            // and a thousand rows cover replicas committing out of order.
            let latest: Option<i64> = db.one(
                "SELECT MAX(at_ms) FROM (SELECT at_ms FROM transitions ORDER BY seq DESC LIMIT 1000) AS newest",
                args![],
                |r| r.get(0),
            )?;
            Ok((parks, latest))
        })
    }
}

fn observations(db: &mut dyn Conn) -> Result<Observations, StoreError> {
    let (instances, unfinished, completed): (u64, u64, u64) = db.one(
        "SELECT COUNT(*), COUNT(*) FILTER (WHERE status IN ('running','waiting')), COUNT(*) FILTER (WHERE status = 'completed') FROM instances",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    // The statements that read JSON: SQLite's `json_extract`,
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
    let mut by_dependency = db.rows(
        db.dialect().pick(
            concat!("SELECT dep, CAST(SUM(n) AS BIGINT), MAX(n), MIN(m), MAX(m), MIN(first), MAX(last) FROM (
                 SELECT ", line_dependency!(sqlite), " AS dep, at_ms / 60000 AS m,
                        COUNT(*) AS n, MIN(at_ms) AS first, MAX(at_ms) AS last
                 FROM history WHERE kind = 'attempt' GROUP BY dep, m) per_minute
             GROUP BY dep ORDER BY 2 DESC, 1"),
            concat!("SELECT dep, CAST(SUM(n) AS BIGINT), MAX(n), MIN(m), MAX(m), MIN(first), MAX(last) FROM (
                 SELECT ", line_dependency!(postgres), " AS dep, at_ms / 60000 AS m,
                        COUNT(*) AS n, MIN(at_ms) AS first, MAX(at_ms) AS last
                 FROM history WHERE kind = 'attempt' GROUP BY dep, m) per_minute
             GROUP BY dep ORDER BY 2 DESC, 1"),
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
                requests: 0,
                requests_peak_per_minute: 0,
            })
        },
    )?;
    // Requests: a task's attempt lines and a channel's delivery lines (a
    // call's attempt line is not a request of its own: its deliveries are).
    let requests: Vec<(String, u64, u64)> = db.rows(
        db.dialect().pick(
            concat!(
                "SELECT dep, CAST(SUM(n) AS BIGINT), MAX(n) FROM (
                 SELECT ",
                line_dependency!(sqlite),
                " AS dep, at_ms / 60000 AS m,
                        COUNT(*) AS n
                 FROM history WHERE (kind = 'attempt' AND task IS NOT NULL) OR kind = 'delivery'
                 GROUP BY dep, m) per_minute
             GROUP BY dep"
            ),
            concat!(
                "SELECT dep, CAST(SUM(n) AS BIGINT), MAX(n) FROM (
                 SELECT ",
                line_dependency!(postgres),
                " AS dep, at_ms / 60000 AS m,
                        COUNT(*) AS n
                 FROM history WHERE (kind = 'attempt' AND task IS NOT NULL) OR kind = 'delivery'
                 GROUP BY dep, m) per_minute
             GROUP BY dep"
            ),
        ),
        args![],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    for (dependency, total, peak) in requests {
        if let Some(d) = by_dependency
            .iter_mut()
            .find(|d| d.dependency == dependency)
        {
            d.requests = total;
            d.requests_peak_per_minute = peak;
        }
    }
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
