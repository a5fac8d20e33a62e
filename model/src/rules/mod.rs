//! The load-time rules (docs/rules.md), one module per family.
//!
//! Scoping: the document rules (QF001–QF004, QF032) run on every BPMN file;
//! the vocabulary rule (QF006) wherever `q:` names appear; the execution rules
//! only on executable processes in documents that declare the qflow
//! namespace, so another engine's models never drown in qflow errors.
//!
//! | module | codes |
//! |---|---|
//! | `document` | QF003, QF004 |
//! | `reachability` | QF032 |
//! | `vocabulary` | QF006 |
//! | `structure` | QF005, QF041 |
//! | `tasks` | QF007, QF008, QF010–QF013, QF015 |
//! | `channels` | QF014, QF020–QF022 |
//! | `advice` | QF030, QF031, QF033 |
//! | `bounds` | QF045 (the ceiling from the settings) |
//! | `stateful` | QF040 |
//! | `conditions` | QF042 |
//! | `namespace` | QF043, QF044 (every document: they find the models the execution rules would skip) |
//! | `modelling` | QF100–QF125 (bpmnlint's rules), every BPMN file |
//!
//! QF001/QF002 come from the parser and the reader.

use crate::config::{Profile, Settings};
use crate::diagnostic::{Code, Diagnostic, Edit};
use crate::model::{Definitions, Process};
use crate::span::Span;

mod advice;
mod bounds;
mod channels;
mod conditions;
mod document;
pub mod edit;
pub mod modelling;
pub mod namespace;
mod reachability;
mod stateful;
pub mod structure;
mod tasks;
mod vocabulary;

/// Every verdict on a model that was read successfully, with the default
/// settings (no configuration file).
pub fn check(defs: &Definitions, source: &str) -> Vec<Diagnostic> {
    check_with(defs, source, &Settings::default())
}

/// The size from which [`check_with`] runs the rule families on two
/// threads: a model declaring at least this many ids (elements with an `id`
/// attribute: nodes, flows, shapes, edges, …).
///
/// Starting and joining a thread costs tens of microseconds, and the rules
/// on a small model (an editor's buffer of a few hundred elements) run in
/// about as long, so below this they stay on the caller's thread. Measured
/// (every rule on, warm, best of 90): two threads lose below ~1,500 ids
/// (1,010 ids: 0.113 ms on one, 0.127 on two), break even near 2,000, and
/// win by a fifth at 4,000 (a model of ~1,000 drawn tasks: 0.53 against
/// 0.41 ms) and by a third at 8,000 (1.19 against 0.83 ms).
pub const PARALLEL_RULES_MIN_IDS: usize = 4_000;

/// Every verdict on a model, with the severities `settings` give (a rule
/// that is off produces nothing).
///
/// On a model of [`PARALLEL_RULES_MIN_IDS`] ids or more, the modelling
/// reachability, the modelling rules on the processes and the execution
/// rules run on a second thread while this one runs the document, namespace
/// and drawing rules; the
/// families' findings are joined in the one-thread order, so the output is
/// the same either way.
pub fn check_with(defs: &Definitions, source: &str, settings: &Settings) -> Vec<Diagnostic> {
    check_on(
        defs,
        source,
        settings,
        defs.ids.len() >= PARALLEL_RULES_MIN_IDS,
    )
}

