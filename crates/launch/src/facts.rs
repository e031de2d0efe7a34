//! Gathering the facts the platform decision needs, from the running machine.

use sandbox_core::platform::{Facts, LinuxFacts, MacFacts};

/// Facts about this machine, as every launch reads them: the one decision of `doctor`, `plan`,
/// `run`, `step`, `pre-trust`, the contract and the library. On Linux: the Landlock ABI and
/// whether a namespace plan can start in this process, decided by a real trial of its first
/// steps (`sandbox_linux::trial`: clone into the namespaces, the id maps, the first mounts), kept
/// while the answer cannot change; a trial that fails for any reason is the Landlock-only plan,
/// with the reason. On macOS: `sandbox-exec`, the people with an account, and whether we already
/// run inside a sandbox.
pub fn probe() -> Facts {
    if cfg!(target_os = "linux") {
        Facts::Linux(linux())
    } else if cfg!(target_os = "macos") {
        Facts::MacOs(mac())
    } else {
        Facts::Other {
            name: std::env::consts::OS.to_owned(),
        }
    }
}

#[cfg(target_os = "linux")]
fn linux() -> LinuxFacts {
    let kernel = sandbox_linux::this_kernel();
    let (user_namespaces, user_namespaces_error) = match sandbox_linux::namespaces() {
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
fn linux() -> LinuxFacts {
    LinuxFacts {
        landlock_abi: None,
        user_namespaces: false,
        user_namespaces_error: Some("not Linux".into()),
    }
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
