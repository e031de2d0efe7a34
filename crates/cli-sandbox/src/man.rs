//! `cli-sandbox man [COMMAND]`: the man pages, generated from the command line itself
//! (`clap_mangen`): the main page (the synopsis, every command, the exit statuses) and one page
//! per command with its options, `cli-sandbox-COMMAND(1)`, the name the main page lists it by.
//! `--dir DIR` writes them all, for an install.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory};
use launch::Error;

#[derive(Debug, Args)]
#[command(after_help = "Install, for example:\n  \
    cli-sandbox man --dir ~/.local/share/man/man1     (then: man cli-sandbox-step)")]
pub struct ManArgs {
    /// A command whose page to print (cli-sandbox-COMMAND(1)); without it, the main page.
    #[arg(value_name = "COMMAND", value_parser = command_name)]
    command: Option<String>,
    /// Write every page into DIR instead (cli-sandbox.1 and cli-sandbox-COMMAND.1 for each
    /// command); it must exist.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    dir: Option<PathBuf>,
}

/// The command line as the pages show it: without clap's `help` command, which has no page of
/// its own (`cli-sandbox help COMMAND` still works; it prints the same as `COMMAND --help`).
fn command_line() -> clap::Command {
    let mut cmd = crate::Cli::command().disable_help_subcommand(true);
    // Built, so that each command carries the global options and its display name,
    // `cli-sandbox-NAME`, the page's title.
    cmd.build();
    cmd
}

/// The commands that have a page: every one but the hidden helper form.
pub fn commands() -> Vec<clap::Command> {
    command_line()
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .cloned()
        .collect()
}

/// A command that has a page, or an error listing those that do.
fn command_name(name: &str) -> Result<String, String> {
    let names: Vec<String> = commands().iter().map(|c| c.get_name().to_owned()).collect();
    if names.iter().any(|n| n == name) {
        Ok(name.to_owned())
    } else {
        Err(format!(
            "no such command; the pages are {}",
            names.join(", ")
        ))
    }
}

/// The page of `command` (`None`: the main page), as roff.
pub fn page(command: Option<&str>) -> Result<Vec<u8>, std::io::Error> {
    let cmd = match command {
        None => command_line(),
        Some(name) => commands()
            .into_iter()
            .find(|sub| sub.get_name() == name)
            .ok_or_else(|| std::io::Error::other(format!("no command `{name}`")))?,
    };
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut page)?;
    Ok(page)
}

pub fn run(args: &ManArgs) -> Result<ExitCode, Error> {
    let io = |what: String| move |e| Error::Io { what, source: e };
    if let Some(dir) = &args.dir {
        if !dir.is_dir() {
            return Err(Error::BadInput(format!(
                "--dir `{}` is not a folder: create it first (mkdir -p)",
                dir.display()
            )));
        }
        let mut names = vec![None];
        names.extend(commands().iter().map(|c| Some(c.get_name().to_owned())));
        for name in names {
            let file = dir.join(match &name {
                None => "cli-sandbox.1".to_owned(),
                Some(name) => format!("cli-sandbox-{name}.1"),
            });
            let text = page(name.as_deref()).map_err(io("a man page".into()))?;
            std::fs::write(&file, text).map_err(io(format!("`{}`", file.display())))?;
            outln!("{}", file.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let text = page(args.command.as_deref()).map_err(io("the man page".into()))?;
    use std::io::Write;
    std::io::stdout()
        .write_all(&text)
        .map_err(io("the man page".into()))?;
    Ok(ExitCode::SUCCESS)
}
