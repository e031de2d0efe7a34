//! Applying a [`LinuxPlan`] to this process: the `cli-sandbox exec` helper.
//!
//! Runs single-threaded (no async runtime: `unshare(CLONE_NEWUSER)` refuses a threaded
//! process). Three processes take part:
//!
//! - the helper itself, which enters the user and mount namespaces, builds the mounts, and then
//!   only waits: it forwards signals sent to it (by `kill`, not by the terminal) and ends with the
//!   program's exit status, or by the program's signal;
//! - an init, pid 1 of the new PID namespace, which mounts `/proc`, drops every capability,
//!   restricts itself with Landlock and seccomp, starts the program and reaps orphans; when the
//!   program ends it exits, and the kernel ends every process the chat left behind;
//! - the program, exec'd by init's child, confined by what init applied.
//!
//! If any step of the plan fails, the program is not started: exit status 2 and the reason.

use std::collections::HashSet;
use std::ffi::{CString, OsString};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use landlock::{
    AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::plan::{FsRight, LinuxPlan, MountStep, NamespacePlan, PLAN_VERSION};
use super::seccomp;
use sandbox_core::Access as GrantAccess;

/// Why the plan could not be applied. The program was not started.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {detail}")]
pub struct ApplyError {
    pub step: String,
    pub detail: String,
}

fn fail(step: impl Into<String>, detail: impl ToString) -> ApplyError {
    ApplyError {
        step: step.into(),
        detail: detail.to_string(),
    }
}

fn os_fail(step: impl Into<String>) -> ApplyError {
    fail(step, io::Error::last_os_error())
}

fn cstr(path: &Path) -> Result<CString, ApplyError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| fail(format!("path {}", path.display()), "contains a NUL byte"))
}

/// The kernel's Landlock ABI (0 when Landlock is missing or disabled).
pub fn kernel_landlock_abi() -> u32 {
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

/// Applies the plan and runs `argv` confined. Returns only on failure; on success this process
/// ends with the program's status.
pub fn exec(plan: &LinuxPlan, argv: &[OsString]) -> ApplyError {
    match exec_inner(plan, argv) {
        Ok(never) => match never {},
        Err(e) => e,
    }
}

enum Never {}

fn exec_inner(plan: &LinuxPlan, argv: &[OsString]) -> Result<Never, ApplyError> {
    if plan.version != PLAN_VERSION {
        return Err(fail(
            "plan",
            format!(
                "version {} is not {PLAN_VERSION}: compile it again with this cli-sandbox",
                plan.version
            ),
        ));
    }
    let kernel_abi = kernel_landlock_abi();
    if kernel_abi < plan.landlock.abi {
        return Err(fail(
            "landlock",
            format!(
                "the plan needs Landlock ABI {} and this kernel has {kernel_abi}",
                plan.landlock.abi
            ),
        ));
    }
    if argv.is_empty() {
        return Err(fail("program", "no program given"));
    }
    let program: Vec<CString> = argv
        .iter()
        .map(|a| {
            CString::new(a.as_bytes())
                .map_err(|_| fail("program", "an argument contains a NUL byte"))
        })
        .collect::<Result<_, _>>()?;
    let workdir = cstr(&plan.workdir)?;
    let filters = seccomp::filters(&plan.seccomp).map_err(|e| fail("seccomp", e))?;

    for dir in &plan.create_dirs {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(|e| fail(format!("create {}", dir.display()), e))?;
    }
    for dir in &plan.create_home_dirs {
        create_home_dir(dir)?;
    }
    let Some(ns) = &plan.namespaces else {
        return exec_in_place(plan, &filters, &program, &workdir);
    };
    check_single_threaded()?;

    // SAFETY: plain syscalls on this (single-threaded) process.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let (status_read, status_write) = pipe()?;
    let (go_read, go_write) = pipe()?;
    let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::SIGCHLD;
    // SAFETY: a fork-like clone (no new stack) of a single-threaded process; the child runs
    // only `run_init`, which ends in exec or _exit.
    let init = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    } as libc::pid_t;
    if init < 0 {
        return Err(os_fail("clone into new user, mount and PID namespaces"));
    }
    if init == 0 {
        drop(status_read);
        drop(go_write);
        run_init(
            plan,
            ns,
            &filters,
            &program,
            &workdir,
            go_read,
            status_write,
        );
    }
    drop(status_write);
    drop(go_read);
    let mapped = write_id_maps(init, uid, gid);
    let mut go = std::fs::File::from(go_write);
    if let Err(e) = mapped {
        // SAFETY: ending the child we just made.
        unsafe { libc::kill(init, libc::SIGKILL) };
        return Err(e);
    }
    let _ = go.write_all(b"g");
    drop(go);
    wait_for_init(init, status_read)
}

