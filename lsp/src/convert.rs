//! The one place LSP types meet engine types.
//!
//! Handlers answer in byte offsets, [`Span`]s and plain structs; this module
//! turns those into LSP values (UTF-16 ranges through the engine's
//! [`LineIndex`], severities, code descriptions, edits) and back. Keeping the
//! boundary here means the engine never sees the protocol and the protocol's
//! position encoding is decided once.

use std::collections::HashMap;
use std::path::Path;

use qflow_model::diagnostic::{Diagnostic, Edit, Severity};
use qflow_model::span::{LineIndex, Span};
use tower_lsp_server::ls_types as lsp;
use tower_lsp_server::ls_types::Uri;

use crate::code_action::QuickFix;
use crate::completion::{Completion, CompletionKind, Completions};
use crate::store::{LeftOut, Snapshot};
use crate::symbols::{Symbol, SymbolKind};

/// The `source` of every diagnostic, so editors can filter qflow's verdicts.
pub const SOURCE: &str = "qflow";

pub fn offset(snap: &Snapshot, pos: lsp::Position) -> usize {
    snap.index
        .offset_utf16(&snap.text, pos.line as usize, pos.character as usize)
}

pub fn position(snap: &Snapshot, offset: usize) -> lsp::Position {
    let p = snap.index.position(&snap.text, offset);
    lsp::Position::new(p.line as u32, p.column_utf16 as u32)
}

pub fn range(snap: &Snapshot, span: Span) -> lsp::Range {
    range_in(&snap.text, &snap.index, span)
}

/// A span of `text` as an LSP range (UTF-16 columns), through `index`.
fn range_in(text: &str, index: &LineIndex, span: Span) -> lsp::Range {
    let at = |offset: usize| {
        let p = index.position(text, offset);
        lsp::Position::new(p.line as u32, p.column_utf16 as u32)
    };
    lsp::Range::new(at(span.start()), at(span.end()))
}

pub fn span(snap: &Snapshot, range: lsp::Range) -> Span {
    span_in(&snap.text, &snap.index, range)
}

/// A range of `text` as bytes; an inverted range is read start-first.
pub fn span_in(text: &str, index: &LineIndex, range: lsp::Range) -> Span {
    let at = |p: lsp::Position| index.offset_utf16(text, p.line as usize, p.character as usize);
    let (a, b) = (at(range.start), at(range.end));
    Span::new(a.min(b), a.max(b))
}

pub fn severity(s: Severity) -> lsp::DiagnosticSeverity {
    match s {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
        Severity::Hint => lsp::DiagnosticSeverity::HINT,
    }
}

/// One engine verdict as the editor shows it. The message carries the help
/// line too, since LSP has no separate field for it and it is the fix in words.
/// `pages` is the directory the code pages were written to
/// ([`Config::pages`](crate::Config)): `codeDescription` links the code's
/// page there, and is left out without one (no link rather than a dead one).
pub fn diagnostic(
    snap: &Snapshot,
    uri: &Uri,
    d: &Diagnostic,
    pages: Option<&Path>,
) -> lsp::Diagnostic {
    diagnostic_in(&snap.text, &snap.index, uri, d, pages)
}

