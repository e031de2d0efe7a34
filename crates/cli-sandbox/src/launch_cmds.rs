//! `cli-sandbox plan`, `pre-trust` and `run`: one CLI's launch, computed, prepared, or carried
//! out. The three take the same flags and compute the same launch, so that a consumer can run
//! `plan --json`, then `pre-trust`, then the argv it was given.

use std::os::unix::process::CommandExt;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use launch::{Error, LaunchSpec, PreparedLaunch, Settings};
use sandbox_core::{Backend, McpServer, Mode, Shape, Stdin};

use crate::ChatArgs;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ShapeArg {
    Tmux,
    Structured,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    Full,
    BridgeOnly,
}

#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// The CLI (see `cli-sandbox adapters`).
    #[arg(long, value_name = "NAME")]
    cli: String,
    #[command(flatten)]
    chat: ChatArgs,
    /// Interactive in a tmux pane, or headless with a JSON stream.
    #[arg(long, value_enum, default_value = "tmux")]
    shape: ShapeArg,
    /// Full CLI (its own tools on, inside the sandbox) or bridge-only. Without it: full, or
    /// bridge-only for a CLI that has no other mode (`cli-sandbox adapters` lists each CLI's
    /// modes); `--mode full` for such a CLI is refused.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// The MCP bridge server, as JSON: {"name":..., "command":..., "args":[...], "env":{...}}.
    #[arg(long, value_name = "JSON")]
    mcp_bridge: Option<String>,
    /// The first prompt.
    #[arg(long)]
    prompt: Option<String>,
    /// The model.
    #[arg(long)]
    model: Option<String>,
    /// Write the record of what the kernel refused the chat to FILE when the chat ends (JSON,
    /// docs/json.md "denials"; replaced if there). Where nothing can be recorded the record
    /// says so, with why.
    #[arg(long, value_name = "FILE")]
    denials: Option<std::path::PathBuf>,
    /// Passed to the CLI after our own arguments.
    #[arg(last = true, value_name = "EXTRA")]
    extra: Vec<String>,
}

/// `plan`: the launch's flags, and how to print it.
#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    launch: LaunchArgs,
    /// Print JSON (docs/json.md): what a consumer in any language launches from.
    #[arg(long)]
    json: bool,
}

/// `pre-trust`: the same flags as `plan`.
#[derive(Debug, Args)]
pub struct PreTrustArgs {
    #[command(flatten)]
    launch: LaunchArgs,
    /// Print what was written as JSON (docs/json.md).
    #[arg(long)]
    json: bool,
}

impl LaunchArgs {
    /// The mode asked for. A mode the CLI does not have, asked for by name, is refused: the
    /// launch would otherwise run in another mode than the command line says (Pi has only
    /// bridge-only). Without `--mode`, full is asked for, and the decision says why a CLI
    /// without it runs bridge-only.
    fn mode(&self) -> Result<Mode, Error> {
        let mode = match self.mode {
            None | Some(ModeArg::Full) => Mode::Full,
            Some(ModeArg::BridgeOnly) => Mode::BridgeOnly,
        };
        // An unknown CLI is refused later, by the launch itself, with the known names.
        if let (Some(_), Some(adapter)) = (self.mode, launch::registry::find(&self.cli))
            && !adapter.modes().contains(&mode)
        {
            let modes: Vec<_> = adapter.modes().iter().map(|m| m.as_str()).collect();
            return Err(Error::BadInput(format!(
                "--mode {}: {} has no such mode, only {} (`cli-sandbox adapters` lists each \
                 CLI's modes): pass --mode {} or leave --mode out",
                mode.as_str(),
                self.cli,
                modes.join(" and "),
                modes[0]
            )));
        }
        Ok(mode)
    }

    fn spec(&self) -> Result<LaunchSpec, Error> {
        let mcp_bridge = match &self.mcp_bridge {
            Some(text) => Some(serde_json::from_str::<McpServer>(text).map_err(|e| {
                Error::BadInput(format!(
                    "--mcp-bridge is not valid JSON for a server ({e}): give {{\"name\": ..., \"command\": ..., \"args\": [...]}}"
                ))
            })?),
            None => None,
        };
        Ok(LaunchSpec {
            cli: self.cli.clone(),
            chat: self.chat.chat.clone(),
            grants: self.chat.grant_requests()?,
            shape: match self.shape {
                ShapeArg::Tmux => Shape::Tmux,
                ShapeArg::Structured => Shape::Structured,
            },
            mode: self.mode()?,
            mcp_bridge,
            prompt: self.prompt.clone(),
            model: self.model.clone(),
            extra_args: self.extra.clone(),
            denials: self
                .denials
                .as_deref()
                .map(std::path::absolute)
                .transpose()
                .map_err(|e| Error::BadInput(format!("--denials: {e}")))?,
            program: None,
        })
    }
}

fn prepare(settings: &Settings, args: &LaunchArgs) -> Result<PreparedLaunch, Error> {
    let spec = args.spec()?;
    let ctx = crate::load(settings)?;
    let facts = launch::probe();
    PreparedLaunch::prepare(&ctx, &spec, &facts)
}

