//! Shared fixtures for the cross-crate tests in this folder: where the binary is, and whether
//! the kernel can confine (a missing Landlock is a loud skip, or a failure where CI requires it).

use std::path::PathBuf;

/// The `cli-sandbox` binary built for this test run.
pub fn cli_sandbox() -> PathBuf {
    let path = assert_cmd::cargo::cargo_bin("cli-sandbox");
    assert!(
        path.exists(),
        "{} is missing: build it first with `cargo build -p launch` (cargo test --workspace does)",
        path.display()
    );
    path
}

/// Set by `.ci/run`: on a machine with Landlock, a test that finds it missing fails instead of
/// skipping.
pub const REQUIRE_LANDLOCK: &str = "CLI_SANDBOX_REQUIRE_LANDLOCK";

/// `true` when the kernel can confine (Landlock and user namespaces). Otherwise prints why the
/// calling test is skipped, loudly, or panics when `CLI_SANDBOX_REQUIRE_LANDLOCK=1`.
pub fn confinement_available(test: &str) -> bool {
    let facts = launch::facts::probe();
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
    if std::env::var(REQUIRE_LANDLOCK).as_deref() == Ok("1") {
        panic!("{test}: {problem}, and {REQUIRE_LANDLOCK}=1 requires real confinement");
    }
    eprintln!(
        "\n!!! SKIPPED {test}: {problem}. Real confinement cannot be tested on this machine. \
         Set {REQUIRE_LANDLOCK}=1 to make this an error.\n"
    );
    false
}

/// Set by `.ci/run` after installing the pinned CLIs: a missing one fails instead of skipping.
pub const REQUIRE_REAL_CLIS: &str = "CLI_SANDBOX_REQUIRE_REAL_CLIS";

/// `tests/node_modules/.bin`, where `npm ci --prefix tests` installs the pinned real CLIs.
pub fn real_clis_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("node_modules/.bin")
}

/// PATH with the pinned real CLIs first.
pub fn path_with_real_clis() -> std::ffi::OsString {
    let mut paths = vec![real_clis_bin()];
    if let Some(path) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(paths).expect("PATH entries hold no separator")
}
