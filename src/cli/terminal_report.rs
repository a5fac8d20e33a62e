//! A diagnostic as miette renders it in the terminal: the model's
//! [`Diagnostic`] bound to the lines of its source around its labels.
//! The rendering is a face's, so it lives in the binary (the language
//! server converts the same diagnostics to LSP's shape, and neither the
//! model nor the engine links miette).

use std::fmt;

use qflow_engine::diagnostic::{Diagnostic, Severity};
use qflow_engine::span::{LineIndex, Span};
use qflow_engine::text::printable;

/// A model span as miette reads it (byte offsets).
fn span(s: Span) -> miette::SourceSpan {
    miette::SourceSpan::new(s.start().into(), s.len())
}

/// A diagnostic bound to its source, ready for miette's graphical renderer.
#[derive(Debug)]
pub(crate) struct Report {
    diagnostic: Diagnostic,
    source: Excerpt,
}

/// The lines of a source around a diagnostic's labels, as miette reads
/// them: with their place in the whole source (byte offset, line), so the
/// labels and line numbers are the whole source's. A report copies and
/// scans these lines only, never the text before them: a check reporting
/// 40,000 findings of one large model reads each finding's own lines, not
/// the model once per finding.
#[derive(Debug)]
struct Excerpt {
    name: String,
    text: String,
    /// Where `text` starts in the whole source: byte offset and 0-based line.
    offset: usize,
    line: usize,
}

/// Lines kept around a report's labels (miette shows one on each side).
const EXCERPT_MARGIN: usize = 3;

impl Excerpt {
    fn around(path: &str, source: &str, spans: &[Span], index: &LineIndex) -> Excerpt {
        let bytes = source.as_bytes();
        let lo = spans
            .iter()
            .map(|s| s.start())
            .min()
            .unwrap_or(0)
            .min(bytes.len());
        let hi = spans
            .iter()
            .map(|s| s.end())
            .max()
            .unwrap_or(0)
            .clamp(lo, bytes.len());
        // Back to the start of the line EXCERPT_MARGIN lines before `lo`.
        let mut start = lo;
        for _ in 0..=EXCERPT_MARGIN {
            match memchr::memrchr(b'\n', &bytes[..start]) {
                Some(nl) if start > 0 => start = nl,
                _ => {
                    start = 0;
                    break;
                }
            }
        }
        if start > 0 {
            start += 1;
        }
        // On to the end of the line EXCERPT_MARGIN lines after `hi`.
        let mut end = hi;
        for _ in 0..=EXCERPT_MARGIN {
            match memchr::memchr(b'\n', &bytes[end.min(bytes.len())..]) {
                Some(nl) => end = (end + nl + 1).min(bytes.len()),
                None => {
                    end = bytes.len();
                    break;
                }
            }
        }
        while !source.is_char_boundary(start) {
            start -= 1;
        }
        while !source.is_char_boundary(end) {
            end += 1;
        }
        Excerpt {
            name: printable(path).into_owned(),
            text: printable(&source[start..end]).into_owned(),
            offset: start,
            line: index.position(source, start).line,
        }
    }
}

impl miette::SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let local = miette::SourceSpan::new(
            span.offset()
                .saturating_sub(self.offset)
                .min(self.text.len())
                .into(),
            span.len(),
        );
        let inner = self
            .text
            .read_span(&local, context_lines_before, context_lines_after)?;
        let at = inner.span();
        Ok(Box::new(miette::MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            miette::SourceSpan::new((at.offset() + self.offset).into(), at.len()),
            inner.line() + self.line,
            inner.column(),
            // miette counts the line breaks from the start of the source to
            // the end of the context (and merges labels' snippets by it):
            // those before the excerpt are added, so the drawing is the
            // whole source's.
            inner.line_count() + self.line,
        )))
    }
}

impl Report {
    /// The report a terminal shows, with the source's line index (one for
    /// all of a file's reports): the source, the path and every text
    /// made printable (control characters from
    /// someone else's model never reach the terminal; spans stay exact).
    pub(crate) fn with_index(
        mut diagnostic: Diagnostic,
        path: &str,
        source: &str,
        index: &LineIndex,
    ) -> Self {
        let clean = |s: &mut String| {
            if let std::borrow::Cow::Owned(p) = printable(s) {
                *s = p;
            }
        };
        clean(&mut diagnostic.message);
        clean(&mut diagnostic.primary.message);
        diagnostic
            .related
            .iter_mut()
            .for_each(|l| clean(&mut l.message));
        if let Some(h) = diagnostic.help.as_mut() {
            clean(h);
        }
        let spans: Vec<Span> = std::iter::once(diagnostic.primary.span)
            .chain(diagnostic.related.iter().map(|l| l.span))
            .collect();
        let source = Excerpt::around(path, source, &spans, index);
        Report { diagnostic, source }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diagnostic.message)
    }
}

impl std::error::Error for Report {}

impl miette::Diagnostic for Report {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.diagnostic.code.as_str()))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diagnostic.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Info | Severity::Hint => miette::Severity::Advice,
        })
    }

    /// The diagnostic's help, then the command that prints the code's page:
    /// the terminal's way to the page while the project has no public home
    /// to link to.
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        let explain = format!(
            "{} prints this code's page",
            self.diagnostic.code.explain_command()
        );
        Some(Box::new(match &self.diagnostic.help {
            Some(help) => format!("{help}\n{explain}"),
            None => explain,
        }))
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let primary = std::iter::once(miette::LabeledSpan::new_primary_with_span(
            Some(self.diagnostic.primary.message.clone()).filter(|m| !m.is_empty()),
            span(self.diagnostic.primary.span),
        ));
        let related = self
            .diagnostic
            .related
            .iter()
            .map(|l| miette::LabeledSpan::new_with_span(Some(l.message.clone()), span(l.span)));
        Some(Box::new(primary.chain(related)))
    }
}
