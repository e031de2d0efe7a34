use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::PolicyError;

/// Turns a path into its canonical form. The launcher implements it with the real file system;
/// tests implement it with a map. Keeping it a trait is what lets this crate make no system call.
pub trait Resolver {
    /// The canonical form of an existing path (every symlink resolved), or an error of kind
    /// `NotFound` when the path does not exist.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;

    /// Whether an existing, canonical path is a folder.
    fn is_dir(&self, path: &Path) -> bool;
}

/// Refuses what no policy path may be: relative, with `..`, with a NUL byte or a newline.
pub fn check_absolute_clean(what: &'static str, path: &Path) -> Result<(), PolicyError> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.contains(&0) || bytes.contains(&b'\n') || bytes.contains(&b'\r') {
        return Err(PolicyError::BadCharacter {
            what,
            path: path.to_string_lossy().into_owned(),
        });
    }
    if !path.is_absolute() {
        return Err(PolicyError::Relative {
            what,
            path: path.to_owned(),
        });
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(PolicyError::DotDot {
            what,
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// Canonical form of a path that may not exist yet: the longest existing ancestor is resolved
/// and the rest is appended as written. A protected root or a runtime that does not exist yet
/// must still be named by the path it will have once created.
pub fn canonicalize_lenient(
    what: &'static str,
    path: &Path,
    resolver: &dyn Resolver,
) -> Result<PathBuf, PolicyError> {
    check_absolute_clean(what, path)?;
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        match resolver.canonicalize(existing) {
            Ok(mut canonical) => {
                for part in missing.iter().rev() {
                    canonical.push(part);
                }
                return Ok(canonical);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                    return Err(PolicyError::Unresolvable {
                        what,
                        path: path.to_owned(),
                        reason: e.to_string(),
                    });
                };
                missing.push(name.to_owned());
                existing = parent;
            }
            Err(e) => {
                return Err(PolicyError::Unresolvable {
                    what,
                    path: path.to_owned(),
                    reason: e.to_string(),
                });
            }
        }
    }
}

/// `inner` is `outer` or lies beneath it (component-wise, so `/a/bc` is not inside `/a/b`).
pub(crate) fn is_within(inner: &Path, outer: &Path) -> bool {
    inner.starts_with(outer)
}

#[cfg(test)]
pub(crate) mod fake {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// A file system made of a set of folders, files and symlinks, for tests.
    #[derive(Default, Debug, Clone)]
    pub struct FakeFs {
        pub dirs: BTreeSet<PathBuf>,
        pub files: BTreeSet<PathBuf>,
        pub links: BTreeMap<PathBuf, PathBuf>,
    }

    impl FakeFs {
        pub fn dir(mut self, p: &str) -> Self {
            let mut cur = PathBuf::new();
            for c in Path::new(p).components() {
                cur.push(c);
                self.dirs.insert(cur.clone());
            }
            self
        }
        pub fn file(mut self, p: &str) -> Self {
            let p = Path::new(p);
            self = self.dir(p.parent().unwrap().to_str().unwrap());
            self.files.insert(p.to_owned());
            self
        }
        pub fn link(mut self, from: &str, to: &str) -> Self {
            self.links.insert(from.into(), to.into());
            self
        }
    }

    impl Resolver for FakeFs {
        fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
            let mut out = PathBuf::from("/");
            for c in path.components().skip(1) {
                out.push(c);
                for _ in 0..40 {
                    match self.links.get(&out) {
                        Some(target) => out = target.clone(),
                        None => break,
                    }
                }
                if !self.dirs.contains(&out) && !self.files.contains(&out) {
                    return Err(io::Error::new(io::ErrorKind::NotFound, "not found"));
                }
            }
            Ok(out)
        }
        fn is_dir(&self, path: &Path) -> bool {
            self.dirs.contains(path)
        }
    }
}
