//! `cli-sandbox completions SHELL`: the shell's completion script, generated from the command
//! line itself (`clap_complete`), so that it never lags behind a flag.

use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;
use launch::Error;

#[derive(Debug, Args)]
#[command(after_help = "Install, for example:\n  \
    bash: cli-sandbox completions bash > ~/.local/share/bash-completion/completions/cli-sandbox\n  \
    zsh:  cli-sandbox completions zsh > ~/.zfunc/_cli-sandbox  (with fpath+=~/.zfunc)\n  \
    fish: cli-sandbox completions fish > ~/.config/fish/completions/cli-sandbox.fish")]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: Shell,
}

pub fn run(args: &CompletionsArgs) -> Result<ExitCode, Error> {
    let mut cmd = crate::Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "cli-sandbox", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}
