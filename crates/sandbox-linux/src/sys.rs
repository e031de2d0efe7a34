//! Thin wrappers of the system calls the helper makes: each checks its return value and says
//! which step failed. One `unsafe` call per block; the C structures the kernel reads are built
//! here. Nothing in this file decides anything.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// What a step that ends the process instead of returning "returns" on success: nothing.
pub(crate) enum Never {}

/// Why the plan could not be applied. The program was not started.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {detail}")]
pub struct ApplyError {
    /// The helper's step that failed (`mount`, `landlock_restrict_self`...), with its path.
    pub step: String,
    /// What the system said.
    pub detail: String,
}

pub(super) fn fail(step: impl Into<String>, detail: impl ToString) -> ApplyError {
    ApplyError {
        step: step.into(),
        detail: detail.to_string(),
    }
}

pub(super) fn os_fail(step: impl Into<String>) -> ApplyError {
    fail(step, io::Error::last_os_error())
}

pub(super) fn cstr(path: &Path) -> Result<CString, ApplyError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| fail(format!("path {}", path.display()), "contains a NUL byte"))
}

/// `/proc/self/fd/N`: a path that names what an open descriptor names.
pub(super) fn fd_path(fd: RawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{fd}"))
}

/// This process's real user and group ids (what the id maps of its user namespace map from).
pub(super) fn real_ids() -> (libc::uid_t, libc::gid_t) {
    // SAFETY: getuid cannot fail (POSIX) and touches no memory.
    let uid = unsafe { libc::getuid() };
    // SAFETY: getgid cannot fail (POSIX) and touches no memory.
    let gid = unsafe { libc::getgid() };
    (uid, gid)
}

/// Takes ownership of a descriptor a system call just returned, or says which step failed.
fn owned(fd: libc::c_long, step: impl FnOnce() -> String) -> Result<OwnedFd, ApplyError> {
    if fd < 0 {
        return Err(os_fail(step()));
    }
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

pub(super) fn mount(
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
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// Makes the mount at `at` (a path, or with `fd` the detached tree it holds) read-only with every
/// mount beneath it. `mount_setattr` changes that one attribute only, so the flags the kernel
/// locks in a user namespace (nosuid, nodev, noexec) stay as they are; setting read-only is
/// allowed even on a locked mount, clearing it is not.
pub(super) fn make_read_only(fd: Option<BorrowedFd<'_>>, at: &Path) -> Result<(), ApplyError> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let (dirfd, path, flags) = match fd {
        Some(fd) => (
            fd.as_raw_fd(),
            CString::default(),
            libc::AT_EMPTY_PATH as u32,
        ),
        None => (libc::AT_FDCWD, cstr(at)?, 0),
    };
    // SAFETY: `path` is a C string (empty with AT_EMPTY_PATH) and `attr` a `mount_attr` of the
    // size passed, both locals alive for the call; the kernel only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags | AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(os_fail(format!("make {} read-only", at.display())));
    }
    Ok(())
}

/// An `O_PATH` handle on a folder or a file, opened only if the path is still the planned one:
/// the kernel refuses to follow any symlink on the way (`RESOLVE_NO_SYMLINKS`), so a symlink
/// swapped in since the plan was made cannot lead elsewhere.
pub(super) fn open_no_symlinks(path: &Path, dir: bool) -> Result<OwnedFd, ApplyError> {
    open_path_no_symlinks(path, dir).map_err(|e| open_failure(path, e))
}

