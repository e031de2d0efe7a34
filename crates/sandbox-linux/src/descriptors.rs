//! The standard descriptors (stdin, stdout, stderr) the program inherits, checked before it
//! starts.
//!
//! They are the one thing from outside that the program keeps: every descriptor above stderr
//! is closed before it starts. Most are harmless (a terminal, a pipe, a file, `/dev/null`), and
//! a connected stream socket reaches only the peer that the launcher chose (node's
//! `child_process` gives its children such sockets). Some would be a way out that no filter
//! sees, since the system calls on them are the ordinary ones the program needs:
//!
//! - a unix datagram socket: `sendto()` names any datagram socket outside (journald, a notify
//!   socket, another user's server), and `connect()` re-points it;
//! - a unix stream or seqpacket socket that is not connected: `connect()` reaches any server;
//! - a socket of another family than unix, inet or inet6 (netlink, vsock, ...): the families
//!   the seccomp filter refuses to create, and for the same reasons;
//! - a folder or an `O_PATH` handle: `openat()` beneath it, or opening it again through
//!   `/proc/self/fd`, goes around the mounts that mask the protected roots;
//! - a block device: reading it reads every file on it;
//! - anything else the kernel gives as a descriptor (an io_uring, whose SQPOLL thread would run
//!   operations without any system call; a pidfd; an eventfd): no program's standard stream.
//!
//! Such a launch is refused with an error naming the descriptor and what to give instead. This
//! checks kinds, not contents: a file or a terminal given on purpose is the launcher's choice.
//! A listening unix socket is accepted (it only takes connections others choose to make, and
//! `connect()` and `sendto()` on it fail); so are inet sockets (the network is open).

use std::io;

use super::sys::ApplyError;

const STANDARD: [(libc::c_int, &str); 3] = [(0, "stdin"), (1, "stdout"), (2, "stderr")];

/// Refuses to start the program when stdin, stdout or stderr could reach outside the sandbox
/// (see the module doc). A closed descriptor is fine.
pub fn check_standard_descriptors() -> Result<(), ApplyError> {
    for (fd, name) in STANDARD {
        if let Some(why) = refusal(fd, name)? {
            return Err(ApplyError {
                step: format!("{name} (descriptor {fd})"),
                detail: format!(
                    "{why}. Start it with {name} a terminal, a pipe, a file, /dev/null or a connected stream socket instead"
                ),
            });
        }
    }
    Ok(())
}

fn os_error(name: &str, call: &str) -> ApplyError {
    ApplyError {
        step: format!("check {name}"),
        detail: format!("{call}: {}", io::Error::last_os_error()),
    }
}

/// Why `fd` may not be inherited, or `None` when it may.
fn refusal(fd: libc::c_int, name: &str) -> Result<Option<String>, ApplyError> {
    // SAFETY: a zeroed `stat` is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes only into `st`, which lives for the call.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        if io::Error::last_os_error().raw_os_error() == Some(libc::EBADF) {
            return Ok(None);
        }
        return Err(os_error(name, "fstat"));
    }
    // SAFETY: F_GETFL reads the descriptor's flags; no memory involved.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(os_error(name, "fcntl"));
    }
    if flags & libc::O_PATH != 0 {
        return Ok(Some(
            "is an O_PATH handle: opening it again through /proc/self/fd would go around the mounts that close the protected folders".into(),
        ));
    }
    Ok(match st.st_mode & libc::S_IFMT {
        libc::S_IFREG | libc::S_IFCHR | libc::S_IFIFO => None,
        libc::S_IFSOCK => socket_refusal(fd, name)?,
        libc::S_IFDIR => Some(
            "is a folder: the program could open anything beneath it, what the sandbox masks included".into(),
        ),
        libc::S_IFBLK => Some("is a block device: reading it reads every file on it".into()),
        _ => Some(format!(
            "is {}, not a file, a pipe, a terminal or a socket: an io_uring given this way would run operations that no filter sees",
            anonymous_kind(fd)
        )),
    })
}

/// What the kernel calls a descriptor without a file behind it (`anon_inode:[io_uring]`), for
/// the error message; `/proc` may be missing, then it is named generically.
fn anonymous_kind(fd: libc::c_int) -> String {
    match std::fs::read_link(format!("/proc/self/fd/{fd}")) {
        Ok(target) => format!("`{}`", target.display()),
        Err(_) => "a kernel object (an io_uring, a pidfd, an eventfd, ...)".into(),
    }
}

fn socket_option(fd: libc::c_int, option: libc::c_int, name: &str) -> Result<i32, ApplyError> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are valid for writing and `len` is `value`'s size.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(os_error(name, "getsockopt"));
    }
    Ok(value)
}

fn socket_refusal(fd: libc::c_int, name: &str) -> Result<Option<String>, ApplyError> {
    let domain = socket_option(fd, libc::SO_DOMAIN, name)?;
    let kind = socket_option(fd, libc::SO_TYPE, name)?;
    match domain {
        // The network is open by the owner's decision (see SECURITY.md).
        libc::AF_INET | libc::AF_INET6 => Ok(None),
        libc::AF_UNIX => match kind {
            libc::SOCK_STREAM | libc::SOCK_SEQPACKET => {
                if socket_option(fd, libc::SO_ACCEPTCONN, name)? != 0 || connected(fd, name)? {
                    Ok(None)
                } else {
                    Ok(Some(
                        "is a unix socket that is not connected: connect() would reach any server outside the sandbox (tmux, the session bus, a CLI's daemon)".into(),
                    ))
                }
            }
            _ => Ok(Some(
                "is a unix datagram socket: the program could send through it to any datagram socket outside the sandbox (journald, a notify socket, a server of another user), and connect it to one".into(),
            )),
        },
        other => Ok(Some(format!(
            "is a socket of family {other}, which the sandbox does not let programs create (netlink, vsock and the like reach processes or hosts outside)"
        ))),
    }
}

/// Whether a stream or seqpacket socket has a peer.
fn connected(fd: libc::c_int, name: &str) -> Result<bool, ApplyError> {
    // SAFETY: a zeroed `sockaddr_storage` is a valid out-parameter.
    let mut address: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `address` and `len` are valid for writing and `len` is `address`'s size.
    let rc = unsafe {
        libc::getpeername(
            fd,
            (&mut address as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        return Ok(true);
    }
    if io::Error::last_os_error().raw_os_error() == Some(libc::ENOTCONN) {
        return Ok(false);
    }
    Err(os_error(name, "getpeername"))
}
