//! The class `harden` closes beyond its list of persistence paths: the home's top level.
//!
//! Nearly every program's start file lives directly in the home (`~/.bashrc`, `~/.npmrc`,
//! `~/.gdbinit`, `~/.inputrc`, `~/.curlrc`, ... and those no list names yet), and so do the
//! folders that hold more of them (`~/bin`, `~/.vim`, `~/.aws`). A list of them cannot be
//! complete, so with `harden` no entry directly in the home is created, written, replaced,
//! renamed or removed, whatever its name: the top is an allowlist, of the CLIs' own state files
//! (written in place) and nothing else. The folders already there stay open inside (the
//! person's work, the CLIs' state), except the persistence folders of the list; a folder
//! missing at launch cannot be made there, so the launcher makes the CLIs' state folders first
//! ([`HOME_STATE_FOLDERS`]).
//!
//! The backends: Linux freezes the home with Landlock (rules on inodes: a file the person saves
//! by rename outside during the chat is a new inode without a rule, read-only too), macOS denies
//! by a regular expression on the home's depth.

use std::path::{Path, PathBuf};

use super::{Op, Policy, Rule, Verdict};
use crate::Os;

/// The CLIs' state files at the home's top, written in place with `harden`. None: Claude Code's
/// `~/.claude.json`, the one there was, is a place Claude acts on at start (`env`, the login's
/// key, MCP servers, trust: issue 24), read-only in every chat with or without `harden`
/// (`Rule::Settings`, which outranks this module's rule); the pinned Claude starts, runs its
/// tools and finishes its turns without saving it (the Claude adapter's table).
pub const HOME_TOP_STATE_FILES: &[&str] = &[];

/// The beginnings of the temporary names the CLIs' atomic saves make beside their state files:
/// allowed on macOS only, where a name can be allowed before it exists (Seatbelt matches names)
/// and where Claude Code does not fall back to writing in place (Seatbelt's refusal is `EPERM`,
/// and Claude falls back on `EACCES` alone). Linux (Landlock, rules on inodes) cannot allow a
/// name that does not exist yet: there Claude writes in place.
/// None since `~/.claude.json` is read-only in every chat (its save by rename is refused all
/// the same).
pub const HOME_TOP_STATE_TEMP_MACOS: &[&str] = &[];

/// The CLIs' state folders at the home's top (and the caches the tools they run fill), made
/// empty (mode 0700) at launch with `harden` when missing, since nothing new can be made at the
/// home's top during the chat. Measured: a first run of each pinned CLI in an empty home makes
/// `~/.claude` and `~/.claude.json` (Claude Code), `~/.gemini` (Gemini CLI), `~/.pi` (Pi), and
/// Codex uses `~/.codex` (its `CODEX_HOME`, which must exist).
pub const HOME_STATE_FOLDERS: &[&str] = &[
    ".claude", ".codex", ".gemini", ".pi", ".cursor", ".cache", ".npm",
];

/// What `harden` does not close, said by every backend's report of the `persistence` promise
/// and by `doctor`: code that runs later from places below the home's top that no list names.
pub const HARDEN_LEAVES_OPEN: &str = "not closed, below the home's top: toolchains and version managers the person runs later (~/.rustup, ~/.nvm, ~/.pyenv, ~/go/bin), projects' virtual environments, node_modules, build scripts, git hooks and .git/config, package caches later builds read (~/.npm, ~/.cache/pip, ~/.cargo/registry), another app's settings in ~/.config that name a command (only the listed ones are closed); at the top, a symlink no list names leads to a target as open as its own place";

impl Policy {
    /// With `harden`, the home's top level is closed (this module's class).
    pub fn home_top_closed(&self) -> bool {
        !self.hardened.is_empty()
    }

    /// Whether this module's rule already keeps `path` from being made, written or moved: an
    /// entry directly in the home, with `harden`. A backend need not create a missing acted-on
    /// file there (an empty `~/CLAUDE.md`, `~/AGENTS.md`) to close it: the home's top is frozen.
    pub fn home_top_closes(&self, path: &Path) -> bool {
        self.home_top_closed() && path.parent().map(Path::as_os_str) == Some(self.home.as_os_str())
    }

    /// The CLIs' state files at the home's top ([`HOME_TOP_STATE_FILES`]), written in place with
    /// `harden`; empty without it.
    pub fn home_top_state_files(&self) -> Vec<PathBuf> {
        self.home_names(HOME_TOP_STATE_FILES)
    }

    /// The CLIs' state folders ([`HOME_STATE_FOLDERS`]) that a backend makes when missing, with
    /// `harden`; empty without it.
    pub fn home_state_folders(&self) -> Vec<PathBuf> {
        self.home_names(HOME_STATE_FOLDERS)
    }

    fn home_names(&self, names: &[&str]) -> Vec<PathBuf> {
        if !self.home_top_closed() {
            return Vec::new();
        }
        names.iter().map(|name| self.home.join(name)).collect()
    }

    /// `decide()`'s step for the home's top level: a write or a move of an entry directly in
    /// the home is refused with `harden`, except a write of a CLI's state file (and, on macOS,
    /// of its temporary names). `None`: the rule does not speak.
    pub(super) fn home_top_verdict(&self, op: Op, path: &Path) -> Option<Verdict> {
        if !self.home_top_closed() || !matches!(op, Op::Write | Op::Move) {
            return None;
        }
        // Canonical paths: the parent compared as bytes.
        if path.parent().map(Path::as_os_str) != Some(self.home.as_os_str()) {
            return None;
        }
        let name = path.file_name()?.as_encoded_bytes();
        let state = HOME_TOP_STATE_FILES
            .iter()
            .any(|s| s.as_bytes() == name && op == Op::Write);
        let temp = self.os == Os::MacOs
            && HOME_TOP_STATE_TEMP_MACOS
                .iter()
                .any(|prefix| name.len() > prefix.len() && name.starts_with(prefix.as_bytes()));
        Some(Verdict {
            allowed: state || temp,
            rule: Rule::Hardened {
                path: path.to_owned(),
            },
        })
    }
}
