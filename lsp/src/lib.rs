//! The qflow language server: puts the engine's load-time verdicts, and what
//! a model means when it runs, into the editor.
//!
//! Layout (after rust-analyzer and taplo): [`server`] receives LSP requests,
//! [`store`] keeps open documents and their analyses by version, one module
//! per feature computes an answer in engine terms (byte spans, plain structs),
//! and [`convert`] is the only module that builds LSP values. The engine never
//! sees a protocol type.

pub mod code_action;
pub mod completion;
pub mod convert;
pub mod diagram;
pub mod hover;
pub mod navigation;
pub mod server;
pub mod store;
pub mod symbols;
pub mod transport;
pub mod worker;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tower_lsp_server::{ClientSocket, LspService};

pub use server::{Backend, Config};
pub use tower_lsp_server::ls_types::Uri;

/// A language server service and its client socket, plus the flag that says
/// whether the client asked for `shutdown` (the exit code depends on it).
pub fn service(config: Config) -> (LspService<Backend>, ClientSocket, Arc<AtomicBool>) {
    service_with(config, None)
}

/// [`service`], answering the outline through `spliced` when given (only
/// [`transport::serve`] writes the spliced answers out).
pub(crate) fn service_with(
    config: Config,
    spliced: Option<transport::Spliced>,
) -> (LspService<Backend>, ClientSocket, Arc<AtomicBool>) {
    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    let (service, socket) =
        LspService::build(move |client| Backend::new(client, config, flag).splicing(spliced))
            .custom_method("qflow/diagram", Backend::diagram)
            .finish();
    (service, socket, shutdown)
}

/// Serve LSP on stdin/stdout until `exit`. Returns the process exit code the
/// specification asks for: 0 if `shutdown` came before `exit`, else 1.
///
/// The runtime is dropped without waiting for its blocking threads: tokio's
/// stdin reader may still be blocked in `read`, and an editor that keeps the
/// pipe open must not keep a stopped server alive.
pub fn run_stdio() -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("qflow lsp: cannot start the async runtime: {e}");
            return 2;
        }
    };
    let config = Config {
        pages: written_pages(),
        ..Config::default()
    };
    let shutdown = runtime.block_on(transport::serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        config,
    ));
    runtime.shutdown_background();
    if shutdown {
        0
    } else {
        1
    }
}

/// Write every code's page under the user's cache
/// (`qflow_model::diagnostic::pages::cache_dir`) so each diagnostic can link
/// a page that opens offline in any editor. A cache that cannot be written
/// costs the links, not the server: it says so on stderr (the editor's log
/// of the server) and publishes diagnostics without `codeDescription`.
fn written_pages() -> Option<&'static std::path::Path> {
    use qflow_model::diagnostic::pages;
    let dir = pages::cache_dir();
    match pages::write_all(&dir) {
        Ok(()) => Some(Box::leak(dir.into_boxed_path())),
        Err(e) => {
            eprintln!(
                "qflow lsp: cannot write the diagnostic pages to {}: {e}; diagnostics carry no links (qflow explain CODE prints a page; set XDG_CACHE_HOME to a writable directory)",
                dir.display()
            );
            None
        }
    }
}
