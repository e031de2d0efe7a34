//! A reader and evaluator for the subset of SBPL (Seatbelt's profile language) that our profiles
//! are written in, so that a generated profile can be checked where `sandbox-exec` does not run.
//!
//! It reads `(version 1)` and `(allow|deny OPERATION... FILTER... (with message "..."))` rules,
//! the guard `(if (defined? 'OPERATION) RULE)`, the filters `literal`, `subpath`, `prefix`,
//! `regex`, `require-all`, `require-any`, `require-not`, `global-name`, `global-name-regex`,
//! `(remote unix-socket [(path-literal E)])` and `(target same-sandbox)`, and the expressions
//! `"string"`, `#"regex"`, `(param "X")`, `(string-append ...)` and `(regex-quote E)`. Anything
//! else is an error: a profile that leaves this subset is not one we know how to check.
//!
//! It is not Seatbelt: it states the semantics we rely on, and the tests of this module pin them.
//!
//! # The operation tree
//!
//! Operations and their fallbacks are libsandbox's own table, as the simbple project dumped it
//! from macOS 10.12 to 10.15 (`src/platform_data/<release>/operations.c` in that repository: each
//! operation names the operation it falls back to, and whether it is a terminal node). Read from
//! the 10.15 (Catalina) dump, the same in 10.14 for every operation named here:
//!
//! - `file*` falls back to `default`; `file-read*`, `file-write*`, `file-ioctl`, `file-mount`,
//!   `file-unmount`, `file-revoke`, `file-chroot`, `file-mknod`, `file-search` and
//!   `file-issue-extension` to `file*`; `file-read-data`, `-metadata`, `-xattr` to `file-read*`;
//!   `file-write-data`, `-create`, `-unlink`, `-mode`, `-owner`, `-flags`, `-times`, `-xattr`,
//!   `-acl`, `-finderinfo` to `file-write*`; `file-mount-update` to `file-mount`;
//! - terminal, falling back to `default` and not to `file*`: `file-link`, `file-clone`,
//!   `file-test-existence`, `file-map-executable`, `file-write-setugid`, and `job-creation`; a
//!   rule on `file*` does not cover them, so a profile names them wherever it denies files;
//! - `process-exec*` (which Apple's prelude also binds as `process-exec`) and `process-fork`
//!   fall back to `process*`; `process-exec-interpreter` to `process-exec*`;
//! - `network-inbound` and `network-outbound` to `network*`, `network-bind` to `network-inbound`;
//! - `mach-lookup`, `mach-register`, `mach-task-name` and `mach-priv*` to `mach*`,
//!   `mach-priv-task-port` and `mach-priv-host-port` to `mach-priv*`;
//! - `user-preference-read` and `-write` to `user-preference*`; `sysctl-read` and `-write` to
//!   `sysctl*`;
//! - `signal`, `appleevent-send`, `lsopen`, `hid-control` and the `*` parents to `default`.
//!
//! Every operation a profile names must also be one of the 196 that libsandbox knows on macOS
//! 14.4.1 ([`SONOMA_OPERATIONS`], copied from a published harvest of that release's operation
//! names; `process-exec` is the prelude's alias of `process-exec*`): a name outside that list is
//! refused, whatever the tables above say, so that a rule cannot silently name an operation a
//! current Mac does not have. That list has no parents: the fallbacks stay those of the 10.15
//! table, and an operation new on 14.x (`file-lock`, `mach-message-send`, ...) whose parent is
//! not known is not in [`OPERATIONS`] either, so naming it is an error too.
//!
//! macOS 11 added task-port operations below the control port (`mach-task-read`,
//! `mach-task-inspect`), which no published dump covers. They exist only in
//! [`Release::MacOs11Plus`], modelled as terminal: our profile names them directly (its deny and
//! its allow on the operation itself), so no reading of their parent changes a verdict. Under
//! [`Release::MacOs10_15`] they are unknown, as on a Mac of that release, where a profile that
//! names them without `(if (defined? '...) ...)` does not compile.
//!
//! # Precedence
//!
//! Among rules on one operation with a filter the last match wins; a rule with no filter is only
//! the fallback for its operation; `(param "X")` with no value is false (a filter on false is an
//! error here); several filters in one rule match when any does. How a rule on an operation
//! weighs against a rule on its parent is not documented, and three readings have been reported,
//! all implemented ([`Model`]): our profiles must give the same verdict under each. A fourth
//! reading, also reported from measurements with `sandbox-exec`, has a `require-all` allow beat a
//! later plain deny; it is implemented as "a matching rule whose filter is a `require-all`
//! outranks every matching rule whose filter is not, whatever their order"
//! ([`Model::RequireAllFirst`]), so that a profile must not rely on a plain rule overriding a
//! `require-all` one in either direction.
//!
//! Link and clone name two paths: XNU asks the sandbox about the source and about the
//! destination of `link(2)` and `clonefile(2)`, both under the one operation. A request with
//! [`Subject::TwoPaths`] is refused when either path is.
//!
//! A rename asks `file-write-unlink` of its source and `file-write-create` of its destination
//! (there is no rename operation on files). A swap (`renamex_np(RENAME_SWAP)`, `exchangedata`)
//! moves both names at once, and which end is asked what is not documented: as a rename of `a`
//! onto `b` (unlink `a`, create `b`) or of `b` onto `a` (unlink `b`, create `a`), or both.
//! [`Profile::decide_swap`] takes the reading that allows: the swap is refused only when both
//! renames are, so a profile passes only if the end that must not move refuses both operations
//! on its own path, whichever way round Seatbelt asks.
//!
//! # Case
//!
//! APFS and HFS+ are case-insensitive by default and a path filter compares bytes: whether the
//! kernel hands Seatbelt the name as typed or as stored is not documented. [`case_variants`]
//! gives the other spellings of a path the suites ask for every refusal: a deny must hold under
//! each (an allow may stay exact, since a path it misses is refused, the safe side).

use std::collections::BTreeMap;

use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

