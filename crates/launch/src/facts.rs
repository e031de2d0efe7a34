//! Gathering the facts the platform decision needs, from the running machine.

use sandbox_core::platform::{Facts, LinuxFacts, MacFacts};

/// Facts about this machine, as every launch reads them. On Linux: the Landlock ABI and whether
/// the sysctls allow user namespaces (cheap; should they fail anyway, the helper refuses to run
/// with status 2). On macOS: `sandbox-exec`, the people with an account, and whether we already
/// run inside a sandbox.
pub fn probe() -> Facts {
    gather(false)
}

/// As [`probe`], with user namespaces tried for real in a short-lived child: for `doctor`, the
/// contract and the tests, which must not take the sysctls' word for it.
pub fn probe_thoroughly() -> Facts {
    gather(true)
}

fn gather(thoroughly: bool) -> Facts {
    if cfg!(target_os = "linux") {
        Facts::Linux(linux(thoroughly))
    } else if cfg!(target_os = "macos") {
        Facts::MacOs(mac())
    } else {
        Facts::Other {
            name: std::env::consts::OS.to_owned(),
        }
    }
}

#[cfg(target_os = "linux")]
fn linux(thoroughly: bool) -> LinuxFacts {
    let kernel = crate::linux::this_kernel();
    let namespaces = if thoroughly {
        try_user_namespaces()
    } else if kernel.namespaces {
        Ok(())
    } else {
        Err(
            "forbidden by the sysctls (max_user_namespaces, unprivileged_userns_clone or AppArmor)"
                .into(),
        )
    };
    let (user_namespaces, user_namespaces_error) = match namespaces {
        Ok(()) => (true, None),
        Err(e) => (false, Some(e)),
    };
    let abi = kernel.landlock_abi;
    LinuxFacts {
        landlock_abi: (abi > 0).then_some(abi),
        user_namespaces,
        user_namespaces_error,
    }
}

#[cfg(not(target_os = "linux"))]
fn linux(_thoroughly: bool) -> LinuxFacts {
    LinuxFacts {
        landlock_abi: None,
        user_namespaces: false,
        user_namespaces_error: Some("not Linux".into()),
    }
}

/// Forks a child that enters a user, mount and PID namespace and reports whether it could.
#[cfg(target_os = "linux")]
fn try_user_namespaces() -> Result<(), String> {
    // SAFETY: the child runs only `probe_child` (unshare, then _exit: both async-signal-safe,
    // no allocation, no lock), so a fork of a process with other threads is sound here.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    if pid == 0 {
        probe_child();
    }
    let mut status = 0;
    loop {
        // SAFETY: waiting for the child forked above, which nothing else reaps; `status` is a
        // valid out-parameter for the call.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(format!("waiting for the namespace probe: {err}"));
        }
    }
    if !libc::WIFEXITED(status) {
        return Err(format!(
            "the namespace probe ended without exiting (wait status {status:#x})"
        ));
    }
    match libc::WEXITSTATUS(status) {
        0 => Ok(()),
        errno => Err(format!(
            "unshare(user, mount, pid) fails: {}",
            std::io::Error::from_raw_os_error(errno)
        )),
    }
}

/// The probe's forked child: tries the namespaces and exits with 0 or the errno (what the
/// parent reports). Never returns.
#[cfg(target_os = "linux")]
fn probe_child() -> ! {
    let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    // SAFETY: unshare takes integer flags only and touches no memory of ours.
    let rc = unsafe { libc::unshare(flags) };
    let code = if rc == 0 {
        0
    } else {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(255)
    };
    // SAFETY: leaves the forked child at once, without running the parent's destructors or
    // atexit handlers (which belong to the parent's image).
    unsafe { libc::_exit(code.min(255)) }
}

fn mac() -> MacFacts {
    MacFacts {
        sandbox_exec: std::path::Path::new("/usr/bin/sandbox-exec").exists(),
        people: mac_people(),
        already_sandboxed: crate::seatbelt::already_sandboxed(),
        version: mac_version(),
    }
}

/// The release, from `sw_vers -productVersion` (`14.4.1`).
fn mac_version() -> Option<String> {
    let out = std::process::Command::new("/usr/bin/sw_vers")
        .arg("-productVersion")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_owned())
}

/// Accounts with uid >= 501 whose name does not start with `_`, from `dscl`.
fn mac_people() -> Vec<String> {
    let Ok(out) = std::process::Command::new("/usr/bin/dscl")
        .args([".", "-list", "/Users", "UniqueID"])
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let name = parts.next()?;
            let uid: u32 = parts.next()?.parse().ok()?;
            (uid >= 501 && !name.starts_with('_')).then(|| name.to_owned())
        })
        .collect()
}
