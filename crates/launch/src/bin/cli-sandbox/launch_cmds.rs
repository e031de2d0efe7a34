//! `cli-sandbox plan` and `cli-sandbox run`: one CLI's launch, computed or carried out.

use std::os::unix::process::CommandExt;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use launch::{Context, Error, LandlockArgs, LaunchSpec, Settings};
use sandbox_core::{McpServer, Mode, Shape};

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
    /// Full CLI (its own tools on, inside the sandbox) or bridge-only.
    #[arg(long, value_enum, default_value = "full")]
    mode: ModeArg,
    /// The MCP bridge server, as JSON: {"name":..., "command":..., "args":[...], "env":{...}}.
    #[arg(long, value_name = "JSON")]
    mcp_bridge: Option<String>,
    /// The first prompt.
    #[arg(long)]
    prompt: Option<String>,
    /// The model.
    #[arg(long)]
    model: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Passed to the CLI after our own arguments.
    #[arg(last = true, value_name = "EXTRA")]
    extra: Vec<String>,
}

impl LaunchArgs {
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
            grants: self.chat.grant_requests(),
            shape: match self.shape {
                ShapeArg::Tmux => Shape::Tmux,
                ShapeArg::Structured => Shape::Structured,
            },
            mode: match self.mode {
                ModeArg::Full => Mode::Full,
                ModeArg::BridgeOnly => Mode::BridgeOnly,
            },
            mcp_bridge,
            prompt: self.prompt.clone(),
            model: self.model.clone(),
            extra_args: self.extra.clone(),
        })
    }
}

fn prepare(settings: &Settings, args: &LaunchArgs) -> Result<LandlockArgs, Error> {
    let ctx = Context::load(settings)?;
    let facts = launch::facts::probe();
    LandlockArgs::prepare(&ctx, &args.spec()?, &facts)
}

pub fn plan(settings: &Settings, args: &LaunchArgs) -> Result<ExitCode, Error> {
    let launch = prepare(settings, args)?;
    if args.json {
        crate::print_json(&launch)?;
    } else {
        println!("cli:     {}", launch.cli);
        println!("backend: {:?}", launch.decision.backend);
        println!("mode:    {}", launch.decision.mode.as_str());
        println!("reason:  {}", launch.decision.reason);
        println!("notice:  {}", launch.decision.notice);
        if !launch.program_found {
            println!("program: {} (NOT FOUND)", launch.program.display());
        }
        println!("cwd:     {}", launch.cwd.display());
        let words: Vec<String> = launch
            .argv
            .iter()
            .map(|a| shell_words::quote(&a.to_string_lossy()).into_owned())
            .collect();
        println!("argv:    {}", words.join(" "));
        for (k, v) in &launch.env.set {
            println!("env:     {k}={v}");
        }
        for k in &launch.env.remove {
            println!("env:     unset {k}");
        }
        println!("stdin:   {:?}", launch.stdin);
        for edit in &launch.pre_trust {
            println!(
                "run would write: {} {} = {}",
                edit.file.display(),
                edit.keys.join("."),
                edit.value
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Pre-trust, then exec the wrapped CLI: its exit status is ours.
pub fn run(settings: &Settings, args: &LaunchArgs) -> Result<ExitCode, Error> {
    let launch = prepare(settings, args)?;
    if !launch.program_found {
        return Err(Error::BadInput(format!(
            "{} is not installed: `{}` is not on PATH; install it or set [cli.{}] program in the configuration",
            launch.cli,
            launch.program.display(),
            launch.cli
        )));
    }
    launch.pre_trust()?;
    let err = launch.std_command().exec();
    Err(Error::Io {
        what: format!("run `{}`", launch.argv[0].to_string_lossy()),
        source: err,
    })
}
