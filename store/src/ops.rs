//! The store's writes and claims, written once over [`Conn`]: each public
//! method opens the backend's transaction ([`Store::write`]: SQLite's
//! immediate write transaction, PostgreSQL's read-committed one with row
//! locks) and runs the same steps on it. What SQLite gets from its one
//! writer at a time, PostgreSQL gets from the `FOR UPDATE` / `FOR SHARE` /
//! `NOWAIT` / `SKIP LOCKED` clauses the statements carry (and SQLite's
//! translation drops), and from the advisory locks of [`Lock`].

use qflow_instance::snapshot::Snapshot;
use qflow_instance::{Status, Transition};

use std::collections::HashMap;

use crate::batch::Pending;
use crate::contain::Actor;
use crate::group::{id_list, in_ids};
use crate::lifecycle::{Deployed, Retirement};
use crate::sql::{args, Conn, Dialect, Lock};
use crate::start_keys::{KeyedStart, StartKey};
use crate::write::{check_claim, write_transition};
use crate::{
    fault, owner_is_dead, schema, source_hash, Deployment, Destination, Store, StoreError,
    CLAIM_TTL_MS,
};

impl Store {
    /// Deploy a model (idempotent by hash and process id). `now_ms`: wall clock.
    pub fn deploy(
        &mut self,
        process_id: &str,
        source: &str,
        now_ms: i64,
    ) -> Result<Deployment, StoreError> {
        let (id, _) = self.write(|db| insert_deployment(db, process_id, source, None, now_ms))?;
        Ok(Deployment {
            id,
            process_id: process_id.to_string(),
            hash: source_hash(source),
        })
    }

