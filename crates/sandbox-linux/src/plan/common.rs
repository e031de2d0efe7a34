//! What the namespace plan's compiler ([`super::compile`]) and the Landlock-only fallback's
//! (`frozen.rs`) share: the kernel they compile for, the disk they look at, their error, the
//! rights, scopes, seccomp rules and guarantees that do not depend on mounts. Depends on the
//! format ([`super::format`]) and on `seccomp.rs` (the filter's program), never on either
//! compiler, so that neither imports the other's loop.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sandbox_core::{Policy, Promise};

use super::format::*;

impl SeccompPlan {
    /// Every refusal on; unix sockets and datagram pairs refused when `unix_by_seccomp` (below
    /// Landlock ABI 9 without an allowlist, where nothing else keeps them in).
    pub(crate) fn new(unix_by_seccomp: bool) -> SeccompPlan {
        // The families the CLIs and their tools were measured to need (node, git, python,
        // curl, `getaddrinfo`, `os.networkInterfaces()`, `ss`).
        let mut socket_families = Vec::new();
        if !unix_by_seccomp {
            socket_families.push(SocketFamily::Unix);
        }
        socket_families.extend([
            SocketFamily::Inet,
            SocketFamily::Inet6,
            SocketFamily::NetlinkRoute,
            SocketFamily::NetlinkSockDiag,
        ]);
        SeccompPlan {
            socket_families,
            unix_pairs_stream_only: unix_by_seccomp,
            refuse_io_uring: true,
            refuse_namespace_and_mount_calls: true,
            refuse_terminal_injection: true,
            refuse_keyring: true,
            refuse_setuid_bits: true,
            refuse_exploit_surface: true,
            refuse_shared_ipc: false,
            refuse_others_limits: true,
            refuse_metadata_changes: false,
            refuse_others_scheduling: false,
            refuse_other_abis: true,
        }
    }
}

/// What the Landlock-only plan says of `[limits]`, and the configured limits it cannot hold.
pub(crate) fn limits_without_namespaces(policy: &Policy) -> Result<Vec<Guarantee>, PlanError> {
    let limits = policy.limits();
    if limits.memory.is_some() {
        return Err(PlanError::LimitNeedsNamespaces("memory"));
    }
    if limits.processes_configured {
        return Err(PlanError::LimitNeedsNamespaces("processes"));
    }
    Ok(vec![
        Guarantee::new(
            Promise::Processes,
            "nothing",
            Enforcement::Not(
                "without a user namespace RLIMIT_NPROC would count every process of the uid on the machine, and the launcher becomes the program (no helper stays to remove a cgroup)".into(),
            ),
        ),
        Guarantee::new(
            Promise::Memory,
            "nothing",
            Enforcement::Not("no `[limits] memory` configured (one is refused without namespaces)".into()),
        ),
        Guarantee::new(
            Promise::PrivateTmp,
            "nothing: /tmp is the machine's",
            Enforcement::Not(
                "no mount namespace: /tmp, /var/tmp and /dev/shm are the machine's, shared with every chat and the person's programs (closing them would break every CLI)".into(),
            ),
        ),
    ])
}

/// What the plan says of the machine's loopback.
pub(crate) fn loopback_guarantee(network: Option<&NetworkPlan>) -> Guarantee {
    match network {
        None => Guarantee::new(
            Promise::LoopbackTcp,
            "nothing: the network is shared with the machine",
            Enforcement::Not(
                "open by the owner's decision (everything the person can use): a server on 127.0.0.1 outside acts for a chat as for anyone; `[policy] network = \"isolated\"` gives each chat a network of its own".into(),
            ),
        ),
        Some(net) => Guarantee::new(
            Promise::LoopbackTcp,
            format!(
                "a network namespace of the chat's own (its own loopback), outbound only through pasta: no gateway mapped to the machine's loopback, no port forwarded either way; the chat holds no capability in it, so it cannot hand pasta a packet of its own making (this pasta forwards one addressed to 127.0.0.1); DNS to {} is relayed to the machine's first resolver (UDP port 53 only), which may itself listen on the loopback",
                net.dns
            ),
            Enforcement::Fully,
        ),
    }
}

