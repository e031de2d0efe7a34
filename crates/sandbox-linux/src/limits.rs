//! `[limits] processes` by construction: `RLIMIT_NPROC`, set by init inside the chat's user
//! namespace before it starts anything.
//!
//! Since Linux 5.14 the kernel counts `RLIMIT_NPROC` per user namespace and uid (ucounts): the
//! processes of the chat's uid in the chat's own user namespace, not every process of the uid
//! on the machine. A process in a user namespace the chat makes is counted in the chat's as
//! well, and checked there against the limit the chat had when it made it; raising the hard
//! limit needs `CAP_SYS_RESOURCE` in the machine's user namespace, which no chat has. So a
//! chat started with `setsid`, daemonized, or in a namespace of its own stays within it
//! (`tests/limits.rs`).
//!
//! Root is exempt: the kernel lets the machine's uid 0 (which a root chat keeps, mapped onto
//! itself) fork past `RLIMIT_NPROC` whatever its capabilities. A root chat's processes are held
//! by a pids cgroup (`cgroup.rs`) where one can be made, and by nothing where not (the plan and
//! `doctor` say so).

use super::sys::{ApplyError, fail};
use crate::plan::format::LimitsPlan;

/// Sets init's `RLIMIT_NPROC` (soft and hard) to the chat's processes and init itself, never
/// above the hard limit init inherited.
pub(super) fn apply_in_init(limits: &LimitsPlan) -> Result<(), ApplyError> {
    let wanted = libc::rlim_t::from(limits.processes) + 1;
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `old` is a valid rlimit for the kernel to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut old) } != 0 {
        return Err(super::sys::os_fail("getrlimit RLIMIT_NPROC"));
    }
    let value = wanted.min(old.rlim_max);
    let new = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: `new` is a valid rlimit the kernel only reads.
    if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &new) } != 0 {
        return Err(fail(
            "[limits] processes: setrlimit RLIMIT_NPROC",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}
