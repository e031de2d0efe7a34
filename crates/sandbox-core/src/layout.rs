use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::PolicyError;
use crate::path::{Resolver, canonicalize_lenient};

/// The operating system a policy is built for. A policy can be built for another OS than the one
/// running (`profile --backend seatbelt` on Linux), so this is a value, not a `cfg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    /// macOS: the Seatbelt backend.
    #[serde(rename = "macos")]
    MacOs,
    /// Linux: the Landlock and namespaces backend.
    Linux,
}

impl Os {
    /// The OS this binary was built for; `None` elsewhere (no backend exists there).
    pub const fn current() -> Option<Os> {
        if cfg!(target_os = "macos") {
            Some(Os::MacOs)
        } else if cfg!(target_os = "linux") {
            Some(Os::Linux)
        } else {
            None
        }
    }
}

/// A chat's id: `[A-Za-z0-9._-]{1,128}`, not `.` or `..`. It names a folder, so nothing else is
/// accepted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(into = "String")]
pub struct ChatId(String);

impl ChatId {
    /// Checks `id` against the rule above.
    pub fn new(id: &str) -> Result<ChatId, PolicyError> {
        let ok = (1..=128).contains(&id.len())
            && id != "."
            && id != ".."
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(ChatId(id.to_owned()))
        } else {
            Err(PolicyError::BadChatId { id: id.to_owned() })
        }
    }

    /// The id, as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<ChatId> for String {
    fn from(c: ChatId) -> String {
        c.0
    }
}

impl fmt::Display for ChatId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the caller knows about where things are, before any default is applied. The launcher
/// fills it from flags, environment variables (`AGENTWORKS_STATE_ROOT`,
/// `AGENTWORKS_WORKSPACE_DOCS`, `XDG_DATA_HOME`, `HOME`) and the configuration, in that order of
/// precedence.
#[derive(Debug, Clone)]
pub struct LayoutInputs {
    /// The OS whose default places apply.
    pub os: Os,
    /// The person's home.
    pub home: PathBuf,
    /// `XDG_DATA_HOME` (Linux): the app folder is `AgentWorks` in it.
    pub xdg_data_home: Option<PathBuf>,
    /// The app folder as this process sees it, when moved.
    pub state_root: Option<PathBuf>,
    /// workspace-docs, when not `<state root>/workspace-docs`.
    pub workspace_docs: Option<PathBuf>,
}

/// Where AgentWorks keeps things, every path absolute and canonical (a path that does not exist
/// yet is canonical up to its longest existing ancestor).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// The person's home.
    pub home: PathBuf,
    /// AgentWorks' own folder at its default place for this OS, whether or not the state root
    /// was moved. It stays protected either way: it may hold a real token.
    pub app_folder: PathBuf,
    /// The app folder as this process sees it (`--state-root` or `AGENTWORKS_STATE_ROOT`).
    pub state_root: PathBuf,
    /// The workflows' documents; only its folders may be granted, of all the app folder.
    pub workspace_docs: PathBuf,
}

impl Layout {
    /// Applies the defaults to `inputs` and canonicalizes every path through `resolver`.
    pub fn resolve(inputs: &LayoutInputs, resolver: &dyn Resolver) -> Result<Layout, PolicyError> {
        let home = canonicalize_lenient("home folder", &inputs.home, resolver)?;
        let app_folder = match inputs.os {
            Os::MacOs => home.join("Library/Application Support/AgentWorks"),
            Os::Linux => match &inputs.xdg_data_home {
                Some(xdg) => {
                    canonicalize_lenient("XDG_DATA_HOME", xdg, resolver)?.join("AgentWorks")
                }
                None => home.join(".local/share/AgentWorks"),
            },
        };
        let app_folder = canonicalize_lenient("app folder", &app_folder, resolver)?;
        let state_root = match &inputs.state_root {
            Some(dir) => canonicalize_lenient("state root", dir, resolver)?,
            None => app_folder.clone(),
        };
        let workspace_docs = match &inputs.workspace_docs {
            Some(dir) => canonicalize_lenient("workspace-docs", dir, resolver)?,
            None => state_root.join("workspace-docs"),
        };
        Ok(Layout {
            home,
            app_folder,
            state_root,
            workspace_docs,
        })
    }

    /// `<state root>/state/cli-runtimes/v1`, the folder that holds every chat's runtime.
    pub fn runtimes_dir(&self) -> PathBuf {
        self.state_root.join("state/cli-runtimes/v1")
    }

    /// `<state root>/state/cli-runtimes/v1/<chat-id>`: the chat's working folder.
    pub fn runtime(&self, chat: &ChatId) -> PathBuf {
        self.runtimes_dir().join(chat.as_str())
    }

    /// Where the launcher keeps compiled plans: inside the state root, so no confined process
    /// can rewrite the plan of the next launch.
    pub fn plans_dir(&self) -> PathBuf {
        self.state_root.join("state/cli-sandbox/plans")
    }

    /// Where the launcher keeps its locks on the person's files (one file per person's file):
    /// inside the state root, which every chat's sandbox closes, so that no chat can hold one
    /// and make another chat's launch wait.
    pub fn person_file_locks_dir(&self) -> PathBuf {
        self.state_root.join("state/cli-sandbox/locks")
    }

    /// The roots this layout protects: the app folder, the state root and workspace-docs, with
    /// nested duplicates kept (a nested root is still named so that its own ancestors are pinned).
    pub fn protected_roots(&self) -> Vec<PathBuf> {
        let mut roots = vec![
            self.app_folder.clone(),
            self.state_root.clone(),
            self.workspace_docs.clone(),
        ];
        roots.sort();
        roots.dedup();
        roots
    }

    /// Whether `path` lies in (or is) the folder of every chat's runtime.
    pub fn is_in_runtimes(&self, path: &Path) -> bool {
        path.starts_with(self.runtimes_dir())
    }
}
