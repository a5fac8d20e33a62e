//! The language server: LSP requests in, handler answers out.
//!
//! Every analysis runs on the analysis thread ([`crate::worker`]) and every
//! other engine call on the blocking pool through [`Shared::run`], so a
//! panic inside one becomes an error response (the worker or the JoinError
//! carries its message) and never unwinds through the protocol loop. Diagnostics are published by one
//! worker task per server, which always analyses the *latest* text and
//! publishes a result only while its version is still current: a burst of
//! edits never leaves a stale verdict, and no debounce delay is added.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use std::collections::HashMap;
use std::path::Path;

use qflow_model::config::{Config as LintConfig, Settings, FILE_NAMES};
use qflow_model::Analysis;
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use crate::store::{Graveyard, Snapshot, Store};
use crate::transport::Spliced;
use crate::worker::{panic_message, Worker};
use crate::{code_action, completion, convert, diagram, hover, navigation, symbols};

/// How the server analyses; tests swap the analyzer to prove robustness.
#[derive(Clone, Copy)]
pub struct Config {
    /// Documents larger than this are kept but not analysed (a message says
    /// so): an editor must stay responsive whatever is opened in it.
    pub max_document_bytes: usize,
    /// The most diagnostics published for one document: the rest are
    /// counted in one summary diagnostic after them, and not kept (a
    /// document with millions of findings must not cost gigabytes).
    pub max_diagnostics: usize,
    /// The engine's loader; always [`check_analysis`] outside tests.
    pub analyzer: fn(&str, &Settings) -> Analysis,
    /// Where every code's page was written (`qflow_model::diagnostic::pages`):
    /// each diagnostic's `codeDescription` is the `file:` URI of its page
    /// there, which any editor can open offline. `None` (the default, and
    /// when the pages could not be written): no `codeDescription`.
    pub pages: Option<&'static Path>,
}

/// The default of [`Config::max_diagnostics`].
pub const MAX_DIAGNOSTICS: usize = 1_000;

impl Default for Config {
    fn default() -> Self {
        Config {
            max_document_bytes: 64 * 1024 * 1024,
            max_diagnostics: MAX_DIAGNOSTICS,
            analyzer: check_analysis,
            pages: None,
        }
    }
}

/// Exactly what `qflow check` runs on a file's bytes (decoding checks
/// included: an empty buffer or a NUL byte get check's QF001), so the editor
/// and the terminal never disagree.
pub fn check_analysis(text: &str, settings: &Settings) -> Analysis {
    qflow_model::analyze_bytes_with(text.as_bytes(), settings).1
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("max_document_bytes", &self.max_document_bytes)
            .field("max_diagnostics", &self.max_diagnostics)
            .finish_non_exhaustive()
    }
}

struct Shared {
    store: Store,
    config: Config,
    /// Documents whose diagnostics need publishing.
    dirty: mpsc::UnboundedSender<Uri>,
    /// Held from "is this version current?" to "sent": publishing and
    /// clearing on close cannot interleave.
    publish_lock: tokio::sync::Mutex<()>,
    graveyard: Graveyard,
    /// Runs every analysis, and frees what retired versions held, on one
    /// thread: one malloc arena for all of them (see [`crate::worker`]).
    analyst: Worker,
    /// Builds each version's line index beside its analysis.
    indexer: Worker,
    /// The configuration (`.bpmnlintrc`, `qflow.toml`) of each open model,
    /// re-read when a file it came from changes (a stat per analysis).
    lint: std::sync::Mutex<HashMap<Uri, Arc<LintConfig>>>,
    /// Configuration files whose problems were published, with how many.
    config_published: std::sync::Mutex<HashMap<Uri, usize>>,
}

pub struct Backend {
    client: Client,
    shared: Arc<Shared>,
    shutdown_requested: Arc<AtomicBool>,
    /// The client can watch files for us (dynamic registration).
    watch_configs: AtomicBool,
    /// Where the outline is written as JSON directly, when the transport
    /// splices it in (see [`Spliced`]).
    spliced: Option<Spliced>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend").finish_non_exhaustive()
    }
}

