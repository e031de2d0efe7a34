//! `cli-sandbox exec --policy FILE -- PROGRAM...`: the Linux helper, the twin of `sandbox-exec`
//! (internal: `plan` and `run` write its argv). It applies a compiled plan to itself and runs the
//! program confined; it never returns when the program starts.
//!
//! It starts with every confined launch, so it does as little as it can before the plan is
//! applied: no command-line parser for its one form ([`fast_path`]), and no log subscriber
//! unless a log was asked for (`RUST_LOG`, or [`LOG_VAR`] that `run -v` sets): then it says
//! which mounts, rules and filters the plan holds, and the kernel's answer to each.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::FAILED;

/// The log filter `run -v` hands to the helper it starts (tracing's syntax, like `RUST_LOG`,
/// which is not used for this because the CLIs read it too). The helper removes it before the
/// program starts.
pub const LOG_VAR: &str = "CLI_SANDBOX_LOG";

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The compiled plan (written by `plan`, `run` or `step`).
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    pub argv: Vec<OsString>,
}

/// `cli-sandbox exec --policy FILE -- PROGRAM [ARGS...]` exactly, or `None`.
pub fn fast_path(args: impl Iterator<Item = OsString>) -> Option<ExecArgs> {
    let mut args = args.skip(1);
    if args.next()? != "exec" || args.next()? != "--policy" {
        return None;
    }
    let policy = PathBuf::from(args.next()?);
    if args.next()? != "--" {
        return None;
    }
    let argv: Vec<OsString> = args.collect();
    (!argv.is_empty() && !policy.as_os_str().is_empty()).then_some(ExecArgs { policy, argv })
}

/// Runs the helper; returns only when the program was not started (status 125), or ends as
/// the program ends.
pub fn run(args: &ExecArgs) -> ExitCode {
    let logging = start_logging();
    #[cfg(target_os = "linux")]
    {
        let plan = match launch::linux::read_plan(&args.policy) {
            Ok(plan) => plan,
            Err(e) => return crate::finish(Err(e.into())),
        };
        // Entered for the rest of this process: the events of the steps below are the
        // helper's (a successful launch never returns here).
        let _span = logging.then(|| tracing::info_span!("helper", chat = %plan.chat).entered());
        if logging {
            describe(&plan, &args.policy);
        }
        let err = launch::linux::apply::exec(&plan, &args.argv);
        eprintln!("cli-sandbox exec: not started, confinement failed: {err}");
        ExitCode::from(FAILED)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (args, logging);
        eprintln!(
            "cli-sandbox exec: the Linux helper runs only on Linux (use sandbox-exec on macOS)"
        );
        ExitCode::from(FAILED)
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
    let filter = std::env::var_os("RUST_LOG").or(ours);
    let Some(filter) = filter.and_then(|f| f.into_string().ok()) else {
        return false;
    };
    crate::start_subscriber(tracing_subscriber::EnvFilter::new(filter));
    true
}

/// What the plan holds, step by step, as log events (the helper's mounts, rules and filters;
/// the kernel's answer to each follows from `launch::linux::apply`).
#[cfg(target_os = "linux")]
pub fn describe(plan: &launch::linux::plan::LinuxPlan, file: &Path) {
    use launch::linux::plan::MountStep;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cli, Command};
    use clap::Parser;

    fn args(text: &[&str]) -> impl Iterator<Item = OsString> {
        let mut all = vec![OsString::from("cli-sandbox")];
        all.extend(text.iter().map(OsString::from));
        all.into_iter()
    }

    #[test]
    fn the_helpers_one_form_skips_the_parser_and_every_other_goes_to_it() {
        let fast = fast_path(args(&[
            "exec",
            "--policy",
            "/p.json",
            "--",
            "/bin/true",
            "-x",
        ]))
        .expect("the form plan and run write");
        assert_eq!(fast.policy, PathBuf::from("/p.json"));
        assert_eq!(
            fast.argv,
            [OsString::from("/bin/true"), OsString::from("-x")]
        );
        for other in [
            &["exec", "--help"][..],
            &["exec", "--policy", "/p.json"],
            &["exec", "--policy", "/p.json", "--"],
            &["exec", "--policy=/p.json", "--", "/bin/true"],
            &["exec", "/bin/true"],
            &[
                "--config", "c.toml", "exec", "--policy", "/p.json", "--", "x",
            ],
            &["step", "--chat", "c", "--", "x"],
            &[],
        ] {
            assert!(fast_path(args(other)).is_none(), "{other:?}");
        }
        // What the fast path takes, clap takes the same way.
        let cli =
            Cli::try_parse_from(args(&["exec", "--policy", "/p.json", "--", "/bin/true"])).unwrap();
        let Command::Exec(slow) = cli.command else {
            panic!("not exec")
        };
        assert_eq!(slow.policy, PathBuf::from("/p.json"));
        assert_eq!(slow.argv, [OsString::from("/bin/true")]);
    }
}
