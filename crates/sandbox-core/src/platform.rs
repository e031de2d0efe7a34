//! The platform decision table: which backend and which mode, from facts about the
//! machine. The facts are gathered by the launcher; here they are plain values, so the table is
//! tested with made-up machines.

use serde::Serialize;

use crate::Mode;

/// What the launcher found out about a Mac.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MacFacts {
    /// `/usr/bin/sandbox-exec` exists.
    pub sandbox_exec: bool,
    /// Accounts with uid >= 501 whose name does not start with `_`.
    pub people: Vec<String>,
    /// The launcher already runs inside a Seatbelt sandbox (a nested `sandbox-exec` fails).
    pub already_sandboxed: bool,
    /// The release, as `sw_vers -productVersion` prints it (`14.4.1`); `None` when it could not
    /// be read.
    pub version: Option<String>,
}

/// The oldest macOS whose Seatbelt compiles the profile: 10.12 and 10.13 do not know
/// `file-clone` and `file-test-existence`, which every refusal of files names, and refuse the
/// whole profile (see `docs/macos.md`).
pub const MACOS_MINIMUM: (u32, u32) = (10, 14);

/// `major.minor` of a version string (`14.4.1` is 14.4, `11` is 11.0); `None` when it is not one.
pub fn macos_release(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = match parts.next() {
        Some(minor) => minor.parse().ok()?,
        None => 0,
    };
    Some((major, minor))
}

/// What the launcher found out about a Linux machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LinuxFacts {
    /// The kernel's Landlock ABI, `None` when Landlock is missing or disabled.
    pub landlock_abi: Option<u32>,
    /// A user namespace (with a mount and a PID namespace inside) can be created by this user.
    pub user_namespaces: bool,
    /// Why user namespaces cannot be created, when they cannot.
    pub user_namespaces_error: Option<String>,
}

/// What the launcher found out about the machine (by `launch::probe`), per OS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "os", rename_all = "lowercase")]
pub enum Facts {
    /// macOS.
    #[serde(rename = "macos")]
    MacOs(MacFacts),
    /// Linux.
    Linux(LinuxFacts),
    /// An OS with no backend.
    Other {
        /// Its name (`std::env::consts::OS`).
        name: String,
    },
}

/// The confinement a launch gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "backend", rename_all = "lowercase")]
pub enum Backend {
    /// `/usr/bin/sandbox-exec` with a generated profile.
    Seatbelt,
    /// The `cli-sandbox exec` helper: namespaces (when `namespaces`), Landlock and seccomp.
    Landlock {
        /// The Landlock ABI the plan is built for.
        abi: u32,
        /// Whether the plan uses namespaces (else the Landlock-only fallback).
        namespaces: bool,
    },
    /// No confinement: the launch must be bridge-only.
    None,
}

/// The platform decision for one launch: backend, mode, and why, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The confinement.
    pub backend: Backend,
    /// The mode the CLI runs in (bridge-only where nothing confines).
    pub mode: Mode,
    /// Why, in words.
    pub reason: String,
    /// A short sentence for the CLI's prompt, saying what the sandbox does.
    pub notice: String,
}

/// The lowest Landlock ABI that scopes signals and abstract unix sockets.
pub const LANDLOCK_ABI_SCOPING: u32 = 6;

/// Decides backend and mode. `requested` is what the caller asked for; `supported` the modes the
/// CLI supports (Pi: bridge-only only). Nothing ever runs unconfined with its tools on: without a
/// backend the mode is bridge-only whatever was asked.
pub fn decide(facts: &Facts, requested: Mode, supported: &[Mode]) -> Decision {
    let (backend, platform_reason) = backend_for(facts);
    let (mode, mode_reason) = if backend == Backend::None {
        (Mode::BridgeOnly, "no confinement here, so bridge-only")
    } else if requested == Mode::BridgeOnly {
        (Mode::BridgeOnly, "bridge-only was asked for; still wrapped")
    } else if !supported.contains(&Mode::Full) {
        (
            Mode::BridgeOnly,
            "this CLI supports bridge-only alone; still wrapped",
        )
    } else {
        (Mode::Full, "Full CLI inside the sandbox")
    };
    Decision {
        backend,
        mode,
        reason: format!("{platform_reason}; {mode_reason}"),
        notice: notice(backend, mode),
    }
}

