//! Hostile and unusual input at the engine level: every attack gives one clear
//! QF001 at the right place (never a panic, a stack overflow or unbounded
//! work), and every real-world oddity loads with exact spans.
//!
//! The `qflow check` end of the same inputs (exit codes, rendered reports,
//! peak memory) is tested in the repository's `tests/hostile.rs`.

use qflow_engine::{analyze, analyze_bytes, Analysis, Code, Severity};

const BPMN: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";

/// The one verdict on a file that is not XML qflow accepts.
fn only_qf001(analysis: &Analysis) -> &qflow_engine::Diagnostic {
    assert!(analysis.definitions.is_none());
    assert_eq!(analysis.diagnostics.len(), 1, "{:#?}", analysis.diagnostics);
    let d = &analysis.diagnostics[0];
    assert_eq!(d.code, Code::QF001, "{d:#?}");
    assert_eq!(d.severity, Severity::Error);
    assert!(d.help.is_some(), "every QF001 says how to fix it: {d:#?}");
    d
}

fn definitions(body: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<bpmn:definitions xmlns:bpmn=\"{BPMN}\" id=\"defs\" targetNamespace=\"urn:t\">\n{body}\n</bpmn:definitions>\n"
    )
}

#[test]
fn billion_laughs_is_refused_at_the_doctype() {
    let mut dtd = String::from("<!DOCTYPE lolz [\n  <!ENTITY lol \"lol\">\n");
    dtd.push_str("  <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n");
    for i in 2..=9 {
        let prev = format!("&lol{};", i - 1).repeat(10);
        dtd.push_str(&format!("  <!ENTITY lol{i} \"{prev}\">\n"));
    }
    dtd.push_str("]>\n");
    let src = format!(
        "<?xml version=\"1.0\"?>\n{dtd}<bpmn:definitions xmlns:bpmn=\"{BPMN}\"><bpmn:documentation>&lol9;</bpmn:documentation></bpmn:definitions>"
    );
    let analysis = analyze(&src);
    let d = only_qf001(&analysis);
    assert!(d.message.contains("DOCTYPE"), "{}", d.message);
    assert_eq!(d.primary.span.start(), src.find("<!DOCTYPE").unwrap());
    assert!(d.help.as_deref().unwrap().contains("entity"));
}

