//! The Linux backend: a chat's policy compiled into mounts in private namespaces, a Landlock
//! ruleset and a seccomp filter ([`plan`]), applied by the `cli-sandbox exec` helper
//! ([`apply`], Linux only).

#[cfg(target_os = "linux")]
pub mod apply;
pub mod plan;
#[cfg(target_os = "linux")]
mod seccomp;

use std::path::PathBuf;

use sandbox_core::{Layout, Policy};

use crate::Error;
use crate::disk::RealDisk;
use plan::{Kernel, LinuxPlan};

/// The kernel this process runs on, as the plan compiler sees it. Namespaces are assumed to be
/// available (the helper refuses to run if they are not); `doctor` tries them for real.
pub fn this_kernel() -> Kernel {
    #[cfg(target_os = "linux")]
    let landlock_abi = apply::kernel_landlock_abi();
    #[cfg(not(target_os = "linux"))]
    let landlock_abi = plan::NEWEST_KNOWN_ABI;
    Kernel {
        landlock_abi,
        namespaces: true,
    }
}

/// Compiles the chat's plan against the disk as it is now.
pub fn compile(policy: &Policy, kernel: Kernel) -> Result<LinuxPlan, Error> {
    Ok(plan::compile(policy, kernel, &RealDisk)?)
}

/// Writes the plan where no confined process can change it (inside the state root, which every
/// chat's sandbox masks), atomically; returns its path for `cli-sandbox exec --policy`.
///
/// Compact JSON (`cli-sandbox profile --backend landlock` prints it for people), and no
/// `fsync`: the plan is written again before every launch that reads it, so a plan lost to a
/// crash is never used, and a cut one is refused by the helper (see BENCHMARKS.md).
pub fn write_plan(plan: &LinuxPlan, layout: &Layout) -> Result<PathBuf, Error> {
    use std::io::Write;
    let dir = layout.plans_dir();
    crate::context::ensure_dir(&dir)?;
    let path = dir.join(format!("{}.json", plan.chat));
    let io = |e| Error::Io {
        what: format!("plan `{}`", path.display()),
        source: e,
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io)?;
    let text = serde_json::to_vec(plan).expect("a plan always serializes");
    tmp.write_all(&text).map_err(io)?;
    tmp.persist(&path).map_err(|e| io(e.error))?;
    Ok(path)
}

/// Reads a plan written by [`write_plan`].
pub fn read_plan(path: &std::path::Path) -> Result<LinuxPlan, Error> {
    let text = std::fs::read(path).map_err(|e| Error::Io {
        what: format!("plan `{}`", path.display()),
        source: e,
    })?;
    serde_json::from_slice(&text).map_err(|e| {
        Error::Other(format!(
            "plan `{}` cannot be read ({e}): compile it again with `cli-sandbox plan`",
            path.display()
        ))
    })
}
