use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::path::{
    Resolver, canonicalize_lenient, check_absolute_clean, cmp_plain, is_within, is_within_plain,
    plain_path,
};
use crate::settings::{ActedOnKind, Anchor, SettingsPath, SettingsRequest};
use crate::{ChatId, Config, Layout, Network, Os, PolicyError};

/// How a CLI runs: with its own tools on inside our sandbox, or with only the MCP bridge.
/// `Deserialize`: a mode a provider stored reads back (its older names too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The CLI's own tools on, its own sandbox off, inside ours. A stored `full_unconfined`
    /// (a mode that no longer exists) reads as this: nothing runs unconfined any more.
    #[serde(alias = "full_unconfined")]
    Full,
    /// The CLI's own tools off; it reaches the world only through the MCP bridge.
    #[serde(alias = "bridge_only")]
    BridgeOnly,
}

impl Mode {
    /// Its name in a plan and on the command line (`full`, `bridge-only`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Full => "full",
            Mode::BridgeOnly => "bridge-only",
        }
    }
}

/// How the CLI is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// Interactive, in a tmux pane.
    Tmux,
    /// Headless, a JSON stream on stdout.
    Structured,
}

/// Read-only or read-write. `Deserialize`: the Linux plan file holds it (a folder bound back
/// with its access), and `LaunchRequest` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read, list and run; never write or move (`ro`).
    #[serde(rename = "ro")]
    ReadOnly,
    /// Everything, except moving the grant itself (`rw`).
    #[serde(rename = "rw")]
    ReadWrite,
}

impl Access {
    /// `ro` or `rw`, as in `--grant PATH:ro`.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::ReadOnly => "ro",
            Access::ReadWrite => "rw",
        }
    }
}

/// A grant as the caller asked for it (`--grant PATH[:ro|:rw]`), before validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRequest {
    /// The folder as asked (absolute; canonicalized and checked by `Policy::build`).
    pub path: PathBuf,
    /// The access asked.
    pub access: Access,
}

impl GrantRequest {
    /// Reads `PATH`, `PATH:ro` or `PATH:rw` (read-write when no suffix is given).
    ///
    /// The access is what follows the last `:` when no `/` comes after it; anything there but
    /// `ro` or `rw` (`:RO`, `:xx`, a trailing `:`) is refused, never taken as part of the path: a
    /// typo must not grant a folder read-write. A folder whose own name holds a `:` is granted
    /// with its access written out: `/w/wf1:xx:rw` grants `/w/wf1:xx` read-write, and
    /// `/w/wf1:ro:ro` grants the folder `wf1:ro` read-only. A `:` inside a folder above the last
    /// `/` needs nothing (`/w/a:b/wf1`). Commas are never split: a path may hold one.
    pub fn parse(text: &str) -> Result<GrantRequest, PolicyError> {
        let (path, access) = match text.rsplit_once(':') {
            Some((p, "ro")) => (p, Access::ReadOnly),
            Some((p, "rw")) => (p, Access::ReadWrite),
            Some((_, suffix)) if !suffix.contains('/') => {
                return Err(PolicyError::BadAccess {
                    grant: text.to_owned(),
                    suffix: suffix.to_owned(),
                });
            }
            _ => (text, Access::ReadWrite),
        };
        Ok(GrantRequest {
            path: PathBuf::from(path),
            access,
        })
    }
}

/// A validated grant: an existing folder inside a protected root, canonical, named by its own
/// path. (Outside the protected roots everything is open already; such a grant is refused as
/// meaningless.)
///
/// Its fields stay public, unlike [`Policy`]'s: a grant is trusted only as one of
/// [`Policy::grants`], which hands out shared references, so a value made or changed elsewhere
/// reaches no backend; the adapters read it from their `LaunchRequest` to trust the chat's
/// folders in the person's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    /// The granted folder: absolute, canonical, inside a protected root.
    pub path: PathBuf,
    /// Read-only or read-write (the wider one when the same folder was asked twice).
    pub access: Access,
}

/// A pattern refused inside every grant (not inside the chat's own runtime), matched against the
/// names of the entries directly at the grant's top (`*` and `?` are the only wildcards). An
/// entry whose name matches is refused with everything beneath it, whatever its kind: a folder
/// `planning`, a file `planning`, a symlink or a fifo named `raw.db`, a folder named `x.db`.
///
/// A trailing `/` (`planning/`) says the name is a folder the provider keeps there: in a
/// read-write grant a missing one is created empty before launch, so that the name is closed
/// from the start and cannot be made later (see [`Policy::refused_entries`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub struct RefusedPattern {
    text: String,
}

impl RefusedPattern {
    /// Checks `text`: one entry's name (a trailing `/` for a folder), not every entry, no NUL
    /// byte or newline.
    pub fn new(text: &str) -> Result<RefusedPattern, PolicyError> {
        let bad = |why| {
            Err(PolicyError::BadPattern {
                pattern: text.to_owned(),
                why,
            })
        };
        let name = text.strip_suffix('/').unwrap_or(text);
        if name.is_empty() {
            return bad("it is empty");
        }
        if name.contains('/') {
            return bad("a pattern names one entry at a grant's top: no `/` except a trailing one");
        }
        if name == "." || name == ".." || name == "*" {
            return bad("it would refuse the whole grant");
        }
        if name.bytes().any(|b| b == 0 || b == b'\n' || b == b'\r') {
            return bad("it contains a NUL byte or a newline");
        }
        Ok(RefusedPattern {
            text: text.to_owned(),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// A folder pattern (`planning/`): a missing one is created empty in read-write grants.
    pub fn is_dir(&self) -> bool {
        self.text.ends_with('/')
    }

    /// The name part, without the trailing `/`.
    pub fn name(&self) -> &str {
        self.text.strip_suffix('/').unwrap_or(&self.text)
    }

    /// Whether the pattern contains a wildcard (so the names it matches are not known ahead).
    pub fn is_glob(&self) -> bool {
        self.name().contains(['*', '?'])
    }

    /// The suffixes of SQLite's files beside a database this pattern may name ([`SQLITE_SIDECARS`]):
    /// none for a folder pattern (`planning/`), which names no database.
    pub fn sidecars(&self) -> &'static [&'static str] {
        // A folder pattern ends with `/` (`RefusedPattern::is_dir`).
        if self.text.ends_with('/') {
            &[]
        } else {
            SQLITE_SIDECARS
        }
    }

    /// Whether an entry name at a grant's top matches: the pattern's name, or (for a file
    /// pattern) that name followed by one of SQLite's sidecar suffixes ([`SQLITE_SIDECARS`]).
    /// Names are bytes: a name that is not UTF-8 (`caf\xe9.db`) is matched like any other.
    pub fn matches_name(&self, name: impl AsRef<OsStr>) -> bool {
        self.matches_bytes(name.as_ref().as_bytes(), false)
    }

    /// [`RefusedPattern::matches_name`] for a policy built for `os` (macOS folds ASCII case).
    pub fn matches_name_on(&self, os: Os, name: impl AsRef<OsStr>) -> bool {
        self.matches_bytes(name.as_ref().as_bytes(), os == Os::MacOs)
    }

    /// The one matching of a name against the pattern and its sidecar forms.
    fn matches_bytes(&self, name: &[u8], fold_case: bool) -> bool {
        let pattern = self.name().as_bytes();
        glob_match(pattern, name, fold_case)
            || self.sidecars().iter().any(|suffix| {
                let with_suffix = [pattern, suffix.as_bytes()].concat();
                glob_match(&with_suffix, name, fold_case)
            })
    }

    /// Whether `path`, relative to a grant's top, is refused by this pattern.
    pub fn refuses(&self, relative: &Path) -> bool {
        self.refuses_with(relative, false)
    }

    /// [`RefusedPattern::refuses`] for a policy built for `os`. On macOS names match whatever
    /// their ASCII case: its volumes are case-insensitive by default, so `PLANNING/plan.json`
    /// opens `planning/plan.json` and `RAW.DB` is the raw database.
    pub fn refuses_on(&self, os: Os, relative: &Path) -> bool {
        self.refuses_with(relative, os == Os::MacOs)
    }

    fn refuses_with(&self, relative: &Path, fold_case: bool) -> bool {
        let Some(first) = relative.components().next() else {
            return false;
        };
        // Bytes, not text: a name that is not UTF-8 must not slip past `*.db`. The entry is
        // refused with everything beneath it, whatever its kind: a folder named `raw.db` holds
        // the database as surely as a file does; its sidecars (`raw.db-wal`) hold its newest
        // rows and are a way to write into it (SQLite replays a WAL at the next open).
        self.matches_bytes(first.as_os_str().as_bytes(), fold_case)
    }
}

impl From<RefusedPattern> for String {
    fn from(p: RefusedPattern) -> String {
        p.text
    }
}

fn glob_match(pattern: &[u8], name: &[u8], fold_case: bool) -> bool {
    match (pattern.split_first(), name.split_first()) {
        (None, None) => true,
        (Some((b'*', rest)), _) => {
            glob_match(rest, name, fold_case)
                || (!name.is_empty() && glob_match(pattern, &name[1..], fold_case))
        }
        (Some((b'?', rest)), Some((_, name_rest))) => glob_match(rest, name_rest, fold_case),
        (Some((p, rest)), Some((n, name_rest))) => {
            let same = if fold_case {
                p.eq_ignore_ascii_case(n)
            } else {
                p == n
            };
            same && glob_match(rest, name_rest, fold_case)
        }
        _ => false,
    }
}

/// What an entry of a folder is, as far as the rules care. (The backends read it from the disk;
/// this crate only names it.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// Anything that is neither a folder nor a symlink: a file, a fifo, a socket, a device.
    File,
    /// A folder.
    Dir,
    /// A symlink, whatever it points to.
    Symlink,
}

/// What a backend must close at the top of one grant: the one place where "refused inside a
/// grant" is worked out for the entries that are there ([`Policy::refused_entries`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefusedEntries {
    /// Entries present at the grant's top whose names a pattern refuses, with their kind: each is
    /// closed with everything beneath it. A symlink is closed as the name it is (what it points
    /// to is judged at its own path).
    pub present: Vec<(PathBuf, EntryKind)>,
    /// Folder patterns (`planning/`) missing from a read-write grant: created empty before
    /// launch and closed, so that the name cannot be made during the chat.
    pub create: Vec<PathBuf>,
    /// Whether the chat can make, during the chat, an entry that a pattern refuses and that is
    /// not in `present` or `create` (a name matching a wildcard or a file pattern, in a
    /// read-write grant). A backend that closes entries one by one cannot close it; one that
    /// matches names (Seatbelt's regex, the frozen fallback's frozen grant folder) can. Such an
    /// entry holds only what the chat itself wrote.
    pub made_later: bool,
}

