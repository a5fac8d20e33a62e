//! `qflow test [PATH…]`: every model's scenarios, each run to its end on
//! the virtual clock in a temporary database and held to its `"expect"`
//! (docs/run.md, "Testing models"). Exit 0 when all hold, 3 when an
//! expectation fails, 2 when an input cannot be read or run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use qflow_engine::inspect::End;
use qflow_engine::runtime::clock::VirtualClock;
use qflow_engine::runtime::driver::DEFAULT_HORIZON;
use qflow_engine::runtime::graph::Graph;
use qflow_engine::runtime::scenario::Scenario;
use qflow_engine::runtime::scenario_check;
use qflow_engine::runtime::session::{load_scenario, ScenarioChoice, Session, SessionDb};
use qflow_engine::text::counted;
use serde_json::{json, Value};

use super::color::{paint, Stream};
use super::run::{settle, stop_word, Columns, Format as RunFormat, Opts, Settled};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// One line per scenario and a summary, as `cargo test` prints them.
    Human,
    /// One JSON object: the counts and every scenario's result.
    Json,
    /// A JUnit XML report (one test suite per model), which CI systems read.
    Junit,
}

/// Run every model's scenarios and hold each to its `"expect"`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Models, scenarios or directories (every model and every scenario
    /// under it, `.gitignore`d and hidden paths skipped). Default: the
    /// current directory.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

const AFTER_HELP: &str = "\
Scenarios: a scenario is a JSON file in a scenarios/ folder beside its model
(docs/run.md). It is for the model its \"model\" names (relative to the scenario's
folder, e.g. \"../bank-authorize.bpmn\"), else for the model of its own name
(scenarios/checkout.json: ../checkout.bpmn); a model may have several.
\"expect\": \"completed\" | \"failed\" | \"failed:CODE\" | \"waiting\" | \"waiting:WHAT\" is how
the run must end; a scenario without one passes when its run ends.

Each scenario runs as `qflow run MODEL --scenario FILE` would: the virtual clock,
a temporary database, the 30-day horizon.

Exit status: 0 when every expectation holds, 3 when one does not, 2 when an input
cannot be read or run (an unreadable or invalid scenario, a refused model, no
scenario found); 2 wins over 3.";

/// One scenario of one model.
#[derive(Debug)]
struct Case {
    scenario: PathBuf,
    /// The model it is for, or why none could be named.
    model: Result<PathBuf, String>,
}

#[derive(Debug)]
enum Verdict {
    /// The expectation held (or there was none: the run ended).
    Ok,
    /// The run ended otherwise than expected.
    Failed,
    /// The scenario could not be run.
    Error(String),
}

#[derive(Debug)]
struct Outcome {
    case: Case,
    expect: Option<String>,
    ended: Option<String>,
    verdict: Verdict,
    seconds: f64,
}

pub(crate) fn run(args: Args) -> ExitCode {
    let started = Instant::now();
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let colour = super::color::choice().on(Stream::Stdout);
    let (cases, problems) = collect(&paths);
    for p in &problems {
        eprintln!("error: {p}");
    }
    if cases.is_empty() && problems.is_empty() {
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        eprintln!(
            "error: no scenario found in {}: a scenario is a JSON file in a scenarios/ folder beside its model (docs/run.md)",
            shown.join(", ")
        );
        return ExitCode::from(2);
    }
    if args.format == Format::Human {
        println!(
            "\nrunning {}",
            counted(cases.len() as u64, "scenario", "scenarios")
        );
    }
    let mut outcomes = Vec::new();
    for case in cases {
        let one = Instant::now();
        let (expect, ended, verdict) = match &case.model {
            Ok(model) => run_case(model, &case.scenario),
            Err(why) => (None, None, Verdict::Error(why.clone())),
        };
        let outcome = Outcome {
            case,
            expect,
            ended,
            verdict,
            seconds: one.elapsed().as_secs_f64(),
        };
        if args.format == Format::Human {
            println!("{}", human_line(&outcome, colour));
        }
        outcomes.push(outcome);
    }
    let passed = outcomes
        .iter()
        .filter(|o| matches!(o.verdict, Verdict::Ok))
        .count();
    let failed = outcomes
        .iter()
        .filter(|o| matches!(o.verdict, Verdict::Failed))
        .count();
    let errors = outcomes.len() - passed - failed + problems.len();
    let seconds = started.elapsed().as_secs_f64();
    match args.format {
        Format::Human => print_summary(&outcomes, [passed, failed, errors], seconds, colour),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&json_report(
                &outcomes, &problems, passed, failed, errors
            ))
            .expect("a report serializes")
        ),
        Format::Junit => print!("{}", junit(&outcomes, &problems, seconds)),
    }
    if errors > 0 {
        ExitCode::from(2)
    } else if failed > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

