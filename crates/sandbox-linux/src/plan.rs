//! The Linux plan: its file format ([`format`]: the serialized [`LinuxPlan`] and its steps, all
//! the helper reads) apart from its compiler ([`compile()`], and what it shares with the
//! Landlock-only fallback in `common`). This module only re-exports them, so that every path
//! (`sandbox_linux::plan::LinuxPlan`, `sandbox_linux::plan::compile`) names one item; inside the
//! crate, modules import from `format` or `common` directly, so that no module of the crate is
//! reached from itself (`tests/module_graph.rs`).

pub(crate) mod common;
mod compile;
pub(crate) mod format;

pub use common::{Kernel, LaunchDisk, PlanError, seccomp_program};
pub use compile::compile;
pub use format::*;
