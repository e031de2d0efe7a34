//! The macOS backend: a chat's [`Policy`] compiled into a Seatbelt profile for
//! `/usr/bin/sandbox-exec`.
//!
//! What it is for: [`SeatbeltProfile::for_policy`] turns the policy into profile text plus
//! parameters, and [`SeatbeltProfile::wrap`] puts `sandbox-exec` in front of a command. It decides
//! nothing of its own: every rule comes from the policy, whose reference semantics are
//! [`Policy::decide`]. What it is not: it does not run anything (except
//! [`already_sandboxed`], a probe) and does not choose a backend.
//!
//! # The profile
//!
//! The part that is the same for every chat is `base.sbpl` beside this file: `(allow default)`,
//! then the ways out (Apple Events, LaunchServices, DiskArbitration, the window server, alerts,
//! login items and other vendors' Mach services, mounts and unmounts, synthetic input, launchd
//! jobs, preference writes, signals and task ports outside the sandbox, every unix-socket connect
//! but DNS and syslog). The chat's rules
//! are generated in the order that makes the policy's precedence come out of "the last matching
//! rule wins":
//!
//! 1. closed: each protected root refuses every file operation and exec, in any case;
//! 2. the metadata (not the entries) of the folders that lead to the runtime and to each grant
//!    inside a protected root, so that `realpath` and `getcwd` work there;
//! 3. the runtime and the grants, shallow before deep (a grant inside another overrides it):
//!    read-write allows everything but moving or replacing the folder itself and hard links;
//!    read-only
//!    refuses every file operation, then allows reading and exec; each grant's refused patterns
//!    right after it (a grant inside the runtime keeps the runtime's access and only adds its
//!    patterns);
//! 4. hardened (only with `harden = true`): no write to a persistence path of the home, nor to
//!    anything beneath it, also when created later; none of their ancestors moved or replaced;
//! 5. settings (`Policy::settings`, always): no write, creation, link, clone or move of a CLI's
//!    settings file or of anything beneath a settings folder, under any name of it, so a missing
//!    one cannot be made (nothing is created before the chat); none of their ancestors moved,
//!    replaced or made when missing;
//! 6. pinned: no protected root and none of its ancestors may be moved or replaced;
//! 7. blocked programs: no exec, no read (a copy would run the same), no write;
//! 8. clones of folders that hold something unreadable: the ancestors of each protected root,
//!    each grant and its ancestors, the ancestors of each blocked program;
//! 9. the chat's allowed unix sockets.
//!
//! Paths enter only as `(param "NAME")` with `-DNAME=VALUE`, never spliced into the text, so a
//! path with quotes, parentheses or semicolons cannot change what the profile says: the text
//! depends only on the policy's shape (how many roots, grants and so on, their kinds and depths).
//!
//! Every deny holds in any case of the name (macOS volumes are case-insensitive by default, a
//! path filter compares bytes): the denies of 1 and 4 to 8 name a parameter holding the path's
//! folded regex (`folded_regex`) as `(regex (string-append (param "P") "/?$"))` (the path) or
//! `"(/|$)"` (the path and beneath). Allows stay exact, and so do the grants' and the runtime's
//! own denies, one parameter each: they lie inside a protected root, whose folded rule refuses
//! every other spelling, which no exact allow re-opens. Taking a path's place is
//! `file-write-unlink`, `file-write-create` and `file-link` on it (`MOVE`): a swap
//! (`renamex_np(RENAME_SWAP)`) may be asked as an unlink at one end and a create at the other.
//!
//! The oldest release that compiles the profile is macOS 10.14 (`file-clone` and
//! `file-test-existence` are unknown to 10.12 and 10.13; `sandbox_core::platform::MACOS_MINIMUM`).
//!
//! # Decisions where Seatbelt is not documented
//!
//! - The operation tree is libsandbox's own table (dumped by the simbple project for macOS
//!   10.12 to 10.15, `src/platform_data/*/operations.c`): `file-link`, `file-clone`,
//!   `file-test-existence`, `file-map-executable` and `file-write-setugid` are terminal
//!   operations that fall back to `default`, so a rule on `file*` does not reach them. Every rule
//!   that refuses files names them.
//! - Rules of one operation and rules of its parent (`file-write-unlink` and `file*`) have been
//!   reported to weigh by position alone, specific operation first, or a filtered rule on the
//!   specific operation first; and a `require-all` rule has been reported to beat a later plain
//!   one (the profile's only `require-all` rules are the refused patterns' denies). Every rule
//!   here names the same levels (`file*` and, below it, `file-read*`, `file-write*` and the
//!   terminal operations) or a level no later rule contradicts, so all four readings give the
//!   same verdict; the tests check it.
//! - Hard links: XNU asks the sandbox about both the source and the destination of `link(2)`,
//!   each on its own, under `file-link`. A link is another writable name for the same file, and
//!   a name made in the open home for a file of a grant or of the runtime would outlive the
//!   chat: a later chat, with other grants, would read and write this one's files through it.
//!   So `file-link` is refused everywhere inside a protected root, in a read-write grant and in
//!   the runtime too (Seatbelt cannot say "both ends in this grant"). Tools fall back: git to a
//!   rename, cargo and pnpm to a copy.
//! - Clones: `clonefile(2)` is asked the same way under `file-clone`, and makes a new file, so a
//!   read-write grant and the runtime keep it. But a clone of a folder copies everything beneath
//!   it, so it is refused for every folder that holds something the chat may not read (the
//!   ancestors of each protected root, each grant with its refused patterns and the grant's
//!   ancestors, the ancestors of each blocked program).
//! - Refused patterns are one regular expression per depth, shared by every grant at that
//!   depth and carried whole in a parameter: `^`, one `/[^/]+` per component of the grant's
//!   path, `/`, then the patterns as alternatives (`*` is `[^/]*`, `?` is `[^/]`, a folder
//!   pattern ends in `(/|$)`, a file pattern in `$`); each grant's rule is
//!   `(require-all (subpath GRANT) (regex REFUSED_DEPTH_d))`. Letters of the patterns are
//!   folded (`[pP]`), because macOS volumes are case-insensitive by default and a regex compares
//!   bytes: `PLANNING/plan.json` opens `planning/plan.json`. The grant's own path is matched
//!   exactly: another spelling of it falls to the folded closed rule. One expression per depth also holds for entries created
//!   after launch, and keeps the command small: 1,000 read-write grants with 190-character paths
//!   take 0.85 MB of `sandbox-exec`'s arguments, under macOS's 1 MiB (`ARG_MAX`).
//! - Our operations map to Seatbelt's as: read is `file-read-data` (and `-xattr`,
//!   `file-test-existence`, `file-map-executable`); list is `file-read-data` on a folder; write
//!   is `file-write-data`, `-create` and the attribute writes; exec is `process-exec*`; move is
//!   `file-write-unlink`, which `rename(2)` checks on its source (there is no
//!   `file-write-rename`), with `file-write-create` on its destination.
//!
//! # Limits
//!
//! `sandbox-exec`'s arguments and environment must fit in `ARG_MAX`
//! ([`SeatbeltProfile::check_exec_size`] refuses a launch that would not, as bad input, naming the
//! number of grants), and one SBPL expression in 65,535 bytes: a rule with more filters than
//! that is written as several rules, and a parameter longer than that is refused.
//!
//! See `docs/macos.md` for running the real-`sandbox-exec` tests and reading denials.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sandbox_core::{Access, Os, Policy, RefusedPattern};
use serde::Serialize;

/// The only `sandbox-exec` we run: never looked up on PATH.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// The part of the profile that does not depend on the chat.
const BASE: &str = include_str!("base.sbpl");