/// A parsed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sexp {
    List(Vec<Sexp>),
    Symbol(String),
    Str(String),
    /// `#"..."`, a regex literal: no escapes.
    RegexLit(String),
    Int(i64),
    /// `'symbol`.
    Quoted(String),
}

/// Reads a profile's text into its top-level expressions.
pub fn parse(text: &str) -> Result<Vec<Sexp>, String> {
    let mut reader = Reader {
        chars: text.char_indices().peekable(),
        text,
    };
    let mut out = Vec::new();
    loop {
        reader.skip_blank()?;
        if reader.chars.peek().is_none() {
            return Ok(out);
        }
        out.push(reader.expr()?);
    }
}

struct Reader<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    text: &'a str,
}

impl Reader<'_> {
    fn skip_blank(&mut self) -> Result<(), String> {
        while let Some(&(at, c)) = self.chars.peek() {
            if c.is_whitespace() {
                self.chars.next();
            } else if c == ';' {
                while let Some(&(_, c)) = self.chars.peek() {
                    if c == '\n' {
                        break;
                    }
                    self.chars.next();
                }
            } else if self.text[at..].starts_with("#|") {
                return Err(format!("block comment at byte {at}: not in our subset"));
            } else {
                break;
            }
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Sexp, String> {
        self.skip_blank()?;
        let Some((at, c)) = self.chars.next() else {
            return Err("unexpected end of the profile".into());
        };
        match c {
            '(' => {
                let mut items = Vec::new();
                loop {
                    self.skip_blank()?;
                    match self.chars.peek() {
                        None => return Err(format!("list opened at byte {at} is never closed")),
                        Some(&(_, ')')) => {
                            self.chars.next();
                            return Ok(Sexp::List(items));
                        }
                        Some(_) => items.push(self.expr()?),
                    }
                }
            }
            ')' => Err(format!("unexpected `)` at byte {at}")),
            '"' => self.string(at).map(Sexp::Str),
            '#' => match self.chars.next() {
                Some((_, '"')) => {
                    let mut out = String::new();
                    for (_, c) in self.chars.by_ref() {
                        if c == '"' {
                            return Ok(Sexp::RegexLit(out));
                        }
                        out.push(c);
                    }
                    Err(format!("regex literal at byte {at} is never closed"))
                }
                Some((_, 't' | 'f')) => Err(format!("boolean at byte {at}: not in our subset")),
                _ => Err(format!("`#` at byte {at}: not in our subset")),
            },
            '\'' => {
                // Only a quoted symbol, as `(defined? 'file-link)` takes it.
                let mut out = String::new();
                while let Some(&(_, c)) = self.chars.peek() {
                    if c.is_whitespace() || matches!(c, '(' | ')' | '"' | ';' | '\'') {
                        break;
                    }
                    out.push(c);
                    self.chars.next();
                }
                if out.is_empty() {
                    return Err(format!(
                        "quotation at byte {at}: only a quoted symbol is in our subset"
                    ));
                }
                Ok(Sexp::Quoted(out))
            }
            '`' | ',' => Err(format!("quotation at byte {at}: not in our subset")),
            c => {
                let mut out = String::from(c);
                while let Some(&(_, c)) = self.chars.peek() {
                    if c.is_whitespace() || matches!(c, '(' | ')' | '"' | ';') {
                        break;
                    }
                    out.push(c);
                    self.chars.next();
                }
                if out.bytes().all(|b| b.is_ascii_digit()) {
                    out.parse()
                        .map(Sexp::Int)
                        .map_err(|e| format!("number at byte {at}: {e}"))
                } else {
                    Ok(Sexp::Symbol(out))
                }
            }
        }
    }

    fn string(&mut self, at: usize) -> Result<String, String> {
        let mut out = String::new();
        while let Some((_, c)) = self.chars.next() {
            match c {
                '"' => return Ok(out),
                '\\' => match self.chars.next() {
                    Some((_, c @ ('"' | '\\'))) => out.push(c),
                    Some((_, 'n')) => out.push('\n'),
                    other => {
                        return Err(format!(
                            "escape {other:?} in the string at byte {at}: not in our subset"
                        ));
                    }
                },
                c => out.push(c),
            }
        }
        Err(format!("string at byte {at} is never closed"))
    }
}

/// A macOS release, as far as the operations it knows go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// The table dumped from 10.15 (see the module's documentation).
    MacOs10_15,
    /// That table and the task-port operations of macOS 11 and later.
    MacOs11Plus,
}

impl Release {
    pub const ALL: [Release; 2] = [Release::MacOs10_15, Release::MacOs11Plus];
}

/// The operations our profiles and probes name, each with the operation it falls back to (see
/// the module's documentation for the source). A terminal operation falls back to `default`.
const OPERATIONS: &[(&str, &str)] = &[
    ("file*", "default"),
    ("file-read*", "file*"),
    ("file-read-data", "file-read*"),
    ("file-read-metadata", "file-read*"),
    ("file-read-xattr", "file-read*"),
    ("file-write*", "file*"),
    ("file-write-data", "file-write*"),
    ("file-write-create", "file-write*"),
    ("file-write-unlink", "file-write*"),
    ("file-write-mode", "file-write*"),
    ("file-write-owner", "file-write*"),
    ("file-write-flags", "file-write*"),
    ("file-write-times", "file-write*"),
    ("file-write-xattr", "file-write*"),
    ("file-write-acl", "file-write*"),
    ("file-write-finderinfo", "file-write*"),
    ("file-write-setugid", "default"),
    ("file-test-existence", "default"),
    ("file-map-executable", "default"),
    ("file-link", "default"),
    ("file-clone", "default"),
    ("file-ioctl", "file*"),
    ("file-mount", "file*"),
    ("file-mount-update", "file-mount"),
    ("file-unmount", "file*"),
    ("file-revoke", "file*"),
    ("file-chroot", "file*"),
    ("file-mknod", "file*"),
    ("file-search", "file*"),
    ("file-issue-extension", "file*"),
    ("process*", "default"),
    ("process-exec*", "process*"),
    ("process-exec-interpreter", "process-exec*"),
    ("process-fork", "process*"),
    ("network*", "default"),
    ("network-outbound", "network*"),
    ("network-inbound", "network*"),
    ("network-bind", "network-inbound"),
    ("mach*", "default"),
    ("mach-lookup", "mach*"),
    ("mach-register", "mach*"),
    ("mach-task-name", "mach*"),
    ("mach-priv*", "mach*"),
    ("mach-priv-task-port", "mach-priv*"),
    ("mach-priv-host-port", "mach-priv*"),
    ("user-preference*", "default"),
    ("user-preference-read", "user-preference*"),
    ("user-preference-write", "user-preference*"),
    ("sysctl*", "default"),
    ("sysctl-read", "sysctl*"),
    ("sysctl-write", "sysctl*"),
    ("signal", "default"),
    ("appleevent-send", "default"),
    ("lsopen", "default"),
    ("hid-control", "default"),
    ("job-creation", "default"),
];

