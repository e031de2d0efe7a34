//! The seccomp part of the Linux plan: the system calls a confined program may not make, decided
//! here from the plan's [`SeccompPlan`], compiled into one program by `bpf.rs` when the plan is
//! compiled (the plan carries it), and installed by the helper (with `seccompiler`) after
//! Landlock, so that the program and everything it starts inherit it.
//!
//! What it is for: the ways out that neither the mounts nor Landlock can name on this kernel.
//! Most of them are one class, "a unix socket reaches a server started outside" (a tmux server,
//! the session bus, journald, a CLI's daemon would then act for the chat, unconfined). Below
//! Landlock ABI 9 nothing mediates a pathname connect, so this filter has to close every system
//! call that creates, re-points or smuggles such a socket:
//!
//! - `socket()`: an allowlist of families. `AF_UNIX` is left out below ABI 9; every family not
//!   named is refused, so that one we did not think of (or one a future kernel adds) is closed
//!   too. Among those refused on purpose: `AF_VSOCK` (the hypervisor's host: this may be a VM),
//!   `AF_NETLINK` with any protocol but route and sock_diag (`NETLINK_USERSOCK` carries messages
//!   to any process outside that bound one, measured without privileges), `AF_ALG`, `AF_PACKET`,
//!   Bluetooth, and the module-backed rarities whose first use would load a kernel module.
//! - `socketpair()`: unix pairs only, and below ABI 9 only stream and seqpacket pairs. A
//!   connected stream or seqpacket socket cannot be pointed elsewhere (the kernel answers
//!   `connect()` with EISCONN, and ignores or refuses a `sendto()` address), also after its peer
//!   is closed; a datagram pair can `sendto()` any datagram socket outside and be `connect()`ed
//!   to one, and `SOCK_RAW` gives a datagram pair too.
//! - io_uring: `IORING_OP_SOCKET` and `IORING_OP_CONNECT` make and connect a socket without the
//!   two calls above. The three io_uring calls are refused with ENOSYS, "as if the kernel had no
//!   io_uring" (the Nix sandbox's choice), so that libuv, tokio and liburing users fall back.
//!   Refusing `io_uring_enter` and `io_uring_register` too, not only `io_uring_setup`, closes a
//!   ring made elsewhere and handed in.
//! - Other system call ABIs: on x86_64 the x32 ABI offers the same calls under other numbers,
//!   which a filter keyed by number would let through, so they are refused; the i386 ABI
//!   (`int 0x80`, with `socketcall` multiplexing every socket call) fails the filters'
//!   architecture check, which ends the process.
//! - A socket taken from elsewhere: `pidfd_getfd` is refused (and Landlock refuses it for any
//!   process outside the sandbox's domain anyway); `/proc/<pid>/fd/N` of a socket cannot be
//!   opened (ENXIO); `SCM_RIGHTS` only arrives over a socket already connected, which below ABI
//!   9 means a pair made inside or a standard descriptor the launcher gave, checked at start by
//!   `descriptors.rs`.
//!
//! With Landlock ABI 9, `ResolveUnix` mediates pathname sockets in the kernel (for `connect` and
//! `sendmsg` alike, whichever call made the socket) and the scope `abstract-unix-socket` covers
//! abstract ones, so `AF_UNIX` and every pair are allowed there. What stays: io_uring (its socket
//! operation would create a family the allowlist refuses), the family allowlist, the other ABIs.
//!
//! Beside the sockets, a few refusals the other layers cannot make: mount and namespace calls,
//! terminal injection, the keyring, setuid/setgid bits, the resource limits of other processes,
//! and a short list of kernel interfaces no CLI needs that kernel exploits use, as Docker's
//! default profile refuses them.
//!
//! What it is not: an allowlist of system calls. Everything not named here is allowed; file
//! access is the mounts' and Landlock's business, signals and ptrace the PID namespace's and
//! Landlock's.
//!
//! Arguments are compared as 32-bit words (`SeccompCmpArgLen::Dword`) where the kernel reads an
//! `int` or `unsigned int`: the kernel ignores the upper half of the register, so a comparison of
//! the full 64 bits could be dodged by setting it.

use seccompiler::BpfProgram;

use super::bpf::{self, Cmp, Cond, Filter, Rule};
use crate::plan::format::{BpfInstruction, SeccompPlan, SeccompProgram, SocketFamily};

/// How an argument is compared, as the rules below say it (the values as the kernel reads them:
/// 32-bit words).
#[derive(Debug, Clone, Copy)]
enum SeccompCmpOp {
    Eq,
    Ne,
    MaskedEq(u64),
}

