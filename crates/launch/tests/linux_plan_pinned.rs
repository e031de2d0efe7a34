//! Today's Linux plans and seccomp programs, pinned: a change meant only to make the plan compile
//! faster must give the same bytes. Every `SeccompPlan` the compiler makes (below and at Landlock
//! ABI 9, with and without namespaces) and each of them with one field changed, as their programs'
//! instructions in full; and the whole plan, as JSON, of a few policies compiled on a disk made of
//! paths (the same answers on every machine): namespaced below and at ABI 9, the Landlock-only
//! plan, with grants, refused entries, blocked programs, `harden`, a root launcher and the chat's
//! own network.
//!
//! The programs are those of x86_64 (the other architectures' differ in their numbers), and only
//! Linux builds them.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use sandbox_core::{
    Access, ChatId, Config, GrantRequest, Layout, Network, Os, Policy, PolicyRequest, Resolver,
};
use sandbox_linux::plan::{
    self, EntryKind, Kernel, LaunchDisk, LinuxPlan, SeccompPlan, SocketFamily,
};

/// A file system made of paths: each with its kind, every folder's ancestors folders.
#[derive(Default)]
struct Paths(BTreeMap<PathBuf, EntryKind>);

impl Paths {
    fn add(&mut self, path: &Path, kind: EntryKind) {
        for ancestor in path.ancestors().skip(1) {
            self.0.insert(ancestor.to_owned(), EntryKind::Dir);
        }
        self.0.insert(path.to_owned(), kind);
    }
}

impl Resolver for Paths {
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        match self.0.get(path) {
            Some(EntryKind::Dir | EntryKind::File) => Ok(path.to_owned()),
            _ => Err(io::Error::new(io::ErrorKind::NotFound, "not in the paths")),
        }
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.0.get(path) == Some(&EntryKind::Dir)
    }
}

impl LaunchDisk for Paths {
    fn exists(&self, path: &Path) -> bool {
        self.0.contains_key(path)
    }

    fn kind(&self, path: &Path) -> Option<EntryKind> {
        self.0.get(path).copied()
    }

    fn entries(&self, dir: &Path) -> Vec<(OsString, EntryKind)> {
        self.0
            .iter()
            .filter(|(path, _)| path.parent() == Some(dir))
            .map(|(path, kind)| (path.file_name().unwrap().to_owned(), *kind))
            .collect()
    }

    fn target_kind(&self, path: &Path) -> Option<EntryKind> {
        self.0
            .get(path)
            .copied()
            .filter(|k| *k != EntryKind::Symlink)
    }
}

/// What a policy of the layout below is made of.
#[derive(Clone, Copy)]
struct Shape {
    grants: bool,
    harden: bool,
    privileged: bool,
    sockets: bool,
    isolated: bool,
}

const PLAIN: Shape = Shape {
    grants: false,
    harden: false,
    privileged: false,
    sockets: false,
    isolated: false,
};

