//! Pre-trust against a chat that prepares the home it can write for the next launch: symlinks
//! planted at each adapter's settings file, at its folder and at a folder above, pointing at
//! `config.json`, another chat's runtime, `personal-mcp/`, workspace-docs and a place outside
//! the home; the same swapped in and out while launches run; hard links, fifos, dangling links
//! and loops; files of another owner; and the dotfile managers' links that must keep working.
//! (A chat holding every lock it can take in the home: `locks.rs`.)
//!
//! Every refusal is checked against the disk: AgentWorks' data (the state root, with
//! workspace-docs and every runtime in it) and the folder outside the home byte for byte as
//! they were, no new entry anywhere in them, no secret of theirs in any file of the home, in the
//! launch's argv and env, or in the error. Every attack has a control: the same launch with a
//! guard whose policy makes the target the person's (the demo's AgentWorks data an ordinary
//! folder of a wider home) writes there, so the probe can succeed and only the rule stops it.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use launch::demo::Demo;
use launch::person_files::{PersonFilesGuard, RealPersonFiles, Resolution};
use launch::{Context, Settings};
use sandbox_core::{CliLaunch, LaunchRequest, McpServer, Mode, PersonFiles, Policy, Shape};

// ---------- the world ----------

/// A demo layout (home, AgentWorks' data inside it, this chat and another), protected settings
/// files of both formats, and the secrets none of them may leak.
struct World {
    _dir: tempfile::TempDir,
    demo: Demo,
    policy: Policy,
    /// Every secret string: the demo's protected contents and the MCP server names of the
    /// protected TOML files.
    secrets: Vec<String>,
}

const SECRET_SERVERS: [&str; 2] = ["secret-mcp-alpha", "secret-mcp-beta"];

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let demo = Demo::create(&dir.path().join("demo")).unwrap();
    let token = format!("secret-server-token-{}", std::process::id());
    let toml = format!(
        "# token = {token}\n[mcp_servers.{}]\ncommand = \"/x\"\n\n[mcp_servers.{}]\ncommand = \"/y\"\n",
        SECRET_SERVERS[0], SECRET_SERVERS[1]
    );
    // A protected TOML beside config.json and in personal-mcp/, and settings-shaped files in
    // workspace-docs: what a link would make the launcher read as the person's.
    for (path, text) in [
        (demo.state_root.join("config.toml"), toml.clone()),
        (demo.state_root.join("personal-mcp/config.toml"), toml),
        (
            demo.workspace_docs.join("users/settings.json"),
            format!("{{\"users\": \"{token}-users\"}}\n"),
        ),
        (
            demo.workspace_docs.join("users/settings.toml"),
            format!("users = \"{token}-users\"\n"),
        ),
    ] {
        fs::write(path, text).unwrap();
    }
    let ctx = Context::load(&demo.settings()).unwrap();
    let policy = ctx
        .policy(
            &demo.chat,
            &[sandbox_core::GrantRequest::parse(&demo.grant_arg()).unwrap()],
        )
        .unwrap();
    ctx.ensure_runtime(&policy).unwrap();
    // The demo's tokens (`secret-<what>-<pid>`) in its protected files; the home's own files
    // (`notes.txt`) are the person's, not secrets.
    let token_pattern = regex::Regex::new(r"secret-[a-z-]+-[0-9]+").unwrap();
    let mut secrets: Vec<String> = demo
        .secrets
        .iter()
        .filter(|(path, _)| path.starts_with(&demo.state_root))
        .flat_map(|(_, content)| {
            token_pattern
                .find_iter(content)
                .map(|m| m.as_str().to_owned())
        })
        .collect();
    assert!(
        secrets.contains(&token),
        "the server token is a secret: {secrets:?}"
    );
    secrets.extend(SECRET_SERVERS.map(str::to_owned));
    World {
        _dir: dir,
        demo,
        policy,
        secrets,
    }
}

impl World {
    fn home(&self, relative: &str) -> PathBuf {
        self.demo.home.join(relative)
    }

    fn request(&self, workdir: &Path) -> LaunchRequest {
        LaunchRequest {
            shape: Shape::Structured,
            mode: Mode::Full,
            workdir: workdir.to_owned(),
            home: self.demo.home.clone(),
            grants: self.policy.grants().to_vec(),
            // With a bridge, Gemini writes the chat's own workspace settings too.
            mcp_bridge: Some(McpServer {
                name: "agentworks".into(),
                command: "/opt/bridge".into(),
                args: Vec::new(),
                env: Default::default(),
            }),
            prompt: None,
            model: None,
            extra_args: Vec::new(),
            confined: true,
            nonce: String::new(),
        }
    }

    /// The chat's guard, as a launch builds it.
    fn guard(&self, resolution: Resolution) -> PersonFilesGuard {
        PersonFilesGuard::for_policy(&self.policy).resolving_by(resolution)
    }

    /// The control: a person whose home is the whole demo folder (so the place outside the home
    /// is in it) and whose AgentWorks data is elsewhere, so that the demo's state root is an
    /// ordinary folder of the home. Same code, same links; only the rule differs.
    fn control_guard(&self, resolution: Resolution) -> PersonFilesGuard {
        let ctx = Context::load(&Settings {
            home: Some(self.demo.root.clone()),
            state_root: Some(self.demo.root.join("control-state")),
            ..Default::default()
        })
        .unwrap();
        PersonFilesGuard::for_policy(&ctx.policy(&self.demo.chat, &[]).unwrap())
            .resolving_by(resolution)
    }

