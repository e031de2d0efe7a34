//! The folders at the top of read-write grants that the namespace plan covers with a stand-in
//! ([`crate::plan::LinuxPlan::stand_in_dirs`]: a refused folder such as `planning/`). A stand-in
//! is a mount, and a mount needs an entry to sit on: a missing one is made before the chat
//! starts (so that the chat cannot make it: it is covered), and removed again once the chat has
//! ended, if this launch made it and it is still the same, empty folder. So a launch leaves no
//! entry in a grant (`cli::a_launch_creates_no_entry_in_a_grant`).
//!
//! Two launches of the same grant at once: removing the folder would detach the other chat's
//! stand-in (the kernel detaches every mount on a removed entry, in every namespace). So every
//! launch holds a shared `flock` on each such folder, present or made, for as long as its chat
//! runs, and the launch that made one removes it only if it gets the lock exclusively, without
//! waiting: while another launch holds it, the folder stays (and is then left on disk by both;
//! the next launch alone removes nothing it did not make). Only a process that can open the
//! folder can hold its lock: the launches, the person, and a chat granted a folder above it
//! (which keeps it from being removed, and delays nothing: no launch waits for the lock).
//!
//! If the helper is killed (SIGKILL) the folder stays, as before.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};

/// One folder held for the chat's time.
pub(crate) struct Held {
    /// The grant's top (the folder that holds the entry), opened before anything is made.
    parent: OwnedFd,
    name: OsString,
    /// The folder itself, with the shared lock on it (`None`: it could not be opened as a
    /// folder, or its lock not taken; then it is never removed).
    dir: Option<OwnedFd>,
    /// This launch made it.
    made: bool,
}

impl Held {
    /// The descriptors the helper keeps while it waits for the chat.
    pub(crate) fn fds(&self) -> impl Iterator<Item = std::os::fd::RawFd> + '_ {
        use std::os::fd::AsRawFd;
        std::iter::once(self.parent.as_raw_fd()).chain(self.dir.iter().map(|d| d.as_raw_fd()))
    }
}

/// How many times a folder whose lock another launch holds exclusively (it is removing it) is
/// looked at again: that launch removes it at once, and the next round makes it anew.
const ROUNDS: usize = 8;

/// Makes each missing folder and takes the shared lock on each (`paths`: the plan's).
pub(crate) fn take(paths: &[PathBuf]) -> Result<Vec<Held>, crate::sys::ApplyError> {
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            continue;
        };
        let parent_fd = rustix::fs::open(
            parent,
            // The grant is canonical: a symlink in its place now was put there since the plan
            // was made, and is not followed (the launch fails, naming it).
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| super::sys::fail(format!("open {}", parent.display()), e))?;
        let mut held = Held {
            parent: parent_fd,
            name: name.to_owned(),
            dir: None,
            made: false,
        };
        for _ in 0..ROUNDS {
            match rustix::fs::mkdirat(&held.parent, name, Mode::from_raw_mode(0o755)) {
                Ok(()) => held.made = true,
                Err(rustix::io::Errno::EXIST) => {}
                Err(e) => {
                    return Err(super::sys::fail(format!("create {}", path.display()), e));
                }
            }
            // A symlink or a file there now (changed since the plan was made) is not a folder
            // of ours: it is covered by path as planned, and never removed.
            let Ok(dir) = rustix::fs::openat(
                &held.parent,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) else {
                break;
            };
            if rustix::fs::flock(&dir, FlockOperation::NonBlockingLockShared).is_err() {
                // Another launch is removing it (or someone holds it exclusively): look again.
                std::thread::yield_now();
                continue;
            }
            if same_entry(&held.parent, name, &dir) {
                held.dir = Some(dir);
                break;
            }
        }
        out.push(held);
    }
    Ok(out)
}

/// Whether `name` in `parent` is still the folder `dir` (not followed if a link).
fn same_entry(parent: &OwnedFd, name: &std::ffi::OsStr, dir: &OwnedFd) -> bool {
    match (
        rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW),
        rustix::fs::fstat(dir),
    ) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    }
}

/// Once the chat has ended: removes each folder this launch made that no other launch holds,
/// is still the one made and is empty. Anything else is left as it is (a failure here changes
/// nothing of the chat's, which has ended).
pub(crate) fn release(held: Vec<Held>) {
    for h in held {
        let Some(dir) = &h.dir else { continue };
        if !h.made
            || rustix::fs::flock(dir, FlockOperation::NonBlockingLockExclusive).is_err()
            || !same_entry(&h.parent, &h.name, dir)
        {
            continue;
        }
        // Refused with ENOTEMPTY when the person (AgentWorks) wrote into it meanwhile: kept,
        // as is one that cannot be removed for any other reason (nothing to tell the caller,
        // whose chat has ended; the folder is what a launch left before this module).
        let _ = rustix::fs::unlinkat(&h.parent, h.name.as_os_str(), AtFlags::REMOVEDIR);
    }
}