/// Operations of [`Release::MacOs11Plus`] only (see the module's documentation).
const OPERATIONS_11: &[(&str, &str)] = &[
    ("mach-task-read", "default"),
    ("mach-task-inspect", "default"),
];

/// Names Apple's prelude binds to another operation.
const ALIASES: &[(&str, &str)] = &[("process-exec", "process-exec*")];

/// The operation names libsandbox knows on macOS 14.4.1 (Sonoma), all 196 of them, in the order
/// of its table, as harvested from that release's `libsandbox` by a published study of the
/// Seatbelt operation tables. A fact table: it says which names exist, not which falls back to
/// which (see the module's documentation).
pub const SONOMA_OPERATIONS: [&str; 196] = [
    "default",
    "appleevent-send",
    "authorization-right-obtain",
    "boot-arg-set",
    "device*",
    "device-camera",
    "device-microphone",
    "darwin-notification-post",
    "distributed-notification-post",
    "dynamic-code-generation",
    "file*",
    "file-chroot",
    "file-clone",
    "file-ioctl",
    "file-issue-extension",
    "file-link",
    "file-lock",
    "file-map-executable",
    "file-mknod",
    "file-mount",
    "file-mount-update",
    "file-read*",
    "file-read-data",
    "file-read-metadata",
    "file-read-xattr",
    "file-revoke",
    "file-search",
    "file-test-existence",
    "file-unmount",
    "file-write*",
    "file-write-acl",
    "file-write-create",
    "file-write-data",
    "file-write-finderinfo",
    "file-write-flags",
    "file-write-mode",
    "file-write-owner",
    "file-write-setugid",
    "file-write-times",
    "file-write-unlink",
    "file-write-xattr",
    "fs-quota*",
    "fs-quota-get",
    "fs-quota-on",
    "fs-quota-off",
    "fs-quota-set*",
    "fs-quota-set-limits",
    "fs-quota-set-usage",
    "fs-quota-stat",
    "fs-quota-sync",
    "fs-rename",
    "fs-snapshot*",
    "fs-snapshot-create",
    "fs-snapshot-delete",
    "fs-snapshot-mount",
    "fs-snapshot-revert",
    "generic-issue-extension",
    "qtn-user",
    "hid-control",
    "iokit*",
    "iokit-get-properties",
    "iokit-issue-extension",
    "iokit-open*",
    "iokit-open-user-client",
    "iokit-open-service",
    "iokit-set-properties",
    "ipc*",
    "ipc-posix*",
    "ipc-posix-issue-extension",
    "ipc-posix-sem*",
    "ipc-posix-sem-create",
    "ipc-posix-sem-open",
    "ipc-posix-sem-post",
    "ipc-posix-sem-unlink",
    "ipc-posix-sem-wait",
    "ipc-posix-shm*",
    "ipc-posix-shm-read-data",
    "ipc-posix-shm-write*",
    "ipc-posix-shm-write-create",
    "ipc-posix-shm-write-data",
    "ipc-posix-shm-write-unlink",
    "ipc-sysv*",
    "ipc-sysv-msg",
    "ipc-sysv-sem",
    "ipc-sysv-shm",
    "job-creation",
    "lsopen",
    "mach*",
    "mach-bootstrap",
    "mach-cross-domain-lookup",
    "mach-derive-port",
    "mach-host*",
    "mach-host-exception-port-set",
    "mach-host-special-port-set",
    "mach-issue-extension",
    "mach-kernel-endpoint",
    "mach-lookup",
    "mach-priv*",
    "mach-priv-host-port",
    "mach-priv-task-port",
    "mach-register",
    "mach-task*",
    "mach-task-inspect",
    "mach-task-name",
    "mach-task-read",
    "mach-task-special-port*",
    "mach-task-special-port-get",
    "mach-task-special-port-set",
    "necp-client-open",
    "network*",
    "network-inbound",
    "network-bind",
    "network-outbound",
    "nvram*",
    "nvram-delete",
    "nvram-get",
    "nvram-set",
    "opendirectory-user-modify",
    "process*",
    "process-codesigning",
    "process-exec*",
    "process-exec-interpreter",
    "process-fork",
    "process-info*",
    "process-info-codesignature",
    "process-info-dirtycontrol",
    "process-info-ledger",
    "process-info-listpids",
    "process-info-rusage",
    "process-info-pidinfo",
    "process-info-pidfdinfo",
    "process-info-pidfileportinfo",
    "process-info-setcontrol",
    "process-legacy-codesigning*",
    "process-legacy-codesigning-blob-get",
    "process-legacy-codesigning-cdhash-get",
    "process-legacy-codesigning-entitlements-blob-get",
    "process-legacy-codesigning-entitlements-der-blob-get",
    "process-legacy-codesigning-identity-get",
    "process-legacy-codesigning-status*",
    "process-legacy-codesigning-status-get",
    "process-legacy-codesigning-status-set",
    "process-legacy-codesigning-teamid-get",
    "process-legacy-codesigning-text-offset-get",
    "pseudo-tty",
    "signal",
    "socket-ioctl",
    "socket-option*",
    "socket-option-get",
    "socket-option-set",
    "syscall*",
    "syscall-unix",
    "syscall-mach",
    "syscall-mig",
    "sysctl*",
    "sysctl-read",
    "sysctl-write",
    "system*",
    "system-acct",
    "system-audit",
    "system-automount",
    "system-debug",
    "system-fcntl",
    "system-fsctl",
    "system-info",
    "system-kas-info",
    "system-kext*",
    "system-kext-load",
    "system-kext-unload",
    "system-kext-query",
    "system-mac*",
    "system-mac-label",
    "system-mac-syscall",
    "system-memorystatus-control",
    "system-necp-client-action",
    "system-nfssvc",
    "system-package-check",
    "system-privilege",
    "system-reboot",
    "system-sched",
    "system-set-time",
    "system-socket",
    "system-suspend-resume",
    "system-swap",
    "user-preference*",
    "user-preference-read",
    "managed-preference-read",
    "user-preference-write",
    "storage-class-map",
    "process-exec-update-label",
    "default-message-filter",
    "iokit-async-external-method",
    "iokit-external-method",
    "iokit-external-trap",
    "mach-message-send",
    "xpc-message-send",
];

