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
//! pipe nobody reads is an error it reports, not its death. The arguments are read from `main`'s
//! own `argv`: `std::env::args_os` would be empty here on musl, where only Rust's start saves
//! them (glibc also hands them to the program's initialisers, which std reads).
//!
//! The release build to install is static and against musl (README, "Install"): glibc's own
//! start, static or not, asks the processor about its features and caches many times over
//! (`cpuid`), and in a virtual machine each of those questions is a trip to the hypervisor.
//! BENCHMARKS.md has the figures.

#![no_main]

use std::ffi::{CStr, OsStr, OsString, c_char, c_int};
use std::os::unix::ffi::OsStrExt;

mod helper;

/// The process's entry, called by the C runtime with the program's arguments. `no_mangle` is
/// sound: this is the one `main` symbol of the binary (`#![no_main]`: Rust defines none), with
/// the signature the C runtime calls.
#[unsafe(no_mangle)]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: SIG_IGN installs no handler of ours; nothing else runs yet to race with.
    if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) } == libc::SIG_ERR {
        return c_int::from(helper::FAILED);
    }
    sandbox_linux::phase!("start");
    let status = match helper::fast_path(arguments(argc, argv)) {
        Some((policy, argv)) => helper::run(&policy, &argv),
        None => {
            sandbox_linux::say!(
                "usage: cli-sandbox-helper exec --policy FILE -- PROGRAM [ARGS...]\n\
                 (the Linux helper that `cli-sandbox plan` and `run` start; see `cli-sandbox exec --help`)"
            );
            helper::FAILED
        }
    };
    c_int::from(status)
}

/// The arguments `main` was given, each copied. `argv` holds `argc` pointers to C strings (the
/// kernel's layout, which the C runtime hands on unchanged); a negative `argc` is read as none.
fn arguments(argc: c_int, argv: *const *const c_char) -> impl Iterator<Item = OsString> {
    let count = usize::try_from(argc).unwrap_or(0);
    (0..count).map(move |i| {
        // SAFETY: `i < argc`, so the pointer stays inside the array of `argc` pointers the C
        // runtime passed.
        let slot = unsafe { argv.add(i) };
        // SAFETY: `slot` points at one of those entries, which live (unchanged by anyone) for
        // the whole process.
        let arg = unsafe { *slot };
        // SAFETY: each of the first `argc` entries is a NUL-terminated string the kernel copied
        // onto the stack at exec, alive for the whole process.
        let bytes = unsafe { CStr::from_ptr(arg) }.to_bytes();
        OsStr::from_bytes(bytes).to_owned()
    })
}