/// Why Full CLI cannot run on this machine: the missing feature, and what would bring it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error(
    "Full CLI cannot run here, because nothing can confine it: {missing}. {remedy}; or launch a CLI that has it with --mode bridge-only (its own tools off)"
)]
pub struct CannotConfine {
    /// The kernel or OS feature that is missing, in words.
    pub missing: String,
    /// What would bring it.
    pub remedy: String,
}

/// Where nothing confines (backend `None`), a launch that asked for Full CLI of a CLI that has
/// it is refused with this (never run unconfined, never lowered to bridge-only without being
/// asked). `None` when the decision confines, or when bridge-only was asked for or is all the
/// CLI has.
pub fn cannot_confine(facts: &Facts, requested: Mode, supported: &[Mode]) -> Option<CannotConfine> {
    if requested != Mode::Full || !supported.contains(&Mode::Full) {
        return None;
    }
    if backend_for(facts).0 != Backend::None {
        return None;
    }
    Some(match facts {
        Facts::Linux(_) => CannotConfine {
            missing: "the kernel's Landlock (landlock_create_ruleset fails: a kernel before 5.13, one built without CONFIG_SECURITY_LANDLOCK, booted without `landlock` in `lsm=`, gVisor (whose kernel has none), or a container whose seccomp profile refuses the landlock_* calls)".to_owned(),
            remedy: "Run on Linux 5.13 or later with Landlock enabled (add `landlock` to the kernel's `lsm=` boot parameter), and in a container allow landlock_create_ruleset, landlock_add_rule and landlock_restrict_self in its seccomp profile (Docker's current default profile allows them)".to_owned(),
        },
        Facts::MacOs(mac) if !mac.sandbox_exec => CannotConfine {
            missing: "/usr/bin/sandbox-exec".to_owned(),
            remedy: "Run on a macOS that has /usr/bin/sandbox-exec".to_owned(),
        },
        Facts::MacOs(mac) if mac.already_sandboxed => CannotConfine {
            missing: "a Seatbelt sandbox of our own (the launcher already runs inside one, where a nested sandbox-exec fails)".to_owned(),
            remedy: "Start the launcher outside any sandbox".to_owned(),
        },
        Facts::MacOs(mac) => CannotConfine {
            missing: format!(
                "a one-person Mac (it has {} accounts: {}), where the open home is one person's",
                mac.people.len(),
                mac.people.join(", ")
            ),
            remedy: "Run on a Mac with one person's account".to_owned(),
        },
        Facts::Other { name } => CannotConfine {
            missing: format!("a backend for {name}"),
            remedy: "Run on Linux with Landlock or on macOS".to_owned(),
        },
    })
}

fn backend_for(facts: &Facts) -> (Backend, String) {
    match facts {
        Facts::MacOs(mac) => {
            if !mac.sandbox_exec {
                (
                    Backend::None,
                    "macOS without /usr/bin/sandbox-exec".to_owned(),
                )
            } else if let Some(why) = too_old(mac.version.as_deref()) {
                (Backend::None, why)
            } else if mac.already_sandboxed {
                (
                    Backend::None,
                    "the launcher already runs inside a sandbox (a nested sandbox-exec fails with exit 71)"
                        .to_owned(),
                )
            } else if mac.people.len() > 1 {
                (
                    Backend::None,
                    format!(
                        "a multi-user Mac ({} accounts: {}): the open home would not be one person's",
                        mac.people.len(),
                        mac.people.join(", ")
                    ),
                )
            } else {
                (
                    Backend::Seatbelt,
                    "macOS with /usr/bin/sandbox-exec, one person's account".to_owned(),
                )
            }
        }
        Facts::Linux(linux) => match linux.landlock_abi {
            None | Some(0) => (
                Backend::None,
                "Linux without Landlock (a server without its lock)".to_owned(),
            ),
            Some(abi) => {
                let namespaces = linux.user_namespaces;
                let mut reason = format!("Linux with Landlock ABI {abi}");
                if namespaces {
                    reason.push_str(", user, mount and PID namespaces");
                } else {
                    reason.push_str(&format!(
                        ", no user namespaces ({}): protected roots closed by Landlock alone, their ancestors frozen",
                        linux
                            .user_namespaces_error
                            .as_deref()
                            .unwrap_or("cannot be created")
                    ));
                }
                if abi < LANDLOCK_ABI_SCOPING {
                    reason.push_str(&format!(
                        ", signals and abstract sockets not scoped (ABI {LANDLOCK_ABI_SCOPING} needed)"
                    ));
                }
                (Backend::Landlock { abi, namespaces }, reason)
            }
        },
        Facts::Other { name } => (Backend::None, format!("{name} has no backend")),
    }
}

