//! Where the launcher may read and write the person's own settings files for one chat.
//!
//! Pre-trust runs unconfined, before the CLI starts, in a home that every chat can write. A chat
//! that plants a symlink (`~/.codex -> <state root>`) would make the launcher read and write
//! wherever the link points, on the chat's behalf. The launcher therefore resolves each file's
//! real location first (race-free, from an open descriptor: see `launch::person_files`) and asks
//! [`Policy::person_file`] whether that location is one it may use. This module is that rule, and
//! nothing else: it makes no system call, and the facts it judges (the resolved path) come from
//! the caller.
//!
//! The rule, for a file addressed at `addressed` whose real location is `resolved`:
//!
//! - Addressed inside this chat's runtime (Gemini's workspace settings): `resolved` must lie inside
//!   this chat's runtime too. The chat can write its runtime, so a link there may point anywhere;
//!   following it out (to another chat's runtime, to `config.json`) is refused.
//! - Addressed anywhere else (the person's own settings): `resolved` must be what a confined
//!   process of this chat may do the same operation on with rule `open` in [`Policy::decide`]
//!   (so never a protected root, a grant, this or another chat's runtime, a blocked program, or,
//!   for a write, a persistence path that `harden` closes), and it must be the person's: inside
//!   the home, or inside a place the person named by an environment variable for this CLI
//!   ([`NamedPlace`], `CODEX_HOME=/srv/codex`). A named place counts as written: one reached
//!   through a symlink is refused unless its real location is in the home.
//!
//! What it is not: it does not say whether the file is a regular file, who owns it or how many
//! names it has; the launcher checks those on the descriptor it reads from.

use std::path::{Path, PathBuf};

use crate::path::is_within;
use crate::policy::{Op, Policy, Rule};

/// A place the person named for a CLI's settings through an environment variable the launcher
/// (and so the CLI) inherits: `CODEX_HOME=/srv/codex`. The chat cannot change the launcher's
/// environment, so what it names is the person's choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedPlace {
    /// The variable (`CODEX_HOME`).
    pub var: String,
    /// Its value, canonical.
    pub path: PathBuf,
}

/// Why a resolved location is not one the launcher may read or write for the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PersonPlaceRefusal {
    /// Inside a protected root (workspace-docs, the app folder, the state root). The resolved
    /// path itself is not repeated: it lies in protected data.
    #[error("into AgentWorks' protected data (`{}`)", root.display())]
    Protected {
        /// The innermost protected root that holds it.
        root: PathBuf,
    },
    /// Inside another chat's runtime.
    #[error("into another chat's runtime (under `{}`)", runtimes.display())]
    OtherRuntime {
        /// The folder of every chat's runtime.
        runtimes: PathBuf,
    },
    /// Addressed inside this chat's runtime, resolved outside it (and outside protected data).
    #[error("to `{}`, out of this chat's runtime `{}`", resolved.display(), runtime.display())]
    LeavesRuntime {
        /// Where it resolves.
        resolved: PathBuf,
        /// This chat's runtime.
        runtime: PathBuf,
    },
    /// A persistence path closed to writing by `harden`.
    #[error("to `{}`, a persistence path that `harden` closes to writing", path.display())]
    Hardened {
        /// The persistence path.
        path: PathBuf,
    },
    /// A blocked program.
    #[error("to `{}`, a blocked program", program.display())]
    Blocked {
        /// The program.
        program: PathBuf,
    },
    /// Outside the home and every named place.
    #[error(
        "to `{}`, outside the home `{}`{}",
        resolved.display(),
        home.display(),
        named_places(named)
    )]
    NotThePersons {
        /// Where it resolves.
        resolved: PathBuf,
        /// The person's home.
        home: PathBuf,
        /// The places the person named.
        named: Vec<NamedPlace>,
    },
}

fn named_places(named: &[NamedPlace]) -> String {
    named
        .iter()
        .map(|n| format!(" and outside {}=`{}`", n.var, n.path.display()))
        .collect()
}

impl Policy {
    /// May the launcher do `op` (read or write) on a person's settings file addressed at
    /// `addressed` whose real location (every symlink resolved, canonical) is `resolved`? See
    /// the module docs for the rule.
    pub fn person_file(
        &self,
        op: Op,
        addressed: &Path,
        resolved: &Path,
        named: &[NamedPlace],
    ) -> Result<(), PersonPlaceRefusal> {
        if is_within(addressed, self.runtime()) {
            if is_within(resolved, self.runtime()) {
                return Ok(());
            }
            return Err(self.protected_refusal(resolved).unwrap_or_else(|| {
                PersonPlaceRefusal::LeavesRuntime {
                    resolved: resolved.to_owned(),
                    runtime: self.runtime().to_owned(),
                }
            }));
        }
        let verdict = self.decide(op, resolved);
        match verdict.rule {
            Rule::Open => {}
            // Read by a confined process too; written only by the person.
            Rule::Hardened { .. } if verdict.allowed => {}
            // Read-only to a chat; the launcher writes the person's settings (pre-trust) before
            // any chat runs, as the person would.
            Rule::Settings { .. } => {}
            Rule::Hardened { path } => return Err(PersonPlaceRefusal::Hardened { path }),
            Rule::Blocked { program } => return Err(PersonPlaceRefusal::Blocked { program }),
            // Refused, pinned, granted, runtime, closed: all inside a protected root.
            _ => {
                return Err(self.protected_refusal(resolved).unwrap_or_else(|| {
                    PersonPlaceRefusal::Protected {
                        root: resolved.to_owned(),
                    }
                }));
            }
        }
        let persons =
            is_within(resolved, self.home()) || named.iter().any(|n| is_within(resolved, &n.path));
        if persons {
            Ok(())
        } else {
            Err(PersonPlaceRefusal::NotThePersons {
                resolved: resolved.to_owned(),
                home: self.home().to_owned(),
                named: named.to_vec(),
            })
        }
    }

    /// The refusal for a path inside protected data, naming the innermost root (or the runtimes
    /// folder for another chat's runtime); `None` outside every protected root.
    fn protected_refusal(&self, resolved: &Path) -> Option<PersonPlaceRefusal> {
        if is_within(resolved, self.runtimes_dir()) && !is_within(resolved, self.runtime()) {
            return Some(PersonPlaceRefusal::OtherRuntime {
                runtimes: self.runtimes_dir().to_owned(),
            });
        }
        self.protected()
            .iter()
            .filter(|r| is_within(resolved, r))
            .max_by_key(|r| r.as_os_str().len())
            .map(|root| PersonPlaceRefusal::Protected { root: root.clone() })
    }
}