/// [`open_no_symlinks`], or `None` for a path that is not there: one system call where a look
/// first (`exists`) and the open would be two.
pub(super) fn open_if_there(path: &Path, dir: bool) -> Result<Option<OwnedFd>, ApplyError> {
    match open_path_no_symlinks(path, dir) {
        Ok(fd) => Ok(Some(fd)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(open_failure(path, e)),
    }
}

/// What [`open_no_symlinks`] says of `path` when the kernel refused it.
fn open_failure(path: &Path, e: io::Error) -> ApplyError {
    if e.raw_os_error() == Some(libc::ELOOP) {
        fail(format!("open {}", path.display()), SYMLINK_ON_THE_WAY)
    } else {
        fail(format!("open {}", path.display()), e)
    }
}

/// What [`open_no_symlinks`] says of a path a symlink now leads through.
pub(super) const SYMLINK_ON_THE_WAY: &str =
    "a symlink is now on its way: the layout changed since the plan was made, plan again";

/// [`open_no_symlinks`] with the kernel's error as it is (`ELOOP` for a symlink on the way).
pub(super) fn open_path_no_symlinks(path: &Path, dir: bool) -> io::Result<OwnedFd> {
    // No O_NOFOLLOW: RESOLVE_NO_SYMLINKS refuses a symlink as the last component too, and says
    // so (ELOOP) where O_NOFOLLOW with O_DIRECTORY would say "not a directory".
    let mut flags = libc::O_PATH | libc::O_CLOEXEC;
    if dir {
        flags |= libc::O_DIRECTORY;
    }
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: `open_how` is a struct of three u64 (flags, mode, resolve), for which all zeroes
    // is a valid value (and the one the kernel wants for the fields left unset).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: `c` is a C string and `how` an `open_how` of the size passed, both locals alive
    // for the call; openat2 only reads them.
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
        // No openat2 here: a kernel before 5.6, gVisor, or a seccomp filter that refuses it
        // (ours, when cli-sandbox runs inside a chat's step): the same walk, one name at a time.
        if err.raw_os_error() == Some(libc::ENOSYS) {
            return open_path_walking(path, dir);
        }
        return Err(err);
    }
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// [`open_path_no_symlinks`] without `openat2`: from `/`, each name opened with `O_PATH |
/// O_NOFOLLOW` beneath the folder before it, and a symlink found on the way (which `O_PATH |
/// O_NOFOLLOW` opens rather than follows) refused with `ELOOP`, as `RESOLVE_NO_SYMLINKS` does.
fn open_path_walking(path: &Path, dir: bool) -> io::Result<OwnedFd> {
    use std::path::Component;
    let open = |at: RawFd, name: &std::ffi::OsStr, flags: libc::c_int| -> io::Result<OwnedFd> {
        let c = CString::new(name.as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
        // SAFETY: `c` is a C string alive for the call; `at` is a descriptor we hold (or
        // AT_FDCWD for the absolute root).
        let fd = unsafe { libc::openat(at, c.as_ptr(), flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor; nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    };
    let base = libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    let mut components = path.components();
    if components.next() != Some(Component::RootDir) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path is not absolute",
        ));
    }
    let mut fd = open(
        libc::AT_FDCWD,
        std::ffi::OsStr::new("/"),
        base | libc::O_DIRECTORY,
    )?;
    let names: Vec<_> = components.collect();
    for (i, component) in names.iter().enumerate() {
        let Component::Normal(name) = component else {
            // Canonical paths only: `.` and `..` would be a walk of their own.
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        let next = open(fd.as_raw_fd(), name, base)?;
        // SAFETY: `stat` is plain data, all zeroes a valid value; fstat fills it.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `next` is a descriptor we hold; `stat` is a local of the right type.
        if unsafe { libc::fstat(next.as_raw_fd(), &mut stat) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let kind = stat.st_mode & libc::S_IFMT;
        if kind == libc::S_IFLNK {
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
        }
        let last = i + 1 == names.len();
        if kind != libc::S_IFDIR && (!last || dir) {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        fd = next;
    }
    Ok(fd)
}

/// A detached copy of the mount tree at `path` (and every mount beneath it), reached without
/// following a symlink: what a bind mount would put in place, kept aside so that it can be
/// attached later, after its original has been made read-only or covered.
pub(super) fn clone_tree(path: &Path, dir: bool) -> Result<OwnedFd, ApplyError> {
    let handle = open_no_symlinks(path, dir)?;
    let empty = CString::default();
    // SAFETY: `handle` is an open descriptor this function borrows and `empty` a C string, both
    // alive for the call; open_tree only reads them.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            handle.as_raw_fd(),
            empty.as_ptr(),
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC as libc::c_uint
                | AT_RECURSIVE
                | libc::AT_EMPTY_PATH as libc::c_uint,
        )
    };
    owned(fd, || {
        format!("take a copy of the mounts at {}", path.display())
    })
}

/// A detached copy of the symlink at `path` itself (its folder opened without following a
/// link, the last name not followed either), to attach onto the same path: the link becomes a
/// mount point that cannot be renamed or removed.
pub(super) fn clone_link(path: &Path) -> Result<OwnedFd, ApplyError> {
    let step = || format!("take a copy of the symlink {}", path.display());
    let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(fail(step(), "no folder or no name"));
    };
    let folder = open_no_symlinks(folder, true)?;
    let name = CString::new(name.as_bytes()).map_err(|_| fail(step(), "NUL byte"))?;
    // SAFETY: `folder` is an open descriptor this function holds and `name` a C string, both
    // alive for the call; open_tree only reads them.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            folder.as_raw_fd(),
            name.as_ptr(),
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC as libc::c_uint
                | libc::AT_SYMLINK_NOFOLLOW as libc::c_uint,
        )
    };
    owned(fd, step)
}

