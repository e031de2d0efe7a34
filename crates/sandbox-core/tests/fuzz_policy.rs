//! Hostile input for the policy builder (proptest, a bounded number of cases so that it runs in
//! CI): paths and names with quotes, parentheses, semicolons, `#"`, newlines, NUL, `..`, very long
//! names, bytes that are not UTF-8, symlink loops, grants that are symlinks into a protected root,
//! chat ids that are paths. Every case must give a clear error or a policy that keeps the
//! invariants; none may panic.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use proptest::prelude::*;
use sandbox_core::{
    ChatId, Config, GrantRequest, Layout, LayoutInputs, Op, Os, Policy, PolicyError, PolicyRequest,
    RefusedPattern, Resolver,
};

const HOME: &str = "/home/ann";
const DOCS: &str = "/home/ann/.local/share/AgentWorks/workspace-docs";
const RUNTIMES: &str = "/home/ann/.local/share/AgentWorks/state/cli-runtimes/v1";

/// A file system of folders, files and symlinks, which resolves like the kernel: a loop ends
/// with ELOOP, a name over 255 bytes with ENAMETOOLONG.
#[derive(Debug, Default, Clone)]
struct Fs {
    dirs: BTreeSet<PathBuf>,
    files: BTreeSet<PathBuf>,
    links: BTreeMap<PathBuf, PathBuf>,
}

impl Fs {
    fn dir(&mut self, p: impl AsRef<Path>) {
        for a in p.as_ref().ancestors() {
            self.dirs.insert(a.to_owned());
        }
    }
    fn file(&mut self, p: impl AsRef<Path>) {
        self.dir(p.as_ref().parent().unwrap());
        self.files.insert(p.as_ref().to_owned());
    }
    fn link(&mut self, from: impl AsRef<Path>, to: impl AsRef<Path>) {
        self.dir(from.as_ref().parent().unwrap());
        self.links
            .insert(from.as_ref().to_owned(), to.as_ref().to_owned());
    }
}

impl Resolver for Fs {
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let mut todo: Vec<OsString> = path
            .components()
            .rev()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_owned()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect();
        let mut out = PathBuf::from("/");
        let mut hops = 0;
        while let Some(name) = todo.pop() {
            if name.len() > 255 {
                return Err(io::Error::from_raw_os_error(36)); // ENAMETOOLONG
            }
            if name == ".." {
                out.pop();
                continue;
            }
            let next = out.join(&name);
            if let Some(target) = self.links.get(&next) {
                hops += 1;
                if hops > 40 {
                    return Err(io::Error::from_raw_os_error(40)); // ELOOP
                }
                let mut rest: Vec<OsString> = target
                    .components()
                    .rev()
                    .filter_map(|c| match c {
                        Component::Normal(n) => Some(n.to_owned()),
                        Component::ParentDir => Some("..".into()),
                        _ => None,
                    })
                    .collect();
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                // `rest` is reversed: pushed so that its first component pops first.
                rest.reverse();
                for part in rest.into_iter().rev() {
                    todo.push(part);
                }
                continue;
            }
            if !self.dirs.contains(&next) && !self.files.contains(&next) {
                return Err(io::Error::from(io::ErrorKind::NotFound));
            }
            out = next;
        }
        Ok(out)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.dirs.contains(path)
    }
}

fn world() -> Fs {
    let mut fs = Fs::default();
    fs.file(format!("{HOME}/notes.txt"));
    fs.file(format!("{HOME}/.bashrc"));
    fs.file(format!("{DOCS}/workflows/wf-1/doc.md"));
    fs.file(format!("{DOCS}/workflows/wf-1/planning/plan.json"));
    fs.file(format!("{DOCS}/workflows/wf-2/doc.md"));
    fs.dir(format!("{RUNTIMES}/chat-1"));
    fs.dir(format!("{RUNTIMES}/chat-2"));
    fs.dir("/home/ann/.local/share/AgentWorks/state/auth");
    // Symlinks a grant may name: into a workflow (fine), into another chat's runtime, onto a
    // protected root itself, into the app folder, round in a loop, to nowhere.
    fs.link(format!("{HOME}/to-wf-2"), format!("{DOCS}/workflows/wf-2"));
    fs.link(format!("{HOME}/to-chat-2"), format!("{RUNTIMES}/chat-2"));
    fs.link(format!("{HOME}/to-docs"), DOCS);
    fs.link(
        format!("{HOME}/to-auth"),
        "/home/ann/.local/share/AgentWorks/state/auth",
    );
    fs.link(format!("{HOME}/loop-a"), format!("{HOME}/loop-b"));
    fs.link(format!("{HOME}/loop-b"), format!("{HOME}/loop-a"));
    fs.link(format!("{HOME}/dangling"), "/nowhere/at/all");
    fs.link(format!("{HOME}/relative-up"), "../../home/ann/to-wf-2");
    fs.link(format!("{DOCS}/workflows/wf-1/up"), "../../../..");
    fs
}

