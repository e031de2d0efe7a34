//! A provider's launch of one chat, written against `launch` alone (no other crate of the
//! workspace is imported): `cargo run -p launch --example provider -- CLI CHAT GRANT[:ro|:rw]...`.
//! Built by `cargo test`, so the API it shows keeps compiling.
//!
//! It prints the decision and the command, writes pre-trust, and runs the CLI confined with the
//! terminal's stdin and stdout. The layout comes from the environment, as `cli-sandbox` reads it
//! (`$HOME`, `CLI_SANDBOX_STATE_ROOT`, ...); the helper from `CLI_SANDBOX_HELPER`.

use launch::{Context, GrantRequest, LaunchSpec, PreparedLaunch, Settings};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(cli), Some(chat)) = (args.next(), args.next()) else {
        eprintln!("usage: provider CLI CHAT [GRANT[:ro|:rw]]...");
        std::process::exit(125);
    };
    let mut spec = LaunchSpec::new(cli, chat);
    for grant in args {
        spec = spec.grant(GrantRequest::parse(&grant)?);
    }
    let ctx = Context::load(&Settings::default())?;
    let launch = PreparedLaunch::prepare(&ctx, &spec, &launch::probe())?;
    eprintln!(
        "{:?} ({}): {:?}",
        launch.decision().backend,
        launch.decision().reason,
        launch.argv()
    );
    launch.pre_trust()?;
    let status = launch.std_command()?.status()?;
    std::process::exit(status.code().unwrap_or(125));
}