/// The suffixes SQLite appends to a database's name for the files it keeps beside it: the
/// write-ahead log and its index (`-wal`, `-shm`), the rollback journal (`-journal`), the WAL2
/// branch's second log (`-wal2`) and a multi-database transaction's super-journal (`-mj` and
/// random hex digits). A refused file pattern refuses these with the database (`raw.db` also
/// closes `raw.db-wal`): the newest rows of a database held open by its writer are in its WAL,
/// and a WAL or journal written by the chat is replayed into the database at its next open. The
/// one list every backend reads (the Linux plans through [`Policy::refused_entries`] and
/// [`Policy::decide`], the Seatbelt profile's regexes through [`RefusedPattern::sidecars`]).
pub const SQLITE_SIDECARS: &[&str] = &["-wal", "-shm", "-journal", "-wal2", "-mj*"];

/// The refused patterns every policy starts with: the folder guard's list.
pub const DEFAULT_REFUSED: &[&str] = &["planning/", "*.sqlite", "*.sqlite3", "*.db"];

/// Programs whose execution is a way out of the sandbox, per OS (SECURITY.md, "Apps opened or scripted for us").
pub const BLOCKED_PROGRAMS_MACOS: &[&str] = &[
    "/usr/bin/open",
    "/usr/bin/osascript",
    "/usr/bin/osacompile",
    "/usr/bin/automator",
    "/usr/bin/shortcuts",
    // Schedulers: a job is run by cron or atrun outside the sandbox, within a minute.
    "/usr/bin/crontab",
    "/usr/bin/at",
    "/usr/bin/batch",
    "/usr/bin/atq",
    "/usr/bin/atrm",
];
/// The same on Linux: the desktop's openers and the session bus's clients, whose work is done
/// outside the sandbox.
pub const BLOCKED_PROGRAMS_LINUX: &[&str] = &[
    "/usr/bin/xdg-open",
    "/usr/bin/gio",
    "/usr/bin/systemd-run",
    "/usr/bin/dbus-send",
    "/usr/bin/gdbus",
    "/usr/bin/busctl",
];

/// The persistence paths of a home on every OS, relative to the home: what makes a program run
/// later, outside the sandbox, when written (a shell startup file runs at the next login, git's
/// global configuration names hooks and an fsmonitor command, ssh's files let someone in or run a
/// command at the next connection, tmux's configuration runs commands in the next tmux server). A trailing `/` marks a folder (closed with all it holds).
/// Closed to writing only when the configuration says `harden = true`.
pub const PERSISTENCE_COMMON: &[&str] = &[
    ".profile",
    ".bash_profile",
    ".bash_login",
    ".bashrc",
    ".bash_logout",
    ".zshenv",
    ".zprofile",
    ".zshrc",
    ".zlogin",
    ".zlogout",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".kshrc",
    ".config/fish/",
    ".gitconfig",
    ".config/git/",
    ".ssh/authorized_keys",
    ".ssh/authorized_keys2",
    ".ssh/rc",
    ".ssh/config",
    // tmux's configuration: the next tmux server started outside (a person's, a provider's
    // panes) runs what it says (`run-shell`), unconfined.
    ".tmux.conf",
    ".config/tmux/",
    // Folders on the person's PATH before the system's (Debian's `~/.profile` puts `~/bin` and
    // `~/.local/bin` first; `~/.cargo/env` puts `~/.cargo/bin` first): a `git` or `ls` there runs
    // instead of the system's, outside.
    "bin/",
    ".local/bin/",
    ".cargo/bin/",
    ".cargo/env",
    // The user's Python site-packages (`~/.local/lib/python3.*/site-packages`): a `.pth` file
    // there runs at the start of every `python3` of the person's.
    ".local/lib/",
    // Package managers' and clouds' settings that name a program to run: npm's `script-shell`
    // and `node-options`, cargo's `rustc-wrapper`, aws's `credential_process`, kubectl's exec
    // plugins, docker's `credsStore` and its CLI plugins.
    ".npmrc",
    ".cargo/config.toml",
    ".cargo/config",
    ".aws/config",
    ".aws/credentials",
    ".kube/config",
    ".docker/config.json",
    ".docker/cli-plugins/",
    // Editors' and debuggers' start files: each runs commands when the program starts
    // (vim's `:!`, emacs's lisp, gdb's and lldb's commands, readline's macros typed into
    // every bash prompt).
    ".vimrc",
    ".gvimrc",
    ".exrc",
    ".vim/",
    ".config/nvim/",
    ".emacs",
    ".emacs.el",
    ".emacs.d/",
    ".config/emacs/",
    ".gdbinit",
    ".config/gdb/",
    ".lldbinit",
    ".inputrc",
    ".editrc",
];
/// The persistence paths of a macOS home, added to [`PERSISTENCE_COMMON`]: launchd agents, and
/// the terminal apps' preferences written as files (a startup command in a Terminal or iTerm2
/// profile runs in the next window; the profile refuses writes through `cfprefsd` already).
pub const PERSISTENCE_MACOS: &[&str] = &[
    "Library/LaunchAgents/",
    // The user's Python site-packages of the python.org and Apple builds.
    "Library/Python/",
    "Library/Preferences/com.apple.Terminal.plist",
    "Library/Preferences/com.googlecode.iterm2.plist",
];
/// The persistence paths of a Linux home, added to [`PERSISTENCE_COMMON`]: the desktop's
/// autostart entries and desktop entries, systemd user units and environment, the X session's
/// startup files.
pub const PERSISTENCE_LINUX: &[&str] = &[
    ".config/autostart/",
    // Desktop entries: their `Exec=` line runs when the person opens a file of a type one claims.
    ".local/share/applications/",
    ".config/systemd/user/",
    ".local/share/systemd/user/",
    ".config/environment.d/",
    ".pam_environment",
    ".xprofile",
    ".xsessionrc",
    ".xinitrc",
    ".xsession",
];

