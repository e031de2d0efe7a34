//! The mounts of the chat's private mount namespace, made by init (pid 1 of the chat's PID
//! namespace, in its own user, mount and IPC namespaces) before it confines itself.
//!
//! The passes, in the order [`build`] applies them (each needs the ones before it):
//!
//! 1. **Private.** Every mount becomes private, so nothing done here reaches the host.
//! 2. **Sources.** The folders bound back later (this chat's grants and runtime, and for a root
//!    chat the writable places) are taken as detached copies of their mount trees now, reached
//!    without following a symlink: before anything is made read-only or covered.
//! 3. **System read-only** (root only). Every mount is made read-only, then the writable places'
//!    copies are attached back at their own paths. What a root chat could otherwise write
//!    (`/etc`, cron's and systemd's folders, `/usr/local`) gets `EROFS`, also for `chmod`.
//!    Kernel tunables under `/sys` are read-only for every uid (pass 6 names them). Then, for
//!    every chat, the **private temporary folders**: a tmpfs of `[limits] tmp` on `/tmp` and
//!    `/var/tmp`, the plan's paths that lie inside them (from pass 2) attached back at their own
//!    paths: the machine's `/tmp` is out of reach, and what the chat leaves there goes with it.
//! 4. **Pins.** Every ancestor of a protected root (and of a hardened path) is bound onto
//!    itself: a mount point cannot be renamed or removed (`EBUSY`).
//! 5. **Devices and processes.** A fresh `/dev` (the harmless devices, a pty filesystem of the
//!    sandbox's own, a private `/dev/shm`) and the chat's own `/proc` (PID namespace). With a
//!    network of the chat's own, its `/etc/resolv.conf` (`network::resolv_conf`).
//! 6. **Kernel.** The kernel's tunables bound read-only onto themselves, its secrets covered.
//! 7. **Masks.** An empty read-only tmpfs over each protected root, this chat's folders attached
//!    back inside it from pass 2 (read-only grants made read-only with every mount beneath).
//! 8. **Entries.** Refused entries and blocked programs covered by unreadable stand-ins;
//!    hardened paths, the CLIs' acted-on settings and git's own files in read-write grants bound
//!    read-only onto themselves; each repository's `.git` folder bound onto itself (kept: not
//!    renamed); a symlink of the person's on the way to a CLI's settings bound onto itself as
//!    the link it is.
//! 9. **Seal.** The mount at `/dev` is made read-only (its `shm` folder, bound onto itself,
//!    stays writable).
//!
//! The stand-ins (an empty file and an empty folder, mode 0) live in a tmpfs that is never
//! attached anywhere (`fsopen`/`fsmount`): each cover is a copy of one of them attached at its
//! target, and nothing has to be unmounted (an unmount waits for an RCU grace period, which was
//! the largest single cost of a launch). Kernels before 6.15 cannot copy from such a mount: there
//! it is attached for the time of the covers and detached after.

use std::cell::Cell;
use std::collections::HashSet;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::sys::{
    ApplyError, attach_tree, clone_handle, clone_link, clone_tree, detach, detached_tmpfs, fail,
    fd_path, make_in, make_read_only, mkdir, mount, open_if_there, touch,
};
use crate::plan::format::{HARMLESS_DEVICES, MountStep, NamespacePlan};
use sandbox_core::Access;

/// Every pass, in order (see the module's documentation).
/// `program`: the program the chat starts, as given (the first-level entry of a temporary folder
/// that holds it, or the file it names, or this helper, is bound back into the chat's
/// own `/tmp` when it lies in the machine's: a CLI configured there must still start).
pub(super) fn build(ns: &NamespacePlan, program: &Path) -> Result<(), ApplyError> {
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    let sources = Sources::take(ns, program)?;
    crate::phase!("mounts: take the sources");
    if ns.system_read_only.is_some() {
        system_read_only(&sources)?;
    }
    crate::phase!("mounts: the system read-only");
    if let Some(tmp) = &ns.private_tmp {
        private_tmp(tmp, sources.tmp)?;
    }
    crate::phase!("mounts: the private /tmp");
    for step in &ns.mounts {
        if let MountStep::Pin { path } = step {
            mount(Some(path), path, None, libc::MS_BIND | libc::MS_REC, None)?;
        }
    }
    crate::phase!("mounts: pins");
    if ns.minimal_dev {
        minimal_dev(&sources.devices, ns.private_tmp.as_ref().map(|t| t.size))?;
    }
    crate::phase!("mounts: /dev");
    if ns.pid_namespace {
        mount(
            Some(Path::new("proc")),
            Path::new("/proc"),
            Some("proc"),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            None,
        )?;
    }
    if let Some(net) = &ns.network {
        super::network::resolv_conf(net)?;
    }
    let stand_ins = StandIns::make(ns.attach_stand_ins)?;
    crate::phase!("mounts: /proc and the stand-ins");
    for step in &ns.kernel {
        stand_ins.cover_kernel(step)?;
    }
    crate::phase!("mounts: the kernel's tunables");
    masks(ns, sources.bind_back)?;
    crate::phase!("mounts: masks");
    for step in &ns.mounts {
        stand_ins.cover(step)?;
    }
    stand_ins.done()?;
    crate::phase!("mounts: covers");
    if ns.minimal_dev {
        // The mount read-only (MS_BIND with MS_REMOUNT), not the filesystem, which `/dev/shm`
        // shares (see `minimal_dev`).
        mount(
            None,
            Path::new("/dev"),
            None,
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NOEXEC,
            None,
        )?;
    }
    Ok(())
}