const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;
/// `_IO(0xAA, 0x00)` on `/dev/userfaultfd`: a userfaultfd without the system call.
const USERFAULTFD_IOC_NEW: u64 = 0xAA00;
const NETLINK_ROUTE: u64 = 0;
const NETLINK_SOCK_DIAG: u64 = 4;
/// The low bits of `socket()`'s and `socketpair()`'s type that name the type (the rest are
/// `SOCK_NONBLOCK` and `SOCK_CLOEXEC`): what [`PAIR_TYPES_REFUSED`] covers.
#[cfg(test)]
const SOCK_TYPE_MASK: u64 = 0xf;
/// `__O_TMPFILE`: the bit of `O_TMPFILE` that makes `open` create an unnamed file (which
/// `linkat` can then name), the same value on every architecture built here.
const O_TMPFILE_BIT: u64 = 0o20000000;
const SETUID_BITS: [u64; 2] = [libc::S_ISUID as u64, libc::S_ISGID as u64];
/// `fchmodat2` is 452 on every architecture (numbers were unified before Linux 6.6 added it);
/// the libc crate names it only for some.
const SYS_FCHMODAT2: libc::c_long = 452;
/// `setxattrat` and `removexattrat` (Linux 6.13), numbered alike on every architecture.
const SYS_SETXATTRAT: libc::c_long = 463;
const SYS_REMOVEXATTRAT: libc::c_long = 466;
/// `chattr`'s requests (`_IOW('f', 2, long)` and `_IOW('X', 32, struct fsxattr)`).
const FS_IOC_SETFLAGS: u64 = 0x4008_6602;
const FS_IOC_FSSETXATTR: u64 = 0x401c_5820;
/// Personas `personality()` may set, as Docker's default profile allows them: the Linux default
/// (0), `PER_LINUX32` (8), `UNAME26` (0x20000), both (0x20008), and the query (0xffffffff). The
/// others set flags such as `READ_IMPLIES_EXEC` or `ADDR_NO_RANDOMIZE`, which switch off the
/// memory protections of every program the chat runs next.
const ALLOWED_PERSONAS: [u64; 5] = [0, 0x8, 0x20000, 0x20008, 0xffff_ffff];

/// The system calls refused with one errno, each with the conditions under which it is, in the
/// order written (a call's rules are alternatives, tested in that order).
///
/// A list rather than a map by call: about seventy refusals, each one push, where a map's nodes
/// and a list of rules per call cost about twice the program's own compile (they were built at
/// every launch, and thrown away). [`calls`] sorts them by call once.
#[derive(Debug)]
struct Refusals {
    /// The action of every rule here: `errno`.
    ret: u32,
    /// Each refused call with one rule; a rule without conditions refuses it whatever its
    /// arguments.
    rules: Vec<(i64, Rule)>,
}

impl Refusals {
    fn new(errno: i32) -> Refusals {
        Refusals {
            ret: bpf::errno(errno),
            rules: Vec::with_capacity(64),
        }
    }

    /// Refuses `nr` whatever its arguments.
    fn always(&mut self, nr: libc::c_long) {
        let ret = self.ret;
        self.rules.push((
            nr,
            Rule {
                conds: Vec::new(),
                ret,
            },
        ));
    }

    /// Refuses `nr` when all of `conditions` hold (one rule; rules of one call are alternatives).
    fn when(
        &mut self,
        nr: libc::c_long,
        conditions: &[(u8, SeccompCmpOp, u64)],
    ) -> Result<(), String> {
        let word = |v: u64| {
            u32::try_from(v).map_err(|_| format!("{v:#x} does not fit the 32-bit word compared"))
        };
        let mut conds = Vec::with_capacity(conditions.len());
        for (arg, op, value) in conditions {
            if *arg > 5 {
                return Err(format!("argument {arg} of call {nr} does not exist"));
            }
            let cmp = match op {
                SeccompCmpOp::Eq => Cmp::Eq(word(*value)?),
                SeccompCmpOp::Ne => Cmp::Ne(word(*value)?),
                SeccompCmpOp::MaskedEq(mask) => Cmp::MaskedEq {
                    mask: word(*mask)?,
                    value: word(*value)?,
                },
            };
            conds.push(Cond { arg: *arg, cmp });
        }
        let ret = self.ret;
        self.rules.push((nr, Rule { conds, ret }));
        Ok(())
    }

    /// Refuses `nr` when argument `arg` has the setuid or the setgid bit.
    fn with_setuid_mode(&mut self, nr: libc::c_long, arg: u8) -> Result<(), String> {
        for bit in SETUID_BITS {
            self.when(nr, &[(arg, SeccompCmpOp::MaskedEq(bit), bit)])?;
        }
        Ok(())
    }

    /// Refuses an `open` that creates a file (`O_CREAT`, or `O_TMPFILE`) with the setuid or
    /// setgid bit in its mode. Without those flags the kernel ignores the mode, and so does this.
    fn creating_setuid(&mut self, nr: libc::c_long, flags: u8, mode: u8) -> Result<(), String> {
        for create in [libc::O_CREAT as u64, O_TMPFILE_BIT] {
            for bit in SETUID_BITS {
                self.when(
                    nr,
                    &[
                        (flags, SeccompCmpOp::MaskedEq(create), create),
                        (mode, SeccompCmpOp::MaskedEq(bit), bit),
                    ],
                )?;
            }
        }
        Ok(())
    }
}