/// The kernel's tunables on Linux: readable, never written, whatever the uid. Written by a root
/// chat they reach outside every namespace: `/proc/sys/kernel/core_pattern` names a program the
/// kernel runs as full root when any process crashes, `modprobe` one it runs to load a module,
/// `/proc/sysrq-trigger` reboots the machine, `/sys` holds module parameters, power states and
/// cgroup limits. (Docker keeps the same list read-only.)
pub const KERNEL_TUNABLES_LINUX: &[&str] = &[
    "/proc/sys",
    "/proc/sysrq-trigger",
    "/proc/irq",
    "/proc/bus",
    "/proc/fs",
    "/sys",
];

/// The credential places of the home that `[policy] secrets = "closed"` closes to every
/// operation, relative to the home, the same on both systems (the tools keep them there on
/// macOS too). The one list: every backend closes these through [`Policy::secrets`], and
/// `doctor` prints it. Folders are closed with everything beneath them. Not listed, so that the
/// coding CLIs keep their own logins: `~/.claude`, `~/.claude.json`, `~/.codex` (its
/// `auth.json`), `~/.gemini`, `~/.cursor`, `~/.pi`.
pub const SECRETS_HOME: &[&str] = &[
    // ssh's keys and agent configuration, gpg's keys.
    ".ssh",
    ".gnupg",
    // Cloud CLIs: AWS, Google Cloud, Azure, Oracle, DigitalOcean, Hetzner, Fly.io.
    ".aws",
    ".config/gcloud",
    ".azure",
    ".oci",
    ".config/doctl",
    ".config/hcloud",
    ".fly",
    // Containers and clusters: docker's registry logins, kubectl's clusters and tokens.
    ".docker/config.json",
    ".kube",
    // Code hosts: GitHub's CLI (and hub), git's stored credentials.
    ".config/gh",
    ".config/hub",
    ".git-credentials",
    ".config/git/credentials",
    // Package registries' tokens: npm, PyPI, cargo, RubyGems, Terraform, Vault.
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    // Passwords: netrc (curl, git, ftp), PostgreSQL, MySQL, pass, the desktop's keyrings, rclone.
    ".netrc",
    ".pgpass",
    ".my.cnf",
    ".password-store",
    ".local/share/keyrings",
    ".config/rclone",
    // S3 tools' keys.
    ".s3cfg",
    ".boto",
];

/// Files of the kernel's that tell about every process of the machine, those outside the chat
/// included (the names and pids of every task: `sched_debug`, `timer_list`), or about its memory
/// and keys: not read, not written. (Docker masks the same.)
pub const KERNEL_SECRETS_LINUX: &[&str] = &[
    "/proc/kcore",
    "/proc/keys",
    "/proc/timer_list",
    "/proc/sched_debug",
    "/proc/latency_stats",
    "/proc/timer_stats",
    "/proc/acpi",
    "/proc/asound",
    "/proc/scsi",
    "/sys/firmware",
];

/// The places a chat may write when the launcher runs as root, besides its home, its grants and its
/// runtime, on Linux: the temporary folders, the harmless devices and the terminals (written, not
/// created or removed: the rest of `/dev` is read-only), `/dev/shm`, and the sandbox's own `/proc`
/// (a process's own files, such as `oom_score_adj`; the kernel's tunables and secrets in it are
/// closed by their own rule, which comes first). The configuration adds to it
/// (`[policy] writable`).
pub const WRITABLE_AS_ROOT: &[&str] = &[
    "/tmp",
    "/var/tmp",
    "/dev/shm",
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/proc",
];
/// The same on macOS: the temporary folders (`/tmp` and `/var/tmp` resolve under `/private`), the
/// per-user ones under `/var/folders` (`$TMPDIR`), and `/dev` (whose terminals have no fixed
/// names; devfs holds nothing else a chat could write).
pub const WRITABLE_AS_ROOT_MACOS: &[&str] = &["/tmp", "/var/tmp", "/var/folders", "/dev"];

/// A persistence path closed to writing by `harden` (absolute; canonical, or the path of a
/// symlink, whose target is listed beside it).
///
/// Made only by [`Policy::build`] (from [`PERSISTENCE_COMMON`] and the OS's list), so its fields
/// are private: a backend may rely on the path being absolute and outside every protected root
/// (binding a path read-only around a protected root would open that root to reading).
/// Serialized, never read back.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Hardened {
    path: PathBuf,
    folder: bool,
    empty_is_absent: bool,
}

impl Hardened {
    /// The persistence path: absolute, outside and around no protected root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A folder: closed with everything it holds, also what is created in it later.
    pub fn is_folder(&self) -> bool {
        self.folder
    }

    /// A file whose empty form means what its absence means to the programs that read it
    /// ([`PERSISTENCE_EMPTY_IS_ABSENT`]): a backend may create a missing one empty to close it.
    pub fn empty_is_absent(&self) -> bool {
        self.empty_is_absent
    }
}

/// The persistence files that mean the same empty as missing: tmux, git, ssh and pam read an
/// empty one as none, and a POSIX shell an empty `~/.profile`. (Not so `~/.bash_profile` or
/// `~/.bash_login`, whose mere presence stops bash reading `~/.profile`, nor `~/.tcshrc`, nor the X
/// session files, which an empty one turns into an empty session.)
pub const PERSISTENCE_EMPTY_IS_ABSENT: &[&str] = &[
    ".profile",
    ".gitconfig",
    ".ssh/authorized_keys",
    ".ssh/authorized_keys2",
    ".ssh/config",
    ".tmux.conf",
    ".pam_environment",
];

/// What the caller wants a policy for.
#[derive(Debug, Clone)]
pub struct PolicyRequest<'a> {
    /// The OS the policy is for (its blocked programs, its name matching).
    pub os: Os,
    /// Where AgentWorks' folders are (canonical, as [`Layout::resolve`] makes it: checked).
    pub layout: &'a Layout,
    /// The chat.
    pub chat: &'a ChatId,
    /// The chat's grants, as asked.
    pub grants: &'a [GrantRequest],
    /// The configuration's additions.
    pub config: &'a Config,
    /// The launcher runs as root (uid 0), so the chat would be the machine's root: the system's
    /// folders are closed to writing ([`Policy::system_read_only`]).
    pub privileged: bool,
    /// What the coding CLIs read at start and act on (every registered adapter's
    /// [`crate::CliAdapter::acted_on`], not only the launched CLI's: a chat of one CLI can write
    /// another's settings): read-only in the chat ([`Policy::settings`], [`Rule::Settings`]).
    /// Empty: no such rule (a policy for a test of another rule).
    pub settings: &'a [SettingsRequest],
}

