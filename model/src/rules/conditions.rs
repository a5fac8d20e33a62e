//! QF042: a sequence flow's condition that the runtime's condition language
//! (`crate::condition`) cannot parse.
//!
//! Found at load time so the editor shows it at the exact character; found at
//! run time it would be a gateway failing on the first instance that reaches it.

use crate::condition;
use crate::diagnostic::{Code, Diagnostic};
use crate::model::Process;
use crate::span::Span;

pub(super) fn check(process: &Process, out: &mut Vec<Diagnostic>) {
    for f in &process.flows {
        let Some(c) = &f.condition else { continue };
        // An empty condition does not parse either: the author meant a
        // condition and wrote none, and the runtime would read the flow as
        // unconditioned (always taken), so it is refused, not guessed.
        let Err(e) = condition::parse(&c.value) else {
            continue;
        };
        // The exact character when the text was written without entity
        // references (`&gt;` makes the written text longer than the value).
        let span = if c.value.trim().is_empty() {
            c.span
        } else if c.span.len() == c.value.len() {
            let at = c.span.start() + e.offset.min(c.value.len());
            Span::new(at, (at + 1).min(c.span.end().max(at)))
        } else {
            c.span
        };
        out.push(
            Diagnostic::new(
                Code::QF042,
                span,
                format!("condition of sequence flow `{}` does not parse: {}", f.id.value, e.message),
            )
            .label(e.message.clone())
            .related(c.span, "the condition")
            .help(
                "conditions compare variables with literals: `amount > 100 && country == 'NL'`; \
                 operators == != < <= > >=, &&, ||, !, parentheses (docs/run.md, \"Condition language\")",
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    /// An exclusive split whose conditioned flow `f2` holds `CONDITION`.
    const MODEL: &str = r#"<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:q="urn:qflow:bpmn:1" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
    <bpmn:exclusiveGateway id="g" default="f3"/>
    <bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="e">CONDITION</bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="f3" sourceRef="g" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>"#;

    /// The model with `condition` in `f2`, and its QF042 findings.
    fn qf042(condition: &str) -> (String, Vec<crate::Diagnostic>) {
        let src = MODEL.replace("CONDITION", condition);
        let a = crate::analyze(&src);
        let d = a
            .diagnostics
            .into_iter()
            .filter(|d| d.code == crate::Code::QF042)
            .collect();
        (src, d)
    }

    #[test]
    fn a_broken_condition_is_qf042_at_the_offending_character() {
        let (src, d) = qf042("<bpmn:conditionExpression>amount = 5</bpmn:conditionExpression>");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            &src[d[0].primary.span.start()..d[0].primary.span.end()],
            "="
        );
        assert!(d[0].message.contains("`f2`"));
        assert!(crate::load(&src.replace("amount = 5", "amount == 5")).is_ok());
    }

    #[test]
    fn an_empty_condition_is_qf042_on_the_condition_and_never_taken_as_always_true() {
        for condition in [
            "<bpmn:conditionExpression>  </bpmn:conditionExpression>",
            "<bpmn:conditionExpression/>",
        ] {
            let (src, d) = qf042(condition);
            assert_eq!(d.len(), 1, "{d:?}");
            assert!(d[0].message.contains("empty condition"), "{}", d[0].message);
            let at = &src[d[0].primary.span.start()..d[0].primary.span.end()];
            assert!(
                at.contains("conditionExpression") || at.trim().is_empty(),
                "{at:?}"
            );
            assert!(crate::load(&src).is_err(), "run refuses it");
        }
    }
}