/// Whether macOS 14.4.1 knows `name` (an alias counts as the operation it names).
pub fn sonoma_knows(name: &str) -> bool {
    let name = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, op)| op);
    SONOMA_OPERATIONS.contains(&name)
}

fn table(release: Release) -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    let later: &[(&str, &str)] = match release {
        Release::MacOs10_15 => &[],
        Release::MacOs11Plus => OPERATIONS_11,
    };
    OPERATIONS.iter().chain(later)
}

fn known_operation(release: Release, name: &str) -> Option<&'static str> {
    if name == "default" {
        return Some("default");
    }
    let name = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, op)| op);
    table(release)
        .find(|(op, _)| *op == name)
        .map(|(op, _)| *op)
}

/// `op`, its fallback, ..., `default`.
fn chain(release: Release, op: &str) -> Result<Vec<&'static str>, String> {
    let first = known_operation(release, op)
        .ok_or_else(|| format!("unknown operation `{op}` (on {release:?})"))?;
    let mut out = vec![first];
    while let Some(&(_, parent)) = table(release).find(|(o, _)| Some(o) == out.last()) {
        out.push(parent);
    }
    Ok(out)
}

/// Whether one of two operations covers the other.
fn overlap(release: Release, a: &str, b: &str) -> bool {
    chain(release, a).is_ok_and(|c| c.contains(&b))
        || chain(release, b).is_ok_and(|c| c.contains(&a))
}

/// What a request is about.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    /// A file operation on a path, as the kernel names it (absolute, canonical).
    Path(&'a [u8]),
    /// A Mach service looked up by name.
    Global(&'a str),
    /// A connect to a unix socket at a path.
    UnixSocket(&'a [u8]),
    /// A signal or task port: whether the target is in this same sandbox.
    Process { same_sandbox: bool },
    /// `link(2)` or `clonefile(2)`: both paths are asked under the one operation.
    TwoPaths {
        source: &'a [u8],
        destination: &'a [u8],
    },
    /// A preference domain written through `cfprefsd`.
    PreferenceDomain(&'a str),
    /// An operation with nothing to filter on (`appleevent-send`, `lsopen`).
    Nothing,
}

impl std::fmt::Debug for Subject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match self {
            Subject::Path(p) => write!(f, "path {:?}", text(p)),
            Subject::Global(g) => write!(f, "service {g:?}"),
            Subject::UnixSocket(p) => write!(f, "unix socket {:?}", text(p)),
            Subject::Process { same_sandbox } => {
                write!(f, "process (same sandbox: {same_sandbox})")
            }
            Subject::TwoPaths {
                source,
                destination,
            } => write!(f, "paths {:?} -> {:?}", text(source), text(destination)),
            Subject::PreferenceDomain(d) => write!(f, "preference domain {d:?}"),
            Subject::Nothing => write!(f, "nothing"),
        }
    }
}

/// One question to a profile.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub op: &'a str,
    pub subject: Subject<'a>,
}

/// How a rule on an operation weighs against rules on its parents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Every rule that covers the operation counts, by position: the last filtered match wins,
    /// else the most specific unfiltered rule.
    Positional,
    /// The operation's own rules first (last filtered match, else its unfiltered rule), then its
    /// parent's, and so on up to `default`: how the compiled table reads when each operation's
    /// rules fall back to its parent's. It is also what nono measured, an unfiltered
    /// `(deny file-write-unlink)` holding against a later `(allow file-write* (subpath ...))`.
    SpecificFirst,
    /// A filtered rule on the more specific operation beats a later filtered rule on its parent
    /// (position decides between rules of the same level); the unfiltered rules count only when
    /// no filtered rule matches, the most specific first. Reported by greywall (a later
    /// `(deny file-read* ...)` does not undo an earlier `(allow file-read-data ...)` of the same
    /// path) and by nono ("more specific rules always win regardless of order").
    SpecificFiltered,
    /// [`Model::Positional`], except that a matching rule whose filter is a `require-all`
    /// outranks every matching rule whose filter is not, whatever their order: reported from
    /// measurements with `sandbox-exec` as a `require-all` allow beating a later plain deny.
    RequireAllFirst,
}

impl Model {
    pub const ALL: [Model; 4] = [
        Model::Positional,
        Model::SpecificFirst,
        Model::SpecificFiltered,
        Model::RequireAllFirst,
    ];
}

/// The answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub allowed: bool,
    /// The rule that decided, counted from 0 among the profile's rules.
    pub rule: usize,
    /// Its `(with message ...)`.
    pub message: Option<String>,
}

#[derive(Debug)]
struct Rule {
    allow: bool,
    ops: Vec<&'static str>,
    /// Any of them matches; none means the rule is a fallback.
    filters: Vec<Filter>,
    message: Option<String>,
}

