//! `cli-sandbox doctor`: what this machine can confine, and how.

use std::process::ExitCode;

use launch::{Context, Error, Settings};
use sandbox_core::platform::{self, Facts};
use sandbox_core::{Backend, Mode};
use sandbox_core::{Enforcement, Guarantee, Promise};
use sandbox_linux::plan::Kernel;
use serde::Serialize;

#[derive(Debug, Serialize)]
struct Report {
    os: &'static str,
    facts: Facts,
    backend: Backend,
    mode: Mode,
    reason: String,
    notice: String,
    /// Where nothing confines: why Full CLI is refused, and the remedy (the launch's own error).
    #[serde(skip_serializing_if = "Option::is_none")]
    cannot_confine: Option<platform::CannotConfine>,
    ways_out: Vec<Guarantee>,
    /// Where this machine records a chat's refusals (`denial_log.rs`).
    denials: crate::denial_log::DenialLog,
    /// `--cli`: each CLI's readiness for this person (`cli_readiness.rs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    clis: Vec<crate::cli_readiness::CliReadiness>,
    /// What stays open by the owner's decision, with the configuration that closes it.
    limits: &'static [Limit],
    /// The home's credential places (`sandbox_core::SECRETS_HOME`) and whether this
    /// configuration closes them (`[policy] secrets`).
    secrets: SecretsReport,
    /// `[limits]`: each resource limit of a chat, its value, and whether it holds here.
    resource_limits: Vec<ResourceLimit>,
}

/// `[policy] secrets` as a chat launched now would have it.
#[derive(Debug, Serialize)]
struct SecretsReport {
    /// `open` or `closed`.
    policy: &'static str,
    /// Each place, relative to the home (`~/.ssh`).
    places: Vec<String>,
}

/// One `[limits]` key: what a chat launched now would get, tried for real where it takes a
/// cgroup (one made and removed).
#[derive(Debug, Serialize)]
struct ResourceLimit {
    /// `processes`, `memory` or `tmp`.
    key: &'static str,
    /// The value in force (configured or the default); `None`: not limited.
    value: Option<String>,
    /// Whether the configuration names it (a configured limit that cannot hold refuses the
    /// launch; a default one is held where it can be).
    configured: bool,
    /// The mechanism, in words.
    by: String,
    #[serde(flatten)]
    enforcement: Enforcement,
}

