//! Compiling a [`Policy`] into the Linux plan: the mounts of a private mount namespace, the
//! Landlock ruleset and the seccomp filter that the `cli-sandbox exec` helper applies.
//!
//! The plan is data (serializable, printable by `cli-sandbox profile --backend landlock`); it is
//! compiled against what the file system holds at launch (which protected roots exist, which
//! refused entries are present) and applied by [`super::apply`] on Linux only.

use std::path::{Path, PathBuf};

use sandbox_core::{Access, Policy};
use serde::{Deserialize, Serialize};

/// The version of the plan format; the helper refuses a plan of another version.
pub const PLAN_VERSION: u32 = 1;

/// The highest Landlock ABI this plan compiler knows how to use.
pub const NEWEST_KNOWN_ABI: u32 = 9;

/// The Landlock ABI from which pathname unix-socket connects are mediated (`ResolveUnix`).
pub const ABI_RESOLVE_UNIX: u32 = 9;
/// The Landlock ABI from which signals and abstract unix sockets are scoped.
pub const ABI_SCOPING: u32 = 6;
/// The Landlock ABI from which denials can be logged to the audit log for the exec'd program.
pub const ABI_AUDIT_LOG: u32 = 7;

/// What the kernel enforces for one guarantee: said in the type, never left to a comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "enforced", content = "note", rename_all = "lowercase")]
pub enum Enforcement {
    /// Enforced by the kernel as the policy says.
    Fully,
    /// Enforced, with the stated gap.
    Partly(String),
    /// Not enforced on this machine, and why.
    Not(String),
}

/// One line of the plan's report: a guarantee of the policy and how it is kept here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guarantee {
    pub what: String,
    pub by: String,
    #[serde(flatten)]
    pub enforcement: Enforcement,
}

/// One mount step inside the sandbox's private mount namespace, in the order applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum MountStep {
    /// Bind a folder onto itself so that it is a mount point: renaming or removing it fails
    /// with EBUSY, creating entries inside it still works. Every ancestor of a protected root.
    Pin { path: PathBuf },
    /// Cover a protected root with an empty read-only tmpfs that nobody can list, then bind
    /// this chat's folders inside it back at their own paths.
    Mask {
        root: PathBuf,
        bind_back: Vec<BindBack>,
    },
    /// Cover one entry (a refused entry inside a grant, a blocked program) with an empty,
    /// unreadable one of the same kind.
    Hide { path: PathBuf, dir: bool },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindBack {
    pub path: PathBuf,
    pub access: Access,
}

/// Landlock's part of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockPlan {
    /// The ABI the ruleset is built for; the helper refuses to run on a kernel below it.
    pub abi: u32,
    /// Access rights the ruleset handles (everything not granted by a rule is refused).
    pub handled: Vec<FsRight>,
    pub rules: Vec<LandlockRule>,
    /// `signal`, `abstract-unix-socket` (ABI >= 6).
    pub scopes: Vec<String>,
    /// Log denials of the exec'd program to the audit log (ABI >= 7).
    pub log_denials: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockRule {
    pub path: PathBuf,
    pub rights: Vec<FsRight>,
}

/// A Landlock file-system right, by its kernel name without the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsRight {
    Execute,
    WriteFile,
    ReadFile,
    ReadDir,
    RemoveDir,
    RemoveFile,
    MakeChar,
    MakeDir,
    MakeReg,
    MakeSock,
    MakeFifo,
    MakeBlock,
    MakeSym,
    Refer,
    Truncate,
    IoctlDev,
    ResolveUnix,
}

impl FsRight {
    /// The first ABI that knows the right.
    pub fn abi(self) -> u32 {
        match self {
            FsRight::Refer => 2,
            FsRight::Truncate => 3,
            FsRight::IoctlDev => 5,
            FsRight::ResolveUnix => 9,
            _ => 1,
        }
    }

