//! The baseline every loader figure is compared with (shared by the benches).

use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

/// Read every event, resolve the element's namespace, and resolve and unescape
/// every attribute: the least work any namespace-aware BPMN loader must do.
pub(crate) fn bare_quick_xml(source: &str) -> usize {
    let mut reader = NsReader::from_str(source);
    let mut seen = 0usize;
    loop {
        match reader.read_resolved_event() {
            Ok((ns, Event::Start(e) | Event::Empty(e))) => {
                if let ResolveResult::Bound(ns) = ns {
                    seen += ns.as_ref().len();
                }
                for a in e.attributes() {
                    let a = a.expect("well-formed attribute");
                    let (ans, local) = reader.resolve_attribute(a.key);
                    if let ResolveResult::Bound(ns) = ans {
                        seen += ns.as_ref().len();
                    }
                    seen += local.as_ref().len();
                    seen += a.unescape_value().expect("valid escapes").len();
                }
            }
            Ok((_, Event::Text(t))) => seen += t.len(),
            Ok((_, Event::Eof)) => break,
            Ok(_) => {}
            Err(e) => panic!("generated model is not well-formed: {e}"),
        }
    }
    seen
}
