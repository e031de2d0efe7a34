//! `cli-sandbox step`: a scripted workflow step under the chat's confinement, in its runtime.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use launch::{Error, LaunchSpec, PreparedLaunch, Settings};

use crate::{ChatArgs, Globals};

#[derive(Debug, Args, PartialEq)]
pub struct StepArgs {
    #[command(flatten)]
    chat: ChatArgs,
    /// Write the record of what the kernel refused the chat to FILE when the step ends (JSON,
    /// docs/json.md "denials"; replaced if there). Where nothing can be recorded the record
    /// says so, with why.
    #[arg(long, value_name = "FILE")]
    denials: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    argv: Vec<OsString>,
}

/// `cli-sandbox [GLOBAL...] step [FLAG...] -- PROGRAM [ARGS...]`, read without clap: a step
/// starts at every workflow step, and building clap's parser and touching its code costs a
/// launch about 0.13 ms cold (BENCHMARKS.md). Taken are the flags `step` has (`--chat`,
/// `--grant`, `--denials`) and the global ones (`--state-root`, `--workspace-docs`, `--config`, `-v`,
/// `-vv`..., `--verbose`), before or after `step` as clap allows, each value in the next word
/// or after `=`. Everything else is `None`, and the whole parser then reads the line and says
/// what is wrong as usual: another command, `--help`, a flag with a value given twice, `-v` on
/// both sides of `step`, a value that is empty, starts with `-` or (for the chat and its
/// grants) is not UTF-8, a line without `--` or without a program. So this reader decides
/// nothing clap would decide otherwise; property tests check that every line it takes, the
/// whole parser reads the same.
pub fn fast_path(args: impl Iterator<Item = OsString>) -> Option<(Globals, StepArgs)> {
    let mut words = args.skip(1);
    let mut line = Line::default();
    let mut seen_step = false;
    loop {
        let word = words.next()?;
        if !seen_step && word == "step" {
            seen_step = true;
            continue;
        }
        if seen_step && word == "--" {
            break;
        }
        line.take(&word, &mut words, seen_step)?;
    }
    let argv: Vec<OsString> = words.collect();
    if argv.is_empty() {
        return None;
    }
    let globals = Globals {
        state_root: line.state_root,
        workspace_docs: line.workspace_docs,
        config: line.config,
        verbose: line.verbose,
    };
    let chat = ChatArgs {
        chat: line.chat?,
        grants: line.grants,
    };
    Some((
        globals,
        StepArgs {
            chat,
            denials: line.denials,
            argv,
        },
    ))
}

/// What [`fast_path`] has read so far.
#[derive(Default)]
struct Line {
    state_root: Option<PathBuf>,
    workspace_docs: Option<PathBuf>,
    config: Option<PathBuf>,
    verbose: u8,
    /// Whether the `-v` counted so far came after `step`.
    verbose_side: Option<bool>,
    chat: Option<String>,
    grants: Vec<String>,
    denials: Option<PathBuf>,
}

impl Line {
    /// Takes one flag (and its value from `rest` when it is not glued on with `=`); `None` for a
    /// word that is not one of the flags this reader takes at this place, or a value it leaves
    /// to clap.
    fn take(
        &mut self,
        word: &OsStr,
        rest: &mut impl Iterator<Item = OsString>,
        after_step: bool,
    ) -> Option<()> {
        let bytes = word.as_bytes();
        if let Some(vs) = bytes.strip_prefix(b"-")
            && !vs.is_empty()
            && vs.iter().all(|&b| b == b'v')
        {
            return self.count(vs.len(), after_step);
        }
        if bytes == b"--verbose" {
            return self.count(1, after_step);
        }
        let (name, glued) = match bytes.iter().position(|&b| b == b'=') {
            Some(at) => (&bytes[..at], Some(OsStr::from_bytes(&bytes[at + 1..]))),
            None => (bytes, None),
        };
        let value = |rest: &mut dyn Iterator<Item = OsString>| -> Option<OsString> {
            let value = match glued {
                Some(value) => value.to_owned(),
                None => rest.next()?,
            };
            // clap reads a word after a flag that starts with `-` as another flag.
            let refused = value.is_empty() || value.as_bytes().starts_with(b"-");
            (!refused).then_some(value)
        };
        match name {
            b"--state-root" => set(&mut self.state_root, value(rest)?.into()),
            b"--workspace-docs" => set(&mut self.workspace_docs, value(rest)?.into()),
            b"--config" => set(&mut self.config, value(rest)?.into()),
            b"--chat" if after_step => set(&mut self.chat, value(rest)?.into_string().ok()?),
            b"--denials" if after_step => set(&mut self.denials, value(rest)?.into()),
            b"--grant" if after_step => {
                self.grants.push(value(rest)?.into_string().ok()?);
                Some(())
            }
            _ => None,
        }
    }

