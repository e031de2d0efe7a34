//! `cli-sandbox doctor`: what this machine can confine, and how.

use std::process::ExitCode;

use launch::linux::plan::Kernel;
use launch::{Context, Error, Settings};
use sandbox_core::platform::{self, Facts};
use sandbox_core::{Backend, Mode};
use sandbox_core::{Enforcement, Guarantee, Promise};
use serde::Serialize;

#[derive(Debug, Serialize)]
struct Report {
    os: &'static str,
    facts: Facts,
    backend: Backend,
    mode: Mode,
    reason: String,
    notice: String,
    ways_out: Vec<Guarantee>,
}

pub fn run(settings: &Settings, json: bool) -> Result<ExitCode, Error> {
    // A configuration that cannot be used is reported as such, not as a way out left open.
    crate::load(settings)?;
    let facts = launch::facts::probe_thoroughly();
    let decision = platform::decide(&facts, Mode::Full, &[Mode::Full, Mode::BridgeOnly]);
    let ways_out = ways_out(settings, &facts, decision.backend);
    let report = Report {
        os: std::env::consts::OS,
        facts,
        backend: decision.backend,
        mode: decision.mode,
        reason: decision.reason,
        notice: decision.notice,
        ways_out,
    };
    if json {
        crate::print_json(&report)?;
    } else {
        print_text(&report);
    }
    Ok(ExitCode::SUCCESS)
}

/// The guarantees a chat launched now would get: the plan's own report on Linux.
fn ways_out(settings: &Settings, facts: &Facts, backend: Backend) -> Vec<Guarantee> {
    match (facts, backend) {
        (Facts::Linux(_), Backend::Landlock { abi, namespaces }) => {
            let compiled = Context::load(settings).and_then(|ctx| {
                let policy = ctx.policy("doctor", &[])?;
                Ok(launch::linux::compile(&policy, Kernel { landlock_abi: abi, namespaces })?)
            });
            match compiled {
                Ok(plan) => plan.guarantees,
                // No plan, no launch: every chat is refused, and the error says why.
                Err(e) => every_promise(
                    "nothing: no chat can be launched with this configuration",
                    Enforcement::Not(e.to_string()),
                ),
            }
        }
        (Facts::MacOs(_), Backend::Seatbelt) => vec![Guarantee {
            id: "seatbelt".into(),
            what: "open, osascript, osacompile, automator, shortcuts; Apple Events; LaunchServices; file-mount; unix sockets outside the allowlist".into(),
            by: "the Seatbelt profile (cli-sandbox profile --backend seatbelt)".into(),
            enforcement: Enforcement::Fully,
        }],
        _ => every_promise(
            "bridge-only: the CLI's own tools are off",
            Enforcement::Not("no confinement on this machine".into()),
        ),
    }
}

/// Every promise with the same answer (nothing confines, or the plan could not be made).
fn every_promise(by: &str, enforcement: Enforcement) -> Vec<Guarantee> {
    Promise::ALL
        .iter()
        .map(|p| Guarantee::new(*p, by, enforcement.clone()))
        .collect()
}

fn print_text(r: &Report) {
    println!("os:       {}", r.os);
    match &r.facts {
        Facts::Linux(l) => {
            println!(
                "landlock: {}",
                l.landlock_abi
                    .map(|a| format!("ABI {a}"))
                    .unwrap_or_else(|| "missing".into())
            );
            println!(
                "user namespaces: {}",
                if l.user_namespaces {
                    "yes".to_owned()
                } else {
                    format!("no ({})", l.user_namespaces_error.as_deref().unwrap_or("?"))
                }
            );
        }
        Facts::MacOs(m) => {
            println!(
                "sandbox-exec: {}",
                if m.sandbox_exec { "present" } else { "missing" }
            );
            println!("accounts: {}", m.people.join(", "));
            println!("already sandboxed: {}", m.already_sandboxed);
            println!(
                "release: {} (the profile needs {}.{} or later)",
                m.version.as_deref().unwrap_or("unknown"),
                platform::MACOS_MINIMUM.0,
                platform::MACOS_MINIMUM.1
            );
        }
        Facts::Other { name } => println!("platform: {name}"),
    }
    println!("backend:  {}", crate::launch_cmds::backend_words(r.backend));
    println!("mode:     {}", r.mode.as_str());
    println!("reason:   {}", r.reason);
    println!("notice:   {}", r.notice);
    println!("ways out:");
    for g in &r.ways_out {
        let state = match &g.enforcement {
            Enforcement::Fully => "closed".to_owned(),
            Enforcement::Partly(note) => format!("closed, with a gap: {note}"),
            Enforcement::Not(note) => format!("OPEN: {note}"),
        };
        println!("  - {}\n      by {}\n      {}", g.what, g.by, state);
    }
}