/// One chat's policy: every path absolute and canonical. Built only by [`Policy::build`]: the
/// fields are private and read through accessors of the same names, so a value of this type has
/// passed validation and no consumer can break what `build` established (grants canonical,
/// sorted, one per folder, none inside an entry an enclosing grant refuses; protected roots
/// sorted and deduplicated; the root-only fields set only for a privileged request).
/// Serialized for `plan --json` and `explain`; never read back, so it has no `Deserialize`.
///
/// ```compile_fail,E0616
/// # fn f(policy: &mut sandbox_core::Policy) {
/// policy.protected.clear(); // private: only `Policy::build` decides what is protected
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Policy {
    os: Os,
    chat: ChatId,
    home: PathBuf,
    /// Closed to read, write and listing, except the grants and the runtime; sorted.
    protected: Vec<PathBuf>,
    /// The chat's own working folder, always read-write, never subject to refused patterns.
    runtime: PathBuf,
    /// The folder that holds every chat's runtime (closed like the rest of the state root).
    runtimes_dir: PathBuf,
    /// The launcher's locks on the person's files (closed like the rest of the state root; not
    /// a rule of its own, so not in the JSON answers).
    #[serde(skip)]
    person_file_locks: PathBuf,
    /// The folders inside which some chat, this one or another, may be given a folder to write:
    /// workspace-docs, the runtimes, and each protected root outside the app folder and the
    /// state root (`Policy::could_replace` asks it: what another chat's grant holds is a chat's
    /// to change too). Not part of what a plan prints.
    #[serde(skip)]
    grantable: Vec<PathBuf>,
    grants: Vec<Grant>,
    refused: Vec<RefusedPattern>,
    /// Refused to execute and to read (a copy of a readable program runs just the same).
    blocked_programs: Vec<PathBuf>,
    /// Unix-socket paths a confined process may still connect to (none by default).
    unix_socket_allow: Vec<PathBuf>,
    /// Persistence paths closed to writing and moving (`harden = true`; empty otherwise);
    /// sorted. None lies inside or around a protected root: those are closed already.
    hardened: Vec<Hardened>,
    /// Read-write grants in which git's own files stay writable (`[policy] git_writable`),
    /// canonical; in every other read-write grant they are read-only ([`Rule::Git`]).
    git_writable: Vec<PathBuf>,
    /// The credential places of the home closed to every operation (`[policy] secrets =
    /// "closed"`; empty otherwise): [`SECRETS_HOME`] under the home, and where one is a link,
    /// its target too; sorted.
    secrets: Vec<PathBuf>,
    /// Kernel tunables: read, never written ([`KERNEL_TUNABLES_LINUX`]; none on macOS).
    kernel_tunables: Vec<PathBuf>,
    /// Kernel files that tell about every process or the kernel's memory: not read
    /// ([`KERNEL_SECRETS_LINUX`]; none on macOS).
    kernel_secrets: Vec<PathBuf>,
    /// The launcher runs as root: nothing outside [`Policy::writable`], the grants and the
    /// runtime may be written.
    system_read_only: bool,
    /// With `system_read_only`, the places that stay writable: the home, the temporary folders,
    /// `/dev`, and the configured ones; canonical, sorted, none inside another.
    writable: Vec<PathBuf>,
    /// The machine's network (its loopback servers reachable) or one of the chat's own
    /// (`[policy] network`). A backend that cannot build `isolated` refuses the launch.
    network: Network,
    /// `network = "allowlist"`: the host rules (validated `allowed_hosts` and `denied_hosts`,
    /// as configured) and the file the proxy writes each decision to
    /// (`<state root>/state/egress/<chat>.jsonl`, closed to chats like the rest of the state
    /// root). `None` otherwise.
    egress: Option<Egress>,
    /// How much of the machine the chat may take (`[limits]`, with the defaults).
    limits: crate::Limits,
    /// What the CLIs read at start and act on: read, never written, created or moved by the
    /// chat; sorted.
    settings: Vec<SettingsPath>,
}

/// `network = "allowlist"` as a policy holds it ([`Policy::egress`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Egress {
    /// `allowed_hosts`, validated ([`crate::egress::HostRules::new`]), as configured.
    pub allowed_hosts: Vec<String>,
    /// `denied_hosts`, validated, as configured.
    pub denied_hosts: Vec<String>,
    /// Where the proxy writes one JSON line per decision: `<state root>/state/egress/<chat>.jsonl`.
    pub log: std::path::PathBuf,
}

/// Read-only views of what [`Policy::build`] established.
impl Policy {
    /// The OS the policy was built for (not necessarily the one running).
    pub fn os(&self) -> Os {
        self.os
    }

    /// The chat the policy is for.
    pub fn chat(&self) -> &ChatId {
        &self.chat
    }

    /// The person's home, canonical: open, except the protected roots and (with `harden`) the
    /// persistence paths.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Closed to read, write and listing, except the grants and the runtime; canonical, sorted,
    /// deduplicated.
    pub fn protected(&self) -> &[PathBuf] {
        &self.protected
    }

    /// The chat's own working folder, always read-write, never subject to refused patterns.
    pub fn runtime(&self) -> &Path {
        &self.runtime
    }

    /// The folder that holds every chat's runtime (closed like the rest of the state root).
    pub fn runtimes_dir(&self) -> &Path {
        &self.runtimes_dir
    }

    /// The folder of the launcher's locks on the person's files
    /// ([`Layout::person_file_locks_dir`]): closed like the rest of the state root, so that no
    /// chat can take one.
    pub fn person_file_locks(&self) -> &Path {
        &self.person_file_locks
    }

    /// The chat's grants: canonical folders inside protected roots, sorted by path, one per
    /// folder (the wider access kept), none inside an entry that an enclosing grant refuses.
    pub fn grants(&self) -> &[Grant] {
        &self.grants
    }

    /// The patterns refused inside every grant: [`DEFAULT_REFUSED`] and the configured ones, no
    /// pattern twice.
    pub fn refused(&self) -> &[RefusedPattern] {
        &self.refused
    }

    /// Refused to execute and to read (a copy of a readable program runs just the same);
    /// canonical.
    pub fn blocked_programs(&self) -> &[PathBuf] {
        &self.blocked_programs
    }

    /// Unix-socket paths a confined process may still connect to (none by default); canonical.
    pub fn unix_socket_allow(&self) -> &[PathBuf] {
        &self.unix_socket_allow
    }

    /// Persistence paths closed to writing and moving (`harden = true`; empty otherwise);
    /// sorted. None lies inside or around a protected root: those are closed already.
    pub fn hardened(&self) -> &[Hardened] {
        &self.hardened
    }

    /// Read-write grants in which git's own files stay writable (`[policy] git_writable`);
    /// canonical.
    pub fn git_writable(&self) -> &[PathBuf] {
        &self.git_writable
    }

    /// The read-write grants whose repositories' hooks and configuration are read-only
    /// ([`Rule::Git`]): every read-write grant but those of `[policy] git_writable`.
    pub fn git_closed_grants(&self) -> impl Iterator<Item = &Grant> + '_ {
        self.grants
            .iter()
            .filter(|g| g.access == Access::ReadWrite && !self.git_writable.contains(&g.path))
    }

    /// The credential places of the home closed to every operation, none of their ancestors
    /// moved (`[policy] secrets = "closed"`; empty otherwise): [`SECRETS_HOME`] under the home,
    /// and where one is a link (or lies under one), its target too; sorted.
    pub fn secrets(&self) -> &[PathBuf] {
        &self.secrets
    }

    /// Kernel tunables: read, never written ([`KERNEL_TUNABLES_LINUX`]; none on macOS).
    pub fn kernel_tunables(&self) -> &[PathBuf] {
        &self.kernel_tunables
    }

    /// Kernel files that tell about every process or the kernel's memory: not read
    /// ([`KERNEL_SECRETS_LINUX`]; none on macOS).
    pub fn kernel_secrets(&self) -> &[PathBuf] {
        &self.kernel_secrets
    }

    /// The launcher runs as root ([`PolicyRequest::privileged`]): nothing outside
    /// [`Policy::writable`], the grants and the runtime may be written.
    pub fn system_read_only(&self) -> bool {
        self.system_read_only
    }

    /// With [`Policy::system_read_only`], the places that stay writable: the home, the
    /// temporary folders, `/dev`, and the configured ones; canonical, sorted, none inside
    /// another. Empty otherwise.
    pub fn writable(&self) -> &[PathBuf] {
        &self.writable
    }

    /// The machine's network (its loopback servers reachable) or one of the chat's own
    /// (`[policy] network`). A backend that cannot build `isolated` refuses the launch.
    pub fn network(&self) -> Network {
        self.network
    }

    /// `network = "allowlist"`: the host rules and the proxy's log; `None` otherwise.
    pub fn egress(&self) -> Option<&Egress> {
        self.egress.as_ref()
    }

    /// How much of the machine the chat may take (`[limits]`, with the defaults): the processes
    /// at once, the memory, the size of its private `/tmp`.
    pub fn limits(&self) -> crate::Limits {
        self.limits
    }

    /// What the coding CLIs read at start and act on ([`crate::settings`]): each read by the
    /// chat, never written, created, renamed or removed by it, a missing one created before the
    /// chat starts (an empty folder, or a file holding [`SettingsPath::empty`]), and none of its
    /// ancestors renamed or removed. Sorted; none inside a protected root but those inside this
    /// chat's runtime (the CLI's project settings). [`Policy::decide`] answers
    /// [`Rule::Settings`] for each and for the moves of their ancestors: a backend that closes
    /// paths one by one iterates this; one that asks per path asks `decide`.
    pub fn settings(&self) -> &[SettingsPath] {
        &self.settings
    }

    /// The acted-on places in the home (and the folders the person moved a CLI's settings to),
    /// without those of the runtime: what a backend must create and close outside the chat's
    /// own folders.
    pub fn settings_outside_runtime(&self) -> impl Iterator<Item = &SettingsPath> + '_ {
        self.settings.iter().filter(|s| !s.in_runtime)
    }

    /// The acted-on places inside this chat's runtime (its project settings).
    pub fn settings_in_runtime(&self) -> impl Iterator<Item = &SettingsPath> + '_ {
        self.settings.iter().filter(|s| s.in_runtime)
    }
}

