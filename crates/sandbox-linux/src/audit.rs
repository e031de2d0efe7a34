//! The kernel's audit, asked whether it records: where a chat's Landlock refusals can be seen
//! (`cli-sandbox doctor`'s `denials`). It records nothing itself and turns nothing on.

/// The kernel's audit `enabled` flag, asked with `AUDIT_GET` on a netlink audit socket (the
/// question `auditctl -s` asks). Only a process with `CAP_AUDIT_CONTROL` gets an answer.
pub fn audit_enabled() -> Result<bool, String> {
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