/// A path segment a hostile caller might send.
fn segment() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => "[a-z0-9._-]{1,10}".prop_map(String::into_bytes),
        1 => Just(b"..".to_vec()),
        1 => Just(b".".to_vec()),
        1 => Just(b"a \"quoted\" (x) ;y".to_vec()),
        1 => Just(b"#\"regex\"".to_vec()),
        1 => Just(b") (allow default".to_vec()),
        1 => Just(b"a\nb".to_vec()),
        1 => Just(b"a\rb".to_vec()),
        1 => Just(b"nul\0byte".to_vec()),
        1 => Just(b"caf\xe9\xff".to_vec()),
        1 => Just(vec![b'x'; 300]),
        1 => Just("é ü Ω 漢字".as_bytes().to_vec()),
        1 => Just(b"$1 [x] {2} ^ | * + ? \\".to_vec()),
        2 => proptest::collection::vec(any::<u8>().prop_filter("no slash", |b| *b != b'/'), 1..12),
    ]
}

/// A path: under a meaningful prefix (a workflow, the runtimes, a symlink of the world), or made
/// of hostile segments alone, absolute or not.
fn hostile_path() -> impl Strategy<Value = PathBuf> {
    let prefix = prop_oneof![
        Just(String::new()),
        Just(format!("{DOCS}/workflows/wf-1")),
        Just(format!("{DOCS}/workflows")),
        Just(format!("{RUNTIMES}/chat-1")),
        Just(format!("{RUNTIMES}/chat-2")),
        Just(HOME.to_owned()),
        Just(format!("{HOME}/to-wf-2")),
        Just(format!("{HOME}/to-chat-2")),
        Just(format!("{HOME}/to-docs")),
        Just(format!("{HOME}/to-auth")),
        Just(format!("{HOME}/loop-a")),
        Just(format!("{HOME}/dangling")),
        Just(format!("{HOME}/relative-up")),
        Just(format!("{DOCS}/workflows/wf-1/up")),
        Just("/".to_owned()),
    ];
    (
        prefix,
        proptest::collection::vec(segment(), 0..4),
        any::<bool>(),
    )
        .prop_map(|(prefix, segments, relative)| {
            let mut bytes = prefix.into_bytes();
            for s in segments {
                if !bytes.ends_with(b"/") {
                    bytes.push(b'/');
                }
                bytes.extend(s);
            }
            if relative {
                while bytes.first() == Some(&b'/') {
                    bytes.remove(0);
                }
            }
            if bytes.is_empty() {
                bytes.push(b'/');
            }
            PathBuf::from(OsString::from_vec(bytes))
        })
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn layout(fs: &Fs) -> Layout {
    Layout::resolve(
        &LayoutInputs {
            os: Os::Linux,
            home: HOME.into(),
            xdg_data_home: None,
            state_root: None,
            workspace_docs: None,
        },
        fs,
    )
    .unwrap()
}

fn clean(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    path.is_absolute()
        && !path.components().any(|c| c == Component::ParentDir)
        && !bytes.contains(&0)
        && !bytes.contains(&b'\n')
        && !bytes.contains(&b'\r')
}

/// The invariants every built policy keeps, whatever it was built from.
fn check_invariants(policy: &Policy, layout: &Layout) -> Result<(), TestCaseError> {
    let paths = policy
        .protected()
        .iter()
        .map(PathBuf::as_path)
        .chain([policy.runtime(), policy.runtimes_dir(), policy.home()])
        .chain(policy.grants().iter().map(|g| g.path.as_path()))
        .chain(policy.blocked_programs().iter().map(PathBuf::as_path))
        .chain(policy.unix_socket_allow().iter().map(PathBuf::as_path))
        .chain(policy.hardened().iter().map(|h| h.path()));
    for path in paths {
        prop_assert!(clean(path), "an unclean path in the policy: {:?}", path);
    }
    for grant in policy.grants() {
        prop_assert!(
            policy.protected().iter().any(|r| grant.path.starts_with(r)),
            "grant {:?} outside every protected root",
            grant.path
        );
        prop_assert!(
            !policy
                .protected()
                .iter()
                .any(|r| r.starts_with(&grant.path)),
            "grant {:?} contains a protected root",
            grant.path
        );
        prop_assert!(
            !layout.is_in_runtimes(&grant.path) || grant.path.starts_with(policy.runtime()),
            "grant {:?} inside another chat's runtime",
            grant.path
        );
        // The protected roots themselves stay closed (but a configured one inside this chat's
        // own runtime, which the runtime opens again).
        for root in policy
            .protected()
            .iter()
            .filter(|r| !r.starts_with(policy.runtime()))
        {
            let v = policy.decide(Op::List, root);
            prop_assert!(!v.allowed, "{:?} listable through {:?}", root, grant.path);
        }
    }
    Ok(())
}

fn build(
    fs: &Fs,
    chat: &ChatId,
    grants: &[GrantRequest],
    config: &Config,
) -> Result<Policy, PolicyError> {
    let layout = layout(fs);
    Policy::build(
        &PolicyRequest {
            os: Os::Linux,
            layout: &layout,
            chat,
            grants,
            config,
            privileged: false,
            settings: &[],
        },
        fs,
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn hostile_grants_give_a_clear_error_or_a_policy_that_keeps_the_invariants(
        paths in proptest::collection::vec(hostile_path(), 1..4),
        read_only in proptest::collection::vec(any::<bool>(), 4),
        harden in any::<bool>(),
    ) {
        let fs = world();
        let chat = ChatId::new("chat-1").unwrap();
        let grants: Vec<GrantRequest> = paths
            .iter()
            .zip(&read_only)
            .map(|(path, ro)| GrantRequest {
                path: path.clone(),
                access: if *ro { sandbox_core::Access::ReadOnly } else { sandbox_core::Access::ReadWrite },
            })
            .collect();
        let mut config = Config::default();
        config.policy.harden = harden;
        match build(&fs, &chat, &grants, &config) {
            Ok(policy) => {
                check_invariants(&policy, &layout(&fs))?;
                for path in &paths {
                    prop_assert!(clean(path), "{:?} was accepted", path);
                }
            }
            Err(e) => {
                let message = e.to_string();
                prop_assert!(!message.is_empty());
                // The message names the path it is about (lossily, when it is not UTF-8).
                let named = paths.iter().any(|p| {
                    let text = lossy(p.as_os_str().as_bytes());
                    message.contains(&text) || message.contains(&text.escape_debug().to_string())
                });
                prop_assert!(named, "the error does not name the grant: {}", message);
                let bad_bytes = paths.iter().any(|p| !clean(p));
                if let PolicyError::BadCharacter { .. } | PolicyError::Relative { .. } | PolicyError::DotDot { .. } = e {
                    prop_assert!(bad_bytes);
                }
            }
        }
    }

    #[test]
    fn hostile_configured_paths_and_patterns_give_a_clear_error_or_a_policy(
        protected in proptest::collection::vec(hostile_path(), 0..3),
        blocked in proptest::collection::vec(hostile_path(), 0..3),
        sockets in proptest::collection::vec(hostile_path(), 0..2),
        refused in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 0..3),
    ) {
        let fs = world();
        let chat = ChatId::new("chat-1").unwrap();
        let mut config = Config::default();
        config.policy.protected = protected;
        config.policy.blocked_programs = blocked;
        config.policy.allow_unix_sockets = sockets;
        config.policy.refused = refused.iter().map(|r| lossy(r)).collect();
        let grants = [GrantRequest::parse(&format!("{DOCS}/workflows/wf-1")).unwrap()];
        match build(&fs, &chat, &grants, &config) {
            Ok(policy) => {
                check_invariants(&policy, &layout(&fs))?;
                for pattern in policy.refused() {
                    let name = pattern.name();
                    prop_assert!(!name.is_empty() && !name.contains('/') && !name.contains('\0'));
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn decide_answers_any_path_without_panicking(
        path in hostile_path(),
        op in proptest::sample::select(Op::ALL.to_vec()),
    ) {
        let fs = world();
        let chat = ChatId::new("chat-1").unwrap();
        let mut config = Config::default();
        config.policy.harden = true;
        let grants = [
            GrantRequest::parse(&format!("{DOCS}/workflows/wf-1:rw")).unwrap(),
            GrantRequest::parse(&format!("{DOCS}/workflows/wf-2:ro")).unwrap(),
        ];
        let policy = build(&fs, &chat, &grants, &config).unwrap();
        let verdict = policy.decide(op, &path);
        // Whatever a path spells, nothing inside another chat's runtime is allowed.
        if clean(&path) && path.starts_with(format!("{RUNTIMES}/chat-2")) {
            prop_assert!(!verdict.allowed, "{:?} {:?}: {:?}", op, path, verdict);
        }
    }

    #[test]
    fn chat_ids_are_names_never_paths(id in proptest::collection::vec(any::<u8>(), 0..140)) {
        let text = lossy(&id);
        match ChatId::new(&text) {
            Ok(chat) => {
                prop_assert!(!chat.as_str().contains('/') && chat.as_str() != ".." && chat.as_str() != ".");
                let layout = layout(&world());
                let runtime = layout.runtime(&chat);
                let runtimes = layout.runtimes_dir();
                prop_assert_eq!(runtime.parent(), Some(runtimes.as_path()));
            }
            Err(e) => prop_assert!(e.to_string().contains("is not valid")),
        }
    }

    #[test]
    fn chat_ids_that_look_like_paths_are_refused(
        id in prop_oneof![
            Just("../chat-2".to_owned()),
            Just("/etc".to_owned()),
            Just("chat-1/../chat-2".to_owned()),
            Just("..".to_owned()),
            Just("a\0b".to_owned()),
            "[a-z]{0,5}/[a-z]{0,5}",
        ],
    ) {
        prop_assert!(ChatId::new(&id).is_err());
    }

    #[test]
    fn refused_patterns_and_grant_flags_never_panic(text in ".{0,40}", bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        if let Ok(pattern) = RefusedPattern::new(&text) {
            let name = std::ffi::OsStr::from_bytes(&bytes);
            let _ = pattern.matches_name(name);
            let _ = pattern.refuses(Path::new(name));
            let _ = pattern.refuses_on(Os::MacOs, Path::new(name));
        }
        // Either a request or a refusal that names the grant: never a panic, never a path that
        // swallowed a wrong access suffix.
        match GrantRequest::parse(&text) {
            Ok(g) => {
                let tail = g.path.to_string_lossy().rsplit('/').next().unwrap_or("").to_owned();
                prop_assert!(!tail.contains(':') || text.ends_with(":ro") || text.ends_with(":rw"), "{text:?}");
            }
            Err(e) => prop_assert!(e.to_string().contains("is not an access"), "{e}"),
        }
    }

    #[test]
    fn configuration_text_never_panics(text in "(\\[policy\\]\n|\\[layout\\]\n|harden = |protected = |\\[cli\\.x\\]\n|program = |\"|'|=|\\[|\\]|\n|[a-z_]{1,8}| |#|\\\\|é){0,30}") {
        match Config::parse(&text, "fuzz.toml", &["x"]) {
            Ok(_) => {}
            Err(e) => prop_assert!(e.to_string().contains("fuzz.toml")),
        }
    }
}

#[test]
fn symlink_grants_resolve_or_are_refused_with_the_reason() {
    let fs = world();
    let chat = ChatId::new("chat-1").unwrap();
    let config = Config::default();
    let one = |grant: &str| build(&fs, &chat, &[GrantRequest::parse(grant).unwrap()], &config);
    // A link in the home into a protected root names the folder through something every chat
    // can retarget: refused, with the folder to grant instead.
    for grant in ["to-wf-2", "relative-up"] {
        let err = one(&format!("{HOME}/{grant}")).unwrap_err().to_string();
        assert!(err.contains("through a symlink"), "{grant}: {err}");
        assert!(
            err.contains(&format!("{DOCS}/workflows/wf-2")),
            "{grant}: {err}"
        );
    }
    let p = one(&format!("{DOCS}/workflows/wf-2")).unwrap();
    assert_eq!(
        p.grants()[0].path,
        Path::new(&format!("{DOCS}/workflows/wf-2"))
    );
    for (grant, expected) in [
        ("to-chat-2", "another chat's runtime"),
        ("to-docs", "contains the protected root"),
        ("to-auth", "inside the app folder"),
        ("loop-a", "cannot resolve grant"),
        ("dangling", "does not exist"),
    ] {
        let err = one(&format!("{HOME}/{grant}")).unwrap_err().to_string();
        assert!(err.contains(expected), "{grant}: {err}");
        assert!(err.contains(grant), "{grant}: {err}");
    }
    let err = one(&format!("{DOCS}/workflows/wf-1/up"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("contains the protected root"), "{err}");
    let long = format!("{DOCS}/workflows/{}", "x".repeat(300));
    let err = one(&long).unwrap_err().to_string();
    assert!(err.contains("cannot resolve grant"), "{err}");
}