    pub const ALL: [FsRight; 17] = [
        FsRight::Execute,
        FsRight::WriteFile,
        FsRight::ReadFile,
        FsRight::ReadDir,
        FsRight::RemoveDir,
        FsRight::RemoveFile,
        FsRight::MakeChar,
        FsRight::MakeDir,
        FsRight::MakeReg,
        FsRight::MakeSock,
        FsRight::MakeFifo,
        FsRight::MakeBlock,
        FsRight::MakeSym,
        FsRight::Refer,
        FsRight::Truncate,
        FsRight::IoctlDev,
        FsRight::ResolveUnix,
    ];

    fn all_up_to(abi: u32) -> Vec<FsRight> {
        FsRight::ALL
            .into_iter()
            .filter(|r| r.abi() <= abi)
            .collect()
    }
}

/// The seccomp filter's part of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeccompPlan {
    /// Refuse `socket(AF_UNIX, ...)` (`socketpair` stays allowed): the only way to keep a
    /// confined process from asking a server started outside (tmux, the session bus, a CLI's
    /// daemon) to act for it, on kernels without `ResolveUnix`.
    pub refuse_unix_socket_create: bool,
    /// Refuse the calls that could undo or escape the mounts: mount, umount2, pivot_root,
    /// setns, unshare, the new mount API, and clone with namespace flags.
    pub refuse_namespace_and_mount_calls: bool,
    /// Refuse `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`: pushing keystrokes into the terminal
    /// would run them in the shell outside once the CLI exits.
    pub refuse_terminal_injection: bool,
    /// Refuse the kernel keyring calls (keys are shared with processes outside).
    pub refuse_keyring: bool,
}

/// Everything the helper does, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinuxPlan {
    pub version: u32,
    pub chat: String,
    /// The program's working folder: the chat's runtime.
    pub workdir: PathBuf,
    /// Folders created before confinement (the runtime; refused folders in read-write grants,
    /// so that they cannot be created later outside the mask).
    pub create_dirs: Vec<PathBuf>,
    /// `Some` when namespaces are used: user, mount and PID namespace, fresh `/proc` and `/dev`.
    pub namespaces: Option<NamespacePlan>,
    pub landlock: LandlockPlan,
    pub seccomp: SeccompPlan,
    /// What is enforced and what is not, in words.
    pub guarantees: Vec<Guarantee>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespacePlan {
    pub mounts: Vec<MountStep>,
    /// A fresh `/dev` with only the harmless devices and the terminal's.
    pub minimal_dev: bool,
    /// A PID namespace with its own `/proc`: outside processes are invisible, and every process
    /// of the chat ends when the program exits.
    pub pid_namespace: bool,
}

/// What compiling needs to know about the file system at launch.
pub trait LaunchDisk {
    fn exists(&self, path: &Path) -> bool;
    /// `Some(is_dir)` for an entry that is a real file or folder (not a symlink).
    fn kind(&self, path: &Path) -> Option<EntryKind>;
    /// The entries directly inside a folder with their kind, or `None` when it cannot be listed.
    fn entries(&self, dir: &Path) -> Option<Vec<(String, EntryKind)>>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

/// What the machine offers, as far as the plan is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    pub landlock_abi: u32,
    pub namespaces: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(
        "user namespaces cannot be created here, and the fallback (Landlock alone, ancestors of each protected root frozen) is not built yet: run bridge-only"
    )]
    NoNamespaces,
    #[error("Landlock is missing (ABI 0): this machine cannot confine; run bridge-only")]
    NoLandlock,
}

