//! Architecture invariants about the crates, checked on what Cargo and the compiler see, never
//! on how a manifest or a source happens to be written:
//!
//! - the dependency graph from `cargo metadata` (package names, so a dependency renamed in a
//!   manifest is still itself; the whole closure of what a crate links, so a dependency brought
//!   in through another crate counts): only the binary (`crates/cli-sandbox`) links a
//!   command-line parser or a log subscriber; the provider's facade (`launch`) links neither the
//!   contract nor the scripted model and its web stack; an adapter links no crate of the
//!   workspace but `sandbox-core`; the pure crates (`sandbox-core`, the adapters) link no crate
//!   that wraps system calls; only the Linux backend (`crates/sandbox-linux`) depends on
//!   Landlock, seccomp and netlink, and only for Linux;
//! - the pure crates' system calls, refused by clippy (`crates/clippy.toml`), which this file
//!   plants in a scratch crate under the same configuration;
//! - in the sources, parsed with `syn`: `Deserialize` only on the types that are read back; and
//!   no file cites a file outside the repository.
//!
//! Each check is a function of what it reads, and each has a test that plants a violation and
//! sees the check fail.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn repo_root() -> PathBuf {
    crates_dir().join("..").canonicalize().unwrap()
}

/// The workspace's dependency graph, by package name.
#[derive(Debug, Default)]
struct Graph {
    /// The workspace's own packages.
    members: BTreeSet<String>,
    /// Each package's dependencies that its own build links (not dev- or build-dependencies).
    normal: BTreeMap<String, Vec<Dep>>,
}

#[derive(Debug, Clone)]
struct Dep {
    /// The package's real name, whatever the manifest calls it.
    package: String,
    /// Whether every kind of it is under a `[target.'cfg(...)'.dependencies]` table.
    platform_only: bool,
}

