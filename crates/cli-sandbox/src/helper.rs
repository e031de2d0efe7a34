//! The Linux helper: `exec --policy FILE -- PROGRAM...` applies a compiled plan to itself and
//! runs the program confined; it never returns when the program starts. The twin of
//! `sandbox-exec` (internal: `plan` and `run` write its argv).
//!
//! Two binaries run this same file: `cli-sandbox-helper` (`helper_main.rs`: this and nothing
//! else, the binary a launch starts where it can) and `cli-sandbox exec` (the full binary, for a
//! launch whose helper is `cli-sandbox` itself). It starts with every confined launch, so it does
//! as little as it can before the plan is applied: no command-line parser for its one form
//! ([`fast_path`]), and no log subscriber unless a log was asked for (`RUST_LOG`, or [`LOG_VAR`]
//! that `run -v` sets): then it says which mounts, rules and filters the plan holds, and the
//! kernel's answer to each. The smaller binary's start costs a launch about 0.15 ms less (its
//! image has half the relocations and a third of the size; BENCHMARKS.md).
//!
//! Nothing here may name the rest of either binary (`crate::...`): the file is each one's module.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sandbox_linux::say;

/// Both binaries' allocator against musl (the static build the README installs; this file is a
/// module of each): dlmalloc instead of musl's own allocator, which hands each emptied page back
/// to the kernel and maps it again at the next allocation: 20 `mmap` and 14 `munmap` while the
/// helper reads its plan, which made reading it twice as slow as with glibc and a step at 1,000
/// grants about as slow again (BENCHMARKS.md). Against glibc, glibc's allocator stays.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// Our own failure (the binaries' `FAILED`): the program was not started.
pub const FAILED: u8 = 125;

/// The log filter `run -v` hands to the helper it starts (a [`targets`] list, like `RUST_LOG`,
/// which is not used for this because the CLIs read it too). The helper removes it before the
/// program starts.
pub const LOG_VAR: &str = "CLI_SANDBOX_LOG";

/// `exec --policy FILE -- PROGRAM [ARGS...]` exactly (after the binary's name): the plan and the
/// program, or `None`.
pub fn fast_path(args: impl Iterator<Item = OsString>) -> Option<(PathBuf, Vec<OsString>)> {
    let mut args = args.skip(1);
    if args.next()? != "exec" || args.next()? != "--policy" {
        return None;
    }
    let policy = PathBuf::from(args.next()?);
    if args.next()? != "--" {
        return None;
    }
    let argv: Vec<OsString> = args.collect();
    (!argv.is_empty() && !policy.as_os_str().is_empty()).then_some((policy, argv))
}

/// Runs the helper; returns only when the program was not started, with the status to exit
/// with ([`FAILED`]), or ends as the program ends.
pub fn run(policy: &Path, argv: &[OsString]) -> u8 {
    let logging = start_logging();
    #[cfg(target_os = "linux")]
    {
        let plan = match sandbox_linux::read_plan(policy) {
            Ok(plan) => plan,
            Err(e) => {
                say!("cli-sandbox: {e}");
                return FAILED;
            }
        };
        // Entered for the rest of this process: the events of the steps below are the
        // helper's (a successful launch never returns here).
        let _span = logging.then(|| tracing::info_span!("helper", chat = %plan.chat).entered());
        if logging {
            describe(&plan, policy);
        }
        let err = sandbox_linux::apply::exec(&plan, argv, Some(&launch::egress::serve_plan));
        say!("cli-sandbox exec: not started, confinement failed: {err}");
        FAILED
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (policy, argv, logging);
        say!("cli-sandbox exec: the Linux helper runs only on Linux (use sandbox-exec on macOS)");
        FAILED
    }
}

/// A log subscriber, only when a log was asked for: two environment lookups otherwise.
fn start_logging() -> bool {
    let ours = std::env::var_os(LOG_VAR);
    if ours.is_some() {
        // SAFETY: the helper is single-threaded (it must be: a threaded process cannot clone
        // into a new user namespace) and nothing reads the environment concurrently.
        unsafe { std::env::remove_var(LOG_VAR) };
    }
    // A value that is not a `target=level` list logs nothing here: the launcher that started
    // the helper has said so already.
    let Some(filter) = std::env::var_os("RUST_LOG")
        .or(ours)
        .and_then(|f| targets(&f))
    else {
        return false;
    };
    start_subscriber(filter);
    true
}

