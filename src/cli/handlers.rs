//! The handlers file's world: each task's command or endpoint and each
//! channel's relay, registered on the engine's [`Handlers`]. This module
//! runs the processes and sends the requests; what their answers mean is
//! the engine's (`qflow_engine::handlers`), so `qflow run --handlers` and
//! `qflow serve` classify them the same way (docs/handlers.md).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use qflow_engine::embed::{Delivery, Handlers, Request, Task, TaskError, TaskResult};
use qflow_engine::handlers::{self as contract, ChannelRelay, HandlersFile, Runner, TaskHandler};
use qflow_engine::instance::event::TaskOutcome;
use qflow_engine::runtime::clock::system_now_ms;
use serde_json::Value;

/// The engine's handlers for everything the file names. `reply_to`, when
/// serving, is the base URL counterparts answer on.
pub(crate) fn world(file: &HandlersFile, reply_to: Option<String>) -> Handlers {
    let mut handlers = Handlers::new();
    for (name, spec) in &file.tasks {
        let spec = spec.clone();
        let dir = file.dir.clone();
        // The claim outlasts the handler's own timeout, plus the time to
        // kill a command that overran it.
        let lease = spec.timeout + Duration::from_secs(5);
        if let Some(n) = spec.concurrency {
            handlers.concurrency(name, n);
        }
        if let Some(b) = &spec.breaker {
            handlers.breaker(name, b.clone());
        }
        handlers.task_with_lease(name, lease, move |task| {
            as_result(run_task(&spec, &dir, task))
        });
    }
    for (channel, relay) in &file.channels {
        let relay = relay.clone();
        if let Some(n) = relay.concurrency {
            handlers.concurrency(channel, n);
        }
        let reply_to = reply_to.clone();
        handlers.relay(channel, move |req| {
            deliver(&relay, reply_to.as_deref(), req)
        });
    }
    handlers
}

/// An outcome as a handler's result (the engine maps it straight back).
fn as_result(o: TaskOutcome) -> TaskResult {
    match o {
        TaskOutcome::Ok(vars) => Ok(Value::Object(vars.into_iter().collect())),
        TaskOutcome::BpmnError { code } => Err(TaskError::Bpmn { code }),
        TaskOutcome::Fail {
            code,
            class,
            retry_after,
            message,
        } => Err(TaskError::Failure {
            code,
            class,
            retry_after,
            message,
        }),
    }
}

fn variables_json(task: &Task<'_>) -> String {
    Value::Object(
        task.variables
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
    .to_string()
}

fn run_task(spec: &TaskHandler, dir: &Path, task: &Task<'_>) -> TaskOutcome {
    match &spec.runner {
        Runner::Shell(line) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(line);
            run_command(c, spec.timeout, dir, task)
        }
        Runner::Argv(argv) => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            run_command(c, spec.timeout, dir, task)
        }
        Runner::Url(url) => post_task(url, spec.timeout, task),
    }
}

