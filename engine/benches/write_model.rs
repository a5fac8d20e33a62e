//! Writes a generated model to a file, so the CLI can be measured on it
//! (peak memory with `/usr/bin/time -v qflow check FILE`).
//!
//! Run: `cargo bench -p qflow-engine --bench write_model -- 20000 /tmp/qflow-20k.bpmn`.
//! Under a plain `cargo bench` (no arguments) it writes nothing.

// The generator is API of the model crate; here a private copy.
#[allow(unreachable_pub)]
#[path = "../../model/src/testgen.rs"]
#[allow(dead_code)]
mod testgen;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [tasks, path] = args.as_slice() else {
        eprintln!("usage: cargo bench -p qflow-engine --bench write_model -- TASKS PATH (nothing written)");
        return;
    };
    let Ok(tasks) = tasks.parse::<usize>() else {
        eprintln!("TASKS must be a number, got `{tasks}`");
        std::process::exit(2);
    };
    let model = testgen::generate(tasks);
    if let Err(e) = std::fs::write(path, &model) {
        eprintln!("cannot write {path}: {e}");
        std::process::exit(2);
    }
    println!("wrote {path}: {tasks} tasks, {} bytes", model.len());
}
