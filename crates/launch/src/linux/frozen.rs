//! The fallback where namespaces cannot be created: Landlock alone.
//!
//! Landlock only allows, and a right on a folder covers everything beneath it. So to close a
//! protected root inside an open tree, each of its ancestors gets no right at all ("frozen") and
//! every other entry along the way gets the open rights on its own. The cost, reported in the
//! plan: nothing can be created, renamed or removed directly in a frozen folder (the home among
//! them, so `git config --global` and a CLI's atomic writes of its settings there fail), a
//! frozen folder cannot be listed, and entries created beside the path after launch stay closed.
//! Refused entries and blocked programs are closed the same way (their folder is frozen). With
//! `harden`, each persistence path that exists gets reading rights only and the folders that hold
//! them are frozen, so a missing one cannot be created either. Without a PID namespace,
//! processes outside stay visible and a process of the chat can outlive it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sandbox_core::{Access, Policy};

use super::plan::{
    Common, Enforcement, EntryKind, FsRight, Guarantee, Kernel, LandlockRule, LaunchDisk,
    LinuxPlan, NEWEST_KNOWN_ABI, PLAN_VERSION, outermost_existing_roots,
};

pub(super) fn compile(policy: &Policy, kernel: Kernel, disk: &dyn LaunchDisk) -> LinuxPlan {
    let abi = kernel.landlock_abi.min(NEWEST_KNOWN_ABI);
    let common = Common::new(policy, abi);
    let mut guarantees = Vec::new();
    let closed_roots = outermost_existing_roots(policy, disk, &mut guarantees);

    // What must stay closed inside the open part: the roots and the blocked programs.
    let mut closed: BTreeSet<PathBuf> = closed_roots.iter().cloned().collect();
    for program in &policy.blocked_programs {
        if disk.exists(program) && !closed_roots.iter().any(|r| program.starts_with(r)) {
            closed.insert(program.clone());
        }
    }
    let mut frozen: BTreeSet<PathBuf> = BTreeSet::new();
    for path in &closed {
        frozen.extend(path.ancestors().skip(1).map(Path::to_owned));
    }
    // Persistence paths (harden): read-only where they exist; their folders frozen, so that a
    // missing one cannot be created and none can be replaced.
    let read_only: Vec<&Path> = policy
        .hardened
        .iter()
        .map(|h| h.path.as_path())
        .filter(|p| disk.exists(p))
        .collect();
    let mut frozen_for_harden: BTreeSet<PathBuf> = BTreeSet::new();
    for hardened in &policy.hardened {
        frozen_for_harden.extend(hardened.path.ancestors().skip(1).map(Path::to_owned));
    }
    frozen.extend(frozen_for_harden.iter().cloned());

    let read: Vec<FsRight> = common
        .open_rights
        .iter()
        .copied()
        .filter(|r| matches!(r, FsRight::Execute | FsRight::ReadFile | FsRight::ReadDir))
        .collect();
    let mut rules: Vec<LandlockRule> = Vec::new();
    let mut not_text = 0usize;
    // A rule on a symlink lands on its target: a link to a frozen folder (`/bin` -> `usr/bin`)
    // or one planted in a grant (`wf/x` -> `../other-workflow`) would open what it points at.
    // Links get no rule; their targets are covered where they really are.
    let mut rule = |path: PathBuf, rights: &[FsRight]| {
        if disk.kind(&path) == Some(EntryKind::Symlink) {
            return;
        }
        // The plan is JSON, which holds text: an entry whose name is not UTF-8 gets no rule,
        // so it stays closed (what a rule would do is grant).
        if path.to_str().is_none() {
            not_text += 1;
            return;
        }
        let rights: Vec<FsRight> = match disk.target_kind(&path) {
            Some(EntryKind::Dir) => rights.to_vec(),
            Some(_) => rights
                .iter()
                .copied()
                .filter(|r| r.applies_to_files())
                .collect(),
            None => return,
        };
        if !rights.is_empty() {
            rules.push(LandlockRule { path, rights });
        }
    };

    for dir in &frozen {
        for (name, _) in disk.entries(dir) {
            let child = dir.join(&name);
            if frozen.contains(&child) || closed.contains(&child) {
                continue;
            }
            if read_only.iter().any(|h| child.starts_with(h)) {
                rule(child, &read);
            } else {
                rule(child, &common.open_rights);
            }
        }
    }

    // This chat's folders inside the closed roots. A grant's own folder is frozen too, so that
    // a refused entry (present or created later) stays closed: its other entries get the rights.
    let create_dirs = vec![policy.runtime.clone()];
    rule(policy.runtime.clone(), &common.open_rights);
    for grant in &policy.grants {
        let rights = match grant.access {
            Access::ReadWrite => &common.open_rights,
            Access::ReadOnly => &read,
        };
        for (name, _) in disk.entries(&grant.path) {
            if !policy.refused.iter().any(|p| p.matches_name(&name)) {
                rule(grant.path.join(name), rights);
            }
        }
    }
    rules.extend(common.unix_rules.iter().cloned());
    let not_text_note = if not_text > 0 {
        format!("; {not_text} entries beside them whose names are not UTF-8 stay closed")
    } else {
        String::new()
    };

    guarantees.push(Guarantee {
        what: "protected roots closed (read, write, listing) except this chat's folders".into(),
        by: "Landlock alone: every entry beside the path to each root granted, its ancestors frozen".into(),
        enforcement: Enforcement::Partly(format!(
            "no user namespaces: nothing can be created, renamed or removed directly in {} (so `git config --global` and atomic writes of settings there fail), they cannot be listed, and entries created beside them during the chat stay closed{not_text_note}",
            frozen
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    });
    if !policy.hardened.is_empty() {
        let below_home: Vec<String> = frozen_for_harden
            .iter()
            .filter(|p| p.starts_with(&policy.home))
            .map(|p| p.display().to_string())
            .collect();
        guarantees.push(Guarantee {
            what: "persistence paths of the home (shell startup files, autostart entries, systemd user units, git's and ssh's configuration) not written, created, replaced or removed".into(),
            by: "Landlock alone: each reading rights only, the folders that hold them frozen".into(),
            enforcement: Enforcement::Partly(format!(
                "no user namespaces: nothing else can be created, renamed or removed directly in {} either",
                below_home.join(", ")
            )),
        });
    }
    guarantees.push(Guarantee {
        what: "refused entries inside grants closed, also when created later".into(),
        by: "Landlock: each grant's own folder frozen, its other entries granted".into(),
        enforcement: Enforcement::Partly(
            "nothing new can be created directly at a grant's top".into(),
        ),
    });
    guarantees.push(Guarantee {
        what: "blocked programs cannot run".into(),
        by: "Landlock: their folders frozen, every other program there granted".into(),
        enforcement: Enforcement::Partly(
            "a copy brought in under another name would run; the session bus it needs is closed"
                .into(),
        ),
    });
    guarantees.push(Guarantee {
        what: "signals to processes outside refused; their environ unreadable; no process outlives the chat".into(),
        by: "Landlock signal scoping (ABI 6) and its ptrace restriction".into(),
        enforcement: Enforcement::Partly(
            "no PID namespace: processes outside stay visible in /proc (Landlock still refuses reading their memory and environ), and a process the chat leaves behind is not ended".into(),
        ),
    });
    guarantees.extend(common.guarantees.iter().cloned());

    LinuxPlan {
        version: PLAN_VERSION,
        chat: policy.chat.to_string(),
        workdir: policy.runtime.clone(),
        create_dirs,
        create_home_dirs: Vec::new(),
        namespaces: None,
        landlock: common.landlock(rules),
        seccomp: common.seccomp,
        guarantees,
    }
}
