//! The per-launch record of what the kernel refused the chat, as JSON (`docs/json.md`,
//! "denials"), written where the plan says ([`crate::plan::LinuxPlan::denials_record`]) once the
//! chat has ended.
//!
//! What is recorded: Landlock's own refusals (audit records 1423 `LANDLOCK_ACCESS`, each with
//! the `1300` `SYSCALL` record of the same event naming the program), read from the kernel's
//! audit multicast group (`AUDIT_NLGRP_READLOG`, which needs `CAP_AUDIT_READ`: a root launcher)
//! while the chat runs, and kept only for the Landlock domains whose `1424` `allocated` record
//! names this launch's init (the process that restricted itself; its pid as the machine sees
//! it). Other launches' and other programs' records on the same group are dropped. At the end
//! the helper writes a user message into the audit log (`AUDIT_USER`) and reads until it comes
//! back: the kernel queues records in order, so every refusal made before the chat ended has
//! been read by then.
//!
//! Where nothing can be recorded the record says so, with why (`recorded: false`, `denials:
//! null`): never an empty list that would read as "nothing was refused". Refusals made by the
//! namespace plan's mounts (covers, read-only binds) and by seccomp are never in it: the kernel
//! logs neither (`never` says so in each record).

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;

use serde::Serialize;

/// What the record always says is never in it.
pub const NEVER: &str = "refusals made by the namespace plan's mounts (a closed root's cover: \
    `No such file or directory` inside it; a refused entry's stand-in: `Permission denied`; a \
    read-only place: `Read-only file system`) and by seccomp are logged nowhere; \
    `cli-sandbox explain PATH` names the rule for a path, inside the chat too";

/// The record a launch leaves.
#[derive(Debug, Serialize)]
pub struct Record<'a> {
    /// 1.
    pub version: u32,
    /// The chat's id.
    pub chat: &'a str,
    /// Whether the kernel's refusals were read for this launch.
    pub recorded: bool,
    /// Why not, and what would change it (`recorded: false` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Each refusal, in order (`null` when not recorded: not "none").
    pub denials: Option<Vec<Denial>>,
    /// Set when records were lost on the way (the socket overran while the machine logged
    /// more than the helper read, or the end marker did not come back): the list may miss some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// What no record holds.
    pub never: &'static str,
}

/// One refusal, as the kernel's audit records tell it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Denial {
    /// Landlock's missing rights (`fs.read_file`, `fs.make_char`, `scope.signal`, ...).
    pub blockers: String,
    /// The object, when the record names a path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The refused program's name and executable (from the event's `SYSCALL` record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<String>,
    /// The refused program's executable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// Its pid as the machine sees it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The record's other fields as the kernel wrote them (`dev`, `ino`, `opid`, ...).
    pub record: String,
}

/// `AUDIT_NLGRP_READLOG` (linux/audit.h).
const READLOG: u32 = 1;
/// `AUDIT_USER` (linux/audit.h): a message of a user-space program.
const AUDIT_USER: u16 = 1005;
const AUDIT_SYSCALL: u16 = 1300;
const AUDIT_LANDLOCK_ACCESS: u16 = 1423;
const AUDIT_LANDLOCK_DOMAIN: u16 = 1424;

/// The reader, joined to the audit group before the chat starts.
pub(crate) struct Reader {
    socket: netlink_sys::Socket,
    /// The pid of the process whose Landlock domains are this launch's (init).
    pid: u32,
    domains: HashSet<String>,
    /// Events seen, by serial: their access records and their syscall record.
    events: HashMap<String, Event>,
    order: Vec<String>,
    marker: String,
    /// Why records may have been lost, if they may.
    lost: Option<String>,
}

#[derive(Default)]
struct Event {
    access: Vec<(String, String)>,
    syscall: Option<String>,
}

/// Why a launch records nothing, when that is known before it starts; `Ok` with the reader.
pub(crate) fn open(landlock_abi: u32) -> Result<Reader, String> {
    if landlock_abi < 7 {
        return Err(format!(
            "not recorded here: Landlock ABI {landlock_abi} writes no audit records (ABI 7, \
             Linux 6.15, added them)"
        ));
    }
    match crate::audit::audit_enabled() {
        Ok(true) => {}
        Ok(false) => {
            return Err(
                "not recorded here: the kernel's audit is off (`auditctl -s`: enabled \
                        0); `auditctl -e 1` as root turns it on until reboot"
                    .to_owned(),
            );
        }
        Err(why) => {
            return Err(format!(
                "not recorded here: {why}; reading the kernel's audit records needs a root \
                 launcher (CAP_AUDIT_READ)"
            ));
        }
    }
    let mut socket = netlink_sys::Socket::new(netlink_sys::protocols::NETLINK_AUDIT)
        .map_err(|e| format!("not recorded here: no audit socket ({e})"))?;
    socket
        .bind_auto()
        .map_err(|e| format!("not recorded here: the audit socket cannot be bound ({e})"))?;
    socket.add_membership(READLOG).map_err(|e| {
        format!(
            "not recorded here: the audit log cannot be read ({e}): that needs CAP_AUDIT_READ \
             (a root launcher)"
        )
    })?;
    socket
        .set_non_blocking(true)
        .map_err(|e| format!("not recorded here: the audit socket ({e})"))?;
    Ok(Reader {
        socket,
        pid: 0,
        domains: HashSet::new(),
        events: HashMap::new(),
        order: Vec::new(),
        marker: String::new(),
        lost: None,
    })
}