/// Run one scenario of one model: (its expectation, how it ended, the verdict).
fn run_case(model: &Path, path: &Path) -> (Option<String>, Option<String>, Verdict) {
    let error = |m: String| (None, None, Verdict::Error(m));
    let shown = model.display().to_string();
    let bytes = match std::fs::read(model) {
        Ok(b) => b,
        Err(e) => return error(format!("cannot read {shown}: {e}")),
    };
    let config = qflow_engine::config::Config::for_model(model);
    let (text, analysis) = qflow_engine::analyze_bytes_with(&bytes, &config.settings);
    let refusals: Vec<String> = analysis
        .refusals()
        .map(|d| d.code.as_str().to_string())
        .collect();
    let Some(defs) = analysis
        .definitions
        .as_ref()
        .filter(|_| refusals.is_empty())
    else {
        return error(format!(
            "{shown}: the model is refused ({}); `qflow check {shown}` shows why",
            refusals.join(", ")
        ));
    };
    let graph = match Graph::compile(defs) {
        Ok(g) => g,
        Err(e) => return error(format!("{shown} cannot run: {e}")),
    };
    let (scenario, _) = match load_scenario(model, &ScenarioChoice::File(path.to_path_buf())) {
        Ok(found) => found,
        Err(e) => return error(e.to_string()),
    };
    let misfits = scenario_check::check(&scenario, &graph);
    if !misfits.is_empty() {
        let all: Vec<String> = misfits.iter().map(ToString::to_string).collect();
        return error(format!(
            "scenario {} does not fit {shown}: {}",
            path.display(),
            all.join("; ")
        ));
    }
    let expect = scenario.expect.clone();
    let mut session = match Session::open(
        SessionDb::new(None, "test"),
        &shown,
        &text,
        defs,
        scenario,
        VirtualClock::new(0),
    ) {
        Ok(s) => s,
        Err(e) => return error(e.to_string()),
    };
    let opts = Opts {
        effects_log: None,
        format: RunFormat::Human,
        resolves: Vec::new(),
        until: None,
        horizon: Some(DEFAULT_HORIZON),
        db_shown: None,
        expect: None,
        columns: Columns::of(Some(&graph)),
        quiet: true,
    };
    let settled = match settle(&mut session.run, &opts, |_| {}) {
        Ok(s) => s,
        Err(e) => return error(e.to_string()),
    };
    let ended = ended(&settled);
    let verdict = match &expect {
        Some(e) if !e.holds(&settled.state.ended()) => Verdict::Failed,
        _ => Verdict::Ok,
    };
    (expect.map(|e| e.to_string()), Some(ended), verdict)
}

/// How a run ended, in the words of an expectation (`failed:q.timeout`),
/// with why a failure failed and how many attempts it took.
fn ended(settled: &Settled) -> String {
    let mut out = settled.state.ended().describe();
    let (reason, attempts) = match &settled.state.end {
        End::Failed {
            failure, attempts, ..
        } => (Some(failure.reason.as_str()), Some(*attempts)),
        _ => (None, None),
    };
    match (reason, attempts) {
        (Some(r), Some(n)) => out.push_str(&format!(
            " ({r}, {})",
            counted(u64::from(n), "attempt", "attempts")
        )),
        (Some(r), None) => out.push_str(&format!(" ({r})")),
        _ => {}
    }
    if let Some(stop) = &settled.stop {
        out.push_str(&format!(" (stopped: {})", stop_word(stop)));
    }
    out
}

