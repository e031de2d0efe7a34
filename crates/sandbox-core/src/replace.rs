//! Whether a chat could replace a program that a later launch runs unconfined (the Linux
//! helper): the one place that decides it, from the policy and from what the disk says of each
//! entry the program's path went through (the launcher reads the disk; this crate makes no
//! system call).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::policy::{Op, Policy, Rule};

/// One entry that resolving a program's path went through, as the disk has it: the program
/// itself, every folder above it, and every symlink on the way with the folders above it
/// (a link a chat can retarget names another program at the next launch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnDisk {
    /// The entry's path, absolute, as it was looked up (a symlink's own path, not its target).
    pub path: PathBuf,
    /// Its owner's uid.
    pub uid: u32,
    /// Its mode's permission bits, the sticky bit among them (`st_mode & 0o7777`).
    pub mode: u32,
    /// A folder.
    pub dir: bool,
}

/// Why a chat could replace the program: the entry it could change and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replaceable {
    /// The entry a chat could change (the program, a folder above it, a symlink on the way).
    pub place: PathBuf,
    /// How, in words.
    pub why: String,
}

/// A group- or world-writable entry's bits.
const OTHERS_WRITE: u32 = 0o022;
/// The sticky bit: in such a folder an entry is removed or renamed only by its owner or the
/// folder's.
const STICKY: u32 = 0o1000;

impl Policy {
    /// Whether a confined chat of this policy could replace the program that `entries`
    /// describe (the entries its path went through, the program last): change its content, or
    /// rename, remove or retarget any entry on the way so that the same path names another
    /// program. Such a program must not be run unconfined by a later launch.
    ///
    /// Two things must both allow a change, as they do for a chat: the policy (a protected
    /// root, the pins above it, the system of a root chat are closed whatever the disk says;
    /// what another chat may be granted, in workspace-docs or a runtime, counts as open: that
    /// chat replaces it for every later one),
    /// and, for a chat that is not root, the disk's permissions. Those are read for any user but
    /// root, not only the chat's: a chat of another person's launches, or one launched by a
    /// provider under another uid, is a chat too. So an entry is changeable by a chat when the
    /// policy allows it and either the chat is root, or the entry's folder (for a rename or
    /// removal; a sticky folder only for entries not root's) or the program itself (for its
    /// content) is owned by a user other than root or writable by its group or everyone; the
    /// last also for a root chat's policy where it closes only the system (`Rule::System`):
    /// the chats of a launcher that is not root write there as the disk lets them. A
    /// home is its owner's, so everything in it is a chat's to replace unless the policy closes
    /// it (the launcher's state root). An entry missing from `entries` whose folder is needed
    /// counts as changeable.
    pub fn could_replace(&self, entries: &[OnDisk]) -> Option<Replaceable> {
        let root_chat = self.system_read_only();
        // This chat's policy, or another chat's grant or runtime: a helper one chat replaced
        // runs in every later launch, whatever that launch grants. The system a root chat may
        // not write stays open to the chats of a launcher that is not root, as far as the
        // disk lets them.
        let open = |op, path: &Path| {
            let verdict = self.decide(op, path);
            let by_policy = verdict.allowed || self.some_chat_may_be_granted(path);
            (by_policy, by_policy || verdict.rule == Rule::System)
        };
        let find = |path: &Path| entries.iter().find(|e| e.path == path);
        for entry in entries {
            if entry.path == Path::new("/") {
                continue;
            }
            // Renamed, removed or replaced by another entry of the same name: the policy's
            // Move, then the folder's permissions and the sticky bit's exception.
            let (root_may, user_may) = open(Op::Move, &entry.path);
            let folder = entry.path.parent().and_then(find);
            let why = match folder {
                _ if root_chat && root_may => {
                    Some("a root chat may rename or remove it under the policy")
                }
                _ if !user_may => None,
                None => Some("its folder could not be looked at"),
                Some(f) if f.uid != 0 => Some("its folder belongs to a user other than root"),
                Some(f) if f.mode & OTHERS_WRITE != 0 && f.mode & STICKY == 0 => {
                    Some("its folder is writable by its group or by everyone")
                }
                Some(f) if f.mode & OTHERS_WRITE != 0 && entry.uid != 0 => Some(
                    "its folder is writable by everyone (sticky) and it belongs to a user other than root",
                ),
                Some(_) => None,
            };
            if let Some(why) = why {
                return Some(Replaceable {
                    place: entry.path.clone(),
                    why: why.into(),
                });
            }
        }
        let program = entries.last()?;
        let (root_may, user_may) = open(Op::Write, &program.path);
        let why = if root_chat && root_may {
            "a root chat may write it under the policy"
        } else if user_may && (program.uid != 0 || program.mode & OTHERS_WRITE != 0) {
            "it belongs to a user other than root or is writable by its group or by everyone"
        } else {
            return None;
        };
        Some(Replaceable {
            place: program.path.clone(),
            why: why.into(),
        })
    }
}
