//! The real file system, seen through the small traits of `sandbox-core` and of the plan
//! compiler.

use std::io;
use std::path::{Path, PathBuf};

use sandbox_core::Resolver;

use crate::plan::common::LaunchDisk;
use crate::plan::format::EntryKind;

/// From how many folders on [`LaunchDisk::entries_of`] lists them on several threads.
const LIST_SIDE_BY_SIDE: usize = 64;
/// At most this many listing threads: the kernel's directory cache is shared, more threads
/// than cores only wait for each other.
const MAX_LISTING_THREADS: usize = 4;

/// The machine's own file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealDisk;

impl Resolver for RealDisk {
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        #[cfg(target_os = "linux")]
        if let Some(answer) = canonical_without_symlinks(path) {
            return answer;
        }
        std::fs::canonicalize(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
}

/// `path` in its plain form when it is absolute and no component is a symlink: then it is
/// already canonical. One `openat2` with `RESOLVE_NO_SYMLINKS` says so, where `realpath` reads
/// a link per component (thirteen system calls for a grant twelve folders deep, times a
/// thousand grants).
///
/// `NotFound` when `openat2` says `ENOENT`: the walk stops at the first symlink (`ELOOP`) or
/// the first missing name, in order, so every name before the missing one was a real folder,
/// and `realpath` would walk those same names to the same missing one (three `readlink`s more
/// for `/usr/bin/xdg-open`, a blocked program most machines lack). A symlink on the way,
/// dangling or not, is `ELOOP`, never `ENOENT`.
///
/// `None` for anything else (a symlink on the way, a kernel without `openat2`, a folder that
/// cannot be entered): `realpath` answers, and says what is wrong.
#[cfg(target_os = "linux")]
fn canonical_without_symlinks(path: &Path) -> Option<io::Result<PathBuf>> {
    use std::os::unix::ffi::OsStrExt;
    if !path.is_absolute() || sandbox_core::path_has_parent_dir(path) {
        return None;
    }
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `open_how` is a struct of three u64 (flags, mode, resolve), for which all zeroes
    // is a valid value (and the one the kernel wants for the fields left unset).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: `c_path` is a C string and `how` an `open_how` of the size passed, both alive for
    // the call; openat2 writes no memory of ours.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c_path.as_ptr(),
            &how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        let error = io::Error::last_os_error();
        return (error.raw_os_error() == Some(libc::ENOENT)).then_some(Err(error));
    }
    // Only whether it opened matters: the handle is closed (by its drop) at once.
    // SAFETY: openat2 just returned this descriptor, which nothing else owns.
    drop(unsafe {
        <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as libc::c_int)
    });
    Some(Ok(sandbox_core::plain_path(path)))
}

fn entry_kind(ft: std::fs::FileType) -> EntryKind {
    if ft.is_symlink() {
        EntryKind::Symlink
    } else if ft.is_dir() {
        EntryKind::Dir
    } else {
        EntryKind::File
    }
}

impl LaunchDisk for RealDisk {
    fn exists(&self, path: &Path) -> bool {
        path.symlink_metadata().is_ok()
    }

    fn kind(&self, path: &Path) -> Option<EntryKind> {
        Some(entry_kind(path.symlink_metadata().ok()?.file_type()))
    }

