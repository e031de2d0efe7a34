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

    fn entries(&self, dir: &Path) -> Vec<(std::ffi::OsString, EntryKind)> {
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
