//! `cli-sandbox step`: a scripted workflow step under the chat's confinement, in its runtime.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Args, Parser};
use launch::{Context, Error, Settings};

use crate::{ChatArgs, Globals};

#[derive(Debug, Args, PartialEq)]
pub struct StepArgs {
    #[command(flatten)]
    chat: ChatArgs,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    argv: Vec<OsString>,
}

/// `step`'s command line alone: the whole command line's parser (`Cli`) with `step` as its only
/// command, built from the same types (the global flags, `StepArgs`), so that clap reads a step
/// exactly as the whole parser does (global flags before and after the command's name, counts,
/// `--`), without building every other command's flags.
#[derive(Debug, Parser)]
#[command(
    name = "cli-sandbox",
    disable_help_flag = true,
    disable_help_subcommand = true
)]
pub struct StepLine {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    command: StepCommand,
}

#[derive(Debug, clap::Subcommand)]
enum StepCommand {
    #[command(disable_help_flag = true)]
    Step(StepArgs),
}

impl StepLine {
    pub fn args(&self) -> &StepArgs {
        let StepCommand::Step(args) = &self.command;
        args
    }
}

/// `cli-sandbox [GLOBAL...] step ARGS...`, read by [`StepLine`]'s parser: the whole command
/// line's parser builds every command's flags first, about a tenth of a millisecond at every
/// scripted step (BENCHMARKS.md). `None` for any other command line, and for one this parser
/// refuses or answers (`--help`, `help`, another command's name): the whole parser then reads it
/// and says what is wrong as usual. A property test checks that every command line read here
/// is read the same by the whole parser.
pub fn fast_path(args: impl Iterator<Item = OsString>) -> Option<StepLine> {
    StepLine::try_parse_from(args).ok()
}

pub fn run(settings: &Settings, args: &StepArgs) -> Result<ExitCode, Error> {
    let ctx = crate::load(settings)?;
    launch::phase!("load the layout and configuration");
    let policy = args.chat.policy(&ctx)?;
    launch::phase!("build the policy");
    ctx.ensure_runtime(&policy)?;
    launch::phase!("make the runtime");
    confined_exec(&ctx, &policy, &args.argv)
}

/// Linux: the helper applied in this very process (no second exec on the launch path).
#[cfg(target_os = "linux")]
fn confined_exec(
    _ctx: &Context,
    policy: &sandbox_core::Policy,
    argv: &[OsString],
) -> Result<ExitCode, Error> {
    let plan = launch::linux::compile(policy, launch::linux::this_kernel())?;
    launch::phase!("compile the plan");
    let _span = tracing::info_span!("helper", chat = %plan.chat).entered();
    if tracing::enabled!(tracing::Level::INFO) {
        crate::helper::describe(&plan, std::path::Path::new("(compiled in this process)"));
    }
    let err = launch::linux::apply::exec(&plan, argv);
    launch::say!("cli-sandbox step: not started, confinement failed: {err}");
    Ok(ExitCode::from(crate::FAILED))
}

