//! The chat's own network (`[policy] network = "isolated"`), applied: what the helper does for
//! it, and what init does.
//!
//! Init is cloned into a new network namespace (`apply`), which has only a loopback interface,
//! down. Before init goes on, the helper starts `pasta` ([`Pasta::start`]) for init's user and
//! network namespaces: pasta brings the namespace's loopback up, makes an interface there with
//! the plan's addresses and routes, and then carries the chat's connections out, each as a socket
//! of its own on the machine. The helper waits until pasta says the interface is configured
//! (it writes its pid to a pipe once it is), so the program never starts without its network.
//! Pasta lives exactly as long as the chat: the helper ends it when init has ended, and the
//! kernel ends it should the helper die first (`PR_SET_PDEATHSIG`).
//!
//! What pasta is, as far as the chat is concerned:
//! - **Unreachable.** It runs in the helper's PID namespace (the chat cannot name it: no signal,
//!   no ptrace, no `/proc/PID`), in a session of its own (a terminal's Ctrl-C does not reach it),
//!   with nothing inherited but the two namespaces, the readiness pipe and its log. It then
//!   isolates itself: an empty mount namespace of its own, no capability outside the chat's user
//!   namespace, not dumpable, its own seccomp filter.
//! - **The chat's way out, and only that.** Every connection the chat makes to an address outside
//!   is opened by pasta on the machine's network. The plan switches off what would reach the
//!   machine's loopback (the gateway mapped to it, ports forwarded either way). One thing this
//!   pasta would still do: forward a packet that names 127.0.0.1 as its destination, were one
//!   handed to it. The kernel never routes such a packet out of the namespace's interface; only
//!   a process with `CAP_NET_RAW` or `CAP_NET_ADMIN` in the chat's namespaces could make one, and
//!   the program has no capability at all (`caps`). The tests attack both sides.
//! - **As the launcher's user.** Run by root, pasta stays uid 0 (it must: the chat's user
//!   namespace belongs to root, and only its owner may join it), without any capability outside
//!   the chat's user namespace.
//!
//! What it is not: the decision. Whether a chat gets its own network, and with which options
//! pasta runs, is the plan's ([`super::plan::NetworkPlan`]).

use std::ffi::CString;
use std::io::{self, Read, Seek};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::sys::{
    self, ApplyError, attach_tree, clone_tree, cstr, detach, fail, kill, mkdir, mount, os_fail,
};
use crate::plan::format::NetworkPlan;

/// How long pasta may take to configure the namespace (it takes a few tens of milliseconds).
const READY_WITHIN: Duration = Duration::from_secs(10);
/// The most pasta's log may hold (it keeps the latest lines within it).
const LOG_SIZE: &str = "65536";
/// The tun device pasta opens for the namespace's interface.
const TUN: &str = "/dev/net/tun";

/// Where the descriptors pasta is given sit in its table.
const USERNS_FD: RawFd = 3;
const NETNS_FD: RawFd = 4;
const READY_FD: RawFd = 5;

/// A running pasta, the helper's child. Ended when dropped ([`Pasta::stop`]).
pub(super) struct Pasta {
    pid: libc::pid_t,
}