    /// One launch of `cli` as the launcher makes it: the adapter reads the person's files
    /// through the guard, then the guard applies its edits. `vars` is the launcher's
    /// environment as the adapter sees it.
    fn launch(
        &self,
        cli: &str,
        guard: PersonFilesGuard,
        vars: &[(&str, PathBuf)],
        workdir: &Path,
    ) -> Result<CliLaunch, String> {
        let adapter = launch::registry::find(cli).unwrap();
        let vars = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.display().to_string()))
            .collect();
        let person = RealPersonFiles::with_vars(guard, vars);
        let mut request = self.request(workdir);
        if !adapter.modes().contains(&request.mode) {
            request.mode = adapter.modes()[0]; // Pi: bridge-only
        }
        let launch = adapter
            .launch(&request, &person)
            .map_err(|e| e.to_string())?;
        let guard = person.guard();
        for edit in &launch.pre_trust {
            guard.apply(edit).map_err(|e| e.to_string())?;
        }
        Ok(launch)
    }

    fn secret_in(&self, text: &str) -> Option<&str> {
        self.secrets
            .iter()
            .find(|s| text.contains(s.as_str()))
            .map(String::as_str)
    }

    /// Everything of AgentWorks' data and of the place outside the home, except what launches
    /// write there themselves: this chat's runtime and the compiled plans.
    fn protected_snapshot(&self) -> Snapshot {
        let mut out = BTreeMap::new();
        let skip = [
            self.demo.runtime.clone(),
            self.demo.state_root.join("state/cli-sandbox"),
        ];
        for root in [&self.demo.state_root, &self.demo.outside] {
            snapshot(root, &skip, &mut out);
        }
        Snapshot(out)
    }

    /// The files of the home outside AgentWorks' data that hold a secret.
    fn home_files_with_secrets(&self) -> Vec<(PathBuf, String)> {
        let mut files = BTreeMap::new();
        snapshot(
            &self.demo.home,
            std::slice::from_ref(&self.demo.state_root),
            &mut files,
        );
        files
            .into_iter()
            .filter_map(|(path, entry)| match entry {
                Entry::File(bytes) => self
                    .secret_in(&String::from_utf8_lossy(&bytes))
                    .map(|s| (path, s.to_owned())),
                _ => None,
            })
            .collect()
    }
}

/// Every entry under some folders, with its content; compared, it shows only what differs.
#[derive(Clone, PartialEq, Eq)]
struct Snapshot(BTreeMap<PathBuf, Entry>);

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} entries", self.0.len())
    }
}

impl Snapshot {
    /// The paths that differ between two snapshots (added, removed or changed).
    fn changed_since<'a>(&'a self, before: &'a Snapshot) -> Vec<&'a Path> {
        let mut paths: Vec<&Path> = self
            .0
            .iter()
            .filter(|(p, e)| before.0.get(*p) != Some(e))
            .map(|(p, _)| p.as_path())
            .collect();
        paths.extend(
            before
                .0
                .keys()
                .filter(|p| !self.0.contains_key(*p))
                .map(PathBuf::as_path),
        );
        paths
    }
}

/// What `changed_since` gives when nothing changed.
const NOTHING: Vec<&Path> = Vec::new();

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Dir,
    Link(PathBuf),
}

fn snapshot(path: &Path, skip: &[PathBuf], out: &mut BTreeMap<PathBuf, Entry>) {
    if skip.iter().any(|s| s == path) {
        return;
    }
    let Ok(meta) = fs::symlink_metadata(path) else {
        return;
    };
    if meta.file_type().is_symlink() {
        out.insert(path.to_owned(), Entry::Link(fs::read_link(path).unwrap()));
    } else if meta.is_dir() {
        out.insert(path.to_owned(), Entry::Dir);
        for entry in fs::read_dir(path).unwrap() {
            snapshot(&entry.unwrap().path(), skip, out);
        }
    } else {
        out.insert(
            path.to_owned(),
            Entry::File(fs::read(path).unwrap_or_default()),
        );
    }
}

fn both() -> [Resolution; 2] {
    [Resolution::Fastest, Resolution::WalkOnly]
}

/// Replaces whatever is at `at` by a symlink to `target`, making its folder first.
fn plant(at: &Path, target: &Path) {
    fs::create_dir_all(at.parent().unwrap()).unwrap();
    match fs::symlink_metadata(at) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(at).unwrap(),
        Ok(_) => fs::remove_file(at).unwrap(),
        Err(_) => {}
    }
    symlink(target, at).unwrap();
}

// ---------- planted symlinks, for each adapter ----------

/// Where the planted link points.
#[derive(Debug, Clone, Copy)]
enum Target {
    ConfigJson,
    OtherRuntime,
    PersonalMcp,
    WorkspaceDocs,
    OutsideTheHome,
}

const TARGETS: [Target; 5] = [
    Target::ConfigJson,
    Target::OtherRuntime,
    Target::PersonalMcp,
    Target::WorkspaceDocs,
    Target::OutsideTheHome,
];

/// One planted link: at the settings file itself (`file`) or at a folder on its way.
#[derive(Debug, Clone)]
struct Case {
    cli: &'static str,
    /// Where the link is planted, relative to the home, or to the runtime with `in_runtime`.
    at: &'static str,
    in_runtime: bool,
    /// The link stands for the settings file itself (not for a folder on its way).
    file: bool,
    /// The launcher's environment: a variable naming a place below the home.
    var: Option<(&'static str, &'static str)>,
}

const fn case(cli: &'static str, at: &'static str, file: bool) -> Case {
    Case {
        cli,
        at,
        in_runtime: false,
        file,
        var: None,
    }
}