/// Creates a folder in the person's home and every missing folder above it, mode 0700, each owned
/// like the folder that holds it (the helper may run as root for someone's home).
fn create_home_dir(dir: &Path) -> Result<(), ApplyError> {
    use std::os::unix::fs::MetadataExt;
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|a| a.symlink_metadata().is_err())
        .collect();
    for folder in missing.into_iter().rev() {
        let step = || format!("create {}", folder.display());
        let parent = folder.parent().unwrap_or(Path::new("/"));
        let owner = std::fs::metadata(parent).map_err(|e| fail(step(), e))?;
        mkdir(folder, 0o700)?;
        // SAFETY: plain syscall; geteuid has no failure.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::lchown(folder, Some(owner.uid()), Some(owner.gid()))
                .map_err(|e| fail(step(), e))?;
        }
    }
    Ok(())
}

fn check_single_threaded() -> Result<(), ApplyError> {
    let threads = std::fs::read_dir("/proc/self/task")
        .map_err(|e| fail("count threads", e))?
        .count();
    if threads != 1 {
        return Err(fail(
            "exec helper",
            format!("runs {threads} threads; it must be single-threaded to enter namespaces"),
        ));
    }
    Ok(())
}

/// Writes the id maps of `child`, a process that entered a new user namespace. Done by the
/// parent: a map wider than one's own id needs the credentials of the parent namespace.
fn write_id_maps(child: libc::pid_t, uid: libc::uid_t, gid: libc::gid_t) -> Result<(), ApplyError> {
    let write = |file: &str, text: &str| {
        let path = format!("/proc/{child}/{file}");
        std::fs::write(&path, text).map_err(|e| fail(format!("write {path}"), e))
    };
    if uid == 0 {
        // Root owns the machine: keep every id as it is, so files keep their owners.
        write("uid_map", "0 0 4294967295")?;
        write("gid_map", "0 0 4294967295")?;
    } else {
        write("setgroups", "deny")?;
        write("uid_map", &format!("{uid} {uid} 1"))?;
        write("gid_map", &format!("{gid} {gid} 1"))?;
    }
    Ok(())
}

fn mount(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Result<(), ApplyError> {
    let source_c = source.map(cstr).transpose()?;
    let target_c = cstr(target)?;
    let fstype_c = fstype.map(|s| CString::new(s).expect("static fs type"));
    let data_c = data.map(|s| CString::new(s).expect("static mount data"));
    // SAFETY: every pointer is a valid C string or null, alive for the call.
    let rc = unsafe {
        libc::mount(
            source_c.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            target_c.as_ptr(),
            fstype_c.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            flags,
            data_c
                .as_ref()
                .map_or(std::ptr::null(), |s| s.as_ptr().cast()),
        )
    };
    if rc != 0 {
        return Err(os_fail(format!("mount on {}", target.display())));
    }
    Ok(())
}

/// Makes a bind mount read-only, with every mount beneath it: a folder mounted inside a
/// read-only grant on the host is copied into the sandbox by the recursive bind, and must not
/// stay writable. `mount_setattr` changes that one attribute only, so the flags the kernel locks
/// in a user namespace (nosuid, nodev, noexec) stay as they are.
fn make_read_only(target: &Path) -> Result<(), ApplyError> {
    /// `struct mount_attr` of `<linux/mount.h>`.
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    let target_c = cstr(target)?;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a valid C string and a struct of the size passed, alive for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            target_c.as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(os_fail(format!("make {} read-only", target.display())));
    }
    Ok(())
}