/// [`diagnostic`] for a document that is not open in the server: what
/// `qflow check --format lsp` prints for an editor's "check the whole
/// workspace", so no client converts positions or severities itself.
/// `index` must reach the furthest label of `d` (see
/// `qflow_model::diagnostic::furthest`).
pub fn diagnostic_in(
    text: &str,
    index: &LineIndex,
    uri: &Uri,
    d: &Diagnostic,
    pages: Option<&Path>,
) -> lsp::Diagnostic {
    let mut message = d.message.clone();
    if let Some(help) = &d.help {
        message.push_str("\nhelp: ");
        message.push_str(help);
    }
    let related: Vec<lsp::DiagnosticRelatedInformation> = d
        .related
        .iter()
        .map(|l| lsp::DiagnosticRelatedInformation {
            location: lsp::Location::new(uri.clone(), range_in(text, index, l.span)),
            message: l.message.clone(),
        })
        .collect();
    lsp::Diagnostic {
        range: range_in(text, index, d.primary.span),
        severity: Some(severity(d.severity)),
        code: Some(lsp::NumberOrString::String(d.code.as_str().to_string())),
        code_description: pages
            .and_then(|dir| Uri::from_file_path(dir.join(d.code.page_file_name())))
            .map(|href| lsp::CodeDescription { href }),
        source: Some(SOURCE.to_string()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: None,
        data: None,
    }
}

/// What is published for a snapshot: its diagnostics, then, when the cap
/// left some out, one more saying how many and of which severities.
pub fn diagnostics(snap: &Snapshot, uri: &Uri, pages: Option<&Path>) -> Vec<lsp::Diagnostic> {
    let mut out: Vec<lsp::Diagnostic> = snap
        .analysis
        .iter()
        .flat_map(|a| a.diagnostics.iter())
        .map(|d| diagnostic(snap, uri, d, pages))
        .collect();
    out.extend(snap.left_out.map(left_out));
    out
}

/// The summary of the findings the cap left out, at the document's start
/// (where a list of problems sorted by position shows it first), with the
/// severity of the worst of them.
fn left_out(l: LeftOut) -> lsp::Diagnostic {
    let names = ["error", "warning", "information", "hint"];
    let parts: Vec<String> = l
        .by_severity
        .iter()
        .zip(names)
        .filter(|(n, _)| **n > 0)
        .map(|(n, name)| {
            let plural = if *n == 1 || name == "information" {
                ""
            } else {
                "s"
            };
            format!("{} {name}{plural}", thousands(*n))
        })
        .collect();
    let count = l.count();
    lsp::Diagnostic {
        range: lsp::Range::default(),
        severity: Some(severity(l.worst())),
        code: None,
        code_description: None,
        source: Some(SOURCE.to_string()),
        message: format!(
            "{} more finding{} not shown ({}): the language server publishes at most {} per document\nhelp: `qflow check` on the file lists them all",
            thousands(count),
            if count == 1 { " is" } else { "s are" },
            parts.join(", "),
            thousands(l.published),
        ),
        related_information: None,
        tags: None,
        data: None,
    }
}

/// `12345` as `12,345`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn location(snap: &Snapshot, uri: &Uri, span: Span) -> lsp::Location {
    lsp::Location::new(uri.clone(), range(snap, span))
}

pub fn text_edits(snap: &Snapshot, edits: &[Edit]) -> Vec<lsp::TextEdit> {
    edits
        .iter()
        .map(|e| lsp::TextEdit::new(range(snap, e.span), e.new_text.clone()))
        .collect()
}

pub fn workspace_edit(snap: &Snapshot, uri: &Uri, edits: &[Edit]) -> lsp::WorkspaceEdit {
    let mut changes = HashMap::new();
    changes.insert(uri.clone(), text_edits(snap, edits));
    lsp::WorkspaceEdit::new(changes)
}

pub fn code_action(
    snap: &Snapshot,
    uri: &Uri,
    fix: &QuickFix,
    pages: Option<&Path>,
) -> lsp::CodeActionOrCommand {
    lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
        title: fix.title.clone(),
        kind: Some(lsp::CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![diagnostic(snap, uri, &fix.diagnostic, pages)]),
        edit: Some(workspace_edit(snap, uri, &fix.edits)),
        command: None,
        is_preferred: Some(fix.preferred),
        disabled: None,
        data: None,
    })
}

pub fn hover(snap: &Snapshot, markdown: String, span: Span) -> lsp::Hover {
    lsp::Hover {
        contents: lsp::HoverContents::Markup(lsp::MarkupContent {
            kind: lsp::MarkupKind::Markdown,
            value: markdown,
        }),
        range: Some(range(snap, span)),
    }
}

fn symbol_kind(k: SymbolKind) -> lsp::SymbolKind {
    match k {
        SymbolKind::Process => lsp::SymbolKind::MODULE,
        SymbolKind::Task => lsp::SymbolKind::FUNCTION,
        SymbolKind::SubProcess => lsp::SymbolKind::NAMESPACE,
        SymbolKind::Event => lsp::SymbolKind::EVENT,
        SymbolKind::Gateway => lsp::SymbolKind::OPERATOR,
        SymbolKind::Flow => lsp::SymbolKind::INTERFACE,
        SymbolKind::Error => lsp::SymbolKind::CONSTANT,
        SymbolKind::ChannelConfig => lsp::SymbolKind::PROPERTY,
        SymbolKind::Other => lsp::SymbolKind::OBJECT,
    }
}