impl Graph {
    /// `cargo metadata` of this workspace, every platform's dependencies included.
    fn of_the_workspace() -> Graph {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let out = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--locked"])
            .current_dir(repo_root())
            .output()
            .expect("cargo metadata runs");
        assert!(
            out.status.success(),
            "cargo metadata: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Graph::from_metadata(&serde_json::from_slice(&out.stdout).unwrap())
    }

    fn from_metadata(meta: &serde_json::Value) -> Graph {
        let name_of: BTreeMap<&str, &str> = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
            .collect();
        let mut graph = Graph {
            members: meta["workspace_members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| name_of[id.as_str().unwrap()].to_owned())
                .collect(),
            ..Graph::default()
        };
        for node in meta["resolve"]["nodes"].as_array().unwrap() {
            let mut deps = Vec::new();
            for dep in node["deps"].as_array().unwrap() {
                let normal: Vec<&serde_json::Value> = dep["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|k| k["kind"].is_null())
                    .collect();
                if normal.is_empty() {
                    continue;
                }
                deps.push(Dep {
                    package: name_of[dep["pkg"].as_str().unwrap()].to_owned(),
                    platform_only: normal.iter().all(|k| !k["target"].is_null()),
                });
            }
            let name = name_of[node["id"].as_str().unwrap()].to_owned();
            graph.normal.entry(name).or_default().extend(deps);
        }
        graph
    }

    /// Every package `name` links, directly or through another.
    fn closure(&self, name: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![name.to_owned()];
        while let Some(next) = todo.pop() {
            for dep in self.normal.get(&next).into_iter().flatten() {
                if seen.insert(dep.package.clone()) {
                    todo.push(dep.package.clone());
                }
            }
        }
        seen
    }

    fn direct(&self, name: &str) -> &[Dep] {
        self.normal.get(name).map_or(&[], Vec::as_slice)
    }
}

/// The crates that decide and describe, never act (`crates/clippy.toml`).
fn is_pure(name: &str) -> bool {
    name == "sandbox-core" || name.starts_with("adapter-")
}

/// Crates whose purpose is to make system calls: no pure crate links one.
const SYSTEM_CALL_CRATES: &[&str] = &[
    "libc",
    "rustix",
    "nix",
    "linux-raw-sys",
    "mio",
    "socket2",
    "tokio",
    "landlock",
    "seccompiler",
    "netlink-sys",
    "fs2",
    "fs4",
    "tempfile",
    "walkdir",
    "getrandom",
];

/// Each violation of the graph's invariants, in words.
fn graph_violations(graph: &Graph) -> Vec<String> {
    let mut found = Vec::new();
    let binary = "cli-sandbox";
    for member in &graph.members {
        let closure = graph.closure(member);
        // The binary is the only crate with a command line; the tests' crate links the binary.
        let links_binary = closure.contains(binary) || member == binary;
        for parser in ["clap", "clap_complete", "clap_mangen", "tracing-subscriber"] {
            if !links_binary && closure.contains(parser) {
                found.push(format!("{member} links {parser}: only crates/{binary} may"));
            }
        }
        if member == "launch" {
            for other in ["contract", "scripted-model", binary, "axum"] {
                if closure.contains(other) {
                    found.push(format!("launch links {other}"));
                }
            }
        }
        if member.starts_with("adapter-") {
            for dep in closure.iter().filter(|d| graph.members.contains(*d)) {
                if dep != "sandbox-core" {
                    found.push(format!(
                        "{member} links {dep}: an adapter links only sandbox-core"
                    ));
                }
            }
        }
        if is_pure(member) {
            for dep in closure
                .iter()
                .filter(|d| SYSTEM_CALL_CRATES.contains(&d.as_str()))
            {
                found.push(format!("{member} links {dep}, which makes system calls"));
            }
        }
        // The tests' crate builds seccomp filters of its own (stand-ins for a container's
        // profile): test code, never linked into what ships.
        let ships = member != "cli-sandbox-tests";
        for dep in graph.direct(member).iter().filter(|_| ships) {
            let mechanism = [
                "landlock",
                "seccompiler",
                "netlink-sys",
                "netlink-packet-route",
            ]
            .contains(&dep.package.as_str());
            if mechanism && member != "sandbox-linux" {
                found.push(format!(
                    "{member} depends on {}: only sandbox-linux may",
                    dep.package
                ));
            }
            if mechanism && !dep.platform_only {
                found.push(format!(
                    "{member} depends on {} for every platform: Linux only",
                    dep.package
                ));
            }
        }
    }
    found
}

#[test]
fn the_dependency_graph_keeps_its_invariants() {
    let graph = Graph::of_the_workspace();
    // The check reads the right graph: what it is about is there.
    for name in [
        "cli-sandbox",
        "launch",
        "sandbox-core",
        "sandbox-linux",
        "adapter-claude",
    ] {
        assert!(
            graph.members.contains(name),
            "{name} is a member: {:?}",
            graph.members
        );
    }
    assert!(graph.closure("cli-sandbox").contains("clap"));
    assert!(
        graph
            .direct("sandbox-linux")
            .iter()
            .any(|d| d.package == "landlock")
    );
    let found = graph_violations(&graph);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The workspace's graph with one planted edge `from -> to` (a new package when unknown).
fn planted(edges: &[(&str, &str, bool)]) -> Vec<String> {
    let mut graph = Graph::of_the_workspace();
    for (from, to, platform_only) in edges {
        graph
            .normal
            .entry((*from).to_owned())
            .or_default()
            .push(Dep {
                package: (*to).to_owned(),
                platform_only: *platform_only,
            });
    }
    graph_violations(&graph)
}

#[test]
fn each_planted_edge_fails_the_graph_check() {
    // A command-line parser under another name (the graph holds package names) and through
    // another crate.
    assert!(!planted(&[("launch", "clap", false)]).is_empty());
    assert!(
        !planted(&[
            ("sandbox-linux", "some-helper", false),
            ("some-helper", "clap", false)
        ])
        .is_empty()
    );
    // The scripted model's web stack linked into the facade through another crate.
    assert!(!planted(&[("launch", "glue", false), ("glue", "scripted-model", false)]).is_empty());
    // An adapter linking another adapter, through a crate of its own.
    assert!(
        !planted(&[
            ("adapter-pi", "shim", false),
            ("shim", "adapter-claude", false)
        ])
        .is_empty()
    );
    // A pure crate linking a crate that makes system calls, through another.
    assert!(!planted(&[("sandbox-core", "util", false), ("util", "libc", false)]).is_empty());
    // A Linux mechanism outside the Linux backend, and inside it for every platform.
    assert!(!planted(&[("launch", "landlock", true)]).is_empty());
    assert!(!planted(&[("sandbox-linux", "seccompiler", false)]).is_empty());
    // The control: a harmless edge passes.
    assert!(planted(&[("launch", "itoa", false)]).is_empty());
}

/// Runs clippy, as `.ci/run` does, on a scratch crate that holds `lib_rs` under a copy of
/// `crates/clippy.toml`; returns whether it passed and what it said.
fn clippy_on_scratch(lib_rs: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        crates_dir().join("clippy.toml"),
        dir.path().join("clippy.toml"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"scratch\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), lib_rs).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["clippy", "--offline", "--quiet", "--", "-D", "warnings"])
        .current_dir(dir.path())
        .env("CARGO_TARGET_DIR", dir.path().join("target"))
        .env_remove("CLIPPY_CONF_DIR")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo clippy runs (rustup component add clippy)");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Each kind of system call a pure crate might make, one per line, each written a way a text
/// scan would miss (a renamed `std`, an alias, a method on a value).
const PLANTED_SYSTEM_CALLS: &[&str] = &[
    "pub fn a() { let _ = std::fs::read(\"x\"); }",
    "pub fn b() { use std as s; let _ = s::fs::read_to_string(\"x\"); }",
    "pub fn c() { use std::fs::File as F; let _ = F::open(\"x\"); }",
    "pub fn d(p: &std::path::Path) -> bool { p.exists() }",
    "pub fn e() { let _ = std::process::Command::new(\"x\"); }",
    "pub fn f() { std::thread::spawn(|| ()); }",
    "pub fn g() -> Option<std::ffi::OsString> { std::env::var_os(\"X\") }",
    "pub fn h() { println!(\"x\"); }",
    "pub fn i() { use std::io::Write; let _ = writeln!(std::io::stderr(), \"x\"); }",
    "pub fn j() { let _ = std::net::TcpStream::connect(\"127.0.0.1:1\"); }",
    "pub fn k() { let _ = std::os::unix::net::UnixStream::connect(\"x\"); }",
    "pub fn l() -> std::time::SystemTime { std::time::SystemTime::now() }",
];

#[test]
fn clippy_refuses_each_planted_system_call_in_a_pure_crate() {
    // The control: the same crate with only pure code passes, so a failure below is the plants.
    let (ok, said) =
        clippy_on_scratch("pub fn pure(p: &std::path::Path) -> bool { p.starts_with(\"/x\") }\n");
    assert!(ok, "the control fails clippy: {said}");
    let lib: String = PLANTED_SYSTEM_CALLS
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    let (ok, said) = clippy_on_scratch(&lib);
    assert!(!ok, "clippy passed the planted system calls:\n{lib}");
    for (n, line) in PLANTED_SYSTEM_CALLS.iter().enumerate() {
        assert!(
            said.contains(&format!("src/lib.rs:{}:", n + 1)),
            "clippy let `{line}` through:\n{said}"
        );
    }
}

/// The text files of the repository (sources, manifests, documents, scripts).
fn repository_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !["target", "node_modules", ".git"].contains(&name.as_str()) {
                    walk(&path, out);
                }
            } else if [".rs", ".md", ".toml", ".sh", ".sbpl", ".py", ".js"]
                .iter()
                .any(|ext| name.ends_with(ext))
                || name == "run"
            {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&repo_root(), &mut files);
    files
}

/// The names of the places outside the repository that its first version was written from.
const OUTSIDE_NAMES: &[&str] = &["../shared", "DESIGN.md", "CLI-FACTS", "DESIGN section"];

/// The parts of a line of `file` that cite: a document's prose and links (not its code spans or
/// fenced blocks: those show paths of a layout, a link's target); a source's comments (without
/// their code spans) and the paths the compiler reads (`include_str!`, `#[path]`); a manifest's
/// `path =`; a script's comments. String literals in code are data (a symlink a test plants), not
/// citations.
fn citing_parts(file: &Path, line: &str, in_fence: &mut bool) -> Vec<String> {
    fn without_code_spans(text: &str) -> String {
        text.split('`').step_by(2).collect::<Vec<_>>().join(" ")
    }
    fn quoted_after(line: &str, marker: &str) -> Option<String> {
        let rest = &line[line.find(marker)? + marker.len()..];
        let start = rest.find('"')? + 1;
        let end = rest[start..].find('"')? + start;
        Some(rest[start..end].to_owned())
    }
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
    let mut parts = Vec::new();
    match ext {
        "md" => {
            if line.trim_start().starts_with("```") {
                *in_fence = !*in_fence;
            } else if !*in_fence {
                parts.push(without_code_spans(line));
            }
        }
        "rs" => {
            if let Some(at) = line.find("//") {
                parts.push(without_code_spans(&line[at..]));
            }
            for marker in ["include_str!(", "include_bytes!(", "include!(", "#[path"] {
                parts.extend(quoted_after(line, marker));
            }
        }
        "toml" => {
            if let Some(at) = line.find('#') {
                parts.push(line[at..].to_owned());
            }
            parts.extend(quoted_after(line, "path ="));
        }
        _ => {
            if let Some(at) = line.find('#') {
                parts.push(without_code_spans(&line[at..]));
            }
        }
    }
    parts
}

/// Each citation in `text` (the file at `file`, relative to the repository's root) of a file
/// outside the repository: one of [`OUTSIDE_NAMES`] anywhere, or, in a part of a line that
/// cites ([`citing_parts`]), a relative path that climbs above the root from the file's folder.
fn outside_citations(file: &Path, text: &str) -> Vec<String> {
    let depth = file.parent().map_or(0, |p| p.components().count());
    let mut found = Vec::new();
    let mut in_fence = false;
    for (n, line) in text.lines().enumerate() {
        let mut cites = OUTSIDE_NAMES.iter().any(|o| line.contains(o));
        for part in citing_parts(file, line, &mut in_fence) {
            for (i, _) in part.match_indices("../") {
                // Only where a path starts: not inside a longer one (`a/../b`).
                let before = part[..i].chars().last();
                if before.is_some_and(|c| c.is_alphanumeric() || "/._-".contains(c)) {
                    continue;
                }
                let path = part[i..]
                    .split(|c: char| c.is_whitespace() || "\"')]>,;".contains(c))
                    .next()
                    .unwrap_or("");
                cites |= path.matches("../").count() > depth;
            }
        }
        if cites {
            found.push(format!("{}:{}: {line}", file.display(), n + 1));
        }
    }
    found
}

/// The repository stands alone: no source, manifest, document or script points at a file outside
/// it (the design notes the first version was written from are not part of it; what the code
/// relies on is in `docs/`).
#[test]
fn nothing_cites_a_file_outside_the_repository() {
    let root = repo_root();
    let files = repository_files();
    assert!(files.len() > 50, "the walk found {} files", files.len());
    let mut found = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap();
        // This file names them itself, in its list and its plants.
        if relative == Path::new("crates/launch/tests/boundaries.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap_or_default();
        found.extend(outside_citations(relative, &text));
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn each_planted_citation_fails_the_check() {
    let outside = |file: &str, text: &str| !outside_citations(Path::new(file), text).is_empty();
    // Named places, and paths that climb out of the root from the file's folder: in a
    // document's prose and links, a source's comments and `include_str!`, a manifest's path, a
    // script's comment.
    assert!(outside(
        "crates/launch/src/lib.rs",
        "let _ = 1; // as ../shared/CLI-FACTS.md says"
    ));
    assert!(outside(
        "docs/linux.md",
        "see [the notes](../../notes/design.txt)"
    ));
    assert!(outside("README.md", "as ../notes.md says"));
    assert!(outside(
        "crates/launch/src/lib.rs",
        "// from ../../../../facts/x.json"
    ));
    assert!(outside(
        "crates/launch/src/lib.rs",
        "const F: &str = include_str!(\"../../../../x.txt\");"
    ));
    assert!(outside(
        "crates/launch/Cargo.toml",
        "x = { path = \"../../../x\" }"
    ));
    assert!(outside(
        "scripts/bench.sh",
        "# numbers from ../../other-repo/bench.txt"
    ));
    // The controls: paths that stay inside, and data in code.
    assert!(!outside("docs/linux.md", "see [the README](../README.md)"));
    assert!(!outside(
        "crates/cli-sandbox/tests/a.rs",
        "#[path = \"../../../tests/support/skips.rs\"]"
    ));
    assert!(!outside(
        "tests/attacks.rs",
        "symlink(\"../../users\", &link);"
    ));
    assert!(!outside(
        "SECURITY.md",
        "a planted `outputs -> ../../users`"
    ));
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
    ("GuardPlan", "the plan file"),
    ("EgressPlan", "the plan file (`network = \"allowlist\"`)"),
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
    ("Secrets", "`[policy] secrets` in the configuration file"),
    ("EnvPolicy", "`[policy] env` in the configuration file"),
];

/// The names of the types in `source` that derive or implement `Deserialize`, however the
/// derive is written (over several lines, as `serde::Deserialize`, or under a name a `use ... as`
/// gave it).
fn deserialized_types(source: &str) -> Vec<String> {
    use syn::visit::Visit;
    struct Finder {
        aliases: BTreeSet<String>,
        found: Vec<String>,
    }
    impl Finder {
        fn is_deserialize(&self, path: &syn::Path) -> bool {
            path.segments.last().is_some_and(|s| {
                s.ident == "Deserialize" || self.aliases.contains(&s.ident.to_string())
            })
        }
        fn derives(&self, attrs: &[syn::Attribute]) -> bool {
            attrs
                .iter()
                .filter(|a| a.path().is_ident("derive"))
                .any(|a| {
                    let mut yes = false;
                    let _ = a.parse_nested_meta(|meta| {
                        yes |= self.is_deserialize(&meta.path);
                        Ok(())
                    });
                    yes
                })
        }
    }
    impl<'ast> Visit<'ast> for Finder {
        fn visit_use_rename(&mut self, u: &'ast syn::UseRename) {
            if u.ident == "Deserialize" {
                self.aliases.insert(u.rename.to_string());
            }
        }
        fn visit_item_struct(&mut self, i: &'ast syn::ItemStruct) {
            if self.derives(&i.attrs) {
                self.found.push(i.ident.to_string());
            }
            syn::visit::visit_item_struct(self, i);
        }
        fn visit_item_enum(&mut self, i: &'ast syn::ItemEnum) {
            if self.derives(&i.attrs) {
                self.found.push(i.ident.to_string());
            }
            syn::visit::visit_item_enum(self, i);
        }
        fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
            if let (Some((_, path, _)), syn::Type::Path(ty)) = (&i.trait_, &*i.self_ty)
                && self.is_deserialize(path)
                && let Some(name) = ty.path.segments.last()
            {
                self.found.push(name.ident.to_string());
            }
            syn::visit::visit_item_impl(self, i);
        }
    }
    let file = syn::parse_file(source).expect("the source parses");
    let mut finder = Finder {
        aliases: BTreeSet::new(),
        found: Vec::new(),
    };
    // The aliases first: a `use` may come after the item it names.
    for item in &file.items {
        if let syn::Item::Use(u) = item {
            finder.visit_item_use(u);
        }
    }
    finder.visit_file(&file);
    finder.found
}

#[test]
fn each_planted_deserialize_is_found() {
    let found = |s: &str| deserialized_types(s);
    assert_eq!(found("#[derive(Debug, Deserialize)] struct A;"), ["A"]);
    // Over several lines, as rustfmt writes a long derive.
    assert_eq!(
        found("#[derive(\n    Debug,\n    Clone,\n    serde::Deserialize,\n)]\npub enum B { X }"),
        ["B"]
    );
    // Under another name.
    assert_eq!(
        found("use serde::Deserialize as D;\n#[derive(D)] struct C { x: u8 }"),
        ["C"]
    );
    // Written by hand, inside a module.
    assert_eq!(
        found("mod m { impl<'de> serde::Deserialize<'de> for E { fn deserialize<X>(_: X) {} } }"),
        ["E"]
    );
    // The control: a type that is only written.
    assert!(found("#[derive(Debug, Serialize)] struct F;").is_empty());
}

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
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            walk(&src, &mut files);
        }
    }
    let mut found: Vec<(String, String)> = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for name in deserialized_types(&text) {
            found.push((name, file.display().to_string()));
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