impl Reader {
    /// The socket, for the helper's wait.
    pub(crate) fn fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    /// The pid whose domains are this launch's.
    pub(crate) fn set_pid(&mut self, pid: libc::pid_t) {
        self.pid = pid as u32;
    }

    /// Reads what is there now; `true` once the end marker came back.
    pub(crate) fn drain(&mut self) -> bool {
        let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
        loop {
            buf.clear();
            match self.socket.recv(&mut buf, 0) {
                Ok(_) => {
                    if self.take(&buf) {
                        return true;
                    }
                }
                // The kernel had more for this socket than its buffer held: some were dropped.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.lost = Some(
                        "the audit socket overran (the machine logged faster than it was read): \
                         some records were lost"
                            .to_owned(),
                    );
                }
                Err(_) => return false,
            }
        }
    }

    /// One datagram: a netlink header then the record's text.
    fn take(&mut self, datagram: &[u8]) -> bool {
        let Some(header) = datagram.get(..16) else {
            return false;
        };
        let len = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let kind = u16::from_ne_bytes([header[4], header[5]]);
        let end = len.clamp(16, datagram.len());
        let text = String::from_utf8_lossy(&datagram[16..end]);
        let text = text.trim_end_matches('\0').trim_end();
        self.line(kind, text)
    }

    /// One record (`audit(TIME:SERIAL): FIELDS`); `true` for the end marker.
    pub(crate) fn line(&mut self, kind: u16, text: &str) -> bool {
        let Some((stamp, fields)) = text.split_once("): ") else {
            return false;
        };
        let serial = stamp.rsplit(':').next().unwrap_or("").to_owned();
        match kind {
            AUDIT_USER => return !self.marker.is_empty() && fields.contains(&self.marker),
            AUDIT_LANDLOCK_DOMAIN => {
                let domain = field(fields, "domain");
                if field(fields, "status").as_deref() == Some("allocated")
                    && field(fields, "pid").and_then(|p| p.parse().ok()) == Some(self.pid)
                    && let Some(d) = domain
                {
                    self.domains.insert(d);
                }
            }
            AUDIT_LANDLOCK_ACCESS | AUDIT_SYSCALL => {
                if !self.events.contains_key(&serial) {
                    self.order.push(serial.clone());
                }
                let event = self.events.entry(serial).or_default();
                if kind == AUDIT_SYSCALL {
                    event.syscall = Some(fields.to_owned());
                } else if let Some(d) = field(fields, "domain") {
                    event.access.push((d, fields.to_owned()));
                }
            }
            _ => {}
        }
        false
    }

    /// After the chat: the end marker written into the audit log and read back (everything
    /// queued before it has been read then), up to `patience`; the refusals of this launch.
    pub(crate) fn finish(
        mut self,
        chat: &str,
        patience: std::time::Duration,
    ) -> (Vec<Denial>, Option<String>) {
        self.marker = format!(
            "cli-sandbox end of chat {chat} helper {}",
            std::process::id()
        );
        let sent = send_user_message(&self.marker);
        let start = std::time::Instant::now();
        let mut back = false;
        while sent && start.elapsed() < patience {
            if self.drain() {
                back = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        if !back {
            back = self.drain();
        }
        if !back && self.lost.is_none() {
            self.lost = Some(format!(
                "the end marker did not come back through the audit queue within {} s: the \
                 last refusals may be missing",
                patience.as_secs()
            ));
        }
        (self.denials(), self.lost.take())
    }

    /// The access records of this launch's domains, in order, each with its event's program.
    pub(crate) fn denials(&self) -> Vec<Denial> {
        let mut out = Vec::new();
        for serial in &self.order {
            let event = &self.events[serial];
            for (domain, fields) in &event.access {
                if !self.domains.contains(domain) {
                    continue;
                }
                let syscall = event.syscall.as_deref().unwrap_or("");
                out.push(Denial {
                    blockers: field(fields, "blockers").unwrap_or_default(),
                    path: field(fields, "path"),
                    comm: field(syscall, "comm"),
                    exe: field(syscall, "exe"),
                    pid: field(syscall, "pid").and_then(|p| p.parse().ok()),
                    record: fields.clone(),
                });
            }
        }
        out
    }
}

/// A field of a record (`key=value` or `key="value"`); a hex-encoded value (a name with spaces)
/// is decoded.
fn field(fields: &str, key: &str) -> Option<String> {
    let at = fields
        .match_indices(&format!("{key}="))
        .find(|(i, _)| *i == 0 || fields.as_bytes()[i - 1] == b' ')?
        .0
        + key.len()
        + 1;
    let rest = &fields[at..];
    if let Some(quoted) = rest.strip_prefix('"') {
        return quoted.split('"').next().map(str::to_owned);
    }
    let value = rest.split(' ').next().unwrap_or("");
    // The kernel writes a name holding a space, a quote or a byte outside ASCII as hex,
    // unquoted (`path=2F746D70...`); only the names are so written.
    let name = matches!(key, "path" | "comm" | "exe" | "name");
    if name
        && value.len().is_multiple_of(2)
        && !value.is_empty()
        && value.bytes().all(|b| b.is_ascii_hexdigit())
    {
        let bytes: Option<Vec<u8>> = (0..value.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&value[i..i + 2], 16).ok())
            .collect();
        if let Some(text) = bytes.and_then(|b| String::from_utf8(b).ok()) {
            return Some(text);
        }
    }
    Some(value.to_owned())
}

