//! The places providers run servers, each made by the test in a process tree of its own, nothing
//! machine-wide changed (`tests/environments.rs`):
//!
//! - **Docker's default profile**: a seccomp filter standing in for Docker's default one, which
//!   for a process without `CAP_SYS_ADMIN` refuses `clone` with any namespace flag, `unshare`,
//!   `setns`, `mount`, `umount2`, `pivot_root` and the new mount API with `EPERM` and `clone3`
//!   with `ENOSYS` (and allows the `landlock_*` calls), with Docker's default capabilities as the
//!   bounding set.
//! - **A kernel without Landlock**: the `landlock_*` calls answer `ENOSYS`, as on a kernel built
//!   without it (or a container profile that refuses them).
//! - **No capabilities**: root with an empty bounding set (a container run with `--cap-drop=ALL`).
//! - **User namespaces forbidden by a sysctl**: `user.max_user_namespaces = 0`, written in a user
//!   namespace of the test's own (the value is per user namespace), every id mapped.
//! - **Root of a rootless container**: the ordinary test user, mapped to root of a user namespace
//!   that holds that one id (as `podman` without sub-ids, or `unshare -r`).
//! - **Ubuntu's AppArmor restriction**: namespaces can be made but hold no capability, so every
//!   mount in them fails; a filter refusing the mount calls stands in for it.
//! - **gVisor** (`runsc do`, where it is installed): a real sandboxing runtime, whose kernel has
//!   no Landlock.
//! - **Nested in our own step**: `cli-sandbox step` of a chat of its own, whose seccomp filter
//!   refuses namespaces and `openat2`, and whose Landlock ruleset the inner one stacks on.

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::process::Command;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use crate::users::TestUser;

/// One environment of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    /// A stand-in for Docker's default seccomp profile and capabilities.
    DockerDefault,
    /// A stand-in for a kernel without Landlock.
    NoLandlock,
    /// Root without any capability.
    NoCapabilities,
    /// `user.max_user_namespaces = 0` in a user namespace of the test's own.
    UserNamespacesForbidden,
    /// Root of a user namespace that maps one id (a rootless container).
    RootlessContainerRoot,
    /// A stand-in for Ubuntu's AppArmor restriction of unprivileged user namespaces.
    AppArmorRestricted,
    /// Inside `cli-sandbox step` (the binary given to [`Environment::command`] is the outer
    /// sandbox too).
    NestedStep,
    /// gVisor's `runsc do`, root only.
    GVisor,
}

impl Environment {
    /// Every environment, in the order the tests run them.
    pub const ALL: [Environment; 8] = [
        Environment::DockerDefault,
        Environment::NoLandlock,
        Environment::NoCapabilities,
        Environment::UserNamespacesForbidden,
        Environment::RootlessContainerRoot,
        Environment::AppArmorRestricted,
        Environment::NestedStep,
        Environment::GVisor,
    ];

    /// Its name in test output.
    pub fn name(self) -> &'static str {
        match self {
            Environment::DockerDefault => "a stand-in for Docker's default profile",
            Environment::NoLandlock => "a stand-in for a kernel without Landlock",
            Environment::NoCapabilities => "root without capabilities",
            Environment::UserNamespacesForbidden => "user.max_user_namespaces = 0",
            Environment::RootlessContainerRoot => "root of a rootless container",
            Environment::AppArmorRestricted => "a stand-in for Ubuntu's AppArmor restriction",
            Environment::NestedStep => "nested in our own step",
            Environment::GVisor => "gVisor (runsc do)",
        }
    }

    /// Whether Landlock is there (else nothing confines).
    pub fn has_landlock(self) -> bool {
        !matches!(self, Environment::NoLandlock | Environment::GVisor)
    }

    /// `program` run in this environment, as `user` (`None`: this process's user). Only the
    /// environments that make sense for a user are given one (the others ignore it: they are
    /// root's by nature, or made from the test user themselves).
    pub fn command(self, user: Option<&TestUser>, program: impl AsRef<OsStr>) -> Command {
        let program = program.as_ref();
        let mut cmd;
        match self {
            Environment::DockerDefault => {
                cmd = Command::new("setpriv");
                cmd.arg(format!("--bounding-set=-all,{DOCKER_CAPS}"));
                as_user(&mut cmd, user);
                cmd.arg("--").arg(program);
                load(&mut cmd, vec![docker_eperm(), docker_enosys()]);
            }
            Environment::NoLandlock => {
                cmd = Command::new("setpriv");
                as_user(&mut cmd, user);
                cmd.arg("--").arg(program);
                load(&mut cmd, vec![no_landlock()]);
            }
            Environment::NoCapabilities => {
                cmd = Command::new("setpriv");
                cmd.args(["--bounding-set=-all", "--inh-caps=-all", "--"]);
                cmd.arg(program);
            }
            Environment::UserNamespacesForbidden => {
                cmd = Command::new(program);
                in_own_user_namespace_without_more(&mut cmd);
            }
            Environment::RootlessContainerRoot => {
                cmd = match user {
                    Some(user) => user.command("unshare"),
                    None => Command::new("unshare"),
                };
                cmd.args(["--user", "--map-root-user", "--"]).arg(program);
            }
            Environment::AppArmorRestricted => {
                cmd = Command::new("setpriv");
                as_user(&mut cmd, user);
                cmd.arg("--").arg(program);
                load(&mut cmd, vec![mounts_refused()]);
            }
            Environment::GVisor => {
                cmd = Command::new("runsc");
                cmd.args(["--network=none", "do"]).arg(program);
            }
            Environment::NestedStep => {
                // The outer chat has a home of its own (whose app folder it closes); the program
                // inside gets the HOME the caller sets on the returned command.
                let outer = outer_state_root(user);
                cmd = crate::users::command_as(user, "/bin/sh");
                cmd.args([
                    "-c",
                    "inner=$HOME; outer=$1; HOME=$outer/home; export HOME; shift; exec \"$0\" --state-root \"$outer/state\" --workspace-docs \"$outer/workspace-docs\" step --chat outer -- /usr/bin/env HOME=\"$inner\" \"$@\"",
                ])
                .arg(crate::cli_sandbox())
                .arg(&outer)
                .arg(visible_in_a_chat(program));
            }
        }
        cmd
    }
}

