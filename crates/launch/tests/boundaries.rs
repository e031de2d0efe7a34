//! Architecture invariants about the crates, checked on their manifests: only the binary
//! (`crates/cli-sandbox`) has a command-line parser and a log subscriber, the provider's facade
//! (`launch`) does not pull in the contract's test double, and adapters depend on nothing but
//! `sandbox-core` among the workspace's crates; only the Linux backend (`crates/sandbox-linux`)
//! links Landlock, seccomp and netlink. And in the sources: `Deserialize` only on the types that are
//! read back.

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
    assert_eq!(
        adapters.len(),
        launch::registry::names().len(),
        "crates/adapter-* and the registry differ: each adapter crate needs its line in crates/launch/Cargo.toml (see registry::tests)"
    );
    for (name, dir) in adapters {
        for dep in normal_dependencies(&dir.join("Cargo.toml")) {
            assert!(
                dep == "sandbox-core" || !ours.contains(&dep),
                "crates/{name} depends on {dep}"
            );
        }
    }
}

#[test]
fn only_the_linux_backend_links_the_linux_mechanisms() {
    for (name, dir) in workspace_crates() {
        let deps = normal_dependencies(&dir.join("Cargo.toml"));
        for mechanism in [
            "landlock",
            "seccompiler",
            "netlink-sys",
            "netlink-packet-route",
        ] {
            let has = deps.iter().any(|d| d == mechanism);
            assert_eq!(
                has,
                name == "sandbox-linux",
                "crates/{name} and {mechanism}: only crates/sandbox-linux links it"
            );
        }
    }
    let text = std::fs::read_to_string(crates_dir().join("sandbox-linux/Cargo.toml")).unwrap();
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    let plain = doc["dependencies"].as_table_like().unwrap();
    assert!(
        plain.get("landlock").is_none() && plain.get("seccompiler").is_none(),
        "the Linux mechanisms are dependencies under cfg(target_os = \"linux\") only"
    );
}

/// The repository stands alone: no source, manifest or document points at a file outside it
/// (the design notes the first version was written from are not part of it; what the code relies
/// on is in `docs/`).
#[test]
fn nothing_cites_a_file_outside_the_repository() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !["target", "node_modules", ".git"].contains(&name.as_str()) {
                    walk(&path, out);
                }
            } else if [".rs", ".md", ".toml", ".sh", ".sbpl", ".py"]
                .iter()
                .any(|ext| name.ends_with(ext))
                || name == "run"
            {
                out.push(path);
            }
        }
    }
    let root = crates_dir().join("..");
    let mut files = Vec::new();
    walk(&root, &mut files);
    assert!(files.len() > 50, "the walk found {} files", files.len());
    let outside = ["../shared", "DESIGN.md", "CLI-FACTS", "DESIGN section"];
    let mut found = Vec::new();
    // This file names them itself, in its list.
    for file in files.iter().filter(|f| !f.ends_with("tests/boundaries.rs")) {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            if outside.iter().any(|o| line.contains(o)) {
                found.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The types that implement `Deserialize`, each with what reads it back. Every other type is
/// written (`plan --json`, `explain`, the plan file) and never read: without `Deserialize` no
/// value of it can be made from bytes, past its constructor (a `Policy`, a `Layout`, a
/// `Decision` from a file would carry whatever the file said).
const READ_BACK: &[(&str, &str)] = &[
    // The configuration file (`--config`), read by `Config::parse`.
    ("Config", "the configuration file"),
    ("LayoutConfig", "the configuration file"),
    ("PolicyConfig", "the configuration file"),
    ("CliConfig", "the configuration file"),
    (
        "CliNames",
        "the configuration file (the `[cli.NAME]` tables' places)",
    ),
    ("Network", "the configuration file (`[policy] network`)"),
    ("LimitsConfig", "the configuration file (`[limits]`)"),
    ("Size", "the configuration file (`[limits] memory`, `tmp`)"),
    // The Linux plan, written by the launcher and read back by the `cli-sandbox exec` helper
    // (`sandbox_linux::read_plan`), with every type it holds.
    ("LinuxPlan", "the plan file"),
    ("NamespacePlan", "the plan file"),
    ("NetworkPlan", "the plan file"),
    ("MountStep", "the plan file"),
    ("BindBack", "the plan file"),
    ("LimitsPlan", "the plan file"),
    ("PrivateTmp", "the plan file"),
    ("TmpPlace", "the plan file"),
    ("LandlockPlan", "the plan file"),
    ("LandlockRule", "the plan file"),
    ("SettingsFile", "the plan file"),
    ("FsRight", "the plan file"),
    ("SeccompPlan", "the plan file"),
    ("SocketFamily", "the plan file"),
    (
        "SeccompProgram",
        "the plan file (its compiled filter, as hexadecimal text)",
    ),
    ("Access", "the plan file (`BindBack`)"),
    // `--mcp-bridge JSON` on the command line.
    ("McpServer", "the `--mcp-bridge` argument"),
    ("Mode", "a mode a provider stored (older names too)"),
];

/// Every type of the workspace's sources that derives or implements `Deserialize` is one that is
/// read back ([`READ_BACK`]).
#[test]
fn deserialize_only_on_the_types_that_are_read_back() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for (_, dir) in workspace_crates() {
        if dir.join("src").is_dir() {
            walk(&dir.join("src"), &mut files);
        }
    }
    let mut found: Vec<(String, String)> = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let line = line.trim();
            let derived = line.starts_with("#[derive(") && line.contains("Deserialize");
            let name = if derived {
                // The type the derive is on: the next `struct` or `enum` line.
                lines[n + 1..].iter().find_map(|l| {
                    let words: Vec<&str> = l.split_whitespace().collect();
                    let at = words.iter().position(|w| *w == "struct" || *w == "enum")?;
                    let name = words.get(at + 1)?;
                    Some(name.split(['{', '(', '<', ';']).next().unwrap().to_owned())
                })
            } else if line.starts_with("impl<'de> ") && line.contains("Deserialize<'de> for ") {
                // `impl<'de> Deserialize<'de> for NAME {`, or with `serde::`.
                line.split_whitespace()
                    .nth(3)
                    .map(|n| n.trim_end_matches('{').to_owned())
            } else {
                None
            };
            if let Some(name) = name {
                found.push((name, format!("{}:{}", file.display(), n + 1)));
            }
        }
    }
    assert!(
        found.iter().any(|(n, _)| n == "LinuxPlan") && found.iter().any(|(n, _)| n == "Network"),
        "the scan misses a derive or an impl it should find: {found:?}"
    );
    let unlisted: Vec<String> = found
        .iter()
        .filter(|(name, _)| !READ_BACK.iter().any(|(n, _)| n == name))
        .map(|(name, at)| format!("{at}: {name}"))
        .collect();
    assert!(
        unlisted.is_empty(),
        "these types implement `Deserialize` but nothing reads them back (remove it, or list \
         the type in READ_BACK with what reads it):\n{}",
        unlisted.join("\n")
    );
}
