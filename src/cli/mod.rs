pub mod check;
pub mod console;
pub mod explain;
pub mod lsp;
pub mod render;
pub mod run;