/// Compiles a policy into the plan the helper applies.
pub fn compile(
    policy: &Policy,
    kernel: Kernel,
    disk: &dyn LaunchDisk,
) -> Result<LinuxPlan, PlanError> {
    if kernel.landlock_abi == 0 {
        return Err(PlanError::NoLandlock);
    }
    if !kernel.namespaces {
        return Err(PlanError::NoNamespaces);
    }
    let abi = kernel.landlock_abi.min(NEWEST_KNOWN_ABI);
    let mut guarantees = Vec::new();
    let mut create_dirs = vec![policy.runtime.clone()];

    // Protected roots: mask the outermost existing ones; a root inside another is hidden with it.
    let mut roots: Vec<&PathBuf> = policy.protected.iter().collect();
    roots.sort_by_key(|r| r.components().count());
    let mut outermost: Vec<&PathBuf> = Vec::new();
    for root in roots {
        if outermost.iter().any(|o| root.starts_with(o)) {
            continue;
        }
        if !disk.exists(root) {
            guarantees.push(Guarantee {
                what: format!("protected root {} closed", root.display()),
                by: "nothing to mask".into(),
                enforcement: Enforcement::Partly(
                    "it does not exist at launch; a folder created there during the chat is the chat's own".into(),
                ),
            });
            continue;
        }
        outermost.push(root);
    }

    let mut pins: Vec<PathBuf> = Vec::new();
    for root in &outermost {
        for ancestor in root.ancestors().skip(1) {
            if ancestor != Path::new("/") && !pins.iter().any(|p| p == ancestor) {
                pins.push(ancestor.to_owned());
            }
        }
    }
    pins.sort_by_key(|p| p.components().count());

    let mut mounts: Vec<MountStep> = pins
        .iter()
        .map(|p| MountStep::Pin { path: p.clone() })
        .collect();
    for root in &outermost {
        let mut bind_back: Vec<BindBack> = policy
            .writable_and_readable()
            .filter(|g| g.path.starts_with(root))
            .map(|g| BindBack {
                path: g.path,
                access: g.access,
            })
            .collect();
        // Outer folders first, so that a read-write folder inside a read-only grant lands on top.
        bind_back.sort_by_cached_key(|b| b.path.components().count());
        mounts.push(MountStep::Mask {
            root: (*root).clone(),
            bind_back,
        });
        guarantees.push(Guarantee {
            what: format!(
                "protected root {} closed (read, write, listing) except this chat's folders",
                root.display()
            ),
            by: "mount namespace: empty read-only tmpfs, grants bound back".into(),
            enforcement: Enforcement::Fully,
        });
    }
    if !pins.is_empty() {
        guarantees.push(Guarantee {
            what: "protected roots and their ancestors cannot be renamed or removed".into(),
            by: "each is a mount point in the sandbox (EBUSY)".into(),
            enforcement: Enforcement::Fully,
        });
    }

    // Refused entries inside grants (not the runtime).
    let mut glob_gap = false;
    for grant in &policy.grants {
        // One listing answers every pattern (a `stat` per entry would double the system calls
        // of a thousand grants); a folder that cannot be listed is asked by name.
        let entries = disk.entries(&grant.path);
        for pattern in &policy.refused {
            if pattern.is_dir() && !pattern.is_glob() {
                let path = grant.path.join(pattern.name());
                let kind = match &entries {
                    Some(list) => list
                        .iter()
                        .find(|(name, _)| name == pattern.name())
                        .map(|(_, kind)| *kind),
                    None => disk.kind(&path),
                };
                match kind {
                    Some(EntryKind::Dir) => mounts.push(MountStep::Hide { path, dir: true }),
                    None if grant.access == Access::ReadWrite => {
                        create_dirs.push(path.clone());
                        mounts.push(MountStep::Hide { path, dir: true });
                    }
                    _ => {}
                }
                continue;
            }
            glob_gap |= grant.access == Access::ReadWrite;
            let matching = entries
                .iter()
                .flatten()
                .filter(|(name, _)| pattern.matches_name(name));
            for (name, kind) in matching {
                let path = grant.path.join(name);
                match kind {
                    EntryKind::Dir => mounts.push(MountStep::Hide { path, dir: true }),
                    EntryKind::File if !pattern.is_dir() => {
                        mounts.push(MountStep::Hide { path, dir: false })
                    }
                    _ => {}
                }
            }
        }
    }
    if !policy.grants.is_empty() {
        guarantees.push(Guarantee {
            what: "refused entries inside grants (planning/, the raw database) closed".into(),
            by: "mount namespace: each covered by an empty unreadable entry; folder patterns created empty first".into(),
            enforcement: if glob_gap {
                Enforcement::Partly(
                    "a file matching a wildcard pattern (*.db) that the chat creates itself during the chat is not covered: it holds only what the chat wrote".into(),
                )
            } else {
                Enforcement::Fully
            },
        });
    }

    let mut hidden_programs = 0;
    for program in &policy.blocked_programs {
        if disk.kind(program) == Some(EntryKind::File) {
            mounts.push(MountStep::Hide {
                path: program.clone(),
                dir: false,
            });
            hidden_programs += 1;
        }
    }
    guarantees.push(Guarantee {
        what: "blocked programs (xdg-open, gio, systemd-run, dbus-send, gdbus, busctl, configured) cannot run".into(),
        by: format!("each present one ({hidden_programs}) covered by an empty unreadable file"),
        enforcement: Enforcement::Partly(
            "a copy brought in under another name would run; the session bus it needs is closed below".into(),
        ),
    });

    let unix_allowlist = !policy.unix_socket_allow.is_empty();
    let resolve_unix = abi >= ABI_RESOLVE_UNIX;
    let mut handled = FsRight::all_up_to(abi);
    handled.sort();
    let open_rights: Vec<FsRight> = handled
        .iter()
        .copied()
        .filter(|r| {
            !matches!(
                r,
                FsRight::MakeChar | FsRight::MakeBlock | FsRight::ResolveUnix
            )
        })
        .collect();
    let mut rules = vec![LandlockRule {
        path: PathBuf::from("/"),
        rights: open_rights,
    }];
    if resolve_unix {
        for socket in &policy.unix_socket_allow {
            rules.push(LandlockRule {
                path: socket.clone(),
                rights: vec![FsRight::ResolveUnix],
            });
        }
    }
    guarantees.push(Guarantee {
        what: "mounts cannot be undone from inside; no device nodes can be made".into(),
        by: "Landlock (no mount, umount, pivot_root for a confined process; no make_char/make_block), seccomp, no capabilities".into(),
        enforcement: Enforcement::Fully,
    });

    let scopes = if abi >= ABI_SCOPING {
        vec!["signal".to_owned(), "abstract-unix-socket".to_owned()]
    } else {
        Vec::new()
    };
    guarantees.push(Guarantee {
        what: "signals and ptrace to processes outside refused; their environ unreadable".into(),
        by: if abi >= ABI_SCOPING {
            "PID namespace with its own /proc, Landlock signal scoping".into()
        } else {
            "PID namespace with its own /proc".into()
        },
        enforcement: Enforcement::Fully,
    });

    let refuse_unix_socket_create = !resolve_unix && !unix_allowlist;
    guarantees.push(Guarantee {
        what: "unix-socket servers started outside (tmux, the session bus, a CLI's daemon, docker.sock) unreachable".into(),
        by: if resolve_unix {
            "Landlock ResolveUnix (ABI 9), allowlisted sockets only".into()
        } else {
            "seccomp refuses socket(AF_UNIX); abstract sockets also scoped by Landlock".into()
        },
        enforcement: if resolve_unix || !unix_allowlist {
            Enforcement::Fully
        } else {
            Enforcement::Not(format!(
                "an allowlist is configured and this kernel (Landlock ABI {abi}) cannot allow single sockets: every unix socket is reachable"
            ))
        },
    });
    guarantees.push(Guarantee {
        what: "keystrokes cannot be pushed into the terminal (TIOCSTI)".into(),
        by: "seccomp".into(),
        enforcement: Enforcement::Fully,
    });

    Ok(LinuxPlan {
        version: PLAN_VERSION,
        chat: policy.chat.to_string(),
        workdir: policy.runtime.clone(),
        create_dirs,
        namespaces: Some(NamespacePlan {
            mounts,
            minimal_dev: true,
            pid_namespace: true,
        }),
        landlock: LandlockPlan {
            abi,
            handled,
            rules,
            scopes,
            log_denials: abi >= ABI_AUDIT_LOG,
        },
        seccomp: SeccompPlan {
            refuse_unix_socket_create,
            refuse_namespace_and_mount_calls: true,
            refuse_terminal_injection: true,
            refuse_keyring: true,
        },
        guarantees,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use sandbox_core::{ChatId, DEFAULT_REFUSED, Grant, Os, RefusedPattern};

    use super::*;

    const ROOT: &str = "/home/ann/.local/share/AgentWorks";
    const WF: &str = "/home/ann/.local/share/AgentWorks/workspace-docs/workflows";

    /// A disk described by its listings: `None` for a folder that cannot be listed, whose
    /// entries still answer by name (`kinds`).
    #[derive(Default)]
    struct FakeDisk {
        listings: BTreeMap<PathBuf, Option<Vec<(String, EntryKind)>>>,
        kinds: BTreeMap<PathBuf, EntryKind>,
    }

    impl LaunchDisk for FakeDisk {
        fn exists(&self, _path: &Path) -> bool {
            true
        }
        fn kind(&self, path: &Path) -> Option<EntryKind> {
            self.kinds.get(path).copied()
        }
        fn entries(&self, dir: &Path) -> Option<Vec<(String, EntryKind)>> {
            self.listings.get(dir).cloned().flatten()
        }
    }

    fn policy(grants: &[(&str, Access)]) -> Policy {
        Policy {
            os: Os::Linux,
            chat: ChatId::new("chat-1").unwrap(),
            home: "/home/ann".into(),
            protected: vec![ROOT.into()],
            runtime: format!("{ROOT}/state/cli-runtimes/v1/chat-1").into(),
            runtimes_dir: format!("{ROOT}/state/cli-runtimes/v1").into(),
            grants: grants
                .iter()
                .map(|(name, access)| Grant {
                    path: Path::new(WF).join(name),
                    access: *access,
                })
                .collect(),
            refused: DEFAULT_REFUSED
                .iter()
                .map(|p| RefusedPattern::new(p).unwrap())
                .collect(),
            blocked_programs: Vec::new(),
            unix_socket_allow: Vec::new(),
        }
    }

    fn hidden(policy: &Policy, disk: &FakeDisk) -> Vec<(String, bool)> {
        let kernel = Kernel {
            landlock_abi: 7,
            namespaces: true,
        };
        let plan = compile(policy, kernel, disk).unwrap();
        plan.namespaces
            .unwrap()
            .mounts
            .into_iter()
            .filter_map(|m| match m {
                MountStep::Hide { path, dir } => {
                    Some((path.strip_prefix(WF).unwrap().display().to_string(), dir))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn refused_entries_are_found_in_one_listing_with_their_kinds() {
        let mut disk = FakeDisk::default();
        let entry = |name: &str, kind| (name.to_owned(), kind);
        disk.listings.insert(
            Path::new(WF).join("wf-1"),
            Some(vec![
                entry("planning", EntryKind::Dir),
                entry("raw.sqlite", EntryKind::File),
                entry("doc.md", EntryKind::File),
                entry("cache.db", EntryKind::Dir),
                entry("link.db", EntryKind::Symlink),
            ]),
        );
        let mut found = hidden(&policy(&[("wf-1", Access::ReadOnly)]), &disk);
        found.sort();
        assert_eq!(
            found,
            [
                ("wf-1/cache.db".to_owned(), true),
                ("wf-1/planning".to_owned(), true),
                ("wf-1/raw.sqlite".to_owned(), false),
            ]
        );
    }

    #[test]
    fn a_grant_that_cannot_be_listed_still_has_its_planning_folder_hidden() {
        let mut disk = FakeDisk::default();
        disk.listings.insert(Path::new(WF).join("wf-2"), None);
        disk.kinds
            .insert(Path::new(WF).join("wf-2/planning"), EntryKind::Dir);
        assert_eq!(
            hidden(&policy(&[("wf-2", Access::ReadOnly)]), &disk),
            [("wf-2/planning".to_owned(), true)]
        );
    }

    #[test]
    fn a_missing_planning_folder_in_a_read_write_grant_is_created_and_hidden() {
        let mut disk = FakeDisk::default();
        disk.listings
            .insert(Path::new(WF).join("wf-3"), Some(Vec::new()));
        let policy = policy(&[("wf-3", Access::ReadWrite)]);
        assert_eq!(hidden(&policy, &disk), [("wf-3/planning".to_owned(), true)]);
        let plan = compile(
            &policy,
            Kernel {
                landlock_abi: 7,
                namespaces: true,
            },
            &disk,
        )
        .unwrap();
        assert!(
            plan.create_dirs
                .contains(&Path::new(WF).join("wf-3/planning"))
        );
    }
}