/// What compiling needs to know about the file system at launch.
pub trait LaunchDisk {
    /// Whether anything is at `path` (a dangling symlink included).
    fn exists(&self, path: &Path) -> bool;
    /// `Some(is_dir)` for an entry that is a real file or folder (not a symlink).
    fn kind(&self, path: &Path) -> Option<EntryKind>;
    /// The names directly inside a folder (empty when it cannot be read), as bytes: a name
    /// that is not UTF-8 is still a name.
    fn entries(&self, dir: &Path) -> Vec<(OsString, EntryKind)>;
    /// [`LaunchDisk::entries`] of each folder, in the same order. One call for all the grants,
    /// so that the real disk can list them side by side: at a thousand grants the listings are
    /// most of the plan's time (`BENCHMARKS.md`).
    fn entries_of(&self, dirs: &[&Path]) -> Vec<Vec<(OsString, EntryKind)>> {
        dirs.iter().map(|dir| self.entries(dir)).collect()
    }
    /// What a path is once symlinks are followed: `Some(Dir)` or `Some(File)`, `None` when it
    /// dangles or is neither a regular file, a folder nor a character device.
    fn target_kind(&self, path: &Path) -> Option<EntryKind>;
    /// The first bytes (at most `limit`) of a regular file, read without following a symlink
    /// at its own name; `None` when it cannot be read (a fake disk reads nothing).
    fn read_start(&self, path: &Path, limit: usize) -> Option<Vec<u8>> {
        let _ = (path, limit);
        None
    }
    /// The canonical form of `path`, `None` when it does not resolve.
    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        let _ = path;
        None
    }
    /// A regular file's device and inode, when it has more than one name (a hard link), not
    /// following a symlink at its own name; `None` otherwise (a fake disk has no inodes).
    fn linked_file_id(&self, path: &Path) -> Option<(u64, u64)> {
        let _ = path;
        None
    }
}

/// What the machine offers, as far as the plan is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    /// The Landlock ABI (0: none).
    pub landlock_abi: u32,
    /// Whether an unprivileged process may create user namespaces.
    pub namespaces: bool,
    /// Whether this user can open `/dev/fuse` (the guard over grants, issue 25): without it the
    /// namespace plan closes refused entries with stand-ins only, and says what that leaves open.
    pub fuse: bool,
}

/// Why a policy cannot be compiled into a plan for this machine.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// No Landlock: nothing here can confine.
    #[error("Landlock is missing (ABI 0): this machine cannot confine; run bridge-only")]
    NoLandlock,
    /// A filter this build cannot compile (an architecture it has no filter for): a fault of
    /// cli-sandbox, not of the request.
    #[error("the seccomp filter cannot be built: {0}")]
    Seccomp(String),
    /// `network = "isolated"` on a machine without user namespaces.
    #[error(
        "`[policy] network = \"isolated\"` needs a network namespace of the chat's own, and this machine cannot create user namespaces (Landlock alone confines here): the launch is refused rather than run on the machine's network. Allow user namespaces (sysctl user.max_user_namespaces above 0, kernel.unprivileged_userns_clone=1, or Ubuntu's kernel.apparmor_restrict_unprivileged_userns=0), or set network = \"shared\""
    )]
    IsolatedNeedsNamespaces,
    /// `network = "allowlist"` without user namespaces.
    #[error(
        "`[policy] network = \"allowlist\"` needs a network namespace of the chat's own (the egress proxy must be its only route out), and this machine cannot create user namespaces (Landlock alone confines here): the launch is refused rather than run on the machine's network. Allow user namespaces (sysctl user.max_user_namespaces above 0, kernel.unprivileged_userns_clone=1, or Ubuntu's kernel.apparmor_restrict_unprivileged_userns=0), or set network = \"shared\""
    )]
    AllowlistNeedsNamespaces,
    /// A configured limit on a machine without user namespaces.
    #[error(
        "`[limits] {0}` needs the namespace plan (a user namespace and a helper that stays with the chat), and this machine cannot create user namespaces (Landlock alone confines here): the launch is refused rather than run unbounded. Allow user namespaces (sysctl user.max_user_namespaces above 0, kernel.unprivileged_userns_clone=1, or Ubuntu's kernel.apparmor_restrict_unprivileged_userns=0), or take `{0}` out of `[limits]`"
    )]
    LimitNeedsNamespaces(&'static str),
    /// `network = "isolated"` without pasta installed.
    #[error(
        "`[policy] network = \"isolated\"` needs pasta, and {} is missing: apt-get install passt (Debian, Ubuntu), dnf install passt (Fedora), or set network = \"shared\"",
        path.display()
    )]
    NoPasta {
        /// Where pasta was looked for.
        path: PathBuf,
    },
    /// `network = "isolated"` for a root chat that may write where pasta lies.
    #[error(
        "`[policy] network = \"isolated\"`: a root chat may write {} (`[policy] writable`), so a chat could replace pasta, which the launcher runs outside the sandbox for the next chat: take that place out of `writable`",
        path.display()
    )]
    PastaWritable {
        /// The writable place that holds pasta.
        path: PathBuf,
    },
}

