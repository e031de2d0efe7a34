//! The probes both suites share: which `(op, path)` questions to ask of a world, how each of our
//! operations maps to Seatbelt's, what `decide()` says of a hard link and a clone (two paths,
//! which `decide()` does not take as one operation), the check that the evaluator agrees with
//! `decide()` on all of it, and the shell commands that ask the same questions of the real
//! `sandbox-exec`, with their verdicts read from the disk.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use sandbox_core::{Op, Policy};

use super::sbpl::{Profile, Request, Subject, other_case};
use super::world::World;

/// The Seatbelt operations that stand for one of ours. Each must give the verdict `decide()`
/// gives.
///
/// - read: the data, its extended attributes, whether it exists, mapping it executable;
/// - list: reading a folder's data;
/// - write: the data and the writes of its attributes (setting the set-id bits is an operation
///   of its own, terminal in libsandbox's table);
/// - exec: running it (`process-exec*`, which Apple's prelude also calls `process-exec`);
/// - move: unlinking it, which `rename(2)` checks on its source.
///
/// Creating a name (`file-write-create`) is not one of ours alone: see [`create_expected`].
pub fn seatbelt_ops(op: Op) -> &'static [&'static str] {
    match op {
        Op::Read => &[
            "file-read-data",
            "file-read-xattr",
            "file-test-existence",
            "file-map-executable",
        ],
        Op::List => &["file-read-data"],
        Op::Write => &[
            "file-write-data",
            "file-write-mode",
            "file-write-owner",
            "file-write-flags",
            "file-write-times",
            "file-write-xattr",
            "file-write-setugid",
        ],
        Op::Exec => &["process-exec*"],
        Op::Move => &["file-write-unlink"],
    }
}

/// The `(op, path)` questions to ask of a world: every folder and file in it, entries that do
/// not exist yet, case variants of refused names, every ancestor of the protected roots and the
/// blocked programs, the launcher's lock folder and a lock in it. List is asked of folders only
/// (a file's "list" is a read).
pub fn probes(world: &World) -> Vec<(Op, PathBuf)> {
    let policy = &world.policy;
    let mut paths: BTreeSet<PathBuf> = BTreeSet::new();
    paths.extend(world.dirs.iter().cloned());
    paths.extend(world.files.keys().cloned());
    for dir in &world.dirs {
        paths.insert(dir.join("new.txt"));
    }
    let mut tops: Vec<&Path> = policy.grants().iter().map(|g| g.path.as_path()).collect();
    tops.push(policy.runtime());
    for top in tops {
        for name in [
            "PLANNING/plan.json",
            "Planning",
            "planning-not",
            "RAW.SQLITE",
            "late.db",
            "late.DB",
            "late.db/inside",
            "sub/late.db",
            "notes.sqlite3",
            "x.key",
            "x.KEY.txt",
            "Secrets/new",
            // Git's own files (`Rule::Git`), folded, nested, and what git writes as it works.
            ".git",
            ".git/hooks",
            ".git/hooks/post-checkout",
            ".GIT/Hooks/pre-commit",
            ".git/config",
            ".git/CONFIG",
            ".git/config.worktree",
            ".git/commondir",
            ".git/config.lock",
            ".git/configs",
            ".git/index",
            ".git/objects/ab/cdef",
            ".git/refs/heads/config",
            ".git/modules/lib/hooks/x",
            ".git/modules/a/b/config",
            ".git/modules/hooks",
            ".git/worktrees/w/commondir",
            ".git/worktrees/w/HEAD",
            ".gitmodules",
            ".GitModules",
            ".gitmodules/x",
            "sub/repo/.git/hooks/x",
            "sub/repo/.git/config",
            "sub/.git",
            "x.git/config",
            "x.git/hooks/post-receive",
            "x.GIT/Config",
            "x.git",
            "x.git/objects/y",
            ".gitignore",
            "hooks/x",
            // SQLite's sidecars of a refused database, and names that only look like them.
            "raw.sqlite-wal",
            "RAW.SQLITE-SHM",
            "late.db-journal",
            "late.db-wal2",
            "late.db-mj0A1B2C3D",
            "late.db-wal/inside",
            "late.db-walrus",
            "planning-wal",
            "x.key-shm",
        ] {
            paths.insert(top.join(name));
        }
    }
    for root in policy.protected() {
        paths.extend(root.ancestors().map(Path::to_path_buf));
    }
    paths.extend(policy.blocked_programs().iter().cloned());
    // The launcher's locks on the person's files: no chat may open one to hold it.
    paths.insert(policy.person_file_locks().to_owned());
    paths.insert(policy.person_file_locks().join("0123456789abcdef.lock"));
    let mut out = Vec::new();
    for path in paths {
        for op in Op::ALL {
            if op != Op::List || world.is_dir(&path) {
                out.push((op, path.clone()));
            }
        }
    }
    out
}

