//! Reading a person's own CLI settings and writing pre-trust entries into them.
//!
//! An adapter says *what* to write (a [`FileEdit`]); this module writes it without losing a byte
//! of what the person had, even with a hundred launches at once, and only where the person's
//! files may be: the launcher runs unconfined, in a home that every chat can write, so each path
//! is resolved once, race-free, and checked before anything is read or written.
//!
//! - **Resolve once.** The file's real location is learned from an open descriptor (`openat2`
//!   with `RESOLVE_NO_MAGICLINKS` and `/proc/self/fd` on Linux, a component walk with
//!   `O_NOFOLLOW` elsewhere: `resolve`), and from then on everything works relative to the
//!   descriptor of the folder that holds it: missing folders are made with `mkdirat` one at a
//!   time and opened with `O_NOFOLLOW`; the file is opened by its name in that folder with
//!   `O_NOFOLLOW`; the temporary file, the `renameat` and the fsyncs use the same descriptor.
//!   Nothing is read or written through a path string after the check. A link planted in the
//!   way after the check is met by `O_NOFOLLOW` (or `RESOLVE_NO_SYMLINKS`), and the whole
//!   resolution starts again, up to eight times. The file itself is checked on the descriptor it
//!   is read from (a regular file, one name, its owner), not compared with the inode seen while
//!   resolving: another launch may have replaced it meanwhile (it does, a hundred launches at
//!   once), and what matters is that it sits, by its name and not as a link, in the checked
//!   folder.
//! - **Lock, where no chat reaches.** Launches wait for each other on the launcher's own lock,
//!   an exclusive `flock` on a file of the state root's `state/cli-sandbox/locks/`
//!   ([`Policy::person_file_locks`]), one per person's file, named by a hash of the file's real
//!   path, held from the read to the rename and waited for at most `LOCK_WAIT`, and removed
//!   as it is let go (a launch that waited on a removed one takes the name's new one). Every
//!   chat's sandbox closes the state root ([`Policy::decide`]: the Linux namespace plan masks it, the
//!   Landlock-only fallback grants nothing in it, the Seatbelt profile denies it), and the guard
//!   asks that rule before it takes the lock, so no chat can hold one and make another chat's
//!   launch wait or fail. No lock is taken on anything a chat can open: not the person's file,
//!   not its folder (which earlier versions locked: every chat can open the home and hold that
//!   lock for as long as it runs, and every other launch then waited 30 s and failed). An entry
//!   found already there (a chat launched again) is read without the lock: nothing is written.
//! - **Compare and swap, against everyone else.** The person's own CLIs write the same files
//!   and take no lock of ours (nor could they be made to; checked against the pinned CLIs:
//!   Codex `flock`s only files of its own under `~/.codex` (`installation_id`, `*.lock`), never
//!   the folder or `config.toml`; Claude Code and Gemini CLI take no `flock`, they make a
//!   `<file>.lock` folder beside the file (`proper-lockfile`), a lock any chat can make too, so
//!   it is not waited for either). So the edit is optimistic: read the file and its `fstat`,
//!   compute, write the temporary file, and just before the rename check that the file at the
//!   name is still the one read (the same inode, size, modification and change times, and
//!   bytes); if it is not, read it again and redo the edit, so that what the CLI wrote is kept.
//!   A file that did not exist is created with `RENAME_NOREPLACE`, which never replaces one
//!   made meanwhile. After eight such rounds the ninth replaces whatever is there with the edit
//!   of the latest version read (a warning says so): only a writer that never stops gets that
//!   far, a chat can be one, and it must not fail the launch. What is left: a CLI that replaces
//!   the file in the microseconds between that last check and the rename loses its write (no
//!   rename on Linux or macOS compares before it replaces), and one that rewrites the file in
//!   place while we rename loses it too; we write once, before the CLI starts.
//! - **Preserve.** TOML goes through `toml_edit`, which keeps every other byte (comments, order,
//!   odd spacing). JSON is checked and compared through `serde_json`, and the entry is spliced
//!   into the text itself (a value replaced in place, a member added after the container's last
//!   one and laid out as its neighbours are): every other byte is kept, so that removing the
//!   entry again gives back the very bytes the person had (`docs/ending-a-chat.md`). (JSON
//!   numbers beyond what an `f64`/`i64`/`u64` holds, and duplicate keys, are the known limits.)
//! - **Removal.** [`PersonFilesGuard::remove_entries`] (a chat's `end`) and the pruning in every
//!   [`PersonFilesGuard::apply`] (the entries of chats whose runtime is gone, keys below the
//!   runtimes folder only: `entry_container`) go through the same resolution, checks, lock,
//!   compare and swap and atomic write as an edit.
//! - **Atomic.** The new text goes to a temporary file in the same folder, is fsynced, renamed
//!   over the old one, and the folder is fsynced. A process killed at any point leaves the old or
//!   the new file, never a torn one (at worst a stray `.<name>.*.cli-sandbox.tmp` beside it).
//! - **Permissions.** The replacement gets the old file's mode and owner, so it is never wider
//!   than the file it replaces; a new file gets the edit's `create_mode`, and a missing folder
//!   the same mode with `x` added wherever `r` is (0600 gives 0700), whatever the umask.
//! - **Symlinks.** A settings file or folder that is a symlink into the home (a dotfiles
//!   checkout: GNU stow's relative links, absolute links) is edited where it points, so the link
//!   survives. A symlink that leads nowhere is refused (nothing is created through a link).
//! - **Refusal.** A file that cannot be parsed, or whose keys hold something else than a table,
//!   is left untouched and the error names the file (and the line, for a parse error).
//! - **Idempotent.** Nothing is written when the entry is already there and nothing is stale.
//!
//! # Where it refuses
//!
//! Nothing is read, created or written, and the error names the file and the first symlink on
//! its way, when:
//!
//! - the file, or a folder above it, resolves into protected data (a protected root of the
//!   chat's policy: workspace-docs, the app folder, the whole state root with every chat's
//!   runtime, a grant), or, for a write, onto a persistence path that `harden` closes; the place
//!   is named by its protected root only, never by the path inside it;
//! - it resolves anywhere that is not the person's: the person's places are the home and the
//!   places the person named by an environment variable an adapter read for this launch
//!   ([`PersonFiles::var`]: `CODEX_HOME`, `CLAUDE_CONFIG_DIR`, `GEMINI_CLI_HOME`, ...), taken as
//!   written. A file addressed inside this chat's own runtime (Gemini's workspace settings) must
//!   stay inside that runtime. The rule itself is [`sandbox_core::Policy::person_file`];
//! - the file is not a regular file, or has more than one name (hard links): another name could
//!   lie in protected data, where a read would fetch it, and replacing the file would split the
//!   names apart silently;
//! - the file, or the folder it is written in, is not owned by the user the launcher runs as
//!   (unless that is root, which owns nothing in particular and keeps each file's owner; a
//!   sticky folder such as `/tmp` may be another's: the kernel lets only a file's owner replace
//!   it there);
//! - a symlink on the way leads nowhere, or loops.
//!
//! The checks come before any byte of a file is read, so nothing from a protected file can
//! reach the adapters (and through them argv or the environment) or an error message: a parse
//! error quotes a position and a reason only for a file that passed them.
//!
//! What it is not: it knows nothing about any CLI (the adapters do), deletes no key but the
//! entries of chats (keys below the runtimes folder), and is not the only wall: the files a confined CLI reads later are confined by the sandbox itself.

