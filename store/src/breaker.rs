//! Circuit breakers, durable: each dependency's breaker state
//! (`breakers`), every move it made (`breaker_transitions`) and the parks
//! chosen as its canaries (`breaker_canaries`).
//!
//! The store never decides: [`Store::breaker_step`] reads the breaker and
//! the facts its machine needs under the breaker's row lock, asks the
//! caller's decision (the runtime's pure `breaker::step`) and applies what
//! it returned in the same transaction:
//!
//! - **open**: the dependency is paused exactly as `qflow pause
//!   --dependency` pauses it (the same `pauses` row, logged in the
//!   containment log with the actor `breaker` and the move's reason), so
//!   every replica holds every request to it;
//! - **half-open**: the pause stays; the earliest-due parks of the
//!   dependency are chosen as canaries (`breaker_canaries`), which the
//!   pause-match rule lets through on their own schedule;
//! - **closed** (its canaries succeeded): the canaries are forgotten and
//!   the breaker's own pause is lifted with a planned release
//!   ([`crate::release`]: a release schedule over the held parks, the
//!   caller's plan). A pause someone else made is left in force.
//!
//! The move is recorded with when and why, so `stats` can tell an outage's
//! breaker story after the fact.

use serde::Serialize;

use crate::contain::{set_pause_in, Actor, PauseChange, PauseKind};
use crate::release::{in_progress, unpause_ramped_in, Planned, ReleasePark, ShapeText};
use crate::sql::{args, Lock, Row};
use crate::{schema, Store, StoreError};
use qflow_instance::breaker::{BreakerDecision, BreakerState, Phase};

/// Who a breaker's pauses and releases are made by, in the containment log.
pub const BREAKER_ACTOR: &str = "breaker";

/// What the observed attempt re-drove, to tell whether it was a canary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe<'a> {
    /// No attempt (a tick), or a first attempt.
    None,
    /// The retry park it re-drove (what a serving loop knows).
    Timer(i64),
    /// An attempt of this instance (what a simulation knows): a canary of
    /// it that has run (its timer no longer armed).
    Instance(&'a str),
}

/// What the store reads for a breaker's decision, in its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BreakerFacts {
    /// The observed attempt re-drove a park chosen as a canary.
    pub canary: bool,
    /// Armed retry parks of the dependency (of unfinished instances) not
    /// chosen as canaries.
    pub parked: u64,
    /// Canaries chosen for the dependency whose outcome is not in yet.
    pub chosen: u32,
}

/// One move of a breaker, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BreakerLogged {
    pub seq: i64,
    pub dependency: String,
    /// Wall clock, ms since the epoch.
    pub at_ms: i64,
    pub from: Phase,
    pub to: Phase,
    pub reason: String,
    /// The release schedule a close made (`qflow unpause --stop-ramp ID`
    /// stops it).
    pub release: Option<i64>,
}

/// A breaker as stored, for `stats` and the faces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BreakerRow {
    pub dependency: String,
    pub state: BreakerState,
    /// Canaries chosen in its half-open phase, and how many of them are
    /// still parked (not run yet).
    pub canaries: u32,
    pub canaries_waiting: u32,
}

/// What one breaker step applied.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BreakerApplied {
    pub state: BreakerState,
    pub moved: Option<BreakerLogged>,
    /// Parks chosen as canaries now.
    pub chose: u32,
    /// The pause an open made, or the unpause a close made.
    pub pause: Option<PauseChange>,
}