/// A log filter as both binaries read it (`RUST_LOG`, [`LOG_VAR`]): a `target=level` list
/// (`info`, `launch=debug,warn`: what `run -v` sets, and most `RUST_LOG` values), read without
/// the regular-expression engine `EnvFilter` brings, which would double this binary's size.
/// `None` for anything else (span or field filters, text that is not UTF-8).
pub fn targets(value: &std::ffi::OsStr) -> Option<tracing_subscriber::filter::Targets> {
    value.to_str()?.parse().ok()
}

/// What the plan holds, step by step, as log events (the helper's mounts, rules and filters;
/// the kernel's answer to each follows from `sandbox_linux::apply`).
#[cfg(target_os = "linux")]
pub fn describe(plan: &sandbox_linux::plan::LinuxPlan, file: &Path) {
    use sandbox_linux::plan::MountStep;
    tracing::info!(plan = %file.display(), workdir = %plan.workdir.display(), "plan");
    for dir in &plan.create_dirs {
        tracing::debug!(folder = %dir.display(), "made before confinement, if missing");
    }
    match &plan.namespaces {
        Some(ns) => {
            tracing::info!(
                mounts = ns.mounts.len() + ns.kernel.len(),
                pid_namespace = ns.pid_namespace,
                ipc_namespace = ns.ipc_namespace,
                fresh_dev = ns.minimal_dev,
                network = if ns.network.is_some() {
                    "isolated"
                } else {
                    "shared"
                },
                system_read_only = ns.system_read_only.is_some(),
                "namespaces: user, mount"
            );
            for step in ns.mounts.iter().chain(&ns.kernel) {
                match step {
                    MountStep::Pin { path } => {
                        tracing::debug!(path = %path.display(), "mount: pinned (bound onto itself)")
                    }
                    MountStep::Mask { root, bind_back } => {
                        let back: Vec<String> = bind_back
                            .iter()
                            .map(|b| format!("{}:{}", b.path.display(), b.access.as_str()))
                            .collect();
                        tracing::debug!(
                            root = %root.display(),
                            bound_back = %back.join(" "),
                            "mount: masked (empty read-only tmpfs)"
                        )
                    }
                    MountStep::Hide { path, .. } => {
                        tracing::debug!(path = %path.display(), "mount: hidden (covered by an empty, unreadable entry)")
                    }
                    MountStep::ReadOnly { path, .. } => {
                        tracing::debug!(path = %path.display(), "mount: read-only")
                    }
                    MountStep::Keep { path, .. } => {
                        tracing::debug!(path = %path.display(), "mount: kept (bound onto itself after the masks)")
                    }
                    MountStep::PinLink { path } => {
                        tracing::debug!(path = %path.display(), "mount: symlink kept in place (bound onto itself)")
                    }
                }
            }
        }
        None => {
            tracing::info!("no namespaces: Landlock alone, the protected roots' ancestors frozen")
        }
    }
    tracing::info!(
        abi = plan.landlock.abi,
        rules = plan.landlock.rules.len(),
        scopes = %plan.landlock.scopes.join(","),
        "landlock ruleset"
    );
    for rule in &plan.landlock.rules {
        tracing::trace!(path = %rule.path.display(), rights = ?rule.rights, "landlock rule");
    }
    // The filter's switches by name, those that are on (the plan's own words).
    let seccomp = serde_json::to_value(&plan.seccomp).unwrap_or_default();
    let on: Vec<&str> = seccomp
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, v)| v.as_bool() == Some(true))
        .map(|(k, _)| k.as_str())
        .collect();
    tracing::info!(
        socket_families = %seccomp["socket_families"],
        on = %on.join(","),
        "seccomp filter"
    );
    for g in &plan.guarantees {
        tracing::debug!(promise = %g.id, enforcement = ?g.enforcement, by = %g.by, "guarantee");
    }
}

/// Log lines on stderr, without times, as `filter` lets through (both binaries' subscriber).
pub fn start_subscriber<F>(filter: F)
where
    F: tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    use tracing_subscriber::util::SubscriberInitExt;
    let _ = subscriber(filter).try_init();
}

/// The subscriber [`start_subscriber`] starts: the same lines, for the full binary's
/// subscriber built at the first warning (`logging.rs`) too.
pub fn subscriber<F>(filter: F) -> impl tracing::Subscriber + Send + Sync + 'static
where
    F: tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .without_time();
    tracing_subscriber::registry().with(filter).with(lines)
}