mod formats;
mod resolve;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use sandbox_core::{
    FileEdit, FileFormat, NamedPlace, Op, PersonFiles, PersonPlaceRefusal, Policy,
    check_absolute_clean,
};

#[doc(hidden)]
pub use resolve::Resolution;
use resolve::{Located, Unresolved};

/// How many times a resolution is started again when something changed under it.
const ATTEMPTS: usize = 8;

/// How many times an edit is made again when another program (the person's CLI) rewrote the
/// file between our read and our rename, before the edit of the latest version replaces the
/// file whatever is there (only a writer that never stops, a chat, gets that far).
const REWRITES: usize = 8;

/// How long a launch waits for the launcher's lock on a person's file before it gives up. Only
/// another launch can hold it (no chat reaches the folder it is in), for the milliseconds of
/// its edit: a wait this long means a launcher that hangs.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(30);

/// Where the person's files may be read and written for one chat, and the code that does it:
/// built from the chat's [`Policy`] (its home, protected roots, runtime, `harden` paths) and
/// the places the person named by environment variables.
#[derive(Debug, Clone)]
pub struct PersonFilesGuard {
    policy: Policy,
    named: Vec<NamedPlace>,
    /// The user the launcher (and so the chat) runs as.
    uid: u32,
    resolution: Resolution,
    lock_wait: Duration,
    before_swap: Option<BeforeSwap>,
}

/// What the tests run between an edit's read and its swap, where another writer would strike.
#[derive(Clone)]
struct BeforeSwap(std::sync::Arc<dyn Fn(&Path) + Send + Sync>);

impl fmt::Debug for BeforeSwap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BeforeSwap(..)")
    }
}

/// The person's files as they are on this machine, and the launcher's own environment, for the
/// adapters ([`PersonFiles`]); reads go through a [`PersonFilesGuard`], and every absolute value
/// of a variable an adapter reads becomes one of the person's named places.
#[derive(Debug)]
pub struct RealPersonFiles {
    guard: Mutex<PersonFilesGuard>,
    /// The environment the CLI will get, when it is not this process's own.
    vars: Option<BTreeMap<String, String>>,
}

impl RealPersonFiles {
    /// The person's files of the chat `policy` is for, with this process's environment.
    pub fn for_policy(policy: &Policy) -> RealPersonFiles {
        RealPersonFiles::with_guard(PersonFilesGuard::for_policy(policy))
    }

    /// Reads through `guard`, with this process's environment.
    pub fn with_guard(guard: PersonFilesGuard) -> RealPersonFiles {
        RealPersonFiles {
            guard: Mutex::new(guard),
            vars: None,
        }
    }

    /// Reads through `guard`, with `vars` as the environment the CLI will get (a caller that
    /// launches with another environment than its own, and the tests).
    pub fn with_vars(guard: PersonFilesGuard, vars: BTreeMap<String, String>) -> RealPersonFiles {
        RealPersonFiles {
            guard: Mutex::new(guard),
            vars: Some(vars),
        }
    }

    /// The guard, with every place named by the variables read so far: what applies the
    /// launch's edits.
    pub fn guard(&self) -> PersonFilesGuard {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PersonFilesGuard> {
        self.guard.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl PersonFiles for RealPersonFiles {
    fn read(&self, path: &Path) -> io::Result<Option<String>> {
        self.lock().read(path).map_err(|e| {
            let kind = match e {
                PersonFileError::Refused { .. } => io::ErrorKind::PermissionDenied,
                PersonFileError::Io { ref source, .. } => source.kind(),
                PersonFileError::NotText { .. } => io::ErrorKind::InvalidData,
                _ => io::ErrorKind::Other,
            };
            io::Error::new(kind, e)
        })
    }

    fn var(&self, name: &str) -> Option<String> {
        let value = match &self.vars {
            Some(vars) => vars.get(name).cloned()?,
            None => std::env::var(name).ok()?,
        };
        self.lock().add_named_place(name, Path::new(&value));
        Some(value)
    }
}

/// What [`PersonFilesGuard::apply`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The file was written (or created).
    Written,
    /// The entry was already there; the file was not touched.
    AlreadyThere,
}

/// Why an edit was not applied. The person's file is untouched in every case.
#[derive(Debug, thiserror::Error)]
pub enum PersonFileError {
    /// The file is not valid in its format (JSON, TOML): it is not rewritten.
    #[error(
        "`{}` line {line}, column {column}: not valid {format} ({reason}); it was left untouched: fix or move it and launch again",
        file.display()
    )]
    Unparsable {
        /// The person's file.
        file: PathBuf,
        /// `JSON` or `TOML`.
        format: &'static str,
        /// Where the parser stopped, from 1.
        line: usize,
        /// The column there, from 1.
        column: usize,
        /// The parser's own words.
        reason: String,
    },
    /// A key the edit goes through holds a value of another kind (a string where a table
    /// was expected): the edit would have to drop the person's value, so it is not made.
    #[error(
        "`{}`: `{key}` holds {found}, where a {expected} was expected; it was left untouched: fix or remove that entry and launch again",
        file.display()
    )]
    WrongShape {
        /// The person's file.
        file: PathBuf,
        /// The key, as a path of keys.
        key: String,
        /// The kind of value there.
        found: &'static str,
        /// The kind the edit needs.
        expected: &'static str,
    },
    /// The adapter asked for an edit that cannot be made (a bug of the adapter's).
    #[error("the edit of `{}` is not valid: {why}", file.display())]
    BadEdit {
        /// The person's file.
        file: PathBuf,
        /// What is wrong with the edit.
        why: String,
    },
    /// The file is not one the launcher reads or writes ([`Refusal`]): nothing was touched.
    #[error(
        "`{}` {why}{}: nothing was read or written; {}",
        file.display(),
        through(link),
        why.fix()
    )]
    Refused {
        /// The file as the adapter named it.
        file: PathBuf,
        /// The first symlink on the way to the file, and its text.
        link: Option<(PathBuf, PathBuf)>,
        /// Why it is refused.
        why: Box<Refusal>,
    },
    /// Another launch held the launcher's lock on the file for longer than the launcher waits.
    #[error(
        "cannot lock `{}`: another launch has held the launcher's lock on it (`{}`) for {:.1} s; nothing was written: end that launch and launch again",
        file.display(),
        lock.display(),
        waited.as_secs_f64()
    )]
    Locked {
        /// The person's file, resolved.
        file: PathBuf,
        /// The lock file, in the state root.
        lock: PathBuf,
        /// How long the launcher waited.
        waited: Duration,
    },
    /// The file's bytes are not UTF-8, which every settings file the launcher edits (JSON,
    /// TOML) must be: it is not rewritten.
    #[error(
        "`{}` is not UTF-8 text, as a JSON or TOML settings file must be; it was left untouched: fix its encoding (or move it away, and the CLI makes a new one) and launch again",
        file.display()
    )]
    NotText {
        /// The person's file.
        file: PathBuf,
    },
    /// The folder of the launcher's locks is open to the chat: a chat could hold the locks.
    #[error(
        "cannot edit `{}`: the launcher's lock folder `{}` is open to the chat ({} is allowed), so a chat could hold the lock and stop other launches; nothing was written: grant no folder that holds AgentWorks' state",
        file.display(),
        dir.display(),
        op.as_str()
    )]
    LockOpen {
        /// The person's file.
        file: PathBuf,
        /// The folder of the locks.
        dir: PathBuf,
        /// An operation the policy allows the chat there.
        op: Op,
    },
    /// A read, a write or a rename failed.
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        /// What the launcher was doing (`read`, `write`, `rename`...).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
}

