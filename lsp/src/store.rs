//! The open documents, keyed by URI, each with its version and the analysis of
//! exactly that version.
//!
//! The engine is pure and fast, but a 20,000-task model still takes tens of
//! milliseconds: the analysis is cached per version so that hover, completion
//! and the diagnostics worker share one run, and a version check (never a
//! timer) decides whether a result is still current.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use qflow_model::diagnostic::{Diagnostic, Severity};
use qflow_model::span::LineIndex;
use qflow_model::Analysis;
use tower_lsp_server::ls_types::Uri;

use crate::worker::Worker;

/// The once-computed analysis of one version.
pub type SnapshotCell = tokio::sync::OnceCell<Arc<Snapshot>>;

/// One analysed version of a document: everything a handler needs, immutable.
#[derive(Debug)]
pub struct Snapshot {
    pub version: i32,
    pub text: Arc<String>,
    pub index: LineIndex,
    /// `None` when the document is over the size limit: it is kept, not analysed.
    /// Its diagnostics are the ones published: at most the cap (see [`Snapshot::new`]).
    pub analysis: Option<Analysis>,
    /// The findings over the cap, which are neither published nor kept.
    pub left_out: Option<LeftOut>,
}

/// What the cap on published diagnostics left out of one version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeftOut {
    /// Left out, by severity: errors, warnings, information, hints.
    pub by_severity: [usize; 4],
    /// How many were published.
    pub published: usize,
}

impl LeftOut {
    pub fn count(&self) -> usize {
        self.by_severity.iter().sum()
    }

    /// The most severe finding left out.
    pub fn worst(&self) -> Severity {
        let i = self.by_severity.iter().position(|&n| n > 0).unwrap_or(3);
        SEVERITIES[i]
    }
}

/// Severities, most severe first: the order the cap keeps them in.
const SEVERITIES: [Severity; 4] = [
    Severity::Error,
    Severity::Warning,
    Severity::Info,
    Severity::Hint,
];

fn rank(s: Severity) -> usize {
    SEVERITIES.iter().position(|&t| t == s).unwrap_or(3)
}

/// Keep at most `max` of `diagnostics`: the most severe first (every error
/// before any warning, and so on), each severity's earliest in the engine's
/// order, published in that order. What is left out is counted, not kept:
/// a document with millions of findings costs memory for `max` of them.
pub fn cap(diagnostics: &mut Vec<Diagnostic>, max: usize) -> Option<LeftOut> {
    if diagnostics.len() <= max {
        return None;
    }
    let mut total = [0usize; 4];
    for d in diagnostics.iter() {
        total[rank(d.severity)] += 1;
    }
    // How many of each severity fit, most severe first.
    let mut room = max;
    let mut quota = [0usize; 4];
    for (q, t) in quota.iter_mut().zip(total) {
        *q = t.min(room);
        room -= *q;
    }
    let mut kept = [0usize; 4];
    diagnostics.retain(|d| {
        let r = rank(d.severity);
        let keep = kept[r] < quota[r];
        kept[r] += usize::from(keep);
        keep
    });
    diagnostics.shrink_to_fit();
    let mut by_severity = [0usize; 4];
    for r in 0..4 {
        by_severity[r] = total[r] - quota[r];
    }
    Some(LeftOut {
        by_severity,
        published: diagnostics.len(),
    })
}

impl Snapshot {
    /// A snapshot whose analysis keeps at most `max_diagnostics` findings
    /// (see [`cap`]); the rest are counted in [`Snapshot::left_out`].
    pub fn new(
        version: i32,
        text: Arc<String>,
        index: LineIndex,
        mut analysis: Option<Analysis>,
        max_diagnostics: usize,
    ) -> Snapshot {
        let left_out = analysis
            .as_mut()
            .and_then(|a| cap(&mut a.diagnostics, max_diagnostics));
        Snapshot {
            version,
            text,
            index,
            analysis,
            left_out,
        }
    }

    pub fn definitions(&self) -> Option<&qflow_model::model::Definitions> {
        self.analysis.as_ref()?.definitions.as_ref()
    }
}

#[derive(Debug)]
pub struct Document {
    pub version: i32,
    pub text: Arc<String>,
    /// The analysis of `version`, computed once however many handlers ask
    /// for it at the same time (a hover during a keystroke's analysis waits
    /// for that analysis instead of running a second one).
    pub snapshot: Arc<SnapshotCell>,
    /// The version whose diagnostics were last published (to publish each once).
    pub published: Option<i32>,
    /// The latest snapshot whose text loaded as a model: completion offers its
    /// ids while the current text is mid-edit and does not parse.
    pub last_good: Option<Arc<Snapshot>>,
    /// Whether the author was told this document is too large to analyse
    /// (once per document, not once per keystroke).
    pub warned_large: bool,
}

