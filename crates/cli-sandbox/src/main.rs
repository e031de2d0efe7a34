//! `cli-sandbox`: launch, inspect and self-test coding CLIs inside the OS sandbox.
//!
//! This is the only place that knows the command line; every command is a few lines over the
//! `launch` library, one file per command. What it decides itself: the exit status (see
//! [`EXIT_STATUS`]), how much is logged (`-v`, `RUST_LOG`), and the shape of every JSON answer
//! (a `version` field first, `docs/json.md`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use launch::{Context, Error, Settings};
use sandbox_core::{GrantRequest, Op};

/// Writes on stdout, as `print!` does, but a stdout that cannot be written (a full disk, a
/// closed reader of a command that keeps SIGPIPE ignored, a socket with no peer) is our failure,
/// returned with `?` (status 125, said on stderr), never a panic.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_out(format_args!($($arg)*))?
    };
}

/// [`out!`] with a newline, as `println!`.
macro_rules! outln {
    () => {
        $crate::write_out(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::write_out(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

mod adapters;
mod cli_readiness;
mod completions;
mod contract;
mod denial_log;
mod doctor;
mod end_cmd;
mod exec;
mod explain;
mod helper;
mod launch_cmds;
mod logging;
mod man;
mod profile;
mod step;

/// Our own failure: bad input, a confinement that could not be applied, the helper missing.
/// The number `env`, `timeout` and `nice` keep for their own failures, so that it is told apart
/// from a program's status (2 is a common one). The helper's (`helper.rs`) is the same.
pub const FAILED: u8 = helper::FAILED;

/// The program exists but cannot be run (a shell's 126).
pub const CANNOT_RUN: u8 = 126;

/// The program was not found (a shell's 127).
pub const NOT_FOUND: u8 = 127;

/// The exit statuses, for `--help` and the man page (the README says the same).
const EXIT_STATUS: &str = "\
Exit status:
  0    success
  1    contract: a check did not get the verdict the policy expects
  125  cli-sandbox itself failed: bad input, a confinement that could not be applied, the helper
       missing or where a chat could replace it (nothing was started)
  126  the program exists but cannot be run
  127  the program was not found
  run, step: otherwise the program's own status; a program ended by a signal ends cli-sandbox
       by the same signal (a shell shows 128+N)";

/// The heading of the flags every command takes.
const GLOBAL: &str = "Global options";

/// The version of every JSON answer's shape (`"version"`, first in each): raised when a field
/// changes meaning or goes away; new fields may appear without it. See `docs/json.md`.
pub const JSON_VERSION: u32 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "cli-sandbox",
    version,
    about = "Launch coding CLIs confined by the OS sandbox",
    long_about = "Launch coding CLIs (Claude Code, Codex, Cursor, Muse, Agy, Pi, Gemini CLI) with \
                  their own tools on, confined by the OS sandbox: macOS Seatbelt, or Linux \
                  Landlock with namespaces and seccomp; bridge-only where nothing can confine.",
    after_help = EXIT_STATUS,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    globals: Globals,
    #[command(subcommand)]
    command: Command,
}

/// The flags every command takes, before or after its name (`global`).
#[derive(Debug, Args, PartialEq)]
struct Globals {
    /// The app folder as this process sees it (overrides AGENTWORKS_STATE_ROOT); it must exist.
    #[arg(long, global = true, value_name = "DIR", help_heading = GLOBAL)]
    state_root: Option<PathBuf>,
    /// AgentWorks' workspace data (overrides AGENTWORKS_WORKSPACE_DOCS); it must exist.
    #[arg(long, global = true, value_name = "DIR", help_heading = GLOBAL)]
    workspace_docs: Option<PathBuf>,
    /// A TOML configuration file (every key in config.example.toml).
    #[arg(long, global = true, value_name = "FILE", help_heading = GLOBAL)]
    config: Option<PathBuf>,
    /// Each launch step on stderr (-v), in more detail (-vv, -vvv); RUST_LOG (a list of levels
    /// and target=level: info, launch=debug) does the same and wins.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, help_heading = GLOBAL)]
    verbose: u8,
}

impl Globals {
    fn settings(&self) -> Settings {
        Settings {
            home: None,
            state_root: self.state_root.clone(),
            workspace_docs: self.workspace_docs.clone(),
            config: self.config.clone(),
            helper: None,
            accept_replaceable_helper: None,
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// What this machine can confine, and how: OS, backend, ABI, mode, every way out; with
    /// --cli, whether that CLI is ready for this person (installed, logged in, first-run
    /// screens answered) and what to run once.
    Doctor(cli_readiness::DoctorArgs),
    /// The registered CLIs, their program as found on PATH, their modes.
    Adapters(JsonFlag),
    /// One CLI's launch: the decision, its reason, the notice, the final argv, env and cwd.
    /// Creates nothing but the plan file the argv names.
    Plan(launch_cmds::PlanArgs),
    /// Writes the pre-trust edits `plan` lists (and makes the chat's runtime), for a launch
    /// from `plan --json`.
    PreTrust(launch_cmds::PreTrustArgs),
    /// Ends a chat: removes every entry its launches wrote in the person's files (and entries
    /// of chats whose runtime is gone), its plan files, and with --remove-runtime its runtime.
    /// A chat nothing is known of ends as a no-op that says so.
    End(end_cmd::EndArgs),
    /// Pre-trust, then run the CLI confined; its exit status is ours.
    #[command(after_help = EXIT_STATUS)]
    Run(launch_cmds::LaunchArgs),
    /// The verdict of the policy for one operation on one path, and the rule that decided.
    Explain(explain::ExplainArgs),
    /// The generated Seatbelt profile or Linux plan for a chat.
    Profile(profile::ProfileArgs),
    /// The sandbox contract: every CLI's real launch on a demo layout, verdicts from the disk.
    #[command(after_help = EXIT_STATUS)]
    Contract(contract::ContractArgs),
    /// Run a scripted workflow step: any program, under the chat's confinement, in its runtime.
    #[command(after_help = EXIT_STATUS)]
    Step(step::StepArgs),
    /// Shell completions, printed on stdout.
    Completions(completions::CompletionsArgs),
    /// The man page (roff), or one command's, printed on stdout.
    Man(man::ManArgs),
    /// The Linux helper: apply a compiled plan to itself and run PROGRAM (internal).
    #[command(hide = true)]
    Exec(exec::ExecArgs),
}

#[derive(Debug, Args)]
struct JsonFlag {
    /// Print JSON (docs/json.md).
    #[arg(long)]
    json: bool,
}

/// A chat and its grants: shared by every command that builds a policy.
#[derive(Debug, Args, PartialEq)]
pub struct ChatArgs {
    /// The chat's id ([A-Za-z0-9._-], 1 to 128 characters).
    #[arg(long, value_name = "ID")]
    chat: String,
    /// A folder this chat may use inside a protected root: PATH, PATH:ro or PATH:rw (read-write
    /// when no access is given); repeat it for more. A folder whose name holds `:` is given
    /// with its access written out (`DIR/wf:1:rw`). Never split at commas: a path may hold one.
    #[arg(long = "grant", value_name = "PATH[:ro|:rw]", value_parser = utf8_grant())]
    grants: Vec<String>,
}

/// A grant's path must be UTF-8: it is written into the plan (JSON) and into the person's CLI
/// settings (TOML, JSON), which hold text only. Said with the path and the remedy; clap's own
/// "invalid UTF-8 was detected in one or more arguments" names neither.
fn utf8_grant() -> impl clap::builder::TypedValueParser<Value = String> {
    use clap::builder::TypedValueParser;
    clap::builder::OsStringValueParser::new().try_map(|grant| {
        grant.into_string().map_err(|_| {
            "not UTF-8 (U+FFFD stands for the bytes that are not): a grant's path is written \
             into the plan and the CLI's settings, which hold only text; rename the folder to a \
             UTF-8 name and grant it again"
        })
    })
}

impl ChatArgs {
    fn grant_requests(&self) -> Result<Vec<GrantRequest>, Error> {
        self.grants
            .iter()
            .map(|g| GrantRequest::parse(g).map_err(Error::from))
            .collect()
    }

    fn policy(&self, ctx: &Context) -> Result<sandbox_core::Policy, Error> {
        ctx.policy(&self.chat, &self.grant_requests()?)
    }
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
    sandbox_linux::phase!("start");
    // The helper starts with every confined launch, always as `exec --policy FILE -- PROGRAM...`
    // (the argv `plan` and `run` write): that one form is read here without building the whole
    // command line's parser, which costs a launch about a fifth of a millisecond. Any other form
    // (`--help`, a typo) goes to clap as usual.
    if let Some(args) = exec::fast_path(std::env::args_os()) {
        return exec::run(&args);
    }
    // A scripted step starts at every workflow step: its command line is read without clap
    // (see `step::fast_path`); anything that reader does not take goes to clap below.
    if let Some((globals, args)) = step::fast_path(std::env::args_os()) {
        sandbox_linux::phase!("parse the command line");
        logging::init_tracing(globals.verbose);
        return finish(step::run(&globals.settings(), &args));
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    sandbox_linux::phase!("parse the command line");
    if let Command::Exec(args) = &cli.command {
        // The helper logs only when asked (RUST_LOG, or `run -v`): no subscriber otherwise.
        return exec::run(args);
    }
    if cli.command.only_answers() {
        end_by_sigpipe_when_the_reader_has_gone();
    }
    let globals = &cli.globals;
    logging::init_tracing(globals.verbose);
    let settings = globals.settings();
    let result = match &cli.command {
        Command::Doctor(a) => doctor::run(&settings, a.json, &a.clis),
        Command::Adapters(a) => adapters::run(&settings, a.json),
        Command::Plan(a) => launch_cmds::plan(&settings, a),
        Command::PreTrust(a) => launch_cmds::pre_trust(&settings, a),
        Command::Run(a) => launch_cmds::run(&settings, a, globals.verbose),
        Command::End(a) => end_cmd::run(&settings, a),
        Command::Explain(a) => explain::run(&settings, a),
        Command::Profile(a) => profile::run(&settings, a),
        Command::Step(a) => step::run(&settings, a),
        Command::Contract(a) => contract::run(globals.state_root.clone(), a),
        Command::Completions(a) => completions::run(a),
        Command::Man(a) => man::run(a),
        Command::Exec(_) => unreachable!("handled above"),
    };
    finish(result)
}

impl Command {
    /// Whether the command only answers: what it prints is all it does (it starts nothing, and
    /// `plan` has written its one file before it prints).
    fn only_answers(&self) -> bool {
        matches!(
            self,
            Command::Doctor(_)
                | Command::Adapters(_)
                | Command::Plan(_)
                | Command::Explain(_)
                | Command::Profile(_)
                | Command::Completions(_)
                | Command::Man(_)
        )
    }
}

/// A command that only answers ends as `cat` does when its reader has gone (`plan --json |
/// head -c1`): by SIGPIPE, quietly. Rust's runtime ignores SIGPIPE, and `println!` then panics
/// on the broken pipe (exit 101, "failed printing to stdout"). The commands that launch keep it
/// ignored: a launcher must not die of its caller's closed pipe while a chat runs.
fn end_by_sigpipe_when_the_reader_has_gone() {
    // SAFETY: SIG_DFL installs no handler of ours; no other thread runs yet to race with.
    let _ = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// The configuration and layout for the OS this runs on, every place the flags, the environment
/// or the configuration named checked to exist (a typo is refused before anything is computed).
pub fn load(settings: &Settings) -> Result<Context, Error> {
    let ctx = Context::load(settings)?;
    ctx.check_named_places()?;
    Ok(ctx)
}

/// As [`load`], for another OS's profile.
pub fn load_for(settings: &Settings, os: sandbox_core::Os) -> Result<Context, Error> {
    let ctx = Context::load_for(settings, os)?;
    ctx.check_named_places()?;
    Ok(ctx)
}

/// A command line clap could not read: its message, and our status for bad input. `--help` and
/// `--version` are answers, not errors.
fn usage_error(e: clap::Error) -> ExitCode {
    let _ = e.print();
    if e.use_stderr() {
        ExitCode::from(FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

/// The status of a command that returns: its own, or ours for an error.
pub fn finish(result: Result<ExitCode, Error>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            sandbox_linux::say!("cli-sandbox: {e}");
            ExitCode::from(match e {
                Error::CannotRun { missing: true, .. } => NOT_FOUND,
                Error::CannotRun { missing: false, .. } => CANNOT_RUN,
                _ => FAILED,
            })
        }
    }
}

/// The log filter for `-v` counts: warnings only, then each launch step, then its details.
pub fn verbosity_filter(verbose: u8) -> &'static str {
    match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    }
}

/// Writes `text` on stdout (see [`out!`]).
pub fn write_out(text: std::fmt::Arguments<'_>) -> Result<(), Error> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_fmt(text)
        .and_then(|()| stdout.flush())
        .map_err(|e| Error::Io {
            what: "the answer cannot be written on stdout (what the command did is done)".into(),
            source: e,
        })
}

/// Prints a value as pretty JSON on stdout, `{"version": JSON_VERSION, ...its fields}`. A path
/// that is not UTF-8 cannot be JSON text: that is bad input, said as such.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), Error> {
    #[derive(serde::Serialize)]
    struct Versioned<'a, T: serde::Serialize> {
        version: u32,
        #[serde(flatten)]
        value: &'a T,
    }
    let text = serde_json::to_string_pretty(&Versioned {
        version: JSON_VERSION,
        value,
    })
    .map_err(|e| {
        Error::BadInput(format!(
            "the answer cannot be written as JSON ({e}): a path in it is not UTF-8; rename it or drop --json"
        ))
    })?;
    outln!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_exit_status_the_binary_uses_is_in_the_help() {
        for code in [FAILED, CANNOT_RUN, NOT_FOUND] {
            assert!(EXIT_STATUS.contains(&format!("  {code}  ")), "{code}");
        }
    }

    #[test]
    fn verbosity_counts_map_to_levels() {
        assert_eq!(verbosity_filter(0), "warn");
        assert_eq!(verbosity_filter(1), "info");
        assert_eq!(verbosity_filter(2), "debug");
        assert_eq!(verbosity_filter(7), "trace");
    }
}
