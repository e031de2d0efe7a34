//! The Linux plan's file format: the serialized [`LinuxPlan`] and its steps, and the plan file
//! itself, written by the launcher ([`write_plan`]) and read back by the helper ([`read_plan`]).
//! Data and its file only: nothing here decides what a plan holds (that is [`super::compile()`],
//! with what the two compilers share in `plan/common.rs`), so that the helper's modules (`apply`,
//! `mounts`, `landlock`, `seccomp`...) depend on this module and on nothing of the compiler.

use std::path::{Path, PathBuf};

use sandbox_core::{Access, Layout};
pub use sandbox_core::{Enforcement, EntryKind, Guarantee};
use serde::{Deserialize, Serialize};

/// The version of the plan format; the helper refuses a plan of another version.
pub const PLAN_VERSION: u32 = 5;

/// The highest Landlock ABI this plan compiler knows how to use.
pub const NEWEST_KNOWN_ABI: u32 = 9;

/// The Landlock ABI from which pathname unix-socket connects are mediated (`ResolveUnix`).
pub const ABI_RESOLVE_UNIX: u32 = 9;
/// The Landlock ABI from which signals and abstract unix sockets are scoped: the platform
/// decision's number, decided once in `sandbox-core`.
pub const ABI_SCOPING: u32 = sandbox_core::platform::LANDLOCK_ABI_SCOPING;
/// The Landlock ABI from which denials can be logged to the audit log for the exec'd program.
pub const ABI_AUDIT_LOG: u32 = 7;

/// The devices of the machine's `/dev` that programs open by name and that reach nothing of
/// anyone else's: the namespace plan binds these into its fresh `/dev`, the Landlock-only
/// fallback grants these in the machine's own (and closes the rest of it). Block devices (which
/// hold every file of a disk, the protected roots among them), other terminals, and the devices
/// of a desktop session (camera, microphone, input) are not among them.
pub(crate) const HARMLESS_DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// One mount step inside the sandbox's private mount namespace, in the order applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum MountStep {
    /// Bind a folder onto itself so that it is a mount point: renaming or removing it fails
    /// with EBUSY, creating entries inside it still works. Every ancestor of a protected root.
    Pin {
        /// The folder.
        path: PathBuf,
    },
    /// Cover a protected root with an empty read-only tmpfs that nobody can list, then bind
    /// this chat's folders inside it back at their own paths.
    Mask {
        /// The protected root.
        root: PathBuf,
        /// The chat's grants and runtime inside it, in the order bound.
        bind_back: Vec<BindBack>,
    },
    /// Cover one entry (a refused entry inside a grant, a blocked program) with an empty,
    /// unreadable one of the same kind.
    Hide {
        /// The entry.
        path: PathBuf,
        /// A folder (covered by an empty folder), else a file (by an empty file).
        dir: bool,
    },
    /// Bind an entry of a chat's folder onto itself, writable, after the masks (pass 8): what is
    /// in it stays writable, but as a mount point it cannot be renamed or removed (EBUSY). A
    /// repository's `.git` folder in a read-write grant, so that no folder of the chat's is put
    /// in its place.
    Keep {
        /// The entry.
        path: PathBuf,
        /// A folder, else a file.
        dir: bool,
    },
    /// Bind a symlink onto itself, as the link it is (never what it points to), so that it is a
    /// mount point: renaming, removing or replacing it fails with EBUSY. A symlink of the
    /// person's on the way to a CLI's settings (`~/.codex -> dotfiles/codex`): a chat must not
    /// rename it and put a folder of its own in its place.
    PinLink {
        /// The symlink.
        path: PathBuf,
    },
    /// Bind an entry onto itself read-only (a persistence path with `harden`, a kernel tunable):
    /// it can be read, not written, and as a mount point it cannot be removed or replaced
    /// (EBUSY).
    ReadOnly {
        /// The entry.
        path: PathBuf,
        /// A folder, else a file.
        dir: bool,
    },
}

/// A folder of the chat's bound back at its own path inside a masked root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindBack {
    /// The grant or the runtime.
    pub path: PathBuf,
    /// A read-only grant's bind is made read-only.
    pub access: Access,
}