    /// Deploy a model from a file (idempotent by source hash and process
    /// id): a new deployment, or the existing one of the same source.
    pub fn deploy_from(
        &mut self,
        process_id: &str,
        source: &str,
        origin: Option<&str>,
        wall_ms: i64,
    ) -> Result<Deployed, StoreError> {
        let hash = source_hash(source);
        self.write(|db| {
            let (id, created) = insert_deployment(db, process_id, source, origin, wall_ms)?;
            let (deployed_ms, retired_ms) = db.one(
                "SELECT deployed_ms, retired_ms FROM deployments WHERE id = $1",
                args![id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            Ok(Deployed {
                deployment: Deployment {
                    id,
                    process_id: process_id.to_string(),
                    hash,
                },
                created,
                deployed_ms,
                retired_ms,
            })
        })
    }

    /// Retire a deployment, unless an instance of it is FAILED or
    /// unfinished: checked and set in one write transaction.
    pub fn retire(&mut self, deployment: i64, wall_ms: i64) -> Result<Retirement, StoreError> {
        self.write(|db| {
            let retired: Option<Option<i64>> = db.opt(
                "SELECT retired_ms FROM deployments WHERE id = $1 FOR UPDATE",
                args![deployment],
                |r| r.get(0),
            )?;
            match retired {
                None => return Err(StoreError::NoDeployment(deployment)),
                Some(Some(at)) => return Ok(Retirement::AlreadyRetired(at)),
                Some(None) => {}
            }
            let blocking: Vec<(String, Status)> = db.rows(
                db.dialect().pick(
                    "SELECT id, status FROM instances WHERE deployment_id = $1 AND status IN ('failed','running','waiting') ORDER BY (status = 'failed') DESC, rowid",
                    "SELECT id, status FROM instances WHERE deployment_id = $1 AND status IN ('failed','running','waiting') ORDER BY (status = 'failed') DESC, seq",
                ),
                args![deployment],
                |r| {
                    let s: String = r.get(1)?;
                    Ok((r.get(0)?, Status::parse(&s).unwrap_or(Status::Waiting)))
                },
            )?;
            if !blocking.is_empty() {
                return Ok(Retirement::Blocked(blocking));
            }
            db.execute(
                "UPDATE deployments SET retired_ms = $2 WHERE id = $1",
                args![deployment, wall_ms],
            )?;
            Ok(Retirement::Retired)
        })
    }

    /// The unfinished instance of a deployment, if any (the oldest).
    pub fn unfinished_instance(&self, deployment: i64) -> Result<Option<String>, StoreError> {
        self.read(|db| unfinished(db, deployment))
    }

    /// Create an instance with its start transition, unless the
    /// deployment already has an unfinished one: decided in one write
    /// transaction, so two processes never start two. Returns the
    /// instance id and whether it is new.
    pub fn create_instance(
        &mut self,
        deployment: &Deployment,
        start: &Transition,
        started_ms: i64,
    ) -> Result<(String, bool), StoreError> {
        self.write(|db| {
            // The deployment's row lock makes "no unfinished instance yet,
            // so start one" one step for concurrent processes.
            if db.dialect() == Dialect::Postgres
                && db
                    .opt(
                        "SELECT id FROM deployments WHERE id = $1 FOR UPDATE",
                        args![deployment.id],
                        |r| r.get::<i64>(0),
                    )?
                    .is_none()
            {
                return Err(StoreError::NoDeployment(deployment.id));
            }
            if let Some(id) = unfinished(db, deployment.id)? {
                return Ok((id, false));
            }
            refuse_retired(db, deployment.id)?;
            Ok((insert_instance(db, deployment, start, started_ms)?, true))
        })
    }

    /// Start one more instance of a deployment, whatever else runs: what
    /// a server does for every request (local runs use
    /// [`Store::create_instance`]).
    pub fn start_instance(
        &mut self,
        deployment: &Deployment,
        start: &Transition,
        started_ms: i64,
    ) -> Result<String, StoreError> {
        self.still_there()?;
        self.write(|db| {
            refuse_retired(db, deployment.id)?;
            crate::write::work_made(db, "")?;
            insert_instance(db, deployment, start, started_ms)
        })
    }

    /// Start `n` instances of a deployment in one transaction, each with
    /// the same start transition (a simulation or a benchmark seeding a
    /// fleet).
    pub fn start_instances(
        &mut self,
        deployment: &Deployment,
        start: &Transition,
        started_ms: i64,
        n: usize,
    ) -> Result<(), StoreError> {
        self.write(|db| {
            refuse_retired(db, deployment.id)?;
            for _ in 0..n {
                insert_instance(db, deployment, start, started_ms)?;
            }
            Ok(())
        })
    }

    /// Start one instance per `(start transition, started_ms)`, in the
    /// order given, in one transaction: instances arriving over a window
    /// (`qflow simulate --arrivals`), each begun at its own instant.
    pub fn start_instances_at(
        &mut self,
        deployment: &Deployment,
        starts: &[(Transition, i64)],
    ) -> Result<(), StoreError> {
        self.write(|db| {
            refuse_retired(db, deployment.id)?;
            for (start, started_ms) in starts {
                insert_instance(db, deployment, start, *started_ms)?;
            }
            Ok(())
        })
    }

    /// The start an idempotency key names, if a start took it.
    pub fn start_key(&self, key: &str) -> Result<Option<StartKey>, StoreError> {
        self.read(|db| start_key(db, key))
    }

    /// Start an instance once per `key`: in one transaction, the key's
    /// instance if a start took it already (nothing started), else a new
    /// instance with the key recorded beside it (`start_keys.rs`).
    /// `fingerprint` identifies the start's variables.
    pub fn start_instance_once(
        &mut self,
        deployment: &Deployment,
        start: &Transition,
        started_ms: i64,
        key: &str,
        fingerprint: &str,
        wall_ms: i64,
    ) -> Result<KeyedStart, StoreError> {
        self.still_there()?;
        self.write(|db| {
            // Taken before the key is looked up and held to the commit: two
            // starts with one key, on any hosts, take turns.
            db.lock(Lock::Numbering)?;
            if let Some(k) = start_key(db, key)? {
                return Ok(KeyedStart::Existing(k));
            }
            refuse_retired(db, deployment.id)?;
            crate::write::work_made(db, "")?;
            let id = insert_instance(db, deployment, start, started_ms)?;
            db.execute(
                "INSERT INTO start_keys(key, process_id, fingerprint, instance_id, created_ms) VALUES ($1, $2, $3, $4, $5)",
                args![key, deployment.process_id, fingerprint, id, wall_ms],
            )?;
            Ok(KeyedStart::Started(id))
        })
    }

    /// Take (or renew) the claim on an instance: a lease until
    /// `wall_now_ms` + [`CLAIM_TTL_MS`]. A claim held by someone else is
    /// respected until it expires, unless its owner is a dead process on
    /// this host.
    pub fn claim(
        &mut self,
        instance: &str,
        owner: &str,
        wall_now_ms: i64,
    ) -> Result<(), StoreError> {
        self.still_there()?;
        // A claim visibly held by a live owner is refused from a plain
        // read, without the write lock: losers polling a hot instance must
        // not queue on the lock ahead of the holder's own transition.
        if let Some(err) = self.read(|db| {
            Ok(claim_row(db, CLAIM_ROW, instance)?
                .and_then(|row| refusal(instance, owner, wall_now_ms, row)))
        })? {
            return Err(err);
        }
        self.write(|db| {
            // A row another transaction is writing (PostgreSQL) is given
            // up at once (`NOWAIT`), not waited for.
            let row = match claim_row(db, CLAIM_ROW_NOWAIT, instance) {
                Err(e) if e.is_row_locked() => return Err(busy(instance, wall_now_ms)),
                other => other?,
            };
            let Some(row) = row else {
                return Err(StoreError::NoInstance(instance.into()));
            };
            if let Some(refused) = refusal(instance, owner, wall_now_ms, row) {
                return Err(refused);
            }
            db.execute(
                TAKE_CLAIM,
                args![instance, owner, wall_now_ms + CLAIM_TTL_MS],
            )?;
            Ok(())
        })
    }

    /// Claim every instance of `ids` not held by another live owner, in
    /// one transaction; returns those claimed, in the order given.
    pub fn claim_many(
        &mut self,
        ids: &[String],
        owner: &str,
        wall_now_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        self.still_there()?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // Two statements for the whole group: the rows locked (a row
        // another transaction is writing is skipped, not waited for), then
        // the claims of those free to take.
        self.write(|db| {
            let d = db.dialect();
            let rows: HashMap<String, ClaimRow> = db
                .rows(
                    in_ids!(
                        d,
                        "SELECT id, claim_owner, claim_expires_ms, quarantined_ms FROM instances WHERE id",
                        " FOR UPDATE SKIP LOCKED"
                    ),
                    args![id_list(ids)],
                    |r| Ok((r.get::<String>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?))),
                )?
                .into_iter()
                .collect();
            let claimed: Vec<String> = ids
                .iter()
                .filter(|id| {
                    rows.get(id.as_str())
                        .is_some_and(|row| refusal(id, owner, wall_now_ms, row.clone()).is_none())
                })
                .cloned()
                .collect();
            if !claimed.is_empty() {
                db.execute(
                    in_ids!(
                        d,
                        "UPDATE instances SET claim_owner = $2, claim_expires_ms = $3 WHERE id",
                        ""
                    ),
                    args![id_list(&claimed), owner, wall_now_ms + CLAIM_TTL_MS],
                )?;
            }
            Ok(claimed)
        })
    }

    /// Keep a claim held until at least `until_ms` (wall clock), for the
    /// owner that holds it: a handler that may run longer than a claim
    /// lasts must still find it held when its outcome is applied. Never
    /// shortens a claim, never takes one.
    pub fn extend_claim(&self, instance: &str, until_ms: i64) -> Result<(), StoreError> {
        self.read(|db| {
            db.execute(
                "UPDATE instances SET claim_expires_ms = $2 WHERE id = $1 AND claim_owner IS NOT NULL AND claim_expires_ms < $2",
                args![instance, until_ms],
            )?;
            Ok(())
        })
    }

    /// Give the claim up (end of a run).
    pub fn release(&mut self, instance: &str, owner: &str) -> Result<(), StoreError> {
        self.read(|db| release(db, instance, owner))
    }

    /// Apply a transition in one transaction under the claim: refused if
    /// the claim is not `owner`'s, if the instance moved past
    /// `expected_version`, or if a timer it resolves is no longer armed.
    pub fn apply(
        &mut self,
        instance: &str,
        owner: &str,
        expected_version: i64,
        t: &Transition,
        at_ms: i64,
        wall_now_ms: i64,
    ) -> Result<i64, StoreError> {
        self.write(|db| {
            check_claim(db, instance, owner, expected_version, wall_now_ms)?;
            let seq = write_transition(db, instance, owner, expected_version, t, at_ms)?;
            // A decision taken alone (an answer, an operator's pick, a
            // poison wake) may have made work due: replicas are told.
            // (A serving group's apply_many is not: its own loop goes on.)
            crate::write::work_made(db, owner)?;
            db.execute(
                "UPDATE instances SET claim_expires_ms = $2 WHERE id = $1",
                args![instance, wall_now_ms + CLAIM_TTL_MS],
            )?;
            Ok(seq)
        })
    }

    /// Apply a batch of transitions in one transaction, each under
    /// `owner`'s claim and the version it was decided at (a refused one
    /// rolled back alone, in its own savepoint), and release `owner`'s
    /// claims on the batch and on `release`. One result per decision, in
    /// order: the transition's seq, or why it was refused.
    pub fn apply_many(
        &mut self,
        owner: &str,
        batch: &[Pending<'_>],
        release_too: &[String],
        wall_now_ms: i64,
    ) -> Result<Vec<Result<i64, StoreError>>, StoreError> {
        self.write(|db| {
            let mut results = Vec::with_capacity(batch.len());
            for p in batch {
                let mut seq = 0;
                let applied = db.savepoint(&mut |db| {
                    check_claim(db, p.instance, owner, p.version, wall_now_ms)?;
                    seq =
                        write_transition(db, p.instance, owner, p.version, p.transition, p.at_ms)?;
                    Ok(())
                });
                match applied {
                    Ok(()) => results.push(Ok(seq)),
                    Err(e) if e.is_lost_race() => results.push(Err(e)),
                    Err(e) => return Err(e),
                }
            }
            let ids: Vec<String> = batch
                .iter()
                .map(|p| p.instance.to_string())
                .chain(release_too.iter().cloned())
                .collect();
            if !ids.is_empty() {
                let d = db.dialect();
                db.execute(
                    in_ids!(
                        d,
                        "UPDATE instances SET claim_owner = NULL, claim_expires_ms = NULL WHERE claim_owner = $2 AND id",
                        ""
                    ),
                    args![id_list(&ids), owner],
                )?;
            }
            Ok(results)
        })
    }

    /// Move an instance to another deployment, applying the migration's
    /// transition in the same transaction, under the claim. A retired
    /// deployment receives no instance. (The `fault` points let the crash
    /// tests stop the process inside the transaction.) With `hold`, the
    /// instance is quarantined as that actor in the same transaction (a
    /// migration held for a ramped release).
    #[allow(clippy::too_many_arguments)]
    pub fn migrate_instance(
        &mut self,
        instance: &str,
        owner: &str,
        expected_version: i64,
        destination: &Destination,
        t: &Transition,
        at_ms: i64,
        wall_now_ms: i64,
        hold: Option<&Actor>,
    ) -> Result<(i64, i64), StoreError> {
        let moved = self.write(|db| {
            let (held, until): (Option<String>, Option<i64>) = db
                .opt(
                    "SELECT claim_owner, claim_expires_ms FROM instances WHERE id = $1 FOR UPDATE",
                    args![instance],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?
                .ok_or_else(|| StoreError::NoInstance(instance.into()))?;
            if held.as_deref() != Some(owner) || until.is_none_or(|u| u < wall_now_ms) {
                return Err(StoreError::Claimed {
                    instance: instance.into(),
                    owner: held.unwrap_or_else(|| "nobody".into()),
                    until_ms: until.unwrap_or(0),
                });
            }
            let deployment = match destination {
                Destination::Deployed(id) => *id,
                Destination::New {
                    process_id,
                    source,
                    origin,
                } => insert_deployment(db, process_id, source, origin.as_deref(), wall_now_ms)?.0,
            };
            refuse_retired(db, deployment)?;
            fault::point("migrate.begin");
            let seq = write_transition(db, instance, owner, expected_version, t, at_ms)?;
            fault::point("migrate.written");
            crate::write::work_made(db, owner)?;
            db.execute(
                "UPDATE instances SET deployment_id = $2 WHERE id = $1",
                args![instance, deployment],
            )?;
            // Held for a ramped release: quarantined with its parked
            // attempts in this transaction, so no replica runs one before
            // the release that spreads them (a crash before that release
            // leaves it quarantined, never running unplanned).
            if let Some(actor) = hold {
                crate::contain::set_quarantine_in(db, instance, wall_now_ms, actor, true)?;
            }
            fault::point("migrate.before-commit");
            Ok((seq, deployment))
        })?;
        fault::point("migrate.committed");
        Ok(moved)
    }
}

/// The claim columns of an instance: read plainly, under the row lock
/// given up at once when another transaction holds it, and skipped when
/// another transaction holds it (PostgreSQL; one statement on SQLite).
const CLAIM_ROW: &str =
    "SELECT claim_owner, claim_expires_ms, quarantined_ms FROM instances WHERE id = $1";
const CLAIM_ROW_NOWAIT: &str =
    "SELECT claim_owner, claim_expires_ms, quarantined_ms FROM instances WHERE id = $1 FOR UPDATE NOWAIT";

/// Take (or renew) a claim for `$2` until `$3`.
const TAKE_CLAIM: &str =
    "UPDATE instances SET claim_owner = $2, claim_expires_ms = $3 WHERE id = $1";

type ClaimRow = (Option<String>, Option<i64>, Option<i64>);

fn claim_row(
    db: &mut dyn Conn,
    sql: &'static str,
    instance: &str,
) -> Result<Option<ClaimRow>, StoreError> {
    db.opt(sql, args![instance], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
}

/// Why `owner` may not take the claim a row shows, if it may not: the
/// instance is quarantined, or a live owner (not a dead process of this
/// host) holds an unexpired claim.
fn refusal(instance: &str, owner: &str, wall_now_ms: i64, row: ClaimRow) -> Option<StoreError> {
    match row {
        (_, _, Some(_)) => Some(StoreError::Quarantined(instance.into())),
        (Some(h), Some(u), None) if h != owner && u > wall_now_ms && !owner_is_dead(&h) => {
            Some(StoreError::Claimed {
                instance: instance.into(),
                owner: h,
                until_ms: u,
            })
        }
        _ => None,
    }
}

/// The refusal for a claim whose row another transaction is writing.
fn busy(instance: &str, wall_now_ms: i64) -> StoreError {
    StoreError::Claimed {
        instance: instance.into(),
        owner: "another qflow process (its transaction is writing the instance)".into(),
        until_ms: wall_now_ms,
    }
}

fn release(db: &mut dyn Conn, instance: &str, owner: &str) -> Result<(), StoreError> {
    db.execute(
        "UPDATE instances SET claim_owner = NULL, claim_expires_ms = NULL WHERE id = $1 AND claim_owner = $2",
        args![instance, owner],
    )?;
    Ok(())
}

fn unfinished(db: &mut dyn Conn, deployment: i64) -> Result<Option<String>, StoreError> {
    db.opt(
        db.dialect().pick(
            "SELECT id FROM instances WHERE deployment_id = $1 AND status IN ('running','waiting') ORDER BY rowid LIMIT 1",
            "SELECT id FROM instances WHERE deployment_id = $1 AND status IN ('running','waiting') ORDER BY seq LIMIT 1",
        ),
        args![deployment],
        |r| r.get(0),
    )
}

fn start_key(db: &mut dyn Conn, key: &str) -> Result<Option<StartKey>, StoreError> {
    db.opt(
        "SELECT instance_id, process_id, fingerprint FROM start_keys WHERE key = $1",
        args![key],
        |r| {
            Ok(StartKey {
                instance: r.get(0)?,
                process_id: r.get(1)?,
                fingerprint: r.get(2)?,
            })
        },
    )
}

/// Refuse to start (or move) an instance onto a retired deployment. On
/// PostgreSQL the deployment's row is share-locked, so a retirement waits
/// for this transaction (and this one for a retirement in progress).
pub(crate) fn refuse_retired(db: &mut dyn Conn, deployment: i64) -> Result<(), StoreError> {
    // A SQLite file of a schema before the lifecycle (tests build them)
    // has no retirement to refuse.
    if db.dialect() == Dialect::Sqlite
        && db.one("PRAGMA user_version", args![], |r| r.get::<u32>(0))? < schema::LIFECYCLE
    {
        return Ok(());
    }
    let retired: Option<Option<i64>> = db.opt(
        "SELECT retired_ms FROM deployments WHERE id = $1 FOR SHARE",
        args![deployment],
        |r| r.get(0),
    )?;
    match retired {
        None => Err(StoreError::NoDeployment(deployment)),
        Some(Some(_)) => Err(StoreError::Retired(deployment)),
        Some(None) => Ok(()),
    }
}

/// Insert a deployment unless the same source of the same process is
/// deployed: its id, and whether it is new. Numbered the next after the
/// newest on every store (a sequence would also be advanced by a deploy
/// of a source already there, or one rolled back, and the ids a user
/// types, `--to 2`, would differ between the stores); the numbering lock
/// makes concurrent deploys take turns.
pub(crate) fn insert_deployment(
    db: &mut dyn Conn,
    process_id: &str,
    source: &str,
    origin: Option<&str>,
    wall_ms: i64,
) -> Result<(i64, bool), StoreError> {
    let hash = source_hash(source);
    db.lock(Lock::Numbering)?;
    if let Some(id) = db.opt(
        "SELECT id FROM deployments WHERE hash = $1 AND process_id = $2",
        args![hash, process_id],
        |r| r.get(0),
    )? {
        return Ok((id, false));
    }
    let id = match origin {
        Some(origin) => db.one(
            "INSERT INTO deployments(id, process_id, hash, source, deployed_ms, origin)
             SELECT COALESCE(MAX(id), 0) + 1, $1, $2, $3, $4, $5 FROM deployments RETURNING id",
            args![process_id, hash, source, wall_ms, origin],
            |r| r.get(0),
        )?,
        // (Without an origin the columns of every schema version suffice.)
        None => db.one(
            "INSERT INTO deployments(id, process_id, hash, source, deployed_ms)
             SELECT COALESCE(MAX(id), 0) + 1, $1, $2, $3, $4 FROM deployments RETURNING id",
            args![process_id, hash, source, wall_ms],
            |r| r.get(0),
        )?,
    };
    Ok((id, true))
}

/// Insert an instance with its start transition. Its number is the next
/// after the newest instance's on every store, so a store gives the same
/// ids whichever database it is (a start rolled back leaves no gap; an
/// instance's jitter is drawn from its id); the numbering lock makes
/// concurrent starts on several hosts take turns for it. (SQLite numbers
/// by its `rowid`, PostgreSQL by a `seq` column: a lookup at the end of
/// the table either way, where a count read every row.)
pub(crate) fn insert_instance(
    db: &mut dyn Conn,
    deployment: &Deployment,
    start: &Transition,
    started_ms: i64,
) -> Result<String, StoreError> {
    db.lock(Lock::Numbering)?;
    let n: i64 = db.one(
        db.dialect().pick(
            "SELECT COALESCE(MAX(rowid), 0) + 1 FROM instances",
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM instances",
        ),
        args![],
        |r| r.get(0),
    )?;
    let id = format!("{}-{}", deployment.process_id, n);
    db.execute(
        db.dialect().pick(
            "INSERT INTO instances(id, deployment_id, status, snapshot, version, started_ms, updated_ms)
             VALUES ($1, $3, 'running', $4, 0, $5, $5)",
            "INSERT INTO instances(id, seq, deployment_id, status, snapshot, version, started_ms, updated_ms)
             VALUES ($1, $2, $3, 'running', $4, 0, $5, $5)",
        ),
        args![id, n, deployment.id, Snapshot::new().encode(), started_ms],
    )?;
    // The start transition is written at version 0 by its creator, who
    // holds no claim: the row is new and no one else can see it yet.
    write_transition(db, &id, "", 0, start, started_ms)?;
    Ok(id)
}