impl Store {
    /// Take one decision of `dependency`'s breaker, in one transaction:
    /// read its state (closed when never stored) and the [`BreakerFacts`]
    /// (`timer`: the park the observed attempt re-drove, if any), ask
    /// `decide`, and write what it returned (the state, the move, the
    /// pause, the canaries, the ramped release; see the module's doc).
    /// `shape` and `plan`: the ramp a close releases with, as text for the
    /// schedule and as the plan of the parks' release instants.
    pub fn breaker_step(
        &mut self,
        dependency: &str,
        probe: Probe<'_>,
        wall_now_ms: i64,
        decide: impl FnOnce(&BreakerState, BreakerFacts) -> BreakerDecision,
        shape: &ShapeText,
        plan: impl FnOnce(&[ReleasePark], Option<i64>) -> Planned,
    ) -> Result<BreakerApplied, StoreError> {
        self.write(|db| {
            // The breaker's row, locked: replicas observing the same
            // dependency take turns, each from the state the last left.
            db.execute(
                "INSERT INTO breakers(dependency, phase, since_ms, state) VALUES ($1, 'closed', $2, $3) ON CONFLICT (dependency) DO NOTHING",
                args![dependency, wall_now_ms, state_json(&BreakerState {
                    since_ms: wall_now_ms,
                    ..BreakerState::default()
                })],
            )?;
            let stored: String = db.one(
                "SELECT state FROM breakers WHERE dependency = $1 FOR UPDATE",
                args![dependency],
                |r| r.get(0),
            )?;
            let state: BreakerState = serde_json::from_str(&stored).unwrap_or_default();
            // A canary's outcome is in: its row goes (the machine counts
            // it), so the canaries chosen are those still out.
            let canary: Option<i64> = match probe {
                Probe::Timer(t) => db.opt(
                    "SELECT timer_id FROM breaker_canaries WHERE timer_id = $1 AND dependency = $2",
                    args![t, dependency],
                    |r| r.get(0),
                )?,
                Probe::Instance(i) => db.opt(
                    "SELECT c.timer_id FROM breaker_canaries c JOIN timers t ON t.id = c.timer_id
                     WHERE t.instance_id = $1 AND c.dependency = $2 AND t.state <> 'armed'
                     ORDER BY c.timer_id LIMIT 1",
                    args![i, dependency],
                    |r| r.get(0),
                )?,
                Probe::None => None,
            };
            if let Some(t) = canary {
                db.execute(
                    "DELETE FROM breaker_canaries WHERE timer_id = $1",
                    args![t],
                )?;
            }
            let canary = canary.is_some();
            let (parked, chosen): (i64, i64) = db.one(
                "SELECT (SELECT COUNT(*) FROM timers t JOIN instances i ON i.id = t.instance_id
                         WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting')
                           AND t.dependency = $1
                           AND NOT EXISTS (SELECT 1 FROM breaker_canaries c WHERE c.timer_id = t.id)),
                        (SELECT COUNT(*) FROM breaker_canaries WHERE dependency = $1)",
                args![dependency],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let facts = BreakerFacts {
                canary,
                parked: parked as u64,
                chosen: chosen as u32,
            };
            let d = decide(&state, facts);
            let mut applied = BreakerApplied {
                state: d.state.clone(),
                ..BreakerApplied::default()
            };
            if d.state != state {
                db.execute(
                    "UPDATE breakers SET phase = $2, since_ms = $3, state = $4 WHERE dependency = $1",
                    args![
                        dependency,
                        d.state.phase.as_str(),
                        d.state.since_ms,
                        state_json(&d.state)
                    ],
                )?;
            }
            if let Some(m) = &d.moved {
                let actor = Actor::new(BREAKER_ACTOR).because(Some(&m.reason));
                let mut release = None;
                if m.to != Phase::HalfOpen {
                    db.execute(
                        "DELETE FROM breaker_canaries WHERE dependency = $1",
                        args![dependency],
                    )?;
                }
                match m.to {
                    Phase::Open => {
                        db.lock(Lock::PauseExclusive)?;
                        applied.pause = Some(set_pause_in(
                            db,
                            PauseKind::Dependency,
                            dependency,
                            wall_now_ms,
                            &actor,
                            true,
                        )?);
                    }
                    Phase::Closed => {
                        db.lock(Lock::PauseExclusive)?;
                        let by: Option<Option<String>> = db.opt(
                            "SELECT paused_by FROM pauses WHERE kind = 'dependency' AND value = $1",
                            args![dependency],
                            |r| r.get(0),
                        )?;
                        // Only the breaker's own pause is the breaker's to
                        // lift; an operator's stays until they lift it.
                        if by.flatten().as_deref() == Some(BREAKER_ACTOR) {
                            if in_progress(db, PauseKind::Dependency, dependency)?.is_some() {
                                applied.pause = Some(set_pause_in(
                                    db,
                                    PauseKind::Dependency,
                                    dependency,
                                    wall_now_ms,
                                    &actor,
                                    false,
                                )?);
                            } else {
                                let r = unpause_ramped_in(
                                    db,
                                    PauseKind::Dependency,
                                    dependency,
                                    wall_now_ms,
                                    &actor,
                                    shape,
                                    plan,
                                )?;
                                release = Some(r.schedule);
                                applied.pause = Some(r.unpause);
                            }
                        }
                    }
                    Phase::HalfOpen => {}
                }
                let seq: i64 = db.one(
                    "INSERT INTO breaker_transitions(dependency, at_ms, from_phase, to_phase, reason, release_id)
                     VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
                    args![
                        dependency,
                        wall_now_ms,
                        m.from.as_str(),
                        m.to.as_str(),
                        m.reason,
                        release
                    ],
                    |r| r.get(0),
                )?;
                crate::fault::point("breaker.moved");
                applied.moved = Some(BreakerLogged {
                    seq,
                    dependency: dependency.into(),
                    at_ms: wall_now_ms,
                    from: m.from,
                    to: m.to,
                    reason: m.reason.clone(),
                    release,
                });
            }
            // Canaries pass the breaker's own pause only: while an
            // operator's pause holds the dependency (made after the
            // breaker's was lifted), none is chosen; they are chosen once
            // it is lifted.
            let operators = if d.choose_canaries > 0 {
                let by: Option<Option<String>> = db.opt(
                    "SELECT paused_by FROM pauses WHERE kind = 'dependency' AND value = $1",
                    args![dependency],
                    |r| r.get(0),
                )?;
                by.is_some_and(|b| b.as_deref() != Some(BREAKER_ACTOR))
            } else {
                false
            };
            if d.choose_canaries > 0 && !operators {
                let n = db.execute(
                    "INSERT INTO breaker_canaries(timer_id, dependency, chosen_ms)
                     SELECT t.id, $1, $2 FROM timers t JOIN instances i ON i.id = t.instance_id
                     WHERE t.state = 'armed' AND t.purpose = 'retry' AND i.status IN ('running','waiting')
                       AND i.quarantined_ms IS NULL AND t.dependency = $1
                       AND NOT EXISTS (SELECT 1 FROM breaker_canaries c WHERE c.timer_id = t.id)
                     ORDER BY t.due_ms, t.id LIMIT $3",
                    args![dependency, wall_now_ms, d.choose_canaries as i64],
                )?;
                applied.chose = n as u32;
                // The canaries may be due now: serving replicas are told.
                crate::write::work_made(db, "")?;
            }
            Ok(applied)
        })
    }