fn through(link: &Option<(PathBuf, PathBuf)>) -> String {
    match link {
        Some((link, target)) => format!(
            " through the symlink `{}` -> `{}`",
            link.display(),
            target.display()
        ),
        None => String::new(),
    }
}

/// Why a file is not one the launcher reads or writes; see "Where it refuses" in the module
/// docs. Every path named here passed the place check (or is the link's own text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The resolved place is not the person's ([`Policy::person_file`]).
    Place(PersonPlaceRefusal),
    /// A symlink on the way leads nowhere (it is named in the error's `link`).
    Dangling,
    /// More symlinks on the way than Linux follows: a loop, most likely.
    Loop,
    /// A component on the way is neither a folder nor a link to one.
    NotAFolder {
        /// The component, resolved.
        path: PathBuf,
    },
    /// The file is a folder, a fifo, a device or a socket.
    NotRegular {
        /// The file, resolved.
        path: PathBuf,
        /// What it is, in words.
        kind: &'static str,
    },
    /// The file has more than one name.
    HardLinks {
        /// The file, resolved.
        path: PathBuf,
        /// Its number of names.
        names: u64,
    },
    /// The file (or, with `folder`, the folder it is written in) belongs to another user.
    NotOwned {
        /// The file or folder, resolved.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
        /// The launcher's uid.
        uid: u32,
        /// The folder the file is written in, not the file itself.
        folder: bool,
    },
    /// Something kept moving under the resolution.
    KeptChanging,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Place(place) => write!(f, "leads {place}"),
            Refusal::Dangling => write!(f, "leads nowhere"),
            Refusal::Loop => write!(f, "goes through too many symlinks (a loop?)"),
            Refusal::NotAFolder { path } => {
                write!(
                    f,
                    "goes through `{}`, which is not a folder",
                    path.display()
                )
            }
            Refusal::NotRegular { path, kind } => {
                write!(f, "is a {kind} (`{}`), not a regular file", path.display())
            }
            Refusal::HardLinks { path, names } => write!(
                f,
                "(`{}`) has {names} names (hard links): another may lie in protected data, and replacing the file would split them",
                path.display()
            ),
            Refusal::NotOwned {
                path,
                owner,
                uid,
                folder,
            } => write!(
                f,
                "{} `{}`, owned by uid {owner}, not by uid {uid} that runs this launch",
                if *folder { "is in the folder" } else { "is" },
                path.display()
            ),
            Refusal::KeptChanging => write!(
                f,
                "changed while it was being resolved, {ATTEMPTS} times in a row"
            ),
        }
    }
}

impl Refusal {
    fn fix(&self) -> &'static str {
        match self {
            Refusal::Place(_) => {
                "remove that symlink, or point it (or the variable that names the place) at a folder of your own, and launch again"
            }
            Refusal::Dangling => "create what the link points to, or remove it, and launch again",
            Refusal::Loop | Refusal::NotAFolder { .. } | Refusal::NotRegular { .. } => {
                "fix the path and launch again"
            }
            Refusal::HardLinks { .. } => {
                "make it a single file (`cp` it to a new name, then `mv` that over it) and launch again"
            }
            Refusal::NotOwned { .. } => {
                "give it to the user that launches (`chown`) and launch again"
            }
            Refusal::KeptChanging => "launch again once nothing else is moving it",
        }
    }
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> PersonFileError {
    let path = path.to_owned();
    move |source| PersonFileError::Io {
        action,
        path,
        source,
    }
}

fn errno(action: &'static str, path: &Path) -> impl FnOnce(Errno) -> PersonFileError {
    let inner = io_err(action, path);
    move |e| inner(e.into())
}

/// What is at a name in a checked folder.
enum Existing {
    Missing,
    /// A symlink sits there now (planted since the resolution): resolve again.
    Changed,
    File(File, rustix::fs::Stat),
}

impl PersonFilesGuard {
    /// The guard for a chat's policy; the launcher runs as the current effective user.
    pub fn for_policy(policy: &Policy) -> PersonFilesGuard {
        PersonFilesGuard {
            policy: policy.clone(),
            named: Vec::new(),
            uid: rustix::process::geteuid().as_raw(),
            resolution: Resolution::default(),
            lock_wait: LOCK_WAIT,
            before_swap: None,
        }
    }

    /// Waits at most `wait` for the launcher's lock on a file (instead of `LOCK_WAIT`).
    pub fn with_lock_wait(mut self, wait: Duration) -> PersonFilesGuard {
        self.lock_wait = wait;
        self
    }