/// Landlock's part of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockPlan {
    /// The ABI the ruleset is built for; the helper refuses to run on a kernel below it.
    pub abi: u32,
    /// Access rights the ruleset handles (everything not granted by a rule is refused).
    pub handled: Vec<FsRight>,
    /// The rights granted beneath each path.
    pub rules: Vec<LandlockRule>,
    /// `signal`, `abstract-unix-socket` (ABI >= 6).
    pub scopes: Vec<String>,
    /// Log denials of the exec'd program to the audit log (ABI >= 7).
    pub log_denials: bool,
}

/// One rule of the ruleset: these rights beneath this path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockRule {
    /// The file or folder the rule holds beneath.
    pub path: PathBuf,
    /// The rights granted there, each among the ruleset's handled ones.
    pub rights: Vec<FsRight>,
}

/// A Landlock file-system right, by its kernel name without the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsRight {
    /// `EXECUTE`: run a file.
    Execute,
    /// `WRITE_FILE`: open a file for writing.
    WriteFile,
    /// `READ_FILE`: open a file for reading.
    ReadFile,
    /// `READ_DIR`: list a folder.
    ReadDir,
    /// `REMOVE_DIR`: remove an empty folder, or rename one away.
    RemoveDir,
    /// `REMOVE_FILE`: unlink a file, or rename one away.
    RemoveFile,
    /// `MAKE_CHAR`: create a character device.
    MakeChar,
    /// `MAKE_DIR`: create a folder.
    MakeDir,
    /// `MAKE_REG`: create a regular file.
    MakeReg,
    /// `MAKE_SOCK`: create a unix socket's file.
    MakeSock,
    /// `MAKE_FIFO`: create a named pipe.
    MakeFifo,
    /// `MAKE_BLOCK`: create a block device.
    MakeBlock,
    /// `MAKE_SYM`: create a symlink.
    MakeSym,
    /// `REFER` (ABI 2): link or rename a file into another folder.
    Refer,
    /// `TRUNCATE` (ABI 3): truncate a file.
    Truncate,
    /// `IOCTL_DEV` (ABI 5): ioctl on a device.
    IoctlDev,
    /// `RESOLVE_UNIX` (ABI 9): connect to a pathname unix socket.
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

    /// Every right, in the kernel's order.
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

    /// The rights that mean something on a file (the rest only on a folder).
    pub fn applies_to_files(self) -> bool {
        matches!(
            self,
            FsRight::Execute
                | FsRight::WriteFile
                | FsRight::ReadFile
                | FsRight::Truncate
                | FsRight::IoctlDev
        )
    }

    /// Every right the Landlock ABI `abi` knows.
    pub(crate) fn all_up_to(abi: u32) -> Vec<FsRight> {
        FsRight::ALL
            .into_iter()
            .filter(|r| r.abi() <= abi)
            .collect()
    }
}