/// Each refused call's rules, sorted by number ([`Filter::rules`]): those written for it in
/// order, or, for a call refused whatever its arguments, that one rule alone (conditional rules
/// for it are moot). A call refused with two errnos is a mistake here (which one would the kernel
/// give?), said as such.
fn calls(eperm: Refusals, enosys: Refusals) -> Result<Vec<(u32, Rule)>, String> {
    let mut all: Vec<(i64, Rule)> = eperm.rules;
    all.extend(enosys.rules);
    // Stable: a call's rules stay in the order written.
    all.sort_by_key(|(nr, _)| *nr);
    let mut out: Vec<(u32, Rule)> = Vec::with_capacity(all.len());
    let mut all = all.into_iter().peekable();
    while let Some((nr, first)) = all.next() {
        let number = u32::try_from(nr).map_err(|_| format!("call number {nr}"))?;
        let start = out.len();
        out.push((number, first));
        while let Some((_, rule)) = all.next_if(|(next, _)| *next == nr) {
            out.push((number, rule));
        }
        let call = &mut out[start..];
        if call.iter().any(|(_, rule)| rule.ret != call[0].1.ret) {
            return Err(format!("call {nr} is refused with two errnos"));
        }
        if let Some(always) = call.iter().position(|(_, rule)| rule.conds.is_empty()) {
            call.swap(0, always);
            out.truncate(start + 1);
        }
    }
    Ok(out)
}