/// Run a command: the variables on stdin, its answer on stdout, killed when
/// it overruns the timeout. Its output is bounded (the first
/// [`contract::OUTPUT_LIMIT`] bytes of stdout, the last
/// [`contract::STDERR_TAIL`] of stderr; the rest is read and dropped), and
/// its exit is what ends the attempt: once it has exited, whatever is left
/// of its process group (a background job still holding the pipes) is
/// killed, so the pipes close and the answer is read at once.
fn run_command(mut cmd: Command, timeout: Duration, dir: &Path, task: &Task<'_>) -> TaskOutcome {
    // Its own process group (its id is the command's pid), so a timeout
    // kills everything the command started, not the command alone.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("QFLOW_INSTANCE", task.instance)
        .env("QFLOW_NODE", task.node)
        .env("QFLOW_TASK", task.name)
        .env("QFLOW_ATTEMPT", task.attempt.to_string())
        .env("QFLOW_IDEMPOTENCY_KEY", task.idempotency_key());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return contract::unreachable(task.name, &format!("cannot start the command: {e}"))
        }
    };
    let input = variables_json(task);
    let stdin = child.stdin.take();
    std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            // A command that does not read its input closes the pipe early.
            let _ = s.write_all(input.as_bytes());
        }
    });
    let out = Captured::start(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        Keep::Head(contract::OUTPUT_LIMIT),
    );
    let err = Captured::start(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        Keep::Tail(contract::STDERR_TAIL),
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        match exited(&mut child) {
            Ok(true) => {
                // The command is done: what it left in its group goes, so
                // nothing holds its pipes open past its exit.
                kill_group(&mut child);
                match child.wait() {
                    Ok(status) => break status,
                    Err(e) => {
                        return contract::unknown_outcome(
                            task.name,
                            &format!("could not be waited for: {e}"),
                        )
                    }
                }
            }
            Ok(false) if Instant::now() >= deadline => {
                kill_group(&mut child);
                let _ = child.wait();
                return contract::unknown_outcome(
                    task.name,
                    &format!(
                        "gave no answer within {}",
                        qflow_engine::duration::to_iso(timeout)
                    ),
                );
            }
            Ok(false) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                kill_group(&mut child);
                let _ = child.wait();
                return contract::unknown_outcome(
                    task.name,
                    &format!("could not be waited for: {e}"),
                );
            }
        }
    };
    // The pipes close with the group; only a process that left the group
    // on purpose (setsid) can still hold them: it is not waited for long.
    let grace = Instant::now() + PIPE_GRACE;
    let (stdout, stdout_total) = out.finish(grace);
    let (stderr, _) = err.finish(grace);
    contract::command_output(task.name, status.code(), &stdout, stdout_total, &stderr)
}

/// How long the pipes of a command that has exited are still read.
const PIPE_GRACE: Duration = Duration::from_secs(1);

/// Whether the command has exited, without reaping it: while it is a
/// zombie its process id, the id of its group, cannot name anyone else's.
fn exited(child: &mut std::process::Child) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
        let pid = Pid::from_child(child);
        let how = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
        match waitid(WaitId::Pid(pid), how) {
            Ok(status) => Ok(status.is_some()),
            Err(e) => Err(e.into()),
        }
    }
    #[cfg(not(unix))]
    {
        child.try_wait().map(|s| s.is_some())
    }
}

/// Which part of a pipe's bytes is kept.
#[derive(Clone, Copy)]
enum Keep {
    /// The first N bytes.
    Head(usize),
    /// The last N bytes.
    Tail(usize),
}

/// A pipe read to its end on a thread of its own: a bounded part of its
/// bytes kept, all of them counted.
struct Captured {
    got: std::sync::Arc<std::sync::Mutex<(Vec<u8>, u64)>>,
    done: std::thread::JoinHandle<()>,
}

impl Captured {
    fn start(pipe: Option<Box<dyn Read + Send>>, keep: Keep) -> Captured {
        let got: std::sync::Arc<std::sync::Mutex<(Vec<u8>, u64)>> = Default::default();
        let sink = got.clone();
        let done = std::thread::spawn(move || {
            let Some(mut pipe) = pipe else { return };
            let mut buf = [0u8; 16 * 1024];
            loop {
                let n = match pipe.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return,
                };
                let Ok(mut g) = sink.lock() else { return };
                let (bytes, total) = &mut *g;
                *total += n as u64;
                match keep {
                    Keep::Head(limit) => {
                        let room = limit.saturating_sub(bytes.len()).min(n);
                        bytes.extend_from_slice(&buf[..room]);
                    }
                    Keep::Tail(limit) => {
                        bytes.extend_from_slice(&buf[..n]);
                        if bytes.len() > limit {
                            let cut = bytes.len() - limit;
                            bytes.drain(..cut);
                        }
                    }
                }
            }
        });
        Captured { got, done }
    }

    /// What was read by `until` (the pipe's end, when it came first): the
    /// kept bytes and how many were read in all.
    fn finish(self, until: Instant) -> (Vec<u8>, u64) {
        while !self.done.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        match self.got.lock() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// Kill a command's process group: everything it started (`process_group(0)`
/// at spawn made the group's id the command's pid, and the command is not
/// reaped yet, so that id cannot name anyone else's group). Whatever left
/// the group on purpose (`setsid`) is not followed.
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        let group = rustix::process::Pid::from_child(child);
        if rustix::process::kill_process_group(group, rustix::process::Signal::KILL).is_ok() {
            return;
        }
    }
    let _ = child.kill();
}

