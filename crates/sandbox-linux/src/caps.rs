//! Dropping every capability before the program starts.
//!
//! Init is root in its own user namespace, with every capability there; the program must have
//! none, and a root program must not regain them at exec. The securebits lock that in.

use super::sys::{ApplyError, os_fail, prctl};

/// `SECBIT_NOROOT | _LOCKED`, `SECBIT_NO_SETUID_FIXUP | _LOCKED`, `SECBIT_KEEP_CAPS_LOCKED`,
/// `SECBIT_NO_CAP_AMBIENT_RAISE | _LOCKED`: uid 0 gains nothing at exec, and none of it can be
/// undone.
const SECUREBITS: libc::c_ulong = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80;

/// `struct __user_cap_header_struct` of `<linux/capability.h>`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

pub(super) fn drop_all() -> Result<(), ApplyError> {
    match prctl(libc::PR_SET_SECUREBITS, SECUREBITS, "securebits") {
        Ok(()) => {}
        // Without CAP_SETPCAP (root in a container run with every capability dropped) neither
        // the securebits nor the bounding set can be changed. Nothing is lost when the bounding
        // set is empty already: a root program's exec gains only what the bounding set and the
        // inheritable set (cleared below) hold, and no_new_privs (set with the seccomp filter)
        // keeps setuid and file capabilities from adding any.
        Err(_)
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
                && bounding_set_empty() =>
        {
            return clear_sets();
        }
        Err(e) => return Err(e),
    }
    for cap in 0..=63 {
        // EINVAL past the last capability this kernel knows ends the loop.
        match prctl(libc::PR_CAPBSET_DROP, cap, "drop bounding capabilities") {
            Ok(()) => {}
            Err(_) if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) => {
                break;
            }
            Err(e) => return Err(e),
        }
    }
    clear_sets()
}

/// Whether the bounding set holds no capability this kernel knows.
fn bounding_set_empty() -> bool {
    (0..=63).all(|cap| {
        // SAFETY: prctl with integer arguments reads and writes no memory of ours.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) };
        // 1: in the set; 0: not; -1 (EINVAL): past the last capability.
        rc != 1
    })
}

/// The ambient, effective, permitted and inheritable sets emptied (lowering needs no
/// capability).
fn clear_sets() -> Result<(), ApplyError> {
    // SAFETY: prctl with integer arguments reads and writes no memory of ours.
    let rc = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    if rc != 0 {
        return Err(os_fail("clear ambient capabilities"));
    }
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: header and data match the kernel's version 3 layout (two data structs).
    if unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } != 0 {
        return Err(os_fail("capset"));
    }
    Ok(())
}
