//! What a backend promises for one chat, in words that are the same for every backend.
//!
//! Each backend (the Linux namespace plan, the Landlock-only fallback, the Seatbelt profile)
//! reports, for every [`Promise`] it can speak to, *how* it keeps it and how far: a
//! [`Guarantee`] with an [`Enforcement`]. The promise's text is decided here, once, so that
//! `doctor`, `profile` and SECURITY.md name the same thing the same way whatever the backend.
//!
//! What it is not: it enforces nothing and knows no mechanism. `Enforcement::Fully` is a claim
//! that a test has attacked; the backends make it, the tests back it.

use serde::Serialize;

/// What the kernel enforces for one guarantee: said in the type, never left to a comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "enforced", content = "note", rename_all = "lowercase")]
pub enum Enforcement {
    /// Enforced by the kernel as the policy says, and attacked by a test.
    Fully,
    /// Enforced, with the stated gap.
    Partly(String),
    /// Not enforced on this machine, and why.
    Not(String),
}

/// One promise of the policy. [`Promise::id`] names it in JSON and in tests; [`Promise::what`]
/// says it in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Promise {
    /// A protected root is closed (read, write, listing) except this chat's folders.
    ProtectedRoot,
    /// Protected roots and their ancestors cannot be renamed or removed.
    Pinned,
    /// Refused entries inside grants stay closed, whatever their kind, also when made later.
    Refused,
    /// Blocked programs cannot run.
    Blocked,
    /// Persistence paths of the home are not written (`harden`).
    Persistence,
    /// A repository's hooks and configuration inside a read-write grant are not written
    /// (`.git/hooks`, `.git/config`, `.gitmodules`): what git outside would run.
    GitMetadata,
    /// What the coding CLIs read at start and act on (their settings, instruction files,
    /// commands, skills, extensions) is not written, created, replaced or removed by a chat.
    Settings,
    /// The credential places of the home are closed (`secrets = "closed"`).
    Secrets,
    /// Only the allowed variables of the caller's environment reach the chat
    /// (`env = "allowlist"`).
    Environment,
    /// Processes outside cannot be signalled or traced; their environment cannot be read.
    OutsideProcesses,
    /// Every process of the chat ends with it: when the program exits, when its terminal hangs
    /// up, when the launcher is told to stop.
    ChatEnds,
    /// No mount can be made or undone from inside; no device node can be made.
    Mounts,
    /// No unix socket reaches a server started outside, by any system call.
    UnixSockets,
    /// Keystrokes cannot be pushed into the terminal.
    Terminal,
    /// The kernel keyring (shared with processes outside) is out of reach.
    Keyring,
    /// Kernel tunables are read-only, whatever the uid.
    KernelTunables,
    /// Run as root, nothing outside the home, the temporary folders, the grants, the runtime and
    /// the configured writable places can be written.
    SystemReadOnly,
    /// SysV IPC and POSIX message queues of processes outside are out of reach.
    Ipc,
    /// The sandbox's own processes hold nothing the chat may take, cannot be read or traced,
    /// and take no word from it.
    Helper,
    /// Servers on the machine's loopback (TCP and UDP, `127.0.0.1` and `::1`) outside the sandbox.
    LoopbackTcp,
    /// No socket of another family reaches past the network stack (vsock, netlink to processes
    /// outside, ...).
    SocketFamilies,
    /// No file gets a setuid or setgid bit from inside.
    SetuidBits,
    /// Kernel interfaces no CLI needs and exploits use are refused.
    KernelSurface,
    /// The chat runs at most `[limits] processes` processes and threads at once.
    Processes,
    /// The chat's processes use at most `[limits] memory` together.
    Memory,
    /// The chat's `/tmp` is its own, bounded by `[limits] tmp`; the machine's is out of reach.
    PrivateTmp,
}

