use std::path::Path;

use super::*;
use crate::LayoutInputs;
use crate::path::fake::FakeFs;

const HOME: &str = "/home/ann";
const STATE: &str = "/home/ann/.local/share/AgentWorks";
const DOCS: &str = "/home/ann/.local/share/AgentWorks/workspace-docs";
const RUNTIMES: &str = "/home/ann/.local/share/AgentWorks/state/cli-runtimes/v1";

fn fs() -> FakeFs {
    FakeFs::default()
        .file("/home/ann/notes.txt")
        .file(&format!("{STATE}/config.json"))
        .dir(&format!("{STATE}/state/auth"))
        .dir(&format!("{RUNTIMES}/chat-1"))
        .dir(&format!("{RUNTIMES}/chat-2"))
        .file(&format!("{DOCS}/workflows/wf-1/planning/plan.json"))
        .file(&format!("{DOCS}/workflows/wf-1/raw.sqlite"))
        .file(&format!("{DOCS}/workflows/wf-1/doc.md"))
        .dir(&format!("{DOCS}/workflows/wf-1/sub"))
        .file(&format!("{DOCS}/workflows/wf-2/doc.md"))
        .file(&format!("{DOCS}/workflows/wf-3/doc.md"))
        .file("/usr/bin/xdg-open")
        .link("/home/ann/link-to-wf2", &format!("{DOCS}/workflows/wf-2"))
        .link("/home/ann/link-to-chat2", &format!("{RUNTIMES}/chat-2"))
}