#[derive(Debug)]
enum Filter {
    Path(PathMatch),
    Any(Vec<Filter>),
    All(Vec<Filter>),
    Not(Box<Filter>),
    GlobalName(String),
    GlobalNameRegex(Regex),
    /// `(remote unix-socket)`, with or without a path.
    RemoteUnix(Option<PathMatch>),
    SameSandbox,
}

#[derive(Debug)]
enum PathMatch {
    Literal(Vec<u8>),
    Subpath(Vec<u8>),
    Prefix(Vec<u8>),
    Regex(Regex),
    /// Several regexes of one rule, any of which matches.
    Set(RegexSet),
}

impl PathMatch {
    fn matches(&self, path: &[u8]) -> bool {
        match self {
            PathMatch::Literal(p) => path == p.as_slice(),
            PathMatch::Subpath(p) => {
                path.starts_with(p)
                    && (path.len() == p.len() || p.ends_with(b"/") || path[p.len()] == b'/')
            }
            PathMatch::Prefix(p) => path.starts_with(p),
            PathMatch::Regex(re) => re.is_match(path),
            PathMatch::Set(set) => set.is_match(path),
        }
    }
}

impl Filter {
    fn matches(&self, subject: Subject<'_>) -> Result<bool, String> {
        let wrong = |what: &str| Err(format!("a {what} filter asked about {subject:?}"));
        Ok(match self {
            Filter::Path(m) => match subject {
                Subject::Path(p) => m.matches(p),
                _ => return wrong("path"),
            },
            Filter::Any(all) => {
                for f in all {
                    if f.matches(subject)? {
                        return Ok(true);
                    }
                }
                false
            }
            Filter::All(all) => {
                for f in all {
                    if !f.matches(subject)? {
                        return Ok(false);
                    }
                }
                true
            }
            Filter::Not(f) => !f.matches(subject)?,
            Filter::GlobalName(n) => match subject {
                Subject::Global(g) => g == n,
                _ => return wrong("global-name"),
            },
            Filter::GlobalNameRegex(re) => match subject {
                Subject::Global(g) => re.is_match(g.as_bytes()),
                _ => return wrong("global-name-regex"),
            },
            Filter::RemoteUnix(m) => match subject {
                Subject::UnixSocket(p) => m.as_ref().is_none_or(|m| m.matches(p)),
                _ => return wrong("remote unix-socket"),
            },
            Filter::SameSandbox => match subject {
                Subject::Process { same_sandbox } => same_sandbox,
                _ => return wrong("target"),
            },
        })
    }
}

/// What a one-path request matches, before a model reads it.
struct Scan {
    /// The operation, its fallback, ..., `default`.
    chain: Vec<&'static str>,
    /// The filtered rules that match, each with the level of the most specific operation of
    /// the chain it names (0: the operation itself).
    matching: Vec<(usize, usize)>,
    /// Those of them that matched through a `require-all` filter.
    through_all: Vec<usize>,
}

/// A profile read with its parameters, ready to answer requests.
#[derive(Debug)]
pub struct Profile {
    release: Release,
    rules: Vec<Rule>,
    /// The parameters the text names, to find those given but never used.
    used_params: Vec<String>,
}

/// A top-level form with its guard read.
enum Guarded<'f> {
    Rule(&'f Sexp),
    Skipped,
}

/// An evaluated expression.
enum Value {
    Str(String),
    False,
}

impl Profile {
    /// Reads `text` with `params` (the `-D` values) as a Mac of the latest release would. Fails
    /// on anything outside our subset, on an unknown operation and on a regex we cannot vouch for.
    pub fn compile(text: &str, params: &BTreeMap<String, String>) -> Result<Profile, String> {
        Profile::compile_for(Release::MacOs11Plus, text, params)
    }

    /// [`Profile::compile`] as a Mac of `release` would: a guarded rule on an operation the
    /// release does not know is left out.
    pub fn compile_for(
        release: Release,
        text: &str,
        params: &BTreeMap<String, String>,
    ) -> Result<Profile, String> {
        let forms = parse(text)?;
        let mut forms = forms.into_iter();
        match forms.next() {
            Some(Sexp::List(v)) if v == [Sexp::Symbol("version".into()), Sexp::Int(1)] => {}
            other => {
                return Err(format!(
                    "the profile must start with (version 1), not {other:?}"
                ));
            }
        }
        let mut profile = Profile {
            release,
            rules: Vec::new(),
            used_params: Vec::new(),
        };
        for form in forms {
            let form = match profile.guard(&form)? {
                Guarded::Rule(form) => form,
                Guarded::Skipped => continue,
            };
            let rule = profile.rule(form, params)?;
            profile.rules.push(rule);
        }
        Ok(profile)
    }

