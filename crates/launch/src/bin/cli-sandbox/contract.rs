//! `cli-sandbox contract`: the sandbox contract on a demo layout it builds itself.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use launch::contract::run::{Options, Report};
use launch::contract::{CLEARED_ENV, Verdict};
use launch::{Error, registry};

#[derive(Debug, Args)]
pub struct ContractArgs {
    /// Only these CLIs (default: the six of AgentWorks).
    #[arg(long = "cli", value_name = "NAME")]
    clis: Vec<String>,
    /// Print the report as JSON (and no progress).
    #[arg(long)]
    json: bool,
    /// Keep the demo layout and print its path.
    #[arg(long)]
    keep: bool,
    /// Add this grant to every launch but not to the expectations: a deliberately broken plan
    /// (for the test that proves the contract notices).
    #[arg(long, hide = true, value_name = "PATH")]
    broken_grant_for_testing: Option<PathBuf>,
    /// The model-driven layer instead: each installed real CLI, launched as the provider
    /// launches it in both shapes, plays every action with its own tools against a scripted
    /// model on 127.0.0.1 (default: every registered CLI; those not installed are skipped).
    #[arg(long)]
    agents: bool,
    /// With --agents: only this shape (default: both).
    #[arg(long, value_name = "SHAPE", requires = "agents", value_parser = ["tmux", "structured"])]
    shape: Option<String>,
    /// With --agents: how long one launch may take, in seconds.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 60,
        requires = "agents"
    )]
    launch_timeout: u64,
    /// The control run of --agents: the same launches with the sandbox's wrapper left out, to
    /// show that the layer measures the sandbox (its refused actions must then succeed).
    #[arg(long, hide = true, requires = "agents")]
    agents_without_sandbox_for_testing: bool,
    /// With --agents: this program in place of each CLI's own (a CLI that hangs or fails).
    #[arg(long, hide = true, value_name = "PATH", requires = "agents")]
    agents_program_for_testing: Option<PathBuf>,
}