/// Whether each `[limits]` key holds on this machine, for this launcher.
fn resource_limits(settings: &Settings, backend: Backend) -> Vec<ResourceLimit> {
    let limits = Context::load(settings)
        .and_then(|ctx| ctx.policy("doctor", &[]))
        .map(|p| p.limits())
        .unwrap_or_default();
    let processes = limits.processes.to_string();
    let memory = limits.memory.map(|m| m.to_string());
    let tmp = limits.tmp.to_string();
    let tmp_configured = limits.tmp != sandbox_core::Size(sandbox_core::limits::DEFAULT_TMP);
    let row = |key, value: Option<String>, configured, by: String, enforcement| ResourceLimit {
        key,
        value,
        configured,
        by,
        enforcement,
    };
    let not_here = |why: &str| Enforcement::Not(why.to_owned());
    match backend {
        Backend::Landlock {
            namespaces: true, ..
        } => {
            #[cfg(target_os = "linux")]
            {
                use sandbox_linux::cgroup;
                let root = launch::context::launcher_is_root();
                let refused = |configured: bool, why: String| {
                    Enforcement::Not(if configured {
                        format!("a launch is refused here: {why}")
                    } else {
                        why
                    })
                };
                let processes_row = if root {
                    match cgroup::place(false, true) {
                        Ok(place) => row(
                            "processes",
                            Some(processes),
                            limits.processes_configured,
                            format!("a pids cgroup of the chat's own ({})", place.describe()),
                            Enforcement::Fully,
                        ),
                        Err(why) => row(
                            "processes",
                            Some(processes),
                            limits.processes_configured,
                            "nothing: root is exempt from RLIMIT_NPROC and no pids cgroup can be made".into(),
                            refused(limits.processes_configured, why),
                        ),
                    }
                } else {
                    row(
                        "processes",
                        Some(processes),
                        limits.processes_configured,
                        "RLIMIT_NPROC in the chat's user namespace (counted per namespace and uid)"
                            .into(),
                        Enforcement::Fully,
                    )
                };
                let memory_row = match &memory {
                    None => row(
                        "memory",
                        None,
                        false,
                        "nothing".into(),
                        not_here("not set: a chat may use what the launcher may"),
                    ),
                    Some(_) => match cgroup::place(true, false) {
                        Ok(place) => row(
                            "memory",
                            memory.clone(),
                            true,
                            format!("a memory cgroup of the chat's own ({})", place.describe()),
                            Enforcement::Fully,
                        ),
                        Err(why) => row(
                            "memory",
                            memory.clone(),
                            true,
                            "nothing: no cgroup can be made".into(),
                            refused(true, why),
                        ),
                    },
                };
                // Without a memory limit, say whether one could hold here.
                let memory_row = if memory.is_none() {
                    match cgroup::place(true, false) {
                        Ok(place) => ResourceLimit {
                            enforcement: not_here(&format!(
                                "not set: a chat may use what the launcher may; `memory = \"SIZE\"` would hold here ({})",
                                place.describe()
                            )),
                            ..memory_row
                        },
                        Err(why) => ResourceLimit {
                            enforcement: not_here(&format!(
                                "not set; it could not hold here either ({why})"
                            )),
                            ..memory_row
                        },
                    }
                } else {
                    memory_row
                };
                vec![
                    processes_row,
                    memory_row,
                    row(
                        "tmp",
                        Some(tmp),
                        tmp_configured,
                        "a tmpfs of this size on the chat's /tmp, /var/tmp and /dev/shm (mount namespace)".into(),
                        Enforcement::Fully,
                    ),
                ]
            }
            #[cfg(not(target_os = "linux"))]
            {
                let _ = (processes, memory, tmp, row, not_here);
                Vec::new()
            }
        }
        _ => {
            let why = match backend {
                Backend::Landlock { .. } => {
                    "no user namespaces: the Landlock-only fallback holds no resource limit (a configured `processes` or `memory` refuses the launch)"
                }
                Backend::Seatbelt => {
                    "Seatbelt limits files, not resources (a configured `processes` or `memory` refuses the launch)"
                }
                _ => "nothing confines on this machine",
            };
            vec![
                row(
                    "processes",
                    Some(processes),
                    limits.processes_configured,
                    "nothing".into(),
                    not_here(why),
                ),
                row(
                    "memory",
                    memory,
                    limits.memory.is_some(),
                    "nothing".into(),
                    not_here(why),
                ),
                row(
                    "tmp",
                    Some(tmp),
                    tmp_configured,
                    "nothing: /tmp is the machine's".into(),
                    not_here(why),
                ),
            ]
        }
    }
}

/// A limit stated by the owner's decision (SECURITY.md, "One chat steering another").
#[derive(Debug, Serialize)]
struct Limit {
    id: &'static str,
    what: &'static str,
    closed_by: &'static str,
}

/// Requirement 6 of issue 24: the home is open, so the person's own CLI, run outside any chat,
/// acts on what a chat wrote where no chat's launch reads.
const LIMITS: &[Limit] = &[Limit {
    id: "persons-own-cli",
    what: "the person's own coding CLI, run outside any chat, acts on what a chat wrote in the open home or in a read-write grant: a project's settings and instruction files (`.claude/settings.json`, `.codex/config.toml`, `.gemini/settings.json`, `.mcp.json`, `AGENTS.md`, `CLAUDE.md`, `GEMINI.md`) in a folder where the person runs it, a `~/.env` (Gemini's walk), shell startup files and git's configuration. No chat's launch acts on them (the CLIs' own settings are read-only in every chat)",
    closed_by: "`harden = true` under `[policy]` (shell startup files, git's and ssh's configuration); the folders where you keep projects named in `[policy] protected` (a chat reaches them only through its grants); and in `[policy] refused`, the names a CLI acts on at a grant's top: `refused = [\".claude/\", \".codex/\", \".gemini/\", \".agents/\", \".mcp.json\", \"AGENTS.md\", \"CLAUDE.md\", \"GEMINI.md\", \".env\"]`",
}];