/// Why a job on the blocking pool did not answer.
fn join_error(e: tokio::task::JoinError) -> String {
    if e.is_panic() {
        panic_message(e.into_panic())
    } else {
        "the task was cancelled".to_string()
    }
}

fn internal(what: &str, detail: String) -> Error {
    Error {
        code: ErrorCode::InternalError,
        message: format!("qflow: internal error in {what}: {detail}").into(),
        data: None,
    }
}

impl Shared {
    /// The analysed current version of a document (`None`: not open).
    async fn snapshot(&self, uri: &Uri) -> Result<Option<Arc<Snapshot>>> {
        let Some((version, text, cell)) = self.store.current(uri) else {
            return Ok(None);
        };
        let snap = cell
            .get_or_try_init(|| async {
                let config = self.config;
                // The line index and the analysis are independent scans of
                // the text: run them side by side.
                let t = text.clone();
                let index = self
                    .indexer
                    .run(move || qflow_model::span::LineIndex::new(&t));
                let t = text.clone();
                let lint = self.lint_config(uri);
                let analysis = self.analyst.run(move || {
                    let mut analysis = (t.len() <= config.max_document_bytes)
                        .then(|| (config.analyzer)(&t, &lint.settings));
                    // Capped where the findings were made: the ones left out
                    // are freed on this thread, before anything converts them.
                    let left_out = analysis.as_mut().and_then(|a| {
                        crate::store::cap(&mut a.diagnostics, config.max_diagnostics)
                    });
                    (analysis, left_out)
                });
                let (analysis, index) = tokio::join!(analysis, index);
                let (analysis, left_out) = analysis.map_err(|e| internal("the analysis", e))?;
                let index = index.map_err(|e| internal("the line index", e))?;
                let snap = Arc::new(Snapshot {
                    version,
                    text,
                    index,
                    analysis,
                    left_out,
                });
                self.graveyard.bury(self.store.remember(uri, &snap));
                Ok::<_, Error>(snap)
            })
            .await?;
        Ok(Some(snap.clone()))
    }

    /// The configuration that applies to a document: cached, and re-read
    /// when one of its files changed, appeared or went away. A document that
    /// is not a file gets qflow's defaults.
    fn lint_config(&self, uri: &Uri) -> Arc<LintConfig> {
        let Some(path) = uri.to_file_path().map(|p| p.into_owned()) else {
            return Arc::new(LintConfig::default());
        };
        let mut cache = self.lint.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cache.get(uri) {
            if !c.is_stale(&path) {
                return c.clone();
            }
        }
        let fresh = Arc::new(LintConfig::for_model(&path));
        cache.insert(uri.clone(), fresh.clone());
        fresh
    }

    /// Forget every cached configuration and analysis: a configuration file
    /// changed, so every open model is judged again.
    fn reload_configs(&self) -> Vec<Uri> {
        self.lint.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.store.invalidate_all()
    }

    /// Run a handler on the current snapshot, on the blocking pool.
    async fn run<T, F>(&self, what: &str, uri: &Uri, f: F) -> Result<Option<T>>
    where
        T: Send + 'static,
        F: FnOnce(&Snapshot) -> Option<T> + Send + 'static,
    {
        let Some(snap) = self.snapshot(uri).await? else {
            return Ok(None);
        };
        tokio::task::spawn_blocking(move || f(&snap))
            .await
            .map_err(|e| internal(what, join_error(e)))
    }
}

/// Publishes diagnostics for dirty documents, latest version only.
async fn diagnostics_worker(
    client: Client,
    shared: Weak<Shared>,
    mut dirty: mpsc::UnboundedReceiver<Uri>,
) {
    while let Some(uri) = dirty.recv().await {
        let mut batch = vec![uri];
        while let Ok(more) = dirty.try_recv() {
            if !batch.contains(&more) {
                batch.push(more);
            }
        }
        for uri in batch {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            publish(&client, &shared, &uri).await;
            // The verdict is out: now free what the edits retired, before
            // the next analysis starts (not beside it).
            shared.graveyard.free(&shared.analyst).await;
        }
    }
}

