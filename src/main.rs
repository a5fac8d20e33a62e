//! `qflow`: the command-line face of the engine.
//!
//! Each subcommand lives in its own module under `cli/` and only presents what
//! the engine decides.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod cli;

/// A developer studio for durable BPMN 2.0 process models.
#[derive(Debug, Parser)]
#[command(name = "qflow", version, about, long_about = None)]
struct Cli {
    /// Colour (and terminal hyperlinks): auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never.
    #[arg(long, value_enum, global = true, default_value = "auto")]
    color: cli::color::ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check models against qflow's load-time rules (exit 0: no errors, 1: errors, 2: unreadable/usage).
    Check(cli::check::Args),
    /// Run one local instance of a model on the embedded store, printing every decision.
    Run(cli::run::Args),
    /// Run every model's scenarios, each held to its "expect" (exit 0: all hold, 3: one fails, 2: unreadable input).
    Test(cli::test::Args),
    /// Serve a database's instances on the wall clock with real handlers (commands, HTTP), relaying calls over HTTP.
    Serve(cli::serve::Args),
    /// Answer a channel call by its correlation (instance/node), as a counterpart would; prints the verdict.
    Respond(cli::respond::Args),
    /// Step one local instance in a terminal inspector (or inspect an existing database).
    Console(cli::console::Args),
    /// Start the language server on stdio.
    Lsp(cli::lsp::Args),
    /// Draw a model as an SVG diagram, with an instance's state on it (--db, --instance).
    Render(cli::render::Args),
    /// Simulate an outage over N real instances on the virtual clock (group commit, flat memory),
    /// or (--from DB --model EDITED.bpmn) what an edited policy does to a live store's parked retries.
    Simulate(cli::simulate::Args),
    /// A model's retry policies for N jobs failing together: scheduled attempts, worst case, peak per minute.
    Project(cli::project::Args),
    /// Hold back every retry park of a failure class or a dependency (durable; every process honours it).
    Pause(cli::contain::PauseArgs),
    /// Lift a pause: the held parks run as they fall due (those due already at once), or by a previewed ramp (--ramp, --max-rate, --dry-run).
    Unpause(cli::contain::UnpauseArgs),
    /// Set one instance aside: nothing claims or runs it until released.
    Quarantine(cli::contain::QuarantineArgs),
    /// Let quarantined instances run again: at once, or their retries by a previewed ramp (--ramp, --max-rate, --dry-run).
    Release(cli::contain::ReleaseArgs),
    /// The fleet's observations from a store: pending by failure class, terminal failures, load by dependency, backlog age.
    Stats(cli::stats::Args),
    /// The web inspector: a database's fleet, instances and one instance in the browser (read-only unless --allow-actions).
    Ui(cli::ui::Args),
    /// Print a diagnostic code's page (offline), or list every code.
    Explain(cli::explain::Args),
    /// Print a shell completion script: qflow completions bash > ~/.local/share/bash-completion/completions/qflow
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff): qflow man > qflow.1, qflow man check > qflow-check.1; or every page: qflow man --out-dir DIR
    Man {
        /// The subcommand whose page to print (qflow-COMMAND(1)); without it, qflow(1).
        #[arg(value_name = "COMMAND")]
        command: Option<String>,
        /// Write every page (qflow.1 and one qflow-COMMAND.1 per subcommand, which qflow(1) refers to) into DIR.
        #[arg(long, value_name = "DIR", conflicts_with = "command")]
        out_dir: Option<std::path::PathBuf>,
    },
    /// Record a model as a deployment of a database (or name the one that has its source).
    Deploy(cli::deploy::DeployArgs),
    /// List a database's deployments: model, hash, when, instances by status, retired.
    Deployments(cli::deploy::ListArgs),
    /// List a database's instances: status, deployment, node, attempts, next due time, failure.
    Instances(cli::instances::ListArgs),
    /// Print one instance in full: state, nodes, snapshot, timers, outbox, correlations, incidents, history.
    Show(cli::instances::ShowArgs),
    /// Retire a deployment (refused while any of its instances is FAILED or unfinished).
    Retire(cli::deploy::RetireArgs),
    /// Move an instance onto another deployment or model (repair a FAILED one): plan, then apply.
    Migrate(cli::migrate::MigrateArgs),
    /// Continue a repaired or parked instance, printing every decision.
    Resume(cli::migrate::ResumeArgs),
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = match command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            if e.use_stderr() {
                usage_error_as_json(&e);
            }
            return ExitCode::from(code);
        }
    };
    cli::color::set(cli.color);
    match cli.command {
        Command::Check(args) => cli::check::run(args),
        Command::Run(args) => cli::run::run(args),
        Command::Test(args) => cli::test::run(args),
        Command::Serve(args) => cli::serve::run(args),
        Command::Respond(args) => cli::respond::run(args),
        Command::Console(args) => cli::console::run(args),
        Command::Lsp(args) => cli::lsp::run(args),
        Command::Render(args) => cli::render::run(args),
        Command::Deploy(args) => cli::deploy::deploy(args),
        Command::Deployments(args) => cli::deploy::list(args),
        Command::Instances(args) => cli::instances::list(args),
        Command::Show(args) => cli::instances::show(args),
        Command::Retire(args) => cli::deploy::retire(args),
        Command::Migrate(args) => cli::migrate::migrate(args),
        Command::Resume(args) => cli::migrate::resume(args),
        Command::Simulate(args) => cli::simulate::run(args),
        Command::Stats(args) => cli::stats::run(args),
        Command::Ui(args) => cli::ui::run(args),
        Command::Project(args) => cli::project::run(args),
        Command::Pause(args) => cli::contain::pause(args),
        Command::Unpause(args) => cli::contain::unpause(args),
        Command::Quarantine(args) => cli::contain::quarantine(args),
        Command::Release(args) => cli::contain::release(args),
        Command::Explain(args) => cli::explain::run(args),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "qflow", &mut script);
            write_out(&script)
        }
        Command::Man { command, out_dir } => man(command.as_deref(), out_dir.as_deref()),
    }
}