/// Every file each adapter reads or writes, as a file link, its folder and a folder above.
/// (The others read and write none: `every_registered_cli_that_touches_a_file_is_attacked`
/// checks it and `the_clis_without_files_read_and_write_nothing_whatever_is_planted` attacks
/// them.)
fn cases() -> Vec<Case> {
    let mut cases = vec![
        case("claude", ".claude.json", true),
        case("codex", ".codex/config.toml", true),
        case("codex", ".codex", false),
        case("gemini", ".gemini/trustedFolders.json", true),
        case("gemini", ".gemini", false),
        case("agy", ".gemini/antigravity-cli/settings.json", true),
        case("agy", ".gemini/antigravity-cli", false),
        case("agy", ".gemini", false),
    ];
    for (at, file) in [(".gemini/settings.json", true), (".gemini", false)] {
        cases.push(Case {
            in_runtime: true,
            ..case("gemini", at, file)
        });
    }
    for (cli, var, value) in [
        ("claude", "CLAUDE_CONFIG_DIR", "cfg/claude"),
        ("codex", "CODEX_HOME", "cfg/codex"),
        ("gemini", "GEMINI_CLI_HOME", "cfg/gemini"),
    ] {
        // The named folder itself, and a folder above it.
        for at in [value, "cfg"] {
            cases.push(Case {
                var: Some((var, value)),
                ..case(cli, at, false)
            });
        }
    }
    cases
}

impl Case {
    fn planted(&self, w: &World) -> PathBuf {
        if self.in_runtime {
            w.demo.runtime.join(self.at)
        } else {
            w.home(self.at)
        }
    }

    fn vars(&self, w: &World) -> Vec<(&'static str, PathBuf)> {
        self.var
            .iter()
            .map(|(name, value)| (*name, w.home(value)))
            .collect()
    }

    /// The link's target. A file there is made to exist (holding a secret, in the file's
    /// format), so that the control can show the write landing; a link to nothing is its own
    /// test (`a_dangling_link_is_refused_and_named_for_where_it_leads`).
    fn target(&self, w: &World, target: Target) -> PathBuf {
        let path = self.target_path(w, target);
        if self.file && !path.exists() {
            let secret = &w.secrets[0];
            let text = if self.at.ends_with(".toml") {
                format!("planted = \"{secret}\"\n")
            } else {
                format!("{{\"planted\": \"{secret}\"}}\n")
            };
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, text).unwrap();
        }
        path
    }

    fn target_path(&self, w: &World, target: Target) -> PathBuf {
        let d = &w.demo;
        let name = Path::new(self.at).file_name().unwrap();
        let toml = self.at.ends_with(".toml");
        match (target, self.file) {
            (Target::ConfigJson, true) if toml => d.state_root.join("config.toml"),
            (Target::ConfigJson, true) => d.state_root.join("config.json"),
            (Target::ConfigJson, false) => d.state_root.clone(),
            (Target::OtherRuntime, true) => d.other_runtime.join(name),
            (Target::OtherRuntime, false) => d.other_runtime.clone(),
            (Target::PersonalMcp, true) => d.state_root.join("personal-mcp").join(name),
            (Target::PersonalMcp, false) => d.state_root.join("personal-mcp"),
            (Target::WorkspaceDocs, true) if toml => d.workspace_docs.join("users/settings.toml"),
            (Target::WorkspaceDocs, true) => d.workspace_docs.join("users/settings.json"),
            (Target::WorkspaceDocs, false) => d.workspace_docs.clone(),
            (Target::OutsideTheHome, true) => d.outside.join(name),
            (Target::OutsideTheHome, false) => d.outside.clone(),
        }
    }
}

