//! Completion: `q:` elements (as snippets) inside `extensionElements`, `q:`
//! attributes on serviceTasks and on `q:` elements, values with a closed set
//! (jitter modes, failure codes in `nonRetryableCodes`), and ids in reference
//! attributes.
//!
//! What the author is typing is read lexically by the engine
//! ([`navigate::cursor_context`]), since a document mid-edit is rarely
//! well-formed; ids come from the latest model that did load.
//!
//! An answer holds at most [`PAGE`] items. A list that fits is sent whole,
//! as it always was, and the editor filters it as the author types; a longer
//! one (the ids of a large model) is narrowed by the word typed so far
//! ([`narrow`]), cut to a page and marked incomplete, so the editor asks
//! again at the next keystroke instead of filtering a list that lacks what
//! the author is looking for.

use qflow_model::dialect::{self, ValueKind, VocabAttribute};
use qflow_model::model::Definitions;
use qflow_model::navigate::{self, CursorContext};
use qflow_model::span::Span;

use crate::store::Snapshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    Element,
    Attribute,
    Value,
    Code,
    Reference,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub label: String,
    pub kind: CompletionKind,
    pub detail: String,
    pub documentation: String,
    /// The text that replaces `replace`; a snippet when `snippet`.
    pub insert: String,
    pub snippet: bool,
    pub replace: Span,
    /// What the editor matches the typed prefix against (empty: the label).
    pub filter: String,
    /// Position in the list.
    pub order: usize,
}

/// The most items one completion answer carries (clangd's default limit).
/// The 100,000 ids of a large model were a 22.6 MB answer.
pub const PAGE: usize = 100;

/// One completion answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completions {
    pub items: Vec<Completion>,
    /// More items exist than [`Completions::items`] holds (they were
    /// narrowed by the typed word and cut to a [`PAGE`]): the editor must
    /// ask again as the author types rather than filter this list.
    pub incomplete: bool,
}

/// Completions at `offset` of the current text. `model` is the latest model
/// that loaded (the current one when it does).
pub fn complete(snap: &Snapshot, model: Option<&Definitions>, offset: usize) -> Completions {
    let text: &str = &snap.text;
    let prefix = navigate::qflow_prefix(text);
    let mut incomplete = false;
    let out = match navigate::cursor_context(text, offset) {
        CursorContext::ElementName {
            prefix: typed,
            start,
            parent,
        } => elements(&prefix, &typed, Span::new(start, offset), parent.as_deref()),
        CursorContext::AttributeName {
            element,
            prefix: typed,
            start,
            present,
        } => attributes(
            &prefix,
            &element,
            &typed,
            Span::new(start, offset),
            &present,
        ),
        CursorContext::AttributeValue {
            element,
            attribute,
            value,
            value_start,
        } => {
            let (items, cut) = values(
                &prefix,
                model,
                &element,
                &attribute,
                &value,
                value_start,
                offset,
            );
            incomplete = cut;
            items
        }
        CursorContext::Other => Vec::new(),
    };
    // Every item of one context replaces the same span: the word typed.
    let typed = out
        .first()
        .and_then(|c| text.get(c.replace.start()..c.replace.end()))
        .unwrap_or("");
    let (mut items, cut) = narrow(out, typed, |c| {
        if c.filter.is_empty() {
            &c.label
        } else {
            &c.filter
        }
    });
    for (i, c) in items.iter_mut().enumerate() {
        c.order = i;
    }
    Completions {
        items,
        incomplete: incomplete || cut,
    }
}