impl Pasta {
    /// Starts pasta for `init`'s user and network namespaces and waits until the namespace's
    /// interface is configured. `init` must be the helper's child, not yet going on (its
    /// namespaces are opened here, while it waits).
    pub(super) fn start(net: &NetworkPlan, init: libc::pid_t) -> Result<Pasta, ApplyError> {
        let program = trusted_program(&net.pasta)?;
        check_tun()?;
        let userns = open_ns(init, "user")?;
        let netns = open_ns(init, "net")?;
        let (ready_read, ready_write) = sys::pipe()?;
        let log = memfd("cli-sandbox-pasta-log")?;

        let (uid, gid) = sys::real_ids();
        let fd_path = |fd: RawFd| format!("/proc/self/fd/{fd}");
        let mut args: Vec<String> = vec!["pasta".into()];
        args.extend(net.pasta_args.iter().cloned());
        args.extend([
            "--runas".into(),
            format!("{uid}:{gid}"),
            "--userns".into(),
            fd_path(USERNS_FD),
            "--netns".into(),
            fd_path(NETNS_FD),
            "--pid".into(),
            fd_path(READY_FD),
            "--log-file".into(),
            fd_path(2),
            "--log-size".into(),
            LOG_SIZE.into(),
        ]);
        let child = Child {
            program: cstr(&program)?,
            argv: args
                .into_iter()
                .map(|a| CString::new(a).map_err(|_| fail("pasta", "an argument holds a NUL")))
                .collect::<Result<_, _>>()?,
            // (from, to): moved into place in the child.
            fds: [
                (userns.as_raw_fd(), USERNS_FD),
                (netns.as_raw_fd(), NETNS_FD),
                (ready_write.as_raw_fd(), READY_FD),
                (log.as_raw_fd(), 2),
            ],
            no_signals: sys::signal_set(&[]),
        };
        let pid = child.spawn()?;
        let pasta = Pasta { pid };
        // Pasta holds its own copies now: with ours closed, the pipe ends when pasta does.
        drop((userns, netns, ready_write));
        match wait_ready(&ready_read, pid) {
            Ok(()) => Ok(pasta),
            Err(why) => {
                pasta.stop();
                Err(fail("network (pasta)", format!("{why}{}", log_tail(log))))
            }
        }
    }

    /// Ends pasta and reaps it, so that no process of the chat's is left when the launch ends.
    pub(super) fn stop(self) {
        drop(self);
    }
}

impl Drop for Pasta {
    fn drop(&mut self) {
        kill(self.pid, libc::SIGKILL);
        loop {
            let mut status = 0;
            // SAFETY: waiting for our own child, with a valid out-parameter.
            let got = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if got == self.pid
                || (got < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR))
            {
                break;
            }
        }
    }
}

/// The program pasta is, once symlinks are resolved, if only root can change it: the file and
/// every folder above it owned by root and writable by no one else. The helper runs it outside
/// the sandbox (as root, for a root launcher); a program someone else could replace would run
/// in its place.
fn trusted_program(path: &Path) -> Result<PathBuf, ApplyError> {
    let step = || format!("network: pasta at {}", path.display());
    let real = std::fs::canonicalize(path).map_err(|e| {
        fail(
            step(),
            format!(
                "{e}: `[policy] network = \"isolated\"` needs pasta: apt-get install passt (or set network = \"shared\")"
            ),
        )
    })?;
    for (i, at) in real.ancestors().enumerate() {
        let meta = std::fs::symlink_metadata(at).map_err(|e| fail(step(), e))?;
        let writable_by_others = meta.mode() & 0o022 != 0;
        if meta.uid() != 0 || writable_by_others || (i == 0 && !meta.is_file()) {
            return Err(fail(
                step(),
                format!(
                    "{} is {}: only a program that root alone can change is run outside the sandbox",
                    at.display(),
                    if meta.uid() != 0 {
                        format!("owned by uid {}", meta.uid())
                    } else if writable_by_others {
                        format!("writable by others (mode {:o})", meta.mode() & 0o7777)
                    } else {
                        "not a file".to_owned()
                    }
                ),
            ));
        }
    }
    Ok(real)
}

/// Pasta makes the namespace's interface with the tun device; as an ordinary user it needs the
/// device readable and writable (mode 0666, what udev gives it), which some machines do not.
fn check_tun() -> Result<(), ApplyError> {
    let c = CString::new(TUN).expect("static path");
    // SAFETY: `c` is a C string alive for the call; access only reads it.
    if unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::W_OK) } == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    // SAFETY: getuid has no failure and touches no memory.
    let uid = unsafe { libc::getuid() };
    Err(fail(
        "network",
        match err.kind() {
            io::ErrorKind::NotFound => format!(
                "{TUN} is missing, and pasta needs it for the chat's own network: load the tun module (modprobe tun), give a container the device (--device /dev/net/tun), or set network = \"shared\""
            ),
            _ => format!(
                "{TUN} cannot be opened by uid {uid} ({err}), and pasta needs it for the chat's own network: it is usually mode 0666 (chmod 0666 {TUN}); or set network = \"shared\""
            ),
        },
    ))
}

