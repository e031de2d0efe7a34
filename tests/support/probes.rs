//! The C probes in `tests/probes/`, compiled with `cc` by the tests that run them: small
//! programs that make the exact system calls an attacker would (io_uring rings, other system
//! call ABIs, a preload shim), which neither the shell nor Python can make.
//!
//! Each is built once per test process into the folder the caller names (the tests pass
//! `CARGO_TARGET_TMPDIR`), readable and runnable by every user, so that the ordinary-user runs
//! can start them too.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The folder of the probe sources.
pub fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("probes")
}

/// Builds the program `tests/probes/NAME.c` into `out_dir` (once per process) and returns its
/// path. Panics with the compiler's message when it does not build: `cc` is the linker Rust
/// needs here anyway, so a missing one is a broken machine, not a skip.
pub fn program(name: &str, out_dir: &Path) -> PathBuf {
    build(name, out_dir, false)
}

/// Builds `tests/probes/NAME.c` as a shared object for `LD_PRELOAD`.
pub fn preload(name: &str, out_dir: &Path) -> PathBuf {
    build(name, out_dir, true)
}

fn build(name: &str, out_dir: &Path, shared: bool) -> PathBuf {
    static BUILT: Mutex<Option<HashMap<(String, bool), PathBuf>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let built = built.get_or_insert_with(HashMap::new);
    if let Some(path) = built.get(&(name.to_owned(), shared)) {
        return path.clone();
    }
    let source = sources().join(format!("{name}.c"));
    let file = if shared {
        format!("{name}.so")
    } else {
        name.to_owned()
    };
    let out = out_dir.join(format!("probe-{}-{file}", std::process::id()));
    std::fs::create_dir_all(out_dir).expect("create the probes' folder");
    let mut cc = Command::new("cc");
    cc.args(["-O1", "-Wall", "-Wextra", "-Werror"]);
    if shared {
        cc.args(["-shared", "-fPIC"]);
    }
    cc.arg("-o").arg(&out).arg(&source);
    if shared {
        cc.arg("-ldl");
    }
    let result = cc.output().expect("run cc");
    assert!(
        result.status.success(),
        "{} does not build:\n{}",
        source.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    // Readable and runnable by the ordinary user of the tests, whatever the umask.
    for dir in [out_dir, out.as_path()] {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
    }
    built.insert((name.to_owned(), shared), out.clone());
    out
}
