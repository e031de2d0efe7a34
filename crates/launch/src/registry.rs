//! Every CLI cli-sandbox can launch, by name: the only list of them.
//!
//! Adding a CLI is one adapter crate (`crates/adapter-x`, exporting
//! `pub static ADAPTER: &dyn CliAdapter`) and one line in `crates/launch/Cargo.toml`'s
//! `[dependencies]`, `adapter-x = { path = "../adapter-x" }`: `build.rs` writes [`ADAPTERS`]
//! from those lines, in their order. The workspace picks the crate up by its glob, and the
//! golden tests, the contract and `cli-sandbox adapters` iterate [`ADAPTERS`]. The first six are
//! AgentWorks' CLIs; Gemini CLI is the seventh, added that way.

use sandbox_core::CliAdapter;

include!(concat!(env!("OUT_DIR"), "/adapters.rs"));

/// The adapter registered under `name`.
pub fn find(name: &str) -> Option<&'static dyn CliAdapter> {
    ADAPTERS.iter().copied().find(|a| a.name() == name)
}

/// The registered names, for error messages.
pub fn names() -> Vec<&'static str> {
    ADAPTERS.iter().map(|a| a.name()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_each_is_found() {
        let mut names = names();
        for cli in &names {
            assert!(find(cli).is_some(), "{cli} is not found by its name");
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ADAPTERS.len());
    }

    /// The convention the registry relies on: crate `adapter-x` registers the CLI named `x`.
    #[test]
    fn each_adapter_crate_is_named_after_its_cli() {
        assert_eq!(ADAPTER_CRATES.len(), ADAPTERS.len());
        for (krate, adapter) in ADAPTER_CRATES.iter().zip(ADAPTERS) {
            assert_eq!(
                *krate,
                format!("adapter-{}", adapter.name()),
                "the crate of the CLI `{}` is named `{krate}`: name it `adapter-{}`",
                adapter.name(),
                adapter.name()
            );
        }
    }

    /// A crate under `crates/adapter-*` that no line of `crates/launch/Cargo.toml` names is an
    /// adapter nobody can launch.
    #[test]
    fn every_adapter_crate_in_the_workspace_is_registered() {
        let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&crates).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("adapter-") && entry.path().join("Cargo.toml").exists() {
                found.push(name);
            }
        }
        assert!(!found.is_empty(), "no crates/adapter-* under {crates:?}");
        for name in found {
            assert!(
                ADAPTER_CRATES.contains(&name.as_str()),
                "crates/{name} is not registered: add `{name} = {{ path = \"../{name}\" }}` to \
                 [dependencies] in crates/launch/Cargo.toml, where the list's order is the order \
                 `cli-sandbox adapters` shows"
            );
        }
    }
}