/// An operation `decide` answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Read a file.
    Read,
    /// Write, create or truncate a file, or create an entry in a folder.
    Write,
    /// Run a program.
    Exec,
    /// List a folder's entries.
    List,
    /// Rename, move or delete the path itself.
    Move,
}

impl Op {
    /// Every operation.
    pub const ALL: [Op; 5] = [Op::Read, Op::Write, Op::Exec, Op::List, Op::Move];

    /// Its name on the command line (`explain --op`).
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Exec => "exec",
            Op::List => "list",
            Op::Move => "move",
        }
    }
}

impl std::str::FromStr for Op {
    type Err = String;
    fn from_str(s: &str) -> Result<Op, String> {
        Op::ALL
            .into_iter()
            .find(|op| op.as_str() == s)
            .ok_or_else(|| format!("unknown operation `{s}`: use read, write, exec, list or move"))
    }
}

/// The rule that decided a verdict, highest precedence first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Rule {
    /// A blocked program: a way out of the sandbox.
    Blocked {
        /// The program.
        program: PathBuf,
    },
    /// A credential place of the home (`[policy] secrets = "closed"`): closed to every
    /// operation; or one of its ancestors (not moved, so that it is not taken out from under the
    /// rule).
    Secret {
        /// The credential place.
        path: PathBuf,
    },
    /// A refused pattern inside a grant.
    Refused {
        /// The innermost grant that holds the path.
        grant: PathBuf,
        /// The pattern that refuses it.
        pattern: String,
    },
    /// The path is a protected root or one of its ancestors: moving it would move protected
    /// data out from under the rules computed for its old path.
    Pinned {
        /// The protected root.
        root: PathBuf,
    },
    /// Git's own files inside a read-write grant: what git run later, outside the sandbox,
    /// would act on (hooks, `core.fsmonitor` and the other commands a configuration names,
    /// submodules' URLs). Read, never written, renamed or removed; see [`git_protected`].
    /// `[policy] git_writable` names the grants where it does not hold.
    Git {
        /// The innermost grant that holds the path.
        grant: PathBuf,
    },
    /// This chat's own runtime (read-write).
    Runtime {
        /// The runtime.
        runtime: PathBuf,
    },
    /// A grant of this chat.
    Granted {
        /// The innermost grant that holds the path.
        grant: PathBuf,
        /// Its access.
        access: Access,
    },
    /// A place a coding CLI reads at start and acts on ([`Policy::settings`]): read, never
    /// written, created or moved by a chat; or one of its ancestors (not moved, so that nothing
    /// can be put in its place).
    Settings {
        /// The acted-on place.
        path: PathBuf,
    },
    /// Inside a protected root, outside every grant.
    Closed {
        /// The protected root.
        root: PathBuf,
    },
    /// A persistence path of the home with `harden` on (read, not written or moved), or one of
    /// its ancestors (not moved, so that nothing can be put in its place).
    Hardened {
        /// The persistence path.
        path: PathBuf,
    },
    /// A kernel tunable (read, never written) or a kernel secret (neither).
    Kernel {
        /// The tunable or the secret.
        path: PathBuf,
    },
    /// The launcher runs as root, and the path is outside every writable place: read, not
    /// written.
    System,
    /// Everything else: the person's own machine, their home included.
    Open,
}

impl Rule {
    /// Its name in `explain` and in a denial's log message.
    pub fn name(&self) -> &'static str {
        match self {
            Rule::Blocked { .. } => "blocked",
            Rule::Secret { .. } => "secret",
            Rule::Refused { .. } => "refused",
            Rule::Pinned { .. } => "pinned",
            Rule::Git { .. } => "git",
            Rule::Runtime { .. } => "runtime",
            Rule::Granted { .. } => "granted",
            Rule::Settings { .. } => "settings",
            Rule::Closed { .. } => "closed",
            Rule::Hardened { .. } => "hardened",
            Rule::Kernel { .. } => "kernel",
            Rule::System => "system",
            Rule::Open => "open",
        }
    }
}

/// `decide`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Whether the operation is allowed.
    pub allowed: bool,
    /// The rule that decided.
    #[serde(flatten)]
    pub rule: Rule,
}

impl Policy {
    /// Validates the request and builds the policy. Paths are canonicalized through `resolver`.
    pub fn build(req: &PolicyRequest<'_>, resolver: &dyn Resolver) -> Result<Policy, PolicyError> {
        let layout = req.layout;
        check_layout_canonical(layout, resolver)?;
        let runtime = layout.runtime(req.chat);

        let mut protected = layout.protected_roots();
        for extra in &req.config.policy.protected {
            protected.push(canonicalize_lenient("protected root", extra, resolver)?);
        }
        protected.sort();
        protected.dedup();

        let mut grants = req
            .grants
            .iter()
            .map(|asked| validate_grant(asked, layout, &runtime, &protected, resolver))
            .collect::<Result<Vec<Grant>, _>>()?;
        // The same folder twice keeps the wider access: sorted widest first within a path, the
        // first of each path stays (sorting, not searching, so that a thousand grants cost no
        // million comparisons).
        grants.sort_by(|a, b| a.path.cmp(&b.path).then(b.access.cmp(&a.access)));
        grants.dedup_by(|later, kept| later.path == kept.path);

        let mut refused = Vec::new();
        for text in DEFAULT_REFUSED
            .iter()
            .copied()
            .chain(req.config.policy.refused.iter().map(String::as_str))
        {
            let pattern = RefusedPattern::new(text)?;
            if !refused.contains(&pattern) {
                refused.push(pattern);
            }
        }

        let defaults = match req.os {
            Os::MacOs => BLOCKED_PROGRAMS_MACOS,
            Os::Linux => BLOCKED_PROGRAMS_LINUX,
        };
        let mut blocked_programs = Vec::new();
        for program in defaults
            .iter()
            .map(PathBuf::from)
            .chain(req.config.policy.blocked_programs.iter().cloned())
        {
            let program = canonicalize_lenient("blocked program", &program, resolver)?;
            if !blocked_programs.contains(&program) {
                blocked_programs.push(program);
            }
        }

        let mut unix_socket_allow = Vec::new();
        for socket in &req.config.policy.allow_unix_sockets {
            unix_socket_allow.push(canonicalize_lenient(
                "allowed unix socket",
                socket,
                resolver,
            )?);
        }

        // `network = "allowlist"`: its lists validated (a typo is named). Only a backend that
        // makes the proxy the chat's only route out builds it (the Linux namespace plan); the
        // others refuse it (the Landlock-only fallback, Seatbelt).
        let hosts = crate::egress::HostRules::new(
            &req.config.policy.allowed_hosts,
            &req.config.policy.denied_hosts,
        )?;
        match req.config.policy.network {
            Network::Allowlist if hosts.allowed.is_empty() => {
                return Err(PolicyError::NoAllowedHosts);
            }
            Network::Allowlist => {}
            other if !hosts.allowed.is_empty() || !hosts.denied.is_empty() => {
                return Err(PolicyError::HostsWithoutAllowlist {
                    network: other.as_str(),
                });
            }
            _ => {}
        }

        let secrets = if req.config.policy.secrets == crate::Secrets::Closed {
            secret_paths(&layout.home, resolver)?
        } else {
            Vec::new()
        };
        let mut hardened = if req.config.policy.harden {
            persistence_paths(req.os, &layout.home, &protected, resolver)?
        } else {
            Vec::new()
        };
        // A persistence path inside a secret place is closed to reading too: the stronger rule
        // alone, so that no backend opens it to reading for `harden`.
        hardened.retain(|h| !secrets.iter().any(|s| is_within(&h.path, s)));

        let mut git_writable = Vec::new();
        for place in &req.config.policy.git_writable {
            let place = canonicalize_lenient("git_writable grant", place, resolver)?;
            if !git_writable.contains(&place) {
                git_writable.push(place);
            }
        }

        let (kernel_tunables, kernel_secrets) = match req.os {
            Os::Linux => (
                KERNEL_TUNABLES_LINUX.iter().map(PathBuf::from).collect(),
                KERNEL_SECRETS_LINUX.iter().map(PathBuf::from).collect(),
            ),
            Os::MacOs => (Vec::new(), Vec::new()),
        };
        let writable = if req.privileged {
            let defaults = match req.os {
                Os::Linux => WRITABLE_AS_ROOT,
                Os::MacOs => WRITABLE_AS_ROOT_MACOS,
            };
            writable_places(
                &layout.home,
                defaults,
                &req.config.policy.writable,
                resolver,
            )?
        } else {
            Vec::new()
        };

        let mut grantable = vec![layout.workspace_docs.clone(), layout.runtimes_dir()];
        grantable.extend(
            protected
                .iter()
                .filter(|r| {
                    !is_within_plain(r, &layout.app_folder)
                        && !is_within_plain(r, &layout.state_root)
                })
                .cloned(),
        );
        let runtime_for_settings = runtime.clone();
        let settings = settings_paths(
            req.settings,
            &layout.home,
            &runtime_for_settings,
            &protected,
            resolver,
        )?;

        let policy = Policy {
            os: req.os,
            chat: req.chat.clone(),
            home: layout.home.clone(),
            grantable,
            protected,
            runtimes_dir: layout.runtimes_dir(),
            person_file_locks: layout.person_file_locks_dir(),
            runtime,
            grants,
            refused,
            blocked_programs,
            unix_socket_allow,
            hardened,
            git_writable,
            secrets,
            kernel_tunables,
            kernel_secrets,
            system_read_only: req.privileged,
            writable,
            network: req.config.policy.network,
            egress: (req.config.policy.network == Network::Allowlist).then(|| Egress {
                allowed_hosts: req.config.policy.allowed_hosts.clone(),
                denied_hosts: req.config.policy.denied_hosts.clone(),
                log: layout
                    .state_root
                    .join("state/egress")
                    .join(format!("{}.jsonl", req.chat)),
            }),
            limits: crate::Limits::from_config(&req.config.limits),
            settings,
        };
        policy.check_grants_outside_refused_entries()?;
        Ok(policy)
    }