/// `/proc/PID/ns/NAME` of init, opened by the helper (init's parent, owner of its user
/// namespace).
fn open_ns(init: libc::pid_t, name: &str) -> Result<OwnedFd, ApplyError> {
    let path = format!("/proc/{init}/ns/{name}");
    std::fs::File::open(&path)
        .map(OwnedFd::from)
        .map_err(|e| fail(format!("network: open {path}"), e))
}

/// An anonymous file (no name anyone could open), close-on-exec.
fn memfd(name: &str) -> Result<OwnedFd, ApplyError> {
    let c = CString::new(name).expect("static name");
    // SAFETY: `c` is a C string alive for the call (memfd_create copies the name); the flags
    // are integers.
    let fd = unsafe { libc::memfd_create(c.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(os_fail("network: memfd_create"));
    }
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Everything the child needs, made before the fork: after it, the child only makes system
/// calls (no allocation, no lock), as a fork of a process must.
struct Child {
    program: CString,
    argv: Vec<CString>,
    fds: [(RawFd, RawFd); 4],
    no_signals: libc::sigset_t,
}

impl Child {
    fn spawn(&self) -> Result<libc::pid_t, ApplyError> {
        let mut argv: Vec<*const libc::c_char> = self.argv.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let envp: [*const libc::c_char; 1] = [std::ptr::null()];
        let null = CString::new("/dev/null").expect("static path");
        // SAFETY: getpid has no failure and touches no memory.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the helper is single-threaded (checked before init's clone), so the child
        // is a whole copy; it runs only `exec_child`, which makes system calls and never
        // returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(os_fail("network: fork pasta"));
        }
        if pid == 0 {
            // SAFETY: in the forked child; every pointer was made before the fork and stays
            // valid in the copy.
            unsafe { exec_child(self, parent, &argv, &envp, &null) };
        }
        Ok(pid)
    }
}

/// The forked child: a session of its own, killed with the helper, the descriptors in place and
/// nothing else, signals as a new program expects them, then pasta. Exits 127 on any failure
/// (the helper then sees the readiness pipe close and reports pasta's log).
///
/// # Safety
/// Only in a child just forked from the single-threaded helper, with pointers valid there.
unsafe fn exec_child(
    child: &Child,
    parent: libc::pid_t,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    null: &CString,
) -> ! {
    let die = || -> ! {
        // SAFETY: leaving the child without running anything of the parent's.
        unsafe { libc::_exit(127) }
    };
    // SAFETY: setsid touches no memory and is async-signal-safe.
    if unsafe { libc::setsid() } < 0 {
        die();
    }
    // SAFETY: PR_SET_PDEATHSIG takes a signal number and reads or writes no memory; prctl is a
    // plain system call, safe after fork.
    if unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    } != 0
    {
        die();
    }
    // The helper may have died before the line above: then nobody would end pasta.
    // SAFETY: getppid has no failure and touches no memory.
    if unsafe { libc::getppid() } != parent {
        die();
    }
    // Every source first moved above the targets (close-on-exec copies), then into place:
    // a source that sits where another belongs is never overwritten before it is moved.
    let mut moved = [-1; 4];
    for (i, (from, _)) in child.fds.iter().enumerate() {
        // SAFETY: `from` is a descriptor the helper opened for pasta (inherited by this child);
        // fcntl touches no memory and is async-signal-safe.
        moved[i] = unsafe { libc::fcntl(*from, libc::F_DUPFD_CLOEXEC, 10) };
        if moved[i] < 0 {
            die();
        }
    }
    for (i, (_, to)) in child.fds.iter().enumerate() {
        // SAFETY: `moved[i]` was made by this child just above; dup2 (async-signal-safe) puts
        // it where pasta expects it, without close-on-exec.
        if unsafe { libc::dup2(moved[i], *to) } != *to {
            die();
        }
    }
    // SAFETY: `null` is a C string made before the fork, valid in this copy; open is
    // async-signal-safe.
    let devnull = unsafe { libc::open(null.as_ptr(), libc::O_RDWR) };
    if devnull < 0 {
        die();
    }
    for to in [0, 1] {
        // SAFETY: `devnull` was just opened by this child; dup2 onto stdin/stdout replaces the
        // helper's copies (only pasta runs here) and is async-signal-safe.
        if unsafe { libc::dup2(devnull, to) } != to {
            die();
        }
    }
    let last = child.fds.iter().map(|(_, to)| *to).max().unwrap_or(2);
    // SAFETY: closes descriptors of this process that pasta must not hold (the caller's leaked
    // ones among them).
    if unsafe { libc::syscall(libc::SYS_close_range, (last + 1) as u32, u32::MAX, 0u32) } != 0 {
        die();
    }
    // The helper blocks the signals it reads from a descriptor, and Rust ignores SIGPIPE; an
    // ignored signal stays ignored across exec, and pasta refuses to start with SIGPIPE ignored.
    // SAFETY: `no_signals` was filled before the fork and lives in this copy; the old mask is
    // not asked for; sigprocmask is async-signal-safe.
    if unsafe { libc::sigprocmask(libc::SIG_SETMASK, &child.no_signals, std::ptr::null_mut()) } != 0
    {
        die();
    }
    // SAFETY: SIG_DFL for SIGPIPE installs no handler of ours; signal is async-signal-safe.
    if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) } == libc::SIG_ERR {
        die();
    }
    // SAFETY: the program and both arrays were made before the fork and are NULL-terminated
    // arrays of C strings, valid in this copy; execve returns only on failure, which `die`
    // reports by exiting 127.
    unsafe { libc::execve(child.program.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    die()
}

/// Waits for pasta's pid on the readiness pipe: pasta writes it once the namespace's interface
/// is up, addressed and routed. The pipe closes without it when pasta fails.
fn wait_ready(ready: &OwnedFd, pid: libc::pid_t) -> Result<(), String> {
    let start = Instant::now();
    let mut text = Vec::new();
    loop {
        let left = READY_WITHIN.saturating_sub(start.elapsed());
        let mut fds = [libc::pollfd {
            fd: ready.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: `fds` is a local array of one pollfd, alive for the call; its length is passed.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 1, left.as_millis() as libc::c_int) };
        if rc < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("waiting for pasta: {}", io::Error::last_os_error()));
        }
        if rc == 0 {
            return Err(format!(
                "pasta did not configure the chat's network within {} s",
                READY_WITHIN.as_secs()
            ));
        }
        let mut buf = [0u8; 32];
        // SAFETY: `buf` is a local buffer of `buf.len()` bytes, the most read writes; `ready` is
        // the pipe end this function owns.
        let n = unsafe { libc::read(ready.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!(
                "reading pasta's pid: {}",
                io::Error::last_os_error()
            ));
        }
        if n == 0 {
            return Err("pasta ended before the chat's network was up".into());
        }
        text.extend_from_slice(&buf[..n as usize]);
        if text.ends_with(b"\n") {
            let said = String::from_utf8_lossy(&text);
            return match said.trim().parse::<libc::pid_t>() {
                Ok(p) if p == pid => Ok(()),
                _ => Err(format!(
                    "pasta reported {:?} as its pid, not {pid}",
                    said.trim()
                )),
            };
        }
    }
}

