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
//!    Kernel tunables under `/sys` are read-only for every uid (pass 6 names them).
//! 4. **Pins.** Every ancestor of a protected root (and of a hardened path) is bound onto
//!    itself: a mount point cannot be renamed or removed (`EBUSY`).
//! 5. **Devices and processes.** A fresh `/dev` (the harmless devices, a pty filesystem of the
//!    sandbox's own, a private `/dev/shm`) and the chat's own `/proc` (PID namespace).
//! 6. **Kernel.** The kernel's tunables bound read-only onto themselves, its secrets covered.
//! 7. **Masks.** An empty read-only tmpfs over each protected root, this chat's folders attached
//!    back inside it from pass 2 (read-only grants made read-only with every mount beneath).
//! 8. **Entries.** Refused entries and blocked programs covered by unreadable stand-ins;
//!    hardened paths bound read-only onto themselves.
//! 9. **Seal.** The stand-ins' own mount is detached (the covers keep it alive, nothing names
//!    it) and `/dev` is made read-only.

use std::collections::HashSet;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::plan::{HARMLESS_DEVICES, MountStep, NamespacePlan};
use super::sys::{
    ApplyError, attach_tree, clone_tree, detach, fail, fd_path, make_read_only, mkdir, mount,
    open_no_symlinks, touch,
};
use sandbox_core::Access;

/// A small read-only tmpfs holding the empty, unreadable stand-ins for what is hidden.
const STAND_INS: &str = "/dev/.cli-sandbox-stand-ins";
const HIDDEN_FILE: &str = "/dev/.cli-sandbox-stand-ins/file";
const HIDDEN_DIR: &str = "/dev/.cli-sandbox-stand-ins/dir";

/// Every pass, in order (see the module's documentation).
pub(super) fn build(ns: &NamespacePlan) -> Result<(), ApplyError> {
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    let sources = Sources::take(ns)?;
    if ns.system_read_only.is_some() {
        system_read_only(&sources)?;
    }
    for step in &ns.mounts {
        if let MountStep::Pin { path } = step {
            mount(Some(path), path, None, libc::MS_BIND | libc::MS_REC, None)?;
        }
    }
    if ns.minimal_dev {
        minimal_dev(&sources.devices)?;
    }
    if ns.pid_namespace {
        mount(
            Some(Path::new("proc")),
            Path::new("/proc"),
            Some("proc"),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            None,
        )?;
    }
    stand_ins()?;
    for step in &ns.kernel {
        cover(step)?;
    }
    masks(ns, sources.bind_back)?;
    for step in &ns.mounts {
        cover(step)?;
    }
    let stand_ins = Path::new(STAND_INS);
    detach(stand_ins)?;
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

/// What pass 2 takes, in the order the later passes use it (a lookup by path would cost the
/// square of the grants).
struct Sources {
    /// One detached tree per bind-back of every mask, in plan order.
    bind_back: std::vec::IntoIter<OwnedFd>,
    /// The writable places of a root chat, with their paths.
    writable: Vec<(PathBuf, OwnedFd)>,
    /// The harmless devices, opened before `/dev` is replaced.
    devices: Vec<(&'static str, OwnedFd)>,
}

impl Sources {
    fn take(ns: &NamespacePlan) -> Result<Sources, ApplyError> {
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
                let path = Path::new("/dev").join(name);
                if path.exists() {
                    devices.push((name, open_no_symlinks(&path, false)?));
                }
            }
        }
        Ok(Sources {
            bind_back: bind_back.into_iter(),
            writable,
            devices,
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

/// Pass 5's `/dev`: the harmless devices bound from the host's, a pty filesystem of the
/// sandbox's own (new ptys work, the ptys of processes outside are not there to be opened; the
/// terminal the program inherited keeps working through its descriptors and `/dev/tty`), and an
/// empty `/dev/shm`.
fn minimal_dev(devices: &[(&str, OwnedFd)]) -> Result<(), ApplyError> {
    let dev = Path::new("/dev");
    mount(
        Some(Path::new("tmpfs")),
        dev,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("mode=0755,size=64k"),
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
    Ok(())
}

/// The stand-ins' tmpfs: an empty file and an empty folder, both mode 0, read-only.
fn stand_ins() -> Result<(), ApplyError> {
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
    )
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

/// Pass 6 and 8: one entry covered by a stand-in of its kind, or bound read-only onto itself.
/// A symlink is covered as the name it is (a mount can sit on a symlink's own entry).
fn cover(step: &MountStep) -> Result<(), ApplyError> {
    match step {
        MountStep::Hide { path, dir } => {
            let source = if *dir { HIDDEN_DIR } else { HIDDEN_FILE };
            let tree = clone_tree(Path::new(source), *dir)?;
            attach_tree(&tree, path)
        }
        MountStep::ReadOnly { path, dir } => {
            let tree = clone_tree(path, *dir)?;
            make_read_only(Some(tree.as_fd()), path)?;
            attach_tree(&tree, path)
        }
        MountStep::Pin { .. } | MountStep::Mask { .. } => Ok(()),
    }
}
