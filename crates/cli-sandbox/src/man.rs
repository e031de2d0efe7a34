//! `cli-sandbox man`: the man page, generated from the command line itself (`clap_mangen`):
//! the synopsis, every command and flag, and the exit statuses.

use std::process::ExitCode;

use clap::CommandFactory;
use launch::Error;

pub fn run() -> Result<ExitCode, Error> {
    let cmd = crate::Cli::command();
    let mut page = Vec::new();
    let io = |e| Error::Io {
        what: "the man page".into(),
        source: e,
    };
    clap_mangen::Man::new(cmd).render(&mut page).map_err(io)?;
    use std::io::Write;
    std::io::stdout().write_all(&page).map_err(io)?;
    Ok(ExitCode::SUCCESS)
}
