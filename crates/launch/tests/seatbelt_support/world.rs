//! Layouts to compile and probe: a person's home with AgentWorks' folders in it, described by a
//! [`Spec`], built either as a set of paths (for the evaluator) or on disk (for the real
//! `sandbox-exec`, and to check that the probes themselves work).

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use sandbox_core::{
    Access, ChatId, Config, GrantRequest, Layout, LayoutInputs, Os, Policy, PolicyRequest, Resolver,
};

/// What a world holds, every path relative to its base folder.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The home folder's name under the base.
    pub home: String,
    /// `--state-root`, relative to the base; `None` for the app folder in the home.
    pub state_root: Option<String>,
    /// `--workspace-docs`, relative to the base; `None` for `<state root>/workspace-docs`.
    pub workspace_docs: Option<String>,
    /// Folder names under `workspace-docs/workflows`.
    pub workflows: Vec<String>,
    /// Grants, relative to `workspace-docs/workflows` (`wf-1`, `wf-1/sub`), to the home
    /// (`~/proj`) or to the chat's runtime (`@runtime/sub`).
    pub grants: Vec<(String, Access)>,
    pub chat: String,
    pub other_chat: String,
    /// Refused patterns added by the configuration.
    pub refused: Vec<String>,
    /// Protected roots added by the configuration, relative to the base.
    pub protected: Vec<String>,
    /// Blocked programs added by the configuration, relative to the base (scripts of the world).
    pub blocked: Vec<String>,
    /// Unix sockets the configuration allows, relative to the base.
    pub sockets: Vec<String>,
    /// `harden = true`: the home's persistence paths are closed to writing.
    pub harden: bool,
    /// `secrets = "closed"`: the home's credential places are closed to every operation.
    pub secrets: bool,
    /// The launcher runs as root: the system is read-only to the chat outside the writable places.
    pub privileged: bool,
}

impl Spec {
    /// The demo layout with `decoration` (hostile text: quotes, parentheses, newlines, ...) in
    /// every name the chat's rules name: the home, a protected root, a blocked program, an
    /// allowed socket, the workflows and the grants.
    #[allow(dead_code)] // each test binary that includes this module uses a part of it
    pub fn decorated(decoration: &str) -> Spec {
        let mut spec = Spec::demo();
        spec.home = format!("ann{decoration}");
        spec.protected = vec![format!("ann{decoration}/tenant{decoration}")];
        spec.blocked = vec![format!("ann{decoration}/bin/opener{decoration}.sh")];
        spec.sockets = vec![format!("ann{decoration}/.agent/agent{decoration}.sock")];
        spec.workflows = spec
            .workflows
            .iter()
            .map(|w| format!("{decoration}{w}"))
            .collect();
        spec.grants = spec
            .grants
            .iter()
            .map(|(g, a)| (format!("{decoration}{g}"), *a))
            .collect();
        spec
    }

    /// The fixed layout of the snapshot, the hostile-path test and the macOS suite.
    pub fn demo() -> Spec {
        Spec {
            home: "ann".into(),
            state_root: None,
            workspace_docs: None,
            workflows: vec!["wf-1".into(), "wf-2".into(), "wf-3".into()],
            grants: vec![
                ("wf-1".into(), Access::ReadWrite),
                ("wf-3".into(), Access::ReadOnly),
                ("wf-3/sub".into(), Access::ReadWrite),
            ],
            chat: "chat-1".into(),
            other_chat: "chat-2".into(),
            refused: vec!["secrets/".into(), "*.key".into()],
            protected: vec!["ann/tenant".into()],
            blocked: vec!["ann/bin/opener.sh".into()],
            sockets: vec!["ann/.agent/agent.sock".into()],
            harden: false,
            secrets: false,
            privileged: false,
        }
    }
}

/// A built world: its files and the policy of its chat.
#[derive(Debug)]
pub struct World {
    pub base: PathBuf,
    pub home: PathBuf,
    pub layout: Layout,
    pub dirs: BTreeSet<PathBuf>,
    /// Each file with the content it was created with.
    pub files: BTreeMap<PathBuf, String>,
    /// Files that are shell scripts: run with a marker path, they write `ran` to it.
    pub scripts: BTreeSet<PathBuf>,
    /// An open folder for the probes' output.
    pub scratch: PathBuf,
    /// The chat's policy (a placeholder while the world is planned, before it is built).
    pub policy: Policy,
}

