//! `cli-sandbox step`: a scripted workflow step under the chat's confinement.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Args;
use launch::{Context, Error, Settings};

use crate::ChatArgs;

#[derive(Debug, Args)]
pub struct StepArgs {
    #[command(flatten)]
    chat: ChatArgs,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    argv: Vec<OsString>,
}

pub fn run(settings: &Settings, args: StepArgs) -> Result<ExitCode, Error> {
    let ctx = Context::load(settings)?;
    let policy = args.chat.policy(&ctx)?;
    ctx.ensure_runtime(&policy)?;
    #[cfg(target_os = "linux")]
    {
        let plan = launch::linux::compile(&policy, launch::linux::this_kernel())?;
        let err = launch::linux::apply::exec(&plan, &args.argv);
        eprintln!("cli-sandbox step: not started, confinement failed: {err}");
        Ok(ExitCode::from(2))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (policy, args);
        Err(Error::Other("step runs only on Linux for now".into()))
    }
}