/// An `O_PATH` handle on a folder or a device, opened only if the path is still the planned one:
/// the kernel refuses to follow any symlink on the way (`RESOLVE_NO_SYMLINKS`), so a symlink
/// swapped in since the plan was made cannot lead the bind elsewhere. (Checking the opened path
/// afterwards through `/proc/self/fd` costs a lookup in `/proc` per grant.)
fn open_source(path: &Path, dir: bool) -> Result<OwnedFd, ApplyError> {
    let mut flags = libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    if dir {
        flags |= libc::O_DIRECTORY;
    }
    let c = cstr(path)?;
    // SAFETY: `open_how` is plain integers; zero is a valid value of each.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: valid C string and `open_how` of the size passed; the descriptor is owned below.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ELOOP) {
            return Err(fail(
                format!("open {}", path.display()),
                "a symlink is now on its way: the layout changed since the plan was made, plan again",
            ));
        }
        return Err(fail(format!("open {}", path.display()), err));
    }
    // SAFETY: fd was just opened and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

fn fd_path(fd: RawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{fd}"))
}

fn mkdir(path: &Path, mode: u32) -> Result<(), ApplyError> {
    match std::fs::DirBuilder::new().mode(mode).create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(fail(format!("mkdir {}", path.display()), e)),
    }
}

fn touch(path: &Path, mode: u32) -> Result<(), ApplyError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(mode)
        .open(path)
        .map(drop)
        .map_err(|e| fail(format!("create {}", path.display()), e))
}

/// A small read-only tmpfs holding the empty, unreadable stand-ins for what is hidden. It is
/// detached once everything is bound (the binds keep it alive), so nothing names it afterwards.
const STAND_INS: &str = "/dev/.cli-sandbox-stand-ins";
const HIDDEN_FILE: &str = "/dev/.cli-sandbox-stand-ins/file";
const HIDDEN_DIR: &str = "/dev/.cli-sandbox-stand-ins/dir";
const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

