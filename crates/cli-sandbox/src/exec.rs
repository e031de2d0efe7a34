//! `cli-sandbox exec --policy FILE -- PROGRAM...`: the Linux helper inside the full binary (the
//! helper itself is `helper.rs`, which `cli-sandbox-helper` runs alone): its arguments as clap
//! reads them, for `--help` and the man page, and the fast path that skips clap.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::helper;

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The compiled plan (written by `plan`, `run` or `step`).
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    pub argv: Vec<OsString>,
}

/// `cli-sandbox exec --policy FILE -- PROGRAM [ARGS...]` exactly, or `None` (see
/// [`helper::fast_path`]).
pub fn fast_path(args: impl Iterator<Item = OsString>) -> Option<ExecArgs> {
    helper::fast_path(args).map(|(policy, argv)| ExecArgs { policy, argv })
}

/// Runs the helper (see [`helper::run`]).
pub fn run(args: &ExecArgs) -> ExitCode {
    ExitCode::from(helper::run(&args.policy, &args.argv))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cli, Command};
    use clap::Parser;

    fn args(text: &[&str]) -> impl Iterator<Item = OsString> {
        let mut all = vec![OsString::from("cli-sandbox")];
        all.extend(text.iter().map(OsString::from));
        all.into_iter()
    }

    #[test]
    fn the_helpers_one_form_skips_the_parser_and_every_other_goes_to_it() {
        let fast = fast_path(args(&[
            "exec",
            "--policy",
            "/p.json",
            "--",
            "/bin/true",
            "-x",
        ]))
        .expect("the form plan and run write");
        assert_eq!(fast.policy, PathBuf::from("/p.json"));
        assert_eq!(
            fast.argv,
            [OsString::from("/bin/true"), OsString::from("-x")]
        );
        for other in [
            &["exec", "--help"][..],
            &["exec", "--policy", "/p.json"],
            &["exec", "--policy", "/p.json", "--"],
            &["exec", "--policy=/p.json", "--", "/bin/true"],
            &["exec", "/bin/true"],
            &[
                "--config", "c.toml", "exec", "--policy", "/p.json", "--", "x",
            ],
            &["step", "--chat", "c", "--", "x"],
            &[],
        ] {
            assert!(fast_path(args(other)).is_none(), "{other:?}");
        }
        // What the fast path takes, clap takes the same way.
        let cli =
            Cli::try_parse_from(args(&["exec", "--policy", "/p.json", "--", "/bin/true"])).unwrap();
        let Command::Exec(slow) = cli.command else {
            panic!("not exec")
        };
        assert_eq!(slow.policy, PathBuf::from("/p.json"));
        assert_eq!(slow.argv, [OsString::from("/bin/true")]);
    }
}