/// The seccomp filter's part of the plan: which system calls the program may not make. Each
/// refusal and its reason is in `seccomp.rs`, where the filter is built; docs/linux.md has the
/// list for people.
///
/// Every field is a refusal the kernel cannot express otherwise on this machine; they stay on
/// with Landlock ABI 9 too except the two that only serve to keep unix sockets in
/// (`socket_families` without [`SocketFamily::Unix`], `unix_pairs_stream_only`), which
/// `ResolveUnix` replaces there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeccompPlan {
    /// The only families `socket()` may create (an allowlist: a family this list does not know
    /// is refused, vsock to the hypervisor's host and netlink messages to processes outside
    /// among them). `Unix` is missing below Landlock ABI 9: then seccomp is what keeps a
    /// confined process from asking a server started outside (tmux, the session bus, journald,
    /// a CLI's daemon) to act for it.
    pub socket_families: Vec<SocketFamily>,
    /// `socketpair()` only for unix stream and seqpacket pairs: a datagram pair (or a "raw"
    /// one, which the kernel makes a datagram pair) can send to any datagram socket outside,
    /// and be connected to one. Set when `socket_families` leaves out `Unix`.
    pub unix_pairs_stream_only: bool,
    /// Refuse `io_uring_setup`, `io_uring_enter` and `io_uring_register` (ENOSYS, as if the
    /// kernel had no io_uring, so that libraries fall back): a ring makes sockets, connects
    /// and opens files without the system calls this filter sees.
    pub refuse_io_uring: bool,
    /// Refuse the calls that could undo or escape the mounts: mount, umount2, pivot_root,
    /// setns, unshare, the new mount API, and clone with namespace flags.
    pub refuse_namespace_and_mount_calls: bool,
    /// Refuse `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`: pushing keystrokes into the terminal
    /// would run them in the shell outside once the CLI exits.
    pub refuse_terminal_injection: bool,
    /// Refuse the kernel keyring calls (keys are shared with processes outside).
    pub refuse_keyring: bool,
    /// Refuse giving a file the setuid or setgid bit (the chmod family, and creating a file
    /// with such a mode): a root chat would leave a root program for the machine to run later.
    pub refuse_setuid_bits: bool,
    /// Refuse what no CLI needs and kernel exploits use: `bpf`, `perf_event_open`,
    /// `userfaultfd`, `personality` flags that switch off memory protections,
    /// `open_by_handle_at`, `pidfd_getfd`.
    pub refuse_exploit_surface: bool,
    /// Refuse the x32 system calls on x86_64 (the same calls under other numbers, which a
    /// filter keyed by number would let through). The i386 calls (`int 0x80`, `socketcall`)
    /// end the process: the filter's architecture check.
    pub refuse_other_abis: bool,
    /// Refuse SysV IPC (shared memory, semaphores, message queues) and POSIX message queues
    /// (ENOSYS, as a kernel built without them): set where the chat has no IPC namespace of its
    /// own (the Landlock-only plan), where they are the machine's, shared with processes outside.
    #[serde(default)]
    pub refuse_shared_ipc: bool,
    /// Refuse `prlimit64` on another process: the chat's uid may change the resource limits of
    /// any process of that uid, so that a CPU limit of one second kills the sandbox's init
    /// (whose launch then reports that it never started) or, in the Landlock-only fallback, a
    /// process outside, which signal scoping does not see.
    #[serde(default)]
    pub refuse_others_limits: bool,
    /// Refuse changing any file's mode, owner, times, extended attributes or inode flags (the
    /// chmod, chown, utime and xattr families, `FS_IOC_SETFLAGS`, `FS_IOC_FSSETXATTR`): set for
    /// a root chat in the Landlock-only plan, where root owns the machine's files, Landlock does
    /// not govern metadata, and no mount makes the system read-only. Seccomp cannot tell one
    /// path from another, so these are refused in the chat's writable places too.
    #[serde(default)]
    pub refuse_metadata_changes: bool,
    /// Refuse the scheduling and priority calls on anything but the calling process itself:
    /// `setpriority` and `ioprio_set` other than `PRIO_PROCESS`/`IOPRIO_WHO_PROCESS` with 0, and
    /// `sched_setscheduler`, `sched_setparam`, `sched_setattr`, `sched_setaffinity` with a pid
    /// other than 0. Set where the chat has no PID namespace (the Landlock-only plan): the
    /// kernel lets a uid renice, idle, pin or deprioritise any process of that uid (or the
    /// whole uid at once), outside too, and the effect outlasts the chat; a filter cannot tell
    /// the chat's pids from others, so only the forms that name the caller pass.
    #[serde(default)]
    pub refuse_others_scheduling: bool,
}

/// A socket family (with its protocol, for netlink) that `socket()` may create inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SocketFamily {
    /// `AF_UNIX`, when Landlock's `ResolveUnix` mediates pathname connects (ABI >= 9) or an
    /// allowlist of sockets is configured (then every unix socket is reachable, and the plan
    /// says so).
    Unix,
    /// `AF_INET`: the network is open ("everything the person can use").
    Inet,
    /// `AF_INET6`, likewise.
    Inet6,
    /// `AF_NETLINK` with `NETLINK_ROUTE`: the interface and address list (`getifaddrs`,
    /// `getaddrinfo`'s address checks, node's `os.networkInterfaces()`, `ip`).
    NetlinkRoute,
    /// `AF_NETLINK` with `NETLINK_SOCK_DIAG`: the socket list `ss` reads (what `/proc/net`
    /// shows anyway).
    NetlinkSockDiag,
}