fn build_mounts(ns: &NamespacePlan) -> Result<(), ApplyError> {
    // Everything a mask hides must be opened before the mask goes on. Opened in the order the
    // binds below use them, so that each bind takes the next one (a lookup by path would cost
    // the square of the grants).
    let mut sources: Vec<OwnedFd> = Vec::new();
    for step in &ns.mounts {
        if let MountStep::Mask { bind_back, .. } = step {
            for b in bind_back {
                sources.push(open_source(&b.path, true)?);
            }
        }
    }
    let mut sources = sources.into_iter();
    let mut devices: Vec<(&str, OwnedFd)> = Vec::new();
    for name in DEVICES {
        let path = Path::new("/dev").join(name);
        if path.exists() {
            devices.push((name, open_source(&path, false)?));
        }
    }

    for step in &ns.mounts {
        if let MountStep::Pin { path } = step {
            mount(Some(path), path, None, libc::MS_BIND | libc::MS_REC, None)?;
        }
    }

    if ns.minimal_dev {
        let dev = Path::new("/dev");
        mount(
            Some(Path::new("tmpfs")),
            dev,
            Some("tmpfs"),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            Some("mode=0755,size=64k"),
        )?;
        for (name, fd) in &devices {
            let target = dev.join(name);
            touch(&target, 0o666)?;
            mount(
                Some(&fd_path(fd.as_raw_fd())),
                &target,
                None,
                libc::MS_BIND,
                None,
            )?;
        }
        // A pty filesystem of the sandbox's own: new ptys work (a CLI's shell tool opens them)
        // and the ptys of processes outside are not there to be opened. The terminal the
        // program inherited keeps working through its open descriptors and /dev/tty.
        mkdir(&dev.join("pts"), 0o755)?;
        mount(
            Some(Path::new("devpts")),
            &dev.join("pts"),
            Some("devpts"),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            Some("newinstance,ptmxmode=0666,mode=0620"),
        )?;
        std::os::unix::fs::symlink("pts/ptmx", dev.join("ptmx"))
            .map_err(|e| fail("symlink /dev/ptmx", e))?;
        mkdir(&dev.join("shm"), 0o1777)?;
        mount(
            Some(Path::new("tmpfs")),
            &dev.join("shm"),
            Some("tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some("mode=1777"),
        )?;
        for (link, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            std::os::unix::fs::symlink(target, dev.join(link))
                .map_err(|e| fail(format!("symlink /dev/{link}"), e))?;
        }
    }
    let stand_ins = Path::new(STAND_INS);
    mkdir(stand_ins, 0o700)?;
    mount(
        Some(Path::new("tmpfs")),
        stand_ins,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        Some("mode=0700,size=4k"),
    )?;
    touch(Path::new(HIDDEN_FILE), 0)?;
    mkdir(Path::new(HIDDEN_DIR), 0)?;
    mount(
        None,
        stand_ins,
        None,
        libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )?;

    for step in &ns.mounts {
        if let MountStep::Mask { root, bind_back } = step {
            mount(
                Some(Path::new("tmpfs")),
                root,
                Some("tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                Some("mode=0111,size=64k"),
            )?;
            // Grants share their upper folders (`workflows/`): each is made once.
            let mut made: HashSet<PathBuf> = HashSet::new();
            for b in bind_back {
                let relative = b.path.strip_prefix(root).unwrap_or(Path::new(""));
                let mut at = root.clone();
                for part in relative.components() {
                    at.push(part);
                    if made.insert(at.clone()) {
                        mkdir(&at, 0o111)?;
                    }
                }
                let fd = sources
                    .next()
                    .ok_or_else(|| fail("bind back", "source not opened"))?;
                mount(
                    Some(&fd_path(fd.as_raw_fd())),
                    &b.path,
                    None,
                    libc::MS_BIND | libc::MS_REC,
                    None,
                )?;
                if b.access == GrantAccess::ReadOnly {
                    make_read_only(&b.path)?;
                }
            }
            mount(
                None,
                root,
                None,
                libc::MS_REMOUNT
                    | libc::MS_RDONLY
                    | libc::MS_NOSUID
                    | libc::MS_NODEV
                    | libc::MS_NOEXEC,
                None,
            )?;
        }
    }
    for step in &ns.mounts {
        match step {
            MountStep::Hide { path, dir } => {
                let source = if *dir { HIDDEN_DIR } else { HIDDEN_FILE };
                mount(Some(Path::new(source)), path, None, libc::MS_BIND, None)?;
            }
            MountStep::ReadOnly { path, dir } => {
                let fd = open_source(path, *dir)?;
                mount(
                    Some(&fd_path(fd.as_raw_fd())),
                    path,
                    None,
                    libc::MS_BIND | libc::MS_REC,
                    None,
                )?;
                make_read_only(path)?;
            }
            _ => {}
        }
    }
    let stand_ins_c = cstr(stand_ins)?;
    // SAFETY: valid C string.
    if unsafe { libc::umount2(stand_ins_c.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(os_fail("detach the stand-ins"));
    }
    std::fs::remove_dir(stand_ins).map_err(|e| fail("remove the stand-ins' folder", e))?;
    if ns.minimal_dev {
        mount(
            None,
            Path::new("/dev"),
            None,
            libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NOEXEC,
            None,
        )?;
    }
    Ok(())
}

fn pipe() -> Result<(OwnedFd, OwnedFd), ApplyError> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_fail("pipe"));
    }
    // SAFETY: both descriptors were just created and are owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Signals a waiting process passes on to the one it waits for, when sent by `kill` (a
/// terminal's signals reach the program directly: it shares our process group).
const FORWARDED: [libc::c_int; 7] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
];

fn signal_set(extra: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialize and fill the set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in FORWARDED.iter().chain(extra) {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Waits for `child` while forwarding signals sent with `kill`; returns its wait status.
fn wait_forwarding(child: libc::pid_t, set: &libc::sigset_t) -> libc::c_int {
    loop {
        // SAFETY: zeroed siginfo is a valid out-parameter.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: set and info are valid.
        let sig = unsafe { libc::sigwaitinfo(set, &mut info) };
        if sig < 0 {
            continue;
        }
        if sig == libc::SIGCHLD {
            loop {
                let mut status = 0;
                // SAFETY: plain wait on our own children.
                let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
                if pid == child {
                    return status;
                }
                if pid <= 0 {
                    break;
                }
            }
        } else if info.si_code == libc::SI_USER || info.si_code == libc::SI_QUEUE {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child, sig) };
        }
    }
}

fn wait_for_init(init: libc::pid_t, status_read: OwnedFd) -> Result<Never, ApplyError> {
    let set = signal_set(&[libc::SIGCHLD]);
    // SAFETY: blocking signals for sigwaitinfo; the set is valid.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    let init_status = wait_forwarding(init, &set);
    let mut report = Vec::new();
    let _ = std::fs::File::from(status_read).read_to_end(&mut report);
    let text = String::from_utf8_lossy(&report);
    if let Some(error) = text.strip_prefix("error ") {
        return Err(fail("confine", error.trim_end()));
    }
    let status: libc::c_int = match text.strip_prefix("status ") {
        Some(s) => s.trim().parse().unwrap_or(init_status),
        None => init_status,
    };
    end_like(status)
}