/// `program` as the outer chat can run it. A chat's /tmp is its own (issue 27), so a binary under
/// the machine's temporary folder (a checkout in /tmp, as a CI job may make) is not there inside:
/// the test's binaries are then copied, with the helper beside them, into a root-owned folder of
/// `/var/lib` (the environments are made by root) and run from there.
fn visible_in_a_chat(program: &std::ffi::OsStr) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;
    static COPIES: OnceLock<PathBuf> = OnceLock::new();
    let program = Path::new(program);
    let tmp = std::env::temp_dir();
    let tmp = tmp.canonicalize().unwrap_or(tmp);
    if !program.starts_with(&tmp)
        && !program.starts_with("/tmp")
        && !program.starts_with("/var/tmp")
    {
        return program.to_owned();
    }
    let dir = COPIES.get_or_init(|| {
        // Earlier runs' copies, whose test process is gone, go first.
        for entry in std::fs::read_dir("/var/lib")
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("cli-sandbox-env-bin-")
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = PathBuf::from(format!(
            "/var/lib/cli-sandbox-env-bin-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("a folder for the binaries in /var/lib");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let from = program.parent().expect("the binary's folder");
        for name in ["cli-sandbox", "cli-sandbox-helper"] {
            if from.join(name).exists() {
                std::fs::copy(from.join(name), dir.join(name)).expect("copy the binary");
            }
        }
        dir
    });
    dir.join(program.file_name().expect("the binary's name"))
}

/// The state root of the outer step's chat: one per user and test process, in the temporary
/// folder (left there: a few empty folders, which the next run's names do not reuse).
pub fn outer_state_root(user: Option<&TestUser>) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "cli-sandbox-env-outer-{}-{}",
        std::process::id(),
        user.map_or(0, |u| u.uid)
    ));
    for sub in ["state", "workspace-docs", "home"] {
        std::fs::create_dir_all(dir.join(sub)).expect("the outer step's state root");
    }
    if let Some(user) = user {
        user.own(&dir);
    }
    dir
}

/// The child enters a user namespace of its own, in which this process (root) maps every id as
/// it is, then sets `user.max_user_namespaces` to 0 there (the value is per user namespace) and
/// runs the program as root of that namespace. The maps are written from here, by a thread
/// that hears the child's pid through a pipe: a process cannot map more than its own id into a
/// namespace it has just entered.
fn in_own_user_namespace_without_more(cmd: &mut Command) {
    use std::io::{Read, Write};
    let (mut pid_read, pid_write) = std::io::pipe().expect("a pipe");
    let (go_read, mut go_write) = std::io::pipe().expect("a pipe");
    std::thread::spawn(move || {
        let mut pid = [0u8; 4];
        if pid_read.read_exact(&mut pid).is_err() {
            return; // never spawned
        }
        let pid = i32::from_ne_bytes(pid);
        for (file, text) in [("uid_map", "0 0 4294967295"), ("gid_map", "0 0 4294967295")] {
            let _ = std::fs::write(format!("/proc/{pid}/{file}"), text);
        }
        let _ = go_write.write_all(b"g");
    });
    use std::os::fd::AsRawFd;
    let (pid_write, go_read) = (pid_write, go_read);
    // SAFETY: the closure runs in the forked child before exec and only makes system calls
    // (unshare, getpid, read, write, open, close) on values prepared before the fork.
    unsafe { cmd.pre_exec(move || enter_without_more(pid_write.as_raw_fd(), go_read.as_raw_fd())) };
}

