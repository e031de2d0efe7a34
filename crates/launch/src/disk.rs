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
        if let Some(canonical) = canonical_by_proc(path)? {
            return Ok(canonical);
        }
        std::fs::canonicalize(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
}

/// The kernel's own name for `path` once every symlink is followed: one `open(O_PATH)` and one
/// `readlink` of `/proc/self/fd/N`, where `realpath` reads a link per component (thirteen system
/// calls for a grant twelve folders deep, times a thousand grants). `Ok(None)` when `/proc` does
/// not answer plainly (not mounted; the entry deleted meanwhile): the caller asks `realpath`.
#[cfg(target_os = "linux")]
fn canonical_by_proc(path: &Path) -> io::Result<Option<PathBuf>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(path)?;
    let Ok(named) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) else {
        return Ok(None);
    };
    let plain = named.is_absolute() && !named.as_os_str().as_bytes().ends_with(b" (deleted)");
    Ok(plain.then_some(named))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonicalize_agrees_with_realpath_through_symlinks_and_says_not_found() {
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
}