/// The parser, with the database named outside the command line
/// (`QFLOW_DB`, else a `qflow.toml`'s `db`) as the default of every
/// subcommand whose `--db` is required: the flag wins. The commands whose
/// `--db` is optional (a local `run`, `simulate`, `console MODEL`) keep
/// their temporary database; `console` without a model and `render
/// --instance` read it themselves (`cli::ops::default_db`).
fn command() -> clap::Command {
    let mut cmd = Cli::command();
    let Some((db, from)) = cli::ops::default_db() else {
        return cmd;
    };
    // Read once per process; the parser keeps a 'static default.
    let db: &'static str = Box::leak(db.into_boxed_str());
    let from: &'static str = Box::leak(
        format!("The database (from {from}; --db wins): a SQLite file or a postgres:// URL.")
            .into_boxed_str(),
    );
    let names: Vec<String> = cmd
        .get_subcommands()
        .filter(|c| {
            c.get_arguments()
                .any(|a| a.get_id() == "db" && a.is_required_set())
        })
        .map(|c| c.get_name().to_string())
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, |c| {
            c.mut_arg("db", |a| a.required(false).default_value(db).help(from))
        });
    }
    cmd
}

/// A usage error (an unknown flag, a missing argument) of a command asked for
/// `--format json` still leaves JSON on stdout, as every other error does:
/// `check`'s empty array of diagnostics, any other command's error record
/// `{"status":"error","error":"usage","message":…}`. The parser's own text
/// (with the usage line) is on stderr.
fn usage_error_as_json(e: &clap::Error) {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let json = args
        .windows(2)
        .any(|w| w[0] == "--format" && w[1] == "json")
        || args.iter().any(|a| a == "--format=json");
    if !json {
        return;
    }
    if args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str)
        == Some("check")
    {
        println!("[]");
        return;
    }
    // The parser's first paragraph ("error: the following required
    // arguments were not provided:" and the names under it), on one line.
    let text = e.to_string();
    let paragraph: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let joined = paragraph.join(" ");
    let message = joined.strip_prefix("error: ").unwrap_or(&joined);
    let record = serde_json::json!({"status": "error", "error": "usage", "message": message});
    println!(
        "{}",
        cli::run::json_line(&record, &["status", "error", "message"])
    );
}