/// At most a [`PAGE`] of `items`, and whether any were left out. A list
/// that fits is returned as it is (the editor filters it). A longer one is
/// narrowed by `typed`: first the items whose key starts with it, then
/// those that contain its characters in order (as editors' fuzzy filters
/// match `T12` to `Task_12`), ignoring ASCII case, each group in the
/// list's order; then cut to a page.
pub fn narrow<T>(items: Vec<T>, typed: &str, key: impl Fn(&T) -> &str) -> (Vec<T>, bool) {
    if items.len() <= PAGE {
        return (items, false);
    }
    let mut first = Vec::new();
    let mut then = Vec::new();
    for item in items {
        if first.len() == PAGE {
            break;
        }
        let k = key(&item);
        if starts_with_ignore_case(k, typed) {
            first.push(item);
        } else if then.len() < PAGE && in_order_ignore_case(k, typed) {
            then.push(item);
        }
    }
    let room = PAGE - first.len();
    first.extend(then.into_iter().take(room));
    (first, true)
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// Whether every character of `typed` occurs in `s`, in order (ASCII case ignored).
fn in_order_ignore_case(s: &str, typed: &str) -> bool {
    let mut rest = s.chars();
    typed
        .chars()
        .all(|t| rest.any(|c| c.eq_ignore_ascii_case(&t)))
}

fn local<'a>(qname: &'a str, q: &str) -> Option<&'a str> {
    qname.strip_prefix(q)?.strip_prefix(':')
}

fn plain_local(qname: &str) -> &str {
    qname.rsplit(':').next().unwrap_or(qname)
}

fn elements(q: &str, typed: &str, replace: Span, parent: Option<&str>) -> Vec<Completion> {
    let in_extension = parent == Some("extensionElements");
    let in_definitions = parent == Some("definitions");
    if !(in_extension || in_definitions || typed.starts_with(&format!("{q}:"))) {
        return Vec::new();
    }
    dialect::Q_ELEMENTS
        .iter()
        .filter(|e| !in_definitions || e.host == "definitions")
        .map(|e| {
            let body = match e.local {
                "retry" => format!(
                    "{q}:retry maxAttempts=\"${{1:6}}\" backoff=\"${{2:PT1M PT5M PT25M PT125M PT625M}}\" jitter=\"${{3|full,equal,none|}}\"/>"
                ),
                "timeout" => format!("{q}:timeout duration=\"${{1:PT30S}}\"/>"),
                "channelConfig" => format!(
                    "{q}:channelConfig channel=\"${{1:bank}}\" maxDeliveries=\"${{2:5}}\" deliveryInterval=\"${{3:PT2S}}\"/>"
                ),
                other => format!("{q}:{other}/>"),
            };
            Completion {
                label: format!("{q}:{}", e.local),
                kind: CompletionKind::Element,
                detail: format!("qflow element, in extensionElements of {}", e.host),
                documentation: e.doc.to_string(),
                insert: body,
                snippet: true,
                replace,
                filter: format!("{q}:{}", e.local),
                order: 0,
            }
        })
        .collect()
}

fn attribute_item(name: String, a: &VocabAttribute, replace: Span) -> Completion {
    let value = match a.value {
        ValueKind::OneOf(options) => format!("${{1|{}|}}", options.join(",")),
        ValueKind::Duration => "${1:PT30S}".to_string(),
        _ => "$1".to_string(),
    };
    Completion {
        insert: format!("{name}=\"{value}\"$0"),
        filter: name.clone(),
        label: name,
        kind: CompletionKind::Attribute,
        detail: "qflow attribute".to_string(),
        documentation: a.doc.to_string(),
        snippet: true,
        replace,
        order: 0,
    }
}

fn attributes(
    q: &str,
    element: &str,
    typed: &str,
    replace: Span,
    present: &[String],
) -> Vec<Completion> {
    let _ = typed;
    if let Some(l) = local(element, q) {
        let Some(e) = dialect::Q_ELEMENTS.iter().find(|e| e.local == l) else {
            return Vec::new();
        };
        return e
            .attributes
            .iter()
            .filter(|a| !present.iter().any(|p| p == a.name))
            .map(|a| attribute_item(a.name.to_string(), a, replace))
            .collect();
    }
    if plain_local(element) == "serviceTask" {
        return dialect::Q_TASK_ATTRIBUTES
            .iter()
            .map(|a| (format!("{q}:{}", a.name), a))
            .filter(|(name, _)| !present.contains(name))
            .map(|(name, a)| attribute_item(name, a, replace))
            .collect();
    }
    Vec::new()
}

