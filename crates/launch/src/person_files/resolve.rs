//! Where a person's file really is, learned once and held as an open folder.
//!
//! [`locate`] turns a path into a [`Located`]: a descriptor of the folder that holds the file (or
//! of the deepest folder that exists on the way to it), where that folder really is, and the
//! names still below it. Everything after that (the lock, the read, the temporary file, the
//! rename, the fsync) works relative to that descriptor, never through a path string again.
//!
//! Two ways to get there, giving the same answer:
//!
//! - **Linux, the file exists** (the common case): one `openat2` of the path with
//!   `RESOLVE_NO_MAGICLINKS` (symlinks followed, so a dotfile manager's links keep working; no
//!   `/proc/<pid>/fd` jump), its real path read back from `/proc/self/fd/N`, and its folder opened
//!   by that real path with `RESOLVE_NO_SYMLINKS` (a link put there since is refused, not
//!   followed). Any failure, including a kernel without `openat2`, falls to the walk.
//! - **The walk** (macOS, a missing file, anything the fast way did not answer): from `/`, one
//!   component at a time, each folder opened with `O_NOFOLLOW` relative to the one before; a
//!   symlink is followed only by reading it (`readlinkat`) and walking its target in its place,
//!   at most [`MAX_LINKS`] of them. The real path is known by construction: it is the chain of
//!   folders opened. It is plain POSIX, so Linux runs it too (and the tests run every attack
//!   through both ways).
//!
//! What it is not: it decides nothing about whether the place is allowed (that is
//! [`sandbox_core::Policy::person_file`]) and opens no file for reading.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Symlinks followed on the way to one file before it counts as a loop (Linux's own limit).
pub(super) const MAX_LINKS: usize = 40;

/// A file's place, resolved.
#[derive(Debug)]
pub(super) struct Located {
    /// The folder that holds the file, or the deepest existing folder on the way to it.
    pub dir: OwnedFd,
    /// Where `dir` really is: absolute, no symlink in it.
    pub dir_path: PathBuf,
    /// Below `dir`: the folders still to create, then the file's own name (always last).
    pub rest: Vec<OsString>,
}

impl Located {
    /// Where the file is (or will be, once the missing folders exist).
    pub fn resolved(&self) -> PathBuf {
        let mut path = self.dir_path.clone();
        path.extend(&self.rest);
        path
    }

    /// The file's own name.
    pub fn name(&self) -> &OsStr {
        self.rest
            .last()
            .expect("rest always ends with the file's name")
    }
}

/// Why a path has no place to edit.
#[derive(Debug)]
pub(super) enum Unresolved {
    /// The symlink `link` (whose text is `target`) leads to nothing; the first missing name
    /// would be at `at`.
    Dangling {
        link: PathBuf,
        target: PathBuf,
        at: PathBuf,
    },
    /// More than [`MAX_LINKS`] symlinks: a loop, most likely; `link` is the last one read.
    Loop { link: PathBuf },
    /// `path`, a component on the way, is neither a folder nor a link to one.
    NotAFolder { path: PathBuf },
    /// The path names a folder, not a file.
    IsAFolder { path: PathBuf },
    /// Something changed under the walk (a folder replaced by a link between two calls): try
    /// again.
    Changed,
    /// The file system said no (permissions, I/O).
    Io { path: PathBuf, source: io::Error },
}

/// How [`locate`] goes about it. Public only so that the tests can run every attack through
/// both.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Resolution {
    /// Linux's `openat2` first where it answers, the walk otherwise (the default).
    #[default]
    Fastest,
    /// The component walk only (what macOS does).
    WalkOnly,
}

