//! qflow embedded in a Rust program: `cargo run --example embed`.
//!
//! The DBG-08 charge model runs against a payment provider that is down for
//! its first three attempts. Each attempt, retry park and the final result
//! is a durable decision in the store (a file here, so you can open it
//! afterwards with `qflow console --db` or `qflow show`).

use std::sync::atomic::{AtomicU32, Ordering};

use qflow_engine::embed::{Engine, TaskError};
use serde_json::json;

const MODEL: &str = include_str!("../samples/dbg08-charge.bpmn");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = std::env::temp_dir().join(format!("qflow-embed-{}.db", std::process::id()));
    let mut engine = Engine::open(&db)?;

    // The provider is down for the first three attempts, then charges.
    let calls = AtomicU32::new(0);
    engine.register("payments.charge", move |task| {
        if calls.fetch_add(1, Ordering::SeqCst) < 3 {
            return Err(TaskError::transient("PROVIDER_DOWN").with_message("503 from the provider"));
        }
        let order = task.var("orderId").cloned().unwrap_or_default();
        Ok(json!({ "chargeId": format!("ch_{}", order.as_str().unwrap_or("?")) }))
    });

    let deployment = engine.deploy(MODEL)?;
    let instance = engine.start(&deployment, json!({ "orderId": "A-17", "amount": 42 }))?;
    // Virtual time (the default): the 1 min, 5 min and 25 min backoffs
    // are taken at once, each at its own instant.
    while let Some(step) = engine.step()? {
        for line in &step.decision.lines {
            println!("{line}");
        }
    }
    println!("{}", engine.status(&instance)?);
    println!("variables: {}", engine.variables(&instance)?);
    println!("store: {}", db.display());
    Ok(())
}