    /// `(if (defined? 'OP) RULE)`: RULE when this release knows OP. An OP that no release knows
    /// is an error, since on a Mac a misspelt guard would silently leave its rule out.
    fn guard<'f>(&self, form: &'f Sexp) -> Result<Guarded<'f>, String> {
        let Sexp::List(items) = form else {
            return Ok(Guarded::Rule(form));
        };
        if items.first() != Some(&Sexp::Symbol("if".into())) {
            return Ok(Guarded::Rule(form));
        }
        let [_, Sexp::List(test), rule] = &items[..] else {
            return Err(format!(
                "only (if (defined? 'OPERATION) RULE) is in our subset: {form:?}"
            ));
        };
        let [Sexp::Symbol(defined), Sexp::Quoted(op)] = &test[..] else {
            return Err(format!(
                "only (defined? 'OPERATION) is in our subset: {test:?}"
            ));
        };
        if defined != "defined?" {
            return Err(format!(
                "only (defined? 'OPERATION) is in our subset: {test:?}"
            ));
        }
        if Release::ALL
            .iter()
            .all(|r| known_operation(*r, op).is_none())
            || !sonoma_knows(op)
        {
            return Err(format!("a guard on `{op}`, which no release knows"));
        }
        Ok(if known_operation(self.release, op).is_some() {
            Guarded::Rule(rule)
        } else {
            Guarded::Skipped
        })
    }

    /// Parameters given but never named by the text: a sign that a rule went missing.
    pub fn unused_params<'a>(&self, params: &'a BTreeMap<String, String>) -> Vec<&'a str> {
        params
            .keys()
            .filter(|k| !self.used_params.contains(k))
            .map(String::as_str)
            .collect()
    }

    fn rule(&mut self, form: &Sexp, params: &BTreeMap<String, String>) -> Result<Rule, String> {
        let Sexp::List(items) = form else {
            return Err(format!("a top-level form must be a rule, not {form:?}"));
        };
        let allow = match items.first() {
            Some(Sexp::Symbol(s)) if s == "allow" => true,
            Some(Sexp::Symbol(s)) if s == "deny" => false,
            _ => {
                return Err(format!(
                    "only allow and deny rules are in our subset: {form:?}"
                ));
            }
        };
        let mut rule = Rule {
            allow,
            ops: Vec::new(),
            filters: Vec::new(),
            message: None,
        };
        for item in &items[1..] {
            match item {
                Sexp::Symbol(op) => {
                    if !sonoma_knows(op) {
                        return Err(format!(
                            "`{op}` is not an operation of macOS 14.4.1: unknown operation"
                        ));
                    }
                    rule.ops
                        .push(known_operation(self.release, op).ok_or_else(|| {
                            format!("unknown operation `{op}` (on {:?})", self.release)
                        })?)
                }
                Sexp::List(v) if v.first() == Some(&Sexp::Symbol("with".into())) => match &v[..] {
                    [_, Sexp::Symbol(m), Sexp::Str(text)] if m == "message" => {
                        if rule.message.replace(text.clone()).is_some() {
                            return Err(format!("two messages in one rule: {form:?}"));
                        }
                    }
                    _ => {
                        return Err(format!(
                            "only (with message \"...\") is in our subset: {v:?}"
                        ));
                    }
                },
                Sexp::List(_) => rule.filters.push(self.filter(item, params)?),
                other => return Err(format!("neither an operation nor a filter: {other:?}")),
            }
        }
        if rule.ops.is_empty() {
            return Err(format!("a rule without an operation: {form:?}"));
        }
        // The regexes of one rule match when any does: asked as one set, so that a rule of
        // thousands (3,000 blocked programs) costs one pass, not thousands.
        let (regexes, mut others): (Vec<Filter>, Vec<Filter>) = rule
            .filters
            .into_iter()
            .partition(|f| matches!(f, Filter::Path(PathMatch::Regex(_))));
        if regexes.len() > 1 {
            let sources: Vec<&str> = regexes
                .iter()
                .map(|f| match f {
                    Filter::Path(PathMatch::Regex(re)) => re.as_str(),
                    _ => unreachable!("partitioned on regexes"),
                })
                .collect();
            let set = RegexSetBuilder::new(&sources)
                .unicode(false)
                .size_limit(1 << 30)
                .build()
                .map_err(|e| format!("the regexes of {form:?}: {e}"))?;
            others.push(Filter::Path(PathMatch::Set(set)));
        } else {
            others.extend(regexes);
        }
        rule.filters = others;
        Ok(rule)
    }

    fn filter(&mut self, form: &Sexp, params: &BTreeMap<String, String>) -> Result<Filter, String> {
        let Sexp::List(items) = form else {
            return Err(format!("a filter must be a list, not {form:?}"));
        };
        let (Some(Sexp::Symbol(head)), args) = (items.first(), &items[1..]) else {
            return Err(format!("a filter must start with its name: {form:?}"));
        };
        let one = |what: &str| -> Result<&Sexp, String> {
            match args {
                [one] => Ok(one),
                _ => Err(format!("({what} ...) takes one argument: {form:?}")),
            }
        };
        Ok(match head.as_str() {
            "literal" => Filter::Path(PathMatch::Literal(self.path(one(head)?, params)?)),
            "subpath" => Filter::Path(PathMatch::Subpath(self.path(one(head)?, params)?)),
            "prefix" => Filter::Path(PathMatch::Prefix(self.path(one(head)?, params)?)),
            "regex" => Filter::Path(PathMatch::Regex(self.regex(one(head)?, params)?)),
            "require-any" => Filter::Any(self.filters(args, params)?),
            "require-all" => Filter::All(self.filters(args, params)?),
            "require-not" => Filter::Not(Box::new(self.filter(one(head)?, params)?)),
            "global-name" => match one(head)? {
                Sexp::Str(name) => Filter::GlobalName(name.clone()),
                other => return Err(format!("global-name takes a string, not {other:?}")),
            },
            "global-name-regex" => Filter::GlobalNameRegex(self.regex(one(head)?, params)?),
            "remote" => match args {
                [Sexp::Symbol(kind)] if kind == "unix-socket" => Filter::RemoteUnix(None),
                [Sexp::Symbol(kind), Sexp::List(path)] if kind == "unix-socket" => {
                    let m = match &path[..] {
                        [Sexp::Symbol(h), arg] if h == "path-literal" => {
                            PathMatch::Literal(self.path(arg, params)?)
                        }
                        [Sexp::Symbol(h), arg] if h == "path-regex" => {
                            PathMatch::Regex(self.regex(arg, params)?)
                        }
                        _ => return Err(format!("unknown unix-socket filter: {path:?}")),
                    };
                    Filter::RemoteUnix(Some(m))
                }
                _ => {
                    return Err(format!(
                        "only (remote unix-socket ...) is in our subset: {form:?}"
                    ));
                }
            },
            "target" => match one(head)? {
                Sexp::Symbol(t) if t == "same-sandbox" => Filter::SameSandbox,
                other => {
                    return Err(format!(
                        "only (target same-sandbox) is in our subset: {other:?}"
                    ));
                }
            },
            other => return Err(format!("unknown filter `{other}`")),
        })
    }

    fn filters(
        &mut self,
        forms: &[Sexp],
        params: &BTreeMap<String, String>,
    ) -> Result<Vec<Filter>, String> {
        forms.iter().map(|f| self.filter(f, params)).collect()
    }

    fn path(&mut self, form: &Sexp, params: &BTreeMap<String, String>) -> Result<Vec<u8>, String> {
        match self.value(form, params)? {
            Value::Str(s) if s.starts_with('/') => Ok(s.into_bytes()),
            Value::Str(s) => Err(format!("a path filter on `{s}`, which is not absolute")),
            Value::False => Err(format!(
                "a path filter on {form:?}, which is false (a parameter without a value)"
            )),
        }
    }

    fn regex(&mut self, form: &Sexp, params: &BTreeMap<String, String>) -> Result<Regex, String> {
        let source = match form {
            Sexp::RegexLit(s) => s.clone(),
            other => match self.value(other, params)? {
                Value::Str(s) => s,
                Value::False => return Err(format!("a regex filter on {form:?}, which is false")),
            },
        };
        check_regex(&source)?;
        RegexBuilder::new(&source)
            .unicode(false)
            .build()
            .map_err(|e| format!("regex `{source}`: {e}"))
    }

    fn value(&mut self, form: &Sexp, params: &BTreeMap<String, String>) -> Result<Value, String> {
        match form {
            Sexp::Str(s) => Ok(Value::Str(s.clone())),
            Sexp::List(items) => match &items[..] {
                [Sexp::Symbol(h), Sexp::Str(name)] if h == "param" => {
                    self.used_params.push(name.clone());
                    Ok(params
                        .get(name)
                        .map_or(Value::False, |v| Value::Str(v.clone())))
                }
                [Sexp::Symbol(h), parts @ ..] if h == "string-append" => {
                    let mut out = String::new();
                    for part in parts {
                        match self.value(part, params)? {
                            Value::Str(s) => out.push_str(&s),
                            Value::False => {
                                return Err(format!("string-append of false in {form:?}"));
                            }
                        }
                    }
                    Ok(Value::Str(out))
                }
                [Sexp::Symbol(h), arg] if h == "regex-quote" => match self.value(arg, params)? {
                    Value::Str(s) => Ok(Value::Str(regex_quote(&s))),
                    Value::False => Err(format!("regex-quote of false in {form:?}")),
                },
                _ => Err(format!("an expression outside our subset: {form:?}")),
            },
            other => Err(format!("an expression outside our subset: {other:?}")),
        }
    }

    /// What the profile says about `request`, read the way `model` says. A request on two paths
    /// asks the source, then the destination: the first refusal decides.
    pub fn decide(&self, model: Model, request: Request<'_>) -> Result<Verdict, String> {
        if let Subject::TwoPaths {
            source,
            destination,
        } = request.subject
        {
            if !matches!(
                known_operation(self.release, request.op),
                Some("file-link" | "file-clone")
            ) {
                return Err(format!(
                    "only file-link and file-clone are asked of two paths, not {}",
                    request.op
                ));
            }
            let one = |path| {
                self.decide(
                    model,
                    Request {
                        op: request.op,
                        subject: Subject::Path(path),
                    },
                )
            };
            let first = one(source)?;
            return if first.allowed {
                one(destination)
            } else {
                Ok(first)
            };
        }
        let scan = self.scan(request)?;
        self.pick(model, &scan, request)
    }

    /// The rules that match a one-path request, read once for every model.
    fn scan(&self, request: Request<'_>) -> Result<Scan, String> {
        let chain = chain(self.release, request.op)?;
        // The filtered rules that match, each with the level of the most specific operation of
        // the chain it names (0: the operation itself).
        let mut matching: Vec<(usize, usize)> = Vec::new();
        // Those of them that matched through a `require-all` filter.
        let mut through_all: Vec<usize> = Vec::new();
        for (index, rule) in self.rules.iter().enumerate() {
            if rule.filters.is_empty() {
                continue;
            }
            let Some(level) = chain.iter().position(|level| rule.ops.contains(level)) else {
                continue;
            };
            let mut hit = false;
            let mut all = false;
            for filter in &rule.filters {
                if filter.matches(request.subject)? {
                    hit = true;
                    // Matched through a `require-all` when the first filter that matches is one
                    // (our profiles never mix the two in one rule).
                    all = matches!(filter, Filter::All(_));
                    break;
                }
            }
            if hit {
                matching.push((level, index));
                if all {
                    through_all.push(index);
                }
            }
        }
        Ok(Scan {
            chain,
            matching,
            through_all,
        })
    }

    /// The rule that decides, read the way `model` says, from what [`Profile::scan`] found.
    fn pick(&self, model: Model, scan: &Scan, request: Request<'_>) -> Result<Verdict, String> {
        let Scan {
            chain,
            matching,
            through_all,
        } = scan;
        let verdict = |rule: usize| Verdict {
            allowed: self.rules[rule].allow,
            rule,
            message: self.rules[rule].message.clone(),
        };
        let fallback = |level: &str| {
            self.rules
                .iter()
                .rposition(|r| r.filters.is_empty() && r.ops.contains(&level))
        };
        let last_at = |level: usize| {
            matching
                .iter()
                .filter(|(l, _)| *l == level)
                .map(|(_, i)| *i)
                .max()
        };
        let decided = match model {
            Model::Positional => matching
                .iter()
                .map(|(_, i)| *i)
                .max()
                .or_else(|| chain.iter().find_map(|level| fallback(level))),
            Model::SpecificFirst => {
                (0..chain.len()).find_map(|level| last_at(level).or_else(|| fallback(chain[level])))
            }
            Model::SpecificFiltered => (0..chain.len())
                .find_map(last_at)
                .or_else(|| chain.iter().find_map(|level| fallback(level))),
            Model::RequireAllFirst => through_all
                .iter()
                .copied()
                .max()
                .or_else(|| matching.iter().map(|(_, i)| *i).max())
                .or_else(|| chain.iter().find_map(|level| fallback(level))),
        };
        decided.map(verdict).ok_or_else(|| {
            format!(
                "no rule decides {request:?}: the profile has no (allow default) or (deny default)"
            )
        })
    }

    /// The same request under every model; an error when they disagree on the verdict or on
    /// the message.
    pub fn decide_all(&self, request: Request<'_>) -> Result<Verdict, String> {
        let what = || format!("{request:?}");
        if let Subject::TwoPaths { .. } = request.subject {
            return every_model(what, |model| self.decide(model, request));
        }
        let scan = self.scan(request)?;
        every_model(what, |model| self.pick(model, &scan, request))
    }

    /// A swap of the names `a` and `b` (`renamex_np(RENAME_SWAP)`), read as a rename of `a`
    /// onto `b` and as one of `b` onto `a` (see the module's documentation): refused only when
    /// both are, by the refusal of the first; else allowed.
    pub fn decide_swap(&self, model: Model, a: &[u8], b: &[u8]) -> Result<Verdict, String> {
        self.swap_with(a, b, |request| self.decide(model, request))
    }

    /// The two renames of a swap, each asked with `decide`: unlink of the source, then create
    /// of the destination, the first refusal ending it.
    fn swap_with(
        &self,
        a: &[u8],
        b: &[u8],
        decide: impl Fn(Request<'_>) -> Result<Verdict, String>,
    ) -> Result<Verdict, String> {
        let rename = |source: &[u8], destination: &[u8]| -> Result<Verdict, String> {
            let unlink = decide(Request {
                op: "file-write-unlink",
                subject: Subject::Path(source),
            })?;
            if !unlink.allowed {
                return Ok(unlink);
            }
            decide(Request {
                op: "file-write-create",
                subject: Subject::Path(destination),
            })
        };
        let forth = rename(a, b)?;
        if forth.allowed {
            return Ok(forth);
        }
        let back = rename(b, a)?;
        Ok(if back.allowed { back } else { forth })
    }

    /// [`Profile::decide_swap`] under every model, each of its requests read once for all of
    /// them (an error when they disagree on one).
    pub fn decide_swap_all(&self, a: &[u8], b: &[u8]) -> Result<Verdict, String> {
        self.swap_with(a, b, |request| self.decide_all(request))
    }

    /// What the brief forbids though Seatbelt would accept it: a rule without a filter after a
    /// filtered rule on the same operation (it would read as an override and is only a
    /// fallback), and two fallbacks for one operation.
    pub fn lint(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            if !rule.filters.is_empty() {
                continue;
            }
            for (j, earlier) in self.rules[..i].iter().enumerate() {
                let shared = rule
                    .ops
                    .iter()
                    .any(|a| earlier.ops.iter().any(|b| overlap(self.release, a, b)));
                let same = rule.ops.iter().any(|a| earlier.ops.contains(a));
                if !earlier.filters.is_empty() && shared {
                    out.push(format!(
                        "rule {i} ({:?}) has no filter but follows filtered rule {j} ({:?})",
                        rule.ops, earlier.ops
                    ));
                } else if earlier.filters.is_empty() && same {
                    out.push(format!(
                        "rules {j} and {i} are both the fallback for {:?}",
                        rule.ops
                    ));
                }
            }
        }
        out
    }
}