/// The end of pasta's log, for an error message.
fn log_tail(log: OwnedFd) -> String {
    let mut file = std::fs::File::from(log);
    let mut text = String::new();
    if file.rewind().is_err() || file.read_to_string(&mut text).is_err() {
        return String::new();
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !l.contains("Failed to send") && !l.contains("to syslog"))
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = &lines[lines.len().saturating_sub(8)..];
    format!("; pasta said: {}", tail.join(" / "))
}

/// Init's part, while it still holds its capabilities in the chat's namespaces: the machine's
/// loopback addresses delivered inside even when a socket names the outer interface.
///
/// The kernel sends a packet for `127.0.0.1` or `::1` out of the outer interface when the
/// socket is tied to it (`SO_BINDTODEVICE`, `SO_BINDTOIFINDEX`, `IP_UNICAST_IF`, an
/// `IP_PKTINFO` naming it: none needs a capability), and pasta forwards such a
/// packet to the machine's loopback (measured; the replies never come back, but a UDP datagram
/// or a TCP handshake reaches the server). A route of the `local` kind for `127.0.0.0/8` and
/// `::1` through the outer interface, in the table the kernel reads first, makes those lookups
/// end inside: delivered to the chat's own stack, never to the interface. (An `unreachable`
/// route does not do it: a lookup tied to an interface that finds no route sends the packet out
/// of that interface anyway, as if on its link.) Routes need `CAP_NET_ADMIN`, which the
/// program has not, so it cannot take them away.
pub(super) fn keep_loopback_inside(net: &NetworkPlan) -> Result<(), ApplyError> {
    use netlink_packet_core::{
        NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage,
        NetlinkPayload,
    };
    use netlink_packet_route::route::{
        RouteAddress, RouteAttribute, RouteMessage, RouteProtocol, RouteScope, RouteType,
    };
    use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
    use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

    let step = |what: &str| format!("network: {what}");
    let name = CString::new(net.interface.as_str())
        .map_err(|_| fail(step("interface"), "the name holds a NUL"))?;
    // SAFETY: `name` is a C string alive for the call; if_nametoindex only reads it.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(os_fail(step(&format!("find interface {}", net.interface))));
    }
    let mut socket = Socket::new(NETLINK_ROUTE).map_err(|e| fail(step("netlink socket"), e))?;
    socket
        .bind_auto()
        .map_err(|e| fail(step("bind the netlink socket"), e))?;
    socket
        .connect(&SocketAddr::new(0, 0))
        .map_err(|e| fail(step("connect the netlink socket"), e))?;
    /// The table the kernel looks in first (`ip rule`'s priority 0).
    const TABLE_LOCAL: u8 = 255;
    let routes = [
        (
            AddressFamily::Inet,
            RouteAddress::Inet(std::net::Ipv4Addr::new(127, 0, 0, 0)),
            8,
        ),
        (
            AddressFamily::Inet6,
            RouteAddress::Inet6(std::net::Ipv6Addr::LOCALHOST),
            128,
        ),
    ];
    for (sequence, (family, destination, prefix)) in routes.into_iter().enumerate() {
        let shown = format!("{destination:?}/{prefix}");
        let mut route = RouteMessage::default();
        route.header.address_family = family;
        route.header.destination_prefix_length = prefix;
        route.header.table = TABLE_LOCAL;
        route.header.protocol = RouteProtocol::Static;
        route.header.scope = RouteScope::Host;
        route.header.kind = RouteType::Local;
        route.attributes = vec![
            RouteAttribute::Destination(destination),
            RouteAttribute::Oif(index),
            // Beside the kernel's own route through `lo` (priority 0), not in its place.
            RouteAttribute::Priority(1),
        ];
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
        header.sequence_number = sequence as u32 + 1;
        let mut message = NetlinkMessage::new(
            header,
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(route)),
        );
        message.finalize();
        let mut buf = vec![0u8; message.buffer_len()];
        message.serialize(&mut buf);
        socket
            .send(&buf, 0)
            .map_err(|e| fail(step(&format!("add the route {shown}")), e))?;
        let mut answer = vec![0u8; 8192];
        let n = socket
            .recv(&mut &mut answer[..], 0)
            .map_err(|e| fail(step(&format!("add the route {shown}")), e))?;
        let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&answer[..n])
            .map_err(|e| fail(step(&format!("add the route {shown}")), e))?;
        match reply.payload {
            NetlinkPayload::Error(e) if e.code.is_none() => {}
            NetlinkPayload::Error(e) => {
                let err = io::Error::from_raw_os_error(-e.raw_code());
                // Without IPv6 in the kernel or on the interface, nothing leaves through it
                // by IPv6 either: nothing to close.
                if family == AddressFamily::Inet6 && !ipv6_on(&net.interface) {
                    continue;
                }
                return Err(fail(step(&format!("add the route {shown}")), err));
            }
            other => {
                return Err(fail(
                    step(&format!("add the route {shown}")),
                    format!("unexpected answer {other:?}"),
                ));
            }
        }
    }
    Ok(())
}