    /// Make `dependency`'s canaries due no earlier than `now_ms` (the
    /// run's clock): on a virtual clock, where each instance keeps its own
    /// time, a canary chosen at `now_ms` runs then, not at the instant it
    /// was parked for. (On the wall clock a park overdue is due now
    /// anyway: nothing changes.)
    pub fn breaker_canaries_due(
        &mut self,
        dependency: &str,
        now_ms: i64,
    ) -> Result<u64, StoreError> {
        self.write(|db| {
            db.execute(
                "UPDATE timers SET due_ms = $2 WHERE due_ms < $2 AND state = 'armed'
                   AND id IN (SELECT timer_id FROM breaker_canaries WHERE dependency = $1)",
                args![dependency, now_ms],
            )
        })
    }

    /// Every breaker the store holds, by dependency (none on a database
    /// older than [`schema::BREAKERS`], read without upgrading).
    pub fn breakers(&self) -> Result<Vec<BreakerRow>, StoreError> {
        if self.schema_version()? < schema::BREAKERS {
            return Ok(Vec::new());
        }
        self.read(|db| {
            db.rows(
                "SELECT b.dependency, b.state,
                        (SELECT COUNT(*) FROM breaker_canaries c WHERE c.dependency = b.dependency),
                        (SELECT COUNT(*) FROM breaker_canaries c JOIN timers t ON t.id = c.timer_id
                          WHERE c.dependency = b.dependency AND t.state = 'armed')
                 FROM breakers b ORDER BY b.dependency",
                args![],
                |r| {
                    let state: String = r.get(1)?;
                    Ok(BreakerRow {
                        dependency: r.get(0)?,
                        state: serde_json::from_str(&state).unwrap_or_default(),
                        canaries: r.get::<i64>(2)? as u32,
                        canaries_waiting: r.get::<i64>(3)? as u32,
                    })
                },
            )
        })
    }

    /// The latest `limit` breaker moves (0: every one), in the order made.
    pub fn breaker_transitions(&self, limit: u32) -> Result<Vec<BreakerLogged>, StoreError> {
        if self.schema_version()? < schema::BREAKERS {
            return Ok(Vec::new());
        }
        let limit = if limit == 0 { i64::MAX } else { limit as i64 };
        let mut newest_first = self.read(|db| {
            db.rows(
                "SELECT seq, dependency, at_ms, from_phase, to_phase, reason, release_id
                 FROM breaker_transitions ORDER BY seq DESC LIMIT $1",
                args![limit],
                logged,
            )
        })?;
        newest_first.reverse();
        Ok(newest_first)
    }
}

fn logged(r: &dyn Row) -> Result<BreakerLogged, StoreError> {
    let from: String = r.get(3)?;
    let to: String = r.get(4)?;
    Ok(BreakerLogged {
        seq: r.get(0)?,
        dependency: r.get(1)?,
        at_ms: r.get(2)?,
        from: Phase::parse(&from),
        to: Phase::parse(&to),
        reason: r.get(5)?,
        release: r.get(6)?,
    })
}

fn state_json(s: &BreakerState) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "{}".into())
}