/// Ann's home at `/v/home/ann` with AgentWorks' folders, three workflows (refused entries,
/// planning, a symlink in them), a blocked program, a protected root of the configuration, some
/// of the persistence paths and of the kernel's tunables and secrets, and pasta.
fn policy(shape: Shape) -> (Policy, Paths) {
    let home = PathBuf::from("/v/home/ann");
    let app = home.join(".local/share/AgentWorks");
    let layout = Layout {
        home: home.clone(),
        app_folder: app.clone(),
        state_root: app.clone(),
        workspace_docs: app.join("workspace-docs"),
    };
    let chat = ChatId::new("chat-1").unwrap();
    let mut disk = Paths::default();
    use EntryKind::{Dir, File, Symlink};
    for (path, kind) in [
        ("config.json", File),
        ("state/auth/token", File),
        ("workspace-docs/users/u.json", File),
        ("state/cli-runtimes/v1/chat-2/work.txt", File),
    ] {
        disk.add(&app.join(path), kind);
    }
    disk.add(&layout.runtime(&chat).join("work.txt"), File);
    let workflows = layout.workspace_docs.join("workflows");
    for wf in ["wf-1", "wf-2", "wf-3"] {
        for (path, kind) in [
            ("doc.md", File),
            ("raw.sqlite", File),
            ("Old.DB", File),
            ("planning/plan.json", File),
            ("secrets/k.txt", File),
            ("sub/x.db", File),
            ("link", Symlink),
        ] {
            disk.add(&workflows.join(wf).join(path), kind);
        }
    }
    for (path, kind) in [
        ("notes.txt", File),
        (".bashrc", File),
        (".config/fish", Dir),
        (".profile", Symlink),
        ("tenant/secret.txt", File),
        ("bin/opener.sh", File),
        (".agent/agent.sock", File),
    ] {
        disk.add(&home.join(path), kind);
    }
    disk.add(Path::new("/usr/bin/pasta"), File);
    disk.add(Path::new("/tmp"), Dir);

    let mut config = Config::default();
    config.policy.refused = vec!["secrets/".into(), "*.key".into()];
    config.policy.protected = vec![home.join("tenant")];
    config.policy.blocked_programs = vec![home.join("bin/opener.sh"), home.join("bin/gone.sh")];
    if shape.sockets {
        config.policy.allow_unix_sockets = vec![home.join(".agent/agent.sock")];
    }
    config.policy.harden = shape.harden;
    if shape.isolated {
        config.policy.network = Network::Isolated;
    }
    let grants: Vec<GrantRequest> = if shape.grants {
        vec![
            GrantRequest {
                path: workflows.join("wf-1"),
                access: Access::ReadWrite,
            },
            GrantRequest {
                path: workflows.join("wf-3"),
                access: Access::ReadOnly,
            },
            GrantRequest {
                path: workflows.join("wf-3/sub"),
                access: Access::ReadWrite,
            },
        ]
    } else {
        Vec::new()
    };
    let policy = Policy::build(
        &PolicyRequest {
            os: Os::Linux,
            layout: &layout,
            chat: &chat,
            grants: &grants,
            config: &config,
            privileged: shape.privileged,
            settings: &[],
        },
        &disk,
    )
    .unwrap();
    // Two of every three kernel tunables and secrets present, of either kind.
    for (i, path) in policy
        .kernel_tunables()
        .iter()
        .chain(policy.kernel_secrets())
        .enumerate()
    {
        match i % 3 {
            0 => disk.add(path, File),
            1 => disk.add(path, Dir),
            _ => {}
        }
    }
    (policy, disk)
}

fn compile(shape: Shape, landlock_abi: u32, namespaces: bool) -> LinuxPlan {
    compile_with(shape, landlock_abi, namespaces, false)
}

/// [`compile`], with or without `/dev/fuse` (the guard over grants, issue 25).
fn compile_with(shape: Shape, landlock_abi: u32, namespaces: bool, fuse: bool) -> LinuxPlan {
    let (policy, disk) = policy(shape);
    let kernel = Kernel {
        landlock_abi,
        namespaces,
        fuse,
    };
    plan::compile(&policy, kernel, &disk).unwrap()
}

#[test]
fn the_plans_are_as_pinned() {
    let grants = Shape {
        grants: true,
        ..PLAIN
    };
    let everything = Shape {
        grants: true,
        harden: true,
        privileged: true,
        sockets: true,
        isolated: true,
    };
    for (name, shape, abi, namespaces) in [
        ("namespaced-abi7-plain", PLAIN, 7, true),
        ("namespaced-abi7-grants", grants, 7, true),
        ("namespaced-abi7-everything", everything, 7, true),
        (
            "namespaced-abi9-grants-sockets",
            Shape {
                sockets: true,
                ..grants
            },
            9,
            true,
        ),
        (
            "namespaced-abi5-grants-harden",
            Shape {
                harden: true,
                ..grants
            },
            5,
            true,
        ),
        ("frozen-abi7-grants", grants, 7, false),
        (
            "frozen-abi7-everything",
            Shape {
                isolated: false,
                ..everything
            },
            7,
            false,
        ),
        ("frozen-abi9-grants", grants, 9, false),
    ] {
        let plan = compile(shape, abi, namespaces);
        insta::assert_snapshot!(name, serde_json::to_string_pretty(&plan).unwrap());
    }
    // With `/dev/fuse`: each grant guarded (the deepest first), no stand-in and no folder made
    // for a refused pattern; the fallback has no guard (its grant folders are frozen).
    let guarded = compile_with(grants, 7, true, true);
    insta::assert_snapshot!(
        "namespaced-abi7-grants-guarded",
        serde_json::to_string_pretty(&guarded).unwrap()
    );
    let ns = guarded.namespaces.as_ref().unwrap();
    assert!(!ns.guards.is_empty());
    assert!(
        ns.guards
            .windows(2)
            .all(|w| w[0].path.components().count() >= w[1].path.components().count())
    );
    assert_eq!(
        compile_with(grants, 7, false, true),
        compile(grants, 7, false),
        "the fallback is the same with or without /dev/fuse"
    );
}