/// A detached copy of what `handle` (an `O_PATH` descriptor, of any mount, attached or not)
/// names.
pub(super) fn clone_handle(handle: &OwnedFd) -> io::Result<OwnedFd> {
    let empty = CString::default();
    // SAFETY: `handle` is an open descriptor this function borrows and `empty` a C string, both
    // alive for the call; open_tree only reads them.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            handle.as_raw_fd(),
            empty.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_EMPTY_PATH as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const MOUNT_ATTR_NOSUID: libc::c_uint = 0x2;
const MOUNT_ATTR_NODEV: libc::c_uint = 0x4;
const MOUNT_ATTR_NOEXEC: libc::c_uint = 0x8;

/// A new tmpfs that is attached nowhere (`fsopen`, `fsmount`): what is made in it is reached
/// through the returned descriptor only, and nothing ever has to be unmounted (an unmount waits
/// for an RCU grace period: milliseconds on a busy machine).
pub(super) fn detached_tmpfs(options: &[(&str, &str)]) -> Result<OwnedFd, ApplyError> {
    let name = CString::new("tmpfs").expect("static");
    // SAFETY: `name` is a C string alive for the call; fsopen only reads it.
    let fs = unsafe { libc::syscall(libc::SYS_fsopen, name.as_ptr(), FSOPEN_CLOEXEC) };
    let fs = owned(fs, || "fsopen tmpfs".to_owned())?;
    for (key, value) in options {
        let key_c = CString::new(*key).expect("static option");
        let value_c = CString::new(*value).expect("static option");
        // SAFETY: `fs` is the fsopen descriptor owned here; `key_c` and `value_c` are C strings
        // alive for the call, which only reads them.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                fs.as_raw_fd(),
                FSCONFIG_SET_STRING,
                key_c.as_ptr(),
                value_c.as_ptr(),
                0,
            )
        };
        if rc != 0 {
            return Err(os_fail(format!("tmpfs option {key}={value}")));
        }
    }
    // SAFETY: `fs` is the fsopen descriptor owned here; CMD_CREATE takes no key or value, so
    // the null pointers are never read.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    };
    if rc != 0 {
        return Err(os_fail("create a tmpfs"));
    }
    // SAFETY: `fs` is the fsopen descriptor owned here; the other arguments are integers.
    let mnt = unsafe {
        libc::syscall(
            libc::SYS_fsmount,
            fs.as_raw_fd(),
            FSMOUNT_CLOEXEC,
            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        )
    };
    owned(mnt, || "mount a tmpfs".to_owned())
}