/// Everything the helper does, in order. `Deserialize`, with every type it holds: the launcher
/// writes it to the plan file and the helper reads it back ([`crate::read_plan`]). Its fields
/// are public: it is a file format, checked where it is read (its [`PLAN_VERSION`]), and a
/// private field would protect nothing that `Deserialize` builds from the file's bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinuxPlan {
    /// [`PLAN_VERSION`] when written; the helper refuses another.
    pub version: u32,
    /// The chat's id.
    pub chat: String,
    /// The program's working folder: the chat's runtime.
    pub workdir: PathBuf,
    /// Folders created before confinement (the runtime).
    pub create_dirs: Vec<PathBuf>,
    /// The folders at the top of read-write grants that a stand-in covers (`planning/`): made
    /// before confinement where missing, so that the chat cannot make them, and removed again
    /// once the chat has ended if the launch made them and they are still empty
    /// (`stand_in_dirs.rs`: no entry is left in a grant by a launch).
    #[serde(default)]
    pub stand_in_dirs: Vec<PathBuf>,
    /// Where the helper writes the record of what the kernel refused the chat, once it has
    /// ended (`denials.rs`, `docs/json.md`); `None`: no record. Set by the launcher
    /// (`step --denials FILE`, `run --denials FILE`), never by the compile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denials_record: Option<PathBuf>,
    /// Folders created in the person's home before confinement, empty, mode 0700, owned like
    /// the folder that holds them: the persistence folders (`harden`) below an open folder that
    /// do not exist yet, so that they can be bound read-only (an empty one changes nothing for
    /// the programs that read it), and the CLIs' state folders missing at the home's top, which
    /// nothing can make during a hardened chat (`sandbox_core::HOME_STATE_FOLDERS`).
    #[serde(default)]
    pub create_home_dirs: Vec<PathBuf>,
    /// Files created in the person's home before confinement, empty, mode 0600, owned like the
    /// folder that holds them: the persistence files (`harden`) whose empty form means what their
    /// absence means (`sandbox_core::PERSISTENCE_EMPTY_IS_ABSENT`), so that they can be bound
    /// read-only and none can be made during the chat. Empty since the folders that hold them
    /// are frozen by Landlock (harden.rs), which closes a missing one without making it; kept
    /// for a persistence file whose folder is not frozen.
    #[serde(default)]
    pub create_home_files: Vec<PathBuf>,
    /// Files created before confinement holding their neutral content (mode 0600, owned like the
    /// folder that holds them): the acted-on settings files (`sandbox_core::Policy::settings`)
    /// that do not exist yet, so that they can be bound read-only and none can be made during the
    /// chat. Their missing folders go into [`LinuxPlan::create_home_dirs`].
    #[serde(default)]
    pub create_settings_files: Vec<SettingsFile>,
    /// `Some` when namespaces are used: user, mount and PID namespace, fresh `/proc` and `/dev`.
    pub namespaces: Option<NamespacePlan>,
    /// `[limits]`: the chat's processes and memory (its `/tmp` is the namespace plan's).
    pub limits: LimitsPlan,
    /// The Landlock ruleset, restricted once the mounts are made.
    pub landlock: LandlockPlan,
    /// The seccomp filter, installed after the ruleset, just before the exec.
    pub seccomp: SeccompPlan,
    /// `seccomp` compiled: the one program the helper loads, built with the plan so that a
    /// launch does not build it again (empty in a plan compiled elsewhere than on Linux).
    pub seccomp_program: SeccompProgram,
    /// What is enforced and what is not, in words: written into the plan file for people
    /// (`cli-sandbox profile`), never read back (the helper applies the steps above, and reads
    /// past these about 6 KB of text without building them: a plan read back has none).
    #[serde(skip_deserializing)]
    pub guarantees: Vec<Guarantee>,
    /// The Landlock-only plan's frozen folders (no right at all: nothing can be created,
    /// renamed or removed directly in them), for the contract, whose expected verdicts follow
    /// what the plan says it does. Empty in a namespace plan; not part of the plan file.
    #[serde(skip)]
    pub frozen: Vec<PathBuf>,
}