/// A shell script that proves it ran by writing `ran` to the path it is given.
pub const SCRIPT: &str = "#!/bin/sh\nprintf ran > \"$1\"\n";

impl World {
    /// The world as a set of paths under `base` (which need not exist).
    pub fn virtual_at(base: &Path, spec: &Spec) -> Result<World, String> {
        World::virtual_tweaked(base, spec, &[], |_, _| {})
    }

    /// [`World::virtual_at`] with `extra_dirs` among the world's folders and `tweak` applied to
    /// the configuration and the grant requests before the policy is built: what a [`Spec`]
    /// cannot say (a name that is not UTF-8). The policy is still built by `Policy::build`, so a
    /// backend is only ever shown a policy that passed validation.
    #[allow(dead_code)] // each test binary that includes this module uses a part of it
    pub fn virtual_tweaked(
        base: &Path,
        spec: &Spec,
        extra_dirs: &[PathBuf],
        tweak: impl FnOnce(&mut Config, &mut Vec<GrantRequest>),
    ) -> Result<World, String> {
        let mut world = World::plan(base, spec);
        for dir in extra_dirs {
            world.dir(dir);
        }
        let fs = SetFs {
            dirs: &world.dirs,
            files: &world.files,
        };
        (world.layout, world.policy) = world.build_policy(spec, &fs, tweak)?;
        Ok(world)
    }