fn layout(fs: &FakeFs) -> Layout {
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

fn build(grants: &[&str]) -> Result<Policy, PolicyError> {
    build_with(grants, &Config::default())
}

fn build_with(grants: &[&str], config: &Config) -> Result<Policy, PolicyError> {
    let fs = fs();
    let layout = layout(&fs);
    let chat = ChatId::new("chat-1").unwrap();
    let grants: Vec<_> = grants
        .iter()
        .map(|g| GrantRequest::parse(g).unwrap())
        .collect();
    Policy::build(
        &PolicyRequest {
            os: Os::Linux,
            layout: &layout,
            chat: &chat,
            grants: &grants,
            config,
            privileged: false,
            settings: &[],
        },
        &fs,
    )
}

fn policy() -> Policy {
    build(&[
        &format!("{DOCS}/workflows/wf-1:rw"),
        &format!("{DOCS}/workflows/wf-3:ro"),
    ])
    .unwrap()
}

fn rule(op: Op, path: &str) -> (bool, &'static str) {
    let v = policy().decide(op, Path::new(path));
    (v.allowed, v.rule.name())
}

#[test]
fn the_home_is_open() {
    for op in [Op::Read, Op::Write, Op::Exec, Op::List, Op::Move] {
        assert_eq!(rule(op, "/home/ann/notes.txt"), (true, "open"), "{op:?}");
    }
    assert_eq!(rule(Op::Write, "/home/ann/.newfile"), (true, "open"));
    assert_eq!(rule(Op::Write, "/tmp/x"), (true, "open"));
}

#[test]
fn the_runtime_is_read_write() {
    let f = format!("{RUNTIMES}/chat-1/out.txt");
    for op in [Op::Read, Op::Write, Op::Exec, Op::Move] {
        assert_eq!(rule(op, &f), (true, "runtime"), "{op:?}");
    }
    assert_eq!(
        rule(Op::List, &format!("{RUNTIMES}/chat-1")),
        (true, "runtime")
    );
    assert_eq!(
        rule(Op::Move, &format!("{RUNTIMES}/chat-1")),
        (false, "runtime")
    );
}

#[test]
fn a_read_write_grant_is_read_write() {
    let f = format!("{DOCS}/workflows/wf-1/doc.md");
    assert_eq!(rule(Op::Read, &f), (true, "granted"));
    assert_eq!(rule(Op::Write, &f), (true, "granted"));
    assert_eq!(
        rule(Op::Write, &format!("{DOCS}/workflows/wf-1/new.md")),
        (true, "granted")
    );
    assert_eq!(
        rule(Op::Move, &format!("{DOCS}/workflows/wf-1")),
        (false, "granted")
    );
}

#[test]
fn a_read_only_grant_is_read_only() {
    let f = format!("{DOCS}/workflows/wf-3/doc.md");
    assert_eq!(rule(Op::Read, &f), (true, "granted"));
    assert_eq!(
        rule(Op::List, &format!("{DOCS}/workflows/wf-3")),
        (true, "granted")
    );
    assert_eq!(rule(Op::Write, &f), (false, "granted"));
    assert_eq!(rule(Op::Move, &f), (false, "granted"));
}

#[test]
fn protected_roots_are_closed() {
    for path in [
        format!("{DOCS}/workflows/wf-2/doc.md"),
        format!("{STATE}/config.json"),
        format!("{STATE}/state/auth/token"),
        format!("{RUNTIMES}/chat-2/x"),
        format!("{RUNTIMES}/new-beside"),
    ] {
        for op in [Op::Read, Op::Write, Op::Exec] {
            assert_eq!(rule(op, &path), (false, "closed"), "{op:?} {path}");
        }
    }
    assert_eq!(rule(Op::List, RUNTIMES), (false, "closed"));
    assert_eq!(rule(Op::List, DOCS), (false, "closed"));
}

/// The launcher's locks on the person's files are closed to every chat, whatever its grants:
/// a chat that could take one would make other chats' launches wait (`person_files`).
#[test]
fn the_launchers_locks_on_the_persons_files_are_closed() {
    let locks = format!("{STATE}/state/cli-sandbox/locks");
    for p in [
        policy(),
        build(&[]).unwrap(),
        build(&[&format!("{DOCS}/workflows:rw")]).unwrap(),
    ] {
        assert_eq!(p.person_file_locks(), Path::new(&locks));
        for path in [locks.clone(), format!("{locks}/0123456789abcdef.lock")] {
            for op in [Op::Read, Op::Write, Op::Exec, Op::List, Op::Move] {
                let v = p.decide(op, Path::new(&path));
                assert!(!v.allowed, "{op:?} {path}: {v:?}");
            }
            assert_eq!(p.decide(Op::Write, Path::new(&path)).rule.name(), "closed");
        }
    }
}

#[test]
fn refused_patterns_win_inside_grants_even_when_created_later() {
    for path in [
        format!("{DOCS}/workflows/wf-1/planning"),
        format!("{DOCS}/workflows/wf-1/planning/plan.json"),
        format!("{DOCS}/workflows/wf-1/raw.sqlite"),
        format!("{DOCS}/workflows/wf-1/later.db"),
        format!("{DOCS}/workflows/wf-3/planning/new.json"),
    ] {
        for op in [Op::Read, Op::Write] {
            assert_eq!(rule(op, &path), (false, "refused"), "{op:?} {path}");
        }
    }
    // Only at the grant's top: a database deeper down is the workflow's own content.
    assert_eq!(
        rule(Op::Write, &format!("{DOCS}/workflows/wf-1/sub/x.db")),
        (true, "granted")
    );
}

#[test]
fn refused_patterns_do_not_apply_to_the_runtime() {
    let f = format!("{RUNTIMES}/chat-1/cache.sqlite");
    assert_eq!(rule(Op::Write, &f), (true, "runtime"));
}

#[test]
fn blocked_programs_win_over_everything() {
    assert_eq!(rule(Op::Exec, "/usr/bin/xdg-open"), (false, "blocked"));
    assert_eq!(rule(Op::Read, "/usr/bin/xdg-open"), (false, "blocked"));
    assert_eq!(rule(Op::Exec, "/usr/bin/env"), (true, "open"));
}

#[test]
fn protected_roots_and_their_ancestors_are_pinned() {
    for path in [DOCS, STATE, "/home/ann/.local", "/home/ann", "/home", "/"] {
        assert_eq!(rule(Op::Move, path), (false, "pinned"), "{path}");
    }
    assert_eq!(rule(Op::Move, "/home/ann/other"), (true, "open"));
}

#[test]
fn precedence_is_blocked_refused_granted_closed_open() {
    // A configured blocked program inside a grant's refused folder: blocked decides.
    let config = Config {
        policy: crate::PolicyConfig {
            blocked_programs: vec![format!("{DOCS}/workflows/wf-1/planning/plan.json").into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let p = build_with(&[&format!("{DOCS}/workflows/wf-1")], &config).unwrap();
    let plan = format!("{DOCS}/workflows/wf-1/planning/plan.json");
    assert_eq!(p.decide(Op::Exec, Path::new(&plan)).rule.name(), "blocked");
    assert_eq!(
        p.decide(
            Op::Read,
            Path::new(&format!("{DOCS}/workflows/wf-1/raw.sqlite"))
        )
        .rule
        .name(),
        "refused"
    );
}

#[test]
fn configured_protected_roots_and_patterns_are_added() {
    let config = Config::parse(
        "[policy]\nprotected = [\"/srv/tenant\"]\nrefused = [\"secrets/\"]\n",
        "t",
        &[],
    )
    .unwrap();
    let p = build_with(&[&format!("{DOCS}/workflows/wf-1")], &config).unwrap();
    assert!(!p.decide(Op::Read, Path::new("/srv/tenant/x")).allowed);
    assert!(
        !p.decide(
            Op::Read,
            Path::new(&format!("{DOCS}/workflows/wf-1/secrets/k"))
        )
        .allowed
    );
    assert!(
        !p.decide(
            Op::Read,
            Path::new(&format!("{DOCS}/workflows/wf-1/planning/plan.json"))
        )
        .allowed
    );
}

#[test]
fn bad_grants_are_refused_with_the_path_and_the_fix() {
    let cases: Vec<(String, &str)> = vec![
        ("workflows/wf-1".into(), "not absolute"),
        (format!("{DOCS}/workflows/../workflows/wf-2"), "`..`"),
        (format!("{DOCS}/workflows/wf-9"), "does not exist"),
        (format!("{DOCS}/workflows/wf-1/doc.md"), "not a folder"),
        (format!("{RUNTIMES}/chat-2"), "another chat's runtime"),
        ("/home/ann/link-to-chat2".into(), "another chat's runtime"),
        (format!("{STATE}/state/auth"), "inside the app folder"),
        ("/home/ann".into(), "contains the protected root"),
        ("/".into(), "contains the protected root"),
        ("/home/ann/link-to-chat2/..".into(), "`..`"),
        ("/usr/bin".into(), "outside every protected root"),
    ];
    for (grant, expected) in cases {
        let err = build(&[&grant]).unwrap_err().to_string();
        assert!(err.contains(expected), "{grant}: {err}");
        assert!(
            err.contains(grant.trim_end_matches(":rw")),
            "{grant}: {err}"
        );
    }
}

#[test]
fn nul_and_newline_in_a_grant_are_refused() {
    for bad in ["/home/ann/a\nb", "/home/ann/a\0b"] {
        let err = build(&[bad]).unwrap_err();
        assert!(matches!(err, PolicyError::BadCharacter { .. }), "{err}");
    }
}

#[test]
fn a_grant_named_through_a_symlink_into_or_below_a_protected_root_is_refused() {
    // A link in the home (which every chat can write and retarget) leading into the root.
    let err = build(&["/home/ann/link-to-wf2:ro"]).unwrap_err();
    assert!(
        matches!(err, PolicyError::GrantThroughSymlink { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("/home/ann/link-to-wf2"), "{err}");
    assert!(
        err.to_string().contains(&format!("{DOCS}/workflows/wf-2")),
        "{err}"
    );

    // A link planted inside a read-write grant by another chat: `wf-1/outputs -> ../../users`.
    let planted = |fs: FakeFs| {
        fs.dir(&format!("{DOCS}/users/bob")).link(
            &format!("{DOCS}/workflows/wf-1/outputs"),
            &format!("{DOCS}/users"),
        )
    };
    let planted_fs = planted(fs());
    let planted_layout = layout(&planted_fs);
    let chat = ChatId::new("chat-1").unwrap();
    for asked in [
        format!("{DOCS}/workflows/wf-1/outputs:ro"),
        format!("{DOCS}/workflows/wf-1/outputs/bob:ro"),
    ] {
        let grants = vec![GrantRequest::parse(&asked).unwrap()];
        let err = Policy::build(
            &PolicyRequest {
                os: Os::Linux,
                layout: &planted_layout,
                chat: &chat,
                grants: &grants,
                config: &Config::default(),
                privileged: false,
                settings: &[],
            },
            &planted_fs,
        )
        .unwrap_err();
        assert!(
            matches!(err, PolicyError::GrantThroughSymlink { .. }),
            "{asked}: {err}"
        );
    }
    // A link that leads to itself (`wf-1/self -> wf-1`) is a link below the root too.
    let looped_fs = fs().link(
        &format!("{DOCS}/workflows/wf-1/self"),
        &format!("{DOCS}/workflows/wf-1"),
    );
    let looped_layout = layout(&looped_fs);
    let grants = vec![GrantRequest::parse(&format!("{DOCS}/workflows/wf-1/self/sub")).unwrap()];
    let err = Policy::build(
        &PolicyRequest {
            os: Os::Linux,
            layout: &looped_layout,
            chat: &chat,
            grants: &grants,
            config: &Config::default(),
            privileged: false,
            settings: &[],
        },
        &looped_fs,
    )
    .unwrap_err();
    assert!(
        matches!(err, PolicyError::GrantThroughSymlink { .. }),
        "{err}"
    );
}

#[test]
fn a_grant_named_through_a_symlink_above_the_protected_root_is_resolved() {
    // The whole home moved and linked back (macOS's /var -> /private/var is the same shape).
    let moved_fs = fs().dir("/data/ann").link("/home/moved", "/home/ann");
    let moved_layout = layout(&moved_fs);
    let chat = ChatId::new("chat-1").unwrap();
    let grants = vec![
        GrantRequest::parse("/home/moved/.local/share/AgentWorks/workspace-docs/workflows/wf-2:ro")
            .unwrap(),
    ];
    let p = Policy::build(
        &PolicyRequest {
            os: Os::Linux,
            layout: &moved_layout,
            chat: &chat,
            grants: &grants,
            config: &Config::default(),
            privileged: false,
            settings: &[],
        },
        &moved_fs,
    )
    .unwrap();
    assert_eq!(
        p.grants[0].path,
        Path::new(&format!("{DOCS}/workflows/wf-2"))
    );
}

#[test]
fn the_same_grant_twice_keeps_the_wider_access() {
    let wf = format!("{DOCS}/workflows/wf-1");
    let p = build(&[&format!("{wf}:ro"), &format!("{wf}:rw")]).unwrap();
    assert_eq!(
        p.grants,
        vec![Grant {
            path: wf.into(),
            access: Access::ReadWrite
        }]
    );
}

#[test]
fn chat_ids_are_names_not_paths() {
    for bad in ["", ".", "..", "a/b", "../x", "a b", "é", &"x".repeat(129)] {
        assert!(ChatId::new(bad).is_err(), "{bad:?}");
    }
    for good in ["chat-1", "A.b_c-9", &"x".repeat(128)] {
        assert!(ChatId::new(good).is_ok(), "{good:?}");
    }
}

#[test]
fn bad_patterns_are_refused() {
    for bad in ["", "/", "a/b", "..", "*", "*/"] {
        assert!(RefusedPattern::new(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn globs_match_names() {
    let p = RefusedPattern::new("*.db").unwrap();
    assert!(p.matches_name("x.db") && p.matches_name(".db") && !p.matches_name("x.dbx"));
    let p = RefusedPattern::new("a?c").unwrap();
    assert!(p.matches_name("abc") && !p.matches_name("ac"));
}

#[test]
fn layout_overrides_and_xdg() {
    let fs = fs();
    let l = Layout::resolve(
        &LayoutInputs {
            os: Os::Linux,
            home: HOME.into(),
            xdg_data_home: Some("/home/ann/data".into()),
            state_root: Some("/srv/state".into()),
            workspace_docs: None,
        },
        &fs,
    )
    .unwrap();
    assert_eq!(l.app_folder, Path::new("/home/ann/data/AgentWorks"));
    assert_eq!(l.state_root, Path::new("/srv/state"));
    assert_eq!(l.workspace_docs, Path::new("/srv/state/workspace-docs"));
    let mac = Layout::resolve(
        &LayoutInputs {
            os: Os::MacOs,
            home: HOME.into(),
            xdg_data_home: None,
            state_root: None,
            workspace_docs: None,
        },
        &fs,
    )
    .unwrap();
    assert_eq!(
        mac.app_folder,
        Path::new("/home/ann/Library/Application Support/AgentWorks")
    );
}

#[test]
fn grant_parse_reads_the_access_suffix() {
    let parse = |text: &str| GrantRequest::parse(text).unwrap();
    assert_eq!(parse("/a:ro").access, Access::ReadOnly);
    assert_eq!(parse("/a:rw").access, Access::ReadWrite);
    assert_eq!(parse("/a").access, Access::ReadWrite);
    // A `:` above the last `/` is part of a folder's name.
    assert_eq!(parse("/a:b/c").path, Path::new("/a:b/c"));
    assert_eq!(parse("/a:b/c:ro").path, Path::new("/a:b/c"));
    // A folder whose own name holds `:`: its access written out.
    let named = parse("/w/wf1:xx:rw");
    assert_eq!(
        (named.path.as_path(), named.access),
        (Path::new("/w/wf1:xx"), Access::ReadWrite)
    );
    let named = parse("/w/wf1:ro:ro");
    assert_eq!(
        (named.path.as_path(), named.access),
        (Path::new("/w/wf1:ro"), Access::ReadOnly)
    );
}

#[test]
fn grant_parse_refuses_any_other_access_naming_the_grant_and_the_way_out() {
    for (text, suffix) in [
        ("/w/wf1:xx", "xx"),
        ("/w/wf1:RO", "RO"),
        ("/w/wf1:Rw", "Rw"),
        ("/w/wf1:", ""),
        ("/w/wf1:ro ", "ro "),
        ("/w/wf1:read-only", "read-only"),
        ("/w/wf1:rw:", ""),
    ] {
        let err = GrantRequest::parse(text).unwrap_err();
        assert_eq!(
            err,
            PolicyError::BadAccess {
                grant: text.to_owned(),
                suffix: suffix.to_owned()
            }
        );
        let message = err.to_string();
        for word in [text, "`:ro`", "`:rw`", &format!("`{text}:rw`")] {
            assert!(message.contains(word), "{word} missing: {message}");
        }
    }
}

#[test]
fn on_macos_refused_names_ignore_ascii_case() {
    let pattern = |text| RefusedPattern::new(text).unwrap();
    for (text, relative) in [
        ("planning/", "PLANNING/plan.json"),
        ("planning/", "Planning"),
        ("*.sqlite", "Raw.SQLite"),
        ("*.db", "x.DB"),
    ] {
        assert!(
            pattern(text).refuses_on(Os::MacOs, Path::new(relative)),
            "{text} {relative}"
        );
        assert!(
            !pattern(text).refuses_on(Os::Linux, Path::new(relative)),
            "{text} {relative}"
        );
        assert!(
            !pattern(text).refuses(Path::new(relative)),
            "{text} {relative}"
        );
    }
    // Only ASCII folds: the glob matches bytes.
    assert!(!pattern("é.db").refuses_on(Os::MacOs, Path::new("É.db")));
}

fn hardened_policy(fs: &FakeFs, os: Os) -> Policy {
    let layout = Layout::resolve(
        &LayoutInputs {
            os,
            home: HOME.into(),
            xdg_data_home: None,
            state_root: None,
            workspace_docs: None,
        },
        fs,
    )
    .unwrap();
    let config = Config::parse("[policy]\nharden = true\n", "t", &[]).unwrap();
    let chat = ChatId::new("chat-1").unwrap();
    Policy::build(
        &PolicyRequest {
            os,
            layout: &layout,
            chat: &chat,
            grants: &[],
            config: &config,
            privileged: false,
            settings: &[],
        },
        fs,
    )
    .unwrap()
}

fn verdict(p: &Policy, op: Op, path: &str) -> (bool, &'static str) {
    let v = p.decide(op, Path::new(path));
    (v.allowed, v.rule.name())
}

#[test]
fn harden_closes_persistence_paths_to_writing_and_moving_but_not_reading() {
    let fs = fs().file("/home/ann/.bashrc").dir("/home/ann/.config");
    let p = hardened_policy(&fs, Os::Linux);
    for path in [
        "/home/ann/.bashrc",
        "/home/ann/.profile",
        "/home/ann/.zshrc",
        "/home/ann/.gitconfig",
        "/home/ann/.ssh/authorized_keys",
        "/home/ann/.config/autostart",
        "/home/ann/.config/autostart/evil.desktop",
        "/home/ann/.config/systemd/user/evil.service",
        "/home/ann/.config/git/hooks/pre-commit",
    ] {
        assert_eq!(verdict(&p, Op::Write, path), (false, "hardened"), "{path}");
        assert_eq!(verdict(&p, Op::Move, path), (false, "hardened"), "{path}");
        assert_eq!(verdict(&p, Op::Read, path), (true, "hardened"), "{path}");
        assert_eq!(verdict(&p, Op::Exec, path), (true, "hardened"), "{path}");
    }
    // Their ancestors cannot be moved (a folder renamed into place would bring its own); a new
    // entry inside one that is not at the home's top is the person's own business.
    assert_eq!(
        verdict(&p, Op::Move, "/home/ann/.config"),
        (false, "hardened")
    );
    assert_eq!(verdict(&p, Op::Move, "/home/ann/.ssh"), (false, "hardened"));
    // The folder at the home's top itself is an entry of the top: not made, replaced or removed.
    assert_eq!(
        verdict(&p, Op::Write, "/home/ann/.config"),
        (false, "hardened")
    );
    assert_eq!(
        verdict(&p, Op::Write, "/home/ann/.config/other-app/x"),
        (true, "open")
    );
    assert_eq!(
        verdict(&p, Op::Write, "/home/ann/.ssh/known_hosts"),
        (true, "open")
    );
    assert_eq!(
        verdict(&p, Op::Write, "/home/ann/work/notes.txt"),
        (true, "open")
    );
    // The home is pinned (the app folder is in it): pinned comes first.
    assert_eq!(verdict(&p, Op::Move, HOME), (false, "pinned"));
    // macOS has launchd agents, Linux has autostart.
    assert!(p.hardened.iter().all(|h| !h.path.ends_with("LaunchAgents")));
    let mac = hardened_policy(&fs, Os::MacOs);
    assert_eq!(
        verdict(&mac, Op::Write, "/home/ann/Library/LaunchAgents/x.plist"),
        (false, "hardened")
    );
    assert_eq!(
        verdict(&mac, Op::Write, "/home/ann/.config/autostart/x.desktop"),
        (true, "open")
    );
}

#[test]
fn harden_is_off_by_default() {
    let p = policy();
    assert!(p.hardened.is_empty());
    assert_eq!(rule(Op::Write, "/home/ann/.bashrc"), (true, "open"));
    assert_eq!(rule(Op::Move, "/home/ann/.config"), (true, "open"));
}

#[test]
fn harden_follows_symlinks_and_keeps_the_link_closed_too() {
    let fs = fs()
        .file("/home/ann/dotfiles/bashrc")
        .link("/home/ann/.bashrc", "/home/ann/dotfiles/bashrc")
        .dir("/home/ann/dotfiles/config")
        .link("/home/ann/.config", "/home/ann/dotfiles/config");
    let p = hardened_policy(&fs, Os::Linux);
    for path in [
        "/home/ann/.bashrc",
        "/home/ann/dotfiles/bashrc",
        "/home/ann/dotfiles/config/autostart/x.desktop",
    ] {
        assert_eq!(verdict(&p, Op::Write, path), (false, "hardened"), "{path}");
    }
    assert!(
        p.hardened
            .iter()
            .any(|h| h.path == Path::new("/home/ann/.config/autostart") && h.folder)
    );
    // The link to the folder is an ancestor: it cannot be swapped for another folder.
    assert_eq!(
        verdict(&p, Op::Move, "/home/ann/.config"),
        (false, "hardened")
    );
}

#[test]
fn harden_leaves_out_paths_in_a_protected_root() {
    // A home inside the state root (an odd layout): its persistence paths are closed already.
    let fs = fs();
    let layout = Layout::resolve(
        &LayoutInputs {
            os: Os::Linux,
            home: HOME.into(),
            xdg_data_home: None,
            state_root: Some(HOME.into()),
            workspace_docs: None,
        },
        &fs,
    )
    .unwrap();
    let config = Config::parse("[policy]\nharden = true\n", "t", &[]).unwrap();
    let chat = ChatId::new("chat-1").unwrap();
    let p = Policy::build(
        &PolicyRequest {
            os: Os::Linux,
            layout: &layout,
            chat: &chat,
            grants: &[],
            config: &config,
            privileged: false,
            settings: &[],
        },
        &fs,
    )
    .unwrap();
    assert_eq!(p.hardened, Vec::new());
    assert_eq!(
        verdict(&p, Op::Write, "/home/ann/.bashrc"),
        (false, "closed")
    );
}

#[test]
fn refused_patterns_match_names_that_are_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.sqlite");
    let p = RefusedPattern::new("*.sqlite").unwrap();
    assert!(p.matches_name(name));
    assert!(p.refuses(Path::new(name)));
    let grant = policy();
    let path = Path::new(&format!("{DOCS}/workflows/wf-1")).join(name);
    assert_eq!(grant.decide(Op::Read, &path).rule.name(), "refused");
}

#[test]
fn a_refused_name_is_refused_whatever_its_kind_with_everything_beneath_it() {
    let p = policy();
    let wf = format!("{DOCS}/workflows/wf-1");
    // A file named like the folder pattern, a folder named like a file pattern and what it holds.
    for path in [
        format!("{wf}/planning"),
        format!("{wf}/planning/plan.json"),
        format!("{wf}/raw.sqlite"),
        format!("{wf}/raw.sqlite/pages/1"),
        format!("{wf}/x.db/inner"),
    ] {
        for op in [Op::Read, Op::Write, Op::List] {
            assert_eq!(
                p.decide(op, Path::new(&path)).rule.name(),
                "refused",
                "{op:?} {path}"
            );
        }
    }
    assert!(
        p.decide(Op::Read, Path::new(&format!("{wf}/doc.md")))
            .allowed
    );
}

#[test]
fn refused_entries_are_worked_out_once_for_every_kind() {
    use std::ffi::OsStr;
    let p = policy();
    let rw = &p.grants[0];
    assert_eq!(rw.access, Access::ReadWrite);
    let entries = [
        (OsStr::new("planning"), EntryKind::File),
        (OsStr::new("raw.db"), EntryKind::Symlink),
        (OsStr::new("x.sqlite"), EntryKind::Dir),
        (OsStr::new("doc.md"), EntryKind::File),
    ];
    let out = p.refused_entries(rw, entries);
    assert_eq!(
        out.present,
        vec![
            (rw.path.join("planning"), EntryKind::File),
            (rw.path.join("raw.db"), EntryKind::Symlink),
            (rw.path.join("x.sqlite"), EntryKind::Dir),
        ]
    );
    // `planning` is taken (by a file): nothing to create. Wildcards can be made later.
    assert!(out.create.is_empty());
    assert!(out.made_later);
    let empty = p.refused_entries(rw, std::iter::empty());
    assert_eq!(empty.create, vec![rw.path.join("planning")]);
    // A read-only grant: nothing is created and nothing can be made during the chat.
    let ro = &p.grants[1];
    assert_eq!(ro.access, Access::ReadOnly);
    let out = p.refused_entries(ro, std::iter::empty());
    assert!(out.create.is_empty() && !out.made_later);
    // Every name `refused_entries` closes, `decide` refuses, and the other way round.
    for (name, _) in entries {
        let path = rw.path.join(name);
        let closed = p
            .refused_entries(rw, [(name, EntryKind::File)])
            .present
            .len()
            == 1;
        assert_eq!(
            closed,
            !p.decide(Op::Read, &path).allowed,
            "{}",
            path.display()
        );
    }
}

#[test]
fn a_grant_inside_an_entry_another_grant_refuses_is_refused() {
    let wf = format!("{DOCS}/workflows/wf-1");
    let err = build(&[&format!("{wf}:rw"), &format!("{wf}/planning:ro")]).unwrap_err();
    assert!(matches!(err, PolicyError::GrantInRefused { .. }), "{err}");
    assert!(err.to_string().contains("planning/"), "{err}");
    // A grant inside a grant, outside its refused entries, is fine.
    assert!(build(&[&format!("{wf}:ro"), &format!("{wf}/sub:rw")]).is_ok());
}

fn build_privileged(grants: &[&str], config: &Config) -> Policy {
    let fs = fs()
        .dir("/etc/cron.d")
        .dir("/srv/data")
        .dir("/tmp")
        .dir("/var/tmp");
    let layout = layout(&fs);
    let chat = ChatId::new("chat-1").unwrap();
    let grants: Vec<_> = grants
        .iter()
        .map(|g| GrantRequest::parse(g).unwrap())
        .collect();
    Policy::build(
        &PolicyRequest {
            os: Os::Linux,
            layout: &layout,
            chat: &chat,
            grants: &grants,
            config,
            privileged: true,
            settings: &[],
        },
        &fs,
    )
    .unwrap()
}

#[test]
fn as_root_the_system_is_read_only_outside_the_home_the_temporary_folders_and_the_grants() {
    let mut config = Config::default();
    config.policy.writable = vec!["/srv/data".into()];
    let wf = format!("{DOCS}/workflows/wf-1");
    let p = build_privileged(&[&format!("{wf}:rw")], &config);
    for path in [
        "/etc/cron.d/job",
        "/usr/local/bin/x",
        "/etc/profile.d/x.sh",
        "/var/spool/cron/root",
        "/dev/new-file",
    ] {
        let v = p.decide(Op::Write, Path::new(path));
        assert_eq!((v.allowed, v.rule.name()), (false, "system"), "{path}");
        assert!(p.decide(Op::Read, Path::new(path)).allowed, "{path}");
    }
    for path in [
        "/home/ann/.bashrc",
        "/tmp/x",
        "/var/tmp/x",
        "/dev/shm/x",
        "/dev/null",
        "/srv/data/x",
        &format!("{wf}/doc.md"),
        &format!("{RUNTIMES}/chat-1/out"),
    ] {
        assert!(p.decide(Op::Write, Path::new(path)).allowed, "{path}");
    }
    // Closed stays closed, and refused stays refused, also for root.
    assert_eq!(
        p.decide(Op::Write, Path::new(&format!("{STATE}/config.json")))
            .rule
            .name(),
        "closed"
    );
    // Not root: the system is the person's own permissions' business.
    let q = build_with(&[], &config).unwrap();
    assert!(!q.system_read_only);
    assert!(q.decide(Op::Write, Path::new("/etc/cron.d/job")).allowed);
}

#[test]
fn kernel_tunables_are_read_only_and_kernel_secrets_closed_whatever_the_uid() {
    for p in [
        build_with(&[], &Config::default()).unwrap(),
        build_privileged(&[], &Config::default()),
    ] {
        for path in [
            "/proc/sys/kernel/core_pattern",
            "/sys/power/state",
            "/proc/sysrq-trigger",
        ] {
            let w = p.decide(Op::Write, Path::new(path));
            assert_eq!((w.allowed, w.rule.name()), (false, "kernel"), "{path}");
            assert!(p.decide(Op::Read, Path::new(path)).allowed, "{path}");
        }
        for path in ["/proc/sched_debug", "/proc/kcore"] {
            assert!(!p.decide(Op::Read, Path::new(path)).allowed, "{path}");
        }
        // A process's own files in /proc stay writable (its own oom_score_adj, comm, ...).
        assert!(p.decide(Op::Write, Path::new("/proc/self/comm")).allowed);
    }
}

// ---------- where the launcher may read and write the person's files ----------

fn person(
    p: &Policy,
    op: Op,
    addressed: &str,
    resolved: &str,
    named: &[crate::NamedPlace],
) -> Result<(), crate::PersonPlaceRefusal> {
    p.person_file(op, Path::new(addressed), Path::new(resolved), named)
}

#[test]
fn person_files_are_the_homes_outside_protected_data() {
    use crate::PersonPlaceRefusal as R;
    let p = policy();
    let claude = "/home/ann/.claude.json";
    for op in [Op::Read, Op::Write] {
        assert_eq!(person(&p, op, claude, claude, &[]), Ok(()));
        assert_eq!(
            person(&p, op, claude, "/home/ann/dotfiles/claude.json", &[]),
            Ok(()),
            "a dotfile link elsewhere in the home"
        );
        assert_eq!(
            person(&p, op, claude, &format!("{STATE}/config.json"), &[]),
            Err(R::Protected { root: STATE.into() })
        );
        assert_eq!(
            person(&p, op, claude, &format!("{DOCS}/users/ann.json"), &[]),
            Err(R::Protected { root: DOCS.into() })
        );
        assert_eq!(
            person(
                &p,
                op,
                claude,
                &format!("{DOCS}/workflows/wf-1/doc.md"),
                &[]
            ),
            Err(R::Protected { root: DOCS.into() }),
            "a grant of this chat is still not the person's settings"
        );
        assert_eq!(
            person(
                &p,
                op,
                claude,
                &format!("{RUNTIMES}/chat-2/.claude.json"),
                &[]
            ),
            Err(R::OtherRuntime {
                runtimes: RUNTIMES.into()
            })
        );
        assert_eq!(
            person(
                &p,
                op,
                claude,
                &format!("{RUNTIMES}/chat-1/.claude.json"),
                &[]
            ),
            Err(R::Protected { root: STATE.into() }),
            "a home file never lands in the runtime, not even this chat's"
        );
        assert!(matches!(
            person(&p, op, claude, "/etc/claude.json", &[]),
            Err(R::NotThePersons { .. })
        ));
    }
}

#[test]
fn a_file_addressed_in_the_runtime_stays_in_the_runtime() {
    use crate::PersonPlaceRefusal as R;
    let p = policy();
    let addressed = format!("{RUNTIMES}/chat-1/.gemini/settings.json");
    assert_eq!(person(&p, Op::Write, &addressed, &addressed, &[]), Ok(()));
    assert_eq!(
        person(
            &p,
            Op::Write,
            &addressed,
            &format!("{RUNTIMES}/chat-2/s.json"),
            &[]
        ),
        Err(R::OtherRuntime {
            runtimes: RUNTIMES.into()
        })
    );
    assert_eq!(
        person(
            &p,
            Op::Write,
            &addressed,
            &format!("{STATE}/config.json"),
            &[]
        ),
        Err(R::Protected { root: STATE.into() })
    );
    assert!(matches!(
        person(&p, Op::Write, &addressed, "/home/ann/s.json", &[]),
        Err(R::LeavesRuntime { .. })
    ));
}

#[test]
fn named_places_widen_the_home_but_never_into_protected_data() {
    use crate::{NamedPlace, PersonPlaceRefusal as R};
    let p = policy();
    let srv = NamedPlace {
        var: "CODEX_HOME".into(),
        path: "/srv/codex".into(),
    };
    let file = "/srv/codex/config.toml";
    assert!(matches!(
        person(&p, Op::Write, file, file, &[]),
        Err(R::NotThePersons { .. })
    ));
    assert_eq!(
        person(&p, Op::Write, file, file, std::slice::from_ref(&srv)),
        Ok(())
    );
    let message = person(&p, Op::Write, file, "/srv/other/config.toml", &[srv])
        .unwrap_err()
        .to_string();
    assert!(message.contains("CODEX_HOME=`/srv/codex`"), "{message}");
    let inside = NamedPlace {
        var: "CODEX_HOME".into(),
        path: STATE.into(),
    };
    let file = format!("{STATE}/config.toml");
    assert_eq!(
        person(&p, Op::Write, &file, &file, &[inside]),
        Err(R::Protected { root: STATE.into() })
    );
}

#[test]
fn harden_keeps_the_launcher_from_writing_persistence_paths_for_the_chat() {
    use crate::PersonPlaceRefusal as R;
    let fs = fs().file("/home/ann/.bashrc");
    let p = hardened_policy(&fs, Os::Linux);
    let claude = "/home/ann/.claude.json";
    assert_eq!(
        person(&p, Op::Write, claude, "/home/ann/.bashrc", &[]),
        Err(R::Hardened {
            path: "/home/ann/.bashrc".into()
        })
    );
    assert_eq!(
        person(&p, Op::Read, claude, "/home/ann/.bashrc", &[]),
        Ok(())
    );
}

#[test]
fn a_layout_written_by_hand_with_a_root_named_through_a_link_is_refused() {
    // `/home/ann/docs-link` leads to workspace-docs: a layout naming it would protect the
    // link's name, which the kernel never sees, and leave the real folder open.
    let fs = fs().link("/home/ann/docs-link", DOCS);
    let request = |layout: &Layout| {
        Policy::build(
            &PolicyRequest {
                os: Os::Linux,
                layout,
                chat: &ChatId::new("chat-1").unwrap(),
                grants: &[],
                config: &Config::default(),
                privileged: false,
                settings: &[],
            },
            &fs,
        )
    };
    let mut by_hand = layout(&fs);
    by_hand.workspace_docs = "/home/ann/docs-link".into();
    assert_eq!(
        request(&by_hand).unwrap_err(),
        PolicyError::LayoutNotCanonical {
            what: "workspace-docs",
            path: "/home/ann/docs-link".into(),
            canonical: DOCS.into(),
        }
    );
    let mut dotted = layout(&fs);
    dotted.home = "/home/ann/../ann".into();
    assert!(matches!(
        request(&dotted).unwrap_err(),
        PolicyError::DotDot { .. }
    ));
    // The control: the layout `Layout::resolve` made builds.
    assert!(request(&layout(&fs)).is_ok());
}

#[test]
fn harden_closes_the_places_a_list_missed_and_the_homes_top_as_a_class() {
    let fs = fs().dir("/home/ann/.config").dir("/home/ann/work");
    for os in [Os::Linux, Os::MacOs] {
        let p = hardened_policy(&fs, os);
        // Issue 25's places, each by the list.
        for path in [
            "/home/ann/.local/lib/python3.11/site-packages/evil.pth",
            "/home/ann/.local/bin/git",
            "/home/ann/bin/git",
            "/home/ann/.npmrc",
            "/home/ann/.cargo/config.toml",
            "/home/ann/.cargo/bin/cargo-x",
            "/home/ann/.cargo/env",
            "/home/ann/.aws/config",
            "/home/ann/.aws/credentials",
            "/home/ann/.kube/config",
            "/home/ann/.docker/config.json",
            "/home/ann/.docker/cli-plugins/docker-x",
            "/home/ann/.vimrc",
            "/home/ann/.vim/plugin/x.vim",
            "/home/ann/.config/nvim/init.lua",
            "/home/ann/.emacs",
            "/home/ann/.emacs.d/init.el",
            "/home/ann/.config/emacs/init.el",
            "/home/ann/.gdbinit",
            "/home/ann/.config/gdb/gdbinit",
            "/home/ann/.lldbinit",
            "/home/ann/.inputrc",
        ] {
            assert_eq!(
                verdict(&p, Op::Write, path),
                (false, "hardened"),
                "{os:?} {path}"
            );
            assert_eq!(
                verdict(&p, Op::Read, path),
                (true, "hardened"),
                "{os:?} {path}"
            );
        }
        // The class: any entry at the home's top, named by no list.
        for path in [
            "/home/ann/.curlrc",
            "/home/ann/.wgetrc",
            "/home/ann/notes.txt",
            "/home/ann/work",
        ] {
            assert_eq!(
                verdict(&p, Op::Write, path),
                (false, "hardened"),
                "{os:?} {path}"
            );
            assert_eq!(
                verdict(&p, Op::Move, path),
                (false, "hardened"),
                "{os:?} {path}"
            );
            assert_eq!(verdict(&p, Op::Read, path), (true, "open"), "{os:?} {path}");
        }
        // Inside a folder of the top: open, but for the list.
        for path in [
            "/home/ann/work/notes.txt",
            "/home/ann/.cargo/registry/index/x",
            "/home/ann/.aws/cli/cache/t.json",
            "/home/ann/.claude/settings.local.json",
        ] {
            assert_eq!(
                verdict(&p, Op::Write, path),
                (true, "open"),
                "{os:?} {path}"
            );
        }
        // No state file is written at the top any more: `~/.claude.json` is a place Claude acts
        // on at start (read-only by `Rule::Settings` in every chat; here, without adapters, the
        // top's own rule), and neither are the temporary names of its save.
        assert!(crate::HOME_TOP_STATE_FILES.is_empty());
        for op in [Op::Write, Op::Move] {
            assert_eq!(
                verdict(&p, op, "/home/ann/.claude.json"),
                (false, "hardened")
            );
        }
        let temp = "/home/ann/.claude.json.tmp.123.abcdef";
        assert_eq!(verdict(&p, Op::Write, temp), (false, "hardened"), "{os:?}");
        assert_eq!(
            p.home_state_folders().len(),
            crate::HOME_STATE_FOLDERS.len()
        );
    }
    // Without harden the top is open.
    let p = policy();
    assert!(!p.home_top_closed());
    assert!(p.home_state_folders().is_empty());
    assert_eq!(rule(Op::Write, "/home/ann/.curlrc"), (true, "open"));
}

// ---------- a program a chat could replace (`Policy::could_replace`) ----------

/// The entries a path goes through, each folder root's 0755 and the program root's 0755 unless
/// `owners` says otherwise (path, uid, mode).
fn on_the_way(program: &str, owners: &[(&str, u32, u32)]) -> Vec<crate::OnDisk> {
    let program = Path::new(program);
    let mut paths: Vec<&Path> = program.ancestors().collect();
    paths.reverse();
    paths
        .into_iter()
        .map(|p| {
            let (uid, mode) = owners
                .iter()
                .find(|(o, _, _)| Path::new(o) == p)
                .map_or((0, 0o755), |(_, uid, mode)| (*uid, *mode));
            crate::OnDisk {
                path: p.to_owned(),
                uid,
                mode,
                dir: p != program,
            }
        })
        .collect()
}

#[test]
fn a_root_owned_program_in_a_root_owned_system_folder_cannot_be_replaced_by_any_chat() {
    let entries = on_the_way("/usr/local/libexec/cli-sandbox-helper", &[]);
    assert_eq!(policy().could_replace(&entries), None);
    let root = build_privileged(&[], &Config::default());
    assert_eq!(root.could_replace(&entries), None);
}

#[test]
fn a_program_in_the_home_is_a_chats_to_replace_whoever_owns_the_program() {
    // `cargo install` puts it in ~/.cargo/bin: the home and every folder in it are the person's.
    let owners = [
        (HOME, 1000, 0o755),
        ("/home/ann/.cargo", 1000, 0o755),
        ("/home/ann/.cargo/bin", 1000, 0o755),
    ];
    for uid in [0, 1000] {
        let mut entries = on_the_way("/home/ann/.cargo/bin/cli-sandbox", &owners);
        entries.last_mut().unwrap().uid = uid;
        let why = policy().could_replace(&entries).expect("replaceable");
        assert_eq!(why.place, Path::new("/home/ann/.cargo"), "{why:?}");
    }
    // A root chat writes the whole home by the policy, owners aside.
    let entries = on_the_way("/home/ann/.cargo/bin/cli-sandbox", &[]);
    let root = build_privileged(&[], &Config::default());
    assert!(root.could_replace(&entries).is_some());
    assert_eq!(policy().could_replace(&entries), None, "all root's, 0755");
}

#[test]
fn a_system_folder_writable_by_its_group_or_everyone_or_owned_by_a_user_lets_a_chat_replace_it() {
    for (mode, uid) in [(0o775, 0), (0o777, 0), (0o755, 1000)] {
        let entries = on_the_way("/opt/tools/cli-sandbox", &[("/opt/tools", uid, mode)]);
        let why = policy().could_replace(&entries).expect("replaceable");
        assert_eq!(
            why.place,
            Path::new("/opt/tools/cli-sandbox"),
            "{mode:o} {uid}"
        );
        // A root chat may not write there, but the chats of a launcher that is not root may.
        let root = build_privileged(&[], &Config::default());
        assert!(root.could_replace(&entries).is_some(), "{mode:o} {uid}");
    }
    // The program itself writable by everyone, or a user's: its content is changed in place.
    for (mode, uid) in [(0o757, 0), (0o755, 1000)] {
        let entries = on_the_way(
            "/opt/tools/cli-sandbox",
            &[("/opt/tools/cli-sandbox", uid, mode)],
        );
        assert!(policy().could_replace(&entries).is_some(), "{mode:o} {uid}");
    }
}

fn settings_policy(
    fs: &FakeFs,
    settings: &[crate::SettingsRequest],
) -> Result<Policy, PolicyError> {
    let layout = layout(fs);
    let chat = ChatId::new("chat-1").unwrap();
    Policy::build(
        &PolicyRequest {
            os: Os::Linux,
            layout: &layout,
            chat: &chat,
            grants: &[GrantRequest::parse(&format!("{DOCS}/workflows/wf-1:rw")).unwrap()],
            config: &Config::default(),
            privileged: false,
            settings,
        },
        fs,
    )
}

fn declared(entry: crate::ActedOn, folder: Option<&str>) -> crate::SettingsRequest {
    crate::SettingsRequest {
        cli: "test",
        entry,
        folder: folder.map(PathBuf::from),
    }
}

#[test]
fn in_a_sticky_folder_only_a_root_owned_entry_is_safe_from_other_users() {
    let safe = on_the_way("/var/cache/x/cli-sandbox", &[("/var/cache", 0, 0o1777)]);
    assert_eq!(policy().could_replace(&safe), None);
    let theirs = on_the_way(
        "/var/cache/x/cli-sandbox",
        &[("/var/cache", 0, 0o1777), ("/var/cache/x", 1000, 0o755)],
    );
    assert!(policy().could_replace(&theirs).is_some());
    // As root the temporary folders are the chat's by the policy: sticky or not.
    let root = build_privileged(&[], &Config::default());
    let in_tmp = on_the_way("/tmp/x/cli-sandbox", &[("/tmp", 0, 0o1777)]);
    assert!(root.could_replace(&in_tmp).is_some());
    assert_eq!(policy().could_replace(&in_tmp), None, "root's, for a user");
}

#[test]
fn a_symlink_on_the_way_counts_as_much_as_the_program() {
    // /usr/local/bin/cli-sandbox -> a link in the home, retargeted by a chat at will.
    let mut entries = on_the_way("/usr/local/bin/cli-sandbox", &[]);
    entries.extend(on_the_way(
        "/home/ann/bin/cli-sandbox",
        &[(HOME, 1000, 0o755), ("/home/ann/bin", 1000, 0o755)],
    ));
    assert!(policy().could_replace(&entries).is_some());
}

#[test]
fn the_launchers_own_folder_in_the_state_root_is_closed_to_every_chat() {
    // The kept copy: the home is the person's, but the state root is protected and every folder
    // above it pinned, so no chat renames a folder on the way.
    let copy = format!("{STATE}/state/cli-sandbox/helper/cli-sandbox-0");
    let owners: Vec<(&str, u32, u32)> = Path::new(&copy)
        .ancestors()
        .filter(|p| p.starts_with(HOME))
        .map(|p| (p.to_str().unwrap(), 1000, 0o755))
        .collect();
    let entries = on_the_way(&copy, &owners);
    assert_eq!(policy().could_replace(&entries), None);
    let root = build_privileged(&[], &Config::default());
    assert_eq!(root.could_replace(&entries), None);
    // In a grant, by contrast, the chat writes.
    let in_grant = format!("{DOCS}/workflows/wf-1/cli-sandbox");
    let owners: Vec<(&str, u32, u32)> = Path::new(&in_grant)
        .ancestors()
        .filter(|p| p.starts_with(HOME))
        .map(|p| (p.to_str().unwrap(), 1000, 0o755))
        .collect();
    let entries = on_the_way(&in_grant, &owners);
    let why = policy()
        .could_replace(&entries)
        .expect("in a read-write grant");
    assert!(why.place.starts_with(DOCS), "{why:?}");
    // So in what another chat may be granted, or in another chat's runtime: that chat replaces
    // it for every later launch, whatever this one grants.
    for path in [
        format!("{DOCS}/workflows/wf-2/cli-sandbox"),
        format!("{RUNTIMES}/chat-2/cli-sandbox"),
    ] {
        let owners: Vec<(&str, u32, u32)> = Path::new(&path)
            .ancestors()
            .filter(|p| p.starts_with(HOME))
            .map(|p| (p.to_str().unwrap(), 1000, 0o755))
            .collect();
        let entries = on_the_way(&path, &owners);
        assert!(policy().could_replace(&entries).is_some(), "{path}");
        let root = build_privileged(&[], &Config::default());
        assert!(root.could_replace(&entries).is_some(), "{path}");
    }
}

// ---------- git's own files inside read-write grants (`Rule::Git`) ----------

#[test]
fn gits_hooks_and_configuration_are_read_only_inside_a_read_write_grant() {
    let wf = format!("{DOCS}/workflows/wf-1");
    let p = policy();
    for relative in [
        ".git",
        ".git/hooks",
        ".git/hooks/post-checkout",
        ".git/config",
        ".git/config.worktree",
        ".git/commondir",
        ".gitmodules",
        "sub/.gitmodules",
        "nested/repo/.git/hooks/pre-commit",
        "nested/repo/.git/config",
        "nested/repo/.git",
        ".git/modules/lib/hooks/post-checkout",
        ".git/modules/lib/config",
        ".git/modules/a/b/config",
        ".git/worktrees/w1/config.worktree",
        ".git/worktrees/w1/commondir",
        "project.git/hooks/post-receive",
        "project.git/config",
    ] {
        let path = format!("{wf}/{relative}");
        for op in [Op::Write, Op::Move] {
            let v = p.decide(op, Path::new(&path));
            assert_eq!((v.allowed, v.rule.name()), (false, "git"), "{op:?} {path}");
        }
        // Read, listed and run as before: git outside and inside reads them.
        let v = p.decide(Op::Read, Path::new(&path));
        assert!(v.allowed, "{path}");
    }
    // What git writes as it works stays writable.
    for relative in [
        ".git/index",
        ".git/HEAD",
        ".git/objects/ab/cdef",
        ".git/refs/heads/main",
        ".git/logs/HEAD",
        ".git/COMMIT_EDITMSG",
        ".git/config.lock",
        ".git/modules/lib/index",
        ".git/worktrees/w1/HEAD",
        ".gitignore",
        "config",
        "hooks/x",
        ".github/workflows/ci.yml",
        "project.git",
        "project.git/objects/ab/cd",
        "notes.git",
    ] {
        let path = format!("{wf}/{relative}");
        let v = p.decide(Op::Write, Path::new(&path));
        assert_eq!((v.allowed, v.rule.name()), (true, "granted"), "{path}");
    }
    // A read-only grant refuses every write by its own rule; the runtime is the chat's own.
    let ro = format!("{DOCS}/workflows/wf-3/.git/config");
    assert_eq!(p.decide(Op::Write, Path::new(&ro)).rule.name(), "granted");
    let runtime = format!("{RUNTIMES}/chat-1/.git/config");
    assert!(p.decide(Op::Write, Path::new(&runtime)).allowed);
}

#[test]
fn git_writable_opts_one_grant_out_and_unknown_keys_stay_errors() {
    let wf = format!("{DOCS}/workflows/wf-1");
    let mut config = Config::default();
    config.policy.git_writable = vec![wf.clone().into()];
    let p = build_with(&[&format!("{wf}:rw")], &config).unwrap();
    for relative in [".git/hooks/x", ".git/config", ".gitmodules", ".git"] {
        let path = format!("{wf}/{relative}");
        assert!(p.decide(Op::Write, Path::new(&path)).allowed, "{path}");
    }
    assert_eq!(p.git_closed_grants().count(), 0);
    let text = "[policy]\ngit_writeable = []\n";
    assert!(Config::parse(text, "test", &[]).is_err());
    let text = format!("[policy]\ngit_writable = [{wf:?}]\n");
    assert!(Config::parse(&text, "test", &[]).is_ok());
}

#[test]
fn on_macos_gits_names_match_whatever_their_case() {
    for (path, fold, expected) in [
        ("/w/.GIT/CONFIG", true, true),
        ("/w/.Git/Hooks/x", true, true),
        ("/w/.GITMODULES", true, true),
        ("/w/.GIT/CONFIG", false, false),
        ("/w/.git/index", true, false),
        ("/w/Repo.GIT/HOOKS/x", true, true),
        ("/w/Repo.GIT/HOOKS/x", false, false),
        ("/w/.git.d/config", true, false),
    ] {
        assert_eq!(git_protected(Path::new(path), fold), expected, "{path}");
    }
}

#[test]
fn a_refused_databases_sqlite_sidecars_are_refused_with_it() {
    let p = policy();
    let wf = format!("{DOCS}/workflows/wf-1");
    for name in [
        "raw.sqlite-wal",
        "raw.sqlite-shm",
        "raw.sqlite-journal",
        "raw.sqlite-wal2",
        "raw.sqlite-mj1A2B3C4D",
        "late.db-wal",
        "late.db-journal",
        "x.sqlite3-shm",
        "raw.sqlite-wal/inside",
    ] {
        let path = format!("{wf}/{name}");
        for op in [Op::Read, Op::Write, Op::Move] {
            assert_eq!(rule(op, &path), (false, "refused"), "{op:?} {path}");
        }
        let grant = &p.grants[0];
        let top = Path::new(name).components().next().unwrap().as_os_str();
        assert_eq!(
            p.refused_entries(grant, [(top, EntryKind::File)])
                .present
                .len(),
            1,
            "{name}"
        );
    }
    // Only SQLite's own suffixes, only after a refused file pattern: a folder pattern names no
    // database, and another suffix is another file.
    for name in [
        "planning-wal",
        "raw.sqlite-walrus",
        "raw.sqlite.wal",
        "raw.sqlite-x",
    ] {
        let path = format!("{wf}/{name}");
        assert_eq!(rule(Op::Read, &path), (true, "granted"), "{path}");
    }
    // The same on macOS, whatever the case.
    let p = RefusedPattern::new("*.db").unwrap();
    assert!(p.matches_name_on(Os::MacOs, "X.DB-WAL"));
    assert!(!p.matches_name_on(Os::Linux, "X.DB-WAL"));
}

#[test]
fn settings_are_read_never_written_created_or_moved_in_the_home_and_the_runtime() {
    use crate::ActedOn;
    let fs = fs()
        .dir("/home/ann/.codex")
        .dir("/home/ann/dotfiles/claude")
        .link("/home/ann/.claude", "/home/ann/dotfiles/claude");
    let p = settings_policy(
        &fs,
        &[
            declared(
                ActedOn::folder_file("CODEX_HOME", ".codex", "config.toml", ""),
                None,
            ),
            declared(
                ActedOn::folder_file("CLAUDE_CONFIG_DIR", ".claude", "settings.json", "{}"),
                None,
            ),
            declared(ActedOn::runtime_folder(".codex"), None),
            declared(ActedOn::above_runtime_file("CLAUDE.md", ""), None),
            declared(ActedOn::home_folder(".agents/skills"), None),
        ],
    )
    .unwrap();
    let runtime = format!("{RUNTIMES}/chat-1");
    for path in [
        "/home/ann/.codex/config.toml",
        "/home/ann/.claude/settings.json",
        // The symlinked folder's target is listed beside it.
        "/home/ann/dotfiles/claude/settings.json",
        &format!("{runtime}/.codex/config.toml"),
        "/home/ann/CLAUDE.md",
        "/home/ann/.local/CLAUDE.md",
        "/home/ann/.local/share/CLAUDE.md",
        "/home/ann/.agents/skills/x/SKILL.md",
    ] {
        assert_eq!(verdict(&p, Op::Read, path), (true, "settings"), "{path}");
        assert_eq!(verdict(&p, Op::Write, path), (false, "settings"), "{path}");
        assert_eq!(verdict(&p, Op::Move, path), (false, "settings"), "{path}");
    }
    // The folders above cannot be renamed (a folder or a link of the chat's put in place).
    for path in ["/home/ann/.codex", "/home/ann/.claude", "/home/ann/.agents"] {
        assert_eq!(verdict(&p, Op::Move, path), (false, "settings"), "{path}");
    }
    // (The home itself holds a protected root: pinned comes first.)
    assert_eq!(verdict(&p, Op::Move, "/home/ann"), (false, "pinned"));
    // The CLI's state beside them stays writable; the rest of the runtime is the chat's.
    assert_eq!(
        verdict(&p, Op::Write, "/home/ann/.codex/sessions/x"),
        (true, "open")
    );
    assert_eq!(
        verdict(&p, Op::Write, &format!("{runtime}/work.txt")),
        (true, "runtime")
    );
    // Nothing inside the state root but the runtime's own: the walk above the runtime stops at
    // the first protected root.
    assert!(
        p.settings()
            .iter()
            .all(|s| !s.path().starts_with(STATE) || s.path().starts_with(&runtime))
    );
    assert_eq!(p.settings_in_runtime().count(), 1);
}

#[test]
fn settings_moved_by_a_variable_follow_it_and_a_bad_declaration_is_refused() {
    use crate::ActedOn;
    let fs = fs().dir("/srv/codex");
    let p = settings_policy(
        &fs,
        &[declared(
            ActedOn::folder_file("CODEX_HOME", ".codex", "config.toml", ""),
            Some("/srv/codex"),
        )],
    )
    .unwrap();
    assert_eq!(
        verdict(&p, Op::Write, "/srv/codex/config.toml"),
        (false, "settings")
    );
    assert_eq!(
        verdict(&p, Op::Write, "/home/ann/.codex/config.toml"),
        (true, "open")
    );
    for bad in ["/etc/passwd", "../x", "a/../../b", ""] {
        let err = settings_policy(&fs, &[declared(ActedOn::home_file(bad, ""), None)]);
        assert!(
            matches!(err, Err(PolicyError::BadSetting { .. })),
            "{bad}: {err:?}"
        );
    }
    // The launcher may still write the person's settings (pre-trust), never a chat.
    assert!(
        p.person_file(
            Op::Write,
            Path::new("/srv/codex/config.toml"),
            Path::new("/srv/codex/config.toml"),
            &[crate::NamedPlace {
                var: "CODEX_HOME".into(),
                path: "/srv/codex".into()
            }]
        )
        .is_ok()
    );
}

fn with_secrets() -> Policy {
    let mut config = Config::default();
    config.policy.secrets = crate::Secrets::Closed;
    build_with(&[], &config).unwrap()
}

#[test]
fn secrets_closed_closes_each_credential_place_to_every_operation_and_pins_its_ancestors() {
    let p = with_secrets();
    for place in [
        "/home/ann/.ssh",
        "/home/ann/.ssh/id_ed25519",
        "/home/ann/.aws/credentials",
        "/home/ann/.docker/config.json",
        "/home/ann/.config/gh/hosts.yml",
        "/home/ann/.netrc",
        "/home/ann/.npmrc",
        "/home/ann/.kube/config",
        "/home/ann/.gnupg/pubring.kbx",
    ] {
        for op in Op::ALL {
            let v = p.decide(op, Path::new(place));
            assert!(!v.allowed, "{op:?} {place}");
            assert_eq!(v.rule.name(), "secret", "{op:?} {place}");
        }
        // The control: the home is open without the option.
        assert!(
            policy().decide(Op::Read, Path::new(place)).allowed,
            "{place}"
        );
    }
    for ancestor in ["/home/ann/.config", "/home/ann/.docker", "/home/ann/.cargo"] {
        assert!(
            !p.decide(Op::Move, Path::new(ancestor)).allowed,
            "{ancestor}"
        );
        assert!(
            p.decide(Op::Write, Path::new(ancestor)).allowed,
            "{ancestor}"
        );
    }
    for open in [
        "/home/ann/.codex/auth.json",
        "/home/ann/.claude/.credentials.json",
        "/home/ann/.gemini/oauth_creds.json",
        "/home/ann/.docker/contexts/meta.json",
        "/home/ann/.config/other/settings.json",
        "/home/ann/.sshd",
        "/home/ann/.netrc.d/x",
    ] {
        assert!(p.decide(Op::Read, Path::new(open)).allowed, "{open}");
    }
    assert!(policy().secrets().is_empty(), "open by default");
}

#[test]
fn a_credential_place_that_is_a_link_is_closed_at_its_target_too() {
    let fs = fs().dir("/data/keys").link("/home/ann/.ssh", "/data/keys");
    let layout = layout(&fs);
    let chat = ChatId::new("chat-1").unwrap();
    let mut config = Config::default();
    config.policy.secrets = crate::Secrets::Closed;
    let p = Policy::build(
        &PolicyRequest {
            os: Os::Linux,
            layout: &layout,
            chat: &chat,
            grants: &[],
            config: &config,
            privileged: false,
            settings: &[],
        },
        &fs,
    )
    .unwrap();
    assert!(p.secrets().contains(&PathBuf::from("/home/ann/.ssh")));
    assert!(p.secrets().contains(&PathBuf::from("/data/keys")));
    assert!(!p.decide(Op::Read, Path::new("/data/keys/id_rsa")).allowed);
}

#[test]
fn network_allowlist_validates_its_hosts_and_holds_them_with_its_log() {
    let mut config = Config::default();
    config.policy.network = Network::Allowlist;
    assert_eq!(build_with(&[], &config), Err(PolicyError::NoAllowedHosts));
    config.policy.allowed_hosts = vec!["api.anthropic.com".into(), "x.com:443".into()];
    let err = build_with(&[], &config).unwrap_err();
    assert!(err.to_string().contains("x.com:443"), "{err}");
    config.policy.allowed_hosts = vec!["api.anthropic.com".into()];
    let p = build_with(&[], &config).unwrap();
    let egress = p.egress().expect("the allowlist's rules");
    assert_eq!(egress.allowed_hosts, vec!["api.anthropic.com".to_owned()]);
    assert!(
        egress.log.ends_with("state/egress/chat-1.jsonl"),
        "{:?}",
        egress.log
    );
    // Hosts without the allowlist would do nothing: refused, not ignored.
    config.policy.network = Network::Isolated;
    assert!(matches!(
        build_with(&[], &config),
        Err(PolicyError::HostsWithoutAllowlist { .. })
    ));
}
