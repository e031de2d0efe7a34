//! The commands the tests start against a demo layout ([`launch::demo::Demo`]), built in one
//! place: the environment they run in ([`demo_env`]) and `cli-sandbox step` of a program for the
//! demo's chat ([`step`]).

use std::ffi::OsStr;
use std::process::{Command, Stdio};

use launch::demo::Demo;

use crate::cli_sandbox;
use crate::users::{TestUser, command_as};

/// The demo's environment for a test's command, confined or not (the control runs in the same):
/// `HOME` the demo's home, none of the machine's variables that would move the layout
/// elsewhere (`XDG_DATA_HOME`, `XDG_CONFIG_HOME`, `AGENTWORKS_STATE_ROOT`,
/// `AGENTWORKS_WORKSPACE_DOCS`) or tell a launch it runs in a terminal multiplexer (`TMUX`),
/// and stdin `/dev/null` (the caller may set another). The working folder is the caller's.
pub fn demo_env<'c>(cmd: &'c mut Command, demo: &Demo) -> &'c mut Command {
    cmd.env("HOME", &demo.home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("AGENTWORKS_STATE_ROOT")
        .env_remove("AGENTWORKS_WORKSPACE_DOCS")
        .env_remove("TMUX")
        .stdin(Stdio::null())
}

/// `cli-sandbox --config <demo's> step --chat <demo's chat> [--grant G]... -- ARGV`, as `user`
/// (this process's own user when `None`), in [`demo_env`].
pub fn step<S: AsRef<OsStr>>(
    user: Option<&TestUser>,
    demo: &Demo,
    grants: &[String],
    argv: impl IntoIterator<Item = S>,
) -> Command {
    let mut cmd = command_as(user, cli_sandbox());
    cmd.arg("--config")
        .arg(&demo.config)
        .arg("step")
        .args(["--chat", &demo.chat]);
    for grant in grants {
        cmd.args(["--grant", grant]);
    }
    cmd.arg("--").args(argv);
    demo_env(&mut cmd, demo);
    cmd
}
