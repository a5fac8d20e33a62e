//! Which files are models, and a model's stem: the one rule every face
//! asks (`qflow check` walking a directory, `--watch`, the language server
//! telling a model from other XML, `qflow test` and local sessions pairing
//! a model with `scenarios/<stem>.json`).
//!
//! A model is a `.bpmn` file or a `.bpmn20.xml` file: the second is the
//! suffix Activiti and Flowable name their models with (their engines
//! deploy `*.bpmn20.xml` as well as `*.bpmn`), common in repositories of
//! BPMN models. Its stem drops the whole suffix, so `order.bpmn20.xml` and
//! `order.bpmn` are both `order` and run with `scenarios/order.json`.

use std::path::Path;

/// The file-name suffixes of a model, longest first (so `.bpmn20.xml` is
/// tried before a shorter suffix could match part of it).
pub const MODEL_SUFFIXES: [&str; 2] = [".bpmn20.xml", ".bpmn"];

/// The model suffix `name` ends with (ASCII case ignored: `ORDER.BPMN`
/// is a model on a case-insensitive file system as on any other), as
/// [`MODEL_SUFFIXES`] spells it.
fn model_suffix(name: &str) -> Option<&'static str> {
    MODEL_SUFFIXES.into_iter().find(|suffix| {
        name.len() > suffix.len()
            && name.is_char_boundary(name.len() - suffix.len())
            && name[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
    })
}

/// Whether a file name (or the last component of a path) is a model's:
/// it ends with `.bpmn` or `.bpmn20.xml` and has a stem before it.
pub fn is_model_name(name: &str) -> bool {
    model_suffix(name).is_some()
}

/// Whether the file at `path` is named as a model ([`is_model_name`] of its
/// file name; the file is not read).
pub fn is_model_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(is_model_name)
}

/// A model's stem: its file name without the model suffix
/// (`order.bpmn20.xml` → `order`, `order.v2.bpmn` → `order.v2`: every
/// other dot stays). Any other file's stem is its name without its last
/// extension, as [`Path::file_stem`] gives it (a model may be named
/// anything when it is given by name). `None` for a path with no file name
/// or one that is not UTF-8.
pub fn model_stem(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    match model_suffix(name) {
        Some(suffix) => Some(&name[..name.len() - suffix.len()]),
        None => path.file_stem()?.to_str(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{is_model_file, is_model_name, model_stem};

    #[test]
    fn a_bpmn20_xml_file_is_a_model_whose_stem_drops_the_whole_suffix() {
        assert_eq!(model_stem(Path::new("/m/order.bpmn20.xml")), Some("order"));
        assert_eq!(model_stem(Path::new("Order.BPMN20.XML")), Some("Order"));
        assert_eq!(
            model_stem(Path::new("order.v2.bpmn20.xml")),
            Some("order.v2")
        );
        assert!(is_model_file(Path::new("/m/order.bpmn20.xml")));
        assert!(is_model_name("order.BPMN20.xml"));
    }

    #[test]
    fn a_bpmn_file_keeps_every_other_dot_of_its_stem() {
        assert_eq!(model_stem(Path::new("/m/order.v2.bpmn")), Some("order.v2"));
        assert_eq!(model_stem(Path::new("charge.BPMN")), Some("charge"));
        assert!(is_model_file(Path::new("charge.bpmn")));
    }

    #[test]
    fn other_files_are_not_models_and_keep_their_file_stem() {
        for name in [
            "pom.xml",
            "order.xml",
            "order.bpmn.xml",
            "order.bpmn20",
            ".bpmn",
            ".bpmn20.xml",
            "bpmn",
        ] {
            assert!(!is_model_name(name), "{name} is not a model's name");
        }
        // Given by name, a model may be called anything: its stem is then
        // Path::file_stem's.
        assert_eq!(model_stem(Path::new("/m/order.xml")), Some("order"));
        assert_eq!(model_stem(Path::new("/m/order")), Some("order"));
        assert_eq!(model_stem(Path::new("/")), None);
    }
}
