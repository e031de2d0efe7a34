//! `cli-sandbox-helper exec --policy FILE -- PROGRAM...`: the Linux helper alone, the same
//! arguments and the same code as `cli-sandbox exec` (`helper.rs`), in a binary that holds
//! nothing else, because every confined launch starts it: its start is a part of every launch's
//! cost (BENCHMARKS.md). The launcher runs it when it lies beside `cli-sandbox` where no chat can
//! replace it, else the full binary (`launch::wrap::helper_for`); a provider names it as its
//! helper (`CLI_SANDBOX_HELPER`, `Settings::helper`).
//!
//! It starts at C's `main`, without Rust's own start (`#![no_main]`), which reads the whole
//! `/proc/self/maps` to find the main thread's stack and maps an alternate signal stack, for a
//! "stack overflow" message the helper does not need (a stack overflow still ends it, by
//! SIGSEGV). Of that start it keeps what it relies on: SIGPIPE ignored, so that writing to a
//! pipe nobody reads is an error it reports, not its death. `std::env::args_os` reads the
//! arguments glibc hands every program (they do not come from Rust's start on Linux).

#![no_main]

use std::ffi::{c_char, c_int};

mod helper;

/// The process's entry, called by the C runtime with the arguments it also gives
/// `std::env::args_os` (not read here). `no_mangle` is sound: this is the one `main` symbol of
/// the binary (`#![no_main]`: Rust defines none), with the signature the C runtime calls.
#[unsafe(no_mangle)]
extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    // SAFETY: SIG_IGN installs no handler of ours; nothing else runs yet to race with.
    if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) } == libc::SIG_ERR {
        return c_int::from(helper::FAILED);
    }
    launch::phase!("start");
    let status = match helper::fast_path(std::env::args_os()) {
        Some((policy, argv)) => helper::run(&policy, &argv),
        None => {
            launch::say!(
                "usage: cli-sandbox-helper exec --policy FILE -- PROGRAM [ARGS...]\n\
                 (the Linux helper that `cli-sandbox plan` and `run` start; see `cli-sandbox exec --help`)"
            );
            helper::FAILED
        }
    };
    c_int::from(status)
}
