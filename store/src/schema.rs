//! The schema, as forward migrations. `PRAGMA user_version` is the schema
//! version: a database at version N gets migrations N+1.. applied in one
//! transaction each; a database newer than [`LATEST`] is refused.
//!
//! Never edit a released migration: add the next one.

/// Migration `i` (0-based) takes the schema from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: registered tasks: deployments, instances, timers, history, incidents.
    r#"
CREATE TABLE deployments (
    id          INTEGER PRIMARY KEY,
    process_id  TEXT NOT NULL,
    hash        TEXT NOT NULL,          -- sha256 of the source, hex
    source      TEXT NOT NULL,          -- the model as deployed
    deployed_ms INTEGER NOT NULL,
    UNIQUE (hash, process_id)
);
CREATE TABLE instances (
    id               TEXT PRIMARY KEY,
    deployment_id    INTEGER NOT NULL REFERENCES deployments(id),
    status           TEXT NOT NULL,     -- running | waiting | completed | failed
    snapshot         BLOB NOT NULL,     -- canonical snapshot bytes
    version          INTEGER NOT NULL,  -- +1 per applied transition
    started_ms       INTEGER NOT NULL,  -- on the run's clock
    updated_ms       INTEGER NOT NULL,
    claim_owner      TEXT,
    claim_expires_ms INTEGER            -- wall clock
);
CREATE INDEX instances_by_deployment ON instances(deployment_id, status);
CREATE TABLE timers (
    id            INTEGER PRIMARY KEY,
    instance_id   TEXT NOT NULL REFERENCES instances(id),
    node          TEXT NOT NULL,
    purpose       TEXT NOT NULL,        -- retry | timer | boundary
    due_ms        INTEGER NOT NULL,
    attempt       INTEGER,              -- the attempt a retry timer drives
    state         TEXT NOT NULL,        -- armed | resolved
    armed_seq     INTEGER NOT NULL,     -- the transition that armed it
    resolved_seq  INTEGER
);
CREATE INDEX timers_armed ON timers(state, due_ms);
CREATE TABLE transitions (
    seq         INTEGER PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances(id),
    version     INTEGER NOT NULL,
    at_ms       INTEGER NOT NULL,
    status      TEXT NOT NULL,
    snapshot    BLOB NOT NULL           -- the snapshot after the transition
);
CREATE INDEX transitions_by_instance ON transitions(instance_id, seq);
CREATE TABLE history (
    seq            INTEGER PRIMARY KEY,
    transition_seq INTEGER NOT NULL REFERENCES transitions(seq),
    instance_id    TEXT NOT NULL,
    at_ms          INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    node           TEXT,
    attempt        INTEGER,
    code           TEXT,
    task           TEXT,                -- the handler an attempt ran
    timer_id       INTEGER,             -- the retry timer an attempt consumed
    event_index    INTEGER,             -- the scenario event delivered
    detail         TEXT NOT NULL        -- the decision line, canonical JSON
);
CREATE INDEX history_by_instance ON history(instance_id, seq);
CREATE UNIQUE INDEX history_one_attempt_per_timer ON history(timer_id) WHERE kind = 'attempt' AND timer_id IS NOT NULL;
CREATE TABLE incidents (
    id          INTEGER PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances(id),
    node        TEXT NOT NULL,
    kind        TEXT NOT NULL,          -- reconciliation | failed | poisoned
    message     TEXT NOT NULL,
    opened_ms   INTEGER NOT NULL,
    closed_ms   INTEGER
);
"#,
    // 2: channel calls: the outbox and correlations. Created now so
    // a database written by this build migrates forward without a rebuild.
    r#"
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY,
    instance_id     TEXT NOT NULL REFERENCES instances(id),
    node            TEXT NOT NULL,
    channel         TEXT NOT NULL,
    operation       TEXT,
    attempt         INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    payload         TEXT NOT NULL,
    state           TEXT NOT NULL,      -- pending | delivered | poisoned
    deliveries      INTEGER NOT NULL DEFAULT 0,
    next_ms         INTEGER NOT NULL,
    created_ms      INTEGER NOT NULL
);
CREATE INDEX outbox_pending ON outbox(state, next_ms);
CREATE TABLE correlations (
    key         TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances(id),
    node        TEXT NOT NULL,
    created_ms  INTEGER NOT NULL
);
"#,
    // 3: the idempotency-key ledger and abandoned outbox rows.
    //
    // `request_keys` holds, per call node of an instance, the highest
    // idempotency-key number it has sent. The next request's key is read
    // from it under the claim, so no snapshot damage (a counter read as
    // zero) can rewind a key to one already sent, and the backoff park's
    // withdrawal of the dead attempt's row forgets nothing. Filled from
    // what was sent before this version: the history's attempt lines and
    // the outbox rows (keys are `instance/node/N`; node ids never contain
    // `/`).
    //
    // `outbox.reason`: why an undelivered row was abandoned (state
    // `abandoned`) rather than delivered; rows are kept, never deleted,
    // outside the backoff park.
    r#"