    /// A grant inside (or at) an entry that an enclosing grant refuses would be closed under its
    /// own feet (the backends close the refused entry over it) and contradicts the other grant:
    /// refused. Grants are canonical, so each ancestor of one is looked up by its bytes (a
    /// `Path` comparison walks components: a binary search of a thousand grants per ancestor
    /// was half of `Policy::build`).
    fn check_grants_outside_refused_entries(&self) -> Result<(), PolicyError> {
        // One grant (a scripted step's usual) lies inside no other: no map to build (and no
        // random seed to ask the kernel for).
        if self.grants.len() < 2 {
            return Ok(());
        }
        let by_path: std::collections::HashMap<&OsStr, &Grant> = self
            .grants
            .iter()
            .map(|g| (g.path.as_os_str(), g))
            .collect();
        for inner in &self.grants {
            for ancestor in inner.path.ancestors().skip(1) {
                let Some(outer) = by_path.get(ancestor.as_os_str()) else {
                    continue;
                };
                let relative = inner.path.strip_prefix(&outer.path).expect("an ancestor");
                if let Some(pattern) = self
                    .refused
                    .iter()
                    .find(|p| p.refuses_on(self.os, relative))
                {
                    return Err(PolicyError::GrantInRefused {
                        path: inner.path.clone(),
                        grant: outer.path.clone(),
                        pattern: pattern.as_str().to_owned(),
                    });
                }
                // The innermost enclosing grant decides: refused patterns are relative to it.
                break;
            }
        }
        Ok(())
    }

    /// The entries at the top of `grant` that its refused patterns close, given what the grant
    /// holds now (`entries`: each name with its kind). Every backend that closes entries one by
    /// one (the Linux namespace plan, the Landlock-only fallback) asks this, so that "refused
    /// inside a grant" means the same everywhere: a matching entry of any kind is closed with
    /// everything beneath it, and [`Policy::decide`] says the same of each path.
    pub fn refused_entries<'a>(
        &self,
        grant: &Grant,
        entries: impl IntoIterator<Item = (&'a OsStr, EntryKind)>,
    ) -> RefusedEntries {
        let mut out = RefusedEntries::default();
        let mut seen: Vec<&OsStr> = Vec::new();
        for (name, kind) in entries {
            if self
                .refused
                .iter()
                .any(|p| p.matches_name_on(self.os, name))
            {
                out.present.push((grant.path.join(name), kind));
            }
            seen.push(name);
        }
        if grant.access == Access::ReadWrite {
            for pattern in &self.refused {
                let missing_folder = pattern.is_dir()
                    && !pattern.is_glob()
                    && !seen
                        .iter()
                        .any(|name| pattern.matches_name_on(self.os, name));
                if missing_folder {
                    out.create.push(grant.path.join(pattern.name()));
                } else if pattern.is_glob() || !pattern.is_dir() {
                    out.made_later = true;
                }
            }
        }
        out
    }

    /// The reference semantics: may a confined process do `op` on `path` (absolute, canonical)?
    /// Precedence, highest first: blocked > refused > pinned > git > settings >
    /// runtime/granted > closed > hardened > kernel > system > open.
    pub fn decide(&self, op: Op, path: &Path) -> Verdict {
        let refuse = |rule| Verdict {
            allowed: false,
            rule,
        };

        if let Some(program) = self.blocked_programs.iter().find(|p| *p == path)
            && op != Op::List
        {
            return refuse(Rule::Blocked {
                program: program.clone(),
            });
        }

        // The credential places: before the grants and the runtime (none can open them), closed
        // to every operation; their ancestors are not moved, so that a renamed `~/.config`
        // does not carry `gh`'s token out from under the rule.
        if let Some(secret) = self.secrets.iter().find(|s| is_within(path, s)) {
            return refuse(Rule::Secret {
                path: secret.clone(),
            });
        }
        if op == Op::Move
            && let Some(secret) = self.secrets.iter().find(|s| is_within(s, path))
        {
            return refuse(Rule::Secret {
                path: secret.clone(),
            });
        }

        let grant = self.innermost_grant(path);
        if let Some(grant) = grant
            && let Ok(relative) = path.strip_prefix(&grant.path)
            && let Some(pattern) = self
                .refused
                .iter()
                .find(|p| p.refuses_on(self.os, relative))
        {
            return refuse(Rule::Refused {
                grant: grant.path.clone(),
                pattern: pattern.as_str().to_owned(),
            });
        }

        if op == Op::Move
            && let Some(root) = self.protected.iter().find(|r| is_within(r, path))
        {
            return refuse(Rule::Pinned { root: root.clone() });
        }

        if matches!(op, Op::Write | Op::Move)
            && let Some(grant) = grant
            && grant.access == Access::ReadWrite
            && !self.git_writable.contains(&grant.path)
            && !is_within(path, &self.runtime)
            && git_protected(path, self.os == Os::MacOs)
        {
            return refuse(Rule::Git {
                grant: grant.path.clone(),
            });
        }

        // What a later launch would act on: read, never written or moved (also inside the
        // runtime, where the CLI takes it for its project's settings).
        if let Some(setting) = self.settings.iter().find(|s| is_within(path, &s.path)) {
            return Verdict {
                allowed: !matches!(op, Op::Write | Op::Move),
                rule: Rule::Settings {
                    path: setting.path.clone(),
                },
            };
        }
        // A folder or a link renamed into the place of an ancestor would bring its own settings.
        if op == Op::Move
            && let Some(setting) = self.settings.iter().find(|s| is_within(&s.path, path))
        {
            return refuse(Rule::Settings {
                path: setting.path.clone(),
            });
        }

        if is_within(path, &self.runtime) {
            // Moving the runtime itself would leave the next launch without it.
            let allowed = !(op == Op::Move && path == self.runtime);
            return Verdict {
                allowed,
                rule: Rule::Runtime {
                    runtime: self.runtime.clone(),
                },
            };
        }

        if let Some(grant) = grant {
            let writes = matches!(op, Op::Write | Op::Move);
            let allowed = match grant.access {
                Access::ReadWrite => !(op == Op::Move && path == grant.path),
                Access::ReadOnly => !writes,
            };
            return Verdict {
                allowed,
                rule: Rule::Granted {
                    grant: grant.path.clone(),
                    access: grant.access,
                },
            };
        }

        if let Some(root) = self.protected.iter().find(|r| is_within(path, r)) {
            return refuse(Rule::Closed { root: root.clone() });
        }

        if let Some(hardened) = self.hardened.iter().find(|h| is_within(path, &h.path)) {
            return Verdict {
                allowed: !matches!(op, Op::Write | Op::Move),
                rule: Rule::Hardened {
                    path: hardened.path.clone(),
                },
            };
        }
        // A folder renamed into the place of an ancestor would bring its own startup files.
        if op == Op::Move
            && let Some(hardened) = self.hardened.iter().find(|h| is_within(&h.path, path))
        {
            return refuse(Rule::Hardened {
                path: hardened.path.clone(),
            });
        }
        // The class `harden` closes beyond its list: the home's top level (home_top.rs).
        if let Some(verdict) = self.home_top_verdict(op, path) {
            return verdict;
        }

        let writes = matches!(op, Op::Write | Op::Move);
        if let Some(secret) = self.kernel_secrets.iter().find(|k| is_within(path, k)) {
            return refuse(Rule::Kernel {
                path: secret.clone(),
            });
        }
        if let Some(tunable) = self.kernel_tunables.iter().find(|k| is_within(path, k)) {
            return Verdict {
                allowed: !writes,
                rule: Rule::Kernel {
                    path: tunable.clone(),
                },
            };
        }
        if self.system_read_only && !self.writable.iter().any(|w| is_within(path, w)) {
            return Verdict {
                allowed: !writes,
                rule: Rule::System,
            };
        }

        Verdict {
            allowed: true,
            rule: Rule::Open,
        }
    }