/// What `decide()` implies for `file-write-create` of `path`: a name made there, or, when
/// something is there, a name put in its place (a rename or a swap onto it), which takes the old
/// one away. So it is allowed when `decide()` allows both writing and moving `path`; a refusal
/// names the rule that refuses the move (the stronger: pinned before closed), else the write's.
/// A folder that exists (a protected root, an ancestor of one, a grant, the runtime) is never
/// created, so refusing its creation costs nothing.
pub fn create_expected(policy: &Policy, path: &Path) -> Expected {
    let moved = policy.decide(Op::Move, path);
    if !moved.allowed {
        return Expected::refused(moved.rule.name());
    }
    let written = policy.decide(Op::Write, path);
    if !written.allowed {
        return Expected::refused(written.rule.name());
    }
    Expected::ALLOWED
}

/// Asks the profile, under every reading of Seatbelt's precedence, every Seatbelt operation that
/// stands for `op` on `path`, and compares with `decide()`: the same verdict, and for a denial
/// the message that names the same rule. A refusal must also hold for every other case of the
/// path ([`other_case`]), by whatever rule. With `op` [`Op::Write`], `file-write-create` is
/// asked too ([`create_expected`]).
pub fn agrees(profile: &Profile, world: &World, op: Op, path: &Path) -> Result<(), String> {
    let decided = world.policy.decide(op, path);
    let bytes = path.as_os_str().as_encoded_bytes();
    let mut asked: Vec<(&str, Expected)> = seatbelt_ops(op)
        .iter()
        .map(|seatbelt_op| {
            let expected = if decided.allowed {
                Expected::ALLOWED
            } else {
                Expected::refused(decided.rule.name())
            };
            (*seatbelt_op, expected)
        })
        .collect();
    if op == Op::Write {
        asked.push(("file-write-create", create_expected(&world.policy, path)));
    }
    for (seatbelt_op, expected) in asked {
        let verdict = profile.decide_all(Request {
            op: seatbelt_op,
            subject: Subject::Path(bytes),
        })?;
        let expected_message = expected.rule.map(|r| format!("cli-sandbox: {r}"));
        if !expected.allowed
            && let Some(variant) = other_case(bytes)
        {
            let other = profile.decide_all(Request {
                op: seatbelt_op,
                subject: Subject::Path(&variant),
            })?;
            if other.allowed {
                return Err(format!(
                    "{} {} ({seatbelt_op}): refused by {:?}, but allowed as {:?} by rule {}",
                    op.as_str(),
                    path.display(),
                    expected.rule,
                    String::from_utf8_lossy(&variant),
                    other.rule,
                ));
            }
        }
        if verdict.allowed != expected.allowed || verdict.message != expected_message {
            return Err(format!(
                "{} {} ({seatbelt_op}): decide() implies {} by {:?}, the profile says {} by rule {} {:?}",
                op.as_str(),
                path.display(),
                said(expected.allowed),
                expected.rule,
                said(verdict.allowed),
                verdict.rule,
                verdict.message,
            ));
        }
    }
    Ok(())
}