/// Memory a store update released. Freeing the model of a 20,000-task
/// document costs milliseconds of CPU, so it is buried in a [`Graveyard`]
/// and freed after the next publication, between analyses, never while one
/// runs (see [`Graveyard::free`]).
#[derive(Debug)]
#[must_use]
pub struct Retired(Option<Box<Document>>, Option<Arc<Snapshot>>);

impl Retired {
    fn is_empty(&self) -> bool {
        self.0.is_none() && self.1.is_none()
    }
}

/// Retired memory waiting to be freed off the critical path.
#[derive(Debug, Default)]
pub struct Graveyard(Mutex<Vec<Retired>>);

impl Graveyard {
    pub fn bury(&self, r: Retired) {
        if !r.is_empty() {
            self.0.lock().unwrap_or_else(|e| e.into_inner()).push(r);
        }
    }

    /// Free everything buried so far, on the thread that runs the analyses
    /// (`worker`), and return when it is freed. The caller waits: a model
    /// freed on one thread while the next analysis allocates on another
    /// makes both contend for the allocator, and typing into a 20,000-task
    /// model then took ~310 ms per keystroke instead of ~175 ms
    /// (`benches/editor_latency.rs`, back to back). Freed between two
    /// analyses, it costs the next one at most the rest of the free; freed
    /// on the analyses' own thread, it is memory the next analysis reuses.
    pub async fn free(&self, worker: &Worker) {
        let dead = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        if !dead.is_empty() {
            let _ = worker.run(move || drop(dead)).await;
        }
    }
}

/// The document store. A plain mutex: every critical section is a map lookup
/// or an `Arc` clone, never an analysis or an await.
#[derive(Debug, Default)]
pub struct Store {
    docs: Mutex<HashMap<Uri, Document>>,
}

impl Store {
    fn lock(&self) -> MutexGuard<'_, HashMap<Uri, Document>> {
        // A panic never happens while the lock is held (no engine call inside),
        // but a poisoned map is still a valid map.
        self.docs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Open or replace a document. Returns `None` (and changes nothing) when
    /// `version` is older than the stored one: a reordered notification must
    /// never roll the text back. Otherwise returns what it replaced, for the
    /// caller to bury (see [`Retired`]).
    pub fn set(&self, uri: &Uri, version: i32, text: String) -> Option<Retired> {
        let mut docs = self.lock();
        let mut last_good = None;
        let mut warned_large = false;
        if let Some(doc) = docs.get_mut(uri) {
            if version < doc.version {
                return None;
            }
            last_good = doc.last_good.take();
            warned_large = doc.warned_large;
        }
        let old = docs.insert(
            uri.clone(),
            Document {
                version,
                text: Arc::new(text),
                snapshot: Arc::new(SnapshotCell::new()),
                published: None,
                last_good,
                warned_large,
            },
        );
        Some(Retired(old.map(Box::new), None))
    }

    pub fn remove(&self, uri: &Uri) -> bool {
        self.lock().remove(uri).is_some()
    }

    /// The current version, its text and the cell of its analysis.
    pub fn current(&self, uri: &Uri) -> Option<(i32, Arc<String>, Arc<SnapshotCell>)> {
        let docs = self.lock();
        let doc = docs.get(uri)?;
        Some((doc.version, doc.text.clone(), doc.snapshot.clone()))
    }

    pub fn last_good(&self, uri: &Uri) -> Option<Arc<Snapshot>> {
        self.lock().get(uri).and_then(|d| d.last_good.clone())
    }

    /// Remember a freshly computed analysis as the latest that loaded, if it
    /// did and the document is still at its version. Returns the snapshot it
    /// displaced, to bury.
    pub fn remember(&self, uri: &Uri, snapshot: &Arc<Snapshot>) -> Retired {
        let mut displaced = None;
        if snapshot.definitions().is_some() {
            if let Some(doc) = self.lock().get_mut(uri) {
                if doc.version == snapshot.version {
                    displaced = doc.last_good.replace(snapshot.clone());
                }
            }
        }
        Retired(None, displaced)
    }

    /// True the first time it is asked for a document: whether to warn now.
    pub fn claim_large_warning(&self, uri: &Uri) -> bool {
        match self.lock().get_mut(uri) {
            Some(doc) if !doc.warned_large => {
                doc.warned_large = true;
                true
            }
            _ => false,
        }
    }

    /// Drop every document's analysis (its configuration changed): the next
    /// request or publication analyses the same text again. Returns the
    /// documents, to publish anew.
    pub fn invalidate_all(&self) -> Vec<Uri> {
        let mut docs = self.lock();
        for doc in docs.values_mut() {
            doc.snapshot = Arc::new(SnapshotCell::new());
            doc.published = None;
        }
        docs.keys().cloned().collect()
    }

    /// Record that `version` is about to be published; false if it is stale or
    /// already published.
    pub fn claim_publish(&self, uri: &Uri, version: i32) -> bool {
        let mut docs = self.lock();
        match docs.get_mut(uri) {
            Some(doc) if doc.version == version && doc.published != Some(version) => {
                doc.published = Some(version);
                true
            }
            _ => false,
        }
    }
}
