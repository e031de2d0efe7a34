//! The guard (issue 25): a FUSE file system mounted over a grant inside the chat's mount
//! namespace, served by a process init forks before it confines itself, which passes every
//! operation through to the real folder and refuses the names that a refused pattern matches at
//! the grant's top, when the kernel looks them up.
//!
//! Why a file system and not a stand-in: a stand-in is a mount on a name, and the kernel
//! detaches it in every namespace when a process outside renames over or removes that name (an
//! atomic save, a swapped `planning/`); an entry created during the chat has none. The guard
//! decides by the name at each lookup (`RefusedPattern::matches_name_on`, the decision every
//! backend calls), so a name that appears or is replaced outside is refused at the chat's next
//! lookup: the kernel caches no entry of the grant's top (every reply's entry and attribute
//! times are zero), and a refused name is never an entry. What it answers for a refused name at
//! the top: `EACCES` to `LOOKUP` when it is there, `ENOENT` when not (as a stand-in of mode 0
//! and a Landlock rule answer), `ENOENT` to `UNLINK`, `RMDIR`, `RENAME` from it, `EACCES` to
//! `CREATE`, `MKNOD`, `MKDIR`, `SYMLINK`, `LINK` and `RENAME` onto it; `READDIR` lists its name,
//! as every backend does (listing the grant is allowed; the entry is what is refused).
//! An entry seen under a refused name (at the start, or in a listing of the top) stays refused
//! under any other name it is given later (`mv planning planning.old`).
//!
//! The daemon reaches the real folder through an `O_PATH` handle init takes before the guard
//! covers it, in the chat's mount namespace (the mounts beneath, read-only binds of git's files
//! and the chat's settings among them, still apply), and every operation is one name at a time
//! relative to a handle (`*at` calls with `O_NOFOLLOW`; the kernel never sends `.`, `..` or a
//! name with `/`), so nothing leads the daemon out of the grant: a symlink is answered as the
//! symlink it is, for the kernel to resolve in the chat's view. It runs as the chat's uid with
//! no capability and `no_new_privs`, in a session of its own, not dumpable (the chat cannot
//! open its descriptors through `/proc`), in a Landlock domain of its own that grants every
//! right beneath its grant and nothing elsewhere, and outside the chat's domain (which keeps the
//! chat from tracing or, from ABI 6, signalling it); if it dies the mount answers
//! `ENOTCONN`: closed, not open. The kernel checks modes itself (`default_permissions`).
//!
//! Limits (SECURITY.md): locks (`flock`, POSIX locks) stay local to the guard's mount, so a lock
//! the chat takes is not seen outside; content that the outside writes under an allowed name
//! before renaming it onto a refused one is readable under that name while it has it. A handle
//! the chat holds (a folder's descriptor, its working folder, a file opened inside) is checked
//! where its entry is now before each operation and after each read (`Guard::allowed_now`), so
//! once renamed onto a refused name, or moved beneath one, it answers `ENOENT`.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use rustix::fs::{AtFlags, Mode, OFlags, Stat};
use sandbox_core::{Os, RefusedPattern};

use super::sys::{self, ApplyError, fail};
use crate::plan::format::GuardPlan;

/// No entry or attribute is cached by the kernel: a name the outside replaces is looked up again
/// at the chat's next use, and a refused one is refused then.
const NO_CACHE: Duration = Duration::ZERO;

/// Opens `/dev/fuse` once per guard, before the chat's fresh `/dev` replaces the machine's.
pub(super) fn open_devices(guards: &[GuardPlan]) -> Result<Vec<OwnedFd>, ApplyError> {
    guards
        .iter()
        .map(|_| {
            rustix::fs::open(
                "/dev/fuse",
                OFlags::RDWR | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| {
                fail(
                    "open /dev/fuse for the guard over the grants",
                    format!(
                        "{e}: the plan guards refused entries with FUSE, and this user cannot open /dev/fuse now (give it mode 0666: `chmod 0666 /dev/fuse`, or a udev rule); plan again to get the plan without it"
                    ),
                )
            })
        })
        .collect()
}