/// What pass 2 takes, in the order the later passes use it (a lookup by path would cost the
/// square of the grants).
struct Sources {
    /// One detached tree per bind-back of every mask, in plan order.
    bind_back: std::vec::IntoIter<OwnedFd>,
    /// The writable places of a root chat, with their paths.
    writable: Vec<(PathBuf, OwnedFd)>,
    /// The harmless devices, opened before `/dev` is replaced.
    devices: Vec<(&'static str, OwnedFd)>,
    /// The chat's folders inside the temporary folders, with their paths, in plan order (one
    /// missing at launch left out).
    tmp: Vec<(PathBuf, bool, OwnedFd)>,
}

impl Sources {
    fn take(ns: &NamespacePlan, program: &Path) -> Result<Sources, ApplyError> {
        let mut bind_back = Vec::new();
        for step in &ns.mounts {
            if let MountStep::Mask { bind_back: b, .. } = step {
                for b in b {
                    bind_back.push(clone_tree(&b.path, true)?);
                }
            }
        }
        let mut writable = Vec::new();
        for place in ns.system_read_only.iter().flatten() {
            // A writable place that does not exist (no /var/tmp here) has nothing to give back.
            if place.symlink_metadata().is_ok() {
                writable.push((place.clone(), clone_tree(place, true)?));
            }
        }
        let mut devices = Vec::new();
        if ns.minimal_dev {
            for name in HARMLESS_DEVICES {
                // A device this machine lacks is left out.
                if let Some(fd) = open_if_there(&Path::new("/dev").join(name), false)? {
                    devices.push((name, fd));
                }
            }
        }
        let mut tmp = Vec::new();
        // What the chat runs and what runs it, where they lie in a temporary folder (a checkout
        // or an install in /tmp): the program as given, the file it names, and this helper's own
        // binary. Each brings back the whole first-level entry of the temporary folder that holds
        // it (a Node CLI needs its package's tree, a launcher its helper beside it), as the
        // machine's shared /tmp gave them before the chat had one of its own.
        let mut own: Vec<PathBuf> = Vec::new();
        if program.is_absolute() {
            own.push(program.to_owned());
            own.extend(std::fs::canonicalize(program));
        }
        own.extend(std::env::current_exe().and_then(std::fs::canonicalize));
        for place in ns.private_tmp.iter().flat_map(|t| &t.places) {
            let mut trees: Vec<PathBuf> = Vec::new();
            for path in &own {
                let Ok(rest) = path.strip_prefix(&place.path) else {
                    continue;
                };
                let Some(first) = rest.components().next() else {
                    continue;
                };
                let tree = place.path.join(first);
                if !trees.contains(&tree) && !place.bind_back.iter().any(|b| tree.starts_with(b)) {
                    trees.push(tree);
                }
            }
            for path in trees.iter().chain(place.bind_back.iter()) {
                let Ok(meta) = path.symlink_metadata() else {
                    continue;
                };
                tmp.push((
                    path.clone(),
                    meta.is_dir(),
                    clone_tree(path, meta.is_dir())?,
                ));
            }
        }
        Ok(Sources {
            bind_back: bind_back.into_iter(),
            writable,
            devices,
            tmp,
        })
    }
}

/// Pass 3: every mount read-only, then the writable places' own trees back on top.
fn system_read_only(sources: &Sources) -> Result<(), ApplyError> {
    make_read_only(None, Path::new("/"))?;
    for (place, tree) in &sources.writable {
        attach_tree(tree, place)?;
    }
    Ok(())
}

/// Pass 3's second half: the chat's own `/tmp` and `/var/tmp`, each a tmpfs of the configured size (anyone's to
/// write, entries their owner's only: mode 1777), with the chat's folders inside attached back.
/// For a root chat the tmpfs is writable although the system is read-only: it is the chat's.
fn private_tmp(
    tmp: &crate::plan::format::PrivateTmp,
    sources: Vec<(PathBuf, bool, OwnedFd)>,
) -> Result<(), ApplyError> {
    let size = format!("mode=1777,size={}", tmp.size);
    for place in &tmp.places {
        mount(
            Some(Path::new("tmpfs")),
            &place.path,
            Some("tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(&size),
        )?;
    }
    for (path, dir, tree) in sources {
        // The folders on the way, made in the chat's tmpfs (owned by the chat, mode 0755).
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| fail(format!("mkdir {}", parent.display()), e))?;
        }
        if dir {
            mkdir(&path, 0o700)?;
        } else {
            touch(&path, 0o600)?;
        }
        attach_tree(&tree, &path)?;
    }
    // A `TMPDIR` inside them that nothing bound back (a folder of the launcher's in the
    // machine's /tmp) is made empty in the chat's own, so that what writes there still works.
    if let Some(dir) = std::env::var_os("TMPDIR").map(PathBuf::from)
        && dir.is_absolute()
        && tmp.places.iter().any(|p| dir.starts_with(&p.path))
        && !dir.exists()
    {
        std::fs::create_dir_all(&dir).map_err(|e| fail(format!("mkdir {}", dir.display()), e))?;
    }
    Ok(())
}