    /// `-v` counted, on one side of `step` only: clap counts them on the side of the last
    /// (`-v step -vv` is 2), which is left to it.
    fn count(&mut self, n: usize, after_step: bool) -> Option<()> {
        if self.verbose_side.is_some_and(|side| side != after_step) {
            return None;
        }
        self.verbose_side = Some(after_step);
        self.verbose = self.verbose.checked_add(u8::try_from(n).ok()?)?;
        Some(())
    }
}

/// A flag's value, given once: a second is left to clap (which refuses some and lets a later
/// one win in others).
fn set<T>(place: &mut Option<T>, value: T) -> Option<()> {
    place.is_none().then(|| *place = Some(value))
}

pub fn run(settings: &Settings, args: &StepArgs) -> Result<ExitCode, Error> {
    let ctx = crate::load(settings)?;
    sandbox_linux::phase!("load the layout and configuration");
    let denials = match &args.denials {
        Some(path) => Some(
            std::path::absolute(path)
                .map_err(|e| Error::BadInput(format!("--denials `{}`: {e}", path.display())))?,
        ),
        None => None,
    };
    // A scripted step is a program launched under the chat's confinement, through the same
    // prepared launch as `run` and the library; on Linux this process applies the plan itself
    // (no plan file, no helper: `prepare_to_exec`).
    let mut spec = LaunchSpec::program(&args.chat.chat, &args.argv[0], args.argv[1..].to_vec());
    spec.grants = args.chat.grant_requests()?;
    spec.denials = denials;
    let launch = PreparedLaunch::prepare_to_exec(&ctx, &spec, &launch::probe())?;
    sandbox_linux::phase!("compile the plan");
    launch.pre_trust()?;
    sandbox_linux::phase!("make the runtime");
    #[cfg(target_os = "linux")]
    if let Some(plan) = launch.in_process_plan() {
        let _span = tracing::info_span!("helper", chat = %plan.chat).entered();
        if tracing::enabled!(tracing::Level::INFO) {
            crate::helper::describe(plan, std::path::Path::new("(compiled in this process)"));
        }
    }
    match launch.exec() {
        err @ Error::Confinement { .. } => {
            sandbox_linux::say!("cli-sandbox step: not started, {err}");
            Ok(ExitCode::from(crate::FAILED))
        }
        err => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cli, Command};
    use clap::Parser;
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

    /// `words` taken by the step's reader, and read as the whole parser reads them.
    fn taken_as_clap_takes_it(words: Vec<OsString>) {
        let fast = fast_path(words.clone().into_iter())
            .unwrap_or_else(|| panic!("the step's reader did not take {words:?}"));
        let whole = whole(&words).expect("the whole parser reads a step");
        assert_eq!(fast, whole, "{words:?}");
    }

    #[test]
    fn a_step_is_read_by_its_own_reader_as_the_whole_parser_reads_it() {
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
                "--workspace-docs",
                "/w",
                "--config",
                "d",
                "--grant=/a:rw",
                "--grant",
                "/b",
                "--",
                "x",
                "-v",
                "--",
                "--chat",
            ],
            &["--config", "step", "step", "--chat", "step", "--", "step"],
            &[
                "--config=a=b",
                "step",
                "--chat=c",
                "--grant=/x=y:ro",
                "--",
                "x",
            ],
            &["-v", "--verbose", "-vvv", "step", "--chat", "c", "--", "x"],
            &["step", "-v", "--chat", "c", "--verbose", "-vv", "--", "x"],
            &["step", "--denials", "/r.json", "--chat", "c", "--", "x"],
            &["step", "--chat", "c", "--denials=/r.json", "--", "x"],
        ] {
            taken_as_clap_takes_it(line(words));
        }
    }

    #[test]
    fn a_line_the_reader_does_not_take_goes_to_the_whole_parser() {
        for words in [
            // Not a step, or clap's to answer or refuse.
            &["step", "--help"][..],
            &["-h", "step", "--chat", "c", "--", "x"],
            &["help", "step"],
            &["plan", "--chat", "step", "--cli", "codex"],
            &["--", "step", "--chat", "c", "--", "x"],
            &["--config", "step"],
            &[],
            // No chat, no `--`, no program.
            &["step", "--", "x"],
            &["step", "--chat", "c"],
            &["step", "--chat", "c", "--"],
            // `step`'s own flags before its name, a word before `--`, a flag it does not have.
            &["--chat", "c", "step", "--", "x"],
            &["step", "--chat", "c", "x", "--", "y"],
            &["step", "--chat", "c", "--json", "--", "x"],
            &["step", "step", "--chat", "c", "--", "x"],
            // A flag given twice (clap lets the last win for some, refuses others), or a global
            // one on both sides of `step`.
            &["-v", "step", "-v", "--chat", "c", "--", "x"],
            &[
                "--config", "a", "step", "--chat", "c", "--config", "b", "--", "x",
            ],
            &["step", "--chat", "c", "--chat", "d", "--", "x"],
            // Values clap reads otherwise: empty, a flag, glued words.
            &["step", "--chat=", "--", "x"],
            &["step", "--chat", "", "--", "x"],
            &["step", "--chat", "-v", "--", "x"],
            &["--config=-v", "step", "--chat", "c", "--", "x"],
            &["step", "--chat", "c", "--grant", "--", "x"],
            &["-vx", "step", "--chat", "c", "--", "x"],
            &["--verbose=2", "step", "--chat", "c", "--", "x"],
            &["-", "step", "--chat", "c", "--", "x"],
        ] {
            assert!(fast_path(line(words).into_iter()).is_none(), "{words:?}");
        }
    }

    #[test]
    fn a_path_that_is_not_utf8_is_taken_and_a_chat_that_is_not_is_left_to_clap() {
        use std::os::unix::ffi::OsStringExt;
        let odd = || OsString::from_vec(b"/w\xff".to_vec());
        let mut words = line(&["--config"]);
        words.push(odd());
        words.extend(
            line(&["step", "--chat", "c", "--", "x"])
                .into_iter()
                .skip(1),
        );
        taken_as_clap_takes_it(words);
        let mut words = line(&["step", "--chat"]);
        words.push(odd());
        words.extend(line(&["--", "x"]).into_iter().skip(1));
        assert!(fast_path(words.into_iter()).is_none());
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
        "-vvv",
        "--verbose",
        "--",
        "-",
        "",
        "=",
        "--help",
        "-h",
        "--version",
        "--cli",
        "codex",
        // Values that look like the command, a flag or the end of the flags, glued to a flag.
        "--config=step",
        "--chat=step",
        "--grant=--",
        "--grant=",
        "--grant=a=b",
        "--state-root=-v",
        "--verbose=1",
        "-vx",
        "-V",
        "help",
        "exec",
        "--policy",
    ];

    /// A flag with its value, as a provider writes one, and a few the reader leaves to clap.
    const UNITS: &[&[&str]] = &[
        &["--chat", "c"],
        &["--chat=d"],
        &["--grant", "/g:ro"],
        &["--grant=/h"],
        &["--config", "c.toml"],
        &["--config=step"],
        &["--state-root", "/s"],
        &["--workspace-docs=/w"],
        &["-v"],
        &["-vv"],
        &["--verbose"],
        &["--chat", "--"],
        &["--config="],
        &["-h"],
        &["x"],
    ];

    /// The property of every test below: a line the reader takes, the whole parser reads the
    /// same.
    fn read_alike(words: &[&str]) -> Result<(), TestCaseError> {
        let words = line(words);
        if let Some(fast) = fast_path(words.clone().into_iter()) {
            prop_assert_eq!(Some(fast), whole(&words), "{:?}", words);
        }
        Ok(())
    }

    proptest! {
        /// Any command line the step's reader takes, the whole parser takes as the same step:
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
            read_alike(&words)?;
        }

        /// Lines made mostly of the flags the reader takes, in any order and number, `step`
        /// anywhere among them, now and then a word it does not take: most are taken, and each
        /// must be read as the whole parser reads it.
        #[test]
        fn the_fast_path_reads_lines_of_its_own_flags_as_the_whole_parser_does(
            units in proptest::collection::vec(proptest::sample::select(UNITS), 0..8),
            step_at in 0usize..8,
            program in proptest::collection::vec(proptest::sample::select(WORDS), 1..3),
        ) {
            let mut words: Vec<&str> = Vec::new();
            for (i, unit) in units.iter().enumerate() {
                if i == step_at {
                    words.push("step");
                }
                words.extend(*unit);
            }
            if step_at >= units.len() {
                words.push("step");
            }
            words.push("--");
            words.extend(program);
            read_alike(&words)?;
        }

        /// Any words at all: the reader takes a line only as the whole parser reads it.
        #[test]
        fn the_fast_path_never_reads_any_words_otherwise_than_the_whole_parser(
            words in proptest::collection::vec(proptest::sample::select(WORDS), 0..10),
        ) {
            read_alike(&words)?;
        }
    }
}