/// macOS: `sandbox-exec` with the chat's profile, exec'd in the runtime.
#[cfg(not(target_os = "linux"))]
fn confined_exec(
    ctx: &Context,
    policy: &sandbox_core::Policy,
    argv: &[OsString],
) -> Result<ExitCode, Error> {
    use std::os::unix::process::CommandExt;
    let facts = launch::facts::probe();
    let decision = sandbox_core::platform::decide(
        &facts,
        sandbox_core::Mode::Full,
        &[sandbox_core::Mode::Full],
    );
    if decision.backend == sandbox_core::Backend::None {
        return Err(Error::Other(format!(
            "a scripted step needs confinement and this machine has none: {}",
            decision.reason
        )));
    }
    let (wrapped, _) = launch::wrap::wrap(ctx, policy, decision.backend, argv.to_vec())?;
    let mut cmd = std::process::Command::new(&wrapped[0]);
    cmd.args(&wrapped[1..]).current_dir(policy.runtime());
    // A descriptor this process inherited would stay usable inside, whatever the profile says.
    launch::seatbelt::close_inherited_descriptors(&mut cmd);
    let err = cmd.exec();
    Err(Error::Io {
        what: format!(
            "the sandbox `{}` cannot be started",
            wrapped[0].to_string_lossy()
        ),
        source: err,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cli, Command};
    use clap::CommandFactory;
    use proptest::prelude::*;

    fn line(words: &[&str]) -> Vec<OsString> {
        std::iter::once("cli-sandbox")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect()
    }

    /// What the whole parser makes of `words`, when it is a step.
    fn whole(words: &[OsString]) -> Option<(Globals, StepArgs)> {
        let cli = Cli::try_parse_from(words).ok()?;
        match cli.command {
            Command::Step(args) => Some((cli.globals, args)),
            _ => None,
        }
    }

    #[test]
    fn the_step_parser_is_consistent() {
        StepLine::command().debug_assert();
    }

    #[test]
    fn a_step_is_read_by_its_own_parser_as_the_whole_parser_reads_it() {
        for words in [
            &["step", "--chat", "c", "--", "/bin/true"][..],
            &[
                "--config", "c.toml", "step", "--chat", "c", "--grant", "/w:ro", "--", "x",
            ],
            &[
                "-vv",
                "--state-root=/s",
                "step",
                "--chat",
                "c",
                "--config",
                "d",
                "--",
                "x",
                "-v",
            ],
            &["--config", "step", "step", "--chat", "c", "--", "x"],
            // Global flags on both sides of the command's name: counted, or the last one wins,
            // as the whole parser does.
            &["-v", "step", "-v", "--chat", "c", "--", "x"],
            &[
                "--config", "a", "step", "--config", "b", "--chat", "c", "--", "x",
            ],
        ] {
            let words = line(words);
            let fast = fast_path(words.clone().into_iter()).expect("a step");
            let (globals, args) = whole(&words).expect("the whole parser reads a step");
            assert_eq!((&fast.globals, fast.args()), (&globals, &args), "{words:?}");
        }
        for words in [
            &["step", "--help"][..],
            &["step", "--chat", "c"],
            &["--chat", "c", "step", "--", "x"],
            &["plan", "--chat", "step", "--cli", "codex"],
            &["--", "step", "--chat", "c", "--", "x"],
            &["--config", "step"],
            &[],
        ] {
            assert!(fast_path(line(words).into_iter()).is_none(), "{words:?}");
        }
    }

    /// The words the property test draws from: flags of both parsers, values, and ones that
    /// look like a command or end the flags.
    const WORDS: &[&str] = &[
        "step",
        "plan",
        "--config",
        "--config=c",
        "c",
        "--chat",
        "--chat=x",
        "x",
        "--grant",
        "/g:ro",
        "--state-root",
        "--workspace-docs=/w",
        "-v",
        "-vv",
        "--verbose",
        "--",
        "-",
        "--help",
        "-h",
        "--version",
        "--cli",
        "codex",
        // Values that look like the command, a flag or the end of the flags, glued to a flag.
        "--config=step",
        "--chat=step",
        "--grant=--",
        "--state-root=-v",
        "-V",
        "help",
        "exec",
        "--policy",
    ];

    proptest! {
        /// Any command line the step's parser takes, the whole parser takes as the same step:
        /// random words around the one form that is a step, so that many lines are taken.
        #[test]
        fn the_fast_path_never_reads_a_line_otherwise_than_the_whole_parser(
            before in proptest::collection::vec(proptest::sample::select(WORDS), 0..4),
            after in proptest::collection::vec(proptest::sample::select(WORDS), 0..6),
            tail in proptest::collection::vec(proptest::sample::select(WORDS), 0..3),
        ) {
            let mut words = before;
            words.extend(["step", "--chat", "x"]);
            words.extend(after);
            words.extend(["--", "prog"]);
            words.extend(tail);
            let words = line(&words);
            if let Some(fast) = fast_path(words.clone().into_iter()) {
                let whole = whole(&words);
                let fast = Some((&fast.globals, fast.args()));
                prop_assert_eq!(fast, whole.as_ref().map(|(g, a)| (g, a)), "{:?}", words);
            }
        }
    }
}