/// [`check_with`] with the choice of threads made by the caller (tests and
/// benchmarks compare the two).
pub fn check_on(
    defs: &Definitions,
    source: &str,
    settings: &Settings,
    two_threads: bool,
) -> Vec<Diagnostic> {
    let ctx = edit::Ctx::new(defs, source);
    // The families in their order: document, reachability, namespace, then
    // modelling (the processes' graphs, then the drawing), then execution.
    let reachability = |out: &mut Vec<Diagnostic>| {
        for p in &defs.processes {
            reachability::check(p, out);
        }
    };
    let execution_rules = |tail: &mut Vec<Diagnostic>| {
        if defs.declares_qflow {
            execution(&ctx, settings, tail);
        }
    };
    let mut out = Vec::new();
    let mut tail = Vec::new();
    if two_threads {
        // Halves of about the same time on the 20,000-task drawn model
        // (every rule on, ms): document 3.1 and the drawing rules 7.0 on
        // this thread; reachability 1.8, the processes' graphs and rules
        // 4.9 and execution 4.8 on the second.
        let mut namespaced = Vec::new();
        let mut drawn = Vec::new();
        let second = std::thread::scope(|s| {
            let second = s.spawn(|| {
                let mut reached = Vec::new();
                let mut modelled = Vec::new();
                let mut tail = Vec::new();
                reachability(&mut reached);
                modelling::check_processes(&ctx, settings, &mut modelled);
                execution_rules(&mut tail);
                (reached, modelled, tail)
            });
            document::check(defs, source, &mut out);
            namespace::check(defs, source, &mut namespaced);
            modelling::check_drawing(&ctx, settings, &mut drawn);
            second.join()
        });
        match second {
            Ok((reached, modelled, execution)) => {
                out.extend(reached);
                out.append(&mut namespaced);
                out.extend(modelled);
                out.append(&mut drawn);
                tail = execution;
            }
            // A rule's panic is the caller's, as it would be on one thread.
            Err(panic) => std::panic::resume_unwind(panic),
        }
    } else {
        document::check(defs, source, &mut out);
        reachability(&mut out);
        namespace::check(defs, source, &mut out);
        execution_rules(&mut tail);
        modelling::check(&ctx, settings, &mut out);
    }
    out.append(&mut tail);
    finish(defs, settings, &mut out);
    out
}

/// Settle what the rule families said: configured severities of qflow's
/// advisory codes and verdicts raised to errors, QF032 dropped where QF111 says more, and every
/// diagnostic's element.
fn finish(defs: &Definitions, settings: &Settings, out: &mut Vec<Diagnostic>) {
    let profile = if defs.declares_qflow {
        Profile::Qflow { executable: true }
    } else {
        Profile::Plain
    };
    if !settings.overrides.is_empty() {
        out.retain_mut(|d| {
            if !crate::config::ADVISORY.contains(&d.code) {
                // A verdict raised to an error by the configuration (the
                // only change it may make to one; modelling rules are
                // settled by their own family).
                if !d.code.is_modelling()
                    && settings
                        .overrides
                        .contains(&(d.code, Some(crate::Severity::Error)))
                {
                    d.severity = crate::Severity::Error;
                }
                return true;
            }
            match settings.severity(d.code, profile) {
                Some(s) => {
                    d.severity = s;
                    true
                }
                None => false,
            }
        });
    }
    let disconnected: Vec<&str> = out
        .iter()
        .filter(|d| d.code == Code::QF111)
        .filter_map(|d| d.element.as_deref())
        .collect();
    if !disconnected.is_empty() {
        let disconnected: std::collections::HashSet<String> =
            disconnected.into_iter().map(str::to_string).collect();
        out.retain(|d| {
            !(d.code == Code::QF032 && d.element.as_ref().is_some_and(|e| disconnected.contains(e)))
        });
    }
    for d in out.iter_mut().filter(|d| d.element.is_none()) {
        d.element = innermost_element(defs, d.primary.span).map(str::to_string);
    }
}

/// The id of the innermost BPMN element whose text contains `span`.
fn innermost_element(defs: &Definitions, span: Span) -> Option<&str> {
    // Ids are in document order: the innermost container starts last.
    let upto = defs
        .ids
        .partition_point(|d| d.element.span.start() <= span.start());
    defs.ids[..upto]
        .iter()
        .rev()
        .find(|d| d.element.span.end() >= span.end())
        .map(|d| d.id.value.as_str())
}

/// The execution rules, for documents that declare the qflow namespace.
/// `out` holds only their own findings: what `silence_consequences` drops
/// (QF007, QF008, QF012, QF033) only they report.
fn execution(ctx: &edit::Ctx<'_>, settings: &Settings, out: &mut Vec<Diagnostic>) {
    let defs = ctx.defs;
    let ceiling = settings.request_ceiling();
    vocabulary::check(ctx, out);
    for p in defs.executable_processes() {
        structure::check(ctx, p, out);
        tasks::check(ctx, p, out);
        channels::check(ctx, p, out);
        advice::check(ctx, p, out);
        bounds::check(ctx, p, ceiling, out);
        stateful::check(p, out);
        conditions::check(p, out);
    }
    tasks::channel_configs(ctx, out);
    stray_extensions(defs, out);
    silence_consequences(defs, out);
}