/// The filter to install: one program (see `bpf.rs`) refusing with EPERM what is refused
/// outright, with ENOSYS what a library should take as "this kernel lacks it" and work around,
/// and, on x86_64, the x32 numbers. Built when the plan is compiled and carried in it
/// ([`LinuxPlan::seccomp_program`](super::plan::LinuxPlan::seccomp_program)), so that the helper
/// only loads it: building it at every launch cost about 57 µs of the launch.
pub fn program(plan: &SeccompPlan) -> Result<SeccompProgram, String> {
    let instructions = filter(plan)?.compile()?;
    Ok(SeccompProgram::new(
        instructions
            .iter()
            .map(|i| BpfInstruction {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect(),
    ))
}

/// The program in the form `seccompiler::apply_filter` loads.
pub fn loadable(program: &SeccompProgram) -> BpfProgram {
    program
        .instructions()
        .iter()
        .map(|i| seccompiler::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect()
}

/// The filter as data (the tests compare it with `seccompiler`'s own programs for the same
/// refusals).
fn filter(plan: &SeccompPlan) -> Result<Filter, String> {
    let (eperm, enosys) = refusals(plan)?;
    Ok(Filter {
        arch: target_arch()?,
        refuse_x32: plan.refuse_other_abis && cfg!(target_arch = "x86_64"),
        rules: calls(eperm, enosys)?,
    })
}

/// What the plan refuses, with EPERM and with ENOSYS.
fn refusals(plan: &SeccompPlan) -> Result<(Refusals, Refusals), String> {
    let mut eperm = Refusals::new(libc::EPERM);
    let mut enosys = Refusals::new(libc::ENOSYS);

    sockets(plan, &mut eperm)?;
    if plan.refuse_io_uring {
        // A ring creates, connects and opens without the calls this filter sees (see above).
        for nr in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            enosys.always(nr);
        }
    }
    if plan.refuse_namespace_and_mount_calls {
        // Undoing or escaping the mounts. Landlock already refuses mount changes to a confined
        // process, and no capability is left; this is the third wall.
        for nr in [
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_pivot_root,
            libc::SYS_setns,
            libc::SYS_unshare,
            libc::SYS_move_mount,
            libc::SYS_open_tree,
            libc::SYS_fsopen,
            libc::SYS_fsconfig,
            libc::SYS_fsmount,
            libc::SYS_fspick,
            libc::SYS_mount_setattr,
        ] {
            eperm.always(nr);
        }
        // A new user namespace would give back every capability inside it, and with them the
        // mount calls; the other namespaces would hide what the sandbox set up.
        for flag in [
            libc::CLONE_NEWNS,
            libc::CLONE_NEWUSER,
            libc::CLONE_NEWPID,
            libc::CLONE_NEWNET,
            libc::CLONE_NEWUTS,
            libc::CLONE_NEWIPC,
            libc::CLONE_NEWCGROUP,
        ] {
            let flag = flag as u64;
            eperm.when(libc::SYS_clone, &[(0, SeccompCmpOp::MaskedEq(flag), flag)])?;
        }
        // clone3's flags sit behind a pointer that a filter cannot read; ENOSYS makes the C
        // library fall back to clone, whose flags it can.
        enosys.always(libc::SYS_clone3);
    }
    if plan.refuse_terminal_injection {
        // Keystrokes pushed into the terminal run in the person's shell once the CLI exits.
        for request in [TIOCSTI, TIOCLINUX] {
            eperm.when(libc::SYS_ioctl, &[(1, SeccompCmpOp::Eq, request)])?;
        }
    }
    if plan.refuse_keyring {
        // The user and session keyrings are shared with the person's processes outside.
        for nr in [libc::SYS_keyctl, libc::SYS_add_key, libc::SYS_request_key] {
            eperm.always(nr);
        }
    }
    if plan.refuse_setuid_bits {
        setuid_bits(&mut eperm, &mut enosys)?;
    }
    if plan.refuse_metadata_changes {
        metadata_changes(&mut eperm)?;
    }
    if plan.refuse_shared_ipc {
        // Without an IPC namespace these are the machine's: a segment, a semaphore or a queue
        // of a process outside, by its key or name, as far as its permissions go (a chat runs
        // as the same uid as the other chats). ENOSYS: as a kernel built without them, which
        // programs that can do without them expect. (POSIX shared memory and semaphores are
        // files in /dev/shm, closed by the file rules.)
        for nr in [
            libc::SYS_shmget,
            libc::SYS_shmat,
            libc::SYS_shmctl,
            libc::SYS_shmdt,
            libc::SYS_semget,
            libc::SYS_semop,
            libc::SYS_semtimedop,
            libc::SYS_semctl,
            libc::SYS_msgget,
            libc::SYS_msgsnd,
            libc::SYS_msgrcv,
            libc::SYS_msgctl,
            libc::SYS_mq_open,
            libc::SYS_mq_unlink,
            libc::SYS_mq_timedsend,
            libc::SYS_mq_timedreceive,
            libc::SYS_mq_notify,
            libc::SYS_mq_getsetattr,
        ] {
            enosys.always(nr);
        }
    }
    if plan.refuse_exploit_surface {
        exploit_surface(&mut eperm, &mut enosys)?;
    }
    if plan.refuse_others_limits {
        // The resource limits of another process of the same uid: the kernel lets the uid
        // change them, and a CPU limit is a SIGKILL on a timer. Init (pid 1 inside) would be
        // killed and its launch report that the program never started; in the fallback, a
        // process outside would die, past Landlock's signal scoping. A program's own limits
        // (`setrlimit`, `prlimit64` with pid 0) stay its own to change.
        eperm.when(libc::SYS_prlimit64, &[(0, SeccompCmpOp::Ne, 0)])?;
    }
    if plan.refuse_others_scheduling {
        others_scheduling(&mut eperm)?;
    }

    Ok((eperm, enosys))
}

/// The scheduling and priority calls, where the chat has no PID namespace: only the forms that
/// name the caller itself pass. The kernel lets a uid change the nice value, the scheduling
/// class, the CPU affinity and the IO priority of every process of that uid (Landlock's ptrace
/// restriction is not asked), so a chat would renice, idle (`SCHED_IDLE`), pin to one CPU or put
/// in the idle IO class the person's shell, the launcher or another chat, for longer than it
/// lives. Without a PID namespace a filter cannot tell the chat's own pids from others, so every
/// pid but 0 (the caller) is refused, and so are the forms that name a process group or a
/// whole uid. The arguments are ints the kernel reads from the low 32 bits: a 64-bit test
/// against 0 refuses every other value (and, harmlessly, a 0 with high bits set).
fn others_scheduling(eperm: &mut Refusals) -> Result<(), String> {
    // PRIO_PROCESS is 0, IOPRIO_WHO_PROCESS 1: the group and uid forms reach outside.
    const PRIO_PROCESS: u64 = 0;
    const IOPRIO_WHO_PROCESS: u64 = 1;
    eperm.when(
        libc::SYS_setpriority,
        &[(0, SeccompCmpOp::Ne, PRIO_PROCESS)],
    )?;
    eperm.when(libc::SYS_setpriority, &[(1, SeccompCmpOp::Ne, 0)])?;
    eperm.when(
        libc::SYS_ioprio_set,
        &[(0, SeccompCmpOp::Ne, IOPRIO_WHO_PROCESS)],
    )?;
    eperm.when(libc::SYS_ioprio_set, &[(1, SeccompCmpOp::Ne, 0)])?;
    // The pid is the first argument of each.
    for nr in [
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
        libc::SYS_sched_setaffinity,
    ] {
        eperm.when(nr, &[(0, SeccompCmpOp::Ne, 0)])?;
    }
    Ok(())
}

/// The masked tests that refuse every socket pair type but stream and seqpacket (see `sockets`).
const PAIR_TYPES_REFUSED: [(u64, u64); 3] = [(0b0001, 0), (0b0011, 0b0011), (0b1011, 0b1001)];

/// `socket()` and `socketpair()`: see the module doc for why each family and pair is refused.
fn sockets(plan: &SeccompPlan, eperm: &mut Refusals) -> Result<(), String> {
    let allowed = &plan.socket_families;
    let mut families: Vec<u64> = Vec::new();
    for family in allowed {
        let number = match family {
            SocketFamily::Unix => libc::AF_UNIX,
            SocketFamily::Inet => libc::AF_INET,
            SocketFamily::Inet6 => libc::AF_INET6,
            SocketFamily::NetlinkRoute | SocketFamily::NetlinkSockDiag => libc::AF_NETLINK,
        } as u64;
        if !families.contains(&number) {
            families.push(number);
        }
    }
    // Any family not allowed: one rule whose conditions all hold when the family is none of them.
    let other_family: Vec<(u8, SeccompCmpOp, u64)> =
        families.iter().map(|f| (0, SeccompCmpOp::Ne, *f)).collect();
    if other_family.is_empty() {
        eperm.always(libc::SYS_socket);
    } else {
        eperm.when(libc::SYS_socket, &other_family)?;
    }
    // Netlink with a protocol not allowed.
    if families.contains(&(libc::AF_NETLINK as u64)) {
        let mut other_protocol = vec![(0, SeccompCmpOp::Eq, libc::AF_NETLINK as u64)];
        for (family, protocol) in [
            (SocketFamily::NetlinkRoute, NETLINK_ROUTE),
            (SocketFamily::NetlinkSockDiag, NETLINK_SOCK_DIAG),
        ] {
            if allowed.contains(&family) {
                other_protocol.push((2, SeccompCmpOp::Ne, protocol));
            }
        }
        eperm.when(libc::SYS_socket, &other_protocol)?;
    }

    // Pairs: unix only (no other family makes pairs that anything here needs).
    eperm.when(
        libc::SYS_socketpair,
        &[(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)],
    )?;
    if plan.unix_pairs_stream_only {
        // Every type but stream (1) and seqpacket (5) refused: an allowlist, since a filter
        // cannot say "masked value not equal". Three masked tests cover the fourteen other
        // values of the type's four bits: the even ones (`t & 1 == 0`: datagram 2 among them),
        // those ending in binary 11 (`t & 3 == 3`: raw 3, 7, 11, 15), and 9 and 13
        // (`t & 0b1011 == 0b1001`). 1 (0001) and 5 (0101) pass all three; the unit test below
        // checks the sixteen values.
        for (mask, value) in PAIR_TYPES_REFUSED {
            eperm.when(
                libc::SYS_socketpair,
                &[(1, SeccompCmpOp::MaskedEq(mask), value)],
            )?;
        }
    }
    Ok(())
}

/// A root chat (uid 0 without capabilities still owns root's files) could otherwise make a
/// root-owned program setuid, in the home, `/tmp` or a grant, for the person or the machine to
/// run later, outside. Every way a mode reaches the kernel is refused when it carries the
/// setuid or the setgid bit; writing to a setuid file clears the bit (no `CAP_FSETID` inside).
fn setuid_bits(eperm: &mut Refusals, enosys: &mut Refusals) -> Result<(), String> {
    eperm.with_setuid_mode(libc::SYS_fchmod, 1)?;
    eperm.with_setuid_mode(libc::SYS_fchmodat, 2)?;
    eperm.with_setuid_mode(SYS_FCHMODAT2, 2)?;
    eperm.with_setuid_mode(libc::SYS_mknodat, 2)?;
    eperm.creating_setuid(libc::SYS_openat, 2, 3)?;
    #[cfg(target_arch = "x86_64")]
    {
        // The older calls that only x86_64 still has.
        eperm.with_setuid_mode(libc::SYS_chmod, 1)?;
        eperm.with_setuid_mode(libc::SYS_creat, 1)?;
        eperm.with_setuid_mode(libc::SYS_mknod, 1)?;
        eperm.creating_setuid(libc::SYS_open, 1, 2)?;
    }
    // openat2's mode is inside a struct behind a pointer, which a filter cannot read. ENOSYS:
    // the callers (systemd, Rust and Go libraries) fall back to openat, which it can.
    enosys.always(libc::SYS_openat2);
    Ok(())
}

/// A root chat in the Landlock-only plan owns the machine's files (`/etc/passwd`, the programs
/// in `/usr`): without a capability it may still change their mode (`chmod 0666 /etc/passwd`
/// gives every local account root), owner, times and extended attributes (ACLs among them),
/// which Landlock does not govern and no read-only mount stops there. A filter cannot read the
/// path, so every call of these families is refused, in the writable places too (the plan says
/// what that costs). The inode flags (`chattr`) a file's owner may set without a capability
/// likewise.
fn metadata_changes(eperm: &mut Refusals) -> Result<(), String> {
    for nr in [
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        SYS_FCHMODAT2,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        SYS_SETXATTRAT,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        SYS_REMOVEXATTRAT,
    ] {
        eperm.always(nr);
    }
    #[cfg(target_arch = "x86_64")]
    for nr in [
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ] {
        eperm.always(nr);
    }
    for request in [FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR] {
        eperm.when(libc::SYS_ioctl, &[(1, SeccompCmpOp::Eq, request)])?;
    }
    Ok(())
}

/// Interfaces no CLI or its tools were seen to use, and that kernel exploits do; refused as
/// Docker's default profile refuses them (it allows them only with capabilities a chat never
/// has). ENOSYS where a library is likely to probe for the feature and do without it.
fn exploit_surface(eperm: &mut Refusals, enosys: &mut Refusals) -> Result<(), String> {
    // eBPF programs and maps: a verifier bug is a kernel compromise (unprivileged use is off
    // by default, but that is a sysctl the machine may have changed).
    enosys.always(libc::SYS_bpf);
    // Performance counters: a long record of kernel bugs and of side channels on processes
    // outside; nothing here profiles.
    enosys.always(libc::SYS_perf_event_open);
    // userfaultfd stalls the kernel mid-copy at a moment of the caller's choosing, which turns
    // a race in the kernel into a reliable exploit. The device gives the same thing.
    enosys.always(libc::SYS_userfaultfd);
    eperm.when(
        libc::SYS_ioctl,
        &[(1, SeccompCmpOp::Eq, USERFAULTFD_IOC_NEW)],
    )?;
    // Personas that switch off memory protections (see ALLOWED_PERSONAS).
    let other_persona: Vec<(u8, SeccompCmpOp, u64)> = ALLOWED_PERSONAS
        .iter()
        .map(|p| (0, SeccompCmpOp::Ne, *p))
        .collect();
    eperm.when(libc::SYS_personality, &other_persona)?;
    // Opening a file by handle goes around every mount (the "shocker" escape from containers);
    // it needs CAP_DAC_READ_SEARCH, which no chat keeps, and is refused here again so that one
    // mistake is not enough.
    eperm.always(libc::SYS_open_by_handle_at);
    // Taking a descriptor out of another process: a connected socket or an open folder of a
    // process that kept one (init, a process outside in the fallback without a PID namespace,
    // where Landlock refuses it too).
    eperm.always(libc::SYS_pidfd_getfd);
    Ok(())
}

fn target_arch() -> Result<u32, String> {
    match std::env::consts::ARCH {
        "x86_64" => Ok(bpf::AUDIT_ARCH_X86_64),
        "aarch64" => Ok(bpf::AUDIT_ARCH_AARCH64),
        "riscv64" => Ok(bpf::AUDIT_ARCH_RISCV64),
        other => Err(format!("seccomp filters are not built for {other}")),
    }
}

/// The four kinds of plan, each with whether unix sockets are this filter's to refuse (below
/// Landlock ABI 9): with and without the IPC calls refused (the plan without namespaces, and the
/// one with them).
#[cfg(test)]
fn every_kind_of_plan() -> Vec<(bool, SeccompPlan)> {
    let mut out = Vec::new();
    for unix_by_seccomp in [true, false] {
        for refuse_shared_ipc in [false, true] {
            // The plan without namespaces refuses both; the one with them neither.
            let plan = SeccompPlan {
                refuse_shared_ipc,
                refuse_metadata_changes: refuse_shared_ipc,
                refuse_others_scheduling: refuse_shared_ipc,
                ..SeccompPlan::new(unix_by_seccomp)
            };
            out.push((unix_by_seccomp, plan));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_build_for_both_kinds_of_kernel_and_fit_the_kernels_limit() {
        for unix_by_seccomp in [true, false] {
            let program = program(&SeccompPlan::new(unix_by_seccomp)).unwrap();
            // BPF_MAXINSNS: the kernel refuses longer programs.
            let len = program.instructions().len();
            assert!((1..=4096).contains(&len), "{len} instructions");
        }
    }

    /// Every plan's program is short enough for each jump to reach the pool of returns at its
    /// end (`bpf.rs`): one return per action, no `JA`, and under 256 instructions (130 to 205 on
    /// x86_64; 229 to 313 with a return of their own for each rule and each leaf of the search).
    #[test]
    fn each_plans_program_has_one_return_per_action_and_no_long_jump() {
        for (unix_by_seccomp, plan) in every_kind_of_plan() {
            let program = filter(&plan).unwrap().compile().unwrap();
            let code = |class: u32| program.iter().filter(move |i| u32::from(i.code) == class);
            let mut returns: Vec<u32> = code(libc::BPF_RET | libc::BPF_K).map(|i| i.k).collect();
            let all = returns.len();
            returns.sort_unstable();
            returns.dedup();
            let kind = format!(
                "unix by seccomp: {unix_by_seccomp}, IPC refused: {}",
                plan.refuse_shared_ipc
            );
            assert_eq!(returns.len(), all, "two returns of one action ({kind})");
            assert_eq!(
                code(libc::BPF_JMP | libc::BPF_JA).count(),
                0,
                "a JA ({kind})"
            );
            // The fallback's filter for a root chat refuses the metadata and the scheduling
            // calls on others as well (205 instructions on x86_64); a conditional jump reaches
            // 255 instructions at most, which the missing JA above shows is never needed.
            assert!(
                program.len() < 256,
                "{} instructions ({kind})",
                program.len()
            );
        }
    }

    #[test]
    fn a_program_reads_back_as_written_and_a_damaged_one_does_not_read() {
        let written = program(&SeccompPlan::new(true)).unwrap();
        let json = serde_json::to_string(&written).unwrap();
        assert_eq!(json.len(), 2 + 16 * written.instructions().len());
        let read: SeccompProgram = serde_json::from_str(&json).unwrap();
        assert_eq!(read, written);
        for damaged in [
            "\"\"".to_owned(),
            format!("\"{}\"", &json[1..json.len() - 2]),
            format!("\"{}\"", json[1..json.len() - 1].replacen('0', "g", 1)),
            format!("\"{}\"", "0".repeat(16 * 4097)),
            "[1, 2]".to_owned(),
        ] {
            assert!(
                serde_json::from_str::<SeccompProgram>(&damaged).is_err(),
                "{damaged:.40} read back"
            );
        }
    }

    #[test]
    fn an_empty_allowlist_refuses_every_socket() {
        let mut p = SeccompPlan::new(true);
        p.socket_families.clear();
        assert!(program(&p).is_ok());
    }
}

#[cfg(test)]
mod pair_types {
    #[test]
    fn the_masked_tests_refuse_every_pair_type_but_stream_and_seqpacket() {
        for kind in 0..=super::SOCK_TYPE_MASK {
            let refused = super::PAIR_TYPES_REFUSED
                .iter()
                .any(|(mask, value)| kind & mask == *value);
            let allowed = kind == libc::SOCK_STREAM as u64 || kind == libc::SOCK_SEQPACKET as u64;
            assert_eq!(refused, !allowed, "type {kind}");
        }
    }
}

/// The same refusals as `seccompiler` programs, one per errno, and the hand-made x32 guard: what
/// the filter was before `bpf.rs`, kept as the reference the one program must agree with.
#[cfg(test)]
mod reference {
    use super::*;
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp as Op, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch, sock_filter,
    };
    use std::collections::{BTreeMap, BTreeSet};

    fn program(r: &Refusals, errno: i32) -> BpfProgram {
        let arch = match std::env::consts::ARCH {
            "x86_64" => TargetArch::x86_64,
            "aarch64" => TargetArch::aarch64,
            _ => TargetArch::riscv64,
        };
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        let mut always = BTreeSet::new();
        for (nr, rule) in &r.rules {
            if rule.conds.is_empty() {
                always.insert(*nr);
                continue;
            }
            let conds = rule
                .conds
                .iter()
                .map(|c| {
                    let (op, value) = match c.cmp {
                        Cmp::Eq(v) => (Op::Eq, v),
                        Cmp::Ne(v) => (Op::Ne, v),
                        Cmp::MaskedEq { mask, value } => (Op::MaskedEq(mask.into()), value),
                    };
                    SeccompCondition::new(c.arg, SeccompCmpArgLen::Dword, op, value.into()).unwrap()
                })
                .collect();
            rules
                .entry(*nr)
                .or_default()
                .push(SeccompRule::new(conds).unwrap());
        }
        for nr in always {
            rules.insert(nr, Vec::new());
        }
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )
        .unwrap();
        BpfProgram::try_from(filter).unwrap()
    }

    /// The programs the kernel ran before, in the order they were installed.
    pub(super) fn programs(plan: &SeccompPlan) -> Vec<BpfProgram> {
        let (eperm, enosys) = refusals(plan).unwrap();
        let mut out = vec![program(&eperm, libc::EPERM), program(&enosys, libc::ENOSYS)];
        if plan.refuse_other_abis
            && let Some(guard) = other_abis_guard()
        {
            out.push(guard);
        }
        out
    }

    /// x86_64 only: refuses every system call numbered in the x32 range (`__X32_SYSCALL_BIT` set,
    /// below the sign bit), EPERM. On a kernel built without x32 they fail anyway (ENOSYS); with
    /// x32 they are `socket`, `connect` and the rest under numbers the other filters do not name.
    /// EPERM rather than the kernel's ENOSYS, so that a test can tell this guard from the kernel.
    /// Hand-written because seccompiler matches numbers, not ranges; eight instructions.
    fn other_abis_guard() -> Option<BpfProgram> {
        #[cfg(target_arch = "x86_64")]
        {
            const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
            const X32_SYSCALL_BIT: u32 = 0x4000_0000;
            const SIGN_BIT: u32 = 0x8000_0000;
            // Offsets in `struct seccomp_data`: nr at 0, arch at 4.
            const NR: u32 = 0;
            const ARCH: u32 = 4;
            let stmt = |code: u32, k: u32| sock_filter {
                code: code as u16,
                jt: 0,
                jf: 0,
                k,
            };
            let jump = |code: u32, k: u32, jt: u8, jf: u8| sock_filter {
                code: code as u16,
                jt,
                jf,
                k,
            };
            let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
            let ret = libc::BPF_RET | libc::BPF_K;
            Some(vec![
                stmt(load, ARCH),
                // Another architecture: end the process, as the other filters do.
                jump(
                    libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
                    AUDIT_ARCH_X86_64,
                    1,
                    0,
                ),
                stmt(ret, libc::SECCOMP_RET_KILL_PROCESS),
                stmt(load, NR),
                // At or above the sign bit: not x32 (negative numbers, which the kernel refuses).
                jump(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K, SIGN_BIT, 2, 0),
                jump(
                    libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
                    X32_SYSCALL_BIT,
                    0,
                    1,
                ),
                stmt(ret, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
                stmt(ret, libc::SECCOMP_RET_ALLOW),
            ])
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }

    /// What the kernel gives for several programs: the most restrictive action, and for two of
    /// the same the one installed last (it runs first).
    pub(super) fn run_all(programs: &[BpfProgram], data: &[u32; 16]) -> u32 {
        let mut best: Option<u32> = None;
        for p in programs.iter().rev() {
            let ret = super::bpf::run(p, data);
            let action = |r: u32| (r & libc::SECCOMP_RET_ACTION_FULL) as i32;
            if best.is_none_or(|b| action(ret) < action(b)) {
                best = Some(ret);
            }
        }
        best.unwrap()
    }

    #[allow(dead_code)]
    fn _uses(_: sock_filter) {}
}

#[cfg(test)]
mod one_program {
    use super::*;
    use std::collections::BTreeSet;

    /// Every call number the programs could tell apart, with argument words that hit each
    /// comparison of each rule (equal, one off, masked in and out) and some that hit none.
    fn cases(filter: &Filter) -> Vec<[u32; 16]> {
        let mut words: BTreeSet<u32> = [
            0,
            1,
            2,
            3,
            5,
            7,
            0x800,
            0x80000,
            0o4000,
            0o2000,
            0o6755,
            u32::MAX,
        ]
        .into_iter()
        .collect();
        for (_, rule) in &filter.rules {
            for cond in &rule.conds {
                let (a, b) = match cond.cmp {
                    Cmp::Eq(v) | Cmp::Ne(v) => (v, v),
                    Cmp::MaskedEq { mask, value } => (value, mask),
                };
                for w in [
                    a,
                    a.wrapping_add(1),
                    a.wrapping_sub(1),
                    b,
                    !b,
                    a | !b,
                    a ^ b,
                ] {
                    words.insert(w);
                }
            }
        }
        let words: Vec<u32> = words.into_iter().collect();
        let mut numbers: Vec<u32> = (0..520).collect();
        numbers.extend([
            0x4000_0000,
            0x4000_0029,
            0x4000_0136,
            0x7fff_ffff,
            0x8000_0000,
            u32::MAX,
        ]);
        let mut out = Vec::new();
        for nr in numbers {
            for (i, w) in words.iter().enumerate() {
                let mut data = [0u32; 16];
                data[0] = nr;
                data[1] = filter.arch;
                // Six arguments, low words at 4 + 2 * arg: a different mix for each case.
                for arg in 0..6usize {
                    data[4 + 2 * arg] = words[(i + arg * 3) % words.len()];
                }
                data[4 + 2 * (i % 6)] = *w;
                out.push(data);
            }
        }
        // Another architecture.
        let mut other = [0u32; 16];
        other[1] = 0x4000_0003; // AUDIT_ARCH_I386
        out.push(other);
        out
    }

    #[test]
    fn the_one_program_gives_what_seccompilers_three_gave_for_every_call_and_argument() {
        for (unix_by_seccomp, plan) in every_kind_of_plan() {
            let one = filter(&plan).unwrap();
            let program = one.compile().unwrap();
            let before = reference::programs(&plan);
            let cases = cases(&one);
            for data in &cases {
                assert_eq!(
                    bpf::run(&program, data),
                    reference::run_all(&before, data),
                    "call {:#x} arguments {:x?} (unix by seccomp: {unix_by_seccomp})",
                    data[0],
                    &data[4..16]
                );
            }
            let old: usize = before.iter().map(Vec::len).sum();
            assert!(
                program.len() <= old,
                "{} instructions where there were {old}",
                program.len()
            );
        }
    }
}
