//! `cli-sandbox`: launch, inspect and self-test coding CLIs inside the OS sandbox.
//!
//! This is the only place that knows the command line; every command is a few lines over the
//! `launch` library.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use launch::{Context, Error, Settings};
use sandbox_core::{GrantRequest, Op};

mod adapters;
mod contract;
mod doctor;
mod explain;
mod launch_cmds;
mod profile;
mod step;

#[derive(Debug, Parser)]
#[command(
    name = "cli-sandbox",
    version,
    about = "Launch coding CLIs confined by the OS sandbox"
)]
struct Cli {
    /// The app folder as this process sees it (overrides AGENTWORKS_STATE_ROOT).
    #[arg(long, global = true, value_name = "DIR")]
    state_root: Option<PathBuf>,
    /// AgentWorks' workspace data (overrides AGENTWORKS_WORKSPACE_DOCS).
    #[arg(long, global = true, value_name = "DIR")]
    workspace_docs: Option<PathBuf>,
    /// A TOML configuration file (see config.example.toml).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// More log output (also RUST_LOG).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// What this machine can confine, and how: OS, backend, ABI, mode, every way out.
    Doctor(JsonFlag),
    /// The registered CLIs, their program as found on PATH, their modes.
    Adapters(JsonFlag),
    /// One CLI's launch: the decision, its reason, the notice, the final argv, env and cwd.
    Plan(launch_cmds::LaunchArgs),
    /// Pre-trust, then run the CLI confined; its exit status is ours.
    Run(launch_cmds::LaunchArgs),
    /// The verdict of the policy for one operation on one path, and the rule that decided.
    Explain(explain::ExplainArgs),
    /// The generated Seatbelt profile or Linux plan for a chat.
    Profile(profile::ProfileArgs),
    /// The sandbox contract: every CLI's real launch on a demo layout, verdicts from the disk.
    Contract(contract::ContractArgs),
    /// Run a scripted workflow step: any program, under the chat's confinement, in its runtime.
    Step(step::StepArgs),
    /// The Linux helper: apply a compiled plan to itself and run PROGRAM (internal).
    #[command(hide = true)]
    Exec(ExecArgs),
}

#[derive(Debug, Args)]
struct JsonFlag {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// A chat and its grants: shared by every command that builds a policy.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The chat's id ([A-Za-z0-9._-], 1 to 128 characters).
    #[arg(long, value_name = "ID")]
    chat: String,
    /// A folder this chat may use inside a protected root: PATH, PATH:ro or PATH:rw.
    #[arg(long = "grant", value_name = "PATH[:ro|:rw]")]
    grants: Vec<String>,
}

impl ChatArgs {
    fn grant_requests(&self) -> Vec<GrantRequest> {
        self.grants.iter().map(|g| GrantRequest::parse(g)).collect()
    }

    fn policy(&self, ctx: &Context) -> Result<sandbox_core::Policy, Error> {
        ctx.policy(&self.chat, &self.grant_requests())
    }
}

#[derive(Debug, Args)]
struct ExecArgs {
    /// The compiled plan (written by `plan`, `run` or `step`).
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    argv: Vec<OsString>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OpArg {
    Read,
    Write,
    Exec,
    List,
    Move,
}

impl From<OpArg> for Op {
    fn from(op: OpArg) -> Op {
        match op {
            OpArg::Read => Op::Read,
            OpArg::Write => Op::Write,
            OpArg::Exec => Op::Exec,
            OpArg::List => Op::List,
            OpArg::Move => Op::Move,
        }
    }
}

fn main() -> ExitCode {
    launch::phase!("start");
    // The helper starts with every confined launch, always as `exec --policy FILE -- PROGRAM...`
    // (the argv `plan` and `run` write): that one form is read here without building the whole
    // command line's parser, which costs a launch about a fifth of a millisecond. Any other form
    // (`--help`, a typo) goes to clap as usual.
    if let Some(args) = exec_fast_path(std::env::args_os()) {
        return finish(exec(&args));
    }
    let cli = Cli::parse();
    launch::phase!("parse the command line");
    // The exec helper starts with every confined launch and logs nothing: it skips the log
    // subscriber's set-up (see BENCHMARKS.md).
    if !matches!(cli.command, Command::Exec(_)) {
        init_tracing(cli.verbose);
    }
    if let Command::Contract(args) = &cli.command {
        return finish(contract::run(cli.state_root.clone(), args));
    }
    let settings = Settings {
        home: None,
        state_root: cli.state_root,
        workspace_docs: cli.workspace_docs,
        config: cli.config,
        helper: None,
    };
    let result = match cli.command {
        Command::Doctor(a) => doctor::run(&settings, a.json),
        Command::Adapters(a) => adapters::run(&settings, a.json),
        Command::Plan(a) => launch_cmds::plan(&settings, &a),
        Command::Run(a) => launch_cmds::run(&settings, &a),
        Command::Explain(a) => explain::run(&settings, &a),
        Command::Profile(a) => profile::run(&settings, &a),
        Command::Step(a) => step::run(&settings, a),
        Command::Exec(a) => exec(&a),
        Command::Contract(_) => unreachable!("handled above"),
    };
    finish(result)
}

fn finish(result: Result<ExitCode, Error>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cli-sandbox: {e}");
            ExitCode::from(if e.is_bad_input() { 2 } else { 1 })
        }
    }
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .init();
}

/// `cli-sandbox exec --policy FILE -- PROGRAM [ARGS...]` exactly, or `None`.
fn exec_fast_path(args: impl Iterator<Item = OsString>) -> Option<ExecArgs> {
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

/// `cli-sandbox exec`: never returns on success (this process ends as the program ends).
fn exec(args: &ExecArgs) -> Result<ExitCode, Error> {
    #[cfg(target_os = "linux")]
    {
        let plan = launch::linux::read_plan(&args.policy)?;
        let err = launch::linux::apply::exec(&plan, &args.argv);
        eprintln!("cli-sandbox exec: not started, confinement failed: {err}");
        Ok(ExitCode::from(2))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = args;
        eprintln!(
            "cli-sandbox exec: the Linux helper runs only on Linux (use sandbox-exec on macOS)"
        );
        Ok(ExitCode::from(2))
    }
}

/// Prints a value as pretty JSON on stdout.
/// Prints a value as pretty JSON on stdout. A path that is not UTF-8 cannot be JSON text: that
/// is bad input, said as such.
fn print_json(value: &impl serde::Serialize) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(value).map_err(|e| {
        Error::BadInput(format!(
            "the answer cannot be written as JSON ({e}): a path in it is not UTF-8; rename it or drop --json"
        ))
    })?;
    println!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &[&str]) -> impl Iterator<Item = OsString> {
        let mut all = vec![OsString::from("cli-sandbox")];
        all.extend(text.iter().map(OsString::from));
        all.into_iter()
    }

    #[test]
    fn the_helpers_one_form_skips_the_parser_and_every_other_goes_to_it() {
        let fast = exec_fast_path(args(&[
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
            assert!(exec_fast_path(args(other)).is_none(), "{other:?}");
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