/// An `O_PATH` handle on `name` in the folder `dir`, created first (an empty file or folder of
/// mode 0) when `create`.
pub(super) fn make_in(dir: &OwnedFd, name: &str, folder: bool) -> Result<OwnedFd, ApplyError> {
    let c = CString::new(name).expect("static name");
    if folder {
        // SAFETY: `dir` is an open folder the caller lends and `c` a C string, both alive for the
        // call; mkdirat only reads them.
        if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            return Err(os_fail(format!("make the stand-in folder {name}")));
        }
    } else {
        // SAFETY: `dir` is an open folder the caller lends and `c` a C string, both alive for the
        // call; the new descriptor is owned (and closed) just below.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                c.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                0,
            )
        };
        drop(owned(fd as libc::c_long, || {
            format!("make the stand-in file {name}")
        })?);
    }
    let flags = libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    // SAFETY: `dir` is an open folder the caller lends and `c` a C string, both alive for the
    // call; the new descriptor is owned just below.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags) };
    owned(fd as libc::c_long, || format!("open the stand-in {name}"))
}

/// Attaches a detached tree (from [`clone_tree`]) at `target`.
pub(super) fn attach_tree(tree: &OwnedFd, target: &Path) -> Result<(), ApplyError> {
    let empty = CString::default();
    let target_c = cstr(target)?;
    // SAFETY: `tree` is a detached tree owned by the caller; `empty` and `target_c` are C
    // strings alive for the call, which only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_FDCWD,
            target_c.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if rc != 0 {
        return Err(os_fail(format!(
            "attach the mounts at {}",
            target.display()
        )));
    }
    Ok(())
}

pub(super) fn detach(target: &Path) -> Result<(), ApplyError> {
    let c = cstr(target)?;
    // SAFETY: `c` is a C string alive for the call; umount2 only reads it.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(os_fail(format!("detach {}", target.display())));
    }
    Ok(())
}

pub(super) fn mkdir(path: &Path, mode: u32) -> Result<(), ApplyError> {
    match std::fs::DirBuilder::new().mode(mode).create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(fail(format!("mkdir {}", path.display()), e)),
    }
}

/// Makes an empty file at `path` (one that is there already is left as it is): with `mknod`, one
/// system call where an open and a close would be two.
pub(super) fn touch(path: &Path, mode: u32) -> Result<(), ApplyError> {
    let c = cstr(path)?;
    // SAFETY: `c` is a C string alive for the call; mknod only reads it. A regular file needs no
    // capability.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFREG | mode, 0) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EEXIST) {
        return Ok(());
    }
    Err(fail(format!("create {}", path.display()), e))
}

/// A pipe, both ends close-on-exec.
pub(super) fn pipe() -> Result<(OwnedFd, OwnedFd), ApplyError> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_fail("pipe"));
    }
    // SAFETY: pipe2 succeeded, so fds[0] is a read end it just opened, which nothing else owns.
    let read = unsafe { OwnedFd::from_raw_fd(fds[0]) };
    // SAFETY: pipe2 succeeded, so fds[1] is a write end it just opened, which nothing else
    // owns.
    let write = unsafe { OwnedFd::from_raw_fd(fds[1]) };
    Ok((read, write))
}

/// Runs the kernel's collector of unix sockets, once the chat has ended, so that what it left
/// in flight is freed now rather than whenever some process on the machine next releases a unix
/// socket. A chat can send a descriptor (the caller's stdout, say) over a pair of sockets that
/// are then only in flight, each in the other's queue: no process holds them any more, but the
/// descriptor stays open, and a caller reading the launch's output to its end waits for ever.
/// The kernel runs its collector when a unix socket is released while any descriptor is in
/// flight; releasing a pair made for the purpose is that. The collection runs on the kernel's
/// own thread, so the caller's pipes end a moment after the launch (never before: nothing of
/// the chat can write into them any more).
///
/// Best effort: a pair that cannot be made (no memory, the descriptor limit) leaves the garbage
/// for the kernel's next collection, and the launch's end is unchanged.
pub(super) fn collect_unix_garbage() {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints.
    let made = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if made != 0 {
        return;
    }
    for fd in fds {
        // SAFETY: socketpair succeeded, so `fd` is a socket it just opened, which nothing else
        // owns; dropping it releases it.
        drop(unsafe { OwnedFd::from_raw_fd(fd) });
    }
}

