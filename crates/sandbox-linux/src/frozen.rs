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
//!
//! `/dev`: frozen, with rules only for the harmless devices, new terminals and `/dev/shm` (the
//! namespace plan's fresh `/dev` holds the same), so that block devices and a desktop's devices
//! stay closed. The other terminals of the chat's uid stay reachable, which the plan states.
//!
//! The kernel's tunables: `/proc` and `/sys` get reading rights only (a process's own
//! `/proc/self` files cannot be written either: Landlock names paths, and the pids of processes
//! made later are not known). Run as root, every entry outside the writable places gets reading
//! rights only, and each writable place its own rule with the open rights.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sandbox_core::{Access, Policy, Promise};

use crate::plan::common::{
    Common, Kernel, LaunchDisk, PlanError, limits_without_namespaces, loopback_guarantee,
    outermost_existing_roots, seccomp_program,
};
use crate::plan::format::{
    ABI_SCOPING, Enforcement, EntryKind, FsRight, Guarantee, HARMLESS_DEVICES, LandlockRule,
    LimitsPlan, LinuxPlan, NEWEST_KNOWN_ABI, PLAN_VERSION, SeccompPlan, SettingsFile,
};

/// `/proc` and `/sys`: reading rights only in this plan, whatever the uid. (Landlock names paths,
/// so the kernel's tunables cannot be told apart from a process's own files there, nor can the
/// pids of processes made later be named.)
fn kernel_place(path: &Path) -> bool {
    ["/proc", "/sys"].iter().any(|k| path.starts_with(k))
}

/// The machine's `/dev`, which this plan cannot replace by a fresh one as the namespace plan
/// does: frozen, and only [`HARMLESS_DEVICES`] and [`DEV_ALSO`] in it get rules. Everything else
/// there stays closed: block devices (a root chat would read the disk that holds every
/// protected root), the console and virtual terminals, and a desktop session's devices (camera,
/// microphone, input), which its user may open.
const DEV: &str = "/dev";
/// Besides the harmless devices: new terminals (`ptmx`, and `pts`, where a new terminal is
/// opened by name, so that the other terminals of the chat's uid stay reachable: the gap the
/// plan states) and the shared memory folder.
const DEV_ALSO: [&str; 3] = ["ptmx", "pts", "shm"];

fn kept_in_dev(name: &std::ffi::OsStr) -> bool {
    HARMLESS_DEVICES
        .iter()
        .chain(&DEV_ALSO)
        .any(|kept| name == std::ffi::OsStr::new(kept))
}

/// Where a path stands for the rights an entry beside a frozen folder gets.
fn read_only_place(policy: &Policy, path: &Path) -> bool {
    let system =
        policy.system_read_only() && !policy.writable().iter().any(|w| path.starts_with(w));
    kernel_place(path) || system
}

/// The rule that grants `rights` beneath `path`, pushed onto `rules`, for an entry beside a
/// frozen folder. A rule on a symlink lands on its target: a link to a frozen folder (`/bin` ->
/// `usr/bin`) or one planted in a grant (`wf/x` -> `../other-workflow`) would open what it
/// points at, so links get no rule (their targets are covered where they really are). The plan
/// is JSON, which holds text: an entry whose name is not UTF-8 gets no rule, so it stays closed
/// (what a rule would do is grant); `not_text` counts them. A file gets only the rights that
/// apply to files.
pub(super) fn rule_for(
    disk: &dyn LaunchDisk,
    path: PathBuf,
    rights: &[FsRight],
    rules: &mut Vec<LandlockRule>,
    not_text: &mut usize,
) {
    if disk.kind(&path) == Some(EntryKind::Symlink) {
        return;
    }
    if path.to_str().is_none() {
        *not_text += 1;
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
}

/// The folders that hold the blocked programs, each with its ancestors: frozen in both plans, so
/// that a program put in a blocked one's place during the chat (a package upgrade writes the new
/// file beside it and renames it over; a first install creates it) gets no rule and stays
/// closed, whatever happens to the name. Every blocked program whose folder exists counts, there
/// or not at launch, but those whose folder lies inside one of `spared` (the places the namespace
/// plan keeps open to creating entries): those are returned apart.
pub(super) fn blocked_folders<'p>(
    policy: &'p Policy,
    disk: &dyn LaunchDisk,
    spared: &[&Path],
) -> (BTreeSet<PathBuf>, Vec<&'p Path>) {
    let mut frozen = BTreeSet::new();
    let mut not_frozen = Vec::new();
    for program in policy.blocked_programs() {
        let Some(folder) = program.parent().filter(|f| disk.exists(f)) else {
            continue;
        };
        if spared.iter().any(|place| folder.starts_with(place)) {
            not_frozen.push(program.as_path());
        } else {
            frozen.extend(program.ancestors().skip(1).map(Path::to_owned));
        }
    }
    (frozen, not_frozen)
}