/// A settings file a plan creates with its neutral content ([`LinuxPlan::create_settings_files`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsFile {
    /// Where (absolute).
    pub path: PathBuf,
    /// What it holds (`{}` for JSON settings, nothing for TOML and Markdown).
    pub text: String,
}

impl LinuxPlan {
    /// Every path the plan names.
    pub fn paths(&self) -> Vec<&Path> {
        let mut out: Vec<&Path> = vec![&self.workdir];
        out.extend(self.create_dirs.iter().map(PathBuf::as_path));
        out.extend(self.stand_in_dirs.iter().map(PathBuf::as_path));
        out.extend(self.create_home_dirs.iter().map(PathBuf::as_path));
        out.extend(self.create_home_files.iter().map(PathBuf::as_path));
        out.extend(self.create_settings_files.iter().map(|f| f.path.as_path()));
        if let Some(ns) = &self.namespaces {
            for place in ns.private_tmp.iter().flat_map(|t| &t.places) {
                out.push(&place.path);
                out.extend(place.bind_back.iter().map(PathBuf::as_path));
            }
            for step in &ns.mounts {
                match step {
                    MountStep::Pin { path }
                    | MountStep::PinLink { path }
                    | MountStep::Hide { path, .. }
                    | MountStep::ReadOnly { path, .. }
                    | MountStep::Keep { path, .. } => out.push(path),
                    MountStep::Mask { root, bind_back } => {
                        out.push(root);
                        out.extend(bind_back.iter().map(|b| b.path.as_path()));
                    }
                }
            }
            out.extend(ns.guards.iter().map(|g| g.path.as_path()));
        }
        out.extend(self.landlock.rules.iter().map(|r| r.path.as_path()));
        out
    }
}

/// One classic BPF instruction (the kernel's `struct sock_filter`): what the seccomp backend
/// compiles, kept in the plan in a form every OS can read and write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BpfInstruction {
    /// The operation (`BPF_LD | BPF_W | BPF_ABS`, `BPF_JMP | BPF_JEQ | BPF_K`, ...).
    pub code: u16,
    /// Instructions skipped when a conditional jump's test holds.
    pub jt: u8,
    /// Instructions skipped when it does not.
    pub jf: u8,
    /// The operand: an offset into the system call's data, a value compared, an action.
    pub k: u32,
}

/// A compiled seccomp program, as the plan carries it: in JSON, one string of hexadecimal
/// digits, 16 per instruction (the `sock_filter` fields `code`, `jt`, `jf`, `k`, each
/// little-endian), which reads back in a few microseconds where a list of numbers would not.
///
/// Reading one back checks its shape only (a whole number of instructions, 1 to the kernel's
/// 4,096): the plan is the launcher's own file, trusted as a whole like its mounts, and the tests
/// check that a compiled plan carries exactly `seccomp::program` of its [`SeccompPlan`]. An empty
/// program is never loaded: the kernel would refuse it, and so does the helper, before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeccompProgram(Vec<BpfInstruction>);

/// The kernel's limit on a classic BPF program (`BPF_MAXINSNS`).
const MAX_INSTRUCTIONS: usize = 4096;

impl SeccompProgram {
    /// A program of these instructions (the seccomp backend compiles them).
    pub fn new(instructions: Vec<BpfInstruction>) -> SeccompProgram {
        SeccompProgram(instructions)
    }

    /// The instructions, in order.
    pub fn instructions(&self) -> &[BpfInstruction] {
        &self.0
    }