async fn publish(client: &Client, shared: &Shared, uri: &Uri) {
    let snap = match shared.snapshot(uri).await {
        Ok(Some(snap)) => snap,
        Ok(None) => return,
        Err(e) => {
            client.log_message(MessageType::ERROR, e.message).await;
            return;
        }
    };
    let _guard = shared.publish_lock.lock().await;
    if !shared.store.claim_publish(uri, snap.version) {
        return; // a newer version is queued, or this one was already published
    }
    if snap.analysis.is_none() && shared.store.claim_large_warning(uri) {
        client
            .show_message(
                MessageType::WARNING,
                format!(
                    "qflow: {} is {} bytes, over the language server's limit of {} bytes; it is not analysed (run `qflow check` on it)",
                    uri.as_str(),
                    snap.text.len(),
                    shared.config.max_document_bytes
                ),
            )
            .await;
    }
    let diagnostics = convert::diagnostics(&snap, uri, shared.config.pages);
    client
        .publish_diagnostics(uri.clone(), diagnostics, Some(snap.version))
        .await;
    publish_config_problems(client, shared, uri).await;
}

/// A configuration file's own problems (QF090, QF091), on the file itself;
/// a file whose problems are gone is cleared.
async fn publish_config_problems(client: &Client, shared: &Shared, uri: &Uri) {
    let config = shared.lint_config(uri);
    let mut now: Vec<(Uri, Vec<Diagnostic>)> = Vec::new();
    for file in &config.files {
        let Some(file_uri) = Uri::from_file_path(&file.path) else {
            continue;
        };
        let snap = Snapshot::new(
            0,
            Arc::new(file.text.clone()),
            qflow_model::span::LineIndex::new(&file.text),
            Some(Analysis {
                definitions: None,
                diagnostics: file.diagnostics.clone(),
            }),
            shared.config.max_diagnostics,
        );
        now.push((
            file_uri.clone(),
            convert::diagnostics(&snap, &file_uri, shared.config.pages),
        ));
    }
    let cleared: Vec<Uri> = {
        let mut published = shared
            .config_published
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let gone: Vec<Uri> = published
            .iter()
            .filter(|(u, n)| **n > 0 && !now.iter().any(|(v, d)| v == *u && !d.is_empty()))
            .map(|(u, _)| u.clone())
            .collect();
        for (u, d) in &now {
            published.insert(u.clone(), d.len());
        }
        for u in &gone {
            published.insert(u.clone(), 0);
        }
        gone
    };
    for u in cleared {
        client.publish_diagnostics(u, Vec::new(), None).await;
    }
    for (u, d) in now.into_iter().filter(|(_, d)| !d.is_empty()) {
        client.publish_diagnostics(u, d, None).await;
    }
}

impl Backend {
    pub fn new(client: Client, config: Config, shutdown_requested: Arc<AtomicBool>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            store: Store::default(),
            config,
            dirty: tx,
            publish_lock: tokio::sync::Mutex::new(()),
            graveyard: Graveyard::default(),
            analyst: Worker::new("qflow-analysis").expect("qflow lsp: cannot start a thread"),
            indexer: Worker::new("qflow-line-index").expect("qflow lsp: cannot start a thread"),
            lint: std::sync::Mutex::new(HashMap::new()),
            config_published: std::sync::Mutex::new(HashMap::new()),
        });
        tokio::spawn(diagnostics_worker(
            client.clone(),
            Arc::downgrade(&shared),
            rx,
        ));
        Backend {
            client,
            shared,
            shutdown_requested,
            watch_configs: AtomicBool::new(false),
            spliced: None,
        }
    }

    /// Answer the outline through `spliced` (the transport writes it out).
    pub(crate) fn splicing(mut self, spliced: Option<Spliced>) -> Self {
        self.spliced = spliced;
        self
    }

    fn changed(&self, uri: Uri, version: i32, text: String) {
        if let Some(retired) = self.shared.store.set(&uri, version, text) {
            let _ = self.shared.dirty.send(uri);
            self.shared.graveyard.bury(retired);
        }
    }
}

fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(PositionEncodingKind::UTF16),
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                ..TextDocumentSyncOptions::default()
            },
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["<".into(), ":".into(), "\"".into(), " ".into()]),
            ..CompletionOptions::default()
        }),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
            ..CodeActionOptions::default()
        })),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Right(RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: WorkDoneProgressOptions::default(),
        })),
        document_symbol_provider: Some(OneOf::Left(true)),
        ..ServerCapabilities::default()
    }
}

/// The parameters of `qflow/diagram`: the document, and which process to
/// draw (its id; default: the first executable one).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagramParams {
    pub text_document: TextDocumentIdentifier,
    #[serde(default)]
    pub process: Option<String>,
}

/// One element of the drawing and where it is in the text.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagramElement {
    pub id: String,
    pub range: Range,
    pub selection_range: Range,
}

/// The answer to `qflow/diagram`: the document's version it was drawn
/// from, the process drawn and the others, the SVG, the elements, and how
/// many verdicts are marked on the drawing and how many on none of it.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagramResult {
    pub version: i32,
    pub process: String,
    pub processes: Vec<String>,
    pub svg: String,
    pub elements: Vec<DiagramElement>,
    pub marked: usize,
    pub unmarked: usize,
}

impl Backend {
    /// `qflow/diagram`: the model layer's drawing of one process of the
    /// document with the current version's verdicts marked on it; `null`
    /// when the document is not open or holds no process (not well-formed
    /// XML, say: the editor keeps showing the last drawing).
    pub async fn diagram(&self, p: DiagramParams) -> Result<Option<DiagramResult>> {
        let uri = p.text_document.uri;
        let process = p.process;
        self.shared
            .run("the diagram", &uri, move |snap| {
                let a = diagram::diagram(snap, process.as_deref())?;
                Some(DiagramResult {
                    version: snap.version,
                    process: a.process,
                    processes: a.processes,
                    svg: a.svg,
                    elements: a
                        .elements
                        .into_iter()
                        .map(|e| DiagramElement {
                            id: e.id,
                            range: convert::range(snap, e.span),
                            selection_range: convert::range(snap, e.selection),
                        })
                        .collect(),
                    marked: a.marked,
                    unmarked: a.unmarked,
                })
            })
            .await
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, p: InitializeParams) -> Result<InitializeResult> {
        let watch = p
            .capabilities
            .workspace
            .and_then(|w| w.did_change_watched_files)
            .and_then(|d| d.dynamic_registration)
            .unwrap_or(false);
        self.watch_configs.store(watch, Ordering::SeqCst);
        Ok(InitializeResult {
            capabilities: capabilities(),
            server_info: Some(ServerInfo {
                name: "qflow".to_string(),
                version: Some(env!("CARGO_PKG_VERSION").to_string()),
            }),
            offset_encoding: None,
        })
    }

    /// Ask the editor to report changes to configuration files, when it can
    /// (VS Code can); otherwise a change is noticed at the next analysis.
    async fn initialized(&self, _: InitializedParams) {
        if !self.watch_configs.load(Ordering::SeqCst) {
            return;
        }
        let watchers: Vec<FileSystemWatcher> = FILE_NAMES
            .iter()
            .map(|n| FileSystemWatcher {
                glob_pattern: GlobPattern::String(format!("**/{n}")),
                kind: None,
            })
            .collect();
        let registration = Registration {
            id: "qflow-configuration-files".to_string(),
            method: "workspace/didChangeWatchedFiles".to_string(),
            register_options: serde_json::to_value(DidChangeWatchedFilesRegistrationOptions {
                watchers,
            })
            .ok(),
        };
        if let Err(e) = self.client.register_capability(vec![registration]).await {
            self.client
                .log_message(
                    MessageType::WARNING,
                    format!("qflow: cannot watch configuration files: {}", e.message),
                )
                .await;
        }
    }

