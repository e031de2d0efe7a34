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
//! then the ways out (Apple Events, LaunchServices, file-mount, signals and task ports outside the
//! sandbox, every unix-socket connect but DNS and syslog). The chat's rules are generated in the
//! order that makes the policy's precedence come out of "the last matching rule wins":
//!
//! 1. closed: each protected root refuses every file operation and exec;
//! 2. the metadata (not the entries) of the folders that lead to the runtime and to each grant
//!    inside a protected root, so that `realpath` and `getcwd` work there;
//! 3. the runtime and the grants, shallow before deep (a grant inside another overrides it):
//!    read-write allows everything but moving the folder itself; read-only refuses every file
//!    operation, then allows reading and exec; each grant's refused patterns right after it
//!    (a grant inside the runtime keeps the runtime's access and only adds its patterns);
//! 4. hardened (only with `harden = true`): no write to a persistence path of the home, nor to
//!    anything beneath it, also when created later; none of their ancestors renamed or unlinked;
//! 5. pinned: no protected root and none of its ancestors may be renamed or unlinked;
//! 6. blocked programs: no exec, no read (a copy would run the same), no write;
//! 7. the chat's allowed unix sockets.
//!
//! Paths enter only as `(param "NAME")` with `-DNAME=VALUE`, never spliced into the text, so a
//! path with quotes, parentheses or semicolons cannot change what the profile says: the text
//! depends only on the policy's shape (how many roots, grants and so on, and their kinds).
//!
//! # Decisions where Seatbelt is not documented
//!
//! - Rules of one operation and rules of its parent (`file-write-unlink` and `file*`) may be
//!   weighed either by position alone or specific operation first: both readings have been
//!   reported. Every rule here names the same levels (`file*` and, below it, `file-read*`,
//!   `file-write*`, `file-test-existence`, `file-map-executable`) or a level no later rule
//!   contradicts, so both readings give the same verdict; the tests check it.
//! - Refused patterns are regular expressions carried whole in a parameter: `^`, the grant's
//!   path escaped as SBPL's `regex-quote` does, `/`, then the patterns as alternatives (`*` is
//!   `[^/]*`, `?` is `[^/]`). Letters are folded (`[pP]`), because macOS volumes are
//!   case-insensitive by default and a regex compares bytes (`literal` and `subpath` are reported
//!   to follow the volume): `PLANNING/plan.json` opens `planning/plan.json`. SBPL's own
//!   `regex-quote` cannot fold. One expression per grant also holds for entries created after
//!   launch.
//! - Our operations map to Seatbelt's as: read is `file-read-data` (and `-xattr`,
//!   `file-test-existence`, `file-map-executable`); list is `file-read-data` on a folder; write
//!   is `file-write-data`, `-create` and the attribute writes; exec is `process-exec`; move is
//!   `file-write-unlink`, which `rename(2)` checks on its source (there is no
//!   `file-write-rename`), with `file-write-create` on its destination.
//!
//! See `docs/macos.md` for running the real-`sandbox-exec` tests and reading denials.

use std::collections::{BTreeMap, HashSet};
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

/// Every file operation and exec. `file*` covers them all; the levels below it are named as well
/// so that the rule holds however Seatbelt weighs a parent operation against a child's.
const EVERY: &str =
    "file* file-read* file-write* file-test-existence file-map-executable process-exec*";
/// Reading a file, listing a folder, mapping and running a program.
const READ: &str = "file-read* file-test-existence file-map-executable process-exec*";
/// Refused in a read-only grant before [`READ`] is allowed again.
const NOT_READ: &str = "file* file-write*";
/// Renaming or unlinking the path itself.
const MOVE: &str = "file-write-unlink";
/// Every write, moving included.
const WRITE: &str = "file-write*";

/// What `(with message ...)` says for a denial, so that the log names the rule (see
/// `docs/macos.md`). The names are those of [`sandbox_core::Rule::name`].
const TAG: &str = "cli-sandbox: ";

/// A Seatbelt profile for one chat: the text for `sandbox-exec -p` and the values of its
/// parameters for `-D`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeatbeltProfile {
    pub text: String,
    pub params: BTreeMap<String, String>,
}