impl PlanError {
    /// A request this machine or configuration cannot honour (exit status 2), as opposed to a
    /// machine that cannot confine at all.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, PlanError::NoLandlock | PlanError::Seccomp(_))
    }
}

/// The plan's filter compiled, for both kinds of plan. Elsewhere than on Linux (a plan printed
/// by `profile`, never applied there) it is empty, and a helper refuses a plan without one.
pub fn seccomp_program(seccomp: &SeccompPlan) -> Result<SeccompProgram, PlanError> {
    #[cfg(target_os = "linux")]
    return crate::seccomp::program(seccomp).map_err(PlanError::Seccomp);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = seccomp;
        Ok(SeccompProgram::default())
    }
}

/// The protected roots to close: the outermost ones that exist (a root inside another is closed
/// with it). One that does not exist yet is reported, not closed.
pub(crate) fn outermost_existing_roots(
    policy: &Policy,
    disk: &dyn LaunchDisk,
    guarantees: &mut Vec<Guarantee>,
) -> Vec<PathBuf> {
    let mut roots: Vec<&PathBuf> = policy.protected().iter().collect();
    roots.sort_by_key(|r| r.components().count());
    let mut outermost: Vec<PathBuf> = Vec::new();
    for root in roots {
        if outermost.iter().any(|o| root.starts_with(o)) {
            continue;
        }
        if !disk.exists(root) {
            guarantees.push(Guarantee::about(
                Promise::ProtectedRoot,
                root,
                "nothing to close",
                Enforcement::Partly(
                    "it does not exist at launch; a folder created there during the chat is the chat's own".into(),
                ),
            ));
            continue;
        }
        outermost.push(root.clone());
    }
    outermost
}

/// What the namespace plan and the frozen fallback share: the rights handled, the scopes, the
/// seccomp filter and the guarantees that do not depend on mounts.
pub(crate) struct Common {
    pub abi: u32,
    pub handled: Vec<FsRight>,
    /// Everything a path in the open part of the machine may do (no device nodes).
    pub open_rights: Vec<FsRight>,
    pub scopes: Vec<String>,
    /// `ResolveUnix` for the allowlisted sockets, on kernels that have it.
    pub unix_rules: Vec<LandlockRule>,
    pub seccomp: SeccompPlan,
    pub guarantees: Vec<Guarantee>,
}

impl Common {
    pub fn new(policy: &Policy, abi: u32) -> Common {
        let unix_allowlist = !policy.unix_socket_allow().is_empty();
        let resolve_unix = abi >= ABI_RESOLVE_UNIX;
        // Below ABI 9 without an allowlist, seccomp is what keeps unix sockets in.
        let unix_by_seccomp = !resolve_unix && !unix_allowlist;
        let handled = FsRight::all_up_to(abi);
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
        let unix_rules = if resolve_unix {
            policy
                .unix_socket_allow()
                .iter()
                .map(|socket| LandlockRule {
                    path: socket.clone(),
                    rights: vec![FsRight::ResolveUnix],
                })
                .collect()
        } else {
            Vec::new()
        };
        let scopes = if abi >= ABI_SCOPING {
            vec!["signal".to_owned(), "abstract-unix-socket".to_owned()]
        } else {
            Vec::new()
        };
        let guarantees = vec![
            Guarantee::new(
                Promise::Mounts,
                "Landlock (no mount, umount, pivot_root for a confined process; no make_char/make_block), seccomp, no capabilities",
                Enforcement::Fully,
            ),
            unix_sockets_guarantee(abi, unix_allowlist),
            Guarantee::new(Promise::Terminal, "seccomp", Enforcement::Fully),
            Guarantee::new(
                Promise::Keyring,
                "seccomp refuses keyctl, add_key, request_key",
                Enforcement::Fully,
            ),
            socket_families_guarantee(),
            setuid_bits_guarantee(),
            kernel_surface_guarantee(),
        ];
        Common {
            abi,
            handled,
            open_rights,
            scopes,
            unix_rules,
            seccomp: SeccompPlan::new(unix_by_seccomp),
            guarantees,
        }
    }