fn said(allowed: bool) -> &'static str {
    if allowed { "allowed" } else { "refused" }
}

/// What `decide()` implies for a request that names two paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub allowed: bool,
    /// For a refusal, the name of the rule that refuses.
    pub rule: Option<&'static str>,
}

impl Expected {
    pub const ALLOWED: Expected = Expected {
        allowed: true,
        rule: None,
    };

    pub fn refused(rule: &'static str) -> Expected {
        Expected {
            allowed: false,
            rule: Some(rule),
        }
    }
}

/// Whether `path` may be either end of a hard link. A link is another writable name for the
/// same file, so the path must be writable; and it must lie outside every protected root: a
/// name made in the open home for a file of a grant or of the runtime would outlive the chat,
/// and a later chat with other grants would read and write this one's files through it.
/// Seatbelt asks each end on its own, so "both ends in one grant" cannot be said. And a link
/// made at a path gives its name to something else, as a create does: where
/// [`create_expected`] refuses, so does a link, by the same rule. Otherwise a refusal is the
/// rule that decides writing there.
pub fn link_end(policy: &Policy, path: &Path) -> Expected {
    let create = create_expected(policy, path);
    if !create.allowed {
        return create;
    }
    let write = policy.decide(Op::Write, path);
    if !write.allowed || policy.is_protected(path) {
        Expected::refused(write.rule.name())
    } else {
        Expected::ALLOWED
    }
}