/// Where `path` (absolute) really is; see the module docs.
pub(super) fn locate(path: &Path, how: Resolution) -> Result<Located, Unresolved> {
    #[cfg(target_os = "linux")]
    if how == Resolution::Fastest
        && let Some(found) = linux::existing(path)
    {
        return Ok(found);
    }
    let _ = how;
    walk(path)
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::OsString;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStringExt;
    use std::path::PathBuf;

    use rustix::fs::{CWD, Mode, OFlags, ResolveFlags};

    use super::Located;

    /// The fast way for a file that exists; `None` leaves the answer to the walk.
    pub(super) fn existing(path: &std::path::Path) -> Option<Located> {
        // O_PATH: nothing is opened for reading, so whatever the path leads to (a fifo, a
        // device) is not touched, only named.
        let file = rustix::fs::openat2(
            CWD,
            path,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_MAGICLINKS,
        )
        .ok()?;
        let link = format!("/proc/self/fd/{}", file.as_raw_fd());
        let real = rustix::fs::readlinkat(CWD, link.as_str(), Vec::new()).ok()?;
        let real = PathBuf::from(OsString::from_vec(real.into_bytes()));
        // A file removed meanwhile reads back as "<path> (deleted)": the walk answers afresh.
        if !real.is_absolute() || rustix::fs::fstat(&file).ok()?.st_nlink == 0 {
            return None;
        }
        let (folder, name) = (real.parent()?, real.file_name()?);
        // The real path has no symlink in it; a link put in its way since is refused here.
        let dir = rustix::fs::openat2(
            CWD,
            folder,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
        .ok()?;
        Some(Located {
            dir,
            dir_path: folder.to_owned(),
            rest: vec![name.to_owned()],
        })
    }
}

/// One name still to walk, and the symlink whose text brought it (`None`: the path itself).
struct Step {
    name: OsString,
    via: Option<Rc<(PathBuf, PathBuf)>>,
}

fn steps(path: &Path, via: Option<Rc<(PathBuf, PathBuf)>>) -> Vec<Step> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_owned()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .map(|name| Step {
            name,
            via: via.clone(),
        })
        .collect()
}

fn open_dir_nofollow(dir: &OwnedFd, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The component walk; see the module docs.
fn walk(path: &Path) -> Result<Located, Unresolved> {
    let io_at = |path: &Path| {
        let path = path.to_owned();
        move |e: Errno| Unresolved::Io {
            path,
            source: e.into(),
        }
    };
    let root = rustix::fs::openat(
        CWD,
        "/",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io_at(Path::new("/")))?;
    // The folders opened so far, `/` first: each one's real path is its parent's plus its name.
    let mut folders: Vec<(OwnedFd, PathBuf)> = vec![(root, PathBuf::from("/"))];
    let mut pending: VecDeque<Step> = steps(path, None).into();
    let mut links = 0;
    while let Some(step) = pending.pop_front() {
        if step.name == ".." {
            if folders.len() > 1 {
                folders.pop();
            }
            continue;
        }
        let (dir, dir_path) = folders.last().expect("`/` is never popped");
        let here = dir_path.join(&step.name);
        let stat = match rustix::fs::statat(dir, &step.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT) => {
                // Missing: nothing is created through a symlink, so a name that a link's text
                // brought makes the link dangling.
                if let Some(via) = step.via {
                    let (link, target) = (*via).clone();
                    return Err(Unresolved::Dangling {
                        link,
                        target,
                        at: here,
                    });
                }
                let mut rest = vec![step.name];
                for later in pending {
                    if later.name == ".." {
                        return Err(Unresolved::Io {
                            path: here,
                            source: Errno::NOENT.into(),
                        });
                    }
                    rest.push(later.name);
                }
                let (dir, dir_path) = folders.pop().expect("`/` is never popped");
                return Ok(Located {
                    dir,
                    dir_path,
                    rest,
                });
            }
            Err(e) => return Err(io_at(&here)(e)),
        };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Symlink => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(Unresolved::Loop { link: here });
                }
                let text = rustix::fs::readlinkat(dir, &step.name, Vec::new())
                    .map_err(|_| Unresolved::Changed)?;
                let target = PathBuf::from(OsString::from_vec(text.into_bytes()));
                if target.is_absolute() {
                    folders.truncate(1);
                }
                let via = Rc::new((here, target.clone()));
                for inner in steps(&target, Some(via)).into_iter().rev() {
                    pending.push_front(inner);
                }
            }
            FileType::Directory => {
                if pending.is_empty() {
                    return Err(Unresolved::IsAFolder { path: here });
                }
                // Replaced by a link since the `statat`: ELOOP or ENOTDIR, and the walk starts
                // again.
                let next = open_dir_nofollow(dir, &step.name).map_err(|_| Unresolved::Changed)?;
                folders.push((next, here));
            }
            _ if !pending.is_empty() => return Err(Unresolved::NotAFolder { path: here }),
            _ => {
                let (dir, dir_path) = folders.pop().expect("`/` is never popped");
                return Ok(Located {
                    dir,
                    dir_path,
                    rest: vec![step.name],
                });
            }
        }
    }
    // Only `..` and `/` were left: the path names a folder.
    Err(Unresolved::IsAFolder {
        path: folders.pop().map(|(_, p)| p).unwrap_or_default(),
    })
}

/// The first symlink on the lexical way to `path` and its text, to name in an error message. It
/// reads link texts only (never a file), and only once a refusal has been decided.
pub(super) fn first_link(path: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut prefix = PathBuf::new();
    for component in path.components() {
        prefix.push(component);
        if let Ok(target) = std::fs::read_link(&prefix) {
            return Some((prefix, target));
        }
    }
    None
}