    async fn shutdown(&self) -> Result<()> {
        self.shutdown_requested.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn did_open(&self, p: DidOpenTextDocumentParams) {
        let d = p.text_document;
        if !is_model(&d.language_id, d.uri.path().as_str(), &d.text) {
            return;
        }
        self.changed(d.uri, d.version, d.text);
    }

    async fn did_change(&self, p: DidChangeTextDocumentParams) {
        let uri = p.text_document.uri;
        let version = p.text_document.version;
        let Some((current, base, snap)) = self.shared.store.current(&uri) else {
            return;
        };
        if version <= current {
            // Notifications are applied in arrival order; an older version
            // here means the client resent one: keep the newer text.
            return;
        }
        // The cached snapshot's line index is the current text's: use it for
        // the first ranged edit (a 12 MB text need not be rescanned), and
        // build each new text in one allocation (one copy, not three).
        let mut cached_index = snap.get().cloned();
        let mut text: Option<String> = None;
        for change in p.content_changes {
            let Some(range) = change.range else {
                text = Some(change.text);
                cached_index = None;
                continue;
            };
            let current: &str = text.as_deref().unwrap_or(&base);
            let span = match &cached_index {
                Some(s) => convert::span_in(current, &s.index, range),
                None => {
                    convert::span_in(current, &qflow_model::span::LineIndex::new(current), range)
                }
            };
            cached_index = None;
            let mut next = String::with_capacity(current.len() - span.len() + change.text.len());
            next.push_str(&current[..span.start()]);
            next.push_str(&change.text);
            next.push_str(&current[span.end()..]);
            text = Some(next);
        }
        // No change at all still moves the version on (the verdict is re-sent for it).
        let text = text.unwrap_or_else(|| base.to_string());
        self.changed(uri, version, text);
    }

    async fn did_change_watched_files(&self, p: DidChangeWatchedFilesParams) {
        let is_config = |u: &Uri| {
            let path = u.path().as_str();
            FILE_NAMES.iter().any(|n| path.ends_with(&format!("/{n}")))
        };
        if p.changes.iter().any(|c| is_config(&c.uri)) {
            for uri in self.shared.reload_configs() {
                let _ = self.shared.dirty.send(uri);
            }
        }
    }

    async fn did_close(&self, p: DidCloseTextDocumentParams) {
        let uri = p.text_document.uri;
        let _guard = self.shared.publish_lock.lock().await;
        if self.shared.store.remove(&uri) {
            self.client.publish_diagnostics(uri, Vec::new(), None).await;
        }
    }

    async fn hover(&self, p: HoverParams) -> Result<Option<Hover>> {
        let uri = p.text_document_position_params.text_document.uri;
        let pos = p.text_document_position_params.position;
        self.shared
            .run("hover", &uri, move |snap| {
                let (md, span) = hover::hover(snap, convert::offset(snap, pos))?;
                Some(convert::hover(snap, md, span))
            })
            .await
    }

    async fn code_action(&self, p: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let uri = p.text_document.uri;
        let range = p.range;
        let u = uri.clone();
        let pages = self.shared.config.pages;
        self.shared
            .run("code actions", &uri, move |snap| {
                let fixes = code_action::quick_fixes(snap, convert::span(snap, range));
                Some(
                    fixes
                        .iter()
                        .map(|f| convert::code_action(snap, &u, f, pages))
                        .collect(),
                )
            })
            .await
    }

    async fn goto_definition(
        &self,
        p: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let uri = p.text_document_position_params.text_document.uri;
        let pos = p.text_document_position_params.position;
        let u = uri.clone();
        self.shared
            .run("go to definition", &uri, move |snap| {
                let span = navigation::definition(snap, convert::offset(snap, pos))?;
                Some(GotoDefinitionResponse::Scalar(convert::location(
                    snap, &u, span,
                )))
            })
            .await
    }

    async fn references(&self, p: ReferenceParams) -> Result<Option<Vec<Location>>> {
        let uri = p.text_document_position.text_document.uri;
        let pos = p.text_document_position.position;
        let include = p.context.include_declaration;
        let u = uri.clone();
        self.shared
            .run("references", &uri, move |snap| {
                let spans = navigation::references(snap, convert::offset(snap, pos), include);
                Some(
                    spans
                        .into_iter()
                        .map(|s| convert::location(snap, &u, s))
                        .collect(),
                )
            })
            .await
    }

    async fn prepare_rename(
        &self,
        p: TextDocumentPositionParams,
    ) -> Result<Option<PrepareRenameResponse>> {
        let uri = p.text_document.uri;
        let pos = p.position;
        self.shared
            .run("prepare rename", &uri, move |snap| {
                let (span, id) = navigation::prepare_rename(snap, convert::offset(snap, pos))?;
                Some(PrepareRenameResponse::RangeWithPlaceholder {
                    range: convert::range(snap, span),
                    placeholder: id,
                })
            })
            .await
    }

    async fn rename(&self, p: RenameParams) -> Result<Option<WorkspaceEdit>> {
        let uri = p.text_document_position.text_document.uri;
        let pos = p.text_document_position.position;
        let new_name = p.new_name;
        let u = uri.clone();
        let outcome = self
            .shared
            .run("rename", &uri, move |snap| {
                Some(
                    navigation::rename(snap, convert::offset(snap, pos), &new_name)
                        .map(|edits| edits.map(|e| convert::workspace_edit(snap, &u, &e))),
                )
            })
            .await?;
        match outcome {
            None => Ok(None),
            Some(Ok(edit)) => Ok(edit),
            Some(Err(why)) => Err(Error::invalid_params(why)),
        }
    }

    async fn document_symbol(
        &self,
        p: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        let uri = p.text_document.uri;
        let spliced = self.spliced.clone();
        self.shared
            .run("document symbols", &uri, move |snap| {
                let symbols: Vec<DocumentSymbol> = symbols::document_symbols(snap)
                    .iter()
                    .map(|s| convert::document_symbol(snap, s))
                    .collect();
                // Written as JSON here, from the typed outline: no value tree.
                let json = spliced
                    .as_ref()
                    .and_then(|sp| Some((sp, serde_json::to_vec(&symbols).ok()?)));
                Some(DocumentSymbolResponse::Nested(match json {
                    Some((sp, json)) => {
                        drop(symbols);
                        vec![convert::stand_in(sp.keep(json))]
                    }
                    None => symbols,
                }))
            })
            .await
    }

    async fn completion(&self, p: CompletionParams) -> Result<Option<CompletionResponse>> {
        let uri = p.text_document_position.text_document.uri;
        let pos = p.text_document_position.position;
        let last_good = self.shared.store.last_good(&uri);
        self.shared
            .run("completion", &uri, move |snap| {
                let model = snap
                    .definitions()
                    .or_else(|| last_good.as_ref().and_then(|s| s.definitions()));
                let answer = completion::complete(snap, model, convert::offset(snap, pos));
                Some(convert::completion_response(snap, &answer))
            })
            .await
    }
}

/// Whether an opened document is a process model this server checks.
/// Editors set up for XML hand the server every XML document (some, every
/// document): a Maven POM or a README must not get QF001/QF002. A file
/// named as a model (`.bpmn`, `.bpmn20.xml`: `qflow_model::file`), a
/// document the client calls `bpmn`, or XML declaring BPMN's model
/// namespace is a model; anything else is left alone (its edits and
/// requests find nothing tracked and get no answer).
fn is_model(language_id: &str, path: &str, text: &str) -> bool {
    language_id.eq_ignore_ascii_case("bpmn")
        || qflow_model::file::is_model_name(path.rsplit('/').next().unwrap_or(path))
        || text.contains("http://www.omg.org/spec/BPMN/20100524/MODEL")
}