fn agent(timeout: Duration) -> ureq::Agent {
    use ureq::tls::{RootCerts, TlsConfig, TlsProvider};
    ureq::Agent::config_builder()
        // ureq picks rustls unless told: native-tls (Cargo.toml says why),
        // trusting the roots the system trusts.
        .tls_config(
            TlsConfig::builder()
                .provider(TlsProvider::NativeTls)
                .root_certs(RootCerts::PlatformVerifier)
                .build(),
        )
        .timeout_global(Some(timeout))
        .timeout_connect(Some(timeout.min(Duration::from_secs(5))))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into()
}

/// Whether a failed request certainly never reached the server (nothing
/// was sent), as opposed to one that may have been handled.
fn before_send(e: &ureq::Error) -> bool {
    use std::io::ErrorKind;
    match e {
        ureq::Error::HostNotFound
        | ureq::Error::ConnectionFailed
        | ureq::Error::BadUri(_)
        | ureq::Error::Tls(_)
        // Raised by the TLS handshake (or by building its connector): the
        // request's first byte goes out only after it succeeded.
        | ureq::Error::NativeTls(_)
        | ureq::Error::Timeout(ureq::Timeout::Resolve | ureq::Timeout::Connect) => true,
        ureq::Error::Io(io) => matches!(
            io.kind(),
            ErrorKind::ConnectionRefused | ErrorKind::AddrNotAvailable | ErrorKind::NotFound
        ),
        _ => false,
    }
}

fn post_task(url: &str, timeout: Duration, task: &Task<'_>) -> TaskOutcome {
    let body = variables_json(task);
    let sent = agent(timeout)
        .post(url)
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", task.idempotency_key())
        .header("Qflow-Instance", task.instance)
        .header("Qflow-Attempt", task.attempt.to_string())
        .send(body.as_bytes());
    match sent {
        Ok(mut resp) => {
            let status = resp.status().as_u16();
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| contract::retry_after(v, system_now_ms() / 1000));
            let read = resp
                .body_mut()
                .with_config()
                .limit(contract::OUTPUT_LIMIT as u64)
                .read_to_vec();
            match read {
                Ok(body) => contract::http_answer(task.name, status, retry_after, &body, false),
                Err(ureq::Error::BodyExceedsLimit(_)) => {
                    contract::http_answer(task.name, status, retry_after, &[], true)
                }
                Err(e) => contract::unknown_outcome(
                    task.name,
                    &format!("answered HTTP {status} but its body was cut off ({e})"),
                ),
            }
        }
        Err(e) if before_send(&e) => contract::unreachable(task.name, &format!("{url}: {e}")),
        Err(e) => {
            contract::unknown_outcome(task.name, &format!("sent the request to {url}, then {e}"))
        }
    }
}

/// How much of a refusing counterpart's body is kept (characters).
const BODY_SUMMARY: usize = contract::BODY_SUMMARY;

/// One delivery of a call's request: 2xx is delivered; a 4xx other than
/// 408 and 429 is a rejection (poisoned at once); 429 or 503 with
/// `Retry-After` is tried again no sooner than asked; anything else is a
/// failed delivery, which the outbox tries again (same idempotency key) on
/// the channel's own curve (docs/handlers.md, the delivery contract).
fn deliver(relay: &ChannelRelay, reply_to: Option<&str>, req: &Request<'_>) -> Delivery {
    let mut call = agent(relay.timeout)
        .post(&relay.url)
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", req.idempotency_key)
        .header("Qflow-Correlation", req.correlation)
        .header("Qflow-Attempt", req.attempt.to_string());
    if let Some(base) = reply_to {
        call = call.header(
            "Qflow-Reply-To",
            format!("{base}/correlations/{}", req.correlation),
        );
    }
    match call.send(req.body.to_string().as_bytes()) {
        Ok(resp) if resp.status().is_success() => Delivery::Delivered,
        Ok(mut resp) => {
            let status = resp.status().as_u16();
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| contract::retry_after(v, system_now_ms() / 1000));
            let body = resp
                .body_mut()
                .with_config()
                .limit(BODY_SUMMARY as u64 * 4)
                .read_to_string()
                .unwrap_or_default();
            contract::delivery_outcome(&relay.url, status, retry_after, &body)
        }
        Err(e) => Delivery::Failed(format!("{}: {e}", relay.url)),
    }
}
