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

/// Marks a step of a launch for the table of where its time goes (`scripts/bench.sh`): with the
/// `phase-times` feature, prints `PHASE <monotonic µs> <pid> <name>` on stderr; without it (every
/// build that launches chats), expands to nothing.
#[macro_export]
macro_rules! phase {
    ($name:expr) => {
        #[cfg(feature = "phase-times")]
        $crate::phase_times::mark($name);
    };
}

#[cfg(feature = "phase-times")]
#[doc(hidden)]
pub mod phase_times {
    /// See [`phase!`](crate::phase).
    pub fn mark(name: &str) {
        use std::io::Write;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a local timespec, alive and exclusively borrowed for the call.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        // CLOCK_MONOTONIC exists on every kernel we run on; a failure would leave `ts` at 0,
        // which shows in the marks.
        debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC)");
        let us = ts.tv_sec * 1_000_000 + ts.tv_nsec / 1_000;
        let _ = writeln!(
            std::io::stderr(),
            "PHASE {us} {} {name}",
            std::process::id()
        );
    }
}
