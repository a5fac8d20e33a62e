//! QF040 (info): the process's class, with every reason it is stateful.
//!
//! A stateful process needs a datasource; the author should learn that from
//! the loader, not from the first deployment (docs/rules.md, the
//! classifier). The classification itself is [`crate::classify`].

use crate::classify::{classify, Classification, Reason, ReasonKind};
use crate::diagnostic::{Code, Diagnostic};
use crate::model::Process;
use crate::rules::structure::process_name;
use crate::text::{capped_list, group};

/// How many reasons are marked in the source as related labels (one when
/// they are too many for a line each).
pub(super) const MARKED: usize = 5;

/// Up to this many reasons get a line each; more are listed by kind.
const ONE_PER_LINE: usize = 20;

/// One line per kind, its ids capped: `- 2000 <q:retry> elements, on: \`Task_10\`, …, … and 1,990 more`.
fn grouped(reasons: &[Reason]) -> Vec<String> {
    let mut kinds: Vec<ReasonKind> = reasons.iter().map(|r| r.kind).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|k| {
            let ids: Vec<String> = reasons
                .iter()
                .filter(|r| r.kind == k)
                .map(|r| format!("`{}`", r.node_id))
                .collect();
            let what = match (k, ids.len() == 1) {
                (ReasonKind::ChannelCall, true) => "channel call",
                (ReasonKind::ChannelCall, false) => "channel calls",
                (ReasonKind::Timer, true) => "timer",
                (ReasonKind::Timer, false) => "timers",
                (ReasonKind::Retry, true) => "<q:retry>",
                (ReasonKind::Retry, false) => "<q:retry> elements, on",
            };
            format!(
                "- {} {what}: {}",
                group(ids.len() as u64),
                capped_list(&ids)
            )
        })
        .collect()
}

pub(super) fn check(process: &Process, out: &mut Vec<Diagnostic>) {
    let Classification::Stateful(reasons) = classify(process) else {
        return;
    };
    let list = if reasons.len() <= ONE_PER_LINE {
        reasons
            .iter()
            .map(|r| format!("- {}", r.detail))
            .collect::<Vec<_>>()
    } else {
        grouped(&reasons)
    };
    let mut d = Diagnostic::new(
        Code::QF040,
        process.name_span,
        format!(
            "process {} is stateful ({} wait state{}): its instances wait durably, so `qflow run` keeps them in a store (SQLite)",
            process_name(process),
            group(reasons.len() as u64),
            if reasons.len() == 1 { "" } else { "s" }
        ),
    )
    .label("stateful")
    .help(format!(
        "instances park durably at these wait states, so qflow must run this process with a store (SQLite by default):\n{}",
        list.join("\n")
    ));
    // Every kind of reason is in the help (its ids capped); the source marks
    // the first few, so a model with thousands of wait states still renders
    // as one readable report. With many, only the first: a terminal report
    // shows every line between its labels, and five labels spread over a
    // large model are a snippet of hundreds of lines.
    let marked = if reasons.len() <= ONE_PER_LINE {
        MARKED
    } else {
        1
    };
    for r in reasons.iter().take(marked) {
        d = d.related(r.span, format!("{} `{}`", r.kind.as_str(), r.node_id));
    }
    out.push(d);
}