pub(super) fn set_nonblocking(fd: &OwnedFd) -> Result<(), ApplyError> {
    // SAFETY: reading the flags of a descriptor we own.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(os_fail("fcntl F_GETFL"));
    }
    // SAFETY: setting the flags of a descriptor we own.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(os_fail("fcntl F_SETFL"));
    }
    Ok(())
}

/// Closes every descriptor from `first` up, but `keep`.
pub(super) fn close_all_from(first: RawFd, keep: &[RawFd]) -> Result<(), ApplyError> {
    let mut keep: Vec<RawFd> = keep.iter().copied().filter(|k| *k >= first).collect();
    keep.sort_unstable();
    let mut from = first;
    for k in keep.iter().copied().chain([RawFd::MAX]) {
        if from < k {
            let last = if k == RawFd::MAX {
                u32::MAX
            } else {
                (k - 1) as u32
            };
            // SAFETY: closes descriptors of this process that nothing here uses any more.
            let rc = unsafe { libc::syscall(libc::SYS_close_range, from as u32, last, 0u32) };
            if rc != 0 {
                return Err(os_fail("close_range"));
            }
        }
        from = k.saturating_add(1);
    }
    Ok(())
}

/// Marks every descriptor above stderr close-on-exec (the fallback, which execs in place).
pub(super) fn cloexec_from_3() -> Result<(), ApplyError> {
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

/// `prctl` with integer arguments, checked.
pub(super) fn prctl(option: libc::c_int, arg: libc::c_ulong, step: &str) -> Result<(), ApplyError> {
    // SAFETY: the callers pass options whose argument is an integer (not a pointer), so the
    // kernel reads and writes no memory of ours.
    if unsafe { libc::prctl(option, arg, 0, 0, 0) } != 0 {
        return Err(os_fail(step));
    }
    Ok(())
}

/// A set of signals. Every caller passes the `libc::SIG*` constants, so `sigaddset` (which
/// fails only for a number that is no signal) cannot fail; a debug build checks it.
pub(super) fn signal_set(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigset_t is an array of integers, for which all zeroes is a valid value.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a local sigset_t, alive and exclusively borrowed for the call.
    let emptied = unsafe { libc::sigemptyset(&mut set) };
    debug_assert_eq!(emptied, 0, "sigemptyset");
    for &s in signals {
        // SAFETY: `set` is a local sigset_t, alive and exclusively borrowed for the call.
        let added = unsafe { libc::sigaddset(&mut set, s) };
        debug_assert_eq!(added, 0, "sigaddset({s}): not a signal number");
    }
    set
}

/// Blocks (or unblocks) `set` for this thread.
pub(super) fn mask(how: libc::c_int, set: &libc::sigset_t) -> Result<(), ApplyError> {
    // SAFETY: `set` is borrowed for the call, which only reads it; the old mask is not asked
    // for (null).
    let rc = unsafe { libc::pthread_sigmask(how, set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(fail("sigprocmask", io::Error::from_raw_os_error(rc)));
    }
    Ok(())
}

/// A descriptor that reads the signals of `set` (which must be blocked).
pub(super) fn signalfd(set: &libc::sigset_t) -> Result<OwnedFd, ApplyError> {
    // SAFETY: `set` is borrowed for the call, which only reads it; -1 asks for a new descriptor,
    // owned just below.
    let fd = unsafe { libc::signalfd(-1, set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
    owned(fd as libc::c_long, || "signalfd".to_owned())
}

/// The next signal a [`signalfd`] holds: its number and `si_code`, or `None` when none is pending.
pub(super) fn read_signal(fd: &OwnedFd) -> Option<(libc::c_int, libc::c_int)> {
    // SAFETY: a zeroed signalfd_siginfo is a valid out-parameter.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    // SAFETY: reading at most `size` bytes into `info`, which has that size.
    let n = unsafe {
        libc::read(
            fd.as_raw_fd(),
            (&mut info as *mut libc::signalfd_siginfo).cast(),
            size,
        )
    };
    (n == size as isize).then_some((info.ssi_signo as libc::c_int, info.ssi_code))
}

/// Sends `sig` to `pid`, a child of this process (init or pasta) that is not yet reaped, so
/// the pid cannot have been reused. A child already gone (ESRCH) is not an error: it is what
/// the caller wanted. Any other failure (EPERM, EINVAL) would mean a wrong pid or signal, a
/// bug: a debug build stops on it, a release build carries on (the callers then wait for the
/// child, which ends with the helper through `PR_SET_PDEATHSIG`).
pub(super) fn kill(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill touches no memory; `pid` is an unreaped child of ours (see above).
    let rc = unsafe { libc::kill(pid, sig) };
    debug_assert!(
        rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH),
        "kill({pid}, {sig}): {}",
        io::Error::last_os_error()
    );
}

/// Reaps `pid`, a child of this process, if it has ended: its wait status, or `None` while it
/// runs (or the wait was interrupted). An error (ECHILD: not our child, or reaped already) means
/// it can never be reaped here, which a caller waiting in a loop must not wait for.
pub(super) fn reap(pid: libc::pid_t) -> Result<Option<libc::c_int>, ApplyError> {
    let mut status = 0;
    // SAFETY: waitpid writes only `status`, a local alive for the call.
    let got = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if got < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok(None);
        }
        return Err(fail(format!("reap process {pid}"), err));
    }
    Ok((got == pid).then_some(status))
}

/// Whether `fd` is a terminal.
pub(super) fn is_tty(fd: RawFd) -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(fd) == 1 }
}

