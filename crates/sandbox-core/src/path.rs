use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

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

/// A [`Resolver`] that answers a path it has canonicalized before with the same answer, without
/// asking its disk again: for the looks of one launch, where the layout is canonicalized by
/// [`crate::Layout::resolve`] and checked again by [`crate::Policy::build`] a tenth of a
/// millisecond later (the home, the app folder and the state root, twice or three times each).
///
/// What it remembers: each path asked, with its canonical form, and the canonical form with
/// itself (a canonical path's canonical form is itself, asked at the same moment). Only
/// successes: an error is asked again. [`Resolver::is_dir`] is never remembered.
///
/// Races: a remembered answer is the disk as it was at the first look. Use it only for looks a
/// moment apart whose second answer serves no purpose the first could not: the policy built
/// from a layout names the layout's paths as the first look found them, whatever a second look
/// says, and the kernel is asked again when the mounts are made. A caller that keeps one for
/// long (a long-lived context building many policies) must not: a home swapped for a symlink
/// since would go unseen (see `launch::Context`, which uses one only right after its load).
pub struct Remembering<'a> {
    resolver: &'a dyn Resolver,
    /// What an earlier one found (see [`Remembering::with`]).
    earlier: &'a [(PathBuf, PathBuf)],
    /// What this one found, by the bytes of the path asked (a search of a list was quadratic
    /// in the grants: 1,000 cost a step about 75 ms more with musl's byte-by-byte `memcmp`).
    known: std::cell::RefCell<HashMap<OsString, PathBuf>>,
}

impl std::fmt::Debug for Remembering<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remembering")
            .field("earlier", &self.earlier)
            .field("known", &self.known.borrow())
            .finish_non_exhaustive()
    }
}

impl<'a> Remembering<'a> {
    /// Remembers nothing yet.
    pub fn new(resolver: &'a dyn Resolver) -> Remembering<'a> {
        Remembering::with(resolver, &[])
    }

    /// Remembers what an earlier one found, a moment ago (pairs of a path and its canonical
    /// form, as [`Remembering::into_known`] gave them).
    pub fn with(resolver: &'a dyn Resolver, earlier: &'a [(PathBuf, PathBuf)]) -> Remembering<'a> {
        Remembering {
            resolver,
            earlier,
            known: std::cell::RefCell::new(HashMap::new()),
        }
    }

    /// What this one found (not what it was given), for another a moment later.
    pub fn into_known(self) -> Vec<(PathBuf, PathBuf)> {
        let known = self.known.into_inner().into_iter();
        known
            .map(|(path, canonical)| (path.into(), canonical))
            .collect()
    }
}

