//! ARCHITECTURE.md kept true where a claim is a list the code also holds: every crate under
//! `crates/` is in the code map, every command of the binary and every file of its `src/` are
//! named in the binary's paragraph, every file of `sandbox-linux`'s `src/` in its paragraph, every
//! file of `tests/` and `tests/support/` in theirs, the
//! arrows block is exactly the workspace's dependencies between its crates (`cargo metadata`),
//! and the crates said to forbid `unsafe` do. Each check is run against a planted change in
//! `each_planted_drift_is_found`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the repository's root")
        .to_owned()
}

fn architecture() -> String {
    std::fs::read_to_string(repo_root().join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md")
}

/// The text of `## title` up to the next `## `.
fn section<'a>(md: &'a str, title: &str) -> &'a str {
    let start = md
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no section `{title}`"));
    let rest = &md[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    &rest[..end]
}

/// The code map's paragraph of `crates/NAME` (from its bold title to the next one).
fn paragraph<'a>(md: &'a str, name: &str) -> &'a str {
    let map = section(md, "Code map");
    let title = format!("**`crates/{name}`**");
    let start = map
        .find(&title)
        .unwrap_or_else(|| panic!("the code map has no paragraph {title}"));
    let rest = &map[start + title.len()..];
    let end = rest.find("\n**`").map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

/// The crates under `crates/` (each folder with a manifest).
fn crates() -> BTreeSet<String> {
    std::fs::read_dir(repo_root().join("crates"))
        .expect("read crates/")
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The crates the code map names: `crates/NAME` and the adapters' `crates/adapter-{a,b}`.
fn named_crates(md: &str) -> BTreeSet<String> {
    let map = section(md, "Code map");
    let mut out = BTreeSet::new();
    for (at, _) in map.match_indices("crates/") {
        let rest = &map[at + "crates/".len()..];
        if let Some(list) = rest.strip_prefix("adapter-{") {
            let list = &list[..list.find('}').expect("a closed brace")];
            out.extend(list.split(',').map(|a| format!("adapter-{}", a.trim())));
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            out.insert(name);
        }
    }
    out
}

fn missing_crates(md: &str) -> Vec<String> {
    let named = named_crates(md);
    crates()
        .into_iter()
        .filter(|c| !named.contains(c))
        .collect()
}

#[test]
fn every_crate_is_in_the_code_map() {
    let missing = missing_crates(&architecture());
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name {missing:?}: add a paragraph **`crates/NAME`**"
    );
}

/// The commands of the binary: the variants of `main.rs`'s `enum Command`, as clap names them.
fn commands(main_rs: &str) -> Vec<String> {
    let file = syn::parse_file(main_rs).expect("main.rs parses");
    let command = file
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Enum(e) if e.ident == "Command" => Some(e),
            _ => None,
        })
        .expect("main.rs has `enum Command`");
    command
        .variants
        .iter()
        .map(|v| {
            let mut out = String::new();
            for (i, c) in v.ident.to_string().chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    out.push('-');
                }
                out.push(c.to_ascii_lowercase());
            }
            out
        })
        .collect()
}

/// The relative paths of the `.rs` files under `dir`.
fn sources(dir: &Path, under: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir)
        .expect("read a source folder")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, under, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(under).expect("under");
            out.insert(rel.to_string_lossy().into_owned());
        }
    }
}

/// What `text` does not name of `names`, each as `` `name` ``.
fn unnamed(text: &str, names: impl IntoIterator<Item = String>) -> Vec<String> {
    names
        .into_iter()
        .filter(|n| !text.contains(&format!("`{n}`")))
        .collect()
}

fn binary_drift(md: &str, main_rs: &str) -> Vec<String> {
    let cli = paragraph(md, "cli-sandbox");
    let mut files = BTreeSet::new();
    let src = repo_root().join("crates/cli-sandbox/src");
    sources(&src, &src, &mut files);
    let mut out = unnamed(cli, commands(main_rs));
    out.extend(unnamed(cli, files));
    out
}

#[test]
fn every_command_and_file_of_the_binary_is_in_the_code_map() {
    let main_rs = std::fs::read_to_string(repo_root().join("crates/cli-sandbox/src/main.rs"))
        .expect("read main.rs");
    let drift = binary_drift(&architecture(), &main_rs);
    assert!(
        drift.is_empty(),
        "the code map's paragraph of `crates/cli-sandbox` does not name {drift:?}"
    );
}

fn linux_drift(md: &str) -> Vec<String> {
    let mut files = BTreeSet::new();
    let src = repo_root().join("crates/sandbox-linux/src");
    sources(&src, &src, &mut files);
    files.remove("lib.rs");
    unnamed(paragraph(md, "sandbox-linux"), files)
}

#[test]
fn every_file_of_the_linux_backend_is_in_the_code_map() {
    let drift = linux_drift(&architecture());
    assert!(
        drift.is_empty(),
        "the code map's paragraph of `crates/sandbox-linux` does not name {drift:?}"
    );
}

/// The paragraph of the cross-crate tests (`**`tests/`**` up to the invariants).
fn tests_paragraph(md: &str) -> &str {
    let map = section(md, "Code map");
    &map[map
        .find("**`tests/`**")
        .expect("the code map has **`tests/`**")..]
}

fn tests_drift(md: &str) -> Vec<String> {
    let par = tests_paragraph(md);
    let mut files = BTreeSet::new();
    for dir in ["tests", "tests/support"] {
        for entry in std::fs::read_dir(repo_root().join(dir))
            .expect("read tests/")
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".rs") {
                files.insert(name);
            }
        }
    }
    unnamed(par, files)
}

#[test]
fn every_file_of_the_cross_crate_tests_is_in_the_code_map() {
    let drift = tests_drift(&architecture());
    assert!(
        drift.is_empty(),
        "the code map's paragraph of `tests/` does not name {drift:?}"
    );
}