/// Where in [`BASE`] the chat's rules go.
const CHAT_RULES_MARKER: &str = ";;; @chat-rules\n";

const _: () = assert!(
    occurrences(BASE.as_bytes(), CHAT_RULES_MARKER.as_bytes()) == 1,
    "base.sbpl must hold the chat-rules marker exactly once"
);

/// Every file operation and exec, refused. `file*` covers the non-terminal file operations; the
/// levels below it are named as well so that the rule holds however Seatbelt weighs a parent
/// operation against a child's, and the terminal ones because `file*` does not reach them.
const EVERY: &str = "file* file-read* file-write* file-link file-clone file-test-existence \
                     file-map-executable file-write-setugid process-exec*";
/// What a read-write grant and the runtime allow: [`EVERY`] but hard links (see the module's
/// documentation).
const READ_WRITE: &str = "file* file-read* file-write* file-clone file-test-existence \
                          file-map-executable file-write-setugid process-exec*";
/// Hard links, refused in a read-write grant and the runtime.
const LINK: &str = "file-link";
/// Reading a file, listing a folder, mapping and running a program.
const READ: &str = "file-read* file-test-existence file-map-executable process-exec*";
/// Refused in a read-only grant before [`READ`] is allowed again.
const NOT_READ: &str = "file* file-write* file-link file-clone file-write-setugid";
/// Taking the path's place: renaming or unlinking it (`file-write-unlink`), and giving its name
/// to something else (`file-write-create`: a rename or a swap onto it; a hard link made there).
/// Every path denied this exists (a protected root and its ancestors, a grant, the runtime, the
/// folders above a persistence path), so refusing its creation costs nothing; and a swap
/// (`renamex_np(RENAME_SWAP)`) may be asked as an unlink of one end and a create of the other,
/// so both are refused at each.
const MOVE: &str = "file-write-unlink file-write-create file-link";
/// Every write, moving, linking and cloning included.
const WRITE: &str = "file-write* file-link file-clone file-write-setugid";
/// Cloning a folder, which copies everything beneath it.
const CLONE: &str = "file-clone";

/// The longest SBPL expression `sandbox-exec` takes: a longer rule is split, a longer parameter
/// refused.
pub const MAX_EXPRESSION: usize = 65_535;
/// macOS's limit on the arguments and environment of a program (`ARG_MAX`).
pub const ARG_MAX: usize = 1 << 20;
/// Kept free of [`ARG_MAX`] for the variables the CLI's adapter sets after the check.
pub(crate) const ENV_RESERVE: usize = 64 << 10;

/// What `(with message ...)` says for a denial, so that the log names the rule (see
/// `docs/macos.md`). The names are those of [`sandbox_core::Rule::name`].
const TAG: &str = "cli-sandbox: ";

/// A Seatbelt profile for one chat: the text for `sandbox-exec -p` and the values of its
/// parameters for `-D`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeatbeltProfile {
    /// The SBPL text: rules only, every path in it a `(param "NAME")`.
    pub text: String,
    /// Each parameter's name and value (a path of the policy), passed as `-D NAME=VALUE`.
    pub params: BTreeMap<String, String>,
}

/// A policy or a command that cannot be written as a Seatbelt invocation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeatbeltError {
    /// The policy was built for Linux.
    #[error(
        "the policy was built for {os:?}, not macOS: its blocked programs and its matching of \
         names are another system's; build it with `Os::MacOs` for a Seatbelt profile"
    )]
    NotForMacOs {
        /// The OS it was built for.
        os: Os,
    },
    /// A path of the policy is not UTF-8 (an SBPL string is text).
    #[error(
        "the {what} `{}` is not valid UTF-8, and a Seatbelt profile names paths as text: \
         rename it or leave it out of the policy",
        path.display()
    )]
    PathNotUtf8 {
        /// Which of the policy's paths (`protected root`, `grant`...).
        what: &'static str,
        /// The path.
        path: PathBuf,
    },
    /// An argument of the command is not UTF-8 (for the JSON form of the command).
    #[error(
        "argument {index} of the command, {}, is not valid UTF-8 and cannot be written as JSON: \
         pass it as text",
        arg.to_string_lossy()
    )]
    ArgNotUtf8 {
        /// Its place in the command, from 0.
        index: usize,
        /// The argument.
        arg: OsString,
    },
    /// A regex of the profile (the refused patterns') is longer than sandbox-exec parses.
    #[error(
        "the {what} would be a Seatbelt expression of {bytes} bytes, over the {limit} that \
         sandbox-exec takes: configure fewer or shorter refused patterns"
    )]
    ExpressionTooLong {
        /// Which expression.
        what: &'static str,
        /// Its length, in bytes.
        bytes: usize,
        /// The most sandbox-exec takes ([`MAX_EXPRESSION`]).
        limit: usize,
    },
    /// A configured `[limits]` key the Seatbelt backend cannot hold.
    #[error(
        "`[limits] {0}` cannot be held on macOS (Seatbelt limits files, not resources; no cgroup exists there): the launch is refused rather than run unbounded; take `{0}` out of `[limits]`"
    )]
    LimitNotHeld(&'static str),
    /// The whole command would be over macOS's `ARG_MAX`.
    #[error(
        "the sandbox-exec command of this chat would take {bytes} bytes of arguments and \
         environment with {grants} grants, over the {limit} bytes macOS allows (ARG_MAX, less \
         {ENV_RESERVE} kept for the CLI's own variables), and sandbox-exec would fail with \
         E2BIG: launch the chat with fewer grants or shorter grant paths"
    )]
    TooLarge {
        /// The chat's number of grants.
        grants: usize,
        /// The arguments and environment, in bytes.
        bytes: usize,
        /// What is left of `ARG_MAX` for them.
        limit: usize,
    },
}

/// What the Seatbelt backend says of `[limits]`: none holds there. A configured `processes` or
/// `memory` refuses the launch ([`SeatbeltError::LimitNotHeld`]); the default process limit and
/// the private `/tmp` are not held, and said so.
pub fn limits_guarantees() -> Vec<sandbox_core::Guarantee> {
    use sandbox_core::{Enforcement, Guarantee, Promise};
    vec![
        Guarantee::new(
            Promise::Processes,
            "nothing",
            Enforcement::Not(
                "Seatbelt limits files, not resources; RLIMIT_NPROC on macOS counts every process of the uid (no namespace), so it would limit the person's own programs too".into(),
            ),
        ),
        Guarantee::new(
            Promise::Memory,
            "nothing",
            Enforcement::Not("macOS has no cgroup; `[limits] memory` refuses the launch there".into()),
        ),
        Guarantee::new(
            Promise::PrivateTmp,
            "nothing: /tmp and $TMPDIR are the machine's and the person's",
            Enforcement::Not(
                "Seatbelt cannot give a chat a folder of its own at /tmp (no mount namespace); the temporary folders are shared with the person's programs and other chats".into(),
            ),
        ),
    ]
}

impl SeatbeltError {
    /// Whether the policy or the command is at fault (exit status 2), not this program.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, SeatbeltError::NotForMacOs { .. })
    }
}