impl Resolver for Remembering<'_> {
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        // Found by bytes, not by `Path`'s `==` (names compared one by one, `/a/b/` the same as
        // `/a/b`): stricter (`/a//b` is not `/a/b`, at worst a look more), and a trailing slash,
        // which the kernel reads as "a folder", is never answered for the path without it.
        if let Some(canonical) = self.known.borrow().get(path.as_os_str()) {
            return Ok(canonical.clone());
        }
        // The earlier one's answers: the layout's few places.
        let mut earlier = self.earlier.iter();
        if let Some((_, canonical)) = earlier.find(|(p, _)| p.as_os_str() == path.as_os_str()) {
            return Ok(canonical.clone());
        }
        let canonical = self.resolver.canonicalize(path)?;
        let mut known = self.known.borrow_mut();
        if canonical.as_os_str() != path.as_os_str() {
            known.insert(canonical.clone().into(), canonical.clone());
        }
        known.insert(path.as_os_str().to_owned(), canonical.clone());
        Ok(canonical)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.resolver.is_dir(path)
    }
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
    if has_parent_dir(path) {
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

/// Whether a name of `path` is `..` (`Component::ParentDir`), read from its bytes: a `..` between
/// slashes, at the start or at the end. Walking the components costs a parse of every name,
/// at each of the thirty or so paths a launch checks.
pub fn has_parent_dir(path: &Path) -> bool {
    path.as_os_str()
        .as_bytes()
        .split(|b| *b == b'/')
        .any(|name| name == b"..")
}

/// `path` in plain form (absolute or not, without `.`, doubled or trailing slashes): copied as
/// it is when it is so already (a canonical path, nearly every one a launch sees), rebuilt name
/// by name otherwise.
pub fn plain_path(path: &Path) -> PathBuf {
    let bytes = path.as_os_str().as_bytes();
    let plain = bytes.starts_with(b"/")
        && !bytes.windows(2).any(|w| w == b"//")
        && !bytes.windows(3).any(|w| w == b"/./")
        && !(bytes.len() > 1 && (bytes.ends_with(b"/") || bytes.ends_with(b"/.")));
    if plain {
        path.to_owned()
    } else {
        path.components().collect()
    }
}

/// `Path`'s order (name by name) for two paths in plain form (absolute, without `.`, doubled
/// or trailing slashes: every canonical path), from their bytes with `/` taken as lower than
/// any other byte: the first difference is then inside one name (bytes compared as `Path`
/// compares names), or where one name ends (`/` or the end) and the other goes on, which puts
/// the shorter name first in both orders. `Path`'s own `cmp` parses every name of both.
pub(crate) fn cmp_plain(a: &Path, b: &Path) -> std::cmp::Ordering {
    let key = |b: &u8| if *b == b'/' { 0 } else { *b };
    let (a, b) = (a.as_os_str().as_bytes(), b.as_os_str().as_bytes());
    a.iter().map(key).cmp(b.iter().map(key))
}

/// [`is_within`] for two paths in plain form (see [`cmp_plain`]), from their bytes: `outer`
/// is a prefix of `inner` that ends where a name ends.
pub(crate) fn is_within_plain(inner: &Path, outer: &Path) -> bool {
    let (inner, outer) = (inner.as_os_str().as_bytes(), outer.as_os_str().as_bytes());
    inner.starts_with(outer)
        && (inner.len() == outer.len() || outer == b"/" || inner[outer.len()] == b'/')
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

#[cfg(test)]
mod tests {
    use super::fake::FakeFs;
    use super::*;
    use std::cell::RefCell;

    /// A fake disk that counts the looks at each path.
    struct Counting {
        resolver: FakeFs,
        looks: RefCell<Vec<PathBuf>>,
    }

    impl Resolver for Counting {
        fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
            self.looks.borrow_mut().push(path.to_owned());
            self.resolver.canonicalize(path)
        }
        fn is_dir(&self, path: &Path) -> bool {
            self.resolver.is_dir(path)
        }
    }

    /// Paths in plain form, of names that sort around `/` (`-`, `.`, `0`) and of prefixes of
    /// each other.
    fn any_plain_path() -> impl proptest::strategy::Strategy<Value = PathBuf> {
        use proptest::prelude::*;
        prop::collection::vec(
            prop::sample::select(vec!["a", "a-b", "a.b", "ab", "a0", ".a", "b", "-"]),
            0..5,
        )
        .prop_map(|names| {
            let mut p = PathBuf::from("/");
            p.extend(names);
            p
        })
    }

    proptest::proptest! {
        #[test]
        fn plain_paths_compare_as_path_compares_them(a in any_plain_path(), b in any_plain_path()) {
            proptest::prop_assert_eq!(cmp_plain(&a, &b), a.cmp(&b));
            proptest::prop_assert_eq!(is_within_plain(&a, &b), is_within(&a, &b));
            proptest::prop_assert_eq!(is_within_plain(&b, &a), is_within(&b, &a));
        }
    }

    #[test]
    fn a_plain_path_is_kept_and_another_made_plain() {
        for (path, plain) in [
            ("/a/b", "/a/b"),
            ("/", "/"),
            ("/a/.b/..c", "/a/.b/..c"),
            ("/a/./b", "/a/b"),
            ("//a//b", "/a/b"),
            ("/a/b/", "/a/b"),
            ("/a/b/.", "/a/b"),
            ("/.", "/"),
        ] {
            assert_eq!(
                super::plain_path(Path::new(path)),
                Path::new(plain),
                "{path}"
            );
            assert_eq!(
                super::plain_path(Path::new(path)).as_os_str(),
                Path::new(path)
                    .components()
                    .collect::<PathBuf>()
                    .as_os_str(),
                "{path}"
            );
        }
    }

    #[test]
    fn a_parent_dir_is_found_where_components_find_one() {
        for path in [
            "/a/../b",
            "/..",
            "..",
            "../a",
            "/a/..",
            "/a/..b",
            "/a/b..",
            "/a/.../b",
            "/a/./b",
            "/a//..//b",
            "/",
        ] {
            let path = Path::new(path);
            let by_components = path
                .components()
                .any(|c| c == std::path::Component::ParentDir);
            assert_eq!(has_parent_dir(path), by_components, "{}", path.display());
        }
    }

    fn counting() -> Counting {
        Counting {
            resolver: FakeFs::default()
                .dir("/real/home/.local/share/AgentWorks")
                .link("/home", "/real/home"),
            looks: RefCell::new(Vec::new()),
        }
    }

    #[test]
    fn a_path_is_looked_at_once_and_its_canonical_form_not_at_all() {
        let disk = counting();
        let resolver = Remembering::new(&disk);
        for _ in 0..3 {
            assert_eq!(
                resolver.canonicalize(Path::new("/home")).unwrap(),
                Path::new("/real/home")
            );
        }
        assert_eq!(
            resolver.canonicalize(Path::new("/real/home")).unwrap(),
            Path::new("/real/home")
        );
        assert_eq!(*disk.looks.borrow(), [PathBuf::from("/home")]);
        // What it remembers carries over to the next one, which asks nothing again.
        let known = resolver.into_known();
        let resolver = Remembering::with(&disk, &known);
        resolver.canonicalize(Path::new("/home")).unwrap();
        assert_eq!(disk.looks.borrow().len(), 1);
    }

    #[test]
    fn a_path_is_known_by_its_bytes_so_a_trailing_slash_is_looked_at_again() {
        let disk = counting();
        let resolver = Remembering::new(&disk);
        let _ = resolver.canonicalize(Path::new("/real/home"));
        // `Path`'s `==` calls these two the same; the kernel does not (a trailing slash asks
        // for a folder), so the second is asked, not answered from the first.
        let _ = resolver.canonicalize(Path::new("/real/home/"));
        let _ = resolver.canonicalize(Path::new("/real//home"));
        let asked: Vec<OsString> = disk
            .looks
            .borrow()
            .iter()
            .map(|p| p.clone().into())
            .collect();
        assert_eq!(asked, ["/real/home", "/real/home/", "/real//home"]);
    }

    #[test]
    fn an_error_is_not_remembered_and_another_path_is_looked_at() {
        let disk = counting();
        let resolver = Remembering::new(&disk);
        for _ in 0..2 {
            let e = resolver.canonicalize(Path::new("/missing")).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::NotFound);
        }
        let local = resolver.canonicalize(Path::new("/real/home/.local"));
        assert_eq!(local.unwrap(), Path::new("/real/home/.local"));
        assert_eq!(disk.looks.borrow().len(), 3);
    }

    #[test]
    fn a_layout_resolved_and_checked_through_one_looks_at_each_place_once() {
        let disk = counting();
        let resolver = Remembering::new(&disk);
        let layout = crate::Layout::resolve(
            &crate::LayoutInputs {
                os: crate::Os::Linux,
                home: "/home".into(),
                xdg_data_home: None,
                state_root: Some("/real/home/.local/share/AgentWorks".into()),
                workspace_docs: None,
            },
            &resolver,
        )
        .unwrap();
        // What `Policy::build` checks of the layout, asked again.
        for path in [&layout.home, &layout.app_folder, &layout.state_root] {
            assert_eq!(&resolver.canonicalize(path).unwrap(), path);
        }
        let looks = disk.looks.borrow();
        let mut unique = looks.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(looks.len(), unique.len(), "looked at twice: {looks:?}");
    }
}