#[test]
fn a_planted_symlink_never_leads_the_launcher_into_protected_data_or_out_of_the_home() {
    let mut checked = 0;
    for c in cases() {
        for target in TARGETS {
            for resolution in both() {
                let w = world();
                let planted = c.planted(&w);
                plant(&planted, &c.target(&w, target));
                let label = format!("{c:?} -> {target:?} ({resolution:?})");
                let before = w.protected_snapshot();

                let refused = w
                    .launch(c.cli, w.guard(resolution), &c.vars(&w), &w.demo.runtime)
                    .expect_err(&format!("{label}: the launch went on"));
                assert!(
                    refused.contains(&planted.display().to_string()),
                    "{label}: the link is not named: {refused}"
                );
                if !c.file {
                    // The file is named too: a path below the planted folder.
                    assert!(
                        refused.contains(&format!("`{}/", planted.display())),
                        "{label}: the file is not named: {refused}"
                    );
                }
                assert!(
                    refused.contains("nothing was read or written"),
                    "{label}: {refused}"
                );
                assert_eq!(w.secret_in(&refused), None, "{label}: {refused}");
                assert_eq!(
                    w.protected_snapshot().changed_since(&before),
                    NOTHING,
                    "{label}: protected data or the place outside the home changed"
                );
                assert_eq!(w.home_files_with_secrets(), Vec::new(), "{label}");
                assert!(
                    fs::symlink_metadata(&planted).unwrap().is_symlink(),
                    "{label}: the link was replaced"
                );

                // The control: the same link, a guard for which the target is the person's.
                let control = w.launch(
                    c.cli,
                    w.control_guard(resolution),
                    &c.vars(&w),
                    &w.demo.runtime,
                );
                assert!(control.is_ok(), "{label}: the control failed: {control:?}");
                // Codex is trusted by `-c` on its argv (issue 27): its pre-trust only prunes
                // entries earlier versions wrote, so with none planted its control goes on and
                // writes nothing (the refusal above still holds: the path is checked first).
                if c.cli != "codex" {
                    assert_ne!(
                        w.protected_snapshot().changed_since(&before),
                        NOTHING,
                        "{label}: the control did not write through the link"
                    );
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, cases().len() * TARGETS.len() * 2);
}

#[test]
fn a_config_toml_pointed_at_a_protected_toml_gives_none_of_its_server_names() {
    for resolution in both() {
        // The control: without the rule, the protected file's server names reach argv.
        let w = world();
        let protected = w.demo.state_root.join("personal-mcp/config.toml");
        plant(&w.home(".codex/config.toml"), &protected);
        let control = w
            .launch("codex", w.control_guard(resolution), &[], &w.demo.runtime)
            .unwrap();
        let argv = control.args.join(" ");
        for name in SECRET_SERVERS {
            assert!(
                argv.contains(name),
                "the control did not read {name}: {argv}"
            );
        }

        // A link at the file, and CODEX_HOME naming the protected folder itself.
        for named in [false, true] {
            let w = world();
            let protected = w.demo.state_root.join("personal-mcp");
            let vars = if named {
                vec![("CODEX_HOME", protected)]
            } else {
                plant(
                    &w.home(".codex/config.toml"),
                    &protected.join("config.toml"),
                );
                Vec::new()
            };
            let before = w.protected_snapshot();
            let err = w
                .launch("codex", w.guard(resolution), &vars, &w.demo.runtime)
                .expect_err("the launch went on");
            assert_eq!(w.secret_in(&err), None, "named {named}: {err}");
            assert!(err.contains("protected data"), "named {named}: {err}");
            assert_eq!(
                w.protected_snapshot().changed_since(&before),
                NOTHING,
                "named {named}"
            );
        }
    }
}

// ---------- the dotfile managers' links keep working ----------

#[test]
fn dotfile_managers_links_keep_working_and_survive_the_edit() {
    let person_toml = "# mine\nmodel = \"o3\"\n";
    for resolution in both() {
        for relative in [true, false] {
            let w = world();
            let dot = w.home("dotfiles");
            // Relative links are what GNU stow makes; absolute ones what a hand-made setup or
            // another manager makes. A file link, folder links, a link inside a linked folder
            // (with `..`), and a linked folder where the file does not exist yet.
            let to = |path: &str| -> PathBuf {
                if relative {
                    PathBuf::from(path)
                } else {
                    w.home(path)
                }
            };
            fs::create_dir_all(dot.join("claude")).unwrap();
            fs::write(dot.join("claude/.claude.json"), "{\"numStartups\": 3}\n").unwrap();
            symlink(to("dotfiles/claude/.claude.json"), w.home(".claude.json")).unwrap();
            fs::create_dir_all(dot.join("codex")).unwrap();
            fs::write(dot.join("codex/config.toml"), person_toml).unwrap();
            symlink(to("dotfiles/codex"), w.home(".codex")).unwrap();
            fs::create_dir_all(dot.join("gemini")).unwrap();
            fs::create_dir_all(dot.join("agy")).unwrap();
            symlink(to("dotfiles/gemini"), w.home(".gemini")).unwrap();
            let agy_link = if relative {
                PathBuf::from("../agy")
            } else {
                dot.join("agy")
            };
            symlink(&agy_link, dot.join("gemini/antigravity-cli")).unwrap();
            let links: Vec<(PathBuf, PathBuf)> = [
                w.home(".claude.json"),
                w.home(".codex"),
                w.home(".gemini"),
                dot.join("gemini/antigravity-cli"),
            ]
            .into_iter()
            .map(|l| (l.clone(), fs::read_link(&l).unwrap()))
            .collect();

            let label = format!("relative {relative} ({resolution:?})");
            for cli in ["claude", "codex", "gemini", "agy"] {
                w.launch(cli, w.guard(resolution), &[], &w.demo.runtime)
                    .unwrap_or_else(|e| panic!("{label} {cli}: {e}"));
            }
            for (link, text) in &links {
                assert_eq!(&fs::read_link(link).unwrap(), text, "{label}: {link:?}");
            }
            let runtime = w.demo.runtime.display().to_string();
            let json = |p: PathBuf| -> serde_json::Value {
                serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap()
            };
            let claude = json(dot.join("claude/.claude.json"));
            assert_eq!(claude["numStartups"], 3, "{label}");
            assert_eq!(
                claude["projects"][&runtime]["hasTrustDialogAccepted"], true,
                "{label}"
            );
            // Codex's trust goes by `-c` on its argv: its file is left as the person wrote it.
            let codex = fs::read_to_string(dot.join("codex/config.toml")).unwrap();
            assert_eq!(codex, person_toml, "{label}");
            let gemini = json(dot.join("gemini/trustedFolders.json"));
            // Gemini's one entry for the runtimes folder serves every chat (issue 27).
            let runtimes = w.demo.runtime.parent().unwrap().display().to_string();
            assert_eq!(gemini[&runtimes], "TRUST_FOLDER", "{label}");
            let agy = json(dot.join("agy/settings.json"));
            assert_eq!(agy["trustedWorkspaces"][0], runtime.as_str(), "{label}");
        }
    }
}

// ---------- swaps racing the launches ----------

/// What a hundred launches made while something swapped `real` (a real file or folder of the
/// person's) with a symlink to `decoy`, as fast as it could.
struct Raced {
    written: Vec<PathBuf>,
    refusals: Vec<String>,
    outputs: String,
}

const RACED_LAUNCHES: usize = 100;
const RACING_THREADS: usize = 4;

fn race(w: &World, cli: &str, real: &Path, decoy: &Path, guard: PersonFilesGuard) -> Raced {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};

    let swap = PathBuf::from(format!("{}.swap", real.display()));
    symlink(decoy, &swap).unwrap();
    let exchange = || renameat_with(CWD, real, CWD, &swap, RenameFlags::EXCHANGE);
    let stop = AtomicBool::new(false);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        s.spawn(|| {
            let is_link = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink());
            // Errors are the launches' doing (a launch that resolved the file while it was
            // named `.swap` writes it under that name) and only cost the swapper a round.
            while !stop.load(Ordering::Relaxed) {
                let _ = exchange();
                // A launch that renamed its file over the link's name removed the link (a
                // file is replaced, never written through): plant it again.
                if !is_link(real) && !is_link(&swap) {
                    let _ = fs::remove_file(&swap);
                    let _ = symlink(decoy, &swap);
                }
            }
        });
        let workers: Vec<_> = (0..RACING_THREADS)
            .map(|t| {
                let (guard, results) = (guard.clone(), &results);
                s.spawn(move || {
                    for i in (t..RACED_LAUNCHES).step_by(RACING_THREADS) {
                        // A workdir of its own, so that every launch writes an entry.
                        let workdir = w.demo.runtime.join(format!("race-{i}"));
                        let result = w.launch(cli, guard.clone(), &[], &workdir);
                        results.lock().unwrap().push((workdir, result));
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    if fs::symlink_metadata(real).is_ok_and(|m| m.is_symlink()) {
        let _ = exchange();
    }
    let _ = fs::remove_file(&swap);

    let mut raced = Raced {
        written: Vec::new(),
        refusals: Vec::new(),
        outputs: String::new(),
    };
    for (workdir, result) in results.into_inner().unwrap() {
        match result {
            Ok(launch) => {
                raced.outputs.push_str(&format!("{launch:?}\n"));
                raced.written.push(workdir);
            }
            Err(e) => {
                raced.outputs.push_str(&e);
                raced.refusals.push(e);
            }
        }
    }
    raced
}

/// The swaps: the settings folder, the file itself, and a folder above the file.
fn swaps(w: &World) -> Vec<(&'static str, PathBuf, PathBuf, PathBuf)> {
    let d = &w.demo;
    // A protected decoy that looks like Agy's settings folder, holding the token.
    let decoy = d
        .state_root
        .join("gemini-decoy/antigravity-cli/settings.json");
    fs::create_dir_all(decoy.parent().unwrap()).unwrap();
    fs::write(
        &decoy,
        format!(
            "{{\"decoy\": \"{}\", \"trustedWorkspaces\": []}}\n",
            w.secrets[0]
        ),
    )
    .unwrap();
    fs::create_dir_all(w.home(".codex")).unwrap();
    fs::write(
        w.home(".codex/config.toml"),
        "# the person's\nmodel = \"o3\"\n",
    )
    .unwrap();
    fs::create_dir_all(w.home(".gemini/antigravity-cli")).unwrap();
    fs::write(
        w.home(".gemini/antigravity-cli/settings.json"),
        "{\"theme\": \"dark\"}\n",
    )
    .unwrap();
    vec![
        // (cli, what is swapped, the protected place it is swapped with, the file it reaches)
        (
            "agy",
            w.home(".gemini"),
            d.state_root.join("gemini-decoy"),
            w.home(".gemini/antigravity-cli/settings.json"),
        ),
    ]
}

#[test]
fn swapping_a_folder_a_file_or_a_folder_above_while_launches_run_writes_nothing_protected() {
    for resolution in both() {
        let w = world();
        for (cli, real, decoy, file) in swaps(&w) {
            let label = format!("{cli}: {} swapped ({resolution:?})", real.display());
            let before = w.protected_snapshot();
            let raced = race(&w, cli, &real, &decoy, w.guard(resolution));
            assert_eq!(
                w.protected_snapshot().changed_since(&before),
                NOTHING,
                "{label}: protected data changed"
            );
            assert_eq!(w.home_files_with_secrets(), Vec::new(), "{label}");
            assert_eq!(w.secret_in(&raced.outputs), None, "{label}");
            for refusal in &raced.refusals {
                assert!(
                    refusal.contains("nothing was read or written"),
                    "{label}: {refusal}"
                );
            }
            // Those that went on wrote on the real one. (When the file itself is swapped, the
            // swapper also moves the launches' own files around, and may drop one: entries are
            // not counted there, only where they landed.)
            if real != file {
                let text = fs::read_to_string(&file).unwrap();
                for workdir in &raced.written {
                    assert!(
                        text.contains(&*workdir.display().to_string()),
                        "{label}: {workdir:?}"
                    );
                }
            }
            let mut why: BTreeMap<&str, usize> = BTreeMap::new();
            for r in &raced.refusals {
                let key = [
                    "protected data",
                    "changed while",
                    "leads nowhere",
                    "not a folder",
                    "not a regular",
                ]
                .into_iter()
                .find(|k| r.contains(k))
                .unwrap_or(r.as_str());
                *why.entry(key).or_default() += 1;
            }
            eprintln!("{label}: {why:?}");
            eprintln!(
                "{label}: {} written on the real one, {} refused",
                raced.written.len(),
                raced.refusals.len()
            );
        }
    }
}

#[test]
fn without_the_rule_the_same_swaps_write_into_the_decoy() {
    let w = world();
    for (cli, real, decoy, _) in swaps(&w) {
        let before = w.protected_snapshot();
        race(&w, cli, &real, &decoy, w.control_guard(Resolution::Fastest));
        assert_ne!(
            w.protected_snapshot().changed_since(&before),
            NOTHING,
            "{cli}: {} swapped: no launch wrote through the swapped link",
            real.display()
        );
    }
}

// ---------- other names for the same file, and files that are no files ----------

#[test]
fn a_settings_file_with_another_name_in_protected_data_is_neither_read_nor_written() {
    for resolution in both() {
        let w = world();
        let config = w.demo.state_root.join("config.json");
        let claude = w.home(".claude.json");
        // Made outside the sandbox (a chat cannot: the mask, or Landlock's refer rule, stops it);
        // the control is that the home's name really reaches the token.
        fs::hard_link(&config, &claude).unwrap();
        assert!(fs::read_to_string(&claude).unwrap().contains(&w.secrets[0]));
        let before = w.protected_snapshot();
        let err = w
            .launch("claude", w.guard(resolution), &[], &w.demo.runtime)
            .unwrap_err();
        assert!(err.contains("2 names (hard links)"), "{err}");
        assert!(err.contains(&claude.display().to_string()), "{err}");
        assert_eq!(w.secret_in(&err), None, "{err}");
        assert_eq!(w.protected_snapshot().changed_since(&before), NOTHING);

        // Agy reads its settings before it writes: a hard link is not read either.
        let settings = w.home(".gemini/antigravity-cli/settings.json");
        fs::create_dir_all(settings.parent().unwrap()).unwrap();
        fs::hard_link(&config, &settings).unwrap();
        let err = w
            .launch("agy", w.guard(resolution), &[], &w.demo.runtime)
            .unwrap_err();
        assert!(err.contains("hard links"), "{err}");
        assert_eq!(w.secret_in(&err), None, "{err}");
        assert_eq!(w.protected_snapshot().changed_since(&before), NOTHING);
    }
}

#[test]
fn a_fifo_a_folder_a_link_to_nothing_and_a_loop_are_refused_at_once() {
    for resolution in both() {
        let w = world();
        let claude = w.home(".claude.json");
        let guard = w.guard(resolution);
        let attempt = |w: &World| {
            w.launch("claude", guard.clone(), &[], &w.demo.runtime)
                .unwrap_err()
        };

        // A fifo nobody writes to would hang a reader: refused without waiting.
        let status = Command::new("mkfifo").arg(&claude).status().unwrap();
        assert!(status.success());
        let started = Instant::now();
        let err = attempt(&w);
        assert!(err.contains("is a fifo"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        fs::remove_file(&claude).unwrap();

        fs::create_dir(&claude).unwrap();
        let err = attempt(&w);
        assert!(err.contains("is a folder"), "{err}");
        fs::remove_dir(&claude).unwrap();

        // A link to nothing in the home: nothing is created through it.
        symlink("dotfiles/missing.json", &claude).unwrap();
        let err = attempt(&w);
        assert!(err.contains("leads nowhere"), "{err}");
        assert!(err.contains("dotfiles/missing.json"), "{err}");
        assert!(!w.home("dotfiles").exists());
        fs::remove_file(&claude).unwrap();

        // A link to nothing inside protected data is named for where it leads; the control is
        // that writing through it (as the old code did) creates the file there.
        let inside = w.demo.other_runtime.join("planted.json");
        symlink(&inside, &claude).unwrap();
        let before = w.protected_snapshot();
        let err = attempt(&w);
        assert!(err.contains("another chat's runtime"), "{err}");
        assert_eq!(w.protected_snapshot().changed_since(&before), NOTHING);
        fs::write(&claude, "{}").unwrap();
        assert!(
            inside.exists(),
            "the control: a plain write follows the link"
        );
        fs::remove_file(&claude).unwrap();

        symlink(".claude.json", &claude).unwrap();
        let err = attempt(&w);
        assert!(err.contains("too many symlinks"), "{err}");
        fs::remove_file(&claude).unwrap();
    }
}

/// Gemini's MCP isolation writes the bridge (its command and environment, which may hold a
/// token) into the chat's own `<runtime>/.gemini/settings.json`, a file the chat can replace
/// between launches. A link there to the person's own Gemini settings would hand the bridge to
/// the person's unconfined Gemini for good: the entry addressed in the runtime must stay in it.
/// The control: the same entry addressed at the person's file lands there.
#[test]
fn the_bridge_entry_in_the_runtime_never_follows_a_link_to_the_persons_own_settings() {
    for resolution in both() {
        for (at, target) in [
            (".gemini/settings.json", ".gemini/settings.json"),
            (".gemini", ".gemini"),
        ] {
            let w = world();
            let theirs = w.home(".gemini/settings.json");
            fs::create_dir_all(theirs.parent().unwrap()).unwrap();
            fs::write(&theirs, "{\"theme\": \"mine\"}\n").unwrap();
            let planted = w.demo.runtime.join(at);
            plant(&planted, &w.home(target));
            let label = format!("{at} ({resolution:?})");

            let refused = w
                .launch("gemini", w.guard(resolution), &[], &w.demo.runtime)
                .expect_err(&format!("{label}: the launch went on"));
            assert!(
                refused.contains(&planted.display().to_string()),
                "{label}: the link is not named: {refused}"
            );
            assert_eq!(
                fs::read_to_string(&theirs).unwrap(),
                "{\"theme\": \"mine\"}\n",
                "{label}: the person's settings changed"
            );
            assert!(
                fs::symlink_metadata(&planted).unwrap().is_symlink(),
                "{label}"
            );

            // The control: the bridge's own entry, addressed at the person's file, is written.
            let edit = sandbox_core::FileEdit {
                file: theirs.clone(),
                format: sandbox_core::FileFormat::Json,
                keys: vec!["mcpServers".into(), "agentworks".into()],
                value: serde_json::json!({"command": "/opt/bridge"}),
                create_mode: 0o600,
                action: Default::default(),
            };
            w.guard(resolution).apply(&edit).unwrap();
            assert!(
                fs::read_to_string(&theirs).unwrap().contains("/opt/bridge"),
                "{label}: the control did not write the person's file"
            );
        }
    }
}

/// The CLIs [`cases`] plants links for.
fn attacked_clis() -> Vec<&'static str> {
    let mut clis: Vec<&str> = cases().iter().map(|c| c.cli).collect();
    clis.dedup();
    clis
}

/// Every file an adapter's launch reads through [`PersonFiles`].
struct Recording<'a> {
    person: &'a RealPersonFiles,
    read: std::cell::RefCell<Vec<PathBuf>>,
}

impl PersonFiles for Recording<'_> {
    fn read(&self, path: &Path) -> std::io::Result<Option<String>> {
        self.read.borrow_mut().push(path.to_owned());
        self.person.read(path)
    }
    fn var(&self, name: &str) -> Option<String> {
        self.person.var(name)
    }
}

/// The registry is the only list of CLIs: a CLI added there whose launch reads a file or lists
/// a settings entry (in the person's home or the chat's runtime) has its links planted by
/// [`cases`], or this fails, naming it; every other one is attacked by
/// `the_clis_without_files_read_and_write_nothing_whatever_is_planted`. (A launch's own files,
/// Pi's bridge extension, are attacked in `crates/launch/tests/launch_files.rs`.)
#[test]
fn every_registered_cli_that_touches_a_file_is_attacked() {
    let w = world();
    let attacked = attacked_clis();
    let mut quiet = Vec::new();
    for adapter in launch::registry::ADAPTERS {
        let real = RealPersonFiles::for_policy(&w.policy);
        let person = Recording {
            person: &real,
            read: Default::default(),
        };
        let mut request = w.request(&w.demo.runtime);
        request.mode = adapter.modes()[0];
        let mut touched = Vec::new();
        for shape in [Shape::Structured, Shape::Tmux] {
            request.shape = shape;
            let launch = adapter.launch(&request, &person).unwrap();
            touched.extend(launch.pre_trust.into_iter().map(|e| e.file));
        }
        touched.extend(person.read.into_inner());
        touched.sort();
        touched.dedup();
        if touched.is_empty() {
            quiet.push(adapter.name());
        } else {
            assert!(
                attacked.contains(&adapter.name()),
                "{} touches {touched:?}: add its files, their folders and a folder above to \
                 `cases()` in tests/person_files_attacks.rs",
                adapter.name()
            );
        }
    }
    assert_eq!(quiet, quiet_clis(), "the CLIs that touch no file");
}

/// The registered CLIs that [`cases`] does not attack: they must touch no file.
fn quiet_clis() -> Vec<&'static str> {
    let attacked = attacked_clis();
    launch::registry::names()
        .into_iter()
        .filter(|name| !attacked.contains(name))
        .collect()
}

#[test]
fn the_clis_without_files_read_and_write_nothing_whatever_is_planted() {
    let w = world();
    for c in cases() {
        let planted = c.planted(&w);
        if fs::symlink_metadata(&planted).is_err() {
            plant(&planted, &c.target(&w, Target::ConfigJson));
        }
    }
    let before = w.protected_snapshot();
    let quiet = quiet_clis();
    assert!(
        !quiet.is_empty(),
        "no CLI without files: the test reads nothing"
    );
    for cli in quiet {
        for resolution in both() {
            let launch = w
                .launch(cli, w.guard(resolution), &[], &w.demo.runtime)
                .unwrap();
            assert!(
                launch.pre_trust.is_empty(),
                "{cli} writes {:?}",
                launch.pre_trust
            );
            assert_eq!(w.secret_in(&format!("{launch:?}")), None, "{cli}");
        }
    }
    assert_eq!(w.protected_snapshot().changed_since(&before), NOTHING);
}

// ---------- through the binary, as a provider launches ----------

fn cli_sandbox(w: &World, config: &Path, args: &[&str], vars: &[(&str, &Path)]) -> (bool, String) {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("cli-sandbox"));
    cmd.arg("--config")
        .arg(config)
        .arg("--state-root")
        .arg(&w.demo.state_root)
        .args(args)
        .env("HOME", &w.demo.home)
        .stdin(std::process::Stdio::null());
    for var in contract::CLEARED_ENV {
        cmd.env_remove(var);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn cli_sandbox_run_and_plan_refuse_a_planted_link_and_leak_nothing() {
    let w = world();
    // Stand-in programs, so that nothing but pre-trust can stop `run`.
    let config = w.demo.root.join("stand-ins.toml");
    let mut text = String::new();
    for cli in ["claude", "codex", "gemini", "agy"] {
        text.push_str(&format!("[cli.{cli}]\nprogram = \"/bin/true\"\n"));
    }
    fs::write(&config, text).unwrap();
    let chat = w.demo.chat.as_str();
    let run = |cli: &str| {
        ["run", "--cli", cli, "--chat", chat, "--shape", "structured"].map(str::to_owned)
    };

    for (cli, at, target) in [
        (
            "claude",
            ".claude.json",
            w.demo.state_root.join("config.json"),
        ),
        ("codex", ".codex", w.demo.state_root.clone()),
        ("gemini", ".gemini", w.demo.other_runtime.clone()),
        ("agy", ".gemini", w.demo.workspace_docs.clone()),
    ] {
        let planted = w.home(at);
        plant(&planted, &target);
        let before = w.protected_snapshot();
        let args = run(cli);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, out) = cli_sandbox(&w, &config, &args, &[]);
        assert!(!ok, "{cli}: the launch went on: {out}");
        assert!(out.contains(&planted.display().to_string()), "{cli}: {out}");
        assert!(out.contains("nothing was read or written"), "{cli}: {out}");
        assert_eq!(w.secret_in(&out), None, "{cli}: {out}");
        assert_eq!(
            w.protected_snapshot().changed_since(&before),
            NOTHING,
            "{cli}"
        );
        fs::remove_file(&planted).unwrap();
    }

    // `plan` prints the argv a consumer launches with: CODEX_HOME naming a protected folder
    // gives none of its server names, neither there nor in the error. The control: the same
    // file in a folder of the person's gives them all.
    let plan = ["plan", "--cli", "codex", "--chat", chat, "--json"];
    let protected = w.demo.state_root.join("personal-mcp");
    let (ok, out) = cli_sandbox(&w, &config, &plan, &[("CODEX_HOME", &protected)]);
    assert!(!ok, "{out}");
    assert!(out.contains("protected data"), "{out}");
    assert_eq!(w.secret_in(&out), None, "{out}");
    let own = w.home("cfg/codex");
    fs::create_dir_all(&own).unwrap();
    fs::copy(protected.join("config.toml"), own.join("config.toml")).unwrap();
    let (ok, out) = cli_sandbox(&w, &config, &plan, &[("CODEX_HOME", &own)]);
    assert!(ok, "{out}");
    for name in SECRET_SERVERS {
        assert!(out.contains(name), "the control lacks {name}: {out}");
    }
}

// ---------- owned by the person ----------

/// Not a test on its own: the body of the child that
/// `as_an_ordinary_user_a_file_or_folder_of_another_owner_is_refused` starts as `nobody`.
/// Without the variable it does nothing.
#[test]
fn child_as_another_user() {
    use sandbox_core::{EditAction, FileEdit, FileFormat};
    let Ok(home) = std::env::var("PERSON_FILES_USER_HOME") else {
        return;
    };
    let home = PathBuf::from(home);
    let ctx = Context::load(&Settings {
        home: Some(home.clone()),
        state_root: Some(home.join(".local/share/AgentWorks")),
        ..Default::default()
    })
    .unwrap();
    let uid = rustix::process::geteuid().as_raw();
    for resolution in both() {
        let guard = PersonFilesGuard::for_policy(&ctx.policy("chat-1", &[]).unwrap())
            .resolving_by(resolution);
        let edit = |file: PathBuf| FileEdit {
            file,
            format: FileFormat::Json,
            keys: ["projects", "/rt", "hasTrustDialogAccepted"]
                .map(str::to_owned)
                .to_vec(),
            value: true.into(),
            create_mode: 0o600,
            action: EditAction::Set,
        };
        let theirs = home.join("root-owned.json");
        let err = guard.apply(&edit(theirs.clone())).unwrap_err().to_string();
        assert!(
            err.contains(&format!("owned by uid 0, not by uid {uid}")),
            "{err}"
        );
        assert_eq!(fs::read_to_string(&theirs).unwrap(), "{}\n");
        let err = guard.read(&theirs).unwrap_err().to_string();
        assert!(err.contains("owned by uid 0"), "{err}");

        let err = guard
            .apply(&edit(home.join("root-folder/x.json")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is in the folder"), "{err}");
        assert!(!home.join("root-folder/x.json").exists());

        guard.apply(&edit(home.join("own.json"))).unwrap();
        // A sticky folder of root's (`/tmp` as a home): its own file there is written.
        guard.apply(&edit(home.join("sticky/own.json"))).unwrap();
    }
    // The control: this user could replace root's file (the folder is its own), which is what
    // a rename of a temporary file over it would have done.
    fs::write(home.join("replacement"), "{}").unwrap();
    fs::rename(home.join("replacement"), home.join("root-owned.json")).unwrap();
    assert_eq!(
        fs::metadata(home.join("root-owned.json")).unwrap().uid(),
        uid
    );
}

#[test]
fn as_an_ordinary_user_a_file_or_folder_of_another_owner_is_refused() {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if !rustix::process::geteuid().is_root() {
        let why = "as_an_ordinary_user_a_file_or_folder_of_another_owner_is_refused: it starts a \
                   child as `nobody`, which needs root";
        assert!(
            std::env::var("CLI_SANDBOX_REQUIRE_ROOT").as_deref() != Ok("1"),
            "{why} (CLI_SANDBOX_REQUIRE_ROOT=1 asks for it to run)"
        );
        // Written to the real stderr: a test's own `eprintln!` is captured.
        let _ = writeln!(std::io::stderr(), "\n!!! SKIPPED {why}\n");
        return;
    }
    const NOBODY: u32 = 65534;
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let home = dir.path().join("home");
    fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
    fs::write(home.join("root-owned.json"), "{}\n").unwrap();
    fs::set_permissions(
        home.join("root-owned.json"),
        fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    fs::create_dir(home.join("root-folder")).unwrap();
    fs::set_permissions(home.join("root-folder"), fs::Permissions::from_mode(0o777)).unwrap();
    fs::create_dir(home.join("sticky")).unwrap();
    fs::set_permissions(home.join("sticky"), fs::Permissions::from_mode(0o1777)).unwrap();

    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_as_another_user",
            "--test-threads=1",
            "--nocapture",
        ])
        .env("PERSON_FILES_USER_HOME", &home)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the child failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
    // Its own file was written, as its own.
    assert_eq!(fs::metadata(home.join("own.json")).unwrap().uid(), NOBODY);
}