    fn to_hex(&self) -> String {
        use std::fmt::Write;
        let mut out = String::with_capacity(self.0.len() * 16);
        for insn in &self.0 {
            for byte in insn
                .code
                .to_le_bytes()
                .into_iter()
                .chain([insn.jt, insn.jf])
                .chain(insn.k.to_le_bytes())
            {
                let _ = write!(out, "{byte:02x}");
            }
        }
        out
    }

    fn from_hex(text: &str) -> Result<SeccompProgram, String> {
        let bytes = text.as_bytes();
        if bytes.is_empty()
            || !bytes.len().is_multiple_of(16)
            || bytes.len() / 16 > MAX_INSTRUCTIONS
        {
            return Err(format!(
                "a seccomp program of {} hexadecimal digits is not 1 to {MAX_INSTRUCTIONS} instructions of 16",
                bytes.len()
            ));
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            _ => Err(format!("`{}` is not a hexadecimal digit", char::from(c))),
        };
        let mut program = Vec::with_capacity(bytes.len() / 16);
        for chunk in bytes.chunks_exact(16) {
            let mut b = [0u8; 8];
            for (i, pair) in chunk.chunks_exact(2).enumerate() {
                b[i] = digit(pair[0])? << 4 | digit(pair[1])?;
            }
            program.push(BpfInstruction {
                code: u16::from_le_bytes([b[0], b[1]]),
                jt: b[2],
                jf: b[3],
                k: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            });
        }
        Ok(SeccompProgram(program))
    }
}

impl serde::Serialize for SeccompProgram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> serde::Deserialize<'de> for SeccompProgram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SeccompProgram, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        SeccompProgram::from_hex(&text).map_err(serde::de::Error::custom)
    }
}

/// The namespaces' part of the plan (`None` in the Landlock-only fallback).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespacePlan {
    /// The mount steps, in the order applied.
    pub mounts: Vec<MountStep>,
    /// A fresh `/dev` with only the harmless devices and the terminal's.
    pub minimal_dev: bool,
    /// A PID namespace with its own `/proc`: outside processes are invisible, and every process
    /// of the chat ends when the program exits.
    pub pid_namespace: bool,
    /// An IPC namespace: SysV IPC and POSIX message queues of the chat's own.
    pub ipc_namespace: bool,
    /// The launcher runs as root: every mount is made read-only, then these places (and the
    /// grants and the runtime, bound back later) get their writable mounts back.
    pub system_read_only: Option<Vec<PathBuf>>,
    /// Kernel tunables bound read-only onto themselves, and kernel secrets covered, once the
    /// chat's own `/proc` is mounted (after the other mounts: some lie in the new `/proc`).
    pub kernel: Vec<MountStep>,
    /// Attach the stand-ins' tmpfs for the time of the covers, as on kernels before 6.15 (which
    /// cannot copy from a mount attached nowhere, and get this way whatever the plan says). Set by
    /// the tests of that way only.
    #[serde(default)]
    pub attach_stand_ins: bool,
    /// `network = "isolated"`: a network namespace of the chat's own, reached from outside only
    /// through `pasta`. `None`: the machine's network, shared.
    #[serde(default)]
    pub network: Option<NetworkPlan>,
    /// `network = "allowlist"` (issue 28): a network namespace of the chat's own with only `lo`,
    /// whose one listener is the egress proxy's, served by the helper outside. `None` otherwise.
    #[serde(default)]
    pub egress: Option<EgressPlan>,
    /// The guards (issue 25): a FUSE file system over each grant, mounted after the other
    /// mounts, the deepest grant first, that refuses the names its patterns match at the grant's
    /// top whatever happens to them outside (`guard.rs`). Empty where `/dev/fuse` cannot be
    /// opened: the refused entries then have stand-ins only ([`Kernel::fuse`](super::Kernel::fuse)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<GuardPlan>,
    /// The chat's own `/tmp` and `/var/tmp` (`[limits] tmp`).
    pub private_tmp: Option<PrivateTmp>,
}

/// One grant guarded by the FUSE guard ([`NamespacePlan::guards`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardPlan {
    /// The grant's folder.
    pub path: PathBuf,
    /// A read-only grant's guard is mounted read-only too.
    pub access: Access,
    /// The refused patterns, as written (`sandbox_core::RefusedPattern`).
    pub refused: Vec<String>,
}