/// The most entries walked below the secret folders for their hard-linked files.
const SECRET_WALK: usize = 10_000;

/// The device and inode of each file with more than one name among `secrets` and beneath them
/// (at most [`SECRET_WALK`] entries looked at; symlinks not followed).
fn secret_linked_files(disk: &dyn LaunchDisk, secrets: &[&PathBuf]) -> BTreeSet<(u64, u64)> {
    let mut out = BTreeSet::new();
    let mut todo: Vec<PathBuf> = secrets.iter().map(|p| (*p).clone()).collect();
    let mut looked = 0;
    while let Some(path) = todo.pop() {
        looked += 1;
        if looked > SECRET_WALK {
            break;
        }
        match disk.kind(&path) {
            Some(EntryKind::File) => {
                if let Some(id) = disk.linked_file_id(&path) {
                    out.insert(id);
                }
            }
            Some(EntryKind::Dir) => {
                todo.extend(disk.entries(&path).into_iter().map(|(n, _)| path.join(n)));
            }
            _ => {}
        }
    }
    out
}

pub(super) fn compile(
    policy: &Policy,
    kernel: Kernel,
    disk: &dyn LaunchDisk,
) -> Result<LinuxPlan, PlanError> {
    let abi = kernel.landlock_abi.min(NEWEST_KNOWN_ABI);
    let common = Common::new(policy, abi);
    let limits = limits_without_namespaces(policy)?;
    let mut guarantees = Vec::new();
    let closed_roots = outermost_existing_roots(policy, disk, &mut guarantees);

    // What must stay closed inside the open part: the roots and the blocked programs.
    let mut closed: BTreeSet<PathBuf> = closed_roots.iter().cloned().collect();
    for program in policy.blocked_programs() {
        if disk.exists(program) && !closed_roots.iter().any(|r| program.starts_with(r)) {
            closed.insert(program.clone());
        }
    }
    // The credential places (`secrets = "closed"`): closed like a root where they exist (a link
    // gets no rule anyway: its target, listed too, is closed where it is).
    let secrets_present: Vec<&PathBuf> = policy
        .secrets()
        .iter()
        .filter(|p| matches!(disk.kind(p), Some(EntryKind::Dir | EntryKind::File)))
        .filter(|p| {
            !p.ancestors()
                .skip(1)
                .any(|a| disk.kind(a) == Some(EntryKind::Symlink))
        })
        .filter(|p| !closed_roots.iter().any(|r| p.starts_with(r)))
        .collect();
    closed.extend(secrets_present.iter().map(|p| (*p).clone()));
    // A Landlock rule on a file is on its inode: a hard link the person made to a key, lying in
    // a frozen folder (`~/key-backup`), would get a rule of its own there and open the key at
    // its own path too. The secret files with more than one name, by inode (a folder's walked,
    // up to SECRET_WALK entries), so that such a link gets no rule.
    let secret_inodes = secret_linked_files(disk, &secrets_present);
    let mut frozen: BTreeSet<PathBuf> = BTreeSet::new();
    for path in &closed {
        frozen.extend(path.ancestors().skip(1).map(Path::to_owned));
    }
    // A blocked program missing at launch is closed too, if it is made during the chat.
    frozen.extend(
        blocked_folders(policy, disk, &[])
            .0
            .into_iter()
            .filter(|f| !closed_roots.iter().any(|r| f.starts_with(r))),
    );
    // Persistence paths (harden): read-only where they exist; their folders frozen, so that a
    // missing one cannot be created and none can be replaced.
    let read_only: Vec<&Path> = policy
        .hardened()
        .iter()
        .map(|h| h.path())
        .filter(|p| disk.exists(p))
        .collect();
    let mut frozen_for_harden: BTreeSet<PathBuf> = BTreeSet::new();
    for hardened in policy.hardened() {
        frozen_for_harden.extend(hardened.path().ancestors().skip(1).map(Path::to_owned));
    }
    frozen.extend(frozen_for_harden.iter().cloned());
    // Acted-on settings in the home (`Rule::Settings`): the same construction. A missing one is
    // created by the helper before confinement (an empty folder, or its neutral content) and
    // gets its reading rights here by name. Those in the runtime cannot be closed: the runtime
    // holds everything beneath one rule (the gap reported).
    let mut settings_read_only: Vec<&Path> = Vec::new();
    let mut settings_create: Vec<PathBuf> = Vec::new();
    let mut settings_files: Vec<SettingsFile> = Vec::new();
    let mut frozen_for_settings: BTreeSet<PathBuf> = BTreeSet::new();
    for setting in policy.settings_outside_runtime() {
        let path = setting.path();
        let under_link = path
            .ancestors()
            .skip(1)
            .any(|a| disk.kind(a) == Some(EntryKind::Symlink));
        if under_link {
            continue;
        }
        match disk.kind(path) {
            Some(EntryKind::Symlink) => continue,
            Some(_) => {}
            None if !path.starts_with(policy.home()) => continue,
            // With `harden` the home's top is frozen: nothing can be made there, so a missing
            // one there is closed without being created in the person's home.
            None if policy.home_top_closes(path) => continue,
            None if setting.is_folder() => settings_create.push(path.to_owned()),
            None => settings_files.push(SettingsFile {
                path: path.to_owned(),
                text: setting.empty().to_owned(),
            }),
        }
        settings_read_only.push(path);
        frozen_for_settings.extend(path.ancestors().skip(1).map(Path::to_owned));
    }
    frozen.extend(frozen_for_settings.iter().cloned());
    let dev = Path::new(DEV);
    if disk.exists(dev) {
        frozen.insert(dev.to_owned());
    }

    let read: Vec<FsRight> = common
        .open_rights
        .iter()
        .copied()
        .filter(|r| matches!(r, FsRight::Execute | FsRight::ReadFile | FsRight::ReadDir))
        .collect();
    let mut rules: Vec<LandlockRule> = Vec::new();
    let mut not_text = 0usize;
    let mut rule = |path: PathBuf, rights: &[FsRight]| {
        rule_for(disk, path, rights, &mut rules, &mut not_text);
    };

    for dir in &frozen {
        for (name, _) in disk.entries(dir) {
            let child = dir.join(&name);
            if frozen.contains(&child) || closed.contains(&child) {
                continue;
            }
            if !secret_inodes.is_empty()
                && disk
                    .linked_file_id(&child)
                    .is_some_and(|id| secret_inodes.contains(&id))
            {
                // Another name of a secret file: no rule, or the secret would be open at its
                // own path as well.
                continue;
            }
            if dir == dev && !kept_in_dev(&name) {
                continue;
            }
            if settings_read_only.iter().any(|s| child.starts_with(s)) {
                // Pushed below, by name (it may not exist yet at this look).
                continue;
            }
            if read_only.iter().any(|h| child.starts_with(h))
                || read_only_place(policy, &child)
                || super::harden::read_only_entry(policy, dir, &child, disk)
            {
                rule(child, &read);
            } else {
                rule(child, &common.open_rights);
            }
        }
    }
    // Run as root, a writable place inside a read-only one (`/var/tmp` in `/var`) gets its own
    // rule; one that is frozen (the home, above a protected root) has its entries granted above.
    if policy.system_read_only() {
        for place in policy.writable() {
            let inside_read_only = read_only_place(policy, place.parent().unwrap_or(place));
            if !frozen.contains(place) && !kernel_place(place) && inside_read_only {
                rule(place.clone(), &common.open_rights);
            }
        }
    }

    // This chat's folders inside the closed roots. A grant's own folder is frozen too, so that
    // a refused entry (present or created later) stays closed: its other entries get the rights.
    //
    // The chat's folders get the open rights but `ioctl_dev` (which only a device file needs):
    // Landlock refuses a link or a rename that would give a file more rights than it had, so a
    // grant's or the runtime's file cannot be linked into the open places (`/tmp`), where a
    // later chat with other grants would read and write it.
    let create_dirs = vec![policy.runtime().to_owned()];
    let own: Vec<FsRight> = common
        .open_rights
        .iter()
        .copied()
        .filter(|r| *r != FsRight::IoctlDev)
        .collect();
    rule(policy.runtime().to_owned(), &own);
    let listings = disk.entries_of(&policy.grants().iter().map(|g| &*g.path).collect::<Vec<_>>());
    for (grant, entries) in policy.grants().iter().zip(listings) {
        let rights = match grant.access {
            Access::ReadWrite => &own,
            Access::ReadOnly => &read,
        };
        let refused = policy.refused_entries(
            grant,
            entries.iter().map(|(name, kind)| (name.as_os_str(), *kind)),
        );
        for (name, _) in &entries {
            let path = grant.path.join(name);
            if !refused.present.iter().any(|(p, _)| *p == path) {
                rule(path, rights);
            }
        }
    }
    // `harden`: the CLIs' state folders missing at launch, made before the rules are opened
    // (nothing can be made in the frozen home during the chat).
    let mut create_home_dirs = super::harden::state_folders_to_make(policy, disk);
    // A settings folder made below (by its own rule) is not made twice.
    create_home_dirs.retain(|d| !settings_create.contains(d));
    for folder in &create_home_dirs {
        if folder.to_str().is_some() {
            rules.push(LandlockRule {
                path: folder.clone(),
                rights: common.open_rights.clone(),
            });
        }
    }
    for path in &settings_read_only {
        if frozen.contains(*path) || path.to_str().is_none() {
            continue;
        }
        let folder = settings_create.iter().any(|c| c == path)
            || disk.target_kind(path) == Some(EntryKind::Dir);
        let rights: Vec<FsRight> = read
            .iter()
            .copied()
            .filter(|r| folder || r.applies_to_files())
            .collect();
        rules.push(LandlockRule {
            path: path.to_path_buf(),
            rights,
        });
    }
    rules.extend(common.unix_rules.iter().cloned());
    let not_text_note = if not_text > 0 {
        format!("; {not_text} entries beside them whose names are not UTF-8 stay closed")
    } else {
        String::new()
    };

    let frozen_list = frozen
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    guarantees.push(Guarantee::new(
        Promise::ProtectedRoot,
        "Landlock alone: every entry beside the path to each root granted, its ancestors frozen",
        Enforcement::Partly(format!(
            "no user namespaces: nothing can be created, renamed or removed directly in {frozen_list} (so `git config --global` and atomic writes of settings there fail), they cannot be listed, and entries created beside them during the chat stay closed{not_text_note}"
        )),
    ));
    guarantees.push(Guarantee::new(
        Promise::Pinned,
        "Landlock: no right at all on the frozen folders, so none of them can be renamed",
        Enforcement::Fully,
    ));
    if !policy.secrets().is_empty() {
        // A missing one is closed when its folder is frozen (an entry made there after launch
        // has no rule); elsewhere, made during the chat, it is open.
        let open_if_made: Vec<String> = policy
            .secrets()
            .iter()
            .filter(|p| disk.kind(p).is_none())
            .filter(|p| !p.parent().is_some_and(|parent| frozen.contains(parent)))
            .filter(|p| {
                !p.ancestors()
                    .skip(1)
                    .any(|a| disk.kind(a) == Some(EntryKind::Symlink))
            })
            .map(|p| p.display().to_string())
            .collect();
        let note = if open_if_made.is_empty() {
            String::new()
        } else {
            format!(
                "; missing at launch in a folder not frozen, so open if made during the chat: {}",
                open_if_made.join(", ")
            )
        };
        guarantees.push(Guarantee::new(
            Promise::Secrets,
            "Landlock alone: no rule on each present one (rules are on inodes: a file saved by rename over it, a new one in its frozen folder, get none either), its ancestors frozen",
            Enforcement::Partly(format!(
                "a hard link the person made elsewhere before the chat is another name, open; the cost of the frozen folders is the protected roots' above{note}"
            )),
        ));
    }
    if !policy.hardened().is_empty() {
        let below_home: Vec<String> = frozen_for_harden
            .iter()
            .filter(|p| p.starts_with(policy.home()))
            .map(|p| p.display().to_string())
            .collect();
        guarantees.push(Guarantee::new(
            Promise::Persistence,
            "Landlock alone: each reading rights only, the folders that hold them frozen",
            Enforcement::Partly(format!(
                "no user namespaces: nothing else can be created, renamed or removed directly in {} either; every file at the home's top is read-only but the CLIs' state files; {}",
                below_home.join(", "),
                sandbox_core::HARDEN_LEAVES_OPEN
            )),
        ));
    }
    if policy.git_closed_grants().next().is_some() {
        // Landlock only allows: closing `.git/hooks` inside a read-write grant would mean
        // freezing every folder from the grant down to each repository (nothing could be
        // created or renamed in them: a chat's work in the repository stops), and a missing
        // one could not be made read-only at all. Not built; said.
        guarantees.push(Guarantee::new(
            Promise::GitMetadata,
            "Landlock alone: not closed",
            Enforcement::Not(
                "without user namespaces a repository's .git/hooks, .git/config and .gitmodules in a read-write grant stay writable: closing them with Landlock alone would freeze every folder from the grant down to the repository: grant repositories read-only, or launch where user namespaces can be made".into(),
            ),
        ));
    }
    if !policy.settings().is_empty() {
        let below_home: Vec<String> = frozen_for_settings
            .iter()
            .filter(|p| p.starts_with(policy.home()) && p.as_path() != policy.home())
            .map(|p| p.display().to_string())
            .collect();
        guarantees.push(Guarantee::new(
            Promise::Settings,
            "Landlock alone: those in the home reading rights only, missing ones created first, the folders that hold them frozen",
            Enforcement::Partly(format!(
                "no user namespaces: those in the chat's runtime (the CLIs' project settings) stay writable, read by this chat's later launches only; nothing else can be created, renamed or removed directly in {} either (a CLI's first state files there fail)",
                below_home.join(", ")
            )),
        ));
    }
    guarantees.push(Guarantee::new(
        Promise::Refused,
        "Landlock: each grant's own folder frozen, its other entries granted",
        Enforcement::Partly(
            "nothing new can be created directly at a grant's top, and an entry there that a process outside creates or replaces by rename during the chat (an allowed file saved atomically among them) is closed to the chat from then on; a symlink named like a refused entry leads where it points (Landlock judges the target, which is granted or closed at its own path), its name is not closed".into(),
        ),
    ));
    guarantees.push(Guarantee::new(
        Promise::Blocked,
        "Landlock: their folders frozen, every other program there granted",
        Enforcement::Partly(
            "a copy brought in under another name would run; the session bus it needs is closed (unix sockets)".into(),
        ),
    ));
    guarantees.push(Guarantee::new(
        Promise::KernelTunables,
        "Landlock: /proc and /sys reading rights only",
        Enforcement::Partly(
            "no mount namespace: the kernel's secrets that every user may read (sched_debug, timer_list) stay readable, and a process's own /proc files cannot be written either".into(),
        ),
    ));
    if policy.system_read_only() {
        guarantees.push(Guarantee::new(
            Promise::SystemReadOnly,
            "Landlock: everything outside the writable places and this chat's folders has reading rights only; seccomp: no file's metadata can be changed",
            Enforcement::Partly(
                "without namespaces nothing is remounted: Landlock keeps the system's files from being written, seccomp keeps their mode, owner, times, extended attributes and inode flags from being changed, by refusing those calls everywhere (so `chmod`, `chown`, `touch` of an existing file and `setfacl` fail in the chat's writable places too)".into(),
            ),
        ));
    }
    // Their arguments are not a ptrace access: /proc/PID/cmdline stays readable (tests/attacks.rs).
    let visible = "processes outside stay visible in /proc, and so do their arguments (another chat's prompt, its MCP bridge's configuration); Landlock still refuses reading their memory and environ";
    guarantees.push(if abi >= ABI_SCOPING {
        Guarantee::new(
            Promise::OutsideProcesses,
            "Landlock signal scoping (ABI 6) and its ptrace restriction; seccomp: prlimit64 and the scheduling and priority calls (setpriority, sched_setscheduler, sched_setparam, sched_setattr, sched_setaffinity, ioprio_set) only on the calling process itself",
            Enforcement::Partly(format!("no PID namespace: {visible}; a program may not renice or pin its own threads or children by pid either")),
        )
    } else {
        Guarantee::new(
            Promise::OutsideProcesses,
            "Landlock's ptrace restriction; seccomp: prlimit64 and the scheduling and priority calls only on the calling process itself",
            Enforcement::Partly(format!(
                "no PID namespace, and Landlock ABI {abi} has no signal scoping (ABI 6): every process of the chat's uid outside can be signalled (the launcher, the person's shell, other chats); {visible}"
            )),
        )
    });
    guarantees.push(Guarantee::new(
        Promise::ChatEnds,
        "nothing: the program takes the helper's place",
        Enforcement::Not(
            "no PID namespace: a process the chat leaves behind (a daemon) is not ended, and a program that ignores SIGHUP and SIGTERM keeps running after its terminal hangs up".into(),
        ),
    ));
    guarantees.push(Guarantee::new(
        Promise::Ipc,
        "seccomp: the SysV IPC and POSIX message queue calls refused (no IPC namespace without user namespaces)",
        Enforcement::Partly(
            "POSIX shared memory and semaphores are files in the machine's /dev/shm, where the chat can reach those of processes outside that its uid may open".into(),
        ),
    ));
    guarantees.push(Guarantee::new(
        Promise::Helper,
        "no helper process stays: the program takes its place (exec); descriptors above stderr are closed at exec",
        Enforcement::Fully,
    ));
    guarantees.extend(common.guarantees.iter().map(|g| {
        if g.id == Promise::Terminal.id() {
            Guarantee::new(
                Promise::Terminal,
                "seccomp; /dev frozen but for the harmless devices, new terminals and /dev/shm",
                Enforcement::Partly(
                    "no mount namespace: the other terminals of the chat's uid in /dev/pts (another chat's pane, the person's shells) can be opened, what is typed into them read and their screens written, since a new terminal is opened there by name".into(),
                ),
            )
        } else {
            g.clone()
        }
    }));
    // `network = "isolated"` never gets here (`plan::compile` refuses it without namespaces).
    guarantees.push(loopback_guarantee(None));

    let landlock = common.landlock(rules);
    let seccomp = SeccompPlan {
        refuse_shared_ipc: true,
        // Root owns the machine's files, and nothing here makes them read-only to metadata.
        refuse_metadata_changes: policy.system_read_only(),
        refuse_others_scheduling: true,
        ..common.seccomp
    };
    guarantees.extend(limits);
    Ok(LinuxPlan {
        version: PLAN_VERSION,
        chat: policy.chat().to_string(),
        workdir: policy.runtime().to_owned(),
        create_dirs,
        // The fallback freezes each grant's top: nothing can be made there, nothing is made.
        stand_in_dirs: Vec::new(),
        denials_record: None,
        create_home_dirs: create_home_dirs
            .into_iter()
            .chain(settings_create)
            .collect(),
        create_home_files: Vec::new(),
        create_settings_files: settings_files,
        namespaces: None,
        limits: LimitsPlan {
            processes: policy.limits().processes,
            processes_configured: false,
            memory: None,
        },
        landlock,
        seccomp_program: seccomp_program(&seccomp)?,
        seccomp,
        guarantees,
        frozen: frozen
            .into_iter()
            .chain(policy.grants().iter().map(|g| g.path.clone()))
            .collect(),
    })
}
