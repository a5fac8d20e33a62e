//! The loader's single entry point: text in, model and verdicts out.
//!
//! Every face calls this: `qflow check` renders the verdicts, the language
//! server publishes them, and the runtime refuses to deploy a model with any
//! error verdict.

use crate::config::Settings;
use crate::diagnostic::{Code, Diagnostic};
use crate::model::Definitions;
use crate::{reader, rules, xml};

/// What the loader concluded about one document.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The model, when the document was well-formed BPMN (even if rules failed),
    /// so the editor can still navigate a model with errors.
    pub definitions: Option<Definitions>,
    /// Every verdict: errors first, then warnings, info and hints (a note
    /// about the process never hides the error that refuses it), each by
    /// position.
    pub diagnostics: Vec<Diagnostic>,
}

impl Analysis {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }

    /// The verdicts that keep the model from running ([`Diagnostic::refuses_run`]):
    /// every error, and the namespace slips `check` only warns about.
    pub fn refusals(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.refuses_run())
    }
}

/// The diagram's coordinate leaves (`dc:Bounds`, `di:waypoint`, `dc:Font`):
/// attributes that are neither ids nor references, so the reader never looks
/// at them. Anything else on them (an `id`, a vendor attribute) keeps them.
pub const DRAWING_LEAVES: xml::ParseOptions<'static> = xml::ParseOptions {
    skip_leaves_in: &[reader::DC_NS, reader::DI_NS],
    leaf_attributes: &[
        "x",
        "y",
        "width",
        "height",
        "name",
        "size",
        "isBold",
        "isItalic",
        "isUnderline",
        "isStrikeThrough",
    ],
    keep_bounds_of: Some((reader::DC_NS, "Bounds")),
};

/// Analyze a document given as text (the editor's buffer, or decoded bytes),
/// with the default rule settings.
pub fn analyze(source: &str) -> Analysis {
    analyze_with(source, &Settings::default())
}

/// [`analyze`] with the rule settings of a configuration (see [`crate::config`]).
pub fn analyze_with(source: &str, settings: &Settings) -> Analysis {
    // The model is read straight from the parser's events: no tree.
    let read = match reader::read_source(source, DRAWING_LEAVES) {
        Ok(read) => read,
        Err(e) => return xml_fault(e),
    };
    let definitions = match read {
        Ok(defs) => defs,
        Err(d) => {
            return Analysis {
                definitions: None,
                diagnostics: vec![d],
            }
        }
    };
    let mut diagnostics = rules::check_with(&definitions, source, settings);
    // Root causes first: errors, then warnings, then notes; by position within each.
    diagnostics.sort_by_key(|d| (d.severity, d.primary.span.start(), d.code));
    Analysis {
        definitions: Some(definitions),
        diagnostics,
    }
}

/// Analyze raw file bytes. Returns the decoded text beside the analysis so a
/// face can render spans; undecodable bytes give a QF001 against an empty text.
pub fn analyze_bytes(bytes: &[u8]) -> (std::borrow::Cow<'_, str>, Analysis) {
    analyze_bytes_with(bytes, &Settings::default())
}

/// [`analyze_bytes`] with the rule settings of a configuration.
pub fn analyze_bytes_with<'b>(
    bytes: &'b [u8],
    settings: &Settings,
) -> (std::borrow::Cow<'b, str>, Analysis) {
    // XML processors must accept UTF-16 (XML 1.0, 4.3.3); Windows tools
    // still save it. Spans then point into the UTF-8 text every face shows.
    if let Some(utf16) = xml::utf16_text(bytes) {
        return match utf16 {
            Ok(text) => {
                let analysis = analyze_with(&text, settings);
                (std::borrow::Cow::Owned(text), analysis)
            }
            Err(e) => (std::borrow::Cow::Owned(String::new()), xml_fault(e)),
        };
    }
    match xml::decode(bytes) {
        Ok(text) => (
            std::borrow::Cow::Borrowed(text),
            analyze_with(text, settings),
        ),
        Err(e) => {
            // Render what can be rendered: the valid prefix, lossily.
            let shown = String::from_utf8_lossy(bytes).into_owned();
            let span = crate::span::Span::new(
                e.span.start().min(shown.len()),
                e.span.end().min(shown.len()),
            );
            let analysis = xml_fault(xml::XmlError { span, ..e });
            (std::borrow::Cow::Owned(shown), analysis)
        }
    }
}

fn xml_fault(e: xml::XmlError) -> Analysis {
    let mut d = Diagnostic::new(Code::QF001, e.span, e.message).label("here");
    if !e.help.is_empty() {
        d = d.help(e.help);
    }
    Analysis {
        definitions: None,
        diagnostics: vec![d],
    }
}

/// Load a model for execution: the definitions, or every verdict if any
/// refuses a run (an error, or a namespace slip: [`Diagnostic::refuses_run`]).
pub fn load(source: &str) -> Result<Definitions, Vec<Diagnostic>> {
    load_with(source, &Settings::default())
}

/// [`load`] with the rule settings of a configuration: a modelling rule a
/// configuration turns off no longer refuses the model.
pub fn load_with(source: &str, settings: &Settings) -> Result<Definitions, Vec<Diagnostic>> {
    let analysis = analyze_with(source, settings);
    match analysis.definitions {
        Some(defs) if analysis.refusals().next().is_none() => Ok(defs),
        _ => Err(analysis.diagnostics),
    }
}