/// Mounts each guard over its grant (the plan lists the deepest first, so that an outer guard's
/// daemon reaches an inner grant through the inner guard) and forks its daemon.
pub(super) fn start(guards: &[GuardPlan], devices: Vec<OwnedFd>) -> Result<(), ApplyError> {
    let (uid, gid) = (
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    );
    for (guard, device) in guards.iter().zip(devices) {
        let refused = guard
            .refused
            .iter()
            .map(|p| RefusedPattern::new(p).map_err(|e| fail("the guard's patterns", e)))
            .collect::<Result<Vec<_>, _>>()?;
        let grant = sys::open_no_symlinks(&guard.path, true)?;
        let data = format!(
            "fd={},rootmode=40000,user_id={uid},group_id={gid},default_permissions",
            device.as_raw_fd()
        );
        let mut flags = libc::MS_NOSUID | libc::MS_NODEV;
        if guard.access == sandbox_core::Access::ReadOnly {
            flags |= libc::MS_RDONLY;
        }
        sys::mount(
            Some(Path::new("cli-sandbox-guard")),
            &guard.path,
            Some("fuse"),
            flags,
            Some(&data),
        )?;
        // SAFETY: init is single-threaded here (the helper checked before the clone); the child
        // runs only `serve`, which never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(sys::os_fail("fork the guard's daemon"));
        }
        if pid == 0 {
            serve(grant, device, refused);
        }
    }
    Ok(())
}

/// The daemon: confined as the chat is in its credentials, then the FUSE session until the
/// mount goes (the chat's end: init's death takes it with `PR_SET_PDEATHSIG`).
fn serve(grant: OwnedFd, device: OwnedFd, refused: Vec<RefusedPattern>) -> ! {
    // One handle per folder the kernel knows (until it forgets it): as many as may be, before
    // the capabilities go (a root chat's daemon may raise the hard limit; a user's keeps its own).
    let most = |limit: Option<u64>| {
        rustix::process::setrlimit(
            rustix::process::Resource::Nofile,
            rustix::process::Rlimit {
                current: limit,
                maximum: limit,
            },
        )
    };
    if most(Some(1 << 20)).is_err() {
        let _ = most(rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum);
    }
    // Nothing of the daemon's reaches the chat's terminal once it serves: the FUSE library's log
    // (the launcher's logger, inherited) and any message go to /dev/null, opened now (the
    // daemon's Landlock domain grants nothing outside the grant) and put in place once the
    // daemon is confined (a failure before is said on the chat's stderr).
    let null = rustix::fs::open("/dev/null", OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).ok();
    let mut keep = vec![grant.as_raw_fd(), device.as_raw_fd()];
    keep.extend(null.as_ref().map(|n| n.as_raw_fd()));
    let ready = sys::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
        "PR_SET_PDEATHSIG",
    )
    .and_then(|()| sys::prctl(libc::PR_SET_DUMPABLE, 0, "PR_SET_DUMPABLE"))
    .and_then(|()| sys::close_all_from(3, &keep))
    .and_then(|()| super::caps::drop_all())
    .and_then(|()| sys::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, "PR_SET_NO_NEW_PRIVS"))
    .and_then(|()| confine_to(&grant));
    if let Err(e) = ready {
        say!("cli-sandbox guard: {e}");
        // SAFETY: leaving without running destructors of state shared with init's image.
        unsafe { libc::_exit(2) };
    }
    if let Some(null) = &null {
        for fd in 0..3 {
            // SAFETY: dup2 onto the standard descriptors, which this process owns.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
    drop(null);
    // A session of its own: the chat's process group and terminal signals do not reach it.
    // SAFETY: setsid has no memory effects; its failure (already a leader) changes nothing.
    unsafe { libc::setsid() };
    // The modes the chat asks for are given as they are (the kernel applied its umask).
    // SAFETY: umask cannot fail.
    unsafe { libc::umask(0) };
    let (uid, gid) = (
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    );
    let _ = OWN_IDS.set((uid != 0).then_some((uid, gid)));
    let fs = Guard::new(grant, refused);
    let mut config = fuser::Config::default();
    config.n_threads = Some(2);
    let code = match fuser::Session::from_fd(fs, device, fuser::SessionACL::All, config)
        .and_then(fuser::Session::run)
    {
        Ok(()) => 0,
        Err(_) => 1,
    };
    // SAFETY: as above.
    unsafe { libc::_exit(code) }
}

/// The daemon's own Landlock domain: every right beneath its grant, none elsewhere, so that what
/// the chat asks of it (names, data) can reach nothing but the grant whatever went wrong in
/// between. A domain of its own, not the chat's: neither can trace or signal the other.
fn confine_to(grant: &OwnedFd) -> Result<(), ApplyError> {
    use landlock::{ABI, Access, AccessFs, PathBeneath, Ruleset, RulesetAttr, RulesetCreatedAttr};
    let all = AccessFs::from_all(ABI::V6);
    Ruleset::default()
        .handle_access(all)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rule(PathBeneath::new(grant, all)))
        .and_then(|r| r.restrict_self())
        .map(drop)
        .map_err(|e| fail("the guard's Landlock domain", e))
}