    /// The deepest grant that holds `path` (grants may nest: a read-write folder inside a
    /// read-only workflow).
    fn innermost_grant(&self, path: &Path) -> Option<&Grant> {
        self.grants
            .iter()
            .filter(|g| is_within(path, &g.path))
            .max_by_key(|g| g.path.as_os_str().len())
    }

    /// Every folder the chat may use: its grants and its runtime, with their access.
    /// Borrowed, so that a caller that keeps a few of a thousand grants copies only those.
    pub fn writable_and_readable(&self) -> impl Iterator<Item = (&Path, Access)> + '_ {
        std::iter::once((self.runtime.as_path(), Access::ReadWrite))
            .chain(self.grants.iter().map(|g| (g.path.as_path(), g.access)))
    }

    /// Whether some chat, this one or another, may be given `path` to write: it lies strictly
    /// inside workspace-docs, the runtimes' folder or another protected root where grants may
    /// be (see [`Policy::could_replace`]).
    pub fn some_chat_may_be_granted(&self, path: &Path) -> bool {
        self.grantable
            .iter()
            .any(|g| path != g.as_path() && is_within(path, g))
    }

    /// Whether `path` lies inside (or is) one of the protected roots.
    pub fn is_protected(&self, path: &Path) -> bool {
        self.protected.iter().any(|r| is_within(path, r))
    }
}

