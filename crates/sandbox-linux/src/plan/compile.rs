//! Compiling a [`Policy`] into the Linux plan: the mounts of a private mount namespace, the
//! Landlock ruleset and the seccomp filter that the `cli-sandbox exec` helper applies.
//!
//! The plan is data ([`super::format`], printable by `cli-sandbox profile --backend landlock`);
//! it is compiled against what the file system holds at launch (which protected roots exist,
//! which refused entries are present) and applied by `crate::apply` on Linux only. What is
//! refused, blocked, read-only or closed is decided by the policy (`sandbox-core`); this file
//! only says which mount, rule or filter carries each decision out, and how far ([`Guarantee`]).
//! Without namespaces it hands the policy to the fallback (`frozen.rs`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sandbox_core::{Access, Network, Op, Policy, Promise};

use super::common::*;
use super::format::*;

impl LimitsPlan {
    fn new(limits: sandbox_core::Limits) -> LimitsPlan {
        LimitsPlan {
            processes: limits.processes,
            processes_configured: limits.processes_configured,
            memory: limits.memory.map(|m| m.0),
        }
    }
}

/// The temporary folders a chat gets of its own.
const TMP_PLACES: [&str; 2] = ["/tmp", "/var/tmp"];

/// The private `/tmp` of the namespace plan: each temporary folder that is a folder of its own
/// (not a symlink) here; what to bind back is filled in by [`bind_back_into_tmp`].
fn private_tmp(policy: &Policy, disk: &dyn LaunchDisk) -> PrivateTmp {
    let places = TMP_PLACES
        .iter()
        .map(Path::new)
        // A folder, not a symlink (one look, shared with the rest of the compile).
        .filter(|path| disk.kind(path) == Some(EntryKind::Dir))
        .map(|path| TmpPlace {
            path: path.to_owned(),
            bind_back: Vec::new(),
        })
        .collect();
    PrivateTmp {
        size: policy.limits().tmp.0,
        places,
    }
}

/// Every path of the plan's own that lies inside a temporary folder (the chat's home, its
/// folders, the protected roots, their pins and covers, what the helper makes), outermost only:
/// bound back into the chat's own tmpfs, so that the plan finds what it names. The machine's
/// other entries there stay out of reach. Landlock's rules are not among them: a rule on an
/// entry that is not there is left out (it only grants).
fn bind_back_into_tmp(tmp: &mut PrivateTmp, policy: &Policy, plan: &LinuxPlan) {
    let mut named: Vec<&Path> = vec![policy.home(), policy.runtime(), &plan.workdir];
    named.extend(policy.protected().iter().map(PathBuf::as_path));
    named.extend(policy.grants().iter().map(|g| g.path.as_path()));
    named.extend(policy.writable().iter().map(PathBuf::as_path));
    named.extend(policy.unix_socket_allow().iter().map(PathBuf::as_path));
    named.extend(policy.blocked_programs().iter().map(PathBuf::as_path));
    named.extend(plan.create_dirs.iter().map(PathBuf::as_path));
    named.extend(plan.create_home_dirs.iter().map(PathBuf::as_path));
    named.extend(plan.create_home_files.iter().map(PathBuf::as_path));
    named.extend(plan.create_settings_files.iter().map(|f| f.path.as_path()));
    if let Some(ns) = &plan.namespaces {
        for step in &ns.mounts {
            match step {
                MountStep::Pin { path }
                | MountStep::PinLink { path }
                | MountStep::Hide { path, .. }
                | MountStep::ReadOnly { path, .. }
                | MountStep::Keep { path, .. } => named.push(path),
                MountStep::Mask { root, bind_back } => {
                    named.push(root);
                    named.extend(bind_back.iter().map(|b| b.path.as_path()));
                }
            }
        }
    }
    for place in &mut tmp.places {
        let mut inside: Vec<&Path> = named
            .iter()
            .copied()
            .filter(|p| p.starts_with(&place.path) && *p != place.path)
            .collect();
        inside.sort_by_key(|p| p.as_os_str().len());
        for p in inside {
            if !place.bind_back.iter().any(|b| p.starts_with(b)) {
                place.bind_back.push(p.to_owned());
            }
        }
    }
}

