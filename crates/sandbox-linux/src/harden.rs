//! `harden` in the namespace plan, with Landlock rules on inodes: what holds across a process
//! outside that saves a persistence file by rename during the chat.
//!
//! A read-only bind mount on a file's name is detached in every namespace when a process outside
//! the chat's renames another file over that name (Linux >= 3.18): the person's `sed -i
//! ~/.bashrc`, `git config --global` and every editor's atomic save do, and the new file was
//! writable by the chat. Landlock's rules are on inodes and a right comes from the folders above
//! a file, so the folders that hold persistence files are "frozen" as in the Landlock-only
//! fallback (`frozen.rs`): the folders from `/` down to the home, the home itself, and the
//! folders in it that hold a persistence file (`~/.ssh`, `~/.cargo`, `~/.aws`, ...) get reading
//! rights only (the mounts close the protected roots in this plan, so reading beneath them opens
//! nothing), every other entry beside them the open rights. A file renamed into a frozen folder
//! from outside has no rule of its own: it is read-only, whatever its name. Nothing can be made,
//! renamed or removed directly in a frozen folder, which also closes the persistence files
//! missing at launch and, at the home's top, every start file no list names (the class of
//! `sandbox_core`'s `home_top.rs`): the home's top files get reading rights only, but the CLIs'
//! state files, and the CLIs' state folders missing at launch are made first.
//!
//! The persistence folders below an open folder (`~/.config/git`, `~/.local/bin`) stay bound
//! read-only: a save inside one is a new file inside the bound folder, read-only too. Only a
//! process outside that renames or removes such a folder itself detaches its mount: the gap the
//! plan states.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sandbox_core::Policy;

use crate::plan::common::LaunchDisk;
use crate::plan::format::EntryKind;

/// The folders this plan freezes for `harden`: every ancestor of the home, the home, and each
/// folder inside the home that leads to a persistence file (a persistence folder below an open
/// folder is bound instead).
pub(super) fn frozen_folders(policy: &Policy) -> BTreeSet<PathBuf> {
    let home = policy.home();
    let mut frozen: BTreeSet<PathBuf> = home.ancestors().map(Path::to_owned).collect();
    for hardened in policy.hardened() {
        if hardened.is_folder() || !hardened.path().starts_with(home) {
            continue;
        }
        for ancestor in hardened.path().ancestors().skip(1) {
            if !ancestor.starts_with(home) {
                break;
            }
            frozen.insert(ancestor.to_owned());
        }
    }
    frozen
}

/// Whether an entry directly in a frozen folder gets reading rights only: a persistence path,
/// or, directly in the home, anything that is not a folder (a start file, listed or not) but the
/// CLIs' state files.
pub(super) fn read_only_entry(
    policy: &Policy,
    dir: &Path,
    child: &Path,
    disk: &dyn LaunchDisk,
) -> bool {
    if policy
        .hardened()
        .iter()
        .any(|h| child.starts_with(h.path()))
    {
        return true;
    }
    dir == policy.home()
        && policy.home_top_closed()
        && disk.target_kind(child) != Some(EntryKind::Dir)
        && !policy.home_top_state_files().iter().any(|s| s == child)
}

/// The CLIs' state folders missing at launch, made empty before the chat starts: nothing can be
/// made at the home's top during it.
pub(super) fn state_folders_to_make(policy: &Policy, disk: &dyn LaunchDisk) -> Vec<PathBuf> {
    policy
        .home_state_folders()
        .into_iter()
        .filter(|p| disk.kind(p).is_none())
        .collect()
}