#[allow(deprecated)] // `deprecated` is a required field of the struct.
pub fn document_symbol(snap: &Snapshot, s: &Symbol) -> lsp::DocumentSymbol {
    lsp::DocumentSymbol {
        name: s.name.clone(),
        detail: Some(s.detail.clone()).filter(|d| !d.is_empty()),
        kind: symbol_kind(s.kind),
        tags: None,
        deprecated: None,
        range: range(snap, s.span),
        selection_range: range(snap, s.selection),
        children: (!s.children.is_empty()).then(|| {
            s.children
                .iter()
                .map(|c| document_symbol(snap, c))
                .collect()
        }),
    }
}

/// The one-symbol outline that stands in a response for an answer the
/// transport splices in (see [`crate::transport::Spliced`]).
#[allow(deprecated)] // `deprecated` is a required field of the struct.
pub fn stand_in(name: String) -> lsp::DocumentSymbol {
    lsp::DocumentSymbol {
        name,
        detail: None,
        kind: lsp::SymbolKind::NULL,
        tags: None,
        deprecated: None,
        range: lsp::Range::default(),
        selection_range: lsp::Range::default(),
        children: None,
    }
}

fn completion_kind(k: CompletionKind) -> lsp::CompletionItemKind {
    match k {
        CompletionKind::Element => lsp::CompletionItemKind::CLASS,
        CompletionKind::Attribute => lsp::CompletionItemKind::PROPERTY,
        CompletionKind::Value => lsp::CompletionItemKind::ENUM_MEMBER,
        CompletionKind::Code => lsp::CompletionItemKind::CONSTANT,
        CompletionKind::Reference => lsp::CompletionItemKind::REFERENCE,
    }
}

pub fn completion_item(snap: &Snapshot, c: &Completion) -> lsp::CompletionItem {
    lsp::CompletionItem {
        label: c.label.clone(),
        kind: Some(completion_kind(c.kind)),
        detail: Some(c.detail.clone()).filter(|d| !d.is_empty()),
        documentation: Some(c.documentation.clone())
            .filter(|d| !d.is_empty())
            .map(|value| {
                lsp::Documentation::MarkupContent(lsp::MarkupContent {
                    kind: lsp::MarkupKind::Markdown,
                    value,
                })
            }),
        insert_text_format: Some(if c.snippet {
            lsp::InsertTextFormat::SNIPPET
        } else {
            lsp::InsertTextFormat::PLAIN_TEXT
        }),
        text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit::new(
            range(snap, c.replace),
            c.insert.clone(),
        ))),
        filter_text: Some(c.filter.clone()).filter(|f| !f.is_empty()),
        sort_text: Some(format!("{:04}", c.order)),
        ..lsp::CompletionItem::default()
    }
}

/// A whole list as an array (as it always was); a page of a longer one as
/// a list marked incomplete, so the editor asks again as the author types.
pub fn completion_response(snap: &Snapshot, c: &Completions) -> lsp::CompletionResponse {
    let items = c.items.iter().map(|i| completion_item(snap, i)).collect();
    if c.incomplete {
        lsp::CompletionResponse::List(lsp::CompletionList {
            is_incomplete: true,
            items,
        })
    } else {
        lsp::CompletionResponse::Array(items)
    }
}

/// The `file:` URI of a path (made absolute against the working
/// directory), as an editor names the document.
pub fn file_uri(path: &std::path::Path) -> Option<Uri> {
    let path = std::path::absolute(path).ok()?;
    Uri::from_file_path(&path)
}

/// One verdict of a file on disk as the JSON of an LSP diagnostic
/// ([`diagnostic_in`]), for `qflow check --format lsp`: with no
/// `codeDescription`, since `check` writes no pages (an editor links the
/// code itself, as the VS Code extension does, or `qflow explain` prints it).
pub fn diagnostic_json(
    text: &str,
    index: &LineIndex,
    uri: &Uri,
    d: &Diagnostic,
) -> serde_json::Value {
    serde_json::to_value(diagnostic_in(text, index, uri, d, None))
        .expect("an LSP diagnostic serializes")
}
