//! QF006: the `q:` vocabulary, wherever it appears in a qflow document.
//!
//! A misspelt `q:` name is silently meaningless to every other tool, so qflow
//! refuses it and offers the closest known name (keeping the author's prefix).
//! The vocabulary is the one completion offers ([`crate::dialect`]), so the
//! editor never suggests what the loader refuses.

use crate::diagnostic::{Code, Diagnostic, Edit};
use crate::dialect::{Q_ELEMENTS, Q_TASK_ATTRIBUTES};
use crate::model::{NamedAttr, QflowItem};
use crate::rules::edit::{end_tag_name, prefix_of, Ctx};
use crate::span::Span;

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    // Items are in document order and an element's own attributes follow it,
    // so "is this attribute on a `q:` element" only needs the last element seen.
    let mut last_element: Option<&QflowItem> = None;
    for item in &ctx.defs.qflow_items {
        if item.is_element {
            element(ctx, item, out);
            last_element = Some(item);
        } else {
            // `q:`-prefixed attributes on a `q:` element are judged with that element.
            let on_q_element = last_element.is_some_and(|e| {
                e.span.start() < item.span.start()
                    && item.span.end() <= e.span.end()
                    && !ctx
                        .text(Span::new(e.span.start(), item.span.start()))
                        .contains('>')
            });
            if !on_q_element {
                task_attribute(ctx, item, out);
            }
        }
    }
}

fn element(ctx: &Ctx<'_>, item: &QflowItem, out: &mut Vec<Diagnostic>) {
    let prefix = prefix_of(&item.qname);
    let Some(known) = Q_ELEMENTS.iter().find(|e| e.local == item.local) else {
        let names = Q_ELEMENTS.iter().map(|e| e.local);
        let mut d = Diagnostic::new(
            Code::QF006,
            item.name_span,
            format!("unknown qflow element <{}>", item.qname),
        )
        .label("not part of the qflow vocabulary");
        let list = known_list(Q_ELEMENTS.iter().map(|e| e.local), &prefix, "<", ">");
        match crate::suggest::closest(&item.local, names) {
            Some(best) => {
                let new = format!("{prefix}{best}");
                let mut edits = vec![Edit {
                    span: item.name_span,
                    new_text: new.clone(),
                }];
                let spans = crate::model::ElementSpans {
                    span: item.span,
                    start_tag: item.span,
                    self_closing: !ctx.text(item.span).contains(&format!("</{}", item.qname)),
                };
                if let Some(end) = end_tag_name(ctx.source, spans) {
                    if ctx.text(end) == item.qname {
                        edits.push(Edit {
                            span: end,
                            new_text: new.clone(),
                        });
                    }
                }
                d = d
                    .help(format!(
                        "did you mean <{new}>? The qflow elements are {list}"
                    ))
                    .fix(format!("Change to <{new}>"), edits);
            }
            None => {
                d = d.help(format!(
                    "the qflow elements are {list}; remove this one or use one of them"
                ))
            }
        }
        out.push(d);
        return;
    };
    if known.local == "channelConfig"
        && !ctx.defs.channel_configs.iter().any(|c| c.span == item.span)
    {
        out.push(
            Diagnostic::new(
                Code::QF006,
                item.name_span,
                format!("<{}> is only known at the definitions level", item.qname),
            )
            .label("misplaced: qflow ignores it here")
            .help("move it to be a child of <definitions> (or of the definitions' extensionElements): it configures a channel for the whole document"),
        );
    }
    let known_attrs: Vec<&str> = known.attributes.iter().map(|a| a.name).collect();
    for a in &item.attributes {
        if a.is_xmlns || (a.qname.contains(':') && !a.in_qflow_ns) {
            // Namespace declarations and other vocabularies' attributes are not ours to judge.
            continue;
        }
        element_attribute(item, a, &known_attrs, out);
    }
}