pub fn run(state_root: Option<PathBuf>, args: &ContractArgs) -> Result<ExitCode, Error> {
    for var in CLEARED_ENV {
        // SAFETY: the binary is single-threaded here; nothing else reads the environment yet.
        unsafe { std::env::remove_var(var) };
    }
    if args.agents {
        for (name, value) in launch::contract::agents::PERSON_KEYS {
            // The person's keys are stand-ins: the caller's own never reach a CLI.
            // SAFETY: still single-threaded, as above.
            unsafe { std::env::set_var(name, value) };
        }
    }
    let clis: Vec<String> = if args.clis.is_empty() {
        registry::AGENTWORKS_CLIS
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        args.clis.clone()
    };
    for cli in &clis {
        if registry::find(cli).is_none() {
            return Err(Error::UnknownCli {
                name: cli.clone(),
                known: registry::names().join(", "),
            });
        }
    }
    let temp = match &state_root {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("cli-sandbox-contract-")
                .tempdir()
                .map_err(|e| Error::Io {
                    what: "a temporary folder".into(),
                    source: e,
                })?,
        ),
    };
    let root = match (&state_root, &temp) {
        (Some(dir), _) => dir.clone(),
        (None, Some(t)) => t.path().to_owned(),
        (None, None) => unreachable!("one of the two is set"),
    };
    if args.agents {
        return agents(
            args,
            clis_given(args),
            &root,
            temp,
            args.keep || state_root.is_some(),
        );
    }
    let options = Options {
        clis,
        root: root.clone(),
        helper: launch::wrap::helper_binary(None)?,
        broken_grant: args.broken_grant_for_testing.clone(),
        progress: !args.json,
    };
    let facts = launch::facts::probe_thoroughly();
    let report = launch::contract::run::run(&options, &facts)?;
    if args.json {
        crate::print_json(&report)?;
    } else {
        print_table(&report);
    }
    if args.keep || state_root.is_some() {
        if !args.json {
            println!("demo layout kept at {}", report.layout.display());
        }
        if let Some(temp) = temp {
            // Kept on purpose: the person asked to inspect it.
            let _ = temp.keep();
        }
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The CLIs named with `--cli`, or every registered one.
fn clis_given(args: &ContractArgs) -> Vec<String> {
    if args.clis.is_empty() {
        registry::names().into_iter().map(str::to_owned).collect()
    } else {
        args.clis.clone()
    }
}

fn agents(
    args: &ContractArgs,
    clis: Vec<String>,
    root: &std::path::Path,
    temp: Option<tempfile::TempDir>,
    keep: bool,
) -> Result<ExitCode, Error> {
    use launch::contract::agents::{Actual, AgentOptions};
    use sandbox_core::Shape;
    let shapes = match args.shape.as_deref() {
        Some("tmux") => vec![Shape::Tmux],
        Some(_) => vec![Shape::Structured],
        None => vec![Shape::Structured, Shape::Tmux],
    };
    let options = AgentOptions {
        clis,
        root: root.to_owned(),
        helper: launch::wrap::helper_binary(None)?,
        shapes,
        limit: std::time::Duration::from_secs(args.launch_timeout),
        progress: !args.json,
        without_sandbox_for_testing: args.agents_without_sandbox_for_testing,
        program_for_testing: args.agents_program_for_testing.clone(),
    };
    let facts = launch::facts::probe_thoroughly();
    let report = launch::contract::agents::run(&options, &facts)?;
    if args.json {
        crate::print_json(&report)?;
    } else {
        println!("backend: {:?}", report.backend);
        if !report.sandbox {
            println!(
                "!!! CONTROL RUN: the sandbox is OFF; refused actions are expected to succeed"
            );
        }
        println!(
            "{:<7} {:<10} {:<24} {:<24} {:<9} actual",
            "cli", "shape", "tool", "action", "expected"
        );
        for row in &report.rows {
            let actual = match (row.passed, row.actual) {
                (true, Actual::Allowed) => "allowed".to_owned(),
                (true, Actual::Refused) => "refused".to_owned(),
                (_, a) => format!("!! {a:?}").to_uppercase(),
            };
            let expected = match row.expected {
                Verdict::Allowed => "allowed",
                Verdict::Refused => "refused",
            };
            println!(
                "{:<7} {:<10} {:<24} {:<24} {:<9} {actual}{}",
                row.cli,
                row.shape,
                row.tool,
                row.action,
                expected,
                if row.passed {
                    String::new()
                } else {
                    format!("  ({})", row.detail)
                }
            );
        }
        for l in &report.launches {
            println!(
                "launch {} {} ({}): {:.1} s, {} requests, {} of {} tool results{}",
                l.cli,
                l.shape,
                l.what,
                l.seconds,
                l.requests,
                l.results,
                l.steps,
                if l.finished { "" } else { ", NOT FINISHED" }
            );
        }
        for s in &report.skipped {
            println!("!!! {s}");
        }
        for e in &report.errors {
            println!("!! {e}");
        }
        println!("took {:.1} s", report.seconds);
        println!("{} passed, {} failed", report.passed, report.failed);
        if keep {
            println!("demo layout kept at {}", report.layout.display());
        }
    }
    if keep && let Some(temp) = temp {
        let _ = temp.keep();
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn cell(expected: Verdict, actual: Verdict) -> String {
    match (expected == actual, actual) {
        (true, Verdict::Allowed) => "allowed".into(),
        (true, Verdict::Refused) => "refused".into(),
        (false, Verdict::Allowed) => "!! ALLOWED".into(),
        (false, Verdict::Refused) => "!! REFUSED".into(),
    }
}

fn print_table(report: &Report) {
    println!("backend: {:?}", report.backend);
    println!("reason:  {}", report.reason);
    let mut columns: Vec<(String, String)> = Vec::new();
    for row in &report.rows {
        let col = (row.cli.clone(), row.shape.clone());
        if !columns.contains(&col) {
            columns.push(col);
        }
    }
    let mut actions: Vec<(&str, &str, Verdict)> = Vec::new();
    for row in &report.rows {
        if row.action.ends_with("=step") {
            continue;
        }
        if !actions.iter().any(|(a, _, _)| *a == row.action) {
            actions.push((&row.action, &row.what, row.expected));
        }
    }
    let width = 11;
    print!("{:<26} {:<9}", "action", "expected");
    for (cli, shape) in &columns {
        let head = if shape == "-" {
            cli.clone()
        } else {
            format!("{cli}/{}", &shape[..3])
        };
        print!(" {head:<width$}");
    }
    println!();
    for (action, _, expected) in &actions {
        print!(
            "{action:<26} {:<9}",
            if *expected == Verdict::Allowed {
                "allowed"
            } else {
                "refused"
            }
        );
        for (cli, shape) in &columns {
            let text = report
                .rows
                .iter()
                .find(|r| &r.cli == cli && &r.shape == shape && r.action == *action)
                .map(|r| cell(r.expected, r.actual))
                .unwrap_or_else(|| "-".into());
            print!(" {text:<width$}");
        }
        println!();
    }
    let step_rows: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.action.ends_with("=step"))
        .collect();
    if !step_rows.is_empty() {
        let differ: Vec<_> = step_rows.iter().filter(|r| !r.passed).collect();
        println!(
            "step contract: {} agent-step verdicts compared with the scripted step, {} differ",
            step_rows.len(),
            differ.len()
        );
        for r in differ {
            println!(
                "  !! {} {} {}: agent {:?}, step {:?}",
                r.cli, r.shape, r.action, r.actual, r.expected
            );
        }
    }
    for real in &report.real_clis {
        println!(
            "real CLI {}: {} ({}) -> {}",
            real.cli,
            if real.version.is_empty() {
                "did not run"
            } else {
                real.version.lines().last().unwrap_or("")
            },
            real.evidence,
            if real.passed {
                "ran confined"
            } else {
                "!! NOT PROVEN CONFINED"
            }
        );
    }
    for e in &report.errors {
        println!("!! {e}");
    }
    println!("{} passed, {} failed", report.passed, report.failed);
}