fn values(
    q: &str,
    model: Option<&Definitions>,
    element: &str,
    attribute: &str,
    value: &str,
    value_start: usize,
    offset: usize,
) -> (Vec<Completion>, bool) {
    // The word being typed (lists are whitespace separated).
    let word_start = value
        .rfind(char::is_whitespace)
        .map(|i| i + value[i..].chars().next().map_or(1, char::len_utf8))
        .unwrap_or(0);
    let replace = Span::new(value_start + word_start, offset);
    let item = |label: &str, kind, detail: &str| Completion {
        label: label.to_string(),
        kind,
        detail: detail.to_string(),
        documentation: String::new(),
        insert: label.to_string(),
        snippet: false,
        replace,
        filter: String::new(),
        order: 0,
    };
    if let Some(l) = local(element, q) {
        let spec = dialect::Q_ELEMENTS
            .iter()
            .find(|e| e.local == l)
            .and_then(|e| e.attributes.iter().find(|a| a.name == attribute));
        let items = match spec.map(|a| a.value) {
            Some(ValueKind::OneOf(options)) => options
                .iter()
                .map(|o| item(o, CompletionKind::Value, "jitter mode"))
                .collect(),
            Some(ValueKind::FailureCodes) => {
                // Codes already complete before the word being typed.
                let written = &value[..word_start];
                let mut out: Vec<Completion> = dialect::ENGINE_FAILURE_CODES
                    .iter()
                    .filter(|(c, _)| !written.split_whitespace().any(|w| w == *c))
                    .map(|(c, doc)| Completion {
                        documentation: doc.to_string(),
                        ..item(c, CompletionKind::Code, "qflow failure code")
                    })
                    .collect();
                // Codes the document already names: its BPMN errors' errorCodes.
                for e in model.iter().flat_map(|d| d.errors.iter()) {
                    if let Some(code) = &e.error_code {
                        let code = code.value.trim();
                        if !code.is_empty() && !out.iter().any(|c| c.label == code) {
                            out.push(item(
                                code,
                                CompletionKind::Code,
                                "errorCode of a BPMN error in this model",
                            ));
                        }
                    }
                }
                out
            }
            Some(ValueKind::Name) if l == "channelConfig" && attribute == "channel" => {
                channel_names(model)
                    .iter()
                    .map(|c| item(c, CompletionKind::Value, "channel used by a task"))
                    .collect()
            }
            _ => Vec::new(),
        };
        return (items, false);
    }
    if attribute == format!("{q}:channel") {
        let items = channel_names(model)
            .iter()
            .map(|c| item(c, CompletionKind::Value, "channel"))
            .collect();
        return (items, false);
    }
    if navigate::is_reference_attribute(attribute) {
        let Some(defs) = model else {
            return (Vec::new(), false);
        };
        // Each id once (the first declaration), by a set of those offered:
        // searching the list so far made 20,000 ids 200 million comparisons,
        // over a second per completion.
        let mut offered = std::collections::HashSet::new();
        let ids: Vec<_> = navigate::reference_candidates(defs, attribute, value_start)
            .into_iter()
            .filter(|d| !d.id.value.is_empty() && offered.insert(d.id.value.as_str()))
            .collect();
        // Narrowed before any item is built: a page, not 100,000 items.
        let (page, cut) = narrow(ids, &value[word_start..], |d| d.id.value.as_str());
        let items = page
            .into_iter()
            .map(|d| item(&d.id.value, CompletionKind::Reference, &d.element.local))
            .collect();
        return (items, cut);
    }
    (Vec::new(), false)
}

/// Channels named in the model: configured ones and those tasks call.
fn channel_names(model: Option<&Definitions>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Some(defs) = model else { return out };
    let configured = defs
        .channel_configs
        .iter()
        .filter_map(|c| c.channel.as_ref());
    let called = defs
        .processes
        .iter()
        .flat_map(|p| p.nodes.iter())
        .filter_map(|n| n.channel_call());
    for a in configured.chain(called) {
        if !a.value.is_empty() && !out.iter().any(|o| *o == a.value) {
            out.push(a.value.to_string());
        }
    }
    out
}
