//! The demo layout the contract (and the confinement tests) run against: a home with a
//! personal file, an app folder with two chats' runtimes, `config.json` holding a token,
//! `state/auth/`, `personal-mcp/`, a chat event database, workspace-docs with this chat's
//! workflow (with `planning/plan.json` and a raw database inside) and another workflow, and a
//! stand-in for a blocked program.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::Settings;

/// Paths of a demo layout built under one root folder.
#[derive(Debug, Clone)]
pub struct Demo {
    /// The folder everything lies in, canonical.
    pub root: PathBuf,
    /// The person's home, with a personal file.
    pub home: PathBuf,
    /// AgentWorks' app folder (given as the state root), with `config.json`'s token.
    pub state_root: PathBuf,
    /// workspace-docs, with both workflows.
    pub workspace_docs: PathBuf,
    /// The chat launched (`chat-1`).
    pub chat: String,
    /// Another chat, whose runtime must stay closed.
    pub other_chat: String,
    /// This chat's runtime.
    pub runtime: PathBuf,
    /// The other chat's runtime.
    pub other_runtime: PathBuf,
    /// This chat's workflow, granted read-write.
    pub granted: PathBuf,
    /// A workflow of someone else, not granted.
    pub other_workflow: PathBuf,
    /// A stand-in for a blocked program (configured in `config`): it writes "ran" into the
    /// file named by its first argument.
    pub blocked_stand_in: PathBuf,
    /// The configuration file that blocks the stand-in.
    pub config: PathBuf,
    /// Where processes started outside the sandbox leave their evidence.
    pub outside: PathBuf,
    /// Every file with secret content, and the content.
    pub secrets: BTreeMap<PathBuf, String>,
}

impl Demo {
    /// Builds the layout under `root` (which must exist and be empty or missing). Paths are
    /// canonical, so that they compare equal to what the policy computes.
    pub fn create(root: &Path) -> io::Result<Demo> {
        std::fs::create_dir_all(root)?;
        let root = std::fs::canonicalize(root)?;
        let home = root.join("home");
        let state_root = home.join(".local/share/AgentWorks");
        let workspace_docs = state_root.join("workspace-docs");
        let runtimes = state_root.join("state/cli-runtimes/v1");
        let chat = "chat-1".to_owned();
        let other_chat = "chat-2".to_owned();
        let demo = Demo {
            runtime: runtimes.join(&chat),
            other_runtime: runtimes.join(&other_chat),
            granted: workspace_docs.join("workflows/wf-granted"),
            other_workflow: workspace_docs.join("workflows/wf-other"),
            blocked_stand_in: root.join("bin/opener"),
            config: root.join("cli-sandbox.toml"),
            outside: root.join("outside"),
            chat,
            other_chat,
            secrets: BTreeMap::new(),
            root,
            home,
            state_root,
            workspace_docs,
        };
        demo.populate()
    }

    fn populate(mut self) -> io::Result<Demo> {
        let token = |what: &str| format!("secret-{what}-{}", std::process::id());
        let files: Vec<(PathBuf, String)> = vec![
            (self.home.join("notes.txt"), token("personal")),
            (
                self.state_root.join("config.json"),
                format!("{{\"token\": \"{}\"}}\n", token("server-token")),
            ),
            (
                self.state_root.join("state/auth/login.json"),
                token("login"),
            ),
            (
                self.state_root.join("personal-mcp/servers.json"),
                token("personal-mcp"),
            ),
            (
                self.state_root.join("state/chats/events.sqlite"),
                token("chat-events"),
            ),
            (self.other_runtime.join("notes.txt"), token("other-chat")),
            (self.granted.join("doc.md"), token("granted-doc")),
            (self.granted.join("planning/plan.json"), token("plan")),
            (self.granted.join("workflow.sqlite"), token("raw-database")),
            (self.other_workflow.join("doc.md"), token("other-workflow")),
            (self.workspace_docs.join("users/ann.json"), token("users")),
        ];
        for (path, content) in files {
            write_file(&path, &content)?;
            self.secrets.insert(path, content);
        }
        std::fs::create_dir_all(&self.runtime)?;
        std::fs::create_dir_all(&self.outside)?;
        write_file(
            &self.blocked_stand_in,
            "#!/bin/sh\n# Stand-in for a blocked program (an opener): proves it ran.\nprintf ran > \"$1\"\n",
        )?;
        std::fs::set_permissions(
            &self.blocked_stand_in,
            std::fs::Permissions::from_mode(0o755),
        )?;
        write_file(
            &self.config,
            &format!(
                "# Written by the demo layout: blocks the stand-in opener.\n[policy]\nblocked_programs = [{}]\n",
                toml_string(&self.blocked_stand_in)
            ),
        )?;
        Ok(self)
    }

    /// The settings that point the launcher at this layout.
    pub fn settings(&self) -> Settings {
        Settings {
            home: Some(self.home.clone()),
            state_root: Some(self.state_root.clone()),
            workspace_docs: Some(self.workspace_docs.clone()),
            config: Some(self.config.clone()),
            helper: None,
            accept_replaceable_helper: None,
        }
    }

    /// The environment a process launched for this layout needs (its home).
    pub fn env(&self) -> Vec<(String, String)> {
        vec![("HOME".into(), self.home.display().to_string())]
    }

    /// The grant this chat gets: its workflow, read-write.
    pub fn grant_arg(&self) -> String {
        format!("{}:rw", self.granted.display())
    }

    /// The secret content of the file at `path`; empty for a file that holds none.
    pub fn secret(&self, path: &Path) -> &str {
        self.secrets.get(path).map(String::as_str).unwrap_or("")
    }
}

fn write_file(path: &Path, content: &str) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, content)
}

fn toml_string(path: &Path) -> String {
    serde_json::to_string(&path.display().to_string()).expect("a string serializes")
}
