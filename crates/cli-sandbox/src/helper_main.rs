//! `cli-sandbox-helper exec --policy FILE -- PROGRAM...`: the Linux helper alone, the same
//! arguments and the same code as `cli-sandbox exec` (`helper.rs`), in a binary that holds
//! nothing else, because every confined launch starts it: its start is a part of every launch's
//! cost (BENCHMARKS.md). The launcher runs it when it lies beside `cli-sandbox` where no chat can
//! replace it, else the full binary (`launch::wrap::helper_for`); a provider names it as its
//! helper (`CLI_SANDBOX_HELPER`, `Settings::helper`).

use std::process::ExitCode;

mod helper;

fn main() -> ExitCode {
    launch::phase!("start");
    match helper::fast_path(std::env::args_os()) {
        Some((policy, argv)) => helper::run(&policy, &argv),
        None => {
            eprintln!(
                "usage: cli-sandbox-helper exec --policy FILE -- PROGRAM [ARGS...]\n\
                 (the Linux helper that `cli-sandbox plan` and `run` start; see `cli-sandbox exec --help`)"
            );
            ExitCode::from(helper::FAILED)
        }
    }
}