    /// Adds a place the person named by the variable `var` (its value, as written); a relative
    /// one, or one with `..`, names nothing.
    pub fn with_named_place(mut self, var: &str, path: &Path) -> PersonFilesGuard {
        self.add_named_place(var, path);
        self
    }

    fn add_named_place(&mut self, var: &str, path: &Path) {
        let place = NamedPlace {
            var: var.to_owned(),
            path: path.to_owned(),
        };
        if check_absolute_clean("named place", path).is_ok() && !self.named.contains(&place) {
            self.named.push(place);
        }
    }

    /// For the tests: `hook` runs with the file's real path after each read of an edit and
    /// before its swap, where another program's write would meet ours.
    #[doc(hidden)]
    pub fn before_swap(mut self, hook: impl Fn(&Path) + Send + Sync + 'static) -> PersonFilesGuard {
        self.before_swap = Some(BeforeSwap(std::sync::Arc::new(hook)));
        self
    }

    #[doc(hidden)]
    pub fn resolving_by(mut self, resolution: Resolution) -> PersonFilesGuard {
        self.resolution = resolution;
        self
    }

    /// The file's text, `Ok(None)` when it does not exist, once its place passed the checks.
    pub fn read(&self, path: &Path) -> Result<Option<String>, PersonFileError> {
        if !path.is_absolute() {
            return Err(PersonFileError::BadEdit {
                file: path.to_owned(),
                why: "the path is not absolute".to_owned(),
            });
        }
        for _ in 0..ATTEMPTS {
            let Some(place) = self.place(Op::Read, path)? else {
                continue;
            };
            if place.rest.len() > 1 {
                return Ok(None); // a folder on the way does not exist
            }
            let resolved = place.resolved();
            match open_existing(&place.dir, place.name()).map_err(errno("read", &resolved))? {
                Existing::Missing => return Ok(None),
                Existing::Changed => continue,
                Existing::File(file, stat) => {
                    self.check_file(path, &resolved, &stat)?;
                    return read_text(file, &resolved).map(Some);
                }
            }
        }
        Err(self.refused(path, Refusal::KeptChanging))
    }

    /// Writes `edit` into its file under the launcher's lock on it, by compare and swap,
    /// atomically; see the module docs.
    pub fn apply(&self, edit: &FileEdit) -> Result<Applied, PersonFileError> {
        let bad = |why: &str| PersonFileError::BadEdit {
            file: edit.file.clone(),
            why: why.to_owned(),
        };
        if !edit.file.is_absolute() {
            return Err(bad("the path is not absolute"));
        }
        if edit.keys.is_empty() {
            return Err(bad("it names no key"));
        }
        if edit.create_mode & !0o777 != 0 {
            return Err(bad("create_mode has bits beyond 0o777"));
        }
        for _ in 0..ATTEMPTS {
            if let Some(applied) = self.try_apply(edit)? {
                return Ok(applied);
            }
        }
        Err(self.refused(&edit.file, Refusal::KeptChanging))
    }

    /// One attempt; `Ok(None)` when something changed under it and it must start again.
    fn try_apply(&self, edit: &FileEdit) -> Result<Option<Applied>, PersonFileError> {
        let file = edit.file.as_path();
        let container = entry_container(edit, self.runtimes());
        let compute = |old: Option<&str>| -> Result<Option<String>, PersonFileError> {
            // Entries of chats whose runtime is gone go first (a crashed provider's), then the
            // edit; nothing is written when neither changes anything.
            let liveness = Liveness::new(self);
            let stale = |key: &str| liveness.is_stale(key);
            let prune: formats::Prune<'_> = container
                .as_deref()
                .map(|keys| (keys, &stale as &dyn Fn(&str) -> bool));
            if edit.format == FileFormat::Toml {
                // One parse for both: a long-lived TOML file is slow to parse.
                return formats::edit_toml(file, old.unwrap_or(""), edit, prune);
            }
            let pruned = match prune {
                Some((keys, ours)) => remove(file, edit.format, old.unwrap_or(""), keys, ours)?,
                None => None,
            };
            let base = pruned.as_deref().or(old);
            Ok(formats::edit_json(file, base, edit)?.or(pruned))
        };
        // The entry that serves every chat is read under the lock even when it is there: an
        // `end` that removes it (its runtime was the last) holds the lock while it looks for
        // runtimes, so either it sees this launch's runtime (made before this) and keeps the
        // entry, or it has removed it and this launch writes it again.
        let shared = edit.keys.iter().any(|k| Path::new(k) == self.runtimes())
            || edit
                .value
                .as_str()
                .is_some_and(|v| Path::new(v) == self.runtimes());
        // A pruning makes no file (nor folder) where there is none.
        let create = (edit.action != sandbox_core::EditAction::Prune).then_some(edit.create_mode);
        self.try_change(file, create, !shared, &compute)
    }

    /// Removes, from the person's file `file`, the entries `ours` picks among those of each
    /// container in `containers` (the members of an object or table by key, the string items of
    /// a list), and the entries of chats whose runtime is gone, under the launcher's lock, by
    /// compare and swap, atomically, as [`Self::apply`] writes; a container left empty goes too
    /// (see `formats::remove_json`). Nothing is created: a missing file or folder is
    /// [`Applied::AlreadyThere`] (nothing to remove), and so is a file without such entries.
    pub fn remove_entries(
        &self,
        file: &Path,
        format: FileFormat,
        containers: &[Vec<String>],
        ours: &dyn Fn(&str) -> bool,
    ) -> Result<Applied, PersonFileError> {
        if !file.is_absolute() {
            return Err(PersonFileError::BadEdit {
                file: file.to_owned(),
                why: "the path is not absolute".to_owned(),
            });
        }
        let compute = |old: Option<&str>| -> Result<Option<String>, PersonFileError> {
            let Some(mut text) = old.map(str::to_owned) else {
                return Ok(None);
            };
            let mut changed = false;
            let liveness = Liveness::new(self);
            for keys in containers {
                let pick = |key: &str| ours(key) || liveness.is_stale(key);
                if let Some(new) = remove(file, format, &text, keys, &pick)? {
                    text = new;
                    changed = true;
                }
            }
            Ok(changed.then_some(text))
        };
        for _ in 0..ATTEMPTS {
            if let Some(applied) = self.try_change(file, None, true, &compute)? {
                return Ok(applied);
            }
        }
        Err(self.refused(file, Refusal::KeptChanging))
    }

    /// The folder of every chat's runtime (the runtime's parent).
    fn runtimes(&self) -> &Path {
        self.policy
            .runtime()
            .parent()
            .unwrap_or(self.policy.runtime())
    }