/// `decide` under every model; an error naming `what` when they disagree on the verdict or on
/// the message.
fn every_model(
    what: impl Fn() -> String,
    decide: impl Fn(Model) -> Result<Verdict, String>,
) -> Result<Verdict, String> {
    let first = decide(Model::Positional)?;
    for model in &Model::ALL[1..] {
        let other = decide(*model)?;
        if (first.allowed, &first.message) != (other.allowed, &other.message) {
            return Err(format!(
                "the readings of the profile disagree on {}: {:?} says {first:?}, \
                 {model:?} says {other:?}",
                what(),
                Model::Positional
            ));
        }
    }
    Ok(first)
}

/// `path` with the case of every ASCII letter swapped: the one other spelling the suites ask of
/// every refusal (a folded rule matches every spelling or none; [`case_variants`] has more).
/// `None` when the path has no letter.
pub fn other_case(path: &[u8]) -> Option<Vec<u8>> {
    case_variants(path).pop()
}

/// The other spellings of `path` that name the same file on a case-insensitive volume: all in
/// lower case, all in upper case, every ASCII letter's case swapped (those that differ from
/// `path`). Only ASCII letters: see `docs/macos.md` for what is not folded.
pub fn case_variants(path: &[u8]) -> Vec<Vec<u8>> {
    let swapped: Vec<u8> = path
        .iter()
        .map(|b| {
            if b.is_ascii_lowercase() {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            }
        })
        .collect();
    let mut out: Vec<Vec<u8>> = Vec::new();
    for variant in [
        path.to_ascii_lowercase(),
        path.to_ascii_uppercase(),
        swapped,
    ] {
        if variant != path && !out.contains(&variant) {
            out.push(variant);
        }
    }
    out
}