    /// The world created on disk under `base` (an existing, canonical folder).
    pub fn on_disk(base: &Path, spec: &Spec) -> Result<World, String> {
        let mut world = World::plan(base, spec);
        let err = |e: io::Error| e.to_string();
        for dir in &world.dirs {
            if dir.starts_with(base) {
                std::fs::create_dir_all(dir).map_err(err)?;
            }
        }
        for (file, content) in &world.files {
            std::fs::write(file, content).map_err(err)?;
            if world.scripts.contains(file) {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o755))
                    .map_err(err)?;
            }
        }
        (world.layout, world.policy) = world.build_policy(spec, &RealFs, |_, _| {})?;
        Ok(world)
    }

    fn plan(base: &Path, spec: &Spec) -> World {
        let home = base.join(&spec.home);
        let app = home.join("Library/Application Support/AgentWorks");
        let state = spec
            .state_root
            .as_ref()
            .map_or_else(|| app.clone(), |s| base.join(s));
        let docs = spec
            .workspace_docs
            .as_ref()
            .map_or_else(|| state.join("workspace-docs"), |d| base.join(d));
        let runtimes = state.join("state/cli-runtimes/v1");
        let mut world = World {
            base: base.to_owned(),
            home: home.clone(),
            layout: Layout {
                home: home.clone(),
                app_folder: app.clone(),
                state_root: state.clone(),
                workspace_docs: docs.clone(),
            },
            dirs: BTreeSet::new(),
            files: BTreeMap::new(),
            scripts: BTreeSet::new(),
            scratch: base.join("scratch"),
            policy: placeholder_policy(),
        };
        world.dir(&world.scratch.clone());
        world.file(&home.join("notes.txt"));
        world.file(&home.join("work/notes.txt"));
        // Persistence paths (closed to writing with `harden`) and their neighbours (never).
        for file in [
            ".bashrc",
            ".zshrc",
            ".config/fish/config.fish",
            ".config/other-app/settings.json",
            "Library/LaunchAgents/com.example.agent.plist",
            ".ssh/known_hosts",
            ".ssh/authorized_keys",
            // Issue 25's places, the class at the home's top, and what stays open beside them.
            ".npmrc",
            ".local/lib/python3.11/site-packages/evil.pth",
            ".local/bin/tool",
            ".cargo/config.toml",
            ".cargo/registry/index",
            ".aws/config",
            ".aws/cli/cache/token.json",
            ".kube/config",
            ".docker/config.json",
            ".vimrc",
            ".gdbinit",
            ".inputrc",
            ".curlrc",
            ".CURLRC",
            ".claude.json",
            ".claude.json.tmp.42.abcdef",
            ".CLAUDE.JSON.tmp.42.abcdef",
            "Library/Python/3.12/lib/python/site-packages/evil.pth",
            "Library/Preferences/com.apple.Terminal.plist",
            // The CLIs' settings (`Rule::Settings`: read, never written, made or moved) and
            // their state beside them (written). `~/.gemini` and the other CLIs' folders are
            // missing: nothing may be made there.
            ".claude/settings.json",
            ".claude/commands/review.md",
            ".claude/history.jsonl",
            ".claude/projects/p/session.jsonl",
            ".codex/config.toml",
            ".codex/sessions/s.jsonl",
            "CLAUDE.md",
            // Credential places (closed with `secrets = "closed"`) and the CLIs' own logins
            // beside them (never).
            ".ssh/id_ed25519",
            ".config/gh/hosts.yml",
            ".netrc",
            ".gnupg/private-keys-v1.d/key.key",
            ".config/gcloud/credentials.db",
            ".codex/auth.json",
            ".claude/.credentials.json",
            ".gemini/oauth_creds.json",
            // One in each folder that holds a credential place beside other files, so that a
            // clone of the folder is known to copy one (the profile refuses the clone of every
            // folder above a place, present or not).
            ".cargo/credentials.toml",
            ".local/share/keyrings/login.keyring",
            ".gem/credentials",
            ".terraform.d/credentials.tfrc.json",
            ".config/git/credentials",
        ] {
            world.file(&home.join(file));
        }
        world.script(&home.join("bin/tool.sh"));
        for root in [&app, &state] {
            world.file(&root.join("config.json"));
            world.file(&root.join("state/auth/token"));
            world.file(&root.join("personal-mcp/server.json"));
            world.file(&root.join("events/chat.sqlite"));
        }
        for chat in [&spec.chat, &spec.other_chat] {
            world.file(&runtimes.join(chat).join("work.txt"));
            world.script(&runtimes.join(chat).join("tool.sh"));
        }
        for inside in [home.join("proj"), runtimes.join(&spec.chat).join("sub")] {
            for file in ["doc.md", "cache.sqlite", "planning/plan.json"] {
                world.file(&inside.join(file));
            }
            world.script(&inside.join("tool.sh"));
        }
        world.file(&docs.join("users/u.json"));
        world.file(&docs.join("config/c.json"));
        for wf in &spec.workflows {
            let wf = docs.join("workflows").join(wf);
            for file in [
                "doc.md",
                "raw.sqlite",
                "Old.DB",
                "planning/plan.json",
                "sub/notes.txt",
            ] {
                world.file(&wf.join(file));
            }
            for script in [
                "tool.sh",
                "planning/tool.sh",
                "sub/tool.sh",
                "sub/planning/tool.sh",
            ] {
                world.script(&wf.join(script));
            }
            world.file(&wf.join("sub/x.db"));
            world.file(&wf.join("secrets/k.txt"));
        }
        for extra in &spec.protected {
            world.file(&base.join(extra).join("secret.txt"));
        }
        for blocked in &spec.blocked {
            world.script(&base.join(blocked));
        }
        for socket in &spec.sockets {
            world.dir(base.join(socket).parent().unwrap_or(base));
        }
        world
    }

    fn dir(&mut self, dir: &Path) {
        for ancestor in dir.ancestors() {
            self.dirs.insert(ancestor.to_owned());
        }
    }

    fn file(&mut self, file: &Path) {
        if let Some(parent) = file.parent() {
            self.dir(parent);
        }
        let content = format!("content of {}\n", file.display());
        self.files.insert(file.to_owned(), content);
    }

    fn script(&mut self, file: &Path) {
        self.file(file);
        self.files.insert(file.to_owned(), SCRIPT.to_owned());
        self.scripts.insert(file.to_owned());
    }

    fn build_policy(
        &self,
        spec: &Spec,
        fs: &dyn Resolver,
        tweak: impl FnOnce(&mut Config, &mut Vec<GrantRequest>),
    ) -> Result<(Layout, Policy), String> {
        let inputs = LayoutInputs {
            os: Os::MacOs,
            home: self.home.clone(),
            xdg_data_home: None,
            state_root: spec.state_root.as_ref().map(|s| self.base.join(s)),
            workspace_docs: spec.workspace_docs.as_ref().map(|d| self.base.join(d)),
        };
        let layout = Layout::resolve(&inputs, fs).map_err(|e| e.to_string())?;
        let mut config = Config::default();
        config.policy.refused = spec.refused.clone();
        config.policy.protected = spec.protected.iter().map(|p| self.base.join(p)).collect();
        config.policy.blocked_programs = spec.blocked.iter().map(|p| self.base.join(p)).collect();
        config.policy.allow_unix_sockets = spec.sockets.iter().map(|p| self.base.join(p)).collect();
        config.policy.harden = spec.harden;
        if spec.secrets {
            config.policy.secrets = sandbox_core::Secrets::Closed;
        }
        let chat = ChatId::new(&spec.chat).map_err(|e| e.to_string())?;
        let workflows = layout.workspace_docs.join("workflows");
        let runtime = layout.runtime(&chat);
        let mut grants: Vec<GrantRequest> = spec
            .grants
            .iter()
            .map(|(path, access)| GrantRequest {
                path: if let Some(rest) = path.strip_prefix("~/") {
                    self.home.join(rest)
                } else if path == "@runtime" {
                    runtime.clone()
                } else if let Some(rest) = path.strip_prefix("@runtime/") {
                    runtime.join(rest)
                } else {
                    workflows.join(path)
                },
                access: *access,
            })
            .collect();
        tweak(&mut config, &mut grants);
        let settings = settings_requests();
        let policy = Policy::build(
            &PolicyRequest {
                os: Os::MacOs,
                layout: &layout,
                chat: &chat,
                grants: &grants,
                config: &config,
                privileged: spec.privileged,
                settings: &settings,
            },
            fs,
        )
        .map_err(|e| e.to_string())?;
        Ok((layout, policy))
    }

    pub fn is_dir(&self, path: &Path) -> bool {
        self.dirs.contains(path)
    }
}