    /// Whether `key` names a place in a chat's runtime (below the runtimes folder) whose runtime
    /// no longer exists: an entry a launch of ours wrote for a chat that is gone; or is the
    /// runtimes folder itself (the entry that serves every chat) while no runtime is left in it.
    pub fn is_stale(&self, key: &str) -> bool {
        Liveness::new(self).is_stale(key)
    }

    /// One attempt at changing `file` by `compute` (the new text from the old, `None`: nothing
    /// to write); `create_mode`: the mode of a file (and folders) to create, `None`: create
    /// nothing; `unlocked`: a file that `compute` leaves as it is may be read without the lock.
    /// `Ok(None)` when something changed under it and it must start again.
    fn try_change(
        &self,
        file: &Path,
        create_mode: Option<u32>,
        unlocked: bool,
        compute: &Compute<'_>,
    ) -> Result<Option<Applied>, PersonFileError> {
        let Some(place) = self.place(Op::Write, file)? else {
            return Ok(None);
        };
        if create_mode.is_none() && place.rest.len() > 1 {
            return Ok(Some(Applied::AlreadyThere)); // a folder on the way does not exist
        }
        let name = place.name().to_owned();
        let Some((dir, dir_path)) =
            create_missing(place, folder_mode(create_mode.unwrap_or(0o600)))?
        else {
            return Ok(None);
        };
        let dir_stat = rustix::fs::fstat(&dir).map_err(errno("inspect the folder", &dir_path))?;
        // In a sticky folder (`/tmp` as a service's home) the kernel lets each entry be
        // replaced only by its own owner, and the file's owner is checked below.
        if mode_bits(&dir_stat) & 0o1000 == 0 {
            self.check_owner(file, &dir_path, dir_stat.st_uid, true)?;
        }
        let resolved = dir_path.join(&name);
        // An entry that is there already needs no lock (most launches: a chat launched again).
        match open_existing(&dir, &name).map_err(errno("read", &resolved))? {
            Existing::Missing if create_mode.is_none() => return Ok(Some(Applied::AlreadyThere)),
            Existing::Missing => {}
            Existing::Changed => return Ok(None),
            Existing::File(..) if !unlocked => {}
            Existing::File(handle, stat) => {
                self.check_file(file, &resolved, &stat)?;
                let text = read_text(handle, &resolved)?;
                if compute(Some(&text))?.is_none() {
                    return Ok(Some(Applied::AlreadyThere));
                }
            }
        }
        // Launches of every chat wait for each other here, and for nothing a chat can hold.
        let _lock = self.launch_lock(file, &resolved)?;
        // The lock is released when `_lock` is closed, on every path out of here.

        // Against writers that take no lock of ours (the person's own CLIs): compare and swap.
        for round in 0..=REWRITES {
            let (old_text, old_stat) =
                match open_existing(&dir, &name).map_err(errno("read", &resolved))? {
                    Existing::Missing => (None, None),
                    Existing::Changed => return Ok(None),
                    Existing::File(handle, stat) => {
                        self.check_file(file, &resolved, &stat)?;
                        (Some(read_text(handle, &resolved)?), Some(stat))
                    }
                };
            let Some(new_text) = compute(old_text.as_deref())? else {
                return Ok(Some(Applied::AlreadyThere));
            };
            let (mode, owner) = match &old_stat {
                Some(stat) => (mode_bits(stat) & 0o7777, Some((stat.st_uid, stat.st_gid))),
                // Only an edit creates a file (`compute` of nothing is nothing for a removal).
                None => (create_mode.unwrap_or(0o600), None),
            };
            let mut tmp =
                write_temporary(&dir, &dir_path, &name, new_text.as_bytes(), mode, owner)?;
            if let Some(BeforeSwap(hook)) = &self.before_swap {
                hook(&resolved);
            }
            let seen = match (&old_text, &old_stat) {
                (Some(text), Some(stat)) => Seen::File(text.as_bytes(), stat),
                _ => Seen::Nothing,
            };
            // A writer that rewrites the file after every read of ours (a chat can be one: the
            // home is open to it) must not fail the launch: the last round replaces whatever is
            // there with the edit of the latest version read.
            let seen = if round < REWRITES {
                seen
            } else {
                Seen::Anything
            };
            if matches!(seen, Seen::Anything) {
                tracing::warn!(
                    file = %resolved.display(),
                    rounds = REWRITES,
                    "rewritten by another program after each read: the edit of the latest version replaces it"
                );
            }
            match swap(&dir, &dir_path, &name, &mut tmp, seen)? {
                Swapped::Done => return Ok(Some(Applied::Written)),
                Swapped::Rewritten => {
                    tracing::debug!(file = %resolved.display(), round, "rewritten since it was read: the edit is made again");
                    continue;
                }
                Swapped::Linked => return Ok(None),
            }
        }
        unreachable!("the last round replaces the file whatever is there")
    }