#[test]
fn external_entities_are_never_resolved() {
    for system in [
        "file:///etc/passwd",
        "/etc/passwd",
        "http://127.0.0.1:9/evil.dtd",
    ] {
        let src = format!(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE d [ <!ENTITY xxe SYSTEM \"{system}\"> ]>\n<bpmn:definitions xmlns:bpmn=\"{BPMN}\" id=\"&xxe;\"><bpmn:documentation>&xxe;</bpmn:documentation></bpmn:definitions>"
        );
        let analysis = analyze(&src);
        let d = only_qf001(&analysis);
        assert!(d.message.contains("DOCTYPE"), "{system}: {}", d.message);
        let everything = format!("{d:?}");
        assert!(!everything.contains("root:"), "{system}: {everything}");
    }
    // An external DTD subset (no internal subset) is refused the same way.
    let src = format!(
        "<!DOCTYPE d SYSTEM \"http://127.0.0.1:9/x.dtd\"><bpmn:definitions xmlns:bpmn=\"{BPMN}\"/>"
    );
    assert!(only_qf001(&analyze(&src)).message.contains("DOCTYPE"));
}

#[test]
fn entity_references_without_a_doctype_are_unknown() {
    let src = definitions("<bpmn:process id=\"p\" name=\"&xxe;\"/>");
    let d = only_qf001(&analyze(&src)).clone();
    assert!(
        d.message.contains("&xxe;") || d.message.contains("escape"),
        "{}",
        d.message
    );
    let src = definitions("<bpmn:documentation>&xxe;</bpmn:documentation>");
    let analysis = analyze(&src);
    let d = only_qf001(&analysis);
    assert!(
        d.message.contains("unknown entity reference `&xxe;`"),
        "{}",
        d.message
    );
    assert_eq!(d.primary.span.start(), src.find("&xxe;").unwrap());
}

#[test]
fn hundred_thousand_deep_nesting_stops_at_the_limit() {
    let head = definitions("");
    let head = &head[..head.find("\n</bpmn:definitions>").unwrap()];
    let src = format!(
        "{head}{}{}</bpmn:definitions>",
        "<bpmn:a>".repeat(100_000),
        "</bpmn:a>".repeat(100_000)
    );
    let analysis = analyze(&src);
    let d = only_qf001(&analysis);
    assert!(
        d.message.contains("nested deeper than 256 levels"),
        "{}",
        d.message
    );
    // The root is level 1: the 256th <bpmn:a> is the first one too deep.
    assert_eq!(d.primary.span.start(), head.len() + 255 * "<bpmn:a>".len());
}

#[test]
fn fifty_megabyte_attribute_loads() {
    // (Modelling findings, such as a missing end event, are not loader errors.)
    let big = "A".repeat(50 * 1024 * 1024);
    let src = definitions(&format!(
        "<bpmn:process id=\"p\" name=\"{big}\" isExecutable=\"false\"><bpmn:startEvent id=\"s\"/></bpmn:process>"
    ));
    let analysis = analyze(&src);
    assert!(
        !analysis.errors().any(|d| !d.code.is_modelling()),
        "{:#?}",
        analysis.diagnostics
    );
    let defs = analysis.definitions.expect("a model");
    let name = defs.processes[0].name.as_ref().expect("the name is read");
    assert_eq!(name.value.len(), big.len());
    assert_eq!(name.span.start(), src.find("name=\"").unwrap() + 6);
}

#[test]
fn invalid_utf8_names_the_byte() {
    let mut bytes = definitions("<bpmn:process id=\"p\" name=\"caf").into_bytes();
    let at = bytes.len();
    bytes.extend_from_slice(&[0xE9, b'"', b'/', b'>']); // Latin-1 é, not UTF-8
    let (_, analysis) = analyze_bytes(&bytes);
    let d = only_qf001(&analysis);
    assert_eq!(d.message, format!("invalid UTF-8 at byte {at}"));
    assert_eq!(d.primary.span.start(), at);
}

#[test]
fn latin1_declaration_with_non_ascii_content_says_so() {
    let bytes = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a name=\"caf\xE9\"/>";
    let (_, analysis) = analyze_bytes(bytes);
    let d = only_qf001(&analysis);
    assert!(d.help.as_deref().unwrap().contains("ISO-8859-1"), "{d:#?}");
}

#[test]
fn empty_and_whitespace_files() {
    let (_, analysis) = analyze_bytes(b"");
    assert_eq!(only_qf001(&analysis).message, "the file is empty");
    let (_, analysis) = analyze_bytes(b"  \n\t\n");
    assert!(only_qf001(&analysis).message.contains("no root element"));
}

/// A zip header: ASCII and NUL bytes, so valid UTF-8 that is still binary.
#[test]
fn binary_files_are_named_as_binary() {
    let mut bytes = b"PK\x03\x04\x14\x00\x00\x00\x08\x00".to_vec();
    bytes.extend(std::iter::repeat_n(0u8, 64));
    let (_, analysis) = analyze_bytes(&bytes);
    let d = only_qf001(&analysis);
    assert!(d.message.contains("NUL byte"), "{}", d.message);
    assert_eq!(d.primary.span.start(), 5);
}

#[test]
fn random_bytes_never_panic() {
    // A fixed xorshift stream: reproducible, and covers NULs, stray `<`, high bytes.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for round in 0..200 {
        let len = 1 + round * 37;
        let mut bytes = Vec::with_capacity(len);
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            bytes.push((x >> 24) as u8);
        }
        let (_, analysis) = analyze_bytes(&bytes);
        only_qf001(&analysis);
        // The same with only ASCII bytes (valid UTF-8, so the XML parser sees it).
        let ascii: Vec<u8> = bytes.iter().map(|b| b & 0x7F).collect();
        let (_, analysis) = analyze_bytes(&ascii);
        assert!(analysis.has_errors() || analysis.definitions.is_some());
    }
}

#[test]
fn markup_faults_are_placed() {
    let cases: [(&str, &str, &str); 7] = [
        (
            "<bpmn:process id=\"p\" id=\"q\"/>",
            "appears twice",
            "id=\"q\"",
        ),
        ("<bpmn:process id=p/>", "not quoted", "p/>"),
        (
            "<bpmn:process name=\"a<b\"/>",
            "`<` inside an attribute value",
            "<b\"",
        ),
        (
            "<bpmn:process zz:x=\"1\"/>",
            "prefix `zz` is not declared",
            "zz:x",
        ),
        ("<zz:process/>", "prefix `zz` is not declared", "zz:process"),
        (
            "<bpmn:process></bpmn:task>",
            "not well-formed",
            "</bpmn:task>",
        ),
        (
            "<bpmn:process>",
            "expected `</bpmn:process>`",
            "</bpmn:definitions>",
        ),
    ];
    for (body, message, at) in cases {
        let src = definitions(body);
        let analysis = analyze(&src);
        let d = only_qf001(&analysis);
        assert!(d.message.contains(message), "{body}: {}", d.message);
        let expected = src.find(at).unwrap();
        assert!(
            d.primary.span.start().abs_diff(expected) <= 2,
            "{body}: at {} ({:?}), expected {expected}",
            d.primary.span.start(),
            &src[d.primary.span.start()..]
        );
    }
}