impl Promise {
    /// Every promise, in the order reports list them.
    pub const ALL: [Promise; 26] = [
        Promise::ProtectedRoot,
        Promise::Pinned,
        Promise::Refused,
        Promise::Blocked,
        Promise::Persistence,
        Promise::GitMetadata,
        Promise::Settings,
        Promise::Secrets,
        Promise::Environment,
        Promise::OutsideProcesses,
        Promise::ChatEnds,
        Promise::Mounts,
        Promise::UnixSockets,
        Promise::Terminal,
        Promise::Keyring,
        Promise::KernelTunables,
        Promise::SystemReadOnly,
        Promise::Ipc,
        Promise::Helper,
        Promise::LoopbackTcp,
        Promise::SocketFamilies,
        Promise::SetuidBits,
        Promise::KernelSurface,
        Promise::Processes,
        Promise::Memory,
        Promise::PrivateTmp,
    ];

    /// A stable name, kebab-case.
    pub fn id(self) -> &'static str {
        match self {
            Promise::ProtectedRoot => "protected-root",
            Promise::Pinned => "pinned",
            Promise::Refused => "refused",
            Promise::Blocked => "blocked",
            Promise::Persistence => "persistence",
            Promise::GitMetadata => "git-metadata",
            Promise::Settings => "settings",
            Promise::Secrets => "secrets",
            Promise::Environment => "environment",
            Promise::OutsideProcesses => "outside-processes",
            Promise::ChatEnds => "chat-ends",
            Promise::Mounts => "mounts",
            Promise::UnixSockets => "unix-sockets",
            Promise::Terminal => "terminal",
            Promise::Keyring => "keyring",
            Promise::KernelTunables => "kernel-tunables",
            Promise::SystemReadOnly => "system-read-only",
            Promise::Ipc => "ipc",
            Promise::Helper => "helper",
            Promise::LoopbackTcp => "loopback-tcp",
            Promise::SocketFamilies => "socket-families",
            Promise::SetuidBits => "setuid-bits",
            Promise::KernelSurface => "kernel-surface",
            Promise::Processes => "processes",
            Promise::Memory => "memory",
            Promise::PrivateTmp => "private-tmp",
        }
    }

    /// The promise in words.
    pub fn what(self) -> &'static str {
        match self {
            Promise::ProtectedRoot => {
                "protected roots closed (read, write, listing) except this chat's folders"
            }
            Promise::Pinned => "protected roots and their ancestors cannot be renamed or removed",
            Promise::Refused => {
                "refused entries inside grants (planning/, the raw database) closed, whatever their kind, with everything beneath them"
            }
            Promise::Blocked => "blocked programs (openers, the session bus's tools) cannot run",
            Promise::Persistence => {
                "persistence paths of the home not written, replaced or removed, also after a save by rename outside (`harden`): nothing at the home's top but the CLIs' state files, nor the listed places below it (shell, git, ssh, tmux, ~/bin, ~/.local/bin, ~/.cargo/bin, Python's user site-packages, npm's, cargo's, aws's, kubectl's and docker's settings, editors' and debuggers' start files, autostart entries, systemd user units)"
            }
            Promise::GitMetadata => {
                "a repository's hooks and configuration inside a read-write grant (.git/hooks, .git/config, .gitmodules) not written, replaced or removed: git run outside later would act on them"
            }
            Promise::Settings => {
                "what the coding CLIs read at start and act on (settings with hooks and MCP servers, instruction files, commands, skills, extensions; in the home and in the chat's runtime) not written, created, replaced or removed by a chat"
            }
            Promise::Secrets => {
                "the credential places of the home (~/.ssh, ~/.aws, ~/.gnupg, ~/.docker/config.json, ~/.kube, ~/.config/gh, ~/.netrc, ~/.npmrc, ~/.pypirc, the cloud CLIs' folders, ...) closed to every operation (`secrets = \"closed\"`); the CLIs' own logins stay open"
            }
            Promise::Environment => {
                "only the variables of `env_allow` and the CLI's own reach the chat (`env = \"allowlist\"`): GITHUB_TOKEN and the other credentials of the caller's environment do not"
            }
            Promise::OutsideProcesses => {
                "processes outside cannot be signalled or traced, and their environment cannot be read"
            }
            Promise::ChatEnds => {
                "no process outlives the chat: it ends when the program exits, when its terminal hangs up, or when the launcher is told to stop"
            }
            Promise::Mounts => {
                "no mount can be made or undone from inside; no device node can be made"
            }
            Promise::UnixSockets => {
                "no unix socket reaches a server started outside (tmux, the session bus, a CLI's daemon, docker.sock), by any system call"
            }
            Promise::Terminal => "keystrokes cannot be pushed into the terminal (TIOCSTI)",
            Promise::Keyring => "the kernel keyring shared with processes outside is out of reach",
            Promise::KernelTunables => {
                "kernel tunables (/proc/sys, /sys, /proc/sysrq-trigger) read-only, whatever the uid"
            }
            Promise::SystemReadOnly => {
                "run as root, nothing outside the home, the temporary folders, the grants, the runtime and the configured writable places can be written"
            }
            Promise::Ipc => "SysV IPC and POSIX message queues of processes outside out of reach",
            Promise::Helper => {
                "the sandbox's own processes hold no descriptor the chat can take, cannot be read or traced, and take no word from it"
            }
            Promise::LoopbackTcp => {
                "servers on the machine's loopback outside (TCP and UDP, 127.0.0.1 and ::1: a database, a dev server, another chat's tool server) out of reach"
            }
            Promise::SocketFamilies => {
                "no socket of another family reaches past the network stack: vsock (the hypervisor's host), netlink messages to processes outside (NETLINK_USERSOCK), Bluetooth, AF_ALG and every family not allowed"
            }
            Promise::SetuidBits => {
                "no file gets a setuid or setgid bit from inside (a root chat would leave a root program for the machine to run later)"
            }
            Promise::KernelSurface => {
                "kernel interfaces no CLI needs and kernel exploits use are refused: io_uring, bpf, perf_event_open, userfaultfd, personality flags that switch off memory protections, open_by_handle_at, pidfd_getfd"
            }
            Promise::Processes => {
                "the chat runs at most `[limits] processes` processes and threads at once, however they are started (a fork bomb stops there, the machine's other processes do not)"
            }
            Promise::Memory => {
                "the chat's processes use at most `[limits] memory` together, what they keep in tmpfs included; past it the kernel ends one and the launcher says which limit"
            }
            Promise::PrivateTmp => {
                "the chat's /tmp is its own, bounded by `[limits] tmp` (ENOSPC past it): another chat and the machine see nothing of it, and the machine's /tmp is out of reach"
            }
        }
    }
}