    /// The launcher's own lock on the person's file `resolved` (its real place), taken
    /// exclusively: a file in [`Policy::person_file_locks`], inside the state root that every
    /// chat's sandbox closes, named by a hash of the file's real path ([`Self::lock_file`]).
    /// Waited for at most `lock_wait`: only another launch holds it, for the few milliseconds of
    /// its edit. The file is removed again as the lock is let go (so that a folder of locks does
    /// not grow by one per chat), which is why a lock taken is kept only if the name still
    /// names the file it was taken on: a launch that waited on a file removed meanwhile takes
    /// the lock again on the name's new file.
    fn launch_lock(&self, file: &Path, resolved: &Path) -> Result<LaunchLock, PersonFileError> {
        let dir = self.policy.person_file_locks();
        // The one thing the lock stands on: no chat reaches it. Asked of the rule itself, so
        // that a configuration that opened it (a grant over the state root) stops the launch
        // instead of handing the chats a lock they could hold.
        if let Some(op) = [Op::Read, Op::Write, Op::List]
            .into_iter()
            .find(|op| self.policy.decide(*op, dir).allowed)
        {
            return Err(PersonFileError::LockOpen {
                file: file.to_owned(),
                dir: dir.to_owned(),
                op,
            });
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err("create the lock folder", dir))?;
        let lock_path = self.lock_file(resolved);
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            let lock = rustix::fs::open(
                &lock_path,
                OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                raw_mode(0o600),
            )
            .map_err(errno("open the lock", &lock_path))?;
            loop {
                match rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive) {
                    Ok(()) => break,
                    Err(Errno::WOULDBLOCK) if started.elapsed() < self.lock_wait => {
                        std::thread::sleep(pause);
                        pause = (pause * 2).min(Duration::from_millis(10));
                    }
                    Err(Errno::WOULDBLOCK) => {
                        return Err(PersonFileError::Locked {
                            file: resolved.to_owned(),
                            lock: lock_path,
                            waited: started.elapsed(),
                        });
                    }
                    Err(Errno::INTR) => {}
                    Err(e) => return Err(errno("lock", &lock_path)(e)),
                }
            }
            let ours = rustix::fs::fstat(&lock).map_err(errno("inspect the lock", &lock_path))?;
            match rustix::fs::statat(rustix::fs::CWD, &lock_path, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(now) if (now.st_dev, now.st_ino) == (ours.st_dev, ours.st_ino) => {
                    return Ok(LaunchLock {
                        _fd: lock,
                        path: lock_path,
                    });
                }
                // Removed (or replaced) by the launch that held it before: take the new one.
                Ok(_) | Err(Errno::NOENT) => continue,
                Err(e) => return Err(errno("inspect the lock", &lock_path)(e)),
            }
        }
    }

    /// The lock file of the person's file at `resolved` (its real path), in
    /// [`Policy::person_file_locks`]: `<hash>.lock`, FNV-1a of the path's bytes (fixed by its
    /// definition, so that every build of the launcher names it alike). Two files whose paths
    /// share a hash share a lock: their launches wait for each other, nothing more.
    #[doc(hidden)]
    pub fn lock_file(&self, resolved: &Path) -> PathBuf {
        use std::hash::Hasher;
        let mut hash = fnv::FnvHasher::default();
        hash.write(resolved.as_os_str().as_bytes());
        self.policy
            .person_file_locks()
            .join(format!("{:016x}.lock", hash.finish()))
    }

    /// The checked place of `file`; `Ok(None)` when it must be resolved again. Every path an
    /// error names has passed the place check first.
    fn place(&self, op: Op, file: &Path) -> Result<Option<Located>, PersonFileError> {
        let located = match resolve::locate(file, self.resolution) {
            Ok(located) => located,
            Err(Unresolved::Changed) => return Ok(None),
            Err(Unresolved::Dangling { link, target, at }) => {
                // Where it leads decides first: a link into protected data is named as such.
                self.judge(op, file, &at)?;
                self.judge(op, file, &link)?;
                return Err(PersonFileError::Refused {
                    file: file.to_owned(),
                    link: Some((link, target)),
                    why: Box::new(Refusal::Dangling),
                });
            }
            Err(Unresolved::Loop { link }) => {
                self.judge(op, file, &link)?;
                return Err(self.refused(file, Refusal::Loop));
            }
            Err(Unresolved::NotAFolder { path }) => {
                self.judge(op, file, &path)?;
                return Err(self.refused(file, Refusal::NotAFolder { path }));
            }
            Err(Unresolved::IsAFolder { path }) => {
                self.judge(op, file, &path)?;
                return Err(self.refused(
                    file,
                    Refusal::NotRegular {
                        path,
                        kind: "folder",
                    },
                ));
            }
            Err(Unresolved::Io { path, source }) => {
                self.judge(op, file, &path)?;
                return Err(PersonFileError::Io {
                    action: "resolve",
                    path,
                    source,
                });
            }
        };
        self.judge(op, file, &located.resolved())?;
        Ok(Some(located))
    }

    fn judge(&self, op: Op, file: &Path, resolved: &Path) -> Result<(), PersonFileError> {
        self.policy
            .person_file(op, file, resolved, &self.named)
            .map_err(|place| self.refused(file, Refusal::Place(place)))
    }

    fn refused(&self, file: &Path, why: Refusal) -> PersonFileError {
        // A link's text is named only where the link itself is not in protected data.
        let link = resolve::first_link(file).filter(|(link, _)| {
            !self.policy.is_protected(link) || link.starts_with(self.policy.runtime())
        });
        PersonFileError::Refused {
            file: file.to_owned(),
            link,
            why: Box::new(why),
        }
    }

    fn check_file(
        &self,
        file: &Path,
        resolved: &Path,
        stat: &rustix::fs::Stat,
    ) -> Result<(), PersonFileError> {
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => None,
            FileType::Directory => Some("folder"),
            FileType::Fifo => Some("fifo"),
            FileType::Socket => Some("socket"),
            FileType::CharacterDevice | FileType::BlockDevice => Some("device"),
            _ => Some("special file"),
        };
        if let Some(kind) = kind {
            return Err(self.refused(
                file,
                Refusal::NotRegular {
                    path: resolved.to_owned(),
                    kind,
                },
            ));
        }
        #[allow(clippy::useless_conversion)] // u16 on macOS, u64 on Linux
        let names = u64::from(stat.st_nlink);
        if names > 1 {
            return Err(self.refused(
                file,
                Refusal::HardLinks {
                    path: resolved.to_owned(),
                    names,
                },
            ));
        }
        self.check_owner(file, resolved, stat.st_uid, false)
    }

    fn check_owner(
        &self,
        file: &Path,
        path: &Path,
        owner: u32,
        folder: bool,
    ) -> Result<(), PersonFileError> {
        if self.uid == 0 || owner == self.uid {
            return Ok(());
        }
        Err(self.refused(
            file,
            Refusal::NotOwned {
                path: path.to_owned(),
                owner,
                uid: self.uid,
                folder,
            },
        ))
    }
}

/// The keys of the container in which `edit` writes an entry of a chat's own (keyed by a path
/// below `runtimes`, the folder of every chat's runtime, or a list item naming one): the
/// entries `end` and pruning remove. `None` when the edit names no chat's place (an entry of the
/// person's: a key approved, a grant's folder trusted).
pub(crate) fn entry_container(edit: &FileEdit, runtimes: &Path) -> Option<Vec<String>> {
    // The runtimes folder itself too: the one entry that serves every chat.
    let below = |key: &str| Path::new(key).strip_prefix(runtimes).is_ok();
    match edit.action {
        sandbox_core::EditAction::Set | sandbox_core::EditAction::Prune => {
            let at = edit.keys.iter().position(|k| below(k))?;
            Some(edit.keys[..at].to_vec())
        }
        sandbox_core::EditAction::AddToList => edit
            .value
            .as_str()
            .filter(|v| below(v))
            .map(|_| edit.keys.clone()),
    }
}

