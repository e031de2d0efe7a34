//! `cli-sandbox profile`: the generated Seatbelt profile or Linux plan for a chat, on any OS.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use launch::seatbelt::SeatbeltProfile;
use launch::{Error, Settings};
use sandbox_linux::plan::Enforcement;

use crate::ChatArgs;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BackendArg {
    Seatbelt,
    Landlock,
}

#[derive(Debug, Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    chat: ChatArgs,
    /// Which backend's profile.
    #[arg(long, value_enum)]
    backend: BackendArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// The command the profile wraps (for the printed argv); `/bin/sh` when none is given.
    #[arg(last = true, value_name = "PROGRAM")]
    argv: Vec<std::ffi::OsString>,
}

pub fn run(settings: &Settings, args: &ProfileArgs) -> Result<ExitCode, Error> {
    match args.backend {
        BackendArg::Landlock => {
            let ctx = crate::load_for(settings, sandbox_core::Os::Linux)?;
            let policy = args.chat.policy(&ctx)?;
            let plan = sandbox_linux::compile(&policy, sandbox_linux::this_kernel())?;
            if args.json {
                // The plan exactly as the helper reads it, under its own key (it has its own
                // `version`, the plan format's).
                #[derive(serde::Serialize)]
                struct Answer<'a> {
                    backend: &'static str,
                    plan: &'a sandbox_linux::plan::LinuxPlan,
                }
                crate::print_json(&Answer {
                    backend: "landlock",
                    plan: &plan,
                })?;
            } else {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&plan).unwrap_or_default()
                );
                outln!();
                outln!("What the kernel will enforce:");
                for g in &plan.guarantees {
                    let state = match &g.enforcement {
                        Enforcement::Fully => "fully".to_owned(),
                        Enforcement::Partly(n) => format!("partly: {n}"),
                        Enforcement::Not(n) => format!("NOT: {n}"),
                    };
                    outln!("  - {} [{}] by {}", g.what, state, g.by);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        BackendArg::Seatbelt => {
            let ctx = crate::load_for(settings, sandbox_core::Os::MacOs)?;
            let policy = args.chat.policy(&ctx)?;
            let profile =
                SeatbeltProfile::for_policy(&policy).map_err(|e| Error::BadInput(e.to_string()))?;
            let argv = if args.argv.is_empty() {
                vec!["/bin/sh".into()]
            } else {
                args.argv.clone()
            };
            if args.json {
                let mut json = profile
                    .to_json(&argv)
                    .map_err(|e| Error::BadInput(e.to_string()))?;
                if let Some(fields) = json.as_object_mut() {
                    fields.insert("backend".into(), "seatbelt".into());
                }
                crate::print_json(&json)?;
            } else {
                out!("{}", profile.text);
                outln!();
                for (name, value) in &profile.params {
                    outln!(";; -D{name}={value}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
