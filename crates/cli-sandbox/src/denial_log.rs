//! Where this machine records what a chat was refused, for `doctor`: the kernel reports a
//! refusal only where the mechanism that refused it can log (Landlock's audit records on Linux,
//! Seatbelt's log lines on macOS); the namespace plan's mounts (a closed root's empty stand-in, a
//! read-only grant) refuse without a trace anywhere. `docs/linux.md` and `docs/macos.md`, "Seeing
//! a denial", say how to read each.

use serde::Serialize;

/// Whether refusals are recorded, and where or why not.
#[derive(Debug, Serialize)]
pub struct DenialLog {
    /// Whether the kernel records (some of) a chat's refusals now.
    pub recorded: bool,
    /// Where to read them, or why nothing is recorded and what would change it.
    pub how: String,
    /// What is never recorded on this backend, in words.
    pub never: String,
}

/// What mounts refuse: nothing records it; `explain` tells it.
#[cfg(target_os = "linux")]
const MOUNTS: &str = "refusals made by the namespace plan's mounts (a closed root's empty \
    stand-in: `No such file or directory` inside it, `Permission denied` listing it; a read-only \
    grant: `Read-only file system`) are recorded nowhere: `cli-sandbox explain` says which rule \
    refuses a path, from inside a chat too";

/// On Linux: Landlock's records need ABI 7 (audit support), the kernel's audit on, and root to
/// read them.
#[cfg(target_os = "linux")]
pub fn probe(landlock_abi: Option<u32>) -> DenialLog {
    let never = MOUNTS.to_owned();
    let abi = landlock_abi.unwrap_or(0);
    if abi < 7 {
        return DenialLog {
            recorded: false,
            how: format!(
                "nothing: Landlock ABI {abi} has no audit records (ABI 7, Linux 6.15, added them)"
            ),
            never,
        };
    }
    let (recorded, how) = match audit_enabled() {
        Ok(true) => (
            true,
            "Landlock's refusals go to the kernel's audit log (records 1423 and 1424): \
             `ausearch -i -m 1423,1424` with auditd, else `dmesg | grep -E 'type=142[34]'`"
                .to_owned(),
        ),
        Ok(false) => (
            false,
            "nothing: the kernel's audit is off (`auditctl -s`: enabled 0); `auditctl -e 1`, as \
             root, turns it on until reboot (or boot with audit=1), and Landlock's refusals are \
             then recorded (records 1423 and 1424)"
                .to_owned(),
        ),
        Err(why) => (
            false,
            format!(
                "cannot tell: {why}; Landlock's refusals are recorded only while the kernel's \
                 audit is on (`auditctl -s`, as root)"
            ),
        ),
    };
    DenialLog {
        recorded,
        how,
        never,
    }
}

/// On macOS: the unified log keeps Seatbelt's denials, each tagged with our rule.
#[cfg(target_os = "macos")]
pub fn probe(_landlock_abi: Option<u32>) -> DenialLog {
    DenialLog {
        recorded: true,
        how: "Seatbelt's denials are in the unified log, each tagged `cli-sandbox: RULE`: \
              `log stream --style compact --predicate 'sender == \"Sandbox\"'` in a plain Terminal"
            .to_owned(),
        never: "nothing the profile denies goes unlogged, but `log` itself cannot run inside a \
                chat"
            .to_owned(),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn probe(_landlock_abi: Option<u32>) -> DenialLog {
    DenialLog {
        recorded: false,
        how: "nothing: no backend confines on this OS".to_owned(),
        never: String::new(),
    }
}

/// The kernel's audit `enabled` flag, asked with `AUDIT_GET` on a netlink audit socket (the
/// question `auditctl -s` asks). Only a process with `CAP_AUDIT_CONTROL` gets an answer.
#[cfg(target_os = "linux")]
fn audit_enabled() -> Result<bool, String> {
    use netlink_sys::{Socket, protocols::NETLINK_AUDIT};
    /// `AUDIT_GET` (linux/audit.h): the status, answered with a `struct audit_status`.
    const AUDIT_GET: u16 = 1000;
    /// `NLMSG_ERROR`: the kernel's refusal, a negative errno after the header.
    const NLMSG_ERROR: u16 = 2;
    const NLM_F_REQUEST: u16 = 1;
    let mut socket = Socket::new(NETLINK_AUDIT).map_err(|e| format!("no audit socket ({e})"))?;
    socket
        .bind_auto()
        .map_err(|e| format!("the audit socket cannot be bound ({e})"))?;
    // A request with no payload: struct nlmsghdr { len, type, flags, seq, pid }, native endian
    // (netlink-packet-audit, which would write it, is not a dependency for 16 bytes).
    let mut request = Vec::with_capacity(16);
    request.extend_from_slice(&16u32.to_ne_bytes());
    request.extend_from_slice(&AUDIT_GET.to_ne_bytes());
    request.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    request.extend_from_slice(&1u32.to_ne_bytes());
    request.extend_from_slice(&0u32.to_ne_bytes());
    socket
        .send(&request, 0)
        .map_err(|e| format!("the audit status cannot be asked ({e})"))?;
    // The kernel answers from its audit thread, a moment later; a missing answer must not hang
    // doctor, so it is waited for up to a second.
    socket
        .set_non_blocking(true)
        .map_err(|e| format!("the audit socket ({e})"))?;
    let mut reply = Vec::with_capacity(256);
    let mut tries = 0;
    loop {
        match socket.recv(&mut reply, 0) {
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => return Err(format!("no answer from the kernel's audit ({e})")),
        }
    }
    let u16_at = |at: usize| {
        reply
            .get(at..at + 2)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        reply
            .get(at..at + 4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    match u16_at(4) {
        // struct audit_status { mask, enabled, ... } after the 16-byte header.
        Some(AUDIT_GET) => u32_at(20)
            .map(|enabled| enabled != 0)
            .ok_or_else(|| "a short answer from the kernel's audit".to_owned()),
        Some(NLMSG_ERROR) => {
            let errno = u32_at(16).map_or(0, |e| -(e as i32));
            Err(format!(
                "the kernel refused to say ({}): only root (CAP_AUDIT_CONTROL) may ask",
                std::io::Error::from_raw_os_error(errno)
            ))
        }
        other => Err(format!(
            "an unexpected answer ({other:?}) from the kernel's audit"
        )),
    }
}