#[test]
fn truncated_file_names_the_open_element() {
    let full = definitions("<bpmn:process id=\"p\"><bpmn:startEvent id=\"s\"/>");
    let src = &full[..full.find("\n</bpmn:definitions>").unwrap()];
    let analysis = analyze(src);
    let d = only_qf001(&analysis);
    assert_eq!(
        d.message,
        "<bpmn:process> is never closed: the file ends first"
    );
    assert_eq!(d.primary.span.start(), src.find("bpmn:process").unwrap());
}

#[test]
fn thousands_of_attributes_are_refused_quickly() {
    let attrs: String = (0..100_000).map(|i| format!(" a{i}=\"\"")).collect();
    let src = definitions(&format!("<bpmn:process{attrs}/>"));
    let d = only_qf001(&analyze(&src)).clone();
    assert!(
        d.message.contains("more than 1024 attributes"),
        "{}",
        d.message
    );
    // Many but allowed: the duplicate check stays linear-ish and finds the repeat.
    let mut attrs: String = (0..1000).map(|i| format!(" a{i}=\"\"")).collect();
    attrs.push_str(" a17=\"again\"");
    let src = definitions(&format!("<bpmn:process{attrs}/>"));
    let analysis = analyze(&src);
    let d = only_qf001(&analysis);
    assert!(d.message.contains("`a17` appears twice"), "{}", d.message);
    assert_eq!(d.primary.span.start(), src.find("a17=\"again\"").unwrap());
}

// ---- real-world variants that must load -------------------------------------

/// A qflow model with the qflow namespace bound to `p` (`None`: the default
/// namespace for elements, `qf:` for attributes). It draws a registered task
/// with a retry (QF033: no jitter; QF040: stateful) and a gateway with a
/// CDATA condition.
fn model(prefix: Option<&str>) -> String {
    let (decl, el, at) = match prefix {
        Some(p) => (
            format!("xmlns:{p}=\"urn:qflow:bpmn:1\""),
            format!("{p}:"),
            format!("{p}:"),
        ),
        None => (
            "xmlns=\"urn:qflow:bpmn:1\" xmlns:qf=\"urn:qflow:bpmn:1\"".to_string(),
            String::new(),
            "qf:".to_string(),
        ),
    };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" {decl} id="defs" targetNamespace="urn:t">
  <bpmn:process id="order" name="Bestellung prüfen" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:serviceTask id="charge" name="Charge" {at}task="payments.charge">
      <bpmn:extensionElements>
        <{el}retry maxAttempts="3" backoff="PT1S PT5S"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:exclusiveGateway id="big" default="small"/>
    <bpmn:endEvent id="done"/>
    <bpmn:endEvent id="review"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="charge"/>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="big"/>
    <bpmn:sequenceFlow id="large" sourceRef="big" targetRef="review">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression"><![CDATA[amount > 100 && currency == "EUR"]]></bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="small" sourceRef="big" targetRef="done"/>
  </bpmn:process>
</bpmn:definitions>
"#
    )
}

/// Codes, and the exact text at every primary span and id.
fn fingerprint(src: &str) -> Vec<String> {
    let analysis = analyze(src);
    let errors: Vec<_> = analysis.errors().collect();
    assert!(errors.is_empty(), "{errors:#?}\n{src}");
    let defs = analysis.definitions.as_ref().expect("a model");
    for d in &defs.ids {
        assert_eq!(
            &src[d.id.span.start()..d.id.span.end()],
            d.id.value,
            "id span"
        );
    }
    let mut out: Vec<String> = analysis
        .diagnostics
        .iter()
        .map(|d| d.code.as_str().to_string())
        .collect();
    out.push(format!("{} ids", defs.ids.len()));
    out
}

#[test]
fn qflow_namespace_is_resolved_by_uri_not_prefix() {
    let q = fingerprint(&model(Some("q")));
    assert!(
        q.contains(&"QF033".to_string()),
        "the retry was seen: {q:?}"
    );
    assert_eq!(fingerprint(&model(Some("x"))), q);
    assert_eq!(fingerprint(&model(None)), q);
}