/// Which chats' runtimes exist, for one computation of a file's new text: the runtimes folder
/// is listed once, on the first key that needs it (with 10,000 entries in a file, one listing
/// instead of 10,000 lookups), after the file was read, so a runtime an entry of the text names
/// was made before the listing (a runtime is made before its entries are written).
struct Liveness<'g> {
    guard: &'g PersonFilesGuard,
    /// The names in the runtimes folder; `None` when it cannot be listed (then nothing is
    /// stale: only a runtime known to be gone makes an entry stale).
    listing: std::cell::OnceCell<Option<std::collections::HashSet<OsString>>>,
}

impl<'g> Liveness<'g> {
    fn new(guard: &'g PersonFilesGuard) -> Liveness<'g> {
        Liveness {
            guard,
            listing: std::cell::OnceCell::new(),
        }
    }

    fn listing(&self) -> Option<&std::collections::HashSet<OsString>> {
        self.listing
            .get_or_init(|| match std::fs::read_dir(self.guard.runtimes()) {
                Ok(dir) => dir
                    .map(|entry| entry.map(|e| e.file_name()))
                    .collect::<io::Result<_>>()
                    .ok(),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Some(Default::default()),
                Err(_) => None,
            })
            .as_ref()
    }

    /// See [`PersonFilesGuard::is_stale`].
    fn is_stale(&self, key: &str) -> bool {
        let runtimes = self.guard.runtimes();
        let Ok(rest) = Path::new(key).strip_prefix(runtimes) else {
            return false;
        };
        match rest.components().next() {
            // The entry for every chat: kept while this chat's runtime (a launch's: it exists)
            // or any other is there.
            None => {
                let own = self.guard.policy.runtime();
                own.starts_with(runtimes)
                    && rustix::fs::statat(rustix::fs::CWD, own, AtFlags::SYMLINK_NOFOLLOW).is_err()
                    && self.listing().is_some_and(|names| names.is_empty())
            }
            Some(std::path::Component::Normal(chat)) => {
                self.listing().is_some_and(|names| !names.contains(chat))
            }
            Some(_) => false,
        }
    }
}

/// The new text of a person's file from its old text (`None`: missing), `None` when nothing is
/// to be written.
type Compute<'a> = dyn Fn(Option<&str>) -> Result<Option<String>, PersonFileError> + 'a;

/// [`formats::remove_json`] or [`formats::remove_toml`] by `format`.
fn remove(
    file: &Path,
    format: FileFormat,
    text: &str,
    container: &[String],
    ours: &dyn Fn(&str) -> bool,
) -> Result<Option<String>, PersonFileError> {
    match format {
        FileFormat::Json => formats::remove_json(file, text, container, ours),
        FileFormat::Toml => formats::remove_toml(file, text, container, ours),
    }
}

/// The launcher's lock on one person's file, held while it lives; removed as it is let go.
#[derive(Debug)]
struct LaunchLock {
    /// The locked file, closed (and the lock let go) after `drop` has removed its name.
    _fd: OwnedFd,
    path: PathBuf,
}

impl Drop for LaunchLock {
    fn drop(&mut self) {
        // Removed while still held, so that no launch takes a lock on it afterwards and keeps it
        // (each checks, once it holds a lock, that the name still names that file). Best effort:
        // a lock file left behind is taken, checked and removed by the next launch.
        let _ = rustix::fs::unlink(&self.path);
    }
}

/// Makes the folders `place` still lacks, one at a time below its folder, none through a link;
/// the folder that holds the file and its real path, or `None` when one was replaced meanwhile.
fn create_missing(
    place: Located,
    mode: u32,
) -> Result<Option<(OwnedFd, PathBuf)>, PersonFileError> {
    let Located {
        mut dir,
        mut dir_path,
        rest,
    } = place;
    let (_, folders) = rest
        .split_last()
        .expect("rest always ends with the file's name");
    for folder in folders {
        let here = dir_path.join(folder);
        let made = match rustix::fs::mkdirat(&dir, folder.as_os_str(), raw_mode(mode)) {
            Ok(()) => true,
            Err(Errno::EXIST) => false, // another launch made it, or something else sits there
            Err(e) => return Err(errno("create the folder", &here)(e)),
        };
        let next = match rustix::fs::openat(
            &dir,
            folder.as_os_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(next) => next,
            // A link or a file in its place: resolve again (and judge where it leads).
            Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) => return Ok(None),
            Err(e) => return Err(errno("open the folder", &here)(e)),
        };
        if made {
            // Exactly the mode asked for, whatever the umask.
            rustix::fs::fchmod(&next, raw_mode(mode))
                .map_err(errno("set the permissions of", &here))?;
        }
        dir = next;
        dir_path = here;
    }
    Ok(Some((dir, dir_path)))
}

/// Opens the entry `name` of a checked folder for reading, never through a symlink.
/// `O_NONBLOCK` keeps a fifo from hanging the launch and `O_NOCTTY` keeps a terminal from
/// becoming ours; the caller refuses anything but a regular file from its `fstat`. (No device
/// node can be put there by a chat: Landlock grants no `make_char`/`make_block`, and the chat
/// has no `CAP_MKNOD`.)
fn open_existing(dir: &OwnedFd, name: &OsStr) -> rustix::io::Result<Existing> {
    match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => {
            let stat = rustix::fs::fstat(&fd)?;
            Ok(Existing::File(File::from(fd), stat))
        }
        Err(Errno::NOENT) => Ok(Existing::Missing),
        Err(Errno::LOOP) => Ok(Existing::Changed),
        Err(e) => Err(e),
    }
}

fn read_text(mut file: File, path: &Path) -> Result<String, PersonFileError> {
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData => PersonFileError::NotText {
            file: path.to_owned(),
        },
        _ => io_err("read", path)(e),
    })?;
    Ok(text)
}

/// A temporary file in a checked folder, removed again unless it was renamed into place.
struct Temporary<'a> {
    dir: &'a OwnedFd,
    name: OsString,
    renamed: bool,
}

impl Drop for Temporary<'_> {
    fn drop(&mut self) {
        if !self.renamed {
            // Best effort: a stray temporary file is harmless (it never replaces the real one).
            let _ = rustix::fs::unlinkat(self.dir, self.name.as_os_str(), AtFlags::empty());
        }
    }
}