CREATE TABLE request_keys (
    instance_id TEXT NOT NULL REFERENCES instances(id),
    node        TEXT NOT NULL,
    last        INTEGER NOT NULL,       -- the highest key number sent
    PRIMARY KEY (instance_id, node)
);
ALTER TABLE outbox ADD COLUMN reason TEXT;
INSERT INTO request_keys(instance_id, node, last)
SELECT instance_id, node, MAX(n) FROM (
    SELECT instance_id, node,
           CAST(substr(rest, instr(rest, '/') + 1) AS INTEGER) AS n
    FROM (SELECT instance_id, node,
                 substr(idempotency_key, length(instance_id) + 2) AS rest
          FROM outbox)
    UNION ALL
    SELECT instance_id, node,
           CAST(substr(rest, instr(rest, '/') + 1) AS INTEGER) AS n
    FROM (SELECT instance_id, node,
                 substr(json_extract(detail, '$.idempotencyKey'), length(instance_id) + 2) AS rest
          FROM history
          WHERE kind = 'attempt' AND node IS NOT NULL
            AND json_extract(detail, '$.idempotencyKey') IS NOT NULL)
)
WHERE n > 0
GROUP BY instance_id, node;
"#,
    // 4: fleet scale. Every read a decision makes is by instance, and a
    // replica picks ready instances by status: without these, each of those
    // reads scanned every instance's rows, so a decision cost time in
    // proportion to the instances parked in the store.
    r#"
CREATE INDEX instances_by_status ON instances(status);
CREATE INDEX timers_by_instance ON timers(instance_id, state, due_ms);
CREATE INDEX outbox_by_instance ON outbox(instance_id, state, next_ms);
CREATE INDEX correlations_by_instance ON correlations(instance_id);
CREATE INDEX incidents_by_instance ON incidents(instance_id, node);
"#,
    // 5: the deployment lifecycle: where a deployment came from, and its
    // retirement (a retired deployment starts no new instance).
    r#"
ALTER TABLE deployments ADD COLUMN origin TEXT;         -- the model file it was deployed from, as given
ALTER TABLE deployments ADD COLUMN retired_ms INTEGER;  -- wall clock; NULL while it may start instances
"#,
    // 6: containment. `pauses` holds back the re-drive of every retry park
    // of a failure class or a dependency (a registered task's name, or a
    // channel) until unpaused; the park keeps its due time. A retry timer
    // records the class and the dependency of the failure that armed it
    // (filled here from the attempt lines of the parks already armed).
    // `instances.quarantined_ms`: an instance no one claims until released.
    r#"
CREATE TABLE pauses (
    kind      TEXT NOT NULL,            -- class | dependency
    value     TEXT NOT NULL,
    paused_ms INTEGER NOT NULL,         -- wall clock
    PRIMARY KEY (kind, value)
);
ALTER TABLE timers ADD COLUMN class TEXT;
ALTER TABLE timers ADD COLUMN dependency TEXT;
ALTER TABLE instances ADD COLUMN quarantined_ms INTEGER;  -- wall clock; NULL unless quarantined
UPDATE timers SET
    class = (SELECT COALESCE(json_extract(h.detail, '$.class'), CASE WHEN h.task IS NULL THEN 'transient' END)
             FROM history h WHERE h.instance_id = timers.instance_id AND h.node = timers.node AND h.kind = 'attempt'
             ORDER BY h.seq DESC LIMIT 1),
    dependency = (SELECT COALESCE(h.task, json_extract(h.detail, '$.channel'))
                  FROM history h WHERE h.instance_id = timers.instance_id AND h.node = timers.node AND h.kind = 'attempt'
                  ORDER BY h.seq DESC LIMIT 1)