#[test]
fn bom_crlf_latin1_comments_cdata_non_ascii_and_vendors_load() {
    let base = model(Some("q"));
    let expected = fingerprint(&base);
    let variants: Vec<(&str, String)> = vec![
        ("UTF-8 BOM", format!("\u{feff}{base}")),
        ("CRLF", base.replace('\n', "\r\n")),
        ("BOM and CRLF", format!("\u{feff}{}", base.replace('\n', "\r\n"))),
        ("ISO-8859-1 declaration", base.replace("encoding=\"UTF-8\"", "encoding=\"ISO-8859-1\"").replace("prüfen", "pruefen")),
        (
            "comments",
            base.replace("<bpmn:definitions", "<!-- exported by a modeller -->\n<bpmn:definitions")
                .replace("<bpmn:startEvent", "<!-- <bpmn:task id=\"ghost\"/> -->\n    <bpmn:startEvent")
                .replace("<q:retry", "<!-- retry policy -->\n        <q:retry"),
        ),
        (
            "non-ASCII names and text",
            base.replace("name=\"Charge\"", "name=\"Zahlung → 注文 ✓\"")
                .replace("<bpmn:startEvent id=\"start\"/>", "<bpmn:startEvent id=\"start\"><bpmn:documentation>Größe: 📦 ≥ 2</bpmn:documentation></bpmn:startEvent>"),
        ),
        (
            "other vendors' extensions",
            base.replace(
                "xmlns:xsi=",
                "xmlns:camunda=\"http://camunda.org/schema/1.0/bpmn\" xmlns:zeebe=\"http://camunda.org/schema/zeebe/1.0\" xmlns:signavio=\"http://www.signavio.com\" xmlns:xsi=",
            )
            .replace("q:task=", "camunda:asyncBefore=\"true\" q:task=")
            .replace(
                "<q:retry",
                "<zeebe:taskDefinition type=\"charge\" retries=\"3\"/>\n        <signavio:signavioMetaData metaKey=\"id\" metaValue=\"charge\"/>\n        <camunda:properties><camunda:property id=\"charge\" name=\"x\"/></camunda:properties>\n        <q:retry",
            ),
        ),
    ];
    for (what, src) in &variants {
        assert_eq!(&fingerprint(src), &expected, "{what}");
    }
}

#[test]
fn cdata_condition_is_read_with_its_exact_span() {
    for src in [
        model(Some("q")),
        format!("\u{feff}{}", model(Some("q")).replace('\n', "\r\n")),
    ] {
        let analysis = analyze(&src);
        let defs = analysis.definitions.expect("a model");
        let flow = defs.processes[0]
            .flows
            .iter()
            .find(|f| f.id.value == "large")
            .expect("the conditional flow");
        let condition = flow.condition.as_ref().expect("a condition");
        assert_eq!(condition.value, "amount > 100 && currency == \"EUR\"");
        assert_eq!(
            &src[condition.span.start()..condition.span.end()],
            condition.value
        );
    }
}

#[test]
fn namespace_declaration_floods_are_bounded() {
    // 300 declarations on one element: over the limit of 256 in scope.
    let decls: String = (0..300)
        .map(|i| format!(" xmlns:p{i}=\"urn:p{i}\""))
        .collect();
    let src = definitions(&format!("<bpmn:process{decls}/>"));
    let d = only_qf001(&analyze(&src)).clone();
    assert!(
        d.message.contains("more than 256 namespace declarations"),
        "{}",
        d.message
    );
    // 200,000 siblings each declaring a fresh namespace: fine, and linear.
    let body: String = (0..200_000)
        .map(|i| format!("<v:x xmlns:v=\"urn:v{i}\"/>"))
        .collect();
    let src = definitions(&format!(
        "<bpmn:extensionElements>{body}</bpmn:extensionElements>"
    ));
    let analysis = analyze(&src);
    assert!(
        !analysis.errors().any(|d| !d.code.is_modelling()),
        "{:#?}",
        analysis.diagnostics
    );
}

#[test]
fn entity_reference_floods_are_linear() {
    let text = "&amp;&#x41;&lt;".repeat(300_000);
    let src = definitions(&format!(
        "<bpmn:process id=\"p\" name=\"{text}\"><bpmn:documentation>{text}</bpmn:documentation></bpmn:process>"
    ));
    let analysis = analyze(&src);
    assert!(
        !analysis.errors().any(|d| !d.code.is_modelling()),
        "{:#?}",
        analysis.diagnostics
    );
    let name = analysis.definitions.unwrap().processes[0]
        .name
        .clone()
        .unwrap();
    assert_eq!(name.value.len(), 3 * 300_000);
    assert!(name.value.starts_with("&A<&A<"));
}
