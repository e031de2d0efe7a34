//! The seccomp part of the Linux plan, built with `seccompiler`.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::plan::SeccompPlan;

const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;

/// The filters to install, in order. Two, because seccompiler gives one action per filter:
/// EPERM for what is refused, ENOSYS for `clone3` (its flags sit behind a pointer that a
/// filter cannot read, and ENOSYS makes the C library fall back to `clone`, whose flags it can).
pub fn filters(plan: &SeccompPlan) -> Result<Vec<BpfProgram>, String> {
    let arch = target_arch()?;
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let always = |map: &mut BTreeMap<i64, Vec<SeccompRule>>, nr: libc::c_long| {
        map.insert(nr, Vec::new());
    };
    let on = |arg: u8, op: SeccompCmpOp, value: u64| -> Result<SeccompRule, String> {
        let cond = SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
            .map_err(|e| e.to_string())?;
        SeccompRule::new(vec![cond]).map_err(|e| e.to_string())
    };

    if plan.refuse_unix_socket_create {
        refused.insert(
            libc::SYS_socket,
            vec![on(0, SeccompCmpOp::Eq, libc::AF_UNIX as u64)?],
        );
    }
    if plan.refuse_namespace_and_mount_calls {
        for nr in [
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_pivot_root,
            libc::SYS_setns,
            libc::SYS_unshare,
            libc::SYS_move_mount,
            libc::SYS_open_tree,
            libc::SYS_fsopen,
            libc::SYS_fsconfig,
            libc::SYS_fsmount,
            libc::SYS_fspick,
            libc::SYS_mount_setattr,
        ] {
            always(&mut refused, nr);
        }
        let namespace_flags = [
            libc::CLONE_NEWNS,
            libc::CLONE_NEWUSER,
            libc::CLONE_NEWPID,
            libc::CLONE_NEWNET,
            libc::CLONE_NEWUTS,
            libc::CLONE_NEWIPC,
            libc::CLONE_NEWCGROUP,
        ];
        let mut clone_rules = Vec::new();
        for flag in namespace_flags {
            let flag = flag as u64;
            clone_rules.push(on(0, SeccompCmpOp::MaskedEq(flag), flag)?);
        }
        refused.insert(libc::SYS_clone, clone_rules);
    }
    if plan.refuse_terminal_injection {
        refused.insert(
            libc::SYS_ioctl,
            vec![
                on(1, SeccompCmpOp::Eq, TIOCSTI)?,
                on(1, SeccompCmpOp::Eq, TIOCLINUX)?,
            ],
        );
    }
    if plan.refuse_keyring {
        for nr in [libc::SYS_keyctl, libc::SYS_add_key, libc::SYS_request_key] {
            always(&mut refused, nr);
        }
    }

    let mut programs = Vec::new();
    let eperm = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    programs.push(BpfProgram::try_from(eperm).map_err(|e| e.to_string())?);

    if plan.refuse_namespace_and_mount_calls {
        let mut clone3 = BTreeMap::new();
        clone3.insert(libc::SYS_clone3, Vec::new());
        let enosys = SeccompFilter::new(
            clone3,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            arch,
        )
        .map_err(|e| e.to_string())?;
        programs.push(BpfProgram::try_from(enosys).map_err(|e| e.to_string())?);
    }
    Ok(programs)
}

fn target_arch() -> Result<TargetArch, String> {
    match std::env::consts::ARCH {
        "x86_64" => Ok(TargetArch::x86_64),
        "aarch64" => Ok(TargetArch::aarch64),
        "riscv64" => Ok(TargetArch::riscv64),
        other => Err(format!("seccomp filters are not built for {other}")),
    }
}
