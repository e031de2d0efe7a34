//! Whether this process can really make what a namespace plan starts with: the one answer to
//! "namespaces or the Landlock-only plan" that `doctor`, `plan`, `run`, `step`, `pre-trust`, the
//! contract and the library all use (through [`crate::this_kernel`]).
//!
//! The sysctls (`max_user_namespaces`, `unprivileged_userns_clone`, Ubuntu's AppArmor switch) are
//! not the answer: a container's seccomp profile (Docker's and podman's refuse `clone` with
//! namespace flags and `mount` to a process without `CAP_SYS_ADMIN`), a rootless container's id
//! range (its root cannot map every id), `/proc` with paths covered (no fresh `proc` may be
//! mounted over it), Ubuntu's AppArmor restriction (the namespace is made, without capabilities
//! in it) and our own step (whose seccomp filter refuses namespaces) each stop a launch the
//! sysctls allow. So the trial does, in a short-lived child, what the helper does first: clone
//! into new user, mount, PID and IPC namespaces, write the child's id maps as the helper writes
//! them, and in the child make the root mount private, mount a fresh `proc` and a `tmpfs` on
//! `/dev`, and make a detached `tmpfs` (the stand-ins' `fsopen`). Any failure, whatever its
//! cause, is the Landlock-only plan, with the failing step and the system's words as the reason.
//!
//! The answer is kept for as long as it cannot change: per process, for the same effective ids
//! and the same values of the three sysctls (read at each ask: three small reads, what every
//! launch paid before). What else could change it in a running process (a seccomp filter it
//! loads, capabilities it drops) only ever takes away: a launch planned with namespaces then
//! fails at the helper's clone with status 125, never runs unconfined.

use std::os::fd::AsRawFd;
use std::sync::Mutex;

use super::sys;

/// What decides whether a kept answer still holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Key {
    euid: libc::uid_t,
    egid: libc::gid_t,
    max_user_namespaces: Option<i64>,
    unprivileged_userns_clone: Option<i64>,
    apparmor_restrict: Option<i64>,
}

static KEPT: Mutex<Option<(Key, Result<(), String>)>> = Mutex::new(None);

/// Whether a namespace plan can start here: `Err` says which step failed and why.
pub(crate) fn namespaces() -> Result<(), String> {
    let key = key();
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((k, answer)) = kept.as_ref()
        && *k == key
    {
        return answer.clone();
    }
    let answer = trial().map_err(|e| with_sysctls(e, key));
    *kept = Some((key, answer.clone()));
    answer
}

/// Tries again whatever was kept (for the tests, which change this process's environment).
pub fn namespaces_afresh() -> Result<(), String> {
    *KEPT.lock().unwrap_or_else(|e| e.into_inner()) = None;
    namespaces()
}

fn key() -> Key {
    // One read into a small buffer (open, read, close): a number of the kernel's fits.
    let read = |path: &str| -> Option<i64> {
        use std::io::Read;
        let mut buf = [0u8; 32];
        let n = std::fs::File::open(path).ok()?.read(&mut buf).ok()?;
        std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()
    };
    // The ids the helper maps (its real ids), which the answer depends on.
    let (euid, egid) = sys::real_ids();
    Key {
        euid,
        egid,
        max_user_namespaces: read("/proc/sys/user/max_user_namespaces"),
        unprivileged_userns_clone: read("/proc/sys/kernel/unprivileged_userns_clone"),
        apparmor_restrict: read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
    }
}

/// The trial's failure, with the sysctl that explains it where one does.
fn with_sysctls(e: String, key: Key) -> String {
    if key.max_user_namespaces == Some(0) {
        format!("{e}; user.max_user_namespaces is 0")
    } else if key.euid != 0 && key.unprivileged_userns_clone == Some(0) {
        format!("{e}; kernel.unprivileged_userns_clone is 0")
    } else if key.euid != 0 && key.apparmor_restrict == Some(1) {
        format!(
            "{e}; kernel.apparmor_restrict_unprivileged_userns is 1 (Ubuntu's AppArmor restriction)"
        )
    } else {
        e
    }
}

/// The steps of the child, by the byte it reports.
const STEPS: [&str; 4] = [
    "make the root mount private",
    "mount a fresh proc on /proc",
    "mount a tmpfs on /dev",
    "make a detached tmpfs (fsopen, fsconfig, fsmount)",
];