    fn read_start(&self, path: &Path, limit: usize) -> Option<Vec<u8>> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let mut bytes = Vec::new();
        file.take(limit as u64).read_to_end(&mut bytes).ok()?;
        Some(bytes)
    }

    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }

    fn linked_file_id(&self, path: &Path) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let meta = path.symlink_metadata().ok()?;
        (meta.is_file() && meta.nlink() > 1).then(|| (meta.dev(), meta.ino()))
    }

    fn target_kind(&self, path: &Path) -> Option<EntryKind> {
        use std::os::unix::fs::FileTypeExt;
        let ft = std::fs::metadata(path).ok()?.file_type();
        if ft.is_dir() {
            Some(EntryKind::Dir)
        } else if ft.is_file() || ft.is_char_device() || ft.is_fifo() || ft.is_socket() {
            Some(EntryKind::File)
        } else {
            None
        }
    }

    /// Many folders are listed on a few threads: at a thousand grants the listings are most
    /// of the plan's time, nearly all of it in the kernel. Below `LIST_SIDE_BY_SIDE` (64) folders
    /// a thread costs more than it saves.
    fn entries_of(&self, dirs: &[&Path]) -> Vec<Vec<(std::ffi::OsString, EntryKind)>> {
        if dirs.len() < LIST_SIDE_BY_SIDE {
            return list_many(dirs);
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_LISTING_THREADS);
        let chunk = dirs.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let workers: Vec<_> = dirs
                .chunks(chunk)
                .map(|part| scope.spawn(move || list_many(part)))
                .collect();
            workers
                .into_iter()
                .flat_map(|worker| match worker.join() {
                    Ok(listings) => listings,
                    Err(panic) => std::panic::resume_unwind(panic),
                })
                .collect()
        })
    }

    fn entries(&self, dir: &Path) -> Vec<(std::ffi::OsString, EntryKind)> {
        #[cfg(target_os = "linux")]
        return linux_entries(None, dir);
        #[cfg(not(target_os = "linux"))]
        {
            let Ok(read) = std::fs::read_dir(dir) else {
                return Vec::new();
            };
            // The kind comes from the listing itself (d_type) where the file system gives it: a
            // `stat` per entry would double the system calls of a thousand grants.
            read.filter_map(|e| e.ok())
                .filter_map(|e| Some((e.file_name(), entry_kind(e.file_type().ok()?))))
                .collect()
        }
    }
}

/// [`LaunchDisk::entries`] of each folder. On Linux a run of folders with the same parent (the
/// workflows of workspace-docs) is opened from that parent's descriptor: the path walk down to
/// it, a third of a listing's time, is done once for the run instead of once per folder. Every
/// name was canonical when the policy was built; opening below a descriptor of its parent
/// follows the same names the full path would.
fn list_many(dirs: &[&Path]) -> Vec<Vec<(std::ffi::OsString, EntryKind)>> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{Mode, OFlags};
        let mut parent: Option<(&Path, Option<rustix::fd::OwnedFd>)> = None;
        dirs.iter()
            .map(|dir| {
                let Some(up) = dir.parent() else {
                    return linux_entries(None, dir);
                };
                if parent.as_ref().is_none_or(|(path, _)| *path != up) {
                    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
                    parent = Some((up, rustix::fs::open(up, flags, Mode::empty()).ok()));
                }
                let fd = parent.as_ref().and_then(|(_, fd)| fd.as_ref());
                linux_entries(fd.map(rustix::fd::AsFd::as_fd), dir)
            })
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    dirs.iter().map(|dir| RealDisk.entries(dir)).collect()
}

