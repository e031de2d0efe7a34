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
        std::fs::canonicalize(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
}

impl LaunchDisk for RealDisk {
    fn exists(&self, path: &Path) -> bool {
        path.symlink_metadata().is_ok()
    }

    fn kind(&self, path: &Path) -> Option<EntryKind> {
        let meta = path.symlink_metadata().ok()?;
        let ft = meta.file_type();
        Some(if ft.is_symlink() {
            EntryKind::Symlink
        } else if ft.is_dir() {
            EntryKind::Dir
        } else {
            EntryKind::File
        })
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

    fn entries(&self, dir: &Path) -> Vec<std::ffi::OsString> {
        let Ok(read) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        read.filter_map(|e| e.ok()).map(|e| e.file_name()).collect()
    }
}
