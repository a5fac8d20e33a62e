//! `qflow deploy`, `qflow deployments`, `qflow retire`: the deployment
//! lifecycle of a database (docs/cli.md).

use std::path::PathBuf;
use std::process::ExitCode;

use qflow_engine::runtime::clock::system_now_ms;
use qflow_engine::store::{DeploymentRow, Location, Retirement, StatusCounts};
use serde_json::{json, Value};

use super::ops::{self, Format, REFUSED, USAGE};
use super::run::json_line;

/// Record a model as a new deployment (or name the deployment that already has its source).
#[derive(Debug, clap::Args)]
pub(crate) struct DeployArgs {
    /// The BPMN model to deploy; refused, with the report, when it has load errors.
    pub model: PathBuf,
    /// The database: a SQLite file (created if missing) or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

/// List the deployments: id, process, model, hash, when, instances by status, retired.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

/// Retire a deployment: it starts no new instance. Refused while any of its
/// instances is FAILED or unfinished.
#[derive(Debug, clap::Args)]
pub(crate) struct RetireArgs {
    /// The deployment's id (`qflow deployments` lists them).
    pub deployment: i64,
    /// The database (it must exist): a SQLite file or a postgres:// URL.
    /// Default: $QFLOW_DB, else the `db` of the nearest qflow.toml.
    #[arg(long, value_name = "DB")]
    pub db: Location,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

pub(crate) fn deploy(args: DeployArgs) -> ExitCode {
    let format = args.format;
    let model = match ops::read_model(&args.model, format) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let mut store = match ops::open(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    let deployed = match store.deploy_from(
        &model.graph.process_id,
        &model.source,
        Some(&model.shown),
        system_now_ms(),
    ) {
        Ok(d) => d,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    let d = &deployed.deployment;
    match format {
        Format::Json => {
            let rec = json!({
                "deployment": d.id,
                "process": d.process_id,
                "hash": d.hash,
                "model": model.shown,
                "created": deployed.created,
                "deployed": ops::timestamp(deployed.deployed_ms),
                "retired": deployed.retired_ms.map(ops::timestamp),
            });
            println!("{}", json_line(&rec, &["deployment", "created"]));
        }
        Format::Human if deployed.created => println!(
            "deployed {} as deployment {} (sha256 {}) from {}",
            d.process_id,
            d.id,
            ops::short_hash(&d.hash),
            model.shown
        ),
        Format::Human => {
            println!(
                "already deployed: the same source of {} is deployment {} (sha256 {}, deployed {}); nothing was added",
                d.process_id,
                d.id,
                ops::short_hash(&d.hash),
                ops::timestamp(deployed.deployed_ms)
            );
            if let Some(at) = deployed.retired_ms {
                println!(
                    "note: deployment {} was retired at {}: it starts no new instance",
                    d.id,
                    ops::timestamp(at)
                );
            }
        }
    }
    ExitCode::SUCCESS
}

/// `1 failed, 2 completed`, or `none`.
pub(crate) fn counts_words(c: &StatusCounts) -> String {
    c.in_words().unwrap_or_else(|| "none".into())
}

fn deployment_json(d: &DeploymentRow) -> Value {
    json!({
        "deployment": d.id,
        "process": d.process_id,
        "model": d.origin,
        "hash": d.hash,
        "deployed": ops::timestamp(d.deployed_ms),
        "instances": {
            "running": d.counts.running,
            "waiting": d.counts.waiting,
            "completed": d.counts.completed,
            "failed": d.counts.failed,
        },
        "retired": d.retired_ms.map(ops::timestamp),
    })
}

pub(crate) fn list(args: ListArgs) -> ExitCode {
    let format = args.format;
    let store = match ops::open_for_reading(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    let rows = match qflow_engine::inspect::fleet::deployments(&store) {
        Ok(r) => r,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    match format {
        Format::Json => {
            let all: Vec<Value> = rows.iter().map(deployment_json).collect();
            println!(
                "{}",
                qflow_engine::runtime::snapshot::canonical_string(&Value::Array(all))
            );
        }
        Format::Human if rows.is_empty() => println!(
            "no deployments in {} (`qflow deploy MODEL --db {}` adds one)",
            args.db, args.db
        ),
        Format::Human => {
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|d| {
                    vec![
                        d.id.to_string(),
                        d.process_id.clone(),
                        d.origin.clone().unwrap_or_else(|| "(by a run)".into()),
                        ops::short_hash(&d.hash).to_string(),
                        ops::timestamp(d.deployed_ms),
                        counts_words(&d.counts),
                        d.retired_ms
                            .map(ops::timestamp)
                            .unwrap_or_else(|| "no".into()),
                    ]
                })
                .collect();
            ops::table(
                &[
                    "ID",
                    "PROCESS",
                    "MODEL",
                    "HASH",
                    "DEPLOYED",
                    "INSTANCES",
                    "RETIRED",
                ],
                &cells,
            );
        }
    }
    ExitCode::SUCCESS
}

pub(crate) fn retire(args: RetireArgs) -> ExitCode {
    let format = args.format;
    let mut store = match ops::open_existing(&args.db) {
        Ok(s) => s,
        Err(e) => return ops::fail(format, USAGE, "store", e),
    };
    let id = args.deployment;
    match store.retire(id, system_now_ms()) {
        Ok(Retirement::Retired) => {
            match format {
                Format::Json => println!(
                    "{}",
                    json_line(&json!({"deployment": id, "retired": true}), &["deployment"])
                ),
                Format::Human => println!("retired deployment {id}: it starts no new instance"),
            }
            ExitCode::SUCCESS
        }
        Ok(Retirement::AlreadyRetired(at)) => {
            match format {
                Format::Json => println!(
                    "{}",
                    json_line(
                        &json!({"deployment": id, "retired": true, "since": ops::timestamp(at)}),
                        &["deployment"]
                    )
                ),
                Format::Human => println!(
                    "deployment {id} is already retired (since {})",
                    ops::timestamp(at)
                ),
            }
            ExitCode::SUCCESS
        }
        Ok(Retirement::Blocked(blocking)) => {
            let failed: Vec<&str> = blocking
                .iter()
                .filter(|(_, s)| *s == qflow_engine::instance::Status::Failed)
                .map(|(i, _)| i.as_str())
                .collect();
            let named: Vec<String> = blocking
                .iter()
                .map(|(i, s)| format!("{i} ({})", s.as_str().to_uppercase()))
                .collect();
            let hint = if failed.is_empty() {
                format!("let them finish (`qflow resume INSTANCE --db {}`)", args.db)
            } else {
                format!(
                    "repair the FAILED ones onto a fixed model (`qflow migrate --all-failed-of {id} --to MODEL --db {}`), let unfinished ones finish",
                    args.db
                )
            };
            let msg = format!(
                "deployment {id} cannot be retired: {} {} FAILED or unfinished: {}; {hint}. Nothing was changed",
                qflow_engine::text::counted(blocking.len() as u64, "instance", "instances"),
                if blocking.len() == 1 { "is" } else { "are" },
                named.join(", ")
            );
            eprintln!("error: {msg}");
            if format == Format::Json {
                let list: Vec<Value> = blocking
                    .iter()
                    .map(|(i, s)| json!({"instance": i, "status": s.as_str()}))
                    .collect();
                let rec = json!({"status": "error", "error": "refused", "message": msg, "deployment": id, "blocking": list});
                println!("{}", json_line(&rec, &["status", "error", "message"]));
            }
            ExitCode::from(REFUSED)
        }
        Err(e) => ops::fail(format, USAGE, "store", e),
    }
}