/// SBPL's `regex-quote`: a backslash before each of `^.[$()|*+?{\`.
pub fn regex_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "^.[$()|*+?{\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The regex syntax we vouch for (what Apple's own profiles use): anchored at the start with
/// `^`; literals; `\` before punctuation only; `.`; bracket expressions without escapes or
/// POSIX classes; `*`, `+`, `?`; groups and `|`; `$`. No `(?...)`, no `{n,m}`, no `\d`.
pub fn check_regex(source: &str) -> Result<(), String> {
    let fail = |why: &str| Err(format!("regex `{source}`: {why}"));
    if !source.starts_with('^') {
        return fail("not anchored with `^`");
    }
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e) if e.is_ascii_punctuation() => {}
                _ => return fail("a backslash must escape punctuation"),
            },
            '(' if chars.peek() == Some(&'?') => return fail("`(?` syntax"),
            '{' => return fail("an interval `{...}`"),
            '[' => {
                if matches!(chars.peek(), Some(':' | '=' | '.')) {
                    return fail("a POSIX class in brackets");
                }
                let mut first = true;
                loop {
                    match chars.next() {
                        None => return fail("an unclosed bracket"),
                        Some('\\') => return fail("a backslash in brackets"),
                        Some(']') if !first => break,
                        Some('[') => return fail("a `[` in brackets"),
                        Some('^') if first => continue,
                        Some(_) => {}
                    }
                    first = false;
                }
            }
            _ => {}
        }
    }
    Ok(())
}