/// Creates `.<name>.<unique>.cli-sandbox.tmp` in `dir`, never through a link.
fn temporary<'a>(
    dir: &'a OwnedFd,
    dir_path: &Path,
    name: &OsStr,
) -> Result<(File, Temporary<'a>), PersonFileError> {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let random = RandomState::new();
    for _ in 0..64 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let unique = random.hash_one((std::process::id(), n));
        let mut tmp = b".".to_vec();
        tmp.extend_from_slice(name.as_bytes());
        tmp.extend_from_slice(format!(".{unique:016x}.cli-sandbox.tmp").as_bytes());
        let tmp = OsString::from_vec(tmp);
        match rustix::fs::openat(
            dir,
            tmp.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            raw_mode(0o600),
        ) {
            Ok(fd) => {
                return Ok((
                    File::from(fd),
                    Temporary {
                        dir,
                        name: tmp,
                        renamed: false,
                    },
                ));
            }
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(errno("create a temporary file in", dir_path)(e)),
        }
    }
    Err(io_err("create a temporary file in", dir_path)(
        io::Error::new(io::ErrorKind::AlreadyExists, "every name tried was taken"),
    ))
}

/// A temporary file beside `name` in `dir` holding `text`, with the mode and owner asked for,
/// flushed to the disk: ready to be renamed over `name`.
fn write_temporary<'a>(
    dir: &'a OwnedFd,
    dir_path: &Path,
    name: &OsStr,
    text: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
) -> Result<Temporary<'a>, PersonFileError> {
    let (mut file, tmp) = temporary(dir, dir_path, name)?;
    let tmp_path = dir_path.join(&tmp.name);
    rustix::fs::fchmod(&file, raw_mode(mode))
        .map_err(errno("set the permissions of", &tmp_path))?;
    if let Some((uid, gid)) = owner {
        let ours = rustix::fs::fstat(&file).map_err(errno("inspect", &tmp_path))?;
        if (ours.st_uid, ours.st_gid) != (uid, gid) {
            rustix::fs::fchown(
                &file,
                Some(rustix::fs::Uid::from_raw(uid)),
                Some(rustix::fs::Gid::from_raw(gid)),
            )
            .map_err(errno("give the owner of the old file to", &tmp_path))?;
        }
    }
    file.write_all(text).map_err(io_err("write", &tmp_path))?;
    file.sync_all().map_err(io_err("flush", &tmp_path))?;
    Ok(tmp)
}

/// What [`swap`] may replace.
enum Seen<'a> {
    /// Nothing was at the name when it was read: replace nothing (a file made meanwhile is
    /// read and edited again).
    Nothing,
    /// This file (its bytes and its `fstat`): replace it only if it is still there, unchanged.
    File(&'a [u8], &'a rustix::fs::Stat),
    /// Whatever is there now, never through a link (the last round).
    Anything,
}

/// What [`swap`] did.
enum Swapped {
    /// The temporary file is the person's file now.
    Done,
    /// Another program wrote the file since it was read: read it again and redo the edit.
    Rewritten,
    /// A symlink sits at the name now: resolve again.
    Linked,
}

/// Renames `tmp` over `name` if what is there is still what was read (`seen`), then flushes
/// the folder. A file created meanwhile is never replaced (`RENAME_NOREPLACE`, atomic); a file
/// replaced or rewritten meanwhile is seen by its identity, size, times and bytes.
fn swap(
    dir: &OwnedFd,
    dir_path: &Path,
    name: &OsStr,
    tmp: &mut Temporary<'_>,
    seen: Seen<'_>,
) -> Result<Swapped, PersonFileError> {
    let target = dir_path.join(name);
    match seen {
        Seen::Anything => {
            rustix::fs::renameat(dir, tmp.name.as_os_str(), dir, name)
                .map_err(errno("replace", &target))?;
        }
        Seen::Nothing => {
            match rustix::fs::renameat_with(
                dir,
                tmp.name.as_os_str(),
                dir,
                name,
                rustix::fs::RenameFlags::NOREPLACE,
            ) {
                Ok(()) => {}
                Err(Errno::EXIST) => return Ok(Swapped::Rewritten),
                // A file system without `RENAME_NOREPLACE`: look, then rename.
                Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {
                    match open_existing(dir, name).map_err(errno("read", &target))? {
                        Existing::Missing => {}
                        Existing::Changed => return Ok(Swapped::Linked),
                        Existing::File(..) => return Ok(Swapped::Rewritten),
                    }
                    rustix::fs::renameat(dir, tmp.name.as_os_str(), dir, name)
                        .map_err(errno("replace", &target))?;
                }
                Err(e) => return Err(errno("replace", &target)(e)),
            }
        }
        Seen::File(bytes, stat) => {
            match open_existing(dir, name).map_err(errno("read", &target))? {
                Existing::Missing => return Ok(Swapped::Rewritten),
                Existing::Changed => return Ok(Swapped::Linked),
                Existing::File(mut now, now_stat) => {
                    if !same_version(stat, &now_stat) {
                        return Ok(Swapped::Rewritten);
                    }
                    let mut now_bytes = Vec::with_capacity(bytes.len());
                    now.read_to_end(&mut now_bytes)
                        .map_err(io_err("read", &target))?;
                    if now_bytes != bytes {
                        return Ok(Swapped::Rewritten);
                    }
                }
            }
            rustix::fs::renameat(dir, tmp.name.as_os_str(), dir, name)
                .map_err(errno("replace", &target))?;
        }
    }
    tmp.renamed = true;
    rustix::fs::fsync(dir).map_err(errno("flush the folder", dir_path))?;
    Ok(Swapped::Done)
}

/// Whether two `fstat`s are of the same file in the same version: the same inode, size,
/// modification and change times (a write or a rename changes one of them).
fn same_version(a: &rustix::fs::Stat, b: &rustix::fs::Stat) -> bool {
    (a.st_dev, a.st_ino, a.st_size) == (b.st_dev, b.st_ino, b.st_size)
        && (a.st_mtime, a.st_mtime_nsec) == (b.st_mtime, b.st_mtime_nsec)
        && (a.st_ctime, a.st_ctime_nsec) == (b.st_ctime, b.st_ctime_nsec)
}

/// `bits` as the platform's mode type (`u16` on macOS, `u32` on Linux).
#[allow(clippy::unnecessary_cast)]
fn raw_mode(bits: u32) -> Mode {
    Mode::from_raw_mode(bits as rustix::fs::RawMode)
}

/// The mode bits of an `fstat`, whatever the platform's type.
#[allow(clippy::unnecessary_cast)]
fn mode_bits(stat: &rustix::fs::Stat) -> u32 {
    stat.st_mode as u32
}

/// A folder made for a file of `mode` can be entered by whoever may read the file.
fn folder_mode(mode: u32) -> u32 {
    let read_bits = mode & 0o444;
    mode | (read_bits >> 2)
}
