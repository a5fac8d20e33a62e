//! Document rules (every BPMN file): QF003 duplicate ids, QF004 dangling references.

use std::collections::hash_map::Entry;

use foldhash::HashMap;

use crate::diagnostic::{Code, Diagnostic};
use crate::model::Definitions;

pub(super) fn check(defs: &Definitions, _source: &str, out: &mut Vec<Diagnostic>) {
    let first = duplicate_ids(defs, out);
    dangling_references(defs, &first, out);
}

/// QF003: the second and later declarations of an id, each pointing back at
/// the first. Returns every declared id with its first declaration, which
/// is what QF004 looks references up in (one table of ~80,000 ids on a
/// large model, not two).
fn duplicate_ids<'d>(defs: &'d Definitions, out: &mut Vec<Diagnostic>) -> HashMap<&'d str, usize> {
    // foldhash, pre-sized: hashing ~80,000 ids with SipHash was a tenth of `analyze`.
    let mut first: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(defs.ids.len(), Default::default());
    for (i, decl) in defs.ids.iter().enumerate() {
        // One lookup per id (an entry, not a get and then an insert).
        match first.entry(decl.id.value.as_str()) {
            Entry::Vacant(v) => {
                v.insert(i);
            }
            Entry::Occupied(o) => {
                let f = *o.get();
                let original = &defs.ids[f];
                out.push(
                    Diagnostic::new(
                        Code::QF003,
                        decl.id.span,
                        format!("duplicate id `{}`", decl.id.value),
                    )
                    .label(format!("this <{}> reuses the id", decl.element.local))
                    .related(
                        original.id.span,
                        format!("first declared here, on <{}>", original.element.local),
                    )
                    .help("ids must be unique across the whole document: rename one of them (references follow the first)"),
                );
            }
        }
    }
    first
}

/// QF004: a checked reference to an id nobody declares (`declared`: every
/// declared id).
fn dangling_references(
    defs: &Definitions,
    declared: &HashMap<&str, usize>,
    out: &mut Vec<Diagnostic>,
) {
    // Built only once a reference dangles (almost never, on a large model).
    let mut candidates: Vec<&str> = Vec::new();
    for r in defs.references.iter().filter(|r| r.kind.is_checked()) {
        if declared.contains_key(r.target.value.as_str()) {
            continue;
        }
        if candidates.is_empty() {
            candidates = defs.ids.iter().map(|d| d.id.value.as_str()).collect();
            candidates.sort_unstable();
            candidates.dedup();
        }
        let mut d = Diagnostic::new(
            Code::QF004,
            r.target.span,
            format!(
                "{} points at `{}`, which no element declares",
                r.kind.attribute(),
                r.target.value
            ),
        )
        .label("no element has this id");
        match crate::suggest::closest(&r.target.value, candidates.iter().copied()) {
            Some(best) => {
                d = d.help(format!("did you mean `{best}`?")).fix(
                    format!("Change to `{best}`"),
                    vec![crate::diagnostic::Edit {
                        span: r.target.span,
                        new_text: best.to_string(),
                    }],
                );
            }
            None => {
                d = d.help("point it at the id of an existing element, or add the element");
            }
        }
        out.push(d);
    }
}