/// `[limits]` as the helper holds them (`limits.rs`, `cgroup.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsPlan {
    /// The chat's processes and threads at once (init not counted): `RLIMIT_NPROC` in the chat's
    /// user namespace, and a pids cgroup for a root launcher.
    pub processes: u32,
    /// Configured, not the default: a root launcher that can make no pids cgroup refuses the
    /// launch rather than run the chat unlimited.
    pub processes_configured: bool,
    /// The chat's memory in bytes (a cgroup; the launch is refused where none can be made).
    pub memory: Option<u64>,
}

/// The chat's own temporary folders: a tmpfs of `size` bytes on each place (`/tmp`,
/// `/var/tmp`), made before the pins and the masks, with the chat's folders that lie inside one
/// (the home, a protected root, a grant, the runtime, a configured writable place, an allowed
/// socket) bound back at their own paths. `/dev/shm` (a folder of the chat's own `/dev`) gets
/// the same size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrivateTmp {
    /// The size of each tmpfs, in bytes.
    pub size: u64,
    /// The places covered, in order.
    pub places: Vec<TmpPlace>,
}

/// One temporary folder covered by the chat's own tmpfs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TmpPlace {
    /// `/tmp` or `/var/tmp`.
    pub path: PathBuf,
    /// What of the chat's lies inside, outermost only, bound back (one missing at launch is
    /// left out).
    pub bind_back: Vec<PathBuf>,
}

/// The chat's own network (`[policy] network = "isolated"`): init is cloned into a new network
/// namespace, and before it goes on the helper starts `pasta` for it, which gives the namespace
/// an interface with outbound TCP, UDP and ping, and waits until the interface is up.
///
/// pasta acts for the chat: every connection the chat makes to the outside is a socket pasta
/// opens on the machine. So what pasta would do on its own for the namespace is switched off
/// here: no mapping of the namespace's gateway to the machine's loopback (`--no-map-gw`), no
/// port forwarded from the machine into the namespace (`-t none -u none`) nor from the
/// namespace to the machine's loopback (`-T none -U none`). The namespace's addresses are its
/// own (not the machine's, pasta's default), so that the machine's own addresses stay the
/// machine's: a server there that listens on them (or on `0.0.0.0`) is reached as from any
/// other machine; one that listens on `127.0.0.1` only is not. What pasta still does, and what
/// keeps the chat from asking it for more, is in `docs/linux.md` ("The chat's own network").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkPlan {
    /// The program, at a fixed path: never looked up on `PATH` (the home, where a chat writes,
    /// is on many people's `PATH`, and the helper runs pasta outside the sandbox).
    pub pasta: PathBuf,
    /// Its options. The helper adds, per launch, the namespaces to join, the descriptor to
    /// report readiness on, its log and the user to run as.
    pub pasta_args: Vec<String>,
    /// The namespace's outer interface, which pasta makes (`--ns-ifname`): init routes the
    /// machine's loopback addresses through it back inside (see `network.rs`).
    pub interface: String,
    /// The address DNS queries go to inside: pasta relays UDP port 53 there to the machine's
    /// first resolver. The chat's `/etc/resolv.conf` names it (a resolver on the machine's
    /// loopback, systemd-resolved's `127.0.0.53`, would be the chat's own loopback inside).
    pub dns: String,
}