WHERE state = 'armed' AND purpose = 'retry';
"#,
    // 7: who contained, and why. A pause and a quarantine record the
    // operator who made it (`--by`, else the account and host it was made
    // from) and the reason given, if any. Rows made before this version
    // keep NULL: who made them was never recorded.
    r#"
ALTER TABLE pauses ADD COLUMN paused_by TEXT;
ALTER TABLE pauses ADD COLUMN reason TEXT;
ALTER TABLE instances ADD COLUMN quarantined_by TEXT;
ALTER TABLE instances ADD COLUMN quarantine_reason TEXT;
"#,
    // 8: the quarantined instances by a partial index: the console's list
    // and `qflow stats` read them on every look, and without it each read
    // scanned every instance (7-14 ms at 50,000). No decision writes
    // `quarantined_ms`, so the index costs a decision nothing.
    r#"
CREATE INDEX instances_quarantined ON instances(quarantined_ms) WHERE quarantined_ms IS NOT NULL;
"#,
    // 9: the containment log. Every pause, unpause, quarantine and release
    // appends one row, in the action's own transaction: when (wall clock),
    // what (`action`; the target `kind` and `value`: a class, a dependency
    // or an instance), who (`actor`: `--by`, else user@host) and why, and
    // whether it changed anything (0 for a repeated one). Rows are never
    // updated or deleted. Actions taken before this version were not
    // logged, and are not made up here.
    r#"
CREATE TABLE containment_log (
    seq     INTEGER PRIMARY KEY,
    at_ms   INTEGER NOT NULL,           -- wall clock
    action  TEXT NOT NULL,              -- pause | unpause | quarantine | release
    kind    TEXT NOT NULL,              -- class | dependency | instance
    value   TEXT NOT NULL,
    actor   TEXT NOT NULL,
    reason  TEXT,
    changed INTEGER NOT NULL            -- 1: it changed something; 0: it was already so
);
CREATE INDEX containment_log_by_target ON containment_log(kind, value, seq);
"#,
    // 10: idempotent starts (`start_keys.rs`): the instance each start
    // key started, written in the start's transaction, never changed.
    r#"
CREATE TABLE start_keys (
    key         TEXT PRIMARY KEY,       -- the Idempotency-Key of the start
    process_id  TEXT NOT NULL,
    fingerprint TEXT NOT NULL,          -- sha256 of the process and variables, hex
    instance_id TEXT NOT NULL REFERENCES instances(id),
    created_ms  INTEGER NOT NULL        -- wall clock
);
"#,
    // 11: late decisions. `qflow serve` records each timed decision (a due
    // timer, a retry handed to a lane, a delivery) it took more than its
    // threshold after it was due (wall clock): what `qflow stats` counts.
    // An observation, not a fact any decision reads.
    r#"
CREATE TABLE late_decisions (
    seq         INTEGER PRIMARY KEY,
    instance_id TEXT NOT NULL,
    node        TEXT,
    kind        TEXT NOT NULL,          -- timer | attempt | delivery
    due_ms      INTEGER NOT NULL,       -- wall clock
    decided_ms  INTEGER NOT NULL        -- wall clock
);
"#,
    // 12: planned releases (`release.rs`). A ramped unpause writes one
    // `release_schedules` row (what it released, the ramp and the caps as
    // given, minute 0 and the last release on the run's clock, who and
    // why on the wall clock) and one `release_slots` row per park it let
    // go: the park's own due time, and its release instant, which is also
    // written to the park's timer as its due time, so every replica fires
    // it no earlier. Stopping a schedule puts the parks not yet fired back
    // to their own due times and pauses again; rows are never deleted.
    r#"