/// A policy or a command that cannot be written as a Seatbelt invocation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeatbeltError {
    #[error(
        "the policy was built for {os:?}, not macOS: its blocked programs and its matching of \
         names are another system's; build it with `Os::MacOs` for a Seatbelt profile"
    )]
    NotForMacOs { os: Os },
    #[error(
        "the {what} `{}` is not valid UTF-8, and a Seatbelt profile names paths as text: \
         rename it or leave it out of the policy",
        path.display()
    )]
    PathNotUtf8 { what: &'static str, path: PathBuf },
    #[error(
        "argument {index} of the command, {}, is not valid UTF-8 and cannot be written as JSON: \
         pass it as text",
        arg.to_string_lossy()
    )]
    ArgNotUtf8 { index: usize, arg: OsString },
}

impl SeatbeltProfile {
    /// Compiles a policy built for macOS. Fails on a policy built for another system and on a
    /// path that is not UTF-8 (which no macOS volume holds; a policy built elsewhere might).
    pub fn for_policy(policy: &Policy) -> Result<SeatbeltProfile, SeatbeltError> {
        if policy.os != Os::MacOs {
            return Err(SeatbeltError::NotForMacOs { os: policy.os });
        }
        let (head, tail) = BASE.split_once(CHAT_RULES_MARKER).unwrap_or((BASE, ""));
        let mut out = Writer {
            text: String::from(head),
            params: BTreeMap::new(),
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
}

/// One folder the chat may use, in the order its rules are written.
enum Use<'a> {
    Runtime(&'a Path),
    Grant(usize, &'a Path, Access),
}

impl Writer {
    fn chat_rules(&mut self, policy: &Policy) -> Result<(), SeatbeltError> {
        self.line(";; This chat's rules, generated from its policy.");

        self.line(";; Closed: the protected roots, to every file operation and exec.");
        let roots = self.params_of("PROTECTED", "protected root", &policy.protected)?;
        self.rule(
            "deny",
            EVERY,
            &roots.iter().map(|p| subpath(p)).collect::<Vec<_>>(),
            Some("closed"),
        );

        let ancestors = leading_folders(policy);
        if !ancestors.is_empty() {
            self.line(
                ";; The folders that lead to the runtime and the grants: their metadata only.",
            );
            let names = self.params_of("ANCESTOR", "folder above a grant", &ancestors)?;
            self.rule(
                "allow",
                "file-read-metadata",
                &names.iter().map(|p| literal(p)).collect::<Vec<_>>(),
                None,
            );
        }

        // Shallow before deep, so that a grant inside another overrides it.
        let mut uses: Vec<Use> = policy
            .grants
            .iter()
            .enumerate()
            .map(|(index, grant)| Use::Grant(index, grant.path.as_path(), grant.access))
            .collect();
        uses.push(Use::Runtime(&policy.runtime));
        uses.sort_by_cached_key(|u| match u {
            // The runtime before a grant of the same folder: the grant's refused patterns must
            // come after the runtime's allow.
            Use::Runtime(path) => (path.components().count(), 0),
            Use::Grant(index, path, _) => (path.components().count(), index + 1),
        });
        for one in uses {
            match one {
                Use::Runtime(path) => {
                    self.line(";; The runtime: read-write, but not moved itself.");
                    let name = self.param("RUNTIME".into(), "runtime", path)?;
                    self.rule("allow", EVERY, &[subpath(&name)], None);
                    self.rule("deny", MOVE, &[literal(&name)], Some("runtime"));
                }
                Use::Grant(index, path, access) => {
                    let name = self.param(format!("GRANT_{index}"), "grant", path)?;
                    if path.starts_with(&policy.runtime) {
                        // The runtime's own access holds inside it (in `decide()` the runtime
                        // comes before the grants), said again over the refused patterns of a
                        // grant around this one; the grant only adds its own.
                        self.line(";; A grant inside the runtime: the runtime's access.");
                        self.rule("allow", EVERY, &[subpath(&name)], None);
                        if path == policy.runtime {
                            self.rule("deny", MOVE, &[literal(&name)], Some("runtime"));
                        }
                    } else {
                        match access {
                            Access::ReadWrite => {
                                self.line(";; A read-write grant: everything but moving it.");
                                self.rule("allow", EVERY, &[subpath(&name)], None);
                                self.rule("deny", MOVE, &[literal(&name)], Some("granted"));
                            }
                            Access::ReadOnly => {
                                self.line(";; A read-only grant: reading and exec only.");
                                self.rule("deny", NOT_READ, &[subpath(&name)], Some("granted"));
                                self.rule("allow", READ, &[subpath(&name)], None);
                            }
                        }
                    }
                    if !policy.refused.is_empty() {
                        let regex = refused_regex(path, &policy.refused)?;
                        let regex_name = self.param(format!("REFUSED_{index}"), "grant", &regex)?;
                        self.rule(
                            "deny",
                            EVERY,
                            &[format!("(regex (param \"{regex_name}\"))")],
                            Some("refused"),
                        );
                    }
                }
            }
        }

        if !policy.hardened.is_empty() {
            self.line(";; Hardened: the persistence paths of the home are not written or moved.");
            let paths: Vec<PathBuf> = policy.hardened.iter().map(|h| h.path.clone()).collect();
            let hardened = self.params_of("HARDENED", "persistence path", &paths)?;
            self.rule(
                "deny",
                WRITE,
                &hardened.iter().map(|p| subpath(p)).collect::<Vec<_>>(),
                Some("hardened"),
            );
            self.line(
                ";; ... and none of their ancestors is renamed, so nothing takes their place.",
            );
            let ancestors = self.params_of(
                "HARDENED_ANCESTOR",
                "persistence path",
                &hardened_ancestors(policy),
            )?;
            self.rule(
                "deny",
                MOVE,
                &ancestors.iter().map(|p| literal(p)).collect::<Vec<_>>(),
                Some("hardened"),
            );
        }

        self.line(";; Pinned: no protected root and none of its ancestors is renamed or unlinked.");
        let pinned = self.params_of("PINNED", "protected root", &pinned(policy))?;
        self.rule(
            "deny",
            MOVE,
            &pinned.iter().map(|p| literal(p)).collect::<Vec<_>>(),
            Some("pinned"),
        );

        if !policy.blocked_programs.is_empty() {
            self.line(";; Blocked programs: no exec, and no read (a copy would run the same).");
            let blocked = self.params_of("BLOCKED", "blocked program", &policy.blocked_programs)?;
            self.rule(
                "deny",
                EVERY,
                &blocked.iter().map(|p| literal(p)).collect::<Vec<_>>(),
                Some("blocked"),
            );
        }

        if !policy.unix_socket_allow.is_empty() {
            self.line(";; The unix sockets this chat may connect to.");
            let sockets =
                self.params_of("SOCKET", "allowed unix socket", &policy.unix_socket_allow)?;
            let filters: Vec<String> = sockets
                .iter()
                .map(|p| format!("(remote unix-socket (path-literal (param \"{p}\")))"))
                .collect();
            self.rule("allow", "network-outbound", &filters, None);
        }
        Ok(())
    }

    fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// `(ACTION OPS FILTER... (with message "cli-sandbox: TAG"))`, a filter a line.
    fn rule(&mut self, action: &str, ops: &str, filters: &[String], tag: Option<&str>) {
        if filters.is_empty() {
            // A rule with no filter would apply everywhere: never written from a policy.
            return;
        }
        self.text.push_str(&format!("({action} {ops}"));
        for filter in filters {
            self.text.push_str("\n  ");
            self.text.push_str(filter);
        }
        if let Some(tag) = tag {
            self.text
                .push_str(&format!("\n  (with message \"{TAG}{tag}\")"));
        }
        self.text.push_str(")\n");
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
        self.params.insert(name.clone(), text.to_owned());
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
}

fn subpath(param: &str) -> String {
    format!("(subpath (param \"{param}\"))")
}

fn literal(param: &str) -> String {
    format!("(literal (param \"{param}\"))")
}

/// The folders strictly above the runtime and each grant that lie in a protected root and in no
/// grant: closed, but `stat` on them must work for `realpath` and `getcwd` below them.
fn leading_folders(policy: &Policy) -> Vec<PathBuf> {
    let usable: Vec<PathBuf> = policy.writable_and_readable().map(|g| g.path).collect();
    let usable_set: HashSet<&Path> = usable.iter().map(PathBuf::as_path).collect();
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
    let mut out: Vec<PathBuf> = policy
        .hardened
        .iter()
        .flat_map(|h| h.path.ancestors().skip(1).map(Path::to_path_buf))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Each protected root and every ancestor of one, `/` included.
fn pinned(policy: &Policy) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = policy
        .protected
        .iter()
        .flat_map(|root| root.ancestors().map(Path::to_path_buf))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The characters SBPL's `regex-quote` escapes with a backslash.
const REGEX_SPECIAL: &[char] = &['^', '.', '[', '$', '(', ')', '|', '*', '+', '?', '{', '\\'];

/// `^GRANT/(P1|P2...)(/|$)`: the entries at the grant's top that its refused patterns name,
/// whatever their case, with everything beneath them (see the module's documentation).
fn refused_regex(grant: &Path, patterns: &[RefusedPattern]) -> Result<String, SeatbeltError> {
    let text = grant.to_str().ok_or_else(|| SeatbeltError::PathNotUtf8 {
        what: "grant",
        path: grant.to_owned(),
    })?;
    let mut out = String::from("^");
    for c in text.chars() {
        push_folded(&mut out, c, true);
    }
    out.push_str("/(");
    for (index, pattern) in patterns.iter().enumerate() {
        if index > 0 {
            out.push('|');
        }
        for c in pattern.name().chars() {
            match c {
                '*' => out.push_str("[^/]*"),
                '?' => out.push_str("[^/]"),
                // Only ASCII folds in a name, as in `RefusedPattern::refuses_on`.
                c => push_folded(&mut out, c, false),
            }
        }
    }
    // The entry and everything beneath it, whatever the pattern (`RefusedPattern`'s rule).
    out.push_str(")(/|$)");
    Ok(out)
}

/// One character of a path as a regex that matches it in either case. A letter becomes `[aA]`;
/// with `unicode`, a non-ASCII letter with a one-character other case becomes `(é|É)` (an
/// alternation, since a bracket would hold bytes, not characters).
fn push_folded(out: &mut String, c: char, unicode: bool) {
    if c.is_ascii_alphabetic() {
        out.push('[');
        out.push(c.to_ascii_lowercase());
        out.push(c.to_ascii_uppercase());
        out.push(']');
        return;
    }
    if REGEX_SPECIAL.contains(&c) {
        out.push('\\');
        out.push(c);
        return;
    }
    if unicode && !c.is_ascii() {
        let (mut lower, mut upper) = (c.to_lowercase(), c.to_uppercase());
        if let (Some(l), None, Some(u), None) =
            (lower.next(), lower.next(), upper.next(), upper.next())
            && l != u
        {
            out.push('(');
            out.push(l);
            out.push('|');
            out.push(u);
            out.push(')');
            return;
        }
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

    #[test]
    fn leading_folders_are_the_closed_ancestors_outside_every_grant() {
        use sandbox_core::{ChatId, Grant, Os};
        let root = Path::new("/Users/ann/Library/Application Support/AgentWorks");
        let wf = root.join("workspace-docs/workflows");
        let grant = |path: PathBuf, access| Grant { path, access };
        let policy = Policy {
            os: Os::MacOs,
            chat: ChatId::new("chat-1").unwrap(),
            home: "/Users/ann".into(),
            protected: vec![root.to_owned()],
            runtime: root.join("state/cli-runtimes/v1/chat-1"),
            runtimes_dir: root.join("state/cli-runtimes/v1"),
            grants: vec![
                grant(wf.join("wf-1"), Access::ReadOnly),
                grant(wf.join("wf-1/sub"), Access::ReadWrite),
                grant(wf.join("wf-2"), Access::ReadWrite),
            ],
            refused: Vec::new(),
            blocked_programs: Vec::new(),
            unix_socket_allow: Vec::new(),
            hardened: Vec::new(),
            kernel_tunables: Vec::new(),
            kernel_secrets: Vec::new(),
            system_read_only: false,
            writable: Vec::new(),
            network: Default::default(),
        };
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
    fn regex_folds_case_and_escapes_what_regex_quote_escapes() {
        let patterns: Vec<RefusedPattern> = ["planning/", "*.db", "a?c"]
            .into_iter()
            .map(|p| RefusedPattern::new(p).unwrap())
            .collect();
        let regex = refused_regex(Path::new("/U/é (x).1"), &patterns).unwrap();
        assert_eq!(
            regex,
            r"^/[uU]/(é|É) \([xX]\)\.1/([pP][lL][aA][nN][nN][iI][nN][gG]|[^/]*\.[dD][bB]|[aA][^/][cC])(/|$)"
        );
    }
}