/// `network = "allowlist"` applied (docs/linux.md, "Egress by host name"): init, in the chat's
/// new network namespace and before it confines itself, brings `lo` up, makes a TCP listener on
/// `127.0.0.1:port` there and hands it over a socket pair only the helper and init hold (init
/// closes its end before the program starts); the helper (outside every namespace of the
/// chat's) serves the egress proxy on it for the chat's life. No interface but `lo` and no
/// pasta: nothing leaves the namespace but through that listener.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressPlan {
    /// The chat, as the proxy's log names it.
    pub chat: String,
    /// The proxy's port on the chat's own loopback ([`EGRESS_PORT`]).
    pub port: u16,
    /// `allowed_hosts`, as configured (validated by the policy).
    pub allowed_hosts: Vec<String>,
    /// `denied_hosts`, as configured (validated by the policy).
    pub denied_hosts: Vec<String>,
    /// The proxy's log: one JSON line per decision (docs/json.md, "egress").
    pub log: PathBuf,
    /// FOR TESTS ONLY: names the proxy resolves to these addresses instead of asking the
    /// machine's resolver (a listed name standing in for a real host on `127.0.0.1`). The
    /// compile never fills it; a chat that writes a plan of its own runs it inside its own
    /// confinement, so it gains nothing.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub resolve: std::collections::BTreeMap<String, Vec<std::net::IpAddr>>,
}

/// The egress proxy's port on the chat's own loopback (any port would do: the namespace is the
/// chat's; this one is the usual proxy port).
pub const EGRESS_PORT: u16 = 3128;

/// Where pasta is looked for: where Debian, Ubuntu and Fedora install it.
pub const PASTA: &str = "/usr/bin/pasta";

/// How long a plan file is kept after it was last written: a launch reads its plan when it starts,
/// so an older one is the leftover of a launch that never started (`plan` printed it, nobody ran
/// it) and is removed by the next write.
const PLAN_KEPT: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Writes the plan where no confined process can change it (inside the state root, which every
/// chat's sandbox masks), atomically; returns its path for `cli-sandbox exec --policy`.
///
/// One file per plan, named by its content (`<chat>.<hash>.json`): two launches of one chat with
/// other grants never share a file, so a later launch cannot change what an earlier one's argv
/// enforces, and the same plan twice is the same file (not written again). Leftovers older than a
/// day are removed here, on the next start.
///
/// Compact JSON (`cli-sandbox profile --backend landlock` prints it for people), and no
/// `fsync`: a plan lost to a crash is never used (the launch that wrote it is gone too), and a cut
/// one is refused by the helper (see BENCHMARKS.md).
pub fn write_plan(plan: &LinuxPlan, layout: &Layout) -> Result<PathBuf, crate::Error> {
    use std::hash::{Hash, Hasher};
    use std::io::Write;
    let dir = layout.plans_dir();
    crate::ensure_dir(&dir)?;
    let text = serde_json::to_vec(plan).map_err(|e| {
        crate::Error::BadInput(format!(
            "the plan of chat `{}` cannot be written as JSON ({e}): a path in it is not UTF-8",
            plan.chat
        ))
    })?;
    // Not a defence against anyone: the plans folder is closed to every chat. The name only has to
    // differ for different plans of one chat.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    let path = dir.join(format!("{}.{:016x}.json", plan.chat, hasher.finish()));
    let io = |e| crate::in_state_root(format!("plan `{}`", path.display()))(e);
    remove_old_plans(&dir);
    if std::fs::read(&path).is_ok_and(|old| old == text) {
        // The same plan: keep it, and keep it from being swept.
        let file = std::fs::File::options()
            .append(true)
            .open(&path)
            .map_err(io)?;
        file.set_modified(std::time::SystemTime::now())
            .map_err(io)?;
        return Ok(path);
    }
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io)?;
    tmp.write_all(&text).map_err(io)?;
    tmp.persist(&path).map_err(|e| io(e.error))?;
    Ok(path)
}

/// Removes plan files not written for [`PLAN_KEPT`] (best effort: a plan another launcher removes
/// at the same time is gone either way).
fn remove_old_plans(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > PLAN_KEPT));
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Reads a plan written by [`write_plan`].
pub fn read_plan(path: &Path) -> Result<LinuxPlan, crate::Error> {
    let text = std::fs::read(path).map_err(|e| crate::Error::Io {
        what: format!("plan `{}`", path.display()),
        source: e,
    })?;
    serde_json::from_slice(&text).map_err(|e| {
        crate::Error::Other(format!(
            "plan `{}` cannot be read ({e}): compile it again with `cli-sandbox plan`",
            path.display()
        ))
    })
}