/// Whether IPv6 is on for `interface` in this network namespace.
fn ipv6_on(interface: &str) -> bool {
    std::fs::read_to_string(format!("/proc/sys/net/ipv6/conf/{interface}/disable_ipv6"))
        .is_ok_and(|v| v.trim() == "0")
}

/// Init's part: the chat's `/etc/resolv.conf` names the resolver pasta relays (the plan's
/// `dns`), then the machine's own lines but its resolvers (`search`, `options`). Bound over the
/// machine's file (or over the symlink in its place) from a small read-only tmpfs of the
/// sandbox's own, so that nothing outside changes. A machine without `/etc/resolv.conf` has no
/// resolver named for the chat either: nothing to do.
pub(super) fn resolv_conf(net: &NetworkPlan) -> Result<(), ApplyError> {
    let target = Path::new("/etc/resolv.conf");
    if target.symlink_metadata().is_err() {
        return Ok(());
    }
    // A dangling link or an unreadable file: the chat gets the relayed resolver alone.
    let host = std::fs::read_to_string(target).unwrap_or_default();
    let text = resolv_conf_text(&host, &net.dns);

    let dir = Path::new("/dev/.cli-sandbox-network");
    let file = dir.join("resolv.conf");
    mkdir(dir, 0o700)?;
    mount(
        Some(Path::new("tmpfs")),
        dir,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        Some("mode=0755,size=16k"),
    )?;
    std::fs::write(&file, text).map_err(|e| fail(format!("write {}", file.display()), e))?;
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .map_err(|e| fail(format!("chmod {}", file.display()), e))?;
    mount(
        None,
        dir,
        None,
        libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )?;
    let tree = clone_tree(&file, false)?;
    attach_tree(&tree, target)?;
    // The file's own mount stays alive under /etc/resolv.conf; nothing else names it.
    detach(dir)?;
    std::fs::remove_dir(dir).map_err(|e| fail(format!("remove {}", dir.display()), e))
}

