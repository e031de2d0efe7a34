//! `cli-sandbox end --chat ID [--remove-runtime]`: a chat ends without a trace (see
//! [`launch::end_chat`]).

use std::process::ExitCode;

use clap::Args;
use launch::{Context, Error, Settings};

#[derive(Debug, Args)]
pub struct EndArgs {
    /// The chat's id ([A-Za-z0-9._-], 1 to 128 characters).
    #[arg(long, value_name = "ID")]
    chat: String,
    /// Remove the chat's runtime (its working folder) too; without it the runtime stays.
    #[arg(long)]
    remove_runtime: bool,
    /// Print what was done as JSON (docs/json.md).
    #[arg(long)]
    json: bool,
}

pub fn run(settings: &Settings, args: &EndArgs) -> Result<ExitCode, Error> {
    let ctx = Context::load(settings)?;
    let done = launch::end_chat(&ctx, &args.chat, args.remove_runtime)?;
    if args.json {
        crate::print_json(&done)?;
        return Ok(ExitCode::SUCCESS);
    }
    for why in &done.skipped {
        outln!("skipped: {why}");
    }
    if !done.known {
        outln!(
            "chat `{}`: nothing of it was found (no runtime, plan file or entry): nothing to end",
            done.chat
        );
        return Ok(ExitCode::SUCCESS);
    }
    for file in &done.files {
        outln!(
            "{} {}",
            if file.removed { "removed:" } else { "kept:   " },
            file.file.display()
        );
    }
    for plan in &done.plans {
        outln!("plan:    {}", plan.display());
    }
    if done.runtime_removed {
        outln!("runtime: {} (removed)", done.runtime.display());
    } else {
        outln!("runtime: {} (kept)", done.runtime.display());
    }
    Ok(ExitCode::SUCCESS)
}