/// Writes `text` into the audit log as an `AUDIT_USER` message (what `auditctl`'s
/// `audit_log_user_message` does); `false` if the kernel refused it.
fn send_user_message(text: &str) -> bool {
    let Ok(mut socket) = netlink_sys::Socket::new(netlink_sys::protocols::NETLINK_AUDIT) else {
        return false;
    };
    if socket.bind_auto().is_err() {
        return false;
    }
    const NLM_F_REQUEST: u16 = 1;
    let payload = text.as_bytes();
    let len = 16 + payload.len() + 1;
    let mut message = Vec::with_capacity(len);
    message.extend_from_slice(&(len as u32).to_ne_bytes());
    message.extend_from_slice(&AUDIT_USER.to_ne_bytes());
    message.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    message.extend_from_slice(payload);
    message.push(0);
    socket.send(&message, 0).is_ok()
}

/// Writes the record (`path`: the plan's), replacing a file there; a failure is said on stderr
/// (the chat has ended; its status stays the launch's).
pub(crate) fn write(path: &Path, record: &Record<'_>) {
    let text = match serde_json::to_string_pretty(record) {
        Ok(t) => t + "\n",
        Err(_) => return,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let done = tempfile_in(dir, path, text.as_bytes());
    if let Err(e) = done {
        crate::say!(
            "cli-sandbox: the record of refusals `{}` cannot be written: {e}",
            path.display()
        );
    }
}

/// Written whole or not at all: a temporary file beside it, renamed over it.
fn tempfile_in(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let name = format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("denials"),
        std::process::id()
    );
    let tmp = dir.join(name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    let written = file.write_all(bytes).and_then(|_| file.sync_all());
    if let Err(e) = written.and_then(|_| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records as the development machine's kernel wrote them (docs/linux.md, "Seeing a
    /// denial"), with another launch's domain among them.
    #[test]
    fn only_this_launchs_domains_are_kept_with_their_program() {
        let mut r = Reader {
            socket: netlink_sys::Socket::new(netlink_sys::protocols::NETLINK_AUDIT).unwrap(),
            pid: 12350,
            domains: HashSet::new(),
            events: HashMap::new(),
            order: Vec::new(),
            marker: "cli-sandbox end of chat c1 helper 1".into(),
            lost: None,
        };
        let lines: [(u16, &str); 8] = [
            (
                1423,
                "audit(1.5:2): domain=15c5a913e blockers=fs.make_char path=\"/tmp/auditdemo\" dev=\"vda\" ino=10093183",
            ),
            (
                1424,
                "audit(1.5:2): domain=15c5a913e status=allocated mode=enforcing pid=12350 uid=0 exe=\"/x/cli-sandbox\" comm=\"cli-sandbox\"",
            ),
            (
                1300,
                "audit(1.5:2): arch=c000003e syscall=259 success=no exit=-13 pid=12352 comm=\"mknod\" exe=\"/usr/bin/mknod\" key=(null)",
            ),
            (
                1423,
                "audit(1.6:3): domain=aaaa blockers=fs.read_file path=\"/etc/other\"",
            ),
            (
                1424,
                "audit(1.6:3): domain=aaaa status=allocated mode=enforcing pid=999 uid=0",
            ),
            (
                1423,
                "audit(1.7:4): domain=15c5a913e blockers=fs.write_file path=2F746D702F6120622063",
            ),
            (
                1424,
                "audit(1.8:5): domain=15c5a913e status=deallocated denials=2",
            ),
            (
                1005,
                "audit(1.9:6): pid=1 uid=0 msg='cli-sandbox end of chat c1 helper 1'",
            ),
        ];
        let mut ended = false;
        for (kind, text) in lines {
            ended |= r.line(kind, text);
        }
        assert!(ended);
        let d = r.denials();
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0].blockers, "fs.make_char");
        assert_eq!(d[0].path.as_deref(), Some("/tmp/auditdemo"));
        assert_eq!(d[0].comm.as_deref(), Some("mknod"));
        assert_eq!(d[0].pid, Some(12352));
        assert_eq!(d[1].path.as_deref(), Some("/tmp/a b c"));
    }
}
