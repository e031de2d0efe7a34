//! The end of a chat: every entry its launches wrote in the person's files removed, its plan
//! files removed, and (when asked) its runtime.
//!
//! Which files: those every registered adapter's pre-trust writes for this chat (asked of the
//! adapters themselves, with the chat's runtime as the working folder, so that `CODEX_HOME`,
//! `CLAUDE_CONFIG_DIR` and the like move them as they move the launch's). Which entries: in
//! the container each pre-trust entry lives in (`projects` of `~/.claude.json` and
//! `~/.codex/config.toml`, the top of `~/.gemini/trustedFolders.json`, Agy's
//! `trustedWorkspaces`), the members keyed by the chat's runtime or a place inside it (the
//! CLI's own additions to that member go with it: Claude keeps its project's history there),
//! and, while the file is open anyway, those of any chat whose runtime is gone (the same
//! pruning as pre-trust's). Never an entry of the person's: only keys below the runtimes folder
//! are ours. Removed through [`PersonFilesGuard::remove_entries`]: the same place checks, lock,
//! compare and swap and atomic rename as pre-trust, every other byte of the file kept.
//!
//! A chat nothing is known of (no runtime, no plan file, no entry) ends as a no-op that says
//! so: `end` is safe to repeat (a provider that crashed mid-way ends the chat again).
//!
//! [`PersonFilesGuard::remove_entries`]: crate::person_files::PersonFilesGuard::remove_entries

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sandbox_core::{FileFormat, LaunchRequest, Mode, Shape};
use serde::Serialize;

use crate::person_files::{Applied, RealPersonFiles, entry_container};
use crate::{Context, Error, registry};

/// What [`end_chat`] did.
#[derive(Debug, Clone, Serialize)]
pub struct EndDone {
    /// The chat's id.
    pub chat: String,
    /// Its runtime.
    pub runtime: PathBuf,
    /// Each person's file looked at, and whether entries were removed from it.
    pub files: Vec<EndFile>,
    /// The chat's plan files removed.
    pub plans: Vec<PathBuf>,
    /// Whether the runtime was removed (`--remove-runtime`; `false` when it did not exist).
    pub runtime_removed: bool,
    /// Whether anything of the chat was found (its runtime, a plan file, an entry).
    pub known: bool,
    /// The CLIs whose files were not looked at, and why: their adapter refuses this person's
    /// launches now (Claude with a `permissions.ask` rule of the person's), so it names no file.
    pub skipped: Vec<String>,
}

/// One person's file as `end` left it.
#[derive(Debug, Clone, Serialize)]
pub struct EndFile {
    /// The file.
    pub file: PathBuf,
    /// `true` when entries were removed (the file was rewritten); `false`: nothing to remove,
    /// the file was not touched.
    pub removed: bool,
}

/// Ends the chat `chat`: see the module docs. Call it once the chat's CLI has exited (a CLI
/// still running may write its entry again).
pub fn end_chat(ctx: &Context, chat: &str, remove_runtime: bool) -> Result<EndDone, Error> {
    let policy = ctx.policy(chat, &[])?;
    let runtime = policy.runtime().to_owned();
    let runtimes = ctx.layout.runtimes_dir();
    let request = LaunchRequest {
        shape: Shape::Structured,
        mode: Mode::Full,
        workdir: runtime.clone(),
        home: ctx.layout.home.clone(),
        grants: Vec::new(),
        mcp_bridge: None,
        prompt: None,
        model: None,
        extra_args: Vec::new(),
        confined: true,
        nonce: String::new(),
    };
    // The adapters read the person's files (and variables) through the guard that then removes.
    let person = RealPersonFiles::for_policy(&policy);
    let mut files: BTreeMap<PathBuf, (FileFormat, Vec<Vec<String>>)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    for adapter in registry::ADAPTERS {
        match adapter.pre_trust(&request, &person) {
            Ok(pre_trust) => {
                for edit in &pre_trust.edits {
                    let Some(container) = entry_container(edit, &runtimes) else {
                        continue;
                    };
                    let entry = files
                        .entry(edit.file.clone())
                        .or_insert_with(|| (edit.format, Vec::new()));
                    if !entry.1.contains(&container) {
                        entry.1.push(container);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(cli = adapter.name(), error = %e, "end: this CLI's files are not looked at");
                skipped.push(format!("{}: {e}", adapter.name()));
            }
        }
    }
    let guard = person.guard();
    let ours = |key: &str| Path::new(key).starts_with(&runtime);
    let mut done = EndDone {
        chat: chat.to_owned(),
        runtime: runtime.clone(),
        files: Vec::new(),
        plans: Vec::new(),
        runtime_removed: false,
        known: runtime.exists(),
        skipped,
    };
    // The runtime goes first: the entry that serves every chat (Codex's, Claude's, Gemini's
    // trust of the runtimes folder) goes with the last runtime, which the files' edit below
    // sees (under each file's lock) once this one is gone.
    if remove_runtime {
        match std::fs::remove_dir_all(&runtime) {
            // `remove_dir_all` never follows a link the chat left inside its runtime.
            Ok(()) => done.runtime_removed = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => failures.push(format!(
                "cannot remove the runtime `{}`: {e}",
                runtime.display()
            )),
        }
    }
    for (file, (format, containers)) in &files {
        match guard.remove_entries(file, *format, containers, &ours) {
            Ok(applied) => {
                let removed = applied == Applied::Written;
                tracing::info!(file = %file.display(), removed, "end: entries");
                done.known |= removed;
                done.files.push(EndFile {
                    file: file.clone(),
                    removed,
                });
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    done.plans = remove_plans(&ctx.layout.plans_dir(), chat);
    done.known |= !done.plans.is_empty();
    if failures.is_empty() {
        Ok(done)
    } else {
        Err(Error::BadInput(format!(
            "chat `{chat}` was ended only in part: {}; fix that and end it again (ending again is safe)",
            failures.join("; ")
        )))
    }
}

/// Removes the chat's plan files (`<chat>.<16 hex digits>.json` in the plans folder); the ones
/// removed.
fn remove_plans(dir: &Path, chat: &str) -> Vec<PathBuf> {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in listing.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let is_ours = name
            .strip_prefix(chat)
            .and_then(|r| r.strip_prefix('.'))
            .and_then(|r| r.strip_suffix(".json"))
            .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        if is_ours && std::fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}