/// The scenarios the paths name, each with its model, in name order, and
/// the paths that could not be read: every scenario under a directory, a
/// scenario as given, and a model's own scenarios (those in the
/// `scenarios/` folder beside it that are for it).
fn collect(paths: &[PathBuf]) -> (Vec<Case>, Vec<String>) {
    let mut cases: Vec<Case> = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        if path.is_dir() {
            for entry in ignore::WalkBuilder::new(path).build() {
                match entry {
                    Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => {
                        let p = e.into_path();
                        if has_ext(&p, "json") && in_scenarios_folder(&p) {
                            let model = model_of(&p);
                            cases.push(Case { scenario: p, model });
                        }
                    }
                    Ok(_) => {}
                    Err(e) => problems.push(format!("cannot walk {}: {e}", path.display())),
                }
            }
        } else if !path.is_file() {
            problems.push(format!(
                "{}: no such file or directory (give models, scenarios or directories)",
                path.display()
            ));
        } else if has_ext(path, "json") {
            cases.push(Case {
                scenario: path.clone(),
                model: model_of(path),
            });
        } else {
            let folder = path.parent().unwrap_or(Path::new(".")).join("scenarios");
            let mut found = 0;
            for e in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
                let p = e.path();
                if !has_ext(&p, "json") {
                    continue;
                }
                // Another model's scenario, or one naming no model that
                // exists: not this model's.
                if let Ok(m) = model_of(&p) {
                    if same_file(&m, path) {
                        found += 1;
                        cases.push(Case {
                            scenario: p,
                            model: Ok(m),
                        });
                    }
                }
            }
            if found == 0 {
                let stem = qflow_engine::file::model_stem(path).unwrap_or_default();
                problems.push(format!(
                    "{} has no scenario: write one as {} (docs/run.md)",
                    path.display(),
                    folder.join(format!("{stem}.json")).display()
                ));
            }
        }
    }
    cases.sort_by(|a, b| a.scenario.cmp(&b.scenario));
    cases.dedup_by(|a, b| a.scenario == b.scenario);
    (cases, problems)
}

/// The model a scenario is for: its `"model"`, relative to its folder, or
/// the model of its own name in the folder above.
fn model_of(scenario: &Path) -> Result<PathBuf, String> {
    let folder = scenario.parent().unwrap_or(Path::new("."));
    let text = std::fs::read_to_string(scenario)
        .map_err(|e| format!("cannot read scenario {}: {e}", scenario.display()))?;
    let parsed =
        Scenario::parse(&text).map_err(|e| format!("scenario {}: {e}", scenario.display()))?;
    let model = match &parsed.model {
        Some(m) => normal(&folder.join(m)),
        None => {
            // `scenarios/order.v2.json` is `../order.v2.bpmn`'s (the stem
            // whole: with_extension would replace its last dot), else
            // `../order.v2.bpmn20.xml`'s (`file::model_stem` drops that
            // whole suffix); `.bpmn` when neither exists (the error names it).
            let stem = scenario.file_stem().unwrap_or_default().to_string_lossy();
            let above = folder.parent().unwrap_or(Path::new("."));
            let named = |suffix: &str| normal(&above.join(format!("{stem}{suffix}")));
            [".bpmn", ".bpmn20.xml"]
                .into_iter()
                .map(named)
                .find(|m| m.is_file())
                .unwrap_or_else(|| named(".bpmn"))
        }
    };
    if model.is_file() {
        return Ok(model);
    }
    Err(match &parsed.model {
        Some(m) => format!(
            "scenario {}: its \"model\": \"{m}\" is {}, which does not exist (the path is relative to the scenario's folder)",
            scenario.display(),
            model.display()
        ),
        None => format!(
            "scenario {} is for no model: {} does not exist; name its model with \"model\": \"../NAME.bpmn\"",
            scenario.display(),
            model.display()
        ),
    })
}

/// `a/scenarios/../b.bpmn` as `a/b.bpmn`, as a user would write it.
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir
                if out
                    .components()
                    .next_back()
                    .is_some_and(|l| matches!(l, std::path::Component::Normal(_))) =>
            {
                out.pop();
            }
            std::path::Component::CurDir if !out.as_os_str().is_empty() => {}
            c => out.push(c),
        }
    }
    out
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn has_ext(p: &Path, ext: &str) -> bool {
    p.extension().is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

fn in_scenarios_folder(p: &Path) -> bool {
    p.parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "scenarios")
}

fn human_line(o: &Outcome, colour: bool) -> String {
    let ok = paint("ok", 32, colour);
    let result = match (&o.verdict, &o.expect, &o.ended) {
        (Verdict::Ok, Some(e), _) => format!("{ok} ({e})"),
        (Verdict::Ok, None, Some(ended)) => format!("{ok} (no expect; ended {ended})"),
        (Verdict::Ok, None, None) => ok,
        (Verdict::Failed, _, _) => paint("FAILED", 31, colour),
        (Verdict::Error(_), _, _) => paint("ERROR", 31, colour),
    };
    format!("test {} ... {result}", o.case.scenario.display())
}