impl SeatbeltProfile {
    /// Compiles a policy built for macOS. Fails on a policy built for another system and on a
    /// path that is not UTF-8 (which no macOS volume holds; a policy built elsewhere might).
    pub fn for_policy(policy: &Policy) -> Result<SeatbeltProfile, SeatbeltError> {
        if policy.os() != Os::MacOs {
            return Err(SeatbeltError::NotForMacOs { os: policy.os() });
        }
        let limits = policy.limits();
        if limits.memory.is_some() {
            return Err(SeatbeltError::LimitNotHeld("memory"));
        }
        if limits.processes_configured {
            return Err(SeatbeltError::LimitNotHeld("processes"));
        }
        let (head, tail) = BASE.split_once(CHAT_RULES_MARKER).unwrap_or((BASE, ""));
        let mut out = Writer {
            text: String::from(head),
            params: BTreeMap::new(),
            names: HashMap::new(),
            folded: HashMap::new(),
            extra: 0,
            extra_folded: 0,
            git_grants: 0,
            noted: HashSet::new(),
        };
        out.chat_rules(policy)?;
        out.text.push_str(tail);
        Ok(SeatbeltProfile {
            text: out.text,
            params: out.params,
        })
    }

    /// `["/usr/bin/sandbox-exec", "-p", text, "-DNAME=VALUE"..., "--", argv...]`. `argv` is the
    /// command to confine, its program first.
    pub fn wrap(&self, argv: &[OsString]) -> Vec<OsString> {
        let mut out: Vec<OsString> = Vec::with_capacity(4 + self.params.len() + argv.len());
        out.push(SANDBOX_EXEC.into());
        out.push("-p".into());
        out.push(self.text.clone().into());
        for (name, value) in &self.params {
            out.push(format!("-D{name}={value}").into());
        }
        out.push("--".into());
        out.extend(argv.iter().cloned());
        out
    }

    /// `{"profile": TEXT, "params": {...}, "argv": [...]}`, the wrapped command included, for
    /// `cli-sandbox profile --json`.
    pub fn to_json(&self, argv: &[OsString]) -> Result<serde_json::Value, SeatbeltError> {
        let wrapped = self
            .wrap(argv)
            .into_iter()
            .enumerate()
            .map(|(index, arg)| {
                arg.into_string()
                    .map_err(|arg| SeatbeltError::ArgNotUtf8 { index, arg })
            })
            .collect::<Result<Vec<String>, _>>()?;
        Ok(serde_json::json!({
            "profile": self.text,
            "params": self.params,
            "argv": wrapped,
        }))
    }
}

impl SeatbeltProfile {
    /// Refuses a command (as [`SeatbeltProfile::wrap`] gives it) that, with `env`, would not fit
    /// in [`ARG_MAX`] less `ENV_RESERVE`: `sandbox-exec` would fail with E2BIG, after the
    /// launcher has done its work. Each argument and variable counts its bytes, its terminating
    /// NUL and its pointer. `grants` is only for the message.
    pub fn check_exec_size<'a>(
        argv: &[OsString],
        env: impl IntoIterator<Item = (&'a std::ffi::OsStr, &'a std::ffi::OsStr)>,
        grants: usize,
    ) -> Result<(), SeatbeltError> {
        const POINTER: usize = std::mem::size_of::<usize>();
        let args: usize = argv.iter().map(|a| a.len() + 1 + POINTER).sum();
        let vars: usize = env
            .into_iter()
            .map(|(k, v)| k.len() + 1 + v.len() + 1 + POINTER)
            .sum();
        let bytes = args + vars;
        let limit = ARG_MAX - ENV_RESERVE;
        if bytes > limit {
            return Err(SeatbeltError::TooLarge {
                grants,
                bytes,
                limit,
            });
        }
        Ok(())
    }
}

/// Makes the acted-on places of the chat's runtime that are missing, in their neutral form (an
/// empty folder `0700`, a file holding [`sandbox_core::SettingsPath::empty`], `0600`), before the
/// chat starts; nothing in the person's home. The profile needs no inode to refuse a name, so the
/// home's missing settings stay missing (their creation is refused by name); in the runtime,
/// which is AgentWorks' folder, one file must exist for its own sake: Gemini's
/// `<runtime>/.gemini/.env`, which ends Gemini's `.env` search at the runtime (SECURITY.md).
/// A place under a symlink a chat left in its runtime (an earlier launch) is not made: no write
/// follows a link out of the runtime. Returns the places made. Called by
/// [`crate::wrap::PreparedLaunch::pre_trust`] for a Seatbelt launch, after the runtime is made.
pub(crate) fn create_runtime_settings(
    runtime: &Path,
    settings: &[sandbox_core::SettingsPath],
) -> std::io::Result<Vec<PathBuf>> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let mut made = Vec::new();
    for setting in settings.iter().filter(|s| s.in_runtime()) {
        let path = setting.path();
        let Ok(relative) = path.strip_prefix(runtime) else {
            continue;
        };
        // Every folder on the way, from the runtime down: made when missing, never a link.
        // (The runtime itself is made by pre-trust, before this.)
        let skip = usize::from(!setting.is_folder());
        let folders: Vec<PathBuf> = relative
            .ancestors()
            .skip(skip)
            .filter(|a| !a.as_os_str().is_empty())
            .map(|a| runtime.join(a))
            .collect();
        let mut through_a_link = false;
        for folder in folders.iter().rev() {
            match std::fs::symlink_metadata(folder) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    through_a_link = true;
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::DirBuilder::new().mode(0o700).create(folder)?;
                    made.push(folder.clone());
                }
                Err(e) => return Err(e),
            }
        }
        if through_a_link || setting.is_folder() {
            continue;
        }
        // `create_new` does not follow a link at the name (it fails with "exists").
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
        {
            Ok(mut file) => {
                file.write_all(setting.empty().as_bytes())?;
                made.push(path.to_owned());
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(made)
}

/// Marks every descriptor above stderr close-on-exec in the child, after `fork` and before it
/// runs `sandbox-exec`: a descriptor inherited from the launcher (a connected socket, a folder
/// opened outside) stays usable inside whatever the profile says. (The Linux helper does the
/// same with `close_range`, which macOS lacks.)
///
/// Which descriptors: every one from 3 to the highest open in this process when the command is
/// built (listed from `/dev/fd`), and `DESCRIPTOR_MARGIN` more for those other threads may
/// open before the fork (the kernel gives the lowest free number), bounded by the process's
/// limit when that is lower. Cost: one `fcntl` per number, and `fork` instead of
/// `posix_spawn`.
pub fn close_inherited_descriptors(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let end = descriptors_end(highest_open_descriptor(), open_limit());
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are sound: it calls fcntl(2) and reads errno, allocates nothing
    // and takes no lock.
    unsafe {
        command.pre_exec(move || mark_close_on_exec(3, end));
    }
}

/// How many descriptor numbers past the highest open one are marked too.
pub(crate) const DESCRIPTOR_MARGIN: i32 = 256;

fn descriptors_end(highest: Option<i32>, limit: i32) -> i32 {
    match highest {
        // Numbers at or above the limit cannot be given out any more; those already open are
        // below `highest + 1`.
        Some(highest) => (highest.max(2) + 1 + DESCRIPTOR_MARGIN).min(limit.max(highest + 1)),
        None => limit,
    }
}

/// The highest descriptor open in this process, from `/dev/fd` (on Linux a link to
/// `/proc/self/fd`); `None` when it cannot be listed.
fn highest_open_descriptor() -> Option<i32> {
    let entries = std::fs::read_dir("/dev/fd").ok()?;
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .max()
}

/// The soft limit on descriptors, as a descriptor number.
fn open_limit() -> i32 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if rc != 0 {
        // Not knowing the limit, mark as many as any process may hold.
        return i32::MAX;
    }
    i32::try_from(limit.rlim_cur).unwrap_or(i32::MAX)
}