/// The wait status of a process that exited with `code`.
pub(super) fn exited(code: libc::c_int) -> libc::c_int {
    (code & 0xff) << 8
}

/// Creates a folder and every missing one above it (mode 0755), as `mkdir -p`.
pub(super) fn create_dirs(dir: &Path) -> Result<(), ApplyError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .map_err(|e| fail(format!("create {}", dir.display()), e))
}

/// The terminal this process's group held in the foreground when it took a group of its own, to
/// give it back with [`give_back_terminal`].
#[derive(Debug, Clone, Copy)]
pub(super) struct ForegroundTaken {
    pub fd: RawFd,
    pub group: libc::pid_t,
}

/// Puts this process at the head of a process group of its own, and, if its group held a
/// terminal (stdin, stdout or stderr) in the foreground, gives that terminal to the new group.
/// A chat whose programs share the launcher's group would reach the launcher and its other
/// children with `kill(0, ...)` (where Landlock does not scope signals) and lower their
/// priority with `setpriority(PRIO_PGRP, 0)` and `ioprio_set` (at every ABI). A session leader
/// already leads a group of its own: nothing to do.
pub(super) fn own_process_group() -> Result<Option<ForegroundTaken>, ApplyError> {
    // SAFETY: getpgrp cannot fail (POSIX) and touches no memory.
    let old = unsafe { libc::getpgrp() };
    // SAFETY: getpid cannot fail and touches no memory.
    let me = unsafe { libc::getpid() };
    // SAFETY: getsid(0) asks for this process's own session, which exists: it cannot fail
    // (ESRCH and EPERM are for another process) and touches no memory.
    let session = unsafe { libc::getsid(0) };
    if session == me || old == me {
        return Ok(None);
    }
    let tty = [0, 1, 2].into_iter().find(|fd| {
        // SAFETY: tcgetpgrp reads only the terminal's foreground group, no memory of ours; on a
        // descriptor that is no terminal it fails with -1, which is no group.
        is_tty(*fd) && unsafe { libc::tcgetpgrp(*fd) } == old
    });
    // SAFETY: setpgid(0, 0) moves this process into a new group of its own; it touches no
    // memory.
    if unsafe { libc::setpgid(0, 0) } != 0 {
        return Err(os_fail("a process group of the chat's own"));
    }
    let Some(fd) = tty else {
        return Ok(None);
    };
    set_foreground(fd, me, "give the terminal to the chat's process group")?;
    Ok(Some(ForegroundTaken { fd, group: old }))
}

