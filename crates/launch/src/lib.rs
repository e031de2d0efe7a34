//! Launching a coding CLI inside the platform's sandbox.
//!
//! This crate is the only one that knows the OS mechanisms: the Seatbelt profile for macOS, the
//! Linux plan (namespaces, Landlock, seccomp) and the helper that applies it, the facts probe
//! that feeds the platform decision, and the edits of the person's own files. It also holds the
//! registry of adapters by CLI name, `LandlockArgs`/`LandlockCmd` (one routine that wraps any
//! adapter's launch) and the contract runner. The command line lives only in the `cli-sandbox`
//! binary.

pub mod context;
pub mod contract;
pub mod demo;
pub mod disk;
mod error;
pub mod facts;
pub mod linux;
pub mod person_files;
pub mod registry;
pub mod seatbelt;
pub mod wrap;

pub use context::{Context, Settings};
pub use error::Error;
pub use wrap::{EditDone, LandlockArgs, LandlockCmd, LaunchSpec, PreTrustDone};
