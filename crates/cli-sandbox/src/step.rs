//! `cli-sandbox step`: a scripted workflow step under the chat's confinement, in its runtime.

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

pub fn run(settings: &Settings, args: &StepArgs) -> Result<ExitCode, Error> {
    let ctx = crate::load(settings)?;
    launch::phase!("load the layout and configuration");
    let policy = args.chat.policy(&ctx)?;
    launch::phase!("build the policy");
    ctx.ensure_runtime(&policy)?;
    launch::phase!("make the runtime");
    confined_exec(&ctx, &policy, &args.argv)
}

/// Linux: the helper applied in this very process (no second exec on the launch path).
#[cfg(target_os = "linux")]
fn confined_exec(
    _ctx: &Context,
    policy: &sandbox_core::Policy,
    argv: &[OsString],
) -> Result<ExitCode, Error> {
    let plan = launch::linux::compile(policy, launch::linux::this_kernel())?;
    launch::phase!("compile the plan");
    let _span = tracing::info_span!("helper", chat = %plan.chat).entered();
    crate::helper::describe(&plan, std::path::Path::new("(compiled in this process)"));
    let err = launch::linux::apply::exec(&plan, argv);
    eprintln!("cli-sandbox step: not started, confinement failed: {err}");
    Ok(ExitCode::from(crate::FAILED))
}

/// macOS: `sandbox-exec` with the chat's profile, exec'd in the runtime.
#[cfg(not(target_os = "linux"))]
fn confined_exec(
    ctx: &Context,
    policy: &sandbox_core::Policy,
    argv: &[OsString],
) -> Result<ExitCode, Error> {
    use std::os::unix::process::CommandExt;
    let facts = launch::facts::probe();
    let decision = sandbox_core::platform::decide(
        &facts,
        sandbox_core::Mode::Full,
        &[sandbox_core::Mode::Full],
    );
    if decision.backend == sandbox_core::Backend::None {
        return Err(Error::Other(format!(
            "a scripted step needs confinement and this machine has none: {}",
            decision.reason
        )));
    }
    let (wrapped, _) = launch::wrap::wrap(ctx, policy, decision.backend, argv.to_vec())?;
    let mut cmd = std::process::Command::new(&wrapped[0]);
    cmd.args(&wrapped[1..]).current_dir(policy.runtime());
    // A descriptor this process inherited would stay usable inside, whatever the profile says.
    launch::seatbelt::close_inherited_descriptors(&mut cmd);
    let err = cmd.exec();
    Err(Error::Io {
        what: format!(
            "the sandbox `{}` cannot be started",
            wrapped[0].to_string_lossy()
        ),
        source: err,
    })
}
