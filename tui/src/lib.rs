//! `qflow console`: a terminal inspector that steps one local instance and
//! shows, panel by panel, what the engine persisted.
//!
//! Two layers. The presentation ([`view`], [`ui`], [`keymap`], [`app`]) draws
//! a [`view::View`] (the engine's inspection model, plain data, with the
//! console's presentation notes beside it) and turns keys into
//! [`backend::Command`]s; it never opens a store or takes a decision. The
//! adapter ([`engine_backend`]) carries commands out on the engine's local
//! driver and builds each view by reading the store.

pub mod app;
pub mod backend;
pub mod engine_backend;
mod engine_describe;
pub mod engine_view;
pub mod fmt;
pub mod keymap;
pub mod script;
pub mod terminal;
pub mod ui;
pub mod view;

pub use app::App;
pub use backend::{Backend, Command, Report};
pub use view::View;