    pub fn landlock(&self, rules: Vec<LandlockRule>) -> LandlockPlan {
        LandlockPlan {
            abi: self.abi,
            handled: self.handled.clone(),
            rules,
            scopes: self.scopes.clone(),
            log_denials: self.abi >= ABI_AUDIT_LOG,
        }
    }
}

/// What keeps unix-socket servers started outside out of reach, on this kernel with this
/// configuration. Below ABI 9 it is seccomp, which has to close every system call that creates,
/// re-points or smuggles a unix socket (see `seccomp.rs`, tested by `tests/ways_out.rs`).
fn unix_sockets_guarantee(abi: u32, unix_allowlist: bool) -> Guarantee {
    let descriptors = "a standard descriptor that could reach a socket elsewhere (a unix datagram socket, an unconnected one, another family) refused at start, while a stream socket the launcher connected and gave as stdin, stdout or stderr reaches its peer";
    if abi >= ABI_RESOLVE_UNIX {
        return Guarantee::new(
            Promise::UnixSockets,
            format!(
                "Landlock ResolveUnix (ABI 9) on every pathname socket outside but the allowlisted ones, whatever the call; abstract sockets scoped; seccomp refuses io_uring; {descriptors}"
            ),
            Enforcement::Fully,
        );
    }
    if unix_allowlist {
        return Guarantee::new(
            Promise::UnixSockets,
            "nothing: an allowlist is configured",
            Enforcement::Not(format!(
                "an allowlist is configured and this kernel (Landlock ABI {abi}) cannot allow single sockets: every unix socket is reachable"
            )),
        );
    }
    let scoped = if abi >= ABI_SCOPING {
        "; abstract sockets also scoped by Landlock"
    } else {
        ""
    };
    Guarantee::new(
        Promise::UnixSockets,
        format!(
            "seccomp: socket(AF_UNIX) refused, socketpair(AF_UNIX) only for stream and seqpacket pairs (they cannot be re-pointed), io_uring refused, only the native system call ABI; {descriptors}{scoped}"
        ),
        Enforcement::Fully,
    )
}

/// A guarantee the promise list does not name yet: said here in full, with its own id.
fn socket_families_guarantee() -> Guarantee {
    Guarantee::new(
        Promise::SocketFamilies,
        "seccomp: socket() creates only inet, inet6, netlink route and sock_diag sockets (and unix ones where the unix-socket line says so), socketpair() only unix pairs; io_uring refused; only the native system call ABI",
        Enforcement::Fully,
    )
}

fn setuid_bits_guarantee() -> Guarantee {
    Guarantee::new(
        Promise::SetuidBits,
        "seccomp: chmod, fchmod, fchmodat, fchmodat2, and open, openat, creat, mknod, mknodat creating a file with such a mode, refused; openat2 and io_uring, whose modes a filter cannot read, refused with ENOSYS; writing to such a file clears the bit (no capabilities)",
        Enforcement::Fully,
    )
}

fn kernel_surface_guarantee() -> Guarantee {
    Guarantee::new(
        Promise::KernelSurface,
        "seccomp (ENOSYS where a library falls back on it, EPERM otherwise)",
        Enforcement::Partly(
            "a list of the interfaces most used against the kernel, not an allowlist of system calls: every other call stays open to a kernel bug".into(),
        ),
    )
}
