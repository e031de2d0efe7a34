//! What the coding CLIs read at start and act on: their settings (hooks, status lines, MCP
//! servers, extensions and plugins, environment and base-URL overrides, credential helpers,
//! permission rules), instruction files, custom commands, agents and skills. A chat can write
//! the home, so whatever a chat leaves there would be run by a later launch of any chat (with
//! that chat's grants), or stop it at a screen. Each adapter declares these places
//! ([`crate::CliAdapter::acted_on`]); the launcher gathers every adapter's declaration into the
//! [`crate::PolicyRequest`] (a chat of one CLI can write another CLI's settings), and
//! [`crate::Policy::build`] turns them into [`SettingsPath`]s: read by a chat, never written,
//! created or moved by one ([`crate::Rule::Settings`] in [`crate::Policy::decide`]).
//!
//! What it is not: the CLI's state. Sessions, history, logs and token refresh files stay
//! writable, and the person's own logins and choices keep reaching the chat (they are read).

use std::path::PathBuf;

use serde::Serialize;

/// Where a declared place is, before the launch knows the home and the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Anchor {
    /// Relative to the person's home.
    Home,
    /// Relative to the folder an environment variable of the launcher names (absolute), which
    /// the CLI inherits (`CODEX_HOME`); to `default` under the home when it is unset.
    Folder {
        /// The variable (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`, `GEMINI_CLI_HOME`).
        var: &'static str,
        /// Relative to the home when the variable is unset (`.codex`).
        default: &'static str,
    },
    /// Relative to the chat's runtime, which the CLI takes for its project folder.
    Runtime,
    /// In each folder above the runtime that a chat can write (the home and the folders
    /// between it and the state root): a file a CLI gathers walking up from its working folder
    /// (Claude's `CLAUDE.md`).
    AboveRuntime,
}

/// Whether a declared place is a folder (closed with everything it holds) or a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActedOnKind {
    /// A folder the CLI loads everything from (commands, agents, skills, extensions): a missing
    /// one is created empty, which means what its absence means.
    Folder,
    /// A file; a missing one is created holding `empty`, which the CLI reads as it reads no
    /// file at all (`{}` for a JSON settings file: Gemini refuses an empty one; nothing for
    /// TOML, Markdown and `.env`). Checked against the pinned CLI for each declared file.
    File {
        /// The neutral content.
        empty: &'static str,
    },
}

/// One place a CLI reads at start and acts on, as an adapter declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ActedOn {
    /// Where it is anchored.
    pub anchor: Anchor,
    /// Relative to the anchor (no `..`, not absolute).
    pub path: &'static str,
    /// A folder or a file.
    pub kind: ActedOnKind,
}

impl ActedOn {
    /// A file in the home, missing one created holding `empty`.
    pub const fn home_file(path: &'static str, empty: &'static str) -> ActedOn {
        ActedOn {
            anchor: Anchor::Home,
            path,
            kind: ActedOnKind::File { empty },
        }
    }

    /// A folder in the home.
    pub const fn home_folder(path: &'static str) -> ActedOn {
        ActedOn {
            anchor: Anchor::Home,
            path,
            kind: ActedOnKind::Folder,
        }
    }

    /// A file in the chat's runtime (the CLI's project folder).
    pub const fn runtime_file(path: &'static str, empty: &'static str) -> ActedOn {
        ActedOn {
            anchor: Anchor::Runtime,
            path,
            kind: ActedOnKind::File { empty },
        }
    }

    /// A folder in the chat's runtime.
    pub const fn runtime_folder(path: &'static str) -> ActedOn {
        ActedOn {
            anchor: Anchor::Runtime,
            path,
            kind: ActedOnKind::Folder,
        }
    }

    /// A file in the folder `var` names (`default` under the home when unset).
    pub const fn folder_file(
        var: &'static str,
        default: &'static str,
        path: &'static str,
        empty: &'static str,
    ) -> ActedOn {
        ActedOn {
            anchor: Anchor::Folder { var, default },
            path,
            kind: ActedOnKind::File { empty },
        }
    }

    /// A folder in the folder `var` names (`default` under the home when unset).
    pub const fn folder_folder(
        var: &'static str,
        default: &'static str,
        path: &'static str,
    ) -> ActedOn {
        ActedOn {
            anchor: Anchor::Folder { var, default },
            path,
            kind: ActedOnKind::Folder,
        }
    }

    /// A file gathered from every folder above the runtime that a chat can write.
    pub const fn above_runtime_file(path: &'static str, empty: &'static str) -> ActedOn {
        ActedOn {
            anchor: Anchor::AboveRuntime,
            path,
            kind: ActedOnKind::File { empty },
        }
    }
}

/// One CLI's declaration with the value of its folder variable, as the launcher read it: what
/// [`crate::PolicyRequest::settings`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsRequest {
    /// The CLI that declared it (for `explain` and the plan's words).
    pub cli: &'static str,
    /// The declaration.
    pub entry: ActedOn,
    /// For [`Anchor::Folder`]: the variable's value in the launcher's environment, when set and
    /// absolute (a relative one is refused by the adapter at launch).
    pub folder: Option<PathBuf>,
}

/// An acted-on place of one policy: absolute and canonical, or the path of a symlink (whose
/// target is listed beside it). Made only by [`crate::Policy::build`].
///
/// Every backend closes it the same way: read allowed; never written, created, renamed or
/// removed from inside a chat; a missing one is created (an empty folder, or a file holding
/// [`SettingsPath::empty`]) before the chat starts, so that it cannot be made during the chat;
/// none of its ancestors can be renamed or removed (a folder or a link renamed into the place
/// of one would bring its own settings). Ask [`crate::Policy::decide`] for any path: it answers
/// [`crate::Rule::Settings`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SettingsPath {
    pub(crate) path: PathBuf,
    pub(crate) folder: bool,
    pub(crate) empty: &'static str,
    pub(crate) in_runtime: bool,
    pub(crate) cli: &'static str,
}

impl SettingsPath {
    /// The place: absolute (canonical, or the path of a symlink).
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// A folder: closed with everything it holds, also what is created in it later.
    pub fn is_folder(&self) -> bool {
        self.folder
    }

    /// For a file: what a missing one is created holding (its neutral form).
    pub fn empty(&self) -> &'static str {
        self.empty
    }

    /// Inside the chat's runtime (the CLI's project settings), not in the home.
    pub fn in_runtime(&self) -> bool {
        self.in_runtime
    }

    /// The CLI that declared it.
    pub fn cli(&self) -> &'static str {
        self.cli
    }
}
