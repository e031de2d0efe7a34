//! Hostile names through both backends (proptest, a bounded number of cases so that it runs in
//! CI). Seatbelt: whatever the paths hold (quotes, parentheses, semicolons, `#"`, backslashes,
//! regex syntax, very long names, other scripts), the profile's text is the text of a plain
//! layout of the same shape, and the evaluator finds it agreeing with `decide()`; a newline or a
//! NUL is refused by the builder, a name that is not UTF-8 by the compiler, each with a clear
//! error. Linux: layouts made on a real disk with such names (bytes that are not UTF-8 included)
//! compile to a plan that survives its JSON round trip unchanged and hides every refused entry,
//! or to a clear error; none panics.

mod seatbelt_support;

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use launch::seatbelt::{SeatbeltError, SeatbeltProfile};
use proptest::prelude::*;
use sandbox_core::{
    Access, ChatId, Config, GrantRequest, Layout, LayoutInputs, Os, Policy, PolicyRequest,
};
use sandbox_linux::disk::RealDisk;
use sandbox_linux::plan::{Kernel, MountStep};

use seatbelt_support::probes::disagreements;
use seatbelt_support::sbpl::Profile;
use seatbelt_support::world::{Spec, World};

/// Text a hostile folder name may hold (no `/`: it names one entry).
fn decoration() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\"".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just(";".to_owned()),
        Just("#\"".to_owned()),
        Just("\\".to_owned()),
        Just(" ".to_owned()),
        Just("'".to_owned()),
        Just(") (allow default) (".to_owned()),
        Just("$".to_owned()),
        Just("^.[]{}|*+?".to_owned()),
        Just("é".to_owned()),
        Just("漢字".to_owned()),
        Just("Ω".to_owned()),
        Just("x".repeat(120)),
        "[a-zA-Z0-9._-]{1,6}",
    ];
    proptest::collection::vec(piece, 0..6).prop_map(|p| p.concat())
}

fn spec_with(decoration: &str, harden: bool) -> Spec {
    let mut spec = Spec::decorated(decoration);
    spec.harden = harden;
    spec.refused.push(format!("{decoration}*.key"));
    spec
}

fn seatbelt(world: &World) -> (SeatbeltProfile, Profile) {
    let profile = SeatbeltProfile::for_policy(&world.policy).expect("a UTF-8 policy compiles");
    let read = Profile::compile(&profile.text, &profile.params)
        .unwrap_or_else(|e| panic!("{e}\n{}", profile.text));
    (profile, read)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn seatbelt_hostile_names_change_the_params_never_the_text(
        decoration in decoration(),
        harden in any::<bool>(),
    ) {
        let base = Path::new("/Users");
        let plain = World::virtual_at(base, &spec_with("", harden)).unwrap();
        let hostile = World::virtual_at(base, &spec_with(&decoration, harden))
            .map_err(|e| TestCaseError::fail(format!("{decoration:?}: {e}")))?;
        let (plain_profile, _) = seatbelt(&plain);
        let (profile, read) = seatbelt(&hostile);
        prop_assert_eq!(&plain_profile.text, &profile.text, "{:?}", decoration);
        prop_assert_eq!(read.lint(), Vec::<String>::new());
        prop_assert_eq!(read.unused_params(&profile.params), Vec::<&str>::new());
        let failures = disagreements(&read, &hostile);
        prop_assert!(failures.is_empty(), "{:?}: {}", decoration, failures.join("\n"));
    }

    #[test]
    fn seatbelt_a_newline_or_nul_is_refused_by_the_builder(
        before in decoration(),
        bad in prop_oneof![Just('\n'), Just('\r'), Just('\0')],
        after in decoration(),
    ) {
        let decoration = format!("{before}{bad}{after}");
        let err = World::virtual_at(Path::new("/Users"), &spec_with(&decoration, false)).unwrap_err();
        prop_assert!(err.contains("NUL byte or a newline"), "{}", err);
    }

    /// Each place of a policy that takes a path from the provider or its configuration (a
    /// protected root, a grant, a blocked program, an allowed socket), given a name that is not
    /// UTF-8, is a clear error of the profile's naming that path. (The runtime and the
    /// persistence paths lie under the state root and the home, whose names the protected roots
    /// hold too: one of those is reported first.)
    #[test]
    fn seatbelt_a_path_that_is_not_utf8_is_a_clear_error(
        bytes in proptest::collection::vec(128u8..=255, 1..6),
        which in 0usize..4,
    ) {
        let base = Path::new("/Users");
        let spec = spec_with("", true);
        let mut name = b"/Users/ann/".to_vec();
        name.extend(&bytes);
        let bad = PathBuf::from(OsString::from_vec(name));
        prop_assume!(bad.to_str().is_none());
        let workflows = World::virtual_at(base, &spec).unwrap().layout.workspace_docs.join("workflows");
        let bad_grant = workflows.join(OsString::from_vec(bytes.clone()));
        let (extra_dirs, bad) = if which == 1 {
            (vec![bad_grant.clone()], bad_grant)
        } else {
            (Vec::new(), bad)
        };
        let world = World::virtual_tweaked(base, &spec, &extra_dirs, |config, grants| match which {
            0 => config.policy.protected.push(bad.clone()),
            1 => grants.push(GrantRequest { path: bad.clone(), access: Access::ReadWrite }),
            2 => config.policy.blocked_programs.push(bad.clone()),
            _ => config.policy.allow_unix_sockets.push(bad.clone()),
        })
        .unwrap();
        match SeatbeltProfile::for_policy(&world.policy) {
            Err(SeatbeltError::PathNotUtf8 { path, .. }) => prop_assert_eq!(path, bad),
            other => prop_assert!(false, "not refused: {:?}", other.map(|p| p.params)),
        }
    }
}