fn trial() -> Result<(), String> {
    let pipe = |what: &str| sys::pipe().map_err(|e| format!("{what}: {e}"));
    let (report_read, report_write) = pipe("a pipe for the namespace trial")?;
    let (go_read, go_write) = pipe("a pipe for the namespace trial")?;
    let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    // SAFETY: a fork-like clone (no new stack). The child runs only `child`, which makes raw
    // system calls on values prepared here (no allocation, no lock: this process may have other
    // threads) and never returns.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    } as libc::pid_t;
    if pid < 0 {
        return Err(format!(
            "clone into new user, mount, PID and IPC namespaces: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid == 0 {
        child(
            go_read.as_raw_fd(),
            go_write.as_raw_fd(),
            report_write.as_raw_fd(),
        );
    }
    drop(report_write);
    drop(go_read);
    let mapped = write_id_maps(pid);
    if mapped.is_ok() {
        // The child reads one byte; a failed write shows up as its report below.
        // SAFETY: writes one byte from a local into our pipe's descriptor.
        let _ = unsafe { libc::write(go_write.as_raw_fd(), b"g".as_ptr().cast(), 1) };
    }
    // Closed either way: on a failed map, the child reads the end and leaves.
    drop(go_write);
    let status = reap(pid)?;
    mapped?;
    let mut said = [0u8; 2];
    // SAFETY: reads at most two bytes into a local buffer of two.
    let n = unsafe { libc::read(report_read.as_raw_fd(), said.as_mut_ptr().cast(), 2) };
    if n == 2 {
        let step = STEPS.get(said[0] as usize).copied().unwrap_or("a step");
        return Err(format!(
            "{step} in new user, mount and PID namespaces: {}",
            std::io::Error::from_raw_os_error(said[1] as i32)
        ));
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(format!(
            "the namespace trial's child ended with wait status {status:#x}"
        ))
    }
}

/// As the helper writes init's maps (`apply::write_id_maps`): every id kept for root, one's own
/// uid and gid otherwise.
fn write_id_maps(pid: libc::pid_t) -> Result<(), String> {
    let write = |file: &str, text: &str| {
        let path = format!("/proc/{pid}/{file}");
        std::fs::write(&path, text).map_err(|e| format!("write {path}: {e}"))
    };
    let (uid, gid) = sys::real_ids();
    if uid == 0 {
        write("uid_map", "0 0 4294967295")?;
        write("gid_map", "0 0 4294967295")
    } else {
        write("setgroups", "deny")?;
        write("uid_map", &format!("{uid} {uid} 1"))?;
        write("gid_map", &format!("{gid} {gid} 1"))
    }
}

fn reap(pid: libc::pid_t) -> Result<libc::c_int, String> {
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child, which nothing else reaps; `status` is a valid
        // out-parameter.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got == pid {
            return Ok(status);
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(format!("waiting for the namespace trial: {err}"));
        }
    }
}

/// The child, pid 1 of its PID namespace: waits for its maps, tries the mounts, reports the first
/// failure as two bytes (step, errno) and exits. Raw system calls only.
fn child(go: libc::c_int, go_other_end: libc::c_int, report: libc::c_int) -> ! {
    // The copy of the parent's write end, or the read below would never see the end when the
    // parent cannot write the maps.
    // SAFETY: closes a descriptor number this child holds a copy of, owned by nothing here.
    unsafe { libc::close(go_other_end) };
    let fail = |step: u8| -> ! {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        let said = [step, errno.clamp(0, 255) as u8];
        // SAFETY: writes two bytes from a local into the report pipe.
        unsafe { libc::write(report, said.as_ptr().cast(), 2) };
        // SAFETY: leaves at once, without running the parent's destructors or atexit handlers.
        unsafe { libc::_exit(1) }
    };
    let mut byte = 0u8;
    // SAFETY: reads one byte into a local.
    if unsafe { libc::read(go, (&mut byte as *mut u8).cast(), 1) } != 1 {
        // SAFETY: leaves at once (the parent could not write the maps and says why).
        unsafe { libc::_exit(1) }
    }
    let none: *const libc::c_char = std::ptr::null();
    // The root alone made private, not the whole tree as the helper does (about 1 ms with the
    // machine's mounts, the trial's largest cost): the same call with the same permission, and
    // nothing mounted below can reach the machine anyway, since a mount namespace owned by a new
    // user namespace receives the machine's shared mounts as slaves.
    // SAFETY: mount with static C strings and null pointers, as mount(2) takes them.
    if unsafe {
        libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_PRIVATE,
            std::ptr::null(),
        )
    } != 0
    {
        fail(0);
    }
    let nosuid = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    // SAFETY: as above; the mount belongs to this child's mount namespace, gone with it.
    if unsafe {
        libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            nosuid,
            std::ptr::null(),
        )
    } != 0
    {
        fail(1);
    }
    // SAFETY: as above.
    if unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            c"/dev".as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            c"mode=0755".as_ptr().cast(),
        )
    } != 0
    {
        fail(2);
    }
    // SAFETY: fsopen takes a static C string and flags, and returns a descriptor or -1.
    let fs = unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), 1usize) } as libc::c_int;
    if fs < 0 {
        fail(3);
    }
    const FSCONFIG_CMD_CREATE: usize = 6;
    // SAFETY: fsconfig on the descriptor fsopen returned, with null key and value as CMD_CREATE
    // takes them.
    if unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs,
            FSCONFIG_CMD_CREATE,
            none,
            none,
            0usize,
        )
    } != 0
    {
        fail(3);
    }
    // SAFETY: fsmount on the created context, returning a descriptor or -1.
    if unsafe { libc::syscall(libc::SYS_fsmount, fs, 1usize, 0usize) } < 0 {
        fail(3);
    }
    // SAFETY: leaves at once; the namespaces and their mounts end with this process.
    unsafe { libc::_exit(0) }
}