/// A rule that depends on an attribute another diagnostic already rejected
/// stays silent: a typo in `maxAttempts` is one finding (QF006, with the fix),
/// not also an unbounded retry (QF012). The misspelt name is judged by its
/// closest known name, the same suggestion QF006 makes.
///
/// | misspelt as the closest of | silenced on the same element |
/// |---|---|
/// | `maxAttempts`, `maxElapsed` on `<q:retry>` | QF012 (unbounded) |
/// | `jitter` on `<q:retry>` | QF033 (no jitter) |
/// | `duration` on `<q:timeout>` | QF008 (the missing duration) |
/// | `q:task`, `q:channel` on a serviceTask | QF007 (neither task kind) |
fn silence_consequences(defs: &Definitions, out: &mut Vec<Diagnostic>) {
    use crate::dialect::{Q_ELEMENTS, Q_TASK_ATTRIBUTES};
    let mut silenced: Vec<(Span, crate::Code)> = Vec::new();
    for item in &defs.qflow_items {
        if item.is_element {
            let Some(el) = Q_ELEMENTS.iter().find(|e| e.local == item.local) else {
                continue;
            };
            let known: Vec<&str> = el.attributes.iter().map(|a| a.name).collect();
            for a in &item.attributes {
                if a.is_xmlns || known.contains(&a.local.as_str()) {
                    continue;
                }
                let consequence = match crate::suggest::closest(&a.local, known.iter().copied()) {
                    Some("maxAttempts" | "maxElapsed") => crate::Code::QF012,
                    Some("jitter") => crate::Code::QF033,
                    Some("duration") => crate::Code::QF008,
                    _ => continue,
                };
                silenced.push((item.span, consequence));
            }
        } else if item.host == "serviceTask" {
            let names = Q_TASK_ATTRIBUTES.iter().map(|a| a.name);
            if names.clone().any(|n| n == item.local) {
                continue;
            }
            if let Some("task" | "channel") = crate::suggest::closest(&item.local, names) {
                let node = defs.processes.iter().flat_map(|p| &p.nodes).find(|n| {
                    n.span.start() <= item.span.start() && item.span.end() <= n.span.end()
                });
                if let Some(n) = node {
                    silenced.push((n.span, crate::Code::QF007));
                }
            }
        }
    }
    if silenced.is_empty() {
        return;
    }
    out.retain(|d| {
        !silenced.iter().any(|(span, code)| {
            d.code == *code
                && span.start() <= d.primary.span.start()
                && d.primary.span.end() <= span.end()
        })
    });
}

/// `<q:retry>` and `<q:timeout>` that sit on no flow node (a sequence flow's or
/// the process's extensionElements, say): QF010 / QF006, unless they are in a
/// process qflow does not execute.
fn stray_extensions(defs: &Definitions, out: &mut Vec<Diagnostic>) {
    let placed: std::collections::HashSet<Span> = defs
        .processes
        .iter()
        .flat_map(|p| &p.nodes)
        .flat_map(|n| {
            n.retries
                .iter()
                .map(|r| r.span)
                .chain(n.timeouts.iter().map(|t| t.span))
        })
        .collect();
    let on_nodes = |span: Span| placed.contains(&span);
    let in_process = |span: Span| -> Option<&Process> {
        defs.processes
            .iter()
            .find(|p| p.span.start() <= span.start() && span.end() <= p.span.end())
    };
    for item in defs.qflow_items.iter().filter(|i| i.is_element) {
        if !(item.local == "retry" || item.local == "timeout") || on_nodes(item.span) {
            continue;
        }
        if in_process(item.span).is_some_and(|p| !p.is_executable) {
            continue;
        }
        let place = format!("<{}>", item.owner);
        let d = if item.local == "retry" {
            let spec = crate::model::RetrySpec {
                span: item.span,
                name_span: item.name_span,
                qname: crate::model::Text::from(&*item.qname),
                ..Default::default()
            };
            tasks::misplaced_retry(&spec, &place)
        } else {
            Diagnostic::new(
                crate::Code::QF006,
                item.name_span,
                format!("<{}> in {place}: it belongs on a channel call", item.qname),
            )
            .label("qflow ignores it here")
            .help("put <q:timeout> inside the extensionElements of a serviceTask with q:channel")
        };
        out.push(d);
    }
}

/// Apply a fix's edits to a text: what an editor does with a quick fix.
pub fn apply_edits(source: &str, edits: &[Edit]) -> String {
    edit::apply(source, edits)
}