/// What the namespace plan says of `[limits]`, root or not.
fn limits_guarantees(policy: &Policy, tmp: &PrivateTmp) -> Vec<Guarantee> {
    let limits = policy.limits();
    let mut out = Vec::new();
    out.push(if policy.system_read_only() {
        Guarantee::new(
            Promise::Processes,
            format!(
                "a pids cgroup of the chat's own (pids.max {} with init), made by the helper",
                limits.processes + 1
            ),
            if limits.processes_configured {
                Enforcement::Fully
            } else {
                Enforcement::Partly(
                    "root is exempt from RLIMIT_NPROC: where the launcher can make no pids cgroup (`doctor` says whether it can here) the default limit does not hold; a configured one refuses the launch there".into(),
                )
            },
        )
    } else {
        Guarantee::new(
            Promise::Processes,
            format!(
                "RLIMIT_NPROC {} set by init, counted by the kernel per user namespace and uid (Linux 5.14 and later): the chat's own, a namespace it makes counted in it",
                limits.processes + 1
            ),
            Enforcement::Fully,
        )
    });
    out.push(match limits.memory {
        Some(m) => Guarantee::new(
            Promise::Memory,
            format!(
                "a memory cgroup of the chat's own ({m}), made by the helper, swap included; tmpfs pages (its /tmp, /dev/shm) are charged to it; the launch is refused where none can be made"
            ),
            Enforcement::Fully,
        ),
        None => Guarantee::new(
            Promise::Memory,
            "nothing: `[limits] memory` is not set",
            Enforcement::Not(
                "no `[limits] memory` configured: the chat may use whatever the launcher may".into(),
            ),
        ),
    });
    out.push(Guarantee::new(
        Promise::PrivateTmp,
        format!(
            "mount namespace: a tmpfs of {} on each of {}, the chat's folders inside bound back, and the entry of the machine's temporary folder that holds the chat's program or the launcher (a checkout or an install there)",
            sandbox_core::Size(tmp.size),
            tmp.places
                .iter()
                .map(|p| p.path.display().to_string())
                .chain(["/dev/shm".to_owned()])
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Enforcement::Fully,
    ));
    out
}

/// The egress part of the plan, as the policy asks.
fn egress_plan(policy: &Policy) -> Option<EgressPlan> {
    let egress = policy.egress()?;
    Some(EgressPlan {
        chat: policy.chat().to_string(),
        port: EGRESS_PORT,
        allowed_hosts: egress.allowed_hosts.clone(),
        denied_hosts: egress.denied_hosts.clone(),
        log: egress.log.clone(),
        resolve: Default::default(),
    })
}

/// The namespace's side of the link: addresses of its own, from ranges no network routes
/// (198.18.0.0/15 is set aside for benchmarks, RFC 2544; the IPv6 one is a unique local
/// prefix), so that they hide none of the machine's neighbours. The gateway is pasta; it also
/// answers DNS.
const ADDRESS4: &str = "198.18.0.2";
const PREFIX4: &str = "24";
const GATEWAY4: &str = "198.18.0.1";
const ADDRESS6: &str = "fdc1:5a0d:ec5e::2";
const GATEWAY6: &str = "fdc1:5a0d:ec5e::1";
/// The name of the namespace's outer interface.
const INTERFACE: &str = "eth0";

/// The network part of the plan, as the policy asks, or why it cannot be had here.
fn network_plan(policy: &Policy, disk: &dyn LaunchDisk) -> Result<Option<NetworkPlan>, PlanError> {
    // `allowlist` has no pasta: its only way out is the egress proxy ([`egress_plan`]).
    if policy.network() != Network::Isolated {
        return Ok(None);
    }
    let pasta = PathBuf::from(PASTA);
    if disk.target_kind(&pasta) != Some(EntryKind::File) {
        return Err(PlanError::NoPasta { path: pasta });
    }
    // The helper runs pasta outside the sandbox, as the launcher's user: a chat that could
    // replace it (or put a file beside it: pasta runs its `.avx2` twin from its own folder)
    // would run a program of its choice there at the next launch. A root chat writes only where
    // the policy says (its own files' permissions are the helper's check, at launch).
    if policy.system_read_only() {
        let folder = pasta.parent().unwrap_or(Path::new("/"));
        for path in [pasta.as_path(), folder] {
            if policy.decide(Op::Write, path).allowed {
                return Err(PlanError::PastaWritable {
                    path: path.to_owned(),
                });
            }
        }
    }
    let args = [
        "--foreground",
        "--config-net",
        "--ns-ifname",
        INTERFACE,
        "--tcp-ports",
        "none",
        "--udp-ports",
        "none",
        "--tcp-ns",
        "none",
        "--udp-ns",
        "none",
        "--no-map-gw",
        "--no-netns-quit",
        "--no-dhcp",
        "--no-dhcpv6",
        "--address",
        ADDRESS4,
        "--netmask",
        PREFIX4,
        "--gateway",
        GATEWAY4,
        "--address",
        ADDRESS6,
        "--gateway",
        GATEWAY6,
        "--dns-forward",
        GATEWAY4,
    ];
    Ok(Some(NetworkPlan {
        pasta,
        pasta_args: args.iter().map(|a| (*a).to_owned()).collect(),
        interface: INTERFACE.to_owned(),
        dns: GATEWAY4.to_owned(),
    }))
}

/// What the plan says of the network with `network = "allowlist"`: attacked by
/// `tests/egress.rs` (as root and as an ordinary user, each way with its unconfined control).
fn egress_guarantee(egress: &EgressPlan) -> Guarantee {
    Guarantee::new(
        Promise::LoopbackTcp,
        format!(
            "a network namespace of the chat's own with only `lo`, whose one listener (127.0.0.1:{}) is the egress proxy's, served by the helper outside: only {} (deny wins: {}) by HTTP and HTTPS (CONNECT, the TLS server name checked against the target); no other address of the machine or anywhere, no UDP, DNS, IPv6, raw or packet socket has a route out; each decision a line in {}",
            egress.port,
            egress.allowed_hosts.join(", "),
            if egress.denied_hosts.is_empty() {
                "none denied".to_owned()
            } else {
                egress.denied_hosts.join(", ")
            },
            egress.log.display()
        ),
        Enforcement::Fully,
    )
}

/// A [`LaunchDisk`] that looks at each path's kind once and keeps the answer, for one compile.
struct LookedOnce<'d> {
    disk: &'d dyn LaunchDisk,
    kinds: std::cell::RefCell<std::collections::HashMap<PathBuf, Option<EntryKind>>>,
}

impl<'d> LookedOnce<'d> {
    fn new(disk: &'d dyn LaunchDisk) -> LookedOnce<'d> {
        LookedOnce {
            disk,
            kinds: Default::default(),
        }
    }
}

impl LaunchDisk for LookedOnce<'_> {
    fn exists(&self, path: &Path) -> bool {
        self.disk.exists(path)
    }
    fn kind(&self, path: &Path) -> Option<EntryKind> {
        if let Some(kind) = self.kinds.borrow().get(path) {
            return *kind;
        }
        let kind = self.disk.kind(path);
        self.kinds.borrow_mut().insert(path.to_owned(), kind);
        kind
    }
    fn entries(&self, dir: &Path) -> Vec<(OsString, EntryKind)> {
        self.disk.entries(dir)
    }
    fn entries_of(&self, dirs: &[&Path]) -> Vec<Vec<(OsString, EntryKind)>> {
        self.disk.entries_of(dirs)
    }
    fn target_kind(&self, path: &Path) -> Option<EntryKind> {
        self.disk.target_kind(path)
    }
    fn read_start(&self, path: &Path, limit: usize) -> Option<Vec<u8>> {
        self.disk.read_start(path, limit)
    }
    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        self.disk.canonical(path)
    }
    fn linked_file_id(&self, path: &Path) -> Option<(u64, u64)> {
        self.disk.linked_file_id(path)
    }
}

