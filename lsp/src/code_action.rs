//! Quick fixes: exactly the fixes the engine attached to its diagnostics
//! (QF020's timeout, QF022's two resolutions, QF006's did-you-mean, QF012's
//! maxAttempts, QF004's closest id…), offered for the diagnostics the
//! requested range touches.

use qflow_model::diagnostic::{Diagnostic, Edit};
use qflow_model::span::Span;

use crate::store::Snapshot;

/// One fix, bound to the diagnostic it resolves.
#[derive(Debug, Clone)]
pub struct QuickFix {
    pub title: String,
    pub diagnostic: Diagnostic,
    pub edits: Vec<Edit>,
    /// The editor's default when the diagnostic has exactly one fix.
    pub preferred: bool,
}

/// Fixes for every diagnostic whose primary span meets `range` (an empty
/// range at a diagnostic's edge counts: that is where a cursor sits).
pub fn quick_fixes(snap: &Snapshot, range: Span) -> Vec<QuickFix> {
    let Some(analysis) = &snap.analysis else {
        return Vec::new();
    };
    let meets = |s: Span| s.start() <= range.end() && range.start() <= s.end();
    analysis
        .diagnostics
        .iter()
        .filter(|d| meets(d.primary.span))
        .flat_map(|d| {
            let single = d.fixes.len() == 1;
            d.fixes.iter().map(move |f| QuickFix {
                title: f.title.clone(),
                diagnostic: d.clone(),
                edits: f.edits.clone(),
                preferred: single,
            })
        })
        .collect()
}