/// The text of the chat's `/etc/resolv.conf`.
fn resolv_conf_text(host: &str, dns: &str) -> String {
    let mut text = format!(
        "# cli-sandbox: the chat's own network; pasta relays DNS sent here to the machine's resolver.\nnameserver {dns}\n"
    );
    for line in host.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first != "nameserver"
            && !line.trim_start().starts_with(['#', ';'])
            && !line.trim().is_empty()
        {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chats_resolver_is_the_relayed_one_and_the_machines_other_lines_stay() {
        let host = "# generated\nnameserver 127.0.0.53\nnameserver ::1\nsearch corp.example\noptions edns0 trust-ad\n\n";
        let text = resolv_conf_text(host, "198.18.0.1");
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            [
                "nameserver 198.18.0.1",
                "search corp.example",
                "options edns0 trust-ad"
            ]
        );
    }

    #[test]
    fn a_program_others_can_change_is_not_run() {
        let tmp = tempfile::tempdir().unwrap();
        let program = tmp.path().join("pasta");
        std::fs::write(&program, "").unwrap();
        // A temporary folder: writable by others (/tmp) or not owned by root.
        let err = trusted_program(&program).unwrap_err();
        assert!(
            err.detail.contains("only a program that root alone"),
            "{err}"
        );
        let missing = trusted_program(&tmp.path().join("missing")).unwrap_err();
        assert!(
            missing.detail.contains("apt-get install passt"),
            "{missing}"
        );
    }
}