/// Compiles a policy into the plan the helper applies.
pub fn compile(
    policy: &Policy,
    kernel: Kernel,
    disk: &dyn LaunchDisk,
) -> Result<LinuxPlan, PlanError> {
    if kernel.landlock_abi == 0 {
        return Err(PlanError::NoLandlock);
    }
    // Each path's kind looked at once in this compile, whichever part asks (the persistence
    // paths, the settings, the frozen folders and the kernel's places share ancestors); afresh
    // at the next compile.
    let looked = LookedOnce::new(disk);
    let disk: &dyn LaunchDisk = &looked;
    if !kernel.namespaces {
        // Without a user namespace no network namespace can be made: refused, never shared
        // silently.
        if policy.network() == Network::Isolated {
            return Err(PlanError::IsolatedNeedsNamespaces);
        }
        // The proxy can be the only route out only from a network namespace of the chat's own.
        if policy.network() == Network::Allowlist {
            return Err(PlanError::AllowlistNeedsNamespaces);
        }
        return crate::frozen::compile(policy, kernel, disk);
    }
    let network = network_plan(policy, disk)?;
    let abi = kernel.landlock_abi.min(NEWEST_KNOWN_ABI);
    let mut guarantees = Vec::new();
    let create_dirs = vec![policy.runtime().to_owned()];

    let outermost = outermost_existing_roots(policy, disk, &mut guarantees);
    // What each path is, looked at once in this compile, shared by both (they share ancestors).
    let mut seen: Vec<(&Path, Option<EntryKind>)> = Vec::new();
    let hardened = harden_in_namespace(policy, disk, &mut seen);
    let settings = settings_in_namespace(policy, disk, &mut seen);
    let secrets = secrets_in_namespace(policy, disk, &mut seen);

    // Every path here is canonical, so its ancestors are prefixes of its bytes, compared and
    // counted as bytes (`Path`'s `==` and `components()` parse every name, at every pin): a
    // path's depth is its number of slashes (the root, one slash and one name, is not pinned).
    let mut pins: Vec<PathBuf> = Vec::new();
    for path in outermost
        .iter()
        .chain(hardened.pinned_below.iter())
        .chain(settings.pinned_below.iter())
        .chain(secrets.pinned_below.iter())
    {
        for ancestor in path.ancestors().skip(1) {
            // `OsStr`'s `==` compares bytes.
            let name = ancestor.as_os_str();
            if name != "/" && !pins.iter().any(|p| p.as_os_str() == name) {
                pins.push(ancestor.to_owned());
            }
        }
    }
    pins.sort_by_cached_key(|p| slashes(p));

    let mut mounts: Vec<MountStep> = pins
        .iter()
        .map(|p| MountStep::Pin { path: p.clone() })
        .collect();
    for root in &outermost {
        let mut bind_back: Vec<BindBack> = policy
            .writable_and_readable()
            .filter(|(path, _)| path.starts_with(root))
            .map(|(path, access)| BindBack {
                path: path.to_owned(),
                access,
            })
            .collect();
        // Outer folders first, so that a read-write folder inside a read-only grant lands on top.
        bind_back.sort_by_cached_key(|b| b.path.components().count());
        mounts.push(MountStep::Mask {
            root: root.clone(),
            bind_back,
        });
        guarantees.push(Guarantee::about(
            Promise::ProtectedRoot,
            root,
            "mount namespace: empty read-only tmpfs, this chat's folders bound back",
            Enforcement::Fully,
        ));
    }
    if !pins.is_empty() {
        guarantees.push(Guarantee::new(
            Promise::Pinned,
            "each is a mount point in the sandbox (EBUSY)",
            Enforcement::Fully,
        ));
    }

    // Refused entries inside grants (not the runtime), as the policy works them out.
    let mut made_later = false;
    let mut stand_in_dirs = Vec::new();
    let mut guards = Vec::new();
    if kernel.fuse {
        // The guard decides by name at each lookup: no stand-in, no folder made for a pattern.
        let refused: Vec<String> = policy
            .refused()
            .iter()
            .map(|p| p.as_str().to_owned())
            .collect();
        if !refused.is_empty() {
            for grant in policy.grants() {
                guards.push(GuardPlan {
                    path: grant.path.clone(),
                    access: grant.access,
                    refused: refused.clone(),
                });
            }
        }
        // The deepest first: an outer guard's daemon reaches an inner grant through its guard.
        guards.sort_by_key(|g| std::cmp::Reverse(g.path.components().count()));
    } else {
        let listings =
            disk.entries_of(&policy.grants().iter().map(|g| &*g.path).collect::<Vec<_>>());
        for (grant, entries) in policy.grants().iter().zip(listings) {
            let refused = policy.refused_entries(
                grant,
                entries.iter().map(|(name, kind)| (name.as_os_str(), *kind)),
            );
            for (path, kind) in refused.present {
                // A present folder of a read-write grant is held too (`stand_in_dirs`), so that
                // a launch that made it does not remove it while this chat's stand-in is on it.
                if kind == EntryKind::Dir && grant.access == Access::ReadWrite {
                    stand_in_dirs.push(path.clone());
                }
                mounts.push(MountStep::Hide {
                    path,
                    dir: kind == EntryKind::Dir,
                });
            }
            for path in refused.create {
                stand_in_dirs.push(path.clone());
                mounts.push(MountStep::Hide { path, dir: true });
            }
            made_later |= refused.made_later;
        }
    }
    if !policy.grants().is_empty() && kernel.fuse {
        guarantees.push(Guarantee::new(
            Promise::Refused,
            "mount namespace: a FUSE guard over each grant refuses, at every lookup, the names a pattern matches at the grant's top (a database's SQLite sidecars with it), whatever processes outside do to them during the chat (an atomic save, a swapped folder, a new entry, one made by rename); an entry seen under a refused name stays refused under another",
            Enforcement::Partly(
                "content the outside writes under an allowed name before renaming it onto a refused one (an atomic save's temporary file, `planning.new`) is readable under that name while it has it, and through a handle the chat opened then: give such temporary files names a pattern refuses; locks taken in the chat are not seen outside".to_owned(),
            ),
        ));
    } else if !policy.grants().is_empty() {
        guarantees.push(Guarantee::new(
            Promise::Refused,
            "mount namespace: each covered by an empty unreadable entry of its kind (a symlink by a file); folder patterns created empty first; a database's SQLite sidecars with it",
            // A stand-in is a mount on a name: the kernel detaches it in every namespace when a
            // process outside renames over or removes that name (tests/entries_hold.rs).
            Enforcement::Partly(format!(
                "/dev/fuse cannot be opened here, so the FUSE guard is off (give /dev/fuse mode 0666): a refused entry that a process outside replaces by rename during the chat (an atomic save, a swapped folder, a WAL begun anew) or creates (a new late.db, a *.db made by rename) is not covered, in read-only grants too{}",
                if made_later {
                    "; nor is one that the chat creates itself in a read-write grant (it holds only what the chat wrote)"
                } else {
                    ""
                }
            )),
        ));
    }

    if !policy.hardened().is_empty() {
        mounts.extend(hardened.mounts);
        guarantees.push(hardened.guarantee);
    }
    if !policy.settings().is_empty() {
        mounts.extend(settings.mounts);
        guarantees.push(settings.guarantee);
    }

    // After harden's and the settings' mounts, so that a read-only bind of a persistence path
    // (`~/.npmrc`) cannot land over its stand-in.
    if let Some(guarantee) = secrets.guarantee {
        mounts.extend(secrets.mounts);
        guarantees.push(guarantee);
    }

    let git = git_in_namespace(policy, disk);
    let mut create_home_dirs = hardened.create;
    create_home_dirs.extend(settings.create);
    let mut create_home_files = hardened.create_files;
    if let Some(guarantee) = git.guarantee {
        mounts.extend(git.mounts);
        create_home_dirs.extend(git.create);
        create_home_files.extend(git.create_files);
        guarantees.push(guarantee);
    }

    let mut hidden_programs = 0;
    for program in policy.blocked_programs() {
        if disk.kind(program) == Some(EntryKind::File) {
            mounts.push(MountStep::Hide {
                path: program.clone(),
                dir: false,
            });
            hidden_programs += 1;
        }
    }

    let kernel_steps = kernel_mounts(policy, disk);
    guarantees.push(Guarantee::new(
        Promise::KernelTunables,
        "mount namespace: each bound read-only onto itself in the chat's own /proc and /sys; the kernel's secrets (sched_debug, timer_list, kcore, ...) covered",
        Enforcement::Fully,
    ));
    // `/dev` and `/proc` are the sandbox's own (passes 5 and 6 of the mounts): nothing of the
    // host's to give back there.
    // The temporary folders are the chat's own tmpfs (`private_tmp`): not the machine's given
    // back (what of the chat's lies in them is bound back there).
    let tmp = private_tmp(policy, disk);
    let system_read_only = policy.system_read_only().then(|| {
        policy
            .writable()
            .iter()
            .filter(|p| !p.starts_with("/dev") && !p.starts_with("/proc"))
            .filter(|p| !tmp.places.iter().any(|t| t.path == **p))
            .cloned()
            .collect()
    });
    if policy.system_read_only() {
        guarantees.push(Guarantee::new(
            Promise::SystemReadOnly,
            format!(
                "mount namespace: every mount read-only, then writable again only at {} and this chat's folders",
                policy
                    .writable()
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            // The root of a configured writable place is the host's own folder, bound back
            // writable: its owner (root) may change its mode. /tmp and /var/tmp are the chat's own
            // tmpfs (tests/attacks.rs).
            Enforcement::Partly(
                "a configured writable place itself (`[policy] writable`) can have its mode, times and extended attributes changed; /tmp and /var/tmp are the chat's own".into(),
            ),
        ));
    }
    guarantees.push(Guarantee::new(
        Promise::Ipc,
        "an IPC namespace of the chat's own",
        Enforcement::Fully,
    ));

    let common = Common::new(policy, abi);
    // The open rule on `/` gives way to rules on inodes where folders are frozen: the blocked
    // programs' folders (listing only) and, with `harden`, the home and its ancestors (reading).
    let (mut rules, not_text, not_frozen, made) = open_tree_rules(policy, disk, &common);
    create_home_dirs.extend(made);
    rules.extend(common.unix_rules.iter().cloned());
    let mut not_text_note = if not_text > 0 {
        format!("; {not_text} entries beside them whose names are not UTF-8 cannot be opened")
    } else {
        String::new()
    };
    if !not_frozen.is_empty() {
        not_text_note.push_str(&format!(
            "; {} lie where the chat creates files, so their folders are not frozen: each holds by its stand-in alone, which a process outside undoes by renaming a file over its name",
            not_frozen
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    guarantees.push(Guarantee::new(
        Promise::Blocked,
        format!(
            "each present one ({hidden_programs}) covered by an empty unreadable file; Landlock: their folders frozen (listable), every other entry there granted, so a program renamed over a blocked one's name or made there during the chat has no right"
        ),
        Enforcement::Partly(format!(
            "a copy brought in under another name would run; the session bus it needs is closed (unix sockets); nothing can be created or renamed directly in their folders and their ancestors, and a program installed or upgraded there during the chat cannot be run{not_text_note}"
        )),
    ));
    guarantees.push(if abi >= ABI_SCOPING {
        Guarantee::new(
            Promise::OutsideProcesses,
            "PID namespace with its own /proc, Landlock signal scoping",
            Enforcement::Fully,
        )
    } else {
        // A signal sent to a process group needs no pid: kill(0) reaches the group the program
        // was started in, the launcher's, outside the PID namespace (tests/attacks.rs).
        Guarantee::new(
            Promise::OutsideProcesses,
            "PID namespace with its own /proc",
            Enforcement::Partly(format!(
                "Landlock ABI {abi} has no signal scoping (ABI 6): a signal to the chat's own process group (kill(0)) reaches the launcher's process group outside, and with it a caller that does not give each launch a group of its own"
            )),
        )
    });
    guarantees.push(Guarantee::new(
        Promise::ChatEnds,
        "init of the PID namespace: the chat ends when the program exits; on a hang-up of its terminal or SIGTERM, SIGINT or SIGHUP to the launcher, SIGTERM and then SIGKILL of init within seconds",
        Enforcement::Fully,
    ));
    guarantees.push(Guarantee::new(
        Promise::Helper,
        "init is not dumpable (no /proc/1/fd, no ptrace) and closes every other descriptor; its resource limits cannot be changed (seccomp refuses prlimit64 on another process); the exit status comes from waitpid, through a pipe only init holds",
        Enforcement::Fully,
    ));
    guarantees.extend(common.guarantees.iter().cloned());
    let egress = egress_plan(policy);
    guarantees.push(match &egress {
        Some(e) => egress_guarantee(e),
        None => loopback_guarantee(network.as_ref()),
    });
    guarantees.extend(limits_guarantees(policy, &tmp));
    let mut plan = LinuxPlan {
        version: PLAN_VERSION,
        chat: policy.chat().to_string(),
        workdir: policy.runtime().to_owned(),
        create_dirs,
        stand_in_dirs,
        denials_record: None,
        create_home_dirs,
        create_home_files,
        create_settings_files: settings.create_files,
        namespaces: Some(NamespacePlan {
            mounts,
            minimal_dev: true,
            pid_namespace: true,
            ipc_namespace: true,
            system_read_only,
            kernel: kernel_steps,
            attach_stand_ins: false,
            network,
            egress,
            guards,
            private_tmp: None,
        }),
        limits: LimitsPlan::new(policy.limits()),
        landlock: common.landlock(rules),
        seccomp_program: seccomp_program(&common.seccomp)?,
        seccomp: common.seccomp,
        guarantees,
        frozen: Vec::new(),
    };
    let mut tmp = tmp;
    bind_back_into_tmp(&mut tmp, policy, &plan);
    if let Some(ns) = plan.namespaces.as_mut() {
        ns.private_tmp = Some(tmp);
    }
    Ok(plan)
}

/// The namespace plan's Landlock rules: the open rights everywhere but in the folders that hold
/// the blocked programs and their ancestors (`/usr/bin`, `/usr`, `/`), which are frozen: each
/// gets the right to be listed alone, and each of their other entries the open rights by a rule
/// of its own. A rule is on an inode: the stand-in mounted over a blocked program's name is
/// detached when a process outside renames a new file over that name (a package upgrade), and
/// a program made there during the chat has no stand-in, but neither has a rule. Listing is
/// all a frozen folder keeps: it grants nothing on the files inside. A blocked program inside a
/// place the chat creates entries in (the home, the temporary folders, the writable places, its
/// own folders) is left
/// to its stand-in alone: freezing the home would break every CLI's settings. Also the count of
/// entries left closed because their names are not text, and those programs.
///
/// With `harden` (`Policy::home_top_closed`), the home and its ancestors are frozen as well
/// (`harden.rs`): they keep their reading rights (a folder frozen for a blocked program keeps
/// listing only, so that the reading rights of `/` never reach a blocked program), and an entry
/// beside them that `harden::read_only_entry` names gets the reading rights alone. Also the
/// CLIs' state folders missing at launch, which the helper makes before the rules are opened.
fn open_tree_rules<'p>(
    policy: &'p Policy,
    disk: &dyn LaunchDisk,
    common: &Common,
) -> (Vec<LandlockRule>, usize, Vec<&'p Path>, Vec<PathBuf>) {
    // The temporary folders whatever the uid (an ordinary user's policy lists no writable
    // places: everything its permissions allow is).
    let mut spared: Vec<&Path> = vec![policy.home(), policy.runtime()];
    spared.extend(sandbox_core::WRITABLE_AS_ROOT.iter().map(Path::new));
    spared.extend(policy.writable().iter().map(PathBuf::as_path));
    spared.extend(policy.grants().iter().map(|g| g.path.as_path()));
    let (blocked, not_frozen) = crate::frozen::blocked_folders(policy, disk, &spared);
    let harden = policy.home_top_closed();
    let mut frozen = blocked.clone();
    if harden {
        frozen.extend(crate::harden::frozen_folders(policy));
    }
    let mut rules = Vec::new();
    let mut not_text = 0;
    if frozen.is_empty() {
        rules.push(LandlockRule {
            path: PathBuf::from("/"),
            rights: common.open_rights.clone(),
        });
        return (rules, not_text, not_frozen, Vec::new());
    }
    let read: Vec<FsRight> = common
        .open_rights
        .iter()
        .copied()
        .filter(|r| matches!(r, FsRight::Execute | FsRight::ReadFile | FsRight::ReadDir))
        .collect();
    for dir in &frozen {
        // Listing alone for a blocked program's folder or ancestor: any other right there
        // would reach the blocked program beneath it.
        let own: &[FsRight] = if blocked.contains(dir) {
            &[FsRight::ReadDir]
        } else {
            &read
        };
        crate::frozen::rule_for(disk, dir.clone(), own, &mut rules, &mut not_text);
        for (name, _) in disk.entries(dir) {
            let child = dir.join(&name);
            if frozen.contains(&child) || policy.blocked_programs().contains(&child) {
                continue;
            }
            let rights = if harden && crate::harden::read_only_entry(policy, dir, &child, disk) {
                &read
            } else {
                &common.open_rights
            };
            crate::frozen::rule_for(disk, child, rights, &mut rules, &mut not_text);
        }
    }
    let made = if harden {
        crate::harden::state_folders_to_make(policy, disk)
    } else {
        Vec::new()
    };
    // Made by the helper before the rules are opened; not on the disk yet.
    for folder in &made {
        if folder.to_str().is_some() {
            rules.push(LandlockRule {
                path: folder.clone(),
                rights: common.open_rights.clone(),
            });
        }
    }
    (rules, not_text, not_frozen, made)
}

/// How many slashes a path has: the depth of a canonical one (one less than its number of
/// components, for any but `/`).
fn slashes(path: &Path) -> usize {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .filter(|b| **b == b'/')
        .count()
}

/// The kernel's tunables bound read-only, its secrets covered, as the policy lists them. Those
/// under `/proc` are the chat's own `/proc`'s (the host's has the same entries: one kernel). For a
/// root chat every mount is read-only already; `/sys` is named anyway, for the other users.
fn kernel_mounts(policy: &Policy, disk: &dyn LaunchDisk) -> Vec<MountStep> {
    let mut steps = Vec::new();
    for path in policy.kernel_tunables() {
        if let Some(kind @ (EntryKind::Dir | EntryKind::File)) = disk.kind(path) {
            steps.push(MountStep::ReadOnly {
                path: path.clone(),
                dir: kind == EntryKind::Dir,
            });
        }
    }
    for path in policy.kernel_secrets() {
        if let Some(kind @ (EntryKind::Dir | EntryKind::File)) = disk.kind(path) {
            steps.push(MountStep::Hide {
                path: path.clone(),
                dir: kind == EntryKind::Dir,
            });
        }
    }
    steps
}

/// What `secrets = "closed"` adds to the namespace plan.
struct SecretsInNamespace {
    mounts: Vec<MountStep>,
    /// The places covered, whose ancestors are pinned (a renamed `~/.config` would carry the
    /// stand-in of `~/.config/gh` away with it, and a folder of the chat's could take its place).
    pinned_below: Vec<PathBuf>,
    /// None when the policy closes no secret place.
    guarantee: Option<Guarantee>,
}

/// Each credential place that exists is covered by an empty unreadable entry of its kind
/// (`MountStep::Hide`) and its ancestors pinned; a link is left to its target, which the policy
/// lists beside it (a name under a link is reached through the target's stand-in). A missing one
/// is not made (an empty `~/.docker/config.json` or `~/.npmrc` would change what the person's
/// tools do): made by the chat it holds only what the chat wrote; made by the person during the
/// chat, it is open to the chat, which the guarantee says. A stand-in is a mount on a name: a
/// process outside that renames a file over that name (an atomic save: `docker login`, `npm
/// login`) detaches it, which the guarantee says too (the Landlock-only fallback holds there:
/// its rules are on inodes).
fn secrets_in_namespace<'p>(
    policy: &'p Policy,
    disk: &dyn LaunchDisk,
    seen: &mut Vec<(&'p Path, Option<EntryKind>)>,
) -> SecretsInNamespace {
    let mut out = SecretsInNamespace {
        mounts: Vec::new(),
        pinned_below: Vec::new(),
        guarantee: None,
    };
    if policy.secrets().is_empty() {
        return out;
    }
    let mut kind_of = |path| kind_once(seen, disk, path);
    let mut missing = Vec::new();
    for path in policy.secrets() {
        let under_link = path
            .ancestors()
            .skip(1)
            .any(|a| kind_of(a) == Some(EntryKind::Symlink));
        if under_link {
            continue;
        }
        match kind_of(path) {
            Some(kind @ (EntryKind::Dir | EntryKind::File)) => {
                out.mounts.push(MountStep::Hide {
                    path: path.clone(),
                    dir: kind == EntryKind::Dir,
                });
                out.pinned_below.push(path.clone());
            }
            // Left to its target (listed too); another kind (a socket, a fifo) holds no secret
            // that a read gives.
            Some(_) => {}
            None => missing.push(match path.strip_prefix(policy.home()) {
                Ok(relative) => format!("~/{}", relative.display()),
                Err(_) => path.display().to_string(),
            }),
        }
    }
    let missing_note = if missing.is_empty() {
        String::new()
    } else {
        format!(
            "; missing at launch, so open if the person makes them during the chat: {}",
            missing.join(", ")
        )
    };
    out.guarantee = Some(Guarantee::new(
        Promise::Secrets,
        "mount namespace: each present one covered by an empty unreadable entry of its kind (a link: its target), its ancestors pinned; reached by a link, a hard link or another name, the walk ends on the stand-in",
        Enforcement::Partly(format!(
            "a stand-in is a mount on a name: a file the person saves by rename during the chat (docker login, npm login) is open to the chat, and so is one the person makes during the chat where none was at launch{missing_note}; a hard link the person made elsewhere before the chat is another name, open"
        )),
    ));
    out
}

/// What `harden` adds to the namespace plan.
struct HardenInNamespace {
    mounts: Vec<MountStep>,
    /// Paths whose ancestors are pinned (so that no folder is renamed into their place).
    pinned_below: Vec<PathBuf>,
    create: Vec<PathBuf>,
    create_files: Vec<PathBuf>,
    guarantee: Guarantee,
}

/// Each persistence path that exists is bound read-only onto itself, and the folders that hold
/// the persistence files are frozen by Landlock (harden.rs), which holds across a save by rename
/// outside and closes the files missing at launch (none can be made in a frozen folder). A
/// missing folder whose place is in a frozen folder stays missing (closed the same way); one
/// below an open folder (`~/.config/autostart`) is created empty first and bound. A path under a
/// symlinked folder is left to its resolved twin, which the policy lists beside it.
fn harden_in_namespace<'p>(
    policy: &'p Policy,
    disk: &dyn LaunchDisk,
    seen: &mut Vec<(&'p Path, Option<EntryKind>)>,
) -> HardenInNamespace {
    let mut out = HardenInNamespace {
        mounts: Vec::new(),
        pinned_below: Vec::new(),
        create: Vec::new(),
        create_files: Vec::new(),
        guarantee: Guarantee::new(
            Promise::Persistence,
            "mount namespace and Landlock on inodes: the home's top and the folders that hold persistence files frozen (reading only: nothing made, renamed or removed there, so a file saved by rename outside is read-only too, and a missing one cannot be made), every file at the home's top read-only but the CLIs' state files (~/.claude.json), persistence folders bound read-only (created empty first below an open folder), their ancestors pinned",
            Enforcement::Partly(String::new()),
        ),
    };
    let frozen = crate::harden::frozen_folders(policy);
    let mut missing_files: Vec<String> = Vec::new();
    let mut links: Vec<String> = Vec::new();
    let mut bound_folders: Vec<String> = Vec::new();
    let show = |path: &Path| match path.strip_prefix(policy.home()) {
        Ok(relative) => format!("~/{}", relative.display()),
        Err(_) => path.display().to_string(),
    };
    // What each path is, looked at once in this compile: the thirty-odd persistence paths share
    // their ancestors (`/`, `/home`, the home, `~/.config`), which were looked at again for
    // each, five or six looks a path.
    //
    // Races (the home is every chat's to write): an answer kept is the disk a few microseconds
    // earlier than a second look would have been, within this one compile, and it only decides
    // what the plan names; the mounts look again. A path taken for a real folder that has become
    // a symlink since is refused when it is bound (the helper opens each without following a
    // link, and the chat is not started); one taken for a symlink is left to its resolved twin,
    // as it would have been had the swap come a moment later. Nothing is kept from one compile
    // to the next: each launch looks afresh (crates/launch/tests/plan_looks.rs).
    let mut kind_of = |path| kind_once(seen, disk, path);
    for hardened in policy.hardened() {
        let path = hardened.path();
        let under_link = path
            .ancestors()
            .skip(1)
            .any(|a| kind_of(a) == Some(EntryKind::Symlink));
        if under_link {
            continue;
        }
        let in_frozen = path.parent().is_some_and(|p| frozen.contains(p));
        // The first name on the way that is missing: made in a frozen folder, it cannot be.
        let closed_by_freeze = path
            .ancestors()
            .filter(|a| a.starts_with(policy.home()))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .find(|a| kind_of(a).is_none())
            .and_then(Path::parent)
            .is_some_and(|p| frozen.contains(p));
        match kind_of(path) {
            Some(kind @ (EntryKind::Dir | EntryKind::File)) => {
                out.mounts.push(MountStep::ReadOnly {
                    path: path.to_owned(),
                    dir: kind == EntryKind::Dir,
                });
                out.pinned_below.push(path.to_owned());
                if kind == EntryKind::Dir && !in_frozen {
                    bound_folders.push(show(path));
                }
            }
            // A link in a frozen folder cannot be replaced; what it points to is closed.
            Some(EntryKind::Symlink) if in_frozen => {}
            Some(EntryKind::Symlink) => links.push(show(path)),
            None if closed_by_freeze => {}
            // Made only in the home: a persistence path that resolves elsewhere (a `~/.config`
            // a chat pointed at `/etc`) is not the person's to fill, and stays a gap.
            None if !path.starts_with(policy.home()) => missing_files.push(show(path)),
            None if hardened.is_folder() => {
                out.create.push(path.to_owned());
                out.mounts.push(MountStep::ReadOnly {
                    path: path.to_owned(),
                    dir: true,
                });
                out.pinned_below.push(path.to_owned());
                bound_folders.push(show(path));
            }
            None if hardened.empty_is_absent() => {
                out.create_files.push(path.to_owned());
                out.mounts.push(MountStep::ReadOnly {
                    path: path.to_owned(),
                    dir: false,
                });
                out.pinned_below.push(path.to_owned());
            }
            None => missing_files.push(show(path)),
        }
    }
    let mut gaps = Vec::new();
    if !missing_files.is_empty() {
        gaps.push(format!(
            "these files do not exist at launch and can be created during the chat (creating them empty would change what a shell reads): {}",
            missing_files.join(", ")
        ));
    }
    if !links.is_empty() {
        gaps.push(format!(
            "these are symlinks, which can be replaced (what they point to is closed): {}",
            links.join(", ")
        ));
    }
    if !bound_folders.is_empty() {
        gaps.push(format!(
            "these folders are closed by a read-only mount on their name, which a process outside that renames or removes the folder itself during the chat detaches (a save of a file inside one holds): {}",
            bound_folders.join(", ")
        ));
    }
    // What no list names is open: said whatever else the plan closes.
    gaps.push(sandbox_core::HARDEN_LEAVES_OPEN.to_owned());
    out.guarantee.enforcement = Enforcement::Partly(gaps.join("; "));
    let frozen_in_home: Vec<String> = frozen
        .iter()
        .filter(|p| p.starts_with(policy.home()))
        .map(|p| show(p))
        .collect();
    out.guarantee.by = format!(
        "{}; frozen: {}",
        out.guarantee.by,
        frozen_in_home.join(", ")
    );
    out
}

/// What the rule on git's own files ([`sandbox_core::Rule::Git`]) adds to the namespace plan.
struct GitInNamespace {
    mounts: Vec<MountStep>,
    create: Vec<PathBuf>,
    create_files: Vec<PathBuf>,
    /// `None` when no read-write grant closes git's files.
    guarantee: Option<Guarantee>,
}

/// The `gitdir:` file of a worktree or submodule is this short; more is not such a file.
const GITDIR_FILE_LIMIT: usize = 4096;

/// Each read-write grant (but those of `[policy] git_writable`) is walked at plan time, every
/// folder of it but the refused entries and what symlinks lead to, for git's own files: each
/// repository's `.git` folder is kept (a mount point: not renamed), its `hooks/` and `config`
/// bound read-only (made empty first when missing: git reads an empty `hooks/` and an empty
/// `config` as none), its `config.worktree` and `commondir` when present, and the same in each
/// submodule's folder under `.git/modules/` and each worktree's under `.git/worktrees/`; a
/// `.git` file (`gitdir: PATH`, a worktree or a submodule) is bound read-only, and the folder
/// it names is treated as a `.git` folder when it lies in such a grant; each `.gitmodules` is
/// bound read-only. What the walk cannot close is said in the guarantee: a repository made
/// during the chat, a `.gitmodules` or a `commondir` created during the chat, symlinks.
fn git_in_namespace(policy: &Policy, disk: &dyn LaunchDisk) -> GitInNamespace {
    let mut out = GitInNamespace {
        mounts: Vec::new(),
        create: Vec::new(),
        create_files: Vec::new(),
        guarantee: None,
    };
    let grants: Vec<&Path> = policy
        .git_closed_grants()
        .map(|g| g.path.as_path())
        .collect();
    if grants.is_empty() {
        return out;
    }
    // A grant inside another is walked with it.
    let outermost: Vec<&Path> = grants
        .iter()
        .copied()
        .filter(|g| !grants.iter().any(|o| o != g && g.starts_with(o)))
        .collect();
    let mut links: Vec<PathBuf> = Vec::new();
    let mut gitdirs: Vec<PathBuf> = Vec::new();
    let mut bare_repos: Vec<PathBuf> = Vec::new();
    let in_closed_grant = |path: &Path| {
        grants.iter().any(|g| path.starts_with(g))
            && policy
                .decide(sandbox_core::Op::Write, &path.join("x"))
                .allowed
    };
    // Level by level, each level's folders listed in one call: the real disk lists many side
    // by side (`LaunchDisk::entries_of`).
    let mut level: Vec<PathBuf> = outermost.iter().map(|g| g.to_path_buf()).collect();
    while !level.is_empty() {
        let listings = disk.entries_of(&level.iter().map(PathBuf::as_path).collect::<Vec<_>>());
        let mut next = Vec::new();
        for (folder, entries) in level.iter().zip(listings) {
            // Refused patterns name entries at a grant's top only: the policy is asked there
            // (this grant's, or one inside it), not of each of the walk's entries.
            let top = policy
                .grants()
                .binary_search_by(|g| g.path.as_path().cmp(folder))
                .is_ok();
            for (name, kind) in entries {
                let path = folder.join(&name);
                if top && !policy.decide(sandbox_core::Op::Read, &path).allowed {
                    continue;
                }
                if name == ".gitmodules" {
                    match kind {
                        EntryKind::File => {
                            out.mounts.push(MountStep::ReadOnly { path, dir: false })
                        }
                        EntryKind::Symlink => links.push(path),
                        EntryKind::Dir => out.mounts.push(MountStep::ReadOnly { path, dir: true }),
                    }
                    continue;
                }
                if name == ".git" {
                    match kind {
                        EntryKind::Dir => gitdirs.push(path),
                        EntryKind::File => {
                            if let Some(target) = gitdir_file_target(disk, &path)
                                && in_closed_grant(&target)
                                && disk.kind(&target) == Some(EntryKind::Dir)
                            {
                                gitdirs.push(target);
                            }
                            out.mounts.push(MountStep::ReadOnly { path, dir: false });
                        }
                        EntryKind::Symlink => links.push(path),
                    }
                    continue;
                }
                if kind == EntryKind::Dir {
                    // A bare repository (`NAME.git` with a HEAD): its hooks and configuration
                    // closed as a `.git` folder's, the folder itself not kept in place (the
                    // policy judges by name, and `NAME.git` may be any folder).
                    let bare = name.as_encoded_bytes().ends_with(b".git")
                        && disk.kind(&path.join("HEAD")) == Some(EntryKind::File);
                    if bare {
                        bare_repos.push(path.clone());
                    }
                    next.push(path);
                }
            }
        }
        level = next;
    }
    gitdirs.extend(bare_repos.iter().cloned());
    gitdirs.sort();
    gitdirs.dedup();
    let mut missing_commondir = false;
    let mut seen = Vec::new();
    while let Some(gitdir) = gitdirs.pop() {
        if seen.contains(&gitdir) {
            continue;
        }
        seen.push(gitdir.clone());
        if !bare_repos.contains(&gitdir) {
            out.mounts.push(MountStep::Keep {
                path: gitdir.clone(),
                dir: true,
            });
        }
        let is_worktree = gitdir
            .parent()
            .is_some_and(|p| p.file_name().is_some_and(|n| n == "worktrees"));
        for (name, must) in [
            ("hooks", !is_worktree),
            ("config", !is_worktree),
            ("config.worktree", false),
            ("commondir", false),
        ] {
            let path = gitdir.join(name);
            let dir = name == "hooks";
            match disk.kind(&path) {
                Some(EntryKind::Symlink) => links.push(path),
                Some(kind) => out.mounts.push(MountStep::ReadOnly {
                    path,
                    dir: kind == EntryKind::Dir,
                }),
                None if must => {
                    if dir {
                        out.create.push(path.clone());
                    } else {
                        out.create_files.push(path.clone());
                    }
                    out.mounts.push(MountStep::ReadOnly { path, dir });
                }
                None => missing_commondir |= name == "commondir" && !is_worktree,
            }
        }
        // Submodules' folders (a name may hold `/`: a folder with HEAD is one) and worktrees'.
        let mut below = vec![gitdir.join("modules")];
        while let Some(folder) = below.pop() {
            for (name, kind) in disk.entries(&folder) {
                let path = folder.join(&name);
                if kind != EntryKind::Dir {
                    continue;
                }
                if disk.kind(&path.join("HEAD")).is_some() {
                    gitdirs.push(path);
                } else {
                    below.push(path);
                }
            }
        }
        for (name, kind) in disk.entries(&gitdir.join("worktrees")) {
            if kind == EntryKind::Dir {
                gitdirs.push(gitdir.join("worktrees").join(name));
            }
        }
    }
    let mut gaps = vec![
        "a repository made during the chat (git init, a clone; also one made in the place of a repository whose folder the chat renamed away) and a .gitmodules, or a commondir in a repository's own .git folder, created during the chat are not closed, nor is a bare repository (NAME.git) renamed and replaced: they are closed from the next launch on, which finds them".to_owned(),
        "a process outside that replaces one of these files by a rename during the chat (git config run outside saves .git/config so) detaches its read-only mount inside: the new file is writable from inside until the chat ends".to_owned(),
    ];
    if missing_commondir {
        gaps[0].push_str(" (a repository here has no commondir now)");
    }
    if !links.is_empty() {
        let names: Vec<String> = links.iter().map(|l| l.display().to_string()).collect();
        gaps.push(format!(
            "these are symlinks, which are left as they are (what they point to is closed only where the policy closes it): {}",
            names.join(", ")
        ));
    }
    out.guarantee = Some(Guarantee::new(
        Promise::GitMetadata,
        format!(
            "mount namespace: in {} read-write grant(s), {} repository folder(s) found at launch kept in place (mount points), their hooks/ and config bound read-only (made empty when missing), each .gitmodules and gitdir file bound read-only",
            grants.len(),
            seen.len()
        ),
        Enforcement::Partly(gaps.join("; ")),
    ));
    out
}

/// The folder a `gitdir: PATH` file names (relative to the file's folder), canonical.
fn gitdir_file_target(disk: &dyn LaunchDisk, file: &Path) -> Option<PathBuf> {
    let bytes = disk.read_start(file, GITDIR_FILE_LIMIT)?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let named = text.strip_prefix("gitdir:")?.trim();
    let named = Path::new(named);
    let full = if named.is_absolute() {
        named.to_owned()
    } else {
        file.parent()?.join(named)
    };
    disk.canonical(&full)
}

/// What the namespace plan does for the acted-on settings ([`Policy::settings`]).
pub(crate) struct SettingsInNamespace {
    mounts: Vec<MountStep>,
    /// Paths whose ancestors are pinned (in the home; the runtime's are inside its own mount).
    pinned_below: Vec<PathBuf>,
    pub(crate) create: Vec<PathBuf>,
    pub(crate) create_files: Vec<SettingsFile>,
    guarantee: Guarantee,
}

/// Each acted-on place that exists is bound read-only onto itself (pass 8, after the masks, so
/// that those in the runtime land on the runtime bound back); a missing one is created first
/// (an empty folder, or a file holding its neutral content) and bound the same way, so that none
/// can be made during the chat; the ancestors of those in the home are pinned, so that no folder
/// on the way (`~/.codex`) can be renamed and replaced by one of the chat's. A place inside
/// another (`<runtime>/.gemini/.env` in `<runtime>/.gemini`) is covered by it. In the runtime, a
/// symlink at a place is covered by an unreadable stand-in (it is never the launch's: the
/// launch writes files, and the chat's earlier launch could only have made it where the runtime
/// was writable); in the home a symlink's target is listed beside it and closed, the link itself
/// is the gap reported.
pub(crate) fn settings_in_namespace<'p>(
    policy: &'p Policy,
    disk: &dyn LaunchDisk,
    seen: &mut Vec<(&'p Path, Option<EntryKind>)>,
) -> SettingsInNamespace {
    let mut out = SettingsInNamespace {
        mounts: Vec::new(),
        pinned_below: Vec::new(),
        create: Vec::new(),
        create_files: Vec::new(),
        guarantee: Guarantee::new(
            Promise::Settings,
            "mount namespace: each bound read-only onto itself, missing ones created first (empty folders, neutral files), their ancestors in the home pinned; in the runtime, after it is bound back",
            Enforcement::Fully,
        ),
    };
    let mut links: Vec<String> = Vec::new();
    let mut elsewhere: Vec<String> = Vec::new();
    let show = |path: &Path| match path.strip_prefix(policy.home()) {
        Ok(relative) => format!("~/{}", relative.display()),
        Err(_) => path.display().to_string(),
    };
    // Looked at once in this compile, as for `harden` (the same races, the same answer: the
    // mounts open each path again without following a link).
    let mut kind_of = |path| kind_once(seen, disk, path);
    let folders: Vec<&Path> = policy
        .settings()
        .iter()
        .filter(|s| s.is_folder())
        .map(|s| s.path())
        .collect();
    for setting in policy.settings() {
        let path = setting.path();
        if folders.iter().any(|f| *f != path && path.starts_with(f)) {
            continue;
        }
        let stop = if setting.in_runtime() {
            policy.runtime()
        } else {
            Path::new("/")
        };
        let under_link = path
            .ancestors()
            .skip(1)
            .take_while(|a| *a != stop)
            .any(|a| kind_of(a) == Some(EntryKind::Symlink));
        if under_link {
            if setting.in_runtime() {
                // A link the chat left on the way inside its runtime: the place cannot be
                // bound without following it; reported (the runtime's own settings are read by
                // this chat's later launches only).
                links.push(show(path));
            } else {
                // In the home its resolved twin is listed beside it and closed there; the links
                // on the way (`~/.codex -> dotfiles/codex`) are kept in place.
                for ancestor in path.ancestors().skip(1) {
                    if ancestor == policy.home() || !ancestor.starts_with(policy.home()) {
                        break;
                    }
                    if kind_of(ancestor) == Some(EntryKind::Symlink) {
                        pin_link(&mut out, ancestor);
                    }
                }
            }
            continue;
        }
        match kind_of(path) {
            Some(kind @ (EntryKind::Dir | EntryKind::File)) => {
                out.mounts.push(MountStep::ReadOnly {
                    path: path.to_owned(),
                    dir: kind == EntryKind::Dir,
                });
                if !setting.in_runtime() {
                    out.pinned_below.push(path.to_owned());
                }
            }
            Some(EntryKind::Symlink) if setting.in_runtime() => {
                out.mounts.push(MountStep::Hide {
                    path: path.to_owned(),
                    dir: false,
                });
            }
            // The person's link: kept in place (what it points to is listed beside it and
            // closed at its own path).
            Some(EntryKind::Symlink) => pin_link(&mut out, path),
            None if !setting.in_runtime() && !path.starts_with(policy.home()) => {
                // A place that resolves outside the home (a folder variable naming one, a link
                // a chat pointed elsewhere) is not the person's to fill.
                elsewhere.push(show(path));
            }
            // With `harden` nothing can be made at the home's top (frozen by Landlock): a
            // missing one there is closed already, and is not created in the person's home.
            None if policy.home_top_closes(path) => {}
            None => {
                if setting.is_folder() {
                    out.create.push(path.to_owned());
                } else {
                    out.create_files.push(SettingsFile {
                        path: path.to_owned(),
                        text: setting.empty().to_owned(),
                    });
                }
                out.mounts.push(MountStep::ReadOnly {
                    path: path.to_owned(),
                    dir: setting.is_folder(),
                });
                if !setting.in_runtime() {
                    out.pinned_below.push(path.to_owned());
                }
            }
        }
    }
    let mut gaps = Vec::new();
    if !links.is_empty() {
        gaps.push(format!(
            "these are symlinks (or lie under one), which can be renamed and replaced during the chat (what they point to is closed): {}",
            links.join(", ")
        ));
    }
    if !elsewhere.is_empty() {
        gaps.push(format!(
            "these do not exist at launch and lie outside the home, so they are not created and can be created during the chat: {}",
            elsewhere.join(", ")
        ));
    }
    if !gaps.is_empty() {
        out.guarantee.enforcement = Enforcement::Partly(gaps.join("; "));
    }
    out
}

/// A symlink of the home kept in place ([`MountStep::PinLink`]), once; its folders pinned.
fn pin_link(out: &mut SettingsInNamespace, link: &Path) {
    let step = MountStep::PinLink {
        path: link.to_owned(),
    };
    if !out.mounts.contains(&step) {
        out.mounts.push(step);
        out.pinned_below.push(link.to_owned());
    }
}

/// `disk.kind(path)`, looked at once: the answer in `seen` when there is one (paths compared by
/// their bytes: every one is canonical), else the disk's, kept in `seen`.
fn kind_once<'p>(
    seen: &mut Vec<(&'p Path, Option<EntryKind>)>,
    disk: &dyn LaunchDisk,
    path: &'p Path,
) -> Option<EntryKind> {
    if let Some((_, kind)) = seen.iter().find(|(p, _)| p.as_os_str() == path.as_os_str()) {
        return *kind;
    }
    let kind = disk.kind(path);
    seen.push((path, kind));
    kind
}
