use std::io;
use std::path::PathBuf;

/// Everything that can stop a launch. Each message names the thing and what to do.
///
/// The `cli-sandbox` binary exits 125 for all of them but [`Error::CannotRun`], which exits as a
/// shell would when it cannot run a program (127 missing, 126 otherwise): the statuses `env`,
/// `timeout` and `nice` use, so that a caller can tell our failure from the program's own status.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration file cannot be used (bad input).
    #[error(transparent)]
    Config(#[from] sandbox_core::ConfigError),
    /// The chat id, a grant or a configured path is refused by the policy's rules (bad input).
    #[error(transparent)]
    Policy(#[from] sandbox_core::PolicyError),
    /// The CLI's adapter cannot build the launch (bad input: a model, an argument, a file of
    /// the person's it cannot read).
    #[error(transparent)]
    Adapter(#[from] sandbox_core::AdapterError),
    /// The Linux plan cannot carry the policy out on this machine.
    #[error(transparent)]
    Plan(#[from] sandbox_linux::plan::PlanError),
    /// Full CLI was asked for where nothing can confine it: the missing feature and the remedy.
    /// Never run unconfined, never lowered to bridge-only without being asked.
    #[error(transparent)]
    CannotConfine(#[from] sandbox_core::platform::CannotConfine),
    /// No adapter of that name in [`crate::registry`].
    #[error("unknown CLI `{name}`: use one of {known}")]
    UnknownCli {
        /// The name asked for.
        name: String,
        /// The registry's names, comma-separated.
        known: String,
    },
    /// `HOME` is not set and no home was given ([`crate::Settings::home`]).
    #[error("HOME is not set: set it to the person's home folder")]
    NoHome,
    /// The program itself cannot be run: it is missing, or not something this machine can run.
    /// Not a failure of the sandbox: nothing was confined or started.
    #[error("{message}")]
    CannotRun {
        /// The program that could not be run.
        program: PathBuf,
        /// The program does not exist (a shell's 127), as opposed to existing but not being
        /// runnable (126).
        missing: bool,
        /// What happened and what to do, in words.
        message: String,
    },
    /// A file-system step of the launch failed (creating the runtime, writing the plan).
    #[error("{what}: {source}")]
    Io {
        /// The step and the path, in words.
        what: String,
        /// What the system said.
        source: io::Error,
    },
    /// The Linux helper lies where a chat could replace it: it starts unconfined, so the next
    /// launch would run the chat's program outside the sandbox. Refused unless the provider
    /// accepts that exact path ([`crate::Settings::accept_replaceable_helper`]).
    #[error(
        "the helper `{helper}` could be replaced by a chat (`{place}`: {why}), and the helper runs unconfined: install cli-sandbox where only root writes (`sudo install -m 0755 cli-sandbox cli-sandbox-helper /usr/local/bin/`) and name that one (CLI_SANDBOX_HELPER or the launch's helper setting), or accept this exact path with CLI_SANDBOX_ACCEPT_REPLACEABLE_HELPER={helper} (the launch's accept_replaceable_helper setting) where no chat runs as a user who could write there"
    )]
    HelperReplaceable {
        /// The helper as named.
        helper: PathBuf,
        /// The entry a chat could change: the helper, a folder above it, a link on the way.
        place: PathBuf,
        /// How, in words.
        why: String,
    },
    /// A launch of a program alone ([`crate::LaunchSpec::program`]) on a machine that cannot
    /// confine it: it never runs unconfined.
    #[error("a program launch needs confinement and this machine has none: {reason}")]
    NeedsConfinement {
        /// Why nothing confines here, in words.
        reason: String,
    },
    /// An adapter asked to write one of the launch's own files outside the chat's runtime.
    #[error(
        "the {cli} adapter asked to write `{}`, which is not directly inside the working folder `{}`",
        file.display(),
        runtime.display()
    )]
    FileOutsideRuntime {
        /// The adapter.
        cli: String,
        /// The file it asked for.
        file: PathBuf,
        /// The chat's runtime.
        runtime: PathBuf,
    },
    /// The working folder of a launch is missing when its command is built.
    #[error(
        "the chat's working folder `{}` does not exist yet: call pre_trust first (it makes the folder)",
        cwd.display()
    )]
    NoWorkingFolder {
        /// The working folder (the chat's runtime).
        cwd: PathBuf,
    },
    /// A launch prepared to run in this process (`PreparedLaunch::prepare_to_exec`) has no
    /// command for another process.
    #[error(
        "this launch was prepared to run in this process (prepare_to_exec): start it with exec, or prepare it with prepare for a command"
    )]
    ExecOnly,
    /// The plan could not be applied in this process; the program was not started.
    #[error("confinement failed: {step}: {detail}")]
    Confinement {
        /// The step that failed (`mount`, `landlock_restrict_self`...), with its path.
        step: String,
        /// What the system said.
        detail: String,
    },
    /// No helper is named for a Linux launch (and this process is not `cli-sandbox`): the
    /// helper is never looked up on `PATH`.
    #[error(
        "the `cli-sandbox` helper binary is not known: set CLI_SANDBOX_HELPER (or the helper of the launch's settings) to an installed cli-sandbox, outside any place a chat can write"
    )]
    NoHelper,
    /// Input the launch cannot use, with what to do (said in the message).
    #[error("{0}")]
    BadInput(String),
    /// Anything else that stops the launch, said in words.
    #[error("{0}")]
    Other(String),
}

impl From<sandbox_linux::Error> for Error {
    fn from(e: sandbox_linux::Error) -> Error {
        match e {
            sandbox_linux::Error::Plan(e) => Error::Plan(e),
            sandbox_linux::Error::Io { what, source } => Error::Io { what, source },
            sandbox_linux::Error::BadInput(text) => Error::BadInput(text),
            sandbox_linux::Error::Other(text) => Error::Other(text),
        }
    }
}

impl Error {
    /// Bad input, as opposed to a failure of the machine. Both stop the launch before anything
    /// runs; the distinction is for callers that report them differently.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Error::Config(_)
                | Error::Policy(_)
                | Error::NoHome
                | Error::Adapter(_)
                | Error::UnknownCli { .. }
                | Error::BadInput(_)
                | Error::HelperReplaceable { .. }
        ) || matches!(self, Error::Plan(e) if e.is_bad_input())
    }

    /// An `exec` of `program` that failed with `source`, as [`Error::CannotRun`]: missing
    /// (`ENOENT`, `ENOTDIR`) or not runnable (permissions, not an executable format, ...).
    pub fn cannot_run(program: impl Into<PathBuf>, source: &io::Error) -> Error {
        let program = program.into();
        let missing = matches!(
            source.raw_os_error(),
            Some(libc::ENOENT) | Some(libc::ENOTDIR)
        );
        Error::CannotRun {
            message: format!(
                "`{}` cannot be run ({source}): {}",
                program.display(),
                if missing {
                    "install it, or give its full path"
                } else {
                    "check that it is an executable this machine can run, and its permissions"
                }
            ),
            program,
            missing,
        }
    }
}