/// One inode the kernel knows. A folder keeps an `O_PATH` handle on the real entry; any other
/// entry keeps the folder and name it was last seen by, and is opened again by them (its device
/// and inode checked: `ESTALE` when the name now holds another), so that the daemon holds one
/// descriptor per folder the kernel knows, not one per file (the user's open-file limit).
struct Node {
    fd: Option<Arc<OwnedFd>>,
    place: Option<(u64, std::ffi::OsString)>,
    key: (u64, u64),
    lookups: u64,
}

struct State {
    nodes: HashMap<u64, Node>,
    by_key: HashMap<(u64, u64), u64>,
    /// The node last seen by each folder and name (entries other than folders).
    by_place: HashMap<(u64, std::ffi::OsString), u64>,
    next: u64,
    files: HashMap<u64, Arc<OwnedFd>>,
    dirs: HashMap<u64, Vec<(Vec<u8>, u64, FileType)>>,
    next_handle: u64,
    /// Entries seen under a refused name (device, inode): refused under any name.
    refused_inodes: HashSet<(u64, u64)>,
}

/// Where the node numbers the guard makes up start (for an entry whose own inode number cannot
/// be its node's: on another device than the grant's, or already taken); any free number will
/// do, this range is only unlikely to be wanted by an entry's own.
const FIRST_OWN_ID: u64 = 1 << 48;

impl State {
    /// The number of a new node for the entry `k`: its own inode number where that is unique (an
    /// entry on the grant's device, the number free), so that the chat sees the inode numbers
    /// every other program sees (git's index records them: with numbers made up per chat, every
    /// file's recorded state differed, and git read every file again, in the chat and after it
    /// outside); else a number of the guard's. Unique among the nodes the kernel knows, which is
    /// what FUSE asks (1 is the grant's).
    fn new_id(&mut self, k: (u64, u64)) -> u64 {
        let root_dev = self.nodes.get(&1).map(|n| n.key.0);
        if Some(k.0) == root_dev && k.1 > 1 && !self.nodes.contains_key(&k.1) {
            return k.1;
        }
        loop {
            let id = self.next;
            self.next = self.next.wrapping_add(1).max(2);
            if !self.nodes.contains_key(&id) {
                return id;
            }
        }
    }
}

struct Guard {
    refused: Vec<RefusedPattern>,
    state: Mutex<State>,
    /// The grant's path as the kernel names it to the daemon (`/proc/self/fd`): the start of the
    /// path of every entry beneath it. Read again when an entry's path does not start with it
    /// (the grant itself renamed outside).
    grant_path: Mutex<Vec<u8>>,
}

/// The path the kernel gives for `fd` now (`d_path`: it follows every rename of the entry and
/// of each folder above it, whoever made it; a folder has one).
fn path_of(fd: &OwnedFd) -> Option<Vec<u8>> {
    rustix::fs::readlink(format!("/proc/self/fd/{}", fd.as_raw_fd()), Vec::new())
        .ok()
        .map(|p| p.into_bytes())
}

/// `path` beneath `top`: the rest after `top` and its `/`; empty for `top` itself.
fn beneath<'p>(path: &'p [u8], top: &[u8]) -> Option<&'p [u8]> {
    let rest = path.strip_prefix(top)?;
    if top.ends_with(b"/") || rest.is_empty() {
        return Some(rest);
    }
    rest.strip_prefix(b"/")
}

fn errno(e: rustix::io::Errno) -> Errno {
    Errno::from_i32(e.raw_os_error())
}

fn key(st: &Stat) -> (u64, u64) {
    (st.st_dev, st.st_ino)
}