/// Ends this process the way the program ended: the same exit code, or the same signal.
fn end_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: restoring the default action, unblocking and raising ends this process.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(sig);
        }
        std::process::exit(128 + sig);
    }
    std::process::exit(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        1
    });
}

/// Pid 1 of the chat's PID namespace.
fn run_init(
    plan: &LinuxPlan,
    ns: &NamespacePlan,
    filters: &[seccompiler::BpfProgram],
    program: &[CString],
    workdir: &CString,
    go_read: OwnedFd,
    status_write: OwnedFd,
) -> ! {
    let mut report = std::fs::File::from(status_write);
    // SAFETY: the chat must not outlive the helper waiting for it.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let mut go = [0u8; 1];
    if std::fs::File::from(go_read).read_exact(&mut go).is_err() {
        // SAFETY: the parent gave up (it reported why); leave quietly.
        unsafe { libc::_exit(2) };
    }
    let set = signal_set(&[libc::SIGCHLD]);
    // SAFETY: valid set.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };

    let setup = mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )
    .and_then(|()| build_mounts(ns))
    .and_then(|()| confine(plan, ns, filters));
    if let Err(e) = setup {
        let _ = write!(report, "error {e}");
        // SAFETY: leaving without running destructors of the parent's state.
        unsafe { libc::_exit(2) };
    }

    let status = match start_program(program, workdir) {
        Ok(pid) => wait_forwarding(pid, &set),
        // Ends as if the program had exited with this code, like a shell that cannot run it.
        Err(code) => code << 8,
    };
    let _ = write!(report, "status {status}");
    // SAFETY: as above. Leaving pid 1 ends every other process of the namespace.
    unsafe { libc::_exit(0) };
}

