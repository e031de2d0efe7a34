//! The Linux backend of cli-sandbox: a chat's policy compiled into mounts in private namespaces, a Landlock
//! ruleset and a seccomp filter ([`plan`]: the plan's file format apart from its compiler, with
//! `frozen` where namespaces cannot be made),
//! applied by the `cli-sandbox exec` helper ([`apply`], Linux only), one file per mechanism:
//! `mounts` (the mount passes), `process` (the helper, init and the program; how a launch ends),
//! `network` (the chat's own network: pasta, started by the helper), `caps`, `landlock`,
//! `seccomp`, `descriptors` (the standard descriptors the program inherits), `limits` and
//! `cgroup` (`[limits]`: the chat's processes and memory), and `sys` (the
//! system-call wrappers they share).
//!
//! What it is not: the decision of what is allowed (that is `sandbox-core`'s `Policy`, which this
//! crate compiles), nor a launcher (the `launch` crate wraps a CLI's launch in the helper and
//! depends on this crate; `cli-sandbox` and the tests depend on it directly). The plan compiles on every OS; applying it is
//! Linux only.

#![warn(missing_docs)]

/// A line on stderr, as `eprintln!` writes it, that never fails the caller: `eprintln!` panics
/// when stderr cannot be written (a socket with no peer, a closed descriptor), which turned our
/// status 125 into a panic's 101, an abort in `cli-sandbox-helper` (whose `main` is C's), and a
/// panic in init, a copy of the helper, would unwind the helper's state. The binaries use it
/// too (`sandbox_linux::say`).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod disk;

#[cfg(target_os = "linux")]
pub mod apply;
#[cfg(target_os = "linux")]
pub mod audit;
#[cfg(target_os = "linux")]
mod bpf;
#[cfg(target_os = "linux")]
mod caps;
#[cfg(target_os = "linux")]
pub mod cgroup;
#[cfg(target_os = "linux")]
pub mod denials;
#[cfg(target_os = "linux")]
mod descriptors;
#[cfg(target_os = "linux")]
mod egress;
mod frozen;
#[cfg(target_os = "linux")]
mod guard;
mod harden;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod limits;
#[cfg(target_os = "linux")]
mod mounts;
#[cfg(target_os = "linux")]
mod network;
pub mod plan;
#[cfg(target_os = "linux")]
mod process;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod stand_in_dirs;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
pub mod trial;

use std::path::Path;

use sandbox_core::Policy;

use crate::disk::RealDisk;
use plan::{Kernel, LinuxPlan};
pub use plan::{read_plan, write_plan};

/// The kernel this process runs on, as the plan compiler sees it: the Landlock ABI (one system
/// call) and whether a namespace plan can start here, decided by a real trial of its first
/// steps ([`trial`]), kept while its answer cannot change. The one decision every command and
/// the library use; [`namespaces`] gives the reason when the answer is no.
pub fn this_kernel() -> Kernel {
    #[cfg(target_os = "linux")]
    {
        let landlock_abi = apply::kernel_landlock_abi();
        Kernel {
            landlock_abi,
            // Without Landlock nothing confines, namespaces or not: no trial.
            namespaces: landlock_abi > 0 && trial::namespaces().is_ok(),
            fuse: fuse_available(),
        }
    }
    #[cfg(not(target_os = "linux"))]
    Kernel {
        landlock_abi: plan::NEWEST_KNOWN_ABI,
        namespaces: true,
        fuse: true,
    }
}

/// Whether this process can open `/dev/fuse` for reading and writing, as the guard over grants
/// needs (issue 25): asked afresh each time (its mode can change), about 10 µs.
#[cfg(target_os = "linux")]
pub fn fuse_available() -> bool {
    rustix::fs::open(
        "/dev/fuse",
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .is_ok()
}

/// [`fuse_available`] where the plan is only printed (not Linux): as on a Linux machine that
/// has it.
#[cfg(not(target_os = "linux"))]
pub fn fuse_available() -> bool {
    true
}

/// Whether a namespace plan can start in this process ([`trial`]): `Err` names the step that
/// failed and the system's words. The kept answer, as [`this_kernel`] uses it.
#[cfg(target_os = "linux")]
pub fn namespaces() -> Result<(), String> {
    trial::namespaces()
}

/// Compiles the chat's plan against the disk as it is now. A plan that names a path that is not
/// UTF-8 is refused here, with the path: the plan travels as JSON (to the helper, to `profile`),
/// which holds text only.
pub fn compile(policy: &Policy, kernel: Kernel) -> Result<LinuxPlan, Error> {
    let plan = plan::compile(policy, kernel, &RealDisk)?;
    if let Some(path) = plan.paths().into_iter().find(|p| p.to_str().is_none()) {
        return Err(Error::BadInput(format!(
            "`{}` is not valid UTF-8, and the Linux plan names paths as text: rename it or leave it out of the chat's folders",
            path.display()
        )));
    }
    Ok(plan)
}

/// What can stop the Linux backend's own steps. `launch::Error` takes each over as its variant
/// of the same name.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The plan cannot carry the policy out on this machine.
    #[error(transparent)]
    Plan(#[from] plan::PlanError),
    /// A file-system step failed (a folder, the plan file).
    #[error("{what}: {source}")]
    Io {
        /// The step and the path, in words.
        what: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// Input the backend cannot use, with what to do.
    #[error("{0}")]
    BadInput(String),
    /// Anything else, said in words.
    #[error("{0}")]
    Other(String),
}

/// Makes `path` and the folders above it that are missing, each `0700`. Every folder the
/// launcher makes is inside the state root (the plans, the chat's runtime, the kept helper):
/// a refusal to write is said as [`in_state_root`] says it.
pub fn ensure_dir(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(in_state_root(format!("folder `{}`", path.display())))
}

/// The error of a write inside the state root (`what`: the step and the path, in words). A
/// state root this user may not write (another owner, a read-only mount) is bad input, said with
/// its remedy: every launch writes its plan and the chat's runtime there. Anything else is the
/// system's error as it is.
pub fn in_state_root(what: String) -> impl FnOnce(std::io::Error) -> Error {
    move |e| match e.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
            Error::BadInput(format!(
                "{what} cannot be written ({e}): the state root is not writable by this user, and \
                 every launch writes its plan and the chat's runtime in it; make it writable \
                 (chown or chmod it, or mount it read-write), or name another folder with \
                 --state-root or AGENTWORKS_STATE_ROOT; nothing was started"
            ))
        }
        _ => Error::Io { what, source: e },
    }
}

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
        // One write of the whole line: init and the helper mark at once into the same stderr,
        // and `writeln!` to stderr (unbuffered) writes each piece on its own, which glued two
        // marks into one line of the table. A pipe keeps a write this short whole.
        let line = format!("PHASE {us} {} {name}\n", std::process::id());
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}