/// The terminal this process's group holds in the foreground now, if any: what the helper gives
/// back once init (which takes it for the chat's group) has ended.
pub(super) fn foreground_terminal() -> Option<ForegroundTaken> {
    // SAFETY: getpgrp cannot fail (POSIX) and touches no memory.
    let group = unsafe { libc::getpgrp() };
    [0, 1, 2]
        .into_iter()
        // SAFETY: tcgetpgrp reads only the terminal's foreground group, no memory of ours; on a
        // descriptor that is no terminal it fails with -1, which is no group.
        .find(|fd| is_tty(*fd) && unsafe { libc::tcgetpgrp(*fd) } == group)
        .map(|fd| ForegroundTaken { fd, group })
}

/// Gives the terminal back to the group that held it before [`own_process_group`]. Called as
/// the launch ends: a failure (the group is gone, the terminal closed) leaves the terminal to
/// no one of ours, and there is nothing left to undo, so it is said on stderr and not returned.
pub(super) fn give_back_terminal(taken: ForegroundTaken) {
    if let Err(e) = set_foreground(taken.fd, taken.group, "give the terminal back") {
        say!("cli-sandbox: {e}");
    }
}

/// `tcsetpgrp`, with `SIGTTOU` blocked for the call: from a group in the background the call
/// would otherwise stop this process.
fn set_foreground(fd: RawFd, group: libc::pid_t, step: &str) -> Result<(), ApplyError> {
    let ttou = signal_set(&[libc::SIGTTOU]);
    let mut old = signal_set(&[]);
    // SAFETY: `ttou` and `old` are locals alive for the call; the old mask is restored below.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &ttou, &mut old) };
    if rc != 0 {
        return Err(fail(step, io::Error::from_raw_os_error(rc)));
    }
    // SAFETY: tcsetpgrp reads no memory of ours; `fd` is 0, 1 or 2, checked to be a terminal.
    let set = unsafe { libc::tcsetpgrp(fd, group) };
    let err = io::Error::last_os_error();
    // SAFETY: `old` is the mask the call above saved, alive for this one.
    let restored = unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    if set != 0 {
        return Err(fail(step, err));
    }
    if restored != 0 {
        return Err(fail(
            format!("{step}: restore the signal mask"),
            io::Error::from_raw_os_error(restored),
        ));
    }
    Ok(())
}

/// Creates `path` (a folder, mode 0700, or with `file` an empty file, mode 0600) and every
/// missing folder above it, each owned like the folder that holds it (the helper may run as root
/// for someone's home), walking from `/` one name at a time without following a symlink: a link
/// a chat left on the way (`~/.config -> /etc`) is refused, never created through. An entry that
/// exists already is kept.
pub(super) fn create_without_links(path: &Path, file: bool) -> Result<(), ApplyError> {
    create_with_text(path, file.then_some(""))
}