/// One line of a backend's report: a promise, how it is kept here, and how far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Guarantee {
    /// [`Promise::id`].
    pub id: String,
    /// [`Promise::what`], sometimes with the path it is about.
    pub what: String,
    /// The mechanism, in words.
    pub by: String,
    /// How far the kernel enforces it here.
    #[serde(flatten)]
    pub enforcement: Enforcement,
}

impl Guarantee {
    /// A guarantee of `promise`, kept `by` a mechanism, as far as `enforcement` says.
    pub fn new(promise: Promise, by: impl Into<String>, enforcement: Enforcement) -> Guarantee {
        Guarantee {
            id: promise.id().to_owned(),
            what: promise.what().to_owned(),
            by: by.into(),
            enforcement,
        }
    }

    /// The same, about one path (a protected root): the path is added to the promise's words.
    pub fn about(
        promise: Promise,
        subject: &std::path::Path,
        by: impl Into<String>,
        enforcement: Enforcement,
    ) -> Guarantee {
        let mut g = Guarantee::new(promise, by, enforcement);
        g.what = format!("{}: {}", g.what, subject.display());
        g
    }

    /// Whether this guarantee speaks to `promise`.
    pub fn is(&self, promise: Promise) -> bool {
        self.id == promise.id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_every_promise_has_words() {
        let mut ids: Vec<&str> = Promise::ALL.iter().map(|p| p.id()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), Promise::ALL.len());
        assert!(Promise::ALL.iter().all(|p| !p.what().is_empty()));
    }
}