/// The backend in words, for people (the JSON answers keep the tagged value).
pub fn backend_words(backend: Backend) -> String {
    match backend {
        Backend::Seatbelt => "Seatbelt (sandbox-exec with a generated profile)".to_owned(),
        Backend::Landlock {
            abi,
            namespaces: true,
        } => format!("Landlock ABI {abi} in user, mount and PID namespaces, with a seccomp filter"),
        Backend::Landlock {
            abi,
            namespaces: false,
        } => format!(
            "Landlock ABI {abi} alone (no namespaces here: the protected roots' ancestors are frozen), with a seccomp filter"
        ),
        Backend::None => "none: nothing can confine here, so the CLI runs bridge-only".to_owned(),
    }
}

pub fn plan(settings: &Settings, args: &PlanArgs) -> Result<ExitCode, Error> {
    let launch = prepare(settings, &args.launch)?;
    if args.json {
        crate::print_json(&launch)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("cli:     {}", launch.cli().unwrap_or_default());
    outln!("backend: {}", backend_words(launch.decision().backend));
    outln!("mode:    {}", launch.decision().mode.as_str());
    outln!("reason:  {}", launch.decision().reason);
    outln!("notice:  {}", launch.decision().notice);
    if !launch.program_found() {
        outln!("program: {} (NOT FOUND)", launch.program().display());
    }
    outln!("cwd:     {}", launch.cwd().display());
    let words: Vec<String> = launch
        .argv()
        .iter()
        .map(|a| shell_words::quote(&a.to_string_lossy()).into_owned())
        .collect();
    outln!("argv:    {}", words.join(" "));
    for (k, v) in &launch.env().set {
        outln!("env:     {k}={v}");
    }
    for k in &launch.env().remove {
        outln!("env:     unset {k}");
    }
    outln!(
        "stdin:   {}",
        match launch.stdin() {
            Stdin::Inherit => "inherited",
            Stdin::Null => "/dev/null",
        }
    );
    for edit in launch.pre_trust_edits() {
        outln!(
            "pre-trust: {} {} = {}",
            edit.file.display(),
            edit.keys.join("."),
            edit.value
        );
    }
    for file in launch.files() {
        outln!("file:    {}", file.path.display());
    }
    match launch.plan_file() {
        Some(file) => outln!("wrote:   {} (the plan the helper reads)", file.display()),
        None => outln!("wrote:   nothing"),
    }
    outln!(
        "         Nothing else was made: the pre-trust entries, the files and the runtime are \
         written by `cli-sandbox pre-trust` or `run`; the grants' refused folders by the helper."
    );
    Ok(ExitCode::SUCCESS)
}

/// `pre-trust`: what `run` writes before it starts the CLI, on its own.
pub fn pre_trust(settings: &Settings, args: &PreTrustArgs) -> Result<ExitCode, Error> {
    let launch = prepare(settings, &args.launch)?;
    let done = launch.pre_trust()?;
    if args.json {
        crate::print_json(&done)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("runtime: {}", done.runtime.display());
    for edit in &done.edits {
        outln!(
            "{} {} {}",
            if edit.written { "wrote:  " } else { "kept:   " },
            edit.file.display(),
            edit.keys.join(".")
        );
    }
    for file in &done.files {
        outln!("file:    {}", file.display());
    }
    if done.edits.is_empty() && done.files.is_empty() {
        outln!("(this launch needs no pre-trust entry)");
    }
    Ok(ExitCode::SUCCESS)
}

/// Pre-trust, then exec the wrapped CLI: its exit status is ours.
pub fn run(settings: &Settings, args: &LaunchArgs, verbose: u8) -> Result<ExitCode, Error> {
    let launch = prepare(settings, args)?;
    if !launch.program_found() {
        // As a shell says it, before anything is written.
        return Err(Error::CannotRun {
            message: format!(
                "{} is not installed: `{}` is not on PATH; install it or set [cli.{}] program in the configuration",
                launch.cli().unwrap_or_default(),
                launch.program().display(),
                launch.cli().unwrap_or_default()
            ),
            program: launch.program().to_owned(),
            missing: true,
        });
    }
    launch.pre_trust()?;
    let mut cmd = launch.std_command()?;
    if verbose > 0 && launch.plan_file().is_some() && std::env::var_os("RUST_LOG").is_none() {
        // The helper's own steps (mounts, what the kernel enforced), at the same level.
        cmd.env(crate::helper::LOG_VAR, crate::verbosity_filter(verbose));
    }
    tracing::info!(argv0 = %launch.argv()[0].to_string_lossy(), "exec");
    let err = cmd.exec();
    if launch.command_start() == 0 {
        // Bridge-only: the first word is the CLI itself.
        Err(Error::cannot_run(&launch.argv()[0], &err))
    } else {
        Err(Error::Io {
            what: format!(
                "the sandbox `{}` cannot be started",
                launch.argv()[0].to_string_lossy()
            ),
            source: err,
        })
    }
}