/// One entry name a hostile person or program could leave on a Linux disk: any bytes but `/`
/// and NUL, up to the 255-byte limit.
fn disk_name() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => "[a-z0-9._-]{1,8}".prop_map(String::into_bytes),
        1 => Just(b"a \"quoted\" (x) ;y #\"".to_vec()),
        1 => Just(b"line\nbreak".to_vec()),
        1 => Just(b"caf\xe9".to_vec()),
        1 => Just(vec![b'n'; 240]),
        1 => Just("漢字 Ω".as_bytes().to_vec()),
        2 => proptest::collection::vec(1u8..=255, 1..16),
    ]
    .prop_map(|mut n| {
        n.retain(|b| *b != b'/');
        if n.is_empty() || n == b"." || n == b".." {
            n = b"plain".to_vec();
        }
        n
    })
}

fn os(bytes: &[u8]) -> OsString {
    OsString::from_vec(bytes.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn linux_plans_of_hostile_layouts_round_trip_and_hide_every_refused_entry(
        workflows in proptest::collection::vec(disk_name(), 1..4),
        entries in proptest::collection::vec(disk_name(), 0..4),
        harden in any::<bool>(),
        namespaces in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let home = base.join("home");
        let docs = home.join(".local/share/AgentWorks/workspace-docs/workflows");
        std::fs::create_dir_all(&docs).unwrap();
        let mut grants = Vec::new();
        let mut refused_entries = Vec::new();
        for name in &workflows {
            let wf = docs.join(os(name));
            if std::fs::create_dir_all(wf.join("planning")).is_err() {
                continue; // the same name twice
            }
            for entry in &entries {
                let mut db = entry.clone();
                db.extend(b".db");
                let _ = std::fs::write(wf.join(os(&db)), "raw");
                let _ = std::fs::write(wf.join(os(entry)), "doc");
                let _ = std::fs::write(home.join(os(entry)), "home");
                refused_entries.push(wf.join(os(&db)));
            }
            refused_entries.push(wf.join("planning"));
            grants.push(GrantRequest { path: wf, access: sandbox_core::Access::ReadWrite });
        }
        let layout = Layout::resolve(
            &LayoutInputs { os: Os::Linux, home: home.clone(), xdg_data_home: None, state_root: None, workspace_docs: None },
            &RealDisk,
        ).unwrap();
        let mut config = Config::default();
        config.policy.harden = harden;
        let chat = ChatId::new("chat-1").unwrap();
        let request = PolicyRequest { os: Os::Linux, layout: &layout, chat: &chat, grants: &grants, config: &config, privileged: false ,    settings: &[],};
        let policy = match Policy::build(&request, &RealDisk) {
            Ok(policy) => policy,
            // A grant path with a line break (\n or \r): refused by the builder, with the reason.
            Err(e) => {
                prop_assert!(e.to_string().contains("newline"), "{}", e);
                let line_break = grants.iter().any(|g| {
                    let bytes = g.path.as_os_str().as_bytes();
                    bytes.contains(&b'\n') || bytes.contains(&b'\r')
                });
                prop_assert!(line_break, "refused without a line break in a grant: {}", e);
                return Ok(());
            }
        };
        let kernel = Kernel {
            landlock_abi: 7,
            namespaces,
            fuse: false,
        };
        let plan = match sandbox_linux::compile(&policy, kernel) {
            Ok(plan) => plan,
            Err(e) => {
                let message = e.to_string();
                prop_assert!(message.contains("not valid UTF-8"), "{}", message);
                prop_assert!(policy_or_plan_has_non_utf8(&policy, &refused_entries));
                return Ok(());
            }
        };
        // JSON holds the plan exactly: no name changes what the helper reads (all of it but
        // the guarantees, written for people and not read back).
        let text = serde_json::to_string(&plan).unwrap();
        let back: sandbox_linux::plan::LinuxPlan = serde_json::from_str(&text).unwrap();
        let applied = sandbox_linux::plan::LinuxPlan {
            guarantees: Vec::new(),
            frozen: Vec::new(),
            ..plan.clone()
        };
        prop_assert_eq!(&back, &applied);
        if let Some(ns) = &plan.namespaces {
            for refused in &refused_entries {
                let hidden = ns.mounts.iter().any(|m| matches!(m, MountStep::Hide { path, .. } if path == refused));
                prop_assert!(hidden, "{:?} is not hidden", refused);
            }
        }
        for path in plan.paths() {
            prop_assert!(path.is_absolute(), "{:?}", path);
        }
    }
}

fn policy_or_plan_has_non_utf8(policy: &Policy, refused: &[PathBuf]) -> bool {
    policy.grants().iter().any(|g| g.path.to_str().is_none())
        || policy
            .hardened()
            .iter()
            .any(|h| h.path().to_str().is_none())
        || refused.iter().any(|p| p.to_str().is_none())
}

#[test]
fn a_linux_plan_naming_a_path_that_is_not_utf8_is_refused_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let home = base.join("home");
    let wf = home.join(".local/share/AgentWorks/workspace-docs/workflows/wf");
    std::fs::create_dir_all(&wf).unwrap();
    std::fs::write(wf.join(os(b"caf\xe9.db")), "raw").unwrap();
    let layout = Layout::resolve(
        &LayoutInputs {
            os: Os::Linux,
            home,
            xdg_data_home: None,
            state_root: None,
            workspace_docs: None,
        },
        &RealDisk,
    )
    .unwrap();
    let chat = ChatId::new("chat-1").unwrap();
    let grants = [GrantRequest {
        path: wf.clone(),
        access: sandbox_core::Access::ReadWrite,
    }];
    let config = Config::default();
    let policy = Policy::build(
        &PolicyRequest {
            os: Os::Linux,
            layout: &layout,
            chat: &chat,
            grants: &grants,
            config: &config,
            privileged: false,
            settings: &[],
        },
        &RealDisk,
    )
    .unwrap();
    // The raw database with a Latin-1 name is refused like any other...
    let db = wf.join(os(b"caf\xe9.db"));
    assert_eq!(
        policy.decide(sandbox_core::Op::Read, &db).rule.name(),
        "refused"
    );
    // ... and since the namespace plan must hide it and cannot say its name in JSON, the launch
    // stops with the path rather than run without hiding it.
    let kernel = Kernel {
        landlock_abi: 7,
        namespaces: true,
        fuse: false,
    };
    let err = sandbox_linux::compile(&policy, kernel)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not valid UTF-8"), "{err}");
    assert!(err.contains("caf"), "{err}");
}