fn kind(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs.clamp(0, 999_999_999) as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

/// The chat's own ids, when it is an ordinary user (its namespace maps these alone); `None` for
/// root, whose namespace maps every id.
static OWN_IDS: std::sync::OnceLock<Option<(u32, u32)>> = std::sync::OnceLock::new();

fn attr(st: &Stat) -> FileAttr {
    // A group the chat's namespace does not map (a folder shared through a group of the
    // person's) would make the kernel refuse every write to the entry through FUSE
    // (`HAS_UNMAPPED_ID`), where a bind would not: it is shown as the chat's own group, and the
    // daemon's own calls, with the chat's real credentials, still decide. An owner is shown as it
    // is (unmapped: `nobody`, as in a bind), so that a repository of another user's stays one
    // to git; writing to another user's entry through the guard is refused.
    let (uid, gid) = match OWN_IDS.get().copied().flatten() {
        Some((_, g)) => (st.st_uid, if st.st_gid == g { st.st_gid } else { g }),
        None => (st.st_uid, st.st_gid),
    };
    FileAttr {
        ino: INodeNo(st.st_ino),
        size: st.st_size as u64,
        blocks: st.st_blocks as u64,
        atime: time(st.st_atime, st.st_atime_nsec as i64),
        mtime: time(st.st_mtime, st.st_mtime_nsec as i64),
        ctime: time(st.st_ctime, st.st_ctime_nsec as i64),
        crtime: UNIX_EPOCH,
        kind: kind(st.st_mode),
        perm: (st.st_mode & 0o7777) as u16,
        nlink: st.st_nlink as u32,
        uid,
        gid,
        rdev: st.st_rdev as u32,
        blksize: st.st_blksize as u32,
        flags: 0,
    }
}

/// The magic link through which an `O_PATH` handle is opened for reading or writing.
fn reopen(fd: &OwnedFd, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    rustix::fs::open(
        format!("/proc/self/fd/{}", fd.as_raw_fd()),
        flags | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

impl Guard {
    fn new(grant: OwnedFd, refused: Vec<RefusedPattern>) -> Guard {
        let mut state = State {
            nodes: HashMap::new(),
            by_key: HashMap::new(),
            by_place: HashMap::new(),
            next: FIRST_OWN_ID,
            files: HashMap::new(),
            dirs: HashMap::new(),
            next_handle: 1,
            refused_inodes: HashSet::new(),
        };
        let root_key = rustix::fs::fstat(&grant)
            .map(|st| key(&st))
            .unwrap_or((0, 0));
        state.nodes.insert(
            1,
            Node {
                fd: Some(Arc::new(grant)),
                place: None,
                key: root_key,
                lookups: 1,
            },
        );
        let grant_path = state
            .nodes
            .get(&1)
            .and_then(|n| n.fd.as_deref().and_then(path_of))
            .unwrap_or_default();
        let guard = Guard {
            refused,
            state: Mutex::new(state),
            grant_path: Mutex::new(grant_path),
        };
        // The entries refused at the start, by inode, so that a rename outside to an allowed
        // name does not open them.
        let _ = guard.list(INodeNo::ROOT);
        guard
    }

    fn refuses(&self, parent: INodeNo, name: &OsStr) -> bool {
        parent == INodeNo::ROOT
            && self
                .refused
                .iter()
                .any(|p| p.matches_name_on(Os::Linux, name))
    }

    /// Whether the entry `fd` holds is beneath the grant under an allowed name at its top now,
    /// whatever the chat holds it by (a descriptor, its working folder, a file opened inside):
    /// `ENOENT` when a process outside renamed it, or a folder above it, onto a refused name or
    /// out of the grant. Asked before every operation on a folder the kernel knows and on an open
    /// file, and again after a read or a listing, whose data is thrown away when it fails: no
    /// byte written into the entry after such a rename reaches the chat, however often it asks.
    /// An allowed entry renamed to another allowed name keeps working: what is decided is the
    /// name it has now, as at a lookup.
    fn allowed_now(&self, fd: &OwnedFd) -> Result<(), Errno> {
        let path = path_of(fd).ok_or(Errno::ENOENT)?;
        for again in [false, true] {
            let grant = {
                let mut grant = self.grant_path.lock().unwrap_or_else(|e| e.into_inner());
                if again {
                    let root = self.lock().nodes.get(&1).and_then(|n| n.fd.clone());
                    match root.as_deref().and_then(path_of) {
                        Some(now) if now != *grant => *grant = now,
                        _ => break,
                    }
                }
                grant.clone()
            };
            let Some(rest) = beneath(&path, &grant) else {
                continue;
            };
            let first = rest.split(|&b| b == b'/').next().unwrap_or_default();
            // A top-level entry no longer linked is named with ` (deleted)` after it: both
            // readings of the name are judged.
            let unlinked = (first.len() == rest.len())
                .then(|| first.strip_suffix(b" (deleted)"))
                .flatten();
            let refused = [Some(first), unlinked].into_iter().flatten().any(|name| {
                !name.is_empty() && self.refuses(INodeNo::ROOT, OsStr::from_bytes(name))
            });
            if first.is_empty() || unlinked.is_some() {
                return if refused { Err(Errno::ENOENT) } else { Ok(()) };
            }
            // The entry at the top it lies beneath: seen under a refused name, it stays refused
            // under any other it is given later (`mv planning planning.old`), as at a lookup.
            let root = self.lock().nodes.get(&1).and_then(|n| n.fd.clone());
            let top = root.and_then(|root| {
                rustix::fs::statat(&*root, OsStr::from_bytes(first), AtFlags::SYMLINK_NOFOLLOW).ok()
            });
            let mut state = self.lock();
            if let Some(top) = top {
                if refused {
                    state.refused_inodes.insert(key(&top));
                } else if state.refused_inodes.contains(&key(&top)) {
                    return Err(Errno::ENOENT);
                }
            }
            return if refused { Err(Errno::ENOENT) } else { Ok(()) };
        }
        Err(Errno::ENOENT)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The handle of `ino` (shared: no system call), unless its entry has been seen under a
    /// refused name.
    fn handle(&self, ino: INodeNo) -> Result<Arc<OwnedFd>, Errno> {
        let (place, wanted) = {
            let state = self.lock();
            let node = state.nodes.get(&ino.0).ok_or(Errno::ESTALE)?;
            if state.refused_inodes.contains(&node.key) {
                return Err(Errno::ENOENT);
            }
            if let Some(fd) = &node.fd {
                let fd = Arc::clone(fd);
                drop(state);
                // A folder: where it is now (a file is found by name in its folder, checked so).
                if ino != INodeNo::ROOT {
                    self.allowed_now(&fd)?;
                }
                return Ok(fd);
            }
            (node.place.clone().ok_or(Errno::ESTALE)?, node.key)
        };
        let (parent, name) = place;
        let dir = self.handle(INodeNo(parent))?;
        let fd = rustix::fs::openat(
            &dir,
            &name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|_| Errno::ESTALE)?;
        let st = rustix::fs::fstat(&fd).map_err(errno)?;
        if key(&st) != wanted {
            return Err(Errno::ESTALE);
        }
        Ok(Arc::new(fd))
    }

    /// Records `fd` (an `O_PATH` handle on the entry just looked up or made) as a node the kernel
    /// now knows once more; its attributes.
    fn remember(&self, fd: OwnedFd, parent: INodeNo, name: &OsStr) -> Result<FileAttr, Errno> {
        let st = rustix::fs::fstat(&fd).map_err(errno)?;
        let k = key(&st);
        let dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
        // A file with another name may have it at the top under a refused one (a refused entry
        // made outside during the chat and hard-linked under an allowed name): the top is
        // listed again, which records the inodes of its refused names.
        if st.st_nlink > 1 && !dir {
            self.list(INodeNo::ROOT)?;
        }
        let mut state = self.lock();
        if state.refused_inodes.contains(&k) {
            return Err(Errno::ENOENT);
        }
        let place = (!dir).then(|| (parent.0, name.to_owned()));
        let id = match state.by_key.get(&k) {
            Some(&id) => {
                let mut old = None;
                if let Some(node) = state.nodes.get_mut(&id) {
                    node.lookups += 1;
                    if place.is_some() && node.place != place {
                        old = std::mem::replace(&mut node.place, place.clone());
                    }
                }
                if let Some(old) = old
                    && state.by_place.get(&old) == Some(&id)
                {
                    state.by_place.remove(&old);
                }
                id
            }
            None => {
                let id = state.new_id(k);
                state.by_key.insert(k, id);
                state.nodes.insert(
                    id,
                    Node {
                        fd: dir.then(|| Arc::new(fd)),
                        place: place.clone(),
                        key: k,
                        lookups: 1,
                    },
                );
                id
            }
        };
        if let Some(place) = place {
            state.by_place.insert(place, id);
        }
        let mut a = attr(&st);
        a.ino = INodeNo(id);
        Ok(a)
    }

    fn stat(&self, ino: INodeNo) -> Result<FileAttr, Errno> {
        let fd = self.handle(ino)?;
        let st = rustix::fs::fstat(&fd).map_err(errno)?;
        let mut a = attr(&st);
        a.ino = ino;
        Ok(a)
    }

    /// `name` in `parent` as a new `O_PATH` handle, never following a symlink.
    fn look(&self, parent: INodeNo, name: &OsStr) -> Result<OwnedFd, Errno> {
        if self.refuses(parent, name) {
            // As the other backends answer: refused when it is there (a stand-in of mode 0, a
            // Landlock rule), missing when it is not. Never an entry.
            let there = self
                .handle(parent)
                .map(|dir| rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok())
                .unwrap_or(false);
            return Err(if there { Errno::EACCES } else { Errno::ENOENT });
        }
        let dir = self.handle(parent)?;
        let fd = rustix::fs::openat(
            &dir,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        // The folder may have been renamed onto a refused name while the name was looked up.
        if parent != INodeNo::ROOT {
            self.allowed_now(&dir)?;
        }
        Ok(fd)
    }

    /// The entries of a folder. A refused name at the grant's top is listed, as every backend
    /// lists it (a listing of the grant is allowed; only the entry is refused), and its inode is
    /// recorded as refused.
    fn list(&self, ino: INodeNo) -> Result<Vec<(Vec<u8>, u64, FileType)>, Errno> {
        let fd = self.handle(ino)?;
        let dir = rustix::fs::openat(
            &fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        let dev = rustix::fs::fstat(&dir).map_err(errno)?.st_dev;
        let mut out = Vec::new();
        let mut refused = Vec::new();
        let entries = rustix::fs::Dir::read_from(&dir).map_err(errno)?;
        for entry in entries {
            let entry = entry.map_err(errno)?;
            let name = entry.file_name().to_bytes().to_vec();
            if self.refuses(ino, OsStr::from_bytes(&name)) {
                // Its own inode (a mount point's is the covered entry's: looked up by name).
                if let Ok(st) =
                    rustix::fs::statat(&fd, OsStr::from_bytes(&name), AtFlags::SYMLINK_NOFOLLOW)
                {
                    refused.push(key(&st));
                }
                refused.push((dev, entry.ino()));
            }
            let kind = match entry.file_type() {
                rustix::fs::FileType::Directory => FileType::Directory,
                rustix::fs::FileType::Symlink => FileType::Symlink,
                rustix::fs::FileType::Fifo => FileType::NamedPipe,
                rustix::fs::FileType::Socket => FileType::Socket,
                rustix::fs::FileType::CharacterDevice => FileType::CharDevice,
                rustix::fs::FileType::BlockDevice => FileType::BlockDevice,
                _ => FileType::RegularFile,
            };
            out.push((name, entry.ino(), kind));
        }
        if !refused.is_empty() {
            self.lock().refused_inodes.extend(refused);
        }
        // Names made in the folder after a rename onto a refused name are not listed.
        if ino != INodeNo::ROOT {
            self.allowed_now(&fd)?;
        }
        Ok(out)
    }

    fn new_handle(&self, fd: OwnedFd) -> u64 {
        let mut state = self.lock();
        let fh = state.next_handle;
        state.next_handle += 1;
        state.files.insert(fh, Arc::new(fd));
        fh
    }

    fn file(&self, fh: FileHandle) -> Result<Arc<OwnedFd>, Errno> {
        let state = self.lock();
        let fd = state.files.get(&fh.0).ok_or(Errno::EBADF)?;
        Ok(Arc::clone(fd))
    }

    /// An open file, while it is beneath an allowed name at the grant's top (it, or a folder
    /// above it, may have been renamed onto a refused one outside since the chat opened it).
    fn open_file(&self, fh: FileHandle) -> Result<Arc<OwnedFd>, Errno> {
        let fd = self.file(fh)?;
        self.allowed_now(&fd)?;
        Ok(fd)
    }

    /// A name made in `parent` (`CREATE`, `MKDIR`, ...) is refused at the grant's top.
    fn may_make(&self, parent: INodeNo, name: &OsStr) -> Result<Arc<OwnedFd>, Errno> {
        if self.refuses(parent, name) {
            return Err(Errno::EACCES);
        }
        self.handle(parent)
    }

    fn made(&self, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self
            .look(parent, name)
            .and_then(|fd| self.remember(fd, parent, name))
        {
            Ok(a) => reply.entry(&NO_CACHE, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    /// The chat renamed or removed an entry: the node seen by that folder and name follows it.
    fn moved(&self, from: (u64, &OsStr), to: Option<(u64, &OsStr)>) {
        let mut state = self.lock();
        if let Some(to) = to
            && let Some(gone) = state.by_place.remove(&(to.0, to.1.to_owned()))
            && let Some(node) = state.nodes.get_mut(&gone)
        {
            node.place = None;
        }
        let Some(id) = state.by_place.remove(&(from.0, from.1.to_owned())) else {
            return;
        };
        let place = to.map(|(parent, name)| (parent, name.to_owned()));
        if let Some(node) = state.nodes.get_mut(&id) {
            node.place = place.clone();
        }
        if let Some(place) = place {
            state.by_place.insert(place, id);
        }
    }
}

fn open_flags(flags: i32) -> OFlags {
    // What the kernel passes on for an open: the access mode and the status flags; never a
    // controlling terminal, never following a symlink (the kernel resolved the path).
    let keep = libc::O_ACCMODE
        | libc::O_APPEND
        | libc::O_TRUNC
        | libc::O_NONBLOCK
        | libc::O_DSYNC
        | libc::O_SYNC
        | libc::O_DIRECT
        | libc::O_NOATIME;
    OFlags::from_bits_retain((flags & keep) as u32)
}

impl Filesystem for Guard {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self
            .look(parent, name)
            .and_then(|fd| self.remember(fd, parent, name))
        {
            Ok(a) => reply.entry(&NO_CACHE, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        if ino == INodeNo::ROOT {
            return;
        }
        let mut state = self.lock();
        let gone = match state.nodes.get_mut(&ino.0) {
            Some(node) => {
                node.lookups = node.lookups.saturating_sub(nlookup);
                node.lookups == 0
            }
            None => false,
        };
        if gone && let Some(node) = state.nodes.remove(&ino.0) {
            state.by_key.remove(&node.key);
            if let Some(place) = node.place
                && state.by_place.get(&place) == Some(&ino.0)
            {
                state.by_place.remove(&place);
            }
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        // An open file by its own descriptor: it may have no name any more.
        let by_fh = fh.and_then(|fh| self.file(fh).ok()).map(|fd| {
            self.allowed_now(&fd)?;
            rustix::fs::fstat(&fd).map_err(errno).map(|st| {
                let mut a = attr(&st);
                a.ino = ino;
                a
            })
        });
        match by_fh.unwrap_or_else(|| self.stat(ino)) {
            Ok(a) => reply.attr(&NO_CACHE, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let result = (|| -> Result<FileAttr, Errno> {
            let node = self.handle(ino)?;
            let path = format!("/proc/self/fd/{}", node.as_raw_fd());
            if uid.is_some() || gid.is_some() {
                // The daemon holds no capability: an owner changes only as the chat could.
                rustix::fs::chownat(
                    rustix::fs::CWD,
                    &path,
                    uid.map(rustix::fs::Uid::from_raw),
                    gid.map(rustix::fs::Gid::from_raw),
                    AtFlags::empty(),
                )
                .map_err(errno)?;
            }
            if let Some(mode) = mode {
                rustix::fs::chmod(&path, Mode::from_raw_mode(mode & 0o7777)).map_err(errno)?;
            }
            if let Some(size) = size {
                let fd = match fh {
                    Some(fh) => self.open_file(fh)?,
                    None => Arc::new(reopen(&node, OFlags::WRONLY).map_err(errno)?),
                };
                rustix::fs::ftruncate(&fd, size).map_err(errno)?;
            }
            if atime.is_some() || mtime.is_some() {
                let spec = |t: Option<TimeOrNow>| match t {
                    None => rustix::fs::Timespec {
                        tv_sec: 0,
                        tv_nsec: libc::UTIME_OMIT,
                    },
                    Some(TimeOrNow::Now) => rustix::fs::Timespec {
                        tv_sec: 0,
                        tv_nsec: libc::UTIME_NOW,
                    },
                    Some(TimeOrNow::SpecificTime(t)) => {
                        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
                        rustix::fs::Timespec {
                            tv_sec: d.as_secs() as i64,
                            tv_nsec: d.subsec_nanos() as _,
                        }
                    }
                };
                let times = rustix::fs::Timestamps {
                    last_access: spec(atime),
                    last_modification: spec(mtime),
                };
                rustix::fs::utimensat(rustix::fs::CWD, &path, &times, AtFlags::empty())
                    .map_err(errno)?;
            }
            self.stat(ino)
        })();
        match result {
            Ok(a) => reply.attr(&NO_CACHE, &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self
            .handle(ino)
            .and_then(|fd| rustix::fs::readlinkat(&fd, "", Vec::new()).map_err(errno))
        {
            Ok(target) => reply.data(target.as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let made = self.may_make(parent, name).and_then(|dir| {
            rustix::fs::mknodat(
                &dir,
                name,
                rustix::fs::FileType::from_raw_mode(mode),
                Mode::from_raw_mode(mode & 0o7777),
                rdev as u64,
            )
            .map_err(errno)
        });
        match made {
            Ok(()) => self.made(parent, name, reply),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let made = self.may_make(parent, name).and_then(|dir| {
            rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(mode & 0o7777)).map_err(errno)
        });
        match made {
            Ok(()) => self.made(parent, name, reply),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        if self.refuses(parent, name) {
            return reply.error(Errno::ENOENT);
        }
        match self
            .handle(parent)
            .and_then(|dir| rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(errno))
        {
            Ok(()) => {
                self.moved((parent.0, name), None);
                reply.ok()
            }
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        if self.refuses(parent, name) {
            return reply.error(Errno::ENOENT);
        }
        match self
            .handle(parent)
            .and_then(|dir| rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR).map_err(errno))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let made = self
            .may_make(parent, link_name)
            .and_then(|dir| rustix::fs::symlinkat(target, &dir, link_name).map_err(errno));
        match made {
            Ok(()) => self.made(parent, link_name, reply),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if self.refuses(parent, name) {
            return reply.error(Errno::ENOENT);
        }
        let result = self.may_make(newparent, newname).and_then(|to| {
            let from = self.handle(parent)?;
            rustix::fs::renameat_with(
                &from,
                name,
                &to,
                newname,
                rustix::fs::RenameFlags::from_bits_retain(flags.bits()),
            )
            .map_err(errno)
        });
        match result {
            Ok(()) => {
                if flags.bits() & libc::RENAME_EXCHANGE != 0 {
                    // Both names now hold the other's entry: each found again by its lookup.
                    self.moved((parent.0, name), None);
                    self.moved((newparent.0, newname), None);
                } else {
                    self.moved((parent.0, name), Some((newparent.0, newname)));
                }
                reply.ok()
            }
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let result = self.may_make(newparent, newname).and_then(|to| {
            let node = self.handle(ino)?;
            rustix::fs::linkat(
                rustix::fs::CWD,
                format!("/proc/self/fd/{}", node.as_raw_fd()),
                &to,
                newname,
                AtFlags::SYMLINK_FOLLOW,
            )
            .map_err(errno)
        });
        match result {
            Ok(()) => self.made(newparent, newname, reply),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self
            .handle(ino)
            .and_then(|node| reopen(&node, open_flags(flags.0)).map_err(errno))
        {
            Ok(fd) => reply.opened(FileHandle(self.new_handle(fd)), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let result = self.open_file(fh).and_then(|fd| {
            let mut buf = vec![0u8; size as usize];
            let n = rustix::io::pread(&fd, &mut buf, offset).map_err(errno)?;
            buf.truncate(n);
            // Read again where it is: bytes read after a rename onto a refused name are dropped.
            self.allowed_now(&fd)?;
            Ok(buf)
        });
        match result {
            Ok(buf) => reply.data(&buf),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self
            .open_file(fh)
            .and_then(|fd| rustix::io::pwrite(&fd, data, offset).map_err(errno))
        {
            Ok(n) => reply.written(n as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.lock().files.remove(&fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let result = self.file(fh).and_then(|fd| {
            if datasync {
                rustix::fs::fdatasync(&fd)
            } else {
                rustix::fs::fsync(&fd)
            }
            .map_err(errno)
        });
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        // Listed at the first `READDIR` (from offset 0), not here: once per listing.
        match self.handle(ino) {
            Ok(_) => {
                let mut state = self.lock();
                let fh = state.next_handle;
                state.next_handle += 1;
                state.dirs.insert(fh, Vec::new());
                reply.opened(FileHandle(fh), FopenFlags::empty());
            }
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        // From the start (a folder opened long ago, read again after `rewinddir`): listed anew,
        // as the folder is now, and only while it is beneath an allowed name.
        if offset == 0 {
            match self.list(ino) {
                Ok(entries) => {
                    self.lock().dirs.insert(fh.0, entries);
                }
                Err(e) => return reply.error(e),
            }
        }
        let state = self.lock();
        let Some(entries) = state.dirs.get(&fh.0) else {
            return reply.error(Errno::EBADF);
        };
        for (i, (name, ino, kind)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(
                INodeNo(*ino),
                (i + 1) as u64,
                *kind,
                OsStr::from_bytes(name),
            ) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.lock().dirs.remove(&fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: fuser::IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: fuser::ReplyIoctl,
    ) {
        // No ioctl is passed to the real file (`isatty`'s TCGETS on every open among them).
        reply.error(Errno::ENOTTY);
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        match self
            .handle(ino)
            .and_then(|fd| rustix::fs::fstatvfs(&fd).map_err(errno))
        {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let result = self.may_make(parent, name).and_then(|dir| {
            let mut oflags =
                open_flags(flags) | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            if flags & libc::O_EXCL != 0 {
                oflags |= OFlags::EXCL;
            }
            let file = rustix::fs::openat(&dir, name, oflags, Mode::from_raw_mode(mode & 0o7777))
                .map_err(errno)?;
            // The node is the file just made, whatever the name holds by now.
            let node = reopen(&file, OFlags::PATH).map_err(errno)?;
            let a = self.remember(node, parent, name)?;
            Ok((a, self.new_handle(file)))
        });
        match result {
            Ok((a, fh)) => reply.created(
                &NO_CACHE,
                &a,
                Generation(0),
                FileHandle(fh),
                FopenFlags::empty(),
            ),
            Err(e) => reply.error(e),
        }
    }
}