/// A boolean field of a seccomp plan.
type Field = fn(&mut SeccompPlan) -> &mut bool;

/// Each field of `base` changed on its own: the booleans flipped, the socket families without
/// each one in turn, and without any.
fn each_field_changed(base: &SeccompPlan) -> Vec<(String, SeccompPlan)> {
    let mut out = Vec::new();
    let flips: [(&str, Field); 11] = [
        ("unix_pairs_stream_only", |p| &mut p.unix_pairs_stream_only),
        ("refuse_io_uring", |p| &mut p.refuse_io_uring),
        ("refuse_namespace_and_mount_calls", |p| {
            &mut p.refuse_namespace_and_mount_calls
        }),
        ("refuse_terminal_injection", |p| {
            &mut p.refuse_terminal_injection
        }),
        ("refuse_keyring", |p| &mut p.refuse_keyring),
        ("refuse_setuid_bits", |p| &mut p.refuse_setuid_bits),
        ("refuse_exploit_surface", |p| &mut p.refuse_exploit_surface),
        ("refuse_other_abis", |p| &mut p.refuse_other_abis),
        ("refuse_shared_ipc", |p| &mut p.refuse_shared_ipc),
        ("refuse_others_limits", |p| &mut p.refuse_others_limits),
        ("refuse_others_scheduling", |p| {
            &mut p.refuse_others_scheduling
        }),
    ];
    for (name, field) in flips {
        let mut plan = base.clone();
        let flag = field(&mut plan);
        *flag = !*flag;
        out.push((format!("{name} {}", *flag), plan));
    }
    for family in &base.socket_families {
        let mut plan = base.clone();
        plan.socket_families.retain(|f| f != family);
        out.push((format!("without {family:?}"), plan));
    }
    let mut plan = base.clone();
    plan.socket_families.clear();
    out.push(("no socket family".into(), plan));
    let mut plan = base.clone();
    if !plan.socket_families.contains(&SocketFamily::Unix) {
        plan.socket_families.push(SocketFamily::Unix);
        out.push(("with Unix".into(), plan));
    }
    out
}

#[test]
fn the_seccomp_programs_are_as_pinned() {
    let mut text = String::new();
    for (name, abi, namespaces) in [
        ("namespaced below ABI 9", 7, true),
        ("namespaced at ABI 9", 9, true),
        ("Landlock only below ABI 9", 7, false),
        ("Landlock only at ABI 9", 9, false),
    ] {
        let compiled = compile(PLAIN, abi, namespaces);
        let mut plans = vec![("as compiled".to_owned(), compiled.seccomp.clone())];
        plans.extend(each_field_changed(&compiled.seccomp));
        for (change, seccomp) in plans {
            let program = plan::seccomp_program(&seccomp).unwrap();
            let hex = serde_json::to_value(&program).unwrap();
            writeln!(
                text,
                "{name}, {change}: {} instructions\n{}",
                program.instructions().len(),
                hex.as_str().unwrap()
            )
            .unwrap();
        }
        // The plan carries its own filter's program.
        assert_eq!(
            compiled.seccomp_program,
            plan::seccomp_program(&compiled.seccomp).unwrap()
        );
    }
    insta::assert_snapshot!("seccomp-programs", text);
}
