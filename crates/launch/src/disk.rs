//! The real file system, seen through the small traits of `sandbox-core` and of the plan
//! compiler.

use std::io;
use std::path::{Path, PathBuf};

use sandbox_core::Resolver;

use crate::linux::plan::{EntryKind, LaunchDisk};

/// The machine's own file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealDisk;

impl Resolver for RealDisk {
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        #[cfg(target_os = "linux")]
        if let Some(canonical) = canonical_without_symlinks(path) {
            return Ok(canonical);
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
/// thousand grants). `None` for anything else (a symlink on the way, a missing entry, a kernel
/// without `openat2`): `realpath` answers, and says what is wrong.
#[cfg(target_os = "linux")]
fn canonical_without_symlinks(path: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let parent_dir = path
        .components()
        .any(|c| c == std::path::Component::ParentDir);
    if !path.is_absolute() || parent_dir {
        return None;
    }
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `open_how` is plain integers; zero is a valid value of each.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: a valid C string and a valid `open_how` of the size passed.
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
        return None;
    }
    // SAFETY: closing the descriptor just opened.
    unsafe { libc::close(fd as libc::c_int) };
    // Without `.`, doubled or trailing slashes.
    Some(path.components().collect())
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

    fn entries(&self, dir: &Path) -> Option<Vec<(String, EntryKind)>> {
        #[cfg(target_os = "linux")]
        return list_by_getdents(self, dir);
        #[cfg(not(target_os = "linux"))]
        {
            let read = std::fs::read_dir(dir).ok()?;
            // The kind comes from the listing itself (d_type) where the file system gives it.
            Some(
                read.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        Some((
                            e.file_name().into_string().ok()?,
                            entry_kind(e.file_type().ok()?),
                        ))
                    })
                    .collect(),
            )
        }
    }
}

/// A folder's entries read with `getdents64` from one descriptor: `std::fs::read_dir`
/// (glibc's `opendir`) adds an `fstat` per folder, a tenth of the Linux plan's compile at a
/// thousand grants, where listing each grant's top is nearly all of it. The kind comes from
/// the listing (`d_type`), or from `lstat` where the file system does not say. Names that are
/// not UTF-8 are left out, as no refused pattern can match them.
#[cfg(target_os = "linux")]
fn list_by_getdents(disk: &RealDisk, dir: &Path) -> Option<Vec<(String, EntryKind)>> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    // `struct linux_dirent64`: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), d_name.
    const RECLEN_AT: usize = 16;
    const TYPE_AT: usize = 18;
    const NAME_AT: usize = 19;

    let c_dir = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: a valid C string; the descriptor is owned right below.
    let fd = unsafe {
        libc::open(
            c_dir.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: just opened, owned nowhere else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut buf = vec![0u8; 32 * 1024];
    let mut out = Vec::new();
    loop {
        // SAFETY: the buffer is writable for its whole length.
        let filled = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                fd.as_raw_fd(),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        if filled == 0 {
            return Some(out);
        }
        let filled = usize::try_from(filled).ok()?;
        let mut at = 0;
        while at < filled {
            let record = buf.get(at..filled)?;
            let reclen = usize::from(u16::from_ne_bytes([
                *record.get(RECLEN_AT)?,
                *record.get(RECLEN_AT + 1)?,
            ]));
            let name = record.get(NAME_AT..reclen)?;
            let name = &name[..name.iter().position(|&b| b == 0)?];
            let d_type = record[TYPE_AT];
            at += reclen;
            let Ok(name) = std::str::from_utf8(name) else {
                continue;
            };
            if name == "." || name == ".." {
                continue;
            }
            let kind = match d_type {
                libc::DT_DIR => EntryKind::Dir,
                libc::DT_LNK => EntryKind::Symlink,
                libc::DT_UNKNOWN => match disk.kind(&dir.join(name)) {
                    Some(kind) => kind,
                    None => continue,
                },
                _ => EntryKind::File,
            };
            out.push((name.to_owned(), kind));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonicalize_agrees_with_realpath_with_and_without_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("a/b");
        std::fs::create_dir_all(&real).unwrap();
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("link")).unwrap();
        let via_link = dir.path().join("link/b");
        assert_eq!(
            RealDisk.canonicalize(&via_link).unwrap(),
            std::fs::canonicalize(&via_link).unwrap()
        );
        assert_eq!(
            RealDisk.canonicalize(&via_link).unwrap(),
            std::fs::canonicalize(&real).unwrap()
        );
        let missing = RealDisk.canonicalize(&dir.path().join("link/missing"));
        assert_eq!(missing.unwrap_err().kind(), io::ErrorKind::NotFound);
        let plain = std::fs::canonicalize(&real).unwrap();
        let untidy = format!("{}//./", plain.display());
        assert_eq!(RealDisk.canonicalize(Path::new(&untidy)).unwrap(), plain);
        let dotdot = plain.join("../b");
        assert_eq!(RealDisk.canonicalize(&dotdot).unwrap(), plain);
    }

    #[test]
    fn entries_come_with_their_kinds_and_an_unreadable_folder_is_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("planning")).unwrap();
        std::fs::write(dir.path().join("raw.db"), "x").unwrap();
        std::os::unix::fs::symlink("raw.db", dir.path().join("link.db")).unwrap();
        let mut entries = RealDisk.entries(dir.path()).unwrap();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            entries,
            [
                ("link.db".to_owned(), EntryKind::Symlink),
                ("planning".to_owned(), EntryKind::Dir),
                ("raw.db".to_owned(), EntryKind::File),
            ]
        );
        assert_eq!(RealDisk.entries(&dir.path().join("missing")), None);
    }

    #[test]
    fn a_folder_larger_than_one_read_is_listed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let long = "n".repeat(200);
        let mut expected: Vec<String> = (0..1000).map(|i| format!("{long}-{i:04}")).collect();
        for name in &expected {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let mut names: Vec<String> = RealDisk
            .entries(dir.path())
            .unwrap()
            .into_iter()
            .map(|(name, kind)| {
                assert_eq!(kind, EntryKind::File);
                name
            })
            .collect();
        names.sort();
        expected.sort();
        assert_eq!(names, expected);
    }
}