/// Starts the program in the working folder with no signal blocked. `posix_spawn` (a vfork
/// under the hood) rather than fork: nothing of this process's memory is copied, which saves
/// a part of every launch (see BENCHMARKS.md). The folder is entered here first, so that not
/// entering it is told apart from not running the program. On failure, says why on stderr and
/// returns the exit code a shell gives: 127 for a program that is missing, 126 otherwise.
fn start_program(program: &[CString], workdir: &CString) -> Result<libc::pid_t, libc::c_int> {
    // SAFETY: chdir with a valid C string.
    if unsafe { libc::chdir(workdir.as_ptr()) } != 0 {
        eprintln!(
            "cli-sandbox exec: cannot enter the working folder {}: {}",
            workdir.to_string_lossy(),
            io::Error::last_os_error()
        );
        return Err(126);
    }
    let mut argv: Vec<*mut libc::c_char> = program.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    let mut pid: libc::pid_t = 0;
    // SAFETY: the attribute is initialized before use and destroyed after; argv is a
    // NULL-terminated array of C strings alive for the call; environ is this process's own.
    let rc = unsafe {
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawnattr_init(&mut attr);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::posix_spawnattr_setsigmask(&mut attr, &empty);
        libc::posix_spawnattr_setflags(&mut attr, libc::POSIX_SPAWN_SETSIGMASK as libc::c_short);
        let rc = libc::posix_spawnp(
            &mut pid,
            argv[0],
            std::ptr::null(),
            &attr,
            argv.as_ptr(),
            libc::environ,
        );
        libc::posix_spawnattr_destroy(&mut attr);
        rc
    };
    if rc == 0 {
        return Ok(pid);
    }
    let err = io::Error::from_raw_os_error(rc);
    eprintln!(
        "cli-sandbox exec: cannot run {}: {err}",
        program[0].to_string_lossy()
    );
    Err(if err.kind() == io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// The fallback without namespaces: confine this very process and exec the program (it keeps
/// our pid).
fn exec_in_place(
    plan: &LinuxPlan,
    filters: &[seccompiler::BpfProgram],
    program: &[CString],
    workdir: &CString,
) -> Result<Never, ApplyError> {
    close_inherited_descriptors()?;
    // SAFETY: plain syscall.
    if unsafe { libc::geteuid() } == 0 {
        drop_capabilities()?;
    }
    restrict_landlock(plan)?;
    for filter in filters {
        seccompiler::apply_filter(filter).map_err(|e| fail("seccomp", e))?;
    }
    exec_program(program, workdir)
}

/// Becomes the program (the fallback without namespaces: it keeps our pid). On failure, says
/// why and exits as a shell would: 127 for a missing program, 126 otherwise.
fn exec_program(program: &[CString], workdir: &CString) -> ! {
    // SAFETY: chdir and execvp with valid C strings; argv is NULL-terminated and alive.
    unsafe {
        if libc::chdir(workdir.as_ptr()) != 0 {
            eprintln!(
                "cli-sandbox exec: cannot enter the working folder {}: {}",
                workdir.to_string_lossy(),
                io::Error::last_os_error()
            );
            libc::_exit(126);
        }
        let mut argv: Vec<*const libc::c_char> = program.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        libc::execvp(argv[0], argv.as_ptr());
    }
    let err = io::Error::last_os_error();
    eprintln!(
        "cli-sandbox exec: cannot run {}: {err}",
        program[0].to_string_lossy()
    );
    // SAFETY: leaving without running destructors.
    unsafe {
        libc::_exit(if err.kind() == io::ErrorKind::NotFound {
            127
        } else {
            126
        })
    }
}

/// Descriptors above stderr would outlive the confinement: a folder opened outside is a way
/// back into it. They are closed at exec.
fn close_inherited_descriptors() -> Result<(), ApplyError> {
    // SAFETY: marks descriptors close-on-exec; no memory involved.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if rc != 0 {
        return Err(os_fail("close_range"));
    }
    Ok(())
}

/// Everything init does to itself before starting the program; inherited by the program.
fn confine(
    plan: &LinuxPlan,
    ns: &NamespacePlan,
    filters: &[seccompiler::BpfProgram],
) -> Result<(), ApplyError> {
    if ns.pid_namespace {
        mount(
            Some(Path::new("proc")),
            Path::new("/proc"),
            Some("proc"),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            None,
        )?;
    }
    close_inherited_descriptors()?;
    drop_capabilities()?;
    restrict_landlock(plan)?;
    for filter in filters {
        seccompiler::apply_filter(filter).map_err(|e| fail("seccomp", e))?;
    }
    Ok(())
}

fn drop_capabilities() -> Result<(), ApplyError> {
    // SECBIT_NOROOT | _LOCKED, NO_SETUID_FIXUP | _LOCKED, KEEP_CAPS_LOCKED,
    // NO_CAP_AMBIENT_RAISE | _LOCKED: uid 0 gains nothing at exec.
    const SECUREBITS: libc::c_ulong = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80;
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS) } != 0 {
        return Err(os_fail("securebits"));
    }
    for cap in 0..=63 {
        // SAFETY: as above; EINVAL past the last capability ends the loop.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap) } != 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                break;
            }
            return Err(os_fail("drop bounding capabilities"));
        }
    }
    // SAFETY: as above.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    #[repr(C)]
    struct CapHeader {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct CapData {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let header = CapHeader {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: header and data match the kernel's v3 layout.
    if unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } != 0 {
        return Err(os_fail("capset"));
    }
    Ok(())
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

fn restrict_landlock(plan: &LinuxPlan) -> Result<(), ApplyError> {
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
        let fd = match PathFd::new(&rule.path) {
            Ok(fd) => fd,
            // Gone since the plan was made (a temporary file beside a frozen folder): a rule
            // only grants, so leaving it out closes more, never less.
            Err(landlock::PathFdError::OpenCall { source, .. })
                if source.kind() == io::ErrorKind::NotFound =>
            {
                continue;
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bind_source_reached_through_a_symlink_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(tmp.path()).unwrap();
        let real = dir.join("real/grant");
        std::fs::create_dir_all(&real).unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("swapped")).unwrap();
        assert!(open_source(&real, true).is_ok());
        let err = open_source(&dir.join("swapped/grant"), true).unwrap_err();
        assert!(err.detail.contains("symlink"), "{err}");
        // The symlink itself as the last component: not a folder (O_NOFOLLOW).
        assert!(open_source(&dir.join("swapped"), true).is_err());
        assert!(open_source(&dir.join("missing"), true).is_err());
    }
}
