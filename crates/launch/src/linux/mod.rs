//! The Linux backend: a chat's policy compiled into mounts in private namespaces, a Landlock
//! ruleset and a seccomp filter ([`plan`]), applied by the `cli-sandbox exec` helper
//! ([`apply`], Linux only).

#[cfg(target_os = "linux")]
pub mod apply;
mod frozen;
pub mod plan;
#[cfg(target_os = "linux")]
mod seccomp;

use std::path::PathBuf;

use sandbox_core::{Layout, Policy};

use crate::Error;
use crate::disk::RealDisk;
use plan::{Kernel, LinuxPlan};

/// The kernel this process runs on, as the plan compiler sees it, read cheaply (one syscall and
/// the sysctls that forbid user namespaces) because every launch pays for it; `doctor` tries
/// the namespaces for real. Should they fail anyway, the helper refuses to run (status 2).
pub fn this_kernel() -> Kernel {
    #[cfg(target_os = "linux")]
    {
        Kernel {
            landlock_abi: apply::kernel_landlock_abi(),
            namespaces: user_namespaces_allowed(),
        }
    }
    #[cfg(not(target_os = "linux"))]
    Kernel {
        landlock_abi: plan::NEWEST_KNOWN_ABI,
        namespaces: true,
    }
}

/// Whether the sysctls let this user create a user namespace.
#[cfg(target_os = "linux")]
fn user_namespaces_allowed() -> bool {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|v| v.trim().parse::<i64>().ok())
    };
    if read("/proc/sys/user/max_user_namespaces") == Some(0) {
        return false;
    }
    // SAFETY: plain syscall.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    read("/proc/sys/kernel/unprivileged_userns_clone") != Some(0)
        && read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") != Some(1)
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
    let text = serde_json::to_vec(plan).map_err(|e| {
        Error::BadInput(format!(
            "the plan of chat `{}` cannot be written as JSON ({e}): a path in it is not UTF-8",
            plan.chat
        ))
    })?;
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