/// Exit status when the reader of stdout went away (`qflow check DIR | head`):
/// 141, what a shell reports for a program ended by SIGPIPE, so a pipeline
/// under `set -o pipefail` sees what it sees of any other Unix tool.
const CLOSED_STDOUT: i32 = 141;

/// A closed stdout ends the command quietly instead of with a panic and a
/// backtrace. `println!` panics when its write fails; the workspace forbids
/// the unsafe call that would restore SIGPIPE's default action, so the panic
/// hook recognises that one panic and exits with [`CLOSED_STDOUT`]. Every
/// other panic is reported as before.
fn quiet_on_closed_stdout() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.ends_with(&broken_pipe()) {
            std::process::exit(CLOSED_STDOUT);
        }
        report(info);
    }));
}

/// How the standard library words EPIPE in a failed print's panic message
/// ("Broken pipe (os error 32)" on Linux).
#[cfg(unix)]
fn broken_pipe() -> String {
    std::io::Error::from_raw_os_error(rustix::io::Errno::PIPE.raw_os_error()).to_string()
}

#[cfg(not(unix))]
fn broken_pipe() -> String {
    std::io::Error::from(std::io::ErrorKind::BrokenPipe).to_string()
}

/// `qflow man`: qflow(1), one subcommand's qflow-COMMAND(1) (the pages
/// qflow(1) names), or every page into a directory.
fn man(command: Option<&str>, out_dir: Option<&std::path::Path>) -> ExitCode {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let source = format!("qflow {}", env!("CARGO_PKG_VERSION"));
    if let Some(dir) = out_dir {
        let mut pages = vec![cmd.clone()];
        pages.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        let written = std::fs::create_dir_all(dir).and_then(|()| {
            pages.iter().try_for_each(|p| {
                clap_mangen::Man::new(p.clone())
                    .source(source.clone())
                    .generate_to(dir)
                    .map(drop)
            })
        });
        return match written {
            Ok(()) => {
                eprintln!(
                    "wrote {} man pages into {} (qflow.1 and qflow-COMMAND.1): man qflow",
                    pages.len(),
                    dir.display()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!(
                    "error: cannot write the man pages into {}: {e}",
                    dir.display()
                );
                ExitCode::from(2)
            }
        };
    }
    let page = match command {
        None => cmd,
        Some(name) => {
            match cmd.find_subcommand(name) {
                Some(sub) => sub.clone(),
                None => {
                    let names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
                    let hint = qflow_engine::suggest::closest(name, names.iter().copied())
                        .map(|s| format!(" (did you mean `{s}`?)"))
                        .unwrap_or_default();
                    eprintln!("error: `{name}` is not a qflow subcommand{hint}; `qflow --help` lists them");
                    return ExitCode::from(2);
                }
            }
        }
    };
    let mut out = Vec::new();
    match clap_mangen::Man::new(page).source(source).render(&mut out) {
        Ok(()) => write_out(&out),
        Err(e) => {
            eprintln!("error: cannot render the man page: {e}");
            ExitCode::from(2)
        }
    }
}

/// Write generated text to stdout; a closed pipe (`qflow man | head`) is not
/// an error worth a panic: it ends like any other command's closed stdout.
fn write_out(bytes: &[u8]) -> ExitCode {
    use std::io::Write;
    match std::io::stdout().write_all(bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(CLOSED_STDOUT as u8),
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            ExitCode::from(2)
        }
    }
}