pub fn run(settings: &Settings, json: bool, clis: &[String]) -> Result<ExitCode, Error> {
    // A configuration that cannot be used is reported as such, not as a way out left open.
    let ctx = crate::load(settings)?;
    let clis = crate::cli_readiness::check(&ctx, clis)?;
    // The one decision every launch makes (`launch::probe`), so that what is printed
    // is what the next launch holds.
    let facts = launch::probe();
    let both = [Mode::Full, Mode::BridgeOnly];
    let decision = platform::decide(&facts, Mode::Full, &both);
    let cannot_confine = platform::cannot_confine(&facts, Mode::Full, &both);
    let mut ways_out = ways_out(settings, &facts, decision.backend);
    // Applied by the launch, not by a backend's plan: said from the configuration (unless
    // nothing confines here, which every promise already says).
    let environment = match ctx.config.policy.env {
        sandbox_core::EnvPolicy::Allowlist => Guarantee::new(
            Promise::Environment,
            "the launch: the CLI (or a scripted step's program) starts from an empty environment, given back only `env_allow`, the basic names (sandbox_core::ENV_ALWAYS_KEPT) and the CLI's own",
            Enforcement::Fully,
        ),
        sandbox_core::EnvPolicy::Inherit => Guarantee::new(
            Promise::Environment,
            "nothing: `env` is \"inherit\" (the caller's environment reaches the chat)",
            Enforcement::Not(
                "GITHUB_TOKEN and every other variable of the caller's environment reach the chat; `env = \"allowlist\"` under [policy] keeps only `env_allow` (SECURITY.md)".into(),
            ),
        ),
    };
    if !ways_out.iter().any(|g| g.is(Promise::Environment)) {
        ways_out.push(environment);
    }
    let resource_limits = resource_limits(settings, decision.backend);
    let denials = crate::denial_log::probe(match &facts {
        Facts::Linux(l) => l.landlock_abi,
        _ => None,
    });
    let secrets = SecretsReport {
        policy: ctx.config.policy.secrets.as_str(),
        places: sandbox_core::SECRETS_HOME
            .iter()
            .map(|p| format!("~/{p}"))
            .collect(),
    };
    let report = Report {
        secrets,
        os: std::env::consts::OS,
        facts,
        backend: decision.backend,
        mode: decision.mode,
        reason: decision.reason,
        notice: decision.notice,
        cannot_confine,
        ways_out,
        denials,
        clis,
        limits: LIMITS,
        resource_limits,
    };
    if json {
        crate::print_json(&report)?;
    } else {
        print_text(&report)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The guarantees a chat launched now would get: the plan's own report on Linux.
fn ways_out(settings: &Settings, facts: &Facts, backend: Backend) -> Vec<Guarantee> {
    match (facts, backend) {
        (Facts::Linux(_), Backend::Landlock { abi, namespaces }) => {
            let compiled = Context::load(settings).and_then(|ctx| {
                let policy = ctx.policy("doctor", &[])?;
                Ok(sandbox_linux::compile(
                    &policy,
                    Kernel {
                        landlock_abi: abi,
                        namespaces,
                        fuse: sandbox_linux::fuse_available(),
                    },
                )?)
            });
            match compiled {
                Ok(plan) => with_persistence(plan.guarantees),
                // No plan, no launch: every chat is refused, and the error says why.
                Err(e) => every_promise(
                    "nothing: no chat can be launched with this configuration",
                    Enforcement::Not(e.to_string()),
                ),
            }
        }
        (Facts::MacOs(_), Backend::Seatbelt) => {
            let mut out = vec![Guarantee {
                id: "seatbelt".into(),
                what: "open, osascript, osacompile, automator, shortcuts; Apple Events; LaunchServices; file-mount; unix sockets outside the allowlist".into(),
                by: "the Seatbelt profile (cli-sandbox profile --backend seatbelt)".into(),
                enforcement: Enforcement::Fully,
            }];
            let policy = Context::load(settings).and_then(|ctx| ctx.policy("doctor", &[]));
            if policy
                .as_ref()
                .is_ok_and(|policy| !policy.secrets().is_empty())
            {
                out.push(Guarantee::new(
                    Promise::Secrets,
                    "the Seatbelt profile: every file operation denied on each place by name, in any case, present or not (a link is judged at its target), its ancestors not moved or cloned",
                    Enforcement::Partly(
                        "a hard link the person made elsewhere before the chat is another name, open".into(),
                    ),
                ));
            }
            let hardened = policy.is_ok_and(|policy| policy.home_top_closed());
            if hardened {
                out.push(Guarantee::new(
                    Promise::Persistence,
                    "the Seatbelt profile: writes denied at the home's top (a regular expression on its depth) but the CLIs' state files, and on each listed place by name, present or not",
                    Enforcement::Partly(sandbox_core::HARDEN_LEAVES_OPEN.into()),
                ));
            }
            out.extend(launch::seatbelt::limits_guarantees());
            with_persistence(out)
        }
        _ => every_promise(
            "bridge-only: the CLI's own tools are off",
            Enforcement::Not("no confinement on this machine".into()),
        ),
    }
}

/// The plan reports the `persistence` promise only with `harden`, and `secrets` only with
/// `secrets = "closed"`; without them the home is open by the owner's decision, which doctor
/// says too, with what the option would close.
fn with_persistence(mut guarantees: Vec<Guarantee>) -> Vec<Guarantee> {
    if !guarantees.iter().any(|g| g.is(Promise::Secrets)) {
        guarantees.push(Guarantee::new(
            Promise::Secrets,
            "nothing: `secrets` is open (the home is open by the owner's decision)",
            Enforcement::Not(
                "a chat reads ~/.ssh, ~/.aws, ~/.netrc and the other credential places listed below; `secrets = \"closed\"` under [policy] closes them (SECURITY.md)".into(),
            ),
        ));
    }
    if !guarantees.iter().any(|g| g.is(Promise::Persistence)) {
        guarantees.push(Guarantee::new(
            Promise::Persistence,
            "nothing: `harden` is off (the home is open by the owner's decision)",
            Enforcement::Not(
                "every persistence place of the home can be written; `harden = true` under [policy] closes the home's top and the listed places (SECURITY.md)".into(),
            ),
        ));
    }
    guarantees
}

/// Every promise with the same answer (nothing confines, or the plan could not be made).
fn every_promise(by: &str, enforcement: Enforcement) -> Vec<Guarantee> {
    Promise::ALL
        .iter()
        .map(|p| Guarantee::new(*p, by, enforcement.clone()))
        .collect()
}

fn print_text(r: &Report) -> Result<(), Error> {
    outln!("os:       {}", r.os);
    match &r.facts {
        Facts::Linux(l) => {
            outln!(
                "landlock: {}",
                l.landlock_abi
                    .map(|a| format!("ABI {a}"))
                    .unwrap_or_else(|| "missing".into())
            );
            outln!(
                "user namespaces: {}",
                if l.user_namespaces {
                    "yes".to_owned()
                } else {
                    format!("no ({})", l.user_namespaces_error.as_deref().unwrap_or("?"))
                }
            );
        }
        Facts::MacOs(m) => {
            outln!(
                "sandbox-exec: {}",
                if m.sandbox_exec { "present" } else { "missing" }
            );
            outln!("accounts: {}", m.people.join(", "));
            outln!("already sandboxed: {}", m.already_sandboxed);
            outln!(
                "release: {} (the profile needs {}.{} or later)",
                m.version.as_deref().unwrap_or("unknown"),
                platform::MACOS_MINIMUM.0,
                platform::MACOS_MINIMUM.1
            );
        }
        Facts::Other { name } => {
            outln!("platform: {name}");
        }
    }
    outln!("backend:  {}", crate::launch_cmds::backend_words(r.backend));
    outln!("mode:     {}", r.mode.as_str());
    outln!("reason:   {}", r.reason);
    outln!("notice:   {}", r.notice);
    if let Some(refused) = &r.cannot_confine {
        outln!("full CLI: refused: {refused}");
    }
    outln!("ways out:");
    for g in &r.ways_out {
        let state = match &g.enforcement {
            Enforcement::Fully => "closed".to_owned(),
            Enforcement::Partly(note) => format!("closed, with a gap: {note}"),
            Enforcement::Not(note) => format!("OPEN: {note}"),
        };
        outln!("  - {}\n      by {}\n      {}", g.what, g.by, state);
    }
    outln!(
        "credential places of the home ({}; `[policy] secrets = \"closed\"` closes them):\n      {}",
        r.secrets.policy,
        r.secrets.places.join(" ")
    );
    outln!("resource limits of a chat ([limits]):");
    for l in &r.resource_limits {
        let state = match &l.enforcement {
            Enforcement::Fully => "holds here".to_owned(),
            Enforcement::Partly(note) => format!("holds, with a gap: {note}"),
            Enforcement::Not(note) => format!("DOES NOT HOLD here: {note}"),
        };
        outln!(
            "  - {} = {}{}\n      by {}\n      {}",
            l.key,
            l.value.as_deref().unwrap_or("(not set)"),
            if l.configured { "" } else { " (default)" },
            l.by,
            state
        );
    }
    outln!("stated limits (open by the owner's decision):");
    for l in r.limits {
        outln!("  - {}\n      closed by: {}", l.what, l.closed_by);
    }
    outln!(
        "refusals recorded: {}\n      {}",
        if r.denials.recorded { "yes" } else { "NO" },
        r.denials.how
    );
    if !r.denials.never.is_empty() {
        outln!("      never: {}", r.denials.never);
    }
    crate::cli_readiness::print_text(&r.clis)?;
    Ok(())
}