/// Whether `path` may be either end of a clone. A clone of a folder copies everything beneath
/// it, so nothing beneath may be unreadable (of the paths the world knows: see [`unreadable`]);
/// a refusal then names the strongest rule found beneath, in `decide()`'s precedence (blocked,
/// then refused, then closed). Otherwise the path must be writable, as for a link, but a
/// clone is a new file, not another name, so it may be made inside a grant or the runtime.
pub fn clone_end(world: &World, unreadable: &[(PathBuf, &'static str)], path: &Path) -> Expected {
    let policy = &world.policy;
    let rank = |rule: &str| match rule {
        // The profile writes the credential places' clone rule last.
        "secret" => 4,
        "blocked" => 3,
        "refused" => 2,
        _ => 1,
    };
    let strongest = unreadable
        .iter()
        .filter(|(q, _)| q.starts_with(path))
        .map(|(_, rule)| *rule)
        .max_by_key(|name| rank(name));
    if let Some(rule) = strongest {
        return Expected::refused(rule);
    }
    let write = policy.decide(Op::Write, path);
    if write.allowed {
        Expected::ALLOWED
    } else {
        Expected::refused(write.rule.name())
    }
}

/// Both ends, the source first: the first refusal decides.
fn both(source: Expected, destination: Expected) -> Expected {
    if source.allowed { destination } else { source }
}

/// An open file to link or clone from, and an open path to link or clone to.
pub fn open_ends(world: &World) -> (PathBuf, PathBuf) {
    // In a folder of the home, not at its top: with `harden` the top is closed as a class.
    (
        world.home.join("work/notes.txt"),
        world.home.join("work/linked-new"),
    )
}

/// Asks the profile, under every reading of Seatbelt's precedence, for a hard link and a clone
/// of `path` to an open destination and from an open source to `path`, and compares with what
/// `decide()` implies ([`link_end`], [`clone_end`]).
pub fn agrees_on_two_paths(
    profile: &Profile,
    world: &World,
    unreadable: &[(PathBuf, &'static str)],
    path: &Path,
) -> Result<(), String> {
    let (open_source, open_destination) = open_ends(world);
    let policy = &world.policy;
    let bytes = |p: &Path| p.as_os_str().as_encoded_bytes().to_vec();
    for (source, destination) in [
        (path, open_destination.as_path()),
        (open_source.as_path(), path),
    ] {
        let cases = [
            (
                "file-link",
                both(link_end(policy, source), link_end(policy, destination)),
            ),
            (
                "file-clone",
                both(
                    clone_end(world, unreadable, source),
                    clone_end(world, unreadable, destination),
                ),
            ),
        ];
        for (op, expected) in cases {
            let (s, d) = (bytes(source), bytes(destination));
            let verdict = profile.decide_all(Request {
                op,
                subject: Subject::TwoPaths {
                    source: &s,
                    destination: &d,
                },
            })?;
            let message = expected.rule.map(|r| format!("cli-sandbox: {r}"));
            if verdict.allowed != expected.allowed || verdict.message != message {
                return Err(format!(
                    "{op} {} -> {}: decide() implies {expected:?}, the profile says {} by rule {} {:?}",
                    source.display(),
                    destination.display(),
                    said(verdict.allowed),
                    verdict.rule,
                    verdict.message,
                ));
            }
        }
    }
    Ok(())
}

/// Asks the profile, under every reading, for a swap of `path` with an open file, both ways
/// round, and compares with what `decide()` implies: `path` loses its name, so the swap is
/// refused where `decide()` refuses moving `path`, by that rule (the evaluator refuses a swap only
/// when both of its readings as a rename are refused, so `path` must refuse both its unlink and
/// its creation). A refusal must also hold for another case of `path` ([`other_case`]).
pub fn agrees_on_swap(profile: &Profile, world: &World, path: &Path) -> Result<(), String> {
    let (open, _) = open_ends(world);
    let open = open.as_os_str().as_encoded_bytes();
    let bytes = path.as_os_str().as_encoded_bytes();
    let moved = world.policy.decide(Op::Move, path);
    let expected = if moved.allowed {
        Expected::ALLOWED
    } else {
        Expected::refused(moved.rule.name())
    };
    let message = expected.rule.map(|r| format!("cli-sandbox: {r}"));
    for (a, b) in [(bytes, open), (open, bytes)] {
        let verdict = profile.decide_swap_all(a, b)?;
        if verdict.allowed != expected.allowed || verdict.message != message {
            return Err(format!(
                "swap {} <-> {}: decide() implies {expected:?}, the profile says {} by rule {} {:?}",
                String::from_utf8_lossy(a),
                String::from_utf8_lossy(b),
                said(verdict.allowed),
                verdict.rule,
                verdict.message,
            ));
        }
    }
    if !expected.allowed
        && let Some(variant) = other_case(bytes)
    {
        let verdict = profile.decide_swap_all(&variant, open)?;
        if verdict.allowed {
            return Err(format!(
                "swap {} <-> (open): refused by {:?}, but allowed as {:?}",
                path.display(),
                expected.rule,
                String::from_utf8_lossy(&variant),
            ));
        }
    }
    Ok(())
}

/// Every probe of the world through the profile: each `(op, path)` of [`probes`], and a link, a
/// clone and a swap from and to each of their paths. The failures, one line each.
pub fn disagreements(profile: &Profile, world: &World) -> Vec<String> {
    let probes = probes(world);
    let paths: BTreeSet<&PathBuf> = probes.iter().map(|(_, p)| p).collect();
    let unreadable = unreadable(world);
    let mut out: Vec<String> = probes
        .iter()
        .filter_map(|(op, path)| agrees(profile, world, *op, path).err())
        .collect();
    out.extend(
        paths
            .iter()
            .filter_map(|path| agrees_on_two_paths(profile, world, &unreadable, path).err()),
    );
    out.extend(
        paths
            .iter()
            .filter_map(|path| agrees_on_swap(profile, world, path).err()),
    );
    out
}

/// A probe as a shell command, for a world on disk, with its verdict read from the disk.
#[derive(Debug, Clone)]
pub struct ShellProbe {
    pub op: Op,
    pub path: PathBuf,
    /// What `/bin/sh -c` runs.
    pub script: String,
    out: PathBuf,
    written: String,
}

/// The probes a shell can ask without guessing: read existing files, list existing folders,
/// write files (existing or new), run the world's scripts, move what exists inside the world's
/// base (never the base or above: a broken sandbox would move it for real).
pub fn shell_probes(world: &World) -> Vec<ShellProbe> {
    let mut out = Vec::new();
    for (index, (op, path)) in probes(world).into_iter().enumerate() {
        let exists_file = world.files.contains_key(&path);
        let exists = exists_file || world.is_dir(&path);
        let parent_exists = path.parent().is_some_and(|p| world.is_dir(p));
        let inside = path.starts_with(&world.base) && path != world.base;
        let usable = match op {
            Op::Read => exists_file,
            Op::List => world.is_dir(&path),
            Op::Write => !world.is_dir(&path) && parent_exists && inside,
            Op::Exec => world.scripts.contains(&path),
            Op::Move => exists && inside && !path.starts_with(&world.scratch),
        };
        if !usable {
            continue;
        }
        let out_file = world.scratch.join(format!("out-{index}"));
        let written = format!("written-{index}");
        let p = quote(&path);
        let o = quote(&out_file);
        let script = match op {
            Op::Read => format!("cat -- {p} > {o}"),
            Op::List => format!("ls -a -- {p} > {o}"),
            Op::Write => format!("printf '%s' {written} >> {p}"),
            Op::Exec => format!("{p} {o}"),
            Op::Move => format!("mv -- {p} {}", quote(&moved(&path, index))),
        };
        out.push(ShellProbe {
            op,
            path,
            script,
            out: out_file,
            written,
        });
    }
    out
}

fn moved(path: &Path, index: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".moved-{index}"));
    PathBuf::from(name)
}

/// `'...'` for the shell, whatever the path holds.
pub fn quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Runs `/bin/sh -c SCRIPT` with `wrap` around it (the identity runs it unconfined), in the
/// world's scratch folder, its output dropped. The exit status says nothing we trust: the
/// verdict is what happened on the disk.
fn run_script(
    world: &World,
    wrap: &dyn Fn(&[OsString]) -> Vec<OsString>,
    script: &str,
) -> Result<(), String> {
    let argv = wrap(&["/bin/sh".into(), "-c".into(), script.into()]);
    let (program, args) = argv.split_first().ok_or("an empty command")?;
    Command::new(program)
        .args(args)
        .current_dir(&world.scratch)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("running {program:?}: {e}"))?;
    Ok(())
}

impl ShellProbe {
    /// Runs the probe with `wrap` around `/bin/sh -c SCRIPT` (the identity runs it unconfined),
    /// reads the verdict from the disk and puts the world back as it was.
    pub fn run(
        &self,
        world: &World,
        wrap: &dyn Fn(&[OsString]) -> Vec<OsString>,
    ) -> Result<bool, String> {
        run_script(world, wrap, &self.script)?;
        let done = self.verdict(world);
        self.undo(world)?;
        Ok(done)
    }

    fn verdict(&self, world: &World) -> bool {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        match self.op {
            Op::Read => {
                let original = world.files.get(&self.path).map_or("", String::as_str);
                !original.is_empty() && read(&self.out).starts_with(original)
            }
            Op::List => read(&self.out).lines().any(|l| l == "."),
            Op::Write => read(&self.path).ends_with(&self.written),
            Op::Exec => read(&self.out) == "ran",
            Op::Move => std::fs::symlink_metadata(self.moved_to()).is_ok(),
        }
    }

    fn moved_to(&self) -> PathBuf {
        let index = self
            .written
            .strip_prefix("written-")
            .and_then(|i| i.parse().ok())
            .unwrap_or(0);
        moved(&self.path, index)
    }

    fn undo(&self, world: &World) -> Result<(), String> {
        let err = |e: std::io::Error| format!("undoing {self:?}: {e}");
        let _ = std::fs::remove_file(&self.out);
        match self.op {
            Op::Write => match world.files.get(&self.path) {
                Some(original) => std::fs::write(&self.path, original).map_err(err)?,
                None if self.path.exists() => std::fs::remove_file(&self.path).map_err(err)?,
                None => {}
            },
            Op::Move if std::fs::symlink_metadata(self.moved_to()).is_ok() => {
                std::fs::rename(self.moved_to(), &self.path).map_err(err)?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// A hard link or a clone as a shell command, for a world on disk, with its verdict read from
/// the disk: the destination exists afterwards, as the same file (a link) or with the source's
/// content (a clone).
#[derive(Debug, Clone)]
pub struct TwoPathProbe {
    /// `file-link` or `file-clone`.
    pub op: &'static str,
    pub source: PathBuf,
    pub destination: PathBuf,
    pub script: String,
}

/// The links and clones a shell can ask without guessing: from each file of the world inside
/// its base to a new name in the scratch folder, and from an open file to a new name in each
/// folder of the world inside its base. A clone is `cp -c` (`clonefile(2)`) on macOS and
/// `cp --reflink=auto` elsewhere, where it only runs unconfined, to show the probe works.
pub fn two_path_shell_probes(world: &World) -> Vec<TwoPathProbe> {
    let (open_source, _) = open_ends(world);
    let inside = |p: &Path| p.starts_with(&world.base) && !p.starts_with(&world.scratch);
    let mut pairs: Vec<(PathBuf, PathBuf)> = Vec::new();
    for (index, file) in world.files.keys().filter(|f| inside(f)).enumerate() {
        pairs.push((file.clone(), world.scratch.join(format!("two-{index}"))));
    }
    for dir in world.dirs.iter().filter(|d| inside(d)) {
        pairs.push((open_source.clone(), dir.join("two-new")));
    }
    let clone = if cfg!(target_os = "macos") {
        "cp -c"
    } else {
        "cp --reflink=auto"
    };
    let mut out = Vec::new();
    for (source, destination) in pairs {
        for (op, command) in [("file-link", "ln"), ("file-clone", clone)] {
            let script = format!("{command} -- {} {}", quote(&source), quote(&destination));
            out.push(TwoPathProbe {
                op,
                source: source.clone(),
                destination: destination.clone(),
                script,
            });
        }
    }
    out
}

impl TwoPathProbe {
    /// What `decide()` implies ([`link_end`], [`clone_end`]), the source first.
    pub fn expected(&self, world: &World, unreadable: &[(PathBuf, &'static str)]) -> Expected {
        match self.op {
            "file-link" => both(
                link_end(&world.policy, &self.source),
                link_end(&world.policy, &self.destination),
            ),
            _ => both(
                clone_end(world, unreadable, &self.source),
                clone_end(world, unreadable, &self.destination),
            ),
        }
    }

    /// Runs the probe with `wrap` around `/bin/sh -c SCRIPT`, reads the verdict from the disk
    /// and removes what it made.
    pub fn run(
        &self,
        world: &World,
        wrap: &dyn Fn(&[OsString]) -> Vec<OsString>,
    ) -> Result<bool, String> {
        use std::os::unix::fs::MetadataExt;
        run_script(world, wrap, &self.script)?;
        let made = match (
            std::fs::symlink_metadata(&self.source),
            std::fs::symlink_metadata(&self.destination),
        ) {
            (Ok(source), Ok(destination)) => {
                if self.op == "file-link" {
                    source.ino() == destination.ino() && source.dev() == destination.dev()
                } else {
                    std::fs::read(&self.source).ok() == std::fs::read(&self.destination).ok()
                }
            }
            _ => false,
        };
        if std::fs::symlink_metadata(&self.destination).is_ok() {
            std::fs::remove_file(&self.destination)
                .map_err(|e| format!("undoing {self:?}: {e}"))?;
        }
        Ok(made)
    }
}

/// What a clone's "beneath" is read over (see [`clone_end`]): every probe path `decide()` does
/// not let the chat read, with the rule that refuses it.
pub fn unreadable(world: &World) -> Vec<(PathBuf, &'static str)> {
    probes(world)
        .into_iter()
        .map(|(_, p)| p)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter_map(|p| {
            let verdict = world.policy.decide(Op::Read, &p);
            (!verdict.allowed).then(|| (p, verdict.rule.name()))
        })
        .collect()
}