/// [`SECRETS_HOME`] under `home` (canonical), each as named there and, where it is a link or
/// lies under one, as resolved too (a backend that judges resolved paths closes the target, one
/// that judges names closes the name); sorted, deduplicated.
fn secret_paths(home: &Path, resolver: &dyn Resolver) -> Result<Vec<PathBuf>, PolicyError> {
    let mut out = Vec::new();
    for relative in SECRETS_HOME {
        let named = home.join(relative);
        let resolved = canonicalize_lenient("secret place", &named, resolver)?;
        out.push(named);
        out.push(resolved);
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The names of git's own files that a chat must not write inside a read-write grant, found
/// by name in `path` (absolute): each `.git` entry itself (a folder, or a `gitdir:` file of a
/// worktree or submodule: renamed or replaced, it brings hooks of the chat's); in the folder
/// it is, `hooks/` and everything in it, `config`, `config.worktree` and `commondir` (which
/// names where the hooks and configuration are); the same in each submodule's and worktree's
/// folder under it (`.git/modules/NAME/`, `.git/worktrees/NAME/`, NAME of one or more names);
/// and `.gitmodules` anywhere (with anything beneath it); the same files in a bare repository,
/// a folder named `NAME.git` (a push to it runs its hooks), though not the folder itself. By
/// name, so a repository made during
/// the chat (`git init`, a clone) is covered by the rule as well; the backends say what they
/// enforce of it. `fold_case`: names match whatever their ASCII case (macOS).
///
/// A branch or a module whose own name ends in `hooks` or `config` under `.git/modules/` is
/// caught too (a rare name; refusing more is the safe side).
pub fn git_protected(path: &Path, fold_case: bool) -> bool {
    let names: Vec<&[u8]> = path
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(n.as_bytes()),
            _ => None,
        })
        .collect();
    let is = |name: &[u8], want: &str| {
        if fold_case {
            name.eq_ignore_ascii_case(want.as_bytes())
        } else {
            name == want.as_bytes()
        }
    };
    let last_is_setting = |name: &[u8]| {
        ["config", "config.worktree", "commondir"]
            .iter()
            .any(|w| is(name, w))
    };
    if names.iter().any(|n| is(n, ".gitmodules")) {
        return true;
    }
    // A bare repository is a folder named `NAME.git` (a push to it runs its hooks).
    let bare = |name: &[u8]| {
        name.len() > 4 && {
            let tail = &name[name.len() - 4..];
            if fold_case {
                tail.eq_ignore_ascii_case(b".git")
            } else {
                tail == b".git"
            }
        }
    };
    for (i, name) in names.iter().enumerate() {
        let exact = is(name, ".git");
        if !exact && !bare(name) {
            continue;
        }
        let rest = &names[i + 1..];
        match rest {
            [] => return exact,
            [first, ..] if is(first, "hooks") => return true,
            [only] if last_is_setting(only) => return true,
            [first, _, more @ ..] if is(first, "modules") || is(first, "worktrees") => {
                let deeper = more.len();
                for (j, name) in more.iter().enumerate() {
                    if is(name, "hooks") || (j + 1 == deeper && last_is_setting(name)) {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// The layout's fields are public (a provider may write one), and every rule below compares
/// canonical paths: a home or a root named through a link (`/var` for `/private/var`, a moved
/// home) would protect a name the kernel never sees. So the constructor checks what it is
/// given rather than trusting that [`Layout::resolve`] made it.
fn check_layout_canonical(layout: &Layout, resolver: &dyn Resolver) -> Result<(), PolicyError> {
    for (what, path) in [
        ("home folder", &layout.home),
        ("app folder", &layout.app_folder),
        ("state root", &layout.state_root),
        ("workspace-docs", &layout.workspace_docs),
    ] {
        let canonical = canonicalize_lenient(what, path, resolver)?;
        if canonical != *path {
            return Err(PolicyError::LayoutNotCanonical {
                what,
                path: path.clone(),
                canonical,
            });
        }
    }
    Ok(())
}

/// The persistence paths of `home` for `os`, each as written under the canonical home and, when
/// that is a symlink or lies under one, as resolved too: a write through a link lands on its
/// target, and the link itself must not be replaced. Paths inside or around a protected root are
/// left out (closed already, or closing them would open the root to reading).
fn persistence_paths(
    os: Os,
    home: &Path,
    protected: &[PathBuf],
    resolver: &dyn Resolver,
) -> Result<Vec<Hardened>, PolicyError> {
    let own = match os {
        Os::MacOs => PERSISTENCE_MACOS,
        Os::Linux => PERSISTENCE_LINUX,
    };
    let mut out: Vec<Hardened> = Vec::new();
    for entry in PERSISTENCE_COMMON.iter().chain(own) {
        let folder = entry.ends_with('/');
        let written = home.join(entry.trim_end_matches('/'));
        let resolved = canonicalize_lenient("persistence path", &written, resolver)?;
        for path in [written, resolved] {
            // Canonical paths (the home's, written under it, or resolved): compared as bytes.
            let near_protected = protected
                .iter()
                .any(|r| is_within_plain(&path, r) || is_within_plain(r, &path));
            let listed = out.iter().any(|h| h.path.as_os_str() == path.as_os_str());
            if !near_protected && !listed {
                let empty_is_absent = PERSISTENCE_EMPTY_IS_ABSENT.contains(entry);
                out.push(Hardened {
                    path,
                    folder,
                    empty_is_absent,
                });
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The acted-on places of `requests`, absolute: in the home (each as written and, when that
/// leads through a symlink, as resolved too: a write through a link lands on its target, and the
/// link itself must not be replaced), in the runtime (as written: the runtime is canonical, and
/// a link a chat left in it is not followed to close something elsewhere), and above the
/// runtime in each folder a chat can write. Places inside or around a protected root are left
/// out (closed already, or closing them would open the root to reading), but those inside the
/// runtime. One place declared twice (by two CLIs) is listed once.
fn settings_paths(
    requests: &[SettingsRequest],
    home: &Path,
    runtime: &Path,
    protected: &[PathBuf],
    resolver: &dyn Resolver,
) -> Result<Vec<SettingsPath>, PolicyError> {
    let mut out: Vec<SettingsPath> = Vec::new();
    // The folders above the runtime that a chat can write: the home and those between it and
    // the first protected root on the way down (the state root).
    let above: Vec<&Path> = runtime
        .ancestors()
        .skip(1)
        .filter(|a| is_within_plain(a, home))
        .filter(|a| !protected.iter().any(|r| is_within_plain(a, r)))
        .collect();
    for req in requests {
        let relative = Path::new(req.entry.path);
        check_relative_setting(req)?;
        let (folder, empty) = match req.entry.kind {
            ActedOnKind::Folder => (true, ""),
            ActedOnKind::File { empty } => (false, empty),
        };
        let mut push = |path: PathBuf, in_runtime: bool| {
            let listed = out.iter().any(|s| s.path.as_os_str() == path.as_os_str());
            if !listed {
                out.push(SettingsPath {
                    path,
                    folder,
                    empty,
                    in_runtime,
                    cli: req.cli,
                });
            }
        };
        let written: Vec<PathBuf> = match req.entry.anchor {
            Anchor::Runtime => {
                push(runtime.join(relative), true);
                continue;
            }
            Anchor::Home => vec![home.join(relative)],
            Anchor::Folder { default, .. } => vec![
                req.folder
                    .clone()
                    .unwrap_or_else(|| home.join(default))
                    .join(relative),
            ],
            Anchor::AboveRuntime => above.iter().map(|a| a.join(relative)).collect(),
        };
        for written in written {
            check_absolute_clean("acted-on settings path", &written)?;
            let resolved = canonicalize_lenient("acted-on settings path", &written, resolver)?;
            for path in [written, resolved] {
                let near_protected = protected
                    .iter()
                    .any(|r| is_within_plain(&path, r) || is_within_plain(r, &path));
                if !near_protected {
                    push(path, false);
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A declared place is relative and goes nowhere up: an adapter's table, checked so that a
/// mistake in one cannot close (or open) a place outside its anchor.
fn check_relative_setting(req: &SettingsRequest) -> Result<(), PolicyError> {
    let path = Path::new(req.entry.path);
    let clean = !req.entry.path.is_empty()
        && path.is_relative()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if clean {
        Ok(())
    } else {
        Err(PolicyError::BadSetting {
            cli: req.cli,
            path: req.entry.path.to_owned(),
        })
    }
}

/// The places a root chat may write (see [`WRITABLE_AS_ROOT`]): canonical, sorted, and none
/// inside another.
fn writable_places(
    home: &Path,
    defaults: &[&str],
    configured: &[PathBuf],
    resolver: &dyn Resolver,
) -> Result<Vec<PathBuf>, PolicyError> {
    let mut places = vec![home.to_owned()];
    for place in defaults
        .iter()
        .map(Path::new)
        .chain(configured.iter().map(PathBuf::as_path))
    {
        places.push(canonicalize_lenient("writable place", place, resolver)?);
    }
    // Every place is canonical (the home, by `check_layout_canonical`; the others just made
    // so), so their order and nesting are read from their bytes, as `Path` would find them.
    places.sort_by(|a, b| cmp_plain(a, b));
    places.dedup();
    let mut out: Vec<PathBuf> = Vec::new();
    for place in places {
        if !out.iter().any(|o| is_within_plain(&place, o)) {
            out.push(place);
        }
    }
    Ok(out)
}

/// A grant is exactly the folder the provider named: its path may pass through symlinks above the
/// protected root that holds it (macOS's `/var`, a home moved elsewhere), never through one at or
/// below the root, where a chat with a read-write grant could have planted one
/// (`wf-a/outputs -> ../../users`), nor through one that leads into the root from outside (a
/// link in the home, which every chat can write and retarget). Checked without a walk: the
/// canonical path lies `k` names below the outermost root that holds it; the asked path must end
/// with the same `k` names, the name before them must be the root's own, and what comes before
/// that must resolve to the root's parent folder. Then every name from the root down is a real
/// folder of the canonical path, none a link.
fn check_named_by_its_own_path(
    asked: &Path,
    canonical: &Path,
    protected: &[PathBuf],
    resolver: &dyn Resolver,
) -> Result<(), PolicyError> {
    let Some(root) = protected
        .iter()
        .filter(|r| is_within_plain(canonical, r))
        .min_by_key(|r| r.components().count())
    else {
        return Ok(());
    };
    let below: Vec<_> = canonical
        .strip_prefix(root)
        .expect("within the root")
        .components()
        .collect();
    let asked_parts: Vec<_> = asked.components().collect();
    let refused = || PolicyError::GrantThroughSymlink {
        path: asked.to_owned(),
        resolved: canonical.to_owned(),
        root: root.clone(),
    };
    let k = below.len();
    if asked_parts.len() < k + 2 || asked_parts[asked_parts.len() - k..] != below[..] {
        return Err(refused());
    }
    let root_name = asked_parts[asked_parts.len() - k - 1];
    if Some(root_name.as_os_str()) != root.file_name() {
        return Err(refused());
    }
    let above: PathBuf = asked_parts[..asked_parts.len() - k - 1].iter().collect();
    let above = resolver.canonicalize(&above).map_err(|_| refused())?;
    if Some(above.as_path()) != root.parent() {
        return Err(refused());
    }
    Ok(())
}

fn validate_grant(
    asked: &GrantRequest,
    layout: &Layout,
    runtime: &Path,
    protected: &[PathBuf],
    resolver: &dyn Resolver,
) -> Result<Grant, PolicyError> {
    check_absolute_clean("grant", &asked.path)?;
    let path = resolver.canonicalize(&asked.path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            PolicyError::GrantMissing {
                path: asked.path.clone(),
                reason: e.to_string(),
            }
        } else {
            // A symlink loop, a name too long, a folder that cannot be entered.
            PolicyError::Unresolvable {
                what: "grant",
                path: asked.path.clone(),
                reason: e.to_string(),
            }
        }
    })?;
    let path = plain_path(&path);
    // From here every path compared is canonical and plain (the grant just made so, whatever
    // the resolver gave; the layout checked; the protected roots canonicalized; the runtime a
    // chat id below the layout's), so nesting is read from the bytes (`is_within_plain`), where
    // `Path` parses every name of both paths at each of the ten comparisons.
    if !resolver.is_dir(&path) {
        return Err(PolicyError::GrantNotFolder {
            path: asked.path.clone(),
        });
    }
    if let Some(root) = protected.iter().find(|r| is_within_plain(r, &path)) {
        return Err(PolicyError::GrantContainsProtected {
            path: asked.path.clone(),
            root: root.clone(),
        });
    }
    if !protected.iter().any(|r| is_within_plain(&path, r)) {
        return Err(PolicyError::GrantOutsideProtected {
            path: asked.path.clone(),
        });
    }
    if layout.is_in_runtimes(&path) && !is_within_plain(&path, runtime) {
        return Err(PolicyError::GrantInOtherRuntime {
            path: asked.path.clone(),
            resolved: path,
        });
    }
    // Inside the app folder (or the state root) only workspace-docs may be granted; the rest is
    // AgentWorks' own: logins, the token, personal MCP connections, event databases.
    for app in [&layout.app_folder, &layout.state_root] {
        if is_within_plain(&path, app) && !is_within_plain(&path, &layout.workspace_docs) {
            if is_within_plain(&path, runtime) {
                break;
            }
            return Err(PolicyError::GrantInAppFolder {
                path: asked.path.clone(),
                resolved: path,
                app: app.clone(),
            });
        }
    }
    check_named_by_its_own_path(&asked.path, &path, protected, resolver)?;
    Ok(Grant {
        path,
        access: asked.access,
    })
}

mod home_top;
pub use home_top::{
    HARDEN_LEAVES_OPEN, HOME_STATE_FOLDERS, HOME_TOP_STATE_FILES, HOME_TOP_STATE_TEMP_MACOS,
};

#[cfg(test)]
mod tests;