/// Why a Mac of `version` cannot run the profile, if it cannot.
fn too_old(version: Option<&str>) -> Option<String> {
    let (major, minor) = MACOS_MINIMUM;
    match version.map(|v| (v, macos_release(v))) {
        None => Some(format!(
            "the macOS release could not be read (sw_vers -productVersion), and the profile needs {major}.{minor} or later"
        )),
        Some((v, None)) => Some(format!(
            "the macOS release `{v}` is not a version number, and the profile needs {major}.{minor} or later"
        )),
        Some((v, Some(release))) if release < MACOS_MINIMUM => Some(format!(
            "macOS {v} is older than {major}.{minor}: its Seatbelt does not know file-clone and file-test-existence and refuses the profile"
        )),
        Some(_) => None,
    }
}

fn notice(backend: Backend, mode: Mode) -> String {
    match (backend, mode) {
        (Backend::None, _) => "You have no shell or file tools here: you work only through the AgentWorks tools (MCP bridge), because this machine cannot confine them.".to_owned(),
        (_, Mode::BridgeOnly) => "You work only through the AgentWorks tools (MCP bridge); your own shell and file tools are off.".to_owned(),
        (_, Mode::Full) => "Your home folder is open. AgentWorks data outside this chat is not. Protected files, and opening or scripting other apps, are refused.".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: &[Mode] = &[Mode::Full, Mode::BridgeOnly];
    const BRIDGE: &[Mode] = &[Mode::BridgeOnly];

    fn mac(sandbox_exec: bool, people: &[&str], already_sandboxed: bool) -> Facts {
        mac_of("14.4.1", sandbox_exec, people, already_sandboxed)
    }

    fn mac_of(
        version: &str,
        sandbox_exec: bool,
        people: &[&str],
        already_sandboxed: bool,
    ) -> Facts {
        Facts::MacOs(MacFacts {
            sandbox_exec,
            people: people.iter().map(|s| s.to_string()).collect(),
            already_sandboxed,
            version: (!version.is_empty()).then(|| version.to_owned()),
        })
    }

    #[test]
    fn a_mac_older_than_10_14_or_of_unknown_release_is_bridge_only() {
        for version in ["10.13.6", "10.12", "", "fourteen"] {
            let d = decide(&mac_of(version, true, &["ann"], false), Mode::Full, BOTH);
            assert_eq!(
                (d.backend, d.mode),
                (Backend::None, Mode::BridgeOnly),
                "{version}"
            );
            assert!(d.reason.contains("10.14"), "{}", d.reason);
        }
        for version in ["10.14", "10.15.7", "11", "14.4.1", "26.0"] {
            let d = decide(&mac_of(version, true, &["ann"], false), Mode::Full, BOTH);
            assert_eq!(
                (d.backend, d.mode),
                (Backend::Seatbelt, Mode::Full),
                "{version}"
            );
        }
    }

    fn linux(abi: Option<u32>, user_namespaces: bool) -> Facts {
        Facts::Linux(LinuxFacts {
            landlock_abi: abi,
            user_namespaces,
            user_namespaces_error: None,
        })
    }

    #[test]
    fn one_persons_mac_runs_full_in_seatbelt() {
        let d = decide(&mac(true, &["ann"], false), Mode::Full, BOTH);
        assert_eq!((d.backend, d.mode), (Backend::Seatbelt, Mode::Full));
        assert!(d.notice.contains("home folder is open"));
    }

    #[test]
    fn a_mac_without_sandbox_exec_is_bridge_only() {
        let d = decide(&mac(false, &["ann"], false), Mode::Full, BOTH);
        assert_eq!((d.backend, d.mode), (Backend::None, Mode::BridgeOnly));
        assert!(d.reason.contains("sandbox-exec"), "{}", d.reason);
    }

    #[test]
    fn a_multi_user_mac_is_bridge_only_and_names_the_accounts() {
        let d = decide(&mac(true, &["ann", "bob"], false), Mode::Full, BOTH);
        assert_eq!((d.backend, d.mode), (Backend::None, Mode::BridgeOnly));
        assert!(d.reason.contains("ann, bob"), "{}", d.reason);
    }

    #[test]
    fn an_already_sandboxed_launcher_is_bridge_only() {
        let d = decide(&mac(true, &["ann"], true), Mode::Full, BOTH);
        assert_eq!((d.backend, d.mode), (Backend::None, Mode::BridgeOnly));
        assert!(d.reason.contains("already"), "{}", d.reason);
    }

    #[test]
    fn linux_with_landlock_runs_full() {
        let d = decide(&linux(Some(7), true), Mode::Full, BOTH);
        assert_eq!(
            (d.backend, d.mode),
            (
                Backend::Landlock {
                    abi: 7,
                    namespaces: true
                },
                Mode::Full
            )
        );
    }

    #[test]
    fn linux_without_namespaces_still_runs_full_and_says_what_it_costs() {
        let d = decide(&linux(Some(5), false), Mode::Full, BOTH);
        assert_eq!(d.mode, Mode::Full);
        assert!(d.reason.contains("frozen"), "{}", d.reason);
        assert!(d.reason.contains("not scoped"), "{}", d.reason);
    }

    #[test]
    fn linux_without_landlock_is_bridge_only() {
        for abi in [None, Some(0)] {
            let d = decide(&linux(abi, true), Mode::Full, BOTH);
            assert_eq!((d.backend, d.mode), (Backend::None, Mode::BridgeOnly));
            assert!(d.reason.contains("without Landlock"));
        }
    }

    #[test]
    fn full_where_nothing_confines_is_refused_naming_the_feature_and_bridge_only_is_not() {
        let e = cannot_confine(&linux(None, true), Mode::Full, BOTH).unwrap();
        assert!(e.missing.contains("Landlock"), "{e}");
        assert!(e.to_string().contains("lsm="), "{e}");
        assert_eq!(
            cannot_confine(&linux(None, true), Mode::BridgeOnly, BOTH),
            None
        );
        assert_eq!(cannot_confine(&linux(None, true), Mode::Full, BRIDGE), None);
        assert_eq!(
            cannot_confine(&linux(Some(1), false), Mode::Full, BOTH),
            None
        );
        let e = cannot_confine(&mac(true, &["ann", "bob"], false), Mode::Full, BOTH).unwrap();
        assert!(e.missing.contains("ann, bob"), "{e}");
    }

    #[test]
    fn pi_is_bridge_only_and_still_wrapped() {
        let d = decide(&linux(Some(7), true), Mode::Full, BRIDGE);
        assert_eq!(d.mode, Mode::BridgeOnly);
        assert_ne!(d.backend, Backend::None);
        let d = decide(&mac(true, &["ann"], false), Mode::Full, BRIDGE);
        assert_eq!((d.backend, d.mode), (Backend::Seatbelt, Mode::BridgeOnly));
    }

    #[test]
    fn asked_bridge_only_stays_wrapped() {
        let d = decide(&linux(Some(7), true), Mode::BridgeOnly, BOTH);
        assert_eq!(d.mode, Mode::BridgeOnly);
        assert_ne!(d.backend, Backend::None);
    }

    #[test]
    fn other_os_is_bridge_only() {
        let d = decide(
            &Facts::Other {
                name: "freebsd".into(),
            },
            Mode::Full,
            BOTH,
        );
        assert_eq!((d.backend, d.mode), (Backend::None, Mode::BridgeOnly));
    }

    #[test]
    fn the_stored_full_unconfined_reads_as_full() {
        let mode: Mode = serde_json::from_str("\"full_unconfined\"").unwrap();
        assert_eq!(mode, Mode::Full);
        let mode: Mode = serde_json::from_str("\"bridge-only\"").unwrap();
        assert_eq!(mode, Mode::BridgeOnly);
    }
}
