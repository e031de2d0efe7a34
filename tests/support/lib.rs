//! Shared fixtures for the cross-crate tests in this folder: where the binary is, whether the
//! kernel can confine (a missing Landlock is a loud skip, or a failure where CI requires it), the
//! real CLIs ([`real_clis`]), an ordinary user to run launches as ([`users`]), the commands
//! started against a demo layout ([`launches`]: its environment, `cli-sandbox step`) and the C probes
//! ([`probes`]).

use std::io::Write;
use std::path::PathBuf;

#[cfg(target_os = "linux")]
pub mod environments;
pub mod launches;
pub mod probes;
pub mod process;
pub mod real_clis;
pub mod skips;
pub mod users;

/// Whether a plan this test process compiles may guard its grants with FUSE (issue 25) when the
/// launch runs as root or as the ordinary user the tests create: this process can open
/// `/dev/fuse`, and so can others (mode 0666, as `.ci/run` sets it). Root opens it whatever its
/// mode, so a plan compiled here by root with [`sandbox_linux::fuse_available`] alone would be
/// refused at the user's launch (status 125) on a machine that keeps it 0600.
pub fn fuse_for_every_user() -> bool {
    use std::os::unix::fs::MetadataExt;
    sandbox_linux::fuse_available()
        && std::fs::metadata("/dev/fuse").is_ok_and(|m| m.mode() & 0o006 == 0o006)
}

/// [`sandbox_linux::this_kernel`] as the tests compile plans with it: the FUSE guard only where
/// every user the tests launch as can open `/dev/fuse` ([`fuse_for_every_user`]).
pub fn this_kernel() -> sandbox_linux::plan::Kernel {
    sandbox_linux::plan::Kernel {
        fuse: fuse_for_every_user(),
        ..sandbox_linux::this_kernel()
    }
}

/// Prints `text` on the test's real stderr, where a person running `cargo test` sees it:
/// libtest captures `eprintln!`, so a skip said that way would go unseen.
pub fn say(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// The `cli-sandbox` binary of this workspace. The tests in this folder are targets of the
/// `cli-sandbox` package, so `cargo test` has built this very binary before any of them runs
/// (`crates/cli-sandbox/tests/cli.rs` checks that this is the path cargo built).
pub fn cli_sandbox() -> PathBuf {
    let path = assert_cmd::cargo::cargo_bin("cli-sandbox");
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test -p cli-sandbox` (or --workspace), which builds it",
        path.display()
    );
    path
}

/// The repository's root folder (the documents the tests check against live there).
pub fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Set by `.ci/run`: on a machine with Landlock, a test that finds it missing fails instead of
/// skipping; so does a test that finds missing what `.ci/run` installs for the confinement
/// tests (tmux, python3, pasta, iproute2).
pub const REQUIRE_LANDLOCK: &str = "CLI_SANDBOX_REQUIRE_LANDLOCK";

/// Set by `.ci/run` when it runs as root: a test that needs root (a root chat, the sandbox's init
/// killed from outside, a mount made on the host) fails instead of skipping.
pub const REQUIRE_ROOT: &str = "CLI_SANDBOX_REQUIRE_ROOT";

/// Says on the real stderr, where a person running `cargo test` sees it, that `test` is
/// skipped and why; or fails the test when `require` is `1` (CI asks for what is missing).
/// The caller returns after it.
pub fn skip(test: &str, why: &str, require: &str) {
    if std::env::var(require).as_deref() == Ok("1") {
        panic!("{test}: {why}, and {require}=1 requires it");
    }
    skips::record(require, test, why);
    say(&format!(
        "\n!!! SKIPPED {test}: {why}. Set {require}=1 to make this an error.\n"
    ));
}

/// Whether this process runs as root; otherwise [`skip`]s `test` (which needs root) with `why`.
pub fn root_or_skip(test: &str, why: &str) -> bool {
    // SAFETY: geteuid has no failure and touches no memory.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    skip(test, &format!("not root ({why})"), REQUIRE_ROOT);
    false
}

/// `true` when the kernel can confine (Landlock and user namespaces). Otherwise prints why the
/// calling test is skipped, loudly, or panics when `CLI_SANDBOX_REQUIRE_LANDLOCK=1`.
pub fn confinement_available(test: &str) -> bool {
    let facts = launch::probe();
    let problem = match &facts {
        sandbox_core::platform::Facts::Linux(l) => match (l.landlock_abi, l.user_namespaces) {
            (Some(_), true) => None,
            (None, _) => Some("the kernel has no Landlock".to_owned()),
            (Some(_), false) => Some(format!(
                "user namespaces cannot be created ({})",
                l.user_namespaces_error.as_deref().unwrap_or("?")
            )),
        },
        _ => Some("this is not Linux".to_owned()),
    };
    let Some(problem) = problem else {
        return true;
    };
    skip(
        test,
        &format!("{problem}; real confinement cannot be tested on this machine"),
        REQUIRE_LANDLOCK,
    );
    false
}

#[cfg(test)]
mod skip_tests {
    use super::skips::*;

    #[test]
    fn the_summary_counts_each_feature_here_and_in_the_run() {
        let here = vec![
            "CLI_SANDBOX_REQUIRE_LANDLOCK".to_owned(),
            "CLI_SANDBOX_REQUIRE_ROOT".to_owned(),
            "CLI_SANDBOX_REQUIRE_LANDLOCK".to_owned(),
        ];
        let log = "CLI_SANDBOX_REQUIRE_REAL_CLIS\ta\twhy\n\
                   CLI_SANDBOX_REQUIRE_LANDLOCK\tb\twhy\n\
                   CLI_SANDBOX_REQUIRE_LANDLOCK\tc\twhy\n\
                   CLI_SANDBOX_REQUIRE_ROOT\td\twhy\n\
                   CLI_SANDBOX_REQUIRE_LANDLOCK\te\twhy\n";
        let line = summary(&here, Some((log, std::path::Path::new("/t/run.log"))));
        assert_eq!(
            line,
            "!!! SKIPPED in this test binary: 3 (CLI_SANDBOX_REQUIRE_LANDLOCK: 2, \
             CLI_SANDBOX_REQUIRE_ROOT: 1); in this cargo run so far: 5 \
             (CLI_SANDBOX_REQUIRE_REAL_CLIS: 1, CLI_SANDBOX_REQUIRE_LANDLOCK: 3, \
             CLI_SANDBOX_REQUIRE_ROOT: 1), listed in /t/run.log. Each counts as passed; set the \
             variable named to make it an error."
        );
    }

    #[test]
    fn a_skip_is_one_line_in_the_log_of_this_run() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skipped/run.log");
        append(&log, "a feature", "a\ttest", "why,\nin two lines");
        append(&log, "another", "b", "why");
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "a feature\ta test\twhy, in two lines\nanother\tb\twhy\n"
        );
    }
}