type Arrows = BTreeMap<String, BTreeSet<String>>;

/// The arrows block of the invariants (`from -> to, to`), `adapter-*` read as every adapter.
fn stated_arrows(md: &str, adapters: &BTreeSet<String>) -> Arrows {
    let invariants = section(md, "Architecture invariants");
    let start = invariants
        .find("```text\n")
        .expect("the arrows block (```text)")
        + "```text\n".len();
    let block = &invariants[start..];
    let block = &block[..block.find("```").expect("the arrows block closed")];
    let expand = |name: &str| -> Vec<String> {
        if name == "adapter-*" {
            adapters.iter().cloned().collect()
        } else {
            vec![name.to_owned()]
        }
    };
    let mut out = Arrows::new();
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (from, to) = line
            .split_once("->")
            .expect("an arrow line: `from -> to, to`");
        for from in expand(from.trim()) {
            let set = out.entry(from).or_default();
            for to in to.split(',') {
                set.extend(expand(to.trim()));
            }
        }
    }
    out
}

/// The workspace's normal dependencies between its own packages.
fn real_arrows() -> Arrows {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(repo_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let ours: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("a name"))
        .collect();
    let mut arrows = Arrows::new();
    for p in packages {
        for dep in p["dependencies"].as_array().expect("dependencies") {
            let name = dep["name"].as_str().expect("a dependency's name");
            if dep["kind"].is_null() && ours.contains(name) {
                arrows
                    .entry(p["name"].as_str().expect("a name").to_owned())
                    .or_default()
                    .insert(name.to_owned());
            }
        }
    }
    arrows
}

fn adapters() -> BTreeSet<String> {
    crates()
        .into_iter()
        .filter(|c| c.starts_with("adapter-"))
        .collect()
}

#[test]
fn the_arrows_are_the_workspaces_dependencies() {
    let stated = stated_arrows(&architecture(), &adapters());
    let real = real_arrows();
    assert_eq!(
        stated, real,
        "ARCHITECTURE.md's arrows (left) are not the workspace's dependencies from cargo metadata (right)"
    );
}

/// The crates ARCHITECTURE.md says forbid `unsafe`: sandbox-core, every adapter, scripted-model.
fn without_forbid() -> Vec<String> {
    let mut crates = adapters();
    crates.insert("sandbox-core".into());
    crates.insert("scripted-model".into());
    crates
        .into_iter()
        .filter(|c| {
            let lib = repo_root().join("crates").join(c).join("src/lib.rs");
            !forbids_unsafe(&std::fs::read_to_string(&lib).expect("read lib.rs"))
        })
        .collect()
}

/// Whether a crate root holds `#![forbid(unsafe_code)]` (an attribute, not a comment).
fn forbids_unsafe(lib_rs: &str) -> bool {
    let file = syn::parse_file(lib_rs).expect("lib.rs parses");
    file.attrs.iter().any(|a| {
        a.path().is_ident("forbid")
            && a.parse_args::<syn::Path>()
                .is_ok_and(|p| p.is_ident("unsafe_code"))
    })
}

#[test]
fn the_pure_crates_and_the_scripted_model_forbid_unsafe() {
    let missing = without_forbid();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md says these forbid `unsafe`, and their lib.rs has no #![forbid(unsafe_code)]: {missing:?}"
    );
}

#[test]
fn each_planted_drift_is_found() {
    let md = architecture();
    // A crate the map leaves out.
    let planted = md.replacen("**`crates/scripted-model`**", "**`crates/scripted`**", 1);
    assert_eq!(missing_crates(&planted), ["scripted-model"]);
    // A new command, and a command the map no longer names.
    let main_rs = std::fs::read_to_string(repo_root().join("crates/cli-sandbox/src/main.rs"))
        .expect("read main.rs");
    assert!(binary_drift(&md, &main_rs).is_empty());
    let planted_main = main_rs.replacen("enum Command {", "enum Command {\n    NewThing,", 1);
    assert_eq!(binary_drift(&md, &planted_main), ["new-thing"]);
    let planted = md.replacen("`profile` (`profile.rs`)", "profile", 1);
    assert_eq!(binary_drift(&planted, &main_rs), ["profile", "profile.rs"]);
    // A file of the Linux backend the map leaves out.
    let planted = md.replace("`plan/format.rs`", "the format");
    assert_eq!(linux_drift(&planted), ["plan/format.rs"]);
    // A test file the map leaves out.
    let planted = md.replace("`steering.rs`", "the steering tests");
    assert_eq!(tests_drift(&planted), ["steering.rs"]);
    // An arrow the workspace does not have, and one it has that the block leaves out.
    let adapters = adapters();
    let real = real_arrows();
    let planted = md.replacen(
        "contract -> launch, sandbox-core, sandbox-linux, scripted-model",
        "contract -> launch, sandbox-core, sandbox-linux",
        1,
    );
    assert_ne!(stated_arrows(&planted, &adapters), real);
    let planted = md.replacen(
        "sandbox-linux -> sandbox-core",
        "sandbox-linux -> sandbox-core, launch",
        1,
    );
    assert_ne!(stated_arrows(&planted, &adapters), real);
    assert_eq!(stated_arrows(&md, &adapters), real);
    // The attribute gone, or only in a comment.
    assert!(forbids_unsafe(
        "//! A crate.\n#![forbid(unsafe_code)]\npub fn f() {}"
    ));
    assert!(!forbids_unsafe(
        "//! A crate.\n// #![forbid(unsafe_code)]\npub fn f() {}"
    ));
    assert!(!forbids_unsafe("#![deny(unsafe_code)]\npub fn f() {}"));
}