/// A listing in three system calls per folder (`open` or `openat` below `parent`, `getdents64`
/// until it is empty, `close`), where `std::fs::read_dir` adds an `fstat`. The kind comes from the listing itself
/// (d_type); only where the file system leaves it unknown is the entry looked at, without
/// following a link.
#[cfg(target_os = "linux")]
pub(crate) fn linux_entries(
    parent: Option<rustix::fd::BorrowedFd<'_>>,
    dir: &Path,
) -> Vec<(std::ffi::OsString, EntryKind)> {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    use std::os::unix::ffi::OsStrExt;

    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOCTTY;
    let opened = match (parent, dir.file_name()) {
        (Some(parent), Some(name)) => rustix::fs::openat(parent, name, flags, Mode::empty()),
        _ => rustix::fs::open(dir, flags, Mode::empty()),
    };
    let Ok(fd) = opened else {
        return Vec::new();
    };
    let Ok(mut listing) = rustix::fs::Dir::new(fd) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    while let Some(entry) = listing.read() {
        // A listing cut short by an error is what `read_dir` gave too: the entries read so far.
        let Ok(entry) = entry else { break };
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let file_type = match entry.file_type() {
            FileType::Unknown => {
                let looked_at = listing.fd().and_then(|fd| {
                    rustix::fs::statat(fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                });
                match looked_at {
                    Ok(stat) => FileType::from_raw_mode(stat.st_mode),
                    Err(_) => continue,
                }
            }
            known => known,
        };
        let kind = match file_type {
            FileType::Symlink => EntryKind::Symlink,
            FileType::Directory => EntryKind::Dir,
            _ => EntryKind::File,
        };
        out.push((std::ffi::OsStr::from_bytes(name).to_owned(), kind));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// What `std::fs::read_dir` and `symlink_metadata` say a folder holds: the reference the
    /// faster listing must agree with.
    fn reference(dir: &Path) -> HashSet<(std::ffi::OsString, EntryKind)> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let kind = entry_kind(e.path().symlink_metadata().unwrap().file_type());
                (e.file_name(), kind)
            })
            .collect()
    }

    /// `RealDisk::canonicalize` agrees with `realpath` on each kind of path it answers
    /// without it: plain, with `.`, doubled and trailing slashes, missing at the end or on the
    /// way, under a symlink, a dangling symlink, a file taken for a folder.
    #[test]
    fn canonicalize_answers_what_realpath_answers() {
        let root = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(root.path()).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/file"), b"").unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("gone"), root.join("dangling")).unwrap();
        let r = root.display();
        for path in [
            format!("{r}/a/b"),
            format!("{r}/a/./b"),
            format!("{r}//a///b/"),
            format!("{r}/a/b/."),
            format!("{r}/a/missing"),
            format!("{r}/missing/deeper"),
            format!("{r}/link/b"),
            format!("{r}/link/missing"),
            format!("{r}/dangling"),
            format!("{r}/dangling/below"),
            format!("{r}/a/file/below"),
            "/".to_owned(),
        ] {
            let path = Path::new(&path);
            let ours = RealDisk.canonicalize(path);
            let theirs = std::fs::canonicalize(path);
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{}", path.display()),
                (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{}", path.display()),
                _ => panic!("{}: {ours:?} but realpath {theirs:?}", path.display()),
            }
        }
    }

    #[test]
    fn listing_many_folders_side_by_side_gives_what_read_dir_gives() {
        use std::os::unix::ffi::OsStrExt;
        let root = tempfile::tempdir().unwrap();
        // Enough folders for the threads, under two parents (the run of each parent is opened
        // from its descriptor), and one that is missing.
        let mut dirs = Vec::new();
        for parent in ["workflows", "other"] {
            for i in 0..LIST_SIDE_BY_SIDE {
                let dir = root.path().join(parent).join(format!("w{i}"));
                std::fs::create_dir_all(dir.join("planning")).unwrap();
                std::fs::write(dir.join("raw.db"), b"").unwrap();
                std::os::unix::fs::symlink("/etc/passwd", dir.join("link.sqlite")).unwrap();
                let odd = std::ffi::OsStr::from_bytes(b"not-utf8-\xff.db");
                std::fs::write(dir.join(odd), b"").unwrap();
                dirs.push(dir);
            }
        }
        dirs.insert(3, root.path().join("workflows/missing"));
        let refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
        let listings = RealDisk.entries_of(&refs);
        assert_eq!(listings.len(), dirs.len());
        for (dir, listing) in dirs.iter().zip(&listings) {
            let got: HashSet<_> = listing.iter().cloned().collect();
            let want = if dir.exists() {
                reference(dir)
            } else {
                HashSet::new()
            };
            assert_eq!(got, want, "{}", dir.display());
            assert_eq!(RealDisk.entries(dir).len(), want.len(), "{}", dir.display());
        }
        assert_eq!(listings[0].len(), 4);
    }
}
