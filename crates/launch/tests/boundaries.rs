//! Architecture invariants about the crates, checked on their manifests: only the binary
//! (`crates/cli-sandbox`) has a command-line parser and a log subscriber, the provider's facade
//! (`launch`) does not pull in the contract's test double, and adapters depend on nothing but
//! `sandbox-core` among the workspace's crates.

use std::path::{Path, PathBuf};

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The names in every dependency table of a manifest that a build of the crate itself links
/// (`[dependencies]` and `[target.*.dependencies]`; not dev- or build-dependencies).
fn normal_dependencies(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    let mut names = Vec::new();
    if let Some(deps) = doc.get("dependencies").and_then(|d| d.as_table_like()) {
        names.extend(deps.iter().map(|(k, _)| k.to_owned()));
    }
    if let Some(targets) = doc.get("target").and_then(|t| t.as_table_like()) {
        for (_, target) in targets.iter() {
            if let Some(deps) = target.get("dependencies").and_then(|d| d.as_table_like()) {
                names.extend(deps.iter().map(|(k, _)| k.to_owned()));
            }
        }
    }
    names
}

fn workspace_crates() -> Vec<(String, PathBuf)> {
    let mut out: Vec<_> = std::fs::read_dir(crates_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").exists())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    out.sort();
    out
}

#[test]
fn only_the_binary_has_a_command_line_parser_or_a_log_subscriber() {
    let mut seen_binary = false;
    for (name, dir) in workspace_crates() {
        let deps = normal_dependencies(&dir.join("Cargo.toml"));
        for parser in ["clap", "clap_complete", "clap_mangen", "tracing-subscriber"] {
            if name == "cli-sandbox" {
                seen_binary |= deps.iter().any(|d| d == "clap");
            } else {
                assert!(
                    !deps.iter().any(|d| d == parser),
                    "crates/{name} depends on {parser}: only crates/cli-sandbox may"
                );
            }
        }
    }
    assert!(
        seen_binary,
        "crates/cli-sandbox has no clap: the check looks at the wrong files"
    );
}

#[test]
fn the_facade_does_not_link_the_contract_or_its_test_double() {
    let deps = normal_dependencies(&crates_dir().join("launch/Cargo.toml"));
    assert!(deps.iter().any(|d| d == "sandbox-core"), "{deps:?}");
    for other in ["contract", "scripted-model", "cli-sandbox", "axum"] {
        assert!(
            !deps.iter().any(|d| d == other),
            "launch depends on {other}"
        );
    }
}

#[test]
fn adapters_depend_on_no_other_crate_of_the_workspace_than_sandbox_core() {
    let ours: Vec<String> = workspace_crates().into_iter().map(|(n, _)| n).collect();
    let adapters: Vec<_> = workspace_crates()
        .into_iter()
        .filter(|(n, _)| n.starts_with("adapter-"))
        .collect();
    assert_eq!(adapters.len(), launch::registry::names().len());
    for (name, dir) in adapters {
        for dep in normal_dependencies(&dir.join("Cargo.toml")) {
            assert!(
                dep == "sandbox-core" || !ours.contains(&dep),
                "crates/{name} depends on {dep}"
            );
        }
    }
}
