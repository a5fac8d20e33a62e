//! QF040 (info): the process's class, with every reason it is stateful.
//!
//! A stateful process needs a datasource; the author should learn that from
//! the loader, not from the first deployment (retry-machinery.txt: "the
//! structural classifier accounts for it rather than discovering it at
//! runtime"). The classification itself is [`crate::classify`].

use crate::classify::{classify, Classification};
use crate::diagnostic::{Code, Diagnostic};
use crate::model::Process;
use crate::rules::structure::process_name;

pub fn check(process: &Process, out: &mut Vec<Diagnostic>) {
    let Classification::Stateful(reasons) = classify(process) else {
        return;
    };
    let list: Vec<String> = reasons.iter().map(|r| format!("- {}", r.detail)).collect();
    let mut d = Diagnostic::new(
        Code::QF040,
        process.name_span,
        format!(
            "process {} is stateful ({} wait state{}): it needs a datasource",
            process_name(process),
            reasons.len(),
            if reasons.len() == 1 { "" } else { "s" }
        ),
    )
    .label("stateful")
    .help(format!(
        "instances park durably at these wait states, so qflow must run this process with a store (SQLite by default):\n{}",
        list.join("\n")
    ));
    for r in &reasons {
        d = d.related(r.span, format!("{} `{}`", r.kind.as_str(), r.node_id));
    }
    out.push(d);
}