fn print_summary(
    outcomes: &[Outcome],
    [passed, failed, errors]: [usize; 3],
    seconds: f64,
    colour: bool,
) {
    let bad: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| !matches!(o.verdict, Verdict::Ok))
        .collect();
    if !bad.is_empty() {
        println!("\nfailures:");
        for o in &bad {
            let model = o
                .case
                .model
                .as_ref()
                .map(|m| m.display().to_string())
                .unwrap_or_default();
            match &o.verdict {
                Verdict::Failed => println!(
                    "    {}: expected {}, ended {} (qflow run {model} --scenario {} shows every decision)",
                    o.case.scenario.display(),
                    o.expect.as_deref().unwrap_or("?"),
                    o.ended.as_deref().unwrap_or("?"),
                    o.case.scenario.display()
                ),
                Verdict::Error(why) => println!("    {}: {why}", o.case.scenario.display()),
                Verdict::Ok => {}
            }
        }
    }
    let result = if failed + errors == 0 {
        paint("ok", 32, colour)
    } else {
        paint("FAILED", 31, colour)
    };
    println!(
        "\ntest result: {result}. {passed} passed; {failed} failed; {}; finished in {seconds:.2}s\n",
        counted(errors as u64, "error", "errors")
    );
}

fn json_report(
    outcomes: &[Outcome],
    problems: &[String],
    passed: usize,
    failed: usize,
    errors: usize,
) -> Value {
    let tests: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            let (result, message) = match &o.verdict {
                Verdict::Ok => ("ok", None),
                Verdict::Failed => ("failed", None),
                Verdict::Error(m) => ("error", Some(m.clone())),
            };
            json!({
                "scenario": o.case.scenario.display().to_string(),
                "model": o.case.model.as_ref().ok().map(|m| m.display().to_string()),
                "expect": o.expect,
                "ended": o.ended,
                "result": result,
                "message": message,
            })
        })
        .collect();
    json!({
        "status": if failed + errors == 0 { "ok" } else { "failed" },
        "passed": passed,
        "failed": failed,
        "errors": errors,
        "problems": problems,
        "tests": tests,
    })
}

/// JUnit XML: one `<testsuite>` per model, one `<testcase>` per scenario.
fn junit(outcomes: &[Outcome], problems: &[String], seconds: f64) -> String {
    let mut suites: BTreeMap<String, Vec<&Outcome>> = BTreeMap::new();
    for o in outcomes {
        let model = match &o.case.model {
            Ok(m) => m.display().to_string(),
            Err(_) => "(no model)".to_string(),
        };
        suites.entry(model).or_default().push(o);
    }
    let count =
        |list: &[&Outcome], f: fn(&Verdict) -> bool| list.iter().filter(|o| f(&o.verdict)).count();
    let all: Vec<&Outcome> = outcomes.iter().collect();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"qflow test\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{seconds:.3}\">\n",
        all.len() + problems.len(),
        count(&all, |v| matches!(v, Verdict::Failed)),
        count(&all, |v| matches!(v, Verdict::Error(_))) + problems.len(),
    ));
    for (model, list) in &suites {
        let time: f64 = list.iter().map(|o| o.seconds).sum();
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{time:.3}\">\n",
            xml(model),
            list.len(),
            count(list, |v| matches!(v, Verdict::Failed)),
            count(list, |v| matches!(v, Verdict::Error(_))),
        ));
        for o in list {
            let name = o.case.scenario.display().to_string();
            out.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
                xml(&name),
                xml(model),
                o.seconds
            ));
            match &o.verdict {
                Verdict::Ok => out.push_str("/>\n"),
                Verdict::Failed => {
                    let msg = format!(
                        "expected {}, ended {}",
                        o.expect.as_deref().unwrap_or("?"),
                        o.ended.as_deref().unwrap_or("?")
                    );
                    out.push_str(&format!(
                        ">\n      <failure type=\"expectation\" message=\"{}\"/>\n    </testcase>\n",
                        xml(&msg)
                    ));
                }
                Verdict::Error(m) => out.push_str(&format!(
                    ">\n      <error type=\"error\" message=\"{}\"/>\n    </testcase>\n",
                    xml(m)
                )),
            }
        }
        out.push_str("  </testsuite>\n");
    }
    if !problems.is_empty() {
        out.push_str(&format!(
            "  <testsuite name=\"(inputs)\" tests=\"{0}\" failures=\"0\" errors=\"{0}\" time=\"0.000\">\n",
            problems.len()
        ));
        for p in problems {
            out.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"(inputs)\" time=\"0.000\">\n      <error type=\"error\" message=\"{}\"/>\n    </testcase>\n",
                xml(p),
                xml(p)
            ));
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// Text as an XML attribute value.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' => out.push_str("&#10;"),
            c if (c as u32) < 0x20 && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}