/// Every registered adapter's acted-on places, as a launch gathers them
/// (`launch::context::settings_requests`), with no folder variable set (`CODEX_HOME` and the
/// like take their defaults under the home), whatever this process's environment holds.
pub fn settings_requests() -> Vec<sandbox_core::SettingsRequest> {
    launch::registry::ADAPTERS
        .iter()
        .flat_map(|adapter| {
            adapter
                .acted_on()
                .iter()
                .map(|entry| sandbox_core::SettingsRequest {
                    cli: adapter.name(),
                    entry: *entry,
                    folder: None,
                })
        })
        .collect()
}

/// A stand-in until the world is built: the policy of an empty layout with no grants, built by
/// `Policy::build` like every other (on a resolver that takes each path as it is).
fn placeholder_policy() -> Policy {
    struct AsIs;
    impl Resolver for AsIs {
        fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
            Ok(path.to_owned())
        }
        fn is_dir(&self, _: &Path) -> bool {
            true
        }
    }
    let root = PathBuf::from("/placeholder");
    let layout = Layout {
        home: root.clone(),
        app_folder: root.join("app"),
        state_root: root.join("app"),
        workspace_docs: root.join("app/workspace-docs"),
    };
    Policy::build(
        &PolicyRequest {
            os: Os::MacOs,
            layout: &layout,
            chat: &ChatId::new("placeholder").expect("a valid id"),
            grants: &[],
            config: &Config::default(),
            privileged: false,
            settings: &[],
        },
        &AsIs,
    )
    .expect("the placeholder policy builds")
}

/// A file system made of the world's paths, every one canonical (no symlinks).
struct SetFs<'a> {
    dirs: &'a BTreeSet<PathBuf>,
    files: &'a BTreeMap<PathBuf, String>,
}

impl Resolver for SetFs<'_> {
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        if self.dirs.contains(path) || self.files.contains_key(path) {
            Ok(path.to_owned())
        } else {
            Err(io::Error::new(io::ErrorKind::NotFound, "not in the world"))
        }
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.dirs.contains(path)
    }
}

/// The real file system.
struct RealFs;

impl Resolver for RealFs {
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
}