/// Sets `FD_CLOEXEC` on every open descriptor in `start..end` (in the child: see
/// [`close_inherited_descriptors`]). A number that is not open is skipped; any other failure
/// stops the launch.
fn mark_close_on_exec(start: i32, end: i32) -> std::io::Result<()> {
    for fd in start..end {
        // SAFETY: F_GETFD reads the flags of a descriptor number; no memory involved.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        if flags == -1 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EBADF) {
                continue;
            }
            return Err(err);
        }
        if flags & libc::FD_CLOEXEC == 0 {
            // SAFETY: F_SETFD sets the flags of an open descriptor; no memory involved.
            let rc = unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
            if rc == -1 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Whether this process already runs inside a Seatbelt sandbox, where macOS refuses another one
/// (`sandbox_apply: Operation not permitted`, exit 71). Asked by running the most permissive
/// profile around `/usr/bin/true`. False where `sandbox-exec` cannot run at all (not a Mac):
/// its absence is a fact of its own.
pub fn already_sandboxed() -> bool {
    nested_sandbox_refused(Path::new(SANDBOX_EXEC))
}

/// `sysexits.h`'s EX_OSERR, which `sandbox-exec` returns when `sandbox_apply` fails.
const EX_OSERR: i32 = 71;

fn nested_sandbox_refused(sandbox_exec: &Path) -> bool {
    Command::new(sandbox_exec)
        .args(["-p", "(version 1)(allow default)", "--", "/usr/bin/true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.code() == Some(EX_OSERR))
}

struct Writer {
    text: String,
    params: BTreeMap<String, String>,
    /// The parameter already naming each path (by its text), so that a later rule on the same
    /// path reuses it.
    names: HashMap<String, String>,
    /// The parameter already holding the case-folded regex of each path (by its text), so that a
    /// later deny on the same path reuses it.
    folded: HashMap<String, String>,
    /// How many `CLONE_i` parameters there are (paths no other rule names).
    extra: usize,
    /// How many `CASE_i` parameters there are (folded paths no other deny names).
    extra_folded: usize,
    /// How many read-write grants have a `GIT_OWN_FILES_i` regex.
    git_grants: usize,
    /// The comments written so far (see [`Writer::note`]).
    noted: HashSet<&'static str>,
}

/// One folder the chat may use, in the order its rules are written.
enum Use<'a> {
    Runtime(&'a Path),
    Grant(usize, &'a Path, Access),
}

impl Writer {
    fn chat_rules(&mut self, policy: &Policy) -> Result<(), SeatbeltError> {
        self.line(";; This chat's rules, generated from its policy.");

        if policy.system_read_only() {
            // Before everything else: the grants and the runtime below allow what they allow.
            self.line(
                ";; A root launcher: nothing outside the writable places (the home, the temporary folders) is written.",
            );
            let places = self.params_of("WRITABLE", "writable place", policy.writable())?;
            let any = subpaths(&places).join(" ");
            self.rule(
                "deny",
                WRITE,
                &[format!("(require-not (require-any {any}))")],
                Some("system"),
            );
        }

        if policy.home_top_closed() {
            self.home_top(policy)?;
        }

        self.line(";; Closed: the protected roots, to every file operation and exec, in any case.");
        let roots = self.folded_of("PROTECTED", "protected root", policy.protected())?;
        self.rule("deny", EVERY, &folded_subpaths(&roots), Some("closed"));

        let ancestors = leading_folders(policy);
        if !ancestors.is_empty() {
            self.line(
                ";; The folders that lead to the runtime and the grants: their metadata only.",
            );
            let names = self.params_of("ANCESTOR", "folder above a grant", &ancestors)?;
            self.rule("allow", "file-read-metadata", &literals(&names), None);
        }

        // Shallow before deep, so that a grant inside another overrides it.
        let mut uses: Vec<Use> = policy
            .grants()
            .iter()
            .enumerate()
            .map(|(index, grant)| Use::Grant(index, grant.path.as_path(), grant.access))
            .collect();
        uses.push(Use::Runtime(policy.runtime()));
        uses.sort_by_cached_key(|u| match u {
            // The runtime before a grant of the same folder: the grant's refused patterns must
            // come after the runtime's allow.
            Use::Runtime(path) => (path.components().count(), 0),
            Use::Grant(index, path, _) => (path.components().count(), index + 1),
        });
        // One refused expression per depth, shared by the grants of that depth.
        let mut refused_at: BTreeMap<usize, String> = BTreeMap::new();
        for one in uses {
            match one {
                Use::Runtime(path) => {
                    self.note(
                        ";; The runtime: read-write, but not moved itself, and no hard link.",
                    );
                    let name = self.param("RUNTIME".into(), "runtime", path)?;
                    self.rule("allow", READ_WRITE, &[subpath(&name)], None);
                    self.rule("deny", MOVE, &[literal(&name)], Some("runtime"));
                    self.rule("deny", LINK, &[subpath(&name)], Some("runtime"));
                }
                Use::Grant(index, path, access) => {
                    let name = self.param(format!("GRANT_{index}"), "grant", path)?;
                    if path.starts_with(policy.runtime()) {
                        // The runtime's own access holds inside it (in `decide()` the runtime
                        // comes before the grants), said again over the refused patterns of a
                        // grant around this one; the grant only adds its own.
                        self.note(";; A grant inside the runtime: the runtime's access.");
                        self.rule("allow", READ_WRITE, &[subpath(&name)], None);
                        if path == policy.runtime() {
                            self.rule("deny", MOVE, &[literal(&name)], Some("runtime"));
                        }
                        self.rule("deny", LINK, &[subpath(&name)], Some("runtime"));
                    } else {
                        match access {
                            Access::ReadWrite => {
                                self.note(
                                    ";; A read-write grant: everything but moving it, and no hard link.",
                                );
                                self.rule("allow", READ_WRITE, &[subpath(&name)], None);
                                self.rule("deny", MOVE, &[literal(&name)], Some("granted"));
                                self.rule("deny", LINK, &[subpath(&name)], Some("granted"));
                            }
                            Access::ReadOnly => {
                                self.note(";; A read-only grant: reading and exec only.");
                                self.rule("deny", NOT_READ, &[subpath(&name)], Some("granted"));
                                self.rule("allow", READ, &[subpath(&name)], None);
                            }
                        }
                    }
                    let git_closed = access == Access::ReadWrite
                        && !path.starts_with(policy.runtime())
                        && !policy.git_writable().iter().any(|w| w == path);
                    if git_closed {
                        // Before the refused patterns: where both match, the later rule (the
                        // refused one) decides, as `decide()` puts refused first.
                        // One plain regex per grant, its path in front (not a `require-all`
                        // with the grant's subpath: a reading that puts `require-all` rules
                        // first would then outweigh a nested read-only grant's later deny,
                        // which `decide()` puts first there).
                        let text = path.to_str().ok_or_else(|| SeatbeltError::PathNotUtf8 {
                            what: "grant",
                            path: path.to_owned(),
                        })?;
                        let mut regex = String::from("^");
                        for c in text.strip_suffix('/').unwrap_or(text).chars() {
                            if REGEX_SPECIAL.contains(&c) {
                                regex.push('\\');
                            }
                            regex.push(c);
                        }
                        // `git_regex` is `^.*/(NAMES)`: here the grant, then any folders.
                        regex.push_str("/(.*/)?");
                        regex.push_str(&git_regex()[4..]);
                        self.check_length("grant", regex.len())?;
                        let param = format!("{GIT_PARAM}_{}", self.git_grants);
                        self.git_grants += 1;
                        self.params.insert(param.clone(), regex);
                        self.note(
                            ";; Git's own files in a read-write grant (hooks, config, .gitmodules): not written or moved.",
                        );
                        let filter = format!("(regex (param \"{param}\"))");
                        // `file-write*` covers moving (`file-write-unlink`) too; naming that
                        // operation on its own would outweigh the refused patterns' rule under
                        // a reading that puts an operation's own rules first.
                        self.rule("deny", WRITE, &[filter], Some("git"));
                    }
                    if !policy.refused().is_empty() {
                        let depth = path.components().count() - 1;
                        let regex_name = match refused_at.get(&depth) {
                            Some(name) => name.clone(),
                            None => {
                                let regex = refused_regex(depth, policy.refused());
                                self.check_length("refused patterns", regex.len())?;
                                let name = format!("REFUSED_DEPTH_{depth}");
                                self.params.insert(name.clone(), regex);
                                refused_at.insert(depth, name.clone());
                                name
                            }
                        };
                        self.rule(
                            "deny",
                            EVERY,
                            &[format!(
                                "(require-all {} (regex (param \"{regex_name}\")))",
                                subpath(&name)
                            )],
                            Some("refused"),
                        );
                    }
                }
            }
        }

        if !policy.hardened().is_empty() {
            self.line(";; Hardened: the persistence paths of the home are not written or moved.");
            let paths: Vec<PathBuf> = policy
                .hardened()
                .iter()
                .map(|h| h.path().to_owned())
                .collect();
            let hardened = self.folded_of("HARDENED", "persistence path", &paths)?;
            self.rule("deny", WRITE, &folded_subpaths(&hardened), Some("hardened"));
            self.line(
                ";; ... and none of their ancestors is moved or replaced, so nothing takes their place.",
            );
            let ancestors = self.folded_of(
                "HARDENED_ANCESTOR",
                "persistence path",
                &hardened_ancestors(policy),
            )?;
            self.rule("deny", MOVE, &folded_literals(&ancestors), Some("hardened"));
        }

        if !policy.settings().is_empty() {
            self.settings(policy)?;
        }

        self.line(
            ";; Pinned: no protected root and none of its ancestors is moved or replaced, in any case.",
        );
        let pinned = self.folded_of("PINNED", "protected root", &pinned(policy))?;
        self.rule("deny", MOVE, &folded_literals(&pinned), Some("pinned"));

        if !policy.blocked_programs().is_empty() {
            self.line(";; Blocked programs: no exec, and no read (a copy would run the same).");
            let blocked =
                self.folded_of("BLOCKED", "blocked program", policy.blocked_programs())?;
            self.rule("deny", EVERY, &folded_literals(&blocked), Some("blocked"));
        }

        self.line(
            ";; Clones of folders that hold what the chat may not read: a clone copies it all.",
        );
        self.rule("deny", CLONE, &folded_literals(&pinned), Some("closed"));
        if !policy.refused().is_empty() {
            // The grants lie in protected roots, whose other spellings the closed rule refuses:
            // their own names stay exact (one parameter each, a thousand grants). The folders
            // above them that lie outside every root are folded.
            let (inside, outside): (Vec<PathBuf>, Vec<PathBuf>) =
                grants_and_their_ancestors(policy)
                    .into_iter()
                    .partition(|folder| policy.is_protected(folder));
            let inside = self.names_for(&inside)?;
            let outside = self.folded_for(&outside)?;
            let mut filters = literals(&inside);
            filters.extend(folded_literals(&outside));
            self.rule("deny", CLONE, &filters, Some("refused"));
        }
        let folders = self.folded_for(&strict_ancestors(policy.blocked_programs()))?;
        self.rule("deny", CLONE, &folded_literals(&folders), Some("blocked"));

        if !policy.secrets().is_empty() {
            // After the grants, the runtime, the persistence paths and the settings: `decide()`
            // puts the credential places first, so nothing of this chat's reopens them.
            self.line(
                ";; Secrets: the home's credential places, to every file operation and exec, in any case.",
            );
            let secrets = self.folded_of("SECRET", "credential place", policy.secrets())?;
            self.rule("deny", EVERY, &folded_subpaths(&secrets), Some("secret"));
            self.line(";; ... and none of their ancestors is moved, replaced or cloned.");
            let ancestors = self.folded_of(
                "SECRET_ANCESTOR",
                "credential place",
                &strict_ancestors(policy.secrets()),
            )?;
            self.rule("deny", MOVE, &folded_literals(&ancestors), Some("secret"));
            self.rule("deny", CLONE, &folded_literals(&ancestors), Some("secret"));
        }

        if !policy.unix_socket_allow().is_empty() {
            self.line(";; The unix sockets this chat may connect to.");
            let sockets =
                self.params_of("SOCKET", "allowed unix socket", policy.unix_socket_allow())?;
            let filters: Vec<String> = sockets
                .iter()
                .map(|p| format!("(remote unix-socket (path-literal (param \"{p}\")))"))
                .collect();
            self.rule("allow", "network-outbound", &filters, None);
        }
        Ok(())
    }

    /// `harden`'s class (sandbox-core's `home_top.rs`): no entry directly in the home is made,
    /// written, replaced or removed, whatever its name or its case (a regular expression on the
    /// home's depth, inside the home's subpath), but the CLIs' state files (written, not moved
    /// away) and their atomic saves' temporary names. Before the protected roots and the grants,
    /// so that `decide()`'s precedence (closed and granted before hardened) comes out; the
    /// persistence paths' own rules come later and close those at the top again.
    fn home_top(&mut self, policy: &Policy) -> Result<(), SeatbeltError> {
        self.line(
            ";; Hardened, the home's top: no entry made, written, replaced or removed there.",
        );
        let depth = policy.home().components().count() - 1;
        let mut temp = String::from("^");
        for _ in 0..depth {
            temp.push_str("/[^/]+");
        }
        // A deny holds in any case (APFS folds case): the home's path folded, then one name.
        let text = policy
            .home()
            .to_str()
            .ok_or_else(|| SeatbeltError::PathNotUtf8 {
                what: "home",
                path: policy.home().to_owned(),
            })?;
        let mut top = folded_regex(text);
        top.push_str("/[^/]+$");
        self.check_length("home", top.len())?;
        self.params.insert("HOME_TOP".into(), top);
        self.rule(
            "deny",
            WRITE,
            &["(regex (param \"HOME_TOP\"))".to_owned()],
            Some("hardened"),
        );
        self.line(";; ... but the CLIs' state files, written in place or by their atomic saves.");
        let state = self.params_of("HOME_STATE", "state file", &policy.home_top_state_files())?;
        self.rule("allow", WRITE, &literals(&state), None);
        // Never removed, renamed, linked or made under its name (`decide()`'s Move): written in
        // place only (a save by rename over it is refused: docs/macos.md).
        self.rule("deny", MOVE, &literals(&state), Some("hardened"));
        if policy.os() != sandbox_core::Os::MacOs
            || sandbox_core::HOME_TOP_STATE_TEMP_MACOS.is_empty()
        {
            // `decide()` allows the temporary names on macOS only (home_top.rs), and none when
            // there are none (an empty list would make a pattern of every name at the top).
            return Ok(());
        }
        let home = self.param("HOME".into(), "home", policy.home())?;
        temp.push_str("/(");
        for (index, prefix) in sandbox_core::HOME_TOP_STATE_TEMP_MACOS.iter().enumerate() {
            if index > 0 {
                temp.push('|');
            }
            for c in prefix.chars() {
                // Not folded: a name in another case is refused, the closer side.
                if REGEX_SPECIAL.contains(&c) {
                    temp.push('\\');
                }
                temp.push(c);
            }
        }
        temp.push_str(")[^/]+$");
        self.params.insert("HOME_STATE_TEMP".into(), temp);
        self.rule(
            "allow",
            WRITE,
            &[format!(
                "(require-all {} (regex (param \"HOME_STATE_TEMP\")))",
                subpath(&home)
            )],
            None,
        );
        Ok(())
    }

    /// What the CLIs read at start and act on (`Policy::settings`, `Rule::Settings`): read by
    /// the chat, never written, made, linked, cloned over, renamed or removed, the place and
    /// everything beneath it, in any case of the name. A missing one is not created before the
    /// chat (as the Linux plans must, to have an inode to close): the rule names the path, so
    /// its creation is refused like every other write there. None of their ancestors may be
    /// moved, replaced or made when missing: a folder or a link renamed (or made) into the place
    /// of `~/.claude` would bring its own `settings.json`, and a rule on names does not follow a
    /// link. After the grants, the runtime and `harden` (so that `decide()`'s precedence,
    /// settings before runtime, granted and hardened, comes out), before pinned and blocked
    /// (which come before settings there).
    fn settings(&mut self, policy: &Policy) -> Result<(), SeatbeltError> {
        self.line(
            ";; Settings the CLIs act on: read, never written, made, linked or moved, in any case, with all beneath.",
        );
        let paths: Vec<PathBuf> = policy
            .settings()
            .iter()
            .map(|s| s.path().to_owned())
            .collect();
        let settings = self.folded_of("SETTINGS", "settings path", &paths)?;
        self.rule("deny", WRITE, &folded_subpaths(&settings), Some("settings"));
        self.line(
            ";; ... and none of their ancestors moved, replaced or made, so nothing takes their place.",
        );
        // The pinned ones are refused by the pinned rule, which comes later and wins.
        let pinned: HashSet<PathBuf> = pinned(policy).into_iter().collect();
        let ancestors: Vec<PathBuf> = strict_ancestors(&paths)
            .into_iter()
            .filter(|a| !pinned.contains(a))
            .collect();
        let ancestors = self.folded_of("SETTINGS_ANCESTOR", "settings path", &ancestors)?;
        self.rule("deny", MOVE, &folded_literals(&ancestors), Some("settings"));
        Ok(())
    }

    fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// A comment said once: before the first of a thousand grants, not before each, which
    /// would cost 60 KB of `sandbox-exec`'s arguments.
    fn note(&mut self, line: &'static str) {
        if self.noted.insert(line) {
            self.line(line);
        }
    }

    /// `(ACTION OPS FILTER... (with message "cli-sandbox: TAG"))`, a filter a line; written as
    /// several rules of the same operations and tag when one would be longer than
    /// [`MAX_EXPRESSION`] (filters of a rule match when any does, so the split says the same).
    fn rule(&mut self, action: &str, ops: &str, filters: &[String], tag: Option<&str>) {
        if filters.is_empty() {
            // A rule with no filter would apply everywhere: never written from a policy.
            return;
        }
        let head = format!("({action} {ops}");
        let tail = tag.map_or_else(
            || ")\n".to_owned(),
            |tag| format!("\n  (with message \"{TAG}{tag}\"))\n"),
        );
        let mut rule = head.clone();
        let mut in_rule = 0;
        for filter in filters {
            let grown = rule.len() + 3 + filter.len() + tail.len();
            if in_rule > 0 && grown > MAX_EXPRESSION {
                rule.push_str(&tail);
                self.text.push_str(&rule);
                rule = head.clone();
                in_rule = 0;
            }
            rule.push_str("\n  ");
            rule.push_str(filter);
            in_rule += 1;
        }
        rule.push_str(&tail);
        self.text.push_str(&rule);
    }

    fn check_length(&self, what: &'static str, bytes: usize) -> Result<(), SeatbeltError> {
        if bytes > MAX_EXPRESSION {
            return Err(SeatbeltError::ExpressionTooLong {
                what,
                bytes,
                limit: MAX_EXPRESSION,
            });
        }
        Ok(())
    }

    fn param(
        &mut self,
        name: String,
        what: &'static str,
        value: impl AsRef<Path>,
    ) -> Result<String, SeatbeltError> {
        let value = value.as_ref();
        let text = value.to_str().ok_or_else(|| SeatbeltError::PathNotUtf8 {
            what,
            path: value.to_owned(),
        })?;
        self.check_length(what, text.len())?;
        self.params.insert(name.clone(), text.to_owned());
        self.names
            .entry(text.to_owned())
            .or_insert_with(|| name.clone());
        Ok(name)
    }

    fn params_of(
        &mut self,
        prefix: &str,
        what: &'static str,
        paths: &[PathBuf],
    ) -> Result<Vec<String>, SeatbeltError> {
        paths
            .iter()
            .enumerate()
            .map(|(index, path)| self.param(format!("{prefix}_{index}"), what, path))
            .collect()
    }

    /// A parameter `PREFIX_i` for each path, holding its case-folded regex ([`folded_regex`]),
    /// for a deny that must hold whatever the case of the name.
    fn folded_of(
        &mut self,
        prefix: &str,
        what: &'static str,
        paths: &[PathBuf],
    ) -> Result<Vec<String>, SeatbeltError> {
        paths
            .iter()
            .enumerate()
            .map(|(index, path)| self.folded_param(format!("{prefix}_{index}"), what, path))
            .collect()
    }

    fn folded_param(
        &mut self,
        name: String,
        what: &'static str,
        path: &Path,
    ) -> Result<String, SeatbeltError> {
        let text = path.to_str().ok_or_else(|| SeatbeltError::PathNotUtf8 {
            what,
            path: path.to_owned(),
        })?;
        let regex = folded_regex(text);
        self.check_length(what, regex.len())?;
        self.params.insert(name.clone(), regex);
        self.folded
            .entry(text.to_owned())
            .or_insert_with(|| name.clone());
        Ok(name)
    }

    /// A folded parameter for each path: the one an earlier deny gave it, else a new `CASE_i`.
    fn folded_for(&mut self, paths: &[PathBuf]) -> Result<Vec<String>, SeatbeltError> {
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            let found = path.to_str().and_then(|text| self.folded.get(text));
            let name = match found {
                Some(name) => name.clone(),
                None => {
                    let name = format!("CASE_{}", self.extra_folded);
                    self.extra_folded += 1;
                    self.folded_param(name, "folder above a grant", path)?
                }
            };
            out.push(name);
        }
        Ok(out)
    }

    /// A parameter for each path: the one an earlier rule gave it, else a new `CLONE_i`.
    fn names_for(&mut self, paths: &[PathBuf]) -> Result<Vec<String>, SeatbeltError> {
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            let found = path.to_str().and_then(|text| self.names.get(text));
            let name = match found {
                Some(name) => name.clone(),
                None => {
                    let name = format!("CLONE_{}", self.extra);
                    self.extra += 1;
                    self.param(name, "folder above a grant", path)?
                }
            };
            out.push(name);
        }
        Ok(out)
    }
}

fn subpath(param: &str) -> String {
    format!("(subpath (param \"{param}\"))")
}

fn literal(param: &str) -> String {
    format!("(literal (param \"{param}\"))")
}

/// The path whose folded regex `param` holds ([`folded_regex`]), in any case.
fn folded_literal(param: &str) -> String {
    format!("(regex (string-append (param \"{param}\") \"/?$\"))")
}

/// The path whose folded regex `param` holds and everything beneath it, in any case.
fn folded_subpath(param: &str) -> String {
    format!("(regex (string-append (param \"{param}\") \"(/|$)\"))")
}

fn folded_literals(params: &[String]) -> Vec<String> {
    params.iter().map(|p| folded_literal(p)).collect()
}

fn folded_subpaths(params: &[String]) -> Vec<String> {
    params.iter().map(|p| folded_subpath(p)).collect()
}

/// `^` and `path` without its trailing `/`, each ASCII letter as `[aA]` and what `regex-quote`
/// escapes escaped: with `/?$` after it ([`folded_literal`]) it matches the path in any case,
/// with `(/|$)` ([`folded_subpath`]) the path and everything beneath it. `/` gives `^`. (The
/// suffix is in the text, the path in the parameter: `(string-append (param ...) "...")`, the
/// way Apple's own profiles build regexes from parameters.)
fn folded_regex(path: &str) -> String {
    let path = path.strip_suffix('/').unwrap_or(path);
    let mut out = String::with_capacity(1 + path.len() * 4);
    out.push('^');
    for c in path.chars() {
        push_folded(&mut out, c);
    }
    out
}

fn subpaths(params: &[String]) -> Vec<String> {
    params.iter().map(|p| subpath(p)).collect()
}

fn literals(params: &[String]) -> Vec<String> {
    params.iter().map(|p| literal(p)).collect()
}

/// The folders strictly above the runtime and each grant that lie in a protected root and in no
/// grant: closed, but `stat` on them must work for `realpath` and `getcwd` below them.
fn leading_folders(policy: &Policy) -> Vec<PathBuf> {
    let usable: Vec<&Path> = policy
        .writable_and_readable()
        .map(|(path, _)| path)
        .collect();
    let usable_set: HashSet<&Path> = usable.iter().copied().collect();
    // Grants share their upper folders (`workflows/`): once a folder has been looked at, so
    // have all of its ancestors. Lookups, not scans, so that a thousand grants stay linear.
    let mut seen: HashSet<&Path> = HashSet::new();
    let mut out: Vec<PathBuf> = Vec::new();
    for folder in &usable {
        for ancestor in folder.ancestors().skip(1) {
            if !seen.insert(ancestor) {
                break;
            }
            let closed = policy.is_protected(ancestor);
            let in_use = ancestor.ancestors().any(|a| usable_set.contains(a));
            if closed && !in_use {
                out.push(ancestor.to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// The ancestors of every hardened path, `/` included.
fn hardened_ancestors(policy: &Policy) -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = policy
        .hardened()
        .iter()
        .map(|h| h.path().to_owned())
        .collect();
    strict_ancestors(&paths)
}

/// Each protected root and every ancestor of one, `/` included.
fn pinned(policy: &Policy) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = policy
        .protected()
        .iter()
        .flat_map(|root| root.ancestors().map(Path::to_path_buf))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Each grant and every folder above one, `/` included: a clone of any of them would copy the
/// grant's refused entries. In the order found (the grants', then upwards), which depends on
/// the policy's shape only.
fn grants_and_their_ancestors(policy: &Policy) -> Vec<PathBuf> {
    let grants: Vec<&Path> = policy.grants().iter().map(|g| g.path.as_path()).collect();
    upwards(&grants, 0)
}

/// Every folder strictly above one of `paths`, `/` included, in the order found.
fn strict_ancestors(paths: &[PathBuf]) -> Vec<PathBuf> {
    let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    upwards(&paths, 1)
}

/// Each of `paths` (after skipping `skip` of itself and its ancestors) and the folders above it,
/// once each. A folder met again has had its ancestors taken already: lookups, not scans, so
/// that a thousand grants sharing `workflows/` stay linear.
fn upwards(paths: &[&Path], skip: usize) -> Vec<PathBuf> {
    let mut seen: HashSet<&Path> = HashSet::new();
    let mut out = Vec::new();
    for path in paths {
        for folder in path.ancestors().skip(skip) {
            if !seen.insert(folder) {
                break;
            }
            out.push(folder.to_path_buf());
        }
    }
    out
}

/// `^(/[^/]+){depth}/(D1|D2...|(F1|F2...)(S1|S2...)?)(/|$)`, written out: the entries directly
/// below any grant of `depth` components that its refused patterns name, whatever their case
/// (see the module's documentation): each folder pattern `D`, each file pattern `F` alone or
/// followed by one of SQLite's sidecar suffixes `S` (`RefusedPattern::sidecars`, the core's list).
fn refused_regex(depth: usize, patterns: &[RefusedPattern]) -> String {
    let mut out = String::from("^");
    for _ in 0..depth {
        out.push_str("/[^/]+");
    }
    let alternatives =
        |items: &mut dyn Iterator<Item = &str>| items.map(glob_regex).collect::<Vec<_>>().join("|");
    let mut names: Vec<String> = Vec::new();
    let folders = alternatives(
        &mut patterns
            .iter()
            .filter(|p| p.sidecars().is_empty())
            .map(|p| p.name()),
    );
    if !folders.is_empty() {
        names.push(folders);
    }
    let files: Vec<&RefusedPattern> = patterns
        .iter()
        .filter(|p| !p.sidecars().is_empty())
        .collect();
    if let Some(first) = files.first() {
        let bases = alternatives(&mut files.iter().map(|p| p.name()));
        let suffixes = alternatives(&mut first.sidecars().iter().copied());
        names.push(format!("({bases})({suffixes})?"));
    }
    out.push_str("/(");
    out.push_str(&names.join("|"));
    // The entry and everything beneath it, whatever the pattern (`RefusedPattern`'s rule).
    out.push_str(")(/|$)");
    out
}

/// The parameter that holds [`git_regex`].
const GIT_PARAM: &str = "GIT_OWN_FILES";

/// The names of git's own files that `sandbox_core::git_protected` refuses, as one regex over
/// the whole path (held inside a grant by the rule's `subpath`), letters folded as the refused
/// patterns' are: a `.gitmodules` anywhere (and beneath it); a `.git` entry itself; its (or a
/// bare repository's `NAME.git`'s) `hooks/` and beneath; its `config`, `config.worktree`,
/// `commondir`; the same under
/// `.git/modules/NAME/` and `.git/worktrees/NAME/` (NAME one or more names).
fn git_regex() -> String {
    let folded = |text: &str| {
        let mut out = String::new();
        for c in text.chars() {
            push_folded(&mut out, c);
        }
        out
    };
    let git = folded(".git");
    // `.git`, or a bare repository's `NAME.git`, as the folder git's files are in.
    let gitdir = format!("[^/]*{git}");
    let settings = format!(
        "({}|{}|{})",
        folded("config"),
        folded("config.worktree"),
        folded("commondir")
    );
    let hooks = folded("hooks");
    let nested = format!(
        "{gitdir}/({}|{})/.+/",
        folded("modules"),
        folded("worktrees")
    );
    format!(
        "^.*/({}(/|$)|{git}$|{gitdir}/{hooks}(/|$)|{gitdir}/{settings}$|{nested}{hooks}(/|$)|{nested}{settings}$)",
        folded(".gitmodules")
    )
}

/// A pattern's glob as a regex of one name: `*` and `?` within the name, letters in either
/// ASCII case (only ASCII folds in a name, as in `RefusedPattern::refuses_on`).
fn glob_regex(glob: &str) -> String {
    let mut out = String::new();
    for c in glob.chars() {
        match c {
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            c => push_folded(&mut out, c),
        }
    }
    out
}

/// The characters SBPL's `regex-quote` escapes with a backslash.
const REGEX_SPECIAL: &[char] = &['^', '.', '[', '$', '(', ')', '|', '*', '+', '?', '{', '\\'];

/// One character of a name as a regex that matches it in either ASCII case: a letter becomes
/// `[aA]`, what `regex-quote` escapes gets its backslash.
fn push_folded(out: &mut String, c: char) {
    if c.is_ascii_alphabetic() {
        out.push('[');
        out.push(c.to_ascii_lowercase());
        out.push(c.to_ascii_uppercase());
        out.push(']');
        return;
    }
    if REGEX_SPECIAL.contains(&c) {
        out.push('\\');
    }
    out.push(c);
}

/// How many times `needle` occurs in `haystack` (a `const fn`, for the check on [`BASE`]).
const fn occurrences(haystack: &[u8], needle: &[u8]) -> usize {
    let mut count = 0;
    let mut start = 0;
    while start + needle.len() <= haystack.len() {
        let mut i = 0;
        while i < needle.len() && haystack[start + i] == needle[i] {
            i += 1;
        }
        if i == needle.len() {
            count += 1;
        }
        start += 1;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stand_in(dir: &Path, exit: i32) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(format!("sandbox-exec-exits-{exit}"));
        std::fs::write(&path, format!("#!/bin/sh\nexit {exit}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn a_stand_in_sandbox_exec_that_exits_71_means_already_sandboxed() {
        let dir = tempfile::tempdir().unwrap();
        assert!(nested_sandbox_refused(&stand_in(dir.path(), 71)));
        assert!(!nested_sandbox_refused(&stand_in(dir.path(), 0)));
        assert!(!nested_sandbox_refused(&stand_in(dir.path(), 1)));
        assert!(!nested_sandbox_refused(&dir.path().join("missing")));
    }

    /// Every entry below `root` (links not followed), but those below `except`.
    fn listing(root: &Path, except: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_owned()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.starts_with(except) {
                    continue;
                }
                if std::fs::symlink_metadata(&path).unwrap().is_dir() {
                    stack.push(path.clone());
                }
                out.push(path);
            }
        }
        out.sort();
        out
    }

    #[test]
    fn the_runtimes_missing_settings_are_made_and_nothing_in_the_home_nor_through_a_link() {
        let scratch = tempfile::tempdir().unwrap();
        let demo = crate::demo::Demo::create(scratch.path()).unwrap();
        let ctx = crate::Context::load(&demo.settings()).unwrap();
        let policy = ctx.policy(&demo.chat, &[]).unwrap();
        ctx.ensure_runtime(&policy).unwrap();
        let runtime = policy.runtime();
        assert!(policy.settings_outside_runtime().count() > 10);
        // A link an earlier chat left at one (`.pi`), to a folder of the home.
        let elsewhere = demo.home.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, runtime.join(".pi")).unwrap();
        let home_before = listing(&demo.home, runtime);

        let made = create_runtime_settings(runtime, policy.settings()).unwrap();
        assert!(!made.is_empty());
        assert_eq!(
            std::fs::read_to_string(runtime.join(".gemini/.env")).unwrap(),
            "",
            "Gemini's .env search ends at the runtime"
        );
        assert_eq!(
            std::fs::read_to_string(runtime.join(".mcp.json")).unwrap(),
            "{\"mcpServers\":{}}"
        );
        assert!(runtime.join(".claude").is_dir() && runtime.join(".agents").is_dir());
        // Nothing made in the home (the profile refuses the names; it needs no inode), nor
        // through the link.
        assert_eq!(listing(&demo.home, runtime), home_before);
        assert!(
            policy
                .settings_outside_runtime()
                .any(|s| !s.path().exists())
        );
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        for path in &made {
            assert!(path.starts_with(runtime), "{}", path.display());
        }
        // Made once: the next launch finds them.
        assert_eq!(
            create_runtime_settings(runtime, policy.settings()).unwrap(),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn leading_folders_are_the_closed_ancestors_outside_every_grant() {
        use sandbox_core::{ChatId, Config, GrantRequest, Layout, PolicyRequest, Resolver};
        /// Every path is a folder and its own canonical form.
        struct AsIs;
        impl Resolver for AsIs {
            fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
                Ok(path.to_owned())
            }
            fn is_dir(&self, _: &Path) -> bool {
                true
            }
        }
        let root = Path::new("/Users/ann/Library/Application Support/AgentWorks");
        let wf = root.join("workspace-docs/workflows");
        let grant = |path: PathBuf, access| GrantRequest { path, access };
        let policy = Policy::build(
            &PolicyRequest {
                os: Os::MacOs,
                layout: &Layout {
                    home: "/Users/ann".into(),
                    app_folder: root.to_owned(),
                    state_root: root.to_owned(),
                    workspace_docs: root.join("workspace-docs"),
                },
                chat: &ChatId::new("chat-1").unwrap(),
                grants: &[
                    grant(wf.join("wf-1"), Access::ReadOnly),
                    grant(wf.join("wf-1/sub"), Access::ReadWrite),
                    grant(wf.join("wf-2"), Access::ReadWrite),
                ],
                config: &Config::default(),
                privileged: false,
                settings: &[],
            },
            &AsIs,
        )
        .unwrap();
        let expected: Vec<PathBuf> = [
            "",
            "state",
            "state/cli-runtimes",
            "state/cli-runtimes/v1",
            "workspace-docs",
            "workspace-docs/workflows",
        ]
        .iter()
        .map(|p| {
            if p.is_empty() {
                root.to_owned()
            } else {
                root.join(p)
            }
        })
        .collect();
        assert_eq!(leading_folders(&policy), expected);
    }

    #[test]
    fn regex_counts_the_grants_components_folds_case_and_escapes_what_regex_quote_escapes() {
        let patterns: Vec<RefusedPattern> = ["planning/", "*.db", "a?c", "x(1)"]
            .into_iter()
            .map(|p| RefusedPattern::new(p).unwrap())
            .collect();
        assert_eq!(
            refused_regex(2, &patterns),
            r"^/[^/]+/[^/]+/([pP][lL][aA][nN][nN][iI][nN][gG]|([^/]*\.[dD][bB]|[aA][^/][cC]|[xX]\(1\))(-[wW][aA][lL]|-[sS][hH][mM]|-[jJ][oO][uU][rR][nN][aA][lL]|-[wW][aA][lL]2|-[mM][jJ][^/]*)?)(/|$)"
        );
    }

    #[test]
    fn a_folded_path_regex_folds_ascii_letters_escapes_what_regex_quote_escapes_and_roots_at_slash()
    {
        assert_eq!(
            folded_regex("/Users/a.b (1)/"),
            r"^/[uU][sS][eE][rR][sS]/[aA]\.[bB] \(1\)"
        );
        // `/` folds to `^`: `/?$` after it is `/` alone, `(/|$)` every path.
        assert_eq!(folded_regex("/"), "^");
        // Other letters are kept as they are (see docs/macos.md for what is not folded).
        assert_eq!(folded_regex("/é"), "^/é");
        assert_eq!(
            folded_literal("P"),
            r#"(regex (string-append (param "P") "/?$"))"#
        );
        assert_eq!(
            folded_subpath("P"),
            r#"(regex (string-append (param "P") "(/|$)"))"#
        );
    }

    #[test]
    fn descriptors_are_marked_up_to_the_highest_open_one_and_a_margin_within_the_limit() {
        assert_eq!(descriptors_end(Some(10), 1 << 20), 11 + DESCRIPTOR_MARGIN);
        assert_eq!(descriptors_end(Some(10), 100), 100);
        // One already open above a lowered limit is marked all the same.
        assert_eq!(descriptors_end(Some(500), 100), 501);
        assert_eq!(descriptors_end(None, 4096), 4096);
    }
}
