//! The PostgreSQL schema, as forward migrations numbered like SQLite's
//! (`super::super::schema`): migration `i` takes a database from version
//! `i` to `i + 1` and means the same change. The version lives in the
//! one-row table `qflow_schema`; a database newer than this build is
//! refused.
//!
//! Types: every integer is `BIGINT` (Rust `i64`), snapshots are `BYTEA`,
//! JSON text is `TEXT`. SQLite's `rowid` order (instances in creation order)
//! is the `seq` column: the number in the instance's id.
//!
//! Never edit a released migration: add the next one, here and in SQLite's
//! list (a compile-time check keeps the two lists the same length).

pub const MIGRATIONS: &[&str] = &[
    // 1: registered tasks: deployments, instances, timers, history, incidents.
    r#"
CREATE TABLE deployments (
    id          BIGSERIAL PRIMARY KEY,
    process_id  TEXT NOT NULL,
    hash        TEXT NOT NULL,
    source      TEXT NOT NULL,
    deployed_ms BIGINT NOT NULL,
    UNIQUE (hash, process_id)
);
CREATE TABLE instances (
    id               TEXT PRIMARY KEY,
    seq              BIGINT NOT NULL UNIQUE,
    deployment_id    BIGINT NOT NULL REFERENCES deployments(id),
    status           TEXT NOT NULL,
    snapshot         BYTEA NOT NULL,
    version          BIGINT NOT NULL,
    started_ms       BIGINT NOT NULL,
    updated_ms       BIGINT NOT NULL,
    claim_owner      TEXT,
    claim_expires_ms BIGINT
);
CREATE INDEX instances_by_deployment ON instances(deployment_id, status);
CREATE TABLE timers (
    id            BIGSERIAL PRIMARY KEY,
    instance_id   TEXT NOT NULL REFERENCES instances(id),
    node          TEXT NOT NULL,
    purpose       TEXT NOT NULL,
    due_ms        BIGINT NOT NULL,
    attempt       BIGINT,
    state         TEXT NOT NULL,
    armed_seq     BIGINT NOT NULL,
    resolved_seq  BIGINT
);
CREATE INDEX timers_armed ON timers(state, due_ms);
CREATE TABLE transitions (
    seq         BIGSERIAL PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances(id),
    version     BIGINT NOT NULL,
    at_ms       BIGINT NOT NULL,
    status      TEXT NOT NULL,
    snapshot    BYTEA NOT NULL
);
CREATE INDEX transitions_by_instance ON transitions(instance_id, seq);
CREATE TABLE history (
    seq            BIGSERIAL PRIMARY KEY,
    transition_seq BIGINT NOT NULL REFERENCES transitions(seq),
    instance_id    TEXT NOT NULL,
    at_ms          BIGINT NOT NULL,
    kind           TEXT NOT NULL,
    node           TEXT,
    attempt        BIGINT,
    code           TEXT,
    task           TEXT,
    timer_id       BIGINT,
    event_index    BIGINT,
    detail         TEXT NOT NULL
);
CREATE INDEX history_by_instance ON history(instance_id, seq);
CREATE UNIQUE INDEX history_one_attempt_per_timer ON history(timer_id) WHERE kind = 'attempt' AND timer_id IS NOT NULL;
CREATE TABLE incidents (
    id          BIGSERIAL PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances(id),
    node        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    message     TEXT NOT NULL,
    opened_ms   BIGINT NOT NULL,
    closed_ms   BIGINT
);
"#,
    // 2: channel calls: the outbox and correlations.
    r#"
CREATE TABLE outbox (
    id              BIGSERIAL PRIMARY KEY,
    instance_id     TEXT NOT NULL REFERENCES instances(id),
    node            TEXT NOT NULL,
    channel         TEXT NOT NULL,
    operation       TEXT,
    attempt         BIGINT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    payload         TEXT NOT NULL,
    state           TEXT NOT NULL,
    deliveries      BIGINT NOT NULL DEFAULT 0,
    next_ms         BIGINT NOT NULL,
    created_ms      BIGINT NOT NULL
);
CREATE INDEX outbox_pending ON outbox(state, next_ms);
CREATE TABLE correlations (
    key         TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances(id),
    node        TEXT NOT NULL,
    created_ms  BIGINT NOT NULL
);
"#,
    // 3: the idempotency-key ledger and abandoned outbox rows, the ledger
    // filled from what was sent before (keys are `instance/node/N`).
    r#"
CREATE TABLE request_keys (
    instance_id TEXT NOT NULL REFERENCES instances(id),
    node        TEXT NOT NULL,
    last        BIGINT NOT NULL,
    PRIMARY KEY (instance_id, node)
);
ALTER TABLE outbox ADD COLUMN reason TEXT;
INSERT INTO request_keys(instance_id, node, last)
SELECT instance_id, node, MAX(n) FROM (
    SELECT instance_id, node,
           NULLIF(regexp_replace(idempotency_key, '^.*/', ''), '')::BIGINT AS n
    FROM outbox WHERE idempotency_key ~ '/[0-9]+$'
    UNION ALL
    SELECT instance_id, node,
           regexp_replace(detail::json->>'idempotencyKey', '^.*/', '')::BIGINT AS n
    FROM history
    WHERE kind = 'attempt' AND node IS NOT NULL
      AND detail::json->>'idempotencyKey' ~ '/[0-9]+$'
) sent
WHERE n > 0
GROUP BY instance_id, node;
"#,
    // 4: fleet scale: every read a decision makes is by instance.
    r#"
CREATE INDEX instances_by_status ON instances(status, seq);
CREATE INDEX timers_by_instance ON timers(instance_id, state, due_ms);
CREATE INDEX outbox_by_instance ON outbox(instance_id, state, next_ms);
CREATE INDEX correlations_by_instance ON correlations(instance_id);
CREATE INDEX incidents_by_instance ON incidents(instance_id, node);
"#,
    // 5: the deployment lifecycle: origin and retirement.
    r#"
ALTER TABLE deployments ADD COLUMN origin TEXT;
ALTER TABLE deployments ADD COLUMN retired_ms BIGINT;
"#,
    // 6: containment: pauses by failure class or dependency, the cause of
    // each retry park on its timer (filled for the parks already armed),
    // and quarantined instances.
    r#"
CREATE TABLE pauses (
    kind      TEXT NOT NULL,
    value     TEXT NOT NULL,
    paused_ms BIGINT NOT NULL,
    PRIMARY KEY (kind, value)
);
ALTER TABLE timers ADD COLUMN class TEXT;
ALTER TABLE timers ADD COLUMN dependency TEXT;
ALTER TABLE instances ADD COLUMN quarantined_ms BIGINT;
UPDATE timers SET
    class = (SELECT COALESCE(h.detail::json->>'class', CASE WHEN h.task IS NULL THEN 'transient' END)
             FROM history h WHERE h.instance_id = timers.instance_id AND h.node = timers.node AND h.kind = 'attempt'
             ORDER BY h.seq DESC LIMIT 1),
    dependency = (SELECT COALESCE(h.task, h.detail::json->>'channel')
                  FROM history h WHERE h.instance_id = timers.instance_id AND h.node = timers.node AND h.kind = 'attempt'
                  ORDER BY h.seq DESC LIMIT 1)
WHERE state = 'armed' AND purpose = 'retry';
"#,
    // 7: who contained, and why (NULL for rows made before).
    r#"
ALTER TABLE pauses ADD COLUMN paused_by TEXT;
ALTER TABLE pauses ADD COLUMN reason TEXT;
ALTER TABLE instances ADD COLUMN quarantined_by TEXT;
ALTER TABLE instances ADD COLUMN quarantine_reason TEXT;
"#,
    // 8: the quarantined instances by a partial index (read on every look
    // of the console and of `qflow stats`).
    r#"
CREATE INDEX instances_quarantined ON instances(quarantined_ms) WHERE quarantined_ms IS NOT NULL;
"#,
    // 9: the containment log: one row per pause, unpause, quarantine and
    // release, appended in the action's transaction, never changed.
    // Actions taken before this version were not logged.
    r#"
CREATE TABLE containment_log (
    seq     BIGSERIAL PRIMARY KEY,
    at_ms   BIGINT NOT NULL,
    action  TEXT NOT NULL,
    kind    TEXT NOT NULL,
    value   TEXT NOT NULL,
    actor   TEXT NOT NULL,
    reason  TEXT,
    changed BOOLEAN NOT NULL
);
CREATE INDEX containment_log_by_target ON containment_log(kind, value, seq);
"#,
    // 10: idempotent starts: the instance each start key started.
    r#"
CREATE TABLE start_keys (
    key         TEXT PRIMARY KEY,
    process_id  TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    instance_id TEXT NOT NULL REFERENCES instances(id),
    created_ms  BIGINT NOT NULL
);
"#,
    // 11: late decisions (see SQLite's): what `qflow stats` counts.
    r#"
CREATE TABLE late_decisions (
    seq         BIGSERIAL PRIMARY KEY,
    instance_id TEXT NOT NULL,
    node        TEXT,
    kind        TEXT NOT NULL,
    due_ms      BIGINT NOT NULL,
    decided_ms  BIGINT NOT NULL
);
"#,
    // 12: planned releases (see SQLite's): a schedule per ramped
    // unpause, a slot per park it let go.
    r#"
CREATE TABLE release_schedules (
    id          BIGSERIAL PRIMARY KEY,
    kind        TEXT NOT NULL,
    value       TEXT NOT NULL,
    ramp        TEXT,
    max_rate    TEXT,
    start_ms    BIGINT NOT NULL,
    end_ms      BIGINT NOT NULL,
    created_ms  BIGINT NOT NULL,
    actor       TEXT NOT NULL,
    reason      TEXT,
    stopped_ms  BIGINT,
    stopped_by  TEXT,
    stop_reason TEXT
);
CREATE TABLE release_slots (
    schedule_id BIGINT NOT NULL REFERENCES release_schedules(id),
    timer_id    BIGINT NOT NULL,
    instance_id TEXT NOT NULL,
    dependency  TEXT,
    due_ms      BIGINT NOT NULL,
    release_ms  BIGINT NOT NULL,
    PRIMARY KEY (schedule_id, timer_id)
);
CREATE INDEX release_slots_by_instance ON release_slots(instance_id);
CREATE INDEX release_slots_by_timer ON release_slots(timer_id);
"#,
    // 13: circuit breakers (see SQLite's): a row per breaker, a row per
    // move, a row per canary.
    r#"
CREATE TABLE breakers (
    dependency  TEXT PRIMARY KEY,
    phase       TEXT NOT NULL,
    since_ms    BIGINT NOT NULL,
    state       TEXT NOT NULL
);
CREATE TABLE breaker_transitions (
    seq         BIGSERIAL PRIMARY KEY,
    dependency  TEXT NOT NULL,
    at_ms       BIGINT NOT NULL,
    from_phase  TEXT NOT NULL,
    to_phase    TEXT NOT NULL,
    reason      TEXT NOT NULL,
    release_id  BIGINT
);
CREATE TABLE breaker_canaries (
    timer_id    BIGINT PRIMARY KEY,
    dependency  TEXT NOT NULL,
    chosen_ms   BIGINT NOT NULL
);
CREATE INDEX breaker_canaries_by_dependency ON breaker_canaries(dependency);
"#,
    // 14: the load window's index (see SQLite's).
    r#"
CREATE INDEX history_load_by_time ON history(at_ms) WHERE kind IN ('attempt', 'delivery');
"#,
    // 15: an attempt in flight as a typed record (see SQLite's).
    r#"
ALTER TABLE incidents ADD COLUMN attempt BIGINT;
ALTER TABLE incidents ADD COLUMN from_version BIGINT;
ALTER TABLE incidents ADD COLUMN owner TEXT;
ALTER TABLE incidents ADD COLUMN lease_until_ms BIGINT;
"#,
];

// Each SQLite migration has its PostgreSQL twin: whoever adds one adds both.
const _: () = assert!(MIGRATIONS.len() == super::super::schema::MIGRATIONS.len());

/// Creates the version table (version 0: an empty database) if missing.
pub const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS qflow_schema (version BIGINT NOT NULL);
INSERT INTO qflow_schema(version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM qflow_schema);";

/// The advisory lock key a transaction starting instances or deploying a
/// model takes, so two hosts never number two instances (or two
/// deployments) alike.
pub const NUMBERING_LOCK: i64 = 0x7166_6c6f_775f_6964; // "qflow_id"

/// The advisory lock that orders pauses against re-drives: a transition
/// that resolves retry timers holds it shared from its pause check to its
/// commit, a pause or unpause holds it exclusively. Under READ COMMITTED a
/// re-drive that checked before a pause committed could otherwise commit
/// after it; SQLite gets the same order from its single writer.
pub const PAUSE_LOCK: i64 = 0x7166_6c6f_775f_7073; // "qflow_ps"

/// The advisory lock key every migrating process takes, so two processes
/// opening a fresh database never both migrate it.
pub const MIGRATION_LOCK: i64 = 0x7166_6c6f_775f_6d67; // "qflow_mg"
