//! The fleet's observations on PostgreSQL: the same figures as SQLite's
//! `stats.rs`, in PostgreSQL's SQL (JSON through `::json->>`).

use super::super::stats::{Count, DependencyLoad, Observations, Terminal, AGE_BUCKETS};
use super::{Postgres, StoreError};

impl Postgres {
    pub fn observations(&self) -> Result<Observations, StoreError> {
        self.read(|db| {
            let r = db.one(
                "SELECT COUNT(*), COUNT(*) FILTER (WHERE status IN ('running','waiting')), COUNT(*) FILTER (WHERE status = 'completed') FROM instances",
                &[],
            )?;
            let (instances, unfinished, completed): (i64, i64, i64) = (r.get(0), r.get(1), r.get(2));
            let pending_by_class = db
                .rows(
                    "SELECT COALESCE(h.detail::json->>'class', 'none') AS class, COUNT(*) FROM instances i
                     LEFT JOIN history h ON h.seq = (SELECT MAX(seq) FROM history WHERE instance_id = i.id AND kind = 'attempt')
                     WHERE i.status IN ('running','waiting') GROUP BY class ORDER BY 2 DESC, 1",
                    &[],
                )?
                .iter()
                .map(|r| Count {
                    label: r.get(0),
                    count: r.get::<_, i64>(1) as u64,
                })
                .collect();
            let attempts: i64 = db
                .one("SELECT COUNT(*) FROM history WHERE kind = 'attempt'", &[])?
                .get(0);
            let of_completed: i64 = db
                .one(
                    "SELECT COUNT(*) FROM history h JOIN instances i ON i.id = h.instance_id WHERE h.kind = 'attempt' AND i.status = 'completed'",
                    &[],
                )?
                .get(0);
            let oldest_next_eligible_ms: Option<i64> = db
                .one(
                    "SELECT MIN(t.due_ms) FROM timers t JOIN instances i ON i.id = t.instance_id
                     WHERE t.state = 'armed' AND i.status IN ('running','waiting')",
                    &[],
                )?
                .get(0);
            let terminal = db
                .rows(
                    "SELECT COALESCE(h.code, h.detail::json->>'code', '?'), COALESCE(h.detail::json->>'reason', '?'), COUNT(*)
                     FROM instances i JOIN history h ON h.seq = (SELECT MAX(seq) FROM history WHERE instance_id = i.id AND kind = 'failed')
                     WHERE i.status = 'failed' GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2",
                    &[],
                )?
                .iter()
                .map(|r| Terminal {
                    code: r.get(0),
                    reason: r.get(1),
                    count: r.get::<_, i64>(2) as u64,
                })
                .collect();
            let unknown_outcomes: i64 = db
                .one(
                    "SELECT COUNT(*) FROM incidents WHERE kind = 'reconciliation' AND closed_ms IS NULL",
                    &[],
                )?
                .get(0);
            let by_dependency = db
                .rows(
                    "SELECT dep, SUM(n)::BIGINT, MAX(n), MIN(m), MAX(m), MIN(first), MAX(last) FROM (
                         SELECT COALESCE(task, detail::json->>'channel', '?') AS dep, at_ms / 60000 AS m,
                                COUNT(*) AS n, MIN(at_ms) AS first, MAX(at_ms) AS last
                         FROM history WHERE kind = 'attempt' GROUP BY dep, m) per_minute
                     GROUP BY dep ORDER BY 2 DESC, 1",
                    &[],
                )?
                .iter()
                .map(|r| {
                    let attempts = r.get::<_, i64>(1) as u64;
                    let (m0, m1): (i64, i64) = (r.get(3), r.get(4));
                    DependencyLoad {
                        dependency: r.get(0),
                        attempts,
                        peak_per_minute: r.get::<_, i64>(2) as u64,
                        mean_per_minute: attempts as f64 / (m1 - m0 + 1) as f64,
                        first_ms: r.get(5),
                        last_ms: r.get(6),
                    }
                })
                .collect();
            let now_ms: Option<i64> = db.one("SELECT MAX(at_ms) FROM transitions", &[])?.get(0);
            let mut backlog_age = Vec::new();
            if let Some(now) = now_ms {
                let mut lower = i64::MIN;
                for (label, upper) in AGE_BUCKETS.iter().copied().chain([(">= 1 d", i64::MAX)]) {
                    // Compared as differences that cannot overflow: the
                    // open ends are the extreme values.
                    let n: i64 = db
                        .one(
                            "SELECT COUNT(*) FROM instances WHERE status IN ('running','waiting')
                             AND ($1::BIGINT - started_ms)::NUMERIC >= ($2::BIGINT)::NUMERIC AND ($1::BIGINT - started_ms)::NUMERIC < ($3::BIGINT)::NUMERIC",
                            &[&now, &lower, &upper],
                        )?
                        .get(0);
                    backlog_age.push(Count {
                        label: label.into(),
                        count: n as u64,
                    });
                    lower = upper;
                }
            }
            let quarantined: i64 = db
                .one(
                    "SELECT COUNT(*) FROM instances WHERE quarantined_ms IS NOT NULL",
                    &[],
                )?
                .get(0);
            let r = db.one(
                "SELECT COUNT(*), MAX(decided_ms - due_ms),
                        (SELECT decided_ms - due_ms FROM late_decisions ORDER BY seq DESC LIMIT 1)
                 FROM late_decisions",
                &[],
            )?;
            let late = super::super::stats::Late {
                decisions: r.get::<_, i64>(0) as u64,
                worst_ms: r.get(1),
                last_ms: r.get(2),
            };
            Ok(Observations {
                late,
                paused: crate::contain::pauses_in(db)?,
                quarantined: quarantined as u64,
                instances: instances as u64,
                unfinished: unfinished as u64,
                completed: completed as u64,
                pending_by_class,
                attempts: attempts as u64,
                attempts_per_completed: (completed > 0)
                    .then(|| of_completed as f64 / completed as f64),
                oldest_next_eligible_ms,
                terminal,
                unknown_outcomes: unknown_outcomes as u64,
                by_dependency,
                now_ms,
                backlog_age,
            })
        })
    }

    pub fn attempts_per_minute(&self) -> Result<std::collections::BTreeMap<i64, u64>, StoreError> {
        self.read(|db| {
            Ok(db
                .rows(
                    "SELECT at_ms / 60000, COUNT(*) FROM history WHERE kind = 'attempt' GROUP BY 1 ORDER BY 1",
                    &[],
                )?
                .iter()
                .map(|r| (r.get::<_, i64>(0), r.get::<_, i64>(1) as u64))
                .collect())
        })
    }
}
