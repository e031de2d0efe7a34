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
                "not recorded here: Landlock ABI {abi} has no audit records (ABI 7, Linux 6.15, \
                 added them)"
            ),
            never,
        };
    }
    // SAFETY: geteuid cannot fail and touches no memory.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        return DenialLog {
            recorded: false,
            how: "not recorded here: a launch's record (`--denials FILE`) reads the kernel's \
                  audit records, which only root may (CAP_AUDIT_READ); this launcher is not \
                  root, so its records say `recorded: false` with why. Whether the kernel logs \
                  Landlock's refusals at all (audit on) only root may ask (`auditctl -s`)"
                .to_owned(),
            never,
        };
    }
    let (recorded, how) = match sandbox_linux::audit::audit_enabled() {
        Ok(true) => (
            true,
            "Landlock's refusals of a chat go into its launch's record (`--denials FILE`, \
             docs/json.md), read from the kernel's audit log (records 1423 and 1424), which \
             also holds them: `ausearch -i -m 1423,1424` with auditd, else `dmesg | grep -E \
             'type=142[34]'`"
                .to_owned(),
        ),
        Ok(false) => (
            false,
            "not recorded here: the kernel's audit is off (`auditctl -s`: enabled 0); \
             `auditctl -e 1`, as root, turns it on until reboot (or boot with audit=1), and \
             Landlock's refusals are then recorded (records 1423 and 1424) and a launch's record \
             (`--denials FILE`) holds them"
                .to_owned(),
        ),
        Err(why) => (
            false,
            format!(
                "not recorded here: {why}; Landlock's refusals are recorded only while the \
                 kernel's audit is on (`auditctl -s`, as root)"
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
              `log stream --style compact --predicate 'sender == \"Sandbox\"'` in a plain \
              Terminal; a launch's record (`--denials FILE`) says `recorded: false` on macOS \
              (not collected by the launch yet)"
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