/// The child's part of [`in_own_user_namespace_without_more`]: system calls only.
fn enter_without_more(pid_write: libc::c_int, go_read: libc::c_int) -> std::io::Result<()> {
    let check = |rc: libc::c_long| {
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    // SAFETY: unshare takes flags only.
    check(unsafe { libc::unshare(libc::CLONE_NEWUSER) } as libc::c_long)?;
    // SAFETY: getpid cannot fail and touches no memory.
    let pid = unsafe { libc::getpid() }.to_ne_bytes();
    // SAFETY: writes four bytes from a local into a pipe we hold.
    check(unsafe { libc::write(pid_write, pid.as_ptr().cast(), 4) } as libc::c_long)?;
    let mut byte = 0u8;
    // SAFETY: reads one byte into a local from a pipe we hold.
    check(unsafe { libc::read(go_read, (&mut byte as *mut u8).cast(), 1) } as libc::c_long)?;
    // SAFETY: opens a static C string.
    let fd = unsafe {
        libc::open(
            c"/proc/sys/user/max_user_namespaces".as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC,
        )
    };
    check(fd as libc::c_long)?;
    // SAFETY: writes two bytes of a static into the descriptor just opened.
    let written = unsafe { libc::write(fd, b"0\n".as_ptr().cast(), 2) };
    // SAFETY: closes the descriptor just opened, which nothing else holds.
    unsafe { libc::close(fd) };
    check(written as libc::c_long)
}

/// Docker's default capabilities, as `setpriv` names them.
const DOCKER_CAPS: &str = "+chown,+dac_override,+fowner,+fsetid,+kill,+setgid,+setuid,+setpcap,+net_bind_service,+net_raw,+sys_chroot,+mknod,+audit_write,+setfcap";

fn as_user(cmd: &mut Command, user: Option<&TestUser>) {
    if let Some(user) = user {
        cmd.arg(format!("--reuid={}", user.uid))
            .arg(format!("--regid={}", user.gid))
            .arg("--init-groups");
    }
}

/// Loads the filters in the child, before it runs `setpriv` (and so whatever it becomes).
fn load(cmd: &mut Command, filters: Vec<BpfProgram>) {
    // SAFETY: the closure runs in the forked child before exec and only makes system calls
    // (prctl and seccomp, through seccompiler) on programs built before the fork.
    unsafe {
        cmd.pre_exec(move || {
            for filter in &filters {
                seccompiler::apply_filter(filter).map_err(std::io::Error::other)?;
            }
            Ok(())
        })
    };
}

fn arch() -> seccompiler::TargetArch {
    std::env::consts::ARCH
        .try_into()
        .expect("a seccomp architecture")
}

fn build(calls: &[i64], conditional: Vec<(i64, SeccompRule)>, errno: u32) -> BpfProgram {
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> = Default::default();
    for nr in calls {
        rules.insert(*nr, Vec::new());
    }
    for (nr, rule) in conditional {
        rules.entry(nr).or_default().push(rule);
    }
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno),
        arch(),
    )
    .and_then(BpfProgram::try_from)
    .expect("a filter for the environment")
}

/// The mount calls (and the new mount API), refused.
const MOUNT_CALLS: [i64; 10] = [
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
];

/// Docker's refusals with `EPERM` for a process without `CAP_SYS_ADMIN`.
fn docker_eperm() -> BpfProgram {
    let mut calls = MOUNT_CALLS.to_vec();
    calls.extend([libc::SYS_unshare, libc::SYS_setns]);
    // Docker allows clone only when (flags & 0x7E020000) == 0: each namespace flag refuses it.
    let flags = [
        libc::CLONE_NEWNS,
        libc::CLONE_NEWCGROUP,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
    ];
    let clone = flags
        .iter()
        .map(|&flag| {
            let flag = flag as u64;
            let cond = SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )
            .expect("a condition");
            (
                libc::SYS_clone,
                SeccompRule::new(vec![cond]).expect("a rule"),
            )
        })
        .collect();
    build(&calls, clone, libc::EPERM as u32)
}

/// Docker's `clone3`: `ENOSYS`, so that the C library falls back to `clone`.
fn docker_enosys() -> BpfProgram {
    build(&[libc::SYS_clone3], Vec::new(), libc::ENOSYS as u32)
}

/// A kernel without Landlock.
fn no_landlock() -> BpfProgram {
    build(
        &[
            libc::SYS_landlock_create_ruleset,
            libc::SYS_landlock_add_rule,
            libc::SYS_landlock_restrict_self,
        ],
        Vec::new(),
        libc::ENOSYS as u32,
    )
}

/// Namespaces without capabilities in them: every mount refused.
fn mounts_refused() -> BpfProgram {
    build(&MOUNT_CALLS, Vec::new(), libc::EPERM as u32)
}
