//! Skipped tests, counted: each skip is a line in one log per `cargo test` run, and each test
//! binary that skipped something ends with a summary line on stderr (after libtest's own
//! `test result:` line): how many it skipped, for want of what, and how many the run has skipped
//! so far. libtest counts a skipped test as passed and has no hook of its own for this; `.ci/run`
//! prints the run's total from the same log at its end.
//!
//! The log is `CLI_SANDBOX_SKIP_LOG` when set (`.ci/run` sets it), else
//! `<target>/skipped-tests/run-<cargo's pid>-<its start time>.log`: every test binary of one
//! `cargo test` is a child of the same cargo process, so they share it, and the next run gets
//! another. A line is `FEATURE<TAB>TEST<TAB>WHY`, appended in one write (`O_APPEND`: lines of
//! test binaries running at once do not mix).
//!
//! This file depends on `std` and `libc` alone: `crates/launch/tests` include it by path (they
//! cannot depend on the `cli-sandbox-tests` package, which depends on `launch`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

/// Names the log of this run (an absolute path); `.ci/run` sets it.
pub const LOG_VAR: &str = "CLI_SANDBOX_SKIP_LOG";

/// The features skipped for in this test binary, in order.
static SKIPPED_HERE: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records that `test` was skipped for want of `feature` (the variable that makes its absence an
/// error, such as `CLI_SANDBOX_REQUIRE_LANDLOCK`, or a few words where none does), and why.
/// Prints nothing itself: the caller says why on stderr, as before.
pub fn record(feature: &str, test: &str, why: &str) {
    {
        let mut here = SKIPPED_HERE.lock().unwrap_or_else(|e| e.into_inner());
        if here.is_empty() {
            // SAFETY: registers a function with no arguments that touches only statics; libtest
            // ends the process with `exit`, which runs it once, after every test has ended.
            unsafe { libc::atexit(summarize_at_exit) };
        }
        here.push(feature.to_owned());
    }
    if let Some(path) = log_path() {
        append(&path, feature, test, why);
    }
}

/// Appends the line of one skip to the log at `path`, in one write.
pub fn append(path: &std::path::Path, feature: &str, test: &str, why: &str) {
    let one_line = |s: &str| s.replace(['\t', '\n'], " ");
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let line = format!(
        "{}\t{}\t{}\n",
        one_line(feature),
        one_line(test),
        one_line(why)
    );
    if let Ok(mut file) = std::fs::File::options()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = file.write_all(line.as_bytes());
    }
}

/// The log of this run ([`LOG_VAR`], or the file named by cargo's process); `None` where neither
/// can be known.
pub fn log_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(LOG_VAR).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    // A test binary is `<target>/<profile>/deps/NAME-HASH` (with `<triple>/` after `<target>`
    // when cross-built: the log then lies in `<target>/<triple>`).
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent()?.parent()?.parent()?;
    let cargo = std::os::unix::process::parent_id();
    // The parent's start time (field 22 of its stat, in clock ticks since boot), so that a
    // reused pid starts a new log; absent where there is no /proc (macOS).
    let started = std::fs::read_to_string(format!("/proc/{cargo}/stat"))
        .ok()
        .and_then(|stat| {
            // The fields after the command's name, which is in parentheses and may hold spaces.
            let after_name = stat.rsplit_once(')')?.1.to_owned();
            after_name.split_whitespace().nth(19).map(str::to_owned)
        })
        .unwrap_or_default();
    Some(
        target
            .join("skipped-tests")
            .join(format!("run-{cargo}-{started}.log")),
    )
}

/// `"N (FEATURE: n, FEATURE: n)"` for the features of the skips, counted, in order of first
/// appearance.
pub fn counted<'a>(features: impl IntoIterator<Item = &'a str>) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let mut total = 0;
    for feature in features {
        total += 1;
        match counts.iter_mut().find(|(f, _)| *f == feature) {
            Some((_, n)) => *n += 1,
            None => counts.push((feature, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(f, n)| format!("{f}: {n}")).collect();
    format!("{total} ({})", parts.join(", "))
}

/// The summary line of a test binary that skipped `here`, with the log's text so far.
pub fn summary(here: &[String], log: Option<(&str, &std::path::Path)>) -> String {
    let mut line = format!(
        "!!! SKIPPED in this test binary: {}",
        counted(here.iter().map(String::as_str))
    );
    if let Some((text, path)) = log {
        let features = text.lines().filter_map(|l| l.split('\t').next());
        line.push_str(&format!(
            "; in this cargo run so far: {}, listed in {}",
            counted(features),
            path.display()
        ));
    }
    line.push_str(". Each counts as passed; set the variable named to make it an error.");
    line
}

extern "C" fn summarize_at_exit() {
    let here = SKIPPED_HERE.lock().unwrap_or_else(|e| e.into_inner());
    let path = log_path();
    let text = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
    let log = match (&text, &path) {
        (Some(text), Some(path)) => Some((text.as_str(), path.as_path())),
        _ => None,
    };
    let _ = writeln!(std::io::stderr(), "\n{}\n", summary(&here, log));
}
