//! Landlock's part of the plan, applied to the calling process with the `landlock` crate.
//!
//! The ruleset is built for the plan's ABI as a hard requirement: a kernel that would enforce
//! less than planned refuses, and the program is not started.

use std::io;

use landlock::{
    AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::sys::{ApplyError, SYMLINK_ON_THE_WAY, fail, open_path_no_symlinks};
use crate::plan::format::{FsRight, LinuxPlan};

/// The kernel's Landlock ABI (0 when Landlock is missing or disabled), asked of the kernel once
/// per process: `step` asks it for the plan and again to apply the plan. The answer cannot
/// change while the process lives: the ABI is the running kernel's (its version of Landlock,
/// and whether the LSM was enabled at boot), and no system call changes it; confining this
/// process (`landlock_restrict_self`) does not change what the query answers.
pub fn kernel_abi() -> u32 {
    static ABI: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *ABI.get_or_init(ask_kernel_abi)
}

#[cfg(test)]
static ASKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn ask_kernel_abi() -> u32 {
    #[cfg(test)]
    ASKED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: the version query takes no attribute pointer and has no side effect.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if v < 0 { 0 } else { v as u32 }
}

fn access_fs(right: FsRight) -> AccessFs {
    match right {
        FsRight::Execute => AccessFs::Execute,
        FsRight::WriteFile => AccessFs::WriteFile,
        FsRight::ReadFile => AccessFs::ReadFile,
        FsRight::ReadDir => AccessFs::ReadDir,
        FsRight::RemoveDir => AccessFs::RemoveDir,
        FsRight::RemoveFile => AccessFs::RemoveFile,
        FsRight::MakeChar => AccessFs::MakeChar,
        FsRight::MakeDir => AccessFs::MakeDir,
        FsRight::MakeReg => AccessFs::MakeReg,
        FsRight::MakeSock => AccessFs::MakeSock,
        FsRight::MakeFifo => AccessFs::MakeFifo,
        FsRight::MakeBlock => AccessFs::MakeBlock,
        FsRight::MakeSym => AccessFs::MakeSym,
        FsRight::Refer => AccessFs::Refer,
        FsRight::Truncate => AccessFs::Truncate,
        FsRight::IoctlDev => AccessFs::IoctlDev,
        FsRight::ResolveUnix => AccessFs::ResolveUnix,
    }
}

fn rights(list: &[FsRight]) -> BitFlags<AccessFs> {
    list.iter()
        .fold(BitFlags::empty(), |acc, r| acc | access_fs(*r))
}

pub(super) fn restrict_self(plan: &LinuxPlan) -> Result<(), ApplyError> {
    let ll = &plan.landlock;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(rights(&ll.handled))
        .map_err(|e| fail("landlock ruleset", e))?;
    let mut scopes: BitFlags<Scope> = BitFlags::empty();
    for scope in &ll.scopes {
        scopes |= match scope.as_str() {
            "signal" => Scope::Signal,
            "abstract-unix-socket" => Scope::AbstractUnixSocket,
            other => return Err(fail("landlock scope", format!("unknown scope `{other}`"))),
        };
    }
    if !scopes.is_empty() {
        ruleset = ruleset
            .scope(scopes)
            .map_err(|e| fail("landlock scopes", e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail("landlock create", e))?;
    for rule in &ll.rules {
        // Opened without following a symlink: a rule lands on the inode it names, so a folder
        // swapped for a symlink since the plan was made (by a process with a read-write grant
        // above it, or the chat's own leftover daemon) would grant what the link points to.
        let fd = match open_path_no_symlinks(&rule.path, false) {
            Ok(fd) => fd,
            // Gone since the plan was made (a temporary file beside a frozen folder): a rule
            // only grants, so leaving it out closes more, never less.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(fail(
                    format!("landlock rule {}", rule.path.display()),
                    SYMLINK_ON_THE_WAY,
                ));
            }
            Err(e) => return Err(fail(format!("landlock rule {}", rule.path.display()), e)),
        };
        created = created
            .add_rule(PathBeneath::new(fd, rights(&rule.rights)))
            .map_err(|e| fail(format!("landlock rule {}", rule.path.display()), e))?;
    }
    if ll.log_denials {
        created = created
            .log_new_exec(true)
            .map_err(|e| fail("landlock audit log", e))?;
    }
    let status = created
        .restrict_self()
        .map_err(|e| fail("landlock restrict", e))?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(fail(
            "landlock",
            format!(
                "the kernel enforced the ruleset {:?}, not fully",
                status.ruleset
            ),
        ));
    }
    tracing::info!(
        abi = ll.abi,
        rules = ll.rules.len(),
        "the kernel enforces the Landlock ruleset fully"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn the_abi_is_asked_of_the_kernel_once_and_is_its_answer() {
        let answers: Vec<u32> = (0..3).map(|_| kernel_abi()).collect();
        // Other tests of this process may have asked first: once in all.
        assert_eq!(ASKED.load(Ordering::Relaxed), 1);
        assert!(answers.iter().all(|a| *a == answers[0]));
        assert_eq!(answers[0], ask_kernel_abi(), "the kernel's own answer");
    }
}