fn element_attribute(item: &QflowItem, a: &NamedAttr, known: &[&str], out: &mut Vec<Diagnostic>) {
    if known.contains(&a.local.as_str()) {
        if a.in_qflow_ns {
            out.push(
                Diagnostic::new(
                    Code::QF006,
                    a.name_span,
                    format!(
                        "`{}` on <{}> is written with the qflow prefix",
                        a.qname, item.qname
                    ),
                )
                .label("the attributes of qflow elements are unprefixed")
                .help(format!("write `{}` without a prefix", a.local))
                .fix(
                    format!("Change to `{}`", a.local),
                    vec![Edit {
                        span: a.name_span,
                        new_text: a.local.to_string(),
                    }],
                ),
            );
        }
        return;
    }
    let list = known_list(known.iter().copied(), "", "", "");
    let mut d = Diagnostic::new(
        Code::QF006,
        a.name_span,
        format!("unknown attribute `{}` on <{}>", a.qname, item.qname),
    )
    .label(format!("<{}> has no such attribute", item.qname));
    match crate::suggest::closest(&a.local, known.iter().copied()) {
        Some(best) => {
            d = d
                .help(format!(
                    "did you mean `{best}`? <{}> takes {list}",
                    item.qname
                ))
                .fix(
                    format!("Change to `{best}`"),
                    vec![Edit {
                        span: a.name_span,
                        new_text: best.to_string(),
                    }],
                );
        }
        None => {
            d = d.help(format!(
                "<{}> takes {list}; remove this attribute",
                item.qname
            ))
        }
    }
    out.push(d);
}

fn task_attribute(ctx: &Ctx<'_>, item: &QflowItem, out: &mut Vec<Diagnostic>) {
    let names = Q_TASK_ATTRIBUTES.iter().map(|a| a.name);
    if names.clone().any(|n| n == item.local) {
        if item.host != "serviceTask" {
            out.push(
                Diagnostic::new(
                    Code::QF006,
                    item.name_span,
                    format!("{} on a <{}>: qflow reads it only on serviceTask", item.qname, item.host),
                )
                .label(format!("ignored on <{}>", item.host))
                .help(format!(
                    "qflow runs registered tasks and channel calls as <{}serviceTask>: change the element to a serviceTask, or remove {}",
                    crate::rules::edit::prefix_of(ctx.text(ctx.defs.name_span)),
                    item.qname
                )),
            );
        }
        return;
    }
    let prefix = prefix_of(&item.qname);
    let list = known_list(names.clone(), &prefix, "", "");
    let mut d = Diagnostic::new(
        Code::QF006,
        item.name_span,
        format!(
            "unknown qflow attribute `{}` on <{}>",
            item.qname, item.host
        ),
    )
    .label("not part of the qflow vocabulary");
    let belongs = Q_ELEMENTS
        .iter()
        .find(|e| e.attributes.iter().any(|a| a.name == item.local));
    match (crate::suggest::closest(&item.local, names), belongs) {
        (_, Some(el)) => {
            d = d.help(format!(
                "`{}` is an attribute of <{prefix}{}>: write it there, inside the task's extensionElements",
                item.local, el.local
            ));
        }
        (Some(best), None) => {
            let new = format!("{prefix}{best}");
            d = d
                .help(format!(
                    "did you mean `{new}`? The qflow task attributes are {list}"
                ))
                .fix(
                    format!("Change to `{new}`"),
                    vec![Edit {
                        span: item.name_span,
                        new_text: new,
                    }],
                );
        }
        (None, None) => {
            d = d.help(format!(
                "the qflow task attributes are {list}; remove this one"
            ));
        }
    }
    out.push(d);
}

fn known_list<'a>(
    names: impl Iterator<Item = &'a str>,
    prefix: &str,
    open: &str,
    close: &str,
) -> String {
    names
        .map(|n| format!("`{open}{prefix}{n}{close}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