CREATE TABLE release_schedules (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL,          -- class | dependency
    value       TEXT NOT NULL,
    ramp        TEXT,                   -- '10,50,200/min', NULL for none
    max_rate    TEXT,                   -- 'bank=20/min,mail=5/min', NULL for none
    start_ms    INTEGER NOT NULL,       -- minute 0 (the run's clock)
    end_ms      INTEGER NOT NULL,       -- the last release (the run's clock)
    created_ms  INTEGER NOT NULL,       -- wall clock
    actor       TEXT NOT NULL,
    reason      TEXT,
    stopped_ms  INTEGER,                -- wall clock; NULL unless stopped
    stopped_by  TEXT,
    stop_reason TEXT
);
CREATE TABLE release_slots (
    schedule_id INTEGER NOT NULL REFERENCES release_schedules(id),
    timer_id    INTEGER NOT NULL,
    instance_id TEXT NOT NULL,
    dependency  TEXT,
    due_ms      INTEGER NOT NULL,       -- the park's own due time
    release_ms  INTEGER NOT NULL,       -- when the ramp lets it go
    PRIMARY KEY (schedule_id, timer_id)
);
CREATE INDEX release_slots_by_instance ON release_slots(instance_id);
CREATE INDEX release_slots_by_timer ON release_slots(timer_id);
"#,
    // 13: circuit breakers (`breaker.rs`). One `breakers` row per
    // dependency with a breaker (its phase, since when on the wall clock,
    // and the machine's state as JSON); one `breaker_transitions` row per
    // move (never changed); one `breaker_canaries` row per park a
    // half-open breaker lets through its own pause (the pause-match rule
    // reads it), deleted when the breaker closes or opens again.
    r#"
CREATE TABLE breakers (
    dependency  TEXT PRIMARY KEY,
    phase       TEXT NOT NULL,          -- closed | open | half-open
    since_ms    INTEGER NOT NULL,       -- wall clock
    state       TEXT NOT NULL           -- JSON: the machine's state
);
CREATE TABLE breaker_transitions (
    seq         INTEGER PRIMARY KEY,
    dependency  TEXT NOT NULL,
    at_ms       INTEGER NOT NULL,       -- wall clock
    from_phase  TEXT NOT NULL,
    to_phase    TEXT NOT NULL,
    reason      TEXT NOT NULL,
    release_id  INTEGER                 -- the release schedule a close made
);
CREATE TABLE breaker_canaries (
    timer_id    INTEGER PRIMARY KEY,
    dependency  TEXT NOT NULL,
    chosen_ms   INTEGER NOT NULL        -- wall clock
);
CREATE INDEX breaker_canaries_by_dependency ON breaker_canaries(dependency);
"#,
    // 14: the load window's index (`stats.rs`, `Store::load_window`): the
    // attempt and delivery lines by time, so that reading the last hour of
    // a store holding a long history reads that hour, not every line.
    // Partial, so the lines nobody counts by time (starts, ends, timers)
    // cost it nothing; the lines it holds are appended at its tail.
    r#"
CREATE INDEX history_load_by_time ON history(at_ms) WHERE kind IN ('attempt', 'delivery');
"#,
    // 15: an attempt in flight as a typed record (`inflight.rs`): the
    // attempt, the instance version it started from, the process running
    // it and its lease, as columns of its incident row instead of words of
    // its message read back. Empty on every other incident, and on the
    // records an older qflow wrote: those are read from their message, as
    // before, so an upgrade mid-attempt loses none.
    r#"
ALTER TABLE incidents ADD COLUMN attempt INTEGER;
ALTER TABLE incidents ADD COLUMN from_version INTEGER;
ALTER TABLE incidents ADD COLUMN owner TEXT;
ALTER TABLE incidents ADD COLUMN lease_until_ms INTEGER;
"#,
];

/// The version that added the deployment lifecycle (`deployments.origin`,
/// `retired_ms`): a store opened at an older version (tests do) has no
/// retirement to honour.
pub const LIFECYCLE: u32 = 5;

/// The version that added containment (pauses, quarantine, the cause of a
/// retry park on its timer).
pub const CONTAIN: u32 = 6;

/// The version that added the containment log.
pub const CONTAINMENT_LOG: u32 = 9;

/// The oldest schema a read-only database is read at, without upgrading
/// it (`Store::connect_for_reading`): the migrations after it add only
/// what no reading command reads. Migration 13 added `breaker_canaries`,
/// which the pause-match rule (every read of what a pause holds) reads.
/// (Migration 15's in-flight columns are read only by the commands that
/// run attempts, which upgrade the database first.)
pub const READABLE_FROM: u32 = 13;

/// The version that added planned releases (`release_schedules`,
/// `release_slots`): an older database read without upgrading has none.
pub const RELEASES: u32 = 12;

/// The version that added circuit breakers (`breakers`,
/// `breaker_transitions`, `breaker_canaries`).
pub const BREAKERS: u32 = 13;

/// The schema version this build writes.
pub const LATEST: u32 = MIGRATIONS.len() as u32;