/// [`create_without_links`], a file made holding `text` (`None`: a folder). The text is
/// written into the file this call created (`O_EXCL`), never into one that was there.
pub(super) fn create_with_text(path: &Path, text: Option<&str>) -> Result<(), ApplyError> {
    let file = text.is_some();
    let step = || format!("create {}", path.display());
    let names: Vec<_> = path.components().skip(1).collect();
    let root = CString::new("/").expect("static");
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: `root` is a C string alive for the call; the new descriptor is owned at once.
    let mut dir = owned(
        unsafe { libc::open(root.as_ptr(), flags) } as libc::c_long,
        step,
    )?;
    // SAFETY: geteuid has no failure and touches no memory.
    let root_user = unsafe { libc::geteuid() } == 0;
    for (i, name) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        let c = CString::new(name.as_os_str().as_bytes()).map_err(|_| fail(step(), "NUL byte"))?;
        let owner = std::fs::File::from(dir.try_clone().map_err(|e| fail(step(), e))?)
            .metadata()
            .map_err(|e| fail(step(), e))?;
        if last && file {
            // SAFETY: `dir` is the open folder this walk holds and `c` a C string, both alive
            // for the call; the new descriptor is owned below.
            let fd = unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    c.as_ptr(),
                    libc::O_CREAT
                        | libc::O_EXCL
                        | libc::O_WRONLY
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC,
                    0o600,
                )
            };
            if fd < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST) {
                return Ok(());
            }
            let created = owned(fd as libc::c_long, step)?;
            if root_user {
                chown_like(&created, &owner, &step)?;
            }
            if let Some(text) = text.filter(|t| !t.is_empty()) {
                use std::io::Write;
                std::fs::File::from(created)
                    .write_all(text.as_bytes())
                    .map_err(|e| fail(step(), e))?;
            }
            return Ok(());
        }
        // SAFETY: `dir` is the open folder this walk holds and `c` a C string, both alive for the
        // call; the new descriptor is owned below.
        let mut next = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags) };
        if next < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
            // SAFETY: `dir` is the open folder this walk holds and `c` a C string, both alive
            // for the call; mkdirat only reads them.
            if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o700) } != 0
                && io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST)
            {
                return Err(os_fail(step()));
            }
            // SAFETY: `dir` is the open folder this walk holds and `c` a C string, both alive
            // for the call; the new descriptor is owned just below.
            next = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags) };
            let made = owned(next as libc::c_long, step)?;
            if root_user {
                chown_like(&made, &owner, &step)?;
            }
            dir = made;
            continue;
        }
        if next < 0 {
            let err = io::Error::last_os_error();
            if matches!(err.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) {
                return Err(fail(
                    step(),
                    format!(
                        "`{}` is not a folder (a symlink?): nothing is created through it",
                        path.components().take(i + 2).collect::<PathBuf>().display()
                    ),
                ));
            }
            return Err(fail(step(), err));
        }
        dir = owned(next as libc::c_long, step)?;
    }
    Ok(())
}

/// Gives `fd` the owner and group of `like` (what a folder made for the person has).
fn chown_like(
    fd: &OwnedFd,
    like: &std::fs::Metadata,
    step: &dyn Fn() -> String,
) -> Result<(), ApplyError> {
    use std::os::unix::fs::MetadataExt;
    let empty = CString::default();
    // SAFETY: `fd` is a descriptor the caller owns and `empty` a C string (AT_EMPTY_PATH: the
    // descriptor itself), both alive for the call; fchownat only reads them.
    let rc = unsafe {
        libc::fchownat(
            fd.as_raw_fd(),
            empty.as_ptr(),
            like.uid(),
            like.gid(),
            libc::AT_EMPTY_PATH,
        )
    };
    if rc != 0 {
        return Err(os_fail(step()));
    }
    Ok(())
}

#[cfg(test)]
mod walking_tests {
    use super::{open_path_no_symlinks, open_path_walking};

    #[test]
    fn the_walk_without_openat2_refuses_a_symlink_anywhere_as_openat2_does() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(tmp.path()).unwrap();
        let real = dir.join("real/grant");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(real.join("file"), "x").unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("swapped")).unwrap();
        for open in [open_path_walking, open_path_no_symlinks] {
            assert!(open(&real, true).is_ok());
            assert!(open(&real.join("file"), false).is_ok());
            let elooped =
                |r: std::io::Result<_>| r.unwrap_err().raw_os_error() == Some(libc::ELOOP);
            assert!(elooped(open(&dir.join("swapped/grant"), true)));
            assert!(elooped(open(&dir.join("swapped"), false)));
            assert!(
                open(&real.join("file"), true).is_err(),
                "a file is not a folder"
            );
            assert!(open(&dir.join("missing"), false).is_err());
        }
    }
}