/// Pass 5's `/dev`: the harmless devices bound from the host's, a pty filesystem of the
/// sandbox's own (new ptys work, the ptys of processes outside are not there to be opened; the
/// terminal the program inherited keeps working through its descriptors and `/dev/tty`), and an
/// empty `/dev/shm`.
///
/// `/dev/shm` is a folder of `/dev`'s own tmpfs bound onto itself, not a second tmpfs: one
/// filesystem fewer to make and to take down at every launch. The seal (pass 9) makes the
/// mount at `/dev` read-only, not the filesystem, so the bind at `/dev/shm` stays writable
/// (only that folder is reachable through it), and `/dev` has no size limit of its own: what
/// `/dev/shm` holds is bounded as a tmpfs of its own was, by the tmpfs default (half the memory).
///
/// `size`: `[limits] tmp`, which bounds `/dev/shm` like the chat's `/tmp` (the devices and links
/// take no room).
fn minimal_dev(devices: &[(&str, OwnedFd)], size: Option<u64>) -> Result<(), ApplyError> {
    let dev = Path::new("/dev");
    let options = match size {
        Some(size) => format!("mode=0755,size={size}"),
        None => "mode=0755".to_owned(),
    };
    mount(
        Some(Path::new("tmpfs")),
        dev,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some(&options),
    )?;
    for (name, fd) in devices {
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
    let shm = dev.join("shm");
    mkdir(&shm, 0o1777)?;
    // The mode as asked, whatever the umask (anyone's to write, entries their owner's only).
    std::fs::set_permissions(&shm, std::os::unix::fs::PermissionsExt::from_mode(0o1777))
        .map_err(|e| fail("chmod /dev/shm", e))?;
    mount(Some(&shm), &shm, None, libc::MS_BIND, None)?;
    // Programs may be mapped from it (as from a tmpfs of its own), not devices or setuid bits.
    mount(
        None,
        &shm,
        None,
        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_NOSUID | libc::MS_NODEV,
        None,
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
    Ok(())
}

/// The empty, unreadable stand-ins for what is covered: a file and a folder of mode 0 in a
/// read-only tmpfs attached nowhere, reached through these handles only.
///
/// Kernels before 6.15 refuse to copy from a mount attached nowhere (`EINVAL`): there the tmpfs is
/// attached at [`STAND_INS`] for the covers to be copied from, and detached once they are made,
/// at the cost of the unmount's grace period.
struct StandIns {
    /// The tmpfs itself: while a descriptor holds it, its files can be copied from.
    tmpfs: OwnedFd,
    file: OwnedFd,
    dir: OwnedFd,
    /// Where it is attached, on a kernel that cannot copy from it otherwise.
    attached: Option<PathBuf>,
    /// The copy of the file stand-in [`StandIns::make`] takes to learn whether the kernel copies
    /// from a mount attached nowhere: the first file cover, not closed. Closing it would unmount
    /// it, and that waits for an RCU grace period (0.3 to 1.2 ms, in about a third of the
    /// launches measured: BENCHMARKS.md).
    spare: Cell<Option<OwnedFd>>,
}

/// Where the stand-ins are attached on an older kernel, for as long as the covers take.
const STAND_INS: &str = "/dev/.cli-sandbox-stand-ins";

impl StandIns {
    /// `attach`: attach the tmpfs even where the kernel could copy from it attached nowhere (the
    /// plan says so for the tests of the older kernels' way).
    fn make(attach: bool) -> Result<StandIns, ApplyError> {
        let tmpfs = detached_tmpfs(&[("mode", "0700"), ("size", "4k")])?;
        let file = make_in(&tmpfs, "file", false)?;
        let dir = make_in(&tmpfs, "dir", true)?;
        make_read_only(Some(tmpfs.as_fd()), Path::new("the stand-ins"))?;
        let mut stand_ins = StandIns {
            tmpfs,
            file,
            dir,
            attached: None,
            spare: Cell::new(None),
        };
        let copies = match clone_handle(&stand_ins.file) {
            Ok(copy) => {
                stand_ins.spare.set(Some(copy));
                true
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => false,
            Err(e) => return Err(fail("take a copy of a stand-in", e)),
        };
        if attach || !copies {
            let at = PathBuf::from(STAND_INS);
            mkdir(&at, 0o700)?;
            attach_tree(&stand_ins.tmpfs, &at)?;
            stand_ins.attached = Some(at);
        }
        Ok(stand_ins)
    }

    /// A copy of the file or folder stand-in, to attach over an entry.
    fn copy(&self, dir: bool) -> Result<OwnedFd, ApplyError> {
        match &self.attached {
            None => match self.spare.take() {
                Some(copy) if !dir => Ok(copy),
                spare => {
                    self.spare.set(spare);
                    clone_handle(if dir { &self.dir } else { &self.file })
                        .map_err(|e| fail("take a copy of a stand-in", e))
                }
            },
            Some(at) => clone_tree(&at.join(if dir { "dir" } else { "file" }), dir),
        }
    }

    /// Done covering: on an older kernel, the attached tmpfs is detached (the covers keep what
    /// they copied). The descriptors stay open until init ends (close-on-exec: the program never
    /// has them), because closing the last one of a mount attached nowhere unmounts it, with the
    /// grace period this avoids.
    fn done(self) -> Result<(), ApplyError> {
        if let Some(at) = &self.attached {
            detach(at)?;
            std::fs::remove_dir(at).map_err(|e| fail("remove the stand-ins' folder", e))?;
        }
        std::mem::forget(self);
        Ok(())
    }

    /// Pass 6 and 8: one entry covered by a stand-in of its kind, or bound read-only onto
    /// itself. A symlink is covered as the name it is (a mount can sit on a symlink's own
    /// entry: `move_mount` does not follow the target's last link).
    fn cover(&self, step: &MountStep) -> Result<(), ApplyError> {
        match step {
            MountStep::Hide { path, dir } => attach_tree(&self.copy(*dir)?, path),
            MountStep::ReadOnly { path, dir } => {
                let tree = clone_tree(path, *dir)?;
                make_read_only(Some(tree.as_fd()), path)?;
                attach_tree(&tree, path)
            }
            // A copy of the entry's own tree attached onto it, writable as it was: a mount
            // point, which a rename or a removal inside refuses (EBUSY).
            MountStep::Keep { path, dir } => attach_tree(&clone_tree(path, *dir)?, path),
            MountStep::PinLink { path } => attach_tree(&clone_link(path)?, path),
            MountStep::Pin { .. } | MountStep::Mask { .. } => Ok(()),
        }
    }

    /// Pass 6: as [`StandIns::cover`], for the kernel's own paths (in the chat's fresh `/proc`,
    /// and `/sys`): no process of the chat exists yet to have put a symlink there, so they are
    /// bound by path, two system calls where a copy taken without following links takes four.
    fn cover_kernel(&self, step: &MountStep) -> Result<(), ApplyError> {
        match step {
            MountStep::ReadOnly { path, .. } => {
                mount(Some(path), path, None, libc::MS_BIND | libc::MS_REC, None)?;
                make_read_only(None, path)
            }
            other => self.cover(other),
        }
    }
}

/// Pass 7: each protected root covered, this chat's folders attached back inside.
fn masks(ns: &NamespacePlan, mut sources: impl Iterator<Item = OwnedFd>) -> Result<(), ApplyError> {
    for step in &ns.mounts {
        let MountStep::Mask { root, bind_back } = step else {
            continue;
        };
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
            let tree = sources
                .next()
                .ok_or_else(|| fail("bind back", "source not taken"))?;
            if b.access == Access::ReadOnly {
                make_read_only(Some(tree.as_fd()), &b.path)?;
            }
            attach_tree(&tree, &b.path)?;
        }
        mount(
            None,
            root,
            None,
            libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            None,
        )?;
    }
    Ok(())
}
